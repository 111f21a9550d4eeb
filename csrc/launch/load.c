/* load.c - Module.load: a cubin, fatbin or PTX from a file or bytes, checked and loaded */
#include "launch/launch.h"

#include <stdio.h>
#include <string.h>

/* The sm number a cubin was built for, from its ELF header; 0 when unknown.
 * CUDA's ELF ABI v8 keeps it in e_flags bits 8-15, older ones in bits 0-7. */
static int
cubin_sm(const unsigned char *data, size_t n)
{
    if (n < 52 || data[4] != 2 /* ELFCLASS64 */)
        return 0;
    unsigned int flags = data[48] | data[49] << 8 | data[50] << 16 | (unsigned int)data[51] << 24;
    int sm = data[8] >= 8 ? (int)(flags >> 8 & 0xff) : (int)(flags & 0xff);
    return sm >= 20 ? sm : 0;
}

/* "compute_90" from a PTX's .target line into buf; "ptx" when there is none. */
static void
ptx_target(const char *ptx, char *buf, size_t n)
{
    const char *t = strstr(ptx, ".target");
    int v = 0;
    if (t && sscanf(t, ".target sm_%d", &v) == 1 && v > 0)
        PyOS_snprintf(buf, n, "compute_%d", v);
    else
        PyOS_snprintf(buf, n, "ptx");
}

/* After a failed load of a cubin for another architecture, say which two differ.
 * Keeps the driver's error (class and code) and adds to its message. */
static void
explain_wrong_arch(cukit_state *st, cukit_Device *dev, int sm)
{
    PyObject *exc = PyErr_GetRaisedException();
    PyObject *code = exc ? PyObject_GetAttrString(exc, "code") : NULL;
    long c = code && PyLong_Check(code) ? PyLong_AsLong(code) : -1;
    Py_XDECREF(code);
    PyErr_Clear();
    if (c != CUDA_ERROR_NO_BINARY_FOR_GPU && c != CUDA_ERROR_INVALID_IMAGE) {
        PyErr_SetRaisedException(exc);
        return;
    }
    PyObject *msg = PyUnicode_FromFormat(
        "%S; the cubin holds code for sm_%d and device %d is sm_%d%d, which cannot run it: "
        "compile for sm_%d%d, or load PTX or a fatbin that has code for it",
        exc, sm, dev->ordinal, dev->cc_major, dev->cc_minor, dev->cc_major, dev->cc_minor);
    if (msg == NULL) {
        PyErr_SetRaisedException(exc);
        return;
    }
    Py_DECREF(exc);
    cukit_raise(st, CUKIT_EXC_CUDA, c, c == CUDA_ERROR_INVALID_IMAGE ? "CUDA_ERROR_INVALID_IMAGE"
                                                                     : "CUDA_ERROR_NO_BINARY_FOR_GPU",
                "cuModuleLoadData", msg);
    Py_DECREF(msg);
}

PyObject *
cukit_module_load(PyObject *cls, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path_or_bytes", "device", NULL};
    PyObject *source, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:load", kwlist, &source, &device))
        return NULL;
    cukit_state *st = cukit_state_of_type((PyTypeObject *)cls);
    PyObject *image = NULL, *out = NULL;
    if (PyUnicode_Check(source) && PyUnicode_FindChar(source, '\n', 0, PyUnicode_GET_LENGTH(source), 1) >= 0) {
        PyErr_SetString(PyExc_ValueError,
                        "Module.load takes a path or bytes, and this str has a line break: "
                        "to load PTX text, pass its bytes: Module.load(ptx.encode())");
        return NULL;
    }
    PyObject *label = NULL; /* what the user gave, for messages */
    if (PyUnicode_Check(source) || PyObject_HasAttrString(source, "__fspath__")) {
        image = cukit_read_file(source, -1);
        label = image ? PyObject_Repr(source) : NULL;
    }
    else if (PyObject_CheckBuffer(source)) {
        image = PyBytes_FromObject(source);
        label = image ? PyUnicode_FromFormat("the %s given", Py_TYPE(source)->tp_name) : NULL;
    }
    else {
        PyErr_Format(PyExc_TypeError,
                     "Module.load takes the bytes of a cubin, fatbin or PTX, or the path of "
                     "one, not %s", Py_TYPE(source)->tp_name);
    }
    if (label == NULL) {
        Py_XDECREF(image);
        return NULL;
    }

    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(image);
    size_t n = (size_t)PyBytes_GET_SIZE(image);
    int kind = cukit_image_kind(data, n);
    char why[512];
    if (cukit_image_problem(data, n, why, sizeof why)) {
        PyErr_Format(PyExc_ValueError, "Module.load: %U cannot be loaded: %s", label, why);
        goto done;
    }
    if (kind == NVJITLINK_INPUT_NONE) {
        PyObject *head = PyBytes_FromStringAndSize((const char *)data, n < 8 ? (Py_ssize_t)n : 8);
        if (head)
            PyErr_Format(PyExc_ValueError,
                         "Module.load: %U is not a cubin, fatbin or PTX: it starts with %R (a "
                         "cubin starts with b'\\x7fELF', a fatbin with 0xBA55ED50, PTX with "
                         "'//' or '.version')",
                         label, head);
        Py_XDECREF(head);
        goto done;
    }
    if (kind != NVJITLINK_INPUT_CUBIN && kind != NVJITLINK_INPUT_FATBIN &&
        kind != NVJITLINK_INPUT_PTX) {
        PyErr_Format(PyExc_ValueError,
                     "Module.load: %U is a %s, which the driver cannot load; link it into "
                     "code it can: cukit.link([...])",
                     label, cukit_image_kind_name(kind));
        goto done;
    }
    /* cuModuleLoadData reads PTX as a C string. */
    if (kind == NVJITLINK_INPUT_PTX && data[n - 1] != '\0') {
        PyObject *z = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n + 1);
        if (z == NULL)
            goto done;
        memcpy(PyBytes_AS_STRING(z), data, n);
        PyBytes_AS_STRING(z)[n] = '\0';
        Py_SETREF(image, z);
        data = (const unsigned char *)PyBytes_AS_STRING(image);
    }

    cukit_Device *dev = cukit_device_arg(st, device);
    if (dev == NULL)
        goto done;
    char arch[32];
    int sm = kind == NVJITLINK_INPUT_CUBIN ? cubin_sm(data, n) : 0;
    if (sm)
        PyOS_snprintf(arch, sizeof arch, "sm_%d", sm);
    else if (kind == NVJITLINK_INPUT_PTX)
        ptx_target((const char *)data, arch, sizeof arch);
    else /* a fatbin or a cubin of unknown layout: the driver picks the device's code */
        cukit_device_arch(dev, arch, sizeof arch);
    /* An image from outside is loaded by the driver in a worker first (the emulator's
     * loader is cukit's own code, which rejects damaged images itself). */
    const char *driver = cukit_driver_realpath();
    if (driver && cukit_image_check_enabled()) {
        int version = 0;
        char identity[400];
        if (cukit_api.cuDriverGetVersion(&version) != CUDA_SUCCESS)
            version = 0;
        PyOS_snprintf(identity, sizeof identity, "driver %d; device %d: %s, sm_%d%d", version,
                      dev->ordinal, dev->name, dev->cc_major, dev->cc_minor);
        if (cukit_image_check(st, data, kind == NVJITLINK_INPUT_PTX ? strlen((const char *)data) + 1 : n,
                              driver, dev->ordinal, identity, label) < 0)
            goto done;
    }
    /* PTX says each kernel's parameter types; a cubin's kernels get theirs from their
     * mangled names or sizes when looked up. */
    PyObject *sigs = NULL;
    if (kind == NVJITLINK_INPUT_PTX &&
        (sigs = cukit_ptx_signatures(st, (const char *)data, strlen((const char *)data))) == NULL)
        goto done;
    out = (PyObject *)cukit_module_create(st, dev, data, sigs, NULL, arch);
    Py_XDECREF(sigs);
    if (out)
        ((cukit_Module *)out)->image = Py_NewRef(image); /* for reproducers (cukit.debug) */
    int cc = dev->cc_major * 10 + dev->cc_minor;
    if (out == NULL && sm && !(sm / 10 == cc / 10 && sm <= cc))
        explain_wrong_arch(st, dev, sm);
done:
    Py_DECREF(image);
    Py_DECREF(label);
    return out;
}
