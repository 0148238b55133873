/* core/alloc.c: the library's allocator hooks (sp_set_allocator), also handed to cJSON so that
 * fault-injection tests see every allocation. */
#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static sp_malloc_fn g_malloc = malloc;
static sp_realloc_fn g_realloc = realloc;
static sp_free_fn g_free = free;
/* failed allocations so far, so a parser that only says "failed" (cJSON) can be told apart from
 * one that ran out of memory; relaxed: only compared around a call on the same thread */
static _Atomic unsigned long g_failures;

static void *counted_malloc(size_t size) {
    void *p = g_malloc(size ? size : 1);
    if (!p)
        g_failures++;
    return p;
}
static void counted_free(void *p) {
    g_free(p);
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
    cJSON_Hooks hooks = {counted_malloc, counted_free};
    cJSON_InitHooks(&hooks);
    return SP_OK;
}

void *sp_malloc(size_t size) {
    return counted_malloc(size);
}

void *sp_realloc(void *ptr, size_t size) {
    void *p = g_realloc(ptr, size ? size : 1);
    if (!p)
        g_failures++;
    return p;
}

void sp_free(void *ptr) {
    if (ptr)
        g_free(ptr);
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
