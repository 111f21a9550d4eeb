/* runtime.h - the runtime layer: devices and their primary contexts, streams, events, capture bookkeeping */
#ifndef CUKIT_RUNTIME_H
#define CUKIT_RUNTIME_H

#include "driver/driver.h"

/* runtime/'s part of the module state (st->runtime; see cukit_state). */
typedef struct cukit_runtime_state {
    PyTypeObject *DeviceType, *StreamType, *EventType; /* strong refs: the types */
    PyObject *devices;  /* strong ref: tuple of Device by ordinal, built at first use */
    int driver_count;   /* devices the driver reports; -1 until asked */
    int captures;       /* stream captures in progress (a synchronize would break them) */
    /* strong refs: interned names read on other libraries' streams */
    PyObject *str_cuda_stream_protocol; /* "__cuda_stream__" */
    PyObject *str_cuda_stream;          /* "cuda_stream" (torch) */
    PyObject *str_ptr;                  /* "ptr" (CuPy) */
    /* the last other library's stream passed as stream=, remembered so that passing
     * it again costs no attribute lookups or driver query */
    PyObject *last_stream;              /* strong ref or NULL */
    void *last_stream_handle;           /* its CUstream */
    void *last_stream_ctx;              /* its CUcontext; NULL: a special handle */
    /* memory/'s cache reuse (see cukit_stream_used): bumped each time a block freed in
     * legacy-stream order is handed out again; a stream that has not seen the current
     * value waits for the legacy streams that handed blocks out before its next work */
    uint64_t reuse_epoch;
    uint64_t last_stream_seen;          /* the epoch last_stream was ordered at */
} cukit_runtime_state;

struct cukit_Stream_s;

/* A live cukit.Stream that work freeing memory must wait for (see
 * cukit_device_release_stream). */
typedef struct {
    struct cukit_Stream_s *stream; /* borrowed: removed by the stream's dealloc */
    CUevent event;                 /* owned: recorded on the stream when a wait is needed */
} cukit_tracked_stream;

typedef struct cukit_Device_s {
    PyObject_HEAD
    cukit_state *st;       /* borrowed: the module outlives every instance of its types */
    int ordinal;
    CUdevice dev;
    CUcontext ctx;         /* retained primary context, held for the life of the process */
    char name[256];
    int cc_major, cc_minor;
    int sm_count;
    int l2_bytes;          /* its L2 cache */
    size_t total_memory;
    int max_threads_per_block;
    int max_block[3];
    int max_grid[3];
    int max_shared;        /* per block without opt-in */
    int max_shared_optin;  /* per block with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    /* ordering of deferred work (frees) after everything queued on the device */
    CUstream release_stream;        /* owned: NULL until first needed */
    CUevent legacy_event;           /* owned: recorded on the legacy stream when waited on */
    cukit_tracked_stream *streams;  /* owned (PyMem): the device's live cukit streams */
    int nstreams, capstreams;
    int orphan_work;                /* 1: a dropped stream's work may still run; the release
                                       stream waits for it (memory/ asks before reusing) */
    uint64_t handed_out_at;         /* memory/: the runtime's reuse_epoch at this device's
                                       last cache hand-out; 0: none */
    uint64_t peers_tried;  /* bit i: enabling access to device i's memory was tried */
    void *report;          /* owned (cuMemHostAlloc, mapped), kept for the process's life:
                              the bad-index record (report.c); NULL until first needed */
    CUdeviceptr report_dev; /* its address on the device */
} cukit_Device;

typedef struct cukit_Stream_s {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref */
    CUstream handle;       /* owned when `owned`; NULL: the legacy default stream */
    int owned;             /* 1: cukit created the stream and destroys it */
    PyObject *owner;       /* strong ref or NULL: keeps a foreign handle's stream alive
                              (Stream.from_handle's owner=) */
    PyObject *capture;     /* strong ref: list of what a capture in progress must keep
                              alive (kernels, arguments), NULL when not capturing */
    int maybe_busy;        /* 1: work was queued since a query last found it idle */
    uint64_t reuse_seen;   /* the runtime's reuse_epoch this stream was ordered at */
} cukit_Stream;

typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref */
    CUevent handle;        /* owned */
    int timing;            /* 1: created without CU_EVENT_DISABLE_TIMING */
    int recorded;          /* 1: record() has been called */
} cukit_Event;

/* ------------------------------------------------------------------ device.c */

int cukit_device_setup(PyObject *module, cukit_state *st);
/* Number of devices; 0 without a driver. -1 with an exception on a driver error. */
int cukit_device_count(cukit_state *st);
/* Device `ordinal`, created at first use. Borrowed ref, or NULL with an exception. */
cukit_Device *cukit_device_get(cukit_state *st, int ordinal);
/* The default device, made current: the one this thread chose (Device.use(), `with
 * Device(i):`), else the one whose context another library made current, else device
 * 0 (a context cukit made current itself, to work on another device's objects, does
 * not change it). Borrowed ref, or NULL with NoDeviceError. */
cukit_Device *cukit_device_current(cukit_state *st);
/* The device whose context is current on this thread now (the one a caller just
 * activated), else the default device. Borrowed ref, or NULL with an exception. */
cukit_Device *cukit_device_active(cukit_state *st);
/* The device for a `device=` argument: NULL or None -> current, a Device, or an
 * ordinal. Borrowed ref, or NULL with an exception. */
cukit_Device *cukit_device_arg(cukit_state *st, PyObject *device);
/* Make dev's primary context current on this thread if it is not. 0 / -1. */
int cukit_device_activate(cukit_Device *dev);
/* Let dev address other's memory: cuCtxEnablePeerAccess, and access to other's
 * default memory pool (where cukit's arrays come from). Tried once per pair. 1 when
 * access is on, 0 when the hardware has no peer path, -1 with an exception. */
int cukit_device_enable_peer(cukit_Device *dev, cukit_Device *other);
/* "sm_90" for dev into buf (at least 16 bytes). */
void cukit_device_arch(const cukit_Device *dev, char *buf, size_t n);

/* ------------------------------------------------------------------ stream.c */

int cukit_stream_setup(PyObject *module, cukit_state *st);
/* The CUstream for a `stream=` argument: None -> this thread's current stream of dev
 * (cukit_stream_current) or else the legacy default stream, a
 * cukit.Stream -> its handle, and other libraries' streams: any object with the
 * __cuda_stream__ protocol (cuda.core), a torch.cuda.Stream, a CuPy stream. 0 / -1
 * with TypeError, or ValueError when it belongs to another device than dev (may be
 * NULL) or no longer exists. */
int cukit_stream_handle(cukit_state *st, PyObject *obj, const cukit_Device *dev, CUstream *out);
/* This thread's current stream (`with stream:`, stream.use()) when it is a stream of
 * this module's and of dev (dev NULL: any device), else NULL: then stream=None means
 * the legacy default stream. cukit_stream_handle and cukit_capture_keep take it for
 * None. Borrowed; never raises. */
cukit_Stream *cukit_stream_current(cukit_state *st, const cukit_Device *dev);
/* Note that work is about to be queued on `h`, the handle of the stream= argument
 * `obj` (dev: the device of that work, may be NULL), for memory/'s cache: a cukit.Stream
 * is marked maybe busy (a free asks it before caching a block), and a stream other than
 * the legacy one that has not been ordered since memory/ last handed out a cached block
 * first waits for the legacy stream of each device that did (an event record and wait
 * each), so that the block's earlier users are done before it runs. The legacy stream costs one compare.
 * cukit_stream_handle calls it; a path that queues on a handle it resolved earlier (a
 * prepared launch) calls it per launch. 0 / -1. */
int cukit_stream_used(cukit_state *st, PyObject *obj, CUstream h, const cukit_Device *dev);
/* 1 when the stream= this thread resolved last was not the legacy stream: an allocation
 * now may be for work on it, so memory/ takes no cached block (ready in legacy order
 * only). Never raises. */
int cukit_stream_pending(void);
/* This thread queues work on the legacy stream: cukit_stream_pending is 0 again (launch/
 * calls it, a compare and a store). */
void cukit_stream_legacy_queued(void);
/* 1 when no work queued on dev's cukit streams may still be running (a stream being
 * captured that had work queued counts as running; a dropped stream's work included):
 * then whatever may still use
 * memory freed now runs on the legacy stream (or on another library's stream, which is
 * that library's to finish). Queries only the streams used since last found idle, so
 * 0 driver calls when none were. Never raises. */
int cukit_device_side_idle(cukit_Device *dev);
/* A stream of dev (made current) on which work queued now runs only after all work
 * queued so far on the legacy stream and on every live cukit.Stream of dev, streams
 * being captured aside (captured work does not run; its graph keeps what it uses).
 * memory/ queues frees on it. Borrowed handle, or NULL with an exception. */
CUstream cukit_device_release_stream(cukit_Device *dev);

/* Capture bookkeeping: while a stream is captured into a graph, what the captured
 * work uses is kept in a list that the graph then holds. */
/* Begin keeping for s (cuStreamBeginCapture is the caller's). 0 / -1. */
int cukit_capture_begin(cukit_Stream *s);
/* Stop keeping for s. New ref: the list kept (never NULL once begun). */
PyObject *cukit_capture_end(cukit_Stream *s);
/* When `stream` (any stream= argument, or NULL) is a cukit.Stream being captured,
 * keep `what` alive with the graph. 0 (also when not capturing) / -1. */
int cukit_capture_keep(cukit_state *st, PyObject *stream, PyObject *what);
/* 1 while any stream capture is in progress in this module (a synchronize would
 * break it), else 0. */
int cukit_capture_active(cukit_state *st);
/* Relaxed stream-capture mode for this thread around an allocation or free: under a
 * capture this thread began (cukit.Graph captures in thread-local mode) the driver
 * refuses them (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), and an array made while
 * capturing is ordinary memory its graph keeps. Returns the mode to give back to
 * cukit_capture_restore, or -1 when none was changed (no capture of cukit's going on,
 * unless `always`; or a driver without the call). */
int cukit_capture_relax(cukit_state *st, int always);
void cukit_capture_restore(int mode);
/* 1 when the driver says `stream` is being captured (any library's capture). */
int cukit_stream_capturing(CUstream stream);

/* ------------------------------------------------------------------ report.c */

/* The device address of dev's bad-index record, made at first use (page-locked host
 * memory mapped into the device). Kernels that take index arrays from the device
 * write the first index out of range they meet there instead of making the host
 * wait for a check. 0 / -1 with an exception. */
int cukit_report_device_ptr(cukit_Device *dev, CUdeviceptr *out);
/* Called by every synchronizing point cukit owns (stream, event and device
 * synchronize, a copy to the host that waits, a read of a count): when a kernel that
 * has finished recorded a bad index on any device, clear the record and raise
 * numpy's IndexError naming it; returns -1. Else 0 (a few loads, no driver call). */
int cukit_report_raise(cukit_state *st);

/* ------------------------------------------------------------------ event.c */

int cukit_event_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_RUNTIME_H */
