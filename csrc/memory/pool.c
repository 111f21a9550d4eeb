/* pool.c - each device's stream-ordered memory pool, scratch memory, memory_info and trim_pool */
#include "memory/pool.h"

#include <string.h>

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
 * __cuda_array_interface__) is that library's to finish before the array goes.
 *
 * Kept blocks. The rule above costs a free four driver calls (a stream query, an event
 * record and wait, cuMemFreeAsync) and an allocation one more: most of what `a + b`
 * costs beyond `add(a, b, out=c)`. So a few small blocks that arrays let go of are kept
 * here, by size, and handed to the next kernel output of the same size without a
 * driver call, when that is as safe as the rule:
 *
 *  - A block is kept only when no live cukit.Stream of the device (none being
 *    captured) has unfinished work, and no dropped stream's work is still running
 *    (Device.orphan_work): then everything that may still use it was queued on the
 *    legacy stream (other libraries' streams are theirs to finish, as above).
 *  - A kept block goes only to the output of a ufunc (not under where=) or an
 *    ElementwiseKernel whose kernel is queued next on the legacy stream (no stream=,
 *    no capture in progress). That kernel runs after every earlier user of the block,
 *    in legacy order; anything that uses the output on another stream must wait for
 *    that kernel (to see its values at all), so it too comes after them. (An
 *    ElementwiseKernel output the operation leaves partly unwritten is no different:
 *    it must not be touched elsewhere before its kernel ran.) cukit.empty() and every
 *    other allocation still come from the pool, ready for any stream at once.
 *  - trim_pool(), an allocation that finds the device full, and memory_info() (so that
 *    pool_used counts arrays only) give kept blocks back through the free path above.
 */

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
    if (st->memory->devmem == NULL) {
        int n = cukit_device_count(st);
        if (n < 0)
            return NULL;
        st->memory->devmem = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof(cukit_devmem));
        if (st->memory->devmem == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        st->memory->ndevmem = n;
    }
    cukit_devmem *dm = &st->memory->devmem[dev->ordinal];
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
    PyMem_Free(st->memory->devmem);
    st->memory->devmem = NULL;
    st->memory->ndevmem = 0;
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

/* 1 when nothing but the legacy stream may still be running work that uses memory
 * freed now: see "Kept blocks" above. Never raises. */
static int
only_legacy_busy(cukit_Device *dev)
{
    if (dev->orphan_work) {
        if (dev->release_stream == NULL ||
            cukit_api.cuStreamQuery(dev->release_stream) != CUDA_SUCCESS)
            return 0;
        dev->orphan_work = 0;
    }
    for (int i = 0; i < dev->nstreams; i++) {
        cukit_tracked_stream *t = &dev->streams[i];
        if (t->stream->capture == NULL && cukit_api.cuStreamQuery(t->stream->handle) != CUDA_SUCCESS)
            return 0;
    }
    return 1;
}

/* Remove entry i of the kept blocks, oldest first. */
static void
keep_remove(cukit_devmem *dm, int i)
{
    dm->kept_bytes -= dm->kept[i].size;
    memmove(&dm->kept[i], &dm->kept[i + 1], sizeof dm->kept[0] * (size_t)(dm->nkept - i - 1));
    dm->nkept--;
}

int
cukit_keep_put(cukit_Device *dev, cukit_devmem *dm, CUdeviceptr p, size_t n)
{
    if (dm->keep_off || dm->pool == NULL || n == 0 || n > CUKIT_KEEP_MAX_BLOCK ||
        !only_legacy_busy(dev))
        return 0;
    /* Full: the oldest blocks go back to the pool (the free path above), so that the
     * sizes in use now are the ones kept. */
    while (dm->nkept == CUKIT_KEEP_SLOTS || dm->kept_bytes + n > CUKIT_KEEP_MAX_BYTES) {
        CUstream release = cukit_device_release_stream(dev);
        if (release == NULL || cukit_api.cuMemFreeAsync(dm->kept[0].ptr, release) != CUDA_SUCCESS) {
            PyErr_Clear(); /* the caller frees p its own way and reports a failure */
            return 0;
        }
        keep_remove(dm, 0);
    }
    dm->kept[dm->nkept].ptr = p;
    dm->kept[dm->nkept].size = n;
    dm->nkept++;
    dm->kept_bytes += n;
    return 1;
}

CUdeviceptr
cukit_keep_take(cukit_devmem *dm, size_t n)
{
    for (int i = dm->nkept - 1; i >= 0; i--) { /* the newest: warm in the L2 */
        if (dm->kept[i].size != n)
            continue;
        CUdeviceptr p = dm->kept[i].ptr;
        keep_remove(dm, i);
        return p;
    }
    return 0;
}

int
cukit_keep_flush(cukit_Device *dev, cukit_devmem *dm)
{
    if (dm->nkept == 0)
        return 0;
    CUstream release = cukit_device_release_stream(dev);
    if (release == NULL)
        return -1;
    while (dm->nkept > 0) {
        dm->nkept--;
        dm->kept_bytes -= dm->kept[dm->nkept].size;
        if (CU_CALL(dev->st, cuMemFreeAsync, (dm->kept[dm->nkept].ptr, release)) < 0)
            return -1;
    }
    return 0;
}

static CUresult
pool_alloc_once(cukit_devmem *dm, CUdeviceptr *p, size_t n)
{
    return dm->pool ? cukit_api.cuMemAllocFromPoolAsync(p, n, dm->pool, NULL) : cukit_api.cuMemAlloc(p, n);
}

/* Out of memory: give back the kept blocks, wait for queued frees, trim, try again. */
static CUresult
pool_alloc_retry(cukit_Device *dev, cukit_devmem *dm, CUdeviceptr *p, size_t n)
{
    CUresult res;
    if (dm->nkept > 0) {
        if (cukit_keep_flush(dev, dm) < 0)
            PyErr_Clear(); /* the OutOfMemoryError that follows says more */
    }
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

/* An allocation made while a stream is captured (an array made inside `with
 * s.capture()`, a sort's temporaries) is made in relaxed capture mode: the driver
 * refuses it otherwise, and the graph keeps the memory (cukit_capture_keep). Another
 * library's capture is seen only by that refusal, and the call is made again relaxed. */
CUresult
cukit_pool_alloc(cukit_Device *dev, cukit_devmem *dm, CUdeviceptr *p, size_t n)
{
    int mode = cukit_capture_relax(dev->st, 0);
    CUresult res = pool_alloc_once(dm, p, n);
    if (res == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && mode < 0 &&
        (mode = cukit_capture_relax(dev->st, 1)) >= 0)
        res = pool_alloc_once(dm, p, n);
    if (res == CUDA_ERROR_OUT_OF_MEMORY && dm->pool)
        res = pool_alloc_retry(dev, dm, p, n);
    cukit_capture_restore(mode);
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
        if (cukit_keep_flush(dev, dm) < 0)
            return -1;
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
    if (dm == NULL || cukit_keep_flush(dev, dm) < 0 ||
        CU_CALL(st, cuMemGetInfo, (&free_b, &total)) < 0)
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

static PyObject *
mod_keep_freed(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"on", "device", NULL};
    int on;
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "p|O:_keep_freed", kwlist, &on, &device))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    cukit_Device *dev = cukit_device_arg(st, device);
    if (dev == NULL || cukit_device_activate(dev) < 0)
        return NULL;
    cukit_devmem *dm = cukit_devmem_get(dev);
    if (dm == NULL || cukit_keep_flush(dev, dm) < 0)
        return NULL;
    int was = !dm->keep_off;
    dm->keep_off = !on;
    return PyBool_FromLong(was);
}

static PyMethodDef pool_functions[] = {
    {"_keep_freed", (PyCFunction)(void (*)(void))mod_keep_freed, METH_VARARGS | METH_KEYWORDS,
     "_keep_freed(on, device=None) -> bool: whether freed small blocks are kept for the "
     "next kernel output (pool.c's rule); returns the previous setting. For benchmarks "
     "and tests."},
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
