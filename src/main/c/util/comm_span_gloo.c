/*
 * The multi-host plugin, libptorun_gloo.so (include/ptorun/pto_gloo.h): found
 * beside the library that holds this code (the host library, or the emulated
 * driver), loaded on the first group across hosts and kept: no library of ours
 * depends on Gloo until then, and a machine without it fails only here, with
 * the package to install.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ptorun/pto_runtime_c_api.h"
#include "util/comm_span_internal.h"
#include "util/last_error.h"

#define PLUGIN_NAME "libptorun_gloo.so"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static GlooApi loaded;
static int load_code;
static char load_message[PATH_MAX + 256];

static void *symbol(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (p == NULL && load_code == PTO_OK) {
        load_code = PTO_ERR_FAILED;
        snprintf(load_message, sizeof load_message, "%s lacks %s: it is not this library's plugin", PLUGIN_NAME, name);
    }
    return p;
}

static void load(void)
{
    Dl_info self;
    char path[PATH_MAX];
    if (dladdr((void *)&span_gloo_api, &self) == 0 || self.dli_fname == NULL) {
        load_code = PTO_ERR_FAILED;
        snprintf(load_message, sizeof load_message, "cannot tell which file this library was loaded from");
        return;
    }
    const char *slash = strrchr(self.dli_fname, '/');
    int dir = slash == NULL ? 0 : (int)(slash - self.dli_fname);
    snprintf(path, sizeof path, "%.*s%s%s", dir, self.dli_fname, slash == NULL ? "" : "/", PLUGIN_NAME);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *why = dlerror();
        load_code = PTO_ERR_FAILED;
        if (why != NULL && strstr(why, "libgloo") != NULL)
            snprintf(load_message, sizeof load_message,
                     "a group across hosts needs Gloo, and this machine lacks it: install the package libgloo0 (%s)",
                     why);
        else
            snprintf(load_message, sizeof load_message, "a group across hosts needs %s: %s", path,
                     why != NULL ? why : "dlopen failed");
        return;
    }
    loaded.open = (__typeof__(loaded.open))symbol(lib, "ptorun_gloo_open");
    loaded.open_subgroup = (__typeof__(loaded.open_subgroup))symbol(lib, "ptorun_gloo_open_subgroup");
    loaded.allgather = (__typeof__(loaded.allgather))symbol(lib, "ptorun_gloo_allgather");
    loaded.allgatherv = (__typeof__(loaded.allgatherv))symbol(lib, "ptorun_gloo_allgatherv");
    loaded.allreduce_f32 = (__typeof__(loaded.allreduce_f32))symbol(lib, "ptorun_gloo_allreduce_sum_f32");
    loaded.allreduce_i32 = (__typeof__(loaded.allreduce_i32))symbol(lib, "ptorun_gloo_allreduce_sum_i32");
    loaded.barrier = (__typeof__(loaded.barrier))symbol(lib, "ptorun_gloo_barrier");
    loaded.close = (__typeof__(loaded.close))symbol(lib, "ptorun_gloo_close");
    loaded.last_error = (__typeof__(loaded.last_error))symbol(lib, "ptorun_gloo_last_error");
}

const GlooApi *span_gloo_api(void)
{
    pthread_once(&load_once, load);
    if (load_code != PTO_OK) {
        pto_fail(load_code, "comm_init: %s", load_message);
        return NULL;
    }
    return &loaded;
}

int span_gloo_fail(const GlooApi *api, int rc, const char *what)
{
    return pto_fail(rc, "%s: %s", what, api->last_error());
}
