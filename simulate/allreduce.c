/* simulate/allreduce.c: the time of a ring all-reduce among data-parallel replicas.
 *
 * A ring all-reduce of `bytes` over r members runs 2 (r - 1) steps (reduce-scatter, then
 * all-gather), each member sending bytes / r to its neighbour per step, all links at once; a
 * step lasts as long as its slowest link. So the whole takes
 *     2 (r - 1) x (latency + (bytes / r) / bandwidth)  of the slowest link of the ring
 *   = 2 (r - 1) / r x bytes / bandwidth + 2 (r - 1) x latency,
 * the bandwidth-optimal figure NCCL's ring reaches on one flat link (its docs: "algorithm
 * bandwidth" = bytes / time, "bus bandwidth" = algorithm bandwidth x 2 (r - 1) / r). */
#include "stagepart/stagepart.h"

double sp_ring_allreduce_ms(const sp_links *links, const size_t *ranks, size_t count,
                            uint64_t bytes) {
    if (count < 2 || !links || !ranks)
        return 0;
    uint64_t chunk = (bytes + count - 1) / count;
    double slowest = 0;
    for (size_t i = 0; i < count; i++) {
        size_t from = ranks[i], to = ranks[(i + 1) % count];
        double step = sp_links_transfer_ms(links, from, to, chunk);
        slowest = step > slowest ? step : slowest;
    }
    return 2.0 * (double)(count - 1) * slowest;
}
