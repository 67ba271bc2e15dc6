#include "ptest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define PTEST_MAX 512

/* Names the binary's suite in the summary line (each binary prints one). */
#ifndef PTEST_SUITE_NAME
#define PTEST_SUITE_NAME "native tests"
#endif

static struct { const char *name; ptest_fn fn; } tests[PTEST_MAX];
static int test_count;
static int current_failures;

/* With PTEST_LOG set, stderr (fd 2: the tests', the library's and any child's) goes to
   that file, so the expected-failure diagnostics of passing tests stay off the console;
   the console keeps the summary (stdout) and every failure: the CHECK lines and the
   failing test's whole stderr, copied from the log. Unset: stderr is the console. */
static FILE *console;
static const char *log_path;

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

static void open_log(void)
{
    console = stderr;
    log_path = getenv("PTEST_LOG");
    if (log_path == NULL || log_path[0] == '\0') {
        log_path = NULL;
        return;
    }
    int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    FILE *out = saved < 0 ? NULL : fdopen(saved, "w");
    if (fd < 0 || out == NULL || dup2(fd, STDERR_FILENO) < 0) {
        fprintf(stderr, "ptest: cannot log stderr to PTEST_LOG=%s: %s\n", log_path, strerror(errno));
        exit(2);
    }
    close(fd);
    setvbuf(out, NULL, _IONBF, 0);
    console = out;
    fprintf(stderr, "==== %s\n", PTEST_SUITE_NAME);
}

/* Copies the log from offset `from` to its end onto the console: a failing test's stderr. */
static void show_log_from(off_t from)
{
    int fd = open(log_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || lseek(fd, from, SEEK_SET) < 0) {
        fprintf(console, "    (cannot read %s: %s)\n", log_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        fwrite(buf, 1, (size_t)n, console);
    close(fd);
}

/* Runs every test, or only those whose name contains argv[1]. */
int main(int argc, char **argv)
{
    open_log();
    int passed = 0, failed = 0;
    for (int i = 0; i < test_count; i++) {
        if (argc > 1 && strstr(tests[i].name, argv[1]) == NULL)
            continue;
        current_failures = 0;
        off_t start = 0;
        if (log_path != NULL) {
            fprintf(stderr, "-- %s\n", tests[i].name);
            start = lseek(STDERR_FILENO, 0, SEEK_END);
        }
        tests[i].fn();
        if (current_failures == 0) {
            passed++;
        } else {
            failed++;
            fprintf(stderr, "FAILED %s\n", tests[i].name);
            if (log_path != NULL) {
                fprintf(console, "%s: %s's stderr (from %s):\n", PTEST_SUITE_NAME, tests[i].name, log_path);
                show_log_from(start);
            }
        }
    }
    fflush(stderr);
    printf(PTEST_SUITE_NAME ": %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
