/* functions.c - compile() with its in-process cache, the loading of cukit's own kernels, nvrtc_version(), nvrtc_archs() */
#include "compile/cache.h"
#include "compile/program.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

/* A hashable stand-in for a compile argument: lists become tuples, a dict its
 * items as a frozenset. New ref; NULL with an exception when it cannot be. */
static PyObject *
hashable(PyObject *v)
{
    if (v == NULL)
        return Py_NewRef(Py_None);
    if (PyDict_Check(v)) {
        PyObject *items = PyDict_Items(v);
        PyObject *out = items ? PyFrozenSet_New(items) : NULL;
        Py_XDECREF(items);
        return out;
    }
    if (PyList_Check(v))
        return PyList_AsTuple(v);
    return Py_NewRef(v);
}

/* compile()'s work, its seven arguments in v (NULL: not given; v[0] a str), for dev
 * (activated). New ref to the Module, or NULL. */
static PyObject *
compile_cached(cukit_state *st, PyObject *const *v, cukit_Device *dev)
{

    /* The same compile again in this process is the module already loaded, as long
     * as the user headers it read are as they were. */
    PyObject *key = NULL, *out = NULL, *prog = NULL;
    int cache = cukit_cache_enabled();
    if (cache) {
        PyObject *parts[8];
        int ok = 1;
        for (int i = 0; i < 7; i++)
            ok &= (parts[i] = ok ? hashable(v[i]) : NULL) != NULL;
        parts[7] = ok ? PyLong_FromLong(dev->ordinal) : NULL;
        key = parts[7] ? PyTuple_New(8) : NULL;
        for (int i = 0; i < 8; i++) {
            if (key)
                PyTuple_SET_ITEM(key, i, parts[i]);
            else if (i < 7 && parts[i])
                Py_DECREF(parts[i]);
        }
        PyObject *hit = key ? PyDict_GetItemWithError(st->compile->compiled, key) : NULL;
        if (hit == NULL && key && PyErr_Occurred()) /* a set or other unhashable argument */
            Py_CLEAR(key);
        if (hit) {
            PyObject *deps = PyTuple_GET_ITEM(hit, 1), *was = PyTuple_GET_ITEM(hit, 2);
            int same = 1;
            if (PyTuple_GET_SIZE(deps) > 0) {
                char buf[PATH_MAX];
                same = getcwd(buf, sizeof buf) != NULL && strcmp(buf, PyBytes_AS_STRING(was)) == 0;
                if (same)
                    same = cukit_cache_deps_unchanged(deps);
            }
            if (same < 0)
                goto done;
            if (same) {
                /* most recently used last: the eviction below takes the first */
                Py_INCREF(hit);
                int rc = PyDict_DelItem(st->compile->compiled, key) < 0 ||
                         PyDict_SetItem(st->compile->compiled, key, hit) < 0;
                out = rc ? NULL : Py_NewRef(PyTuple_GET_ITEM(hit, 0));
                Py_DECREF(hit);
                goto done;
            }
        }
        if (key == NULL) { /* unhashable arguments: compile without this cache */
            if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError))
                goto done;
            PyErr_Clear();
        }
    }

    int lineinfo = v[6] ? PyObject_IsTrue(v[6]) : 0;
    if (lineinfo < 0)
        goto done;
    prog = cukit_program_new(st, v[0], v[1], v[2], v[3], v[4], v[5], lineinfo);
    if (prog == NULL)
        goto done;
    out = cukit_program_load((cukit_Program *)prog, dev);
    if (out && key && PyTuple_Check(((cukit_Program *)prog)->deps)) {
        char buf[PATH_MAX];
        PyObject *deps = ((cukit_Program *)prog)->deps;
        PyObject *entry = Py_BuildValue("(OOy)", out, deps,
                                        getcwd(buf, sizeof buf) ? buf : "");
        if (entry == NULL || PyDict_SetItem(st->compile->compiled, key, entry) < 0)
            Py_CLEAR(out);
        Py_XDECREF(entry);
        /* Bounded: the oldest module goes (and is unloaded once nothing else holds it),
         * so a program that compiles many unique sources does not keep them all. */
        while (out && PyDict_GET_SIZE(st->compile->compiled) > CUKIT_COMPILED_KEPT) {
            Py_ssize_t pos = 0;
            PyObject *oldest, *value;
            if (!PyDict_Next(st->compile->compiled, &pos, &oldest, &value))
                break;
            Py_INCREF(oldest);
            int rc = PyDict_DelItem(st->compile->compiled, oldest);
            Py_DECREF(oldest);
            if (rc < 0) {
                Py_CLEAR(out);
                break;
            }
        }
    }
done:
    Py_XDECREF(key);
    Py_XDECREF(prog);
    return out;
}

static PyObject *
mod_compile(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"source", "name", "options", "include_dirs", "defines",
                             "name_expressions", "lineinfo", "device", NULL};
    cukit_state *st = PyModule_GetState(m);
    PyObject *v[8] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U|UOOOOOO:compile", kwlist, &v[0], &v[1],
                                     &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]))
        return NULL;
    cukit_Device *dev = cukit_device_arg(st, v[7]);
    if (dev == NULL || cukit_device_activate(dev) < 0)
        return NULL;
    return compile_cached(st, v, dev);
}

PyObject *
cukit_compile_load(cukit_state *st, PyObject *source, const char *name, PyObject *options,
                   cukit_Device *dev)
{
    if (dev == NULL && (dev = cukit_device_arg(st, NULL)) == NULL)
        return NULL;
    if (cukit_device_activate(dev) < 0)
        return NULL;
    PyObject *pyname = PyUnicode_FromString(name ? name : "kernel.cu");
    if (pyname == NULL)
        return NULL;
    PyObject *v[7] = {source, pyname, options, NULL, NULL, NULL, NULL};
    PyObject *out = compile_cached(st, v, dev);
    Py_DECREF(pyname);
    return out;
}

static PyObject *
mod_nvrtc_version(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = PyModule_GetState(m);
    int major = 0, minor = 0;
    if (cukit_nvrtc_load(st) < 0 || NVRTC_CALL(st, nvrtcVersion, (&major, &minor)) < 0)
        return NULL;
    return Py_BuildValue("(ii)", major, minor);
}

static PyObject *
mod_nvrtc_archs(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = PyModule_GetState(m);
    int n = 0, archs[256];
    if (cukit_nvrtc_load(st) < 0)
        return NULL;
    if (!cukit_api.nvrtcGetNumSupportedArchs || !cukit_api.nvrtcGetSupportedArchs)
        return PyErr_Format(st->exc[CUKIT_EXC_NOT_SUPPORTED],
                            "this NVRTC cannot list its architectures (it is older than CUDA 11.2)");
    if (NVRTC_CALL(st, nvrtcGetNumSupportedArchs, (&n)) < 0)
        return NULL;
    if (n < 0 || n > 256)
        return PyErr_Format(PyExc_RuntimeError, "NVRTC reports %d architectures", n);
    if (NVRTC_CALL(st, nvrtcGetSupportedArchs, (archs)) < 0)
        return NULL;
    PyObject *out = PyTuple_New(n);
    for (int i = 0; out && i < n; i++) {
        PyObject *s = PyUnicode_FromFormat("sm_%d", archs[i]);
        if (s == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, s);
    }
    return out;
}

static PyObject *
mod_device_files(PyObject *m, PyObject *unused)
{
    return cukit_device_files();
}

static PyObject *
mod_device_file_check(PyObject *m, PyObject *name)
{
    const char *s = PyUnicode_AsUTF8(name);
    return s == NULL || cukit_device_file(s) == NULL ? NULL : Py_NewRef(Py_None);
}

static PyMethodDef compile_functions[] = {
    {"_device_file_check", mod_device_file_check, METH_O,
     "_device_file_check(name): None when the build carried the device file `name`, else "
     "the SystemError a kernel of it would raise."},
    {"_device_files", mod_device_files, METH_NOARGS,
     "_device_files() -> dict: the CUDA C of cukit's built-in kernels, by path under csrc/ "
     "(csrc/<layer>/kernels/), as the build carried it (local includes in place)."},
    {"compile", (PyCFunction)(void (*)(void))mod_compile, METH_VARARGS | METH_KEYWORDS,
     "compile(source, name='kernel.cu', options=(), include_dirs=(), defines={}, "
     "name_expressions=(), lineinfo=False, device=None) -> Module\n\n"
     "Compile with NVRTC for the device's exact architecture and load it. The same compile "
     "again returns the module already loaded; compiled code is also kept on disk (see "
     "cache_info)."},
    {"nvrtc_version", mod_nvrtc_version, METH_NOARGS, "NVRTC's version as (major, minor)."},
    {"nvrtc_archs", mod_nvrtc_archs, METH_NOARGS,
     "The architectures NVRTC can generate machine code for, oldest first: ('sm_75', ...)."},
    {"_include_dirs", (PyCFunction)(void (*)(void))cukit_mod_include_dirs, METH_FASTCALL,
     "_include_dirs(nvrtc_library=None) -> list of str: the folders searched after a "
     "compile's own -I (NVIDIA's headers beside NVRTC, then cukit's stand-ins), or those "
     "found beside the given NVRTC library file."},
    {NULL},
};

int
cukit_compile_functions_setup(PyObject *module, cukit_state *st)
{
    return PyModule_AddFunctions(module, compile_functions);
}

/* ------------------------------------------------------------------ cukit's own kernels */

int
cukit_builtin_function(cukit_state *st, cukit_Device *dev, PyObject *source, const char *file,
                       PyObject *options, const char *kernel, PyObject **module, CUfunction *func)
{
    *module = NULL;
    PyObject *mod = cukit_compile_load(st, source, file, options, dev);
    if (mod == NULL)
        return -1;
    if (cukit_device_activate(dev) < 0 ||
        CU_CALL(st, cuModuleGetFunction, (func, ((cukit_Module *)mod)->handle, kernel)) < 0) {
        Py_DECREF(mod);
        return -1;
    }
    *module = mod;
    return 0;
}

/* Kernel `kernel` of the module kept under `key` in *modules (created here), compiled
 * from `defines`, `more` (may be NULL) and the device file at the first use. */
static int
builtin_kernel(cukit_Device *dev, PyObject **modules, PyObject *key, const char *defines,
               const char *more, const char *file, const char *kernel, CUfunction *func)
{
    cukit_state *st = dev->st;
    if (*modules == NULL && (*modules = PyDict_New()) == NULL)
        return -1;
    PyObject *mod = PyDict_GetItemWithError(*modules, key); /* borrowed */
    if (mod != NULL) {
        if (cukit_device_activate(dev) < 0)
            return -1;
        return CU_CALL(st, cuModuleGetFunction, (func, ((cukit_Module *)mod)->handle, kernel));
    }
    int rc = -1;
    const char *body = PyErr_Occurred() ? NULL : cukit_device_file(file);
    PyObject *text = PyErr_Occurred() || body == NULL
                         ? NULL
                         : PyUnicode_FromFormat("%s%s%s", defines ? defines : "", more ? more : "",
                                                body);
    if (text && cukit_builtin_function(st, dev, text, file, NULL, kernel, &mod, func) == 0) {
        /* Another thread may have loaded them meanwhile: either module holds the same
         * code, and the one kept is the one whose function is returned next time. */
        PyObject *kept = PyDict_SetDefault(*modules, key, mod); /* borrowed */
        rc = kept == NULL ? -1
             : kept == mod ? 0
                           : CU_CALL(st, cuModuleGetFunction,
                                     (func, ((cukit_Module *)kept)->handle, kernel));
        Py_DECREF(mod);
    }
    Py_XDECREF(text);
    return rc;
}

int
cukit_builtin_kernel_file(cukit_Device *dev, PyObject **modules, const char *defines,
                          const char *file, const char *kernel, CUfunction *func)
{
    PyObject *key = PyLong_FromLong(dev->ordinal);
    if (key == NULL)
        return -1;
    int rc = builtin_kernel(dev, modules, key, defines, NULL, file, kernel, func);
    Py_DECREF(key);
    return rc;
}

int
cukit_builtin_kernel_one(cukit_Device *dev, PyObject **modules, const char *defines,
                         const char *file, const char *kernel, CUfunction *func)
{
    char one[300];
    if (PyOS_snprintf(one, sizeof one, "#define CUKIT_ONE_KERNEL 1\n#define CUKIT_KERNEL_%s 1\n",
                      kernel) >= (int)sizeof one) {
        PyErr_Format(PyExc_SystemError, "built-in kernel name too long: %s", kernel);
        return -1;
    }
    PyObject *key = Py_BuildValue("(is)", dev->ordinal, kernel);
    if (key == NULL)
        return -1;
    int rc = builtin_kernel(dev, modules, key, defines, one, file, kernel, func);
    Py_DECREF(key);
    return rc;
}
