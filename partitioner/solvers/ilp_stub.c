/* partitioner/solvers/ilp_stub.c: --solver ilp in a build without GLPK (libglpk-dev). */
#include "ilp.h"

sp_status sp_ilp_solve(sp_ctx *ctx, const struct sp_ilp_input *in, struct sp_ilp_result *out) {
    (void)in;
    (void)out;
    return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                   "this build has no GLPK: install libglpk-dev and configure again to use "
                   "--solver ilp");
}
