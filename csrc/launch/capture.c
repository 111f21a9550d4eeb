/* capture.c - recording launches for reproducers (cukit.debug.capture): the C side
 *
 * The launch path calls cukit_capture_record only when st->capture is set, so a
 * program without a capture pays one predictable branch and nothing else. The
 * recorder is a Python object (cukit.debug's): reading buffers, keeping the ring and
 * writing folders run once per recorded launch or once per fault, not on the hot
 * path, and are simplest where the folder format is also read back (replay). */
#include "launch/launch.h"

#include <string.h>

/* recorder.record(kernel, grid, block, shared, stream, args, packed): the launch about
 * to run, before it runs. 0 / -1. */
static int
record(cukit_Kernel *k, const cukit_launch_cfg *cfg, PyObject *const *args,
       const unsigned char *buf)
{
    const cukit_Signature *sig = k->sig;
    PyObject *argt = PyTuple_New(sig->nparams);
    if (argt == NULL)
        return -1;
    for (int i = 0; i < sig->nparams; i++)
        PyTuple_SET_ITEM(argt, i, Py_NewRef(args[i]));
    PyObject *r = PyObject_CallMethod(
        k->st->capture, "record", "O(III)(III)IKNy#", (PyObject *)k, cfg->grid[0], cfg->grid[1],
        cfg->grid[2], cfg->block[0], cfg->block[1], cfg->block[2], cfg->shared,
        (unsigned long long)(uintptr_t)cfg->stream, argt, (const char *)buf,
        (Py_ssize_t)sig->arg_bytes);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

int
cukit_capture_launch(cukit_Kernel *k, const cukit_launch_cfg *cfg, PyObject *const *args,
                     const unsigned char *buf, void **ptrs)
{
    /* A launch into a graph being captured does not run now, and waiting for the work
     * before it (which the recorder does) would break the stream capture. */
    if (cukit_capture_active(k->st))
        return cukit_kernel_launch(k, cfg, ptrs);
    PyObject *recorder = Py_NewRef(k->st->capture); /* the calls may end the capture */
    int rc = -1;
    if (record(k, cfg, args, buf) < 0 || cukit_kernel_launch(k, cfg, ptrs) < 0)
        goto done;
    /* Its outputs now, before anything else (a copy, the array math) changes them; a
     * fault is raised here, by this launch, with its reproducer named. */
    PyObject *r = PyObject_CallMethod(recorder, "after", NULL);
    Py_XDECREF(r);
    rc = r == NULL ? -1 : 0;
done:
    Py_DECREF(recorder);
    return rc;
}

/* _capture_set(recorder or None) -> the previous recorder or None. */
static PyObject *
mod_capture_set(PyObject *m, PyObject *arg)
{
    cukit_state *st = PyModule_GetState(m);
    PyObject *was = st->capture ? st->capture : Py_None;
    st->capture = arg == Py_None ? NULL : Py_NewRef(arg);
    return was; /* the reference the state held */
}

/* _capture_kernel_info(kernel) -> dict of what a reproducer needs to rebuild it. */
static PyObject *
mod_capture_kernel_info(PyObject *m, PyObject *arg)
{
    cukit_state *st = PyModule_GetState(m);
    if (!Py_IS_TYPE(arg, st->launch->KernelType)) {
        PyErr_Format(PyExc_TypeError, "expected a cukit.Kernel, got %s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    cukit_Kernel *k = (cukit_Kernel *)arg;
    cukit_Module *mod = k->module;
    PyObject *name = PyUnicode_FromString(k->sig->name);
    PyObject *symbol = name ? PyDict_GetItemWithError(mod->symbols, name) : NULL;
    if (name == NULL || (symbol == NULL && PyErr_Occurred())) {
        Py_XDECREF(name);
        return NULL;
    }
    PyObject *text = cukit_signature_str(k->sig);
    PyObject *out = text ? Py_BuildValue("{sOsOsOsOsOsOsi}", "name", name, "symbol",
                                         symbol ? symbol : name, "signature", text, "image",
                                         mod->image ? mod->image : Py_None, "program",
                                         mod->origin ? mod->origin : Py_None, "arch", mod->arch,
                                         "strict", k->strict)
                         : NULL;
    Py_DECREF(name);
    Py_XDECREF(text);
    return out;
}

/* _capture_read(address, nbytes) -> bytes: device memory, after the work before it. */
static PyObject *
mod_capture_read(PyObject *m, PyObject *args)
{
    cukit_state *st = PyModule_GetState(m);
    unsigned long long addr;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "Kn:_capture_read", &addr, &n))
        return NULL;
    if (n < 0)
        return PyErr_Format(PyExc_ValueError, "nbytes must be >= 0, got %zd", n);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n);
    if (out == NULL || n == 0)
        return out;
    if (cukit_copy_dtoh(st, PyBytes_AS_STRING(out), (CUdeviceptr)addr, (size_t)n, NULL, 1) < 0)
        Py_CLEAR(out);
    return out;
}

static PyMethodDef capture_functions[] = {
    {"_capture_set", mod_capture_set, METH_O,
     "Internal (cukit.debug): set the launch recorder, or None; returns the previous one."},
    {"_capture_kernel_info", mod_capture_kernel_info, METH_O,
     "Internal (cukit.debug): name, symbol, signature, loaded image and Program of a kernel."},
    {"_capture_read", mod_capture_read, METH_VARARGS,
     "Internal (cukit.debug): _capture_read(address, nbytes) -> bytes of device memory."},
    {NULL},
};

int
cukit_capture_setup(PyObject *module, cukit_state *st)
{
    st->capture = NULL;
    return PyModule_AddFunctions(module, capture_functions);
}
