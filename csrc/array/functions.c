/* functions.c - the array module functions: empty, zeros, *_like, frombuffer, to_device, copy */
#include "array/impl.h"

#include <string.h>

/* ------------------------------------------------------------------ module functions */

PyObject *
cukit_array_shaped(cukit_state *st, PyObject *shape_o, PyObject *dtype_o, PyObject *device,
                   int zero)
{
    Py_ssize_t shape[CUKIT_MAXDIM];
    int ndim;
    if (cukit_parse_shape(shape_o, shape, &ndim, 0) < 0)
        return NULL;
    PyObject *dtype = cukit_resolve_dtype(st, dtype_o);
    if (dtype == NULL)
        return NULL;
    cukit_Device *dev = cukit_device_arg(st, device);
    cukit_Array *a = dev ? cukit_array_create(st, dev, ndim, shape, dtype) : NULL;
    Py_DECREF(dtype);
    CUstream h; /* the current stream (`with stream:`), else the legacy one */
    if (a && zero && a->nbytes > 0 &&
        (cukit_stream_handle(st, Py_None, dev, &h) < 0 || cukit_device_activate(dev) < 0 ||
         (h ? CU_CALL(st, cuMemsetD8Async, (cukit_array_ptr(a), 0, (size_t)a->nbytes, h))
            : CU_CALL(st, cuMemsetD8, (cukit_array_ptr(a), 0, (size_t)a->nbytes))) < 0))
        Py_CLEAR(a);
    return (PyObject *)a;
}

static PyObject *
mod_empty(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "dtype", "device", NULL};
    PyObject *shape, *dtype = NULL, *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:empty", kwlist, &shape, &dtype, &device))
        return NULL;
    return cukit_array_shaped(PyModule_GetState(m), shape, dtype ? dtype : (PyObject *)&PyFloat_Type, device, 0);
}

static PyObject *
mod_zeros(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "dtype", "device", NULL};
    PyObject *shape, *dtype = NULL, *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:zeros", kwlist, &shape, &dtype, &device))
        return NULL;
    return cukit_array_shaped(PyModule_GetState(m), shape, dtype ? dtype : (PyObject *)&PyFloat_Type, device, 1);
}

static PyObject *
like(PyObject *m, PyObject *args, PyObject *kwargs, int zero)
{
    static char *kwlist[] = {"a", "dtype", "device", NULL};
    PyObject *a, *dtype = NULL, *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, zero ? "O|OO:zeros_like" : "O|OO:empty_like",
                                     kwlist, &a, &dtype, &device))
        return NULL;
    PyObject *shape = PyObject_GetAttrString(a, "shape");
    PyObject *dt = dtype && dtype != Py_None ? Py_NewRef(dtype) : PyObject_GetAttrString(a, "dtype");
    if (device == NULL && Py_IS_TYPE(a, ((cukit_state *)PyModule_GetState(m))->ArrayType))
        device = (PyObject *)((cukit_Array *)a)->device;
    PyObject *out = shape && dt ? cukit_array_shaped(PyModule_GetState(m), shape, dt, device, zero) : NULL;
    Py_XDECREF(shape);
    Py_XDECREF(dt);
    return out;
}

static PyObject *
mod_empty_like(PyObject *m, PyObject *args, PyObject *kwargs)
{
    return like(m, args, kwargs, 0);
}

static PyObject *
mod_zeros_like(PyObject *m, PyObject *args, PyObject *kwargs)
{
    return like(m, args, kwargs, 1);
}

static PyObject *
mod_frombuffer(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"buffer", "dtype", "shape", "strides", "offset", NULL};
    PyObject *buf_o, *dtype_o = (PyObject *)&PyFloat_Type, *shape_o = Py_None, *strides_o = Py_None;
    Py_ssize_t offset = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOn:frombuffer", kwlist, &buf_o, &dtype_o,
                                     &shape_o, &strides_o, &offset))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    if (!PyObject_TypeCheck(buf_o, st->memory->BufferType)) {
        PyErr_Format(PyExc_TypeError, "frombuffer() takes a cukit.Buffer, got %s",
                     Py_TYPE(buf_o)->tp_name);
        return NULL;
    }
    cukit_Buffer *buf = (cukit_Buffer *)buf_o;
    PyObject *dtype = cukit_resolve_dtype(st, dtype_o);
    if (dtype == NULL)
        return NULL;
    cukit_Array *a = NULL;
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    int ndim = 1, nstrides = -1;
    if (shape_o == Py_None) {
        PyObject *isz = PyObject_GetAttrString(dtype, "itemsize");
        Py_ssize_t itemsize = isz ? PyLong_AsSsize_t(isz) : -1;
        Py_XDECREF(isz);
        if (itemsize <= 0 || offset < 0 || (size_t)offset > buf->size) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "frombuffer(): offset outside the buffer");
            goto done;
        }
        shape[0] = (Py_ssize_t)((buf->size - (size_t)offset) / (size_t)itemsize);
    }
    else if (cukit_parse_shape(shape_o, shape, &ndim, 0) < 0) {
        goto done;
    }
    if (strides_o != Py_None) {
        PyObject *t = PySequence_Tuple(strides_o);
        if (t == NULL)
            goto done;
        nstrides = (int)PyTuple_GET_SIZE(t);
        for (int i = 0; i < nstrides && i < CUKIT_MAXDIM; i++)
            strides[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, i));
        Py_DECREF(t);
        if (PyErr_Occurred())
            goto done;
        if (nstrides != ndim) {
            PyErr_Format(PyExc_ValueError, "frombuffer(): %d strides for %d dimensions", nstrides,
                         ndim);
            goto done;
        }
    }
    a = cukit_array_over_buffer(st, buf, dtype, ndim, shape, nstrides < 0 ? NULL : strides, offset);
done:
    Py_DECREF(dtype);
    return (PyObject *)a;
}

/* to_device's work: host data (any layout, converted by numpy) -> a new array.
 * With a stream (h, sync=0) the host data must already be what is copied. */
static PyObject *
from_host(cukit_state *st, PyObject *obj, PyObject *dtype, PyObject *device, PyObject *stream)
{
    if (cukit_numpy(st) < 0)
        return NULL;
    int sync = stream == NULL || stream == Py_None;
    PyObject *host = cukit_as_host_array(st, obj, dtype);
    if (host == NULL)
        return NULL;
    /* Device code reads native byte order: swap a big-endian array once, here. */
    PyObject *dt = PyObject_GetAttrString(host, "dtype");
    PyObject *native = dt ? PyObject_GetAttrString(dt, "isnative") : NULL;
    if (native == Py_False) {
        PyObject *swapped_dt = PyObject_CallMethod(dt, "newbyteorder", "s", "=");
        PyObject *swapped = swapped_dt ? PyObject_CallMethod(host, "astype", "O", swapped_dt) : NULL;
        Py_XDECREF(swapped_dt);
        Py_SETREF(host, swapped);
        Py_SETREF(dt, host ? PyObject_GetAttrString(host, "dtype") : NULL);
    }
    Py_XDECREF(native);
    PyObject *checked = dt ? cukit_resolve_dtype(st, dt) : NULL;
    Py_XDECREF(dt);
    cukit_Array *a = NULL;
    Py_buffer view;
    if (checked && host && !sync && host != obj)
        PyErr_Format(PyExc_ValueError, cukit_async_host_msg, "to_device()", checked);
    else if (checked && host &&
             PyObject_GetBuffer(host, &view, PyBUF_C_CONTIGUOUS | PyBUF_ND) == 0) {
        cukit_Device *dev = cukit_device_arg(st, device);
        Py_ssize_t shape[CUKIT_MAXDIM];
        CUstream h = NULL;
        for (int i = 0; i < view.ndim && i < CUKIT_MAXDIM; i++)
            shape[i] = view.shape[i];
        if (view.ndim > CUKIT_MAXDIM)
            PyErr_Format(PyExc_ValueError, "cukit arrays have at most %d dimensions", CUKIT_MAXDIM);
        else if (dev)
            a = cukit_array_create(st, dev, view.ndim, shape, checked);
        if (a && (cukit_array_stream(a, sync ? Py_None : stream, host, &h) < 0 ||
                  cukit_array_host_transfer(a, view.buf, h, sync, 1) < 0))
            Py_CLEAR(a);
        PyBuffer_Release(&view);
    }
    Py_XDECREF(checked);
    Py_XDECREF(host);
    return (PyObject *)a;
}

PyObject *
cukit_array_from_host(cukit_state *st, PyObject *obj, PyObject *dtype, PyObject *device)
{
    return from_host(st, obj, dtype, device, NULL);
}

static PyObject *
mod_to_device(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"obj", "dtype", "device", "stream", NULL};
    PyObject *obj, *dtype = NULL, *device = NULL, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOO:to_device", kwlist, &obj, &dtype,
                                     &device, &stream))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    if (Py_IS_TYPE(obj, st->ArrayType)) {
        cukit_Array *a = (cukit_Array *)obj;
        cukit_Device *dev = device && device != Py_None ? cukit_device_arg(st, device) : a->device;
        if (dev == NULL)
            return NULL;
        if (cukit_array_check_dtype(a, dtype, "to_device()") < 0)
            return NULL;
        cukit_Array *out = cukit_array_create(st, dev, a->ndim, a->shape, a->dtype);
        if (out && cukit_array_copy_into(out, a, stream, "to_device()") < 0)
            Py_CLEAR(out);
        return (PyObject *)out;
    }
    return from_host(st, obj, dtype, device, stream);
}

static PyObject *
mod_copyto(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dst", "src", "stream", NULL};
    PyObject *dst_o, *src_o, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:copyto", kwlist, &dst_o, &src_o, &stream))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    int dst_dev = Py_IS_TYPE(dst_o, st->ArrayType), src_dev = Py_IS_TYPE(src_o, st->ArrayType);
    if (dst_dev && !src_dev) {
        if (cukit_array_set_from_host((cukit_Array *)dst_o, src_o, stream, "copyto(dst, src)") < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    if (src_dev && !dst_dev) {
        PyObject *a = PyTuple_New(0), *kw = Py_BuildValue("{sOsO}", "out", dst_o, "stream", stream);
        PyObject *r = a && kw ? cukit_array_get((cukit_Array *)src_o, a, kw) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(kw);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
        Py_RETURN_NONE;
    }
    if (!dst_dev) {
        PyErr_SetString(PyExc_TypeError, "copyto(dst, src): one of them must be a cukit.Array");
        return NULL;
    }
    if (cukit_array_copy_into((cukit_Array *)dst_o, (cukit_Array *)src_o, stream, "copyto()") < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *fortran_copy(cukit_Array *a);

/* copy(a, order='K'): numpy's copy, a new device array (C order; F order for
 * order='F', or 'A'/'K' of a Fortran-contiguous array); host data is copied over. */
static PyObject *
mod_copy(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "order", NULL};
    PyObject *obj;
    const char *order = "K";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|s:copy", kwlist, &obj, &order))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    int f;
    if (strcmp(order, "C") == 0)
        f = 0;
    else if (strcmp(order, "F") == 0)
        f = 1;
    else if (strcmp(order, "A") == 0 || strcmp(order, "K") == 0)
        f = -1;
    else
        return PyErr_Format(PyExc_ValueError, "order must be one of 'C', 'F', 'A', or 'K' (got "
                            "'%s')", order);
    if (!Py_IS_TYPE(obj, st->ArrayType)) {
        PyObject *c = cukit_array_from_host(st, obj, NULL, NULL);
        if (c == NULL || f != 1)
            return c;
        PyObject *r = fortran_copy((cukit_Array *)c);
        Py_DECREF(c);
        return r;
    }
    cukit_Array *a = (cukit_Array *)obj;
    if (cukit_array_check_live(a) < 0)
        return NULL;
    if (f < 0)
        f = (a->flags & CUKIT_ARRAY_F_CONTIG) && !(a->flags & CUKIT_ARRAY_C_CONTIG);
    if (!f)
        return (PyObject *)cukit_array_copy(a);
    return fortran_copy(a);
}

/* A Fortran-ordered copy of a. New ref or NULL. */
static PyObject *
fortran_copy(cukit_Array *a)
{
    /* a C-order copy of the reversed view, seen reversed again */
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    for (int i = 0; i < a->ndim; i++) {
        shape[i] = a->shape[a->ndim - 1 - i];
        strides[i] = a->strides[a->ndim - 1 - i];
    }
    cukit_Array *rev = cukit_array_view(a, a->offset, a->ndim, shape, strides);
    cukit_Array *c = rev ? cukit_array_copy(rev) : NULL;
    Py_XDECREF(rev);
    if (c == NULL)
        return NULL;
    for (int i = 0; i < a->ndim; i++) {
        shape[i] = c->shape[a->ndim - 1 - i];
        strides[i] = c->strides[a->ndim - 1 - i];
    }
    cukit_Array *out = cukit_array_view(c, c->offset, a->ndim, shape, strides);
    Py_DECREF(c);
    return (PyObject *)out;
}

static PyMethodDef array_functions[] = {
    {"copy", (PyCFunction)(void (*)(void))mod_copy, METH_VARARGS | METH_KEYWORDS,
     "copy(a, order='K') -> Array: numpy's copy: a new device array with a's data (a "
     "cukit.Array, or host data copied over); Fortran order for order='F' (or 'A'/'K' of a "
     "Fortran-contiguous array), else C order."},
    {"copyto", (PyCFunction)(void (*)(void))mod_copyto, METH_VARARGS | METH_KEYWORDS,
     "copyto(dst, src, stream=None): copy between arrays of the same shape and dtype, either "
     "side a device or host array, either side strided. With stream= the copy is only "
     "queued (a host array must be C-contiguous and stay alive and unchanged until the "
     "stream is synchronized); without, device-to-device copies are queued on the default "
     "stream and host copies wait."},
    {"frombuffer", (PyCFunction)(void (*)(void))mod_frombuffer, METH_VARARGS | METH_KEYWORDS,
     "frombuffer(buffer, dtype=float, shape=None, strides=None, offset=0) -> Array: a view of a "
     "cukit.Buffer's memory (which the array keeps alive); shape None is 1-D over the rest of "
     "the buffer. Every element must lie inside the buffer."},
    {"to_device", (PyCFunction)(void (*)(void))mod_to_device, METH_VARARGS | METH_KEYWORDS,
     "to_device(obj, dtype=None, device=None, stream=None) -> Array: copy a numpy array (or "
     "anything numpy.asarray takes, of any layout) to a new C-contiguous device array. With "
     "stream= the copy is only queued, straight from obj, which must then be a C-contiguous "
     "array of the final dtype that stays alive and unchanged until the stream is "
     "synchronized."},
    {"empty", (PyCFunction)(void (*)(void))mod_empty, METH_VARARGS | METH_KEYWORDS,
     "empty(shape, dtype=float64, device=None) -> Array, uninitialised."},
    {"zeros", (PyCFunction)(void (*)(void))mod_zeros, METH_VARARGS | METH_KEYWORDS,
     "zeros(shape, dtype=float64, device=None) -> Array of zeros."},
    {"empty_like", (PyCFunction)(void (*)(void))mod_empty_like, METH_VARARGS | METH_KEYWORDS,
     "empty_like(a, dtype=None, device=None) -> Array with a's shape and dtype."},
    {"zeros_like", (PyCFunction)(void (*)(void))mod_zeros_like, METH_VARARGS | METH_KEYWORDS,
     "zeros_like(a, dtype=None, device=None) -> Array of zeros with a's shape and dtype."},
    {NULL},
};

int
cukit_array_functions_setup(PyObject *module, cukit_state *st)
{
    return PyModule_AddFunctions(module, array_functions);
}
