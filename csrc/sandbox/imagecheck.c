/* imagecheck.c - an image cukit did not make is first loaded by the driver in a worker process, so a driver crash or hang costs that process */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* The driver trusts an image's inner sizes and offsets; a damaged cubin or fatbin
 * has made it crash (SIGSEGV) or spin forever, in the process that called
 * cuModuleLoadData. The static checks in image.c catch the layouts cukit can read;
 * what lies deeper (the code sections' own encodings) only the driver reads. So an
 * image from outside is loaded once by a worker process first. Its verdict is
 * remembered by the image's digest, the driver and the device: in this process,
 * and as a marker in the cache folder, so it is paid once per image per machine. */

#define DEFAULT_TIMEOUT 60.0

int
cukit_image_check_enabled(void)
{
    const char *e = getenv("CUKIT_IMAGE_CHECK");
    return !(e && (strcmp(e, "0") == 0 || strcmp(e, "off") == 0 || strcmp(e, "false") == 0 ||
                   strcmp(e, "no") == 0));
}

/* CUKIT_IMAGE_CHECK_TIMEOUT in seconds (default 60). 0, or -1 with ValueError. */
static int
timeout_seconds(double *out)
{
    const char *e = getenv("CUKIT_IMAGE_CHECK_TIMEOUT");
    *out = DEFAULT_TIMEOUT;
    if (e == NULL || e[0] == '\0')
        return 0;
    char *end = NULL;
    double v = strtod(e, &end);
    if (end == e || *end != '\0' || !(v > 0) || v > 1e6) {
        PyErr_Format(PyExc_ValueError,
                     "CUKIT_IMAGE_CHECK_TIMEOUT is '%.100s': it must be a number of seconds above "
                     "0 (the default is 60); set it to one, or unset it", e);
        return -1;
    }
    *out = v;
    return 0;
}

/* The verdict's key: the image, the driver and the device. */
static void
verdict_key(const unsigned char *data, size_t n, const char *driver, const char *identity,
            char hex[65])
{
    cukit_sha256 c;
    unsigned char d[32];
    cukit_sha256_init(&c);
    cukit_sha256_field(&c, "cukit image check 1", 19);
    cukit_sha256_field(&c, driver, strlen(driver));
    cukit_sha256_field(&c, identity, strlen(identity));
    cukit_sha256_update(&c, data, n);
    cukit_sha256_final(&c, d);
    cukit_sha256_hex(d, hex);
}

static const char *
signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGKILL: return "SIGKILL";
    default: return "a signal";
    }
}

int
cukit_image_check(cukit_state *st, const unsigned char *data, size_t n, const char *driver,
                  int ordinal, const char *identity, PyObject *label)
{
    char hex[65];
    verdict_key(data, n, driver, identity, hex);
    PyObject *key = PyUnicode_FromString(hex);
    if (key == NULL)
        return -1;
    int rc = -1, known = PySet_Contains(st->sandbox->image_verdicts, key);
    if (known != 0) {
        rc = known > 0 ? 0 : -1;
        goto done;
    }
    if (cukit_cache_marker_exists(hex)) {
        rc = PySet_Add(st->sandbox->image_verdicts, key);
        goto done;
    }
    double timeout;
    if (timeout_seconds(&timeout) < 0)
        goto done;
    cukit_image_check_result res;
    int ran;
    st->sandbox->image_checks++;
    Py_BEGIN_ALLOW_THREADS
    ran = cukit_image_check_run(driver, ordinal, data, n, timeout, &res);
    Py_END_ALLOW_THREADS
    char secs[32];
    PyOS_snprintf(secs, sizeof secs, "%.0f", timeout);
    if (ran == 0 && res.status >= 0) {
        /* The driver answered: it loaded the image or refused it cleanly, which the
         * load in this process reports again. A failure before the load (a device
         * that takes one process at a time refuses a second context) is no verdict:
         * the image is loaded here unchecked. */
        if (res.status == 0 || strcmp(res.call, "cuModuleLoadData") == 0) {
            char line[128];
            PyOS_snprintf(line, sizeof line, "cukit image check 1: loaded safely (%s)\n",
                          res.status ? res.name : "CUDA_SUCCESS");
            cukit_cache_marker_write(hex, line);
            if (PySet_Add(st->sandbox->image_verdicts, key) < 0)
                goto done;
        }
        rc = 0;
    }
    else if (ran == 0)
        PyErr_Format(PyExc_RuntimeError,
                     "Module.load: %U could not be checked in a separate process: the worker "
                     "could not use the CUDA driver at '%s' (%s: %s); set CUKIT_IMAGE_CHECK=0 "
                     "to load without the check",
                     label, driver, res.call, res.name);
    else if (res.crashed && res.signal)
        PyErr_Format(PyExc_ValueError,
                     "Module.load: %U cannot be loaded: the CUDA driver crashed (%s) while "
                     "loading it in a separate process (the image is damaged); rebuild it",
                     label, signal_name(res.signal));
    else if (res.crashed)
        PyErr_Format(PyExc_ValueError,
                     "Module.load: %U cannot be loaded: the CUDA driver ended the separate "
                     "process that was loading it (exit status %d) before answering (the image "
                     "is damaged); rebuild it",
                     label, res.exit_status);
    else if (res.hung)
        PyErr_Format(PyExc_ValueError,
                     "Module.load: %U cannot be loaded: the CUDA driver did not finish loading "
                     "it within %s s in a separate process, which was stopped (the image is "
                     "damaged, or the driver is stuck); rebuild it, or give a large image more "
                     "time with CUKIT_IMAGE_CHECK_TIMEOUT",
                     label, secs);
    else if (res.no_program)
        PyErr_Format(PyExc_RuntimeError,
                     "Module.load: %U could not be checked in a separate process: the worker "
                     "program " CUKIT_WORKER_NAME " is missing beside cukit's extension module "
                     "(a broken install); reinstall cukit, or set CUKIT_IMAGE_CHECK=0 to load "
                     "without the check",
                     label);
    else {
        errno = res.spawn_errno;
        PyErr_SetFromErrno(PyExc_OSError);
    }
done:
    Py_DECREF(key);
    return rc;
}

/* _image_checks() -> int: worker processes started to check images, for tests. */
static PyObject *
mod_image_checks(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSsize_t(((cukit_state *)PyModule_GetState(m))->sandbox->image_checks);
}

/* _image_check(image, driver, ordinal, identity): the check Module.load makes, with
 * the driver library and the verdict's identity given; for tests. */
static PyObject *
mod_image_check(PyObject *m, PyObject *args)
{
    Py_buffer image;
    const char *driver, *identity;
    int ordinal;
    if (!PyArg_ParseTuple(args, "y*sis:_image_check", &image, &driver, &ordinal, &identity))
        return NULL;
    PyObject *label = PyUnicode_FromString("the bytes given");
    int rc = label ? cukit_image_check(((cukit_state *)PyModule_GetState(m)), image.buf, (size_t)image.len,
                                       driver, ordinal, identity, label) : -1;
    Py_XDECREF(label);
    PyBuffer_Release(&image);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef image_check_functions[] = {
    {"_image_checks", mod_image_checks, METH_NOARGS,
     "_image_checks() -> int: how many worker processes have checked an image (private)."},
    {"_image_check", mod_image_check, METH_VARARGS,
     "_image_check(image, driver, ordinal, identity): Module.load's out-of-process check "
     "with a given driver library (private, for tests)."},
    {NULL},
};

int
cukit_image_check_setup(PyObject *module, cukit_state *st)
{
    st->sandbox->image_verdicts = PySet_New(NULL);
    if (st->sandbox->image_verdicts == NULL)
        return -1;
    return PyModule_AddFunctions(module, image_check_functions);
}
