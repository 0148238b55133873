/* core/threads.c: how many threads the library may start of its own accord for one call: the
 * process's CPUs (its affinity), or fewer where the host program says so (sp_set_thread_limit;
 * the CLI's STAGEPART_THREADS). The readers that split their work (a large file read in halves,
 * the profile's layers in pieces) ask here. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "internal.h"

static atomic_uint g_thread_limit; /* 0: none */

void sp_set_thread_limit(unsigned threads) {
    atomic_store(&g_thread_limit, threads);
}

size_t sp_threads_usable(void) {
    size_t cpus = 1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
        cpus = (size_t)CPU_COUNT(&set);
    } else {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cpus = n > 0 ? (size_t)n : 1;
    }
    unsigned limit = atomic_load(&g_thread_limit);
    return limit && limit < cpus ? limit : cpus;
}

sp_status sp_thread_start_status(int err) {
    return err == EAGAIN ? SP_ERR_NOMEM : SP_ERR_NO_DEVICE;
}

const char *sp_thread_start_hint(int err) {
    return err == EAGAIN ? " (out of memory for a thread's stack, or too many threads: ulimit -v, "
                           "-d or -u)"
                         : "";
}
