/* entries.h - what the emulator's driver-table files (driver/) share: streams, events and graphs, deferred work, the memory and launch entry points */
#ifndef CUKIT_EMU_ENTRIES_H
#define CUKIT_EMU_ENTRIES_H

#include "emulator/emu.h"

/* streams.c */
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

/* Memory a capture allocated and freed (cuMemAllocAsync, cuMemFreeAsync on the stream):
 * the driver makes them nodes that allocate and free it at each launch; here it stays
 * allocated while the graph or any instance of it lives. Shared by them, counted. Made
 * at the capture's first allocation or free: a graph with such nodes has at most one
 * instance at a time, as the driver's. */
/* What frees a device pointer (cuMemFree's work), passed down by the file that
 * allocates (memory.c), so that the queues and graphs below it name none of its
 * functions. */
typedef CUresult (*emu_free_fn)(CUdeviceptr p);

typedef struct graph_mem {
    int refs;
    int execs;                 /* live instances */
    size_t n, cap;
    CUdeviceptr *ptrs;         /* owned: freed with the last reference */
    emu_free_fn release;       /* frees each of ptrs */
} graph_mem;

typedef struct CUgraph_st {
    node **nodes;
    size_t n, cap;
    graph_mem *mem;            /* a reference, or NULL */
} graph;

typedef struct CUgraphExec_st {
    graph g;
    graph *from;               /* borrowed: the graph it was made from, for node lookups */
} graph_exec;

typedef struct emu_op emu_op;

/* A stream. Under deferred execution (CUKIT_EMULATOR_DEFER=1, defer.c) it queues its
 * work; otherwise the queue stays empty and work runs when it is issued. */
typedef struct CUstream_st {
    int magic;
    graph *capture;            /* owned until EndCapture: the graph being recorded */
    struct capture_count *capture_counted; /* the beginning thread's capture counts (strict
                                             * modes), or NULL */
    int capture_global;        /* begun in CU_STREAM_CAPTURE_MODE_GLOBAL */
    int capture_invalid;       /* a call refused during the capture invalidated it */
    unsigned flags;            /* CU_STREAM_NON_BLOCKING or 0 */
    emu_op *head, *tail;       /* owned: work issued and not yet run, oldest first */
    uint64_t issued, done;     /* operations queued so far, and run so far, in order */
    uint64_t legacy_seen;      /* the legacy stream's `issued` this stream last waited for */
    uint64_t seen_by_legacy;   /* this stream's `issued` the legacy stream last waited for */
    int queried;               /* a query answered "not ready" since the last work ran */
    unsigned long long id;     /* cuStreamGetId's: never reused (the default streams: 1, 2) */
} stream;

/* An event. A record under deferred execution completes when the stream runs it. */
typedef struct CUevent_st {
    double ms;                 /* host time when the last record completed */
    int recorded;
    unsigned flags;
    stream *src;               /* borrowed: the stream of the record not yet run, or NULL */
    uint64_t seq;              /* that record's place in src's queue */
    int records;               /* queued records naming this event (it lives until 0) */
    int destroyed;             /* cuEventDestroy came while records were queued */
    int queried;               /* a query answered "not ready" for this record */
} event;

enum { STREAM_MAGIC = 0x5354524d };

/* The graph a stream is capturing into, or NULL. */
graph *emu_capturing(CUstream h);
/* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when this thread may not make a "potentially
 * unsafe" call (an allocation outside a capturing stream) under the capture modes in
 * force, as the driver refuses it; else CUDA_SUCCESS. */
CUresult emu_capture_unsafe(const char *call);
node *emu_graph_add(graph *g, int type);
/* Keep p (freed on a capturing stream) for g's launches, or with p 0 mark that g
 * allocates memory: 0, or -1 when out of memory. `release` frees the kept pointers
 * when the last of g and its instances goes. */
int emu_graph_keep(graph *g, CUdeviceptr p, emu_free_fn release);
/* 1 when a graph keeps p (freed in a capture): a second free of it is refused. */
int emu_capture_freed(CUdeviceptr p);
void emu_node_free(node *n);
/* Copy a kernel node's function, configuration and parameter values. */
CUresult emu_set_kernel_params(node *n, const CUDA_KERNEL_NODE_PARAMS *p);
void emu_fill_streams(cukit_api_t *api);

/* defer.c: the live streams, which the queues below walk. The stream behind a
 * handle, NULL for the default streams and unknown handles. */
stream *emu_stream_of(CUstream h);
/* CUDA_SUCCESS for a live or default stream, else CUDA_ERROR_INVALID_HANDLE. */
CUresult emu_check_stream(CUstream h);
/* Every live stream created by cuStreamCreateWithPriority, to fn in turn (the
 * streams' lock held: fn must not create or destroy streams). */
void emu_each_stream(void (*fn)(stream *, void *), void *arg);
/* Make s a live stream (0), or -1 when memory ran out; forget it. */
int emu_stream_add(stream *s);
void emu_stream_remove(stream *s);

/* defer.c: deferred execution. Each emu_defer_* takes a checked operation and queues
 * it on the stream (0), or returns 1 when execution is not deferred (the caller runs
 * it now). A failure found when the work runs is held as a fault (emu_set_pending).
 * `now` is what runs the operation when its stream reaches it, passed by the file
 * that issues it (launch.c, memory.c): defer.c sits below them and calls none of
 * their functions by name. */
typedef CUresult (*emu_launch_fn)(const emu_launch *L);
typedef CUresult (*emu_copy_fn)(CUdeviceptr dst, const void *src, size_t n, int dst_dev,
                                int src_dev);
typedef CUresult (*emu_copy3d_fn)(const CUDA_MEMCPY3D *c, int run);
typedef CUresult (*emu_memset_fn)(CUdeviceptr p, size_t pitch, unsigned value, size_t elem,
                                  size_t width, size_t height);
int emu_deferring(void);
int emu_defer_launch(CUstream h, const emu_launch *L, emu_launch_fn now); /* copies L->params */
int emu_defer_copy(CUstream h, CUdeviceptr dst, const void *src, size_t n, int dst_dev, int src_dev,
                   emu_copy_fn now);
int emu_defer_copy3d(CUstream h, const CUDA_MEMCPY3D *c, emu_copy3d_fn now);
int emu_defer_memset(CUstream h, CUdeviceptr p, size_t pitch, unsigned value, size_t elem,
                     size_t width, size_t height, emu_memset_fn now);
int emu_defer_free(CUstream h, CUdeviceptr p, emu_free_fn now);
int emu_defer_record(CUstream h, event *e);
int emu_defer_wait(CUstream h, event *e);
/* Run queued work: one stream's (the legacy one's also waits for the blocking streams'
 * earlier work), up to an event's record, what a synchronous copy on the legacy stream
 * waits for, or everything. No-ops when not deferring. */
void emu_sync_stream(CUstream h);
void emu_sync_event(event *e);
void emu_sync_legacy(void);
void emu_sync_all(void);
/* A query: 1 when the stream (event) is complete. Under deferred execution, queued work
 * makes the first query answer 0 (not ready) and the next one run it and answer 1. */
int emu_query_stream(CUstream h);
int emu_query_event(event *e);
/* Destroy an event now, or once its queued records have run. */
void emu_event_release(event *e);
/* Run a stream's work before it is destroyed. */
void emu_stream_forget(stream *s);

/* memory.c */
/* Check a 2-D/3-D copy; run it too when `run`. */
CUresult emu_copy3d(const CUDA_MEMCPY3D *c, int run);
CUresult emu_copy_now(CUdeviceptr dst, const void *src, size_t n, int dst_dev, int src_dev);
CUresult emu_memset_now(CUdeviceptr p, size_t pitch, unsigned value, size_t elem, size_t width,
                        size_t height);
void emu_fill_memory(cukit_api_t *api);
/* Bytes the stream-ordered pool holds for reuse (freed, not trimmed): device memory
 * in use, as the driver counts it. */
uint64_t emu_pool_cached_bytes(void);

/* arrays.c */
void emu_fill_textures(cukit_api_t *api);

/* launch.c */
/* Run one checked launch now; a fault is held for the next call that waits. */
CUresult emu_launch_now(const emu_launch *L);
/* Check and run (or, during a capture, record) one launch. */
CUresult emu_launch_kernel(emu_func *f, const unsigned grid[3], const unsigned block[3], unsigned shared,
                    CUstream s, void **params, void **extra);
void emu_fill_launch(cukit_api_t *api);
/* Peer access: NotSupported, saying the emulator cannot. */
void emu_fill_unsupported(cukit_api_t *api);

#endif /* CUKIT_EMU_ENTRIES_H */
