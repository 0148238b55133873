/* runtime/turns.h: run --isolate's turn taking. Every op of every stage gets a place in one
 * global order (the simulator's start order), and a stage runs its op only when the order
 * reaches it, so each op has the whole machine to itself while its inputs, made by earlier ops,
 * are already there. Waits are bounded and stop when the run stops. */
#ifndef SP_RUNTIME_TURNS_H
#define SP_RUNTIME_TURNS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct sp_turns {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t next;          /* the place whose op may run now */
    uint64_t per_step;      /* places in one step: every op, then each stage's SGD */
    const atomic_int *stop; /* the transport's: nonzero once the run stops */
};

void sp_turns_init(struct sp_turns *t, uint64_t per_step, const atomic_int *stop);
void sp_turns_release(struct sp_turns *t);
/* Wait until place `turn` comes; false at the deadline or when the run stops. */
bool sp_turns_wait(struct sp_turns *t, uint64_t turn, double deadline_ms);
/* The op at the current place is done: the next may run. */
void sp_turns_done(struct sp_turns *t);

#endif
