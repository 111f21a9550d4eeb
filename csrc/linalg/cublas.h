/* cublas.h - linalg/'s own: cuBLAS's ABI as cukit declares it, its entry-point table, handles and GEMM plans */
#ifndef CUKIT_LINALG_CUBLAS_H
#define CUKIT_LINALG_CUBLAS_H

#include "linalg/linalg.h"

/* ------------------------------------------------------------------ cuBLAS's ABI (cublas_api.h)
 *
 * Only what cukit calls, written from cuBLAS's documented C API so that the build
 * needs no CUDA headers. The values have been stable since cuBLAS 11. */

typedef struct cublasContext *cublasHandle_t;
typedef int cublasStatus_t;

enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
    CUBLAS_STATUS_LICENSE_ERROR = 16,
};
enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
/* cudaDataType (library_types.h) */
enum { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_C_32F = 4, CUDA_C_64F = 5,
       CUDA_R_16BF = 14 };
/* cublasComputeType_t */
enum { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77, CUBLAS_COMPUTE_64F = 70 };
enum { CUBLAS_GEMM_DEFAULT = -1 };
/* The oldest cuBLAS cukit loads: cublasSetWorkspace and the compute types (11.0). */
#define CUKIT_CUBLAS_MIN_VERSION 11000

/* X(return type, field name, exported symbol, REQUIRED|OPTIONAL, (parameters)), as in
 * driver/entry_points.h. cublas_loader.c expands this list into cukit_cublas_api and the
 * table it walks after dlopen; nothing else calls libcublas. */
#define CUKIT_CUBLAS_API(X)                                                               \
    X(cublasStatus_t, cublasCreate, "cublasCreate_v2", REQUIRED, (cublasHandle_t *))      \
    X(cublasStatus_t, cublasDestroy, "cublasDestroy_v2", REQUIRED, (cublasHandle_t))      \
    X(cublasStatus_t, cublasGetVersion, "cublasGetVersion_v2", REQUIRED,                  \
      (cublasHandle_t, int *))                                                            \
    X(cublasStatus_t, cublasSetStream, "cublasSetStream_v2", REQUIRED,                    \
      (cublasHandle_t, CUstream))                                                         \
    X(cublasStatus_t, cublasSetWorkspace, "cublasSetWorkspace_v2", REQUIRED,              \
      (cublasHandle_t, void *, size_t))                                                   \
    X(const char *, cublasGetStatusString, "cublasGetStatusString", OPTIONAL,             \
      (cublasStatus_t))                                                                   \
    X(cublasStatus_t, cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx", REQUIRED, \
      (cublasHandle_t, int, int, int, int, int, const void *, const void *, int, int,     \
       long long, const void *, int, int, long long, const void *, void *, int, int,      \
       long long, int, int, int))                                                           \
    CUKIT_CUBLAS_LU(X, S) CUKIT_CUBLAS_LU(X, D) CUKIT_CUBLAS_LU(X, C) CUKIT_CUBLAS_LU(X, Z)

/* The batched LU of small matrices (the linalg factorizations use it beside cuSOLVER),
 * for each of the four element types; the matrices are device addresses as void *. */
#define CUKIT_CUBLAS_LU(X, L)                                                              \
    X(cublasStatus_t, cublas##L##getrfBatched, "cublas" #L "getrfBatched", OPTIONAL,       \
      (cublasHandle_t, int, void *const *, int, int *, int *, int))                        \
    X(cublasStatus_t, cublas##L##getrsBatched, "cublas" #L "getrsBatched", OPTIONAL,       \
      (cublasHandle_t, int, int, int, const void *const *, int, const int *, void *const *, \
       int, int *, int))

/* Filled once by cukit_cublas_load under the GIL, only read afterwards. */
typedef struct {
#define CUKIT_X(ret, name, sym, req, params) ret(*name) params;
    CUKIT_CUBLAS_API(CUKIT_X)
#undef CUKIT_X
} cukit_cublas_api_t;

extern cukit_cublas_api_t cukit_cublas_api;

/* ------------------------------------------------------------------ cublas_loader.c */

/* dlopen libcublas (CUKIT_CUBLAS, the nvidia-cublas wheels, the toolkit, the loader
 * path) and fill cukit_cublas_api. 0, or -1 with NotSupportedError saying where it
 * looked and what to install. Later calls repeat the first verdict. */
int cukit_cublas_load(cukit_state *st);
/* 1 when cuBLAS is loaded or can be (trying once), 0 when not; never raises. */
int cukit_cublas_available(cukit_state *st);
/* The library's path and version code (0 before a handle was made). Static storage. */
const char *cukit_cublas_path(int *version);
/* Turn a cuBLAS status into 0, or -1 with CudaError (OutOfMemoryError, NotSupportedError,
 * InvalidValueError by the status) naming `call`. */
int cukit_cublas_check(cukit_state *st, cublasStatus_t res, const char *call);
/* The handle for dev, bound to stream h with a workspace of its own for that stream
 * (made at first use, kept for the process). NULL with an exception. */
cublasHandle_t cukit_cublas_handle(cukit_state *st, cukit_Device *dev, CUstream h);

#define CUBLAS_CALL(st, fn, args) cukit_cublas_check((st), cukit_cublas_api.fn args, #fn)

/* ------------------------------------------------------------------ gemm.c */

/* One batch of C = A @ B over element strides: for z in [0, batch): C[z] (m x n) from
 * A[z] (m x k) and B[z] (k x n), all of typecode tc, at element strides
 * (row, column, batch) for each. */
typedef struct {
    int tc;
    long long m, n, k, batch;
    CUdeviceptr a, b, c;
    long long sa[3], sb[3], sc[3]; /* elements: row, column, batch */
} cukit_gemm;

/* 1 when cukit's own GEMM computes typecode tc. */
int cukit_gemm_supports(int tc);
/* Queue g on stream h with cukit's tiled GEMM (compiled at first use per device and
 * dtype, through the compile layer's caches). 0 / -1. */
int cukit_gemm_run(cukit_state *st, cukit_Device *dev, const cukit_gemm *g, CUstream h);
/* 1 when cuBLAS has a GEMM for typecode tc (the float and complex dtypes). */
int cukit_gemm_cublas_supports(int tc);
/* 1 when cuBLAS can take g as it is: unit stride along one dimension of each matrix,
 * the other's leading dimension and the sizes within int. */
int cukit_gemm_cublas_layout(const cukit_gemm *g);
/* Queue g on stream h with cuBLAS (cukit_gemm_cublas_layout(g) must hold). tf32: allow
 * TensorFloat-32 for float32. 0 / -1. */
int cukit_gemm_cublas(cukit_state *st, cukit_Device *dev, const cukit_gemm *g, CUstream h,
                      int tf32);

#endif /* CUKIT_LINALG_CUBLAS_H */
