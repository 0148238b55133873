/* partitioner/solver_table.h: the solver table (solver_table.c). Each solver is one descriptor:
 * what it is (sp_solver_info, public), the checks of the options its flags cannot say, and its
 * solve function. sp_partition (partition.c) asks sp_solver_pick for the one that runs. */
#ifndef SP_PARTITIONER_SOLVER_TABLE_H
#define SP_PARTITIONER_SOLVER_TABLE_H

#include "partition_impl.h"

struct sp_solver_desc {
    sp_solver_info info;
    /* Why these options are no problem for it, beyond what info's flags say (NULL: nothing
     * more); SP_OK, or the status with the context's message naming the option. */
    sp_status (*check)(sp_ctx *ctx, const sp_partition_opts *o, const struct sp_stage_devices *d);
    /* the message when the objective asked for is none of info.objectives (NULL: the table
     * names the solvers that take it) */
    const char *objective_refusal;
    sp_solver_fn solve;
};

/* The solver for resolved options and their devices: the first descriptor asked for by
 * o->solver that partitions the layout, places devices exactly when o->placement asks, and
 * takes the objective; then its flags and its check against the options. SP_OK with *out, or
 * the status (SP_ERR_INVALID_ARG, SP_ERR_UNSUPPORTED) with a message naming the option and the
 * solvers that would take it. A baseline asked for an objective gets a warning that it is
 * ignored. */
sp_status sp_solver_pick(sp_ctx *ctx, const sp_partition_opts *o, const struct sp_stage_devices *d,
                         const struct sp_solver_desc **out);

#endif
