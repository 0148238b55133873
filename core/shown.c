/* core/shown.c: a figure as it reads printed: a change of -0.00001 % is no change, and printed
 * with one decimal it must read +0.0 %, not -0.0 %. */
#include <math.h>

#include "internal.h"

double sp_shown(double v, int decimals) {
    return fabs(v) < 0.5 * pow(10.0, -decimals) ? 0.0 : v;
}
