/* cusolver.c - the factorizations on cuSOLVER and cuBLAS's batched LU: row-major stacks handed to the column-major libraries */
#include "linalg/cusolver.h"

#include <string.h>

/* Stacks of matrices up to this order go to the batched routines (cuBLAS's getrfBatched,
 * syevjBatched and gesvdjBatched take at most 32). */
#define SMALL 32

/* ------------------------------------------------------------------ helpers */

static long long
esize(const solver_job *J)
{
    return cukit_typecode_size(J->tc);
}

/* Scratch of `bytes` (at least 16) on J's device. New ref or NULL. */
static cukit_Array *
scratch(cukit_state *st, const solver_job *J, long long bytes)
{
    Py_ssize_t shape[1] = {(Py_ssize_t)(bytes > 16 ? bytes : 16)};
    return ck_empty(st, J->dev, CUKIT_TC_U8, 1, shape);
}

/* A device array of J->batch addresses base + z * step (the batched routines' operand),
 * written by a kernel on J's stream. New ref or NULL. */
static cukit_Array *
pointers(cukit_state *st, const solver_job *J, CUdeviceptr base, long long step)
{
    cukit_Array *p = scratch(st, J, J->batch * (long long)sizeof(unsigned long long));
    if (p == NULL)
        return NULL;
    unsigned long long b = (unsigned long long)base;
    CUdeviceptr out = cukit_array_ptr(p);
    void *args[] = {&b, &step, &out};
    if (cukit_solver_launch(st, J, "mat_ptrs", 1, args) < 0)
        Py_CLEAR(p);
    return p;
}

/* Copy a stack of rows x cols matrices between row-major (`to_cols` 0: src row-major,
 * dst column-major; 1: the reverse) layouts, `src_ld`/`dst_ld` the column-major side's
 * leading dimension (its matrices ld * cols apart). */
static int
relayout(const solver_job *J, CUdeviceptr dst, CUdeviceptr src, long long rows, long long cols,
         long long ld, int to_rows)
{
    Py_ssize_t e = (Py_ssize_t)esize(J);
    Py_ssize_t shape[3] = {(Py_ssize_t)J->batch, (Py_ssize_t)rows, (Py_ssize_t)cols};
    Py_ssize_t rm[3] = {(Py_ssize_t)(rows * cols) * e, (Py_ssize_t)cols * e, e};
    Py_ssize_t cm[3] = {(Py_ssize_t)(ld * cols) * e, e, (Py_ssize_t)ld * e};
    if (J->batch == 0 || rows == 0 || cols == 0)
        return 0;
    return to_rows ? cukit_strided_copy(J->dev, dst, rm, src, cm, 3, shape, e, J->h)
                   : cukit_strided_copy(J->dev, dst, cm, src, rm, 3, shape, e, J->h);
}

/* Blocks along y for an element-wise kernel over `count` elements per matrix. */
static unsigned
spread(long long count)
{
    long long gy = (count + 1023) / 1024;
    return (unsigned)(gy < 1 ? 1 : gy > 65535 ? 65535 : gy);
}

static int
shift_pivots(cukit_state *st, const solver_job *J, CUdeviceptr piv, int by)
{
    int n = (int)J->n;
    void *args[] = {&piv, &n, &by};
    return cukit_solver_launch(st, J, "piv_shift", spread(n), args);
}

/* The cudaDataType of tc's elements, and of their real parts. */
static int
data_type(int tc)
{
    return tc == CUKIT_TC_F32   ? CUDA_R_32F
           : tc == CUKIT_TC_F64 ? CUDA_R_64F
           : tc == CUKIT_TC_C64 ? CUDA_C_32F
                                : CUDA_C_64F;
}

static int
real_type(int tc)
{
    return tc == CUKIT_TC_F32 || tc == CUKIT_TC_C64 ? CUDA_R_32F : CUDA_R_64F;
}

/* The 64-bit API's workspaces: device scratch (new ref in *dev) and host scratch
 * (PyMem, *host NULL when none is asked for; release with xwork_done). 0 / -1. */
static int
xwork(cukit_state *st, const solver_job *J, size_t dev_bytes, size_t host_bytes,
      cukit_Array **dev, void **host)
{
    *host = NULL;
    if ((*dev = scratch(st, J, (long long)dev_bytes)) == NULL)
        return -1;
    if (host_bytes && (*host = PyMem_Malloc(host_bytes)) == NULL) {
        Py_CLEAR(*dev);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Frees xwork's host scratch once the calls that may read it have finished (it is
 * rarely asked for: the stream is waited for only then). -1 on failure with an exception,
 * else rc. */
static int
xwork_done(cukit_state *st, const solver_job *J, void *host, int rc)
{
    if (host == NULL)
        return rc;
    CUresult r;
    Py_BEGIN_ALLOW_THREADS
    r = cukit_api.cuStreamSynchronize(J->h);
    Py_END_ALLOW_THREADS
    PyMem_Free(host);
    if (r != CUDA_SUCCESS && rc == 0) {
        cukit_check_cu(st, r, "cuStreamSynchronize");
        return -1;
    }
    return rc;
}

/* cukit_solver_tiles' transpose_tiles: out (rows x cols, row-major) = in read
 * column-major with leading dimension ld, matrices in_step and out_step elements apart;
 * flags 1 conjugates, 2 zeroes below the diagonal. */
static int
transpose(cukit_state *st, const solver_job *J, CUdeviceptr in, CUdeviceptr out, int rows,
          int cols, int ld, long long in_step, long long out_step, int flags)
{
    void *args[] = {&in, &out, &rows, &cols, &ld, &in_step, &out_step, &flags};
    return cukit_solver_tiles(st, J, "transpose_tiles", rows, cols, args);
}

/* kernels/solver.cu's reflect (mode 0, 1 or 2) on J's n x n matrices in place. */
static int
reflect(cukit_state *st, const solver_job *J, CUdeviceptr a, int mode)
{
    int n = (int)J->n;
    void *args[] = {&a, &n, &mode};
    return cukit_solver_tiles(st, J, "reflect", n, n, args);
}

/* cuBLAS's batched LU routines of tc, or NULL where the loaded cuBLAS has none. */
static cublasStatus_t (*getrf_batched(int tc))(cublasHandle_t, int, void *const *, int, int *,
                                                int *, int)
{
    return tc == CUKIT_TC_F32   ? cukit_cublas_api.cublasSgetrfBatched
           : tc == CUKIT_TC_F64 ? cukit_cublas_api.cublasDgetrfBatched
           : tc == CUKIT_TC_C64 ? cukit_cublas_api.cublasCgetrfBatched
                                : cukit_cublas_api.cublasZgetrfBatched;
}

static cublasStatus_t (*getrs_batched(int tc))(cublasHandle_t, int, int, int,
                                                const void *const *, int, const int *,
                                                void *const *, int, int *, int)
{
    return tc == CUKIT_TC_F32   ? cukit_cublas_api.cublasSgetrsBatched
           : tc == CUKIT_TC_F64 ? cukit_cublas_api.cublasDgetrsBatched
           : tc == CUKIT_TC_C64 ? cukit_cublas_api.cublasCgetrsBatched
                                : cukit_cublas_api.cublasZgetrsBatched;
}

/* cuBLAS's handle for the batched LU of a stack of small matrices, or NULL (no
 * exception) when the one-matrix routines should run instead. */
static cublasHandle_t
batched_lu_handle(cukit_state *st, const solver_job *J)
{
    if (J->batch < 2 || J->n > SMALL || !cukit_cublas_available(st) ||
        getrf_batched(J->tc) == NULL || getrs_batched(J->tc) == NULL)
        return NULL;
    cublasHandle_t h = cukit_cublas_handle(st, J->dev, J->h);
    if (h == NULL)
        PyErr_Clear();
    return h;
}

/* ------------------------------------------------------------------ LU
 *
 * The column-major libraries see a row-major A as A^T: they factor A^T, whose
 * determinant is A's, and solve A x = b as (A^T)^T x = b (op T) on a column-major b. */

int
cukit_cusolver_lu(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr piv,
                  CUdeviceptr info)
{
    cusolverDnHandle_t h = cukit_cusolver_handle(st, J->dev, J->h, NULL, NULL);
    if (h == NULL)
        return -1;
    int n = (int)J->n, rc = -1;
    long long e = esize(J), step = (long long)n * n * e;
    cukit_Array *ws = NULL;
    cublasHandle_t bh = batched_lu_handle(st, J);
    if (bh) {
        cukit_Array *ptrs = pointers(st, J, a, step);
        if (ptrs == NULL)
            return -1;
        rc = cukit_cublas_check(st, getrf_batched(J->tc)(bh, n, (void *const *)(uintptr_t)
                                                                     cukit_array_ptr(ptrs),
                                                         n, (int *)(uintptr_t)piv,
                                                         (int *)(uintptr_t)info, (int)J->batch),
                                "cublasXgetrfBatched");
        Py_DECREF(ptrs);
        return rc < 0 ? -1 : shift_pivots(st, J, piv, -1);
    }
    int lwork = 0;
    if (CUSOLVER_CALL(st, J->tc, getrf_bufferSize, (h, n, n, (void *)(uintptr_t)a, n, &lwork)) < 0 ||
        (ws = scratch(st, J, (long long)lwork * e)) == NULL)
        goto done;
    for (long long z = 0; z < J->batch; z++)
        if (CUSOLVER_CALL(st, J->tc, getrf,
                          (h, n, n, (void *)(uintptr_t)(a + (CUdeviceptr)(z * step)), n,
                           (void *)(uintptr_t)cukit_array_ptr(ws),
                           (int *)(uintptr_t)(piv + (CUdeviceptr)(z * n * 4)),
                           (int *)(uintptr_t)(info + (CUdeviceptr)(z * 4)))) < 0)
            goto done;
    rc = shift_pivots(st, J, piv, -1);
done:
    Py_XDECREF(ws);
    return rc;
}

int
cukit_cusolver_lu_solve(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr piv,
                        CUdeviceptr b, long long nrhs)
{
    cusolverDnHandle_t h = cukit_cusolver_handle(st, J->dev, J->h, NULL, NULL);
    if (h == NULL)
        return -1;
    int n = (int)J->n, k = (int)nrhs, rc = -1;
    long long e = esize(J), step = (long long)n * n * e, bstep = (long long)n * k * e;
    Py_ssize_t pshape[1] = {(Py_ssize_t)(J->batch * n)};
    cukit_Array *t = scratch(st, J, J->batch * bstep), *p1 = NULL, *info = NULL;
    cukit_Array *ap = NULL, *tp = NULL;
    if (t == NULL || (p1 = ck_empty(st, J->dev, CUKIT_TC_I32, 1, pshape)) == NULL ||
        (info = scratch(st, J, J->batch * 4)) == NULL)
        goto done;
    Py_ssize_t s1[1] = {4};
    CUdeviceptr tb = cukit_array_ptr(t), pp = cukit_array_ptr(p1);
    /* b to column-major (a vector is both), the pivots back to the library's count. */
    if (relayout(J, tb, b, n, k, n, 0) < 0 ||
        (pshape[0] && cukit_strided_copy(J->dev, pp, s1, piv, s1, 1, pshape, 4, J->h) < 0) ||
        shift_pivots(st, J, pp, 1) < 0)
        goto done;
    cublasHandle_t bh = batched_lu_handle(st, J);
    if (bh) {
        int host_info = 0;
        if ((ap = pointers(st, J, a, step)) == NULL || (tp = pointers(st, J, tb, bstep)) == NULL ||
            cukit_cublas_check(st, getrs_batched(J->tc)(
                                       bh, CUBLAS_OP_T, n, k,
                                       (const void *const *)(uintptr_t)cukit_array_ptr(ap), n,
                                       (const int *)(uintptr_t)pp,
                                       (void *const *)(uintptr_t)cukit_array_ptr(tp), n,
                                       &host_info, (int)J->batch),
                               "cublasXgetrsBatched") < 0)
            goto done;
    }
    else {
        for (long long z = 0; z < J->batch; z++)
            if (CUSOLVER_CALL(st, J->tc, getrs,
                              (h, CUBLAS_OP_T, n, k,
                               (const void *)(uintptr_t)(a + (CUdeviceptr)(z * step)), n,
                               (const int *)(uintptr_t)(pp + (CUdeviceptr)(z * n * 4)),
                               (void *)(uintptr_t)(tb + (CUdeviceptr)(z * bstep)), n,
                               (int *)(uintptr_t)cukit_array_ptr(info))) < 0)
                goto done;
    }
    rc = relayout(J, b, tb, n, k, n, 1);
done:
    Py_XDECREF(t);
    Py_XDECREF(p1);
    Py_XDECREF(info);
    Py_XDECREF(ap);
    Py_XDECREF(tp);
    return rc;
}

/* cukit_cusolver_inv one matrix after another on the 64-bit API (its pivots are int64,
 * kept here only). 1 when done, 0 when the library lacks that API, -1 with an exception. */
static int
xinv(cukit_state *st, const solver_job *J, cusolverDnHandle_t h, CUdeviceptr a, CUdeviceptr x,
     CUdeviceptr info)
{
    cusolverDnParams_t params;
    if (!cukit_cusolver_api.Xgetrf || !cukit_cusolver_api.Xgetrf_bufferSize ||
        !cukit_cusolver_api.Xgetrs)
        return 0;
    if (cukit_cusolver_xparams(st, &params) < 0)
        return -1;
    if (params == NULL)
        return 0;
    int64_t n = J->n;
    int t = data_type(J->tc), rc = 0;
    long long step = n * n * esize(J);
    size_t dev_bytes = 0, host_bytes = 0;
    cukit_Array *ws = NULL, *piv = NULL;
    void *host = NULL;
    if (cukit_cusolver_check(st, cukit_cusolver_api.Xgetrf_bufferSize(
                                     h, params, n, n, t, (const void *)(uintptr_t)a, n, t,
                                     &dev_bytes, &host_bytes),
                             "cusolverDnXgetrf_bufferSize") < 0 ||
        (piv = scratch(st, J, n * 8 + 4)) == NULL ||
        xwork(st, J, dev_bytes, host_bytes, &ws, &host) < 0) {
        Py_XDECREF(piv);
        return -1;
    }
    /* getrs's info (argument checks only) goes past the pivots */
    int64_t *P = (int64_t *)(uintptr_t)cukit_array_ptr(piv);
    int *rs_info = (int *)(uintptr_t)(cukit_array_ptr(piv) + (CUdeviceptr)(n * 8));
    void *D = (void *)(uintptr_t)cukit_array_ptr(ws);
    for (long long z = 0; z < J->batch && rc == 0; z++) {
        void *A = (void *)(uintptr_t)(a + (CUdeviceptr)(z * step));
        rc = cukit_cusolver_check(st, cukit_cusolver_api.Xgetrf(
                                          h, params, n, n, t, A, n, P, t, D, dev_bytes, host,
                                          host_bytes, (int *)(uintptr_t)(info + (CUdeviceptr)(z * 4))),
                                  "cusolverDnXgetrf");
        if (rc == 0)
            rc = cukit_cusolver_check(st, cukit_cusolver_api.Xgetrs(
                                              h, params, CUBLAS_OP_N, n, n, t, A, n, P, t,
                                              (void *)(uintptr_t)(x + (CUdeviceptr)(z * step)),
                                              n, rs_info),
                                      "cusolverDnXgetrs");
    }
    Py_DECREF(ws);
    Py_DECREF(piv);
    rc = xwork_done(st, J, host, rc);
    return rc < 0 ? -1 : 1;
}

/* inv: the library factors A^T (a read column-major) and solves A^T X = I (op N) against
 * an identity made in x; X = (A^-1)^T column-major is A^-1 row-major: no transposes. */
int
cukit_cusolver_inv(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr x,
                   CUdeviceptr info)
{
    cusolverDnHandle_t h = cukit_cusolver_handle(st, J->dev, J->h, NULL, NULL);
    if (h == NULL)
        return -1;
    int n = (int)J->n, rc = -1, lwork = 0;
    long long e = esize(J), step = (long long)n * n * e;
    cukit_Array *piv = scratch(st, J, J->batch * n * 4), *ws = NULL, *ap = NULL, *xp = NULL;
    void *eargs[] = {&x, &n};
    if (piv == NULL || cukit_solver_tiles(st, J, "eye_tiles", n, n, eargs) < 0)
        goto done;
    CUdeviceptr pp = cukit_array_ptr(piv);
    cublasHandle_t bh = batched_lu_handle(st, J);
    if (bh) {
        int host_info = 0;
        if ((ap = pointers(st, J, a, step)) == NULL || (xp = pointers(st, J, x, step)) == NULL)
            goto done;
        void *const *A = (void *const *)(uintptr_t)cukit_array_ptr(ap);
        if (cukit_cublas_check(st, getrf_batched(J->tc)(bh, n, A, n, (int *)(uintptr_t)pp,
                                                        (int *)(uintptr_t)info, (int)J->batch),
                               "cublasXgetrfBatched") < 0 ||
            cukit_cublas_check(st, getrs_batched(J->tc)(
                                       bh, CUBLAS_OP_N, n, n, (const void *const *)A, n,
                                       (const int *)(uintptr_t)pp,
                                       (void *const *)(uintptr_t)cukit_array_ptr(xp), n,
                                       &host_info, (int)J->batch),
                               "cublasXgetrsBatched") < 0)
            goto done;
        rc = 0;
        goto done;
    }
    int done64 = xinv(st, J, h, a, x, info);
    if (done64 != 0) {
        rc = done64 < 0 ? -1 : 0;
        goto done;
    }
    if (CUSOLVER_CALL(st, J->tc, getrf_bufferSize, (h, n, n, (void *)(uintptr_t)a, n, &lwork)) < 0 ||
        (ws = scratch(st, J, (long long)lwork * e + 4)) == NULL)
        goto done;
    /* getrs's info (argument checks only) goes past the workspace */
    CUdeviceptr W = cukit_array_ptr(ws), rs_info = W + (CUdeviceptr)((long long)lwork * e);
    for (long long z = 0; z < J->batch; z++) {
        CUdeviceptr az = a + (CUdeviceptr)(z * step), pz = pp + (CUdeviceptr)(z * n * 4);
        if (CUSOLVER_CALL(st, J->tc, getrf,
                          (h, n, n, (void *)(uintptr_t)az, n, (void *)(uintptr_t)W,
                           (int *)(uintptr_t)pz, (int *)(uintptr_t)(info + (CUdeviceptr)(z * 4)))) < 0 ||
            CUSOLVER_CALL(st, J->tc, getrs,
                          (h, CUBLAS_OP_N, n, n, (const void *)(uintptr_t)az, n,
                           (const int *)(uintptr_t)pz,
                           (void *)(uintptr_t)(x + (CUdeviceptr)(z * step)), n,
                           (int *)(uintptr_t)rs_info)) < 0)
            goto done;
    }
    rc = 0;
done:
    Py_XDECREF(piv);
    Py_XDECREF(ws);
    Py_XDECREF(ap);
    Py_XDECREF(xp);
    return rc;
}

/* ------------------------------------------------------------------ Cholesky
 *
 * A Hermitian row-major A is conj(A) to the library; the upper factor U of conj(A) =
 * U^H U, read row-major, is A's lower factor L = U^T, and the upper triangle the
 * library reads is A's lower one. */

/* One matrix on the 64-bit API with the lower fill mode, as the fastest peer calls it:
 * A's lower triangle mirrored into the upper one (the library's lower, read
 * column-major), and the factor it leaves there conjugate-transposed back into the lower
 * triangle, the upper zeroed, by two in-place tile passes. */
static int
xcholesky(cukit_state *st, const solver_job *J, cusolverDnHandle_t h, CUdeviceptr a,
          CUdeviceptr info)
{
    cusolverDnParams_t params;
    if (cukit_cusolver_xparams(st, &params) < 0)
        return -1;
    int64_t n = J->n;
    int t = data_type(J->tc), rc = -1;
    size_t dev_bytes = 0, host_bytes = 0;
    cukit_Array *ws = NULL;
    void *host = NULL, *A = (void *)(uintptr_t)a;
    if (reflect(st, J, a, 0) < 0 ||
        cukit_cusolver_check(st, cukit_cusolver_api.Xpotrf_bufferSize(
                                     h, params, CUBLAS_FILL_MODE_LOWER, n, t, A, n, t,
                                     &dev_bytes, &host_bytes),
                             "cusolverDnXpotrf_bufferSize") < 0 ||
        xwork(st, J, dev_bytes, host_bytes, &ws, &host) < 0)
        return -1;
    rc = cukit_cusolver_check(st, cukit_cusolver_api.Xpotrf(
                                      h, params, CUBLAS_FILL_MODE_LOWER, n, t, A, n, t,
                                      (void *)(uintptr_t)cukit_array_ptr(ws), dev_bytes, host,
                                      host_bytes, (int *)(uintptr_t)info),
                              "cusolverDnXpotrf");
    if (rc == 0)
        rc = reflect(st, J, a, 1);
    Py_DECREF(ws);
    return xwork_done(st, J, host, rc);
}

int
cukit_cusolver_cholesky(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr info)
{
    cusolverDnHandle_t h = cukit_cusolver_handle(st, J->dev, J->h, NULL, NULL);
    if (h == NULL)
        return -1;
    int n = (int)J->n, rc = -1, lwork = 0;
    long long e = esize(J), step = (long long)n * n * e;
    cukit_Array *ws = NULL;
    if (J->batch > 1) {
        if ((ws = pointers(st, J, a, step)) == NULL ||
            CUSOLVER_CALL(st, J->tc, potrfBatched,
                          (h, CUBLAS_FILL_MODE_UPPER, n, (void **)(uintptr_t)cukit_array_ptr(ws),
                           n, (int *)(uintptr_t)info, (int)J->batch)) < 0)
            goto done;
    }
    else if (cukit_cusolver_api.cusolverDnCreateParams && cukit_cusolver_api.Xpotrf &&
             cukit_cusolver_api.Xpotrf_bufferSize) {
        rc = xcholesky(st, J, h, a, info);
        goto done;
    }
    else {
        if (CUSOLVER_CALL(st, J->tc, potrf_bufferSize,
                          (h, CUBLAS_FILL_MODE_UPPER, n, (void *)(uintptr_t)a, n, &lwork)) < 0 ||
            (ws = scratch(st, J, (long long)lwork * e)) == NULL ||
            CUSOLVER_CALL(st, J->tc, potrf,
                          (h, CUBLAS_FILL_MODE_UPPER, n, (void *)(uintptr_t)a, n,
                           (void *)(uintptr_t)cukit_array_ptr(ws), lwork,
                           (int *)(uintptr_t)info)) < 0)
            goto done;
    }
    void *args[] = {&a, &n};
    rc = cukit_solver_launch(st, J, "zero_upper", spread((long long)n * n), args);
done:
    Py_XDECREF(ws);
    return rc;
}

/* ------------------------------------------------------------------ eigh
 *
 * The library sees conj(A): the same eigenvalues, conjugate eigenvectors, which it
 * writes column-major; read row-major they are V^H, turned back into V here. A's
 * lower triangle is the library's upper. */

/* syevd on the 64-bit API (cusolverDnXsyevd), one matrix after another. */
static int
xeigh(cukit_state *st, const solver_job *J, cusolverDnHandle_t h, CUdeviceptr a, CUdeviceptr w,
      CUdeviceptr info, int uplo, int jobz)
{
    cusolverDnParams_t params;
    if (cukit_cusolver_xparams(st, &params) < 0)
        return -1;
    int64_t n = J->n;
    int t = data_type(J->tc), rt = real_type(J->tc), rc = 0;
    long long step = n * n * esize(J), wstep = n * (rt == CUDA_R_32F ? 4 : 8);
    size_t dev_bytes = 0, host_bytes = 0;
    cukit_Array *ws = NULL;
    void *host = NULL;
    if (cukit_cusolver_check(st, cukit_cusolver_api.Xsyevd_bufferSize(
                                     h, params, jobz, uplo, n, t, (const void *)(uintptr_t)a, n,
                                     rt, (const void *)(uintptr_t)w, t, &dev_bytes, &host_bytes),
                             "cusolverDnXsyevd_bufferSize") < 0 ||
        xwork(st, J, dev_bytes, host_bytes, &ws, &host) < 0)
        return -1;
    void *D = (void *)(uintptr_t)cukit_array_ptr(ws);
    for (long long z = 0; z < J->batch && rc == 0; z++)
        rc = cukit_cusolver_check(st, cukit_cusolver_api.Xsyevd(
                                          h, params, jobz, uplo, n, t,
                                          (void *)(uintptr_t)(a + (CUdeviceptr)(z * step)), n,
                                          rt, (void *)(uintptr_t)(w + (CUdeviceptr)(z * wstep)),
                                          t, D, dev_bytes, host, host_bytes,
                                          (int *)(uintptr_t)(info + (CUdeviceptr)(z * 4))),
                                  "cusolverDnXsyevd");
    Py_DECREF(ws);
    return xwork_done(st, J, host, rc);
}

int
cukit_cusolver_eigh(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr w,
                    CUdeviceptr info, int lower, int vectors)
{
    cusolver_params_t syevj;
    cusolverDnHandle_t h = cukit_cusolver_handle(st, J->dev, J->h, &syevj, NULL);
    if (h == NULL)
        return -1;
    int n = (int)J->n, rc = -1, lwork = 0;
    int uplo = lower ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
    int jobz = vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
    long long e = esize(J), step = (long long)n * n * e;
    long long wstep = (long long)n * (J->tc == CUKIT_TC_F32 || J->tc == CUKIT_TC_C64 ? 4 : 8);
    cukit_Array *ws = NULL;
    void *A = (void *)(uintptr_t)a, *W = (void *)(uintptr_t)w;
    if (J->batch > 1 && n <= SMALL) {
        if (CUSOLVER_CALL(st, J->tc, syevjBatched_bufferSize,
                          (h, jobz, uplo, n, A, n, W, &lwork, syevj, (int)J->batch)) < 0 ||
            (ws = scratch(st, J, (long long)lwork * e)) == NULL ||
            CUSOLVER_CALL(st, J->tc, syevjBatched,
                          (h, jobz, uplo, n, A, n, W, (void *)(uintptr_t)cukit_array_ptr(ws),
                           lwork, (int *)(uintptr_t)info, syevj, (int)J->batch)) < 0)
            goto done;
    }
    else if (cukit_cusolver_api.cusolverDnCreateParams && cukit_cusolver_api.Xsyevd &&
             cukit_cusolver_api.Xsyevd_bufferSize) {
        if (xeigh(st, J, h, a, w, info, uplo, jobz) < 0)
            goto done;
    }
    else {
        if (CUSOLVER_CALL(st, J->tc, syevd_bufferSize, (h, jobz, uplo, n, A, n, W, &lwork)) < 0 ||
            (ws = scratch(st, J, (long long)lwork * e)) == NULL)
            goto done;
        for (long long z = 0; z < J->batch; z++)
            if (CUSOLVER_CALL(st, J->tc, syevd,
                              (h, jobz, uplo, n, (void *)(uintptr_t)(a + (CUdeviceptr)(z * step)),
                               n, (void *)(uintptr_t)(w + (CUdeviceptr)(z * wstep)),
                               (void *)(uintptr_t)cukit_array_ptr(ws), lwork,
                               (int *)(uintptr_t)(info + (CUdeviceptr)(z * 4)))) < 0)
                goto done;
    }
    if (vectors && reflect(st, J, a, 2) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(ws);
    return rc;
}

/* ------------------------------------------------------------------ QR
 *
 * geqrf needs A itself column-major: one tiled transposing copy into t. R is read out
 * of t by a tiled kernel straight into r (row-major, zeros below the diagonal); orgqr
 * makes Q in place in t (in a wider buffer only for 'complete' Q of a tall matrix), and
 * a tiled kernel writes it to q row-major. */

/* geqrf of the column-major m x n matrices in t (tau k per matrix), on the 64-bit API
 * where the library has it. */
static int
geqrf(cukit_state *st, const solver_job *J, cusolverDnHandle_t h, CUdeviceptr t,
      CUdeviceptr tau, CUdeviceptr info)
{
    int m = (int)J->m, n = (int)J->n, k = m < n ? m : n, rc = 0, lwork = 0;
    int dt = data_type(J->tc);
    long long e = esize(J), step = (long long)m * n * e;
    cusolverDnParams_t params = NULL;
    size_t dev_bytes = 0, host_bytes = 0;
    cukit_Array *ws = NULL;
    void *host = NULL;
    int x = cukit_cusolver_api.Xgeqrf && cukit_cusolver_api.Xgeqrf_bufferSize;
    if (x && cukit_cusolver_xparams(st, &params) < 0)
        return -1;
    x = x && params;
    if (x ? cukit_cusolver_check(st, cukit_cusolver_api.Xgeqrf_bufferSize(
                                         h, params, m, n, dt, (const void *)(uintptr_t)t, m, dt,
                                         (const void *)(uintptr_t)tau, dt, &dev_bytes,
                                         &host_bytes),
                                 "cusolverDnXgeqrf_bufferSize") < 0 ||
                xwork(st, J, dev_bytes, host_bytes, &ws, &host) < 0
          : CUSOLVER_CALL(st, J->tc, geqrf_bufferSize, (h, m, n, (void *)(uintptr_t)t, m, &lwork)) < 0 ||
                (ws = scratch(st, J, (long long)lwork * e)) == NULL)
        return -1;
    void *W = (void *)(uintptr_t)cukit_array_ptr(ws);
    for (long long z = 0; z < J->batch && rc == 0; z++) {
        void *A = (void *)(uintptr_t)(t + (CUdeviceptr)(z * step));
        void *T = (void *)(uintptr_t)(tau + (CUdeviceptr)(z * k * e));
        int *I = (int *)(uintptr_t)(info + (CUdeviceptr)(z * 4));
        rc = x ? cukit_cusolver_check(st, cukit_cusolver_api.Xgeqrf(h, params, m, n, dt, A, m, dt, T,
                                                                   dt, W, dev_bytes, host,
                                                                   host_bytes, I),
                                      "cusolverDnXgeqrf")
               : CUSOLVER_CALL(st, J->tc, geqrf, (h, m, n, A, m, T, W, lwork, I));
    }
    Py_DECREF(ws);
    return xwork_done(st, J, host, rc);
}

int
cukit_cusolver_qr(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr tau,
                  CUdeviceptr q, long long kq, CUdeviceptr r, long long rows, CUdeviceptr info)
{
    cusolverDnHandle_t h = cukit_cusolver_handle(st, J->dev, J->h, NULL, NULL);
    if (h == NULL)
        return -1;
    int m = (int)J->m, n = (int)J->n, k = m < n ? m : n, kqi = (int)kq, rc = -1, lq = 0;
    long long e = esize(J), step = (long long)m * n * e;
    /* Q is made where the factors are when it fits their m x n, else in an m x kq copy */
    int wide = q && kq > n;
    long long qstep = wide ? (long long)m * kq * e : step;
    cukit_Array *t = scratch(st, J, J->batch * step), *qb = NULL, *ws = NULL;
    if (t == NULL || (wide && (qb = scratch(st, J, J->batch * qstep)) == NULL))
        goto done;
    CUdeviceptr tp = cukit_array_ptr(t), qp = wide ? cukit_array_ptr(qb) : tp;
    /* t = A column-major: A (m x n row-major) read as the column-major n x m A^T, written
     * row-major n x m, which is A column-major */
    if (transpose(st, J, a, tp, n, m, n, (long long)m * n, (long long)m * n, 0) < 0 ||
        geqrf(st, J, h, tp, tau, info) < 0 ||
        transpose(st, J, tp, r, (int)rows, n, m, (long long)m * n, rows * n, 2) < 0)
        goto done;
    if (q == 0) {
        rc = 0;
        goto done;
    }
    if (wide) {
        /* The reflectors (the first k columns) into Q's column-major buffer. */
        Py_ssize_t sh[3] = {(Py_ssize_t)J->batch, k, m};
        Py_ssize_t ss[3] = {(Py_ssize_t)step, (Py_ssize_t)(m * e), (Py_ssize_t)e};
        Py_ssize_t ds[3] = {(Py_ssize_t)qstep, (Py_ssize_t)(m * e), (Py_ssize_t)e};
        if (k && cukit_strided_copy(J->dev, qp, ds, tp, ss, 3, sh, (Py_ssize_t)e, J->h) < 0)
            goto done;
    }
    if (CUSOLVER_CALL(st, J->tc, orgqr_bufferSize,
                      (h, m, kqi, k, (const void *)(uintptr_t)qp, m,
                       (const void *)(uintptr_t)tau, &lq)) < 0 ||
        (ws = scratch(st, J, (long long)lq * e)) == NULL)
        goto done;
    void *W = (void *)(uintptr_t)cukit_array_ptr(ws);
    for (long long z = 0; z < J->batch; z++)
        if (CUSOLVER_CALL(st, J->tc, orgqr,
                          (h, m, kqi, k, (void *)(uintptr_t)(qp + (CUdeviceptr)(z * qstep)), m,
                           (const void *)(uintptr_t)(tau + (CUdeviceptr)(z * k * e)), W, lq,
                           (int *)(uintptr_t)(info + (CUdeviceptr)(z * 4)))) < 0)
            goto done;
    rc = transpose(st, J, qp, q, m, kqi, m, qstep / e, (long long)m * kq, 0);
done:
    Py_XDECREF(t);
    Py_XDECREF(qb);
    Py_XDECREF(ws);
    return rc;
}

/* ------------------------------------------------------------------ SVD
 *
 * The library sees M = A^T (n x m, no copy) and gives M = U_M S V_M^H, so A = conj(V_M)
 * S U_M^T: vh is U_M's memory as it is, u the conjugate transpose of V_M's. */

int
cukit_cusolver_svd(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr s,
                   CUdeviceptr u, CUdeviceptr vh, CUdeviceptr info, int full, int uv)
{
    cusolver_params_t gesvdj;
    cusolverDnHandle_t h = cukit_cusolver_handle(st, J->dev, J->h, NULL, &gesvdj);
    if (h == NULL)
        return -1;
    int m = (int)J->m, n = (int)J->n, rc = -1, lwork = 0;
    int batched = J->batch > 1 && m <= SMALL && n <= SMALL;
    int vcols = batched || full ? m : n, mu = full ? m : n;
    int jobz = uv ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR, econ = !full;
    long long e = esize(J), re = J->tc == CUKIT_TC_F32 || J->tc == CUKIT_TC_C64 ? 4 : 8;
    long long step = (long long)m * n * e, vstep = (long long)m * vcols * e;
    cukit_Array *tv = scratch(st, J, J->batch * vstep), *ws = NULL;
    if (tv == NULL)
        goto done;
    CUdeviceptr vp = cukit_array_ptr(tv);
    void *A = (void *)(uintptr_t)a, *S = (void *)(uintptr_t)s, *U = (void *)(uintptr_t)vh;
    void *V = (void *)(uintptr_t)vp;
    if (batched) {
        if (CUSOLVER_CALL(st, J->tc, gesvdjBatched_bufferSize,
                          (h, jobz, n, m, A, n, S, U, n, V, m, &lwork, gesvdj, (int)J->batch)) < 0 ||
            (ws = scratch(st, J, (long long)lwork * e)) == NULL ||
            CUSOLVER_CALL(st, J->tc, gesvdjBatched,
                          (h, jobz, n, m, A, n, S, U, n, V, m,
                           (void *)(uintptr_t)cukit_array_ptr(ws), lwork, (int *)(uintptr_t)info,
                           gesvdj, (int)J->batch)) < 0)
            goto done;
    }
    else {
        if (CUSOLVER_CALL(st, J->tc, gesvdj_bufferSize,
                          (h, jobz, econ, n, m, A, n, S, U, n, V, m, &lwork, gesvdj)) < 0 ||
            (ws = scratch(st, J, (long long)lwork * e)) == NULL)
            goto done;
        for (long long z = 0; z < J->batch; z++)
            if (CUSOLVER_CALL(st, J->tc, gesvdj,
                              (h, jobz, econ, n, m, (void *)(uintptr_t)(a + (CUdeviceptr)(z * step)),
                               n, (void *)(uintptr_t)(s + (CUdeviceptr)(z * n * re)),
                               (void *)(uintptr_t)(vh + (CUdeviceptr)(z * n * n * e)), n,
                               (void *)(uintptr_t)(vp + (CUdeviceptr)(z * vstep)), m,
                               (void *)(uintptr_t)cukit_array_ptr(ws), lwork,
                               (int *)(uintptr_t)(info + (CUdeviceptr)(z * 4)), gesvdj)) < 0)
                goto done;
    }
    if (uv && transpose(st, J, vp, u, m, mu, m, (long long)m * vcols, (long long)m * mu, 1) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(tv);
    Py_XDECREF(ws);
    return rc;
}
