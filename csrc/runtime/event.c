/* event.c - cukit.Event: markers in a stream, for ordering and timing */
#include "runtime/runtime.h"

static PyObject *
event_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"timing", "blocking", "device", NULL};
    int timing = 1, blocking = 0;
    PyObject *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|ppO:Event", kwlist, &timing, &blocking,
                                     &device))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    cukit_Device *dev = cukit_device_arg(st, device);
    if (dev == NULL || cukit_device_activate(dev) < 0)
        return NULL;
    cukit_Event *e = type == st->runtime->EventType ? PyObject_New(cukit_Event, type)
                                           : (cukit_Event *)type->tp_alloc(type, 0);
    if (e == NULL)
        return NULL;
    e->st = st;
    e->device = (cukit_Device *)Py_NewRef(dev);
    e->handle = NULL;
    e->timing = timing;
    e->recorded = 0;
    unsigned int flags = (timing ? 0 : CU_EVENT_DISABLE_TIMING) | (blocking ? CU_EVENT_BLOCKING_SYNC : 0);
    if (CU_CALL(st, cuEventCreate, (&e->handle, flags)) < 0) {
        e->handle = NULL;
        Py_DECREF(e);
        return NULL;
    }
    return (PyObject *)e;
}

static void
event_dealloc(cukit_Event *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->handle) {
        PyObject *saved = PyErr_GetRaisedException();
        CUresult res = CUDA_ERROR_INVALID_CONTEXT;
        if (cukit_device_activate(self->device) == 0)
            res = cukit_api.cuEventDestroy(self->handle);
        else
            PyErr_Clear();
        if (res != CUDA_SUCCESS && !cukit_cu_is_sticky(res) &&
            cukit_check_cu(self->st, res, "cuEventDestroy") < 0)
            PyErr_WriteUnraisable((PyObject *)tp); /* not self: its count is 0 */
        PyErr_SetRaisedException(saved);
    }
    Py_XDECREF(self->device);
    tp->tp_free(self); /* a subclass may allocate differently */
    Py_DECREF(tp);
}

static PyObject *
event_record(cukit_Event *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", NULL};
    PyObject *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:record", kwlist, &stream))
        return NULL;
    CUstream h;
    if (cukit_stream_handle(self->st, stream, self->device, &h) < 0 ||
        cukit_device_activate(self->device) < 0 ||
        CU_CALL(self->st, cuEventRecord, (self->handle, h)) < 0)
        return NULL;
    self->recorded = 1;
    return Py_NewRef(self);
}

static PyObject *
event_synchronize(cukit_Event *self, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = self->st;
    if (cukit_device_activate(self->device) < 0)
        return NULL;
    CU_CALL_NOGIL(st, cuEventSynchronize, (self->handle));
    return cukit_report_raise(st) < 0 ? NULL : Py_NewRef(Py_None); /* a bad index met */
error:
    return NULL;
}

static PyObject *
event_query(cukit_Event *self, PyObject *Py_UNUSED(ignored))
{
    if (cukit_device_activate(self->device) < 0)
        return NULL;
    CUresult res = cukit_api.cuEventQuery(self->handle);
    if (res == CUDA_ERROR_NOT_READY)
        Py_RETURN_FALSE;
    if (cukit_check_cu(self->st, res, "cuEventQuery") < 0)
        return NULL;
    Py_RETURN_TRUE;
}

static PyObject *
event_elapsed_time(cukit_Event *self, PyObject *end_o)
{
    cukit_state *st = self->st;
    if (!PyObject_TypeCheck(end_o, st->runtime->EventType)) {
        PyErr_Format(PyExc_TypeError, "elapsed_time() takes the end cukit.Event, got %s",
                     Py_TYPE(end_o)->tp_name);
        return NULL;
    }
    cukit_Event *end = (cukit_Event *)end_o;
    if (!self->timing || !end->timing) {
        PyErr_SetString(PyExc_ValueError,
                        "elapsed_time() needs both events made with timing=True (the default)");
        return NULL;
    }
    if (!self->recorded || !end->recorded) {
        PyErr_SetString(PyExc_ValueError,
                        "elapsed_time() needs both events recorded: call start.record() and "
                        "end.record() around the work first");
        return NULL;
    }
    float ms = 0;
    if (cukit_device_activate(self->device) < 0)
        return NULL;
    /* Wait for the end marker so the answer is ready rather than NOT_READY. */
    CU_CALL_NOGIL(st, cuEventSynchronize, (end->handle));
    if (CU_CALL(st, cuEventElapsedTime, (&ms, self->handle, end->handle)) < 0)
        return NULL;
    return PyFloat_FromDouble(ms);
error:
    return NULL;
}

static PyObject *
event_get_handle(cukit_Event *self, void *c)
{
    return PyLong_FromVoidPtr(self->handle);
}

static PyMemberDef event_members[] = {
    {"device", Py_T_OBJECT_EX, offsetof(cukit_Event, device), Py_READONLY, "The Device."},
    {NULL},
};

static PyGetSetDef event_getset[] = {
    {"handle", (getter)event_get_handle, NULL, "The CUevent, as an int."},
    {NULL},
};

static PyMethodDef event_methods[] = {
    {"record", (PyCFunction)(void (*)(void))event_record, METH_VARARGS | METH_KEYWORDS,
     "record(stream=None) -> self: mark this point in the stream."},
    {"synchronize", (PyCFunction)event_synchronize, METH_NOARGS,
     "Wait until the work before the recorded point has finished."},
    {"query", (PyCFunction)event_query, METH_NOARGS, "True once the recorded point is reached."},
    {"elapsed_time", (PyCFunction)event_elapsed_time, METH_O,
     "start.elapsed_time(end) -> float: milliseconds between two recorded events."},
    {NULL},
};

static PyType_Slot event_slots[] = {
    {Py_tp_doc, "Event(timing=True, blocking=False, device=None): a marker in a stream."},
    {Py_tp_new, event_new},
    {Py_tp_dealloc, event_dealloc},
    {Py_tp_members, event_members},
    {Py_tp_getset, event_getset},
    {Py_tp_methods, event_methods},
    {0, NULL},
};

static PyType_Spec event_spec = {
    .name = "cukit.Event",
    .basicsize = sizeof(cukit_Event),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_BASETYPE,
    .slots = event_slots,
};

int
cukit_event_setup(PyObject *module, cukit_state *st)
{
    st->runtime->EventType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &event_spec, NULL);
    if (st->runtime->EventType == NULL)
        return -1;
    return PyModule_AddType(module, st->runtime->EventType);
}
