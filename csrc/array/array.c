/* array.c - cukit.Array: N-D strided views of device memory, indexing, and copies in every direction */
#include "array/impl.h"

#include <string.h>

/* ------------------------------------------------------------------ helpers */

/* shape from an int or a sequence of ints. 0 / -1 with ValueError or TypeError.
 * `minus_one` allows one -1 (reshape), returned as -1 in shape. */
int
cukit_parse_shape(PyObject *obj, Py_ssize_t *shape, int *ndim, int minus_one)
{
    PyObject *seq;
    if (PyLong_Check(obj) || PyIndex_Check(obj)) {
        seq = PyTuple_Pack(1, obj);
    }
    else {
        seq = PySequence_Fast(obj, "shape must be an int or a sequence of ints");
    }
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int unknown = 0;
    if (n > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "shape has %zd dimensions; cukit allows at most %d", n,
                     CUKIT_MAXDIM);
        Py_DECREF(seq);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t v = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(seq, i), PyExc_ValueError);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "shape must be an int or a sequence of ints, got %R",
                             obj);
            }
            return -1;
        }
        if (v == -1 && minus_one && !unknown) {
            unknown = 1;
        }
        else if (v < 0) {
            PyErr_Format(PyExc_ValueError, "shape %R has a negative dimension%s", obj,
                         minus_one ? " (only one -1, to be inferred, is allowed)" : "");
            Py_DECREF(seq);
            return -1;
        }
        shape[i] = v;
    }
    *ndim = (int)n;
    Py_DECREF(seq);
    return 0;
}

PyObject *
cukit_ssize_tuple(const Py_ssize_t *v, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *x = PyLong_FromSsize_t(v[i]);
        if (x == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

PyObject *
cukit_array_shape(const cukit_Array *a)
{
    return cukit_ssize_tuple(a->shape, a->ndim);
}

PyObject *
cukit_array_strides(const cukit_Array *a)
{
    return cukit_ssize_tuple(a->strides, a->ndim);
}

/* C-order byte strides for shape. */
void
cukit_c_strides(int ndim, const Py_ssize_t *shape, Py_ssize_t itemsize, Py_ssize_t *out)
{
    Py_ssize_t stride = itemsize;
    for (int i = ndim - 1; i >= 0; i--) {
        out[i] = stride;
        stride *= shape[i] ? shape[i] : 1;
    }
}

/* CUKIT_ARRAY_C_CONTIG / F_CONTIG by numpy's rule: length-1 dimensions take any
 * stride, and an empty array is both. */
static int
contiguity(int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides, Py_ssize_t itemsize)
{
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0)
            return CUKIT_ARRAY_C_CONTIG | CUKIT_ARRAY_F_CONTIG;
    int flags = 0;
    Py_ssize_t want = itemsize;
    int ok = 1;
    for (int i = ndim - 1; i >= 0 && ok; i--) {
        if (shape[i] != 1 && strides[i] != want)
            ok = 0;
        want *= shape[i];
    }
    if (ok)
        flags |= CUKIT_ARRAY_C_CONTIG;
    want = itemsize;
    ok = 1;
    for (int i = 0; i < ndim && ok; i++) {
        if (shape[i] != 1 && strides[i] != want)
            ok = 0;
        want *= shape[i];
    }
    if (ok)
        flags |= CUKIT_ARRAY_F_CONTIG;
    return flags;
}

/* A new Array object describing memory someone else holds: the caller has set
 * buffer or owner. Steals nothing; takes new refs to dev and dtype. */
static cukit_Array *
array_alloc(cukit_state *st, cukit_Device *dev, PyObject *dtype, int typecode,
            Py_ssize_t itemsize, int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides)
{
    cukit_Array *a = PyObject_New(cukit_Array, st->ArrayType);
    if (a == NULL)
        return NULL;
    a->st = st;
    a->device = (cukit_Device *)Py_NewRef(dev);
    a->buffer = NULL;
    a->owner = NULL;
    a->base = 0;
    a->offset = 0;
    a->dtype = Py_NewRef(dtype);
    a->typecode = typecode;
    a->itemsize = itemsize;
    a->ndim = ndim;
    a->size = 1;
    for (int i = 0; i < ndim; i++) {
        a->shape[i] = shape[i];
        a->strides[i] = strides[i];
        a->size *= shape[i];
    }
    a->nbytes = a->size * itemsize;
    a->flags = contiguity(ndim, shape, strides, itemsize);
    return a;
}

/* A new uninitialised C-contiguous array on dev. Steals nothing. New ref or NULL. */
cukit_Array *
cukit_array_create(cukit_state *st, cukit_Device *dev, int ndim, const Py_ssize_t *shape,
             PyObject *dtype)
{
    Py_ssize_t itemsize;
    int tc;
    if (cukit_dtype_facts(st, dtype, &itemsize, &tc) < 0)
        return NULL;
    Py_ssize_t size = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] != 0 && size > PY_SSIZE_T_MAX / shape[i]) {
            PyErr_SetString(PyExc_ValueError, "array is too large: its size overflows");
            return NULL;
        }
        size *= shape[i];
    }
    if (itemsize != 0 && size > PY_SSIZE_T_MAX / itemsize) {
        PyErr_SetString(PyExc_ValueError, "array is too large: its byte size overflows");
        return NULL;
    }
    cukit_Buffer *buf = cukit_buffer_create(dev, (size_t)(size * itemsize));
    if (buf == NULL)
        return NULL;
    Py_ssize_t strides[CUKIT_MAXDIM];
    cukit_c_strides(ndim, shape, itemsize, strides);
    cukit_Array *a = array_alloc(st, dev, dtype, tc, itemsize, ndim, shape, strides);
    if (a == NULL) {
        Py_DECREF(buf);
        return NULL;
    }
    a->buffer = buf;
    return a;
}

cukit_Array *
cukit_array_wrap(cukit_state *st, cukit_Device *dev, CUdeviceptr base, PyObject *owner,
                 PyObject *dtype, int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides,
                 int readonly)
{
    Py_ssize_t itemsize, cs[CUKIT_MAXDIM];
    int tc;
    if (ndim < 0 || ndim > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "the array has %d dimensions; cukit allows at most %d",
                     ndim, CUKIT_MAXDIM);
        return NULL;
    }
    if (cukit_dtype_facts(st, dtype, &itemsize, &tc) < 0)
        return NULL;
    if (strides == NULL) {
        cukit_c_strides(ndim, shape, itemsize, cs);
        strides = cs;
    }
    cukit_Array *a = array_alloc(st, dev, dtype, tc, itemsize, ndim, shape, strides);
    if (a == NULL)
        return NULL;
    a->owner = Py_NewRef(owner);
    a->base = base;
    if (readonly)
        a->flags |= CUKIT_ARRAY_READONLY;
    return a;
}

cukit_Array *
cukit_array_over_buffer(cukit_state *st, cukit_Buffer *buf, PyObject *dtype, int ndim,
                        const Py_ssize_t *shape, const Py_ssize_t *strides, Py_ssize_t offset)
{
    Py_ssize_t itemsize, cs[CUKIT_MAXDIM];
    int tc;
    if (buf->ptr == 0) {
        cukit_freed_error();
        return NULL;
    }
    if (cukit_dtype_facts(st, dtype, &itemsize, &tc) < 0)
        return NULL;
    if (strides == NULL) {
        cukit_c_strides(ndim, shape, itemsize, cs);
        strides = cs;
    }
    /* Every element must lie inside the buffer: the lowest and highest byte reached. */
    Py_ssize_t lo = offset, hi = offset + itemsize, size = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "negative dimension %zd", shape[i]);
            return NULL;
        }
        size *= shape[i];
        if (shape[i] == 0)
            continue;
        Py_ssize_t reach = (shape[i] - 1) * strides[i];
        if (reach < 0)
            lo += reach;
        else
            hi += reach;
    }
    if (size > 0 && (offset < 0 || lo < 0 || (size_t)hi > buf->size)) {
        PyErr_Format(PyExc_ValueError,
                     "the array reaches bytes %zd to %zd of the buffer, which holds %zu bytes",
                     lo, hi, buf->size);
        return NULL;
    }
    cukit_Array *a = array_alloc(st, buf->device, dtype, tc, itemsize, ndim, shape, strides);
    if (a == NULL)
        return NULL;
    a->buffer = (cukit_Buffer *)Py_NewRef(buf);
    a->offset = offset;
    return a;
}

/* A view of `a`: the same memory, `offset` bytes from its start. New ref or NULL. */
cukit_Array *
cukit_array_view(cukit_Array *a, Py_ssize_t offset, int ndim, const Py_ssize_t *shape,
          const Py_ssize_t *strides)
{
    cukit_Array *v = array_alloc(a->st, a->device, a->dtype, a->typecode, a->itemsize, ndim,
                                 shape, strides);
    if (v == NULL)
        return NULL;
    v->buffer = (cukit_Buffer *)Py_XNewRef(a->buffer);
    v->owner = Py_XNewRef(a->owner);
    v->base = a->base;
    v->offset = offset;
    v->flags |= a->flags & CUKIT_ARRAY_READONLY;
    return v;
}

static cukit_Array *
array_new(cukit_state *st, cukit_Device *dev, PyObject *dtype, int typecode,
          Py_ssize_t itemsize, int ndim, const Py_ssize_t *shape, int legacy_write)
{
    Py_ssize_t size = 1, strides[CUKIT_MAXDIM];
    for (int i = 0; i < ndim; i++) {
        if (shape[i] != 0 && size > PY_SSIZE_T_MAX / shape[i]) {
            PyErr_SetString(PyExc_ValueError, "array is too large: its size overflows");
            return NULL;
        }
        size *= shape[i];
    }
    if (itemsize != 0 && size > PY_SSIZE_T_MAX / itemsize) {
        PyErr_SetString(PyExc_ValueError, "array is too large: its byte size overflows");
        return NULL;
    }
    size_t nbytes = (size_t)(size * itemsize);
    cukit_Buffer *buf = legacy_write ? cukit_buffer_create_for_legacy_write(dev, nbytes)
                                     : cukit_buffer_create(dev, nbytes);
    if (buf == NULL)
        return NULL;
    cukit_c_strides(ndim, shape, itemsize, strides);
    cukit_Array *a = array_alloc(st, dev, dtype, typecode, itemsize, ndim, shape, strides);
    if (a == NULL) {
        Py_DECREF(buf);
        return NULL;
    }
    a->buffer = buf;
    return a;
}

cukit_Array *
cukit_array_new(cukit_state *st, cukit_Device *dev, PyObject *dtype, int typecode,
                Py_ssize_t itemsize, int ndim, const Py_ssize_t *shape)
{
    return array_new(st, dev, dtype, typecode, itemsize, ndim, shape, 0);
}

cukit_Array *
cukit_array_new_for_legacy_write(cukit_state *st, cukit_Device *dev, PyObject *dtype,
                                 int typecode, Py_ssize_t itemsize, int ndim,
                                 const Py_ssize_t *shape)
{
    return array_new(st, dev, dtype, typecode, itemsize, ndim, shape, 1);
}

cukit_Array *
cukit_array_view_as(cukit_Array *a, PyObject *dtype, int typecode, Py_ssize_t itemsize,
                    Py_ssize_t offset, int ndim, const Py_ssize_t *shape,
                    const Py_ssize_t *strides)
{
    cukit_Array *v = array_alloc(a->st, a->device, dtype, typecode, itemsize, ndim, shape,
                                 strides);
    if (v == NULL)
        return NULL;
    v->buffer = (cukit_Buffer *)Py_XNewRef(a->buffer);
    v->owner = Py_XNewRef(a->owner);
    v->base = a->base;
    v->offset = offset;
    v->flags |= a->flags & CUKIT_ARRAY_READONLY;
    return v;
}

int
cukit_array_check_live(const cukit_Array *a)
{
    return cukit_array_live(a) ? 0 : cukit_freed_error();
}

int
cukit_array_check_writable(const cukit_Array *a, const char *what)
{
    if (a->flags & CUKIT_ARRAY_READONLY) {
        PyErr_Format(PyExc_ValueError,
                     "%s: the array is read-only (a broadcast view, a.flat, set so by "
                     "setflags(write=False), or exported so by its producer); copy it first "
                     "with .copy()",
                     what);
        return -1;
    }
    return 0;
}

int
cukit_array_is_c_contig(const cukit_Array *a)
{
    return (a->flags & CUKIT_ARRAY_C_CONTIG) != 0;
}

static void array_dealloc(cukit_Array *self);

/* ------------------------------------------------------------------ math: hooks into compute/
 *
 * Operators and math methods live in the compute layer, above this one; it registers
 * st->array_math and st->array_call at init, and these slots call through them. */

static PyObject *
math_op(PyObject *a, PyObject *b, int op, int inplace)
{
    PyObject *self = Py_TYPE(a)->tp_dealloc == (destructor)array_dealloc ? a : b;
    cukit_state *st = ((cukit_Array *)self)->st;
    if (st->hooks.array_math == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    return st->hooks.array_math(st, op, a, b, inplace);
}

#define ARRAY_BINOPS(X)                                                                  \
    X(add, ADD) X(sub, SUB) X(mul, MUL) X(truediv, TRUEDIV) X(floordiv, FLOORDIV)          \
    X(mod, MOD) X(lshift, LSHIFT) X(rshift, RSHIFT) X(and, AND) X(or, OR) X(xor, XOR)
#define BINOP(name, OP)                                                                  \
    static PyObject *array_nb_##name(PyObject *a, PyObject *b)                           \
    {                                                                                    \
        return math_op(a, b, CUKIT_OP_##OP, 0);                                          \
    }                                                                                    \
    static PyObject *array_nb_i##name(PyObject *a, PyObject *b)                          \
    {                                                                                    \
        return math_op(a, b, CUKIT_OP_##OP, 1);                                          \
    }
ARRAY_BINOPS(BINOP)
#undef BINOP

static PyObject *
array_nb_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None)
        Py_RETURN_NOTIMPLEMENTED;
    return math_op(a, b, CUKIT_OP_POW, 0);
}

static PyObject *
array_nb_ipow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None)
        Py_RETURN_NOTIMPLEMENTED;
    return math_op(a, b, CUKIT_OP_POW, 1);
}

#define UNOP(name, OP)                                                                   \
    static PyObject *array_nb_##name(PyObject *a)                                        \
    {                                                                                    \
        return math_op(a, NULL, CUKIT_OP_##OP, 0);                                       \
    }
UNOP(neg, NEG) UNOP(pos, POS) UNOP(abs, ABS) UNOP(invert, INVERT)
#undef UNOP

static int
array_nb_bool(PyObject *a)
{
    PyObject *r = math_op(a, NULL, CUKIT_OP_BOOL, 0);
    if (r == NULL)
        return -1;
    int v = r == Py_NotImplemented ? 1 : PyObject_IsTrue(r);
    Py_DECREF(r);
    return v;
}

/* a @ b: matrix products live in linalg/, which registers the hook. */
static PyObject *
array_nb_matmul(PyObject *a, PyObject *b)
{
    PyObject *self = Py_TYPE(a)->tp_dealloc == (destructor)array_dealloc ? a : b;
    cukit_state *st = ((cukit_Array *)self)->st;
    if (st->hooks.array_matmul == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    return st->hooks.array_matmul(st, a, b);
}

static PyObject *
array_richcompare(PyObject *a, PyObject *b, int op)
{
    return math_op(a, b, CUKIT_OP_LT + op, 0);
}

static PyObject *
math_call(PyObject *self, int which, PyObject *args, PyObject *kwargs)
{
    cukit_state *st = ((cukit_Array *)self)->st;
    if (st->hooks.array_call == NULL) {
        PyErr_SetString(PyExc_NotImplementedError, "array math is not available");
        return NULL;
    }
    return st->hooks.array_call(st, which, self, args, kwargs);
}

static PyObject *
array_astype(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return math_call(self, CUKIT_CALL_ASTYPE, args, kwargs);
}

static PyObject *
array_nonzero(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return math_call(self, CUKIT_CALL_NONZERO, NULL, NULL);
}

static PyObject *
array_take(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return math_call(self, CUKIT_CALL_TAKE, args, kwargs);
}

static PyObject *
array_put(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return math_call(self, CUKIT_CALL_PUT, args, kwargs);
}

static PyObject *
array_compress(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return math_call(self, CUKIT_CALL_COMPRESS, args, kwargs);
}

static PyObject *
array_conj(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return math_call(self, CUKIT_CALL_CONJ, NULL, NULL);
}

static PyObject *
array_get_real(PyObject *self, void *c)
{
    return math_call(self, CUKIT_CALL_REAL, NULL, NULL);
}

static PyObject *
array_get_imag(PyObject *self, void *c)
{
    return math_call(self, CUKIT_CALL_IMAG, NULL, NULL);
}

/* Reductions and scans: Array.sum(...) is cukit.sum(a, ...); the order is compute/'s. */
#define RMETHOD(i, name)                                                                \
    static PyObject *array_##name(PyObject *self, PyObject *args, PyObject *kwargs)     \
    {                                                                                   \
        return math_call(self, CUKIT_CALL_REDUCE + (i), args, kwargs);                  \
    }
RMETHOD(0, sum) RMETHOD(1, prod) RMETHOD(2, max) RMETHOD(3, min) RMETHOD(4, argmax)
RMETHOD(5, argmin) RMETHOD(6, all) RMETHOD(7, any) RMETHOD(8, mean) RMETHOD(9, var)
RMETHOD(10, std) RMETHOD(11, ptp) RMETHOD(12, cumsum) RMETHOD(13, cumprod)
#undef RMETHOD

/* a.dot(b): a matrix b (2-D, where numpy's dot is matmul) goes to the @ hook; vectors
 * to the reduction. */
static PyObject *
array_dot(PyObject *self, PyObject *args, PyObject *kwargs)
{
    cukit_state *st = ((cukit_Array *)self)->st;
    if (st->hooks.array_matmul && kwargs == NULL && PyTuple_GET_SIZE(args) == 1) {
        PyObject *b = PyTuple_GET_ITEM(args, 0);
        if (Py_IS_TYPE(b, st->ArrayType) && ((cukit_Array *)b)->ndim == 2 &&
            ((cukit_Array *)self)->ndim >= 1)
            return st->hooks.array_matmul(st, self, b);
    }
    return math_call(self, CUKIT_CALL_REDUCE + 14, args, kwargs);
}

/* ------------------------------------------------------------------ type slots */

static void
array_dealloc(cukit_Array *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_XDECREF(self->buffer);
    Py_XDECREF(self->owner);
    Py_XDECREF(self->dtype);
    Py_XDECREF(self->device);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static Py_ssize_t
array_len(cukit_Array *self)
{
    if (self->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d array");
        return -1;
    }
    return self->shape[0];
}

static PyObject *
array_get_shape(cukit_Array *self, void *c)
{
    return cukit_array_shape(self);
}

static PyObject *
array_get_strides(cukit_Array *self, void *c)
{
    return cukit_array_strides(self);
}

static PyObject *
array_get_ptr(cukit_Array *self, void *c)
{
    if (cukit_array_check_live(self) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(cukit_array_ptr(self));
}

static PyObject *
array_get_size(cukit_Array *self, void *c)
{
    return PyLong_FromSsize_t(self->size);
}

static PyObject *
array_get_nbytes(cukit_Array *self, void *c)
{
    return PyLong_FromSsize_t(self->nbytes);
}

static PyObject *
array_get_itemsize(cukit_Array *self, void *c)
{
    return PyLong_FromSsize_t(self->itemsize);
}

static PyObject *
array_get_ndim(cukit_Array *self, void *c)
{
    return PyLong_FromLong(self->ndim);
}

static PyObject *
array_get_device(cukit_Array *self, void *c)
{
    return Py_NewRef(self->device);
}

static PyObject *
array_get_buffer(cukit_Array *self, void *c)
{
    return Py_NewRef(self->buffer ? (PyObject *)self->buffer : Py_None);
}

static PyObject *
array_get_contiguous(cukit_Array *self, void *c)
{
    return PyBool_FromLong(cukit_array_is_c_contig(self));
}

static PyObject *
array_get_flags(cukit_Array *self, void *c)
{
    return cukit_array_flags(self);
}

static PyObject *
array_get_cai(cukit_Array *self, void *c)
{
    if (cukit_array_check_live(self) < 0)
        return NULL;
    PyObject *shape = cukit_array_shape(self);
    PyObject *strides = !shape ? NULL
                        : cukit_array_is_c_contig(self) ? Py_NewRef(Py_None)
                                            : cukit_array_strides(self);
    PyObject *typestr = strides ? PyObject_GetAttrString(self->dtype, "str") : NULL;
    PyObject *out = NULL;
    if (typestr)
        out = Py_BuildValue("{sOsOs(KO)sisOsi}", "shape", shape, "typestr", typestr, "data",
                            (unsigned long long)cukit_array_ptr(self),
                            (self->flags & CUKIT_ARRAY_READONLY) ? Py_True : Py_False,
                            "version", 3, "strides", strides, "stream", 1);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(typestr);
    return out;
}

static PyMemberDef array_members[] = {
    {"dtype", Py_T_OBJECT_EX, offsetof(cukit_Array, dtype), Py_READONLY, "The numpy dtype."},
    {NULL},
};

static PyGetSetDef array_getset[] = {
    {"shape", (getter)array_get_shape, NULL, "Tuple of dimensions."},
    {"strides", (getter)array_get_strides, NULL,
     "Tuple of byte steps per dimension; a view's may be any multiple, or negative."},
    {"ptr", (getter)array_get_ptr, NULL, "Device address of the first element."},
    {"size", (getter)array_get_size, NULL, "Number of elements."},
    {"nbytes", (getter)array_get_nbytes, NULL, "Bytes of the elements (size * itemsize)."},
    {"itemsize", (getter)array_get_itemsize, NULL, "Bytes per element."},
    {"ndim", (getter)array_get_ndim, NULL, "Number of dimensions."},
    {"device", (getter)array_get_device, NULL, "The Device that holds the data."},
    {"buffer", (getter)array_get_buffer, NULL,
     "The Buffer that owns the memory, shared by views; None for imported memory."},
    {"is_contiguous", (getter)array_get_contiguous, NULL,
     "True when the elements are in C order with no gaps (what a kernel pointer needs)."},
    {"flags", (getter)array_get_flags, NULL,
     "C_CONTIGUOUS, F_CONTIGUOUS and WRITEABLE, as numpy names them: flags['C_CONTIGUOUS'] "
     "or flags.c_contiguous."},
    {"T", (getter)cukit_array_get_T, NULL, "The transposed view (dimensions reversed)."},
    {"mT", (getter)cukit_array_get_mT, NULL,
     "The matrix transpose: a view with the last two dimensions swapped."},
    {"flat", (getter)cukit_array_get_flat, NULL, "The elements in C order as a read-only 1-D "
     "array: a view where the layout allows one (as ravel()), else a copy."},
    {"__cuda_array_interface__", (getter)array_get_cai, NULL,
     "The CUDA Array Interface (version 3), for CuPy, PyTorch, numba and others."},
    {"real", (getter)array_get_real, NULL,
     "The real part: a view for complex arrays, the array itself otherwise."},
    {"imag", (getter)array_get_imag, NULL,
     "The imaginary part: a view for complex arrays, zeros (a new array) otherwise."},
    {NULL},
};

static PyMethodDef array_methods[] = {
    {"get", (PyCFunction)(void (*)(void))cukit_array_get, METH_VARARGS | METH_KEYWORDS,
     "get(out=None, stream=None) -> numpy.ndarray: copy to the host; into `out` when given "
     "(any layout; with stream= a C-contiguous one). With stream= the copy is only queued: "
     "the host array holds the data once the stream is synchronized."},
    {"set", (PyCFunction)(void (*)(void))cukit_array_set, METH_VARARGS | METH_KEYWORDS,
     "set(host, stream=None): copy from a host array of the same shape and dtype (or bytes "
     "of equal size). With stream= the copy is only queued: keep the host array alive and "
     "unchanged until the stream is synchronized."},
    {"copy", (PyCFunction)(void (*)(void))cukit_array_copy_method, METH_VARARGS | METH_KEYWORDS,
     "copy(stream=None) -> Array: a new C-contiguous device array with the same data."},
    {"to", (PyCFunction)(void (*)(void))cukit_array_to, METH_VARARGS | METH_KEYWORDS,
     "to(device, *, stream=None) -> Array: this array when it is on `device`, else a "
     "C-contiguous copy there (cuMemcpyPeerAsync; queued on `stream`, one of the "
     "destination device, after the work queued on the source device's default stream)."},
    {"fill", (PyCFunction)(void (*)(void))cukit_array_fill, METH_VARARGS | METH_KEYWORDS,
     "fill(value, stream=None): set every element, with the memset family where the layout "
     "allows, else a fill kernel (asynchronous on the stream; capturable into a graph)."},
    {"reshape", (PyCFunction)cukit_array_reshape, METH_VARARGS,
     "reshape(*shape) -> Array: a view with another shape (one dimension may be -1). "
     "Raises ValueError when the layout cannot be reshaped without copying."},
    {"transpose", (PyCFunction)cukit_array_transpose, METH_VARARGS,
     "transpose(*axes) -> Array: a view with the dimensions permuted (reversed by default)."},
    {"free", (PyCFunction)cukit_array_free, METH_NOARGS,
     "Free the device memory now (views of it become unusable); for imported memory, let go "
     "of the producer. Safe to call twice."},
    {"__dlpack__", (PyCFunction)(void (*)(void))cukit_array_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a DLPack "
     "capsule sharing this array's memory."},
    {"__dlpack_device__", (PyCFunction)cukit_array_dlpack_device, METH_NOARGS,
     "__dlpack_device__() -> (2, ordinal): kDLCUDA and the device."},
    {"astype", (PyCFunction)(void (*)(void))array_astype, METH_VARARGS | METH_KEYWORDS,
     "astype(dtype, copy=True, stream=None) -> Array: the values cast to dtype (numpy's "
     "unsafe cast), in a new C-contiguous array; the array itself when copy=False and the "
     "dtype is its own."},
    {"conj", (PyCFunction)array_conj, METH_NOARGS, "conj() -> Array: cukit.conjugate(a)."},
    {"__array__", (PyCFunction)(void (*)(void))cukit_array_dunder_array,
     METH_VARARGS | METH_KEYWORDS,
     "Refused with TypeError: numpy cannot read device memory; a.get() copies to the host."},
    {"__array_ufunc__", (PyCFunction)(void (*)(void))cukit_array_ufunc,
     METH_VARARGS | METH_KEYWORDS,
     "numpy's ufuncs on cukit arrays run cukit's (np.exp(a) is cukit.exp(a))."},
    {"__array_function__", (PyCFunction)(void (*)(void))cukit_array_function,
     METH_VARARGS | METH_KEYWORDS,
     "numpy's functions on cukit arrays run cukit's (np.concatenate([a, b])); one cukit "
     "lacks raises TypeError naming it."},
    {"__reduce__", (PyCFunction)cukit_array_reduce, METH_NOARGS,
     "Pickling: the data through host memory, back to the same device."},
    {"_rebuild", (PyCFunction)cukit_array_rebuild, METH_VARARGS | METH_CLASS,
     "_rebuild(host, device) -> Array: what unpickling calls."},
    {"nonzero", (PyCFunction)array_nonzero, METH_NOARGS,
     "nonzero() -> tuple of Arrays: cukit.nonzero(a)."},
    {"take", (PyCFunction)(void (*)(void))array_take, METH_VARARGS | METH_KEYWORDS,
     "take(indices, axis=None, out=None, mode='raise') -> Array: cukit.take(a, ...)."},
    {"put", (PyCFunction)(void (*)(void))array_put, METH_VARARGS | METH_KEYWORDS,
     "put(ind, v, mode='raise'): cukit.put(a, ...)."},
    {"compress", (PyCFunction)(void (*)(void))array_compress, METH_VARARGS | METH_KEYWORDS,
     "compress(condition, axis=None) -> Array: cukit.compress(condition, a, ...)."},
#define RM(name) {#name, (PyCFunction)(void (*)(void))array_##name, METH_VARARGS | METH_KEYWORDS, \
                  #name "(...) -> Array: cukit." #name "(a, ...)."}
    RM(sum), RM(prod), RM(max), RM(min), RM(argmax), RM(argmin), RM(all), RM(any), RM(mean),
    RM(var), RM(std), RM(ptp), RM(cumsum), RM(cumprod), RM(dot),
#undef RM
    {"conjugate", (PyCFunction)array_conj, METH_NOARGS, "conjugate() -> Array: cukit.conjugate(a)."},
    {"item", (PyCFunction)cukit_array_item, METH_VARARGS,
     "item(*index) -> the element as a Python scalar (copied to the host, as numpy's)."},
    {"tolist", (PyCFunction)cukit_array_tolist, METH_NOARGS,
     "tolist() -> nested lists of Python scalars (a scalar for a 0-d array)."},
    {"__complex__", (PyCFunction)cukit_array_complex, METH_NOARGS,
     "complex(a) of a one-element array."},
    {"__format__", (PyCFunction)cukit_array_format_spec, METH_O,
     "format(a, spec): a 0-d array formats as its element does."},
    {NULL},
};

static PyType_Slot array_slots[] = {
    {Py_tp_doc, "Array: an N-D array in device memory; views share it.\n\n"
                "Made by cukit.to_device, empty, zeros, empty_like, asarray, from_dlpack, "
                "and by indexing, reshape and transpose (views)."},
    {Py_tp_dealloc, array_dealloc},
    {Py_tp_repr, cukit_array_repr},
    {Py_tp_str, cukit_array_str},
    {Py_tp_members, array_members},
    {Py_tp_getset, array_getset},
    {Py_tp_methods, array_methods},
    {Py_sq_length, array_len},
    {Py_sq_item, cukit_array_sq_item},
    {Py_tp_iter, cukit_array_iter},
    {Py_mp_length, array_len},
    {Py_mp_subscript, cukit_array_subscript},
    {Py_mp_ass_subscript, cukit_array_ass_subscript},
#define BINSLOTS(slot, fn) {Py_nb_##slot, array_nb_##fn}, {Py_nb_inplace_##slot, array_nb_i##fn},
    BINSLOTS(add, add) BINSLOTS(subtract, sub) BINSLOTS(multiply, mul)
    BINSLOTS(true_divide, truediv) BINSLOTS(floor_divide, floordiv) BINSLOTS(remainder, mod)
    BINSLOTS(lshift, lshift) BINSLOTS(rshift, rshift) BINSLOTS(and, and) BINSLOTS(or, or)
    BINSLOTS(xor, xor)
#undef BINSLOTS
    {Py_nb_power, array_nb_pow},
    {Py_nb_inplace_power, array_nb_ipow},
    {Py_nb_negative, array_nb_neg},
    {Py_nb_positive, array_nb_pos},
    {Py_nb_absolute, array_nb_abs},
    {Py_nb_invert, array_nb_invert},
    {Py_nb_bool, array_nb_bool},
    {Py_nb_matrix_multiply, array_nb_matmul},
    {Py_nb_float, cukit_array_float},
    {Py_nb_int, cukit_array_int},
    {Py_nb_index, cukit_array_index},
    {Py_tp_richcompare, array_richcompare},
    {0, NULL},
};

static PyType_Spec array_spec = {
    .name = "cukit.Array",
    .basicsize = sizeof(cukit_Array),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = array_slots,
};

/* hooks.array_ref: what the launch layer reads of an Array argument. */
static void
array_ref(PyObject *obj, cukit_array_ref *out)
{
    const cukit_Array *a = (const cukit_Array *)obj;
    out->device = a->device;
    out->live = cukit_array_live(a);
    out->ptr = out->live ? cukit_array_ptr(a) : 0;
    out->nbytes = a->nbytes;
    out->typecode = a->typecode;
    out->c_contiguous = (a->flags & CUKIT_ARRAY_C_CONTIG) != 0;
}

/* hooks.array_wrap, for Module.get_global. */
static PyObject *
array_wrap_hook(cukit_state *st, cukit_Device *dev, unsigned long long base, PyObject *owner,
                PyObject *dtype, int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides,
                int readonly)
{
    return (PyObject *)cukit_array_wrap(st, dev, (CUdeviceptr)base, owner, dtype, ndim, shape,
                                        strides, readonly);
}

int
cukit_array_setup(PyObject *module, cukit_state *st)
{
    st->hooks.array_ref = array_ref;
    st->hooks.array_wrap = array_wrap_hook;
    PyMethodDef *methods = cukit_array_methods_with_shape(array_methods);
    if (methods == NULL)
        return -1;
    for (PyType_Slot *slot = array_slots; slot->slot; slot++)
        if (slot->slot == Py_tp_methods)
            slot->pfunc = methods;
    st->ArrayType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &array_spec, NULL);
    if (st->ArrayType == NULL || PyModule_AddType(module, st->ArrayType) < 0)
        return -1;
    return 0;
}
