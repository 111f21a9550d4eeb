/* device_files.c - the CUDA C of cukit's built-in kernels (csrc/<layer>/kernels/), carried into the module as text by the build */
#include "common/common.h"

#include <string.h>

typedef struct {
    const char *name; /* the file's path under csrc/, e.g. "compute/kernels/preamble.cuh" */
    const char *text; /* its text, its local includes written in place */
} device_file;

static const device_file files[] = {
#include "device_files.inc" /* written by setup.py at build time */
    {NULL, NULL},
};

const char *
cukit_device_file(const char *name)
{
    for (const device_file *f = files; f->name; f++)
        if (strcmp(f->name, name) == 0)
            return f->text;
    PyErr_Format(PyExc_SystemError,
                 "cukit was built without its device file '%s' (csrc/%s): rebuild it from a "
                 "complete checkout (pip install .)", name, name);
    return NULL;
}

PyObject *
cukit_device_files(void)
{
    PyObject *out = PyDict_New();
    for (const device_file *f = files; out && f->name; f++) {
        PyObject *text = PyUnicode_FromString(f->text);
        if (text == NULL || PyDict_SetItemString(out, f->name, text) < 0)
            Py_CLEAR(out);
        Py_XDECREF(text);
    }
    return out;
}
