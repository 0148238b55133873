/* profiler/u64_map.h: a map from 64-bit keys to 64-bit values (open addressing, doubling at half
 * full), for what the importers and the engine look up by id: threads by (pid, tid) or
 * globalTid, flows by endpoint, launches by correlation id. Every key value is allowed. */
#ifndef SP_PROFILER_U64_MAP_H
#define SP_PROFILER_U64_MAP_H

#include "internal.h"

struct sp_u64_map {
    uint64_t *key, *val;
    uint8_t *used;
    size_t n, cap;
};

/* Insert k -> v unless k is present; *value (may be NULL) gets the value k maps to after the
 * call. false when out of memory. */
bool sp_u64_map_insert(struct sp_u64_map *m, uint64_t k, uint64_t v, uint64_t *value);
/* Map k -> v, replacing an earlier value. false when out of memory. */
bool sp_u64_map_set(struct sp_u64_map *m, uint64_t k, uint64_t v);
bool sp_u64_map_get(const struct sp_u64_map *m, uint64_t k, uint64_t *v);
/* Make room for n keys without growing again (one allocation instead of doublings). */
bool sp_u64_map_reserve(struct sp_u64_map *m, size_t n);
/* Remove k (nothing when absent). Never allocates, so it cannot fail. */
void sp_u64_map_remove(struct sp_u64_map *m, uint64_t k);
void sp_u64_map_release(struct sp_u64_map *m);

#endif
