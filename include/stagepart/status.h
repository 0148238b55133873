/* stagepart/status.h: the status codes every public function returns.
 *
 * One table, SP_STATUS_MAP, generates the enum, sp_status_name() and sp_strerror(), so a code
 * and its message can never drift apart. SP_OK is 0; every other code is an error. The detail
 * of the last error (file, JSON path, what was expected) is in the context: sp_ctx_get_errmsg(). */
#ifndef STAGEPART_STATUS_H
#define STAGEPART_STATUS_H

#define SP_STATUS_MAP(XX)                                                                          \
    XX(SP_OK, "ok")                                                                                \
    XX(SP_ERR_INVALID_ARG, "invalid argument")                                                     \
    XX(SP_ERR_NOMEM, "out of memory")                                                              \
    XX(SP_ERR_IO, "input/output error")                                                            \
    XX(SP_ERR_PARSE, "malformed JSON")                                                             \
    XX(SP_ERR_SCHEMA, "invalid document")                                                          \
    XX(SP_ERR_LIMIT, "input exceeds a limit")                                                      \
    XX(SP_ERR_INFEASIBLE, "no plan satisfies the constraints")                                     \
    XX(SP_ERR_SOLVER, "solver failed")                                                             \
    XX(SP_ERR_NO_DEVICE, "device not available")                                                   \
    XX(SP_ERR_CUDA, "CUDA error")                                                                  \
    XX(SP_ERR_CUPTI, "CUPTI error")                                                                \
    XX(SP_ERR_UNSUPPORTED, "feature not compiled in")                                              \
    XX(SP_ERR_INTERRUPTED, "interrupted")                                                          \
    XX(SP_ERR_INTERNAL, "internal error")                                                          \
    XX(SP_ERR_PROGRAM, "the profiled program failed")

typedef enum sp_status {
#define SP_STATUS_ENUM_(name, msg) name,
    SP_STATUS_MAP(SP_STATUS_ENUM_)
#undef SP_STATUS_ENUM_
        SP_STATUS_COUNT_
} sp_status;

#endif
