/* models/model_info.c: the public view of a loaded model (names, sizes, byte counts). */
#include <string.h>

#include "model_impl.h"

sp_status sp_model_set_shape(sp_ctx *ctx, sp_model *m, uint32_t micro_batch_size,
                             uint32_t seq_len) {
    if (!ctx || !m)
        return ctx ? sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_model_set_shape: NULL argument")
                   : SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    uint32_t batch = micro_batch_size ? micro_batch_size : m->bound_batch;
    uint32_t seq = seq_len ? seq_len : m->bound_seq;
    if (m->tokens && seq > m->layers[0].ops[0].max_seq)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "%s: sequence length %u exceeds the embedding's max_seq_len (%u)", m->name,
                       seq, m->layers[0].ops[0].max_seq);
    if (!m->tokens && seq_len)
        sp_warn(ctx, "%s: an image model has no sequence length; --seq-len ignored", m->name);
    uint32_t old_batch = m->bound_batch, old_seq = m->bound_seq;
    sp_status st = sp_model_bind(ctx, m, batch, seq);
    if (st != SP_OK) { /* keep the model usable at the shape it had (which bound before) */
        sp_ctx *scratch = NULL;
        if (sp_ctx_create(&scratch) == SP_OK)
            sp_model_bind(scratch, m, old_batch, old_seq);
        sp_ctx_destroy(scratch);
    }
    return st;
}

void sp_model_get_info(const sp_model *m, sp_model_info *out) {
    memset(out, 0, sizeof *out);
    if (!m)
        return;
    out->name = m->name;
    out->source = m->source;
    out->preset = m->preset ? m->preset : "";
    out->dtype = m->dtype;
    out->micro_batch_size = m->bound_batch;
    out->seq_len = m->tokens ? m->bound_seq : 0;
    out->layers = m->n_layers;
    for (size_t i = 0; i < m->n_layers; i++)
        out->param_count += m->layers[i].param_elems;
}

bool sp_model_get_layer(const sp_model *m, size_t i, sp_model_layer_info *out) {
    if (!m || i >= m->n_layers)
        return false;
    const struct sp_model_layer *L = &m->layers[i];
    out->name = L->name;
    out->kind = L->kind;
    out->activation_bytes = (uint64_t)L->out_elems * sizeof(float);
    out->saved_bytes = (uint64_t)L->saved_elems * sizeof(float);
    out->param_bytes = (uint64_t)L->param_elems * sizeof(float);
    out->fwd_flops = L->fwd_flops;
    return true;
}
