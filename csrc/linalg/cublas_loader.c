/* cublas_loader.c - finds and dlopens libcublas, fills cukit_cublas_api, statuses to exceptions, a handle per device and a workspace per stream */
#include "linalg/cublas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cukit_cublas_api_t cukit_cublas_api;

enum { REQUIRED = 1, OPTIONAL = 0 };

static const cukit_entry entries[] = {
#define CUKIT_X(ret, name, sym, req, params) {sym, offsetof(cukit_cublas_api_t, name), req},
    CUKIT_CUBLAS_API(CUKIT_X)
#undef CUKIT_X
};

/* What the first attempt found; later calls repeat it. Process-wide, like the table. */
static struct {
    int state;        /* 0 not tried, 1 ready, -1 failed */
    int version;      /* cublasGetVersion's code, once a handle was made */
    char path[1024];
    char why[3072];
} loaded;

/* Searched in order: CUKIT_CUBLAS (alone when set), a libcublas already in the process
 * (torch's, CuPy's), NVIDIA's wheels (nvidia-cublas for CUDA 13 installs cu13/lib,
 * nvidia-cublas-cu12 cublas/lib), the toolkit's folder beside NVRTC, the loader path. */
static const cukit_library cublas_library = {
    {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so", NULL},
    "CUKIT_CUBLAS",
    1,
    {{"nvidia", {"cu13/lib", "cublas/lib", "cu12/lib", NULL}}},
    {CUKIT_LIB_LOADED, CUKIT_LIB_PACKAGES, CUKIT_LIB_FIRST, CUKIT_LIB_LOADER_PATH},
};

static void
load_once(void)
{
    char tried[2048] = "", beside[1024] = "";
    /* The toolkit's library folder: the one NVRTC was loaded from, when it was. */
    const char *nvrtc = cukit_nvrtc_realpath();
    if (nvrtc) {
        snprintf(beside, sizeof beside, "%s", nvrtc);
        char *slash = strrchr(beside, '/');
        *(slash ? slash : beside) = '\0';
    }
    void *lib = cukit_library_search(&cublas_library, beside, loaded.path, sizeof loaded.path,
                                     tried, sizeof tried);
    loaded.state = -1;
    if (lib == NULL) {
        snprintf(loaded.why, sizeof loaded.why,
                 "cuBLAS (libcublas) was not found; looked in: %s. Install it with "
                 "`pip install nvidia-cublas` (or `pip install '.[cublas]'` in cukit's "
                 "checkout), or point CUKIT_CUBLAS at the library",
                 tried);
        return;
    }
    const char *missing = cukit_entries_fill(&cukit_cublas_api, lib, entries,
                                             sizeof entries / sizeof *entries, 0);
    if (missing) {
        snprintf(loaded.why, sizeof loaded.why,
                 "%s has no %s: it is too old for cukit (cuBLAS 11 or newer is needed); "
                 "`pip install -U nvidia-cublas`",
                 loaded.path, missing);
        memset(&cukit_cublas_api, 0, sizeof cukit_cublas_api);
        return;
    }
    loaded.state = 1;
}

int
cukit_cublas_load(cukit_state *st)
{
    if (loaded.state == 0)
        load_once();
    if (loaded.state == 1)
        return 0;
    PyObject *msg = PyUnicode_FromString(loaded.why);
    if (msg)
        cukit_raise(st, CUKIT_EXC_NOT_SUPPORTED, -1, NULL, "dlopen", msg);
    Py_XDECREF(msg);
    return -1;
}

int
cukit_cublas_available(cukit_state *st)
{
    if (loaded.state == 0)
        load_once();
    return loaded.state == 1;
}

const char *
cukit_cublas_path(int *version)
{
    *version = loaded.version;
    return loaded.state == 1 ? loaded.path : NULL;
}

/* ------------------------------------------------------------------ statuses */

static const struct {
    int status;
    const char *name;
    int kind; /* CUKIT_EXC_* */
} statuses[] = {
    {CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED", CUKIT_EXC_CUDA},
    {CUBLAS_STATUS_ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED", CUKIT_EXC_OOM},
    {CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE", CUKIT_EXC_INVALID_VALUE},
    {CUBLAS_STATUS_ARCH_MISMATCH, "CUBLAS_STATUS_ARCH_MISMATCH", CUKIT_EXC_NOT_SUPPORTED},
    {CUBLAS_STATUS_MAPPING_ERROR, "CUBLAS_STATUS_MAPPING_ERROR", CUKIT_EXC_CUDA},
    {CUBLAS_STATUS_EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED", CUKIT_EXC_LAUNCH},
    {CUBLAS_STATUS_INTERNAL_ERROR, "CUBLAS_STATUS_INTERNAL_ERROR", CUKIT_EXC_CUDA},
    {CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED", CUKIT_EXC_NOT_SUPPORTED},
    {CUBLAS_STATUS_LICENSE_ERROR, "CUBLAS_STATUS_LICENSE_ERROR", CUKIT_EXC_CUDA},
};

int
cukit_cublas_check(cukit_state *st, cublasStatus_t res, const char *call)
{
    if (res == CUBLAS_STATUS_SUCCESS)
        return 0;
    const char *name = "CUBLAS_STATUS_UNKNOWN";
    int kind = CUKIT_EXC_CUDA;
    for (size_t i = 0; i < sizeof statuses / sizeof *statuses; i++)
        if (statuses[i].status == res) {
            name = statuses[i].name;
            kind = statuses[i].kind;
        }
    const char *text =
        cukit_cublas_api.cublasGetStatusString ? cukit_cublas_api.cublasGetStatusString(res) : NULL;
    PyObject *msg = PyUnicode_FromFormat("%s failed: %s (%s, %d)", call, text ? text : name,
                                         name, res);
    if (msg)
        cukit_raise(st, kind, res, name, call, msg);
    Py_XDECREF(msg);
    return -1;
}

/* ------------------------------------------------------------------ handles and workspaces */

/* cuBLAS's own advice for Hopper; smaller GPUs use less of it. */
#define WORKSPACE_BYTES ((size_t)32 << 20)
#define MAX_DEVICES 64
#define MAX_STREAMS 8 /* workspaces kept per device; further streams use cuBLAS's default */

/* Process-wide as the library table is: handles belong to the loaded library, which
 * is never unloaded. Written under the GIL. */
static struct {
    cublasHandle_t handle; /* owned for the process; NULL until first use */
    CUstream bound;        /* the stream the handle was last given */
    int nws;
    struct {
        CUstream stream;
        cukit_Buffer *ws;  /* strong ref for the process: the stream's workspace */
    } ws[MAX_STREAMS];
} handles[MAX_DEVICES];

/* The workspace for (device, stream), made at first use; NULL (no exception) when the
 * table is full. -1 with an exception on failure. */
static int
workspace(cukit_state *st, cukit_Device *dev, CUstream h, cukit_Buffer **out)
{
    int d = dev->ordinal;
    *out = NULL;
    for (int i = 0; i < handles[d].nws; i++)
        if (handles[d].ws[i].stream == h) {
            *out = handles[d].ws[i].ws;
            return 0;
        }
    /* Full, or a capture in progress (the wait below would break it): cuBLAS's own
     * workspace serves. */
    if (handles[d].nws == MAX_STREAMS || st->runtime->captures > 0)
        return 0;
    cukit_Buffer *buf = cukit_buffer_create(dev, WORKSPACE_BYTES);
    if (buf == NULL)
        return -1;
    /* The pool orders the allocation on the legacy stream; wait for it once so that
     * any stream may use the workspace. */
    CU_CALL_NOGIL(st, cuStreamSynchronize, (NULL));
    handles[d].ws[handles[d].nws].stream = h;
    handles[d].ws[handles[d].nws++].ws = buf;
    *out = buf;
    return 0;
error:
    Py_DECREF(buf);
    return -1;
}

cublasHandle_t
cukit_cublas_handle(cukit_state *st, cukit_Device *dev, CUstream h)
{
    if (cukit_cublas_load(st) < 0)
        return NULL;
    if (dev->ordinal < 0 || dev->ordinal >= MAX_DEVICES) {
        PyErr_Format(PyExc_ValueError, "cuBLAS handles: device %d is past cukit's limit of %d",
                     dev->ordinal, MAX_DEVICES);
        return NULL;
    }
    if (cukit_device_activate(dev) < 0)
        return NULL;
    int d = dev->ordinal;
    if (handles[d].handle == NULL) {
        cublasHandle_t made = NULL;
        if (CUBLAS_CALL(st, cublasCreate, (&made)) < 0)
            return NULL;
        int v = 0;
        if (CUBLAS_CALL(st, cublasGetVersion, (made, &v)) == 0)
            loaded.version = v;
        PyErr_Clear();
        handles[d].handle = made;
        handles[d].bound = (CUstream)(uintptr_t)-1;  /* nothing bound yet */
    }
    if (handles[d].bound != h) {
        cukit_Buffer *ws;
        if (workspace(st, dev, h, &ws) < 0 ||
            CUBLAS_CALL(st, cublasSetStream, (handles[d].handle, h)) < 0)
            return NULL;
        /* cublasSetStream resets the workspace to cuBLAS's own pool: set ours again. */
        if (ws && CUBLAS_CALL(st, cublasSetWorkspace,
                              (handles[d].handle, (void *)(uintptr_t)ws->ptr, ws->size)) < 0)
            return NULL;
        handles[d].bound = h;
    }
    return handles[d].handle;
}
