/* scan.c - prefix scans: cumsum and cumprod along any axis, and cukit.ScanKernel (the
 * base of InclusiveScanKernel and ExclusiveScanKernel, PyCUDA's scan builders)
 *
 * One dimension: a single pass with decoupled look-back. Each block takes the tile of its
 * index (8192 elements, 2048 for accumulators over 4 bytes, see ck_scan_items),
 * prefetches into L2 the tile an SM's worth of blocks later, loads its own into shared
 * memory (16-byte streaming vectors when contiguous and aligned; each warp stages its own
 * part), scans it, publishes the tile's aggregate, and a warp adds the aggregates of the
 * tiles before it, 32 a step, up to the first inclusive prefix it meets; then it
 * publishes its own prefix: every element is read once and written once. The tiles'
 * words (flags with the launch's epoch, so that words of earlier launches read as
 * unwritten) live in scratch the stream keeps. Along an axis of an N-D array: a warp per
 * line when the axis is contiguous (32 elements a step, a carry between steps), else a
 * thread per line (neighbouring threads on neighbouring lines, so the accesses
 * coalesce). The kernels' CUDA C is scan_codegen.c's. */
#include "compute/reduce/reduce_impl.h"

#include <ctype.h>
#include <string.h>

#define LMAXD 8     /* dimensions besides the scanned one */

static const char *const fnames[] = {"cks", "ckl", "ckw"};
enum { SF_TILES, SF_LINES, SF_WARPS, SF_COUNT };

/* Scan `len` elements along each line of (nd, lshape) from in to out. 0 / -1. */
typedef struct {
    CUdeviceptr in, out;
    long long n, sin, sout, nlines;
    int nd;
    long long lshape[LMAXD], lsin[LMAXD], lsout[LMAXD];
} splan;

static int
scan_run(cukit_state *st, cukit_Device *dev, ck_kcache *cache, uint64_t key, PyObject *src_args[4],
         int acc_size, const splan *plan, CUstream h, int itemsize)
{
    if (plan->n == 0 || plan->nlines == 0)
        return 0;
    int fn = plan->nlines == 1 && plan->nd == 0 ? SF_TILES
             : (plan->sin == itemsize && plan->n >= 32) ? SF_WARPS : SF_LINES;
    ck_entry *e = ck_kcache_find(cache, key | (uint64_t)fn);
    if (e == NULL) {
        /* the kernel alone (see compile/kernels/one_kernel.cuh): a first scan compiles
         * the one it runs */
        PyObject *module = NULL;
        CUfunction f;
        const char *file = PyUnicode_AsUTF8(src_args[1]);
        PyObject *text = file ? PyUnicode_FromFormat("#define CUKIT_ONE_KERNEL 1\n"
                                                     "#define CUKIT_KERNEL_%s 1\n%U",
                                                     fnames[fn], src_args[0])
                              : NULL;
        int rc = text ? cukit_builtin_function(st, dev, text, file, src_args[2], fnames[fn],
                                              &module, &f)
                      : -1;
        Py_XDECREF(text);
        if (rc == 0)
            rc = ck_kcache_add(cache, key | (uint64_t)fn, f, 0, module);
        Py_XDECREF(module);
        if (rc < 0)
            return -1;
        e = ck_kcache_find(cache, key | (uint64_t)fn);
    }
    struct {
        unsigned long long in, out, status;
        long long n, sin, sout, nlines;
        int ntiles, nd;
        unsigned epoch, spare;
        long long lshape[8], lsin[8], lsout[8];
    } a;
    memset(&a, 0, sizeof a);
    a.in = plan->in;
    a.out = plan->out;
    a.n = plan->n;
    a.sin = plan->sin;
    a.sout = plan->sout;
    a.nlines = plan->nlines;
    a.nd = plan->nd;
    memcpy(a.lshape, plan->lshape, sizeof a.lshape);
    memcpy(a.lsin, plan->lsin, sizeof a.lsin);
    memcpy(a.lsout, plan->lsout, sizeof a.lsout);
    cukit_scratch status = {0, 0};
    long long grid;
    if (fn == SF_TILES) {
        const long long tile = (long long)CK_THREADS * ck_scan_items(acc_size);
        long long ntiles = (plan->n + tile - 1) / tile;
        if (ntiles > 0x7fffffffLL) {
            PyErr_SetString(PyExc_ValueError, "scan: too many elements");
            return -1;
        }
        /* the ticket, then a packed word a tile (accumulators of up to 4 bytes), or a flag
         * a tile and two 16-byte slots (scan_codegen.c's cks) */
        const int packed = acc_size <= 4;
        size_t flags = packed ? 8 * (size_t)ntiles : (4 * (size_t)ntiles + 15) / 16 * 16;
        size_t bytes = 16 + flags + (packed ? 0 : 32 * (size_t)ntiles);
        a.ntiles = (int)ntiles;
        grid = ntiles;
        /* Packed words in the stream's kept scratch: each launch a new epoch, so the words
         * of the launches before read as unwritten; no memset, allocation or free. Else
         * the launch's own scratch, ordered on its stream (a scan on another stream never
         * shares it), the flags zeroed. */
        CUdeviceptr kp = 0;
        unsigned epoch = 1;
        int kept = packed
                       ? cukit_stream_kept(dev, h, CUKIT_KEPT_SCAN, bytes, &kp, &epoch) : 0;
        if (kept < 0)
            return -1;
        if (kept)
            a.status = kp;
        else {
            if (cukit_scratch_alloc(dev, bytes, h, &status) < 0)
                return -1;
            a.status = status.ptr;
            epoch = 1;
            if (CU_CALL(st, cuMemsetD8Async, ((CUdeviceptr)a.status, 0, 16 + flags, h)) < 0) {
                cukit_scratch_release(dev, &status, h);
                return -1;
            }
        }
        a.epoch = epoch;
        /* the prefetch distance in tiles: one an SM (each block prefetches the tile of
         * the block an SM's worth later), at most a quarter of the L2 (each stays there
         * until its block reads it; a wave of blocks ahead thrashed an H200's) */
        long long ahead = dev->sm_count;
        const long long fit = (long long)dev->l2_bytes / 4 / (tile * itemsize);
        if (dev->l2_bytes > 0 && ahead > fit)
            ahead = fit;
        a.spare = (unsigned)ahead;
    }
    else {
        long long per = fn == SF_WARPS ? 8 : 256;
        grid = (plan->nlines + per - 1) / per;
        if (grid > 0x7fffffffLL)
            grid = 0x7fffffffLL;
    }
    void *args[] = {&a};
    int rc = cukit_builtin_launch(dev, e->func, (unsigned)grid, 1, fn == SF_TILES ? CK_THREADS : 256,
                                  1, h, args);
    if (cukit_scratch_release(dev, &status, h) < 0)
        rc = -1;
    return rc;
}

/* Plan a scan of a along axis (-1: a flattened C-contiguous a) into out. 0 / -1. */
static int
scan_plan(splan *plan, cukit_Array *a, int axis, cukit_Array *out)
{
    memset(plan, 0, sizeof *plan);
    plan->in = cukit_array_ptr(a);
    plan->out = cukit_array_ptr(out);
    if (axis < 0) {
        plan->n = a->size;
        plan->sin = a->itemsize;
        plan->sout = out->ndim ? out->strides[out->ndim - 1] : out->itemsize;
        plan->nlines = 1;
        return 0;
    }
    plan->n = a->shape[axis];
    plan->sin = a->strides[axis];
    plan->sout = out->strides[axis];
    plan->nlines = 1;
    for (int d = 0; d < a->ndim; d++) {
        if (d == axis)
            continue;
        plan->nlines *= a->shape[d];
        if (a->shape[d] == 1)
            continue;
        if (plan->nd >= LMAXD) {
            PyErr_Format(PyExc_ValueError, "cukit scans take up to %d dimensions besides the "
                         "scanned one", LMAXD);
            return -1;
        }
        plan->lshape[plan->nd] = a->shape[d];
        plan->lsin[plan->nd] = a->strides[d];
        plan->lsout[plan->nd] = out->strides[d];
        plan->nd++;
    }
    if (plan->nd == 0 && plan->nlines == 1)
        plan->nd = 0;
    return 0;
}

static int
sum_type(int tc)
{
    const ck_dtype *d = &ck_dtypes[tc];
    if (d->kind == 'b' || (d->kind == 'i' && d->size < 8))
        return CUKIT_TC_I64;
    if (d->kind == 'u' && d->size < 8)
        return CUKIT_TC_U64;
    return tc;
}

PyObject *
ck_scan_call(cukit_state *st, int which, PyObject *const *args, Py_ssize_t nargs,
             PyObject *kwnames)
{
    const char *who = which ? "cumprod" : "cumsum";
    PyObject *v[5] = {NULL, NULL, NULL, NULL, NULL}; /* a, axis, dtype, out, stream */
    static const char *const names[] = {"a", "axis", "dtype", "out", "stream"};
    if (nargs < 1 || nargs > 4)
        return PyErr_Format(PyExc_TypeError, "cukit.%s() takes 1 to 4 positional arguments", who);
    for (Py_ssize_t i = 0; i < nargs; i++)
        v[i] = args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        int k = -1;
        for (int j = 1; j < 5 && k < 0; j++)
            if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), names[j]) == 0)
                k = j;
        if (k < 0 || v[k])
            return PyErr_Format(PyExc_TypeError, "cukit.%s() got an unexpected or repeated "
                                "keyword argument %R", who, PyTuple_GET_ITEM(kwnames, i));
        v[k] = args[nargs + i];
    }
    if (!Py_IS_TYPE(v[0], st->ArrayType))
        return PyErr_Format(PyExc_TypeError, "cukit.%s(): a must be a cukit.Array, not %s", who,
                            Py_TYPE(v[0])->tp_name);
    cukit_Array *a = (cukit_Array *)v[0];
    if (!cukit_array_live(a))
        return cukit_freed_error(), NULL;
    if (!ck_math_tc(a->typecode))
        return PyErr_Format(PyExc_TypeError, "cukit.%s() does not support dtype %S%s", who, a->dtype,
                            ck_dtype_hint(a->typecode));
    int axis = -1;
    if (v[1] && v[1] != Py_None) {
        uint64_t mask;
        PyObject *t = PyTuple_Pack(1, v[1]);
        int rc = t && !PyTuple_Check(v[1]) ? ck_parse_axes(st, t, a->ndim, &mask) : -1;
        Py_XDECREF(t);
        if (rc < 0)
            return PyErr_Occurred() ? NULL
                                    : PyErr_Format(PyExc_TypeError, "cukit.%s(): axis must be an "
                                                   "integer or None", who);
        for (axis = 0; !(mask & (1ULL << axis)); axis++)
            ;
    }
    int otc = sum_type(a->typecode);
    if (v[2] && v[2] != Py_None && (otc = ck_tc_of(st, v[2])) < 0)
        return NULL;
    int atc = otc == CUKIT_TC_F16 || otc == CUKIT_TC_BF16 ? CUKIT_TC_F32 : otc;
    cukit_Array *src = a;
    Py_INCREF(src);
    if (axis < 0 && a->ndim > 1 && !(a->flags & CUKIT_ARRAY_C_CONTIG)) {
        Py_SETREF(src, cukit_array_copy(a));
        if (src == NULL)
            return NULL;
    }
    if (axis < 0 && a->ndim == 1)
        axis = 0;
    Py_ssize_t shape[CUKIT_MAXDIM];
    int ond = axis < 0 ? 1 : a->ndim;
    if (axis < 0)
        shape[0] = a->size;
    else
        memcpy(shape, a->shape, sizeof(Py_ssize_t) * (size_t)a->ndim);
    cukit_Array *out;
    if (v[3] && v[3] != Py_None) {
        out = (cukit_Array *)v[3];
        if (!Py_IS_TYPE(v[3], st->ArrayType) || !ck_math_tc(out->typecode) || out->ndim != ond ||
            memcmp(out->shape, shape, sizeof(Py_ssize_t) * (size_t)ond)) {
            Py_DECREF(src);
            return PyErr_Format(PyExc_ValueError, "cukit.%s(): out= must be a cukit.Array of the "
                                "result's shape", who);
        }
        otc = out->typecode;
        Py_INCREF(out);
    }
    else if ((out = ck_empty(st, a->device, otc, ond, shape)) == NULL) {
        Py_DECREF(src);
        return NULL;
    }
    splan plan;
    CUstream h = NULL;
    int rc = scan_plan(&plan, src, src == a ? axis : -1, out) < 0 ||
             ck_stream(st, v[4], a->device, NULL, &h) < 0 ? -1 : 0;
    if (rc == 0) {
        uint64_t key = (1ULL << 63) | (uint64_t)which << 2 | (uint64_t)src->typecode << 4 |
                       (uint64_t)otc << 9 | (uint64_t)(a->device->ordinal & 63) << 14;
        ck_kcache *cache = ck_reduce_cache(st, 1);
        const char *acc = ck_dtypes[atc].ctype_c;
        PyObject *sa[4] = {NULL, NULL, NULL, NULL};
        sa[0] = ck_scan_source(src->typecode, otc, acc, ck_acc_size(atc), NULL, which ? "uf_multiply(a, b)" : "uf_add(a, b)",
                            which ? "1" : "0", 0, 0, NULL);
        sa[1] = PyUnicode_FromFormat("cukit_%s.cu", who);
        sa[2] = PyTuple_New(0);
        rc = cache && sa[0] && sa[1] && sa[2]
                 ? scan_run(st, a->device, cache, key, sa, ck_acc_size(atc), &plan, h, (int)src->itemsize)
                 : -1;
        for (int i = 0; i < 3; i++)
            Py_XDECREF(sa[i]);
    }
    Py_DECREF(src);
    if (rc < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return (PyObject *)out;
}

static PyObject *
fn_cumsum(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return ck_scan_call(PyModule_GetState(m), 0, args, nargs, kwnames);
}

static PyObject *
fn_cumprod(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return ck_scan_call(PyModule_GetState(m), 1, args, nargs, kwnames);
}

/* ------------------------------------------------------------------ ScanKernel */

typedef struct {
    PyObject_HEAD
    cukit_state *st;     /* borrowed */
    int tc, exclusive;
    PyObject *source;    /* strong ref: the CUDA C */
    PyObject *file;      /* strong ref: str */
    PyObject *options;   /* strong ref: tuple */
    ck_kcache cache;
} ck_ScanKernel;

static PyObject *
sk_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    /* a Python subclass (InclusiveScanKernel) has no module: its base has */
    PyTypeObject *t = type;
    while (t && !(t->tp_flags & Py_TPFLAGS_HEAPTYPE && ((PyHeapTypeObject *)t)->ht_module))
        t = t->tp_base;
    cukit_state *st = t ? cukit_state_of_type(t) : NULL;
    if (st == NULL)
        return PyErr_Format(PyExc_TypeError, "ScanKernel: no module state");
    static char *kw[] = {"dtype", "scan_expr", "neutral", "exclusive", "name_prefix", "options",
                         "preamble", "devices", "ctype", NULL};
    PyObject *dtype, *neutral = Py_None, *name = NULL, *opts = Py_None, *pre = NULL, *devs = NULL;
    const char *expr, *ctype = NULL;
    int exclusive = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Os|OpOOOOz:ScanKernel", kw, &dtype, &expr,
                                     &neutral, &exclusive, &name, &opts, &pre, &devs, &ctype))
        return NULL;
    int tc = ck_tc_of(st, dtype);
    if (tc < 0)
        return NULL;
    /* A complex may be scanned in a type of its layout that the preamble defines
     * (pycuda::complex<T>), so scan_expr can use that type's functions. */
    if (ctype && tc != CUKIT_TC_C64 && tc != CUKIT_TC_C128)
        return PyErr_Format(PyExc_TypeError, "ScanKernel: ctype= names the C type a complex "
                            "dtype is scanned in (e.g. pycuda::complex<float>); dtype %s is not "
                            "complex: leave ctype out", ck_dtypes[tc].name);
    for (const char *c = ctype; c && *c; c++)
        if (!(isalnum((unsigned char)*c) || strchr("_: <>", *c)))
            return PyErr_Format(PyExc_ValueError, "ScanKernel: ctype='%s' must be a C type name, "
                                "e.g. 'pycuda::complex<float>'", ctype);
    if (exclusive && neutral == Py_None)
        return PyErr_Format(PyExc_ValueError, "ExclusiveScanKernel needs neutral= (the value "
                            "the first element of the result gets)");
    PyObject *ntext = neutral == Py_None ? PyUnicode_FromString("0") : PyObject_Str(neutral);
    PyObject *ptext = pre && pre != Py_None ? PyObject_Str(pre) : PyUnicode_FromString("");
    const char *nt = ntext ? PyUnicode_AsUTF8(ntext) : NULL, *pt = ptext ? PyUnicode_AsUTF8(ptext) : NULL;
    PyObject *head = pt ? PyUnicode_FromFormat("#line 1 \"preamble\"\n%s\n", pt) : NULL;
    const char *ht = head ? PyUnicode_AsUTF8(head) : NULL;
    PyObject *src = ht && nt ? ck_scan_source(tc, tc, ck_dtypes[tc].ctype, ck_dtypes[tc].size, ht, expr, nt, exclusive, 1,
                                           ctype)
                             : NULL;
    Py_XDECREF(ntext);
    Py_XDECREF(ptext);
    Py_XDECREF(head);
    if (src == NULL)
        return NULL;
    ck_ScanKernel *self = (ck_ScanKernel *)type->tp_alloc(type, 0); /* tracked by the GC */
    if (self == NULL) {
        Py_DECREF(src);
        return NULL;
    }
    self->st = st;
    self->tc = tc;
    self->exclusive = exclusive;
    self->source = src;
    self->file = PyUnicode_FromFormat("%s.cu", name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name)
                                                                             : "scan");
    self->options = opts != Py_None ? PySequence_Tuple(opts) : PyTuple_New(0);
    memset(&self->cache, 0, sizeof self->cache);
    if (self->file == NULL || self->options == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* k(input_ary, output_ary=None, stream=None): in place when output_ary is None. */
static PyObject *
sk_call(ck_ScanKernel *self, PyObject *args, PyObject *kwargs)
{
    cukit_state *st = self->st;
    static char *kw[] = {"input_ary", "output_ary", "stream", "allocator", "queue", "output", NULL};
    PyObject *in_o, *out_o = Py_None, *stream = Py_None, *alloc = NULL, *queue = NULL,
             *output = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOOO:scan", kw, &in_o, &out_o, &stream,
                                     &alloc, &queue, &output))
        return NULL;
    if (out_o == Py_None)
        out_o = output != Py_None ? output : in_o;
    if (!Py_IS_TYPE(in_o, st->ArrayType) || !Py_IS_TYPE(out_o, st->ArrayType))
        return PyErr_Format(PyExc_TypeError, "scan kernel: the input and output must be "
                            "cukit.Array objects");
    cukit_Array *a = (cukit_Array *)in_o, *o = (cukit_Array *)out_o;
    if (!cukit_array_live(a) || !cukit_array_live(o))
        return cukit_freed_error(), NULL;
    if (a->typecode != self->tc || o->typecode != self->tc)
        return PyErr_Format(PyExc_TypeError, "scan kernel: the arrays must be %s (the kernel's "
                            "dtype)", ck_dtypes[self->tc].name);
    if (a->ndim != 1 || o->ndim != 1 || a->size != o->size)
        return PyErr_Format(PyExc_ValueError, "scan kernel: the input and output must be 1-D "
                            "arrays of one size");
    splan plan;
    CUstream h = NULL;
    if (scan_plan(&plan, a, 0, o) < 0 || ck_stream(st, stream, a->device, NULL, &h) < 0)
        return NULL;
    uint64_t key = (1ULL << 63) | (uint64_t)(a->device->ordinal & 63) << 4;
    PyObject *sa[4] = {self->source, self->file, self->options, NULL};
    if (scan_run(st, a->device, &self->cache, key, sa, ck_dtypes[self->tc].size, &plan, h,
                 (int)a->itemsize) < 0)
        return NULL;
    return Py_NewRef(out_o);
}

static void
sk_dealloc(ck_ScanKernel *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    ck_kcache_clear(&self->cache);
    Py_CLEAR(self->source);
    Py_CLEAR(self->file);
    Py_CLEAR(self->options);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int
sk_traverse(ck_ScanKernel *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->cache.modules);
    return 0;
}

static PyMemberDef sk_members[] = {
    {"source", Py_T_OBJECT_EX, offsetof(ck_ScanKernel, source), Py_READONLY, "The CUDA C."},
    {NULL},
};

static PyType_Slot sk_slots[] = {
    {Py_tp_new, sk_new},
    {Py_tp_dealloc, sk_dealloc},
    {Py_tp_traverse, sk_traverse},
    {Py_tp_call, sk_call},
    {Py_tp_members, sk_members},
    {Py_tp_doc, "ScanKernel(dtype, scan_expr, neutral=None, exclusive=False, name_prefix='scan', "
                "options=None, preamble='', devices=None, ctype=None): the base of "
                "InclusiveScanKernel and ExclusiveScanKernel. ctype: the C type a complex dtype "
                "is scanned in, defined by the preamble (e.g. pycuda::complex<float>)."},
    {0, NULL},
};

static PyType_Spec sk_spec = {
    .name = "cukit.ScanKernel",
    .basicsize = sizeof(ck_ScanKernel),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = sk_slots,
};

static PyMethodDef scan_functions[] = {
    {"cumsum", (PyCFunction)(void (*)(void))fn_cumsum, METH_FASTCALL | METH_KEYWORDS,
     "cumsum(a, axis=None, dtype=None, out=None, *, stream=None) -> Array: numpy.cumsum."},
    {"cumprod", (PyCFunction)(void (*)(void))fn_cumprod, METH_FASTCALL | METH_KEYWORDS,
     "cumprod(a, axis=None, dtype=None, out=None, *, stream=None) -> Array: numpy.cumprod."},
    {NULL},
};

int
ck_scan_setup(PyObject *module, cukit_state *st)
{
    st->compute->ScanKernelType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &sk_spec, NULL);
    if (st->compute->ScanKernelType == NULL ||
        PyModule_AddObjectRef(module, "ScanKernel", (PyObject *)st->compute->ScanKernelType) < 0)
        return -1;
    return PyModule_AddFunctions(module, scan_functions);
}
