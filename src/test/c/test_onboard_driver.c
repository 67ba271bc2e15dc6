/* The onboard runner's driver loading through the exported contract: a missing
 * driver file, a library that is no driver, and a driver whose table lacks an
 * entry all fail simpler_init with PTO_ERR_DEVICE naming the file and the entry,
 * and leave the context usable (the bundled driver then initializes it); a
 * libptorun_driver.so next to the runner (the pin of -Dptorun.driver) wins. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptest.h"
#include "test_util.h"

typedef int (*InitFn)(void *, int, const uint8_t *, size_t, const uint8_t *, size_t, const uint8_t *, size_t,
                      const CallConfig *);
typedef int (*FinalizeFn)(void *);

/* simpler_init of an onboard library with PTORUN_DRIVER = driver (NULL: the
 * bundled one); the images are never looked at when the driver is refused. */
static int init_with_driver(LoadedLib *lib, void *ctx, const char *driver)
{
    static const uint8_t image[1] = { 0 };
    if (driver != NULL)
        setenv("PTORUN_DRIVER", driver, 1);
    else
        unsetenv("PTORUN_DRIVER");
    InitFn init = (InitFn)dlsym(lib->handle, "simpler_init");
    int rc = init(ctx, 0, image, sizeof image, image, sizeof image, NULL, 0, NULL);
    unsetenv("PTORUN_DRIVER");
    return rc;
}

static void fixture_path(const char *file, char *out, size_t n)
{
    const char *dir = getenv("PTORUN_FIXTURE_DIR");
    snprintf(out, n, "%s/%s", dir != NULL ? dir : ".", file);
}

TEST(onboard_init_refuses_a_missing_driver_file_naming_it)
{
    for (int i = 4; i < 8; i++) {
        LoadedLib lib;
        CHECK(test_load_lib(TEST_ALL_VARIANTS[i], &lib) == 0);
        void *ctx = lib.create();
        CHECK_EQ_INT(init_with_driver(&lib, ctx, "/nonexistent/dir/libno_such_driver.so"), PTO_ERR_DEVICE);
        CHECK_CONTAINS(lib.last_error(), "/nonexistent/dir/libno_such_driver.so");
        CHECK_CONTAINS(lib.last_error(), "PTORUN_DRIVER");
        /* still refused as uninitialized, not broken */
        CHECK(lib.malloc_(ctx, 64) == NULL);
        CHECK_CONTAINS(lib.last_error(), "not initialized");
        lib.destroy(ctx);
        test_unload_lib(&lib);
    }
}

TEST(onboard_init_refuses_a_library_without_the_driver_table)
{
    char path[256];
    fixture_path("libptorun_fixture_kernels.so", path, sizeof path);
    LoadedLib lib;
    CHECK(test_load_lib("a2a3_onboard_hbg", &lib) == 0);
    void *ctx = lib.create();
    CHECK_EQ_INT(init_with_driver(&lib, ctx, path), PTO_ERR_DEVICE);
    CHECK_CONTAINS(lib.last_error(), path);
    CHECK_CONTAINS(lib.last_error(), "missing entry 'pto_driver_api'");
    lib.destroy(ctx);
    test_unload_lib(&lib);
}

TEST(onboard_init_refuses_an_incomplete_driver_naming_the_entry_then_works_on_the_bundled_one)
{
    char path[256];
    fixture_path("libptorun_fixture_incomplete_driver.so", path, sizeof path);
    for (int i = 4; i < 8; i++) {
        LoadedLib lib;
        CHECK(test_load_lib(TEST_ALL_VARIANTS[i], &lib) == 0);
        void *ctx = lib.create();
        CHECK_EQ_INT(init_with_driver(&lib, ctx, path), PTO_ERR_DEVICE);
        CHECK_CONTAINS(lib.last_error(), path);
        CHECK_CONTAINS(lib.last_error(), "'launch' is missing");
        /* the same context then loads the bundled driver: the images are bogus,
           so it is the image that is refused now, no longer the driver */
        int rc = init_with_driver(&lib, ctx, NULL);
        CHECK(rc != PTO_OK);
        CHECK_CONTAINS(lib.last_error(), "load_image of the AICPU image");
        lib.destroy(ctx);
        test_unload_lib(&lib);
    }
}

/* A copy of libptorun_<variant>.so in a fresh folder, loaded from there: the
 * runner then looks for libptorun_driver.so (the pin of -Dptorun.driver) in
 * that folder. */
static int load_copy(const char *variant, char *dir, size_t n, LoadedLib *lib)
{
    const char *libs = getenv("PTORUN_LIB_DIR");
    char from[2048], to[256], command[2400];
    snprintf(dir, n, "/tmp/ptorun-pin-test-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(from, sizeof from, "%.1900s/libptorun_%.40s.so", libs != NULL ? libs : ".", variant);
    snprintf(to, sizeof to, "%.100s/libptorun_%.40s.so", dir, variant);
    snprintf(command, sizeof command, "cp '%s' '%s'", from, to);
    if (system(command) != 0)
        return -1;
    char *saved = libs != NULL ? strdup(libs) : NULL;
    setenv("PTORUN_LIB_DIR", dir, 1);
    int rc = test_load_lib(variant, lib);
    if (saved != NULL) {
        setenv("PTORUN_LIB_DIR", saved, 1);
        free(saved);
    } else {
        unsetenv("PTORUN_LIB_DIR");
    }
    return rc;
}

static void remove_dir(const char *dir)
{
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%.100s'", dir);
    CHECK(system(command) == 0);
}

TEST(onboard_init_prefers_the_pinned_driver_next_to_the_runner_over_PTORUN_DRIVER)
{
    char dir[64], link[96], incomplete[256], kernels[256];
    fixture_path("libptorun_fixture_incomplete_driver.so", incomplete, sizeof incomplete);
    fixture_path("libptorun_fixture_kernels.so", kernels, sizeof kernels);
    for (int i = 4; i < 8; i++) {
        LoadedLib lib;
        CHECK(load_copy(TEST_ALL_VARIANTS[i], dir, sizeof dir, &lib) == 0);
        snprintf(link, sizeof link, "%.60s/libptorun_driver.so", dir);
        void *ctx = lib.create();
        /* a dangling pin is refused, naming the link and its origin; PTORUN_DRIVER is not consulted */
        CHECK(symlink("/nonexistent/pinned_driver.so", link) == 0);
        CHECK_EQ_INT(init_with_driver(&lib, ctx, kernels), PTO_ERR_DEVICE);
        CHECK_CONTAINS(lib.last_error(), link);
        CHECK_CONTAINS(lib.last_error(), "pinned by ptorun.driver");
        CHECK_CONTAINS(lib.last_error(), "cannot load it");
        /* a pin to the incomplete driver: its refusal, not the PTORUN_DRIVER library's */
        CHECK(unlink(link) == 0);
        CHECK(symlink(incomplete, link) == 0);
        CHECK_EQ_INT(init_with_driver(&lib, ctx, kernels), PTO_ERR_DEVICE);
        CHECK_CONTAINS(lib.last_error(), "'launch' is missing");
        lib.destroy(ctx);
        test_unload_lib(&lib);
        remove_dir(dir);
    }
}
