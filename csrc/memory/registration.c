/* registration.c - cukit.register and cukit.Registration: page-locking memory the program already has */
#include "memory/memory.h"

/* ------------------------------------------------------------------ Registration */

typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device; /* strong ref: the context that registered the memory */
    PyObject *obj;        /* strong ref: the array whose memory is page-locked */
    Py_buffer view;       /* held while registered, so the memory cannot move or go */
    int registered;       /* 1 until unregister() or the end of the with block */
} cukit_Registration;

/* Unregister now, after the device has finished any copy from the memory; idempotent.
 * 0 / -1. */
static int
registration_release(cukit_Registration *r)
{
    if (!r->registered)
        return 0;
    r->registered = 0;
    void *p = r->view.buf;
    size_t len = (size_t)r->view.len;
    CUresult res = CUDA_SUCCESS;
    const char *call = "cuCtxSynchronize";
    int rc = cukit_device_activate(r->device);
    if (rc == 0 && len > 0) {
        Py_BEGIN_ALLOW_THREADS
        res = cukit_api.cuCtxSynchronize();
        if (res == CUDA_SUCCESS) {
            call = "cuMemHostUnregister";
            res = cukit_api.cuMemHostUnregister(p);
        }
        Py_END_ALLOW_THREADS
        rc = cukit_check_cu(r->st, res, call);
    }
    PyBuffer_Release(&r->view);
    return rc;
}

static PyObject *
mod_register(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"array", "device", NULL};
    PyObject *obj, *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:register", kwlist, &obj, &device))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    if (!PyObject_CheckBuffer(obj)) {
        PyErr_Format(PyExc_TypeError, "register() takes a numpy array (or another object with "
                     "the buffer protocol), got %s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    Py_buffer probe; /* the layout first, so that the error needs no device */
    if (PyObject_GetBuffer(obj, &probe, PyBUF_C_CONTIGUOUS) < 0) {
        if (PyErr_ExceptionMatches(PyExc_BufferError) || PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError,
                            "register() needs a C-contiguous array, and this one is a strided "
                            "view: register the array it was sliced from, or a contiguous "
                            "copy (numpy.ascontiguousarray(x))");
        }
        return NULL;
    }
    PyBuffer_Release(&probe);
    cukit_Device *dev = cukit_device_arg(st, device);
    if (dev == NULL || cukit_device_activate(dev) < 0)
        return NULL;
    cukit_Registration *r = PyObject_New(cukit_Registration, st->memory->RegistrationType);
    if (r == NULL)
        return NULL;
    r->st = st;
    r->device = (cukit_Device *)Py_NewRef(dev);
    r->obj = Py_NewRef(obj);
    r->registered = 0;
    if (PyObject_GetBuffer(obj, &r->view, PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(r);
        return NULL;
    }
    r->registered = 1; /* owns the view from here */
    if (r->view.len == 0)
        return (PyObject *)r; /* nothing to lock; the driver refuses zero bytes */
    void *p = r->view.buf;
    size_t len = (size_t)r->view.len;
    CUresult res;
    Py_BEGIN_ALLOW_THREADS
    res = cukit_api.cuMemHostRegister(p, len, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
    Py_END_ALLOW_THREADS
    if (res != CUDA_SUCCESS) {
        PyBuffer_Release(&r->view);
        r->registered = 0;
        Py_DECREF(r);
        if (res == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
            PyObject *msg = PyUnicode_FromString(
                "cuMemHostRegister failed: CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED (712): "
                "this memory, or memory on one of the same pages, is already page-locked (by "
                "another cukit.register(), or it is cukit pinned memory)");
            if (msg)
                cukit_raise(st, CUKIT_EXC_INVALID_VALUE, res,
                            "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "cuMemHostRegister", msg);
            Py_XDECREF(msg);
            return NULL;
        }
        cukit_check_cu(st, res, "cuMemHostRegister");
        return NULL;
    }
    return (PyObject *)r;
}

static void
registration_dealloc(cukit_Registration *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->registered) {
        PyObject *saved = PyErr_GetRaisedException();
        if (registration_release(self) < 0)
            PyErr_WriteUnraisable((PyObject *)tp); /* not self: its count is 0 */
        PyErr_SetRaisedException(saved);
    }
    Py_XDECREF(self->obj);
    Py_XDECREF(self->device);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *
registration_enter(cukit_Registration *self, PyObject *Py_UNUSED(ignored))
{
    return Py_NewRef(self->obj);
}

static PyObject *
registration_exit(cukit_Registration *self, PyObject *args)
{
    if (registration_release(self) < 0)
        return NULL;
    Py_RETURN_FALSE;
}

static PyObject *
registration_unregister(cukit_Registration *self, PyObject *Py_UNUSED(ignored))
{
    if (registration_release(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
registration_get_registered(cukit_Registration *self, void *c)
{
    return PyBool_FromLong(self->registered);
}

/* device_ptr: the address kernels use for the registered memory (it is registered
 * DEVICEMAP), from cuMemHostGetDevicePointer. */
static PyObject *
registration_get_device_ptr(cukit_Registration *self, void *c)
{
    if (!self->registered)
        return PyErr_Format(PyExc_ValueError, "the memory was unregistered: it has no device "
                            "address any more; register it again with cukit.register(array)");
    CUdeviceptr d = 0;
    if (self->view.len == 0)
        return PyLong_FromLong(0);
    if (cukit_device_activate(self->device) < 0 ||
        CU_CALL(self->st, cuMemHostGetDevicePointer, (&d, self->view.buf, 0)) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(d);
}

static PyObject *
registration_repr(cukit_Registration *self)
{
    return PyUnicode_FromFormat("<cukit.Registration of %zd bytes%s>",
                                self->registered ? self->view.len : (Py_ssize_t)0,
                                self->registered ? "" : ", unregistered");
}

static PyMemberDef registration_members[] = {
    {"array", Py_T_OBJECT_EX, offsetof(cukit_Registration, obj), Py_READONLY,
     "The array whose memory is page-locked."},
    {NULL},
};

static PyGetSetDef registration_getset[] = {
    {"registered", (getter)registration_get_registered, NULL,
     "True until unregister() or the end of the with block."},
    {"device_ptr", (getter)registration_get_device_ptr, NULL,
     "The address kernels use for the same memory (mapped: no copy), as an int."},
    {NULL},
};

static PyMethodDef registration_methods[] = {
    {"__enter__", (PyCFunction)registration_enter, METH_NOARGS, "Returns the array."},
    {"__exit__", (PyCFunction)registration_exit, METH_VARARGS, "Unregisters the memory."},
    {"unregister", (PyCFunction)registration_unregister, METH_NOARGS,
     "Unlock the memory now (after the device's pending work). Safe to call twice."},
    {NULL},
};

static PyType_Slot registration_slots[] = {
    {Py_tp_doc, "Registration: an existing array's memory, page-locked by cukit.register(array). "
                "Use it as a context manager; leaving the block (or unregister(), or the "
                "object's end) unlocks the memory."},
    {Py_tp_dealloc, registration_dealloc},
    {Py_tp_repr, registration_repr},
    {Py_tp_members, registration_members},
    {Py_tp_getset, registration_getset},
    {Py_tp_methods, registration_methods},
    {0, NULL},
};

static PyType_Spec registration_spec = {
    .name = "cukit.Registration",
    .basicsize = sizeof(cukit_Registration),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = registration_slots,
};

static PyMethodDef registration_functions[] = {
    {"register", (PyCFunction)(void (*)(void))mod_register, METH_VARARGS | METH_KEYWORDS,
     "register(array, device=None) -> Registration: page-lock an existing C-contiguous array; "
     "`with cukit.register(a):` unlocks it at the end of the block."},
    {NULL},
};

int
cukit_registration_setup(PyObject *module, cukit_state *st)
{
    st->memory->RegistrationType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &registration_spec, NULL);
    if (st->memory->RegistrationType == NULL || PyModule_AddType(module, st->memory->RegistrationType) < 0)
        return -1;
    return PyModule_AddFunctions(module, registration_functions);
}
