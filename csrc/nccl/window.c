/* window.c - cukit.nccl.Window: symmetric memory (ncclMemAlloc + ncclCommWindowRegister) under cukit arrays */
#include "nccl/nccl.h"

#include <limits.h>
#include <string.h>

/* NCCL's documented window alignment (NCCL_WIN_REQUIRED_ALIGNMENT in newer headers):
 * every window is allocated and registered in whole multiples of it, so that each rank
 * registers the same size and NCCL's kernels, which round counts up to their cells,
 * stay inside the window. */
#define WINDOW_ALIGN ((size_t)4096)

/* NotSupportedError unless this libnccl has the four entry points (NCCL 2.27+). 0 / -1. */
static int
need_windows(cukit_state *st, const char *who)
{
    if (cukit_nccl_load(st) < 0)
        return -1;
    if (cukit_nccl_api.ncclMemAlloc && cukit_nccl_api.ncclMemFree &&
        cukit_nccl_api.ncclCommWindowRegister && cukit_nccl_api.ncclCommWindowDeregister)
        return 0;
    int v = 0;
    cukit_nccl_api.ncclGetVersion(&v);
    PyObject *msg = PyUnicode_FromFormat(
        "%s: symmetric memory needs NCCL 2.27 or newer (ncclMemAlloc and "
        "ncclCommWindowRegister), and the libnccl cukit loaded is NCCL %d.%d.%d; "
        "`pip install -U nvidia-nccl-cu13` (or point CUKIT_NCCL at a newer libnccl.so.2)",
        who, v / 10000, (v / 100) % 100, v % 100);
    if (msg)
        cukit_raise(st, CUKIT_EXC_NOT_SUPPORTED, -1, NULL, who, msg);
    Py_XDECREF(msg);
    return -1;
}

/* ------------------------------------------------------------------ the Window object */

static void
unlink_window(cukit_Window *w)
{
    if (w->comm == NULL)
        return;
    if (w->prev)
        w->prev->next = w->next;
    else if (w->comm->windows == w)
        w->comm->windows = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
}

/* Deregister w while its communicator is still NCCL's: after destroy() or abort() NCCL
 * freed the window with the communicator, and the handle would dangle. Relaxed capture
 * mode: another library's capture on this thread would refuse NCCL's own calls. 0 / -1. */
static int
deregister(cukit_Window *w)
{
    ncclWindow_t win = w->win;
    ncclComm_t comm = w->comm ? cukit_communicator_handle(w->comm) : NULL;
    w->win = NULL;
    if (win == NULL || comm == NULL)
        return 0;
    ncclResult_t res;
    int mode = cukit_capture_relax(w->st, 1);
    Py_BEGIN_ALLOW_THREADS res = cukit_nccl_api.ncclCommWindowDeregister(comm, win);
    Py_END_ALLOW_THREADS
    cukit_capture_restore(mode);
    return cukit_nccl_check(w->st, res, "ncclCommWindowDeregister", comm);
}

/* ncclMemFree the bytes (their window deregistered first), in relaxed capture mode as
 * cukit's own frees are (memory/pool.c). 0 / -1. */
static int
free_memory(cukit_Window *w)
{
    void *p = w->ptr;
    w->ptr = NULL;
    if (p == NULL)
        return 0;
    int mode = cukit_capture_relax(w->st, 1);
    ncclResult_t res = cukit_nccl_api.ncclMemFree(p);
    cukit_capture_restore(mode);
    return cukit_nccl_check(w->st, res, "ncclMemFree", NULL);
}

/* 1 when the exception set is the driver refusing a call because a stream capture is
 * going on (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED .. _WRONG_THREAD, 900-908): the call
 * may succeed once the capture ended. Keeps the exception. */
static int
refused_by_capture(void)
{
    PyObject *exc = PyErr_GetRaisedException();
    PyObject *code = exc ? PyObject_GetAttrString(exc, "code") : NULL;
    long c = code && PyLong_Check(code) ? PyLong_AsLong(code) : -1;
    Py_XDECREF(code);
    PyErr_Clear();
    PyErr_SetRaisedException(exc);
    return c >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
           c <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
}

/* Everything w owns, once the work queued on its device is done (a collective queued
 * before the last array went may still read it). 0: released (or nothing left);
 * 1: not now, w keeps it all: a stream capture of cukit's is going on (waiting would
 * break it), or the driver refused the wait for another library's, or this thread is
 * inside cukit.nccl.group() (NCCL would hold the deregistration for its end);
 * -1: failed, with the exception set (what could not be released safely is given up). */
static int
release(cukit_Window *w)
{
    if (w->ptr == NULL && w->win == NULL)
        return 0;
    if (cukit_capture_active(w->st) || cukit_nccl_group_depth() > 0)
        return 1;
    cukit_Device *dev = w->comm->device;
    /* Relaxed: under another library's capture on this thread (thread-local mode) the
     * legacy stream's query would be refused, as for cukit's own frees. */
    int mode = cukit_capture_relax(w->st, 1);
    int rc = cukit_device_activate(dev);
    if (rc == 0)
        rc = cukit_wait_queued(dev);
    cukit_capture_restore(mode);
    if (rc < 0 && refused_by_capture()) {
        PyErr_Clear();
        return 1;
    }
    if (rc < 0) {
        /* A device that cannot wait (a kernel fault) cannot free safely either: NCCL and
         * the driver drop everything with the context. */
        w->win = NULL;
        w->ptr = NULL;
        return -1;
    }
    if (deregister(w) < 0) {
        /* NCCL may still list the window by its address: freeing the memory would let a
         * later allocation at that address pass for it. Leaked, and reported. */
        w->ptr = NULL;
        return -1;
    }
    return free_memory(w);
}

/* Keep w on the module's pending list (its strong ref). 0 / -1 (MemoryError). */
static int
defer(cukit_Window *w)
{
    cukit_nccl_state *ns = w->st->nccl;
    if (ns->pending == NULL && (ns->pending = PyList_New(0)) == NULL)
        return -1;
    return PyList_Append(ns->pending, (PyObject *)w);
}

/* Release w, or put it on the pending list when that cannot be now. A failure is
 * reported on w (alive: a finalizer's object, or the pending list's). Keeps any
 * exception set before. */
static void
settle(cukit_Window *w)
{
    PyObject *saved = PyErr_GetRaisedException();
    int rc = release(w);
    if (rc == 1 && defer(w) < 0) {
        /* Not even a list entry: its bytes stay allocated and registered (never freed
         * under NCCL), and the MemoryError is reported. */
        w->win = NULL;
        w->ptr = NULL;
        rc = -1;
    }
    if (rc < 0)
        cukit_report_release((PyObject *)w, -1);
    PyErr_SetRaisedException(saved);
}

void
cukit_window_release_pending(cukit_state *st)
{
    PyObject *list = st->nccl->pending;
    /* Not inside cukit.nccl.group() either: NCCL would hold the deregistrations for
     * ncclGroupEnd, after the memory was freed. */
    if (list == NULL || PyList_GET_SIZE(list) == 0 || cukit_capture_active(st) ||
        cukit_nccl_group_depth() > 0)
        return;
    /* Taken whole: a window refused again goes on a new list, and another thread may
     * add to it while a deregistration has the GIL released. */
    st->nccl->pending = NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++)
        settle((cukit_Window *)PyList_GET_ITEM(list, i));
    PyObject *saved = PyErr_GetRaisedException();
    Py_DECREF(list); /* the windows' deallocs: nothing left to release */
    PyErr_SetRaisedException(saved);
}

int
cukit_window_release_all(cukit_Communicator *c)
{
    if (c->windows == NULL)
        return 0;
    int mode = cukit_capture_relax(c->st, 1); /* destroy() inside a capture, as release() */
    int waited = cukit_device_activate(c->device) == 0 && cukit_wait_queued(c->device) == 0;
    cukit_capture_restore(mode);
    if (!waited)
        return -1;
    /* Strong refs first: deregistering releases the GIL, and another thread may drop a
     * window (unlinking it) meanwhile. */
    PyObject *held = PyList_New(0);
    if (held == NULL)
        return -1;
    for (cukit_Window *w = c->windows; w; w = w->next) {
        if (PyList_Append(held, (PyObject *)w) < 0) {
            Py_DECREF(held);
            return -1;
        }
    }
    int rc = 0;
    PyObject *first = NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(held); i++) {
        if (deregister((cukit_Window *)PyList_GET_ITEM(held, i)) < 0) {
            rc = -1;
            if (first == NULL)
                first = PyErr_GetRaisedException();
            else
                PyErr_Clear();
        }
    }
    Py_DECREF(held); /* may dealloc windows: their memory is freed, nothing deregistered */
    if (first)
        PyErr_SetRaisedException(first);
    return rc;
}

/* The last user went: release now, or leave it pending (the list resurrects it). Its
 * own slot (tp_finalize): run with the object alive, so that a failure can be reported
 * on it; PyErr_WriteUnraisable from a dealloc, on an object whose count is 0, would take
 * and drop a reference and run the dealloc a second time (freeing it twice). */
static void
window_finalize(cukit_Window *self)
{
    if (self->comm)
        settle(self);
}

static void
window_dealloc(cukit_Window *self)
{
    if (PyObject_CallFinalizerFromDealloc((PyObject *)self) < 0)
        return; /* pending release: the list holds it */
    PyTypeObject *tp = Py_TYPE(self);
    unlink_window(self);
    Py_CLEAR(self->comm);
    PyObject_Free(self);
    Py_DECREF(tp);
}

/* A new Window of c, linked into its list, nothing allocated yet. New ref or NULL. */
static cukit_Window *
window_new(cukit_Communicator *c)
{
    cukit_Window *w = PyObject_New(cukit_Window, c->st->nccl->WindowType);
    if (w == NULL)
        return NULL;
    w->st = c->st;
    w->comm = (cukit_Communicator *)Py_NewRef(c);
    w->ptr = NULL;
    w->nbytes = 0;
    w->win = NULL;
    w->prev = NULL;
    w->next = c->windows;
    if (c->windows)
        c->windows->prev = w;
    c->windows = w;
    return w;
}

/* ncclMemAlloc nbytes on w's device (made current). 0 / -1 (OutOfMemoryError-like
 * NcclError, naming the size). */
static int
allocate(cukit_Window *w, size_t nbytes)
{
    if (cukit_device_activate(w->comm->device) < 0)
        return -1;
    void *p = NULL;
    ncclResult_t res;
    Py_BEGIN_ALLOW_THREADS res = cukit_nccl_api.ncclMemAlloc(&p, nbytes);
    Py_END_ALLOW_THREADS
    if (res != ncclSuccess) {
        char call[96];
        PyOS_snprintf(call, sizeof call, "ncclMemAlloc of %zu bytes", nbytes);
        return cukit_nccl_check(w->st, res, call, NULL);
    }
    w->ptr = p;
    w->nbytes = nbytes;
    return 0;
}

/* ------------------------------------------------------------------ arguments */

/* shape (an int or a sequence of ints) and dtype into ndim/shape, the numpy dtype (new
 * ref) and the window's size in bytes (rounded up to WINDOW_ALIGN). 0 / -1. */
static int
parse_layout(cukit_state *st, PyObject *shape_o, PyObject *dtype_o, const char *who, int *ndim,
             Py_ssize_t *shape, PyObject **dtype, size_t *nbytes)
{
    *dtype = NULL;
    PyObject *seq = PyIndex_Check(shape_o) ? PyTuple_Pack(1, shape_o)
                                           : PySequence_Check(shape_o) ? PySequence_Tuple(shape_o)
                                                                       : NULL;
    if (seq == NULL) {
        PyErr_Format(PyExc_TypeError, "%s: shape must be an int or a sequence of ints, got %s",
                     who, Py_TYPE(shape_o)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    if (n > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "%s: %zd dimensions; cukit allows at most %d", who, n,
                     CUKIT_MAXDIM);
        Py_DECREF(seq);
        return -1;
    }
    size_t elems = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t d = PyNumber_AsSsize_t(PyTuple_GET_ITEM(seq, i), PyExc_OverflowError);
        if (d == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (d < 0) {
            PyErr_Format(PyExc_ValueError, "%s: negative dimension %zd in the shape", who, d);
            Py_DECREF(seq);
            return -1;
        }
        shape[i] = d;
        if (d && elems > (size_t)PY_SSIZE_T_MAX / (size_t)d) {
            PyErr_Format(PyExc_ValueError, "%s: the shape's size overflows", who);
            Py_DECREF(seq);
            return -1;
        }
        elems *= (size_t)d;
    }
    Py_DECREF(seq);
    *ndim = (int)n;
    Py_ssize_t itemsize;
    int tc;
    if ((*dtype = cukit_resolve_dtype(st, dtype_o)) == NULL ||
        cukit_dtype_facts(st, *dtype, &itemsize, &tc) < 0)
        goto error;
    if (elems == 0) {
        PyErr_Format(PyExc_ValueError, "%s: a symmetric array needs at least one element (NCCL "
                     "registers no empty window)", who);
        goto error;
    }
    if (itemsize <= 0 || elems > ((size_t)PY_SSIZE_T_MAX - WINDOW_ALIGN) / (size_t)itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: the array's size in bytes overflows", who);
        goto error;
    }
    size_t bytes = elems * (size_t)itemsize;
    *nbytes = (bytes + WINDOW_ALIGN - 1) / WINDOW_ALIGN * WINDOW_ALIGN;
    return 0;
error:
    Py_CLEAR(*dtype);
    return -1;
}

/* What registering needs of c: a live communicator, no capture going on here, and no
 * NCCL group of cukit.nccl.group() open (NCCL would fill the window's handle at its end,
 * after this call returned). 0 / -1. */
static int
check_usable(cukit_Communicator *c, const char *who)
{
    if (cukit_communicator_check(c) < 0)
        return -1;
    if (cukit_capture_active(c->st)) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: a stream capture is going on; allocate symmetric arrays before "
                     "capturing (registering them is a collective call of its own)", who);
        return -1;
    }
    if (cukit_nccl_group_depth() > 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: called inside cukit.nccl.group(); for one process driving several "
                     "GPUs use cukit.nccl.symmetric_empty(comms, shape, dtype), which groups the "
                     "registrations itself", who);
        return -1;
    }
    return 0;
}

/* Arrays over each window (a list for several, the array for one). New ref or NULL. */
static PyObject *
arrays_over(cukit_Window **ws, Py_ssize_t n, PyObject *dtype, int ndim, const Py_ssize_t *shape,
            int as_list)
{
    PyObject *out = as_list ? PyList_New(n) : NULL;
    if (as_list && out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        cukit_Window *w = ws[i];
        PyObject *a = (PyObject *)cukit_array_wrap(w->st, w->comm->device, (CUdeviceptr)(uintptr_t)w->ptr,
                                                   (PyObject *)w, dtype, ndim, shape, NULL, 0);
        if (a == NULL) {
            Py_XDECREF(out);
            return NULL;
        }
        if (!as_list)
            return a;
        PyList_SET_ITEM(out, i, a);
    }
    return out;
}

/* ------------------------------------------------------------------ one rank */

/* Communicator.symmetric_empty(shape, dtype=float64): dtype as cukit.empty takes it */
static PyObject *
symmetric_empty(cukit_Communicator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "dtype", NULL};
    PyObject *shape_o, *dtype_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:symmetric_empty", kwlist, &shape_o,
                                     &dtype_o))
        return NULL;
    const char *who = "symmetric_empty()";
    cukit_state *st = self->st;
    int ndim;
    Py_ssize_t shape[CUKIT_MAXDIM];
    PyObject *dtype = NULL, *out = NULL;
    cukit_Window *w = NULL;
    size_t nbytes;
    if (need_windows(st, who) < 0 || check_usable(self, who) < 0)
        return NULL;
    if (self->local_ranks > 1) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: this communicator is one of %d that init_all made in this process, and "
                     "registering is collective: one call would wait for the others for ever; use "
                     "cukit.nccl.symmetric_empty(comms, shape, dtype)", who, self->local_ranks);
        return NULL;
    }
    if (parse_layout(st, shape_o, dtype_o ? dtype_o : (PyObject *)&PyFloat_Type, who, &ndim,
                     shape, &dtype, &nbytes) < 0)
        return NULL;
    if ((w = window_new(self)) == NULL || allocate(w, nbytes) < 0)
        goto done;
    ncclWindow_t win = NULL;
    ncclResult_t res;
    /* Collective: returns once every rank registered its part (NCCL exchanges the
     * memory handles and maps the peers' memory). */
    Py_BEGIN_ALLOW_THREADS
    res = cukit_nccl_api.ncclCommWindowRegister(self->comm, w->ptr, nbytes, &win,
                                                CUKIT_NCCL_WIN_COLL_SYMMETRIC);
    Py_END_ALLOW_THREADS
    w->win = win;
    if (cukit_nccl_check(st, res, "ncclCommWindowRegister", self->comm) < 0)
        goto done;
    out = arrays_over(&w, 1, dtype, ndim, shape, 0);
done:
    Py_XDECREF(w); /* the array holds it; alone, its dealloc frees what it got */
    Py_XDECREF(dtype);
    return out;
}

PyMethodDef cukit_window_methods[] = {
    {"symmetric_empty", (PyCFunction)(void (*)(void))symmetric_empty,
     METH_VARARGS | METH_KEYWORDS,
     "symmetric_empty(shape, dtype=float64) -> cukit.Array in symmetric memory: ncclMemAlloc "
     "registered as one NCCL window (NCCL_WIN_COLL_SYMMETRIC) on every rank, which lets NCCL "
     "2.27+ run its low-latency symmetric kernels on collectives over it. Collective: every "
     "rank calls it with the same shape and dtype. Uninitialised."},
    {NULL},
};

/* ------------------------------------------------------------------ all local ranks */

/* nccl_symmetric_empty_all(comms, shape, dtype=float64) -> list: one symmetric array per
 * communicator of this process, registered together in one NCCL group. */
static PyObject *
mod_symmetric_empty_all(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"comms", "shape", "dtype", NULL};
    PyObject *comms_o, *shape_o, *dtype_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:symmetric_empty", kwlist, &comms_o,
                                     &shape_o, &dtype_o))
        return NULL;
    const char *who = "symmetric_empty()";
    cukit_state *st = PyModule_GetState(m);
    int ndim;
    Py_ssize_t shape[CUKIT_MAXDIM], n = 0;
    size_t nbytes;
    PyObject *dtype = NULL, *out = NULL;
    cukit_Window **ws = NULL;
    if (need_windows(st, who) < 0 ||
        parse_layout(st, shape_o, dtype_o ? dtype_o : (PyObject *)&PyFloat_Type, who, &ndim,
                     shape, &dtype, &nbytes) < 0)
        return NULL;
    PyObject *seq = PySequence_Fast(comms_o, "symmetric_empty: comms must be a list of "
                                             "cukit.nccl.Communicator (init_all's)");
    if (seq == NULL) {
        Py_DECREF(dtype);
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1) {
        PyErr_Format(PyExc_ValueError, "%s: give at least one communicator", who);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *c = PySequence_Fast_GET_ITEM(seq, i);
        if (!Py_IS_TYPE(c, st->nccl->CommunicatorType)) {
            PyErr_Format(PyExc_TypeError, "%s: comms[%zd] is %s, not a cukit.nccl.Communicator",
                         who, i, Py_TYPE(c)->tp_name);
            goto done;
        }
        for (Py_ssize_t j = 0; j < i; j++) {
            if (PySequence_Fast_GET_ITEM(seq, j) == c) {
                PyErr_Format(PyExc_ValueError, "%s: comms[%zd] is listed twice", who, i);
                goto done;
            }
        }
        if (check_usable((cukit_Communicator *)c, who) < 0)
            goto done;
        int local = ((cukit_Communicator *)c)->local_ranks;
        if (local > 1 && local != n) {
            PyErr_Format(PyExc_ValueError,
                         "%s: comms[%zd] is one of %d communicators that init_all made, and %zd "
                         "were given: registering is collective, pass them all", who, i, local, n);
            goto done;
        }
    }
    if ((ws = PyMem_Calloc((size_t)n, sizeof *ws)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((ws[i] = window_new((cukit_Communicator *)PySequence_Fast_GET_ITEM(seq, i))) == NULL ||
            allocate(ws[i], nbytes) < 0)
            goto done;
    }
    /* One group: NCCL registers every rank's part at ncclGroupEnd, writing each handle
     * into its Window (all alive until then: ws holds them). */
    ncclResult_t res = ncclSuccess, end;
    const char *failed = "ncclGroupStart";
    ncclComm_t failed_comm = NULL;
    Py_BEGIN_ALLOW_THREADS
    res = cukit_nccl_api.ncclGroupStart();
    if (res == ncclSuccess) {
        failed = "ncclCommWindowRegister";
        for (Py_ssize_t i = 0; i < n && res == ncclSuccess; i++) {
            failed_comm = ws[i]->comm->comm;
            res = cukit_nccl_api.ncclCommWindowRegister(failed_comm, ws[i]->ptr, nbytes,
                                                        &ws[i]->win,
                                                        CUKIT_NCCL_WIN_COLL_SYMMETRIC);
        }
        end = cukit_nccl_api.ncclGroupEnd();
        if (res == ncclSuccess && end != ncclSuccess) {
            res = end;
            failed = "ncclGroupEnd";
            failed_comm = NULL;
        }
    }
    Py_END_ALLOW_THREADS
    if (cukit_nccl_check(st, res, failed, failed_comm) < 0)
        goto done;
    out = arrays_over(ws, n, dtype, ndim, shape, 1);
done:
    if (ws) {
        for (Py_ssize_t i = 0; i < n; i++)
            Py_XDECREF(ws[i]); /* the arrays hold them; alone, each dealloc frees its own */
        PyMem_Free(ws);
    }
    Py_XDECREF(dtype);
    Py_DECREF(seq);
    return out;
}

/* nccl_window_of(array) -> the Window under a symmetric array, or None. */
static PyObject *
mod_window_of(PyObject *m, PyObject *obj)
{
    cukit_state *st = PyModule_GetState(m);
    if (Py_IS_TYPE(obj, st->ArrayType)) {
        PyObject *owner = ((cukit_Array *)obj)->owner;
        if (owner && Py_IS_TYPE(owner, st->nccl->WindowType))
            return Py_NewRef(owner);
    }
    Py_RETURN_NONE;
}

/* nccl_pending_windows() -> int: how many windows wait for release (see settle). */
static PyObject *
mod_pending_windows(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = PyModule_GetState(m);
    return PyLong_FromSsize_t(st->nccl->pending ? PyList_GET_SIZE(st->nccl->pending) : 0);
}

int
cukit_window_capture_keep(cukit_state *st, PyObject *stream, PyObject *obj)
{
    if (!Py_IS_TYPE(obj, st->ArrayType))
        return 0;
    PyObject *owner = ((cukit_Array *)obj)->owner;
    if (owner == NULL || !Py_IS_TYPE(owner, st->nccl->WindowType))
        return 0;
    return cukit_capture_keep(st, stream, owner);
}

/* ------------------------------------------------------------------ the type */

static PyObject *
window_repr(cukit_Window *self)
{
    return PyUnicode_FromFormat("<cukit.nccl.Window %zu bytes at 0x%zx on device %d, rank %d of "
                                "%d%s>", self->nbytes, (size_t)(uintptr_t)self->ptr,
                                self->comm->device->ordinal, self->comm->rank,
                                self->comm->nranks,
                                self->win ? "" : self->ptr ? " (not registered)" : " (freed)");
}

static PyObject *
get_communicator(cukit_Window *self, void *c)
{
    return Py_NewRef(self->comm);
}
static PyObject *
get_nbytes(cukit_Window *self, void *c)
{
    return PyLong_FromSize_t(self->nbytes);
}
static PyObject *
get_ptr(cukit_Window *self, void *c)
{
    return PyLong_FromVoidPtr(self->ptr);
}
static PyObject *
get_registered(cukit_Window *self, void *c)
{
    return PyBool_FromLong(self->win != NULL);
}
static PyObject *
get_handle(cukit_Window *self, void *c)
{
    return PyLong_FromVoidPtr(self->win);
}

static PyGetSetDef window_getset[] = {
    {"communicator", (getter)get_communicator, NULL, "The Communicator it is registered with."},
    {"nbytes", (getter)get_nbytes, NULL, "Bytes allocated and registered (a multiple of 4096)."},
    {"ptr", (getter)get_ptr, NULL, "Device address of its first byte (0 once freed)."},
    {"registered", (getter)get_registered, NULL,
     "True when NCCL returned a window handle for it. False: NCCL registered nothing (its "
     "symmetric support is off: NCCL_WIN_ENABLE=0, no cuMem, ranks not all on one NVLink "
     "domain), and collectives on it take NCCL's usual path."},
    {"handle", (getter)get_handle, NULL, "The ncclWindow_t as an int; 0 when not registered."},
    {NULL},
};

static PyType_Slot window_slots[] = {
    {Py_tp_doc, "Window: symmetric memory of one rank, from ncclMemAlloc, registered with its "
                "communicator (ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC). Made by "
                "Communicator.symmetric_empty and cukit.nccl.symmetric_empty; the arrays over "
                "it, and graphs that captured collectives on them, keep it alive. Deregistered "
                "and freed when the last of them goes (or deregistered by comm.destroy())."},
    {Py_tp_dealloc, window_dealloc},
    {Py_tp_finalize, window_finalize},
    {Py_tp_repr, window_repr},
    {Py_tp_getset, window_getset},
    {0, NULL},
};

static PyType_Spec window_spec = {
    .name = "cukit.nccl.Window",
    .basicsize = sizeof(cukit_Window),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = window_slots,
};

static PyMethodDef window_functions[] = {
    {"nccl_symmetric_empty_all", (PyCFunction)(void (*)(void))mod_symmetric_empty_all,
     METH_VARARGS | METH_KEYWORDS,
     "nccl_symmetric_empty_all(comms, shape, dtype=float64) -> list of cukit.Array: one "
     "symmetric array per communicator of this process (init_all's), registered together in "
     "one NCCL group."},
    {"nccl_pending_windows", mod_pending_windows, METH_NOARGS,
     "nccl_pending_windows() -> int: symmetric memory windows whose last user went while a "
     "stream capture was going on (or inside cukit.nccl.group()), to be deregistered and "
     "freed at the next collective, synchronize(), destroy() or symmetric_empty outside it."},
    {"nccl_window_of", mod_window_of, METH_O,
     "nccl_window_of(array) -> the cukit.nccl.Window under a symmetric array, or None."},
    {NULL},
};

int
cukit_window_setup(PyObject *module, cukit_state *st)
{
    st->nccl->WindowType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &window_spec, NULL);
    if (st->nccl->WindowType == NULL ||
        PyModule_AddObjectRef(module, "Window", (PyObject *)st->nccl->WindowType) < 0)
        return -1;
    return PyModule_AddFunctions(module, window_functions);
}
