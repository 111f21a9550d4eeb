/* mask.c - boolean masks on the device: a[mask], a[mask] = x, nonzero, flatnonzero, and the setup of compute/index/ */
#include "compute/index/index.h"

#include <string.h>

#define THREADS 256
#define TILE (THREADS * 16) /* kernels/mask.cu's TILE (THREADS * VEC) */
#define MASK_FILE "compute/index/kernels/mask.cu"
#define MASK_DEFINES "#define MAXD 32\n"

static int
mask_kernel(cukit_Device *dev, const char *name, CUfunction *f)
{
    return cukit_builtin_kernel_file(dev, &dev->st->compute->mask_modules, MASK_DEFINES, MASK_FILE,
                                     name, f);
}

/* a itself when C-contiguous, else a C-contiguous copy. New ref or NULL. */
static cukit_Array *
contiguous(cukit_Array *a)
{
    if (a->flags & CUKIT_ARRAY_C_CONTIG)
        return (cukit_Array *)Py_NewRef((PyObject *)a);
    return cukit_array_copy(a);
}

/* Count mask's trues per tile and where each tile's go (n bytes at `mask`, queued on h),
 * then read the total back. *offsets: a new int64 array of the tiles' first positions.
 * 0 / -1. */
static int
mask_offsets(cukit_state *st, cukit_Device *dev, CUdeviceptr mask, long long n, CUstream h,
             cukit_Array **offsets, long long *count)
{
    *offsets = NULL;
    *count = 0;
    long long nb = (n + TILE - 1) / TILE;
    Py_ssize_t nbs = (Py_ssize_t)nb, nb1 = nbs + 1;
    cukit_Array *counts = ck_empty(st, dev, CUKIT_TC_U32, 1, &nbs);
    cukit_Array *offs = counts ? ck_empty(st, dev, CUKIT_TC_I64, 1, &nb1) : NULL;
    int rc = -1;
    CUfunction fc, fs;
    if (offs == NULL || mask_kernel(dev, "ck_mask_count", &fc) < 0 ||
        mask_kernel(dev, "ck_mask_scan", &fs) < 0)
        goto done;
    CUdeviceptr cp = cukit_array_ptr(counts), op = cukit_array_ptr(offs);
    void *a1[] = {&mask, &n, &cp};
    void *a2[] = {&cp, &nb, &op};
    unsigned scan_threads = nb >= 1024 ? 1024 : (unsigned)((nb + 31) / 32 * 32);
    if (nb > 0 && (cukit_builtin_launch(dev, fc, (unsigned)nb, 1, THREADS, 1, h, a1) < 0 ||
                   cukit_builtin_launch(dev, fs, 1, 1, scan_threads, 1, h, a2) < 0))
        goto done;
    if (nb > 0) {
        CUresult r;
        long long total = 0;
        CUdeviceptr last = op + (CUdeviceptr)(nb * 8);
        Py_BEGIN_ALLOW_THREADS
        r = cukit_api.cuMemcpyDtoHAsync(&total, last, sizeof total, h);
        if (r == CUDA_SUCCESS)
            r = cukit_api.cuStreamSynchronize(h);
        Py_END_ALLOW_THREADS
        if (cukit_check_cu(st, r, "cuMemcpyDtoHAsync") < 0 || cukit_report_raise(st) < 0)
            goto done;
        *count = total;
    }
    *offsets = (cukit_Array *)Py_NewRef((PyObject *)offs);
    rc = 0;
done:
    Py_XDECREF(counts);
    Py_XDECREF(offs);
    return rc;
}

/* mask as a C-contiguous bool array on dev: itself, a copy, or (any other dtype)
 * mask != 0. New ref or NULL. */
static cukit_Array *
as_mask(cukit_state *st, cukit_Array *a)
{
    if (a->typecode == CUKIT_TC_BOOL)
        return contiguous(a);
    PyObject *zero = PyLong_FromLong(0);
    PyObject *ne = zero ? ck_array_math(st, CUKIT_OP_LT + Py_NE, (PyObject *)a, zero, 0) : NULL;
    Py_XDECREF(zero);
    if (ne == NULL)
        return NULL;
    cukit_Array *out = contiguous((cukit_Array *)ne);
    Py_DECREF(ne);
    return out;
}

cukit_Array *
ck_mask_coords(cukit_state *st, cukit_Array *mask_in, int rows)
{
    cukit_Device *dev = mask_in->device;
    cukit_Array *mask = as_mask(st, mask_in), *offs = NULL, *out = NULL;
    CUstream h;
    long long count;
    if (mask == NULL || ck_stream(st, Py_None, dev, NULL, &h) < 0 ||
        cukit_device_activate(dev) < 0 ||
        mask_offsets(st, dev, cukit_array_ptr(mask), mask->size, h, &offs, &count) < 0)
        goto done;
    int nd = mask->ndim > 0 ? mask->ndim : 1;
    Py_ssize_t shape[2] = {nd, (Py_ssize_t)count};
    if (!rows) {
        shape[0] = (Py_ssize_t)count;
        shape[1] = nd;
    }
    out = ck_empty(st, dev, CUKIT_TC_I64, 2, shape);
    if (out == NULL || count == 0)
        goto done;
    struct {
        long long n, count;
        int ndim, rows;
        long long shape[CUKIT_MAXDIM];
    } p;
    memset(&p, 0, sizeof p);
    p.n = mask->size;
    p.count = count;
    p.ndim = nd;
    p.rows = rows;
    for (int d = 0; d < mask->ndim; d++)
        p.shape[d] = mask->shape[d];
    if (mask->ndim == 0)
        p.shape[0] = 1;
    CUfunction f;
    CUdeviceptr mp = cukit_array_ptr(mask), op = cukit_array_ptr(offs), rp = cukit_array_ptr(out);
    void *args[] = {&mp, &op, &rp, &p};
    long long nb = (p.n + TILE - 1) / TILE;
    if (mask_kernel(dev, "ck_mask_coords", &f) < 0 ||
        cukit_builtin_launch(dev, f, (unsigned)nb, 1, THREADS, 1, h, args) < 0)
        Py_CLEAR(out);
done:
    Py_XDECREF(mask);
    Py_XDECREF(offs);
    return out;
}

static const char *
sized(const char *const names[5], Py_ssize_t itemsize)
{
    return names[itemsize == 1 ? 0 : itemsize == 2 ? 1 : itemsize == 4 ? 2 : itemsize == 8 ? 3 : 4];
}

cukit_Array *
ck_mask_select(cukit_state *st, cukit_Array *a_in, cukit_Array *mask_in)
{
    static const char *const names[5] = {"ck_mask_compact_1", "ck_mask_compact_2",
                                         "ck_mask_compact_4", "ck_mask_compact_8",
                                         "ck_mask_compact_16"};
    cukit_Device *dev = a_in->device;
    if (mask_in->device != dev) {
        PyErr_SetString(PyExc_ValueError, "the mask is on another device than the array: move "
                        "it with .to(device)");
        return NULL;
    }
    cukit_Array *a = contiguous(a_in), *mask = a ? as_mask(st, mask_in) : NULL, *offs = NULL,
                *out = NULL;
    CUstream h;
    long long count;
    if (mask == NULL || ck_stream(st, Py_None, dev, NULL, &h) < 0 ||
        cukit_device_activate(dev) < 0 ||
        mask_offsets(st, dev, cukit_array_ptr(mask), mask->size, h, &offs, &count) < 0)
        goto done;
    Py_ssize_t n = (Py_ssize_t)count;
    out = cukit_array_new(st, dev, a->dtype, a->typecode, a->itemsize, 1, &n);
    if (out == NULL || count == 0)
        goto done;
    CUfunction f;
    long long size = mask->size, nb = (size + TILE - 1) / TILE;
    CUdeviceptr mp = cukit_array_ptr(mask), op = cukit_array_ptr(offs), dp = cukit_array_ptr(a),
                rp = cukit_array_ptr(out);
    void *args[] = {&mp, &size, &op, &dp, &rp};
    if (mask_kernel(dev, sized(names, a->itemsize), &f) < 0 ||
        cukit_builtin_launch(dev, f, (unsigned)nb, 1, THREADS, 1, h, args) < 0)
        Py_CLEAR(out);
done:
    Py_XDECREF(a);
    Py_XDECREF(mask);
    Py_XDECREF(offs);
    return out;
}

int
ck_mask_fill(cukit_state *st, cukit_Array *a, cukit_Array *mask_in, cukit_Array *value,
             const void *bits_in)
{
    static const char *const names[5] = {"ck_mask_fill_1", "ck_mask_fill_2", "ck_mask_fill_4",
                                         "ck_mask_fill_8", "ck_mask_fill_16"};
    cukit_Device *dev = a->device;
    if (mask_in->device != dev) {
        PyErr_SetString(PyExc_ValueError, "the mask is on another device than the array: move "
                        "it with .to(device)");
        return -1;
    }
    unsigned char bits[16] = {0};
    if (bits_in)
        memcpy(bits, bits_in, (size_t)a->itemsize);
    cukit_Array *mask = as_mask(st, mask_in);
    int rc = -1;
    CUstream h;
    CUfunction f;
    if (mask == NULL || ck_stream(st, Py_None, dev, NULL, &h) < 0 ||
        cukit_device_activate(dev) < 0)
        goto done;
    /* a where-style pass over the data: no count, no read of the value on the host */
    long long n = a->size, blocks = (n + 4 * THREADS - 1) / (4 * THREADS); /* 4 a thread */
    if (blocks > 65535LL * 8)
        blocks = 65535LL * 8;
    CUdeviceptr mp = cukit_array_ptr(mask), dp = cukit_array_ptr(a);
    CUdeviceptr vp = value ? cukit_array_ptr(value) : 0;
    void *args[] = {&mp, &n, &dp, bits, &vp};
    rc = n == 0 ? 0
         : mask_kernel(dev, sized(names, a->itemsize), &f) < 0 ||
                 cukit_builtin_launch(dev, f, (unsigned)blocks, 1, THREADS, 1, h, args) < 0
             ? -1
             : 0;
done:
    Py_XDECREF(mask);
    return rc;
}

/* ------------------------------------------------------------------ module functions */

static cukit_Array *
array_arg(cukit_state *st, PyObject *obj, const char *who)
{
    if (Py_IS_TYPE(obj, st->ArrayType))
        return (cukit_Array *)Py_NewRef(obj);
    PyErr_Format(PyExc_TypeError, "%s takes a cukit array, not %s: move host data to the "
                 "device with cukit.asarray()", who, Py_TYPE(obj)->tp_name);
    return NULL;
}

PyObject *
ck_nonzero(cukit_state *st, PyObject *obj)
{
    cukit_Array *a = array_arg(st, obj, "nonzero");
    if (a == NULL)
        return NULL;
    if (a->ndim == 0) {
        Py_DECREF(a);
        PyErr_SetString(PyExc_ValueError, "Calling nonzero on 0d arrays is not allowed. Use "
                        "cukit.atleast_1d(a).nonzero() instead.");
        return NULL;
    }
    cukit_Array *c = ck_mask_coords(st, a, 1);
    Py_DECREF(a);
    if (c == NULL)
        return NULL;
    PyObject *out = PyTuple_New(c->shape[0]);
    for (Py_ssize_t j = 0; out && j < c->shape[0]; j++) {
        Py_ssize_t n = c->shape[1], s = c->strides[1];
        PyObject *row = (PyObject *)cukit_array_view_as(c, c->dtype, c->typecode, c->itemsize,
                                                        c->offset + j * c->strides[0], 1, &n, &s);
        if (row == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, j, row);
    }
    Py_DECREF(c);
    return out;
}

/* nonzero(a): a tuple of a.ndim int64 arrays (rows of one (ndim, count) array). */
static PyObject *
mod_nonzero(PyObject *m, PyObject *obj)
{
    return ck_nonzero(PyModule_GetState(m), obj);
}

/* flatnonzero(a): the indices of a.ravel()'s nonzero elements, int64. */
static PyObject *
mod_flatnonzero(PyObject *m, PyObject *obj)
{
    cukit_state *st = PyModule_GetState(m);
    cukit_Array *a = array_arg(st, obj, "flatnonzero");
    if (a == NULL)
        return NULL;
    cukit_Array *flat = contiguous(a);
    Py_DECREF(a);
    if (flat == NULL)
        return NULL;
    Py_ssize_t n = flat->size, s = flat->itemsize;
    cukit_Array *v = cukit_array_view_as(flat, flat->dtype, flat->typecode, flat->itemsize,
                                         flat->offset, 1, &n, &s);
    Py_DECREF(flat);
    cukit_Array *c = v ? ck_mask_coords(st, v, 1) : NULL;
    Py_XDECREF(v);
    if (c == NULL)
        return NULL;
    Py_ssize_t cn = c->shape[1], cs = c->strides[1];
    PyObject *out = (PyObject *)cukit_array_view_as(c, c->dtype, c->typecode, c->itemsize,
                                                    c->offset, 1, &cn, &cs);
    Py_DECREF(c);
    return out;
}

/* _argwhere(a) for a.ndim > 0: the (count, a.ndim) int64 coordinates, written in that
 * layout by the kernel (no transpose after). */
static PyObject *
mod_argwhere(PyObject *m, PyObject *obj)
{
    cukit_state *st = PyModule_GetState(m);
    cukit_Array *a = array_arg(st, obj, "argwhere");
    if (a == NULL)
        return NULL;
    cukit_Array *c = ck_mask_coords(st, a, 0);
    Py_DECREF(a);
    return (PyObject *)c;
}

static PyMethodDef functions[] = {
    {"nonzero", mod_nonzero, METH_O,
     "nonzero(a) -> tuple of int64 Arrays: the indices of a's nonzero elements, one array per "
     "dimension, in row-major order (numpy.nonzero). Reads the count from the device."},
    {"_argwhere", mod_argwhere, METH_O,
     "Internal: argwhere(a) for a.ndim > 0 (cukit.argwhere handles 0-d arrays)."},
    {"flatnonzero", mod_flatnonzero, METH_O,
     "flatnonzero(a) -> int64 Array: the indices of the nonzero elements of a.ravel()."},
    {NULL},
};

int
ck_index_setup(PyObject *module, cukit_state *st)
{
    st->hooks.array_index = ck_index_get;
    st->hooks.array_index_set = ck_index_set;
    return PyModule_AddFunctions(module, functions) < 0 ? -1
                                                        : ck_index_functions_setup(module, st);
}
