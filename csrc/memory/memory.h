/* memory.h - the memory layer: device, pinned, managed and registered memory, transfers, foreign pointers */
#ifndef CUKIT_MEMORY_H
#define CUKIT_MEMORY_H

#include "runtime/runtime.h"

/* Tuning of the pageable transfer pipeline (cukit._transfer_config). */
typedef struct {
    size_t threshold; /* copies below this many bytes go straight to the driver */
    size_t chunk;     /* bytes per staging buffer */
    int slots;        /* staging buffers per thread */
    int threads;      /* threads copying host memory, the caller included */
} cukit_xfer_config;

/* memory/'s part of the module state (st->memory; see cukit_state). */
typedef struct cukit_memory_state {
    /* strong refs: the types */
    PyTypeObject *BufferType, *HostMemoryType, *RegistrationType, *CudaArrayType;
    PyTypeObject *TextureType, *SurfaceType;
    /* strong refs, filled when a torch tensor is first passed (torch already imported
     * by the program) */
    PyObject *torch_tensor;
    PyObject *torch_dtypes; /* dict torch dtype -> typecode */
    struct cukit_devmem *devmem; /* owned (PyMem): ndevmem entries by ordinal, NULL until
                                    first use; freed by cukit_mem_teardown */
    int ndevmem;
    cukit_xfer_config xfer;         /* the pipeline's tuning; defaults set at module exec */
    Py_ssize_t host_live;           /* HostMemory objects alive (pinned and managed) */
    Py_ssize_t host_live_bytes;     /* ...and their bytes */
    /* strong refs: interned names looked up on foreign arrays per launch */
    PyObject *str_cai;          /* "__cuda_array_interface__" */
    PyObject *str_data, *str_typestr, *str_strides, *str_shape, *str_dtype, *str_data_ptr;
    PyObject *str_get_device, *str_torch, *str_cupy, *str_num, *str_c_contiguous;
    PyObject *str_dlpack, *str_dlpack_device;
    PyObject *dlpack_kw, *dlpack_kw_old, *dlpack_version; /* strong refs, made at the first
                                                             __dlpack__ call (foreign.c) */
    /* strong ref: the type whose objects the launch path last read through
     * __cuda_array_interface__ (NULL: none yet). Every check before that one is by
     * type, so another object of this type goes straight to its interface. */
    PyTypeObject *cai_type;
    /* strong ref, filled when a foreign argument is first passed after the program
     * imported CuPy: cupy.ndarray, whose objects are read by their attributes */
    PyTypeObject *cupy_ndarray;
    int cupy_unreadable;    /* 1: this CuPy lacks an attribute read: use its interface */
    signed char np_typecodes[32]; /* cukit_typecode + 1 by numpy type number; 0: not yet */
} cukit_memory_state;

/* ------------------------------------------------------------------ buffer.c */

typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref: the context that owns the memory */
    CUdeviceptr ptr;       /* owned: 0 once freed */
    size_t size;
    int binned;            /* 1: allocated at its size bin's (memory/pool.c), so it may be
                              cached when freed; 0: at its exact size, cache off */
} cukit_Buffer;

int cukit_buffer_setup(PyObject *module, cukit_state *st);
/* nbytes of device memory on dev, ready for every stream: often a block an array let go
 * of, reused without a driver call (the cache's rule is in pool.c). New ref, or NULL
 * (OutOfMemoryError, ...). */
cukit_Buffer *cukit_buffer_create(cukit_Device *dev, size_t nbytes);
/* The same as cukit_buffer_create (the name of a time when only kernel outputs reused
 * freed blocks). New ref, or NULL. */
cukit_Buffer *cukit_buffer_create_for_legacy_write(cukit_Device *dev, size_t nbytes);
/* Free now (or cache the block for reuse, pool.c); idempotent. 0 / -1. */
int cukit_buffer_release(cukit_Buffer *buf);
/* Raise ValueError about use after free. Returns -1. */
int cukit_freed_error(void);

/* ------------------------------------------------------------------ pool.c */

/* memory_info(), trim_pool(), pool_cache_limit(). 0 / -1. */
int cukit_pool_setup(PyObject *module, cukit_state *st);
/* Wait for the frees still queued on dev, then give its pool's unused memory back,
 * keeping `keep` bytes. 0 / -1. */
int cukit_pool_trim(cukit_Device *dev, size_t keep);
/* Free the per-device memory state, after cukit_transfer_teardown. Called once
 * when the module is freed. Never raises. */
void cukit_mem_teardown(cukit_state *st);

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
/* Scratch that a stream keeps between uses, one buffer per kind, for work that leaves
 * it ready for the next use of its kind: the reductions' fold counters, which the
 * kernel's last block resets (CUKIT_KEPT_COUNTERS), or a scan's tile words, which carry
 * the epoch of the call that wrote them, so a later call (another epoch) reads them as
 * unwritten (CUKIT_KEPT_SCAN). Zeroed on `stream` when made; it grows (the stream
 * synchronized, the old one freed, the new one zeroed) to the next power of two of
 * nbytes, up to CUKIT_KEPT_MAX. Work on `stream` alone uses it, so the stream's own
 * order makes it safe, with no allocation, memset or free per use. Streams are told
 * apart by cuStreamGetId (a handle may come back for a new stream; an id never does).
 * 1 with *ptr set and, when epoch is not NULL, *epoch the next epoch (>= 1; the buffer
 * is zeroed again before the epochs would wrap); 0 where there is none to give (nbytes
 * too big, the stream being captured, no cuStreamGetId, every slot taken, or the device
 * full): the caller takes cukit_scratch_alloc's; -1 with an exception. */
enum { CUKIT_KEPT_FOLD, CUKIT_KEPT_SCAN, CUKIT_KEPT_KINDS };
#define CUKIT_KEPT_MAX ((size_t)4 << 20)
int cukit_stream_kept(cukit_Device *dev, CUstream stream, int kind, size_t nbytes, CUdeviceptr *ptr,
                      unsigned *epoch);

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
/* Stop every device's staging threads and free their buffers; waits for a copy in
 * progress. Called once when the module is freed. Never raises. */
void cukit_transfer_teardown(cukit_state *st);
/* The pipeline's defaults and cukit._transfer_config, _pointer_kind. 0 / -1. */
int cukit_transfer_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ hostmem.c, registration.c */

/* pinned_*, managed_*, prefetch, advise and the HostMemory type. 0 / -1. */
int cukit_hostmem_setup(PyObject *module, cukit_state *st);
/* register() and the Registration type. 0 / -1. */
int cukit_registration_setup(PyObject *module, cukit_state *st);
/* 1 and *out set when `obj` is a numpy array whose memory cukit allocated as
 * managed (or mapped pinned) memory, 0 when it is not, -1 with an exception. */
int cukit_host_array_device_ptr(cukit_state *st, PyObject *obj, CUdeviceptr *out);

/* ------------------------------------------------------------------ cudaarray.c, texture.c */

/* A CUDA array: memory laid out for texture fetches and surface loads/stores. */
typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref: the context that owns the array */
    CUarray handle;        /* owned: destroyed on dealloc, after the work queued before it */
    PyObject *dtype;       /* strong ref: numpy dtype of one channel */
    int typecode;          /* of one channel: int8 to uint32, float16, float32 */
    int format;            /* CUarray_format of typecode */
    int channels;          /* 1, 2 or 4 */
    int ndim;              /* entries of shape: 1 to 3, the layer count included */
    Py_ssize_t shape[3];   /* as given: ([layers,] [depth,] [height,] width) */
    int layered, surface;  /* 1: made with CUDA_ARRAY3D_LAYERED / _SURFACE_LDST */
    size_t width, height, depth; /* the descriptor's (0 for an absent dimension) */
} cukit_CudaArray;

/* A texture or surface object (cukit.Texture, cukit.Surface share the layout). */
typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref: the context the object belongs to */
    unsigned long long handle; /* owned: CUtexObject or CUsurfObject, destroyed on dealloc
                                  after the work queued before it */
    PyObject *source;      /* strong ref: the CudaArray or device array it reads, kept
                              alive as long as the object */
    PyObject *info;        /* strong ref: dict of the settings, shown by attributes */
} cukit_TexObject;

/* The CUarray_format of elements of `typecode` with `channels` (1, 2 or 4), or -1
 * with TypeError (an unsupported dtype) or ValueError (channels) naming `who`. */
int cukit_array_format(int typecode, int channels, const char *who);
/* CudaArray. 0 / -1. */
int cukit_cudaarray_setup(PyObject *module, cukit_state *st);
/* Texture and Surface. 0 / -1. */
int cukit_texture_setup(PyObject *module, cukit_state *st);
/* Wait (GIL released) until the work queued so far on dev's legacy stream and its
 * cukit streams is done, so that an object it may read can be destroyed. 0 / -1. */
int cukit_wait_queued(cukit_Device *dev);
/* Release a driver object in a dealloc: report a failure with PyErr_WriteUnraisable
 * on `self`, unless the context was already lost to a kernel fault. Keeps any
 * exception set before. */
void cukit_report_release(PyObject *self, int rc);

/* ------------------------------------------------------------------ foreign.c: other libraries' arrays */

/* DLPack's ABI (dlpack.h 1.x), what cukit reads and writes of it. */
typedef struct {
    uint32_t major, minor;
} DLPackVersion;
typedef struct {
    int32_t device_type;
    int32_t device_id;
} DLDevice;
typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* elements, not bytes; NULL: C order */
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;
enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 };
/* The version cukit writes into what it exports and the newest it asks for. */
#define DLPACK_MAJOR 1
#define DLPACK_MINOR 0
/* Capsule names of the DLPack protocol. */
#define CUKIT_DLPACK_LEGACY "dltensor"
#define CUKIT_DLPACK_LEGACY_USED "used_dltensor"
#define CUKIT_DLPACK_VERSIONED "dltensor_versioned"
#define CUKIT_DLPACK_VERSIONED_USED "used_dltensor_versioned"
#define DLPACK_FLAG_BITMASK_READ_ONLY (1ULL << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1ULL << 1)

/* What a DLPack-speaking object holds, read without keeping it. */
typedef struct {
    int device_type;       /* DLPack's: 1 CPU, 2 CUDA, 13 CUDA managed, ... */
    int device_id;
    CUdeviceptr ptr;       /* element [0, ..., 0] (data + byte_offset) */
    int typecode;          /* cukit_typecode; CUKIT_TC_OTHER when unknown */
    int c_contiguous;
} cukit_dlpack_info;

/* 1 for DLPack device types that are CUDA device memory (kDLCUDA, kDLCUDAManaged). */
int cukit_dlpack_is_cuda(int device_type);
/* Raise the TypeError for `obj` whose DLPack device `device_type` is not a GPU
 * (host memory points to cukit.to_device). Returns -1. */
int cukit_dlpack_not_device(const char *who, PyObject *obj, int device_type);
/* (device_type, device_id) from a pair such as __dlpack_device__()'s. 0 / -1. */
int cukit_dlpack_parse_device(PyObject *obj, int *type, int *id, const char *who);
/* obj.__dlpack__(stream=stream, max_version=(DLPACK_MAJOR, DLPACK_MINOR)), falling
 * back to the older signature. New ref: the capsule, or NULL. */
PyObject *cukit_dlpack_call(cukit_state *st, PyObject *obj, PyObject *stream);
/* The tensor in a producer's unused capsule, without taking it: *versioned (1 for
 * "dltensor_versioned"), the managed struct, its DLTensor and flags. 0, or -1 with
 * BufferError (a used capsule, or a major version cukit cannot read). */
int cukit_dlpack_capsule_tensor(PyObject *cap, int *versioned, void **managed, DLTensor **t,
                                uint64_t *flags, const char *who);
/* Read what `obj` exports through DLPack, for a kernel argument: 0 when it has no
 * __dlpack_device__, 1 when info describes CUDA memory, 2 when the object lives
 * elsewhere (info->device_type says where; nothing else is filled), -1 with an
 * exception. The capsule is released before returning: the object itself keeps
 * its memory alive. */
int cukit_dlpack_peek(cukit_state *st, PyObject *obj, cukit_dlpack_info *info);

/* A __cuda_array_interface__ dict (versions 0 to 3), read once and checked. */
typedef struct {
    CUdeviceptr ptr;       /* data[0]: element [0, ..., 0] */
    int readonly;          /* data[1] */
    PyObject *typestr;     /* borrowed from the dict: str, e.g. "<f4" */
    int typecode;          /* cukit_typecode of typestr */
    Py_ssize_t itemsize;   /* from typestr */
    int ndim;
    Py_ssize_t shape[CUKIT_MAXDIM];
    Py_ssize_t strides[CUKIT_MAXDIM]; /* bytes; C order filled in when the dict has none */
    int c_contiguous;      /* 1: strides absent or those of C order */
    PyObject *stream;      /* borrowed: the producer's stream entry, or NULL */
} cukit_cai;

/* Read obj.__cuda_array_interface__ into out. 1 when obj has one, 0 when it has
 * none, -1 with TypeError/ValueError naming `who` and what is malformed. `full`
 * 0 reads only data, typestr, shape and strides' contiguity (the launch path). */
int cukit_cai_read(cukit_state *st, PyObject *obj, PyObject *cai, int full, const char *who,
                   cukit_cai *out);

/* A torch tensor's device address, read through its C methods (faster than torch's
 * Python __cuda_array_interface__ property). 1 with *ptr, *ordinal (-1: host
 * memory) and *typecode set when obj is a tensor, 0 when torch was not imported or
 * obj is not a tensor, -1 with an exception. */
int cukit_torch_pointer(cukit_state *st, PyObject *obj, CUdeviceptr *ptr, long *ordinal,
                        int *typecode);

/* A CuPy array's device address, element type and C-contiguity, read from its
 * attributes (data.ptr, dtype, _c_contiguous; CuPy's __cuda_array_interface__ builds a
 * dict of seven entries on every call). 1 with them set when obj is a cupy.ndarray (that
 * exact type); 0 when CuPy was not imported, obj is something else, or this CuPy lacks
 * one of those attributes (the caller reads the interface then); -1 with an exception. */
int cukit_cupy_pointer(cukit_state *st, PyObject *obj, CUdeviceptr *ptr, int *typecode,
                       int *c_contiguous);

#endif /* CUKIT_MEMORY_H */
