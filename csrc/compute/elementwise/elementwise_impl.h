/* elementwise_impl.h - compute/'s own: the ElementwiseKernel object that elementwise.c
 * (the type, CuPy's form) and pycuda/elementwise.c (PyCUDA's form) share */
#ifndef CUKIT_COMPUTE_ELEMENTWISE_IMPL_H
#define CUKIT_COMPUTE_ELEMENTWISE_IMPL_H

#include "compute/builders.h"

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    cukit_state *st;                /* borrowed */
    int pycuda;                     /* 1: PyCUDA's form */
    int nparams, nin;
    ck_param params[CK_MAXOP];
    char ph_names[CK_MAXPH][CK_PNAME];
    int nph;
    PyObject *name;                 /* strong ref: str */
    PyObject *operation;            /* strong ref: str */
    PyObject *preamble;             /* strong ref: str */
    PyObject *loop_prep;            /* strong ref: str, "" for none */
    PyObject *after_loop;           /* strong ref: str, "" for none */
    PyObject *options;              /* strong ref: tuple of str */
    PyObject *arguments;            /* strong ref: str (PyCUDA form) */
    PyObject *kernel;               /* strong ref: cukit.Kernel (PyCUDA form), NULL until used */
    PyObject *range_kernel;         /* strong ref: the same over range=/slice=, NULL until used */
    ck_kcache cache;
} ck_ElementwiseKernel;

/* PyCUDA's form of a call: pointers indexed by i over the first array's size (or over
 * range=/slice=), launched through cukit.Kernel. New ref or NULL. */
PyObject *ck_ek_pycuda_call(ck_ElementwiseKernel *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames);

/* The CUDA C of PyCUDA's form: kernels <name> (over i < n) and <name>_range (over
 * range=/slice=). New ref: str, or NULL. */
PyObject *ck_ek_pycuda_source(ck_ElementwiseKernel *self);

#endif /* CUKIT_COMPUTE_ELEMENTWISE_IMPL_H */
