/* nccl.h - the NCCL layer: NCCL's ABI as cukit declares it, its entry-point table, cukit.nccl's Communicator */
#ifndef CUKIT_NCCL_H
#define CUKIT_NCCL_H

#include "array/array.h"

/* nccl/'s part of the module state (st->nccl; see cukit_state). */
typedef struct cukit_nccl_state {
    PyTypeObject *CommunicatorType; /* strong ref */
    PyTypeObject *WindowType;       /* strong ref */
    PyObject *oneshot_modules;      /* strong ref, NULL until needed: ordinal -> the Module
                                       of the one-shot all-reduce kernels (oneshot.c) */
    PyObject *pending;              /* strong ref, NULL until needed: a list of the Windows
                                       whose last user went while a stream capture was going
                                       on (see window.c), released at the next safe point */
    struct cukit_oneshot *orphans;  /* owned: one-shot workspaces whose communicator went
                                       while a CUDA graph still held their kernels, freed
                                       once no graph does (oneshot.c) */
} cukit_nccl_state;

/* ------------------------------------------------------------------ NCCL's ABI (nccl.h 2.x)
 *
 * Only what cukit calls, written from NCCL's documented C API so that the build
 * needs no NCCL headers. These values have been stable since NCCL 2.12. */

typedef struct ncclComm *ncclComm_t;
typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
#define CUKIT_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[CUKIT_NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
/* A registered window (NCCL 2.27+): opaque, NULL when NCCL registered nothing. */
typedef struct ncclWindow_opaque *ncclWindow_t;
/* ncclCommWindowRegister's flags: with COLL_SYMMETRIC every rank passes buffers at the
 * same offset of its window, which lets NCCL run its symmetric-memory kernels. */
#define CUKIT_NCCL_WIN_DEFAULT 0x00
#define CUKIT_NCCL_WIN_COLL_SYMMETRIC 0x01
/* Opaque here: cukit passes NULL wherever NCCL takes a configuration. */
typedef struct ncclConfig_opaque ncclConfig_t;

enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
};

enum {
    ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclUint32 = 3, ncclInt64 = 4, ncclUint64 = 5,
    ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9,
};

enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };

#define CUKIT_NCCL_SPLIT_NOCOLOR (-1)
/* The oldest NCCL cukit loads: ncclAvg and ncclBfloat16 (2.10), ncclGetLastError (2.13),
 * a stable ABI for everything in the list below. Versions are major*10000+minor*100+patch. */
#define CUKIT_NCCL_MIN_VERSION 21300

/* X(return type, field name, exported symbol, REQUIRED|OPTIONAL, (parameters)), as in
 * driver/entry_points.h. loader.c expands this list into cukit_nccl_api and the
 * table it walks after dlopen; nothing else calls libnccl. */
#define CUKIT_NCCL_API(X)                                                                \
    X(ncclResult_t, ncclGetVersion, "ncclGetVersion", REQUIRED, (int *))                 \
    X(const char *, ncclGetErrorString, "ncclGetErrorString", REQUIRED, (ncclResult_t))  \
    X(const char *, ncclGetLastError, "ncclGetLastError", REQUIRED, (ncclComm_t))        \
    X(ncclResult_t, ncclGetUniqueId, "ncclGetUniqueId", REQUIRED, (ncclUniqueId *))      \
    X(ncclResult_t, ncclCommInitRank, "ncclCommInitRank", REQUIRED,                      \
      (ncclComm_t *, int, ncclUniqueId, int))                                            \
    X(ncclResult_t, ncclCommInitAll, "ncclCommInitAll", REQUIRED, (ncclComm_t *, int, const int *)) \
    X(ncclResult_t, ncclCommSplit, "ncclCommSplit", OPTIONAL,                            \
      (ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *))                              \
    X(ncclResult_t, ncclCommFinalize, "ncclCommFinalize", OPTIONAL, (ncclComm_t))        \
    X(ncclResult_t, ncclCommDestroy, "ncclCommDestroy", REQUIRED, (ncclComm_t))          \
    X(ncclResult_t, ncclCommAbort, "ncclCommAbort", REQUIRED, (ncclComm_t))              \
    X(ncclResult_t, ncclCommGetAsyncError, "ncclCommGetAsyncError", REQUIRED, (ncclComm_t, ncclResult_t *)) \
    X(ncclResult_t, ncclCommCount, "ncclCommCount", REQUIRED, (ncclComm_t, int *))       \
    X(ncclResult_t, ncclCommCuDevice, "ncclCommCuDevice", REQUIRED, (ncclComm_t, int *)) \
    X(ncclResult_t, ncclCommUserRank, "ncclCommUserRank", REQUIRED, (ncclComm_t, int *)) \
    X(ncclResult_t, ncclAllReduce, "ncclAllReduce", REQUIRED,                            \
      (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, CUstream)) \
    X(ncclResult_t, ncclBroadcast, "ncclBroadcast", REQUIRED,                            \
      (const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, CUstream))         \
    X(ncclResult_t, ncclReduce, "ncclReduce", REQUIRED,                                  \
      (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, CUstream)) \
    X(ncclResult_t, ncclAllGather, "ncclAllGather", REQUIRED,                            \
      (const void *, void *, size_t, ncclDataType_t, ncclComm_t, CUstream))              \
    X(ncclResult_t, ncclReduceScatter, "ncclReduceScatter", REQUIRED,                    \
      (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, CUstream)) \
    X(ncclResult_t, ncclSend, "ncclSend", REQUIRED,                                      \
      (const void *, size_t, ncclDataType_t, int, ncclComm_t, CUstream))                 \
    X(ncclResult_t, ncclRecv, "ncclRecv", REQUIRED,                                      \
      (void *, size_t, ncclDataType_t, int, ncclComm_t, CUstream))                       \
    X(ncclResult_t, ncclGroupStart, "ncclGroupStart", REQUIRED, (void))                  \
    X(ncclResult_t, ncclGroupEnd, "ncclGroupEnd", REQUIRED, (void))                      \
    /* symmetric memory (window.c): ncclMemAlloc since 2.19, windows since 2.27 */        \
    X(ncclResult_t, ncclMemAlloc, "ncclMemAlloc", OPTIONAL, (void **, size_t))            \
    X(ncclResult_t, ncclMemFree, "ncclMemFree", OPTIONAL, (void *))                       \
    X(ncclResult_t, ncclCommWindowRegister, "ncclCommWindowRegister", OPTIONAL,           \
      (ncclComm_t, void *, size_t, ncclWindow_t *, int))                                 \
    X(ncclResult_t, ncclCommWindowDeregister, "ncclCommWindowDeregister", OPTIONAL,       \
      (ncclComm_t, ncclWindow_t))

/* Filled once by cukit_nccl_load under the GIL, only read afterwards (like cukit_api). */
typedef struct {
#define CUKIT_X(ret, name, sym, req, params) ret(*name) params;
    CUKIT_NCCL_API(CUKIT_X)
#undef CUKIT_X
} cukit_nccl_api_t;

extern cukit_nccl_api_t cukit_nccl_api;

/* ------------------------------------------------------------------ loader.c */

/* dlopen libnccl (CUKIT_NCCL, the nvidia-nccl-cu13/cu12 wheels, the loader path),
 * fill cukit_nccl_api and check the version. 0, or -1 with NotSupportedError saying
 * where it looked and what to install. Later calls repeat the first verdict. */
int cukit_nccl_load(cukit_state *st);
/* Turn an NCCL result into 0 (success) or -1 with NcclError set: the message holds
 * ncclGetErrorString and, with `comm`, ncclGetLastError; `call` names the function. */
int cukit_nccl_check(cukit_state *st, ncclResult_t res, const char *call, ncclComm_t comm);
/* version(), get_unique_id() and the mapping helpers. 0 / -1. */
int cukit_nccl_setup(PyObject *module, cukit_state *st);
/* NCCL's data type for typecode tc with reduction `op` (-1: none, data only moves);
 * each element travels as *lanes elements of that type. The type, or -1 with
 * TypeError naming the dtype, the op and `who`. */
int cukit_nccl_datatype(int tc, int op, int *lanes, const char *who);
/* NCCL's operation for "sum", "prod", "min", "max" or "avg"; -1 with ValueError. */
int cukit_nccl_op(PyObject *name, const char *who);

/* Calls through the table; the expression is 0 or -1 with NcclError. */
#define NCCL_CALL(st, fn, args, comm) cukit_nccl_check((st), cukit_nccl_api.fn args, #fn, (comm))

/* ------------------------------------------------------------------ communicator.c */

typedef struct cukit_Window cukit_Window;
struct cukit_oneshot;

typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref: the GPU this rank drives */
    ncclComm_t comm;       /* owned: NULL once destroyed or aborted */
    int rank, nranks;
    double timeout;        /* seconds a wait may take before the communicator is aborted;
                              < 0: wait for ever */
    int aborted;           /* 1: abort() ran (or a timeout did) */
    int captured;          /* 1: a CUDA graph holds work of it (NCCL's destroy then waits
                              for that graph to be destroyed) */
    ncclComm_t released;   /* owned: after destroy() of a captured communicator, the comm
                              NCCL destroys at dealloc, once the cukit graphs are gone */
    int local_ranks;       /* > 1: one of that many communicators init_all made in this
                              process (a collective call of one alone would never return) */
    cukit_Window *windows; /* borrowed: the live windows registered with it (window.c);
                              each holds a strong ref to this communicator */
    struct cukit_oneshot *oneshot; /* owned (cukit_oneshot_release), NULL: every call is
                                      NCCL's (oneshot.c) */
} cukit_Communicator;

/* The Communicator type into module state slot and the module, with the module's
 * nccl_group_start() and nccl_group_end(). 0 / -1. */
int cukit_communicator_setup(PyObject *module, cukit_state *st);
/* How many nccl_group_start() calls of this thread await their nccl_group_end()
 * (communicator.c, beside the group functions: a communicator made inside a group is
 * only ready at its end). */
int cukit_nccl_group_depth(void);
/* 0 while c can be used; else -1 with ValueError (destroyed) or NcclError (an
 * asynchronous error of NCCL, e.g. a peer that died). */
int cukit_communicator_check(cukit_Communicator *c);

/* The ncclComm_t that NCCL calls may still be given: the live one, or the one a
 * captured communicator's destroy() left for its dealloc (windows deregister with it).
 * NULL once NCCL destroyed or aborted it. */
static inline ncclComm_t
cukit_communicator_handle(const cukit_Communicator *c)
{
    return c->comm ? c->comm : c->released;
}

/* ------------------------------------------------------------------ window.c */

/* Symmetric memory: bytes from ncclMemAlloc, registered on every rank of a communicator
 * as one window (ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC). Arrays over it keep
 * it alive (their owner); graphs that captured collectives on it keep it too. */
struct cukit_Window {
    PyObject_HEAD
    cukit_state *st;
    cukit_Communicator *comm; /* strong ref: registered with it; keeps it alive */
    void *ptr;                /* owned (ncclMemFree): NULL once freed */
    size_t nbytes;            /* allocated and registered bytes (a multiple of 4096) */
    ncclWindow_t win;         /* owned (ncclCommWindowDeregister): NULL when NCCL registered
                                 nothing, or once deregistered */
    cukit_Window *prev, *next; /* borrowed: comm->windows' list */
};

/* The Window type; Communicator.symmetric_empty and nccl_symmetric_empty_all come with
 * it (see cukit_window_methods). 0 / -1. */
int cukit_window_setup(PyObject *module, cukit_state *st);
/* Deregister every window of c, after the work queued on its device, keeping their
 * memory until the arrays over it go: destroy() calls it before ncclCommDestroy (after
 * abort() nothing is deregistered: NCCL dropped the windows with the communicator).
 * 0 / -1 (the first failure; the others are still tried). */
int cukit_window_release_all(cukit_Communicator *c);
/* Release the windows left pending by a capture (each waits for the work queued on its
 * device first), unless a capture of cukit's is still going on: the collectives,
 * synchronize(), destroy() and symmetric_empty call it through cukit_communicator_check
 * or directly. A failure is reported with PyErr_WriteUnraisable on its window; a window
 * the driver still refuses to wait for (another library's capture) stays pending.
 * Keeps any exception set before. */
void cukit_window_release_pending(cukit_state *st);
/* Communicator methods of window.c (symmetric_empty). */
extern PyMethodDef cukit_window_methods[];
/* When `obj` is a cukit.Array over a Window, keep the Window alive with the graph a
 * capture on `stream` is building (an array's free() lets go of its owner). 0 / -1. */
int cukit_window_capture_keep(cukit_state *st, PyObject *stream, PyObject *obj);

/* ------------------------------------------------------------------ oneshot.c */

/* Give the n communicators this thread made together (one, those of init_all, or those
 * made inside one group; rank and size known) one-shot all-reduces, if every rank of
 * each can: a collective call that every rank makes once its communicator is ready,
 * outside a group, whatever CUKIT_NCCL_ONESHOT says there (a rank with it 0 takes part
 * and says no). On any failure the communicators keep NCCL's kernels alone (the same
 * verdict on every rank). Keeps any exception set before; never raises. */
void cukit_oneshot_setup(cukit_Communicator **cs, int n);
/* all_reduce of `count` elements of NCCL type `type` with op `op` from send to recv (on
 * c's device, made current) on stream h, as one kernel of cukit's own when c has one-shot
 * calls and the call is one they serve; called outside groups only. 1 when launched, 0
 * when NCCL should run it, -1 with an exception. */
int cukit_oneshot_all_reduce(cukit_Communicator *c, CUdeviceptr send, CUdeviceptr recv,
                             size_t count, int type, int op, CUstream h);
/* Make every one-shot kernel of c that waits for a peer return (abort). Never raises. */
void cukit_oneshot_stop(cukit_Communicator *c);
/* _nccl_oneshot_source(): the kernels' CUDA C, for tests that run them on one device. */
PyObject *cukit_oneshot_source(PyObject *module, PyObject *ignored);
/* _nccl_oneshot_orphans(): how many workspaces of communicators that are gone wait for
 * the graphs holding their kernels (after freeing those no graph holds), for tests. */
PyObject *cukit_oneshot_orphans(PyObject *module, PyObject *ignored);
/* Free c's one-shot workspace and the peers' mappings (after its work: the free waits
 * for the device), or, while a CUDA graph may still replay its kernels, once no graph
 * holds them. Never raises. */
void cukit_oneshot_release(cukit_Communicator *c);

/* ------------------------------------------------------------------ collectives.c */

/* The Communicator methods that move data; the type's method table lists them. */
extern PyMethodDef cukit_collective_methods[];

#endif /* CUKIT_NCCL_H */
