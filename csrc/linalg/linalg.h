/* linalg.h - the linalg layer: matrix products (cukit.matmul and Array @) on cuBLAS or cukit's own GEMM */
#ifndef CUKIT_LINALG_H
#define CUKIT_LINALG_H

#include "compute/compute.h"

/* linalg/'s part of the module state (st->linalg; see cukit_state). */
typedef struct cukit_linalg_state {
    PyObject *gemm_modules; /* strong ref: dict (ordinal * 64 + typecode) -> (Module, function
                               address) of cukit's own GEMM; NULL until the first */
    int backend;            /* 0 auto, 1 cuBLAS, 2 cukit's own GEMM */
    int tf32;               /* 1: float32 on cuBLAS may use TensorFloat-32 */
    int last;               /* the path of the last matmul: 0 none yet, 1 cuBLAS, 2 cukit's */
    int warned;             /* 1: the missing cuBLAS was reported */
} cukit_linalg_state;

/* cukit.matmul, the linalg switches (_matmul_config) and hooks.array_matmul (Array @).
 * 0 / -1. */
int cukit_linalg_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_LINALG_H */
