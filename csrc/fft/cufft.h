/* cufft.h - fft/'s own: cuFFT's ABI as cukit declares it, its entry-point table, plans, and cukit's own FFT */
#ifndef CUKIT_FFT_CUFFT_H
#define CUKIT_FFT_CUFFT_H

#include "fft/fft.h"

/* ------------------------------------------------------------------ cuFFT's ABI (cufft.h)
 *
 * Only what cukit calls, written from cuFFT's documented C API so that the build needs
 * no CUDA headers. The values have been stable since cuFFT 10. */

typedef int cufftHandle;
typedef int cufftResult;

enum {
    CUFFT_SUCCESS = 0x0,
    CUFFT_INVALID_PLAN = 0x1,
    CUFFT_ALLOC_FAILED = 0x2,
    CUFFT_INVALID_TYPE = 0x3,
    CUFFT_INVALID_VALUE = 0x4,
    CUFFT_INTERNAL_ERROR = 0x5,
    CUFFT_EXEC_FAILED = 0x6,
    CUFFT_SETUP_FAILED = 0x7,
    CUFFT_INVALID_SIZE = 0x8,
    CUFFT_UNALIGNED_DATA = 0x9,
    CUFFT_INVALID_DEVICE = 0xB,
    CUFFT_NO_WORKSPACE = 0xD,
    CUFFT_NOT_IMPLEMENTED = 0xE,
    CUFFT_NOT_SUPPORTED = 0x10,
};
enum { CUFFT_FORWARD = -1, CUFFT_INVERSE = 1 };
/* cufftType */
enum { CUFFT_R2C = 0x2a, CUFFT_C2R = 0x2c, CUFFT_C2C = 0x29, CUFFT_D2Z = 0x6a, CUFFT_Z2D = 0x6c,
       CUFFT_Z2Z = 0x69 };

/* X(return type, field name, exported symbol, REQUIRED|OPTIONAL, (parameters)), as in
 * driver/entry_points.h. cufft_loader.c expands this list into cukit_cufft_api and the
 * table it walks after dlopen; nothing else calls libcufft. The data pointers are
 * device addresses, passed as void *. */
#define CUKIT_CUFFT_API(X)                                                                 \
    X(cufftResult, cufftCreate, "cufftCreate", REQUIRED, (cufftHandle *))                  \
    X(cufftResult, cufftDestroy, "cufftDestroy", REQUIRED, (cufftHandle))                  \
    X(cufftResult, cufftGetVersion, "cufftGetVersion", REQUIRED, (int *))                  \
    X(cufftResult, cufftSetStream, "cufftSetStream", REQUIRED, (cufftHandle, CUstream))    \
    X(cufftResult, cufftMakePlanMany64, "cufftMakePlanMany64", REQUIRED,                   \
      (cufftHandle, int, long long *, long long *, long long, long long, long long *,      \
       long long, long long, int, long long, size_t *))                                    \
    X(cufftResult, cufftExecC2C, "cufftExecC2C", REQUIRED, (cufftHandle, void *, void *, int)) \
    X(cufftResult, cufftExecZ2Z, "cufftExecZ2Z", REQUIRED, (cufftHandle, void *, void *, int)) \
    X(cufftResult, cufftExecR2C, "cufftExecR2C", REQUIRED, (cufftHandle, void *, void *))  \
    X(cufftResult, cufftExecD2Z, "cufftExecD2Z", REQUIRED, (cufftHandle, void *, void *))  \
    X(cufftResult, cufftExecC2R, "cufftExecC2R", REQUIRED, (cufftHandle, void *, void *))  \
    X(cufftResult, cufftExecZ2D, "cufftExecZ2D", REQUIRED, (cufftHandle, void *, void *))

/* Filled once by cukit_cufft_load under the GIL, only read afterwards. */
typedef struct {
#define CUKIT_X(ret, name, sym, req, params) ret(*name) params;
    CUKIT_CUFFT_API(CUKIT_X)
#undef CUKIT_X
} cukit_cufft_api_t;

extern cukit_cufft_api_t cukit_cufft_api;

/* ------------------------------------------------------------------ cufft_loader.c */

/* dlopen libcufft (CUKIT_CUFFT, the nvidia-cufft wheels, the toolkit, the loader path)
 * and fill cukit_cufft_api. 0, or -1 with NotSupportedError saying where it looked and
 * what to install. Later calls repeat the first verdict. */
int cukit_cufft_load(cukit_state *st);
/* 1 when cuFFT is loaded or can be (trying once), 0 when not; never raises. */
int cukit_cufft_available(cukit_state *st);
/* The library's path and version (0 before it loaded). Static storage. */
const char *cukit_cufft_path(int *version);
/* Turn a cuFFT result into 0, or -1 with CudaError (OutOfMemoryError, NotSupportedError,
 * InvalidValueError by the result) naming `call`. */
int cukit_cufft_check(cukit_state *st, cufftResult res, const char *call);

#define CUFFT_CALL(st, fn, args) cukit_cufft_check((st), cukit_cufft_api.fn args, #fn)

/* ------------------------------------------------------------------ plans */

/* Transform kinds: complex to complex, real to complex (forward), complex to real. */
enum { FFT_C2C = 0, FFT_R2C = 1, FFT_C2R = 2 };
enum { FFT_CUFFT = 1, FFT_OWN = 2 };
#define FFT_MAXF 64 /* radices of one length: 2^64 is past any array */
#define FFT_MAXR 64 /* the largest radix of one stage (kernels/fft.cu's MAXR) */

/* A plan: cuFFT's handle for one (kind, length, batch, stride), or cukit's own for one
 * length (any batch). Held in a capsule in the cache; the capsule's destructor
 * releases it (fft_plan_release). */
typedef struct {
    int library;              /* FFT_CUFFT or FFT_OWN */
    long long n;              /* the transform's length */
    cukit_Device *dev;        /* strong ref: the device the plan is for */
    /* cuFFT */
    cufftHandle handle;       /* owned; valid while `made` */
    int made;
    long long batch, inner;   /* transforms per execution, and their element stride */
    /* cukit's own */
    int nf, radix[FFT_MAXF];  /* direct: the stages' radices of n */
    long long m;              /* Bluestein: the convolution's length (0: direct) */
    int mf, mradix[FFT_MAXF]; /* Bluestein: the stages' radices of m */
    cukit_Array *bhat[2];     /* strong refs: Bluestein's transformed chirp for the forward [0]
                                 and inverse [1] transform; NULL until made */
} fft_plan;

/* ------------------------------------------------------------------ own.c */

/* Fill a plan of cukit's own for length n >= 1 (no device work yet). */
void cukit_fft_own_plan(fft_plan *p, long long n);
/* dst (outer, n, inner) = the transform of src (the same layout, never written), both
 * of complex typecode tc (complex64 or complex128), times scale; sign -1 forward, +1
 * inverse. Queued on h. 0 / -1. */
int cukit_fft_own_c2c(cukit_state *st, fft_plan *p, int tc, CUdeviceptr src, CUdeviceptr dst,
                long long outer, long long inner, int sign, double scale, CUstream h);
/* Launch kernels/fft.cu's kernel fft_<name>_f (tc complex64 or float32) or _d over
 * `total` items on h with params `args`. 0 / -1. */
int cukit_fft_own_launch(cukit_state *st, cukit_Device *dev, const char *name, int tc,
                   long long total, CUstream h, void **args);

#endif /* CUKIT_FFT_CUFFT_H */
