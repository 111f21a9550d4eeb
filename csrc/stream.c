/* stream.c - cukit.Stream: ordered queues of device work */
#include "cukit.h"

int
cukit_stream_handle(cukit_state *st, PyObject *obj, const cukit_Device *dev, CUstream *out)
{
    if (obj == NULL || obj == Py_None) {
        *out = NULL; /* the legacy default stream */
        return 0;
    }
    if (!Py_IS_TYPE(obj, st->StreamType)) {
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

static cukit_Stream *
stream_alloc(cukit_state *st, cukit_Device *dev)
{
    cukit_Stream *s = PyObject_New(cukit_Stream, st->StreamType);
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
    cukit_Stream *s = stream_alloc(st, dev);
    if (s == NULL)
        return NULL;
    if (CU_CALL(st, cuStreamCreateWithPriority,
                (&s->handle, non_blocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT,
                 priority)) < 0) {
        s->handle = NULL;
        Py_DECREF(s);
        return NULL;
    }
    if (cukit_mem_track_stream(s) < 0) { /* frees wait for this stream's work */
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
            cukit_mem_untrack_stream(self);
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
    PyObject_Free(self);
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
    if (!Py_IS_TYPE(event, self->st->EventType)) {
        PyErr_Format(PyExc_TypeError, "wait() takes a cukit.Event, got %s",
                     Py_TYPE(event)->tp_name);
        return NULL;
    }
    if (cukit_device_activate(self->device) < 0 ||
        CU_CALL(self->st, cuStreamWaitEvent, (self->handle, ((cukit_Event *)event)->handle, 0)) < 0)
        return NULL;
    Py_RETURN_NONE;
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
    {"capture", (PyCFunction)cukit_stream_capture, METH_NOARGS,
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
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
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
    return dev ? (PyObject *)stream_alloc(st, dev) : NULL;
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
