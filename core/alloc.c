/* core/alloc.c: the library's allocator hooks (sp_set_allocator), also handed to cJSON so that
 * fault-injection tests see every allocation, and the memory budget (sp_set_memory_budget): with
 * the default allocator every block's usable size is counted, and an allocation that would pass
 * the budget fails, so a file too large for this machine is refused with a message instead of
 * ending in the kernel's OOM killer. */
#define _DEFAULT_SOURCE /* madvise */
#include <cjson/cJSON.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

static sp_malloc_fn g_malloc = malloc;
static sp_realloc_fn g_realloc = realloc;
static sp_free_fn g_free = free;
/* failed allocations so far, so a parser that only says "failed" (cJSON) can be told apart from
 * one that ran out of memory; relaxed: only compared around a call on the same thread */
static _Atomic unsigned long g_failures;
/* usable bytes of the default allocator's live blocks; signed, since a block made with a custom
 * allocator and freed after the default came back (which the header forbids) would otherwise
 * wrap it around */
static _Atomic long long g_in_use;
static _Atomic size_t g_budget; /* 0: none */
static _Thread_local bool t_over_budget;

static bool counting(void) {
    return g_malloc == malloc;
}

/* whether growing the library's memory by `more` bytes (freeing `less`) stays in the budget */
static bool within_budget(size_t more, size_t less) {
    size_t budget = atomic_load_explicit(&g_budget, memory_order_relaxed);
    if (!budget || !counting())
        return true;
    long long in_use = atomic_load_explicit(&g_in_use, memory_order_relaxed) - (long long)less;
    size_t used = in_use > 0 ? (size_t)in_use : 0;
    if (more <= budget && used <= budget - more)
        return true;
    t_over_budget = true;
    g_failures++;
    return false;
}

bool sp_budget_reserve(size_t bytes) {
    if (!within_budget(bytes, 0))
        return false;
    atomic_fetch_add_explicit(&g_in_use, (long long)bytes, memory_order_relaxed);
    return true;
}

void sp_budget_release(size_t bytes) {
    atomic_fetch_sub_explicit(&g_in_use, (long long)bytes, memory_order_relaxed);
}

/* madvise for the whole pages inside a block: only for the library's own buffers, filled at once
 * (sp_read_file). The library sets no lasting page policy (huge pages or otherwise) on the memory
 * it takes from its host program's heap: that is the program's to choose (docs/security.md). */
void sp_advise_pages(void *p, size_t len, int advice) {
    long size = sysconf(_SC_PAGESIZE);
    const uintptr_t page = size > 0 ? (uintptr_t)size : 4096;
    uintptr_t from = ((uintptr_t)p + page - 1) & ~(page - 1),
              to = ((uintptr_t)p + len) & ~(page - 1);
    if (to > from)
        (void)madvise((void *)from, to - from, advice);
}

static void *counted_malloc(size_t size) {
    size = size ? size : 1;
    if (!within_budget(size, 0))
        return NULL;
    void *p = g_malloc(size);
    if (!p)
        g_failures++;
    else if (counting()) {
        atomic_fetch_add_explicit(&g_in_use, (long long)malloc_usable_size(p),
                                  memory_order_relaxed);
    }
    return p;
}
static void counted_free(void *p) {
    if (!p)
        return;
    if (counting())
        atomic_fetch_sub_explicit(&g_in_use, (long long)malloc_usable_size(p),
                                  memory_order_relaxed);
    g_free(p);
}

/* ---- the parse arena: while one is entered on a thread, cJSON's allocations on that thread are
 * carved from it and its frees of them do nothing; what does not fit goes to the counted
 * allocator as always. A streaming reader parses a small piece, reads it and deletes it, a
 * hundred thousand times for a large profile, and malloc and free of its nodes were a third of
 * the read. */
static _Thread_local struct sp_parse_arena *t_arena;

static bool in_arena(const struct sp_parse_arena *a, const void *p) {
    uintptr_t at = (uintptr_t)p, base = (uintptr_t)a->buf;
    return at >= base && at < base + a->cap;
}

static void *cjson_malloc(size_t size) {
    struct sp_parse_arena *a = t_arena;
    size_t need = (size + 15) & ~(size_t)15; /* max_align_t on the targets */
    if (a && need >= size && need <= a->cap - a->used) {
        void *p = a->buf + a->used;
        a->used += need;
        return p;
    }
    if (a)
        a->spilled = true;
    return counted_malloc(size);
}

static void cjson_free(void *p) {
    struct sp_parse_arena *a = t_arena;
    if (a && in_arena(a, p))
        return;
    counted_free(p);
}

bool sp_parse_arena_init(struct sp_parse_arena *a, size_t cap) {
    a->used = 0;
    a->spilled = false;
    a->buf = sp_malloc(cap);
    a->cap = a->buf ? cap : 0;
    return a->buf != NULL;
}

void sp_parse_arena_release(struct sp_parse_arena *a) {
    sp_free(a->buf);
    a->buf = NULL;
    a->cap = a->used = 0;
}

void sp_parse_arena_enter(struct sp_parse_arena *a) {
    a->used = 0;
    a->spilled = false;
    t_arena = a->buf ? a : NULL;
}

bool sp_parse_arena_holds_all(const struct sp_parse_arena *a) {
    return a->buf && !a->spilled;
}

void sp_parse_arena_leave(void) {
    if (t_arena)
        t_arena->used = 0;
    t_arena = NULL;
}

static void install_cjson_hooks(void) {
    cJSON_Hooks hooks = {cjson_malloc, cjson_free};
    cJSON_InitHooks(&hooks);
}

void sp_alloc_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_cjson_hooks);
}

void sp_set_memory_budget(size_t bytes) {
    atomic_store(&g_budget, bytes);
}

size_t sp_memory_budget(void) {
    return atomic_load(&g_budget);
}

size_t sp_memory_in_use(void) {
    long long v = atomic_load(&g_in_use);
    return v > 0 ? (size_t)v : 0;
}

bool sp_alloc_is_default(void) {
    return counting();
}

bool sp_alloc_take_over_budget(void) {
    bool was = t_over_budget;
    t_over_budget = false;
    return was;
}

unsigned long sp_alloc_failures(void) {
    return g_failures;
}

sp_status sp_set_allocator(sp_malloc_fn malloc_fn, sp_realloc_fn realloc_fn, sp_free_fn free_fn) {
    bool all_null = !malloc_fn && !realloc_fn && !free_fn;
    bool all_set = malloc_fn && realloc_fn && free_fn;
    if (!all_null && !all_set)
        return SP_ERR_INVALID_ARG;
    g_malloc = all_null ? malloc : malloc_fn;
    g_realloc = all_null ? realloc : realloc_fn;
    g_free = all_null ? free : free_fn;
    install_cjson_hooks();
    return SP_OK;
}

void *sp_malloc(size_t size) {
    return counted_malloc(size);
}

void *sp_realloc(void *ptr, size_t size) {
    size = size ? size : 1;
    size_t old = ptr && counting() ? malloc_usable_size(ptr) : 0;
    if (!within_budget(size, old))
        return NULL;
    void *p = g_realloc(ptr, size);
    if (!p) {
        g_failures++;
    } else if (counting()) {
        atomic_fetch_add_explicit(&g_in_use, (long long)malloc_usable_size(p) - (long long)old,
                                  memory_order_relaxed);
    }
    return p;
}

void sp_free(void *ptr) {
    counted_free(ptr);
}

void *sp_mallocarray(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size)
        return NULL;
    return sp_malloc(count * size);
}

void *sp_calloc(size_t count, size_t size) {
    void *p = sp_mallocarray(count, size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

char *sp_strndup(const char *s, size_t n) {
    char *d = sp_malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

char *sp_strdup(const char *s) {
    return sp_strndup(s, strlen(s));
}
