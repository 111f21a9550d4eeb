/* diagnostics.c - NVRTC's log: read after a compile, shown as file:line:col with a caret */
#include "compile/program.h"

#include <string.h>

int
cukit_program_read_log(cukit_Program *self, nvrtcProgram prog)
{
    size_t n = 0;
    if (NVRTC_CALL(self->st, nvrtcGetProgramLogSize, (prog, &n)) < 0)
        return -1;
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (bytes == NULL)
        return -1;
    if (NVRTC_CALL(self->st, nvrtcGetProgramLog, (prog, PyBytes_AS_STRING(bytes))) < 0) {
        Py_DECREF(bytes);
        return -1;
    }
    PyObject *log = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(bytes), (Py_ssize_t)strlen(PyBytes_AS_STRING(bytes)),
                                         "replace");
    Py_DECREF(bytes);
    if (log == NULL)
        return -1;
    Py_SETREF(self->log, log);
    return 0;
}

/* Rewrite NVRTC's log the way C compilers print diagnostics:
 *     kernel.cu:3:12: error: identifier "x" is undefined
 *         y[i] = x * 2;
 *                ^
 * NVRTC gives "file(line): error: ..." with the source line and a caret under it,
 * each indented by two spaces; the column is where the caret is. New ref or NULL. */
static PyObject *
format_log(PyObject *log)
{
    Py_ssize_t n;
    const char *text = PyUnicode_AsUTF8AndSize(log, &n);
    if (text == NULL)
        return NULL;
    PyObject *lines = PyUnicode_Splitlines(log, 0), *out = PyList_New(0);
    if (lines == NULL || out == NULL)
        goto error;
    Py_ssize_t count = PyList_GET_SIZE(lines);
    for (Py_ssize_t i = 0; i < count; i++) {
        const char *line = PyUnicode_AsUTF8(PyList_GET_ITEM(lines, i));
        if (line == NULL)
            goto error;
        const char *open = strchr(line, '('), *close = open ? strstr(open, "): ") : NULL;
        int lineno = 0, digits = 0;
        for (const char *q = open ? open + 1 : NULL; q && q < close && *q >= '0' && *q <= '9' &&
                                                     digits < 9; q++, digits++)
            lineno = lineno * 10 + (*q - '0');
        PyObject *piece;
        if (open == NULL || open == line || close == NULL || digits == 0 ||
            open + 1 + digits != close) {
            piece = PyUnicode_FromFormat("%s\n", line);
        }
        else {
            /* The source line and the caret under it, when NVRTC shows them. */
            const char *src = NULL, *caret = NULL;
            if (i + 2 < count) {
                src = PyUnicode_AsUTF8(PyList_GET_ITEM(lines, i + 1));
                caret = PyUnicode_AsUTF8(PyList_GET_ITEM(lines, i + 2));
                if (src == NULL || caret == NULL)
                    goto error;
                const char *hat = strchr(caret, '^');
                if (strncmp(src, "  ", 2) != 0 || strncmp(caret, "  ", 2) != 0 || hat == NULL ||
                    hat[1] != '\0' || strspn(caret, " \t") != (size_t)(hat - caret))
                    src = caret = NULL;
            }
            size_t cap = strlen(line) + (src ? strlen(src) + strlen(caret) : 0) + 64;
            char *buf = PyMem_Malloc(cap);
            if (buf == NULL) {
                PyErr_NoMemory();
                goto error;
            }
            if (src) {
                PyOS_snprintf(buf, cap, "%.*s:%d:%d:%s\n%s\n%s\n", (int)(open - line), line, lineno,
                              (int)(strchr(caret, '^') - caret - 2 + 1), close + 2, src + 2,
                              caret + 2);
                i += 2;
            }
            else {
                PyOS_snprintf(buf, cap, "%.*s:%d:%s\n", (int)(open - line), line, lineno, close + 2);
            }
            piece = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)strlen(buf), "replace");
            PyMem_Free(buf);
        }
        if (piece == NULL || PyList_Append(out, piece) < 0) {
            Py_XDECREF(piece);
            goto error;
        }
        Py_DECREF(piece);
    }
    PyObject *empty = PyUnicode_FromString("");
    PyObject *joined = empty ? PyUnicode_Join(empty, out) : NULL;
    Py_XDECREF(empty);
    Py_DECREF(lines);
    Py_DECREF(out);
    return joined;
error:
    Py_XDECREF(lines);
    Py_XDECREF(out);
    return NULL;
}

int
cukit_program_compile_error(cukit_Program *self, const char *arch)
{
    PyObject *pretty = format_log(self->log);
    if (pretty == NULL)
        return -1;
    PyObject *msg = PyUnicode_FromFormat("%U did not compile for %s:\n%U", self->name, arch,
                                         pretty);
    Py_DECREF(pretty);
    if (msg == NULL)
        return -1;
    PyObject *exc = cukit_make_error(self->st, CUKIT_EXC_COMPILE, NVRTC_ERROR_COMPILATION,
                                     "NVRTC_ERROR_COMPILATION", "nvrtcCompileProgram", msg);
    Py_DECREF(msg);
    if (exc == NULL)
        return -1;
    if (PyObject_SetAttrString(exc, "log", self->log) == 0)
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return -1;
}
