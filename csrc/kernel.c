/* kernel.c - cukit.Kernel: launch configuration checks, argument packing and launch */
#include "cukit.h"

#include <limits.h>

typedef struct {
    unsigned int v[3];
} dims;

static PyObject *kernel_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames);

cukit_Kernel *
cukit_kernel_create(cukit_Module *mod, CUfunction func, cukit_Signature *parsed)
{
    cukit_state *st = mod->st;
    if (cukit_numpy(st) < 0) /* numpy scalar types take part in argument conversion */
        return NULL;
    size_t offsets[CUKIT_STACK_PARAMS + 1], sizes[CUKIT_STACK_PARAMS + 1];
    cukit_Signature *sig;
    if (cukit_api.cuFuncGetParamInfo) {
        /* The compiled kernel's own layout; the index past the last is INVALID_VALUE. */
        int n = 0;
        while (n <= CUKIT_STACK_PARAMS &&
               cukit_api.cuFuncGetParamInfo(func, (size_t)n, &offsets[n], &sizes[n]) == CUDA_SUCCESS)
            n++;
        sig = cukit_signature_verify(st, parsed, n, offsets, sizes);
    }
    else {
        /* Drivers before CUDA 12.4 cannot say; fall back to the C ABI rules. */
        sig = cukit_signature_layout(st, parsed);
    }
    if (sig == NULL)
        return NULL;
    cukit_Kernel *k = PyObject_GC_New(cukit_Kernel, st->KernelType);
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
    Py_CLEAR(self->module);
    return 0;
}

static void
kernel_dealloc(cukit_Kernel *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    kernel_clear(self);
    Py_CLEAR(self->sig);
    Py_CLEAR(self->device);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

/* ------------------------------------------------------------------ launch */

static int
parse_dims(PyObject *v, const char *what, dims *out)
{
    out->v[0] = out->v[1] = out->v[2] = 1;
    PyObject *items[3] = {v, NULL, NULL};
    Py_ssize_t n = 1;
    if (PyTuple_Check(v) || PyList_Check(v)) {
        n = PySequence_Fast_GET_SIZE(v);
        if (n < 1 || n > 3) {
            PyErr_Format(PyExc_ValueError, "%s must be an int or a tuple of 1 to 3 ints, got %R",
                         what, v);
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            items[i] = PySequence_Fast_GET_ITEM(v, i);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long x;
        if (PyLong_CheckExact(items[i])) {
            x = PyLong_AsLongLong(items[i]);
        }
        else {
            PyObject *idx = PyNumber_Index(items[i]);
            if (idx == NULL) {
                PyErr_Format(PyExc_TypeError, "%s must be an int or a tuple of 1 to 3 ints, got %R",
                             what, v);
                return -1;
            }
            x = PyLong_AsLongLong(idx);
            Py_DECREF(idx);
        }
        if (x == -1 && PyErr_Occurred())
            PyErr_Clear();
        if (x < 1 || x > UINT_MAX) {
            PyErr_Format(PyExc_ValueError, "%s=%R: each dimension must be from 1 to %u", what, v,
                         UINT_MAX);
            return -1;
        }
        out->v[i] = (unsigned int)x;
    }
    return 0;
}

/* Check a launch against the device's and the kernel's limits, before the driver
 * sees it, so the message can name the limit. Raises the shared-memory opt-in
 * when a launch needs more than the default 48 KiB. */
static int
check_config(cukit_Kernel *k, const dims *grid, const dims *block, long long shared)
{
    const cukit_Device *d = k->device;
    static const char axis[] = "xyz";
    for (int i = 0; i < 3; i++) {
        if (block->v[i] > (unsigned)d->max_block[i]) {
            PyErr_Format(PyExc_ValueError,
                         "block dimension %c is %u, but %s allows at most %d "
                         "(attribute max_block_dim_%c)",
                         axis[i], block->v[i], d->name, d->max_block[i], axis[i]);
            return -1;
        }
        if (grid->v[i] > (unsigned)d->max_grid[i]) {
            PyErr_Format(PyExc_ValueError,
                         "grid dimension %c is %u, but %s allows at most %d "
                         "(attribute max_grid_dim_%c)",
                         axis[i], grid->v[i], d->name, d->max_grid[i], axis[i]);
            return -1;
        }
    }
    unsigned long long threads = (unsigned long long)block->v[0] * block->v[1] * block->v[2];
    if (threads > (unsigned long long)k->max_threads) {
        PyErr_Format(PyExc_ValueError,
                     "block of %u x %u x %u = %llu threads, but kernel %s can run at most %d "
                     "threads per block on this device (kernel attribute max_threads_per_block; "
                     "its register use sets it)",
                     block->v[0], block->v[1], block->v[2], threads, k->sig->name, k->max_threads);
        return -1;
    }
    if (shared < 0 || shared + k->static_shared > d->max_shared_optin) {
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

static PyObject *
kernel_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    cukit_Kernel *k = (cukit_Kernel *)callable;
    cukit_state *st = k->st;
    const cukit_Signature *sig = k->sig;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *grid_o = NULL, *block_o = NULL, *shared_o = NULL, *stream_o = NULL;

    if (kwnames != NULL) {
        Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t i = 0; i < nkw; i++) {
            PyObject *key = PyTuple_GET_ITEM(kwnames, i), *val = args[nargs + i];
            if (key == st->str_grid || PyUnicode_CompareWithASCIIString(key, "grid") == 0)
                grid_o = val;
            else if (key == st->str_block || PyUnicode_CompareWithASCIIString(key, "block") == 0)
                block_o = val;
            else if (key == st->str_shared_mem ||
                     PyUnicode_CompareWithASCIIString(key, "shared_mem") == 0)
                shared_o = val;
            else if (key == st->str_stream || PyUnicode_CompareWithASCIIString(key, "stream") == 0)
                stream_o = val;
            else {
                PyErr_Format(PyExc_TypeError,
                             "%s() got an unexpected keyword argument %R; a launch takes the "
                             "kernel's arguments, then grid=, block=, shared_mem= and stream=",
                             sig->name, key);
                return NULL;
            }
        }
    }
    if (grid_o == NULL || block_o == NULL) {
        PyErr_Format(PyExc_TypeError,
                     "%s() needs grid= and block=, e.g. kernel(..., grid=(n + 255) // 256, "
                     "block=256)",
                     sig->name);
        return NULL;
    }
    if (nargs != sig->nparams) {
        cukit_arg_count_error(k->sig, nargs);
        return NULL;
    }
    dims grid, block;
    long long shared = 0;
    CUstream stream = NULL;
    if (parse_dims(grid_o, "grid", &grid) < 0 || parse_dims(block_o, "block", &block) < 0)
        return NULL;
    if (shared_o != NULL) {
        shared = PyLong_AsLongLong(shared_o);
        if (shared == -1 && PyErr_Occurred())
            return NULL;
    }
    if (check_config(k, &grid, &block, shared) < 0 ||
        cukit_stream_handle(st, stream_o, k->device, &stream) < 0)
        return NULL;

    _Alignas(16) unsigned char stack_buf[CUKIT_STACK_ARG_BYTES];
    void *stack_ptrs[CUKIT_STACK_PARAMS];
    unsigned char *buf = stack_buf;
    void **ptrs = stack_ptrs;
    if (sig->arg_bytes > sizeof stack_buf || sig->nparams > CUKIT_STACK_PARAMS) {
        /* Only kernels with more than 4 KiB of parameters get here. */
        size_t rounded = (sig->arg_bytes + 15) / 16 * 16;
        buf = PyMem_Malloc(rounded + (size_t)sig->nparams * sizeof(void *));
        if (buf == NULL)
            return PyErr_NoMemory();
        ptrs = (void **)(buf + rounded);
    }
    PyObject *result = NULL;
    for (int i = 0; i < sig->nparams; i++) {
        unsigned char *slot = buf + sig->params[i].offset;
        if (cukit_pack_arg(st, sig, i, args[i], slot, k->device) < 0)
            goto done;
        ptrs[i] = slot;
    }
    if (cukit_device_activate(k->device) < 0)
        goto done;
    CUresult res;
    Py_BEGIN_ALLOW_THREADS
    res = cukit_api.cuLaunchKernel(k->func, grid.v[0], grid.v[1], grid.v[2], block.v[0],
                                   block.v[1], block.v[2], (unsigned int)shared, stream, ptrs,
                                   NULL);
    Py_END_ALLOW_THREADS
    if (cukit_check_cu(st, res, "cuLaunchKernel") < 0)
        goto done;
    result = Py_NewRef(Py_None);
done:
    if (buf != stack_buf)
        PyMem_Free(buf);
    return result;
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

static PyMemberDef kernel_members[] = {
    {"__vectorcalloffset__", Py_T_PYSSIZET, offsetof(cukit_Kernel, vectorcall), Py_READONLY},
    {"signature", Py_T_OBJECT_EX, offsetof(cukit_Kernel, sig), Py_READONLY,
     "The declared parameter list, laid out by the compiled kernel."},
    {"module", Py_T_OBJECT_EX, offsetof(cukit_Kernel, module), Py_READONLY, "The Module."},
    {"device", Py_T_OBJECT_EX, offsetof(cukit_Kernel, device), Py_READONLY, "The Device."},
    {NULL},
};

static PyGetSetDef kernel_getset[] = {
    {"name", (getter)kernel_get_name, NULL, "The kernel's name."},
    {"attributes", (getter)kernel_attributes, NULL,
     "Registers, static shared, local and constant memory, max threads per block, ..."},
    {"handle", (getter)kernel_get_handle, NULL, "The CUfunction, as an int."},
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
    st->KernelType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &kernel_spec, NULL);
    if (st->KernelType == NULL)
        return -1;
    return PyModule_AddType(module, st->KernelType);
}
