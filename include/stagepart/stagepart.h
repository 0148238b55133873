/* stagepart/stagepart.h: the public API of libstagepart, and its reference manual.
 *
 * The data flows one way: a profile (per-layer times and bytes) is measured or loaded, a
 * partitioner turns it into a plan (contiguous pipeline stages), the plan is simulated or run,
 * then checked in CI or exported to a framework. This header includes one part per stage of that
 * flow, in its order, so the parts read as a manual:
 *   core.h       the library, the context, errors, atomic writes
 *   profile.h    profiles                          devices.h   devices and links
 *   models.h     the built-in models               profiler.h  links measured, traces imported
 *   partition.h  options and solvers               plan.h      the plan and its document
 *   simulate.h   schedules simulated               run.h       a plan run and measured
 *   export.h     the framework formats             check.h     the CI gate
 * The `stagepart` command-line tool uses only what this header declares.
 *
 * OWNERSHIP (the one rule set for the whole API)
 *   - Objects returned through `T **out` by *_create, *_load, *_parse and sp_partition belong
 *     to the caller and are freed by the matching *_destroy. *_destroy(NULL) is a no-op.
 *     On failure *out is set to NULL and nothing needs freeing.
 *   - Returned `const char *` and `const T *` are borrowed: valid while the object they came
 *     from lives, and never freed by the caller.
 *   - Returned `char *` buffers (sp_plan_to_json) are freed with sp_free(), never free().
 *   - Inputs are never taken over: the caller keeps what it passes in.
 *
 * ERRORS
 *   Every fallible function returns an sp_status (SP_OK = 0). The context records the detail
 *   of the last failure, readable with sp_ctx_get_errmsg() until the next call that takes that
 *   context. Input errors name the file, the JSON path and what was expected, e.g.
 *       model.json: layers[17].fwd_ms: expected a finite number >= 0, got "abc"
 *   and a document with several problems reports each of them, one per line. The library never
 *   exits, aborts or prints; it has no global mutable state except the allocator hooks.
 *
 * NAMES
 *   Every function is sp_<object>_<verb>: sp_plan_load, sp_plan_write, sp_plan_destroy. What
 *   reads a field of an object is sp_<object>_get_<field> (sp_plan_get_stage,
 *   sp_profile_get_layer_count), and returns a borrowed pointer or a value. Enums have
 *   sp_<enum>_name and sp_<enum>_from_name.
 *
 * THREADS
 *   A context, and the objects made with it, may be used by one thread at a time. Distinct
 *   contexts are independent. Profiles and plans are immutable once made and may be read from
 *   several threads at once.
 *
 * UNITS
 *   Times are milliseconds (double) in the API and in files. Internally the partitioner
 *   rounds each layer's time to integer nanoseconds so that comparisons and ties are exact
 *   (see docs/partitioning.md). Sizes are bytes (uint64_t), exact up to 2^53.
 */
#ifndef STAGEPART_STAGEPART_H
#define STAGEPART_STAGEPART_H

/* the parts in the order the data flows (not alphabetical) */
/* clang-format off */
#include "stagepart/core.h"
#include "stagepart/profile.h"
#include "stagepart/devices.h"
#include "stagepart/models.h"
#include "stagepart/profiler.h"
#include "stagepart/partition.h"
#include "stagepart/plan.h"
#include "stagepart/simulate.h"
#include "stagepart/run.h"
#include "stagepart/export.h"
#include "stagepart/check.h"
/* clang-format on */

#endif
