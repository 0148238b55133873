/* profiler/module_names.c: what a module's range name says: its class, and from the class its
 * layer kind and whether it holds parameters (profiler/modules.h). */
#include <ctype.h>
#include <string.h>

#include "modules.h"

const char *sp_module_class(const char *range_name, size_t *len) {
    const char *s = sp_module_layer_name(range_name);
    size_t n = strlen(s), k = n;
    while (k > 0 && isdigit((unsigned char)s[k - 1]))
        k--;
    *len = k < n && k > 0 && s[k - 1] == '_' ? k - 1 : n;
    return s;
}

bool sp_module_class_is(const char *range_name, const char *cls) {
    size_t len = 0;
    const char *c = sp_module_class(range_name, &len);
    return len == strlen(cls) && strncmp(c, cls, len) == 0;
}

static bool contains_ci(const char *s, size_t len, const char *word) {
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= len; i++) {
        size_t k = 0;
        while (k < w && tolower((unsigned char)s[i + k]) == word[k])
            k++;
        if (k == w)
            return true;
    }
    return false;
}

bool sp_module_class_has(const char *range_name, const char *word) {
    size_t len = 0;
    const char *c = sp_module_class(range_name, &len);
    return contains_ci(c, len, word);
}

const char *sp_module_kind(const char *name) {
    static const struct {
        const char *word, *kind;
    } rules[] = {/* first match wins: "LlamaDecoderLayer" is a block, not attention */
                 {"loss", "loss"},
                 {"embed", "embedding"},
                 {"norm", "norm"},
                 {"basicblock", "conv"},
                 {"bottleneck", "conv"},
                 {"block", "transformer"},
                 {"decoderlayer", "transformer"},
                 {"encoderlayer", "transformer"},
                 {"transformerlayer", "transformer"},
                 {"bertlayer", "transformer"},
                 {"attention", "attention"},
                 {"attn", "attention"},
                 {"conv", "conv"},
                 {"head", "head"}};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (sp_module_class_has(name, rules[i].word))
            return rules[i].kind;
    return NULL;
}

bool sp_module_is_parameter_free(const char *range_name) {
    static const char *const words[] = {"dropout", "rotary",  "relu",    "gelu",
                                        "silu",    "tanh",    "sigmoid", "softmax",
                                        "flatten", "maxpool", "avgpool", "activation"};
    if (sp_module_class_is(range_name, "Identity"))
        return true;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (sp_module_class_has(range_name, words[i]))
            return true;
    return false;
}
