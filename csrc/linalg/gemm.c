/* gemm.c - one strided batch of C = A @ B: cukit's own tiled GEMM in CUDA C (any strides, every numeric dtype) or cuBLAS */
#include "linalg/cublas.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ cukit's own GEMM
 *
 * kernels/gemm.cu: 64 x 64 tiles of C per block, A and B through shared memory, loaded
 * and accumulated in a wider type (float for the half types, 64-bit for integers). It
 * needs no layout of its inputs, so a matmul never copies for it. */

/* Each dtype's kernel, as the #defines in front of gemm.cu: its GEMM_FORM (the file says
 * which), the stored type and the accumulator's. */
static const struct {
    int tc;
    const char *types;
} gemm_types[] = {
#define PLAIN(t, acc) "#define GEMM_FORM 0\n#define GEMM_T " t "\n#define GEMM_ACC " acc "\n"
    {CUKIT_TC_F16, "#define GEMM_FORM 1\n"},
    {CUKIT_TC_BF16, "#define GEMM_FORM 2\n"},
    {CUKIT_TC_F32, PLAIN("float", "float")},
    {CUKIT_TC_F64, PLAIN("double", "double")},
    {CUKIT_TC_C64, "#define GEMM_FORM 3\n#define GEMM_T float\n"},
    {CUKIT_TC_C128, "#define GEMM_FORM 3\n#define GEMM_T double\n"},
    {CUKIT_TC_I8, PLAIN("signed char", "long long")},
    {CUKIT_TC_U8, PLAIN("unsigned char", "unsigned long long")},
    {CUKIT_TC_I16, PLAIN("short", "long long")},
    {CUKIT_TC_U16, PLAIN("unsigned short", "unsigned long long")},
    {CUKIT_TC_I32, PLAIN("int", "long long")},
    {CUKIT_TC_U32, PLAIN("unsigned int", "unsigned long long")},
    {CUKIT_TC_I64, PLAIN("long long", "long long")},
    {CUKIT_TC_U64, PLAIN("unsigned long long", "unsigned long long")},
#undef PLAIN
};

static const char *
types_of(int tc)
{
    for (size_t i = 0; i < sizeof gemm_types / sizeof *gemm_types; i++)
        if (gemm_types[i].tc == tc)
            return gemm_types[i].types;
    return NULL;
}

int
cukit_gemm_supports(int tc)
{
    return types_of(tc) != NULL;
}

/* The loaded kernel for (dev, tc): the state's gemm_modules maps ordinal * 64 + tc to
 * (Module, function address); compiled through cukit_compile_load at first use, so
 * the compile layer's memory and disk caches serve later processes. */
static int
gemm_function(cukit_state *st, cukit_Device *dev, int tc, CUfunction *func)
{
    cukit_linalg_state *L = st->linalg;
    if (L->gemm_modules == NULL && (L->gemm_modules = PyDict_New()) == NULL)
        return -1;
    PyObject *key = PyLong_FromLong((long)dev->ordinal * 64 + tc);
    if (key == NULL)
        return -1;
    PyObject *hit = PyDict_GetItemWithError(L->gemm_modules, key);
    if (hit) {
        *func = (CUfunction)PyLong_AsVoidPtr(PyTuple_GET_ITEM(hit, 1));
        Py_DECREF(key);
        return 0;
    }
    int rc = -1;
    PyObject *source = NULL, *options = NULL, *mod = NULL, *entry = NULL;
    if (PyErr_Occurred())
        goto done;
    const char *body = cukit_device_file("linalg/kernels/gemm.cu");
    source = body ? PyUnicode_FromFormat("%s%s", types_of(tc), body) : NULL;
    options = source ? Py_BuildValue("[s]", "-std=c++17") : NULL;
    mod = options ? cukit_compile_load(st, source, "cukit_gemm.cu", options, dev) : NULL;
    if (mod == NULL || cukit_device_activate(dev) < 0 ||
        CU_CALL(st, cuModuleGetFunction, (func, ((cukit_Module *)mod)->handle, "cukit_gemm")) < 0)
        goto done;
    entry = Py_BuildValue("(ON)", mod, PyLong_FromVoidPtr((void *)*func));
    if (entry == NULL || PyDict_SetItem(L->gemm_modules, key, entry) < 0)
        goto done;
    rc = 0;
done:
    Py_DECREF(key);
    Py_XDECREF(source);
    Py_XDECREF(options);
    Py_XDECREF(mod);
    Py_XDECREF(entry);
    return rc;
}

int
cukit_gemm_run(cukit_state *st, cukit_Device *dev, const cukit_gemm *g, CUstream h)
{
    CUfunction func;
    if (gemm_function(st, dev, g->tc, &func) < 0)
        return -1;
    if (g->m == 0 || g->n == 0 || g->batch == 0)
        return 0;
    long long gy = (g->m + 63) / 64, gx = (g->n + 63) / 64;
    if (gy > 65535 || gx > 0x7fffffffLL) {
        PyErr_Format(PyExc_ValueError, "matmul: a %lld x %lld result is past cukit's own "
                     "GEMM's grid (at most 4194240 rows); install cuBLAS "
                     "(`pip install nvidia-cublas`)", g->m, g->n);
        return -1;
    }
    long long isz = cukit_typecode_size(g->tc);
    CUdeviceptr a = g->a, b = g->b, c = g->c;
    long long m = g->m, n = g->n, k = g->k;
    long long sa0 = g->sa[0], sa1 = g->sa[1], sa2 = g->sa[2];
    long long sb0 = g->sb[0], sb1 = g->sb[1], sb2 = g->sb[2];
    long long sc0 = g->sc[0], sc1 = g->sc[1], sc2 = g->sc[2];
    void *params[] = {&a, &b, &c, &m, &n, &k, &sa0, &sa1, &sa2, &sb0, &sb1, &sb2,
                      &sc0, &sc1, &sc2};
    if (cukit_device_activate(dev) < 0)
        return -1;
    /* gridDim.z is at most 65535: larger batches go in slices. */
    for (long long z = 0; z < g->batch; z += 65535) {
        long long gz = g->batch - z < 65535 ? g->batch - z : 65535;
        a = g->a + (CUdeviceptr)(z * sa2 * isz);
        b = g->b + (CUdeviceptr)(z * sb2 * isz);
        c = g->c + (CUdeviceptr)(z * sc2 * isz);
        if (cukit_builtin_launch_here(st, func, (unsigned)gx, (unsigned)gy, (unsigned)gz, 256, 1, h,
                                      params) < 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ cuBLAS
 *
 * cuBLAS is column-major: a row-major C = A @ B is the column-major C^T = B^T A^T,
 * so B is passed first. A row-major matrix with unit column stride is, read in
 * column-major, its transpose with the row stride as leading dimension (op N here);
 * one with unit row stride is the matrix itself (op T). */

static const struct {
    int tc;
    int type;     /* cudaDataType of A, B and C */
    int compute;  /* cublasComputeType_t */
    int scalar;   /* bytes of alpha and beta: the compute type's */
} cublas_types[] = {
    {CUKIT_TC_F16, CUDA_R_16F, CUBLAS_COMPUTE_32F, 4},
    {CUKIT_TC_BF16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 4},
    {CUKIT_TC_F32, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4},
    {CUKIT_TC_F64, CUDA_R_64F, CUBLAS_COMPUTE_64F, 8},
    {CUKIT_TC_C64, CUDA_C_32F, CUBLAS_COMPUTE_32F, 8},
    {CUKIT_TC_C128, CUDA_C_64F, CUBLAS_COMPUTE_64F, 16},
};

static int
cublas_type(int tc)
{
    for (size_t i = 0; i < sizeof cublas_types / sizeof *cublas_types; i++)
        if (cublas_types[i].tc == tc)
            return (int)i;
    return -1;
}

/* Op and leading dimension of a row-major rows x cols matrix with element strides
 * (sr, sc) as cuBLAS reads it (the transpose, see above); -1 when it cannot. A
 * dimension of length 1 takes any stride. */
static int
operand(long long rows, long long cols, long long sr, long long sc, int *op, long long *ld)
{
    long long r1 = rows > 1 ? rows : 1, c1 = cols > 1 ? cols : 1;
    if (sc == 1 || cols == 1) {
        *ld = rows == 1 ? c1 : sr;
        if (*ld >= c1) {
            *op = CUBLAS_OP_N;
            return 0;
        }
    }
    if (sr == 1 || rows == 1) {
        *ld = cols == 1 ? r1 : sc;
        if (*ld >= r1) {
            *op = CUBLAS_OP_T;
            return 0;
        }
    }
    return -1;
}

int
cukit_gemm_cublas_supports(int tc)
{
    return cublas_type(tc) >= 0;
}

int
cukit_gemm_cublas_layout(const cukit_gemm *g)
{
    int op;
    long long ld;
    const long long most = 0x7fffffffLL;
    if (cublas_type(g->tc) < 0 || g->m > most || g->n > most || g->k > most ||
        g->batch > most || g->m == 0 || g->n == 0 || g->k == 0)
        return 0;
    if (operand(g->m, g->k, g->sa[0], g->sa[1], &op, &ld) < 0 || ld > most ||
        operand(g->k, g->n, g->sb[0], g->sb[1], &op, &ld) < 0 || ld > most)
        return 0;
    /* C is written: op N, rows apart by at least a row (cuBLAS's rule for ldc). */
    if (!(g->sc[1] == 1 || g->n == 1) || !(g->m == 1 || (g->sc[0] >= g->n && g->sc[0] <= most)))
        return 0;
    /* Batch strides may be 0 for an input (broadcast), never negative; C's must be
     * positive. */
    return g->batch == 1 || (g->sa[2] >= 0 && g->sb[2] >= 0 && g->sc[2] > 0);
}

int
cukit_gemm_cublas(cukit_state *st, cukit_Device *dev, const cukit_gemm *g, CUstream h, int tf32)
{
    int t = cublas_type(g->tc), opa = 0, opb = 0;
    long long lda = 0, ldb = 0;
    if (t < 0 || operand(g->m, g->k, g->sa[0], g->sa[1], &opa, &lda) < 0 ||
        operand(g->k, g->n, g->sb[0], g->sb[1], &opb, &ldb) < 0) {
        PyErr_SetString(PyExc_RuntimeError, "matmul: cuBLAS was given a layout it cannot take "
                        "(a bug in cukit)");
        return -1;
    }
    long long ldc = g->m == 1 ? (g->n > 1 ? g->n : 1) : g->sc[0];
    cublasHandle_t handle = cukit_cublas_handle(st, dev, h);
    if (handle == NULL)
        return -1;
    /* alpha = 1, beta = 0 in the compute type (complex: the real part first). */
    _Alignas(16) unsigned char one[16] = {0}, zero[16] = {0};
    if (cublas_types[t].scalar == 4 || g->tc == CUKIT_TC_C64) {
        float f = 1.0f;
        memcpy(one, &f, sizeof f);
    }
    else {
        double d = 1.0;
        memcpy(one, &d, sizeof d);
    }
    int compute = cublas_types[t].compute;
    if (tf32 && g->tc == CUKIT_TC_F32)
        compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    long long batch = g->batch;
    return CUBLAS_CALL(st, cublasGemmStridedBatchedEx,
                       (handle, opb, opa, (int)g->n, (int)g->m, (int)g->k, one,
                        (const void *)(uintptr_t)g->b, cublas_types[t].type, (int)ldb, g->sb[2],
                        (const void *)(uintptr_t)g->a, cublas_types[t].type, (int)lda, g->sa[2],
                        zero, (void *)(uintptr_t)g->c, cublas_types[t].type, (int)ldc, g->sc[2],
                        (int)batch, compute, CUBLAS_GEMM_DEFAULT));
}
