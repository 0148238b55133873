/* profiler/u64_map.c: the id map (profiler/u64_map.h). */
#include <string.h>

#include "u64_map.h"

static size_t home_of(const struct sp_u64_map *m, uint64_t k) {
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & (m->cap - 1);
}

static size_t slot_of(const struct sp_u64_map *m, uint64_t k) {
    size_t h = home_of(m, k);
    while (m->used[h] && m->key[h] != k)
        h = (h + 1) & (m->cap - 1);
    return h;
}

static bool grow_to(struct sp_u64_map *m, size_t cap) {
    struct sp_u64_map g = {sp_mallocarray(cap, sizeof *g.key), sp_mallocarray(cap, sizeof *g.val),
                           sp_calloc(cap, 1), m->n, cap};
    if (!g.key || !g.val || !g.used) {
        sp_u64_map_release(&g);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->used[i]) {
            size_t h = slot_of(&g, m->key[i]);
            g.used[h] = 1;
            g.key[h] = m->key[i];
            g.val[h] = m->val[i];
        }
    sp_u64_map_release(m);
    *m = g;
    return true;
}

static bool grow(struct sp_u64_map *m) {
    return grow_to(m, m->cap ? m->cap * 2 : 1024);
}

bool sp_u64_map_reserve(struct sp_u64_map *m, size_t n) {
    size_t cap = m->cap ? m->cap : 1024;
    while (cap / 2 < n && cap < SIZE_MAX / 4)
        cap *= 2;
    return cap == m->cap || grow_to(m, cap);
}

/* the slot of k, made free for it when absent; SIZE_MAX when out of memory */
static size_t place(struct sp_u64_map *m, uint64_t k) {
    if (2 * (m->n + 1) > m->cap && !grow(m))
        return SIZE_MAX;
    return slot_of(m, k);
}

bool sp_u64_map_insert(struct sp_u64_map *m, uint64_t k, uint64_t v, uint64_t *value) {
    size_t h = place(m, k);
    if (h == SIZE_MAX)
        return false;
    if (!m->used[h]) {
        m->used[h] = 1;
        m->key[h] = k;
        m->val[h] = v;
        m->n++;
    }
    if (value)
        *value = m->val[h];
    return true;
}

bool sp_u64_map_set(struct sp_u64_map *m, uint64_t k, uint64_t v) {
    size_t h = place(m, k);
    if (h == SIZE_MAX)
        return false;
    m->n += !m->used[h];
    m->used[h] = 1;
    m->key[h] = k;
    m->val[h] = v;
    return true;
}

bool sp_u64_map_get(const struct sp_u64_map *m, uint64_t k, uint64_t *v) {
    if (!m->cap)
        return false;
    size_t h = slot_of(m, k);
    if (!m->used[h])
        return false;
    *v = m->val[h];
    return true;
}

/* Linear probing without tombstones: after emptying a slot, every later key of the same probe
 * run that could live in the hole moves back into it (backward-shift deletion), so lookups stay
 * correct and a map that sees as many removals as inserts never fills up. */
void sp_u64_map_remove(struct sp_u64_map *m, uint64_t k) {
    if (!m->cap)
        return;
    size_t hole = slot_of(m, k), mask = m->cap - 1;
    if (!m->used[hole])
        return;
    m->used[hole] = 0;
    m->n--;
    for (size_t j = (hole + 1) & mask; m->used[j]; j = (j + 1) & mask) {
        size_t home = home_of(m, m->key[j]);
        /* the key at j may move to the hole when its home is not inside (hole, j] (cyclic) */
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (stays)
            continue;
        m->key[hole] = m->key[j];
        m->val[hole] = m->val[j];
        m->used[hole] = 1;
        m->used[j] = 0;
        hole = j;
    }
}

void sp_u64_map_release(struct sp_u64_map *m) {
    sp_free(m->key);
    sp_free(m->val);
    sp_free(m->used);
    memset(m, 0, sizeof *m);
}
