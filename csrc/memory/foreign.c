/* foreign.c - other libraries' device arrays: DLPack capsules, the CUDA Array Interface, torch tensors */
#include "memory/memory.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ DLPack */

static const char *
device_type_name(int t)
{
    static const struct {
        int value;
        const char *name;
    } names[] = {{1, "kDLCPU"},         {2, "kDLCUDA"},      {3, "kDLCUDAHost"},
                 {4, "kDLOpenCL"},      {7, "kDLVulkan"},    {8, "kDLMetal"},
                 {9, "kDLVPI"},         {10, "kDLROCM"},     {11, "kDLROCMHost"},
                 {12, "kDLExtDev"},     {13, "kDLCUDAManaged"}, {14, "kDLOneAPI"},
                 {15, "kDLWebGPU"},     {16, "kDLHexagon"},  {17, "kDLMAIA"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].value == t)
            return names[i].name;
    return "of unknown type";
}

int
cukit_dlpack_is_cuda(int t)
{
    return t == kDLCUDA || t == kDLCUDAManaged;
}

/* The TypeError for data that is not in CUDA device memory. Returns -1. */
int
cukit_dlpack_not_device(const char *who, PyObject *obj, int type)
{
    if (type == kDLCPU || type == kDLCUDAHost)
        PyErr_Format(PyExc_TypeError,
                     "%s: the %s is in host memory (DLPack device %s), but a cukit array needs "
                     "device memory: copy it with cukit.to_device(x)",
                     who, Py_TYPE(obj)->tp_name, device_type_name(type));
    else
        PyErr_Format(PyExc_TypeError,
                     "%s: the %s is on DLPack device %s (%d), which is not a CUDA GPU", who,
                     Py_TYPE(obj)->tp_name, device_type_name(type), type);
    return -1;
}

/* (type, id) from a dl_device= argument. 0 / -1. */
int
cukit_dlpack_parse_device(PyObject *obj, int *type, int *id, const char *who)
{
    PyObject *t = PySequence_Check(obj) ? PySequence_Tuple(obj) : NULL;
    if (t == NULL || PyTuple_GET_SIZE(t) != 2) {
        Py_XDECREF(t);
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: a DLPack device is a (device_type, device_id) pair, "
                     "got %R", who, obj);
        return -1;
    }
    long a = PyLong_AsLong(PyTuple_GET_ITEM(t, 0));
    long b = a == -1 && PyErr_Occurred() ? -1 : PyLong_AsLong(PyTuple_GET_ITEM(t, 1));
    Py_DECREF(t);
    if (PyErr_Occurred())
        return -1;
    *type = (int)a;
    *id = (int)b;
    return 0;
}

/* obj.__dlpack__(stream=stream, max_version=(1, DLPACK_MINOR)), falling back to the
 * older signatures for producers that do not take max_version. Called as a method
 * with keyword names made once: a kernel argument that speaks only DLPack comes here
 * on every launch. New ref or NULL. */
PyObject *
cukit_dlpack_call(cukit_state *st, PyObject *obj, PyObject *stream)
{
    cukit_memory_state *m = st->memory;
    if (m->dlpack_kw == NULL) {
        PyObject *s = PyUnicode_InternFromString("stream");
        PyObject *v = s ? PyUnicode_InternFromString("max_version") : NULL;
        PyObject *kw = v ? PyTuple_Pack(2, s, v) : NULL;
        PyObject *old = kw ? PyTuple_Pack(1, s) : NULL;
        Py_XDECREF(s);
        Py_XDECREF(v);
        PyObject *version = old ? Py_BuildValue("(ii)", DLPACK_MAJOR, DLPACK_MINOR) : NULL;
        if (version == NULL) {
            Py_XDECREF(kw);
            Py_XDECREF(old);
            return NULL;
        }
        m->dlpack_kw = kw;
        m->dlpack_kw_old = old;
        m->dlpack_version = version;
    }
    PyObject *args[] = {obj, stream, m->dlpack_version};
    PyObject *cap = PyObject_VectorcallMethod(m->str_dlpack, args, 1, m->dlpack_kw);
    if (cap == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        cap = PyObject_VectorcallMethod(m->str_dlpack, args, 1, m->dlpack_kw_old);
    }
    return cap;
}

/* The tensor in a producer's capsule, without taking it: *versioned and the
 * DLTensor, or -1 with BufferError (not a fresh DLPack capsule, or a major
 * version cukit cannot read). */
int
cukit_dlpack_capsule_tensor(PyObject *cap, int *versioned, void **managed, DLTensor **t, uint64_t *flags,
               const char *who)
{
    *flags = 0;
    if (PyCapsule_IsValid(cap, CUKIT_DLPACK_VERSIONED)) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, CUKIT_DLPACK_VERSIONED);
        if (m->version.major != DLPACK_MAJOR) {
            PyErr_Format(PyExc_BufferError, "%s: the producer exported DLPack %u.%u; cukit reads "
                         "version %d.x", who, m->version.major, m->version.minor, DLPACK_MAJOR);
            return -1;
        }
        *versioned = 1;
        *managed = m;
        *t = &m->dl_tensor;
        *flags = m->flags;
        return 0;
    }
    if (PyCapsule_IsValid(cap, CUKIT_DLPACK_LEGACY)) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, CUKIT_DLPACK_LEGACY);
        *versioned = 0;
        *managed = m;
        *t = &m->dl_tensor;
        return 0;
    }
    PyErr_Format(PyExc_BufferError,
                 "%s: expected an unused DLPack capsule (\"dltensor\"), got %R; a capsule can "
                 "be consumed only once",
                 who, cap);
    return -1;
}

/* ------------------------------------------------------------------ kernel arguments */

int
cukit_dlpack_peek(cukit_state *st, PyObject *obj, cukit_dlpack_info *info)
{
    PyObject *devfn;
    int has = cukit_optional_attr_obj(obj, st->memory->str_dlpack_device, &devfn);
    if (has <= 0)
        return has;
    PyObject *where = PyObject_CallNoArgs(devfn);
    Py_DECREF(devfn);
    if (where == NULL)
        return -1;
    int rc = cukit_dlpack_parse_device(where, &info->device_type, &info->device_id, "__dlpack_device__()");
    Py_DECREF(where);
    if (rc < 0)
        return -1;
    if (!cukit_dlpack_is_cuda(info->device_type))
        return 2;
    /* stream=None: the producer orders the data with the legacy default stream. */
    PyObject *cap = cukit_dlpack_call(st, obj, Py_None);
    if (cap == NULL)
        return -1;
    int versioned;
    void *managed;
    DLTensor *t;
    uint64_t flags;
    rc = cukit_dlpack_capsule_tensor(cap, &versioned, &managed, &t, &flags, "a kernel argument");
    if (rc == 0) {
        info->ptr = (CUdeviceptr)(uintptr_t)t->data + t->byte_offset;
        info->typecode = cukit_typecode_of_dlpack(t->dtype.code, t->dtype.bits, t->dtype.lanes);
        info->c_contiguous = 1;
        if (t->strides) {
            int64_t want = 1;
            for (int i = t->ndim - 1; i >= 0; i--) {
                if (t->shape[i] == 0) {
                    info->c_contiguous = 1;
                    break;
                }
                if (t->shape[i] != 1 && t->strides[i] != want)
                    info->c_contiguous = 0;
                want *= t->shape[i];
            }
        }
        rc = 1;
    }
    Py_DECREF(cap); /* unconsumed: the producer's destructor calls its deleter */
    return rc;
}


/* ------------------------------------------------------------------ the CUDA Array Interface */

/* Read a tuple of ints into out (n of them). 0 / -1 with TypeError. */
static int
int_tuple(PyObject *t, Py_ssize_t *out, Py_ssize_t n, const char *what, const char *who)
{
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != n) {
        PyErr_Format(PyExc_TypeError, "%s: __cuda_array_interface__ has a bad %s: %R", who, what, t);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, i));
        if (out[i] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

int
cukit_cai_read(cukit_state *st, PyObject *obj, PyObject *cai, int full, const char *who,
               cukit_cai *out)
{
    if (!PyDict_Check(cai)) {
        PyErr_Format(PyExc_TypeError, "%s: __cuda_array_interface__ of a %s is not a dict", who,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    PyObject *shape_o = PyDict_GetItemWithError(cai, st->memory->str_shape);
    PyObject *typestr = shape_o ? PyDict_GetItemWithError(cai, st->memory->str_typestr) : NULL;
    PyObject *data = typestr ? PyDict_GetItemWithError(cai, st->memory->str_data) : NULL;
    if (PyErr_Occurred())
        return -1;
    if (shape_o == NULL || typestr == NULL || !PyUnicode_Check(typestr) || data == NULL ||
        !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2) {
        PyErr_Format(PyExc_TypeError, "%s: __cuda_array_interface__ of a %s lacks shape, typestr "
                     "or data", who, Py_TYPE(obj)->tp_name);
        return -1;
    }
    Py_ssize_t ndim = PyTuple_Check(shape_o) ? PyTuple_GET_SIZE(shape_o) : -1;
    if (ndim > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "%s: the array has %zd dimensions; cukit allows at most %d",
                     who, ndim, CUKIT_MAXDIM);
        return -1;
    }
    const char *ts = PyUnicode_AsUTF8(typestr);
    if (ts == NULL || int_tuple(shape_o, out->shape, ndim, "shape", who) < 0)
        return -1;
    out->ptr = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0));
    if (out->ptr == (CUdeviceptr)-1 && PyErr_Occurred())
        return -1;
    out->typestr = typestr;
    out->typecode = cukit_typecode_of_typestr(ts);
    out->itemsize = strlen(ts) > 2 ? atol(ts + 2) : 0;
    out->ndim = (int)ndim;
    out->readonly = 0;
    out->stream = NULL;
    /* C-order strides, replaced by the dict's own when it has them */
    Py_ssize_t want = out->itemsize;
    for (Py_ssize_t k = ndim - 1; k >= 0; k--) {
        out->strides[k] = want;
        want *= out->shape[k];
    }
    out->c_contiguous = 1;
    PyObject *strides_o = PyDict_GetItemWithError(cai, st->memory->str_strides);
    if (strides_o && strides_o != Py_None) {
        if (int_tuple(strides_o, out->strides, ndim, "strides", who) < 0)
            return -1;
        want = out->itemsize;
        for (Py_ssize_t k = ndim - 1; k >= 0; k--) {
            if (out->shape[k] == 0) {
                out->c_contiguous = 1;
                break;
            }
            if (out->shape[k] != 1 && out->strides[k] != want)
                out->c_contiguous = 0;
            want *= out->shape[k];
        }
    }
    if (PyErr_Occurred())
        return -1;
    if (!full)
        return 1;
    PyObject *mask = PyDict_GetItemString(cai, "mask");
    if (mask && mask != Py_None) {
        PyErr_Format(PyExc_TypeError, "%s: masked arrays are not supported", who);
        return -1;
    }
    if ((out->readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1))) < 0)
        return -1;
    out->stream = PyDict_GetItemString(cai, "stream");
    return 1;
}

/* ------------------------------------------------------------------ torch */

/* The typecode of a torch dtype object, remembered per dtype. -1 on error. */
static int
torch_typecode(cukit_state *st, PyObject *dtype)
{
    PyObject *hit = PyDict_GetItemWithError(st->memory->torch_dtypes, dtype);
    if (hit)
        return (int)PyLong_AsLong(hit);
    if (PyErr_Occurred())
        return -1;
    PyObject *text = PyObject_Str(dtype);
    const char *t = text ? PyUnicode_AsUTF8(text) : NULL;
    int tc = t && strncmp(t, "torch.", 6) == 0 ? cukit_typecode_of_torch(t + 6) : CUKIT_TC_OTHER;
    Py_XDECREF(text);
    if (t == NULL)
        return -1;
    PyObject *v = PyLong_FromLong(tc);
    if (v == NULL || PyDict_SetItem(st->memory->torch_dtypes, dtype, v) < 0) {
        Py_XDECREF(v);
        return -1;
    }
    Py_DECREF(v);
    return tc;
}

/* Its layout is not read: is_contiguous() measured about 0.17 us per tensor, a
 * quarter of this path, so a strided tensor is taken as the address of its first
 * element. */
int
cukit_torch_pointer(cukit_state *st, PyObject *obj, CUdeviceptr *ptr, long *ordinal,
                    int *typecode)
{
    if (st->memory->torch_tensor == NULL) {
        /* Only when the program imported torch itself: cukit never imports it. Asked
         * with an interned key: every foreign argument comes here while torch is not
         * imported, and a key made from C text would be a new str each time. */
        PyObject *torch = PyDict_GetItemWithError(PyImport_GetModuleDict(), st->memory->str_torch);
        PyObject *tensor = torch ? PyObject_GetAttrString(torch, "Tensor") : NULL;
        if (tensor == NULL) {
            PyErr_Clear();
            return 0;
        }
        st->memory->torch_tensor = tensor;
        if (st->memory->torch_dtypes == NULL && (st->memory->torch_dtypes = PyDict_New()) == NULL)
            return -1;
    }
    if (!PyObject_TypeCheck(obj, (PyTypeObject *)st->memory->torch_tensor))
        return 0;
    PyObject *where = PyObject_CallMethodNoArgs(obj, st->memory->str_get_device);
    *ordinal = where ? PyLong_AsLong(where) : -2;
    Py_XDECREF(where);
    if (*ordinal == -2 && PyErr_Occurred())
        return -1;
    if (*ordinal < 0) {
        *ordinal = -1;
        return 1;
    }
    PyObject *dtype = PyObject_GetAttr(obj, st->memory->str_dtype);
    *typecode = dtype ? torch_typecode(st, dtype) : -1;
    Py_XDECREF(dtype);
    if (*typecode < 0)
        return -1;
    PyObject *p = PyObject_CallMethodNoArgs(obj, st->memory->str_data_ptr);
    if (p == NULL)
        return -1;
    *ptr = PyLong_AsUnsignedLongLong(p);
    Py_DECREF(p);
    return PyErr_Occurred() ? -1 : 1;
}

/* ------------------------------------------------------------------ CuPy */

/* The typecode of a numpy dtype, remembered by its type number (CuPy's dtypes are
 * numpy's). -1 on error. */
static int
numpy_typecode(cukit_state *st, PyObject *dtype)
{
    PyObject *num = PyObject_GetAttr(dtype, st->memory->str_num);
    long n = num ? PyLong_AsLong(num) : -1;
    Py_XDECREF(num);
    if (n == -1 && PyErr_Occurred())
        return -1;
    int known = n >= 0 && n < (long)sizeof st->memory->np_typecodes;
    if (known && st->memory->np_typecodes[n])
        return st->memory->np_typecodes[n] - 1;
    int tc = cukit_typecode_of_dtype(dtype); /* numbers past the table: ml_dtypes' */
    if (tc >= 0 && tc != CUKIT_TC_OTHER && known) /* (strings and voids share a number) */
        st->memory->np_typecodes[n] = (signed char)(tc + 1);
    return tc;
}

/* cupy.ndarray once the program imported CuPy (cukit never imports it). 1 / 0 / -1. */
static int
cupy_known(cukit_state *st)
{
    if (st->memory->cupy_ndarray != NULL)
        return 1;
    PyObject *cupy = PyDict_GetItemWithError(PyImport_GetModuleDict(), st->memory->str_cupy);
    if (cupy == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *type;
    int has = cukit_optional_attr(cupy, "ndarray", &type);
    if (has <= 0)
        return has; /* a module named cupy without ndarray: not CuPy's */
    if (!PyType_Check(type)) {
        Py_DECREF(type);
        return 0;
    }
    st->memory->cupy_ndarray = (PyTypeObject *)type;
    return 1;
}

/* One attribute of a CuPy array or its parts: 1 with a new ref, 0 when missing (this
 * CuPy is not read by attributes from now on), -1 on error. */
static int
cupy_attr(cukit_state *st, PyObject *obj, PyObject *name, PyObject **out)
{
    int has = cukit_optional_attr_obj(obj, name, out);
    if (has == 0)
        st->memory->cupy_unreadable = 1;
    return has;
}

int
cukit_cupy_pointer(cukit_state *st, PyObject *obj, CUdeviceptr *ptr, int *typecode,
                   int *c_contiguous)
{
    int known = cupy_known(st);
    if (known <= 0 || st->memory->cupy_unreadable ||
        !Py_IS_TYPE(obj, st->memory->cupy_ndarray))
        return known < 0 ? -1 : 0;
    PyObject *data = NULL, *p = NULL, *dtype = NULL, *contig = NULL;
    int rc = cupy_attr(st, obj, st->memory->str_data, &data);
    if (rc > 0)
        rc = cupy_attr(st, data, st->runtime->str_ptr, &p);
    if (rc > 0)
        rc = cupy_attr(st, obj, st->memory->str_dtype, &dtype);
    if (rc > 0)
        rc = cupy_attr(st, obj, st->memory->str_c_contiguous, &contig);
    if (rc > 0) {
        *ptr = PyLong_AsUnsignedLongLong(p);
        *c_contiguous = PyObject_IsTrue(contig);
        *typecode = *c_contiguous < 0 || PyErr_Occurred() ? -1 : numpy_typecode(st, dtype);
        rc = *typecode < 0 ? -1 : 1;
    }
    Py_XDECREF(data);
    Py_XDECREF(p);
    Py_XDECREF(dtype);
    Py_XDECREF(contig);
    return rc;
}
