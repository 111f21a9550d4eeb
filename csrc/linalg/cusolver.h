/* cusolver.h - linalg/'s own: cuSOLVER's ABI as cukit declares it and its entry-point table */
#ifndef CUKIT_LINALG_CUSOLVER_H
#define CUKIT_LINALG_CUSOLVER_H

#include "linalg/cublas.h"
#include "linalg/solver.h"

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ cuSOLVER's ABI
 *
 * Only what cukit calls, written from cuSOLVER's documented C API (cusolverDn.h,
 * cusolver_common.h) so that the build needs no CUDA headers. The values have been
 * stable since cuSOLVER 11. Matrices and vectors are device addresses, passed as
 * void *, so that the four element types share one signature per routine. */

typedef struct cusolverDnContext *cusolverDnHandle_t;
typedef struct cusolverDnParams *cusolverDnParams_t; /* the 64-bit API's options */
typedef void *cusolver_params_t; /* syevjInfo_t, gesvdjInfo_t */
typedef int cusolverStatus_t;

enum {
    CUSOLVER_STATUS_SUCCESS = 0,
    CUSOLVER_STATUS_NOT_INITIALIZED = 1,
    CUSOLVER_STATUS_ALLOC_FAILED = 2,
    CUSOLVER_STATUS_INVALID_VALUE = 3,
    CUSOLVER_STATUS_ARCH_MISMATCH = 4,
    CUSOLVER_STATUS_MAPPING_ERROR = 5,
    CUSOLVER_STATUS_EXECUTION_FAILED = 6,
    CUSOLVER_STATUS_INTERNAL_ERROR = 7,
    CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED = 8,
    CUSOLVER_STATUS_NOT_SUPPORTED = 9,
    CUSOLVER_STATUS_ZERO_PIVOT = 10,
    CUSOLVER_STATUS_INVALID_LICENSE = 11,
    CUSOLVER_STATUS_INVALID_WORKSPACE = 31,
};
enum { CUSOLVER_EIG_MODE_NOVECTOR = 0, CUSOLVER_EIG_MODE_VECTOR = 1 };
enum { CUBLAS_FILL_MODE_LOWER = 0, CUBLAS_FILL_MODE_UPPER = 1 };
/* libraryPropertyType */
enum { CUKIT_MAJOR_VERSION = 0, CUKIT_MINOR_VERSION = 1, CUKIT_PATCH_LEVEL = 2 };

/* One routine in the four types: fields S<f>, D<f>, C<f>, Z<f> for the symbols
 * cusolverDn{S,D}<real> and cusolverDn{C,Z}<cplx> (syevd is heevd for complex). */
#define CUKIT_CUSOLVER_4(X, f, real, cplx, params)                                        \
    X(cusolverStatus_t, S##f, "cusolverDnS" real, REQUIRED, params)                        \
    X(cusolverStatus_t, D##f, "cusolverDnD" real, REQUIRED, params)                        \
    X(cusolverStatus_t, C##f, "cusolverDnC" cplx, REQUIRED, params)                        \
    X(cusolverStatus_t, Z##f, "cusolverDnZ" cplx, REQUIRED, params)

/* The 64-bit ("X") API of cuSOLVER 11.1 on, one symbol for the four types (the element
 * type a cudaDataType argument). OPTIONAL: an older library runs the legacy routines
 * instead. Sizes are int64_t; workspaces come in device and host bytes. */
#define CUKIT_CUSOLVER_X(X)                                                                \
    X(cusolverStatus_t, cusolverDnCreateParams, "cusolverDnCreateParams", OPTIONAL,        \
      (cusolverDnParams_t *))                                                              \
    X(cusolverStatus_t, Xpotrf_bufferSize, "cusolverDnXpotrf_bufferSize", OPTIONAL,        \
      (cusolverDnHandle_t, cusolverDnParams_t, int, int64_t, int, const void *, int64_t,   \
       int, size_t *, size_t *))                                                           \
    X(cusolverStatus_t, Xpotrf, "cusolverDnXpotrf", OPTIONAL,                              \
      (cusolverDnHandle_t, cusolverDnParams_t, int, int64_t, int, void *, int64_t, int,    \
       void *, size_t, void *, size_t, int *))                                             \
    X(cusolverStatus_t, Xgeqrf_bufferSize, "cusolverDnXgeqrf_bufferSize", OPTIONAL,        \
      (cusolverDnHandle_t, cusolverDnParams_t, int64_t, int64_t, int, const void *,        \
       int64_t, int, const void *, int, size_t *, size_t *))                               \
    X(cusolverStatus_t, Xgeqrf, "cusolverDnXgeqrf", OPTIONAL,                              \
      (cusolverDnHandle_t, cusolverDnParams_t, int64_t, int64_t, int, void *, int64_t,     \
       int, void *, int, void *, size_t, void *, size_t, int *))                           \
    X(cusolverStatus_t, Xgetrf_bufferSize, "cusolverDnXgetrf_bufferSize", OPTIONAL,        \
      (cusolverDnHandle_t, cusolverDnParams_t, int64_t, int64_t, int, const void *,        \
       int64_t, int, size_t *, size_t *))                                                  \
    X(cusolverStatus_t, Xgetrf, "cusolverDnXgetrf", OPTIONAL,                              \
      (cusolverDnHandle_t, cusolverDnParams_t, int64_t, int64_t, int, void *, int64_t,     \
       int64_t *, int, void *, size_t, void *, size_t, int *))                             \
    X(cusolverStatus_t, Xgetrs, "cusolverDnXgetrs", OPTIONAL,                              \
      (cusolverDnHandle_t, cusolverDnParams_t, int, int64_t, int64_t, int, const void *,   \
       int64_t, const int64_t *, int, void *, int64_t, int *))                             \
    X(cusolverStatus_t, Xsyevd_bufferSize, "cusolverDnXsyevd_bufferSize", OPTIONAL,        \
      (cusolverDnHandle_t, cusolverDnParams_t, int, int, int64_t, int, const void *,       \
       int64_t, int, const void *, int, size_t *, size_t *))                               \
    X(cusolverStatus_t, Xsyevd, "cusolverDnXsyevd", OPTIONAL,                              \
      (cusolverDnHandle_t, cusolverDnParams_t, int, int, int64_t, int, void *, int64_t,    \
       int, void *, int, void *, size_t, void *, size_t, int *))

#define CUKIT_CUSOLVER_API(X)                                                              \
    X(cusolverStatus_t, cusolverDnCreate, "cusolverDnCreate", REQUIRED,                    \
      (cusolverDnHandle_t *))                                                              \
    X(cusolverStatus_t, cusolverDnSetStream, "cusolverDnSetStream", REQUIRED,              \
      (cusolverDnHandle_t, CUstream))                                                      \
    X(cusolverStatus_t, cusolverGetProperty, "cusolverGetProperty", REQUIRED, (int, int *)) \
    X(cusolverStatus_t, cusolverDnCreateSyevjInfo, "cusolverDnCreateSyevjInfo", REQUIRED,  \
      (cusolver_params_t *))                                                               \
    X(cusolverStatus_t, cusolverDnCreateGesvdjInfo, "cusolverDnCreateGesvdjInfo",          \
      REQUIRED, (cusolver_params_t *))                                                     \
    X(cusolverStatus_t, cusolverDnXsyevjSetSortEig, "cusolverDnXsyevjSetSortEig", REQUIRED, \
      (cusolver_params_t, int))                                                            \
    X(cusolverStatus_t, cusolverDnXgesvdjSetSortEig, "cusolverDnXgesvdjSetSortEig",        \
      REQUIRED, (cusolver_params_t, int))                                                  \
    CUKIT_CUSOLVER_X(X)                                                                    \
    CUKIT_CUSOLVER_4(X, getrf_bufferSize, "getrf_bufferSize", "getrf_bufferSize",          \
                     (cusolverDnHandle_t, int, int, void *, int, int *))                   \
    CUKIT_CUSOLVER_4(X, getrf, "getrf", "getrf",                                           \
                     (cusolverDnHandle_t, int, int, void *, int, void *, int *, int *))    \
    CUKIT_CUSOLVER_4(X, getrs, "getrs", "getrs",                                           \
                     (cusolverDnHandle_t, int, int, int, const void *, int, const int *,   \
                      void *, int, int *))                                                 \
    CUKIT_CUSOLVER_4(X, potrf_bufferSize, "potrf_bufferSize", "potrf_bufferSize",          \
                     (cusolverDnHandle_t, int, int, void *, int, int *))                   \
    CUKIT_CUSOLVER_4(X, potrf, "potrf", "potrf",                                           \
                     (cusolverDnHandle_t, int, int, void *, int, void *, int, int *))      \
    CUKIT_CUSOLVER_4(X, potrfBatched, "potrfBatched", "potrfBatched",                      \
                     (cusolverDnHandle_t, int, int, void **, int, int *, int))             \
    CUKIT_CUSOLVER_4(X, syevd_bufferSize, "syevd_bufferSize", "heevd_bufferSize",          \
                     (cusolverDnHandle_t, int, int, int, const void *, int, const void *,  \
                      int *))                                                              \
    CUKIT_CUSOLVER_4(X, syevd, "syevd", "heevd",                                           \
                     (cusolverDnHandle_t, int, int, int, void *, int, void *, void *, int, \
                      int *))                                                              \
    CUKIT_CUSOLVER_4(X, syevjBatched_bufferSize, "syevjBatched_bufferSize",                \
                     "heevjBatched_bufferSize",                                            \
                     (cusolverDnHandle_t, int, int, int, const void *, int, const void *,  \
                      int *, cusolver_params_t, int))                                      \
    CUKIT_CUSOLVER_4(X, syevjBatched, "syevjBatched", "heevjBatched",                      \
                     (cusolverDnHandle_t, int, int, int, void *, int, void *, void *, int, \
                      int *, cusolver_params_t, int))                                      \
    CUKIT_CUSOLVER_4(X, geqrf_bufferSize, "geqrf_bufferSize", "geqrf_bufferSize",          \
                     (cusolverDnHandle_t, int, int, void *, int, int *))                   \
    CUKIT_CUSOLVER_4(X, geqrf, "geqrf", "geqrf",                                           \
                     (cusolverDnHandle_t, int, int, void *, int, void *, void *, int,      \
                      int *))                                                              \
    CUKIT_CUSOLVER_4(X, orgqr_bufferSize, "orgqr_bufferSize", "ungqr_bufferSize",          \
                     (cusolverDnHandle_t, int, int, int, const void *, int, const void *,  \
                      int *))                                                              \
    CUKIT_CUSOLVER_4(X, orgqr, "orgqr", "ungqr",                                           \
                     (cusolverDnHandle_t, int, int, int, void *, int, const void *, void *, \
                      int, int *))                                                         \
    CUKIT_CUSOLVER_4(X, gesvdj_bufferSize, "gesvdj_bufferSize", "gesvdj_bufferSize",       \
                     (cusolverDnHandle_t, int, int, int, int, const void *, int,           \
                      const void *, const void *, int, const void *, int, int *,           \
                      cusolver_params_t))                                                  \
    CUKIT_CUSOLVER_4(X, gesvdj, "gesvdj", "gesvdj",                                        \
                     (cusolverDnHandle_t, int, int, int, int, void *, int, void *, void *, \
                      int, void *, int, void *, int, int *, cusolver_params_t))            \
    CUKIT_CUSOLVER_4(X, gesvdjBatched_bufferSize, "gesvdjBatched_bufferSize",              \
                     "gesvdjBatched_bufferSize",                                           \
                     (cusolverDnHandle_t, int, int, int, const void *, int, const void *,  \
                      const void *, int, const void *, int, int *, cusolver_params_t,      \
                      int))                                                                \
    CUKIT_CUSOLVER_4(X, gesvdjBatched, "gesvdjBatched", "gesvdjBatched",                   \
                     (cusolverDnHandle_t, int, int, int, void *, int, void *, void *, int, \
                      void *, int, void *, int, int *, cusolver_params_t, int))

/* Filled once by the loader under the GIL, only read afterwards. */
typedef struct {
#define CUKIT_X(ret, name, sym, req, params) ret(*name) params;
    CUKIT_CUSOLVER_API(CUKIT_X)
#undef CUKIT_X
} cukit_cusolver_api_t;

extern cukit_cusolver_api_t cukit_cusolver_api;

/* The routine `f` of typecode tc's letter. */
#define CUSOLVER_PICK(tc, f)                                                               \
    ((tc) == CUKIT_TC_F32   ? cukit_cusolver_api.S##f                                      \
     : (tc) == CUKIT_TC_F64 ? cukit_cusolver_api.D##f                                      \
     : (tc) == CUKIT_TC_C64 ? cukit_cusolver_api.C##f                                      \
                            : cukit_cusolver_api.Z##f)

/* ------------------------------------------------------------------ cusolver_loader.c */

/* dlopen libcusolver (CUKIT_CUSOLVER, the nvidia-cusolver wheels, the toolkit, the loader
 * path) and fill cukit_cusolver_api. 0, or -1 with NotSupportedError saying where it
 * looked and what to install. Later calls repeat the first verdict. */
int cukit_cusolver_load(cukit_state *st);
/* Turn a cuSOLVER status into 0, or -1 with CudaError (by the status) naming `call`. */
int cukit_cusolver_check(cukit_state *st, cusolverStatus_t res, const char *call);
/* The handle for dev bound to stream h (made at first use, kept for the process), and
 * the Jacobi routines' parameters (defaults). NULL with an exception. */
cusolverDnHandle_t cukit_cusolver_handle(cukit_state *st, cukit_Device *dev, CUstream h,
                                         cusolver_params_t *syevj, cusolver_params_t *gesvdj);
/* The 64-bit API's parameters (defaults, made once), or NULL without an exception when
 * the loaded library lacks that API (the caller takes the legacy routine). -1 with an
 * exception when making them failed. */
int cukit_cusolver_xparams(cukit_state *st, cusolverDnParams_t *params);

#define CUSOLVER_CALL(st, tc, f, args) \
    cukit_cusolver_check((st), CUSOLVER_PICK(tc, f) args, "cusolverDn" #f)

#endif /* CUKIT_LINALG_CUSOLVER_H */
