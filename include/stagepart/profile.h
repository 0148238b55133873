/* stagepart/profile.h: profiles, the per-layer times and bytes everything starts from (formats/).
 */
#ifndef STAGEPART_PROFILE_H
#define STAGEPART_PROFILE_H

#include "stagepart/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Profiles (format "stagepart-profile", version 1; docs/formats.md)
 * ------------------------------------------------------------------------------------------- */
typedef struct sp_profile sp_profile;

/* One layer of the chain, in execution order. */
typedef struct sp_layer {
    const char *name;          /* unique within the profile (the first member: the reader's
                                * uniqueness check relies on it) */
    const char *kind;          /* "" when absent (embedding, transformer, head, loss, conv...) */
    double fwd_ms;             /* forward time per micro-batch, >= 0 */
    double bwd_ms;             /* backward time per micro-batch (input + weight grads), >= 0 */
    double wgrad_ms;           /* weight-gradient part of bwd_ms; -1 when absent */
    double recompute_ms;       /* time to recompute the forward for backward; -1 when absent */
    uint64_t activation_bytes; /* output sent to the next layer, per micro-batch */
    uint64_t saved_bytes;      /* kept for backward, per micro-batch in flight */
    uint64_t param_bytes;      /* weights */
    uint64_t memory_bytes;     /* resident regardless of micro-batches; defaults to param_bytes */
    bool cut_after;            /* false: no stage boundary may follow this layer */
} sp_layer;

/* Limits enforced when reading (exceeding one is SP_ERR_LIMIT with a message naming it). */
#define SP_PROFILE_MAX_LAYERS   10000000u          /* 10 million layers */
#define SP_PROFILE_MAX_LAYER_MS 1.0e9              /* one layer's fwd or bwd: about 11.6 days */
#define SP_NAME_MAX_BYTES       4096u              /* a layer name or kind */
#define SP_MAX_EXACT_INTEGER    9007199254740992.0 /* 2^53: byte counts are exact below it */
/* Sums over a profile's layers must stay below these, so that whatever the partitioner adds up
 * or scales stays exact and what a plan records reads back: each byte field's sum at most 2^53
 * (a stage's bytes are exact JSON integers), fwd_ms + bwd_ms + recompute_ms at most 2^62 ns
 * (about 53 days' work; the partitioner counts integer nanoseconds in 64 bits). */
#define SP_PROFILE_MAX_TOTAL_BYTES SP_MAX_EXACT_INTEGER
#define SP_PROFILE_MAX_TOTAL_MS    4611686018427.387904 /* 2^62 ns */

/* sp_profile_load: read and validate a profile file. sp_profile_parse: the same from a buffer;
 * `name` is used in messages in place of the file name. Every problem found is reported (up
 * to 50, then a count). Returns SP_ERR_IO (cannot read), SP_ERR_PARSE (not JSON; message has
 * line:column), SP_ERR_SCHEMA (valid JSON, wrong content), SP_ERR_LIMIT, SP_ERR_NOMEM.
 * Unknown fields are ignored. */
SP_API sp_status sp_profile_load(sp_ctx *ctx, const char *path, sp_profile **out);
SP_API sp_status sp_profile_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                                  sp_profile **out);
SP_API void sp_profile_destroy(sp_profile *profile);

SP_API size_t sp_profile_get_layer_count(const sp_profile *profile);
/* sp_profile_get_layer: layer i (0-based), or NULL when i is out of range. Borrowed. */
SP_API const sp_layer *sp_profile_get_layer(const sp_profile *profile, size_t i);
SP_API const char *sp_profile_get_model(const sp_profile *profile);
/* sp_profile_get_source: the profile's "source" text, "" when absent. */
SP_API const char *sp_profile_get_source(const sp_profile *profile);
/* sp_profile_get_micro_batch_size: the profile's micro_batch_size (samples per micro-batch);
 * 0 when the profile does not say (absent or null). */
SP_API uint64_t sp_profile_get_micro_batch_size(const sp_profile *profile);
/* sp_profile_get_measured_sms: the SMs of a GPU the profile's times were measured on
 * (measurement.sms, written by `profile MODEL --backend cuda --sms N`); 0: a whole GPU, or not
 * recorded. At most SP_MAX_SMS. */
#define SP_MAX_SMS 65536u
SP_API uint32_t sp_profile_get_measured_sms(const sp_profile *profile);
/* sp_profile_get_wgrad_estimated: the profile says its layers' wgrad_ms are estimated, not
 * measured ("wgrad_estimated": true; imports write bwd_ms / 2, docs/profiling.md). */
SP_API bool sp_profile_get_wgrad_estimated(const sp_profile *profile);
/* sp_profile_get_sha256: lowercase hex SHA-256 of the bytes the profile was read from. */
SP_API const char *sp_profile_get_sha256(const sp_profile *profile);

#ifdef __cplusplus
}
#endif
#endif
