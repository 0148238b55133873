/* tests/unit/test_export.c: Megatron layouts: the grammar on Megatron's own examples, and every
 * layout stagepart writes parsed back with the same grammar (round trip on random plans). */
#include <stagepart/stagepart.h>
#include <stdint.h>

#include "../test.h"
#include "layout_impl.h"

static sp_ctx *ctx;

static size_t total(const struct sp_layout *l, char c) {
    size_t n = 0;
    for (size_t k = 0; k < l->segments; k++)
        n += sp_layout_count(l, k, c);
    return n;
}

static void test_megatron_examples(void) {
    struct {
        const char *layout;
        size_t segments, decoders;
    } ex[] = {
        {"Et*3|(tt|)*29,m|L", 32, 61},
        {"E|(tt|)*2,(t|)*4,mL", 8, 8},
        {"Et*2|(t*2|)*34,t*3|(t*2|)*3,tL", 40, 80},
        {"Et*2|(tt|)*5t|tmL", 8, 14},
        {"Ett|ttt|ttt|L", 4, 8},
        {"E||t|L", 4, 1},
    };
    for (size_t i = 0; i < sizeof ex / sizeof *ex; i++) {
        struct sp_layout l;
        SP_CHECK_STATUS(sp_layout_parse(ctx, ex[i].layout, &l), SP_OK);
        SP_CHECK_MSG(l.segments == ex[i].segments, "%s: %zu segments", ex[i].layout, l.segments);
        SP_CHECK_MSG(total(&l, 't') == ex[i].decoders, "%s: %zu t", ex[i].layout, total(&l, 't'));
        SP_CHECK(total(&l, 'E') == 1 && total(&l, 'L') == 1);
        sp_layout_release(&l);
    }
    struct sp_layout l;
    SP_CHECK_STATUS(sp_layout_parse(ctx, "E(t|", &l), SP_ERR_INVALID_ARG);
    SP_CHECK_STATUS(sp_layout_parse(ctx, "E((t|)*2)*2", &l), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "nested");
    SP_CHECK_STATUS(sp_layout_parse(ctx, "Et*|L", &l), SP_ERR_INVALID_ARG);
    SP_CHECK_STATUS(sp_layout_parse(ctx, "", &l), SP_ERR_INVALID_ARG);
    /* the expansion limit (2^20 symbols) is enforced before the work, for both repeat forms */
    SP_CHECK_STATUS(sp_layout_parse(ctx, "Et*1000|(t*1000|)*1000000L", &l), SP_ERR_LIMIT);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "expands beyond 1048576 symbols");
    SP_CHECK_STATUS(sp_layout_parse(ctx, "(t*100000t*100000|)*9L", &l), SP_ERR_LIMIT);
    SP_CHECK_STATUS(sp_layout_parse(ctx, "(Et*100000|)*10", &l), SP_OK); /* just inside */
    SP_CHECK_MSG(l.segments == 11 && total(&l, 't') == 1000000, "%zu segments", l.segments);
    sp_layout_release(&l);
    /* Megatron's parse_str_to_list, character for character: (...)*0 is nothing, X*N repeats any
     * character ('|' too), a space or an empty group is no layer, the first bad one is named */
    SP_CHECK_STATUS(sp_layout_parse(ctx, "Et|(t|)*0,tL", &l), SP_OK);
    SP_CHECK(l.segments == 2 && total(&l, 't') == 2);
    sp_layout_release(&l);
    SP_CHECK_STATUS(sp_layout_parse(ctx, "Et*0t|tL", &l), SP_OK);
    SP_CHECK(l.segments == 2 && total(&l, 't') == 2);
    sp_layout_release(&l);
    SP_CHECK_STATUS(sp_layout_parse(ctx, "Et|*3tL", &l), SP_OK); /* "Et|||tL" */
    SP_CHECK(l.segments == 4 && total(&l, 't') == 2);
    sp_layout_release(&l);
    SP_CHECK_STATUS(sp_layout_parse(ctx, "Et |tL", &l), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "unknown symbol ' '");
    SP_CHECK_STATUS(sp_layout_parse(ctx, "E()*2t|tL", &l), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "'()' at offset 1 repeats nothing");
    SP_CHECK_STATUS(sp_layout_parse(ctx, "Exty|tzL", &l), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "unknown symbol 'x'");
}

static uint64_t rng = 3;
static unsigned rnd(unsigned n) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rng >> 33) % n);
}

static void test_round_trip(void) {
    int trials = 600, checked = 0, empty_seen = 0;
    for (int t = 0; t < trials; t++) {
        unsigned decoders = 2 + rnd(40), P = 1 + rnd(8), V = 1 + rnd(3), mtps = rnd(3);
        unsigned K = P * V;
        if (K > decoders)
            continue;
        /* embedding, decoders, MTP layers (on the last stage, the last virtual stage of its
         * rank), head, loss */
        char json[16384];
        size_t len =
            (size_t)snprintf(json, sizeof json,
                             "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"m\","
                             "\"micro_batch_size\":1,\"layers\":[{\"name\":\"emb\","
                             "\"kind\":\"embedding\",\"fwd_ms\":0.1,\"bwd_ms\":0.2}");
        for (unsigned i = 0; i < decoders; i++)
            len +=
                (size_t)snprintf(json + len, sizeof json - len,
                                 ",{\"name\":\"layers.%u\",\"kind\":\"transformer\",\"fwd_ms\":1,"
                                 "\"bwd_ms\":2}",
                                 i);
        for (unsigned i = 0; i < mtps; i++)
            len += (size_t)snprintf(json + len, sizeof json - len,
                                    ",{\"name\":\"mtp.%u\",\"kind\":\"mtp\",\"fwd_ms\":1,"
                                    "\"bwd_ms\":2}",
                                    i);
        snprintf(json + len, sizeof json - len,
                 ",{\"name\":\"head\",\"kind\":\"head\",\"fwd_ms\":2,\"bwd_ms\":4},{\"name\":"
                 "\"loss\",\"kind\":\"loss\",\"fwd_ms\":0.1,\"bwd_ms\":0.1}]}");
        sp_profile *p = NULL;
        SP_CHECK_STATUS(sp_profile_parse(ctx, "rt.json", json, strlen(json), &p), SP_OK);
        /* random cuts between decoders: stage k starts at 1 + (a distinct decoder index) */
        size_t first[64], n = 1 + decoders + mtps + 2;
        first[0] = 0;
        unsigned at = 0;
        for (unsigned k = 1; k < K; k++) {
            unsigned room = decoders - (K - k) - at; /* leave a decoder for every later stage */
            at += 1 + rnd(room > 0 ? room : 1);
            if (at > decoders - (K - k))
                at = decoders - (K - k);
            first[k] = 1 + at; /* layer index: the embedding is layer 0 */
        }
        /* every third plan has empty stages, as Megatron allows: any cut positions, repeats
         * included, from before E (leading empty stages) to after L (trailing ones, where the MTP
         * layers stay in their rank's last virtual stage: one chunk and no MTP) */
        bool empties = t % 3 == 0;
        for (unsigned k = 1; empties && k < K; k++) {
            bool trailing_ok = V == 1 && mtps == 0;
            unsigned r = rnd(decoders + 2 + trailing_ok);
            first[k] = r <= decoders + 1 ? r : n;
        }
        for (unsigned k = 1; empties && k < K; k++) /* sorted: insertion */
            for (unsigned j = k; j > 1 && first[j - 1] > first[j]; j--) {
                size_t x = first[j];
                first[j] = first[j - 1];
                first[j - 1] = x;
            }
        sp_partition_opts o;
        sp_partition_opts_init(&o);
        o.stages = P;
        o.chunks = V;
        o.micro_batches = 4 * P;
        o.allow_empty_stages = empties;
        sp_plan *plan = NULL;
        sp_status st = sp_plan_from_split(ctx, p, &o, first, K, &plan);
        SP_CHECK_MSG(st == SP_OK, "%s", sp_ctx_get_errmsg(ctx));
        char *text = NULL, *value = NULL;
        if (st == SP_OK)
            st = sp_plan_export(ctx, plan, SP_EXPORT_MEGATRON, NULL, &text, &value);
        SP_CHECK_MSG(st == SP_OK, "%s", sp_ctx_get_errmsg(ctx));
        if (st == SP_OK) {
            /* value is a JSON string: strip the quotes and parse it with the grammar */
            value[strlen(value) - 1] = '\0';
            struct sp_layout l;
            SP_CHECK_STATUS(sp_layout_parse(ctx, value + 1, &l), SP_OK);
            bool same = l.segments == K;
            for (unsigned k = 0; same && k < K; k++) {
                const sp_stage *s = sp_plan_get_stage(plan, k);
                size_t t_in_stage = 0, a = s->first_layer, b = a + s->layer_count;
                for (size_t i = a; i < b; i++)
                    t_in_stage += i >= 1 && i <= decoders;
                bool holds_l = a < n && b == n; /* the last layer: L, and the MTP layers with it */
                same = sp_layout_count(&l, k, 't') == t_in_stage &&
                       sp_layout_count(&l, k, 'm') == (holds_l ? mtps : 0) &&
                       sp_layout_count(&l, k, 'E') == (a == 0 && b > 0) &&
                       sp_layout_count(&l, k, 'L') == holds_l;
                empty_seen += s->layer_count == 0;
            }
            SP_CHECK_MSG(same, "layout %s does not match the plan", value + 1);
            /* and it reads back as the same split */
            size_t *back = NULL, n_back = 0;
            SP_CHECK_STATUS(sp_megatron_layout_split(ctx, p, value + 1, &back, &n_back), SP_OK);
            bool split_same = n_back == K;
            for (unsigned k = 0; split_same && k < K; k++)
                split_same = back[k] == first[k];
            SP_CHECK(split_same);
            sp_free(back);
            sp_layout_release(&l);
            checked++;
        }
        sp_free(text);
        sp_free(value);
        sp_plan_destroy(plan);
        sp_profile_destroy(p);
    }
    printf("megatron layouts: %d random plans written and read back, %d empty stages\n", checked,
           empty_seen);
    SP_CHECK(checked > 100 && empty_seen > 50);
}

int main(void) {
    sp_ctx_create(&ctx);
    test_megatron_examples();
    test_round_trip();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_export");
}
