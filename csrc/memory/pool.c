/* pool.c - each device's stream-ordered memory pool, scratch memory, memory_info and trim_pool */
#include "memory/pool.h"

#include <errno.h>
#include <stdlib.h>
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
 * The cache. That rule costs a free four driver calls (a stream query, an event record
 * and wait, cuMemFreeAsync) and an allocation one more. So blocks that arrays let go of
 * are cached here, per device, and handed to the next allocation of their size bin
 * without a driver call, when that is as safe as the rule:
 *
 *  - A block is cached only when no cukit.Stream of the device may still run work
 *    (runtime's cukit_device_side_idle: a dropped stream's work counted, and a stream
 *    being captured counts as busy if work was queued on it), so everything that may
 *    still use it was queued on the legacy stream. A stream counts as busy from the moment work is
 *    queued on it (any stream= argument resolves through cukit_stream_used) until a query
 *    finds it idle: with no stream used since, a free makes no driver call; otherwise one
 *    cuStreamQuery per such stream, and a free of memory one of them may still use takes
 *    the release stream's path above.
 *  - A cached block is ready in legacy-stream order: the legacy stream runs work queued
 *    from now on after every earlier user of the block. Any other stream is ordered after
 *    the legacy stream (an event record and wait; of each device that handed one out)
 *    before its next work once each time a cached block was handed out (the runtime's
 *    reuse_epoch; cukit_stream_used), so a block is ready for every stream at once, as
 *    the pool's are. An allocation made
 *    while this thread's last stream= was another stream (an operation's output on it,
 *    allocated after its stream was resolved) takes no cached block: it comes from the
 *    pool (cukit_stream_pending).
 *  - No block is handed out while a stream is being captured (captured work may run at
 *    any later time, where legacy order says nothing).
 *  - Sizes are rounded into bins: powers of two from 512 B to 1 MiB, multiples of 2 MiB
 *    above; every allocation asks the pool for its bin's size, so any block of a bin
 *    serves any request of it. The cache holds at most cache_limit bytes (an eighth of
 *    the device's memory, at most 1 GiB; cukit.pool_cache_limit(), or CUKIT_POOL_CACHE
 *    read at the device's first allocation) and 64 blocks per
 *    small bin and 64 large ones; a freed block that does not fit goes to the pool.
 *  - Off by default under the emulator, whose memory checker would otherwise see a
 *    rounded size (an overrun into the rest of a bin passes) and a freed array's block
 *    still allocated; cukit._keep_freed(True) or CUKIT_POOL_CACHE turns it on there.
 *  - trim_pool() and an allocation that finds the device full give every cached block
 *    back through the release stream's path; memory_info()'s pool_used leaves them out
 *    (they count as pool_cached).
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

/* CUKIT_POOL_CACHE: the cache's limit in bytes (a K, M or G suffix allowed; 0: off),
 * which also turns it on under the emulator. 1 and *limit set when given, 0 when not,
 * -1 with ValueError when malformed. */
static int
env_cache_limit(size_t *limit)
{
    const char *v = getenv("CUKIT_POOL_CACHE");
    if (v == NULL || *v == '\0')
        return 0;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift)
        end++;
    if (end == v || *end != '\0' || errno || v[0] == '-' || n > (SIZE_MAX >> shift)) {
        PyErr_Format(PyExc_ValueError,
                     "CUKIT_POOL_CACHE must be the cache's limit in bytes, with an optional K, "
                     "M or G suffix (0 turns the cache off), got '%s'", v);
        return -1;
    }
    *limit = (size_t)n << shift;
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
        dm->cache_limit = dev->total_memory / 8 < CUKIT_CACHE_DEFAULT_LIMIT
                              ? dev->total_memory / 8 : CUKIT_CACHE_DEFAULT_LIMIT;
        /* The emulator checks each access against the allocation it falls in: off there
         * by default, so that it sees every array's own size and lifetime. */
        dm->cache_off = strcmp(cukit_backend_name(), "emulator") == 0;
        int given = env_cache_limit(&dm->cache_limit);
        if (given < 0)
            return NULL;
        if (given)
            dm->cache_off = dm->cache_limit == 0;
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

size_t
cukit_cache_round(size_t n)
{
    if (n <= CUKIT_CACHE_MIN_BLOCK)
        return CUKIT_CACHE_MIN_BLOCK;
    if (n <= CUKIT_CACHE_SMALL_MAX) {
        size_t b = CUKIT_CACHE_MIN_BLOCK;
        while (b < n)
            b <<= 1;
        return b;
    }
    if (n > SIZE_MAX - CUKIT_CACHE_GRAIN)
        return n; /* beyond any device: the allocation fails as it would */
    return (n + CUKIT_CACHE_GRAIN - 1) / CUKIT_CACHE_GRAIN * CUKIT_CACHE_GRAIN;
}

/* The small bin of rounded size n (a power of two from 512 B to 1 MiB). */
static int
small_bin(size_t n)
{
    int i = 0;
    while ((size_t)CUKIT_CACHE_MIN_BLOCK << i < n)
        i++;
    return i;
}

CUdeviceptr
cukit_cache_take(cukit_Device *dev, cukit_devmem *dm, size_t n)
{
    CUdeviceptr p = 0;
    if (n <= CUKIT_CACHE_SMALL_MAX) {
        int b = small_bin(n);
        if (dm->small[b].n > 0)
            p = dm->small[b].ptr[--dm->small[b].n]; /* the newest: warm in the L2 */
    }
    else {
        for (int i = dm->nlarge - 1; i >= 0; i--) {
            if (dm->large[i].size != n)
                continue;
            p = dm->large[i].ptr;
            memmove(&dm->large[i], &dm->large[i + 1],
                    sizeof dm->large[0] * (size_t)(dm->nlarge - i - 1));
            dm->nlarge--;
            break;
        }
    }
    if (p) {
        dm->cached_bytes -= n;
        /* other streams wait for this device's legacy stream first (stream.c) */
        dev->handed_out_at = ++dev->st->runtime->reuse_epoch;
    }
    return p;
}

int
cukit_cache_put(cukit_Device *dev, cukit_devmem *dm, CUdeviceptr p, size_t n)
{
    if (dm->cache_off || dm->cached_bytes + n > dm->cache_limit)
        return 0;
    int b = n <= CUKIT_CACHE_SMALL_MAX ? small_bin(n) : -1;
    if (b >= 0 ? dm->small[b].n == CUKIT_CACHE_BIN_SLOTS : dm->nlarge == CUKIT_CACHE_LARGE_SLOTS)
        return 0;
    if (!cukit_device_side_idle(dev))
        return 0; /* a cukit.Stream may still use it: the release stream's path */
    if (b >= 0)
        dm->small[b].ptr[dm->small[b].n++] = p;
    else {
        dm->large[dm->nlarge].ptr = p;
        dm->large[dm->nlarge].size = n;
        dm->nlarge++;
    }
    dm->cached_bytes += n;
    return 1;
}

int
cukit_block_free(cukit_Device *dev, cukit_devmem *dm, CUdeviceptr p)
{
    /* Freed while a stream is captured (cukit's or another library's): the legacy
     * stream's query (below) and the free are refused outside relaxed mode. Two
     * thread-local calls on the pool's path; the cache's makes no driver call. */
    int mode = cukit_capture_relax(dev->st, 1);
    if (dm->pool) {
        /* Queued, not waited for: see the ordering rule above. */
        CUstream release = cukit_device_release_stream(dev);
        int rc = release ? CU_CALL(dev->st, cuMemFreeAsync, (p, release)) : -1;
        cukit_capture_restore(mode);
        return rc;
    }
    CUresult res;
    Py_BEGIN_ALLOW_THREADS
    res = cukit_api.cuMemFree(p);
    Py_END_ALLOW_THREADS
    cukit_capture_restore(mode);
    return cukit_check_cu(dev->st, res, "cuMemFree");
}

int
cukit_cache_flush(cukit_Device *dev, cukit_devmem *dm)
{
    int rc = 0;
    for (int b = 0; b < CUKIT_CACHE_SMALL_BINS; b++) {
        while (dm->small[b].n > 0) {
            CUdeviceptr p = dm->small[b].ptr[--dm->small[b].n];
            dm->cached_bytes -= (size_t)CUKIT_CACHE_MIN_BLOCK << b;
            if (rc == 0 && cukit_block_free(dev, dm, p) < 0)
                rc = -1; /* the rest are forgotten: the context is likely lost */
        }
    }
    while (dm->nlarge > 0) {
        dm->nlarge--;
        dm->cached_bytes -= dm->large[dm->nlarge].size;
        if (rc == 0 && cukit_block_free(dev, dm, dm->large[dm->nlarge].ptr) < 0)
            rc = -1;
    }
    return rc;
}

static CUresult
pool_alloc_once(cukit_devmem *dm, CUdeviceptr *p, size_t n)
{
    return dm->pool ? cukit_api.cuMemAllocFromPoolAsync(p, n, dm->pool, NULL) : cukit_api.cuMemAlloc(p, n);
}

/* Out of memory: give back the cached blocks, wait for queued frees, trim, try again. */
static CUresult
pool_alloc_retry(cukit_Device *dev, cukit_devmem *dm, CUdeviceptr *p, size_t n)
{
    CUresult res;
    if (dm->cached_bytes > 0 && cukit_cache_flush(dev, dm) < 0)
        PyErr_Clear(); /* the OutOfMemoryError that follows says more */
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
 * s.capture()`, a sort's temporaries, or under another library's capture) is made in
 * relaxed capture mode: the driver refuses it otherwise, and the graph keeps the memory
 * (cukit_capture_keep). Relaxed for every call of this path: another library's capture
 * cannot be seen beforehand. */
CUresult
cukit_pool_alloc(cukit_Device *dev, cukit_devmem *dm, CUdeviceptr *p, size_t n)
{
    int mode = cukit_capture_relax(dev->st, 1);
    CUresult res = pool_alloc_once(dm, p, n);
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
    if (cukit_cache_flush(dev, dm) < 0)
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

int
cukit_stream_kept(cukit_Device *dev, CUstream stream, int kind, size_t nbytes, CUdeviceptr *ptr,
                  unsigned *epoch)
{
    cukit_state *st = dev->st;
    unsigned long long id;
    *ptr = 0;
    if (nbytes > CUKIT_KEPT_MAX || cukit_api.cuStreamGetId == NULL)
        return 0;
    /* dev's context current first: the per-thread stream's handle means its stream */
    if (cukit_device_activate(dev) < 0)
        return -1;
    /* captured work runs whenever its graph does, outside the stream's order */
    if (cukit_stream_capturing(stream))
        return 0;
    cukit_devmem *dm = cukit_devmem_get(dev);
    if (dm == NULL)
        return -1;
    if (cukit_api.cuStreamGetId(stream, &id) != CUDA_SUCCESS)
        return 0;
    int i = dm->nkept;
    while (i-- > 0 && dm->kept[i].id != id)
        ;
    if (i < 0) {
        if (dm->nkept == CUKIT_KEPT_SLOTS || dm->kept_full)
            return 0;
        i = dm->nkept++;
        memset(&dm->kept[i], 0, sizeof dm->kept[i]);
        dm->kept[i].id = id;
    }
    CUdeviceptr *kp = &dm->kept[i].ptr[kind];
    size_t *ksize = &dm->kept[i].size[kind];
    unsigned *kepoch = &dm->kept[i].epoch[kind];
    if (*ksize < nbytes) {
        /* A plain allocation (outside the pool and its cache); a device too full for a
         * stream's first one keeps none from then on, rather than pay a failed
         * allocation per call. A buffer that grows goes once the work queued on the
         * stream so far is done (a synchronize: never while a capture of cukit's is
         * going on, which it would break); the new one is in the slot before the GIL
         * is let go, so no other thread takes or frees the old one. */
        const CUdeviceptr old = *kp;
        if (dm->kept_full || (old && cukit_capture_active(st)))
            return 0;
        size_t size = CUKIT_KEPT_BYTES;
        while (size < nbytes)
            size *= 2;
        CUdeviceptr p = 0;
        int mode = cukit_capture_relax(st, 1);
        CUresult res = cukit_api.cuMemAlloc(&p, size);
        cukit_capture_restore(mode);
        if (res == CUDA_ERROR_OUT_OF_MEMORY) {
            if (!old)
                dm->kept_full = 1;
            return 0; /* a stream that had one keeps it */
        }
        if (res != CUDA_SUCCESS)
            return cukit_check_cu(st, res, "cuMemAlloc");
        if (CU_CALL(st, cuMemsetD8Async, (p, 0, size, stream)) < 0) {
            cukit_api.cuMemFree(p);
            return -1;
        }
        *kp = p;
        *ksize = size;
        *kepoch = 0;
        if (old) {
            CUresult r;
            Py_BEGIN_ALLOW_THREADS
            r = cukit_api.cuStreamSynchronize(stream);
            if (r == CUDA_SUCCESS)
                r = cukit_api.cuMemFree(old);
            Py_END_ALLOW_THREADS
            if (r != CUDA_SUCCESS)
                return cukit_check_cu(st, r, "cuStreamSynchronize");
        }
    }
    if (epoch != NULL) {
        /* epochs live in 30 bits of the words (scan_codegen.c): zeroed again before */
        if (*kepoch >= (1u << 30) - 1) {
            if (CU_CALL(st, cuMemsetD8Async, (*kp, 0, *ksize, stream)) < 0)
                return -1;
            *kepoch = 0;
        }
        *epoch = ++*kepoch;
    }
    *ptr = *kp;
    return 1;
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
    /* The cache's blocks are the pool's in use to the driver, free to cukit. */
    uint64_t cached = dm->cached_bytes;
    used = used > cached ? used - cached : 0;
    size_t kept_bytes = 0;
    for (int i = 0; i < dm->nkept; i++)
        for (int k = 0; k < CUKIT_KEPT_KINDS; k++)
            kept_bytes += dm->kept[i].size[k];
    return Py_BuildValue("{snsnsKsKsKsn}", "free", (Py_ssize_t)free_b, "total", (Py_ssize_t)total,
                         "pool_reserved", (unsigned long long)reserved, "pool_used",
                         (unsigned long long)used, "pool_cached", (unsigned long long)cached,
                         "stream_scratch", (Py_ssize_t)kept_bytes);
}

/* Give back the scratch dev's streams keep (cukit_stream_kept), once the device has
 * finished the work that may use it; the slots and a full device's mark are cleared, so
 * streams keep scratch again from their next use. 0 / -1. */
static int
kept_release(cukit_Device *dev)
{
    cukit_state *st = dev->st;
    cukit_devmem *dm = cukit_devmem_get(dev);
    if (dm == NULL)
        return -1;
    if (dm->nkept == 0 && !dm->kept_full)
        return 0;
    CU_CALL_NOGIL(st, cuCtxSynchronize, ());
    for (int i = 0; i < dm->nkept; i++)
        for (int k = 0; k < CUKIT_KEPT_KINDS; k++)
            if (dm->kept[i].ptr[k])
                cukit_api.cuMemFree(dm->kept[i].ptr[k]);
    dm->nkept = 0;
    dm->kept_full = 0;
    return 0;
error:
    return -1;
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
    if (kept_release(dev) < 0 || cukit_pool_trim(dev, (size_t)keep) < 0)
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
    if (dm == NULL || (!on && cukit_cache_flush(dev, dm) < 0))
        return NULL;
    int was = !dm->cache_off;
    dm->cache_off = !on;
    return PyBool_FromLong(was);
}

static PyObject *
mod_pool_cache_limit(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"nbytes", "device", NULL};
    PyObject *nbytes_o = Py_None, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:pool_cache_limit", kwlist, &nbytes_o,
                                     &device))
        return NULL;
    Py_ssize_t nbytes = -1;
    if (nbytes_o != Py_None) {
        nbytes = PyNumber_AsSsize_t(nbytes_o, PyExc_OverflowError);
        if (nbytes == -1 && PyErr_Occurred())
            return NULL;
        if (nbytes < 0) {
            PyErr_Format(PyExc_ValueError,
                         "pool_cache_limit(): nbytes must be 0 (no cache) or more bytes, got %zd",
                         nbytes);
            return NULL;
        }
    }
    cukit_state *st = PyModule_GetState(m);
    cukit_Device *dev = cukit_device_arg(st, device);
    if (dev == NULL || cukit_device_activate(dev) < 0)
        return NULL;
    cukit_devmem *dm = cukit_devmem_get(dev);
    if (dm == NULL)
        return NULL;
    size_t was = dm->cache_limit;
    if (nbytes >= 0) {
        dm->cache_limit = (size_t)nbytes;
        if (dm->cached_bytes > dm->cache_limit && cukit_cache_flush(dev, dm) < 0)
            return NULL;
    }
    return PyLong_FromSize_t(was);
}

/* For the tests: a stream's kept scratch of one kind, as cukit_stream_kept gives it. */
static PyObject *
mod_stream_kept(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"kind", "nbytes", "stream", "epoch", NULL};
    int kind;
    Py_ssize_t nbytes;
    PyObject *stream = Py_None;
    long long set = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "in|OL:_stream_kept", kwlist, &kind, &nbytes,
                                     &stream, &set))
        return NULL;
    if (kind < 0 || kind >= CUKIT_KEPT_KINDS || nbytes < 0 || set < -1 || set >= (1LL << 30))
        return PyErr_Format(PyExc_ValueError, "_stream_kept: kind is 0 to %d, nbytes >= 0, "
                            "epoch from 0 to 2**30 - 1", CUKIT_KEPT_KINDS - 1);
    cukit_state *st = PyModule_GetState(m);
    cukit_Device *dev = cukit_device_arg(st, Py_None);
    CUstream h = NULL;
    if (dev == NULL || cukit_stream_handle(st, stream, dev, &h) < 0)
        return NULL;
    CUdeviceptr p = 0;
    unsigned epoch = 0;
    int rc = cukit_stream_kept(dev, h, kind, (size_t)nbytes, &p, &epoch);
    if (rc < 0)
        return NULL;
    if (rc && set >= 0) {
        /* the epoch handed out next is set + 1 (a test of the wrap) */
        cukit_devmem *dm = cukit_devmem_get(dev);
        unsigned long long id = 0;
        if (dm == NULL)
            return NULL;
        if (cukit_api.cuStreamGetId(h, &id) == CUDA_SUCCESS)
            for (int i = 0; i < dm->nkept; i++)
                if (dm->kept[i].id == id) {
                    /* only forward: a repeated epoch would read old words as new */
                    if ((unsigned)set < dm->kept[i].epoch[kind])
                        return PyErr_Format(PyExc_ValueError, "_stream_kept: epoch= may only "
                                            "move forward (now %u)", dm->kept[i].epoch[kind]);
                    dm->kept[i].epoch[kind] = (unsigned)set;
                }
    }
    return Py_BuildValue("(KI)", (unsigned long long)p, epoch);
}

static PyMethodDef pool_functions[] = {
    {"_stream_kept", (PyCFunction)(void (*)(void))mod_stream_kept, METH_VARARGS | METH_KEYWORDS,
     "_stream_kept(kind, nbytes, stream=None, epoch=-1) -> (ptr, epoch): the scratch the "
     "stream keeps for kind (0: reductions' counters, 1: scans' tile words) grown to nbytes, "
     "and its next epoch (ptr 0: none given); epoch= (0 to 2**30 - 1, never back) sets the "
     "last one handed out. For the tests."},
    {"_keep_freed", (PyCFunction)(void (*)(void))mod_keep_freed, METH_VARARGS | METH_KEYWORDS,
     "_keep_freed(on, device=None) -> bool: whether freed blocks are cached for reuse "
     "(pool.c's rule); off gives the cached ones back. Returns the previous setting. For "
     "benchmarks and tests."},
    {"pool_cache_limit", (PyCFunction)(void (*)(void))mod_pool_cache_limit,
     METH_VARARGS | METH_KEYWORDS,
     "pool_cache_limit(nbytes=None, device=None) -> int: the most bytes of freed blocks "
     "the device's cache keeps for reuse without a driver call; sets it when nbytes is "
     "given (0: no cache; blocks over a lower limit go back to the pool). Returns the "
     "previous limit."},
    {"memory_info", (PyCFunction)(void (*)(void))mod_memory_info, METH_VARARGS | METH_KEYWORDS,
     "memory_info(device=None) -> dict: the device's free and total bytes, and the bytes "
     "cukit's pool holds (pool_reserved), hands out to live memory (pool_used) and keeps "
     "cached from freed arrays for reuse (pool_cached), and the scratch that streams keep "
     "for reductions and scans, outside the pool (stream_scratch: for each of up to 32 "
     "streams, a buffer for reductions and one for scans, each from 64 KiB to 4 MiB)."},
    {"trim_pool", (PyCFunction)(void (*)(void))mod_trim_pool, METH_VARARGS | METH_KEYWORDS,
     "trim_pool(device=None, keep=0): give the cache's blocks to the pool and the pool's "
     "unused memory back to the device, keeping at least `keep` bytes; waits for pending "
     "frees first. The scratch streams keep is given back too, once the device is idle."},
    {NULL},
};

int
cukit_pool_setup(PyObject *module, cukit_state *st)
{
    return PyModule_AddFunctions(module, pool_functions);
}
