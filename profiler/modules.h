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

/* Why a module is or is not a layer (sp_module_choice.why; sp_module_why_text says it). */
enum sp_module_why {
    SP_WHY_NONE,           /* below the chosen level, or never reached */
    SP_WHY_LAYER,          /* auto: kept, nothing says to open it */
    SP_WHY_STACK,          /* auto: kept though it does no work itself: one of repeated blocks */
    SP_WHY_DEPTH,          /* at the depth asked for */
    SP_WHY_LEAF,           /* a leaf above the depth asked for */
    SP_WHY_OPEN_CONTAINER, /* opened: Sequential, ModuleList, ModuleDict */
    SP_WHY_OPEN_NO_WORK,   /* opened: it launches nothing itself */
    SP_WHY_OPEN_HALF,      /* opened: over half of the roots' time */
    SP_WHY_FOLDED,         /* chosen, but it holds no parameters: its work joins a neighbour */
};

/* The layers chosen: per trace string, flags (SP_MODULE_LAYER for a chosen module,
 * SP_MODULE_BLOCK for one that is a transformer block by structure: its class repeats among the
 * chosen, and an attention module is among its descendants: GPTNeoXLayer, whatever its name
 * says) and into (the string whose layer its work joins: itself, or for a folded module the
 * neighbour's); per module, why and folded_into (the module it joins, for SP_WHY_FOLDED). */
#define SP_MODULE_LAYER 1
#define SP_MODULE_BLOCK 2
struct sp_module_choice {
    uint8_t *flags;
    uint32_t *into;
    uint8_t *why;
    uint32_t *folded_into;
};
void sp_module_choice_release(struct sp_module_choice *c);

/* Choose the layers: how is "auto" or a depth (decimal digits). A chosen module of a class that
 * holds no parameters (dropout, rotary embeddings, activations, pooling: sp_module_is_parameter_
 * free) is no layer of its own: its work joins the next chosen layer (the previous one, for the
 * last), so the layers are the model's weighted modules. said, of said_size bytes, what was
 * chosen, for a person. SP_ERR_INVALID_ARG for another `how`, SP_ERR_SCHEMA when it chooses
 * nothing. */
sp_status sp_module_choose(sp_ctx *ctx, const struct sp_trace *t, const struct sp_module_tree *tree,
                           const char *how, struct sp_module_choice *choice, char *said,
                           size_t said_size);

/* Whether a module's class holds no parameters by its name (Dropout, *RotaryEmbedding,
 * Identity, activations such as ReLU, GELU, SiLU, Tanh, Softmax, Flatten, max and average
 * pooling). */
bool sp_module_is_parameter_free(const char *range_name);

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
