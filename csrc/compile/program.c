/* program.c - cukit.Program: NVRTC compilation to PTX, cubin or LTO-IR, options, the disk cache */
#include "compile/cache.h"
#include "compile/program.h"
#include "sandbox/sandbox.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The options that decide what NVRTC produces, less -arch and the toolkit's -I
 * (the cache key covers those through arch and the NVRTC identity): the user's,
 * then cukit's defaults. New ref: tuple of str. */
static PyObject *
effective_options(cukit_Program *self)
{
    Py_ssize_t n = PyTuple_GET_SIZE(self->options);
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *o = PyUnicode_AsUTF8(PyTuple_GET_ITEM(self->options, i));
        if (o == NULL)
            return NULL;
        if (strncmp(o, "-std", 4) == 0 || strncmp(o, "--std", 5) == 0)
            return Py_NewRef(self->options);
    }
    PyObject *extra = Py_BuildValue("(s)", "-std=c++17");
    PyObject *out = extra ? PySequence_Concat(self->options, extra) : NULL;
    Py_XDECREF(extra);
    return out;
}

/* NotSupportedError when this NVRTC cannot produce `kind` (LTO-IR before CUDA 12). 0 / -1. */
static int
check_output_kind(cukit_state *st, cukit_output kind)
{
    if (kind != CUKIT_OUT_LTOIR || (cukit_api.nvrtcGetLTOIRSize && cukit_api.nvrtcGetLTOIR))
        return 0;
    PyObject *msg = PyUnicode_FromString(
        "this NVRTC has no nvrtcGetLTOIR; link-time optimization needs NVRTC from CUDA 12 or newer");
    if (msg)
        cukit_raise(st, CUKIT_EXC_NOT_SUPPORTED, -1, NULL, "nvrtcGetLTOIR", msg);
    Py_XDECREF(msg);
    return -1;
}

/* Compile for `arch` into `kind` (PTX, cubin or LTO-IR). New refs in *image (bytes; PTX
 * ends with its NUL) and, if asked, *symbols (dict kernel -> symbol). 0 / -1. */
static int compile_once(cukit_Program *self, const char *arch, cukit_output kind, int use_names,
                        PyObject **image, PyObject **symbols);

/* compile_once, and if that fails on a C++ kernel name NVRTC cannot resolve, once
 * more without name expressions. */
static int
compile_retry(cukit_Program *self, const char *arch, cukit_output kind, PyObject **image,
              PyObject **symbols)
{
    if (compile_once(self, arch, kind, 1, image, symbols) == 0)
        return 0;
    /* A C++ kernel cukit read but NVRTC cannot name (overloaded, or inside an #if
     * cukit could not evaluate) fails the whole compile; try once more without
     * name expressions, so only such kernels become unreachable. */
    if (!PyErr_ExceptionMatches(self->st->exc[CUKIT_EXC_COMPILE]))
        return -1;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    int cpp = 0;
    while (PyDict_Next(self->signatures, &pos, &k, &v)) {
        int asked = PySequence_Contains(self->name_expressions, k);
        if (asked < 0)
            return -1;
        cpp |= !asked && !((cukit_Signature *)v)->extern_c;
    }
    if (!cpp)
        return -1;
    PyObject *first = PyErr_GetRaisedException();
    if (compile_once(self, arch, kind, 0, image, symbols) == 0) {
        Py_DECREF(first);
        return 0;
    }
    Py_DECREF(first);
    return -1;
}

/* Look the compile up in the disk cache, making *key first. 1 hit (new refs in
 * *image and *symbols; the log and header records are the entry's), 0 miss, -1. */
static int
cache_lookup(cukit_Program *self, const char *arch, cukit_output kind, cukit_cache_key *key,
             PyObject **image, PyObject **symbols)
{
    PyObject *opts = effective_options(self);
    if (opts == NULL)
        return -1;
    int rc = cukit_cache_key_make(self, arch, kind, opts, key);
    Py_DECREF(opts);
    if (rc < 0)
        return -1;
    /* Records of a compile the key cannot vouch for are None: not kept in process either. */
    Py_SETREF(self->deps, Py_NewRef(key->usable ? key->deps : Py_None));
    PyObject *log;
    rc = cukit_cache_load(key, kind, image, symbols, &log);
    if (rc == 1)
        Py_SETREF(self->log, log);
    return rc;
}

static int
compile_for(cukit_Program *self, const char *arch, cukit_output kind, PyObject **image, PyObject **symbols)
{
    cukit_cache_key key = {0};
    PyObject *syms = NULL;
    int cache = cukit_cache_enabled(), rc = -1;
    *image = NULL;
    if (cache) {
        int hit = cache_lookup(self, arch, kind, &key, image, &syms);
        if (hit < 0)
            goto done;
        if (hit) {
            rc = 0;
            goto done;
        }
    }
    if (compile_retry(self, arch, kind, image, &syms) < 0)
        goto done;
    if (cache && cukit_cache_store(&key, kind, *image, syms, self->log) < 0)
        goto done;
    rc = 0;
done:
    cukit_cache_key_clear(&key);
    if (rc < 0) {
        Py_CLEAR(*image);
        Py_CLEAR(syms);
    }
    if (symbols)
        *symbols = syms;
    else
        Py_XDECREF(syms);
    return rc;
}

/* The name expressions NVRTC lowers: C++ kernels are found through them, their
 * symbols being mangled. The user's own always; the ones cukit adds for C++ kernels
 * it read (use_names) only on the first try. New ref: a list of str, or NULL. */
static PyObject *
name_list(cukit_Program *self, int use_names)
{
    PyObject *names = PySequence_List(self->name_expressions);
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (names && use_names && PyDict_Next(self->signatures, &pos, &k, &v)) {
        int listed = PySequence_Contains(names, k);
        if (listed < 0 ||
            (!listed && !((cukit_Signature *)v)->extern_c && PyList_Append(names, k) < 0))
            Py_CLEAR(names);
    }
    return names;
}

static double
seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* Whether the first note of this process was written: the first says how to avoid
 * the wait and how to hide the notes. */
static int noted;

/* A compile that took over a second says so on stderr, once, after it ends: what
 * was compiled, and that the kernel cache keeps it for next time (a first `a.sum()`
 * waits for NVRTC, and nothing else would say why). CUKIT_QUIET=1 hides it. */
static void
note_slow_compile(cukit_Program *self, const char *name, const char *arch, double took)
{
    const char *quiet = getenv("CUKIT_QUIET");
    if (took < 1.0 || (quiet && quiet[0] && strcmp(quiet, "0") != 0))
        return;
    char line[PATH_MAX + 400];
    PyOS_snprintf(line, sizeof line, "cukit: compiling %.*s for %s took %.1f s (NVRTC); %s%s\n",
                  PATH_MAX, name, arch, took,
                  cukit_cache_enabled() ? "the kernel cache keeps it for next time"
                                        : "the kernel cache is off (CUKIT_CACHE), so it compiles "
                                          "again next time",
                  noted ? "" : " (python -m cukit warmup compiles cukit's own kernels ahead; "
                               "CUKIT_QUIET=1 hides these notes)");
    PySys_FormatStderr("%s", line);
    noted = 1;
}

static int
compile_once(cukit_Program *self, const char *arch, cukit_output kind, int use_names, PyObject **image,
             PyObject **symbols)
{
    double started = seconds_now();
    cukit_state *st = self->st;
    const char **opts = NULL, **exprs = NULL;
    PyObject *names = NULL, *effective = NULL, *full = NULL;
    cukit_compile_result res = {0};
    int rc = -1;
    *image = NULL;
    if (symbols)
        *symbols = NULL;
    if (cukit_nvrtc_realpath() == NULL)
        cukit_compile_warm(); /* a worker loads NVRTC while this process does */
    if (cukit_nvrtc_load(st) < 0 || check_output_kind(st, kind) < 0 ||
        cukit_arch_check_supported(arch) < 0)
        return -1;
    const char *src = PyUnicode_AsUTF8(self->source), *name = PyUnicode_AsUTF8(self->name);
    if (src == NULL || name == NULL)
        return -1;
    if ((full = cukit_prelude_source(self, name)) == NULL || (src = PyUnicode_AsUTF8(full)) == NULL ||
        (names = name_list(self, use_names)) == NULL)
        goto done;
    Py_ssize_t nnames = PyList_GET_SIZE(names);
    exprs = PyMem_Calloc((size_t)nnames + 1, sizeof *exprs);
    if (exprs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nnames; i++)
        if ((exprs[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(names, i))) == NULL)
            goto done;

    effective = effective_options(self);
    if (effective == NULL)
        goto done;
    Py_ssize_t nuser = PyTuple_GET_SIZE(effective);
    opts = PyMem_Calloc((size_t)nuser + 2 + CUKIT_MAX_INCLUDE_DIRS, sizeof *opts);
    if (opts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int nopt = 0;
    for (Py_ssize_t i = 0; i < nuser; i++) {
        opts[nopt] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(effective, i));
        if (opts[nopt] == NULL)
            goto done;
        nopt++;
    }
    char archopt[64], incopt[CUKIT_MAX_INCLUDE_DIRS][PATH_MAX + 8];
    PyOS_snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    opts[nopt++] = archopt;
    /* NVIDIA's headers beside NVRTC (cuda_fp16.h, cooperative_groups.h, cuda/std, cub,
     * curand_kernel.h), then cukit's stand-ins for the standard headers: after the
     * user's -I, so those come first. */
    const char *const *dirs = cukit_default_include_dirs();
    for (int i = 0; i < CUKIT_MAX_INCLUDE_DIRS && dirs[i]; i++) {
        PyOS_snprintf(incopt[i], sizeof incopt[i], "-I%s", dirs[i]);
        opts[nopt++] = incopt[i];
    }

    cukit_compile_request req = {kind, src, name, nopt, opts, (int)nnames, exprs};
    int ran;
    Py_BEGIN_ALLOW_THREADS
    ran = cukit_compile_run(&req, &res);
    Py_END_ALLOW_THREADS
    if (res.crashed || res.spawn_errno) {
        cukit_program_crash_error(self, arch, &req, &res);
        goto done;
    }
    if (res.oom) {
        PyErr_NoMemory();
        goto done;
    }
    if (res.log && cukit_program_set_log(self, res.log, res.log_len) < 0)
        goto done;
    if (ran < 0 && strcmp(res.call, "nvrtcCompileProgram") == 0) {
        if (res.status == NVRTC_ERROR_COMPILATION) {
            cukit_program_compile_error(self, arch);
            goto done;
        }
        if (res.status == NVRTC_ERROR_INVALID_OPTION) {
            PyErr_Format(PyExc_ValueError, "NVRTC rejected an option (%R, arch %s): %U",
                         effective, arch, self->log);
            goto done;
        }
    }
    if (ran < 0) {
        cukit_check_nvrtc(st, (nvrtcResult)res.status, res.call);
        goto done;
    }
    if ((*image = PyBytes_FromStringAndSize(res.image, (Py_ssize_t)res.image_len)) == NULL)
        goto done;
    if (symbols) {
        *symbols = PyDict_New();
        if (*symbols == NULL)
            goto done;
        for (Py_ssize_t i = 0; i < nnames; i++) {
            PyObject *sym = PyUnicode_FromString(res.lowered[i]);
            if (sym == NULL || PyDict_SetItem(*symbols, PyList_GET_ITEM(names, i), sym) < 0) {
                Py_XDECREF(sym);
                goto done;
            }
            Py_DECREF(sym);
        }
    }
    rc = 0;
    note_slow_compile(self, name, arch, seconds_now() - started);
done:
    if (rc < 0) {
        Py_CLEAR(*image);
        if (symbols)
            Py_CLEAR(*symbols);
    }
    cukit_compile_result_clear(&res, names ? (int)PyList_GET_SIZE(names) : 0);
    PyMem_Free(opts);
    PyMem_Free(exprs);
    Py_XDECREF(names);
    Py_XDECREF(effective);
    Py_XDECREF(full);
    return rc;
}

int
cukit_program_compile(cukit_Program *self, const char *arch, cukit_output kind, const char *extra,
                      PyObject **image, PyObject **symbols)
{
    /* A private copy carries the extra option, so a compile of self running in
     * another thread meanwhile (NVRTC runs without the GIL) never sees it. Every
     * field is set here, before anything can fail. */
    cukit_Program *copy = PyObject_GC_New(cukit_Program, Py_TYPE(self));
    if (copy == NULL)
        return -1;
    copy->st = self->st;
    copy->source = Py_NewRef(self->source);
    copy->name = Py_NewRef(self->name);
    copy->signatures = Py_NewRef(self->signatures);
    copy->name_expressions = Py_NewRef(self->name_expressions);
    copy->globals = Py_XNewRef(self->globals);
    copy->deps = PyTuple_New(0);
    copy->prelude = self->prelude;
    copy->log = PyUnicode_FromString("");
    copy->options = NULL;
    PyObject *opt = extra ? PyUnicode_FromString(extra) : NULL;
    PyObject *more = opt ? PyTuple_Pack(1, opt) : PyTuple_New(0);
    copy->options = more ? PySequence_Concat(self->options, more) : NULL;
    Py_XDECREF(opt);
    Py_XDECREF(more);
    PyObject_GC_Track(copy);
    int rc = -1;
    *image = NULL;
    *symbols = NULL;
    if (copy->log && copy->options && copy->deps) {
        rc = compile_for(copy, arch, kind, image, symbols);
        Py_SETREF(self->log, Py_NewRef(copy->log));
        Py_SETREF(self->deps, Py_NewRef(copy->deps)); /* the headers this compile read */
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

/* A tuple of str from a sequence of str (name_expressions). New ref or NULL. */
static PyObject *
str_tuple(PyObject *seq, const char *what)
{
    if (PyUnicode_Check(seq)) {
        PyErr_Format(PyExc_TypeError, "%s must be a sequence of str, not one str", what);
        return NULL;
    }
    PyObject *t = PySequence_Tuple(seq);
    for (Py_ssize_t i = 0; t && i < PyTuple_GET_SIZE(t); i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(t, i))) {
            PyErr_Format(PyExc_TypeError, "each of %s must be a str, got %s", what,
                         Py_TYPE(PyTuple_GET_ITEM(t, i))->tp_name);
            Py_CLEAR(t);
        }
    }
    return t;
}

/* ValueError unless the str `text` can reach NVRTC whole: NVRTC takes C strings,
 * so a NUL would silently cut it; with `one_line`, a line break is refused too (a
 * file name goes into #line directives and diagnostics). `what` names it. 0 / -1. */
static int
check_text(PyObject *text, const char *what, int one_line)
{
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(text, &n);
    if (s == NULL)
        return -1;
    size_t bad = strlen(s);
    if (one_line)
        bad = strcspn(s, "\n\r");
    if ((Py_ssize_t)bad >= n)
        return 0;
    if (one_line) {
        PyErr_Format(PyExc_ValueError,
                     "%s must be one line without NUL characters (it is the file name NVRTC "
                     "puts in #line directives and diagnostics), got %R", what, text);
        return -1;
    }
    int line = 1;
    const char *start = s;
    for (const char *c = s; c < s + bad; c++)
        if (*c == '\n') {
            line++;
            start = c + 1;
        }
    PyErr_Format(PyExc_ValueError,
                 "%s contains a NUL character (\\0) at line %d, column %d: NVRTC reads it as a C "
                 "string, so everything after it would be silently dropped; remove it",
                 what, line, (int)(s + bad - start) + 1);
    return -1;
}

/* check_text for each str of a tuple; with `options`, an option that sets the
 * architecture is refused too (cukit passes -arch itself, and NVRTC would only
 * warn that one overrides the other). 0 / -1. */
static int
check_texts(PyObject *tuple, const char *what, int options)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, i);
        if (check_text(item, what, 0) < 0)
            return -1;
        const char *o = PyUnicode_AsUTF8(item);
        if (options && (strncmp(o, "-arch", 5) == 0 || strncmp(o, "--gpu-architecture", 18) == 0)) {
            PyErr_Format(PyExc_ValueError,
                         "options must not set the architecture (%R): cukit passes it to NVRTC "
                         "itself; give it as arch=, e.g. prog.cubin(arch=\"sm_90\") (compile() and "
                         "load() use the device's)", item);
            return -1;
        }
    }
    return 0;
}

static PyObject *
program_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"source", "name", "options", "include_dirs", "defines",
                             "name_expressions", "lineinfo", NULL};
    PyObject *source, *name = NULL, *options = NULL, *include_dirs = NULL, *defines = NULL;
    PyObject *exprs = NULL;
    int lineinfo = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U|UOOOOp:Program", kwlist, &source, &name,
                                     &options, &include_dirs, &defines, &exprs, &lineinfo))
        return NULL;
    return cukit_program_new(cukit_state_of_type(type), source, name, options, include_dirs,
                             defines, exprs, lineinfo);
}

PyObject *
cukit_program_new(cukit_state *st, PyObject *source, PyObject *name, PyObject *options,
                  PyObject *include_dirs, PyObject *defines, PyObject *exprs, int lineinfo)
{
    PyTypeObject *type = st->compile->ProgramType;
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
    self->name_expressions = exprs && exprs != Py_None ? str_tuple(exprs, "name_expressions")
                                                       : Py_NewRef(empty);
    self->deps = Py_NewRef(empty);
    self->globals = NULL;
    self->prelude = 0;
    PyObject_GC_Track(self);
    if (!self->name || !self->log || !self->options || !self->name_expressions)
        goto error;
    if (check_text(source, "the source", 0) < 0 || check_text(self->name, "name", 1) < 0 ||
        check_texts(self->options, "an option", 1) < 0 ||
        check_texts(self->name_expressions, "a name expression", 0) < 0)
        goto error;
    if (lineinfo) {
        PyObject *opt = PyUnicode_FromString("-lineinfo");
        PyObject *one = opt ? PyTuple_Pack(1, opt) : NULL;
        Py_XDECREF(opt);
        if (one == NULL)
            goto error;
        Py_SETREF(self->options, PySequence_Concat(self->options, one));
        Py_DECREF(one);
        if (self->options == NULL)
            goto error;
    }
    const char *src = PyUnicode_AsUTF8(source);
    if (src == NULL)
        goto error;
    if ((self->prelude = cukit_prelude_needs(src)) < 0)
        goto error;
    self->globals = PyDict_New();
    if (self->globals == NULL)
        goto error;
    self->signatures = cukit_signatures_parse(st, src, defines, self->name_expressions,
                                              self->globals);
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
    Py_CLEAR(self->name_expressions);
    Py_CLEAR(self->deps);
    Py_CLEAR(self->globals);
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

/* The arch argument, or the current device's. Writes e.g. "sm_90" to buf, with
 * `prefix` ("sm_" or "compute_") in place of the one given. */
static int
resolve_arch(cukit_Program *self, PyObject *arch, const char *prefix, char *buf, size_t n)
{
    if (arch == NULL || arch == Py_None) {
        cukit_Device *dev = cukit_device_count(self->st) > 0 ? cukit_device_current(self->st) : NULL;
        if (dev == NULL) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError,
                            "no GPU to take the architecture from; pass arch, e.g. arch=\"sm_90\" "
                            "(cukit.nvrtc_archs() lists what NVRTC supports)");
            return -1;
        }
        PyOS_snprintf(buf, n, "%s%d%d", prefix, dev->cc_major, dev->cc_minor);
        return 0;
    }
    int num;
    char suffix;
    if (cukit_arch_parse(self->st, arch, &num, &suffix) < 0)
        return -1;
    PyOS_snprintf(buf, n, "%s%d%s", prefix, num, suffix == 'a' ? "a" : suffix == 'f' ? "f" : "");
    return 0;
}

static PyObject *
program_output(cukit_Program *self, PyObject *args, PyObject *kwargs, cukit_output kind)
{
    static char *kwlist[] = {"arch", NULL};
    PyObject *arch = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, kind == CUKIT_OUT_CUBIN ? "|O:cubin" : "|O:ptx", kwlist, &arch))
        return NULL;
    char buf[32];
    if (resolve_arch(self, arch, kind == CUKIT_OUT_CUBIN ? "sm_" : "compute_", buf, sizeof buf) < 0)
        return NULL;
    PyObject *image;
    if (compile_for(self, buf, kind, &image, NULL) < 0)
        return NULL;
    if (kind == CUKIT_OUT_PTX && PyBytes_GET_SIZE(image) > 0 && PyBytes_AS_STRING(image)[PyBytes_GET_SIZE(image) - 1] == 0)
        Py_SETREF(image, PyBytes_FromStringAndSize(PyBytes_AS_STRING(image), PyBytes_GET_SIZE(image) - 1));
    return image;
}

static PyObject *
program_ptx(cukit_Program *self, PyObject *args, PyObject *kwargs)
{
    return program_output(self, args, kwargs, CUKIT_OUT_PTX);
}

static PyObject *
program_cubin(cukit_Program *self, PyObject *args, PyObject *kwargs)
{
    return program_output(self, args, kwargs, CUKIT_OUT_CUBIN);
}

PyObject *
cukit_program_load(cukit_Program *self, cukit_Device *dev)
{
    if (cukit_device_activate(dev) < 0)
        return NULL;
    int cc = dev->cc_major * 10 + dev->cc_minor;
    char arch[32];
    PyObject *image = NULL, *symbols = NULL;
    PyOS_snprintf(arch, sizeof arch, "sm_%d", cc);
    /* A device that runs PTX only (the emulator) says so through the driver table; it
     * gets PTX with line information, so faults can name the source line. */
    int ptx_only = 0;
    const char *backend = cukit_backend_name();
    if (backend != NULL && strcmp(backend, "emulator") == 0 &&
        cukit_api.cuDeviceGetAttribute(&ptx_only, CUKIT_DEVICE_ATTRIBUTE_PTX_ONLY, dev->dev) !=
            CUDA_SUCCESS)
        ptx_only = 0; /* the attribute is the emulator's own: the driver would refuse it */
    if (ptx_only) {
        PyOS_snprintf(arch, sizeof arch, "compute_%d", cc);
        if (cukit_program_compile(self, arch, CUKIT_OUT_PTX, "-lineinfo", &image, &symbols) < 0)
            return NULL;
        PyOS_snprintf(arch, sizeof arch, "sm_%d", cc); /* the module is for this device */
    }
    /* A cached cubin loads without NVRTC, whose dlopen alone costs milliseconds. */
    else if (cukit_cache_enabled() && cukit_nvrtc_realpath() == NULL) {
        cukit_cache_key key = {0};
        int hit = cache_lookup(self, arch, CUKIT_OUT_CUBIN, &key, &image, &symbols);
        cukit_cache_key_clear(&key);
        if (hit < 0)
            return NULL;
    }
    if (image == NULL) {
        if (cukit_nvrtc_realpath() == NULL)
            cukit_compile_warm(); /* a worker loads NVRTC while this process does */
        if (cukit_nvrtc_load(self->st) < 0)
            return NULL;
        int native = cukit_nvrtc_supports(cc);
        if (!native) /* a GPU newer than this NVRTC: PTX the driver compiles */
            PyOS_snprintf(arch, sizeof arch, "compute_%d", cukit_nvrtc_newest());
        if (compile_for(self, arch, native ? CUKIT_OUT_CUBIN : CUKIT_OUT_PTX, &image, &symbols) < 0)
            return NULL;
    }
    cukit_Module *mod = cukit_module_create(self->st, dev, PyBytes_AS_STRING(image),
                                            self->signatures, symbols, arch);
    if (mod) { /* its globals; the image and Program kept for reproducers (cukit.debug) */
        mod->globals = Py_XNewRef(self->globals);
        mod->image = image;
        mod->origin = Py_NewRef((PyObject *)self);
    }
    else
        Py_DECREF(image);
    Py_DECREF(symbols);
    return (PyObject *)mod;
}

static PyObject *
program_load(cukit_Program *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", NULL};
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:load", kwlist, &device))
        return NULL;
    cukit_Device *dev = cukit_device_arg(self->st, device);
    if (dev == NULL || cukit_device_activate(dev) < 0)
        return NULL;
    return cukit_program_load(self, dev);
}

static PyObject *
program_get_signatures(cukit_Program *self, void *c)
{
    return PyDictProxy_New(self->signatures);
}

static PyObject *
program_get_globals(cukit_Program *self, void *c)
{
    PyObject *out = PyDict_New();
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (out && PyDict_Next(self->globals, &pos, &k, &v)) {
        int tc = (int)PyLong_AsLong(PyTuple_GET_ITEM(v, 0));
        PyObject *rec = Py_BuildValue("(sO)", tc == CUKIT_TC_OTHER ? "unknown" : cukit_typecode_name(tc),
                                      PyTuple_GET_ITEM(v, 1));
        if (rec == NULL || PyDict_SetItem(out, k, rec) < 0)
            Py_CLEAR(out);
        Py_XDECREF(rec);
    }
    return out;
}

static PyMemberDef program_members[] = {
    {"source", Py_T_OBJECT_EX, offsetof(cukit_Program, source), Py_READONLY, "The CUDA C source."},
    {"name", Py_T_OBJECT_EX, offsetof(cukit_Program, name), Py_READONLY,
     "The file name NVRTC reports in diagnostics."},
    {"options", Py_T_OBJECT_EX, offsetof(cukit_Program, options), Py_READONLY,
     "The options given to NVRTC (include_dirs and defines folded in)."},
    {"log", Py_T_OBJECT_EX, offsetof(cukit_Program, log), Py_READONLY,
     "NVRTC's log from the last compile: warnings and errors."},
    {"name_expressions", Py_T_OBJECT_EX, offsetof(cukit_Program, name_expressions), Py_READONLY,
     "The C++ names (template instances) asked for, as given."},
    {NULL},
};

static PyGetSetDef program_getset[] = {
    {"signatures", (getter)program_get_signatures, NULL,
     "The __global__ functions read from the source: name -> Signature."},
    {"globals", (getter)program_get_globals, NULL,
     "The __device__/__constant__ variables read from the source: name -> (dtype name, "
     "shape or None); what Module.get_global uses."},
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
    {Py_tp_doc, "Program(source, name='kernel.cu', options=(), include_dirs=(), defines={}, "
                "name_expressions=(), lineinfo=False)\n\n"
                "CUDA C source for NVRTC. Compiling needs NVRTC but no GPU. name_expressions "
                "instantiates C++ templates (\"axpy<float>\"); lineinfo=True keeps source "
                "lines for the profilers."},
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

int
cukit_program_setup(PyObject *module, cukit_state *st)
{
    st->compile->ProgramType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &program_spec, NULL);
    if (st->compile->ProgramType == NULL || PyModule_AddType(module, st->compile->ProgramType) < 0)
        return -1;
    return 0;
}
