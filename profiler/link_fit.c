/* profiler/link_fit.c: the alpha-beta model of a link, t(s) = alpha + s / beta, fitted to
 * measured (bytes, ms) pairs by least squares on the relative error (weights 1 / t^2), so the
 * 4 KiB points, which fix alpha, count as much as the 64 MiB points, which fix beta. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

sp_status sp_fit_alpha_beta(sp_ctx *ctx, const uint64_t *bytes, const double *ms, size_t n,
                            sp_link_fit *out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!bytes || !ms || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_fit_alpha_beta: NULL argument");
    memset(out, 0, sizeof *out);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(ms[i] > 0) || !isfinite(ms[i]))
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "link fit: sample %zu (%llu bytes) took %g ms; times must be > 0", i,
                           (unsigned long long)bytes[i], ms[i]);
        lo = bytes[i] < lo ? bytes[i] : lo;
        hi = bytes[i] > hi ? bytes[i] : hi;
    }
    if (n < 2 || lo == hi)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "link fit: needs samples of at least two different sizes, got %zu", n);
    /* normal equations of sum w (a + b s - t)^2, w = 1/t^2 */
    double sw = 0, sws = 0, swss = 0, swt = 0, swst = 0;
    for (size_t i = 0; i < n; i++) {
        double w = 1 / (ms[i] * ms[i]), s = (double)bytes[i];
        sw += w;
        sws += w * s;
        swss += w * s * s;
        swt += w * ms[i];
        swst += w * s * ms[i];
    }
    double det = sw * swss - sws * sws;
    double a = det > 0 ? (swt * swss - sws * swst) / det : 0;
    double b = det > 0 ? (sw * swst - sws * swt) / det : 0;
    if (a < 0) { /* no negative latency: the best line through the origin */
        a = 0;
        b = swst / swss;
    }
    if (!(b > 0))
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "link fit: the times do not grow with the size (%llu to %llu bytes): no "
                       "bandwidth to fit",
                       (unsigned long long)lo, (unsigned long long)hi);
    double mean = 0, ss_tot = 0, ss_res = 0, worst = 0;
    for (size_t i = 0; i < n; i++)
        mean += ms[i] / (double)n;
    for (size_t i = 0; i < n; i++) {
        double f = a + b * (double)bytes[i], r = ms[i] - f;
        ss_res += r * r;
        ss_tot += (ms[i] - mean) * (ms[i] - mean);
        worst = fabs(r) / ms[i] > worst ? fabs(r) / ms[i] : worst;
    }
    out->latency_us = a * 1e3;
    out->bandwidth_GBps = 1e-6 / b; /* b is ms per byte */
    out->r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
    out->max_rel_residual = worst;
    /* cross-check: the median of s / t over the largest sizes (the top quarter, at least one) */
    double *rates = sp_mallocarray(n, sizeof *rates);
    if (!rates)
        return sp_oom(ctx, "fitting a link");
    size_t k = 0;
    uint64_t cut = hi - (hi - lo) / 4;
    for (size_t i = 0; i < n; i++)
        if (bytes[i] >= cut)
            rates[k++] = (double)bytes[i] / (ms[i] * 1e6);
    out->peak_GBps = sp_median(rates, k);
    sp_free(rates);
    return SP_OK;
}
