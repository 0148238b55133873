/* stagepart/devices.h: the devices stages run on and the links between them (formats/). */
#ifndef STAGEPART_DEVICES_H
#define STAGEPART_DEVICES_H

#include "stagepart/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Devices and links (docs/formats.md)
 * ------------------------------------------------------------------------------------------- */
typedef struct sp_devices sp_devices;
typedef struct sp_links sp_links;

typedef struct sp_device_info {
    const char *name;
    double speed;          /* relative speed (> 0): a stage's time is its work / speed */
    uint64_t memory_bytes; /* memory of the device; 0: not limited */
} sp_device_info;

#define SP_MAX_DEVICES 65536u
#define SP_MIN_SPEED   0.001
#define SP_MAX_SPEED   1000.0
/* A link's bandwidth is at least 1 MB/s and its latency at most 10 s, so one transfer of any
 * activation a profile can hold (2^53 bytes) takes at most SP_MAX_TRANSFER_MS (about 285
 * years: finite, and what a plan's send_ms may hold). Blocking transfers add to stage times,
 * which sp_partition keeps below 2^62 ns (SP_ERR_LIMIT otherwise). */
#define SP_LINKS_MIN_BANDWIDTH_GBPS 1e-3
#define SP_LINKS_MAX_LATENCY_US     1e7
#define SP_MAX_TRANSFER_MS                                                                         \
    (SP_LINKS_MAX_LATENCY_US / 1e3 + SP_MAX_EXACT_INTEGER / (SP_LINKS_MIN_BANDWIDTH_GBPS * 1e6))

/* sp_devices_load: a "stagepart-devices" file ({"format", "version": 1, "devices": [...]}).
 * Each device: "name" (string, unique), optional "speed" (default 1) and "memory_bytes".
 * Returns SP_ERR_IO, SP_ERR_PARSE, SP_ERR_SCHEMA, SP_ERR_LIMIT, SP_ERR_NOMEM. */
SP_API sp_status sp_devices_load(sp_ctx *ctx, const char *path, sp_devices **out);
SP_API void sp_devices_destroy(sp_devices *devices);
SP_API size_t sp_devices_get_count(const sp_devices *devices);
/* sp_devices_get_device: device i, or NULL when out of range. Borrowed. */
SP_API const sp_device_info *sp_devices_get_device(const sp_devices *devices, size_t i);
/* sp_profile_get_devices: the profile's own "devices" list, or NULL when it has none. Borrowed. */
SP_API const sp_devices *sp_profile_get_devices(const sp_profile *profile);

/* sp_links_load: a "stagepart-links" file: "devices" (N names), "bandwidth_GBps" and
 * "latency_us" (N x N; row = sender, column = receiver; the diagonal is ignored, off-diagonal
 * bandwidths at least SP_LINKS_MIN_BANDWIDTH_GBPS, latencies at most SP_LINKS_MAX_LATENCY_US).
 * Returns the same codes as sp_devices_load. */
SP_API sp_status sp_links_load(sp_ctx *ctx, const char *path, sp_links **out);
/* sp_links_parse: the same from a buffer (data[len] must be '\0'); `name` is used in messages. */
SP_API sp_status sp_links_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                                sp_links **out);
SP_API void sp_links_destroy(sp_links *links);
SP_API size_t sp_links_get_count(const sp_links *links);
SP_API const char *sp_links_get_name(const sp_links *links, size_t i);
/* sp_links_transfer_ms: latency + bytes / bandwidth from device `from` to device `to`, in ms;
 * 0 when from == to; -1 when an index is out of range. */
SP_API double sp_links_transfer_ms(const sp_links *links, size_t from, size_t to, uint64_t bytes);

#ifdef __cplusplus
}
#endif
#endif
