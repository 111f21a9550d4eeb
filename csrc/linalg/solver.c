/* solver.c - the factorizations under cukit.linalg: stacked operands, cuSOLVER or cukit's own kernels (kernels/solver.cu) */
#include "linalg/solver.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

enum { LAST_CUSOLVER = 1, LAST_CUKIT = 2 };
static const char *const backend_names[] = {"auto", "cusolver", "cukit"};
static const char *const last_names[] = {NULL, "cusolver", "cukit"};

/* ------------------------------------------------------------------ operands */

/* LAPACK's letter of each element type, naming kernels/solver.cu's kernels. */
static char
letter(int tc)
{
    return tc == CUKIT_TC_F32 ? 's' : tc == CUKIT_TC_F64 ? 'd' : tc == CUKIT_TC_C64 ? 'c' : 'z';
}

/* The real type of tc's elements (the type of eigenvalues and singular values). */
static int
real_of(int tc)
{
    return tc == CUKIT_TC_C64 ? CUKIT_TC_F32 : tc == CUKIT_TC_C128 ? CUKIT_TC_F64 : tc;
}

/* The stack `obj` (..., m, n) checked, its sizes in *J. square: m must equal n.
 * Borrowed ref or NULL. */
static cukit_Array *
operand(cukit_state *st, PyObject *obj, int square, PyObject *stream, const char *who,
        solver_job *J)
{
    if (!Py_IS_TYPE(obj, st->ArrayType))
        return (cukit_Array *)PyErr_Format(PyExc_TypeError, "%s: the operand must be a "
                                           "cukit.Array, not %.100s", who, Py_TYPE(obj)->tp_name);
    cukit_Array *a = (cukit_Array *)obj;
    if (!cukit_array_live(a))
        return cukit_freed_error(), NULL;
    int tc = a->typecode;
    if (tc != CUKIT_TC_F32 && tc != CUKIT_TC_F64 && tc != CUKIT_TC_C64 && tc != CUKIT_TC_C128)
        return (cukit_Array *)PyErr_Format(PyExc_TypeError, "%s: dtype %S is not supported "
                                           "(float32, float64, complex64, complex128)", who,
                                           a->dtype);
    if (a->ndim < 2)
        return (cukit_Array *)PyErr_Format(PyExc_ValueError, "%s: %d-dimensional array given; "
                                           "the array must be at least two-dimensional", who,
                                           a->ndim);
    J->dev = a->device;
    J->tc = tc;
    J->m = a->shape[a->ndim - 2];
    J->n = a->shape[a->ndim - 1];
    J->nb = a->ndim - 2;
    J->batch = 1;
    for (int d = 0; d < J->nb; d++)
        J->batch *= (J->bshape[d] = a->shape[d]);
    if (square && J->m != J->n)
        return (cukit_Array *)PyErr_Format(PyExc_ValueError, "%s: the last two dimensions of "
                                           "the array must be square, not %lld x %lld", who,
                                           J->m, J->n);
    if (J->m > 46340 || J->n > 46340 || J->batch > INT_MAX)
        return (cukit_Array *)PyErr_Format(PyExc_ValueError, "%s: %lld x %lld matrices (%lld "
                                           "of them) are past what cukit factorizes", who, J->m,
                                           J->n, J->batch);
    if (ck_stream(st, stream, J->dev, NULL, &J->h) < 0)
        return NULL;
    return a;
}

/* A C-contiguous copy of a (checked by operand()) that a factorization may overwrite.
 * New ref or NULL. */
static cukit_Array *
copy_of(cukit_state *st, cukit_Array *a, const solver_job *J)
{
    cukit_Array *c = ck_empty(st, a->device, a->typecode, a->ndim, a->shape);
    if (c && a->size && cukit_strided_copy(a->device, cukit_array_ptr(c), c->strides,
                                           cukit_array_ptr(a), a->strides, a->ndim, a->shape,
                                           a->itemsize, J->h) < 0)
        Py_CLEAR(c);
    return c;
}

/* operand() and a copy the factorization may overwrite. New ref or NULL. */
static cukit_Array *
load(cukit_state *st, PyObject *obj, int square, PyObject *stream, const char *who,
     solver_job *J)
{
    cukit_Array *a = operand(st, obj, square, stream, who, J);
    return a ? copy_of(st, a, J) : NULL;
}

/* a (checked by operand()) for reading only: a itself when C-contiguous, else a copy.
 * New ref or NULL. */
static cukit_Array *
readable(cukit_state *st, cukit_Array *a, const solver_job *J)
{
    return a->flags & CUKIT_ARRAY_C_CONTIG ? (cukit_Array *)Py_NewRef(a) : copy_of(st, a, J);
}

/* A new array of typecode tc shaped (J's stack..., d0, d1), with `tail` of the two
 * trailing dimensions (0, 1 or 2). New ref or NULL. */
static cukit_Array *
output(cukit_state *st, const solver_job *J, int tc, int tail, long long d0, long long d1)
{
    Py_ssize_t shape[CUKIT_MAXDIM + 2];
    memcpy(shape, J->bshape, sizeof(Py_ssize_t) * (size_t)J->nb);
    shape[J->nb] = (Py_ssize_t)d0;
    shape[J->nb + 1] = (Py_ssize_t)d1;
    return ck_empty(st, J->dev, tc, J->nb + tail, shape);
}

int
cukit_solver_launch(cukit_state *st, const solver_job *J, const char *name, unsigned gy,
                    void **args)
{
    char kernel[32];
    snprintf(kernel, sizeof kernel, "%s_%c", name, letter(J->tc));
    CUfunction func;
    if (cukit_builtin_kernel_file(J->dev, &st->linalg->solver_modules, NULL,
                                  "linalg/kernels/solver.cu", kernel, &func) < 0)
        return -1;
    if (J->batch == 0)
        return 0;
    long long most = J->m > J->n ? J->m : J->n;
    unsigned threads = 32;
    while (threads < most && threads < 256)
        threads *= 2;
    if (gy > 1)
        threads = 256;
    if (cukit_device_activate(J->dev) < 0)
        return -1;
    return cukit_builtin_launch_here(st, func, (unsigned)J->batch, gy, 1, threads, 1, J->h, args);
}

int
cukit_solver_tiles(cukit_state *st, const solver_job *J, const char *name, long long rows,
                   long long cols, void **args)
{
    char kernel[32];
    snprintf(kernel, sizeof kernel, "%s_%c", name, letter(J->tc));
    CUfunction func;
    if (cukit_builtin_kernel_file(J->dev, &st->linalg->solver_modules, NULL,
                                  "linalg/kernels/solver.cu", kernel, &func) < 0)
        return -1;
    long long across = (cols + 31) / 32, down = (rows + 31) / 32;
    if (J->batch == 0 || across == 0 || down == 0)
        return 0;
    if (across * J->batch > INT_MAX || down > 65535) {
        PyErr_Format(PyExc_ValueError, "linalg: %lld matrices of %lld x %lld are past what "
                     "cukit's layout kernels take", J->batch, rows, cols);
        return -1;
    }
    if (cukit_device_activate(J->dev) < 0)
        return -1;
    return cukit_builtin_launch_here(st, func, (unsigned)(across * J->batch), (unsigned)down, 1,
                                     32, 8, J->h, args);
}

/* small_solve's threads per block for tc (kernels/solver.cu's SMALL_BLOCK_<letter>). */
static unsigned
small_block(int tc)
{
    return tc == CUKIT_TC_F32 ? 128 : tc == CUKIT_TC_C128 ? 32 : 64;
}

int
cukit_solver_small(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr b,
                   CUdeviceptr x, CUdeviceptr info, long long k)
{
    char kernel[32];
    snprintf(kernel, sizeof kernel, "small_solve_%c", letter(J->tc));
    CUfunction func;
    if (cukit_builtin_kernel_file(J->dev, &st->linalg->solver_modules, NULL,
                                  "linalg/kernels/solver.cu", kernel, &func) < 0)
        return -1;
    if (J->batch == 0)
        return 0;
    int n = (int)J->n, ki = (int)k, g = 1;
    while (g < n)
        g *= 2;
    long long batch = J->batch;
    unsigned block = small_block(J->tc), per = block / (unsigned)g;
    void *args[] = {&a, &b, &x, &info, &n, &ki, &g, &batch};
    if (cukit_device_activate(J->dev) < 0)
        return -1;
    return cukit_builtin_launch_here(st, func, (unsigned)((batch + per - 1) / per), 1, 1, block,
                                     1, J->h, args);
}

/* kernels/solver.cu's `name` for J's type, one block per matrix of the stack. */
static int
launch(cukit_state *st, const solver_job *J, const char *name, void **args)
{
    return cukit_solver_launch(st, J, name, 1, args);
}

/* Which path runs: 1 cuSOLVER, 0 cukit's own; -1 with an exception. Records it. */
static int
path(cukit_state *st, const solver_job *J)
{
    int lib = cukit_cusolver_choose(st);
    if (lib > 0 && (J->m == 0 || J->n == 0))
        lib = 0; /* nothing for the library to do: the kernels write the outputs */
    if (lib >= 0)
        st->linalg->solver_last = lib ? LAST_CUSOLVER : LAST_CUKIT;
    return lib;
}

/* 1 when J's systems (k right-hand sides) go to small_solve, recorded as cukit's own:
 * always for n, k <= 32 on cukit's own path, and for stacks of them on 'auto' (one
 * launch, where the libraries' batched LU takes a dozen). lib: path()'s answer. */
static int
use_small(cukit_state *st, const solver_job *J, int lib, long long k)
{
    if (J->n > 32 || k > 32 || (lib && (st->linalg->solver_backend != 0 || J->batch < 2)))
        return 0;
    st->linalg->solver_last = LAST_CUKIT;
    return 1;
}

/* ------------------------------------------------------------------ the functions */

/* _lu_factor(a, *, stream=None) -> (lu, piv, info): a (..., n, n) = P L U; piv (..., n)
 * int32, 0-based row swaps in order; info (batch,) int32, LAPACK's. */
static PyObject *
fn_lu_factor(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "stream", NULL};
    PyObject *ao, *stream = Py_None;
    cukit_state *st = PyModule_GetState(m);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:_lu_factor", kwlist, &ao, &stream))
        return NULL;
    solver_job J;
    cukit_Array *a = load(st, ao, 1, stream, "linalg", &J), *piv = NULL, *info = NULL;
    PyObject *r = NULL;
    if (a == NULL || (piv = output(st, &J, CUKIT_TC_I32, 1, J.n, 0)) == NULL ||
        (info = output(st, &J, CUKIT_TC_I32, 0, 0, 0)) == NULL)
        goto done;
    CUdeviceptr ap = cukit_array_ptr(a), pp = cukit_array_ptr(piv), ip = cukit_array_ptr(info);
    int n = (int)J.n, lib = path(st, &J);
    void *kargs[] = {&ap, &pp, &ip, &n};
    if (lib < 0 || (lib ? cukit_cusolver_lu(st, &J, ap, pp, ip) : launch(st, &J, "lu", kargs)) < 0)
        goto done;
    r = PyTuple_Pack(3, a, piv, info);
done:
    Py_XDECREF(a);
    Py_XDECREF(piv);
    Py_XDECREF(info);
    return r;
}

/* The LU and pivots _lu_factor made, checked against each other. */
static int
lu_operands(cukit_state *st, PyObject *luo, PyObject *pivo, cukit_Array **lu, cukit_Array **piv)
{
    if (!Py_IS_TYPE(luo, st->ArrayType) || !Py_IS_TYPE(pivo, st->ArrayType)) {
        PyErr_SetString(PyExc_TypeError, "linalg: the LU and pivots must be cukit.Arrays");
        return -1;
    }
    *lu = (cukit_Array *)luo;
    *piv = (cukit_Array *)pivo;
    if (!((*lu)->flags & CUKIT_ARRAY_C_CONTIG) || !((*piv)->flags & CUKIT_ARRAY_C_CONTIG) ||
        (*piv)->typecode != CUKIT_TC_I32 || (*lu)->ndim < 2 ||
        (*piv)->size * (*lu)->shape[(*lu)->ndim - 1] != (*lu)->size) {
        PyErr_SetString(PyExc_ValueError, "linalg: the LU and pivots are not _lu_factor's");
        return -1;
    }
    return 0;
}

/* _lu_solve(lu, piv, b, *, stream=None) -> x (..., n, k): A x = b from A's LU. */
static PyObject *
fn_lu_solve(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"lu", "piv", "b", "stream", NULL};
    PyObject *luo, *pivo, *bo, *stream = Py_None;
    cukit_state *st = PyModule_GetState(m);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|$O:_lu_solve", kwlist, &luo, &pivo, &bo,
                                     &stream))
        return NULL;
    cukit_Array *lu, *piv;
    if (lu_operands(st, luo, pivo, &lu, &piv) < 0)
        return NULL;
    solver_job J;
    cukit_Array *b = load(st, bo, 0, stream, "linalg.solve", &J);
    if (b == NULL)
        return NULL;
    long long n = lu->shape[lu->ndim - 1];
    if (J.m != n || J.batch * n * n != lu->size || b->typecode != lu->typecode) {
        Py_DECREF(b);
        return PyErr_Format(PyExc_ValueError, "linalg.solve: b's stack and rows (%lld) do not "
                            "match the matrices' (%lld)", J.m, n);
    }
    long long nrhs = J.n;
    CUdeviceptr ap = cukit_array_ptr(lu), pp = cukit_array_ptr(piv), bp = cukit_array_ptr(b);
    int ni = (int)n, ki = (int)nrhs, lib = path(st, &J);
    J.n = n; /* the matrices' size, for the kernel's threads and the library */
    void *kargs[] = {&ap, &pp, &bp, &ni, &ki};
    if (lib < 0 || (lib ? cukit_cusolver_lu_solve(st, &J, ap, pp, bp, nrhs)
                        : launch(st, &J, "lu_solve", kargs)) < 0)
        Py_CLEAR(b);
    return (PyObject *)b;
}

/* _lu_det(lu, piv, *, stream=None) -> (sign, logabs), each (batch,): det = sign *
 * exp(logabs), sign 0 and logabs -inf when singular. */
static PyObject *
fn_lu_det(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"lu", "piv", "stream", NULL};
    PyObject *luo, *pivo, *stream = Py_None;
    cukit_state *st = PyModule_GetState(m);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:_lu_det", kwlist, &luo, &pivo, &stream))
        return NULL;
    cukit_Array *lu, *piv;
    if (lu_operands(st, luo, pivo, &lu, &piv) < 0)
        return NULL;
    long long n = lu->shape[lu->ndim - 1];
    solver_job J = {.dev = lu->device, .tc = lu->typecode, .m = n, .n = n, .nb = 1};
    J.batch = 1;
    for (int d = 0; d < lu->ndim - 2; d++)
        J.batch *= lu->shape[d];
    J.bshape[0] = (Py_ssize_t)J.batch;
    if (ck_stream(st, stream, J.dev, NULL, &J.h) < 0)
        return NULL;
    PyObject *r = NULL;
    cukit_Array *sign = output(st, &J, J.tc, 0, 0, 0), *la = NULL;
    if (sign == NULL || (la = output(st, &J, real_of(J.tc), 0, 0, 0)) == NULL)
        goto done;
    CUdeviceptr ap = cukit_array_ptr(lu), pp = cukit_array_ptr(piv);
    CUdeviceptr sp = cukit_array_ptr(sign), lp = cukit_array_ptr(la);
    int ni = (int)n;
    void *kargs[] = {&ap, &pp, &sp, &lp, &ni};
    if (launch(st, &J, "lu_det", kargs) < 0)
        goto done;
    r = PyTuple_Pack(2, sign, la);
done:
    Py_XDECREF(sign);
    Py_XDECREF(la);
    return r;
}

/* _inv(a, *, stream=None) -> (x, info): x = a^-1 for each matrix of the stack; info
 * (batch,) int32, getrf's. */
static PyObject *
fn_inv(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "stream", NULL};
    PyObject *ao, *stream = Py_None, *r = NULL;
    cukit_state *st = PyModule_GetState(m);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:_inv", kwlist, &ao, &stream))
        return NULL;
    solver_job J;
    cukit_Array *a = operand(st, ao, 1, stream, "linalg.inv", &J);
    cukit_Array *f = NULL, *x = NULL, *info = NULL, *piv = NULL;
    if (a == NULL || (x = output(st, &J, J.tc, 2, J.n, J.n)) == NULL ||
        (info = output(st, &J, CUKIT_TC_I32, 0, 0, 0)) == NULL)
        goto done;
    int lib = path(st, &J), n = (int)J.n;
    if (lib < 0)
        goto done;
    CUdeviceptr xp = cukit_array_ptr(x), ip = cukit_array_ptr(info);
    if (use_small(st, &J, lib, J.n)) {
        if ((f = readable(st, a, &J)) == NULL ||
            cukit_solver_small(st, &J, cukit_array_ptr(f), 0, xp, ip, J.n) < 0)
            goto done;
    }
    else {
        if ((f = copy_of(st, a, &J)) == NULL)
            goto done;
        CUdeviceptr fp = cukit_array_ptr(f);
        if (lib) {
            if (cukit_cusolver_inv(st, &J, fp, xp, ip) < 0)
                goto done;
        }
        else {
            if ((piv = output(st, &J, CUKIT_TC_I32, 1, J.n, 0)) == NULL)
                goto done;
            CUdeviceptr pp = cukit_array_ptr(piv);
            void *fargs[] = {&fp, &pp, &ip, &n};
            void *eargs[] = {&xp, &n};
            void *sargs[] = {&fp, &pp, &xp, &n, &n};
            if (launch(st, &J, "lu", fargs) < 0 ||
                cukit_solver_tiles(st, &J, "eye_tiles", n, n, eargs) < 0 ||
                launch(st, &J, "lu_solve", sargs) < 0)
                goto done;
        }
    }
    r = PyTuple_Pack(2, x, info);
done:
    Py_XDECREF(f);
    Py_XDECREF(x);
    Py_XDECREF(info);
    Py_XDECREF(piv);
    return r;
}

/* _solve(a, b, *, stream=None) -> (x, info): a x = b for each matrix of the stack, a
 * (..., n, n), b (..., n, k) of the same stack and type; info (batch,) int32, getrf's. */
static PyObject *
fn_solve(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "b", "stream", NULL};
    PyObject *ao, *bo, *stream = Py_None, *r = NULL;
    cukit_state *st = PyModule_GetState(m);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:_solve", kwlist, &ao, &bo, &stream))
        return NULL;
    solver_job J, K;
    cukit_Array *a = operand(st, ao, 1, stream, "linalg.solve", &J), *b = NULL;
    cukit_Array *f = NULL, *x = NULL, *info = NULL, *piv = NULL;
    if (a == NULL || (b = operand(st, bo, 0, stream, "linalg.solve", &K)) == NULL)
        return NULL;
    if (K.m != J.n || K.batch != J.batch || K.tc != J.tc)
        return PyErr_Format(PyExc_ValueError, "linalg.solve: b's stack and rows (%lld) do not "
                            "match the matrices' (%lld)", K.m, J.n);
    long long k = K.n;
    if ((x = copy_of(st, b, &K)) == NULL || (info = output(st, &J, CUKIT_TC_I32, 0, 0, 0)) == NULL)
        goto done;
    int lib = path(st, &J), n = (int)J.n, ki = (int)k;
    if (lib < 0)
        goto done;
    CUdeviceptr xp = cukit_array_ptr(x), ip = cukit_array_ptr(info);
    if (use_small(st, &J, lib, k)) {
        /* x holds b: each thread reads its row before it writes it */
        if ((f = readable(st, a, &J)) == NULL ||
            cukit_solver_small(st, &J, cukit_array_ptr(f), xp, xp, ip, k) < 0)
            goto done;
    }
    else {
        if ((f = copy_of(st, a, &J)) == NULL ||
            (piv = output(st, &J, CUKIT_TC_I32, 1, J.n, 0)) == NULL)
            goto done;
        CUdeviceptr fp = cukit_array_ptr(f), pp = cukit_array_ptr(piv);
        void *fargs[] = {&fp, &pp, &ip, &n};
        void *sargs[] = {&fp, &pp, &xp, &n, &ki};
        if (lib ? cukit_cusolver_lu(st, &J, fp, pp, ip) < 0 ||
                      cukit_cusolver_lu_solve(st, &J, fp, pp, xp, k) < 0
                : launch(st, &J, "lu", fargs) < 0 || launch(st, &J, "lu_solve", sargs) < 0)
            goto done;
    }
    r = PyTuple_Pack(2, x, info);
done:
    Py_XDECREF(f);
    Py_XDECREF(x);
    Py_XDECREF(info);
    Py_XDECREF(piv);
    return r;
}

/* _cholesky(a, *, stream=None) -> (l, info): a = l l^H from a's lower triangle. */
static PyObject *
fn_cholesky(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "stream", NULL};
    PyObject *ao, *stream = Py_None;
    cukit_state *st = PyModule_GetState(m);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:_cholesky", kwlist, &ao, &stream))
        return NULL;
    solver_job J;
    cukit_Array *a = load(st, ao, 1, stream, "linalg.cholesky", &J), *info = NULL;
    PyObject *r = NULL;
    if (a == NULL || (info = output(st, &J, CUKIT_TC_I32, 0, 0, 0)) == NULL)
        goto done;
    CUdeviceptr ap = cukit_array_ptr(a), ip = cukit_array_ptr(info);
    int n = (int)J.n, lib = path(st, &J);
    void *kargs[] = {&ap, &ip, &n};
    if (lib < 0 ||
        (lib ? cukit_cusolver_cholesky(st, &J, ap, ip) : launch(st, &J, "cholesky", kargs)) < 0)
        goto done;
    r = PyTuple_Pack(2, a, info);
done:
    Py_XDECREF(a);
    Py_XDECREF(info);
    return r;
}

/* _qr(a, mode, *, stream=None) -> (q or None, r): mode 0 reduced (q m x k, r k x n),
 * 1 complete (q m x m, r m x n), 2 r only (k x n). */
static PyObject *
fn_qr(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "mode", "stream", NULL};
    PyObject *ao, *stream = Py_None;
    int mode;
    cukit_state *st = PyModule_GetState(m);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oi|$O:_qr", kwlist, &ao, &mode, &stream))
        return NULL;
    if (mode < 0 || mode > 2)
        return PyErr_Format(PyExc_ValueError, "_qr: mode %d is not 0, 1 or 2", mode);
    solver_job J;
    cukit_Array *in = operand(st, ao, 0, stream, "linalg.qr", &J), *a = NULL, *tau = NULL;
    cukit_Array *q = NULL, *r = NULL, *info = NULL;
    PyObject *res = NULL;
    if (in == NULL)
        return NULL;
    long long k = J.m < J.n ? J.m : J.n, kq = mode == 1 ? J.m : k, rows = mode == 1 ? J.m : k;
    int lib = path(st, &J);
    /* the library reads a (into a column-major copy); cukit's own kernels overwrite it */
    if (lib < 0 || (a = lib ? readable(st, in, &J) : copy_of(st, in, &J)) == NULL ||
        (tau = output(st, &J, J.tc, 1, k, 0)) == NULL ||
        (info = output(st, &J, CUKIT_TC_I32, 0, 0, 0)) == NULL ||
        (r = output(st, &J, J.tc, 2, rows, J.n)) == NULL ||
        (mode != 2 && (q = output(st, &J, J.tc, 2, J.m, kq)) == NULL))
        goto done;
    CUdeviceptr ap = cukit_array_ptr(a), tp = cukit_array_ptr(tau), rp = cukit_array_ptr(r);
    CUdeviceptr qp = q ? cukit_array_ptr(q) : 0;
    int mi = (int)J.m, ni = (int)J.n, kqi = (int)kq, ri = (int)rows;
    void *fargs[] = {&ap, &tp, &mi, &ni};
    void *rargs[] = {&ap, &rp, &mi, &ni, &ri};
    void *qargs[] = {&ap, &tp, &qp, &mi, &ni, &kqi};
    if (lib ? cukit_cusolver_qr(st, &J, ap, tp, qp, kq, rp, rows, cukit_array_ptr(info)) < 0
            : launch(st, &J, "qr", fargs) < 0 || launch(st, &J, "qr_r", rargs) < 0 ||
                  (q && launch(st, &J, "qr_q", qargs) < 0))
        goto done;
    res = PyTuple_Pack(2, q ? (PyObject *)q : Py_None, r);
done:
    Py_XDECREF(a);
    Py_XDECREF(tau);
    Py_XDECREF(q);
    Py_XDECREF(r);
    Py_XDECREF(info);
    return res;
}

/* _eigh(a, lower, vectors, *, stream=None) -> (w, v or None, info): the eigenvalues
 * ascending and the eigenvectors (columns) of Hermitian a read from one triangle. */
static PyObject *
fn_eigh(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "lower", "vectors", "stream", NULL};
    PyObject *ao, *stream = Py_None;
    int lower, vectors;
    cukit_state *st = PyModule_GetState(m);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Opp|$O:_eigh", kwlist, &ao, &lower, &vectors,
                                     &stream))
        return NULL;
    solver_job J;
    cukit_Array *a = load(st, ao, 1, stream, "linalg.eigh", &J), *w = NULL, *v = NULL;
    cukit_Array *info = NULL;
    PyObject *r = NULL;
    if (a == NULL || (w = output(st, &J, real_of(J.tc), 1, J.n, 0)) == NULL ||
        (info = output(st, &J, CUKIT_TC_I32, 0, 0, 0)) == NULL)
        goto done;
    int lib = path(st, &J);
    if (lib < 0)
        goto done;
    if (lib) {
        /* The library leaves the eigenvectors in a. */
        if (cukit_cusolver_eigh(st, &J, cukit_array_ptr(a), cukit_array_ptr(w),
                                cukit_array_ptr(info), lower, vectors) < 0)
            goto done;
        v = (cukit_Array *)Py_NewRef(a);
    }
    else {
        if ((v = output(st, &J, J.tc, 2, J.n, J.n)) == NULL)
            goto done;
        CUdeviceptr ap = cukit_array_ptr(a), wp = cukit_array_ptr(w), vp = cukit_array_ptr(v);
        CUdeviceptr ip = cukit_array_ptr(info);
        int n = (int)J.n;
        void *kargs[] = {&ap, &wp, &vp, &ip, &n, &lower};
        if (launch(st, &J, "eigh", kargs) < 0)
            goto done;
    }
    r = PyTuple_Pack(3, w, vectors ? (PyObject *)v : Py_None, info);
done:
    Py_XDECREF(a);
    Py_XDECREF(w);
    Py_XDECREF(v);
    Py_XDECREF(info);
    return r;
}

/* _svd(a, full, uv, *, stream=None) -> (u or None, s, vh or None, info), for m >= n
 * (cukit.linalg passes the conjugate transpose of a wide matrix). */
static PyObject *
fn_svd(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "full", "uv", "stream", NULL};
    PyObject *ao, *stream = Py_None;
    int full, uv;
    cukit_state *st = PyModule_GetState(m);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Opp|$O:_svd", kwlist, &ao, &full, &uv,
                                     &stream))
        return NULL;
    solver_job J;
    cukit_Array *a = load(st, ao, 0, stream, "linalg.svd", &J);
    cukit_Array *u = NULL, *s = NULL, *v = NULL, *vh = NULL, *info = NULL;
    PyObject *r = NULL;
    if (a == NULL)
        goto done;
    if (J.m < J.n) {
        PyErr_SetString(PyExc_ValueError, "_svd takes m >= n (a bug in cukit.linalg)");
        goto done;
    }
    long long mu = full ? J.m : J.n;
    if ((u = output(st, &J, J.tc, 2, J.m, mu)) == NULL ||
        (s = output(st, &J, real_of(J.tc), 1, J.n, 0)) == NULL ||
        (vh = output(st, &J, J.tc, 2, J.n, J.n)) == NULL ||
        (info = output(st, &J, CUKIT_TC_I32, 0, 0, 0)) == NULL)
        goto done;
    int lib = path(st, &J);
    if (lib < 0)
        goto done;
    if (lib) {
        if (cukit_cusolver_svd(st, &J, cukit_array_ptr(a), cukit_array_ptr(s),
                               cukit_array_ptr(u), cukit_array_ptr(vh), cukit_array_ptr(info),
                               full, uv) < 0)
            goto done;
    }
    else {
        /* u holds a in its first n columns (the rest are filled by the kernel). */
        Py_ssize_t us[3] = {u->strides[J.nb] * (Py_ssize_t)J.m, u->strides[J.nb],
                            u->itemsize};
        Py_ssize_t as[3] = {a->itemsize * (Py_ssize_t)(J.m * J.n),
                            a->itemsize * (Py_ssize_t)J.n, a->itemsize};
        Py_ssize_t sh[3] = {(Py_ssize_t)J.batch, (Py_ssize_t)J.m, (Py_ssize_t)J.n};
        if ((v = output(st, &J, J.tc, 2, J.n, J.n)) == NULL ||
            (J.batch * J.m * J.n > 0 &&
             cukit_strided_copy(J.dev, cukit_array_ptr(u), us, cukit_array_ptr(a), as, 3, sh,
                                a->itemsize, J.h) < 0))
            goto done;
        CUdeviceptr up = cukit_array_ptr(u), sp = cukit_array_ptr(s), vp = cukit_array_ptr(v);
        CUdeviceptr vhp = cukit_array_ptr(vh), ip = cukit_array_ptr(info);
        int mi = (int)J.m, ni = (int)J.n, mui = (int)mu;
        void *kargs[] = {&up, &sp, &vp, &vhp, &ip, &mi, &ni, &mui};
        if (launch(st, &J, "svd", kargs) < 0)
            goto done;
    }
    r = Py_BuildValue("(OOOO)", uv ? (PyObject *)u : Py_None, s, uv ? (PyObject *)vh : Py_None,
                      info);
done:
    Py_XDECREF(a);
    Py_XDECREF(u);
    Py_XDECREF(s);
    Py_XDECREF(v);
    Py_XDECREF(vh);
    Py_XDECREF(info);
    return r;
}

/* _solver_config(*, backend=None) -> dict: the backend (before the change), the path of
 * the last factorization, the library's path and version. */
static PyObject *
fn_solver_config(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"backend", NULL};
    PyObject *backend = Py_None;
    cukit_state *st = PyModule_GetState(m);
    cukit_linalg_state *L = st->linalg;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$O:_solver_config", kwlist, &backend))
        return NULL;
    int version = 0;
    const char *lib = cukit_cusolver_path(&version);
    PyObject *r = Py_BuildValue("{sssssssi}", "backend", backend_names[L->solver_backend],
                                "last", last_names[L->solver_last], "cusolver", lib,
                                "cusolver_version", version);
    if (r == NULL || backend == Py_None)
        return r;
    for (int i = 0; i < 3; i++)
        if (PyUnicode_Check(backend) &&
            PyUnicode_CompareWithASCIIString(backend, backend_names[i]) == 0) {
            L->solver_backend = i;
            return r;
        }
    Py_DECREF(r);
    return PyErr_Format(PyExc_ValueError, "linalg backend must be 'auto', 'cusolver' or "
                        "'cukit', not %R", backend);
}

#define FN(name, doc) \
    {#name, (PyCFunction)(void (*)(void))fn##name, METH_VARARGS | METH_KEYWORDS, doc}
static PyMethodDef functions[] = {
    FN(_lu_factor, "_lu_factor(a, *, stream=None) -> (lu, piv, info)"),
    FN(_lu_solve, "_lu_solve(lu, piv, b, *, stream=None) -> x"),
    FN(_lu_det, "_lu_det(lu, piv, *, stream=None) -> (sign, logabs)"),
    FN(_inv, "_inv(a, *, stream=None) -> (x, info)"),
    FN(_solve, "_solve(a, b, *, stream=None) -> (x, info)"),
    FN(_cholesky, "_cholesky(a, *, stream=None) -> (l, info)"),
    FN(_qr, "_qr(a, mode, *, stream=None) -> (q or None, r)"),
    FN(_eigh, "_eigh(a, lower, vectors, *, stream=None) -> (w, v or None, info)"),
    FN(_svd, "_svd(a, full, uv, *, stream=None) -> (u, s, vh, info), m >= n"),
    FN(_solver_config, "_solver_config(*, backend=None) -> dict: the factorizations' switch "
                       "(as it was), the last path and the library"),
    {NULL},
};

int
cukit_solver_setup(PyObject *module, cukit_state *st)
{
    const char *env = getenv("CUKIT_SOLVER");
    for (int i = 0; env && i < 3; i++)
        if (strcmp(env, backend_names[i]) == 0)
            st->linalg->solver_backend = i;
    return PyModule_AddFunctions(module, functions);
}
