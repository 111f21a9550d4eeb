/* signature.c - a kernel's parameter list as a C object: allocation, layout from the C ABI or the compiled kernel, text
 *
 * The lists come from declarations.c, which reads them from CUDA C source. They
 * never have the last word on layout: a kernel's Signature is checked against the
 * compiled kernel's own parameter sizes before any launch. */
#include "declarations/parse.h"

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
    cukit_Signature *sig = PyObject_New(cukit_Signature, st->declarations->SignatureType);
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

void
cukit_signature_dealloc(cukit_Signature *self)
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
    size_t n = sig->nparams ? (size_t)sig->nparams : 1, at = 0;
    size_t *offsets = PyMem_Calloc(2 * n, sizeof *offsets), *sizes = offsets + n;
    cukit_Signature *out = NULL;
    if (offsets == NULL)
        return (cukit_Signature *)PyErr_NoMemory();
    for (int i = 0; i < sig->nparams; i++) {
        size_t size = sig->params[i].size;
        if (size == 0) {
            PyErr_Format(PyExc_TypeError,
                         "the size of struct parameter %d (%s) is known only once the kernel "
                         "is compiled; pack it through a Kernel",
                         i + 1, sig->params[i].type);
            goto done;
        }
        size_t align = sig->params[i].kind != CUKIT_P_POINTER && sig->params[i].align
                           ? sig->params[i].align : (size >= 8 ? 8 : size);
        at = (at + align - 1) / align * align;
        offsets[i] = at;
        sizes[i] = size;
        at += size;
    }
    out = with_layout(st, sig, offsets, sizes, at);
done:
    PyMem_Free(offsets);
    return out;
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
