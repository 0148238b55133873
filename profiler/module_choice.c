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
 * own that holds a stack of repeated blocks (BertEncoder). Not one of those blocks itself
 * (BertLayer does no work, its attention and MLP children do: opening it would cut inside
 * encoder layers), nor a small unit of distinct modules (BERT's MLM head: its activation between
 * two of its layers would end up in no stage's modules). A large one is opened anyway when it
 * holds over half the time (choose). Why it is opened, or SP_WHY_NONE. */
static uint8_t why_open(const struct sp_trace *t, const struct sp_module_tree *tree, uint32_t id) {
    const struct sp_module *m = &tree->modules[id];
    const char *name = t->strings[m->name];
    if (!m->n_children)
        return SP_WHY_NONE;
    if (sp_module_class_is(name, "Sequential") || sp_module_class_is(name, "ModuleList") ||
        sp_module_class_is(name, "ModuleDict"))
        return SP_WHY_OPEN_CONTAINER;
    if (m->self_kernels || m->self_ms != 0 || repeated(t, tree, id))
        return SP_WHY_NONE;
    for (size_t c = 0; c < m->n_children; c++)
        if (repeated(t, tree, m->children[c]))
            return SP_WHY_OPEN_NO_WORK;
    return SP_WHY_NONE;
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
 * children; why[m] for each module the choice reached */
static sp_status choose(sp_ctx *ctx, const struct sp_trace *t, const struct sp_module_tree *tree,
                        const char *how, struct id_list *out, struct id_list *expanded,
                        uint8_t *why) {
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
            uint8_t reason = SP_WHY_OPEN_HALF;
            for (size_t i = 0; i < out->n && open == SIZE_MAX; i++) {
                const struct sp_module *x = &m[out->ids[i]];
                if ((reason = why_open(t, tree, out->ids[i])) != SP_WHY_NONE)
                    open = i;
                else if (x->n_children &&
                         (biggest == SIZE_MAX || x->total_ms > m[out->ids[biggest]].total_ms))
                    biggest = i;
            }
            if (open == SIZE_MAX && biggest != SIZE_MAX &&
                m[out->ids[biggest]].total_ms > 0.5 * tree->roots_ms) {
                open = biggest;
                reason = SP_WHY_OPEN_HALF;
            }
            if (open == SIZE_MAX)
                break;
            why[out->ids[open]] = reason;
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
        for (size_t i = 0; i < out->n; i++) {
            const struct sp_module *x = &m[out->ids[i]];
            why[out->ids[i]] =
                x->n_children && !x->self_kernels && x->self_ms == 0 ? SP_WHY_STACK : SP_WHY_LAYER;
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
            if (m[i].depth == depth || (m[i].depth < depth && m[i].n_children == 0)) {
                ok = list_push(out, (uint32_t)i);
                why[i] = m[i].depth == depth ? SP_WHY_DEPTH : SP_WHY_LEAF;
            }
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

void sp_module_choice_release(struct sp_module_choice *c) {
    sp_free(c->flags);
    sp_free(c->into);
    sp_free(c->why);
    sp_free(c->folded_into);
    memset(c, 0, sizeof *c);
}

/* Parameter-free chosen modules join the next weighted one in call order (the previous, after
 * the last); the count folded. Nothing folds when no chosen module holds parameters. */
static size_t fold(const struct sp_trace *t, const struct sp_module_tree *tree,
                   const struct id_list *chosen, struct sp_module_choice *c) {
    size_t folded = 0;
    for (size_t i = 0; i < chosen->n; i++) {
        uint32_t id = chosen->ids[i];
        if (!sp_module_is_parameter_free(t->strings[tree->modules[id].name]))
            continue;
        size_t to = SIZE_MAX;
        for (size_t j = i + 1; j < chosen->n && to == SIZE_MAX; j++)
            if (!sp_module_is_parameter_free(t->strings[tree->modules[chosen->ids[j]].name]))
                to = j;
        for (size_t j = i; j-- > 0 && to == SIZE_MAX;)
            if (!sp_module_is_parameter_free(t->strings[tree->modules[chosen->ids[j]].name]))
                to = j;
        if (to == SIZE_MAX)
            return 0;
        c->why[id] = SP_WHY_FOLDED;
        c->folded_into[id] = chosen->ids[to];
        c->into[tree->modules[id].name] = tree->modules[chosen->ids[to]].name;
        folded++;
    }
    return folded;
}

static void say_choice(const struct sp_trace *t, const struct sp_module_tree *tree, const char *how,
                       const struct id_list *chosen, const struct id_list *expanded,
                       const struct sp_module_choice *c, size_t folded, char *said,
                       size_t said_size) {
    const struct sp_module *m = tree->modules;
    double covered = 0;
    for (size_t i = 0; i < chosen->n; i++)
        covered += m[chosen->ids[i]].total_ms;
    struct sp_strbuf sb;
    sp_strbuf_init(&sb);
    sp_strbuf_printf(&sb, "%zu modules (%s", chosen->n - folded,
                     strcmp(how, "auto") == 0 ? "chosen automatically" : "depth ");
    if (strcmp(how, "auto") != 0)
        sp_strbuf_puts(&sb, how);
    for (size_t i = 0; i < expanded->n && i < 4; i++)
        sp_strbuf_printf(&sb, "%s%s", i ? ", " : "; opened ",
                         sp_module_layer_name(t->strings[m[expanded->ids[i]].name]));
    if (expanded->n > 4)
        sp_strbuf_printf(&sb, " and %zu more", expanded->n - 4);
    size_t said_folds = 0;
    for (size_t i = 0; i < chosen->n; i++) {
        uint32_t id = chosen->ids[i];
        if (c->why[id] != SP_WHY_FOLDED || said_folds++ >= 3)
            continue;
        sp_strbuf_printf(&sb, "%s%s into %s", said_folds > 1 ? ", " : "; no parameters: ",
                         sp_module_layer_name(t->strings[m[id].name]),
                         sp_module_layer_name(t->strings[m[c->folded_into[id]].name]));
    }
    if (folded > 3)
        sp_strbuf_printf(&sb, " and %zu more", folded - 3);
    if (tree->n_shared)
        sp_strbuf_printf(&sb, "; %s%s called inside several modules, part of each caller",
                         sp_module_layer_name(tree->first_shared),
                         tree->n_shared > 1 ? " and others" : "");
    sp_strbuf_printf(&sb, "), %.1f%% of the module time",
                     tree->roots_ms > 0 ? 100 * covered / tree->roots_ms : 0.0);
    snprintf(said, said_size, "%s", sb.oom ? "modules" : sp_strbuf_str(&sb));
    sp_strbuf_release(&sb);
}

sp_status sp_module_choose(sp_ctx *ctx, const struct sp_trace *t, const struct sp_module_tree *tree,
                           const char *how, struct sp_module_choice *c, char *said,
                           size_t said_size) {
    memset(c, 0, sizeof *c);
    size_t ns = t->n_strings ? t->n_strings : 1, nm = tree->n ? tree->n : 1;
    c->flags = sp_calloc(ns, 1);
    c->into = sp_mallocarray(ns, sizeof *c->into);
    c->why = sp_calloc(nm, 1);
    c->folded_into = sp_calloc(nm, sizeof *c->folded_into);
    if (!c->flags || !c->into || !c->why || !c->folded_into) {
        sp_module_choice_release(c);
        return sp_oom(ctx, "choosing the layers");
    }
    for (size_t i = 0; i < t->n_strings; i++)
        c->into[i] = (uint32_t)i;
    struct id_list chosen = {0}, expanded = {0};
    sp_status st = choose(ctx, t, tree, how, &chosen, &expanded, c->why);
    for (size_t i = 0; st == SP_OK && i < chosen.n; i++)
        c->flags[tree->modules[chosen.ids[i]].name] =
            is_block(t, tree, &chosen, chosen.ids[i]) ? SP_MODULE_BLOCK : SP_MODULE_LAYER;
    size_t folded = st == SP_OK ? fold(t, tree, &chosen, c) : 0;
    if (st == SP_OK && said && said_size)
        say_choice(t, tree, how, &chosen, &expanded, c, folded, said, said_size);
    sp_free(chosen.ids);
    sp_free(expanded.ids);
    if (st != SP_OK)
        sp_module_choice_release(c);
    return st;
}

/* why as a person reads it; buf for a fold's target */
static const char *why_text(const struct sp_trace *t, const struct sp_module_tree *tree,
                            const struct sp_module_choice *c, uint32_t id, char *buf, size_t size) {
    switch (c->why[id]) {
    case SP_WHY_LAYER:
        return "layer";
    case SP_WHY_STACK:
        return "layer: a repeated block (its children do the work)";
    case SP_WHY_DEPTH:
        return "layer: at the depth asked for";
    case SP_WHY_LEAF:
        return "layer: a leaf above that depth";
    case SP_WHY_OPEN_CONTAINER:
        return "opened: a container";
    case SP_WHY_OPEN_NO_WORK:
        return "opened: no work of its own";
    case SP_WHY_OPEN_HALF:
        return "opened: over half the time";
    case SP_WHY_FOLDED:
        snprintf(buf, size, "no parameters: part of %s",
                 sp_module_layer_name(t->strings[tree->modules[c->folded_into[id]].name]));
        return buf;
    default:
        return "";
    }
}

sp_status sp_module_tree_text(sp_ctx *ctx, const struct sp_trace *t,
                              const struct sp_module_tree *tree, const char *how, char **text) {
    *text = NULL;
    struct sp_module_choice c;
    sp_status st = sp_module_choose(ctx, t, tree, how, &c, NULL, 0);
    if (st != SP_OK)
        return st;
    struct sp_strbuf sb;
    sp_strbuf_init(&sb);
    char head[96];
    snprintf(head, sizeof head, "module (* = a layer with --layers %.16s)", how);
    sp_strbuf_printf(&sb, "%-56s %12s %12s %7s  %s\n", head, "total ms", "own ms", "share", "why");
    /* depth first, children in call order */
    uint32_t *stack = sp_mallocarray(tree->n + 1, sizeof *stack);
    size_t depth = 0;
    if (!stack) {
        sp_module_choice_release(&c);
        return sp_oom(ctx, "listing the modules");
    }
    for (size_t r = tree->n_roots; r-- > 0;)
        stack[depth++] = tree->roots[r];
    while (depth) {
        uint32_t id = stack[--depth];
        const struct sp_module *x = &tree->modules[id];
        char label[512], buf[300];
        bool layer = c.flags[x->name] && c.why[id] != SP_WHY_FOLDED;
        snprintf(label, sizeof label, "%c %*s%s", layer ? '*' : ' ', (int)(2 * x->depth), "",
                 sp_module_layer_name(t->strings[x->name]));
        sp_strbuf_printf(&sb, "%-56s %12.3f %12.3f %6.1f%%  %s\n", label, x->total_ms, x->self_ms,
                         tree->roots_ms > 0 ? 100 * x->total_ms / tree->roots_ms : 0.0,
                         why_text(t, tree, &c, id, buf, sizeof buf));
        for (size_t k = x->n_children; k-- > 0;)
            stack[depth++] = x->children[k];
    }
    sp_free(stack);
    sp_module_choice_release(&c);
    if (sb.oom) {
        sp_strbuf_release(&sb);
        return sp_oom(ctx, "listing the modules");
    }
    *text = sp_strdup(sp_strbuf_str(&sb));
    sp_strbuf_release(&sb);
    return *text ? SP_OK : sp_oom(ctx, "listing the modules");
}
