/* scalars.c - Array as a numpy scalar: item(), tolist(), and float/int/index/complex/format of 0-d arrays */
#include "array/impl.h"

/* These copy the elements to the host (waiting for the work queued before them, as
 * get() does) and let numpy apply its own rules to the host array: which sizes
 * convert, integer-only __index__, the Python type each dtype gives, format specs.
 * numpy's rules are the contract, so the host array's answer is the answer. */

/* The elements as a numpy array of the same shape. New ref or NULL. */
static PyObject *
host_copy(cukit_Array *a)
{
    PyObject *noargs = PyTuple_New(0);
    PyObject *host = noargs ? cukit_array_get(a, noargs, NULL) : NULL;
    Py_XDECREF(noargs);
    return host;
}

/* TypeError for a conversion of an array that is not one element; numpy raises the
 * same class, and refusing before the copy spares copying a large array for nothing.
 * A one-element N-d array is left to numpy's rule (numpy 2 refuses it, numpy 1 warns). */
static int
check_one_element(cukit_Array *a, const char *what)
{
    if (a->size == 1)
        return 0;
    PyErr_Format(PyExc_TypeError,
                 "%s() of an array of %zd elements: only 0-d arrays convert to a Python "
                 "scalar; use .get() or .tolist() for the elements",
                 what, a->size);
    return -1;
}

PyObject *
cukit_array_float(PyObject *self)
{
    cukit_Array *a = (cukit_Array *)self;
    if (check_one_element(a, "float") < 0)
        return NULL;
    PyObject *host = host_copy(a);
    PyObject *r = host ? PyNumber_Float(host) : NULL;
    Py_XDECREF(host);
    return r;
}

PyObject *
cukit_array_int(PyObject *self)
{
    cukit_Array *a = (cukit_Array *)self;
    if (check_one_element(a, "int") < 0)
        return NULL;
    PyObject *host = host_copy(a);
    PyObject *r = host ? PyNumber_Long(host) : NULL;
    Py_XDECREF(host);
    return r;
}

PyObject *
cukit_array_index(PyObject *self)
{
    cukit_Array *a = (cukit_Array *)self;
    /* numpy: only 0-d arrays of an integer dtype (not bool) are indices. */
    if (a->ndim != 0 || a->typecode < CUKIT_TC_I8 || a->typecode > CUKIT_TC_U64) {
        PyErr_Format(PyExc_TypeError,
                     "only 0-d arrays of an integer dtype can be used as an index (this one "
                     "has %d dimensions and dtype %S); use int(a) or a.item() to convert",
                     a->ndim, a->dtype);
        return NULL;
    }
    PyObject *host = host_copy(a);
    PyObject *r = host ? PyNumber_Index(host) : NULL;
    Py_XDECREF(host);
    return r;
}

PyObject *
cukit_array_complex(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    cukit_Array *a = (cukit_Array *)self;
    if (check_one_element(a, "complex") < 0)
        return NULL;
    PyObject *host = host_copy(a);
    PyObject *r = host ? PyObject_CallFunctionObjArgs((PyObject *)&PyComplex_Type, host, NULL)
                       : NULL;
    Py_XDECREF(host);
    return r;
}

PyObject *
cukit_array_item(PyObject *self, PyObject *args)
{
    cukit_Array *a = (cukit_Array *)self;
    if (PyTuple_GET_SIZE(args) == 0 && a->size != 1) {
        PyErr_Format(PyExc_ValueError,
                     "item() of an array of %zd elements: without an index only a one-element "
                     "array converts; pass an index (a.item(i)) or use .tolist()",
                     a->size);
        return NULL;
    }
    PyObject *host = host_copy(a);
    if (host == NULL)
        return NULL;
    PyObject *meth = PyObject_GetAttrString(host, "item");
    PyObject *r = meth ? PyObject_Call(meth, args, NULL) : NULL;
    Py_XDECREF(meth);
    Py_DECREF(host);
    return r;
}

PyObject *
cukit_array_tolist(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *host = host_copy((cukit_Array *)self);
    PyObject *r = host ? PyObject_CallMethod(host, "tolist", NULL) : NULL;
    Py_XDECREF(host);
    return r;
}

PyObject *
cukit_array_format_spec(PyObject *self, PyObject *spec)
{
    cukit_Array *a = (cukit_Array *)self;
    if (!PyUnicode_Check(spec)) {
        PyErr_Format(PyExc_TypeError, "__format__() argument must be str, not %.100s",
                     Py_TYPE(spec)->tp_name);
        return NULL;
    }
    if (a->ndim != 0) {
        /* numpy formats an N-d array only with an empty spec, as str(); cukit's str is
         * its repr, which says where the data is without copying it. */
        if (PyUnicode_GET_LENGTH(spec) == 0)
            return PyObject_Str(self);
        PyErr_Format(PyExc_TypeError,
                     "format spec %R applies to 0-d arrays only (this one has %d dimensions); "
                     "format a.item() or the elements of a.tolist()",
                     spec, a->ndim);
        return NULL;
    }
    PyObject *host = host_copy(a);
    PyObject *r = host ? PyObject_Format(host, spec) : NULL;
    Py_XDECREF(host);
    return r;
}
