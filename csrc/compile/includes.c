/* includes.c - the folders NVRTC searches after a compile's own -I: NVIDIA's headers
 * beside the NVRTC loaded (toolkit or pip wheels; what they lack from a toolkit's, from
 * CUDA_HOME, CUDA_PATH or /usr/local/cuda), then cukit's standard-header
 * stand-ins; and the hint a CompileError gets for a header none of them has */
#include "compile/program.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Where NVIDIA's headers sit relative to the folder of libnvrtc.so, in order:
 * the toolkit and the CUDA 13 wheels share one include folder beside lib (nvidia/cu13/
 * include, with CCCL in include/cccl since CUDA 13); the CUDA 12 wheels have a package
 * each (nvidia/cuda_nvrtc/lib beside nvidia/cuda_runtime/include, ...). */
static const char *const beside_nvrtc[] = {
    "../include",
    "../include/cccl",
    "../../cuda_runtime/include",
    "../../cuda_cccl/include",
    "../../curand/include",
};

/* Process-wide like the loaded NVRTC they derive from; written once, under the GIL. */
static struct {
    int ready;                       /* 1 once NVRTC's folders were looked for */
    int n;
    char dirs[CUKIT_MAX_INCLUDE_DIRS][PATH_MAX];
    const char *list[CUKIT_MAX_INCLUDE_DIRS + 1]; /* into dirs, NULL-terminated */
} found;

/* 1 when one of dirs[0..n) has the file `name`. */
static int
dirs_have(char dirs[][PATH_MAX], int n, const char *name)
{
    char path[PATH_MAX + 64];
    struct stat s;
    for (int i = 0; i < n; i++)
        if (snprintf(path, sizeof path, "%s/%s", dirs[i], name) < (int)sizeof path &&
            stat(path, &s) == 0)
            return 1;
    return 0;
}

/* A toolkit's headers where those beside NVRTC lack NVIDIA's runtime headers (an NVRTC
 * wheel or library on its own) or CCCL's (a wheel set without nvidia-cuda-cccl, as
 * PyTorch's: curand_kernel.h then needs <nv/target>): the toolkit CUDA_HOME names,
 * else CUDA_PATH, else /usr/local/cuda (only the one named: a set CUDA_HOME is not
 * second-guessed), when its include folder has cuda_fp16.h. Its include folder where
 * the runtime headers are missing; its CCCL folder (include/cccl since CUDA 13, include
 * before) where CCCL is missing. Appended to dirs[n..], after NVRTC's own. */
static int
toolkit_include_dirs(char dirs[][PATH_MAX], int n, int cap)
{
    int runtime = !dirs_have(dirs, n, "cuda_fp16.h"), cccl = !dirs_have(dirs, n, "nv/target");
    if (!runtime && !cccl)
        return n;
    char path[PATH_MAX + 64], real[PATH_MAX];
    struct stat s;
    const char *root = getenv("CUDA_HOME");
    if (root == NULL || root[0] == '\0')
        root = getenv("CUDA_PATH");
    if (root == NULL || root[0] == '\0')
        root = "/usr/local/cuda";
    if (snprintf(path, sizeof path, "%s/include/cuda_fp16.h", root) >= (int)sizeof path ||
        stat(path, &s) != 0)
        return n;
    snprintf(path, sizeof path, "%s/include/cccl/nv/target", root);
    int cccl_apart = stat(path, &s) == 0;
    const char *subs[2] = {runtime || (cccl && !cccl_apart) ? "include" : NULL,
                           runtime || (cccl && cccl_apart) ? "include/cccl" : NULL};
    for (size_t k = 0; k < 2 && n < cap; k++) {
        if (subs[k] == NULL)
            continue;
        snprintf(path, sizeof path, "%s/%s", root, subs[k]);
        if (realpath(path, real) != NULL && stat(real, &s) == 0 && S_ISDIR(s.st_mode))
            snprintf(dirs[n++], PATH_MAX, "%s", real);
    }
    return n;
}

int
cukit_include_dirs_beside(const char *libdir, char dirs[][PATH_MAX], int cap)
{
    int n = 0;
    for (size_t i = 0; i < sizeof beside_nvrtc / sizeof *beside_nvrtc && n < cap; i++) {
        char path[PATH_MAX + 64], real[PATH_MAX];
        struct stat s;
        if (snprintf(path, sizeof path, "%s/%s", libdir, beside_nvrtc[i]) >= (int)sizeof path ||
            realpath(path, real) == NULL || stat(real, &s) != 0 || !S_ISDIR(s.st_mode))
            continue;
        int dup = 0;
        for (int j = 0; j < n; j++)
            dup |= strcmp(dirs[j], real) == 0;
        if (!dup)
            snprintf(dirs[n++], PATH_MAX, "%s", real);
    }
    return toolkit_include_dirs(dirs, n, cap);
}

/* cukit's own include folder: "include" beside this extension module's file. */
static int
standin_dir(char *out, size_t n)
{
    Dl_info info;
    char real[PATH_MAX];
    if (!dladdr((void *)cukit_include_dirs_beside, &info) || info.dli_fname == NULL ||
        realpath(info.dli_fname, real) == NULL)
        return -1;
    char *slash = strrchr(real, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    return snprintf(out, n, "%s/include", real) < (int)n ? 0 : -1;
}

const char *const *
cukit_default_include_dirs(void)
{
    const char *nvrtc = cukit_nvrtc_realpath();
    if (!found.ready && nvrtc != NULL) {
        char libdir[PATH_MAX];
        snprintf(libdir, sizeof libdir, "%s", nvrtc);
        char *slash = strrchr(libdir, '/');
        if (slash)
            *slash = '\0';
        found.n = slash ? cukit_include_dirs_beside(libdir, found.dirs,
                                                    CUKIT_MAX_INCLUDE_DIRS - 1) : 0;
        if (standin_dir(found.dirs[found.n], PATH_MAX) == 0)
            found.n++;
        for (int i = 0; i < found.n; i++)
            found.list[i] = found.dirs[i];
        found.list[found.n] = NULL;
        found.ready = 1;
    }
    if (!found.ready) { /* NVRTC not loaded yet: the stand-ins alone, not remembered */
        static char only[PATH_MAX];
        static const char *list[2];
        list[0] = standin_dir(only, sizeof only) == 0 ? only : NULL;
        list[1] = NULL;
        return list;
    }
    return found.list;
}

int
cukit_default_include_has(const char *name)
{
    for (const char *const *d = cukit_default_include_dirs(); *d; d++) {
        char path[PATH_MAX + 256];
        struct stat s;
        if (snprintf(path, sizeof path, "%s/%s", *d, name) < (int)sizeof path &&
            stat(path, &s) == 0 && S_ISREG(s.st_mode))
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ hints */

/* Which of NVIDIA's packages holds a header, by its name's start, and a file that shows
 * the package is installed. */
static const struct {
    const char *prefix;
    const char *wheel;
    const char *marker;
} providers[] = {
    {"curand", "nvidia-curand", "curand_kernel.h"},
    {"cuda/", "nvidia-cuda-cccl", "cuda/std/version"},
    {"cub/", "nvidia-cuda-cccl", "cuda/std/version"},
    {"thrust/", "nvidia-cuda-cccl", "cuda/std/version"},
    {"nv/", "nvidia-cuda-cccl", "cuda/std/version"},
    {"cuda_", "nvidia-cuda-runtime", "cuda_fp16.h"},
    {"cooperative_groups", "nvidia-cuda-runtime", "cuda_fp16.h"},
    {"mma.h", "nvidia-cuda-runtime", "cuda_fp16.h"},
    {"sm_", "nvidia-cuda-runtime", "cuda_fp16.h"},
    {"vector_", "nvidia-cuda-runtime", "cuda_fp16.h"},
    {"device_", "nvidia-cuda-runtime", "cuda_fp16.h"},
    {"math_constants.h", "nvidia-cuda-runtime", "cuda_fp16.h"},
    {"cuComplex.h", "nvidia-cuda-runtime", "cuda_fp16.h"},
    {"texture_", "nvidia-cuda-runtime", "cuda_fp16.h"},
    {"surface_", "nvidia-cuda-runtime", "cuda_fp16.h"},
    {"builtin_types.h", "nvidia-cuda-runtime", "cuda_fp16.h"},
    {"crt/", "nvidia-cuda-crt", "crt/host_defines.h"},
};

/* The folders searched after the user's, as "a, b and c" into out. */
static void
searched(char *out, size_t n)
{
    size_t used = 0;
    out[0] = '\0';
    const char *const *d = cukit_default_include_dirs();
    for (int i = 0; d[i] && used < n; i++)
        used += (size_t)snprintf(out + used, n - used, "%s%s", i == 0 ? "" : d[i + 1] ? ", " : " and ",
                                 d[i]);
}

/* The line "hint: ..." for a header NVRTC could not open, written to out. */
static void
missing_header_hint(const char *name, char *out, size_t n)
{
    char dirs[1024];
    searched(dirs, sizeof dirs);
    for (size_t i = 0; i < sizeof providers / sizeof *providers; i++) {
        if (strncmp(name, providers[i].prefix, strlen(providers[i].prefix)) != 0)
            continue;
        if (cukit_default_include_has(providers[i].marker))
            snprintf(out, n,
                     "hint: \"%s\" looks like one of NVIDIA's CUDA headers (the %s wheel's), "
                     "but the folders searched after yours (%s) hold that package and not this "
                     "header: check its name, and whether this CUDA version has it\n",
                     name, providers[i].wheel, dirs);
        else
            snprintf(out, n,
                     "hint: \"%s\" is one of NVIDIA's CUDA headers, which NVRTC does not "
                     "carry; cukit searched %s after your folders. Install the `%s` wheel "
                     "(`pip install %s`; in cukit's checkout `pip install '.[nvrtc]'` brings it "
                     "with NVRTC), or a CUDA toolkit and set CUDA_HOME\n",
                     name, dirs, providers[i].wheel, providers[i].wheel);
        return;
    }
    snprintf(out, n,
             "hint: \"%s\" is in none of the folders searched (yours, then %s): pass its "
             "folder with include_dirs=[...] or -I in options. cukit's stand-ins for the "
             "standard headers cover math.h, cmath, stdint.h, cstdint, float.h, cfloat, "
             "limits.h, climits, assert.h, cassert, stdlib.h, cstdlib, string.h, cstring, "
             "stdio.h, cstdio, stddef.h and cstddef\n",
             name, dirs);
}

PyObject *
cukit_compile_hints(const char *log, const char *source)
{
    char buf[4096] = "";
    size_t used = 0;
    static const char *opens[] = {"cannot open source file \"", "could not open source file \""};
    for (size_t k = 0; k < 2 && used == 0; k++) {
        const char *at = strstr(log, opens[k]);
        if (at == NULL)
            continue;
        at += strlen(opens[k]);
        const char *end = strchr(at, '"');
        char name[256];
        if (end == NULL || (size_t)(end - at) >= sizeof name)
            continue;
        memcpy(name, at, (size_t)(end - at));
        name[end - at] = '\0';
        missing_header_hint(name, buf, sizeof buf);
        used = strlen(buf);
    }
    /* `half` without cuda_fp16.h reads as a declaration of something else, and NVRTC
     * then complains about the kernel's __global__, far from the cause. */
    if (used == 0 && strstr(log, "attribute \"__global__\" does not apply here") &&
        (strstr(source, "half") || strstr(source, "bfloat16")) && !cukit_default_include_has("cuda_fp16.h"))
        snprintf(buf, sizeof buf,
                 "hint: the source uses half or bfloat16, whose types come from cuda_fp16.h and "
                 "cuda_bf16.h: NVIDIA's CUDA headers, which NVRTC does not carry and none of the "
                 "include folders has. Install the `nvidia-cuda-runtime` wheel (`pip install "
                 "nvidia-cuda-runtime`; in cukit's checkout `pip install '.[nvrtc]'` brings it "
                 "with NVRTC), or a CUDA toolkit and set CUDA_HOME\n");
    return PyUnicode_FromString(buf);
}

/* _include_dirs(nvrtc_library=None): for tests and troubleshooting. */
PyObject *
cukit_mod_include_dirs(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs > 1)
        return PyErr_Format(PyExc_TypeError, "_include_dirs takes at most 1 argument");
    const char *const *list;
    char dirs[CUKIT_MAX_INCLUDE_DIRS][PATH_MAX];
    const char *mine[CUKIT_MAX_INCLUDE_DIRS + 1];
    if (nargs == 1 && args[0] != Py_None) {
        PyObject *bytes = NULL;
        if (!PyUnicode_FSConverter(args[0], &bytes))
            return NULL;
        char libdir[PATH_MAX];
        snprintf(libdir, sizeof libdir, "%s", PyBytes_AS_STRING(bytes));
        Py_DECREF(bytes);
        char *slash = strrchr(libdir, '/');
        if (slash)
            *slash = '\0';
        int n = slash ? cukit_include_dirs_beside(libdir, dirs, CUKIT_MAX_INCLUDE_DIRS) : 0;
        for (int i = 0; i < n; i++)
            mine[i] = dirs[i];
        mine[n] = NULL;
        list = mine;
    }
    else {
        if (cukit_nvrtc_load(PyModule_GetState(m)) < 0)
            PyErr_Clear(); /* without NVRTC: the stand-ins alone */
        list = cukit_default_include_dirs();
    }
    PyObject *out = PyList_New(0);
    for (const char *const *d = list; out && *d; d++) {
        PyObject *s = PyUnicode_DecodeFSDefault(*d);
        if (s == NULL || PyList_Append(out, s) < 0)
            Py_CLEAR(out);
        Py_XDECREF(s);
    }
    return out;
}
