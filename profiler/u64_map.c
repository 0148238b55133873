/* profiler/u64_map.c: the id map (profiler/u64_map.h). */
#include <string.h>

#include "u64_map.h"

static size_t slot_of(const struct sp_u64_map *m, uint64_t k) {
    size_t h = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & (m->cap - 1);
    while (m->used[h] && m->key[h] != k)
        h = (h + 1) & (m->cap - 1);
    return h;
}

static bool grow(struct sp_u64_map *m) {
    size_t cap = m->cap ? m->cap * 2 : 1024;
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

void sp_u64_map_release(struct sp_u64_map *m) {
    sp_free(m->key);
    sp_free(m->val);
    sp_free(m->used);
    memset(m, 0, sizeof *m);
}
