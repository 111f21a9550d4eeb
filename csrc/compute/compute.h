/* compute.h - the compute layer: what cukit computes with its own generated kernels (random numbers, ...) */
#ifndef CUKIT_COMPUTE_H
#define CUKIT_COMPUTE_H

#include "array/array.h"

/* ------------------------------------------------------------------ random.c */

/* cukit.random's types, added to the module as Philox and Generator (and
 * _random_kernel_source); they draw with Philox4x64-10 kernels compiled once per
 * device. 0 / -1. */
int cukit_random_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_COMPUTE_H */
