/* linalg.h - the linalg layer: matrix products (cukit.matmul and Array @) on cuBLAS or cukit's own GEMM */
#ifndef CUKIT_LINALG_H
#define CUKIT_LINALG_H

#include "compute/compute.h"

/* cukit.matmul, the linalg switches (_matmul_config) and hooks.array_matmul (Array @).
 * 0 / -1. */
int cukit_linalg_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_LINALG_H */
