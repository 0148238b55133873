/* partitioner/model/placement.h: --placement search's device classes
 * (partitioner/model/placement.c).
 *
 * Two devices are interchangeable when swapping them changes nothing the plan can see: the same
 * speed and memory, and (with links) the same links to every other device and the same link
 * each way between them. Swaps that preserve everything compose, so this is an equivalence, and
 * the program chooses a class per stage instead of a device: no symmetric copies of one plan to
 * search through (two nodes of four identical GPUs are two classes, not eight devices). */
#ifndef SP_PARTITIONER_PLACEMENT_H
#define SP_PARTITIONER_PLACEMENT_H

#include "ilp.h"

#define SP_PLACEMENT_MAX_DEVICES 4096u /* devices a placement search considers */

struct sp_placement_classes {
    struct sp_ilp_placement ilp; /* points into the arrays below */
    size_t n_devices;
    uint32_t *class_of; /* [n_devices] */
    size_t *link_of;    /* [n_devices] the device's index in the links, or NULL without links */
    double *speed, *latency_ms, *ms_per_byte, *cut_bytes;
    uint64_t *memory;
    uint32_t *size, *incumbent;
};

/* Classes of the devices in `list` (links, when given, are matched to them by name), the bytes
 * each cut sends, and stage s on device s as the incumbent's classes. SP_ERR_INVALID_ARG when a
 * device has no links entry, SP_ERR_LIMIT beyond SP_PLACEMENT_MAX_DEVICES. */
sp_status sp_placement_classes_init(sp_ctx *ctx, const sp_profile *profile, const sp_devices *list,
                                    const sp_links *links, uint32_t stages,
                                    struct sp_placement_classes *out);
void sp_placement_classes_release(struct sp_placement_classes *pc);
double sp_placement_fastest(const struct sp_placement_classes *pc);

/* The devices the stages take: in stage order, the lowest-numbered unused device of each stage's
 * class. */
void sp_placement_devices(const struct sp_placement_classes *pc, const uint32_t *stage_class,
                          uint32_t stages, size_t *device);

/* Those devices, and the links between them, in stage order (copies; *links_out NULL without
 * links). */
sp_status sp_placement_select(sp_ctx *ctx, const struct sp_placement_classes *pc,
                              const sp_devices *list, const sp_links *links, const size_t *device,
                              uint32_t stages, sp_devices **devices_out, sp_links **links_out);

/* The least bottleneck over every placement and split (one chunk per device, overlapped
 * transfers, no recomputation choices), exactly, and a plan reaching it (placed_search.c):
 * bounds[P + 1] positions of pb->chain, stage_class[P], *cap_out in ticks. *decided is false when
 * its state space (the devices of each (speed, memory) kind used so far) is too large to search:
 * the program runs instead. SP_ERR_INFEASIBLE (no message) when no placement fits memory. */
struct sp_problem;
sp_status sp_placement_least_bottleneck(sp_ctx *ctx, const struct sp_problem *pb,
                                        const struct sp_placement_classes *pc, size_t *bounds,
                                        uint32_t *stage_class, int64_t *cap_out, bool *decided);

#endif
