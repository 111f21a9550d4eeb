/* signature_type.c - cukit.Signature, the Python type: reading a declaration, showing it, packing arguments by it */
#include "declarations/parse.h"

#include <string.h>

static PyObject *
signature_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"declaration", NULL};
    const char *decl;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s:Signature", kwlist, &decl))
        return NULL;
    return (PyObject *)cukit_signature_read(cukit_state_of_type(type), decl);
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
            if (cukit_pack_arg(st, laid, i, args[i], buf + laid->params[i].offset, NULL) < 0) {
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
    {Py_tp_dealloc, cukit_signature_dealloc},
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
    st->declarations->SignatureType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &signature_spec, NULL);
    if (st->declarations->SignatureType == NULL)
        return -1;
    return PyModule_AddType(module, st->declarations->SignatureType);
}
