/* cudaarray.c - cukit.CudaArray: a CUDA array (1-D/2-D/3-D, layered, surface-capable) and its copies to and from host and device arrays */
#include "memory/memory.h"

#include <string.h>

/* The element types a CUDA array holds, one channel each. */
static const struct {
    int typecode;
    int format; /* CUarray_format */
} formats[] = {
    {CUKIT_TC_I8, CU_AD_FORMAT_SIGNED_INT8},    {CUKIT_TC_U8, CU_AD_FORMAT_UNSIGNED_INT8},
    {CUKIT_TC_I16, CU_AD_FORMAT_SIGNED_INT16},  {CUKIT_TC_U16, CU_AD_FORMAT_UNSIGNED_INT16},
    {CUKIT_TC_I32, CU_AD_FORMAT_SIGNED_INT32},  {CUKIT_TC_U32, CU_AD_FORMAT_UNSIGNED_INT32},
    {CUKIT_TC_F16, CU_AD_FORMAT_HALF},          {CUKIT_TC_F32, CU_AD_FORMAT_FLOAT},
};

int
cukit_array_format(int typecode, int channels, const char *who)
{
    int format = -1;
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
        if (formats[i].typecode == typecode)
            format = formats[i].format;
    if (format < 0) {
        PyErr_Format(PyExc_TypeError,
                     "%s: elements of dtype %s are not supported; textures and CUDA arrays hold "
                     "int8, uint8, int16, uint16, int32, uint32, float16 or float32 (convert "
                     "with .astype(numpy.float32), or store 64-bit values as 2 channels of "
                     "int32)",
                     who, cukit_typecode_name(typecode));
        return -1;
    }
    if (channels != 1 && channels != 2 && channels != 4) {
        PyErr_Format(PyExc_ValueError,
                     "%s: channels=%d is not supported; an element has 1, 2 or 4 channels "
                     "(pad 3-channel data such as RGB to 4)",
                     who, channels);
        return -1;
    }
    return format;
}

/* ------------------------------------------------------------------ releasing */

int
cukit_wait_queued(cukit_Device *dev)
{
    /* Dropped while a stream is captured: the legacy stream's query (in
     * cukit_device_release_stream) and the wait are refused outside relaxed mode. */
    int mode = cukit_capture_relax(dev->st, 1);
    CUstream s = cukit_device_release_stream(dev);
    CUresult res = CUDA_SUCCESS;
    if (s != NULL) {
        Py_BEGIN_ALLOW_THREADS
        res = cukit_api.cuStreamSynchronize(s);
        Py_END_ALLOW_THREADS
    }
    cukit_capture_restore(mode);
    if (s == NULL)
        return -1;
    return cukit_check_cu(dev->st, res, "cuStreamSynchronize");
}

void
cukit_report_release(PyObject *self, int rc)
{
    if (rc == 0)
        return;
    /* After a kernel fault every release fails; the fault was already reported. */
    PyObject *exc = PyErr_GetRaisedException();
    PyObject *code = exc ? PyObject_GetAttrString(exc, "code") : NULL;
    if (code == NULL)
        PyErr_Clear();
    int sticky = code && PyLong_Check(code) && cukit_cu_is_sticky((CUresult)PyLong_AsLong(code));
    Py_XDECREF(code);
    if (sticky) {
        Py_XDECREF(exc);
        return;
    }
    PyErr_SetRaisedException(exc);
    /* The type, not self: from a dealloc self's count is 0, and the hook would take and
     * drop a reference, deallocating it a second time. */
    PyErr_WriteUnraisable((PyObject *)Py_TYPE(self));
}

static void
cudaarray_dealloc(cukit_CudaArray *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->handle) {
        PyObject *saved = PyErr_GetRaisedException();
        /* A kernel queued before the last reference went may still read the array. */
        int rc = cukit_wait_queued(self->device);
        if (rc == 0)
            rc = CU_CALL(self->st, cuArrayDestroy, (self->handle));
        cukit_report_release((PyObject *)self, rc);
        PyErr_SetRaisedException(saved);
    }
    Py_XDECREF(self->device);
    Py_XDECREF(self->dtype);
    PyObject_Free(self);
    Py_DECREF(tp);
}

/* ------------------------------------------------------------------ creation */

static int
read_shape(PyObject *obj, int layered, Py_ssize_t *shape)
{
    PyObject *seq = PyUnicode_Check(obj) || PyBytes_Check(obj) ? NULL
                    : PyIndex_Check(obj) ? PyTuple_Pack(1, obj)
                                         : PySequence_Tuple(obj);
    for (Py_ssize_t i = 0; seq && i < PyTuple_GET_SIZE(seq); i++)
        if (!PyIndex_Check(PyTuple_GET_ITEM(seq, i)))
            Py_CLEAR(seq);
    if (seq == NULL) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "CudaArray shape must be an int or a tuple of ints, got %s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    int lo = layered ? 2 : 1, hi = 3;
    if (n < lo || n > hi) {
        PyErr_Format(PyExc_ValueError,
                     "CudaArray shape %R has %zd dimension%s; %s", obj, n, n == 1 ? "" : "s",
                     layered ? "a layered array's shape is (layers, width) or (layers, height, "
                               "width)"
                             : "a CUDA array is (width,), (height, width) or (depth, height, "
                               "width)");
        Py_DECREF(seq);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t v = PyNumber_AsSsize_t(PyTuple_GET_ITEM(seq, i), PyExc_OverflowError);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (v <= 0) {
            PyErr_Format(PyExc_ValueError, "CudaArray shape %R: every extent must be at least 1",
                         obj);
            Py_DECREF(seq);
            return -1;
        }
        shape[i] = v;
    }
    Py_DECREF(seq);
    return (int)n;
}

static PyObject *
cudaarray_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "dtype", "channels", "layered", "surface", "device", NULL};
    PyObject *shape_o, *dtype_o, *device = NULL;
    int channels = 1, layered = 0, surface = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|i$ppO:CudaArray", kwlist, &shape_o,
                                     &dtype_o, &channels, &layered, &surface, &device))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    Py_ssize_t shape[3];
    int ndim = read_shape(shape_o, layered, shape);
    if (ndim < 0)
        return NULL;
    PyObject *dtype = cukit_resolve_dtype(st, dtype_o);
    if (dtype == NULL)
        return NULL;
    int tc = cukit_typecode_of_dtype(dtype);
    int format = tc < 0 ? -1 : cukit_array_format(tc, channels, "CudaArray");
    cukit_Device *dev = format < 0 ? NULL : cukit_device_arg(st, device);
    if (dev == NULL || cukit_device_activate(dev) < 0) {
        Py_DECREF(dtype);
        return NULL;
    }
    cukit_CudaArray *a = PyObject_New(cukit_CudaArray, type);
    if (a == NULL) {
        Py_DECREF(dtype);
        return NULL;
    }
    a->st = st;
    a->device = (cukit_Device *)Py_NewRef(dev);
    a->handle = NULL;
    a->dtype = dtype;
    a->typecode = tc;
    a->format = format;
    a->channels = channels;
    a->ndim = ndim;
    memcpy(a->shape, shape, sizeof shape);
    a->layered = layered;
    a->surface = surface;
    /* numpy order, outermost first: the layer count, then depth, height, width */
    a->width = (size_t)shape[ndim - 1];
    a->height = a->depth = 0;
    int spatial = layered ? ndim - 1 : ndim;
    if (spatial >= 2)
        a->height = (size_t)shape[ndim - 2];
    if (spatial == 3 || layered)
        a->depth = (size_t)shape[0];
    CUDA_ARRAY3D_DESCRIPTOR d = {
        .Width = a->width, .Height = a->height, .Depth = a->depth, .Format = format,
        .NumChannels = (unsigned)channels,
        .Flags = (layered ? CUDA_ARRAY3D_LAYERED : 0) | (surface ? CUDA_ARRAY3D_SURFACE_LDST : 0),
    };
    CUarray h = NULL;
    if (CU_CALL(st, cuArray3DCreate, (&h, &d)) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    a->handle = h;
    return (PyObject *)a;
}

/* ------------------------------------------------------------------ copies */

/* The shape host and device arrays have: the array's, then the channels if more than 1. */
static int
full_shape(const cukit_CudaArray *a, Py_ssize_t *out)
{
    int n = a->ndim;
    memcpy(out, a->shape, sizeof a->shape);
    if (a->channels > 1)
        out[n++] = a->channels;
    return n;
}

static PyObject *
shape_tuple(const Py_ssize_t *shape, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *v = PyLong_FromSsize_t(shape[i]);
        if (v == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

/* ValueError unless (ndim, shape) is the array's full shape. */
static int
check_shape(const cukit_CudaArray *a, int ndim, const Py_ssize_t *shape, const char *who)
{
    Py_ssize_t want[4];
    int n = full_shape(a, want);
    int same = ndim == n;
    for (int i = 0; same && i < n; i++)
        same = shape[i] == want[i];
    if (same)
        return 0;
    PyObject *w = shape_tuple(want, n), *g = shape_tuple(shape, ndim);
    if (w && g)
        PyErr_Format(PyExc_ValueError, "%s: shape %R does not match the CudaArray's %R%s", who, g,
                     w, a->channels > 1 ? " (its shape, then the channels)" : "");
    Py_XDECREF(w);
    Py_XDECREF(g);
    return -1;
}

static int
check_dtype(const cukit_CudaArray *a, int tc, const char *who)
{
    if (tc == a->typecode)
        return 0;
    PyErr_Format(PyExc_TypeError,
                 "%s: dtype %s does not match the CudaArray's %s; convert it first "
                 "(x.astype(numpy.%s))",
                 who, cukit_typecode_name(tc), cukit_typecode_name(a->typecode),
                 cukit_typecode_name(a->typecode));
    return -1;
}

/* Copy the whole array to (to_array=1) or from host memory `host` or device memory
 * `dptr`, one C-contiguous run of the full shape. Synchronous on the legacy stream. */
static int
copy3d(cukit_CudaArray *a, int to_array, CUmemorytype kind, void *host, CUdeviceptr dptr)
{
    size_t row = a->width * (size_t)cukit_typecode_size(a->typecode) * (size_t)a->channels;
    size_t height = a->height ? a->height : 1, depth = a->depth ? a->depth : 1;
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    if (to_array) {
        c.srcMemoryType = kind;
        c.srcHost = host;
        c.srcDevice = dptr;
        c.srcPitch = row;
        c.srcHeight = height;
        c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
        c.dstArray = a->handle;
    }
    else {
        c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
        c.srcArray = a->handle;
        c.dstMemoryType = kind;
        c.dstHost = host;
        c.dstDevice = dptr;
        c.dstPitch = row;
        c.dstHeight = height;
    }
    c.WidthInBytes = row;
    c.Height = height;
    c.Depth = depth;
    if (cukit_device_activate(a->device) < 0)
        return -1;
    CU_CALL_NOGIL(a->st, cuMemcpy3D, (&c));
    return 0;
error:
    return -1;
}

/* Copy between the array and a device array exposing __cuda_array_interface__
 * (cukit.Array, CuPy, torch, ...). 1 when obj is one, 0 when not, -1 on error. */
static int
copy_device(cukit_CudaArray *a, PyObject *obj, int to_array, const char *who)
{
    cukit_state *st = a->st;
    PyObject *dict;
    int r = cukit_optional_attr_obj(obj, st->memory->str_cai, &dict);
    if (r <= 0)
        return r;
    cukit_cai cai;
    r = cukit_cai_read(st, obj, dict, 1, who, &cai);
    Py_DECREF(dict);
    if (r < 0 || check_dtype(a, cai.typecode, who) < 0 ||
        check_shape(a, cai.ndim, cai.shape, who) < 0)
        return -1;
    if (!cai.c_contiguous) {
        PyErr_Format(PyExc_ValueError, "%s: the device array is not C-contiguous; pass "
                     "cukit.ascontiguousarray(x)", who);
        return -1;
    }
    if (!to_array && cai.readonly) {
        PyErr_Format(PyExc_ValueError, "%s: the device array is read-only", who);
        return -1;
    }
    return copy3d(a, to_array, CU_MEMORYTYPE_DEVICE, NULL, cai.ptr) < 0 ? -1 : 1;
}

/* Copy between the array and a C-contiguous numpy array `arr` of its dtype and shape. */
static int
copy_host(cukit_CudaArray *a, PyObject *arr, int to_array, const char *who)
{
    PyObject *dt = PyObject_GetAttr(arr, a->st->memory->str_dtype);
    if (dt == NULL) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected a numpy array or a device array, got %s",
                     who, Py_TYPE(arr)->tp_name);
        return -1;
    }
    int tc = cukit_typecode_of_dtype(dt);
    Py_DECREF(dt);
    if (tc < 0 || check_dtype(a, tc, who) < 0)
        return -1;
    Py_buffer view;
    int flags = PyBUF_C_CONTIGUOUS | (to_array ? 0 : PyBUF_WRITABLE);
    if (PyObject_GetBuffer(arr, &view, flags) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s: out must be a writable C-contiguous numpy array",
                     who);
        return -1;
    }
    int rc = check_shape(a, view.ndim, view.shape, who);
    if (rc == 0)
        rc = copy3d(a, to_array, CU_MEMORYTYPE_HOST, view.buf, 0);
    PyBuffer_Release(&view);
    return rc;
}

static PyObject *
cudaarray_set(cukit_CudaArray *self, PyObject *src)
{
    const char *who = "CudaArray.set()";
    int r = copy_device(self, src, 1, who);
    if (r != 0)
        return r < 0 ? NULL : Py_NewRef(Py_None);
    if (cukit_numpy(self->st) < 0)
        return NULL;
    /* Lists and scalars take the array's dtype; a numpy array must already have it. */
    int is_nd = PyObject_IsInstance(src, self->st->np_ndarray);
    if (is_nd < 0)
        return NULL;
    PyObject *arr = is_nd ? PyObject_CallMethod(self->st->numpy, "ascontiguousarray", "O", src)
                          : PyObject_CallMethod(self->st->numpy, "ascontiguousarray", "OO", src,
                                                self->dtype);
    if (arr == NULL)
        return NULL;
    r = copy_host(self, arr, 1, who);
    Py_DECREF(arr);
    return r < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *
cudaarray_get(cukit_CudaArray *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"out", NULL};
    PyObject *out = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:get", kwlist, &out))
        return NULL;
    const char *who = "CudaArray.get()";
    if (out != Py_None) {
        int r = copy_device(self, out, 0, who);
        if (r == 0)
            r = copy_host(self, out, 0, who);
        return r < 0 ? NULL : Py_NewRef(out);
    }
    if (cukit_numpy(self->st) < 0)
        return NULL;
    Py_ssize_t shape[4];
    PyObject *t = shape_tuple(shape, full_shape(self, shape));
    PyObject *arr = t ? PyObject_CallFunctionObjArgs(self->st->np_empty, t, self->dtype, NULL)
                      : NULL;
    Py_XDECREF(t);
    if (arr && copy_host(self, arr, 0, who) < 0)
        Py_CLEAR(arr);
    return arr;
}

/* ------------------------------------------------------------------ attributes */

static PyObject *
cudaarray_get_shape(cukit_CudaArray *self, void *c)
{
    return shape_tuple(self->shape, self->ndim);
}

static PyObject *
cudaarray_get_int(cukit_CudaArray *self, void *c)
{
    const char *which = c;
    if (strcmp(which, "channels") == 0)
        return PyLong_FromLong(self->channels);
    if (strcmp(which, "ndim") == 0)
        return PyLong_FromLong(self->ndim);
    if (strcmp(which, "layered") == 0)
        return PyBool_FromLong(self->layered);
    if (strcmp(which, "surface") == 0)
        return PyBool_FromLong(self->surface);
    if (strcmp(which, "handle") == 0)
        return PyLong_FromVoidPtr(self->handle);
    Py_ssize_t n = (Py_ssize_t)cukit_typecode_size(self->typecode) * self->channels;
    for (int i = 0; i < self->ndim; i++)
        n *= self->shape[i];
    return PyLong_FromSsize_t(n); /* nbytes */
}

static PyObject *
cudaarray_repr(cukit_CudaArray *self)
{
    PyObject *shape = cudaarray_get_shape(self, NULL);
    if (shape == NULL)
        return NULL;
    PyObject *r = PyUnicode_FromFormat("<cukit.CudaArray %R %s%s%s%s on device %d>", shape,
                                       cukit_typecode_name(self->typecode),
                                       self->channels == 1 ? "" :
                                       self->channels == 2 ? " x2 channels" : " x4 channels",
                                       self->layered ? ", layered" : "",
                                       self->surface ? ", surface" : "", self->device->ordinal);
    Py_DECREF(shape);
    return r;
}

static PyMemberDef cudaarray_members[] = {
    {"device", Py_T_OBJECT_EX, offsetof(cukit_CudaArray, device), Py_READONLY, "The Device."},
    {"dtype", Py_T_OBJECT_EX, offsetof(cukit_CudaArray, dtype), Py_READONLY,
     "numpy dtype of one channel."},
    {NULL},
};

static PyGetSetDef cudaarray_getset[] = {
    {"shape", (getter)cudaarray_get_shape, NULL, "The shape given, channels not included.", NULL},
    {"channels", (getter)cudaarray_get_int, NULL, "Channels per element: 1, 2 or 4.", "channels"},
    {"ndim", (getter)cudaarray_get_int, NULL, "len(shape).", "ndim"},
    {"layered", (getter)cudaarray_get_int, NULL, "True: shape[0] counts layers.", "layered"},
    {"surface", (getter)cudaarray_get_int, NULL, "True: a Surface can be made over it.",
     "surface"},
    {"handle", (getter)cudaarray_get_int, NULL, "The CUarray, as an int.", "handle"},
    {"nbytes", (getter)cudaarray_get_int, NULL, "Bytes of the elements.", "nbytes"},
    {NULL},
};

static PyMethodDef cudaarray_methods[] = {
    {"set", (PyCFunction)cudaarray_set, METH_O,
     "set(src): copy in from host data (numpy, lists) or a device array of the same shape and "
     "dtype (shape + (channels,) when channels > 1)."},
    {"get", (PyCFunction)(void (*)(void))cudaarray_get, METH_VARARGS | METH_KEYWORDS,
     "get(out=None): copy out into a new numpy array, or into out (numpy or device array)."},
    {NULL},
};

static PyType_Slot cudaarray_slots[] = {
    {Py_tp_doc, "CudaArray(shape, dtype, channels=1, *, layered=False, surface=False, "
                "device=None): a CUDA array, the memory textures and surfaces read and write.\n\n"
                "shape is (width,), (height, width) or (depth, height, width); with "
                "layered=True, (layers, width) or (layers, height, width)."},
    {Py_tp_new, cudaarray_new},
    {Py_tp_dealloc, cudaarray_dealloc},
    {Py_tp_repr, cudaarray_repr},
    {Py_tp_members, cudaarray_members},
    {Py_tp_getset, cudaarray_getset},
    {Py_tp_methods, cudaarray_methods},
    {0, NULL},
};

static PyType_Spec cudaarray_spec = {
    .name = "cukit.CudaArray",
    .basicsize = sizeof(cukit_CudaArray),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = cudaarray_slots,
};

int
cukit_cudaarray_setup(PyObject *module, cukit_state *st)
{
    st->memory->CudaArrayType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &cudaarray_spec, NULL);
    if (st->memory->CudaArrayType == NULL)
        return -1;
    return PyModule_AddType(module, st->memory->CudaArrayType);
}
