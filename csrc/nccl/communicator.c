/* communicator.c - cukit.nccl.Communicator: init (one rank, all local GPUs, split), destroy/abort, waits that time out */
#include "nccl/nccl.h"

#include <limits.h>
#include <math.h>
#include <string.h>
#include <time.h>

/* NotSupportedError under cukit's CPU emulator: NCCL drives real GPUs only (its own
 * CUDA calls would fail deep inside with "driver version is insufficient"). 0 / -1. */
static int
needs_gpus(cukit_state *st, const char *who)
{
    const char *backend = cukit_backend_name();
    if (backend == NULL || strcmp(backend, "emulator") != 0)
        return 0;
    PyErr_Format(st->exc[CUKIT_EXC_NOT_SUPPORTED],
                 "%s: NCCL runs on NVIDIA GPUs only, and this process runs kernels on cukit's "
                 "CPU emulator (no GPU here, or CUKIT_BACKEND=emulator); run it on a machine "
                 "with GPUs", who);
    return -1;
}

/* An int argument `what`; 0 / -1 with TypeError or OverflowError. */
static int
as_int(PyObject *obj, int *out)
{
    long v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < INT_MIN || v > INT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "the value does not fit a C int");
        return -1;
    }
    *out = (int)v;
    return 0;
}

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A new Communicator object around `comm` (taken), or NULL with an exception (the
 * communicator is then destroyed). */
static cukit_Communicator *
wrap(cukit_state *st, cukit_Device *dev, ncclComm_t comm, double timeout)
{
    cukit_Communicator *c = PyObject_New(cukit_Communicator, st->nccl->CommunicatorType);
    if (c == NULL) {
        cukit_nccl_api.ncclCommDestroy(comm);
        return NULL;
    }
    c->st = st;
    c->device = (cukit_Device *)Py_NewRef(dev);
    c->comm = comm;
    c->timeout = timeout;
    c->aborted = 0;
    c->captured = 0;
    c->released = NULL;
    c->rank = -1;
    c->nranks = 0;
    c->local_ranks = 1;
    c->windows = NULL;
    c->oneshot = NULL;
    return c;
}

/* Ask NCCL for the rank and size once the communicator is ready: inside a group
 * (split, init from several threads' group) it is only ready at ncclGroupEnd. */
static int
info(cukit_Communicator *c)
{
    if (c->nranks > 0 || c->comm == NULL)
        return 0;
    int rank = -1, n = 0;
    if (NCCL_CALL(c->st, ncclCommUserRank, (c->comm, &rank), c->comm) < 0 ||
        NCCL_CALL(c->st, ncclCommCount, (c->comm, &n), c->comm) < 0)
        return -1;
    c->rank = rank;
    c->nranks = n;
    return 0;
}

/* ------------------------------------------------------------------ groups */

/* NCCL's groups are per thread, and so is this count of the open ones. */
static _Thread_local int group_depth;
/* strong refs, NULL when empty: the communicators this thread made inside its open group,
 * set up for one-shot all-reduces together when the group ends (they are ready then, and
 * a rank that made its communicator outside a group sets up at once: the same exchange) */
static _Thread_local PyObject *made_in_group;

int
cukit_nccl_group_depth(void)
{
    return group_depth;
}

/* Set up the n communicators made together (NULL entries skipped) for one-shot
 * all-reduces now, or when the open group ends. Never raises. */
static void
with_oneshot(cukit_Communicator **cs, int n)
{
    PyObject *saved = PyErr_GetRaisedException();
    cukit_Communicator **now = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *now);
    int ready = 0;
    for (int i = 0; now && i < n; i++) {
        if (cs[i] == NULL)
            continue;
        if (group_depth > 0) {
            if ((made_in_group == NULL && (made_in_group = PyList_New(0)) == NULL) ||
                PyList_Append(made_in_group, (PyObject *)cs[i]) < 0)
                PyErr_Clear(); /* only the one-shot kernel is lost */
            continue;
        }
        if (info(cs[i]) < 0)
            PyErr_Clear(); /* rank -1: setup says no (NCCL gave no rank: its error shows
                              at the first call) */
        now[ready++] = cs[i];
    }
    if (ready > 0)
        cukit_oneshot_setup(now, ready);
    PyMem_Free(now);
    PyErr_Clear(); /* PyMem_Calloc's MemoryError: NCCL's kernels serve */
    PyErr_SetRaisedException(saved);
}

static PyObject *
mod_group_start(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = PyModule_GetState(m);
    if (cukit_nccl_load(st) < 0 || NCCL_CALL(st, ncclGroupStart, (), NULL) < 0)
        return NULL;
    group_depth++;
    Py_RETURN_NONE;
}

static PyObject *
mod_group_end(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = PyModule_GetState(m);
    ncclResult_t res;
    if (cukit_nccl_load(st) < 0)
        return NULL;
    /* Ending a group launches its work and may wait for peers to connect. */
    Py_BEGIN_ALLOW_THREADS res = cukit_nccl_api.ncclGroupEnd();
    Py_END_ALLOW_THREADS
    if (group_depth > 0)
        group_depth--; /* NCCL closes the group even when its work failed */
    PyObject *made = group_depth == 0 ? made_in_group : NULL;
    if (made)
        made_in_group = NULL;
    if (made && res == ncclSuccess) {
        Py_ssize_t n = PyList_GET_SIZE(made);
        cukit_Communicator **cs = PyMem_Calloc((size_t)n, sizeof *cs);
        for (Py_ssize_t i = 0; cs && i < n; i++) {
            cukit_Communicator *c = (cukit_Communicator *)PyList_GET_ITEM(made, i);
            cs[i] = c->comm ? c : NULL; /* one destroyed or aborted in the group: none */
        }
        if (cs && n <= INT_MAX)
            with_oneshot(cs, (int)n);
        PyMem_Free(cs);
    }
    Py_XDECREF(made);
    if (cukit_nccl_check(st, res, "ncclGroupEnd", NULL) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef group_functions[] = {
    {"nccl_group_start", mod_group_start, METH_NOARGS, "ncclGroupStart()."},
    {"nccl_group_end", mod_group_end, METH_NOARGS,
     "ncclGroupEnd(): launch the operations queued since nccl_group_start()."},
    {NULL},
};

/* timeout= as seconds (< 0: none). 0 / -1 with ValueError or TypeError. */
static int
parse_timeout(PyObject *obj, double *out)
{
    *out = -1.0;
    if (obj == NULL || obj == Py_None)
        return 0;
    PyObject *secs = PyObject_HasAttrString(obj, "total_seconds")
                         ? PyObject_CallMethod(obj, "total_seconds", NULL) : Py_NewRef(obj);
    double t = secs ? PyFloat_AsDouble(secs) : -1.0;
    Py_XDECREF(secs);
    if (t == -1.0 && PyErr_Occurred())
        return -1;
    if (!(t > 0) || isinf(t)) {
        PyErr_Format(PyExc_ValueError, "timeout must be a positive number of seconds (or a "
                                       "timedelta, or None to wait for ever), got %R", obj);
        return -1;
    }
    *out = t;
    return 0;
}

static PyObject *
communicator_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"nranks", "unique_id", "rank", "device", "timeout", NULL};
    int nranks, rank;
    Py_buffer id;
    PyObject *device = Py_None, *timeout_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iy*i|OO:Communicator", kwlist, &nranks, &id,
                                     &rank, &device, &timeout_o))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    ncclUniqueId uid;
    double timeout;
    PyObject *out = NULL;
    if (id.len != (Py_ssize_t)sizeof uid.internal) {
        PyErr_Format(PyExc_ValueError,
                     "Communicator: unique_id must be the %d bytes of cukit.nccl.get_unique_id() "
                     "made by one rank and shared with the others, got %zd bytes",
                     (int)sizeof uid.internal, id.len);
        goto done;
    }
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        PyErr_Format(PyExc_ValueError,
                     "Communicator: rank must be in 0..nranks-1 with nranks >= 1, got rank %d "
                     "of nranks %d", rank, nranks);
        goto done;
    }
    memcpy(uid.internal, id.buf, sizeof uid.internal);
    if (parse_timeout(timeout_o, &timeout) < 0 || cukit_nccl_load(st) < 0)
        goto done;
    cukit_Device *dev = cukit_device_arg(st, device);
    if (dev == NULL || needs_gpus(st, "Communicator") < 0 || cukit_device_activate(dev) < 0)
        goto done;
    ncclComm_t comm = NULL;
    ncclResult_t res;
    /* Blocks until every rank has joined. */
    Py_BEGIN_ALLOW_THREADS res = cukit_nccl_api.ncclCommInitRank(&comm, nranks, uid, rank);
    Py_END_ALLOW_THREADS if (cukit_nccl_check(st, res, "ncclCommInitRank", NULL) < 0) goto done;
    out = (PyObject *)wrap(st, dev, comm, timeout);
    if (out)
        with_oneshot((cukit_Communicator **)&out, 1);
done:
    PyBuffer_Release(&id);
    return out;
}

/* Communicator.init_all(devices, timeout=None) -> list: one communicator per GPU. */
static PyObject *
communicator_init_all(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"devices", "timeout", NULL};
    PyObject *devices_o, *timeout_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:init_all", kwlist, &devices_o, &timeout_o))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    double timeout;
    PyObject *seq = PySequence_Fast(devices_o, "init_all: devices must be a sequence of "
                                               "cukit.Device or ordinals");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int *ordinals = PyMem_Calloc(n ? (size_t)n : 1, sizeof(int));
    ncclComm_t *comms = PyMem_Calloc(n ? (size_t)n : 1, sizeof(ncclComm_t));
    PyObject *out = NULL;
    if (ordinals == NULL || comms == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (n < 1 || n > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "init_all: give at least one device");
        goto done;
    }
    if (parse_timeout(timeout_o, &timeout) < 0 || cukit_nccl_load(st) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        cukit_Device *d = cukit_device_arg(st, PySequence_Fast_GET_ITEM(seq, i));
        if (d == NULL)
            goto done;
        ordinals[i] = d->ordinal;
        for (Py_ssize_t j = 0; j < i; j++) {
            if (ordinals[j] == d->ordinal) {
                PyErr_Format(PyExc_ValueError, "init_all: device %d is listed twice; NCCL "
                                               "takes each GPU once", d->ordinal);
                goto done;
            }
        }
    }
    if (needs_gpus(st, "init_all") < 0)
        goto done;
    ncclResult_t res;
    Py_BEGIN_ALLOW_THREADS res = cukit_nccl_api.ncclCommInitAll(comms, (int)n, ordinals);
    Py_END_ALLOW_THREADS if (cukit_nccl_check(st, res, "ncclCommInitAll", NULL) < 0) goto done;
    out = PyList_New(n);
    for (Py_ssize_t i = 0; i < n; i++) {
        cukit_Device *d = cukit_device_get(st, ordinals[i]);
        PyObject *c = out && d ? (PyObject *)wrap(st, d, comms[i], timeout) : NULL;
        comms[i] = NULL; /* taken by wrap, or destroyed by it */
        if (c == NULL) {
            for (Py_ssize_t j = i + 1; j < n; j++)
                cukit_nccl_api.ncclCommDestroy(comms[j]);
            Py_CLEAR(out);
            break;
        }
        ((cukit_Communicator *)c)->local_ranks = (int)n;
        PyList_SET_ITEM(out, i, c);
    }
    if (out)
        with_oneshot((cukit_Communicator **)PySequence_Fast_ITEMS(out), (int)n);
done:
    PyMem_Free(ordinals);
    PyMem_Free(comms);
    Py_DECREF(seq);
    return out;
}

int
cukit_communicator_check(cukit_Communicator *c)
{
    /* A safe point: windows dropped during a capture are released here, outside one. */
    if (c->st->nccl->pending)
        cukit_window_release_pending(c->st);
    if (c->comm == NULL) {
        PyErr_Format(PyExc_ValueError, "the communicator was %s; make a new one",
                     c->aborted ? "aborted" : "destroyed");
        return -1;
    }
    ncclResult_t async = ncclSuccess;
    if (NCCL_CALL(c->st, ncclCommGetAsyncError, (c->comm, &async), c->comm) < 0)
        return -1;
    if (async == ncclSuccess)
        return info(c);
    if (async == ncclInProgress)
        return 0;
    return cukit_nccl_check(c->st, async, "ncclCommGetAsyncError (an asynchronous error)",
                            c->comm);
}

/* Abort now: ncclCommAbort stops NCCL's kernels and threads even when peers are gone. */
static void
abort_comm(cukit_Communicator *c)
{
    ncclComm_t comm = c->comm;
    c->comm = NULL;
    c->aborted = 1;
    cukit_oneshot_stop(c); /* a one-shot kernel waiting for a peer returns */
    if (comm == NULL)
        return;
    Py_BEGIN_ALLOW_THREADS cukit_nccl_api.ncclCommAbort(comm);
    Py_END_ALLOW_THREADS
}

static PyObject *
communicator_abort(cukit_Communicator *self, PyObject *Py_UNUSED(ignored))
{
    if (self->comm && cukit_device_activate(self->device) < 0)
        return NULL;
    abort_comm(self);
    Py_RETURN_NONE;
}

static PyObject *
communicator_destroy(cukit_Communicator *self, PyObject *Py_UNUSED(ignored))
{
    ncclComm_t comm = self->comm;
    if (comm == NULL)
        Py_RETURN_NONE;
    cukit_window_release_pending(self->st); /* while NCCL can still deregister them */
    if (cukit_device_activate(self->device) < 0)
        return NULL;
    if (self->captured) {
        /* NCCL's destroy would wait for every graph holding this communicator's work:
         * done at dealloc, after the cukit graphs (which keep the communicator); its
         * windows, which graphs may hold too, deregister as they go. */
        self->comm = NULL;
        self->released = comm;
        Py_RETURN_NONE;
    }
    cukit_oneshot_release(self); /* not captured: no graph replays its kernels */
    /* Symmetric arrays outlive it as plain memory: their windows go with it, now. */
    int windows_ok = cukit_window_release_all(self);
    PyObject *windows_error = windows_ok < 0 ? PyErr_GetRaisedException() : NULL;
    self->comm = NULL;
    ncclResult_t res;
    Py_BEGIN_ALLOW_THREADS res = cukit_nccl_api.ncclCommDestroy(comm);
    Py_END_ALLOW_THREADS
    if (cukit_nccl_check(self->st, res, "ncclCommDestroy", NULL) < 0) {
        Py_XDECREF(windows_error);
        return NULL;
    }
    if (windows_error) {
        PyErr_SetRaisedException(windows_error);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* synchronize(stream=None): wait for the stream, polling NCCL's asynchronous error,
 * and abort after `timeout` seconds. */
static PyObject *
communicator_synchronize(cukit_Communicator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", NULL};
    PyObject *stream_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:synchronize", kwlist, &stream_o))
        return NULL;
    cukit_state *st = self->st;
    CUstream h;
    if (cukit_communicator_check(self) < 0 || cukit_device_activate(self->device) < 0)
        return NULL;
    if (PyLong_Check(stream_o))
        h = (CUstream)PyLong_AsVoidPtr(stream_o);
    else if (cukit_stream_handle(st, stream_o, self->device, &h) < 0)
        return NULL;
    double start = now(), next_signal_check = start + 0.05;
    ncclComm_t comm = self->comm;
    for (unsigned long spins = 0;; spins++) {
        CUresult cu;
        ncclResult_t async = ncclSuccess, r;
        int timed_out = 0;
        Py_BEGIN_ALLOW_THREADS
        for (;;) {
            cu = cukit_api.cuStreamQuery(h);
            if (cu != CUDA_ERROR_NOT_READY)
                break;
            r = cukit_nccl_api.ncclCommGetAsyncError(comm, &async);
            if (r != ncclSuccess)
                async = r;
            if (async != ncclSuccess && async != ncclInProgress)
                break;
            double t = now();
            if (self->timeout >= 0 && t - start > self->timeout) {
                timed_out = 1;
                break;
            }
            if (t > next_signal_check)
                break;
            /* Spin for short collectives; after a millisecond, sleep between polls. */
            if (t - start > 1e-3) {
                struct timespec ts = {0, 50000};
                nanosleep(&ts, NULL);
            }
        }
        Py_END_ALLOW_THREADS
        if (cu == CUDA_SUCCESS)
            Py_RETURN_NONE;
        if (cu != CUDA_ERROR_NOT_READY) {
            cukit_check_cu(st, cu, "cuStreamQuery");
            return NULL;
        }
        if (async != ncclSuccess && async != ncclInProgress) {
            cukit_nccl_check(st, async, "ncclCommGetAsyncError (while waiting)", comm);
            abort_comm(self);
            return NULL;
        }
        if (timed_out) {
            abort_comm(self);
            char text[320];
            PyOS_snprintf(text, sizeof text,
                          "the communicator's work did not finish within its timeout of %g s "
                          "(rank %d of %d, device %d): a peer may have died or stopped calling; "
                          "the communicator was aborted",
                          self->timeout, self->rank, self->nranks, self->device->ordinal);
            PyObject *msg = PyUnicode_FromString(text);
            if (msg)
                cukit_raise(st, CUKIT_EXC_NCCL_TIMEOUT, -1, NULL, "synchronize", msg);
            Py_XDECREF(msg);
            return NULL;
        }
        if (PyErr_CheckSignals() < 0)
            return NULL;
        next_signal_check = now() + 0.05;
    }
}

/* split(color, key=None) -> Communicator, or None for color None (this rank joins none). */
static PyObject *
communicator_split(cukit_Communicator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"color", "key", NULL};
    PyObject *color_o, *key_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:split", kwlist, &color_o, &key_o))
        return NULL;
    cukit_state *st = self->st;
    if (cukit_communicator_check(self) < 0)
        return NULL;
    int color = CUKIT_NCCL_SPLIT_NOCOLOR, key = self->rank;
    if (color_o != Py_None) {
        if (as_int(color_o, &color) < 0)
            return NULL;
        if (color < 0) {
            PyErr_Format(PyExc_ValueError, "split: color must be >= 0 (or None to join no "
                                           "group), got %d", color);
            return NULL;
        }
    }
    if (key_o != Py_None && as_int(key_o, &key) < 0)
        return NULL;
    if (cukit_communicator_check(self) < 0 || cukit_device_activate(self->device) < 0)
        return NULL;
    if (cukit_nccl_api.ncclCommSplit == NULL) {
        cukit_missing_entry(st, "ncclCommSplit (NCCL 2.18 or newer)");
        return NULL;
    }
    ncclComm_t parent = self->comm, child = NULL;
    ncclResult_t res;
    Py_BEGIN_ALLOW_THREADS res = cukit_nccl_api.ncclCommSplit(parent, color, key, &child, NULL);
    Py_END_ALLOW_THREADS if (cukit_nccl_check(st, res, "ncclCommSplit", parent) < 0) return NULL;
    if (child == NULL)
        Py_RETURN_NONE;
    cukit_Communicator *c = wrap(st, self->device, child, self->timeout);
    if (c)
        with_oneshot(&c, 1);
    return (PyObject *)c;
}

static PyObject *
communicator_enter(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return Py_NewRef(self);
}

static PyObject *
communicator_exit(cukit_Communicator *self, PyObject *args)
{
    PyObject *exc_type = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : Py_None;
    /* Leaving on an error: peers may not reach the matching destroy, so abort. */
    if (exc_type != Py_None) {
        abort_comm(self);
        Py_RETURN_FALSE;
    }
    PyObject *r = communicator_destroy(self, NULL);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

#if PY_VERSION_HEX >= 0x030D0000
#define interpreter_finalizing() Py_IsFinalizing()
#else
#define interpreter_finalizing() _Py_IsFinalizing()
#endif

static void
communicator_dealloc(cukit_Communicator *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    /* At exit, a communicator whose work a CUDA graph holds (another library's graph,
     * destroyed later or never) is left to the process's end: NCCL's destroy would wait
     * for that graph for ever. */
    ncclComm_t comm = self->comm ? self->comm : self->released;
    if (comm && !(self->captured && interpreter_finalizing())) {
        /* A communicator with an asynchronous error may wait for ever in destroy. */
        ncclResult_t async = ncclSuccess;
        cukit_api.cuCtxSetCurrent(self->device->ctx);
        cukit_nccl_api.ncclCommGetAsyncError(comm, &async);
        if (async != ncclSuccess && async != ncclInProgress)
            cukit_nccl_api.ncclCommAbort(comm);
        else
            cukit_nccl_api.ncclCommDestroy(comm);
    }
    if (!(self->captured && interpreter_finalizing()))
        cukit_oneshot_release(self); /* after the graphs that replay its kernels */
    Py_XDECREF(self->device);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *
communicator_repr(cukit_Communicator *self)
{
    if (info(self) < 0)
        PyErr_Clear(); /* a repr shows what is known */
    return PyUnicode_FromFormat("<cukit.nccl.Communicator rank %d of %d on device %d%s>",
                                self->rank, self->nranks, self->device->ordinal,
                                self->comm ? "" : self->aborted ? " (aborted)" : " (destroyed)");
}

static PyObject *
get_rank(cukit_Communicator *self, void *c)
{
    return info(self) < 0 ? NULL : PyLong_FromLong(self->rank);
}
static PyObject *
get_size(cukit_Communicator *self, void *c)
{
    return info(self) < 0 ? NULL : PyLong_FromLong(self->nranks);
}
static PyObject *
get_device(cukit_Communicator *self, void *c)
{
    return Py_NewRef(self->device);
}
static PyObject *
get_timeout(cukit_Communicator *self, void *c)
{
    return self->timeout < 0 ? Py_NewRef(Py_None) : PyFloat_FromDouble(self->timeout);
}
static PyObject *
get_one_shot(cukit_Communicator *self, void *c)
{
    return PyBool_FromLong(self->oneshot != NULL);
}

static PyObject *
get_handle(cukit_Communicator *self, void *c)
{
    return PyLong_FromVoidPtr(self->comm);
}

static PyGetSetDef communicator_getset[] = {
    {"rank", (getter)get_rank, NULL, "This rank, 0 to size - 1."},
    {"size", (getter)get_size, NULL, "The number of ranks."},
    {"device", (getter)get_device, NULL, "The cukit.Device this rank drives."},
    {"timeout", (getter)get_timeout, NULL, "Seconds a wait may take before aborting, or None."},
    {"handle", (getter)get_handle, NULL, "The ncclComm_t as an int; 0 once destroyed."},
    {"one_shot", (getter)get_one_shot, NULL,
     "Whether all_reduce calls of at most 64 KiB outside nccl.group() run as one kernel of "
     "cukit's own, each rank writing into its peers' memory (opt-in: CUKIT_NCCL_ONESHOT=1 "
     "on every rank; see the many-GPU guide); the same on every rank."},
    {NULL},
};

static PyMethodDef own_methods[] = {
    {"init_all", (PyCFunction)(void (*)(void))communicator_init_all,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "init_all(devices, timeout=None) -> list of Communicator: one process driving several "
     "GPUs (ncclCommInitAll); rank i drives devices[i]. Drive them together inside "
     "cukit.nccl.group()."},
    {"split", (PyCFunction)(void (*)(void))communicator_split, METH_VARARGS | METH_KEYWORDS,
     "split(color, key=None) -> Communicator or None: ranks with one color form a new "
     "communicator, ordered by key (default: this rank). Every rank must call it."},
    {"synchronize", (PyCFunction)(void (*)(void))communicator_synchronize,
     METH_VARARGS | METH_KEYWORDS,
     "synchronize(stream=None): wait for the stream's work, raising NcclError on an "
     "asynchronous NCCL error and NcclTimeoutError (after aborting) past timeout."},
    {"destroy", (PyCFunction)communicator_destroy, METH_NOARGS,
     "Free the communicator (ncclCommDestroy). Safe to call twice."},
    {"abort", (PyCFunction)communicator_abort, METH_NOARGS,
     "Abort the communicator (ncclCommAbort): stops its work even when peers are gone."},
    {"__enter__", communicator_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)communicator_exit, METH_VARARGS,
     "destroy() on leaving; abort() when leaving on an exception."},
    {NULL},
};

/* own_methods and the collectives, joined at setup (the spec takes one table). */
static PyMethodDef all_methods[40];

static PyType_Slot communicator_slots[] = {
    {Py_tp_doc, "Communicator(nranks, unique_id, rank, device=None, timeout=None): one rank of "
                "an NCCL communicator (ncclCommInitRank), driving `device` (default: the "
                "current one). unique_id is cukit.nccl.get_unique_id() from one rank, shared "
                "with the others. timeout (seconds) bounds synchronize(): past it the "
                "communicator is aborted and NcclTimeoutError raised."},
    {Py_tp_new, communicator_new},
    {Py_tp_dealloc, communicator_dealloc},
    {Py_tp_repr, communicator_repr},
    {Py_tp_getset, communicator_getset},
    {Py_tp_methods, all_methods},
    {0, NULL},
};

static PyType_Spec communicator_spec = {
    .name = "cukit.nccl.Communicator",
    .basicsize = sizeof(cukit_Communicator),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = communicator_slots,
};

int
cukit_communicator_setup(PyObject *module, cukit_state *st)
{
    size_t n = 0, cap = sizeof all_methods / sizeof *all_methods - 1;
    for (PyMethodDef *m = own_methods; m->ml_name && n < cap; m++)
        all_methods[n++] = *m;
    for (PyMethodDef *m = cukit_collective_methods; m->ml_name && n < cap; m++)
        all_methods[n++] = *m;
    for (PyMethodDef *m = cukit_window_methods; m->ml_name && n < cap; m++)
        all_methods[n++] = *m;
    all_methods[n] = (PyMethodDef){NULL};
    st->nccl->CommunicatorType =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &communicator_spec, NULL);
    if (st->nccl->CommunicatorType == NULL || PyModule_AddFunctions(module, group_functions) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "Communicator", (PyObject *)st->nccl->CommunicatorType);
}
