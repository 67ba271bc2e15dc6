#include "hbg_bridge.h"

#include <stdlib.h>
#include <string.h>

#include "util/last_error.h"
#include "ptorun/pto_runtime_c_api.h"

void hbg_bridge_init(HbgBridge *b)
{
    memset(b, 0, sizeof *b);
}

void hbg_bridge_destroy(HbgBridge *b)
{
    free(b->regions);
    memset(b, 0, sizeof *b);
}

void hbg_bridge_reset(HbgBridge *b, const HostApi *api)
{
    b->count = 0;
    b->api = api;
}

int hbg_bridge_add(HbgBridge *b, uint64_t dev_base, uint64_t size, void *host_view)
{
    if (size == 0 || host_view == NULL || dev_base + size < dev_base)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host-access bridge: region [0x%llx, +%llu) with view %p refused",
                        (unsigned long long)dev_base, (unsigned long long)size, host_view);
    if (b->count == b->cap) {
        uint32_t cap = b->cap ? b->cap * 2 : 16;
        HbgRegion *grown = realloc(b->regions, cap * sizeof *grown);
        if (grown == NULL)
            return pto_fail(PTO_ERR_OUT_OF_MEMORY, "host-access bridge: out of host memory");
        b->regions = grown;
        b->cap = cap;
    }
    b->regions[b->count++] = (HbgRegion){
        .dev_base = dev_base,
        .size = size,
        .host_view = host_view,
        .mirrored = (uintptr_t)host_view != dev_base,
    };
    return PTO_OK;
}

/* The region holding all of [dev_addr, dev_addr + n), or NULL. */
static const HbgRegion *find_region(const HbgBridge *b, uint64_t dev_addr, uint64_t n)
{
    for (uint32_t i = 0; i < b->count; i++) {
        const HbgRegion *r = &b->regions[i];
        if (dev_addr >= r->dev_base && dev_addr - r->dev_base <= r->size && n <= r->size - (dev_addr - r->dev_base))
            return r;
    }
    return NULL;
}

static int outside(const char *op, uint64_t dev_addr, uint64_t n)
{
    return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: [0x%llx, +%llu) is not inside one run tensor", op,
                    (unsigned long long)dev_addr, (unsigned long long)n);
}

int hbg_bridge_read(const HbgBridge *b, uint64_t dev_addr, void *dst, uint64_t n)
{
    const HbgRegion *r = find_region(b, dev_addr, n);
    if (r == NULL)
        return outside("read_tensor", dev_addr, n);
    if (n > 0)
        memcpy(dst, r->host_view + (dev_addr - r->dev_base), n);
    return PTO_OK;
}

int hbg_bridge_write(const HbgBridge *b, uint64_t dev_addr, const void *src, uint64_t n)
{
    const HbgRegion *r = find_region(b, dev_addr, n);
    if (r == NULL)
        return outside("write_tensor", dev_addr, n);
    if (n == 0)
        return PTO_OK;
    if (r->mirrored) {
        /* the device first: a failed push leaves the mirror as it was */
        if (b->api == NULL)
            return pto_fail(PTO_ERR_INVALID_ARGUMENT,
                            "write_tensor: [0x%llx, +%llu) is mirrored but no run is orchestrating (no HostApi)",
                            (unsigned long long)dev_addr, (unsigned long long)n);
        int rc = host_api_copy_to_device(b->api, (void *)(uintptr_t)dev_addr, src, n);
        if (rc != PTO_OK)
            return rc;
    }
    memcpy(r->host_view + (dev_addr - r->dev_base), src, n);
    return PTO_OK;
}
