/* compute.h - the compute layer: the elementwise engine (dtypes and NEP 50 promotion, CUDA C
 * generation, ufuncs and their one-call dispatch, ElementwiseKernel) and random numbers */
#ifndef CUKIT_COMPUTE_H
#define CUKIT_COMPUTE_H

#include "array/array.h"

/* compute/'s part of the module state (st->compute; see cukit_state). */
typedef struct cukit_compute_state {
    /* strong refs: the ufunc and ElementwiseKernel types, the ufuncs by index, numpy
     * dtypes by typecode (built at first use), fuse's traced-value class and its hook */
    PyTypeObject *UfuncType, *ElementwiseType;
    PyObject *ufuncs, *math_dtypes, *fuse_proxy, *fuse_apply;
    /* strong refs: the reduction and scan kernel tables (capsule) and types; random's
     * types; dicts ordinal -> Module: choice.cu's, histogram.cu's, compute/index/'s */
    PyObject *reduce_tables, *random_modules, *sample_modules, *stats_modules, *index_modules,
        *mask_modules;
    PyTypeObject *ReductionKernelType, *ScanKernelType, *PhiloxType, *Philox4x32Type,
        *GeneratorType;
    /* index/'s gather [0], scatter [1] by element size on index_dev (borrowed), the last */
    void *index_dev;
    CUfunction index_funcs[2][5];
} cukit_compute_state;

#define CK_NT CUKIT_TC_COUNT  /* tables are indexed by cukit_typecode */
#define CK_MAXOP 12           /* operands of one generated kernel (ElementwiseKernel's limit:
                                 the argument block of the N-D class stays under 4 KiB) */
#define CK_UMAXOP 4           /* operands of a ufunc kernel: up to 3 inputs and the output */
#define CK_THREADS 256

/* ------------------------------------------------------------------ promote.c */
/* What the engine knows of each element type. */
typedef struct {
    char ch;              /* numpy's type character ('?', 'b', 'B', ...); 0: no math on it */
    char kind;            /* 'b' bool, 'i', 'u', 'f', 'c' */
    int size;             /* bytes */
    const char *name;     /* numpy's name: "float32" */
    const char *ctype;    /* type of an element in generated code ("f16" is cukit's half) */
    const char *ctype_c;  /* the type it is computed in ("float" for f16 and bf16) */
    int cast_only;        /* 1: astype to and from it, no math (the float8s: a storage type) */
} ck_dtype;

extern const ck_dtype ck_dtypes[CK_NT];

/* 1 when the engine computes on typecode tc. */
static inline int
ck_math_tc(int tc)
{
    return tc > 0 && tc < CK_NT && ck_dtypes[tc].ch != 0 && !ck_dtypes[tc].cast_only;
}

/* 1 when astype converts to and from typecode tc (the math types and the float8s). */
static inline int ck_cast_tc(int tc) { return tc > 0 && tc < CK_NT && ck_dtypes[tc].ch != 0; }
/* What follows "does not support dtype X" for tc: how to compute on a float8 ("" for
 * other types). Static storage. */
const char *ck_dtype_hint(int tc);

/* -1, for an int function's `return ck_failed(PyErr_Format(...));`. */
static inline int
ck_failed(PyObject *always_null)
{
    (void)always_null;
    return -1;
}

/* The typecode of numpy's type character c, or -1. */
int ck_tc_of_char(char c);
/* numpy 2's promotion of two dtypes (np.result_type of two arrays), or -1. */
int ck_promote(int a, int b);
/* numpy's can_cast(from, to, casting) for casting "safe" (0) or "same_kind" (1). */
int ck_can_cast(int from, int to, int same_kind);

/* Python scalars are weak (NEP 50): their dtype comes from the arrays they meet. */
enum { CK_WEAK_NONE = 0, CK_WEAK_BOOL, CK_WEAK_INT, CK_WEAK_FLOAT, CK_WEAK_COMPLEX };
/* The dtype a weak scalar of `weak` kind takes next to arrays promoting to `strong`
 * (-1: no array, so the scalar's own default). */
int ck_weak_tc(int weak, int strong);

/* A scalar converted for a kernel: the bits of one element of its compute type. */
typedef struct {
    _Alignas(16) unsigned char b[16];
} ck_slot;

/* Convert Python number `v` to typecode tc's compute type in *out (float16, bfloat16:
 * its float, rounded to the type first).
 * `range_check` 1: an int out of tc's range is numpy's OverflowError. 0 / -1. */
int ck_scalar_to(PyObject *v, int tc, int range_check, ck_slot *out);
/* IEEE half from a double, round to nearest even (numpy's double-to-half cast). */
unsigned short ck_double_to_half(double d);
float ck_half_to_float(unsigned short h);
/* bfloat16 from a float, round to nearest even, a NaN the quiet 0x7fc0 with its sign
 * (ml_dtypes' bits); and back (exact). */
unsigned short ck_float_to_bf16(float f);
float ck_bf16_to_float(unsigned short h);
/* "#define CK_ML n\n" before the preamble: the installed ml_dtypes' casts ("": default). */
const char *ck_ml_define(void);

/* ------------------------------------------------------------------ codegen.c */
/* Launch classes: how an operation's layout is indexed. */
enum {
    CK_CLASS_VEC = 0,  /* one contiguous run, every pointer aligned: vector loads */
    CK_CLASS_FLAT,     /* one contiguous run, element accesses */
    CK_CLASS_N1,       /* strided, 1 to 3 dimensions, 32-bit indexing */
    CK_CLASS_N2,
    CK_CLASS_N3,
    CK_CLASS_NN,       /* strided, any dimensions, 64-bit indexing */
    CK_CLASS_T2,       /* 2-D with inputs transposed to the output: 32 x 32 tiles through
                          shared memory, 64-bit offsets */
    CK_CLASS_COUNT
};
/* Dimensions a class's argument block carries (0 for the contiguous ones). */
int ck_class_dims(int cls);

/* One operand of a generated kernel. */
typedef struct {
    int tc;           /* element type as stored (arrays) or as passed (scalars: the compute
                         type of `tc`) */
    int scalar;       /* 1: a value in the argument block, not a pointer */
    int output;       /* 1: written */
    int raw;          /* ElementwiseKernel `raw` parameter: a pointer the code indexes itself */
    int tiled;        /* CK_CLASS_T2: an input read through a shared-memory tile */
    const char *name; /* name in generated code */
} ck_operand;

/* Text the ufunc engine needs to write a kernel body. */
typedef struct {
    const char *func;   /* device function of the preamble, "uf_add" */
    int nin;
    int ltc[3];         /* loop type of each input (the type it is computed in) */
    int rtc;            /* type the loop's result is rounded to before the output cast */
    int masked;         /* 1: where=, a bool operand after the inputs; the output keeps its
                           value where it is false */
} ck_ufunc_body;

/* The device file every generated kernel starts with (cukit_device_file's name): element
 * types, conversions, loads, the ufunc device functions. */
#define CK_PREAMBLE "compute/kernels/preamble.cuh"

/* CUDA C for one ufunc loop in launch class cls: kernel "ck" over ops[0] (the output)
 * and ops[1..nin] (and the mask ops[nin + 1] when body->masked); vec elements per
 * thread in CK_CLASS_VEC. New ref: str, or NULL. */
PyObject *ck_ufunc_source(const ck_ufunc_body *body, const ck_operand *ops, int cls, int vec);
/* The same around any statement (ElementwiseKernel): `head` follows the preamble and
 * the typedefs T<k> of each operand; load_out[k] 1: output k is read before it is
 * written (may be NULL); `prep` opens the kernel's body and `after` closes it (each may
 * be NULL). New ref: str, or NULL. */
PyObject *ck_custom_source(const char *head, const ck_operand *ops, int nops, int cls, int vec,
                           const char *stmt, const int *load_out, const char *prep,
                           const char *after);

/* The argument block of a generated kernel, as the host fills it: one 16-byte slot per
 * operand (pointer or scalar), then n, ndim, and for strided classes the shape and each
 * operand's byte strides, ND = ck_class_dims(cls) of each. */
typedef struct {
    size_t size;          /* bytes of the block */
    size_t n_off, ndim_off, shape_off, stride_off;
    int nd;
} ck_args_layout;
void ck_args_layout_of(int nops, int cls, ck_args_layout *argblock);

/* ------------------------------------------------------------------ engine.c */
/* A loaded kernel of one launch class, found by a packed key. */
typedef struct {
    uint64_t key;          /* 0: empty slot */
    CUfunction func;
    int vec;               /* elements per thread (CK_CLASS_VEC) */
} ck_entry;

/* A small open-addressing table of loaded kernels (key -> function); the modules the
 * functions live in are kept alive by `modules`. */
typedef struct {
    ck_entry *slots;       /* owned (PyMem) */
    size_t cap, used;
    PyObject *modules;     /* strong ref: list of Module, NULL until the first insert */
} ck_kcache;

/* The entry for key, or NULL. Never raises. */
static inline ck_entry *
ck_kcache_find(const ck_kcache *c, uint64_t key)
{
    if (c->cap == 0)
        return NULL;
    size_t mask = c->cap - 1, i = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
    for (;;) {
        ck_entry *e = &c->slots[i];
        if (e->key == key)
            return e;
        if (e->key == 0)
            return NULL;
        i = (i + 1) & mask;
    }
}
/* Add key -> func, keeping `module` alive. 0 / -1 (MemoryError). */
int ck_kcache_add(ck_kcache *c, uint64_t key, CUfunction func, int vec, PyObject *module);
void ck_kcache_clear(ck_kcache *c);

/* A prepared elementwise launch: the operands, broadcast and simplified. */
typedef struct {
    int nops;                           /* operands (the outputs among them) */
    int nd;                             /* dimensions after simplification */
    long long n;                        /* elements */
    long long shape[CUKIT_MAXDIM];
    long long strides[CK_MAXOP][CUKIT_MAXDIM]; /* bytes, per operand; 0 for scalars */
    CUdeviceptr ptr[CK_MAXOP];          /* element [0,...] of array operands */
    ck_slot val[CK_MAXOP];              /* scalars */
    int scalar[CK_MAXOP];               /* 1: operand is a scalar (or raw: pointer only) */
    int itemsize[CK_MAXOP];
    unsigned tiled;                     /* CK_CLASS_T2: bit k, operand k is read through a tile */
} ck_layout;

/* Broadcast `count` arrays (NULL entries are scalars) to one shape. 0 / -1 with numpy's
 * ValueError naming the shapes. */
int ck_broadcast(cukit_Array *const *arrays, int count, int *ndim, Py_ssize_t *shape);
/* Fill layout's strides of operand k from array a broadcast to (ndim, shape). */
void ck_layout_operand(ck_layout *layout, int k, cukit_Array *a, int ndim, const Py_ssize_t *shape);
/* Drop length-1 dimensions, order by operand `order_by`'s strides when it is >= 0,
 * merge dimensions every operand walks as one run; then pick the launch class and
 * the vector width (*vec) of the contiguous case. Two dimensions where an operand of
 * the `inputs` mask runs along the other dimension than output `ref` get CK_CLASS_T2,
 * with layout->tiled naming those inputs. */
int ck_layout_finish(ck_layout *layout, int ndim, const Py_ssize_t *shape, int order_by, int ref,
                     unsigned inputs, int *vec);
/* Launch func over layout (class cls) on stream h. 0 / -1. */
int ck_launch(cukit_Device *dev, CUfunction func, const ck_layout *layout, int cls, int vec,
              CUstream h);

/* A new C-contiguous array of typecode tc and the given shape on dev, from the pool.
 * New ref or NULL. */
cukit_Array *ck_empty(cukit_state *st, cukit_Device *dev, int tc, int ndim,
                      const Py_ssize_t *shape);
/* The same for a kernel's output, which the kernel queued next on `stream` writes
 * first: with no stream and no current one (the legacy stream) the memory may be a block an array just let
 * go of, reused without a driver call (memory/pool.c's rule). New ref or NULL. */
cukit_Array *ck_empty_out(cukit_state *st, cukit_Device *dev, int tc, int ndim,
                          const Py_ssize_t *shape, PyObject *stream);
/* numpy dtype of typecode tc (borrowed), built at first use; NULL with an exception. */
PyObject *ck_dtype_obj(cukit_state *st, int tc);
/* The typecode of a numpy dtype (or anything numpy.dtype takes) the engine computes
 * on; -1 with TypeError naming it otherwise. */
int ck_tc_of(cukit_state *st, PyObject *dtype_like);
/* The same for astype's dtype: the float8s too. */
int ck_cast_tc_of(cukit_state *st, PyObject *dtype_like);
/* A stream= argument (None: the thread's current stream of dev, or the legacy one): its
 * handle, and the capture bookkeeping (keep `keep`). 0 / -1. */
int ck_stream(cukit_state *st, PyObject *stream, cukit_Device *dev, PyObject *keep,
              CUstream *h);

/* ------------------------------------------------------------------ ufunc.c */
/* Operators and methods of cukit.Array, registered as the array layer's hooks. */
PyObject *ck_array_math(cukit_state *st, int op, PyObject *a, PyObject *b, int inplace);
PyObject *ck_array_call(cukit_state *st, int which, PyObject *self, PyObject *args,
                        PyObject *kwargs);
/* The ufunc objects and cukit.where/clip/astype/...; adds them to module. 0 / -1. */
int ck_ufunc_setup(PyObject *module, cukit_state *st);
/* astype: a new array of dtype tc with a's values (numpy's unsafe cast). New ref/NULL. */
PyObject *ck_astype(cukit_state *st, cukit_Array *a, int tc, PyObject *stream);
/* dst[...] = src cast to dst's dtype, src broadcast to dst (numpy.copyto with casting
 * unsafe), on stream (None: the current stream, else the legacy one). 0 / -1. */
int ck_copyto(cukit_state *st, cukit_Array *dst, cukit_Array *src, PyObject *stream);

/* cukit.where (which 0: where(cond, x, y)) and cukit.clip (1: clip(a, lo, hi)) on three
 * operands. New ref or NULL. */
PyObject *ck_ternary(cukit_state *st, int which, PyObject *const *in, PyObject *out,
                     PyObject *stream);

/* ------------------------------------------------------------------ functions.c */
int ck_functions_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ elementwise.c */
int ck_elementwise_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ reductions and scans
 * reduce.c (the engine), reduce_codegen.c, reductions.c (numpy's names), reduce_kernel.c
 * (ReductionKernel), scan.c (cumsum, cumprod, the scan kernels); their shared types are
 * in reduce_impl.h. */

/* Array.sum(...) and the other reduction and scan methods: index into reductions.c's
 * table (array.h's CUKIT_CALL_REDUCE + index). New ref or NULL. */
PyObject *ck_reduce_method(cukit_state *st, int index, PyObject *self, PyObject *args,
                           PyObject *kwargs);
/* cumsum (which 0) / cumprod (1) with fastcall arguments (a, axis, dtype, out). New ref. */
PyObject *ck_scan_call(cukit_state *st, int which, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames);
/* The module functions and types of each file. 0 / -1. */
int ck_reductions_setup(PyObject *module, cukit_state *st);
int ck_reduce_kernel_setup(PyObject *module, cukit_state *st);
int ck_scan_setup(PyObject *module, cukit_state *st);
int ck_histogram_setup(PyObject *module, cukit_state *st); /* bincount: atomic adds */

int ck_index_setup(PyObject *module, cukit_state *st); /* compute/index/ (index.h). 0 / -1 */
/* The compute layer's setup, called from module init. 0 / -1. */
int ck_compute_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ random.c */
/* cukit.random's types, added to the module as Philox and Generator (and
 * _random_kernel_source); they draw with Philox4x64-10 kernels compiled once per
 * device. 0 / -1. */
int ck_random_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_COMPUTE_H */
