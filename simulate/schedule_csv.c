/* simulate/schedule_csv.c: a pipeline's op order as torch.distributed.pipelining's schedule CSV
 * (one row per rank, one action per cell: "2F0" forward of stage 2 on micro-batch 0, "2I0" its
 * input gradient, "2W0" its weight gradient, "2B0" the full backward, "(0F3;7B1)OVERLAP_F_B" a
 * forward overlapped with a full backward), written from the order stagepart simulates and read
 * back to simulate a given order (`simulate --order`). The reader takes what torch's
 * _Action.from_str takes for compute actions and checks the order is complete: every forward
 * once, every backward once as B or as I then W, each on the rank its stage runs on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_impl.h"
#include "sim_impl.h"

static void put_action(struct sp_strbuf *sb, const struct sp_sched_op *op) {
    if (op->kind == 'O')
        sp_strbuf_printf(sb, "(%uF%u;%uB%u)OVERLAP_F_B", op->stage, op->mb, op->stage2, op->mb2);
    else
        sp_strbuf_printf(sb, "%u%c%u", op->stage, op->kind, op->mb);
}

sp_status sp_schedule_to_csv(sp_ctx *ctx, const struct sp_pipeline *pl, char **out) {
    *out = NULL;
    struct sp_sched_op *ops = NULL;
    size_t *offset = NULL;
    sp_status st = sp_schedule_build(ctx, pl, &ops, &offset);
    if (st != SP_OK)
        return st;
    struct sp_strbuf sb;
    sp_strbuf_init(&sb);
    for (uint32_t d = 0; d < pl->P; d++) {
        for (size_t i = offset[d]; i < offset[d + 1]; i++) {
            if (i > offset[d])
                sp_strbuf_puts(&sb, ",");
            put_action(&sb, &ops[i]);
        }
        sp_strbuf_puts(&sb, "\n");
    }
    sp_free(ops);
    sp_free(offset);
    if (sb.oom) {
        sp_strbuf_release(&sb);
        return sp_oom(ctx, "writing the schedule");
    }
    *out = sb.buf ? sb.buf : sp_strdup("");
    return *out ? SP_OK : sp_oom(ctx, "writing the schedule");
}

/* ---- reading */

struct csv_reader {
    sp_ctx *ctx;
    const char *name;
    const struct sp_pipeline *pl;
    uint32_t row;
    size_t cell;
};

static sp_status bad(struct csv_reader *r, const char *cell, size_t len, const char *why) {
    return sp_fail(r->ctx, SP_ERR_PARSE, "%s: row %u (rank %u), action %zu '%.*s': %s", r->name,
                   r->row + 1, r->row, r->cell + 1, (int)(len > 60 ? 60 : len), cell, why);
}

/* "<stage><kind><mb>" with kind one of F I B W, the whole text */
static bool parse_simple(const char *s, size_t len, uint32_t *stage, char *kind, uint32_t *mb) {
    size_t i = 0;
    unsigned long long a = 0, b = 0;
    if (i >= len || s[i] < '0' || s[i] > '9')
        return false;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
        if ((a = a * 10 + (unsigned)(s[i] - '0')) > UINT32_MAX)
            return false;
    if (i >= len || !strchr("FIBW", s[i]))
        return false;
    *kind = s[i++];
    if (i >= len)
        return false;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
        if ((b = b * 10 + (unsigned)(s[i] - '0')) > UINT32_MAX)
            return false;
    *stage = (uint32_t)a;
    *mb = (uint32_t)b;
    return i == len;
}

static sp_status parse_cell(struct csv_reader *r, const char *s, size_t len,
                            struct sp_sched_op *op) {
    const struct sp_pipeline *pl = r->pl;
    uint32_t K = pl->P * pl->V;
    memset(op, 0, sizeof *op);
    if (len && s[0] == '(') {
        const char *close = memchr(s, ')', len), *semi = memchr(s, ';', len);
        const char *tail = "OVERLAP_F_B";
        char k1, k2;
        if (!close || !semi || semi > close || (size_t)(s + len - close - 1) != strlen(tail) ||
            memcmp(close + 1, tail, strlen(tail)) != 0 ||
            !parse_simple(s + 1, (size_t)(semi - s - 1), &op->stage, &k1, &op->mb) ||
            !parse_simple(semi + 1, (size_t)(close - semi - 1), &op->stage2, &k2, &op->mb2) ||
            k1 != 'F' || k2 != 'B')
            return bad(r, s, len,
                       "expected an overlapped pair '(<stage>F<mb>;<stage>B<mb>)OVERLAP_F_B'");
        op->kind = 'O';
    } else if (!parse_simple(s, len, &op->stage, &op->kind, &op->mb)) {
        return bad(r, s, len,
                   "expected a compute action '<stage><F|I|B|W><micro-batch>' (communication "
                   "actions are not read: stagepart times transfers itself)");
    }
    for (int part = 0; part < (op->kind == 'O' ? 2 : 1); part++) {
        uint32_t k = part ? op->stage2 : op->stage, mb = part ? op->mb2 : op->mb;
        if (k >= K)
            return bad(r, s, len, "the stage is beyond the plan's stages");
        if (mb >= pl->M)
            return bad(r, s, len, "the micro-batch is beyond the micro-batch count");
        if (sp_chunk_device(pl->layout, pl->P, k) != r->row)
            return bad(r, s, len, "that stage runs on another rank under the plan's layout");
    }
    return SP_OK;
}

sp_status sp_schedule_parse_csv(sp_ctx *ctx, const char *name, const char *text, size_t len,
                                const struct sp_pipeline *pl, struct sp_sched_op **ops,
                                size_t **offset) {
    *ops = NULL;
    *offset = NULL;
    uint32_t P = pl->P, K = P * pl->V, M = pl->M;
    size_t cells = 1;
    for (size_t i = 0; i < len; i++)
        cells += text[i] == ',' || text[i] == '\n';
    size_t grid = (size_t)M * K;
    *ops = sp_mallocarray(cells, sizeof **ops);
    *offset = sp_calloc((size_t)P + 1, sizeof **offset);
    uint8_t *seen = sp_calloc(grid, 4); /* F, I, W, B counts per (mb, stage) */
    if (!*ops || !*offset || !seen) {
        sp_free(*ops);
        sp_free(*offset);
        sp_free(seen);
        *ops = NULL;
        *offset = NULL;
        return sp_oom(ctx, "reading the schedule");
    }
    struct csv_reader r = {ctx, name, pl, 0, 0};
    size_t n = 0, pos = 0;
    sp_status st = SP_OK;
    while (pos < len && st == SP_OK) {
        const char *eol = memchr(text + pos, '\n', len - pos);
        size_t end = eol ? (size_t)(eol - text) : len, line_end = end;
        if (line_end > pos && text[line_end - 1] == '\r')
            line_end--;
        if (r.row >= P) {
            bool blank = true;
            for (size_t i = pos; i < line_end; i++)
                blank &= text[i] == ',' || text[i] == ' ';
            if (!blank)
                st = sp_fail(ctx, SP_ERR_PARSE,
                             "%s: row %u: the plan has %u ranks; the schedule has more rows", name,
                             r.row + 1, P);
            pos = end + 1;
            continue;
        }
        (*offset)[r.row] = n;
        r.cell = 0;
        for (size_t c = pos; c <= line_end && st == SP_OK;) {
            const char *comma = memchr(text + c, ',', line_end - c);
            size_t ce = comma ? (size_t)(comma - text) : line_end, a = c, b = ce;
            while (a < b && (text[a] == ' ' || text[a] == '"'))
                a++;
            while (b > a && (text[b - 1] == ' ' || text[b - 1] == '"'))
                b--;
            if (b > a) { /* an empty cell is torch's None: nothing runs */
                st = parse_cell(&r, text + a, b - a, &(*ops)[n]);
                n++;
            }
            r.cell++;
            c = ce + 1;
        }
        r.row++;
        pos = end + 1;
    }
    if (st == SP_OK && r.row < P)
        st = sp_fail(ctx, SP_ERR_PARSE, "%s: %u rows, the plan has %u ranks (one row per rank)",
                     name, r.row, P);
    for (uint32_t d = r.row; d < P; d++)
        (*offset)[d] = n;
    (*offset)[P] = n;
    /* complete: each forward once, each backward once as B or as I and W */
    for (size_t i = 0; st == SP_OK && i < n; i++) {
        const struct sp_sched_op *op = &(*ops)[i];
        int slot = op->kind == 'F' ? 0 : op->kind == 'I' ? 1 : op->kind == 'W' ? 2 : 3;
        if (op->kind == 'O') {
            seen[((size_t)op->mb * K + op->stage) * 4 + 0]++;
            seen[((size_t)op->mb2 * K + op->stage2) * 4 + 3]++;
        } else if (seen[((size_t)op->mb * K + op->stage) * 4 + slot] < 255) {
            seen[((size_t)op->mb * K + op->stage) * 4 + slot]++;
        }
    }
    for (size_t g = 0; st == SP_OK && g < grid; g++) {
        const uint8_t *c = &seen[g * 4];
        uint32_t mb = (uint32_t)(g / K), k = (uint32_t)(g % K);
        if (c[0] != 1)
            st = sp_fail(ctx, SP_ERR_PARSE,
                         "%s: the forward of stage %u, micro-batch %u appears %u times (once "
                         "expected)",
                         name, k, mb, c[0]);
        else if (!((c[3] == 1 && !c[1] && !c[2]) || (!c[3] && c[1] == 1 && c[2] == 1)))
            st = sp_fail(ctx, SP_ERR_PARSE,
                         "%s: the backward of stage %u, micro-batch %u: expected one B, or one I "
                         "and one W; found %u B, %u I, %u W",
                         name, k, mb, c[3], c[1], c[2]);
    }
    sp_free(seen);
    if (st != SP_OK) {
        sp_free(*ops);
        sp_free(*offset);
        *ops = NULL;
        *offset = NULL;
    }
    return st;
}

sp_status sp_schedule_to_torch_csv(sp_ctx *ctx, const sp_plan *plan, const sp_sim_opts *opts,
                                   char **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!plan || !opts || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_schedule_to_torch_csv: NULL argument");
    *out = NULL;
    if (!sp_schedule_name(opts->schedule))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "unknown schedule");
    const sp_plan_summary *m = &plan->summary;
    uint32_t M = opts->micro_batches ? opts->micro_batches : m->micro_batches;
    if (M < 1 || M > SP_MAX_MICRO_BATCHES)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "micro-batches must be in [1, %u], got %u",
                       SP_MAX_MICRO_BATCHES, M);
    struct sp_pipeline pl = {m->stages, m->chunks, M,    opts->schedule, m->chunk_layout,
                             NULL,      NULL,      NULL, NULL,           NULL,
                             NULL,      NULL,      NULL};
    return sp_schedule_to_csv(ctx, &pl, out);
}
