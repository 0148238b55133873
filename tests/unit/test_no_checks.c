/* tests/unit/test_no_checks.c: a test binary that runs no check must fail (tests/test.h,
 * sp_test_finish): run by tests/cli/t0010-harness.sh, which expects exit 1. */
#include "../test.h"

int main(void) {
    return sp_test_finish("test_no_checks");
}
