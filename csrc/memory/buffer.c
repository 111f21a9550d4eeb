/* buffer.c - cukit.Buffer: one raw device allocation from the cache or the stream-ordered pool, freed with its last reference */
#include "memory/pool.h"

#include <limits.h>

int
cukit_freed_error(void)
{
    PyErr_SetString(PyExc_ValueError,
                    "this memory was freed (with .free()) and can no longer be used");
    return -1;
}

/* nbytes on dev as an instance of `type` (cukit.Buffer or a subclass). */
static cukit_Buffer *
buffer_create_as(PyTypeObject *type, cukit_Device *dev, size_t nbytes)
{
    cukit_state *st = dev->st;
    if (cukit_device_activate(dev) < 0)
        return NULL;
    cukit_devmem *dm = cukit_devmem_get(dev);
    if (dm == NULL)
        return NULL;
    const char *call = dm->pool ? "cuMemAllocFromPoolAsync" : "cuMemAlloc";
    if (nbytes > dev->total_memory) {
        /* Never worth asking: some drivers take a size beyond the device's for a bad value. */
        cukit_oom_error(st, nbytes, call);
        return NULL;
    }
    cukit_Buffer *b = type == st->memory->BufferType ? PyObject_New(cukit_Buffer, type)
                                             : (cukit_Buffer *)type->tp_alloc(type, 0);
    if (b == NULL)
        return NULL;
    b->st = st;
    b->device = (cukit_Device *)Py_NewRef(dev);
    b->ptr = 0;
    b->size = nbytes;
    /* A zero-byte request still gets a real (minimal) allocation, so that a valid
     * pointer always means live memory and 0 always means freed. Every request asks
     * for its bin's size, so that the block can serve any request of the bin later;
     * with the cache off, for its own (the emulator checks accesses against it). */
    b->binned = !dm->cache_off;
    size_t want = b->binned ? cukit_cache_round(nbytes ? nbytes : 1) : (nbytes ? nbytes : 1);
    if (b->binned && !cukit_capture_active(st) && !cukit_stream_pending() &&
        (b->ptr = cukit_cache_take(dev, dm, want)) != 0)
        return b; /* no driver call: see the cache's rule in pool.c */
    CUresult res = cukit_pool_alloc(b->device, dm, &b->ptr, want);
    if (res == CUDA_ERROR_OUT_OF_MEMORY) {
        b->ptr = 0;
        cukit_oom_error(st, nbytes, call);
        Py_DECREF(b);
        return NULL;
    }
    if (cukit_check_cu(st, res, call) < 0) {
        b->ptr = 0;
        Py_DECREF(b);
        return NULL;
    }
    return b;
}

cukit_Buffer *
cukit_buffer_create(cukit_Device *dev, size_t nbytes)
{
    return buffer_create_as(dev->st->memory->BufferType, dev, nbytes);
}

cukit_Buffer *
cukit_buffer_create_for_legacy_write(cukit_Device *dev, size_t nbytes)
{
    return cukit_buffer_create(dev, nbytes);
}

int
cukit_buffer_release(cukit_Buffer *b)
{
    if (b->ptr == 0)
        return 0;
    CUdeviceptr p = b->ptr;
    b->ptr = 0;
    if (cukit_device_activate(b->device) < 0)
        return -1;
    cukit_devmem *dm = cukit_devmem_get(b->device);
    if (dm == NULL)
        return -1;
    if (b->binned && cukit_cache_put(b->device, dm, p, cukit_cache_round(b->size ? b->size : 1)))
        return 0; /* no driver call: see the cache's rule in pool.c */
    return cukit_block_free(b->device, dm, p);
}

static void
buffer_dealloc(cukit_Buffer *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->ptr) {
        PyObject *saved = PyErr_GetRaisedException();
        if (cukit_buffer_release(self) < 0) {
            /* After a kernel fault every free fails; the fault was already reported. */
            PyObject *exc = PyErr_GetRaisedException();
            PyObject *code = exc ? PyObject_GetAttrString(exc, "code") : NULL;
            int sticky = code && PyLong_Check(code) && cukit_cu_is_sticky((CUresult)PyLong_AsLong(code));
            Py_XDECREF(code);
            PyErr_SetRaisedException(exc);
            if (sticky)
                PyErr_Clear();
            else
                PyErr_WriteUnraisable((PyObject *)tp); /* not self: its count is 0 */
        }
        PyErr_SetRaisedException(saved);
    }
    Py_XDECREF(self->device);
    tp->tp_free(self); /* a subclass may allocate differently */
    Py_DECREF(tp);
}

static PyObject *
buffer_free(cukit_Buffer *self, PyObject *Py_UNUSED(ignored))
{
    if (cukit_buffer_release(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
buffer_int(cukit_Buffer *self)
{
    if (self->ptr == 0) {
        cukit_freed_error();
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(self->ptr);
}

static PyObject *
buffer_get_ptr(cukit_Buffer *self, void *c)
{
    return buffer_int(self);
}

static PyObject *
buffer_get_size(cukit_Buffer *self, void *c)
{
    return PyLong_FromSize_t(self->size);
}

static PyObject *
buffer_get_freed(cukit_Buffer *self, void *c)
{
    return PyBool_FromLong(self->ptr == 0);
}

static PyObject *
buffer_repr(cukit_Buffer *self)
{
    if (self->ptr == 0)
        return PyUnicode_FromFormat("<cukit.Buffer %zu bytes, freed>", self->size);
    return PyUnicode_FromFormat("<cukit.Buffer %zu bytes at %p on device %d>", self->size,
                                (void *)(uintptr_t)self->ptr, self->device->ordinal);
}

static PyMemberDef buffer_members[] = {
    {"device", Py_T_OBJECT_EX, offsetof(cukit_Buffer, device), Py_READONLY, "The Device."},
    {NULL},
};

static PyGetSetDef buffer_getset[] = {
    {"ptr", (getter)buffer_get_ptr, NULL, "The device address, as an int."},
    {"size", (getter)buffer_get_size, NULL, "Size in bytes."},
    {"nbytes", (getter)buffer_get_size, NULL, "Size in bytes."},
    {"freed", (getter)buffer_get_freed, NULL, "True once free() was called."},
    {NULL},
};

static PyMethodDef buffer_methods[] = {
    {"free", (PyCFunction)buffer_free, METH_NOARGS,
     "Free the memory now rather than with the last reference. Safe to call twice."},
    {NULL},
};

static PyObject *buffer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs);

static PyType_Slot buffer_slots[] = {
    {Py_tp_doc, "Buffer(nbytes, device=None): raw device memory, also made by "
                "cukit.alloc(nbytes). int(buf) is its address. May be subclassed."},
    {Py_tp_new, buffer_new},
    {Py_tp_dealloc, buffer_dealloc},
    {Py_tp_repr, buffer_repr},
    {Py_tp_members, buffer_members},
    {Py_tp_getset, buffer_getset},
    {Py_tp_methods, buffer_methods},
    {Py_nb_int, buffer_int},
    {Py_nb_index, buffer_int},
    {0, NULL},
};

static PyType_Spec buffer_spec = {
    .name = "cukit.Buffer",
    .basicsize = sizeof(cukit_Buffer),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_BASETYPE,
    .slots = buffer_slots,
};

/* ------------------------------------------------------------------ module functions */

/* alloc(nbytes, device=None) and Buffer(...): an instance of `type`. */
static PyObject *
alloc_as(cukit_state *st, PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"nbytes", "device", NULL};
    PyObject *nbytes_o, *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:alloc", kwlist, &nbytes_o, &device))
        return NULL;
    PyObject *n = PyNumber_Index(nbytes_o);
    if (n == NULL)
        return NULL;
    int overflow;
    long long nbytes = PyLong_AsLongLongAndOverflow(n, &overflow);
    Py_DECREF(n);
    if (overflow || nbytes < 0) {
        PyErr_Format(PyExc_ValueError, "alloc() size must be from 0 to 2**63 - 1 bytes, got %R",
                     nbytes_o);
        return NULL;
    }
    cukit_Device *dev = cukit_device_arg(st, device);
    return dev ? (PyObject *)buffer_create_as(type, dev, (size_t)nbytes) : NULL;
}

static PyObject *
mod_alloc(PyObject *m, PyObject *args, PyObject *kwargs)
{
    cukit_state *st = PyModule_GetState(m);
    return alloc_as(st, st->memory->BufferType, args, kwargs);
}

static PyObject *
buffer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    return alloc_as(cukit_state_of_type(type), type, args, kwargs);
}

static PyMethodDef buffer_functions[] = {
    {"alloc", (PyCFunction)(void (*)(void))mod_alloc, METH_VARARGS | METH_KEYWORDS,
     "alloc(nbytes, device=None) -> Buffer: raw device memory."},
    {NULL},
};

int
cukit_buffer_setup(PyObject *module, cukit_state *st)
{
    st->memory->BufferType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &buffer_spec, NULL);
    if (st->memory->BufferType == NULL || PyModule_AddType(module, st->memory->BufferType) < 0)
        return -1;
    return PyModule_AddFunctions(module, buffer_functions);
}
