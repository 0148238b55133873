/* formats/profile_impl.h: what the profile reader (formats/profile.c) shares with the reader of
 * its "layers" array (formats/profile_layers.c). */
#ifndef SP_FORMATS_PROFILE_IMPL_H
#define SP_FORMATS_PROFILE_IMPL_H

#include "json_util.h"

/* The block every layer's name and kind lie in (*len bytes), so that a plan copies them at once;
 * NULL when there is none. */
const char *sp_profile_layer_pool(const sp_profile *p, size_t *len);

/* A copy of p whose layer l may not end a stage where no_cut[l] (n_layers entries), as if its
 * cut_after were false: its layers are its own, everything else (names, devices, digest) is p's,
 * borrowed: p must outlive it. sp_profile_destroy frees it. */
sp_status sp_profile_forbid_cuts(sp_ctx *ctx, const sp_profile *p, const bool *no_cut,
                                 sp_profile **out);

/* One layer object (or whatever stands there) read into *L, every problem reported as
 * "layers[i]..."; L's name and kind point into obj. */
void sp_profile_read_layer(struct sp_json_reader *r, const cJSON *obj, size_t i, sp_layer *L);

/* The layers of a profile, names and kinds NUL-terminated in pool, in layer order; each layer's
 * name and kind hold their offsets into pool (the pool moves as it grows). */
struct sp_profile_layers {
    sp_layer *layers;
    size_t n;
    struct sp_strbuf pool;
    const char *end; /* just past the array's "]" */
};

/* Work to do beside the reading when a thread is free (the profile's digest); done says whether
 * it ran, else the caller runs it. */
struct sp_side_job {
    void (*run)(void *arg);
    void *arg;
    bool done;
};

/* The size of the pieces the layers array is read in on several threads: about 4,500 layers of
 * the usual fields. Fuzzing builds make it small, so that small inputs are read in pieces too. */
#ifndef SP_PROFILE_PIECE_BYTES
#define SP_PROFILE_PIECE_BYTES ((size_t)1 << 20)
#endif

/* The array starting at array[0] (a "["), an element at a time, in text that goes on to
 * array[max_len] (a NUL: the document's end), in pieces of about piece_bytes (0: one piece) on
 * up to `threads` threads, this one among them (0: as many as the process may run on).
 * SP_OK: every layer read, what read_layer found reported through r as by one pass, out->end
 * where the array ends; SP_ERR_NOMEM; any other status (malformed, more than
 * SP_PROFILE_MAX_LAYERS): nothing kept, the whole-document reader says why. *out belongs to the
 * caller on SP_OK (sp_free its layers, release its pool). side (may be NULL) runs on one of the
 * threads when the array is read on several; side->done says whether it ran. */
sp_status sp_profile_layers_read(struct sp_json_reader *r, const char *array, size_t max_len,
                                 size_t piece_bytes, size_t threads, struct sp_side_job *side,
                                 struct sp_profile_layers *out);

#endif
