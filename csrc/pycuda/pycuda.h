/* pycuda.h - the PyCUDA layer's C side: call fronts that give cukit.pycuda's Function, GPUArray operators and ElementwiseKernel cukit's own call cost */
#ifndef CUKIT_PYCUDA_H
#define CUKIT_PYCUDA_H

#include "array/array.h"

/* The layer's part of the module state (st->pycuda). */
typedef struct cukit_pycuda_state {
    /* strong refs: the fronts' types; their calls' keyword tuples ("grid", "block") and
     * ("grid", "block", "shared_mem", "stream"), (1, 1), 0, "_call_v" and "_prepared_slow" */
    PyTypeObject *FrontFunctionType, *FrontArrayType, *FrontElementwiseType;
    PyObject *front_kw_plain, *front_kw_launch, *front_grid_1, *front_zero, *front_str_call_v;
    PyObject *front_str_prepared_slow, *front_str_prepared_py;
    /* strong ref or NULL: cukit.pycuda._errors.at_edge, which turns a cukit error into
     * the layer's class for it; set by _PycudaFunction._register at the layer's import */
    PyObject *at_edge;
} cukit_pycuda_state;

/* ------------------------------------------------------------------ fronts.c */

/* The base types cukit.pycuda's Python classes derive from (_PycudaFunction,
 * _PycudaArray, _PycudaElementwise): each does the common call in C and hands anything
 * else to a Python method of the subclass. 0 / -1. */
int cukit_pycuda_setup(PyObject *module, cukit_state *st);

#endif
