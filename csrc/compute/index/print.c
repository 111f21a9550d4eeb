/* print.c - repr() and str() of a cukit.Array as numpy prints it, copying to the host only the elements numpy shows */
#include "compute/index/index.h"

/* The host array numpy prints for a: all of it up to numpy's print threshold, else a
 * host array of a's shape (calloc'd, untouched but where written) holding only the
 * `edgeitems` first and last elements along each dimension, gathered in one kernel. */
static PyObject *
printable(cukit_state *st, cukit_Array *a)
{
    PyObject *none = PyTuple_New(0), *out = NULL, *opts = NULL, *idxs = NULL, *ix = NULL,
             *small = NULL, *host_small = NULL, *shape = NULL, *full = NULL;
    if (none == NULL)
        return NULL;
    opts = PyObject_CallMethod(st->numpy, "get_printoptions", NULL);
    PyObject *th = opts ? PyDict_GetItemString(opts, "threshold") : NULL;
    PyObject *ed = opts ? PyDict_GetItemString(opts, "edgeitems") : NULL;
    Py_ssize_t threshold = th ? PyLong_AsSsize_t(th) : -1, edge = ed ? PyLong_AsSsize_t(ed) : -1;
    if (threshold < 0 || edge < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "numpy's print options are not ints");
        goto done;
    }
    if (a->ndim == 0 || a->size <= threshold) {
        out = cukit_array_get(a, none, NULL);
        goto done;
    }
    idxs = PyTuple_New(a->ndim);
    for (int d = 0; idxs && d < a->ndim; d++) {
        Py_ssize_t n = a->shape[d];
        PyObject *v;
        if (n > 2 * edge) {
            v = PyList_New(2 * edge);
            for (Py_ssize_t i = 0; v && i < edge; i++) {
                PyList_SET_ITEM(v, i, PyLong_FromSsize_t(i));
                PyList_SET_ITEM(v, edge + i, PyLong_FromSsize_t(n - edge + i));
            }
        }
        else
            v = PyObject_CallMethod(st->numpy, "arange", "n", n);
        if (v == NULL)
            Py_CLEAR(idxs);
        else
            PyTuple_SET_ITEM(idxs, d, v);
    }
    PyObject *ix_ = idxs ? PyObject_GetAttrString(st->numpy, "ix_") : NULL;
    ix = ix_ ? PyObject_Call(ix_, idxs, NULL) : NULL;
    Py_XDECREF(ix_);
    small = ix ? ck_index_get(st, (PyObject *)a, ix) : NULL;
    host_small = small ? cukit_array_get((cukit_Array *)small, none, NULL) : NULL;
    shape = host_small ? cukit_array_shape(a) : NULL;
    full = shape ? PyObject_CallMethod(st->numpy, "zeros", "OO", shape, a->dtype) : NULL;
    if (full && PyObject_SetItem(full, ix, host_small) == 0)
        out = Py_NewRef(full);
done:
    Py_DECREF(none);
    Py_XDECREF(opts);
    Py_XDECREF(idxs);
    Py_XDECREF(ix);
    Py_XDECREF(small);
    Py_XDECREF(host_small);
    Py_XDECREF(shape);
    Py_XDECREF(full);
    return out;
}

PyObject *
ck_array_print(cukit_state *st, PyObject *self, int as_str)
{
    if (cukit_numpy(st) < 0)
        return NULL;
    PyObject *host = printable(st, (cukit_Array *)self);
    if (host == NULL)
        return NULL;
    PyObject *out = as_str ? PyObject_Str(host) : PyObject_Repr(host);
    Py_DECREF(host);
    return out;
}
