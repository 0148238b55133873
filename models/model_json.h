/* models/model_json.h: what reading a "stagepart-model" document shares between its reader
 * (model_load.c) and its presets (model_presets.c). */
#ifndef SP_MODELS_MODEL_JSON_H
#define SP_MODELS_MODEL_JSON_H

#include "json_util.h"
#include "model_impl.h"

#define SP_MODEL_MAX_DIM (1u << 24) /* any one size: hidden, vocab, channels, ... */

/* an integer field in [lo, hi]; absent: *out = dflt when not required */
bool sp_model_get_dim(struct sp_json_reader *r, const cJSON *obj, const char *where,
                      const char *key, bool required, uint32_t lo, uint32_t hi, uint32_t dflt,
                      uint32_t *out);
/* one of names[] (NULL-terminated); absent: *out = dflt */
bool sp_model_get_choice(struct sp_json_reader *r, const cJSON *obj, const char *where,
                         const char *key, const char *const *names, int dflt, int *out);

/* the "gpt", "llama" or "bert" preset p (kind) appended to layers as explicit layer objects */
bool sp_model_expand_transformer(struct sp_json_reader *r, const cJSON *p, const char *kind,
                                 cJSON *layers);
/* the "resnet" preset p appended to layers; *input gets the image shape */
bool sp_model_expand_resnet(struct sp_json_reader *r, const cJSON *p, cJSON *layers,
                            struct sp_shape *input);

#endif
