/* array.c - cukit.Array: a C-contiguous device array, and copies to and from host memory */
#include "cukit.h"

#include <string.h>

/* ------------------------------------------------------------------ helpers */

/* shape from an int or a sequence of ints. 0 / -1 with ValueError or TypeError. */
static int
parse_shape(PyObject *obj, Py_ssize_t *shape, int *ndim)
{
    PyObject *seq;
    if (PyLong_Check(obj) || PyIndex_Check(obj)) {
        seq = PyTuple_Pack(1, obj);
    }
    else {
        seq = PySequence_Fast(obj, "shape must be an int or a sequence of ints");
    }
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "shape has %zd dimensions; cukit allows at most %d", n,
                     CUKIT_MAXDIM);
        Py_DECREF(seq);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t v = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(seq, i), PyExc_ValueError);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "shape must be an int or a sequence of ints, got %R",
                             obj);
            }
            return -1;
        }
        if (v < 0) {
            PyErr_Format(PyExc_ValueError, "shape %R has a negative dimension", obj);
            Py_DECREF(seq);
            return -1;
        }
        shape[i] = v;
    }
    *ndim = (int)n;
    Py_DECREF(seq);
    return 0;
}

static PyObject *
shape_tuple(const cukit_Array *a)
{
    PyObject *t = PyTuple_New(a->ndim);
    for (int i = 0; t && i < a->ndim; i++) {
        PyObject *v = PyLong_FromSsize_t(a->shape[i]);
        if (v == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

/* numpy.dtype(obj), refusing dtypes that hold Python objects. New ref or NULL. */
static PyObject *
resolve_dtype(cukit_state *st, PyObject *obj)
{
    if (cukit_numpy(st) < 0)
        return NULL;
    PyObject *dtype = PyObject_CallOneArg(st->np_dtype, obj);
    if (dtype == NULL)
        return NULL;
    PyObject *hasobj = PyObject_GetAttrString(dtype, "hasobject");
    int bad = hasobj ? PyObject_IsTrue(hasobj) : -1;
    Py_XDECREF(hasobj);
    if (bad != 0) {
        if (bad > 0)
            PyErr_Format(PyExc_TypeError,
                         "dtype %S holds Python objects, which cannot live in device memory",
                         dtype);
        Py_DECREF(dtype);
        return NULL;
    }
    return dtype;
}

/* A new uninitialised C-contiguous array on dev. Steals nothing. New ref or NULL. */
static cukit_Array *
array_create(cukit_state *st, cukit_Device *dev, int ndim, const Py_ssize_t *shape,
             PyObject *dtype)
{
    PyObject *isz = PyObject_GetAttrString(dtype, "itemsize");
    Py_ssize_t itemsize = isz ? PyLong_AsSsize_t(isz) : -1;
    Py_XDECREF(isz);
    if (itemsize < 0)
        return NULL;
    int tc = cukit_typecode_of_dtype(dtype);
    if (tc < 0)
        return NULL;
    Py_ssize_t size = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] != 0 && size > PY_SSIZE_T_MAX / shape[i]) {
            PyErr_SetString(PyExc_ValueError, "array is too large: its size overflows");
            return NULL;
        }
        size *= shape[i];
    }
    if (itemsize != 0 && size > PY_SSIZE_T_MAX / itemsize) {
        PyErr_SetString(PyExc_ValueError, "array is too large: its byte size overflows");
        return NULL;
    }
    cukit_Buffer *buf = cukit_buffer_create(dev, (size_t)(size * itemsize));
    if (buf == NULL)
        return NULL;
    cukit_Array *a = PyObject_New(cukit_Array, st->ArrayType);
    if (a == NULL) {
        Py_DECREF(buf);
        return NULL;
    }
    a->st = st;
    a->buffer = buf;
    a->offset = 0;
    a->dtype = Py_NewRef(dtype);
    a->typecode = tc;
    a->itemsize = itemsize;
    a->size = size;
    a->nbytes = size * itemsize;
    a->ndim = ndim;
    Py_ssize_t stride = itemsize;
    for (int i = ndim - 1; i >= 0; i--) {
        a->shape[i] = shape[i];
        a->strides[i] = stride;
        stride *= shape[i] ? shape[i] : 1;
    }
    return a;
}

static int
check_live(const cukit_Array *a)
{
    return a->buffer->ptr == 0 ? cukit_freed_error() : 0;
}

static CUdeviceptr
data_ptr(const cukit_Array *a)
{
    return a->buffer->ptr + a->offset;
}

/* numpy.asarray(obj, dtype=dtype, order="C"). New ref or NULL. */
static PyObject *
as_host_array(cukit_state *st, PyObject *obj, PyObject *dtype)
{
    PyObject *kw = Py_BuildValue("{sOss}", "dtype", dtype ? dtype : Py_None, "order", "C");
    PyObject *args = kw ? PyTuple_Pack(1, obj) : NULL;
    PyObject *arr = args ? PyObject_Call(st->np_asarray, args, kw) : NULL;
    Py_XDECREF(kw);
    Py_XDECREF(args);
    return arr;
}

/* Copy nbytes between host memory and the array, the GIL released. */
static int
copy_host(cukit_Array *a, void *host, int to_device)
{
    cukit_state *st = a->st;
    if (a->nbytes == 0)
        return 0;
    if (cukit_device_activate(a->buffer->device) < 0)
        return -1;
    CUdeviceptr dev = data_ptr(a); /* read with the GIL held */
    size_t n = (size_t)a->nbytes;
    if (to_device)
        CU_CALL_NOGIL(st, cuMemcpyHtoD, (dev, host, n));
    else
        CU_CALL_NOGIL(st, cuMemcpyDtoH, (host, dev, n));
    return 0;
error:
    return -1;
}

/* Check that ndarray `host` matches the array's dtype and shape. 0 / -1. */
static int
check_host_match(cukit_Array *a, PyObject *host, const char *what)
{
    PyObject *dt = PyObject_GetAttrString(host, "dtype");
    if (dt == NULL)
        return -1;
    int same = PyObject_RichCompareBool(dt, a->dtype, Py_EQ);
    if (same == 0)
        PyErr_Format(PyExc_TypeError,
                     "%s: the host array is %S but the device array is %S; convert it first "
                     "with x.astype(device_array.dtype)",
                     what, dt, a->dtype);
    Py_DECREF(dt);
    if (same <= 0)
        return -1;
    PyObject *hs = PyObject_GetAttrString(host, "shape");
    PyObject *mine = shape_tuple(a);
    int eq = (hs && mine) ? PyObject_RichCompareBool(hs, mine, Py_EQ) : -1;
    if (eq == 0)
        PyErr_Format(PyExc_ValueError, "%s: the host array has shape %R but the device array has "
                     "shape %R", what, hs, mine);
    Py_XDECREF(hs);
    Py_XDECREF(mine);
    return eq == 1 ? 0 : -1;
}

/* ------------------------------------------------------------------ methods */

static PyObject *
array_get(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"out", NULL};
    PyObject *out = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:get", kwlist, &out))
        return NULL;
    cukit_state *st = self->st;
    if (check_live(self) < 0 || cukit_numpy(st) < 0)
        return NULL;
    if (out == Py_None) {
        PyObject *shape = shape_tuple(self);
        out = shape ? PyObject_CallFunctionObjArgs(st->np_empty, shape, self->dtype, NULL) : NULL;
        Py_XDECREF(shape);
        if (out == NULL)
            return NULL;
    }
    else {
        if (PyObject_TypeCheck(out, (PyTypeObject *)st->np_ndarray) &&
            check_host_match(self, out, "get(out=...)") < 0)
            return NULL;
        Py_INCREF(out);
    }
    Py_buffer view;
    if (PyObject_GetBuffer(out, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "get(out=...) needs a writable C-contiguous host array, got %s",
                     Py_TYPE(out)->tp_name);
        Py_DECREF(out);
        return NULL;
    }
    if (view.len != self->nbytes) {
        PyErr_Format(PyExc_ValueError, "get(out=...): out holds %zd bytes but the array has %zd",
                     view.len, self->nbytes);
        PyBuffer_Release(&view);
        Py_DECREF(out);
        return NULL;
    }
    int rc = copy_host(self, view.buf, 0);
    PyBuffer_Release(&view);
    if (rc < 0)
        Py_CLEAR(out);
    return out;
}

static PyObject *
array_set(cukit_Array *self, PyObject *host)
{
    cukit_state *st = self->st;
    if (check_live(self) < 0 || cukit_numpy(st) < 0)
        return NULL;
    PyObject *src;
    if (PyObject_TypeCheck(host, (PyTypeObject *)st->np_ndarray)) {
        if (check_host_match(self, host, "set()") < 0)
            return NULL;
        src = as_host_array(st, host, NULL); /* contiguous, copying only if it is not */
    }
    else if (PyObject_CheckBuffer(host) && !Py_IS_TYPE(host, st->ArrayType)) {
        src = Py_NewRef(host); /* raw bytes: the byte count is checked below */
    }
    else if (Py_IS_TYPE(host, st->ArrayType)) {
        PyErr_SetString(PyExc_TypeError,
                        "set() copies from host memory; for a device array use its copy()");
        return NULL;
    }
    else {
        src = as_host_array(st, host, self->dtype); /* lists and scalars take our dtype */
        if (src && check_host_match(self, src, "set()") < 0)
            Py_CLEAR(src);
    }
    if (src == NULL)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(src, &view, PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(src);
        return NULL;
    }
    int rc = -1;
    if (view.len != self->nbytes)
        PyErr_Format(PyExc_ValueError, "set(): the source holds %zd bytes but the array has %zd",
                     view.len, self->nbytes);
    else
        rc = copy_host(self, view.buf, 1);
    PyBuffer_Release(&view);
    Py_DECREF(src);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
array_copy(cukit_Array *self, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = self->st;
    if (check_live(self) < 0)
        return NULL;
    cukit_Array *out = array_create(st, self->buffer->device, self->ndim, self->shape, self->dtype);
    if (out == NULL)
        return NULL;
    if (self->nbytes > 0 && (cukit_device_activate(self->buffer->device) < 0 ||
                             CU_CALL(st, cuMemcpyDtoD, (data_ptr(out), data_ptr(self),
                                                         (size_t)self->nbytes)) < 0)) {
        Py_DECREF(out);
        return NULL;
    }
    return (PyObject *)out;
}

/* A `stream=` argument for an async operation on a: its handle, plus the
 * capture bookkeeping when the stream is being recorded into a graph. */
static int
async_stream(cukit_Array *a, PyObject *stream, PyObject *keep, CUstream *h)
{
    if (cukit_stream_handle(a->st, stream, a->buffer->device, h) < 0)
        return -1;
    if (stream != Py_None && ((cukit_Stream *)stream)->capture != NULL)
        return cukit_capture_keep((cukit_Stream *)stream, keep);
    return 0;
}

static PyObject *
array_fill(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"value", "stream", NULL};
    PyObject *value, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:fill", kwlist, &value, &stream))
        return NULL;
    cukit_state *st = self->st;
    CUstream h;
    if (check_live(self) < 0 || cukit_numpy(st) < 0)
        return NULL;
    /* The element's bytes, converted by numpy's own rules (with its range errors). */
    PyObject *one = as_host_array(st, value, self->dtype);
    if (one == NULL)
        return NULL;
    PyObject *raw = PyObject_CallMethod(one, "tobytes", NULL);
    PyObject *size_o = PyObject_GetAttrString(one, "size");
    Py_ssize_t one_size = size_o ? PyLong_AsSsize_t(size_o) : -1;
    Py_XDECREF(size_o);
    Py_DECREF(one);
    if (raw == NULL)
        return NULL;
    if (one_size != 1) {
        Py_DECREF(raw);
        PyErr_Format(PyExc_ValueError, "fill() takes one value, got %zd", one_size);
        return NULL;
    }
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(raw);
    Py_ssize_t isz = self->itemsize;
    size_t n = (size_t)self->size;
    CUdeviceptr p = data_ptr(self);
    int rc = -1;
    if (async_stream(self, stream, (PyObject *)self, &h) < 0 ||
        cukit_device_activate(self->buffer->device) < 0)
        goto done;
    if (n == 0) {
        rc = 0;
    }
    else if (isz == 1) {
        rc = CU_CALL(st, cuMemsetD8Async, (p, b[0], n, h));
    }
    else if (isz == 2) {
        unsigned short v;
        memcpy(&v, b, 2);
        rc = CU_CALL(st, cuMemsetD16Async, (p, v, n, h));
    }
    else if (isz % 4 == 0) {
        /* One 2-D memset per 32-bit word of the element, each a column of n rows. */
        rc = 0;
        for (Py_ssize_t w = 0; w < isz / 4 && rc == 0; w++) {
            unsigned int v;
            memcpy(&v, b + 4 * w, 4);
            rc = CU_CALL(st, cuMemsetD2D32Async, (p + 4 * (size_t)w, (size_t)isz, v, 1, n, h));
        }
    }
    else {
        PyErr_Format(PyExc_TypeError, "fill() works on elements of 1, 2 or a multiple of 4 bytes; "
                     "this dtype has %zd", isz);
    }
done:
    Py_DECREF(raw);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
array_free(cukit_Array *self, PyObject *Py_UNUSED(ignored))
{
    if (cukit_buffer_release(self->buffer) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static void
array_dealloc(cukit_Array *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_XDECREF(self->buffer);
    Py_XDECREF(self->dtype);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *
array_repr(cukit_Array *self)
{
    PyObject *shape = shape_tuple(self);
    if (shape == NULL)
        return NULL;
    PyObject *out = PyUnicode_FromFormat("<cukit.Array shape=%R dtype=%S on device %d%s>", shape,
                                         self->dtype, self->buffer->device->ordinal,
                                         self->buffer->ptr ? "" : ", freed");
    Py_DECREF(shape);
    return out;
}

static Py_ssize_t
array_len(cukit_Array *self)
{
    if (self->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d array");
        return -1;
    }
    return self->shape[0];
}

static PyObject *
array_get_shape(cukit_Array *self, void *c)
{
    return shape_tuple(self);
}

static PyObject *
array_get_strides(cukit_Array *self, void *c)
{
    PyObject *t = PyTuple_New(self->ndim);
    for (int i = 0; t && i < self->ndim; i++) {
        PyObject *v = PyLong_FromSsize_t(self->strides[i]);
        if (v == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyObject *
array_get_ptr(cukit_Array *self, void *c)
{
    if (check_live(self) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(data_ptr(self));
}

static PyObject *
array_get_size(cukit_Array *self, void *c)
{
    return PyLong_FromSsize_t(self->size);
}

static PyObject *
array_get_nbytes(cukit_Array *self, void *c)
{
    return PyLong_FromSsize_t(self->nbytes);
}

static PyObject *
array_get_itemsize(cukit_Array *self, void *c)
{
    return PyLong_FromSsize_t(self->itemsize);
}

static PyObject *
array_get_ndim(cukit_Array *self, void *c)
{
    return PyLong_FromLong(self->ndim);
}

static PyObject *
array_get_device(cukit_Array *self, void *c)
{
    return Py_NewRef(self->buffer->device);
}

static PyObject *
array_get_cai(cukit_Array *self, void *c)
{
    if (check_live(self) < 0)
        return NULL;
    PyObject *shape = shape_tuple(self);
    PyObject *typestr = shape ? PyObject_GetAttrString(self->dtype, "str") : NULL;
    PyObject *out = NULL;
    if (typestr)
        out = Py_BuildValue("{sOsOs(KO)sisOsi}", "shape", shape, "typestr", typestr, "data",
                            (unsigned long long)data_ptr(self), Py_False, "version", 3, "strides",
                            Py_None, "stream", 1);
    Py_XDECREF(shape);
    Py_XDECREF(typestr);
    return out;
}

static PyMemberDef array_members[] = {
    {"dtype", Py_T_OBJECT_EX, offsetof(cukit_Array, dtype), Py_READONLY, "The numpy dtype."},
    {"buffer", Py_T_OBJECT_EX, offsetof(cukit_Array, buffer), Py_READONLY,
     "The Buffer that owns the memory."},
    {NULL},
};

static PyGetSetDef array_getset[] = {
    {"shape", (getter)array_get_shape, NULL, "Tuple of dimensions."},
    {"strides", (getter)array_get_strides, NULL, "Tuple of byte steps per dimension."},
    {"ptr", (getter)array_get_ptr, NULL, "Device address of the first element."},
    {"size", (getter)array_get_size, NULL, "Number of elements."},
    {"nbytes", (getter)array_get_nbytes, NULL, "Size in bytes."},
    {"itemsize", (getter)array_get_itemsize, NULL, "Bytes per element."},
    {"ndim", (getter)array_get_ndim, NULL, "Number of dimensions."},
    {"device", (getter)array_get_device, NULL, "The Device that holds the data."},
    {"__cuda_array_interface__", (getter)array_get_cai, NULL,
     "The CUDA Array Interface (version 3), for CuPy, PyTorch, numba and others."},
    {NULL},
};

static PyMethodDef array_methods[] = {
    {"get", (PyCFunction)(void (*)(void))array_get, METH_VARARGS | METH_KEYWORDS,
     "get(out=None) -> numpy.ndarray: copy to the host; into `out` when given."},
    {"set", (PyCFunction)array_set, METH_O,
     "set(host): copy from a host array of the same shape and dtype (or bytes of equal size)."},
    {"copy", (PyCFunction)array_copy, METH_NOARGS, "A new device array with the same data."},
    {"fill", (PyCFunction)(void (*)(void))array_fill, METH_VARARGS | METH_KEYWORDS,
     "fill(value, stream=None): set every element, with the memset family (asynchronous "
     "on the stream; capturable into a graph)."},
    {"free", (PyCFunction)array_free, METH_NOARGS,
     "Free the device memory now. Views of it become unusable. Safe to call twice."},
    {NULL},
};

static PyType_Slot array_slots[] = {
    {Py_tp_doc, "Array: a C-contiguous array in device memory.\n\n"
                "Made by cukit.to_device, empty, zeros and empty_like."},
    {Py_tp_dealloc, array_dealloc},
    {Py_tp_repr, array_repr},
    {Py_tp_members, array_members},
    {Py_tp_getset, array_getset},
    {Py_tp_methods, array_methods},
    {Py_sq_length, array_len},
    {0, NULL},
};

static PyType_Spec array_spec = {
    .name = "cukit.Array",
    .basicsize = sizeof(cukit_Array),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = array_slots,
};

/* ------------------------------------------------------------------ module functions */

static PyObject *
new_array(PyObject *m, PyObject *shape_o, PyObject *dtype_o, PyObject *device, int zero)
{
    cukit_state *st = PyModule_GetState(m);
    Py_ssize_t shape[CUKIT_MAXDIM];
    int ndim;
    if (parse_shape(shape_o, shape, &ndim) < 0)
        return NULL;
    PyObject *dtype = resolve_dtype(st, dtype_o);
    if (dtype == NULL)
        return NULL;
    cukit_Device *dev = cukit_device_arg(st, device);
    cukit_Array *a = dev ? array_create(st, dev, ndim, shape, dtype) : NULL;
    Py_DECREF(dtype);
    if (a && zero && a->nbytes > 0 &&
        CU_CALL(st, cuMemsetD8, (data_ptr(a), 0, (size_t)a->nbytes)) < 0)
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
    return new_array(m, shape, dtype ? dtype : (PyObject *)&PyFloat_Type, device, 0);
}

static PyObject *
mod_zeros(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "dtype", "device", NULL};
    PyObject *shape, *dtype = NULL, *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:zeros", kwlist, &shape, &dtype, &device))
        return NULL;
    return new_array(m, shape, dtype ? dtype : (PyObject *)&PyFloat_Type, device, 1);
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
        device = (PyObject *)((cukit_Array *)a)->buffer->device;
    PyObject *out = shape && dt ? new_array(m, shape, dt, device, zero) : NULL;
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
mod_to_device(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"obj", "dtype", "device", NULL};
    PyObject *obj, *dtype = NULL, *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:to_device", kwlist, &obj, &dtype,
                                     &device))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    if (Py_IS_TYPE(obj, st->ArrayType) && (dtype == NULL || dtype == Py_None))
        return array_copy((cukit_Array *)obj, NULL);
    if (cukit_numpy(st) < 0)
        return NULL;
    PyObject *host = as_host_array(st, obj, dtype);
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
    PyObject *checked = dt ? resolve_dtype(st, dt) : NULL;
    Py_XDECREF(dt);
    cukit_Array *a = NULL;
    Py_buffer view;
    if (checked && host && PyObject_GetBuffer(host, &view, PyBUF_C_CONTIGUOUS | PyBUF_ND) == 0) {
        cukit_Device *dev = cukit_device_arg(st, device);
        Py_ssize_t shape[CUKIT_MAXDIM];
        for (int i = 0; i < view.ndim && i < CUKIT_MAXDIM; i++)
            shape[i] = view.shape[i];
        if (view.ndim > CUKIT_MAXDIM)
            PyErr_Format(PyExc_ValueError, "cukit arrays have at most %d dimensions", CUKIT_MAXDIM);
        else if (dev)
            a = array_create(st, dev, view.ndim, shape, checked);
        if (a && copy_host(a, view.buf, 1) < 0)
            Py_CLEAR(a);
        PyBuffer_Release(&view);
    }
    Py_XDECREF(checked);
    Py_XDECREF(host);
    return (PyObject *)a;
}

static PyObject *
mod_copy(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dst", "src", "stream", NULL};
    PyObject *dst_o, *src_o, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:copy", kwlist, &dst_o, &src_o, &stream))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    int dst_dev = Py_IS_TYPE(dst_o, st->ArrayType), src_dev = Py_IS_TYPE(src_o, st->ArrayType);
    if (dst_dev && !src_dev)
        return array_set((cukit_Array *)dst_o, src_o);
    if (src_dev && !dst_dev) {
        PyObject *a = PyTuple_New(0), *kw = Py_BuildValue("{sO}", "out", dst_o);
        PyObject *r = a && kw ? array_get((cukit_Array *)src_o, a, kw) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(kw);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
        Py_RETURN_NONE;
    }
    if (!dst_dev) {
        PyErr_SetString(PyExc_TypeError, "copy(dst, src): one of them must be a cukit.Array");
        return NULL;
    }
    cukit_Array *dst = (cukit_Array *)dst_o, *src = (cukit_Array *)src_o;
    if (check_live(dst) < 0 || check_live(src) < 0)
        return NULL;
    int same = PyObject_RichCompareBool(dst->dtype, src->dtype, Py_EQ);
    if (same <= 0) {
        if (same == 0)
            PyErr_Format(PyExc_TypeError, "copy(): dst is %S but src is %S", dst->dtype, src->dtype);
        return NULL;
    }
    PyObject *ds = shape_tuple(dst), *ss = shape_tuple(src);
    int eq = ds && ss ? PyObject_RichCompareBool(ds, ss, Py_EQ) : -1;
    if (eq == 0)
        PyErr_Format(PyExc_ValueError, "copy(): dst has shape %R but src has shape %R", ds, ss);
    Py_XDECREF(ds);
    Py_XDECREF(ss);
    if (eq != 1)
        return NULL;
    CUstream h;
    PyObject *pair = PyTuple_Pack(2, dst_o, src_o);
    int rc = pair ? async_stream(dst, stream, pair, &h) : -1;
    Py_XDECREF(pair);
    if (rc < 0 || cukit_device_activate(dst->buffer->device) < 0)
        return NULL;
    if (dst->nbytes > 0 &&
        CU_CALL(st, cuMemcpyDtoDAsync, (data_ptr(dst), data_ptr(src), (size_t)dst->nbytes, h)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef array_functions[] = {
    {"copy", (PyCFunction)(void (*)(void))mod_copy, METH_VARARGS | METH_KEYWORDS,
     "copy(dst, src, stream=None): copy between arrays of the same shape and dtype. "
     "Device to device is asynchronous on the stream (and capturable); a host side is "
     "copied synchronously."},
    {"to_device", (PyCFunction)(void (*)(void))mod_to_device, METH_VARARGS | METH_KEYWORDS,
     "to_device(obj, dtype=None, device=None) -> Array: copy a numpy array (or anything "
     "numpy.asarray takes) to the device."},
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
cukit_array_setup(PyObject *module, cukit_state *st)
{
    st->ArrayType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &array_spec, NULL);
    if (st->ArrayType == NULL || PyModule_AddType(module, st->ArrayType) < 0)
        return -1;
    return PyModule_AddFunctions(module, array_functions);
}
