/* histogram.c - cukit.bincount and the counting kernel under cukit.histogram: atomic adds into zeroed bins */
#include "compute/compute.h"

#include <stdio.h>
#include <string.h>

/* The C type of an input element the kernels read, by typecode; NULL: not taken. */
static const char *
element_ctype(int tc)
{
    switch (tc) {
    case CUKIT_TC_BOOL: return "bool";
    case CUKIT_TC_I8: return "signed char";
    case CUKIT_TC_U8: return "unsigned char";
    case CUKIT_TC_I16: return "short";
    case CUKIT_TC_U16: return "unsigned short";
    case CUKIT_TC_I32: return "int";
    case CUKIT_TC_U32: return "unsigned int";
    case CUKIT_TC_I64: return "long long";
    case CUKIT_TC_U64: return "unsigned long long";
    case CUKIT_TC_F32: return "float";
    case CUKIT_TC_F64: return "double";
    default: return NULL;
    }
}

/* The kernel `name` of histogram.cu for input type xt, edge type et, weighted or not. */
static int
stats_kernel(cukit_state *st, cukit_Device *dev, const char *name, int xt, int et, int weighted,
             CUfunction *f)
{
    char defines[160];
    snprintf(defines, sizeof defines, "#define XT %s\n#define ET %s\n#define WEIGHTED %d\n",
             element_ctype(xt), et == CUKIT_TC_F32 ? "float" : "double", weighted);
    /* one dict (device ordinal -> Module) per set of defines */
    PyObject *key = PyUnicode_FromString(defines);
    if (key == NULL)
        return -1;
    if (st->compute->stats_modules == NULL && (st->compute->stats_modules = PyDict_New()) == NULL) {
        Py_DECREF(key);
        return -1;
    }
    PyObject *per = PyDict_GetItemWithError(st->compute->stats_modules, key);
    if (per == NULL && PyErr_Occurred()) {
        Py_DECREF(key);
        return -1;
    }
    PyObject *modules = per ? Py_NewRef(per) : NULL;
    int rc = cukit_builtin_kernel_file(dev, &modules, defines, "compute/reduce/kernels/histogram.cu",
                                       name, f);
    if (rc == 0 && per == NULL && modules &&
        PyDict_SetItem(st->compute->stats_modules, key, modules) < 0)
        rc = -1;
    Py_XDECREF(modules);
    Py_DECREF(key);
    return rc;
}

/* Launch a grid-stride kernel over n elements on the legacy stream. */
static int
launch_over(cukit_Device *dev, CUfunction f, long long n, void **args)
{
    long long blocks = (n + CK_THREADS - 1) / CK_THREADS, most = (long long)dev->sm_count * 32;
    if (blocks > most)
        blocks = most;
    if (blocks < 1)
        blocks = 1;
    return cukit_builtin_launch(dev, f, (unsigned)blocks, 1, CK_THREADS, 1, NULL, args);
}

/* A zeroed C-contiguous 1-D array of n elements of tc. New ref or NULL. */
static cukit_Array *
zeroed(cukit_state *st, cukit_Device *dev, int tc, Py_ssize_t n)
{
    cukit_Array *z = ck_empty(st, dev, tc, 1, &n);
    if (z && z->nbytes > 0 &&
        (cukit_device_activate(dev) < 0 ||
         CU_CALL(st, cuMemsetD8Async, (cukit_array_ptr(z), 0, (size_t)z->nbytes, NULL)) < 0))
        Py_CLEAR(z);
    return z;
}

/* A 1-D cukit.Array argument (TypeError / ValueError naming `who` and `what`). Borrowed. */
static cukit_Array *
vector_arg(cukit_state *st, PyObject *obj, const char *who, const char *what)
{
    if (!Py_IS_TYPE(obj, st->ArrayType)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a cukit.Array, not %s (copy host data "
                     "with cukit.asarray first)", who, what, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    cukit_Array *a = (cukit_Array *)obj;
    if (!cukit_array_live(a)) {
        cukit_freed_error();
        return NULL;
    }
    if (a->ndim != 1) {
        PyErr_Format(PyExc_ValueError, "%s: %s must be 1-dimensional, not %d-dimensional", who,
                     what, a->ndim);
        return NULL;
    }
    return a;
}

/* The weights as a float64 vector of x's length (a new array when cast). New ref, or
 * Py_None when weights is None, or NULL. */
static PyObject *
weights_arg(cukit_state *st, PyObject *weights, cukit_Array *x, const char *who)
{
    if (weights == Py_None)
        return Py_NewRef(Py_None);
    cukit_Array *w = vector_arg(st, weights, who, "weights");
    if (w == NULL)
        return NULL;
    if (w->size != x->size || w->device != x->device) {
        PyErr_SetString(PyExc_ValueError, "The weights and list don't have the same length.");
        return NULL;
    }
    char kind = ck_dtypes[w->typecode].kind;
    if (kind == 'c' || !ck_math_tc(w->typecode)) {
        PyErr_Format(PyExc_TypeError, "Cannot cast array data from dtype('%s') to "
                     "dtype('float64') according to the rule 'safe'", ck_dtypes[w->typecode].name);
        return NULL;
    }
    if (w->typecode == CUKIT_TC_F64)
        return Py_NewRef(weights);
    return ck_astype(st, w, CUKIT_TC_F64, Py_None);
}

/* The smallest and largest element of x, as Python ints. 0 / -1. */
static int
int_extremes(cukit_state *st, cukit_Array *x, long long *lo, long long *hi)
{
    PyObject *none = PyTuple_New(0);
    for (int k = 0; none && k < 2; k++) {
        PyObject *r = ck_reduce_method(st, k ? 2 : 3, (PyObject *)x, none, NULL); /* min, max */
        PyObject *v = r ? PyNumber_Long(r) : NULL;
        long long val = v ? PyLong_AsLongLong(v) : -1;
        Py_XDECREF(r);
        Py_XDECREF(v);
        if (PyErr_Occurred()) {
            Py_DECREF(none);
            return -1;
        }
        *(k ? hi : lo) = val;
    }
    Py_XDECREF(none);
    return none ? 0 : -1;
}

static PyObject *
mod_bincount(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"x", "weights", "minlength", NULL};
    PyObject *xo, *weights = Py_None;
    Py_ssize_t minlength = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|On:bincount", kwlist, &xo, &weights,
                                     &minlength))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    cukit_Array *x = vector_arg(st, xo, "bincount()", "x");
    if (x == NULL)
        return NULL;
    char kind = ck_dtypes[x->typecode].kind;
    if ((kind != 'b' && kind != 'i' && kind != 'u') || x->typecode == CUKIT_TC_U64)
        return PyErr_Format(PyExc_TypeError, "Cannot cast array data from dtype('%s') to "
                            "dtype('int64') according to the rule 'safe'",
                            ck_dtypes[x->typecode].name);
    if (minlength < 0)
        return PyErr_Format(PyExc_ValueError, "'minlength' must not be negative");
    PyObject *w = weights_arg(st, weights, x, "bincount()");
    if (w == NULL)
        return NULL;
    int weighted = w != Py_None, out_tc = weighted ? CUKIT_TC_F64 : CUKIT_TC_I64;
    long long lo = 0, hi = -1;
    cukit_Array *out = NULL;
    if (x->size > 0 && int_extremes(st, x, &lo, &hi) < 0)
        goto done;
    if (lo < 0) {
        PyErr_SetString(PyExc_ValueError, "'list' argument must have no negative elements");
        goto done;
    }
    out = zeroed(st, x->device, out_tc, hi + 1 > minlength ? (Py_ssize_t)(hi + 1) : minlength);
    if (out == NULL || x->size == 0)
        goto done;
    CUfunction f;
    if (stats_kernel(st, x->device, "bincount", x->typecode, CUKIT_TC_F64, weighted, &f) < 0) {
        Py_CLEAR(out);
        goto done;
    }
    CUdeviceptr xp = cukit_array_ptr(x), op = cukit_array_ptr(out);
    CUdeviceptr wp = weighted ? cukit_array_ptr((cukit_Array *)w) : 0;
    long long xs = x->strides[0] / x->itemsize, n = x->size;
    long long ws = weighted ? ((cukit_Array *)w)->strides[0] / 8 : 0;
    void *params[] = {&xp, &xs, &n, &op, &wp, &ws};
    if (launch_over(x->device, f, n, params) < 0)
        Py_CLEAR(out);
done:
    Py_DECREF(w);
    return (PyObject *)out;
}

/* _histogram(a, edges, weights=None): the counts (int64, or float64 sums of weights)
 * of the 1-D a in the bins between the increasing float32/float64 edges. */
static PyObject *
mod_histogram_counts(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "edges", "weights", NULL};
    PyObject *ao, *eo, *weights = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:_histogram", kwlist, &ao, &eo, &weights))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    cukit_Array *a = vector_arg(st, ao, "histogram()", "a");
    cukit_Array *e = a ? vector_arg(st, eo, "histogram()", "the bin edges") : NULL;
    if (e == NULL)
        return NULL;
    if (element_ctype(a->typecode) == NULL)
        return PyErr_Format(PyExc_TypeError, "histogram(): cukit counts bool, integer, float32 "
                            "and float64 data, not %s", ck_dtypes[a->typecode].name);
    if ((e->typecode != CUKIT_TC_F32 && e->typecode != CUKIT_TC_F64) || e->size < 2 ||
        e->strides[0] != e->itemsize || e->device != a->device)
        return PyErr_Format(PyExc_ValueError, "histogram(): the edges must be a contiguous "
                            "float32 or float64 vector of at least 2 on the data's device");
    PyObject *w = weights_arg(st, weights, a, "histogram()");
    if (w == NULL)
        return NULL;
    int weighted = w != Py_None;
    cukit_Array *out = zeroed(st, a->device, weighted ? CUKIT_TC_F64 : CUKIT_TC_I64, e->size - 1);
    CUfunction f;
    if (out && a->size > 0 &&
        stats_kernel(st, a->device, "histogram", a->typecode, e->typecode, weighted, &f) == 0) {
        CUdeviceptr xp = cukit_array_ptr(a), ep = cukit_array_ptr(e), op = cukit_array_ptr(out);
        CUdeviceptr wp = weighted ? cukit_array_ptr((cukit_Array *)w) : 0;
        long long xs = a->strides[0] / a->itemsize, n = a->size;
        long long ws = weighted ? ((cukit_Array *)w)->strides[0] / 8 : 0;
        int nb = (int)(e->size - 1);
        void *params[] = {&xp, &xs, &n, &ep, &nb, &op, &wp, &ws};
        if (launch_over(a->device, f, n, params) < 0)
            Py_CLEAR(out);
    }
    else if (out && a->size > 0) {
        Py_CLEAR(out);
    }
    Py_DECREF(w);
    return (PyObject *)out;
}

static PyMethodDef stats_functions[] = {
    {"bincount", (PyCFunction)(void (*)(void))mod_bincount, METH_VARARGS | METH_KEYWORDS,
     "bincount(x, weights=None, minlength=0) -> Array: how often each value of the 1-D "
     "non-negative integer x occurs (int64), or the sums of its weights (float64); atomic "
     "adds, after one read of x's largest and smallest value."},
    {"_histogram", (PyCFunction)(void (*)(void))mod_histogram_counts, METH_VARARGS | METH_KEYWORDS,
     "_histogram(a, edges, weights=None) -> Array: internal, under cukit.histogram: the counts "
     "of the 1-D a in the bins between the increasing edges (the last bin closed)."},
    {NULL},
};

int
ck_histogram_setup(PyObject *module, cukit_state *st)
{
    (void)st;
    return PyModule_AddFunctions(module, stats_functions);
}
