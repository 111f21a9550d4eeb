/* defer.c - the live streams, and deferred execution: streams queue their work and run
 * it only where the driver guarantees completion (CUKIT_EMULATOR_DEFER=1)
 *
 * By default the emulator runs work when it is issued, which hides a program's missing
 * synchronization: a pinned buffer read right after an async copy into it is already
 * right. Deferred, each stream keeps a queue of what was issued on it (launches with
 * their argument bytes copied, copies, memsets, event records, waits for events, async
 * frees), and nothing runs until a call that must wait for it: a stream, event or
 * context synchronize, a synchronous copy or memset (the legacy stream's work and, before
 * it, the blocking streams'), a free of memory, a module unload, a query asked twice.
 *
 * Order is kept as on a GPU: a stream runs its queue in order; a wait for an event runs
 * the recording stream up to that record first; the legacy default stream waits for
 * the earlier work of every blocking stream, and a blocking stream for the legacy
 * stream's earlier work. Waits only name work issued before them, so running them
 * recursively cannot cycle. One lock guards every queue; work runs under it. */
#include "emulator/driver/entries.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ the live streams */

/* The streams alive now: a handle is looked up here before it is used, so a stale
 * one (destroyed, or never a stream) is an error rather than a read of freed memory. */
static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static stream **streams;
static size_t nstreams, capstreams;

static int
stream_known(CUstream h)
{
    pthread_mutex_lock(&streams_lock);
    int found = 0;
    for (size_t i = nstreams; i-- > 0 && !found;)
        found = streams[i] == (stream *)h;
    pthread_mutex_unlock(&streams_lock);
    return found;
}

static int
special_stream(CUstream h)
{
    return h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
}

stream *
emu_stream_of(CUstream h)
{
    if (special_stream(h) || !stream_known(h))
        return NULL;
    return (stream *)h;
}

void
emu_each_stream(void (*fn)(stream *, void *), void *arg)
{
    pthread_mutex_lock(&streams_lock);
    for (size_t i = 0; i < nstreams; i++)
        fn(streams[i], arg);
    pthread_mutex_unlock(&streams_lock);
}

CUresult
emu_check_stream(CUstream h)
{
    if (special_stream(h) || stream_known(h))
        return CUDA_SUCCESS;
    return emu_failed(CUDA_ERROR_INVALID_HANDLE, "0x%llx is not a live stream",
                  (unsigned long long)(uintptr_t)h);
}

int
emu_stream_add(stream *s)
{
    pthread_mutex_lock(&streams_lock);
    if (nstreams == capstreams) {
        size_t cap = capstreams ? capstreams * 2 : 64;
        stream **v = realloc(streams, cap * sizeof *v);
        if (v == NULL) {
            pthread_mutex_unlock(&streams_lock);
            return -1;
        }
        streams = v;
        capstreams = cap;
    }
    streams[nstreams++] = s;
    pthread_mutex_unlock(&streams_lock);
    return 0;
}

void
emu_stream_remove(stream *s)
{
    pthread_mutex_lock(&streams_lock);
    for (size_t i = 0; i < nstreams; i++) {
        if (streams[i] == s) {
            streams[i] = streams[--nstreams];
            break;
        }
    }
    pthread_mutex_unlock(&streams_lock);
}

/* ------------------------------------------------------------------ the queues */

enum { Q_KERNEL, Q_COPY, Q_COPY3D, Q_MEMSET, Q_RECORD, Q_WAIT, Q_FREE };

struct emu_op {
    int kind;                  /* Q_* */
    emu_op *next;              /* owned: the next operation of the stream */
    union {                    /* what runs it: the issuing file's function for its kind */
        emu_launch_fn kernel;  /* Q_KERNEL */
        emu_copy_fn copy;      /* Q_COPY */
        emu_copy3d_fn copy3d;  /* Q_COPY3D */
        emu_memset_fn set;     /* Q_MEMSET */
        emu_free_fn release;   /* Q_FREE */
    } now;
    emu_launch launch;         /* Q_KERNEL: params owned */
    CUdeviceptr dst;           /* Q_COPY, Q_MEMSET; Q_FREE: the pointer */
    const void *src;           /* Q_COPY */
    void *staged;              /* owned: Q_COPY from pageable memory, its bytes at issue */
    size_t n, pitch, elem, width, height;
    int dst_dev, src_dev;
    unsigned value;
    CUDA_MEMCPY3D c;           /* Q_COPY3D */
    event *ev;                 /* Q_RECORD */
    stream *on;                /* Q_WAIT: the stream waited for (borrowed) */
    uint64_t seq;              /* Q_RECORD: its own place; Q_WAIT: the place waited for */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The legacy default stream (NULL, CU_STREAM_LEGACY) and the per-thread one. */
static stream legacy = {STREAM_MAGIC}, per_thread = {STREAM_MAGIC};

int
emu_deferring(void)
{
    static int on = -1;
    if (__atomic_load_n(&on, __ATOMIC_RELAXED) < 0) {
        const char *v = getenv("CUKIT_EMULATOR_DEFER");
        __atomic_store_n(&on, v != NULL && v[0] != '\0' && strcmp(v, "0") != 0, __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&on, __ATOMIC_RELAXED);
}

static stream *
queue_of(CUstream h)
{
    if (h == NULL || h == CU_STREAM_LEGACY)
        return &legacy;
    if (h == CU_STREAM_PER_THREAD)
        return &per_thread;
    return emu_stream_of(h);
}

static double
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------ running */

static void drain(stream *s, uint64_t upto);

/* A failure found when queued work runs is held, as a fault, for the next wait. */
static void
hold(CUresult r)
{
    if (r != CUDA_SUCCESS)
        emu_set_pending(r, emu_last_why());
}

static void
event_free(event *e)
{
    free(e);
}

static void
run(emu_op *o)
{
    switch (o->kind) {
    case Q_KERNEL:
        o->now.kernel(&o->launch);
        break;
    case Q_COPY:
        hold(o->now.copy(o->dst, o->staged ? o->staged : o->src, o->n, o->dst_dev, o->src_dev));
        break;
    case Q_COPY3D:
        hold(o->now.copy3d(&o->c, 1));
        break;
    case Q_MEMSET:
        hold(o->now.set(o->dst, o->pitch, o->value, o->elem, o->width, o->height));
        break;
    case Q_FREE:
        hold(o->now.release(o->dst));
        break;
    case Q_WAIT:
        drain(o->on, o->seq);
        break;
    case Q_RECORD: {
        event *e = o->ev;
        if (e->src != NULL && e->seq == o->seq) {
            e->ms = now_ms();
            e->src = NULL;
        }
        if (--e->records == 0 && e->destroyed)
            event_free(e);
        break;
    }
    }
}

/* Run s's queue up to and including its operation number `upto`. Lock held. */
static void
drain(stream *s, uint64_t upto)
{
    while (s->done < upto && s->head != NULL) {
        emu_op *o = s->head;
        s->head = o->next;
        if (s->head == NULL)
            s->tail = NULL;
        run(o);
        s->done++;
        s->queried = 0;
        free(o->launch.params);
        free(o->staged);
        free(o);
    }
}

static void
drain_one(stream *s, void *arg)
{
    int blocking_only = *(int *)arg;
    if (!blocking_only || !(s->flags & CU_STREAM_NON_BLOCKING))
        drain(s, s->issued);
}

/* ------------------------------------------------------------------ queueing */

static emu_op *
new_op(int kind)
{
    emu_op *o = calloc(1, sizeof *o);
    if (o)
        o->kind = kind;
    return o;
}

static void
append(stream *s, emu_op *o)
{
    o->next = NULL;
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    s->issued++;
}

/* The legacy stream waits for each blocking stream's work issued so far. */
static void
legacy_waits_for(stream *t, void *arg)
{
    (void)arg;
    if (t->flags & CU_STREAM_NON_BLOCKING)
        return;
    uint64_t seen = t->done > t->seen_by_legacy ? t->done : t->seen_by_legacy;
    if (t->issued <= seen)
        return;
    emu_op *w = new_op(Q_WAIT);
    if (w == NULL) {
        drain(t, t->issued); /* out of memory: keep the order by running the work */
        return;
    }
    w->on = t;
    w->seq = t->issued;
    t->seen_by_legacy = t->issued;
    append(&legacy, w);
}

/* Implicit ordering with the legacy default stream before o is queued on s. Lock held. */
static void
order_with_legacy(stream *s)
{
    if (s == &legacy) {
        emu_each_stream(legacy_waits_for, NULL);
        legacy_waits_for(&per_thread, NULL);
        return;
    }
    if ((s->flags & CU_STREAM_NON_BLOCKING) || legacy.issued <= legacy.done ||
        s->legacy_seen >= legacy.issued)
        return;
    emu_op *w = new_op(Q_WAIT);
    if (w == NULL) {
        drain(&legacy, legacy.issued);
        return;
    }
    w->on = &legacy;
    w->seq = legacy.issued;
    s->legacy_seen = legacy.issued;
    append(s, w);
}

/* Queue o on the stream behind h (o freed if h is not a stream: callers checked it). */
static void
enqueue(CUstream h, emu_op *o)
{
    pthread_mutex_lock(&lock);
    stream *s = queue_of(h);
    if (s == NULL) {
        pthread_mutex_unlock(&lock);
        free(o->launch.params);
        free(o->staged);
        free(o);
        return;
    }
    order_with_legacy(s);
    append(s, o);
    pthread_mutex_unlock(&lock);
}

int
emu_defer_launch(CUstream h, const emu_launch *L, emu_launch_fn now)
{
    if (!emu_deferring())
        return 1;
    emu_op *o = new_op(Q_KERNEL);
    unsigned char *params = malloc(L->f->param_bytes + 1);
    if (o == NULL || params == NULL) {
        free(o);
        free(params);
        return 1; /* out of memory: run it now */
    }
    memcpy(params, L->params, L->f->param_bytes);
    o->now.kernel = now;
    o->launch = *L;
    o->launch.params = params;
    enqueue(h, o);
    return 0;
}

int
emu_defer_copy(CUstream h, CUdeviceptr dst, const void *src, size_t n, int dst_dev, int src_dev,
               emu_copy_fn now)
{
    if (!emu_deferring())
        return 1;
    /* The driver's async copies from pageable memory take the bytes before returning,
     * and those into pageable memory return once done: only pinned host memory is
     * read or written later. */
    if (!dst_dev && !emu_host_pinned((const void *)(uintptr_t)dst)) {
        emu_sync_stream(h);
        return 1;
    }
    emu_op *o = new_op(Q_COPY);
    if (o == NULL)
        return 1;
    if (!src_dev && !emu_host_pinned(src) && n > 0) {
        o->staged = malloc(n);
        if (o->staged == NULL) {
            free(o);
            return 1;
        }
        memcpy(o->staged, src, n);
    }
    o->now.copy = now;
    o->dst = dst, o->src = src, o->n = n, o->dst_dev = dst_dev, o->src_dev = src_dev;
    enqueue(h, o);
    return 0;
}

int
emu_defer_copy3d(CUstream h, const CUDA_MEMCPY3D *c, emu_copy3d_fn now)
{
    if (!emu_deferring())
        return 1;
    /* A pageable host side: done by the time the call returns (see emu_defer_copy). */
    if ((c->srcMemoryType == CU_MEMORYTYPE_HOST && !emu_host_pinned(c->srcHost)) ||
        (c->dstMemoryType == CU_MEMORYTYPE_HOST && !emu_host_pinned(c->dstHost))) {
        emu_sync_stream(h);
        return 1;
    }
    emu_op *o = new_op(Q_COPY3D);
    if (o == NULL)
        return 1;
    o->now.copy3d = now;
    o->c = *c;
    enqueue(h, o);
    return 0;
}

int
emu_defer_memset(CUstream h, CUdeviceptr p, size_t pitch, unsigned value, size_t elem,
                 size_t width, size_t height, emu_memset_fn now)
{
    if (!emu_deferring())
        return 1;
    emu_op *o = new_op(Q_MEMSET);
    if (o == NULL)
        return 1;
    o->now.set = now;
    o->dst = p, o->pitch = pitch, o->value = value, o->elem = elem;
    o->width = width, o->height = height;
    enqueue(h, o);
    return 0;
}

/* A free with nothing queued before it on its stream completes at once, as on an idle
 * GPU: memory freed and allocated in a loop is reused rather than piled up. */
int
emu_defer_free(CUstream h, CUdeviceptr p, emu_free_fn now)
{
    if (!emu_deferring())
        return 1;
    emu_op *o = new_op(Q_FREE);
    if (o == NULL)
        return 1;
    o->now.release = now;
    o->dst = p;
    pthread_mutex_lock(&lock);
    stream *s = queue_of(h);
    if (s != NULL) {
        order_with_legacy(s);
        if (s->head == NULL) {
            hold(now(p));
            free(o);
        }
        else
            append(s, o);
    }
    else
        free(o);
    pthread_mutex_unlock(&lock);
    return 0;
}

int
emu_defer_record(CUstream h, event *e)
{
    if (!emu_deferring())
        return 1;
    emu_op *o = new_op(Q_RECORD);
    if (o == NULL)
        return 1;
    pthread_mutex_lock(&lock);
    stream *s = queue_of(h);
    if (s == NULL) {
        pthread_mutex_unlock(&lock);
        free(o);
        return 1;
    }
    order_with_legacy(s);
    append(s, o);
    o->ev = e;
    o->seq = s->issued;
    e->src = s;
    e->seq = s->issued;
    e->records++;
    e->recorded = 1;
    e->queried = 0;
    pthread_mutex_unlock(&lock);
    return 0;
}

int
emu_defer_wait(CUstream h, event *e)
{
    if (!emu_deferring())
        return 1;
    pthread_mutex_lock(&lock);
    stream *s = queue_of(h), *on = e->src;
    if (s != NULL && on != NULL && on != s && on->done < e->seq) {
        emu_op *o = new_op(Q_WAIT);
        if (o == NULL)
            drain(on, e->seq);
        else {
            order_with_legacy(s);
            o->on = on;
            o->seq = e->seq;
            append(s, o);
        }
    }
    pthread_mutex_unlock(&lock);
    return 0;
}

/* ------------------------------------------------------------------ waiting */

void
emu_sync_stream(CUstream h)
{
    if (!emu_deferring())
        return;
    if (queue_of(h) == &legacy) {
        /* As wide as a synchronous copy: the blocking streams' work too, the lenient
         * reading of what waiting for the legacy stream covers. */
        emu_sync_legacy();
        return;
    }
    pthread_mutex_lock(&lock);
    stream *s = queue_of(h);
    if (s)
        drain(s, s->issued);
    pthread_mutex_unlock(&lock);
}

void
emu_sync_event(event *e)
{
    if (!emu_deferring())
        return;
    pthread_mutex_lock(&lock);
    if (e->src)
        drain(e->src, e->seq);
    pthread_mutex_unlock(&lock);
}

/* Every stream's queued work (only the blocking streams' when blocking_only), then
 * the per-thread and the legacy stream's. */
static void
drain_streams(int blocking_only)
{
    if (!emu_deferring())
        return;
    pthread_mutex_lock(&lock);
    emu_each_stream(drain_one, &blocking_only);
    drain(&per_thread, per_thread.issued);
    drain(&legacy, legacy.issued);
    pthread_mutex_unlock(&lock);
}

/* A synchronous copy or memset is issued on the legacy stream and returns once done:
 * the blocking streams' work issued before it runs, then the legacy stream's. */
void
emu_sync_legacy(void)
{
    drain_streams(1);
}

void
emu_sync_all(void)
{
    drain_streams(0);
}

/* Answering "not ready" once, then running the work, finds code that takes a query's
 * answer for completion, and still ends any loop that polls until ready. */
int
emu_query_stream(CUstream h)
{
    if (!emu_deferring())
        return 1;
    pthread_mutex_lock(&lock);
    stream *s = queue_of(h);
    int ready = 1;
    if (s && s->done < s->issued) {
        if (!s->queried) {
            s->queried = 1;
            ready = 0;
        }
        else
            drain(s, s->issued);
    }
    pthread_mutex_unlock(&lock);
    return ready;
}

int
emu_query_event(event *e)
{
    if (!emu_deferring())
        return 1;
    pthread_mutex_lock(&lock);
    int ready = 1;
    if (e->src) {
        if (!e->queried) {
            e->queried = 1;
            ready = 0;
        }
        else
            drain(e->src, e->seq);
    }
    pthread_mutex_unlock(&lock);
    return ready;
}

void
emu_event_release(event *e)
{
    pthread_mutex_lock(&lock);
    int later = e->records > 0;
    e->destroyed = 1;
    pthread_mutex_unlock(&lock);
    if (!later)
        event_free(e);
}

void
emu_stream_forget(stream *s)
{
    if (!emu_deferring())
        return;
    /* Other streams' queued waits may name s: run everything, so none is left. */
    emu_sync_all();
}
