/* linalg.h - the linalg layer: matrix products (cukit.matmul and Array @) on cuBLAS or cukit's own GEMM; factorizations on cuSOLVER or cukit's own kernels */
#ifndef CUKIT_LINALG_H
#define CUKIT_LINALG_H

#include "compute/compute.h"

/* linalg/'s part of the module state (st->linalg; see cukit_state). */
typedef struct cukit_linalg_state {
    PyObject *gemm_modules; /* strong ref: dict (ordinal * 64 + typecode) -> (Module, function
                               address) of cukit's own GEMM; NULL until the first */
    int backend;            /* 0 auto, 1 cuBLAS, 2 cukit's own GEMM */
    PyObject *solver_modules; /* strong ref: dict device ordinal -> Module of
                                 kernels/solver.cu (cukit's own factorizations) */
    int solver_backend;     /* 0 auto, 1 cuSOLVER, 2 cukit's own factorizations */
    int solver_last;        /* the path of the last factorization: 0 none, 1 cuSOLVER, 2 cukit's */
    int solver_warned;      /* 1: the missing cuSOLVER was reported */
    int tf32;               /* 1: float32 on cuBLAS may use TensorFloat-32 */
    int last;               /* the path of the last matmul: 0 none yet, 1 cuBLAS, 2 cukit's */
    int warned;             /* 1: the missing cuBLAS was reported */
} cukit_linalg_state;

/* cukit.matmul, the linalg switches (_matmul_config) and hooks.array_matmul (Array @).
 * 0 / -1. */
int cukit_linalg_setup(PyObject *module, cukit_state *st);
/* The factorizations under cukit.linalg (_lu_factor, _lu_solve, _lu_det, _cholesky, _qr,
 * _eigh, _svd, _solver_config), on cuSOLVER or cukit's own kernels. 0 / -1. */
int cukit_solver_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_LINALG_H */
