/* signature.c - cukit.Signature: a kernel's parameter list, its layout, and packing arguments by it
 *
 * The lists come from declarations.c, which reads them from CUDA C source. They
 * never have the last word on layout: a kernel's Signature is checked against the
 * compiled kernel's own parameter sizes before any launch. */
#include "compile/parse.h"

#include <string.h>

/* ------------------------------------------------------------------ the object */

char *
cukit_text_dup(const char *s, size_t n)
{
    char *out = PyMem_Malloc(n + 1);
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

cukit_Signature *
cukit_signature_alloc(cukit_state *st, const char *name, int nparams)
{
    cukit_Signature *sig = PyObject_New(cukit_Signature, st->SignatureType);
    if (sig == NULL)
        return NULL;
    sig->name = NULL;
    sig->params = NULL;
    sig->nparams = 0;
    sig->extern_c = 0;
    sig->arg_bytes = 0;
    sig->verified = 0;
    sig->name = cukit_text_dup(name, strlen(name));
    sig->params = PyMem_Calloc(nparams ? (size_t)nparams : 1, sizeof(cukit_param));
    if (sig->name == NULL || sig->params == NULL) {
        Py_DECREF(sig);
        return (cukit_Signature *)PyErr_NoMemory();
    }
    return sig;
}

static void
signature_dealloc(cukit_Signature *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    for (int i = 0; i < self->nparams; i++) {
        PyMem_Free(self->params[i].type);
        PyMem_Free(self->params[i].name);
    }
    PyMem_Free(self->params);
    PyMem_Free(self->name);
    PyObject_Free(self);
    Py_DECREF(tp);
}

cukit_Signature *
cukit_signature_from_decl(cukit_state *st, const char *decl, const char *name)
{
    /* Read it as a kernel so the one parser handles both. */
    PyObject *src = PyUnicode_FromFormat("extern \"C\" __global__ void %s%s%s%s;",
                                         strchr(decl, '(') ? "" : (name ? name : "kernel"),
                                         strchr(decl, '(') ? "" : "(", decl,
                                         strchr(decl, '(') ? "" : ")");
    if (src == NULL)
        return NULL;
    PyObject *found = cukit_signatures_parse(st, PyUnicode_AsUTF8(src), NULL, NULL, NULL);
    Py_DECREF(src);
    if (found == NULL)
        return NULL;
    if (PyDict_GET_SIZE(found) != 1) {
        Py_DECREF(found);
        PyErr_Format(PyExc_ValueError,
                     "could not read a parameter list from '%s'; write it as "
                     "\"name(float a, const float* x)\"", decl);
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    PyDict_Next(found, &pos, &k, &v);
    cukit_Signature *sig = (cukit_Signature *)Py_NewRef(v);
    Py_DECREF(found);
    if (name && strcmp(sig->name, name) != 0) {
        char *renamed = cukit_text_dup(name, strlen(name));
        if (renamed == NULL) {
            Py_DECREF(sig);
            return NULL;
        }
        PyMem_Free(sig->name);
        sig->name = renamed;
    }
    return sig;
}

/* A copy of sig with the given layout. */
static cukit_Signature *
with_layout(cukit_state *st, cukit_Signature *sig, const size_t *offsets, const size_t *sizes,
            size_t total)
{
    cukit_Signature *out = cukit_signature_alloc(st, sig->name, sig->nparams);
    if (out == NULL)
        return NULL;
    out->extern_c = sig->extern_c;
    for (int i = 0; i < sig->nparams; i++) {
        out->params[i] = sig->params[i];
        out->params[i].type = cukit_text_dup(sig->params[i].type, strlen(sig->params[i].type));
        out->params[i].name = cukit_text_dup(sig->params[i].name, strlen(sig->params[i].name));
        out->params[i].offset = offsets[i];
        out->params[i].size = sizes[i];
        out->nparams = i + 1;
        if (!out->params[i].type || !out->params[i].name) {
            Py_DECREF(out);
            return NULL;
        }
    }
    out->arg_bytes = total;
    out->verified = 1;
    return out;
}

cukit_Signature *
cukit_signature_verify(cukit_state *st, cukit_Signature *sig, int n, const size_t *offsets,
                       const size_t *sizes)
{
    int ok = n == sig->nparams;
    size_t total = 0;
    for (int i = 0; ok && i < n; i++) {
        const cukit_param *p = &sig->params[i];
        if (p->kind != CUKIT_P_STRUCT || p->size != 0)
            ok = p->size == sizes[i] || (p->kind == CUKIT_P_STRUCT && p->typecode == CUKIT_TC_ANY);
        if (offsets[i] + sizes[i] > total)
            total = offsets[i] + sizes[i];
    }
    if (ok)
        return with_layout(st, sig, offsets, sizes, total);
    PyObject *shown = cukit_signature_str(sig);
    PyObject *sz = PyList_New(0);
    for (int i = 0; sz && i < n; i++) {
        PyObject *v = PyLong_FromSize_t(sizes[i]);
        if (v == NULL || PyList_Append(sz, v) < 0)
            Py_CLEAR(sz);
        Py_XDECREF(v);
    }
    if (shown && sz)
        PyErr_Format(PyExc_TypeError,
                     "cukit read kernel %s as %U, but the compiled kernel has %d parameter%s "
                     "of sizes %R bytes. Declare its parameters with plain C types, or give "
                     "get_kernel(name, signature=\"...\") the right list",
                     sig->name, shown, n, n == 1 ? "" : "s", sz);
    Py_XDECREF(shown);
    Py_XDECREF(sz);
    return NULL;
}

cukit_Signature *
cukit_signature_layout(cukit_state *st, cukit_Signature *sig)
{
    if (sig->verified)
        return (cukit_Signature *)Py_NewRef(sig);
    size_t offsets[CUKIT_MAX_PARAMS], sizes[CUKIT_MAX_PARAMS], at = 0;
    if (sig->nparams > CUKIT_MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "too many parameters");
        return NULL;
    }
    for (int i = 0; i < sig->nparams; i++) {
        size_t size = sig->params[i].size;
        if (size == 0) {
            PyErr_Format(PyExc_TypeError,
                         "the size of struct parameter %d (%s) is known only once the kernel "
                         "is compiled; pack it through a Kernel",
                         i + 1, sig->params[i].type);
            return NULL;
        }
        size_t align = sig->params[i].kind != CUKIT_P_POINTER && sig->params[i].align
                           ? sig->params[i].align : (size >= 8 ? 8 : size);
        at = (at + align - 1) / align * align;
        offsets[i] = at;
        sizes[i] = size;
        at += size;
    }
    return with_layout(st, sig, offsets, sizes, at);
}

PyObject *
cukit_signature_str(cukit_Signature *sig)
{
    PyObject *parts = PyList_New(0);
    if (parts == NULL)
        return NULL;
    for (int i = 0; i < sig->nparams; i++) {
        const cukit_param *p = &sig->params[i];
        PyObject *s = PyUnicode_FromFormat("%s%s%s", p->type, p->name[0] ? " " : "", p->name);
        if (s == NULL || PyList_Append(parts, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(parts);
            return NULL;
        }
        Py_DECREF(s);
    }
    PyObject *sep = PyUnicode_FromString(", ");
    PyObject *joined = sep ? PyUnicode_Join(sep, parts) : NULL;
    Py_XDECREF(sep);
    Py_DECREF(parts);
    if (joined == NULL)
        return NULL;
    PyObject *out = PyUnicode_FromFormat("%s(%U)", sig->name, joined);
    Py_DECREF(joined);
    return out;
}

/* ------------------------------------------------------------------ Python API */

int
cukit_arg_count_error(cukit_Signature *sig, Py_ssize_t given)
{
    PyObject *shown = cukit_signature_str(sig);
    if (shown == NULL)
        return -1;
    PyErr_Format(PyExc_TypeError, "%s() takes %d argument%s but %zd %s given; the kernel is %U",
                 sig->name, sig->nparams, sig->nparams == 1 ? "" : "s", given,
                 given == 1 ? "was" : "were", shown);
    Py_DECREF(shown);
    return -1;
}

static PyObject *
signature_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"declaration", NULL};
    const char *decl;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s:Signature", kwlist, &decl))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    if (strstr(decl, "__global__")) {
        PyObject *all = cukit_signatures_parse(st, decl, NULL, NULL, NULL);
        if (all == NULL)
            return NULL;
        if (PyDict_GET_SIZE(all) != 1) {
            PyErr_Format(PyExc_ValueError, "expected one __global__ declaration, found %zd",
                         PyDict_GET_SIZE(all));
            Py_DECREF(all);
            return NULL;
        }
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        PyDict_Next(all, &pos, &k, &v);
        Py_INCREF(v);
        Py_DECREF(all);
        return v;
    }
    return (PyObject *)cukit_signature_from_decl(st, decl, NULL);
}

static PyObject *
signature_repr(cukit_Signature *self)
{
    PyObject *s = cukit_signature_str(self);
    if (s == NULL)
        return NULL;
    PyObject *out = PyUnicode_FromFormat("<cukit.Signature %U>", s);
    Py_DECREF(s);
    return out;
}

static PyObject *
signature_get_name(cukit_Signature *self, void *c)
{
    return PyUnicode_FromString(self->name);
}

static PyObject *
signature_get_params(cukit_Signature *self, void *c)
{
    PyObject *out = PyTuple_New(self->nparams);
    for (int i = 0; out && i < self->nparams; i++) {
        PyObject *item = Py_BuildValue("(ss)", self->params[i].type, self->params[i].name);
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, item);
    }
    return out;
}

static PyObject *
signature_get_layout(cukit_Signature *self, void *c)
{
    if (!self->verified)
        Py_RETURN_NONE;
    PyObject *out = PyTuple_New(self->nparams);
    for (int i = 0; out && i < self->nparams; i++) {
        PyObject *item = Py_BuildValue("(nn)", (Py_ssize_t)self->params[i].offset,
                                       (Py_ssize_t)self->params[i].size);
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, item);
    }
    return out;
}

static Py_ssize_t
signature_len(cukit_Signature *self)
{
    return self->nparams;
}

static PyObject *
signature_pack(cukit_Signature *self, PyObject *const *args, Py_ssize_t nargs)
{
    cukit_state *st = cukit_state_of_type(Py_TYPE(self));
    if (cukit_numpy(st) < 0) /* numpy scalar types take part in conversion */
        return NULL;
    if (nargs != self->nparams) {
        cukit_arg_count_error(self, nargs);
        return NULL;
    }
    cukit_Signature *laid = cukit_signature_layout(st, self);
    if (laid == NULL)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)laid->arg_bytes);
    if (out != NULL) {
        unsigned char *buf = (unsigned char *)PyBytes_AS_STRING(out);
        memset(buf, 0, laid->arg_bytes);
        for (int i = 0; i < laid->nparams; i++) {
            if (st->hooks.pack_arg(st, laid, i, args[i], buf + laid->params[i].offset, NULL) < 0) {
                Py_CLEAR(out);
                break;
            }
        }
    }
    Py_DECREF(laid);
    return out;
}

static PyGetSetDef signature_getset[] = {
    {"name", (getter)signature_get_name, NULL, "The kernel's name."},
    {"params", (getter)signature_get_params, NULL, "((type, name), ...) as declared."},
    {"layout", (getter)signature_get_layout, NULL,
     "((offset, size), ...) in the compiled kernel's parameter buffer; None if not compiled."},
    {NULL},
};

static PyMethodDef signature_methods[] = {
    {"pack", (PyCFunction)(void (*)(void))signature_pack, METH_FASTCALL,
     "pack(*args) -> bytes: the parameter buffer a launch would pass, for checking "
     "conversions without a GPU."},
    {NULL},
};

static PyType_Slot signature_slots[] = {
    {Py_tp_doc, "Signature(declaration): a kernel's parameter list, e.g.\n"
                "Signature('saxpy(float a, const float* x, float* y, size_t n)')."},
    {Py_tp_new, signature_new},
    {Py_tp_dealloc, signature_dealloc},
    {Py_tp_repr, signature_repr},
    {Py_tp_str, cukit_signature_str},
    {Py_tp_getset, signature_getset},
    {Py_tp_methods, signature_methods},
    {Py_sq_length, signature_len},
    {0, NULL},
};

static PyType_Spec signature_spec = {
    .name = "cukit.Signature",
    .basicsize = sizeof(cukit_Signature),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = signature_slots,
};

int
cukit_signature_setup(PyObject *module, cukit_state *st)
{
    st->SignatureType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &signature_spec, NULL);
    if (st->SignatureType == NULL)
        return -1;
    return PyModule_AddType(module, st->SignatureType);
}
