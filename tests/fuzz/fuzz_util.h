/* fuzz_util.h: what the libFuzzer targets share. Each target feeds one reader the fuzzer's bytes
 * and asserts only what must hold for any input: the call returns (no crash, no sanitizer
 * report, no leak) and a failure carries a message. */
#ifndef SP_FUZZ_UTIL_H
#define SP_FUZZ_UTIL_H

#include <stagepart/stagepart.h>

#include <stddef.h>
#include <stdint.h>

/* the input copied into a fresh buffer with a terminating '\0' (the *_parse contract); NULL
 * when out of memory. Free with free(). */
char *fuzz_cstring(const uint8_t *data, size_t size);

/* the input written to this process's temporary file, for readers that only take a path;
 * returns the path, or NULL when the file cannot be written. */
const char *fuzz_temp_file(const uint8_t *data, size_t size);

/* trap (a crash the fuzzer reports) unless a failed call left a message in the context */
void fuzz_require_message(const sp_ctx *ctx, sp_status status);

/* a trace that loaded is attributed and made a profile; a failure carries a message, and a
 * profile made must read back with sp_profile_parse (else a trap) */
void fuzz_check_trace(sp_ctx *ctx, const sp_trace *trace);

#endif
