/* transfer.c - host <-> device copies: the driver directly for page-locked memory and
 * small copies, a pipeline of pinned staging buffers and host threads for big pageable ones
 *
 * Why a pipeline: the driver copies pageable memory through its own small staging
 * buffers with one host thread, at a fraction of what the link can carry. Here each
 * of a few threads (the caller included) takes chunks in turn: to the device it
 * memcpy's a chunk into one of its pinned staging buffers and queues the DMA from
 * there, so its next memcpy overlaps that DMA; from the device it queues DMAs into
 * its buffers ahead and memcpy's each one out as it lands. Each staging buffer has an
 * event recorded after its DMA, waited on before the buffer is used again. The
 * buffers and threads are made per device at the first big copy, kept for reuse,
 * and freed with the module.
 *
 * Ordering: every DMA is queued on the caller's stream, so the copy is ordered after
 * the work queued there before it, like the driver's own copies. To the device with
 * sync=0 the call returns once the source has been read into staging (the last DMAs
 * may still be queued). From the device into pageable memory the host must do the
 * last step itself, so that copy always waits for its data, sync or not. */
#include "memory/pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_THREADS = 64, MAX_SLOTS = 8 };

/* One copy, shared by the threads working on it. */
typedef struct {
    int to_device;        /* 1: host -> device, 0: device -> host */
    unsigned char *host;  /* borrowed: the caller's memory */
    CUdeviceptr dev;
    size_t nbytes;
    size_t nchunks;
    CUstream stream;      /* borrowed: the caller's stream */
    atomic_size_t next;   /* the next chunk to take */
    atomic_int failed;    /* set by the first thread whose driver call fails */
    CUresult err;         /* that call's result and name, written once by that thread */
    const char *err_call;
} job_t;

typedef struct {
    struct cukit_stage *stage; /* borrowed: the stage owns this */
    int tid;
} worker_arg;

struct cukit_stage {
    CUcontext ctx;           /* borrowed: the device's primary context */
    cukit_xfer_config cfg;   /* the configuration it was built with */
    unsigned char *pinned;   /* owned: threads * slots * chunk bytes (cuMemHostAlloc) */
    CUevent *events;         /* owned (malloc): one per staging buffer */
    int nevents;
    pthread_t *workers;      /* owned (malloc): threads - 1, joined on release */
    worker_arg *args;        /* owned (malloc): one per worker */
    int nworkers;            /* started */
    pthread_mutex_t busy;    /* held by the one copy using the stage; others go direct */
    pthread_mutex_t mu;      /* guards generation, running and stop */
    pthread_cond_t wake;     /* workers wait here for a new job */
    pthread_cond_t done;     /* the caller waits here for the workers to finish */
    unsigned long generation;
    int running;
    int stop;
    job_t job;
};

/* ------------------------------------------------------------------ the pipeline */

static unsigned char *
slot_buf(const struct cukit_stage *s, int slot)
{
    return s->pinned + (size_t)slot * s->cfg.chunk;
}

/* Record a failed call once; 1 if res failed. */
static int
failed(job_t *job, CUresult res, const char *call)
{
    if (res == CUDA_SUCCESS)
        return 0;
    if (!atomic_exchange(&job->failed, 1)) {
        job->err = res;
        job->err_call = call;
    }
    return 1;
}

static void
chunk_range(const struct cukit_stage *s, const job_t *job, size_t i, size_t *off, size_t *len)
{
    *off = i * s->cfg.chunk;
    *len = job->nbytes - *off < s->cfg.chunk ? job->nbytes - *off : s->cfg.chunk;
}

/* Thread tid's share of a copy to the device: chunks in turn through its buffers. */
static void
run_htod(struct cukit_stage *s, job_t *job, int tid)
{
    int base = tid * s->cfg.slots, k = 0;
    while (!atomic_load(&job->failed)) {
        size_t i = atomic_fetch_add(&job->next, 1), off, len;
        if (i >= job->nchunks)
            break;
        chunk_range(s, job, i, &off, &len);
        int slot = base + k;
        k = (k + 1) % s->cfg.slots;
        unsigned char *buf = slot_buf(s, slot);
        if (failed(job, cukit_api.cuEventSynchronize(s->events[slot]), "cuEventSynchronize"))
            break;
        memcpy(buf, job->host + off, len);
        if (failed(job, cukit_api.cuMemcpyHtoDAsync(job->dev + off, buf, len, job->stream),
                   "cuMemcpyHtoDAsync") ||
            failed(job, cukit_api.cuEventRecord(s->events[slot], job->stream), "cuEventRecord"))
            break;
    }
}

/* Thread tid's share of a copy from the device: up to `slots` DMAs queued ahead, each
 * copied out as it lands. */
static void
run_dtoh(struct cukit_stage *s, job_t *job, int tid)
{
    int base = tid * s->cfg.slots, slots = s->cfg.slots, head = 0, count = 0, more = 1;
    size_t chunk_of[MAX_SLOTS];
    while (!atomic_load(&job->failed)) {
        while (more && count < slots) {
            size_t i = atomic_fetch_add(&job->next, 1), off, len;
            if (i >= job->nchunks) {
                more = 0;
                break;
            }
            chunk_range(s, job, i, &off, &len);
            int k = (head + count) % slots, slot = base + k;
            /* The buffer may still feed an earlier copy's DMA to the device. */
            if (failed(job, cukit_api.cuEventSynchronize(s->events[slot]), "cuEventSynchronize") ||
                failed(job, cukit_api.cuMemcpyDtoHAsync(slot_buf(s, slot), job->dev + off, len,
                                                        job->stream), "cuMemcpyDtoHAsync") ||
                failed(job, cukit_api.cuEventRecord(s->events[slot], job->stream), "cuEventRecord"))
                return;
            chunk_of[k] = i;
            count++;
        }
        if (count == 0)
            break;
        int slot = base + head;
        size_t off, len;
        chunk_range(s, job, chunk_of[head], &off, &len);
        if (failed(job, cukit_api.cuEventSynchronize(s->events[slot]), "cuEventSynchronize"))
            return;
        memcpy(job->host + off, slot_buf(s, slot), len);
        head = (head + 1) % slots;
        count--;
    }
}

static void
run_part(struct cukit_stage *s, int tid)
{
    if (s->job.to_device)
        run_htod(s, &s->job, tid);
    else
        run_dtoh(s, &s->job, tid);
}

static void *
worker_main(void *p)
{
    worker_arg *a = p;
    struct cukit_stage *s = a->stage;
    unsigned long seen = 0;
    cukit_api.cuCtxSetCurrent(s->ctx); /* a failure shows in the first driver call */
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stop && s->generation == seen)
            pthread_cond_wait(&s->wake, &s->mu);
        if (s->stop)
            break;
        seen = s->generation;
        pthread_mutex_unlock(&s->mu);
        run_part(s, a->tid);
        pthread_mutex_lock(&s->mu);
        if (--s->running == 0)
            pthread_cond_signal(&s->done);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Run one copy on the stage, whose busy lock the caller holds; the GIL must be
 * released. CUDA_SUCCESS, or the first failed call's result with *call set. */
static CUresult
pipeline(struct cukit_stage *s, int to_device, unsigned char *host, CUdeviceptr dev,
         size_t nbytes, CUstream stream, const char **call)
{
    job_t *job = &s->job;
    job->to_device = to_device;
    job->host = host;
    job->dev = dev;
    job->nbytes = nbytes;
    job->nchunks = (nbytes + s->cfg.chunk - 1) / s->cfg.chunk;
    job->stream = stream;
    atomic_store(&job->next, 0);
    atomic_store(&job->failed, 0);
    job->err = CUDA_SUCCESS;
    job->err_call = NULL;
    /* One chunk: the caller alone, without waking anyone. */
    int helpers = job->nchunks > 1 ? s->nworkers : 0;
    if (helpers > 0) {
        pthread_mutex_lock(&s->mu);
        s->generation++;
        s->running = s->nworkers;
        pthread_cond_broadcast(&s->wake);
        pthread_mutex_unlock(&s->mu);
    }
    run_part(s, 0);
    if (helpers > 0) {
        pthread_mutex_lock(&s->mu);
        while (s->running > 0)
            pthread_cond_wait(&s->done, &s->mu);
        pthread_mutex_unlock(&s->mu);
    }
    if (atomic_load(&job->failed)) {
        *call = job->err_call;
        return job->err;
    }
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ stages */

/* Stop the staging threads of one device and free its buffers; waits for a copy in
 * progress. Never raises. */
static void
stage_release(cukit_stage *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->busy); /* a copy in progress finishes first */
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->nworkers; i++)
        pthread_join(s->workers[i], NULL);
    if (cukit_driver_ready() && cukit_api.cuCtxSetCurrent(s->ctx) == CUDA_SUCCESS) {
        for (int i = 0; i < s->nevents; i++)
            cukit_api.cuEventDestroy(s->events[i]);
        if (s->pinned)
            cukit_api.cuMemFreeHost(s->pinned);
    }
    pthread_mutex_unlock(&s->busy);
    pthread_mutex_destroy(&s->busy);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->wake);
    pthread_cond_destroy(&s->done);
    free(s->events);
    free(s->workers);
    free(s->args);
    free(s);
}

void
cukit_transfer_teardown(cukit_state *st)
{
    for (int i = 0; st->memory->devmem && i < st->memory->ndevmem; i++) {
        cukit_devmem *dm = &st->memory->devmem[i];
        if (dm->stage)
            stage_release(dm->stage);
        dm->stage = NULL;
    }
}

/* A stage for the current context (ctx) built to cfg. Needs no GIL. NULL with
 * *res set on a driver failure (CUDA_ERROR_OUT_OF_MEMORY for a C allocation). */
static cukit_stage *
stage_create(CUcontext ctx, cukit_xfer_config cfg, CUresult *res, const char **call)
{
    cukit_stage *s = calloc(1, sizeof *s);
    int n = cfg.threads * cfg.slots;
    *res = CUDA_ERROR_OUT_OF_MEMORY;
    *call = "malloc";
    if (s == NULL)
        return NULL;
    s->ctx = ctx;
    s->cfg = cfg;
    pthread_mutex_init(&s->busy, NULL);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->done, NULL);
    s->events = calloc((size_t)n, sizeof *s->events);
    s->workers = calloc((size_t)cfg.threads, sizeof *s->workers);
    s->args = calloc((size_t)cfg.threads, sizeof *s->args);
    if (s->events == NULL || s->workers == NULL || s->args == NULL)
        goto error;
    void *pinned = NULL;
    *call = "cuMemHostAlloc";
    if ((*res = cukit_api.cuMemHostAlloc(&pinned, (size_t)n * cfg.chunk, 0)) != CUDA_SUCCESS)
        goto error;
    s->pinned = pinned;
    *call = "cuEventCreate";
    for (; s->nevents < n; s->nevents++)
        if ((*res = cukit_api.cuEventCreate(&s->events[s->nevents], CU_EVENT_DISABLE_TIMING)) !=
            CUDA_SUCCESS)
            goto error;
    *call = "pthread_create";
    for (int t = 1; t < cfg.threads; t++) {
        s->args[s->nworkers] = (worker_arg){s, t};
        if (pthread_create(&s->workers[s->nworkers], NULL, worker_main, &s->args[s->nworkers]) != 0) {
            *res = CUDA_ERROR_OUT_OF_MEMORY;
            goto error;
        }
        s->nworkers++;
    }
    *res = CUDA_SUCCESS;
    return s;
error:
    stage_release(s);
    return NULL;
}

static int
same_config(const cukit_xfer_config *a, const cukit_xfer_config *b)
{
    return a->chunk == b->chunk && a->slots == b->slots && a->threads == b->threads;
}

/* The stage of the device the caller made current for the copy, with its busy lock
 * taken, or NULL (no exception) when the copy should go straight to the driver:
 * staging failed before, or another thread's copy is using it. NULL with an exception
 * on an error. */
static cukit_stage *
stage_acquire(cukit_state *st)
{
    cukit_Device *dev = cukit_device_active(st);
    cukit_devmem *dm = dev ? cukit_devmem_get(dev) : NULL;
    if (dm == NULL)
        return NULL;
    if (dm->stage && !same_config(&dm->stage->cfg, &st->memory->xfer)) {
        cukit_stage *old = dm->stage;
        dm->stage = NULL;
        Py_BEGIN_ALLOW_THREADS
        stage_release(old);
        Py_END_ALLOW_THREADS
        dm->stage_failed = 0;
    }
    if (dm->stage == NULL && !dm->stage_failed) {
        CUresult res;
        const char *call;
        cukit_stage *made;
        CUcontext ctx = dev->ctx;
        cukit_xfer_config cfg = st->memory->xfer;
        Py_BEGIN_ALLOW_THREADS
        made = stage_create(ctx, cfg, &res, &call);
        Py_END_ALLOW_THREADS
        if (made == NULL && cukit_cu_is_sticky(res)) {
            cukit_check_cu(st, res, call); /* the context is gone: say so, do not fall back */
            return NULL;
        }
        if (made == NULL)
            dm->stage_failed = 1; /* no pinned memory to spare: the driver copies alone */
        else if (dm->stage != NULL) /* another thread made one meanwhile */
            stage_release(made);
        else
            dm->stage = made;
    }
    if (dm->stage == NULL || pthread_mutex_trylock(&dm->stage->busy) != 0)
        return NULL;
    return dm->stage;
}

/* 1 when all of [p, p + n) is memory the driver can DMA directly (pinned, registered,
 * managed), 0 for pageable memory. */
static int
page_locked(const void *p, size_t n)
{
    unsigned int type = 0;
    uintptr_t a = (uintptr_t)p;
    return cukit_api.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a) ==
               CUDA_SUCCESS &&
           cukit_api.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a + n - 1) ==
               CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ the two copies */

/* One driver call: a blocking copy, or an async one and, if sync, a wait. */
static CUresult
driver_copy(int to_device, void *host, CUdeviceptr dev, size_t n, CUstream stream, int sync,
            const char **call)
{
    CUresult res;
    if (sync && stream == NULL) {
        *call = to_device ? "cuMemcpyHtoD" : "cuMemcpyDtoH";
        return to_device ? cukit_api.cuMemcpyHtoD(dev, host, n) : cukit_api.cuMemcpyDtoH(host, dev, n);
    }
    *call = to_device ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync";
    res = to_device ? cukit_api.cuMemcpyHtoDAsync(dev, host, n, stream)
                    : cukit_api.cuMemcpyDtoHAsync(host, dev, n, stream);
    if (res == CUDA_SUCCESS && sync) {
        *call = "cuStreamSynchronize";
        res = cukit_api.cuStreamSynchronize(stream);
    }
    return res;
}

/* The driver's own copy. The GIL is released when another Python thread could run
 * meanwhile; alone, releasing and retaking it only adds to a small copy's time. */
static int
direct(cukit_state *st, int to_device, void *host, CUdeviceptr dev, size_t n, CUstream stream,
       int sync)
{
    CUresult res;
    const char *call;
    if (cukit_other_threads()) {
        Py_BEGIN_ALLOW_THREADS
        res = driver_copy(to_device, host, dev, n, stream, sync, &call);
        Py_END_ALLOW_THREADS
    }
    else {
        res = driver_copy(to_device, host, dev, n, stream, sync, &call);
    }
    return cukit_check_cu(st, res, call);
}

static int
copy(cukit_state *st, int to_device, void *host, CUdeviceptr dev, size_t n, CUstream stream,
     int sync)
{
    if (n == 0)
        return 0;
    if (n < st->memory->xfer.threshold || page_locked(host, n) || cukit_stream_capturing(stream))
        return direct(st, to_device, host, dev, n, stream, sync);
    cukit_stage *s = stage_acquire(st);
    if (s == NULL)
        return PyErr_Occurred() ? -1 : direct(st, to_device, host, dev, n, stream, sync);
    CUresult res;
    const char *call = NULL;
    Py_BEGIN_ALLOW_THREADS
    res = pipeline(s, to_device, host, dev, n, stream, &call);
    pthread_mutex_unlock(&s->busy); /* the last use of s: it may be released after this */
    if (res == CUDA_SUCCESS && sync && to_device) {
        call = "cuStreamSynchronize";
        res = cukit_api.cuStreamSynchronize(stream);
    }
    Py_END_ALLOW_THREADS
    return cukit_check_cu(st, res, call);
}

int
cukit_copy_htod(cukit_state *st, CUdeviceptr dst, const void *src, size_t nbytes,
                CUstream stream, int sync)
{
    return copy(st, 1, (void *)src, dst, nbytes, stream, sync);
}

int
cukit_copy_dtoh(cukit_state *st, void *dst, CUdeviceptr src, size_t nbytes, CUstream stream,
                int sync)
{
    if (copy(st, 0, dst, src, nbytes, stream, sync) < 0)
        return -1;
    return sync ? cukit_report_raise(st) : 0;
}

static PyObject *
mod_transfer_config(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"threshold", "chunk", "slots", "threads", NULL};
    cukit_state *st = PyModule_GetState(m);
    Py_ssize_t threshold = -1, chunk = -1;
    int slots = -1, threads = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|nnii:_transfer_config", kwlist, &threshold,
                                     &chunk, &slots, &threads))
        return NULL;
    if ((chunk != -1 && chunk < 4096) || (slots != -1 && (slots < 1 || slots > MAX_SLOTS)) ||
        (threads != -1 && (threads < 1 || threads > MAX_THREADS)) || threshold < -1) {
        PyErr_Format(PyExc_ValueError, "_transfer_config: chunk must be at least 4096 bytes, "
                     "slots 1 to %d, threads 1 to %d, threshold 0 or more", MAX_SLOTS, MAX_THREADS);
        return NULL;
    }
    if (threshold >= 0)
        st->memory->xfer.threshold = (size_t)threshold;
    if (chunk > 0)
        st->memory->xfer.chunk = (size_t)chunk;
    if (slots > 0)
        st->memory->xfer.slots = slots;
    if (threads > 0)
        st->memory->xfer.threads = threads;
    return Py_BuildValue("{snsnsisi}", "threshold", (Py_ssize_t)st->memory->xfer.threshold, "chunk",
                         (Py_ssize_t)st->memory->xfer.chunk, "slots", st->memory->xfer.slots, "threads",
                         st->memory->xfer.threads);
}

static PyObject *
mod_pointer_kind(PyObject *m, PyObject *obj)
{
    cukit_state *st = PyModule_GetState(m);
    Py_buffer view;
    if (cukit_device_current(st) == NULL || PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int locked = view.len > 0 && page_locked(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyUnicode_FromString(locked ? "page-locked" : "pageable");
}

static PyMethodDef transfer_functions[] = {
    {"_transfer_config", (PyCFunction)(void (*)(void))mod_transfer_config,
     METH_VARARGS | METH_KEYWORDS,
     "Internal: _transfer_config(threshold=, chunk=, slots=, threads=) -> dict: tune the "
     "pageable copy pipeline (the staging is rebuilt at the next big copy)."},
    {"_pointer_kind", (PyCFunction)mod_pointer_kind, METH_O,
     "Internal: 'page-locked' or 'pageable', as the transfer path sees a host buffer."},
    {NULL},
};

int
cukit_transfer_setup(PyObject *module, cukit_state *st)
{
    /* Tuned on an H200 host with 16 cores (benchmarks/bench_copy.py --tune, 256 MiB):
     * 2 MiB chunks, two per thread, and 8 threads reach 44-48 GB/s both ways, near
     * the pinned limit (~55); 12 threads were within noise of 8, 4 threads give
     * ~30, 2 give ~18; bigger chunks were slower. Half the cores, at most 8. Below
     * 8 MiB the driver's own copy is as fast (at 4 MiB they tie, at 8 MiB the
     * pipeline is 1.4x faster each way). */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    st->memory->xfer.threshold = 8 << 20;
    st->memory->xfer.chunk = 2 << 20;
    st->memory->xfer.slots = 2;
    st->memory->xfer.threads = cpus >= 16 ? 8 : cpus >= 2 ? (int)(cpus / 2) : 1;
    return PyModule_AddFunctions(module, transfer_functions);
}
