/* errors.c - cukit's exception classes, built from one table, and raising them with .code/.name/.call */
#include "common/common.h"

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
    [CUKIT_EXC_NCCL] = {"NcclError", CUKIT_EXC_CUDA,
                        "An NCCL call failed, or NCCL reported an asynchronous error (a peer "
                        "that died, a network failure). .last_error holds ncclGetLastError."},
    [CUKIT_EXC_NCCL_TIMEOUT] = {"NcclTimeoutError", CUKIT_EXC_NCCL,
                                "An NCCL wait outran the communicator's timeout; the "
                                "communicator was aborted."},
};

/* The kinds a launch can cause: a fault, a refused launch, a driver error in general. */
static int
code_kind_is_not_launch(int kind)
{
    return kind != CUKIT_EXC_FAULT && kind != CUKIT_EXC_LAUNCH && kind != CUKIT_EXC_CUDA;
}

/* With a capture on (cukit.debug), a driver error after a launch writes the launches
 * that may have caused it to a reproducer folder; the recorder returns the message
 * naming it (a new ref), or None. Its own failure must not hide the driver's error. */
static PyObject *
captured_message(cukit_state *st, int kind, long code, PyObject *message)
{
    if (st->capture == NULL || code < 0 || code_kind_is_not_launch(kind))
        return Py_NewRef(message);
    PyObject *saved = PyErr_GetRaisedException();
    PyObject *text = PyObject_CallMethod(st->capture, "on_error", "O", message);
    if (text == NULL)
        PyErr_WriteUnraisable(st->capture);
    PyErr_SetRaisedException(saved);
    if (text == NULL || !PyUnicode_Check(text)) {
        Py_XDECREF(text);
        return Py_NewRef(message);
    }
    return text;
}

PyObject *
cukit_make_error(cukit_state *st, int kind, long code, const char *name, const char *call,
                 PyObject *message)
{
    PyObject *text = captured_message(st, kind, code, message);
    PyObject *exc = PyObject_CallOneArg(st->exc[kind], text);
    Py_DECREF(text);
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
        else if (i == CUKIT_EXC_NCCL_TIMEOUT)
            bases = PyTuple_Pack(2, st->exc[classes[i].base], PyExc_TimeoutError);
        else
            bases = PyTuple_Pack(1, st->exc[classes[i].base]);
        if (bases == NULL)
            return -1;
        /* Class attributes give .code/.name/.call to instances raised without them. */
        PyObject *dict = Py_BuildValue("{sOsOsOsOsO}", "code", Py_None, "name", Py_None, "call",
                                       Py_None, "log", Py_None, "last_error", Py_None);
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
