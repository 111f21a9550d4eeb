/* sort.h - the sort layer: cukit.sort, argsort and searchsorted on a stable merge sort of cukit's own */
#ifndef CUKIT_SORT_H
#define CUKIT_SORT_H

#include "compute/compute.h"

/* cukit.sort, cukit.argsort and cukit.searchsorted. 0 / -1. */
int cukit_sort_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ sort.c, for unique.c */

/* The kernels of one dtype on one device (see sort.c's sort_body). */
typedef struct {
    CUfunction tile, merge, search, flags, scatter, counts;
} cukit_sort_kernel_set;

/* The kernels for (dev, tc), compiled at first use and kept in the module's
 * _sort_kernels dict. 0 / -1 (CompileError...). */
int cukit_sort_kernels(cukit_state *st, PyObject *module, cukit_Device *dev, int tc,
                       cukit_sort_kernel_set *k);
/* Launch f on `blocks` blocks of 256 threads on stream h. 0 / -1. */
int cukit_sort_launch(cukit_state *st, CUfunction f, long long blocks, CUstream h, void **params);
/* obj as an Array that can be sorted (TypeError naming `who` otherwise). Borrowed or NULL. */
cukit_Array *cukit_sort_arg(cukit_state *st, PyObject *obj, const char *who);
/* Sort the rows (last dimension) of the C-contiguous src on h: new arrays in *vals and,
 * with want_index, the int64 positions in the row in *idx (else NULL). 0 / -1. */
int cukit_sort_rows(cukit_state *st, PyObject *module, cukit_Array *src, int want_index,
                    CUstream h, cukit_Array **vals, cukit_Array **idx);

/* ------------------------------------------------------------------ unique.c */

/* cukit.unique. 0 / -1. */
int cukit_unique_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_SORT_H */
