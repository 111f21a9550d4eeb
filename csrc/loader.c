/* loader.c - finds and dlopens libcuda and NVRTC, fills cukit_api, says what is missing */
#include "cukit.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cukit_api_t cukit_api;

enum { REQUIRED = 1, OPTIONAL = 0 };

typedef struct {
    const char *symbol;
    size_t offset; /* of the pointer in cukit_api */
    int required;
} entry;

static const entry driver_entries[] = {
#define CUKIT_X(ret, name, sym, req, params) {sym, offsetof(cukit_api_t, name), req},
    CUKIT_DRIVER_API(CUKIT_X)
#undef CUKIT_X
};

static const entry nvrtc_entries[] = {
#define CUKIT_X(ret, name, sym, req, params) {sym, offsetof(cukit_api_t, name), req},
    CUKIT_NVRTC_API(CUKIT_X)
#undef CUKIT_X
};

/* What happened at the first attempt; later calls repeat the verdict. Part of the
 * once-written loader table, so process-wide like cukit_api itself. */
static struct {
    int driver;            /* 0 not tried, 1 ready, -1 failed */
    int nvrtc;
    char driver_why[1024];
    char nvrtc_why[2048];
    char nvrtc_path[1024];
    char nvrtc_real[PATH_MAX];      /* the file NVRTC was loaded from, links resolved */
    char include_dirs[2][PATH_MAX]; /* the toolkit's headers beside NVRTC, "" if none */
} loaded;

/* dlsym every entry of `list` from `lib` into cukit_api. On a missing required
 * symbol, write its name to why and return -1. */
static int
fill(void *lib, const entry *list, size_t n, char *why, size_t whylen)
{
    for (size_t i = 0; i < n; i++) {
        void *fn = dlsym(lib, list[i].symbol);
        if (fn == NULL && list[i].required) {
            snprintf(why, whylen, "the library has no %s; it is too old for cukit",
                     list[i].symbol);
            return -1;
        }
        memcpy((char *)&cukit_api + list[i].offset, &fn, sizeof fn);
    }
    return 0;
}

int
cukit_driver_ready(void)
{
    return loaded.driver == 1;
}

int
cukit_driver_load(cukit_state *st)
{
    if (loaded.driver == 0) {
        static const char *names[] = {"libcuda.so.1", "libcuda.so"};
        void *lib = NULL;
        const char *err = "";
        for (size_t i = 0; i < sizeof names / sizeof *names && lib == NULL; i++) {
            lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
            if (lib == NULL)
                err = dlerror();
        }
        loaded.driver = -1;
        if (lib == NULL) {
            snprintf(loaded.driver_why, sizeof loaded.driver_why,
                     "no CUDA driver: libcuda.so.1 was not found on the loader path (%s). "
                     "Install the NVIDIA driver, or run on a machine with an NVIDIA GPU",
                     err ? err : "");
        }
        else if (fill(lib, driver_entries, sizeof driver_entries / sizeof *driver_entries,
                      loaded.driver_why, sizeof loaded.driver_why) < 0) {
            dlclose(lib);
        }
        else {
            CUresult res = cukit_api.cuInit(0);
            if (res == CUDA_SUCCESS) {
                loaded.driver = 1;
            }
            else {
                const char *name = "?";
                cukit_api.cuGetErrorName(res, &name);
                snprintf(loaded.driver_why, sizeof loaded.driver_why,
                         "the CUDA driver (libcuda.so.1) loaded but cuInit failed with %s (%d): "
                         "no usable GPU is visible to this process (check nvidia-smi and "
                         "CUDA_VISIBLE_DEVICES)",
                         name ? name : "?", res);
            }
        }
    }
    if (loaded.driver == 1)
        return 0;
    PyObject *msg = PyUnicode_FromString(loaded.driver_why);
    if (msg == NULL)
        return -1;
    cukit_raise(st, CUKIT_EXC_NO_DEVICE, CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "cuInit",
                msg);
    Py_DECREF(msg);
    return -1;
}

/* Try dir/name for each NVRTC soname; on success record the path. */
static void *
try_dir(const char *dir, char *tried, size_t triedlen)
{
    static const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[1024];
        if (dir[0])
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        else
            snprintf(path, sizeof path, "%s", names[i]);
        void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (lib) {
            snprintf(loaded.nvrtc_path, sizeof loaded.nvrtc_path, "%s", path);
            return lib;
        }
    }
    size_t used = strlen(tried);
    snprintf(tried + used, triedlen - used, "%s%s", used ? ", " : "",
             dir[0] ? dir : "the loader path");
    return NULL;
}

/* The lib folders of NVIDIA's pip wheels (nvidia-cuda-nvrtc), found through the
 * `nvidia` namespace package if it is installed. New ref: list of str, never NULL
 * unless memory runs out. */
static PyObject *
wheel_dirs(void)
{
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    PyObject *pkg = PyImport_ImportModule("nvidia");
    if (pkg == NULL) {
        PyErr_Clear();
        return out;
    }
    PyObject *paths = PyObject_GetAttrString(pkg, "__path__");
    Py_DECREF(pkg);
    PyObject *it = paths ? PyObject_GetIter(paths) : NULL;
    Py_XDECREF(paths);
    if (it == NULL) {
        PyErr_Clear();
        return out;
    }
    static const char *subdirs[] = {"cu13/lib", "cuda_nvrtc/lib", "cu12/lib"};
    PyObject *p;
    while ((p = PyIter_Next(it)) != NULL) {
        for (size_t i = 0; i < sizeof subdirs / sizeof *subdirs; i++) {
            PyObject *d = PyUnicode_FromFormat("%S/%s", p, subdirs[i]);
            if (d == NULL || PyList_Append(out, d) < 0)
                PyErr_Clear();
            Py_XDECREF(d);
        }
        Py_DECREF(p);
    }
    PyErr_Clear();
    Py_DECREF(it);
    return out;
}

/* The toolkit's include folder sits at ../include from the library's folder, in
 * the CUDA toolkit and in NVIDIA's wheels alike; CCCL (cuda/std, cub) is in
 * include/cccl since CUDA 13. Found from the NVRTC actually loaded, so the
 * headers match the compiler. */
static void
find_headers(void)
{
    Dl_info info;
    char real[PATH_MAX];
    if (!dladdr((void *)cukit_api.nvrtcVersion, &info) || info.dli_fname == NULL ||
        realpath(info.dli_fname, real) == NULL)
        return;
    snprintf(loaded.nvrtc_real, sizeof loaded.nvrtc_real, "%s", real);
    char *slash = strrchr(real, '/');
    if (slash == NULL)
        return;
    *slash = '\0';
    static const char *subdirs[] = {"/../include", "/../include/cccl"};
    for (int i = 0; i < 2; i++) {
        char dir[PATH_MAX + 32], probe[PATH_MAX + 64], canon[PATH_MAX];
        snprintf(dir, sizeof dir, "%s%s", real, subdirs[i]);
        snprintf(probe, sizeof probe, "%s/%s", dir, i == 0 ? "cuda_fp16.h" : "cuda/std/version");
        FILE *f = fopen(probe, "r");
        if (f == NULL)
            continue;
        fclose(f);
        if (realpath(dir, canon))
            snprintf(loaded.include_dirs[i], sizeof loaded.include_dirs[i], "%s", canon);
    }
}

const char *
cukit_toolkit_include(int i)
{
    return (loaded.nvrtc == 1 && i >= 0 && i < 2 && loaded.include_dirs[i][0])
               ? loaded.include_dirs[i] : NULL;
}

int
cukit_nvrtc_load(cukit_state *st)
{
    if (loaded.nvrtc == 0) {
        char tried[1536] = "";
        void *lib = NULL;
        const char *explicit_path = getenv("CUKIT_NVRTC");
        if (explicit_path && explicit_path[0]) {
            lib = dlopen(explicit_path, RTLD_NOW | RTLD_LOCAL);
            if (lib)
                snprintf(loaded.nvrtc_path, sizeof loaded.nvrtc_path, "%s", explicit_path);
            else
                snprintf(tried, sizeof tried, "CUKIT_NVRTC=%s", explicit_path);
        }
        if (lib == NULL)
            lib = try_dir("", tried, sizeof tried);
        static const char *envs[] = {"CUDA_HOME", "CUDA_PATH"};
        for (size_t i = 0; i < 2 && lib == NULL; i++) {
            const char *root = getenv(envs[i]);
            if (root && root[0]) {
                char dir[1024];
                snprintf(dir, sizeof dir, "%s/lib64", root);
                if ((lib = try_dir(dir, tried, sizeof tried)) == NULL) {
                    snprintf(dir, sizeof dir, "%s/lib", root);
                    lib = try_dir(dir, tried, sizeof tried);
                }
            }
        }
        if (lib == NULL)
            lib = try_dir("/usr/local/cuda/lib64", tried, sizeof tried);
        if (lib == NULL) {
            PyObject *dirs = wheel_dirs();
            if (dirs == NULL)
                return -1;
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(dirs) && lib == NULL; i++) {
                const char *d = PyUnicode_AsUTF8(PyList_GET_ITEM(dirs, i));
                if (d)
                    lib = try_dir(d, tried, sizeof tried);
                else
                    PyErr_Clear();
            }
            Py_DECREF(dirs);
        }
        loaded.nvrtc = -1;
        if (lib == NULL) {
            snprintf(loaded.nvrtc_why, sizeof loaded.nvrtc_why,
                     "NVRTC (libnvrtc.so) was not found; looked in: %s, and the "
                     "nvidia-cuda-nvrtc wheel. Install the CUDA toolkit and set CUDA_HOME, "
                     "or `pip install nvidia-cuda-nvrtc`, or point CUKIT_NVRTC at the library",
                     tried);
        }
        else if (fill(lib, nvrtc_entries, sizeof nvrtc_entries / sizeof *nvrtc_entries,
                      loaded.nvrtc_why, sizeof loaded.nvrtc_why) == 0) {
            loaded.nvrtc = 1;
            find_headers();
        }
        else {
            dlclose(lib);
        }
    }
    if (loaded.nvrtc == 1)
        return 0;
    PyObject *msg = PyUnicode_FromString(loaded.nvrtc_why);
    if (msg == NULL)
        return -1;
    cukit_raise(st, CUKIT_EXC_NOT_SUPPORTED, -1, NULL, "dlopen", msg);
    Py_DECREF(msg);
    return -1;
}

const char *
cukit_nvrtc_path(void)
{
    return loaded.nvrtc == 1 ? loaded.nvrtc_path : NULL;
}

const char *
cukit_nvrtc_realpath(void)
{
    return (loaded.nvrtc == 1 && loaded.nvrtc_real[0]) ? loaded.nvrtc_real : NULL;
}
