/* profiler/links_json.h: the "stagepart-links" document both bandwidth probes write (cpu:
 * profiler/bandwidth_cpu.c, cuda: profiler/cuda/bandwidth_cuda.c): the fitted latency and
 * bandwidth matrices the partitioner reads, and under "measurement" every series of samples with
 * its alpha-beta fit, so a reader can see what each number came from. */
#ifndef SP_PROFILER_LINKS_JSON_H
#define SP_PROFILER_LINKS_JSON_H

#include <cjson/cJSON.h>

#include "internal.h"

/* One series: every size copied `trials` times from one place to another. */
struct sp_link_series {
    const char *label;     /* "gpu0->gpu1", "host->gpu0", "cpu0->cpu1", ... */
    int from, to;          /* matrix indices; -1: a series outside the matrix (host copies, a
                            * device to itself), kept in measurement.series only */
    const uint64_t *sizes; /* n_sizes message sizes, bytes */
    size_t n_sizes;
    double *ms; /* ms[k * trials + t]; each size's trials are sorted in place */
    unsigned trials;
    const char *check_name; /* an independent timing of the same copies (e.g. CUDA events) */
    const double *check_ms; /* its median per size; NULL: none */
};

struct sp_links_doc;

sp_status sp_links_doc_begin(sp_ctx *ctx, size_t n_devices, struct sp_links_doc **out);
/* Add a series: medians per size (with p10, p90), the fit (into *fit when not NULL), and the
 * matrix entry when it is a link between two devices. */
sp_status sp_links_doc_add(struct sp_links_doc *d, const struct sp_link_series *s,
                           sp_link_fit *fit);
/* A line of the measurement the result carries too: "timing" (how the copies were timed) or
 * "note" (what could not be measured). */
sp_status sp_links_doc_say(struct sp_links_doc *d, const char *key, const char *text);
/* The measurement object, for the probe's own fields. */
cJSON *sp_links_doc_measurement(struct sp_links_doc *d);
/* What every probe records there: collector, method, created (now), trials, warmup. */
sp_status sp_links_doc_describe(struct sp_links_doc *d, const char *collector, const char *method,
                                unsigned trials, unsigned warmup);
/* The result: every series' fit and the document with these device names (n_devices of them).
 * Frees d whatever it returns; sp_links_doc_abort frees one that is not finished. */
sp_status sp_links_doc_finish(struct sp_links_doc *d, const char *const *names,
                              sp_bandwidth_result **out);
void sp_links_doc_abort(struct sp_links_doc *d);

#endif
