/* baseline.h - what the raw C baselines of the benchmarks share: the few driver
 * types they use, loading libcuda with dlopen, error checks, timing and medians.
 *
 * No CUDA headers and no -lcuda: each baseline builds with `cc -O2 -std=c11 ... -ldl`.
 * Define BASELINE_NAME (the program's name, for messages) before including it, and
 * a static struct `cu` of driver function pointers for LOAD to fill. */
#ifndef BASELINE_H
#define BASELINE_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;

#define CUDA_SUCCESS 0

/* cuGetErrorName, for messages; NULL until open_driver. */
static CUresult (*baseline_error_name)(CUresult error, const char **name);

static void
die(const char *what)
{
    fprintf(stderr, BASELINE_NAME ": %s\n", what);
    exit(1);
}

static void
check(CUresult res, const char *call, int line)
{
    if (res == CUDA_SUCCESS)
        return;
    const char *name = NULL;
    if (baseline_error_name == NULL || baseline_error_name(res, &name) != CUDA_SUCCESS ||
        name == NULL)
        name = "unknown error";
    fprintf(stderr, BASELINE_NAME ": line %d: %s failed: %s (%d)\n", line, call, name, res);
    exit(1);
}
#define CHECK(call) check((call), #call, __LINE__)

/* libcuda.so.1, opened; exits with the loader's message when it is missing. */
static void *
open_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, BASELINE_NAME ": cannot load libcuda.so.1: %s\n", dlerror());
        exit(1);
    }
    *(void **)&baseline_error_name = dlsym(lib, "cuGetErrorName");
    return lib;
}

/* Store dlsym(lib, symbol) into a function-pointer field of `cu`. */
#define LOAD(field, symbol)                                               \
    do {                                                                  \
        *(void **)&cu.field = dlsym(lib, symbol);                         \
        if (cu.field == NULL)                                             \
            die("libcuda.so.1 lacks " symbol " (driver too old?)");      \
    } while (0)

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double
median(const double *samples, int n)
{
    double *sorted = malloc(n * sizeof *sorted);
    if (sorted == NULL)
        die("out of memory");
    for (int i = 0; i < n; i++)
        sorted[i] = samples[i];
    qsort(sorted, n, sizeof *sorted, compare_doubles);
    double m = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    free(sorted);
    return m;
}

#endif /* BASELINE_H */
