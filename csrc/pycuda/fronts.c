/* fronts.c - cukit.pycuda's hot calls in C: Function(...) and its prepared calls, GPUArray + - *, ElementwiseKernel(...); an argument to convert goes once to the subclass's Python */
#include "pycuda/pycuda.h"

#include <structmember.h>

/* Arguments a front passes on from its own stack; a call with more goes the Python way. */
#define FRONT_MAXARGS 32

/* A front's call failed: a cukit error leaves the layer as the layer's class for it
 * (cukit.pycuda._errors.at_edge, registered with _PycudaFunction._register). Returns NULL. */
static PyObject *
at_edge(cukit_state *st)
{
    PyObject *edge = st->pycuda->at_edge;
    if (edge == NULL || !PyErr_ExceptionMatches(st->exc[CUKIT_EXC_CUDA]))
        return NULL;
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb != NULL)
        PyException_SetTraceback(v, tb);
    PyObject *r = PyObject_CallOneArg(edge, v);
    if (r != NULL)
        PyErr_SetObject((PyObject *)Py_TYPE(r), r);
    Py_XDECREF(r);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    return NULL;
}

/* self.<name>(*args, **kw) with the call's own vector: the Python way, which
 * converts the arguments once and calls the kernel once. */
static PyObject *
python_way(PyObject *self, PyObject *name, PyObject *const *args, size_t nargsf,
           PyObject *kwnames)
{
    PyObject *meth = PyObject_GetAttr(self, name);
    if (meth == NULL)
        return NULL;
    PyObject *r = PyObject_Vectorcall(meth, args, PyVectorcall_NARGS(nargsf), kwnames);
    Py_DECREF(meth);
    return r;
}

/* A front that holds a cukit callable in _k and is called through vectorcall. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    cukit_state *st;
    PyObject *k;        /* strong ref or NULL: what the call calls (_k) */
    PyObject *pointees; /* strong ref or NULL: tuple, per parameter the numpy dtype a pointer
                           parameter declares, or None (_pointees) */
    PyObject *pending;  /* strong ref or NULL: list of the module's texture references
                           changed since the last launch (_pending) */
    PyObject *lp_key;   /* strong ref or NULL: (grid, block, shared_size) of lp (_lp_key) */
    PyObject *lp;       /* strong ref or NULL: the last prepared launch (_lp) */
} front_call;

static PyMemberDef front_call_members[] = {
    {"_k", T_OBJECT, offsetof(front_call, k), 0, "the cukit callable the call uses"},
    {"_pointees", T_OBJECT, offsetof(front_call, pointees), 0,
     "per parameter, the dtype a pointer parameter declares, or None"},
    {"_pending", T_OBJECT, offsetof(front_call, pending), 0,
     "the module's texture references changed since the last launch"},
    {"_lp_key", T_OBJECT, offsetof(front_call, lp_key), 0,
     "(grid, block, shared_size) the last prepared launch was made for"},
    {"_lp", T_OBJECT, offsetof(front_call, lp), 0, "the last prepared launch"},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(front_call, vectorcall), READONLY, NULL},
    {NULL},
};

static int
front_call_traverse(PyObject *op, visitproc visit, void *arg)
{
    front_call *self = (front_call *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->k);
    Py_VISIT(self->pointees);
    Py_VISIT(self->pending);
    Py_VISIT(self->lp_key);
    Py_VISIT(self->lp);
    return 0;
}

static int
front_call_clear(PyObject *op)
{
    front_call *self = (front_call *)op;
    Py_CLEAR(self->k);
    Py_CLEAR(self->pointees);
    Py_CLEAR(self->pending);
    Py_CLEAR(self->lp_key);
    Py_CLEAR(self->lp);
    return 0;
}

static void
front_call_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    front_call_clear(op);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyObject *front_function_call(PyObject *, PyObject *const *, size_t, PyObject *);
static PyObject *front_elementwise_call(PyObject *, PyObject *const *, size_t, PyObject *);

static PyObject *
front_call_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    (void)args;
    (void)kwargs;
    cukit_state *st = cukit_state_of_type(type);
    front_call *self = (front_call *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->st = st;
    self->vectorcall = PyType_IsSubtype(type, st->pycuda->FrontFunctionType) ? front_function_call
                                                                        : front_elementwise_call;
    return (PyObject *)self;
}

/* ------------------------------------------------------------------ arguments */

typedef struct {
    PyObject_HEAD
    PyObject *a;         /* strong ref or NULL: the cukit.Array (_a) */
    PyObject *gpudata;   /* strong ref or NULL: what owns the memory */
    PyObject *base;      /* strong ref or NULL */
    PyObject *allocator; /* strong ref or NULL */
} front_array;

/* What argument i goes to the callable as: v itself, a GPUArray's cukit.Array, or
 * NULL when it needs the Python conversion (_call_v). An array goes as it is only
 * when the parameter declares no dtype or declares its own (a C-contiguous one for
 * a GPUArray, whose address PyCUDA passes whatever its layout); In/Out, host arrays,
 * Python numbers and other objects go the Python way. `any_other` 1: anything that
 * is not an array goes as it is (ElementwiseKernel, whose engine converts). Borrowed. */
static PyObject *
direct_arg(cukit_state *st, PyObject *pointees, Py_ssize_t i, PyObject *v, int any_other)
{
    int gpuarray = PyObject_TypeCheck(v, st->pycuda->FrontArrayType);
    if (gpuarray)
        v = ((front_array *)v)->a;
    if (v != NULL && Py_IS_TYPE(v, st->ArrayType)) {
        cukit_Array *a = (cukit_Array *)v;
        PyObject *want = pointees && PyTuple_Check(pointees) && i < PyTuple_GET_SIZE(pointees)
                             ? PyTuple_GET_ITEM(pointees, i)
                             : Py_None;
        if (want == Py_None)
            return gpuarray && !any_other ? NULL : v;
        if (a->dtype != want || (gpuarray && !(a->flags & CUKIT_ARRAY_C_CONTIG)))
            return NULL;
        return v;
    }
    if (gpuarray)
        return NULL;
    if (any_other || PyObject_TypeCheck(v, st->memory->BufferType) ||
        (st->np_generic != NULL && PyObject_TypeCheck(v, (PyTypeObject *)st->np_generic)))
        return v;
    return NULL;
}

/* callable(*vec[1..n], kw) with strong references held over the call: a GPUArray's
 * array and the front's callable are members another thread may replace while the
 * call releases the GIL. New ref or NULL. */
static PyObject *
call_held(PyObject *callable, PyObject **vec, Py_ssize_t n, PyObject *kwnames)
{
    Py_INCREF(callable);
    for (Py_ssize_t i = 1; i <= n; i++)
        Py_INCREF(vec[i]);
    PyObject *r = PyObject_Vectorcall(callable, vec + 1,
                                      (size_t)n | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
    for (Py_ssize_t i = 1; i <= n; i++)
        Py_DECREF(vec[i]);
    Py_DECREF(callable);
    return r;
}

/* ------------------------------------------------------------------ Function */

/* f(*args, block=, grid=(1, 1), stream=None, shared=0): when every argument goes as it
 * is (direct_arg), the kernel's own call with grid and block (and shared_mem, stream
 * when given). Otherwise (another keyword, a missing block, an argument to convert,
 * a texture reference to write first) the subclass's _call_v, which converts the
 * arguments once and calls the kernel once. Nothing is tried twice. */
static PyObject *
front_function_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    front_call *self = (front_call *)op;
    cukit_state *st = self->st;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf), nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *grid = NULL, *block = NULL, *stream = NULL, *shared = NULL;
    if (self->k == NULL || n > FRONT_MAXARGS ||
        (self->pending != NULL && PyList_Check(self->pending) && PyList_GET_SIZE(self->pending)))
        goto slow;
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i), *v = args[n + i];
        if (key == st->launch->str_block || PyUnicode_CompareWithASCIIString(key, "block") == 0)
            block = v;
        else if (key == st->launch->str_grid || PyUnicode_CompareWithASCIIString(key, "grid") == 0)
            grid = v;
        else if (key == st->launch->str_stream || PyUnicode_CompareWithASCIIString(key, "stream") == 0)
            stream = v;
        else if (PyUnicode_CompareWithASCIIString(key, "shared") == 0)
            shared = v;
        else
            goto slow; /* texrefs=, time_kernel=, or a keyword to explain */
    }
    if (block == NULL || block == Py_None)
        goto slow;
    PyObject *vec[FRONT_MAXARGS + 5];
    vec[0] = NULL; /* PY_VECTORCALL_ARGUMENTS_OFFSET's slot */
    for (Py_ssize_t i = 0; i < n; i++)
        if ((vec[1 + i] = direct_arg(st, self->pointees, i, args[i], 0)) == NULL)
            goto slow;
    vec[1 + n] = grid ? grid : st->pycuda->front_grid_1;
    vec[2 + n] = block;
    PyObject *kw = st->pycuda->front_kw_launch;
    if ((stream == NULL || stream == Py_None) && shared == NULL)
        kw = st->pycuda->front_kw_plain;
    else {
        vec[3 + n] = shared ? shared : st->pycuda->front_zero;
        vec[4 + n] = stream ? stream : Py_None;
    }
    PyObject *r = call_held(self->k, vec, n, kw);
    return r != NULL ? r : at_edge(st);
slow:
    return python_way(op, st->pycuda->front_str_call_v, args, nargsf, kwnames);
}

/* f._launch_prepared(p, *args): p(*args), a prepared launch's call, when every argument
 * goes as it is: a Python int (an address too), float or bytes, or what direct_arg passes.
 * Otherwise f._prepared_slow(p, args), which converts the arguments once and calls p
 * once. Nothing is tried twice. */
static PyObject *
front_prepared(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    front_call *self = (front_call *)op;
    cukit_state *st = self->st;
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError,
                        "_launch_prepared(p, *args) takes the prepared launch first");
        return NULL;
    }
    Py_ssize_t n = nargs - 1, i = 0;
    PyObject *vec[FRONT_MAXARGS + 1];
    vec[0] = NULL; /* PY_VECTORCALL_ARGUMENTS_OFFSET's slot */
    if (n <= FRONT_MAXARGS) {
        for (; i < n; i++) {
            PyObject *v = args[1 + i];
            PyObject *d = PyLong_Check(v) || PyFloat_CheckExact(v) || PyBytes_CheckExact(v)
                              ? v
                              : direct_arg(st, self->pointees, i, v, 0);
            if (d == NULL)
                break;
            vec[1 + i] = d;
        }
    }
    if (n <= FRONT_MAXARGS && i == n) {
        PyObject *r = call_held(args[0], vec, n, NULL);
        return r != NULL ? r : at_edge(st);
    }
    PyObject *rest = PyTuple_New(n);
    if (rest == NULL)
        return NULL;
    for (i = 0; i < n; i++)
        PyTuple_SET_ITEM(rest, i, Py_NewRef(args[1 + i]));
    PyObject *r = PyObject_CallMethodObjArgs(op, st->pycuda->front_str_prepared_slow, args[0],
                                             rest, NULL);
    Py_DECREF(rest);
    return r;
}

/* _PycudaFunction._register(at_edge): the layer's converter of cukit errors, which the
 * fronts call on a failed call (cukit.pycuda._errors.at_edge). Set once at import. */
static PyObject *
front_register(PyObject *cls, PyObject *edge)
{
    cukit_state *st = cukit_state_of_type((PyTypeObject *)cls);
    if (!PyCallable_Check(edge)) {
        PyErr_SetString(PyExc_TypeError, "_register takes a callable");
        return NULL;
    }
    Py_XSETREF(st->pycuda->at_edge, Py_NewRef(edge));
    Py_RETURN_NONE;
}

/* f.prepared_call(grid, block, *args, shared_size=0): the launch prepared last (_lp,
 * for the grid, block and shared size in _lp_key, compared by identity as PyCUDA's
 * callers pass the same tuples) called from here as _launch_prepared calls it, when no
 * texture reference changed; any other call goes once to _prepared_call_py, which
 * flushes the references, prepares the launch and calls it. */
static PyObject *
front_prepared_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    front_call *self = (front_call *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *lk = self->lp_key, *shared = NULL;
    if (nargs < 2 || nargs - 2 > FRONT_MAXARGS || self->lp == NULL || lk == NULL ||
        !PyTuple_CheckExact(lk) || PyTuple_GET_SIZE(lk) != 3)
        goto slow;
    if (kwnames != NULL) {
        if (PyTuple_GET_SIZE(kwnames) != 1 ||
            PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "shared_size") != 0)
            goto slow;
        shared = args[nargs];
    }
    if (self->pending != NULL && PyList_Check(self->pending) && PyList_GET_SIZE(self->pending) > 0)
        goto slow;
    if (args[0] != PyTuple_GET_ITEM(lk, 0) || args[1] != PyTuple_GET_ITEM(lk, 1))
        goto slow;
    PyObject *want = PyTuple_GET_ITEM(lk, 2);
    int eq = PyObject_RichCompareBool(shared ? shared : self->st->pycuda->front_zero, want, Py_EQ);
    if (eq < 0)
        return NULL;
    if (!eq)
        goto slow;
    PyObject *vec[FRONT_MAXARGS + 1];
    vec[0] = self->lp;
    for (Py_ssize_t i = 2; i < nargs; i++)
        vec[i - 1] = args[i];
    return front_prepared(op, vec, nargs - 1);
slow:
    return python_way(op, self->st->pycuda->front_str_prepared_py, args, nargsf, kwnames);
}

static PyMethodDef function_methods[] = {
    {"_register", (PyCFunction)front_register, METH_O | METH_CLASS,
     "Set the layer's converter of cukit errors (cukit.pycuda._errors.at_edge)."},
    {"prepared_call", (PyCFunction)(void (*)(void))front_prepared_call,
     METH_FASTCALL | METH_KEYWORDS,
     "prepared_call(grid, block, *args, shared_size=0): launch with the types given to "
     "prepare(), PyCUDA's prepared call."},
    {"_launch_prepared", (PyCFunction)(void (*)(void))front_prepared, METH_FASTCALL,
     "_launch_prepared(p, *args): the prepared launch p's call with the arguments as they "
     "are, or _prepared_slow(p, args) when one needs converting."},
    {NULL},
};

static PyType_Slot function_slots[] = {
    {Py_tp_doc, "The C side of cukit.pycuda.driver.Function: its call."},
    {Py_tp_new, front_call_new},
    {Py_tp_dealloc, front_call_dealloc},
    {Py_tp_traverse, front_call_traverse},
    {Py_tp_clear, front_call_clear},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_members, front_call_members},
    {Py_tp_methods, function_methods},
    {0, NULL},
};

static PyType_Spec function_spec = {
    .name = "cukit._cukit._PycudaFunction",
    .basicsize = sizeof(front_call),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_HAVE_VECTORCALL,
    .slots = function_slots,
};

/* ------------------------------------------------------------------ GPUArray */

static PyMemberDef array_members[] = {
    {"_a", T_OBJECT, offsetof(front_array, a), 0, "the cukit.Array"},
    {"gpudata", T_OBJECT, offsetof(front_array, gpudata), 0, "what owns the memory"},
    {"base", T_OBJECT, offsetof(front_array, base), 0, "the array this one views"},
    {"allocator", T_OBJECT, offsetof(front_array, allocator), 0, "the allocator"},
    {NULL},
};

static int
array_traverse(PyObject *op, visitproc visit, void *arg)
{
    front_array *self = (front_array *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->a);
    Py_VISIT(self->gpudata);
    Py_VISIT(self->base);
    Py_VISIT(self->allocator);
    return 0;
}

static int
array_clear(PyObject *op)
{
    front_array *self = (front_array *)op;
    Py_CLEAR(self->a);
    Py_CLEAR(self->gpudata);
    Py_CLEAR(self->base);
    Py_CLEAR(self->allocator);
    return 0;
}

static void
array_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    if (tp->tp_weaklistoffset)
        PyObject_ClearWeakRefs(op);
    array_clear(op);
    tp->tp_free(op);
    Py_DECREF(tp);
}

/* A Python or numpy number the operators take as it is (numpy's rules for it are
 * cukit's); anything else goes the Python way. */
static int
plain_scalar(cukit_state *st, PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    if (t == &PyLong_Type || t == &PyFloat_Type || t == &PyComplex_Type || t == &PyBool_Type)
        return 1;
    return st->np_generic != NULL &&
           (PyObject_TypeCheck(o, (PyTypeObject *)st->np_floating) ||
            PyObject_TypeCheck(o, (PyTypeObject *)st->np_integer) ||
            PyObject_TypeCheck(o, (PyTypeObject *)st->np_bool));
}

/* A new GPUArray of self's type over cukit.Array r (stolen), with self's allocator; r
 * NULL: the operator's error, past the layer's edge. */
static PyObject *
array_result(front_array *self, PyObject *r, cukit_state *st)
{
    if (r == NULL)
        return at_edge(st);
    PyTypeObject *tp = Py_TYPE(self);
    front_array *g = (front_array *)tp->tp_alloc(tp, 0);
    if (g == NULL) {
        Py_DECREF(r);
        return NULL;
    }
    cukit_Array *ra = (cukit_Array *)r;
    g->a = r;
    g->gpudata = Py_NewRef(ra->buffer ? (PyObject *)ra->buffer : Py_None);
    g->base = Py_NewRef(Py_None);
    g->allocator = Py_NewRef(self->allocator ? self->allocator : Py_None);
    return (PyObject *)g;
}

/* x op y where x or y is a GPUArray: two GPUArrays of one
 * type and shape, or one and a plain number, run cukit's operator on the Arrays in C;
 * anything else goes to the Python method _binary(symbol, other, reflected). */
static int is_gpuarray(PyObject *o);

static PyObject *
array_binary(PyObject *x, PyObject *y, binaryfunc op, const char *symbol)
{
    int reflected = !is_gpuarray(x);
    front_array *self = (front_array *)(reflected ? y : x);
    PyObject *other = reflected ? x : y;
    PyObject *a = self->a;
    if (a != NULL && Py_TYPE(a) == ((cukit_Array *)a)->st->ArrayType) {
        cukit_state *st = ((cukit_Array *)a)->st;
        if (!reflected && Py_TYPE(other) == Py_TYPE(self)) {
            PyObject *o = ((front_array *)other)->a;
            cukit_Array *aa = (cukit_Array *)a, *oa = (cukit_Array *)o;
            if (o != NULL && Py_TYPE(o) == st->ArrayType && aa->ndim == oa->ndim &&
                memcmp(aa->shape, oa->shape, (size_t)aa->ndim * sizeof *aa->shape) == 0)
                return array_result(self, op(a, o), st);
        }
        else if (plain_scalar(st, other))
            return array_result(self, reflected ? op(other, a) : op(a, other), st);
    }
    return PyObject_CallMethod((PyObject *)self, "_binary", "sOO", symbol, other,
                               reflected ? Py_True : Py_False);
}

static PyObject *array_add(PyObject *x, PyObject *y);

/* A GPUArray (of any subclass) is known by its type's nb_add, this file's. */
static int
is_gpuarray(PyObject *o)
{
    return Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_add == array_add;
}

static PyObject *
array_add(PyObject *x, PyObject *y)
{
    return array_binary(x, y, PyNumber_Add, "+");
}

static PyObject *
array_sub(PyObject *x, PyObject *y)
{
    return array_binary(x, y, PyNumber_Subtract, "-");
}

static PyObject *
array_mul(PyObject *x, PyObject *y)
{
    return array_binary(x, y, PyNumber_Multiply, "*");
}

static PyType_Slot array_slots[] = {
    {Py_tp_doc, "The C side of cukit.pycuda.gpuarray.GPUArray: its fields and + - *."},
    {Py_tp_dealloc, array_dealloc},
    {Py_tp_traverse, array_traverse},
    {Py_tp_clear, array_clear},
    {Py_tp_members, array_members},
    {Py_nb_add, array_add},
    {Py_nb_subtract, array_sub},
    {Py_nb_multiply, array_mul},
    {0, NULL},
};

static PyType_Spec array_spec = {
    .name = "cukit._cukit._PycudaArray",
    .basicsize = sizeof(front_array),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = array_slots,
};

/* ------------------------------------------------------------------ ElementwiseKernel */

/* k(*args, **kw): GPUArrays become their cukit.Arrays and the engine's kernel runs,
 * when every array holds the dtype its parameter declares (direct_arg). An array of
 * another dtype (which PyCUDA runs, reading its memory as the declared type) goes to
 * the subclass's _call_v, which converts the arguments once and calls the kernel once. */
static PyObject *
front_elementwise_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    front_call *self = (front_call *)op;
    cukit_state *st = self->st;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf), nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (self->k == NULL || n + nk > FRONT_MAXARGS)
        goto slow;
    PyObject *vec[FRONT_MAXARGS + 1];
    vec[0] = NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if ((vec[1 + i] = direct_arg(st, self->pointees, i, args[i], 1)) == NULL)
            goto slow;
    for (Py_ssize_t i = n; i < n + nk; i++)
        vec[1 + i] = args[i];
    PyObject *r = call_held(self->k, vec, n, kwnames);
    return r != NULL ? r : at_edge(st);
slow:
    return python_way(op, st->pycuda->front_str_call_v, args, nargsf, kwnames);
}

static PyType_Slot elementwise_slots[] = {
    {Py_tp_doc, "The C side of cukit.pycuda.elementwise.ElementwiseKernel: its call."},
    {Py_tp_new, front_call_new},
    {Py_tp_dealloc, front_call_dealloc},
    {Py_tp_traverse, front_call_traverse},
    {Py_tp_clear, front_call_clear},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_members, front_call_members},
    {0, NULL},
};

static PyType_Spec elementwise_spec = {
    .name = "cukit._cukit._PycudaElementwise",
    .basicsize = sizeof(front_call),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_HAVE_VECTORCALL,
    .slots = elementwise_slots,
};

int
cukit_pycuda_setup(PyObject *module, cukit_state *st)
{
    st->pycuda->front_kw_plain = Py_BuildValue("(OO)", st->launch->str_grid, st->launch->str_block);
    st->pycuda->front_kw_launch = Py_BuildValue("(OOOO)", st->launch->str_grid, st->launch->str_block,
                                         st->launch->str_shared_mem, st->launch->str_stream);
    st->pycuda->front_grid_1 = Py_BuildValue("(ii)", 1, 1);
    st->pycuda->front_zero = PyLong_FromLong(0);
    st->pycuda->front_str_call_v = PyUnicode_InternFromString("_call_v");
    st->pycuda->front_str_prepared_slow = PyUnicode_InternFromString("_prepared_slow");
    st->pycuda->front_str_prepared_py = PyUnicode_InternFromString("_prepared_call_py");
    if (!st->pycuda->front_kw_plain || !st->pycuda->front_kw_launch || !st->pycuda->front_grid_1 ||
        !st->pycuda->front_zero || !st->pycuda->front_str_call_v ||
        !st->pycuda->front_str_prepared_slow || !st->pycuda->front_str_prepared_py)
        return -1;
    static const struct {
        PyType_Spec *spec;
        size_t offset;
    } types[] = {
        {&function_spec, offsetof(cukit_pycuda_state, FrontFunctionType)},
        {&array_spec, offsetof(cukit_pycuda_state, FrontArrayType)},
        {&elementwise_spec, offsetof(cukit_pycuda_state, FrontElementwiseType)},
    };
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        PyTypeObject **slot = (PyTypeObject **)((char *)st->pycuda + types[i].offset);
        *slot = (PyTypeObject *)PyType_FromModuleAndSpec(module, types[i].spec, NULL);
        if (*slot == NULL || PyModule_AddType(module, *slot) < 0)
            return -1;
    }
    return 0;
}
