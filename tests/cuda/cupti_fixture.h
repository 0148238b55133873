/* tests/cuda/cupti_fixture.h: hand-built CUPTI 13 activity buffers, packed the way CUPTI packs
 * them (records back to back, each its struct's size, 8-byte aligned), for the tests that run
 * the collector's record parsing without a GPU. */
#ifndef SP_TEST_CUPTI_FIXTURE_H
#define SP_TEST_CUPTI_FIXTURE_H

#include <cupti.h>
#include <string.h>

struct fixture_buffer {
    uint8_t *data;
    size_t used, cap;
};

static inline void *fixture_add(struct fixture_buffer *b, size_t size) {
    if (b->used + size > b->cap)
        return NULL;
    void *p = b->data + b->used;
    memset(p, 0, size);
    b->used += size;
    return p;
}

static inline void fixture_extcorr(struct fixture_buffer *b, uint32_t corr, uint64_t range) {
    CUpti_ActivityExternalCorrelation *x = fixture_add(b, sizeof *x);
    x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    x->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
    x->externalId = range;
    x->correlationId = corr;
}

static inline void fixture_api(struct fixture_buffer *b, CUpti_ActivityKind kind,
                               CUpti_CallbackId cbid, uint64_t start, uint32_t corr, uint32_t tid) {
    CUpti_ActivityAPI *a = fixture_add(b, sizeof *a);
    a->kind = kind;
    a->cbid = cbid;
    a->start = start;
    a->end = start + 2000;
    a->processId = 1;
    a->threadId = tid;
    a->correlationId = corr;
}

static inline void fixture_kernel(struct fixture_buffer *b, uint64_t start, uint64_t end,
                                  uint32_t corr, uint32_t device, const char *name) {
    CUpti_ActivityKernel10 *k = fixture_add(b, sizeof *k);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->start = start;
    k->end = end;
    k->deviceId = device;
    k->streamId = 7;
    k->correlationId = corr;
    k->name = name;
}

static inline void fixture_memcpy(struct fixture_buffer *b, uint64_t start, uint64_t end,
                                  uint32_t corr, uint64_t bytes) {
    CUpti_ActivityMemcpy6 *m = fixture_add(b, sizeof *m);
    m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m->bytes = bytes;
    m->start = start;
    m->end = end;
    m->streamId = 7;
    m->correlationId = corr;
}

static inline void fixture_p2p(struct fixture_buffer *b, uint64_t start, uint64_t end,
                               uint32_t corr, uint64_t bytes) {
    CUpti_ActivityMemcpyPtoP4 *m = fixture_add(b, sizeof *m);
    m->kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    m->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    m->bytes = bytes;
    m->start = start;
    m->end = end;
    m->srcDeviceId = 0;
    m->dstDeviceId = 1;
    m->streamId = 8;
    m->correlationId = corr;
}

static inline void fixture_memset(struct fixture_buffer *b, uint64_t start, uint64_t end,
                                  uint32_t corr, uint64_t bytes) {
    CUpti_ActivityMemset4 *m = fixture_add(b, sizeof *m);
    m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m->bytes = bytes;
    m->start = start;
    m->end = end;
    m->streamId = 7;
    m->correlationId = corr;
}

static inline void fixture_device(struct fixture_buffer *b, uint32_t id, const char *name) {
    CUpti_ActivityDevice5 *d = fixture_add(b, sizeof *d);
    d->kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d->id = id;
    d->name = name;
}

#endif
