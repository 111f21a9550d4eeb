/* diagnostics.c - NVRTC's log shown as file:line:col with a caret; a compiler crash explained */
#include "compile/program.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
cukit_program_set_log(cukit_Program *self, const char *log, size_t n)
{
    PyObject *text = PyUnicode_DecodeUTF8(log, (Py_ssize_t)n, "replace");
    if (text == NULL)
        return -1;
    Py_SETREF(self->log, text);
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
    const char *log = PyUnicode_AsUTF8(self->log), *src = PyUnicode_AsUTF8(self->source);
    PyObject *hints = log && src ? cukit_compile_hints(log, src) : NULL;
    PyObject *msg = hints ? PyUnicode_FromFormat("%U did not compile for %s:\n%U%U", self->name,
                                                 arch, pretty, hints)
                          : NULL;
    Py_DECREF(pretty);
    Py_XDECREF(hints);
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

/* "SIGSEGV" for the signals a crashing compiler dies of. Static storage. */
static const char *
signal_name(int sig)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGABRT, "SIGABRT"},
                 {SIGILL, "SIGILL"},   {SIGFPE, "SIGFPE"}, {SIGKILL, "SIGKILL"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].sig == sig)
            return names[i].name;
    return "a signal";
}

/* Save the source for a bug report: a new file in the temporary folder. Its path
 * into out, or "" when it could not be written. */
static void
save_source(PyObject *source, char *out, size_t n)
{
    const char *tmp = getenv("TMPDIR");
    Py_ssize_t len;
    const char *src = PyUnicode_AsUTF8AndSize(source, &len);
    out[0] = '\0';
    if (src == NULL) {
        PyErr_Clear();
        return;
    }
    if (snprintf(out, n, "%s/cukit-crash-XXXXXX.cu", tmp && tmp[0] ? tmp : "/tmp") >= (int)n) {
        out[0] = '\0';
        return;
    }
    int fd = mkstemps(out, 3);
    if (fd < 0) {
        out[0] = '\0';
        return;
    }
    FILE *f = fdopen(fd, "w");
    int ok = f && fwrite(src, 1, (size_t)len, f) == (size_t)len;
    if (f == NULL)
        close(fd);
    if ((f && fclose(f) != 0) || !ok) {
        unlink(out);
        out[0] = '\0';
    }
}

int
cukit_program_crash_error(cukit_Program *self, const char *arch, const cukit_compile_request *req,
                          const cukit_compile_result *res)
{
    if (res->spawn_errno) {
        errno = res->spawn_errno;
        PyErr_SetFromErrno(PyExc_OSError);
        PyObject *cause = PyErr_GetRaisedException();
        PyErr_Format(PyExc_OSError,
                     "cukit could not start a process to compile %U in (%S); free some memory or "
                     "processes, or set CUKIT_COMPILE_IN_PROCESS=1 to compile in this process",
                     self->name, cause);
        Py_DECREF(cause);
        return -1;
    }
    char how[64], path[4096];
    if (res->signal)
        PyOS_snprintf(how, sizeof how, "died of signal %d (%s)", res->signal,
                      signal_name(res->signal));
    else
        PyOS_snprintf(how, sizeof how, "exited with status %d", res->exit_status);
    save_source(self->source, path, sizeof path);
    int major = 0, minor = 0;
    cukit_api.nvrtcVersion(&major, &minor);
    const char *method = req->kind == CUKIT_OUT_CUBIN ? "cubin" : "ptx";
    PyObject *names = PyObject_Repr(self->name_expressions);
    PyObject *file = PyUnicode_FromString(path[0] ? path : "kernel.cu");
    PyObject *msg = names == NULL || file == NULL ? NULL : PyUnicode_FromFormat(
        "the compiler crashed: NVRTC %d.%d %s while compiling %U for %s (the compile ran in a "
        "separate process, so this one is unharmed). This is a bug in NVRTC, usually met on "
        "malformed code (look for a syntax error near a template or a name expression). "
        "%s%s%sTo reproduce it in a process of its own:\n"
        "    CUKIT_COMPILE_IN_PROCESS=1 python -c \"import cukit; cukit.Program(open(%R).read(), "
        "name=%R, options=%R, name_expressions=%S).%s(arch='%s')\"",
        major, minor, how, self->name, arch, path[0] ? "The source is saved in " : "",
        path, path[0] ? ". " : "", file,
        self->name, self->options, names, method, arch);
    Py_XDECREF(names);
    Py_XDECREF(file);
    if (msg == NULL)
        return -1;
    PyObject *exc = cukit_make_error(self->st, CUKIT_EXC_COMPILE, -1, NULL, "nvrtcCompileProgram", msg);
    Py_DECREF(msg);
    if (exc == NULL)
        return -1;
    PyObject *empty = PyUnicode_FromString("");
    if (empty && PyObject_SetAttrString(exc, "log", empty) == 0)
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_XDECREF(empty);
    Py_DECREF(exc);
    return -1;
}
