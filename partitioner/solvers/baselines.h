/* partitioner/solvers/baselines.h: baseline splits (uniform, parameters) as layer-index boundaries
 * bounds[stages+1]. SP_ERR_INFEASIBLE when the allowed cuts cannot make that many stages. */
#ifndef SP_PARTITIONER_BASELINES_H
#define SP_PARTITIONER_BASELINES_H

#include "internal.h"

struct sp_chain;

/* the chain gives the allowed positions (any stage model) */
sp_status sp_uniform_bounds(sp_ctx *ctx, const sp_profile *profile, const struct sp_chain *c,
                            uint32_t stages, size_t *bounds);
/* over the chain's positions, restaged with param_bytes as the weight */
sp_status sp_parameters_bounds(sp_ctx *ctx, const struct sp_chain *c, uint32_t stages,
                               size_t *bounds);

#endif
