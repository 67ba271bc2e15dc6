/* The allocation table behind sim device memory (and the emulated driver). */
#include "util/alloc_table.h"
#include "util/env.h"
#include "ptest.h"
#include "ptorun/pto_runtime_c_api.h"

#include <stdlib.h>

TEST(alloc_table_finds_ranges_and_keeps_exact_accounting)
{
    AllocTable t;
    CHECK_EQ_INT(alloc_table_init(&t, 0), PTO_OK);
    /* insert out of order; lookups must still find each range */
    uintptr_t bases[] = { 5000, 1000, 3000, 9000 };
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(alloc_table_reserve(&t, 100), PTO_OK);
        CHECK_EQ_INT(alloc_table_insert(&t, bases[i], 100), PTO_OK);
    }
    CHECK_EQ_INT(alloc_table_committed(&t), 400);
    CHECK(alloc_table_contains(&t, 1000, 100));
    CHECK(alloc_table_contains(&t, 3050, 50));
    CHECK(!alloc_table_contains(&t, 3050, 51));
    CHECK(!alloc_table_contains(&t, 999, 1));
    CHECK(!alloc_table_contains(&t, 2000, 1));
    CHECK(!alloc_table_contains(&t, 10000, 1));
    size_t size = 0;
    CHECK_EQ_INT(alloc_table_remove(&t, 3001, &size), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(alloc_table_remove(&t, 3000, &size), PTO_OK);
    CHECK_EQ_INT(size, 100);
    CHECK(!alloc_table_contains(&t, 3000, 1));
    CHECK(alloc_table_contains(&t, 5000, 1));
    CHECK_EQ_INT(alloc_table_count(&t), 3);
    CHECK_EQ_INT(alloc_table_committed(&t), 300);
    alloc_table_destroy(&t);
}

TEST(alloc_table_grows_past_its_initial_capacity)
{
    AllocTable t;
    alloc_table_init(&t, 0);
    for (uintptr_t i = 0; i < 1000; i++) {
        alloc_table_reserve(&t, 8);
        CHECK_EQ_INT(alloc_table_insert(&t, 1000000 - i * 16, 8), PTO_OK);
    }
    CHECK_EQ_INT(alloc_table_count(&t), 1000);
    for (uintptr_t i = 0; i < 1000; i++)
        CHECK(alloc_table_contains(&t, 1000000 - i * 16 + 4, 4));
    alloc_table_destroy(&t);
}

TEST(alloc_table_capacity_is_enforced_without_overflow)
{
    AllocTable t;
    alloc_table_init(&t, 1024);
    CHECK_EQ_INT(alloc_table_reserve(&t, 1024), PTO_OK);
    CHECK_EQ_INT(alloc_table_reserve(&t, 1), PTO_ERR_OUT_OF_MEMORY);
    alloc_table_unreserve(&t, 1024);
    CHECK_EQ_INT(alloc_table_reserve(&t, SIZE_MAX), PTO_ERR_OUT_OF_MEMORY);
    CHECK_EQ_INT(alloc_table_committed(&t), 0);
    alloc_table_destroy(&t);
}

TEST(env_size_parses_suffixes_and_rejects_garbage)
{
    setenv("PTORUN_TEST_SIZE", "3M", 1);
    CHECK_EQ_INT(pto_env_size("PTORUN_TEST_SIZE", 7), 3u << 20);
    setenv("PTORUN_TEST_SIZE", "12x", 1);
    CHECK_EQ_INT(pto_env_size("PTORUN_TEST_SIZE", 7), 7);
    setenv("PTORUN_TEST_SIZE", "", 1);
    CHECK_EQ_INT(pto_env_size("PTORUN_TEST_SIZE", 7), 7);
    unsetenv("PTORUN_TEST_SIZE");
    CHECK_EQ_INT(pto_env_size("PTORUN_TEST_SIZE", 7), 7);
}
