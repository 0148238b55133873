/* tests/tools/json_diff.c: compare two JSON documents with a numeric tolerance, for golden
 * tests. Keys named with --ignore (and, by default, "generator" and "solve_ms", which record
 * when and how fast a plan was made) are skipped. Prints the path of every difference.
 *
 * usage: json_diff EXPECTED ACTUAL [--ignore KEY]... [--rel-tol X]
 * exit:  0 equal, 1 different, 2 usage or unreadable input */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *ignored[32] = {"generator", "solve_ms"};
static int n_ignored = 2;
static double rel_tol = 1e-9;
static int differences;

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (size_t r; (r = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
        len += r;
        if (len + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

static int is_ignored(const char *key) {
    for (int i = 0; i < n_ignored; i++)
        if (strcmp(ignored[i], key) == 0)
            return 1;
    return 0;
}

static void report(const char *path, const char *what) {
    if (differences++ < 20)
        printf("%s: %s\n", *path ? path : "(root)", what);
}

static void compare(const cJSON *a, const cJSON *b, const char *path) {
    char sub[1024], msg[512];
    if ((a->type & 0xff) != (b->type & 0xff)) {
        report(path, "different types");
        return;
    }
    if (cJSON_IsNumber(a)) {
        double x = a->valuedouble, y = b->valuedouble;
        double tol = rel_tol * fmax(fabs(x), fabs(y)) + 1e-12;
        if (fabs(x - y) > tol) {
            snprintf(msg, sizeof msg, "expected %.17g, got %.17g", x, y);
            report(path, msg);
        }
    } else if (cJSON_IsString(a)) {
        if (strcmp(a->valuestring, b->valuestring) != 0) {
            snprintf(msg, sizeof msg, "expected \"%.200s\", got \"%.200s\"", a->valuestring,
                     b->valuestring);
            report(path, msg);
        }
    } else if (cJSON_IsArray(a)) {
        int na = cJSON_GetArraySize(a), nb = cJSON_GetArraySize(b);
        if (na != nb) {
            snprintf(msg, sizeof msg, "expected %d elements, got %d", na, nb);
            report(path, msg);
        }
        const cJSON *x = a->child, *y = b->child;
        for (int i = 0; x && y; i++, x = x->next, y = y->next) {
            snprintf(sub, sizeof sub, "%s[%d]", path, i);
            compare(x, y, sub);
        }
    } else if (cJSON_IsObject(a)) {
        for (const cJSON *x = a->child; x; x = x->next) {
            if (is_ignored(x->string))
                continue;
            snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", x->string);
            const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
            if (!y)
                report(sub, "missing");
            else
                compare(x, y, sub);
        }
        for (const cJSON *y = b->child; y; y = y->next) {
            if (!is_ignored(y->string) && !cJSON_GetObjectItemCaseSensitive(a, y->string)) {
                snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", y->string);
                report(sub, "unexpected");
            }
        }
    } else if (cJSON_IsBool(a) && cJSON_IsTrue(a) != cJSON_IsTrue(b)) {
        report(path, "different booleans");
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fputs("usage: json_diff EXPECTED ACTUAL [--ignore KEY]... [--rel-tol X]\n", stderr);
        return 2;
    }
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--ignore") == 0 && n_ignored < 32)
            ignored[n_ignored++] = argv[i + 1];
        else if (strcmp(argv[i], "--rel-tol") == 0)
            rel_tol = strtod(argv[i + 1], NULL);
    }
    char *ta = slurp(argv[1]), *tb = slurp(argv[2]);
    cJSON *a = ta ? cJSON_Parse(ta) : NULL, *b = tb ? cJSON_Parse(tb) : NULL;
    if (!a || !b) {
        fprintf(stderr, "json_diff: cannot read or parse %s\n", !a ? argv[1] : argv[2]);
        return 2;
    }
    compare(a, b, "");
    if (differences > 20)
        printf("... %d differences in all\n", differences);
    cJSON_Delete(a);
    cJSON_Delete(b);
    free(ta);
    free(tb);
    return differences ? 1 : 0;
}
