/* errors.c - CUresult / nvrtcResult -> cukit exception classes, from one table */
#include "cukit.h"

/* The exception classes, in the order of the CUKIT_EXC_* enum. */
static const struct {
    const char *name;
    int base;            /* index of the cukit base class, -1 for the root */
    const char *doc;
} classes[CUKIT_EXC_COUNT] = {
    [CUKIT_EXC_CUDA] = {"CudaError", -1,
                        "A CUDA driver or NVRTC call failed. .code, .name and .call say which."},
    [CUKIT_EXC_OOM] = {"OutOfMemoryError", CUKIT_EXC_CUDA, "The device ran out of memory."},
    [CUKIT_EXC_NO_DEVICE] = {"NoDeviceError", CUKIT_EXC_CUDA,
                             "No CUDA driver or no usable GPU was found."},
    [CUKIT_EXC_INVALID_VALUE] = {"InvalidValueError", CUKIT_EXC_CUDA,
                                 "The driver rejected an argument."},
    [CUKIT_EXC_NOT_SUPPORTED] = {"NotSupportedError", CUKIT_EXC_CUDA,
                                 "The driver, device or toolkit cannot do this."},
    [CUKIT_EXC_LAUNCH] = {"LaunchError", CUKIT_EXC_CUDA, "The driver refused a kernel launch."},
    [CUKIT_EXC_FAULT] = {"KernelFaultError", CUKIT_EXC_CUDA,
                         "A kernel crashed; the CUDA context can no longer be used."},
    [CUKIT_EXC_COMPILE] = {"CompileError", CUKIT_EXC_CUDA,
                           "NVRTC could not compile the source. .log holds the full log."},
    [CUKIT_EXC_LINK] = {"LinkError", CUKIT_EXC_COMPILE,
                        "nvJitLink could not link the code. .log holds the linker's error log."},
};

/* Driver codes with a class of their own; the rest are plain CudaError. Sticky
 * codes leave the context unusable, so their message says to restart. */
static const struct {
    CUresult code;
    int kind;
    int sticky;
} cu_table[] = {
    {CUDA_ERROR_OUT_OF_MEMORY, CUKIT_EXC_OOM, 0},
    {CUDA_ERROR_NO_DEVICE, CUKIT_EXC_NO_DEVICE, 0},
    {CUDA_ERROR_INVALID_DEVICE, CUKIT_EXC_NO_DEVICE, 0},
    {CUDA_ERROR_STUB_LIBRARY, CUKIT_EXC_NO_DEVICE, 0},
    {CUDA_ERROR_INVALID_VALUE, CUKIT_EXC_INVALID_VALUE, 0},
    {CUDA_ERROR_NOT_SUPPORTED, CUKIT_EXC_NOT_SUPPORTED, 0},
    {CUDA_ERROR_NOT_PERMITTED, CUKIT_EXC_NOT_SUPPORTED, 0},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, CUKIT_EXC_LAUNCH, 0},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, CUKIT_EXC_LAUNCH, 0},
    {CUDA_ERROR_ILLEGAL_ADDRESS, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_LAUNCH_TIMEOUT, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_ASSERT, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_HARDWARE_STACK_ERROR, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_MISALIGNED_ADDRESS, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_INVALID_ADDRESS_SPACE, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_INVALID_PC, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_LAUNCH_FAILED, CUKIT_EXC_FAULT, 1},
};

static int
lookup(CUresult res, int *sticky)
{
    for (size_t i = 0; i < sizeof cu_table / sizeof *cu_table; i++) {
        if (cu_table[i].code == res) {
            *sticky = cu_table[i].sticky;
            return cu_table[i].kind;
        }
    }
    *sticky = 0;
    return CUKIT_EXC_CUDA;
}

int
cukit_cu_is_sticky(CUresult res)
{
    int sticky;
    lookup(res, &sticky);
    return sticky;
}

PyObject *
cukit_make_error(cukit_state *st, int kind, long code, const char *name, const char *call,
                 PyObject *message)
{
    PyObject *exc = PyObject_CallOneArg(st->exc[kind], message);
    if (exc == NULL)
        return NULL;
    PyObject *pycode = code >= 0 ? PyLong_FromLong(code) : Py_NewRef(Py_None);
    PyObject *pyname = name ? PyUnicode_FromString(name) : Py_NewRef(Py_None);
    PyObject *pycall = call ? PyUnicode_FromString(call) : Py_NewRef(Py_None);
    if (!pycode || !pyname || !pycall || PyObject_SetAttrString(exc, "code", pycode) < 0 ||
        PyObject_SetAttrString(exc, "name", pyname) < 0 ||
        PyObject_SetAttrString(exc, "call", pycall) < 0)
        Py_CLEAR(exc);
    Py_XDECREF(pycode);
    Py_XDECREF(pyname);
    Py_XDECREF(pycall);
    return exc;
}

int
cukit_raise(cukit_state *st, int kind, long code, const char *name, const char *call,
            PyObject *message)
{
    PyObject *exc = cukit_make_error(st, kind, code, name, call, message);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return -1;
}

int
cukit_check_cu(cukit_state *st, CUresult res, const char *call)
{
    if (res == CUDA_SUCCESS)
        return 0;
    const char *name = NULL, *text = NULL;
    if (cukit_api.cuGetErrorName(res, &name) != CUDA_SUCCESS || name == NULL)
        name = "CUDA_ERROR_UNRECOGNIZED";
    if (cukit_api.cuGetErrorString(res, &text) != CUDA_SUCCESS || text == NULL)
        text = "unrecognized error code";
    int sticky;
    int kind = lookup(res, &sticky);
    /* A fault leaves a GPU's context unusable; ask the driver rather than assume it
     * (the emulator's context survives its faults). */
    if (sticky && cukit_api.cuCtxSynchronize && cukit_api.cuCtxSynchronize() == CUDA_SUCCESS)
        sticky = 0;
    PyObject *msg = PyUnicode_FromFormat(
        "%s failed: %s (%d): %s%s", call, name, res, text,
        sticky ? ". A kernel faulted: the CUDA context can no longer be used and every later "
                 "CUDA call in this process will fail; restart the process (run with "
                 "CUKIT_DEBUG=1 or compute-sanitizer to find the kernel)"
               : "");
    if (msg == NULL)
        return -1;
    cukit_raise(st, kind, res, name, call, msg);
    Py_DECREF(msg);
    return -1;
}

int
cukit_check_nvrtc(cukit_state *st, nvrtcResult res, const char *call)
{
    if (res == NVRTC_SUCCESS)
        return 0;
    const char *name = cukit_api.nvrtcGetErrorString(res);
    PyObject *msg = PyUnicode_FromFormat("%s failed: %s (%d)", call, name ? name : "?", res);
    if (msg == NULL)
        return -1;
    cukit_raise(st, res == NVRTC_ERROR_OUT_OF_MEMORY ? CUKIT_EXC_OOM : CUKIT_EXC_CUDA, res, name,
                call, msg);
    Py_DECREF(msg);
    return -1;
}

int
cukit_missing_entry(cukit_state *st, const char *call)
{
    PyObject *msg = PyUnicode_FromFormat(
        "this CUDA driver has no %s; update the NVIDIA driver to use this feature", call);
    if (msg == NULL)
        return -1;
    cukit_raise(st, CUKIT_EXC_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
                call, msg);
    Py_DECREF(msg);
    return -1;
}

int
cukit_errors_setup(PyObject *module, cukit_state *st)
{
    for (int i = 0; i < CUKIT_EXC_COUNT; i++) {
        PyObject *bases;
        if (classes[i].base < 0)
            bases = PyTuple_Pack(1, PyExc_RuntimeError);
        else if (i == CUKIT_EXC_OOM)
            bases = PyTuple_Pack(2, st->exc[classes[i].base], PyExc_MemoryError);
        else if (i == CUKIT_EXC_INVALID_VALUE)
            bases = PyTuple_Pack(2, st->exc[classes[i].base], PyExc_ValueError);
        else
            bases = PyTuple_Pack(1, st->exc[classes[i].base]);
        if (bases == NULL)
            return -1;
        /* Class attributes give .code/.name/.call to instances raised without them. */
        PyObject *dict = Py_BuildValue("{sOsOsOsO}", "code", Py_None, "name", Py_None, "call",
                                       Py_None, "log", Py_None);
        if (dict == NULL) {
            Py_DECREF(bases);
            return -1;
        }
        char qualname[64];
        PyOS_snprintf(qualname, sizeof qualname, "cukit.%s", classes[i].name);
        st->exc[i] = PyErr_NewExceptionWithDoc(qualname, classes[i].doc, bases, dict);
        Py_DECREF(bases);
        Py_DECREF(dict);
        if (st->exc[i] == NULL || PyModule_AddObjectRef(module, classes[i].name, st->exc[i]) < 0)
            return -1;
    }
    return 0;
}
