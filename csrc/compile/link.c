/* link.c - cukit.link(): Programs, images and files linked into one module by nvJitLink */
#include "compile/compile.h"

#include <string.h>

/* nvJitLinkResult names, by value (nvJitLink.h, CUDA 13.0). */
static const char *const result_names[] = {
    "NVJITLINK_SUCCESS",
    "NVJITLINK_ERROR_UNRECOGNIZED_OPTION",
    "NVJITLINK_ERROR_MISSING_ARCH",
    "NVJITLINK_ERROR_INVALID_INPUT",
    "NVJITLINK_ERROR_PTX_COMPILE",
    "NVJITLINK_ERROR_NVVM_COMPILE",
    "NVJITLINK_ERROR_INTERNAL",
    "NVJITLINK_ERROR_THREADPOOL",
    "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
    "NVJITLINK_ERROR_FINALIZE",
    "NVJITLINK_ERROR_NULL_INPUT",
    "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
    "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE",
    "NVJITLINK_ERROR_ARCH_MISMATCH",
    "NVJITLINK_ERROR_OUTDATED_LIBRARY",
    "NVJITLINK_ERROR_MISSING_FATBIN",
    "NVJITLINK_ERROR_UNRECOGNIZED_ARCH",
    "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
    "NVJITLINK_ERROR_LTO_NOT_ENABLED",
};

/* What a user can do about a result, where the log alone does not say. */
static const struct {
    int code;
    const char *hint;
} hints[] = {
    {18 /* LTO_NOT_ENABLED */, "an input holds LTO-IR: pass lto=True"},
    {14 /* OUTDATED_LIBRARY */,
     "an input was made by a newer CUDA toolkit than this nvJitLink; use the nvJitLink of "
     "that toolkit (CUKIT_NVJITLINK) or rebuild the input"},
    {13 /* ARCH_MISMATCH */, "the inputs were built for different architectures"},
};

/* What link() returns. */
enum { OUT_MODULE, OUT_CUBIN, OUT_PTX };
static const struct {
    const char *name;
    int out;
} outputs[] = {{"module", OUT_MODULE}, {"cubin", OUT_CUBIN}, {"ptx", OUT_PTX}};

static const char *
result_name(nvJitLinkResult res)
{
    return res >= 0 && res < (int)(sizeof result_names / sizeof *result_names)
               ? result_names[res] : "NVJITLINK_ERROR_UNKNOWN";
}

/* One input to the linker. */
typedef struct {
    int type;         /* NVJITLINK_INPUT_* */
    PyObject *data;   /* strong ref: bytes to add, or NULL to add the file `path` */
    PyObject *path;   /* strong ref: bytes, the file name encoded, or NULL */
    PyObject *name;   /* strong ref: bytes, the name the linker's log uses */
} input;

/* The linker's error (or info) log. New ref: str, or NULL. */
static PyObject *
read_log(cukit_state *st, nvJitLinkHandle h, int error_log)
{
    size_t n = 0;
    nvJitLinkResult res = error_log ? cukit_api.nvJitLinkGetErrorLogSize(h, &n)
                                    : cukit_api.nvJitLinkGetInfoLogSize(h, &n);
    if (res != NVJITLINK_SUCCESS || n == 0)
        return PyUnicode_FromString("");
    char *buf = PyMem_Malloc(n + 1);
    if (buf == NULL)
        return PyErr_NoMemory();
    res = error_log ? cukit_api.nvJitLinkGetErrorLog(h, buf) : cukit_api.nvJitLinkGetInfoLog(h, buf);
    buf[res == NVJITLINK_SUCCESS ? n : 0] = '\0';
    PyObject *log = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)strlen(buf), "replace");
    PyMem_Free(buf);
    return log;
}

/* Raise LinkError for a failed `call`: `what` and the result in the message, then
 * the linker's error log, also in .log. Returns -1. */
static int
link_error(cukit_state *st, nvJitLinkHandle h, nvJitLinkResult res, const char *call,
           PyObject *what)
{
    PyObject *log = h ? read_log(st, h, 1) : PyUnicode_FromString("");
    if (log == NULL)
        return -1;
    const char *hint = "";
    for (size_t i = 0; i < sizeof hints / sizeof *hints; i++)
        if (hints[i].code == res)
            hint = hints[i].hint;
    PyObject *msg = PyUnicode_FromFormat("nvJitLink could not %U: %s (%d)%s%s%s%U", what,
                                         result_name(res), res, hint[0] ? "; " : "", hint,
                                         PyUnicode_GET_LENGTH(log) ? ":\n" : "", log);
    PyObject *exc = msg ? cukit_make_error(st, CUKIT_EXC_LINK, res, result_name(res), call, msg)
                        : NULL;
    Py_XDECREF(msg);
    if (exc && PyObject_SetAttrString(exc, "log", log) == 0)
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_XDECREF(exc);
    Py_DECREF(log);
    return -1;
}

/* The arch argument as "sm_90" (sm_90a, sm_100f kept) into buf, or the device's.
 * 0 / -1 with ValueError. */
static int
link_arch(cukit_state *st, PyObject *arch, cukit_Device *dev, char *buf, size_t n)
{
    if (arch == Py_None) {
        if (dev == NULL && cukit_device_count(st) > 0)
            dev = cukit_device_current(st);
        if (dev == NULL) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError,
                            "no GPU to take the architecture from; pass arch, e.g. arch=\"sm_90\"");
            return -1;
        }
        cukit_device_arch(dev, buf, n);
        return 0;
    }
    const char *a = PyUnicode_Check(arch) ? PyUnicode_AsUTF8(arch) : NULL;
    size_t digits = a && strncmp(a, "sm_", 3) == 0 ? strspn(a + 3, "0123456789") : 0;
    if (a == NULL || digits < 2 || digits > 4 ||
        !(a[3 + digits] == '\0' || ((a[3 + digits] == 'a' || a[3 + digits] == 'f') && a[4 + digits] == '\0'))) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "arch must name a GPU architecture such as \"sm_90\", got %R",
                     arch);
        return -1;
    }
    PyOS_snprintf(buf, n, "%s", a);
    return 0;
}

/* Fill *in from one item of link()'s list: a Program (compiled here, its
 * signatures and symbols merged into sigs/syms), bytes, or a path. 0 / -1. */
static int
add_item(cukit_state *st, PyObject *item, Py_ssize_t index, const char *arch, int lto, input *in,
         PyObject *sigs, PyObject *syms)
{
    if (Py_IS_TYPE(item, st->compile->ProgramType)) {
        cukit_Program *prog = (cukit_Program *)item;
        PyObject *symbols;
        in->type = lto ? NVJITLINK_INPUT_LTOIR : NVJITLINK_INPUT_CUBIN;
        if (cukit_program_compile(prog, arch, lto ? CUKIT_OUT_LTOIR : CUKIT_OUT_CUBIN,
                                  lto ? "-dlto" : "-rdc=true", &in->data, &symbols) < 0)
            return -1;
        int rc = PyDict_Merge(sigs, prog->signatures, 0) < 0 || PyDict_Merge(syms, symbols, 0) < 0
                     ? -1 : 0;
        Py_DECREF(symbols);
        in->name = PyUnicode_AsUTF8String(prog->name);
        return rc < 0 || in->name == NULL ? -1 : 0;
    }
    PyObject *head;
    int is_path = PyUnicode_Check(item) || PyObject_HasAttrString(item, "__fspath__");
    if (is_path) {
        if (!PyUnicode_FSConverter(item, &in->path))
            return -1;
        in->name = Py_NewRef(in->path);
        head = cukit_read_file(item, 64); /* the magic; the linker reads the rest */
    }
    else if (PyObject_CheckBuffer(item)) {
        in->data = PyBytes_FromObject(item);
        in->name = PyBytes_FromFormat("item %zd", index);
        head = in->data ? Py_NewRef(in->data) : NULL;
    }
    else {
        PyErr_Format(PyExc_TypeError,
                     "link() items are cukit.Program, bytes (cubin, PTX, fatbin, LTO-IR, object, "
                     "library) or paths of such files; item %zd is a %s",
                     index, Py_TYPE(item)->tp_name);
        return -1;
    }
    if (head == NULL || in->name == NULL) {
        Py_XDECREF(head);
        return -1;
    }
    in->type = cukit_image_kind((const unsigned char *)PyBytes_AS_STRING(head),
                                (size_t)PyBytes_GET_SIZE(head));
    Py_ssize_t n = PyBytes_GET_SIZE(head);
    PyObject *start = PyBytes_FromStringAndSize(PyBytes_AS_STRING(head), n < 8 ? n : 8);
    Py_DECREF(head);
    if (start == NULL)
        return -1;
    if (in->type == NVJITLINK_INPUT_NONE) {
        if (is_path)
            PyErr_Format(PyExc_ValueError,
                         "link(): item %zd, the file %R, is not a cubin, PTX, fatbin, LTO-IR, "
                         "object or static library: it starts with %R", index, item, start);
        else
            PyErr_Format(PyExc_ValueError,
                         "link(): item %zd, a %s, is not a cubin, PTX, fatbin, LTO-IR, object or "
                         "static library: it starts with %R", index, Py_TYPE(item)->tp_name, start);
        Py_DECREF(start);
        return -1;
    }
    Py_DECREF(start);
    /* nvJitLink reads PTX given as data as a C string. */
    if (in->data && in->type == NVJITLINK_INPUT_PTX &&
        PyBytes_AS_STRING(in->data)[PyBytes_GET_SIZE(in->data) - 1] != '\0') {
        PyObject *nul = PyBytes_FromStringAndSize("", 1);
        PyBytes_ConcatAndDel(&in->data, nul);
        if (in->data == NULL)
            return -1;
    }
    return 0;
}

/* The linked cubin (or PTX). New ref: bytes, or NULL. */
/* The emulator refused the linked machine code: say how to link PTX for it instead
 * (the raised exception keeps its class and attributes; its text grows). */
static void
emulator_hint(void)
{
    PyObject *exc = PyErr_GetRaisedException();
    PyObject *text = exc ? PyObject_Str(exc) : NULL;
    PyObject *more = text ? PyUnicode_FromFormat(
                                "%U. For the emulator, link PTX: "
                                "ptx = cukit.link([...], lto=True, output=\"ptx\"), then "
                                "cukit.Module.load(ptx)", text)
                          : NULL;
    PyObject *args = more ? PyTuple_Pack(1, more) : NULL;
    if (args == NULL || PyObject_SetAttrString(exc, "args", args) < 0)
        PyErr_Clear();
    Py_XDECREF(args);
    Py_XDECREF(more);
    Py_XDECREF(text);
    PyErr_SetRaisedException(exc);
}

static PyObject *
linked_output(cukit_state *st, nvJitLinkHandle h, int ptx)
{
    size_t n = 0;
    nvJitLinkResult res;
    if (ptx && (!cukit_api.nvJitLinkGetLinkedPtxSize || !cukit_api.nvJitLinkGetLinkedPtx))
        return PyErr_Format(st->exc[CUKIT_EXC_NOT_SUPPORTED],
                            "this nvJitLink cannot return PTX; use output=\"cubin\"");
    res = ptx ? cukit_api.nvJitLinkGetLinkedPtxSize(h, &n) : cukit_api.nvJitLinkGetLinkedCubinSize(h, &n);
    if (res != NVJITLINK_SUCCESS) {
        PyObject *what = PyUnicode_FromString("return the linked code");
        if (what)
            link_error(st, h, res, ptx ? "nvJitLinkGetLinkedPtxSize" : "nvJitLinkGetLinkedCubinSize",
                       what);
        Py_XDECREF(what);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (out == NULL)
        return NULL;
    res = ptx ? cukit_api.nvJitLinkGetLinkedPtx(h, PyBytes_AS_STRING(out))
              : cukit_api.nvJitLinkGetLinkedCubin(h, PyBytes_AS_STRING(out));
    if (res != NVJITLINK_SUCCESS) {
        Py_DECREF(out);
        PyObject *what = PyUnicode_FromString("return the linked code");
        if (what)
            link_error(st, h, res, ptx ? "nvJitLinkGetLinkedPtx" : "nvJitLinkGetLinkedCubin", what);
        Py_XDECREF(what);
        return NULL;
    }
    /* PTX comes with its NUL; bytes for users end before it, as Program.ptx()'s do. */
    if (ptx && n > 0 && PyBytes_AS_STRING(out)[n - 1] == '\0')
        _PyBytes_Resize(&out, (Py_ssize_t)n - 1);
    return out;
}

/* Append str s to list. 0 / -1. */
static int
append_str(PyObject *list, const char *s)
{
    PyObject *o = PyUnicode_FromString(s);
    int rc = o ? PyList_Append(list, o) : -1;
    Py_XDECREF(o);
    return rc;
}

/* The option list: -arch, -lto, -ptx, then the user's (a sequence of str, or
 * NULL). New ref: a list of str, or NULL with TypeError. */
static PyObject *
link_options(const char *arch, int lto, int ptx, PyObject *options)
{
    if (options && (PyUnicode_Check(options) || PyBytes_Check(options))) {
        PyErr_SetString(PyExc_TypeError,
                        "options must be a sequence of str, e.g. options=(\"-O3\",), not one str");
        return NULL;
    }
    char archopt[48];
    PyOS_snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    PyObject *list = PyList_New(0), *user = NULL;
    if (list == NULL || append_str(list, archopt) < 0 || (lto && append_str(list, "-lto") < 0) ||
        (ptx && append_str(list, "-ptx") < 0))
        goto error;
    if (options == NULL)
        return list;
    if ((user = PySequence_Fast(options, "options must be a sequence of str")) == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(user); i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(user, i);
        if (!PyUnicode_Check(o)) {
            PyErr_Format(PyExc_TypeError, "each option must be a str, got %s", Py_TYPE(o)->tp_name);
            goto error;
        }
        if (PyList_Append(list, o) < 0)
            goto error;
    }
    Py_DECREF(user);
    return list;
error:
    Py_XDECREF(user);
    Py_XDECREF(list);
    return NULL;
}

static PyObject *
mod_link(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"items", "arch", "lto", "options", "device", "output", NULL};
    PyObject *items, *arch = Py_None, *options = NULL, *device = Py_None;
    const char *output = "module";
    int lto = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$pOOs:link", kwlist, &items, &arch, &lto,
                                     &options, &device, &output))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    int out_kind = -1;
    for (size_t i = 0; i < sizeof outputs / sizeof *outputs; i++)
        if (strcmp(output, outputs[i].name) == 0)
            out_kind = outputs[i].out;
    if (out_kind < 0)
        return PyErr_Format(PyExc_ValueError,
                            "output must be \"module\", \"cubin\" or \"ptx\", got \"%s\"", output);
    if (out_kind == OUT_PTX && !lto) {
        PyErr_SetString(PyExc_ValueError,
                        "output=\"ptx\" needs lto=True: nvJitLink emits PTX only from LTO-IR");
        return NULL;
    }
    if (PyUnicode_Check(items) || PyObject_CheckBuffer(items) ||
        Py_IS_TYPE(items, st->compile->ProgramType) || PyObject_HasAttrString(items, "__fspath__")) {
        PyErr_SetString(PyExc_TypeError,
                        "link() takes a list of items, e.g. cukit.link([prog_a, prog_b])");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(items, "link() takes a list of items, e.g. cukit.link([a, b])");
    if (seq == NULL)
        return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    input *inputs = NULL;
    PyObject *sigs = NULL, *syms = NULL, *opts = NULL, *result = NULL, *image = NULL;
    const char **copts = NULL;
    nvJitLinkHandle h = NULL;
    cukit_Device *dev = NULL;
    char archbuf[32];
    if (count == 0) {
        PyErr_SetString(PyExc_ValueError, "link() needs at least one item to link");
        goto done;
    }
    if (cukit_nvjitlink_load(st) < 0)
        goto done;
    if (out_kind == OUT_MODULE && (dev = cukit_device_arg(st, device)) == NULL)
        goto done;
    if (link_arch(st, arch, dev, archbuf, sizeof archbuf) < 0)
        goto done;

    inputs = PyMem_Calloc((size_t)count, sizeof *inputs);
    sigs = PyDict_New();
    syms = PyDict_New();
    if (inputs == NULL || sigs == NULL || syms == NULL) {
        if (inputs == NULL)
            PyErr_NoMemory();
        goto done;
    }
    int any_lto = lto;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (add_item(st, PySequence_Fast_GET_ITEM(seq, i), i, archbuf, lto, &inputs[i], sigs,
                     syms) < 0)
            goto done;
        any_lto |= inputs[i].type == NVJITLINK_INPUT_LTOIR;
    }

    /* LTO-IR given as bytes or a file turns link-time optimization on by itself. */
    if ((opts = link_options(archbuf, any_lto, out_kind == OUT_PTX, options)) == NULL)
        goto done;
    Py_ssize_t nopts = PyList_GET_SIZE(opts);
    if ((copts = PyMem_Calloc((size_t)nopts, sizeof *copts)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nopts; i++)
        if ((copts[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(opts, i))) == NULL)
            goto done;
    nvJitLinkResult res = cukit_api.nvJitLinkCreate(&h, (uint32_t)nopts, copts);
    if (res != NVJITLINK_SUCCESS) {
        PyObject *log = h ? read_log(st, h, 1) : PyUnicode_FromString("");
        PyObject *text = log ? PyObject_CallMethod(log, "strip", NULL) : NULL;
        if (text)
            PyErr_Format(PyExc_ValueError, "nvJitLink rejected the options %R: %s (%d)%s%U", opts,
                         result_name(res), res, PyUnicode_GET_LENGTH(text) ? ": " : "", text);
        Py_XDECREF(log);
        Py_XDECREF(text);
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        input *in = &inputs[i];
        const char *name = PyBytes_AS_STRING(in->name);
        Py_BEGIN_ALLOW_THREADS
        res = in->data ? cukit_api.nvJitLinkAddData(h, in->type, PyBytes_AS_STRING(in->data),
                                                    (size_t)PyBytes_GET_SIZE(in->data), name)
                       : cukit_api.nvJitLinkAddFile(h, in->type, PyBytes_AS_STRING(in->path));
        Py_END_ALLOW_THREADS
        if (res != NVJITLINK_SUCCESS) {
            PyObject *what = PyUnicode_FromFormat("add %s (a %s)", name,
                                                  cukit_image_kind_name(in->type));
            if (what)
                link_error(st, h, res, in->data ? "nvJitLinkAddData" : "nvJitLinkAddFile", what);
            Py_XDECREF(what);
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    res = cukit_api.nvJitLinkComplete(h);
    Py_END_ALLOW_THREADS
    if (res != NVJITLINK_SUCCESS) {
        PyObject *what = PyUnicode_FromFormat("link for %s", archbuf);
        if (what)
            link_error(st, h, res, "nvJitLinkComplete", what);
        Py_XDECREF(what);
        goto done;
    }
    if ((image = linked_output(st, h, out_kind == OUT_PTX)) == NULL)
        goto done;
    if (out_kind == OUT_MODULE) {
        cukit_Module *lm = cukit_module_create(st, dev, PyBytes_AS_STRING(image), sigs, syms,
                                               archbuf);
        if (lm)
            lm->image = Py_NewRef(image); /* kept for reproducers (cukit.debug) */
        else if (strcmp(cukit_backend_name() ? cukit_backend_name() : "", "emulator") == 0 &&
                 PyErr_ExceptionMatches(st->exc[CUKIT_EXC_NOT_SUPPORTED]))
            emulator_hint();
        result = (PyObject *)lm;
    }
    else
        result = Py_NewRef(image);
done:
    if (h)
        cukit_api.nvJitLinkDestroy(&h);
    for (Py_ssize_t i = 0; inputs && i < count; i++) {
        Py_XDECREF(inputs[i].data);
        Py_XDECREF(inputs[i].path);
        Py_XDECREF(inputs[i].name);
    }
    PyMem_Free(inputs);
    PyMem_Free(copts);
    Py_XDECREF(opts);
    Py_XDECREF(image);
    Py_XDECREF(sigs);
    Py_XDECREF(syms);
    Py_DECREF(seq);
    return result;
}

static PyObject *
mod_nvjitlink_version(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = PyModule_GetState(m);
    unsigned int major = 0, minor = 0;
    if (cukit_nvjitlink_load(st) < 0)
        return NULL;
    if (cukit_api.nvJitLinkVersion == NULL)
        return PyErr_Format(st->exc[CUKIT_EXC_NOT_SUPPORTED],
                            "this nvJitLink (%s) cannot report its version; it is older than "
                            "CUDA 12.3", cukit_nvjitlink_path());
    nvJitLinkResult res = cukit_api.nvJitLinkVersion(&major, &minor);
    if (res != NVJITLINK_SUCCESS)
        return PyErr_Format(st->exc[CUKIT_EXC_CUDA], "nvJitLinkVersion failed: %s (%d)",
                            result_name(res), res);
    return Py_BuildValue("(II)", major, minor);
}

static PyMethodDef link_functions[] = {
    {"link", (PyCFunction)(void (*)(void))mod_link, METH_VARARGS | METH_KEYWORDS,
     "link(items, arch=None, *, lto=False, options=(), device=None, output='module')\n\n"
     "Link device code with nvJitLink. items: cukit.Program (compiled here with -rdc=true, or "
     "-dlto when lto=True), bytes of a cubin, PTX, fatbin, LTO-IR, host object or static "
     "library, or paths of such files. Returns a Module loaded on the device (kernels of the "
     "Programs keep their signatures), or with output='cubin' the linked cubin as bytes (no GPU "
     "needed; pass arch), or with output='ptx' and lto=True the linked PTX. A failed link "
     "raises LinkError with the linker's log in .log."},
    {"nvjitlink_version", mod_nvjitlink_version, METH_NOARGS,
     "nvJitLink's version as (major, minor); NotSupportedError when it is not installed."},
    {NULL},
};

int
cukit_link_setup(PyObject *module, cukit_state *st)
{
    return PyModule_AddFunctions(module, link_functions);
}
