/* formats/megatron_layout.c: Megatron-LM's --pipeline-model-parallel-layout strings
 * (megatron/core/transformer/pipeline_parallel_layer_layout.py; docs/export.md).
 *
 * Grammar, as Megatron parses it (parse_str_to_list): commas are cosmetic and removed first;
 * "(...)*N" repeats its non-empty text N times, N = 0 included (no nesting); then "X*N" repeats
 * any one character, "|" included; "|" separates segments (virtual stages, chunk-major: segment
 * i is chunk i / P on pipeline rank i mod P). Symbols: E embedding, t transformer layer, m
 * multi-token prediction, L loss and output; anything else, a space or "()" included, is an
 * error naming the first such character. Megatron's validation then wants E first and L last,
 * each exactly once. Parsing here follows the same steps so the strings stagepart writes are
 * checked against the reader users' Megatron will apply. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "layout_impl.h"

/* A layout names every layer once, so 2^20 symbols is far beyond any model (the largest have a
 * few hundred layers) while keeping a hostile string's cost to milliseconds. */
#define SP_LAYOUT_MAX_EXPANDED ((size_t)1 << 20)

static sp_status expand(sp_ctx *ctx, const char *in, struct sp_strbuf *out, bool groups) {
    size_t n = strlen(in);
    for (size_t i = 0; i < n;) {
        if (groups && in[i] == '(') {
            const char *close = strchr(in + i, ')');
            if (!close)
                return sp_fail(ctx, SP_ERR_INVALID_ARG, "layout: '(' at offset %zu is never closed",
                               i);
            if (memchr(in + i + 1, '(', (size_t)(close - in - i - 1)))
                return sp_fail(ctx, SP_ERR_INVALID_ARG,
                               "layout: nested parentheses at offset %zu (Megatron does not "
                               "nest repeats)",
                               i);
            size_t body = (size_t)(close - in) - i - 1;
            if (body == 0)
                return sp_fail(ctx, SP_ERR_INVALID_ARG,
                               "layout: '()' at offset %zu repeats nothing (Megatron reads an "
                               "empty group as the characters '(' and ')', which are no layers)",
                               i);
            if (close[1] != '*' || !isdigit((unsigned char)close[2]))
                return sp_fail(ctx, SP_ERR_INVALID_ARG,
                               "layout: '(...)' at offset %zu must be followed by *N", i);
            char *end = NULL;
            unsigned long times = strtoul(close + 2, &end, 10);
            if (times > 1000000)
                return sp_fail(ctx, SP_ERR_INVALID_ARG,
                               "layout: repeat count at offset %zu must be in [0, 1000000]",
                               (size_t)(close + 2 - in));
            /* refuse before expanding: the work must stay proportional to what is kept */
            if (body && times > (SP_LAYOUT_MAX_EXPANDED - out->len) / body)
                return sp_fail(ctx, SP_ERR_LIMIT, "layout: expands beyond %zu symbols",
                               SP_LAYOUT_MAX_EXPANDED);
            for (unsigned long k = 0; k < times; k++)
                sp_strbuf_append(out, in + i + 1, body);
            i = (size_t)(end - in);
        } else if (!groups && in[i + 1] == '*') { /* any character, '|' too, as Megatron */
            char *end = NULL;
            if (!isdigit((unsigned char)in[i + 2]))
                return sp_fail(ctx, SP_ERR_INVALID_ARG,
                               "layout: '%c*' at offset %zu needs a repeat count", in[i], i);
            unsigned long times = strtoul(in + i + 2, &end, 10);
            if (times > 1000000)
                return sp_fail(ctx, SP_ERR_INVALID_ARG, "layout: repeat count too large");
            if (times > SP_LAYOUT_MAX_EXPANDED - out->len)
                return sp_fail(ctx, SP_ERR_LIMIT, "layout: expands beyond %zu symbols",
                               SP_LAYOUT_MAX_EXPANDED);
            for (unsigned long k = 0; k < times; k++)
                sp_strbuf_append(out, in + i, 1);
            i = (size_t)(end - in);
        } else {
            if (out->len >= SP_LAYOUT_MAX_EXPANDED)
                return sp_fail(ctx, SP_ERR_LIMIT, "layout: expands beyond %zu symbols",
                               SP_LAYOUT_MAX_EXPANDED);
            sp_strbuf_append(out, in + i, 1);
            i++;
        }
    }
    return out->oom ? sp_oom(ctx, "expanding a layout") : SP_OK;
}

void sp_layout_release(struct sp_layout *l) {
    sp_free(l->symbols);
    sp_free(l->start);
    memset(l, 0, sizeof *l);
}

sp_status sp_layout_parse(sp_ctx *ctx, const char *text, struct sp_layout *out) {
    memset(out, 0, sizeof *out);
    if (!text || !*text)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "layout: empty string");
    struct sp_strbuf nocomma, groups, flat;
    sp_strbuf_init(&nocomma);
    sp_strbuf_init(&groups);
    sp_strbuf_init(&flat);
    for (const char *c = text; *c; c++) /* commas only: a space is an error, as in Megatron */
        if (*c != ',')
            sp_strbuf_append(&nocomma, c, 1);
    sp_status st = nocomma.oom ? sp_oom(ctx, "parsing a layout") : SP_OK;
    if (st == SP_OK)
        st = expand(ctx, sp_strbuf_str(&nocomma), &groups, true);
    if (st == SP_OK)
        st = expand(ctx, sp_strbuf_str(&groups), &flat, false);
    if (st == SP_OK) {
        const char *s = sp_strbuf_str(&flat);
        size_t len = strlen(s), segments = 1;
        for (size_t i = 0; i < len && st == SP_OK; i++) { /* the first bad character */
            if (s[i] == '|')
                segments++;
            else if (!strchr("EtmL", s[i]) && isprint((unsigned char)s[i]))
                st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                             "layout: unknown symbol '%c' (expected E, t, m, L, |, (...)*N or "
                             "X*N)",
                             s[i]);
            else if (!strchr("EtmL", s[i]))
                st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                             "layout: unknown symbol, byte 0x%02x (expected E, t, m, L, |, "
                             "(...)*N or X*N)",
                             (unsigned)(unsigned char)s[i]);
        }
        out->symbols = sp_strdup(s);
        out->start = sp_mallocarray(segments + 1, sizeof *out->start);
        if (st == SP_OK && (!out->symbols || !out->start))
            st = sp_oom(ctx, "parsing a layout");
        if (st == SP_OK) {
            out->segments = segments;
            size_t k = 0;
            out->start[k++] = 0;
            for (size_t i = 0; i < len; i++)
                if (s[i] == '|')
                    out->start[k++] = i + 1;
            out->start[k] = len + 1; /* segment k is symbols[start[k] .. start[k+1] - 1) */
        }
    }
    sp_strbuf_release(&nocomma);
    sp_strbuf_release(&groups);
    sp_strbuf_release(&flat);
    if (st != SP_OK)
        sp_layout_release(out);
    return st;
}

size_t sp_layout_count(const struct sp_layout *l, size_t segment, char symbol) {
    size_t n = 0;
    for (size_t i = l->start[segment]; i + 1 < l->start[segment + 1]; i++)
        n += l->symbols[i] == symbol;
    return n;
}

/* Megatron's chain: E, the transformer layers, the MTP layers after them, L. */
sp_status sp_layout_groups(sp_ctx *ctx, size_t n, const char *const *kinds,
                           const char *const *names, struct sp_layout_groups *g) {
    size_t first = n, last = 0;
    for (size_t l = 0; l < n; l++)
        if (strcmp(kinds[l], "transformer") == 0) {
            if (first == n)
                first = l;
            last = l;
        }
    if (first == n)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "Megatron layouts count transformer layers, and no layer has \"kind\": "
                       "\"transformer\"");
    /* Megatron's layout begins with the embedding and ends with the loss, each exactly once
     * (validate_layer_layout), so the profile needs a layer for each */
    if (first == 0)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "a Megatron layout begins with the embedding (E), and the profile's first "
                       "layer '%s' is already a transformer layer: profile the embedding too",
                       names[0]);
    for (size_t l = first; l <= last; l++)
        if (strcmp(kinds[l], "transformer") != 0)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layer '%s' (kind \"%s\") lies between transformer layers; a Megatron "
                           "layout has only E, t, m and L",
                           names[l], kinds[l]);
    size_t l_start = last + 1; /* the MTP layers follow the decoder ("decoder layers must be
                                * placed before MTP layers") */
    while (l_start < n && strcmp(kinds[l_start], "mtp") == 0)
        l_start++;
    for (size_t l = 0; l < n; l++)
        if (strcmp(kinds[l], "mtp") == 0 && (l <= last || l >= l_start))
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layer '%s' (kind \"mtp\") is not among the layers right after the "
                           "last transformer layer, where Megatron places multi-token prediction",
                           names[l]);
    if (l_start == n)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "a Megatron layout ends with the output and loss (L), and the profile's "
                       "last layer '%s' is a %s layer: profile the output layers too",
                       names[n - 1],
                       l_start == last + 1 ? "transformer" : "multi-token prediction");
    g->e_end = first;
    g->t_end = last + 1;
    g->l_start = l_start;
    return SP_OK;
}

static sp_status profile_groups(sp_ctx *ctx, const sp_profile *profile,
                                struct sp_layout_groups *g) {
    size_t n = sp_profile_get_layer_count(profile);
    const char **kinds = sp_mallocarray(n, sizeof *kinds),
               **names = sp_mallocarray(n, sizeof *names);
    sp_status st = kinds && names ? SP_OK : sp_oom(ctx, "reading a layout");
    for (size_t l = 0; st == SP_OK && l < n; l++) {
        kinds[l] = sp_profile_get_layer(profile, l)->kind;
        names[l] = sp_profile_get_layer(profile, l)->name;
    }
    if (st == SP_OK)
        st = sp_layout_groups(ctx, n, kinds, names, g);
    sp_free(kinds);
    sp_free(names);
    return st;
}

/* where a layout's walk over the profile stands */
struct layout_walk {
    const struct sp_layout_groups *g;
    size_t n, decoders, mtps; /* the profile's layers, transformer layers, MTP layers */
    size_t pos, t_seen, m_seen, m_segment;
    bool e_seen, l_seen;
};

/* one symbol of segment k: the layers it takes, or why Megatron would refuse it there */
static sp_status take_symbol(sp_ctx *ctx, struct layout_walk *w, char c, size_t k) {
    size_t decoders = w->decoders, mtps = w->mtps;
    if (c == 'E') {
        if (w->e_seen || w->pos != 0)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layout: E must come first, exactly once (segment %zu)", k);
        w->e_seen = true;
        w->pos = w->g->e_end;
    } else if (c == 't') {
        if (!w->e_seen)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layout: t before E (segment %zu); Megatron's layout begins with E", k);
        if (w->m_seen)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layout: t after m (segment %zu); Megatron places the decoder layers "
                           "before the MTP layers",
                           k);
        if (w->t_seen == decoders)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layout: more t than the profile's %zu transformer layers", decoders);
        w->pos = w->g->e_end + ++w->t_seen;
    } else if (c == 'm') {
        if (w->t_seen != decoders)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layout: m in segment %zu after %zu t; Megatron places the MTP layers "
                           "after all %zu decoder layers",
                           k, w->t_seen, decoders);
        if (w->m_seen == mtps)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layout: more m than the profile's %zu layers of kind \"mtp\"", mtps);
        if (w->m_segment != SIZE_MAX && w->m_segment != k)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layout: m in segments %zu and %zu; Megatron wants all MTP layers in "
                           "one virtual stage",
                           w->m_segment, k);
        w->m_segment = k;
        w->pos = w->g->t_end + ++w->m_seen;
    } else if (c == 'L') {
        bool late = w->l_seen || w->t_seen != decoders || w->m_seen != mtps;
        if (late && !mtps)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layout: L must come last, exactly once, after all %zu t (segment %zu "
                           "has it after %zu)",
                           decoders, k, w->t_seen);
        if (late)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layout: L must come last, exactly once, after all %zu t and %zu m "
                           "(segment %zu has it after %zu t and %zu m)",
                           decoders, mtps, k, w->t_seen, w->m_seen);
        w->l_seen = true;
        w->pos = w->n;
    }
    return SP_OK;
}

sp_status sp_megatron_layout_split(sp_ctx *ctx, const sp_profile *profile, const char *layout,
                                   size_t **first_layers, size_t *count) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!profile || !layout || !first_layers || !count)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_megatron_layout_split: NULL argument");
    *first_layers = NULL;
    *count = 0;
    struct sp_layout_groups g;
    sp_status st = profile_groups(ctx, profile, &g);
    if (st != SP_OK)
        return st;
    struct sp_layout lay;
    if ((st = sp_layout_parse(ctx, layout, &lay)) != SP_OK)
        return st;
    struct layout_walk w = {.g = &g,
                            .n = sp_profile_get_layer_count(profile),
                            .decoders = g.t_end - g.e_end,
                            .mtps = g.l_start - g.t_end,
                            .m_segment = SIZE_MAX};
    size_t *first = sp_mallocarray(lay.segments, sizeof *first);
    if (!first)
        st = sp_oom(ctx, "reading a layout");
    for (size_t k = 0; k < lay.segments && st == SP_OK; k++) {
        first[k] = w.pos; /* an empty segment (Megatron allows them) starts where the next does */
        for (size_t i = lay.start[k]; i + 1 < lay.start[k + 1] && st == SP_OK; i++)
            st = take_symbol(ctx, &w, lay.symbols[i], k);
    }
    if (st == SP_OK && (w.t_seen != w.decoders || w.m_seen != w.mtps || !w.l_seen || !w.e_seen))
        st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                     "layout: has %zu t and %zu m%s%s; Megatron's layout needs E first, then the "
                     "profile's %zu transformer layers, its %zu MTP layers, then L",
                     w.t_seen, w.m_seen, w.e_seen ? "" : ", no E", w.l_seen ? "" : ", no L",
                     w.decoders, w.mtps);
    size_t segments = lay.segments;
    sp_layout_release(&lay);
    if (st != SP_OK) {
        sp_free(first);
        return st;
    }
    *first_layers = first;
    *count = segments;
    return SP_OK;
}

/* ---- writing */

/* a symbol n times: "t" .. "ttt", then "t*N" */
static void symbols_text(struct sp_strbuf *sb, char c, size_t n) {
    if (n > 3)
        sp_strbuf_printf(sb, "%c*%zu", c, n);
    else
        for (size_t i = 0; i < n; i++)
            sp_strbuf_printf(sb, "%c", c);
}

/* segment text: "E", the t, the m, "L" */
static void segment_text(struct sp_strbuf *sb, bool e, size_t t, size_t m, bool l) {
    if (e)
        sp_strbuf_puts(sb, "E");
    symbols_text(sb, 't', t);
    symbols_text(sb, 'm', m);
    if (l)
        sp_strbuf_puts(sb, "L");
}

void sp_layout_write(struct sp_strbuf *value, size_t K, const bool *e, const size_t *t,
                     const size_t *m, const bool *l) {
    for (size_t k = 0; k < K;) {
        size_t run = 1;
        while (k + run < K - 1 && t[k + run] == t[k] && !e[k + run] && !l[k + run] && !e[k] &&
               !l[k] && !m[k] && !m[k + run])
            run++;
        if (run >= 3) {
            sp_strbuf_puts(value, "(");
            segment_text(value, false, t[k], 0, false);
            sp_strbuf_printf(value, "|)*%zu,", run); /* the comma is cosmetic: it shows the next
                                                        segment is not part of the repeat */
            k += run;
            continue;
        }
        segment_text(value, e[k], t[k], m[k], l[k]);
        if (k + 1 < K)
            sp_strbuf_puts(value, "|");
        k++;
    }
}
