/* partitioner/model/placement.c: device classes for --placement search
 * (partitioner/model/placement.h). */
#include <string.h>

#include "devices_impl.h"
#include "placement.h"

void sp_placement_classes_release(struct sp_placement_classes *pc) {
    sp_free(pc->class_of);
    sp_free(pc->link_of);
    sp_free(pc->speed);
    sp_free(pc->latency_ms);
    sp_free(pc->ms_per_byte);
    sp_free(pc->cut_bytes);
    sp_free(pc->memory);
    sp_free(pc->size);
    sp_free(pc->incumbent);
    memset(pc, 0, sizeof *pc);
}

double sp_placement_fastest(const struct sp_placement_classes *pc) {
    double fastest = 0;
    for (uint32_t c = 0; c < pc->ilp.classes; c++)
        fastest = pc->speed[c] > fastest ? pc->speed[c] : fastest;
    return fastest;
}

static bool same_link(const sp_links *l, size_t a, size_t b, size_t c, size_t d) {
    size_t n = l->n;
    return l->bw_GBps[a * n + b] == l->bw_GBps[c * n + d] &&
           l->latency_us[a * n + b] == l->latency_us[c * n + d];
}

/* Does swapping devices i and j (indices in the list) leave speeds, memory and links as they
 * were? */
static bool interchangeable(const sp_devices *list, const sp_links *links, const size_t *link_of,
                            size_t n, size_t i, size_t j) {
    const sp_device_info *a = sp_devices_get_device(list, i), *b = sp_devices_get_device(list, j);
    if (a->speed != b->speed || a->memory_bytes != b->memory_bytes)
        return false;
    if (!links)
        return true;
    size_t li = link_of[i], lj = link_of[j];
    if (!same_link(links, li, lj, lj, li))
        return false;
    for (size_t k = 0; k < n; k++) {
        size_t lk = link_of[k];
        if (k == i || k == j)
            continue;
        if (!same_link(links, li, lk, lj, lk) || !same_link(links, lk, li, lk, lj))
            return false;
    }
    return true;
}

/* the link from each class to each: between classes any two members have the same link; within
 * one, two of its members (a class of one device never follows itself) */
static void class_links(struct sp_placement_classes *out, const sp_links *links, const size_t *rep,
                        uint32_t C) {
    size_t n = out->n_devices;
    for (uint32_t c = 0; c < C; c++)
        for (uint32_t e = 0; e < C; e++) {
            size_t a = rep[c], b = rep[e];
            if (c == e) {
                b = a;
                for (size_t i = a + 1; i < n && b == a; i++)
                    b = out->class_of[i] == c ? i : a;
            }
            size_t k = (size_t)c * C + e;
            if (a == b) {
                out->latency_ms[k] = 0;
                out->ms_per_byte[k] = 0;
                continue;
            }
            size_t la = out->link_of[a], lb = out->link_of[b];
            out->latency_ms[k] = links->latency_us[la * links->n + lb] / 1e3;
            out->ms_per_byte[k] = 1 / (links->bw_GBps[la * links->n + lb] * 1e6);
        }
}

sp_status sp_placement_classes_init(sp_ctx *ctx, const sp_profile *profile, const sp_devices *list,
                                    const sp_links *links, uint32_t stages,
                                    struct sp_placement_classes *out) {
    memset(out, 0, sizeof *out);
    size_t n = sp_devices_get_count(list);
    if (n > SP_PLACEMENT_MAX_DEVICES)
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "placement search considers at most %u devices; the list has %zu",
                       SP_PLACEMENT_MAX_DEVICES, n);
    out->n_devices = n;
    out->class_of = sp_mallocarray(n, sizeof *out->class_of);
    out->link_of = links ? sp_mallocarray(n, sizeof *out->link_of) : NULL;
    size_t *rep = sp_mallocarray(n, sizeof *rep); /* each class's first device */
    if (!out->class_of || (links && !out->link_of) || !rep) {
        sp_free(rep);
        sp_placement_classes_release(out);
        return sp_oom(ctx, "placing stages");
    }
    for (size_t i = 0; links && i < n; i++) {
        const char *name = sp_devices_get_device(list, i)->name;
        size_t k = sp_links_find(links, name);
        if (k == sp_links_get_count(links)) {
            sp_free(rep);
            sp_placement_classes_release(out);
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "placement search: device '%s' has no entry in the links file (its "
                           "\"devices\" must name every device of the device list)",
                           name);
        }
        out->link_of[i] = k;
    }
    uint32_t C = 0;
    for (size_t i = 0; i < n; i++) { /* an equivalence: comparing with each class's first is
                                        enough */
        uint32_t c = 0;
        while (c < C && !interchangeable(list, links, out->link_of, n, rep[c], i))
            c++;
        if (c == C)
            rep[C++] = i;
        out->class_of[i] = c;
    }
    out->speed = sp_mallocarray(C, sizeof *out->speed);
    out->memory = sp_mallocarray(C, sizeof *out->memory);
    out->size = sp_calloc(C, sizeof *out->size);
    out->incumbent = sp_mallocarray(stages, sizeof *out->incumbent);
    size_t layers = sp_profile_get_layer_count(profile);
    out->cut_bytes = sp_mallocarray(layers, sizeof *out->cut_bytes);
    if (links) {
        out->latency_ms = sp_mallocarray((size_t)C * C, sizeof *out->latency_ms);
        out->ms_per_byte = sp_mallocarray((size_t)C * C, sizeof *out->ms_per_byte);
    }
    if (!out->speed || !out->memory || !out->size || !out->incumbent || !out->cut_bytes ||
        (links && (!out->latency_ms || !out->ms_per_byte))) {
        sp_free(rep);
        sp_placement_classes_release(out);
        return sp_oom(ctx, "placing stages");
    }
    for (size_t i = 0; i < n; i++)
        out->size[out->class_of[i]]++;
    for (uint32_t c = 0; c < C; c++) {
        out->speed[c] = sp_devices_get_device(list, rep[c])->speed;
        out->memory[c] = sp_devices_get_device(list, rep[c])->memory_bytes;
    }
    if (links)
        class_links(out, links, rep, C);
    for (uint32_t s = 0; s < stages && s < n; s++)
        out->incumbent[s] = out->class_of[s];
    /* the bytes a cut after each block sends: blocks are the runs joined by cut_after: false,
     * as the chain makes them */
    size_t blocks = 0;
    for (size_t l = 0; l < layers; l++) {
        const sp_layer *L = sp_profile_get_layer(profile, l);
        if (l + 1 == layers || sp_cut_allowed(profile, l))
            out->cut_bytes[blocks++] = (double)L->activation_bytes;
    }
    sp_free(rep);
    out->ilp = (struct sp_ilp_placement){.classes = C,
                                         .speed = out->speed,
                                         .memory = out->memory,
                                         .size = out->size,
                                         .latency_ms = out->latency_ms,
                                         .ms_per_byte = out->ms_per_byte,
                                         .cut_bytes = out->cut_bytes,
                                         .incumbent = out->incumbent};
    return SP_OK;
}

void sp_placement_devices(const struct sp_placement_classes *pc, const uint32_t *stage_class,
                          uint32_t stages, size_t *device) {
    for (uint32_t s = 0; s < stages; s++) {
        size_t i = 0;
        for (; i < pc->n_devices; i++) {
            bool taken = false;
            for (uint32_t t = 0; t < s && !taken; t++)
                taken = device[t] == i;
            if (pc->class_of[i] == stage_class[s] && !taken)
                break;
        }
        device[s] = i; /* the program keeps within class sizes, so i < n_devices */
    }
}

sp_status sp_placement_select(sp_ctx *ctx, const struct sp_placement_classes *pc,
                              const sp_devices *list, const sp_links *links, const size_t *device,
                              uint32_t stages, sp_devices **devices_out, sp_links **links_out) {
    *links_out = NULL;
    sp_status st = sp_devices_select(ctx, list, device, stages, devices_out);
    if (st != SP_OK || !links)
        return st;
    size_t *idx = sp_mallocarray(stages, sizeof *idx);
    if (!idx)
        st = sp_oom(ctx, "placing stages");
    for (uint32_t s = 0; st == SP_OK && s < stages; s++)
        idx[s] = pc->link_of[device[s]];
    if (st == SP_OK)
        st = sp_links_select(ctx, links, idx, stages, links_out);
    sp_free(idx);
    if (st != SP_OK) {
        sp_devices_destroy(*devices_out);
        *devices_out = NULL;
    }
    return st;
}
