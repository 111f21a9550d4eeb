/* copy_baseline.c - the raw C floor for benchmarks/bench_copy.py.
 *
 * Times the driver's own synchronous copies, cuMemcpyHtoD and cuMemcpyDtoH on the
 * legacy default stream, from plain C, so that cukit's copies in bench_copy.py have
 * something to be compared with. bench_copy.py compiles this file with the system C
 * compiler, runs it and reads the single JSON object it prints on stdout.
 *
 * The driver is dlopen'ed (libcuda.so.1): no CUDA headers, no -lcuda. The few
 * types and prototypes it needs are declared below and in baseline.h.
 *
 *   copy_baseline DEVICE REPS SIZE [SIZE ...]
 *
 * For each SIZE (bytes) it allocates device memory (cuMemAlloc), pageable host
 * memory (malloc, advised to use huge pages from 4 MiB on, as numpy does, and
 * written once so no page faults are timed) and pinned host memory (cuMemHostAlloc),
 * then times REPS samples of each kind after one untimed warm-up:
 *   htod_pageable, dtoh_pageable, htod_pinned, dtoh_pinned
 * A sample is min(50, max(1, 256 MiB / SIZE)) copies followed by one
 * cuCtxSynchronize. Each is reported in GB/s (1e9 bytes per second), every sample
 * and their median.
 * Errors go to stderr, exit 1. */
#define _DEFAULT_SOURCE
#include <string.h>
#include <sys/mman.h>

#define BASELINE_NAME "copy_baseline"
#include "baseline.h"

/* ------------------------------------------------------------ driver ABI */

static struct {
    CUresult (*Init)(unsigned int flags);
    CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*DeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*CtxSetCurrent)(CUcontext ctx);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *ptr, size_t bytes);
    CUresult (*MemFree)(CUdeviceptr ptr);
    CUresult (*MemHostAlloc)(void **ptr, size_t bytes, unsigned int flags);
    CUresult (*MemFreeHost)(void *ptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
    CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
} cu;

static void
load_driver(void)
{
    void *lib = open_driver();
    LOAD(Init, "cuInit");
    LOAD(DeviceGet, "cuDeviceGet");
    LOAD(DeviceGetName, "cuDeviceGetName");
    LOAD(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    LOAD(CtxSetCurrent, "cuCtxSetCurrent");
    LOAD(CtxSynchronize, "cuCtxSynchronize");
    LOAD(MemAlloc, "cuMemAlloc_v2");
    LOAD(MemFree, "cuMemFree_v2");
    LOAD(MemHostAlloc, "cuMemHostAlloc");
    LOAD(MemFreeHost, "cuMemFreeHost");
    LOAD(MemcpyHtoD, "cuMemcpyHtoD_v2");
    LOAD(MemcpyDtoH, "cuMemcpyDtoH_v2");
}

/* ------------------------------------------------------------ helpers */

/* Pageable memory as numpy allocates it: malloc, with huge pages advised for the
 * page-aligned part from 4 MiB on; written once so the copies find it mapped. */
static void *
pageable(size_t n)
{
    unsigned char *p = malloc(n);
    if (p == NULL)
        die("out of host memory");
    if (n >= (4u << 20)) {
        size_t page = 4096;
        unsigned char *start = (unsigned char *)(((size_t)p + page - 1) & ~(page - 1));
        size_t len = (size_t)(p + n - start) & ~(page - 1);
        madvise(start, len, MADV_HUGEPAGE);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 2654435761u >> 24);
    return p;
}

enum { HTOD_PAGEABLE, DTOH_PAGEABLE, HTOD_PINNED, DTOH_PINNED, KINDS };
static const char *kind_names[KINDS] = {"htod_pageable", "dtoh_pageable", "htod_pinned",
                                        "dtoh_pinned"};

/* Copies per timed sample, as in bench_copy.py: enough that small ones are not
 * timer noise. */
static int
iterations(size_t n)
{
    size_t k = (256u << 20) / n;
    return k < 1 ? 1 : k > 50 ? 50 : (int)k;
}

/* `count` copies of kind k and one cuCtxSynchronize, timed; GB/s. The synchronize
 * matters: a copy from pageable memory returns once its data is staged, before its
 * last DMA has landed. */
static double
time_copies(int k, CUdeviceptr dev, void *host, size_t n, int count)
{
    CHECK(cu.CtxSynchronize());
    double t0 = now_s();
    for (int i = 0; i < count; i++) {
        if (k == HTOD_PAGEABLE || k == HTOD_PINNED)
            CHECK(cu.MemcpyHtoD(dev, host, n));
        else
            CHECK(cu.MemcpyDtoH(host, dev, n));
    }
    CHECK(cu.CtxSynchronize());
    return (double)n * count / (now_s() - t0) / 1e9;
}

int
main(int argc, char **argv)
{
    if (argc < 4)
        die("usage: copy_baseline DEVICE REPS SIZE [SIZE ...]");
    int ordinal = atoi(argv[1]), reps = atoi(argv[2]);
    if (reps < 1)
        die("REPS must be at least 1");
    load_driver();
    CHECK(cu.Init(0));
    CUdevice dev;
    CUcontext ctx;
    char name[256];
    CHECK(cu.DeviceGet(&dev, ordinal));
    CHECK(cu.DeviceGetName(name, sizeof name, dev));
    CHECK(cu.DevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cu.CtxSetCurrent(ctx));
    double *samples = malloc(reps * sizeof *samples);
    if (samples == NULL)
        die("out of memory");
    printf("{\"device\": \"%s\", \"reps\": %d, \"gbps\": {", name, reps);
    for (int s = 3; s < argc; s++) {
        size_t n = strtoull(argv[s], NULL, 10);
        CUdeviceptr d;
        void *pinned;
        CHECK(cu.MemAlloc(&d, n));
        CHECK(cu.MemHostAlloc(&pinned, n, 0));
        memset(pinned, 1, n);
        void *page = pageable(n);
        printf("%s\"%zu\": {", s > 3 ? ", " : "", n);
        for (int k = 0; k < KINDS; k++) {
            void *host = k == HTOD_PINNED || k == DTOH_PINNED ? pinned : page;
            time_copies(k, d, host, n, iterations(n)); /* warm-up */
            for (int r = 0; r < reps; r++)
                samples[r] = time_copies(k, d, host, n, iterations(n));
            printf("%s\"%s\": {\"median\": %.6g, \"samples\": [", k ? ", " : "", kind_names[k],
                   median(samples, reps));
            for (int r = 0; r < reps; r++)
                printf("%s%.6g", r ? ", " : "", samples[r]);
            printf("]}");
        }
        printf("}");
        free(page);
        CHECK(cu.MemFreeHost(pinned));
        CHECK(cu.MemFree(d));
    }
    printf("}}\n");
    free(samples);
    return 0;
}
