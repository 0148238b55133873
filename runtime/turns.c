/* runtime/turns.c: the global op order of run --isolate (turns.h). */
#include "turns.h"

#include "queue.h"

void sp_turns_init(struct sp_turns *t, uint64_t per_step, const atomic_int *stop) {
    pthread_mutex_init(&t->mu, NULL);
    sp_cond_init_monotonic(&t->cv);
    t->next = 0;
    t->per_step = per_step;
    t->stop = stop;
}

void sp_turns_release(struct sp_turns *t) {
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
}

bool sp_turns_wait(struct sp_turns *t, uint64_t turn, double deadline_ms) {
    pthread_mutex_lock(&t->mu);
    while (t->next != turn && sp_cond_wait_slice(&t->cv, &t->mu, deadline_ms, t->stop))
        ;
    bool ok = t->next == turn;
    pthread_mutex_unlock(&t->mu);
    return ok;
}

void sp_turns_done(struct sp_turns *t) {
    pthread_mutex_lock(&t->mu);
    t->next++;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}
