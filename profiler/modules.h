/* profiler/modules.h: a trace's PyTorch module tree (torch.profiler's with_stack=True ranges,
 * "nn.Module: <Class>_<N>") and the level of it that becomes the profile's layers.
 *
 * The tree: each module's parent is the innermost module range around its first range on the
 * same thread; its children are in call order (first range first). A module called inside two
 * or more modules (an attention helper every layer calls) is no node: its work is its callers'.
 * Each module's time is the attribution engine's, with every module a layer: the median per step of
 * the GPU busy time of the work it launched itself (forward, backward by the trace's fwdbwd links,
 * recomputation), not in a child; a module's total adds its children's totals. */
#ifndef SP_PROFILER_MODULES_H
#define SP_PROFILER_MODULES_H

#include "attribute.h"

struct sp_module {
    uint32_t name;  /* string id in the trace ("nn.Module: GPT2Block_0") */
    int32_t parent; /* module index, or -1: a root */
    uint32_t depth; /* 0 for a root */
    int64_t first_ns;
    double self_ms;  /* its own work's busy time (fwd + bwd + recompute), median per step */
    double total_ms; /* self_ms and its descendants' */
    uint64_t self_kernels;
    uint32_t *children; /* in call order */
    size_t n_children;
};

struct sp_module_tree {
    struct sp_module *modules; /* parents before their children */
    size_t n;
    uint32_t *roots; /* in call order */
    size_t n_roots;
    double gpu_ms, roots_ms;  /* every activity's time; the roots' totals */
    size_t n_shared;          /* modules called inside several modules: not in the tree */
    const char *first_shared; /* the first one's range name (the trace's string), or NULL */
};

/* Whether the trace has module ranges at all. */
bool sp_trace_has_modules(const struct sp_trace *t);

/* Build the tree (opts: the step pattern and warm-up; its layer options are not used).
 * SP_ERR_SCHEMA when the trace has no module ranges. */
sp_status sp_module_tree_build(sp_ctx *ctx, const struct sp_trace *t,
                               const struct sp_attrib_opts *opts, struct sp_module_tree *tree);
void sp_module_tree_release(struct sp_module_tree *tree);

/* Choose the layers: how is "auto" or a depth (decimal digits). *layer_names gets a flag per
 * trace string (sp_attrib_opts.layer_names; free with sp_free): SP_MODULE_LAYER for a chosen
 * module, SP_MODULE_BLOCK for one that is a transformer block by structure (its class repeats
 * among the chosen, and an attention module is among its descendants: GPTNeoXLayer, whatever its
 * name says); said, of said_size bytes, what was chosen, for a person. SP_ERR_INVALID_ARG for
 * another `how`, SP_ERR_SCHEMA when it chooses nothing. */
#define SP_MODULE_LAYER 1
#define SP_MODULE_BLOCK 2
sp_status sp_module_choose(sp_ctx *ctx, const struct sp_trace *t, const struct sp_module_tree *tree,
                           const char *how, uint8_t **layer_names, char *said, size_t said_size);

/* The module tree as text: one line a module, indented by depth, with its total and own time,
 * its share of the roots' time, and '*' on those `how` chooses. */
sp_status sp_module_tree_text(sp_ctx *ctx, const struct sp_trace *t,
                              const struct sp_module_tree *tree, const char *how, char **text);

/* Whether --layers names a depth (decimal digits only). */
bool sp_module_is_depth(const char *how);

/* ids (module indices) in call order, the first range first; false when out of memory */
bool sp_module_sort_call_order(const struct sp_module *m, uint32_t *ids, size_t n);

/* module_names.c: a module's class from its range name ("nn.Module: GPT2Block_0" ->
 * "GPT2Block", *len bytes); whether it is cls; whether it holds word (lower case), any case */
const char *sp_module_class(const char *range_name, size_t *len);
bool sp_module_class_is(const char *range_name, const char *cls);
bool sp_module_class_has(const char *range_name, const char *word);

/* A layer kind from a module's class name ("GPT2Block_0" -> "transformer"), or NULL: embedding,
 * attention, transformer, norm, conv, head, loss. */
const char *sp_module_kind(const char *name);

/* The layer name a module's range gives (its range name without "nn.Module: "). */
const char *sp_module_layer_name(const char *range_name);

#endif
