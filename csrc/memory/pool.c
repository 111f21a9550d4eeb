/* pool.c - each device's stream-ordered memory pool, scratch memory, memory_info and trim_pool */
#include "memory/pool.h"

/* ------------------------------------------------------------------ the pool
 *
 * Device memory comes from the device's default memory pool, stream-ordered, so
 * that allocating and freeing in a loop never waits for the device. The rule that
 * keeps this safe:
 *
 *  - Allocations are made on the legacy default stream.
 *  - A free is queued on the device's release stream (runtime/stream.c), behind an
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
    dm->pool = pool;
    return 1;
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

void
cukit_mem_teardown(cukit_state *st)
{
    PyMem_Free(st->devmem);
    st->devmem = NULL;
    st->ndevmem = 0;
}

void
cukit_oom_error(cukit_state *st, size_t nbytes, const char *call)
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

CUresult
cukit_pool_alloc(cukit_Device *dev, cukit_devmem *dm, CUdeviceptr *p, size_t n)
{
    if (dm->pool == NULL)
        return cukit_api.cuMemAlloc(p, n);
    CUresult res = cukit_api.cuMemAllocFromPoolAsync(p, n, dm->pool, NULL);
    if (res != CUDA_ERROR_OUT_OF_MEMORY)
        return res;
    CUstream pending = dev->release_stream; /* the frees still queued, if any */
    Py_BEGIN_ALLOW_THREADS
    res = pending ? cukit_api.cuStreamSynchronize(pending) : CUDA_SUCCESS;
    if (res == CUDA_SUCCESS)
        res = cukit_api.cuMemAllocFromPoolAsync(p, n, dm->pool, NULL);
    if (res == CUDA_ERROR_OUT_OF_MEMORY && cukit_api.cuMemPoolTrimTo(dm->pool, 0) == CUDA_SUCCESS)
        res = cukit_api.cuMemAllocFromPoolAsync(p, n, dm->pool, NULL);
    Py_END_ALLOW_THREADS
    return res;
}

int
cukit_pool_trim(cukit_Device *dev, size_t keep)
{
    cukit_state *st = dev->st;
    if (cukit_device_activate(dev) < 0)
        return -1;
    cukit_devmem *dm = cukit_devmem_get(dev);
    if (dm == NULL)
        return -1;
    if (dm->pool) {
        /* Memory whose free is still queued counts as in use: let the frees finish. */
        CUstream pending = dev->release_stream;
        CUmemoryPool pool = dm->pool;
        if (pending)
            CU_CALL_NOGIL(st, cuStreamSynchronize, (pending));
        CU_CALL_NOGIL(st, cuMemPoolTrimTo, (pool, keep));
    }
    return 0;
error:
    return -1;
}

/* ------------------------------------------------------------------ scratch */

int
cukit_scratch_alloc(cukit_Device *dev, size_t nbytes, CUstream stream, cukit_scratch *out)
{
    cukit_state *st = dev->st;
    out->ptr = 0;
    out->pooled = 0;
    if (cukit_device_activate(dev) < 0)
        return -1;
    if (nbytes == 0)
        nbytes = 1;
    if (cukit_api.cuMemAllocAsync) {
        CUresult res = cukit_api.cuMemAllocAsync(&out->ptr, nbytes, stream);
        if (res == CUDA_SUCCESS) {
            out->pooled = 1;
            return 0;
        }
        out->ptr = 0;
        if (res != CUDA_ERROR_NOT_SUPPORTED)
            return cukit_check_cu(st, res, "cuMemAllocAsync");
    }
    if (CU_CALL(st, cuMemAlloc, (&out->ptr, nbytes)) < 0) {
        out->ptr = 0;
        return -1;
    }
    return 0;
}

int
cukit_scratch_release(cukit_Device *dev, cukit_scratch *s, CUstream stream)
{
    cukit_state *st = dev->st;
    if (s->ptr == 0)
        return 0;
    CUdeviceptr p = s->ptr;
    s->ptr = 0;
    if (cukit_device_activate(dev) < 0)
        return -1;
    if (s->pooled)
        return CU_CALL(st, cuMemFreeAsync, (p, stream));
    /* Plain memory: wait for the work that reads it, then free. */
    CU_CALL_NOGIL(st, cuStreamSynchronize, (stream));
    CU_CALL_NOGIL(st, cuMemFree, (p));
    return 0;
error:
    return -1;
}

/* ------------------------------------------------------------------ the pool */

static PyObject *
mod_memory_info(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", NULL};
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:memory_info", kwlist, &device))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    cukit_Device *dev = cukit_device_arg(st, device);
    if (dev == NULL || cukit_device_activate(dev) < 0)
        return NULL;
    cukit_devmem *dm = cukit_devmem_get(dev);
    size_t free_b = 0, total = 0;
    uint64_t reserved = 0, used = 0;
    if (dm == NULL || CU_CALL(st, cuMemGetInfo, (&free_b, &total)) < 0)
        return NULL;
    if (dm->pool &&
        (CU_CALL(st, cuMemPoolGetAttribute, (dm->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
                                             &reserved)) < 0 ||
         CU_CALL(st, cuMemPoolGetAttribute, (dm->pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used)) < 0))
        return NULL;
    return Py_BuildValue("{snsnsKsK}", "free", (Py_ssize_t)free_b, "total", (Py_ssize_t)total,
                         "pool_reserved", (unsigned long long)reserved, "pool_used",
                         (unsigned long long)used);
}

static PyObject *
mod_trim_pool(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", "keep", NULL};
    PyObject *device = Py_None;
    Py_ssize_t keep = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|On:trim_pool", kwlist, &device, &keep))
        return NULL;
    if (keep < 0) {
        PyErr_Format(PyExc_ValueError, "trim_pool(): keep must be 0 or more bytes, got %zd", keep);
        return NULL;
    }
    cukit_state *st = PyModule_GetState(m);
    cukit_Device *dev = cukit_device_arg(st, device);
    if (dev == NULL || cukit_device_activate(dev) < 0)
        return NULL;
    if (cukit_pool_trim(dev, (size_t)keep) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef pool_functions[] = {
    {"memory_info", (PyCFunction)(void (*)(void))mod_memory_info, METH_VARARGS | METH_KEYWORDS,
     "memory_info(device=None) -> dict: the device's free and total bytes, and the bytes "
     "cukit's pool holds (pool_reserved) and hands out (pool_used)."},
    {"trim_pool", (PyCFunction)(void (*)(void))mod_trim_pool, METH_VARARGS | METH_KEYWORDS,
     "trim_pool(device=None, keep=0): give the pool's unused memory back to the device, "
     "keeping at least `keep` bytes; waits for pending frees first."},
    {NULL},
};

int
cukit_pool_setup(PyObject *module, cukit_state *st)
{
    return PyModule_AddFunctions(module, pool_functions);
}
