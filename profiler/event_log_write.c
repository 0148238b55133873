/* profiler/event_log_write.c: the event log writer (profiler/event_log.h). One mutex around a
 * 1 MiB buffer: records are small and fixed, so holding it is a memcpy. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event_log.h"

#define BUFFER_BYTES (1u << 20)

struct interned {
    uint64_t hash;
    char *bytes;
    size_t len;
    uint32_t id; /* index + 1; 0: empty slot */
};

struct sp_evlog {
    pthread_mutex_t lock;
    int fd;    /* -1 once sealed */
    int error; /* of the first failed write */
    bool sealed;
    unsigned char *buf;
    size_t used;
    struct interned *slots;
    size_t cap, n_strings;
    struct {
        const char *ptr;
        const char *bytes; /* the interned copy: it never moves */
        size_t len;
        uint32_t id;
    } by_address[256];
};

static uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static void drain(struct sp_evlog *log) { /* with the lock held */
    size_t off = 0;
    if (log->sealed)
        return;
    while (!log->error && off < log->used) {
        ssize_t w = write(log->fd, log->buf + off, log->used - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            log->error = w < 0 ? errno : EIO;
        else
            off += (size_t)w;
    }
    log->used = 0;
}

/* A record's room in the buffer, or NULL once writing has failed. With the lock held. */
static unsigned char *reserve(struct sp_evlog *log, uint8_t tag, uint32_t len) {
    if (log->error || log->sealed)
        return NULL;
    size_t need = SP_EVLOG_RECORD_HEADER_BYTES + (size_t)len;
    if (log->used + need > BUFFER_BYTES)
        drain(log);
    if (log->error || need > BUFFER_BYTES)
        return NULL;
    unsigned char *p = log->buf + log->used;
    log->used += need;
    p[0] = tag;
    for (int i = 0; i < 4; i++)
        p[1 + i] = (unsigned char)(len >> (8 * i));
    return p + SP_EVLOG_RECORD_HEADER_BYTES;
}

static unsigned char *put_u8(unsigned char *p, uint8_t v) {
    *p = v;
    return p + 1;
}
static unsigned char *put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
    return p + 4;
}
static unsigned char *put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
    return p + 8;
}

struct sp_evlog *sp_evlog_open(const char *path, uint32_t pid) {
    struct sp_evlog *log = calloc(1, sizeof *log);
    if (!log)
        return NULL;
    log->buf = malloc(BUFFER_BYTES);
    log->cap = 1024;
    log->slots = calloc(log->cap, sizeof *log->slots);
    log->fd = -1;
    if (!log->buf || !log->slots) {
        free(log->buf);
        free(log->slots);
        free(log);
        errno = ENOMEM;
        return NULL;
    }
    log->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (log->fd < 0) {
        int e = errno;
        free(log->buf);
        free(log->slots);
        free(log);
        errno = e;
        return NULL;
    }
    pthread_mutex_init(&log->lock, NULL);
    memcpy(log->buf, SP_EVLOG_MAGIC, 8);
    put_u32(put_u32(log->buf + 8, SP_EVLOG_VERSION), pid);
    log->used = SP_EVLOG_HEADER_BYTES;
    return log;
}

static bool grow_strings(struct sp_evlog *log) {
    size_t cap = log->cap * 2;
    struct interned *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < log->cap; i++) {
        if (!log->slots[i].id)
            continue;
        size_t h = log->slots[i].hash & (cap - 1);
        while (slots[h].id)
            h = (h + 1) & (cap - 1);
        slots[h] = log->slots[i];
    }
    free(log->slots);
    log->slots = slots;
    log->cap = cap;
    return true;
}

bool sp_evlog_string(struct sp_evlog *log, const char *s, size_t len, uint32_t *id) {
    if (len > (64u << 10))
        len = 64u << 10; /* names are short; a runaway one is cut, not refused */
    uint64_t hash = hash_bytes(s, len);
    pthread_mutex_lock(&log->lock);
    size_t h = hash & (log->cap - 1);
    for (; log->slots[h].id; h = (h + 1) & (log->cap - 1)) {
        const struct interned *e = &log->slots[h];
        if (e->hash == hash && e->len == len && memcmp(e->bytes, s, len) == 0) {
            *id = e->id - 1;
            pthread_mutex_unlock(&log->lock);
            return true;
        }
    }
    bool ok = false;
    char *copy = malloc(len ? len : 1);
    if (copy && log->n_strings < UINT32_MAX - 1) {
        memcpy(copy, s, len);
        struct interned *e = &log->slots[h];
        e->hash = hash;
        e->bytes = copy;
        e->len = len;
        e->id = (uint32_t)++log->n_strings;
        *id = e->id - 1;
        unsigned char *p = reserve(log, SP_EVLOG_STRING, (uint32_t)(4 + len));
        if (p)
            memcpy(put_u32(p, *id), s, len);
        ok = true;
        copy = NULL;
        if (2 * log->n_strings > log->cap && !grow_strings(log))
            log->error = ENOMEM; /* the table must keep an empty slot: stop cleanly */
    }
    free(copy);
    pthread_mutex_unlock(&log->lock);
    return ok;
}

bool sp_evlog_name(struct sp_evlog *log, const char *s, uint32_t *id) {
    size_t h = ((uintptr_t)s >> 3) & 255;
    pthread_mutex_lock(&log->lock);
    if (log->by_address[h].ptr == s && log->by_address[h].bytes &&
        memcmp(log->by_address[h].bytes, s, log->by_address[h].len) == 0 &&
        s[log->by_address[h].len] == '\0') {
        *id = log->by_address[h].id;
        pthread_mutex_unlock(&log->lock);
        return true;
    }
    pthread_mutex_unlock(&log->lock);
    size_t len = strlen(s);
    if (!sp_evlog_string(log, s, len, id))
        return false;
    if (len > (64u << 10))
        return true; /* cut when interned: never cached */
    pthread_mutex_lock(&log->lock);
    uint64_t hash = hash_bytes(s, len);
    for (size_t i = hash & (log->cap - 1); log->slots[i].id; i = (i + 1) & (log->cap - 1))
        if (log->slots[i].id == *id + 1) {
            log->by_address[h].ptr = s;
            log->by_address[h].bytes = log->slots[i].bytes;
            log->by_address[h].len = len;
            log->by_address[h].id = *id;
            break;
        }
    pthread_mutex_unlock(&log->lock);
    return true;
}

void sp_evlog_thread(struct sp_evlog *log, uint32_t tid, uint32_t os_tid, uint32_t pthread_tid) {
    pthread_mutex_lock(&log->lock);
    unsigned char *p = reserve(log, SP_EVLOG_THREAD, 12);
    if (p)
        put_u32(put_u32(put_u32(p, tid), os_tid), pthread_tid);
    pthread_mutex_unlock(&log->lock);
}

void sp_evlog_range(struct sp_evlog *log, uint64_t id, int64_t start_ns, int64_t end_ns,
                    uint32_t tid, uint32_t name, uint64_t payload, bool has_payload) {
    pthread_mutex_lock(&log->lock);
    unsigned char *p = reserve(log, SP_EVLOG_RANGE, SP_EVLOG_RANGE_BYTES);
    if (p) {
        p = put_u64(put_u64(put_u64(p, id), (uint64_t)start_ns), (uint64_t)end_ns);
        put_u8(put_u64(put_u32(put_u32(p, tid), name), payload), has_payload ? 1 : 0);
    }
    pthread_mutex_unlock(&log->lock);
}

void sp_evlog_extcorr(struct sp_evlog *log, uint64_t corr, uint64_t range_id) {
    pthread_mutex_lock(&log->lock);
    unsigned char *p = reserve(log, SP_EVLOG_EXTCORR, 16);
    if (p)
        put_u64(put_u64(p, corr), range_id);
    pthread_mutex_unlock(&log->lock);
}

void sp_evlog_api(struct sp_evlog *log, int64_t start_ns, uint64_t corr, uint32_t cupti_tid,
                  uint64_t range_id) {
    pthread_mutex_lock(&log->lock);
    unsigned char *p = reserve(log, SP_EVLOG_API, SP_EVLOG_API_BYTES);
    if (p)
        put_u64(put_u32(put_u64(put_u64(p, (uint64_t)start_ns), corr), cupti_tid), range_id);
    pthread_mutex_unlock(&log->lock);
}

void sp_evlog_activity(struct sp_evlog *log, uint8_t kind, int64_t start_ns, int64_t end_ns,
                       uint64_t corr, uint64_t bytes, uint32_t device, uint32_t stream,
                       uint32_t name) {
    pthread_mutex_lock(&log->lock);
    unsigned char *p = reserve(log, SP_EVLOG_ACTIVITY, SP_EVLOG_ACTIVITY_BYTES);
    if (p) {
        p = put_u64(put_u64(put_u8(p, kind), (uint64_t)start_ns), (uint64_t)end_ns);
        put_u32(put_u32(put_u32(put_u64(put_u64(p, corr), bytes), device), stream), name);
    }
    pthread_mutex_unlock(&log->lock);
}

static void pair_of_strings(struct sp_evlog *log, uint8_t tag, uint32_t a, uint32_t b) {
    pthread_mutex_lock(&log->lock);
    unsigned char *p = reserve(log, tag, 8);
    if (p)
        put_u32(put_u32(p, a), b);
    pthread_mutex_unlock(&log->lock);
}

void sp_evlog_device(struct sp_evlog *log, uint32_t device, const char *name) {
    uint32_t id;
    if (sp_evlog_string(log, name, strlen(name), &id))
        pair_of_strings(log, SP_EVLOG_DEVICE, device, id);
}

void sp_evlog_meta(struct sp_evlog *log, const char *key, const char *value) {
    uint32_t k, v;
    if (sp_evlog_string(log, key, strlen(key), &k) &&
        sp_evlog_string(log, value, strlen(value), &v))
        pair_of_strings(log, SP_EVLOG_META, k, v);
}

void sp_evlog_dropped(struct sp_evlog *log, uint64_t count) {
    pthread_mutex_lock(&log->lock);
    unsigned char *p = reserve(log, SP_EVLOG_DROPPED, 8);
    if (p)
        put_u64(p, count);
    pthread_mutex_unlock(&log->lock);
}

void sp_evlog_flush(struct sp_evlog *log) {
    pthread_mutex_lock(&log->lock);
    drain(log);
    pthread_mutex_unlock(&log->lock);
}

int sp_evlog_failed(const struct sp_evlog *log) {
    return log->error;
}

int sp_evlog_seal(struct sp_evlog *log) {
    pthread_mutex_lock(&log->lock);
    drain(log);
    int e = log->error;
    if (!log->sealed) {
        if (close(log->fd) != 0 && !e)
            e = errno;
        log->sealed = true;
        log->fd = -1;
    }
    pthread_mutex_unlock(&log->lock);
    return e;
}

int sp_evlog_close(struct sp_evlog *log) {
    if (!log)
        return 0;
    int e = sp_evlog_seal(log);
    pthread_mutex_destroy(&log->lock);
    for (size_t i = 0; i < log->cap; i++)
        free(log->slots[i].bytes);
    free(log->slots);
    free(log->buf);
    free(log);
    return e;
}
