/* runtime/queue.h: a bounded single-producer single-consumer queue of tensors between two
 * neighbouring stages (activations forward, or gradients back).
 *
 * The queue owns `cap` buffers, in the receiving stage's memory (host, or its GPU). The producer
 * reserves the next free one, writes its output into it (a CPU stage computes straight into it, a
 * GPU stage copies to it) and publishes it with the micro-batch number; the consumer peeks at the
 * oldest, copies it into its own buffers and releases it. Every wait is bounded: it returns
 * false at the deadline, or soon after *abort becomes nonzero (waits sleep in short slices and
 * look at it), so no stage can wait forever on a neighbour that died. */
#ifndef SP_RUNTIME_QUEUE_H
#define SP_RUNTIME_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_exec_backend;

struct sp_queue {
    pthread_mutex_t mu;
    const struct sp_exec_backend *be; /* where the buffers live: the receiving stage's memory */
    pthread_cond_t cv;
    uint32_t cap;
    size_t elems; /* floats per buffer */
    float **buf;  /* [cap] */
    uint32_t *mb; /* [cap]: micro-batch of each published buffer */
    uint32_t head, count;
};

/* A condition variable on the monotonic clock, and one bounded wait on it (mu held): at most
 * 20 ms, never past deadline_ms; false, without waiting, once the deadline has passed or *abort
 * is set. The queues and the threads transport's step gate wait with it. */
void sp_cond_init_monotonic(pthread_cond_t *cv);
bool sp_cond_wait_slice(pthread_cond_t *cv, pthread_mutex_t *mu, double deadline_ms,
                        const atomic_int *abort);

/* buffers in the receiving stage's memory (be); false when out of memory */
bool sp_queue_init(struct sp_queue *q, uint32_t cap, size_t elems,
                   const struct sp_exec_backend *be);
void sp_queue_release_all(struct sp_queue *q);

/* Wait until a buffer is free; NULL at the deadline (monotonic ms) or on abort. *waited_ms
 * gains the time blocked. */
float *sp_queue_reserve(struct sp_queue *q, double deadline_ms, const atomic_int *abort,
                        double *waited_ms);
void sp_queue_publish(struct sp_queue *q, uint32_t mb);
/* Wait for the oldest published buffer; NULL at the deadline or on abort. */
const float *sp_queue_peek(struct sp_queue *q, double deadline_ms, const atomic_int *abort,
                           uint32_t *mb, double *waited_ms);
void sp_queue_pop(struct sp_queue *q);

#endif
