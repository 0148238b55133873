/* profiler/cuda/collector.h: the live collector's state, shared by the CUDA side (collector.c:
 * InitializeInjection, CUPTI buffers, exit) and the NVTX side (nvtx_hooks.c).
 *
 * Configuration comes from the environment `stagepart profile --attach` sets:
 *   STAGEPART_INJECT_DIR       where each process writes events-<pid>.splog (required)
 *   STAGEPART_INJECT_MODE      "trace" (default) or "idle": hooks installed, nothing recorded
 *                              (for measuring the collector's own overhead)
 *   STAGEPART_INJECT_STEPS     stop recording after this many step ranges past the warm-up
 *   STAGEPART_INJECT_WARMUP    warm-up steps (recorded; the attribution skips them)
 *   STAGEPART_INJECT_STEP_PATTERN  the step ranges' POSIX extended regex
 *   STAGEPART_INJECT_API       "launches" (default): API records of the calls that launch work,
 *                              copy or set memory only; "all": of every runtime and driver call
 * The collector never stops the program: any failure is reported once on stderr and turns
 * recording off for the process. */
#ifndef SP_PROFILER_COLLECTOR_H
#define SP_PROFILER_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "cupti_ops.h"
#include "event_log.h"

/* Replace the CUPTI table (tests); before the first NVTX call or InitializeInjection. */
void sp_collector_set_ops(const struct sp_cupti_ops *ops);
const struct sp_cupti_ops *sp_collector_ops(void);

/* The log, opened on first use (NULL when recording is off). */
struct sp_evlog *sp_collector_log(void);
/* Record anything at all (false: idle mode, off after a failure, or in a forked child). */
bool sp_collector_recording(void);
/* CUPTI is set up: ranges may push external correlation ids. */
bool sp_collector_cupti_ready(void);
/* The end of the traced window (INT64_MAX: none yet). */
int64_t sp_collector_stop_ns(void);
/* Now, on CUPTI's clock. */
int64_t sp_collector_now_ns(void);
/* Whether a range named name_id (text: its name, or NULL for a registered string, whose text the
 * log holds) is a training step. */
bool sp_collector_is_step(uint32_t name_id, const char *text);
/* A step range closed at end_ns: the log is flushed (a program that dies loses at most the step
 * in progress); after warm-up + steps of them, the window closes: ranges stop talking to CUPTI,
 * and CUPTI detaches at the next API exit (or, where another tool holds the one subscription,
 * its activity kinds are disabled). */
void sp_collector_step_closed(int64_t end_ns);
bool sp_collector_window_closed(void);
/* cuptiFinalize ran: CUPTI calls are no longer made (a range pushed before pops no id) */
bool sp_collector_detached(void);
/* Report a failure once and turn recording off. */
void sp_collector_fail(const char *where, CUptiResult result);
void sp_collector_failf(const char *message);

/* InitializeInjection's body: CUPTI attributes, callbacks, kinds. Always returns 1. */
int sp_collector_init_cupti(void);
/* Flush CUPTI and close the log (at exit; also for tests). */
void sp_collector_finish(void);

#endif
