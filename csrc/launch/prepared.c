/* prepared.c - cukit.PreparedLaunch: a kernel with its launch configuration bound once
 *
 * The packed parameter buffer lives with the object. An argument that is the
 * same immutable object as in the last call (the same int, float, Array...) is
 * not converted again; only what changed is re-packed. */
#include "launch/launch.h"

#include <string.h>

/* Whether `a`, being the very object packed last time, still packs to the same
 * bytes. Arrays and buffers keep their address for life, unless freed. */
static int
unchanged(cukit_state *st, PyObject *a)
{
    if (Py_IS_TYPE(a, st->ArrayType)) {
        cukit_array_ref ref;
        st->hooks.array_ref(a, &ref);
        return ref.live;
    }
    if (PyFloat_CheckExact(a) || PyLong_CheckExact(a) || PyBool_Check(a) || PyBytes_CheckExact(a))
        return 1;
    if (PyObject_TypeCheck(a, st->memory->BufferType))
        return ((cukit_Buffer *)a)->ptr != 0;
    /* numpy numbers are immutable; structured (void) scalars can be views, so not those */
    return st->np_floating && (PyObject_TypeCheck(a, (PyTypeObject *)st->np_floating) ||
                               PyObject_TypeCheck(a, (PyTypeObject *)st->np_integer) ||
                               PyObject_TypeCheck(a, (PyTypeObject *)st->np_bool));
}

PyObject *
cukit_prepared_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    cukit_Prepared *p = (cukit_Prepared *)self;
    cukit_Kernel *k = p->kernel;
    cukit_state *st = k->st;
    const cukit_Signature *sig = k->sig;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) {
        PyErr_Format(PyExc_TypeError,
                     "a prepared launch of %s() takes the kernel's arguments only; its "
                     "configuration was bound by prepare()",
                     sig->name);
        return NULL;
    }
    if (nargs != sig->nparams) {
        cukit_arg_count_error(k->sig, nargs);
        return NULL;
    }
    for (int i = 0; i < sig->nparams; i++) {
        PyObject *a = args[i];
        if (a == p->last[i] && unchanged(st, a))
            continue;
        Py_CLEAR(p->last[i]);
        if (cukit_pack_arg(st, sig, i, a, p->buf + sig->params[i].offset, k->device) < 0)
            return NULL;
        p->last[i] = Py_NewRef(a);
    }
    /* bound once, queued on each call: noted for memory/'s cache each time */
    if (p->cfg.stream != NULL && cukit_stream_used(st, p->stream, p->cfg.stream, k->device) < 0)
        return NULL;
    int rc;
    if (st->capture != NULL) {
        rc = cukit_capture_launch(k, &p->cfg, args, p->buf, p->ptrs);
    }
    else if (!cukit_other_threads()) {
        rc = cukit_kernel_launch(k, &p->cfg, p->ptrs);
    }
    else {
        /* Another thread may call this same object while the launch runs without
         * the GIL: launch from a copy, never from the shared buffer. */
        cukit_params copy;
        if (cukit_params_init(&copy, sig) < 0)
            return NULL;
        memcpy(copy.buf, p->buf, sig->arg_bytes);
        for (int i = 0; i < sig->nparams; i++)
            copy.ptrs[i] = copy.buf + sig->params[i].offset;
        rc = cukit_kernel_launch(k, &p->cfg, copy.ptrs);
        cukit_params_release(&copy);
    }
    if (rc < 0)
        return NULL;
    if (cukit_kernel_keep_for_capture(k, &p->cfg, args) < 0 ||
        cukit_kernel_debug_check(k, &p->cfg, args) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static int
prepared_traverse(cukit_Prepared *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->kernel);
    Py_VISIT(self->stream);
    if (self->last && self->kernel)
        for (int i = 0; i < self->kernel->sig->nparams; i++)
            Py_VISIT(self->last[i]);
    return 0;
}

static int
prepared_clear(cukit_Prepared *self)
{
    if (self->last && self->kernel)
        for (int i = 0; i < self->kernel->sig->nparams; i++)
            Py_CLEAR(self->last[i]);
    Py_CLEAR(self->stream);
    return 0;
}

static void
prepared_dealloc(cukit_Prepared *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    prepared_clear(self);
    Py_CLEAR(self->kernel);
    PyMem_Free(self->last);
    PyMem_Free(self->buf);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static PyObject *
prepared_repr(cukit_Prepared *self)
{
    const cukit_launch_cfg *c = &self->cfg;
    return PyUnicode_FromFormat("<cukit.PreparedLaunch %s grid=(%u, %u, %u) block=(%u, %u, %u) "
                                "shared_mem=%u>",
                                self->kernel->sig->name, c->grid[0], c->grid[1], c->grid[2],
                                c->block[0], c->block[1], c->block[2], c->shared);
}

static PyMemberDef prepared_members[] = {
    {"__vectorcalloffset__", Py_T_PYSSIZET, offsetof(cukit_Prepared, vectorcall), Py_READONLY},
    {"kernel", Py_T_OBJECT_EX, offsetof(cukit_Prepared, kernel), Py_READONLY, "The Kernel."},
    {"stream", Py_T_OBJECT_EX, offsetof(cukit_Prepared, stream), Py_READONLY,
     "The bound Stream, or None for the default stream."},
    {NULL},
};

static PyType_Slot prepared_slots[] = {
    {Py_tp_doc, "PreparedLaunch: kernel.prepare(grid=, block=, ...) bound once; call it with "
                "the kernel's arguments. Arguments that did not change are not re-packed."},
    {Py_tp_dealloc, prepared_dealloc},
    {Py_tp_traverse, prepared_traverse},
    {Py_tp_clear, prepared_clear},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_repr, prepared_repr},
    {Py_tp_members, prepared_members},
    {0, NULL},
};

static PyType_Spec prepared_spec = {
    .name = "cukit.PreparedLaunch",
    .basicsize = sizeof(cukit_Prepared),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = prepared_slots,
};

int
cukit_prepared_setup(PyObject *module, cukit_state *st)
{
    st->launch->PreparedType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &prepared_spec, NULL);
    if (st->launch->PreparedType == NULL)
        return -1;
    return PyModule_AddType(module, st->launch->PreparedType);
}
