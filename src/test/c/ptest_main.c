#include "ptest.h"

#include <stdlib.h>

#define PTEST_MAX 512

/* Names the binary's suite in the summary line (each binary prints one). */
#ifndef PTEST_SUITE_NAME
#define PTEST_SUITE_NAME "native tests"
#endif

static struct { const char *name; ptest_fn fn; } tests[PTEST_MAX];
static int test_count;
static int current_failures;

void ptest_register(const char *name, ptest_fn fn)
{
    if (test_count == PTEST_MAX) {
        fprintf(stderr, "ptest: too many tests\n");
        exit(2);
    }
    tests[test_count].name = name;
    tests[test_count].fn = fn;
    test_count++;
}

void ptest_record_failure(const char *file, int line, const char *what)
{
    current_failures++;
    fprintf(stderr, "    %s:%d: CHECK failed: %s\n", file, line, what);
}

/* Runs every test, or only those whose name contains argv[1]. */
int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (int i = 0; i < test_count; i++) {
        if (argc > 1 && strstr(tests[i].name, argv[1]) == NULL)
            continue;
        current_failures = 0;
        tests[i].fn();
        if (current_failures == 0) {
            passed++;
        } else {
            failed++;
            fprintf(stderr, "FAILED %s\n", tests[i].name);
        }
    }
    printf(PTEST_SUITE_NAME ": %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
