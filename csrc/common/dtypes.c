/* dtypes.c - the one element-type table: numpy, __array_interface__, torch and DLPack names of each typecode */
#include "common/common.h"

#include <stdlib.h>
#include <string.h>

/* DLPack's type codes (dlpack.h 1.x). */
enum {
    DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BFLOAT = 4, DL_COMPLEX = 5, DL_BOOL = 6,
    DL_FLOAT8_E4M3FN = 10, DL_FLOAT8_E5M2 = 12, /* DLPack 1.1 */
};

/* Each element type once: its typestr kind and size, its DLPack code, and the
 * name numpy and torch give it (numpy's bfloat16 and float8s come from ml_dtypes). */
static const struct {
    int typecode;
    char kind; /* typestr kind: b i u f c; 'V' for ml_dtypes' types, known by name only
                * (their typestr is <V2, <V1 or <f1, which other 1-byte data may share) */
    int size;
    int dl_code;
    const char *name;
} table[] = {
    {CUKIT_TC_BOOL, 'b', 1, DL_BOOL, "bool"},
    {CUKIT_TC_I8, 'i', 1, DL_INT, "int8"},
    {CUKIT_TC_U8, 'u', 1, DL_UINT, "uint8"},
    {CUKIT_TC_I16, 'i', 2, DL_INT, "int16"},
    {CUKIT_TC_U16, 'u', 2, DL_UINT, "uint16"},
    {CUKIT_TC_I32, 'i', 4, DL_INT, "int32"},
    {CUKIT_TC_U32, 'u', 4, DL_UINT, "uint32"},
    {CUKIT_TC_I64, 'i', 8, DL_INT, "int64"},
    {CUKIT_TC_U64, 'u', 8, DL_UINT, "uint64"},
    {CUKIT_TC_F16, 'f', 2, DL_FLOAT, "float16"},
    {CUKIT_TC_F32, 'f', 4, DL_FLOAT, "float32"},
    {CUKIT_TC_F64, 'f', 8, DL_FLOAT, "float64"},
    {CUKIT_TC_C64, 'c', 8, DL_COMPLEX, "complex64"},
    {CUKIT_TC_C128, 'c', 16, DL_COMPLEX, "complex128"},
    {CUKIT_TC_BF16, 'V', 2, DL_BFLOAT, "bfloat16"},
    {CUKIT_TC_F8E4M3, 'V', 1, DL_FLOAT8_E4M3FN, "float8_e4m3fn"},
    {CUKIT_TC_F8E5M2, 'V', 1, DL_FLOAT8_E5M2, "float8_e5m2"},
};
#define NTYPES (sizeof table / sizeof *table)

const char *
cukit_typecode_name(int tc)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (table[i].typecode == tc)
            return table[i].name;
    return tc == CUKIT_TC_PTR ? "int64 or uint64 (pointers)" : "a structured or other dtype";
}

int
cukit_typecode_size(int tc)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (table[i].typecode == tc)
            return table[i].size;
    return tc == CUKIT_TC_PTR ? 8 : 0;
}

int
cukit_typecode_of_typestr(const char *typestr)
{
    if (typestr == NULL || strlen(typestr) < 3)
        return CUKIT_TC_OTHER;
    char kind = typestr[1];
    int size = atoi(typestr + 2);
    for (size_t i = 0; i < NTYPES; i++)
        if (table[i].kind == kind && table[i].size == size && kind != 'V')
            return table[i].typecode;
    return CUKIT_TC_OTHER;
}

int
cukit_typecode_of_torch(const char *name)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (strcmp(name, table[i].name) == 0)
            return table[i].typecode;
    return CUKIT_TC_OTHER;
}

int
cukit_typecode_of_dlpack(int code, int bits, int lanes)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (lanes == 1 && table[i].dl_code == code && table[i].size * 8 == bits)
            return table[i].typecode;
    return CUKIT_TC_OTHER;
}

int
cukit_typecode_dlpack(int tc, int *code, int *bits)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (table[i].typecode == tc) {
            *code = table[i].dl_code;
            *bits = table[i].size * 8;
            return 1;
        }
    return 0;
}

int
cukit_typecode_of_dtype(PyObject *dtype)
{
    PyObject *str = PyObject_GetAttrString(dtype, "str");
    PyObject *name = str ? PyObject_GetAttrString(dtype, "name") : NULL;
    int tc = -1;
    if (str && name) {
        const char *s = PyUnicode_AsUTF8(str), *n = PyUnicode_AsUTF8(name);
        if (s && n) {
            tc = cukit_typecode_of_typestr(s);
            for (size_t i = 0; i < NTYPES; i++) /* ml_dtypes' types: by name */
                if (table[i].kind == 'V' && strcmp(n, table[i].name) == 0)
                    tc = table[i].typecode;
        }
    }
    Py_XDECREF(str);
    Py_XDECREF(name);
    return tc;
}

/* The names numpy learns only when ml_dtypes is imported (it registers them). */
static const char *const ml_names[] = {"bfloat16", "float8_e4m3fn", "float8_e5m2"};

/* numpy.dtype(name) for a name of ml_dtypes' after importing it: "bfloat16" works
 * whether or not the caller imported ml_dtypes. NULL with the exception numpy raised
 * for other names; TypeError saying to install ml_dtypes where it is missing. */
static PyObject *
ml_dtype(cukit_state *st, PyObject *obj)
{
    const char *name = PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
    size_t i = 0;
    while (name && i < sizeof ml_names / sizeof *ml_names && strcmp(name, ml_names[i]) != 0)
        i++;
    if (name == NULL || i == sizeof ml_names / sizeof *ml_names)
        return NULL;
    PyObject *ml = PyImport_ImportModule("ml_dtypes");
    if (ml == NULL) {
        PyErr_Clear();
        return PyErr_Format(PyExc_TypeError,
                            "dtype '%s' is numpy's through the ml_dtypes package, which is not "
                            "installed: pip install ml_dtypes",
                            name);
    }
    PyObject *type = PyObject_GetAttrString(ml, name);
    Py_DECREF(ml);
    PyObject *dtype = type ? PyObject_CallOneArg(st->np_dtype, type) : NULL;
    Py_XDECREF(type);
    return dtype;
}

/* ------------------------------------------------------------------ the memo */

#define DTYPE_MEMO_MAX 64

/* Whether obj can key the memo: it cannot change what it resolves to. numpy's scalar
 * types and Python's float, int, bool and complex (not any class: one with a .dtype
 * attribute may change it); exact strs; numpy dtypes (see memo_put for metadata). */
static int
memo_key(cukit_state *st, PyObject *obj)
{
    if (PyUnicode_CheckExact(obj))
        return 1;
    if (PyType_Check(obj))
        return obj == (PyObject *)&PyFloat_Type || obj == (PyObject *)&PyLong_Type ||
               obj == (PyObject *)&PyBool_Type || obj == (PyObject *)&PyComplex_Type ||
               (st->np_generic && PyType_IsSubtype((PyTypeObject *)obj, (PyTypeObject *)st->np_generic));
    return st->np_dtype && PyObject_TypeCheck(obj, (PyTypeObject *)st->np_dtype);
}

/* A numpy dtype carrying metadata: it compares and hashes equal to the same dtype
 * without, so it is never stored (a lookup by it finds the plain one's facts, which are
 * its own; cukit_resolve_dtype then gives back the dtype passed, not the one stored). */
static int
has_metadata(cukit_state *st, PyObject *obj)
{
    if (st->np_dtype == NULL || !PyObject_TypeCheck(obj, (PyTypeObject *)st->np_dtype))
        return 0;
    PyObject *meta = PyObject_GetAttrString(obj, "metadata");
    int has = meta != Py_None;
    if (meta == NULL)
        PyErr_Clear();
    Py_XDECREF(meta);
    return has;
}

/* Borrowed (dtype, itemsize, typecode) for obj, or NULL (no exception). */
static PyObject *
memo_get(cukit_state *st, PyObject *obj)
{
    if (st->dtype_memo == NULL || !memo_key(st, obj))
        return NULL;
    PyObject *hit = PyDict_GetItemWithError(st->dtype_memo, obj);
    if (hit == NULL)
        PyErr_Clear();
    return hit;
}

static void
memo_put(cukit_state *st, PyObject *obj, PyObject *dtype, Py_ssize_t itemsize, int tc)
{
    if (!memo_key(st, obj) || has_metadata(st, obj))
        return;
    if (st->dtype_memo == NULL && (st->dtype_memo = PyDict_New()) == NULL) {
        PyErr_Clear();
        return;
    }
    if (PyDict_GET_SIZE(st->dtype_memo) >= DTYPE_MEMO_MAX)
        return;
    PyObject *v = Py_BuildValue("(Oni)", dtype, itemsize, tc);
    if (v == NULL || PyDict_SetItem(st->dtype_memo, obj, v) < 0)
        PyErr_Clear(); /* remembered or not, the answer stands */
    Py_XDECREF(v);
}

static int
facts_slow(PyObject *dtype, Py_ssize_t *itemsize, int *typecode)
{
    PyObject *isz = PyObject_GetAttrString(dtype, "itemsize");
    *itemsize = isz ? PyLong_AsSsize_t(isz) : -1;
    Py_XDECREF(isz);
    if (*itemsize < 0)
        return -1;
    *typecode = cukit_typecode_of_dtype(dtype);
    return *typecode < 0 ? -1 : 0;
}

int
cukit_dtype_facts(cukit_state *st, PyObject *dtype, Py_ssize_t *itemsize, int *typecode)
{
    PyObject *hit = memo_get(st, dtype);
    if (hit) {
        *itemsize = PyLong_AsSsize_t(PyTuple_GET_ITEM(hit, 1));
        *typecode = (int)PyLong_AsLong(PyTuple_GET_ITEM(hit, 2));
        return 0;
    }
    if (facts_slow(dtype, itemsize, typecode) < 0)
        return -1;
    memo_put(st, dtype, dtype, *itemsize, *typecode);
    return 0;
}

PyObject *
cukit_resolve_dtype(cukit_state *st, PyObject *obj)
{
    if (cukit_numpy(st) < 0)
        return NULL;
    PyObject *hit = memo_get(st, obj);
    if (hit) /* numpy.dtype(a dtype) is that dtype */
        return Py_NewRef(PyObject_TypeCheck(obj, (PyTypeObject *)st->np_dtype) ? obj
                                                                               : PyTuple_GET_ITEM(hit, 0));
    PyObject *dtype = PyObject_CallOneArg(st->np_dtype, obj);
    if (dtype == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        dtype = ml_dtype(st, obj);
        if (dtype == NULL && !PyErr_Occurred())
            PyErr_Restore(type, value, tb);
        else {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        }
    }
    if (dtype == NULL)
        return NULL;
    PyObject *hasobj = PyObject_GetAttrString(dtype, "hasobject");
    int bad = hasobj ? PyObject_IsTrue(hasobj) : -1;
    Py_XDECREF(hasobj);
    if (bad != 0) {
        if (bad > 0)
            PyErr_Format(PyExc_TypeError,
                         "dtype %S holds Python objects, which cannot live in device, pinned "
                         "or managed memory",
                         dtype);
        Py_DECREF(dtype);
        return NULL;
    }
    Py_ssize_t itemsize;
    int tc;
    if (memo_key(st, obj) && facts_slow(dtype, &itemsize, &tc) == 0) {
        memo_put(st, obj, dtype, itemsize, tc);
        memo_put(st, dtype, dtype, itemsize, tc);
    }
    PyErr_Clear(); /* facts asked early: the caller asks again and sees the error */
    return dtype;
}
