/* texture.c - cukit.Texture over a CUDA array, pitched 2-D or linear device memory, and cukit.Surface over a CUDA array */
#include "memory/memory.h"

#include <string.h>

/* The driver's own layouts (cuda.h, CUDA 13.0), so that a wrong field can never
 * reach cuTexObjectCreate; tests/test_textures.py checks them field by field
 * against cuda.h where a toolkit is installed. */
_Static_assert(sizeof(CUDA_ARRAY3D_DESCRIPTOR) == 40, "CUDA_ARRAY3D_DESCRIPTOR_v2 is 40 bytes");
_Static_assert(sizeof(CUDA_RESOURCE_DESC) == 144, "CUDA_RESOURCE_DESC_v1 is 144 bytes");
_Static_assert(offsetof(CUDA_RESOURCE_DESC, flags) == 136, "CUDA_RESOURCE_DESC_v1.flags");
_Static_assert(sizeof(CUDA_TEXTURE_DESC) == 104, "CUDA_TEXTURE_DESC_v1 is 104 bytes");
_Static_assert(offsetof(CUDA_TEXTURE_DESC, borderColor) == 40, "CUDA_TEXTURE_DESC_v1.borderColor");
_Static_assert(sizeof(CUDA_RESOURCE_VIEW_DESC) == 112, "CUDA_RESOURCE_VIEW_DESC_v1 is 112 bytes");

/* ------------------------------------------------------------------ settings by name */

typedef struct {
    const char *name;
    int value;
} named;

static const named address_modes[] = {{"wrap", CU_TR_ADDRESS_MODE_WRAP},
                                      {"clamp", CU_TR_ADDRESS_MODE_CLAMP},
                                      {"mirror", CU_TR_ADDRESS_MODE_MIRROR},
                                      {"border", CU_TR_ADDRESS_MODE_BORDER},
                                      {NULL, 0}};
static const named filter_modes[] = {{"point", CU_TR_FILTER_MODE_POINT},
                                     {"linear", CU_TR_FILTER_MODE_LINEAR},
                                     {NULL, 0}};
enum { READ_ELEMENT_TYPE, READ_NORMALIZED_FLOAT };
static const named read_modes[] = {{"element_type", READ_ELEMENT_TYPE},
                                   {"normalized_float", READ_NORMALIZED_FLOAT},
                                   {NULL, 0}};

/* The value of the name `v` in table, or -1 with ValueError listing the names. */
static int
lookup(const named *table, PyObject *v, const char *what)
{
    if (PyUnicode_Check(v)) {
        const char *s = PyUnicode_AsUTF8(v);
        if (s == NULL)
            return -1;
        for (const named *n = table; n->name; n++)
            if (strcmp(n->name, s) == 0)
                return n->value;
    }
    char choices[128] = "";
    size_t used = 0;
    for (const named *n = table; n->name && used < sizeof choices; n++)
        used += (size_t)PyOS_snprintf(choices + used, sizeof choices - used, "%s'%s'",
                                      n == table ? "" : n[1].name ? ", " : " or ", n->name);
    PyErr_Format(PyExc_ValueError, "Texture: %s %R is not one of %s", what, v, choices);
    return -1;
}

static const char *
name_of(const named *table, int value)
{
    for (const named *n = table; n->name; n++)
        if (n->value == value)
            return n->name;
    return "?";
}

/* ------------------------------------------------------------------ what a texture reads */

typedef struct {
    CUDA_RESOURCE_DESC res;
    cukit_Device *dev; /* borrowed */
    int typecode, channels;
    int dims;          /* coordinates a fetch takes: 1 to 3, layers not counted */
    const char *kind;  /* "array", "pitch2d", "linear" */
} resource;

static void
from_cudaarray(cukit_CudaArray *a, resource *r)
{
    r->res.resType = CU_RESOURCE_TYPE_ARRAY;
    r->res.res.array.hArray = a->handle;
    r->dev = a->device;
    r->typecode = a->typecode;
    r->channels = a->channels;
    r->dims = a->layered ? a->ndim - 1 : a->ndim;
    r->kind = "array";
}

static int
device_attribute(cukit_Device *dev, int attr, int *out)
{
    return CU_CALL(dev->st, cuDeviceGetAttribute, (out, attr, dev->dev));
}

/* The device that holds `ptr` of `obj`; the current one when the driver cannot say. */
static cukit_Device *
device_of(cukit_state *st, PyObject *obj, CUdeviceptr ptr)
{
    if (Py_IS_TYPE(obj, st->ArrayType) && st->hooks.array_ref) {
        cukit_array_ref ref;
        st->hooks.array_ref(obj, &ref);
        if (!ref.live) {
            PyErr_SetString(PyExc_ValueError,
                            "Texture: the array's memory was freed (with .free())");
            return NULL;
        }
        return ref.device;
    }
    int ordinal = -1;
    if (cukit_driver_ready() &&
        cukit_api.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr) ==
            CUDA_SUCCESS && ordinal >= 0)
        return cukit_device_get(st, ordinal);
    return cukit_device_current(st);
}

/* Device memory seen through __cuda_array_interface__: 1-D is linear memory, 2-D
 * pitched (rows may be padded: a [:, :w] view of a wider array); with channels > 1
 * the last dimension holds them. 0 / -1. */
static int
from_device_memory(cukit_state *st, PyObject *obj, int channels, resource *r)
{
    PyObject *dict;
    int has = cukit_optional_attr_obj(obj, st->memory->str_cai, &dict);
    if (has < 0)
        return -1;
    if (has == 0) {
        if (PyObject_CheckBuffer(obj))
            PyErr_Format(PyExc_TypeError,
                         "Texture: got a %s in host memory; copy it into a cukit.CudaArray "
                         "(CudaArray(shape, dtype).set(x)) or to the device with "
                         "cukit.to_device(x) first", Py_TYPE(obj)->tp_name);
        else
            PyErr_Format(PyExc_TypeError,
                         "Texture: the source must be a cukit.CudaArray or a device array "
                         "(cukit.Array, or any array with __cuda_array_interface__), got %s",
                         Py_TYPE(obj)->tp_name);
        return -1;
    }
    cukit_cai cai;
    int rc = cukit_cai_read(st, obj, dict, 1, "Texture", &cai);
    Py_DECREF(dict);
    if (rc < 0)
        return -1;
    int nd = cai.ndim;
    if (channels > 1) {
        if (nd < 2 || cai.shape[nd - 1] != channels || cai.strides[nd - 1] != cai.itemsize) {
            PyErr_Format(PyExc_ValueError,
                         "Texture: with channels=%d the device array's last dimension must hold "
                         "the %d channels, contiguous", channels, channels);
            return -1;
        }
        nd--;
    }
    if (cukit_array_format(cai.typecode, channels, "Texture") < 0)
        return -1;
    size_t elem = (size_t)cai.itemsize * (size_t)channels;
    r->typecode = cai.typecode;
    r->channels = channels;
    r->dims = 1;
    r->dev = device_of(st, obj, cai.ptr);
    if (r->dev == NULL)
        return -1;
    int align = 1, pitch_align = 1;
    if (device_attribute(r->dev, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, &align) < 0 ||
        device_attribute(r->dev, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, &pitch_align) < 0)
        return -1;
    if (align > 0 && cai.ptr % (CUdeviceptr)align) {
        PyErr_Format(PyExc_ValueError,
                     "Texture: the device memory at %p is not aligned to the device's "
                     "texture alignment (%d bytes); texture a whole allocation, or a copy of "
                     "the view (x.copy())", (void *)(uintptr_t)cai.ptr, align);
        return -1;
    }
    if (nd == 1) {
        if (cai.shape[0] > 1 && cai.strides[0] != (Py_ssize_t)elem) {
            PyErr_SetString(PyExc_ValueError, "Texture: linear device memory must be contiguous; "
                            "pass cukit.ascontiguousarray(x)");
            return -1;
        }
        r->res.resType = CU_RESOURCE_TYPE_LINEAR;
        r->res.res.linear.devPtr = cai.ptr;
        r->res.res.linear.format = cukit_array_format(cai.typecode, channels, "Texture");
        r->res.res.linear.numChannels = (unsigned)channels;
        r->res.res.linear.sizeInBytes = (size_t)cai.shape[0] * elem;
        r->kind = "linear";
        return 0;
    }
    if (nd != 2) {
        PyErr_Format(PyExc_ValueError,
                     "Texture: device memory is textured as 1-D (linear) or 2-D (pitched) data, "
                     "got %d dimensions%s; for 3-D or layered data copy it into a "
                     "cukit.CudaArray", nd, channels > 1 ? " besides the channels" : "");
        return -1;
    }
    Py_ssize_t pitch = cai.strides[0];
    if ((cai.shape[1] > 1 && cai.strides[1] != (Py_ssize_t)elem) || pitch < 0 ||
        (size_t)pitch < (size_t)cai.shape[1] * elem) {
        PyErr_SetString(PyExc_ValueError,
                        "Texture: pitched 2-D memory needs each row's elements contiguous and "
                        "rows in order; pass cukit.ascontiguousarray(x)");
        return -1;
    }
    if (pitch_align > 0 && pitch % pitch_align) {
        PyErr_Format(PyExc_ValueError,
                     "Texture: rows are %zd bytes apart, not a multiple of the device's texture "
                     "pitch alignment (%d bytes); allocate rows padded to a multiple of it and "
                     "texture the [:, :width] view", pitch, pitch_align);
        return -1;
    }
    r->res.resType = CU_RESOURCE_TYPE_PITCH2D;
    r->res.res.pitch2D.devPtr = cai.ptr;
    r->res.res.pitch2D.format = cukit_array_format(cai.typecode, channels, "Texture");
    r->res.res.pitch2D.numChannels = (unsigned)channels;
    r->res.res.pitch2D.width = (size_t)cai.shape[1];
    r->res.res.pitch2D.height = (size_t)cai.shape[0];
    r->res.res.pitch2D.pitchInBytes = (size_t)pitch;
    r->dims = 2;
    r->kind = "pitch2d";
    return 0;
}

/* ------------------------------------------------------------------ Texture */

/* address_mode: one name for every dimension, or a sequence of 1 to 3 (x, y, z);
 * missing dimensions repeat the last one given. 0 / -1. */
static int
read_address_modes(PyObject *v, int *modes)
{
    if (PyUnicode_Check(v)) {
        int m = lookup(address_modes, v, "address_mode");
        modes[0] = modes[1] = modes[2] = m;
        return m < 0 ? -1 : 0;
    }
    PyObject *t = PySequence_Check(v) ? PySequence_Tuple(v) : NULL;
    if (t == NULL || PyTuple_GET_SIZE(t) < 1 || PyTuple_GET_SIZE(t) > 3) {
        Py_XDECREF(t);
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "Texture: address_mode is a name ('clamp', ...) or a "
                     "tuple of 1 to 3 names, one per dimension (x, y, z), got %R", v);
        return -1;
    }
    for (Py_ssize_t i = 0; i < 3; i++) {
        Py_ssize_t k = i < PyTuple_GET_SIZE(t) ? i : PyTuple_GET_SIZE(t) - 1;
        modes[i] = lookup(address_modes, PyTuple_GET_ITEM(t, k), "address_mode");
        if (modes[i] < 0) {
            Py_DECREF(t);
            return -1;
        }
    }
    Py_DECREF(t);
    return 0;
}

static int
read_border(PyObject *v, float *out)
{
    out[0] = out[1] = out[2] = out[3] = 0.0f;
    if (v == Py_None)
        return 0;
    PyObject *t = PySequence_Check(v) ? PySequence_Tuple(v) : PyTuple_Pack(1, v);
    if (t == NULL || PyTuple_GET_SIZE(t) < 1 || PyTuple_GET_SIZE(t) > 4) {
        Py_XDECREF(t);
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError,
                     "Texture: border_color is a number or 1 to 4 numbers (one per channel), "
                     "got %R", v);
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++) {
        double d = PyFloat_AsDouble(PyTuple_GET_ITEM(t, i));
        if (d == -1.0 && PyErr_Occurred()) {
            Py_DECREF(t);
            return -1;
        }
        out[i] = (float)d;
    }
    Py_DECREF(t);
    return 0;
}

static int
is_small_integer(int tc)
{
    return tc == CUKIT_TC_I8 || tc == CUKIT_TC_U8 || tc == CUKIT_TC_I16 || tc == CUKIT_TC_U16;
}

/* The combinations the hardware would silently not honour. 0 / -1 with ValueError. */
static int
check_settings(const resource *r, const int *modes, int filter, int normalized, int read)
{
    if (strcmp(r->kind, "linear") == 0) {
        int clamp = modes[0] == CU_TR_ADDRESS_MODE_CLAMP;
        if (filter != CU_TR_FILTER_MODE_POINT || normalized || !clamp) {
            PyErr_SetString(PyExc_ValueError,
                            "Texture: linear (1-D) device memory is read with tex1Dfetch by "
                            "integer index: filter_mode='linear', normalized_coords and "
                            "address modes other than 'clamp' do not apply to it (reads out of "
                            "range return 0); copy the data into a cukit.CudaArray for them");
            return -1;
        }
    }
    for (int i = 0; i < r->dims; i++) {
        if (!normalized &&
            (modes[i] == CU_TR_ADDRESS_MODE_WRAP || modes[i] == CU_TR_ADDRESS_MODE_MIRROR)) {
            PyErr_Format(PyExc_ValueError,
                         "Texture: address_mode '%s' needs normalized_coords=True; with "
                         "coordinates in elements the hardware only clamps or uses the border",
                         name_of(address_modes, modes[i]));
            return -1;
        }
    }
    if (read == READ_NORMALIZED_FLOAT && !is_small_integer(r->typecode)) {
        PyErr_Format(PyExc_ValueError,
                     "Texture: read_mode='normalized_float' maps 8- and 16-bit integers to "
                     "[0, 1] or [-1, 1]; elements of %s are read as they are "
                     "(read_mode='element_type')", cukit_typecode_name(r->typecode));
        return -1;
    }
    int float_result = r->typecode == CUKIT_TC_F32 || r->typecode == CUKIT_TC_F16 ||
                       read == READ_NORMALIZED_FLOAT;
    if (filter == CU_TR_FILTER_MODE_LINEAR && !float_result) {
        PyErr_Format(PyExc_ValueError,
                     "Texture: filter_mode='linear' interpolates floats; %s elements need "
                     "read_mode='normalized_float' (8- and 16-bit integers) or "
                     "filter_mode='point'", cukit_typecode_name(r->typecode));
        return -1;
    }
    return 0;
}

static PyObject *
texture_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"source", "address_mode", "filter_mode", "normalized_coords",
                             "read_mode", "border_color", "channels", NULL};
    PyObject *source, *address_o = NULL, *filter_o = NULL, *read_o = NULL, *border_o = Py_None;
    PyObject *channels_o = Py_None;
    int normalized = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOpOOO:Texture", kwlist, &source,
                                     &address_o, &filter_o, &normalized, &read_o, &border_o,
                                     &channels_o))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    /* The names first: a misspelt one is reported before anything touches the device. */
    int modes[3] = {CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP};
    int filter = filter_o ? lookup(filter_modes, filter_o, "filter_mode") : 0;
    int read = read_o ? lookup(read_modes, read_o, "read_mode") : READ_ELEMENT_TYPE;
    float border[4];
    if (filter < 0 || read < 0 || (address_o && read_address_modes(address_o, modes) < 0) ||
        read_border(border_o, border) < 0)
        return NULL;
    resource r;
    memset(&r, 0, sizeof r);
    if (Py_IS_TYPE(source, st->memory->CudaArrayType)) {
        if (channels_o != Py_None) {
            PyErr_SetString(PyExc_ValueError, "Texture: channels= is for device memory; a "
                            "CudaArray has its own channels");
            return NULL;
        }
        from_cudaarray((cukit_CudaArray *)source, &r);
    }
    else {
        int channels = 1;
        if (channels_o != Py_None) {
            channels = PyLong_Check(channels_o) ? (int)PyLong_AsLong(channels_o) : -1;
            if (channels == -1 && PyErr_Occurred())
                return NULL;
        }
        if (from_device_memory(st, source, channels, &r) < 0)
            return NULL;
    }
    if (check_settings(&r, modes, filter, normalized, read) < 0)
        return NULL;
    CUDA_TEXTURE_DESC td;
    memset(&td, 0, sizeof td);
    memcpy(td.addressMode, modes, sizeof modes);
    td.filterMode = filter;
    /* The driver turns integers into normalized floats unless told not to. */
    int integer = r.typecode != CUKIT_TC_F32 && r.typecode != CUKIT_TC_F16;
    td.flags = (integer && read == READ_ELEMENT_TYPE ? CU_TRSF_READ_AS_INTEGER : 0) |
               (normalized ? CU_TRSF_NORMALIZED_COORDINATES : 0);
    memcpy(td.borderColor, border, sizeof border);
    if (cukit_device_activate(r.dev) < 0)
        return NULL;
    CUtexObject handle = 0;
    if (CU_CALL(st, cuTexObjectCreate, (&handle, &r.res, &td, NULL)) < 0)
        return NULL;
    cukit_TexObject *t = PyObject_New(cukit_TexObject, type);
    if (t == NULL) {
        cukit_api.cuTexObjectDestroy(handle);
        return NULL;
    }
    t->st = st;
    t->device = (cukit_Device *)Py_NewRef(r.dev);
    t->handle = handle;
    t->source = Py_NewRef(source);
    PyObject *names = PyTuple_New(r.dims);
    for (int i = 0; names && i < r.dims; i++)
        PyTuple_SET_ITEM(names, i, PyUnicode_FromString(name_of(address_modes, modes[i])));
    t->info = names ? Py_BuildValue("{s:s,s:N,s:s,s:O,s:s,s:(dddd),s:i,s:i}", "kind", r.kind,
                                    "address_mode", names, "filter_mode",
                                    name_of(filter_modes, filter), "normalized_coords",
                                    normalized ? Py_True : Py_False, "read_mode",
                                    name_of(read_modes, read), "border_color", (double)border[0],
                                    (double)border[1], (double)border[2], (double)border[3],
                                    "channels", r.channels, "dims", r.dims)
                    : NULL;
    if (t->info == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

/* Destroy `handle` once the work queued before it is done. */
static void
texobj_dealloc(cukit_TexObject *self, int surface)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->handle) {
        PyObject *saved = PyErr_GetRaisedException();
        int rc = cukit_wait_queued(self->device);
        if (rc == 0)
            rc = surface ? CU_CALL(self->st, cuSurfObjectDestroy, (self->handle))
                         : CU_CALL(self->st, cuTexObjectDestroy, (self->handle));
        cukit_report_release((PyObject *)self, rc);
        PyErr_SetRaisedException(saved);
    }
    Py_XDECREF(self->device);
    Py_XDECREF(self->source);
    Py_XDECREF(self->info);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static void
texture_dealloc(cukit_TexObject *self)
{
    texobj_dealloc(self, 0);
}

static PyObject *
texobj_int(cukit_TexObject *self)
{
    return PyLong_FromUnsignedLongLong(self->handle);
}

static PyObject *
texobj_get_handle(cukit_TexObject *self, void *c)
{
    return texobj_int(self);
}

static PyObject *
texobj_get_info(cukit_TexObject *self, void *key)
{
    PyObject *v = self->info ? PyDict_GetItemString(self->info, key) : NULL;
    if (v == NULL)
        return PyErr_Format(PyExc_AttributeError, "%s", (const char *)key);
    return Py_NewRef(v);
}

static PyObject *
texobj_repr(cukit_TexObject *self)
{
    PyObject *kind = self->info ? PyDict_GetItemString(self->info, "kind") : NULL;
    return PyUnicode_FromFormat("<%s %p over %s (%s) on device %d>", Py_TYPE(self)->tp_name,
                                (void *)(uintptr_t)self->handle, Py_TYPE(self->source)->tp_name,
                                kind ? PyUnicode_AsUTF8(kind) : "array", self->device->ordinal);
}

static PyMemberDef texobj_members[] = {
    {"device", Py_T_OBJECT_EX, offsetof(cukit_TexObject, device), Py_READONLY, "The Device."},
    {"source", Py_T_OBJECT_EX, offsetof(cukit_TexObject, source), Py_READONLY,
     "What it reads: kept alive as long as the object."},
    {NULL},
};

static PyGetSetDef texture_getset[] = {
    {"handle", (getter)texobj_get_handle, NULL, "The CUtexObject, as an int.", NULL},
    {"kind", (getter)texobj_get_info, NULL, "'array', 'pitch2d' or 'linear'.", "kind"},
    {"address_mode", (getter)texobj_get_info, NULL, "Per dimension (x, y, z).", "address_mode"},
    {"filter_mode", (getter)texobj_get_info, NULL, "'point' or 'linear'.", "filter_mode"},
    {"normalized_coords", (getter)texobj_get_info, NULL, "Coordinates in [0, 1).",
     "normalized_coords"},
    {"read_mode", (getter)texobj_get_info, NULL, "'element_type' or 'normalized_float'.",
     "read_mode"},
    {"border_color", (getter)texobj_get_info, NULL, "Four floats.", "border_color"},
    {"channels", (getter)texobj_get_info, NULL, "Channels per element.", "channels"},
    {NULL},
};

static PyType_Slot texture_slots[] = {
    {Py_tp_doc, "Texture(source, *, address_mode='clamp', filter_mode='point', "
                "normalized_coords=False, read_mode='element_type', border_color=None, "
                "channels=None): a texture object over a CudaArray, over 2-D pitched device "
                "memory or over 1-D linear device memory; pass it to a cudaTextureObject_t "
                "parameter."},
    {Py_tp_new, texture_new},
    {Py_tp_dealloc, texture_dealloc},
    {Py_tp_repr, texobj_repr},
    {Py_tp_members, texobj_members},
    {Py_tp_getset, texture_getset},
    {Py_nb_int, texobj_int},
    {0, NULL},
};

static PyType_Spec texture_spec = {
    .name = "cukit.Texture",
    .basicsize = sizeof(cukit_TexObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = texture_slots,
};

/* ------------------------------------------------------------------ Surface */

static PyObject *
surface_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"source", NULL};
    PyObject *source;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Surface", kwlist, &source))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    if (!Py_IS_TYPE(source, st->memory->CudaArrayType)) {
        PyErr_Format(PyExc_TypeError,
                     "Surface: the source must be a cukit.CudaArray made with surface=True, "
                     "got %s", Py_TYPE(source)->tp_name);
        return NULL;
    }
    cukit_CudaArray *a = (cukit_CudaArray *)source;
    if (!a->surface) {
        PyErr_SetString(PyExc_ValueError,
                        "Surface: the CudaArray was not made with surface=True; a surface "
                        "writes only to arrays created with CudaArray(..., surface=True)");
        return NULL;
    }
    resource r;
    memset(&r, 0, sizeof r);
    from_cudaarray(a, &r);
    if (cukit_device_activate(r.dev) < 0)
        return NULL;
    CUsurfObject handle = 0;
    if (CU_CALL(st, cuSurfObjectCreate, (&handle, &r.res)) < 0)
        return NULL;
    cukit_TexObject *t = PyObject_New(cukit_TexObject, type);
    if (t == NULL) {
        cukit_api.cuSurfObjectDestroy(handle);
        return NULL;
    }
    t->st = st;
    t->device = (cukit_Device *)Py_NewRef(r.dev);
    t->handle = handle;
    t->source = Py_NewRef(source);
    t->info = Py_BuildValue("{s:s,s:i,s:i}", "kind", "array", "channels", r.channels, "dims",
                            r.dims);
    if (t->info == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static void
surface_dealloc(cukit_TexObject *self)
{
    texobj_dealloc(self, 1);
}

static PyGetSetDef surface_getset[] = {
    {"handle", (getter)texobj_get_handle, NULL, "The CUsurfObject, as an int.", NULL},
    {NULL},
};

static PyType_Slot surface_slots[] = {
    {Py_tp_doc, "Surface(cuda_array): a surface object over a CudaArray made with "
                "surface=True; pass it to a cudaSurfaceObject_t parameter (surf2Dwrite, ...)."},
    {Py_tp_new, surface_new},
    {Py_tp_dealloc, surface_dealloc},
    {Py_tp_repr, texobj_repr},
    {Py_tp_members, texobj_members},
    {Py_tp_getset, surface_getset},
    {Py_nb_int, texobj_int},
    {0, NULL},
};

static PyType_Spec surface_spec = {
    .name = "cukit.Surface",
    .basicsize = sizeof(cukit_TexObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = surface_slots,
};

int
cukit_texture_setup(PyObject *module, cukit_state *st)
{
    st->memory->TextureType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &texture_spec, NULL);
    if (st->memory->TextureType == NULL || PyModule_AddType(module, st->memory->TextureType) < 0)
        return -1;
    st->memory->SurfaceType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &surface_spec, NULL);
    if (st->memory->SurfaceType == NULL)
        return -1;
    return PyModule_AddType(module, st->memory->SurfaceType);
}
