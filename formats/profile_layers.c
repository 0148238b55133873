/* formats/profile_layers.c: a profile's "layers" array read one element at a time, in pieces
 * on as many threads as the process may run (formats/profile.c hands it the array's text).
 *
 * Where an element starts cannot be known without reading everything before it (a name may hold
 * any text), so the pieces are guesses checked afterwards: past each 1/K of the text the first
 * "}", "," "{" (whitespace allowed between) is taken as the start of a layer object, and every
 * piece parses element after element from its guess until it stands exactly on a later piece's
 * guess (that guess is then a real element start: the piece before it read real elements up to
 * it) or at the array's end. Following the pieces from the first, whose start is certain, gives
 * the same elements as one pass would; a piece whose guess was wrong is never reached and is
 * dropped, its text having been read by the piece before it. Any piece on that chain with a
 * problem, and any custom allocator (not promised to be thread-safe), sends the array through
 * one pass on this thread, whose messages name each layer by its index. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "profile_impl.h"

enum {
    MAX_PIECES = 64,
    MAX_THREADS = 8,
    /* {"name":"","fwd_ms":0,"bwd_ms":0}: the shortest layer a profile may hold */
    MIN_ELEMENT_BYTES = 34,
    /* elements parsed under cJSON's lock at once: their nodes fit the thread's arena */
    PARSE_BATCH = 48,
};

struct piece {
    const char *start; /* its first element's first byte, as guessed (the first piece: known) */
    sp_layer *layers;  /* names and kinds as offsets into pool */
    size_t n, cap;
    bool own; /* layers is a block of its own: it outgrew its share of the common one */
    struct sp_strbuf pool;
    size_t joined;    /* the piece whose start it reached, or the piece count: the array's end */
    const char *end;  /* just past the array's "]", where it reached it */
    sp_status status; /* SP_OK, or why it stopped: SP_ERR_PARSE (malformed), _NOMEM, _LIMIT */
    sp_ctx problems;  /* what read_layer reported (pieces read on their own) */
};

struct pieces {
    struct sp_json_reader *r; /* the caller's: only for one pass on the calling thread */
    const char *end;          /* where the text ends (the document's end) */
    struct piece *piece;
    size_t count;
    struct sp_side_job *side; /* run by the first thread free, or NULL */
    atomic_size_t next;       /* the next task a thread takes: the side job, then the pieces */
};

/* one element read: the layer kept, its strings copied into the piece's pool */
static sp_status keep_layer(struct piece *pc, struct sp_json_reader *r, const cJSON *obj) {
    if (pc->n == SP_PROFILE_MAX_LAYERS) /* the whole-document path says so */
        return SP_ERR_LIMIT;
    if (pc->n == pc->cap) { /* past its share of the common block: a block of its own */
        size_t cap = pc->cap ? 2 * pc->cap : 1024;
        sp_layer *grown = pc->own ? sp_realloc(pc->layers, cap * sizeof *grown)
                                  : sp_mallocarray(cap, sizeof *grown);
        if (!grown)
            return SP_ERR_NOMEM;
        if (!pc->own && pc->n)
            memcpy(grown, pc->layers, pc->n * sizeof *grown);
        pc->layers = grown;
        pc->cap = cap;
        pc->own = true;
    }
    sp_layer *L = &pc->layers[pc->n];
    sp_profile_read_layer(r, obj, pc->n++, L);
    size_t name_at = pc->pool.len, kind_at = pc->pool.len;
    sp_strbuf_append(&pc->pool, L->name, strlen(L->name) + 1);
    /* a kind like the layer before's is that one's copy: a run of layers of one kind holds one
     * copy of it, which the partitioner then compares by address (sp_str_eq) */
    uintptr_t before = pc->n > 1 ? (uintptr_t)pc->layers[pc->n - 2].kind : 0;
    if (pc->n > 1 && !pc->pool.oom && strcmp(pc->pool.buf + before, L->kind) == 0) {
        kind_at = before;
    } else {
        kind_at = pc->pool.len;
        sp_strbuf_append(&pc->pool, L->kind, strlen(L->kind) + 1);
    }
    L->name = (const char *)(uintptr_t)name_at;
    L->kind = (const char *)(uintptr_t)kind_at;
    return pc->pool.oom ? SP_ERR_NOMEM : SP_OK;
}

/* Piece i, element after element from its start, until it stands on a later piece's start
 * or at the array's end. cJSON parses one call at a time in the process (sp_cjson_parse), so
 * the elements are parsed in batches under its lock and turned into layers after it is given
 * back: one thread's layers are made while another parses. A batch's nodes come from the
 * thread's arena (a layer object of the usual fields takes about 1 KiB) and go with it. */
static void read_piece(struct pieces *ps, size_t i, struct sp_json_reader *r,
                       struct sp_parse_arena *arena) {
    struct piece *pc = &ps->piece[i];
    const char *p = pc->start, *end = ps->end;
    size_t next = i + 1;
    for (;;) {
        cJSON *obj[PARSE_BATCH];
        size_t n = 0;
        bool last = false;      /* the piece ends with this batch */
        sp_status tail = SP_OK; /* how it ends, when last */
        sp_parse_arena_enter(arena);
        sp_cjson_lock();
        while (n < PARSE_BATCH && !last) {
            const char *value_end = NULL;
            cJSON *o = sp_cjson_parse_locked(p, (size_t)(end - p), &value_end, false);
            if (!o) {
                tail = SP_ERR_PARSE;
                last = true;
                break;
            }
            obj[n++] = o;
            p = sp_json_skip_space(value_end, end);
            if (p < end && *p == ',') {
                p = sp_json_skip_space(p + 1, end);
                while (next < ps->count && ps->piece[next].start < p)
                    next++; /* a guess inside what this piece read: not an element start */
                if (next < ps->count && ps->piece[next].start == p) {
                    pc->joined = next;
                    last = true;
                }
                continue;
            }
            tail = p < end && *p == ']' ? SP_OK : SP_ERR_PARSE;
            pc->end = p + 1;
            pc->joined = ps->count;
            last = true;
        }
        sp_cjson_unlock();
        sp_status st = SP_OK;
        for (size_t k = 0; k < n && st == SP_OK; k++)
            st = keep_layer(pc, r, obj[k]);
        if (!sp_parse_arena_holds_all(arena))
            for (size_t k = 0; k < n; k++)
                cJSON_Delete(obj[k]); /* else leaving frees them */
        sp_parse_arena_leave();
        if (st != SP_OK || last) {
            pc->status = st != SP_OK ? st : tail;
            return;
        }
    }
}

static void *read_pieces(void *arg) {
    struct pieces *ps = arg;
    struct sp_parse_arena arena;                   /* a batch of layer objects: about 1 KiB each */
    sp_parse_arena_init(&arena, (size_t)64 << 10); /* without memory: nodes from malloc */
    for (;;) {
        size_t i = atomic_fetch_add(&ps->next, 1);
        if (ps->side) { /* task 0 is the side job, task i + 1 piece i */
            if (i == 0) {
                ps->side->run(ps->side->arg);
                ps->side->done = true; /* read after the threads are joined */
                continue;
            }
            i--;
        }
        if (i >= ps->count)
            break;
        struct sp_json_reader own = {&ps->piece[i].problems, ps->r->file};
        read_piece(ps, i, ps->count == 1 ? ps->r : &own, &arena);
    }
    sp_parse_arena_release(&arena);
    return NULL;
}

/* The "{" of the first "}" "," "{" (whitespace allowed between) at or after p, or NULL: where
 * an element seems to start (a name may hold those characters, so only a guess). */
static const char *next_start(const char *p, const char *end) {
    for (; (p = memchr(p, '}', (size_t)(end - p))) != NULL; p++) {
        const char *q = sp_json_skip_space(p + 1, end);
        if (q < end && *q == ',' && (q = sp_json_skip_space(q + 1, end)) < end && *q == '{')
            return q;
    }
    return NULL;
}

/* The guessed starts: past each 1/count of the text, the next start seen from there. */
static size_t guess_starts(struct piece *piece, const char *first, const char *end, size_t count) {
    size_t n = 1;
    piece[0].start = first;
    for (size_t k = 1; k < count; k++) {
        const char *from = first + (size_t)(end - first) / count * k;
        if (from <= piece[n - 1].start)
            continue;
        const char *brace = next_start(from, end);
        if (!brace)
            break;
        if (brace > piece[n - 1].start)
            piece[n++].start = brace;
    }
    return n;
}

static void release_pieces(struct piece *piece, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (piece[i].own)
            sp_free(piece[i].layers);
        sp_strbuf_release(&piece[i].pool);
        sp_strbuf_release(&piece[i].problems.err);
        sp_strbuf_release(&piece[i].problems.warn);
    }
}

/* The chain from the first piece into one list; *again: a piece on it has problems (one pass
 * says which layers). When every piece on the chain kept to its share of the common block, the
 * list is that block, each piece moved down to follow the one before (never up: a share holds at
 * least the layers read into it), so the layers are never held twice; else a new list. */
static sp_status join_pieces(struct piece *piece, size_t count, sp_layer **common,
                             struct sp_profile_layers *out, bool *again) {
    size_t n = 0, bytes = 0;
    bool in_common = *common != NULL;
    for (size_t i = 0; i < count; i = piece[i].joined) {
        if (piece[i].status != SP_OK)
            return piece[i].status;
        if (piece[i].joined == count)
            out->end = piece[i].end;
        if (piece[i].problems.problems) {
            *again = true;
            return SP_OK;
        }
        n += piece[i].n;
        bytes += piece[i].pool.len;
        in_common &= !piece[i].own;
    }
    if (n > SP_PROFILE_MAX_LAYERS)
        return SP_ERR_LIMIT;
    sp_layer *layers = in_common ? *common : sp_mallocarray(n ? n : 1, sizeof *layers);
    /* the first piece's names grown to hold every name, each later piece's copied in and
     * freed at once */
    char *pool = layers ? sp_realloc(piece[0].pool.buf, bytes + 1) : NULL;
    if (!pool) {
        if (!in_common)
            sp_free(layers);
        return SP_ERR_NOMEM;
    }
    piece[0].pool.buf = pool;
    size_t at = 0, used = 0;
    for (size_t i = 0; i < count; i = piece[i].joined) {
        /* the run of one kind that crosses into this piece keeps the copy it began with */
        uintptr_t run = UINTPTR_MAX, run_at = 0;
        if (at > 0 && piece[i].n > 0 &&
            strcmp(pool + (uintptr_t)layers[at - 1].kind,
                   piece[i].pool.buf + (uintptr_t)piece[i].layers[0].kind) == 0) {
            run = (uintptr_t)piece[i].layers[0].kind;
            run_at = (uintptr_t)layers[at - 1].kind;
        }
        for (size_t k = 0; k < piece[i].n; k++) {
            sp_layer L = piece[i].layers[k];
            L.name = (const char *)((uintptr_t)L.name + used);
            L.kind = (const char *)((uintptr_t)L.kind == run ? run_at : (uintptr_t)L.kind + used);
            layers[at++] = L;
        }
        size_t len = piece[i].pool.len;
        if (i > 0) {
            memcpy(pool + used, piece[i].pool.buf, len);
            sp_strbuf_release(&piece[i].pool);
        }
        used += len;
        /* copied: freed at once, so the layers are held twice at most a piece */
        if (piece[i].own) {
            sp_free(piece[i].layers);
            piece[i].layers = NULL;
            piece[i].own = false;
        }
    }
    pool[used] = '\0';
    if (in_common) { /* the shares' room left over given back; the block is the list's now */
        sp_layer *fit = sp_realloc(layers, (n ? n : 1) * sizeof *fit);
        layers = fit ? fit : layers;
        *common = NULL;
    }
    out->layers = layers;
    out->n = n;
    out->pool = (struct sp_strbuf){.buf = pool, .len = used, .cap = bytes + 1};
    sp_strbuf_init(&piece[0].pool);
    return SP_OK;
}

/* The pieces' lists made before the threads start: one common block of layers, each piece a
 * share as large as its text suggests (its length over its first element's, and an eighth
 * more), and each piece's names room for an eighth of its text. Made on this thread, from the
 * heap whose pages earlier phases touched (and which the CLI asks for in huge pages), not from a
 * new thread's arena, where every page is fresh; and joined in place, so the layers are not
 * copied into a second list (joining a 100,000-layer profile's pieces took 4.3 ms, 0.8 ms so;
 * `partition` of a 10-million-layer one peaked at 2.9 GB, 2.7 GB so). A piece that outgrows its
 * share moves to a block of its own. NULL when memory ran out. */
static sp_layer *make_lists(struct piece *piece, size_t count, const char *end) {
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        const char *to = i + 1 < count ? piece[i + 1].start : end;
        const char *next = next_start(piece[i].start, to); /* its first element's length */
        size_t bytes = (size_t)(to - piece[i].start),
               per = (size_t)((next ? next : to) - piece[i].start);
        /* the first element's length is a guess too (a name may hold "}, {"): the share is
         * bounded by the layers the text could hold at the shortest element a profile takes,
         * and by the text's own size in layers, so that no text makes the reader reserve more
         * than about its size; a piece that outgrows its share moves to a block of its own */
        size_t share = bytes / (per > MIN_ELEMENT_BYTES ? per : MIN_ELEMENT_BYTES);
        share = share < bytes / sizeof(sp_layer) ? share : bytes / sizeof(sp_layer);
        piece[i].cap = share + share / 8 + 16;
        total += piece[i].cap;
        if (!sp_strbuf_reserve(&piece[i].pool, bytes / 8))
            return NULL;
    }
    sp_layer *common = sp_mallocarray(total, sizeof *common);
    for (size_t i = 0, at = 0; common && i < count; at += piece[i++].cap)
        piece[i].layers = common + at;
    return common;
}

/* count pieces read by up to `threads` threads (this one among them) */
static sp_status read_array(struct sp_json_reader *r, const char *first, const char *end,
                            size_t count, size_t threads, struct sp_side_job *side,
                            struct sp_profile_layers *out, bool *again) {
    struct piece piece[MAX_PIECES];
    memset(piece, 0, sizeof piece);
    struct pieces ps = {.r = r, .end = end, .piece = piece, .side = side};
    ps.count = guess_starts(piece, first, end, count);
    sp_layer *common = make_lists(piece, ps.count, end);
    if (!common) {
        release_pieces(piece, ps.count);
        return SP_ERR_NOMEM;
    }
    atomic_init(&ps.next, 0);
    if (ps.count == 1) { /* one piece: read on this thread, the side job left to the caller */
        threads = 1;
        ps.side = NULL;
    }
    size_t tasks = ps.count + (ps.side != NULL);
    threads = threads < tasks ? threads : tasks;
    pthread_t tid[MAX_THREADS];
    size_t started = 0;
    for (size_t t = 1; t < threads; t++) /* a thread that does not start: the others read more */
        if (pthread_create(&tid[started], NULL, read_pieces, &ps) == 0)
            started++;
    read_pieces(&ps);
    for (size_t t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    sp_status st = join_pieces(piece, ps.count, &common, out, again);
    release_pieces(piece, ps.count);
    sp_free(common); /* NULL when it became the list */
    return st;
}

sp_status sp_profile_layers_read(struct sp_json_reader *r, const char *array, size_t max_len,
                                 size_t piece_bytes, size_t threads, struct sp_side_job *side,
                                 struct sp_profile_layers *out) {
    memset(out, 0, sizeof *out);
    sp_strbuf_init(&out->pool);
    const char *end = array + max_len, *first = sp_json_skip_space(array + 1, end);
    if (first < end && *first == ']') {
        out->end = first + 1;
        return SP_OK;
    }
    size_t count = piece_bytes ? max_len / piece_bytes : 1;
    count = count < 1 ? 1 : count > MAX_PIECES ? MAX_PIECES : count;
    threads = threads ? threads : sp_threads_usable();
    threads = threads > MAX_THREADS ? MAX_THREADS : threads;
    bool again = false;
    if (count == 1 || threads == 1 || !sp_alloc_is_default())
        return read_array(r, first, end, 1, 1, NULL, out, &again);
    sp_status st = read_array(r, first, end, count, threads, side, out, &again);
    /* problems, or memory that ran out on another thread (whose budget note this thread's
     * message would miss): one pass says which */
    if (again || st == SP_ERR_NOMEM)
        st = read_array(r, first, end, 1, 1, NULL, out, &again);
    return st;
}
