/* streams.c - the emulator's streams (run as issued, or deferred: defer.c), stream capture, graphs and events */
#include "emulator/driver/entries.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ streams, capture, graphs */

/* A stream waited for or queried under a strict capture: refused by the driver as an
 * unsafe call, whichever stream it is (the H100 refused cukit's query of the legacy
 * stream, and of an idle non-blocking stream, while an array was freed inside a
 * capture). The per-thread default stream's is left alone (not seen refused). */
static CUresult
wait_unsafe(CUstream h, const char *what)
{
    return h == CU_STREAM_PER_THREAD ? CUDA_SUCCESS : emu_capture_unsafe(what);
}

graph *
emu_capturing(CUstream h)
{
    stream *s = emu_stream_of(h);
    return s ? s->capture : NULL;
}

void
emu_node_free(node *n)
{
    if (n == NULL)
        return;
    free(n->params);
    free(n->ptrs);
    free((void *)n->src);
    free(n);
}

node *
emu_graph_add(graph *g, int type)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 8;
        node **v = realloc(g->nodes, cap * sizeof *v);
        if (v == NULL)
            return NULL;
        g->nodes = v;
        g->cap = cap;
    }
    node *n = calloc(1, sizeof *n);
    if (n)
        g->nodes[g->n++] = n;
    if (n)
        n->type = type;
    return n;
}

/* Every pointer some graph keeps (freed in a capture), so that another free of it is
 * refused rather than freeing it twice, perhaps after its address was handed out again. */
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static CUdeviceptr *kept_ptrs;
static size_t nkept_ptrs, capkept_ptrs;

int
emu_capture_freed(CUdeviceptr p)
{
    pthread_mutex_lock(&kept_lock);
    int found = 0;
    for (size_t i = 0; i < nkept_ptrs && !found; i++)
        found = kept_ptrs[i] == p;
    pthread_mutex_unlock(&kept_lock);
    return found;
}

static int
kept_add(CUdeviceptr p)
{
    pthread_mutex_lock(&kept_lock);
    if (nkept_ptrs == capkept_ptrs) {
        size_t cap = capkept_ptrs ? capkept_ptrs * 2 : 16;
        CUdeviceptr *v = realloc(kept_ptrs, cap * sizeof *v);
        if (v == NULL) {
            pthread_mutex_unlock(&kept_lock);
            return -1;
        }
        kept_ptrs = v;
        capkept_ptrs = cap;
    }
    kept_ptrs[nkept_ptrs++] = p;
    pthread_mutex_unlock(&kept_lock);
    return 0;
}

static void
kept_remove(CUdeviceptr p)
{
    pthread_mutex_lock(&kept_lock);
    for (size_t i = 0; i < nkept_ptrs; i++)
        if (kept_ptrs[i] == p) {
            kept_ptrs[i] = kept_ptrs[--nkept_ptrs];
            break;
        }
    pthread_mutex_unlock(&kept_lock);
}

int
emu_graph_keep(graph *g, CUdeviceptr p, emu_free_fn release)
{
    graph_mem *m = g->mem;
    if (m == NULL && (m = g->mem = calloc(1, sizeof *m)) != NULL)
        m->refs = 1;
    if (m == NULL)
        return -1;
    m->release = release;
    if (p == 0)
        return 0;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 4;
        CUdeviceptr *v = realloc(m->ptrs, cap * sizeof *v);
        if (v == NULL)
            return -1;
        m->ptrs = v;
        m->cap = cap;
    }
    if (kept_add(p) < 0)
        return -1;
    m->ptrs[m->n++] = p;
    return 0;
}

static void
graph_clear(graph *g)
{
    graph_mem *m = g->mem;
    if (m && __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        /* the graph's work may still be queued (deferred): it runs first */
        emu_sync_all();
        for (size_t i = 0; i < m->n; i++) {
            kept_remove(m->ptrs[i]);
            m->release(m->ptrs[i]);
        }
        free(m->ptrs);
        free(m);
    }
    for (size_t i = 0; i < g->n; i++)
        emu_node_free(g->nodes[i]);
    free(g->nodes);
    memset(g, 0, sizeof *g);
}

static CUresult
e_cuStreamCreateWithPriority(CUstream *out, unsigned int flags, int priority)
{
    stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory for a stream");
    static unsigned long long next_id = 3;
    s->magic = STREAM_MAGIC;
    s->flags = flags & CU_STREAM_NON_BLOCKING;
    s->id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
    if (emu_stream_add(s) < 0) {
        free(s);
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory for a stream");
    }
    *out = s;
    return emu_ok();
}

/* Capture modes, as the driver keeps them: each thread's own mode (exchanged with
 * cuThreadExchangeStreamCaptureMode, global by default), the captures a thread began in
 * global or thread-local mode, and the global-mode ones of the whole process. */
static _Thread_local int thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
/* A thread's captures: read by the thread, changed atomically (a stream destroyed by
 * another thread gives its capture back to the thread that began it). */
static _Thread_local struct capture_count { int strict, global; } thread_count;
static int process_global; /* any thread's: read and changed atomically */

/* A refused call invalidates the captures that forbade it, as the driver does: this
 * thread's strict ones, and (refused for another thread's) the global ones. */
static void
invalidate_forbidding(stream *s, void *arg)
{
    int others_global = *(const int *)arg;
    if (s->capture && (s->capture_counted == &thread_count || (others_global && s->capture_global)))
        s->capture_invalid = 1;
}

CUresult
emu_capture_unsafe(const char *call)
{
    if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_SUCCESS;
    int own = __atomic_load_n(&thread_count.strict, __ATOMIC_RELAXED) > 0;
    int others_global = thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                        __atomic_load_n(&process_global, __ATOMIC_RELAXED) >
                            __atomic_load_n(&thread_count.global, __ATOMIC_RELAXED);
    if (!own && !others_global)
        return CUDA_SUCCESS;
    emu_each_stream(invalidate_forbidding, &others_global);
    return emu_failed(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                      "%s is not permitted while a stream is captured in global or thread-local "
                      "mode (cuThreadExchangeStreamCaptureMode to relaxed first; the capture is "
                      "invalidated)", call);
}

/* A capture ends (EndCapture, or its stream destroyed): counted back on the thread that
 * began it. */
static void
capture_uncount(stream *s)
{
    struct capture_count *c = s->capture_counted;
    if (c) {
        __atomic_sub_fetch(&c->strict, 1, __ATOMIC_RELAXED);
        if (s->capture_global)
            __atomic_sub_fetch(&c->global, 1, __ATOMIC_RELAXED);
    }
    if (s->capture_global)
        __atomic_sub_fetch(&process_global, 1, __ATOMIC_RELAXED);
    s->capture_counted = NULL;
    s->capture_global = 0;
}

static CUresult
e_cuStreamDestroy(CUstream h)
{
    stream *s = emu_stream_of(h);
    if (s == NULL) {
        CUresult r = emu_check_stream(h); /* a default stream, or not a stream */
        if (r != CUDA_SUCCESS)
            return r;
    }
    if (s) {
        emu_stream_forget(s);
        emu_stream_remove(s);
        if (s->capture) {
            graph_clear(s->capture);
            free(s->capture);
            capture_uncount(s);
        }
        s->magic = 0;
        free(s);
    }
    return emu_ok();
}

/* A stream being captured cannot be waited for or queried: the driver refuses the call
 * and invalidates the capture, whose EndCapture then fails. */
static CUresult
refused_while_capturing(CUstream h, const char *call)
{
    stream *s = emu_stream_of(h);
    if (s == NULL || s->capture == NULL)
        return CUDA_SUCCESS;
    s->capture_invalid = 1;
    return emu_failed(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                      "%s of a stream being captured (the capture is invalidated)", call);
}

static CUresult
e_cuStreamSynchronize(CUstream h)
{
    CUresult r = emu_check_stream(h) ?: wait_unsafe(h, "cuStreamSynchronize") ?:
                 refused_while_capturing(h, "cuStreamSynchronize");
    if (r != CUDA_SUCCESS)
        return r;
    emu_sync_stream(h);
    return emu_take_pending() ?: emu_ok();
}

/* A query does not wait, so it leaves a held fault for the next call that does: cukit
 * queries streams and ignores the answer when an array goes (may its block be kept?),
 * which must not swallow the fault. */
static CUresult
e_cuStreamQuery(CUstream h)
{
    CUresult r = emu_check_stream(h) ?: wait_unsafe(h, "cuStreamQuery") ?:
                 refused_while_capturing(h, "cuStreamQuery");
    if (r != CUDA_SUCCESS)
        return r;
    return emu_query_stream(h) ? emu_ok() : CUDA_ERROR_NOT_READY;
}

static CUresult
e_cuStreamWaitEvent(CUstream h, CUevent e, unsigned int flags)
{
    CUresult r = emu_check_stream(h);
    if (r != CUDA_SUCCESS)
        return r;
    if (e == NULL)
        return emu_failed(CUDA_ERROR_INVALID_HANDLE, "no event");
    if (!emu_capturing(h))
        emu_defer_wait(h, e);
    return emu_ok();
}

static CUresult
e_cuStreamGetCtx(CUstream h, CUcontext *ctx)
{
    CUresult r = emu_check_stream(h);
    if (r == CUDA_SUCCESS)
        *ctx = &emu_primary_ctx;
    return r ?: emu_ok();
}

static CUresult
e_cuStreamGetId(CUstream h, unsigned long long *id)
{
    CUresult r = emu_check_stream(h);
    if (r != CUDA_SUCCESS)
        return r;
    stream *s = emu_stream_of(h);
    *id = s ? s->id : h == CU_STREAM_PER_THREAD ? 2 : 1;
    return emu_ok();
}

static CUresult
e_cuStreamIsCapturing(CUstream h, int *status)
{
    stream *s = emu_stream_of(h);
    *status = s == NULL || s->capture == NULL ? CU_STREAM_CAPTURE_STATUS_NONE
              : s->capture_invalid            ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                              : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return emu_ok();
}

static CUresult
e_cuThreadExchangeStreamCaptureMode(int *mode)
{
    if (mode == NULL || *mode < CU_STREAM_CAPTURE_MODE_GLOBAL || *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "not a stream capture mode");
    int old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return emu_ok();
}

static CUresult
e_cuStreamBeginCapture(CUstream h, int mode)
{
    stream *s = emu_stream_of(h);
    if (s == NULL)
        return emu_failed(CUDA_ERROR_NOT_SUPPORTED, "the legacy default stream cannot be captured");
    if (mode < CU_STREAM_CAPTURE_MODE_GLOBAL || mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "not a stream capture mode");
    if (s->capture)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "the stream is already being captured");
    s->capture = calloc(1, sizeof *s->capture);
    if (s->capture == NULL)
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    s->capture_counted = mode == CU_STREAM_CAPTURE_MODE_RELAXED ? NULL : &thread_count;
    s->capture_global = mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (s->capture_counted)
        __atomic_add_fetch(&thread_count.strict, 1, __ATOMIC_RELAXED);
    if (s->capture_global) {
        __atomic_add_fetch(&thread_count.global, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&process_global, 1, __ATOMIC_RELAXED);
    }
    return emu_ok();
}

static CUresult
e_cuStreamEndCapture(CUstream h, CUgraph *out)
{
    stream *s = emu_stream_of(h);
    if (s == NULL || s->capture == NULL)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "the stream is not being captured");
    if (s->capture_counted && s->capture_counted != &thread_count)
        return emu_failed(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
                          "the capture was begun in global or thread-local mode by another "
                          "thread, which must end it");
    *out = s->capture;
    s->capture = NULL;
    capture_uncount(s);
    if (s->capture_invalid) {
        s->capture_invalid = 0;
        graph_clear(*out);
        free(*out);
        *out = NULL;
        return emu_failed(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                          "operation failed due to a previous error during capture");
    }
    return emu_ok();
}

static CUresult
e_cuGraphCreate(CUgraph *out, unsigned int flags)
{
    *out = calloc(1, sizeof(graph));
    return *out ? emu_ok() : emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
}

static CUresult
e_cuGraphDestroy(CUgraph g)
{
    if (g) {
        graph_clear(g);
        free(g);
    }
    return emu_ok();
}

static CUresult
e_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
    if (nodes && *n == 0) /* as the driver answers (an H100's, for an empty capture) */
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "room for no node given");
    if (nodes) {
        for (size_t i = 0; i < *n && i < g->n; i++)
            nodes[i] = g->nodes[i];
    }
    *n = g->n;
    return emu_ok();
}

static CUresult
e_cuGraphNodeGetType(CUgraphNode n, int *type)
{
    *type = n->type;
    return emu_ok();
}

CUresult
emu_set_kernel_params(node *n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    emu_func *f = (emu_func *)p->func;
    if (f == NULL)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "a kernel node needs a function");
    unsigned char *buf = malloc(f->param_bytes + 1);
    void **ptrs = malloc(((size_t)f->nparams + 1) * sizeof *ptrs);
    if (buf == NULL || ptrs == NULL) {
        free(buf);
        free(ptrs);
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    for (int i = 0; i < f->nparams; i++) {
        if (p->kernelParams == NULL || p->kernelParams[i] == NULL) {
            free(buf);
            free(ptrs);
            return emu_failed(CUDA_ERROR_INVALID_VALUE, "kernel parameter %d is missing", i);
        }
        memcpy(buf + f->params[i].offset, p->kernelParams[i], f->params[i].size);
        ptrs[i] = buf + f->params[i].offset;
    }
    free(n->params);
    free(n->ptrs);
    n->params = buf;
    n->ptrs = ptrs;
    n->func = f;
    n->grid[0] = p->gridDimX, n->grid[1] = p->gridDimY, n->grid[2] = p->gridDimZ;
    n->block[0] = p->blockDimX, n->block[1] = p->blockDimY, n->block[2] = p->blockDimZ;
    n->shared = p->sharedMemBytes;
    return emu_ok();
}

static CUresult
e_cuGraphAddKernelNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                       const CUDA_KERNEL_NODE_PARAMS *p)
{
    /* Nodes run in the order they were added, which respects every dependency
     * (a node can only depend on nodes added before it). */
    node *n = emu_graph_add(g, N_KERNEL);
    if (n == NULL)
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    CUresult res = emu_set_kernel_params(n, p);
    if (res != CUDA_SUCCESS) {
        g->n--;
        emu_node_free(n);
        return res;
    }
    *out = n;
    return emu_ok();
}

static CUresult
e_cuGraphKernelNodeGetParams(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS *p)
{
    if (n->type != N_KERNEL)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "not a kernel node");
    memset(p, 0, sizeof *p);
    p->func = (CUfunction)n->func;
    p->gridDimX = n->grid[0], p->gridDimY = n->grid[1], p->gridDimZ = n->grid[2];
    p->blockDimX = n->block[0], p->blockDimY = n->block[1], p->blockDimZ = n->block[2];
    p->sharedMemBytes = n->shared;
    p->kernelParams = n->ptrs;
    return emu_ok();
}

static CUresult
e_cuGraphKernelNodeSetParams(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    return emu_set_kernel_params(n, p);
}

static node *
node_copy(const node *n)
{
    node *c = malloc(sizeof *c);
    if (c == NULL)
        return NULL;
    *c = *n;
    c->params = NULL;
    c->ptrs = NULL;
    c->src = NULL;
    if (n->type == N_KERNEL) {
        c->params = malloc(n->func->param_bytes + 1);
        c->ptrs = malloc(((size_t)n->func->nparams + 1) * sizeof *c->ptrs);
        if (c->params == NULL || c->ptrs == NULL) {
            emu_node_free(c);
            return NULL;
        }
        memcpy(c->params, n->params, n->func->param_bytes);
        for (int i = 0; i < n->func->nparams; i++)
            c->ptrs[i] = c->params + n->func->params[i].offset;
    }
    return c;
}

/* An instance's nodes and its reference to the graph's memory, given back. */
static void
exec_clear(graph_exec *x)
{
    if (x->g.mem)
        __atomic_sub_fetch(&x->g.mem->execs, 1, __ATOMIC_ACQ_REL);
    graph_clear(&x->g);
}

static CUresult
e_cuGraphInstantiate(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
    graph_exec *x = calloc(1, sizeof *x);
    if (x == NULL)
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (g->mem && __atomic_load_n(&g->mem->execs, __ATOMIC_ACQUIRE) > 0) {
        free(x);
        return emu_failed(CUDA_ERROR_INVALID_VALUE,
                          "the graph allocates or frees memory, and an instance of it still "
                          "exists (such a graph has one at a time: cuGraphExecDestroy it first)");
    }
    x->from = g;
    if ((x->g.mem = g->mem) != NULL) {
        __atomic_add_fetch(&g->mem->refs, 1, __ATOMIC_ACQ_REL);
        __atomic_add_fetch(&g->mem->execs, 1, __ATOMIC_ACQ_REL);
    }
    for (size_t i = 0; i < g->n; i++) {
        node *c = node_copy(g->nodes[i]);
        node **slot = NULL;
        if (c && (x->g.n < x->g.cap || (slot = realloc(x->g.nodes, (x->g.cap ? x->g.cap * 2 : 8) * sizeof *slot)))) {
            if (slot) {
                x->g.nodes = slot;
                x->g.cap = x->g.cap ? x->g.cap * 2 : 8;
            }
            x->g.nodes[x->g.n++] = c;
        }
        else {
            emu_node_free(c);
            exec_clear(x);
            free(x);
            return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
        }
    }
    *out = x;
    return emu_ok();
}

static CUresult
e_cuGraphExecKernelNodeSetParams(CUgraphExec x, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    for (size_t i = 0; i < x->from->n && i < x->g.n; i++) {
        if (x->from->nodes[i] == n)
            return emu_set_kernel_params(x->g.nodes[i], p);
    }
    return emu_failed(CUDA_ERROR_INVALID_VALUE, "the node is not part of this graph");
}

static CUresult
e_cuGraphExecDestroy(CUgraphExec x)
{
    CUresult r = emu_capture_unsafe("cuGraphExecDestroy"); /* as an H100's driver */
    if (r != CUDA_SUCCESS)
        return r;
    if (x) {
        exec_clear(x);
        free(x);
    }
    return emu_ok();
}

/* ------------------------------------------------------------------ events */

static double
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static CUresult
e_cuEventCreate(CUevent *out, unsigned int flags)
{
    event *e = calloc(1, sizeof *e);
    if (e == NULL)
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    e->flags = flags;
    *out = e;
    return emu_ok();
}

static CUresult
e_cuEventDestroy(CUevent e)
{
    if (e)
        emu_event_release(e);
    return emu_ok();
}

static CUresult
e_cuEventRecord(CUevent e, CUstream s)
{
    CUresult r = emu_check_stream(s);
    if (r != CUDA_SUCCESS)
        return r;
    if (emu_capturing(s) || emu_defer_record(s, e)) {
        e->ms = now_ms();
        e->recorded = 1;
    }
    return emu_ok();
}

static CUresult
e_cuEventSynchronize(CUevent e)
{
    emu_sync_event(e);
    return emu_take_pending() ?: emu_ok();
}

static CUresult e_cuEventQuery(CUevent e) { return emu_query_event(e) ? emu_ok() : CUDA_ERROR_NOT_READY; }

static CUresult
e_cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    if ((a->flags & CU_EVENT_DISABLE_TIMING) || (b->flags & CU_EVENT_DISABLE_TIMING))
        return emu_failed(CUDA_ERROR_INVALID_HANDLE, "an event was created without timing");
    if (!a->recorded || !b->recorded)
        return emu_failed(CUDA_ERROR_INVALID_HANDLE, "an event has not been recorded");
    if (a->src || b->src)
        return emu_failed(CUDA_ERROR_NOT_READY, "an event's record has not completed");
    *ms = (float)(b->ms - a->ms);
    return emu_ok();
}


void
emu_fill_streams(cukit_api_t *api)
{
#define E(name) api->name = e_##name;
    E(cuStreamCreateWithPriority) E(cuStreamDestroy) E(cuStreamSynchronize) E(cuStreamQuery) E(cuStreamWaitEvent) E(cuStreamGetCtx) E(cuStreamGetId) E(cuStreamIsCapturing) E(cuThreadExchangeStreamCaptureMode) E(cuStreamBeginCapture) E(cuStreamEndCapture) E(cuGraphCreate) E(cuGraphDestroy) E(cuGraphGetNodes) E(cuGraphNodeGetType) E(cuGraphAddKernelNode) E(cuGraphKernelNodeGetParams) E(cuGraphKernelNodeSetParams) E(cuGraphInstantiate) E(cuGraphExecKernelNodeSetParams) E(cuGraphExecDestroy) E(cuEventCreate) E(cuEventDestroy) E(cuEventRecord) E(cuEventSynchronize) E(cuEventQuery) E(cuEventElapsedTime)
#undef E
}
