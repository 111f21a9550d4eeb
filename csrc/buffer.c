/* buffer.c - cukit.Buffer: one raw device allocation from the stream-ordered pool, freed with its last reference */
#include "cukit.h"

#include <limits.h>

int
cukit_freed_error(void)
{
    PyErr_SetString(PyExc_ValueError,
                    "this memory was freed (with .free()) and can no longer be used");
    return -1;
}

/* ------------------------------------------------------------------ the pool
 *
 * Device memory comes from the device's default memory pool, stream-ordered, so
 * that allocating and freeing in a loop never waits for the device. The rule that
 * keeps this safe:
 *
 *  - Allocations are made on the legacy default stream.
 *  - A free is queued on a private non-blocking stream (free_stream), behind an
 *    event wait on each stream that may still be using the memory: the legacy
 *    stream and every live cukit.Stream of the device that has unfinished work.
 *    So an array may be dropped while kernels on any cukit stream still read it.
 *  - The pool gives freed memory to a new allocation only once the free has
 *    completed on the device (opportunistic reuse; internal dependencies off), so a
 *    new buffer is ready for every stream at once, not only in the legacy order.
 *  - Freed memory stays in the pool for reuse (no release threshold) until
 *    cukit.trim_pool(). An allocation that finds the device full first waits for the
 *    pending frees and trims the pool, and only then raises OutOfMemoryError.
 *
 * Work that another library queues on its own stream with cukit memory (through
 * __cuda_array_interface__) is that library's to finish before the array goes. */

/* Make the device's default pool cukit's allocator: keep freed memory, and reuse it
 * only after its free completed. 1 when set up, 0 when the driver or device has no
 * pools (plain cuMemAlloc then), -1 with an exception. */
static int
pool_init(cukit_Device *dev, cukit_devmem *dm)
{
    cukit_state *st = dev->st;
    int supported = 0;
    if (cukit_api.cuDeviceGetDefaultMemPool == NULL || cukit_api.cuMemAllocFromPoolAsync == NULL ||
        cukit_api.cuMemFreeAsync == NULL || cukit_api.cuMemPoolSetAttribute == NULL ||
        cukit_api.cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                       dev->dev) != CUDA_SUCCESS ||
        !supported)
        return 0;
    CUmemoryPool pool;
    uint64_t keep_all = UINT64_MAX;
    int on = 1, off = 0;
    if (CU_CALL(st, cuDeviceGetDefaultMemPool, (&pool, dev->dev)) < 0 ||
        CU_CALL(st, cuMemPoolSetAttribute, (pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all)) < 0 ||
        CU_CALL(st, cuMemPoolSetAttribute,
                (pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, &off)) < 0 ||
        CU_CALL(st, cuMemPoolSetAttribute, (pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &on)) < 0)
        return -1;
    if (CU_CALL(st, cuStreamCreateWithPriority, (&dm->free_stream, CU_STREAM_NON_BLOCKING, 0)) < 0)
        goto error;
    if (CU_CALL(st, cuEventCreate, (&dm->legacy_event, CU_EVENT_DISABLE_TIMING)) < 0)
        goto error;
    dm->pool = pool;
    return 1;
error:
    if (dm->free_stream)
        cukit_api.cuStreamDestroy(dm->free_stream);
    dm->free_stream = NULL;
    dm->legacy_event = NULL;
    return -1;
}

cukit_devmem *
cukit_devmem_get(cukit_Device *dev)
{
    cukit_state *st = dev->st;
    if (st->devmem == NULL) {
        int n = cukit_device_count(st);
        if (n < 0)
            return NULL;
        st->devmem = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof(cukit_devmem));
        if (st->devmem == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        st->ndevmem = n;
    }
    cukit_devmem *dm = &st->devmem[dev->ordinal];
    if (!dm->ready) {
        dm->ctx = dev->ctx;
        if (pool_init(dev, dm) < 0)
            return NULL;
        dm->ready = 1;
    }
    return dm;
}

/* Queue on dm->free_stream a wait for the work on stream h (NULL: legacy), using
 * `event`, when that work is unfinished. 0 / -1. */
static int
wait_for_stream(cukit_state *st, cukit_devmem *dm, CUstream h, CUevent event)
{
    CUresult res = cukit_api.cuStreamQuery(h);
    if (res == CUDA_SUCCESS)
        return 0; /* idle: nothing queued so far can still touch the memory */
    if (res != CUDA_ERROR_NOT_READY)
        return cukit_check_cu(st, res, "cuStreamQuery");
    if (CU_CALL(st, cuEventRecord, (event, h)) < 0 ||
        CU_CALL(st, cuStreamWaitEvent, (dm->free_stream, event, 0)) < 0)
        return -1;
    return 0;
}

/* Order the next free on dm->free_stream after everything already queued that may
 * use the memory. A stream being captured is skipped: captured work does not run
 * (the graph holds strong references to what it uses), and querying it would
 * break the capture. 0 / -1. */
static int
order_free(cukit_state *st, cukit_devmem *dm)
{
    if (wait_for_stream(st, dm, NULL, dm->legacy_event) < 0)
        return -1;
    for (int i = 0; i < dm->nstreams; i++) {
        cukit_tracked_stream *t = &dm->streams[i];
        if (t->stream->capture == NULL &&
            wait_for_stream(st, dm, t->stream->handle, t->event) < 0)
            return -1;
    }
    return 0;
}

int
cukit_mem_track_stream(cukit_Stream *s)
{
    cukit_devmem *dm = cukit_devmem_get(s->device);
    if (dm == NULL)
        return -1;
    if (dm->pool == NULL || s->handle == NULL)
        return 0; /* plain cuMemFree synchronizes by itself */
    if (dm->nstreams == dm->capstreams) {
        int cap = dm->capstreams ? 2 * dm->capstreams : 8;
        cukit_tracked_stream *grown = PyMem_Realloc(dm->streams, cap * sizeof *grown);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        dm->streams = grown;
        dm->capstreams = cap;
    }
    CUevent ev;
    if (CU_CALL(s->st, cuEventCreate, (&ev, CU_EVENT_DISABLE_TIMING)) < 0)
        return -1;
    dm->streams[dm->nstreams].stream = s;
    dm->streams[dm->nstreams].event = ev;
    dm->nstreams++;
    return 0;
}

void
cukit_mem_untrack_stream(cukit_Stream *s)
{
    cukit_state *st = s->st;
    if (st->devmem == NULL || s->device->ordinal >= st->ndevmem)
        return;
    cukit_devmem *dm = &st->devmem[s->device->ordinal];
    for (int i = 0; i < dm->nstreams; i++) {
        cukit_tracked_stream *t = &dm->streams[i];
        if (t->stream != s)
            continue;
        /* The stream goes, but its queued work may still use memory freed later. */
        if (s->capture == NULL && cukit_api.cuStreamQuery(s->handle) == CUDA_ERROR_NOT_READY &&
            cukit_api.cuEventRecord(t->event, s->handle) == CUDA_SUCCESS)
            cukit_api.cuStreamWaitEvent(dm->free_stream, t->event, 0);
        cukit_api.cuEventDestroy(t->event); /* released by the driver once it completes */
        dm->streams[i] = dm->streams[--dm->nstreams];
        return;
    }
}

void
cukit_mem_teardown(cukit_state *st)
{
    if (st->devmem == NULL)
        return;
    for (int i = 0; i < st->ndevmem; i++) {
        cukit_devmem *dm = &st->devmem[i];
        if (dm->stage)
            cukit_stage_release(dm->stage);
        dm->stage = NULL;
        if (dm->ready && cukit_driver_ready() && cukit_api.cuCtxSetCurrent(dm->ctx) == CUDA_SUCCESS) {
            for (int j = 0; j < dm->nstreams; j++)
                cukit_api.cuEventDestroy(dm->streams[j].event);
            if (dm->legacy_event)
                cukit_api.cuEventDestroy(dm->legacy_event);
            if (dm->free_stream)
                cukit_api.cuStreamDestroy(dm->free_stream);
        }
        PyMem_Free(dm->streams);
    }
    PyMem_Free(st->devmem);
    st->devmem = NULL;
    st->ndevmem = 0;
}

/* OutOfMemoryError whose message gives the requested and available sizes. */
static void
oom_error(cukit_state *st, size_t nbytes, const char *call)
{
    size_t free_b = 0, total = 0;
    cukit_api.cuMemGetInfo(&free_b, &total);
    char text[320];
    PyOS_snprintf(text, sizeof text,
                  "%s failed: CUDA_ERROR_OUT_OF_MEMORY (2): could not allocate %zu bytes "
                  "(%.1f MiB); %zu bytes (%.1f MiB) of the device's %zu are free",
                  call, nbytes, nbytes / 1048576.0, free_b, free_b / 1048576.0, total);
    PyObject *msg = PyUnicode_FromString(text);
    if (msg) {
        cukit_raise(st, CUKIT_EXC_OOM, CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY",
                    call, msg);
        Py_DECREF(msg);
    }
}

/* Allocate n bytes from dm's pool (or plainly, without one). When the device is
 * full, wait for the frees still queued, then give the pool's spare memory back,
 * trying again after each: the GIL is released meanwhile. */
static CUresult
device_alloc(cukit_devmem *dm, CUdeviceptr *p, size_t n)
{
    if (dm->pool == NULL)
        return cukit_api.cuMemAlloc(p, n);
    CUresult res = cukit_api.cuMemAllocFromPoolAsync(p, n, dm->pool, NULL);
    if (res != CUDA_ERROR_OUT_OF_MEMORY)
        return res;
    Py_BEGIN_ALLOW_THREADS
    res = cukit_api.cuStreamSynchronize(dm->free_stream);
    if (res == CUDA_SUCCESS)
        res = cukit_api.cuMemAllocFromPoolAsync(p, n, dm->pool, NULL);
    if (res == CUDA_ERROR_OUT_OF_MEMORY && cukit_api.cuMemPoolTrimTo(dm->pool, 0) == CUDA_SUCCESS)
        res = cukit_api.cuMemAllocFromPoolAsync(p, n, dm->pool, NULL);
    Py_END_ALLOW_THREADS
    return res;
}

cukit_Buffer *
cukit_buffer_create(cukit_Device *dev, size_t nbytes)
{
    cukit_state *st = dev->st;
    if (cukit_device_activate(dev) < 0)
        return NULL;
    cukit_devmem *dm = cukit_devmem_get(dev);
    if (dm == NULL)
        return NULL;
    const char *call = dm->pool ? "cuMemAllocFromPoolAsync" : "cuMemAlloc";
    if (nbytes > dev->total_memory) {
        /* Never worth asking: some drivers take a size beyond the device's for a bad value. */
        oom_error(st, nbytes, call);
        return NULL;
    }
    cukit_Buffer *b = PyObject_New(cukit_Buffer, st->BufferType);
    if (b == NULL)
        return NULL;
    b->st = st;
    b->device = (cukit_Device *)Py_NewRef(dev);
    b->ptr = 0;
    b->size = nbytes;
    /* A zero-byte request still gets a real (minimal) allocation, so that a valid
     * pointer always means live memory and 0 always means freed. */
    CUresult res = device_alloc(dm, &b->ptr, nbytes ? nbytes : 1);
    if (res == CUDA_ERROR_OUT_OF_MEMORY) {
        b->ptr = 0;
        oom_error(st, nbytes, call);
        Py_DECREF(b);
        return NULL;
    }
    if (cukit_check_cu(st, res, call) < 0) {
        b->ptr = 0;
        Py_DECREF(b);
        return NULL;
    }
    return b;
}

int
cukit_buffer_release(cukit_Buffer *b)
{
    if (b->ptr == 0)
        return 0;
    CUdeviceptr p = b->ptr;
    b->ptr = 0;
    if (cukit_device_activate(b->device) < 0)
        return -1;
    cukit_devmem *dm = cukit_devmem_get(b->device);
    if (dm == NULL)
        return -1;
    if (dm->pool) {
        /* Queued, not waited for: see the ordering rule at the top of the file. */
        if (order_free(b->st, dm) < 0)
            return -1;
        return CU_CALL(b->st, cuMemFreeAsync, (p, dm->free_stream));
    }
    CUresult res;
    Py_BEGIN_ALLOW_THREADS
    res = cukit_api.cuMemFree(p);
    Py_END_ALLOW_THREADS
    return cukit_check_cu(b->st, res, "cuMemFree");
}

static void
buffer_dealloc(cukit_Buffer *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->ptr) {
        PyObject *saved = PyErr_GetRaisedException();
        if (cukit_buffer_release(self) < 0) {
            /* After a kernel fault every free fails; the fault was already reported. */
            PyObject *exc = PyErr_GetRaisedException();
            PyObject *code = exc ? PyObject_GetAttrString(exc, "code") : NULL;
            int sticky = code && PyLong_Check(code) && cukit_cu_is_sticky((CUresult)PyLong_AsLong(code));
            Py_XDECREF(code);
            PyErr_SetRaisedException(exc);
            if (sticky)
                PyErr_Clear();
            else
                PyErr_WriteUnraisable((PyObject *)self);
        }
        PyErr_SetRaisedException(saved);
    }
    Py_XDECREF(self->device);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *
buffer_free(cukit_Buffer *self, PyObject *Py_UNUSED(ignored))
{
    if (cukit_buffer_release(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
buffer_int(cukit_Buffer *self)
{
    if (self->ptr == 0) {
        cukit_freed_error();
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(self->ptr);
}

static PyObject *
buffer_get_ptr(cukit_Buffer *self, void *c)
{
    return buffer_int(self);
}

static PyObject *
buffer_get_size(cukit_Buffer *self, void *c)
{
    return PyLong_FromSize_t(self->size);
}

static PyObject *
buffer_get_freed(cukit_Buffer *self, void *c)
{
    return PyBool_FromLong(self->ptr == 0);
}

static PyObject *
buffer_repr(cukit_Buffer *self)
{
    if (self->ptr == 0)
        return PyUnicode_FromFormat("<cukit.Buffer %zu bytes, freed>", self->size);
    return PyUnicode_FromFormat("<cukit.Buffer %zu bytes at 0x%llx on device %d>", self->size,
                                self->ptr, self->device->ordinal);
}

static PyMemberDef buffer_members[] = {
    {"device", Py_T_OBJECT_EX, offsetof(cukit_Buffer, device), Py_READONLY, "The Device."},
    {NULL},
};

static PyGetSetDef buffer_getset[] = {
    {"ptr", (getter)buffer_get_ptr, NULL, "The device address, as an int."},
    {"size", (getter)buffer_get_size, NULL, "Size in bytes."},
    {"nbytes", (getter)buffer_get_size, NULL, "Size in bytes."},
    {"freed", (getter)buffer_get_freed, NULL, "True once free() was called."},
    {NULL},
};

static PyMethodDef buffer_methods[] = {
    {"free", (PyCFunction)buffer_free, METH_NOARGS,
     "Free the memory now rather than with the last reference. Safe to call twice."},
    {NULL},
};

static PyType_Slot buffer_slots[] = {
    {Py_tp_doc, "Buffer: raw device memory from cukit.alloc(nbytes). int(buf) is its address."},
    {Py_tp_dealloc, buffer_dealloc},
    {Py_tp_repr, buffer_repr},
    {Py_tp_members, buffer_members},
    {Py_tp_getset, buffer_getset},
    {Py_tp_methods, buffer_methods},
    {Py_nb_int, buffer_int},
    {Py_nb_index, buffer_int},
    {0, NULL},
};

static PyType_Spec buffer_spec = {
    .name = "cukit.Buffer",
    .basicsize = sizeof(cukit_Buffer),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = buffer_slots,
};

/* ------------------------------------------------------------------ module functions */

/* The device for a device= argument: None -> current, Device, or an ordinal. Borrowed. */
cukit_Device *
cukit_device_arg(cukit_state *st, PyObject *device)
{
    if (device == NULL || device == Py_None)
        return cukit_device_current(st);
    if (Py_IS_TYPE(device, st->DeviceType))
        return (cukit_Device *)device;
    long ordinal = PyLong_AsLong(device);
    if (ordinal == -1 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "device must be a cukit.Device or an int, got %s",
                     Py_TYPE(device)->tp_name);
        return NULL;
    }
    return cukit_device_get(st, ordinal < 0 || ordinal > INT_MAX ? -1 : (int)ordinal);
}

static PyObject *
mod_alloc(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"nbytes", "device", NULL};
    PyObject *nbytes_o, *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:alloc", kwlist, &nbytes_o, &device))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    PyObject *n = PyNumber_Index(nbytes_o);
    if (n == NULL)
        return NULL;
    int overflow;
    long long nbytes = PyLong_AsLongLongAndOverflow(n, &overflow);
    Py_DECREF(n);
    if (overflow || nbytes < 0) {
        PyErr_Format(PyExc_ValueError, "alloc() size must be from 0 to 2**63 - 1 bytes, got %R",
                     nbytes_o);
        return NULL;
    }
    cukit_Device *dev = cukit_device_arg(st, device);
    return dev ? (PyObject *)cukit_buffer_create(dev, (size_t)nbytes) : NULL;
}

static PyMethodDef buffer_functions[] = {
    {"alloc", (PyCFunction)(void (*)(void))mod_alloc, METH_VARARGS | METH_KEYWORDS,
     "alloc(nbytes, device=None) -> Buffer: raw device memory."},
    {NULL},
};

int
cukit_buffer_setup(PyObject *module, cukit_state *st)
{
    st->BufferType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &buffer_spec, NULL);
    if (st->BufferType == NULL || PyModule_AddType(module, st->BufferType) < 0)
        return -1;
    return PyModule_AddFunctions(module, buffer_functions);
}
