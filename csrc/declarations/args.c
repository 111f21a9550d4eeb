/* args.c - Python values -> packed kernel parameters, by each parameter's declared C type */
#include "declarations/declarations.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ messages */

/* Raise exc with "argument N 'name' (type): <message>". Returns -1. */
static int
arg_error(PyObject *exc, const cukit_Signature *sig, int index, const char *fmt, ...)
{
    const cukit_param *p = &sig->params[index];
    va_list va;
    va_start(va, fmt);
    PyObject *detail = PyUnicode_FromFormatV(fmt, va);
    va_end(va);
    if (detail == NULL)
        return -1;
    PyErr_Format(exc, "%s() argument %d%s%s%s (%s): %U", sig->name, index + 1,
                 p->name[0] ? " '" : "", p->name, p->name[0] ? "'" : "", p->type, detail);
    Py_DECREF(detail);
    return -1;
}


/* ------------------------------------------------------------------ scalars */

static int
is_float_like(cukit_state *st, PyObject *v)
{
    return PyFloat_Check(v) ||
           (st->np_floating && PyObject_TypeCheck(v, (PyTypeObject *)st->np_floating));
}

static int
pack_integer(cukit_state *st, const cukit_Signature *sig, int i, PyObject *v, unsigned char *dst)
{
    const cukit_param *p = &sig->params[i];
    int is_signed = p->kind == CUKIT_P_INT;
    if (!PyLong_CheckExact(v) && is_float_like(st, v))
        return arg_error(PyExc_TypeError, sig, i,
                         "got a float (%R); an integer parameter takes int, or convert with "
                         "int(x) if truncation is what you want", v);
    PyObject *n = PyLong_CheckExact(v) ? Py_NewRef(v) : PyNumber_Index(v);
    if (n == NULL) {
        PyErr_Clear();
        if (!is_signed && p->size == 8 &&
            (Py_IS_TYPE(v, st->memory->TextureType) || Py_IS_TYPE(v, st->memory->SurfaceType))) {
            /* `typedef unsigned long long CUtexObject;` in the kernel's source */
            memcpy(dst, &((cukit_TexObject *)v)->handle, 8);
            return 0;
        }
        return arg_error(PyExc_TypeError, sig, i, "expected an int, got %s",
                         Py_TYPE(v)->tp_name);
    }
    int overflow = 0;
    long long sv = PyLong_AsLongLongAndOverflow(n, &overflow);
    unsigned long long uv = (unsigned long long)sv;
    if (sv == -1 && PyErr_Occurred()) {
        Py_DECREF(n);
        return -1;
    }
    if (overflow > 0 && !is_signed) {
        uv = PyLong_AsUnsignedLongLong(n);
        if (uv == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            overflow = 2;
        }
        else {
            overflow = 0;
            sv = 0; /* known non-negative */
        }
    }
    int fits;
    if (overflow)
        fits = 0;
    else if (is_signed) {
        long long lo = p->size == 8 ? INT64_MIN : -(1LL << (8 * p->size - 1));
        long long hi = p->size == 8 ? INT64_MAX : (1LL << (8 * p->size - 1)) - 1;
        fits = sv >= lo && sv <= hi;
    }
    else {
        fits = sv >= 0 && (p->size == 8 || uv <= (1ULL << (8 * p->size)) - 1);
    }
    if (!fits) {
        if (is_signed)
            arg_error(PyExc_OverflowError, sig, i, "%S does not fit: the range is %lld to %lld", n,
                      p->size == 8 ? INT64_MIN : -(1LL << (8 * p->size - 1)),
                      p->size == 8 ? INT64_MAX : (1LL << (8 * p->size - 1)) - 1);
        else
            arg_error(PyExc_OverflowError, sig, i, "%S does not fit: the range is 0 to %llu", n,
                      p->size == 8 ? UINT64_MAX : (1ULL << (8 * p->size)) - 1);
        Py_DECREF(n);
        return -1;
    }
    Py_DECREF(n);
    /* Little-endian: the low bytes of the 64-bit value are the narrower value. */
    memcpy(dst, &uv, p->size);
    return 0;
}

/* IEEE binary16 from a double, round to nearest even. */
static uint16_t
double_to_half(double d)
{
    uint64_t x;
    memcpy(&x, &d, 8);
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000);
    int exp = (int)((x >> 52) & 0x7ff);
    uint64_t mant = x & 0xfffffffffffffULL;
    if (exp == 0x7ff)
        return sign | 0x7c00 | (mant ? 0x200 : 0);
    int e = exp - 1023 + 15;
    if (e >= 31)
        return sign | 0x7c00;
    if (e <= 0) {
        int shift = 43 - e;
        if (shift > 63)
            return sign;
        uint64_t full = mant | (1ULL << 52);
        uint64_t h = full >> shift, rem = full & ((1ULL << shift) - 1), half = 1ULL << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint64_t h = ((uint64_t)e << 10) | (mant >> 42);
    uint64_t rem = mant & ((1ULL << 42) - 1), half = 1ULL << 41;
    if (rem > half || (rem == half && (h & 1)))
        h++; /* a carry into the exponent is the correct rounding, up to inf */
    return (uint16_t)(sign | h);
}

/* bfloat16 from a double (through float32), round to nearest even. */
static uint16_t
double_to_bf16(double d)
{
    float f = (float)d;
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

static int
pack_float(cukit_state *st, const cukit_Signature *sig, int i, PyObject *v, unsigned char *dst)
{
    const cukit_param *p = &sig->params[i];
    double d;
    if (PyFloat_CheckExact(v)) {
        d = PyFloat_AS_DOUBLE(v);
    }
    else if (PyBool_Check(v) || (st->np_bool && PyObject_TypeCheck(v, (PyTypeObject *)st->np_bool))) {
        return arg_error(PyExc_TypeError, sig, i, "got a bool; pass a number");
    }
    else if (PyFloat_Check(v) || PyLong_Check(v) ||
             (st->np_floating && (PyObject_TypeCheck(v, (PyTypeObject *)st->np_floating) ||
                                  PyObject_TypeCheck(v, (PyTypeObject *)st->np_integer)))) {
        d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                return arg_error(PyExc_OverflowError, sig, i, "%R is too large for a %s", v,
                                 p->type);
            }
            PyErr_Clear();
            return arg_error(PyExc_TypeError, sig, i, "expected a real number, got %s",
                             Py_TYPE(v)->tp_name);
        }
    }
    else {
        return arg_error(PyExc_TypeError, sig, i, "expected a float, got %s", Py_TYPE(v)->tp_name);
    }
    if (p->kind == CUKIT_P_FLOAT && p->size == 8) {
        memcpy(dst, &d, 8);
        return 0;
    }
    if (p->kind == CUKIT_P_FLOAT) {
        float f = (float)d;
        if (isinf(f) && !isinf(d))
            return arg_error(PyExc_OverflowError, sig, i,
                             "%R is outside float32's range (about +-3.4e38)", v);
        memcpy(dst, &f, 4);
        return 0;
    }
    uint16_t h = p->kind == CUKIT_P_HALF ? double_to_half(d) : double_to_bf16(d);
    if ((h & 0x7fff) == (p->kind == CUKIT_P_HALF ? 0x7c00 : 0x7f80) && !isinf(d))
        return arg_error(PyExc_OverflowError, sig, i, "%R is outside %s's range", v,
                         p->kind == CUKIT_P_HALF ? "float16 (+-65504)" : "bfloat16");
    memcpy(dst, &h, 2);
    return 0;
}

static int
pack_bool(cukit_state *st, const cukit_Signature *sig, int i, PyObject *v, unsigned char *dst)
{
    if (v == Py_True || v == Py_False) {
        *dst = v == Py_True;
        return 0;
    }
    if (st->np_bool && PyObject_TypeCheck(v, (PyTypeObject *)st->np_bool)) {
        int t = PyObject_IsTrue(v);
        if (t < 0)
            return -1;
        *dst = (unsigned char)t;
        return 0;
    }
    if (PyLong_Check(v)) {
        long x = PyLong_AsLong(v);
        if ((x == 0 || x == 1) && !PyErr_Occurred()) {
            *dst = (unsigned char)x;
            return 0;
        }
        PyErr_Clear();
        return arg_error(PyExc_OverflowError, sig, i, "%R is not 0 or 1", v);
    }
    return arg_error(PyExc_TypeError, sig, i, "expected a bool, got %s", Py_TYPE(v)->tp_name);
}

/* ------------------------------------------------------------------ pointers */

static int
check_elements(const cukit_Signature *sig, int i, int have, PyObject *v)
{
    int want = sig->params[i].typecode;
    if (want == CUKIT_TC_ANY || want == have ||
        (want == CUKIT_TC_PTR && (have == CUKIT_TC_I64 || have == CUKIT_TC_U64)))
        return 0;
    return arg_error(PyExc_TypeError, sig, i,
                     "got a %s array, but the kernel reads %s; convert it first "
                     "(e.g. x.astype(numpy.%s) before cukit.to_device)",
                     cukit_typecode_name(have), cukit_typecode_name(want),
                     cukit_typecode_name(want));
}

/* ValueError for a strided array passed where the kernel indexes a flat run. */
static int
not_contiguous(const cukit_Signature *sig, int i, const char *what, const char *fix)
{
    return arg_error(PyExc_ValueError, sig, i,
                     "%s is not C-contiguous; a pointer parameter needs its elements in C order "
                     "with no gaps: pass %s (or, if the kernel handles the strides itself, the "
                     "address as an int)",
                     what, fix);
}

/* A DLPack-only device array (JAX, ...): 1 with *out set, 2 when it is in host
 * memory, 0 when it does not speak DLPack, -1 on error. */
static int
pointer_from_dlpack(cukit_state *st, const cukit_Signature *sig, int i, PyObject *v,
                    const cukit_Device *dev, CUdeviceptr *out)
{
    cukit_dlpack_info info;
    int r = cukit_dlpack_peek(st, v, &info);
    if (r != 1)
        return r;
    if (dev && info.device_id != dev->ordinal)
        return arg_error(PyExc_ValueError, sig, i,
                         "the array is on device %d but the kernel runs on device %d",
                         info.device_id, dev->ordinal);
    if (check_elements(sig, i, info.typecode, v) < 0)
        return -1;
    if (!info.c_contiguous)
        return not_contiguous(sig, i, "the array", "a contiguous copy");
    *out = info.ptr;
    return 1;
}

/* A torch tensor: 1 with *out set, 0 when v is not one, -1 on error. */
static int
pointer_from_torch(cukit_state *st, const cukit_Signature *sig, int i, PyObject *v,
                   const cukit_Device *dev, CUdeviceptr *out)
{
    long where = -1;
    int tc = CUKIT_TC_OTHER;
    int found = cukit_torch_pointer(st, v, out, &where, &tc);
    if (found <= 0)
        return found;
    if (where < 0)
        return arg_error(PyExc_TypeError, sig, i,
                         "got a torch tensor in host memory; move it to the GPU with .cuda()");
    if (dev && where != dev->ordinal)
        return arg_error(PyExc_ValueError, sig, i,
                         "the tensor is on device %ld but the kernel runs on device %d", where,
                         dev->ordinal);
    return check_elements(sig, i, tc, v) < 0 ? -1 : 1;
}

/* The device of a foreign pointer, checked against the launch device. Asked of
 * the driver only when there is more than one device to confuse. 0 / -1. */
static int
check_pointer_device(cukit_state *st, const cukit_Signature *sig, int i, CUdeviceptr ptr,
                     const cukit_Device *dev)
{
    int ordinal = -1;
    if (dev == NULL || ptr == 0 || st->runtime->driver_count < 2 ||
        cukit_api.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr) !=
            CUDA_SUCCESS ||
        ordinal < 0 || ordinal == dev->ordinal)
        return 0;
    return arg_error(PyExc_ValueError, sig, i,
                     "the array is on device %d but the kernel runs on device %d", ordinal,
                     dev->ordinal);
}

/* A device address from an object exposing __cuda_array_interface__. 1 if it
 * had one, 0 if not, -1 on error. Called only for an object that no check before
 * it in pack_pointer took (each of them is by type): its type is remembered, so
 * the next object of that type comes here first. */
static int
pointer_from_cai(cukit_state *st, const cukit_Signature *sig, int i, PyObject *v,
                 const cukit_Device *dev, CUdeviceptr *out)
{
    PyObject *dict;
    int has = cukit_optional_attr_obj(v, st->memory->str_cai, &dict);
    if (has == 0 && Py_IS_TYPE(v, st->memory->cai_type))
        Py_CLEAR(st->memory->cai_type); /* the type lost its attribute */
    if (has <= 0)
        return has;
    if (!Py_IS_TYPE(v, st->memory->cai_type))
        Py_XSETREF(st->memory->cai_type, (PyTypeObject *)Py_NewRef(Py_TYPE(v)));
    cukit_cai cai;
    int rc = cukit_cai_read(st, v, dict, 0, "a kernel argument", &cai);
    Py_DECREF(dict);
    if (rc < 0 || check_elements(sig, i, cai.typecode, v) < 0)
        return -1;
    if (!cai.c_contiguous)
        return not_contiguous(sig, i, "the array", "a contiguous copy");
    if (check_pointer_device(st, sig, i, cai.ptr, dev) < 0)
        return -1;
    *out = cai.ptr;
    return 1;
}

/* A CuPy array, read by its attributes: 1 with *out set, 0 when v is not one (or CuPy
 * cannot be read so: its interface is read next), -1 on error. The checks and their
 * words are those of pointer_from_cai, which CuPy arrays went through before. */
static int
pointer_from_cupy(cukit_state *st, const cukit_Signature *sig, int i, PyObject *v,
                  const cukit_Device *dev, CUdeviceptr *out)
{
    int tc = CUKIT_TC_OTHER, contiguous = 1;
    int found = cukit_cupy_pointer(st, v, out, &tc, &contiguous);
    if (found <= 0)
        return found;
    if (check_elements(sig, i, tc, v) < 0)
        return -1;
    if (!contiguous)
        return not_contiguous(sig, i, "the array", "a contiguous copy");
    return check_pointer_device(st, sig, i, *out, dev) < 0 ? -1 : 1;
}

static int
pack_pointer(cukit_state *st, const cukit_Signature *sig, int i, PyObject *v, unsigned char *dst,
             const cukit_Device *dev)
{
    CUdeviceptr ptr = 0;
    int found;
    if (Py_IS_TYPE(v, st->ArrayType)) { /* cukit.Array, read through array/'s hook */
        cukit_array_ref a;
        st->hooks.array_ref(v, &a);
        if (!a.live)
            return arg_error(PyExc_ValueError, sig, i,
                             "the array's memory was freed (with .free()); it cannot be used");
        if (dev && a.device != dev)
            return arg_error(PyExc_ValueError, sig, i,
                             "the array is on device %d but the kernel runs on device %d",
                             a.device->ordinal, dev->ordinal);
        if (a.typecode != sig->params[i].typecode && check_elements(sig, i, a.typecode, v) < 0)
            return -1;
        if (!a.c_contiguous)
            return not_contiguous(sig, i, "the array (a strided view)",
                                  "cukit.ascontiguousarray(x)");
        ptr = a.ptr;
    }
    else if (Py_IS_TYPE(v, st->memory->cupy_ndarray) &&
             (found = pointer_from_cupy(st, sig, i, v, dev, &ptr)) != 0) {
        if (found < 0)
            return -1;
    }
    else if (Py_IS_TYPE(v, st->memory->cai_type) &&
             (found = pointer_from_cai(st, sig, i, v, dev, &ptr)) != 0) {
        /* a type read through its interface before (CuPy, Numba, ...): the checks
         * between here and there are by type and did not take it then */
        if (found < 0)
            return -1;
    }
    else if (Py_IS_TYPE(v, st->memory->BufferType) || PyObject_TypeCheck(v, st->memory->BufferType)) {
        cukit_Buffer *b = (cukit_Buffer *)v; /* subclasses too (cukit.pycuda's DeviceAllocation) */
        if (b->ptr == 0)
            return arg_error(PyExc_ValueError, sig, i,
                             "the buffer was freed (with .free()); it cannot be used");
        if (dev && b->device != dev)
            return arg_error(PyExc_ValueError, sig, i,
                             "the buffer is on device %d but the kernel runs on device %d",
                             b->device->ordinal, dev->ordinal);
        ptr = b->ptr;
    }
    else if (v == Py_None) {
        ptr = 0;
    }
    else if ((PyLong_Check(v) && !PyBool_Check(v)) ||
             (st->np_integer && PyObject_TypeCheck(v, (PyTypeObject *)st->np_integer))) {
        /* an int address; numpy integers too (numpy.uintp(x) + offset) */
        PyObject *n = PyNumber_Index(v);
        ptr = n ? PyLong_AsUnsignedLongLong(n) : (CUdeviceptr)-1;
        Py_XDECREF(n);
        if (ptr == (CUdeviceptr)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return arg_error(PyExc_OverflowError, sig, i,
                             "%R is not a device address (0 to 2**64 - 1)", v);
        }
    }
    else if (Py_IS_TYPE(v, st->memory->TextureType) || Py_IS_TYPE(v, st->memory->SurfaceType)) {
        int tex = Py_IS_TYPE(v, st->memory->TextureType);
        return arg_error(PyExc_TypeError, sig, i,
                         "got a cukit.%s, which is not device memory; declare the parameter "
                         "%s and read it with %s, or pass the array it reads (.source)",
                         tex ? "Texture" : "Surface",
                         tex ? "cudaTextureObject_t" : "cudaSurfaceObject_t",
                         tex ? "tex1D/tex2D/tex3D<T>(...)" : "surf2Dread/surf2Dwrite(...)");
    }
    else {
        found = pointer_from_torch(st, sig, i, v, dev, &ptr);
        if (found == 0)
            found = pointer_from_cupy(st, sig, i, v, dev, &ptr);
        if (found == 0)
            found = pointer_from_cai(st, sig, i, v, dev, &ptr);
        if (found == 0 && (found = cukit_host_array_device_ptr(st, v, &ptr)) > 0) {
            /* cukit's managed (or mapped pinned) numpy array: the same dtype check */
            PyObject *dt = PyObject_GetAttr(v, st->memory->str_dtype);
            int tc = dt ? cukit_typecode_of_dtype(dt) : -1;
            Py_XDECREF(dt);
            if (tc < 0 || check_elements(sig, i, tc, v) < 0)
                return -1;
        }
        if (found == 0 && !PyObject_CheckBuffer(v))
            found = pointer_from_dlpack(st, sig, i, v, dev, &ptr); /* 2: in host memory */
        if (found < 0)
            return -1;
        if (found != 1) {
            int host = found == 2 || PyObject_CheckBuffer(v) ||
                       PyObject_HasAttrString(v, "__array_interface__");
            if (host)
                return arg_error(PyExc_TypeError, sig, i,
                                 "got a %s in host memory; a pointer parameter needs device "
                                 "memory: copy it with cukit.to_device(x) first",
                                 Py_TYPE(v)->tp_name);
            return arg_error(PyExc_TypeError, sig, i,
                             "expected device memory (cukit.Array, cukit.Buffer, an object "
                             "with __cuda_array_interface__ or __dlpack__, or an int address), "
                             "got %s",
                             Py_TYPE(v)->tp_name);
        }
    }
    memcpy(dst, &ptr, 8);
    return 0;
}

static int
pack_struct(const cukit_Signature *sig, int i, PyObject *v, unsigned char *dst)
{
    const cukit_param *p = &sig->params[i];
    Py_buffer view;
    if (PyObject_GetBuffer(v, &view, PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Clear();
        return arg_error(PyExc_TypeError, sig, i,
                         "a struct passed by value takes bytes or a numpy structured scalar of "
                         "exactly %zu bytes, got %s",
                         p->size, Py_TYPE(v)->tp_name);
    }
    if ((size_t)view.len != p->size) {
        PyBuffer_Release(&view);
        return arg_error(PyExc_TypeError, sig, i,
                         "the struct is %zu bytes in the compiled kernel but %zd bytes were given",
                         p->size, view.len);
    }
    memcpy(dst, view.buf, p->size);
    PyBuffer_Release(&view);
    return 0;
}

/* ------------------------------------------------------------------ texture and surface objects */

/* A cudaTextureObject_t / cudaSurfaceObject_t parameter: a cukit.Texture / cukit.Surface
 * of the kernel's device, or a handle as an int. */
static int
pack_texobj(cukit_state *st, const cukit_Signature *sig, int i, PyObject *v, unsigned char *dst,
            const cukit_Device *dev)
{
    int surface = sig->params[i].kind == CUKIT_P_SURFACE;
    const char *want = surface ? "Surface" : "Texture";
    unsigned long long h;
    if (Py_IS_TYPE(v, st->memory->TextureType) || Py_IS_TYPE(v, st->memory->SurfaceType)) {
        if (Py_IS_TYPE(v, st->memory->SurfaceType) != surface)
            return arg_error(PyExc_TypeError, sig, i, "got a cukit.%s; this parameter takes a "
                             "cukit.%s (or its handle as an int)",
                             surface ? "Texture" : "Surface", want);
        cukit_TexObject *t = (cukit_TexObject *)v;
        if (dev && t->device != dev)
            return arg_error(PyExc_ValueError, sig, i,
                             "the %s belongs to device %d but the kernel runs on device %d",
                             want, t->device->ordinal, dev->ordinal);
        if (st->hooks.array_ref && Py_IS_TYPE(t->source, st->ArrayType)) {
            cukit_array_ref a;
            st->hooks.array_ref(t->source, &a);
            if (!a.live)
                return arg_error(PyExc_ValueError, sig, i, "the device array this Texture "
                                 "reads was freed (with .free())");
        }
        h = t->handle;
    }
    else if (PyLong_Check(v) && !PyBool_Check(v)) {
        h = PyLong_AsUnsignedLongLong(v);
        if (h == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return arg_error(PyExc_OverflowError, sig, i, "%R is not a handle (0 to 2**64 - 1)",
                             v);
        }
    }
    else {
        return arg_error(PyExc_TypeError, sig, i, "expected a cukit.%s (or its handle as an "
                         "int), got %s", want, Py_TYPE(v)->tp_name);
    }
    memcpy(dst, &h, 8);
    return 0;
}

/* ------------------------------------------------------------------ parameters of images */

/* A CUKIT_P_RAW parameter: what the image says is its size (and, from PTX, whether it is
 * an integer). Packed as PyCUDA packs any argument: by the value's own type, which must
 * have the parameter's size. */
static int
pack_raw(cukit_state *st, const cukit_Signature *sig, int i, PyObject *v, unsigned char *dst,
         const cukit_Device *dev)
{
    const cukit_param *p = &sig->params[i];
    int np_scalar = st->np_generic && PyObject_TypeCheck(v, (PyTypeObject *)st->np_generic);
    if (np_scalar || PyBytes_Check(v) || PyByteArray_Check(v) || PyMemoryView_Check(v)) {
        if (np_scalar && p->raw_ints && is_float_like(st, v))
            return arg_error(PyExc_TypeError, sig, i,
                             "got a float (%R), but the image declares an integer or address "
                             "here; pass a numpy integer of %zu bytes", v, p->size);
        Py_buffer view;
        if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) < 0)
            return -1;
        int ok = (size_t)view.len == p->size;
        if (ok)
            memcpy(dst, view.buf, p->size);
        PyBuffer_Release(&view);
        if (!ok)
            return arg_error(PyExc_TypeError, sig, i,
                             "the image declares %zu bytes here, but the %s given has %zd; "
                             "pass a numpy scalar of %zu bytes (numpy.int32, numpy.float32, "
                             "numpy.int64, ...)",
                             p->size, Py_TYPE(v)->tp_name, view.len, p->size);
        return 0;
    }
    if (PyLong_Check(v) && p->size <= 8) {
        int overflow = 0;
        long long sv = PyLong_AsLongLongAndOverflow(v, &overflow);
        unsigned long long uv = (unsigned long long)sv;
        if (sv == -1 && PyErr_Occurred())
            return -1;
        if (overflow > 0) {
            uv = PyLong_AsUnsignedLongLong(v);
            if (uv == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                overflow = 2;
            }
            else {
                overflow = 0;
                sv = 0;
            }
        }
        int bits = (int)(8 * p->size);
        int fits = !overflow && (bits == 64 || (sv >= -(1LL << (bits - 1)) &&
                                                (sv < 0 || uv <= (1ULL << bits) - 1)));
        if (!fits)
            return arg_error(PyExc_OverflowError, sig, i, "%R does not fit in the %zu bytes the "
                             "image declares here", v, p->size);
        memcpy(dst, &uv, p->size);
        return 0;
    }
    if (PyFloat_Check(v)) {
        if (p->raw_ints || (p->size != 4 && p->size != 8))
            return arg_error(PyExc_TypeError, sig, i,
                             "got a float (%R), but the image declares %s of %zu bytes here",
                             v, p->raw_ints ? "an integer or address" : "a value", p->size);
        double d = PyFloat_AS_DOUBLE(v);
        float f = (float)d;
        memcpy(dst, p->size == 4 ? (void *)&f : (void *)&d, p->size);
        return 0;
    }
    if (p->size == 8)
        return pack_pointer(st, sig, i, v, dst, dev);
    return arg_error(PyExc_TypeError, sig, i,
                     "the image declares %zu bytes here, which take a numpy scalar or bytes of "
                     "that size, not %s", p->size, Py_TYPE(v)->tp_name);
}

int
cukit_pack_arg(cukit_state *st, const cukit_Signature *sig, int index, PyObject *v,
               unsigned char *dst, const cukit_Device *dev)
{
    switch (sig->params[index].kind) {
    case CUKIT_P_POINTER:
        return pack_pointer(st, sig, index, v, dst, dev);
    case CUKIT_P_INT:
    case CUKIT_P_UINT:
        return pack_integer(st, sig, index, v, dst);
    case CUKIT_P_FLOAT:
    case CUKIT_P_HALF:
    case CUKIT_P_BF16:
        return pack_float(st, sig, index, v, dst);
    case CUKIT_P_BOOL:
        return pack_bool(st, sig, index, v, dst);
    case CUKIT_P_STRUCT:
        return pack_struct(sig, index, v, dst);
    case CUKIT_P_TEXTURE:
    case CUKIT_P_SURFACE:
        return pack_texobj(st, sig, index, v, dst, dev);
    case CUKIT_P_RAW:
        return pack_raw(st, sig, index, v, dst, dev);
    }
    return arg_error(PyExc_SystemError, sig, index, "unknown parameter kind");
}
