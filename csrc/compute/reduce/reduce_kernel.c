/* reduce_kernel.c - cukit.ReductionKernel: a user's map, reduce and post-map expressions
 * run by the reduction engine, in CuPy's form and PyCUDA's
 *
 * CuPy's: ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2") --
 * typed or placeholder parameters, broadcasting, axis= and keepdims=, every layout the
 * engine has. PyCUDA's: ReductionKernel(numpy.float32, neutral="0", reduce_expr="a+b",
 * map_expr="x[i]*y[i]", arguments="float *x, float *y") -- pointers indexed by i over
 * the first array's size, a 0-d result; dtype_out may be a numpy struct dtype whose C
 * struct the preamble defines (ctype= names it; the accumulator is that struct too).
 * Each text is compiled under its own #line, so a compile error names it
 * (map_expr:1:7: error: ...). */
#include "compute/builders.h"
#include "compute/reduce/reduce_impl.h"

#include <ctype.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    cukit_state *st;            /* borrowed */
    int pycuda;
    int nparams, nin;
    ck_param params[CK_RMAXIN + 1];
    char ph_names[CK_MAXPH][CK_PNAME];
    int nph;
    int rtc, rph;               /* the reduce type: a dtype, or placeholder rph */
    PyObject *name, *map, *reduce, *post, *identity, *preamble; /* strong refs: str */
    PyObject *options;          /* strong ref: tuple of str */
    PyObject *odtype;           /* strong ref: a struct dtype_out (PyCUDA's form), else NULL */
    PyObject *octype;           /* strong ref: str, its C type name, else NULL */
    Py_ssize_t osize;           /* its itemsize */
    ck_kcache cache;
} ck_ReductionKernel;

/* PyCUDA's complex types: their header (pycuda-complex.hpp, which the preamble
 * includes) defines them; an operand declared so is that type in the kernel, so its
 * expressions can use the header's functions (pycuda::conj, .real(), ...). */
static const char *const pycuda_complex[] = {"pycuda::complex<float>", "pycuda::complex<double>",
                                             NULL};

/* CuPy's "T x, raw float32 y" lists; PyCUDA's "const float *x, int n" (no placeholders). */
static const ck_param_rules reduction_kernel_rules[2] = {
    {.who = "ReductionKernel", .max_in = CK_RMAXIN, .max = CK_RMAXIN + 1, .c_decls = 1,
     .placeholders = 1, .keep_ctypes = pycuda_complex},
    {.who = "ReductionKernel", .max_in = CK_RMAXIN, .max = CK_RMAXIN + 1, .c_decls = 1,
     .keep_ctypes = pycuda_complex},
};

static ck_param_list
param_list(ck_ReductionKernel *self)
{
    return (ck_param_list){self->params, &self->nparams, self->ph_names, &self->nph};
}

/* Parse a parameter list into self->params (kernel_params.c). 0 / -1. */
static int
parse_params(ck_ReductionKernel *self, PyObject *text, int output)
{
    ck_param_list list = param_list(self);
    return ck_params_parse(&reduction_kernel_rules[self->pycuda], &list, text, output);
}

/* ------------------------------------------------------------------ the call */

/* What a call's arguments bind: each input's kind and array, the placeholders' types,
 * every parameter's type, the accumulator's, and the device. Arrays borrowed. */
typedef struct {
    int ph_tc[CK_MAXPH];             /* each placeholder's typecode, -1 while unbound */
    int tcs[CK_RMAXIN + 1];          /* every parameter's typecode, the output's last */
    int kinds[CK_RMAXIN];            /* CK_OPND_* of each input */
    int weak[CK_RMAXIN];             /* CK_WEAK_* of a Python scalar input, else 0 */
    cukit_Array *arrays[CK_RMAXIN];  /* borrowed: the array inputs, NULL for scalars */
    cukit_Array *bcast[CK_RMAXIN];   /* borrowed: the arrays that broadcast (not raw) */
    int nb;
    int atc;                         /* the accumulator's typecode */
    cukit_Device *dev;               /* borrowed: the arrays' device */
} bound_args;

/* NULL, for `return no_array(PyErr_Format(...));` where an array is returned. */
static inline cukit_Array *
no_array(PyObject *always_null)
{
    (void)always_null;
    return NULL;
}

/* The call's keywords (values[i] named by kwnames[i]). 0 / -1 with TypeError. */
static int
read_keywords(ck_ReductionKernel *self, PyObject *const *values, PyObject *kwnames, PyObject **axis,
              PyObject **stream, PyObject **out_o, int *keepdims)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i), *v = values[i];
        if (PyUnicode_CompareWithASCIIString(key, "stream") == 0)
            *stream = v;
        else if (PyUnicode_CompareWithASCIIString(key, "out") == 0)
            *out_o = v;
        else if (!self->pycuda && PyUnicode_CompareWithASCIIString(key, "axis") == 0)
            *axis = v;
        else if (!self->pycuda && PyUnicode_CompareWithASCIIString(key, "keepdims") == 0) {
            if ((*keepdims = PyObject_IsTrue(v)) < 0)
                return -1;
        }
        else if (PyUnicode_CompareWithASCIIString(key, "allocator") == 0 ||
                 PyUnicode_CompareWithASCIIString(key, "reduce_dims") == 0)
            ;
        else {
            PyErr_Format(PyExc_TypeError, "%U() got an unexpected keyword argument %R", self->name,
                         key);
            return -1;
        }
    }
    return 0;
}

/* Bind the nin inputs in args to the parameters: arrays checked against their declared
 * types and placeholders, scalars kept weak (NEP 50). 0 / -1 with TypeError or
 * ValueError naming the argument. */
static int
bind_inputs(ck_ReductionKernel *self, PyObject *const *args, int nin, bound_args *b)
{
    cukit_state *st = self->st;
    for (int i = 0; i < CK_MAXPH; i++)
        b->ph_tc[i] = -1;
    b->nb = 0;
    b->dev = NULL;
    for (int k = 0; k < nin; k++) {
        const ck_param *p = &self->params[k];
        PyObject *v = args[k];
        b->arrays[k] = NULL;
        b->weak[k] = 0;
        if (Py_IS_TYPE(v, st->ArrayType)) {
            cukit_Array *a = (cukit_Array *)v;
            if (!cukit_array_live(a))
                return cukit_freed_error(), -1;
            if (!ck_math_tc(a->typecode))
                return ck_failed(PyErr_Format(PyExc_TypeError,
                                              "%U(): argument %s has dtype %S, which "
                                              "cukit kernels do not take",
                                              self->name, p->name, a->dtype));
            if (b->dev && a->device != b->dev)
                return ck_failed(PyErr_Format(
                    PyExc_ValueError, "%U(): the arrays are on different devices", self->name));
            b->dev = a->device;
            b->arrays[k] = a;
            b->kinds[k] = p->raw ? CK_OPND_RAW : CK_OPND_ARRAY;
            if (p->tc < 0) {
                if (b->ph_tc[p->ph] >= 0 && b->ph_tc[p->ph] != a->typecode)
                    return ck_failed(PyErr_Format(PyExc_TypeError,
                                                  "%U(): type placeholder %s is bound to "
                                                  "both %s and %s; cast one with astype",
                                                  self->name, self->ph_names[p->ph],
                                                  ck_dtypes[b->ph_tc[p->ph]].name,
                                                  ck_dtypes[a->typecode].name));
                b->ph_tc[p->ph] = a->typecode;
            }
            else if (p->tc != a->typecode) {
                return ck_failed(PyErr_Format(PyExc_TypeError,
                                              "%U(): argument %s is declared %s but the "
                                              "array is %S; convert it with .astype(%s)",
                                              self->name, p->name, ck_dtypes[p->tc].name, a->dtype,
                                              ck_dtypes[p->tc].name));
            }
            if (p->raw && !(a->flags & CUKIT_ARRAY_C_CONTIG))
                return ck_failed(
                    PyErr_Format(PyExc_ValueError,
                                 "%U(): argument %s is indexed by the code "
                                 "and must be C-contiguous; pass cukit.ascontiguousarray(x)",
                                 self->name, p->name));
            if (!p->raw)
                b->bcast[b->nb++] = a;
            continue;
        }
        if (p->raw)
            return ck_failed(PyErr_Format(PyExc_TypeError,
                                          "%U(): argument %s must be a cukit.Array, not "
                                          "%s",
                                          self->name, p->name, Py_TYPE(v)->tp_name));
        if (cukit_numpy(st) < 0)
            return -1;
        if (PyObject_TypeCheck(v, (PyTypeObject *)st->np_ndarray))
            return ck_failed(
                PyErr_Format(PyExc_TypeError,
                             "%U(): argument %s is a numpy array in host "
                             "memory; copy it to the device first with cukit.to_device(x)",
                             self->name, p->name));
        b->kinds[k] = CK_OPND_SCALAR;
        if (PyBool_Check(v)) b->weak[k] = CK_WEAK_BOOL;
        else if (PyLong_Check(v)) b->weak[k] = CK_WEAK_INT;
        else if (PyFloat_Check(v) && !PyObject_TypeCheck(v, (PyTypeObject *)st->np_generic))
            b->weak[k] = CK_WEAK_FLOAT;
        else if (!PyObject_TypeCheck(v, (PyTypeObject *)st->np_generic))
            return ck_failed(PyErr_Format(PyExc_TypeError,
                                          "%U(): argument %s must be a cukit.Array or a "
                                          "scalar, not %s",
                                          self->name, p->name, Py_TYPE(v)->tp_name));
    }
    for (int k = 0; k < nin; k++) {
        const ck_param *p = &self->params[k];
        if (b->kinds[k] != CK_OPND_SCALAR || p->tc >= 0 || b->ph_tc[p->ph] >= 0)
            continue;
        if (b->weak[k]) {
            b->ph_tc[p->ph] = ck_weak_tc(b->weak[k], -1);
        }
        else {
            PyObject *dt = PyObject_GetAttr(args[k], st->memory->str_dtype);
            b->ph_tc[p->ph] = dt ? cukit_typecode_of_dtype(dt) : -1;
            Py_XDECREF(dt);
            if (b->ph_tc[p->ph] < 0)
                return -1;
        }
    }
    for (int k = 0; k <= nin; k++) {
        const ck_param *p = &self->params[k];
        b->tcs[k] = p->tc >= 0 ? p->tc : b->ph_tc[p->ph];
        if (b->tcs[k] < 0)
            return ck_failed(PyErr_Format(PyExc_TypeError,
                                          "%U(): cannot tell type %s of %s from the "
                                          "arguments",
                                          self->name, self->ph_names[p->ph], p->name));
    }
    b->atc = self->rtc >= 0 ? self->rtc : b->ph_tc[self->rph];
    if (b->atc < 0)
        return ck_failed(PyErr_Format(PyExc_TypeError,
                                      "%U(): cannot tell the reduce type from the "
                                      "arguments",
                                      self->name));
    if (b->dev == NULL)
        return ck_failed(PyErr_Format(PyExc_TypeError,
                                      "%U() needs at least one cukit.Array argument", self->name));
    return 0;
}

/* The output: out_o checked (an Array of the reduced shape and the output's dtype),
 * or a new array. New ref or NULL. */
static cukit_Array *
output_of(ck_ReductionKernel *self, PyObject *out_o, cukit_Device *dev, int otc, int ond,
          const Py_ssize_t *oshape)
{
    cukit_state *st = self->st;
    cukit_Array *out;
    if (out_o && out_o != Py_None) {
        if (!Py_IS_TYPE(out_o, st->ArrayType))
            return no_array(PyErr_Format(PyExc_TypeError, "%U(): the output must be a cukit.Array",
                                         self->name));
        out = (cukit_Array *)out_o;
        int same = out->typecode == otc;
        if (same && self->odtype && (same = PyObject_RichCompareBool(out->dtype, self->odtype,
                                                                     Py_EQ)) < 0)
            return NULL;
        if (!same || out->ndim != ond ||
            memcmp(out->shape, oshape, sizeof(Py_ssize_t) * (size_t)ond)) {
            if (self->odtype)
                return no_array(PyErr_Format(PyExc_ValueError,
                                             "%U(): the output must be an array of "
                                             "dtype %S and the reduced shape",
                                             self->name, self->odtype));
            return no_array(PyErr_Format(PyExc_ValueError,
                                         "%U(): the output must be a %s array of the "
                                         "reduced shape",
                                         self->name, ck_dtypes[otc].name));
        }
        Py_INCREF(out);
    }
    else if (self->odtype) {
        if ((out = cukit_array_new(st, dev, self->odtype, CUKIT_TC_OTHER, self->osize, ond,
                                   oshape)) == NULL)
            return NULL;
    }
    else if ((out = ck_empty(st, dev, otc, ond, oshape)) == NULL) {
        return NULL;
    }
    return out;
}

/* The code generator's spec of this call; *head (new ref, the typedefs and the preamble)
 * holds the text spec.head points into. 0 / -1. */
static int
spec_of(ck_ReductionKernel *self, const bound_args *b, int nin, ck_rspec *out_spec,
        PyObject **out_head)
{
    ck_rspec spec;
    memset(&spec, 0, sizeof spec);
    spec.nin = nin;
    spec.user = 1;
    spec.index = self->pycuda ? "i" : NULL;
    int widest = 1;
    for (int k = 0; k <= nin; k++) {
        spec.tc[k] = b->tcs[k];
        spec.names[k] = self->params[k].name;
        if (k < nin) {
            spec.kind[k] = b->kinds[k];
            spec.in_ctype[k] = self->params[k].ctype;
            if (b->kinds[k] == CK_OPND_ARRAY && ck_dtypes[b->tcs[k]].size > widest)
                widest = ck_dtypes[b->tcs[k]].size;
        }
    }
    spec.vec = widest >= 16 ? 1 : 16 / widest;
    /* a struct is the accumulator and the output, and the preamble defines it */
    const char *octype = self->octype ? PyUnicode_AsUTF8(self->octype) : NULL;
    spec.acc = octype ? octype : ck_dtypes[b->atc].ctype;
    spec.out_ctype = octype;
    PyObject *head = PyUnicode_FromString("");
    if (head && !octype)
        Py_SETREF(head,
                  PyUnicode_FromFormat("typedef %s _type_reduce;\n", ck_dtypes[b->atc].ctype));
    for (int i = 0; head && i < self->nph; i++)
        if (b->ph_tc[i] >= 0)
            Py_SETREF(head, PyUnicode_FromFormat("%Utypedef %s %s;\n", head,
                                                 ck_dtypes[b->ph_tc[i]].ctype, self->ph_names[i]));
    if (head && PyUnicode_GET_LENGTH(self->preamble) > 0)
        Py_SETREF(head, PyUnicode_FromFormat("%U#line 1 \"preamble\"\n%U\n", head, self->preamble));
    if (head && octype)
        Py_SETREF(head, PyUnicode_FromFormat("%Utypedef %s _type_reduce;\n", head, octype));
    const char *h = head ? PyUnicode_AsUTF8(head) : NULL;
    spec.head = h;
    spec.map = PyUnicode_AsUTF8(self->map);
    spec.reduce = PyUnicode_AsUTF8(self->reduce);
    spec.identity = PyUnicode_AsUTF8(self->identity);
    spec.post = PyUnicode_AsUTF8(self->post);
    *out_spec = spec;
    *out_head = head;
    if (h == NULL || !spec.map || !spec.reduce || !spec.identity || !spec.post) {
        Py_CLEAR(*out_head);
        return -1;
    }
    return 0;
}

static PyObject *
reduction_kernel_call(PyObject *obj, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ck_ReductionKernel *self = (ck_ReductionKernel *)obj;
    cukit_state *st = self->st;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *axis = Py_None, *stream = Py_None, *out_o = NULL;
    int keepdims = 0;
    if (read_keywords(self, args + nargs, kwnames, &axis, &stream, &out_o, &keepdims) < 0)
        return NULL;
    int nin = self->nin;
    if (nargs == nin + 1 && out_o == NULL)
        out_o = args[nin];
    else if (nargs != nin)
        return PyErr_Format(PyExc_TypeError, "%U() takes %d arguments, %zd given", self->name,
                            nin, nargs);
    bound_args b;
    if (bind_inputs(self, args, nin, &b) < 0)
        return NULL;
    cukit_Device *dev = b.dev;
    int atc = b.atc;
    /* the shape: broadcast inputs (CuPy), or the first array's size (PyCUDA) */
    int ndim = 0;
    Py_ssize_t shape[CUKIT_MAXDIM], oshape[CUKIT_MAXDIM];
    uint64_t axes = 0;
    if (self->pycuda) {
        cukit_Array *first = NULL;
        for (int k = 0; k < nin && first == NULL; k++)
            first = b.arrays[k];
        ndim = 1;
        shape[0] = first->size;
        axes = 1;
    }
    else {
        if (ck_broadcast(b.bcast, b.nb, &ndim, shape) < 0 ||
            ck_parse_axes(st, axis, ndim, &axes) < 0)
            return NULL;
    }
    int ond = ck_rout_shape(ndim, shape, axes, keepdims, oshape);
    cukit_Array *out = output_of(self, out_o, dev, b.tcs[nin], ond, oshape);
    if (out == NULL)
        return NULL;
    ck_rspec spec;
    PyObject *head = NULL;
    const char *octype = self->octype ? PyUnicode_AsUTF8(self->octype) : NULL;
    ck_rplan plan;
    CUstream hs = NULL;
    int rc = -1;
    if (spec_of(self, &b, nin, &spec, &head) < 0 || ck_stream(st, stream, dev, NULL, &hs) < 0)
        goto done;
    if (ck_rplan_make(&plan, b.arrays, b.kinds, nin, ndim, shape, axes, out, 0) < 0)
        goto done;
    for (int k = 0; k < nin; k++)
        if (b.kinds[k] == CK_OPND_SCALAR && ck_scalar_to(args[k], b.tcs[k], 1, &plan.val[k]) < 0)
            goto done;
    if (self->pycuda) { /* raw pointers: nothing to index but i */
        plan.kd = 0;
        plan.rd = 1;
        plan.nout = 1;
        plan.nred = shape[0];
        plan.rshape[0] = shape[0];
        memset(plan.rs, 0, sizeof plan.rs);
    }
    plan.count = plan.nred;
    plan.d = (double)plan.nred;
    memset(&plan.init, 0, sizeof plan.init);
    uint64_t key = (1ULL << 63) | (uint64_t)(dev->ordinal & 63) << 3;
    for (int i = 0; i < CK_MAXPH; i++)
        key |= (uint64_t)(b.ph_tc[i] < 0 ? 31 : b.ph_tc[i]) << (9 + 5 * i);
    for (int k = 0; k < nin; k++)
        key |= (uint64_t)(b.kinds[k] == CK_OPND_SCALAR) << (29 + k);
    PyObject *file = PyUnicode_FromFormat("%U.cu", self->name);
    const char *fname = file ? PyUnicode_AsUTF8(file) : NULL;
    if (fname)
        rc = ck_rplan_run(st, dev, &self->cache, key, &spec, fname, self->options, NULL, NULL,
                          octype ? (int)self->osize : ck_dtypes[atc].size, &plan, hs);
    Py_XDECREF(file);
done:
    Py_XDECREF(head);
    if (rc < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return (PyObject *)out;
}

/* ------------------------------------------------------------------ the type */

/* 1 when t can stand as a C type name in the generated source: identifiers, spaces, ::
 * and template brackets; nothing that ends a declaration or opens a block. */
static int
is_type_name(const char *t)
{
    if (!*t)
        return 0;
    for (; *t; t++)
        if (!(isalnum((unsigned char)*t) || strchr("_: <>,", *t)))
            return 0;
    return 1;
}

/* PyCUDA form's dtype_out: a dtype the engine computes on (ctype NULL or None), or a
 * struct dtype named `ctype` in C, whose dtype, name and itemsize go into self. The
 * typecode (CUKIT_TC_OTHER for a struct), or -1 with TypeError/ValueError. */
static int
out_type(ck_ReductionKernel *self, PyObject *dtype, PyObject *ctype)
{
    cukit_state *st = self->st;
    PyObject *dt = cukit_resolve_dtype(st, dtype), *size = NULL;
    if (dt == NULL)
        return -1;
    int tc = cukit_typecode_of_dtype(dt);
    if (ctype == NULL || ctype == Py_None) {
        if (tc == CUKIT_TC_OTHER) {
            PyObject *names = PyObject_GetAttrString(dt, "names");
            int is_struct = names != NULL && names != Py_None;
            Py_XDECREF(names);
            if (names == NULL)
                goto error;
            if (is_struct) {
                PyErr_Format(PyExc_TypeError, "ReductionKernel: dtype_out %S is a struct dtype: "
                             "pass ctype= with the C name of the struct the preamble defines",
                             dt);
                goto error;
            }
        }
        Py_DECREF(dt);
        return ck_tc_of(st, dtype);
    }
    const char *t = PyUnicode_Check(ctype) ? PyUnicode_AsUTF8(ctype) : NULL;
    if (t == NULL || !is_type_name(t)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "ReductionKernel: ctype=%R must be the C name of "
                         "dtype_out's struct, e.g. \"minmax_collector\"", ctype);
        goto error;
    }
    if (tc == CUKIT_TC_C64 || tc == CUKIT_TC_C128) {
        /* a complex computed in a type of its layout that the preamble defines
         * (pycuda::complex<T>), so the expressions can use that type's functions */
        self->osize = ck_dtypes[tc].size;
        self->octype = Py_NewRef(ctype);
        Py_DECREF(dt);
        return tc;
    }
    if (tc != CUKIT_TC_OTHER) {
        PyErr_Format(PyExc_TypeError, "ReductionKernel: ctype= names a struct dtype_out's C "
                     "type (or the type a complex one is computed in); dtype %S is not a struct: "
                     "leave ctype out", dt);
        goto error;
    }
    if ((size = PyObject_GetAttrString(dt, "itemsize")) == NULL)
        goto error;
    self->osize = PyLong_AsSsize_t(size);
    if (self->osize <= 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "ReductionKernel: dtype_out %S has no bytes", dt);
        goto error;
    }
    Py_DECREF(size);
    self->odtype = dt;
    self->octype = Py_NewRef(ctype);
    return CUKIT_TC_OTHER;
error:
    Py_XDECREF(size);
    Py_DECREF(dt);
    return -1;
}

static PyObject *
text_of(PyObject *v, const char *what)
{
    if (v == NULL || v == Py_None)
        return PyUnicode_FromString("");
    if (PyUnicode_Check(v))
        return Py_NewRef(v);
    if (PyLong_Check(v) || PyFloat_Check(v))
        return PyObject_Str(v);
    return PyErr_Format(PyExc_TypeError, "ReductionKernel: %s must be a str", what);
}

static PyObject *
reduction_kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    cukit_state *st = cukit_state_of_type(type);
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *first = n > 0 ? PyTuple_GET_ITEM(args, 0)
                            : kwargs ? PyDict_GetItemString(kwargs, "dtype_out") : NULL;
    int pycuda = first != NULL && !PyUnicode_Check(first);
    PyObject *in = NULL, *outp = NULL, *map = NULL, *red = NULL, *post = NULL, *ident = NULL,
             *name = NULL, *rtype = NULL, *pre = NULL, *opts = NULL, *dtype = NULL,
             *args_o = NULL, *keep = NULL, *alloc = NULL, *dims = NULL, *ctype = NULL;
    if (pycuda) {
        static char *kw[] = {"dtype_out", "neutral", "reduce_expr", "map_expr", "arguments",
                             "name", "keep", "options", "preamble", "allocator", "ctype", NULL};
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|OOOOOOO$O:ReductionKernel", kw,
                                         &dtype, &ident, &red, &map, &args_o, &name, &keep, &opts,
                                         &pre, &alloc, &ctype))
            return NULL;
    }
    else {
        static char *kw[] = {"in_params", "out_params", "map_expr", "reduce_expr",
                             "post_map_expr", "identity", "name", "reduce_type", "reduce_dims",
                             "preamble", "options", NULL};
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "UUOOOO|OOOOO:ReductionKernel", kw, &in,
                                         &outp, &map, &red, &post, &ident, &name, &rtype, &dims,
                                         &pre, &opts))
            return NULL;
    }
    ck_ReductionKernel *self = PyObject_GC_New(ck_ReductionKernel, type);
    if (self == NULL)
        return NULL;
    self->vectorcall = reduction_kernel_call;
    self->st = st;
    self->pycuda = pycuda;
    self->nparams = self->nin = self->nph = 0;
    self->rtc = self->rph = -1;
    self->name = self->map = self->reduce = self->post = self->identity = self->preamble = NULL;
    self->options = self->odtype = self->octype = NULL;
    self->osize = 0;
    memset(&self->cache, 0, sizeof self->cache);
    PyObject_GC_Track(self);
    self->name = name && name != Py_None ? text_of(name, "name")
                                         : PyUnicode_FromString("reduce_kernel");
    self->reduce = text_of(red, "reduce_expr");
    self->identity = text_of(ident, pycuda ? "neutral" : "identity");
    self->preamble = text_of(pre, "preamble");
    if (!self->name || !self->reduce || !self->identity || !self->preamble)
        goto error;
    if (!ck_is_ident(PyUnicode_AsUTF8(self->name))) {
        PyErr_Format(PyExc_ValueError, "ReductionKernel: name %R must be a C identifier",
                     self->name);
        goto error;
    }
    self->options = opts && opts != Py_None ? PySequence_Tuple(opts) : PyTuple_New(0);
    if (self->options == NULL)
        goto error;
    if (pycuda) {
        int otc = out_type(self, dtype, ctype);
        if (otc < 0)
            goto error;
        if (otc == CUKIT_TC_OTHER && !(args_o && args_o != Py_None)) {
            PyErr_SetString(PyExc_ValueError, "ReductionKernel: a struct dtype_out needs "
                            "arguments= (and a map_expr making the struct from them)");
            goto error;
        }
        PyObject *arguments = args_o && args_o != Py_None
                                  ? Py_NewRef(args_o)
                                  : PyUnicode_FromFormat("const %s *in", ck_dtypes[otc].ctype_c);
        if (arguments == NULL || parse_params(self, arguments, 0) < 0) {
            Py_XDECREF(arguments);
            goto error;
        }
        Py_DECREF(arguments);
        self->nin = self->nparams;
        ck_param *o = &self->params[self->nparams++];
        memset(o, 0, sizeof *o);
        strcpy(o->name, "out_");
        o->tc = otc;
        o->output = 1;
        self->rtc = otc;
        self->map =
            map && map != Py_None ? text_of(map, "map_expr") : PyUnicode_FromString("in[i]");
        self->post = PyUnicode_FromString("out_ = a");
    }
    else {
        if (parse_params(self, in, 0) < 0)
            goto error;
        self->nin = self->nparams;
        if (parse_params(self, outp, 1) < 0)
            goto error;
        if (self->nparams != self->nin + 1) {
            PyErr_SetString(PyExc_ValueError, "ReductionKernel takes one output parameter");
            goto error;
        }
        self->map = text_of(map, "map_expr");
        self->post = text_of(post, "post_map_expr");
        const ck_param *o = &self->params[self->nin];
        if (rtype == NULL || rtype == Py_None) {
            self->rtc = o->tc;
            self->rph = o->tc < 0 ? o->ph : -1;
        }
        else {
            const char *t = PyUnicode_Check(rtype) ? PyUnicode_AsUTF8(rtype) : NULL;
            ck_param_list list = param_list(self);
            if (t && (self->rtc = ck_type_named(t, pycuda_complex)) < 0) {
                if (!ck_is_ident(t)) {
                    PyErr_Format(PyExc_ValueError, "ReductionKernel: unknown reduce_type %R",
                                 rtype);
                    goto error;
                }
                if ((self->rph = ck_placeholder(&reduction_kernel_rules[0], &list, t)) < 0)
                    goto error;
            }
            else if (t == NULL && (self->rtc = ck_tc_of(st, rtype)) < 0) {
                goto error;
            }
        }
    }
    if (self->map == NULL || self->post == NULL)
        goto error;
    for (int k = 0; k < self->nin; k++)
        if (self->params[k].output) {
            PyErr_SetString(PyExc_ValueError, "ReductionKernel: outputs come last");
            goto error;
        }
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

static void
reduction_kernel_dealloc(ck_ReductionKernel *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    ck_kcache_clear(&self->cache);
    Py_CLEAR(self->name);
    Py_CLEAR(self->map);
    Py_CLEAR(self->reduce);
    Py_CLEAR(self->post);
    Py_CLEAR(self->identity);
    Py_CLEAR(self->preamble);
    Py_CLEAR(self->options);
    Py_CLEAR(self->odtype);
    Py_CLEAR(self->octype);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static int
reduction_kernel_traverse(ck_ReductionKernel *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->cache.modules);
    Py_VISIT(self->odtype);
    return 0;
}

static PyObject *
reduction_kernel_repr(ck_ReductionKernel *self)
{
    return PyUnicode_FromFormat("<cukit.ReductionKernel '%U'>", self->name);
}

static PyMemberDef reduction_kernel_members[] = {
    {"__vectorcalloffset__", Py_T_PYSSIZET, offsetof(ck_ReductionKernel, vectorcall), Py_READONLY},
    {"name", Py_T_OBJECT_EX, offsetof(ck_ReductionKernel, name), Py_READONLY, "The kernel's name."},
    {NULL},
};

static PyType_Slot reduction_kernel_slots[] = {
    {Py_tp_new, reduction_kernel_new},
    {Py_tp_dealloc, reduction_kernel_dealloc},
    {Py_tp_traverse, reduction_kernel_traverse},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_repr, reduction_kernel_repr},
    {Py_tp_members, reduction_kernel_members},
    {Py_tp_doc, "ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr, "
                "identity, name='reduce_kernel', reduce_type=None, reduce_dims=True, preamble='', "
                "options=()) -- CuPy's form; call k(*inputs, axis=None, keepdims=False, "
                "out=None, stream=None).\n\nReductionKernel(dtype_out, neutral, reduce_expr, "
                "map_expr=None, arguments=None, name='reduce_kernel', keep=False, options=None, "
                "preamble='', *, ctype=None) -- PyCUDA's form (ctype: the C name of a struct "
                "dtype_out, defined in the preamble, or of the type a complex one is computed "
                "in, such as pycuda::complex<float>); call k(*arguments, stream=None, out=None) "
                "-> a 0-d Array."},
    {0, NULL},
};

static PyType_Spec reduction_kernel_spec = {
    .name = "cukit.ReductionKernel",
    .basicsize = sizeof(ck_ReductionKernel),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_HAVE_VECTORCALL,
    .slots = reduction_kernel_slots,
};

int
ck_reduce_kernel_setup(PyObject *module, cukit_state *st)
{
    st->compute->ReductionKernelType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &reduction_kernel_spec, NULL);
    if (st->compute->ReductionKernelType == NULL)
        return -1;
    return PyModule_AddObjectRef(module, "ReductionKernel", (PyObject *)st->compute->ReductionKernelType);
}
