/* profiler/links_json.c: a bandwidth probe's timings summarized (medians, quantiles) and fitted
 * per link, into the links document that formats/links.c writes (profiler/links_json.h). */
#include "links_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devices_impl.h"
#include "json_util.h"

struct sp_bandwidth_result {
    sp_link_result *links; /* [n_links], labels owned */
    size_t n_links, cap;
    char *timing, *note; /* NULL: none */
    char *json;
};

struct sp_links_doc {
    sp_ctx *ctx;
    size_t n;
    double *bw, *lat;  /* n x n; 0 where nothing was measured */
    cJSON *m, *series; /* the measurement object, its "pairs"; the document is made at the end */
    sp_bandwidth_result *result;
};

void sp_bandwidth_result_destroy(sp_bandwidth_result *r) {
    if (!r)
        return;
    for (size_t i = 0; i < r->n_links; i++)
        sp_free((char *)r->links[i].label);
    sp_free(r->links);
    sp_free(r->timing);
    sp_free(r->note);
    sp_free(r->json);
    sp_free(r);
}

size_t sp_bandwidth_result_get_link_count(const sp_bandwidth_result *r) {
    return r ? r->n_links : 0;
}

const sp_link_result *sp_bandwidth_result_get_link(const sp_bandwidth_result *r, size_t i) {
    return r && i < r->n_links ? &r->links[i] : NULL;
}

const char *sp_bandwidth_result_get_timing(const sp_bandwidth_result *r) {
    return r && r->timing ? r->timing : "";
}

const char *sp_bandwidth_result_get_note(const sp_bandwidth_result *r) {
    return r && r->note ? r->note : "";
}

const char *sp_bandwidth_result_get_json(const sp_bandwidth_result *r) {
    return r && r->json ? r->json : "";
}

/* keep series s's fit in the result */
static bool keep_fit(sp_bandwidth_result *r, const char *label, const sp_link_fit *fit) {
    if (r->n_links == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 8;
        sp_link_result *p = sp_realloc(r->links, cap * sizeof *p);
        if (!p)
            return false;
        r->links = p;
        r->cap = cap;
    }
    char *copy = sp_strdup(label);
    if (!copy)
        return false;
    r->links[r->n_links++] = (sp_link_result){copy, *fit};
    return true;
}

sp_status sp_links_doc_begin(sp_ctx *ctx, size_t n_devices, struct sp_links_doc **out) {
    *out = NULL;
    struct sp_links_doc *d = sp_calloc(1, sizeof *d);
    if (!d)
        return sp_oom(ctx, "measuring links");
    d->ctx = ctx;
    d->n = n_devices;
    d->bw = sp_calloc(n_devices * n_devices + 1, sizeof *d->bw);
    d->lat = sp_calloc(n_devices * n_devices + 1, sizeof *d->lat);
    d->m = cJSON_CreateObject();
    d->result = sp_calloc(1, sizeof *d->result);
    if (!d->bw || !d->lat || !d->m || !d->result ||
        !(d->series = cJSON_AddArrayToObject(d->m, "pairs"))) {
        sp_links_doc_abort(d);
        return sp_oom(ctx, "measuring links");
    }
    *out = d;
    return SP_OK;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double quantile(const double *sorted, unsigned n, double q) {
    double pos = q * (n - 1);
    unsigned i = (unsigned)pos;
    return i + 1 < n ? sorted[i] + (pos - i) * (sorted[i + 1] - sorted[i]) : sorted[n - 1];
}

#define MAX_SERIES_SIZES 64

sp_status sp_links_doc_add(struct sp_links_doc *d, const struct sp_link_series *s,
                           sp_link_fit *fit_out) {
    if (s->n_sizes > MAX_SERIES_SIZES || s->trials < 1)
        return sp_fail(d->ctx, SP_ERR_INVALID_ARG, "links: at most %d sizes and 1 trial or more",
                       MAX_SERIES_SIZES);
    double med[MAX_SERIES_SIZES];
    cJSON *pj = cJSON_CreateObject(), *samples = NULL, *fj = NULL;
    if (!pj || !cJSON_AddItemToArray(d->series, pj)) {
        cJSON_Delete(pj);
        return sp_oom(d->ctx, "measuring links");
    }
    bool ok = cJSON_AddStringToObject(pj, "label", s->label) &&
              (s->from < 0 || (cJSON_AddNumberToObject(pj, "from", s->from) &&
                               cJSON_AddNumberToObject(pj, "to", s->to))) &&
              (samples = cJSON_AddArrayToObject(pj, "samples"));
    for (size_t k = 0; ok && k < s->n_sizes; k++) {
        double *v = s->ms + k * s->trials;
        qsort(v, s->trials, sizeof *v, cmp_double);
        med[k] = quantile(v, s->trials, 0.5);
        cJSON *sj = cJSON_CreateObject();
        ok = sj && cJSON_AddItemToArray(samples, sj) &&
             cJSON_AddNumberToObject(sj, "bytes", (double)s->sizes[k]) &&
             cJSON_AddNumberToObject(sj, "median_ms", med[k]) &&
             cJSON_AddNumberToObject(sj, "p10_ms", quantile(v, s->trials, 0.1)) &&
             cJSON_AddNumberToObject(sj, "p90_ms", quantile(v, s->trials, 0.9)) &&
             (!s->check_ms || cJSON_AddNumberToObject(sj, s->check_name, s->check_ms[k]));
    }
    if (!ok)
        return sp_oom(d->ctx, "measuring links");
    sp_link_fit fit;
    sp_status st = sp_fit_alpha_beta(d->ctx, s->sizes, med, s->n_sizes, &fit);
    if (st != SP_OK)
        return st;
    if (fit.bandwidth_GBps < SP_LINKS_MIN_BANDWIDTH_GBPS ||
        fit.latency_us > SP_LINKS_MAX_LATENCY_US)
        return sp_fail(d->ctx, SP_ERR_LIMIT,
                       "%s: the fitted link (%.4g GB/s, %.4g us) is outside what a links file "
                       "holds (at least %g GB/s, at most %g us): the timings are unusable",
                       s->label, fit.bandwidth_GBps, fit.latency_us, SP_LINKS_MIN_BANDWIDTH_GBPS,
                       SP_LINKS_MAX_LATENCY_US);
    if (s->from >= 0 && (size_t)s->from < d->n && s->to >= 0 && (size_t)s->to < d->n) {
        d->bw[(size_t)s->from * d->n + (size_t)s->to] = fit.bandwidth_GBps;
        d->lat[(size_t)s->from * d->n + (size_t)s->to] = fit.latency_us;
    }
    if (!(fj = cJSON_AddObjectToObject(pj, "fit")) ||
        !cJSON_AddNumberToObject(fj, "latency_us", fit.latency_us) ||
        !cJSON_AddNumberToObject(fj, "bandwidth_GBps", fit.bandwidth_GBps) ||
        !cJSON_AddNumberToObject(fj, "r2", fit.r2) ||
        !cJSON_AddNumberToObject(fj, "max_rel_residual", fit.max_rel_residual) ||
        !cJSON_AddNumberToObject(fj, "peak_GBps", fit.peak_GBps))
        return sp_oom(d->ctx, "measuring links");
    if (!keep_fit(d->result, s->label, &fit))
        return sp_oom(d->ctx, "measuring links");
    if (fit_out)
        *fit_out = fit;
    return SP_OK;
}

sp_status sp_links_doc_say(struct sp_links_doc *d, const char *key, const char *text) {
    char **slot = strcmp(key, "timing") == 0 ? &d->result->timing : &d->result->note;
    char *copy = sp_strdup(text);
    if (!copy || !cJSON_AddStringToObject(d->m, key, text)) {
        sp_free(copy);
        return sp_oom(d->ctx, "measuring links");
    }
    sp_free(*slot);
    *slot = copy;
    return SP_OK;
}

cJSON *sp_links_doc_measurement(struct sp_links_doc *d) {
    return d->m;
}

sp_status sp_links_doc_describe(struct sp_links_doc *d, const char *collector, const char *method,
                                unsigned trials, unsigned warmup) {
    char when[32];
    time_t now = time(NULL);
    struct tm tmv;
    if (!gmtime_r(&now, &tmv) || !strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tmv))
        snprintf(when, sizeof when, "unknown");
    bool ok = cJSON_AddStringToObject(d->m, "collector", collector) &&
              cJSON_AddStringToObject(d->m, "method", method) &&
              cJSON_AddStringToObject(d->m, "created", when) &&
              cJSON_AddNumberToObject(d->m, "trials", trials) &&
              cJSON_AddNumberToObject(d->m, "warmup", warmup);
    return ok ? SP_OK : sp_oom(d->ctx, "measuring links");
}

sp_status sp_links_doc_finish(struct sp_links_doc *d, const char *const *names,
                              sp_bandwidth_result **out) {
    *out = NULL;
    sp_status st = sp_links_to_json(d->ctx, d->n, names, d->bw, d->lat, d->m, &d->result->json);
    d->m = NULL; /* taken over, written or freed */
    if (st == SP_OK) {
        *out = d->result;
        d->result = NULL;
    }
    sp_links_doc_abort(d);
    return st;
}

void sp_links_doc_abort(struct sp_links_doc *d) {
    if (!d)
        return;
    cJSON_Delete(d->m);
    sp_bandwidth_result_destroy(d->result);
    sp_free(d->bw);
    sp_free(d->lat);
    sp_free(d);
}
