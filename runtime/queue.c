/* runtime/queue.c: bounded SPSC tensor queues with bounded waits (queue.h). */
#include "queue.h"

#include <time.h>

#include "internal.h"
#include "stage_exec.h"

#define WAIT_SLICE_MS 20.0 /* how often a waiting stage looks at the abort flag */

bool sp_queue_init(struct sp_queue *q, uint32_t cap, size_t elems,
                   const struct sp_exec_backend *be) {
    q->be = be;
    q->cap = cap;
    q->elems = elems;
    q->head = q->count = 0;
    q->buf = sp_calloc(cap, sizeof *q->buf);
    q->mb = sp_calloc(cap, sizeof *q->mb);
    bool ok = q->buf && q->mb;
    for (uint32_t k = 0; ok && k < cap; k++)
        ok =
            (q->buf[k] = be->alloc_zeroed(be->device, (elems ? elems : 1) * sizeof(float))) != NULL;
    pthread_mutex_init(&q->mu, NULL);
    sp_cond_init_monotonic(&q->cv);
    return ok;
}

void sp_queue_release_all(struct sp_queue *q) {
    for (uint32_t k = 0; q->buf && k < q->cap; k++)
        if (q->buf[k])
            q->be->release(q->be->device, q->buf[k]);
    sp_free(q->buf);
    sp_free(q->mb);
    q->buf = NULL;
    q->mb = NULL;
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
}

void sp_cond_init_monotonic(pthread_cond_t *cv) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
}

bool sp_cond_wait_slice(pthread_cond_t *cv, pthread_mutex_t *mu, double deadline_ms,
                        const atomic_int *abort) {
    double now = sp_now_ms();
    if (now >= deadline_ms || atomic_load(abort))
        return false;
    double until = now + WAIT_SLICE_MS < deadline_ms ? now + WAIT_SLICE_MS : deadline_ms;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double ahead_ns = (until - now) * 1e6;
    ts.tv_nsec += (long)ahead_ns;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(cv, mu, &ts);
    return true;
}

float *sp_queue_reserve(struct sp_queue *q, double deadline_ms, const atomic_int *abort,
                        double *waited_ms) {
    double t0 = sp_now_ms();
    float *b = NULL;
    pthread_mutex_lock(&q->mu);
    while (q->count == q->cap && sp_cond_wait_slice(&q->cv, &q->mu, deadline_ms, abort))
        ;
    if (q->count < q->cap)
        b = q->buf[(q->head + q->count) % q->cap];
    pthread_mutex_unlock(&q->mu);
    *waited_ms += sp_now_ms() - t0;
    return b;
}

void sp_queue_publish(struct sp_queue *q, uint32_t mb) {
    pthread_mutex_lock(&q->mu);
    q->mb[(q->head + q->count) % q->cap] = mb;
    q->count++;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

const float *sp_queue_peek(struct sp_queue *q, double deadline_ms, const atomic_int *abort,
                           uint32_t *mb, double *waited_ms) {
    double t0 = sp_now_ms();
    const float *b = NULL;
    pthread_mutex_lock(&q->mu);
    while (q->count == 0 && sp_cond_wait_slice(&q->cv, &q->mu, deadline_ms, abort))
        ;
    if (q->count > 0) {
        b = q->buf[q->head];
        *mb = q->mb[q->head];
    }
    pthread_mutex_unlock(&q->mu);
    *waited_ms += sp_now_ms() - t0;
    return b;
}

void sp_queue_pop(struct sp_queue *q) {
    pthread_mutex_lock(&q->mu);
    q->head = (q->head + 1) % q->cap;
    q->count--;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}
