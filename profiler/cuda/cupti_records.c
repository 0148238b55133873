/* profiler/cuda/cupti_records.c: CUPTI 13 activity records into event-log records. Only the
 * record types of the kinds the collector enables are read; their layouts are CUPTI 13.0's
 * (Kernel10, Memcpy6, MemcpyPtoP4, Memset4, API, ExternalCorrelation, Device5). */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cupti_records.h"
#include "trace.h"

static const char *copy_name(uint8_t copy_kind) {
    switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
        return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
        return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
        return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
        return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
        return "memcpy PtoP";
    default:
        return "memcpy";
    }
}

static bool is_graph_launch(CUpti_ActivityKind kind, CUpti_CallbackId cbid) {
    if (kind == CUPTI_ACTIVITY_KIND_RUNTIME)
        return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
               cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
    return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

/* Whether an API call can make GPU work (a launch, copy or memset), by its name in CUPTI's table;
 * only those are written, so getters such as cudaGetDevice, which PyTorch calls constantly, cost
 * no log space. Answers are cached per callback id. Unknown names are kept. */
static bool makes_gpu_work(const struct sp_cupti_ops *ops, CUpti_ActivityKind kind, uint32_t cbid) {
    static const char *const runtime[] = {"cudaLaunch", "__cudaLaunch", "cudaGraphLaunch",
                                          "cudaMemcpy", "cudaMemset",   NULL};
    static const char *const driver[] = {"cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset", NULL};
    static _Atomic uint8_t cache[2][1024]; /* 0 unknown, 1 yes, 2 no */
    if (kind == CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API)
        return true;
    bool rt = kind == CUPTI_ACTIVITY_KIND_RUNTIME;
    uint8_t known = cbid < 1024 ? atomic_load(&cache[rt][cbid]) : 0;
    if (known)
        return known == 1;
    const char *name = NULL;
    bool yes = true;
    if (ops->get_callback_name(rt ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, cbid,
                               &name) == CUPTI_SUCCESS &&
        name) {
        yes = false;
        for (const char *const *p = rt ? runtime : driver; *p && !yes; p++)
            yes = strncmp(name, *p, strlen(*p)) == 0;
    }
    if (cbid < 1024)
        atomic_store(&cache[rt][cbid], yes ? 1 : 2);
    return yes;
}

static void activity(struct sp_evlog *log, uint8_t kind, uint64_t start, uint64_t end,
                     uint32_t corr, uint64_t bytes, uint32_t device, uint32_t stream,
                     const char *name, int64_t stop_ns, struct sp_record_counts *counts) {
    if ((int64_t)start >= stop_ns) {
        counts->after_window++;
        return;
    }
    uint32_t id = 0;
    if (!sp_evlog_name(log, name, &id))
        return;
    sp_evlog_activity(log, kind, (int64_t)start, (int64_t)end, corr, bytes, device, stream, id);
}

CUptiResult sp_cupti_records_write(const struct sp_cupti_ops *ops, struct sp_evlog *log,
                                   uint8_t *buffer, size_t valid_bytes, int64_t stop_ns,
                                   struct sp_record_counts *counts) {
    CUpti_Activity *rec = NULL;
    CUptiResult r;
    /* CUPTI writes a call's external-correlation record right before its API record: the two
     * are folded into one API record; an unpaired one is written on its own */
    bool have_x = false;
    uint32_t x_corr = 0;
    uint64_t x_range = 0;
    while ((r = ops->get_next_record(buffer, valid_bytes, &rec)) == CUPTI_SUCCESS) {
        bool api = rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME ||
                   rec->kind == CUPTI_ACTIVITY_KIND_DRIVER ||
                   rec->kind == CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API;
        if (have_x && (!api || ((const CUpti_ActivityAPI *)rec)->correlationId != x_corr)) {
            sp_evlog_extcorr(log, x_corr, x_range);
            have_x = false;
        }
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            counts->kernels++;
            activity(log, SP_ACTIVITY_KERNEL, k->start, k->end, k->correlationId, 0, k->deviceId,
                     k->streamId, k->name ? k->name : "kernel", stop_ns, counts);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
            counts->copies++;
            activity(log, SP_ACTIVITY_MEMCPY, m->start, m->end, m->correlationId, m->bytes,
                     m->deviceId, m->streamId, copy_name(m->copyKind), stop_ns, counts);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY2: {
            const CUpti_ActivityMemcpyPtoP4 *m = (const CUpti_ActivityMemcpyPtoP4 *)rec;
            char name[64];
            snprintf(name, sizeof name, "memcpy PtoP %u->%u", m->srcDeviceId, m->dstDeviceId);
            counts->copies++;
            activity(log, SP_ACTIVITY_MEMCPY, m->start, m->end, m->correlationId, m->bytes,
                     m->deviceId, m->streamId, name, stop_ns, counts);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
            counts->memsets++;
            activity(log, SP_ACTIVITY_MEMSET, m->start, m->end, m->correlationId, m->bytes,
                     m->deviceId, m->streamId, "memset", stop_ns, counts);
            break;
        }
        case CUPTI_ACTIVITY_KIND_RUNTIME:
        case CUPTI_ACTIVITY_KIND_DRIVER:
        case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: {
            const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)rec;
            counts->apis++;
            if (!makes_gpu_work(ops, rec->kind, a->cbid)) {
                counts->apis_skipped++;
                have_x = false;
                break;
            }
            if (rec->kind != CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API &&
                is_graph_launch(rec->kind, a->cbid))
                counts->graph_launches++;
            sp_evlog_api(log, (int64_t)a->start, a->correlationId, a->threadId,
                         have_x ? x_range : 0);
            have_x = false;
            break;
        }
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
            const CUpti_ActivityExternalCorrelation *x =
                (const CUpti_ActivityExternalCorrelation *)rec;
            counts->extcorrs++;
            if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2) {
                have_x = true;
                x_corr = x->correlationId;
                x_range = x->externalId;
            }
            break;
        }
        case CUPTI_ACTIVITY_KIND_DEVICE: {
            const CUpti_ActivityDevice5 *d = (const CUpti_ActivityDevice5 *)rec;
            counts->devices++;
            sp_evlog_device(log, d->id, d->name ? d->name : "GPU");
            break;
        }
        default:
            counts->other++;
            break;
        }
    }
    if (have_x)
        sp_evlog_extcorr(log, x_corr, x_range);
    return r;
}
