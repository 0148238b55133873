/* tests/unit/test_models.c: the built-in models' math and byte counts.
 *
 * 1. Every op's backward against central finite differences, on tiny shapes: for a random
 *    projection r, L = sum(y * r) (for the LM head, L = the mean loss), and dL/dx, dL/dparams
 *    from the backward must match (L(v + e) - L(v - e)) / 2e at sampled coordinates. ReLU is
 *    a layer of its own here: behind a batchnorm a perturbation moves many values across its
 *    kink, where no finite difference is a derivative.
 * 2. GPT-2 small's parameter, activation and saved byte counts, computed by hand below.
 * 3. A few SGD steps on a tiny GPT lower its loss (the data rule is learnable).
 * 4. Model files: errors name the file, the JSON path and what was expected. */
#include <math.h>
#include <string.h>

#include "../test.h"
#include "model_impl.h"

static const char *tiny_tokens =
    "{\"format\": \"stagepart-model\", \"version\": 1, \"name\": \"tiny\", \"seq_len\": 5,"
    " \"micro_batch_size\": 2, \"layers\": ["
    "{\"name\": \"emb\", \"op\": \"embedding\", \"vocab\": 11, \"hidden\": 8, \"max_seq_len\": 6},"
    "{\"name\": \"gpt\", \"op\": \"transformer\", \"hidden\": 8, \"heads\": 2, \"ffn\": 12},"
    "{\"name\": \"llama\", \"op\": \"transformer\", \"hidden\": 8, \"heads\": 4, \"ffn\": 10,"
    " \"norm\": \"rmsnorm\", \"activation\": \"swiglu\", \"bias\": false},"
    "{\"name\": \"bidir\", \"op\": \"attention\", \"hidden\": 8, \"heads\": 2, \"causal\": false},"
    "{\"name\": \"mlp\", \"op\": \"mlp\", \"hidden\": 8, \"ffn\": 6},"
    "{\"name\": \"ln\", \"op\": \"layernorm\", \"hidden\": 8},"
    "{\"name\": \"rms\", \"op\": \"rmsnorm\", \"hidden\": 8},"
    "{\"name\": \"proj\", \"op\": \"linear\", \"in_features\": 8, \"out_features\": 8},"
    "{\"name\": \"head\", \"op\": \"lm_head\", \"hidden\": 8, \"vocab\": 11}]}";

static const char *tiny_images =
    "{\"format\": \"stagepart-model\", \"version\": 1, \"name\": \"tiny-cnn\","
    " \"micro_batch_size\": 3, \"input\": {\"channels\": 2, \"height\": 6, \"width\": 6},"
    " \"layers\": ["
    "{\"name\": \"block\", \"kind\": \"conv\", \"ops\": [{\"op\": \"conv2d\", \"in_channels\": 2,"
    " \"out_channels\": 3, \"kernel\": 3, \"padding\": 1}, {\"op\": \"batchnorm\", \"channels\": "
    "3}]},"
    "{\"name\": \"act\", \"op\": \"relu\"},"
    "{\"name\": \"down\", \"op\": \"conv2d\", \"in_channels\": 3, \"out_channels\": 4,"
    " \"kernel\": 3, \"stride\": 2},"
    "{\"name\": \"maxpool\", \"op\": \"pool\", \"pool\": \"max\", \"kernel\": 2},"
    "{\"name\": \"gap\", \"op\": \"pool\", \"pool\": \"avg_global\"},"
    "{\"name\": \"fc\", \"op\": \"linear\", \"in_features\": 4, \"out_features\": 5},"
    "{\"name\": \"cls\", \"op\": \"lm_head\", \"hidden\": 5, \"vocab\": 4}]}";

static sp_model *parse(sp_ctx *ctx, const char *text) {
    sp_model *m = NULL;
    sp_status st = sp_model_parse(ctx, "tiny.json", text, strlen(text), &m);
    SP_CHECK_MSG(st == SP_OK, "%s", sp_ctx_get_errmsg(ctx));
    return m;
}

/* L = sum(y * r), or the mean of the per-sample losses for the LM head; in double */
static double objective(const struct sp_model *m, size_t i, const struct sp_batch *b,
                        const float *params, float *saved, float *y, float *work, const float *r) {
    const struct sp_model_layer *L = &m->layers[i];
    sp_layer_forward(m, i, b, params, saved, y, work);
    double sum = 0.0;
    bool head = L->ops[L->n_ops - 1].kind == SP_OP_LM_HEAD;
    for (size_t k = 0; k < L->out_elems; k++)
        sum += head ? (double)y[k] / (double)L->out_elems : (double)y[k] * (double)r[k];
    return sum;
}

static int close_enough(double num, double ana) {
    return fabs(num - ana) <= 2e-3 + 3e-2 * fmax(fabs(num), fabs(ana));
}

/* finite differences on `samples` coordinates of v[n] */
static void check_coords(const struct sp_model *m, size_t i, const struct sp_batch *b,
                         float *params, float *saved, float *y, float *work, const float *r,
                         float *v, size_t n, const float *grad, const char *what, uint64_t *rng) {
    const float eps = 2e-3f;
    int bad = 0;
    size_t samples = n < 24 ? n : 24;
    for (size_t s = 0; s < samples; s++) {
        size_t k = n <= 24 ? s : (size_t)(sp_rand_next(rng) % n);
        float keep = v[k];
        v[k] = keep + eps;
        double plus = objective(m, i, b, params, saved, y, work, r);
        v[k] = keep - eps;
        double minus = objective(m, i, b, params, saved, y, work, r);
        v[k] = keep;
        double num = (plus - minus) / (2.0 * (double)eps);
        if (!close_enough(num, (double)grad[k]) && bad++ < 3)
            fprintf(stderr, "layer %s %s[%zu]: finite difference %.6g, backward %.6g\n",
                    m->layers[i].name, what, k, num, (double)grad[k]);
    }
    SP_CHECK_MSG(bad == 0, "layer %s: %d of %zu %s gradients differ", m->layers[i].name, bad,
                 samples, what);
}

static void gradcheck(sp_ctx *ctx, struct sp_model *m) {
    struct sp_batch b;
    SP_CHECK_STATUS(sp_batch_make(ctx, m, 7, &b), SP_OK);
    uint64_t rng = 42;
    for (size_t i = 0; i < m->n_layers; i++) {
        const struct sp_model_layer *L = &m->layers[i];
        float *params = calloc(L->param_elems + 1, 4), *dparams = calloc(L->param_elems + 1, 4);
        float *saved = calloc(L->saved_elems + 1, 4), *y = calloc(L->out_elems + 1, 4);
        float *work = calloc(L->work_elems + 1, 4), *r = calloc(L->out_elems + 1, 4);
        float *x = calloc(L->in_elems + 1, 4), *dx = calloc(L->in_elems + 1, 4);
        sp_layer_init_params(m, i, 3, params);
        for (size_t k = 0; k < L->param_elems; k++) /* off the init's zeros and ones */
            params[k] += 0.1f * sp_rand_uniform(&rng);
        for (size_t k = 0; k < L->in_elems; k++)
            x[k] = sp_rand_uniform(&rng);
        for (size_t k = 0; k < L->out_elems; k++)
            r[k] = sp_rand_uniform(&rng);
        memcpy(saved, x, L->in_elems * 4);
        objective(m, i, &b, params, saved, y, work, r);
        double wgrad = 0.0;
        sp_layer_backward(m, i, &b, params, saved, r, L->in_elems ? dx : NULL, dparams, work,
                          &wgrad);
        SP_CHECK(wgrad >= 0.0);
        /* the input gradient: perturb x in the saved area itself */
        if (L->in_elems && !(i == 0 && !m->tokens))
            check_coords(m, i, &b, params, saved, y, work, r, saved, L->in_elems, dx, "input",
                         &rng);
        check_coords(m, i, &b, params, saved, y, work, r, params, L->param_elems, dparams,
                     "parameter", &rng);
        free(params), free(dparams), free(saved), free(y), free(work), free(r), free(x), free(dx);
    }
    sp_batch_release(&b);
}

/* GPT-2 small at micro-batch 1, sequence 128: every figure from the architecture by hand. */
static void gpt2_bytes(sp_ctx *ctx, const char *src) {
    char path[4096];
    snprintf(path, sizeof path, "%s/samples/models/gpt2-small.json", src);
    sp_model *m = NULL;
    sp_status st = sp_model_load(ctx, path, &m);
    SP_CHECK_MSG(st == SP_OK, "%s", sp_ctx_get_errmsg(ctx));
    if (!m)
        return;
    const uint64_t V = 50257, P = 1024, H = 768, F = 3072, S = 128, heads = 12, N = S;
    sp_model_info info;
    sp_model_get_info(m, &info);
    SP_CHECK_EQ_INT(info.layers, 15);
    /* 124,439,808 of GPT-2 plus an untied LM head of V x H */
    SP_CHECK_EQ_INT(info.param_count, 124439808ull + V * H);
    sp_model_layer_info li;
    SP_CHECK(sp_model_get_layer(m, 0, &li));
    SP_CHECK(strcmp(li.kind, "embedding") == 0);
    SP_CHECK_EQ_INT(li.param_bytes, 4 * (V + P) * H);
    SP_CHECK_EQ_INT(li.activation_bytes, 4 * N * H);
    SP_CHECK_EQ_INT(li.saved_bytes, 0);
    SP_CHECK(sp_model_get_layer(m, 1, &li));
    SP_CHECK(strcmp(li.name, "layers.0") == 0 && strcmp(li.kind, "transformer") == 0);
    /* attention: ln 2H, qkv 3H^2 + 3H, out H^2 + H; mlp: ln 2H, H x F + F, F x H + H */
    SP_CHECK_EQ_INT(li.param_bytes, 4 * (4 * H * H + 6 * H + 2 * H * F + F + 3 * H));
    SP_CHECK_EQ_INT(li.param_bytes, 4 * 7087872ull);
    SP_CHECK_EQ_INT(li.activation_bytes, 4 * N * H);
    /* input x; attention: ln stats 2N, h, qkv 3NH, probabilities heads x S x S, o; the
     * attention's output (the mlp's input); mlp: ln stats 2N, h, a NF, gelu(a) NF */
    uint64_t attn = 2 * N + N * H + 3 * N * H + heads * S * S + N * H;
    uint64_t mlp = 2 * N + N * H + 2 * N * F;
    SP_CHECK_EQ_INT(li.saved_bytes, 4 * (N * H + attn + N * H + mlp));
    SP_CHECK_EQ_INT(li.saved_bytes, 7079936);
    SP_CHECK_EQ_INT(li.fwd_flops, 2 * N * H * 4 * H + 4 * S * S * H + 2 * N * H * F * 2);
    SP_CHECK(sp_model_get_layer(m, 13, &li));
    SP_CHECK(strcmp(li.name, "ln_f") == 0 && strcmp(li.kind, "norm") == 0);
    SP_CHECK_EQ_INT(li.param_bytes, 4 * 2 * H);
    SP_CHECK_EQ_INT(li.saved_bytes, 4 * (N * H + 2 * N));
    SP_CHECK(sp_model_get_layer(m, 14, &li));
    SP_CHECK(strcmp(li.name, "lm_head") == 0 && strcmp(li.kind, "head") == 0);
    SP_CHECK_EQ_INT(li.param_bytes, 4 * V * H);
    SP_CHECK_EQ_INT(li.saved_bytes, 4 * (N * H + N * V)); /* input and the probabilities */
    SP_CHECK_EQ_INT(li.activation_bytes, 4);              /* one loss per sample */
    SP_CHECK(!sp_model_get_layer(m, 15, &li));
    /* at micro-batch 4 and sequence 1024 the activations scale with B x S */
    SP_CHECK_STATUS(sp_model_set_shape(ctx, m, 4, 1024), SP_OK);
    SP_CHECK(sp_model_get_layer(m, 1, &li));
    SP_CHECK_EQ_INT(li.activation_bytes, 4 * 4 * 1024 * H);
    SP_CHECK_STATUS(sp_model_set_shape(ctx, m, 1, 1025), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "max_seq_len (1024)");
    sp_model_get_info(m, &info);
    SP_CHECK_EQ_INT(info.seq_len, 1024); /* the failed call left the shape as it was */
    sp_model_destroy(m);
}

/* Training a tiny GPT with plain SGD lowers its loss. */
static void training_learns(sp_ctx *ctx) {
    struct sp_model *m = parse(ctx, tiny_tokens);
    if (!m)
        return;
    struct sp_stage_exec *se = NULL;
    SP_CHECK_STATUS(sp_stage_exec_create(ctx, m, 0, m->n_layers - 1, 1, 5, &se), SP_OK);
    float loss[2];
    double first = 0.0, last = 0.0;
    for (int step = 0; step < 60; step++) {
        struct sp_batch b;
        SP_CHECK_STATUS(sp_batch_make(ctx, m, 100 + (uint64_t)step, &b), SP_OK);
        sp_stage_exec_forward(se, 0, &b, loss, NULL);
        sp_stage_exec_backward(se, 0, &b, NULL, NULL, NULL, NULL);
        sp_stage_exec_sgd(se, 0.5f);
        double l = 0.5 * ((double)loss[0] + (double)loss[1]);
        if (step < 5)
            first += l / 5;
        if (step >= 55)
            last += l / 5;
        sp_batch_release(&b);
    }
    SP_CHECK_MSG(last < 0.7 * first, "loss %.4f -> %.4f", first, last);
    SP_CHECK(first > 2.0 && first < 3.0); /* about ln(11) = 2.40 at the start */
    sp_stage_exec_destroy(se);
    sp_model_destroy(m);
}

static void expect_error(sp_ctx *ctx, const char *text, sp_status status, const char *needle) {
    sp_model *m = NULL;
    SP_CHECK_STATUS(sp_model_parse(ctx, "bad.json", text, strlen(text), &m), status);
    SP_CHECK(m == NULL);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), needle);
}

static void errors(sp_ctx *ctx) {
#define HDR "{\"format\": \"stagepart-model\", \"version\": 1, \"name\": \"m\", "
    expect_error(ctx,
                 HDR "\"preset\": {\"kind\": \"gpt\", \"layers\": 2, \"hidden\": 10, "
                     "\"heads\": 3, \"vocab\": 5, \"max_seq_len\": 8}}",
                 SP_ERR_SCHEMA,
                 "bad.json: layers[1].heads: hidden (10) must be a multiple of heads (3)");
    expect_error(ctx, HDR "\"preset\": {\"kind\": \"gpt\", \"layers\": 0}}", SP_ERR_SCHEMA,
                 "bad.json: preset.layers: expected");
    expect_error(
        ctx, HDR "\"preset\": {\"kind\": \"t5\"}}", SP_ERR_SCHEMA,
        "bad.json: preset.kind: expected \"gpt\", \"llama\", \"bert\" or \"resnet\", got \"t5\"");
    expect_error(ctx, HDR "\"layers\": [{\"name\": \"a\", \"op\": \"conv3d\"}]}", SP_ERR_SCHEMA,
                 "bad.json: layers[0].op: expected one of embedding");
    expect_error(ctx,
                 HDR "\"layers\": [{\"name\": \"a\", \"op\": \"embedding\", \"vocab\": 4, "
                     "\"hidden\": \"x\", \"max_seq_len\": 4}]}",
                 SP_ERR_SCHEMA, "bad.json: layers[0].hidden: expected");
    expect_error(ctx,
                 HDR "\"seq_len\": 9, \"layers\": [{\"name\": \"a\", \"op\": \"embedding\", "
                     "\"vocab\": 4, \"hidden\": 2, \"max_seq_len\": 4}, {\"name\": \"b\", "
                     "\"op\": \"lm_head\", \"hidden\": 2, \"vocab\": 4}]}",
                 SP_ERR_SCHEMA, "bad.json: seq_len: 9 exceeds the embedding's max_seq_len (4)");
    expect_error(ctx,
                 HDR "\"layers\": [{\"name\": \"a\", \"op\": \"embedding\", \"vocab\": 4, "
                     "\"hidden\": 2, \"max_seq_len\": 4}]}",
                 SP_ERR_SCHEMA, "must end in an lm_head");
    expect_error(ctx,
                 HDR "\"layers\": [{\"name\": \"a\", \"op\": \"embedding\", \"vocab\": 4, "
                     "\"hidden\": 2, \"max_seq_len\": 4}, {\"name\": \"b\", \"op\": "
                     "\"lm_head\", \"hidden\": 3, \"vocab\": 4}]}",
                 SP_ERR_INVALID_ARG, "layer 1 (b): the LM head's hidden size differs");
    expect_error(ctx,
                 HDR "\"layers\": [{\"name\": \"a\", \"op\": \"relu\"}, {\"name\": \"b\", "
                     "\"op\": \"lm_head\", \"hidden\": 3, \"vocab\": 4}]}",
                 SP_ERR_SCHEMA, "bad.json: input: a model that does not start with an embedding");
    expect_error(ctx, "{\"format\": \"stagepart-profile\", \"version\": 1}", SP_ERR_SCHEMA,
                 "bad.json: format: expected \"stagepart-model\", got \"stagepart-profile\"");
    expect_error(ctx, HDR "\"layers\": [{\"name\": \"a\", \"op\": \"relu\", \"ops\": []}]}",
                 SP_ERR_SCHEMA, "layers[0].op: expected either \"op\" (one op) or \"ops\"");
    expect_error(ctx, "{\"format\": ", SP_ERR_PARSE, "bad.json:1:");
    expect_error(ctx,
                 HDR "\"preset\": {\"kind\": \"gpt\", \"layers\": 100000, \"hidden\": 8, "
                     "\"heads\": 2, \"vocab\": 5, \"max_seq_len\": 8}}",
                 SP_ERR_SCHEMA,
                 "bad.json: preset.layers: the preset expands to 100003 layers, more than the "
                 "limit of 100000");
    /* found by fuzz_model: a profile must have unique names, so the model must too */
    expect_error(ctx,
                 HDR "\"input\": {\"channels\": 1, \"height\": 2, \"width\": 2}, "
                     "\"layers\": [{\"name\": \"a\", \"op\": \"relu\"}, "
                     "{\"name\": \"a\", \"op\": \"pool\", \"pool\": \"avg_global\"}, "
                     "{\"name\": \"b\", \"op\": \"lm_head\", \"hidden\": 1, "
                     "\"vocab\": 2}]}",
                 SP_ERR_SCHEMA,
                 "bad.json: layers[1].name: duplicate layer name \"a\" (first used by layers[0])");
#undef HDR
}

int main(int argc, char **argv) {
    sp_ctx *ctx = NULL;
    sp_ctx_create(&ctx);
    struct sp_model *tokens = parse(ctx, tiny_tokens), *images = parse(ctx, tiny_images);
    if (tokens)
        gradcheck(ctx, tokens);
    if (images)
        gradcheck(ctx, images);
    sp_model_destroy(tokens);
    sp_model_destroy(images);
    gpt2_bytes(ctx, argc > 1 ? argv[1] : ".");
    training_learns(ctx);
    errors(ctx);
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_models");
}
