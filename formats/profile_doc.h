/* formats/profile_doc.h: a profile as its producers hand it to the one writer of the
 * "stagepart-profile" document (formats/profile_write.c; read in formats/profile.c): the CPU
 * model profiler (profiler/model_cpu.c) and the trace importers (profiler/trace_profile.c). The
 * fields are the document's (docs/formats.md); how each producer measured them rides along as
 * JSON of its own ("measurement", each layer's "measured"). */
#ifndef SP_FORMATS_PROFILE_DOC_H
#define SP_FORMATS_PROFILE_DOC_H

#include <cjson/cJSON.h>

#include "internal.h"

struct sp_profile_doc_layer {
    const char *name;
    const char *kind; /* NULL: not written (a reader takes "layer") */
    double fwd_ms, bwd_ms;
    double wgrad_ms;     /* < 0: not written (unknown) */
    double recompute_ms; /* <= 0: not written */
    bool has_activation_bytes;
    uint64_t activation_bytes;
    bool has_model_bytes; /* saved, parameter and memory bytes known exactly */
    bool has_param_bytes; /* parameter bytes alone known (a module map's) */
    uint64_t saved_bytes, param_bytes, memory_bytes;
    cJSON *measured; /* how the layer's numbers were measured, or NULL; the writer takes it */
};

struct sp_profile_doc {
    const char *model, *source;
    const char *device; /* NULL: not written */
    uint64_t micro_batch_size;
    bool forward_only;    /* no layer has a backward time: written as "forward_only": true */
    bool wgrad_estimated; /* the layers' wgrad_ms are estimated: "wgrad_estimated": true */
    cJSON
        *measurement; /* the producer's account of the measurement, or NULL; the writer takes it */
    struct sp_profile_doc_layer *layers;
    size_t n_layers;
};

/* sp_profile_doc_to_json: the document into *json (sp_free it). The measurement objects are
 * taken over (set to NULL in doc) whatever it returns. */
sp_status sp_profile_doc_to_json(sp_ctx *ctx, struct sp_profile_doc *doc, char **json);
/* sp_profile_doc_release: the measurement objects of a doc not written */
void sp_profile_doc_release(struct sp_profile_doc *doc);

#endif
