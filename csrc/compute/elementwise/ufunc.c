/* ufunc.c - cukit.ufunc: numpy's elementwise functions on device arrays, and the
 * Array's operators, each one C call
 *
 * A call classifies its operands (device arrays, numpy scalars, weak Python scalars),
 * looks the loop up in the ufunc's table (built once from numpy's loop list and
 * promotion rules), broadcasts, takes the output from the pool, finds the loaded
 * kernel by a packed 64-bit key in the ufunc's own table and launches it. Only the
 * first call of a (loop, dtypes, layout class) builds source and compiles. */
#include "compute/elementwise/ufunc_impl.h"

#include <string.h>

/* ------------------------------------------------------------------ the table */

/* The order is the enum below; the Array's operators index it. */
const ufunc_def ck_ufunc_defs[] = {
    {"add", 2, ALL, OUT_SAME, 0, "x1 + x2"},
    {"subtract", 2, NUM, OUT_SAME, F_NOBOOL, "x1 - x2"},
    {"multiply", 2, ALL, OUT_SAME, 0, "x1 * x2"},
    {"true_divide", 2, FLTC, OUT_SAME, F_TRUEDIV, "x1 / x2 (integers divide in float64)"},
    {"floor_divide", 2, INTS FLT, OUT_SAME, 0, "x1 // x2, rounded toward minus infinity"},
    {"remainder", 2, INTS FLT, OUT_SAME, 0, "x1 % x2, with the sign of x2 (Python's)"},
    {"power", 2, NUM, OUT_SAME, 0, "x1 ** x2"},
    {"left_shift", 2, INTS, OUT_SAME, 0, "x1 << x2"},
    {"right_shift", 2, INTS, OUT_SAME, 0, "x1 >> x2"},
    {"bitwise_and", 2, "?" INTS, OUT_SAME, 0, "x1 & x2"},
    {"bitwise_or", 2, "?" INTS, OUT_SAME, 0, "x1 | x2"},
    {"bitwise_xor", 2, "?" INTS, OUT_SAME, 0, "x1 ^ x2"},
    {"negative", 1, NUM, OUT_SAME, F_NOBOOL, "-x"},
    {"positive", 1, NUM, OUT_SAME, F_NOBOOL, "+x"},
    {"absolute", 1, ALL, OUT_REAL, 0, "|x| (complex: the modulus, a real array)"},
    {"invert", 1, "?" INTS, OUT_SAME, 0, "~x (bitwise not; logical not for bool)"},
    {"less", 2, ALL, OUT_BOOL, F_CMP, "x1 < x2"},
    {"less_equal", 2, ALL, OUT_BOOL, F_CMP, "x1 <= x2"},
    {"equal", 2, ALL, OUT_BOOL, F_CMP, "x1 == x2"},
    {"not_equal", 2, ALL, OUT_BOOL, F_CMP, "x1 != x2"},
    {"greater", 2, ALL, OUT_BOOL, F_CMP, "x1 > x2"},
    {"greater_equal", 2, ALL, OUT_BOOL, F_CMP, "x1 >= x2"},
    /* not operators */
    {"fmod", 2, INTS FLT, OUT_SAME, 0, "C's fmod: the remainder with the sign of x1"},
    {"maximum", 2, ALL, OUT_SAME, 0, "the larger of x1 and x2; NaN if either is NaN"},
    {"minimum", 2, ALL, OUT_SAME, 0, "the smaller of x1 and x2; NaN if either is NaN"},
    {"fmax", 2, ALL, OUT_SAME, 0, "the larger of x1 and x2, ignoring a NaN"},
    {"fmin", 2, ALL, OUT_SAME, 0, "the smaller of x1 and x2, ignoring a NaN"},
    {"arctan2", 2, FLT, OUT_SAME, 0, "the angle of the point (x2, x1)"},
    {"hypot", 2, FLT, OUT_SAME, 0, "sqrt(x1**2 + x2**2) without overflow"},
    {"copysign", 2, FLT, OUT_SAME, 0, "|x1| with the sign of x2"},
    {"logical_and", 2, ALL, OUT_BOOL, F_LOGICAL, "x1 and x2 (nonzero is true)"},
    {"logical_or", 2, ALL, OUT_BOOL, F_LOGICAL, "x1 or x2"},
    {"logical_xor", 2, ALL, OUT_BOOL, F_LOGICAL, "x1 xor x2"},
    {"logical_not", 1, ALL, OUT_BOOL, 0, "not x"},
    {"sign", 1, NUM, OUT_SAME, F_NOBOOL, "-1, 0 or 1 (complex: x / |x|)"},
    {"conjugate", 1, NUM, OUT_SAME, 0, "the complex conjugate"},
    {"sqrt", 1, FLTC, OUT_SAME, 0, "square root"},
    {"cbrt", 1, FLT, OUT_SAME, 0, "cube root"},
    {"square", 1, NUM, OUT_SAME, 0, "x * x"},
    {"reciprocal", 1, NUM, OUT_SAME, 0, "1 / x (integers: integer division)"},
    {"exp", 1, FLTC, OUT_SAME, 0, "e ** x"},
    {"exp2", 1, FLTC, OUT_SAME, 0, "2 ** x"},
    {"expm1", 1, FLTC, OUT_SAME, 0, "e ** x - 1, accurate near 0"},
    {"log", 1, FLTC, OUT_SAME, 0, "natural logarithm"},
    {"log2", 1, FLTC, OUT_SAME, 0, "base-2 logarithm"},
    {"log10", 1, FLTC, OUT_SAME, 0, "base-10 logarithm"},
    {"log1p", 1, FLTC, OUT_SAME, 0, "log(1 + x), accurate near 0"},
    {"sin", 1, FLTC, OUT_SAME, 0, "sine"},
    {"cos", 1, FLTC, OUT_SAME, 0, "cosine"},
    {"tan", 1, FLTC, OUT_SAME, 0, "tangent"},
    {"arcsin", 1, FLTC, OUT_SAME, 0, "inverse sine"},
    {"arccos", 1, FLTC, OUT_SAME, 0, "inverse cosine"},
    {"arctan", 1, FLTC, OUT_SAME, 0, "inverse tangent"},
    {"sinh", 1, FLTC, OUT_SAME, 0, "hyperbolic sine"},
    {"cosh", 1, FLTC, OUT_SAME, 0, "hyperbolic cosine"},
    {"tanh", 1, FLTC, OUT_SAME, 0, "hyperbolic tangent"},
    {"arcsinh", 1, FLTC, OUT_SAME, 0, "inverse hyperbolic sine"},
    {"arccosh", 1, FLTC, OUT_SAME, 0, "inverse hyperbolic cosine"},
    {"arctanh", 1, FLTC, OUT_SAME, 0, "inverse hyperbolic tangent"},
    {"floor", 1, "?" INTS FLT, OUT_SAME, 0, "largest integer <= x (integers unchanged)"},
    {"ceil", 1, "?" INTS FLT, OUT_SAME, 0, "smallest integer >= x (integers unchanged)"},
    {"trunc", 1, "?" INTS FLT, OUT_SAME, 0, "x rounded toward zero (integers unchanged)"},
    {"rint", 1, FLTC, OUT_SAME, 0, "x rounded to the nearest integer, ties to even"},
    {"isnan", 1, ALL, OUT_BOOL, 0, "x is NaN"},
    {"isinf", 1, ALL, OUT_BOOL, 0, "x is +inf or -inf"},
    {"isfinite", 1, ALL, OUT_BOOL, 0, "x is neither NaN nor infinite"},
    {"signbit", 1, FLT, OUT_BOOL, 0, "the sign bit of x is set"},
    /* internal: behind cukit.where, cukit.clip and Array.astype */
    {"where", 3, ALL, OUT_SAME, F_COND, "where(condition, x1, x2)"},
    {"clip", 3, ALL, OUT_SAME, F_PROMOTE3, "clip(a, a_min, a_max)"},
    {"copy", 1, ALL, OUT_SAME, F_CAST, "the values cast to the output's dtype"},
};
/* ------------------------------------------------------------------ the object */


/* numpy's linear search: the first loop every input casts to safely. */
static unsigned short
find_loop(const ufunc_def *def, const int *tc, int nin)
{
    int kinds_int = 1;
    for (int k = 0; k < nin; k++) {
        char kd = ck_dtypes[tc[k]].kind;
        kinds_int &= kd == 'b' || kd == 'i' || kd == 'u';
    }
    if ((def->flags & F_LOGICAL) && nin == 2 && tc[0] != tc[1])
        return CUKIT_TC_BOOL | CUKIT_TC_BOOL << 8;
    if (def->flags & F_NOBOOL) {
        int all_bool = 1;
        for (int k = 0; k < nin; k++)
            all_bool &= tc[k] == CUKIT_TC_BOOL;
        if (all_bool)
            return NOLOOP;
    }
    if ((def->flags & F_TRUEDIV) && kinds_int)
        return CUKIT_TC_F64 | CUKIT_TC_F64 << 8;
    if ((def->flags & F_CMP) && nin == 2 &&
        ((tc[0] == CUKIT_TC_I64 && tc[1] == CUKIT_TC_U64) ||
         (tc[0] == CUKIT_TC_U64 && tc[1] == CUKIT_TC_I64)))
        return (unsigned short)(tc[0] | tc[1] << 8);
    for (const char *c = def->loops; *c; c++) {
        if ((def->flags & F_CMP) && *c == 'e' && nin == 2) {
            /* numpy's exact mixed loops qQ->? and Qq->? come after the integer ones */
            if (ck_can_cast(tc[0], CUKIT_TC_I64, 0) && ck_can_cast(tc[1], CUKIT_TC_U64, 0))
                return CUKIT_TC_I64 | CUKIT_TC_U64 << 8;
            if (ck_can_cast(tc[0], CUKIT_TC_U64, 0) && ck_can_cast(tc[1], CUKIT_TC_I64, 0))
                return CUKIT_TC_U64 | CUKIT_TC_I64 << 8;
        }
        int l = ck_tc_of_char(*c), ok = 1;
        for (int k = 0; k < nin; k++)
            ok &= ck_can_cast(tc[k], l, 0);
        if (ok)
            return (unsigned short)(l | (nin > 1 ? l << 8 : 0));
    }
    return NOLOOP;
}

void
ck_ufunc_build_tables(ck_Ufunc *u)
{
    for (int a = 0; a < CK_NT; a++) {
        int tc[2] = {a, 0};
        u->loop1[a] = ck_math_tc(a) ? find_loop(u->def, tc, 1) : NOLOOP;
        for (int b = 0; b < CK_NT; b++) {
            tc[1] = b;
            u->loop2[a][b] = ck_math_tc(a) && ck_math_tc(b) ? find_loop(u->def, tc, 2) : NOLOOP;
        }
    }
}

/* The type a loop's result has, before the cast to the output. */
int
ck_result_tc(const ufunc_def *def, int ltc)
{
    if (def->out == OUT_BOOL)
        return CUKIT_TC_BOOL;
    if (def->out == OUT_REAL && ck_dtypes[ltc].kind == 'c')
        return ltc == CUKIT_TC_C64 ? CUKIT_TC_F32 : CUKIT_TC_F64;
    return ltc;
}

int
ck_loop_for_dtype(ck_Ufunc *u, const int *tc, int nin, int want, int *ltc)
{
    const ufunc_def *def = u->def;
    unsigned short e = nin == 1 ? u->loop1[tc[0]] : u->loop2[tc[0]][tc[1]];
    if (e != NOLOOP && ck_result_tc(def, e & 0xff) == want) {
        ltc[0] = e & 0xff;
        ltc[1] = e >> 8;
        return 0;
    }
    /* numpy meets ml_dtypes' bfloat16 loops only where an input or dtype= is bfloat16 */
    int bf16_in = want == CUKIT_TC_BF16;
    for (int k = 0; k < nin; k++)
        bf16_in |= tc[k] == CUKIT_TC_BF16;
    int first = -1;
    for (const char *c = def->loops; *c; c++) {
        int l = ck_tc_of_char(*c), ok = 1;
        if (ck_result_tc(def, l) != want || (l == CUKIT_TC_BF16 && !bf16_in))
            continue;
        if (first < 0)
            first = l;
        for (int k = 0; k < nin; k++)
            ok &= ck_can_cast(tc[k], l, 1);
        if (ok) {
            ltc[0] = l;
            ltc[1] = nin > 1 ? l : 0;
            return 0;
        }
    }
    if (first < 0) {
        PyErr_Format(PyExc_TypeError,
                     "No loop matching the specified signature and casting was found for ufunc "
                     "%s (cukit.%s has no loop giving dtype=%s)",
                     def->name, def->name, ck_dtypes[want].name);
        return -1;
    }
    for (int k = 0; k < nin; k++)
        if (!ck_can_cast(tc[k], first, 1))
            return PyErr_Format(PyExc_TypeError,
                                "Cannot cast ufunc '%s' input %d from dtype('%s') to dtype('%s') "
                                "with casting rule 'same_kind' (cast it first with astype)",
                                def->name, k, ck_dtypes[tc[k]].name, ck_dtypes[first].name),
                   -1;
    return -1; /* not reached: some input fails the cast */
}

/* ------------------------------------------------------------------ operands */

typedef struct {
    PyObject *obj;       /* borrowed */
    cukit_Array *arr;    /* borrowed; NULL for a scalar */
    int tc;              /* array or numpy scalar dtype; a weak scalar's once resolved */
    int weak;            /* CK_WEAK_* */
} opnd;

enum { CLS_OK = 0, CLS_FOREIGN = 1, CLS_PROXY = 2 };

/* Sort one operand (cast: of astype, which takes the float8s too). CLS_FOREIGN: not
 * something array math takes; -1: error. */
static int
classify(cukit_state *st, PyObject *v, opnd *o, int cast)
{
    o->obj = v;
    o->arr = NULL;
    o->weak = CK_WEAK_NONE;
    o->tc = -1;
    PyTypeObject *t = Py_TYPE(v);
    if (t == st->ArrayType) {
        o->arr = (cukit_Array *)v;
        o->tc = o->arr->typecode;
        if (!cukit_array_live(o->arr))
            return cukit_freed_error();
        if (!(cast ? ck_cast_tc(o->tc) : ck_math_tc(o->tc))) {
            PyErr_Format(PyExc_TypeError,
                         "cukit's array math does not support dtype %S (it takes bool, int8 to "
                         "uint64, float16, bfloat16, float32, float64, complex64 and "
                         "complex128)%s",
                         o->arr->dtype, ck_dtype_hint(o->tc));
            return -1;
        }
        return CLS_OK;
    }
    if (t == &PyFloat_Type) { o->weak = CK_WEAK_FLOAT; return CLS_OK; }
    if (t == &PyLong_Type) { o->weak = CK_WEAK_INT; return CLS_OK; }
    if (t == &PyBool_Type) { o->weak = CK_WEAK_BOOL; return CLS_OK; }
    if (t == &PyComplex_Type) { o->weak = CK_WEAK_COMPLEX; return CLS_OK; }
    if (st->compute->fuse_proxy && PyObject_TypeCheck(v, (PyTypeObject *)st->compute->fuse_proxy))
        return CLS_PROXY;
    if (cukit_numpy(st) < 0)
        return -1;
    if (PyObject_TypeCheck(v, (PyTypeObject *)st->np_generic)) {
        PyObject *dt = PyObject_GetAttr(v, st->memory->str_dtype);
        o->tc = dt ? cukit_typecode_of_dtype(dt) : -1;
        if (dt && o->tc >= 0 && !ck_math_tc(o->tc)) {
            PyErr_Format(PyExc_TypeError, "cukit's array math does not support %S scalars%s", dt,
                         ck_dtype_hint(o->tc));
            o->tc = -1;
        }
        Py_XDECREF(dt);
        return o->tc < 0 ? -1 : CLS_OK;
    }
    if (PyObject_TypeCheck(v, (PyTypeObject *)st->np_ndarray)) {
        PyErr_SetString(PyExc_TypeError,
                        "a numpy array cannot be mixed with a cukit.Array: it is in host memory "
                        "(cukit does no hidden copies); copy it to the device first with "
                        "cukit.to_device(x)");
        return -1;
    }
    if (PyBool_Check(v)) { o->weak = CK_WEAK_BOOL; return CLS_OK; }
    if (PyLong_Check(v)) { o->weak = CK_WEAK_INT; return CLS_OK; }
    if (PyFloat_Check(v)) { o->weak = CK_WEAK_FLOAT; return CLS_OK; }
    if (PyComplex_Check(v)) { o->weak = CK_WEAK_COMPLEX; return CLS_OK; }
    return CLS_FOREIGN;
}

/* 1 when Python int v fits typecode tc, 0 when not, -1 on error. */
static int
int_fits(PyObject *v, int tc)
{
    ck_slot s;
    if (ck_scalar_to(v, tc, 1, &s) == 0)
        return 1;
    if (!PyErr_ExceptionMatches(PyExc_OverflowError))
        return -1;
    PyErr_Clear();
    return 0;
}

/* numpy 2 compares a Python int with an integer array exactly, whatever its size:
 * give the scalar a type that holds it. 0 / -1. */
static int
widen_compared_int(opnd *o, int other)
{
    char k = ck_dtypes[other].kind;
    if (k != 'i' && k != 'u')
        return 0;
    int fits = int_fits(o->obj, o->tc);
    if (fits != 0)
        return fits < 0 ? -1 : 0;
    if ((fits = int_fits(o->obj, CUKIT_TC_I64)) != 0) {
        o->tc = CUKIT_TC_I64;
        return fits < 0 ? -1 : 0;
    }
    if ((fits = int_fits(o->obj, CUKIT_TC_U64)) != 0) {
        o->tc = CUKIT_TC_U64;
        return fits < 0 ? -1 : 0;
    }
    o->tc = CUKIT_TC_F64;
    return 0;
}

/* ------------------------------------------------------------------ errors */

static PyObject *
type_names(const int *tc, int n)
{
    PyObject *parts = PyList_New(0);
    for (int k = 0; parts && k < n; k++) {
        PyObject *s = PyUnicode_FromString(ck_dtypes[tc[k]].name);
        if (s == NULL || PyList_Append(parts, s) < 0)
            Py_CLEAR(parts);
        Py_XDECREF(s);
    }
    PyObject *sep = PyUnicode_FromString(", ");
    PyObject *out = parts && sep ? PyUnicode_Join(sep, parts) : NULL;
    Py_XDECREF(parts);
    Py_XDECREF(sep);
    return out;
}

int
ck_no_loop(const ufunc_def *def, const int *tc, int nin)
{
    if (strcmp(def->name, "subtract") == 0 && tc[0] == CUKIT_TC_BOOL && tc[1] == CUKIT_TC_BOOL) {
        PyErr_SetString(PyExc_TypeError,
                        "boolean subtract, the `-` operator, is not supported (as in numpy); "
                        "use the bitwise_xor, the `^` operator, or the logical_xor function");
        return -1;
    }
    if (strcmp(def->name, "negative") == 0 && tc[0] == CUKIT_TC_BOOL) {
        PyErr_SetString(PyExc_TypeError,
                        "boolean negative, the `-` operator, is not supported (as in numpy); "
                        "use the `~` operator or the logical_not function");
        return -1;
    }
    int takes[CK_NT], n = 0;
    for (const char *c = def->loops; *c; c++)
        takes[n++] = ck_tc_of_char(*c);
    PyObject *have = type_names(tc, nin), *want = type_names(takes, n);
    if (have && want)
        PyErr_Format(PyExc_TypeError,
                     "cukit.%s does not support %s %U (it has loops for %U; cast "
                     "first with astype)",
                     def->name, nin > 1 ? "the input types" : "the input type", have, want);
    Py_XDECREF(have);
    Py_XDECREF(want);
    return -1;
}

static int
cast_error(const ufunc_def *def, int from, int to)
{
    PyErr_Format(PyExc_TypeError,
                 "Cannot cast ufunc '%s' output from dtype('%s') to dtype('%s') with casting "
                 "rule 'same_kind' (out= must hold the result's kind; numpy refuses it too)",
                 def->name, ck_dtypes[from].name, ck_dtypes[to].name);
    return -1;
}

static int
out_shape_error(cukit_Array *out, int ndim, const Py_ssize_t *shape)
{
    PyObject *have = cukit_array_shape(out), *want = PyTuple_New(ndim);
    for (int d = 0; want && d < ndim; d++) {
        PyObject *v = PyLong_FromSsize_t(shape[d]);
        if (v == NULL)
            Py_CLEAR(want);
        else
            PyTuple_SET_ITEM(want, d, v);
    }
    if (have && want)
        PyErr_Format(PyExc_ValueError,
                     "non-broadcastable output operand with shape %R doesn't match the broadcast "
                     "shape %R",
                     have, want);
    Py_XDECREF(have);
    Py_XDECREF(want);
    return -1;
}

/* ------------------------------------------------------------------ dispatch */


/* The fuse tracer's hook: fuse_apply(ufunc, inputs), the function cukit.fuse registered
 * with its traced values' class. New ref or NULL. */
static PyObject *
apply_proxy(ck_Ufunc *u, PyObject *const *in, int nin)
{
    PyObject *args = PyTuple_New(nin);
    for (int k = 0; args && k < nin; k++)
        PyTuple_SET_ITEM(args, k, Py_NewRef(in[k]));
    PyObject *r = args ? PyObject_CallFunctionObjArgs(u->st->compute->fuse_apply, (PyObject *)u,
                                                      args, NULL)
                       : NULL;
    Py_XDECREF(args);
    return r;
}

/* Keep what a launch uses alive with a stream capture in progress. 0 / -1. */
static int
keep_for_capture(cukit_state *st, PyObject *stream, PyObject *out, PyObject *const *in, int nin)
{
    if (stream == NULL || !Py_IS_TYPE(stream, st->runtime->StreamType) ||
        ((cukit_Stream *)stream)->capture == NULL)
        return 0;
    PyObject *t = PyTuple_New(nin + 1);
    if (t == NULL)
        return -1;
    PyTuple_SET_ITEM(t, 0, Py_NewRef(out));
    for (int k = 0; k < nin; k++)
        PyTuple_SET_ITEM(t, k + 1, Py_NewRef(in[k]));
    int rc = cukit_capture_keep(st, stream, t);
    Py_DECREF(t);
    return rc;
}

/* 1 when a and b's element ranges intersect without being the same layout. */
static int
partial_overlap(cukit_Array *a, cukit_Array *b)
{
    if (a->buffer != b->buffer || a->owner != b->owner || a->size == 0 || b->size == 0)
        return 0;
    CUdeviceptr pa = cukit_array_ptr(a), pb = cukit_array_ptr(b);
    if (pa == pb && a->ndim == b->ndim && a->itemsize == b->itemsize &&
        memcmp(a->shape, b->shape, sizeof(Py_ssize_t) * (size_t)a->ndim) == 0 &&
        memcmp(a->strides, b->strides, sizeof(Py_ssize_t) * (size_t)a->ndim) == 0)
        return 0;
    long long alo = 0, ahi = 0, blo = 0, bhi = 0;
    for (int d = 0; d < a->ndim; d++) {
        long long s = (long long)(a->shape[d] - 1) * a->strides[d];
        if (s < 0) alo += s; else ahi += s;
    }
    for (int d = 0; d < b->ndim; d++) {
        long long s = (long long)(b->shape[d] - 1) * b->strides[d];
        if (s < 0) blo += s; else bhi += s;
    }
    return (long long)pa + alo < (long long)pb + bhi + b->itemsize &&
           (long long)pb + blo < (long long)pa + ahi + a->itemsize;
}

/* where=: 1 to compute everywhere, 0 nowhere, 2 under the bool array *mask (borrowed).
 * -1 with numpy's TypeError otherwise. */
static int
where_arg(cukit_state *st, const ufunc_def *def, PyObject *w, cukit_Device *dev,
          cukit_Array **mask)
{
    *mask = NULL;
    if (w == NULL || w == Py_True)
        return 1;
    if (w == Py_False)
        return 0;
    if (Py_IS_TYPE(w, st->ArrayType)) {
        cukit_Array *m = (cukit_Array *)w;
        if (!cukit_array_live(m))
            return cukit_freed_error();
        if (m->device != dev) {
            PyErr_Format(PyExc_ValueError,
                         "cukit.%s(): where= is on device %d but the inputs on device %d",
                         def->name, m->device->ordinal, dev->ordinal);
            return -1;
        }
        if (m->typecode != CUKIT_TC_BOOL) {
            PyErr_Format(PyExc_TypeError,
                         "Cannot cast array data from %R to dtype('bool') according to "
                         "the rule 'safe' (cukit.%s's where= takes a bool array: compare first, "
                         "e.g. where=x != 0)",
                         m->dtype, def->name);
            return -1;
        }
        *mask = m;
        return 2;
    }
    if (cukit_numpy(st) < 0)
        return -1;
    if (PyObject_TypeCheck(w, (PyTypeObject *)st->np_ndarray)) {
        PyErr_Format(PyExc_TypeError,
                     "cukit.%s(): where= is a numpy array in host memory; copy it to the device "
                     "first with cukit.to_device(mask)",
                     def->name);
        return -1;
    }
    if (PyLong_Check(w) || PyObject_TypeCheck(w, (PyTypeObject *)st->np_generic)) {
        PyObject *dt = PyLong_Check(w) ? NULL : PyObject_GetAttr(w, st->memory->str_dtype);
        int tc = dt ? cukit_typecode_of_dtype(dt) : CUKIT_TC_BOOL;
        Py_XDECREF(dt);
        if (tc == CUKIT_TC_BOOL || PyLong_Check(w)) {
            int t = PyObject_IsTrue(w);
            return t < 0 ? -1 : t;
        }
    }
    PyErr_Format(PyExc_TypeError,
                 "cukit.%s(): where= takes a bool cukit.Array or True/False, not %s", def->name,
                 Py_TYPE(w)->tp_name);
    return -1;
}

static PyObject *dispatch(ck_Ufunc *u, PyObject *const *in, int nin, PyObject *out_o,
                          PyObject *stream_o, int mode, int cast_tc, int dtype_tc,
                          PyObject *where_o);

PyObject *
ck_dispatch(ck_Ufunc *u, PyObject *const *in, int nin, PyObject *out_o, PyObject *stream_o,
            int mode, int cast_tc)
{
    return dispatch(u, in, nin, out_o, stream_o, mode, cast_tc, -1, NULL);
}

PyObject *
ck_dispatch_call(ck_Ufunc *u, PyObject *const *in, PyObject *out_o, PyObject *stream_o,
                 int dtype_tc, PyObject *where_o)
{
    return dispatch(u, in, u->def->nin, out_o, stream_o, MODE_CALL, -1, dtype_tc, where_o);
}

/* dispatch's first step: classify the nin inputs into op (arrays, scalars and their weak
 * kinds resolved by NEP 50 against the strong dtypes), and find their device. 0; 1 with
 * *early the call's whole answer (a fuse proxy's, or NotImplemented for an operator on
 * something not ours); -1 with an exception. */
static int
classify_inputs(ck_Ufunc *u, PyObject *const *in, int nin, int mode, int dtype_tc,
                PyObject *where_o, opnd *op, cukit_Device **dev, PyObject **early)
{
    cukit_state *st = u->st;
    const ufunc_def *def = u->def;
    int strong = -1;
    *dev = NULL;
    for (int k = 0; k < nin; k++) {
        int r = classify(st, in[k], &op[k], (def->flags & F_CAST) != 0);
        if (r < 0)
            return -1;
        if (r == CLS_PROXY) {
            if (dtype_tc >= 0 || where_o != NULL)
                return ck_failed(
                    PyErr_Format(PyExc_TypeError,
                                 "cukit.fuse cannot fuse cukit.%s with %s (call it outside "
                                 "the fused function, or cast with astype inside)",
                                 def->name, dtype_tc >= 0 ? "dtype=" : "where="));
            *early = apply_proxy(u, in, nin);
            return *early ? 1 : -1;
        }
        if (r == CLS_FOREIGN) {
            if (mode == MODE_OPERATOR)
                return *early = Py_NewRef(Py_NotImplemented), 1;
            return ck_failed(
                PyErr_Format(PyExc_TypeError,
                             "cukit.%s() argument %d: expected a cukit.Array or a Python or "
                             "numpy scalar, got %s (make a device array with "
                             "cukit.asarray or cukit.to_device)",
                             def->name, k + 1, Py_TYPE(in[k])->tp_name));
        }
        if (op[k].arr) {
            if (*dev == NULL)
                *dev = op[k].arr->device;
            else if (op[k].arr->device != *dev)
                return ck_failed(
                    PyErr_Format(PyExc_ValueError,
                                 "cukit.%s(): the arrays are on device %d and device %d; "
                                 "copy one over first with cukit.to_device(x, device=...)",
                                 def->name, (*dev)->ordinal, op[k].arr->device->ordinal));
        }
        if (!op[k].weak && !((def->flags & F_COND) && k == 0))
            strong = strong < 0 ? op[k].tc : ck_promote(strong, op[k].tc);
    }
    if (*dev == NULL)
        return ck_failed(
            PyErr_Format(PyExc_TypeError,
                         "cukit.%s() needs at least one cukit.Array among its inputs (for "
                         "scalars alone, use numpy)",
                         def->name));
    for (int k = 0; k < nin; k++) {
        if (!op[k].weak)
            continue;
        op[k].tc =
            ((def->flags & F_COND) && k == 0) ? CUKIT_TC_BOOL : ck_weak_tc(op[k].weak, strong);
        if ((def->flags & F_CMP) && op[k].weak == CK_WEAK_INT && nin == 2 &&
            widen_compared_int(&op[k], op[1 - k].tc) < 0)
            return -1;
    }
    return 0;
}

/* The loop that computes on the inputs' types: ltc[k], the type each input is computed
 * in (numpy's loop for the types, or the one dtype= asks for). 0 / -1 with numpy's
 * error when there is none. */
static int
choose_loop(ck_Ufunc *u, const opnd *op, int nin, int dtype_tc, int *ltc)
{
    const ufunc_def *def = u->def;
    int tcs[3];
    for (int k = 0; k < nin; k++)
        tcs[k] = op[k].tc;
    if (def->flags & F_CAST) {
        ltc[0] = tcs[0];
    }
    else if (nin == 3) {
        int t = (def->flags & F_COND) ? ck_promote(tcs[1], tcs[2])
                                      : ck_promote(ck_promote(tcs[0], tcs[1]), tcs[2]);
        ltc[0] = (def->flags & F_COND) ? CUKIT_TC_BOOL : t;
        ltc[1] = ltc[2] = t;
    }
    else if (dtype_tc >= 0) {
        if (ck_loop_for_dtype(u, tcs, nin, dtype_tc, ltc) < 0)
            return -1;
    }
    else {
        unsigned short e = nin == 1 ? u->loop1[tcs[0]] : u->loop2[tcs[0]][tcs[1]];
        if (e == NOLOOP) {
            ck_no_loop(def, tcs, nin);
            return -1;
        }
        ltc[0] = e & 0xff;
        ltc[1] = e >> 8;
    }
    return 0;
}

/* The kernel of u for this layout (class cls, vector width vec), its inputs' types and
 * loops, output type otc and (masked) a where= mask, from u's table or compiled now.
 * 0 / -1. */
static int
kernel_for(ck_Ufunc *u, cukit_Device *dev, const opnd *op, int nin, const int *ltc, int rtc,
           int otc, int masked, const ck_layout *layout, int cls, int vec, CUfunction *func)
{
    cukit_state *st = u->st;
    const ufunc_def *def = u->def;
    /* the kernel: bits 0-2 class, 3-5 vector width, 7-12 device, 13-17 output type, then
     * 11 bits per input (type, scalar, loop type), 51 where=, 52-56 tiled operands */
    int vlog = vec >= 16 ? 4 : vec >= 8 ? 3 : vec >= 4 ? 2 : vec >= 2 ? 1 : 0;
    uint64_t key = (1ULL << 63) | (uint64_t)cls | (uint64_t)vlog << 3 |
                   (uint64_t)(dev->ordinal & 63) << 7 | (uint64_t)otc << 13 |
                   (uint64_t)masked << 51 | (uint64_t)layout->tiled << 52;
    for (int k = 0; k < nin; k++)
        key |= (uint64_t)(op[k].tc | (op[k].arr == NULL) << 5 | ltc[k] << 6) << (18 + 11 * k);
    ck_entry *e = ck_kcache_find(&u->cache, key);
    if (e) {
        *func = e->func;
        return 0;
    }
    ck_operand ops[CK_UMAXOP + 1];
    memset(ops, 0, sizeof ops);
    ops[0].tc = otc;
    ops[0].output = 1;
    for (int k = 0; k < nin; k++) {
        ops[k + 1].tc = op[k].arr ? op[k].tc : ltc[k];
        ops[k + 1].scalar = op[k].arr == NULL;
    }
    if (masked)
        ops[nin + 1].tc = CUKIT_TC_BOOL;
    for (int k = 0; k < layout->nops; k++)
        ops[k].tiled = (int)(layout->tiled >> k & 1);
    char func_name[48], file[64];
    PyOS_snprintf(func_name, sizeof func_name, "uf_%s", def->name);
    PyOS_snprintf(file, sizeof file, "cukit_%s.cu", def->name);
    ck_ufunc_body body = {func_name, nin, {ltc[0], ltc[1], ltc[2]}, rtc, masked};
    PyObject *src = ck_ufunc_source(&body, ops, cls, vec);
    PyObject *opts = src ? Py_BuildValue("(s)", "-fmad=false") : NULL;
    PyObject *module = NULL;
    int rc = opts ? cukit_builtin_function(st, dev, src, file, opts, "ck", &module, func) : -1;
    Py_XDECREF(src);
    Py_XDECREF(opts);
    if (rc == 0)
        rc = ck_kcache_add(&u->cache, key, *func, vec, module);
    Py_XDECREF(module);
    return rc;
}

/* The one call: ufunc u on inputs in[0..nin) into out_o (NULL/None: a new array).
 * cast_tc >= 0 (astype) names the output dtype; dtype_tc >= 0 is numpy's dtype=;
 * where_o (NULL: none) numpy's where=. New ref (the output) or NULL;
 * Py_NotImplemented in operator mode for operands that are not ours. */
static PyObject *
dispatch(ck_Ufunc *u, PyObject *const *in, int nin, PyObject *out_o, PyObject *stream_o,
         int mode, int cast_tc, int dtype_tc, PyObject *where_o)
{
    cukit_state *st = u->st;
    const ufunc_def *def = u->def;
    opnd op[3];
    memset(op, 0, sizeof op);
    cukit_Device *dev;
    PyObject *early = NULL;
    int r = classify_inputs(u, in, nin, mode, dtype_tc, where_o, op, &dev, &early);
    if (r != 0)
        return r > 0 ? early : NULL;
    int ltc[3] = {0, 0, 0};
    if (choose_loop(u, op, nin, dtype_tc, ltc) < 0)
        return NULL;
    int rtc = ck_result_tc(def, nin == 3 ? ltc[1] : ltc[0]);
    cukit_Array *mask = NULL;
    int where = where_arg(st, def, where_o, dev, &mask);
    if (where < 0)
        return NULL;

    /* operands: 0 the output, then the inputs */
    ck_layout layout;
    layout.nops = nin + 1;
    cukit_Array *arrays[4];
    for (int k = 0; k < nin; k++) {
        arrays[k] = op[k].arr;
        if (op[k].arr == NULL) {
            layout.scalar[k + 1] = 1;
            layout.itemsize[k + 1] = 0;
            if (ck_scalar_to(op[k].obj, ltc[k], op[k].weak == CK_WEAK_INT, &layout.val[k + 1]) < 0)
                return NULL;
        }
    }
    if (u->index == U_POW && nin == 2 && op[1].arr == NULL && ck_dtypes[ltc[1]].kind == 'i') {
        /* numpy's check, possible here because the exponent is on the host */
        PyObject *zero = PyLong_FromLong(0);
        int neg = zero ? PyObject_RichCompareBool(op[1].obj, zero, Py_LT) : -1;
        Py_XDECREF(zero);
        if (neg != 0)
            return neg < 0 ? NULL
                           : PyErr_Format(PyExc_ValueError,
                                          "Integers to negative integer powers are not allowed.");
    }
    int ndim;
    Py_ssize_t shape[CUKIT_MAXDIM];
    arrays[nin] = mask;
    if (ck_broadcast(arrays, nin + (mask != NULL), &ndim, shape) < 0)
        return NULL;
    cukit_Array *out;
    int otc;
    if (out_o != NULL && out_o != Py_None) {
        if (!Py_IS_TYPE(out_o, st->ArrayType))
            return PyErr_Format(PyExc_TypeError, "cukit.%s(): out= must be a cukit.Array, not %s",
                                def->name, Py_TYPE(out_o)->tp_name);
        out = (cukit_Array *)out_o;
        otc = out->typecode;
        if (!cukit_array_live(out))
            return cukit_freed_error(), NULL;
        if (out->device != dev)
            return PyErr_Format(PyExc_ValueError,
                                "cukit.%s(): out= is on device %d but the inputs on device %d",
                                def->name, out->device->ordinal, dev->ordinal);
        if (out->flags & CUKIT_ARRAY_READONLY)
            return PyErr_Format(PyExc_ValueError, "cukit.%s(): out= is read-only", def->name);
        if (out->ndim != ndim ||
            memcmp(out->shape, shape, sizeof(Py_ssize_t) * (size_t)ndim) != 0)
            return out_shape_error(out, ndim, shape), NULL;
        if (!(cast_tc >= 0 ? ck_cast_tc(otc) : ck_math_tc(otc)))
            return PyErr_Format(PyExc_TypeError, "cukit.%s(): out= has dtype %S, which array "
                                "math does not support%s", def->name, out->dtype,
                                ck_dtype_hint(otc));
        if (cast_tc < 0 && !ck_can_cast(rtc, otc, 1))
            return cast_error(def, rtc, otc), NULL;
        if (mask && partial_overlap((cukit_Array *)out_o, mask)) {
            /* read from a copy, as numpy does */
            cukit_Array *c = cukit_array_copy(mask);
            if (c == NULL)
                return NULL;
            PyObject *r = dispatch(u, in, nin, out_o, stream_o, mode, cast_tc, dtype_tc,
                                   (PyObject *)c);
            Py_DECREF(c);
            return r;
        }
        Py_INCREF(out);
        /* an input that overlaps out= without being it is read from a copy first */
        for (int k = 0; k < nin; k++) {
            if (op[k].arr && partial_overlap(out, op[k].arr)) {
                cukit_Array *c = cukit_array_copy(op[k].arr);
                if (c == NULL) {
                    Py_DECREF(out);
                    return NULL;
                }
                PyObject *args[3];
                for (int j = 0; j < nin; j++)
                    args[j] = j == k ? (PyObject *)c : in[j];
                PyObject *r = dispatch(u, args, nin, out_o, stream_o, mode, cast_tc, dtype_tc,
                                       where_o);
                Py_DECREF(c);
                Py_DECREF(out);
                return r;
            }
        }
    }
    else {
        otc = cast_tc >= 0 ? cast_tc : rtc;
        /* a kept block only for an output the kernel writes whole (not under where=) */
        out = mask || where == 0 ? ck_empty(st, dev, otc, ndim, shape)
                                 : ck_empty_out(st, dev, otc, ndim, shape, stream_o);
        if (out == NULL)
            return NULL;
    }
    if (out->size == 0 || where == 0)
        return (PyObject *)out;
    ck_layout_operand(&layout, 0, out, ndim, shape);
    unsigned inputs = 0;
    for (int k = 0; k < nin; k++) {
        if (op[k].arr) {
            ck_layout_operand(&layout, k + 1, op[k].arr, ndim, shape);
            inputs |= 1u << (k + 1);
        }
    }
    if (mask) {
        layout.nops = nin + 2;
        ck_layout_operand(&layout, nin + 1, mask, ndim, shape);
        inputs |= 1u << (nin + 1);
    }
    int vec;
    int cls = ck_layout_finish(&layout, ndim, shape, out_o && out_o != Py_None ? 0 : -1, 0, inputs,
                               &vec);

    CUfunction func;
    if (kernel_for(u, dev, op, nin, ltc, rtc, otc, mask != NULL, &layout, cls, vec, &func) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    CUstream h = NULL;
    if ((stream_o == NULL || stream_o == Py_None) && (stream_o = (PyObject *)cukit_stream_current(st, dev)) == NULL)
        stream_o = Py_None; /* no `with stream:`: the legacy stream */
    if (stream_o != Py_None &&
        (ck_stream(st, stream_o, dev, NULL, &h) < 0 ||
         keep_for_capture(st, stream_o, (PyObject *)out, in, nin) < 0 ||
         (mask && cukit_capture_keep(st, stream_o, (PyObject *)mask) < 0))) {
        Py_DECREF(out);
        return NULL;
    }
    if (ck_launch(dev, func, &layout, cls, vec, h) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return (PyObject *)out;
}

