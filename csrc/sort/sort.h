/* sort.h - the sort layer: cukit.sort, argsort and searchsorted on an LSD radix sort of cukit's own (a stable merge sort for short rows) */
#ifndef CUKIT_SORT_H
#define CUKIT_SORT_H

#include "compute/compute.h"

/* cukit.sort, cukit.argsort and cukit.searchsorted. 0 / -1. */
int cukit_sort_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ sort.c, for unique.c */

/* The kernels of one dtype on one device (see sort.c's sort_body). */
typedef struct {
    CUfunction tile, merge, search, flags, scatter, counts;
    CUfunction hist, pass; /* radix.c's */
    long long rtile;       /* keys a block of the pass kernel sorts (a tile) */
} cukit_sort_kernel_set;

/* The groups of kernels cukit_sort_kernels compiles together. */
enum {
    CUKIT_SORT_MERGE,  /* tile, merge: rows shorter than a radix sort wants */
    CUKIT_SORT_RADIX,  /* hist, pass */
    CUKIT_SORT_SEARCH, /* search */
    CUKIT_SORT_UNIQUE, /* flags, scatter, counts */
    CUKIT_SORT_GROUPS
};
/* The kernels of `group` for (dev, tc) in *k (the other groups' NULL; rtile always),
 * compiled at first use (one module per group, so that a first sort compiles the
 * kernels it runs) and kept in the module's _sort_kernels dict. 0 / -1 (CompileError...). */
int cukit_sort_kernels(cukit_state *st, PyObject *module, cukit_Device *dev, int tc, int group,
                       cukit_sort_kernel_set *k);
/* Launch f on `blocks` blocks of 256 threads on stream h. 0 / -1. */
int cukit_sort_launch(cukit_state *st, CUfunction f, long long blocks, CUstream h, void **params);
/* obj as an Array that can be sorted (TypeError naming `who` otherwise). Borrowed or NULL. */
cukit_Array *cukit_sort_arg(cukit_state *st, PyObject *obj, const char *who);
/* Sort the rows (last dimension) of the C-contiguous src on h (`stream`, the stream=
 * argument: a graph captured from it keeps the temporaries): new arrays in *vals (vals
 * NULL: the sorted keys are not wanted, only the indices) and, with want_index, the int64
 * positions in the row in *idx (else NULL). 0 / -1. */
int cukit_sort_rows(cukit_state *st, PyObject *module, cukit_Array *src, int want_index,
                    CUstream h, PyObject *stream, cukit_Array **vals, cukit_Array **idx);

/* ------------------------------------------------------------------ radix.c, for sort.c */

/* Rows at least this long (and under 2^30 - 4096 keys, or 2^30 less a larger tile: the
 * look-back's 30-bit counts) sort by radix, every row at once; shorter ones by the merge sort. */
#define CUKIT_RADIX_MIN 1024
/* The radix pass kernel's threads a block and keys a thread (of 8-byte keys:
 * ITEMS8), as kernels/sort.cu builds it. */
#define CUKIT_RADIX_BLOCK 512
#define CUKIT_RADIX_ITEMS 17
#define CUKIT_RADIX_ITEMS8 11
/* Keys a block of the pass kernel sorts (a tile) for keys of itemsize bytes. */
long long cukit_radix_tile(int itemsize);
/* Whether rows of L keys go to the radix sort whose tiles hold `tile` keys. */
int cukit_radix_wanted(long long L, long long tile);
/* Radix-sort each row (last dimension) of the C-contiguous src on h into buf[*which]
 * (written only with want_keys) and, with want_index, the int64 positions into ibuf[0] (ibuf[1] is scratch).
 * buf and ibuf: src's shape, allocated by the caller. 0 / -1. */
int cukit_radix_rows(cukit_state *st, const cukit_sort_kernel_set *k, cukit_Array *src,
                     int want_index, int want_keys, CUstream h, PyObject *stream,
                     cukit_Array *buf[2], cukit_Array *ibuf[2], int *which);

/* ------------------------------------------------------------------ unique.c */

/* cukit.unique. 0 / -1. */
int cukit_unique_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_SORT_H */
