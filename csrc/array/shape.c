/* shape.c - numpy's shape methods of cukit.Array (ravel, view, squeeze, diagonal, repeat...), its round/clip/sort methods, and broadcast_to */
#include "array/impl.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ helpers */

/* numpy's AxisError for `axis` of an ndim-dimensional array (a ValueError and an
 * IndexError, as numpy's is). Returns -1 with it set. */
static int
axis_error(cukit_state *st, Py_ssize_t axis, int ndim)
{
    if (cukit_numpy(st) < 0)
        return -1;
    PyObject *mod = PyObject_GetAttrString(st->numpy, "exceptions");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, "AxisError") : NULL;
    Py_XDECREF(mod);
    if (cls == NULL) {
        PyErr_Clear();
        cls = PyObject_GetAttrString(st->numpy, "AxisError");
    }
    if (cls == NULL)
        return -1;
    PyObject *exc = PyObject_CallFunction(cls, "ni", axis, ndim);
    if (exc) {
        PyErr_SetObject(cls, exc);
        Py_DECREF(exc);
    }
    Py_DECREF(cls);
    return -1;
}

/* An axis argument as an index in [0, ndim). 0 / -1 (TypeError, numpy's AxisError). */
int
cukit_axis_arg(cukit_state *st, PyObject *obj, int ndim, int *out)
{
    if (!PyIndex_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "an axis must be an integer, not %s", Py_TYPE(obj)->tp_name);
        return -1;
    }
    Py_ssize_t ax = PyNumber_AsSsize_t(obj, PyExc_OverflowError);
    if (ax == -1 && PyErr_Occurred())
        return -1;
    if (ax < -ndim || ax >= ndim)
        return axis_error(st, ax, ndim);
    *out = (int)(ax < 0 ? ax + ndim : ax);
    return 0;
}

/* An order= argument: 'C' (0) or 'F' (1); 'A' and 'K' are 'F' for an array that is
 * Fortran- and not C-contiguous, else 'C'. -1 with ValueError otherwise. */
static int
order_arg(cukit_Array *a, const char *order)
{
    if (order == NULL || strcmp(order, "C") == 0)
        return 0;
    if (strcmp(order, "F") == 0)
        return 1;
    if (strcmp(order, "A") == 0 || strcmp(order, "K") == 0)
        return (a->flags & CUKIT_ARRAY_F_CONTIG) && !(a->flags & CUKIT_ARRAY_C_CONTIG);
    PyErr_Format(PyExc_ValueError, "order must be one of 'C', 'F', 'A', or 'K' (got '%s')", order);
    return -1;
}

/* The reversed-dimensions view of a (F order read as C order). New ref or NULL. */
static cukit_Array *
reversed_view(cukit_Array *a)
{
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    for (int i = 0; i < a->ndim; i++) {
        shape[i] = a->shape[a->ndim - 1 - i];
        strides[i] = a->strides[a->ndim - 1 - i];
    }
    return cukit_array_view(a, a->offset, a->ndim, shape, strides);
}

/* A 1-D view of the C-contiguous array c. New ref or NULL. */
static PyObject *
flat_view(cukit_Array *c)
{
    Py_ssize_t n = c->size, s = c->itemsize;
    return (PyObject *)cukit_array_view(c, c->offset, 1, &n, &s);
}

/* ravel/flatten: order 0 or 1; copy=1 always copies. New ref or NULL. */
static PyObject *
flattened(cukit_Array *self, int fortran, int copy)
{
    if (cukit_array_check_live(self) < 0)
        return NULL;
    cukit_Array *src = fortran ? reversed_view(self) : (cukit_Array *)Py_NewRef(self);
    if (src == NULL)
        return NULL;
    PyObject *out = NULL;
    if (!copy) {
        /* numpy's ravel is reshape(-1): a view whenever the layout allows one */
        PyObject *args = Py_BuildValue("(n)", (Py_ssize_t)-1);
        out = args ? cukit_array_reshape(src, args) : NULL;
        Py_XDECREF(args);
        if (out == NULL && PyErr_ExceptionMatches(PyExc_ValueError))
            PyErr_Clear();
        else {
            Py_DECREF(src);
            return out;
        }
    }
    cukit_Array *c = cukit_array_copy(src);
    if (c != NULL) {
        out = flat_view(c);
        Py_DECREF(c);
    }
    Py_DECREF(src);
    return out;
}

/* ------------------------------------------------------------------ methods */

PyObject *
cukit_array_ravel(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"order", NULL};
    const char *order = "C";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|s:ravel", kwlist, &order))
        return NULL;
    int f = order_arg(self, order);
    return f < 0 ? NULL : flattened(self, f, 0);
}

PyObject *
cukit_array_flatten(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"order", NULL};
    const char *order = "C";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|s:flatten", kwlist, &order))
        return NULL;
    int f = order_arg(self, order);
    return f < 0 ? NULL : flattened(self, f, 1);
}

/* a.view(dtype): the same bytes read as another dtype. A different item size
 * rescales the last dimension, which must then be contiguous (numpy's rule). */
PyObject *
cukit_array_view_dtype(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dtype", "type", NULL};
    PyObject *dtype = Py_None, *type = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:view", kwlist, &dtype, &type))
        return NULL;
    cukit_state *st = self->st;
    if (cukit_array_check_live(self) < 0)
        return NULL;
    if (type != Py_None || (PyType_Check(dtype) &&
                            PyType_IsSubtype((PyTypeObject *)dtype, st->ArrayType))) {
        PyErr_SetString(PyExc_TypeError, "view(type=...): cukit arrays have no subclasses; "
                        "pass a dtype only");
        return NULL;
    }
    if (dtype == Py_None)
        return (PyObject *)cukit_array_view(self, self->offset, self->ndim, self->shape,
                                            self->strides);
    Py_ssize_t isz;
    int tc;
    PyObject *dt = cukit_resolve_dtype(st, dtype);
    if (dt == NULL)
        return NULL;
    if (cukit_dtype_facts(st, dt, &isz, &tc) < 0) {
        Py_DECREF(dt);
        return NULL;
    }
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    int nd = self->ndim;
    memcpy(shape, self->shape, sizeof(Py_ssize_t) * (size_t)nd);
    memcpy(strides, self->strides, sizeof(Py_ssize_t) * (size_t)nd);
    PyObject *out = NULL;
    if (isz != self->itemsize) {
        if (nd == 0) {
            PyErr_SetString(PyExc_ValueError, "Changing the dtype of a 0d array is only "
                            "supported if the itemsize is unchanged");
            goto done;
        }
        Py_ssize_t bytes = shape[nd - 1] * self->itemsize;
        if (shape[nd - 1] != 1 && strides[nd - 1] != self->itemsize) {
            PyErr_SetString(PyExc_ValueError, "To change to a dtype of a different size, the "
                            "last axis must be contiguous");
            goto done;
        }
        if (bytes % isz != 0) {
            PyErr_Format(PyExc_ValueError, "When changing to a smaller dtype, its size must be a "
                         "divisor of the size of original dtype; the last axis holds %zd bytes, "
                         "not a multiple of %zd", bytes, isz);
            goto done;
        }
        shape[nd - 1] = bytes / isz;
        strides[nd - 1] = isz;
    }
    out = (PyObject *)cukit_array_view_as(self, dt, tc, isz, self->offset, nd, shape, strides);
done:
    Py_DECREF(dt);
    return out;
}

/* The axes named by `axis` (an int or a sequence of ints) as marks in sel[]. 0 / -1. */
static int
axes_marks(cukit_state *st, PyObject *axis, int ndim, int *sel)
{
    memset(sel, 0, sizeof(int) * CUKIT_MAXDIM);
    if (PyIndex_Check(axis)) {
        int ax;
        if (cukit_axis_arg(st, axis, ndim, &ax) < 0)
            return -1;
        sel[ax] = 1;
        return 0;
    }
    PyObject *seq = PySequence_Fast(axis, "axis must be an int or a tuple of ints");
    if (seq == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        int ax;
        if (cukit_axis_arg(st, PySequence_Fast_GET_ITEM(seq, i), ndim, &ax) < 0) {
            Py_DECREF(seq);
            return -1;
        }
        if (sel[ax]) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "repeated axis");
            return -1;
        }
        sel[ax] = 1;
    }
    Py_DECREF(seq);
    return 0;
}

PyObject *
cukit_array_squeeze(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"axis", NULL};
    PyObject *axis = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:squeeze", kwlist, &axis))
        return NULL;
    if (cukit_array_check_live(self) < 0)
        return NULL;
    int sel[CUKIT_MAXDIM];
    if (axis == Py_None) {
        for (int i = 0; i < self->ndim; i++)
            sel[i] = self->shape[i] == 1;
    }
    else if (axes_marks(self->st, axis, self->ndim, sel) < 0) {
        return NULL;
    }
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    int n = 0;
    for (int i = 0; i < self->ndim; i++) {
        if (!sel[i]) {
            shape[n] = self->shape[i];
            strides[n++] = self->strides[i];
        }
        else if (self->shape[i] != 1) {
            PyErr_SetString(PyExc_ValueError, "cannot select an axis to squeeze out which has "
                            "size not equal to one");
            return NULL;
        }
    }
    return (PyObject *)cukit_array_view(self, self->offset, n, shape, strides);
}

PyObject *
cukit_array_swapaxes(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"axis1", "axis2", NULL};
    PyObject *o1, *o2;
    int a1, a2;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:swapaxes", kwlist, &o1, &o2))
        return NULL;
    if (cukit_array_check_live(self) < 0 || cukit_axis_arg(self->st, o1, self->ndim, &a1) < 0 ||
        cukit_axis_arg(self->st, o2, self->ndim, &a2) < 0)
        return NULL;
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    memcpy(shape, self->shape, sizeof(Py_ssize_t) * (size_t)self->ndim);
    memcpy(strides, self->strides, sizeof(Py_ssize_t) * (size_t)self->ndim);
    shape[a1] = self->shape[a2], strides[a1] = self->strides[a2];
    shape[a2] = self->shape[a1], strides[a2] = self->strides[a1];
    return (PyObject *)cukit_array_view(self, self->offset, self->ndim, shape, strides);
}

/* a.diagonal(offset, axis1, axis2): a view, the other dimensions first and the
 * diagonal last (numpy's layout). numpy's is read-only; this one may be written. */
PyObject *
cukit_array_diagonal(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"offset", "axis1", "axis2", NULL};
    Py_ssize_t k = 0;
    PyObject *o1 = NULL, *o2 = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|nOO:diagonal", kwlist, &k, &o1, &o2))
        return NULL;
    if (cukit_array_check_live(self) < 0)
        return NULL;
    if (self->ndim < 2) {
        PyErr_SetString(PyExc_ValueError, "diag requires an array of at least two dimensions");
        return NULL;
    }
    PyObject *zero = PyLong_FromLong(0), *one = PyLong_FromLong(1);
    int a1 = 0, a2 = 1;
    int rc = zero && one ? cukit_axis_arg(self->st, o1 ? o1 : zero, self->ndim, &a1) : -1;
    if (rc == 0)
        rc = cukit_axis_arg(self->st, o2 ? o2 : one, self->ndim, &a2);
    Py_XDECREF(zero);
    Py_XDECREF(one);
    if (rc < 0)
        return NULL;
    if (a1 == a2) {
        PyErr_SetString(PyExc_ValueError, "axis1 and axis2 cannot be the same");
        return NULL;
    }
    Py_ssize_t n1 = self->shape[a1], n2 = self->shape[a2], offset = self->offset, len;
    if (k >= 0) {
        len = n2 - k < n1 ? n2 - k : n1;
        if (len > 0)
            offset += k * self->strides[a2];
    }
    else {
        len = n1 + k < n2 ? n1 + k : n2;
        if (len > 0)
            offset += -k * self->strides[a1];
    }
    if (len < 0)
        len = 0;
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    int n = 0;
    for (int i = 0; i < self->ndim; i++) {
        if (i != a1 && i != a2) {
            shape[n] = self->shape[i];
            strides[n++] = self->strides[i];
        }
    }
    shape[n] = len;
    strides[n++] = self->strides[a1] + self->strides[a2];
    return (PyObject *)cukit_array_view(self, len > 0 ? offset : self->offset, n, shape, strides);
}

/* The repeats of a.repeat as host int64 values: a scalar (*scalar set, *count 1) or
 * one per element along the axis. New ref: a numpy array, or NULL. */
static PyObject *
repeat_counts(cukit_state *st, PyObject *repeats, Py_ssize_t n, int *scalar)
{
    PyObject *host;
    if (Py_IS_TYPE(repeats, st->ArrayType)) {
        PyObject *none = PyTuple_New(0);
        host = none ? cukit_array_get((cukit_Array *)repeats, none, NULL) : NULL;
        Py_XDECREF(none);
    }
    else {
        host = Py_NewRef(repeats);
    }
    if (host == NULL)
        return NULL;
    PyObject *kw = Py_BuildValue("{ss}", "casting", "safe");
    PyObject *arr = cukit_as_host_array(st, host, NULL);
    PyObject *ints = NULL;
    Py_DECREF(host);
    if (arr && kw) {
        PyObject *meth = PyObject_GetAttrString(arr, "astype");
        PyObject *a = meth ? Py_BuildValue("(s)", "int64") : NULL;
        ints = a ? PyObject_Call(meth, a, kw) : NULL;
        Py_XDECREF(meth);
        Py_XDECREF(a);
    }
    Py_XDECREF(arr);
    Py_XDECREF(kw);
    if (ints == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "repeat(): repeats must be integers");
        }
        return NULL;
    }
    PyObject *nd = PyObject_GetAttrString(ints, "ndim");
    PyObject *sz = PyObject_GetAttrString(ints, "size");
    long ndim = nd ? PyLong_AsLong(nd) : -1;
    Py_ssize_t size = sz ? PyLong_AsSsize_t(sz) : -1;
    Py_XDECREF(nd);
    Py_XDECREF(sz);
    if (PyErr_Occurred() || ndim > 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "repeat(): repeats must be a scalar or 1-D");
        Py_DECREF(ints);
        return NULL;
    }
    *scalar = ndim == 0 || size == 1;
    if (!*scalar && size != n) {
        PyErr_Format(PyExc_ValueError, "operands could not be broadcast together with shape "
                     "(%zd,) (%zd,)", n, size);
        Py_DECREF(ints);
        return NULL;
    }
    return ints;
}

/* out (C-contiguous) <- a with each element along axis repeated `r` times: one copy of
 * a view that walks the r copies with stride 0, (..., n, r, ...) onto (..., n*r, ...). */
static int
repeat_all(cukit_Array *a, int axis, Py_ssize_t r, cukit_Array *out)
{
    Py_ssize_t sh[CUKIT_MAXDIM], ss[CUKIT_MAXDIM], ds[CUKIT_MAXDIM];
    int nd = a->ndim + 1;
    if (nd > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "repeat() of a %d-dimensional array needs one more "
                     "dimension than cukit allows (%d)", a->ndim, CUKIT_MAXDIM);
        return -1;
    }
    for (int i = 0, j = 0; i < a->ndim; i++, j++) {
        sh[j] = a->shape[i], ss[j] = a->strides[i], ds[j] = out->strides[i];
        if (i == axis) {
            ds[j] = out->strides[i] * r; /* the next source element: r outputs on */
            j++;
            sh[j] = r, ss[j] = 0, ds[j] = out->strides[i];
        }
    }
    return cukit_strided_copy(a->device, cukit_array_ptr(out), ds, cukit_array_ptr(a), ss, nd,
                              sh, a->itemsize, NULL);
}

/* out (C-contiguous) <- a with element i along axis repeated counts[i] times: one
 * launch of repeat.cu, which finds each output row's source by the running sums `ends`
 * (a host int64 numpy array, copied over). */
static int
repeat_each(cukit_Array *a, int axis, PyObject *ends, cukit_Array *out)
{
    cukit_state *st = a->st;
    cukit_Array *c = cukit_array_is_c_contig(a) ? (cukit_Array *)Py_NewRef(a) : cukit_array_copy(a);
    cukit_Array *e = c ? (cukit_Array *)cukit_array_from_host(st, ends, NULL,
                                                              (PyObject *)a->device) : NULL;
    int rc = -1;
    if (e == NULL)
        goto done;
    /* elements moved as the widest unit (up to 16 bytes) that divides the item size */
    long long unit = 16;
    while (a->itemsize % unit)
        unit /= 2;
    long long n = a->shape[axis], total = out->shape[axis], inner = a->itemsize / unit;
    for (int i = axis + 1; i < a->ndim; i++)
        inner *= a->shape[i];
    long long count = out->nbytes / unit;
    char name[32];
    snprintf(name, sizeof name, "repeat_%lld", unit);
    CUfunction f;
    if (cukit_builtin_kernel_file(a->device, &st->array->repeat_modules, NULL,
                                  "array/kernels/repeat.cu", name, &f) < 0)
        goto done;
    CUdeviceptr op = cukit_array_ptr(out), sp = cukit_array_ptr(c), ep = cukit_array_ptr(e);
    void *args[] = {&op, &sp, &ep, &n, &total, &inner, &count};
    long long blocks = (count + 255) / 256, most = (long long)a->device->sm_count * 32;
    rc = cukit_builtin_launch(a->device, f, (unsigned)(blocks < most ? blocks : most), 1, 256, 1,
                              NULL, args);
done:
    Py_XDECREF(c);
    Py_XDECREF(e);
    return rc;
}

/* a.repeat(repeats, axis=None): each element `repeats` times along axis (the
 * flattened array when None), into a new C-contiguous array. New ref. */
PyObject *
cukit_array_repeat(cukit_Array *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"repeats", "axis", NULL};
    PyObject *repeats, *axis_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:repeat", kwlist, &repeats, &axis_o))
        return NULL;
    cukit_state *st = self->st;
    if (cukit_array_check_live(self) < 0 || cukit_numpy(st) < 0)
        return NULL;
    cukit_Array *a = axis_o == Py_None ? (cukit_Array *)flattened(self, 0, 0)
                                       : (cukit_Array *)Py_NewRef(self);
    if (a == NULL)
        return NULL;
    int axis = 0, scalar = 0;
    PyObject *counts = NULL, *ends = NULL, *last = NULL, *low = NULL;
    cukit_Array *out = NULL;
    if (axis_o != Py_None && cukit_axis_arg(st, axis_o, a->ndim, &axis) < 0)
        goto done;
    if (a->ndim == 0) { /* numpy repeats a 0-d array as 1-D */
        Py_ssize_t one = 1, s = a->itemsize;
        Py_SETREF(a, cukit_array_view(a, a->offset, 1, &one, &s));
        if (a == NULL)
            goto done;
    }
    counts = repeat_counts(st, repeats, a->shape[axis], &scalar);
    if (counts == NULL)
        goto done;
    /* the smallest count (negative ones are numpy's ValueError) and the running sums */
    PyObject *flat = PyObject_CallMethod(counts, "ravel", NULL);
    low = flat && PyObject_Size(flat) > 0 ? PyObject_CallMethod(flat, "min", NULL)
                                          : PyLong_FromLong(0);
    ends = flat ? PyObject_CallMethod(flat, "cumsum", NULL) : NULL;
    Py_XDECREF(flat);
    long long lowest = low ? PyLong_AsLongLong(low) : -1;
    if (ends == NULL || PyErr_Occurred())
        goto done;
    if (lowest < 0) {
        PyErr_SetString(PyExc_ValueError, "repeats may not contain negative values.");
        goto done;
    }
    Py_ssize_t m = PyObject_Size(ends), total = 0;
    last = m > 0 ? PySequence_GetItem(ends, m - 1) : PyLong_FromLong(0);
    if (last == NULL || ((total = PyNumber_AsSsize_t(last, PyExc_OverflowError)) == -1 &&
                         PyErr_Occurred()))
        goto done;
    if (scalar)
        total = (Py_ssize_t)lowest * a->shape[axis];
    Py_ssize_t shape[CUKIT_MAXDIM];
    memcpy(shape, a->shape, sizeof(Py_ssize_t) * (size_t)a->ndim);
    shape[axis] = total;
    out = cukit_array_create(st, a->device, a->ndim, shape, a->dtype);
    if (out == NULL || out->size == 0)
        goto done;
    if (cukit_device_activate(a->device) < 0 ||
        (scalar ? repeat_all(a, axis, (Py_ssize_t)lowest, out) : repeat_each(a, axis, ends, out)) < 0)
        Py_CLEAR(out);
done:
    Py_XDECREF(counts);
    Py_XDECREF(ends);
    Py_XDECREF(last);
    Py_XDECREF(low);
    Py_DECREF(a);
    return (PyObject *)out;
}

/* ------------------------------------------------------------------ broadcast_to */

/* broadcast_to(array, shape): a read-only view with stride 0 along the dimensions
 * it adds or stretches from 1 (numpy's rule). New ref or NULL. */
static PyObject *
mod_broadcast_to(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"array", "shape", NULL};
    PyObject *obj, *shape_o;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:broadcast_to", kwlist, &obj, &shape_o))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    if (!Py_IS_TYPE(obj, st->ArrayType))
        return PyErr_Format(PyExc_TypeError, "broadcast_to() takes a cukit.Array, not %s (copy "
                            "host data with cukit.asarray first)", Py_TYPE(obj)->tp_name);
    cukit_Array *a = (cukit_Array *)obj;
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    int nd;
    if (cukit_array_check_live(a) < 0 || cukit_parse_shape(shape_o, shape, &nd, 0) < 0)
        return NULL;
    if (nd < a->ndim) {
        PyErr_Format(PyExc_ValueError, "input operand has more dimensions than allowed by the "
                     "axis remapping: cannot broadcast %d dimensions to %d", a->ndim, nd);
        return NULL;
    }
    for (int i = nd - 1, j = a->ndim - 1; i >= 0; i--, j--) {
        if (j < 0) {
            strides[i] = 0;
        }
        else if (a->shape[j] == shape[i]) {
            strides[i] = a->strides[j];
        }
        else if (a->shape[j] == 1) {
            strides[i] = 0;
        }
        else {
            PyObject *from = cukit_array_shape(a);
            if (from)
                PyErr_Format(PyExc_ValueError, "operands could not be broadcast together with "
                             "remapped shapes: cannot broadcast shape %R to %R", from, shape_o);
            Py_XDECREF(from);
            return NULL;
        }
    }
    cukit_Array *v = cukit_array_view(a, a->offset, nd, shape, strides);
    if (v)
        v->flags |= CUKIT_ARRAY_READONLY;
    return (PyObject *)v;
}

/* Array.mT: the last two dimensions swapped (a view), as numpy's. */
PyObject *
cukit_array_get_mT(cukit_Array *self, void *Py_UNUSED(closure))
{
    if (cukit_array_check_live(self) < 0)
        return NULL;
    if (self->ndim < 2) {
        PyErr_SetString(PyExc_ValueError, "matrix transpose with ndim < 2 is undefined");
        return NULL;
    }
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    memcpy(shape, self->shape, sizeof(Py_ssize_t) * (size_t)self->ndim);
    memcpy(strides, self->strides, sizeof(Py_ssize_t) * (size_t)self->ndim);
    int n = self->ndim;
    shape[n - 1] = self->shape[n - 2], strides[n - 1] = self->strides[n - 2];
    shape[n - 2] = self->shape[n - 1], strides[n - 2] = self->strides[n - 1];
    return (PyObject *)cukit_array_view(self, self->offset, n, shape, strides);
}

/* Array.flat: ravel() made read-only (a view where the layout allows one, else a copy),
 * so that a write, which numpy's flatiter would pass through, is an error here rather
 * than lost in a copy. */
PyObject *
cukit_array_get_flat(cukit_Array *self, void *Py_UNUSED(closure))
{
    PyObject *none = PyTuple_New(0);
    cukit_Array *r = none ? (cukit_Array *)cukit_array_ravel(self, none, NULL) : NULL;
    Py_XDECREF(none);
    if (r != NULL && r == self) { /* a 1-D contiguous array: its own ravel; a new view */
        Py_DECREF(r);
        r = cukit_array_view(self, self->offset, self->ndim, self->shape, self->strides);
    }
    if (r != NULL)
        r->flags |= CUKIT_ARRAY_READONLY;
    return (PyObject *)r;
}

/* ------------------------------------------------------------------ math methods
 *
 * a.round() and a.clip() are computed by compute/ (hooks.array_call), a.sort() and
 * a.argsort() by sort/ (hooks.array_sort), as the Array's other math methods are. */

static PyObject *
call_hook(PyObject *self, int which, PyObject *args, PyObject *kwargs)
{
    cukit_state *st = ((cukit_Array *)self)->st;
    if (st->hooks.array_call == NULL) {
        PyErr_SetString(PyExc_NotImplementedError, "array math is not available");
        return NULL;
    }
    return st->hooks.array_call(st, which, self, args, kwargs);
}

static PyObject *
array_round(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return call_hook(self, CUKIT_CALL_ROUND, args, kwargs);
}

static PyObject *
array_clip(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return call_hook(self, CUKIT_CALL_CLIP, args, kwargs);
}

static PyObject *
sort_hook(PyObject *self, int want_index, PyObject *args, PyObject *kwargs)
{
    cukit_state *st = ((cukit_Array *)self)->st;
    if (st->hooks.array_sort == NULL) {
        PyErr_SetString(PyExc_NotImplementedError, "sorting is not available");
        return NULL;
    }
    if (cukit_array_check_live((cukit_Array *)self) < 0)
        return NULL;
    return st->hooks.array_sort(st, want_index, self, args, kwargs);
}

static PyObject *
array_sort(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return sort_hook(self, 0, args, kwargs);
}

static PyObject *
array_argsort(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return sort_hook(self, 1, args, kwargs);
}

static PyObject *
array_searchsorted(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return sort_hook(self, CUKIT_SORT_SEARCHSORTED, args, kwargs);
}

static PyObject *
array_partition(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return sort_hook(self, CUKIT_SORT_PARTITION, args, kwargs);
}

static PyObject *
array_argpartition(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return sort_hook(self, CUKIT_SORT_ARGPARTITION, args, kwargs);
}

/* a.trace(offset=0, axis1=0, axis2=1, dtype=None, out=None): the diagonal view summed
 * along its last dimension by compute/'s reduction (a.diagonal(...).sum(-1, ...)). */
static PyObject *
array_trace(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"offset", "axis1", "axis2", "dtype", "out", NULL};
    PyObject *k = NULL, *o1 = NULL, *o2 = NULL, *dtype = Py_None, *out = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOOO:trace", kwlist, &k, &o1, &o2, &dtype,
                                     &out))
        return NULL;
    PyObject *dargs = NULL, *diag = NULL, *none = NULL, *skw = NULL, *r = NULL;
    PyObject *zero = PyLong_FromLong(0), *one = PyLong_FromLong(1);
    if (zero == NULL || one == NULL)
        goto done;
    dargs = PyTuple_Pack(3, k ? k : zero, o1 ? o1 : zero, o2 ? o2 : one);
    diag = dargs ? cukit_array_diagonal((cukit_Array *)self, dargs, NULL) : NULL;
    none = diag ? PyTuple_New(0) : NULL;
    skw = none ? Py_BuildValue("{sisOsO}", "axis", -1, "dtype", dtype, "out", out) : NULL;
    if (skw)
        r = call_hook(diag, CUKIT_CALL_REDUCE + 0 /* sum */, none, skw);
done:
    Py_XDECREF(zero);
    Py_XDECREF(one);
    Py_XDECREF(dargs);
    Py_XDECREF(diag);
    Py_XDECREF(none);
    Py_XDECREF(skw);
    return r;
}

/* ------------------------------------------------------------------ setup */

#define SM(name, fn, doc) {#name, (PyCFunction)(void (*)(void))fn, METH_VARARGS | METH_KEYWORDS, doc}
/* Methods of cukit.Array: array.c's type spec takes them after its own table. */
static PyMethodDef shape_methods[] = {
    SM(ravel, cukit_array_ravel, "ravel(order='C') -> Array: the elements in one dimension; "
       "a view when the layout allows one (as reshape(-1)), else a copy."),
    SM(flatten, cukit_array_flatten, "flatten(order='C') -> Array: a 1-D copy."),
    SM(view, cukit_array_view_dtype, "view(dtype=None) -> Array: a view of the same bytes as "
       "dtype; another item size rescales the last dimension, which must be contiguous."),
    SM(squeeze, cukit_array_squeeze, "squeeze(axis=None) -> Array: a view without the "
       "length-1 dimensions (those of axis)."),
    SM(swapaxes, cukit_array_swapaxes, "swapaxes(axis1, axis2) -> Array: a view with two "
       "dimensions exchanged."),
    SM(diagonal, cukit_array_diagonal, "diagonal(offset=0, axis1=0, axis2=1) -> Array: a view "
       "of the diagonal, as the last dimension (writable, unlike numpy's)."),
    SM(repeat, cukit_array_repeat, "repeat(repeats, axis=None) -> Array: each element repeated "
       "(a copy; repeats a scalar or one count per element along axis)."),
    SM(round, array_round, "round(decimals=0, out=None) -> Array: cukit.round(a, ...)."),
    SM(clip, array_clip, "clip(min=None, max=None, out=None, *, stream=None) -> Array: "
       "cukit.clip(a, ...)."),
    SM(sort, array_sort, "sort(axis=-1, kind=None, *, stream=None): sort in place along axis "
       "(stable, NaNs last)."),
    SM(argsort, array_argsort, "argsort(axis=-1, kind=None, *, stream=None) -> Array: "
       "cukit.argsort(a, ...)."),
    SM(searchsorted, array_searchsorted, "searchsorted(v, side='left', sorter=None) -> Array "
       "of int64: cukit.searchsorted(a, v, side) (of a[sorter] with a sorter)."),
    SM(partition, array_partition, "partition(kth, axis=-1, kind='introselect', order=None): "
       "partition in place along axis (cukit sorts the whole axis, which satisfies "
       "numpy's contract)."),
    SM(argpartition, array_argpartition, "argpartition(kth, axis=-1, kind='introselect', "
       "order=None) -> Array: the indices that partition a (those of a stable sort)."),
    SM(trace, array_trace, "trace(offset=0, axis1=0, axis2=1, dtype=None, out=None) -> Array: "
       "the sum along a diagonal."),
    {NULL},
};
#undef SM

static PyMethodDef shape_functions[] = {
    {"broadcast_to", (PyCFunction)(void (*)(void))mod_broadcast_to, METH_VARARGS | METH_KEYWORDS,
     "broadcast_to(array, shape) -> Array: a read-only view of array with numpy's "
     "broadcasting to shape (stride 0 along the dimensions it adds or stretches)."},
    {NULL},
};

PyMethodDef *
cukit_array_methods_with_shape(const PyMethodDef *own)
{
    static PyMethodDef *methods; /* made once; every Array type made points at it */
    if (methods != NULL)
        return methods;
    size_t a = 0, b = 0, c = 0;
    while (own[a].ml_name)
        a++;
    while (shape_methods[b].ml_name)
        b++;
    while (cukit_array_exchange_methods[c].ml_name)
        c++;
    methods = PyMem_RawCalloc(a + b + c + 1, sizeof *methods);
    if (methods == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(methods, own, a * sizeof *methods);
    memcpy(methods + a, shape_methods, b * sizeof *methods);
    memcpy(methods + a + b, cukit_array_exchange_methods, c * sizeof *methods);
    return methods;
}

int
cukit_array_shape_setup(PyObject *module, cukit_state *st)
{
    return PyModule_AddFunctions(module, shape_functions);
}
