/* copies.c - Array.get, set, copy and fill: host and device copies of any layout, in either direction */
#include "array/impl.h"

#include <string.h>

/* numpy.asarray(obj, dtype=dtype, order="C"). New ref or NULL. */
PyObject *
cukit_as_host_array(cukit_state *st, PyObject *obj, PyObject *dtype)
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
int
cukit_array_stream(cukit_Array *a, PyObject *stream, PyObject *keep, CUstream *h)
{
    if (cukit_stream_handle(a->st, stream, a->device, h) < 0)
        return -1;
    return cukit_capture_keep(a->st, stream, keep);
}


/* Host bytes in C order (a->nbytes of them) to the array (to_device=1) or back
 * (0). The array may be strided: one contiguous run is copied directly, else
 * through contiguous device scratch that is rearranged on the device. sync=0 only
 * queues on h. */
int
cukit_array_host_transfer(cukit_Array *a, void *host, CUstream h, int sync, int to_device)
{
    cukit_state *st = a->st;
    if (a->nbytes == 0)
        return 0;
    if (cukit_device_activate(a->device) < 0)
        return -1;
    CUdeviceptr dev = cukit_array_ptr(a);
    size_t n = (size_t)a->nbytes;
    if (cukit_array_is_c_contig(a))
        return to_device ? cukit_copy_htod(st, dev, host, n, h, sync)
                         : cukit_copy_dtoh(st, host, dev, n, h, sync);
    cukit_scratch tmp;
    Py_ssize_t cs[CUKIT_MAXDIM];
    cukit_c_strides(a->ndim, a->shape, a->itemsize, cs);
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
    if (rc == 0 && sync) {
        CU_CALL_NOGIL(st, cuStreamSynchronize, (h));
        if (cukit_report_raise(st) < 0)
            return -1;
    }
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
    cukit_c_strides(dst->ndim, dst->shape, dst->itemsize, cs);
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

/* dst <- src, one contiguous run each on two devices, queued on h (a stream of dst's
 * device) after the work queued so far on src's legacy stream: cuMemcpyPeerAsync,
 * which takes the NVLink/PCIe peer path where there is one and stages otherwise. */
static int
peer_copy(cukit_Array *dst, cukit_Array *src, CUstream h)
{
    cukit_state *st = dst->st;
    CUevent ready = NULL;
    /* The direct path (NVLink or PCIe peer to peer) where the hardware has one. */
    if (cukit_device_enable_peer(dst->device, src->device) < 0)
        return -1;
    if (cukit_device_activate(src->device) < 0 ||
        CU_CALL(st, cuEventCreate, (&ready, CU_EVENT_DISABLE_TIMING)) < 0)
        return -1;
    int rc = CU_CALL(st, cuEventRecord, (ready, NULL));
    if (rc == 0)
        rc = cukit_device_activate(dst->device);
    if (rc == 0)
        rc = CU_CALL(st, cuStreamWaitEvent, (h, ready, 0));
    cukit_api.cuEventDestroy(ready); /* the wait keeps what it needs */
    if (rc < 0)
        return -1;
    if (cukit_api.cuMemcpyPeerAsync)
        return CU_CALL(st, cuMemcpyPeerAsync,
                       (cukit_array_ptr(dst), dst->device->ctx, cukit_array_ptr(src),
                        src->device->ctx, (size_t)dst->nbytes, h));
    /* Unified addressing: the plain copy also crosses devices. */
    return CU_CALL(st, cuMemcpyDtoDAsync,
                   (cukit_array_ptr(dst), cukit_array_ptr(src), (size_t)dst->nbytes, h));
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
int
cukit_array_copy_into(cukit_Array *dst, cukit_Array *src, PyObject *stream, const char *what)
{
    if (cukit_array_check_live(dst) < 0 || cukit_array_check_live(src) < 0 || cukit_array_check_writable(dst, what) < 0 ||
        check_same_layout(dst, src, what) < 0)
        return -1;
    CUstream h;
    PyObject *pair = PyTuple_Pack(2, (PyObject *)dst, (PyObject *)src);
    int rc = pair ? cukit_array_stream(dst, stream, pair, &h) : -1;
    Py_XDECREF(pair);
    if (rc < 0)
        return -1;
    if (dst->device == src->device)
        return device_copy(dst, src, h);
    /* Across devices the driver copies one contiguous run (unified addressing). */
    if (!cukit_array_is_c_contig(dst) || !cukit_array_is_c_contig(src)) {
        PyErr_Format(PyExc_ValueError,
                     "%s: a copy between device %d and device %d needs two C-contiguous "
                     "arrays; make them so with cukit.ascontiguousarray(x)",
                     what, src->device->ordinal, dst->device->ordinal);
        return -1;
    }
    if (dst->nbytes == 0)
        return 0;
    return peer_copy(dst, src, h);
}

/* Array.to(device, stream=None): self when it is on `device` already, else a new
 * C-contiguous array there with the same data, copied peer to peer (queued on
 * `stream`, a stream of the destination device). */
PyObject *
cukit_array_to(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", "stream", NULL};
    PyObject *device, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:to", kwlist, &device, &stream))
        return NULL;
    cukit_Device *dev = cukit_device_arg(self->st, device);
    if (dev == NULL || cukit_array_check_live(self) < 0)
        return NULL;
    if (dev == self->device)
        return Py_NewRef(self);
    /* A strided array is first made contiguous on its own device (the peer copy
     * is queued after it through peer_copy's event). */
    cukit_Array *src = cukit_array_is_c_contig(self) ? (cukit_Array *)Py_NewRef(self)
                                                      : cukit_array_copy(self);
    if (src == NULL)
        return NULL;
    cukit_Array *out = cukit_array_create(self->st, dev, self->ndim, self->shape, self->dtype);
    if (out && cukit_array_copy_into(out, src, stream, "Array.to()") < 0)
        Py_CLEAR(out);
    Py_DECREF(src);
    return (PyObject *)out;
}

/* A new C-contiguous copy of a on its device, queued on h. New ref or NULL. */
static cukit_Array *
copy_on(cukit_Array *a, CUstream h)
{
    if (cukit_array_check_live(a) < 0)
        return NULL;
    cukit_Array *out = cukit_array_create(a->st, a->device, a->ndim, a->shape, a->dtype);
    if (out && device_copy(out, a, h) < 0)
        Py_CLEAR(out);
    return out;
}

cukit_Array *
cukit_array_copy(cukit_Array *a)
{
    CUstream h; /* the current stream (`with stream:`), else the legacy one */
    if (cukit_stream_handle(a->st, Py_None, a->device, &h) < 0)
        return NULL;
    return copy_on(a, h);
}

/* ------------------------------------------------------------------ host copies */

PyObject *
cukit_array_get(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"out", "stream", NULL};
    PyObject *out = Py_None, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:get", kwlist, &out, &stream))
        return NULL;
    cukit_state *st = self->st;
    CUstream h = NULL;
    int sync = stream == Py_None;
    if (cukit_array_check_live(self) < 0 || cukit_numpy(st) < 0 ||
        cukit_array_stream(self, stream, (PyObject *)self, &h) < 0)
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
                PyObject *tmp = noargs ? cukit_array_get(self, noargs, NULL) : NULL;
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
    if (cukit_capture_keep(self->st, stream, out) < 0) { /* the graph writes it */
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
    int rc = cukit_array_host_transfer(self, view.buf, h, sync, 0);
    PyBuffer_Release(&view);
    if (rc < 0)
        Py_CLEAR(out);
    return out;
}

const char cukit_async_host_msg[] =
    "%s with stream= copies straight from the host array when the stream gets there, so it "
    "needs a C-contiguous numpy array of the device array's dtype (here %S) or a bytes-like "
    "object; convert it first with numpy.ascontiguousarray(x, dtype), or leave out stream=";

/* set() and copy(dst, host): host data -> self, on `stream` (None: wait for it). */
int
cukit_array_set_from_host(cukit_Array *self, PyObject *host, PyObject *stream, const char *what)
{
    cukit_state *st = self->st;
    CUstream h = NULL;
    int sync = stream == Py_None;
    if (cukit_array_check_live(self) < 0 || cukit_array_check_writable(self, what) < 0 || cukit_numpy(st) < 0 ||
        cukit_array_stream(self, stream, (PyObject *)self, &h) < 0)
        return -1;
    PyObject *src;
    if (PyObject_TypeCheck(host, (PyTypeObject *)st->np_ndarray)) {
        if (check_host_match(self, host, what) < 0)
            return -1;
        int contig = host_c_contiguous(host);
        if (contig < 0)
            return -1;
        if (!contig && !sync) {
            PyErr_Format(PyExc_ValueError, cukit_async_host_msg, what, self->dtype);
            return -1;
        }
        /* C-contiguous: the array itself; else numpy makes a contiguous copy */
        src = contig ? Py_NewRef(host) : cukit_as_host_array(st, host, NULL);
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
        PyErr_Format(PyExc_ValueError, cukit_async_host_msg, what, self->dtype);
        return -1;
    }
    else {
        src = cukit_as_host_array(st, host, self->dtype); /* lists and scalars take our dtype */
        if (src && check_host_match(self, src, what) < 0)
            Py_CLEAR(src);
    }
    if (src == NULL)
        return -1;
    if (cukit_capture_keep(self->st, stream, src) < 0) { /* the graph reads it */
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
        rc = cukit_array_host_transfer(self, view.buf, h, sync, 1);
    PyBuffer_Release(&view);
    Py_DECREF(src);
    return rc;
}

PyObject *
cukit_array_set(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"host", "stream", NULL};
    PyObject *host, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:set", kwlist, &host, &stream))
        return NULL;
    if (cukit_array_set_from_host(self, host, stream, "set()") < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyObject *
cukit_array_copy_method(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", NULL};
    PyObject *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:copy", kwlist, &stream))
        return NULL;
    CUstream h;
    if (cukit_array_check_live(self) < 0 || cukit_array_stream(self, stream, (PyObject *)self, &h) < 0)
        return NULL;
    cukit_Array *out = copy_on(self, h);
    if (out && cukit_capture_keep(self->st, stream, (PyObject *)out) < 0)
        Py_CLEAR(out);
    return (PyObject *)out;
}

/* The element bytes of `value` in a's dtype, by numpy's conversion rules (with its
 * range errors). New ref (bytes of a->itemsize) or NULL. */
PyObject *
cukit_array_element_bytes(cukit_Array *a, PyObject *value, const char *what)
{
    PyObject *one = cukit_as_host_array(a->st, value, a->dtype);
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

PyObject *
cukit_array_fill(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"value", "stream", NULL};
    PyObject *value, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:fill", kwlist, &value, &stream))
        return NULL;
    CUstream h;
    if (cukit_array_check_live(self) < 0 || cukit_array_check_writable(self, "fill()") < 0 || cukit_numpy(self->st) < 0)
        return NULL;
    PyObject *raw = cukit_array_element_bytes(self, value, "fill()");
    if (raw == NULL)
        return NULL;
    int rc = -1;
    if (cukit_array_stream(self, stream, (PyObject *)self, &h) == 0 &&
        cukit_device_activate(self->device) == 0)
        rc = cukit_strided_fill(self->device, cukit_array_ptr(self), self->strides, self->ndim,
                                self->shape, PyBytes_AS_STRING(raw), self->itemsize, h);
    Py_DECREF(raw);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyObject *
cukit_array_free(cukit_Array *self, PyObject *Py_UNUSED(ignored))
{
    if (self->buffer == NULL) {
        Py_CLEAR(self->owner); /* imported: let go of the producer's memory */
        Py_RETURN_NONE;
    }
    if (cukit_buffer_release(self->buffer) < 0)
        return NULL;
    Py_RETURN_NONE;
}

