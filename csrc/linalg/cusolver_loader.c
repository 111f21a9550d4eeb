/* cusolver_loader.c - finds and dlopens libcusolver, fills cukit_cusolver_api, statuses to exceptions, a handle per device, the path switch */
#include "linalg/cusolver.h"

#include <stdio.h>
#include <string.h>

cukit_cusolver_api_t cukit_cusolver_api;

enum { REQUIRED = 1, OPTIONAL = 0 };

static const cukit_entry entries[] = {
#define CUKIT_X(ret, name, sym, req, params) {sym, offsetof(cukit_cusolver_api_t, name), req},
    CUKIT_CUSOLVER_API(CUKIT_X)
#undef CUKIT_X
};

/* What the first attempt found; later calls repeat it. Process-wide, like the table. */
static struct {
    int state;        /* 0 not tried, 1 ready, -1 failed */
    int version;      /* major * 1000 + minor * 100 + patch */
    char path[1024];
    char why[3072];
} loaded;

/* Searched in order: CUKIT_CUSOLVER (alone when set), a libcusolver already in the
 * process (torch's, CuPy's), NVIDIA's wheels (nvidia-cusolver for CUDA 13 installs
 * cu13/lib, nvidia-cusolver-cu12 cusolver/lib), the toolkit's folder beside NVRTC, the
 * loader path. libcusolver needs libcublas, libcublasLt and libnvJitLink: the wheels
 * and the toolkit put them where its RUNPATH finds them. */
static const cukit_library cusolver_library = {
    {"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so.13", "libcusolver.so", NULL},
    "CUKIT_CUSOLVER",
    1,
    {{"nvidia", {"cu13/lib", "cusolver/lib", "cu12/lib", NULL}}},
    {CUKIT_LIB_LOADED, CUKIT_LIB_PACKAGES, CUKIT_LIB_FIRST, CUKIT_LIB_LOADER_PATH},
};

static void
load_once(void)
{
    char tried[2048] = "", beside[1024] = "";
    const char *nvrtc = cukit_nvrtc_realpath();
    if (nvrtc) {
        snprintf(beside, sizeof beside, "%s", nvrtc);
        char *slash = strrchr(beside, '/');
        *(slash ? slash : beside) = '\0';
    }
    void *lib = cukit_library_search(&cusolver_library, beside, loaded.path, sizeof loaded.path,
                                     tried, sizeof tried);
    loaded.state = -1;
    if (lib == NULL) {
        snprintf(loaded.why, sizeof loaded.why,
                 "cuSOLVER (libcusolver) was not found; looked in: %s. Install it with "
                 "`pip install nvidia-cusolver` (or `pip install '.[solver]'` from cukit's "
                 "checkout), or point "
                 "CUKIT_CUSOLVER at the library",
                 tried);
        return;
    }
    const char *missing = cukit_entries_fill(&cukit_cusolver_api, lib, entries,
                                             sizeof entries / sizeof *entries, 0);
    if (missing) {
        snprintf(loaded.why, sizeof loaded.why,
                 "%s has no %s: it is too old for cukit (cuSOLVER 11 or newer is needed); "
                 "`pip install -U nvidia-cusolver`",
                 loaded.path, missing);
        memset(&cukit_cusolver_api, 0, sizeof cukit_cusolver_api);
        return;
    }
    int major = 0, minor = 0, patch = 0;
    cukit_cusolver_api.cusolverGetProperty(CUKIT_MAJOR_VERSION, &major);
    cukit_cusolver_api.cusolverGetProperty(CUKIT_MINOR_VERSION, &minor);
    cukit_cusolver_api.cusolverGetProperty(CUKIT_PATCH_LEVEL, &patch);
    loaded.version = major * 1000 + minor * 100 + patch;
    loaded.state = 1;
}

int
cukit_cusolver_load(cukit_state *st)
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

const char *
cukit_cusolver_path(int *version)
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
    {CUSOLVER_STATUS_NOT_INITIALIZED, "CUSOLVER_STATUS_NOT_INITIALIZED", CUKIT_EXC_CUDA},
    {CUSOLVER_STATUS_ALLOC_FAILED, "CUSOLVER_STATUS_ALLOC_FAILED", CUKIT_EXC_OOM},
    {CUSOLVER_STATUS_INVALID_VALUE, "CUSOLVER_STATUS_INVALID_VALUE", CUKIT_EXC_INVALID_VALUE},
    {CUSOLVER_STATUS_ARCH_MISMATCH, "CUSOLVER_STATUS_ARCH_MISMATCH", CUKIT_EXC_NOT_SUPPORTED},
    {CUSOLVER_STATUS_MAPPING_ERROR, "CUSOLVER_STATUS_MAPPING_ERROR", CUKIT_EXC_CUDA},
    {CUSOLVER_STATUS_EXECUTION_FAILED, "CUSOLVER_STATUS_EXECUTION_FAILED", CUKIT_EXC_LAUNCH},
    {CUSOLVER_STATUS_INTERNAL_ERROR, "CUSOLVER_STATUS_INTERNAL_ERROR", CUKIT_EXC_CUDA},
    {CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED, "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
     CUKIT_EXC_NOT_SUPPORTED},
    {CUSOLVER_STATUS_NOT_SUPPORTED, "CUSOLVER_STATUS_NOT_SUPPORTED", CUKIT_EXC_NOT_SUPPORTED},
    {CUSOLVER_STATUS_ZERO_PIVOT, "CUSOLVER_STATUS_ZERO_PIVOT", CUKIT_EXC_CUDA},
    {CUSOLVER_STATUS_INVALID_LICENSE, "CUSOLVER_STATUS_INVALID_LICENSE", CUKIT_EXC_CUDA},
    {CUSOLVER_STATUS_INVALID_WORKSPACE, "CUSOLVER_STATUS_INVALID_WORKSPACE",
     CUKIT_EXC_INVALID_VALUE},
};

int
cukit_cusolver_check(cukit_state *st, cusolverStatus_t res, const char *call)
{
    if (res == CUSOLVER_STATUS_SUCCESS)
        return 0;
    const char *name = "CUSOLVER_STATUS_UNKNOWN";
    int kind = CUKIT_EXC_CUDA;
    for (size_t i = 0; i < sizeof statuses / sizeof *statuses; i++)
        if (statuses[i].status == res) {
            name = statuses[i].name;
            kind = statuses[i].kind;
        }
    PyObject *msg = PyUnicode_FromFormat("%s failed: %s (%d)", call, name, res);
    if (msg)
        cukit_raise(st, kind, res, name, call, msg);
    Py_XDECREF(msg);
    return -1;
}

/* ------------------------------------------------------------------ handles */

#define MAX_DEVICES 64

/* Process-wide as the library table is; written under the GIL. */
static struct {
    cusolverDnHandle_t handle; /* owned for the process; NULL until first use */
    CUstream bound;            /* the stream the handle was last given */
} handles[MAX_DEVICES];
static cusolver_params_t syevj_params, gesvdj_params; /* defaults, made once */

cusolverDnHandle_t
cukit_cusolver_handle(cukit_state *st, cukit_Device *dev, CUstream h, cusolver_params_t *syevj,
                      cusolver_params_t *gesvdj)
{
    if (cukit_cusolver_load(st) < 0)
        return NULL;
    if (dev->ordinal < 0 || dev->ordinal >= MAX_DEVICES) {
        PyErr_Format(PyExc_ValueError, "cuSOLVER handles: device %d is past cukit's limit of "
                     "%d", dev->ordinal, MAX_DEVICES);
        return NULL;
    }
    if (cukit_device_activate(dev) < 0)
        return NULL;
    int d = dev->ordinal;
    if (handles[d].handle == NULL) {
        cusolverDnHandle_t made = NULL;
        if (cukit_cusolver_check(st, cukit_cusolver_api.cusolverDnCreate(&made),
                                 "cusolverDnCreate") < 0)
            return NULL;
        handles[d].handle = made;
        handles[d].bound = (CUstream)(uintptr_t)-1;
    }
    /* The Jacobi routines' parameters: the defaults, with the values sorted (ascending
     * eigenvalues, descending singular values, as numpy gives them). */
    if (syevj_params == NULL &&
        (cukit_cusolver_check(st, cukit_cusolver_api.cusolverDnCreateSyevjInfo(&syevj_params),
                              "cusolverDnCreateSyevjInfo") < 0 ||
         cukit_cusolver_check(st, cukit_cusolver_api.cusolverDnXsyevjSetSortEig(syevj_params, 1),
                              "cusolverDnXsyevjSetSortEig") < 0 ||
         cukit_cusolver_check(st, cukit_cusolver_api.cusolverDnCreateGesvdjInfo(&gesvdj_params),
                              "cusolverDnCreateGesvdjInfo") < 0 ||
         cukit_cusolver_check(st,
                              cukit_cusolver_api.cusolverDnXgesvdjSetSortEig(gesvdj_params, 1),
                              "cusolverDnXgesvdjSetSortEig") < 0)) {
        syevj_params = gesvdj_params = NULL;
        return NULL;
    }
    if (handles[d].bound != h) {
        if (cukit_cusolver_check(st, cukit_cusolver_api.cusolverDnSetStream(handles[d].handle, h),
                                 "cusolverDnSetStream") < 0)
            return NULL;
        handles[d].bound = h;
    }
    if (syevj)
        *syevj = syevj_params;
    if (gesvdj)
        *gesvdj = gesvdj_params;
    return handles[d].handle;
}

int
cukit_cusolver_xparams(cukit_state *st, cusolverDnParams_t *params)
{
    static cusolverDnParams_t made; /* process-wide as the handles are; never destroyed */
    *params = NULL;
    if (cukit_cusolver_api.cusolverDnCreateParams == NULL)
        return 0;
    if (made == NULL &&
        cukit_cusolver_check(st, cukit_cusolver_api.cusolverDnCreateParams(&made),
                             "cusolverDnCreateParams") < 0) {
        made = NULL;
        return -1;
    }
    *params = made;
    return 0;
}

/* ------------------------------------------------------------------ the path */

int
cukit_cusolver_choose(cukit_state *st)
{
    cukit_linalg_state *L = st->linalg;
    if (L->solver_backend == 2)
        return 0;
    const char *backend = cukit_backend_name();
    int emulated = backend && strcmp(backend, "emulator") == 0;
    if (L->solver_backend == 1) {
        if (emulated) {
            PyErr_SetString(st->exc[CUKIT_EXC_NOT_SUPPORTED],
                            "linalg: the backend is set to cuSOLVER, which needs a GPU; cukit "
                            "runs on its CPU emulator here (cukit.linalg.set_solver_backend("
                            "'auto') uses cukit's own kernels)");
            return -1;
        }
        return cukit_cusolver_load(st) < 0 ? -1 : 1;
    }
    if (emulated)
        return 0;
    if (loaded.state == 0)
        load_once();
    if (loaded.state == 1)
        return 1;
    if (!L->solver_warned) {
        L->solver_warned = 1;
        int w = PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                                 "cukit.linalg's factorizations run on cukit's own kernels, "
                                 "slower than cuSOLVER: %s", loaded.why);
        if (w < 0)
            return -1;
    }
    return 0;
}
