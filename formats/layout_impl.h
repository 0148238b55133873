/* formats/layout_impl.h: Megatron layouts read and written (formats/megatron_layout.c), for the
 * plans export/ and import-plan make of them. */
#ifndef SP_FORMATS_LAYOUT_IMPL_H
#define SP_FORMATS_LAYOUT_IMPL_H

#include "internal.h"

struct sp_layout {
    char *symbols; /* the expanded string, segments separated by '|' */
    size_t *start; /* start[segments + 1]: segment k is symbols[start[k] .. start[k+1]-1) */
    size_t segments;
};

sp_status sp_layout_parse(sp_ctx *ctx, const char *text, struct sp_layout *out);
void sp_layout_release(struct sp_layout *l);
/* occurrences of `symbol` in segment k */
size_t sp_layout_count(const struct sp_layout *l, size_t segment, char symbol);
/* The layers as Megatron sees them: the E group [0, e_end), the transformer layers
 * [e_end, t_end), the multi-token prediction layers (kind "mtp") [t_end, l_start) and the L
 * group [l_start, n). */
struct sp_layout_groups {
    size_t e_end, t_end, l_start;
};
sp_status sp_layout_groups(sp_ctx *ctx, size_t n, const char *const *kinds,
                           const char *const *names, struct sp_layout_groups *g);

/* sp_layout_write: the layout of K segments, segment k holding the E group when e[k], t[k]
 * transformer layers, m[k] MTP layers and the L group when l[k], appended to value; runs of
 * three or more identical segments (not the last) written as (seg|)*N. */
void sp_layout_write(struct sp_strbuf *value, size_t K, const bool *e, const size_t *t,
                     const size_t *m, const bool *l);

#endif
