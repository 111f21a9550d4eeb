/* radix.c - the LSD radix sort behind cukit.sort and argsort: one histogram, then one onesweep kernel a digit */
#include "sort/sort.h"

#include <stdlib.h>
#include <string.h>

/* The kernels are kernels/sort.cu's (the radix sort's part says how they work). */

long long
cukit_radix_tile(int itemsize)
{
    return (long long)CUKIT_RADIX_BLOCK * (itemsize == 8 ? CUKIT_RADIX_ITEMS8 : CUKIT_RADIX_ITEMS);
}

int
cukit_radix_wanted(long long L, long long tile)
{
    return L >= CUKIT_RADIX_MIN && L <= (1LL << 30) - (tile > 4096 ? tile : 4096);
}

/* ------------------------------------------------------------------ the host side */

/* Rows a launch sorts at most (the grid's y dimension). */
#define ROWS_A_LAUNCH 65535
/* Bytes of scratch a launch of several rows may use (one row may take more). */
#define SCRATCH_A_LAUNCH (64LL << 20)

/* Sort R rows of L keys at `in` (itemsize bytes each), one launch a pass for all of them
 * (grid y: the row), into the key buffers kb (pass p writes kb[p & 1]; the last one only
 * with want_keys) and, with want_index, the int64 positions in the row into out64
 * (passes before the last keep uint32 ones in iu[0] and iu[1]). scratch: zeroed here,
 * `rstride` words a row (radix_words). 0 / -1. */
static int
radix_chunk(cukit_state *st, const cukit_sort_kernel_set *k, int itemsize, long long L,
            long long R, CUdeviceptr in, CUdeviceptr kb[2], CUdeviceptr iu[2], CUdeviceptr out64,
            int want_index, int want_keys, CUdeviceptr scratch, long long rstride, CUstream h)
{
    const int passes = itemsize;
    long long tiles = (L + k->rtile - 1) / k->rtile;
    long long hblocks = (L + 1023) / 1024, hmax = 1024 / R > 1 ? 1024 / R : 1;
    if (hblocks > hmax)
        hblocks = hmax;
    if (CU_CALL(st, cuMemsetD8Async, (scratch, 0, (size_t)(4 * rstride * R), h)) < 0)
        return -1;
    void *hp[] = {&in, &L, &scratch, &rstride};
    if (cukit_builtin_launch_here(st, k->hist, (unsigned)hblocks, (unsigned)R, 1, 256, 1, h, hp) < 0)
        return -1;
    CUdeviceptr none = 0;
    for (int p = 0; p < passes; p++) {
        CUdeviceptr kin = p == 0 ? in : kb[(p - 1) & 1], kout = kb[p & 1];
        CUdeviceptr iin = p == 0 ? none : iu[(p - 1) & 1], iout = iu[p & 1];
        CUdeviceptr hist = scratch + 4 * (CUdeviceptr)(p * 256);
        CUdeviceptr ticket = scratch + 4 * (CUdeviceptr)(passes * 256 + p);
        CUdeviceptr status = scratch + 4 * (CUdeviceptr)(passes * 256 + 8 + p * tiles * 256);
        int shift = 8 * p, last = p == passes - 1;
        int mode = (want_index ? 1 : 0) | (want_index && p == 0 ? 2 : 0) |
                   (want_index && last ? 4 : 0) | (!want_keys && last ? 8 : 0);
        void *pp[] = {&kin, &kout, &iin, &iout, &out64, &L, &hist, &ticket, &status, &rstride,
                      &shift, &mode};
        if (cukit_builtin_launch_here(st, k->pass, (unsigned)tiles, (unsigned)R, 1,
                                      CUKIT_RADIX_BLOCK, 1, h, pp) < 0)
            return -1;
    }
    return 0;
}

int
cukit_radix_rows(cukit_state *st, const cukit_sort_kernel_set *k, cukit_Array *src, int want_index,
                 int want_keys, CUstream h, PyObject *stream, cukit_Array *buf[2], cukit_Array *ibuf[2],
                 int *which)
{
    const int isz = (int)src->itemsize;
    long long n = src->size, L = src->ndim ? src->shape[src->ndim - 1] : 1, rows = n / L;
    long long tiles = (L + k->rtile - 1) / k->rtile;
    /* a row's scratch: its histogram (256 words a pass), tickets (8), look-back words;
     * short rows have a lot of it for their keys, so a launch takes at most 64 MiB of it
     * (and at least one row) */
    long long rstride = (long long)isz * 256 + 8 + (long long)isz * tiles * 256;
    long long most = SCRATCH_A_LAUNCH / (4 * rstride);
    most = most < 1 ? 1 : most > ROWS_A_LAUNCH ? ROWS_A_LAUNCH : most;
    most = rows < most ? rows : most;
    Py_ssize_t bytes = (Py_ssize_t)(4 * rstride * most);
    cukit_Array *scratch = ck_empty(st, src->device, CUKIT_TC_U8, 1, &bytes);
    if (scratch == NULL || cukit_capture_keep(st, stream, (PyObject *)scratch) < 0) {
        Py_XDECREF(scratch);
        return -1;
    }
    int rc = 0;
    for (long long r = 0; rc == 0 && r < rows; r += most) {
        long long R = rows - r < most ? rows - r : most;
        CUdeviceptr off = (CUdeviceptr)(r * L * isz);
        CUdeviceptr kb[2] = {cukit_array_ptr(buf[0]) + off, cukit_array_ptr(buf[1]) + off};
        /* the uint32 positions between passes: the two halves of ibuf[1] (n int64) */
        CUdeviceptr i1 = want_index ? cukit_array_ptr(ibuf[1]) : 0;
        CUdeviceptr iu[2] = {i1 + (CUdeviceptr)(4 * r * L), i1 + (CUdeviceptr)(4 * (n + r * L))};
        CUdeviceptr o64 = want_index ? cukit_array_ptr(ibuf[0]) + (CUdeviceptr)(r * L * 8) : 0;
        rc = radix_chunk(st, k, isz, L, R, cukit_array_ptr(src) + off, kb, iu, o64, want_index,
                         want_keys, cukit_array_ptr(scratch), rstride, h);
    }
    Py_DECREF(scratch);
    /* keys: the last pass's buffer; argsort's last pass writes ibuf[0] only */
    *which = (isz - 1) & 1;
    return rc;
}
