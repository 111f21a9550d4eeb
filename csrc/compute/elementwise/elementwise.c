/* elementwise.c - cukit.ElementwiseKernel: a user's per-element C statement, compiled
 * once per set of concrete dtypes through the ufunc engine
 *
 * Two forms. CuPy's: ElementwiseKernel("T x, float32 a, raw T w", "T z", "z = a * x",
 * name) -- typed or placeholder parameters, broadcasting, scalars, raw pointers, outputs
 * allocated or given. PyCUDA's: ElementwiseKernel("float a, float *x, float *z",
 * "z[i] = a * x[i]", name) -- pointers indexed by i over the first array's size, launched
 * through cukit.Kernel (pycuda_form.c). The
 * operation is compiled under `#line 1 "operation"`, so a compile error points into it. */
#include "compute/elementwise/elementwise_impl.h"

#include <string.h>

/* ------------------------------------------------------------------ parameters */

static const ck_param_rules ek_rules = {
    .who = "ElementwiseKernel", .max_in = CK_MAXOP - 1, .max = CK_MAXOP, .placeholders = 1,
};

/* Parse "T x, raw float32 y" into self->params (kernel_params.c). 0 / -1. */
static int
parse_params(ck_ElementwiseKernel *self, PyObject *text, int output)
{
    ck_param_list list = {self->params, &self->nparams, self->ph_names, &self->nph};
    return ck_params_parse(&ek_rules, &list, text, output);
}

/* ------------------------------------------------------------------ the CuPy form */

static int
bind(ck_ElementwiseKernel *self, int *ph_tc, int ph, int tc)
{
    if (ph_tc[ph] >= 0 && ph_tc[ph] != tc) {
        PyErr_Format(PyExc_TypeError,
                     "%U: type placeholder %s is bound to both %s and %s by the arguments; "
                     "cast one with astype",
                     self->name, self->ph_names[ph], ck_dtypes[ph_tc[ph]].name,
                     ck_dtypes[tc].name);
        return -1;
    }
    ph_tc[ph] = tc;
    return 0;
}

/* The generated source for one binding. New ref or NULL. */
static PyObject *
cupy_source(ck_ElementwiseKernel *self, const int *tcs, const int *scalar, int cls, int vec,
            const int *load_out, unsigned tiled)
{
    ck_operand ops[CK_MAXOP];
    memset(ops, 0, sizeof ops);
    PyObject *head = NULL, *stmt = NULL, *src = NULL, *prep = NULL, *after = NULL;
    /* loop_prep or after_loop: the operation becomes a lambda after loop_prep, in the
     * kernel, so that it sees what loop_prep declares */
    int lambda = PyUnicode_GET_LENGTH(self->loop_prep) > 0 ||
                 PyUnicode_GET_LENGTH(self->after_loop) > 0;
    PyObject *parts = PyList_New(0);
    if (parts == NULL)
        return NULL;
    for (int k = 0; k < self->nparams; k++) {
        ops[k].tc = tcs[k];
        ops[k].scalar = scalar[k];
        ops[k].raw = self->params[k].raw;
        ops[k].output = self->params[k].output;
        ops[k].tiled = (int)(tiled >> k & 1);
    }
    /* head: the placeholders' types, then the user's preamble */
    head = PyUnicode_FromString("");
    for (int i = 0; head && i < self->nph; i++) {
        int tc = -1;
        for (int k = 0; k < self->nparams; k++)
            if (self->params[k].tc < 0 && self->params[k].ph == i)
                tc = tcs[k];
        if (tc < 0)
            continue;
        PyObject *line = PyUnicode_FromFormat("%Utypedef %s %s;\n", head, ck_dtypes[tc].ctype,
                                              self->ph_names[i]);
        Py_SETREF(head, line);
    }
    if (head && PyUnicode_GET_LENGTH(self->preamble) > 0)
        Py_SETREF(head, PyUnicode_FromFormat("%U#line 1 \"preamble\"\n%U\n", head, self->preamble));
    if (head == NULL)
        goto done;
    if (!lambda) {
        /* the operation, once, as a device function of the parameters by name */
        Py_SETREF(head, PyUnicode_FromFormat(
                            "%UCKD void ck_op(const long long i, const ck_index &_ind", head));
        for (int k = 0; head && k < self->nparams; k++) {
            const ck_param *p = &self->params[k];
            const char *t = ck_dtypes[tcs[k]].ctype;
            if (p->raw)
                Py_SETREF(head, PyUnicode_FromFormat("%U, %s *const %s", head, t, p->name));
            else if (p->output)
                Py_SETREF(head, PyUnicode_FromFormat("%U, %s &%s", head, t, p->name));
            else
                Py_SETREF(head, PyUnicode_FromFormat("%U, const %s %s", head, t, p->name));
        }
        if (head)
            Py_SETREF(head, PyUnicode_FromFormat(
                                "%U) {\n    (void)i; (void)_ind;\n#line 1 \"operation\"\n"
                                "%U\n;\n}\n",
                                head, self->operation));
        if (head == NULL)
            goto done;
        stmt = PyUnicode_FromString("                ck_op(i, _ind");
        for (int k = 0; stmt && k < self->nparams; k++)
            Py_SETREF(stmt, PyUnicode_FromFormat("%U, CK_E%d", stmt, k));
    }
    else {
        /* scalars and raw pointers by name, loop_prep, then the operation as a lambda of
         * the elementwise parameters (the others it captures) */
        prep = PyUnicode_FromString("");
        for (int k = 0; prep && k < self->nparams; k++) {
            const ck_param *p = &self->params[k];
            const char *t = ck_dtypes[tcs[k]].ctype;
            if (p->raw)
                Py_SETREF(prep, PyUnicode_FromFormat("%U    %s *const %s = a%d_;\n", prep, t,
                                                     p->name, k));
            else if (scalar[k])
                Py_SETREF(prep, PyUnicode_FromFormat("%U    const %s %s = a%d_;\n", prep, t,
                                                     p->name, k));
        }
        if (prep)
            Py_SETREF(prep, PyUnicode_FromFormat("%U#line 1 \"loop_prep\"\n%U\n;\n"
                                                 "    auto ck_op = [&](const long long i",
                                                 prep, self->loop_prep));
        for (int k = 0; prep && k < self->nparams; k++) {
            const ck_param *p = &self->params[k];
            const char *t = ck_dtypes[tcs[k]].ctype;
            if (p->raw || scalar[k])
                continue;
            Py_SETREF(prep, PyUnicode_FromFormat(p->output ? "%U, %s &%s" : "%U, const %s %s",
                                                 prep, t, p->name));
        }
        if (prep)
            Py_SETREF(prep, PyUnicode_FromFormat("%U) {\n    (void)i;\n#line 1 \"operation\"\n"
                                                 "%U\n;\n    };\n", prep, self->operation));
        after = PyUnicode_FromFormat("#line 1 \"after_loop\"\n%U\n;", self->after_loop);
        if (prep == NULL || after == NULL)
            goto done;
        stmt = PyUnicode_FromString("                ck_op(i");
        for (int k = 0; stmt && k < self->nparams; k++)
            if (!self->params[k].raw && !scalar[k])
                Py_SETREF(stmt, PyUnicode_FromFormat("%U, CK_E%d", stmt, k));
    }
    if (stmt)
        Py_SETREF(stmt, PyUnicode_FromFormat("%U);", stmt));
    if (stmt == NULL)
        goto done;
    const char *h = PyUnicode_AsUTF8(head), *s = PyUnicode_AsUTF8(stmt);
    const char *pr = prep ? PyUnicode_AsUTF8(prep) : NULL,
               *af = after ? PyUnicode_AsUTF8(after) : NULL;
    if (h && s && (prep == NULL || pr) && (after == NULL || af))
        src = ck_custom_source(h, ops, self->nparams, cls, vec, s, load_out, pr, af);
done:
    Py_XDECREF(parts);
    Py_XDECREF(head);
    Py_XDECREF(stmt);
    Py_XDECREF(prep);
    Py_XDECREF(after);
    return src;
}

/* What an ElementwiseKernel call's arguments bind: each parameter's typecode, the
 * scalars (and Python scalars' NEP 50 kinds), the placeholders' types, the arrays (borrowed)
 * and the device. */
typedef struct {
    int tcs[CK_MAXOP];
    int scalar[CK_MAXOP];            /* 1: a scalar argument */
    int ph_tc[CK_MAXPH];             /* each placeholder's typecode, -1 while unbound */
    int weak[CK_MAXOP];              /* CK_WEAK_* of a Python scalar, else 0 */
    cukit_Array *arrays[CK_MAXOP];   /* borrowed: the array arguments and outputs */
    cukit_Array *bcast[CK_MAXOP];    /* borrowed: the arrays that broadcast */
    int nb;
    cukit_Device *dev;               /* borrowed: the arrays' device */
} ek_args;

/* A CuPy-form call's keywords (values[i] named by kwnames[i]). 0 / -1 with TypeError. */
static int
cupy_keywords(ck_ElementwiseKernel *self, PyObject *const *values, PyObject *kwnames,
              PyObject **stream, PyObject **size_o)
{
    cukit_state *st = self->st;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i);
        if (key == st->launch->str_stream || PyUnicode_CompareWithASCIIString(key, "stream") == 0)
            *stream = values[i];
        else if (PyUnicode_CompareWithASCIIString(key, "size") == 0)
            *size_o = values[i];
        else if (PyUnicode_CompareWithASCIIString(key, "block_size") == 0)
            ;
        else
            return ck_failed(
                PyErr_Format(PyExc_TypeError,
                             "%U() got an unexpected keyword argument %R (it takes size= "
                             "and stream=)",
                             self->name, key));
    }
    return 0;
}

/* Bind the nargs arguments to the parameters: arrays checked against declared types and
 * placeholders, scalars kept weak (NEP 50); then every parameter's type. 0 / -1 with
 * TypeError or ValueError naming the argument. */
static int
cupy_bind(ck_ElementwiseKernel *self, PyObject *const *args, Py_ssize_t nargs, ek_args *b)
{
    cukit_state *st = self->st;
    int np_ = self->nparams;
    memset(b, 0, sizeof *b);
    for (int i = 0; i < CK_MAXPH; i++)
        b->ph_tc[i] = -1;
    /* arguments: arrays bind placeholders first, scalars after */
    for (int k = 0; k < nargs; k++) {
        const ck_param *p = &self->params[k];
        PyObject *v = args[k];
        b->arrays[k] = NULL;
        b->scalar[k] = 0;
        b->weak[k] = 0;
        if (Py_IS_TYPE(v, st->ArrayType)) {
            cukit_Array *a = (cukit_Array *)v;
            if (!cukit_array_live(a))
                return cukit_freed_error(), -1;
            if (b->dev && a->device != b->dev)
                return ck_failed(PyErr_Format(PyExc_ValueError,
                                              "%U(): the arrays are on devices %d and %d",
                                              self->name, b->dev->ordinal, a->device->ordinal));
            b->dev = a->device;
            if (!ck_math_tc(a->typecode))
                return ck_failed(PyErr_Format(PyExc_TypeError,
                                              "%U(): argument %s has dtype %S, which "
                                              "cukit kernels do not take",
                                              self->name, p->name, a->dtype));
            b->arrays[k] = a;
            if (p->tc < 0) {
                if (bind(self, b->ph_tc, p->ph, a->typecode) < 0)
                    return -1;
            }
            else if (p->tc != a->typecode) {
                return ck_failed(PyErr_Format(
                    PyExc_TypeError,
                    "%U(): argument %s is declared %s but the array is %S; "
                    "convert it with .astype(%s)",
                    self->name, p->name, ck_dtypes[p->tc].name, a->dtype, ck_dtypes[p->tc].name));
            }
            if (p->raw && !(a->flags & CUKIT_ARRAY_C_CONTIG))
                return ck_failed(
                    PyErr_Format(PyExc_ValueError,
                                 "%U(): raw argument %s must be C-contiguous (the code "
                                 "indexes it as a flat run); pass cukit.ascontiguousarray(x)",
                                 self->name, p->name));
            if (p->output && (a->flags & CUKIT_ARRAY_READONLY))
                return ck_failed(PyErr_Format(PyExc_ValueError, "%U(): output %s is read-only",
                                              self->name, p->name));
            if (!p->raw && !p->output)
                b->bcast[b->nb++] = a;
            continue;
        }
        if (p->output)
            return ck_failed(PyErr_Format(PyExc_TypeError,
                                          "%U(): output %s must be a cukit.Array, not %s",
                                          self->name, p->name, Py_TYPE(v)->tp_name));
        if (p->raw)
            return ck_failed(PyErr_Format(PyExc_TypeError,
                                          "%U(): raw argument %s must be a cukit.Array, "
                                          "not %s",
                                          self->name, p->name, Py_TYPE(v)->tp_name));
        if (PyObject_TypeCheck(v, (PyTypeObject *)st->np_ndarray))
            return ck_failed(
                PyErr_Format(PyExc_TypeError,
                             "%U(): argument %s is a numpy array in host memory; copy it to "
                             "the device first with cukit.to_device(x)",
                             self->name, p->name));
        b->scalar[k] = 1;
        if (PyBool_Check(v)) b->weak[k] = CK_WEAK_BOOL;
        else if (PyLong_Check(v)) b->weak[k] = CK_WEAK_INT;
        else if (PyFloat_Check(v) && !PyObject_TypeCheck(v, (PyTypeObject *)st->np_generic))
            b->weak[k] = CK_WEAK_FLOAT;
        else if (PyComplex_Check(v) && !PyObject_TypeCheck(v, (PyTypeObject *)st->np_generic))
            b->weak[k] = CK_WEAK_COMPLEX;
        else if (!PyObject_TypeCheck(v, (PyTypeObject *)st->np_generic))
            return ck_failed(PyErr_Format(
                PyExc_TypeError, "%U(): argument %s must be a cukit.Array or a scalar, not %s",
                self->name, p->name, Py_TYPE(v)->tp_name));
    }
    for (int k = 0; k < nargs; k++) {
        const ck_param *p = &self->params[k];
        if (!b->scalar[k] || p->tc >= 0 || b->ph_tc[p->ph] >= 0)
            continue;
        int tc;
        if (b->weak[k]) {
            tc = ck_weak_tc(b->weak[k], -1);
        }
        else {
            PyObject *dt = PyObject_GetAttr(args[k], st->memory->str_dtype);
            tc = dt ? cukit_typecode_of_dtype(dt) : -1;
            Py_XDECREF(dt);
            if (tc < 0)
                return -1;
        }
        b->ph_tc[p->ph] = tc;
    }
    for (int k = 0; k < np_; k++) {
        const ck_param *p = &self->params[k];
        b->tcs[k] = p->tc >= 0 ? p->tc : b->ph_tc[p->ph];
        if (b->tcs[k] < 0)
            return ck_failed(
                PyErr_Format(PyExc_TypeError,
                             "%U(): cannot tell type %s of %s from the inputs; pass the "
                             "output array",
                             self->name, self->ph_names[p->ph], p->name));
    }
    if (b->dev == NULL)
        return ck_failed(PyErr_Format(PyExc_TypeError,
                                      "%U() needs at least one cukit.Array argument", self->name));
    return 0;
}

/* The outputs: those given checked against the broadcast shape (load_out[k] 1: read
 * before written; *user_out 1: any given), the others new arrays, into outs (new refs)
 * and b->arrays. 0 / -1. */
static int
cupy_outputs(ck_ElementwiseKernel *self, ek_args *b, Py_ssize_t nargs, int ndim,
             const Py_ssize_t *shape, PyObject *stream, PyObject **outs, int *load_out,
             int *user_out)
{
    cukit_state *st = self->st;
    int np_ = self->nparams, nin = self->nin;
    for (int k = nin; k < np_; k++) {
        const ck_param *p = &self->params[k];
        if (k < nargs) {
            cukit_Array *a = b->arrays[k];
            if (!p->raw && (a->ndim != ndim ||
                            memcmp(a->shape, shape, sizeof(Py_ssize_t) * (size_t)ndim) != 0)) {
                PyObject *have = cukit_array_shape(a);
                PyErr_Format(PyExc_ValueError, "%U(): output %s has shape %R, not the broadcast "
                             "shape of the inputs", self->name, p->name, have);
                Py_XDECREF(have);
                return -1;
            }
            outs[k] = Py_NewRef(a);
            load_out[k] = 1;
            *user_out = 1;
        }
        else {
            if (p->raw) {
                PyErr_Format(PyExc_TypeError, "%U(): raw output %s must be given", self->name,
                             p->name);
                return -1;
            }
            outs[k] = (PyObject *)ck_empty_out(st, b->dev, b->tcs[k], ndim, shape, stream);
            if (outs[k] == NULL)
                return -1;
            b->arrays[k] = (cukit_Array *)outs[k];
        }
    }
    return 0;
}

/* Lay out the operands, find (or compile) the kernel for the layout's class and launch
 * it on stream. 0 / -1. */
static int
cupy_launch(ck_ElementwiseKernel *self, PyObject *const *args, Py_ssize_t nargs,
            const ek_args *b, PyObject **outs, const int *load_out, int user_out, int ndim,
            const Py_ssize_t *shape, Py_ssize_t total, PyObject *stream)
{
    cukit_state *st = self->st;
    int np_ = self->nparams, nin = self->nin;
    ck_layout layout;
    layout.nops = np_;
    for (int k = 0; k < np_; k++) {
        if (b->scalar[k]) {
            layout.scalar[k] = 1;
            layout.itemsize[k] = 0;
            if (ck_scalar_to(args[k], b->tcs[k], 1, &layout.val[k]) < 0)
                return -1;
        }
        else if (self->params[k].raw) {
            layout.scalar[k] = 2;
            layout.itemsize[k] = 0;
            layout.ptr[k] = cukit_array_ptr(b->arrays[k]);
        }
        else {
            ck_layout_operand(&layout, k, b->arrays[k], ndim, shape);
        }
    }
    int vec;
    unsigned inputs = 0;
    for (int k = 0; k < nin; k++)
        if (!b->scalar[k] && !self->params[k].raw)
            inputs |= 1u << k;
    int cls = ck_layout_finish(&layout, ndim, shape, user_out ? nin : -1, nin, inputs, &vec);
    if (b->nb == 0) { /* nothing to broadcast: a flat count */
        cls = CK_CLASS_FLAT;
        vec = 1;
        layout.n = total;
        layout.tiled = 0;
    }
    /* bits 0-2 class, 3-5 vector width, 6-11 device, 12-31 placeholders' types,
     * 32-43 scalar or read output per parameter, 44-55 tiled inputs */
    int vlog = vec >= 16 ? 4 : vec >= 8 ? 3 : vec >= 4 ? 2 : vec >= 2 ? 1 : 0;
    uint64_t key = (1ULL << 63) | (uint64_t)cls | (uint64_t)vlog << 3 |
                   (uint64_t)(b->dev->ordinal & 63) << 6 | (uint64_t)layout.tiled << 44;
    for (int i = 0; i < self->nph; i++)
        key |= (uint64_t)(b->ph_tc[i] < 0 ? 31 : b->ph_tc[i]) << (12 + 5 * i);
    for (int k = 0; k < np_; k++)
        key |= (uint64_t)(b->scalar[k] | load_out[k]) << (32 + k);
    ck_entry *e = ck_kcache_find(&self->cache, key);
    CUfunction func;
    if (e) {
        func = e->func;
    }
    else {
        PyObject *src = cupy_source(self, b->tcs, b->scalar, cls, vec, load_out, layout.tiled);
        PyObject *file = src ? PyUnicode_FromFormat("%U.cu", self->name) : NULL;
        const char *fname = file ? PyUnicode_AsUTF8(file) : NULL;
        PyObject *module = NULL;
        int rc = fname ? cukit_builtin_function(st, b->dev, src, fname, self->options, "ck",
                                                &module, &func)
                         : -1;
        Py_XDECREF(src);
        Py_XDECREF(file);
        if (rc == 0)
            rc = ck_kcache_add(&self->cache, key, func, vec, module);
        Py_XDECREF(module);
        if (rc < 0)
            return -1;
    }
    CUstream h = NULL;
    if (ck_stream(st, stream, b->dev, NULL, &h) < 0)
        return -1;
    if (Py_IS_TYPE(stream, st->runtime->StreamType) && ((cukit_Stream *)stream)->capture != NULL) {
        PyObject *keep = PyTuple_New(np_);
        for (int k = 0; keep && k < np_; k++)
            PyTuple_SET_ITEM(keep, k, Py_NewRef(k < nargs ? args[k] : outs[k]));
        int rc = keep ? cukit_capture_keep(st, stream, keep) : -1;
        Py_XDECREF(keep);
        if (rc < 0)
            return -1;
    }
    if (ck_launch(b->dev, func, &layout, cls, vec, h) < 0)
        return -1;
    return 0;
}

static PyObject *
cupy_call(ck_ElementwiseKernel *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int np_ = self->nparams, nin = self->nin;
    PyObject *stream = Py_None, *size_o = Py_None;
    if (cupy_keywords(self, args + nargs, kwnames, &stream, &size_o) < 0)
        return NULL;
    if (nargs != nin && nargs != np_)
        return PyErr_Format(PyExc_TypeError,
                            "%U() takes %d input arguments (or %d with the outputs), %zd given",
                            self->name, nin, np_, nargs);
    ek_args b;
    if (cupy_bind(self, args, nargs, &b) < 0)
        return NULL;
    PyObject *outs[CK_MAXOP];
    memset(outs, 0, sizeof outs);
    PyObject *result = NULL;
    int ndim = 0;
    Py_ssize_t shape[CUKIT_MAXDIM];
    if (ck_broadcast(b.bcast, b.nb, &ndim, shape) < 0)
        return NULL;
    if (b.nb == 0) { /* only raw arrays: size= gives the count */
        if (size_o == Py_None)
            return PyErr_Format(PyExc_ValueError, "%U(): with only raw arrays, pass size=",
                                self->name);
        ndim = 1;
        shape[0] = PyNumber_AsSsize_t(size_o, PyExc_OverflowError);
        if (shape[0] < 0)
            return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "size must be >= 0");
    }
    int load_out[CK_MAXOP] = {0}, user_out = 0;
    if (cupy_outputs(self, &b, nargs, ndim, shape, stream, outs, load_out, &user_out) < 0)
        goto done;
    Py_ssize_t total = 1;
    for (int d = 0; d < ndim; d++)
        total *= shape[d];
    if (total > 0 && cupy_launch(self, args, nargs, &b, outs, load_out, user_out, ndim, shape,
                                 total, stream) < 0)
        goto done;
    if (np_ - nin == 1) {
        result = Py_NewRef(outs[nin]);
    }
    else {
        result = PyTuple_New(np_ - nin);
        for (int k = nin; result && k < np_; k++)
            PyTuple_SET_ITEM(result, k - nin, Py_NewRef(outs[k]));
    }
done:
    for (int k = 0; k < np_; k++)
        Py_XDECREF(outs[k]);
    return result;
}

/* ------------------------------------------------------------------ the type */

static PyObject *
ek_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ck_ElementwiseKernel *self = (ck_ElementwiseKernel *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (cukit_numpy(self->st) < 0)
        return NULL;
    return self->pycuda ? ck_ek_pycuda_call(self, args, nargs, kwnames)
                        : cupy_call(self, args, nargs, kwnames);
}

static PyObject *
ek_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"in_params", "out_params", "operation", "name", "reduce_dims",
                             "preamble", "no_return", "return_tuple", "loop_prep",
                             "after_loop", "options", NULL};
    PyObject *a = NULL, *b = NULL, *c = NULL, *name = NULL, *reduce = NULL, *preamble = NULL,
             *no_return = NULL, *return_tuple = NULL, *loop_prep = NULL, *after_loop = NULL,
             *options = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "UU|OOOOOOOOO:ElementwiseKernel", kwlist, &a,
                                     &b, &c, &name, &reduce, &preamble, &no_return,
                                     &return_tuple, &loop_prep, &after_loop, &options))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    const char *first = PyUnicode_AsUTF8(a);
    if (first == NULL)
        return NULL;
    /* PyCUDA's form: (arguments, operation, name) with pointer parameters */
    int pycuda = strchr(first, '*') != NULL || c == NULL || !PyUnicode_Check(c);
    if (pycuda) {
        if (c != NULL && name == NULL)
            name = c; /* the third positional argument is the name */
        c = b;
    }
    ck_ElementwiseKernel *self = PyObject_GC_New(ck_ElementwiseKernel, type);
    if (self == NULL)
        return NULL;
    self->vectorcall = NULL;
    self->st = st;
    self->pycuda = pycuda;
    self->nparams = self->nin = self->nph = 0;
    memset(&self->cache, 0, sizeof self->cache);
    self->kernel = self->range_kernel = NULL;
    self->loop_prep = loop_prep && loop_prep != Py_None ? Py_NewRef(loop_prep)
                                                        : PyUnicode_FromString("");
    self->after_loop = after_loop && after_loop != Py_None ? Py_NewRef(after_loop)
                                                           : PyUnicode_FromString("");
    self->arguments = pycuda ? Py_NewRef(a) : NULL;
    self->name = name && name != Py_None ? Py_NewRef(name) : PyUnicode_FromString("kernel");
    self->operation = Py_NewRef(c);
    self->preamble =
        preamble && preamble != Py_None ? Py_NewRef(preamble) : PyUnicode_FromString("");
    self->options = options && options != Py_None ? PySequence_Tuple(options) : PyTuple_New(0);
    PyObject_GC_Track(self);
    if (self->name == NULL || self->preamble == NULL || self->options == NULL ||
        self->loop_prep == NULL || self->after_loop == NULL)
        goto error;
    if (!PyUnicode_Check(self->name) || !PyUnicode_Check(self->operation) ||
        !PyUnicode_Check(self->preamble) || !PyUnicode_Check(self->loop_prep) ||
        !PyUnicode_Check(self->after_loop)) {
        PyErr_SetString(PyExc_TypeError,
                        "ElementwiseKernel: name, operation, preamble, loop_prep and after_loop "
                        "must be str");
        goto error;
    }
    const char *nm = PyUnicode_AsUTF8(self->name);
    if (nm == NULL || !ck_is_ident(nm)) {
        if (nm)
            PyErr_Format(PyExc_ValueError, "ElementwiseKernel: name %R is not a C identifier",
                         self->name);
        goto error;
    }
    if (!pycuda) {
        if (parse_params(self, a, 0) < 0)
            goto error;
        self->nin = self->nparams;
        if (parse_params(self, b, 1) < 0)
            goto error;
        if (self->nparams == self->nin) {
            PyErr_SetString(PyExc_ValueError, "ElementwiseKernel needs at least one output");
            goto error;
        }
    }
    self->vectorcall = ek_vectorcall;
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

static int
ek_traverse(ck_ElementwiseKernel *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->kernel);
    Py_VISIT(self->range_kernel);
    Py_VISIT(self->cache.modules);
    return 0;
}

static int
ek_clear(ck_ElementwiseKernel *self)
{
    Py_CLEAR(self->kernel);
    Py_CLEAR(self->range_kernel);
    ck_kcache_clear(&self->cache);
    return 0;
}

static void
ek_dealloc(ck_ElementwiseKernel *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    ek_clear(self);
    Py_CLEAR(self->name);
    Py_CLEAR(self->operation);
    Py_CLEAR(self->preamble);
    Py_CLEAR(self->loop_prep);
    Py_CLEAR(self->after_loop);
    Py_CLEAR(self->options);
    Py_CLEAR(self->arguments);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static PyObject *
ek_repr(ck_ElementwiseKernel *self)
{
    return PyUnicode_FromFormat("<cukit.ElementwiseKernel %U>", self->name);
}

/* _source(dtypes, scalars, cls=0, vec=4): the CUDA C for one binding (tests, warmup). */
static PyObject *
ek_source(ck_ElementwiseKernel *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dtypes", "scalars", "cls", "vec", "tiled", NULL};
    PyObject *dts, *scs;
    int cls = CK_CLASS_VEC, vec = 4;
    unsigned int tiled = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|iiI:_source", kwlist, &dts, &scs, &cls,
                                     &vec, &tiled))
        return NULL;
    int tcs[CK_MAXOP], scalar[CK_MAXOP], load[CK_MAXOP] = {0};
    if (self->pycuda)
        return ck_ek_pycuda_source(self);
    if (PySequence_Size(dts) != self->nparams ||
        PySequence_Size(scs) != self->nparams || cls < 0 || cls >= CK_CLASS_COUNT)
        return PyErr_Format(PyExc_ValueError, "_source(): one dtype and scalar flag per parameter");
    for (int k = 0; k < self->nparams; k++) {
        PyObject *d = PySequence_GetItem(dts, k), *s = PySequence_GetItem(scs, k);
        tcs[k] = d ? ck_tc_of(self->st, d) : -1;
        scalar[k] = s ? PyObject_IsTrue(s) : -1;
        Py_XDECREF(d);
        Py_XDECREF(s);
        if (tcs[k] < 0 || scalar[k] < 0)
            return NULL;
    }
    return cupy_source(self, tcs, scalar, cls, cls == CK_CLASS_VEC ? vec : 1, load,
                       cls == CK_CLASS_T2 ? tiled : 0);
}

static PyMethodDef ek_methods[] = {
    {"_source", (PyCFunction)(void (*)(void))ek_source, METH_VARARGS | METH_KEYWORDS,
     "_source(dtypes, scalars, cls=0, vec=4, tiled=0) -> str: the CUDA C one binding "
     "compiles (PyCUDA's form: the arguments are ignored)."},
    {NULL},
};

static PyMemberDef ek_members[] = {
    {"__vectorcalloffset__", Py_T_PYSSIZET, offsetof(ck_ElementwiseKernel, vectorcall),
     Py_READONLY},
    {"name", Py_T_OBJECT_EX, offsetof(ck_ElementwiseKernel, name), Py_READONLY,
     "The kernel's name."},
    {"operation", Py_T_OBJECT_EX, offsetof(ck_ElementwiseKernel, operation), Py_READONLY,
     "The code."},
    {NULL},
};

static PyType_Slot ek_slots[] = {
    {Py_tp_doc,
     "ElementwiseKernel(in_params, out_params, operation, name='kernel', preamble='', "
     "loop_prep='', after_loop='', options=())\n\n"
     "A per-element C statement compiled once per set of dtypes. Parameters are "
     "\"[raw] type name\" with numpy or C type names, or a placeholder such as T bound by the "
     "arguments' dtypes. Non-raw arrays broadcast together; `i` is the element's index and "
     "raw arrays are pointers. Call with the inputs (and optionally the outputs); the "
     "outputs are returned. PyCUDA's form, ElementwiseKernel(\"float a, float *x\", "
     "\"x[i] = a * x[i]\", name), is also taken."},
    {Py_tp_new, ek_new},
    {Py_tp_dealloc, ek_dealloc},
    {Py_tp_traverse, ek_traverse},
    {Py_tp_clear, ek_clear},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_repr, ek_repr},
    {Py_tp_members, ek_members},
    {Py_tp_methods, ek_methods},
    {0, NULL},
};

static PyType_Spec ek_spec = {
    .name = "cukit.ElementwiseKernel",
    .basicsize = sizeof(ck_ElementwiseKernel),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_HAVE_VECTORCALL,
    .slots = ek_slots,
};

int
ck_elementwise_setup(PyObject *module, cukit_state *st)
{
    st->compute->ElementwiseType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &ek_spec, NULL);
    if (st->compute->ElementwiseType == NULL)
        return -1;
    return PyModule_AddObjectRef(module, "ElementwiseKernel", (PyObject *)st->compute->ElementwiseType);
}
