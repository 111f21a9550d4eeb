/* loader.c - finds and dlopens libcuda, NVRTC and nvJitLink, fills cukit_api, says what is missing */
#include "driver/driver.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cukit_api_t cukit_api;

/* NVRTC and nvJitLink: a variable that names the file (tried first, then the rest),
 * the folder the caller passes, the loader path, the toolkit, NVIDIA's wheels. */
static const cukit_library nvrtc_library = {
    {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL},
    "CUKIT_NVRTC",
    0,
    {{"nvidia", {"cu13/lib", "cuda_nvrtc/lib", "cu12/lib", NULL}}},
    {CUKIT_LIB_FIRST, CUKIT_LIB_LOADER_PATH, CUKIT_LIB_TOOLKIT, CUKIT_LIB_PACKAGES},
};

static const cukit_library nvjitlink_library = {
    {"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so", NULL},
    "CUKIT_NVJITLINK",
    0,
    {{"nvidia", {"cu13/lib", "nvjitlink/lib", "cu12/lib", NULL}}},
    {CUKIT_LIB_FIRST, CUKIT_LIB_LOADER_PATH, CUKIT_LIB_TOOLKIT, CUKIT_LIB_PACKAGES},
};

/* What happened at the first attempt; later calls repeat the verdict. Part of the
 * once-written loader table, so process-wide like cukit_api itself. */
static struct {
    int driver;            /* 0 not tried, 1 ready, -1 failed */
    int nvrtc;
    int nvjitlink;
    char driver_why[1024];
    char nvrtc_why[2048];
    char nvrtc_path[1024];
    char nvrtc_real[PATH_MAX];      /* the file NVRTC was loaded from, links resolved */
    char driver_real[PATH_MAX];     /* the file libcuda was loaded from, links resolved */
    char nvjitlink_why[2048];
    char nvjitlink_path[1024];
    char include_dirs[2][PATH_MAX]; /* the toolkit's headers beside NVRTC, "" if none */
} loaded;

/* Fill cukit_api's entries of `list` from `lib` (entries.c); on a missing required
 * symbol, write its name to why and return -1. */
static int
fill(void *lib, const cukit_entry *list, size_t n, unsigned int major, char *why, size_t whylen)
{
    const char *missing = cukit_entries_fill(&cukit_api, lib, list, n, major);
    if (missing == NULL)
        return 0;
    snprintf(why, whylen, "the library has no %s; it is too old for cukit", missing);
    return -1;
}

/* Repeat a library's verdict: 0 when it loaded (state 1), else -1 with exception
 * class exc[kind] carrying `why`. */
static int
verdict(cukit_state *st, int state, const char *why, int kind, long code, const char *name,
        const char *call)
{
    if (state == 1)
        return 0;
    PyObject *msg = PyUnicode_FromString(why);
    if (msg == NULL)
        return -1;
    cukit_raise(st, kind, code, name, call, msg);
    Py_DECREF(msg);
    return -1;
}

int
cukit_driver_ready(void)
{
    return loaded.driver == 1;
}

/* ------------------------------------------------------------------ backend selection */

/* The driver table's second implementation, registered by the emulator layer at init. */
static int (*emulator_fill)(cukit_api_t *);
static char backend_wanted[16]; /* set_backend() before first use; "" -> CUKIT_BACKEND */
static const char *backend_used; /* "gpu" or "emulator" once the table is filled */

void
cukit_driver_set_emulator(int (*fill)(cukit_api_t *))
{
    emulator_fill = fill;
}

static const char *
backend_choice(void)
{
    if (backend_wanted[0])
        return backend_wanted;
    const char *env = getenv("CUKIT_BACKEND");
    return env && env[0] ? env : "auto";
}

/* Load libcuda and cuInit. 1 ready; 0 not usable, the reason in loaded.driver_why. */
static int
load_libcuda(void)
{
    static const char *names[] = {"libcuda.so.1", "libcuda.so"};
    void *lib = NULL;
    const char *err = "";
    for (size_t i = 0; i < sizeof names / sizeof *names && lib == NULL; i++) {
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL)
            err = dlerror();
    }
    if (lib == NULL) {
        snprintf(loaded.driver_why, sizeof loaded.driver_why,
                 "no CUDA driver: libcuda.so.1 was not found on the loader path (%s). "
                 "Install the NVIDIA driver, or run on a machine with an NVIDIA GPU",
                 err ? err : "");
        return 0;
    }
    if (fill(lib, cukit_driver_entries, cukit_driver_nentries, 0,
             loaded.driver_why, sizeof loaded.driver_why) < 0) {
        dlclose(lib);
        return 0;
    }
    Dl_info info;
    if (!dladdr(*(void **)&cukit_api.cuInit, &info) || info.dli_fname == NULL ||
        realpath(info.dli_fname, loaded.driver_real) == NULL)
        loaded.driver_real[0] = '\0';
    CUresult res = cukit_api.cuInit(0);
    int n = 0;
    if (res == CUDA_SUCCESS && (res = cukit_api.cuDeviceGetCount(&n)) == CUDA_SUCCESS && n > 0)
        return 1;
    const char *name = "?";
    if (res == CUDA_SUCCESS)
        snprintf(loaded.driver_why, sizeof loaded.driver_why,
                 "the CUDA driver (libcuda.so.1) reports no devices (check nvidia-smi and "
                 "CUDA_VISIBLE_DEVICES)");
    else {
        cukit_api.cuGetErrorName(res, &name);
        snprintf(loaded.driver_why, sizeof loaded.driver_why,
                 "the CUDA driver (libcuda.so.1) loaded but cuInit failed with %s (%d): "
                 "no usable GPU is visible to this process (check nvidia-smi and "
                 "CUDA_VISIBLE_DEVICES)",
                 name ? name : "?", res);
    }
    return 0;
}

/* Fill the driver entries with the emulator's. 1, or 0 with the reason in driver_why. */
static int
load_emulator(void)
{
    if (emulator_fill == NULL) {
        snprintf(loaded.driver_why, sizeof loaded.driver_why, "this build of cukit has no emulator");
        return 0;
    }
    for (size_t i = 0; i < cukit_driver_nentries; i++)
        memset((char *)&cukit_api + cukit_driver_entries[i].offset, 0, sizeof(void (*)(void)));
    emulator_fill(&cukit_api);
    backend_used = "emulator";
    return 1;
}

int
cukit_driver_load(cukit_state *st)
{
    if (loaded.driver == 0) {
        const char *want = backend_choice();
        loaded.driver = -1;
        if (strcmp(want, "emulator") == 0) {
            if (load_emulator())
                loaded.driver = 1;
        }
        else if (strcmp(want, "gpu") == 0 || strcmp(want, "auto") == 0) {
            if (load_libcuda()) {
                loaded.driver = 1;
                backend_used = "gpu";
            }
            else if (strcmp(want, "auto") == 0 && load_emulator()) {
                loaded.driver = 1;
                /* one short line: the reason's head (python -m cukit info has it whole) */
                int head = (int)strcspn(loaded.driver_why, ":(");
                while (head > 0 && loaded.driver_why[head - 1] == ' ')
                    head--;
                fprintf(stderr, "cukit: no GPU (%.*s); kernels run on the CPU emulator "
                                "(CUKIT_BACKEND=emulator: quiet, =gpu: require a GPU)\n",
                        head, loaded.driver_why);
            }
        }
        else {
            snprintf(loaded.driver_why, sizeof loaded.driver_why,
                     "unknown backend '%s': CUKIT_BACKEND (or cukit.set_backend) must be auto, "
                     "gpu or emulator", want);
        }
    }
    return verdict(st, loaded.driver, loaded.driver_why, CUKIT_EXC_NO_DEVICE,
                   CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "cuInit");
}

const char *
cukit_driver_realpath(void)
{
    return loaded.driver == 1 && backend_used && strcmp(backend_used, "gpu") == 0 &&
                   loaded.driver_real[0] ? loaded.driver_real : NULL;
}

const char *
cukit_backend_name(void)
{
    return backend_used;
}

static PyObject *
mod_set_backend(PyObject *m, PyObject *arg)
{
    const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (name == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "set_backend takes a str: 'auto', 'gpu' or 'emulator'");
        return NULL;
    }
    if (strcmp(name, "auto") != 0 && strcmp(name, "gpu") != 0 && strcmp(name, "emulator") != 0)
        return PyErr_Format(PyExc_ValueError,
                            "unknown backend %R: choose 'auto', 'gpu' or 'emulator'", arg);
    if (loaded.driver != 0) {
        const char *now = backend_used ? backend_used : "none";
        if (strcmp(name, now) == 0 || (strcmp(name, "auto") == 0 && backend_used))
            Py_RETURN_NONE;
        return PyErr_Format(PyExc_RuntimeError,
                            "the backend is already chosen (%s): call cukit.set_backend(%R) before "
                            "anything uses a device, or set CUKIT_BACKEND=%s in the environment",
                            now, arg, name);
    }
    snprintf(backend_wanted, sizeof backend_wanted, "%s", name);
    Py_RETURN_NONE;
}

static PyObject *
mod_backend(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    if (cukit_driver_load(PyModule_GetState(m)) < 0)
        return NULL;
    return PyUnicode_FromString(backend_used);
}

/* _driver_why() -> why the GPU driver is not used ("" where it is, or was not tried). */
static PyObject *
mod_driver_why(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    if (cukit_driver_load(PyModule_GetState(m)) < 0)
        PyErr_Clear();
    return PyUnicode_FromString(backend_used && strcmp(backend_used, "gpu") == 0 ? ""
                                                                                   : loaded.driver_why);
}

static PyMethodDef loader_functions[] = {
    {"_driver_why", mod_driver_why, METH_NOARGS,
     "Internal (python -m cukit info): why the GPU driver is not used; '' where it is."},
    {"set_backend", mod_set_backend, METH_O,
     "set_backend(name): 'auto' (a GPU if there is one, else the CPU emulator), 'gpu' or "
     "'emulator'. Call it before anything uses a device; CUKIT_BACKEND does the same."},
    {"backend", mod_backend, METH_NOARGS,
     "The backend kernels run on: 'gpu' or 'emulator' (chosen at first use)."},
    {NULL},
};

int
cukit_loader_setup(PyObject *module, cukit_state *st)
{
    return PyModule_AddFunctions(module, loader_functions);
}

/* ------------------------------------------------------------------ library search */

/* dlopen `path`; on success write it to found. */
static void *
try_path(const char *path, char *found, size_t foundlen)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle)
        snprintf(found, foundlen, "%s", path);
    return handle;
}

/* Try dir/name for each of lib's sonames ("" dir: the loader path); on success
 * write the path to found, else add dir to the list in tried. */
static void *
try_dir(const cukit_library *lib, const char *dir, char *found, size_t foundlen, char *tried,
        size_t triedlen)
{
    for (size_t i = 0; lib->names[i]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s%s%s", dir, dir[0] ? "/" : "", lib->names[i]);
        void *handle = try_path(path, found, foundlen);
        if (handle)
            return handle;
    }
    size_t used = strlen(tried);
    snprintf(tried + used, triedlen - used, "%s%s", used ? ", " : "",
             dir[0] ? dir : "the loader path");
    return NULL;
}

/* A soname the process has loaded already (RTLD_NOLOAD opens no new file). */
static void *
try_loaded(const cukit_library *lib, char *found, size_t foundlen)
{
    for (size_t i = 0; lib->names[i]; i++) {
        void *handle = dlopen(lib->names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (handle) {
            snprintf(found, foundlen, "%s (already loaded)", lib->names[i]);
            return handle;
        }
    }
    return NULL;
}

/* The lib folders of lib's packages, found through each package's __path__ when it
 * is installed; errors of the look-up are cleared. */
static void *
try_packages(const cukit_library *lib, char *found, size_t foundlen, char *tried, size_t triedlen)
{
    void *handle = NULL;
    for (size_t w = 0; w < 2 && lib->packages[w].package && handle == NULL; w++) {
        PyObject *pkg = PyImport_ImportModule(lib->packages[w].package);
        PyObject *paths = pkg ? PyObject_GetAttrString(pkg, "__path__") : NULL;
        PyObject *it = paths ? PyObject_GetIter(paths) : NULL;
        Py_XDECREF(pkg);
        Py_XDECREF(paths);
        PyErr_Clear();
        PyObject *p;
        while (it && handle == NULL && (p = PyIter_Next(it)) != NULL) {
            const char *base = PyUnicode_AsUTF8(p);
            for (size_t i = 0; base && lib->packages[w].subdirs[i] && handle == NULL; i++) {
                char dir[1024];
                snprintf(dir, sizeof dir, "%s/%s", base, lib->packages[w].subdirs[i]);
                handle = try_dir(lib, dir, found, foundlen, tried, triedlen);
            }
            Py_DECREF(p);
        }
        PyErr_Clear();
        Py_XDECREF(it);
    }
    return handle;
}

/* The toolkit's library folders: CUDA_HOME and CUDA_PATH, then the usual install. */
static void *
try_toolkit(const cukit_library *lib, char *found, size_t foundlen, char *tried, size_t triedlen)
{
    static const char *envs[] = {"CUDA_HOME", "CUDA_PATH"};
    void *handle = NULL;
    for (size_t i = 0; i < 2 && handle == NULL; i++) {
        const char *root = getenv(envs[i]);
        if (root && root[0]) {
            char dir[1024];
            snprintf(dir, sizeof dir, "%s/lib64", root);
            if ((handle = try_dir(lib, dir, found, foundlen, tried, triedlen)) == NULL) {
                snprintf(dir, sizeof dir, "%s/lib", root);
                handle = try_dir(lib, dir, found, foundlen, tried, triedlen);
            }
        }
    }
    if (handle == NULL)
        handle = try_dir(lib, "/usr/local/cuda/lib64", found, foundlen, tried, triedlen);
    return handle;
}

void *
cukit_library_search(const cukit_library *lib, const char *first, char *found, size_t foundlen,
                     char *tried, size_t triedlen)
{
    void *handle = NULL;
    const char *explicit_path = getenv(lib->env);
    if (explicit_path && explicit_path[0]) {
        if ((handle = try_path(explicit_path, found, foundlen)))
            return handle;
        if (lib->env_only) {
            snprintf(tried, triedlen, "%s=%s (%s) only", lib->env, explicit_path, dlerror());
            return NULL;
        }
        snprintf(tried, triedlen, "%s=%s", lib->env, explicit_path);
    }
    for (size_t i = 0; i < sizeof lib->places && handle == NULL; i++) {
        switch (lib->places[i]) {
        case CUKIT_LIB_END:
            return NULL;
        case CUKIT_LIB_LOADED:
            handle = try_loaded(lib, found, foundlen);
            break;
        case CUKIT_LIB_FIRST:
            if (first && first[0])
                handle = try_dir(lib, first, found, foundlen, tried, triedlen);
            break;
        case CUKIT_LIB_PACKAGES:
            handle = try_packages(lib, found, foundlen, tried, triedlen);
            break;
        case CUKIT_LIB_LOADER_PATH:
            handle = try_dir(lib, "", found, foundlen, tried, triedlen);
            break;
        case CUKIT_LIB_TOOLKIT:
            handle = try_toolkit(lib, found, foundlen, tried, triedlen);
            break;
        }
    }
    return handle;
}

/* ------------------------------------------------------------------ NVRTC and nvJitLink */

/* The real folder of the loaded NVRTC library into dir; 0, or -1 when unknown.
 * Remembers the library's real path for cukit_nvrtc_realpath. */
static int
nvrtc_dir(char *dir, size_t n)
{
    Dl_info info;
    char real[PATH_MAX];
    if (loaded.nvrtc != 1 || !dladdr((void *)cukit_api.nvrtcVersion, &info) ||
        info.dli_fname == NULL || realpath(info.dli_fname, real) == NULL)
        return -1;
    snprintf(loaded.nvrtc_real, sizeof loaded.nvrtc_real, "%s", real);
    char *slash = strrchr(real, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    snprintf(dir, n, "%s", real);
    return 0;
}

/* The toolkit's include folder sits at ../include from the library's folder, in
 * the CUDA toolkit and in NVIDIA's wheels alike; CCCL (cuda/std, cub) is in
 * include/cccl since CUDA 13. Found from the NVRTC actually loaded, so the
 * headers match the compiler. */
static void
find_headers(void)
{
    char real[PATH_MAX];
    if (nvrtc_dir(real, sizeof real) < 0)
        return;
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
        void *lib = cukit_library_search(&nvrtc_library, NULL, loaded.nvrtc_path,
                                         sizeof loaded.nvrtc_path, tried, sizeof tried);
        loaded.nvrtc = -1;
        if (lib == NULL) {
            snprintf(loaded.nvrtc_why, sizeof loaded.nvrtc_why,
                     "NVRTC (libnvrtc.so) was not found; looked in: %s, and the "
                     "nvidia-cuda-nvrtc wheel. Install the CUDA toolkit and set CUDA_HOME, "
                     "or `pip install nvidia-cuda-nvrtc`, or point CUKIT_NVRTC at the library",
                     tried);
        }
        else if (fill(lib, cukit_nvrtc_entries, cukit_nvrtc_nentries, 0,
                      loaded.nvrtc_why, sizeof loaded.nvrtc_why) == 0) {
            loaded.nvrtc = 1;
            find_headers();
        }
        else {
            dlclose(lib);
        }
    }
    return verdict(st, loaded.nvrtc, loaded.nvrtc_why, CUKIT_EXC_NOT_SUPPORTED, -1, NULL,
                   "dlopen");
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

int
cukit_nvjitlink_load(cukit_state *st)
{
    if (loaded.nvjitlink == 0) {
        /* LTO-IR from NVRTC needs an nvJitLink at least as new: the one beside it. */
        char beside[PATH_MAX] = "", tried[1536] = "";
        if (cukit_nvrtc_load(st) < 0)
            PyErr_Clear();
        nvrtc_dir(beside, sizeof beside);
        void *lib = cukit_library_search(&nvjitlink_library, beside, loaded.nvjitlink_path,
                                         sizeof loaded.nvjitlink_path, tried, sizeof tried);
        loaded.nvjitlink = -1;
        if (lib == NULL) {
            snprintf(loaded.nvjitlink_why, sizeof loaded.nvjitlink_why,
                     "nvJitLink (libnvJitLink.so) was not found; looked in: %s, and the "
                     "nvidia-nvjitlink wheel. Install the CUDA toolkit (12 or newer) and set "
                     "CUDA_HOME, or `pip install nvidia-nvjitlink`, or point CUKIT_NVJITLINK at "
                     "the library",
                     tried);
        }
        else {
            /* The versioned symbols of the library's own major are the ABI it serves. */
            unsigned int major = 0, minor = 0;
            nvJitLinkResult (*version)(unsigned int *, unsigned int *);
            void *sym = dlsym(lib, "nvJitLinkVersion");
            memcpy(&version, &sym, sizeof version);
            if (version == NULL || version(&major, &minor) != NVJITLINK_SUCCESS)
                major = 0;
            if (fill(lib, cukit_nvjitlink_entries, cukit_nvjitlink_nentries,
                     major, loaded.nvjitlink_why, sizeof loaded.nvjitlink_why) == 0)
                loaded.nvjitlink = 1;
            else
                dlclose(lib);
        }
    }
    return verdict(st, loaded.nvjitlink, loaded.nvjitlink_why, CUKIT_EXC_NOT_SUPPORTED, -1, NULL,
                   "dlopen");
}

const char *
cukit_nvjitlink_path(void)
{
    return loaded.nvjitlink == 1 ? loaded.nvjitlink_path : NULL;
}
