/* program.c - cukit.Program: NVRTC compilation to PTX or cubin, options, the log */
#include "cukit.h"

#include <limits.h>
#include <string.h>

/* Parse "sm_90" / "compute_90" / "90" into 90; -1 when it is none of these. */
static int
arch_number(const char *arch)
{
    const char *digits = arch;
    if (strncmp(arch, "sm_", 3) == 0)
        digits = arch + 3;
    else if (strncmp(arch, "compute_", 8) == 0)
        digits = arch + 8;
    int v = 0, n = 0;
    for (; digits[n] >= '0' && digits[n] <= '9'; n++)
        v = v * 10 + (digits[n] - '0');
    /* a trailing 'a' or 'f' (sm_90a) is allowed */
    if (n < 2 || (digits[n] && !(digits[n] == 'a' || digits[n] == 'f') ))
        return -1;
    return v;
}

/* Whether this NVRTC can generate machine code for `cc`; 1 when it cannot say. */
static int
nvrtc_supports(int cc)
{
    int n = 0;
    if (!cukit_api.nvrtcGetNumSupportedArchs || cukit_api.nvrtcGetNumSupportedArchs(&n) != 0 ||
        n <= 0 || n > 256)
        return 1;
    int archs[256];
    if (cukit_api.nvrtcGetSupportedArchs(archs) != 0)
        return 1;
    for (int i = 0; i < n; i++)
        if (archs[i] == cc)
            return 1;
    return 0;
}

/* The newest architecture this NVRTC knows, for PTX the driver can JIT. */
static int
nvrtc_newest(void)
{
    int n = 0, archs[256];
    if (!cukit_api.nvrtcGetNumSupportedArchs || cukit_api.nvrtcGetNumSupportedArchs(&n) != 0 ||
        n <= 0 || n > 256 || cukit_api.nvrtcGetSupportedArchs(archs) != 0)
        return 0;
    return archs[n - 1];
}

/* Read the log of prog into self->log. 0 / -1. */
static int
read_log(cukit_Program *self, nvrtcProgram prog)
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

static int
compile_error(cukit_Program *self, const char *arch)
{
    PyObject *msg = PyUnicode_FromFormat("%U did not compile for %s:\n%U", self->name, arch,
                                         self->log);
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

/* The compiled output of `kind` (CUKIT_OUT_*). New ref: bytes, or NULL. */
static PyObject *
fetch_output(cukit_state *st, nvrtcProgram prog, int kind)
{
    static const struct {
        nvrtcResult (**size)(nvrtcProgram, size_t *);
        nvrtcResult (**get)(nvrtcProgram, char *);
        const char *size_call, *get_call;
    } outputs[] = {
        [CUKIT_OUT_PTX] = {&cukit_api.nvrtcGetPTXSize, &cukit_api.nvrtcGetPTX, "nvrtcGetPTXSize",
                           "nvrtcGetPTX"},
        [CUKIT_OUT_CUBIN] = {&cukit_api.nvrtcGetCUBINSize, &cukit_api.nvrtcGetCUBIN,
                             "nvrtcGetCUBINSize", "nvrtcGetCUBIN"},
        [CUKIT_OUT_LTOIR] = {&cukit_api.nvrtcGetLTOIRSize, &cukit_api.nvrtcGetLTOIR,
                             "nvrtcGetLTOIRSize", "nvrtcGetLTOIR"},
    };
    if (*outputs[kind].size == NULL || *outputs[kind].get == NULL) {
        PyObject *msg = PyUnicode_FromFormat(
            "this NVRTC has no %s; link-time optimization needs NVRTC from CUDA 12 or newer",
            outputs[kind].get_call);
        if (msg)
            cukit_raise(st, CUKIT_EXC_NOT_SUPPORTED, -1, NULL, outputs[kind].get_call, msg);
        Py_XDECREF(msg);
        return NULL;
    }
    size_t size = 0;
    if (cukit_check_nvrtc(st, (*outputs[kind].size)(prog, &size), outputs[kind].size_call) < 0)
        return NULL;
    PyObject *image = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (image && cukit_check_nvrtc(st, (*outputs[kind].get)(prog, PyBytes_AS_STRING(image)),
                                   outputs[kind].get_call) < 0)
        Py_CLEAR(image);
    return image;
}

/* Compile for `arch` into `cubin`, a CUKIT_OUT_* kind: 0 PTX, 1 cubin, 2 LTO-IR.
 * New refs in *image (bytes; PTX ends with its NUL) and, if asked, *symbols (dict
 * kernel -> symbol). 0 / -1 with CompileError or another exception. */
static int compile_once(cukit_Program *self, const char *arch, int cubin, int use_names,
                        PyObject **image, PyObject **symbols);

static int
compile_for(cukit_Program *self, const char *arch, int cubin, PyObject **image, PyObject **symbols)
{
    if (compile_once(self, arch, cubin, 1, image, symbols) == 0)
        return 0;
    /* A C++ kernel cukit read but NVRTC cannot name (overloaded, or inside an #if
     * cukit could not evaluate) fails the whole compile; try once more without
     * name expressions, so only such kernels become unreachable. */
    if (!PyErr_ExceptionMatches(self->st->exc[CUKIT_EXC_COMPILE]))
        return -1;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    int cpp = 0;
    while (PyDict_Next(self->signatures, &pos, &k, &v))
        cpp |= !((cukit_Signature *)v)->extern_c;
    if (!cpp)
        return -1;
    PyObject *first = PyErr_GetRaisedException();
    if (compile_once(self, arch, cubin, 0, image, symbols) == 0) {
        Py_DECREF(first);
        return 0;
    }
    Py_DECREF(first);
    return -1;
}

static int
compile_once(cukit_Program *self, const char *arch, int cubin, int use_names, PyObject **image,
             PyObject **symbols)
{
    cukit_state *st = self->st;
    nvrtcProgram prog = NULL;
    const char **opts = NULL;
    PyObject *names = NULL;
    int rc = -1;
    *image = NULL;
    if (symbols)
        *symbols = NULL;
    if (cukit_nvrtc_load(st) < 0)
        return -1;
    const char *src = PyUnicode_AsUTF8(self->source), *name = PyUnicode_AsUTF8(self->name);
    if (src == NULL || name == NULL)
        return -1;
    if (NVRTC_CALL(st, nvrtcCreateProgram, (&prog, src, name, 0, NULL, NULL)) < 0)
        return -1;

    /* C++ kernels are found through name expressions: their symbols are mangled. */
    names = PyList_New(0);
    if (names == NULL)
        goto done;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (use_names && PyDict_Next(self->signatures, &pos, &k, &v)) {
        if (((cukit_Signature *)v)->extern_c)
            continue;
        if (PyList_Append(names, k) < 0 ||
            NVRTC_CALL(st, nvrtcAddNameExpression, (prog, PyUnicode_AsUTF8(k))) < 0)
            goto done;
    }

    Py_ssize_t nuser = PyTuple_GET_SIZE(self->options);
    opts = PyMem_Calloc((size_t)nuser + 4, sizeof *opts);
    if (opts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int nopt = 0, has_std = 0;
    for (Py_ssize_t i = 0; i < nuser; i++) {
        opts[nopt] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(self->options, i));
        if (opts[nopt] == NULL)
            goto done;
        has_std |= strncmp(opts[nopt], "-std", 4) == 0 || strncmp(opts[nopt], "--std", 5) == 0;
        nopt++;
    }
    char archopt[64], incopt[2][PATH_MAX + 8];
    PyOS_snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    opts[nopt++] = archopt;
    /* The toolkit's own headers (cuda_fp16.h, cooperative_groups.h, cuda/std, cub),
     * after the user's -I so those come first. */
    for (int i = 0; i < 2; i++) {
        if (cukit_toolkit_include(i)) {
            PyOS_snprintf(incopt[i], sizeof incopt[i], "-I%s", cukit_toolkit_include(i));
            opts[nopt++] = incopt[i];
        }
    }
    if (!has_std)
        opts[nopt++] = "-std=c++17";

    nvrtcResult res;
    Py_BEGIN_ALLOW_THREADS
    res = cukit_api.nvrtcCompileProgram(prog, nopt, opts);
    Py_END_ALLOW_THREADS
    if (read_log(self, prog) < 0)
        goto done;
    if (res == NVRTC_ERROR_COMPILATION) {
        compile_error(self, arch);
        goto done;
    }
    if (res == NVRTC_ERROR_INVALID_OPTION) {
        PyErr_Format(PyExc_ValueError, "NVRTC rejected an option (%R, arch %s): %U",
                     self->options, arch, self->log);
        goto done;
    }
    if (cukit_check_nvrtc(st, res, "nvrtcCompileProgram") < 0)
        goto done;

    if ((*image = fetch_output(st, prog, cubin)) == NULL)
        goto done;

    if (symbols) {
        *symbols = PyDict_New();
        if (*symbols == NULL)
            goto done;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(names); i++) {
            const char *lowered = NULL;
            PyObject *key = PyList_GET_ITEM(names, i);
            if (NVRTC_CALL(st, nvrtcGetLoweredName, (prog, PyUnicode_AsUTF8(key), &lowered)) < 0)
                goto done;
            PyObject *sym = PyUnicode_FromString(lowered);
            if (sym == NULL || PyDict_SetItem(*symbols, key, sym) < 0) {
                Py_XDECREF(sym);
                goto done;
            }
            Py_DECREF(sym);
        }
    }
    rc = 0;
done:
    if (rc < 0) {
        Py_CLEAR(*image);
        if (symbols)
            Py_CLEAR(*symbols);
    }
    PyMem_Free(opts);
    Py_XDECREF(names);
    cukit_api.nvrtcDestroyProgram(&prog);
    return rc;
}

int
cukit_program_compile(cukit_Program *self, const char *arch, int kind, const char *extra,
                      PyObject **image, PyObject **symbols)
{
    /* A private copy carries the extra option, so a compile of self running in
     * another thread meanwhile (NVRTC runs without the GIL) never sees it. Fields
     * not copied below stay zeroed. */
    cukit_Program *copy = PyObject_GC_New(cukit_Program, Py_TYPE(self));
    if (copy == NULL)
        return -1;
    memset((char *)copy + sizeof(PyObject), 0, sizeof *copy - sizeof(PyObject));
    copy->st = self->st;
    copy->source = Py_NewRef(self->source);
    copy->name = Py_NewRef(self->name);
    copy->signatures = Py_NewRef(self->signatures);
    copy->log = PyUnicode_FromString("");
    PyObject *opt = extra ? PyUnicode_FromString(extra) : NULL;
    PyObject *more = opt ? PyTuple_Pack(1, opt) : PyTuple_New(0);
    copy->options = more ? PySequence_Concat(self->options, more) : NULL;
    Py_XDECREF(opt);
    Py_XDECREF(more);
    PyObject_GC_Track(copy);
    int rc = -1;
    *image = NULL;
    *symbols = NULL;
    if (copy->log && copy->options) {
        rc = compile_for(copy, arch, kind, image, symbols);
        Py_SETREF(self->log, Py_NewRef(copy->log));
    }
    Py_DECREF(copy);
    return rc;
}

/* ------------------------------------------------------------------ the type */

/* Fold include_dirs and defines into the option tuple NVRTC sees. New ref. */
static PyObject *
build_options(PyObject *options, PyObject *include_dirs, PyObject *defines)
{
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    PyObject *it = NULL, *item;
    if (PyUnicode_Check(options)) {
        PyErr_SetString(PyExc_TypeError,
                        "options must be a sequence of str, e.g. options=(\"-O3\",), not one str");
        goto error;
    }
    if ((it = PyObject_GetIter(options)) == NULL)
        goto error;
    while ((item = PyIter_Next(it)) != NULL) {
        int ok = PyUnicode_Check(item) && PyList_Append(out, item) == 0;
        if (!PyUnicode_Check(item))
            PyErr_Format(PyExc_TypeError, "each option must be a str, got %s",
                         Py_TYPE(item)->tp_name);
        Py_DECREF(item);
        if (!ok)
            goto error;
    }
    Py_CLEAR(it);
    if (PyErr_Occurred() || (it = PyObject_GetIter(include_dirs)) == NULL)
        goto error;
    while ((item = PyIter_Next(it)) != NULL) {
        PyObject *path = PyOS_FSPath(item);
        Py_DECREF(item);
        PyObject *opt = path ? PyUnicode_FromFormat("-I%S", path) : NULL;
        Py_XDECREF(path);
        if (opt == NULL || PyList_Append(out, opt) < 0) {
            Py_XDECREF(opt);
            goto error;
        }
        Py_DECREF(opt);
    }
    Py_CLEAR(it);
    if (PyErr_Occurred())
        goto error;
    if (!PyDict_Check(defines)) {
        PyErr_SetString(PyExc_TypeError, "defines must be a dict, e.g. {\"N\": 256, \"DEBUG\": None}");
        goto error;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(defines, &pos, &k, &v)) {
        PyObject *opt = v == Py_None ? PyUnicode_FromFormat("-D%S", k)
                                     : PyUnicode_FromFormat("-D%S=%S", k, v);
        if (opt == NULL || PyList_Append(out, opt) < 0) {
            Py_XDECREF(opt);
            goto error;
        }
        Py_DECREF(opt);
    }
    PyObject *tuple = PyList_AsTuple(out);
    Py_DECREF(out);
    return tuple;
error:
    Py_XDECREF(it);
    Py_DECREF(out);
    return NULL;
}

static PyObject *
program_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"source", "name", "options", "include_dirs", "defines", NULL};
    PyObject *source, *name = NULL, *options = NULL, *include_dirs = NULL, *defines = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U|UOOO:Program", kwlist, &source, &name,
                                     &options, &include_dirs, &defines))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    PyObject *empty = PyTuple_New(0), *nodefs = PyDict_New();
    cukit_Program *self = NULL;
    if (empty == NULL || nodefs == NULL)
        goto error;
    self = PyObject_GC_New(cukit_Program, type);
    if (self == NULL)
        goto error;
    self->st = st;
    self->source = Py_NewRef(source);
    self->name = name ? Py_NewRef(name) : PyUnicode_FromString("kernel.cu");
    self->log = PyUnicode_FromString("");
    self->options = build_options(options ? options : empty, include_dirs ? include_dirs : empty,
                                  defines ? defines : nodefs);
    self->signatures = NULL;
    PyObject_GC_Track(self);
    if (!self->name || !self->log || !self->options)
        goto error;
    const char *src = PyUnicode_AsUTF8(source);
    if (src == NULL)
        goto error;
    self->signatures = cukit_signatures_parse(st, src, defines);
    if (self->signatures == NULL)
        goto error;
    Py_DECREF(empty);
    Py_DECREF(nodefs);
    return (PyObject *)self;
error:
    Py_XDECREF(empty);
    Py_XDECREF(nodefs);
    Py_XDECREF(self);
    return NULL;
}

static int
program_traverse(cukit_Program *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->signatures);
    return 0;
}

static int
program_clear(cukit_Program *self)
{
    Py_CLEAR(self->source);
    Py_CLEAR(self->name);
    Py_CLEAR(self->options);
    Py_CLEAR(self->log);
    Py_CLEAR(self->signatures);
    return 0;
}

static void
program_dealloc(cukit_Program *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    program_clear(self);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

/* The arch argument, or the current device's. Writes e.g. "sm_90" to buf. */
static int
resolve_arch(cukit_Program *self, PyObject *arch, const char *prefix, char *buf, size_t n)
{
    if (arch == NULL || arch == Py_None) {
        cukit_Device *dev = cukit_device_count(self->st) > 0 ? cukit_device_current(self->st) : NULL;
        if (dev == NULL) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError,
                            "no GPU to take the architecture from; pass arch, e.g. arch=\"sm_90\"");
            return -1;
        }
        PyOS_snprintf(buf, n, "%s%d%d", prefix, dev->cc_major, dev->cc_minor);
        return 0;
    }
    const char *a = PyUnicode_Check(arch) ? PyUnicode_AsUTF8(arch) : NULL;
    int num = a ? arch_number(a) : -1;
    if (num < 0) {
        PyErr_Format(PyExc_ValueError, "arch must look like \"sm_90\" or \"compute_90\", got %R",
                     arch);
        return -1;
    }
    const char *suffix = a + strlen(a) - 1;
    PyOS_snprintf(buf, n, "%s%d%s", prefix, num,
                  (*suffix == 'a' || *suffix == 'f') ? suffix : "");
    return 0;
}

static PyObject *
program_output(cukit_Program *self, PyObject *args, PyObject *kwargs, int cubin)
{
    static char *kwlist[] = {"arch", NULL};
    PyObject *arch = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, cubin ? "|O:cubin" : "|O:ptx", kwlist, &arch))
        return NULL;
    char buf[32];
    if (resolve_arch(self, arch, cubin ? "sm_" : "compute_", buf, sizeof buf) < 0)
        return NULL;
    PyObject *image;
    if (compile_for(self, buf, cubin, &image, NULL) < 0)
        return NULL;
    if (!cubin && PyBytes_GET_SIZE(image) > 0 && PyBytes_AS_STRING(image)[PyBytes_GET_SIZE(image) - 1] == 0)
        Py_SETREF(image, PyBytes_FromStringAndSize(PyBytes_AS_STRING(image), PyBytes_GET_SIZE(image) - 1));
    return image;
}

static PyObject *
program_ptx(cukit_Program *self, PyObject *args, PyObject *kwargs)
{
    return program_output(self, args, kwargs, 0);
}

static PyObject *
program_cubin(cukit_Program *self, PyObject *args, PyObject *kwargs)
{
    return program_output(self, args, kwargs, 1);
}

/* Compile for dev's exact architecture and load. New ref or NULL. */
static PyObject *
program_load_on(cukit_Program *self, cukit_Device *dev)
{
    int cc = dev->cc_major * 10 + dev->cc_minor;
    char arch[32];
    int native = 0;
    if (cukit_nvrtc_load(self->st) < 0)
        return NULL;
    native = nvrtc_supports(cc);
    if (native)
        PyOS_snprintf(arch, sizeof arch, "sm_%d", cc);
    else /* a GPU newer than this NVRTC: PTX the driver compiles */
        PyOS_snprintf(arch, sizeof arch, "compute_%d", nvrtc_newest());
    PyObject *image, *symbols;
    if (compile_for(self, arch, native, &image, &symbols) < 0)
        return NULL;
    PyObject *mod = (PyObject *)cukit_module_create(self->st, dev, PyBytes_AS_STRING(image),
                                                    self->signatures, symbols, arch);
    Py_DECREF(image);
    Py_DECREF(symbols);
    return mod;
}

static PyObject *
program_load(cukit_Program *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", NULL};
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:load", kwlist, &device))
        return NULL;
    cukit_Device *dev;
    if (device == Py_None)
        dev = cukit_device_current(self->st);
    else if (Py_IS_TYPE(device, self->st->DeviceType))
        dev = (cukit_Device *)device;
    else {
        long ordinal = PyLong_AsLong(device);
        if (ordinal == -1 && PyErr_Occurred())
            return NULL;
        dev = cukit_device_get(self->st, (int)ordinal);
    }
    if (dev == NULL || cukit_device_activate(dev) < 0)
        return NULL;
    return program_load_on(self, dev);
}

static PyObject *
program_get_signatures(cukit_Program *self, void *c)
{
    return PyDictProxy_New(self->signatures);
}

static PyMemberDef program_members[] = {
    {"source", Py_T_OBJECT_EX, offsetof(cukit_Program, source), Py_READONLY, "The CUDA C source."},
    {"name", Py_T_OBJECT_EX, offsetof(cukit_Program, name), Py_READONLY,
     "The file name NVRTC reports in diagnostics."},
    {"options", Py_T_OBJECT_EX, offsetof(cukit_Program, options), Py_READONLY,
     "The options given to NVRTC (include_dirs and defines folded in)."},
    {"log", Py_T_OBJECT_EX, offsetof(cukit_Program, log), Py_READONLY,
     "NVRTC's log from the last compile: warnings and errors."},
    {NULL},
};

static PyGetSetDef program_getset[] = {
    {"signatures", (getter)program_get_signatures, NULL,
     "The __global__ functions read from the source: name -> Signature."},
    {NULL},
};

static PyMethodDef program_methods[] = {
    {"ptx", (PyCFunction)(void (*)(void))program_ptx, METH_VARARGS | METH_KEYWORDS,
     "ptx(arch=None) -> bytes: PTX for arch (\"sm_90\" or \"compute_90\"); the current "
     "device's when None. Needs NVRTC, not a GPU."},
    {"cubin", (PyCFunction)(void (*)(void))program_cubin, METH_VARARGS | METH_KEYWORDS,
     "cubin(arch=None) -> bytes: machine code for arch, e.g. \"sm_90\". Needs NVRTC, not a GPU."},
    {"load", (PyCFunction)(void (*)(void))program_load, METH_VARARGS | METH_KEYWORDS,
     "load(device=None) -> Module: compile for the device's exact architecture and load it."},
    {NULL},
};

static PyType_Slot program_slots[] = {
    {Py_tp_doc, "Program(source, name='kernel.cu', options=(), include_dirs=(), defines={})\n\n"
                "CUDA C source for NVRTC. Compiling needs NVRTC but no GPU."},
    {Py_tp_new, program_new},
    {Py_tp_dealloc, program_dealloc},
    {Py_tp_traverse, program_traverse},
    {Py_tp_clear, program_clear},
    {Py_tp_members, program_members},
    {Py_tp_getset, program_getset},
    {Py_tp_methods, program_methods},
    {0, NULL},
};

static PyType_Spec program_spec = {
    .name = "cukit.Program",
    .basicsize = sizeof(cukit_Program),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = program_slots,
};

/* ------------------------------------------------------------------ module functions */

static PyObject *
mod_compile(PyObject *m, PyObject *args, PyObject *kwargs)
{
    cukit_state *st = PyModule_GetState(m);
    PyObject *device = NULL;
    if (kwargs && (device = PyDict_GetItemString(kwargs, "device")) != NULL) {
        Py_INCREF(device);
        kwargs = PyDict_Copy(kwargs);
        if (kwargs == NULL || PyDict_DelItemString(kwargs, "device") < 0) {
            Py_DECREF(device);
            Py_XDECREF(kwargs);
            return NULL;
        }
    }
    else {
        Py_XINCREF(kwargs);
    }
    PyObject *prog = PyObject_Call((PyObject *)st->ProgramType, args, kwargs);
    Py_XDECREF(kwargs);
    PyObject *out = NULL;
    if (prog) {
        PyObject *largs = device ? PyTuple_Pack(1, device) : PyTuple_New(0);
        out = largs ? program_load((cukit_Program *)prog, largs, NULL) : NULL;
        Py_XDECREF(largs);
    }
    Py_XDECREF(prog);
    Py_XDECREF(device);
    return out;
}

static PyObject *
mod_nvrtc_version(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = PyModule_GetState(m);
    int major = 0, minor = 0;
    if (cukit_nvrtc_load(st) < 0 || NVRTC_CALL(st, nvrtcVersion, (&major, &minor)) < 0)
        return NULL;
    return Py_BuildValue("(ii)", major, minor);
}

static PyObject *
mod_nvrtc_archs(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = PyModule_GetState(m);
    int n = 0, archs[256];
    if (cukit_nvrtc_load(st) < 0)
        return NULL;
    if (!cukit_api.nvrtcGetNumSupportedArchs || !cukit_api.nvrtcGetSupportedArchs)
        return PyErr_Format(st->exc[CUKIT_EXC_NOT_SUPPORTED],
                            "this NVRTC cannot list its architectures (it is older than CUDA 11.2)");
    if (NVRTC_CALL(st, nvrtcGetNumSupportedArchs, (&n)) < 0)
        return NULL;
    if (n < 0 || n > 256)
        return PyErr_Format(PyExc_RuntimeError, "NVRTC reports %d architectures", n);
    if (NVRTC_CALL(st, nvrtcGetSupportedArchs, (archs)) < 0)
        return NULL;
    PyObject *out = PyTuple_New(n);
    for (int i = 0; out && i < n; i++) {
        PyObject *s = PyUnicode_FromFormat("sm_%d", archs[i]);
        if (s == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, s);
    }
    return out;
}

static PyMethodDef program_functions[] = {
    {"compile", (PyCFunction)(void (*)(void))mod_compile, METH_VARARGS | METH_KEYWORDS,
     "compile(source, name='kernel.cu', options=(), include_dirs=(), defines={}, device=None)"
     " -> Module\n\nCompile with NVRTC for the device's exact architecture and load it."},
    {"nvrtc_version", mod_nvrtc_version, METH_NOARGS, "NVRTC's version as (major, minor)."},
    {"nvrtc_archs", mod_nvrtc_archs, METH_NOARGS,
     "The architectures NVRTC can generate machine code for, oldest first: ('sm_75', ...)."},
    {NULL},
};

int
cukit_program_setup(PyObject *module, cukit_state *st)
{
    st->ProgramType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &program_spec, NULL);
    if (st->ProgramType == NULL || PyModule_AddType(module, st->ProgramType) < 0)
        return -1;
    return PyModule_AddFunctions(module, program_functions);
}
