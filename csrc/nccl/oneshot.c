/* oneshot.c - small all-reduces in one kernel of cukit's own: every rank writes its data, each word numbered with the call, into every rank's workspace (peers' memory through peer access or CUDA IPC), waits for the others' words and reduces in rank order
 *
 * NCCL's small all-reduce (a ring through its low-latency protocol) takes about 3.5 us
 * of kernel on two H100s; this one costs one write across NVLink. It serves all_reduce
 * calls of at most ONESHOT_SLOT bytes, outside nccl.group(), on communicators of 2 to 8
 * ranks whose GPUs all reach each other's memory; everything else goes to NCCL. (Inside
 * a group NCCL launches its calls at the group's end: a kernel launched at the call
 * would run before the group's earlier calls, so grouped calls stay NCCL's, and every
 * rank must group an all_reduce the same way, as NCCL's own groups of several
 * communicators ask.)
 *
 * The workspace (one cuMemAlloc per rank): a control page (this rank's call counter at
 * 0) and two sets (by the call's parity) of one slot per rank. A slot holds the data as
 * lines of 8 bytes: 4 bytes of data and the call's number, stored and loaded whole, so a
 * line that shows this call's number holds this call's data: no fence and no separate
 * flag, one trip across NVLink. Call number e on every rank: read and bump the counter
 * (on the device, so a graph's replays count too); each thread writes its units (an
 * element of 4 or 8 bytes, or four of 1 byte) as lines into slot [e % 2][rank] of every
 * peer, then waits for the peers' lines of the same units and reduces them in rank order:
 * every rank gets the same bits. Two sets are enough: a rank can only start call e + 2
 * (writing set e % 2 again) after it has every peer's data of call e + 1, which each peer
 * sends after it finished call e. That needs the calls of one rank to run one after the
 * other: those on one stream do; a call on another stream than the last (outside
 * captures; streams told apart by their driver ids, which are never reused) waits for
 * the last first. The workspace starts zeroed (memory reused from an earlier
 * communicator may hold lines whose numbers a new one would take for its own).
 *
 * A wait for a peer that never comes ends when the communicator is aborted (abort(), or
 * synchronize()'s timeout): the kernel polls a word of mapped host memory that
 * abort sets, and returns without writing a result.
 *
 * Set up when a communicator is ready (made, or at the end of the group it was made in):
 * two small all-gathers through NCCL, one for where each rank's workspace is (an IPC
 * handle, its address for ranks of this process, and the process), one for whether every
 * rank reached every other. Every rank takes part, also one with CUKIT_NCCL_ONESHOT=0 (it
 * says no), so ranks never wait for a peer that skipped it; a rank that cannot says so,
 * and then no rank uses one-shot calls. Whether a call is one-shot depends on what is the
 * same on every rank (the verdict, count, type and op) and on the group it is made in,
 * never on captures. A rank that made several communicators in one group sets them up
 * at its end, in order: a peer that made the same ones one by one outside a group sets
 * the first up before it makes the second, and both wait for ever; make a set of
 * communicators the same way on every rank.
 *
 * A CUDA graph that captured a one-shot call (cukit's or another library's) keeps the
 * workspace: it holds a reference to a CUDA user object, and a workspace whose
 * communicator goes first waits on st->nccl->orphans until the driver says no graph holds
 * it any more (the user object's destructor, on a driver thread, only raises a flag; the
 * memory is freed at the next set-up, release or call). */
#include "nccl/nccl.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ONESHOT_MAX_RANKS 8
#define ONESHOT_SLOT ((size_t)64 << 10)  /* data bytes a call may take */
#define ONESHOT_LINES (2 * ONESHOT_SLOT)  /* their lines: 8 bytes for each 4 of data */
#define ONESHOT_CTRL ((size_t)4096)
#define ONESHOT_THREADS 512
#define NCCL_TYPES 10
#define NCCL_OPS 5

struct cukit_oneshot {
    CUdeviceptr mine;                      /* owned (cuMemFree): this rank's workspace */
    CUdeviceptr peer[ONESHOT_MAX_RANKS];   /* every rank's workspace as this device
                                              addresses it; [rank] is mine */
    unsigned char opened[ONESHOT_MAX_RANKS]; /* 1: peer[i] is an IPC mapping to close */
    volatile int *stop_host;               /* owned (cuMemFreeHost): 1 once aborted */
    CUdeviceptr stop_dev;                  /* the same word, as the kernel reads it */
    CUfunction func[NCCL_TYPES][NCCL_OPS]; /* loaded on first use */
    CUevent order;                         /* owned: recorded after each call outside a
                                              capture, for a call on another stream */
    unsigned long long last;               /* the driver's id of that call's stream */
    int have_last;                         /* 1: order is recorded; 2: and last is set */
    CUcontext ctx;                         /* not owned: the device's primary context */
    CUuserObject keep;                     /* owned reference (cuUserObjectRelease), NULL
                                              until a capture took a call: every graph
                                              holding one holds a reference too */
    atomic_int unheld;                     /* 1 once keep's last reference went (set by
                                              its destructor, on a driver thread) */
    struct cukit_oneshot *next;            /* owned: the next of st->nccl->orphans */
};

/* The kernels, one per NCCL type and op: ck_os_<ncclDataType_t>_<ncclRedOp_t>. */
#define ONESHOT_FILE "nccl/kernels/oneshot.cu"

/* Bytes of one element of NCCL type t that the kernels take; 0 for float16 and
 * bfloat16 (NCCL's). */
static size_t
type_size(int t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

/* ------------------------------------------------------------------ set-up */

/* What each rank tells the others, through an all-gather of 128 bytes a rank. */
typedef struct {
    CUipcMemHandle handle; /* the workspace, for another process */
    uint64_t ptr;          /* the workspace, for this process */
    uint64_t process;      /* a random number per process: same process, same number */
    int32_t ordinal;       /* the device */
    int32_t ok;            /* first round: a workspace to share; second: every peer's reached */
    char pad[128 - CUKIT_IPC_HANDLE_BYTES - 2 * 8 - 2 * 4];
} record;
_Static_assert(sizeof(record) == 128, "one record is 128 bytes");

/* This process's number (pids repeat across containers of one host). */
static uint64_t
process_token(void)
{
    static uint64_t token;
    if (token == 0) {
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || read(fd, &token, sizeof token) != (ssize_t)sizeof token) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            token = ((uint64_t)getpid() << 40) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
        }
        if (fd >= 0)
            close(fd);
        token |= 1;
    }
    return token;
}

/* Free what os holds (made current: its device); never raises. */
static void
oneshot_free(cukit_state *st, struct cukit_oneshot *os)
{
    if (os == NULL)
        return;
    if (os->ctx)
        cukit_api.cuCtxSetCurrent(os->ctx);
    int mode = cukit_capture_relax(st, 1); /* dropped while a stream is captured */
    for (int i = 0; i < ONESHOT_MAX_RANKS; i++)
        if (os->opened[i])
            cukit_api.cuIpcCloseMemHandle(os->peer[i]);
    if (os->mine)
        cukit_api.cuMemFree(os->mine);
    if (os->stop_host)
        cukit_api.cuMemFreeHost((void *)os->stop_host);
    if (os->order)
        cukit_api.cuEventDestroy(os->order);
    cukit_capture_restore(mode);
    free(os);
}

/* The user object's destructor: no graph holds the workspace now. A driver thread runs
 * it, where no CUDA call may be made: it only raises the flag. */
static void
unheld(void *p)
{
    atomic_store(&((struct cukit_oneshot *)p)->unheld, 1);
}

/* Free the orphaned workspaces that no graph holds any more (then restores the current
 * context). Never raises. */
static void
free_unheld(cukit_state *st)
{
    if (st->nccl->orphans == NULL)
        return;
    CUcontext current = NULL;
    cukit_api.cuCtxGetCurrent(&current);
    for (struct cukit_oneshot **at = &st->nccl->orphans; *at;) {
        struct cukit_oneshot *os = *at;
        if (atomic_load(&os->unheld)) {
            *at = os->next;
            oneshot_free(st, os);
        }
        else
            at = &os->next;
    }
    cukit_api.cuCtxSetCurrent(current);
}

/* Keep os alive with the graph that the capture on h builds. 0 / -1. */
static int
held_by_graph(cukit_state *st, struct cukit_oneshot *os, CUstream h)
{
    int status = 0;
    CUgraph graph = NULL;
    if (CU_CALL(st, cuStreamGetCaptureInfo, (h, &status, NULL, &graph, NULL, NULL, NULL)) < 0)
        return -1;
    if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE || graph == NULL)
        return 0; /* an invalidated capture: its end raises */
    if (os->keep == NULL &&
        CU_CALL(st, cuUserObjectCreate, (&os->keep, os, unheld, 1,
                                         CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)) < 0) {
        os->keep = NULL;
        return -1;
    }
    return CU_CALL(st, cuGraphRetainUserObject, (graph, os->keep, 1, 0));
}

/* Whether this rank offers one-shot calls: CUKIT_NCCL_ONESHOT=0 turns them off, and
 * they need the driver's user objects (graphs that hold the workspace). */
static int
wanted(void)
{
    const char *env = getenv("CUKIT_NCCL_ONESHOT");
    return !(env && strcmp(env, "0") == 0) && cukit_api.cuUserObjectCreate &&
           cukit_api.cuUserObjectRelease && cukit_api.cuGraphRetainUserObject &&
           cukit_api.cuStreamGetCaptureInfo;
}

/* This rank's workspace and its record (want 0: none, a record that says no). ok stays 0
 * when anything fails. */
static struct cukit_oneshot *
workspace(cukit_Communicator *c, record *rec, int want)
{
    memset(rec, 0, sizeof *rec);
    rec->process = process_token();
    rec->ordinal = c->device->ordinal;
    struct cukit_oneshot *os = want ? calloc(1, sizeof *os) : NULL;
    if (os == NULL)
        return NULL;
    os->ctx = c->device->ctx;
    CUfunction f;
    void *host = NULL;
    size_t bytes = ONESHOT_CTRL + 2 * (size_t)c->nranks * ONESHOT_LINES;
    if (cukit_api.cuMemAlloc(&os->mine, bytes) != CUDA_SUCCESS) {
        os->mine = 0;
        return os;
    }
    /* All of it: reused memory may hold an earlier communicator's lines, numbered as
     * this one's will be. On the legacy stream, before the exchange that lets peers
     * write here. */
    if (cukit_api.cuMemsetD8(os->mine, 0, bytes) != CUDA_SUCCESS ||
        cukit_api.cuMemHostAlloc(&host, 64, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP) !=
            CUDA_SUCCESS)
        return os;
    os->stop_host = host;
    *os->stop_host = 0;
    if (cukit_api.cuMemHostGetDevicePointer(&os->stop_dev, host, 0) != CUDA_SUCCESS)
        return os;
    /* The kernels now, not at the first call (which may be under a capture). */
    if (cukit_builtin_kernel_file(c->device, &c->st->nccl->oneshot_modules, NULL,
                                  ONESHOT_FILE, "ck_os_7_0", &f) < 0) {
        PyErr_Clear(); /* no compiler: NCCL's kernels serve */
        return os;
    }
    os->func[ncclFloat32][ncclSum] = f;
    if (cukit_api.cuIpcGetMemHandle == NULL ||
        cukit_api.cuIpcGetMemHandle(&rec->handle, os->mine) != CUDA_SUCCESS)
        memset(&rec->handle, 0, sizeof rec->handle); /* ranks of this process still can */
    rec->ptr = os->mine;
    rec->ok = 1;
    return os;
}

/* Map every peer's workspace. 1 when all are reached. */
static int
reach_peers(cukit_Communicator *c, struct cukit_oneshot *os, const record *recs)
{
    static const char zero[CUKIT_IPC_HANDLE_BYTES];
    for (int q = 0; q < c->nranks; q++) {
        const record *r = &recs[q];
        if (!r->ok)
            return 0;
        if (q == c->rank) {
            os->peer[q] = os->mine;
            continue;
        }
        if (r->process == recs[c->rank].process) {
            cukit_Device *other = cukit_device_get(c->st, r->ordinal);
            int on = other ? cukit_device_enable_peer(c->device, other) : -1;
            if (on != 1) {
                PyErr_Clear();
                return 0;
            }
            os->peer[q] = r->ptr;
        }
        else {
            CUdeviceptr p = 0;
            if (cukit_api.cuIpcOpenMemHandle == NULL || !memcmp(&r->handle, zero, sizeof zero) ||
                cukit_api.cuIpcOpenMemHandle(&p, r->handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) !=
                    CUDA_SUCCESS)
                return 0;
            os->peer[q] = p;
            os->opened[q] = 1;
        }
    }
    return cukit_device_activate(c->device) == 0 ? 1 : (PyErr_Clear(), 0);
}

/* One all-gather of every communicator's record (in place in its buffer), waited for.
 * 0 / -1 (an exception set). */
static int
exchange(cukit_Communicator **cs, int n, const CUdeviceptr *bufs, record *recs)
{
    cukit_state *st = cs[0]->st;
    for (int i = 0; i < n; i++) {
        cukit_Communicator *c = cs[i];
        if (cukit_device_activate(c->device) < 0 ||
            CU_CALL(st, cuMemcpyHtoD, (bufs[i] + (CUdeviceptr)c->rank * sizeof(record),
                                        &recs[i * ONESHOT_MAX_RANKS + c->rank], sizeof(record))) < 0)
            return -1;
    }
    ncclResult_t res = ncclSuccess;
    Py_BEGIN_ALLOW_THREADS
    if (n > 1)
        res = cukit_nccl_api.ncclGroupStart();
    for (int i = 0; i < n && res == ncclSuccess; i++) {
        cukit_Communicator *c = cs[i];
        void *all = (void *)(uintptr_t)bufs[i];
        cukit_api.cuCtxSetCurrent(c->device->ctx);
        res = cukit_nccl_api.ncclAllGather((char *)all + (size_t)c->rank * sizeof(record), all,
                                           sizeof(record), ncclUint8, c->comm, NULL);
    }
    if (n > 1) {
        ncclResult_t end = cukit_nccl_api.ncclGroupEnd();
        if (res == ncclSuccess)
            res = end;
    }
    Py_END_ALLOW_THREADS
    if (cukit_nccl_check(st, res, "ncclAllGather (setting up one-shot all-reduces)", cs[0]->comm) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        cukit_Communicator *c = cs[i];
        CUresult r;
        if (cukit_device_activate(c->device) < 0)
            return -1;
        Py_BEGIN_ALLOW_THREADS
        r = cukit_api.cuStreamSynchronize(NULL);
        if (r == CUDA_SUCCESS)
            r = cukit_api.cuMemcpyDtoH(&recs[i * ONESHOT_MAX_RANKS], bufs[i],
                                       (size_t)c->nranks * sizeof(record));
        Py_END_ALLOW_THREADS
        if (cukit_check_cu(st, r, "cuMemcpyDtoH") < 0)
            return -1;
    }
    return 0;
}

void
cukit_oneshot_setup(cukit_Communicator **cs, int n)
{
    if (n < 1)
        return;
    free_unheld(cs[0]->st);
    for (int i = 0; i < n; i++)
        if (cs[i]->comm == NULL || cs[i]->nranks < 2 || cs[i]->nranks > ONESHOT_MAX_RANKS ||
            cs[i]->rank < 0)
            return; /* the same on every rank: NCCL serves */
    PyObject *saved = PyErr_GetRaisedException();
    CUcontext current = NULL;
    cukit_api.cuCtxGetCurrent(&current); /* the caller's, given back at the end */
    struct cukit_oneshot **oss = calloc((size_t)n, sizeof *oss);
    record *recs = calloc((size_t)n * ONESHOT_MAX_RANKS, sizeof *recs);
    CUdeviceptr *bufs = calloc((size_t)n, sizeof *bufs);
    int ok = oss && recs && bufs, want = wanted();
    for (int i = 0; ok && i < n; i++) {
        cukit_Communicator *c = cs[i];
        ok = cukit_device_activate(c->device) == 0 &&
             CU_CALL(c->st, cuMemAlloc, (&bufs[i], (size_t)c->nranks * sizeof(record))) == 0;
        if (ok)
            oss[i] = workspace(c, &recs[i * ONESHOT_MAX_RANKS + c->rank], want);
    }
    /* From here every rank takes part in both rounds, whatever it found. */
    ok = ok && exchange(cs, n, bufs, recs) == 0;
    int exchanged = ok;
    for (int i = 0; ok && i < n; i++) {
        cukit_Communicator *c = cs[i];
        int reached = oss[i] && reach_peers(c, oss[i], &recs[i * ONESHOT_MAX_RANKS]);
        record mine = recs[i * ONESHOT_MAX_RANKS + c->rank];
        memset(&recs[i * ONESHOT_MAX_RANKS], 0, (size_t)c->nranks * sizeof(record));
        mine.ok = reached;
        recs[i * ONESHOT_MAX_RANKS + c->rank] = mine;
    }
    /* the second round whenever the first ran, so the peers' goes through; a rank that
     * failed in between says no in it */
    if (exchanged && !ok)
        for (int i = 0; i < n; i++)
            recs[i * ONESHOT_MAX_RANKS + cs[i]->rank].ok = 0;
    if (exchanged && exchange(cs, n, bufs, recs) < 0)
        ok = 0;
    for (int i = 0; i < n; i++) {
        cukit_Communicator *c = cs[i];
        int all = ok;
        for (int q = 0; all && q < c->nranks; q++)
            all = recs[i * ONESHOT_MAX_RANKS + q].ok;
        if (cukit_device_activate(c->device) < 0)
            PyErr_Clear();
        if (bufs && bufs[i])
            cukit_api.cuMemFree(bufs[i]);
        if (all)
            c->oneshot = oss[i];
        else if (oss)
            oneshot_free(c->st, oss[i]);
    }
    free(oss);
    free(recs);
    free(bufs);
    cukit_api.cuCtxSetCurrent(current);
    /* A failure here only means NCCL serves every call (the same verdict on every rank). */
    PyErr_Clear();
    PyErr_SetRaisedException(saved);
}

void
cukit_oneshot_release(cukit_Communicator *c)
{
    struct cukit_oneshot *os = c->oneshot;
    cukit_state *st = c->st;
    c->oneshot = NULL;
    if (os && os->keep) {
        /* graphs may hold it: freed once none does */
        os->next = st->nccl->orphans;
        st->nccl->orphans = os;
        cukit_api.cuUserObjectRelease(os->keep, 1);
    }
    else if (os) {
        CUcontext current = NULL;
        cukit_api.cuCtxGetCurrent(&current);
        oneshot_free(st, os);
        cukit_api.cuCtxSetCurrent(current);
    }
    free_unheld(st);
}

void
cukit_oneshot_stop(cukit_Communicator *c)
{
    if (c->oneshot && c->oneshot->stop_host)
        *c->oneshot->stop_host = 1;
}

/* ------------------------------------------------------------------ the call */

int
cukit_oneshot_all_reduce(cukit_Communicator *c, CUdeviceptr send, CUdeviceptr recv,
                         size_t count, int type, int op, CUstream h)
{
    struct cukit_oneshot *os = c->oneshot;
    if (os == NULL || count == 0 || type < 0 || type >= NCCL_TYPES || op < 0 || op >= NCCL_OPS)
        return 0;
    size_t size = type_size(type);
    if (size == 0 || count > ONESHOT_SLOT / size ||
        (op == ncclAvg && type != ncclFloat32 && type != ncclFloat64))
        return 0;
    cukit_state *st = c->st;
    CUfunction f = os->func[type][op];
    if (f == NULL) {
        char name[32];
        PyOS_snprintf(name, sizeof name, "ck_os_%d_%d", type, op);
        if (cukit_builtin_kernel_file(c->device, &st->nccl->oneshot_modules, NULL,
                                      ONESHOT_FILE, name, &f) < 0)
            return -1;
        os->func[type][op] = f;
    }
    if (st->nccl->orphans)
        free_unheld(st);
    int capturing = cukit_stream_capturing(h);
    /* One call after the other on this rank (see the top): a call on another stream
     * waits for the last one (a stream without an id waits always). Not across a
     * capture's edge: a graph's replays are ordered by the streams they are launched
     * on. */
    unsigned long long id = 0;
    int known = !capturing && cukit_api.cuStreamGetId &&
                cukit_api.cuStreamGetId(h, &id) == CUDA_SUCCESS;
    if (!capturing && os->have_last && !(known && os->have_last == 2 && id == os->last) &&
        CU_CALL(st, cuStreamWaitEvent, (h, os->order, 0)) < 0)
        return -1;
    if (capturing && held_by_graph(st, os, h) < 0)
        return -1;
    CUdeviceptr in = send, out = recv;
    unsigned long long n = count;
    struct {
        unsigned long long p[ONESHOT_MAX_RANKS];
    } peers;
    memcpy(peers.p, os->peer, sizeof peers.p);
    int rank = c->rank, nranks = c->nranks;
    void *args[] = {&in, &out, &n, &peers, &rank, &nranks, &os->stop_dev};
    if (cukit_builtin_launch(c->device, f, 1, 1, ONESHOT_THREADS, 1, h, args) < 0)
        return -1;
    if (!capturing) {
        if (os->order == NULL && CU_CALL(st, cuEventCreate, (&os->order, CU_EVENT_DISABLE_TIMING)) < 0) {
            os->order = NULL;
            return -1;
        }
        if (CU_CALL(st, cuEventRecord, (os->order, h)) < 0)
            return -1;
        os->last = id;
        os->have_last = known ? 2 : 1;
    }
    return 1;
}

PyObject *
cukit_oneshot_source(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    const char *text = cukit_device_file(ONESHOT_FILE);
    return text ? PyUnicode_FromString(text) : NULL;
}

PyObject *
cukit_oneshot_orphans(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = PyModule_GetState(module);
    free_unheld(st);
    long n = 0;
    for (struct cukit_oneshot *os = st->nccl->orphans; os; os = os->next)
        n++;
    return PyLong_FromLong(n);
}
