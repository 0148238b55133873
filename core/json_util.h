/* core/json_util.h: validating readers over cJSON trees that report problems with the file
 * name and JSON path, e.g. `model.json: layers[17].fwd_ms: expected a finite number >= 0,
 * got "abc"`. Each reader records a problem in the context and returns false on mismatch, so a
 * validator can go on and report every problem in one pass. */
#ifndef SP_CORE_JSON_UTIL_H
#define SP_CORE_JSON_UTIL_H

#include <cjson/cJSON.h>

#include "internal.h"

/* sp_cjson_parse: cJSON's parse (with length and options), one call at a time in the process
 * (cJSON's error position is one static variable that every parse writes); every parse goes
 * through it. */
cJSON *sp_cjson_parse(const char *text, size_t len, const char **end, bool require_nul);
/* the same lock held over several parses (the profile reader's batches: a lock taken once per
 * element made its threads hand it to each other a hundred thousand times); parse_locked only
 * between sp_cjson_lock and sp_cjson_unlock */
void sp_cjson_lock(void);
void sp_cjson_unlock(void);
cJSON *sp_cjson_parse_locked(const char *text, size_t len, const char **end, bool require_nul);
/* sp_json_parse: parse data[0..len) (data[len] must be '\0'). On malformed input fails with
 * SP_ERR_PARSE and "name:line:column: malformed JSON near '...'". Embedded NUL bytes and
 * trailing content are malformed. */
sp_status sp_json_parse(sp_ctx *ctx, const char *name, const char *data, size_t len, cJSON **out);
/* The same message for malformed JSON at `at` in data[0..len) (nul_byte: a NUL byte there). */
sp_status sp_json_fail_at(sp_ctx *ctx, const char *name, const char *data, size_t len,
                          const char *at, bool nul_byte);

/* ---- a large document a piece at a time (core/json_split.c). cJSON builds a whole document
 * in memory, a node per value; a trace of millions of events is instead split into its
 * members and array elements by their brackets and strings, and each piece is parsed (and so
 * validated) by cJSON on its own. Positions in messages are the document's. */

/* The first byte at or after p that is not JSON whitespace (end when there is none). */
const char *sp_json_skip_space(const char *p, const char *end);
/* Each member of the root object of doc[0..len): key as written between its quotes (escapes
 * not undone), the value's text. Stops at the first status fn returns that is not SP_OK. */
typedef sp_status (*sp_json_member_fn)(void *arg, const char *key, size_t key_len,
                                       const char *value, size_t value_len);
sp_status sp_json_split_object(sp_ctx *ctx, const char *name, const char *doc, size_t len,
                               sp_json_member_fn fn, void *arg);
/* The same, where take may read a member's value itself (a large array, read in pieces): it is
 * handed the value's start and the rest of the document, and says how long the value was
 * (*value_len), or 0 to leave it to the splitter and fn. */
typedef sp_status (*sp_json_take_fn)(void *arg, const char *key, size_t key_len, const char *value,
                                     size_t rest_len, size_t *value_len);
sp_status sp_json_split_object_take(sp_ctx *ctx, const char *name, const char *doc, size_t len,
                                    sp_json_take_fn take, sp_json_member_fn fn, void *arg);
/* Each element of the array at array[0..array_len) (a value of doc). */
typedef sp_status (*sp_json_element_fn)(void *arg, const char *value, size_t value_len);
sp_status sp_json_split_array(sp_ctx *ctx, const char *name, const char *doc, size_t doc_len,
                              const char *array, size_t array_len, sp_json_element_fn fn,
                              void *arg);
/* Parse one piece (a value's text within doc). */
sp_status sp_json_parse_piece(sp_ctx *ctx, const char *name, const char *doc, size_t doc_len,
                              const char *piece, size_t piece_len, cJSON **out);

/* sp_json_describe: short text for a value in "got ..." messages: "abc" (quoted, cut at 40
 * bytes), 12.5, true, null, an object, an array. Writes into buf. */
const char *sp_json_describe(const cJSON *v, char *buf, size_t size);

/* Field readers. `where` is the path of the containing object ("" for the root, "layers[3]"),
 * `key` the field. `required` false: an absent field (or null) leaves *out unchanged and
 * returns true. */
struct sp_json_reader {
    sp_ctx *ctx;
    const char *file;
};

bool sp_json_get_string(struct sp_json_reader *r, const cJSON *obj, const char *where,
                        const char *key, bool required, size_t max_len, const char **out);
/* finite number >= min; above max is reported as beyond the limit */
bool sp_json_get_number(struct sp_json_reader *r, const cJSON *obj, const char *where,
                        const char *key, bool required, double min, double max, double *out);
/* integer in [min, 2^53] */
bool sp_json_get_uint(struct sp_json_reader *r, const cJSON *obj, const char *where,
                      const char *key, bool required, uint64_t min, uint64_t *out);
bool sp_json_get_bool(struct sp_json_reader *r, const cJSON *obj, const char *where,
                      const char *key, bool required, bool *out);
/* The same checks on a value already looked up (v may be NULL: absent). Validators that read
 * many objects (profile layers) look fields up in one pass over the children and use these. */
bool sp_json_string(struct sp_json_reader *r, const cJSON *v, const char *where, const char *key,
                    bool required, size_t max_len, const char **out);
bool sp_json_number(struct sp_json_reader *r, const cJSON *v, const char *where, const char *key,
                    bool required, double min, double max, double *out);
bool sp_json_uint(struct sp_json_reader *r, const cJSON *v, const char *where, const char *key,
                  bool required, uint64_t min, uint64_t *out);
bool sp_json_bool(struct sp_json_reader *r, const cJSON *v, const char *where, const char *key,
                  bool required, bool *out);
/* A document's fields as a table: each one's key, type, whether it is required, where its value
 * goes (an offset into the caller's struct) and its range. sp_json_read_fields reads them all
 * from obj, reporting every problem; an absent optional field leaves its value as it was (the
 * caller's default). */
typedef enum sp_json_type {
    SP_JSON_UINT,   /* uint64_t, an integer in [min, max] (max 0: up to 2^53) */
    SP_JSON_NUMBER, /* double, a finite number in [min, max] */
    SP_JSON_BOOL,   /* bool */
    SP_JSON_STRING, /* const char * into the tree, at most max bytes */
    SP_JSON_ENUM    /* int, the value of a name in the `names` table */
} sp_json_type;
struct sp_json_field {
    const char *key;
    sp_json_type type;
    bool required;
    size_t offset;
    double min, max;
    sp_names names;
};
void sp_json_read_fields(struct sp_json_reader *r, const cJSON *obj, const char *where,
                         const struct sp_json_field *fields, size_t n, void *base);

/* the "format" and "version" header every stagepart document carries */
bool sp_json_check_header(struct sp_json_reader *r, const cJSON *root, const char *format,
                          int version);
void sp_json_problem(struct sp_json_reader *r, const char *where, const char *key, const char *fmt,
                     ...) SP_PRINTF(4, 5);

/* sp_json_print: root pretty-printed, ending in a newline, into *out (sp_free it); the tree is
 * left to the caller. expect_bytes: about how long the text will be (0: short), so that a large
 * document is printed into one buffer instead of one doubled and copied again and again.
 * SP_ERR_NOMEM naming `what` when memory runs out. */
sp_status sp_json_print(sp_ctx *ctx, const cJSON *root, size_t expect_bytes, const char *what,
                        char **out);

/* sp_json_check_unique_names: report every repeated name among n records of `stride` bytes from
 * `base`, whose first member is the name (a `const char *`), as "layers[i].name: duplicate layer
 * name ... (first used by layers[j])"; linear in n (an open-addressing hash set). false when out
 * of memory (nothing recorded: the caller reports it). */
bool sp_json_check_unique_names(struct sp_json_reader *r, const void *base, size_t stride,
                                size_t n);
/* the same for array[i].key, "duplicate <what> ..." */
bool sp_json_check_unique(struct sp_json_reader *r, const void *base, size_t stride, size_t n,
                          const char *array, const char *key, const char *what);

#endif
