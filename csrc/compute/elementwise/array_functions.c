/* array_functions.c - cukit.where, clip, full/ones(_like), arange, linspace, concatenate,
 * stack, real, imag: numpy's names and signatures on device arrays */
#include "compute/compute.h"
#include "compute/index/index.h"
#include "compute/elementwise/ufunc_impl.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ where, clip */

/* The ufunc `name` of ck_ufunc_defs, as a new ref (NULL with an exception). */
static PyObject *
ufunc_named(cukit_state *st, const char *name)
{
    for (int i = 0; i < U_COUNT; i++)
        if (strcmp(ck_ufunc_defs[i].name, name) == 0)
            return Py_NewRef(PyTuple_GET_ITEM(st->compute->ufuncs, i));
    return PyErr_Format(PyExc_SystemError, "no ufunc %s", name);
}

static PyObject *
mod_where(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"condition", "x", "y", "out", "stream", NULL};
    PyObject *in[3] = {NULL, NULL, NULL}, *out = Py_None, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO$OO:where", kwlist, &in[0], &in[1],
                                     &in[2], &out, &stream))
        return NULL;
    if (in[1] == NULL && in[2] == NULL) /* numpy: where(condition) is nonzero(condition) */
        return ck_nonzero(PyModule_GetState(m), in[0]);
    if (in[1] == NULL || in[2] == NULL) {
        PyErr_SetString(PyExc_ValueError, "either both or neither of x and y should be given");
        return NULL;
    }
    return ck_ternary(PyModule_GetState(m), 0, in, out, stream);
}

/* clip(a, lo, hi, out, stream): a bound of None is no bound. New ref or NULL. */
PyObject *
ck_clip(cukit_state *st, PyObject *a, PyObject *lo, PyObject *hi, PyObject *out,
        PyObject *stream)
{
    if (lo == Py_None && hi == Py_None) {
        PyErr_SetString(PyExc_ValueError, "clip(): one of a_min and a_max must be given");
        return NULL;
    }
    /* a bound of None is no bound: the other ufunc alone */
    if (lo == Py_None || hi == Py_None) {
        PyObject *f = ufunc_named(st, lo == Py_None ? "minimum" : "maximum");
        if (f == NULL)
            return NULL;
        PyObject *kw = Py_BuildValue("{sOsO}", "out", out, "stream", stream);
        PyObject *args = kw ? Py_BuildValue("(OO)", a, lo == Py_None ? hi : lo) : NULL;
        PyObject *r = args ? PyObject_Call(f, args, kw) : NULL;
        Py_DECREF(f);
        Py_XDECREF(kw);
        Py_XDECREF(args);
        return r;
    }
    PyObject *in[3] = {a, lo, hi};
    return ck_ternary(st, 1, in, out, stream);
}

static PyObject *
mod_clip(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "a_min", "a_max", "out", "stream", "min", "max", NULL};
    PyObject *a, *lo = NULL, *hi = NULL, *out = Py_None, *stream = Py_None, *kmin = NULL,
             *kmax = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOO$OOO:clip", kwlist, &a, &lo, &hi, &out,
                                     &stream, &kmin, &kmax))
        return NULL;
    if ((lo && kmin) || (hi && kmax)) { /* numpy 2's min=/max= are the same bounds */
        PyErr_SetString(PyExc_ValueError, "clip(): pass a_min or min (a_max or max), not both");
        return NULL;
    }
    lo = lo ? lo : kmin ? kmin : Py_None;
    hi = hi ? hi : kmax ? kmax : Py_None;
    return ck_clip(PyModule_GetState(m), a, lo, hi, out, stream);
}

/* ------------------------------------------------------------------ round */

/* f(x, y, out=out): one ufunc call. New ref or NULL. */
static PyObject *
call2(cukit_state *st, const char *name, PyObject *x, PyObject *y, PyObject *out)
{
    PyObject *f = ufunc_named(st, name);
    if (f == NULL)
        return NULL;
    PyObject *kw = out && out != Py_None ? Py_BuildValue("{sO}", "out", out) : NULL;
    PyObject *args = y ? PyTuple_Pack(2, x, y) : PyTuple_Pack(1, x);
    PyObject *r = args ? PyObject_Call(f, args, kw) : NULL;
    Py_DECREF(f);
    Py_XDECREF(kw);
    Py_XDECREF(args);
    return r;
}

/* round of a complex array: its real and imaginary parts rounded into those of out (or
 * of a new array). New ref or NULL. */
static PyObject *
round_complex(cukit_state *st, PyObject *obj, Py_ssize_t decimals, PyObject *out)
{
    cukit_Array *a = (cukit_Array *)obj;
    PyObject *res = out && out != Py_None ? Py_NewRef(out)
                                          : (PyObject *)ck_empty(st, a->device, a->typecode,
                                                                 a->ndim, a->shape);
    for (int part = 0; res && part < 2; part++) {
        const char *name = part ? "imag" : "real";
        PyObject *src = PyObject_GetAttrString(obj, name);
        PyObject *dst = src ? PyObject_GetAttrString(res, name) : NULL;
        PyObject *r = dst ? ck_round(st, src, decimals, dst) : NULL;
        Py_XDECREF(src);
        Py_XDECREF(dst);
        if (r == NULL)
            Py_CLEAR(res);
        Py_XDECREF(r);
    }
    return res;
}

/* numpy's round: rint(a * 10**d) / 10**d (d < 0: rint(a / 10**-d) * 10**-d), in a's
 * own type; integers stay integers (computed in float64 for d < 0, cast back). */
PyObject *
ck_round(cukit_state *st, PyObject *obj, Py_ssize_t decimals, PyObject *out)
{
    if (!Py_IS_TYPE(obj, st->ArrayType))
        return PyErr_Format(PyExc_TypeError, "cukit.round() takes a cukit.Array, not %s",
                            Py_TYPE(obj)->tp_name);
    cukit_Array *a = (cukit_Array *)obj;
    char kind = ck_dtypes[a->typecode].kind;
    int integral = kind != 'f' && kind != 'c';
    if (kind == 'c') /* numpy rounds the two parts on their own */
        return round_complex(st, obj, decimals, out);
    if (kind == 'b' && (out == NULL || out == Py_None)) /* numpy's: float16 */
        return ck_astype(st, a, CUKIT_TC_F16, Py_None);
    if (integral && decimals >= 0) {
        if (out == NULL || out == Py_None)
            return (PyObject *)cukit_array_copy(a);
        return call2(st, "positive", obj, NULL, out);
    }
    PyObject *x = integral ? ck_astype(st, a, CUKIT_TC_F64, Py_None) : Py_NewRef(obj);
    if (x == NULL)
        return NULL;
    double scale = 1.0;
    for (Py_ssize_t i = 0; i < (decimals < 0 ? -decimals : decimals) && i < 400; i++)
        scale *= 10.0;
    PyObject *f = PyFloat_FromDouble(scale), *y = NULL, *r = NULL, *res = NULL;
    if (f == NULL)
        goto done;
    y = decimals == 0 ? Py_NewRef(x) : call2(st, decimals > 0 ? "multiply" : "true_divide", x, f, NULL);
    r = y ? call2(st, "rint", y, NULL, decimals == 0 && !integral ? out : NULL) : NULL;
    if (r == NULL || (decimals == 0 && !integral)) {
        res = r;
        r = NULL;
        goto done;
    }
    if (integral) {
        PyObject *t = call2(st, "multiply", r, f, NULL);
        res = t ? ck_astype(st, (cukit_Array *)t, a->typecode, Py_None) : NULL;
        Py_XDECREF(t);
        if (res && out && out != Py_None) {
            PyObject *o = call2(st, "positive", res, NULL, out);
            Py_SETREF(res, o);
        }
    }
    else {
        res = call2(st, decimals > 0 ? "true_divide" : "multiply", r, f, out);
    }
done:
    Py_XDECREF(x);
    Py_XDECREF(f);
    Py_XDECREF(y);
    Py_XDECREF(r);
    return res;
}

static PyObject *
mod_round(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "decimals", "out", NULL};
    PyObject *a, *out = Py_None;
    Py_ssize_t decimals = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|nO:round", kwlist, &a, &decimals, &out))
        return NULL;
    return ck_round(PyModule_GetState(m), a, decimals, out);
}

/* ------------------------------------------------------------------ real, imag */

static PyObject *
call_attr(PyObject *m, PyObject *x, const char *name)
{
    cukit_state *st = PyModule_GetState(m);
    if (!Py_IS_TYPE(x, st->ArrayType))
        return PyErr_Format(PyExc_TypeError, "cukit.%s() takes a cukit.Array, not %s", name,
                            Py_TYPE(x)->tp_name);
    return PyObject_GetAttrString(x, name);
}

static PyObject *
mod_real(PyObject *m, PyObject *x)
{
    return call_attr(m, x, "real");
}

static PyObject *
mod_imag(PyObject *m, PyObject *x)
{
    return call_attr(m, x, "imag");
}

/* ------------------------------------------------------------------ full, ones, *_like */

/* numpy.result dtype of a fill value: numpy.asarray(value).dtype. New ref or NULL. */
static PyObject *
value_dtype(cukit_state *st, PyObject *value)
{
    if (cukit_numpy(st) < 0)
        return NULL;
    PyObject *a = PyObject_CallOneArg(st->np_asarray, value);
    PyObject *dt = a ? PyObject_GetAttr(a, st->memory->str_dtype) : NULL;
    Py_XDECREF(a);
    return dt;
}

static PyObject *
filled(PyObject *m, PyObject *shape, PyObject *value, PyObject *dtype, PyObject *device)
{
    cukit_state *st = PyModule_GetState(m);
    PyObject *dt = dtype && dtype != Py_None ? Py_NewRef(dtype) : value_dtype(st, value);
    if (dt == NULL)
        return NULL;
    PyObject *a = cukit_array_shaped(st, shape, dt, device ? device : Py_None, 0);
    Py_DECREF(dt);
    if (a == NULL)
        return NULL;
    /* a.fill(value) on the legacy stream, through the C under it */
    cukit_Array *arr = (cukit_Array *)a;
    PyObject *raw = cukit_array_element_bytes(arr, value, "fill()");
    int rc = raw && cukit_device_activate(arr->device) == 0
                 ? cukit_strided_fill(arr->device, cukit_array_ptr(arr), arr->strides, arr->ndim,
                                      arr->shape, PyBytes_AS_STRING(raw), arr->itemsize, NULL)
                 : -1;
    Py_XDECREF(raw);
    if (rc < 0)
        Py_CLEAR(a);
    return a;
}

static PyObject *
mod_full(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "fill_value", "dtype", "device", NULL};
    PyObject *shape, *value, *dtype = Py_None, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OO:full", kwlist, &shape, &value, &dtype,
                                     &device))
        return NULL;
    return filled(m, shape, value, dtype, device);
}

static PyObject *
mod_ones(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "dtype", "device", NULL};
    PyObject *shape, *dtype = Py_None, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:ones", kwlist, &shape, &dtype, &device))
        return NULL;
    PyObject *one = PyLong_FromLong(1);
    PyObject *r = one ? filled(m, shape, one, dtype == Py_None ? (PyObject *)&PyFloat_Type : dtype,
                               device)
                      : NULL;
    Py_XDECREF(one);
    return r;
}

static PyObject *
like(PyObject *m, PyObject *a, PyObject *value, PyObject *dtype, PyObject *device)
{
    cukit_state *st = PyModule_GetState(m);
    PyObject *shape = PyObject_GetAttr(a, st->memory->str_shape);
    PyObject *dt = dtype && dtype != Py_None ? Py_NewRef(dtype) : PyObject_GetAttr(a, st->memory->str_dtype);
    if ((device == NULL || device == Py_None) && Py_IS_TYPE(a, st->ArrayType))
        device = (PyObject *)((cukit_Array *)a)->device;
    PyObject *r = shape && dt ? filled(m, shape, value, dt, device) : NULL;
    Py_XDECREF(shape);
    Py_XDECREF(dt);
    return r;
}

static PyObject *
mod_full_like(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "fill_value", "dtype", "device", NULL};
    PyObject *a, *value, *dtype = Py_None, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OO:full_like", kwlist, &a, &value, &dtype,
                                     &device))
        return NULL;
    return like(m, a, value, dtype, device);
}

static PyObject *
mod_ones_like(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "dtype", "device", NULL};
    PyObject *a, *dtype = Py_None, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:ones_like", kwlist, &a, &dtype, &device))
        return NULL;
    PyObject *one = PyLong_FromLong(1);
    PyObject *r = one ? like(m, a, one, dtype, device) : NULL;
    Py_XDECREF(one);
    return r;
}

/* ------------------------------------------------------------------ generated fills */

/* Run `stmt` over the contiguous array out with scalars vals (compute type of out's
 * dtype, ntc of them, each of typecode stc[k]). Compiled once per source through
 * cukit.compile's caches. 0 / -1. */
static int
run_fill(cukit_state *st, cukit_Array *out, const char *name, const char *stmt, int nvals,
         const int *stc, const ck_slot *vals)
{
    if (out->size == 0)
        return 0;
    ck_operand ops[4];
    ck_layout layout;
    memset(ops, 0, sizeof ops);
    ops[0].tc = out->typecode;
    ops[0].output = 1;
    layout.nops = nvals + 1;
    layout.n = out->size;
    layout.nd = 1;
    layout.scalar[0] = 0;
    layout.ptr[0] = cukit_array_ptr(out);
    layout.itemsize[0] = (int)out->itemsize;
    for (int k = 0; k < nvals; k++) {
        ops[k + 1].tc = stc[k];
        ops[k + 1].scalar = 1;
        layout.scalar[k + 1] = 1;
        layout.val[k + 1] = vals[k];
    }
    PyObject *src = ck_custom_source("", ops, nvals + 1, CK_CLASS_FLAT, 1, stmt, NULL, NULL,
                                     NULL);
    PyObject *opts = src ? Py_BuildValue("(s)", "-fmad=false") : NULL;
    PyObject *module = NULL;
    CUfunction f;
    int rc = opts ? cukit_builtin_function(st, out->device, src, name, opts, "ck", &module, &f) : -1;
    Py_XDECREF(src);
    Py_XDECREF(opts);
    CUstream h; /* the current stream (`with stream:`), else the legacy one */
    if (rc == 0 && (rc = ck_stream(st, Py_None, out->device, NULL, &h)) == 0)
        rc = ck_launch(out->device, f, &layout, CK_CLASS_FLAT, 1, h);
    Py_XDECREF(module); /* cukit.compile's memory cache keeps it loaded */
    return rc;
}

static PyObject *
mod_arange(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"start", "stop", "step", "dtype", "device", NULL};
    cukit_state *st = PyModule_GetState(m);
    PyObject *a = NULL, *b = Py_None, *step = Py_None, *dtype = Py_None, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOO:arange", kwlist, &a, &b, &step,
                                     &dtype, &device))
        return NULL;
    PyObject *start = b == Py_None ? NULL : a, *stop = b == Py_None ? a : b;
    PyObject *one = PyLong_FromLong(1), *zero = PyLong_FromLong(0);
    if (one == NULL || zero == NULL)
        goto fail_early;
    if (start == NULL)
        start = zero;
    if (step == Py_None)
        step = one;
    /* numpy's dtype: int64 when every bound is an int, else float64 (or complex) */
    int tc;
    if (dtype != Py_None) {
        tc = ck_tc_of(st, dtype);
    }
    else {
        int all_int = PyLong_Check(start) && PyLong_Check(stop) && PyLong_Check(step);
        int any_complex = PyComplex_Check(start) || PyComplex_Check(stop) || PyComplex_Check(step);
        tc = all_int ? CUKIT_TC_I64 : any_complex ? CUKIT_TC_C128 : CUKIT_TC_F64;
        PyObject *objs[3] = {start, stop, step};
        for (int k = 0; k < 3 && !all_int; k++) /* numpy scalars keep their precision */
            if (cukit_numpy(st) == 0 && PyObject_TypeCheck(objs[k], (PyTypeObject *)st->np_generic)) {
                PyObject *dt = PyObject_GetAttr(objs[k], st->memory->str_dtype);
                int t = dt ? cukit_typecode_of_dtype(dt) : -1;
                Py_XDECREF(dt);
                if (ck_math_tc(t))
                    tc = k == 0 && tc == CUKIT_TC_F64 ? t : ck_promote(tc, t);
            }
    }
    if (tc < 0)
        goto fail_early;
    if (ck_dtypes[tc].kind == 'c' || ck_dtypes[tc].kind == 'b') {
        PyErr_Format(PyExc_TypeError, "cukit.arange() does not make %s arrays",
                     ck_dtypes[tc].name);
        goto fail_early;
    }
    double d0 = PyFloat_AsDouble(start), d1 = PyFloat_AsDouble(stop), ds = PyFloat_AsDouble(step);
    if (PyErr_Occurred())
        goto fail_early;
    if (ds == 0) {
        PyErr_SetString(PyExc_ZeroDivisionError, "arange(): step is zero");
        goto fail_early;
    }
    double len_d = ceil((d1 - d0) / ds);
    Py_ssize_t len = len_d > 0 ? (Py_ssize_t)len_d : 0;
    if (!isfinite(len_d) && len_d > 0) {
        PyErr_SetString(PyExc_ValueError, "arange(): the length is not finite");
        goto fail_early;
    }
    /* integers: exact Python arithmetic for the length */
    if (ck_dtypes[tc].kind != 'f' && PyLong_Check(start) && PyLong_Check(stop) &&
        PyLong_Check(step)) {
        long long s0 = PyLong_AsLongLong(start), s1 = PyLong_AsLongLong(stop),
                  ss = PyLong_AsLongLong(step);
        if (PyErr_Occurred())
            goto fail_early;
        long long span = s1 - s0;
        long long n = ss > 0 ? (span + ss - 1) / ss : (span + ss + 1) / ss;
        len = n > 0 ? (Py_ssize_t)n : 0;
    }
    cukit_Device *dev = cukit_device_arg(st, device);
    cukit_Array *out = dev ? ck_empty(st, dev, tc, 1, &len) : NULL;
    if (out == NULL)
        goto fail_early;
    /* numpy's fill: v0 = start, v1 = start + step (both cast), then v0 + i * (v1 - v0) */
    ck_slot vals[3];
    int stc[3] = {tc, tc, tc};
    PyObject *v1 = PyNumber_Add(start, step);
    int rc = v1 ? 0 : -1;
    if (rc == 0)
        rc = ck_scalar_to(start, tc, 0, &vals[0]);
    if (rc == 0)
        rc = ck_scalar_to(v1, tc, 0, &vals[1]);
    Py_XDECREF(v1);
    if (rc < 0) {
        Py_DECREF(out);
        goto fail_early;
    }
    const char *ct = ck_dtypes[tc].ctype_c;
    char stmt[512];
    PyOS_snprintf(stmt, sizeof stmt,
                  "        if (i == 0) CK_E0 = cv<T0>(CK_E1);\n"
                  "        else if (i == 1) CK_E0 = cv<T0>(CK_E2);\n"
                  "        else CK_E0 = cv<T0>(uf_add(CK_E1, uf_multiply((%s)i, uf_subtract(CK_E2, CK_E1))));",
                  ct);
    if (run_fill(st, out, "cukit_arange.cu", stmt, 2, stc, vals) < 0) {
        Py_DECREF(out);
        out = NULL;
    }
    Py_DECREF(one);
    Py_DECREF(zero);
    return (PyObject *)out;
fail_early:
    Py_XDECREF(one);
    Py_XDECREF(zero);
    return NULL;
}

static PyObject *
mod_linspace(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"start", "stop", "num", "endpoint", "retstep", "dtype", "device",
                             NULL};
    cukit_state *st = PyModule_GetState(m);
    PyObject *start, *stop, *dtype = Py_None, *device = Py_None;
    Py_ssize_t num = 50;
    int endpoint = 1, retstep = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|nppOO:linspace", kwlist, &start, &stop,
                                     &num, &endpoint, &retstep, &dtype, &device))
        return NULL;
    if (num < 0)
        return PyErr_Format(PyExc_ValueError, "linspace(): num must be non-negative, got %zd", num);
    int tc = dtype == Py_None ? CUKIT_TC_F64 : ck_tc_of(st, dtype);
    if (tc < 0)
        return NULL;
    if (ck_dtypes[tc].kind == 'c' || PyComplex_Check(start) || PyComplex_Check(stop))
        return PyErr_Format(PyExc_TypeError, "cukit.linspace() does not make complex arrays");
    double a = PyFloat_AsDouble(start), b = PyFloat_AsDouble(stop);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t div = endpoint ? num - 1 : num;
    double step = div > 0 ? (b - a) / (double)div : NAN;
    cukit_Device *dev = cukit_device_arg(st, device);
    cukit_Array *out = dev ? ck_empty(st, dev, tc, 1, &num) : NULL;
    if (out == NULL)
        return NULL;
    ck_slot vals[3];
    int stc[3] = {CUKIT_TC_F64, CUKIT_TC_F64, CUKIT_TC_F64};
    double last = endpoint && num > 1 ? b : NAN, st_v = div > 0 ? step : 0.0;
    memset(vals, 0, sizeof vals);
    memcpy(vals[0].b, &a, 8);
    memcpy(vals[1].b, &st_v, 8);
    memcpy(vals[2].b, &last, 8);
    char kind = ck_dtypes[tc].kind;
    char stmt[512];
    /* numpy: i * step + start in float64, the last one exactly stop, integers floored */
    PyOS_snprintf(stmt, sizeof stmt,
                  "        double y_ = (i == _ind.size() - 1 && CK_E3 == CK_E3) ? CK_E3 : (double)i * CK_E2 + CK_E1;\n"
                  "        CK_E0 = cv<T0>(%s);",
                  (kind == 'i' || kind == 'u') ? "floor(y_)" : "y_");
    if (run_fill(st, out, "cukit_linspace.cu", stmt, 3, stc, vals) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    if (!retstep)
        return (PyObject *)out;
    return Py_BuildValue("(Nd)", out, step);
}

/* ------------------------------------------------------------------ concatenate, stack */

/* The arrays of a sequence, all cukit.Array on one device. New ref: a tuple. */
static PyObject *
array_seq(cukit_state *st, PyObject *arrays, const char *who)
{
    PyObject *t = PySequence_Tuple(arrays);
    if (t == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    if (n == 0) {
        Py_DECREF(t);
        return PyErr_Format(PyExc_ValueError, "%s() needs at least one array", who);
    }
    cukit_Device *dev = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(t, i);
        if (!Py_IS_TYPE(a, st->ArrayType)) {
            PyErr_Format(PyExc_TypeError,
                         "%s(): item %zd is %s, not a cukit.Array (copy host data with "
                         "cukit.to_device first)",
                         who, i, Py_TYPE(a)->tp_name);
            Py_DECREF(t);
            return NULL;
        }
        cukit_Array *x = (cukit_Array *)a;
        if (!cukit_array_live(x)) {
            Py_DECREF(t);
            cukit_freed_error();
            return NULL;
        }
        if (dev && x->device != dev) {
            PyErr_Format(PyExc_ValueError, "%s(): the arrays are on devices %d and %d", who,
                         dev->ordinal, x->device->ordinal);
            Py_DECREF(t);
            return NULL;
        }
        dev = x->device;
    }
    return t;
}

/* out[..., lo:lo+a.shape[axis], ...] = a (cast to out's dtype). 0 / -1. */
static int
place(cukit_state *st, cukit_Array *out, cukit_Array *a, int axis, Py_ssize_t lo)
{
    Py_ssize_t shape[CUKIT_MAXDIM];
    memcpy(shape, out->shape, sizeof(Py_ssize_t) * (size_t)out->ndim);
    shape[axis] = a->shape[axis];
    cukit_Array *v = cukit_array_view_as(out, out->dtype, out->typecode, out->itemsize,
                                      out->offset + lo * out->strides[axis], out->ndim, shape,
                                      out->strides);
    if (v == NULL)
        return -1;
    int rc;
    CUstream h; /* the current stream (`with stream:`), else the legacy one */
    if (v->size == 0)
        rc = 0;
    else if (ck_stream(st, Py_None, out->device, NULL, &h) < 0)
        rc = -1;
    else if (a->typecode == out->typecode)
        rc = cukit_strided_copy(out->device, cukit_array_ptr(v), v->strides, cukit_array_ptr(a),
                                a->strides, a->ndim, a->shape, a->itemsize, h);
    else
        rc = ck_copyto(st, v, a, Py_None);
    Py_DECREF(v);
    return rc;
}

/* concatenate along axis of arrays (a tuple of Array, checked). New ref or NULL. */
static PyObject *
concat(cukit_state *st, PyObject *t, int axis_given, Py_ssize_t axis, PyObject *dtype,
       const char *who)
{
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    cukit_Array *first = (cukit_Array *)PyTuple_GET_ITEM(t, 0);
    int nd = first->ndim;
    if (nd == 0)
        return PyErr_Format(PyExc_ValueError, "%s(): zero-dimensional arrays cannot be "
                            "concatenated", who);
    if (axis < 0)
        axis += nd;
    if (axis < 0 || axis >= nd)
        return PyErr_Format(PyExc_ValueError, "%s(): axis %zd is out of bounds for an array of "
                            "dimension %d", who, axis_given ? axis : 0, nd);
    int tc = -1;
    cukit_Array *mixed = NULL; /* borrowed: an input whose dtype a float8 meets */
    Py_ssize_t shape[CUKIT_MAXDIM];
    memcpy(shape, first->shape, sizeof(Py_ssize_t) * (size_t)nd);
    shape[axis] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        cukit_Array *a = (cukit_Array *)PyTuple_GET_ITEM(t, i);
        if (a->ndim != nd)
            return PyErr_Format(PyExc_ValueError,
                                "%s(): all the input arrays must have the same number of "
                                "dimensions; array 0 has %d and array %zd has %d",
                                who, nd, i, a->ndim);
        for (int d = 0; d < nd; d++)
            if (d != axis && a->shape[d] != first->shape[d])
                return PyErr_Format(PyExc_ValueError,
                                    "%s(): the array dimensions except for the concatenation "
                                    "axis must match; dimension %d is %zd in array 0 and %zd in "
                                    "array %zd",
                                    who, d, first->shape[d], a->shape[d], i);
        shape[axis] += a->shape[axis];
        if (!ck_cast_tc(a->typecode))
            return PyErr_Format(PyExc_TypeError, "%s(): dtype %S is not supported", who, a->dtype);
        /* a float8 (no promotion rules: cast only) meets its own dtype alone */
        if (tc >= 0 && tc != a->typecode && (!ck_math_tc(tc) || !ck_math_tc(a->typecode)))
            mixed = a;
        tc = tc < 0 || tc == a->typecode || mixed ? a->typecode : ck_promote(tc, a->typecode);
    }
    if (dtype && dtype != Py_None) {
        if ((tc = ck_cast_tc_of(st, dtype)) < 0)
            return NULL;
    }
    else if (mixed) {
        return PyErr_Format(PyExc_TypeError, "%s(): float8 arrays join only arrays of their "
                            "own dtype (here %S and %S); pass dtype= or convert with astype "
                            "first", who, first->dtype, mixed->dtype);
    }
    cukit_Array *out = ck_empty(st, first->device, tc, nd, shape);
    if (out == NULL)
        return NULL;
    Py_ssize_t lo = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        cukit_Array *a = (cukit_Array *)PyTuple_GET_ITEM(t, i);
        if (place(st, out, a, (int)axis, lo) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        lo += a->shape[axis];
    }
    return (PyObject *)out;
}

static PyObject *
mod_concatenate(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"arrays", "axis", "dtype", NULL};
    cukit_state *st = PyModule_GetState(m);
    PyObject *arrays, *axis_o = NULL, *dtype = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:concatenate", kwlist, &arrays, &axis_o,
                                     &dtype))
        return NULL;
    PyObject *t = array_seq(st, arrays, "concatenate");
    if (t == NULL)
        return NULL;
    PyObject *r = NULL;
    if (axis_o == Py_None) { /* flattened, as numpy */
        Py_ssize_t n = PyTuple_GET_SIZE(t);
        PyObject *flat = PyTuple_New(n);
        for (Py_ssize_t i = 0; flat && i < n; i++) {
            cukit_Array *a = (cukit_Array *)PyTuple_GET_ITEM(t, i);
            PyObject *c = (a->flags & CUKIT_ARRAY_C_CONTIG) ? Py_NewRef(a)
                                                            : (PyObject *)cukit_array_copy(a);
            cukit_Array *ca = (cukit_Array *)c;
            Py_ssize_t n1 = ca ? ca->size : 0, s1 = ca ? ca->itemsize : 0;
            PyObject *f = c ? (PyObject *)cukit_array_view_as(ca, ca->dtype, ca->typecode,
                                                              ca->itemsize, ca->offset, 1, &n1, &s1)
                            : NULL;
            Py_XDECREF(c);
            if (f == NULL)
                Py_CLEAR(flat);
            else
                PyTuple_SET_ITEM(flat, i, f);
        }
        r = flat ? concat(st, flat, 1, 0, dtype, "concatenate") : NULL;
        Py_XDECREF(flat);
    }
    else {
        Py_ssize_t axis = axis_o ? PyNumber_AsSsize_t(axis_o, PyExc_IndexError) : 0;
        if (!(axis == -1 && PyErr_Occurred()))
            r = concat(st, t, axis_o != NULL, axis, dtype, "concatenate");
    }
    Py_DECREF(t);
    return r;
}

static PyObject *
mod_stack(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"arrays", "axis", "dtype", NULL};
    cukit_state *st = PyModule_GetState(m);
    PyObject *arrays, *dtype = Py_None;
    Py_ssize_t axis = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|nO:stack", kwlist, &arrays, &axis, &dtype))
        return NULL;
    PyObject *t = array_seq(st, arrays, "stack");
    if (t == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    cukit_Array *first = (cukit_Array *)PyTuple_GET_ITEM(t, 0);
    int nd = first->ndim + 1;
    Py_ssize_t ax = axis < 0 ? axis + nd : axis;
    PyObject *views = NULL, *r = NULL;
    if (ax < 0 || ax >= nd || nd > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "stack(): axis %zd is out of bounds for the result's %d "
                     "dimensions", axis, nd);
        goto done;
    }
    views = PyTuple_New(n);
    for (Py_ssize_t i = 0; views && i < n; i++) {
        cukit_Array *a = (cukit_Array *)PyTuple_GET_ITEM(t, i);
        if (a->ndim != first->ndim ||
            memcmp(a->shape, first->shape, sizeof(Py_ssize_t) * (size_t)a->ndim) != 0) {
            PyErr_SetString(PyExc_ValueError, "stack(): all input arrays must have the same shape");
            goto done;
        }
        Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
        for (int d = 0, s = 0; d < nd; d++) {
            if (d == ax) {
                shape[d] = 1;
                strides[d] = a->itemsize;
            }
            else {
                shape[d] = a->shape[s];
                strides[d] = a->strides[s];
                s++;
            }
        }
        PyObject *v = (PyObject *)cukit_array_view_as(a, a->dtype, a->typecode, a->itemsize,
                                                   a->offset, nd, shape, strides);
        if (v == NULL)
            goto done;
        PyTuple_SET_ITEM(views, i, v);
    }
    if (views)
        r = concat(st, views, 1, ax, dtype, "stack");
done:
    Py_XDECREF(views);
    Py_DECREF(t);
    return r;
}

static PyMethodDef functions[] = {
    {"where", (PyCFunction)(void (*)(void))mod_where, METH_VARARGS | METH_KEYWORDS,
     "where(condition, x, y, *, out=None, stream=None) -> Array: x where condition is true, "
     "else y (broadcast, promoted as numpy does). where(condition) alone is "
     "nonzero(condition)."},
    {"clip", (PyCFunction)(void (*)(void))mod_clip, METH_VARARGS | METH_KEYWORDS,
     "clip(a, a_min=None, a_max=None, out=None, *, stream=None, min=None, max=None) -> Array: "
     "minimum(maximum(a, a_min), a_max); a bound of None is no bound (min=/max= are numpy 2's "
     "names for the bounds)."},
    {"round", (PyCFunction)(void (*)(void))mod_round, METH_VARARGS | METH_KEYWORDS,
     "round(a, decimals=0, out=None) -> Array: numpy's round (ties to even; integers stay "
     "integers)."},
    {"around", (PyCFunction)(void (*)(void))mod_round, METH_VARARGS | METH_KEYWORDS,
     "around(a, decimals=0, out=None) -> Array: cukit.round."},
    {"real", (PyCFunction)mod_real, METH_O, "real(a) -> Array: a.real."},
    {"imag", (PyCFunction)mod_imag, METH_O, "imag(a) -> Array: a.imag."},
    {"full", (PyCFunction)(void (*)(void))mod_full, METH_VARARGS | METH_KEYWORDS,
     "full(shape, fill_value, dtype=None, device=None) -> Array filled with fill_value."},
    {"ones", (PyCFunction)(void (*)(void))mod_ones, METH_VARARGS | METH_KEYWORDS,
     "ones(shape, dtype=float64, device=None) -> Array of ones."},
    {"full_like", (PyCFunction)(void (*)(void))mod_full_like, METH_VARARGS | METH_KEYWORDS,
     "full_like(a, fill_value, dtype=None, device=None) -> Array with a's shape."},
    {"ones_like", (PyCFunction)(void (*)(void))mod_ones_like, METH_VARARGS | METH_KEYWORDS,
     "ones_like(a, dtype=None, device=None) -> Array of ones with a's shape and dtype."},
    {"arange", (PyCFunction)(void (*)(void))mod_arange, METH_VARARGS | METH_KEYWORDS,
     "arange([start, ]stop[, step], dtype=None, device=None) -> Array: evenly spaced values "
     "in [start, stop), computed as numpy computes them."},
    {"linspace", (PyCFunction)(void (*)(void))mod_linspace, METH_VARARGS | METH_KEYWORDS,
     "linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, device=None) -> "
     "Array of num evenly spaced values (float64 arithmetic, as numpy)."},
    {"concatenate", (PyCFunction)(void (*)(void))mod_concatenate, METH_VARARGS | METH_KEYWORDS,
     "concatenate(arrays, axis=0, dtype=None) -> Array: the arrays joined along axis (None: "
     "flattened), their dtypes promoted."},
    {"stack", (PyCFunction)(void (*)(void))mod_stack, METH_VARARGS | METH_KEYWORDS,
     "stack(arrays, axis=0, dtype=None) -> Array: same-shaped arrays joined along a new axis."},
    {NULL},
};

int
ck_functions_setup(PyObject *module, cukit_state *st)
{
    return PyModule_AddFunctions(module, functions);
}
