/* profiler/modules.c: the module tree of a trace and the level of it that becomes the layers
 * (profiler/modules.h; the rule is docs/profiling.md's "Layers from module ranges"). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute_impl.h"
#include "modules.h"

static bool is_module_name(const char *name) {
    return strncmp(name, SP_MODULE_PREFIX, strlen(SP_MODULE_PREFIX)) == 0;
}

static const char *stripped(const char *name) {
    return is_module_name(name) ? name + strlen(SP_MODULE_PREFIX) : name;
}

bool sp_trace_has_modules(const struct sp_trace *t) {
    for (size_t i = 0; i < t->n_ranges; i++)
        if (is_module_name(t->strings[t->ranges[i].name]))
            return true;
    return false;
}

void sp_module_tree_release(struct sp_module_tree *tree) {
    for (size_t i = 0; i < tree->n; i++)
        sp_free(tree->modules[i].children);
    sp_free(tree->modules);
    sp_free(tree->roots);
    memset(tree, 0, sizeof *tree);
}

/* sort keys carry what they are sorted by (qsort has no context argument) */
struct order_key {
    int64_t first;
    uint32_t name, id;
};

static int cmp_order_key(const void *a, const void *b) {
    const struct order_key *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return (x->name > y->name) - (x->name < y->name);
}

/* ids in call order (the first range first); false when out of memory */
static bool sort_call_order(const struct sp_module *m, uint32_t *ids, size_t n) {
    if (n < 2)
        return true;
    struct order_key *k = sp_mallocarray(n, sizeof *k);
    if (!k)
        return false;
    for (size_t i = 0; i < n; i++)
        k[i] = (struct order_key){m[ids[i]].first_ns, m[ids[i]].name, ids[i]};
    qsort(k, n, sizeof *k, cmp_order_key);
    for (size_t i = 0; i < n; i++)
        ids[i] = k[i].id;
    sp_free(k);
    return true;
}

/* each module's parent: the innermost module range around its earliest range, same thread */
static sp_status find_parents(sp_ctx *ctx, const struct sp_trace *t, const int32_t *module_of,
                              struct sp_module *m) {
    size_t n = 0;
    for (size_t i = 0; i < t->n_ranges; i++)
        n += module_of[t->ranges[i].name] >= 0;
    struct time_key *keys = sp_mallocarray(n ? n : 1, sizeof *keys);
    size_t *stack = sp_mallocarray(n ? n : 1, sizeof *stack);
    if (!keys || !stack) {
        sp_free(keys);
        sp_free(stack);
        return sp_oom(ctx, "reading the module tree");
    }
    n = 0;
    for (size_t i = 0; i < t->n_ranges; i++)
        if (module_of[t->ranges[i].name] >= 0)
            keys[n++] =
                (struct time_key){t->ranges[i].tid, t->ranges[i].start_ns, t->ranges[i].end_ns, i};
    qsort(keys, n, sizeof *keys, sp_time_key_cmp);
    size_t depth = 0;
    for (size_t k = 0; k < n; k++) {
        if (k && keys[k].tid != keys[k - 1].tid)
            depth = 0;
        while (depth && t->ranges[stack[depth - 1]].end_ns <= keys[k].start)
            depth--; /* ended where this one starts: not its parent */
        int32_t self = module_of[t->ranges[keys[k].idx].name];
        if (keys[k].start < m[self].first_ns) {
            m[self].first_ns = keys[k].start;
            m[self].parent = depth ? module_of[t->ranges[stack[depth - 1]].name] : -1;
            if (m[self].parent == self) /* a module calling itself: its own first call */
                m[self].parent = -1;
        }
        stack[depth++] = keys[k].idx;
    }
    sp_free(keys);
    sp_free(stack);
    return SP_OK;
}

/* depths; a cycle (possible only with ranges that start together) makes a root */
static void set_depths(struct sp_module *m, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t d = 0;
        int32_t p = m[i].parent;
        while (p >= 0 && d <= n) {
            d++;
            p = m[p].parent;
        }
        if (d > n) { /* a cycle: this module becomes a root */
            m[i].parent = -1;
            d = 0;
        }
        m[i].depth = d;
    }
}

/* each module's own time: the engine's, with every module a layer */
static sp_status measure(sp_ctx *ctx, const struct sp_trace *t, const struct sp_attrib_opts *opts,
                         const int32_t *module_of, struct sp_module_tree *tree) {
    uint8_t *flags = sp_calloc(t->n_strings ? t->n_strings : 1, 1);
    if (!flags)
        return sp_oom(ctx, "reading the module tree");
    for (size_t i = 0; i < t->n_strings; i++)
        flags[i] = module_of[i] >= 0;
    struct sp_attrib_opts o = *opts;
    o.layer_pattern = NULL;
    o.layer_names = flags;
    struct sp_attribution a;
    sp_status st = sp_attribute(ctx, t, &o, &a);
    sp_free(flags);
    if (st != SP_OK)
        return st;
    /* the engine names layers without the prefix, each once: find each module's by name */
    struct sp_trace names;
    st = sp_trace_init(ctx, &names);
    for (size_t i = 0; st == SP_OK && i < a.n_layers; i++) {
        uint32_t id = 0;
        st = sp_trace_intern(ctx, &names, a.layers[i].name, strlen(a.layers[i].name), &id);
    }
    for (size_t i = 0; st == SP_OK && i < tree->n; i++) {
        const char *nm = stripped(t->strings[tree->modules[i].name]);
        uint32_t id = 0;
        st = sp_trace_intern(ctx, &names, nm, strlen(nm), &id);
        if (st != SP_OK || id >= a.n_layers)
            continue;
        const struct sp_phase_stats *ph = a.layers[id].phase;
        struct sp_module *mod = &tree->modules[i];
        for (int p = 0; p < SP_LAYER_PHASES; p++) {
            mod->self_ms += ph[p].busy_ms;
            mod->self_kernels += ph[p].kernels;
        }
    }
    tree->gpu_ms = a.gpu_ms;
    sp_trace_release(&names);
    sp_attribution_release(&a);
    return st;
}

static sp_status link_children(sp_ctx *ctx, struct sp_module_tree *tree) {
    struct sp_module *m = tree->modules;
    size_t n = tree->n;
    for (size_t i = 0; i < n; i++)
        if (m[i].parent >= 0)
            m[m[i].parent].n_children++;
        else
            tree->n_roots++;
    tree->roots = sp_mallocarray(tree->n_roots ? tree->n_roots : 1, sizeof *tree->roots);
    if (!tree->roots)
        return sp_oom(ctx, "reading the module tree");
    for (size_t i = 0; i < n; i++) {
        if (m[i].n_children &&
            !(m[i].children = sp_mallocarray(m[i].n_children, sizeof *m[i].children)))
            return sp_oom(ctx, "reading the module tree");
        m[i].n_children = 0;
    }
    tree->n_roots = 0;
    for (size_t i = 0; i < n; i++) {
        if (m[i].parent >= 0) {
            struct sp_module *p = &m[m[i].parent];
            p->children[p->n_children++] = (uint32_t)i;
        } else {
            tree->roots[tree->n_roots++] = (uint32_t)i;
        }
    }
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++)
        ok = sort_call_order(m, m[i].children, m[i].n_children);
    if (!ok || !sort_call_order(m, tree->roots, tree->n_roots))
        return sp_oom(ctx, "reading the module tree");
    /* totals, deepest first: depth by depth from the deepest */
    uint32_t deepest = 0;
    for (size_t i = 0; i < n; i++)
        deepest = m[i].depth > deepest ? m[i].depth : deepest;
    for (uint32_t d = deepest + 1; d-- > 0;)
        for (size_t i = 0; i < n; i++) {
            struct sp_module *x = &m[i];
            if (x->depth != d)
                continue;
            x->total_ms = x->self_ms;
            for (size_t c = 0; c < x->n_children; c++)
                x->total_ms += m[x->children[c]].total_ms;
        }
    tree->roots_ms = 0;
    for (size_t r = 0; r < tree->n_roots; r++)
        tree->roots_ms += m[tree->roots[r]].total_ms;
    return SP_OK;
}

sp_status sp_module_tree_build(sp_ctx *ctx, const struct sp_trace *t,
                               const struct sp_attrib_opts *opts, struct sp_module_tree *tree) {
    memset(tree, 0, sizeof *tree);
    int32_t *module_of = sp_mallocarray(t->n_strings ? t->n_strings : 1, sizeof *module_of);
    if (!module_of)
        return sp_oom(ctx, "reading the module tree");
    size_t n = 0;
    for (size_t i = 0; i < t->n_strings; i++)
        module_of[i] = -1;
    for (size_t i = 0; i < t->n_ranges; i++) {
        uint32_t nm = t->ranges[i].name;
        if (module_of[nm] < 0 && is_module_name(t->strings[nm]) && n < INT32_MAX)
            module_of[nm] = (int32_t)n++;
    }
    sp_status st = SP_OK;
    if (n == 0)
        st = sp_fail(ctx, SP_ERR_SCHEMA,
                     "%s: no module ranges (\"nn.Module: ...\"): record the trace with "
                     "torch.profiler's with_stack=True (it writes the module ranges), or pass "
                     "--layers REGEX",
                     t->file);
    if (st == SP_OK && !(tree->modules = sp_calloc(n, sizeof *tree->modules)))
        st = sp_oom(ctx, "reading the module tree");
    if (st == SP_OK) {
        tree->n = n;
        for (size_t i = 0; i < t->n_strings; i++)
            if (module_of[i] >= 0)
                tree->modules[module_of[i]] =
                    (struct sp_module){(uint32_t)i, -1, 0, INT64_MAX, 0, 0, 0, NULL, 0};
        st = find_parents(ctx, t, module_of, tree->modules);
    }
    if (st == SP_OK) {
        set_depths(tree->modules, n);
        st = measure(ctx, t, opts, module_of, tree);
    }
    if (st == SP_OK)
        st = link_children(ctx, tree);
    sp_free(module_of);
    if (st != SP_OK)
        sp_module_tree_release(tree);
    return st;
}

/* ---- choosing the level */

/* the class name: "nn.Module: GPT2Block_0" -> "GPT2Block" (len bytes) */
static const char *class_of(const char *name, size_t *len) {
    const char *s = stripped(name);
    size_t n = strlen(s), k = n;
    while (k > 0 && isdigit((unsigned char)s[k - 1]))
        k--;
    *len = k < n && k > 0 && s[k - 1] == '_' ? k - 1 : n;
    return s;
}

static bool class_is(const char *name, const char *cls) {
    size_t len = 0;
    const char *c = class_of(name, &len);
    return len == strlen(cls) && strncmp(c, cls, len) == 0;
}

/* a module replaced by its children: a container class, or one that launches nothing itself */
/* whether module id's class repeats among its siblings (the roots, for a root): one of a stack
 * of blocks (BertLayer_0 .. BertLayer_11) */
static bool repeated(const struct sp_trace *t, const struct sp_module_tree *tree, uint32_t id) {
    const struct sp_module *m = tree->modules;
    int32_t p = m[id].parent;
    const uint32_t *sib = p >= 0 ? m[p].children : tree->roots;
    size_t n = p >= 0 ? m[p].n_children : tree->n_roots, len = 0, same = 0;
    const char *c = class_of(t->strings[m[id].name], &len);
    for (size_t i = 0; i < n && same < 2; i++) {
        size_t l2 = 0;
        const char *c2 = class_of(t->strings[m[sib[i]].name], &l2);
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
    if (class_is(name, "Sequential") || class_is(name, "ModuleList") ||
        class_is(name, "ModuleDict"))
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
            ok = ok && sort_call_order(m, out->ids, out->n);
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
        ok = ok && sort_call_order(m, out->ids, out->n);
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

const char *sp_module_layer_name(const char *range_name) {
    return stripped(range_name);
}

static bool contains_ci(const char *s, size_t len, const char *word);

/* whether a descendant of module m is an attention module (by its class name) */
static bool has_attention(const struct sp_trace *t, const struct sp_module_tree *tree, uint32_t m,
                          uint32_t depth) {
    const struct sp_module *x = &tree->modules[m];
    for (size_t i = 0; i < x->n_children && depth < 64; i++) {
        size_t len = 0;
        const char *c = class_of(t->strings[tree->modules[x->children[i]].name], &len);
        if (contains_ci(c, len, "attention") || contains_ci(c, len, "attn") ||
            has_attention(t, tree, x->children[i], depth + 1))
            return true;
    }
    return false;
}

/* a chosen module whose class repeats among the chosen, with attention inside: a block */
static bool is_block(const struct sp_trace *t, const struct sp_module_tree *tree,
                     const struct id_list *chosen, uint32_t m) {
    size_t len = 0, twins = 0;
    const char *c = class_of(t->strings[tree->modules[m].name], &len);
    for (size_t i = 0; i < chosen->n && twins < 2; i++) {
        size_t l2 = 0;
        const char *c2 = class_of(t->strings[tree->modules[chosen->ids[i]].name], &l2);
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
                             stripped(t->strings[tree->modules[expanded.ids[i]].name]));
        if (expanded.n > 4)
            sp_strbuf_printf(&sb, " and %zu more", expanded.n - 4);
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
                 "", stripped(t->strings[x->name]));
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

/* ---- kinds */

static bool contains_ci(const char *s, size_t len, const char *word) {
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= len; i++) {
        size_t k = 0;
        while (k < w && tolower((unsigned char)s[i + k]) == word[k])
            k++;
        if (k == w)
            return true;
    }
    return false;
}

const char *sp_module_kind(const char *name) {
    size_t len = 0;
    const char *c = class_of(name, &len);
    static const struct {
        const char *word, *kind;
    } rules[] = {/* first match wins: "LlamaDecoderLayer" is a block, not attention */
                 {"loss", "loss"},
                 {"embed", "embedding"},
                 {"norm", "norm"},
                 {"basicblock", "conv"},
                 {"bottleneck", "conv"},
                 {"block", "transformer"},
                 {"decoderlayer", "transformer"},
                 {"encoderlayer", "transformer"},
                 {"transformerlayer", "transformer"},
                 {"bertlayer", "transformer"},
                 {"attention", "attention"},
                 {"attn", "attention"},
                 {"conv", "conv"},
                 {"head", "head"}};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (contains_ci(c, len, rules[i].word))
            return rules[i].kind;
    return NULL;
}
