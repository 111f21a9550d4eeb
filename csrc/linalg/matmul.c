/* matmul.c - cukit.matmul and Array @: numpy's shapes, broadcasting and dtypes, planned onto strided GEMM batches */
#include "linalg/cublas.h"

#include <stdlib.h>
#include <string.h>

enum { BACKEND_AUTO = 0, BACKEND_CUBLAS = 1, BACKEND_CUKIT = 2 };
enum { LAST_NONE = 0, LAST_CUBLAS = 1, LAST_CUKIT = 2 };
static const char *const backend_names[] = {"auto", "cublas", "cukit"};
static const char *const last_names[] = {NULL, "cublas", "cukit"};

/* ------------------------------------------------------------------ operands */

/* a as an Array of typecode tc (a itself, or a cast queued on stream). New ref or NULL. */
static cukit_Array *
as_type(cukit_state *st, cukit_Array *a, int tc, PyObject *stream)
{
    if (a->typecode == tc)
        return (cukit_Array *)Py_NewRef(a);
    return (cukit_Array *)ck_astype(st, a, tc, stream);
}

/* A C-contiguous copy of a queued on h. New ref or NULL. */
static cukit_Array *
contiguous(cukit_state *st, cukit_Array *a, CUstream h)
{
    cukit_Array *c = cukit_array_new(st, a->device, a->dtype, a->typecode, a->itemsize, a->ndim,
                                     a->shape);
    if (c && cukit_strided_copy(a->device, cukit_array_ptr(c), c->strides, cukit_array_ptr(a),
                                a->strides, a->ndim, a->shape, a->itemsize, h) < 0)
        Py_CLEAR(c);
    return c;
}

/* The checked operand `obj` (number `which`, 0 or 1) of `who`. Borrowed or NULL. */
static cukit_Array *
operand(cukit_state *st, PyObject *obj, int which, const char *who)
{
    if (Py_IS_TYPE(obj, st->ArrayType)) {
        cukit_Array *a = (cukit_Array *)obj;
        if (!cukit_array_live(a)) {
            cukit_freed_error();
            return NULL;
        }
        if (a->ndim == 0) {
            PyErr_Format(PyExc_ValueError, "%s: operand %d is 0-d; matmul takes arrays of 1 or "
                         "more dimensions (use * to scale by a scalar)", who, which);
            return NULL;
        }
        return a;
    }
    if (PyLong_Check(obj) || PyFloat_Check(obj) || PyComplex_Check(obj))
        PyErr_Format(PyExc_ValueError, "%s: operand %d is a scalar; matmul takes arrays of 1 or "
                     "more dimensions (use * to scale by a scalar)", who, which);
    else
        PyErr_Format(PyExc_TypeError, "%s: operand %d is a %.100s; cukit multiplies device "
                     "arrays: pass cukit.to_device(x)", who, which, Py_TYPE(obj)->tp_name);
    return NULL;
}

/* ------------------------------------------------------------------ the plan */

typedef struct {
    int nb;                           /* batch dimensions after merging */
    long long bshape[CUKIT_MAXDIM];
    long long bstride[3][CUKIT_MAXDIM]; /* elements, for A, B, C */
} batches;

/* Merge batch dimensions each operand walks with one stride, dropping length-1 ones. */
static void
merge_batches(batches *B)
{
    int out = 0;
    for (int d = 0; d < B->nb; d++) {
        if (B->bshape[d] == 1)
            continue;
        if (out > 0) {
            int ok = 1;
            for (int k = 0; k < 3; k++)
                if (B->bstride[k][out - 1] != B->bstride[k][d] * B->bshape[d])
                    ok = 0;
            if (ok) {
                B->bshape[out - 1] *= B->bshape[d];
                for (int k = 0; k < 3; k++)
                    B->bstride[k][out - 1] = B->bstride[k][d];
                continue;
            }
        }
        B->bshape[out] = B->bshape[d];
        for (int k = 0; k < 3; k++)
            B->bstride[k][out] = B->bstride[k][d];
        out++;
    }
    B->nb = out;
}

/* Run every GEMM of the plan on one path: the last batch dimension is the GEMM's own
 * batch, the others an odometer here. 0 / -1. */
static int
run_batches(cukit_state *st, cukit_Device *dev, cukit_gemm *g, const batches *B, int use_cublas,
            CUstream h)
{
    CUdeviceptr a0 = g->a, b0 = g->b, c0 = g->c;
    long long isz = cukit_typecode_size(g->tc);
    int outer = B->nb > 0 ? B->nb - 1 : 0;
    long long idx[CUKIT_MAXDIM] = {0};
    g->batch = B->nb > 0 ? B->bshape[B->nb - 1] : 1;
    g->sa[2] = B->nb > 0 ? B->bstride[0][B->nb - 1] : 0;
    g->sb[2] = B->nb > 0 ? B->bstride[1][B->nb - 1] : 0;
    g->sc[2] = B->nb > 0 ? B->bstride[2][B->nb - 1] : 0;
    for (;;) {
        long long oa = 0, ob = 0, oc = 0;
        for (int d = 0; d < outer; d++) {
            oa += idx[d] * B->bstride[0][d];
            ob += idx[d] * B->bstride[1][d];
            oc += idx[d] * B->bstride[2][d];
        }
        g->a = a0 + (CUdeviceptr)(oa * isz);
        g->b = b0 + (CUdeviceptr)(ob * isz);
        g->c = c0 + (CUdeviceptr)(oc * isz);
        if ((use_cublas ? cukit_gemm_cublas(st, dev, g, h, st->linalg->tf32)
                        : cukit_gemm_run(st, dev, g, h)) < 0)
            return -1;
        int d = outer - 1;
        while (d >= 0 && ++idx[d] == B->bshape[d])
            idx[d--] = 0;
        if (d < 0)
            return 0;
    }
}

/* Whether cuBLAS runs this call: the switch, the backend, the library, the dtype. With
 * the backend forced to cuBLAS and no library: -1 with NotSupportedError. */
static int
choose_cublas(cukit_state *st, int tc)
{
    cukit_linalg_state *L = st->linalg;
    if (L->backend == BACKEND_CUKIT || !cukit_gemm_cublas_supports(tc))
        return 0;
    const char *backend = cukit_backend_name();
    int emulated = backend && strcmp(backend, "emulator") == 0;
    if (L->backend == BACKEND_CUBLAS) {
        if (emulated) {
            PyErr_SetString(st->exc[CUKIT_EXC_NOT_SUPPORTED],
                            "matmul: the backend is set to cuBLAS, which needs a GPU; cukit "
                            "runs on its CPU emulator here (set_matmul_backend('auto') uses "
                            "cukit's own GEMM)");
            return -1;
        }
        return cukit_cublas_load(st) < 0 ? -1 : 1;
    }
    if (emulated)
        return 0;
    if (cukit_cublas_available(st))
        return 1;
    if (!L->warned) {
        L->warned = 1;
        cukit_cublas_load(st); /* for its message */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *why = value ? PyObject_Str(value) : NULL;
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        PyErr_Clear();
        int w = PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                                 "cukit.matmul runs on cukit's own GEMM, slower than cuBLAS: %S",
                                 why ? why : Py_None);
        Py_XDECREF(why);
        if (w < 0)
            return -1;
    }
    return 0;
}

/* The result dtype by numpy's promotion, for the dtypes a GEMM computes. -1 with TypeError. */
static int
result_type(cukit_Array *a, cukit_Array *b, const char *who)
{
    int tc = a->typecode == b->typecode ? a->typecode
             : ck_math_tc(a->typecode) && ck_math_tc(b->typecode) ? ck_promote(a->typecode, b->typecode)
                                                                    : -1;
    if (tc < 0) {
        PyErr_Format(PyExc_TypeError, "%s: no common dtype for %S and %S; cast one with astype()",
                     who, a->dtype, b->dtype);
        return -1;
    }
    if (!cukit_gemm_supports(tc)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: dtype %s is not supported (matmul takes float16, bfloat16, float32, "
                     "float64, complex64, complex128 and the integer dtypes); cast with astype()",
                     who, cukit_typecode_name(tc));
        return -1;
    }
    return tc;
}

/* 0 when out (may be NULL) can take the result, else -1 with the reason. */
static int
check_out(cukit_state *st, PyObject *out, cukit_Device *dev, int tc, int ndim,
          const Py_ssize_t *shape, const char *who)
{
    if (out == NULL || out == Py_None)
        return 0;
    if (!Py_IS_TYPE(out, st->ArrayType)) {
        PyErr_Format(PyExc_TypeError, "%s: out= must be a cukit.Array, not %.100s", who,
                     Py_TYPE(out)->tp_name);
        return -1;
    }
    cukit_Array *o = (cukit_Array *)out;
    if (!cukit_array_live(o))
        return cukit_freed_error();
    if (o->device != dev) {
        PyErr_Format(PyExc_ValueError, "%s: out= is on device %d, the operands on device %d",
                     who, o->device->ordinal, dev->ordinal);
        return -1;
    }
    if (o->ndim != ndim || memcmp(o->shape, shape, sizeof(Py_ssize_t) * (size_t)ndim) != 0) {
        PyObject *want = PyTuple_New(ndim), *have = cukit_array_shape(o);
        for (int i = 0; want && i < ndim; i++)
            PyTuple_SET_ITEM(want, i, PyLong_FromSsize_t(shape[i]));
        if (want && have)
            PyErr_Format(PyExc_ValueError, "%s: out= has shape %R; the result has shape %R",
                         who, have, want);
        Py_XDECREF(want);
        Py_XDECREF(have);
        return -1;
    }
    if (o->typecode != tc) {
        PyErr_Format(PyExc_TypeError, "%s: out= has dtype %S; the result's dtype is %s (pass "
                     "an out= of that dtype, or cast the result with astype())",
                     who, o->dtype, cukit_typecode_name(tc));
        return -1;
    }
    if (o->flags & CUKIT_ARRAY_READONLY) {
        PyErr_Format(PyExc_ValueError, "%s: out= is read-only", who);
        return -1;
    }
    return 0;
}

/* 1 when x and y may share memory (the same buffer or imported base). */
static int
shares(const cukit_Array *x, const cukit_Array *y)
{
    return x->buffer ? x->buffer == y->buffer : x->base == y->base;
}

/* ------------------------------------------------------------------ matmul */

/* The sizes of one product: m x k times k x n at the core, nb batch dimensions (a's
 * last na and b's last nbb of them broadcast), and the result's shape. A 1-D
 * operand's core dimension is dropped from the result as numpy does (a_1d, b_1d). */
typedef struct {
    long long m, n, k;
    int a_1d, b_1d;
    int na, nbb, nb;
    int rnd;                         /* the result's dimensions */
    Py_ssize_t rshape[CUKIT_MAXDIM]; /* the result's shape */
} sizes;

/* numpy's shape rules for a @ b into *z: 0, or -1 with ValueError naming `who`. */
static int
matmul_sizes(const cukit_Array *a, const cukit_Array *b, sizes *z, const char *who)
{
    /* Core dimensions: a 1-D a is a row (1, k), a 1-D b a column (k, 1). */
    z->a_1d = a->ndim == 1;
    z->b_1d = b->ndim == 1;
    z->m = z->a_1d ? 1 : a->shape[a->ndim - 2];
    z->k = a->shape[a->ndim - 1];
    long long kb = z->b_1d ? b->shape[0] : b->shape[b->ndim - 2];
    z->n = z->b_1d ? 1 : b->shape[b->ndim - 1];
    if (z->k != kb) {
        PyErr_Format(PyExc_ValueError, "%s: shapes not aligned: operand 0 has %lld columns "
                     "(its last dimension), operand 1 has %lld rows (%s)",
                     who, z->k, kb, z->b_1d ? "its length" : "its second-to-last dimension");
        return -1;
    }
    int na = z->na = a->ndim > 2 ? a->ndim - 2 : 0, nbb = z->nbb = b->ndim > 2 ? b->ndim - 2 : 0;
    int nb = z->nb = na > nbb ? na : nbb;
    for (int d = 0; d < nb; d++) {
        long long sa = d - (nb - na) >= 0 ? a->shape[d - (nb - na)] : 1;
        long long sb = d - (nb - nbb) >= 0 ? b->shape[d - (nb - nbb)] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            PyErr_Format(PyExc_ValueError, "%s: the batch dimensions do not broadcast: "
                         "%lld against %lld (dimension %d of the batch)", who, sa, sb, d);
            return -1;
        }
        z->rshape[d] = sa == 1 ? sb : sa;
    }
    z->rnd = nb;
    if (!z->a_1d)
        z->rshape[z->rnd++] = z->m;
    if (!z->b_1d)
        z->rshape[z->rnd++] = z->n;
    if (z->rnd > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "%s: the result would have %d dimensions", who, z->rnd);
        return -1;
    }
    return 0;
}

/* The GEMM *g and its merged batches *B for c = ca @ cb (of typecode tc, the sizes
 * in z), in elements of each array's strides. */
static void
describe(const sizes *z, int tc, const cukit_Array *ca, const cukit_Array *cb,
         const cukit_Array *c, cukit_gemm *g, batches *B)
{
    long long is = ca->itemsize, isc = c->itemsize;
    int nb = z->nb;
    *g = (cukit_gemm){.tc = tc, .m = z->m, .n = z->n, .k = z->k, .batch = 1};
    g->sa[0] = z->a_1d ? 0 : ca->strides[ca->ndim - 2] / is;
    g->sa[1] = ca->strides[ca->ndim - 1] / is;
    g->sb[0] = cb->strides[cb->ndim - (cb->ndim == 1 ? 1 : 2)] / is;
    g->sb[1] = cb->ndim == 1 ? 0 : cb->strides[cb->ndim - 1] / is;
    g->sc[0] = z->a_1d ? 0 : c->strides[nb] / isc;
    g->sc[1] = z->b_1d ? 0 : c->strides[c->ndim - 1] / isc;
    if (z->a_1d)
        g->sa[0] = z->k;  /* one row: any stride, never used */
    if (z->b_1d)
        g->sb[1] = 1, g->sc[1] = 1;
    if (z->a_1d)
        g->sc[0] = z->n;
    for (int d = 0; d < nb; d++) {
        int da = d - (nb - z->na), db = d - (nb - z->nbb);
        B->bshape[d] = z->rshape[d];
        B->bstride[0][d] = da >= 0 && ca->shape[da] != 1 ? ca->strides[da] / is : 0;
        B->bstride[1][d] = db >= 0 && cb->shape[db] != 1 ? cb->strides[db] / is : 0;
        B->bstride[2][d] = c->strides[d] / isc;
    }
    B->nb = nb;
    merge_batches(B);
    g->a = cukit_array_ptr(ca);
    g->b = cukit_array_ptr(cb);
    g->c = cukit_array_ptr(c);
}

/* numpy's matmul of two device arrays into out (NULL: a new array), on stream. New ref. */
static PyObject *
matmul(cukit_state *st, PyObject *ao, PyObject *bo, PyObject *out, PyObject *stream,
       const char *who)
{
    cukit_Array *a = operand(st, ao, 0, who), *b = a ? operand(st, bo, 1, who) : NULL;
    if (b == NULL)
        return NULL;
    if (a->device != b->device)
        return PyErr_Format(PyExc_ValueError, "%s: the operands are on devices %d and %d; move "
                            "one with .to(device)", who, a->device->ordinal, b->device->ordinal);
    cukit_Device *dev = a->device;
    int tc = result_type(a, b, who);
    if (tc < 0)
        return NULL;
    sizes z;
    if (matmul_sizes(a, b, &z, who) < 0)
        return NULL;
    batches B;
    if (check_out(st, out, dev, tc, z.rnd, z.rshape, who) < 0)
        return NULL;

    PyObject *result = NULL;
    cukit_Array *ca = NULL, *cb = NULL, *c = NULL;
    CUstream h;
    if (ck_stream(st, stream, dev, NULL, &h) < 0)
        return NULL;
    ca = as_type(st, a, tc, stream);
    cb = ca ? as_type(st, b, tc, stream) : NULL;
    if (cb == NULL)
        goto done;
    /* k == 0 gives zeros, which cukit's own GEMM writes (cuBLAS takes no empty k). */
    int use_cublas = z.k == 0 ? 0 : choose_cublas(st, tc);
    if (use_cublas < 0)
        goto done;
    /* Strides that are not whole elements (possible in a CUDA Array Interface import). */
    for (int which = 0; which < 2; which++) {
        cukit_Array **x = which ? &cb : &ca;
        for (int d = 0; d < (*x)->ndim; d++)
            if ((*x)->strides[d] % (*x)->itemsize) {
                cukit_Array *t = contiguous(st, *x, h);
                if (t == NULL)
                    goto done;
                Py_SETREF(*x, t);
                break;
            }
    }
    cukit_Array *o = out && out != Py_None ? (cukit_Array *)out : NULL;
    /* Write straight into out= unless it may overlap an input or cuBLAS cannot write
     * its layout; else into a new array copied to out at the end. */
    int direct = o && !shares(o, a) && !shares(o, b);
    /* bfloat16 is not in the compute layer's dtype table (no array math on it): its
     * result is made from the operand's dtype */
    c = direct               ? (cukit_Array *)Py_NewRef(o)
        : tc == CUKIT_TC_BF16 ? cukit_array_create(st, dev, z.rnd, z.rshape, ca->dtype)
                              : (cukit_Array *)ck_empty_out(st, dev, tc, z.rnd, z.rshape, stream);
    if (c == NULL)
        goto done;
    if (c->size == 0) {
        result = (PyObject *)Py_NewRef(o ? o : c);
        goto done;
    }
    for (int pass = 0; pass < 2; pass++) {
        cukit_gemm g;
        describe(&z, tc, ca, cb, c, &g, &B);
        if (use_cublas) {
            cukit_gemm probe = g;
            probe.batch = B.nb ? B.bshape[B.nb - 1] : 1;
            probe.sa[2] = B.nb ? B.bstride[0][B.nb - 1] : 0;
            probe.sb[2] = B.nb ? B.bstride[1][B.nb - 1] : 0;
            probe.sc[2] = B.nb ? B.bstride[2][B.nb - 1] : 1;
            if (!cukit_gemm_cublas_layout(&probe)) {
                if (pass == 1) {
                    PyErr_SetString(PyExc_RuntimeError, "matmul: no cuBLAS layout after copying "
                                    "the operands (a bug in cukit)");
                    goto done;
                }
                /* Copy the inputs cuBLAS cannot read; write into a new array. */
                cukit_Array *t;
                if ((t = contiguous(st, ca, h)) == NULL)
                    goto done;
                Py_SETREF(ca, t);
                if ((t = contiguous(st, cb, h)) == NULL)
                    goto done;
                Py_SETREF(cb, t);
                if (c == o) {
                    Py_SETREF(c, ck_empty(st, dev, tc, z.rnd, z.rshape));
                    if (c == NULL)
                        goto done;
                }
                continue;
            }
        }
        if (run_batches(st, dev, &g, &B, use_cublas, h) < 0)
            goto done;
        break;
    }
    st->linalg->last = use_cublas ? LAST_CUBLAS : LAST_CUKIT;
    if (o && c != o && cukit_strided_copy(dev, cukit_array_ptr(o), o->strides, cukit_array_ptr(c),
                                          c->strides, c->ndim, c->shape, c->itemsize, h) < 0)
        goto done;
    if ((cukit_capture_keep(st, stream, (PyObject *)ca) < 0 || /* None: the current stream */
         cukit_capture_keep(st, stream, (PyObject *)cb) < 0 ||
         cukit_capture_keep(st, stream, (PyObject *)c) < 0))
        goto done;
    result = Py_NewRef(o ? (PyObject *)o : (PyObject *)c);
done:
    Py_XDECREF(ca);
    Py_XDECREF(cb);
    Py_XDECREF(c);
    return result;
}

/* hooks.array_matmul: a @ b (one of them an Array). */
static PyObject *
array_matmul(cukit_state *st, PyObject *a, PyObject *b)
{
    return matmul(st, a, b, NULL, NULL, "a @ b");
}

/* ------------------------------------------------------------------ module functions */

static PyObject *
fn_matmul(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "b", "out", "stream", NULL};
    PyObject *a, *b, *out = Py_None, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O$O:matmul", kwlist, &a, &b, &out, &stream))
        return NULL;
    return matmul(PyModule_GetState(m), a, b, out, stream, "cukit.matmul()");
}

/* _matmul_config(*, backend=None, tf32=None) -> dict of the settings (before the change)
 * and what the last matmul ran on. */
static PyObject *
fn_matmul_config(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"backend", "tf32", NULL};
    PyObject *backend = Py_None, *tf32 = Py_None;
    cukit_state *st = PyModule_GetState(m);
    cukit_linalg_state *L = st->linalg;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OO:_matmul_config", kwlist, &backend, &tf32))
        return NULL;
    int version = 0;
    const char *path = cukit_cublas_path(&version);
    PyObject *r = Py_BuildValue("{sssOszszsi}", "backend", backend_names[L->backend],
                                "tf32", L->tf32 ? Py_True : Py_False, "last",
                                last_names[L->last], "cublas", path, "cublas_version",
                                version);
    if (r == NULL)
        return NULL;
    if (backend != Py_None) {
        int i = 0;
        while (i < 3 && !(PyUnicode_Check(backend) &&
                          PyUnicode_CompareWithASCIIString(backend, backend_names[i]) == 0))
            i++;
        if (i == 3) {
            Py_DECREF(r);
            return PyErr_Format(PyExc_ValueError, "matmul backend must be 'auto', 'cublas' or "
                                "'cukit', not %R", backend);
        }
        L->backend = i;
    }
    if (tf32 != Py_None) {
        int on = PyObject_IsTrue(tf32);
        if (on < 0) {
            Py_DECREF(r);
            return NULL;
        }
        L->tf32 = on;
    }
    return r;
}

static PyMethodDef functions[] = {
    {"matmul", (PyCFunction)(void (*)(void))fn_matmul, METH_VARARGS | METH_KEYWORDS,
     "matmul(a, b, out=None, *, stream=None) -> Array: numpy's matmul on the device (cuBLAS, "
     "or cukit's own GEMM where cuBLAS is missing)."},
    {"_matmul_config", (PyCFunction)(void (*)(void))fn_matmul_config,
     METH_VARARGS | METH_KEYWORDS,
     "_matmul_config(*, backend=None, tf32=None) -> dict: the matmul switches (as they were) "
     "and the path the last matmul took."},
    {NULL},
};

int
cukit_linalg_setup(PyObject *module, cukit_state *st)
{
    cukit_linalg_state *L = st->linalg;
    st->hooks.array_matmul = array_matmul;
    const char *env = getenv("CUKIT_MATMUL");
    for (int i = 0; env && i < 3; i++)
        if (strcmp(env, backend_names[i]) == 0)
            L->backend = i;
    return PyModule_AddFunctions(module, functions);
}
