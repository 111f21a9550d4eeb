/* common.h - the bottom of every layer: module state, the error convention, the one element-type table */
#ifndef CUKIT_COMMON_H
#define CUKIT_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ Python 3.10-3.12 */

#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#define Py_T_OBJECT_EX T_OBJECT_EX
#define Py_T_INT T_INT
#define Py_T_PYSSIZET T_PYSSIZET
#define Py_READONLY READONLY
static inline PyObject *
PyErr_GetRaisedException(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (type == NULL)
        return NULL;
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
}
static inline void
PyErr_SetRaisedException(PyObject *exc)
{
    if (exc == NULL) {
        PyErr_Clear();
        return;
    }
    PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
}
#endif

/* getattr that returns 0 (and no exception) when the attribute is missing,
 * 1 with a new ref in *out when present, -1 on other errors. `name` is a str
 * (interned ones, for paths that run per launch). For the usual getattr, a
 * missing attribute makes no AttributeError (whose message is formatted, then
 * dropped): the launch path asks every DLPack-only argument for
 * __cuda_array_interface__. */
static inline int
cukit_optional_attr_obj(PyObject *obj, PyObject *name, PyObject **out)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyObject_GetOptionalAttr(obj, name, out);
#else
    return _PyObject_LookupAttr(obj, name, out);
#endif
}

/* The same with the name as a C string. */
static inline int
cukit_optional_attr(PyObject *obj, const char *name, PyObject **out)
{
    PyObject *key = PyUnicode_FromString(name);
    *out = NULL;
    if (key == NULL)
        return -1;
    int rc = cukit_optional_attr_obj(obj, key, out);
    Py_DECREF(key);
    return rc;
}

#define CUKIT_VERSION "0.1.0" /* also in pyproject.toml; part of every cache key */
#define CUKIT_MAXDIM 32        /* numpy's own limit is 64; 32 covers every real use */

/* ------------------------------------------------------------------ exceptions */

enum {
    CUKIT_EXC_CUDA,          /* CudaError(RuntimeError): base of every driver/NVRTC failure */
    CUKIT_EXC_OOM,           /* OutOfMemoryError(CudaError, MemoryError) */
    CUKIT_EXC_NO_DEVICE,     /* NoDeviceError(CudaError) */
    CUKIT_EXC_INVALID_VALUE, /* InvalidValueError(CudaError, ValueError) */
    CUKIT_EXC_NOT_SUPPORTED, /* NotSupportedError(CudaError) */
    CUKIT_EXC_LAUNCH,        /* LaunchError(CudaError): the launch was refused */
    CUKIT_EXC_FAULT,         /* KernelFaultError(CudaError): a kernel crashed, context lost */
    CUKIT_EXC_COMPILE,       /* CompileError(CudaError) */
    CUKIT_EXC_LINK,          /* LinkError(CompileError): nvJitLink failed */
    CUKIT_EXC_NCCL,          /* NcclError(CudaError): an NCCL call or an asynchronous NCCL error */
    CUKIT_EXC_NCCL_TIMEOUT,  /* NcclTimeoutError(NcclError, TimeoutError): a wait outran timeout= */
    CUKIT_EXC_COUNT
};

/* ------------------------------------------------------------------ element types */

/* What an array's elements are, reduced to what an argument check needs. */
typedef enum {
    CUKIT_TC_OTHER = 0, /* structured, void, strings: only untyped and struct pointers take them */
    CUKIT_TC_ANY,       /* a pointer parameter that accepts every dtype (void*, char*) */
    CUKIT_TC_BOOL,
    CUKIT_TC_I8, CUKIT_TC_U8, CUKIT_TC_I16, CUKIT_TC_U16,
    CUKIT_TC_I32, CUKIT_TC_U32, CUKIT_TC_I64, CUKIT_TC_U64,
    CUKIT_TC_F16, CUKIT_TC_BF16, CUKIT_TC_F32, CUKIT_TC_F64,
    CUKIT_TC_C64, CUKIT_TC_C128,
    CUKIT_TC_F8E4M3, CUKIT_TC_F8E5M2, /* ml_dtypes' float8_e4m3fn and float8_e5m2 */
    CUKIT_TC_PTR,       /* a pointer to pointers: takes 64-bit integer arrays */
    CUKIT_TC_COUNT
} cukit_typecode;

/* ------------------------------------------------------------------ module state */

typedef struct cukit_state cukit_state;

/* Objects of higher layers that the state and the hooks below name by pointer only. */
struct cukit_Device_s;

/* A cukit.Array as layers below array/ may read it (filled by hooks.array_ref). */
typedef struct {
    struct cukit_Device_s *device; /* borrowed: the device that holds the data */
    unsigned long long ptr;        /* device address of element [0, ..., 0] */
    long long nbytes;              /* bytes of the elements */
    int typecode;                  /* cukit_typecode */
    int c_contiguous;              /* 1: C order with no gaps */
    int live;                      /* 0 once the memory was freed or let go of */
} cukit_array_ref;

/* What a higher layer lends a lower one, registered by the higher layer's setup
 * (so that no call runs back up the tree). NULL until registered. */
typedef struct {
    /* launch/graph.c: Stream.capture(). New ref or NULL. */
    PyObject *(*stream_capture)(PyObject *stream);
    /* array/array.c: read `array`, whose type the caller checked is st->ArrayType. */
    void (*array_ref)(PyObject *array, cukit_array_ref *out);
    /* array/array.c: an Array over device memory at `base` that `owner` keeps alive
     * (strides in bytes, NULL for C order). New ref or NULL with an exception. */
    PyObject *(*array_wrap)(cukit_state *st, struct cukit_Device_s *dev, unsigned long long base,
                            PyObject *owner, PyObject *dtype, int ndim, const Py_ssize_t *shape,
                            const Py_ssize_t *strides, int readonly);
    /* compute/: the Array's operators (op: CUKIT_OP_* of array.h; b NULL for unary ones;
     * inplace: a is also the output) and math methods (which: CUKIT_CALL_*). New refs. */
    PyObject *(*array_math)(cukit_state *st, int op, PyObject *a, PyObject *b, int inplace);
    PyObject *(*array_call)(cukit_state *st, int which, PyObject *self, PyObject *args,
                            PyObject *kwargs);
    PyObject *(*array_matmul)(cukit_state *st, PyObject *a, PyObject *b); /* linalg/: a @ b */
    /* compute/index/: a[key] and a[key] = value for a key with integer or boolean arrays
     * (advanced indexing). New ref or NULL / 0 or -1. */
    PyObject *(*array_index)(cukit_state *st, PyObject *a, PyObject *key);
    int (*array_index_set)(cukit_state *st, PyObject *a, PyObject *key, PyObject *value);
    /* sort/: a.sort() in place (want_index CUKIT_SORT_INPLACE, returns None), a.argsort()
     * (CUKIT_SORT_ARGSORT), a.searchsorted(), a.partition() in place and
     * a.argpartition() (the CUKIT_SORT_* below). New ref. */
    PyObject *(*array_sort)(cukit_state *st, int want_index, PyObject *self, PyObject *args,
                            PyObject *kwargs);
} cukit_hooks;

/* What cukit_hooks.array_sort is asked for: the Array methods sort/ computes. */
enum { CUKIT_SORT_INPLACE, CUKIT_SORT_ARGSORT, CUKIT_SORT_SEARCHSORTED, CUKIT_SORT_PARTITION,
       CUKIT_SORT_ARGPARTITION };


/* The module state: what the bottom layers need, and each layer's own part, which the
 * layer's header defines (cukit_runtime_state in runtime.h, ...). The parts lie in the
 * module's one allocation (cukitmodule.c) and are reached as st->runtime->devices. */
struct cukit_state {
    PyObject *exc[CUKIT_EXC_COUNT]; /* strong refs: exception classes, see the enum */
    cukit_hooks hooks;
    /* strong ref: cukit.Array's type (array/), which layers below array/ check
     * arguments against before they read one through hooks.array_ref */
    PyTypeObject *ArrayType;

    /* strong refs, filled at first use by cukit_numpy(): numpy and what we call on it */
    PyObject *numpy, *np_dtype;
    PyObject *np_empty, *np_asarray;
    PyObject *np_ndarray;
    PyObject *np_generic;
    PyObject *np_floating;
    PyObject *np_integer;
    PyObject *np_bool;
    /* strong ref, made at first use: dtype-like object -> (dtype, itemsize, typecode),
     * see cukit_dtype_facts (at most 64 keys) */
    PyObject *dtype_memo;

    /* borrowed: each layer's part, set before any layer's setup runs */
    struct cukit_runtime_state *runtime;
    struct cukit_memory_state *memory;
    struct cukit_declarations_state *declarations;
    struct cukit_sandbox_state *sandbox;
    struct cukit_launch_state *launch;
    struct cukit_compile_state *compile;
    struct cukit_array_state *array;
    struct cukit_compute_state *compute;
    struct cukit_linalg_state *linalg;
    struct cukit_fft_state *fft;
    struct cukit_nccl_state *nccl;
    struct cukit_pycuda_state *pycuda;
    /* strong ref: cukit.debug's launch recorder, NULL when off; set by launch/capture.c,
     * read by errors.c (a fault writes the reproducer) and the launch path. Here, not
     * in launch/'s part, because errors.c reads it (docs/architecture.md says more). */
    PyObject *capture;
};

/* ------------------------------------------------------------------ state.c */

/* State of the module that defined `type` (or, for a Python subclass, its cukit base). Borrowed. */
cukit_state *cukit_state_of_type(PyTypeObject *type);
/* Import numpy into st once. 0 / -1 with ImportError explaining it is required. */
int cukit_numpy(cukit_state *st);
/* 1 when this interpreter runs a Python thread besides the calling one. */
int cukit_other_threads(void);

/* ------------------------------------------------------------------ errors.c */

/* An instance of exc[kind] with .code/.name/.call set (code < 0 and NULL names
 * give None). New ref, or NULL with an exception. */
PyObject *cukit_make_error(cukit_state *st, int kind, long code, const char *name,
                           const char *call, PyObject *message);
/* Raise exception class exc[kind] with a message and .code/.name/.call set. Returns -1. */
int cukit_raise(cukit_state *st, int kind, long code, const char *name, const char *call,
                PyObject *message);
/* Build the exception classes into st->exc and add them to module. 0 / -1. */
int cukit_errors_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ dtypes.c: the one element-type table */

/* typecode of a numpy dtype (-1 with an exception on error), of an
 * __array_interface__ typestr such as "<f4", of a torch dtype's name after
 * "torch." and of a DLPack (code, bits, lanes); CUKIT_TC_OTHER when none fits. */
int cukit_typecode_of_dtype(PyObject *dtype);
int cukit_typecode_of_typestr(const char *typestr);
int cukit_typecode_of_torch(const char *name);
int cukit_typecode_of_dlpack(int code, int bits, int lanes);
/* DLPack (code, bits) of a typecode; 0 when it has none. */
int cukit_typecode_dlpack(int tc, int *code, int *bits);
/* Bytes per element of a typecode; 0 for CUKIT_TC_OTHER/ANY. */
int cukit_typecode_size(int tc);
/* "float32" style name of a typecode, for messages and numpy.dtype(). Static storage. */
const char *cukit_typecode_name(int tc);
/* numpy.dtype(obj), refusing dtypes that hold Python objects. New ref or NULL. */
PyObject *cukit_resolve_dtype(cukit_state *st, PyObject *obj);
/* A numpy dtype's itemsize and typecode (CUKIT_TC_OTHER when none fits). 0 / -1. Both
 * this and cukit_resolve_dtype remember what a type, a numpy dtype or a str (none of
 * which can change) gave, so that `empty(n, np.float32)` asks numpy nothing again. */
int cukit_dtype_facts(cukit_state *st, PyObject *dtype, Py_ssize_t *itemsize, int *typecode);

/* device_files.c: the text of the built-in device file `name` (its path under csrc/,
 * "compute/kernels/preamble.cuh"), with its local includes in place; static, never
 * freed. NULL with SystemError when the build did not carry it. */
const char *cukit_device_file(const char *name);
/* Every device file the build carried: a new dict path -> text, or NULL. */
PyObject *cukit_device_files(void);

#endif /* CUKIT_COMMON_H */
