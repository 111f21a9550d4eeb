/* module.c - cukit.Module: code loaded on a device, kernel lookup, get_global */
#include "launch/launch.h"

cukit_Module *
cukit_module_create(cukit_state *st, cukit_Device *dev, const void *image, PyObject *signatures,
                    PyObject *symbols, const char *arch)
{
    cukit_Module *self = PyObject_GC_New(cukit_Module, st->launch->ModuleType);
    if (self == NULL)
        return NULL;
    self->st = st;
    self->device = (cukit_Device *)Py_NewRef(dev);
    self->handle = NULL;
    self->signatures = signatures ? Py_NewRef(signatures) : PyDict_New();
    self->symbols = symbols ? Py_NewRef(symbols) : PyDict_New();
    self->kernels = PyDict_New();
    self->arch = PyUnicode_FromString(arch);
    self->globals = NULL;
    self->image = NULL;
    self->origin = NULL;
    PyObject_GC_Track(self);
    if (!self->signatures || !self->symbols || !self->kernels || !self->arch)
        goto error;
    if (cukit_device_activate(dev) < 0)
        goto error;
    CU_CALL_NOGIL(st, cuModuleLoadData, (&self->handle, image));
    return self;
error:
    Py_DECREF(self);
    return NULL;
}

static int
module_traverse(cukit_Module *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->kernels);
    return 0;
}

static int
module_clear(cukit_Module *self)
{
    Py_CLEAR(self->kernels);
    return 0;
}

static void
module_dealloc(cukit_Module *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->handle) {
        PyObject *saved = PyErr_GetRaisedException();
        CUresult res = CUDA_SUCCESS;
        if (cukit_device_activate(self->device) == 0) {
            int mode = cukit_capture_relax(self->st, 1); /* dropped during a capture */
            res = cukit_api.cuModuleUnload(self->handle);
            cukit_capture_restore(mode);
        }
        else
            PyErr_Clear();
        /* After a kernel fault every call fails; the user has already been told. */
        if (res != CUDA_SUCCESS && !cukit_cu_is_sticky(res) &&
            cukit_check_cu(self->st, res, "cuModuleUnload") < 0)
            PyErr_WriteUnraisable((PyObject *)tp); /* not self: its count is 0 */
        PyErr_SetRaisedException(saved);
    }
    module_clear(self);
    Py_CLEAR(self->signatures);
    Py_CLEAR(self->symbols);
    Py_CLEAR(self->arch);
    Py_CLEAR(self->globals);
    Py_CLEAR(self->image);
    Py_CLEAR(self->origin);
    Py_CLEAR(self->device);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

/* AttributeError listing the kernels this module has. Returns NULL. */
static PyObject *
no_such_kernel(cukit_Module *self, PyObject *name)
{
    PyObject *keys = PyDict_Keys(self->signatures);
    PyObject *sep = PyUnicode_FromString(", ");
    PyObject *listed = keys && sep ? PyUnicode_Join(sep, keys) : NULL;
    if (listed)
        PyErr_Format(PyExc_AttributeError,
                     "the module has no kernel %R; its kernels are: %s%U",
                     name, PyDict_GET_SIZE(self->signatures) ? "" : "(none)", listed);
    Py_XDECREF(keys);
    Py_XDECREF(sep);
    Py_XDECREF(listed);
    return NULL;
}

/* A Kernel for func from the sizes of its parameters alone (CUKIT_P_RAW), or NULL. */
static cukit_Kernel *
kernel_of_sizes(cukit_Module *self, CUfunction func, const char *shown, PyObject *name)
{
    if (cukit_api.cuFuncGetParamInfo == NULL)
        return (cukit_Kernel *)PyErr_Format(
            PyExc_AttributeError,
            "kernel %R is in the module, but nothing says its parameters: no source declares "
            "them, and this driver cannot list them (cuFuncGetParamInfo needs CUDA 12.4 or "
            "newer); pass its parameter list: module.get_kernel(%R, signature=\"(float a, "
            "const float* x, int n)\")", name, name);
    size_t offsets[CUKIT_MAX_PARAMS], sizes[CUKIT_MAX_PARAMS];
    int n = 0;
    while (n < CUKIT_MAX_PARAMS &&
           cukit_api.cuFuncGetParamInfo(func, (size_t)n, &offsets[n], &sizes[n]) == CUDA_SUCCESS)
        n++;
    cukit_Signature *sig = cukit_signature_of_sizes(self->st, shown, n, offsets, sizes);
    if (sig == NULL)
        return NULL;
    cukit_Kernel *k = cukit_kernel_create(self, func, sig);
    Py_DECREF(sig);
    return k;
}


/* The kernel `name` that no declaration of the module's source names: a C++ kernel
 * asked for by its mangled name (PyCUDA's get_function("_Z10initkerneli")), or one
 * of code loaded from an image. Its parameters are read from the name where it is
 * mangled, else from the kernel's own sizes. New ref (cached in kernels) or NULL. */
static PyObject *
kernel_without_signature(cukit_Module *self, PyObject *name)
{
    cukit_state *st = self->st;
    PyObject *k, *v, *found = NULL;
    Py_ssize_t pos = 0;
    while (PyDict_Next(self->symbols, &pos, &k, &v)) {
        int same = PyObject_RichCompareBool(v, name, Py_EQ);
        if (same < 0)
            return NULL;
        if (same) {
            found = k; /* the mangled name of a kernel read from source */
            break;
        }
    }
    cukit_Kernel *kernel = NULL;
    if (found) {
        kernel = (cukit_Kernel *)cukit_module_get_kernel(self, found, NULL);
        if (kernel == NULL)
            return NULL;
        goto done;
    }
    const char *sym = PyUnicode_AsUTF8(name);
    CUfunction func = NULL;
    if (sym == NULL || cukit_device_activate(self->device) < 0)
        return NULL;
    if (cukit_api.cuModuleGetFunction(&func, self->handle, sym) != CUDA_SUCCESS)
        return no_such_kernel(self, name);
    char dname[256], params[1024];
    int read = cukit_demangle_kernel(sym, dname, sizeof dname, params, sizeof params);
    if (read < 0)
        return PyErr_NoMemory();
    if (read) {
        cukit_Signature *sig = cukit_signature_from_decl(st, params, dname);
        if (sig != NULL) {
            sig->extern_c = 1; /* its symbol is the name asked for */
            kernel = cukit_kernel_create(self, func, sig);
            Py_DECREF(sig);
        }
        if (kernel == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_TypeError) &&
                !PyErr_ExceptionMatches(PyExc_ValueError))
                return NULL;
            PyErr_Clear(); /* a list the kernel disagrees with: its sizes decide */
        }
    }
    if (kernel == NULL)
        kernel = kernel_of_sizes(self, func, read ? dname : sym, name);
    if (kernel == NULL)
        return NULL;
done:
    if (PyDict_SetItem(self->kernels, name, (PyObject *)kernel) < 0) {
        Py_DECREF(kernel);
        return NULL;
    }
    return (PyObject *)kernel;
}

/* The kernel `name`, with `signature` (str, Signature or NULL for the parsed one). */
PyObject *
cukit_module_get_kernel(cukit_Module *self, PyObject *name, PyObject *signature)
{
    cukit_state *st = self->st;
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "a kernel name must be a str, not %s", Py_TYPE(name)->tp_name);
        return NULL;
    }
    if (signature == NULL || signature == Py_None) {
        PyObject *have = PyDict_GetItemWithError(self->kernels, name);
        if (have || PyErr_Occurred())
            return Py_XNewRef(have);
    }
    cukit_Signature *sig;
    if (signature == NULL || signature == Py_None) {
        sig = (cukit_Signature *)PyDict_GetItemWithError(self->signatures, name);
        if (sig == NULL)
            return PyErr_Occurred() ? NULL : kernel_without_signature(self, name);
        Py_INCREF(sig);
    }
    else if (Py_IS_TYPE(signature, st->declarations->SignatureType)) {
        sig = (cukit_Signature *)Py_NewRef(signature);
    }
    else if (PyUnicode_Check(signature)) {
        const char *decl = PyUnicode_AsUTF8(signature), *kname = PyUnicode_AsUTF8(name);
        if (decl == NULL || kname == NULL)
            return NULL;
        sig = cukit_signature_from_decl(st, decl, kname);
        if (sig == NULL)
            return NULL;
    }
    else {
        PyErr_SetString(PyExc_TypeError,
                        "signature must be a str such as \"(float a, float* x)\" or a Signature");
        return NULL;
    }
    PyObject *symbol = PyDict_GetItemWithError(self->symbols, name);
    if (symbol == NULL && PyErr_Occurred()) {
        Py_DECREF(sig);
        return NULL;
    }
    const char *sym = PyUnicode_AsUTF8(symbol ? symbol : name);
    CUfunction func = NULL;
    if (sym == NULL || cukit_device_activate(self->device) < 0) {
        Py_DECREF(sig);
        return NULL;
    }
    CUresult res = cukit_api.cuModuleGetFunction(&func, self->handle, sym);
    if (res == CUDA_ERROR_NOT_FOUND) {
        Py_DECREF(sig);
        PyErr_Format(PyExc_AttributeError,
                     "kernel %R is declared but not in the compiled code: is it only declared, "
                     "never defined? (for a C++ kernel, is its name spelled as in the source?)",
                     name);
        return NULL;
    }
    if (cukit_check_cu(st, res, "cuModuleGetFunction") < 0) {
        Py_DECREF(sig);
        return NULL;
    }
    cukit_Kernel *k = cukit_kernel_create(self, func, sig);
    Py_DECREF(sig);
    if (k == NULL)
        return NULL;
    if ((signature == NULL || signature == Py_None) &&
        PyDict_SetItem(self->kernels, name, (PyObject *)k) < 0) {
        Py_DECREF(k);
        return NULL;
    }
    return (PyObject *)k;
}

static PyObject *
module_get_kernel(cukit_Module *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"name", "signature", NULL};
    PyObject *name, *signature = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:get_kernel", kwlist, &name, &signature))
        return NULL;
    return cukit_module_get_kernel(self, name, signature);
}

/* module.get_global(name, dtype=None, shape=None): an Array over a __device__ or
 * __constant__ variable. Its type and shape come from the declaration when cukit
 * read one; dtype/shape override. The array keeps the module loaded. */
static PyObject *
module_get_global(cukit_Module *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"name", "dtype", "shape", NULL};
    PyObject *name, *dtype_arg = Py_None, *shape_arg = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U|OO:get_global", kwlist, &name, &dtype_arg,
                                     &shape_arg))
        return NULL;
    cukit_state *st = self->st;
    /* A variable in a namespace is reached through the name expression "&ns::v". */
    PyObject *amp = PyUnicode_FromFormat("&%U", name);
    if (amp == NULL)
        return NULL;
    PyObject *symbol = PyDict_GetItemWithError(self->symbols, amp);
    Py_DECREF(amp);
    if (symbol == NULL && PyErr_Occurred())
        return NULL;
    const char *sym = PyUnicode_AsUTF8(symbol ? symbol : name);
    if (sym == NULL || cukit_device_activate(self->device) < 0)
        return NULL;
    CUdeviceptr ptr = 0;
    size_t bytes = 0;
    CUresult res = cukit_api.cuModuleGetGlobal(&ptr, &bytes, self->handle, sym);
    if (res == CUDA_ERROR_NOT_FOUND) {
        PyErr_Format(PyExc_AttributeError,
                     "the module has no __device__ or __constant__ variable %R (one in a "
                     "namespace needs name_expressions=[\"&ns::name\"] at compile time)", name);
        return NULL;
    }
    if (cukit_check_cu(st, res, "cuModuleGetGlobal") < 0)
        return NULL;

    PyObject *declared = self->globals ? PyDict_GetItemWithError(self->globals, name) : NULL;
    if (declared == NULL && PyErr_Occurred())
        return NULL;
    PyObject *dtype = NULL, *result = NULL;
    Py_ssize_t shape[CUKIT_MAXDIM];
    int ndim = -1;
    if (dtype_arg != Py_None) {
        dtype = cukit_resolve_dtype(st, dtype_arg);
    }
    else {
        int tc = declared ? (int)PyLong_AsLong(PyTuple_GET_ITEM(declared, 0)) : CUKIT_TC_OTHER;
        const char *tname = tc == CUKIT_TC_OTHER ? "uint8" : cukit_typecode_name(tc);
        PyObject *s = PyUnicode_FromString(tname);
        dtype = s ? cukit_resolve_dtype(st, s) : NULL;
        Py_XDECREF(s);
        if (dtype == NULL && tc == CUKIT_TC_BF16) {
            PyErr_Clear(); /* numpy knows bfloat16 only with ml_dtypes: raw 2-byte words */
            PyObject *u = PyUnicode_FromString("uint16");
            dtype = u ? cukit_resolve_dtype(st, u) : NULL;
            Py_XDECREF(u);
        }
    }
    if (dtype == NULL)
        return NULL;
    PyObject *isz = PyObject_GetAttrString(dtype, "itemsize");
    Py_ssize_t itemsize = isz ? PyLong_AsSsize_t(isz) : -1;
    Py_XDECREF(isz);
    if (itemsize <= 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "dtype %S has no size", dtype);
        goto done;
    }
    PyObject *shape_src = shape_arg != Py_None ? shape_arg
                        : (declared && dtype_arg == Py_None) ? PyTuple_GET_ITEM(declared, 1)
                                                             : Py_None;
    if (shape_src != Py_None) {
        PyObject *t = PyLong_Check(shape_src) ? PyTuple_Pack(1, shape_src) : PySequence_Tuple(shape_src);
        if (t == NULL)
            goto done;
        ndim = (int)PyTuple_GET_SIZE(t);
        for (int i = 0; i < ndim && i < CUKIT_MAXDIM; i++)
            shape[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, i));
        Py_DECREF(t);
        if (ndim > CUKIT_MAXDIM || PyErr_Occurred()) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "shape has more than %d dimensions", CUKIT_MAXDIM);
            goto done;
        }
    }
    Py_ssize_t count = 1, total;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "shape must not be negative");
            goto done;
        }
        if (__builtin_mul_overflow(count, shape[i], &count)) {
            PyErr_Format(PyExc_ValueError, "shape %R is too large", shape_src);
            goto done;
        }
    }
    if (ndim < 0) { /* not declared or overridden dtype: as many elements as fit */
        ndim = 1;
        shape[0] = (Py_ssize_t)bytes / itemsize;
        count = shape[0];
    }
    if (__builtin_mul_overflow(count, itemsize, &total) || (size_t)total > bytes) {
        PyErr_Format(PyExc_ValueError,
                     "variable %R has %zu bytes, too few for shape %R of %S (%zd bytes)", name,
                     bytes, shape_src == Py_None ? Py_None : shape_src, dtype,
                     (Py_ssize_t)((size_t)count * (size_t)itemsize));
        goto done;
    }
    result = st->hooks.array_wrap(st, self->device, ptr, (PyObject *)self, dtype, ndim, shape,
                                  NULL, 0);
done:
    Py_DECREF(dtype);
    return result;
}

static PyObject *
module_getattro(cukit_Module *self, PyObject *name)
{
    PyObject *v = PyObject_GenericGetAttr((PyObject *)self, name);
    if (v != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return v;
    const char *s = PyUnicode_AsUTF8(name);
    if (s == NULL || s[0] == '_')
        return NULL; /* dunder lookups (copy, pickle) keep their AttributeError */
    PyErr_Clear();
    return cukit_module_get_kernel(self, name, NULL);
}

static PyObject *
module_dir(cukit_Module *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *base = PyObject_CallMethod((PyObject *)&PyBaseObject_Type, "__dir__", "O", self);
    if (base == NULL)
        return NULL;
    PyObject *keys = PyDict_Keys(self->signatures);
    if (keys == NULL || PyList_SetSlice(base, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, keys) < 0) {
        Py_XDECREF(keys);
        Py_DECREF(base);
        return NULL;
    }
    Py_DECREF(keys);
    return base;
}

static PyObject *
module_get_kernels(cukit_Module *self, void *c)
{
    PyObject *keys = PyDict_Keys(self->signatures);
    if (keys == NULL)
        return NULL;
    PyObject *t = PyList_AsTuple(keys);
    Py_DECREF(keys);
    return t;
}

static PyObject *
module_get_handle(cukit_Module *self, void *c)
{
    return PyLong_FromVoidPtr(self->handle);
}

static PyObject *
module_repr(cukit_Module *self)
{
    return PyUnicode_FromFormat("<cukit.Module %U on device %d, kernels %R>", self->arch,
                                self->device->ordinal, self->signatures);
}

static PyMemberDef module_members[] = {
    {"device", Py_T_OBJECT_EX, offsetof(cukit_Module, device), Py_READONLY,
     "The Device the code is loaded on."},
    {"arch", Py_T_OBJECT_EX, offsetof(cukit_Module, arch), Py_READONLY,
     "What it was compiled for, e.g. 'sm_90'."},
    {NULL},
};

static PyGetSetDef module_getset[] = {
    {"kernels", (getter)module_get_kernels, NULL, "Names of the kernels, in source order."},
    {"handle", (getter)module_get_handle, NULL, "The CUmodule, as an int."},
    {NULL},
};

static PyMethodDef module_methods[] = {
    {"get_global", (PyCFunction)(void (*)(void))module_get_global, METH_VARARGS | METH_KEYWORDS,
     "get_global(name, dtype=None, shape=None) -> Array: a view of a __device__ or "
     "__constant__ variable, typed and shaped as declared in the source (or as given). "
     "Reading and writing it with get()/set() reads and writes the variable."},
    {"get_kernel", (PyCFunction)(void (*)(void))module_get_kernel, METH_VARARGS | METH_KEYWORDS,
     "get_kernel(name, signature=None) -> Kernel. signature overrides the parsed parameter "
     "list, e.g. \"(float a, const float* x, int n)\"."},
    {"__dir__", (PyCFunction)module_dir, METH_NOARGS, NULL},
    {"load", (PyCFunction)(void (*)(void))cukit_module_load, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Module.load(path_or_bytes, device=None) -> Module: load a cubin, fatbin or PTX (bytes, or "
     "a file's path) on the device. Its kernels have no parsed signatures: "
     "get_kernel(name, signature=\"(float a, const float* x, int n)\")."},
    {NULL},
};

static PyType_Slot module_slots[] = {
    {Py_tp_doc, "Module: compiled code loaded on a device. Made by cukit.compile(), "
                "Program.load(), cukit.link() or Module.load(); module.name or "
                "module.get_kernel(name) gives a Kernel."},
    {Py_tp_dealloc, module_dealloc},
    {Py_tp_traverse, module_traverse},
    {Py_tp_clear, module_clear},
    {Py_tp_getattro, module_getattro},
    {Py_tp_repr, module_repr},
    {Py_tp_members, module_members},
    {Py_tp_getset, module_getset},
    {Py_tp_methods, module_methods},
    {0, NULL},
};

static PyType_Spec module_spec = {
    .name = "cukit.Module",
    .basicsize = sizeof(cukit_Module),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = module_slots,
};

int
cukit_module_setup(PyObject *module, cukit_state *st)
{
    st->launch->ModuleType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &module_spec, NULL);
    if (st->launch->ModuleType == NULL)
        return -1;
    return PyModule_AddType(module, st->launch->ModuleType);
}
