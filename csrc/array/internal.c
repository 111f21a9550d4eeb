/* internal.c - cukit._copy_htod and _copy_dtoh: the transfer path on its own, for tests, benchmarks and cukit.pycuda's memcpy */
#include "array/array.h"

/* The device memory of a cukit.Array or Buffer (or subclass): address, size,
 * device; or an int address, *n left as the caller set it (the host side's size)
 * and the current device. 0 / -1. */
static int
device_side(cukit_state *st, PyObject *obj, CUdeviceptr *ptr, size_t *n, cukit_Device **dev)
{
    cukit_Buffer *b;
    if (Py_IS_TYPE(obj, st->ArrayType)) {
        cukit_Array *a = (cukit_Array *)obj;
        if (!cukit_array_live(a))
            return cukit_freed_error();
        if (!(a->flags & CUKIT_ARRAY_C_CONTIG)) {
            PyErr_SetString(PyExc_ValueError, "the device side must be C-contiguous");
            return -1;
        }
        *ptr = cukit_array_ptr(a);
        *n = (size_t)a->nbytes;
        *dev = a->device;
        return 0;
    }
    else if (PyObject_TypeCheck(obj, st->memory->BufferType)) {
        b = (cukit_Buffer *)obj;
        *ptr = b->ptr;
        *n = b->size;
    }
    else if (PyLong_Check(obj) && !PyBool_Check(obj)) {
        *ptr = PyLong_AsUnsignedLongLong(obj);
        if (*ptr == (CUdeviceptr)-1 && PyErr_Occurred())
            return -1;
        if (*ptr == 0) {
            PyErr_SetString(PyExc_ValueError, "the device address is 0 (NULL)");
            return -1;
        }
        *dev = cukit_device_arg(st, NULL);
        return *dev ? 0 : -1;
    }
    else {
        PyErr_Format(PyExc_TypeError, "expected a cukit.Array, a cukit.Buffer or an int address, got %s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (b->ptr == 0)
        return cukit_freed_error();
    *dev = b->device;
    return 0;
}

/* Shared by _copy_htod and _copy_dtoh: check sizes, pick the stream, copy. */
static PyObject *
hook_copy(PyObject *m, PyObject *dev_obj, PyObject *host_obj, PyObject *stream, int sync,
          int to_device)
{
    cukit_state *st = PyModule_GetState(m);
    CUdeviceptr ptr = 0;
    size_t n = 0;
    cukit_Device *dev = NULL;
    CUstream h;
    Py_buffer view;
    if (PyObject_GetBuffer(host_obj, &view,
                           to_device ? PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return NULL;
    n = (size_t)view.len; /* an int address takes the host side's size */
    if (device_side(st, dev_obj, &ptr, &n, &dev) < 0 ||
        cukit_stream_handle(st, stream, dev, &h) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int rc = -1;
    if ((size_t)view.len != n)
        PyErr_Format(PyExc_ValueError, "the host side holds %zd bytes but the device side %zu",
                     view.len, n);
    else if (cukit_device_activate(dev) == 0)
        rc = to_device ? cukit_copy_htod(st, ptr, view.buf, n, h, sync)
                       : cukit_copy_dtoh(st, view.buf, ptr, n, h, sync);
    PyBuffer_Release(&view);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
mod_copy_htod(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dst", "src", "stream", "sync", NULL};
    PyObject *dst, *src, *stream = Py_None;
    int sync = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|Op:_copy_htod", kwlist, &dst, &src,
                                     &stream, &sync))
        return NULL;
    return hook_copy(m, dst, src, stream, sync, 1);
}

static PyObject *
mod_copy_dtoh(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dst", "src", "stream", "sync", NULL};
    PyObject *dst, *src, *stream = Py_None;
    int sync = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|Op:_copy_dtoh", kwlist, &dst, &src,
                                     &stream, &sync))
        return NULL;
    return hook_copy(m, src, dst, stream, sync, 0);
}

static PyMethodDef internal_functions[] = {
    {"_copy_htod", (PyCFunction)(void (*)(void))mod_copy_htod, METH_VARARGS | METH_KEYWORDS,
     "Internal, for tests, benchmarks and cukit.pycuda: _copy_htod(dst, src, stream=None, "
     "sync=True) copies the bytes of host buffer src into cukit.Array or Buffer dst (or to an "
     "int device address, len(src) bytes) through cukit's transfer path."},
    {"_copy_dtoh", (PyCFunction)(void (*)(void))mod_copy_dtoh, METH_VARARGS | METH_KEYWORDS,
     "Internal: _copy_dtoh(dst, src, stream=None, sync=True), device to host likewise."},
    {NULL},
};

int
cukit_internal_setup(PyObject *module, cukit_state *st)
{
    return PyModule_AddFunctions(module, internal_functions);
}
