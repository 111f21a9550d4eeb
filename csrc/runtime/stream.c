/* stream.c - cukit.Stream: ordered queues of device work, what frees wait for, and capture bookkeeping */
#include "runtime/runtime.h"

#include <string.h>

/* The stream= this thread resolved last (NULL: the legacy stream). An operation resolves
 * its stream before it allocates its outputs, so an allocation made while it is another
 * stream may be for work on that stream, queued before any later resolution could order
 * it: memory/ then takes no cached block (cukit_stream_pending), until this thread
 * resolves or queues work on the legacy stream again. Per thread, as an
 * operation may release the GIL between the two (a compile); a process-wide global,
 * against the module-state rule, because it describes the thread, not the module. */
static _Thread_local CUstream pending_stream;

/* The stream `with stream:` (or stream.use()) made current on this thread, and the
 * ones it replaced, innermost last: strong refs (NULL entries: no stream was current).
 * Per thread as in CuPy; process-wide storage, against the module-state rule, because
 * it describes the thread. A thread that ends inside `with` leaves its refs behind. */
static _Thread_local cukit_Stream *current, **outer;
static _Thread_local int nouter, capouter;

cukit_Stream *
cukit_stream_current(cukit_state *st, const cukit_Device *dev)
{
    cukit_Stream *s = current;
    if (s == NULL || s->st != st || (dev != NULL && s->device != dev))
        return NULL;
    return s;
}

int
cukit_stream_pending(void)
{
    return pending_stream != NULL;
}

void
cukit_stream_legacy_queued(void)
{
    pending_stream = NULL;
}

/* The handle another library's stream object carries: 1 with *out set, 0 when obj
 * is no stream cukit knows, -1 with an exception. */
static int
foreign_handle(cukit_state *st, PyObject *obj, CUstream *out)
{
    PyObject *v;
    int r = cukit_optional_attr_obj(obj, st->runtime->str_cuda_stream_protocol, &v);
    if (r < 0)
        return -1;
    if (r > 0) { /* cuda.core's protocol: __cuda_stream__() -> (version, handle) */
        PyObject *t = PyObject_CallNoArgs(v);
        Py_DECREF(v);
        if (t == NULL)
            return -1;
        int ok = PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 2;
        v = ok ? Py_NewRef(PyTuple_GET_ITEM(t, 1)) : NULL;
        Py_DECREF(t);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s.__cuda_stream__() must return (version, handle)",
                         Py_TYPE(obj)->tp_name);
            return -1;
        }
    }
    else if ((r = cukit_optional_attr_obj(obj, st->runtime->str_cuda_stream, &v)) <= 0) { /* torch */
        if (r < 0)
            return -1;
        /* CuPy's streams: .ptr (only on types named as streams: arrays have .ptr too) */
        if (strstr(Py_TYPE(obj)->tp_name, "Stream") == NULL ||
            (r = cukit_optional_attr_obj(obj, st->runtime->str_ptr, &v)) <= 0)
            return r;
    }
    unsigned long long h = PyLong_Check(v) ? PyLong_AsUnsignedLongLong(v) : 0;
    int bad = !PyLong_Check(v) || (h == (unsigned long long)-1 && PyErr_Occurred());
    Py_DECREF(v);
    if (bad) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "the %s passed as stream= gave no integer stream handle",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = (CUstream)(uintptr_t)h;
    return 1;
}

/* ValueError when a foreign stream's context is not dev's (dev NULL: any). 0 / -1. */
static int
wrong_context(CUcontext ctx, const cukit_Device *dev, PyObject *obj)
{
    if (ctx == NULL || dev == NULL || ctx == dev->ctx)
        return 0;
    PyErr_Format(PyExc_ValueError,
                 "the %s passed as stream= belongs to another device or context than "
                 "device %d, where this work runs", Py_TYPE(obj)->tp_name, dev->ordinal);
    return -1;
}

/* Check that foreign handle h is a stream of dev (NULL: any device); its context
 * into *ctx (NULL for the special handles). 0 / -1. A handle whose stream was
 * destroyed cannot be told apart safely (the driver reads through it): the object
 * that hands out a handle must keep its stream alive, as torch's and CuPy's do. */
static int
check_foreign(cukit_state *st, CUstream h, const cukit_Device *dev, PyObject *obj, CUcontext *ctx)
{
    *ctx = NULL;
    if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD ||
        cukit_api.cuStreamGetCtx == NULL)
        return 0;
    CUresult res = cukit_api.cuStreamGetCtx(h, ctx);
    if (res != CUDA_SUCCESS) {
        const char *name = "?";
        cukit_api.cuGetErrorName(res, &name);
        PyErr_Format(PyExc_ValueError,
                     "the %s passed as stream= (handle %p) is not a live CUDA stream "
                     "(cuStreamGetCtx: %s); was it destroyed?",
                     Py_TYPE(obj)->tp_name, (void *)h, name);
        return -1;
    }
    return wrong_context(*ctx, dev, obj);
}

int
cukit_stream_handle(cukit_state *st, PyObject *obj, const cukit_Device *dev, CUstream *out)
{
    if (obj == NULL || obj == Py_None) {
        obj = (PyObject *)cukit_stream_current(st, dev);
        if (obj == NULL) {
            *out = NULL; /* the legacy default stream */
            pending_stream = NULL;
            return 0;
        }
    }
    if (Py_IS_TYPE(obj, st->runtime->StreamType) || PyObject_TypeCheck(obj, st->runtime->StreamType)) {
        cukit_Stream *s = (cukit_Stream *)obj;
        if (dev && s->device != dev) {
            PyErr_Format(PyExc_ValueError, "the stream belongs to device %d, not device %d",
                         s->device->ordinal, dev->ordinal);
            return -1;
        }
        *out = s->handle;
        return cukit_stream_used(st, obj, s->handle, dev);
    }
    if (obj == st->runtime->last_stream) { /* the same foreign stream again: already checked */
        *out = (CUstream)st->runtime->last_stream_handle;
        if (wrong_context((CUcontext)st->runtime->last_stream_ctx, dev, obj) < 0)
            return -1;
        return cukit_stream_used(st, obj, *out, dev);
    }
    int r = foreign_handle(st, obj, out);
    if (r < 0)
        return -1;
    if (r == 0) {
        PyErr_Format(PyExc_TypeError,
                     "stream must be a cukit.Stream, None, or another library's stream (an "
                     "object with __cuda_stream__, a torch.cuda.Stream, a CuPy stream), got %s; "
                     "wrap a raw handle with cukit.Stream.from_handle(handle, owner=...)",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    CUcontext ctx;
    if (check_foreign(st, *out, dev, obj, &ctx) < 0)
        return -1;
    /* Remembered by identity while held: the object cannot be freed and its address
     * reused meanwhile. */
    Py_XSETREF(st->runtime->last_stream, Py_NewRef(obj));
    st->runtime->last_stream_handle = (void *)*out;
    st->runtime->last_stream_ctx = (void *)ctx;
    st->runtime->last_stream_seen = 0; /* not yet ordered */
    return cukit_stream_used(st, obj, *out, dev);
}

/* ------------------------------------------------------------------ memory/'s cache
 *
 * memory/ caches blocks that arrays let go of while nothing but the legacy stream may
 * still use them, and hands them out again without a driver call: ready in legacy-stream
 * order only. Any other stream is ordered after the legacy stream once each time such a
 * block was handed out (below); and a free asks only the cukit streams that had work
 * queued since they were last found idle whether they still run (a free of memory one of
 * them may use takes the release stream's path instead). */

/* Make h (not the legacy stream; a stream of `home`) wait for the work queued so far on
 * the legacy stream of each device that handed out a cached block after epoch `seen`
 * (usually home alone; a block of another device may be used through peer access), then
 * make home current again. 0 / -1. */
static int
order_after_legacy(cukit_state *st, cukit_Device *home, CUstream h, uint64_t seen)
{
    PyObject *devices = st->runtime->devices;
    Py_ssize_t n = devices ? PyList_GET_SIZE(devices) : 0;
    int rc = 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        PyObject *o = PyList_GET_ITEM(devices, i);
        if (!PyObject_TypeCheck(o, st->runtime->DeviceType))
            continue;
        cukit_Device *d = (cukit_Device *)o;
        if (d->handed_out_at <= seen)
            continue;
        if (cukit_device_activate(d) < 0)
            return -1;
        if (d->legacy_event == NULL &&
            CU_CALL(st, cuEventCreate, (&d->legacy_event, CU_EVENT_DISABLE_TIMING)) < 0) {
            d->legacy_event = NULL;
            rc = -1;
        }
        else if (CU_CALL(st, cuEventRecord, (d->legacy_event, NULL)) < 0 ||
                 CU_CALL(st, cuStreamWaitEvent, (h, d->legacy_event, 0)) < 0)
            rc = -1;
    }
    if (cukit_device_activate(home) < 0)
        return -1;
    return rc;
}

int
cukit_stream_used(cukit_state *st, PyObject *obj, CUstream h, const cukit_Device *dev)
{
    pending_stream = h;
    if (h == NULL)
        return 0; /* the legacy stream: the cache's own order */
    cukit_runtime_state *rt = st->runtime;
    cukit_Stream *s = obj && PyObject_TypeCheck(obj, rt->StreamType) ? (cukit_Stream *)obj : NULL;
    if (s) {
        s->maybe_busy = 1;
        if (s->reuse_seen == rt->reuse_epoch)
            return 0;
    }
    else if (dev == NULL || (obj == rt->last_stream && rt->last_stream_seen == rt->reuse_epoch))
        return 0; /* another library's stream, no device named (no pool memory), or
                     ordered already; one that is not the last resolved (a prepared
                     launch's) is ordered each time */
    /* A capture in progress forbids work on the legacy stream; its graph keeps what it
     * uses, and its launch on a stream is ordered then. */
    if (rt->captures > 0 || cukit_stream_capturing(h))
        return 0; /* (the second: another library's capture; asked only when ordering is due) */
    if (order_after_legacy(st, s ? s->device : (cukit_Device *)dev, h,
                           s ? s->reuse_seen : obj == rt->last_stream ? rt->last_stream_seen : 0) < 0)
        return -1;
    if (s)
        s->reuse_seen = rt->reuse_epoch;
    else if (obj == rt->last_stream)
        rt->last_stream_seen = rt->reuse_epoch;
    return 0;
}

/* Whether s is being captured: by cukit, or through another wrapper of its handle or by
 * another library (asked of the driver). Such a stream is never queried: the driver
 * refuses the query and invalidates the capture. */
static int
being_captured(const cukit_Stream *s)
{
    return s->capture != NULL || cukit_stream_capturing(s->handle);
}

/* cuStreamQuery of h, a stream not being captured. While this thread captures another
 * stream in thread-local mode the driver refuses a query of any stream and invalidates
 * that capture (the H100 did, when an array was freed inside `with s.capture()` while
 * another cukit.Stream might still run), so it is asked in relaxed mode then. */
static CUresult
query_idle_stream(cukit_state *st, CUstream h)
{
    int mode = cukit_capture_relax(st, 1); /* another library's capture is not seen */
    CUresult res = cukit_api.cuStreamQuery(h);
    cukit_capture_restore(mode);
    return res;
}

int
cukit_device_side_idle(cukit_Device *dev)
{
    if (dev->orphan_work) {
        if (dev->release_stream == NULL ||
            query_idle_stream(dev->st, dev->release_stream) != CUDA_SUCCESS)
            return 0;
        dev->orphan_work = 0;
    }
    for (int i = 0; i < dev->nstreams; i++) {
        cukit_Stream *s = dev->streams[i].stream;
        if (!s->maybe_busy)
            continue;
        /* Being captured, it cannot be asked: work queued before the capture may still
         * run (what it queues now runs only in its graph, which keeps what it uses). */
        if (being_captured(s))
            return 0;
        if (query_idle_stream(s->st, s->handle) != CUDA_SUCCESS)
            return 0;
        s->maybe_busy = 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ what frees wait for
 *
 * A device's live cukit streams are tracked so that work which frees memory can be
 * queued after everything that may still use it (memory/'s pool rule): the
 * release stream waits, through an event, on each stream with unfinished work. */

/* Remember s in its device's list. 0 / -1. */
static int
track(cukit_Stream *s)
{
    cukit_Device *dev = s->device;
    if (dev->nstreams == dev->capstreams) {
        int cap = dev->capstreams ? 2 * dev->capstreams : 8;
        cukit_tracked_stream *grown = PyMem_Realloc(dev->streams, cap * sizeof *grown);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        dev->streams = grown;
        dev->capstreams = cap;
    }
    CUevent ev;
    if (CU_CALL(s->st, cuEventCreate, (&ev, CU_EVENT_DISABLE_TIMING)) < 0)
        return -1;
    dev->streams[dev->nstreams].stream = s;
    dev->streams[dev->nstreams].event = ev;
    dev->nstreams++;
    return 0;
}

/* Forget s (its dealloc, with its context current). Work it queued may still use
 * memory freed later, so the release stream waits for it first. Never raises. */
static void
untrack(cukit_Stream *s)
{
    cukit_Device *dev = s->device;
    for (int i = 0; i < dev->nstreams; i++) {
        cukit_tracked_stream *t = &dev->streams[i];
        if (t->stream != s)
            continue;
        if (!being_captured(s) && query_idle_stream(s->st, s->handle) == CUDA_ERROR_NOT_READY) {
            /* dropped while another stream is captured: the legacy stream's query (in
             * cukit_device_release_stream) is refused outside relaxed mode */
            int mode = cukit_capture_relax(s->st, 1);
            CUstream release = cukit_device_release_stream(dev);
            if (release == NULL)
                PyErr_Clear(); /* the stream is destroyed, which waits for its work */
            else if (cukit_api.cuEventRecord(t->event, s->handle) == CUDA_SUCCESS &&
                     cukit_api.cuStreamWaitEvent(release, t->event, 0) == CUDA_SUCCESS)
                dev->orphan_work = 1;
            cukit_capture_restore(mode);
        }
        cukit_api.cuEventDestroy(t->event); /* released by the driver once it completes */
        dev->streams[i] = dev->streams[--dev->nstreams];
        return;
    }
}

/* Make `release` wait, using `event`, for the work queued on stream h (NULL: legacy)
 * when that work is unfinished. 0 / -1. */
static int
wait_for(cukit_state *st, CUstream release, CUstream h, CUevent event)
{
    CUresult res = cukit_api.cuStreamQuery(h);
    if (res == CUDA_SUCCESS)
        return 0; /* idle: nothing queued so far can still touch the memory */
    if (res != CUDA_ERROR_NOT_READY)
        return cukit_check_cu(st, res, "cuStreamQuery");
    if (CU_CALL(st, cuEventRecord, (event, h)) < 0 ||
        CU_CALL(st, cuStreamWaitEvent, (release, event, 0)) < 0)
        return -1;
    return 0;
}

CUstream
cukit_device_release_stream(cukit_Device *dev)
{
    cukit_state *st = dev->st;
    if (cukit_device_activate(dev) < 0)
        return NULL;
    if (dev->release_stream == NULL) {
        CUstream h = NULL;
        CUevent ev = dev->legacy_event; /* made earlier by cukit_stream_used, or now */
        if (CU_CALL(st, cuStreamCreateWithPriority, (&h, CU_STREAM_NON_BLOCKING, 0)) < 0)
            return NULL;
        if (ev == NULL && CU_CALL(st, cuEventCreate, (&ev, CU_EVENT_DISABLE_TIMING)) < 0) {
            cukit_api.cuStreamDestroy(h);
            return NULL;
        }
        dev->release_stream = h;
        dev->legacy_event = ev;
    }
    if (wait_for(st, dev->release_stream, NULL, dev->legacy_event) < 0)
        return NULL;
    for (int i = 0; i < dev->nstreams; i++) {
        cukit_tracked_stream *t = &dev->streams[i];
        if (!being_captured(t->stream) &&
            wait_for(st, dev->release_stream, t->stream->handle, t->event) < 0)
            return NULL;
    }
    return dev->release_stream;
}

/* ------------------------------------------------------------------ capture bookkeeping */

int
cukit_capture_begin(cukit_Stream *s)
{
    if ((s->capture = PyList_New(0)) == NULL)
        return -1;
    s->st->runtime->captures++;
    return 0;
}

PyObject *
cukit_capture_end(cukit_Stream *s)
{
    PyObject *kept = s->capture;
    s->capture = NULL;
    s->st->runtime->captures--;
    return kept;
}

int
cukit_capture_keep(cukit_state *st, PyObject *stream, PyObject *what)
{
    if (stream == NULL || stream == Py_None)
        stream = (PyObject *)cukit_stream_current(st, NULL);
    if (stream == NULL || !Py_IS_TYPE(stream, st->runtime->StreamType))
        return 0; /* None, or another library's stream: its captures are its own */
    cukit_Stream *s = (cukit_Stream *)stream;
    return s->capture ? PyList_Append(s->capture, what) : 0;
}

int
cukit_capture_active(cukit_state *st)
{
    return st->runtime->captures > 0;
}

int
cukit_capture_relax(cukit_state *st, int always)
{
    int mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    if ((!always && !cukit_capture_active(st)) || cukit_api.cuThreadExchangeStreamCaptureMode == NULL ||
        cukit_api.cuThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS)
        return -1;
    return mode;
}

void
cukit_capture_restore(int mode)
{
    if (mode >= 0)
        cukit_api.cuThreadExchangeStreamCaptureMode(&mode);
}

int
cukit_stream_capturing(CUstream stream)
{
    int status = CU_STREAM_CAPTURE_STATUS_NONE;
    return stream != NULL && cukit_api.cuStreamIsCapturing &&
           cukit_api.cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS &&
           status != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* ------------------------------------------------------------------ the type */

static cukit_Stream *
stream_alloc(cukit_state *st, PyTypeObject *type, cukit_Device *dev)
{
    cukit_Stream *s = type == st->runtime->StreamType ? PyObject_New(cukit_Stream, type)
                                             : (cukit_Stream *)type->tp_alloc(type, 0);
    if (s == NULL)
        return NULL;
    s->st = st;
    s->device = (cukit_Device *)Py_NewRef(dev);
    s->handle = NULL;
    s->owned = 0;
    s->owner = NULL;
    s->capture = NULL;
    s->maybe_busy = 0;
    /* not yet ordered: blocks handed out before it existed may still be in use */
    s->reuse_seen = 0;
    return s;
}

static PyObject *
stream_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", "priority", "non_blocking", NULL};
    PyObject *device = NULL;
    int priority = 0, non_blocking = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|Oip:Stream", kwlist, &device, &priority,
                                     &non_blocking))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    cukit_Device *dev = cukit_device_arg(st, device);
    if (dev == NULL || cukit_device_activate(dev) < 0)
        return NULL;
    cukit_Stream *s = stream_alloc(st, type, dev);
    if (s == NULL)
        return NULL;
    if (CU_CALL(st, cuStreamCreateWithPriority,
                (&s->handle, non_blocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT,
                 priority)) < 0) {
        s->handle = NULL;
        Py_DECREF(s);
        return NULL;
    }
    s->owned = 1;
    if (track(s) < 0) { /* frees wait for this stream's work */
        Py_DECREF(s);
        return NULL;
    }
    return (PyObject *)s;
}

static void
stream_dealloc(cukit_Stream *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->handle) {
        PyObject *saved = PyErr_GetRaisedException();
        CUresult res = CUDA_ERROR_INVALID_CONTEXT;
        if (cukit_device_activate(self->device) == 0) {
            untrack(self);
            int mode = cukit_capture_relax(self->st, 1); /* dropped during a capture */
            res = self->owned ? cukit_api.cuStreamDestroy(self->handle) : CUDA_SUCCESS;
            cukit_capture_restore(mode);
        }
        else
            PyErr_Clear();
        if (res != CUDA_SUCCESS && !cukit_cu_is_sticky(res) &&
            cukit_check_cu(self->st, res, "cuStreamDestroy") < 0)
            PyErr_WriteUnraisable((PyObject *)tp); /* not self: its count is 0 */
        PyErr_SetRaisedException(saved);
    }
    Py_XDECREF(self->capture);
    Py_XDECREF(self->owner);
    Py_XDECREF(self->device);
    tp->tp_free(self); /* a subclass may allocate differently */
    Py_DECREF(tp);
}

static PyObject *
stream_synchronize(cukit_Stream *self, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = self->st;
    if (cukit_device_activate(self->device) < 0)
        return NULL;
    CU_CALL_NOGIL(st, cuStreamSynchronize, (self->handle));
    return cukit_report_raise(st) < 0 ? NULL : Py_NewRef(Py_None); /* a bad index met */
error:
    return NULL;
}

static PyObject *
stream_query(cukit_Stream *self, PyObject *Py_UNUSED(ignored))
{
    if (cukit_device_activate(self->device) < 0)
        return NULL;
    CUresult res = cukit_api.cuStreamQuery(self->handle);
    if (res == CUDA_ERROR_NOT_READY)
        Py_RETURN_FALSE;
    if (cukit_check_cu(self->st, res, "cuStreamQuery") < 0)
        return NULL;
    Py_RETURN_TRUE;
}

static PyObject *
stream_wait(cukit_Stream *self, PyObject *event)
{
    if (!PyObject_TypeCheck(event, self->st->runtime->EventType)) {
        PyErr_Format(PyExc_TypeError, "wait() takes a cukit.Event, got %s",
                     Py_TYPE(event)->tp_name);
        return NULL;
    }
    if (cukit_device_activate(self->device) < 0 ||
        CU_CALL(self->st, cuStreamWaitEvent, (self->handle, ((cukit_Event *)event)->handle, 0)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Stream.capture(), built by launch/'s graphs. */
static PyObject *
stream_capture(cukit_Stream *self, PyObject *Py_UNUSED(ignored))
{
    if (self->st->hooks.stream_capture == NULL) {
        PyErr_SetString(PyExc_SystemError, "cukit's graphs are not set up");
        return NULL;
    }
    return self->st->hooks.stream_capture((PyObject *)self);
}

/* Stream.from_handle(handle, owner=None, device=None): a cukit.Stream over a stream
 * another library made; cukit never destroys it, and `owner` is kept alive. */
static PyObject *
stream_from_handle(PyObject *cls, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"handle", "owner", "device", NULL};
    PyObject *handle_o, *owner = Py_None, *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:from_handle", kwlist, &handle_o, &owner,
                                     &device))
        return NULL;
    cukit_state *st = cukit_state_of_type((PyTypeObject *)cls);
    unsigned long long v = PyLong_Check(handle_o) ? PyLong_AsUnsignedLongLong(handle_o) : 0;
    if (!PyLong_Check(handle_o) || (v == (unsigned long long)-1 && PyErr_Occurred())) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "Stream.from_handle takes the CUstream as an int (0 to 2**64 - 1), got %R",
                     handle_o);
        return NULL;
    }
    CUstream h = (CUstream)(uintptr_t)v;
    cukit_Device *dev = cukit_device_arg(st, device);
    CUcontext ctx;
    if (dev == NULL || cukit_device_activate(dev) < 0 ||
        check_foreign(st, h, dev, handle_o, &ctx) < 0)
        return NULL;
    cukit_Stream *s = stream_alloc(st, st->runtime->StreamType, dev);
    if (s == NULL)
        return NULL;
    s->handle = h;
    s->owner = owner == Py_None ? NULL : Py_NewRef(owner);
    if (h != NULL && track(s) < 0) {
        Py_DECREF(s);
        return NULL;
    }
    return (PyObject *)s;
}

/* Stream.__enter__(): self becomes this thread's current stream, the one cukit's
 * operations use when given no stream=; the one it replaces is kept for __exit__. */
static PyObject *
stream_enter(cukit_Stream *self, PyObject *Py_UNUSED(ignored))
{
    if (nouter == capouter) {
        int cap = capouter ? 2 * capouter : 8;
        cukit_Stream **grown = PyMem_RawRealloc(outer, (size_t)cap * sizeof *grown);
        if (grown == NULL)
            return PyErr_NoMemory();
        outer = grown;
        capouter = cap;
    }
    outer[nouter++] = current; /* its reference moves to the list */
    current = (cukit_Stream *)Py_NewRef(self);
    return Py_NewRef(self);
}

/* Stream.__exit__(*exc): the stream current before the matching __enter__ is again. */
static PyObject *
stream_exit(cukit_Stream *self, PyObject *Py_UNUSED(args))
{
    if (nouter == 0) {
        PyErr_SetString(PyExc_RuntimeError, "Stream.__exit__ without __enter__ on this "
                        "thread: use `with stream:` (a stream is current per thread)");
        return NULL;
    }
    cukit_Stream *was = current;
    current = outer[--nouter];
    if (nouter == 0) {
        PyMem_RawFree(outer);
        outer = NULL;
        capouter = 0;
    }
    Py_XDECREF(was);
    Py_RETURN_FALSE;
}

/* Stream.use(): self is this thread's current stream from now on (outside any `with`,
 * until another use(); inside one, until it ends). */
static PyObject *
stream_use(cukit_Stream *self, PyObject *Py_UNUSED(ignored))
{
    Py_XSETREF(current, (cukit_Stream *)Py_NewRef(self));
    return Py_NewRef(self);
}

/* Two Stream objects are equal when they are the same queue: one handle on one device
 * (Stream.null each time, two from_handle of one CUstream). */
static PyObject *
stream_richcompare(PyObject *a, PyObject *b, int op)
{
    if ((op != Py_EQ && op != Py_NE) ||
        !PyObject_TypeCheck(b, ((cukit_Stream *)a)->st->runtime->StreamType))
        Py_RETURN_NOTIMPLEMENTED; /* any two Streams, subclasses (cukit.pycuda's) too */
    cukit_Stream *x = (cukit_Stream *)a, *y = (cukit_Stream *)b;
    return PyBool_FromLong((x->handle == y->handle && x->device == y->device) == (op == Py_EQ));
}

static Py_hash_t
stream_hash(cukit_Stream *self)
{
    Py_hash_t h = (Py_hash_t)((uintptr_t)self->handle >> 4) ^ (Py_hash_t)self->device->ordinal;
    return h == -1 ? -2 : h;
}

/* Stream.__cuda_stream__(): (0, handle), the protocol other libraries read. */
static PyObject *
stream_cuda_stream(cukit_Stream *self, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("(iK)", 0, (unsigned long long)(uintptr_t)self->handle);
}

static PyObject *
stream_get_handle(cukit_Stream *self, void *c)
{
    return PyLong_FromVoidPtr(self->handle);
}

static PyObject *
stream_repr(cukit_Stream *self)
{
    if (self->handle == NULL)
        return PyUnicode_FromFormat("<cukit.Stream default on device %d>", self->device->ordinal);
    return PyUnicode_FromFormat("<cukit.Stream %p on device %d>", (void *)self->handle,
                                self->device->ordinal);
}

static PyMemberDef stream_members[] = {
    {"device", Py_T_OBJECT_EX, offsetof(cukit_Stream, device), Py_READONLY, "The Device."},
    {NULL},
};

static PyGetSetDef stream_getset[] = {
    {"handle", (getter)stream_get_handle, NULL, "The CUstream, as an int (0: the default stream)."},
    {NULL},
};

static PyMethodDef stream_methods[] = {
    {"synchronize", (PyCFunction)stream_synchronize, METH_NOARGS,
     "Wait until all work queued on this stream has finished."},
    {"query", (PyCFunction)stream_query, METH_NOARGS, "True when all queued work has finished."},
    {"capture", (PyCFunction)stream_capture, METH_NOARGS,
     "capture() -> Graph: `with stream.capture() as graph:` records the launches, copies "
     "and fills queued on this stream into graph instead of running them."},
    {"wait", (PyCFunction)stream_wait, METH_O,
     "wait(event): later work on this stream waits for the event."},
    {"from_handle", (PyCFunction)(void (*)(void))stream_from_handle,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Stream.from_handle(handle, owner=None, device=None) -> Stream: a stream another library "
     "created, as an int CUstream; cukit never destroys it and keeps `owner` alive."},
    {"__enter__", (PyCFunction)stream_enter, METH_NOARGS,
     "`with stream:` makes it this thread's current stream: cukit's operations given no "
     "stream= (array math, copies, draws, kernel launches, Event.record) queue their work "
     "on it. Work on another device than the stream's goes to that device's default "
     "stream."},
    {"__exit__", (PyCFunction)stream_exit, METH_VARARGS,
     "The stream current before `with` is current again."},
    {"use", (PyCFunction)stream_use, METH_NOARGS,
     "use() -> self: make this the thread's current stream (as `with`, without an end)."},
    {"__cuda_stream__", (PyCFunction)stream_cuda_stream, METH_NOARGS,
     "__cuda_stream__() -> (0, handle): the CUDA stream protocol."},
    {NULL},
};

static PyType_Slot stream_slots[] = {
    {Py_tp_doc, "Stream(device=None, priority=0, non_blocking=True): a queue of device work.\n\n"
                "A non-blocking stream does not synchronize with the default stream."},
    {Py_tp_new, stream_new},
    {Py_tp_dealloc, stream_dealloc},
    {Py_tp_repr, stream_repr},
    {Py_tp_richcompare, stream_richcompare},
    {Py_tp_hash, stream_hash},
    {Py_tp_members, stream_members},
    {Py_tp_getset, stream_getset},
    {Py_tp_methods, stream_methods},
    {0, NULL},
};

static PyType_Spec stream_spec = {
    .name = "cukit.Stream",
    .basicsize = sizeof(cukit_Stream),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_BASETYPE,
    .slots = stream_slots,
};

static PyObject *
mod_default_stream(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", NULL};
    PyObject *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:default_stream", kwlist, &device))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    cukit_Device *dev = cukit_device_arg(st, device);
    return dev ? (PyObject *)stream_alloc(st, st->runtime->StreamType, dev) : NULL;
}

/* cukit.get_current_stream(device=None) -> Stream: this thread's current stream (`with
 * stream:`), or the device's default stream when none is, or when it is another
 * device's. */
static PyObject *
mod_get_current_stream(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", NULL};
    PyObject *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:get_current_stream", kwlist, &device))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    cukit_Device *dev = cukit_device_arg(st, device);
    if (dev == NULL)
        return NULL;
    PyObject *s = (PyObject *)cukit_stream_current(st, dev);
    return s ? Py_NewRef(s) : (PyObject *)stream_alloc(st, st->runtime->StreamType, dev);
}

/* Stream.null: read on the class, the current device's legacy default stream (a
 * descriptor, so that importing cukit touches no device). */
static PyObject *
null_get(PyObject *self, PyObject *obj, PyObject *type)
{
    cukit_state *st = cukit_state_of_type(type ? (PyTypeObject *)type : Py_TYPE(obj));
    cukit_Device *dev = cukit_device_current(st);
    return dev ? (PyObject *)stream_alloc(st, st->runtime->StreamType, dev) : NULL;
}

static PyType_Slot null_slots[] = {
    {Py_tp_doc, "Stream.null: the current device's legacy default stream."},
    {Py_tp_descr_get, null_get}, {0, NULL}};

static PyType_Spec null_spec = {
    .name = "cukit._NullStream",
    .basicsize = sizeof(PyObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = null_slots,
};

static PyMethodDef stream_functions[] = {
    {"get_current_stream", (PyCFunction)(void (*)(void))mod_get_current_stream,
     METH_VARARGS | METH_KEYWORDS,
     "get_current_stream(device=None) -> Stream: the stream this thread made current with "
     "`with stream:` or stream.use(), else the device's default stream."},
    {"default_stream", (PyCFunction)(void (*)(void))mod_default_stream,
     METH_VARARGS | METH_KEYWORDS,
     "default_stream(device=None) -> Stream: the device's legacy default stream, the one "
     "stream=None means."},
    {NULL},
};

int
cukit_stream_setup(PyObject *module, cukit_state *st)
{
    st->runtime->StreamType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &stream_spec, NULL);
    if (st->runtime->StreamType == NULL || PyModule_AddType(module, st->runtime->StreamType) < 0)
        return -1;
    /* Stream.null: one descriptor in the (immutable) type's dict, set before any use */
    PyObject *null_type = PyType_FromModuleAndSpec(module, &null_spec, NULL);
    PyObject *null = null_type ? ((PyTypeObject *)null_type)->tp_alloc((PyTypeObject *)null_type, 0)
                               : NULL;
    Py_XDECREF(null_type); /* the instance keeps its type */
    int rc = null ? PyDict_SetItemString(st->runtime->StreamType->tp_dict, "null", null) : -1;
    Py_XDECREF(null);
    if (rc < 0)
        return -1;
    PyType_Modified(st->runtime->StreamType);
    return PyModule_AddFunctions(module, stream_functions);
}
