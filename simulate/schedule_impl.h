/* simulate/schedule_impl.h: building one device's op list (schedule.c and schedule_torch.c). */
#ifndef SP_SIMULATE_SCHEDULE_IMPL_H
#define SP_SIMULATE_SCHEDULE_IMPL_H

#include "sim_impl.h"

struct sp_sched_list {
    struct sp_sched_op *ops; /* room for every op of the device */
    size_t n;
    uint32_t *scratch; /* counters and queues of one device's builder */
    size_t scratch_len;
};

void sp_sched_push(struct sp_sched_list *l, char kind, uint32_t stage, uint32_t mb);

/* torch.distributed.pipelining's orders for device d (schedule_torch.c) */
void sp_sched_interleaved(const struct sp_pipeline *pl, uint32_t d, struct sp_sched_list *l);
void sp_sched_zbv(const struct sp_pipeline *pl, uint32_t d, struct sp_sched_list *l);
void sp_sched_dualpipev(const struct sp_pipeline *pl, uint32_t d, struct sp_sched_list *l);

#endif
