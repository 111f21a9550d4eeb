/* array.h - the array layer: cukit.Array, views, host and device copies, DLPack/CAI exchange, strided copy kernels */
#ifndef CUKIT_ARRAY_H
#define CUKIT_ARRAY_H

#include "compile/compile.h"

/* array/'s part of the module state (st->array; see cukit_state; ArrayType, which
 * lower layers check arguments against, is in cukit_state itself). */
typedef struct cukit_array_state {
    PyObject *strided_modules; /* strong ref: dict device ordinal -> Module holding the
                                  strided copy and fill kernels, compiled at the first copy
                                  that needs them on that device */
    PyTypeObject *FlagsType;   /* strong ref: Array.flags' type (protocols.c) */
    PyObject *numpy_table;     /* strong ref: numpy function -> cukit's, for the Array's
                                  __array_function__/__array_ufunc__; NULL until cukit/
                                  __init__.py sets it */
    PyObject *repeat_modules;  /* strong ref: the same for kernels/repeat.cu (a.repeat) */
} cukit_array_state;

/* Array.flags bits */
enum {
    CUKIT_ARRAY_C_CONTIG = 1,  /* elements in C order with no gaps */
    CUKIT_ARRAY_F_CONTIG = 2,  /* elements in Fortran order with no gaps */
    CUKIT_ARRAY_READONLY = 4,  /* imported from a producer that marked the data read-only */
    CUKIT_ARRAY_LOCKED = 8,    /* read-only by this object's setflags(write=False), which
                                  setflags(write=True) may undo */
};

/* An N-D view of device memory: cukit's own (a Buffer, shared by every view of
 * it) or another library's (imported through DLPack or the CUDA Array Interface). */
typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref: the device that holds the data */
    cukit_Buffer *buffer;  /* strong ref: owns the memory, shared by views; NULL when imported */
    PyObject *owner;       /* strong ref, imported memory only: keeps it alive (the producer,
                              or a capsule whose destructor calls the DLPack deleter);
                              NULL with a buffer, and once free() let go of it */
    CUdeviceptr base;      /* imported memory: the address `offset` counts from; 0 with a buffer */
    Py_ssize_t offset;     /* bytes from the memory's start to element [0, ..., 0] */
    PyObject *dtype;       /* strong ref: numpy dtype */
    int typecode;          /* cukit_typecode of dtype */
    int flags;             /* CUKIT_ARRAY_* bits */
    Py_ssize_t itemsize;
    Py_ssize_t size;       /* elements */
    Py_ssize_t nbytes;     /* size * itemsize: the bytes of the elements, not of their span */
    int ndim;
    Py_ssize_t shape[CUKIT_MAXDIM];
    Py_ssize_t strides[CUKIT_MAXDIM]; /* bytes, any sign; views may have gaps */
} cukit_Array;

/* 1 while the array's memory may be used: not freed, not let go of. */
static inline int
cukit_array_live(const cukit_Array *a)
{
    return a->buffer ? a->buffer->ptr != 0 : a->owner != NULL;
}

/* Device address of element [0, ..., 0]; meaningful only while cukit_array_live. */
static inline CUdeviceptr
cukit_array_ptr(const cukit_Array *a)
{
    return (a->buffer ? a->buffer->ptr : a->base) + (CUdeviceptr)a->offset;
}

/* The Array's operators, as passed to cukit_hooks.array_math (CUKIT_OP_LT + Py_LT ... for
 * comparisons), and its math methods for cukit_hooks.array_call. */
enum {
    CUKIT_OP_ADD, CUKIT_OP_SUB, CUKIT_OP_MUL, CUKIT_OP_TRUEDIV, CUKIT_OP_FLOORDIV,
    CUKIT_OP_MOD, CUKIT_OP_POW, CUKIT_OP_LSHIFT, CUKIT_OP_RSHIFT, CUKIT_OP_AND,
    CUKIT_OP_OR, CUKIT_OP_XOR, CUKIT_OP_NEG, CUKIT_OP_POS, CUKIT_OP_ABS, CUKIT_OP_INVERT,
    CUKIT_OP_BOOL, CUKIT_OP_LT, /* then LE, EQ, NE, GT, GE in Py_LT.. order */
    CUKIT_OP_COUNT = CUKIT_OP_LT + 6
};
enum { CUKIT_CALL_ASTYPE, CUKIT_CALL_CONJ, CUKIT_CALL_REAL, CUKIT_CALL_IMAG,
       CUKIT_CALL_NONZERO, CUKIT_CALL_TAKE, CUKIT_CALL_PUT, CUKIT_CALL_COMPRESS,
       CUKIT_CALL_REPR, CUKIT_CALL_STR,
       CUKIT_CALL_ROUND, CUKIT_CALL_CLIP,
       CUKIT_CALL_REDUCE = 16 /* + the index of sum, prod, max, ... in array.c's table */ };

/* ------------------------------------------------------------------ array.c */

/* The Array type; registers hooks.array_ref and hooks.array_wrap. 0 / -1. */
int cukit_array_setup(PyObject *module, cukit_state *st);
/* A new uninitialised C-contiguous array on dev (a Buffer of its own). Steals
 * nothing. New ref, or NULL with an exception (ValueError when the size overflows). */
cukit_Array *cukit_array_create(cukit_state *st, cukit_Device *dev, int ndim,
                                const Py_ssize_t *shape, PyObject *dtype);
/* An array over memory cukit did not allocate, at `base` on dev. `owner` keeps the
 * memory alive (a new strong ref is taken); `strides` are bytes, NULL for C order.
 * New ref, or NULL with an exception. */
cukit_Array *cukit_array_wrap(cukit_state *st, cukit_Device *dev, CUdeviceptr base,
                              PyObject *owner, PyObject *dtype, int ndim,
                              const Py_ssize_t *shape, const Py_ssize_t *strides, int readonly);
/* A new uninitialised C-contiguous array of `dtype` (whose typecode and itemsize the
 * caller knows) from dev's pool. New ref, or NULL with an exception. */
cukit_Array *cukit_array_new(cukit_state *st, cukit_Device *dev, PyObject *dtype, int typecode,
                             Py_ssize_t itemsize, int ndim, const Py_ssize_t *shape);
/* The same for an array that a kernel queued next on the legacy stream writes first
 * (kernel outputs): its memory may be a block reused without a driver call
 * (cukit_buffer_create_for_legacy_write). New ref, or NULL with an exception. */
cukit_Array *cukit_array_new_for_legacy_write(cukit_state *st, cukit_Device *dev,
                                              PyObject *dtype, int typecode,
                                              Py_ssize_t itemsize, int ndim,
                                              const Py_ssize_t *shape);
/* A view of a: same memory, `offset` bytes from its start, with another dtype allowed
 * (typecode/itemsize describe it). New ref or NULL. */
cukit_Array *cukit_array_view_as(cukit_Array *a, PyObject *dtype, int typecode,
                                 Py_ssize_t itemsize, Py_ssize_t offset, int ndim,
                                 const Py_ssize_t *shape, const Py_ssize_t *strides);
/* The element bytes of `value` in a's dtype, by numpy's conversion rules (with its
 * range errors); `what` names the call in the error. New ref (bytes of a->itemsize)
 * or NULL. */
PyObject *cukit_array_element_bytes(cukit_Array *a, PyObject *value, const char *what);
/* A new C-contiguous array with a's data, copied on the legacy default stream.
 * New ref, or NULL with an exception. */
cukit_Array *cukit_array_copy(cukit_Array *a);
/* to_device(obj, dtype=dtype, device=device): host data copied to a new array.
 * dtype and device may be NULL. New ref or NULL. */
PyObject *cukit_array_from_host(cukit_state *st, PyObject *obj, PyObject *dtype,
                                PyObject *device);
/* 0 when dtype (may be NULL or None) is a's own dtype; else -1 with TypeError
 * saying cukit does not convert device data, `who` naming the call. */
int cukit_array_check_dtype(cukit_Array *a, PyObject *dtype, const char *who);
/* The shape as a tuple / the byte strides as a tuple. New ref or NULL. */
PyObject *cukit_array_shape(const cukit_Array *a);
PyObject *cukit_array_strides(const cukit_Array *a);

/* ------------------------------------------------------------------ views.c */

/* 1 when `item` of an index is advanced in numpy's sense: an integer or boolean array
 * (cukit's, numpy's, a list) or a bool; 0 otherwise; -1 with an exception. */
int cukit_index_item_is_advanced(cukit_state *st, PyObject *item);

/* ------------------------------------------------------------------ functions.c */

/* cukit.empty(shape, dtype, device) (zeros() when zero): shape an int or a sequence, dtype
 * anything numpy takes, device a Device, an ordinal or None. New ref or NULL. */
PyObject *cukit_array_shaped(cukit_state *st, PyObject *shape, PyObject *dtype, PyObject *device,
                             int zero);
/* Array.get(out=None, stream=None): the copy to the host. New ref or NULL. */
PyObject *cukit_array_get(cukit_Array *self, PyObject *args, PyObject *kwargs);
/* The module functions empty, zeros, *_like, to_device, copy. 0 / -1. */
int cukit_array_functions_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ protocols.c */

/* Array.flags' type and _set_numpy_table(); after cukit_array_functions_setup. 0 / -1. */
int cukit_protocols_setup(PyObject *module, cukit_state *st);
/* ------------------------------------------------------------------ shape.c */

/* The shape methods of cukit.Array (added to its type) and cukit.broadcast_to. 0 / -1. */
int cukit_array_shape_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ dlpack.c */

/* from_dlpack(), asarray() and ascontiguousarray(). 0 / -1. */
int cukit_dlpack_setup(PyObject *module, cukit_state *st);
/* Array.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None). */
PyObject *cukit_array_dlpack(PyObject *self, PyObject *args, PyObject *kwargs);
/* Array.__dlpack_device__() -> (2, ordinal). */
PyObject *cukit_array_dlpack_device(PyObject *self, PyObject *ignored);

/* ------------------------------------------------------------------ strided.c */

/* Copy the elements of one layout into another of the same shape, both in device
 * memory of dev, queued on `stream` (no wait): cuMemcpyDtoDAsync when both are one
 * contiguous run, cuMemcpy2DAsync / cuMemcpy3DAsync when rows are, else cukit's
 * copy kernel (compiled with NVRTC at first need on each device). Addresses are
 * of element [0, ..., 0]; strides in bytes, any sign. 0 / -1 with an exception. */
int cukit_strided_copy(cukit_Device *dev, CUdeviceptr dst, const Py_ssize_t *dst_strides,
                       CUdeviceptr src, const Py_ssize_t *src_strides, int ndim,
                       const Py_ssize_t *shape, Py_ssize_t itemsize, CUstream stream);
/* Set every element of a layout to `value` (itemsize bytes), queued on stream:
 * the memset family where the layout allows, else cukit's fill kernel.
 * 0 / -1 (TypeError for an element over 128 bytes that needs the kernel). */
int cukit_strided_fill(cukit_Device *dev, CUdeviceptr dst, const Py_ssize_t *strides, int ndim,
                       const Py_ssize_t *shape, const void *value, Py_ssize_t itemsize,
                       CUstream stream);

/* ------------------------------------------------------------------ internal.c */

/* cukit._copy_htod and _copy_dtoh, for tests and benchmarks. 0 / -1. */
int cukit_internal_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_ARRAY_H */
