/* strided.c - copies and fills of strided device layouts, and stream-ordered scratch
 *
 * A layout is first reduced to its simplest form (length-1 dimensions dropped,
 * destination strides made positive, dimensions ordered and merged where they
 * form one run), then covered by the cheapest call that can: one linear copy or
 * memset, a 2-D/3-D driver copy or 2-D memset, or else cukit's own kernels,
 * compiled with NVRTC the first time a device needs them. */
#include "array/array.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXD (CUKIT_MAXDIM + 1) /* the array's dimensions, plus the units of one element */
#define THREADS 256
#define ROW_MIN_BYTES 64        /* narrower contiguous rows go to the kernel, not cuMemcpy2D */
#define FILL_MAX_BYTES 128      /* the largest element the fill kernel takes */

/* The kernels (kernels/strided.cu) take one struct by value whose layout the host
 * structs below mirror. */
typedef struct {
    unsigned long long dst, src;
    long long total;
    int ndim, pad;
    long long n[MAXD], d[MAXD], s[MAXD];
} copy_params;

typedef struct {
    unsigned long long dst;
    long long total;
    int ndim, k;
    long long n[MAXD], d[MAXD];
    unsigned long long value[FILL_MAX_BYTES / 8];
} fill_params;

/* A layout being simplified: n[i] elements `d[i]` bytes apart in the destination
 * and `s[i]` in the source (unused by fills), outermost first. */
typedef struct {
    int ndim;
    long long n[MAXD], d[MAXD], s[MAXD];
} layout;

/* ------------------------------------------------------------------ layouts */

/* Load a layout; 0 when it has no elements. */
static int
load(layout *L, int ndim, const Py_ssize_t *shape, const Py_ssize_t *dst_strides,
     const Py_ssize_t *src_strides)
{
    L->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0)
            return 0;
        L->n[i] = shape[i];
        L->d[i] = dst_strides[i];
        L->s[i] = src_strides ? src_strides[i] : 0;
    }
    return 1;
}

/* Drop length-1 dimensions; make destination strides positive, walking the source
 * the same way; order by destination stride, largest first (so the destination is
 * written in address order); merge neighbours that form one run on both sides. */
static void
simplify(layout *L, CUdeviceptr *dst, CUdeviceptr *src)
{
    int m = 0;
    for (int i = 0; i < L->ndim; i++) {
        if (L->n[i] == 1)
            continue;
        long long n = L->n[i], d = L->d[i], s = L->s[i];
        if (d < 0) {
            *dst += (CUdeviceptr)((n - 1) * d);
            *src += (CUdeviceptr)((n - 1) * s);
            d = -d;
            s = -s;
        }
        int j = m++;
        while (j > 0 && L->d[j - 1] < d) { /* insertion sort, stable */
            L->n[j] = L->n[j - 1];
            L->d[j] = L->d[j - 1];
            L->s[j] = L->s[j - 1];
            j--;
        }
        L->n[j] = n;
        L->d[j] = d;
        L->s[j] = s;
    }
    int k = 0;
    for (int i = 1; i < m; i++) {
        if (L->d[k] == L->d[i] * L->n[i] && L->s[k] == L->s[i] * L->n[i]) {
            L->n[k] *= L->n[i];
            L->d[k] = L->d[i];
            L->s[k] = L->s[i];
        }
        else {
            k++;
            L->n[k] = L->n[i];
            L->d[k] = L->d[i];
            L->s[k] = L->s[i];
        }
    }
    L->ndim = m ? k + 1 : 0;
}

/* The widest access (8, 4, 2 or 1 bytes) that every element, address and stride
 * is aligned to. */
static int
unit_of(const layout *L, Py_ssize_t itemsize, CUdeviceptr a, CUdeviceptr b)
{
    unsigned long long bits = (unsigned long long)itemsize | a | b | 8;
    for (int i = 0; i < L->ndim; i++)
        bits |= (unsigned long long)llabs(L->d[i]) | (unsigned long long)llabs(L->s[i]);
    return (bits & 1) ? 1 : (bits & 2) ? 2 : (bits & 4) ? 4 : 8;
}

static long long
total_of(const layout *L)
{
    long long t = 1;
    for (int i = 0; i < L->ndim; i++)
        t *= L->n[i];
    return t;
}

/* ------------------------------------------------------------------ the kernels */

/* The kernel `name` on dev, compiling cukit's copy kernels for it the first time.
 * 0 / -1 (NotSupportedError without NVRTC, saying why a copy needs it, ...). */
static int
kernel(cukit_Device *dev, const char *name, CUfunction *out)
{
    cukit_state *st = dev->st;
    char defines[32];
    snprintf(defines, sizeof defines, "#define MAXD %d\n", MAXD);
    if (cukit_builtin_kernel_file(dev, &st->array->strided_modules, defines,
                                  "array/kernels/strided.cu", name, out) == 0)
        return 0;
    if (PyErr_ExceptionMatches(st->exc[CUKIT_EXC_NOT_SUPPORTED])) {
        /* Say why a plain copy needs a compiler. */
        PyObject *exc = PyErr_GetRaisedException();
        PyObject *msg = PyUnicode_FromFormat(
            "this copy or fill of a strided layout needs cukit's copy kernel, which is "
            "compiled with NVRTC: %S", exc);
        if (msg)
            cukit_raise(st, CUKIT_EXC_NOT_SUPPORTED, -1, NULL, NULL, msg);
        Py_XDECREF(msg);
        Py_DECREF(exc);
    }
    return -1;
}

static int
launch(cukit_Device *dev, const char *name, long long total, void *params, CUstream stream)
{
    CUfunction f;
    if (kernel(dev, name, &f) < 0)
        return -1;
    long long blocks = (total + THREADS - 1) / THREADS;
    long long most = (long long)dev->sm_count * 16;
    if (blocks > most)
        blocks = most;
    if (blocks < 1)
        blocks = 1;
    void *args[] = {params};
    return cukit_builtin_launch(dev, f, (unsigned)blocks, 1, THREADS, 1, stream, args);
}

/* ------------------------------------------------------------------ copies */

static int
max_pitch(cukit_Device *dev, long long *out)
{
    int v = 0;
    if (CU_CALL(dev->st, cuDeviceGetAttribute, (&v, CU_DEVICE_ATTRIBUTE_MAX_PITCH, dev->dev)) < 0)
        return -1;
    *out = v;
    return 0;
}

/* Rows that are contiguous on both sides, 2 or 3 dimensions, positive pitches the
 * driver takes: a cuMemcpy2D/3D. 1 done, 0 not this layout, -1 error. */
static int
copy_rows(cukit_Device *dev, const layout *L, CUdeviceptr dst, CUdeviceptr src, int u,
          CUstream stream)
{
    int nd = L->ndim, last = nd - 1;
    if (nd < 2 || nd > 3 || L->d[last] != u || L->s[last] != u)
        return 0;
    long long width = L->n[last] * u, pd = L->d[last - 1], ps = L->s[last - 1], most;
    if (width < ROW_MIN_BYTES || pd < width || ps < width)
        return 0;
    if (nd == 3 && (L->s[0] <= 0 || L->d[0] % pd != 0 || L->s[0] % ps != 0 ||
                    L->d[0] / pd < L->n[1] || L->s[0] / ps < L->n[1]))
        return 0;
    if (max_pitch(dev, &most) < 0)
        return -1;
    if (pd > most || ps > most)
        return 0;
    if (nd == 2) {
        CUDA_MEMCPY2D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = src;
        c.srcPitch = (size_t)ps;
        c.dstDevice = dst;
        c.dstPitch = (size_t)pd;
        c.WidthInBytes = (size_t)width;
        c.Height = (size_t)L->n[0];
        return CU_CALL(dev->st, cuMemcpy2DAsync, (&c, stream)) < 0 ? -1 : 1;
    }
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = src;
    c.srcPitch = (size_t)ps;
    c.srcHeight = (size_t)(L->s[0] / ps);
    c.dstDevice = dst;
    c.dstPitch = (size_t)pd;
    c.dstHeight = (size_t)(L->d[0] / pd);
    c.WidthInBytes = (size_t)width;
    c.Height = (size_t)L->n[1];
    c.Depth = (size_t)L->n[0];
    return CU_CALL(dev->st, cuMemcpy3DAsync, (&c, stream)) < 0 ? -1 : 1;
}

int
cukit_strided_copy(cukit_Device *dev, CUdeviceptr dst, const Py_ssize_t *dst_strides,
                   CUdeviceptr src, const Py_ssize_t *src_strides, int ndim,
                   const Py_ssize_t *shape, Py_ssize_t itemsize, CUstream stream)
{
    layout L;
    if (itemsize == 0 || !load(&L, ndim, shape, dst_strides, src_strides))
        return 0;
    if (cukit_device_activate(dev) < 0)
        return -1;
    simplify(&L, &dst, &src);
    /* Split each element into units of the widest aligned access, as one more,
     * innermost dimension, folded into the one above when elements are adjacent. */
    int u = unit_of(&L, itemsize, dst, src);
    long long k = itemsize / u;
    int last = L.ndim - 1;
    if (L.ndim > 0 && L.d[last] == itemsize && L.s[last] == itemsize) {
        L.n[last] *= k;
        L.d[last] = L.s[last] = u;
    }
    else if (k > 1 || L.ndim == 0) {
        L.n[L.ndim] = k;
        L.d[L.ndim] = L.s[L.ndim] = u;
        L.ndim++;
    }
    if (L.ndim == 1 && L.d[0] == u && L.s[0] == u)
        return CU_CALL(dev->st, cuMemcpyDtoDAsync, (dst, src, (size_t)(L.n[0] * u), stream));
    last = L.ndim - 1;
    if (L.d[last] == u && L.s[last] == u) {
        /* A run contiguous on both sides moves in the widest units (up to 16 bytes)
         * that its length, the addresses and the other strides allow. */
        long long bytes = L.n[last] * u;
        unsigned long long bits = (unsigned long long)bytes | dst | src;
        for (int i = 0; i < last; i++)
            bits |= (unsigned long long)llabs(L.d[i]) | (unsigned long long)llabs(L.s[i]);
        int w = 16;
        while (w > u && (bits & (unsigned long long)(w - 1)))
            w /= 2;
        L.n[last] = bytes / w;
        L.d[last] = L.s[last] = w;
        u = w;
    }
    int rows = copy_rows(dev, &L, dst, src, u, stream);
    if (rows != 0)
        return rows < 0 ? -1 : 0;
    copy_params p;
    memset(&p, 0, sizeof p);
    p.dst = dst;
    p.src = src;
    p.total = total_of(&L);
    p.ndim = L.ndim;
    memcpy(p.n, L.n, sizeof(long long) * (size_t)L.ndim);
    memcpy(p.d, L.d, sizeof(long long) * (size_t)L.ndim);
    memcpy(p.s, L.s, sizeof(long long) * (size_t)L.ndim);
    static const char *names[] = {"cukit_copy_1", "cukit_copy_2", NULL, "cukit_copy_4",
                                  NULL, NULL, NULL, "cukit_copy_8",
                                  NULL, NULL, NULL, NULL, NULL, NULL, NULL, "cukit_copy_16"};
    return launch(dev, names[u - 1], p.total, &p, stream);
}

/* ------------------------------------------------------------------ fills */

/* One contiguous run, or a 1-D run with a fixed gap, of n elements `pitch` bytes
 * apart: the memset family. 1 done, 0 not this case, -1 error. */
static int
fill_run(cukit_Device *dev, CUdeviceptr p, long long pitch, long long n, const unsigned char *b,
         Py_ssize_t isz, CUstream stream)
{
    cukit_state *st = dev->st;
    if (pitch == isz && isz == 1)
        return CU_CALL(st, cuMemsetD8Async, (p, b[0], (size_t)n, stream)) < 0 ? -1 : 1;
    if (pitch == isz && isz == 2 && p % 2 == 0) {
        unsigned short v;
        memcpy(&v, b, 2);
        return CU_CALL(st, cuMemsetD16Async, (p, v, (size_t)n, stream)) < 0 ? -1 : 1;
    }
    if (isz % 4 == 0 && pitch % 4 == 0 && p % 4 == 0) {
        /* One 2-D memset per 32-bit word of the element, each a column of n rows. */
        long long most;
        if (pitch > isz && (max_pitch(dev, &most) < 0 || pitch > most))
            return PyErr_Occurred() ? -1 : 0;
        for (Py_ssize_t w = 0; w < isz / 4; w++) {
            unsigned int v;
            memcpy(&v, b + 4 * w, 4);
            if (CU_CALL(st, cuMemsetD2D32Async,
                        (p + 4 * (size_t)w, (size_t)pitch, v, 1, (size_t)n, stream)) < 0)
                return -1;
        }
        return 1;
    }
    return 0;
}

/* Contiguous rows of 1-, 2- or 4-byte elements: one 2-D memset. 1 / 0 / -1. */
static int
fill_rows(cukit_Device *dev, const layout *L, CUdeviceptr p, const unsigned char *b,
          Py_ssize_t isz, CUstream stream)
{
    cukit_state *st = dev->st;
    long long most;
    if (L->ndim != 2 || L->d[1] != isz || (isz != 1 && isz != 2 && isz != 4) ||
        L->d[0] < L->n[1] * isz || L->d[0] % isz != 0 || p % (CUdeviceptr)isz != 0)
        return 0;
    if (max_pitch(dev, &most) < 0)
        return -1;
    if (L->d[0] > most)
        return 0;
    size_t pitch = (size_t)L->d[0], w = (size_t)L->n[1], h = (size_t)L->n[0];
    int rc;
    if (isz == 1) {
        rc = CU_CALL(st, cuMemsetD2D8Async, (p, pitch, b[0], w, h, stream));
    }
    else if (isz == 2) {
        unsigned short v;
        memcpy(&v, b, 2);
        rc = CU_CALL(st, cuMemsetD2D16Async, (p, pitch, v, w, h, stream));
    }
    else {
        unsigned int v;
        memcpy(&v, b, 4);
        rc = CU_CALL(st, cuMemsetD2D32Async, (p, pitch, v, w, h, stream));
    }
    return rc < 0 ? -1 : 1;
}

int
cukit_strided_fill(cukit_Device *dev, CUdeviceptr dst, const Py_ssize_t *strides, int ndim,
                   const Py_ssize_t *shape, const void *value, Py_ssize_t itemsize,
                   CUstream stream)
{
    layout L;
    const unsigned char *b = value;
    if (itemsize == 0 || !load(&L, ndim, shape, strides, NULL))
        return 0;
    if (cukit_device_activate(dev) < 0)
        return -1;
    CUdeviceptr unused = 0;
    simplify(&L, &dst, &unused);
    if (L.ndim == 0) { /* one element */
        L.ndim = 1;
        L.n[0] = 1;
        L.d[0] = itemsize;
    }
    int done = L.ndim == 1 ? fill_run(dev, dst, L.d[0], L.n[0], b, itemsize, stream)
                           : fill_rows(dev, &L, dst, b, itemsize, stream);
    if (done != 0)
        return done < 0 ? -1 : 0;
    if (itemsize > FILL_MAX_BYTES) {
        PyErr_Format(PyExc_TypeError,
                     "fill() of this layout takes elements of at most %d bytes; this dtype has "
                     "%zd (fill a contiguous array and copy it in instead)",
                     FILL_MAX_BYTES, itemsize);
        return -1;
    }
    fill_params p;
    memset(&p, 0, sizeof p);
    int u = unit_of(&L, itemsize, dst, 0);
    p.dst = dst;
    p.total = total_of(&L);
    p.ndim = L.ndim;
    p.k = (int)(itemsize / u);
    memcpy(p.n, L.n, sizeof(long long) * (size_t)L.ndim);
    memcpy(p.d, L.d, sizeof(long long) * (size_t)L.ndim);
    memcpy(p.value, b, (size_t)itemsize);
    static const char *names[] = {"cukit_fill_1", "cukit_fill_2", NULL, "cukit_fill_4",
                                  NULL, NULL, NULL, "cukit_fill_8"};
    return launch(dev, names[u - 1], p.total, &p, stream);
}
