/* partitioner/solvers/interleaved_memo.c: the search cache
 * (partitioner/solvers/interleaved_memo.h). */
#include <string.h>

#include "interleaved_memo.h"

#define MEMO_FIRST_SLOTS ((size_t)1 << 12)

static size_t hash_key(const uint32_t *key, uint32_t len) {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (uint32_t i = 0; i < len; i++) {
        h ^= key[i];
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    return (size_t)h;
}

static bool alloc_slots(struct sp_tuple_memo *m, size_t slots) {
    uint32_t *stamp = sp_calloc(slots, sizeof *stamp);
    uint32_t *key = sp_mallocarray(slots * m->key_len, sizeof *key);
    uint32_t *next = m->next_len ? sp_mallocarray(slots * m->next_len, sizeof *next) : NULL;
    sp_i128 *value = sp_mallocarray(slots, sizeof *value);
    int64_t *extra = sp_mallocarray(slots, sizeof *extra);
    if (!stamp || !key || (m->next_len && !next) || !value || !extra) {
        sp_free(stamp);
        sp_free(key);
        sp_free(next);
        sp_free(value);
        sp_free(extra);
        return false;
    }
    m->extra = extra;
    m->stamp = stamp;
    m->key = key;
    m->next = next;
    m->value = value;
    m->slots = slots;
    return true;
}

sp_status sp_tuple_memo_init(sp_ctx *ctx, struct sp_tuple_memo *m, uint32_t key_len,
                             uint32_t next_len, size_t max_slots) {
    memset(m, 0, sizeof *m);
    m->key_len = key_len;
    m->next_len = next_len;
    m->gen = 1;
    m->max_slots = max_slots < MEMO_FIRST_SLOTS ? MEMO_FIRST_SLOTS : max_slots;
    if (!alloc_slots(m, MEMO_FIRST_SLOTS))
        return sp_oom(ctx, "caching the interleaved search");
    return SP_OK;
}

void sp_tuple_memo_release(struct sp_tuple_memo *m) {
    sp_free(m->stamp);
    sp_free(m->key);
    sp_free(m->next);
    sp_free(m->value);
    sp_free(m->extra);
    memset(m, 0, sizeof *m);
}

void sp_tuple_memo_clear(struct sp_tuple_memo *m) {
    m->used = 0;
    if (++m->gen == 0) { /* stamps wrapped: really empty them */
        memset(m->stamp, 0, m->slots * sizeof *m->stamp);
        m->gen = 1;
    }
}

/* the slot holding key, or the empty slot where it would go */
static size_t find_slot(const struct sp_tuple_memo *m, const uint32_t *key) {
    size_t mask = m->slots - 1, i = hash_key(key, m->key_len) & mask;
    while (m->stamp[i] == m->gen &&
           memcmp(m->key + i * m->key_len, key, m->key_len * sizeof *key) != 0)
        i = (i + 1) & mask;
    return i;
}

bool sp_tuple_memo_get(const struct sp_tuple_memo *m, const uint32_t *key, sp_i128 *value,
                       int64_t *extra, uint32_t *next) {
    size_t i = find_slot(m, key);
    if (m->stamp[i] != m->gen)
        return false;
    *value = m->value[i];
    if (extra)
        *extra = m->extra[i];
    if (next && m->next_len)
        memcpy(next, m->next + i * m->next_len, m->next_len * sizeof *next);
    return true;
}

static void put_slot(struct sp_tuple_memo *m, const uint32_t *key, sp_i128 value, int64_t extra,
                     const uint32_t *next) {
    size_t i = find_slot(m, key);
    if (m->stamp[i] != m->gen) {
        m->stamp[i] = m->gen;
        memcpy(m->key + i * m->key_len, key, m->key_len * sizeof *key);
        m->used++;
    }
    m->value[i] = value;
    m->extra[i] = extra;
    if (m->next_len && next)
        memcpy(m->next + i * m->next_len, next, m->next_len * sizeof *next);
}

/* twice the slots, the live entries moved over; false (nothing changed) when out of memory */
static bool grow(struct sp_tuple_memo *m) {
    struct sp_tuple_memo old = *m;
    if (!alloc_slots(m, old.slots * 2)) {
        *m = old;
        return false;
    }
    m->used = 0;
    m->gen = 1;
    for (size_t i = 0; i < old.slots; i++)
        if (old.stamp[i] == old.gen)
            put_slot(m, old.key + i * old.key_len, old.value[i], old.extra[i],
                     old.next_len ? old.next + i * old.next_len : NULL);
    sp_free(old.stamp);
    sp_free(old.key);
    sp_free(old.next);
    sp_free(old.value);
    sp_free(old.extra);
    return true;
}

void sp_tuple_memo_put(struct sp_tuple_memo *m, const uint32_t *key, sp_i128 value, int64_t extra,
                       const uint32_t *next) {
    if ((m->used + 1) * 4 > m->slots * 3 && (m->slots >= m->max_slots || !grow(m)))
        sp_tuple_memo_clear(m);
    put_slot(m, key, value, extra, next);
}
