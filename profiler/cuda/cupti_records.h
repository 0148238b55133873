/* profiler/cuda/cupti_records.h: a completed CUPTI activity buffer into event-log records. */
#ifndef SP_PROFILER_CUPTI_RECORDS_H
#define SP_PROFILER_CUPTI_RECORDS_H

#include "cupti_ops.h"
#include "event_log.h"

struct sp_record_counts {
    uint64_t kernels, copies, memsets, apis, extcorrs, devices, other;
    uint64_t apis_skipped;   /* API calls that make no GPU work (cudaGetDevice, ...): not written */
    uint64_t graph_launches; /* cudaGraphLaunch / cuGraphLaunch calls seen */
    uint64_t after_window;   /* GPU records that started after the traced steps (not written) */
};

/* Walk the buffer with ops->get_next_record and write what attribution needs. GPU records that
 * start at or after stop_ns (INT64_MAX: no window) are counted, not written. Returns the result
 * that ended the walk: CUPTI_ERROR_MAX_LIMIT_REACHED when the buffer was read to its end. */
CUptiResult sp_cupti_records_write(const struct sp_cupti_ops *ops, struct sp_evlog *log,
                                   uint8_t *buffer, size_t valid_bytes, int64_t stop_ns,
                                   struct sp_record_counts *counts);

#endif
