/* array.c - cukit.Array: N-D strided views of device memory, indexing, and copies in every direction */
#include "cukit.h"

#include <string.h>

/* ------------------------------------------------------------------ helpers */

/* shape from an int or a sequence of ints. 0 / -1 with ValueError or TypeError.
 * `minus_one` allows one -1 (reshape), returned as -1 in shape. */
static int
parse_shape(PyObject *obj, Py_ssize_t *shape, int *ndim, int minus_one)
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
    int unknown = 0;
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
        if (v == -1 && minus_one && !unknown) {
            unknown = 1;
        }
        else if (v < 0) {
            PyErr_Format(PyExc_ValueError, "shape %R has a negative dimension%s", obj,
                         minus_one ? " (only one -1, to be inferred, is allowed)" : "");
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
ssize_tuple(const Py_ssize_t *v, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *x = PyLong_FromSsize_t(v[i]);
        if (x == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

PyObject *
cukit_array_shape(const cukit_Array *a)
{
    return ssize_tuple(a->shape, a->ndim);
}

PyObject *
cukit_array_strides(const cukit_Array *a)
{
    return ssize_tuple(a->strides, a->ndim);
}

PyObject *
cukit_resolve_dtype(cukit_state *st, PyObject *obj)
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
                         "dtype %S holds Python objects, which cannot live in device, pinned "
                         "or managed memory",
                         dtype);
        Py_DECREF(dtype);
        return NULL;
    }
    return dtype;
}

/* C-order byte strides for shape. */
static void
c_strides(int ndim, const Py_ssize_t *shape, Py_ssize_t itemsize, Py_ssize_t *out)
{
    Py_ssize_t stride = itemsize;
    for (int i = ndim - 1; i >= 0; i--) {
        out[i] = stride;
        stride *= shape[i] ? shape[i] : 1;
    }
}

/* CUKIT_ARRAY_C_CONTIG / F_CONTIG by numpy's rule: length-1 dimensions take any
 * stride, and an empty array is both. */
static int
contiguity(int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides, Py_ssize_t itemsize)
{
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0)
            return CUKIT_ARRAY_C_CONTIG | CUKIT_ARRAY_F_CONTIG;
    int flags = 0;
    Py_ssize_t want = itemsize;
    int ok = 1;
    for (int i = ndim - 1; i >= 0 && ok; i--) {
        if (shape[i] != 1 && strides[i] != want)
            ok = 0;
        want *= shape[i];
    }
    if (ok)
        flags |= CUKIT_ARRAY_C_CONTIG;
    want = itemsize;
    ok = 1;
    for (int i = 0; i < ndim && ok; i++) {
        if (shape[i] != 1 && strides[i] != want)
            ok = 0;
        want *= shape[i];
    }
    if (ok)
        flags |= CUKIT_ARRAY_F_CONTIG;
    return flags;
}

/* A new Array object describing memory someone else holds: the caller has set
 * buffer or owner. Steals nothing; takes new refs to dev and dtype. */
static cukit_Array *
array_alloc(cukit_state *st, cukit_Device *dev, PyObject *dtype, int typecode,
            Py_ssize_t itemsize, int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides)
{
    cukit_Array *a = PyObject_New(cukit_Array, st->ArrayType);
    if (a == NULL)
        return NULL;
    a->st = st;
    a->device = (cukit_Device *)Py_NewRef(dev);
    a->buffer = NULL;
    a->owner = NULL;
    a->base = 0;
    a->offset = 0;
    a->dtype = Py_NewRef(dtype);
    a->typecode = typecode;
    a->itemsize = itemsize;
    a->ndim = ndim;
    a->size = 1;
    for (int i = 0; i < ndim; i++) {
        a->shape[i] = shape[i];
        a->strides[i] = strides[i];
        a->size *= shape[i];
    }
    a->nbytes = a->size * itemsize;
    a->flags = contiguity(ndim, shape, strides, itemsize);
    return a;
}

/* itemsize and typecode of a numpy dtype. 0 / -1. */
static int
dtype_info(PyObject *dtype, Py_ssize_t *itemsize, int *typecode)
{
    PyObject *isz = PyObject_GetAttrString(dtype, "itemsize");
    *itemsize = isz ? PyLong_AsSsize_t(isz) : -1;
    Py_XDECREF(isz);
    if (*itemsize < 0)
        return -1;
    *typecode = cukit_typecode_of_dtype(dtype);
    return *typecode < 0 ? -1 : 0;
}

/* A new uninitialised C-contiguous array on dev. Steals nothing. New ref or NULL. */
static cukit_Array *
array_create(cukit_state *st, cukit_Device *dev, int ndim, const Py_ssize_t *shape,
             PyObject *dtype)
{
    Py_ssize_t itemsize;
    int tc;
    if (dtype_info(dtype, &itemsize, &tc) < 0)
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
    Py_ssize_t strides[CUKIT_MAXDIM];
    c_strides(ndim, shape, itemsize, strides);
    cukit_Array *a = array_alloc(st, dev, dtype, tc, itemsize, ndim, shape, strides);
    if (a == NULL) {
        Py_DECREF(buf);
        return NULL;
    }
    a->buffer = buf;
    return a;
}

cukit_Array *
cukit_array_new(cukit_state *st, cukit_Device *dev, PyObject *dtype, int typecode,
                Py_ssize_t itemsize, int ndim, const Py_ssize_t *shape)
{
    Py_ssize_t size = 1, strides[CUKIT_MAXDIM];
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
    c_strides(ndim, shape, itemsize, strides);
    cukit_Array *a = array_alloc(st, dev, dtype, typecode, itemsize, ndim, shape, strides);
    if (a == NULL) {
        Py_DECREF(buf);
        return NULL;
    }
    a->buffer = buf;
    return a;
}

cukit_Array *
cukit_array_wrap(cukit_state *st, cukit_Device *dev, CUdeviceptr base, PyObject *owner,
                 PyObject *dtype, int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides,
                 int readonly)
{
    Py_ssize_t itemsize, cs[CUKIT_MAXDIM];
    int tc;
    if (ndim < 0 || ndim > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "the array has %d dimensions; cukit allows at most %d",
                     ndim, CUKIT_MAXDIM);
        return NULL;
    }
    if (dtype_info(dtype, &itemsize, &tc) < 0)
        return NULL;
    if (strides == NULL) {
        c_strides(ndim, shape, itemsize, cs);
        strides = cs;
    }
    cukit_Array *a = array_alloc(st, dev, dtype, tc, itemsize, ndim, shape, strides);
    if (a == NULL)
        return NULL;
    a->owner = Py_NewRef(owner);
    a->base = base;
    if (readonly)
        a->flags |= CUKIT_ARRAY_READONLY;
    return a;
}

/* A view of `a`: the same memory, `offset` bytes from its start. New ref or NULL. */
static cukit_Array *
make_view(cukit_Array *a, Py_ssize_t offset, int ndim, const Py_ssize_t *shape,
          const Py_ssize_t *strides)
{
    cukit_Array *v = array_alloc(a->st, a->device, a->dtype, a->typecode, a->itemsize, ndim,
                                 shape, strides);
    if (v == NULL)
        return NULL;
    v->buffer = (cukit_Buffer *)Py_XNewRef(a->buffer);
    v->owner = Py_XNewRef(a->owner);
    v->base = a->base;
    v->offset = offset;
    v->flags |= a->flags & CUKIT_ARRAY_READONLY;
    return v;
}

cukit_Array *
cukit_array_view(cukit_Array *a, PyObject *dtype, int typecode, Py_ssize_t itemsize,
                 Py_ssize_t offset, int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides)
{
    cukit_Array *v = array_alloc(a->st, a->device, dtype, typecode, itemsize, ndim, shape,
                                 strides);
    if (v == NULL)
        return NULL;
    v->buffer = (cukit_Buffer *)Py_XNewRef(a->buffer);
    v->owner = Py_XNewRef(a->owner);
    v->base = a->base;
    v->offset = offset;
    v->flags |= a->flags & CUKIT_ARRAY_READONLY;
    return v;
}

static int
check_live(const cukit_Array *a)
{
    return cukit_array_live(a) ? 0 : cukit_freed_error();
}

static int
check_writable(const cukit_Array *a, const char *what)
{
    if (a->flags & CUKIT_ARRAY_READONLY) {
        PyErr_Format(PyExc_ValueError,
                     "%s: the array is read-only (its producer exported it so); copy it "
                     "first with .copy()",
                     what);
        return -1;
    }
    return 0;
}

static int
is_c_contig(const cukit_Array *a)
{
    return (a->flags & CUKIT_ARRAY_C_CONTIG) != 0;
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
    PyObject *mine = cukit_array_shape(a);
    int eq = (hs && mine) ? PyObject_RichCompareBool(hs, mine, Py_EQ) : -1;
    if (eq == 0)
        PyErr_Format(PyExc_ValueError, "%s: the host array has shape %R but the device array has "
                     "shape %R", what, hs, mine);
    Py_XDECREF(hs);
    Py_XDECREF(mine);
    return eq == 1 ? 0 : -1;
}

/* 1 when ndarray `host` is C-contiguous, 0 when not, -1 on error. */
static int
host_c_contiguous(PyObject *host)
{
    PyObject *flags = PyObject_GetAttrString(host, "flags");
    PyObject *c = flags ? PyObject_GetAttrString(flags, "c_contiguous") : NULL;
    int r = c ? PyObject_IsTrue(c) : -1;
    Py_XDECREF(flags);
    Py_XDECREF(c);
    return r;
}

/* A `stream=` argument for an operation on a: its handle, and the capture
 * bookkeeping when the stream is being recorded into a graph. */
static int
async_stream(cukit_Array *a, PyObject *stream, PyObject *keep, CUstream *h)
{
    if (cukit_stream_handle(a->st, stream, a->device, h) < 0)
        return -1;
    if (stream != Py_None && ((cukit_Stream *)stream)->capture != NULL)
        return cukit_capture_keep((cukit_Stream *)stream, keep);
    return 0;
}

/* During a capture on `stream`, keep `obj` (a host array the graph reads or writes)
 * alive with the graph. 0 / -1. */
static int
keep_host(PyObject *stream, PyObject *obj)
{
    if (stream == NULL || stream == Py_None || ((cukit_Stream *)stream)->capture == NULL)
        return 0;
    return cukit_capture_keep((cukit_Stream *)stream, obj);
}

/* Host bytes in C order (a->nbytes of them) to the array (to_device=1) or back
 * (0). The array may be strided: one contiguous run is copied directly, else
 * through contiguous device scratch that is rearranged on the device. sync=0 only
 * queues on h. */
static int
host_transfer(cukit_Array *a, void *host, CUstream h, int sync, int to_device)
{
    cukit_state *st = a->st;
    if (a->nbytes == 0)
        return 0;
    if (cukit_device_activate(a->device) < 0)
        return -1;
    CUdeviceptr dev = cukit_array_ptr(a);
    size_t n = (size_t)a->nbytes;
    if (is_c_contig(a))
        return to_device ? cukit_copy_htod(st, dev, host, n, h, sync)
                         : cukit_copy_dtoh(st, host, dev, n, h, sync);
    cukit_scratch tmp;
    Py_ssize_t cs[CUKIT_MAXDIM];
    c_strides(a->ndim, a->shape, a->itemsize, cs);
    if (cukit_scratch_alloc(a->device, n, h, &tmp) < 0)
        return -1;
    int rc;
    if (to_device) {
        rc = cukit_copy_htod(st, tmp.ptr, host, n, h, 0);
        if (rc == 0)
            rc = cukit_strided_copy(a->device, dev, a->strides, tmp.ptr, cs, a->ndim, a->shape,
                                    a->itemsize, h);
    }
    else {
        rc = cukit_strided_copy(a->device, tmp.ptr, cs, dev, a->strides, a->ndim, a->shape,
                                a->itemsize, h);
        if (rc == 0)
            rc = cukit_copy_dtoh(st, host, tmp.ptr, n, h, 0);
    }
    if (cukit_scratch_release(a->device, &tmp, h) < 0)
        rc = -1;
    if (rc == 0 && sync)
        CU_CALL_NOGIL(st, cuStreamSynchronize, (h));
    return rc;
error:
    return -1;
}

int
cukit_array_check_dtype(cukit_Array *a, PyObject *dtype, const char *who)
{
    if (dtype == NULL || dtype == Py_None)
        return 0;
    PyObject *want = cukit_resolve_dtype(a->st, dtype);
    int same = want ? PyObject_RichCompareBool(want, a->dtype, Py_EQ) : -1;
    if (same == 0)
        PyErr_Format(PyExc_TypeError,
                     "%s: the device data is %S, not %S; cukit does not convert device data "
                     "(convert it where it was made, or copy with astype on the host)",
                     who, a->dtype, want);
    Py_XDECREF(want);
    return same == 1 ? 0 : -1;
}

/* Lowest and one-past-highest byte the array's elements touch. */
static void
extent(const cukit_Array *a, CUdeviceptr *lo, CUdeviceptr *hi)
{
    CUdeviceptr p = cukit_array_ptr(a);
    long long down = 0, up = 0;
    for (int i = 0; i < a->ndim; i++) {
        long long span = (long long)(a->shape[i] - 1) * a->strides[i];
        if (span < 0)
            down += span;
        else
            up += span;
    }
    *lo = p + (CUdeviceptr)down;
    *hi = p + (CUdeviceptr)up + (CUdeviceptr)a->itemsize;
}

/* dst <- src, both device arrays of one shape and dtype on one device, queued on h.
 * Overlapping memory goes through scratch, so the result is as if src were read first. */
static int
device_copy(cukit_Array *dst, cukit_Array *src, CUstream h)
{
    if (dst->size == 0)
        return 0;
    if (cukit_device_activate(dst->device) < 0)
        return -1;
    CUdeviceptr dp = cukit_array_ptr(dst), sp = cukit_array_ptr(src);
    CUdeviceptr dlo, dhi, slo, shi;
    extent(dst, &dlo, &dhi);
    extent(src, &slo, &shi);
    int same = dp == sp && dst->ndim == src->ndim &&
               memcmp(dst->strides, src->strides, sizeof(Py_ssize_t) * (size_t)dst->ndim) == 0;
    if (same)
        return 0;
    if (!(dlo < shi && slo < dhi))
        return cukit_strided_copy(dst->device, dp, dst->strides, sp, src->strides, dst->ndim,
                                  dst->shape, dst->itemsize, h);
    cukit_scratch tmp;
    Py_ssize_t cs[CUKIT_MAXDIM];
    c_strides(dst->ndim, dst->shape, dst->itemsize, cs);
    if (cukit_scratch_alloc(dst->device, (size_t)dst->nbytes, h, &tmp) < 0)
        return -1;
    int rc = cukit_strided_copy(dst->device, tmp.ptr, cs, sp, src->strides, src->ndim,
                                src->shape, src->itemsize, h);
    if (rc == 0)
        rc = cukit_strided_copy(dst->device, dp, dst->strides, tmp.ptr, cs, dst->ndim,
                                dst->shape, dst->itemsize, h);
    if (cukit_scratch_release(dst->device, &tmp, h) < 0)
        rc = -1;
    return rc;
}

/* Same dtype and shape, or TypeError / ValueError naming both. 0 / -1. */
static int
check_same_layout(cukit_Array *dst, cukit_Array *src, const char *what)
{
    int same = PyObject_RichCompareBool(dst->dtype, src->dtype, Py_EQ);
    if (same <= 0) {
        if (same == 0)
            PyErr_Format(PyExc_TypeError, "%s: dst is %S but src is %S", what, dst->dtype,
                         src->dtype);
        return -1;
    }
    if (dst->ndim == src->ndim &&
        memcmp(dst->shape, src->shape, sizeof(Py_ssize_t) * (size_t)dst->ndim) == 0)
        return 0;
    PyObject *ds = cukit_array_shape(dst), *ss = cukit_array_shape(src);
    if (ds && ss)
        PyErr_Format(PyExc_ValueError, "%s: dst has shape %R but src has shape %R", what, ds, ss);
    Py_XDECREF(ds);
    Py_XDECREF(ss);
    return -1;
}

/* dst <- src between two device arrays, checked, on `stream` (None: default). */
static int
copy_arrays(cukit_Array *dst, cukit_Array *src, PyObject *stream, const char *what)
{
    if (check_live(dst) < 0 || check_live(src) < 0 || check_writable(dst, what) < 0 ||
        check_same_layout(dst, src, what) < 0)
        return -1;
    CUstream h;
    PyObject *pair = PyTuple_Pack(2, (PyObject *)dst, (PyObject *)src);
    int rc = pair ? async_stream(dst, stream, pair, &h) : -1;
    Py_XDECREF(pair);
    if (rc < 0)
        return -1;
    if (dst->device == src->device)
        return device_copy(dst, src, h);
    /* Across devices the driver copies one contiguous run (unified addressing). */
    if (!is_c_contig(dst) || !is_c_contig(src)) {
        PyErr_Format(PyExc_ValueError,
                     "%s: a copy between device %d and device %d needs two C-contiguous "
                     "arrays; make them so with cukit.ascontiguousarray(x)",
                     what, src->device->ordinal, dst->device->ordinal);
        return -1;
    }
    if (dst->nbytes == 0)
        return 0;
    return cukit_device_activate(dst->device) < 0
               ? -1
               : CU_CALL(dst->st, cuMemcpyDtoDAsync,
                         (cukit_array_ptr(dst), cukit_array_ptr(src), (size_t)dst->nbytes, h));
}

/* A new C-contiguous copy of a on its device, queued on h. New ref or NULL. */
static cukit_Array *
copy_on(cukit_Array *a, CUstream h)
{
    if (check_live(a) < 0)
        return NULL;
    cukit_Array *out = array_create(a->st, a->device, a->ndim, a->shape, a->dtype);
    if (out && device_copy(out, a, h) < 0)
        Py_CLEAR(out);
    return out;
}

cukit_Array *
cukit_array_copy(cukit_Array *a)
{
    return copy_on(a, NULL);
}

/* ------------------------------------------------------------------ host copies */

static PyObject *
array_get(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"out", "stream", NULL};
    PyObject *out = Py_None, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:get", kwlist, &out, &stream))
        return NULL;
    cukit_state *st = self->st;
    CUstream h = NULL;
    int sync = stream == Py_None;
    if (check_live(self) < 0 || cukit_numpy(st) < 0 ||
        async_stream(self, stream, (PyObject *)self, &h) < 0)
        return NULL;
    if (out == Py_None) {
        PyObject *shape = cukit_array_shape(self);
        out = shape ? PyObject_CallFunctionObjArgs(st->np_empty, shape, self->dtype, NULL) : NULL;
        Py_XDECREF(shape);
        if (out == NULL)
            return NULL;
    }
    else {
        if (PyObject_TypeCheck(out, (PyTypeObject *)st->np_ndarray)) {
            if (check_host_match(self, out, "get(out=...)") < 0)
                return NULL;
            int contig = host_c_contiguous(out);
            if (contig < 0)
                return NULL;
            if (!contig && !sync) {
                PyErr_SetString(PyExc_ValueError,
                                "get(out=..., stream=...) needs a C-contiguous out: the copy "
                                "writes straight into it when the stream gets there; pass a "
                                "C-contiguous array, or leave out stream= to copy through a "
                                "temporary");
                return NULL;
            }
            if (!contig) {
                /* A strided host array: fill a contiguous one, then let numpy scatter it. */
                PyObject *noargs = PyTuple_New(0);
                PyObject *tmp = noargs ? array_get(self, noargs, NULL) : NULL;
                Py_XDECREF(noargs);
                if (tmp == NULL)
                    return NULL;
                PyObject *r = PyObject_CallMethod(st->numpy, "copyto", "OO", out, tmp);
                Py_DECREF(tmp);
                if (r == NULL)
                    return NULL;
                Py_DECREF(r);
                return Py_NewRef(out);
            }
        }
        Py_INCREF(out);
    }
    if (keep_host(stream, out) < 0) {
        Py_DECREF(out);
        return NULL;
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
    int rc = host_transfer(self, view.buf, h, sync, 0);
    PyBuffer_Release(&view);
    if (rc < 0)
        Py_CLEAR(out);
    return out;
}

static const char async_host_msg[] =
    "%s with stream= copies straight from the host array when the stream gets there, so it "
    "needs a C-contiguous numpy array of the device array's dtype (here %S) or a bytes-like "
    "object; convert it first with numpy.ascontiguousarray(x, dtype), or leave out stream=";

/* set() and copy(dst, host): host data -> self, on `stream` (None: wait for it). */
static int
set_from_host(cukit_Array *self, PyObject *host, PyObject *stream, const char *what)
{
    cukit_state *st = self->st;
    CUstream h = NULL;
    int sync = stream == Py_None;
    if (check_live(self) < 0 || check_writable(self, what) < 0 || cukit_numpy(st) < 0 ||
        async_stream(self, stream, (PyObject *)self, &h) < 0)
        return -1;
    PyObject *src;
    if (PyObject_TypeCheck(host, (PyTypeObject *)st->np_ndarray)) {
        if (check_host_match(self, host, what) < 0)
            return -1;
        int contig = host_c_contiguous(host);
        if (contig < 0)
            return -1;
        if (!contig && !sync) {
            PyErr_Format(PyExc_ValueError, async_host_msg, what, self->dtype);
            return -1;
        }
        /* C-contiguous: the array itself; else numpy makes a contiguous copy */
        src = contig ? Py_NewRef(host) : as_host_array(st, host, NULL);
    }
    else if (Py_IS_TYPE(host, st->ArrayType)) {
        PyErr_Format(PyExc_TypeError,
                     "%s copies from host memory; for a device array use cukit.copy(dst, src)",
                     what);
        return -1;
    }
    else if (PyObject_CheckBuffer(host)) {
        src = Py_NewRef(host); /* raw bytes: the byte count is checked below */
    }
    else if (!sync) {
        PyErr_Format(PyExc_ValueError, async_host_msg, what, self->dtype);
        return -1;
    }
    else {
        src = as_host_array(st, host, self->dtype); /* lists and scalars take our dtype */
        if (src && check_host_match(self, src, what) < 0)
            Py_CLEAR(src);
    }
    if (src == NULL)
        return -1;
    if (keep_host(stream, src) < 0) {
        Py_DECREF(src);
        return -1;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(src, &view, PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(src);
        if (!PyErr_ExceptionMatches(PyExc_BufferError))
            return -1;
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError,
                     "%s needs a C-contiguous host buffer; %s is not (copy it with "
                     "numpy.ascontiguousarray(x))",
                     what, Py_TYPE(host)->tp_name);
        return -1;
    }
    int rc = -1;
    if (view.len != self->nbytes)
        PyErr_Format(PyExc_ValueError, "%s: the source holds %zd bytes but the array has %zd",
                     what, view.len, self->nbytes);
    else
        rc = host_transfer(self, view.buf, h, sync, 1);
    PyBuffer_Release(&view);
    Py_DECREF(src);
    return rc;
}

static PyObject *
array_set(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"host", "stream", NULL};
    PyObject *host, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:set", kwlist, &host, &stream))
        return NULL;
    if (set_from_host(self, host, stream, "set()") < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
array_copy_method(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", NULL};
    PyObject *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:copy", kwlist, &stream))
        return NULL;
    CUstream h;
    if (check_live(self) < 0 || async_stream(self, stream, (PyObject *)self, &h) < 0)
        return NULL;
    cukit_Array *out = copy_on(self, h);
    if (out && stream != Py_None && ((cukit_Stream *)stream)->capture != NULL &&
        cukit_capture_keep((cukit_Stream *)stream, (PyObject *)out) < 0)
        Py_CLEAR(out);
    return (PyObject *)out;
}

/* The element bytes of `value` in a's dtype, by numpy's conversion rules (with its
 * range errors). New ref (bytes of a->itemsize) or NULL. */
static PyObject *
element_bytes(cukit_Array *a, PyObject *value, const char *what)
{
    PyObject *one = as_host_array(a->st, value, a->dtype);
    if (one == NULL)
        return NULL;
    PyObject *size_o = PyObject_GetAttrString(one, "size");
    Py_ssize_t one_size = size_o ? PyLong_AsSsize_t(size_o) : -1;
    Py_XDECREF(size_o);
    PyObject *raw = one_size == 1 ? PyObject_CallMethod(one, "tobytes", NULL) : NULL;
    Py_DECREF(one);
    if (one_size != 1 && !PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "%s takes one value, got %zd", what, one_size);
    return raw;
}

static PyObject *
array_fill(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"value", "stream", NULL};
    PyObject *value, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:fill", kwlist, &value, &stream))
        return NULL;
    CUstream h;
    if (check_live(self) < 0 || check_writable(self, "fill()") < 0 || cukit_numpy(self->st) < 0)
        return NULL;
    PyObject *raw = element_bytes(self, value, "fill()");
    if (raw == NULL)
        return NULL;
    int rc = -1;
    if (async_stream(self, stream, (PyObject *)self, &h) == 0 &&
        cukit_device_activate(self->device) == 0)
        rc = cukit_strided_fill(self->device, cukit_array_ptr(self), self->strides, self->ndim,
                                self->shape, PyBytes_AS_STRING(raw), self->itemsize, h);
    Py_DECREF(raw);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
array_free(cukit_Array *self, PyObject *Py_UNUSED(ignored))
{
    if (self->buffer == NULL) {
        Py_CLEAR(self->owner); /* imported: let go of the producer's memory */
        Py_RETURN_NONE;
    }
    if (cukit_buffer_release(self->buffer) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ views */

/* self[key] for basic indexing: ints, slices, ..., None. New ref or NULL. */
static PyObject *
array_subscript(cukit_Array *self, PyObject *key)
{
    if (check_live(self) < 0)
        return NULL;
    PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int consuming = 0, ellipses = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PyTuple_GET_ITEM(items, i);
        if (it == Py_Ellipsis)
            ellipses++;
        else if (it != Py_None)
            consuming++;
    }
    PyObject *result = NULL;
    if (ellipses > 1) {
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        goto done;
    }
    if (consuming > self->ndim) {
        PyErr_Format(PyExc_IndexError,
                     "too many indices for array: array is %d-dimensional, but %d were indexed",
                     self->ndim, consuming);
        goto done;
    }
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM], offset = self->offset;
    int d = 0, out = 0; /* next dimension of self, of the view */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PyTuple_GET_ITEM(items, i);
        int adds = it == Py_Ellipsis ? self->ndim - consuming : 1;
        if (out + adds > CUKIT_MAXDIM) {
            PyErr_Format(PyExc_IndexError, "the view would have more than %d dimensions",
                         CUKIT_MAXDIM);
            goto done;
        }
        if (it == Py_Ellipsis) {
            for (int k = 0; k < adds; k++, d++, out++) {
                shape[out] = self->shape[d];
                strides[out] = self->strides[d];
            }
        }
        else if (it == Py_None) {
            shape[out] = 1;
            strides[out++] = 0;
        }
        else if (PySlice_Check(it)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(it, &start, &stop, &step) < 0)
                goto done;
            Py_ssize_t len = PySlice_AdjustIndices(self->shape[d], &start, &stop, step);
            if (len > 0)
                offset += start * self->strides[d];
            shape[out] = len;
            strides[out++] = self->strides[d] * step;
            d++;
        }
        else if (PyIndex_Check(it) && !PyBool_Check(it)) {
            Py_ssize_t k = PyNumber_AsSsize_t(it, PyExc_IndexError);
            if (k == -1 && PyErr_Occurred())
                goto done;
            if (k < -self->shape[d] || k >= self->shape[d]) {
                PyErr_Format(PyExc_IndexError,
                             "index %zd is out of bounds for axis %d with size %zd", k, d,
                             self->shape[d]);
                goto done;
            }
            if (k < 0)
                k += self->shape[d];
            offset += k * self->strides[d];
            d++;
        }
        else {
            PyErr_Format(PyExc_IndexError,
                         "cukit arrays take basic indices only: integers, slices (`:`), "
                         "ellipsis (`...`) and None; got %s",
                         Py_TYPE(it)->tp_name);
            goto done;
        }
    }
    if (out + (self->ndim - d) > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_IndexError, "the view would have more than %d dimensions", CUKIT_MAXDIM);
        goto done;
    }
    for (; d < self->ndim; d++, out++) { /* dimensions not indexed are taken whole */
        shape[out] = self->shape[d];
        strides[out] = self->strides[d];
    }
    result = (PyObject *)make_view(self, offset, out, shape, strides);
done:
    Py_DECREF(items);
    return result;
}

static int
is_scalar(cukit_state *st, PyObject *v)
{
    return PyLong_Check(v) || PyFloat_Check(v) || PyComplex_Check(v) ||
           PyObject_TypeCheck(v, (PyTypeObject *)st->np_generic);
}

/* self[key] = value: a device array is copied, a scalar filled in, anything else
 * taken as host data (broadcast by numpy to the view's shape) and copied in. */
static int
array_ass_subscript(cukit_Array *self, PyObject *key, PyObject *value)
{
    cukit_state *st = self->st;
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "cannot delete elements of a cukit array");
        return -1;
    }
    if (cukit_numpy(st) < 0)
        return -1;
    cukit_Array *view = (cukit_Array *)array_subscript(self, key);
    if (view == NULL)
        return -1;
    int rc = -1;
    if (Py_IS_TYPE(value, st->ArrayType)) {
        rc = copy_arrays(view, (cukit_Array *)value, Py_None, "a[...] = b");
    }
    else if (is_scalar(st, value)) {
        PyObject *raw = check_writable(view, "a[...] = x") == 0
                            ? element_bytes(view, value, "a[...] = x")
                            : NULL;
        if (raw) {
            rc = cukit_device_activate(view->device) < 0
                     ? -1
                     : cukit_strided_fill(view->device, cukit_array_ptr(view), view->strides,
                                          view->ndim, view->shape, PyBytes_AS_STRING(raw),
                                          view->itemsize, NULL);
            Py_DECREF(raw);
        }
    }
    else {
        PyObject *host = as_host_array(st, value, view->dtype);
        PyObject *shape = host ? cukit_array_shape(view) : NULL;
        PyObject *wide = shape ? PyObject_CallMethod(st->numpy, "broadcast_to", "OO", host, shape)
                               : NULL;
        if (wide)
            rc = set_from_host(view, wide, Py_None, "a[...] = x");
        Py_XDECREF(host);
        Py_XDECREF(shape);
        Py_XDECREF(wide);
    }
    Py_DECREF(view);
    return rc;
}

/* Strides for viewing (ndim, shape, strides) as (nn, newshape) without moving
 * data, or 0 when the layout does not allow it. Dimensions are matched in groups
 * whose products agree; each old group must be one evenly strided run. */
static int
reshape_strides(const cukit_Array *a, int nn, const Py_ssize_t *newshape, Py_ssize_t *out)
{
    Py_ssize_t od[CUKIT_MAXDIM], os[CUKIT_MAXDIM];
    int on = 0;
    for (int i = 0; i < a->ndim; i++) {
        if (a->shape[i] != 1) {
            od[on] = a->shape[i];
            os[on++] = a->strides[i];
        }
    }
    int oi = 0, ni = 0;
    while (oi < on && ni < nn) {
        int oj = oi + 1, nj = ni + 1;
        Py_ssize_t op = od[oi], np_ = newshape[ni];
        while (op != np_) {
            if (np_ < op) {
                if (nj >= nn)
                    return 0;
                np_ *= newshape[nj++];
            }
            else {
                if (oj >= on)
                    return 0;
                op *= od[oj++];
            }
        }
        for (int k = oi; k < oj - 1; k++)
            if (os[k] != od[k + 1] * os[k + 1])
                return 0;
        out[nj - 1] = os[oj - 1];
        for (int k = nj - 1; k > ni; k--)
            out[k - 1] = out[k] * newshape[k];
        oi = oj;
        ni = nj;
    }
    for (; ni < nn; ni++) /* trailing length-1 dimensions */
        out[ni] = a->itemsize;
    return 1;
}

static PyObject *
array_reshape(cukit_Array *self, PyObject *args)
{
    if (check_live(self) < 0)
        return NULL;
    PyObject *spec = PyTuple_GET_SIZE(args) == 1 ? PyTuple_GET_ITEM(args, 0) : args;
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    int nn;
    if (parse_shape(spec, shape, &nn, 1) < 0)
        return NULL;
    Py_ssize_t known = 1;
    int unknown = -1;
    for (int i = 0; i < nn; i++) {
        if (shape[i] == -1)
            unknown = i;
        else
            known *= shape[i];
    }
    if (unknown >= 0 && known != 0 && self->size % known == 0)
        shape[unknown] = self->size / known;
    Py_ssize_t total = 1;
    for (int i = 0; i < nn; i++)
        total *= shape[i] < 0 ? 0 : shape[i];
    if ((unknown >= 0 && (known == 0 || self->size % known != 0)) || total != self->size) {
        PyObject *old = cukit_array_shape(self);
        if (old)
            PyErr_Format(PyExc_ValueError, "cannot reshape an array of shape %R (size %zd) into "
                         "shape %R", old, self->size, spec);
        Py_XDECREF(old);
        return NULL;
    }
    if (is_c_contig(self)) {
        c_strides(nn, shape, self->itemsize, strides);
    }
    else if (!reshape_strides(self, nn, shape, strides)) {
        PyObject *old = cukit_array_shape(self), *st = cukit_array_strides(self);
        if (old && st)
            PyErr_Format(PyExc_ValueError,
                         "cannot reshape this view (shape %R, strides %R) into shape %R without "
                         "copying; reshape a copy: cukit.ascontiguousarray(a).reshape(...)",
                         old, st, spec);
        Py_XDECREF(old);
        Py_XDECREF(st);
        return NULL;
    }
    return (PyObject *)make_view(self, self->offset, nn, shape, strides);
}

static PyObject *
transpose_axes(cukit_Array *self, PyObject *axes_o)
{
    if (check_live(self) < 0)
        return NULL;
    int axes[CUKIT_MAXDIM], seen[CUKIT_MAXDIM] = {0};
    if (axes_o == NULL || axes_o == Py_None) {
        for (int i = 0; i < self->ndim; i++)
            axes[i] = self->ndim - 1 - i;
    }
    else {
        PyObject *seq = PySequence_Fast(axes_o, "transpose() takes axes as ints");
        if (seq == NULL)
            return NULL;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        if (n != self->ndim) {
            PyErr_Format(PyExc_ValueError, "transpose(): %zd axes given for a %d-dimensional array",
                         n, self->ndim);
            Py_DECREF(seq);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t ax = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(seq, i), PyExc_ValueError);
            if (ax == -1 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return NULL;
            }
            if (ax < 0)
                ax += self->ndim;
            if (ax < 0 || ax >= self->ndim || seen[ax]) {
                PyErr_Format(PyExc_ValueError,
                             "transpose(): the axes must be a permutation of 0 to %d, got %R",
                             self->ndim - 1, axes_o);
                Py_DECREF(seq);
                return NULL;
            }
            seen[ax] = 1;
            axes[i] = (int)ax;
        }
        Py_DECREF(seq);
    }
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    for (int i = 0; i < self->ndim; i++) {
        shape[i] = self->shape[axes[i]];
        strides[i] = self->strides[axes[i]];
    }
    return (PyObject *)make_view(self, self->offset, self->ndim, shape, strides);
}

static PyObject *
array_transpose(cukit_Array *self, PyObject *args)
{
    PyObject *axes = NULL;
    if (PyTuple_GET_SIZE(args) == 1 && PyTuple_GET_ITEM(args, 0) != Py_None &&
        !PyIndex_Check(PyTuple_GET_ITEM(args, 0)))
        axes = PyTuple_GET_ITEM(args, 0);
    else if (PyTuple_GET_SIZE(args) > 0 && PyTuple_GET_ITEM(args, 0) != Py_None)
        axes = args;
    return transpose_axes(self, axes);
}

static PyObject *
array_get_T(cukit_Array *self, void *c)
{
    return transpose_axes(self, NULL);
}

static void array_dealloc(cukit_Array *self);

/* ------------------------------------------------------------------ math: hooks into compute/
 *
 * Operators and math methods live in the compute layer, above this one; it registers
 * st->array_math and st->array_call at init, and these slots call through them. */

static PyObject *
math_op(PyObject *a, PyObject *b, int op, int inplace)
{
    PyObject *self = Py_TYPE(a)->tp_dealloc == (destructor)array_dealloc ? a : b;
    cukit_state *st = ((cukit_Array *)self)->st;
    if (st->array_math == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    return st->array_math(st, op, a, b, inplace);
}

#define ARRAY_BINOPS(X)                                                                  \
    X(add, ADD) X(sub, SUB) X(mul, MUL) X(truediv, TRUEDIV) X(floordiv, FLOORDIV)          \
    X(mod, MOD) X(lshift, LSHIFT) X(rshift, RSHIFT) X(and, AND) X(or, OR) X(xor, XOR)
#define BINOP(name, OP)                                                                  \
    static PyObject *array_nb_##name(PyObject *a, PyObject *b)                           \
    {                                                                                    \
        return math_op(a, b, CUKIT_OP_##OP, 0);                                          \
    }                                                                                    \
    static PyObject *array_nb_i##name(PyObject *a, PyObject *b)                          \
    {                                                                                    \
        return math_op(a, b, CUKIT_OP_##OP, 1);                                          \
    }
ARRAY_BINOPS(BINOP)
#undef BINOP

static PyObject *
array_nb_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None)
        Py_RETURN_NOTIMPLEMENTED;
    return math_op(a, b, CUKIT_OP_POW, 0);
}

static PyObject *
array_nb_ipow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None)
        Py_RETURN_NOTIMPLEMENTED;
    return math_op(a, b, CUKIT_OP_POW, 1);
}

#define UNOP(name, OP)                                                                   \
    static PyObject *array_nb_##name(PyObject *a)                                        \
    {                                                                                    \
        return math_op(a, NULL, CUKIT_OP_##OP, 0);                                       \
    }
UNOP(neg, NEG) UNOP(pos, POS) UNOP(abs, ABS) UNOP(invert, INVERT)
#undef UNOP

static int
array_nb_bool(PyObject *a)
{
    PyObject *r = math_op(a, NULL, CUKIT_OP_BOOL, 0);
    if (r == NULL)
        return -1;
    int v = r == Py_NotImplemented ? 1 : PyObject_IsTrue(r);
    Py_DECREF(r);
    return v;
}

static PyObject *
array_richcompare(PyObject *a, PyObject *b, int op)
{
    return math_op(a, b, CUKIT_OP_LT + op, 0);
}

static PyObject *
math_call(PyObject *self, int which, PyObject *args, PyObject *kwargs)
{
    cukit_state *st = ((cukit_Array *)self)->st;
    if (st->array_call == NULL) {
        PyErr_SetString(PyExc_NotImplementedError, "array math is not available");
        return NULL;
    }
    return st->array_call(st, which, self, args, kwargs);
}

static PyObject *
array_astype(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return math_call(self, CUKIT_CALL_ASTYPE, args, kwargs);
}

static PyObject *
array_conj(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return math_call(self, CUKIT_CALL_CONJ, NULL, NULL);
}

static PyObject *
array_get_real(PyObject *self, void *c)
{
    return math_call(self, CUKIT_CALL_REAL, NULL, NULL);
}

static PyObject *
array_get_imag(PyObject *self, void *c)
{
    return math_call(self, CUKIT_CALL_IMAG, NULL, NULL);
}

/* ------------------------------------------------------------------ type slots */

static void
array_dealloc(cukit_Array *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_XDECREF(self->buffer);
    Py_XDECREF(self->owner);
    Py_XDECREF(self->dtype);
    Py_XDECREF(self->device);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *
array_repr(cukit_Array *self)
{
    PyObject *shape = cukit_array_shape(self);
    if (shape == NULL)
        return NULL;
    PyObject *out = PyUnicode_FromFormat(
        "<cukit.Array shape=%R dtype=%S on device %d%s%s%s>", shape, self->dtype,
        self->device->ordinal, is_c_contig(self) ? "" : ", strided",
        self->buffer ? "" : ", imported", cukit_array_live(self) ? "" : ", freed");
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
    return cukit_array_shape(self);
}

static PyObject *
array_get_strides(cukit_Array *self, void *c)
{
    return cukit_array_strides(self);
}

static PyObject *
array_get_ptr(cukit_Array *self, void *c)
{
    if (check_live(self) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(cukit_array_ptr(self));
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
    return Py_NewRef(self->device);
}

static PyObject *
array_get_buffer(cukit_Array *self, void *c)
{
    return Py_NewRef(self->buffer ? (PyObject *)self->buffer : Py_None);
}

static PyObject *
array_get_contiguous(cukit_Array *self, void *c)
{
    return PyBool_FromLong(is_c_contig(self));
}

static PyObject *
array_get_flags(cukit_Array *self, void *c)
{
    return Py_BuildValue("{sOsOsO}", "C_CONTIGUOUS", is_c_contig(self) ? Py_True : Py_False,
                         "F_CONTIGUOUS",
                         (self->flags & CUKIT_ARRAY_F_CONTIG) ? Py_True : Py_False, "WRITEABLE",
                         (self->flags & CUKIT_ARRAY_READONLY) ? Py_False : Py_True);
}

static PyObject *
array_get_cai(cukit_Array *self, void *c)
{
    if (check_live(self) < 0)
        return NULL;
    PyObject *shape = cukit_array_shape(self);
    PyObject *strides = !shape ? NULL
                        : is_c_contig(self) ? Py_NewRef(Py_None)
                                            : cukit_array_strides(self);
    PyObject *typestr = strides ? PyObject_GetAttrString(self->dtype, "str") : NULL;
    PyObject *out = NULL;
    if (typestr)
        out = Py_BuildValue("{sOsOs(KO)sisOsi}", "shape", shape, "typestr", typestr, "data",
                            (unsigned long long)cukit_array_ptr(self),
                            (self->flags & CUKIT_ARRAY_READONLY) ? Py_True : Py_False,
                            "version", 3, "strides", strides, "stream", 1);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(typestr);
    return out;
}

static PyMemberDef array_members[] = {
    {"dtype", Py_T_OBJECT_EX, offsetof(cukit_Array, dtype), Py_READONLY, "The numpy dtype."},
    {NULL},
};

static PyGetSetDef array_getset[] = {
    {"shape", (getter)array_get_shape, NULL, "Tuple of dimensions."},
    {"strides", (getter)array_get_strides, NULL,
     "Tuple of byte steps per dimension; a view's may be any multiple, or negative."},
    {"ptr", (getter)array_get_ptr, NULL, "Device address of the first element."},
    {"size", (getter)array_get_size, NULL, "Number of elements."},
    {"nbytes", (getter)array_get_nbytes, NULL, "Bytes of the elements (size * itemsize)."},
    {"itemsize", (getter)array_get_itemsize, NULL, "Bytes per element."},
    {"ndim", (getter)array_get_ndim, NULL, "Number of dimensions."},
    {"device", (getter)array_get_device, NULL, "The Device that holds the data."},
    {"buffer", (getter)array_get_buffer, NULL,
     "The Buffer that owns the memory, shared by views; None for imported memory."},
    {"is_contiguous", (getter)array_get_contiguous, NULL,
     "True when the elements are in C order with no gaps (what a kernel pointer needs)."},
    {"flags", (getter)array_get_flags, NULL,
     "dict: C_CONTIGUOUS, F_CONTIGUOUS and WRITEABLE, as numpy names them."},
    {"T", (getter)array_get_T, NULL, "The transposed view (dimensions reversed)."},
    {"__cuda_array_interface__", (getter)array_get_cai, NULL,
     "The CUDA Array Interface (version 3), for CuPy, PyTorch, numba and others."},
    {"real", (getter)array_get_real, NULL,
     "The real part: a view for complex arrays, the array itself otherwise."},
    {"imag", (getter)array_get_imag, NULL,
     "The imaginary part: a view for complex arrays, zeros (a new array) otherwise."},
    {NULL},
};

static PyMethodDef array_methods[] = {
    {"get", (PyCFunction)(void (*)(void))array_get, METH_VARARGS | METH_KEYWORDS,
     "get(out=None, stream=None) -> numpy.ndarray: copy to the host; into `out` when given "
     "(any layout; with stream= a C-contiguous one). With stream= the copy is only queued: "
     "the host array holds the data once the stream is synchronized."},
    {"set", (PyCFunction)(void (*)(void))array_set, METH_VARARGS | METH_KEYWORDS,
     "set(host, stream=None): copy from a host array of the same shape and dtype (or bytes "
     "of equal size). With stream= the copy is only queued: keep the host array alive and "
     "unchanged until the stream is synchronized."},
    {"copy", (PyCFunction)(void (*)(void))array_copy_method, METH_VARARGS | METH_KEYWORDS,
     "copy(stream=None) -> Array: a new C-contiguous device array with the same data."},
    {"fill", (PyCFunction)(void (*)(void))array_fill, METH_VARARGS | METH_KEYWORDS,
     "fill(value, stream=None): set every element, with the memset family where the layout "
     "allows, else a fill kernel (asynchronous on the stream; capturable into a graph)."},
    {"reshape", (PyCFunction)array_reshape, METH_VARARGS,
     "reshape(*shape) -> Array: a view with another shape (one dimension may be -1). "
     "Raises ValueError when the layout cannot be reshaped without copying."},
    {"transpose", (PyCFunction)array_transpose, METH_VARARGS,
     "transpose(*axes) -> Array: a view with the dimensions permuted (reversed by default)."},
    {"free", (PyCFunction)array_free, METH_NOARGS,
     "Free the device memory now (views of it become unusable); for imported memory, let go "
     "of the producer. Safe to call twice."},
    {"__dlpack__", (PyCFunction)(void (*)(void))cukit_array_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a DLPack "
     "capsule sharing this array's memory."},
    {"__dlpack_device__", (PyCFunction)cukit_array_dlpack_device, METH_NOARGS,
     "__dlpack_device__() -> (2, ordinal): kDLCUDA and the device."},
    {"astype", (PyCFunction)(void (*)(void))array_astype, METH_VARARGS | METH_KEYWORDS,
     "astype(dtype, copy=True, stream=None) -> Array: the values cast to dtype (numpy's "
     "unsafe cast), in a new C-contiguous array; the array itself when copy=False and the "
     "dtype is its own."},
    {"conj", (PyCFunction)array_conj, METH_NOARGS, "conj() -> Array: cukit.conjugate(a)."},
    {"conjugate", (PyCFunction)array_conj, METH_NOARGS, "conjugate() -> Array: cukit.conjugate(a)."},
    {NULL},
};

static PyType_Slot array_slots[] = {
    {Py_tp_doc, "Array: an N-D array in device memory; views share it.\n\n"
                "Made by cukit.to_device, empty, zeros, empty_like, asarray, from_dlpack, "
                "and by indexing, reshape and transpose (views)."},
    {Py_tp_dealloc, array_dealloc},
    {Py_tp_repr, array_repr},
    {Py_tp_members, array_members},
    {Py_tp_getset, array_getset},
    {Py_tp_methods, array_methods},
    {Py_sq_length, array_len},
    {Py_mp_length, array_len},
    {Py_mp_subscript, array_subscript},
    {Py_mp_ass_subscript, array_ass_subscript},
#define BINSLOTS(slot, fn) {Py_nb_##slot, array_nb_##fn}, {Py_nb_inplace_##slot, array_nb_i##fn},
    BINSLOTS(add, add) BINSLOTS(subtract, sub) BINSLOTS(multiply, mul)
    BINSLOTS(true_divide, truediv) BINSLOTS(floor_divide, floordiv) BINSLOTS(remainder, mod)
    BINSLOTS(lshift, lshift) BINSLOTS(rshift, rshift) BINSLOTS(and, and) BINSLOTS(or, or)
    BINSLOTS(xor, xor)
#undef BINSLOTS
    {Py_nb_power, array_nb_pow},
    {Py_nb_inplace_power, array_nb_ipow},
    {Py_nb_negative, array_nb_neg},
    {Py_nb_positive, array_nb_pos},
    {Py_nb_absolute, array_nb_abs},
    {Py_nb_invert, array_nb_invert},
    {Py_nb_bool, array_nb_bool},
    {Py_tp_richcompare, array_richcompare},
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
    if (parse_shape(shape_o, shape, &ndim, 0) < 0)
        return NULL;
    PyObject *dtype = cukit_resolve_dtype(st, dtype_o);
    if (dtype == NULL)
        return NULL;
    cukit_Device *dev = cukit_device_arg(st, device);
    cukit_Array *a = dev ? array_create(st, dev, ndim, shape, dtype) : NULL;
    Py_DECREF(dtype);
    if (a && zero && a->nbytes > 0 &&
        (cukit_device_activate(dev) < 0 ||
         CU_CALL(st, cuMemsetD8, (cukit_array_ptr(a), 0, (size_t)a->nbytes)) < 0))
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
        device = (PyObject *)((cukit_Array *)a)->device;
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

/* to_device's work: host data (any layout, converted by numpy) -> a new array.
 * With a stream (h, sync=0) the host data must already be what is copied. */
static PyObject *
from_host(cukit_state *st, PyObject *obj, PyObject *dtype, PyObject *device, PyObject *stream)
{
    if (cukit_numpy(st) < 0)
        return NULL;
    int sync = stream == NULL || stream == Py_None;
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
    PyObject *checked = dt ? cukit_resolve_dtype(st, dt) : NULL;
    Py_XDECREF(dt);
    cukit_Array *a = NULL;
    Py_buffer view;
    if (checked && host && !sync && host != obj)
        PyErr_Format(PyExc_ValueError, async_host_msg, "to_device()", checked);
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
            a = array_create(st, dev, view.ndim, shape, checked);
        if (a && (async_stream(a, sync ? Py_None : stream, host, &h) < 0 ||
                  host_transfer(a, view.buf, h, sync, 1) < 0))
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
        cukit_Array *out = array_create(st, dev, a->ndim, a->shape, a->dtype);
        if (out && copy_arrays(out, a, stream, "to_device()") < 0)
            Py_CLEAR(out);
        return (PyObject *)out;
    }
    return from_host(st, obj, dtype, device, stream);
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
    if (dst_dev && !src_dev) {
        if (set_from_host((cukit_Array *)dst_o, src_o, stream, "copy(dst, src)") < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    if (src_dev && !dst_dev) {
        PyObject *a = PyTuple_New(0), *kw = Py_BuildValue("{sOsO}", "out", dst_o, "stream", stream);
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
    if (copy_arrays((cukit_Array *)dst_o, (cukit_Array *)src_o, stream, "copy()") < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
mod_ascontiguousarray(PyObject *m, PyObject *obj)
{
    cukit_state *st = PyModule_GetState(m);
    PyObject *a = Py_IS_TYPE(obj, st->ArrayType) ? Py_NewRef(obj)
                                                 : PyObject_CallMethod(m, "asarray", "O", obj);
    if (a == NULL)
        return NULL;
    if (!Py_IS_TYPE(a, st->ArrayType) || is_c_contig((cukit_Array *)a))
        return a;
    PyObject *out = (PyObject *)cukit_array_copy((cukit_Array *)a);
    Py_DECREF(a);
    return out;
}

static PyMethodDef array_functions[] = {
    {"copy", (PyCFunction)(void (*)(void))mod_copy, METH_VARARGS | METH_KEYWORDS,
     "copy(dst, src, stream=None): copy between arrays of the same shape and dtype, either "
     "side a device or host array, either side strided. With stream= the copy is only "
     "queued (a host array must be C-contiguous and stay alive and unchanged until the "
     "stream is synchronized); without, device-to-device copies are queued on the default "
     "stream and host copies wait."},
    {"to_device", (PyCFunction)(void (*)(void))mod_to_device, METH_VARARGS | METH_KEYWORDS,
     "to_device(obj, dtype=None, device=None, stream=None) -> Array: copy a numpy array (or "
     "anything numpy.asarray takes, of any layout) to a new C-contiguous device array. With "
     "stream= the copy is only queued, straight from obj, which must then be a C-contiguous "
     "array of the final dtype that stays alive and unchanged until the stream is "
     "synchronized."},
    {"ascontiguousarray", (PyCFunction)mod_ascontiguousarray, METH_O,
     "ascontiguousarray(a) -> Array: a itself when C-contiguous, else a C-contiguous copy."},
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
    /* numpy defers to our reflected operators (ndarray + Array reaches Array.__radd__,
     * which explains what to do) instead of making an object array. */
    if (PyDict_SetItemString(st->ArrayType->tp_dict, "__array_ufunc__", Py_None) < 0)
        return -1;
    PyType_Modified(st->ArrayType);
    return PyModule_AddFunctions(module, array_functions);
}
