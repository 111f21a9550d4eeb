/* driver.c - the emulator's driver entry points: device, contexts, memory, streams, events,
 * modules, launches and graphs, filled into cukit_api in place of libcuda's */
#include "cukit.h"
#include "emulator/emu.h"
#include "emulator/emulator.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ errors */

/* The detail of the last failure on this thread, returned by cuGetErrorString for
 * that code: how the emulator says which address faulted or what it cannot do. */
static _Thread_local CUresult last_code;
static _Thread_local char last_why[2304];

static CUresult
failed(CUresult code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_why, sizeof last_why, fmt, ap);
    va_end(ap);
    last_code = code;
    return code;
}

static const struct {
    CUresult code;
    const char *name, *text;
} error_names[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
     "an illegal instruction was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
     "too many blocks in cooperative launch"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult
e_cuGetErrorName(CUresult res, const char **out)
{
    for (size_t i = 0; i < sizeof error_names / sizeof *error_names; i++) {
        if (error_names[i].code == res) {
            *out = error_names[i].name;
            return CUDA_SUCCESS;
        }
    }
    *out = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult
e_cuGetErrorString(CUresult res, const char **out)
{
    if (res == last_code && last_why[0]) {
        *out = last_why;
        return CUDA_SUCCESS;
    }
    for (size_t i = 0; i < sizeof error_names / sizeof *error_names; i++) {
        if (error_names[i].code == res) {
            *out = error_names[i].text;
            return CUDA_SUCCESS;
        }
    }
    *out = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* Success; the last failure's text stays readable until the next failure. */
static CUresult
ok(void)
{
    last_code = CUDA_SUCCESS;
    return CUDA_SUCCESS;
}

/* A kernel fault, held until the next call that waits for the device reports it, as a
 * GPU does; unlike a GPU's, it is reported once and the context stays usable. */
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static CUresult pending_code;
static char pending_why[2304];

static void
set_pending(CUresult code, const char *why)
{
    pthread_mutex_lock(&pending_lock);
    if (pending_code == CUDA_SUCCESS) {
        pending_code = code;
        snprintf(pending_why, sizeof pending_why, "%s", why);
    }
    pthread_mutex_unlock(&pending_lock);
}

/* The pending fault, cleared, as this thread's failure; CUDA_SUCCESS if none. */
static CUresult
take_pending(void)
{
    if (__atomic_load_n(&pending_code, __ATOMIC_RELAXED) == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&pending_lock);
    CUresult code = pending_code;
    if (code != CUDA_SUCCESS) {
        snprintf(last_why, sizeof last_why, "%s", pending_why);
        last_code = code;
        pending_code = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&pending_lock);
    return code;
}

/* ------------------------------------------------------------------ the allocation registry */

static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static emu_alloc *allocs;      /* sorted by base */
static size_t nallocs, capallocs;
static emu_alloc freed[64];    /* the last frees, for "already freed" in fault messages */
static size_t nfreed;
static uint64_t used_bytes;

/* index of the first allocation with base > addr */
static size_t
upper(uint64_t addr)
{
    size_t lo = 0, hi = nallocs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (allocs[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int
emu_registry_add(uint64_t base, uint64_t size, int kind, const char *origin)
{
    pthread_rwlock_wrlock(&reg_lock);
    int rc = 0;
    if (nallocs == capallocs) {
        size_t cap = capallocs ? capallocs * 2 : 1024;
        emu_alloc *v = realloc(allocs, cap * sizeof *v);
        if (v == NULL) {
            rc = -1;
            goto done;
        }
        allocs = v;
        capallocs = cap;
    }
    size_t i = upper(base);
    memmove(&allocs[i + 1], &allocs[i], (nallocs - i) * sizeof *allocs);
    allocs[i].base = base;
    allocs[i].size = size;
    allocs[i].kind = kind;
    snprintf(allocs[i].origin, sizeof allocs[i].origin, "%s", origin);
    nallocs++;
    if (kind == 0 || kind == 2)
        used_bytes += size;
done:
    pthread_rwlock_unlock(&reg_lock);
    return rc;
}

int
emu_registry_remove(uint64_t base, emu_alloc *out)
{
    pthread_rwlock_wrlock(&reg_lock);
    size_t i = upper(base);
    int rc = -1;
    if (i > 0 && allocs[i - 1].base == base) {
        i--;
        if (out)
            *out = allocs[i];
        freed[nfreed++ % 64] = allocs[i];
        if (allocs[i].kind == 0 || allocs[i].kind == 2)
            used_bytes -= allocs[i].size;
        memmove(&allocs[i], &allocs[i + 1], (nallocs - i - 1) * sizeof *allocs);
        nallocs--;
        rc = 0;
    }
    pthread_rwlock_unlock(&reg_lock);
    return rc;
}

int
emu_registry_find(uint64_t addr, uint64_t size, emu_alloc *out)
{
    size_t i = upper(addr);
    if (i == 0)
        return 0;
    const emu_alloc *a = &allocs[i - 1];
    if (addr + size > a->base + a->size || addr + size < addr)
        return 0;
    *out = *a;
    return 1;
}

int
emu_registry_containing(uint64_t addr, emu_alloc *out)
{
    pthread_rwlock_rdlock(&reg_lock);
    int rc = emu_registry_find(addr, 1, out);
    pthread_rwlock_unlock(&reg_lock);
    return rc;
}

int
emu_registry_nearest(uint64_t addr, emu_alloc *out, int *was_freed)
{
    *was_freed = 0;
    size_t i = upper(addr);
    const emu_alloc *below = i > 0 ? &allocs[i - 1] : NULL;
    const emu_alloc *above = i < nallocs ? &allocs[i] : NULL;
    /* memory that was freed and not handed out again */
    for (size_t k = 0; k < (nfreed < 64 ? nfreed : 64); k++) {
        const emu_alloc *f = &freed[k];
        if (addr >= f->base && addr < f->base + f->size &&
            !(below && addr < below->base + below->size)) {
            *out = *f;
            *was_freed = 1;
            return 1;
        }
    }
    uint64_t db = below ? addr - (below->base + below->size) : UINT64_MAX;
    uint64_t da = above ? above->base - addr : UINT64_MAX;
    if (below && db <= da) {
        *out = *below;
        return 1;
    }
    if (above) {
        *out = *above;
        return 1;
    }
    return 0;
}

void
emu_registry_rdlock(void)
{
    pthread_rwlock_rdlock(&reg_lock);
}

void
emu_registry_unlock(void)
{
    pthread_rwlock_unlock(&reg_lock);
}

/* Whether [p, p+n) lies inside one registered allocation. */
static int
valid_range(CUdeviceptr p, size_t n)
{
    emu_alloc a;
    pthread_rwlock_rdlock(&reg_lock);
    int rc = emu_registry_find(p, n ? n : 1, &a);
    pthread_rwlock_unlock(&reg_lock);
    return rc;
}

/* "test_x.py:31": the Python line that asked for the memory, when Python is running
 * this thread; frames inside cukit's own package are skipped. */
static void
origin_of(char *buf, size_t n, const char *what)
{
    snprintf(buf, n, "%s", what);
    if (!Py_IsInitialized() || !PyGILState_Check())
        return;
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    while (f) {
        PyCodeObject *code = PyFrame_GetCode(f);
        const char *file = code ? PyUnicode_AsUTF8(code->co_filename) : NULL;
        if (file && !strstr(file, "/cukit/")) {
            const char *base = strrchr(file, '/');
            snprintf(buf, n, "%s:%d", base ? base + 1 : file, PyFrame_GetLineNumber(f));
            Py_XDECREF(code);
            Py_DECREF(f);
            PyErr_Clear();
            return;
        }
        Py_XDECREF(code);
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    PyErr_Clear();
}

/* ------------------------------------------------------------------ device and context */

static struct CUctx_st {
    int magic;
} primary_ctx;
static _Thread_local CUcontext current_ctx;

static int
arch_cc(void)
{
    const char *env = getenv("CUKIT_EMULATOR_ARCH");
    int cc = 90;
    if (env && (strncmp(env, "sm_", 3) == 0 || strncmp(env, "compute_", 8) == 0))
        cc = atoi(strchr(env, '_') + 1);
    else if (env && env[0])
        cc = atoi(env);
    return cc >= 50 && cc < 200 ? cc : 90;
}

static size_t
total_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (size_t)pages * (size_t)size : (size_t)16 << 30;
}

static CUresult e_cuInit(unsigned int flags) { return ok(); }
static CUresult e_cuDriverGetVersion(int *v) { *v = 13000; return ok(); }
static CUresult e_cuDeviceGetCount(int *n) { *n = 1; return ok(); }

static CUresult
e_cuDeviceGet(CUdevice *d, int ordinal)
{
    if (ordinal != 0)
        return failed(CUDA_ERROR_INVALID_DEVICE, "the emulator has one device, 0");
    *d = 0;
    return ok();
}

static CUresult
e_cuDeviceGetName(char *name, int len, CUdevice d)
{
    int cc = arch_cc();
    snprintf(name, (size_t)len, "cukit emulator (PTX on the CPU, sm_%d)", cc);
    return ok();
}

static CUresult
e_cuDeviceTotalMem(size_t *bytes, CUdevice d)
{
    *bytes = total_memory();
    return ok();
}

static CUresult
e_cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
    int cc = arch_cc();
    static const struct {
        int attr, value;
    } table[] = {
        {1, 1024}, {2, 1024}, {3, 1024}, {4, 64}, {5, 2147483647}, {6, 65535}, {7, 65535},
        {8, 48 * 1024}, {9, 64 * 1024}, {10, 32}, {11, 2147483647}, {12, 65536}, {13, 1000000},
        {14, 512}, {15, 1}, {17, 0}, {18, 0}, {19, 1}, {20, 0}, {30, 512}, {31, 1}, {36, 1000000},
        {37, 64}, {38, 1 << 20}, {39, 2048}, {40, 1}, {41, 1}, {78, 1}, {79, 1}, {80, 1},
        {81, 228 * 1024}, {82, 65536}, {83, 1}, {86, 1}, {87, 2}, {88, 1}, {89, 1}, {91, 1},
        {95, 0}, {96, 0}, {97, 227 * 1024}, {99, 1}, {100, 1}, {101, 1}, {106, 32}, {115, 0},
        {120, 0},
    };
    if (attr == CUKIT_DEVICE_ATTRIBUTE_PTX_ONLY) {
        *v = 1;
        return ok();
    }
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = cc / 10; return ok();
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = cc % 10; return ok();
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = emu_thread_count(); return ok();
    }
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        if (table[i].attr == attr) {
            *v = table[i].value;
            return ok();
        }
    }
    if (attr <= 0 || attr > 200)
        return failed(CUDA_ERROR_INVALID_VALUE, "the emulator has no device attribute %d", attr);
    *v = 0;
    return ok();
}

static CUresult
e_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d)
{
    *ctx = &primary_ctx;
    return ok();
}

static CUresult e_cuCtxGetCurrent(CUcontext *ctx) { *ctx = current_ctx; return ok(); }
static CUresult e_cuCtxSetCurrent(CUcontext ctx) { current_ctx = ctx; return ok(); }
static CUresult e_cuCtxGetDevice(CUdevice *d) { *d = 0; return ok(); }
/* All work runs when it is issued: waiting only reports a fault held since. */
static CUresult e_cuCtxSynchronize(void) { return take_pending() ?: ok(); }

static CUresult
e_cuMemGetInfo(size_t *free_, size_t *total)
{
    *total = total_memory();
    *free_ = used_bytes < *total ? *total - used_bytes : 0;
    return ok();
}

/* ------------------------------------------------------------------ streams, capture, graphs */

enum { N_KERNEL = 0, N_MEMCPY = 1, N_MEMSET = 2 };

typedef struct CUgraphNode_st {
    int type;
    /* kernel */
    emu_func *func;
    unsigned grid[3], block[3], shared;
    unsigned char *params;     /* owned: param_bytes */
    void **ptrs;               /* owned: one pointer per parameter into params */
    /* copy / set */
    CUdeviceptr dst;
    const void *src;
    size_t pitch, width, height, elem;
    unsigned value;
} node;

typedef struct CUgraph_st {
    node **nodes;
    size_t n, cap;
} graph;

typedef struct CUgraphExec_st {
    graph g;
    graph *from;               /* borrowed: the graph it was made from, for node lookups */
} graph_exec;

typedef struct CUstream_st {
    int magic;
    graph *capture;            /* owned until EndCapture: the graph being recorded */
} stream;

enum { STREAM_MAGIC = 0x5354524d };

static stream *
stream_of(CUstream h)
{
    if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD)
        return NULL;
    return (stream *)h;
}

static graph *
capturing(CUstream h)
{
    stream *s = stream_of(h);
    return s ? s->capture : NULL;
}

static void
node_free(node *n)
{
    if (n == NULL)
        return;
    free(n->params);
    free(n->ptrs);
    free((void *)n->src);
    free(n);
}

static node *
graph_add(graph *g, int type)
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

static void
graph_clear(graph *g)
{
    for (size_t i = 0; i < g->n; i++)
        node_free(g->nodes[i]);
    free(g->nodes);
    memset(g, 0, sizeof *g);
}

static CUresult
e_cuStreamCreateWithPriority(CUstream *out, unsigned int flags, int priority)
{
    stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory for a stream");
    s->magic = STREAM_MAGIC;
    *out = s;
    return ok();
}

static CUresult
e_cuStreamDestroy(CUstream h)
{
    stream *s = stream_of(h);
    if (s) {
        if (s->capture) {
            graph_clear(s->capture);
            free(s->capture);
        }
        s->magic = 0;
        free(s);
    }
    return ok();
}

static CUresult e_cuStreamSynchronize(CUstream h) { return take_pending() ?: ok(); }
static CUresult e_cuStreamQuery(CUstream h) { return take_pending() ?: ok(); }
static CUresult e_cuStreamWaitEvent(CUstream h, CUevent e, unsigned int flags) { return ok(); }

static CUresult
e_cuStreamIsCapturing(CUstream h, int *status)
{
    *status = capturing(h) ? 1 : CU_STREAM_CAPTURE_STATUS_NONE;
    return ok();
}

static CUresult
e_cuStreamBeginCapture(CUstream h, int mode)
{
    stream *s = stream_of(h);
    if (s == NULL)
        return failed(CUDA_ERROR_NOT_SUPPORTED, "the legacy default stream cannot be captured");
    if (s->capture)
        return failed(CUDA_ERROR_INVALID_VALUE, "the stream is already being captured");
    s->capture = calloc(1, sizeof *s->capture);
    return s->capture ? ok() : failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
}

static CUresult
e_cuStreamEndCapture(CUstream h, CUgraph *out)
{
    stream *s = stream_of(h);
    if (s == NULL || s->capture == NULL)
        return failed(CUDA_ERROR_INVALID_VALUE, "the stream is not being captured");
    *out = s->capture;
    s->capture = NULL;
    return ok();
}

static CUresult
e_cuGraphCreate(CUgraph *out, unsigned int flags)
{
    *out = calloc(1, sizeof(graph));
    return *out ? ok() : failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
}

static CUresult
e_cuGraphDestroy(CUgraph g)
{
    if (g) {
        graph_clear(g);
        free(g);
    }
    return ok();
}

static CUresult
e_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
    if (nodes) {
        for (size_t i = 0; i < *n && i < g->n; i++)
            nodes[i] = g->nodes[i];
    }
    *n = g->n;
    return ok();
}

static CUresult
e_cuGraphNodeGetType(CUgraphNode n, int *type)
{
    *type = n->type;
    return ok();
}

static CUresult
set_kernel_params(node *n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    emu_func *f = (emu_func *)p->func;
    if (f == NULL)
        return failed(CUDA_ERROR_INVALID_VALUE, "a kernel node needs a function");
    unsigned char *buf = malloc(f->param_bytes + 1);
    void **ptrs = malloc(((size_t)f->nparams + 1) * sizeof *ptrs);
    if (buf == NULL || ptrs == NULL) {
        free(buf);
        free(ptrs);
        return failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    for (int i = 0; i < f->nparams; i++) {
        if (p->kernelParams == NULL || p->kernelParams[i] == NULL) {
            free(buf);
            free(ptrs);
            return failed(CUDA_ERROR_INVALID_VALUE, "kernel parameter %d is missing", i);
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
    return ok();
}

static CUresult
e_cuGraphAddKernelNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                       const CUDA_KERNEL_NODE_PARAMS *p)
{
    /* Nodes run in the order they were added, which respects every dependency
     * (a node can only depend on nodes added before it). */
    node *n = graph_add(g, N_KERNEL);
    if (n == NULL)
        return failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    CUresult res = set_kernel_params(n, p);
    if (res != CUDA_SUCCESS) {
        g->n--;
        node_free(n);
        return res;
    }
    *out = n;
    return ok();
}

static CUresult
e_cuGraphKernelNodeGetParams(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS *p)
{
    if (n->type != N_KERNEL)
        return failed(CUDA_ERROR_INVALID_VALUE, "not a kernel node");
    memset(p, 0, sizeof *p);
    p->func = (CUfunction)n->func;
    p->gridDimX = n->grid[0], p->gridDimY = n->grid[1], p->gridDimZ = n->grid[2];
    p->blockDimX = n->block[0], p->blockDimY = n->block[1], p->blockDimZ = n->block[2];
    p->sharedMemBytes = n->shared;
    p->kernelParams = n->ptrs;
    return ok();
}

static CUresult
e_cuGraphKernelNodeSetParams(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    return set_kernel_params(n, p);
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
            node_free(c);
            return NULL;
        }
        memcpy(c->params, n->params, n->func->param_bytes);
        for (int i = 0; i < n->func->nparams; i++)
            c->ptrs[i] = c->params + n->func->params[i].offset;
    }
    return c;
}

static CUresult
e_cuGraphInstantiate(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
    graph_exec *x = calloc(1, sizeof *x);
    if (x == NULL)
        return failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    x->from = g;
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
            node_free(c);
            graph_clear(&x->g);
            free(x);
            return failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
        }
    }
    *out = x;
    return ok();
}

static CUresult
e_cuGraphExecKernelNodeSetParams(CUgraphExec x, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    for (size_t i = 0; i < x->from->n && i < x->g.n; i++) {
        if (x->from->nodes[i] == n)
            return set_kernel_params(x->g.nodes[i], p);
    }
    return failed(CUDA_ERROR_INVALID_VALUE, "the node is not part of this graph");
}

static CUresult
e_cuGraphExecDestroy(CUgraphExec x)
{
    if (x) {
        graph_clear(&x->g);
        free(x);
    }
    return ok();
}

/* ------------------------------------------------------------------ events */

typedef struct CUevent_st {
    double ms;        /* host time at the last record */
    int recorded;
    unsigned flags;
} event;

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
        return failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    e->flags = flags;
    *out = e;
    return ok();
}

static CUresult e_cuEventDestroy(CUevent e) { free(e); return ok(); }

static CUresult
e_cuEventRecord(CUevent e, CUstream s)
{
    e->ms = now_ms();
    e->recorded = 1;
    return ok();
}

static CUresult e_cuEventSynchronize(CUevent e) { return take_pending() ?: ok(); }
static CUresult e_cuEventQuery(CUevent e) { return take_pending() ?: ok(); }

static CUresult
e_cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    if ((a->flags & CU_EVENT_DISABLE_TIMING) || (b->flags & CU_EVENT_DISABLE_TIMING))
        return failed(CUDA_ERROR_INVALID_HANDLE, "an event was created without timing");
    if (!a->recorded || !b->recorded)
        return failed(CUDA_ERROR_INVALID_HANDLE, "an event has not been recorded");
    *ms = (float)(b->ms - a->ms);
    return ok();
}

/* ------------------------------------------------------------------ memory */

static CUresult
alloc_kind(CUdeviceptr *p, size_t n, int kind, const char *what)
{
    if (n == 0)
        return failed(CUDA_ERROR_INVALID_VALUE, "a zero-byte allocation");
    if (n > total_memory() - (used_bytes < total_memory() ? used_bytes : total_memory()))
        return failed(CUDA_ERROR_OUT_OF_MEMORY, "the emulated device has %zu bytes free",
                      total_memory() - used_bytes);
    size_t rounded = (n + 255) / 256 * 256;
    void *mem = aligned_alloc(256, rounded);
    if (mem == NULL)
        return failed(CUDA_ERROR_OUT_OF_MEMORY, "the host could not provide %zu bytes", n);
    char origin[160];
    origin_of(origin, sizeof origin, what);
    if (emu_registry_add((uint64_t)(uintptr_t)mem, n, kind, origin) < 0) {
        free(mem);
        return failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    *p = (CUdeviceptr)(uintptr_t)mem;
    return ok();
}

static CUresult
e_cuMemAlloc(CUdeviceptr *p, size_t n)
{
    return alloc_kind(p, n, 0, "an unknown place");
}

static CUresult
e_cuMemFree(CUdeviceptr p)
{
    emu_alloc a;
    if (p == 0)
        return ok();
    if (emu_registry_remove(p, &a) < 0 || (a.kind != 0 && a.kind != 2))
        return failed(CUDA_ERROR_INVALID_VALUE, "0x%llx is not the start of device memory",
                      (unsigned long long)p);
    free((void *)(uintptr_t)p);
    return ok();
}

static CUresult
e_cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
    return e_cuMemAlloc(p, n);
}

static CUresult
e_cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    return e_cuMemFree(p);
}

static CUresult
check_dev(CUdeviceptr p, size_t n, const char *what)
{
    if (n == 0 || valid_range(p, n))
        return CUDA_SUCCESS;
    return failed(CUDA_ERROR_INVALID_VALUE, "%s: [0x%llx, +%zu) is not inside one allocation", what,
                  (unsigned long long)p, n);
}

static CUresult
copy_now(CUdeviceptr dst, const void *src, size_t n, int dst_dev, int src_dev)
{
    CUresult r;
    if (dst_dev && (r = check_dev(dst, n, "copy destination")) != CUDA_SUCCESS)
        return r;
    if (src_dev && (r = check_dev((CUdeviceptr)(uintptr_t)src, n, "copy source")) != CUDA_SUCCESS)
        return r;
    if (n)
        memmove((void *)(uintptr_t)dst, src, n);
    return ok();
}

/* A copy queued on a stream being captured becomes a graph node; a host source is
 * read at replay, as with the driver. */
static CUresult
capture_copy(graph *g, CUdeviceptr dst, const void *src, size_t n)
{
    node *nd = graph_add(g, N_MEMCPY);
    if (nd == NULL)
        return failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    nd->dst = dst;
    nd->pitch = (size_t)(uintptr_t)src;
    nd->width = n;
    nd->height = 1;
    return ok();
}

/* The synchronous copies wait for the device, so they report a held fault. */
static CUresult e_cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) { return take_pending() ?: copy_now(d, s, n, 1, 0); }
static CUresult e_cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) { return take_pending() ?: copy_now((CUdeviceptr)(uintptr_t)d, (const void *)(uintptr_t)s, n, 0, 1); }
static CUresult e_cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n) { return take_pending() ?: copy_now(d, (const void *)(uintptr_t)s, n, 1, 1); }

static CUresult
e_cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream st)
{
    graph *g = capturing(st);
    return g ? capture_copy(g, d, s, n) : copy_now(d, s, n, 1, 0);
}

static CUresult
e_cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream st)
{
    graph *g = capturing(st);
    return g ? capture_copy(g, (CUdeviceptr)(uintptr_t)d, (const void *)(uintptr_t)s, n)
             : copy_now((CUdeviceptr)(uintptr_t)d, (const void *)(uintptr_t)s, n, 0, 1);
}

static CUresult
e_cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
    graph *g = capturing(st);
    return g ? capture_copy(g, d, (const void *)(uintptr_t)s, n) : copy_now(d, (const void *)(uintptr_t)s, n, 1, 1);
}

static CUresult
memset_now(CUdeviceptr p, size_t pitch, unsigned value, size_t elem, size_t width, size_t height)
{
    if (width == 0 || height == 0)
        return ok();
    CUresult r = check_dev(p, pitch * (height - 1) + width * elem, "memset destination");
    if (r != CUDA_SUCCESS)
        return r;
    for (size_t y = 0; y < height; y++) {
        unsigned char *row = (unsigned char *)(uintptr_t)(p + y * pitch);
        switch (elem) {
        case 1: memset(row, (int)(value & 0xff), width); break;
        case 2: for (size_t x = 0; x < width; x++) ((uint16_t *)row)[x] = (uint16_t)value; break;
        default: for (size_t x = 0; x < width; x++) ((uint32_t *)row)[x] = value; break;
        }
    }
    return ok();
}

static CUresult
memset_on(CUstream st, CUdeviceptr p, size_t pitch, unsigned value, size_t elem, size_t w, size_t h)
{
    graph *g = capturing(st);
    if (g == NULL)
        return memset_now(p, pitch, value, elem, w, h);
    node *nd = graph_add(g, N_MEMSET);
    if (nd == NULL)
        return failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    nd->dst = p;
    nd->pitch = pitch;
    nd->value = value;
    nd->elem = elem;
    nd->width = w;
    nd->height = h;
    return ok();
}

static CUresult e_cuMemsetD8(CUdeviceptr p, unsigned char v, size_t n) { return memset_now(p, n, v, 1, n, 1); }
static CUresult e_cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) { return memset_on(s, p, n, v, 1, n, 1); }
static CUresult e_cuMemsetD16Async(CUdeviceptr p, unsigned short v, size_t n, CUstream s) { return memset_on(s, p, n * 2, v, 2, n, 1); }
static CUresult e_cuMemsetD2D8Async(CUdeviceptr p, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) { return memset_on(s, p, pitch, v, 1, w, h); }
static CUresult e_cuMemsetD2D16Async(CUdeviceptr p, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) { return memset_on(s, p, pitch, v, 2, w, h); }
static CUresult e_cuMemsetD2D32Async(CUdeviceptr p, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s) { return memset_on(s, p, pitch, v, 4, w, h); }

static const unsigned char *
side(CUmemorytype type, const void *host, CUdeviceptr dev)
{
    return type == CU_MEMORYTYPE_HOST ? host : (const unsigned char *)(uintptr_t)dev;
}

static CUresult
copy3d(const CUDA_MEMCPY3D *c)
{
    if (c->srcMemoryType == 3 || c->dstMemoryType == 3)
        return failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator has no CUDA arrays");
    const unsigned char *s = side(c->srcMemoryType, c->srcHost, c->srcDevice);
    unsigned char *d = (unsigned char *)side(c->dstMemoryType, c->dstHost, c->dstDevice);
    size_t sh = c->srcHeight ? c->srcHeight : c->Height, dh = c->dstHeight ? c->dstHeight : c->Height;
    size_t depth = c->Depth ? c->Depth : 1;
    if (c->WidthInBytes == 0 || c->Height == 0)
        return ok();
    /* check the spans of device sides */
    size_t sspan = ((c->srcZ + depth - 1) * sh + c->srcY + c->Height - 1) * c->srcPitch + c->srcXInBytes + c->WidthInBytes;
    size_t dspan = ((c->dstZ + depth - 1) * dh + c->dstY + c->Height - 1) * c->dstPitch + c->dstXInBytes + c->WidthInBytes;
    CUresult r;
    if (c->srcMemoryType != CU_MEMORYTYPE_HOST && (r = check_dev((CUdeviceptr)(uintptr_t)s, sspan, "copy source")) != CUDA_SUCCESS)
        return r;
    if (c->dstMemoryType != CU_MEMORYTYPE_HOST && (r = check_dev((CUdeviceptr)(uintptr_t)d, dspan, "copy destination")) != CUDA_SUCCESS)
        return r;
    for (size_t z = 0; z < depth; z++) {
        for (size_t y = 0; y < c->Height; y++) {
            const unsigned char *from = s + ((c->srcZ + z) * sh + c->srcY + y) * c->srcPitch + c->srcXInBytes;
            unsigned char *to = d + ((c->dstZ + z) * dh + c->dstY + y) * c->dstPitch + c->dstXInBytes;
            memmove(to, from, c->WidthInBytes);
        }
    }
    return ok();
}

static CUresult
e_cuMemcpy3D(const CUDA_MEMCPY3D *c)
{
    return copy3d(c);
}

static CUresult
e_cuMemcpy3DAsync(const CUDA_MEMCPY3D *c, CUstream s)
{
    if (capturing(s))
        return failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator cannot capture 3-D copies into a graph");
    return copy3d(c);
}

static CUresult
e_cuMemcpy2D(const CUDA_MEMCPY2D *c)
{
    CUDA_MEMCPY3D t = {0};
    t.srcXInBytes = c->srcXInBytes, t.srcY = c->srcY, t.srcMemoryType = c->srcMemoryType;
    t.srcHost = c->srcHost, t.srcDevice = c->srcDevice, t.srcArray = c->srcArray;
    t.srcPitch = c->srcPitch;
    t.dstXInBytes = c->dstXInBytes, t.dstY = c->dstY, t.dstMemoryType = c->dstMemoryType;
    t.dstHost = c->dstHost, t.dstDevice = c->dstDevice, t.dstArray = c->dstArray;
    t.dstPitch = c->dstPitch;
    t.WidthInBytes = c->WidthInBytes, t.Height = c->Height, t.Depth = 1;
    return copy3d(&t);
}

static CUresult
e_cuMemcpy2DAsync(const CUDA_MEMCPY2D *c, CUstream s)
{
    if (capturing(s))
        return failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator cannot capture 2-D copies into a graph");
    return e_cuMemcpy2D(c);
}

static CUresult
e_cuMemHostAlloc(void **p, size_t n, unsigned int flags)
{
    CUdeviceptr d;
    CUresult r = alloc_kind(&d, n ? n : 1, 1, "pinned memory");
    if (r == CUDA_SUCCESS)
        *p = (void *)(uintptr_t)d;
    return r;
}

static CUresult
e_cuMemFreeHost(void *p)
{
    emu_alloc a;
    if (emu_registry_remove((uint64_t)(uintptr_t)p, &a) < 0)
        return failed(CUDA_ERROR_INVALID_VALUE, "%p is not pinned memory", p);
    free(p);
    return ok();
}

static CUresult
e_cuMemHostGetDevicePointer(CUdeviceptr *d, void *p, unsigned int flags)
{
    *d = (CUdeviceptr)(uintptr_t)p;
    return ok();
}

static CUresult
e_cuMemHostRegister(void *p, size_t n, unsigned int flags)
{
    emu_alloc a;
    if (emu_registry_containing((uint64_t)(uintptr_t)p, &a))
        return failed(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "the memory is already registered");
    char origin[160];
    origin_of(origin, sizeof origin, "registered host memory");
    return emu_registry_add((uint64_t)(uintptr_t)p, n, 1, origin) < 0
               ? failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory") : ok();
}

static CUresult
e_cuMemHostUnregister(void *p)
{
    return emu_registry_remove((uint64_t)(uintptr_t)p, NULL) < 0
               ? failed(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "the memory is not registered") : ok();
}

static CUresult
e_cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags)
{
    return alloc_kind(p, n, 2, "managed memory");
}

static CUresult
e_cuPointerGetAttribute(void *out, int attr, CUdeviceptr p)
{
    emu_alloc a;
    if (!emu_registry_containing(p, &a))
        return failed(CUDA_ERROR_INVALID_VALUE, "0x%llx is not memory the emulator knows", (unsigned long long)p);
    if (attr == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) {
        *(int *)out = 0;
        return ok();
    }
    if (attr == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
        *(unsigned int *)out = a.kind == 1 ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        return ok();
    }
    return failed(CUDA_ERROR_INVALID_VALUE, "the emulator does not know pointer attribute %d", attr);
}

static CUresult e_cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int f, CUstream s) { return ok(); }
static CUresult e_cuMemAdvise(CUdeviceptr p, size_t n, int advice, CUmemLocation loc) { return ok(); }

/* ------------------------------------------------------------------ modules and functions */

static CUresult
e_cuModuleLoadData(CUmodule *out, const void *image)
{
    const unsigned char *b = image;
    if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F')
        return failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator runs PTX, not machine code: this image "
                      "is a cubin. Load PTX instead (Program.ptx(), or cukit.compile, which asks for "
                      "PTX under the emulator)");
    uint32_t magic;
    memcpy(&magic, b, 4);
    if (magic == 0xBA55ED50u || magic == 0x466243B1u)
        return failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator runs PTX, not machine code: this image "
                      "is a fatbin. Load PTX instead");
    char why[1024] = "";
    emu_module *m = emu_ptx_load((const char *)image, why, sizeof why);
    if (m == NULL)
        return failed(strstr(why, "does not support") || strstr(why, "cannot")
                          ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_PTX, "%s", why);
    *out = (CUmodule)m;
    return ok();
}

static CUresult
e_cuModuleUnload(CUmodule h)
{
    emu_module_free((emu_module *)h);
    return ok();
}

static CUresult
e_cuModuleGetFunction(CUfunction *out, CUmodule h, const char *name)
{
    emu_module *m = (emu_module *)h;
    for (int i = 0; i < m->nfuncs; i++) {
        if (strcmp(m->funcs[i]->name, name) == 0) {
            *out = (CUfunction)m->funcs[i];
            return ok();
        }
    }
    return failed(CUDA_ERROR_NOT_FOUND, "the module has no kernel %s", name);
}

static CUresult
e_cuModuleGetGlobal(CUdeviceptr *p, size_t *size, CUmodule h, const char *name)
{
    emu_module *m = (emu_module *)h;
    for (int i = 0; i < m->nglobals; i++) {
        if (strcmp(m->globals[i].name, name) == 0) {
            if (p)
                *p = (CUdeviceptr)(uintptr_t)m->globals[i].data;
            if (size)
                *size = m->globals[i].size;
            return ok();
        }
    }
    return failed(CUDA_ERROR_NOT_FOUND, "the module has no variable %s", name);
}

static int
max_threads(const emu_func *f)
{
    return f->maxntid > 0 && f->maxntid < 1024 ? f->maxntid : 1024;
}

static CUresult
e_cuFuncGetAttribute(int *v, int attr, CUfunction h)
{
    emu_func *f = (emu_func *)h;
    switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = max_threads(f); break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = (int)f->shared_static; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = (int)f->local_bytes; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = f->nslots > 255 ? 255 : f->nslots; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = arch_cc(); break;
    case 7: *v = 0; break; /* CACHE_MODE_CA */
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = f->max_dyn_shared; break;
    default: *v = 0; break;
    }
    return ok();
}

static CUresult
e_cuFuncSetAttribute(CUfunction h, int attr, int v)
{
    emu_func *f = (emu_func *)h;
    if (attr == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (v < 0 || (size_t)v + f->shared_static > 227 * 1024)
            return failed(CUDA_ERROR_INVALID_VALUE, "%d bytes of dynamic shared memory is more than "
                          "the emulated device's 227 KiB per block", v);
        f->max_dyn_shared = v;
    }
    return ok();
}

static CUresult
e_cuFuncGetParamInfo(CUfunction h, size_t i, size_t *offset, size_t *size)
{
    emu_func *f = (emu_func *)h;
    if (i >= (size_t)f->nparams)
        return failed(CUDA_ERROR_INVALID_VALUE, "the kernel has %d parameters", f->nparams);
    *offset = f->params[i].offset;
    *size = f->params[i].size;
    return ok();
}

static CUresult
e_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction h, int block, size_t dyn)
{
    emu_func *f = (emu_func *)h;
    if (block <= 0)
        return failed(CUDA_ERROR_INVALID_VALUE, "a block needs at least one thread");
    int by_threads = 2048 / block;
    size_t shared = f->shared_static + dyn;
    int by_shared = shared ? (int)((228 * 1024) / shared) : 32;
    int r = by_threads < by_shared ? by_threads : by_shared;
    *n = r > 32 ? 32 : r;
    if (block > max_threads(f))
        *n = 0;
    return ok();
}

static CUresult
e_cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block, CUfunction h, size_t (*fn)(int),
                                   size_t dyn, int limit)
{
    emu_func *f = (emu_func *)h;
    int b = max_threads(f);
    if (limit > 0 && limit < b)
        b = limit;
    b = b >= 32 ? b / 32 * 32 : b;
    int per = 2048 / (b ? b : 1);
    *block = b;
    *min_grid = per * emu_thread_count();
    return ok();
}

/* ------------------------------------------------------------------ launches */

static CUresult
launch(emu_func *f, const unsigned grid[3], const unsigned block[3], unsigned shared,
       CUstream s, void **params, void **extra)
{
    if (f == NULL)
        return failed(CUDA_ERROR_INVALID_HANDLE, "no kernel");
    if (extra != NULL)
        return failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator takes kernel arguments through "
                      "kernelParams only, not `extra`");
    unsigned long long threads = (unsigned long long)block[0] * block[1] * block[2];
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || threads == 0 || block[2] > 64 ||
        grid[1] > 65535 || grid[2] > 65535)
        return failed(CUDA_ERROR_INVALID_VALUE, "grid (%u, %u, %u) or block (%u, %u, %u) is out of "
                      "range", grid[0], grid[1], grid[2], block[0], block[1], block[2]);
    if (threads > (unsigned long long)max_threads(f))
        return failed(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "%llu threads per block is more than "
                      "the kernel's limit of %d", threads, max_threads(f));
    if ((int)shared > f->max_dyn_shared)
        return failed(CUDA_ERROR_INVALID_VALUE, "%u bytes of dynamic shared memory is more than the "
                      "kernel allows (%d; raise it with the max_dynamic_shared_size_bytes attribute)",
                      shared, f->max_dyn_shared);
    if (f->nparams > 0 && params == NULL)
        return failed(CUDA_ERROR_INVALID_VALUE, "the kernel takes %d parameters and none were given",
                      f->nparams);
    CUresult held = take_pending();
    if (held != CUDA_SUCCESS)
        return held;
    graph *g = capturing(s);
    if (g) {
        node *n = graph_add(g, N_KERNEL);
        CUDA_KERNEL_NODE_PARAMS p = {(CUfunction)f, grid[0], grid[1], grid[2], block[0], block[1],
                                     block[2], shared, params, NULL, NULL, NULL};
        if (n == NULL)
            return failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
        CUresult r = set_kernel_params(n, &p);
        if (r != CUDA_SUCCESS) {
            g->n--;
            node_free(n);
        }
        return r;
    }
    unsigned char stackbuf[4096];
    unsigned char *buf = f->param_bytes <= sizeof stackbuf ? stackbuf : malloc(f->param_bytes);
    if (buf == NULL)
        return failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int i = 0; i < f->nparams; i++)
        memcpy(buf + f->params[i].offset, params[i], f->params[i].size);
    emu_launch L = {f, {grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, shared, buf};
    char why[2048] = "";
    CUresult r = emu_run(&L, why, sizeof why);
    if (buf != stackbuf)
        free(buf);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return failed(r, "%s", why);
    if (r != CUDA_SUCCESS) {
        /* reported by the next call that waits, like a GPU's fault */
        char text[2200];
        snprintf(text, sizeof text, "%s. (The emulator checked every access; it stopped the "
                 "kernel there, and the context stays usable.)", why);
        set_pending(r, text);
    }
    return ok();
}

static CUresult
e_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                 unsigned bz, unsigned shared, CUstream s, void **params, void **extra)
{
    unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    return launch((emu_func *)f, grid, block, shared, s, params, extra);
}

static CUresult
e_cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    for (unsigned i = 0; i < c->numAttrs; i++) {
        const CUlaunchAttribute *a = &c->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a->value.cooperative)
            return failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator cannot run cooperative launches "
                          "(grid-wide synchronization needs every block running at once)");
        if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION &&
            a->value.clusterDim.x * a->value.clusterDim.y * a->value.clusterDim.z > 1)
            return failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator cannot run thread-block clusters");
    }
    unsigned grid[3] = {c->gridDimX, c->gridDimY, c->gridDimZ};
    unsigned block[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};
    return launch((emu_func *)f, grid, block, c->sharedMemBytes, c->hStream, params, extra);
}

static CUresult
e_cuGraphLaunch(CUgraphExec x, CUstream s)
{
    for (size_t i = 0; i < x->g.n; i++) {
        node *n = x->g.nodes[i];
        CUresult r;
        switch (n->type) {
        case N_KERNEL:
            r = launch(n->func, n->grid, n->block, n->shared, s, n->ptrs, NULL);
            break;
        case N_MEMCPY:
            r = copy_now(n->dst, (const void *)(uintptr_t)n->pitch, n->width, 0, 0);
            break;
        default:
            r = memset_now(n->dst, n->pitch, n->value, n->elem, n->width, n->height);
            break;
        }
        if (r != CUDA_SUCCESS)
            return r;
    }
    return ok();
}

/* ------------------------------------------------------------------ the table */

int
cukit_emulator_fill(cukit_api_t *api)
{
#define E(name) api->name = e_##name;
    E(cuInit) E(cuDriverGetVersion) E(cuGetErrorName) E(cuGetErrorString) E(cuDeviceGetCount)
    E(cuDeviceGet) E(cuDeviceGetName) E(cuDeviceGetAttribute) E(cuDeviceTotalMem)
    E(cuDevicePrimaryCtxRetain) E(cuCtxGetCurrent) E(cuCtxSetCurrent) E(cuCtxGetDevice)
    E(cuCtxSynchronize) E(cuMemGetInfo) E(cuMemAlloc) E(cuMemFree) E(cuMemcpyHtoD) E(cuMemcpyDtoH)
    E(cuMemcpyDtoD) E(cuMemsetD8) E(cuMemHostAlloc) E(cuMemFreeHost) E(cuMemHostGetDevicePointer)
    E(cuMemHostRegister) E(cuMemHostUnregister) E(cuMemAllocManaged) E(cuPointerGetAttribute)
    E(cuMemcpyHtoDAsync) E(cuMemcpyDtoHAsync) E(cuStreamIsCapturing) E(cuMemPrefetchAsync)
    E(cuMemAdvise) E(cuMemFreeAsync) E(cuModuleLoadData) E(cuModuleUnload) E(cuModuleGetFunction)
    E(cuModuleGetGlobal) E(cuFuncGetAttribute) E(cuFuncSetAttribute) E(cuFuncGetParamInfo)
    E(cuLaunchKernel) E(cuLaunchKernelEx) E(cuOccupancyMaxActiveBlocksPerMultiprocessor)
    E(cuOccupancyMaxPotentialBlockSize) E(cuMemcpyDtoDAsync) E(cuMemcpy2D) E(cuMemcpy2DAsync)
    E(cuMemcpy3D) E(cuMemcpy3DAsync) E(cuMemsetD2D8Async) E(cuMemsetD2D16Async) E(cuMemAllocAsync)
    E(cuMemsetD8Async) E(cuMemsetD16Async) E(cuMemsetD2D32Async) E(cuStreamBeginCapture)
    E(cuStreamEndCapture) E(cuGraphCreate) E(cuGraphDestroy) E(cuGraphGetNodes)
    E(cuGraphNodeGetType) E(cuGraphAddKernelNode) E(cuGraphKernelNodeGetParams)
    E(cuGraphKernelNodeSetParams) E(cuGraphExecKernelNodeSetParams) E(cuGraphInstantiate)
    E(cuGraphExecDestroy) E(cuGraphLaunch) E(cuStreamCreateWithPriority) E(cuStreamDestroy)
    E(cuStreamSynchronize) E(cuStreamQuery) E(cuStreamWaitEvent) E(cuEventCreate)
    E(cuEventDestroy) E(cuEventRecord) E(cuEventSynchronize) E(cuEventQuery) E(cuEventElapsedTime)
#undef E
    /* No stream-ordered pool: cukit then allocates with cuMemAlloc directly. */
    api->cuDeviceGetDefaultMemPool = NULL;
    api->cuMemAllocFromPoolAsync = NULL;
    api->cuMemPoolSetAttribute = NULL;
    api->cuMemPoolGetAttribute = NULL;
    api->cuMemPoolTrimTo = NULL;
    return 0;
}

int
cukit_emulator_setup(PyObject *module, cukit_state *st)
{
    cukit_driver_set_emulator(cukit_emulator_fill);
    return 0;
}
