#include "test_util.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const TEST_SIM_VARIANTS[4] = { "a2a3_sim_hbg", "a2a3_sim_trb", "a5_sim_hbg", "a5_sim_trb" };
const char *const TEST_ALL_VARIANTS[8] = {
    "a2a3_sim_hbg", "a2a3_sim_trb", "a5_sim_hbg", "a5_sim_trb",
    "a2a3_onboard_hbg", "a2a3_onboard_trb", "a5_onboard_hbg", "a5_onboard_trb",
};

#define RESOLVE(field, sym)                                                   \
    do {                                                                      \
        *(void **)&out->field = dlsym(out->handle, sym);                      \
        if (out->field == NULL) {                                             \
            fprintf(stderr, "missing %s in %s\n", sym, path);                 \
            dlclose(out->handle);                                             \
            return -1;                                                        \
        }                                                                     \
    } while (0)

int test_load_lib(const char *name, LoadedLib *out)
{
    const char *dir = getenv("PTORUN_LIB_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/libptorun_%s.so", dir ? dir : ".", name);
    out->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (out->handle == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return -1;
    }
    RESOLVE(variant, "ptorun_variant");
    RESOLVE(last_error, "simpler_last_error");
    RESOLVE(create, "create_device_context");
    RESOLVE(destroy, "destroy_device_context");
    RESOLVE(malloc_, "device_malloc_ctx");
    RESOLVE(free_, "device_free_ctx");
    RESOLVE(committed, "committed_device_memory_ctx");
    RESOLVE(copy_to, "copy_to_device_ctx");
    RESOLVE(copy_from, "copy_from_device_ctx");
    return 0;
}

void test_unload_lib(LoadedLib *lib)
{
    dlclose(lib->handle);
}

int test_load_run_api(const char *variant, TestRunApi *api)
{
    if (test_load_lib(variant, &api->lib) != 0)
        return -1;
    *(void **)&api->init = dlsym(api->lib.handle, "simpler_init");
    *(void **)&api->register_ = dlsym(api->lib.handle, "simpler_register_callable");
    *(void **)&api->run = dlsym(api->lib.handle, "simpler_run");
    *(void **)&api->size = dlsym(api->lib.handle, "get_runtime_size");
    return api->init && api->register_ && api->run && api->size ? 0 : -1;
}

int test_dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d != NULL)
        closedir(d);
    return d == NULL ? -1 : n;
}
