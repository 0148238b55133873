/* tests/test.h: a tiny assertion header for the C tests (file:line on failure). Tests are
 * compiled with NDEBUG undefined; each test executable returns 0 when every check passed. */
#ifndef SP_TEST_H
#define SP_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sp_test_failures;
static int sp_test_checks;

#define SP_CHECK(cond)                                                                             \
    do {                                                                                           \
        sp_test_checks++;                                                                          \
        if (!(cond)) {                                                                             \
            sp_test_failures++;                                                                    \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define SP_CHECK_MSG(cond, ...)                                                                    \
    do {                                                                                           \
        sp_test_checks++;                                                                          \
        if (!(cond)) {                                                                             \
            sp_test_failures++;                                                                    \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#define SP_CHECK_EQ_INT(a, b)                                                                      \
    SP_CHECK_MSG((long long)(a) == (long long)(b), "%lld != %lld", (long long)(a), (long long)(b))

#define SP_CHECK_STATUS(st, expected)                                                              \
    SP_CHECK_MSG((st) == (expected), "got %s, expected %s", sp_status_name(st),                    \
                 sp_status_name(expected))

#define SP_CHECK_CONTAINS(haystack, needle)                                                        \
    SP_CHECK_MSG(strstr((haystack), (needle)) != NULL, "'%s' does not contain '%s'", (haystack),   \
                 (needle))

static inline int sp_test_finish(const char *name) {
    printf("%s: %d checks, %d failed\n", name, sp_test_checks, sp_test_failures);
    return sp_test_failures ? 1 : 0;
}

#endif
