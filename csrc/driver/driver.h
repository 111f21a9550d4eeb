/* driver.h - the driver layer: the dlopen'ed entry-point table, its loader, and CUresult -> exception */
#ifndef CUKIT_DRIVER_H
#define CUKIT_DRIVER_H

#include "common/common.h"
#include "driver/cuda_abi.h"
#include "driver/entry_points.h"

_Static_assert(sizeof(CUdeviceptr) == sizeof(unsigned long long),
               "cukit_array_ref.ptr holds a CUdeviceptr");

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

/* ------------------------------------------------------------------ entries.c (no Python) */

/* One entry point as the loaders walk them: its exported symbol, where its pointer
 * lives in its table (cukit_api_t, or cuBLAS's and NCCL's own), and whether a library
 * without it is unusable. */
typedef struct {
    const char *symbol;
    size_t offset;
    int required;
} cukit_entry;
/* entry_points.h's three lists as name tables, in their order. */
extern const cukit_entry cukit_driver_entries[], cukit_nvrtc_entries[], cukit_nvjitlink_entries[];
extern const size_t cukit_driver_nentries, cukit_nvrtc_nentries, cukit_nvjitlink_nentries;
/* dlsym each of the n entries of `list` from `lib` into the table at `api` (a
 * cukit_api_t, or the table `list`'s offsets were taken from; a missing optional
 * one becomes NULL); with `major` > 0 the versioned symbol __<symbol>_<major>_0 is
 * preferred where lib has it. NULL when all required ones were found, else the
 * first missing required symbol (static storage; the table then partly written).
 * Touches no Python object: the worker program uses it for its own table. */
const char *cukit_entries_fill(void *api, void *lib, const cukit_entry *list, size_t n,
                               unsigned int major);

/* ------------------------------------------------------------------ loader.c */

/* Load libcuda and call cuInit once. 0 on success; -1 with NoDeviceError set
 * (the message names the library and where it was looked for). */
int cukit_driver_load(cukit_state *st);
/* The file the CUDA driver (libcuda) was loaded from, links resolved; NULL under the
 * emulator or before the driver is loaded. Static storage. */
const char *cukit_driver_realpath(void);
/* 1 when the driver is loaded and initialised, else 0; never raises. */
int cukit_driver_ready(void);
/* The emulator layer registers its table filler here at init (a hook: the loader
 * sits below the emulator). cukit_driver_load calls it when the backend is the
 * emulator (CUKIT_BACKEND / cukit.set_backend), or under "auto" without a GPU. */
void cukit_driver_set_emulator(int (*fill)(cukit_api_t *));
/* "gpu" or "emulator" once cukit_driver_load succeeded, else NULL. Static storage. */
const char *cukit_backend_name(void);
/* Adds cukit.set_backend() and cukit.backend(). 0 / -1. */
int cukit_loader_setup(PyObject *module, cukit_state *st);
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

/* ------------------------------------------------------------------ library search (loader.c) */

/* The places cukit_library_search looks, each library in its own order (its `places`). */
enum {
    CUKIT_LIB_END = 0,     /* ends a library's list of places */
    CUKIT_LIB_LOADED,      /* a soname this process has loaded already (torch's, CuPy's) */
    CUKIT_LIB_FIRST,       /* the folder the caller passes (the one beside NVRTC), if any */
    CUKIT_LIB_PACKAGES,    /* the lib folders of Python packages (NVIDIA's pip wheels) */
    CUKIT_LIB_LOADER_PATH, /* the bare sonames, as the dynamic loader finds them */
    CUKIT_LIB_TOOLKIT,     /* CUDA_HOME and CUDA_PATH (lib64, else lib), /usr/local/cuda/lib64 */
};

/* A library found by searching: its sonames, the variable that names its file, the
 * packages whose folders hold it, and where to look in which order. */
typedef struct {
    const char *names[5]; /* sonames, newest first; NULL-terminated */
    const char *env;      /* e.g. CUKIT_NVRTC: the full path of the library's file */
    int env_only;         /* 1: when env is set, that file or none (never another silently) */
    struct {
        const char *package;    /* an importable package, e.g. "nvidia"; NULL: none */
        const char *subdirs[4]; /* NULL-terminated, relative to each folder of its __path__ */
    } packages[2];
    unsigned char places[6]; /* CUKIT_LIB_*, in order, up to CUKIT_LIB_END */
} cukit_library;

/* dlopen `lib` (RTLD_NOW | RTLD_LOCAL): the file its variable names, then its places
 * in order; `first` is the folder CUKIT_LIB_FIRST tries (NULL or "": skipped). The
 * handle, with the path it came from in `found` ("soname (already loaded)" for one
 * the process had); or NULL with every place tried, comma-separated, in `tried`
 * (which must start empty). Never raises: Python errors of the package look-up are
 * cleared. The loaders of cuBLAS and NCCL use it too. */
void *cukit_library_search(const cukit_library *lib, const char *first, char *found,
                           size_t foundlen, char *tried, size_t triedlen);

/* ------------------------------------------------------------------ results.c */

/* Turn a CUresult into 0 (success) or -1 with the mapped CudaError subclass set;
 * `call` names the driver function for the message and the .call attribute. */
int cukit_check_cu(cukit_state *st, CUresult res, const char *call);
/* Same for an nvrtcResult. */
int cukit_check_nvrtc(cukit_state *st, nvrtcResult res, const char *call);
/* Raise NotSupportedError for an optional entry point the driver lacks. Returns -1. */
int cukit_missing_entry(cukit_state *st, const char *call);
/* 1 when `res` leaves the context unusable (a kernel fault), else 0. */
int cukit_cu_is_sticky(CUresult res);

/* After the driver is first initialised: make a forked child's CUDA calls fail with
 * cukit_fork_error's message. Idempotent. */
void cukit_fork_guard(void);
/* 1 in a child forked from a process that had initialised CUDA, else 0. */
int cukit_forked(void);
/* Raise NotSupportedError saying CUDA state cannot cross fork() and to use the
 * spawn start method; `call` (may be NULL) names what was tried. Returns -1. */
int cukit_fork_error(cukit_state *st, const char *call);

/* Calls through the table (docs/architecture.md, "Errors", gives the rule). CU_CALL
 * is an expression worth 0 or -1, the default; CU_CALL_NOGIL, for one blocking call,
 * releases the GIL around it and jumps to `error` on failure. Its arguments are
 * evaluated without the GIL: pass locals, never fields of Python objects. A result
 * that must be looked at first is kept and given to cukit_check_cu. */
#define CU_CALL(st, fn, args) \
    (cukit_api.fn ? cukit_check_cu((st), cukit_api.fn args, #fn) : cukit_missing_entry((st), #fn))
#define CU_CALL_NOGIL(st, fn, args)                                   \
    do {                                                              \
        CUresult cu_res_;                                             \
        Py_BEGIN_ALLOW_THREADS cu_res_ = cukit_api.fn args;           \
        Py_END_ALLOW_THREADS if (cukit_check_cu((st), cu_res_, #fn) < 0) goto error; \
    } while (0)
#define NVRTC_CALL(st, fn, args) cukit_check_nvrtc((st), cukit_api.fn args, #fn)

#endif /* CUKIT_DRIVER_H */
