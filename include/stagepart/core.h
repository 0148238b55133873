/* stagepart/core.h: the library itself: version and features, the allocator, status names,
 * the context that carries error detail and warnings, atomic file writes and byte counts. Part
 * of <stagepart/stagepart.h>, whose opening comment holds the rules for ownership, errors,
 * threads and units. */
#ifndef STAGEPART_CORE_H
#define STAGEPART_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stagepart/status.h"
#include "stagepart/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* SP_API marks what the library exports. */
#if defined(__GNUC__)
#define SP_API __attribute__((visibility("default")))
#else
#define SP_API
#endif

/* ---------------------------------------------------------------------------------------------
 * Library, allocator, status
 * ------------------------------------------------------------------------------------------- */

/* sp_version: "MAJOR.MINOR.PATCH" of the library. Static string. */
SP_API const char *sp_version(void);
/* sp_git_hash: the commit the library was built from, or "unknown". Static string. */
SP_API const char *sp_git_hash(void);
/* sp_features: space-separated compiled-in features (e.g. "cuda sanitize"); "" when none.
 * Static string. */
SP_API const char *sp_features(void);

/* sp_status_name: the enum name of a status ("SP_ERR_PARSE"). sp_strerror: its one-line
 * lowercase message ("malformed JSON"). Both return static strings, "SP_ERR_UNKNOWN" /
 * "unknown status" for values outside the enum. */
SP_API const char *sp_status_name(sp_status status);
SP_API const char *sp_strerror(sp_status status);

/* sp_set_allocator: replace the allocator used for every allocation the library makes
 * (cJSON's included). Pass NULL for all three to restore malloc/realloc/free. Call it before
 * any other function, from one thread; objects made with one allocator must be freed with the
 * same one. Used by the fault-injection tests. Returns SP_ERR_INVALID_ARG when only some of the
 * three are NULL. */
typedef void *(*sp_malloc_fn)(size_t size);
typedef void *(*sp_realloc_fn)(void *ptr, size_t size);
typedef void (*sp_free_fn)(void *ptr);
SP_API sp_status sp_set_allocator(sp_malloc_fn malloc_fn, sp_realloc_fn realloc_fn,
                                  sp_free_fn free_fn);
/* sp_set_memory_budget: the most bytes the library may hold at once, over all threads (0, the
 * library's default: no budget; the stagepart command sets one, docs/security.md). An
 * allocation that would pass it fails, and the call that made it returns SP_ERR_LIMIT with a
 * message naming the budget, having freed what it took. Counted with the default allocator only
 * (usable block sizes); thread-safe. sp_memory_in_use: the bytes counted now.
 * sp_memory_limit: how much more this process may take: the least headroom under physical
 * memory and the cgroup's memory.max (against its resident size), RLIMIT_AS (against its address
 * space) and RLIMIT_DATA (0 when none can be read). */
SP_API void sp_set_memory_budget(size_t bytes);
SP_API size_t sp_memory_budget(void);
SP_API size_t sp_memory_in_use(void);
SP_API size_t sp_memory_limit(void);
/* sp_free: release a char * buffer returned by the library. sp_free(NULL) is a no-op. */
SP_API void sp_free(void *ptr);

/* sp_cuda_device_count: number of CUDA devices the runtime sees. Returns SP_ERR_UNSUPPORTED
 * when the build has no CUDA support, SP_ERR_NO_DEVICE when no driver or device is present,
 * SP_ERR_CUDA for other runtime errors. */
typedef struct sp_ctx sp_ctx;
SP_API sp_status sp_cuda_device_count(sp_ctx *ctx, int *out_count);

/* ---------------------------------------------------------------------------------------------
 * Context: error detail and warnings
 * ------------------------------------------------------------------------------------------- */
/* sp_ctx_create: a new context. Returns SP_ERR_NOMEM or SP_ERR_INVALID_ARG (out == NULL). */
SP_API sp_status sp_ctx_create(sp_ctx **out);
SP_API void sp_ctx_destroy(sp_ctx *ctx);
/* sp_ctx_get_errmsg: detail of the last failure on this context ("" when none); one line per
 * problem. Borrowed, valid until the next call that takes ctx. */
SP_API const char *sp_ctx_get_errmsg(const sp_ctx *ctx);
/* sp_ctx_get_warnings: warnings the last successful call recorded (e.g. an option ignored by the
 * chosen solver), one per line, "" when none. Borrowed, like sp_ctx_get_errmsg. */
SP_API const char *sp_ctx_get_warnings(const sp_ctx *ctx);

/* ---------------------------------------------------------------------------------------------
 * Writing files atomically
 * ------------------------------------------------------------------------------------------- */

/* sp_set_thread_limit: the most threads one library call uses of its own accord, itself
 * included: reading a large file in two halves, and a profile's layers read in pieces. 0 (the
 * default) is as many as the CPUs the process may run on (its affinity); 1 starts none. The
 * threads that are the work itself are not counted: sp_run's one per pipeline stage, the link
 * probes' pairs, the profile measuring thread. The CLI sets it from STAGEPART_THREADS. */
SP_API void sp_set_thread_limit(unsigned threads);

/* sp_write_file_atomic: write len bytes to path, by what path is. A regular file (or none yet)
 * is written through a temporary file in its folder, flushed and fsync'ed, then renamed over it,
 * keeping an existing file's mode; on any failure the temporary file is removed and the existing
 * file is left untouched. A symbolic link is followed and its target written so, where it lives.
 * A character device or FIFO is opened and written in place, never replaced. "-" is standard
 * output (stdout is flushed first). A directory, a block device, a socket, or a folder that is
 * missing is refused. Returns SP_ERR_IO (detail names the path and the reason) or
 * SP_ERR_INVALID_ARG. */
SP_API sp_status sp_write_file_atomic(sp_ctx *ctx, const char *path, const void *data, size_t len);

/* sp_parse_bytes: parse a byte count with an optional suffix: plain digits, or a decimal
 * number followed by B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of
 * 1024), case-insensitive, e.g. "80GB", "80GiB", "1.5TB", "4096". The result must be an
 * integer number of bytes in [0, 2^53]. Returns SP_ERR_INVALID_ARG with a message naming
 * the text when it is not such a count. */
SP_API sp_status sp_parse_bytes(sp_ctx *ctx, const char *text, uint64_t *out_bytes);

/* sp_format_bytes: a byte count for people, in decimal units B, kB, MB, GB, TB with three
 * significant digits ("1.23 GB", "999 B"). Writes at most size bytes into buf (16 is always enough)
 * and returns buf. */
SP_API const char *sp_format_bytes(uint64_t bytes, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
