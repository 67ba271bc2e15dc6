/* util/library_cache.c: libraries loaded from bytes once per content,
 * refcounted, unloaded at the last release, counted. */
#include <stdlib.h>
#include <string.h>

#include "util/last_error.h"
#include "util/library_cache.h"
#include "ptest.h"
#include "test_sim.h"

TEST(library_cache_loads_each_content_once_and_unloads_at_the_last_release)
{
    uint32_t ksize, osize;
    const uint8_t *kernels = test_fixture("kernels", &ksize), *orch = test_fixture("orch", &osize);
    CHECK(kernels != NULL && orch != NULL);
    if (kernels == NULL || orch == NULL)
        return;
    LibraryCache c;
    CHECK_EQ_INT(library_cache_init(&c, "test library"), PTO_OK);
    /* a private copy of the bytes: equal content at another address is the same library */
    uint8_t *copy = malloc(ksize);
    memcpy(copy, kernels, ksize);
    void *h1, *h2, *h3;
    CHECK_EQ_INT(library_cache_acquire(&c, kernels, ksize, &h1), PTO_OK);
    CHECK_EQ_INT(library_cache_acquire(&c, copy, ksize, &h2), PTO_OK);
    CHECK(h1 != NULL && h1 == h2);
    CHECK_EQ_INT(library_cache_loads(&c), 1);
    CHECK_EQ_INT(library_cache_acquire(&c, orch, osize, &h3), PTO_OK);
    CHECK(h3 != h1);
    CHECK_EQ_INT(library_cache_loads(&c), 2);
    CHECK_EQ_INT(library_cache_loaded(&c), 2);

    char why[256];
    CHECK(library_cache_symbol(h1, "fx_saxpy", 8, why, sizeof why) != NULL);
    CHECK(library_cache_symbol(h1, "fx_saxpyX", 8, why, sizeof why) != NULL); /* only `size` bytes count */
    CHECK(library_cache_symbol(h1, "fx_orch_fail", 12, why, sizeof why) == NULL);
    CHECK_CONTAINS(why, "fx_orch_fail");
    CHECK(library_cache_symbol(h1, "x", 0, why, sizeof why) == NULL);

    CHECK_EQ_INT(library_cache_release(&c, h1), PTO_OK);
    CHECK_EQ_INT(library_cache_loaded(&c), 2);
    CHECK_EQ_INT(library_cache_release(&c, h2), PTO_OK);
    CHECK_EQ_INT(library_cache_loaded(&c), 1);
    CHECK_EQ_INT(library_cache_release(&c, h2), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "test library: ");
    CHECK_EQ_INT(library_cache_acquire(&c, kernels, ksize, &h1), PTO_OK);
    CHECK_EQ_INT(library_cache_loads(&c), 3);

    /* one byte changed is another library (here: not a loadable one) */
    copy[ksize / 2] ^= 0xff;
    copy[0] = 0;
    CHECK_EQ_INT(library_cache_acquire(&c, copy, ksize, &h2), PTO_ERR_BAD_CALLABLE);
    CHECK(h2 == NULL);
    CHECK_CONTAINS(pto_last_error(), "cannot be loaded");
    CHECK_EQ_INT(library_cache_acquire(&c, NULL, 8, &h2), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(library_cache_loads(&c), 3);

    library_cache_clear(&c);
    CHECK_EQ_INT(library_cache_loaded(&c), 0);
    CHECK_EQ_INT(library_cache_loads(&c), 3);
    library_cache_destroy(&c);
    free(copy);
}
