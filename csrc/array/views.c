/* views.c - Array indexing, slicing, reshape and transpose: views that share the memory */
#include "array/impl.h"

#include <string.h>

/* ------------------------------------------------------------------ views */

int
cukit_index_item_is_advanced(cukit_state *st, PyObject *it)
{
    if (PyBool_Check(it) || PyList_Check(it))
        return 1;
    if (Py_IS_TYPE(it, st->ArrayType))
        return ((cukit_Array *)it)->ndim > 0 || ((cukit_Array *)it)->typecode == CUKIT_TC_BOOL;
    if (PyLong_CheckExact(it) || PySlice_Check(it) || it == Py_None || it == Py_Ellipsis)
        return 0;
    if (cukit_numpy(st) < 0)
        return -1;
    if (PyObject_TypeCheck(it, (PyTypeObject *)st->np_bool))
        return 1;
    if (!PyObject_TypeCheck(it, (PyTypeObject *)st->np_ndarray))
        return 0;
    /* numpy takes a 0-d integer array as an integer (its __index__): basic */
    PyObject *nd = PyObject_GetAttrString(it, "ndim");
    if (nd == NULL)
        return -1;
    int zero_d = PyLong_Check(nd) && PyLong_AsLong(nd) == 0;
    Py_DECREF(nd);
    if (!zero_d)
        return 1;
    PyObject *ix = PyNumber_Index(it);
    if (ix == NULL) {
        PyErr_Clear(); /* a 0-d bool or float array: the advanced path says what it is */
        return 1;
    }
    Py_DECREF(ix);
    return 0;
}

/* 1 when key holds an advanced item (see cukit_index_item_is_advanced), 0, or -1. */
static int
key_is_advanced(cukit_state *st, PyObject *key)
{
    if (!PyTuple_Check(key))
        return cukit_index_item_is_advanced(st, key);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key); i++) {
        int r = cukit_index_item_is_advanced(st, PyTuple_GET_ITEM(key, i));
        if (r != 0)
            return r;
    }
    return 0;
}

/* self[key]: basic indexing (ints, slices, ..., None) makes a view; a key with integer
 * or boolean arrays goes to compute/'s advanced indexing. New ref or NULL. */
PyObject *
cukit_array_subscript(cukit_Array *self, PyObject *key)
{
    if (cukit_array_check_live(self) < 0)
        return NULL;
    int adv = key_is_advanced(self->st, key);
    if (adv < 0)
        return NULL;
    if (adv) {
        if (self->st->hooks.array_index == NULL) {
            PyErr_SetString(PyExc_IndexError, "advanced indexing is not available");
            return NULL;
        }
        return self->st->hooks.array_index(self->st, (PyObject *)self, key);
    }
    PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int consuming = 0, ellipses = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PyTuple_GET_ITEM(items, i);
        if (it == Py_Ellipsis)
            ellipses++;
        else if (it != Py_None)
            consuming++;
    }
    PyObject *result = NULL;
    if (ellipses > 1) {
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        goto done;
    }
    if (consuming > self->ndim) {
        PyErr_Format(PyExc_IndexError,
                     "too many indices for array: array is %d-dimensional, but %d were indexed",
                     self->ndim, consuming);
        goto done;
    }
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM], offset = self->offset;
    int d = 0, out = 0; /* next dimension of self, of the view */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PyTuple_GET_ITEM(items, i);
        int adds = it == Py_Ellipsis ? self->ndim - consuming : 1;
        if (out + adds > CUKIT_MAXDIM) {
            PyErr_Format(PyExc_IndexError, "the view would have more than %d dimensions",
                         CUKIT_MAXDIM);
            goto done;
        }
        if (it == Py_Ellipsis) {
            for (int k = 0; k < adds; k++, d++, out++) {
                shape[out] = self->shape[d];
                strides[out] = self->strides[d];
            }
        }
        else if (it == Py_None) {
            shape[out] = 1;
            strides[out++] = 0;
        }
        else if (PySlice_Check(it)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(it, &start, &stop, &step) < 0)
                goto done;
            Py_ssize_t len = PySlice_AdjustIndices(self->shape[d], &start, &stop, step);
            if (len > 0)
                offset += start * self->strides[d];
            shape[out] = len;
            strides[out++] = self->strides[d] * step;
            d++;
        }
        else if (PyIndex_Check(it) && !PyBool_Check(it) &&
                 !(Py_IS_TYPE(it, self->st->ArrayType) && ((cukit_Array *)it)->ndim != 0)) {
            Py_ssize_t k = PyNumber_AsSsize_t(it, PyExc_IndexError);
            if (k == -1 && PyErr_Occurred())
                goto done;
            if (k < -self->shape[d] || k >= self->shape[d]) {
                PyErr_Format(PyExc_IndexError,
                             "index %zd is out of bounds for axis %d with size %zd", k, d,
                             self->shape[d]);
                goto done;
            }
            if (k < 0)
                k += self->shape[d];
            offset += k * self->strides[d];
            d++;
        }
        else {
            PyErr_Format(PyExc_IndexError,
                         "only integers, slices (`:`), ellipsis (`...`), None and integer or "
                         "boolean arrays are valid indices; got %s",
                         Py_TYPE(it)->tp_name);
            goto done;
        }
    }
    if (out + (self->ndim - d) > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_IndexError, "the view would have more than %d dimensions", CUKIT_MAXDIM);
        goto done;
    }
    for (; d < self->ndim; d++, out++) { /* dimensions not indexed are taken whole */
        shape[out] = self->shape[d];
        strides[out] = self->strides[d];
    }
    result = (PyObject *)cukit_array_view(self, offset, out, shape, strides);
done:
    Py_DECREF(items);
    return result;
}

static int
is_scalar(cukit_state *st, PyObject *v)
{
    return PyLong_Check(v) || PyFloat_Check(v) || PyComplex_Check(v) ||
           PyObject_TypeCheck(v, (PyTypeObject *)st->np_generic);
}

/* self[key] = value: a device array is copied, a scalar filled in, anything else
 * taken as host data (broadcast by numpy to the view's shape) and copied in. */
int
cukit_array_ass_subscript(cukit_Array *self, PyObject *key, PyObject *value)
{
    cukit_state *st = self->st;
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "cannot delete elements of a cukit array");
        return -1;
    }
    if (cukit_numpy(st) < 0 || cukit_array_check_live(self) < 0)
        return -1;
    int adv = key_is_advanced(st, key);
    if (adv < 0)
        return -1;
    if (adv) {
        if (st->hooks.array_index_set == NULL) {
            PyErr_SetString(PyExc_IndexError, "advanced indexing is not available");
            return -1;
        }
        return st->hooks.array_index_set(st, (PyObject *)self, key, value);
    }
    cukit_Array *view = (cukit_Array *)cukit_array_subscript(self, key);
    if (view == NULL)
        return -1;
    int rc = -1;
    if (Py_IS_TYPE(value, st->ArrayType)) {
        rc = cukit_array_copy_into(view, (cukit_Array *)value, Py_None, "a[...] = b");
    }
    else if (is_scalar(st, value)) {
        PyObject *raw = cukit_array_check_writable(view, "a[...] = x") == 0
                            ? cukit_array_element_bytes(view, value, "a[...] = x")
                            : NULL;
        CUstream h; /* the current stream (`with stream:`), else the legacy one */
        if (raw) {
            rc = cukit_stream_handle(st, Py_None, view->device, &h) < 0 ||
                         cukit_device_activate(view->device) < 0
                     ? -1
                     : cukit_strided_fill(view->device, cukit_array_ptr(view), view->strides,
                                          view->ndim, view->shape, PyBytes_AS_STRING(raw),
                                          view->itemsize, h);
            Py_DECREF(raw);
        }
    }
    else {
        PyObject *host = cukit_as_host_array(st, value, view->dtype);
        PyObject *shape = host ? cukit_array_shape(view) : NULL;
        PyObject *wide = shape ? PyObject_CallMethod(st->numpy, "broadcast_to", "OO", host, shape)
                               : NULL;
        if (wide)
            rc = cukit_array_set_from_host(view, wide, Py_None, "a[...] = x");
        Py_XDECREF(host);
        Py_XDECREF(shape);
        Py_XDECREF(wide);
    }
    Py_DECREF(view);
    return rc;
}

/* Strides for viewing (ndim, shape, strides) as (nn, newshape) without moving
 * data, or 0 when the layout does not allow it. Dimensions are matched in groups
 * whose products agree; each old group must be one evenly strided run. */
static int
reshape_strides(const cukit_Array *a, int nn, const Py_ssize_t *newshape, Py_ssize_t *out)
{
    Py_ssize_t od[CUKIT_MAXDIM], os[CUKIT_MAXDIM];
    int on = 0;
    for (int i = 0; i < a->ndim; i++) {
        if (a->shape[i] != 1) {
            od[on] = a->shape[i];
            os[on++] = a->strides[i];
        }
    }
    int oi = 0, ni = 0;
    while (oi < on && ni < nn) {
        int oj = oi + 1, nj = ni + 1;
        Py_ssize_t op = od[oi], np_ = newshape[ni];
        while (op != np_) {
            if (np_ < op) {
                if (nj >= nn)
                    return 0;
                np_ *= newshape[nj++];
            }
            else {
                if (oj >= on)
                    return 0;
                op *= od[oj++];
            }
        }
        for (int k = oi; k < oj - 1; k++)
            if (os[k] != od[k + 1] * os[k + 1])
                return 0;
        out[nj - 1] = os[oj - 1];
        for (int k = nj - 1; k > ni; k--)
            out[k - 1] = out[k] * newshape[k];
        oi = oj;
        ni = nj;
    }
    for (; ni < nn; ni++) /* trailing length-1 dimensions */
        out[ni] = a->itemsize;
    return 1;
}

PyObject *
cukit_array_reshape(cukit_Array *self, PyObject *args)
{
    if (cukit_array_check_live(self) < 0)
        return NULL;
    PyObject *spec = PyTuple_GET_SIZE(args) == 1 ? PyTuple_GET_ITEM(args, 0) : args;
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    int nn;
    if (cukit_parse_shape(spec, shape, &nn, 1) < 0)
        return NULL;
    Py_ssize_t known = 1;
    int unknown = -1;
    for (int i = 0; i < nn; i++) {
        if (shape[i] == -1)
            unknown = i;
        else
            known *= shape[i];
    }
    if (unknown >= 0 && known != 0 && self->size % known == 0)
        shape[unknown] = self->size / known;
    Py_ssize_t total = 1;
    for (int i = 0; i < nn; i++)
        total *= shape[i] < 0 ? 0 : shape[i];
    if ((unknown >= 0 && (known == 0 || self->size % known != 0)) || total != self->size) {
        PyObject *old = cukit_array_shape(self);
        if (old)
            PyErr_Format(PyExc_ValueError, "cannot reshape an array of shape %R (size %zd) into "
                         "shape %R", old, self->size, spec);
        Py_XDECREF(old);
        return NULL;
    }
    if (cukit_array_is_c_contig(self)) {
        cukit_c_strides(nn, shape, self->itemsize, strides);
    }
    else if (!reshape_strides(self, nn, shape, strides)) {
        PyObject *old = cukit_array_shape(self), *st = cukit_array_strides(self);
        if (old && st)
            PyErr_Format(PyExc_ValueError,
                         "cannot reshape this view (shape %R, strides %R) into shape %R without "
                         "copying; reshape a copy: cukit.ascontiguousarray(a).reshape(...)",
                         old, st, spec);
        Py_XDECREF(old);
        Py_XDECREF(st);
        return NULL;
    }
    return (PyObject *)cukit_array_view(self, self->offset, nn, shape, strides);
}

static PyObject *
transpose_axes(cukit_Array *self, PyObject *axes_o)
{
    if (cukit_array_check_live(self) < 0)
        return NULL;
    int axes[CUKIT_MAXDIM], seen[CUKIT_MAXDIM] = {0};
    if (axes_o == NULL || axes_o == Py_None) {
        for (int i = 0; i < self->ndim; i++)
            axes[i] = self->ndim - 1 - i;
    }
    else {
        PyObject *seq = PySequence_Fast(axes_o, "transpose() takes axes as ints");
        if (seq == NULL)
            return NULL;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        if (n != self->ndim) {
            PyErr_Format(PyExc_ValueError, "transpose(): %zd axes given for a %d-dimensional array",
                         n, self->ndim);
            Py_DECREF(seq);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t ax = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(seq, i), PyExc_ValueError);
            if (ax == -1 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return NULL;
            }
            if (ax < 0)
                ax += self->ndim;
            if (ax < 0 || ax >= self->ndim || seen[ax]) {
                PyErr_Format(PyExc_ValueError,
                             "transpose(): the axes must be a permutation of 0 to %d, got %R",
                             self->ndim - 1, axes_o);
                Py_DECREF(seq);
                return NULL;
            }
            seen[ax] = 1;
            axes[i] = (int)ax;
        }
        Py_DECREF(seq);
    }
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    for (int i = 0; i < self->ndim; i++) {
        shape[i] = self->shape[axes[i]];
        strides[i] = self->strides[axes[i]];
    }
    return (PyObject *)cukit_array_view(self, self->offset, self->ndim, shape, strides);
}

PyObject *
cukit_array_transpose(cukit_Array *self, PyObject *args)
{
    PyObject *axes = NULL;
    if (PyTuple_GET_SIZE(args) == 1 && PyTuple_GET_ITEM(args, 0) != Py_None &&
        !PyIndex_Check(PyTuple_GET_ITEM(args, 0)))
        axes = PyTuple_GET_ITEM(args, 0);
    else if (PyTuple_GET_SIZE(args) > 0 && PyTuple_GET_ITEM(args, 0) != Py_None)
        axes = args;
    return transpose_axes(self, axes);
}

PyObject *
cukit_array_get_T(cukit_Array *self, void *c)
{
    return transpose_axes(self, NULL);
}

