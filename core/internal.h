/* core/internal.h: the plumbing every room of the library shares (docs/architecture.md), and
 * their tests.
 *
 * Not installed and not used by cli/ (which sees only <stagepart/stagepart.h>). Holds the
 * context layout, the allocator wrappers, the growable string buffer, the error recording
 * functions and the enums' names table. Nothing here exits, aborts or prints. */
#ifndef SP_CORE_INTERNAL_H
#define SP_CORE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "stagepart/stagepart.h"

#if defined(__GNUC__)
#define SP_PRINTF(fmt_idx, args_idx) __attribute__((format(printf, fmt_idx, args_idx)))
#else
#define SP_PRINTF(fmt_idx, args_idx)
#endif

/* Exact 128-bit integers (gcc and clang on 64-bit targets) for sums of squared nanoseconds and
 * memory products that do not fit in 64 bits. */
__extension__ typedef __int128 sp_i128;
__extension__ typedef unsigned __int128 sp_u128;

/* ---- allocator (core/alloc.c): every allocation goes through the hooks of sp_set_allocator */
void *sp_malloc(size_t size);
void *sp_calloc(size_t count, size_t size); /* zeroed; NULL on overflow */
void *sp_realloc(void *ptr, size_t size);
void *sp_mallocarray(size_t count, size_t size); /* NULL on overflow */
char *sp_strdup(const char *s);
char *sp_strndup(const char *s, size_t n);
/* how many allocations have failed in this process (cJSON's included) */
unsigned long sp_alloc_failures(void);

/* ---- growable NUL-terminated string (core/strbuf.c). A failed append marks it `oom` and
 * leaves the content as it was, so callers check once at the end. */
struct sp_strbuf {
    char *buf;
    size_t len, cap;
    bool oom;
};
void sp_strbuf_init(struct sp_strbuf *sb);
void sp_strbuf_release(struct sp_strbuf *sb);
void sp_strbuf_reset(struct sp_strbuf *sb);
void sp_strbuf_append(struct sp_strbuf *sb, const char *s, size_t n);
/* room for `extra` more bytes (and the NUL) made now; false (and oom set) when memory ran out */
bool sp_strbuf_reserve(struct sp_strbuf *sb, size_t extra);
void sp_strbuf_puts(struct sp_strbuf *sb, const char *s);
void sp_strbuf_printf(struct sp_strbuf *sb, const char *fmt, ...) SP_PRINTF(2, 3);
void sp_strbuf_vprintf(struct sp_strbuf *sb, const char *fmt, va_list ap) SP_PRINTF(2, 0);
const char *sp_strbuf_str(const struct sp_strbuf *sb); /* "" when empty */

/* ---- context (core/ctx.c) */
#define SP_MAX_REPORTED_PROBLEMS 50

struct sp_ctx {
    struct sp_strbuf err;  /* detail of the last failure, one line per problem */
    struct sp_strbuf warn; /* warnings of the last call */
    unsigned problems;     /* lines in err (extra ones are counted, not stored) */
    sp_status status;
};

/* sp_ctx_begin: start a public call: clears the previous error and warnings. */
void sp_ctx_begin(sp_ctx *ctx);
/* sp_fail: replace the error detail with one line and return status (for `return sp_fail(..)`). */
sp_status sp_fail(sp_ctx *ctx, sp_status status, const char *fmt, ...) SP_PRINTF(3, 4);
/* sp_problem: add one line to the error detail (for validators that report every problem). */
void sp_problem(sp_ctx *ctx, const char *fmt, ...) SP_PRINTF(2, 3);
/* sp_problems_finish: append "... and N more problems" if lines were dropped. */
void sp_problems_finish(sp_ctx *ctx);
void sp_warn(sp_ctx *ctx, const char *fmt, ...) SP_PRINTF(2, 3);
/* sp_oom: record an allocation failure with what was being allocated: SP_ERR_NOMEM, or
 * SP_ERR_LIMIT naming the memory budget when the budget refused it (on this thread). */
sp_status sp_oom(sp_ctx *ctx, const char *what);

/* ---- allocation (core/alloc.c) */
/* A parse arena: between sp_parse_arena_enter and sp_parse_arena_leave, cJSON's allocations on
 * this thread come from the arena (what does not fit from the counted allocator) and freeing
 * them does nothing. Every cJSON item made inside must be deleted before leaving: leaving
 * reclaims the arena's memory all at once. Not nested; one arena a thread at a time. */
struct sp_parse_arena {
    char *buf;
    size_t cap, used;
    bool spilled; /* since entered, an allocation did not fit and came from the allocator */
};
bool sp_parse_arena_init(struct sp_parse_arena *a, size_t cap); /* false: out of memory */
void sp_parse_arena_release(struct sp_parse_arena *a);
void sp_parse_arena_enter(struct sp_parse_arena *a); /* a without memory: enters nothing */
void sp_parse_arena_leave(void);
/* whether everything cJSON allocated since entering came from the arena: then leaving frees the
 * tree, and cJSON_Delete (a walk over every node) is not needed */
bool sp_parse_arena_holds_all(const struct sp_parse_arena *a);
/* hand cJSON the counting allocator (once; sp_ctx_create calls it) */
void sp_alloc_init(void);
/* *flag, read by an atomic load: a cancel flag (sp_run_opts.cancel) is set by another thread or a
 * signal handler while the stages read it (ThreadSanitizer: a plain read is a data race) */
static inline bool sp_cancel_requested(const volatile int *flag) {
    return __atomic_load_n(flag, __ATOMIC_RELAXED) != 0;
}
/* a pthread_create failure (its return value): SP_ERR_NOMEM for EAGAIN (no memory for the
 * thread's stack under a limit, or too many threads), else SP_ERR_NO_DEVICE; and the words for a
 * message: its reason, and for EAGAIN the limits to look at */
sp_status sp_thread_start_status(int err);
const char *sp_thread_start_hint(int err);
/* the threads a call may use, itself included: the CPUs this process may run on, or the host's
 * limit (sp_set_thread_limit), at least 1 */
size_t sp_threads_usable(void);
/* sp_budget_reserve: count bytes that someone else maps for the library (OpenBLAS's buffer)
 * against the memory budget, as if allocated; false (and the next sp_oom says "over the memory
 * budget") when they do not fit. sp_budget_release gives them back. */
bool sp_budget_reserve(size_t bytes);
void sp_budget_release(size_t bytes);
/* sp_advise_pages: madvise(advice) for the whole pages inside [p, p + len); a hint, whose result
 * does not matter */
void sp_advise_pages(void *p, size_t len, int advice);
/* whether the allocator is malloc's (thread-safe), not one from sp_set_allocator */
bool sp_alloc_is_default(void);
/* whether the budget refused an allocation on this thread since the last call */
bool sp_alloc_take_over_budget(void);

/* ---- files (core/file_io.c) */
/* sp_read_file: whole file into a NUL-terminated buffer (sp_free it). Refuses files larger than
 * max_bytes with SP_ERR_LIMIT. */
sp_status sp_read_file(sp_ctx *ctx, const char *path, size_t max_bytes, char **out_data,
                       size_t *out_len);

/* ---- hashing (core/sha256.c): out_hex gets 64 lowercase hex digits and a NUL. */
/* sp_ere_translate: a user's pattern as a POSIX extended regex: Python's \d \w \s (and \D \W
 * \S outside brackets) become bracket classes, Python's escaped literals inside [...] the
 * literals; (?...), lazy quantifiers and \b-like anchors are refused naming `what` and the
 * pattern. *out is freed with sp_free (core/regex_ere.c). */
sp_status sp_ere_translate(sp_ctx *ctx, const char *what, const char *in, char **out);
sp_status sp_sha256_hex(sp_ctx *ctx, const void *data, size_t len, char out_hex[65]);

#define SP_COUNT_OF(a) (sizeof(a) / sizeof *(a))

/* ---- the names of every public enum (core/names.c, the one table; the public sp_<enum>_name and
 * sp_<enum>_from_name are made from it): by table, the value of a name or -1, for readers that
 * take any enum */
typedef enum sp_names {
    SP_NAMES_SCHEDULE,
    SP_NAMES_CHUNK_LAYOUT,
    SP_NAMES_SOLVER,
    SP_NAMES_OBJECTIVE,
    SP_NAMES_GUARANTEE,
    SP_NAMES_COMM,
    SP_NAMES_PLACEMENT,
    SP_NAMES_EXPORT_FORMAT,
    SP_NAMES_FRAMEWORK,
    SP_NAMES_REPLICA_COST,
    SP_NAMES_TRANSPORT,
    SP_NAMES_RUN_BACKEND,
    SP_NAMES_RUN_FAULT
} sp_names;
int sp_names_value(sp_names table, const char *name);

/* ---- statistics (core/median.c): the median of v[n], sorting v in place; 0 when n is 0 */
double sp_median(double *v, size_t n);

/* sp_shown: v as it reads printed with `decimals` decimals: 0 where it would print as -0.0
 * (core/shown.c) */
double sp_shown(double v, int decimals);

/* ---- time */
double sp_now_ms(void); /* monotonic clock, milliseconds */

/* sp_str_eq: equal strings. The address and the first byte decide most comparisons of a
 * profile's kinds without a call: the reader gives a run of layers of one kind one copy. */
static inline bool sp_str_eq(const char *a, const char *b) {
    return a == b || (a[0] == b[0] && strcmp(a, b) == 0);
}

/* Conversions between the API's milliseconds and the partitioner's exact integer ticks. */
#define SP_TICKS_PER_MS 1000000.0 /* 1 tick = 1 ns */
/* sp_round_ticks: llround (halves away from zero) without the call, exact: below 2^62 in
 * magnitude the cast truncates exactly and x minus its truncation is x's fraction, exactly;
 * beyond (never a layer's time), llround itself. The partitioner converts every layer's times
 * on every pass over a profile: a 100,000-layer plan was built in 2.2 ms with the calls, 1.3 ms
 * without. */
int64_t sp_round_ticks_far(double x);
static inline int64_t sp_round_ticks(double x) {
    if (!(x > -4611686018427387904.0 && x < 4611686018427387904.0))
        return sp_round_ticks_far(x);
    int64_t t = (int64_t)x;
    double frac = x - (double)t;
    return t + (frac >= 0.5) - (frac <= -0.5);
}
static inline int64_t sp_ms_to_ticks(double ms) {
    return sp_round_ticks(ms * SP_TICKS_PER_MS);
}
double sp_ticks_to_ms(int64_t ticks);
/* sp_layer_ticks: a layer's stage-time contribution, fwd and bwd rounded separately, so a
 * stage's fwd ticks + bwd ticks equal its time ticks exactly. */
static inline int64_t sp_layer_fwd_ticks(const sp_layer *layer) {
    return sp_ms_to_ticks(layer->fwd_ms);
}
static inline int64_t sp_layer_bwd_ticks(const sp_layer *layer) {
    return sp_ms_to_ticks(layer->bwd_ms);
}
static inline int64_t sp_layer_ticks(const sp_layer *layer) {
    return sp_layer_fwd_ticks(layer) + sp_layer_bwd_ticks(layer);
}
/* sp_speed_scale: ticks of work on a device of relative speed `speed`, rounded to a tick. */
int64_t sp_speed_scale(int64_t ticks, double speed);

#endif
