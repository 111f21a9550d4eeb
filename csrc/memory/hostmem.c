/* hostmem.c - cukit.HostMemory: pinned and managed host memory as numpy arrays; prefetch, advise */
#include "memory/memory.h"

#include <string.h>
#include <unistd.h>

/* Host memory that cukit allocated: the .base of a pinned or managed numpy array,
 * which frees it when the last array using it goes. */
enum { CUKIT_HOST_PINNED, CUKIT_HOST_MANAGED };
typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref: the context the memory was allocated in */
    void *ptr;             /* owned: cuMemFreeHost (pinned) or cuMemFree (managed) */
    CUdeviceptr dptr;      /* the same memory's device address (mapped or managed) */
    size_t size;           /* bytes asked for (the allocation has at least 1) */
    int kind;              /* CUKIT_HOST_* */
} cukit_HostMemory;

static const char *const kind_names[] = {
    [CUKIT_HOST_PINNED] = "pinned",
    [CUKIT_HOST_MANAGED] = "managed",
};

/* ------------------------------------------------------------------ shapes and sizes */

/* The shape as a tuple of ints (from an int or a sequence of ints) and the bytes
 * that shape x dtype takes. New ref in *shape, or -1 with ValueError/TypeError. */
static int
host_layout(PyObject *shape_o, PyObject *dtype, PyObject **shape, size_t *nbytes)
{
    PyObject *seq = PyIndex_Check(shape_o) ? PyTuple_Pack(1, shape_o)
                                           : PySequence_Fast(shape_o, "");
    if (seq == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "shape must be an int or a sequence of ints, got %R",
                         shape_o);
        }
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *isz = PyObject_GetAttrString(dtype, "itemsize");
    Py_ssize_t itemsize = isz ? PyLong_AsSsize_t(isz) : -1;
    Py_XDECREF(isz);
    PyObject *out = itemsize >= 0 ? PyTuple_New(n) : NULL;
    if (out == NULL || n > CUKIT_MAXDIM) {
        if (out)
            PyErr_Format(PyExc_ValueError, "shape has %zd dimensions; cukit allows at most %d",
                         n, CUKIT_MAXDIM);
        goto error;
    }
    size_t total = (size_t)itemsize;
    int overflow = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        Py_ssize_t v = PyIndex_Check(item) ? PyNumber_AsSsize_t(item, PyExc_OverflowError) : -2;
        if (v == -2 && !PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "shape must be an int or a sequence of ints, got %R",
                         shape_o);
            goto error;
        }
        if (v == -1 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                goto error;
            PyErr_Clear();
            overflow = 1;
            v = 1;
        }
        if (v < 0) {
            PyErr_Format(PyExc_ValueError, "shape %R has a negative dimension", shape_o);
            goto error;
        }
        if (v != 0 && total > SIZE_MAX / (size_t)v)
            overflow = 1;
        else
            total *= (size_t)v;
        PyObject *vo = PyLong_FromSsize_t(v);
        if (vo == NULL)
            goto error;
        PyTuple_SET_ITEM(out, i, vo);
    }
    if (overflow || total > (size_t)PY_SSIZE_T_MAX) {
        PyErr_Format(PyExc_ValueError, "shape %R is too large: its byte size overflows", shape_o);
        goto error;
    }
    Py_DECREF(seq);
    *shape = out;
    *nbytes = total;
    return 0;
error:
    Py_DECREF(seq);
    Py_XDECREF(out);
    return -1;
}

/* ------------------------------------------------------------------ HostMemory */

static void
hostmem_dealloc(cukit_HostMemory *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    cukit_state *st = self->st;
    if (self->ptr) {
        PyObject *saved = PyErr_GetRaisedException();
        void *p = self->ptr;
        int managed = self->kind == CUKIT_HOST_MANAGED;
        CUresult res = CUDA_ERROR_INVALID_CONTEXT;
        if (cukit_device_activate(self->device) == 0) {
            /* Asynchronous copies from or to it were the caller's to finish first:
             * the array they used had to stay alive until the stream got there. */
            int mode = cukit_capture_relax(st, 1); /* dropped during a capture */
            Py_BEGIN_ALLOW_THREADS
            res = managed ? cukit_api.cuMemFree((CUdeviceptr)p) : cukit_api.cuMemFreeHost(p);
            Py_END_ALLOW_THREADS
            cukit_capture_restore(mode);
        }
        else {
            PyErr_Clear();
        }
        if (res != CUDA_SUCCESS && !cukit_cu_is_sticky(res) &&
            cukit_check_cu(st, res, managed ? "cuMemFree" : "cuMemFreeHost") < 0)
            PyErr_WriteUnraisable((PyObject *)tp); /* not self: its count is 0 */
        st->memory->host_live--;
        st->memory->host_live_bytes -= (Py_ssize_t)self->size;
        PyErr_SetRaisedException(saved);
    }
    Py_XDECREF(self->device);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static int
hostmem_getbuffer(cukit_HostMemory *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->ptr, (Py_ssize_t)self->size, 0, flags);
}

static PyObject *
hostmem_get_kind(cukit_HostMemory *self, void *c)
{
    return PyUnicode_FromString(kind_names[self->kind]);
}

static PyObject *
hostmem_get_ptr(cukit_HostMemory *self, void *c)
{
    return PyLong_FromVoidPtr(self->ptr);
}

static PyObject *
hostmem_get_device_ptr(cukit_HostMemory *self, void *c)
{
    return PyLong_FromUnsignedLongLong(self->dptr);
}

static PyObject *
hostmem_get_nbytes(cukit_HostMemory *self, void *c)
{
    return PyLong_FromSize_t(self->size);
}

static PyObject *
hostmem_repr(cukit_HostMemory *self)
{
    return PyUnicode_FromFormat("<cukit.HostMemory %s, %zu bytes at %p>", kind_names[self->kind],
                                self->size, self->ptr);
}

static PyMemberDef hostmem_members[] = {
    {"device", Py_T_OBJECT_EX, offsetof(cukit_HostMemory, device), Py_READONLY,
     "The Device whose context allocated it."},
    {NULL},
};

static PyGetSetDef hostmem_getset[] = {
    {"kind", (getter)hostmem_get_kind, NULL, "'pinned' or 'managed'."},
    {"ptr", (getter)hostmem_get_ptr, NULL, "The host address, as an int."},
    {"device_ptr", (getter)hostmem_get_device_ptr, NULL,
     "The address kernels use for the same memory, as an int."},
    {"nbytes", (getter)hostmem_get_nbytes, NULL, "Size in bytes."},
    {NULL},
};

static PyType_Slot hostmem_slots[] = {
    {Py_tp_doc, "HostMemory: the page-locked or managed memory under a numpy array from "
                "cukit.pinned_empty, pinned_zeros, managed_empty or managed_zeros (its .base). "
                "Freed when the last array using it is gone."},
    {Py_tp_dealloc, hostmem_dealloc},
    {Py_tp_repr, hostmem_repr},
    {Py_tp_members, hostmem_members},
    {Py_tp_getset, hostmem_getset},
    {Py_bf_getbuffer, hostmem_getbuffer},
    {0, NULL},
};

static PyType_Spec hostmem_spec = {
    .name = "cukit.HostMemory",
    .basicsize = sizeof(cukit_HostMemory),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = hostmem_slots,
};

/* The HostMemory under numpy array `obj` (following .base through views), or NULL
 * with no exception when obj is not a numpy array over cukit host memory. Borrowed
 * through obj. -1 in *err on an error. */
static cukit_HostMemory *
owner_of(cukit_state *st, PyObject *obj, int *err)
{
    *err = 0;
    if (st->np_ndarray == NULL || !PyObject_TypeCheck(obj, (PyTypeObject *)st->np_ndarray))
        return NULL;
    PyObject *cur = obj;
    for (int depth = 0; depth < 64; depth++) {
        PyObject *base = PyObject_GetAttrString(cur, "base");
        if (base == NULL) {
            *err = -1;
            return NULL;
        }
        Py_DECREF(base); /* still referenced by cur, which obj keeps alive */
        if (Py_IS_TYPE(base, st->memory->HostMemoryType))
            return (cukit_HostMemory *)base;
        if (!PyObject_TypeCheck(base, (PyTypeObject *)st->np_ndarray))
            return NULL;
        cur = base;
    }
    return NULL;
}

/* The device address and byte length of numpy array `obj` over cukit memory `owner`;
 * `what` names the caller for the message. 0 / -1 with ValueError when obj is not
 * C-contiguous (a pointer or a range needs one block). */
static int
contiguous_range(cukit_HostMemory *owner, PyObject *obj, const char *what, CUdeviceptr *ptr,
                 size_t *len)
{
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_BufferError) && !PyErr_ExceptionMatches(PyExc_ValueError))
            return -1;
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError,
                     "%s: this %s array is a view that is not C-contiguous; pass the whole "
                     "array or a contiguous slice of it", what, kind_names[owner->kind]);
        return -1;
    }
    *ptr = owner->dptr + (CUdeviceptr)((char *)view.buf - (char *)owner->ptr);
    *len = (size_t)view.len;
    PyBuffer_Release(&view);
    return 0;
}

int
cukit_host_array_device_ptr(cukit_state *st, PyObject *obj, CUdeviceptr *out)
{
    int err;
    cukit_HostMemory *owner = owner_of(st, obj, &err);
    if (owner == NULL)
        return err;
    size_t len;
    return contiguous_range(owner, obj, "a kernel pointer argument", out, &len) < 0 ? -1 : 1;
}

/* A numpy array of `shape` and `dtype` over a new HostMemory of `kind` (pinned:
 * page-locked, mapped and portable; managed: attached globally, on dev). New ref. */
static PyObject *
host_array(cukit_state *st, cukit_Device *dev, int kind, PyObject *shape, PyObject *dtype,
           size_t nbytes, int zero)
{
    const char *call = kind == CUKIT_HOST_PINNED ? "cuMemHostAlloc" : "cuMemAllocManaged";
    size_t want = nbytes ? nbytes : 1;
    if (cukit_device_activate(dev) < 0)
        return NULL;
    if (kind == CUKIT_HOST_PINNED) {
        long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
        long page = sysconf(_SC_PAGESIZE);
        size_t ram = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : SIZE_MAX;
        if (want > ram) {
            PyObject *msg = PyUnicode_FromFormat(
                "could not allocate %zu bytes of page-locked host memory: the machine has %zu "
                "bytes of RAM (%zu available)", nbytes, ram,
                avail > 0 ? (size_t)avail * (size_t)page : (size_t)0);
            if (msg)
                cukit_raise(st, CUKIT_EXC_OOM, CUDA_ERROR_OUT_OF_MEMORY,
                            "CUDA_ERROR_OUT_OF_MEMORY", call, msg);
            Py_XDECREF(msg);
            return NULL;
        }
    }
    else {
        int managed = 0;
        if (CU_CALL(st, cuDeviceGetAttribute, (&managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
                                               dev->dev)) < 0)
            return NULL;
        if (!managed) {
            PyObject *msg = PyUnicode_FromFormat("device %d cannot allocate managed memory",
                                                 dev->ordinal);
            if (msg)
                cukit_raise(st, CUKIT_EXC_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED,
                            "CUDA_ERROR_NOT_SUPPORTED", call, msg);
            Py_XDECREF(msg);
            return NULL;
        }
        /* Managed memory beyond what the device has free can stall the GPU in page
         * migration; refuse it, after handing the pool's spare memory back. */
        size_t free_b = 0, total = 0;
        if (CU_CALL(st, cuMemGetInfo, (&free_b, &total)) < 0)
            return NULL;
        if (want > free_b && (cukit_pool_trim(dev, 0) < 0 ||
                              CU_CALL(st, cuMemGetInfo, (&free_b, &total)) < 0))
            return NULL;
        if (want > free_b) {
            PyObject *msg = PyUnicode_FromFormat(
                "could not allocate %zu bytes of managed memory: only %zu of the device's %zu "
                "bytes are free, and cukit never allocates more managed memory than the device "
                "has free (oversubscribing it can stall the GPU)", nbytes, free_b, total);
            if (msg)
                cukit_raise(st, CUKIT_EXC_OOM, CUDA_ERROR_OUT_OF_MEMORY,
                            "CUDA_ERROR_OUT_OF_MEMORY", call, msg);
            Py_XDECREF(msg);
            return NULL;
        }
    }
    cukit_HostMemory *mem = PyObject_New(cukit_HostMemory, st->memory->HostMemoryType);
    if (mem == NULL)
        return NULL;
    mem->st = st;
    mem->device = (cukit_Device *)Py_NewRef(dev);
    mem->ptr = NULL;
    mem->dptr = 0;
    mem->size = nbytes;
    mem->kind = kind;
    void *p = NULL;
    CUdeviceptr dp = 0;
    CUresult res;
    Py_BEGIN_ALLOW_THREADS
    if (kind == CUKIT_HOST_PINNED) {
        res = cukit_api.cuMemHostAlloc(&p, want, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
        if (res == CUDA_SUCCESS)
            res = cukit_api.cuMemHostGetDevicePointer(&dp, p, 0);
    }
    else {
        res = cukit_api.cuMemAllocManaged(&dp, want, CU_MEM_ATTACH_GLOBAL);
        p = (void *)(uintptr_t)dp;
    }
    if (res == CUDA_SUCCESS && zero)
        memset(p, 0, want);
    Py_END_ALLOW_THREADS
    if (p != NULL) {
        mem->ptr = p; /* from here dealloc frees it */
        st->memory->host_live++;
        st->memory->host_live_bytes += (Py_ssize_t)nbytes;
    }
    mem->dptr = dp;
    if (res == CUDA_ERROR_OUT_OF_MEMORY) {
        PyObject *msg = PyUnicode_FromFormat(
            "%s failed: CUDA_ERROR_OUT_OF_MEMORY (2): could not allocate %zu bytes of %s memory",
            call, nbytes, kind_names[kind]);
        if (msg)
            cukit_raise(st, CUKIT_EXC_OOM, res, "CUDA_ERROR_OUT_OF_MEMORY", call, msg);
        Py_XDECREF(msg);
        Py_DECREF(mem);
        return NULL;
    }
    if (cukit_check_cu(st, res, call) < 0) {
        Py_DECREF(mem);
        return NULL;
    }
    PyObject *args = PyTuple_Pack(2, shape, dtype);
    PyObject *kw = args ? Py_BuildValue("{sO}", "buffer", (PyObject *)mem) : NULL;
    PyObject *arr = kw ? PyObject_Call(st->np_ndarray, args, kw) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_DECREF(mem); /* the array holds it as its base */
    return arr;
}

static PyObject *
new_host_array(PyObject *m, PyObject *args, PyObject *kwargs, int kind, int zero)
{
    static char *kwlist[] = {"shape", "dtype", "device", NULL};
    static const char *formats[2][2] = {
        {"O|OO:pinned_empty", "O|OO:pinned_zeros"},
        {"O|OO:managed_empty", "O|OO:managed_zeros"},
    };
    PyObject *shape_o, *dtype_o = (PyObject *)&PyFloat_Type, *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, formats[kind][zero], kwlist, &shape_o,
                                     &dtype_o, &device))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    PyObject *dtype = cukit_resolve_dtype(st, dtype_o == Py_None ? (PyObject *)&PyFloat_Type : dtype_o);
    if (dtype == NULL)
        return NULL;
    PyObject *shape = NULL, *out = NULL;
    size_t nbytes;
    if (host_layout(shape_o, dtype, &shape, &nbytes) == 0) {
        cukit_Device *dev = cukit_device_arg(st, device);
        if (dev)
            out = host_array(st, dev, kind, shape, dtype, nbytes, zero);
    }
    Py_XDECREF(shape);
    Py_DECREF(dtype);
    return out;
}

static PyObject *
mod_pinned_empty(PyObject *m, PyObject *args, PyObject *kwargs)
{
    return new_host_array(m, args, kwargs, CUKIT_HOST_PINNED, 0);
}

static PyObject *
mod_pinned_zeros(PyObject *m, PyObject *args, PyObject *kwargs)
{
    return new_host_array(m, args, kwargs, CUKIT_HOST_PINNED, 1);
}

static PyObject *
mod_managed_empty(PyObject *m, PyObject *args, PyObject *kwargs)
{
    return new_host_array(m, args, kwargs, CUKIT_HOST_MANAGED, 0);
}

static PyObject *
mod_managed_zeros(PyObject *m, PyObject *args, PyObject *kwargs)
{
    return new_host_array(m, args, kwargs, CUKIT_HOST_MANAGED, 1);
}

/* ------------------------------------------------------------------ prefetch and advise */

/* A location: "host", or a device (a Device, an ordinal, None for the current one).
 * *dev is the device (NULL for the host). 0 / -1. */
static int
location_arg(cukit_state *st, PyObject *obj, const char *what, CUmemLocation *loc,
             cukit_Device **dev)
{
    if (PyUnicode_Check(obj)) {
        if (PyUnicode_CompareWithASCIIString(obj, "host") == 0 ||
            PyUnicode_CompareWithASCIIString(obj, "cpu") == 0) {
            loc->type = CU_MEM_LOCATION_TYPE_HOST;
            loc->id = 0;
            *dev = NULL;
            return 0;
        }
        PyErr_Format(PyExc_ValueError, "%s: the location must be a cukit.Device, a device "
                     "ordinal or 'host', got %R", what, obj);
        return -1;
    }
    cukit_Device *d = cukit_device_arg(st, obj);
    if (d == NULL)
        return -1;
    int concurrent = 0;
    if (CU_CALL(st, cuDeviceGetAttribute, (&concurrent, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
                                           d->dev)) < 0)
        return -1;
    if (!concurrent) {
        PyObject *msg = PyUnicode_FromFormat(
            "%s: device %d cannot migrate managed memory on request (it has no concurrent "
            "managed access)", what, d->ordinal);
        if (msg)
            cukit_raise(st, CUKIT_EXC_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED,
                        "CUDA_ERROR_NOT_SUPPORTED", what, msg);
        Py_XDECREF(msg);
        return -1;
    }
    loc->type = CU_MEM_LOCATION_TYPE_DEVICE;
    loc->id = d->ordinal;
    *dev = d;
    return 0;
}

/* The managed range of numpy array `obj`, or -1 with TypeError naming what it is. */
static cukit_HostMemory *
managed_arg(cukit_state *st, PyObject *obj, const char *what, CUdeviceptr *ptr, size_t *len)
{
    int err;
    if (cukit_numpy(st) < 0)
        return NULL;
    cukit_HostMemory *owner = owner_of(st, obj, &err);
    if (owner == NULL && err == 0)
        PyErr_Format(PyExc_TypeError, "%s() works on managed arrays (from cukit.managed_empty "
                     "or managed_zeros), got %s", what,
                     (st->np_ndarray && PyObject_TypeCheck(obj, (PyTypeObject *)st->np_ndarray))
                         ? "a numpy array in ordinary host memory" : Py_TYPE(obj)->tp_name);
    else if (owner && owner->kind != CUKIT_HOST_MANAGED) {
        PyErr_Format(PyExc_TypeError, "%s() works on managed arrays; this one is %s memory, "
                     "which stays in host memory", what, kind_names[owner->kind]);
        owner = NULL;
    }
    if (owner == NULL || contiguous_range(owner, obj, what, ptr, len) < 0)
        return NULL;
    return owner;
}

static PyObject *
mod_prefetch(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"array", "location", "stream", NULL};
    PyObject *obj, *where, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:prefetch", kwlist, &obj, &where, &stream))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    CUdeviceptr ptr;
    size_t len;
    CUmemLocation loc;
    cukit_Device *target;
    CUstream h;
    cukit_HostMemory *owner = managed_arg(st, obj, "prefetch", &ptr, &len);
    if (owner == NULL || location_arg(st, where, "prefetch", &loc, &target) < 0 ||
        cukit_stream_handle(st, stream, NULL, &h) < 0 || cukit_device_activate(owner->device) < 0)
        return NULL;
    if (len > 0 && CU_CALL(st, cuMemPrefetchAsync, (ptr, len, loc, 0, h)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static const struct {
    const char *name;
    int advice;
} advice_table[] = {
    {"read_mostly", CU_MEM_ADVISE_SET_READ_MOSTLY},
    {"unset_read_mostly", CU_MEM_ADVISE_UNSET_READ_MOSTLY},
    {"preferred_location", CU_MEM_ADVISE_SET_PREFERRED_LOCATION},
    {"unset_preferred_location", CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION},
    {"accessed_by", CU_MEM_ADVISE_SET_ACCESSED_BY},
    {"unset_accessed_by", CU_MEM_ADVISE_UNSET_ACCESSED_BY},
};

static PyObject *
mod_advise(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"array", "advice", "device", NULL};
    PyObject *obj, *device = Py_None;
    const char *name;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Os|O:advise", kwlist, &obj, &name, &device))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    int advice = -1;
    for (size_t i = 0; i < sizeof advice_table / sizeof *advice_table; i++)
        if (strcmp(name, advice_table[i].name) == 0)
            advice = advice_table[i].advice;
    if (advice < 0) {
        PyErr_Format(PyExc_ValueError,
                     "advise(): unknown advice '%s'; use one of 'read_mostly', "
                     "'preferred_location', 'accessed_by', or their 'unset_' forms", name);
        return NULL;
    }
    CUdeviceptr ptr;
    size_t len;
    CUmemLocation loc;
    cukit_Device *target;
    cukit_HostMemory *owner = managed_arg(st, obj, "advise", &ptr, &len);
    if (owner == NULL || location_arg(st, device, "advise", &loc, &target) < 0 ||
        cukit_device_activate(owner->device) < 0)
        return NULL;
    if (len > 0 && CU_CALL(st, cuMemAdvise, (ptr, len, advice, loc)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
mod_host_memory_stats(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = PyModule_GetState(m);
    return Py_BuildValue("(nn)", st->memory->host_live, st->memory->host_live_bytes);
}

static PyMethodDef hostmem_functions[] = {
    {"pinned_empty", (PyCFunction)(void (*)(void))mod_pinned_empty, METH_VARARGS | METH_KEYWORDS,
     "pinned_empty(shape, dtype=float64, device=None) -> numpy.ndarray in page-locked host "
     "memory: copies to and from it run at full speed and can be truly asynchronous."},
    {"pinned_zeros", (PyCFunction)(void (*)(void))mod_pinned_zeros, METH_VARARGS | METH_KEYWORDS,
     "pinned_zeros(shape, dtype=float64, device=None) -> numpy.ndarray of zeros in page-locked "
     "host memory."},
    {"managed_empty", (PyCFunction)(void (*)(void))mod_managed_empty,
     METH_VARARGS | METH_KEYWORDS,
     "managed_empty(shape, dtype=float64, device=None) -> numpy.ndarray in managed memory, "
     "usable on the host and passable straight to kernels. The host may touch it only after "
     "synchronizing with the kernels that use it."},
    {"managed_zeros", (PyCFunction)(void (*)(void))mod_managed_zeros,
     METH_VARARGS | METH_KEYWORDS,
     "managed_zeros(shape, dtype=float64, device=None) -> numpy.ndarray of zeros in managed "
     "memory."},
    {"prefetch", (PyCFunction)(void (*)(void))mod_prefetch, METH_VARARGS | METH_KEYWORDS,
     "prefetch(array, location, stream=None): move a managed array to a device (a Device or "
     "an ordinal) or to 'host', asynchronously on the stream."},
    {"advise", (PyCFunction)(void (*)(void))mod_advise, METH_VARARGS | METH_KEYWORDS,
     "advise(array, advice, device=None): tell the driver how a managed array is used: "
     "'read_mostly', 'preferred_location', 'accessed_by', or 'unset_' one of them; device is "
     "a Device, an ordinal or 'host'."},
    {"_host_memory_stats", (PyCFunction)mod_host_memory_stats, METH_NOARGS,
     "Internal: (live HostMemory objects, their bytes), for leak tests."},
    {NULL},
};

int
cukit_hostmem_setup(PyObject *module, cukit_state *st)
{
    st->memory->HostMemoryType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &hostmem_spec, NULL);
    if (st->memory->HostMemoryType == NULL || PyModule_AddType(module, st->memory->HostMemoryType) < 0)
        return -1;
    return PyModule_AddFunctions(module, hostmem_functions);
}
