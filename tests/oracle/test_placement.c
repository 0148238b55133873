/* tests/oracle/test_placement.c: --placement search against exhaustive enumeration.
 *
 * Random small instances: devices of two or three speeds and two memory sizes, grouped into
 * nodes (links fast inside a node, slow between, sometimes one odd link so that fewer devices
 * are interchangeable), a chain of layers with activation bytes, a memory limit now and then.
 * The oracle enumerates every ordered choice of P distinct devices and every split, and takes the
 * documented order: the smallest bottleneck, then the smallest latency (sum of stage times plus
 * twice the sum of boundary transfers). The program must match both, proven optimal, with the
 * DP's warm start and without it (ilp_cold). Skipped (77) in builds without GLPK. */
#include <inttypes.h>
#include <math.h>
#include <stagepart/stagepart.h>

#include "../test.h"

static sp_ctx *ctx;
static uint64_t rng = 29;
static unsigned rnd(unsigned n) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rng >> 33) % n);
}

#define MAX_N 20 /* enumeration: 8 layers and 5 devices at most */
#define MAX_D 8

struct inst {
    int n, devices, P;
    int64_t w[MAX_N]; /* ticks, forward only */
    int cut[MAX_N];
    unsigned mem[MAX_N], saved[MAX_N], act[MAX_N];
    double speed[MAX_D];
    unsigned dev_mem[MAX_D];
    double lat_us[MAX_D][MAX_D], bw[MAX_D][MAX_D];
    unsigned limit;
};

static void random_inst(struct inst *in, int max_n, int max_d) {
    in->n = 3 + (int)rnd((unsigned)max_n - 2);
    in->devices = 2 + (int)rnd((unsigned)max_d - 1);
    in->P = 2 + (int)rnd((unsigned)(in->devices < 4 ? in->devices - 1 : 3));
    if (in->P > in->n)
        in->P = in->n;
    for (int i = 0; i < in->n; i++) {
        in->w[i] = (int64_t)(1 + rnd(9)) * 1000000;
        in->cut[i] = rnd(6) != 0;
        in->mem[i] = rnd(30);
        in->saved[i] = rnd(10);
        in->act[i] = (1 + rnd(4)) * 1000000; /* 1 to 4 MB */
    }
    const double speeds[] = {1.0, 0.5, 0.25};
    int node_size = 1 + (int)rnd(3);
    for (int d = 0; d < in->devices; d++) {
        in->speed[d] = speeds[rnd(2) ? 0 : 1 + rnd(2)];
        in->dev_mem[d] = rnd(3) ? 0 : 120 + rnd(200);
        if (d > 0 && rnd(2)) { /* often the same as the previous device: classes to merge */
            in->speed[d] = in->speed[d - 1];
            in->dev_mem[d] = in->dev_mem[d - 1];
        }
    }
    for (int a = 0; a < in->devices; a++)
        for (int b = 0; b < in->devices; b++) {
            bool same_node = a / node_size == b / node_size;
            in->lat_us[a][b] = same_node ? 5 : 20;
            in->bw[a][b] = same_node ? 100 : 10;
        }
    if (rnd(3) == 0) { /* one odd link */
        int a = (int)rnd((unsigned)in->devices), b = (int)rnd((unsigned)in->devices);
        in->bw[a][b] = 2;
    }
    in->limit = rnd(3) ? 0 : 150 + rnd(250);
}

static sp_profile *profile_of(const struct inst *in) {
    char buf[8192];
    size_t len = (size_t)snprintf(buf, sizeof buf,
                                  "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"p\","
                                  "\"micro_batch_size\":1,\"layers\":[");
    for (int i = 0; i < in->n; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len,
                                "%s{\"name\":\"l%d\",\"fwd_ms\":%" PRId64
                                ",\"bwd_ms\":0,\"memory_bytes\":%u,\"saved_bytes\":%u,"
                                "\"activation_bytes\":%u,\"cut_after\":%s}",
                                i ? "," : "", i, in->w[i] / 1000000, in->mem[i], in->saved[i],
                                in->act[i], in->cut[i] ? "true" : "false");
    snprintf(buf + len, sizeof buf - len, "]}");
    sp_profile *p = NULL;
    SP_CHECK_STATUS(sp_profile_parse(ctx, "placement.json", buf, strlen(buf), &p), SP_OK);
    return p;
}

/* the devices and links files, written to disk (the public API reads files) */
static void write_devices(const struct inst *in, const char *dev_path, const char *links_path) {
    FILE *f = fopen(dev_path, "w");
    fprintf(f, "{\"format\":\"stagepart-devices\",\"version\":1,\"devices\":[");
    for (int d = 0; d < in->devices; d++)
        fprintf(f, "%s{\"name\":\"d%d\",\"speed\":%g,\"memory_bytes\":%u}", d ? "," : "", d,
                in->speed[d], in->dev_mem[d]);
    fprintf(f, "]}\n");
    fclose(f);
    f = fopen(links_path, "w");
    fprintf(f, "{\"format\":\"stagepart-links\",\"version\":1,\"devices\":[");
    for (int d = 0; d < in->devices; d++)
        fprintf(f, "%s\"d%d\"", d ? "," : "", d);
    for (int m = 0; m < 2; m++) {
        fprintf(f, "],\"%s\":[", m ? "latency_us" : "bandwidth_GBps");
        for (int a = 0; a < in->devices; a++) {
            fprintf(f, "%s[", a ? "," : "");
            for (int b = 0; b < in->devices; b++)
                fprintf(f, "%s%g", b ? "," : "", m ? in->lat_us[a][b] : in->bw[a][b]);
            fprintf(f, "]");
        }
    }
    fprintf(f, "]}\n");
    fclose(f);
}

/* an instance as the library reads it: its profile, and its devices and links from files */
struct loaded {
    sp_profile *p;
    sp_devices *devices;
    sp_links *links;
};

static struct loaded load(const struct inst *in, const char *dev_path, const char *links_path) {
    struct loaded L = {profile_of(in), NULL, NULL};
    write_devices(in, dev_path, links_path);
    SP_CHECK_STATUS(sp_devices_load(ctx, dev_path, &L.devices), SP_OK);
    SP_CHECK_STATUS(sp_links_load(ctx, links_path, &L.links), SP_OK);
    return L;
}

static void unload(struct loaded *L) {
    sp_devices_destroy(L->devices);
    sp_links_destroy(L->links);
    sp_profile_destroy(L->p);
}

static sp_status place(const struct inst *in, const sp_profile *p, sp_devices *devices,
                       sp_links *links, bool cold, sp_plan **plan) {
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.stages = (uint32_t)in->P;
    o.micro_batches = (uint32_t)(4 * in->P);
    o.solver = SP_SOLVER_ILP;
    o.placement = SP_PLACEMENT_SEARCH;
    o.devices = devices;
    o.links = links;
    o.memory_limit_bytes = in->limit;
    o.ilp_cold = cold;
    o.time_limit_s = 30;
    return sp_partition(ctx, p, &o, plan);
}

struct best {
    int64_t t;      /* bottleneck, ticks */
    double latency; /* sum of stage times + 2 x sum of transfers, ms */
};

static double transfer_ms(const struct inst *in, int a, int b, unsigned bytes) {
    return in->lat_us[a][b] / 1e3 + (double)bytes / (in->bw[a][b] * 1e6);
}

/* every split of the chain for a fixed device order */
static void splits(const struct inst *in, const int *dev, int *b, int s, struct best *best) {
    int P = in->P;
    if (s == P - 1) {
        b[P] = in->n;
        int64_t mx = 0, sum = 0;
        double comm = 0;
        for (int k = 0; k < P; k++) {
            int64_t work = 0;
            uint64_t res = 0, sv = 0;
            for (int l = b[k]; l < b[k + 1]; l++) {
                work += in->w[l];
                res += in->mem[l];
                sv += in->saved[l];
            }
            uint64_t infl = (uint64_t)(P - k); /* min(P - k, M) with M = 4P */
            uint64_t need = res + infl * sv, cap = in->dev_mem[dev[k]];
            if (in->limit && (!cap || in->limit < cap))
                cap = in->limit;
            if (cap && need > cap)
                return;
            int64_t t = (int64_t)llround((double)work / in->speed[dev[k]]);
            mx = t > mx ? t : mx;
            sum += t;
            if (k + 1 < P)
                comm += transfer_ms(in, dev[k], dev[k + 1], in->act[b[k + 1] - 1]);
        }
        double latency = (double)sum / 1e6 + 2 * comm;
        if (mx < best->t || (mx == best->t && latency < best->latency)) {
            best->t = mx;
            best->latency = latency;
        }
        return;
    }
    for (int e = b[s] + 1; e <= in->n - (P - 1 - s); e++) {
        if (!in->cut[e - 1])
            continue;
        b[s + 1] = e;
        splits(in, dev, b, s + 1, best);
    }
}

static void orders(const struct inst *in, int *dev, int s, unsigned used, struct best *best) {
    if (s == in->P) {
        int b[MAX_N + 1] = {0};
        splits(in, dev, b, 0, best);
        return;
    }
    if (s >= MAX_D) /* never: P <= MAX_D; said so that gcc -O3 sees dev[s] in bounds */
        return;
    for (int d = 0; d < in->devices; d++)
        if (!(used & (1u << d))) {
            dev[s] = d;
            orders(in, dev, s + 1, used | (1u << d), best);
        }
}

static void test_against_enumeration(void) {
    int checked = 0, infeasible = 0, moved = 0;
    const char *dev_path = "test_placement.devices.json", *links_path = "test_placement.links.json";
    for (int t = 0; t < 60; t++) {
        struct inst in;
        random_inst(&in, 8, 5);
        struct best best = {INT64_MAX, (double)INFINITY};
        int dev[MAX_D];
        orders(&in, dev, 0, 0, &best);
        struct loaded L = load(&in, dev_path, links_path);
        for (int cold = 0; cold < 2; cold++) {
            sp_plan *plan = NULL;
            sp_status st = place(&in, L.p, L.devices, L.links, cold, &plan);
            if (best.t == INT64_MAX) {
                SP_CHECK_MSG(st == SP_ERR_INFEASIBLE, "enumeration found no plan, ilp: %s",
                             sp_status_name(st));
                infeasible += !cold;
                continue;
            }
            SP_CHECK_MSG(st == SP_OK, "%s", sp_ctx_get_errmsg(ctx));
            if (st != SP_OK)
                continue;
            const sp_plan_summary *m = sp_plan_get_summary(plan);
            SP_CHECK(m->optimal && m->placement == SP_PLACEMENT_SEARCH);
            SP_CHECK_MSG(fabs(m->bottleneck_ms - (double)best.t / 1e6) < 1e-9,
                         "t %d: ilp bottleneck %.6f, enumeration %.6f", t, m->bottleneck_ms,
                         (double)best.t / 1e6);
            double latency = 2 * m->transfer_ms;
            unsigned used = 0;
            for (size_t s = 0; s < sp_plan_get_stage_count(plan); s++) {
                const sp_stage *st_ = sp_plan_get_stage(plan, s);
                latency += st_->time_ms;
                SP_CHECK(st_->device < (uint32_t)in.devices && !(used & (1u << st_->device)));
                used |= 1u << st_->device;
                unsigned cap = in.dev_mem[st_->device];
                SP_CHECK(!cap || st_->memory_bytes <= cap);
                SP_CHECK(!in.limit || st_->memory_bytes <= in.limit);
                moved += !cold && st_->device != s;
            }
            SP_CHECK_MSG(fabs(latency - best.latency) < 1e-6 * (1 + best.latency),
                         "t %d: ilp latency %.9f, enumeration %.9f", t, latency, best.latency);
            checked += !cold;
            sp_plan_destroy(plan);
        }
        unload(&L);
    }
    remove(dev_path);
    remove(links_path);
    printf("placement: ilp = enumeration on %d instances (warm and cold), %d infeasible agreed, "
           "%d stages moved off device s\n",
           checked, infeasible, moved);
    SP_CHECK(checked > 20 && moved > 0);
}

/* Past enumeration (up to 20 layers, 8 devices): the exact search's plan (the warm path) against
 * the program alone, where the program proves its plan: the same bottleneck, and the same latency
 * where both broke that tie to the end. */
static void test_search_against_program(void) {
    int compared = 0, latencies = 0, infeasible = 0;
    const char *dev_path = "test_placement.devices.json", *links_path = "test_placement.links.json";
    for (int t = 0; t < 12; t++) {
        struct inst in;
        random_inst(&in, MAX_N, MAX_D);
        struct loaded L = load(&in, dev_path, links_path);
        sp_plan *warm = NULL, *cold = NULL;
        sp_status sw = place(&in, L.p, L.devices, L.links, false, &warm);
        sp_status sc = place(&in, L.p, L.devices, L.links, true, &cold);
        if (sc == SP_ERR_INFEASIBLE && !strstr(sp_ctx_get_errmsg(ctx), "time limit")) {
            SP_CHECK_MSG(sw == SP_ERR_INFEASIBLE, "t %d: the program found no plan, the search: %s",
                         t, sp_status_name(sw));
            infeasible++;
        } else if (sc == SP_OK && sp_plan_get_summary(cold)->optimal) {
            SP_CHECK_MSG(sw == SP_OK, "t %d: %s", t, sp_ctx_get_errmsg(ctx));
            const sp_plan_summary *a = sw == SP_OK ? sp_plan_get_summary(warm) : NULL;
            const sp_plan_summary *b = sp_plan_get_summary(cold);
            SP_CHECK(a && a->optimal);
            SP_CHECK_MSG(a && fabs(a->bottleneck_ms - b->bottleneck_ms) < 1e-9,
                         "t %d: search %.6f ms, program %.6f ms", t, a ? a->bottleneck_ms : 0,
                         b->bottleneck_ms);
            compared++;
            if (a && a->solver_status && b->solver_status && !strcmp(a->solver_status, "optimal") &&
                !strcmp(b->solver_status, "optimal")) {
                double la = 2 * a->transfer_ms, lb = 2 * b->transfer_ms;
                for (size_t s = 0; s < sp_plan_get_stage_count(warm); s++)
                    la += sp_plan_get_stage(warm, s)->time_ms;
                for (size_t s = 0; s < sp_plan_get_stage_count(cold); s++)
                    lb += sp_plan_get_stage(cold, s)->time_ms;
                SP_CHECK_MSG(fabs(la - lb) < 1e-6 * (1 + lb), "t %d: latency %.9f against %.9f", t,
                             la, lb);
                latencies++;
            }
        }
        sp_plan_destroy(warm);
        sp_plan_destroy(cold);
        unload(&L);
    }
    remove(dev_path);
    remove(links_path);
    printf("placement past enumeration: search = program on %d instances (latency on %d), %d "
           "infeasible agreed\n",
           compared, latencies, infeasible);
    SP_CHECK(compared >= 6);
}

/* The search's least bottleneck against every device order and split, on instances that work
 * its reach sets: 8 to 12 layers, 4 or 5 stages on 5 to 7 devices of two or three kinds, device
 * memories that bind, forbidden cuts: the same bottleneck, or no plan on both sides. */
static void test_search_against_brute(void) {
    int checked = 0, infeasible = 0;
    const char *dev_path = "test_placement.devices.json", *links_path = "test_placement.links.json";
    for (int t = 0; t < 40; t++) {
        struct inst in;
        do
            random_inst(&in, 12, 7);
        while (in.devices < 5 || in.n < 8);
        in.P = 4 + (int)rnd(2);
        for (int d = 0; d < in.devices; d++)
            if (rnd(2))
                in.dev_mem[d] = 40 + rnd(100);
        for (int i = 0; i < in.n; i++) /* layers that fit only some devices, or late stages */
            if (rnd(4) == 0) {
                in.mem[i] = 30 + rnd(60);
                in.saved[i] = 5 + rnd(15);
            }
        struct best best = {INT64_MAX, (double)INFINITY};
        int dev[MAX_D];
        orders(&in, dev, 0, 0, &best);
        struct loaded L = load(&in, dev_path, links_path);
        sp_plan *plan = NULL;
        sp_status st = place(&in, L.p, L.devices, L.links, false, &plan);
        if (best.t == INT64_MAX) {
            SP_CHECK_MSG(st == SP_ERR_INFEASIBLE, "t %d: no plan exists, the search: %s", t,
                         sp_status_name(st));
            infeasible++;
        } else {
            SP_CHECK_MSG(st == SP_OK, "t %d: %s", t, sp_ctx_get_errmsg(ctx));
            const sp_plan_summary *m = st == SP_OK ? sp_plan_get_summary(plan) : NULL;
            SP_CHECK_MSG(m && m->optimal && fabs(m->bottleneck_ms - (double)best.t / 1e6) < 1e-9,
                         "t %d: search %.6f ms, every order and split %.6f ms", t,
                         m ? m->bottleneck_ms : 0, (double)best.t / 1e6);
            checked++;
        }
        sp_plan_destroy(plan);
        unload(&L);
    }
    remove(dev_path);
    remove(links_path);
    printf("placement search = every order and split on %d instances, %d infeasible agreed\n",
           checked, infeasible);
    SP_CHECK(checked > 20 && infeasible > 0);
}

/* interleaved chunks (P = 2, V = 2): every ordered choice of two devices, each written as its
 * own devices and links files, times every split, figured by sp_plan_from_split (its memory is
 * the peak over the interleaved order) */
static void test_chunks_against_enumeration(void) {
    int checked = 0;
    const char *dev_path = "test_placement.chunks.devices.json",
               *links_path = "test_placement.chunks.links.json";
    for (int t = 0; t < 15; t++) {
        struct inst in;
        random_inst(&in, 8, 5);
        in.P = 2;
        for (int i = in.n; i < 5; i++) { /* at least 5 layers, each drawn as random_inst does */
            in.w[i] = (int64_t)(1 + rnd(9)) * 1000000;
            in.mem[i] = rnd(30);
            in.saved[i] = rnd(10);
            in.act[i] = (1 + rnd(4)) * 1000000;
        }
        if (in.n < 5)
            in.n = 5;
        if (in.devices > 4)
            in.devices = 4;
        for (int i = 0; i < in.n; i++)
            in.cut[i] = 1;
        sp_profile *p = profile_of(&in);
        sp_partition_opts o;
        sp_partition_opts_init(&o);
        o.stages = 2;
        o.chunks = 2;
        o.micro_batches = 4;
        o.memory_limit_bytes = in.limit;
        struct best best = {INT64_MAX, (double)INFINITY};
        for (int a = 0; a < in.devices; a++)
            for (int b = 0; b < in.devices; b++) {
                if (a == b)
                    continue;
                struct inst two = in; /* devices a, b as the list */
                two.devices = 2;
                int pick[2] = {a, b};
                for (int i = 0; i < 2; i++) {
                    two.speed[i] = in.speed[pick[i]];
                    two.dev_mem[i] = in.dev_mem[pick[i]];
                    for (int j = 0; j < 2; j++) {
                        two.lat_us[i][j] = in.lat_us[pick[i]][pick[j]];
                        two.bw[i][j] = in.bw[pick[i]][pick[j]];
                    }
                }
                write_devices(&two, dev_path, links_path);
                sp_devices *devices = NULL;
                sp_links *links = NULL;
                SP_CHECK_STATUS(sp_devices_load(ctx, dev_path, &devices), SP_OK);
                SP_CHECK_STATUS(sp_links_load(ctx, links_path, &links), SP_OK);
                o.devices = devices;
                o.links = links;
                size_t bnd[4] = {0};
                for (size_t x = 1; x < (size_t)in.n; x++)
                    for (size_t y = x + 1; y < (size_t)in.n; y++)
                        for (size_t z = y + 1; z < (size_t)in.n; z++) {
                            bnd[1] = x;
                            bnd[2] = y;
                            bnd[3] = z;
                            sp_plan *given = NULL;
                            SP_CHECK_STATUS(sp_plan_from_split(ctx, p, &o, bnd, 4, &given), SP_OK);
                            uint64_t mem[2] = {0, 0};
                            double latency = 2 * sp_plan_get_summary(given)->transfer_ms;
                            for (size_t k = 0; k < 4; k++) {
                                mem[k % 2] += sp_plan_get_stage(given, k)->memory_bytes;
                                latency += sp_plan_get_stage(given, k)->time_ms;
                            }
                            bool fits = true;
                            for (int d = 0; d < 2; d++) {
                                uint64_t cap = two.dev_mem[d];
                                fits &=
                                    (!cap || mem[d] <= cap) && (!in.limit || mem[d] <= in.limit);
                            }
                            int64_t bn = llround(sp_plan_get_summary(given)->bottleneck_ms * 1e6);
                            if (fits && (bn < best.t || (bn == best.t && latency < best.latency))) {
                                best.t = bn;
                                best.latency = latency;
                            }
                            sp_plan_destroy(given);
                        }
                sp_devices_destroy(devices);
                sp_links_destroy(links);
            }
        write_devices(&in, dev_path, links_path);
        sp_devices *devices = NULL;
        sp_links *links = NULL;
        SP_CHECK_STATUS(sp_devices_load(ctx, dev_path, &devices), SP_OK);
        SP_CHECK_STATUS(sp_links_load(ctx, links_path, &links), SP_OK);
        for (int cold = 0; cold < 2; cold++) {
            o.devices = devices;
            o.links = links;
            o.solver = SP_SOLVER_ILP;
            o.placement = SP_PLACEMENT_SEARCH;
            o.ilp_cold = cold;
            o.time_limit_s = 60;
            sp_plan *plan = NULL;
            sp_status st = sp_partition(ctx, p, &o, &plan);
            if (best.t == INT64_MAX) {
                SP_CHECK_MSG(st == SP_ERR_INFEASIBLE, "no plan fits, ilp: %s", sp_status_name(st));
                continue;
            }
            SP_CHECK_MSG(st == SP_OK, "%s", sp_ctx_get_errmsg(ctx));
            if (st != SP_OK)
                continue;
            const sp_plan_summary *m = sp_plan_get_summary(plan);
            double latency = 2 * m->transfer_ms;
            for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++)
                latency += sp_plan_get_stage(plan, k)->time_ms;
            SP_CHECK(m->optimal);
            SP_CHECK_MSG(llround(m->bottleneck_ms * 1e6) == best.t,
                         "t %d: ilp bottleneck %.6f, enumeration %.6f", t, m->bottleneck_ms,
                         (double)best.t / 1e6);
            SP_CHECK_MSG(fabs(latency - best.latency) < 1e-6 * (1 + best.latency),
                         "t %d: ilp latency %.9f, enumeration %.9f", t, latency, best.latency);
            SP_CHECK(sp_plan_get_stage(plan, 2)->device == sp_plan_get_stage(plan, 0)->device &&
                     sp_plan_get_stage(plan, 0)->device != sp_plan_get_stage(plan, 1)->device);
            checked += !cold;
            sp_plan_destroy(plan);
        }
        sp_devices_destroy(devices);
        sp_links_destroy(links);
        sp_profile_destroy(p);
    }
    remove(dev_path);
    remove(links_path);
    printf("placement with 2 x 2 chunks: ilp = enumeration on %d instances (warm and cold)\n",
           checked);
    SP_CHECK(checked > 5);
}

int main(void) {
    sp_ctx_create(&ctx);
    if (!strstr(sp_features(), "glpk")) {
        printf("test_placement: this build has no GLPK; skipped\n");
        sp_ctx_destroy(ctx);
        return 77;
    }
    test_against_enumeration();
    test_chunks_against_enumeration();
    test_search_against_program();
    test_search_against_brute();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_placement");
}
