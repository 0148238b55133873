/* tests/unit/test_core.c: status table, byte counts, atomic writes, allocator hooks, the
 * plan document's fields, the JSON splitter, the parse arena and the rounding to ticks. */
#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <regex.h>
#include <stagepart/stagepart.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "internal.h"
#include "json_util.h"

static sp_ctx *ctx;

static void test_status(void) {
    SP_CHECK(strcmp(sp_status_name(SP_OK), "SP_OK") == 0);
    SP_CHECK(strcmp(sp_status_name(SP_ERR_PARSE), "SP_ERR_PARSE") == 0);
    SP_CHECK(strcmp(sp_strerror(SP_ERR_INFEASIBLE), "no plan satisfies the constraints") == 0);
    SP_CHECK(strcmp(sp_status_name((sp_status)999), "SP_ERR_UNKNOWN") == 0);
    SP_CHECK(strcmp(sp_strerror((sp_status)-1), "unknown status") == 0);
    SP_CHECK(*sp_version() != '\0');
    SP_CHECK(strcmp(sp_ctx_get_errmsg(NULL), "") == 0);
    sp_ctx_destroy(NULL);
}

static void test_bytes(void) {
    struct {
        const char *text;
        uint64_t bytes;
    } ok[] = {{"0", 0},
              {"4096", 4096},
              {"80GB", 80000000000ull},
              {"80GiB", 85899345920ull},
              {"80gib", 85899345920ull},
              {"1.5TB", 1500000000000ull},
              {"512MiB", 536870912ull},
              {"10kB", 10000},
              {"7B", 7},
              {"2G", 2000000000ull},
              {"9007199254740992", 9007199254740992ull}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 1;
        SP_CHECK_STATUS(sp_parse_bytes(ctx, ok[i].text, &v), SP_OK);
        SP_CHECK_MSG(v == ok[i].bytes, "%s -> %llu", ok[i].text, (unsigned long long)v);
    }
    const char *bad[] = {"",    "-1",  "GB",   "80 GB",         "80XB", "0x10",
                         "inf", "nan", "1.5B", "99999999999TB", "+5",   "1e3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 0;
        sp_status st = sp_parse_bytes(ctx, bad[i], &v);
        SP_CHECK_MSG(st == SP_ERR_INVALID_ARG || (strcmp(bad[i], "1e3") == 0 && v == 1000),
                     "'%s' accepted", bad[i]);
    }
    SP_CHECK_STATUS(sp_parse_bytes(ctx, "80XB", &(uint64_t){0}), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx),
                      "expected a byte count like 80GB, 80GiB or 4096, got '80XB'");
    char buf[16];
    SP_CHECK(strcmp(sp_format_bytes(999, buf, sizeof buf), "999 B") == 0);
    SP_CHECK(strcmp(sp_format_bytes(80000000000ull, buf, sizeof buf), "80 GB") == 0);
    SP_CHECK(strcmp(sp_format_bytes(1234567, buf, sizeof buf), "1.23 MB") == 0);
}

static void test_atomic_write(void) {
    char dir[] = "/tmp/sp_test_XXXXXX";
    SP_CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/out.json", dir);
    SP_CHECK_STATUS(sp_write_file_atomic(ctx, path, "first\n", 6), SP_OK);
    SP_CHECK_STATUS(sp_write_file_atomic(ctx, path, "second\n", 7), SP_OK);
    FILE *f = fopen(path, "r");
    char got[32] = "";
    SP_CHECK(f && fgets(got, sizeof got, f));
    if (f)
        fclose(f);
    SP_CHECK(strcmp(got, "second\n") == 0);
    /* a target that cannot be replaced (a non-empty directory) stays, no temp file is left */
    char sub[160];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    mkdir(sub, 0755);
    char inner[192];
    snprintf(inner, sizeof inner, "%s/keep", sub);
    SP_CHECK_STATUS(sp_write_file_atomic(ctx, inner, "x", 1), SP_OK);
    SP_CHECK_STATUS(sp_write_file_atomic(ctx, sub, "data", 4), SP_ERR_IO);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "it is a directory, not a file");
    struct stat st;
    SP_CHECK(stat(inner, &st) == 0);
    char missing[192];
    snprintf(missing, sizeof missing, "%s/no/such/dir/x.json", dir);
    SP_CHECK_STATUS(sp_write_file_atomic(ctx, missing, "x", 1), SP_ERR_IO);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "No such file or directory");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls -A %s | grep -c tmp > /dev/null && exit 1; rm -rf %s", dir, dir);
    SP_CHECK(system(cmd) == 0); /* no temporary files left behind */
}

/* sp_read_file: small and large files (a large one is read in two halves at once) whole, in
 * order and NUL-terminated; a pipe, whose size is not known, read to its end */
static void test_read_file(void) {
    char dir[] = "/tmp/sp_test_XXXXXX";
    SP_CHECK(mkdtemp(dir) != NULL);
    const size_t sizes[] = {1, 4095, 100000, ((size_t)8 << 20) - 1, ((size_t)9 << 20) + 12345};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        char path[128];
        snprintf(path, sizeof path, "%s/f%zu", dir, k);
        char *want = malloc(n);
        for (size_t i = 0; i < n; i++)
            want[i] = (char)('a' + (i * 7 + i / 4096) % 26);
        FILE *f = fopen(path, "wb");
        SP_CHECK(f && fwrite(want, 1, n, f) == n);
        if (f)
            fclose(f);
        char *got = NULL;
        size_t len = 0;
        SP_CHECK_STATUS(sp_read_file(ctx, path, (size_t)64 << 20, &got, &len), SP_OK);
        SP_CHECK_EQ_INT(len, n);
        SP_CHECK_MSG(got && len == n && memcmp(got, want, n) == 0 && got[n] == '\0',
                     "%zu bytes read back differently", n);
        sp_free(got);
        SP_CHECK_STATUS(sp_read_file(ctx, path, n - 1, &got, &len), SP_ERR_LIMIT);
        free(want);
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    SP_CHECK(system(cmd) == 0);
    FILE *p = popen("head -c 300000 /dev/zero", "r"); /* a pipe: read until it ends */
    SP_CHECK(p != NULL);
    if (p) {
        char path[64];
        snprintf(path, sizeof path, "/dev/fd/%d", fileno(p));
        char *got = NULL;
        size_t len = 0;
        SP_CHECK_STATUS(sp_read_file(ctx, path, (size_t)1 << 20, &got, &len), SP_OK);
        SP_CHECK_EQ_INT(len, 300000);
        sp_free(got);
        pclose(p);
    }
}

static int alloc_calls;
static void *count_malloc(size_t n) {
    alloc_calls++;
    return malloc(n);
}
static void *count_realloc(void *p, size_t n) {
    alloc_calls++;
    return realloc(p, n);
}

static void test_allocator_and_plan_json(void) {
    SP_CHECK_STATUS(sp_set_allocator(count_malloc, NULL, free), SP_ERR_INVALID_ARG);
    SP_CHECK_STATUS(sp_set_allocator(count_malloc, count_realloc, free), SP_OK);
    const char *json =
        "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"tiny\","
        "\"micro_batch_size\":1,\"layers\":[{\"name\":\"a\",\"fwd_ms\":1,"
        "\"bwd_ms\":2,\"param_bytes\":10},{\"name\":\"b\",\"fwd_ms\":1,\"bwd_ms\":2}]}";
    sp_profile *p = NULL;
    SP_CHECK_STATUS(sp_profile_parse(ctx, "tiny.json", json, strlen(json), &p), SP_OK);
    SP_CHECK(alloc_calls > 0);
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.stages = 2;
    sp_plan *plan = NULL;
    SP_CHECK_STATUS(sp_partition(ctx, p, &o, &plan), SP_OK);
    SP_CHECK_STATUS(sp_plan_set_command(ctx, plan, "stagepart partition tiny.json -s 2"), SP_OK);
    char *text = NULL;
    SP_CHECK_STATUS(sp_plan_to_json(ctx, plan, &text), SP_OK);
    sp_set_allocator(NULL, NULL, NULL);
    cJSON *root = cJSON_Parse(text);
    SP_CHECK(root != NULL);
    const char *keys[] = {"format",
                          "version",
                          "model",
                          "solver",
                          "objective",
                          "optimal",
                          "micro_batches",
                          "profile_sha256",
                          "bottleneck_ms",
                          "lower_bound_ms",
                          "mean_ms",
                          "stddev_ms",
                          "imbalance",
                          "solve_ms",
                          "stages",
                          "generator",
                          "even_split_bottleneck_ms",
                          "memory_limit_bytes"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        SP_CHECK_MSG(cJSON_GetObjectItemCaseSensitive(root, keys[i]) != NULL, "no %s", keys[i]);
    SP_CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(root, "format")->valuestring,
                    "stagepart-plan") == 0);
    SP_CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(root, "profile_sha256")->valuestring,
                    sp_profile_get_sha256(p)) == 0);
    cJSON *gen = cJSON_GetObjectItemCaseSensitive(root, "generator");
    SP_CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(gen, "command")->valuestring,
                    "stagepart partition tiny.json -s 2") == 0);
    cJSON *stages = cJSON_GetObjectItemCaseSensitive(root, "stages");
    SP_CHECK_EQ_INT(cJSON_GetArraySize(stages), 2);
    const char *stage_keys[] = {"index",     "device", "first_layer", "last_layer", "first_name",
                                "last_name", "fwd_ms", "bwd_ms",      "time_ms",    "memory_bytes"};
    cJSON *s1 = cJSON_GetArrayItem(stages, 1);
    for (size_t i = 0; i < sizeof stage_keys / sizeof stage_keys[0]; i++)
        SP_CHECK_MSG(cJSON_GetObjectItemCaseSensitive(s1, stage_keys[i]) != NULL, "no %s",
                     stage_keys[i]);
    SP_CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(s1, "first_name")->valuestring, "b") == 0);
    SP_CHECK(cJSON_GetObjectItemCaseSensitive(s1, "time_ms")->valuedouble == 3.0);
    SP_CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "memory_limit_bytes")));
    cJSON_Delete(root);
    sp_free(text);
    sp_plan_destroy(plan);
    sp_profile_destroy(p);
}

/* a profile of 2,000 layers under a budget below what it needs: refused naming the budget and
 * the file, every block given back; without a budget it reads */
static void test_memory_budget(void) {
    size_t cap = 2000 * 64 + 256, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text + len, cap - len,
                            "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"m\","
                            "\"micro_batch_size\":1,\"layers\":[");
    for (int i = 0; i < 2000; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "%s{\"name\":\"l%d\",\"fwd_ms\":1,\"bwd_ms\":2}", i ? "," : "", i);
    len += (size_t)snprintf(text + len, cap - len, "]}");
    size_t before = sp_memory_in_use();
    sp_profile *p = NULL;
    sp_set_memory_budget(before + 64 * 1024);
    SP_CHECK_STATUS(sp_profile_parse(ctx, "budget.json", text, len, &p), SP_ERR_LIMIT);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "over the memory budget");
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "budget.json");
    SP_CHECK_EQ_INT(sp_memory_in_use(), before);
    sp_set_memory_budget(0);
    SP_CHECK_STATUS(sp_profile_parse(ctx, "budget.json", text, len, &p), SP_OK);
    SP_CHECK(sp_memory_in_use() > before + 64 * 1024);
    sp_profile_destroy(p);
    SP_CHECK_EQ_INT(sp_memory_in_use(), before);
    SP_CHECK(sp_memory_limit() > 0);
    free(text);
}

/* The parse arena: cJSON's nodes come from it while entered, what does not fit spills to the
 * counted allocator, frees of either kind are right, and leaving gives everything back. */
static void test_parse_arena(void) {
    size_t before = sp_memory_in_use();
    struct sp_parse_arena arena;
    SP_CHECK(sp_parse_arena_init(&arena, 512));
    char text[4096];
    size_t len = (size_t)snprintf(text, sizeof text, "{\"name\":\"");
    for (int i = 0; i < 1000; i++) /* a string longer than the arena: it spills */
        text[len++] = (char)('a' + i % 26);
    len += (size_t)snprintf(text + len, sizeof text - len, "\",\"n\":[1,2,3],\"x\":2.5}");
    for (int round = 0; round < 3; round++) {
        sp_parse_arena_enter(&arena);
        cJSON *v = cJSON_ParseWithLength(text, len);
        SP_CHECK(v != NULL);
        SP_CHECK(arena.used > 0 && arena.used <= arena.cap);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
        SP_CHECK(cJSON_IsString(name) && strlen(name->valuestring) == 1000);
        SP_CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(v, "n")) == 3);
        SP_CHECK(cJSON_GetObjectItemCaseSensitive(v, "x")->valuedouble == 2.5);
        SP_CHECK(!sp_parse_arena_holds_all(&arena)); /* the long name spilled */
        cJSON_Delete(v);
        sp_parse_arena_leave();
        SP_CHECK_EQ_INT(arena.used, 0);
    }
    size_t with_arena = sp_memory_in_use();
    for (int round = 0; round < 3; round++) { /* a tree the arena holds: leaving frees it */
        sp_parse_arena_enter(&arena);
        cJSON *v = cJSON_Parse("{\"a\":[1,2],\"b\":\"xy\"}");
        SP_CHECK(v != NULL && sp_parse_arena_holds_all(&arena));
        SP_CHECK_EQ_INT(sp_memory_in_use(), with_arena);
        sp_parse_arena_leave();
    }
    sp_parse_arena_release(&arena);
    SP_CHECK_EQ_INT(sp_memory_in_use(), before);
    /* outside any arena cJSON allocates as before */
    cJSON *v = cJSON_Parse("{\"a\":1}");
    SP_CHECK(v != NULL && sp_memory_in_use() > before);
    cJSON_Delete(v);
    SP_CHECK_EQ_INT(sp_memory_in_use(), before);
}

/* Python users' patterns as POSIX extended regexes: translated, then matched by regcomp as Python's
 * re would match them; Python-only syntax refused by name */
static void test_ere_translate(void) {
    const struct {
        const char *in, *out, *match, *miss;
    } ok[] = {
        {"layers\\.\\d+", "layers\\.[0-9]+", "layers.12", "layers.x"},
        {"^\\w+/fwd$", "^[[:alnum:]_]+/fwd$", "block_3/fwd", "block-3/fwd"},
        {"a\\sb", "a[[:space:]]b", "a b", "ab"},
        {"[\\d.]+", "[0-9.]+", "1.5", "x"},
        {"[^\\s]x", "[^[:space:]]x", "ax", " x"},
        {"[[:alpha:]\\d]", "[[:alpha:]0-9]", "7", "-"},
        {"[]\\w]", "[][:alnum:]_]", "]", "-"},
        {"\\D\\W\\S", "[^0-9][^[:alnum:]_][^[:space:]]", "a-b", "1-b"},
        {"x\\*?", "x\\*?", "x*", "y"}, /* an escaped star then ?: no lazy quantifier */
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        char *out = NULL;
        SP_CHECK_STATUS(sp_ere_translate(ctx, "--layer-pattern", ok[i].in, &out), SP_OK);
        SP_CHECK_MSG(out && strcmp(out, ok[i].out) == 0, "%s -> %s", ok[i].in, out ? out : "");
        regex_t re;
        if (out && regcomp(&re, out, REG_EXTENDED | REG_NOSUB) == 0) {
            SP_CHECK_MSG(regexec(&re, ok[i].match, 0, NULL, 0) == 0, "%s vs %s", out, ok[i].match);
            SP_CHECK_MSG(regexec(&re, ok[i].miss, 0, NULL, 0) != 0, "%s vs %s", out, ok[i].miss);
            regfree(&re);
        } else {
            SP_CHECK_MSG(0, "%s does not compile", out ? out : "");
        }
        sp_free(out);
    }
    const struct {
        const char *in, *why;
    } bad[] = {
        {"(?:ab)+", "'(?' (Python's (?:...)"},
        {"a+?", "'+?' (a lazy quantifier)"},
        {"\\bword", "'\\b' (a Python anchor)"},
        {"[\\D]", "'\\D' inside [...]"},
        {"[a\\]]", "put ']' first"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *out = (char *)1;
        SP_CHECK_STATUS(sp_ere_translate(ctx, "--layer-pattern", bad[i].in, &out),
                        SP_ERR_INVALID_ARG);
        SP_CHECK(out == NULL);
        SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), bad[i].why);
    }
}

/* ---- the splitter (core/json_split.c) against cJSON's whole-document parse */

struct split_count {
    const char *doc;
    size_t len, members, elements;
};

static sp_status count_element(void *arg, const char *v, size_t n) {
    struct split_count *c = arg;
    cJSON *x = NULL;
    sp_status st = sp_json_parse_piece(ctx, "doc", c->doc, c->len, v, n, &x);
    cJSON_Delete(x);
    c->elements++;
    return st;
}

/* every member parsed as a piece, and an array member's elements one by one */
static sp_status count_member(void *arg, const char *key, size_t key_len, const char *v, size_t n) {
    (void)key;
    (void)key_len;
    struct split_count *c = arg;
    c->members++;
    if (n && v[0] == '[')
        return sp_json_split_array(ctx, "doc", c->doc, c->len, v, n, count_element, c);
    cJSON *x = NULL;
    sp_status st = sp_json_parse_piece(ctx, "doc", c->doc, c->len, v, n, &x);
    cJSON_Delete(x);
    return st;
}

static bool split_accepts(const char *doc, size_t len, struct split_count *c) {
    *c = (struct split_count){doc, len, 0, 0};
    return !memchr(doc, 0, len) &&
           sp_json_split_object(ctx, "doc", doc, len, count_member, c) == SP_OK;
}

static void test_json_split(void) {
    const char *doc = "{\"a\": [1, {\"b\": \"]}\\\"[\"}, [2, [3]], \"x\\\\\"], \"traceEvents\""
                      ": [{\"ph\": \"X\", \"args\": {\"k\": [true, null, -1.5e3]}}, {}], \"n\": 7}";
    struct split_count c;
    SP_CHECK(split_accepts(doc, strlen(doc), &c));
    SP_CHECK(c.members == 3 && c.elements == 6); /* a: 4 elements, traceEvents: 2 */
    /* a malformed piece is reported where it is in the document */
    const char *bad = "{\"traceEvents\": [{\"ph\": \"X\"},\n {\"ph\": tru}]}";
    SP_CHECK(!split_accepts(bad, strlen(bad), &c));
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "doc:2:9: malformed JSON near 'tru}]}'");
    /* Mutations of the document: dropping, doubling or replacing one byte by a structural one
     * must be accepted by the splitter exactly when cJSON accepts the whole document (an object
     * at the root; the splitter takes the first of repeated keys, as cJSON reads them). */
    const char repl[] = "{}[]\",:\\ 0a";
    size_t n = strlen(doc), tried = 0, disagree = 0;
    char *m = malloc(2 * n + 2);
    for (size_t i = 0; i < n; i++)
        for (size_t r = 0; r < sizeof repl + 1; r++) {
            size_t len = 0;
            if (r == sizeof repl - 1) { /* drop byte i */
                memcpy(m, doc, i);
                memcpy(m + i, doc + i + 1, n - i - 1);
                len = n - 1;
            } else if (r == sizeof repl) { /* double byte i */
                memcpy(m, doc, i + 1);
                memcpy(m + i + 1, doc + i, n - i);
                len = n + 1;
            } else {
                memcpy(m, doc, n);
                m[i] = repl[r];
                len = n;
            }
            m[len] = '\0';
            cJSON *whole = cJSON_ParseWithLengthOpts(m, len + 1, NULL, 1);
            bool want = whole && cJSON_IsObject(whole);
            cJSON_Delete(whole);
            bool got = split_accepts(m, len, &c);
            tried++;
            if (want != got) {
                disagree++;
                fprintf(stderr, "splitter %s, cJSON %s: %s\n", got ? "accepts" : "refuses",
                        want ? "accepts" : "refuses", m);
            }
        }
    free(m);
    SP_CHECK(tried > 1000 && disagree == 0);
}

/* The library sets no page policy on its host's memory (docs/security.md): a large block from
 * the default allocator carries no "hg" flag (VmFlags in /proc/self/smaps: MADV_HUGEPAGE). */
static void test_no_page_policy(void) {
    FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    FILE *maps = thp ? fopen("/proc/self/smaps", "r") : NULL;
    if (thp)
        fclose(thp);
    if (!maps)
        return; /* a kernel without them, or not Linux */
    fclose(maps);
    size_t size = (size_t)8 << 20;
    char *block = sp_malloc(size);
    SP_CHECK(block != NULL);
    memset(block, 1, size);
    uintptr_t at = (uintptr_t)block + size / 2;
    maps = fopen("/proc/self/smaps", "r");
    char line[512];
    bool inside = false, found = false, huge = false;
    while (maps && fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = at >= lo && at < hi;
        else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            found = true;
            huge = strstr(line, " hg") != NULL;
        }
    }
    if (maps)
        fclose(maps);
    SP_CHECK(found);
    SP_CHECK(!huge);
    sp_free(block);
}

/* sp_round_ticks against llround, which it replaces in the partitioner's passes: halves and
 * their neighbours, every magnitude from tiny to past 2^62, both signs, and a million draws */
static void check_rounds_as_llround(double x, unsigned *wrong) {
    if (sp_round_ticks(x) != (int64_t)llround(x) && (*wrong)++ < 5)
        fprintf(stderr, "  sp_round_ticks(%.17g) = %lld, llround: %lld\n", x,
                (long long)sp_round_ticks(x), (long long)llround(x));
}

static void test_round_ticks(void) {
    unsigned wrong = 0;
    const double fixed[] = {0.0,
                            -0.0,
                            0.5,
                            -0.5,
                            1.5,
                            -1.5,
                            2.5,
                            -2.5,
                            0.49999999999999994,
                            -0.49999999999999994,
                            4503599627370495.5,
                            -4503599627370495.5,
                            4503599627370496.0,
                            9007199254740993.0,
                            4611686018427387904.0,
                            -4611686018427387904.0,
                            9.2e18,
                            -9.2e18,
                            DBL_MIN,
                            -DBL_MIN};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        check_rounds_as_llround(fixed[i], &wrong);
    for (int e = -60; e <= 63; e++) /* each power of two's halves and their neighbours */
        for (int k = 0; k < 64; k++) {
            double half = ldexp(1.0, e) + k + 0.5;
            check_rounds_as_llround(half, &wrong);
            check_rounds_as_llround(-half, &wrong);
            check_rounds_as_llround(nextafter(half, 0), &wrong);
            check_rounds_as_llround(nextafter(half, (double)INFINITY), &wrong);
            check_rounds_as_llround(-nextafter(half, 0), &wrong);
        }
    srand(29);
    for (int i = 0; i < 1000000; i++) { /* milliseconds as profiles hold them, in ticks */
        double ms = (double)rand() / RAND_MAX * ldexp(1.0, rand() % 40 - 20);
        check_rounds_as_llround(ms * SP_TICKS_PER_MS, &wrong);
        check_rounds_as_llround(-ms * SP_TICKS_PER_MS, &wrong);
    }
    SP_CHECK_EQ_INT(wrong, 0);
    SP_CHECK_EQ_INT(sp_ms_to_ticks(0.0000005), 1); /* half a tick rounds away from zero */
    SP_CHECK_EQ_INT(sp_ms_to_ticks(1.25), 1250000);
}

int main(void) {
    sp_ctx_create(&ctx);
    test_round_ticks();
    test_no_page_policy();
    test_json_split();
    test_parse_arena();
    test_ere_translate();
    test_memory_budget();
    test_status();
    test_bytes();
    test_atomic_write();
    test_read_file();
    test_allocator_and_plan_json();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_core");
}
