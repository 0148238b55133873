/* formats/devices_impl.h: device lists (formats/devices.c) and link matrices (formats/links.c). */
#ifndef SP_FORMATS_DEVICES_IMPL_H
#define SP_FORMATS_DEVICES_IMPL_H

#include "json_util.h"

struct sp_devices {
    size_t n;
    sp_device_info *info; /* info[n]; names owned */
};

struct sp_links {
    size_t n;
    char **names;       /* names[n] */
    double *bw_GBps;    /* [n * n], row = sender */
    double *latency_us; /* [n * n] */
};

/* sp_devices_from_json: a devices array at `where` (for messages), validated; problems go to
 * r->ctx. Used for "stagepart-devices" files and for a profile's "devices". */
sp_status sp_devices_from_json(struct sp_json_reader *r, const cJSON *arr, const char *where,
                               sp_devices **out);

/* sp_devices_select / sp_links_select: the devices idx[0..n-1] of src, in that order (copies;
 * indices must be valid). */
sp_status sp_devices_select(sp_ctx *ctx, const sp_devices *src, const size_t *idx, size_t n,
                            sp_devices **out);
sp_status sp_links_select(sp_ctx *ctx, const sp_links *src, const size_t *idx, size_t n,
                          sp_links **out);
/* sp_links_find: the index of the device called `name` in links, sp_links_get_count(links) when
 * the links file does not name it (links are matched to devices by name). */
size_t sp_links_find(const sp_links *links, const char *name);

/* sp_small_doc_parse / sp_small_doc_load: a small document (devices, links: at most 64 MiB) of
 * this format, version 1; SP_ERR_SCHEMA naming the file when it is another. */
sp_status sp_small_doc_parse(sp_ctx *ctx, const char *path, const char *data, size_t len,
                             const char *format, cJSON **root);
sp_status sp_small_doc_load(sp_ctx *ctx, const char *path, const char *format, cJSON **root);

/* sp_links_to_json: a "stagepart-links" document for n devices (names[n]) with these matrices
 * ([n * n], row = sender) into *json (sp_free it); `measurement` (or NULL) is taken over and
 * written last, what the numbers came from. */
sp_status sp_links_to_json(sp_ctx *ctx, size_t n, const char *const *names, const double *bw_GBps,
                           const double *latency_us, cJSON *measurement, char **json);

#endif
