/* functions.c - take, put and compress: numpy's indexing functions, as module functions and Array methods, on compute/index/'s gather and scatter */
#include "compute/index/index.h"

#include <string.h>

/* The flat view of a C-contiguous array (a new ref to a 1-D view), or a C-contiguous
 * copy's when `copy_ok` (else ValueError). NULL with an exception. */
static PyObject *
flat_of(cukit_state *st, cukit_Array *a, int copy_ok, const char *who)
{
    cukit_Array *c;
    if (a->flags & CUKIT_ARRAY_C_CONTIG)
        c = (cukit_Array *)Py_NewRef((PyObject *)a);
    else if (copy_ok)
        c = cukit_array_copy(a);
    else {
        PyErr_Format(PyExc_ValueError, "%s writes into a C-contiguous array only: this one is a "
                     "strided view; index it instead (a[idx] = v)", who);
        return NULL;
    }
    if (c == NULL)
        return NULL;
    Py_ssize_t n = c->size, s = c->itemsize;
    PyObject *v = (PyObject *)cukit_array_view_as(c, c->dtype, c->typecode, c->itemsize, c->offset,
                                                  1, &n, &s);
    Py_DECREF(c);
    return v;
}

/* The index tuple (:, :, ..., idx) that puts idx on `axis` of an ndim-dimensional
 * array (axis may be negative). New ref or NULL (numpy's AxisError as IndexError's
 * cousin: a ValueError subclass in numpy; here numpy's own class). */
static PyObject *
axis_key(cukit_state *st, int ndim, int axis, PyObject *idx)
{
    if (axis < -ndim || axis >= ndim) {
        PyObject *exc = PyObject_GetAttrString(st->numpy, "exceptions");
        PyObject *cls = exc ? PyObject_GetAttrString(exc, "AxisError") : NULL;
        Py_XDECREF(exc);
        if (cls) {
            PyErr_Format(cls, "axis %d is out of bounds for array of dimension %d", axis, ndim);
            Py_DECREF(cls);
        }
        return NULL;
    }
    if (axis < 0)
        axis += ndim;
    PyObject *key = PyTuple_New(axis + 1);
    for (int i = 0; key && i < axis; i++)
        PyTuple_SET_ITEM(key, i, PySlice_New(NULL, NULL, NULL));
    if (key)
        PyTuple_SET_ITEM(key, axis, Py_NewRef(idx));
    return key;
}

/* indices under mode "wrap" (i mod n) or "clip" (into [0, n - 1]); "raise" as given.
 * New ref or NULL. */
static PyObject *
moded(cukit_state *st, PyObject *indices, const char *mode, Py_ssize_t n, cukit_Device *dev)
{
    if (strcmp(mode, "raise") == 0)
        return Py_NewRef(indices);
    if (strcmp(mode, "wrap") != 0 && strcmp(mode, "clip") != 0) {
        PyErr_Format(PyExc_ValueError, "mode must be 'raise', 'wrap' or 'clip', not '%s'", mode);
        return NULL;
    }
    PyObject *idx = indices;
    if (!Py_IS_TYPE(indices, st->ArrayType)) {
        PyObject *host = PyObject_CallOneArg(st->np_asarray, indices);
        PyObject *i64 = host ? ck_dtype_obj(st, CUKIT_TC_I64) : NULL;
        PyObject *h64 = i64 ? PyObject_CallMethod(host, "astype", "O", i64) : NULL;
        PyObject *devobj = h64 ? PyLong_FromLong(dev->ordinal) : NULL;
        idx = devobj ? cukit_array_from_host(st, h64, NULL, devobj) : NULL;
        Py_XDECREF(host);
        Py_XDECREF(h64);
        Py_XDECREF(devobj);
        if (idx == NULL)
            return NULL;
    }
    else
        Py_INCREF(idx);
    if (n == 0) {
        Py_DECREF(idx);
        PyErr_SetString(PyExc_IndexError, "cannot do a non-empty take from an empty axes.");
        return NULL;
    }
    PyObject *out;
    if (mode[0] == 'w') {
        PyObject *len = PyLong_FromSsize_t(n);
        out = len ? ck_array_math(st, CUKIT_OP_MOD, idx, len, 0) : NULL;
        Py_XDECREF(len);
    }
    else {
        PyObject *in[3] = {idx, PyLong_FromLong(0), PyLong_FromSsize_t(n - 1)};
        out = in[1] && in[2] ? ck_ternary(st, 1, in, NULL, Py_None) : NULL;
        Py_XDECREF(in[1]);
        Py_XDECREF(in[2]);
    }
    Py_DECREF(idx);
    return out;
}

static cukit_Array *
array_arg(cukit_state *st, PyObject *obj, const char *who)
{
    if (Py_IS_TYPE(obj, st->ArrayType))
        return (cukit_Array *)obj;
    PyErr_Format(PyExc_TypeError, "%s takes a cukit array, not %s: move host data to the "
                 "device with cukit.asarray()", who, Py_TYPE(obj)->tp_name);
    return NULL;
}

PyObject *
ck_take(cukit_state *st, PyObject *a_obj, PyObject *indices, PyObject *axis_obj, PyObject *out,
        const char *mode)
{
    cukit_Array *a = array_arg(st, a_obj, "take");
    if (a == NULL || cukit_numpy(st) < 0)
        return NULL;
    PyObject *src = NULL, *key = NULL, *idx = NULL, *r = NULL;
    int axis = 0;
    if (axis_obj == NULL || axis_obj == Py_None) {
        src = flat_of(st, a, 1, "take");
    }
    else {
        long ax = PyLong_AsLong(axis_obj);
        if (ax == -1 && PyErr_Occurred())
            return NULL;
        axis = ax < -CUKIT_MAXDIM - 1 ? -CUKIT_MAXDIM - 1 : ax > CUKIT_MAXDIM ? CUKIT_MAXDIM : (int)ax;
        src = Py_NewRef(a_obj);
    }
    if (src == NULL)
        return NULL;
    cukit_Array *s = (cukit_Array *)src;
    key = s->ndim == 0 ? NULL : axis_key(st, s->ndim, axis, indices);
    if (s->ndim == 0)
        PyErr_SetString(PyExc_IndexError, "cannot take from a 0-d array");
    if (key == NULL)
        goto done;
    int ax = axis < 0 ? axis + s->ndim : axis;
    idx = moded(st, indices, mode, s->shape[ax], s->device);
    if (idx == NULL)
        goto done;
    PyTuple_SetItem(key, ax, Py_NewRef(idx));
    r = ck_index_get(st, src, key);
    if (r && out && out != Py_None) {
        cukit_Array *o = array_arg(st, out, "take(out=)");
        if (o == NULL || ck_copyto(st, o, (cukit_Array *)r, Py_None) < 0)
            Py_CLEAR(r);
        else
            Py_SETREF(r, Py_NewRef(out));
    }
done:
    Py_XDECREF(src);
    Py_XDECREF(key);
    Py_XDECREF(idx);
    return r;
}

int
ck_put_values(cukit_state *st, PyObject *a_obj, PyObject *indices, PyObject *values, const char *mode)
{
    cukit_Array *a = array_arg(st, a_obj, "put");
    if (a == NULL || cukit_numpy(st) < 0)
        return -1;
    PyObject *flat = flat_of(st, a, 0, "put");
    if (flat == NULL)
        return -1;
    int rc = -1;
    PyObject *idx = moded(st, indices, mode, a->size, a->device), *vals = NULL;
    if (idx == NULL)
        goto done;
    /* numpy repeats the values over the indices: values.ravel()[arange(n) % len] */
    Py_ssize_t n = PyObject_Size(idx);
    if (Py_IS_TYPE(idx, st->ArrayType))
        n = ((cukit_Array *)idx)->size;
    if (n < 0)
        goto done;
    if (Py_IS_TYPE(values, st->ArrayType)) {
        cukit_Array *v = (cukit_Array *)values;
        PyObject *vflat = flat_of(st, v, 1, "put");
        if (vflat == NULL)
            goto done;
        if (v->size == n || v->size == 1 || n == 0)
            vals = vflat;
        else if (v->size == 0) {
            Py_DECREF(vflat);
            rc = 0;
            goto done;
        }
        else {
            PyObject *np_ar = PyObject_CallMethod(st->numpy, "arange", "n", n);
            PyObject *len = PyLong_FromSsize_t(v->size);
            PyObject *pos = np_ar && len ? PyNumber_Remainder(np_ar, len) : NULL;
            vals = pos ? ck_index_get(st, vflat, pos) : NULL;
            Py_XDECREF(np_ar);
            Py_XDECREF(len);
            Py_XDECREF(pos);
            Py_DECREF(vflat);
        }
    }
    else {
        PyObject *host = PyObject_CallFunctionObjArgs(st->np_asarray, values, a->dtype, NULL);
        PyObject *rav = host ? PyObject_CallMethod(host, "ravel", NULL) : NULL;
        Py_ssize_t vn = rav ? PyObject_Size(rav) : -1;
        if (vn == 0) {
            Py_XDECREF(host);
            Py_XDECREF(rav);
            rc = 0;
            goto done;
        }
        vals = vn > 0 && vn != n ? PyObject_CallMethod(st->numpy, "resize", "On", rav, n)
                                 : Py_XNewRef(rav);
        Py_XDECREF(host);
        Py_XDECREF(rav);
    }
    if (vals == NULL)
        goto done;
    rc = ck_index_set(st, flat, idx, vals);
done:
    Py_XDECREF(idx);
    Py_XDECREF(vals);
    Py_DECREF(flat);
    return rc;
}

PyObject *
ck_compress(cukit_state *st, PyObject *condition, PyObject *a_obj, PyObject *axis_obj)
{
    cukit_Array *a = array_arg(st, a_obj, "compress");
    if (a == NULL || cukit_numpy(st) < 0)
        return NULL;
    /* numpy takes a condition shorter than the axis: the rest is False */
    PyObject *none = PyTuple_New(0);
    PyObject *cond = none == NULL ? NULL
                     : Py_IS_TYPE(condition, st->ArrayType)
                         ? cukit_array_get((cukit_Array *)condition, none, NULL)
                         : PyObject_CallOneArg(st->np_asarray, condition);
    Py_XDECREF(none);
    PyObject *nz = NULL, *first = NULL, *r = NULL;
    if (cond == NULL)
        return NULL;
    PyObject *nd = PyObject_CallMethod(st->numpy, "ndim", "O", cond); /* a host array */
    long ndim = nd ? PyLong_AsLong(nd) : -1;
    Py_XDECREF(nd);
    if (ndim != 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "condition must be a 1-d array");
        goto done;
    }
    nz = PyObject_CallMethod(st->numpy, "nonzero", "O", cond);
    first = nz ? Py_XNewRef(PyTuple_GetItem(nz, 0)) : NULL;
    if (first)
        r = ck_take(st, a_obj, first, axis_obj, NULL, "raise");
done:
    Py_DECREF(cond);
    Py_XDECREF(nz);
    Py_XDECREF(first);
    return r;
}

static PyObject *
mod_take(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "indices", "axis", "out", "mode", NULL};
    PyObject *a, *indices, *axis = Py_None, *out = Py_None;
    const char *mode = "raise";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OOs:take", kwlist, &a, &indices, &axis,
                                     &out, &mode))
        return NULL;
    return ck_take(PyModule_GetState(m), a, indices, axis, out, mode);
}

static PyObject *
mod_put(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "ind", "v", "mode", NULL};
    PyObject *a, *ind, *v;
    const char *mode = "raise";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|s:put", kwlist, &a, &ind, &v, &mode))
        return NULL;
    if (ck_put_values(PyModule_GetState(m), a, ind, v, mode) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
mod_compress(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"condition", "a", "axis", NULL};
    PyObject *cond, *a, *axis = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:compress", kwlist, &cond, &a, &axis))
        return NULL;
    return ck_compress(PyModule_GetState(m), cond, a, axis);
}

static PyObject *
mod_along_axis(PyObject *m, PyObject *args)
{
    PyObject *arr, *indices, *values = NULL;
    int axis;
    if (!PyArg_ParseTuple(args, "OOi|O:_along_axis", &arr, &indices, &axis, &values))
        return NULL;
    return ck_along_axis(PyModule_GetState(m), arr, indices, axis, values);
}

static PyMethodDef functions[] = {
    {"_along_axis", mod_along_axis, METH_VARARGS,
     "_along_axis(arr, indices, axis, values=None): take_along_axis (a new Array) or, with "
     "values, put_along_axis (in place); axis already normalized."},
    {"take", (PyCFunction)(void (*)(void))mod_take, METH_VARARGS | METH_KEYWORDS,
     "take(a, indices, axis=None, out=None, mode='raise') -> Array: elements of a at "
     "indices along axis (of a.ravel() when axis is None), as numpy.take; mode 'wrap' or "
     "'clip' maps indices out of range, 'raise' raises IndexError."},
    {"put", (PyCFunction)(void (*)(void))mod_put, METH_VARARGS | METH_KEYWORDS,
     "put(a, ind, v, mode='raise'): a.flat[ind] = v, the values repeated over the indices, "
     "as numpy.put (a C-contiguous array)."},
    {"compress", (PyCFunction)(void (*)(void))mod_compress, METH_VARARGS | METH_KEYWORDS,
     "compress(condition, a, axis=None) -> Array: the slices of a along axis where the 1-D "
     "condition is true (of a.ravel() when axis is None)."},
    {NULL},
};

int
ck_index_functions_setup(PyObject *module, cukit_state *st)
{
    return PyModule_AddFunctions(module, functions);
}
