/* protocols.c - the Array in numpy's and Python's protocols: __array__ (refused), __array_ufunc__ and __array_function__ (NEP 13, 18), iteration, pickling, flags */
#include "array/impl.h"

#include <string.h>

/* ------------------------------------------------------------------ flags */

/* Array.flags: numpy's names as keys (a["C_CONTIGUOUS"]) and as attributes
 * (a.flags.c_contiguous). A dict subclass: its items are the flags. */
static PyObject *
flags_getattro(PyObject *self, PyObject *name)
{
    PyObject *out = PyObject_GenericGetAttr(self, name);
    if (out || !PyErr_ExceptionMatches(PyExc_AttributeError) || !PyUnicode_Check(name))
        return out;
    PyErr_Clear();
    PyObject *upper = PyObject_CallMethod(name, "upper", NULL);
    out = upper ? PyDict_GetItemWithError(self, upper) : NULL;
    Py_XDECREF(upper);
    if (out)
        return Py_NewRef(out);
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_AttributeError, "'flags' object has no attribute '%U'", name);
    return NULL;
}

static PyType_Slot flags_slots[] = {
    {Py_tp_doc, "The flags of a cukit.Array: C_CONTIGUOUS, F_CONTIGUOUS, WRITEABLE, read as "
                "keys or as attributes (flags.c_contiguous), as numpy's flags are."},
    {Py_tp_getattro, flags_getattro},
    {0, NULL},
};

static PyType_Spec flags_spec = {
    .name = "cukit.Flags",
    .basicsize = 0,
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = flags_slots,
};

PyObject *
cukit_array_flags(cukit_Array *self)
{
    PyTypeObject *t = self->st->array->FlagsType;
    PyObject *none = PyTuple_New(0);
    PyObject *d = none ? t->tp_new(t, none, NULL) : NULL; /* dict's own new */
    Py_XDECREF(none);
    if (d == NULL)
        return NULL;
    int c = cukit_array_is_c_contig(self);
    if (PyDict_SetItemString(d, "C_CONTIGUOUS", c ? Py_True : Py_False) < 0 ||
        PyDict_SetItemString(d, "F_CONTIGUOUS",
                             (self->flags & CUKIT_ARRAY_F_CONTIG) ? Py_True : Py_False) < 0 ||
        PyDict_SetItemString(d, "WRITEABLE",
                             (self->flags & CUKIT_ARRAY_READONLY) ? Py_False : Py_True) < 0)
        Py_CLEAR(d);
    return d;
}

/* ------------------------------------------------------------------ numpy */

PyObject *
cukit_array_dunder_array(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyErr_SetString(PyExc_TypeError,
                    "a cukit.Array is in device memory: numpy cannot read it in place. Copy it to "
                    "the host with a.get() (or cukit.asnumpy(a))");
    return NULL;
}

/* The cukit function that stands for numpy's `func`, or NULL with TypeError naming it.
 * Borrowed. */
static PyObject *
implementation(cukit_state *st, PyObject *func, const char *kind)
{
    PyObject *table = st->array->numpy_table;
    PyObject *impl = table ? PyDict_GetItemWithError(table, func) : NULL;
    if (impl || PyErr_Occurred())
        return impl;
    PyObject *name = PyObject_GetAttrString(func, "__name__");
    if (name == NULL)
        PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "cukit has no implementation of numpy's %s %R for cukit arrays: copy them to "
                 "the host with a.get() to use numpy's, or write it with cukit's functions",
                 kind, name ? name : func);
    Py_XDECREF(name);
    return NULL;
}

/* __array_ufunc__(ufunc, method, *inputs, **kwargs) */
PyObject *
cukit_array_ufunc(PyObject *self, PyObject *args, PyObject *kwargs)
{
    cukit_state *st = ((cukit_Array *)self)->st;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n < 2) {
        PyErr_SetString(PyExc_TypeError, "__array_ufunc__(ufunc, method, *inputs, **kwargs)");
        return NULL;
    }
    PyObject *ufunc = PyTuple_GET_ITEM(args, 0), *method = PyTuple_GET_ITEM(args, 1);
    PyObject *impl = implementation(st, ufunc, "ufunc");
    if (impl == NULL)
        return NULL;
    PyObject *call = NULL, *inputs = NULL, *kw = NULL, *out = NULL;
    if (PyUnicode_Check(method) && PyUnicode_CompareWithASCIIString(method, "__call__") == 0)
        call = Py_NewRef(impl);
    else {
        call = PyObject_GetAttr(impl, method); /* reduce, accumulate, outer, at */
        if (call == NULL) {
            PyErr_Format(PyExc_TypeError, "cukit's %R has no method %R: copy the arrays to the "
                         "host with a.get() to use numpy's", impl, method);
            return NULL;
        }
    }
    inputs = PyTuple_GetSlice(args, 2, n);
    kw = kwargs ? PyDict_Copy(kwargs) : PyDict_New();
    if (inputs == NULL || kw == NULL)
        goto done;
    /* numpy passes out= as a tuple; cukit's ufuncs take one array */
    PyObject *o = PyDict_GetItemString(kw, "out");
    if (o && PyTuple_Check(o)) {
        if (PyTuple_GET_SIZE(o) != 1) {
            PyErr_SetString(PyExc_TypeError, "cukit's ufuncs take one out= array");
            goto done;
        }
        if (PyDict_SetItemString(kw, "out", PyTuple_GET_ITEM(o, 0)) < 0)
            goto done;
    }
    out = PyObject_Call(call, inputs, kw);
done:
    Py_XDECREF(call);
    Py_XDECREF(inputs);
    Py_XDECREF(kw);
    return out;
}

/* __array_function__(func, types, args, kwargs) */
PyObject *
cukit_array_function(PyObject *self, PyObject *args, PyObject *kwargs)
{
    cukit_state *st = ((cukit_Array *)self)->st;
    PyObject *func, *types, *fargs, *fkwargs;
    if (!PyArg_ParseTuple(args, "OOOO:__array_function__", &func, &types, &fargs, &fkwargs))
        return NULL;
    if (cukit_numpy(st) < 0)
        return NULL;
    PyObject *iter = PyObject_GetIter(types);
    if (iter == NULL)
        return NULL;
    for (PyObject *t; (t = PyIter_Next(iter)) != NULL;) {
        int ours = t == (PyObject *)st->ArrayType ||
                   PyObject_IsSubclass(t, st->np_ndarray) > 0;
        Py_DECREF(t);
        if (!ours) { /* another library's array: let it answer */
            Py_DECREF(iter);
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    Py_DECREF(iter);
    if (PyErr_Occurred())
        return NULL;
    PyObject *impl = implementation(st, func, "function");
    if (impl == NULL)
        return NULL;
    return PyObject_Call(impl, fargs, PyDict_Check(fkwargs) ? fkwargs : NULL);
}

static PyObject *
set_numpy_table(PyObject *m, PyObject *table)
{
    cukit_state *st = PyModule_GetState(m);
    if (!PyDict_Check(table)) {
        PyErr_SetString(PyExc_TypeError, "_set_numpy_table takes a dict");
        return NULL;
    }
    Py_XSETREF(st->array->numpy_table, Py_NewRef(table));
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ Python */

PyObject *
cukit_array_describe(cukit_Array *self)
{
    PyObject *shape = cukit_array_shape(self);
    if (shape == NULL)
        return NULL;
    PyObject *out = PyUnicode_FromFormat(
        "<cukit.Array shape=%R dtype=%S on device %d%s%s%s>", shape, self->dtype,
        self->device->ordinal, cukit_array_is_c_contig(self) ? "" : ", strided",
        self->buffer ? "" : ", imported", cukit_array_live(self) ? "" : ", freed");
    Py_DECREF(shape);
    return out;
}

/* numpy's repr (which 0) or str (1) of the values, which compute/ gathers (only what
 * numpy shows); the description above for a freed array, or without compute/. */
static PyObject *
printed(PyObject *self, int which)
{
    cukit_Array *a = (cukit_Array *)self;
    if (cukit_array_live(a) && a->st->hooks.array_call)
        return a->st->hooks.array_call(a->st, which ? CUKIT_CALL_STR : CUKIT_CALL_REPR, self,
                                       NULL, NULL);
    return cukit_array_describe(a);
}

PyObject *
cukit_array_repr(PyObject *self)
{
    return printed(self, 0);
}

PyObject *
cukit_array_str(PyObject *self)
{
    return printed(self, 1);
}

PyObject *
cukit_array_sq_item(PyObject *self, Py_ssize_t i)
{
    cukit_Array *a = (cukit_Array *)self;
    if (a->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "iteration over a 0-d array");
        return NULL;
    }
    if (i < 0 || i >= a->shape[0]) {
        PyErr_Format(PyExc_IndexError, "index %zd is out of bounds for axis 0 with size %zd", i,
                     a->shape[0]);
        return NULL;
    }
    PyObject *k = PyLong_FromSsize_t(i);
    PyObject *out = k ? cukit_array_subscript(a, k) : NULL;
    Py_XDECREF(k);
    return out;
}

PyObject *
cukit_array_iter(PyObject *self)
{
    if (((cukit_Array *)self)->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "iteration over a 0-d array");
        return NULL;
    }
    return PySeqIter_New(self);
}

/* Array._rebuild(host, ordinal): what unpickling calls. */
PyObject *
cukit_array_rebuild(PyObject *cls, PyObject *args)
{
    cukit_state *st = cukit_state_of_type((PyTypeObject *)cls);
    PyObject *host, *device;
    if (st == NULL || !PyArg_ParseTuple(args, "OO:_rebuild", &host, &device))
        return NULL;
    return cukit_array_from_host(st, host, NULL, device);
}

/* the same, bound to the type by hand: it pickles as getattr(Array, "_rebuild") */
static PyMethodDef rebuild_def = {"_rebuild", (PyCFunction)cukit_array_rebuild, METH_VARARGS,
                                  NULL};

/* __reduce__: Array._rebuild(host copy, device ordinal), on the same device (pickle and
 * copy.deepcopy go through host memory). */
PyObject *
cukit_array_reduce(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    cukit_Array *a = (cukit_Array *)self;
    PyObject *none = PyTuple_New(0);
    PyObject *host = none ? cukit_array_get(a, none, NULL) : NULL;
    Py_XDECREF(none);
    if (host == NULL)
        return NULL;
    PyTypeObject *t = a->st->ArrayType;
    PyObject *rebuild = PyCFunction_NewEx(&rebuild_def, (PyObject *)t, NULL);
    PyObject *out = rebuild ? Py_BuildValue("(O(Oi))", rebuild, host, a->device->ordinal) : NULL;
    Py_XDECREF(rebuild);
    Py_DECREF(host);
    return out;
}

/* ------------------------------------------------------------------ host exchange
 *
 * numpy's tobytes/tofile and pickle's dumps/dump, each on one host copy (the copy
 * pickling makes for __reduce__); the work after the copy is numpy's or pickle's. */

static PyObject *
host_copy(PyObject *self)
{
    PyObject *none = PyTuple_New(0);
    PyObject *host = none ? cukit_array_get((cukit_Array *)self, none, NULL) : NULL;
    Py_XDECREF(none);
    return host;
}

static PyObject *
cukit_array_tobytes(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"order", NULL};
    PyObject *order = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:tobytes", kwlist, &order))
        return NULL;
    PyObject *host = host_copy(self);
    if (host == NULL)
        return NULL;
    PyObject *r = order ? PyObject_CallMethod(host, "tobytes", "O", order)
                        : PyObject_CallMethod(host, "tobytes", NULL);
    Py_DECREF(host);
    return r;
}

static PyObject *
cukit_array_tofile(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"fid", "sep", "format", NULL};
    PyObject *fid, *sep = NULL, *format = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:tofile", kwlist, &fid, &sep, &format))
        return NULL;
    PyObject *host = host_copy(self);
    if (host == NULL)
        return NULL;
    PyObject *r = sep == NULL ? PyObject_CallMethod(host, "tofile", "O", fid)
                  : format == NULL ? PyObject_CallMethod(host, "tofile", "OO", fid, sep)
                  : PyObject_CallMethod(host, "tofile", "OOO", fid, sep, format);
    Py_DECREF(host);
    return r;
}

static PyObject *
cukit_array_dumps(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *pickle = PyImport_ImportModule("pickle");
    if (pickle == NULL)
        return NULL;
    PyObject *r = PyObject_CallMethod(pickle, "dumps", "O", self);
    Py_DECREF(pickle);
    return r;
}

/* a.dump(file): a file object with write() is written to; anything else is opened as
 * a path ('wb') and closed after, as numpy's dump does. */
static PyObject *
cukit_array_dump(PyObject *self, PyObject *file)
{
    PyObject *pickle = PyImport_ImportModule("pickle"), *f = NULL, *r = NULL;
    if (pickle == NULL)
        return NULL;
    int has_write = PyObject_HasAttrString(file, "write");
    if (!has_write) {
        PyObject *io = PyImport_ImportModule("io");
        f = io ? PyObject_CallMethod(io, "open", "Os", file, "wb") : NULL;
        Py_XDECREF(io);
        if (f == NULL)
            goto done;
    }
    r = PyObject_CallMethod(pickle, "dump", "OO", self, f ? f : file);
    if (f) {
        PyObject *closed = PyObject_CallMethod(f, "close", NULL);
        if (closed == NULL)
            Py_CLEAR(r);
        Py_XDECREF(closed);
    }
done:
    Py_XDECREF(f);
    Py_DECREF(pickle);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* a.to_device(device, /, *, stream=None): the array API's name for a.to(device). */
static PyObject *
cukit_array_to_device(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"", "stream", NULL};
    PyObject *device, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:to_device", kwlist, &device, &stream))
        return NULL;
    PyObject *targs = Py_BuildValue("(O)", device);
    PyObject *tkw = targs ? Py_BuildValue("{sO}", "stream", stream) : NULL;
    PyObject *r = tkw ? cukit_array_to((cukit_Array *)self, targs, tkw) : NULL;
    Py_XDECREF(targs);
    Py_XDECREF(tkw);
    return r;
}

/* a.setflags(write=None, align=None, uic=None): write=False makes this object (and the
 * views made of it after) read-only; write=True undoes only that, and is numpy's
 * ValueError on an array read-only for another reason (a broadcast view, imported
 * read-only memory). align and uic: what numpy accepts of them. */
static PyObject *
array_setflags(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"write", "align", "uic", NULL};
    PyObject *write = Py_None, *align = Py_None, *uic = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO:setflags", kwlist, &write, &align, &uic))
        return NULL;
    cukit_Array *a = (cukit_Array *)self;
    int w = write == Py_None ? -1 : PyObject_IsTrue(write);
    int u = uic == Py_None ? 0 : PyObject_IsTrue(uic);
    if (w == -1 && PyErr_Occurred())
        return NULL;
    if (u)
        return PyErr_Format(PyExc_ValueError, "cannot set WRITEBACKIFCOPY flag to True");
    if (u < 0 || (align != Py_None && PyObject_IsTrue(align) < 0))
        return NULL;
    if (w == 0)
        a->flags |= CUKIT_ARRAY_READONLY | CUKIT_ARRAY_LOCKED;
    else if (w == 1 && (a->flags & CUKIT_ARRAY_READONLY)) {
        if (!(a->flags & CUKIT_ARRAY_LOCKED))
            return PyErr_Format(PyExc_ValueError, "cannot set WRITEABLE flag to True of this "
                                "array (a broadcast view, a.flat, or memory its producer "
                                "exported read-only)");
        a->flags &= ~(CUKIT_ARRAY_READONLY | CUKIT_ARRAY_LOCKED);
    }
    Py_RETURN_NONE;
}

PyMethodDef cukit_array_exchange_methods[] = {
    {"tobytes", (PyCFunction)(void (*)(void))cukit_array_tobytes, METH_VARARGS | METH_KEYWORDS,
     "tobytes(order='C') -> bytes: the elements' bytes (a host copy's tobytes)."},
    {"tofile", (PyCFunction)(void (*)(void))cukit_array_tofile, METH_VARARGS | METH_KEYWORDS,
     "tofile(fid, sep='', format='%s'): numpy's tofile of a host copy."},
    {"dumps", (PyCFunction)cukit_array_dumps, METH_NOARGS, "dumps() -> bytes: pickle.dumps(a)."},
    {"dump", (PyCFunction)cukit_array_dump, METH_O, "dump(file): pickle a into a path or file."},
    {"to_device", (PyCFunction)(void (*)(void))cukit_array_to_device, METH_VARARGS | METH_KEYWORDS,
     "to_device(device, /, *, stream=None) -> Array: the array API's a.to(device)."},
    {"setflags", (PyCFunction)(void (*)(void))array_setflags, METH_VARARGS | METH_KEYWORDS,
     "setflags(write=None, align=None, uic=None): write=False makes the array read-only; "
     "write=True undoes that."},
    {NULL},
};

static PyMethodDef functions[] = {
    {"_set_numpy_table", set_numpy_table, METH_O,
     "_set_numpy_table(dict): numpy's functions and ufuncs -> cukit's, which the Array's "
     "__array_function__ and __array_ufunc__ call (set once, by cukit/__init__.py)."},
    {NULL},
};

int
cukit_protocols_setup(PyObject *module, cukit_state *st)
{
    st->array->FlagsType = (PyTypeObject *)PyType_FromSpecWithBases(&flags_spec,
                                                                    (PyObject *)&PyDict_Type);
    if (st->array->FlagsType == NULL || PyModule_AddType(module, st->array->FlagsType) < 0)
        return -1;
    return PyModule_AddFunctions(module, functions);
}
