/* dlpack.c - zero-copy exchange: DLPack export and import, CUDA Array Interface import, asarray and ascontiguousarray
 *
 * Export (Array.__dlpack__) hands out a DLManagedTensor(Versioned) whose
 * manager_ctx is a strong reference to the Array: the memory lives until the
 * consumer calls the deleter. Import (from_dlpack, asarray) takes ownership of
 * the producer's tensor in a capsule of our own whose destructor calls the
 * producer's deleter, and the new Array holds that capsule (or, through the CUDA
 * Array Interface, the producer object itself).
 *
 * cukit's own side of every exchange is the legacy default stream, the one
 * stream=None means everywhere in cukit. */
#include "array/impl.h"

#include <string.h>

/* Our own capsules owning an imported tensor (statically allocated names, as the
 * Python specification requires). */
static const char NAME_OWNER_LEGACY[] = "cukit.dlpack_owner";
static const char NAME_OWNER_VERSIONED[] = "cukit.dlpack_owner_versioned";

/* ------------------------------------------------------------------ export */

/* Shared by both deleters: drop the Array and free the struct, from any thread. */
static void
release_export(PyObject *array, void *mem)
{
    if (!Py_IsInitialized())
        return; /* the interpreter is gone: leak rather than touch it */
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF(array);
    PyGILState_Release(g);
    PyMem_RawFree(mem);
}

static void
delete_legacy(DLManagedTensor *m)
{
    release_export(m->manager_ctx, m);
}

static void
delete_versioned(DLManagedTensorVersioned *m)
{
    release_export(m->manager_ctx, m);
}

/* A capsule nobody consumed: its tensor's deleter runs with it. */
static void
capsule_destructor(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, CUKIT_DLPACK_LEGACY_USED) || PyCapsule_IsValid(cap, CUKIT_DLPACK_VERSIONED_USED))
        return;
    PyObject *exc = PyErr_GetRaisedException();
    if (PyCapsule_IsValid(cap, CUKIT_DLPACK_VERSIONED)) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, CUKIT_DLPACK_VERSIONED);
        if (m->deleter)
            m->deleter(m);
    }
    else if (PyCapsule_IsValid(cap, CUKIT_DLPACK_LEGACY)) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, CUKIT_DLPACK_LEGACY);
        if (m->deleter)
            m->deleter(m);
    }
    else {
        PyErr_SetString(PyExc_RuntimeError, "a DLPack capsule with an unexpected name");
        PyErr_WriteUnraisable(cap);
    }
    PyErr_SetRaisedException(exc);
}

/* Make the consumer's stream wait for the work queued so far on cukit's side,
 * the legacy default stream. 0 / -1. */
static int
order_consumer(cukit_Array *a, PyObject *stream)
{
    cukit_state *st = a->st;
    if (stream == Py_None)
        return 0; /* the consumer uses the legacy default stream, as cukit does */
    if (!PyLong_Check(stream)) {
        PyErr_Format(PyExc_TypeError,
                     "__dlpack__(stream=...) takes an int (a CUDA stream handle) or None, got %s",
                     Py_TYPE(stream)->tp_name);
        return -1;
    }
    long long v = PyLong_AsLongLong(stream);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v == -1 || v == 1)
        return 0; /* -1: the consumer asks for no synchronization; 1: our own stream */
    if (v <= 0) {
        PyErr_Format(PyExc_ValueError,
                     "__dlpack__(stream=%lld): DLPack takes None, -1, 1 (the legacy default "
                     "stream), 2 (the per-thread default stream) or a stream handle",
                     v);
        return -1;
    }
    CUstream target = v == 2 ? CU_STREAM_PER_THREAD : (CUstream)(uintptr_t)v;
    CUevent ev = NULL;
    if (cukit_device_activate(a->device) < 0 ||
        CU_CALL(st, cuEventCreate, (&ev, CU_EVENT_DISABLE_TIMING)) < 0)
        return -1;
    int rc = CU_CALL(st, cuEventRecord, (ev, NULL));
    if (rc == 0)
        rc = CU_CALL(st, cuStreamWaitEvent, (target, ev, 0));
    cukit_api.cuEventDestroy(ev); /* safe once waited on: the driver keeps what it needs */
    return rc;
}

/* dl_device=(kDLCPU, 0): the consumer wants host memory, which only a copy gives:
 * numpy's own export of a.get(), flagged as a copy. New ref or NULL. */
static PyObject *
export_to_host(cukit_Array *a, PyObject *max_version)
{
    PyObject *noargs = PyTuple_New(0);
    PyObject *host = noargs ? cukit_array_get(a, noargs, NULL) : NULL;
    Py_XDECREF(noargs);
    if (host == NULL)
        return NULL;
    PyObject *fn = PyObject_GetAttrString(host, "__dlpack__");
    PyObject *cap = NULL;
    if (fn && max_version != Py_None) {
        PyObject *args = PyTuple_New(0);
        PyObject *kw = Py_BuildValue("{sO}", "max_version", max_version);
        cap = args && kw ? PyObject_Call(fn, args, kw) : NULL;
        Py_XDECREF(args);
        Py_XDECREF(kw);
        if (cap == NULL && PyErr_ExceptionMatches(PyExc_TypeError))
            PyErr_Clear(); /* an older numpy: the legacy capsule below */
    }
    if (fn && cap == NULL && !PyErr_Occurred())
        cap = PyObject_CallNoArgs(fn);
    if (cap && PyCapsule_IsValid(cap, CUKIT_DLPACK_VERSIONED))
        ((DLManagedTensorVersioned *)PyCapsule_GetPointer(cap, CUKIT_DLPACK_VERSIONED))->flags |=
            DLPACK_FLAG_BITMASK_IS_COPIED;
    Py_XDECREF(fn);
    Py_DECREF(host);
    return cap;
}

PyObject *
cukit_array_dlpack(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream,
                                     &max_version, &dl_device, &copy))
        return NULL;
    cukit_Array *a = (cukit_Array *)self;
    if (!cukit_array_live(a)) {
        cukit_freed_error();
        return NULL;
    }
    int versioned = 0, want_copy = copy == Py_None ? -1 : PyObject_IsTrue(copy);
    if (want_copy == -1 && PyErr_Occurred())
        return NULL;
    if (max_version != Py_None) {
        int major, minor;
        if (cukit_dlpack_parse_device(max_version, &major, &minor, "__dlpack__(max_version=...)") < 0)
            return NULL;
        versioned = major >= 1;
    }
    if (dl_device != Py_None) {
        int type, id;
        if (cukit_dlpack_parse_device(dl_device, &type, &id, "__dlpack__(dl_device=...)") < 0)
            return NULL;
        if (type == kDLCPU) {
            if (want_copy == 0) {
                PyErr_SetString(PyExc_BufferError,
                                "__dlpack__: the array is in device memory; exporting it to "
                                "the CPU needs a copy, but copy=False");
                return NULL;
            }
            return export_to_host(a, max_version);
        }
        if (type != kDLCUDA || id != a->device->ordinal) {
            PyErr_Format(PyExc_BufferError,
                         "__dlpack__: the array is on CUDA device %d; it cannot be exported to "
                         "DLPack device (%d, %d)",
                         a->device->ordinal, type, id);
            return NULL;
        }
    }
    cukit_Array *src = want_copy == 1 ? cukit_array_copy(a) : (cukit_Array *)Py_NewRef(a);
    if (src == NULL)
        return NULL;
    int code = -1, bits = 0, nd = src->ndim;
    if (!cukit_typecode_dlpack(src->typecode, &code, &bits))
        code = -1;
    for (int i = 0; i < nd && code >= 0; i++)
        if (src->strides[i] % src->itemsize != 0)
            code = -2;
    if (code < 0) {
        if (code == -1)
            PyErr_Format(PyExc_BufferError, "__dlpack__: DLPack has no type for dtype %S",
                         src->dtype);
        else
            PyErr_SetString(PyExc_BufferError, "__dlpack__: the array's strides are not whole "
                                               "elements, which DLPack cannot describe");
        Py_DECREF(src);
        return NULL;
    }
    if (order_consumer(src, stream) < 0) {
        Py_DECREF(src);
        return NULL;
    }
    size_t head = versioned ? sizeof(DLManagedTensorVersioned) : sizeof(DLManagedTensor);
    char *mem = PyMem_RawMalloc(head + 2 * sizeof(int64_t) * (size_t)(nd ? nd : 1));
    if (mem == NULL) {
        Py_DECREF(src);
        return PyErr_NoMemory();
    }
    int64_t *shape = (int64_t *)(mem + head), *strides = shape + nd;
    DLTensor *t;
    if (versioned) {
        DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)mem;
        m->version.major = DLPACK_MAJOR;
        /* the float8 type codes are DLPack 1.1's */
        m->version.minor = code >= 7 && DLPACK_MINOR < 1 ? 1 : DLPACK_MINOR;
        m->manager_ctx = src;
        m->deleter = delete_versioned;
        m->flags = ((src->flags & CUKIT_ARRAY_READONLY) ? DLPACK_FLAG_BITMASK_READ_ONLY : 0) |
                   (want_copy == 1 ? DLPACK_FLAG_BITMASK_IS_COPIED : 0);
        t = &m->dl_tensor;
    }
    else {
        DLManagedTensor *m = (DLManagedTensor *)mem;
        m->manager_ctx = src;
        m->deleter = delete_legacy;
        t = &m->dl_tensor;
    }
    t->data = src->size ? (void *)(uintptr_t)cukit_array_ptr(src) : NULL;
    t->device.device_type = kDLCUDA;
    t->device.device_id = src->device->ordinal;
    t->ndim = nd;
    t->dtype.code = (uint8_t)code;
    t->dtype.bits = (uint8_t)bits;
    t->dtype.lanes = 1;
    for (int i = 0; i < nd; i++) {
        shape[i] = src->shape[i];
        strides[i] = src->strides[i] / src->itemsize;
    }
    t->shape = nd ? shape : NULL;
    t->strides = nd ? strides : NULL;
    t->byte_offset = 0;
    PyObject *cap = PyCapsule_New(mem, versioned ? CUKIT_DLPACK_VERSIONED : CUKIT_DLPACK_LEGACY, capsule_destructor);
    if (cap == NULL)
        release_export((PyObject *)src, mem);
    return cap;
}

PyObject *
cukit_array_dlpack_device(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("(ii)", kDLCUDA, ((cukit_Array *)self)->device->ordinal);
}

/* ------------------------------------------------------------------ import */

/* Our capsule owning an imported tensor: its destructor is the producer's deleter. */
static void
owner_legacy(PyObject *cap)
{
    DLManagedTensor *m = PyCapsule_GetPointer(cap, NAME_OWNER_LEGACY);
    if (m && m->deleter)
        m->deleter(m);
}

static void
owner_versioned(PyObject *cap)
{
    DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, NAME_OWNER_VERSIONED);
    if (m && m->deleter)
        m->deleter(m);
}

/* numpy dtype for a DLPack type. New ref, or NULL with TypeError. */
static PyObject *
numpy_dtype(cukit_state *st, DLDataType t, const char *who)
{
    if (t.lanes != 1) {
        PyErr_Format(PyExc_TypeError, "%s: vector elements (%d lanes) are not supported", who,
                     t.lanes);
        return NULL;
    }
    int tc = cukit_typecode_of_dlpack(t.code, t.bits, t.lanes);
    if (tc != CUKIT_TC_OTHER) {
        /* bfloat16 and the float8s are numpy's through ml_dtypes only */
        int ml = tc == CUKIT_TC_BF16 || tc == CUKIT_TC_F8E4M3 || tc == CUKIT_TC_F8E5M2;
        PyObject *spec = NULL;
        if (!ml) {
            spec = PyUnicode_FromString(cukit_typecode_name(tc));
        }
        else {
            PyObject *mod = PyImport_ImportModule("ml_dtypes");
            if (mod == NULL) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError,
                             "%s: the data is %s, which numpy knows only through the "
                             "ml_dtypes package: pip install ml_dtypes",
                             who, cukit_typecode_name(tc));
                return NULL;
            }
            spec = PyObject_GetAttrString(mod, cukit_typecode_name(tc));
            Py_DECREF(mod);
        }
        PyObject *dtype = spec ? cukit_resolve_dtype(st, spec) : NULL;
        Py_XDECREF(spec);
        return dtype;
    }
    PyErr_Format(PyExc_TypeError, "%s: DLPack type code %d of %d bits has no numpy dtype", who,
                 t.code, t.bits);
    return NULL;
}

/* Take ownership of the tensor in capsule `cap` as a new Array on the device it
 * names; `want` (may be NULL) is the device the caller expects. The capsule is
 * marked used only once nothing can fail before the Array owns the tensor. */
static cukit_Array *
consume(cukit_state *st, PyObject *cap, cukit_Device *want, PyObject *from, const char *who)
{
    int versioned;
    void *managed;
    DLTensor *t;
    uint64_t flags;
    if (cukit_dlpack_capsule_tensor(cap, &versioned, &managed, &t, &flags, who) < 0)
        return NULL;
    if (!cukit_dlpack_is_cuda(t->device.device_type)) {
        cukit_dlpack_not_device(who, from, t->device.device_type);
        return NULL;
    }
    cukit_Device *dev = cukit_device_get(st, t->device.device_id);
    if (dev == NULL)
        return NULL;
    if (want && want != dev) {
        PyErr_Format(PyExc_ValueError, "%s: the %s is on CUDA device %d, but device %d was asked "
                     "for", who, Py_TYPE(from)->tp_name, dev->ordinal, want->ordinal);
        return NULL;
    }
    if (t->ndim < 0 || t->ndim > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "%s: the tensor has %d dimensions; cukit allows at most %d",
                     who, (int)t->ndim, CUKIT_MAXDIM);
        return NULL;
    }
    PyObject *dtype = numpy_dtype(st, t->dtype, who);
    if (dtype == NULL)
        return NULL;
    PyObject *isz_o = PyObject_GetAttrString(dtype, "itemsize");
    Py_ssize_t isz = isz_o ? PyLong_AsSsize_t(isz_o) : -1;
    Py_XDECREF(isz_o);
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    for (int i = 0; i < t->ndim && isz > 0; i++) {
        shape[i] = (Py_ssize_t)t->shape[i];
        if (t->strides)
            strides[i] = (Py_ssize_t)t->strides[i] * isz;
        if (shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: the tensor has a negative dimension", who);
            isz = -1;
        }
    }
    cukit_Array *a = NULL;
    PyObject *owner = isz > 0 ? PyCapsule_New(managed, versioned ? NAME_OWNER_VERSIONED
                                                                 : NAME_OWNER_LEGACY,
                                              versioned ? owner_versioned : owner_legacy)
                              : NULL;
    if (owner) {
        /* From here the owner capsule calls the deleter, whatever happens. */
        PyCapsule_SetName(cap, versioned ? CUKIT_DLPACK_VERSIONED_USED : CUKIT_DLPACK_LEGACY_USED);
        a = cukit_array_wrap(st, dev, (CUdeviceptr)(uintptr_t)t->data + t->byte_offset, owner,
                             dtype, t->ndim, shape, t->strides ? strides : NULL,
                             (flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
        Py_DECREF(owner);
    }
    Py_DECREF(dtype);
    return a;
}

/* from_dlpack's work: any object with __dlpack__ / __dlpack_device__, or a capsule.
 * New ref or NULL. */
static cukit_Array *
import_dlpack(cukit_state *st, PyObject *obj, cukit_Device *want, const char *who)
{
    if (PyCapsule_CheckExact(obj))
        return consume(st, obj, want, obj, who);
    PyObject *devfn;
    int has = cukit_optional_attr(obj, "__dlpack_device__", &devfn);
    if (has <= 0) {
        if (has == 0)
            PyErr_Format(PyExc_TypeError,
                         "%s: a %s does not support DLPack (it has no __dlpack_device__); pass "
                         "an object with __dlpack__, __cuda_array_interface__ (cukit.asarray), "
                         "or host data to cukit.to_device",
                         who, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyObject *where = PyObject_CallNoArgs(devfn);
    Py_DECREF(devfn);
    if (where == NULL)
        return NULL;
    int type, id;
    int rc = cukit_dlpack_parse_device(where, &type, &id, who);
    Py_DECREF(where);
    if (rc < 0)
        return NULL;
    if (!cukit_dlpack_is_cuda(type)) {
        cukit_dlpack_not_device(who, obj, type);
        return NULL;
    }
    if (want && want->ordinal != id) {
        PyErr_Format(PyExc_ValueError,
                     "%s: the %s is on CUDA device %d, but device %d was asked for", who,
                     Py_TYPE(obj)->tp_name, id, want->ordinal);
        return NULL;
    }
    cukit_Device *dev = cukit_device_get(st, id);
    if (dev == NULL || cukit_device_activate(dev) < 0)
        return NULL;
    /* Stream 1: what cukit does next with the data is on the legacy default stream. */
    PyObject *one = PyLong_FromLong(1);
    PyObject *cap = one ? cukit_dlpack_call(st, obj, one) : NULL;
    Py_XDECREF(one);
    if (cap == NULL)
        return NULL;
    cukit_Array *a = consume(st, cap, dev, obj, who);
    Py_DECREF(cap);
    return a;
}

/* ------------------------------------------------------------------ CUDA Array Interface */

/* Make the legacy default stream wait for the producer's `stream` (CAI v3). */
static int
wait_producer(cukit_state *st, PyObject *stream, const char *who)
{
    if (stream == NULL || stream == Py_None)
        return 0;
    long long v = PyLong_Check(stream) ? PyLong_AsLongLong(stream) : 0;
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v <= 0) {
        PyErr_Format(PyExc_ValueError, "%s: __cuda_array_interface__ has stream %R; version 3 "
                     "takes None, 1, 2 or a stream handle", who, stream);
        return -1;
    }
    if (v == 1)
        return 0;
    CUstream s = v == 2 ? CU_STREAM_PER_THREAD : (CUstream)(uintptr_t)v;
    CUevent ev = NULL;
    if (CU_CALL(st, cuEventCreate, (&ev, CU_EVENT_DISABLE_TIMING)) < 0)
        return -1;
    int rc = CU_CALL(st, cuEventRecord, (ev, s));
    if (rc == 0)
        rc = CU_CALL(st, cuStreamWaitEvent, (NULL, ev, 0));
    cukit_api.cuEventDestroy(ev);
    return rc;
}

static cukit_Array *
import_cai(cukit_state *st, PyObject *obj, PyObject *dict, cukit_Device *want, const char *who)
{
    cukit_cai cai;
    if (cukit_cai_read(st, obj, dict, 1, who, &cai) < 0)
        return NULL;
    Py_ssize_t size = 1;
    for (int i = 0; i < cai.ndim; i++)
        size *= cai.shape[i];
    CUdeviceptr ptr = cai.ptr;
    PyObject *dtype = cukit_resolve_dtype(st, cai.typestr);
    PyObject *native = dtype ? PyObject_GetAttrString(dtype, "isnative") : NULL;
    int ok = native == Py_True;
    if (native == Py_False)
        PyErr_Format(PyExc_TypeError, "%s: the data is %S, not in native byte order", who, dtype);
    Py_XDECREF(native);
    if (!ok) {
        Py_XDECREF(dtype);
        return NULL;
    }
    cukit_Device *dev = want;
    if (ptr != 0) {
        int ordinal = -1;
        CUresult res = cukit_api.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                                       ptr);
        if (res != CUDA_SUCCESS || ordinal < 0) {
            PyErr_Format(PyExc_TypeError,
                         "%s: the %s's data (at %p) is not CUDA device memory; copy host "
                         "data with cukit.to_device(x)",
                         who, Py_TYPE(obj)->tp_name, (void *)(uintptr_t)ptr);
            dev = NULL;
        }
        else {
            dev = cukit_device_get(st, ordinal);
            if (dev && want && dev != want) {
                PyErr_Format(PyExc_ValueError,
                             "%s: the %s is on CUDA device %d, but device %d was asked for", who,
                             Py_TYPE(obj)->tp_name, ordinal, want->ordinal);
                dev = NULL;
            }
        }
    }
    else if (size > 0) {
        PyErr_Format(PyExc_ValueError, "%s: the %s has %zd elements at address 0", who,
                     Py_TYPE(obj)->tp_name, size);
    }
    else if (dev == NULL) {
        dev = cukit_device_current(st);
    }
    cukit_Array *a = NULL;
    if (dev && cukit_device_activate(dev) == 0 && wait_producer(st, cai.stream, who) == 0)
        a = cukit_array_wrap(st, dev, ptr, obj, dtype, cai.ndim, cai.shape, cai.strides,
                             cai.readonly);
    Py_DECREF(dtype);
    return a;
}

/* ------------------------------------------------------------------ module functions */

static cukit_Device *
wanted_device(cukit_state *st, PyObject *device)
{
    return device == NULL || device == Py_None ? NULL : cukit_device_arg(st, device);
}

static PyObject *
mod_from_dlpack(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"obj", "device", "copy", NULL};
    PyObject *obj, *device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OO:from_dlpack", kwlist, &obj, &device,
                                     &copy))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    int want_copy = copy == Py_None ? 0 : PyObject_IsTrue(copy);
    if (want_copy < 0)
        return NULL;
    cukit_Device *want = wanted_device(st, device);
    if (want == NULL && device != Py_None)
        return NULL;
    if (cukit_numpy(st) < 0)
        return NULL;
    cukit_Array *a = import_dlpack(st, obj, want, "from_dlpack()");
    if (a && want_copy)
        Py_SETREF(a, cukit_array_copy(a));
    return (PyObject *)a;
}

/* A dtype= given to asarray for device data must be the data's own. Steals a. */
static PyObject *
check_dtype(cukit_state *st, cukit_Array *a, PyObject *dtype)
{
    if (a != NULL && cukit_array_check_dtype(a, dtype, "asarray()") < 0)
        Py_CLEAR(a);
    return (PyObject *)a;
}

/* asarray(obj, dtype, device) (dtype, device: None when not given): obj itself when
 * it is a cukit.Array that fits, else a new Array over or copied from it. New ref or
 * NULL. */
static PyObject *
asarray(cukit_state *st, PyObject *obj, PyObject *dtype, PyObject *device)
{
    if (cukit_numpy(st) < 0)
        return NULL;
    cukit_Device *want = wanted_device(st, device);
    if (want == NULL && device != Py_None)
        return NULL;
    if (Py_IS_TYPE(obj, st->ArrayType)) {
        cukit_Array *a = (cukit_Array *)obj;
        if (want && want != a->device) {
            PyErr_Format(PyExc_ValueError,
                         "asarray(): the array is on device %d, but device %d was asked for; "
                         "copy it with cukit.to_device(a, device=%d)",
                         a->device->ordinal, want->ordinal, want->ordinal);
            return NULL;
        }
        return check_dtype(st, (cukit_Array *)Py_NewRef(obj), dtype);
    }
    if (PyObject_TypeCheck(obj, (PyTypeObject *)st->np_ndarray))
        return cukit_array_from_host(st, obj, dtype, device);
    PyObject *attr;
    int has = cukit_optional_attr(obj, "__dlpack_device__", &attr);
    if (has < 0)
        return NULL;
    if (has) {
        Py_DECREF(attr);
        return check_dtype(st, import_dlpack(st, obj, want, "asarray()"), dtype);
    }
    has = cukit_optional_attr(obj, "__cuda_array_interface__", &attr);
    if (has < 0)
        return NULL;
    if (has) {
        cukit_Array *a = cukit_driver_load(st) < 0 ? NULL : import_cai(st, obj, attr, want, "asarray()");
        Py_DECREF(attr);
        return check_dtype(st, a, dtype);
    }
    return cukit_array_from_host(st, obj, dtype, device);
}

static PyObject *
mod_asarray(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"obj", "dtype", "device", NULL};
    PyObject *obj, *dtype = Py_None, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:asarray", kwlist, &obj, &dtype, &device))
        return NULL;
    return asarray(PyModule_GetState(m), obj, dtype, device);
}

static PyObject *
mod_ascontiguousarray(PyObject *m, PyObject *obj)
{
    cukit_state *st = PyModule_GetState(m);
    PyObject *a = Py_IS_TYPE(obj, st->ArrayType) ? Py_NewRef(obj)
                                                 : asarray(st, obj, Py_None, Py_None);
    if (a == NULL)
        return NULL;
    if (!Py_IS_TYPE(a, st->ArrayType) || cukit_array_is_c_contig((cukit_Array *)a))
        return a;
    PyObject *out = (PyObject *)cukit_array_copy((cukit_Array *)a);
    Py_DECREF(a);
    return out;
}

static PyMethodDef dlpack_functions[] = {
    {"from_dlpack", (PyCFunction)(void (*)(void))mod_from_dlpack, METH_VARARGS | METH_KEYWORDS,
     "from_dlpack(obj, *, device=None, copy=None) -> Array sharing obj's device memory "
     "(PyTorch, CuPy, JAX, ...; or a DLPack capsule). The Array keeps the producer's memory "
     "alive. Host data raises TypeError: copy it with cukit.to_device."},
    {"asarray", (PyCFunction)(void (*)(void))mod_asarray, METH_VARARGS | METH_KEYWORDS,
     "asarray(obj, dtype=None, device=None) -> Array: a cukit Array as is; device data from "
     "another library (DLPack or __cuda_array_interface__) shared without a copy; numpy "
     "arrays and other host data copied to the device."},
    {"ascontiguousarray", (PyCFunction)mod_ascontiguousarray, METH_O,
     "ascontiguousarray(a) -> Array: a itself when C-contiguous, else a C-contiguous copy."},
    {NULL},
};

int
cukit_dlpack_setup(PyObject *module, cukit_state *st)
{
    return PyModule_AddFunctions(module, dlpack_functions);
}
