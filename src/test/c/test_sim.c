#include "test_sim.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "services/launch_signal.h"

static uint8_t *read_file_in(const char *env, const char *name, size_t *size)
{
    const char *dir = getenv(env);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : ".", name);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *bytes = malloc((size_t)n);
    if (bytes != NULL && fread(bytes, 1, (size_t)n, f) != (size_t)n) {
        free(bytes);
        bytes = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return bytes;
}

static uint8_t *read_file(const char *name, size_t *size)
{
    return read_file_in("PTORUN_LIB_DIR", name, size);
}

const uint8_t *test_fixture(const char *name, uint32_t *size)
{
    static struct { char name[32]; uint8_t *bytes; size_t size; } cache[8];
    for (int i = 0; i < 8; i++) {
        if (cache[i].bytes != NULL && strcmp(cache[i].name, name) == 0) {
            *size = (uint32_t)cache[i].size;
            return cache[i].bytes;
        }
        if (cache[i].bytes == NULL) {
            char file[64];
            snprintf(file, sizeof file, "libptorun_fixture_%s.so", name);
            cache[i].bytes = read_file_in("PTORUN_FIXTURE_DIR", file, &cache[i].size);
            if (cache[i].bytes == NULL)
                return NULL;
            snprintf(cache[i].name, sizeof cache[i].name, "%s", name);
            *size = (uint32_t)cache[i].size;
            return cache[i].bytes;
        }
    }
    return NULL;
}

const DeviceImages *test_images_of(const char *arch)
{
    static DeviceImages images[2];
    static int loaded[2];
    int i = strcmp(arch, "a5") == 0;
    if (!loaded[i]) {
        char name[64];
        snprintf(name, sizeof name, "libptorun_aicpu_%s.so", arch);
        images[i].aicpu = read_file(name, &images[i].aicpu_size);
        snprintf(name, sizeof name, "libptorun_aicore_%s.so", arch);
        images[i].aicore = read_file(name, &images[i].aicore_size);
        loaded[i] = images[i].aicpu != NULL && images[i].aicore != NULL;
    }
    return loaded[i] ? &images[i] : NULL;
}

const DeviceImages *test_images(void)
{
    return test_images_of("a2a3");
}

Runner *test_sim_runner(void)
{
    const DeviceImages *images = test_images();
    Runner *r = runner_create();
    if (images == NULL || r == NULL || runner_init(r, 0, images) != PTO_OK) {
        fprintf(stderr, "test_sim_runner: cannot bring up a sim runner\n");
        runner_destroy(r);
        return NULL;
    }
    return r;
}

ChipStorageTaskArgs *test_args(void)
{
    ChipStorageTaskArgs *a = aligned_alloc(64, sizeof *a);
    memset(a, 0, sizeof *a);
    return a;
}

ChipTensor test_f32_tensor(float *host, uint32_t n)
{
    ChipTensor t;
    memset(&t, 0, sizeof t);
    t.addr = (uint64_t)(uintptr_t)host;
    t.size = (uint64_t)n * sizeof(float);
    t.ndims = 1;
    t.dtype = PTO_DTYPE_F32;
    t.is_contiguous = 1;
    t.shapes[0] = n;
    t.strides[0] = 1;
    return t;
}

CallConfig test_config(int32_t timeout_ms)
{
    CallConfig c;
    memset(&c, 0, sizeof c);
    c.timeout_ms = timeout_ms;
    return c;
}

int test_run(Runner *r, const RuntimeCallable *c, uint32_t bank, const ChipStorageTaskArgs *args,
             const CallConfig *cfg, int *exec_rc)
{
    return test_run_desc(r, c, bank, args, cfg, NULL, exec_rc);
}

/* Each runner gets its scratches on first use, as a device context keeps one
   per slot; kept (still reachable at exit, never reported as a leak). A
   runner's address reused after runner_destroy reuses them: that runner is gone.
   Sanitizers rarely reuse an address, hence the room for many runners. */
#define TEST_SCRATCH_RUNNERS 1024
static struct {
    const void *runner;
    RuntimeSlotScratch *slot[PTO_PIPELINE_MAX_DEPTH];
} scratches[TEST_SCRATCH_RUNNERS];
static pthread_mutex_t scratches_lock = PTHREAD_MUTEX_INITIALIZER;

RuntimeSlotScratch *test_slot_scratch(const void *runner, uint32_t slot)
{
    RuntimeSlotScratch *s = NULL;
    pthread_mutex_lock(&scratches_lock);
    for (int i = 0; i < TEST_SCRATCH_RUNNERS && slot < PTO_PIPELINE_MAX_DEPTH; i++) {
        if (scratches[i].runner == NULL) {
            scratches[i].runner = runner;
            for (uint32_t k = 0; k < PTO_PIPELINE_MAX_DEPTH; k++)
                scratches[i].slot[k] = runtime_slot_scratch_create();
        }
        if (scratches[i].runner == runner) {
            s = scratches[i].slot[slot];
            break;
        }
    }
    pthread_mutex_unlock(&scratches_lock);
    if (s == NULL)
        fprintf(stderr, "test_slot_scratch: no scratch for slot %u of runner %p\n", slot, runner);
    return s;
}

static int run_bound(Runner *r, const RuntimeCallable *c, uint32_t bank, const ChipStorageTaskArgs *args,
                     const CallConfig *cfg, const NativeRunDescriptor *desc, int overlaps, int *exec_rc);

int test_run_desc(Runner *r, const RuntimeCallable *c, uint32_t bank, const ChipStorageTaskArgs *args,
                  const CallConfig *cfg, const NativeRunDescriptor *desc, int *exec_rc)
{
    return run_bound(r, c, bank, args, cfg, desc, 0, exec_rc);
}

int test_run_beside(Runner *r, const RuntimeCallable *c, uint32_t bank, const ChipStorageTaskArgs *args,
                    const CallConfig *cfg, int *exec_rc)
{
    return run_bound(r, c, bank, args, cfg, NULL, 1, exec_rc);
}

static int run_bound(Runner *r, const RuntimeCallable *c, uint32_t bank, const ChipStorageTaskArgs *args,
                     const CallConfig *cfg, const NativeRunDescriptor *desc, int overlaps, int *exec_rc)
{
    HostApi api = host_api_bind(r, bank, bank, &host_api_ops);
    RuntimeRun run;
    memset(&run, 0, sizeof run);
    run.overlaps = overlaps;
    DeviceLaunch launch;
    int rc = runtime_bind(&run, test_slot_scratch(r, bank), &api, c, args, cfg, desc, &launch);
    if (rc != PTO_OK)
        return rc;
    volatile int32_t accepted = 0;
    LaunchSignal signal;
    launch_signal_init(&signal, &accepted, 41);
    RunExec exec;
    memset(&exec, 0, sizeof exec);
    int erc = runner_submit(r, &exec, bank, &launch, &signal);
    int launched = erc == PTO_OK;
    if (launched) {
        if (!launch_signal_fired(&signal) || accepted != 41) {
            fprintf(stderr, "test_run: submit returned without publishing acceptance\n");
            erc = PTO_ERR_FAILED;
        }
        int drc = runner_await_device(r, &exec);
        if (erc == PTO_OK)
            erc = drc;
    }
    launch_signal_destroy(&signal);
    if (exec_rc != NULL)
        *exec_rc = erc;
    rc = launched ? runtime_collect_results(&run, &api, erc) : PTO_OK;
    runtime_unbind(&run, &api);
    return erc != PTO_OK ? erc : rc;
}

long long test_process_cpu_us(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (long long)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000LL + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}
