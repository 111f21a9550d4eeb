/* cufft_loader.c - finds and dlopens libcufft, fills cukit_cufft_api, results to exceptions */
#include "fft/cufft.h"

#include <stdio.h>
#include <string.h>

cukit_cufft_api_t cukit_cufft_api;

enum { REQUIRED = 1, OPTIONAL = 0 };

static const cukit_entry entries[] = {
#define CUKIT_X(ret, name, sym, req, params) {sym, offsetof(cukit_cufft_api_t, name), req},
    CUKIT_CUFFT_API(CUKIT_X)
#undef CUKIT_X
};

/* What the first attempt found; later calls repeat it. Process-wide, like the table. */
static struct {
    int state;        /* 0 not tried, 1 ready, -1 failed */
    int version;      /* cufftGetVersion's code */
    char path[1024];
    char why[3072];
} loaded;

/* Searched in order: CUKIT_CUFFT (alone when set), a libcufft already in the process
 * (torch's, CuPy's), NVIDIA's wheels (nvidia-cufft for CUDA 13 installs cu13/lib,
 * nvidia-cufft-cu12 cufft/lib), the toolkit's folder beside NVRTC, the loader path. */
static const cukit_library cufft_library = {
    {"libcufft.so.12", "libcufft.so.11", "libcufft.so.13", "libcufft.so", NULL},
    "CUKIT_CUFFT",
    1,
    {{"nvidia", {"cu13/lib", "cufft/lib", "cu12/lib", NULL}}},
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
    void *lib = cukit_library_search(&cufft_library, beside, loaded.path, sizeof loaded.path,
                                     tried, sizeof tried);
    loaded.state = -1;
    if (lib == NULL) {
        snprintf(loaded.why, sizeof loaded.why,
                 "cuFFT (libcufft) was not found; looked in: %s. Install it with "
                 "`pip install nvidia-cufft` (or `pip install '.[fft]'` from cukit's checkout), "
                 "or point CUKIT_CUFFT at "
                 "the library",
                 tried);
        return;
    }
    const char *missing = cukit_entries_fill(&cukit_cufft_api, lib, entries,
                                             sizeof entries / sizeof *entries, 0);
    if (missing) {
        snprintf(loaded.why, sizeof loaded.why,
                 "%s has no %s: it is too old for cukit (cuFFT 10 or newer is needed); "
                 "`pip install -U nvidia-cufft`",
                 loaded.path, missing);
        memset(&cukit_cufft_api, 0, sizeof cukit_cufft_api);
        return;
    }
    int v = 0;
    if (cukit_cufft_api.cufftGetVersion(&v) == CUFFT_SUCCESS)
        loaded.version = v;
    loaded.state = 1;
}

int
cukit_cufft_load(cukit_state *st)
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
cukit_cufft_available(cukit_state *st)
{
    if (loaded.state == 0)
        load_once();
    return loaded.state == 1;
}

const char *
cukit_cufft_path(int *version)
{
    *version = loaded.version;
    return loaded.state == 1 ? loaded.path : NULL;
}

/* ------------------------------------------------------------------ results */

static const struct {
    int result;
    const char *name;
    int kind; /* CUKIT_EXC_* */
} results[] = {
    {CUFFT_INVALID_PLAN, "CUFFT_INVALID_PLAN", CUKIT_EXC_CUDA},
    {CUFFT_ALLOC_FAILED, "CUFFT_ALLOC_FAILED", CUKIT_EXC_OOM},
    {CUFFT_INVALID_TYPE, "CUFFT_INVALID_TYPE", CUKIT_EXC_INVALID_VALUE},
    {CUFFT_INVALID_VALUE, "CUFFT_INVALID_VALUE", CUKIT_EXC_INVALID_VALUE},
    {CUFFT_INTERNAL_ERROR, "CUFFT_INTERNAL_ERROR", CUKIT_EXC_CUDA},
    {CUFFT_EXEC_FAILED, "CUFFT_EXEC_FAILED", CUKIT_EXC_LAUNCH},
    {CUFFT_SETUP_FAILED, "CUFFT_SETUP_FAILED", CUKIT_EXC_CUDA},
    {CUFFT_INVALID_SIZE, "CUFFT_INVALID_SIZE", CUKIT_EXC_INVALID_VALUE},
    {CUFFT_UNALIGNED_DATA, "CUFFT_UNALIGNED_DATA", CUKIT_EXC_INVALID_VALUE},
    {CUFFT_INVALID_DEVICE, "CUFFT_INVALID_DEVICE", CUKIT_EXC_CUDA},
    {CUFFT_NO_WORKSPACE, "CUFFT_NO_WORKSPACE", CUKIT_EXC_CUDA},
    {CUFFT_NOT_IMPLEMENTED, "CUFFT_NOT_IMPLEMENTED", CUKIT_EXC_NOT_SUPPORTED},
    {CUFFT_NOT_SUPPORTED, "CUFFT_NOT_SUPPORTED", CUKIT_EXC_NOT_SUPPORTED},
};

int
cukit_cufft_check(cukit_state *st, cufftResult res, const char *call)
{
    if (res == CUFFT_SUCCESS)
        return 0;
    const char *name = "CUFFT_UNKNOWN";
    int kind = CUKIT_EXC_CUDA;
    for (size_t i = 0; i < sizeof results / sizeof *results; i++)
        if (results[i].result == res) {
            name = results[i].name;
            kind = results[i].kind;
        }
    PyObject *msg = PyUnicode_FromFormat("%s failed: %s (%d)", call, name, res);
    if (msg)
        cukit_raise(st, kind, res, name, call, msg);
    Py_XDECREF(msg);
    return -1;
}
