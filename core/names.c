/* core/names.c: the one names table of every public enum: the name each value has in documents,
 * on the command line and in messages, and the value of a name. Each enum's list below is the
 * only place its names are written; designated initializers tie each name to its value, so the
 * order of an enum and its list cannot drift apart. The tables live in core/ because every room
 * above names these values (formats/ writes them, simulate/ and partitioner/ report them). */
#include <string.h>

#include "internal.h"

#define SP_SCHEDULE_NAMES(XX)                                                                      \
    XX(SP_SCHEDULE_GPIPE, "gpipe")                                                                 \
    XX(SP_SCHEDULE_1F1B, "1f1b")                                                                   \
    XX(SP_SCHEDULE_INTERLEAVED, "interleaved")                                                     \
    XX(SP_SCHEDULE_ZB_H1, "zb-h1")                                                                 \
    XX(SP_SCHEDULE_INTERLEAVED_ZB, "interleaved-zb")                                               \
    XX(SP_SCHEDULE_ZBV, "zbv")                                                                     \
    XX(SP_SCHEDULE_DUALPIPEV, "dualpipev")                                                         \
    XX(SP_SCHEDULE_PIPEDREAM, "pipedream")                                                         \
    XX(SP_SCHEDULE_2BW, "2bw")
#define SP_CHUNK_LAYOUT_NAMES(XX)                                                                  \
    XX(SP_CHUNKS_LOOP, "loop")                                                                     \
    XX(SP_CHUNKS_V, "v")
#define SP_SOLVER_NAMES(XX)                                                                        \
    XX(SP_SOLVER_DP, "dp")                                                                         \
    XX(SP_SOLVER_UNIFORM, "uniform")                                                               \
    XX(SP_SOLVER_PARAMETERS, "parameters")                                                         \
    XX(SP_SOLVER_GIVEN, "given")                                                                   \
    XX(SP_SOLVER_ILP, "ilp")
#define SP_GUARANTEE_NAMES(XX)                                                                     \
    XX(SP_GUARANTEE_NONE, "none")                                                                  \
    XX(SP_GUARANTEE_EXACT, "exact")                                                                \
    XX(SP_GUARANTEE_PROVEN, "proven")                                                              \
    XX(SP_GUARANTEE_BOUNDED, "bounded")                                                            \
    XX(SP_GUARANTEE_SEARCH, "search")
#define SP_OBJECTIVE_NAMES(XX)                                                                     \
    XX(SP_OBJECTIVE_BOTTLENECK, "bottleneck")                                                      \
    XX(SP_OBJECTIVE_VARIANCE, "variance")                                                          \
    XX(SP_OBJECTIVE_ITERATION, "iteration")                                                        \
    XX(SP_OBJECTIVE_RANGE, "range")                                                                \
    XX(SP_OBJECTIVE_DEVIATION, "deviation")
#define SP_COMM_NAMES(XX)                                                                          \
    XX(SP_COMM_OVERLAP, "overlap")                                                                 \
    XX(SP_COMM_BLOCKING, "blocking")
#define SP_PLACEMENT_NAMES(XX)                                                                     \
    XX(SP_PLACEMENT_ORDER, "order")                                                                \
    XX(SP_PLACEMENT_SEARCH, "search")
#define SP_EXPORT_FORMAT_NAMES(XX)                                                                 \
    XX(SP_EXPORT_MEGATRON, "megatron")                                                             \
    XX(SP_EXPORT_DEEPSPEED, "deepspeed")                                                           \
    XX(SP_EXPORT_TORCHGPIPE, "torchgpipe")                                                         \
    XX(SP_EXPORT_PIPPY, "pippy")                                                                   \
    XX(SP_EXPORT_TORCHTITAN, "torchtitan")                                                         \
    XX(SP_EXPORT_TORCH_SCHEDULE_CSV, "torch-schedule-csv")                                         \
    XX(SP_EXPORT_TORCH_STAGES, "torch-stages")
#define SP_FRAMEWORK_NAMES(XX)                                                                     \
    XX(SP_FRAMEWORK_ANY, "any")                                                                    \
    XX(SP_FRAMEWORK_MEGATRON, "megatron")
#define SP_REPLICA_COST_NAMES(XX)                                                                  \
    XX(SP_REPLICA_COST_RING, "ring")                                                               \
    XX(SP_REPLICA_COST_PIPEDREAM, "pipedream")
#define SP_TRANSPORT_NAMES(XX)                                                                     \
    XX(SP_TRANSPORT_THREADS, "threads")                                                            \
    XX(SP_TRANSPORT_MPI, "mpi")
#define SP_RUN_BACKEND_NAMES(XX)                                                                   \
    XX(SP_RUN_BACKEND_CPU, "cpu")                                                                  \
    XX(SP_RUN_BACKEND_CUDA, "cuda")
#define SP_RUN_FAULT_NAMES(XX)                                                                     \
    XX(SP_RUN_FAULT_NONE, "none")                                                                  \
    XX(SP_RUN_FAULT_FAIL, "fail")                                                                  \
    XX(SP_RUN_FAULT_HANG, "hang")

static const char *name_of(const char *const *names, size_t count, int value) {
    return value >= 0 && (size_t)value < count ? names[value] : NULL;
}

static int value_of(const char *const *names, size_t count, const char *name) {
    for (size_t i = 0; name && i < count; i++)
        if (names[i] && strcmp(name, names[i]) == 0)
            return (int)i;
    return -1;
}

#define SP_NAME_ENTRY_(value, name) [value] = name,

/* the table of one enum, and its two public functions */
#define SP_DEFINE_NAMES_(kind, type, LIST)                                                         \
    static const char *const kind##_names[] = {LIST(SP_NAME_ENTRY_)};                              \
    const char *sp_##kind##_name(type v) {                                                         \
        return name_of(kind##_names, SP_COUNT_OF(kind##_names), (int)v);                           \
    }                                                                                              \
    sp_status sp_##kind##_from_name(const char *name, type *out) {                                 \
        int v = value_of(kind##_names, SP_COUNT_OF(kind##_names), name);                           \
        if (v < 0 || !out)                                                                         \
            return SP_ERR_INVALID_ARG;                                                             \
        *out = (type)v;                                                                            \
        return SP_OK;                                                                              \
    }

SP_DEFINE_NAMES_(schedule, sp_schedule, SP_SCHEDULE_NAMES)
SP_DEFINE_NAMES_(chunk_layout, sp_chunk_layout, SP_CHUNK_LAYOUT_NAMES)
SP_DEFINE_NAMES_(solver, sp_solver, SP_SOLVER_NAMES)
SP_DEFINE_NAMES_(guarantee, sp_guarantee, SP_GUARANTEE_NAMES)
SP_DEFINE_NAMES_(objective, sp_objective, SP_OBJECTIVE_NAMES)
SP_DEFINE_NAMES_(comm, sp_comm, SP_COMM_NAMES)
SP_DEFINE_NAMES_(placement, sp_placement, SP_PLACEMENT_NAMES)
SP_DEFINE_NAMES_(export_format, sp_export_format, SP_EXPORT_FORMAT_NAMES)
SP_DEFINE_NAMES_(framework, sp_framework, SP_FRAMEWORK_NAMES)
SP_DEFINE_NAMES_(replica_cost, sp_replica_cost, SP_REPLICA_COST_NAMES)
SP_DEFINE_NAMES_(transport, sp_transport, SP_TRANSPORT_NAMES)
SP_DEFINE_NAMES_(run_backend, sp_run_backend, SP_RUN_BACKEND_NAMES)
SP_DEFINE_NAMES_(run_fault, sp_run_fault, SP_RUN_FAULT_NAMES)

/* by table, for readers that take any enum (formats/plan_read.c) */
static const struct {
    const char *const *names;
    size_t count;
} tables[] = {
    [SP_NAMES_SCHEDULE] = {schedule_names, SP_COUNT_OF(schedule_names)},
    [SP_NAMES_CHUNK_LAYOUT] = {chunk_layout_names, SP_COUNT_OF(chunk_layout_names)},
    [SP_NAMES_SOLVER] = {solver_names, SP_COUNT_OF(solver_names)},
    [SP_NAMES_OBJECTIVE] = {objective_names, SP_COUNT_OF(objective_names)},
    [SP_NAMES_GUARANTEE] = {guarantee_names, SP_COUNT_OF(guarantee_names)},
    [SP_NAMES_COMM] = {comm_names, SP_COUNT_OF(comm_names)},
    [SP_NAMES_PLACEMENT] = {placement_names, SP_COUNT_OF(placement_names)},
    [SP_NAMES_EXPORT_FORMAT] = {export_format_names, SP_COUNT_OF(export_format_names)},
    [SP_NAMES_FRAMEWORK] = {framework_names, SP_COUNT_OF(framework_names)},
    [SP_NAMES_REPLICA_COST] = {replica_cost_names, SP_COUNT_OF(replica_cost_names)},
    [SP_NAMES_TRANSPORT] = {transport_names, SP_COUNT_OF(transport_names)},
    [SP_NAMES_RUN_BACKEND] = {run_backend_names, SP_COUNT_OF(run_backend_names)},
    [SP_NAMES_RUN_FAULT] = {run_fault_names, SP_COUNT_OF(run_fault_names)},
};

int sp_names_value(sp_names table, const char *name) {
    if ((size_t)table >= SP_COUNT_OF(tables))
        return -1;
    return value_of(tables[table].names, tables[table].count, name);
}
