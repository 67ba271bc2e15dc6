/* A multi-host plugin whose Gloo is missing (NoGlooE2ETest): it needs
 * libgloo.so.999, which the build makes only to link it and then removes, so
 * loading it fails the way the real plugin fails on a machine without
 * libgloo0. */
int gloo_absent(void);

__attribute__((visibility("default"))) int ptorun_gloo_stub(void)
{
    return gloo_absent();
}
