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
/* the E group [0, e_end) and the L group [l_start, n) of n layers with these kinds */
sp_status sp_layout_groups(sp_ctx *ctx, size_t n, const char *const *kinds,
                           const char *const *names, size_t *e_end, size_t *l_start);

/* sp_layout_write: the layout of K segments, segment k holding the E group when e[k], t[k]
 * transformer layers and the L group when l[k], appended to value; runs of three or more
 * identical segments (not the last) written as (seg|)*N. */
void sp_layout_write(struct sp_strbuf *value, size_t K, const bool *e, const size_t *t,
                     const bool *l);

#endif
