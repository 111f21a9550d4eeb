/* reductions.c - numpy's reductions on cukit.Array: sum, prod, max/min, argmax/argmin,
 * all/any, count_nonzero, nansum/nanmax/nanmin, mean, var, std, ptp, dot, vdot, inner
 * and the vector norms, as module functions and Array methods, each one C call
 *
 * Each kind is four texts (map, reduce, identity, post) over numpy's types: the result
 * and accumulator dtypes follow numpy (sum of int32 gives int64, float16 accumulates in
 * float32, mean of integers is float64) and the engine (reduce.c) runs them. */
#include "compute/reduce/reduce_impl.h"
#include "compute/elementwise/ufunc_impl.h"

#include <stdlib.h>
#include <string.h>

enum {
    RK_SUM, RK_PROD, RK_MAX, RK_MIN, RK_ARGMAX, RK_ARGMIN, RK_ALL, RK_ANY, RK_COUNT,
    RK_NANSUM, RK_NANMAX, RK_NANMIN, RK_MEAN, RK_VAR, RK_STD, RK_PTP, RK_DOT, RK_VDOT,
    RK_NORM1, RK_NORM2, RK_NORMINF, RK_NORMNINF, RK_KINDS
};

/* numpy's name of the ufunc behind a kind (its error messages name it) */
static const char *const kind_ufunc[RK_KINDS] = {
    [RK_MAX] = "maximum", [RK_MIN] = "minimum", [RK_NANMAX] = "fmax", [RK_NANMIN] = "fmin",
    [RK_PTP] = "maximum", [RK_NORMINF] = "maximum", [RK_NORMNINF] = "minimum",
};

/* ------------------------------------------------------------------ arguments */

enum { A_A, A_AXIS, A_DTYPE, A_OUT, A_KEEPDIMS, A_INITIAL, A_WHERE, A_DDOF, A_STREAM, A_COUNT };
static const char *const arg_names[A_COUNT] = {"a", "axis", "dtype", "out", "keepdims",
                                               "initial", "where", "ddof", "stream"};
#define KW(x) (1u << (x))

typedef struct {
    const char *name;
    int kind;
    signed char pos[8]; /* positional parameters in numpy's order, -1 ends */
    unsigned kw;        /* accepted by keyword */
} rdef;

#define SUMLIKE {A_A, A_AXIS, A_DTYPE, A_OUT, A_KEEPDIMS, A_INITIAL, A_WHERE, -1}
#define MAXLIKE {A_A, A_AXIS, A_OUT, A_KEEPDIMS, A_INITIAL, A_WHERE, -1}
#define SUMKW (KW(A_AXIS) | KW(A_DTYPE) | KW(A_OUT) | KW(A_KEEPDIMS) | KW(A_INITIAL) | \
               KW(A_WHERE) | KW(A_STREAM))
#define MAXKW (KW(A_AXIS) | KW(A_OUT) | KW(A_KEEPDIMS) | KW(A_INITIAL) | KW(A_WHERE) | KW(A_STREAM))
#define ARGKW (KW(A_AXIS) | KW(A_OUT) | KW(A_KEEPDIMS) | KW(A_STREAM))
#define ALLKW (KW(A_AXIS) | KW(A_OUT) | KW(A_KEEPDIMS) | KW(A_WHERE) | KW(A_STREAM))
#define MEANKW (KW(A_AXIS) | KW(A_DTYPE) | KW(A_OUT) | KW(A_KEEPDIMS) | KW(A_STREAM))

/* The order is the method table of the Array (array.h's CUKIT_CALL_REDUCE + index). */
static const rdef defs[] = {
    {"sum", RK_SUM, SUMLIKE, SUMKW},
    {"prod", RK_PROD, SUMLIKE, SUMKW},
    {"max", RK_MAX, MAXLIKE, MAXKW},
    {"min", RK_MIN, MAXLIKE, MAXKW},
    {"argmax", RK_ARGMAX, {A_A, A_AXIS, A_OUT, -1}, ARGKW},
    {"argmin", RK_ARGMIN, {A_A, A_AXIS, A_OUT, -1}, ARGKW},
    {"all", RK_ALL, {A_A, A_AXIS, A_OUT, A_KEEPDIMS, -1}, ALLKW},
    {"any", RK_ANY, {A_A, A_AXIS, A_OUT, A_KEEPDIMS, -1}, ALLKW},
    {"mean", RK_MEAN, {A_A, A_AXIS, A_DTYPE, A_OUT, A_KEEPDIMS, -1}, MEANKW},
    {"var", RK_VAR, {A_A, A_AXIS, A_DTYPE, A_OUT, A_DDOF, A_KEEPDIMS, -1}, MEANKW | KW(A_DDOF)},
    {"std", RK_STD, {A_A, A_AXIS, A_DTYPE, A_OUT, A_DDOF, A_KEEPDIMS, -1}, MEANKW | KW(A_DDOF)},
    {"ptp", RK_PTP, {A_A, A_AXIS, A_OUT, A_KEEPDIMS, -1}, ARGKW},
    /* functions only */
    {"amax", RK_MAX, MAXLIKE, MAXKW},
    {"amin", RK_MIN, MAXLIKE, MAXKW},
    {"count_nonzero", RK_COUNT, {A_A, A_AXIS, -1}, KW(A_AXIS) | KW(A_KEEPDIMS) | KW(A_STREAM)},
    {"nansum", RK_NANSUM, SUMLIKE, SUMKW},
    {"nanmax", RK_NANMAX, MAXLIKE, MAXKW},
    {"nanmin", RK_NANMIN, MAXLIKE, MAXKW},
};
#define NDEFS ((int)(sizeof defs / sizeof *defs))
#define NMETHODS 12

/* Sort fastcall arguments into v[A_*] (NULL: not given). 0 / -1 with numpy's TypeError. */
static int
parse(const rdef *d, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **v)
{
    memset(v, 0, sizeof(PyObject *) * A_COUNT);
    int npos = 0;
    while (npos < 8 && d->pos[npos] >= 0)
        npos++;
    if (nargs < 1 || nargs > npos)
        return PyErr_Format(PyExc_TypeError, "cukit.%s() takes 1 to %d positional arguments, "
                            "%zd given", d->name, npos, nargs), -1;
    for (Py_ssize_t i = 0; i < nargs; i++)
        v[d->pos[i]] = args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i);
        int which = -1;
        for (int a = 1; a < A_COUNT && which < 0; a++)
            if ((d->kw & KW(a)) && PyUnicode_CompareWithASCIIString(key, arg_names[a]) == 0)
                which = a;
        if (which < 0)
            return PyErr_Format(PyExc_TypeError, "cukit.%s() got an unexpected keyword argument "
                                "%R", d->name, key), -1;
        if (v[which])
            return PyErr_Format(PyExc_TypeError, "cukit.%s() got multiple values for argument "
                                "'%s'", d->name, arg_names[which]), -1;
        v[which] = args[nargs + i];
    }
    return 0;
}

/* The argument as a live cukit.Array, or a TypeError saying what to pass. */
static cukit_Array *
as_array(cukit_state *st, PyObject *v, const char *who, const char *what)
{
    if (Py_IS_TYPE(v, st->ArrayType)) {
        cukit_Array *a = (cukit_Array *)v;
        if (!cukit_array_live(a))
            return cukit_freed_error(), NULL;
        if (!ck_math_tc(a->typecode))
            return PyErr_Format(PyExc_TypeError, "cukit.%s() does not support dtype %S%s", who,
                                a->dtype, ck_dtype_hint(a->typecode)), NULL;
        return a;
    }
    if (cukit_numpy(st) == 0 && PyObject_TypeCheck(v, (PyTypeObject *)st->np_ndarray))
        return PyErr_Format(PyExc_TypeError, "cukit.%s(): %s is a numpy array in host memory; "
                            "copy it to the device first with cukit.to_device(x)", who, what),
               NULL;
    PyErr_Clear();
    return PyErr_Format(PyExc_TypeError, "cukit.%s(): %s must be a cukit.Array, not %s", who,
                        what, Py_TYPE(v)->tp_name), NULL;
}

/* ------------------------------------------------------------------ types */

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

static int
compute_tc(int tc)
{
    return tc == CUKIT_TC_F16 || tc == CUKIT_TC_BF16 ? CUKIT_TC_F32 : tc;
}

static int
real_tc(int tc)
{
    return tc == CUKIT_TC_C64 ? CUKIT_TC_F32 : tc == CUKIT_TC_C128 ? CUKIT_TC_F64 : tc;
}

static int
float_of(int tc)
{
    char k = ck_dtypes[tc].kind;
    return (k == 'b' || k == 'i' || k == 'u') ? CUKIT_TC_F64 : tc;
}

/* ------------------------------------------------------------------ one reduction */

typedef struct {
    int kind;
    cukit_Array *a, *b;     /* borrowed: the input, a second one (dot, var's mean) */
    uint64_t axes;
    int dtype;              /* -1: numpy's default */
    PyObject *out;          /* borrowed or NULL */
    int keepdims;
    PyObject *initial;      /* borrowed or NULL */
    cukit_Array *where;     /* borrowed or NULL */
    double ddof;
    PyObject *stream;       /* borrowed or NULL */
} rreq;

static PyObject *run(cukit_state *st, const char *who, rreq *q);
static PyObject *products(cukit_state *st, int which, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames);

static PyObject *
empty_error(int kind)
{
    if (kind == RK_ARGMAX || kind == RK_ARGMIN)
        return PyErr_Format(PyExc_ValueError, "attempt to get %s of an empty sequence",
                            kind == RK_ARGMAX ? "argmax" : "argmin");
    return PyErr_Format(PyExc_ValueError,
                        "zero-size array to reduction operation %s which has no identity",
                        kind_ufunc[kind]);
}

/* The types and (texts: 1) the texts of one reduction kind on input type itc (btc: the
 * second input's, or -1; wk >= 0: input wk is a where= mask). 0 / -1 (TypeError). */
typedef struct {
    int otc, atc, vtc;
    char acc[64], map[256], head[64];
    const char *red, *ident, *post;
} rtexts;

static int
describe(const char *who, int kind, int itc, int btc, int dtype, int wk, int texts, rtexts *t)
{
/* the texts are only written when asked (a compile): a launch of a cached module needs
 * the types alone, and formatting them is most of a small reduction's host time */
#define PUT(...) do { if (texts) PyOS_snprintf(__VA_ARGS__); } while (0)
    int otc, atc, vtc = compute_tc(itc);
    char *acc = t->acc, *map = t->map, *head = t->head;
    const char *red = "uf_add(a, b)", *ident = "0", *post = "y = cv<TO>(a)";
    head[0] = acc[0] = map[0] = 0;
    PUT(map, sizeof t->map, "cv<TA>(x0)");
    switch (kind) {
    case RK_SUM: case RK_PROD: case RK_NANSUM:
        otc = dtype >= 0 ? dtype : sum_type(itc);
        atc = compute_tc(otc);
        if (kind == RK_PROD) { red = "uf_multiply(a, b)"; ident = "1"; }
        if (kind == RK_NANSUM) PUT(map, sizeof t->map, "ck_nan0(cv<TA>(x0))");
        break;
    case RK_MAX: case RK_MIN: case RK_NANMAX: case RK_NANMIN:
        otc = itc;
        atc = vtc;
        red = kind == RK_MAX ? "uf_maximum(a, b)" : kind == RK_MIN ? "uf_minimum(a, b)"
            : kind == RK_NANMAX ? "uf_fmax(a, b)" : "uf_fmin(a, b)";
        ident = kind == RK_MAX ? "ck_lowest<TA>()" : kind == RK_MIN ? "ck_highest<TA>()"
              : kind == RK_NANMAX ? "ck_nanor(ck_lowest<TA>())" : "ck_nanor(ck_highest<TA>())";
        break;
    case RK_ARGMAX: case RK_ARGMIN:
        if (ck_dtypes[itc].kind == 'c')
            return PyErr_Format(PyExc_TypeError, "cukit.%s() does not support complex arrays "
                                "(compare the real parts: a.real)", who), -1;
        otc = CUKIT_TC_I64;
        atc = -1;
        break;
    case RK_ALL: case RK_ANY:
        otc = atc = CUKIT_TC_BOOL;
        red = kind == RK_ALL ? "a && b" : "a || b";
        ident = kind == RK_ALL ? "true" : "false";
        break;
    case RK_COUNT:
        otc = atc = CUKIT_TC_I64;
        PUT(map, sizeof t->map, "(i64)cv<bool>(x0)");
        break;
    case RK_MEAN:
        otc = dtype >= 0 ? dtype : float_of(itc);
        atc = compute_tc(otc);
        post = "y = cv<TO>(a / (typename P<TA>::t)_d)";
        break;
    case RK_VAR: case RK_STD: /* x1 is the mean, of type T1 */
        otc = dtype >= 0 ? dtype : real_tc(float_of(itc));
        atc = real_tc(btc);
        PUT(map, sizeof t->map, "ck_absq(cv<T1>(x0) - x1)");
        post = kind == RK_VAR ? "y = cv<TO>(a / (TA)_d)" : "y = cv<TO>(ck_sqrt(a / (TA)_d))";
        break;
    case RK_DOT: case RK_VDOT:
        otc = ck_promote(itc, btc);
        atc = compute_tc(otc);
        PUT(map, sizeof t->map, kind == RK_DOT ? "uf_multiply(cv<TA>(x0), cv<TA>(x1))"
                      : "uf_multiply(uf_conjugate(cv<TA>(x0)), cv<TA>(x1))");
        break;
    default: /* norms */
        otc = real_tc(float_of(itc));
        atc = compute_tc(otc);
        PUT(head, sizeof t->head, "typedef %s TC;", ck_dtypes[compute_tc(float_of(itc))].ctype_c);
        PUT(map, sizeof t->map, kind == RK_NORM2 ? "ck_absq(cv<TC>(x0))"
                      : "uf_absolute(cv<TC>(x0))");
        if (kind == RK_NORM2) post = "y = cv<TO>(ck_sqrt(a))";
        if (kind == RK_NORMINF) { red = "uf_maximum(a, b)"; }
        if (kind == RK_NORMNINF) { red = "uf_minimum(a, b)"; ident = "ck_highest<TA>()"; }
        break;
    }
    if (kind == RK_ARGMAX || kind == RK_ARGMIN) {
        const char *tv = ck_dtypes[vtc].ctype_c;
        PUT(acc, sizeof t->acc, "ck_arg<%s>", tv);
        PUT(map, sizeof t->map, "ck_arg<%s>{cv<%s>(x0), _j}", tv, tv);
        red = kind == RK_ARGMAX ? "ck_argmax(a, b)" : "ck_argmin(a, b)";
        ident = kind == RK_ARGMAX ? "ck_arg<TV>{ck_lowest<TV>(), 0x7fffffffffffffffLL}"
                                  : "ck_arg<TV>{ck_highest<TV>(), 0x7fffffffffffffffLL}";
        PUT(head, sizeof t->head, "typedef %s TV;", tv);
        post = "y = cv<TO>(a.i)";
    }
    else {
        PUT(acc, sizeof t->acc, "%s", ck_dtypes[atc].ctype_c);
    }
    if (wk >= 0 && texts) {
        char wmap[256];
        PUT(wmap, sizeof wmap, "x%d ? cv<TA>(%s) : cv<TA>(%s)", wk, map, ident);
        PUT(map, sizeof t->map, "%s", wmap);
    }
    t->otc = otc;
    t->atc = atc;
    t->vtc = vtc;
    t->red = red;
    t->ident = ident;
    t->post = post;
    return 0;
}
#undef PUT

static const char *const xnames[] = {"x0", "x1", "x2", "x3"};

static void
fill_spec(ck_rspec *spec, const rtexts *t, int nin, const int *tcs, int otc, int has_init)
{
    memset(spec, 0, sizeof *spec);
    spec->nin = nin;
    int widest = 1;
    for (int k = 0; k < nin; k++) {
        spec->tc[k] = tcs[k];
        spec->names[k] = xnames[k];
        if (ck_dtypes[tcs[k]].size > widest)
            widest = ck_dtypes[tcs[k]].size;
    }
    spec->tc[nin] = otc;
    spec->names[nin] = "y";
    spec->acc = t->acc;
    spec->head = t->head;
    spec->map = t->map;
    spec->reduce = t->red;
    spec->identity = t->ident;
    spec->post = t->post;
    spec->has_init = has_init;
    spec->vec = widest >= 16 ? 1 : 16 / widest;
}

/* What make_texts needs to describe a reduction again, with its texts. */
typedef struct {
    const char *who;
    int kind, itc, btc, dtype, wk, nin, tcs[4], otc, has_init;
    rtexts t; /* the texts *spec points into, filled by make_texts */
} texts_ctx;

/* ck_rspec_texts for run(): the spec with its texts and the file name. 0 / -1. */
static int
make_texts(void *ctx, ck_rspec *spec, char *file, size_t n)
{
    texts_ctx *c = ctx;
    if (describe(c->who, c->kind, c->itc, c->btc, c->dtype, c->wk, 1, &c->t) < 0)
        return -1;
    fill_spec(spec, &c->t, c->nin, c->tcs, c->otc, c->has_init);
    PyOS_snprintf(file, n, "cukit_reduce_%s.cu", c->who);
    return 0;
}

static PyObject *
run(cukit_state *st, const char *who, rreq *q)
{
    int kind = q->kind, itc = q->a->typecode, ndim = q->a->ndim;
    cukit_Device *dev = q->a->device;
    Py_ssize_t shape[CUKIT_MAXDIM], oshape[CUKIT_MAXDIM];
    memcpy(shape, q->a->shape, sizeof(Py_ssize_t) * (size_t)ndim);
    cukit_Array *ins[3] = {q->a, q->b, NULL};
    int nin = q->b ? 2 : 1;
    if (q->where) {
        cukit_Array *both[2] = {q->a, q->where};
        if (ck_broadcast(both, 2, &ndim, shape) < 0)
            return NULL;
        if (ndim != q->a->ndim || memcmp(shape, q->a->shape, sizeof(Py_ssize_t) * (size_t)ndim))
            return PyErr_Format(PyExc_ValueError, "cukit.%s(): where= must broadcast to the "
                                "array's shape", who);
        ins[nin++] = q->where;
    }
    if (q->b && kind == RK_DOT) {
        cukit_Array *both[2] = {q->a, q->b};
        if (ck_broadcast(both, 2, &ndim, shape) < 0)
            return NULL;
    }
    long long nred = 1, nout = 1;
    for (int d = 0; d < ndim; d++) {
        if (q->axes & (1ULL << d))
            nred *= shape[d];
        else
            nout *= shape[d];
    }
    rtexts t;
    if (describe(who, kind, itc, q->b ? q->b->typecode : -1, q->dtype, q->where ? nin - 1 : -1,
                 0, &t) < 0)
        return NULL;
    int otc = t.otc, atc = t.atc;
    /* empty rows */
    int has_init = q->initial != NULL && q->initial != Py_None;
    if (nred == 0 && nout > 0 && !has_init &&
        (kind == RK_MAX || kind == RK_MIN || kind == RK_NANMAX || kind == RK_NANMIN ||
         kind == RK_ARGMAX || kind == RK_ARGMIN || kind == RK_NORMINF || kind == RK_NORMNINF))
        return empty_error(kind);
    /* the output */
    int ond = ck_rout_shape(ndim, shape, q->axes, q->keepdims, oshape);
    cukit_Array *out;
    if (q->out && q->out != Py_None) {
        out = as_array(st, q->out, who, "out=");
        if (out == NULL)
            return NULL;
        if (out->device != dev)
            return PyErr_Format(PyExc_ValueError, "cukit.%s(): out= is on another device", who);
        if (out->ndim != ond || memcmp(out->shape, oshape, sizeof(Py_ssize_t) * (size_t)ond)) {
            PyObject *have = cukit_array_shape(out);
            PyErr_Format(PyExc_ValueError, "cukit.%s(): out= has shape %R; the result's has %d "
                         "dimensions (keepdims=%s)", who, have, ond, q->keepdims ? "True" : "False");
            Py_XDECREF(have);
            return NULL;
        }
        if (out->flags & CUKIT_ARRAY_READONLY)
            return PyErr_Format(PyExc_ValueError, "cukit.%s(): out= is read-only", who);
        otc = out->typecode;
        Py_INCREF(out);
    }
    else {
        /* every output element is written by the reduction's one kernel, queued next on
         * the stream: a kept block is safe for it on the legacy stream (pool.c's rule) */
        out = ck_empty_out(st, dev, otc, ond, oshape, q->stream);
        if (out == NULL)
            return NULL;
    }
    /* the plan */
    ck_rspec spec;
    int tcs[4] = {0, 0, 0, 0};
    for (int k = 0; k < nin; k++)
        tcs[k] = ins[k]->typecode;
    fill_spec(&spec, &t, nin, tcs, otc, has_init);
    int acc_size = atc < 0 ? 16 : ck_acc_size(atc);
    ck_rplan plan;
    int kinds[3] = {0, 0, 0};
    CUstream h = NULL;
    if (ck_rplan_make(&plan, ins, kinds, nin, ndim, shape, q->axes, out,
                      kind == RK_ARGMAX || kind == RK_ARGMIN) < 0 ||
        ck_stream(st, q->stream, dev, NULL, &h) < 0)
        goto error;
    plan.count = nred;
    plan.d = (double)nred;
    if (kind == RK_VAR || kind == RK_STD)
        plan.d = nred - q->ddof > 0 ? nred - q->ddof : 0.0;
    memset(&plan.init, 0, sizeof plan.init);
    if (has_init && ck_scalar_to(q->initial, atc, 0, &plan.init) < 0)
        goto error;
    uint64_t key = (1ULL << 63) | (uint64_t)kind << 3 | (uint64_t)itc << 9 |
                   (uint64_t)(q->b ? q->b->typecode : 31) << 14 | (uint64_t)otc << 19 |
                   (uint64_t)(atc < 0 ? 31 : atc) << 24 | (uint64_t)(q->where != NULL) << 29 |
                   (uint64_t)has_init << 30 | (uint64_t)(dev->ordinal & 63) << 31;
    ck_kcache *cache = ck_reduce_cache(st, 0);
    if (cache == NULL)
        goto error;
    /* the texts are made only where a kernel is compiled */
    texts_ctx tx = {who, kind, itc, q->b ? q->b->typecode : -1, q->dtype, q->where ? nin - 1 : -1,
                    nin, {tcs[0], tcs[1], tcs[2], tcs[3]}, otc, has_init};
    if (ck_rplan_run(st, dev, cache, key, &spec, "", NULL, make_texts, &tx, acc_size, &plan, h) < 0)
        goto error;
    return (PyObject *)out;
error:
    Py_DECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------ the calls */

static int
get_bool(PyObject *v, int *out)
{
    if (v == NULL) {
        *out = 0;
        return 0;
    }
    int t = PyObject_IsTrue(v);
    if (t < 0)
        return -1;
    *out = t;
    return 0;
}

static PyObject *
call_def(cukit_state *st, const rdef *d, PyObject *const *args, Py_ssize_t nargs,
         PyObject *kwnames)
{
    PyObject *v[A_COUNT];
    if (parse(d, args, nargs, kwnames, v) < 0)
        return NULL;
    rreq q;
    memset(&q, 0, sizeof q);
    q.kind = d->kind;
    if ((d->kind == RK_ARGMAX || d->kind == RK_ARGMIN) && v[A_AXIS] &&
        (PyTuple_Check(v[A_AXIS]) || PyList_Check(v[A_AXIS])))
        return PyErr_Format(PyExc_TypeError, "cukit.%s(): axis must be an integer or None "
                            "(as numpy's)", d->name);
    q.a = as_array(st, v[A_A], d->name, "a");
    if (q.a == NULL || ck_parse_axes(st, v[A_AXIS], q.a->ndim, &q.axes) < 0 ||
        get_bool(v[A_KEEPDIMS], &q.keepdims) < 0)
        return NULL;
    q.dtype = -1;
    if (v[A_DTYPE] && v[A_DTYPE] != Py_None && (q.dtype = ck_tc_of(st, v[A_DTYPE])) < 0)
        return NULL;
    q.out = v[A_OUT];
    q.initial = v[A_INITIAL];
    q.stream = v[A_STREAM];
    if (v[A_WHERE] && v[A_WHERE] != Py_True) {
        q.where = as_array(st, v[A_WHERE], d->name, "where=");
        if (q.where == NULL)
            return NULL;
        if (q.where->typecode != CUKIT_TC_BOOL)
            return PyErr_Format(PyExc_TypeError, "cukit.%s(): where= must be a bool array, "
                                "not %S", d->name, q.where->dtype);
        if (q.where->device != q.a->device)
            return PyErr_Format(PyExc_ValueError, "cukit.%s(): where= is on another device",
                                d->name);
    }
    if (v[A_DDOF] && v[A_DDOF] != Py_None) {
        q.ddof = PyFloat_AsDouble(v[A_DDOF]);
        if (q.ddof == -1.0 && PyErr_Occurred())
            return NULL;
    }
    if (d->kind == RK_VAR || d->kind == RK_STD) {
        /* numpy's two passes: the mean (kept dimensions), then the squared deviations */
        int itc = q.a->typecode;
        int base = q.dtype >= 0 ? q.dtype : float_of(itc);
        rreq m = q;
        m.kind = RK_MEAN;
        m.dtype = compute_tc(base);
        m.out = NULL;
        m.keepdims = 1;
        PyObject *mean = run(st, d->name, &m);
        if (mean == NULL)
            return NULL;
        q.b = (cukit_Array *)mean;
        PyObject *r = run(st, d->name, &q);
        Py_DECREF(mean);
        return r;
    }
    if (d->kind == RK_PTP) {
        rreq m = q;
        m.kind = RK_MAX;
        m.out = NULL;
        PyObject *hi = run(st, d->name, &m);
        m.kind = RK_MIN;
        PyObject *lo = hi ? run(st, d->name, &m) : NULL;
        PyObject *r = NULL;
        if (lo) {
            PyObject *in[2] = {hi, lo};
            ck_Ufunc *sub = (ck_Ufunc *)PyTuple_GET_ITEM(st->compute->ufuncs, U_SUB);
            r = ck_dispatch(sub, in, 2, q.out, q.stream, MODE_CALL, -1);
        }
        Py_XDECREF(hi);
        Py_XDECREF(lo);
        return r;
    }
    return run(st, d->name, &q);
}

PyObject *
ck_reduce_method(cukit_state *st, int index, PyObject *self, PyObject *args, PyObject *kwargs)
{
    if (index < 0 || index >= NMETHODS + 3) {
        PyErr_SetString(PyExc_SystemError, "unknown reduction method");
        return NULL;
    }
    Py_ssize_t n = args ? PyTuple_GET_SIZE(args) : 0, nkw = kwargs ? PyDict_GET_SIZE(kwargs) : 0;
    PyObject *stack[A_COUNT + 2], *kwnames = NULL;
    if (n + nkw + 1 > A_COUNT + 1)
        return PyErr_Format(PyExc_TypeError, "Array.%s() got too many arguments",
                            defs[index].name);
    stack[0] = self;
    for (Py_ssize_t i = 0; i < n; i++)
        stack[i + 1] = PyTuple_GET_ITEM(args, i);
    if (nkw) {
        kwnames = PyTuple_New(nkw);
        if (kwnames == NULL)
            return NULL;
        Py_ssize_t pos = 0, i = 0;
        PyObject *k, *v;
        while (PyDict_Next(kwargs, &pos, &k, &v)) {
            PyTuple_SET_ITEM(kwnames, i, Py_NewRef(k));
            stack[n + 1 + i++] = v;
        }
    }
    PyObject *r = index < NMETHODS ? call_def(st, &defs[index], stack, n + 1, kwnames)
                  : index == NMETHODS + 2 ? products(st, 0, stack, n + 1, kwnames)
                  : ck_scan_call(st, index - NMETHODS, stack, n + 1, kwnames);
    Py_XDECREF(kwnames);
    return r;
}

#define FN(i, cname)                                                                   \
    static PyObject *fn_##cname(PyObject *m, PyObject *const *args, Py_ssize_t nargs,  \
                                PyObject *kwnames)                                     \
    {                                                                                  \
        return call_def(PyModule_GetState(m), &defs[i], args, nargs, kwnames);         \
    }
FN(0, sum) FN(1, prod) FN(2, max) FN(3, min) FN(4, argmax) FN(5, argmin) FN(6, all) FN(7, any)
FN(8, mean) FN(9, var) FN(10, std) FN(11, ptp) FN(12, amax) FN(13, amin) FN(14, count_nonzero)
FN(15, nansum) FN(16, nanmax) FN(17, nanmin)
#undef FN

/* dot / vdot / inner: (a, b, out=None, *, stream=None) */
static PyObject *
products(cukit_state *st, int which, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const who[] = {"dot", "vdot", "inner"};
    PyObject *out = NULL, *stream = NULL;
    if (nargs < 2 || nargs > (which == 0 ? 3 : 2))
        return PyErr_Format(PyExc_TypeError, "cukit.%s() takes two arrays", who[which]);
    if (nargs == 3)
        out = args[2];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i);
        if (which == 0 && PyUnicode_CompareWithASCIIString(key, "out") == 0)
            out = args[nargs + i];
        else if (PyUnicode_CompareWithASCIIString(key, "stream") == 0)
            stream = args[nargs + i];
        else
            return PyErr_Format(PyExc_TypeError, "cukit.%s() got an unexpected keyword "
                                "argument %R", who[which], key);
    }
    cukit_Array *a = as_array(st, args[0], who[which], "a");
    cukit_Array *b = a ? as_array(st, args[1], who[which], "b") : NULL;
    if (b == NULL)
        return NULL;
    if (a->device != b->device)
        return PyErr_Format(PyExc_ValueError, "cukit.%s(): the arrays are on different "
                            "devices", who[which]);
    rreq q;
    memset(&q, 0, sizeof q);
    q.kind = which == 1 ? RK_VDOT : RK_DOT;
    q.a = a;
    q.b = b;
    q.dtype = -1;
    q.out = out;
    q.stream = stream;
    if (which == 1) {
        if (a->size != b->size)
            return PyErr_Format(PyExc_ValueError, "cukit.vdot(): the arrays have %zd and %zd "
                                "elements; vdot needs the same number", a->size, b->size);
        if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(Py_ssize_t) * (size_t)a->ndim))
            return PyErr_Format(PyExc_ValueError, "cukit.vdot(): the arrays' shapes differ; "
                                "reshape one to the other's shape first");
        q.axes = a->ndim >= 64 ? ~0ULL : (1ULL << a->ndim) - 1;
        return run(st, who[which], &q);
    }
    if (b->ndim != 1 || a->ndim < 1)
        return PyErr_Format(PyExc_TypeError,
                            "cukit.%s() takes a 1-D second array and a first of 1 or more "
                            "dimensions (matrix products are not implemented)", who[which]);
    if (a->shape[a->ndim - 1] != b->shape[0])
        return PyErr_Format(PyExc_ValueError, "shapes not aligned: %zd (dim %d) != %zd (dim 0)",
                            a->shape[a->ndim - 1], a->ndim - 1, b->shape[0]);
    q.axes = 1ULL << (a->ndim - 1);
    return run(st, who[which], &q);
}

static PyObject *
fn_dot(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return products(PyModule_GetState(m), 0, args, nargs, kwnames);
}

static PyObject *
fn_vdot(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return products(PyModule_GetState(m), 1, args, nargs, kwnames);
}

static PyObject *
fn_inner(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return products(PyModule_GetState(m), 2, args, nargs, kwnames);
}

/* _vector_norm(x, ord, axis, keepdims): ord 1, 2, inf (as 3) or -inf (as -3) */
static PyObject *
fn_vector_norm(PyObject *m, PyObject *args)
{
    cukit_state *st = PyModule_GetState(m);
    PyObject *x, *axis;
    int ord, keepdims;
    if (!PyArg_ParseTuple(args, "OiOp:_vector_norm", &x, &ord, &axis, &keepdims))
        return NULL;
    rreq q;
    memset(&q, 0, sizeof q);
    q.a = as_array(st, x, "linalg.norm", "x");
    if (q.a == NULL || ck_parse_axes(st, axis, q.a->ndim, &q.axes) < 0)
        return NULL;
    q.kind = ord == 1 ? RK_NORM1 : ord == 2 ? RK_NORM2 : ord == 3 ? RK_NORMINF : RK_NORMNINF;
    q.dtype = -1;
    q.keepdims = keepdims;
    return run(st, "norm", &q);
}


/* _reduce_source(name, dtype, dtype2=None, where=False, initial=False) -> str: the CUDA C
 * a reduction compiles (tests compile every kind and dtype without a device). */
static PyObject *
fn_reduce_source(PyObject *m, PyObject *args)
{
    cukit_state *st = PyModule_GetState(m);
    const char *name;
    PyObject *d1, *d2 = Py_None;
    int where = 0, init = 0;
    if (!PyArg_ParseTuple(args, "sO|Opp:_reduce_source", &name, &d1, &d2, &where, &init))
        return NULL;
    static const struct { const char *name; int kind; } extra[] = {
        {"dot", RK_DOT}, {"vdot", RK_VDOT}, {"norm1", RK_NORM1}, {"norm2", RK_NORM2},
        {"norminf", RK_NORMINF}, {"normninf", RK_NORMNINF}};
    int kind = -1;
    for (int i = 0; i < NDEFS && kind < 0; i++)
        if (strcmp(defs[i].name, name) == 0)
            kind = defs[i].kind;
    for (size_t i = 0; i < sizeof extra / sizeof *extra && kind < 0; i++)
        if (strcmp(extra[i].name, name) == 0)
            kind = extra[i].kind;
    if (kind < 0 || kind == RK_PTP)
        return PyErr_Format(PyExc_ValueError, "no reduction kernel %s (ptp is max - min)", name);
    if (d2 == Py_None && (kind == RK_VAR || kind == RK_STD || kind == RK_DOT || kind == RK_VDOT))
        return PyErr_Format(PyExc_ValueError, "_reduce_source(%s): give the second operand's "
                            "dtype (the mean's for var and std)", name);
    int tcs[4], nin = 1;
    if ((tcs[0] = ck_tc_of(st, d1)) < 0)
        return NULL;
    if (d2 != Py_None && (tcs[nin++] = ck_tc_of(st, d2)) < 0)
        return NULL;
    if (where)
        tcs[nin++] = CUKIT_TC_BOOL;
    rtexts t;
    if (describe(name, kind, tcs[0], nin > 1 && !where ? tcs[1] : (d2 != Py_None ? tcs[1] : -1),
                 -1, where ? nin - 1 : -1, 1, &t) < 0)
        return NULL;
    ck_rspec spec;
    fill_spec(&spec, &t, nin, tcs, t.otc, init);
    return ck_reduce_source(&spec, -1);
}

static PyMethodDef reduce_functions[] = {
#define M(name, doc) {#name, (PyCFunction)(void (*)(void))fn_##name, METH_FASTCALL | METH_KEYWORDS, doc}
    M(sum, "sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True, *, "
           "stream=None) -> Array: numpy.sum on the device (integers sum in int64/uint64)."),
    M(prod, "prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True)"),
    M(max, "max(a, axis=None, out=None, keepdims=False, initial=None, where=True): NaN propagates"),
    M(min, "min(a, axis=None, out=None, keepdims=False, initial=None, where=True): NaN propagates"),
    M(amax, "amax: max"),
    M(amin, "amin: min"),
    M(argmax, "argmax(a, axis=None, out=None, *, keepdims=False) -> int64 Array: the first"),
    M(argmin, "argmin(a, axis=None, out=None, *, keepdims=False) -> int64 Array: the first"),
    M(all, "all(a, axis=None, out=None, keepdims=False, *, where=True) -> bool Array"),
    M(any, "any(a, axis=None, out=None, keepdims=False, *, where=True) -> bool Array"),
    M(count_nonzero, "count_nonzero(a, axis=None, *, keepdims=False) -> int64 Array"),
    M(nansum, "nansum: sum with NaN counted as zero"),
    M(nanmax, "nanmax: max ignoring NaN (NaN where every element is NaN)"),
    M(nanmin, "nanmin: min ignoring NaN (NaN where every element is NaN)"),
    M(mean, "mean(a, axis=None, dtype=None, out=None, keepdims=False)"),
    M(var, "var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False): two passes"),
    M(std, "std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False)"),
    M(ptp, "ptp(a, axis=None, out=None, keepdims=False): max - min"),
    M(dot, "dot(a, b, out=None) -> Array: 1-D . 1-D, or N-D . 1-D over the last axis"),
    M(vdot, "vdot(a, b) -> 0-d Array: sum(conj(a) * b) over arrays of one shape"),
    M(inner, "inner(a, b) -> Array: 1-D . 1-D, or N-D . 1-D over the last axis"),
#undef M
    {"_vector_norm", fn_vector_norm, METH_VARARGS, "Internal: linalg.norm of vectors."},
    {"_reduce_source", fn_reduce_source, METH_VARARGS, "Internal: a reduction's CUDA C."},
    {"_reduce_plan", ck_reduce_plan_py, METH_VARARGS, "Internal: a reduction's plan."},
    {NULL},
};

int
ck_reductions_setup(PyObject *module, cukit_state *st)
{
    (void)st;
    return PyModule_AddFunctions(module, reduce_functions);
}
