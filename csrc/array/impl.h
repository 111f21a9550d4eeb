/* impl.h - array/'s own: what its files (array.c, copies.c, views.c, functions.c, dlpack.c) share; not for other layers */
#ifndef CUKIT_ARRAY_IMPL_H
#define CUKIT_ARRAY_IMPL_H

#include "array/array.h"

/* shape from an int or a sequence of ints. 0 / -1 with ValueError or TypeError.
 * `minus_one` allows one -1 (reshape), returned as -1 in shape. */
int cukit_parse_shape(PyObject *obj, Py_ssize_t *shape, int *ndim, int minus_one);
PyObject *cukit_ssize_tuple(const Py_ssize_t *v, int n);
/* C-order byte strides for shape. */
void cukit_c_strides(int ndim, const Py_ssize_t *shape, Py_ssize_t itemsize, Py_ssize_t *out);
/* An array over `buf` (cukit.Buffer or a subclass), which it keeps alive: element
 * [0, ..., 0] `offset` bytes in, byte `strides` (NULL: C order); every element must
 * lie inside the buffer (else ValueError). New ref or NULL. */
cukit_Array *cukit_array_over_buffer(cukit_state *st, cukit_Buffer *buf, PyObject *dtype, int ndim,
                                     const Py_ssize_t *shape, const Py_ssize_t *strides,
                                     Py_ssize_t offset);
/* A view of `a`: the same memory, `offset` bytes from its start. New ref or NULL. */
cukit_Array *cukit_array_view(cukit_Array *a, Py_ssize_t offset, int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides);
int cukit_array_check_live(const cukit_Array *a);
int cukit_array_check_writable(const cukit_Array *a, const char *what);
int cukit_array_is_c_contig(const cukit_Array *a);
PyObject *cukit_as_host_array(cukit_state *st, PyObject *obj, PyObject *dtype);
/* A `stream=` argument for an operation on a: its handle, and the capture
 * bookkeeping when the stream is being recorded into a graph. */
int cukit_array_stream(cukit_Array *a, PyObject *stream, PyObject *keep, CUstream *h);
/* Host bytes in C order (a->nbytes of them) to the array (to_device=1) or back
 * (0). The array may be strided: one contiguous run is copied directly, else
 * through contiguous device scratch that is rearranged on the device. sync=0 only
 * queues on h. */
int cukit_array_host_transfer(cukit_Array *a, void *host, CUstream h, int sync, int to_device);
/* dst <- src between two device arrays, checked, on `stream` (None: default). */
int cukit_array_copy_into(cukit_Array *dst, cukit_Array *src, PyObject *stream, const char *what);
/* The ValueError text for host data that a stream= copy cannot read in place:
 * format with (the call, the dtype). */
extern const char cukit_async_host_msg[];
/* set() and copy(dst, host): host data -> self, on `stream` (None: wait for it). */
int cukit_array_set_from_host(cukit_Array *self, PyObject *host, PyObject *stream, const char *what);
PyObject *cukit_array_set(cukit_Array *self, PyObject *args, PyObject *kwargs);
PyObject *cukit_array_copy_method(cukit_Array *self, PyObject *args, PyObject *kwargs);
/* Array.to(device, stream=None): on another device through a peer copy. */
PyObject *cukit_array_to(cukit_Array *self, PyObject *args, PyObject *kwargs);
/* Array.free(): let go of the memory now. */
PyObject *cukit_array_free(cukit_Array *self, PyObject *ignored);
PyObject *cukit_array_fill(cukit_Array *self, PyObject *args, PyObject *kwargs);
/* self[key] for basic indexing: ints, slices, ..., None. New ref or NULL. */
PyObject *cukit_array_subscript(cukit_Array *self, PyObject *key);
/* self[key] = value: a device array is copied, a scalar filled in, anything else
 * taken as host data (broadcast by numpy to the view's shape) and copied in. */
int cukit_array_ass_subscript(cukit_Array *self, PyObject *key, PyObject *value);
PyObject *cukit_array_reshape(cukit_Array *self, PyObject *args);
PyObject *cukit_array_transpose(cukit_Array *self, PyObject *args);
/* Array.T */
PyObject *cukit_array_get_T(cukit_Array *self, void *closure);

/* protocols.c: Array.flags (a new Flags), __array__ (refused), __array_ufunc__,
 * __array_function__, iteration (sq_item, tp_iter) and __reduce__. */
PyObject *cukit_array_flags(cukit_Array *self);
/* "<cukit.Array shape=... dtype=... on device 0, strided>" (array.c). New ref. */
PyObject *cukit_array_describe(cukit_Array *self);
PyObject *cukit_array_dunder_array(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *cukit_array_ufunc(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *cukit_array_function(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *cukit_array_sq_item(PyObject *self, Py_ssize_t i);
PyObject *cukit_array_iter(PyObject *self);
PyObject *cukit_array_reduce(PyObject *self, PyObject *ignored);
/* protocols.c: a.tobytes(order='C'), a.tofile(fid, sep='', format='%s'), a.dumps(),
 * a.dump(file) (through a host copy, numpy's and pickle's own), a.to_device(device):
 * the Array's methods, which shape.c's table joins to array.c's. */
extern PyMethodDef cukit_array_exchange_methods[]; /* and a.setflags(write=...) */
/* shape.c: Array.mT, the last two axes swapped (a view); Array.flat, a read-only
 * ravel() (a view where the layout allows, else a copy). */
PyObject *cukit_array_get_mT(cukit_Array *self, void *closure);
PyObject *cukit_array_get_flat(cukit_Array *self, void *closure);
PyObject *cukit_array_rebuild(PyObject *cls, PyObject *args);
/* repr() and str(): numpy's printing of the values (through hooks.array_call). */
PyObject *cukit_array_repr(PyObject *self);
PyObject *cukit_array_str(PyObject *self);
/* shape.c: `own` (array.c's methods) then shape.c's, one NULL-terminated table for the
 * Array's type spec; made once, never freed (types point at it). NULL: MemoryError. */
PyMethodDef *cukit_array_methods_with_shape(const PyMethodDef *own);
/* shape.c: numpy's shape methods (views where numpy gives views) and broadcast_to.
 * Each returns a new ref or NULL with numpy's exception class. */
PyObject *cukit_array_ravel(cukit_Array *self, PyObject *args, PyObject *kwargs);
PyObject *cukit_array_flatten(cukit_Array *self, PyObject *args, PyObject *kwargs);
PyObject *cukit_array_view_dtype(cukit_Array *self, PyObject *args, PyObject *kwargs);
PyObject *cukit_array_squeeze(cukit_Array *self, PyObject *args, PyObject *kwargs);
PyObject *cukit_array_swapaxes(cukit_Array *self, PyObject *args, PyObject *kwargs);
PyObject *cukit_array_diagonal(cukit_Array *self, PyObject *args, PyObject *kwargs);
PyObject *cukit_array_repeat(cukit_Array *self, PyObject *args, PyObject *kwargs);
/* An axis argument as an index in [0, ndim). 0 / -1 (TypeError, numpy's AxisError). */
int cukit_axis_arg(cukit_state *st, PyObject *obj, int ndim, int *out);

/* scalars.c: numpy's scalar conversions (a copy to the host, then numpy's rules).
 * float/int/complex need one element; __index__ a 0-d integer array; item() with no
 * index one element; __format__ with a spec a 0-d array. New ref or NULL. */
PyObject *cukit_array_float(PyObject *self);
PyObject *cukit_array_int(PyObject *self);
PyObject *cukit_array_index(PyObject *self);
PyObject *cukit_array_complex(PyObject *self, PyObject *ignored);
PyObject *cukit_array_item(PyObject *self, PyObject *args);
PyObject *cukit_array_tolist(PyObject *self, PyObject *ignored);
PyObject *cukit_array_format_spec(PyObject *self, PyObject *spec);

#endif /* CUKIT_ARRAY_IMPL_H */
