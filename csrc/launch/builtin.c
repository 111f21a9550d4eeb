/* builtin.c - cukit's own kernels: the one way they are compiled and loaded (the compile
 * layer's memory and disk caches, as user kernels) and the one launch with set_debug's check */
#include "launch/launch.h"

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

int
cukit_builtin_kernel(cukit_Device *dev, PyObject **modules, const char *source, const char *file,
                     const char *kernel, CUfunction *func)
{
    cukit_state *st = dev->st;
    if (*modules == NULL && (*modules = PyDict_New()) == NULL)
        return -1;
    PyObject *key = PyLong_FromLong(dev->ordinal);
    if (key == NULL)
        return -1;
    PyObject *mod = PyDict_GetItemWithError(*modules, key); /* borrowed */
    if (mod != NULL) {
        Py_DECREF(key);
        if (cukit_device_activate(dev) < 0)
            return -1;
        return CU_CALL(st, cuModuleGetFunction, (func, ((cukit_Module *)mod)->handle, kernel));
    }
    int rc = -1;
    PyObject *text = PyErr_Occurred() ? NULL : PyUnicode_FromString(source);
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
    Py_DECREF(key);
    return rc;
}

int
cukit_builtin_launch(cukit_Device *dev, CUfunction func, unsigned gx, unsigned gy, unsigned bx,
                     unsigned by, CUstream stream, void **args)
{
    cukit_state *st = dev->st;
    if (cukit_device_activate(dev) < 0 ||
        CU_CALL(st, cuLaunchKernel, (func, gx, gy, 1, bx, by, 1, 0, stream, args, NULL)) < 0)
        return -1;
    /* set_debug: the fault, if any, is raised here, by the call that queued it (not
     * during a capture, which a synchronize would break) */
    if (st->debug && st->captures == 0)
        CU_CALL_NOGIL(st, cuCtxSynchronize, ());
    return 0;
error:
    return -1;
}
