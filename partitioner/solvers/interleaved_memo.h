/* partitioner/solvers/interleaved_memo.h: a cache of search results keyed by short tuples of
 * positions, for the interleaved search (interleaved.c): a state's key is (device, one position per
 * round), its entry the best value found from it and the successor that reached it.
 *
 * A cache, not a store: when it reaches its largest size it is emptied and refilled, so a lookup
 * may miss a state stored earlier; callers then search that state again. Open addressing with
 * generation stamps, so emptying it costs nothing. */
#ifndef SP_PARTITIONER_TUPLE_MEMO_H
#define SP_PARTITIONER_TUPLE_MEMO_H

#include "internal.h"

struct sp_tuple_memo {
    uint32_t key_len;  /* words per key */
    uint32_t next_len; /* words per stored successor */
    size_t slots;      /* a power of two */
    size_t used, max_slots;
    uint32_t gen;    /* entries of other generations are empty */
    uint32_t *stamp; /* [slots] */
    uint32_t *key;   /* [slots x key_len] */
    uint32_t *next;  /* [slots x next_len] */
    sp_i128 *value;  /* [slots] */
    int64_t *extra;  /* [slots]: a second value */
};

sp_status sp_tuple_memo_init(sp_ctx *ctx, struct sp_tuple_memo *m, uint32_t key_len,
                             uint32_t next_len, size_t max_slots);
void sp_tuple_memo_release(struct sp_tuple_memo *m);
/* every entry dropped */
void sp_tuple_memo_clear(struct sp_tuple_memo *m);
/* whether key has an entry: *value, *extra and next (next_len words) are filled (extra and
 * next may be NULL) */
bool sp_tuple_memo_get(const struct sp_tuple_memo *m, const uint32_t *key, sp_i128 *value,
                       int64_t *extra, uint32_t *next);
/* stores (key -> value, extra, next); grows the table, or empties it once at its largest size */
void sp_tuple_memo_put(struct sp_tuple_memo *m, const uint32_t *key, sp_i128 value, int64_t extra,
                       const uint32_t *next);

#endif
