/* index.h - compute/index/: advanced indexing (index.c) and boolean masks (mask.c), shared by their files */
#ifndef CUKIT_COMPUTE_INDEX_H
#define CUKIT_COMPUTE_INDEX_H

#include "compute/compute.h"

/* ------------------------------------------------------------------ index.c, functions.c
 * (also used by the Array's methods in elementwise/ufunc_type.c and where(condition)) */


/* a[key] / a[key] = value with integer or boolean arrays in key (numpy's advanced
 * indexing), registered as hooks.array_index and array_index_set. */
PyObject *ck_index_get(cukit_state *st, PyObject *a, PyObject *key);
int ck_index_set(cukit_state *st, PyObject *a, PyObject *key, PyObject *value);
/* numpy.take(a, indices, axis, out, mode) (axis, out: NULL or None for none). New ref. */
PyObject *ck_take(cukit_state *st, PyObject *a, PyObject *indices, PyObject *axis, PyObject *out,
                  const char *mode);
/* numpy.put(a, ind, v, mode). 0 / -1. */
int ck_put_values(cukit_state *st, PyObject *a, PyObject *ind, PyObject *v, const char *mode);
/* numpy.compress(condition, a, axis). New ref or NULL. */
PyObject *ck_compress(cukit_state *st, PyObject *condition, PyObject *a, PyObject *axis);
/* numpy.nonzero(a): a tuple of int64 arrays. New ref or NULL. */
PyObject *ck_nonzero(cukit_state *st, PyObject *a);

/* take_along_axis(arr, indices, axis) (values NULL; new array) or put_along_axis (values
 * written, returns None), axis in [0, arr.ndim): one gather or scatter that reads only
 * the axis's indices. New ref or NULL. */
PyObject *ck_along_axis(cukit_state *st, PyObject *arr, PyObject *indices, int axis,
                        PyObject *values);

/* ------------------------------------------------------------------ print.c */

/* repr(a) (as_str 0) or str(a) (1) as numpy prints the values. New ref or NULL. */
PyObject *ck_array_print(cukit_state *st, PyObject *a, int as_str);

/* ------------------------------------------------------------------ mask.c */

/* The coordinates of mask's true elements (mask: an array of any dtype and layout,
 * true where not 0), in row-major order, as a new C-contiguous int64 array of shape
 * (mask->ndim, count) when rows (nonzero), else (count, mask->ndim) (argwhere); one
 * small read of the count from the device. New ref or NULL. */
cukit_Array *ck_mask_coords(cukit_state *st, cukit_Array *mask, int rows);
/* a[mask] for a mask of a's shape: the elements where it is true, in order, as a new
 * 1-D array. New ref or NULL. */
cukit_Array *ck_mask_select(cukit_state *st, cukit_Array *a, cukit_Array *mask);
/* a[mask] = value for a C-contiguous a and a mask of its shape: the value is a
 * one-element array of a's dtype on a's device (read by the kernel), or, value NULL,
 * its itemsize bytes at `bits` (passed with the launch). Queues one kernel; the host
 * reads nothing back. 0 / -1. */
int ck_mask_fill(cukit_state *st, cukit_Array *a, cukit_Array *mask, cukit_Array *value,
                 const void *bits);

/* ------------------------------------------------------------------ functions.c */

/* take, put and compress as module functions. 0 / -1. */
int ck_index_functions_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_COMPUTE_INDEX_H */
