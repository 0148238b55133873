/* core/median.c: the median the profilers and the runtime report (internal.h). */
#include <stdlib.h>

#include "internal.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sp_median(double *v, size_t n) {
    if (!n)
        return 0.0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
