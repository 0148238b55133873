/* tests/oracle/test_replicated.c: sp_partition_replicated against exhaustive enumeration.
 *
 * Random small instances: up to 7 layers (some joined), up to 5 GPUs in nodes of one to three
 * (links fast inside, slow between, now and then one odd link), times, parameters and memory
 * that make all-reduces cost from nothing to more than the compute, a memory limit now and then,
 * each of the four schedules, now and then a devices list (speeds 1 or 0.5, some with memory). The
 * oracle enumerates every stage count, every split and every
 * replica count per stage with at most N GPUs, stages on devices in order from device 0 with any
 * devices left idle between them,
 * and judges each plan from the documented model alone: the ring all-reduce
 * (sp_ring_allreduce_ms), the share of a micro-batch (ceil of time / r + all-reduce / M when
 * the schedule flushes, of (time + all-reduce) / r when it does not, the all-reduce now and then
 * PipeDream's 4 (r - 1) / r x bytes over the ring's least bandwidth; time on the slowest of
 * the stage's devices), a replica's memory
 * (resident + in-flight x saved + stashed weight versions within the least of the limit and its
 * devices' memory, with k stages from it to the end:
 * GPipe M, 1F1B min(k, M), pipedream and 2bw k in flight; pipedream k versions, 2bw 2). The
 * search must match the least bottleneck, then the fewest stages, then the fewest devices
 * spanned, and its
 * plan must reach that bottleneck and fit. */
#include <inttypes.h>
#include <math.h>
#include <stagepart/stagepart.h>
#include <stdlib.h>
#include <unistd.h>

#include "../test.h"

static sp_ctx *ctx;
static uint64_t rng = 41;
static unsigned rnd(unsigned n) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rng >> 33) % n);
}

#define MAX_N 7
#define MAX_G 5

struct inst {
    int n, gpus;
    uint32_t M;
    sp_schedule schedule;
    sp_replica_cost cost;
    int fwd_ms[MAX_N], bwd_ms[MAX_N], cut[MAX_N];
    uint64_t params[MAX_N], mem[MAX_N], saved[MAX_N], act[MAX_N];
    double ratio; /* > 0: PipeDream's activation term (pipedream cost, no memory limits) */
    double lat_us[MAX_G][MAX_G], bw[MAX_G][MAX_G];
    uint64_t limit;
    sp_links *links;
    bool with_devices; /* a devices list: speeds 1 or 0.5, memory or none */
    double speed[MAX_G];
    uint64_t dev_mem[MAX_G];
    sp_devices *devices;
};

static void random_inst(struct inst *in) {
    in->n = 2 + (int)rnd(MAX_N - 1);
    in->gpus = 1 + (int)rnd(MAX_G);
    const uint32_t Ms[] = {1, 2, 4, 8, 16};
    in->M = Ms[rnd(5)];
    const sp_schedule sc[] = {SP_SCHEDULE_GPIPE, SP_SCHEDULE_1F1B, SP_SCHEDULE_PIPEDREAM,
                              SP_SCHEDULE_2BW};
    in->schedule = sc[rnd(4)];
    in->cost = in->schedule == SP_SCHEDULE_PIPEDREAM || in->schedule == SP_SCHEDULE_2BW
                   ? (sp_replica_cost)rnd(2)
                   : SP_REPLICA_COST_RING;
    for (int i = 0; i < in->n; i++) {
        in->fwd_ms[i] = 1 + (int)rnd(6);
        in->bwd_ms[i] = (int)rnd(12);
        in->cut[i] = rnd(6) != 0;
        in->params[i] = (uint64_t)rnd(4) == 0 ? 0 : (uint64_t)(1 + rnd(400)) * 1000000;
        in->mem[i] = (uint64_t)rnd(40) * 1000000;
        in->saved[i] = (uint64_t)rnd(20) * 1000000;
    }
    int node = 1 + (int)rnd(3);
    double fast = 20 + rnd(200), slow = 1 + rnd(20);
    for (int a = 0; a < in->gpus; a++)
        for (int b = 0; b < in->gpus; b++) {
            bool same = a / node == b / node;
            in->lat_us[a][b] = same ? 2 + rnd(5) : 10 + rnd(40);
            in->bw[a][b] = same ? fast : slow;
        }
    if (in->gpus > 1 && rnd(3) == 0) { /* one odd link */
        int a = (int)rnd((unsigned)in->gpus), b = (int)rnd((unsigned)in->gpus);
        in->bw[a][b] = 0.5;
    }
    in->limit = rnd(3) ? 0 : (uint64_t)(60 + rnd(400)) * 1000000;
    in->with_devices = rnd(3) == 0;
    for (int d = 0; d < in->gpus; d++) {
        in->speed[d] = in->with_devices && rnd(3) == 0 ? 0.5 : 1.0;
        in->dev_mem[d] = in->with_devices && rnd(3) == 0 ? (uint64_t)(80 + rnd(400)) * 1000000 : 0;
    }
    bool room_limited = in->limit != 0;
    for (int d = 0; d < in->gpus; d++)
        room_limited |= in->dev_mem[d] != 0;
    const double ratios[] = {0.5, 2, 8};
    in->ratio = in->cost == SP_REPLICA_COST_PIPEDREAM && !room_limited ? ratios[rnd(3)] : 0;
    for (int i = 0; i < in->n; i++)
        in->act[i] = (uint64_t)rnd(40) * 1000000;
}

static sp_devices *devices_of(const struct inst *in) {
    char buf[4096];
    size_t len = (size_t)snprintf(buf, sizeof buf,
                                  "{\"format\":\"stagepart-devices\",\"version\":1,\"devices\":[");
    for (int d = 0; d < in->gpus; d++)
        len += (size_t)snprintf(buf + len, sizeof buf - len,
                                "%s{\"name\":\"g%d\",\"speed\":%g,\"memory_bytes\":%" PRIu64 "}",
                                d ? "," : "", d, in->speed[d], in->dev_mem[d]);
    snprintf(buf + len, sizeof buf - len, "]}");
    char path[] = "/tmp/stagepart-replicated-XXXXXX";
    int fd = mkstemp(path);
    SP_CHECK(fd >= 0);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f) {
        fputs(buf, f);
        fclose(f);
    }
    sp_devices *dv = NULL;
    SP_CHECK_STATUS(sp_devices_load(ctx, path, &dv), SP_OK);
    unlink(path);
    return dv;
}

static sp_profile *profile_of(const struct inst *in) {
    char buf[8192];
    size_t len = (size_t)snprintf(buf, sizeof buf,
                                  "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"r\","
                                  "\"micro_batch_size\":1,\"layers\":[");
    for (int i = 0; i < in->n; i++)
        len += (size_t)snprintf(
            buf + len, sizeof buf - len,
            "%s{\"name\":\"l%d\",\"fwd_ms\":%d,\"bwd_ms\":%d,\"param_bytes\":%" PRIu64
            ",\"memory_bytes\":%" PRIu64 ",\"saved_bytes\":%" PRIu64
            ",\"activation_bytes\":%" PRIu64 ",\"cut_after\":%s}",
            i ? "," : "", i, in->fwd_ms[i], in->bwd_ms[i], in->params[i], in->mem[i], in->saved[i],
            in->act[i], in->cut[i] ? "true" : "false");
    snprintf(buf + len, sizeof buf - len, "]}");
    sp_profile *p = NULL;
    SP_CHECK_STATUS(sp_profile_parse(ctx, "replicated.json", buf, strlen(buf), &p), SP_OK);
    return p;
}

static sp_links *links_of(const struct inst *in) {
    char buf[8192];
    size_t len = (size_t)snprintf(buf, sizeof buf,
                                  "{\"format\":\"stagepart-links\",\"version\":1,\"devices\":[");
    for (int d = 0; d < in->gpus; d++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s\"g%d\"", d ? "," : "", d);
    for (int m = 0; m < 2; m++) {
        len += (size_t)snprintf(buf + len, sizeof buf - len, "],\"%s\":[",
                                m ? "latency_us" : "bandwidth_GBps");
        for (int a = 0; a < in->gpus; a++) {
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s[", a ? "," : "");
            for (int b = 0; b < in->gpus; b++)
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%g", b ? "," : "",
                                        m ? in->lat_us[a][b] : in->bw[a][b]);
            len += (size_t)snprintf(buf + len, sizeof buf - len, "]");
        }
    }
    snprintf(buf + len, sizeof buf - len, "]}");
    sp_links *l = NULL;
    SP_CHECK_STATUS(sp_links_parse(ctx, "links.json", buf, strlen(buf), &l), SP_OK);
    return l;
}

static bool async_schedule(const struct inst *in) {
    return in->schedule == SP_SCHEDULE_PIPEDREAM || in->schedule == SP_SCHEDULE_2BW;
}

/* stage over layers [a, b) on devices g .. g + r - 1, k stages from it to the end */
static int64_t share_ticks(const struct inst *in, int a, int b, int g, int r) {
    int64_t fwd = 0, bwd = 0;
    uint64_t params = 0;
    double speed = 1.0; /* the slowest replica's: round-robin waits for it */
    for (int j = 0; j < r; j++)
        speed = in->speed[g + j] < speed ? in->speed[g + j] : speed;
    for (int i = a; i < b; i++) {
        fwd += (int64_t)in->fwd_ms[i] * 1000000;
        bwd += (int64_t)in->bwd_ms[i] * 1000000;
        params += in->params[i];
    }
    int64_t compute = fwd + bwd;
    if (speed != 1.0) /* forward and backward each scaled and rounded, as a plan's times */
        compute = llround((double)fwd / speed) + llround((double)bwd / speed);
    size_t ranks[MAX_G];
    for (int j = 0; j < r; j++)
        ranks[j] = (size_t)(g + j);
    int64_t ar = llround(sp_ring_allreduce_ms(in->links, ranks, (size_t)r, params) * 1e6);
    if (in->cost == SP_REPLICA_COST_PIPEDREAM && r > 1) {
        double bw = in->bw[g][g + 1]; /* the least bandwidth between neighbours on the ring */
        for (int j = 0; j < r; j++)
            bw = fmin(bw, in->bw[g + j][g + (j + 1) % r]);
        ar = llround(4.0 * (r - 1) / r * (double)params / (bw * 1e6) * 1e6);
    }
    if (async_schedule(in) && in->ratio > 0 && a > 0) { /* PipeDream's activation term */
        double bw = (double)INFINITY; /* its one bandwidth: the slowest link among the GPUs */
        for (int i = 0; i < in->gpus; i++)
            for (int j = 0; j < in->gpus; j++)
                if (i != j)
                    bw = fmin(bw, in->bw[i][j]);
        int64_t t = (compute + ar + r - 1) / r;
        int64_t tin = llround(2.0 * (double)in->act[a - 1] / (bw * 1e6 * r) / in->ratio * 1e6);
        int64_t tout =
            b < in->n ? llround(2.0 * (double)in->act[b - 1] / (bw * 1e6 * r) / in->ratio * 1e6)
                      : 0;
        t = tin > t ? tin : t;
        return tout > t ? tout : t;
    }
    if (async_schedule(in))
        return (compute + ar + r - 1) / r;
    int64_t num = compute * (int64_t)in->M + ar * r, den = (int64_t)r * in->M;
    return (num + den - 1) / den;
}

static bool fits(const struct inst *in, int a, int b, int k, int g, int r) {
    uint64_t room = in->limit; /* the least of the limit and the devices' memory */
    for (int j = 0; j < r; j++)
        if (in->dev_mem[g + j] && (!room || in->dev_mem[g + j] < room))
            room = in->dev_mem[g + j];
    if (!room)
        return true;
    uint64_t inflight = in->schedule == SP_SCHEDULE_GPIPE ? in->M
                        : in->schedule == SP_SCHEDULE_1F1B
                            ? ((uint32_t)k < in->M ? (uint32_t)k : in->M)
                            : (uint64_t)k;
    uint64_t versions = in->schedule == SP_SCHEDULE_PIPEDREAM ? (uint64_t)k
                        : in->schedule == SP_SCHEDULE_2BW     ? 2
                                                              : 1;
    uint64_t need = 0;
    for (int i = a; i < b; i++)
        need += in->mem[i] + inflight * in->saved[i] + (versions - 1) * in->params[i];
    return need <= room;
}

struct best {
    int64_t t;
    int P, span; /* stages; the devices the plan spans, idle ones between stages included */
};

/* stages s.. from layer a on device g; bound[], reps[] hold the stages so far */
static void enumerate(const struct inst *in, int P, int s, int a, int g, int64_t worst,
                      struct best *best) {
    if (s == P) {
        if (a != in->n)
            return;
        bool better = worst < best->t || (worst == best->t && P < best->P) ||
                      (worst == best->t && P == best->P && g < best->span);
        if (better)
            *best = (struct best){worst, P, g};
        return;
    }
    for (int b = a + 1; b <= in->n; b++) {
        if (b < in->n && !in->cut[b - 1])
            continue;
        if ((b == in->n) != (s == P - 1))
            continue;
        for (int g0 = g; g0 < in->gpus; g0++) /* devices g .. g0 - 1 left idle */
            for (int r = 1; g0 + r + (P - s - 1) <= in->gpus; r++) {
                if (!fits(in, a, b, P - s, g0, r))
                    continue;
                int64_t t = share_ticks(in, a, b, g0, r);
                enumerate(in, P, s + 1, b, g0 + r, t > worst ? t : worst, best);
            }
    }
}

static int with_transfers; /* instances with PipeDream's activation term */

static void check_instance(int trial) {
    struct inst in;
    random_inst(&in);
    with_transfers += in.ratio > 0;
    in.links = links_of(&in);
    in.devices = in.with_devices ? devices_of(&in) : NULL;
    sp_profile *profile = profile_of(&in);
    struct best best = {INT64_MAX, 0, 0};
    for (int P = 1; P <= in.n && P <= in.gpus; P++)
        enumerate(&in, P, 0, 0, 0, 0, &best);
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.schedule = in.schedule;
    o.replica_cost = in.cost;
    o.activation_ratio = in.ratio;
    o.micro_batches = in.M;
    o.memory_limit_bytes = in.limit;
    o.links = in.links;
    o.devices = in.devices;
    sp_plan *plan = NULL;
    sp_status st = sp_partition_replicated(ctx, profile, &o, (uint32_t)in.gpus, &plan);
    if (best.P == 0) {
        SP_CHECK_MSG(st == SP_ERR_INFEASIBLE, "trial %d: no plan exists, got %s", trial,
                     sp_status_name(st));
    } else if (st != SP_OK) {
        SP_CHECK_MSG(false, "trial %d: %s: %s", trial, sp_status_name(st), sp_ctx_get_errmsg(ctx));
    } else {
        const sp_plan_summary *m = sp_plan_get_summary(plan);
        int64_t got = llround(m->bottleneck_ms * 1e6), worst = 0;
        const sp_stage *last = sp_plan_get_stage(plan, m->stages - 1);
        int span = (int)(last->device + last->replicas);
        SP_CHECK_MSG(got == best.t && (int)m->stages == best.P && span == best.span,
                     "trial %d (%s, M %u, %d layers, %d GPUs): search %" PRId64
                     " ticks, %u stages, %d devices spanned; oracle %" PRId64 ", %d, %d",
                     trial, sp_schedule_name(in.schedule), in.M, in.n, in.gpus, got, m->stages,
                     span, best.t, best.P, best.span);
        /* the plan itself, judged by the oracle's model */
        for (uint32_t s = 0; s < m->stages; s++) {
            const sp_stage *stg = sp_plan_get_stage(plan, s);
            int a = (int)stg->first_layer, b = (int)stg->last_layer + 1;
            int64_t t = share_ticks(&in, a, b, (int)stg->device, (int)stg->replicas);
            worst = t > worst ? t : worst;
            SP_CHECK_MSG(
                fits(&in, a, b, (int)(m->stages - s), (int)stg->device, (int)stg->replicas),
                "trial %d: stage %u over memory", trial, s);
            SP_CHECK_MSG(llround(stg->share_ms * 1e6) == t, "trial %d: stage %u share", trial, s);
        }
        SP_CHECK_MSG(worst == best.t, "trial %d: the plan's own bottleneck %" PRId64, trial, worst);
    }
    sp_plan_destroy(plan);
    sp_profile_destroy(profile);
    sp_links_destroy(in.links);
    sp_devices_destroy(in.devices);
}

int main(int argc, char **argv) {
    int trials = argc > 1 ? atoi(argv[1]) : 400;
    SP_CHECK_STATUS(sp_ctx_create(&ctx), SP_OK);
    for (int t = 0; t < trials; t++)
        check_instance(t);
    printf("%d instances, %d with PipeDream's activation term\n", trials, with_transfers);
    SP_CHECK(trials < 400 || with_transfers >= 20);
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_replicated");
}
