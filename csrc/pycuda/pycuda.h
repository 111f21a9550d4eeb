/* pycuda.h - the PyCUDA layer's C side: call fronts that give cukit.pycuda's Function, GPUArray operators and ElementwiseKernel cukit's own call cost */
#ifndef CUKIT_PYCUDA_H
#define CUKIT_PYCUDA_H

#include "array/array.h"

/* ------------------------------------------------------------------ fronts.c */

/* The base types cukit.pycuda's Python classes derive from (_PycudaFunction,
 * _PycudaArray, _PycudaElementwise): each does the common call in C and hands anything
 * else to a Python method of the subclass. 0 / -1. */
int cukit_pycuda_setup(PyObject *module, cukit_state *st);

#endif
