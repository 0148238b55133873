/* profiler/module_choice.c: the level of the module tree that becomes the layers, and the tree
 * as text (profiler/modules.h; the rule is docs/profiling.md's "Layers from module ranges"). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute_impl.h"
#include "modules.h"

/* whether module id's class repeats among its siblings (the roots, for a root): one of a stack
 * of blocks (BertLayer_0 .. BertLayer_11) */
static bool repeated(const struct sp_trace *t, const struct sp_module_tree *tree, uint32_t id) {
    const struct sp_module *m = tree->modules;
    int32_t p = m[id].parent;
    const uint32_t *sib = p >= 0 ? m[p].children : tree->roots;
    size_t n = p >= 0 ? m[p].n_children : tree->n_roots, len = 0, same = 0;
    const char *c = sp_module_class(t->strings[m[id].name], &len);
    for (size_t i = 0; i < n && same < 2; i++) {
        size_t l2 = 0;
        const char *c2 = sp_module_class(t->strings[m[sib[i]].name], &l2);
        same += l2 == len && strncmp(c, c2, len) == 0;
    }
    return same >= 2;
}

/* A module to open rather than take as a layer: a container class, or one with no work of its
 * own, unless it is one of a stack of repeated blocks (BertLayer does no work itself, its
 * attention and MLP children do; opening it would cut inside encoder layers). */
static bool is_container(const struct sp_trace *t, const struct sp_module_tree *tree, uint32_t id) {
    const struct sp_module *m = &tree->modules[id];
    const char *name = t->strings[m->name];
    if (!m->n_children)
        return false;
    if (sp_module_class_is(name, "Sequential") || sp_module_class_is(name, "ModuleList") ||
        sp_module_class_is(name, "ModuleDict"))
        return true;
    return m->self_kernels == 0 && m->self_ms == 0 && !repeated(t, tree, id);
}

struct id_list {
    uint32_t *ids;
    size_t n, cap;
};

static bool list_push(struct id_list *l, uint32_t id) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        uint32_t *g = sp_realloc(l->ids, cap * sizeof *g);
        if (!g)
            return false;
        l->ids = g;
        l->cap = cap;
    }
    l->ids[l->n++] = id;
    return true;
}

bool sp_module_is_depth(const char *how) {
    if (!*how)
        return false;
    for (const char *p = how; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    return true;
}

static bool parse_depth(const char *how, uint32_t *depth) {
    if (!sp_module_is_depth(how) || strlen(how) > 6)
        return false;
    *depth = (uint32_t)atoi(how);
    return true;
}

/* the chosen modules in call order; expanded (may be NULL) the modules auto replaced by their
 * children */
static sp_status choose(sp_ctx *ctx, const struct sp_trace *t, const struct sp_module_tree *tree,
                        const char *how, struct id_list *out, struct id_list *expanded) {
    const struct sp_module *m = tree->modules;
    uint32_t depth = 0;
    bool ok = true;
    if (strcmp(how, "auto") == 0) {
        for (size_t r = 0; r < tree->n_roots && ok; r++)
            ok = list_push(out, tree->roots[r]);
        for (bool changed = true; changed && ok;) {
            changed = false;
            /* the one to open: a container, else one holding more than half the time */
            size_t open = SIZE_MAX, biggest = SIZE_MAX;
            for (size_t i = 0; i < out->n && open == SIZE_MAX; i++) {
                const struct sp_module *x = &m[out->ids[i]];
                if (is_container(t, tree, out->ids[i]))
                    open = i;
                else if (x->n_children &&
                         (biggest == SIZE_MAX || x->total_ms > m[out->ids[biggest]].total_ms))
                    biggest = i;
            }
            if (open == SIZE_MAX && biggest != SIZE_MAX &&
                m[out->ids[biggest]].total_ms > 0.5 * tree->roots_ms)
                open = biggest;
            if (open == SIZE_MAX)
                break;
            const struct sp_module *x = &m[out->ids[open]];
            struct id_list next = {0};
            for (size_t i = 0; i < out->n && ok; i++)
                if (i != open)
                    ok = list_push(&next, out->ids[i]);
                else
                    for (size_t c = 0; c < x->n_children && ok; c++)
                        ok = list_push(&next, x->children[c]);
            ok = ok && (!expanded || list_push(expanded, out->ids[open]));
            sp_free(out->ids);
            *out = next;
            changed = true;
            ok = ok && sp_module_sort_call_order(m, out->ids, out->n);
        }
    } else if (parse_depth(how, &depth)) {
        uint32_t deepest = 0;
        for (size_t i = 0; i < tree->n; i++)
            deepest = m[i].depth > deepest ? m[i].depth : deepest;
        if (depth > deepest)
            return sp_fail(ctx, SP_ERR_SCHEMA,
                           "%s: --layers %s: no module at that depth (the module tree's depths "
                           "are 0 to %u; --list-modules shows it)",
                           t->file, how, deepest);
        for (size_t i = 0; i < tree->n && ok; i++)
            if (m[i].depth == depth || (m[i].depth < depth && m[i].n_children == 0))
                ok = list_push(out, (uint32_t)i);
        ok = ok && sp_module_sort_call_order(m, out->ids, out->n);
    } else {
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "--layers '%s': expected auto, a depth in the module tree (0, 1, ...) or "
                       "a regular expression",
                       how);
    }
    if (!ok)
        return sp_oom(ctx, "choosing the layers");
    return SP_OK;
}

/* whether a descendant of module m is an attention module (by its class name) */
static bool has_attention(const struct sp_trace *t, const struct sp_module_tree *tree, uint32_t m,
                          uint32_t depth) {
    const struct sp_module *x = &tree->modules[m];
    for (size_t i = 0; i < x->n_children && depth < 64; i++) {
        const char *c = t->strings[tree->modules[x->children[i]].name];
        if (sp_module_class_has(c, "attention") || sp_module_class_has(c, "attn") ||
            has_attention(t, tree, x->children[i], depth + 1))
            return true;
    }
    return false;
}

/* a chosen module whose class repeats among the chosen, with attention inside: a block */
static bool is_block(const struct sp_trace *t, const struct sp_module_tree *tree,
                     const struct id_list *chosen, uint32_t m) {
    size_t len = 0, twins = 0;
    const char *c = sp_module_class(t->strings[tree->modules[m].name], &len);
    for (size_t i = 0; i < chosen->n && twins < 2; i++) {
        size_t l2 = 0;
        const char *c2 = sp_module_class(t->strings[tree->modules[chosen->ids[i]].name], &l2);
        twins += l2 == len && strncmp(c, c2, len) == 0;
    }
    return twins >= 2 && has_attention(t, tree, m, 0);
}

sp_status sp_module_choose(sp_ctx *ctx, const struct sp_trace *t, const struct sp_module_tree *tree,
                           const char *how, uint8_t **layer_names, char *said, size_t said_size) {
    *layer_names = NULL;
    struct id_list chosen = {0}, expanded = {0};
    sp_status st = choose(ctx, t, tree, how, &chosen, &expanded);
    uint8_t *flags = st == SP_OK ? sp_calloc(t->n_strings ? t->n_strings : 1, 1) : NULL;
    if (st == SP_OK && !flags)
        st = sp_oom(ctx, "choosing the layers");
    double covered = 0;
    for (size_t i = 0; st == SP_OK && i < chosen.n; i++) {
        flags[tree->modules[chosen.ids[i]].name] =
            is_block(t, tree, &chosen, chosen.ids[i]) ? SP_MODULE_BLOCK : SP_MODULE_LAYER;
        covered += tree->modules[chosen.ids[i]].total_ms;
    }
    if (st == SP_OK && said && said_size) {
        struct sp_strbuf sb;
        sp_strbuf_init(&sb);
        sp_strbuf_printf(&sb, "%zu modules (%s", chosen.n,
                         strcmp(how, "auto") == 0 ? "chosen automatically" : "depth ");
        if (strcmp(how, "auto") != 0)
            sp_strbuf_puts(&sb, how);
        for (size_t i = 0; i < expanded.n && i < 4; i++)
            sp_strbuf_printf(&sb, "%s%s", i ? ", " : "; opened ",
                             sp_module_layer_name(t->strings[tree->modules[expanded.ids[i]].name]));
        if (expanded.n > 4)
            sp_strbuf_printf(&sb, " and %zu more", expanded.n - 4);
        if (tree->n_shared)
            sp_strbuf_printf(&sb, "; %s%s called inside several modules, part of each caller",
                             sp_module_layer_name(tree->first_shared),
                             tree->n_shared > 1 ? " and others" : "");
        sp_strbuf_printf(&sb, "), %.1f%% of the module time",
                         tree->roots_ms > 0 ? 100 * covered / tree->roots_ms : 0.0);
        snprintf(said, said_size, "%s", sb.oom ? "modules" : sp_strbuf_str(&sb));
        sp_strbuf_release(&sb);
    }
    sp_free(chosen.ids);
    sp_free(expanded.ids);
    if (st != SP_OK) {
        sp_free(flags);
        return st;
    }
    *layer_names = flags;
    return SP_OK;
}

sp_status sp_module_tree_text(sp_ctx *ctx, const struct sp_trace *t,
                              const struct sp_module_tree *tree, const char *how, char **text) {
    *text = NULL;
    uint8_t *flags = NULL;
    sp_status st = sp_module_choose(ctx, t, tree, how, &flags, NULL, 0);
    if (st != SP_OK)
        return st;
    struct sp_strbuf sb;
    sp_strbuf_init(&sb);
    char head[96];
    snprintf(head, sizeof head, "module (* = a layer with --layers %.16s)", how);
    sp_strbuf_printf(&sb, "%-56s %12s %12s %7s\n", head, "total ms", "own ms", "share");
    /* depth first, children in call order */
    uint32_t *stack = sp_mallocarray(tree->n + 1, sizeof *stack);
    size_t depth = 0;
    if (!stack) {
        sp_free(flags);
        return sp_oom(ctx, "listing the modules");
    }
    for (size_t r = tree->n_roots; r-- > 0;)
        stack[depth++] = tree->roots[r];
    while (depth) {
        const struct sp_module *x = &tree->modules[stack[--depth]];
        char label[512];
        snprintf(label, sizeof label, "%c %*s%s", flags[x->name] ? '*' : ' ', (int)(2 * x->depth),
                 "", sp_module_layer_name(t->strings[x->name]));
        sp_strbuf_printf(&sb, "%-56s %12.3f %12.3f %6.1f%%\n", label, x->total_ms, x->self_ms,
                         tree->roots_ms > 0 ? 100 * x->total_ms / tree->roots_ms : 0.0);
        for (size_t c = x->n_children; c-- > 0;)
            stack[depth++] = x->children[c];
    }
    sp_free(stack);
    sp_free(flags);
    if (sb.oom) {
        sp_strbuf_release(&sb);
        return sp_oom(ctx, "listing the modules");
    }
    *text = sp_strdup(sp_strbuf_str(&sb));
    sp_strbuf_release(&sb);
    return *text ? SP_OK : sp_oom(ctx, "listing the modules");
}
