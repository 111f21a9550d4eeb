/* device.c - cukit.Device, its primary context, and the module's device functions */
#include "runtime/runtime.h"

#include <limits.h>

#include <stdio.h>

static const struct {
    const char *name;
    int attr;
} attribute_table[] = {
#define CUKIT_DEVICE_ATTRIBUTE(name, value) {#name, value},
#include "runtime/device_attributes.h"
#undef CUKIT_DEVICE_ATTRIBUTE
};

int
cukit_device_count(cukit_state *st)
{
    if (cukit_forked())
        return cukit_fork_error(st, "cukit.device_count");
    if (st->runtime->driver_count >= 0)
        return st->runtime->driver_count;
    if (cukit_driver_load(st) < 0) {
        /* No driver, or a driver with no usable GPU: a machine without a device. */
        if (!PyErr_ExceptionMatches(st->exc[CUKIT_EXC_NO_DEVICE]))
            return -1;
        PyErr_Clear();
        return 0;
    }
    int n = 0;
    if (CU_CALL(st, cuDeviceGetCount, (&n)) < 0)
        return -1;
    cukit_fork_guard();
    st->runtime->driver_count = n;
    return n;
}

static int
device_init(cukit_Device *d)
{
    cukit_state *st = d->st;
    if (CU_CALL(st, cuDeviceGet, (&d->dev, d->ordinal)) < 0 ||
        CU_CALL(st, cuDeviceGetName, (d->name, (int)sizeof d->name, d->dev)) < 0 ||
        CU_CALL(st, cuDeviceTotalMem, (&d->total_memory, d->dev)) < 0)
        return -1;
    static const struct {
        int attr;
        size_t offset;
    } wanted[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, offsetof(cukit_Device, cc_major)},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, offsetof(cukit_Device, cc_minor)},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(cukit_Device, sm_count)},
        {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, offsetof(cukit_Device, l2_bytes)},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(cukit_Device, max_threads_per_block)},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, offsetof(cukit_Device, max_block[0])},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + 1, offsetof(cukit_Device, max_block[1])},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + 2, offsetof(cukit_Device, max_block[2])},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, offsetof(cukit_Device, max_grid[0])},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + 1, offsetof(cukit_Device, max_grid[1])},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + 2, offsetof(cukit_Device, max_grid[2])},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, offsetof(cukit_Device, max_shared)},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
         offsetof(cukit_Device, max_shared_optin)},
    };
    for (size_t i = 0; i < sizeof wanted / sizeof *wanted; i++) {
        int *slot = (int *)((char *)d + wanted[i].offset);
        if (CU_CALL(st, cuDeviceGetAttribute, (slot, wanted[i].attr, d->dev)) < 0)
            return -1;
    }
    if (d->max_shared_optin < d->max_shared)
        d->max_shared_optin = d->max_shared;
    /* The primary context is retained for the life of the process and never
     * released: memory, modules and streams made in it may outlive any one
     * Python object, and other libraries (torch, CuPy) share the same context. */
    return CU_CALL(st, cuDevicePrimaryCtxRetain, (&d->ctx, d->dev));
}

cukit_Device *
cukit_device_get(cukit_state *st, int ordinal)
{
    int n = cukit_device_count(st);
    if (n < 0)
        return NULL;
    if (n == 0) {
        /* Re-raise the loader's own explanation when there is one. */
        if (cukit_driver_load(st) < 0)
            return NULL;
        PyObject *msg = PyUnicode_FromString(
            "the CUDA driver reports no devices (check nvidia-smi and CUDA_VISIBLE_DEVICES)");
        if (msg)
            cukit_raise(st, CUKIT_EXC_NO_DEVICE, CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
                        "cuDeviceGetCount", msg);
        Py_XDECREF(msg);
        return NULL;
    }
    if (ordinal < 0 || ordinal >= n) {
        PyErr_Format(PyExc_ValueError,
                     "there is no CUDA device %d: this machine has %d device%s (0 to %d)",
                     ordinal, n, n == 1 ? "" : "s", n - 1);
        return NULL;
    }
    if (st->runtime->devices == NULL) {
        st->runtime->devices = PyList_New(n);
        if (st->runtime->devices == NULL)
            return NULL;
        for (int i = 0; i < n; i++)
            PyList_SET_ITEM(st->runtime->devices, i, Py_NewRef(Py_None));
    }
    PyObject *have = PyList_GET_ITEM(st->runtime->devices, ordinal);
    if (have != Py_None)
        return (cukit_Device *)have;
    cukit_Device *d = PyObject_New(cukit_Device, st->runtime->DeviceType);
    if (d == NULL)
        return NULL;
    d->st = st;
    d->ordinal = ordinal;
    d->ctx = NULL;
    d->release_stream = NULL;
    d->legacy_event = NULL;
    d->streams = NULL;
    d->nstreams = d->capstreams = 0;
    d->orphan_work = 0;
    d->handed_out_at = 0;
    d->peers_tried = 0;
    d->report = NULL;
    d->report_dev = 0;
    if (device_init(d) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    PyList_SetItem(st->runtime->devices, ordinal, (PyObject *)d); /* steals d */
    return d;
}

/* The device this thread chose (Device.use(), `with Device(i):`), or -1 for none; and
 * the context cukit last made current itself to work on some device's objects. The
 * default device is the chosen one, else the one another library made current, else
 * device 0: never one that cukit made current only to free an array or run a
 * collective there (an earlier NCCL test left GPU 1 current, and a communicator made
 * after it with no device= went to GPU 1). */
static _Thread_local int chosen = -1;
static _Thread_local CUcontext cukit_made_current = NULL;

int
cukit_device_activate(cukit_Device *dev)
{
    CUcontext cur = NULL;
    if (CU_CALL(dev->st, cuCtxGetCurrent, (&cur)) < 0)
        return -1;
    if (cur == dev->ctx)
        return 0;
    if (CU_CALL(dev->st, cuCtxSetCurrent, (dev->ctx)) < 0)
        return -1;
    cukit_made_current = dev->ctx;
    return 0;
}

cukit_Device *
cukit_device_current(cukit_state *st)
{
    if (cukit_forked()) {
        cukit_fork_error(st, "choosing a device");
        return NULL;
    }
    if (cukit_driver_load(st) < 0)
        return NULL;
    cukit_fork_guard();
    CUcontext cur = NULL;
    if (CU_CALL(st, cuCtxGetCurrent, (&cur)) < 0)
        return NULL;
    int ordinal = 0;
    if (chosen >= 0) {
        ordinal = chosen;
    }
    else if (cur != NULL && cur != cukit_made_current) {
        CUdevice dev;
        if (CU_CALL(st, cuCtxGetDevice, (&dev)) < 0)
            return NULL;
        ordinal = (int)dev;
    }
    cukit_Device *d = cukit_device_get(st, ordinal);
    if (d == NULL || cukit_device_activate(d) < 0)
        return NULL;
    return d;
}

cukit_Device *
cukit_device_active(cukit_state *st)
{
    CUcontext cur = NULL;
    CUdevice dev;
    if (cukit_driver_ready() && cukit_api.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur != NULL &&
        cukit_api.cuCtxGetDevice(&dev) == CUDA_SUCCESS)
        return cukit_device_get(st, (int)dev);
    return cukit_device_current(st);
}

cukit_Device *
cukit_device_arg(cukit_state *st, PyObject *device)
{
    if (device == NULL || device == Py_None)
        return cukit_device_current(st);
    if (Py_IS_TYPE(device, st->runtime->DeviceType))
        return (cukit_Device *)device;
    long ordinal = PyLong_AsLong(device);
    if (ordinal == -1 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "device must be a cukit.Device or an int, got %s",
                     Py_TYPE(device)->tp_name);
        return NULL;
    }
    return cukit_device_get(st, ordinal < 0 || ordinal > INT_MAX ? -1 : (int)ordinal);
}

void
cukit_device_arch(const cukit_Device *dev, char *buf, size_t n)
{
    snprintf(buf, n, "sm_%d%d", dev->cc_major, dev->cc_minor);
}

/* ------------------------------------------------------------------ the type */

static PyObject *
device_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"ordinal", NULL};
    PyObject *which = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:Device", kwlist, &which))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    cukit_Device *d;
    if (which == Py_None) {
        d = cukit_device_current(st);
    }
    else {
        long ordinal = PyLong_AsLong(which);
        if (ordinal == -1 && PyErr_Occurred())
            return NULL;
        d = cukit_device_get(st, ordinal < INT_MIN || ordinal > INT_MAX ? -1 : (int)ordinal);
    }
    return (PyObject *)Py_XNewRef(d);
}

static void
device_dealloc(cukit_Device *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    /* Devices go with the module, after every stream (a stream holds its device). */
    if ((self->release_stream || self->legacy_event) && cukit_driver_ready() &&
        cukit_api.cuCtxSetCurrent(self->ctx) == CUDA_SUCCESS) {
        if (self->legacy_event)
            cukit_api.cuEventDestroy(self->legacy_event);
        if (self->release_stream)
            cukit_api.cuStreamDestroy(self->release_stream);
    }
    PyMem_Free(self->streams);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *
device_repr(cukit_Device *self)
{
    return PyUnicode_FromFormat("<cukit.Device %d: %s, sm_%d%d>", self->ordinal, self->name,
                                self->cc_major, self->cc_minor);
}

static PyObject *
device_use(cukit_Device *self, PyObject *Py_UNUSED(ignored))
{
    if (cukit_device_activate(self) < 0)
        return NULL;
    chosen = self->ordinal;
    return Py_NewRef(self);
}

/* The calling thread's stack of contexts that `with Device(i):` replaced, kept in
 * the thread's state dict (a Device is shared by every thread). Borrowed list, or
 * NULL with an exception. */
static PyObject *
scope_stack(void)
{
    PyObject *tdict = PyThreadState_GetDict();
    if (tdict == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "cukit.Device: no thread state");
        return NULL;
    }
    PyObject *stack = PyDict_GetItemString(tdict, "cukit.device_scopes");
    if (stack)
        return stack;
    stack = PyList_New(0);
    if (stack == NULL || PyDict_SetItemString(tdict, "cukit.device_scopes", stack) < 0) {
        Py_XDECREF(stack);
        return NULL;
    }
    Py_DECREF(stack); /* the dict holds it */
    return stack;
}

/* with Device(i): make i current on this thread; on exit the context that was
 * current before (possibly none, possibly another library's) is current again. */
static PyObject *
device_enter(cukit_Device *self, PyObject *Py_UNUSED(ignored))
{
    CUcontext prev = NULL;
    PyObject *stack = scope_stack();
    if (stack == NULL || CU_CALL(self->st, cuCtxGetCurrent, (&prev)) < 0)
        return NULL;
    PyObject *saved = Py_BuildValue("(Ni)", PyLong_FromVoidPtr(prev), chosen);
    if (saved == NULL || PyList_Append(stack, saved) < 0) {
        Py_XDECREF(saved);
        return NULL;
    }
    Py_DECREF(saved);
    if (cukit_device_activate(self) < 0) {
        PySequence_DelItem(stack, PyList_GET_SIZE(stack) - 1);
        return NULL;
    }
    chosen = self->ordinal;
    return Py_NewRef(self);
}

static PyObject *
device_exit(cukit_Device *self, PyObject *args)
{
    PyObject *stack = scope_stack();
    if (stack == NULL)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(stack);
    if (n == 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "cukit.Device.__exit__ without a matching __enter__ on this thread");
        return NULL;
    }
    PyObject *saved = PyList_GET_ITEM(stack, n - 1);
    CUcontext prev = PyLong_AsVoidPtr(PyTuple_GET_ITEM(saved, 0));
    int prev_chosen = (int)PyLong_AsLong(PyTuple_GET_ITEM(saved, 1));
    if (PySequence_DelItem(stack, n - 1) < 0 || CU_CALL(self->st, cuCtxSetCurrent, (prev)) < 0)
        return NULL;
    chosen = prev_chosen;
    Py_RETURN_FALSE;
}

/* 1 when a's contexts can address b's memory, 0 when not; -1 with an exception. */
static int
can_access(cukit_Device *a, cukit_Device *b)
{
    if (a == b)
        return 1;
    int can = 0;
    if (CU_CALL(a->st, cuDeviceCanAccessPeer, (&can, a->dev, b->dev)) < 0)
        return -1;
    return can != 0;
}

int
cukit_device_enable_peer(cukit_Device *dev, cukit_Device *other)
{
    cukit_state *st = dev->st;
    uint64_t bit = other->ordinal < 64 ? 1ULL << other->ordinal : 0;
    if (dev == other)
        return 1;
    int can = can_access(dev, other);
    if (can <= 0 || (dev->peers_tried & bit))
        return can;
    CUcontext prev = NULL;
    if (CU_CALL(st, cuCtxGetCurrent, (&prev)) < 0 || cukit_device_activate(dev) < 0)
        return -1;
    CUresult res = cukit_api.cuCtxEnablePeerAccess(other->ctx, 0);
    cukit_api.cuCtxSetCurrent(prev);
    /* Idempotent: enabled before (by cukit, NCCL or torch) is fine. */
    if (res != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED &&
        cukit_check_cu(st, res, "cuCtxEnablePeerAccess") < 0)
        return -1;
    /* Memory from a stream-ordered pool is not covered by context peer access: the
     * pool itself must let dev in, or copies from it are staged through the host. */
    CUmemoryPool pool;
    CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, dev->ordinal},
                              CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    if (cukit_api.cuDeviceGetDefaultMemPool && cukit_api.cuMemPoolSetAccess &&
        (CU_CALL(st, cuDeviceGetDefaultMemPool, (&pool, other->dev)) < 0 ||
         CU_CALL(st, cuMemPoolSetAccess, (pool, &access, 1)) < 0))
        return -1;
    dev->peers_tried |= bit;
    return 1;
}

static PyObject *
device_enable_peer_access(cukit_Device *self, PyObject *other_o)
{
    cukit_state *st = self->st;
    cukit_Device *other = cukit_device_arg(st, other_o);
    if (other == NULL)
        return NULL;
    int on = cukit_device_enable_peer(self, other);
    if (on < 0)
        return NULL;
    if (on == 0) {
        PyObject *msg = PyUnicode_FromFormat(
            "device %d cannot address device %d's memory (no peer-to-peer path between them); "
            "copies between them still work, staged by the driver", self->ordinal,
            other->ordinal);
        if (msg)
            cukit_raise(st, CUKIT_EXC_NOT_SUPPORTED, -1, NULL, "cuDeviceCanAccessPeer", msg);
        Py_XDECREF(msg);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
device_can_access_peer(cukit_Device *self, PyObject *other_o)
{
    cukit_Device *other = cukit_device_arg(self->st, other_o);
    int can = other ? can_access(self, other) : -1;
    return can < 0 ? NULL : PyBool_FromLong(can);
}

static PyObject *
device_synchronize(cukit_Device *self, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = self->st;
    if (cukit_device_activate(self) < 0)
        return NULL;
    CU_CALL_NOGIL(st, cuCtxSynchronize, ());
    return cukit_report_raise(st) < 0 ? NULL : Py_NewRef(Py_None); /* a bad index met */
error:
    return NULL;
}

/* get_limit(which) -> int: cuCtxGetLimit on the device's primary context. */
static PyObject *
device_get_limit(cukit_Device *self, PyObject *args)
{
    int which;
    if (!PyArg_ParseTuple(args, "i:get_limit", &which))
        return NULL;
    size_t v = 0;
    if (cukit_device_activate(self) < 0 || CU_CALL(self->st, cuCtxGetLimit, (&v, which)) < 0)
        return NULL;
    return PyLong_FromSize_t(v);
}

/* set_limit(which, value): cuCtxSetLimit on the device's primary context. */
static PyObject *
device_set_limit(cukit_Device *self, PyObject *args)
{
    int which;
    Py_ssize_t value;
    if (!PyArg_ParseTuple(args, "in:set_limit", &which, &value))
        return NULL;
    if (value < 0)
        return PyErr_Format(PyExc_ValueError, "set_limit: the value must be >= 0, got %zd",
                            value);
    if (cukit_device_activate(self) < 0 ||
        CU_CALL(self->st, cuCtxSetLimit, (which, (size_t)value)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
device_attributes(cukit_Device *self, void *Py_UNUSED(closure))
{
    PyObject *out = PyDict_New();
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof attribute_table / sizeof *attribute_table; i++) {
        int v = 0;
        /* Attributes newer than the installed driver are left out, not errors. */
        if (cukit_api.cuDeviceGetAttribute(&v, attribute_table[i].attr, self->dev) != CUDA_SUCCESS)
            continue;
        PyObject *pv = PyLong_FromLong(v);
        if (pv == NULL || PyDict_SetItemString(out, attribute_table[i].name, pv) < 0) {
            Py_XDECREF(pv);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(pv);
    }
    return out;
}

static PyObject *
device_get_ordinal(cukit_Device *self, void *c)
{
    return PyLong_FromLong(self->ordinal);
}
static PyObject *
device_get_name(cukit_Device *self, void *c)
{
    return PyUnicode_FromString(self->name);
}
static PyObject *
device_get_cc(cukit_Device *self, void *c)
{
    return Py_BuildValue("(ii)", self->cc_major, self->cc_minor);
}
static PyObject *
device_get_arch(cukit_Device *self, void *c)
{
    char arch[16];
    cukit_device_arch(self, arch, sizeof arch);
    return PyUnicode_FromString(arch);
}
static PyObject *
device_get_total_memory(cukit_Device *self, void *c)
{
    return PyLong_FromSize_t(self->total_memory);
}
static PyObject *
device_get_sm_count(cukit_Device *self, void *c)
{
    return PyLong_FromLong(self->sm_count);
}

static PyObject *
device_index(cukit_Device *self)
{
    return PyLong_FromLong(self->ordinal);
}

static PyGetSetDef device_getset[] = {
    {"ordinal", (getter)device_get_ordinal, NULL, "The device's number, 0 to device_count() - 1."},
    {"id", (getter)device_get_ordinal, NULL, "The device's number (CuPy's name for ordinal)."},
    {"name", (getter)device_get_name, NULL, "The product name, e.g. 'NVIDIA H200'."},
    {"compute_capability", (getter)device_get_cc, NULL, "(major, minor), e.g. (9, 0)."},
    {"arch", (getter)device_get_arch, NULL, "The NVRTC architecture name, e.g. 'sm_90'."},
    {"total_memory", (getter)device_get_total_memory, NULL, "Device memory in bytes."},
    {"multiprocessor_count", (getter)device_get_sm_count, NULL, "Number of SMs."},
    {"attributes", (getter)device_attributes, NULL,
     "Every device attribute the driver reports, by readable name."},
    {NULL},
};

static PyMethodDef device_methods[] = {
    {"use", (PyCFunction)device_use, METH_NOARGS,
     "Make this device current on the calling thread. Returns the device."},
    {"synchronize", (PyCFunction)device_synchronize, METH_NOARGS,
     "Wait until all work on this device has finished."},
    {"__enter__", (PyCFunction)device_enter, METH_NOARGS,
     "with Device(i): i is the current device inside; on leaving, the device (or context) "
     "current before is restored. Nests; per thread."},
    {"__exit__", (PyCFunction)device_exit, METH_VARARGS, NULL},
    {"enable_peer_access", (PyCFunction)device_enable_peer_access, METH_O,
     "enable_peer_access(other): let kernels and copies on this device address other's "
     "memory directly (cuCtxEnablePeerAccess, and access to other's memory pool). "
     "Idempotent; NotSupportedError where the hardware has no peer path. Copies between "
     "devices turn it on by themselves."},
    {"can_access_peer", (PyCFunction)device_can_access_peer, METH_O,
     "can_access_peer(other) -> bool: whether this device can address other's memory."},
    {"get_limit", (PyCFunction)device_get_limit, METH_VARARGS,
     "get_limit(which) -> int: a context limit (CUlimit: 0 stack size, 1 printf FIFO size, "
     "2 malloc heap size, ...) of this device's context (cuCtxGetLimit)."},
    {"set_limit", (PyCFunction)device_set_limit, METH_VARARGS,
     "set_limit(which, value): set a context limit of this device's context (cuCtxSetLimit)."},
    {NULL},
};

static PyType_Slot device_slots[] = {
    {Py_tp_doc, "Device(ordinal=None): a CUDA device; None means the current one.\n\n"
                "There is one Device object per GPU; Device(0) is Device(0)."},
    {Py_tp_new, device_new},
    {Py_tp_dealloc, device_dealloc},
    {Py_tp_repr, device_repr},
    {Py_tp_getset, device_getset},
    {Py_tp_methods, device_methods},
    {Py_nb_index, device_index},
    {0, NULL},
};

static PyType_Spec device_spec = {
    .name = "cukit.Device",
    .basicsize = sizeof(cukit_Device),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = device_slots,
};

/* ------------------------------------------------------------------ module functions */

static PyObject *
mod_device_count(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    int n = cukit_device_count(PyModule_GetState(m));
    return n < 0 ? NULL : PyLong_FromLong(n);
}

static PyObject *
mod_get_device(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    return (PyObject *)Py_XNewRef(cukit_device_current(PyModule_GetState(m)));
}

static PyObject *
mod_synchronize(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    cukit_Device *d = cukit_device_current(PyModule_GetState(m));
    return d ? device_synchronize(d, NULL) : NULL;
}

static PyObject *
mod_can_access_peer(PyObject *m, PyObject *args)
{
    PyObject *a_o, *b_o;
    if (!PyArg_ParseTuple(args, "OO:can_access_peer", &a_o, &b_o))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    cukit_Device *a = cukit_device_arg(st, a_o);
    cukit_Device *b = a ? cukit_device_arg(st, b_o) : NULL;
    int can = b ? can_access(a, b) : -1;
    return can < 0 ? NULL : PyBool_FromLong(can);
}

static PyObject *
mod_driver_version(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = PyModule_GetState(m);
    int v = 0;
    if (cukit_driver_load(st) < 0 || CU_CALL(st, cuDriverGetVersion, (&v)) < 0)
        return NULL;
    return Py_BuildValue("(ii)", v / 1000, (v % 1000) / 10);
}

static PyMethodDef device_functions[] = {
    {"device_count", mod_device_count, METH_NOARGS,
     "Number of CUDA devices: the GPUs, or 1 (cukit's CPU emulator) where there is none; 0 "
     "where CUKIT_BACKEND=gpu finds no driver or no GPU."},
    {"get_device", mod_get_device, METH_NOARGS,
     "The current device (device 0 unless another was made current)."},
    {"synchronize", mod_synchronize, METH_NOARGS, "Wait for all work on the current device."},
    {"can_access_peer", mod_can_access_peer, METH_VARARGS,
     "can_access_peer(a, b) -> bool: whether device a can address device b's memory "
     "directly (then a.enable_peer_access(b) makes it so)."},
    {"driver_version", mod_driver_version, METH_NOARGS,
     "The CUDA version the driver supports, as (major, minor)."},
    {NULL},
};

int
cukit_device_setup(PyObject *module, cukit_state *st)
{
    st->runtime->DeviceType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &device_spec, NULL);
    if (st->runtime->DeviceType == NULL || PyModule_AddType(module, st->runtime->DeviceType) < 0)
        return -1;
    return PyModule_AddFunctions(module, device_functions);
}
