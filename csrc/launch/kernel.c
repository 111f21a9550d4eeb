/* kernel.c - cukit.Kernel: launch configuration checks, argument packing and launch */
#include "launch/launch.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static PyObject *kernel_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames);

cukit_Kernel *
cukit_kernel_create(cukit_Module *mod, CUfunction func, cukit_Signature *parsed)
{
    cukit_state *st = mod->st;
    if (cukit_numpy(st) < 0) /* numpy scalar types take part in argument conversion */
        return NULL;
    size_t stack_offsets[CUKIT_STACK_PARAMS + 1], stack_sizes[CUKIT_STACK_PARAMS + 1];
    size_t *offsets = stack_offsets, *sizes = stack_sizes;
    cukit_Signature *sig;
    if (cukit_api.cuFuncGetParamInfo) {
        /* The compiled kernel's own layout; the index past the last is INVALID_VALUE.
         * Room for one more than the parsed list, so a longer kernel is noticed. */
        int room = parsed->nparams > CUKIT_STACK_PARAMS ? parsed->nparams : CUKIT_STACK_PARAMS;
        if (room > CUKIT_STACK_PARAMS) {
            offsets = PyMem_Calloc(2 * ((size_t)room + 1), sizeof *offsets);
            if (offsets == NULL)
                return (cukit_Kernel *)PyErr_NoMemory();
            sizes = offsets + room + 1;
        }
        int n = 0;
        while (n <= room &&
               cukit_api.cuFuncGetParamInfo(func, (size_t)n, &offsets[n], &sizes[n]) == CUDA_SUCCESS)
            n++;
        sig = cukit_signature_verify(st, parsed, n, offsets, sizes);
        if (offsets != stack_offsets)
            PyMem_Free(offsets);
    }
    else {
        /* Drivers before CUDA 12.4 cannot say; fall back to the C ABI rules. */
        sig = cukit_signature_layout(st, parsed);
    }
    if (sig == NULL)
        return NULL;
    cukit_Kernel *k = PyObject_GC_New(cukit_Kernel, st->launch->KernelType);
    if (k == NULL) {
        Py_DECREF(sig);
        return NULL;
    }
    k->vectorcall = NULL;
    k->st = st;
    k->module = (cukit_Module *)Py_NewRef(mod);
    k->device = (cukit_Device *)Py_NewRef(mod->device);
    k->func = func;
    k->sig = sig;
    k->dyn_shared_set = 0;
    k->best_block = 0;
    k->strict = 0;
    PyObject_GC_Track(k);
    if (CU_CALL(st, cuFuncGetAttribute, (&k->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, func)) < 0 ||
        CU_CALL(st, cuFuncGetAttribute, (&k->static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, func)) < 0) {
        Py_DECREF(k);
        return NULL;
    }
    k->vectorcall = kernel_vectorcall;
    return k;
}

static int
kernel_traverse(cukit_Kernel *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->module);
    return 0;
}

static int
kernel_clear(cukit_Kernel *self)
{
    /* The Module <-> Kernel cycle is broken by module_clear; a kernel keeps its
     * module (and so its CUfunction) until it is deallocated. */
    return 0;
}

static void
kernel_dealloc(cukit_Kernel *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->module);
    Py_CLEAR(self->sig);
    Py_CLEAR(self->device);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

/* ------------------------------------------------------------------ launch */

static int
parse_dims(PyObject *v, const char *what, unsigned int out[3])
{
    out[0] = out[1] = out[2] = 1;
    if (PyLong_CheckExact(v)) { /* the common case: one int */
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred())
            PyErr_Clear();
        if (x < 1 || x > UINT_MAX) {
            PyErr_Format(PyExc_ValueError, "%s=%R: each dimension must be from 1 to %u", what, v,
                         UINT_MAX);
            return -1;
        }
        out[0] = (unsigned int)x;
        return 0;
    }
    /* A tuple of our own: an __index__ cannot change what we read. */
    PyObject *t = (PyTuple_Check(v) || PyList_Check(v)) ? PySequence_Tuple(v) : PyTuple_Pack(1, v);
    if (t == NULL)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    int rc = -1;
    if (n < 1 || n > 3) {
        PyErr_Format(PyExc_ValueError, "%s must be an int or a tuple of 1 to 3 ints, got %R", what, v);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *idx = PyNumber_Index(PyTuple_GET_ITEM(t, i));
        if (idx == NULL) {
            PyErr_Format(PyExc_TypeError, "%s must be an int or a tuple of 1 to 3 ints, got %R",
                         what, v);
            goto done;
        }
        long long x = PyLong_AsLongLong(idx);
        Py_DECREF(idx);
        if (x == -1 && PyErr_Occurred())
            PyErr_Clear();
        if (x < 1 || x > UINT_MAX) {
            PyErr_Format(PyExc_ValueError, "%s=%R: each dimension must be from 1 to %u", what, v,
                         UINT_MAX);
            goto done;
        }
        out[i] = (unsigned int)x;
    }
    rc = 0;
done:
    Py_DECREF(t);
    return rc;
}

/* Check a launch against the device's and the kernel's limits, before the driver
 * sees it, so the message can name the limit. Raises the shared-memory opt-in
 * when a launch needs more than the default 48 KiB. */
static int
check_config(cukit_Kernel *k, const cukit_launch_cfg *c, long long shared)
{
    const cukit_Device *d = k->device;
    static const char axis[] = "xyz";
    for (int i = 0; i < 3; i++) {
        if (c->block[i] > (unsigned)d->max_block[i]) {
            PyErr_Format(PyExc_ValueError,
                         "block dimension %c is %u, but %s allows at most %d "
                         "(attribute max_block_dim_%c)",
                         axis[i], c->block[i], d->name, d->max_block[i], axis[i]);
            return -1;
        }
        if (c->grid[i] > (unsigned)d->max_grid[i]) {
            PyErr_Format(PyExc_ValueError,
                         "grid dimension %c is %u, but %s allows at most %d "
                         "(attribute max_grid_dim_%c)",
                         axis[i], c->grid[i], d->name, d->max_grid[i], axis[i]);
            return -1;
        }
        if (c->cluster[0] && c->grid[i] % c->cluster[i] != 0) {
            PyErr_Format(PyExc_ValueError,
                         "grid dimension %c (%u) must be a multiple of the cluster's (%u)",
                         axis[i], c->grid[i], c->cluster[i]);
            return -1;
        }
    }
    unsigned long long threads = (unsigned long long)c->block[0] * c->block[1] * c->block[2];
    if (threads > (unsigned long long)k->max_threads) {
        PyErr_Format(PyExc_ValueError,
                     "block of %u x %u x %u = %llu threads, but kernel %s can run at most %d "
                     "threads per block on this device (kernel attribute max_threads_per_block; "
                     "its register use sets it)",
                     c->block[0], c->block[1], c->block[2], threads, k->sig->name, k->max_threads);
        return -1;
    }
    if (shared < 0 || shared > (long long)d->max_shared_optin - k->static_shared) {
        PyErr_Format(PyExc_ValueError,
                     "shared_mem=%lld bytes plus the kernel's %d bytes of static shared memory "
                     "exceeds the %d bytes per block %s allows "
                     "(attribute max_shared_memory_per_block_optin)",
                     shared, k->static_shared, d->max_shared_optin, d->name);
        return -1;
    }
    if (shared + k->static_shared > d->max_shared && shared > k->dyn_shared_set) {
        if (CU_CALL(k->st, cuFuncSetAttribute,
                    (k->func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared)) < 0)
            return -1;
        k->dyn_shared_set = (int)shared;
    }
    return 0;
}

/* The block size the occupancy calculator suggests, cached per kernel. */
static int
best_block(cukit_Kernel *k, size_t shared)
{
    if (k->best_block > 0 && shared == 0)
        return k->best_block;
    int min_grid = 0, block = 0;
    if (cukit_device_activate(k->device) < 0 ||
        CU_CALL(k->st, cuOccupancyMaxPotentialBlockSize,
                (&min_grid, &block, k->func, NULL, shared, 0)) < 0)
        return -1;
    if (shared == 0)
        k->best_block = block;
    return block;
}

static int
kw_is(cukit_state *st, PyObject *key, PyObject *interned, const char *text)
{
    return key == interned || PyUnicode_CompareWithASCIIString(key, text) == 0;
}

int
cukit_launch_config(cukit_Kernel *k, PyObject *const *values, PyObject *kwnames,
                    int allow_stream, cukit_launch_cfg *cfg)
{
    cukit_state *st = k->st;
    PyObject *grid_o = NULL, *block_o = NULL, *shared_o = NULL, *stream_o = NULL, *n_o = NULL;
    PyObject *coop_o = NULL, *cluster_o = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i), *val = values[i];
        if (kw_is(st, key, st->launch->str_grid, "grid"))
            grid_o = val;
        else if (kw_is(st, key, st->launch->str_block, "block"))
            block_o = val;
        else if (kw_is(st, key, st->launch->str_shared_mem, "shared_mem"))
            shared_o = val;
        else if (allow_stream && kw_is(st, key, st->launch->str_stream, "stream"))
            stream_o = val;
        else if (kw_is(st, key, st->launch->str_n, "n"))
            n_o = val;
        else if (PyUnicode_CompareWithASCIIString(key, "cooperative") == 0)
            coop_o = val;
        else if (PyUnicode_CompareWithASCIIString(key, "cluster") == 0)
            cluster_o = val;
        else {
            PyErr_Format(PyExc_TypeError,
                         "%s() got an unexpected keyword argument %R; a launch takes the "
                         "kernel's arguments, then grid=, block= (or n=), shared_mem=, %s"
                         "cooperative= and cluster=",
                         k->sig->name, key, allow_stream ? "stream=, " : "");
            return -1;
        }
    }
    long long shared = 0;
    if (shared_o != NULL && shared_o != Py_None) {
        shared = PyLong_AsLongLong(shared_o);
        if (shared == -1 && PyErr_Occurred())
            return -1;
    }
    if (n_o != NULL && grid_o == NULL && block_o == NULL) {
        long long n = PyLong_AsLongLong(n_o);
        if (n == -1 && PyErr_Occurred())
            return -1;
        if (n < 1) {
            PyErr_Format(PyExc_ValueError, "n=%lld: the number of work items must be at least 1", n);
            return -1;
        }
        int block = best_block(k, shared > 0 ? (size_t)shared : 0);
        if (block < 0)
            return -1;
        long long blocks = (n + block - 1) / block;
        cfg->block[0] = (unsigned)block;
        cfg->grid[0] = blocks > UINT_MAX ? UINT_MAX : (unsigned)blocks;
        cfg->block[1] = cfg->block[2] = cfg->grid[1] = cfg->grid[2] = 1;
    }
    else if (grid_o == NULL || block_o == NULL || n_o != NULL) {
        PyErr_Format(PyExc_TypeError,
                     "%s() needs grid= and block=, e.g. kernel(..., grid=(n + 255) // 256, "
                     "block=256), or n=N alone to choose them from occupancy",
                     k->sig->name);
        return -1;
    }
    else if (parse_dims(grid_o, "grid", cfg->grid) < 0 ||
             parse_dims(block_o, "block", cfg->block) < 0) {
        return -1;
    }
    cfg->cooperative = 0;
    if (coop_o != NULL && (cfg->cooperative = PyObject_IsTrue(coop_o)) < 0)
        return -1;
    cfg->cluster[0] = cfg->cluster[1] = cfg->cluster[2] = 0;
    if (cluster_o != NULL && cluster_o != Py_None && parse_dims(cluster_o, "cluster", cfg->cluster) < 0)
        return -1;
    if ((stream_o == NULL || stream_o == Py_None) && cukit_stream_current(st, k->device))
        stream_o = (PyObject *)cukit_stream_current(st, k->device); /* `with stream:` */
    cfg->stream_obj = stream_o && Py_IS_TYPE(stream_o, k->st->runtime->StreamType) ? (cukit_Stream *)stream_o : NULL;
    cfg->stream_arg = stream_o;
    if (check_config(k, cfg, shared) < 0 || cukit_stream_handle(st, stream_o, k->device, &cfg->stream) < 0)
        return -1;
    cfg->shared = (unsigned int)shared;
    return 0;
}

int
cukit_params_init(cukit_params *p, const cukit_Signature *sig)
{
    p->buf = p->stack;
    p->ptrs = p->stack_ptrs;
    if (sig->arg_bytes <= sizeof p->stack && sig->nparams <= CUKIT_STACK_PARAMS)
        return 0;
    /* Only kernels with more than 4 KiB of parameters get here. */
    size_t rounded = (sig->arg_bytes + 15) / 16 * 16;
    unsigned char *heap = PyMem_Malloc(rounded + (size_t)sig->nparams * sizeof(void *));
    if (heap == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    p->buf = heap;
    p->ptrs = (void **)(heap + rounded);
    return 0;
}

void
cukit_params_release(cukit_params *p)
{
    if (p->buf != p->stack)
        PyMem_Free(p->buf);
    p->buf = p->stack;
}

/* TypeError for a plain Python number passed to a strict kernel. Returns -1. */
static int
strict_error(const cukit_Kernel *k, int i, PyObject *v)
{
    const cukit_param *p = &k->sig->params[i];
    PyErr_Format(PyExc_TypeError,
                 "%s() argument %d%s%s%s (%s): got a plain Python %s (%R); this kernel takes "
                 "numbers as numpy scalars, which carry their C type: pass numpy.int32(...), "
                 "numpy.float32(...) or the type that matches the parameter",
                 k->sig->name, i + 1, p->name[0] ? " '" : "", p->name, p->name[0] ? "'" : "",
                 p->type, Py_TYPE(v)->tp_name, v);
    return -1;
}

int
cukit_kernel_pack(cukit_Kernel *k, PyObject *const *args, unsigned char *buf, void **ptrs)
{
    const cukit_Signature *sig = k->sig;
    for (int i = 0; i < sig->nparams; i++) {
        unsigned char *slot = buf + sig->params[i].offset;
        if (k->strict && (PyLong_CheckExact(args[i]) || PyFloat_CheckExact(args[i]) ||
                          PyBool_Check(args[i])))
            return strict_error(k, i, args[i]);
        if (cukit_pack_arg(k->st, sig, i, args[i], slot, k->device) < 0)
            return -1;
        ptrs[i] = slot;
    }
    return 0;
}

int
cukit_kernel_keep_for_capture(cukit_Kernel *k, const cukit_launch_cfg *cfg, PyObject *const *args)
{
    if (cfg->stream_obj == NULL || cfg->stream_obj->capture == NULL) /* not capturing */
        return 0;
    PyObject *t = PyTuple_New(k->sig->nparams + 1);
    if (t == NULL)
        return -1;
    PyTuple_SET_ITEM(t, 0, Py_NewRef(k));
    for (int i = 0; i < k->sig->nparams; i++)
        PyTuple_SET_ITEM(t, i + 1, Py_NewRef(args[i]));
    int rc = cukit_capture_keep(k->st, (PyObject *)cfg->stream_obj, t);
    Py_DECREF(t);
    return rc;
}

/* ------------------------------------------------------------------ debug mode */

/* "x: const float* <- Array float32 (1000,)" for one argument. New ref or NULL. */
static PyObject *
describe_arg(const cukit_param *p, PyObject *v)
{
    PyObject *shape = NULL, *dtype = NULL, *out = NULL;
    if (cukit_optional_attr(v, "shape", &shape) < 0 || cukit_optional_attr(v, "dtype", &dtype) < 0)
        goto done;
    if (shape && dtype) {
        out = PyUnicode_FromFormat("%s%s%s <- %s %S %S", p->name, p->name[0] ? ": " : "",
                                   p->type, Py_TYPE(v)->tp_name, dtype, shape);
    }
    else {
        PyObject *r = PyObject_Repr(v);
        if (r == NULL)
            goto done;
        if (PyUnicode_GET_LENGTH(r) > 60)
            Py_SETREF(r, PyUnicode_Substring(r, 0, 60));
        out = r ? PyUnicode_FromFormat("%s%s%s <- %U", p->name, p->name[0] ? ": " : "", p->type,
                                       r) : NULL;
        Py_XDECREF(r);
    }
done:
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    return out;
}

/* Debug mode: wait for the launch to finish, and if it failed, say which launch. */
static int
debug_check(cukit_Kernel *k, const cukit_launch_cfg *c, PyObject *const *args)
{
    /* During a capture the launch is recorded, not run, and a synchronize would
     * break the capture: nothing to wait for. */
    if (cukit_capture_active(k->st))
        return 0;
    CUresult res;
    Py_BEGIN_ALLOW_THREADS
    res = cukit_api.cuCtxSynchronize();
    Py_END_ALLOW_THREADS
    if (cukit_check_cu(k->st, res, "cuCtxSynchronize") == 0)
        return 0;
    PyObject *exc = PyErr_GetRaisedException();
    PyObject *lines = PyList_New(0);
    PyObject *head = PyUnicode_FromFormat(
        "%S\n(debug mode) the launch that failed: %s with grid=(%u, %u, %u), block=(%u, %u, %u), "
        "shared_mem=%u; its arguments:", exc, k->sig->name, c->grid[0], c->grid[1], c->grid[2],
        c->block[0], c->block[1], c->block[2], c->shared);
    if (lines == NULL || head == NULL || PyList_Append(lines, head) < 0)
        goto done;
    for (int i = 0; i < k->sig->nparams; i++) {
        PyObject *d = describe_arg(&k->sig->params[i], args[i]);
        PyObject *line = d ? PyUnicode_FromFormat("    %U", d) : NULL;
        Py_XDECREF(d);
        if (line == NULL || PyList_Append(lines, line) < 0) {
            Py_XDECREF(line);
            goto done;
        }
        Py_DECREF(line);
    }
    PyObject *nl = PyUnicode_FromString("\n");
    PyObject *msg = nl ? PyUnicode_Join(nl, lines) : NULL;
    PyObject *newargs = msg ? PyTuple_Pack(1, msg) : NULL;
    if (newargs)
        PyObject_SetAttrString(exc, "args", newargs);
    Py_XDECREF(nl);
    Py_XDECREF(msg);
    Py_XDECREF(newargs);
done:
    PyErr_Clear(); /* describing failed: the driver's own error still stands */
    Py_XDECREF(head);
    Py_XDECREF(lines);
    PyErr_SetRaisedException(exc);
    return -1;
}

int
cukit_kernel_debug_check(cukit_Kernel *k, const cukit_launch_cfg *cfg, PyObject *const *args)
{
    return k->st->launch->debug ? debug_check(k, cfg, args) : 0;
}

static PyObject *
mod_set_debug(PyObject *m, PyObject *arg)
{
    cukit_state *st = PyModule_GetState(m);
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    PyObject *was = PyBool_FromLong(st->launch->debug);
    st->launch->debug = on;
    return was;
}

static PyMethodDef kernel_functions[] = {
    {"set_debug", mod_set_debug, METH_O,
     "set_debug(on) -> bool: in debug mode every launch waits for the kernel to finish, and "
     "a fault names the kernel, its grid and block, and its arguments' types and shapes. "
     "Slow: for finding a bug. CUKIT_DEBUG=1 turns it on at import. Returns the old setting."},
    {NULL},
};

/* A wrong count of arguments: where the kernel's arguments came as keywords, say that
 * they go by position; else the count. -1 with TypeError. */
static int
arg_count_error(cukit_Kernel *k, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const launch_words[] = {"grid", "block", "shared_mem", "stream",
                                               "n", "cooperative", "cluster"};
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i);
        size_t w = 0;
        while (w < sizeof launch_words / sizeof *launch_words &&
               PyUnicode_CompareWithASCIIString(key, launch_words[w]) != 0)
            w++;
        if (w == sizeof launch_words / sizeof *launch_words) {
            PyObject *shown = cukit_signature_str(k->sig);
            if (shown)
                PyErr_Format(PyExc_TypeError,
                             "%s() takes the kernel's %d argument%s by position, in the "
                             "kernel's order, not as keywords (%U= given); the kernel is %U",
                             k->sig->name, k->sig->nparams, k->sig->nparams == 1 ? "" : "s",
                             key, shown);
            Py_XDECREF(shown);
            return -1;
        }
    }
    return cukit_arg_count_error(k->sig, nargs);
}

static PyObject *
kernel_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    cukit_Kernel *k = (cukit_Kernel *)callable;
    const cukit_Signature *sig = k->sig;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    cukit_launch_cfg cfg;
    if (nargs != sig->nparams) {
        arg_count_error(k, nargs, kwnames);
        return NULL;
    }
    if (cukit_launch_config(k, args + nargs, kwnames, 1, &cfg) < 0)
        return NULL;

    cukit_params p;
    if (cukit_params_init(&p, sig) < 0)
        return NULL;
    PyObject *result = NULL;
    if (cukit_kernel_pack(k, args, p.buf, p.ptrs) == 0 &&
        (k->st->capture == NULL ? cukit_kernel_launch(k, &cfg, p.ptrs)
                                : cukit_capture_launch(k, &cfg, args, p.buf, p.ptrs)) == 0 &&
        cukit_kernel_keep_for_capture(k, &cfg, args) == 0 &&
        (!k->st->launch->debug || debug_check(k, &cfg, args) == 0))
        result = Py_NewRef(Py_None);
    cukit_params_release(&p);
    return result;
}

/* ------------------------------------------------------------------ occupancy */

static PyObject *
kernel_max_active_blocks(cukit_Kernel *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"block", "shared_mem", NULL};
    PyObject *block_o;
    Py_ssize_t shared = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|n:max_active_blocks", kwlist, &block_o,
                                     &shared))
        return NULL;
    unsigned int block[3];
    if (parse_dims(block_o, "block", block) < 0)
        return NULL;
    int n = 0;
    if (cukit_device_activate(self->device) < 0 ||
        CU_CALL(self->st, cuOccupancyMaxActiveBlocksPerMultiprocessor,
                (&n, self->func, (int)(block[0] * block[1] * block[2]), (size_t)shared)) < 0)
        return NULL;
    return PyLong_FromLong(n);
}

static PyObject *
kernel_suggest_block_size(cukit_Kernel *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shared_mem", NULL};
    Py_ssize_t shared = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|n:suggest_block_size", kwlist, &shared))
        return NULL;
    int block = best_block(self, (size_t)shared);
    return block < 0 ? NULL : PyLong_FromLong(block);
}

static PyObject *
kernel_prepare(cukit_Kernel *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs != 0) {
        PyErr_SetString(PyExc_TypeError,
                        "prepare() takes only keywords: grid=, block=, shared_mem=, stream=, ...");
        return NULL;
    }
    cukit_state *st = self->st;
    cukit_Prepared *p = PyObject_GC_New(cukit_Prepared, st->launch->PreparedType);
    if (p == NULL)
        return NULL;
    const cukit_Signature *sig = self->sig;
    size_t rounded = (sig->arg_bytes + 15) / 16 * 16;
    p->vectorcall = NULL;
    p->kernel = (cukit_Kernel *)Py_NewRef(self);
    p->stream = NULL;
    p->buf = PyMem_Calloc(1, rounded + (size_t)sig->nparams * sizeof(void *) + 16);
    p->last = PyMem_Calloc((size_t)sig->nparams + 1, sizeof(PyObject *));
    PyObject_GC_Track(p);
    if (p->buf == NULL || p->last == NULL) {
        Py_DECREF(p);
        return PyErr_NoMemory();
    }
    p->ptrs = (void **)(p->buf + rounded);
    for (int i = 0; i < sig->nparams; i++)
        p->ptrs[i] = p->buf + sig->params[i].offset;
    if (cukit_launch_config(self, args, kwnames, 1, &p->cfg) < 0) {
        Py_DECREF(p);
        return NULL;
    }
    p->stream = Py_NewRef(p->cfg.stream_arg ? p->cfg.stream_arg : Py_None);
    p->vectorcall = cukit_prepared_vectorcall;
    return (PyObject *)p;
}

/* ------------------------------------------------------------------ attributes */

static PyObject *
kernel_attributes(cukit_Kernel *self, void *c)
{
    static const struct {
        const char *name;
        int attr;
    } table[] = {
        {"max_threads_per_block", CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
        {"num_regs", CU_FUNC_ATTRIBUTE_NUM_REGS},
        {"shared_size_bytes", CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES},
        {"local_size_bytes", CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES},
        {"const_size_bytes", CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES},
        {"max_dynamic_shared_size_bytes", CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES},
        {"ptx_version", CU_FUNC_ATTRIBUTE_PTX_VERSION},
        {"binary_version", CU_FUNC_ATTRIBUTE_BINARY_VERSION},
    };
    PyObject *out = PyDict_New();
    for (size_t i = 0; out && i < sizeof table / sizeof *table; i++) {
        int v = 0;
        if (CU_CALL(self->st, cuFuncGetAttribute, (&v, table[i].attr, self->func)) < 0) {
            Py_CLEAR(out);
            break;
        }
        PyObject *pv = PyLong_FromLong(v);
        if (pv == NULL || PyDict_SetItemString(out, table[i].name, pv) < 0)
            Py_CLEAR(out);
        Py_XDECREF(pv);
    }
    return out;
}

/* set_attribute(attr, value): cuFuncSetAttribute with a CUfunction_attribute number.
 * Returns None; the driver's refusal is raised as its error. */
static PyObject *
kernel_set_attribute(cukit_Kernel *self, PyObject *args)
{
    int attr, value;
    if (!PyArg_ParseTuple(args, "ii:set_attribute", &attr, &value))
        return NULL;
    if (cukit_device_activate(self->device) < 0 ||
        CU_CALL(self->st, cuFuncSetAttribute, (self->func, attr, value)) < 0)
        return NULL;
    if (attr == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
        self->dyn_shared_set = value; /* the launch path raises it again only beyond this */
    Py_RETURN_NONE;
}

static PyObject *
kernel_get_name(cukit_Kernel *self, void *c)
{
    return PyUnicode_FromString(self->sig->name);
}

static PyObject *
kernel_get_handle(cukit_Kernel *self, void *c)
{
    return PyLong_FromVoidPtr(self->func);
}

static PyObject *
kernel_repr(cukit_Kernel *self)
{
    PyObject *s = cukit_signature_str(self->sig);
    if (s == NULL)
        return NULL;
    PyObject *out = PyUnicode_FromFormat("<cukit.Kernel %U on device %d>", s, self->device->ordinal);
    Py_DECREF(s);
    return out;
}

static PyObject *
kernel_strict(cukit_Kernel *self, PyObject *Py_UNUSED(ignored))
{
    cukit_Kernel *k = cukit_kernel_create(self->module, self->func, self->sig);
    if (k != NULL)
        k->strict = 1;
    return (PyObject *)k;
}

static PyObject *
kernel_get_strict(cukit_Kernel *self, void *c)
{
    return PyBool_FromLong(self->strict);
}

static PyMemberDef kernel_members[] = {
    {"__vectorcalloffset__", Py_T_PYSSIZET, offsetof(cukit_Kernel, vectorcall), Py_READONLY},
    {"signature", Py_T_OBJECT_EX, offsetof(cukit_Kernel, sig), Py_READONLY,
     "The declared parameter list, laid out by the compiled kernel."},
    {"module", Py_T_OBJECT_EX, offsetof(cukit_Kernel, module), Py_READONLY, "The Module."},
    {"device", Py_T_OBJECT_EX, offsetof(cukit_Kernel, device), Py_READONLY, "The Device."},
    {NULL},
};

static PyMethodDef kernel_methods[] = {
    {"prepare", (PyCFunction)(void (*)(void))kernel_prepare, METH_FASTCALL | METH_KEYWORDS,
     "prepare(grid=, block=, shared_mem=0, stream=None, ...) -> PreparedLaunch: bind the "
     "configuration once; then call it with the kernel's arguments alone."},
    {"max_active_blocks", (PyCFunction)(void (*)(void))kernel_max_active_blocks,
     METH_VARARGS | METH_KEYWORDS,
     "max_active_blocks(block, shared_mem=0) -> int: resident blocks per multiprocessor."},
    {"suggest_block_size", (PyCFunction)(void (*)(void))kernel_suggest_block_size,
     METH_VARARGS | METH_KEYWORDS,
     "suggest_block_size(shared_mem=0) -> int: the block size with the best occupancy."},
    {"set_attribute", (PyCFunction)kernel_set_attribute, METH_VARARGS,
     "set_attribute(attr, value): set a function attribute by its CUfunction_attribute "
     "number (cuFuncSetAttribute), e.g. 8 (max dynamic shared memory) or 9 (preferred "
     "shared memory carveout)."},
    {"strict", (PyCFunction)kernel_strict, METH_NOARGS,
     "strict() -> Kernel: the same kernel, refusing plain Python int, float and bool arguments "
     "(numbers must be numpy scalars, whose C type is explicit), as PyCUDA programs expect. "
     "Prepared launches of it take Python numbers as usual."},
    {NULL},
};

static PyGetSetDef kernel_getset[] = {
    {"name", (getter)kernel_get_name, NULL, "The kernel's name."},
    {"attributes", (getter)kernel_attributes, NULL,
     "Registers, static shared, local and constant memory, max threads per block, ..."},
    {"handle", (getter)kernel_get_handle, NULL, "The CUfunction, as an int."},
    {"is_strict", (getter)kernel_get_strict, NULL,
     "True for a kernel from strict(): plain Python numbers are refused."},
    {NULL},
};

static PyType_Slot kernel_slots[] = {
    {Py_tp_doc, "Kernel: a __global__ function ready to launch.\n\n"
                "kernel(*args, grid, block, shared_mem=0, stream=None). Each argument is "
                "converted to the parameter's declared C type, with range and dtype checks."},
    {Py_tp_dealloc, kernel_dealloc},
    {Py_tp_traverse, kernel_traverse},
    {Py_tp_clear, kernel_clear},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_repr, kernel_repr},
    {Py_tp_members, kernel_members},
    {Py_tp_getset, kernel_getset},
    {Py_tp_methods, kernel_methods},
    {0, NULL},
};

static PyType_Spec kernel_spec = {
    .name = "cukit.Kernel",
    .basicsize = sizeof(cukit_Kernel),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = kernel_slots,
};

int
cukit_kernel_setup(PyObject *module, cukit_state *st)
{
    st->launch->KernelType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &kernel_spec, NULL);
    if (st->launch->KernelType == NULL || PyModule_AddType(module, st->launch->KernelType) < 0)
        return -1;
    const char *env = getenv("CUKIT_DEBUG");
    st->launch->debug = env && env[0] && strcmp(env, "0") != 0;
    if (cukit_capture_setup(module, st) < 0)
        return -1;
    return PyModule_AddFunctions(module, kernel_functions);
}
