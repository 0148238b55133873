/* tests/unit/test_profile_pieces.c: a profile's layers array read in pieces on several threads
 * (formats/profile_layers.c) gives what one pass gives: the same layers, the same end, the same
 * problems named by the same indices, on text made to mislead the guessed starts (names holding
 * "}, {", layers holding arrays of objects, members after the array). */
#include <cjson/cJSON.h>
#include <stagepart/stagepart.h>
#include <stdarg.h>

#include "../test.h"
#include "profile_impl.h"

static sp_ctx *ctx;

/* a growable text */
struct text {
    char *s;
    size_t len, cap;
};

static void put(struct text *t, const char *fmt, ...) SP_PRINTF(2, 3);
static void put(struct text *t, const char *fmt, ...) {
    if (!t->s && !(t->s = malloc(t->cap = 4096)))
        abort();
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap * 2 + (size_t)n + 64;
        t->s = realloc(t->s, t->cap);
        if (!t->s)
            abort();
    }
}

static unsigned long long rng = 88172645463325252ull;
static unsigned next_rand(unsigned bound) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % bound);
}

static const char *const spaces[] = {"", " ", "\n  ", "\t", " \r\n "};

/* n layers; layer `bad` (n: none) has no name; the names and the nested values hold what looks
 * like a boundary between layers */
static void make_layers(struct text *t, size_t n, size_t bad, bool trailing) {
    put(t, "[%s", spaces[next_rand(5)]);
    for (size_t i = 0; i < n; i++) {
        if (i)
            put(t, "%s,%s", spaces[next_rand(5)], spaces[next_rand(5)]);
        put(t, "{");
        if (i != bad) {
            switch (next_rand(4)) {
            case 0:
                put(t, "\"name\":\"l%zu}, {x\",", i);
                break;
            case 1:
                put(t, "\"name\":\"l%zu\\\"},{\\\"\",", i);
                break;
            default:
                put(t, "\"name\":\"l%zu\",", i);
            }
        }
        if (next_rand(3) == 0)
            put(t, "\"measured\":{\"runs\":[{\"a\":1}%s,%s{\"b\":[{}, {}]}]},",
                spaces[next_rand(5)], spaces[next_rand(5)]);
        put(t, "\"kind\":\"k%u\",\"fwd_ms\":%zu.5,\"bwd_ms\":%u,\"saved_bytes\":%zu}", next_rand(3),
            i % 13, next_rand(9), i * 3);
    }
    put(t, "%s]", spaces[next_rand(5)]);
    if (trailing) /* what follows the array in a document: never read as layers */
        put(t, ",\"devices\":[{\"name\":\"a\"}, {\"name\":\"b\"}],\"x\":[{}, {}, {}]}");
}

static void check_same(const struct sp_profile_layers *a, const struct sp_profile_layers *b,
                       const char *what) {
    SP_CHECK_MSG(a->n == b->n, "%s: %zu layers, one pass %zu", what, a->n, b->n);
    SP_CHECK_MSG(a->end == b->end, "%s: the array's end differs", what);
    if (a->n != b->n)
        return;
    size_t differ = 0;
    for (size_t i = 0; i < a->n; i++) {
        const sp_layer *x = &a->layers[i], *y = &b->layers[i];
        differ += strcmp(a->pool.buf + (uintptr_t)x->name, b->pool.buf + (uintptr_t)y->name) != 0 ||
                  strcmp(a->pool.buf + (uintptr_t)x->kind, b->pool.buf + (uintptr_t)y->kind) != 0 ||
                  x->fwd_ms != y->fwd_ms || x->bwd_ms != y->bwd_ms ||
                  x->saved_bytes != y->saved_bytes;
    }
    SP_CHECK_MSG(differ == 0, "%s: %zu layers differ from one pass", what, differ);
}

/* one pass against the text read as one cJSON tree: every layer's kind (the reader gives a run
 * of one kind one copy, which must not spill onto a layer of another kind) */
static void check_kinds(const struct sp_profile_layers *a, const char *text, size_t len) {
    cJSON *arr = cJSON_ParseWithLengthOpts(text, len, NULL, 0);
    SP_CHECK(cJSON_IsArray(arr) && (size_t)cJSON_GetArraySize(arr) == a->n);
    size_t i = 0, differ = 0;
    for (const cJSON *o = arr ? arr->child : NULL; o && i < a->n; o = o->next, i++) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
        differ += !cJSON_IsString(kind) ||
                  strcmp(kind->valuestring, a->pool.buf + (uintptr_t)a->layers[i].kind) != 0;
    }
    SP_CHECK_MSG(differ == 0, "%zu layers' kinds differ from the text", differ);
    cJSON_Delete(arr);
}

static void release(struct sp_profile_layers *l) {
    sp_free(l->layers);
    sp_strbuf_release(&l->pool);
}

static void count_run(void *arg) {
    ++*(int *)arg;
}

/* every piece size and thread count against one pass, on texts with and without problems */
static void test_pieces_match_one_pass(void) {
    for (int round = 0; round < 40; round++) {
        struct text t = {0};
        size_t n = 1 + next_rand(3000), bad = round % 4 == 3 ? next_rand((unsigned)n) : n;
        make_layers(&t, n, bad, round % 2 == 0);
        struct sp_json_reader one_r = {ctx, "doc"};
        struct sp_profile_layers one;
        sp_ctx_begin(ctx);
        SP_CHECK_STATUS(sp_profile_layers_read(&one_r, t.s, t.len, 0, 1, NULL, &one), SP_OK);
        char *one_msg = strdup(sp_ctx_get_errmsg(ctx));
        check_kinds(&one, t.s, t.len);
        const size_t piece_bytes[] = {37, 200, 1000, 5000};
        for (size_t k = 0; k < sizeof piece_bytes / sizeof piece_bytes[0]; k++)
            for (size_t threads = 2; threads <= 4; threads += 2) {
                char what[96];
                snprintf(what, sizeof what, "round %d, %zu layers, pieces of %zu, %zu threads",
                         round, n, piece_bytes[k], threads);
                struct sp_json_reader r = {ctx, "doc"};
                struct sp_profile_layers got;
                int runs = 0;
                struct sp_side_job side = {count_run, &runs, false};
                sp_ctx_begin(ctx);
                SP_CHECK_STATUS(
                    sp_profile_layers_read(&r, t.s, t.len, piece_bytes[k], threads, &side, &got),
                    SP_OK);
                check_same(&got, &one, what);
                SP_CHECK_MSG(strcmp(sp_ctx_get_errmsg(ctx), one_msg) == 0,
                             "%s: problems '%s', one pass '%s'", what, sp_ctx_get_errmsg(ctx),
                             one_msg);
                SP_CHECK_MSG(runs == (side.done ? 1 : 0), "%s: the side job ran %d times", what,
                             runs);
                release(&got);
            }
        if (bad < n) {
            char where[64];
            snprintf(where, sizeof where, "doc: layers[%zu].name: missing", bad);
            SP_CHECK_CONTAINS(one_msg, where);
        }
        free(one_msg);
        release(&one);
        free(t.s);
    }
}

/* malformed text in a later piece: refused as one pass refuses it */
static void test_malformed_later_piece(void) {
    struct text t = {0};
    make_layers(&t, 2000, 2000, false);
    char *cut = strstr(t.s + t.len / 2, "\"fwd_ms\":");
    SP_CHECK(cut != NULL);
    if (!cut) {
        free(t.s);
        return;
    }
    cut[8] = '@'; /* "fwd_ms"@ */
    struct sp_json_reader r = {ctx, "doc"};
    struct sp_profile_layers got;
    SP_CHECK_STATUS(sp_profile_layers_read(&r, t.s, t.len, 300, 4, NULL, &got), SP_ERR_PARSE);
    SP_CHECK_STATUS(sp_profile_layers_read(&r, t.s, t.len, 0, 1, NULL, &got), SP_ERR_PARSE);
    free(t.s);
}

/* through the public reader: a profile of several default pieces, its digest as computed on the
 * side, and a problem in its last piece named by its index */
static void test_large_profile(void) {
    for (int with_problem = 0; with_problem < 2; with_problem++) {
        struct text t = {0};
        put(&t, "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"m\",\"layers\":");
        size_t n = 40000;
        make_layers(&t, n, with_problem ? n - 7 : n, false);
        put(&t, ",\"source\":\"test\"}");
        SP_CHECK(t.len > 3 * SP_PROFILE_PIECE_BYTES);
        sp_profile *p = NULL;
        sp_status st = sp_profile_parse(ctx, "big.json", t.s, t.len, &p);
        if (with_problem) {
            SP_CHECK_STATUS(st, SP_ERR_SCHEMA);
            char where[64];
            snprintf(where, sizeof where, "big.json: layers[%zu].name: missing", n - 7);
            SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), where);
        } else {
            SP_CHECK_STATUS(st, SP_OK);
            SP_CHECK_EQ_INT(sp_profile_get_layer_count(p), n);
            char hex[65];
            SP_CHECK_STATUS(sp_sha256_hex(ctx, t.s, t.len, hex), SP_OK);
            SP_CHECK(strcmp(sp_profile_get_sha256(p), hex) == 0);
            SP_CHECK(strcmp(sp_profile_get_source(p), "test") == 0);
            const sp_layer *last = sp_profile_get_layer(p, n - 1);
            SP_CHECK(last && strncmp(last->name, "l39999", 6) == 0 &&
                     last->saved_bytes == 3 * (n - 1));
        }
        sp_profile_destroy(p);
        free(t.s);
    }
}

/* the first "layers" counts, as cJSON reads a repeated key; one that is not an array is read by
 * the whole-document reader, which says what it is */
static void test_repeated_and_odd_layers(void) {
    const char *twice = "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"m\","
                        "\"layers\":[{\"name\":\"a\",\"fwd_ms\":1,\"bwd_ms\":2}],"
                        "\"layers\":[{\"name\":\"b\",\"fwd_ms\":3,\"bwd_ms\":4},{}]}";
    sp_profile *p = NULL;
    SP_CHECK_STATUS(sp_profile_parse(ctx, "twice.json", twice, strlen(twice), &p), SP_OK);
    SP_CHECK_EQ_INT(sp_profile_get_layer_count(p), 1);
    SP_CHECK(p && strcmp(sp_profile_get_layer(p, 0)->name, "a") == 0);
    sp_profile_destroy(p);
    const char *object = "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"m\","
                         "\"layers\":{\"name\":\"a\"},\"layers\":[{\"name\":\"b\"}]}";
    p = NULL;
    SP_CHECK_STATUS(sp_profile_parse(ctx, "object.json", object, strlen(object), &p),
                    SP_ERR_SCHEMA);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "layers: expected an array of layer objects");
    sp_profile_destroy(p);
}

int main(void) {
    sp_ctx_create(&ctx);
    test_pieces_match_one_pass();
    test_malformed_later_piece();
    test_large_profile();
    test_repeated_and_odd_layers();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_profile_pieces");
}
