/* The hbg host-access bridge on its own: direct and mirrored regions, push-back
 * of written bytes through the HostApi, refusals that leave the destination
 * untouched, and reset. */
#include <string.h>

#include "services/host_api.h"
#include "util/last_error.h"
#include "ptest.h"
#include "ptorun/pto_runtime_c_api.h"
#include "runtime/hbg/hbg_bridge.h"

/* A HostApi whose copy_to_device records its calls (and can be made to fail). */
static struct {
    int calls;
    void *dev;
    const void *host;
    size_t n;
    uint8_t bytes[64];
    int fail;
} pushes;

static int record_copy_to_device(void *runner, void *dev, const void *host, size_t n)
{
    (void)runner;
    pushes.calls++;
    pushes.dev = dev;
    pushes.host = host;
    pushes.n = n;
    memcpy(pushes.bytes, host, n < sizeof pushes.bytes ? n : sizeof pushes.bytes);
    return pushes.fail ? PTO_ERR_DEVICE : PTO_OK;
}

static HostApiOps recording_ops;

static HostApi recording_api(void)
{
    memset(&pushes, 0, sizeof pushes);
    recording_ops = host_api_ops;
    recording_ops.copy_to_device = record_copy_to_device;
    static int runner_stand_in;
    return host_api_bind(&runner_stand_in, 0, 0, &recording_ops);
}

TEST(bridge_direct_region_reads_and_writes_in_place_without_push)
{
    HostApi api = recording_api();
    HbgBridge b;
    hbg_bridge_init(&b);
    hbg_bridge_reset(&b, &api);
    float data[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    uint64_t dev = (uint64_t)(uintptr_t)data;
    CHECK_EQ_INT(hbg_bridge_add(&b, dev, sizeof data, data), PTO_OK);
    float v = 0;
    CHECK_EQ_INT(hbg_bridge_read(&b, dev + 3 * sizeof(float), &v, sizeof v), PTO_OK);
    CHECK(v == 3.0f);
    float w = 42.0f;
    CHECK_EQ_INT(hbg_bridge_write(&b, dev + 5 * sizeof(float), &w, sizeof w), PTO_OK);
    CHECK(data[5] == 42.0f);
    CHECK_EQ_INT(pushes.calls, 0);
    hbg_bridge_destroy(&b);
}

TEST(bridge_mirrored_region_reads_the_mirror_and_pushes_writes)
{
    HostApi api = recording_api();
    HbgBridge b;
    hbg_bridge_init(&b);
    hbg_bridge_reset(&b, &api);
    int32_t mirror[4] = { 10, 11, 12, 13 };
    uint64_t dev = 0x7f0000001000ull; /* never dereferenced */
    CHECK_EQ_INT(hbg_bridge_add(&b, dev, sizeof mirror, mirror), PTO_OK);
    int32_t v = 0;
    CHECK_EQ_INT(hbg_bridge_read(&b, dev + 8, &v, sizeof v), PTO_OK);
    CHECK_EQ_INT(v, 12);
    int32_t w = 99;
    CHECK_EQ_INT(hbg_bridge_write(&b, dev + 8, &w, sizeof w), PTO_OK);
    CHECK_EQ_INT(mirror[2], 99);
    CHECK_EQ_INT(pushes.calls, 1);
    CHECK(pushes.dev == (void *)(uintptr_t)(dev + 8));
    CHECK_EQ_INT(pushes.n, sizeof w);
    CHECK(memcmp(pushes.bytes, &w, sizeof w) == 0);
    hbg_bridge_destroy(&b);
}

TEST(bridge_mirrored_write_fails_and_changes_nothing_when_the_push_fails)
{
    HostApi api = recording_api();
    HbgBridge b;
    hbg_bridge_init(&b);
    hbg_bridge_reset(&b, &api);
    int32_t mirror[4] = { 10, 11, 12, 13 };
    uint64_t dev = 0x7f0000001000ull;
    CHECK_EQ_INT(hbg_bridge_add(&b, dev, sizeof mirror, mirror), PTO_OK);
    pushes.fail = 1;
    int32_t w = 99;
    CHECK_EQ_INT(hbg_bridge_write(&b, dev + 4, &w, sizeof w), PTO_ERR_DEVICE);
    CHECK_EQ_INT(mirror[1], 11);
    hbg_bridge_destroy(&b);
}

TEST(bridge_mirrored_write_fails_without_a_host_api)
{
    HbgBridge b;
    hbg_bridge_init(&b);
    hbg_bridge_reset(&b, NULL);
    int32_t mirror[4] = { 10, 11, 12, 13 };
    uint64_t dev = 0x7f0000001000ull;
    CHECK_EQ_INT(hbg_bridge_add(&b, dev, sizeof mirror, mirror), PTO_OK);
    int32_t w = 99;
    CHECK_EQ_INT(hbg_bridge_write(&b, dev, &w, sizeof w), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "no HostApi");
    CHECK_EQ_INT(mirror[0], 10);
    /* reads need no HostApi */
    int32_t v = 0;
    CHECK_EQ_INT(hbg_bridge_read(&b, dev + 12, &v, sizeof v), PTO_OK);
    CHECK_EQ_INT(v, 13);
    hbg_bridge_destroy(&b);
}

TEST(bridge_refuses_unregistered_addresses_and_leaves_the_destination)
{
    HostApi api = recording_api();
    HbgBridge b;
    hbg_bridge_init(&b);
    hbg_bridge_reset(&b, &api);
    uint8_t data[16] = { 0 };
    uint64_t dev = (uint64_t)(uintptr_t)data;
    CHECK_EQ_INT(hbg_bridge_add(&b, dev, sizeof data, data), PTO_OK);
    uint8_t dst[4] = { 7, 7, 7, 7 };
    CHECK_EQ_INT(hbg_bridge_read(&b, dev + 4096, dst, sizeof dst), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "not inside one run tensor");
    CHECK(dst[0] == 7 && dst[3] == 7);
    uint8_t src[4] = { 1, 2, 3, 4 };
    CHECK_EQ_INT(hbg_bridge_write(&b, dev - 4, src, sizeof src), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(pushes.calls, 0);
    hbg_bridge_destroy(&b);
}

TEST(bridge_refuses_spans_running_past_a_region)
{
    HostApi api = recording_api();
    HbgBridge b;
    hbg_bridge_init(&b);
    hbg_bridge_reset(&b, &api);
    uint8_t data[16];
    memset(data, 5, sizeof data);
    uint64_t dev = (uint64_t)(uintptr_t)data;
    CHECK_EQ_INT(hbg_bridge_add(&b, dev, sizeof data, data), PTO_OK);
    uint8_t dst[8];
    memset(dst, 7, sizeof dst);
    /* starts inside, ends past the end */
    CHECK_EQ_INT(hbg_bridge_read(&b, dev + 12, dst, 8), PTO_ERR_INVALID_ARGUMENT);
    CHECK(dst[0] == 7);
    /* starts before, ends inside */
    CHECK_EQ_INT(hbg_bridge_write(&b, dev - 2, dst, 8), PTO_ERR_INVALID_ARGUMENT);
    CHECK(data[0] == 5);
    /* the exact region is fine, and so is its last byte */
    CHECK_EQ_INT(hbg_bridge_read(&b, dev, data, sizeof data), PTO_OK);
    CHECK_EQ_INT(hbg_bridge_read(&b, dev + 15, dst, 1), PTO_OK);
    hbg_bridge_destroy(&b);
}

TEST(bridge_reset_drops_every_registration)
{
    HostApi api = recording_api();
    HbgBridge b;
    hbg_bridge_init(&b);
    hbg_bridge_reset(&b, &api);
    uint8_t data[16] = { 0 };
    uint64_t dev = (uint64_t)(uintptr_t)data;
    CHECK_EQ_INT(hbg_bridge_add(&b, dev, sizeof data, data), PTO_OK);
    uint8_t v;
    CHECK_EQ_INT(hbg_bridge_read(&b, dev, &v, 1), PTO_OK);
    hbg_bridge_reset(&b, NULL);
    CHECK(b.api == NULL);
    CHECK_EQ_INT(b.count, 0);
    CHECK_EQ_INT(hbg_bridge_read(&b, dev, &v, 1), PTO_ERR_INVALID_ARGUMENT);
    hbg_bridge_destroy(&b);
}

TEST(bridge_refuses_empty_or_null_regions_and_resolves_regions_independently)
{
    HostApi api = recording_api();
    HbgBridge b;
    hbg_bridge_init(&b);
    hbg_bridge_reset(&b, &api);
    uint8_t one[8], two[8];
    memset(one, 1, sizeof one);
    memset(two, 2, sizeof two);
    CHECK_EQ_INT(hbg_bridge_add(&b, (uintptr_t)one, 0, one), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(hbg_bridge_add(&b, (uintptr_t)one, 8, NULL), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(hbg_bridge_add(&b, UINT64_MAX - 4, 8, one), PTO_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < 40; i++) /* grows past its first capacity */
        CHECK_EQ_INT(hbg_bridge_add(&b, 0x100000ull * (uint64_t)(i + 1), 8, i % 2 ? two : one), PTO_OK);
    uint8_t v = 0;
    CHECK_EQ_INT(hbg_bridge_read(&b, 0x100000ull * 3 + 7, &v, 1), PTO_OK);
    CHECK_EQ_INT(v, 1);
    CHECK_EQ_INT(hbg_bridge_read(&b, 0x100000ull * 40, &v, 1), PTO_OK);
    CHECK_EQ_INT(v, 2);
    hbg_bridge_destroy(&b);
}
