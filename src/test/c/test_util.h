/* Helpers shared by the native tests: opening a built library by variant. */
#ifndef PTORUN_TEST_UTIL_H
#define PTORUN_TEST_UTIL_H

#include "ptorun/pto_runtime_c_api.h"

/* The contract of one library, resolved with dlsym from the built .so. */
typedef struct LoadedLib {
    void *handle;
    const char *(*variant)(void);
    const char *(*last_error)(void);
    void *(*create)(void);
    void (*destroy)(void *);
    void *(*malloc_)(void *, size_t);
    void (*free_)(void *, void *);
    size_t (*committed)(void *);
    int (*copy_to)(void *, void *, const void *, size_t);
    int (*copy_from)(void *, void *, const void *, size_t);
} LoadedLib;

/* Opens $PTORUN_LIB_DIR/libptorun_<name>.so (name like "a2a3_sim_hbg"). */
int test_load_lib(const char *name, LoadedLib *out);
void test_unload_lib(LoadedLib *lib);

/* The blocking run path of one library: its contract plus init, register and run. */
typedef struct TestRunApi {
    LoadedLib lib;
    int (*init)(void *, int, const uint8_t *, size_t, const uint8_t *, size_t, const uint8_t *, size_t,
                const CallConfig *);
    int (*register_)(void *, int32_t, const void *);
    int (*run)(void *, void *, int32_t, const void *, const CallConfig *, const NativeRunDescriptor *);
    size_t (*size)(void);
} TestRunApi;

/* test_load_lib plus simpler_init, simpler_register_callable, simpler_run and get_runtime_size; -1 if one is missing. */
int test_load_run_api(const char *variant, TestRunApi *api);

/* Entries of a directory, "." and ".." not counted (fds in /proc/self/fd, names in
   /dev/shm or a temporary folder); -1 when it cannot be read. */
int test_dir_entries(const char *dir);

extern const char *const TEST_SIM_VARIANTS[4];
extern const char *const TEST_ALL_VARIANTS[8];

#endif
