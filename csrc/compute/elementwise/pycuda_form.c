/* pycuda_form.c - PyCUDA's form of cukit.ElementwiseKernel: the kernels over
 * i < n and over range=/slice=, with loop_prep and after_loop, launched through
 * cukit.Kernel so that every argument is checked against the declaration */
#include "compute/elementwise/elementwise_impl.h"

/* PyCUDA's kernels around kernels/pycuda_form.cuh (which says what they are), the
 * user's texts each under its own #line. */
PyObject *
ck_ek_pycuda_source(ck_ElementwiseKernel *self)
{
    const char *head = cukit_device_file("compute/elementwise/kernels/pycuda_form.cuh");
    if (head == NULL)
        return NULL;
    return PyUnicode_FromFormat(
        "%s%s\n#line 1 \"preamble\"\n%U\n"
        "CK_PYCUDA_KERNEL %U(%U, long long n) {\n"
        "    CK_PYCUDA_HEAD\n"
        "#line 1 \"loop_prep\"\n%U\n;\n"
        "    CK_PYCUDA_LOOP {\n"
        "#line 1 \"operation\"\n%U\n;\n    }\n"
        "#line 1 \"after_loop\"\n%U\n;\n}\n"
        "CK_PYCUDA_KERNEL %U_range(%U, long long start, long long stop, long long step) {\n"
        "    CK_PYCUDA_HEAD\n"
        "#line 1 \"loop_prep\"\n%U\n;\n"
        "    CK_PYCUDA_RANGE_LOOP {\n"
        "#line 1 \"operation\"\n%U\n;\n    }\n"
        "#line 1 \"after_loop\"\n%U\n;\n}\n",
        ck_ml_define(), head, self->preamble, self->name, self->arguments, self->loop_prep,
        self->operation, self->after_loop, self->name, self->arguments, self->loop_prep,
        self->operation, self->after_loop);
}

static int
pycuda_kernels(ck_ElementwiseKernel *self, cukit_Device *dev)
{
    cukit_state *st = self->st;
    PyObject *src = ck_ek_pycuda_source(self); /* loaded into kernel and range_kernel */
    if (src == NULL)
        return -1;
    PyObject *file = PyUnicode_FromFormat("%U.cu", self->name);
    PyObject *module = NULL, *range_name = NULL;
    CUfunction f;
    const char *fname = file ? PyUnicode_AsUTF8(file) : NULL;
    const char *kname = PyUnicode_AsUTF8(self->name);
    int rc = fname && kname ? cukit_builtin_function(st, dev, src, fname, self->options, kname,
                                                     &module, &f)
                             : -1;
    Py_DECREF(src);
    Py_XDECREF(file);
    if (rc < 0)
        return -1;
    range_name = PyUnicode_FromFormat("%U_range", self->name);
    PyObject *k = cukit_module_get_kernel((cukit_Module *)module, self->name, NULL);
    PyObject *r = k && range_name ? cukit_module_get_kernel((cukit_Module *)module, range_name, NULL)
                                  : NULL;
    Py_DECREF(module);
    Py_XDECREF(range_name);
    if (r == NULL) {
        Py_XDECREF(k);
        return -1;
    }
    Py_XSETREF(self->kernel, k);
    Py_XSETREF(self->range_kernel, r);
    return 0;
}

/* A range= or slice= argument as (start, stop, step) and the count of indices it
 * takes; slice= is read against n elements (slice.indices), range= as written.
 * 0 / -1 with ValueError or TypeError. */
static int
pycuda_range(ck_ElementwiseKernel *self, PyObject *range, int is_slice, long long n, long long *start,
             long long *stop, long long *step, long long *count)
{
    if (!PySlice_Check(range)) {
        PyErr_Format(PyExc_TypeError, "%U(): %s= takes a slice object, not %s", self->name,
                     is_slice ? "slice" : "range", Py_TYPE(range)->tp_name);
        return -1;
    }
    if (is_slice) {
        Py_ssize_t a, b, c;
        if (PySlice_Unpack(range, &a, &b, &c) < 0)
            return -1;
        *count = PySlice_AdjustIndices((Py_ssize_t)n, &a, &b, c);
        *start = a;
        *stop = b;
        *step = c;
        return 0;
    }
    PySliceObject *sl = (PySliceObject *)range;
    if (sl->stop == Py_None) {
        PyErr_Format(PyExc_ValueError, "%U(): range= needs a stop: slice(start, stop, step)",
                     self->name);
        return -1;
    }
    *start = sl->start == Py_None ? 0 : PyLong_AsLongLong(sl->start);
    *stop = PyLong_AsLongLong(sl->stop);
    *step = sl->step == Py_None ? 1 : PyLong_AsLongLong(sl->step);
    if (PyErr_Occurred())
        return -1;
    if (*step == 0) {
        PyErr_Format(PyExc_ValueError, "%U(): range= step cannot be zero", self->name);
        return -1;
    }
    long long span = *step > 0 ? *stop - *start : *start - *stop;
    long long st = *step > 0 ? *step : -*step;
    *count = span <= 0 ? 0 : (span + st - 1) / st;
    return 0;
}

/* A complex scalar for a pycuda::complex<T> (or other complex struct) parameter passed
 * by value, as PyCUDA takes one: any Python or numpy number, as the struct's bytes. New
 * ref, or NULL (no exception) when v is left as it is. */
static PyObject *
complex_value(const cukit_param *p, PyObject *v)
{
    if (p->kind != CUKIT_P_STRUCT || (p->typecode != CUKIT_TC_C64 && p->typecode != CUKIT_TC_C128) ||
        PyBool_Check(v) || PyBytes_Check(v) || PyByteArray_Check(v) || PyMemoryView_Check(v))
        return NULL;
    Py_complex z = PyComplex_AsCComplex(v);
    if (PyErr_Occurred()) { /* not a number: the launch says what it takes */
        PyErr_Clear();
        return NULL;
    }
    if (p->typecode == CUKIT_TC_C128)
        return PyBytes_FromStringAndSize((const char *)(double[2]){z.real, z.imag}, 16);
    return PyBytes_FromStringAndSize((const char *)(float[2]){(float)z.real, (float)z.imag}, 8);
}

PyObject *
ck_ek_pycuda_call(ck_ElementwiseKernel *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    cukit_state *st = self->st;
    PyObject *stream = Py_None, *range = Py_None, *slice = Py_None;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(key, "stream") == 0)
            stream = args[nargs + i];
        else if (PyUnicode_CompareWithASCIIString(key, "range") == 0)
            range = args[nargs + i];
        else if (PyUnicode_CompareWithASCIIString(key, "slice") == 0)
            slice = args[nargs + i];
        else
            return PyErr_Format(PyExc_TypeError, "%U() got an unexpected keyword argument %R "
                                "(it takes stream=, range= and slice=)",
                                self->name, key);
    }
    if (range != Py_None && slice != Py_None)
        return PyErr_Format(PyExc_TypeError,
                            "%U(): give range= or slice=, not both", self->name);
    cukit_Array *first = NULL;
    for (Py_ssize_t k = 0; k < nargs && first == NULL; k++)
        if (Py_IS_TYPE(args[k], st->ArrayType))
            first = (cukit_Array *)args[k];
    if (first == NULL)
        return PyErr_Format(PyExc_TypeError, "%U() needs a cukit.Array argument (its size is "
                            "the number of elements)", self->name);
    if (self->kernel == NULL && pycuda_kernels(self, first->device) < 0)
        return NULL;
    cukit_Kernel *k = (cukit_Kernel *)self->kernel;
    if (nargs + 1 != k->sig->nparams)
        return PyErr_Format(PyExc_TypeError, "%U() takes %d arguments (%U), %zd given",
                            self->name, k->sig->nparams - 1, self->arguments, nargs);
    long long n = first->size, start = 0, stop = 0, step = 1;
    int ranged = range != Py_None || slice != Py_None;
    if (ranged && pycuda_range(self, ranged && slice != Py_None ? slice : range,
                               slice != Py_None, n, &start, &stop, &step, &n) < 0)
        return NULL;
    PyObject *call[CK_MAXOP + 10], *made[CK_MAXOP + 2] = {NULL};
    if (nargs > CK_MAXOP + 2)
        return PyErr_Format(PyExc_TypeError, "%U(): too many arguments", self->name);
    for (Py_ssize_t i = 0; i < nargs; i++) {
        call[i] = (made[i] = complex_value(&k->sig->params[i], args[i])) ? made[i] : args[i];
        if (made[i] == NULL && PyErr_Occurred()) {
            while (i-- > 0)
                Py_XDECREF(made[i]);
            return NULL;
        }
    }
    long long blocks = (n + CK_THREADS - 1) / CK_THREADS,
              most = (long long)first->device->sm_count * (2048 / CK_THREADS);
    if (blocks > most)
        blocks = most;
    if (blocks < 1)
        blocks = 1;
    PyObject *n_o = PyLong_FromLongLong(ranged ? start : n), *stop_o = PyLong_FromLongLong(stop),
             *step_o = PyLong_FromLongLong(step), *grid = PyLong_FromLongLong(blocks),
             *block = PyLong_FromLong(CK_THREADS);
    PyObject *names = Py_BuildValue("(OOO)", st->launch->str_grid, st->launch->str_block, st->launch->str_stream);
    PyObject *r = NULL;
    if (n_o && stop_o && step_o && grid && block && names) {
        Py_ssize_t m = nargs;
        call[m++] = n_o;
        if (ranged) {
            call[m++] = stop_o;
            call[m++] = step_o;
        }
        call[m] = grid;
        call[m + 1] = block;
        call[m + 2] = stream;
        r = n == 0 ? Py_NewRef(Py_None)
                   : PyObject_Vectorcall(ranged ? self->range_kernel : self->kernel, call,
                                         (size_t)m, names);
    }
    Py_XDECREF(n_o);
    Py_XDECREF(stop_o);
    Py_XDECREF(step_o);
    Py_XDECREF(grid);
    Py_XDECREF(block);
    Py_XDECREF(names);
    for (Py_ssize_t i = 0; i < nargs; i++)
        Py_XDECREF(made[i]);
    return r;
}
