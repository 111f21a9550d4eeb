/* solver.h - linalg/'s own: one stacked factorization's operands, shared by solver.c (cukit's own kernels) and cusolver.c */
#ifndef CUKIT_LINALG_SOLVER_H
#define CUKIT_LINALG_SOLVER_H

#include "linalg/linalg.h"

/* A stack of `batch` matrices of m x n elements of typecode tc, row-major and
 * contiguous one after another, on dev; the work is queued on h. */
typedef struct {
    cukit_Device *dev;
    int tc;                          /* CUKIT_TC_F32, F64, C64 or C128 */
    long long batch, m, n;
    int nb;                          /* the stack's dimensions (the operand's but the last two) */
    Py_ssize_t bshape[CUKIT_MAXDIM];
    CUstream h;
} solver_job;

/* ------------------------------------------------------------------ solver.c */

/* Launch kernels/solver.cu's `name` for J's type on J's stream: grid (batch, gy), a
 * block per matrix (gy 1, as many threads as the matrix's order needs up to 256) or
 * gy blocks of 256 each (the element-wise kernels). 0 / -1. */
int cukit_solver_launch(cukit_state *st, const solver_job *J, const char *name, unsigned gy,
                        void **args);

/* Launch kernels/solver.cu's tile kernel `name` (transpose_tiles, reflect, eye_tiles)
 * for J's type on J's stream over J->batch matrices of rows x cols: (32, 8) blocks, one
 * per 32 x 32 tile. 0 / -1. */
int cukit_solver_tiles(cukit_state *st, const solver_job *J, const char *name, long long rows,
                       long long cols, void **args);
/* x (n x k per matrix) = A^-1 B for J's stack of n x n a (B the identity when b is 0),
 * n and k at most 32, by kernels/solver.cu's small_solve; info per matrix as getrf's.
 * 0 / -1. */
int cukit_solver_small(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr b,
                       CUdeviceptr x, CUdeviceptr info, long long k);

/* ------------------------------------------------------------------ cusolver.c
 *
 * The same operations on cuSOLVER (and cuBLAS's batched LU), each 0 / -1. Layouts are
 * solver.c's: a row-major matrix is its transpose to the column-major libraries, which
 * each of these accounts for. Their int outputs (pivots, info) are solver.c's too:
 * pivots 0-based row swaps, info 0 or a positive LAPACK code. */

/* 1 when cuSOLVER runs this process's factorizations (the switch, the backend, the
 * library; the emulator never), 0 when cukit's own kernels do; -1 with
 * NotSupportedError when cuSOLVER is demanded and absent. Warns once when it is absent. */
int cukit_cusolver_choose(cukit_state *st);
/* The library's path and version code (0 before it loaded). Static storage. */
const char *cukit_cusolver_path(int *version);
/* a (each n x n) = P L U as the library keeps it (the factors of the transpose); piv
 * 0-based; info per matrix. cukit_cusolver_lu_solve takes those factors. */
int cukit_cusolver_lu(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr piv,
                      CUdeviceptr info);
int cukit_cusolver_lu_solve(cukit_state *st, const solver_job *J, CUdeviceptr a,
                            CUdeviceptr piv, CUdeviceptr b, long long nrhs);
/* x (n x n per matrix) = a^-1, a overwritten by its factors. */
int cukit_cusolver_inv(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr x,
                       CUdeviceptr info);
int cukit_cusolver_cholesky(cukit_state *st, const solver_job *J, CUdeviceptr a,
                            CUdeviceptr info);
/* The eigenvectors are left in a (row-major, as columns). */
int cukit_cusolver_eigh(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr w,
                        CUdeviceptr info, int lower, int vectors);
/* r (rows x n, row-major) = R (zeros below the diagonal); q (m x kq, row-major; 0: not
 * wanted) gets Q's first kq columns. a is only read. */
int cukit_cusolver_qr(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr tau,
                      CUdeviceptr q, long long kq, CUdeviceptr r, long long rows,
                      CUdeviceptr info);
/* m >= n; u (m x m when full, else m x n) and vh (n x n) row-major. */
int cukit_cusolver_svd(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr s,
                       CUdeviceptr u, CUdeviceptr vh, CUdeviceptr info, int full, int uv);

#endif /* CUKIT_LINALG_SOLVER_H */
