#include "trb_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "services/host_api.h"
#include "util/last_error.h"
#include "test_sim.h"

Runner *trb_runner(void)
{
    const DeviceImages *images = test_images_of(PTO_ARCH_NAME);
    Runner *r = runner_create();
    if (images == NULL || r == NULL || runner_init(r, 0, images) != PTO_OK) {
        fprintf(stderr, "trb_runner: cannot bring up a sim runner: %s\n", pto_last_error());
        runner_destroy(r);
        return NULL;
    }
    return r;
}

void trb_children(TestCallableBuilder *b)
{
    tcb_child(b, FN_VADD, PTO_CORE_AIV, "vadd");
    tcb_child(b, FN_VADDS, PTO_CORE_AIV, "vadds");
    tcb_child(b, FN_VMUL, PTO_CORE_AIC, "vmul");
    tcb_child(b, FN_VCOPY, PTO_CORE_AIV, "vcopy");
    tcb_child(b, FN_VFILL, PTO_CORE_AIV, "vfill");
    tcb_child(b, FN_NOOP, PTO_CORE_AIC, "noop");
}

static uint8_t *read_file(const char *path, uint32_t *size)
{
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
    *size = (uint32_t)n;
    return bytes;
}

const uint8_t *trb_test_orch(uint32_t *size)
{
    static uint8_t *image;
    static uint32_t image_size;
    if (image == NULL)
        image = read_file(TRB_TEST_ORCH_PATH, &image_size);
    *size = image_size;
    return image;
}

const uint8_t *trb_test_kernels(uint32_t *size)
{
    static uint8_t *image;
    static uint32_t image_size;
    if (image == NULL)
        image = read_file(TRB_TEST_KERNELS_PATH, &image_size);
    *size = image_size;
    return image;
}

uint8_t *trb_library_callable(const uint8_t *signature, uint32_t n, const char *entry, uint32_t *size)
{
    uint32_t image_size;
    const uint8_t *image = trb_test_orch(&image_size);
    if (image == NULL)
        return NULL;
    TestCallableBuilder b;
    tcb_init(&b);
    if (n > 0)
        tcb_signature(&b, signature, n);
    trb_children(&b);
    tcb_orchestration_library(&b, image, image_size, entry);
    uint8_t *c = tcb_build(&b, size);
    tcb_free(&b);
    return c;
}

RuntimeCallable *trb_register(Runner *r, const uint8_t *bytes)
{
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    RuntimeCallable *c = NULL;
    if (bytes == NULL || runtime_register_callable(&api, bytes, &c) != PTO_OK)
        fprintf(stderr, "register: %s\n", pto_last_error());
    return c;
}

RuntimeCallable *trb_register_built(Runner *r, TestCallableBuilder *b)
{
    uint32_t size;
    uint8_t *bytes = tcb_build(b, &size);
    tcb_free(b);
    RuntimeCallable *c = trb_register(r, bytes);
    free(bytes);
    return c;
}

void trb_fill(float *x, uint32_t n, uint32_t seed)
{
    srand(seed);
    for (uint32_t i = 0; i < n; i++)
        x[i] = (float)(rand() % 2001 - 1000) / 97.0f;
}

void trb_release(Runner *r, RuntimeCallable *c)
{
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    runtime_release_callable(&api, c);
}
