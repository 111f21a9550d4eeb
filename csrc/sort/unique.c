/* unique.c - cukit.unique: the sorted distinct values (NaNs as one), with numpy's return_index, return_inverse and return_counts */
#include "sort/sort.h"

/* The flattened array is argsorted (stably, so the first index of each value comes
 * first); a flag marks each sorted element that differs from the one before; an
 * inclusive cumsum of the flags gives each element its output slot; one kernel then
 * scatters the distinct values, their first indices, and the inverse. The number of
 * distinct values is the result's length, so it is read back (a wait, as in numpy's
 * and CuPy's unique). */

/* A new 1-D int64 array of n elements on dev. New ref or NULL. */
static cukit_Array *
i64_vector(cukit_state *st, cukit_Device *dev, long long n)
{
    PyObject *i64 = ck_dtype_obj(st, CUKIT_TC_I64);
    Py_ssize_t shape = (Py_ssize_t)n;
    return i64 ? cukit_array_new(st, dev, i64, CUKIT_TC_I64, 8, 1, &shape) : NULL;
}

static PyObject *
fn_unique(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"ar", "return_index", "return_inverse", "return_counts", "axis",
                             "stream", NULL};
    PyObject *ao, *axis = Py_None, *stream = Py_None;
    int want_index = 0, want_inverse = 0, want_counts = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|pppO$O:unique", kwlist, &ao, &want_index,
                                     &want_inverse, &want_counts, &axis, &stream))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    const char *who = "cukit.unique()";
    cukit_Array *a = cukit_sort_arg(st, ao, who);
    if (a == NULL)
        return NULL;
    if (axis != Py_None)
        return PyErr_Format(PyExc_NotImplementedError, "%s: axis= is not supported (the "
                            "flattened array's distinct values only)", who);
    CUstream h;
    if (ck_stream(st, stream, a->device, (PyObject *)a, &h) < 0)
        return NULL;
    cukit_Device *dev = a->device;
    PyObject *result = NULL;
    cukit_Array *flat = NULL, *vals = NULL, *sidx = NULL, *flags = NULL, *pos = NULL;
    cukit_Array *out = NULL, *oidx = NULL, *first = NULL, *inv = NULL, *counts = NULL;
    long long n = a->size, u = 0;
    /* The flattened array in C order, contiguous. */
    Py_ssize_t sn = (Py_ssize_t)n;
    flat = cukit_array_new(st, dev, a->dtype, a->typecode, a->itemsize, 1, &sn);
    if (flat == NULL)
        goto done;
    if (n > 0) {
        Py_ssize_t cs[CUKIT_MAXDIM], st_ = a->itemsize;
        for (int d = a->ndim - 1; d >= 0; d--) {
            cs[d] = st_;
            st_ *= a->shape[d];
        }
        if (cukit_strided_copy(dev, cukit_array_ptr(flat), cs, cukit_array_ptr(a), a->strides,
                               a->ndim, a->shape, a->itemsize, h) < 0)
            goto done;
    }
    if (cukit_sort_rows(st, m, flat, 1, h, stream, &vals, &sidx) < 0)
        goto done;
    cukit_sort_kernel_set k;
    if (n > 0) {
        if (cukit_sort_kernels(st, m, dev, a->typecode, CUKIT_SORT_UNIQUE, &k) < 0 ||
            (flags = i64_vector(st, dev, n)) == NULL)
            goto done;
        CUdeviceptr ps = cukit_array_ptr(vals), pf = cukit_array_ptr(flags);
        void *p1[] = {&ps, &pf, &n};
        if (cukit_sort_launch(st, k.flags, (n + 255) / 256, h, p1) < 0)
            goto done;
        /* Inclusive cumsum of the flags: compute/'s scan, on the same stream. */
        PyObject *cargs[2] = {(PyObject *)flags, stream};
        PyObject *kw = PyTuple_Pack(1, st->launch->str_stream);
        if (kw == NULL)
            goto done;
        pos = (cukit_Array *)ck_scan_call(st, 0, cargs, 1, stream != Py_None ? kw : NULL);
        Py_DECREF(kw);
        if (pos == NULL)
            goto done;
        if (cukit_copy_dtoh(st, &u, cukit_array_ptr(pos) + (CUdeviceptr)(8 * (n - 1)), 8, h, 1) < 0)
            goto done;
    }
    Py_ssize_t su = (Py_ssize_t)u;
    out = cukit_array_new(st, dev, a->dtype, a->typecode, a->itemsize, 1, &su);
    if (out == NULL || (want_index && (oidx = i64_vector(st, dev, u)) == NULL) ||
        (want_counts && (first = i64_vector(st, dev, u)) == NULL) ||
        (want_counts && (counts = i64_vector(st, dev, u)) == NULL) ||
        (want_inverse && (inv = cukit_array_new(st, dev, ck_dtype_obj(st, CUKIT_TC_I64),
                                                CUKIT_TC_I64, 8, a->ndim, a->shape)) == NULL))
        goto done;
    if (n > 0) {
        CUdeviceptr ps = cukit_array_ptr(vals), pf = cukit_array_ptr(flags);
        CUdeviceptr pp = cukit_array_ptr(pos), po = cukit_array_ptr(out);
        CUdeviceptr pi = cukit_array_ptr(sidx), poi = oidx ? cukit_array_ptr(oidx) : 0;
        CUdeviceptr pfi = first ? cukit_array_ptr(first) : 0, pinv = inv ? cukit_array_ptr(inv) : 0;
        void *p2[] = {&ps, &pf, &pp, &po, &pi, &poi, &pfi, &pinv, &n};
        if (cukit_sort_launch(st, k.scatter, (n + 255) / 256, h, p2) < 0)
            goto done;
        if (want_counts) {
            CUdeviceptr pc = cukit_array_ptr(counts);
            void *p3[] = {&pfi, &pc, &u, &n};
            if (cukit_sort_launch(st, k.counts, (u + 255) / 256, h, p3) < 0)
                goto done;
        }
    }
    if (!want_index && !want_inverse && !want_counts) {
        result = Py_NewRef(out);
        goto done;
    }
    result = PyTuple_New(1 + want_index + want_inverse + want_counts);
    if (result == NULL)
        goto done;
    int i = 0;
    PyTuple_SET_ITEM(result, i++, Py_NewRef(out));
    if (want_index)
        PyTuple_SET_ITEM(result, i++, Py_NewRef(oidx));
    if (want_inverse)
        PyTuple_SET_ITEM(result, i++, Py_NewRef(inv));
    if (want_counts)
        PyTuple_SET_ITEM(result, i++, Py_NewRef(counts));
done:
    Py_XDECREF(flat);
    Py_XDECREF(vals);
    Py_XDECREF(sidx);
    Py_XDECREF(flags);
    Py_XDECREF(pos);
    Py_XDECREF(out);
    Py_XDECREF(oidx);
    Py_XDECREF(first);
    Py_XDECREF(inv);
    Py_XDECREF(counts);
    return result;
}

static PyMethodDef functions[] = {
    {"unique", (PyCFunction)(void (*)(void))fn_unique, METH_VARARGS | METH_KEYWORDS,
     "unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, "
     "stream=None): numpy's unique of the flattened array (NaNs count as one value); waits "
     "for the number of distinct values."},
    {NULL},
};

int
cukit_unique_setup(PyObject *module, cukit_state *st)
{
    return PyModule_AddFunctions(module, functions);
}
