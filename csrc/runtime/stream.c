/* stream.c - cukit.Stream: ordered queues of device work, what frees wait for, and capture bookkeeping */
#include "runtime/runtime.h"

int
cukit_stream_handle(cukit_state *st, PyObject *obj, const cukit_Device *dev, CUstream *out)
{
    if (obj == NULL || obj == Py_None) {
        *out = NULL; /* the legacy default stream */
        return 0;
    }
    if (!Py_IS_TYPE(obj, st->StreamType) && !PyObject_TypeCheck(obj, st->StreamType)) {
        PyErr_Format(PyExc_TypeError, "stream must be a cukit.Stream or None, got %s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    cukit_Stream *s = (cukit_Stream *)obj;
    if (dev && s->device != dev) {
        PyErr_Format(PyExc_ValueError, "the stream belongs to device %d, not device %d",
                     s->device->ordinal, dev->ordinal);
        return -1;
    }
    *out = s->handle;
    return 0;
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
        if (s->capture == NULL && cukit_api.cuStreamQuery(s->handle) == CUDA_ERROR_NOT_READY) {
            CUstream release = cukit_device_release_stream(dev);
            if (release == NULL)
                PyErr_Clear(); /* the stream is destroyed, which waits for its work */
            else if (cukit_api.cuEventRecord(t->event, s->handle) == CUDA_SUCCESS)
                cukit_api.cuStreamWaitEvent(release, t->event, 0);
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
        CUevent ev = NULL;
        if (CU_CALL(st, cuStreamCreateWithPriority, (&h, CU_STREAM_NON_BLOCKING, 0)) < 0)
            return NULL;
        if (CU_CALL(st, cuEventCreate, (&ev, CU_EVENT_DISABLE_TIMING)) < 0) {
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
        if (t->stream->capture == NULL &&
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
    s->st->captures++;
    return 0;
}

PyObject *
cukit_capture_end(cukit_Stream *s)
{
    PyObject *kept = s->capture;
    s->capture = NULL;
    s->st->captures--;
    return kept;
}

int
cukit_capture_keep(PyObject *stream, PyObject *what)
{
    if (stream == NULL || stream == Py_None)
        return 0;
    cukit_Stream *s = (cukit_Stream *)stream;
    return s->capture ? PyList_Append(s->capture, what) : 0;
}

int
cukit_capture_active(cukit_state *st)
{
    return st->captures > 0;
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
    cukit_Stream *s = type == st->StreamType ? PyObject_New(cukit_Stream, type)
                                             : (cukit_Stream *)type->tp_alloc(type, 0);
    if (s == NULL)
        return NULL;
    s->st = st;
    s->device = (cukit_Device *)Py_NewRef(dev);
    s->handle = NULL;
    s->capture = NULL;
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
            res = cukit_api.cuStreamDestroy(self->handle);
        }
        else
            PyErr_Clear();
        if (res != CUDA_SUCCESS && !cukit_cu_is_sticky(res) &&
            cukit_check_cu(self->st, res, "cuStreamDestroy") < 0)
            PyErr_WriteUnraisable((PyObject *)self);
        PyErr_SetRaisedException(saved);
    }
    Py_XDECREF(self->capture);
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
    Py_RETURN_NONE;
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
    if (!PyObject_TypeCheck(event, self->st->EventType)) {
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
    {NULL},
};

static PyType_Slot stream_slots[] = {
    {Py_tp_doc, "Stream(device=None, priority=0, non_blocking=True): a queue of device work.\n\n"
                "A non-blocking stream does not synchronize with the default stream."},
    {Py_tp_new, stream_new},
    {Py_tp_dealloc, stream_dealloc},
    {Py_tp_repr, stream_repr},
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
    return dev ? (PyObject *)stream_alloc(st, st->StreamType, dev) : NULL;
}

static PyMethodDef stream_functions[] = {
    {"default_stream", (PyCFunction)(void (*)(void))mod_default_stream,
     METH_VARARGS | METH_KEYWORDS,
     "default_stream(device=None) -> Stream: the device's legacy default stream, the one "
     "stream=None means."},
    {NULL},
};

int
cukit_stream_setup(PyObject *module, cukit_state *st)
{
    st->StreamType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &stream_spec, NULL);
    if (st->StreamType == NULL || PyModule_AddType(module, st->StreamType) < 0)
        return -1;
    return PyModule_AddFunctions(module, stream_functions);
}
