/* profiler/attribute_ranks.c: whether the processes of a trace (one per rank, several Kineto
 * files, or the processes of one Nsight report) can be merged into one profile
 * (attribute_impl.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute_impl.h"
#include "modules.h"

static void process_label(const struct sp_trace *t, uint32_t p, char *buf, size_t size) {
    if (p < t->n_process_files && t->process_files[p])
        snprintf(buf, size, "%s", t->process_files[p]);
    else
        snprintf(buf, size, "process %u", p);
}

/* each process's layers in the order of their first forward range: seq[off[p] .. off[p+1]) */
static sp_status sequences(sp_ctx *ctx, const struct sp_trace *t, const int32_t *fwd_layer,
                           size_t n_layers, uint32_t n_proc, uint32_t **seq, size_t **off) {
    size_t n = 0;
    for (size_t i = 0; i < t->n_ranges; i++)
        n += fwd_layer[i] >= 0;
    struct time_key *k = sp_mallocarray(n ? n : 1, sizeof *k);
    uint32_t *last = sp_mallocarray(n_layers ? n_layers : 1, sizeof *last);
    *seq = sp_mallocarray(n ? n : 1, sizeof **seq);
    *off = sp_calloc((size_t)n_proc + 1, sizeof **off);
    if (!k || !last || !*seq || !*off) {
        sp_free(k);
        sp_free(last);
        return sp_oom(ctx, "merging the ranks");
    }
    n = 0;
    for (size_t i = 0; i < t->n_ranges; i++)
        if (fwd_layer[i] >= 0) /* the key's tid field carries the process */
            k[n++] = (struct time_key){sp_trace_process_of(t, t->ranges[i].tid),
                                       t->ranges[i].start_ns, t->ranges[i].end_ns, i};
    qsort(k, n, sizeof *k, sp_time_key_cmp);
    for (size_t l = 0; l < n_layers; l++)
        last[l] = UINT32_MAX;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t l = (uint32_t)fwd_layer[k[i].idx], p = k[i].tid;
        if (last[l] == p)
            continue;
        last[l] = p;
        (*seq)[m++] = l;
        (*off)[p + 1]++;
    }
    for (uint32_t p = 0; p < n_proc; p++)
        (*off)[p + 1] += (*off)[p];
    sp_free(k);
    sp_free(last);
    return SP_OK;
}

/* why processes p and q (sharing a layer) cannot be merged: their first difference */
static sp_status differ(sp_ctx *ctx, const struct sp_trace *t, const struct sp_trace *names,
                        const uint32_t *seq, const size_t *off, uint32_t q, uint32_t p) {
    size_t nq = off[q + 1] - off[q], np = off[p + 1] - off[p], i = 0;
    while (i < nq && i < np && seq[off[q] + i] == seq[off[p] + i])
        i++;
    if (i == nq && i == np)
        return SP_OK;
    char a[256], b[256];
    process_label(t, q, a, sizeof a);
    process_label(t, p, b, sizeof b);
    const char *la = i < nq ? names->strings[seq[off[q] + i]] : "(no more layers)";
    const char *lb = i < np ? names->strings[seq[off[p] + i]] : "(no more layers)";
    return sp_fail(ctx, SP_ERR_SCHEMA,
                   "%s and %s share layers but not their order: layer %zu is '%s' in the first, "
                   "'%s' in the second. Traces merge when they are ranks of one job: the same "
                   "layers in the same order (data or tensor parallel), or layers of their own "
                   "(pipeline ranks). Traces of two models, or pipeline ranks traced with no "
                   "annotation (each numbers its modules from 0, so their names collide), do not: "
                   "import each on its own",
                   a, b, i, la, lb);
}

sp_status sp_attrib_check_processes(sp_ctx *ctx, const struct sp_trace *t, const int32_t *fwd_layer,
                                    const struct sp_trace *names, bool modules) {
    uint32_t n_proc = 0;
    for (size_t i = 0; i < t->n_ranges; i++)
        if (fwd_layer[i] >= 0) {
            uint32_t p = sp_trace_process_of(t, t->ranges[i].tid);
            n_proc = p + 1 > n_proc ? p + 1 : n_proc;
        }
    if (n_proc < 2)
        return SP_OK;
    size_t L = names->n_strings, *off = NULL;
    uint32_t *seq = NULL, *owner = sp_mallocarray(L ? L : 1, sizeof *owner);
    sp_status st = owner ? sequences(ctx, t, fwd_layer, L, n_proc, &seq, &off)
                         : sp_oom(ctx, "merging the ranks");
    for (size_t l = 0; st == SP_OK && l < L; l++)
        owner[l] = UINT32_MAX;
    uint32_t first = UINT32_MAX; /* the first process with layers */
    for (uint32_t p = 0; st == SP_OK && p < n_proc; p++) {
        if (off[p + 1] == off[p])
            continue;
        uint32_t shared = UINT32_MAX;
        for (size_t i = off[p]; i < off[p + 1] && shared == UINT32_MAX; i++)
            shared = owner[seq[i]];
        if (shared != UINT32_MAX) {
            st = differ(ctx, t, names, seq, off, shared, p);
            continue;
        }
        size_t la = 0, lb = 0; /* layers of their own: pipeline ranks, of one model */
        const char *ca =
            first == UINT32_MAX ? NULL : sp_module_class(names->strings[seq[off[first]]], &la);
        const char *cb = sp_module_class(names->strings[seq[off[p]]], &lb);
        if (modules && ca && (la != lb || strncmp(ca, cb, la) != 0)) {
            char a[256], b[256];
            process_label(t, first, a, sizeof a);
            process_label(t, p, b, sizeof b);
            st = sp_fail(ctx, SP_ERR_SCHEMA,
                         "%s and %s are traces of two models (their first modules are '%s' and "
                         "'%s'): import each on its own",
                         a, b, names->strings[seq[off[first]]], names->strings[seq[off[p]]]);
        }
        for (size_t i = off[p]; i < off[p + 1]; i++)
            owner[seq[i]] = p;
        first = first == UINT32_MAX ? p : first;
    }
    sp_free(owner);
    sp_free(seq);
    sp_free(off);
    return st;
}
