/* engine.c - what every elementwise launch shares: the per-operation kernel tables,
 * broadcasting, layout simplification, the launch's argument block, and output allocation */
#include "compute/compute.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ kernel tables */

static int
kcache_grow(ck_kcache *c)
{
    size_t cap = c->cap ? c->cap * 2 : 16;
    ck_entry *slots = PyMem_Calloc(cap, sizeof(ck_entry));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < c->cap; i++) {
        ck_entry *e = &c->slots[i];
        if (e->key == 0)
            continue;
        size_t j = (size_t)((e->key * 0x9E3779B97F4A7C15ULL) >> 32) & (cap - 1);
        while (slots[j].key != 0)
            j = (j + 1) & (cap - 1);
        slots[j] = *e;
    }
    PyMem_Free(c->slots);
    c->slots = slots;
    c->cap = cap;
    return 0;
}

int
ck_kcache_add(ck_kcache *c, uint64_t key, CUfunction func, int vec, PyObject *module)
{
    if (c->modules == NULL && (c->modules = PyList_New(0)) == NULL)
        return -1;
    if (PyList_Append(c->modules, module) < 0)
        return -1;
    if ((c->used + 1) * 2 > c->cap && kcache_grow(c) < 0)
        return -1;
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 32) & (c->cap - 1);
    while (c->slots[i].key != 0 && c->slots[i].key != key)
        i = (i + 1) & (c->cap - 1);
    if (c->slots[i].key == 0)
        c->used++;
    c->slots[i].key = key;
    c->slots[i].func = func;
    c->slots[i].vec = vec;
    return 0;
}

void
ck_kcache_clear(ck_kcache *c)
{
    PyMem_Free(c->slots);
    c->slots = NULL;
    c->cap = c->used = 0;
    Py_CLEAR(c->modules);
}

/* ------------------------------------------------------------------ layouts */

int
ck_broadcast(cukit_Array *const *arrays, int count, int *ndim, Py_ssize_t *shape)
{
    int nd = 0;
    for (int k = 0; k < count; k++)
        if (arrays[k] && arrays[k]->ndim > nd)
            nd = arrays[k]->ndim;
    for (int d = 0; d < nd; d++)
        shape[d] = 1;
    for (int k = 0; k < count; k++) {
        cukit_Array *a = arrays[k];
        if (a == NULL)
            continue;
        for (int d = 0; d < a->ndim; d++) {
            Py_ssize_t have = shape[nd - a->ndim + d], n = a->shape[d];
            if (n == have || n == 1)
                continue;
            if (have == 1) {
                shape[nd - a->ndim + d] = n;
                continue;
            }
            /* numpy's words, with each operand's shape */
            PyObject *parts = PyList_New(0);
            for (int j = 0; parts && j < count; j++) {
                if (arrays[j] == NULL)
                    continue;
                PyObject *s = cukit_array_shape(arrays[j]);
                PyObject *r = s ? PyObject_Repr(s) : NULL;
                if (r == NULL || PyList_Append(parts, r) < 0)
                    Py_CLEAR(parts);
                Py_XDECREF(s);
                Py_XDECREF(r);
            }
            PyObject *sep = PyUnicode_FromString(" ");
            PyObject *joined = parts && sep ? PyUnicode_Join(sep, parts) : NULL;
            if (joined)
                PyErr_Format(PyExc_ValueError,
                             "operands could not be broadcast together with shapes %U", joined);
            Py_XDECREF(parts);
            Py_XDECREF(sep);
            Py_XDECREF(joined);
            return -1;
        }
    }
    *ndim = nd;
    return 0;
}

void
ck_layout_operand(ck_layout *layout, int k, cukit_Array *a, int ndim, const Py_ssize_t *shape)
{
    layout->scalar[k] = 0;
    layout->ptr[k] = cukit_array_ptr(a);
    layout->itemsize[k] = (int)a->itemsize;
    for (int d = 0; d < ndim; d++) {
        int ad = d - (ndim - a->ndim);
        layout->strides[k][d] = (ad < 0 || a->shape[ad] == 1) ? 0 : a->strides[ad];
    }
}

/* Largest shared memory the tiles of one T2 kernel may take (static, under 48 KiB). */
#define T2_MAX_SHARED (40 * 1024)

int
ck_layout_finish(ck_layout *layout, int ndim, const Py_ssize_t *shape, int order_by, int ref,
                 unsigned inputs, int *vec)
{
    int nops = layout->nops;
    layout->tiled = 0;
    long long n = 1;
    int m = 0;
    for (int d = 0; d < ndim; d++) {
        n *= shape[d];
        if (shape[d] == 1)
            continue;
        /* keep dimension d as m; with order_by, sort outer-to-inner by its |stride| */
        long long col[CK_MAXOP];
        for (int k = 0; k < nops; k++)
            col[k] = layout->strides[k][d];
        int j = m++;
        long long key = order_by >= 0 ? llabs(col[order_by]) : 0;
        while (order_by >= 0 && j > 0 && llabs(layout->strides[order_by][j - 1]) < key) {
            layout->shape[j] = layout->shape[j - 1];
            for (int k = 0; k < nops; k++)
                layout->strides[k][j] = layout->strides[k][j - 1];
            j--;
        }
        layout->shape[j] = shape[d];
        for (int k = 0; k < nops; k++)
            layout->strides[k][j] = col[k];
    }
    layout->n = n;
    /* merge neighbours that every operand walks as one run */
    int nd = 0;
    for (int d = 1; d < m; d++) {
        int merge = 1;
        for (int k = 0; k < nops && merge; k++)
            if (!layout->scalar[k] && layout->strides[k][nd] != layout->strides[k][d] * layout->shape[d])
                merge = 0;
        if (merge) {
            layout->shape[nd] *= layout->shape[d];
            for (int k = 0; k < nops; k++)
                layout->strides[k][nd] = layout->strides[k][d];
        }
        else {
            nd++;
            layout->shape[nd] = layout->shape[d];
            for (int k = 0; k < nops; k++)
                layout->strides[k][nd] = layout->strides[k][d];
        }
    }
    layout->nd = m ? nd + 1 : 0;
    int contiguous = 1, widest = 1;
    for (int k = 0; k < nops; k++) {
        if (layout->scalar[k])
            continue;
        if (layout->itemsize[k] > widest)
            widest = layout->itemsize[k];
        if (layout->nd == 1 && layout->strides[k][0] != layout->itemsize[k])
            contiguous = 0;
    }
    if (layout->nd > 1)
        contiguous = 0;
    if (contiguous) {
        int v = widest >= 16 ? 1 : 16 / widest;
        for (int k = 0; k < nops && v > 1; k++)
            if (!layout->scalar[k] && layout->ptr[k] % (CUdeviceptr)(v * layout->itemsize[k]) != 0)
                v = 1;
        *vec = v;
        return v > 1 ? CK_CLASS_VEC : CK_CLASS_FLAT;
    }
    *vec = 1;
    /* Two dimensions where an input runs along the other one than the output: tiles,
     * so that neither its reads nor the output's writes stride across memory. */
    if (layout->nd == 2 && ref >= 0 && !layout->scalar[ref] &&
        llabs(layout->strides[ref][1]) <= llabs(layout->strides[ref][0]) &&
        (layout->shape[0] + 31) / 32 <= 65535) {
        unsigned tiled = 0;
        long long shared = 0;
        for (int k = 0; k < nops; k++) {
            if (!(inputs >> k & 1) || layout->scalar[k])
                continue;
            long long s0 = llabs(layout->strides[k][0]), s1 = llabs(layout->strides[k][1]);
            if (s0 != 0 && s0 < s1) {
                tiled |= 1u << k;
                shared += 32 * 33 * (long long)layout->itemsize[k];
            }
        }
        if (tiled && shared <= T2_MAX_SHARED) {
            layout->tiled = tiled;
            return CK_CLASS_T2;
        }
    }
    /* 32-bit indexing when every element index and byte offset fits */
    int small = n <= 0x7fffffffLL && layout->nd <= 3;
    for (int k = 0; k < nops && small; k++) {
        long long span = layout->itemsize[k];
        for (int d = 0; d < layout->nd; d++)
            span += llabs(layout->strides[k][d]) * (layout->shape[d] - 1);
        if (span > 0x7fffffffLL)
            small = 0;
    }
    if (!small)
        return CK_CLASS_NN;
    return layout->nd == 1 ? CK_CLASS_N1 : layout->nd == 2 ? CK_CLASS_N2 : CK_CLASS_N3;
}

int
ck_launch(cukit_Device *dev, CUfunction func, const ck_layout *layout, int cls, int vec, CUstream h)
{
    ck_args_layout argblock;
    ck_args_layout_of(layout->nops, cls, &argblock);
    _Alignas(16) unsigned char buf[4096];
    memset(buf, 0, argblock.size);
    for (int k = 0; k < layout->nops; k++) {
        if (layout->scalar[k] == 1)
            memcpy(buf + 16 * k, layout->val[k].b, 16);
        else
            memcpy(buf + 16 * k, &layout->ptr[k], sizeof(CUdeviceptr));
    }
    memcpy(buf + argblock.n_off, &layout->n, 8);
    int nd32 = layout->nd;
    memcpy(buf + argblock.ndim_off, &nd32, 4);
    if (argblock.nd) {
        memcpy(buf + argblock.shape_off, layout->shape, 8 * (size_t)layout->nd);
        for (int k = 0; k < layout->nops; k++)
            memcpy(buf + argblock.stride_off + 8 * (size_t)argblock.nd * (size_t)k, layout->strides[k],
                   8 * (size_t)layout->nd);
    }
    /* One pass: a thread per vector (the grid-stride loop only serves grids past the
     * limit). argblock grid capped at one wave measured 7% below this on an H200. */
    long long per = (long long)CK_THREADS * vec;
    long long blocks = (layout->n + per - 1) / per, most = 0x7fffffffLL;
    if (blocks > most)
        blocks = most;
    if (blocks < 1)
        blocks = 1;
    unsigned gx = (unsigned)blocks, gy = 1, bx = CK_THREADS, by = 1;
    if (cls == CK_CLASS_T2) { /* 32 x 32 tiles, 32 x 8 threads each */
        gx = (unsigned)((layout->shape[1] + 31) / 32);
        gy = (unsigned)((layout->shape[0] + 31) / 32);
        bx = 32;
        by = CK_THREADS / 32;
    }
    void *args[] = {buf};
    return cukit_builtin_launch(dev, func, gx, gy, bx, by, h, args);
}

/* ------------------------------------------------------------------ arrays and dtypes */

/* 1 for ml_dtypes' types, whose numpy dtype exists only once ml_dtypes is imported. */
static int
ml_type(int tc)
{
    return tc == CUKIT_TC_BF16 || tc == CUKIT_TC_F8E4M3 || tc == CUKIT_TC_F8E5M2;
}

PyObject *
ck_dtype_obj(cukit_state *st, int tc)
{
    if (st->compute->math_dtypes == NULL) {
        if (cukit_numpy(st) < 0)
            return NULL;
        PyObject *t = PyTuple_New(CK_NT);
        /* ml_dtypes' (bfloat16, the float8s) are looked up at their first use below */
        for (int i = 0; t && i < CK_NT; i++) {
            PyObject *d = ck_dtypes[i].ch && !ml_type(i)
                              ? PyObject_CallFunction(st->np_dtype, "s", ck_dtypes[i].name)
                              : Py_NewRef(Py_None);
            if (d == NULL)
                Py_CLEAR(t);
            else
                PyTuple_SET_ITEM(t, i, d);
        }
        if (t == NULL)
            return NULL;
        st->compute->math_dtypes = t;
    }
    PyObject *d = PyTuple_GET_ITEM(st->compute->math_dtypes, tc);
    if (d == Py_None && ml_type(tc)) {
        PyObject *name = PyUnicode_FromString(ck_dtypes[tc].name);
        d = name ? cukit_resolve_dtype(st, name) : NULL;
        Py_XDECREF(name);
        if (d == NULL)
            return NULL;
        PyTuple_SET_ITEM(st->compute->math_dtypes, tc, d); /* steals d; drops None's ref */
        Py_DECREF(Py_None);
    }
    return d;
}

/* tc of dtype_like, refusing types the engine does not take (cast: astype's, which
 * takes the float8s too). */
static int
tc_of(cukit_state *st, PyObject *dtype_like, int cast)
{
    PyObject *dt = cukit_resolve_dtype(st, dtype_like);
    if (dt == NULL)
        return -1;
    int tc = cukit_typecode_of_dtype(dt);
    if (tc >= 0 && !(cast ? ck_cast_tc(tc) : ck_math_tc(tc))) {
        PyErr_Format(PyExc_TypeError,
                     "cukit's array math does not support dtype %S (it takes bool, int8 to "
                     "uint64, float16, bfloat16, float32, float64, complex64 and complex128%s)%s",
                     dt, cast ? "; astype also float8_e4m3fn and float8_e5m2" : "",
                     ck_dtype_hint(tc));
        tc = -1;
    }
    Py_DECREF(dt);
    return tc;
}

int
ck_tc_of(cukit_state *st, PyObject *dtype_like)
{
    return tc_of(st, dtype_like, 0);
}

int
ck_cast_tc_of(cukit_state *st, PyObject *dtype_like)
{
    return tc_of(st, dtype_like, 1);
}

cukit_Array *
ck_empty(cukit_state *st, cukit_Device *dev, int tc, int ndim, const Py_ssize_t *shape)
{
    PyObject *dtype = ck_dtype_obj(st, tc);
    if (dtype == NULL)
        return NULL;
    return cukit_array_new(st, dev, dtype, tc, ck_dtypes[tc].size, ndim, shape);
}

cukit_Array *
ck_empty_out(cukit_state *st, cukit_Device *dev, int tc, int ndim, const Py_ssize_t *shape,
             PyObject *stream)
{
    if ((stream != NULL && stream != Py_None) || cukit_stream_current(st, dev) != NULL)
        return ck_empty(st, dev, tc, ndim, shape);
    PyObject *dtype = ck_dtype_obj(st, tc);
    if (dtype == NULL)
        return NULL;
    return cukit_array_new_for_legacy_write(st, dev, dtype, tc, ck_dtypes[tc].size, ndim,
                                            shape);
}

int
ck_stream(cukit_state *st, PyObject *stream, cukit_Device *dev, PyObject *keep, CUstream *h)
{
    if ((stream == NULL || stream == Py_None) && cukit_stream_current(st, dev) == NULL) {
        *h = NULL; /* the legacy stream: no bookkeeping */
        return 0;
    }
    if (cukit_stream_handle(st, stream, dev, h) < 0)
        return -1;
    if (keep)
        return cukit_capture_keep(st, stream, keep);
    return 0;
}
