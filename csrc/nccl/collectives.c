/* collectives.c - Communicator.all_reduce, broadcast, reduce, all_gather, reduce_scatter, all_to_all, send, recv on any CUDA array */
#include "nccl/nccl.h"

#include <string.h>

/* One array argument, read once: where its elements are and what they are. */
typedef struct {
    CUdeviceptr ptr;       /* element [0] */
    size_t count;          /* elements */
    int typecode;
    Py_ssize_t itemsize;
    int ordinal;           /* the device holding it */
    int writable;
    PyObject *keep;        /* strong ref or NULL: an Array made to read a DLPack-only object */
} nbuf;

static void *
dptr(CUdeviceptr p)
{
    return (void *)(uintptr_t)p;
}

static int
not_contiguous(const char *who, const char *arg)
{
    PyErr_Format(PyExc_ValueError,
                 "%s: %s must be C-contiguous (NCCL reads one run of memory); pass "
                 "cukit.ascontiguousarray(x) or x.contiguous()", who, arg);
    return -1;
}

static int
from_array(cukit_Array *a, const char *who, const char *arg, nbuf *b)
{
    if (!cukit_array_live(a)) {
        PyErr_Format(PyExc_ValueError, "%s: %s was freed", who, arg);
        return -1;
    }
    if (!(a->flags & CUKIT_ARRAY_C_CONTIG) && a->size > 1)
        return not_contiguous(who, arg);
    b->ptr = cukit_array_ptr(a);
    b->count = (size_t)a->size;
    b->typecode = a->typecode;
    b->itemsize = a->itemsize;
    b->ordinal = a->device->ordinal;
    b->writable = !(a->flags & CUKIT_ARRAY_READONLY);
    return 0;
}

/* A torch tensor through its C methods (faster than its Python interface). */
static int
from_torch(cukit_state *st, PyObject *obj, CUdeviceptr p, long ordinal, int tc, const char *who,
           const char *arg, nbuf *b)
{
    if (ordinal < 0) {
        PyErr_Format(PyExc_TypeError,
                     "%s: %s is a torch tensor in host memory; NCCL needs GPU memory (.cuda())",
                     who, arg);
        return -1;
    }
    PyObject *contig = PyObject_CallMethod(obj, "is_contiguous", NULL);
    int ok = contig ? PyObject_IsTrue(contig) : -1;
    Py_XDECREF(contig);
    if (ok <= 0)
        return ok < 0 ? -1 : not_contiguous(who, arg);
    PyObject *numel = PyObject_CallMethod(obj, "numel", NULL);
    Py_ssize_t n = numel ? PyLong_AsSsize_t(numel) : -1;
    Py_XDECREF(numel);
    if (n < 0)
        return -1;
    b->ptr = p;
    b->count = (size_t)n;
    b->typecode = tc;
    b->itemsize = cukit_typecode_size(tc);
    b->ordinal = (int)ordinal;
    return 0;
}

static int
from_cai(cukit_state *st, PyObject *obj, PyObject *dict, const char *who, const char *arg,
         nbuf *b)
{
    cukit_cai cai;
    if (cukit_cai_read(st, obj, dict, 1, who, &cai) < 0)
        return -1;
    size_t n = 1;
    for (int i = 0; i < cai.ndim; i++)
        n *= (size_t)cai.shape[i];
    if (!cai.c_contiguous && n > 1)
        return not_contiguous(who, arg);
    b->ptr = cai.ptr;
    b->count = n;
    b->typecode = cai.typecode;
    b->itemsize = cai.itemsize;
    b->writable = !cai.readonly;
    int ordinal = -1;
    if (cai.ptr && CU_CALL(st, cuPointerGetAttribute,
                           (&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, cai.ptr)) < 0)
        return -1;
    b->ordinal = ordinal;
    return 0;
}

/* Read `obj` (a cukit.Array, a torch tensor, anything with __cuda_array_interface__
 * or DLPack on a GPU) into b. 0 / -1 with TypeError or ValueError naming `arg`. */
static int
resolve(cukit_Communicator *c, PyObject *obj, const char *who, const char *arg, nbuf *b)
{
    cukit_state *st = c->st;
    memset(b, 0, sizeof *b);
    b->writable = 1;
    b->ordinal = -1;
    if (Py_IS_TYPE(obj, st->ArrayType))
        return from_array((cukit_Array *)obj, who, arg, b);
    CUdeviceptr p;
    long ordinal;
    int tc, rc = cukit_torch_pointer(st, obj, &p, &ordinal, &tc);
    if (rc != 0)
        return rc < 0 ? -1 : from_torch(st, obj, p, ordinal, tc, who, arg, b);
    PyObject *attr;
    if ((rc = cukit_optional_attr_obj(obj, st->memory->str_cai, &attr)) != 0) {
        if (rc < 0)
            return -1;
        rc = from_cai(st, obj, attr, who, arg, b);
        Py_DECREF(attr);
        return rc;
    }
    if ((rc = cukit_optional_attr(obj, "__dlpack_device__", &attr)) <= 0) {
        if (rc == 0)
            PyErr_Format(PyExc_TypeError,
                         "%s: %s must be an array in GPU memory (a cukit.Array, or another "
                         "library's through DLPack or __cuda_array_interface__), got %s; copy "
                         "host data with cukit.to_device first", who, arg, Py_TYPE(obj)->tp_name);
        return -1;
    }
    PyObject *where = PyObject_CallNoArgs(attr);
    Py_DECREF(attr);
    int type = 0, id = 0;
    rc = where ? cukit_dlpack_parse_device(where, &type, &id, who) : -1;
    Py_XDECREF(where);
    if (rc < 0)
        return -1;
    if (!cukit_dlpack_is_cuda(type)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: %s must be an array in GPU memory, but this %s is on DLPack device "
                     "type %d (host memory); copy it with cukit.to_device first", who, arg,
                     Py_TYPE(obj)->tp_name, type);
        return -1;
    }
    /* DLPack alone does not say the size without a capsule: import it as an Array. */
    PyObject *module = PyType_GetModule(Py_TYPE(c));
    PyObject *a = module ? PyObject_CallMethod(module, "from_dlpack", "O", obj) : NULL;
    if (a == NULL)
        return -1;
    b->keep = a;
    return from_array((cukit_Array *)a, who, arg, b);
}

static void
release(nbuf *b)
{
    Py_CLEAR(b->keep);
}

/* The device, then the stream: a cukit.Stream, None (the legacy default stream), or
 * an int handle (another library's stream, e.g. torch's .cuda_stream). 0 / -1. */
static int
begin(cukit_Communicator *c, PyObject *stream, CUstream *h)
{
    if (cukit_communicator_check(c) < 0 || cukit_device_activate(c->device) < 0)
        return -1;
    if (PyLong_Check(stream)) {
        *h = (CUstream)PyLong_AsVoidPtr(stream);
        return PyErr_Occurred() ? -1 : 0;
    }
    return cukit_stream_handle(c->st, stream, c->device, h);
}

static int
check_device(cukit_Communicator *c, const nbuf *b, const char *who, const char *arg)
{
    if (b->ordinal == c->device->ordinal)
        return 0;
    PyErr_Format(PyExc_ValueError,
                 "%s: %s is on device %d, but this communicator (rank %d) drives device %d", who,
                 arg, b->ordinal, c->rank, c->device->ordinal);
    return -1;
}

/* send and recv of one operation: both on the communicator's device, one dtype,
 * recv writable, and recv.count * ratio_recv == send.count * ratio_send. */
static int
check_pair(cukit_Communicator *c, const nbuf *s, const nbuf *r, size_t ratio_send,
           size_t ratio_recv, const char *who)
{
    if (check_device(c, s, who, "send") < 0 || check_device(c, r, who, "recv") < 0)
        return -1;
    if (s->typecode != r->typecode) {
        PyErr_Format(PyExc_TypeError, "%s: send is %s but recv is %s; NCCL does not convert",
                     who, cukit_typecode_name(s->typecode), cukit_typecode_name(r->typecode));
        return -1;
    }
    if (!r->writable) {
        PyErr_Format(PyExc_ValueError, "%s: recv is read-only", who);
        return -1;
    }
    if (s->count * ratio_send != r->count * ratio_recv) {
        PyErr_Format(PyExc_ValueError,
                     "%s: recv must hold %s the elements of send (%zu ranks): send has %zu, "
                     "recv has %zu", who,
                     ratio_recv == ratio_send ? "as many as" : ratio_recv == 1 ? "nranks times"
                                                                                : "1/nranks of",
                     (size_t)c->nranks, s->count, r->count);
        return -1;
    }
    return 0;
}

static int
check_rank(cukit_Communicator *c, int r, const char *who, const char *what)
{
    if (r >= 0 && r < c->nranks)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %s must be a rank in 0..%d, got %d", who, what,
                 c->nranks - 1, r);
    return -1;
}

/* Call NCCL without the GIL (an enqueue may wait for peers to connect); jumps to
 * `error` on failure. */
#define NCCL_NOGIL(c, fn, args)                                                         \
    do {                                                                                \
        ncclResult_t r_;                                                                \
        Py_BEGIN_ALLOW_THREADS r_ = cukit_nccl_api.fn args;                             \
        Py_END_ALLOW_THREADS if (cukit_nccl_check((c)->st, r_, #fn, (c)->comm) < 0) goto error; \
    } while (0)

/* The parts every operation shares: parse (send, recv=None, op, root) and read both. */
typedef struct {
    nbuf s, r;
    int op;            /* -1 for operations that do not reduce */
    int root;
    int type, lanes;
    CUstream h;
    int recv_given;
} call;

/* What a call needs once parsed: both buffers (r copied from s for in place), the
 * NCCL type and op, the stream. */
static int
prepare(cukit_Communicator *c, call *k, PyObject *send, PyObject *recv, PyObject *op,
        int default_op, PyObject *stream, const char *who)
{
    memset(k, 0, sizeof *k);
    k->op = default_op;
    if (op && (k->op = cukit_nccl_op(op, who)) < 0)
        return -1;
    if (begin(c, stream, &k->h) < 0)
        return -1;
    if (send != Py_None && resolve(c, send, who, "send", &k->s) < 0)
        return -1;
    k->recv_given = recv != Py_None;
    if (k->recv_given && resolve(c, recv, who, "recv", &k->r) < 0)
        return -1;
    if (send == Py_None && !k->recv_given) {
        PyErr_Format(PyExc_TypeError, "%s: give send, recv or both", who);
        return -1;
    }
    /* Captured into a cukit.Graph, the call is replayed later: the graph keeps its
     * arrays and the communicator alive (NCCL's destroy waits for every graph holding
     * its work: the graph must go first). Another library's stream keeps its own
     * captures; the communicator only notes it (see its dealloc). */
    if (cukit_stream_capturing(k->h)) {
        c->captured = 1;
        if (cukit_capture_keep(c->st, stream, (PyObject *)c) < 0)
            return -1;
    }
    if ((send != Py_None && cukit_capture_keep(c->st, stream, send) < 0) ||
        (k->recv_given && cukit_capture_keep(c->st, stream, recv) < 0))
        return -1;
    /* A symmetric array's free() lets go of its window: the graph keeps the window too. */
    if ((send != Py_None && cukit_window_capture_keep(c->st, stream, send) < 0) ||
        (k->recv_given && cukit_window_capture_keep(c->st, stream, recv) < 0))
        return -1;
    int tc = send != Py_None ? k->s.typecode : k->r.typecode;
    if ((k->type = cukit_nccl_datatype(tc, k->op, &k->lanes, who)) < 0)
        return -1;
    return 0;
}

/* b as the same memory seen through another name, for in-place calls. */
static nbuf
alias(const nbuf *b, CUdeviceptr ptr, size_t count)
{
    return (nbuf){ptr, count, b->typecode, b->itemsize, b->ordinal, b->writable, NULL};
}

static PyObject *
finish(call *k, int ok)
{
    release(&k->s);
    release(&k->r);
    return ok ? Py_NewRef(Py_None) : NULL;
}

static PyObject *
all_reduce(cukit_Communicator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"send", "recv", "op", "stream", NULL};
    PyObject *send, *recv = Py_None, *op = NULL, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO$O:all_reduce", kwlist, &send, &recv,
                                     &op, &stream))
        return NULL;
    const char *who = "all_reduce()";
    call k;
    if (prepare(self, &k, send, recv, op, ncclSum, stream, who) < 0)
        goto error;
    if (!k.recv_given)
        k.r = alias(&k.s, k.s.ptr, k.s.count);
    if (check_pair(self, &k.s, &k.r, 1, 1, who) < 0)
        goto error;
    /* inside a group, NCCL's (see oneshot.c) */
    int oneshot = cukit_nccl_group_depth() > 0
                      ? 0
                      : cukit_oneshot_all_reduce(self, k.s.ptr, k.r.ptr, k.s.count * k.lanes,
                                                 k.type, k.op, k.h);
    if (oneshot != 0)
        return finish(&k, oneshot > 0);
    NCCL_NOGIL(self, ncclAllReduce, (dptr(k.s.ptr), dptr(k.r.ptr), k.s.count * k.lanes, k.type,
                                     k.op, self->comm, k.h));
    return finish(&k, 1);
error:
    return finish(&k, 0);
}

static PyObject *
reduce(cukit_Communicator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"send", "recv", "op", "root", "stream", NULL};
    PyObject *send, *recv = Py_None, *op = NULL, *stream = Py_None;
    int root = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOi$O:reduce", kwlist, &send, &recv, &op,
                                     &root, &stream))
        return NULL;
    const char *who = "reduce()";
    call k;
    if (prepare(self, &k, send, recv, op, ncclSum, stream, who) < 0)
        goto error;
    if (!k.recv_given)
        k.r = alias(&k.s, k.s.ptr, k.s.count);
    if (check_rank(self, root, who, "root") < 0 || check_pair(self, &k.s, &k.r, 1, 1, who) < 0)
        goto error;
    NCCL_NOGIL(self, ncclReduce, (dptr(k.s.ptr), dptr(k.r.ptr), k.s.count * k.lanes, k.type,
                                  k.op, root, self->comm, k.h));
    return finish(&k, 1);
error:
    return finish(&k, 0);
}

static PyObject *
broadcast(cukit_Communicator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"send", "recv", "root", "stream", NULL};
    PyObject *send, *recv = Py_None, *stream = Py_None;
    int root = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|Oi$O:broadcast", kwlist, &send, &recv,
                                     &root, &stream))
        return NULL;
    const char *who = "broadcast()";
    call k;
    if (prepare(self, &k, send, recv, NULL, -1, stream, who) < 0)
        goto error;
    if (!k.recv_given)
        k.r = alias(&k.s, k.s.ptr, k.s.count);
    if (check_rank(self, root, who, "root") < 0 || check_pair(self, &k.s, &k.r, 1, 1, who) < 0)
        goto error;
    NCCL_NOGIL(self, ncclBroadcast, (dptr(k.s.ptr), dptr(k.r.ptr), k.r.count * k.lanes, k.type,
                                     root, self->comm, k.h));
    return finish(&k, 1);
error:
    return finish(&k, 0);
}

/* all_gather(send, recv): recv holds every rank's send, in rank order. send None:
 * in place, this rank's part of recv is its input. */
static PyObject *
all_gather(cukit_Communicator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"send", "recv", "stream", NULL};
    PyObject *send, *recv, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:all_gather", kwlist, &send, &recv,
                                     &stream))
        return NULL;
    const char *who = "all_gather()";
    call k;
    if (prepare(self, &k, send, recv, NULL, -1, stream, who) < 0)
        goto error;
    if (send == Py_None) {
        if (!k.recv_given || k.r.count % (size_t)self->nranks) {
            PyErr_Format(PyExc_ValueError, "%s in place: recv must hold nranks (%d) equal "
                         "parts", who, self->nranks);
            goto error;
        }
        size_t part = k.r.count / (size_t)self->nranks;
        k.s = alias(&k.r, k.r.ptr + (CUdeviceptr)(part * (size_t)self->rank * (size_t)k.r.itemsize),
                    part);
    }
    if (check_pair(self, &k.s, &k.r, (size_t)self->nranks, 1, who) < 0)
        goto error;
    NCCL_NOGIL(self, ncclAllGather, (dptr(k.s.ptr), dptr(k.r.ptr), k.s.count * k.lanes, k.type,
                                     self->comm, k.h));
    return finish(&k, 1);
error:
    return finish(&k, 0);
}

/* reduce_scatter(send, recv=None, op="sum"): recv gets this rank's part of the
 * reduction of every send. recv None: in place, into this rank's part of send. */
static PyObject *
reduce_scatter(cukit_Communicator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"send", "recv", "op", "stream", NULL};
    PyObject *send, *recv = Py_None, *op = NULL, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO$O:reduce_scatter", kwlist, &send,
                                     &recv, &op, &stream))
        return NULL;
    const char *who = "reduce_scatter()";
    call k;
    if (prepare(self, &k, send, recv, op, ncclSum, stream, who) < 0)
        goto error;
    if (send == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s: send is required", who);
        goto error;
    }
    if (!k.recv_given) {
        if (k.s.count % (size_t)self->nranks) {
            PyErr_Format(PyExc_ValueError, "%s in place: send must hold nranks (%d) equal "
                         "parts", who, self->nranks);
            goto error;
        }
        size_t part = k.s.count / (size_t)self->nranks;
        k.r = alias(&k.s, k.s.ptr + (CUdeviceptr)(part * (size_t)self->rank * (size_t)k.s.itemsize),
                    part);
    }
    if (check_pair(self, &k.s, &k.r, 1, (size_t)self->nranks, who) < 0)
        goto error;
    NCCL_NOGIL(self, ncclReduceScatter, (dptr(k.s.ptr), dptr(k.r.ptr), k.r.count * k.lanes,
                                         k.type, k.op, self->comm, k.h));
    return finish(&k, 1);
error:
    return finish(&k, 0);
}

/* all_to_all(send, recv): part j of send goes to rank j, and part i of recv comes
 * from rank i; grouped ncclSend/ncclRecv. */
static PyObject *
all_to_all(cukit_Communicator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"send", "recv", "stream", NULL};
    PyObject *send, *recv, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:all_to_all", kwlist, &send, &recv,
                                     &stream))
        return NULL;
    const char *who = "all_to_all()";
    call k;
    if (prepare(self, &k, send, recv, NULL, -1, stream, who) < 0)
        goto error;
    if (send == Py_None || !k.recv_given) {
        PyErr_Format(PyExc_TypeError, "%s: give send and recv (NCCL has no in-place "
                                      "all-to-all)", who);
        goto error;
    }
    if (check_pair(self, &k.s, &k.r, 1, 1, who) < 0)
        goto error;
    if (k.s.count % (size_t)self->nranks) {
        PyErr_Format(PyExc_ValueError, "%s: send must hold nranks (%d) equal parts, has %zu "
                     "elements", who, self->nranks, k.s.count);
        goto error;
    }
    size_t part = k.s.count / (size_t)self->nranks;
    size_t bytes = part * (size_t)k.s.itemsize;
    if (k.s.ptr < k.r.ptr + (CUdeviceptr)(bytes * (size_t)self->nranks) &&
        k.r.ptr < k.s.ptr + (CUdeviceptr)(bytes * (size_t)self->nranks) && bytes) {
        PyErr_Format(PyExc_ValueError, "%s: send and recv overlap; NCCL has no in-place "
                                       "all-to-all", who);
        goto error;
    }
    ncclResult_t res = ncclSuccess, end;
    ncclComm_t comm = self->comm;
    int n = self->nranks;
    Py_BEGIN_ALLOW_THREADS
    res = cukit_nccl_api.ncclGroupStart();
    for (int peer = 0; peer < n && res == ncclSuccess; peer++) {
        CUdeviceptr off = (CUdeviceptr)(bytes * (size_t)peer);
        res = cukit_nccl_api.ncclSend(dptr(k.s.ptr + off), part * k.lanes, k.type, peer, comm, k.h);
        if (res == ncclSuccess)
            res = cukit_nccl_api.ncclRecv(dptr(k.r.ptr + off), part * k.lanes, k.type, peer, comm,
                                          k.h);
    }
    end = cukit_nccl_api.ncclGroupEnd();
    Py_END_ALLOW_THREADS
    if (cukit_nccl_check(self->st, res, "ncclSend/ncclRecv", comm) < 0 ||
        cukit_nccl_check(self->st, end, "ncclGroupEnd", comm) < 0)
        goto error;
    return finish(&k, 1);
error:
    return finish(&k, 0);
}

/* send(buf, peer) and recv(buf, peer): point to point. */
static PyObject *
point_to_point(cukit_Communicator *self, PyObject *args, PyObject *kwargs, int sending)
{
    static char *kwlist[] = {"buf", "peer", "stream", NULL};
    PyObject *buf, *stream = Py_None;
    int peer;
    const char *who = sending ? "send()" : "recv()";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, sending ? "Oi|$O:send" : "Oi|$O:recv", kwlist,
                                     &buf, &peer, &stream))
        return NULL;
    call k;
    if (prepare(self, &k, sending ? buf : Py_None, sending ? Py_None : buf, NULL, -1, stream,
                who) < 0)
        goto error;
    nbuf *b = sending ? &k.s : &k.r;
    if (check_rank(self, peer, who, "peer") < 0 || check_device(self, b, who, "buf") < 0)
        goto error;
    if (!sending && !b->writable) {
        PyErr_Format(PyExc_ValueError, "%s: buf is read-only", who);
        goto error;
    }
    if (sending)
        NCCL_NOGIL(self, ncclSend, (dptr(b->ptr), b->count * k.lanes, k.type, peer, self->comm,
                                    k.h));
    else
        NCCL_NOGIL(self, ncclRecv, (dptr(b->ptr), b->count * k.lanes, k.type, peer, self->comm,
                                    k.h));
    return finish(&k, 1);
error:
    return finish(&k, 0);
}

static PyObject *
send_(cukit_Communicator *self, PyObject *args, PyObject *kwargs)
{
    return point_to_point(self, args, kwargs, 1);
}

static PyObject *
recv_(cukit_Communicator *self, PyObject *args, PyObject *kwargs)
{
    return point_to_point(self, args, kwargs, 0);
}

#define METHOD(name, fn, doc) \
    {name, (PyCFunction)(void (*)(void))fn, METH_VARARGS | METH_KEYWORDS, doc}

PyMethodDef cukit_collective_methods[] = {
    METHOD("all_reduce", all_reduce,
           "all_reduce(send, recv=None, op='sum', *, stream=None): recv = the reduction of "
           "every rank's send (op: sum, prod, min, max, avg); in place without recv."),
    METHOD("reduce", reduce,
           "reduce(send, recv=None, op='sum', root=0, *, stream=None): like all_reduce, the "
           "result only on root."),
    METHOD("broadcast", broadcast,
           "broadcast(send, recv=None, root=0, *, stream=None): root's send into every rank's "
           "recv (into send itself without recv)."),
    METHOD("all_gather", all_gather,
           "all_gather(send, recv, *, stream=None): recv (nranks times send's size) = every "
           "rank's send in rank order; send=None: in place, this rank's part of recv."),
    METHOD("reduce_scatter", reduce_scatter,
           "reduce_scatter(send, recv=None, op='sum', *, stream=None): recv = this rank's "
           "part (1/nranks) of the reduction of every send; in place without recv."),
    METHOD("all_to_all", all_to_all,
           "all_to_all(send, recv, *, stream=None): part j of send to rank j, part i of recv "
           "from rank i (grouped send/recv; not in place)."),
    METHOD("send", send_, "send(buf, peer, *, stream=None): ncclSend to rank peer."),
    METHOD("recv", recv_, "recv(buf, peer, *, stream=None): ncclRecv from rank peer."),
    {NULL},
};
