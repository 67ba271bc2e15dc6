/* Stands in for libgloo at link time only (no_gloo_plugin.c). */
int gloo_absent(void)
{
    return 0;
}
