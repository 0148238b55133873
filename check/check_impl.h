/* check/check_impl.h: the result of sp_check (check/check.c), read by its writers
 * (check/report.c). */
#ifndef SP_CHECK_CHECK_IMPL_H
#define SP_CHECK_CHECK_IMPL_H

#include "internal.h"

#define SP_CHECK_MAX_CRITERIA 8

struct sp_check_result {
    sp_check_criterion criteria[SP_CHECK_MAX_CRITERIA];
    char *messages[SP_CHECK_MAX_CRITERIA]; /* owned; criteria[i].message points here */
    size_t n;
};

#endif
