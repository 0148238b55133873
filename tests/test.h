/* tests/test.h: a tiny assertion header for the C tests (file:line on failure). Tests are
 * compiled with NDEBUG undefined; each test executable returns 0 when every check passed. */
#ifndef SP_TEST_H
#define SP_TEST_H

#include <stdint.h>
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

#define SP_CHECK_MSG(cond, ...) SP_CHECK_AT((cond), #cond, __VA_ARGS__)

/* SP_CHECK_AT: a check whose condition was evaluated already (text: how it reads in the test) */
#define SP_CHECK_AT(ok, text, ...)                                                                 \
    do {                                                                                           \
        sp_test_checks++;                                                                          \
        if (!(ok)) {                                                                               \
            sp_test_failures++;                                                                    \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, text);                \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* The comparisons evaluate each argument once: a call in them (a measurement, a close) must
 * not run again to print the message. */
#define SP_CHECK_EQ_INT(a, b)                                                                      \
    do {                                                                                           \
        long long sp_a_ = (long long)(a), sp_b_ = (long long)(b);                                  \
        SP_CHECK_AT(sp_a_ == sp_b_, "(long long)(" #a ") == (long long)(" #b ")", "%lld != %lld",  \
                    sp_a_, sp_b_);                                                                 \
    } while (0)

#define SP_CHECK_STATUS(st, expected)                                                              \
    do {                                                                                           \
        sp_status sp_got_ = (st), sp_want_ = (expected);                                           \
        SP_CHECK_AT(sp_got_ == sp_want_, "(" #st ") == (" #expected ")", "got %s, expected %s",    \
                    sp_status_name(sp_got_), sp_status_name(sp_want_));                            \
    } while (0)

#define SP_CHECK_CONTAINS(haystack, needle)                                                        \
    do {                                                                                           \
        const char *sp_hay_ = (haystack), *sp_needle_ = (needle);                                  \
        SP_CHECK_AT(strstr(sp_hay_, sp_needle_) != NULL, "strstr(" #haystack ", " #needle ")",     \
                    "'%s' does not contain '%s'", sp_hay_, sp_needle_);                            \
    } while (0)

/* A test that ran no check has tested nothing (a scenario that returned early, a loop over
 * nothing): that is a failure too. */
static inline int sp_test_finish(const char *name) {
    printf("%s: %d checks, %d failed\n", name, sp_test_checks, sp_test_failures);
    if (sp_test_checks == 0)
        printf("%s: no check ran\n", name);
    return sp_test_failures || sp_test_checks == 0 ? 1 : 0;
}

/* splitmix64: the tests' random numbers, reproducible from a seed */
static inline uint64_t sp_test_random(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif
