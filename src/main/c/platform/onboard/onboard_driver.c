#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/last_error.h"
#include "platform/onboard/onboard_driver.h"
#include "services/native_log.h"
#include "ptorun/pto_runtime_c_api.h"

#define BUNDLED_DRIVER "libptorun_emudrv.so"
#define PINNED_DRIVER "libptorun_driver.so"

/* Every function pointer of the table, with its name for the refusal. */
#define ENTRY(f) { offsetof(PtoDriverApi, f), #f }
static const struct {
    size_t offset;
    const char *name;
} driver_entries[] = {
    ENTRY(open_device), ENTRY(close_device), ENTRY(reset_device), ENTRY(load_image), ENTRY(unload_image),
    ENTRY(image_symbol), ENTRY(mem_alloc), ENTRY(mem_free), ENTRY(memcpy_h2d), ENTRY(memcpy_d2h), ENTRY(memset_d),
    ENTRY(memcpy_h2d_async), ENTRY(memcpy_d2h_async), ENTRY(memset_d_async), ENTRY(host_register),
    ENTRY(host_unregister), ENTRY(stream_create), ENTRY(stream_destroy), ENTRY(launch), ENTRY(stream_query),
    ENTRY(stream_synchronize), ENTRY(error_string), ENTRY(comm_join), ENTRY(comm_leave), ENTRY(comm_barrier),
    ENTRY(comm_window_alloc), ENTRY(comm_window_free), ENTRY(comm_window_addrs), ENTRY(comm_last_message),
    ENTRY(comm_window_break),
    ENTRY(comm_window_span),
    ENTRY(comm_window_slice),
};
#undef ENTRY

/* The bundled driver (or the pinned one) sits next to the library holding this function. */
static int driver_path_next_to_runner(const char *file_name, char *out, size_t n)
{
    Dl_info info;
    if (dladdr((void *)driver_path_next_to_runner, &info) == 0 || info.dli_fname == NULL)
        return pto_fail(PTO_ERR_DEVICE, "onboard driver: cannot locate the library file of the onboard runner (dladdr)");
    const char *slash = strrchr(info.dli_fname, '/');
    int dir_len = slash == NULL ? 1 : (int)(slash - info.dli_fname);
    const char *dir = slash == NULL ? "." : info.dli_fname;
    if (snprintf(out, n, "%.*s/%s", dir_len, dir, file_name) >= (int)n)
        return pto_fail(PTO_ERR_DEVICE, "onboard driver: the path of %s is too long", file_name);
    return PTO_OK;
}

static int check_table(const OnboardDriver *d)
{
    const PtoDriverApi *api = d->api;
    if (api == NULL)
        return pto_fail(PTO_ERR_DEVICE, "onboard driver %s: %s() returned no table", d->path, PTO_DRIVER_API_SYMBOL);
    if (api->abi_version != PTO_DRIVER_ABI_VERSION)
        return pto_fail(PTO_ERR_DEVICE, "onboard driver %s: driver ABI version %u, this runner needs %u", d->path,
                        api->abi_version, PTO_DRIVER_ABI_VERSION);
    if (api->struct_size < sizeof(PtoDriverApi))
        return pto_fail(PTO_ERR_DEVICE, "onboard driver %s: table of %u bytes, incomplete (%zu expected)", d->path,
                        api->struct_size, sizeof(PtoDriverApi));
    for (size_t i = 0; i < sizeof driver_entries / sizeof driver_entries[0]; i++) {
        void *fn;
        memcpy(&fn, (const char *)api + driver_entries[i].offset, sizeof fn);
        if (fn == NULL)
            return pto_fail(PTO_ERR_DEVICE, "onboard driver %s: incomplete table, entry '%s' is missing", d->path,
                            driver_entries[i].name);
    }
    return PTO_OK;
}

/* The emulated driver refused the state page its process was handed (pto_emudrv.h,
 * PTO_EMUDRV_STATE_FD_ENV) and runs on a private one: faults armed by the parent do not
 * reach it. Another driver has no such entry. */
static void log_state_warning(const OnboardDriver *d)
{
    const char *(*warning)(void);
    *(void **)&warning = dlsym(d->handle, "ptorun_emudrv_state_warning");
    const char *why = warning == NULL ? NULL : warning();
    if (why != NULL && why[0] != '\0')
        native_log(PTO_LOG_WARN, "onboard driver %s: private state, the parent's faults and stats do not reach it: %s",
                   d->path, why);
}

int onboard_driver_load(OnboardDriver *d)
{
    if (d->handle != NULL)
        return PTO_OK;
    int rc;
    /* A pinned driver next to the runner wins: the Java loader links it there for
     * -Dptorun.driver (docs/java.md, Loading), so no environment variable has to be
     * set in a running, multi-threaded JVM. lstat: a dangling link is a refusal, not
     * a fall-through. */
    struct stat st;
    if ((rc = driver_path_next_to_runner(PINNED_DRIVER, d->path, sizeof d->path)) != PTO_OK)
        return rc;
    d->pinned = lstat(d->path, &st) == 0;
    const char *env = d->pinned ? NULL : getenv("PTORUN_DRIVER");
    d->from_env = env != NULL && *env != '\0';
    if (d->pinned) {
        /* d->path is the link */
    } else if (d->from_env) {
        if (snprintf(d->path, sizeof d->path, "%s", env) >= (int)sizeof d->path)
            return pto_fail(PTO_ERR_DEVICE, "onboard driver: PTORUN_DRIVER is too long");
    } else if ((rc = driver_path_next_to_runner(BUNDLED_DRIVER, d->path, sizeof d->path)) != PTO_OK) {
        return rc;
    }
    void *handle = dlopen(d->path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL)
        return pto_fail(PTO_ERR_DEVICE, "onboard driver %s (%s): cannot load it: %s", d->path,
                        d->pinned ? "pinned by ptorun.driver" : d->from_env ? "PTORUN_DRIVER" : "bundled",
                        dlerror());
    PtoDriverApiFn table = (PtoDriverApiFn)dlsym(handle, PTO_DRIVER_API_SYMBOL);
    if (table == NULL) {
        dlclose(handle);
        return pto_fail(PTO_ERR_DEVICE, "onboard driver %s: missing entry '%s' (not a ptorun driver)", d->path,
                        PTO_DRIVER_API_SYMBOL);
    }
    d->api = table();
    if ((rc = check_table(d)) != PTO_OK) {
        d->api = NULL;
        dlclose(handle);
        return rc;
    }
    d->handle = handle;
    log_state_warning(d);
    return PTO_OK;
}

void onboard_driver_unload(OnboardDriver *d)
{
    if (d->handle != NULL)
        dlclose(d->handle);
    d->handle = NULL;
    d->api = NULL;
}
