/* core/memory_limit.c: sp_memory_limit, how much more this process may allocate: the headroom
 * under physical memory and the cgroup's limit (a container's, as CI machines have) against its
 * resident size, under RLIMIT_AS against its address space, under RLIMIT_DATA against its data
 * segment. */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

static size_t smaller(size_t a, size_t b) {
    return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

/* a number from the first line of a file ("max" and unreadable files: 0, no limit) */
static size_t read_limit(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long v = 0;
    char word[32] = "";
    if (fscanf(f, "%31s", word) != 1 || sscanf(word, "%llu", &v) != 1)
        v = 0;
    fclose(f);
    /* cgroup v1 writes a page-rounded 2^63 for "no limit" */
    return v >= (1ull << 62) || v > SIZE_MAX ? 0 : (size_t)v;
}

/* limit - used, at least 1 byte when there is a limit (0 means none) */
static size_t headroom(size_t limit, size_t used) {
    return limit == 0 ? 0 : limit > used ? limit - used : 1;
}

size_t sp_memory_limit(void) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), vsz = 0, rss = 0, data = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) { /* size resident shared text lib data dt, in pages */
        unsigned long v[6] = {0};
        if (fscanf(f, "%lu %lu %lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) == 6) {
            vsz = v[0] * page;
            rss = v[1] * page;
            data = v[5] * page;
        }
        fclose(f);
    }
    size_t room = 0, phys = 0;
    long pages = sysconf(_SC_PHYS_PAGES);
    if (pages > 0 && (unsigned long)pages <= SIZE_MAX / page)
        phys = (size_t)pages * page;
    room = smaller(room, headroom(phys, rss));
    room = smaller(room, headroom(read_limit("/sys/fs/cgroup/memory.max"), rss)); /* v2 */
    room = smaller(room, headroom(read_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes"), rss));
    const int which[] = {RLIMIT_AS, RLIMIT_DATA};
    const size_t used[] = {vsz, data};
    for (size_t i = 0; i < sizeof which / sizeof which[0]; i++) {
        struct rlimit rl;
        if (getrlimit(which[i], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            rl.rlim_cur <= SIZE_MAX)
            room = smaller(room, headroom((size_t)rl.rlim_cur, used[i]));
    }
    return room;
}
