/* profiler/modules.c: the module tree of a trace (profiler/modules.h); module_choice.c chooses
 * the level of it that becomes the layers, module_names.c reads class names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute_impl.h"
#include "modules.h"

static bool is_module_name(const char *name) {
    return strncmp(name, SP_MODULE_PREFIX, strlen(SP_MODULE_PREFIX)) == 0;
}

const char *sp_module_layer_name(const char *range_name) {
    return is_module_name(range_name) ? range_name + strlen(SP_MODULE_PREFIX) : range_name;
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
bool sp_module_sort_call_order(const struct sp_module *m, uint32_t *ids, size_t n) {
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

/* each module's parent: the innermost module range around its earliest range, same thread.
 * shared[i] is set for a module whose ranges sit inside two different modules (an attention
 * helper, "Func_0", called from every decoder layer's attention): no one module is its parent.
 * A range inside no module (a checkpointed block recomputed in the backward) does not count. */
static sp_status find_parents(sp_ctx *ctx, const struct sp_trace *t, const int32_t *module_of,
                              struct sp_module *m, bool *shared) {
    size_t n = 0;
    for (size_t i = 0; i < t->n_ranges; i++)
        n += module_of[t->ranges[i].name] >= 0;
    struct time_key *keys = sp_mallocarray(n ? n : 1, sizeof *keys);
    size_t *stack = sp_mallocarray(n ? n : 1, sizeof *stack);
    size_t n_modules = 0;
    for (size_t i = 0; i < t->n_strings; i++)
        n_modules += module_of[i] >= 0;
    int32_t *caller = sp_mallocarray(n_modules ? n_modules : 1, sizeof *caller);
    if (!keys || !stack || !caller) {
        sp_free(keys);
        sp_free(stack);
        sp_free(caller);
        return sp_oom(ctx, "reading the module tree");
    }
    for (size_t i = 0; i < n_modules; i++)
        caller[i] = -1;
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
        int32_t around = depth ? module_of[t->ranges[stack[depth - 1]].name] : -1;
        if (around >= 0 && around != self) {
            if (caller[self] >= 0 && caller[self] != around)
                shared[self] = true;
            caller[self] = around;
        }
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
    sp_free(caller);
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
        const char *nm = sp_module_layer_name(t->strings[tree->modules[i].name]);
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
        ok = sp_module_sort_call_order(m, m[i].children, m[i].n_children);
    if (!ok || !sp_module_sort_call_order(m, tree->roots, tree->n_roots))
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

/* module_of: a module index per trace string, -1 for strings that name no module or name a
 * shared one; the count */
static size_t index_modules(const struct sp_trace *t, const bool *shared_name, int32_t *module_of) {
    size_t n = 0;
    for (size_t i = 0; i < t->n_strings; i++)
        module_of[i] = -1;
    for (size_t i = 0; i < t->n_ranges; i++) {
        uint32_t nm = t->ranges[i].name;
        if (module_of[nm] < 0 && !shared_name[nm] && is_module_name(t->strings[nm]) &&
            n < INT32_MAX)
            module_of[nm] = (int32_t)n++;
    }
    return n;
}

/* the tree's modules and parents; a module called inside several modules is taken out (its
 * work is then each caller's own) and the rest found again, until none is shared */
static sp_status find_modules(sp_ctx *ctx, const struct sp_trace *t, int32_t *module_of,
                              bool *shared_name, struct sp_module_tree *tree) {
    for (;;) {
        size_t n = index_modules(t, shared_name, module_of);
        if (n == 0)
            return sp_fail(ctx, SP_ERR_SCHEMA,
                           "%s: no module ranges (\"nn.Module: ...\"): record the trace with "
                           "torch.profiler's with_stack=True (it writes the module ranges), or "
                           "pass --layers REGEX",
                           t->file);
        sp_free(tree->modules);
        tree->modules = sp_calloc(n, sizeof *tree->modules);
        bool *shared = sp_calloc(n, sizeof *shared);
        if (!tree->modules || !shared) {
            sp_free(shared);
            return sp_oom(ctx, "reading the module tree");
        }
        tree->n = n;
        for (size_t i = 0; i < t->n_strings; i++)
            if (module_of[i] >= 0)
                tree->modules[module_of[i]] =
                    (struct sp_module){(uint32_t)i, -1, 0, INT64_MAX, 0, 0, 0, NULL, 0};
        sp_status st = find_parents(ctx, t, module_of, tree->modules, shared);
        size_t found = 0;
        for (size_t i = 0; st == SP_OK && i < n; i++)
            if (shared[i]) {
                shared_name[tree->modules[i].name] = true;
                tree->n_shared++;
                found++;
            }
        sp_free(shared);
        if (st != SP_OK || found == 0)
            return st;
    }
}

sp_status sp_module_tree_build(sp_ctx *ctx, const struct sp_trace *t,
                               const struct sp_attrib_opts *opts, struct sp_module_tree *tree) {
    memset(tree, 0, sizeof *tree);
    size_t ns = t->n_strings ? t->n_strings : 1;
    int32_t *module_of = sp_mallocarray(ns, sizeof *module_of);
    bool *shared_name = sp_calloc(ns, sizeof *shared_name);
    sp_status st = module_of && shared_name ? SP_OK : sp_oom(ctx, "reading the module tree");
    if (st == SP_OK)
        st = find_modules(ctx, t, module_of, shared_name, tree);
    for (size_t i = 0; st == SP_OK && i < t->n_strings && !tree->first_shared; i++)
        if (shared_name[i])
            tree->first_shared = t->strings[i];
    if (st == SP_OK) {
        set_depths(tree->modules, tree->n);
        st = measure(ctx, t, opts, module_of, tree);
    }
    if (st == SP_OK)
        st = link_children(ctx, tree);
    sp_free(module_of);
    sp_free(shared_name);
    if (st != SP_OK)
        sp_module_tree_release(tree);
    return st;
}
