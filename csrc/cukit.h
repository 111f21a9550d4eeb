/* cukit.h - module state, every object struct, and the prototypes shared across files */
#ifndef CUKIT_H
#define CUKIT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "cuda_abi.h"
#include "entry_points.h"

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
 * (interned ones, for paths that run per launch). */
static inline int
cukit_optional_attr_obj(PyObject *obj, PyObject *name, PyObject **out)
{
    *out = PyObject_GetAttr(obj, name);
    if (*out)
        return 1;
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();
    return 0;
}

/* The same with the name as a C string. */
static inline int
cukit_optional_attr(PyObject *obj, const char *name, PyObject **out)
{
    *out = PyObject_GetAttrString(obj, name);
    if (*out)
        return 1;
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();
    return 0;
}

#define CUKIT_VERSION "0.1.0"     /* also in pyproject.toml; part of every cache key */
#define CUKIT_MAXDIM 32            /* numpy's own limit is 64; 32 covers every real use */
#define CUKIT_STACK_ARG_BYTES 4096 /* parameter buffers up to this size live on the C stack */
#define CUKIT_STACK_PARAMS 256     /* ...and so do this many parameter pointers */

/* ------------------------------------------------------------------ entry points */

/* The one process-wide global: function pointers filled by loader.c, written once
 * under the GIL and only read afterwards. */
typedef struct {
#define CUKIT_X(ret, name, sym, req, params) ret(*name) params;
    CUKIT_DRIVER_API(CUKIT_X)
    CUKIT_NVRTC_API(CUKIT_X)
    CUKIT_NVJITLINK_API(CUKIT_X)
#undef CUKIT_X
} cukit_api_t;

extern cukit_api_t cukit_api;

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
    CUKIT_EXC_COUNT
};

/* ------------------------------------------------------------------ mem: per-device state */

typedef struct cukit_stage cukit_stage; /* transfer.c: one device's staging pipeline */

/* A cukit.Stream that buffer frees must wait for (see buffer.c). */
typedef struct {
    struct cukit_Stream_s *stream; /* borrowed: removed from the list by the stream's dealloc */
    CUevent event;                 /* owned: recorded on the stream when a free must wait */
} cukit_tracked_stream;

/* What cukit keeps per device for its memory, made at the device's first allocation
 * or big copy and destroyed with the module (cukit_mem_teardown). */
typedef struct {
    int ready;                       /* 1 once pool and free_stream are set up */
    CUcontext ctx;                   /* borrowed: the primary context, retained by Device */
    CUmemoryPool pool;               /* borrowed: the device's default pool; NULL: the
                                        driver has none, so plain cuMemAlloc/cuMemFree */
    CUstream free_stream;            /* owned: frees are queued here, after the work that
                                        may still use the memory */
    CUevent legacy_event;            /* owned: recorded on the legacy stream before a free */
    cukit_tracked_stream *streams;   /* owned (PyMem): the device's live cukit streams */
    int nstreams, capstreams;
    cukit_stage *stage;              /* owned: staging buffers and threads, NULL until the
                                        first big pageable copy */
    int stage_failed;                /* 1: staging could not be set up; copies go direct */
} cukit_devmem;

/* Tuning of the pageable transfer pipeline (cukit._transfer_config). */
typedef struct {
    size_t threshold; /* copies below this many bytes go straight to the driver */
    size_t chunk;     /* bytes per staging buffer */
    int slots;        /* staging buffers per thread */
    int threads;      /* threads copying host memory, the caller included */
} cukit_xfer_config;

/* ------------------------------------------------------------------ module state */

typedef struct cukit_state {
    /* strong refs: the heap types, created by each file's cukit_<type>_setup */
    PyTypeObject *DeviceType;
    PyTypeObject *ProgramType;
    PyTypeObject *ModuleType;
    PyTypeObject *KernelType;
    PyTypeObject *SignatureType;
    PyTypeObject *BufferType;
    PyTypeObject *ArrayType;
    PyTypeObject *StreamType;
    PyTypeObject *EventType;
    PyTypeObject *PreparedType;
    PyTypeObject *GraphType;
    PyTypeObject *KernelNodeType;

    PyObject *exc[CUKIT_EXC_COUNT]; /* strong refs: exception classes, see the enum */

    PyObject *devices;  /* strong ref: tuple of Device by ordinal, built at first use */
    int driver_count;   /* devices the driver reports; -1 until asked */

    /* strong refs, filled at first use by cukit_numpy(): numpy and what we call on it */
    PyObject *numpy;
    PyObject *np_dtype;
    PyObject *np_empty;
    PyObject *np_asarray;
    PyObject *np_ndarray;
    PyObject *np_generic;
    PyObject *np_floating;
    PyObject *np_integer;
    PyObject *np_bool;

    /* strong refs, filled when a torch tensor is first passed (torch already imported) */
    PyObject *torch_tensor;
    PyObject *torch_dtypes; /* dict torch dtype -> typecode */

    /* strong ref: dict device ordinal -> Module holding the strided copy and fill
     * kernels, compiled at the first copy that needs them on that device */
    PyObject *strided_modules;

    /* strong refs: interned keyword names the launch path compares by pointer */
    PyObject *str_grid;
    PyObject *str_block;
    PyObject *str_shared_mem;
    PyObject *str_stream;
    PyObject *str_n;
    /* strong refs: interned names the argument packing looks up on foreign arrays */
    PyObject *str_cai;          /* "__cuda_array_interface__" */
    PyObject *str_data;
    PyObject *str_typestr;
    PyObject *str_strides;
    PyObject *str_shape;
    PyObject *str_dtype;
    PyObject *str_data_ptr;
    PyObject *str_get_device;

    /* strong ref: dict compile key -> (Module, header records, cwd): what
     * cukit.compile already loaded in this process (cache.c, program.c) */
    PyObject *compiled;
    int debug;          /* 1: synchronize after every launch and name a faulting kernel */
    int captures;       /* stream captures in progress (a synchronize would break them) */
    /* mem: pinned/managed host memory, the pool, transfers */
    PyTypeObject *HostMemoryType;   /* strong ref */
    PyTypeObject *RegistrationType; /* strong ref */
    cukit_devmem *devmem;           /* owned (PyMem): ndevmem entries by ordinal, NULL until
                                       first use; freed by cukit_mem_teardown */
    int ndevmem;
    cukit_xfer_config xfer;         /* the pipeline's tuning; defaults set at module exec */
    Py_ssize_t host_live;           /* HostMemory objects alive (pinned and managed) */
    Py_ssize_t host_live_bytes;     /* ...and their bytes */
    /* compute: array math (csrc/compute/), set up by cukit_compute_setup */
    PyTypeObject *UfuncType;        /* strong ref */
    PyTypeObject *ElementwiseType;  /* strong ref */
    PyObject *ufuncs;               /* strong ref: tuple of the ufuncs, by their table index */
    PyObject *math_dtypes;          /* strong ref: tuple of numpy dtypes by typecode, built at
                                       first use */
    PyObject *fuse_proxy;           /* strong ref: the class of cukit.fuse's traced values */
    PyObject *compile_fn;           /* strong ref: cukit.compile, for generated kernels */
    /* Hooks the compute layer registers, so the Array type (a lower layer) reaches its
     * operators and math methods; NULL until registered. */
    PyObject *(*array_math)(struct cukit_state *st, int op, PyObject *a, PyObject *b, int inplace);
    PyObject *(*array_call)(struct cukit_state *st, int which, PyObject *self, PyObject *args,
                            PyObject *kwargs);
} cukit_state;

/* The Array's operators, as passed to the array_math hook (CUKIT_OP_LT + Py_LT ... for
 * comparisons), and its math methods for the array_call hook. */
enum {
    CUKIT_OP_ADD, CUKIT_OP_SUB, CUKIT_OP_MUL, CUKIT_OP_TRUEDIV, CUKIT_OP_FLOORDIV,
    CUKIT_OP_MOD, CUKIT_OP_POW, CUKIT_OP_LSHIFT, CUKIT_OP_RSHIFT, CUKIT_OP_AND,
    CUKIT_OP_OR, CUKIT_OP_XOR, CUKIT_OP_NEG, CUKIT_OP_POS, CUKIT_OP_ABS, CUKIT_OP_INVERT,
    CUKIT_OP_BOOL, CUKIT_OP_LT, /* then LE, EQ, NE, GT, GE in Py_LT.. order */
    CUKIT_OP_COUNT = CUKIT_OP_LT + 6
};
enum { CUKIT_CALL_ASTYPE, CUKIT_CALL_CONJ, CUKIT_CALL_REAL, CUKIT_CALL_IMAG };

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
    CUKIT_TC_PTR,       /* a pointer to pointers: takes 64-bit integer arrays */
    CUKIT_TC_COUNT
} cukit_typecode;

/* ------------------------------------------------------------------ objects */

typedef struct {
    PyObject_HEAD
    cukit_state *st;       /* borrowed: the module outlives every instance of its types */
    int ordinal;
    CUdevice dev;
    CUcontext ctx;         /* retained primary context, held for the life of the process */
    char name[256];
    int cc_major, cc_minor;
    int sm_count;
    size_t total_memory;
    int max_threads_per_block;
    int max_block[3];
    int max_grid[3];
    int max_shared;        /* per block without opt-in */
    int max_shared_optin;  /* per block with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
} cukit_Device;

/* One kernel parameter: its C type as declared and, once verified, its place in
 * the compiled kernel's parameter buffer. */
typedef enum {
    CUKIT_P_INT, CUKIT_P_UINT, CUKIT_P_FLOAT, CUKIT_P_BOOL,
    CUKIT_P_HALF, CUKIT_P_BF16, CUKIT_P_POINTER, CUKIT_P_STRUCT
} cukit_param_kind;

typedef struct {
    cukit_param_kind kind;
    int typecode;   /* scalars: their own; pointers: the element type they accept */
    size_t size;    /* bytes; 0 for a struct whose size only the compiled kernel knows */
    size_t offset;  /* bytes from the start of the parameter buffer */
    size_t align;   /* C alignment, for layouts computed without a compiled kernel */
    char *type;     /* owned (PyMem): the type as shown to users, "const float*" */
    char *name;     /* owned (PyMem): the parameter's name, "" when unnamed */
} cukit_param;

typedef struct {
    PyObject_HEAD
    char *name;            /* owned (PyMem): the kernel's name as written in the source */
    int extern_c;          /* 1: declared extern "C", so its symbol is its name */
    int nparams;
    cukit_param *params;   /* owned (PyMem): nparams entries */
    size_t arg_bytes;      /* size of the whole parameter buffer */
    int verified;          /* 1: sizes and offsets come from the compiled kernel */
} cukit_Signature;

typedef struct {
    PyObject_HEAD
    cukit_state *st;
    PyObject *source;      /* strong ref: str */
    PyObject *name;        /* strong ref: str, the file name NVRTC reports */
    PyObject *options;     /* strong ref: tuple of str, user options, -I and -D folded in */
    PyObject *log;         /* strong ref: str, the log of the last compile ("" before) */
    PyObject *signatures;  /* strong ref: dict kernel name -> Signature, parsed from source */
    PyObject *name_expressions; /* strong ref: tuple of str given by the user */
    PyObject *deps;        /* strong ref: tuple of user-header records of the last compile
                              (see cache.c), () before one */
    PyObject *globals;     /* strong ref: dict __constant__/__device__ variable -> (typecode,
                              shape or None), read from the source */
    int prelude;           /* 1: cukit put lines before the source (fp16/bf16 headers) */
} cukit_Program;

typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref: the context the code is loaded in */
    CUmodule handle;       /* owned: unloaded on dealloc */
    PyObject *signatures;  /* strong ref: dict kernel name -> Signature (parsed) */
    PyObject *symbols;     /* strong ref: dict kernel name -> str symbol (lowered C++ names) */
    PyObject *kernels;     /* strong ref: dict kernel name -> Kernel, so module.k is cheap */
    PyObject *arch;        /* strong ref: str, "sm_90" */
    PyObject *globals;     /* strong ref: dict variable -> (typecode, shape or None) from
                              the source, for get_global; NULL when there is no source */
} cukit_Module;

typedef struct cukit_Kernel_s {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    cukit_state *st;
    cukit_Module *module;  /* strong ref: keeps the code loaded while the kernel lives */
    cukit_Device *device;  /* strong ref */
    CUfunction func;       /* borrowed from module */
    cukit_Signature *sig;  /* strong ref: verified against the compiled kernel */
    int max_threads;       /* the kernel's own threads-per-block limit (registers) */
    int static_shared;     /* bytes of __shared__ declared in the kernel */
    int dyn_shared_set;    /* current MAX_DYNAMIC_SHARED_SIZE_BYTES attribute */
    int best_block;        /* occupancy-suggested block size, 0 until asked */
} cukit_Kernel;

typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref: the context that owns the memory */
    CUdeviceptr ptr;       /* owned: 0 once freed */
    size_t size;
} cukit_Buffer;

/* Array.flags bits */
enum {
    CUKIT_ARRAY_C_CONTIG = 1,  /* elements in C order with no gaps */
    CUKIT_ARRAY_F_CONTIG = 2,  /* elements in Fortran order with no gaps */
    CUKIT_ARRAY_READONLY = 4,  /* imported from a producer that marked the data read-only */
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

typedef struct cukit_Stream_s {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref */
    CUstream handle;       /* owned unless this is the default stream (NULL) */
    PyObject *capture;     /* strong ref: list of what a capture in progress must keep
                              alive (kernels, arguments), NULL when not capturing */
} cukit_Stream;

/* A launch's configuration, checked against the kernel's and device's limits. */
typedef struct {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int shared;
    CUstream stream;
    cukit_Stream *stream_obj; /* borrowed: the Stream passed, or NULL */
    int cooperative;
    unsigned int cluster[3];  /* all 0: no cluster */
} cukit_launch_cfg;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    struct cukit_Kernel_s *kernel; /* strong ref */
    cukit_launch_cfg cfg;
    PyObject *stream;       /* strong ref: keeps cfg.stream alive (None for default) */
    unsigned char *buf;     /* owned (PyMem): the packed parameters of the last call */
    void **ptrs;            /* inside buf's allocation: one pointer per parameter */
    PyObject **last;        /* owned (PyMem): strong refs to the last call's arguments */
} cukit_Prepared;

typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref */
    CUevent handle;        /* owned */
    int timing;            /* 1: created without CU_EVENT_DISABLE_TIMING */
    int recorded;          /* 1: record() has been called */
} cukit_Event;

/* ------------------------------------------------------------------ loader.c */

/* Load libcuda and call cuInit once. 0 on success; -1 with NoDeviceError set
 * (the message names the library and where it was looked for). */
int cukit_driver_load(cukit_state *st);
/* 1 when the driver is loaded and initialised, else 0; never raises. */
int cukit_driver_ready(void);
/* Load NVRTC. 0 on success; -1 with NotSupportedError naming every place searched. */
int cukit_nvrtc_load(cukit_state *st);
/* The toolkit's include folders found beside NVRTC (i = 0: include, 1: its CCCL
 * folder), or NULL. Static storage. */
const char *cukit_toolkit_include(int i);
/* Name of the NVRTC library that was loaded, or NULL. Borrowed, static storage. */
const char *cukit_nvrtc_path(void);
/* The file that NVRTC was loaded from, links resolved, or NULL. Static storage. */
const char *cukit_nvrtc_realpath(void);
/* Load nvJitLink (first beside NVRTC, so the two match). 0 on success; -1 with
 * NotSupportedError naming every place searched. */
int cukit_nvjitlink_load(cukit_state *st);
/* Name of the nvJitLink library that was loaded, or NULL. Borrowed, static storage. */
const char *cukit_nvjitlink_path(void);

/* ------------------------------------------------------------------ errors.c */

/* Turn a CUresult into 0 (success) or -1 with the mapped CudaError subclass set;
 * `call` names the driver function for the message and the .call attribute. */
int cukit_check_cu(cukit_state *st, CUresult res, const char *call);
/* Same for an nvrtcResult. */
int cukit_check_nvrtc(cukit_state *st, nvrtcResult res, const char *call);
/* Raise NotSupportedError for an optional entry point the driver lacks. Returns -1. */
int cukit_missing_entry(cukit_state *st, const char *call);
/* 1 when `res` leaves the context unusable (a kernel fault), else 0. */
int cukit_cu_is_sticky(CUresult res);
/* An instance of exc[kind] with .code/.name/.call set (code < 0 and NULL names
 * give None). New ref, or NULL with an exception. */
PyObject *cukit_make_error(cukit_state *st, int kind, long code, const char *name,
                           const char *call, PyObject *message);
/* Raise exception class exc[kind] with a message and .code/.name/.call set. Returns -1. */
int cukit_raise(cukit_state *st, int kind, long code, const char *name, const char *call,
                PyObject *message);
/* Build the exception classes into st->exc and add them to module. 0 / -1. */
int cukit_errors_setup(PyObject *module, cukit_state *st);

/* Calls through the table. CU_CALL is an expression worth 0 or -1; CU_CALL_NOGIL
 * releases the GIL around the call and jumps to `error` on failure. Its arguments
 * are evaluated without the GIL: pass locals, never fields of Python objects. */
#define CU_CALL(st, fn, args) \
    (cukit_api.fn ? cukit_check_cu((st), cukit_api.fn args, #fn) : cukit_missing_entry((st), #fn))
#define CU_CALL_NOGIL(st, fn, args)                                   \
    do {                                                              \
        CUresult cu_res_;                                             \
        Py_BEGIN_ALLOW_THREADS cu_res_ = cukit_api.fn args;           \
        Py_END_ALLOW_THREADS if (cukit_check_cu((st), cu_res_, #fn) < 0) goto error; \
    } while (0)
#define NVRTC_CALL(st, fn, args) cukit_check_nvrtc((st), cukit_api.fn args, #fn)

/* ------------------------------------------------------------------ module.c */

/* State of the module that defined `type`. Borrowed. */
cukit_state *cukit_state_of_type(PyTypeObject *type);
/* Import numpy into st once. 0 / -1 with ImportError explaining it is required. */
int cukit_numpy(cukit_state *st);

/* ------------------------------------------------------------------ device.c */

int cukit_device_setup(PyObject *module, cukit_state *st);
/* Number of devices; 0 without a driver. -1 with an exception on a driver error. */
int cukit_device_count(cukit_state *st);
/* Device `ordinal`, created at first use. Borrowed ref, or NULL with an exception. */
cukit_Device *cukit_device_get(cukit_state *st, int ordinal);
/* The device whose primary context is current on this thread, else device 0 made
 * current. Borrowed ref, or NULL with NoDeviceError. */
cukit_Device *cukit_device_current(cukit_state *st);
/* The device for a `device=` argument: None -> current, a Device, or an ordinal.
 * Borrowed ref, or NULL with an exception. */
cukit_Device *cukit_device_arg(cukit_state *st, PyObject *device);
/* Make dev's primary context current on this thread if it is not. 0 / -1. */
int cukit_device_activate(cukit_Device *dev);
/* "sm_90" for dev into buf (at least 16 bytes). */
void cukit_device_arch(const cukit_Device *dev, char *buf, size_t n);

/* ------------------------------------------------------------------ signature.c */

int cukit_signature_setup(PyObject *module, cukit_state *st);
/* Parse every __global__ function in `source`; `defines` maps macro names to values
 * (may be NULL). Template kernels are read once per name expression (tuple of str,
 * may be NULL) that instantiates them, under the expression as written. When
 * `globals` (a dict) is given, __constant__/__device__ variables go into it as
 * name -> (typecode, shape tuple or None). New ref: dict name -> Signature; NULL
 * with an exception. */
PyObject *cukit_signatures_parse(cukit_state *st, const char *source, PyObject *defines,
                                 PyObject *name_expressions, PyObject *globals);
/* Parse one declaration "name(type a, type b)" or "(type a, ...)". New ref or NULL. */
cukit_Signature *cukit_signature_from_decl(cukit_state *st, const char *decl, const char *name);
/* A copy of `sig` laid out by the compiled kernel's own offsets and sizes
 * (n entries). New ref, or NULL with TypeError when the two disagree. */
cukit_Signature *cukit_signature_verify(cukit_state *st, cukit_Signature *sig, int n,
                                        const size_t *offsets, const size_t *sizes);
/* Same layout computed by the C ABI rules, for packing without a compiled kernel. */
cukit_Signature *cukit_signature_layout(cukit_state *st, cukit_Signature *sig);
/* "saxpy(float a, const float* x)". New ref or NULL. */
PyObject *cukit_signature_str(cukit_Signature *sig);

/* ------------------------------------------------------------------ args.c */

/* Convert v to parameter p's C type at dst (p->size bytes). `index` (0-based) and
 * `sig` are for messages; `dev` (may be NULL) is checked against device arrays.
 * 0 / -1 with TypeError, OverflowError or ValueError naming the parameter. */
int cukit_pack_arg(cukit_state *st, const cukit_Signature *sig, int index, PyObject *v,
                   unsigned char *dst, const cukit_Device *dev);
/* Raise TypeError for a wrong argument count, showing the signature. Returns -1. */
int cukit_arg_count_error(cukit_Signature *sig, Py_ssize_t given);
/* typecode of numpy dtype / of a __array_interface__ typestr such as "<f4". */
int cukit_typecode_of_dtype(PyObject *dtype);
int cukit_typecode_of_typestr(const char *typestr);
/* "float32" style name of a typecode, for messages. Static storage. */
const char *cukit_typecode_name(int tc);

/* ------------------------------------------------------------------ program.c, cumodule.c, kernel.c */

int cukit_program_setup(PyObject *module, cukit_state *st);
/* What compiling a Program produces. */
enum { CUKIT_OUT_PTX = 0, CUKIT_OUT_CUBIN = 1, CUKIT_OUT_LTOIR = 2 };
/* Compile prog for arch ("sm_90") into `kind` (CUKIT_OUT_*) with the option `extra`
 * (e.g. "-rdc=true"; may be NULL) added after prog's own; prog is unchanged but
 * for its log. New refs in *image (bytes) and *symbols (dict kernel name -> symbol).
 * 0 / -1 with CompileError or another exception. */
int cukit_program_compile(cukit_Program *prog, const char *arch, int kind, const char *extra,
                          PyObject **image, PyObject **symbols);
int cukit_module_setup(PyObject *module, cukit_state *st);
/* Load `image` (cubin/fatbin/PTX) on dev. signatures/symbols may be NULL (empty).
 * New ref, or NULL with an exception. */
cukit_Module *cukit_module_create(cukit_state *st, cukit_Device *dev, const void *image,
                                  PyObject *signatures, PyObject *symbols, const char *arch);
int cukit_kernel_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ image.c, link.c */

/* What `n` bytes of device code are, by their magic: NVJITLINK_INPUT_CUBIN, _PTX,
 * _FATBIN, _LTOIR, _OBJECT (a host ELF object), _LIBRARY (an ar archive), or
 * NVJITLINK_INPUT_NONE when none of these. Never raises. */
int cukit_image_kind(const unsigned char *data, size_t n);
/* "cubin", "PTX", ... for a kind from cukit_image_kind. Static storage. */
const char *cukit_image_kind_name(int kind);
/* The file at `path` (str or os.PathLike): all of it, or its first `limit` bytes
 * when limit >= 0. New ref: bytes; NULL with OSError (FileNotFoundError, ...)
 * naming the file, or TypeError. */
PyObject *cukit_read_file(PyObject *path, Py_ssize_t limit);
/* Module.load(path_or_bytes, device=None), a class method of Module. New ref or NULL. */
PyObject *cukit_module_load(PyObject *cls, PyObject *args, PyObject *kwargs);
/* Adds cukit.link() and cukit.nvjitlink_version(). 0 / -1. */
int cukit_link_setup(PyObject *module, cukit_state *st);
/* Kernel `name` of mod with signature sig (verified here). New ref or NULL. */
cukit_Kernel *cukit_kernel_create(cukit_Module *mod, CUfunction func, cukit_Signature *sig);
/* Fill cfg from launch keywords (values[i] named by kwnames[i]) and check it.
 * `allow_stream` 0 refuses stream= (graph nodes). 0 / -1 with an exception. */
int cukit_launch_config(cukit_Kernel *k, PyObject *const *values, PyObject *kwnames,
                        int allow_stream, cukit_launch_cfg *cfg);
/* Pack args (k->sig->nparams of them) into buf, writing one pointer per parameter
 * into ptrs. 0 / -1 with the conversion error. */
int cukit_kernel_pack(cukit_Kernel *k, PyObject *const *args, unsigned char *buf, void **ptrs);
/* Launch k with packed parameters: with the GIL released when another Python thread
 * exists, else held (the call only queues work, and releasing costs). 0 / -1. */
int cukit_kernel_launch(cukit_Kernel *k, const cukit_launch_cfg *cfg, void **ptrs);
/* During a capture on cfg's stream, record k and its arguments (k->sig->nparams of
 * them) so the graph keeps them alive. 0 (also when not capturing) / -1. */
int cukit_kernel_keep_for_capture(cukit_Kernel *k, const cukit_launch_cfg *cfg,
                                  PyObject *const *args);
/* In debug mode (cukit.set_debug), wait for the launch and on failure raise the
 * driver's error with the kernel, grid, block and arguments named; else 0. */
int cukit_kernel_debug_check(cukit_Kernel *k, const cukit_launch_cfg *cfg, PyObject *const *args);
/* 1 when this interpreter runs a Python thread besides the calling one. */
int cukit_other_threads(void);
/* Remember, for a stream being captured into a graph, what the launch uses. 0 / -1. */
int cukit_capture_keep(cukit_Stream *s, PyObject *what);
/* Stream.capture(): a Graph that captures the stream as a context manager. New ref. */
PyObject *cukit_stream_capture(cukit_Stream *s, PyObject *ignored);
/* PreparedLaunch's vectorcall, installed by Kernel.prepare(). */
PyObject *cukit_prepared_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames);
int cukit_prepared_setup(PyObject *module, cukit_state *st);
int cukit_graph_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ cache.c */

/* What names one compile on disk. */
typedef struct {
    int usable;     /* 0: the compile cannot be cached (an #include cukit cannot follow) */
    char hex[65];   /* SHA-256 of everything the key covers: the entry's file name */
    PyObject *deps; /* strong ref: tuple of user-header records, checked by
                       cukit_cache_deps_unchanged; NULL until made */
} cukit_cache_key;

int cukit_cache_setup(PyObject *module, cukit_state *st);
/* 0 when CUKIT_CACHE turns the cache off ("0", "off", "false", "no"), else 1. */
int cukit_cache_enabled(void);
/* The cache folder into out. 0, or -1 (no exception) when none can be named. */
int cukit_cache_dir(char *out, size_t n);
/* Key for compiling prog for arch with NVRTC options `opts` (tuple of str, what the
 * user asked for plus cukit's own, without the toolkit's -I): covers cukit's version,
 * arch, output kind, options, name expressions, file name, source and every user
 * header the source can reach. 0 / -1 with an exception; clear with ..._key_clear. */
int cukit_cache_key_make(cukit_Program *prog, const char *arch, int cubin, PyObject *opts,
                         cukit_cache_key *key);
void cukit_cache_key_clear(cukit_cache_key *key);
/* 1 when every header record still describes the file system, 0 when one changed,
 * -1 with an exception. */
int cukit_cache_deps_unchanged(PyObject *deps);
/* Look key up on disk. 1: hit, new refs in *image (bytes), *symbols (dict kernel ->
 * lowered name) and *log; 0: miss (a damaged or untrusted entry warns and misses);
 * -1 with an exception (a warning turned error). */
int cukit_cache_load(const cukit_cache_key *key, int cubin, PyObject **image,
                     PyObject **symbols, PyObject **log);
/* Store a compile under key, atomically. 0 (also when it could not, with a
 * RuntimeWarning) / -1 when the warning became an error. */
int cukit_cache_store(const cukit_cache_key *key, int cubin, PyObject *image,
                      PyObject *symbols, PyObject *log);

/* ------------------------------------------------------------------ memory and sync */

int cukit_buffer_setup(PyObject *module, cukit_state *st);
/* nbytes of device memory on dev. New ref, or NULL (OutOfMemoryError, ...). */
cukit_Buffer *cukit_buffer_create(cukit_Device *dev, size_t nbytes);
/* Free now; idempotent. 0 / -1. */
int cukit_buffer_release(cukit_Buffer *buf);
/* Raise ValueError about use after free. Returns -1. */
int cukit_freed_error(void);

int cukit_array_setup(PyObject *module, cukit_state *st);
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
/* A view of a: same memory, `offset` bytes from its start, another dtype allowed
 * (typecode/itemsize describe it). New ref or NULL. */
cukit_Array *cukit_array_view(cukit_Array *a, PyObject *dtype, int typecode, Py_ssize_t itemsize,
                              Py_ssize_t offset, int ndim, const Py_ssize_t *shape,
                              const Py_ssize_t *strides);
/* A new C-contiguous array with a's data, copied on the legacy default stream.
 * New ref, or NULL with an exception. */
cukit_Array *cukit_array_copy(cukit_Array *a);
/* numpy.dtype(obj), refusing dtypes that hold Python objects. New ref or NULL. */
PyObject *cukit_resolve_dtype(cukit_state *st, PyObject *obj);
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

/* ------------------------------------------------------------------ dlpack.c */

/* What a DLPack-speaking object holds, read without keeping it. */
typedef struct {
    int device_type;       /* DLPack's: 1 CPU, 2 CUDA, 13 CUDA managed, ... */
    int device_id;
    CUdeviceptr ptr;       /* element [0, ..., 0] (data + byte_offset) */
    int typecode;          /* cukit_typecode; CUKIT_TC_OTHER when unknown */
    int c_contiguous;
} cukit_dlpack_info;

int cukit_dlpack_setup(PyObject *module, cukit_state *st);
/* compute/: array math (ufuncs, ElementwiseKernel, fuse); registers the Array hooks. */
int cukit_compute_setup(PyObject *module, cukit_state *st);
/* Array.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None). */
PyObject *cukit_array_dlpack(PyObject *self, PyObject *args, PyObject *kwargs);
/* Array.__dlpack_device__() -> (2, ordinal). */
PyObject *cukit_array_dlpack_device(PyObject *self, PyObject *ignored);
/* Read what `obj` exports through DLPack, for a kernel argument: 0 when it has no
 * __dlpack_device__, 1 when info describes CUDA memory, 2 when the object lives
 * elsewhere (info->device_type says where; nothing else is filled), -1 with an
 * exception. The capsule is released before returning: the object itself keeps
 * its memory alive. */
int cukit_dlpack_peek(cukit_state *st, PyObject *obj, cukit_dlpack_info *info);

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
/* Device scratch memory ordered on a stream: cuMemAllocAsync where the driver has it,
 * else a plain allocation that cukit_scratch_release frees after a synchronize. */
typedef struct {
    CUdeviceptr ptr;
    int pooled;            /* 1: from cuMemAllocAsync, freed with cuMemFreeAsync */
} cukit_scratch;
/* nbytes of scratch on dev (made current), usable by work queued on `stream` after
 * this call. 0 / -1 (OutOfMemoryError, ...). */
int cukit_scratch_alloc(cukit_Device *dev, size_t nbytes, CUstream stream, cukit_scratch *out);
/* Give scratch back once the work queued on `stream` so far is done. Idempotent. 0 / -1. */
int cukit_scratch_release(cukit_Device *dev, cukit_scratch *s, CUstream stream);

/* ------------------------------------------------------------------ transfer.c */

/* Copy nbytes from host memory `src` to device memory `dst` on `stream`
 * (NULL: the default stream). sync=1: return once the copy is complete (the GIL is
 * released meanwhile). sync=0: enqueue and return; correct also when `src` is
 * pageable (the caller keeps `src` alive and unchanged until the stream reaches
 * the copy). 0 / -1 with an exception. */
int cukit_copy_htod(cukit_state *st, CUdeviceptr dst, const void *src, size_t nbytes,
                    CUstream stream, int sync);
/* Same, device to host. */
int cukit_copy_dtoh(cukit_state *st, void *dst, CUdeviceptr src, size_t nbytes,
                    CUstream stream, int sync);
int cukit_stream_setup(PyObject *module, cukit_state *st);
/* The CUstream for a `stream=` argument: None -> default, Stream -> its handle.
 * 0 / -1 with TypeError, or ValueError when it belongs to another device than dev. */
int cukit_stream_handle(cukit_state *st, PyObject *obj, const cukit_Device *dev, CUstream *out);
int cukit_event_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ mem: pool, host memory, transfers */

/* Host memory that cukit allocated: the .base of a pinned or managed numpy array,
 * which frees it when the last array using it goes. */
enum { CUKIT_HOST_PINNED, CUKIT_HOST_MANAGED };
typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref: the context the memory was allocated in */
    void *ptr;             /* owned: cuMemFreeHost (pinned) or cuMemFree (managed) */
    CUdeviceptr dptr;      /* the same memory's device address (mapped or managed) */
    size_t size;           /* bytes asked for (the allocation has at least 1) */
    int kind;              /* CUKIT_HOST_* */
} cukit_HostMemory;

/* The device's memory state, set up at first use (pool, free stream); dev's context
 * must be current. Borrowed pointer into st->devmem, or NULL with an exception. */
cukit_devmem *cukit_devmem_get(cukit_Device *dev);
/* Remember stream s so that later frees on its device wait for its work (buffer.c's
 * ordering rule). 0 / -1 with an exception. */
int cukit_mem_track_stream(struct cukit_Stream_s *s);
/* Forget s (its dealloc); frees already queued, and any still to come, wait for
 * the work s has queued so far. Never raises. */
void cukit_mem_untrack_stream(struct cukit_Stream_s *s);
/* Free everything cukit_devmem_get and the transfer pipeline made: staging buffers,
 * threads, free streams. Called once when the module is freed. Never raises. */
void cukit_mem_teardown(cukit_state *st);

int cukit_hostmem_setup(PyObject *module, cukit_state *st);
/* 1 and *out set when `obj` is a numpy array whose memory cukit allocated as
 * managed (or mapped pinned) memory, 0 when it is not, -1 with an exception. */
int cukit_host_array_device_ptr(cukit_state *st, PyObject *obj, CUdeviceptr *out);

/* transfer.c's module functions (the internal cukit._copy_htod, _copy_dtoh and
 * _transfer_config). 0 / -1. */
int cukit_transfer_setup(PyObject *module, cukit_state *st);
/* Stop the staging threads of one device and free its buffers; waits for a copy in
 * progress. Never raises. */
void cukit_stage_release(cukit_stage *stage);

/* ------------------------------------------------------------------ transfer.c */

/* Copy nbytes from host memory `src` to device memory `dst` on `stream`
 * (NULL: the default stream). sync=1: return once the copy is complete (the GIL is
 * released meanwhile). sync=0: enqueue and return; correct also when `src` is
 * pageable (the caller keeps `src` alive and unchanged until the stream reaches
 * the copy). 0 / -1 with an exception. */
int cukit_copy_htod(cukit_state *st, CUdeviceptr dst, const void *src, size_t nbytes,
                    CUstream stream, int sync);
/* Same, device to host. */
int cukit_copy_dtoh(cukit_state *st, void *dst, CUdeviceptr src, size_t nbytes,
                    CUstream stream, int sync);

#endif /* CUKIT_H */
