/* ufunc_type.c - the cukit.ufunc type (call, introspection), the Array's operator and
 * method hooks, and the ufuncs' setup */
#include "compute/elementwise/ufunc_impl.h"
#include "compute/index/index.h"

#include <string.h>

/* numpy's other names for them */
static const struct {
    const char *alias, *name;
} aliases[] = {
    {"divide", "true_divide"}, {"mod", "remainder"}, {"abs", "absolute"},
    {"conj", "conjugate"}, {"bitwise_not", "invert"}, {"bitwise_invert", "invert"},
    {"bitwise_left_shift", "left_shift"}, {"bitwise_right_shift", "right_shift"},
    {"pow", "power"}, {"acos", "arccos"}, {"asin", "arcsin"}, {"atan", "arctan"},
    {"atan2", "arctan2"}, {"acosh", "arccosh"}, {"asinh", "arcsinh"}, {"atanh", "arctanh"},
};

/* Array operator -> ufunc */
static const int op_ufunc[CUKIT_OP_COUNT] = {
    [CUKIT_OP_ADD] = U_ADD, [CUKIT_OP_SUB] = U_SUB, [CUKIT_OP_MUL] = U_MUL,
    [CUKIT_OP_TRUEDIV] = U_TRUEDIV, [CUKIT_OP_FLOORDIV] = U_FLOORDIV, [CUKIT_OP_MOD] = U_MOD,
    [CUKIT_OP_POW] = U_POW, [CUKIT_OP_LSHIFT] = U_LSHIFT, [CUKIT_OP_RSHIFT] = U_RSHIFT,
    [CUKIT_OP_AND] = U_AND, [CUKIT_OP_OR] = U_OR, [CUKIT_OP_XOR] = U_XOR,
    [CUKIT_OP_NEG] = U_NEG, [CUKIT_OP_POS] = U_POS, [CUKIT_OP_ABS] = U_ABS,
    [CUKIT_OP_INVERT] = U_INVERT, [CUKIT_OP_BOOL] = -1,
    [CUKIT_OP_LT + Py_LT] = U_LT, [CUKIT_OP_LT + Py_LE] = U_LE, [CUKIT_OP_LT + Py_EQ] = U_EQ,
    [CUKIT_OP_LT + Py_NE] = U_NE, [CUKIT_OP_LT + Py_GT] = U_GT, [CUKIT_OP_LT + Py_GE] = U_GE,
};

/* ------------------------------------------------------------------ the Python type */

static PyObject *
ufunc_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ck_Ufunc *u = (ck_Ufunc *)self;
    cukit_state *st = u->st;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int nin = u->def->nin;
    PyObject *out = NULL, *stream = NULL, *dtype = NULL, *where = NULL;
    if (nargs < nin || nargs > nin + 1)
        return PyErr_Format(PyExc_TypeError, "cukit.%s() takes %d input%s (and out), %zd given",
                            u->def->name, nin, nin > 1 ? "s" : "", nargs);
    if (nargs == nin + 1)
        out = args[nin];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i);
        if (key == st->launch->str_stream || PyUnicode_CompareWithASCIIString(key, "stream") == 0)
            stream = args[nargs + i];
        else if (PyUnicode_CompareWithASCIIString(key, "out") == 0 && out == NULL)
            out = args[nargs + i];
        else if (PyUnicode_CompareWithASCIIString(key, "dtype") == 0)
            dtype = args[nargs + i];
        else if (PyUnicode_CompareWithASCIIString(key, "where") == 0)
            where = args[nargs + i];
        else
            return PyErr_Format(PyExc_TypeError,
                                "cukit.%s() got an unexpected keyword argument %R (it takes "
                                "out=, where=, dtype= and stream=)",
                                u->def->name, key);
    }
    int dtype_tc = -1;
    if (dtype != NULL && dtype != Py_None && (dtype_tc = ck_tc_of(st, dtype)) < 0)
        return NULL;
    if (out && PyTuple_Check(out)) {
        if (PyTuple_GET_SIZE(out) != 1)
            return PyErr_Format(PyExc_ValueError, "cukit.%s(): out= takes one array",
                                u->def->name);
        out = PyTuple_GET_ITEM(out, 0);
    }
    if (dtype_tc < 0 && where == NULL)
        return ck_dispatch(u, args, nin, out, stream, MODE_CALL, -1);
    return ck_dispatch_call(u, args, out, stream, dtype_tc, where);
}

static PyObject *
ufunc_repr(ck_Ufunc *u)
{
    return PyUnicode_FromFormat("<cukit.ufunc '%s'>", u->def->name);
}

static void
ufunc_dealloc(ck_Ufunc *u)
{
    PyTypeObject *tp = Py_TYPE(u);
    PyObject_GC_UnTrack(u);
    ck_kcache_clear(&u->cache);
    Py_CLEAR(u->name);
    PyObject_GC_Del(u);
    Py_DECREF(tp);
}

static int
ufunc_traverse(ck_Ufunc *u, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(u));
    Py_VISIT(u->cache.modules);
    return 0;
}

static int
ufunc_clear(ck_Ufunc *u)
{
    ck_kcache_clear(&u->cache);
    return 0;
}

/* dtype-like or scalar -> (typecode, weak) for the introspection methods */
static int
describe_arg(cukit_state *st, PyObject *v, int *tc, int *weak)
{
    *weak = CK_WEAK_NONE;
    if (v == (PyObject *)&PyFloat_Type) *weak = CK_WEAK_FLOAT;
    else if (v == (PyObject *)&PyLong_Type) *weak = CK_WEAK_INT;
    else if (v == (PyObject *)&PyBool_Type) *weak = CK_WEAK_BOOL;
    else if (v == (PyObject *)&PyComplex_Type) *weak = CK_WEAK_COMPLEX;
    if (*weak) {
        *tc = -1;
        return 0;
    }
    *tc = ck_tc_of(st, v);
    return *tc < 0 ? -1 : 0;
}

/* ufunc.resolve(*types) -> (loop input dtypes, result dtype): what a call with arrays
 * of these dtypes (or Python scalars, given as int/float/complex/bool) computes in.
 * cukit.fuse uses it; tests compare it with numpy. */
static PyObject *
ufunc_resolve(ck_Ufunc *u, PyObject *args, PyObject *kwargs)
{
    cukit_state *st = u->st;
    const ufunc_def *def = u->def;
    int nin = def->nin, tc[3] = {0, 0, 0}, weak[3] = {0, 0, 0}, strong = -1, dtype_tc = -1;
    if (PyTuple_GET_SIZE(args) != nin)
        return PyErr_Format(PyExc_TypeError, "resolve() takes %d types", nin);
    if (kwargs && PyDict_GET_SIZE(kwargs) > 0) {
        PyObject *d = PyDict_GetItemString(kwargs, "dtype");
        if (d == NULL || PyDict_GET_SIZE(kwargs) != 1)
            return PyErr_Format(PyExc_TypeError, "resolve() takes only dtype= as a keyword");
        if (d != Py_None && (dtype_tc = ck_tc_of(st, d)) < 0)
            return NULL;
    }
    for (int k = 0; k < nin; k++) {
        if (describe_arg(st, PyTuple_GET_ITEM(args, k), &tc[k], &weak[k]) < 0)
            return NULL;
        if (!weak[k] && !((def->flags & F_COND) && k == 0))
            strong = strong < 0 ? tc[k] : ck_promote(strong, tc[k]);
    }
    for (int k = 0; k < nin; k++)
        if (weak[k])
            tc[k] = ((def->flags & F_COND) && k == 0) ? CUKIT_TC_BOOL : ck_weak_tc(weak[k], strong);
    int ltc[3] = {tc[0], 0, 0};
    if (nin == 3) {
        int t = (def->flags & F_COND) ? ck_promote(tc[1], tc[2])
                                      : ck_promote(ck_promote(tc[0], tc[1]), tc[2]);
        ltc[0] = (def->flags & F_COND) ? CUKIT_TC_BOOL : t;
        ltc[1] = ltc[2] = t;
    }
    else if (!(def->flags & F_CAST) && dtype_tc >= 0) {
        if (ck_loop_for_dtype(u, tc, nin, dtype_tc, ltc) < 0)
            return NULL;
    }
    else if (!(def->flags & F_CAST)) {
        unsigned short e = nin == 1 ? u->loop1[tc[0]] : u->loop2[tc[0]][tc[1]];
        if (e == NOLOOP)
            return ck_no_loop(def, tc, nin), NULL;
        ltc[0] = e & 0xff;
        ltc[1] = e >> 8;
    }
    int rtc = ck_result_tc(def, nin == 3 ? ltc[1] : ltc[0]);
    PyObject *ins = PyTuple_New(nin);
    for (int k = 0; ins && k < nin; k++) {
        PyObject *d = ck_dtype_obj(st, ltc[k]);
        if (d == NULL)
            Py_CLEAR(ins);
        else
            PyTuple_SET_ITEM(ins, k, Py_NewRef(d));
    }
    PyObject *r = ins ? ck_dtype_obj(st, rtc) : NULL;
    PyObject *out = r ? Py_BuildValue("(OO)", ins, r) : NULL;
    Py_XDECREF(ins);
    return out;
}

/* ufunc._source(cls, vec, out_dtype, *input dtypes or None for a scalar of the loop's
 * type, given as the loop dtype via `loops`) -- for warmup and the tests: the CUDA C a
 * call would compile, with its file name and options. */
static PyObject *
ufunc_source(ck_Ufunc *u, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"inputs", "scalars", "out", "cls", "vec", "tiled", "masked",
                             "dtype", NULL};
    PyObject *inputs, *scalars = NULL, *out_o = Py_None, *dtype = Py_None;
    int cls = CK_CLASS_VEC, vec = 4, masked = 0, dtype_tc = -1;
    unsigned int tiled = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOiiIpO:_source", kwlist, &inputs,
                                     &scalars, &out_o, &cls, &vec, &tiled, &masked, &dtype))
        return NULL;
    if (dtype != Py_None && (dtype_tc = ck_tc_of(u->st, dtype)) < 0)
        return NULL;
    cukit_state *st = u->st;
    const ufunc_def *def = u->def;
    int nin = def->nin, tc[3], ltc[3] = {0, 0, 0}, sc[3] = {0, 0, 0};
    PyObject *seq = PySequence_Tuple(inputs);
    if (seq == NULL)
        return NULL;
    if (PyTuple_GET_SIZE(seq) != nin || cls < 0 || cls >= CK_CLASS_COUNT) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "_source(): %d input dtypes and a class", nin);
    }
    for (int k = 0; k < nin; k++) {
        tc[k] = ck_tc_of(st, PyTuple_GET_ITEM(seq, k));
        if (tc[k] < 0) {
            Py_DECREF(seq);
            return NULL;
        }
        if (scalars && scalars != Py_None) {
            PyObject *s = PySequence_GetItem(scalars, k);
            sc[k] = s ? PyObject_IsTrue(s) : -1;
            Py_XDECREF(s);
            if (sc[k] < 0) {
                Py_DECREF(seq);
                return NULL;
            }
        }
    }
    Py_DECREF(seq);
    if (def->flags & F_CAST) {
        ltc[0] = tc[0];
    }
    else if (nin == 3) {
        int t = (def->flags & F_COND) ? ck_promote(tc[1], tc[2])
                                      : ck_promote(ck_promote(tc[0], tc[1]), tc[2]);
        ltc[0] = (def->flags & F_COND) ? CUKIT_TC_BOOL : t;
        ltc[1] = ltc[2] = t;
    }
    else if (dtype_tc >= 0) {
        if (ck_loop_for_dtype(u, tc, nin, dtype_tc, ltc) < 0)
            return NULL;
    }
    else {
        unsigned short e = nin == 1 ? u->loop1[tc[0]] : u->loop2[tc[0]][tc[1]];
        if (e == NOLOOP)
            return ck_no_loop(def, tc, nin), NULL;
        ltc[0] = e & 0xff;
        ltc[1] = e >> 8;
    }
    int rtc = ck_result_tc(def, nin == 3 ? ltc[1] : ltc[0]);
    int otc = out_o == Py_None ? rtc : ck_tc_of(st, out_o);
    if (otc < 0)
        return NULL;
    ck_operand ops[CK_UMAXOP + 1];
    memset(ops, 0, sizeof ops);
    ops[0].tc = otc;
    ops[0].output = 1;
    for (int k = 0; k < nin; k++) {
        ops[k + 1].tc = sc[k] ? ltc[k] : tc[k];
        ops[k + 1].scalar = sc[k];
    }
    if (masked)
        ops[nin + 1].tc = CUKIT_TC_BOOL;
    for (int k = 0; k < CK_UMAXOP + 1; k++)
        ops[k].tiled = cls == CK_CLASS_T2 && (tiled >> k & 1) && k > 0;
    char func_name[48], file[64];
    PyOS_snprintf(func_name, sizeof func_name, "uf_%s", def->name);
    PyOS_snprintf(file, sizeof file, "cukit_%s.cu", def->name);
    ck_ufunc_body body = {func_name, nin, {ltc[0], ltc[1], ltc[2]}, rtc, masked};
    PyObject *src = ck_ufunc_source(&body, ops, cls, cls == CK_CLASS_VEC ? vec : 1);
    if (src == NULL)
        return NULL;
    PyObject *r = Py_BuildValue("(Ns(s))", src, file, "-fmad=false");
    return r;
}

static PyObject *
ufunc_get_nin(ck_Ufunc *u, void *c)
{
    return PyLong_FromLong(u->def->nin);
}

static PyObject *
ufunc_get_nout(ck_Ufunc *u, void *c)
{
    return PyLong_FromLong(1);
}

static PyObject *
ufunc_get_types(ck_Ufunc *u, void *c)
{
    const ufunc_def *def = u->def;
    PyObject *out = PyList_New(0);
    for (const char *p = def->loops; out && *p; p++) {
        int l = ck_tc_of_char(*p);
        char buf[16];
        int n = 0;
        for (int k = 0; k < def->nin; k++)
            buf[n++] = (def->flags & F_COND) && k == 0 ? '?' : *p;
        buf[n++] = '-';
        buf[n++] = '>';
        buf[n++] = ck_dtypes[ck_result_tc(def, l)].ch;
        PyObject *s = PyUnicode_FromStringAndSize(buf, n);
        if (s == NULL || PyList_Append(out, s) < 0)
            Py_CLEAR(out);
        Py_XDECREF(s);
    }
    return out;
}

static PyObject *
ufunc_get_op(ck_Ufunc *u, void *c)
{
    return PyUnicode_FromFormat("uf_%s", u->def->name);
}

static PyObject *
ufunc_get_doc(ck_Ufunc *u, void *c)
{
    const ufunc_def *d = u->def;
    if (d->nin == 1)
        return PyUnicode_FromFormat("%s(x, /, out=None, *, where=True, dtype=None, "
                                    "stream=None) -> Array: %s, elementwise, as numpy.%s.",
                                    d->name, d->doc, d->name);
    return PyUnicode_FromFormat("%s(x1, x2, /, out=None, *, where=True, dtype=None, "
                                "stream=None) -> Array: %s, elementwise with broadcasting, "
                                "as numpy.%s.",
                                d->name, d->doc, d->name);
}

static PyObject *
ufunc_cache_size(ck_Ufunc *u, PyObject *ignored)
{
    return PyLong_FromSize_t(u->cache.used);
}

static PyMemberDef ufunc_members[] = {
    {"__vectorcalloffset__", Py_T_PYSSIZET, offsetof(ck_Ufunc, vectorcall), Py_READONLY},
    {"__name__", Py_T_OBJECT_EX, offsetof(ck_Ufunc, name), Py_READONLY, "The name."},
    {NULL},
};

static PyGetSetDef ufunc_getset[] = {
    {"nin", (getter)ufunc_get_nin, NULL, "Number of inputs."},
    {"nout", (getter)ufunc_get_nout, NULL, "Number of outputs (1)."},
    {"types", (getter)ufunc_get_types, NULL, "The loops, as numpy writes them: 'ff->f'."},
    {"_op", (getter)ufunc_get_op, NULL, "The device function generated code calls."},
    {"__doc__", (getter)ufunc_get_doc, NULL, NULL},
    {NULL},
};

static PyMethodDef ufunc_methods[] = {
    {"resolve", (PyCFunction)(void (*)(void))ufunc_resolve, METH_VARARGS | METH_KEYWORDS,
     "resolve(*dtypes, dtype=None) -> (loop dtypes, result dtype): the types a call with "
     "arrays of these dtypes (and numpy's dtype=) computes in (int, float, complex or bool "
     "for a Python scalar)."},
    {"_source", (PyCFunction)(void (*)(void))ufunc_source, METH_VARARGS | METH_KEYWORDS,
     "_source(inputs, scalars=None, out=None, cls=0, vec=4, tiled=0, masked=False, "
     "dtype=None) -> (source, name, options)."},
    {"_cache_size", (PyCFunction)ufunc_cache_size, METH_NOARGS,
     "Number of kernels loaded for this ufunc."},
    {NULL},
};

static PyType_Slot ufunc_slots[] = {
    {Py_tp_dealloc, ufunc_dealloc},
    {Py_tp_traverse, ufunc_traverse},
    {Py_tp_clear, ufunc_clear},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_repr, ufunc_repr},
    {Py_tp_members, ufunc_members},
    {Py_tp_getset, ufunc_getset},
    {Py_tp_methods, ufunc_methods},
    {0, NULL},
};

static PyType_Spec ufunc_spec = {
    .name = "cukit.ufunc",
    .basicsize = sizeof(ck_Ufunc),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = ufunc_slots,
};

/* ------------------------------------------------------------------ the Array's hooks */

static ck_Ufunc *
ufunc_at(cukit_state *st, int index)
{
    return (ck_Ufunc *)PyTuple_GET_ITEM(st->compute->ufuncs, index);
}

PyObject *
ck_array_math(cukit_state *st, int op, PyObject *a, PyObject *b, int inplace)
{
    if (op == CUKIT_OP_BOOL) {
        cukit_Array *x = (cukit_Array *)a;
        if (x->size != 1)
            return PyErr_Format(PyExc_ValueError,
                                "the truth value of an array with %zd elements is ambiguous; "
                                "use a.any() or a.all()",
                                x->size);
        PyObject *noargs = PyTuple_New(0);
        PyObject *host = noargs ? cukit_array_get(x, noargs, NULL) : NULL;
        Py_XDECREF(noargs);
        if (host == NULL)
            return NULL;
        int t = PyObject_IsTrue(host);
        Py_DECREF(host);
        return t < 0 ? NULL : PyBool_FromLong(t);
    }
    if (op < 0 || op >= CUKIT_OP_COUNT)
        Py_RETURN_NOTIMPLEMENTED;
    ck_Ufunc *u = ufunc_at(st, op_ufunc[op]);
    PyObject *in[2] = {a, b};
    int nin = u->def->nin;
    return ck_dispatch(u, in, nin, inplace ? a : NULL, NULL, MODE_OPERATOR, -1);
}

PyObject *
ck_astype(cukit_state *st, cukit_Array *a, int tc, PyObject *stream)
{
    PyObject *in[1] = {(PyObject *)a};
    return ck_dispatch(ufunc_at(st, U_COPY), in, 1, NULL, stream, MODE_CALL, tc);
}

int
ck_copyto(cukit_state *st, cukit_Array *dst, cukit_Array *src, PyObject *stream)
{
    PyObject *in[1] = {(PyObject *)src};
    PyObject *r = ck_dispatch(ufunc_at(st, U_COPY), in, 1, (PyObject *)dst, stream, MODE_CALL,
                           dst->typecode);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* cukit.where / cukit.clip / cast: the internal three-input ufuncs. */
PyObject *
ck_ternary(cukit_state *st, int which, PyObject *const *in, PyObject *out, PyObject *stream)
{
    return ck_dispatch(ufunc_at(st, which ? U_CLIP : U_WHERE), in, 3, out, stream, MODE_CALL, -1);
}

static PyObject *
part_view(cukit_state *st, cukit_Array *a, int imag)
{
    int ptc = a->typecode == CUKIT_TC_C64 ? CUKIT_TC_F32 : CUKIT_TC_F64;
    PyObject *dt = ck_dtype_obj(st, ptc);
    if (dt == NULL)
        return NULL;
    return (PyObject *)cukit_array_view_as(a, dt, ptc, a->itemsize / 2,
                                        a->offset + (imag ? a->itemsize / 2 : 0), a->ndim,
                                        a->shape, a->strides);
}

PyObject *
ck_array_call(cukit_state *st, int which, PyObject *self, PyObject *args, PyObject *kwargs)
{
    cukit_Array *a = (cukit_Array *)self;
    if (which >= CUKIT_CALL_REDUCE)
        return ck_reduce_method(st, which - CUKIT_CALL_REDUCE, self, args, kwargs);
    switch (which) {
    case CUKIT_CALL_ASTYPE: {
        static char *kwlist[] = {"dtype", "copy", "stream", NULL};
        PyObject *dtype, *stream = Py_None;
        int copy = 1;
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|pO:astype", kwlist, &dtype, &copy,
                                         &stream))
            return NULL;
        int tc = ck_cast_tc_of(st, dtype);
        if (tc < 0)
            return NULL;
        if (!copy && tc == a->typecode)
            return Py_NewRef(self);
        return ck_astype(st, a, tc, stream);
    }
    case CUKIT_CALL_ROUND: {
        static char *kwlist[] = {"decimals", "out", NULL};
        Py_ssize_t decimals = 0;
        PyObject *out = Py_None;
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|nO:round", kwlist, &decimals, &out))
            return NULL;
        return ck_round(st, self, decimals, out);
    }
    case CUKIT_CALL_CLIP: {
        static char *kwlist[] = {"min", "max", "out", "stream", NULL};
        PyObject *lo = Py_None, *hi = Py_None, *out = Py_None, *stream = Py_None;
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO$O:clip", kwlist, &lo, &hi, &out,
                                         &stream))
            return NULL;
        return ck_clip(st, self, lo, hi, out, stream);
    }
    case CUKIT_CALL_CONJ: {
        PyObject *in[1] = {self};
        return ck_dispatch(ufunc_at(st, U_CONJ), in, 1, NULL, NULL, MODE_CALL, -1);
    }
    case CUKIT_CALL_REAL:
    case CUKIT_CALL_IMAG:
        if (ck_dtypes[a->typecode].kind == 'c')
            return part_view(st, a, which == CUKIT_CALL_IMAG);
        if (which == CUKIT_CALL_REAL)
            return Py_NewRef(self);
        {
            CUstream h; /* the current stream (`with stream:`), else the legacy one */
            cukit_Array *z = ck_stream(st, Py_None, a->device, NULL, &h) < 0
                                 ? NULL
                                 : ck_empty(st, a->device, a->typecode, a->ndim, a->shape);
            if (z && z->nbytes > 0 &&
                (cukit_device_activate(a->device) < 0 ||
                 CU_CALL(st, cuMemsetD8Async, (cukit_array_ptr(z), 0, (size_t)z->nbytes, h)) < 0))
                Py_CLEAR(z);
            return (PyObject *)z;
        }
    case CUKIT_CALL_NONZERO:
        return ck_nonzero(st, self);
    case CUKIT_CALL_REPR:
    case CUKIT_CALL_STR:
        return ck_array_print(st, self, which == CUKIT_CALL_STR);
    case CUKIT_CALL_TAKE: {
        static char *kwlist[] = {"indices", "axis", "out", "mode", NULL};
        PyObject *indices, *axis = Py_None, *out = Py_None;
        const char *mode = "raise";
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOs:take", kwlist, &indices, &axis,
                                         &out, &mode))
            return NULL;
        return ck_take(st, self, indices, axis, out, mode);
    }
    case CUKIT_CALL_PUT: {
        static char *kwlist[] = {"ind", "v", "mode", NULL};
        PyObject *ind, *v;
        const char *mode = "raise";
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|s:put", kwlist, &ind, &v, &mode))
            return NULL;
        if (ck_put_values(st, self, ind, v, mode) < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    case CUKIT_CALL_COMPRESS: {
        static char *kwlist[] = {"condition", "axis", NULL};
        PyObject *cond, *axis = Py_None;
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:compress", kwlist, &cond, &axis))
            return NULL;
        return ck_compress(st, cond, self, axis);
    }
    }
    PyErr_SetString(PyExc_SystemError, "unknown array method");
    return NULL;
}

/* ------------------------------------------------------------------ setup */

static PyObject *
mod_set_fuse_proxy(PyObject *m, PyObject *args)
{
    cukit_state *st = PyModule_GetState(m);
    PyObject *cls, *apply;
    if (!PyArg_ParseTuple(args, "O!O:_set_fuse_proxy", &PyType_Type, &cls, &apply))
        return NULL;
    if (!PyCallable_Check(apply)) {
        PyErr_SetString(PyExc_TypeError, "_set_fuse_proxy(cls, apply): apply must be callable");
        return NULL;
    }
    Py_XSETREF(st->compute->fuse_proxy, Py_NewRef(cls));
    Py_XSETREF(st->compute->fuse_apply, Py_NewRef(apply));
    Py_RETURN_NONE;
}

static PyMethodDef ufunc_functions[] = {
    {"_set_fuse_proxy", mod_set_fuse_proxy, METH_VARARGS,
     "Internal: _set_fuse_proxy(cls, apply): the class of cukit.fuse's traced values, and "
     "the function ufuncs hand such operands to, apply(ufunc, args)."},
    {NULL},
};

int
ck_ufunc_setup(PyObject *module, cukit_state *st)
{
    st->compute->UfuncType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &ufunc_spec, NULL);
    if (st->compute->UfuncType == NULL || PyModule_AddObjectRef(module, "ufunc", (PyObject *)st->compute->UfuncType) < 0)
        return -1;
    if (strcmp(ck_ufunc_defs[U_CONJ].name, "conjugate") != 0 || strcmp(ck_ufunc_defs[U_GE].name, "greater_equal") != 0) {
        PyErr_SetString(PyExc_SystemError, "ufunc table out of order");
        return -1;
    }
    st->compute->ufuncs = PyTuple_New(U_COUNT);
    if (st->compute->ufuncs == NULL)
        return -1;
    for (int i = 0; i < U_COUNT; i++) {
        ck_Ufunc *u = PyObject_GC_New(ck_Ufunc, st->compute->UfuncType);
        if (u == NULL)
            return -1;
        u->vectorcall = ufunc_vectorcall;
        u->st = st;
        u->def = &ck_ufunc_defs[i];
        u->index = i;
        memset(&u->cache, 0, sizeof u->cache);
        u->name = PyUnicode_FromString(ck_ufunc_defs[i].name);
        ck_ufunc_build_tables(u);
        PyObject_GC_Track(u);
        PyTuple_SET_ITEM(st->compute->ufuncs, i, (PyObject *)u);
        if (u->name == NULL)
            return -1;
        if (i < U_WHERE && PyModule_AddObjectRef(module, ck_ufunc_defs[i].name, (PyObject *)u) < 0)
            return -1;
    }
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++) {
        PyObject *u = PyObject_GetAttrString(module, aliases[i].name);
        if (u == NULL || PyModule_AddObject(module, aliases[i].alias, u) < 0) {
            Py_XDECREF(u);
            return -1;
        }
    }
    if (PyModule_AddFunctions(module, ufunc_functions) < 0)
        return -1;
    st->hooks.array_math = ck_array_math;
    st->hooks.array_call = ck_array_call;
    return 0;
}
