/* generator.c - cukit.random.Generator: numpy's Generator methods drawing on the GPU from a Philox bit generator */
#include "compute/random/philox.h"

#include <math.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    ck_Philox *bg;      /* strong ref: the bit generator, whose state each draw moves */
} ck_Generator;

/* ------------------------------------------------------------------ arguments */

/* dtype= for a float draw: NULL means float64. New ref in *out and its index in
 * *width: 0 float64, 1 float32 (drawn from 32-bit halves), 2 float16, 3 bfloat16 (both
 * from 32-bit halves, as float32); -1 with TypeError naming the method. */
static int
float_dtype(cukit_state *st, PyObject *arg, const char *method, PyObject **out, int *width)
{
    static const int by_width[] = {CUKIT_TC_F64, CUKIT_TC_F32, CUKIT_TC_F16, CUKIT_TC_BF16};
    PyObject *name = arg ? Py_NewRef(arg) : PyUnicode_FromString("float64");
    PyObject *dtype = name ? cukit_resolve_dtype(st, name) : NULL;
    Py_XDECREF(name);
    if (dtype == NULL)
        return -1;
    int tc = cukit_typecode_of_dtype(dtype);
    *width = 0;
    while (*width < 4 && by_width[*width] != tc)
        (*width)++;
    if (*width == 4) {
        if (tc >= 0)
            PyErr_Format(PyExc_TypeError, "Unsupported dtype %R for %s: use numpy.float64, "
                         "numpy.float32, numpy.float16 or bfloat16 (ml_dtypes)", dtype, method);
        Py_DECREF(dtype);
        return -1;
    }
    *out = dtype;
    return 0;
}

/* A Python float argument; TypeError naming it otherwise. 0 / -1. */
static int
float_arg(PyObject *obj, double dflt, const char *name, const char *method, double *out)
{
    if (obj == NULL) {
        *out = dflt;
        return 0;
    }
    if (!PyFloat_Check(obj) && !PyLong_Check(obj) && !PyNumber_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a number (a float); cukit takes no "
                     "arrays of parameters, got %.200s", method, name, Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = PyFloat_AsDouble(obj);
    if (*out == -1.0 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s: %s must be a number (a float), got %.200s",
                         method, name, Py_TYPE(obj)->tp_name);
        }
        return -1;
    }
    return 0;
}

static int
check_scale(double scale, const char *what)
{
    if (scale < 0 || isnan(scale)) {
        PyErr_Format(PyExc_ValueError, "%s < 0 (or NaN): pass a %s >= 0", what, what);
        return -1;
    }
    return 0;
}

/* One draw of a float kind: `k64` for float64, k64 + 1, + 2 and + 3 (its twins) for
 * float32, float16 and bfloat16. */
static PyObject *
float_draw(ck_Generator *self, ck_rand_kind k64, PyObject *dtype_arg, PyObject *size,
           PyObject *out, PyObject *stream, double a, double b, const char *method)
{
    PyObject *dtype;
    int width;
    if (float_dtype(self->bg->st, dtype_arg, method, &dtype, &width) < 0)
        return NULL;
    ck_rand_params p;
    memset(&p, 0, sizeof p);
    p.a = a;
    p.b = b;
    PyObject *r = ck_random_draw(self->bg, (ck_rand_kind)(k64 + width), dtype, size, out,
                                    stream, &p, method);
    Py_DECREF(dtype);
    return r;
}

/* ------------------------------------------------------------------ methods */

static PyObject *
gen_random(ck_Generator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"size", "dtype", "out", "stream", NULL};
    PyObject *size = Py_None, *dtype = NULL, *out = Py_None, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO$O:random", kwlist, &size, &dtype, &out,
                                     &stream))
        return NULL;
    return float_draw(self, CK_RAND_U64, dtype, size, out, stream, 0.0, 1.0, "random");
}

static PyObject *
gen_uniform(ck_Generator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"low", "high", "size", "dtype", "out", "stream", NULL};
    PyObject *lo = NULL, *hi = NULL, *size = Py_None, *dtype = NULL, *out = Py_None;
    PyObject *stream = Py_None;
    double low, high;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOOO$O:uniform", kwlist, &lo, &hi, &size,
                                     &dtype, &out, &stream) ||
        float_arg(lo, 0.0, "low", "uniform", &low) < 0 ||
        float_arg(hi, 1.0, "high", "uniform", &high) < 0)
        return NULL;
    double range = high - low;
    if (!isfinite(range)) {
        PyErr_SetString(PyExc_OverflowError, "uniform: high - low range exceeds valid bounds "
                        "(both must be finite and their difference too)");
        return NULL;
    }
    if (range < 0) {
        PyErr_SetString(PyExc_ValueError, "uniform: high - low < 0; pass low <= high");
        return NULL;
    }
    return float_draw(self, CK_RAND_U64, dtype, size, out, stream, low, range, "uniform");
}

static PyObject *
gen_standard_normal(ck_Generator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"size", "dtype", "out", "stream", NULL};
    PyObject *size = Py_None, *dtype = NULL, *out = Py_None, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO$O:standard_normal", kwlist, &size, &dtype,
                                     &out, &stream))
        return NULL;
    return float_draw(self, CK_RAND_N64, dtype, size, out, stream, 0.0, 1.0, "standard_normal");
}

static PyObject *
gen_normal(ck_Generator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"loc", "scale", "size", "dtype", "out", "stream", NULL};
    PyObject *lo = NULL, *sc = NULL, *size = Py_None, *dtype = NULL, *out = Py_None;
    PyObject *stream = Py_None;
    double loc, scale;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOOO$O:normal", kwlist, &lo, &sc, &size,
                                     &dtype, &out, &stream) ||
        float_arg(lo, 0.0, "loc", "normal", &loc) < 0 ||
        float_arg(sc, 1.0, "scale", "normal", &scale) < 0 || check_scale(scale, "scale") < 0)
        return NULL;
    return float_draw(self, CK_RAND_N64, dtype, size, out, stream, loc, scale, "normal");
}

static PyObject *
gen_standard_exponential(ck_Generator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"size", "dtype", "method", "out", "stream", NULL};
    PyObject *size = Py_None, *dtype = NULL, *method = Py_None, *out = Py_None;
    PyObject *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOO$O:standard_exponential", kwlist, &size,
                                     &dtype, &method, &out, &stream))
        return NULL;
    /* method= is accepted for numpy's signature: cukit always inverts ('inv'). */
    return float_draw(self, CK_RAND_E64, dtype, size, out, stream, 0.0, 1.0,
                      "standard_exponential");
}

static PyObject *
gen_exponential(ck_Generator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"scale", "size", "dtype", "out", "stream", NULL};
    PyObject *sc = NULL, *size = Py_None, *dtype = NULL, *out = Py_None, *stream = Py_None;
    double scale;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOO$O:exponential", kwlist, &sc, &size,
                                     &dtype, &out, &stream) ||
        float_arg(sc, 1.0, "scale", "exponential", &scale) < 0 || check_scale(scale, "scale") < 0)
        return NULL;
    return float_draw(self, CK_RAND_E64, dtype, size, out, stream, 0.0, scale, "exponential");
}

/* The smallest and largest value of an integer typecode, as Python ints. 0 / -1. */
static int
int_bounds(int tc, PyObject **lo, PyObject **hi)
{
    static const struct {
        int tc;
        long long lo;
        unsigned long long hi;
    } table[] = {
        {CUKIT_TC_BOOL, 0, 1},
        {CUKIT_TC_I8, INT8_MIN, INT8_MAX},     {CUKIT_TC_U8, 0, UINT8_MAX},
        {CUKIT_TC_I16, INT16_MIN, INT16_MAX},  {CUKIT_TC_U16, 0, UINT16_MAX},
        {CUKIT_TC_I32, INT32_MIN, INT32_MAX},  {CUKIT_TC_U32, 0, UINT32_MAX},
        {CUKIT_TC_I64, INT64_MIN, INT64_MAX},  {CUKIT_TC_U64, 0, UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        if (table[i].tc == tc) {
            *lo = PyLong_FromLongLong(table[i].lo);
            *hi = PyLong_FromUnsignedLongLong(table[i].hi);
            if (*lo && *hi)
                return 1;
            Py_CLEAR(*lo);
            Py_CLEAR(*hi);
            return -1;
        }
    }
    return 0;
}

/* integers' draw of p->irange + 1 values from p->ilow into `width`-byte integers. */
static PyObject *
draw_integers(ck_Philox *bg, ck_rand_params *p, int width, PyObject *dtype, PyObject *size,
              PyObject *out, PyObject *stream, const char *who)
{
    static const ck_rand_kind by_size[2][9] = {
        {[1] = CK_RAND_I8, [2] = CK_RAND_I16, [4] = CK_RAND_I32, [8] = CK_RAND_I64},
        {[1] = CK_RAND_IH8, [2] = CK_RAND_IH16, [4] = CK_RAND_IH32, [8] = CK_RAND_IH64}};
    /* Philox4x32 draws counts up to 2**32 from 32-bit halves (Lemire's multiply-shift
     * and rejection, one 32 x 32-bit product); Philox keeps one word per value */
    int halves = bg->x32 && p->irange <= 0xffffffffULL;
    if (halves)
        p->ithresh = (uint32_t)((1ULL << 32) % (p->irange + 1));
    return ck_random_draw(bg, by_size[halves][width], dtype, size, out, stream, p, who);
}

PyObject *
ck_random_below(ck_Philox *bg, uint64_t count, PyObject *size, PyObject *out, PyObject *stream,
                const char *who)
{
    ck_rand_params p;
    memset(&p, 0, sizeof p);
    p.irange = count - 1;
    PyObject *name = PyUnicode_FromString("int64");
    PyObject *dtype = name ? cukit_resolve_dtype(bg->st, name) : NULL;
    Py_XDECREF(name);
    PyObject *r = dtype ? draw_integers(bg, &p, 8, dtype, size, out, stream, who) : NULL;
    Py_XDECREF(dtype);
    return r;
}

static int
less(PyObject *a, PyObject *b)
{
    return PyObject_RichCompareBool(a, b, Py_LT);
}

static PyObject *
gen_integers(ck_Generator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"low", "high", "size", "dtype", "endpoint", "out", "stream", NULL};
    PyObject *lo_arg, *hi_arg = Py_None, *size = Py_None, *dtype_arg = NULL, *out = Py_None;
    PyObject *stream = Py_None;
    int endpoint = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOpO$O:integers", kwlist, &lo_arg, &hi_arg,
                                     &size, &dtype_arg, &endpoint, &out, &stream))
        return NULL;
    cukit_state *st = self->bg->st;
    if (!PyIndex_Check(lo_arg) || (hi_arg != Py_None && !PyIndex_Check(hi_arg))) {
        PyErr_SetString(PyExc_TypeError, "integers: low and high must be ints (cukit takes no "
                        "arrays of bounds)");
        return NULL;
    }
    PyObject *name = dtype_arg ? Py_NewRef(dtype_arg) : PyUnicode_FromString("int64");
    PyObject *dtype = name ? cukit_resolve_dtype(st, name) : NULL;
    Py_XDECREF(name);
    if (dtype == NULL)
        return NULL;
    PyObject *low = NULL, *high = NULL, *tmin = NULL, *tmax = NULL, *hmax = NULL;
    PyObject *one = PyLong_FromLong(1), *result = NULL;
    int tc = cukit_typecode_of_dtype(dtype);
    int known = tc < 0 ? -1 : int_bounds(tc, &tmin, &tmax);
    if (known <= 0) {
        if (known == 0)
            PyErr_Format(PyExc_TypeError, "Unsupported dtype %R for integers: use an integer "
                         "dtype or bool", dtype);
        goto done;
    }
    if (hi_arg == Py_None) {
        low = PyLong_FromLong(0);
        high = PyNumber_Index(lo_arg);
        if (low && high && !endpoint && PyObject_RichCompareBool(high, low, Py_LE) == 1) {
            PyErr_SetString(PyExc_ValueError, "integers: high <= 0 (with one bound, it is the "
                            "exclusive high and must be positive)");
            goto done;
        }
    }
    else {
        low = PyNumber_Index(lo_arg);
        high = PyNumber_Index(hi_arg);
    }
    if (!low || !high || !one)
        goto done;
    hmax = endpoint ? Py_NewRef(high) : PyNumber_Subtract(high, one);
    if (hmax == NULL)
        goto done;
    if (less(low, tmin) == 1) {
        PyErr_Format(PyExc_ValueError, "integers: low is out of bounds for %S", dtype);
        goto done;
    }
    if (less(tmax, hmax) == 1) {
        PyErr_Format(PyExc_ValueError, "integers: high is out of bounds for %S", dtype);
        goto done;
    }
    if (less(hmax, low) == 1) {
        PyErr_SetString(PyExc_ValueError, endpoint ? "integers: low > high" : "integers: low >= high");
        goto done;
    }
    if (PyErr_Occurred())
        goto done;
    PyObject *span = PyNumber_Subtract(hmax, low); /* values - 1, below 2**64 */
    if (span == NULL)
        goto done;
    ck_rand_params p;
    memset(&p, 0, sizeof p);
    p.irange = PyLong_AsUnsignedLongLong(span);
    p.ilow = (int64_t)PyLong_AsUnsignedLongLongMask(low);
    Py_DECREF(span);
    if (PyErr_Occurred())
        goto done;
    result = draw_integers(self->bg, &p, cukit_typecode_size(tc), dtype, size, out, stream,
                           "integers");
done:
    Py_XDECREF(low);
    Py_XDECREF(high);
    Py_XDECREF(tmin);
    Py_XDECREF(tmax);
    Py_XDECREF(hmax);
    Py_XDECREF(one);
    Py_DECREF(dtype);
    return result;
}

/* numpy's largest lam: the int64 range less ten standard deviations */
#define POISSON_LAM_MAX 9.223372006484771e18

static PyObject *
gen_poisson(ck_Generator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"lam", "size", "out", "stream", NULL};
    PyObject *lam_o = NULL, *size = Py_None, *out = Py_None, *stream = Py_None;
    double lam;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO$O:poisson", kwlist, &lam_o, &size, &out,
                                     &stream) ||
        float_arg(lam_o, 1.0, "lam", "poisson", &lam) < 0)
        return NULL;
    if (lam < 0 || isnan(lam)) {
        PyErr_SetString(PyExc_ValueError, "poisson: lam < 0 (or NaN); pass a lam >= 0");
        return NULL;
    }
    if (lam > POISSON_LAM_MAX) {
        PyErr_SetString(PyExc_ValueError, "poisson: lam value too large (at most "
                        "9.223372006484771e18, numpy's bound); pass a smaller lam");
        return NULL;
    }
    ck_rand_params p;
    memset(&p, 0, sizeof p);
    /* The constants of Hormann's PTRS (1993), for lam >= 10; exp(-lam) for the rest. */
    double slam = sqrt(lam), b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    p.c[0] = lam;
    p.c[1] = b;
    p.c[2] = a;
    p.c[3] = log(1.1239 + 1.1328 / (b - 3.4));
    p.c[4] = 0.9277 - 3.6224 / (b - 2);
    p.c[5] = log(lam);
    p.c[6] = exp(-lam);
    PyObject *name = PyUnicode_FromString("int64");
    PyObject *dtype = name ? cukit_resolve_dtype(self->bg->st, name) : NULL;
    Py_XDECREF(name);
    PyObject *r = dtype ? ck_random_draw(self->bg, CK_RAND_POISSON, dtype, size, out, stream,
                                            &p, "poisson")
                        : NULL;
    Py_XDECREF(dtype);
    return r;
}

/* ------------------------------------------------------------------ permutations */

/* The next 64-bit word of bg, as random_raw() would give it. */
static uint64_t
next_word(ck_Philox *bg)
{
    ck_rand_params p;
    memset(&p, 0, sizeof p);
    ck_philox_take64(bg, 1, &p);
    return p.buf[p.pos];
}

int
ck_random_permute(ck_Philox *bg, cukit_Device *dev, CUdeviceptr out, Py_ssize_t n, CUstream h)
{
    if (n == 0)
        return 0;
    ck_Philox saved = *bg;
    ck_perm_params pp;
    memset(&pp, 0, sizeof pp);
    pp.out = out;
    pp.n = n;
    pp.k0 = next_word(bg);
    pp.k1 = next_word(bg);
    int bits = 0;
    for (unsigned long long v = (unsigned long long)n; v; v >>= 1)
        bits++;
    pp.rounds = 12 * bits + 64;
    void *args[] = {&pp};
    if (ck_random_launch(dev, "cukit_permutation", n, args, h) < 0) {
        memcpy(bg->ctr, saved.ctr, sizeof bg->ctr);
        memcpy(bg->buffer, saved.buffer, sizeof bg->buffer);
        bg->buffer_pos = saved.buffer_pos;
        return -1;
    }
    return 0;
}

int
ck_random_gather_rows(cukit_Array *dst, cukit_Array *src, CUdeviceptr perm, long long rows,
                      CUstream h)
{
    if (rows == 0 || src->shape[0] == 0 || src->nbytes == 0)
        return 0;
    long long row_bytes = src->nbytes / src->shape[0];
    unsigned long long d = cukit_array_ptr(dst), s = cukit_array_ptr(src);
    unsigned long long bits = (unsigned long long)row_bytes | d | s;
    int unit = 16;
    while (unit > 1 && (bits & (unsigned long long)(unit - 1)))
        unit /= 2;
    static const char *names[17] = {[1] = "cukit_gather_1", [2] = "cukit_gather_2",
                                    [4] = "cukit_gather_4", [8] = "cukit_gather_8",
                                    [16] = "cukit_gather_16"};
    long long units = row_bytes / unit;
    void *args[] = {&d, &s, &perm, &rows, &units};
    return ck_random_launch(src->device, names[unit], rows * units, args, h);
}

/* x for permutation/shuffle: a live, C-contiguous Array of at least one dimension
 * (writable for shuffle). 0 / -1. */
static int
check_rows(cukit_state *st, PyObject *x, int writable, const char *who)
{
    if (!Py_IS_TYPE(x, st->ArrayType)) {
        PyErr_Format(PyExc_TypeError, "%s: x must be %sa cukit.Array, got %.200s (copy host "
                     "data to the device with cukit.to_device first)", who,
                     writable ? "" : "an int or ", Py_TYPE(x)->tp_name);
        return -1;
    }
    cukit_Array *a = (cukit_Array *)x;
    if (!cukit_array_live(a))
        return cukit_freed_error();
    if (a->ndim < 1) {
        PyErr_Format(PyExc_ValueError, "%s: x must be an integer or at least 1-dimensional",
                     who);
        return -1;
    }
    if (!(a->flags & CUKIT_ARRAY_C_CONTIG)) {
        PyErr_Format(PyExc_ValueError, "%s: x must be C-contiguous (use "
                     "cukit.ascontiguousarray(x))", who);
        return -1;
    }
    if (writable && (a->flags & CUKIT_ARRAY_READONLY)) {
        PyErr_Format(PyExc_ValueError, "%s: x is read-only", who);
        return -1;
    }
    return 0;
}

static int
check_axis(int axis, const char *who)
{
    if (axis != 0) {
        PyErr_Format(PyExc_ValueError, "%s: cukit permutes along axis 0 only (got axis=%d); "
                     "move that axis first (x.transpose(...)) and copy", who, axis);
        return -1;
    }
    return 0;
}

static PyObject *
gen_permutation(ck_Generator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"x", "axis", "stream", NULL};
    PyObject *x, *stream = Py_None;
    int axis = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|i$O:permutation", kwlist, &x, &axis,
                                     &stream) ||
        check_axis(axis, "permutation") < 0)
        return NULL;
    cukit_state *st = self->bg->st;
    CUstream h;
    if (!Py_IS_TYPE(x, st->ArrayType) && PyIndex_Check(x)) {
        Py_ssize_t n = PyNumber_AsSsize_t(x, PyExc_OverflowError);
        if (n == -1 && PyErr_Occurred())
            return NULL;
        if (n < 0) {
            PyErr_SetString(PyExc_ValueError, "permutation: negative dimensions are not allowed");
            return NULL;
        }
        PyObject *name = PyUnicode_FromString("int64");
        PyObject *dtype = name ? cukit_resolve_dtype(st, name) : NULL;
        Py_XDECREF(name);
        cukit_Device *dev = dtype ? cukit_device_current(st) : NULL;
        cukit_Array *a = dev ? cukit_array_create(st, dev, 1, &n, dtype) : NULL;
        Py_XDECREF(dtype);
        if (a && (cukit_stream_handle(st, stream, dev, &h) < 0 ||
                  cukit_capture_keep(st, stream, (PyObject *)a) < 0 ||
                  ck_random_permute(self->bg, dev, cukit_array_ptr(a), n, h) < 0))
            Py_CLEAR(a);
        return (PyObject *)a;
    }
    if (check_rows(st, x, 0, "permutation") < 0)
        return NULL;
    cukit_Array *src = (cukit_Array *)x, *out;
    cukit_Device *dev = src->device;
    if (cukit_stream_handle(st, stream, dev, &h) < 0 ||
        (out = cukit_array_create(st, dev, src->ndim, src->shape, src->dtype)) == NULL)
        return NULL;
    cukit_scratch perm = {0, 0};
    Py_ssize_t rows = src->shape[0];
    if (cukit_capture_keep(st, stream, (PyObject *)out) < 0 ||
        cukit_capture_keep(st, stream, x) < 0 ||
        cukit_scratch_alloc(dev, (size_t)(rows ? rows : 1) * 8, h, &perm) < 0 ||
        ck_random_permute(self->bg, dev, perm.ptr, rows, h) < 0 ||
        ck_random_gather_rows(out, src, perm.ptr, rows, h) < 0)
        Py_CLEAR(out);
    if (perm.ptr && cukit_scratch_release(dev, &perm, h) < 0)
        Py_CLEAR(out);
    return (PyObject *)out;
}

static PyObject *
gen_shuffle(ck_Generator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"x", "axis", "stream", NULL};
    PyObject *x, *stream = Py_None;
    int axis = 0;
    cukit_state *st = self->bg->st;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|i$O:shuffle", kwlist, &x, &axis, &stream) ||
        check_axis(axis, "shuffle") < 0 || check_rows(st, x, 1, "shuffle") < 0)
        return NULL;
    cukit_Array *a = (cukit_Array *)x, *tmp;
    cukit_Device *dev = a->device;
    CUstream h;
    if (cukit_stream_handle(st, stream, dev, &h) < 0 || cukit_capture_keep(st, stream, x) < 0 ||
        (tmp = cukit_array_create(st, dev, a->ndim, a->shape, a->dtype)) == NULL)
        return NULL;
    /* Rows gathered into a copy, then copied back: the copy is freed in stream order. */
    cukit_scratch perm = {0, 0};
    Py_ssize_t rows = a->shape[0];
    int rc = -1;
    if (cukit_capture_keep(st, stream, (PyObject *)tmp) == 0 &&
        cukit_scratch_alloc(dev, (size_t)(rows ? rows : 1) * 8, h, &perm) == 0 &&
        ck_random_permute(self->bg, dev, perm.ptr, rows, h) == 0 &&
        ck_random_gather_rows(tmp, a, perm.ptr, rows, h) == 0)
        rc = a->nbytes == 0 ? 0
                            : CU_CALL(st, cuMemcpyDtoDAsync, (cukit_array_ptr(a),
                                                             cukit_array_ptr(tmp),
                                                             (size_t)a->nbytes, h));
    if (perm.ptr && cukit_scratch_release(dev, &perm, h) < 0)
        rc = -1;
    Py_DECREF(tmp);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
gen_choice(ck_Generator *self, PyObject *args, PyObject *kwargs)
{
    return ck_random_choice(self->bg, args, kwargs);
}

static PyObject *
gen_spawn(ck_Generator *self, PyObject *arg)
{
    PyObject *bgs = PyObject_CallMethod((PyObject *)self->bg, "spawn", "O", arg);
    if (bgs == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(bgs); i++) {
        PyObject *g = PyObject_CallOneArg((PyObject *)Py_TYPE(self), PyList_GET_ITEM(bgs, i));
        if (g == NULL) {
            Py_DECREF(bgs);
            return NULL;
        }
        PyList_SetItem(bgs, i, g);
    }
    return bgs;
}

static PyObject *
gen_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"bit_generator", NULL};
    PyObject *bg;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Generator", kwlist, &bg))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    if (!ck_is_bit_generator(st, bg)) {
        PyErr_Format(PyExc_TypeError, "Generator(bit_generator): bit_generator must be a "
                     "cukit.random.Philox or Philox4x32, got %.200s (numpy's bit generators "
                     "draw on the host; a numpy Philox's state can be copied: p = Philox(); "
                     "p.state = np_philox.state)",
                     Py_TYPE(bg)->tp_name);
        return NULL;
    }
    ck_Generator *g = PyObject_New(ck_Generator, type);
    if (g == NULL)
        return NULL;
    g->bg = (ck_Philox *)Py_NewRef(bg);
    return (PyObject *)g;
}

static void
gen_dealloc(ck_Generator *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_XDECREF(self->bg);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *
gen_repr(ck_Generator *self)
{
    return PyUnicode_FromFormat("Generator(%R)", self->bg);
}

static PyObject *
gen_get_bit_generator(ck_Generator *self, void *closure)
{
    return Py_NewRef(self->bg);
}

#define KW (METH_VARARGS | METH_KEYWORDS)
#define FN(f) (PyCFunction)(void (*)(void))(f)
static PyMethodDef gen_methods[] = {
    {"random", FN(gen_random), KW,
     "random(size=None, dtype=float64, out=None): uniform floats in [0, 1), numpy's exactly: "
     "(next 64-bit word >> 11) * 2**-53, or for float32 (next 32-bit half >> 8) * 2**-24 with "
     "numpy's rule for halves; float16 and bfloat16 the same at their precision, (half >> 21) "
     "* 2**-11 and (half >> 24) * 2**-8, so never 1.0. size=None gives a 0-d array."},
    {"uniform", FN(gen_uniform), KW,
     "uniform(low=0.0, high=1.0, size=None, dtype=float64, out=None): low + (high - low) * "
     "random(), rounded as numpy rounds it (equal to numpy's for float64; float16 and "
     "bfloat16 computed in float32 and rounded once)."},
    {"standard_normal", FN(gen_standard_normal), KW,
     "standard_normal(size=None, dtype=float64, out=None): standard normals, one per draw "
     "that random() would make (not numpy's ziggurat stream): under Philox4x32 (default_rng) "
     "Box-Muller on pairs of draws, both values used; under Philox the inverse normal CDF."},
    {"normal", FN(gen_normal), KW,
     "normal(loc=0.0, scale=1.0, size=None, dtype=float64, out=None): loc + scale * "
     "standard_normal()."},
    {"standard_exponential", FN(gen_standard_exponential), KW,
     "standard_exponential(size=None, dtype=float64, method=None, out=None): -log(1 - U) of the "
     "U that random() gives (numpy's method='inv' formula)."},
    {"exponential", FN(gen_exponential), KW,
     "exponential(scale=1.0, size=None, dtype=float64, out=None): scale * "
     "standard_exponential()."},
    {"integers", FN(gen_integers), KW,
     "integers(low, high=None, size=None, dtype=int64, endpoint=False, out=None): integers in "
     "[low, high) ([low, high] with endpoint=True). Under Philox4x32 (default_rng) with at "
     "most 2**32 values, one 32-bit half each: Lemire's low + (half * count) >> 32 with his "
     "rejection (exactly uniform); otherwise one 64-bit word each: low + the high 64 bits of "
     "word * count. Any integer dtype or bool."},
    {"poisson", FN(gen_poisson), KW,
     "poisson(lam=1.0, size=None, out=None): int64 Poisson counts, one 64-bit word each: "
     "inversion of the CDF for lam < 10, Hormann's transformed rejection (its draws from a "
     "Philox stream keyed by the word) for larger lam. Not numpy's stream."},
    {"permutation", FN(gen_permutation), KW,
     "permutation(x, axis=0): x an int: a permutation of range(x) (int64); x a cukit.Array: "
     "a copy with its rows (axis 0) permuted. A keyed bijection (swap-or-not) that each "
     "element follows alone; it takes two words of the stream. Not numpy's."},
    {"shuffle", FN(gen_shuffle), KW,
     "shuffle(x, axis=0): permute the rows (axis 0) of the cukit.Array x in place, as "
     "permutation(x) orders them."},
    {"choice", FN(gen_choice), KW,
     "choice(a, size=None, replace=True, p=None, axis=0, shuffle=True): a sample of range(a) "
     "(a an int; int64) or of the rows of the cukit.Array a, of shape size (+ a.shape[1:]). "
     "With replacement: integers(0, n) without p, with p the index whose cumulative "
     "probability holds a uniform draw (a search on the device); without replacement: the "
     "first values of permutation(n) without p, with p the Efraimidis-Spirakis race (keys "
     "drawn and ordered on the host, where p is read). numpy's errors; not numpy's stream."},
    {"spawn", (PyCFunction)gen_spawn, METH_O,
     "spawn(n) -> list of n Generators on independent streams (children of the bit "
     "generator's SeedSequence)."},
    {NULL},
};
#undef KW
#undef FN

static PyGetSetDef gen_getset[] = {
    {"bit_generator", (getter)gen_get_bit_generator, NULL,
     "The bit generator (Philox or Philox4x32) this generator draws from."},
    {NULL},
};

static PyType_Slot gen_slots[] = {
    {Py_tp_doc, "Generator(bit_generator): numpy.random.Generator's methods, drawing on the GPU "
                "into cukit arrays from a cukit.random.Philox. Each value depends only on the "
                "key and its position in the stream, so the numbers are the same whatever the "
                "grid and however a request is split into calls. Every method also takes "
                "stream= (keyword only): the draw is queued there instead of on the default "
                "stream."},
    {Py_tp_new, gen_new},
    {Py_tp_dealloc, gen_dealloc},
    {Py_tp_repr, gen_repr},
    {Py_tp_methods, gen_methods},
    {Py_tp_getset, gen_getset},
    {0, NULL},
};

static PyType_Spec gen_spec = {
    .name = "cukit.random.Generator",
    .basicsize = sizeof(ck_Generator),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = gen_slots,
};

/* cukit._random_kernel_source(): the generated CUDA C, for tests without a GPU. */
static PyObject *
mod_random_kernel_source(PyObject *m, PyObject *ignored)
{
    return ck_random_kernel_source();
}

/* cukit._random_kernels(): the kernel names; _random_kernels(name): load that one. */
static PyObject *
mod_random_kernels(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs == 0)
        return ck_random_kernel_names();
    const char *name = nargs == 1 && PyUnicode_Check(args[0]) ? PyUnicode_AsUTF8(args[0]) : NULL;
    if (name == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "_random_kernels(name=None): name is a str");
        return NULL;
    }
    PyObject *names = ck_random_kernel_names();
    int known = names ? PySequence_Contains(names, args[0]) : -1;
    Py_XDECREF(names);
    if (known <= 0)
        return known < 0 ? NULL : PyErr_Format(PyExc_ValueError, "no random kernel %R", args[0]);
    cukit_Device *dev = cukit_device_arg(PyModule_GetState(m), NULL);
    if (dev == NULL || ck_random_load(dev, name) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef random_functions[] = {
    {"_random_kernel_source", mod_random_kernel_source, METH_NOARGS,
     "The CUDA C source of cukit.random's kernels."},
    {"_random_kernels", (PyCFunction)(void (*)(void))mod_random_kernels, METH_FASTCALL,
     "_random_kernels() -> tuple of str: the names of cukit.random's kernels; "
     "_random_kernels(name): compile and load that one on the current device (warmup)."},
    {NULL},
};

int
ck_random_setup(PyObject *module, cukit_state *st)
{
    if (ck_philox_setup(module, st) < 0)
        return -1;
    st->compute->GeneratorType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &gen_spec, NULL);
    if (st->compute->GeneratorType == NULL || PyModule_AddType(module, st->compute->GeneratorType) < 0)
        return -1;
    return PyModule_AddFunctions(module, random_functions);
}
