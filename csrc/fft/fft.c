/* fft.c - cukit._fft: one transform along one axis of any layout, on cuFFT or cukit's own kernels; the plan cache and the switches */
#include "fft/cufft.h"

#include <stdlib.h>
#include <string.h>

enum { BACKEND_AUTO = 0, BACKEND_CUFFT = 1, BACKEND_CUKIT = 2 };
static const char *const backend_names[] = {"auto", "cufft", "cukit"};
static const char *const last_names[] = {NULL, "cufft", "cukit"};
#define DEFAULT_MAX_PLANS 16
#define CAPSULE "cukit.fft_plan"

/* cuFFT's type of each kind, single [0] and double [1] precision, and its name in the
 * cache's keys. */
static const struct {
    int type[2];
    const char *name[2];
} kinds[] = {
    [FFT_C2C] = {{CUFFT_C2C, CUFFT_Z2Z}, {"C2C", "Z2Z"}},
    [FFT_R2C] = {{CUFFT_R2C, CUFFT_D2Z}, {"R2C", "D2Z"}},
    [FFT_C2R] = {{CUFFT_C2R, CUFFT_Z2D}, {"C2R", "Z2D"}},
};

/* ------------------------------------------------------------------ plans and their cache */

static void
plan_release(PyObject *capsule)
{
    fft_plan *p = PyCapsule_GetPointer(capsule, CAPSULE);
    if (p == NULL)
        return;
    PyObject *exc = PyErr_GetRaisedException();
    if (p->made && cukit_device_activate(p->dev) == 0)
        cukit_cufft_api.cufftDestroy(p->handle);
    PyErr_Clear();
    PyErr_SetRaisedException(exc);
    Py_XDECREF(p->bhat[0]);
    Py_XDECREF(p->bhat[1]);
    Py_XDECREF(p->dev);
    PyMem_Free(p);
}

/* A new plan (not yet in the cache) for the key's transform: `rank` dimensions `dims`
 * (cuFFT's N-D plans; cukit's own are 1-D). New ref: capsule, or NULL. */
static PyObject *
plan_make(cukit_state *st, cukit_Device *dev, int library, int kind, int dbl, int rank,
          const long long *dims, long long batch, long long inner)
{
    long long n = dims[rank - 1];
    fft_plan *p = PyMem_Calloc(1, sizeof *p);
    if (p == NULL)
        return PyErr_NoMemory();
    p->dev = (cukit_Device *)Py_NewRef(dev);
    PyObject *capsule = PyCapsule_New(p, CAPSULE, plan_release);
    if (capsule == NULL) {
        Py_DECREF(p->dev);
        PyMem_Free(p);
        return NULL;
    }
    if (library == FFT_OWN) {
        cukit_fft_own_plan(p, n);
        return capsule;
    }
    p->library = FFT_CUFFT;
    p->n = n;
    p->batch = batch;
    p->inner = inner;
    long long nn[3] = {dims[0], rank > 1 ? dims[1] : 0, rank > 2 ? dims[2] : 0};
    long long nin = kind == FFT_C2R ? n / 2 + 1 : n, nout = kind == FFT_R2C ? n / 2 + 1 : n;
    size_t work = 0;
    if (cukit_device_activate(dev) < 0 || CUFFT_CALL(st, cufftCreate, (&p->handle)) < 0)
        goto error;
    p->made = 1;
    /* One stride apart and `inner` transforms side by side, or contiguous ones. */
    if (CUFFT_CALL(st, cufftMakePlanMany64,
                   (p->handle, rank, nn, inner > 1 ? &nin : NULL, inner, inner > 1 ? 1 : nin,
                    inner > 1 ? &nout : NULL, inner, inner > 1 ? 1 : nout,
                    kinds[kind].type[dbl], batch, &work)) < 0)
        goto error;
    return capsule;
error:
    Py_DECREF(capsule);
    return NULL;
}

/* The plan for (device, kind, precision, dims, batch, stride, library) from the cache,
 * made and added (the oldest dropped past the bound) on a miss; the key's length is
 * an int for 1-D plans, a tuple of the dimensions for N-D ones. New ref: capsule, or
 * NULL. */
static PyObject *
plan_get(cukit_state *st, cukit_Device *dev, int library, int kind, int dbl, int rank,
         const long long *dims, long long batch, long long inner)
{
    long long n = dims[rank - 1];
    cukit_fft_state *F = st->fft;
    if (F->plans == NULL && (F->plans = PyDict_New()) == NULL)
        return NULL;
    /* cukit's own plans serve any batch and kind (their real transforms are complex ones). */
    PyObject *length = rank == 1 ? PyLong_FromLongLong(n) : PyTuple_New(rank);
    for (int d = 0; rank > 1 && length && d < rank; d++)
        PyTuple_SET_ITEM(length, d, PyLong_FromLongLong(dims[d]));
    PyObject *key = length == NULL ? NULL
                    : library == FFT_OWN
                        ? Py_BuildValue("(isNOOs)", dev->ordinal, kinds[FFT_C2C].name[dbl], length,
                                        Py_None, Py_None, "cukit")
                        : Py_BuildValue("(isNLLs)", dev->ordinal, kinds[kind].name[dbl], length,
                                        batch, inner, "cufft");
    if (key == NULL)
        return NULL;
    PyObject *plan = PyDict_GetItemWithError(F->plans, key);
    if (plan) {
        /* A hit moves to the end: the dict's order is the order of use. */
        Py_INCREF(plan);
        if (PyDict_DelItem(F->plans, key) < 0 || PyDict_SetItem(F->plans, key, plan) < 0)
            Py_CLEAR(plan);
        Py_DECREF(key);
        return plan;
    }
    if (PyErr_Occurred() ||
        (plan = plan_make(st, dev, library, kind, dbl, rank, dims, batch, inner)) == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    while (PyDict_GET_SIZE(F->plans) > 0 && PyDict_GET_SIZE(F->plans) >= F->max_plans) {
        Py_ssize_t pos = 0;
        PyObject *oldest, *value;
        PyDict_Next(F->plans, &pos, &oldest, &value);
        if (PyDict_DelItem(F->plans, oldest) < 0)
            goto error;
    }
    if (F->max_plans > 0 && PyDict_SetItem(F->plans, key, plan) < 0)
        goto error;
    Py_DECREF(key);
    return plan;
error:
    Py_DECREF(key);
    Py_DECREF(plan);
    return NULL;
}

/* ------------------------------------------------------------------ the path */

/* Whether cuFFT runs this call: the switch, the backend, the library. With the backend
 * forced to cuFFT and no library: -1 with NotSupportedError. */
static int
choose_cufft(cukit_state *st)
{
    cukit_fft_state *F = st->fft;
    if (F->backend == BACKEND_CUKIT)
        return 0;
    const char *backend = cukit_backend_name();
    int emulated = backend && strcmp(backend, "emulator") == 0;
    if (F->backend == BACKEND_CUFFT) {
        if (emulated) {
            PyErr_SetString(st->exc[CUKIT_EXC_NOT_SUPPORTED],
                            "fft: the backend is set to cuFFT, which needs a GPU; cukit runs "
                            "on its CPU emulator here (cukit.fft.set_backend('auto') uses "
                            "cukit's own kernels)");
            return -1;
        }
        return cukit_cufft_load(st) < 0 ? -1 : 1;
    }
    if (emulated)
        return 0;
    if (cukit_cufft_available(st))
        return 1;
    if (!F->warned) {
        F->warned = 1;
        cukit_cufft_load(st); /* for its message */
        PyObject *exc = PyErr_GetRaisedException();
        PyObject *why = exc ? PyObject_Str(exc) : NULL;
        Py_XDECREF(exc);
        PyErr_Clear();
        int w = PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                                 "cukit.fft runs on cukit's own kernels, slower than cuFFT: %S",
                                 why ? why : Py_None);
        Py_XDECREF(why);
        if (w < 0)
            return -1;
    }
    return 0;
}

/* One transform's operands: src (outer, nin, inner) contiguous, dst (outer, nout, inner). */
typedef struct {
    cukit_Device *dev;
    int kind, ctc, dbl;
    long long n, outer, inner;
    CUdeviceptr src, dst;
    int src_owned;  /* 1: src is cukit's copy, which a library may overwrite */
    double scale;
    int sign;
} job;

/* Multiply count elements at ptr (complex, or real for C2R) by scale in place. */
static int
rescale(cukit_state *st, const job *J, CUdeviceptr ptr, long long count, CUstream h)
{
    if (J->scale == 1.0)
        return 0;
    double sc = J->scale;
    void *args[] = {&ptr, &ptr, &count, &sc};
    return cukit_fft_own_launch(st, J->dev, J->kind == FFT_C2R ? "rscale" : "scale", J->ctc, count, h,
                          args);
}

static int
run_cufft(cukit_state *st, const job *J, CUstream h)
{
    long long batch = J->inner > 1 ? J->inner : J->outer, reps = J->inner > 1 ? J->outer : 1;
    PyObject *capsule = plan_get(st, J->dev, FFT_CUFFT, J->kind, J->dbl, 1, &J->n, batch,
                                 J->inner);
    if (capsule == NULL)
        return -1;
    fft_plan *p = PyCapsule_GetPointer(capsule, CAPSULE);
    long long cs = J->dbl ? 16 : 8, rs = cs / 2, h2 = J->n / 2 + 1;
    long long in_step = J->n * J->inner * cs, out_step = in_step;
    if (J->kind == FFT_R2C)
        in_step = J->n * J->inner * rs, out_step = h2 * J->inner * cs;
    if (J->kind == FFT_C2R)
        in_step = h2 * J->inner * cs, out_step = J->n * J->inner * rs;
    int rc = -1;
    if (cukit_device_activate(J->dev) < 0 || CUFFT_CALL(st, cufftSetStream, (p->handle, h)) < 0)
        goto done;
    for (long long o = 0; o < reps; o++) {
        void *in = (void *)(uintptr_t)(J->src + (CUdeviceptr)(o * in_step));
        void *out = (void *)(uintptr_t)(J->dst + (CUdeviceptr)(o * out_step));
        int dir = J->sign < 0 ? CUFFT_FORWARD : CUFFT_INVERSE, r;
        switch (J->kind * 2 + J->dbl) {
        case FFT_C2C * 2: r = CUFFT_CALL(st, cufftExecC2C, (p->handle, in, out, dir)); break;
        case FFT_C2C * 2 + 1: r = CUFFT_CALL(st, cufftExecZ2Z, (p->handle, in, out, dir)); break;
        case FFT_R2C * 2: r = CUFFT_CALL(st, cufftExecR2C, (p->handle, in, out)); break;
        case FFT_R2C * 2 + 1: r = CUFFT_CALL(st, cufftExecD2Z, (p->handle, in, out)); break;
        case FFT_C2R * 2: r = CUFFT_CALL(st, cufftExecC2R, (p->handle, in, out)); break;
        default: r = CUFFT_CALL(st, cufftExecZ2D, (p->handle, in, out)); break;
        }
        if (r < 0)
            goto done;
    }
    long long count = J->outer * J->inner * (J->kind == FFT_R2C ? h2 : J->n);
    rc = rescale(st, J, J->dst, count, h);
done:
    Py_DECREF(capsule);
    return rc;
}

/* The real transforms on cukit's own kernels go through complex ones: r2c widens and
 * keeps the first n/2 + 1 terms, c2r rebuilds the Hermitian spectrum and keeps the
 * real parts. */
static int
run_own(cukit_state *st, const job *J, CUstream h)
{
    PyObject *capsule = plan_get(st, J->dev, FFT_OWN, FFT_C2C, J->dbl, 1, &J->n, 0, 0);
    if (capsule == NULL)
        return -1;
    fft_plan *p = PyCapsule_GetPointer(capsule, CAPSULE);
    int rc = -1;
    cukit_Array *w = NULL, *f = NULL;
    long long total = J->outer * J->n * J->inner, n = J->n, inner = J->inner, h2 = n / 2 + 1;
    Py_ssize_t shape[1] = {(Py_ssize_t)total};
    if (J->kind == FFT_C2C) {
        rc = cukit_fft_own_c2c(st, p, J->ctc, J->src, J->dst, J->outer, inner, J->sign, J->scale, h);
        goto done;
    }
    if ((w = ck_empty(st, J->dev, J->ctc, 1, shape)) == NULL ||
        (f = ck_empty(st, J->dev, J->ctc, 1, shape)) == NULL)
        goto done;
    CUdeviceptr wp = cukit_array_ptr(w), fp = cukit_array_ptr(f), src = J->src, dst = J->dst;
    if (J->kind == FFT_R2C) {
        void *args[] = {&src, &wp, &total};
        if (cukit_fft_own_launch(st, J->dev, "widen", J->ctc, total, h, args) < 0 ||
            cukit_fft_own_c2c(st, p, J->ctc, wp, fp, J->outer, inner, J->sign, J->scale, h) < 0)
            goto done;
        Py_ssize_t cs = J->dbl ? 16 : 8, sh[3] = {(Py_ssize_t)J->outer, (Py_ssize_t)h2,
                                                    (Py_ssize_t)inner};
        Py_ssize_t fs[3] = {(Py_ssize_t)(n * inner) * cs, (Py_ssize_t)inner * cs, cs};
        Py_ssize_t ds[3] = {(Py_ssize_t)(h2 * inner) * cs, (Py_ssize_t)inner * cs, cs};
        rc = cukit_strided_copy(J->dev, dst, ds, fp, fs, 3, sh, cs, h);
        goto done;
    }
    void *hargs[] = {&src, &wp, &n, &h2, &inner, &total};
    void *rargs[] = {&fp, &dst, &total};
    if (cukit_fft_own_launch(st, J->dev, "hermitian", J->ctc, total, h, hargs) < 0 ||
        cukit_fft_own_c2c(st, p, J->ctc, wp, fp, J->outer, inner, J->sign, J->scale, h) < 0 ||
        cukit_fft_own_launch(st, J->dev, "real", J->ctc, total, h, rargs) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(w);
    Py_XDECREF(f);
    Py_DECREF(capsule);
    return rc;
}

/* ------------------------------------------------------------------ _fft */

/* a's elements with dimension `axis` cut or zero-padded to `want`, C-contiguous: a
 * itself when it already is. New ref or NULL. */
static cukit_Array *
gather(cukit_state *st, cukit_Array *a, int axis, long long want, CUstream h)
{
    if ((a->flags & CUKIT_ARRAY_C_CONTIG) && a->shape[axis] == want)
        return (cukit_Array *)Py_NewRef(a);
    Py_ssize_t shape[CUKIT_MAXDIM];
    memcpy(shape, a->shape, sizeof(Py_ssize_t) * (size_t)a->ndim);
    shape[axis] = (Py_ssize_t)want;
    cukit_Array *g = ck_empty(st, a->device, a->typecode, a->ndim, shape);
    if (g == NULL)
        return NULL;
    static const unsigned char zero[16] = {0};
    if (a->shape[axis] < want && cukit_strided_fill(a->device, cukit_array_ptr(g), g->strides,
                                                    g->ndim, g->shape, zero, g->itemsize, h) < 0)
        goto error;
    shape[axis] = a->shape[axis] < want ? a->shape[axis] : (Py_ssize_t)want;
    if (cukit_strided_copy(a->device, cukit_array_ptr(g), g->strides, cukit_array_ptr(a),
                           a->strides, a->ndim, shape, a->itemsize, h) < 0)
        goto error;
    return g;
error:
    Py_DECREF(g);
    return NULL;
}

/* _fft(a, axis, n, kind, inverse, scale, *, stream=None): the length-n transform of a
 * along axis, its input cut or zero-padded to n (n // 2 + 1 for C2R), times scale.
 * kind 0: complex -> complex, 1: real -> complex (the first n // 2 + 1 terms),
 * 2: complex (Hermitian) -> real. cukit.fft casts and normalises; this checks. */
static PyObject *
fn_fft(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "axis", "n", "kind", "inverse", "scale", "stream", NULL};
    cukit_state *st = PyModule_GetState(m);
    PyObject *ao, *stream = Py_None;
    int axis, kind, inverse;
    long long n;
    double scale;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OiLipd|$O:_fft", kwlist, &ao, &axis, &n,
                                     &kind, &inverse, &scale, &stream))
        return NULL;
    if (!Py_IS_TYPE(ao, st->ArrayType))
        return PyErr_Format(PyExc_TypeError, "fft: the input must be a cukit.Array, not %.100s; "
                            "pass cukit.to_device(x)", Py_TYPE(ao)->tp_name);
    cukit_Array *a = (cukit_Array *)ao;
    if (!cukit_array_live(a))
        return cukit_freed_error(), NULL;
    if (kind < FFT_C2C || kind > FFT_C2R)
        return PyErr_Format(PyExc_ValueError, "fft: kind %d is not 0, 1 or 2", kind);
    int tc = a->typecode, complex_in = tc == CUKIT_TC_C64 || tc == CUKIT_TC_C128;
    int real_in = tc == CUKIT_TC_F32 || tc == CUKIT_TC_F64;
    if (kind == FFT_R2C ? !real_in : !complex_in)
        return PyErr_Format(PyExc_TypeError, "fft: this transform takes %s input, not %S",
                            kind == FFT_R2C ? "float32 or float64" : "complex64 or complex128",
                            a->dtype);
    if (a->ndim == 0 || axis < 0 || axis >= a->ndim)
        return PyErr_Format(PyExc_ValueError, "fft: axis %d is out of bounds for an array of "
                            "%d dimensions", axis, a->ndim);
    if (n < 1)
        return PyErr_Format(PyExc_ValueError, "fft: invalid number of data points (%lld); "
                            "n must be at least 1", n);
    job J = {.dev = a->device, .kind = kind, .n = n, .scale = scale, .sign = inverse ? 1 : -1};
    J.dbl = tc == CUKIT_TC_F64 || tc == CUKIT_TC_C128;
    J.ctc = J.dbl ? CUKIT_TC_C128 : CUKIT_TC_C64;
    J.outer = J.inner = 1;
    for (int d = 0; d < a->ndim; d++)
        if (d < axis)
            J.outer *= a->shape[d];
        else if (d > axis)
            J.inner *= a->shape[d];
    Py_ssize_t oshape[CUKIT_MAXDIM];
    memcpy(oshape, a->shape, sizeof(Py_ssize_t) * (size_t)a->ndim);
    oshape[axis] = (Py_ssize_t)(kind == FFT_R2C ? n / 2 + 1 : n);
    int otc = kind == FFT_C2R ? (J.dbl ? CUKIT_TC_F64 : CUKIT_TC_F32) : J.ctc;

    CUstream h;
    if (ck_stream(st, stream, a->device, NULL, &h) < 0)
        return NULL;
    int use_cufft = choose_cufft(st);
    if (use_cufft < 0)
        return NULL;
    /* real transforms along an axis that is not the last: cuFFT's strided R2C and C2R
     * plans gave wrong values on an H100 (its complex ones did not): cukit's own here */
    if (use_cufft && kind != FFT_C2C && J.inner > 1)
        use_cufft = 0;
    PyObject *result = NULL;
    cukit_Array *src = gather(st, a, axis, kind == FFT_C2R ? n / 2 + 1 : n, h), *own = NULL;
    cukit_Array *out = src ? (cukit_Array *)ck_empty_out(st, a->device, otc, a->ndim, oshape,
                                                         stream)
                           : NULL;
    if (out == NULL)
        goto done;
    /* cuFFT's complex-to-real transform overwrites its input: never the caller's. */
    if (use_cufft && kind == FFT_C2R && src == a) {
        if ((own = ck_empty(st, a->device, a->typecode, a->ndim, a->shape)) == NULL ||
            cukit_strided_copy(a->device, cukit_array_ptr(own), own->strides, cukit_array_ptr(a),
                               a->strides, a->ndim, a->shape, a->itemsize, h) < 0)
            goto done;
        Py_SETREF(src, (cukit_Array *)Py_NewRef(own));
    }
    J.src = cukit_array_ptr(src);
    J.dst = cukit_array_ptr(out);
    if (out->size > 0 && (use_cufft ? run_cufft(st, &J, h) : run_own(st, &J, h)) < 0)
        goto done;
    st->fft->last = use_cufft ? FFT_CUFFT : FFT_OWN;
    if (stream != Py_None && (cukit_capture_keep(st, stream, (PyObject *)src) < 0 ||
                              cukit_capture_keep(st, stream, (PyObject *)out) < 0))
        goto done;
    result = Py_NewRef(out);
done:
    Py_XDECREF(src);
    Py_XDECREF(own);
    Py_XDECREF(out);
    return result;
}

/* _fftn(a, rank, inverse, scale, *, kind=0, stream=None) -> Array or None: the transform
 * of a's last `rank` (1 to 3) axes in one cuFFT plan, times scale, when cuFFT runs and a
 * is C-contiguous; None when it does not (cukit.fft then transforms one axis at a time).
 * kind 0: complex -> complex; 1: real -> complex (the last axis n // 2 + 1 long). Not
 * complex -> real: cuFFT's N-D C2R assumes Hermitian symmetry along every axis, numpy's
 * irfftn along the last only. */
static PyObject *
fn_fftn(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "rank", "inverse", "scale", "kind", "stream", NULL};
    cukit_state *st = PyModule_GetState(m);
    PyObject *ao, *stream = Py_None;
    int rank, inverse, kind = FFT_C2C;
    double scale;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oipd|$iO:_fftn", kwlist, &ao, &rank,
                                     &inverse, &scale, &kind, &stream))
        return NULL;
    if (!Py_IS_TYPE(ao, st->ArrayType))
        return PyErr_Format(PyExc_TypeError, "fft: the input must be a cukit.Array, not %.100s; "
                            "pass cukit.to_device(x)", Py_TYPE(ao)->tp_name);
    cukit_Array *a = (cukit_Array *)ao;
    if (!cukit_array_live(a))
        return cukit_freed_error(), NULL;
    if (kind != FFT_C2C && kind != FFT_R2C)
        return PyErr_Format(PyExc_ValueError, "_fftn: kind %d is not 0 or 1", kind);
    int tc = a->typecode, complex_in = tc == CUKIT_TC_C64 || tc == CUKIT_TC_C128;
    if (kind == FFT_R2C ? !(tc == CUKIT_TC_F32 || tc == CUKIT_TC_F64) : !complex_in)
        return PyErr_Format(PyExc_TypeError, "fft: this transform takes %s input, not %S",
                            kind == FFT_R2C ? "float32 or float64" : "complex64 or complex128",
                            a->dtype);
    if (rank < 1 || rank > 3 || rank > a->ndim)
        return PyErr_Format(PyExc_ValueError, "_fftn: rank %d for an array of %d dimensions",
                            rank, a->ndim);
    long long n = a->shape[a->ndim - 1];
    int use_cufft = choose_cufft(st);
    if (use_cufft < 0)
        return NULL;
    if (!use_cufft || !(a->flags & CUKIT_ARRAY_C_CONTIG) || a->size == 0)
        Py_RETURN_NONE;
    job J = {.dev = a->device, .kind = kind, .scale = scale, .sign = inverse ? 1 : -1};
    J.dbl = tc == CUKIT_TC_C128 || tc == CUKIT_TC_F64;
    J.ctc = J.dbl ? CUKIT_TC_C128 : CUKIT_TC_C64;
    long long dims[3], batch = 1;
    for (int d = 0; d < a->ndim; d++)
        if (d < a->ndim - rank)
            batch *= a->shape[d];
        else
            dims[d - (a->ndim - rank)] = a->shape[d];
    Py_ssize_t oshape[CUKIT_MAXDIM];
    memcpy(oshape, a->shape, sizeof(Py_ssize_t) * (size_t)a->ndim);
    oshape[a->ndim - 1] = (Py_ssize_t)(kind == FFT_R2C ? n / 2 + 1 : n);
    CUstream h;
    if (ck_stream(st, stream, a->device, NULL, &h) < 0)
        return NULL;
    PyObject *capsule = plan_get(st, a->device, FFT_CUFFT, kind, J.dbl, rank, dims, batch, 1);
    cukit_Array *out = capsule ? (cukit_Array *)ck_empty_out(st, a->device, J.ctc, a->ndim,
                                                             oshape, stream)
                               : NULL;
    PyObject *result = NULL;
    if (out == NULL)
        goto done;
    fft_plan *p = PyCapsule_GetPointer(capsule, CAPSULE);
    void *in = (void *)(uintptr_t)cukit_array_ptr(a), *o = (void *)(uintptr_t)cukit_array_ptr(out);
    int dir = inverse ? CUFFT_INVERSE : CUFFT_FORWARD, r;
    if (cukit_device_activate(a->device) < 0 || CUFFT_CALL(st, cufftSetStream, (p->handle, h)) < 0)
        goto done;
    switch (kind * 2 + J.dbl) {
    case FFT_C2C * 2: r = CUFFT_CALL(st, cufftExecC2C, (p->handle, in, o, dir)); break;
    case FFT_C2C * 2 + 1: r = CUFFT_CALL(st, cufftExecZ2Z, (p->handle, in, o, dir)); break;
    case FFT_R2C * 2: r = CUFFT_CALL(st, cufftExecR2C, (p->handle, in, o)); break;
    default: r = CUFFT_CALL(st, cufftExecD2Z, (p->handle, in, o)); break;
    }
    if (r < 0 || rescale(st, &J, cukit_array_ptr(out), (long long)out->size, h) < 0)
        goto done;
    st->fft->last = FFT_CUFFT;
    if (stream != Py_None && (cukit_capture_keep(st, stream, ao) < 0 ||
                              cukit_capture_keep(st, stream, (PyObject *)out) < 0))
        goto done;
    result = Py_NewRef(out);
done:
    Py_XDECREF(capsule);
    Py_XDECREF(out);
    return result;
}

/* _fft_config(*, backend=None, plan_cache_size=None, clear=False) -> dict of the settings
 * (before the change), the path of the last transform, the library, the cache. */
static PyObject *
fn_fft_config(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"backend", "plan_cache_size", "clear", NULL};
    PyObject *backend = Py_None, *size = Py_None;
    int clear = 0;
    cukit_state *st = PyModule_GetState(m);
    cukit_fft_state *F = st->fft;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOp:_fft_config", kwlist, &backend, &size,
                                     &clear))
        return NULL;
    int version = 0;
    const char *path = cukit_cufft_path(&version);
    PyObject *plans = F->plans ? PyDict_Keys(F->plans) : PyList_New(0);
    if (plans == NULL)
        return NULL;
    PyObject *r = Py_BuildValue("{ssssszsisnsN}", "backend", backend_names[F->backend], "last",
                                last_names[F->last], "cufft", path, "cufft_version", version,
                                "plan_cache_size", F->max_plans, "plans", plans);
    if (r == NULL)
        return NULL;
    if (backend != Py_None) {
        int i = 0;
        while (i < 3 && !(PyUnicode_Check(backend) &&
                          PyUnicode_CompareWithASCIIString(backend, backend_names[i]) == 0))
            i++;
        if (i == 3) {
            Py_DECREF(r);
            return PyErr_Format(PyExc_ValueError, "fft backend must be 'auto', 'cufft' or "
                                "'cukit', not %R", backend);
        }
        F->backend = i;
    }
    if (size != Py_None) {
        Py_ssize_t v = PyLong_Check(size) ? PyLong_AsSsize_t(size) : -1;
        if (v < 0) {
            Py_DECREF(r);
            if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_ValueError, "the plan cache's size must be an int of 0 or "
                             "more, not %R", size);
            }
            return NULL;
        }
        F->max_plans = v;
        while (F->plans && PyDict_GET_SIZE(F->plans) > v) {
            Py_ssize_t pos = 0;
            PyObject *oldest, *value;
            PyDict_Next(F->plans, &pos, &oldest, &value);
            if (PyDict_DelItem(F->plans, oldest) < 0) {
                Py_DECREF(r);
                return NULL;
            }
        }
    }
    if (clear && F->plans)
        PyDict_Clear(F->plans);
    return r;
}

static PyMethodDef functions[] = {
    {"_fft", (PyCFunction)(void (*)(void))fn_fft, METH_VARARGS | METH_KEYWORDS,
     "_fft(a, axis, n, kind, inverse, scale, *, stream=None) -> Array: one transform along one "
     "axis (kind 0 c2c, 1 r2c, 2 c2r), on cuFFT or cukit's own kernels."},
    {"_fftn", (PyCFunction)(void (*)(void))fn_fftn, METH_VARARGS | METH_KEYWORDS,
     "_fftn(a, rank, inverse, scale, *, kind=0, stream=None) -> Array or None: the "
     "transform of a's last rank axes (kind 0 c2c, 1 r2c) in one cuFFT plan, or None where "
     "it cannot take it."},
    {"_fft_config", (PyCFunction)(void (*)(void))fn_fft_config, METH_VARARGS | METH_KEYWORDS,
     "_fft_config(*, backend=None, plan_cache_size=None, clear=False) -> dict: the fft "
     "switches (as they were), the last path, the library and the plan cache's keys."},
    {NULL},
};

int
cukit_fft_setup(PyObject *module, cukit_state *st)
{
    cukit_fft_state *F = st->fft;
    F->max_plans = DEFAULT_MAX_PLANS;
    const char *env = getenv("CUKIT_FFT");
    for (int i = 0; env && i < 3; i++)
        if (strcmp(env, backend_names[i]) == 0)
            F->backend = i;
    return PyModule_AddFunctions(module, functions);
}
