/* index.c - numpy's advanced indexing of cukit.Array: integer arrays and boolean masks in an index, read (a[idx]) and written (a[idx] = v) on the device */
#include "compute/index/index.h"

#include <string.h>

#define MAXI 8 /* index arrays in one index (kernels/index.cu's MAXI) */

/* kernels/index.cu's parameter block, field for field. */
typedef struct {
    unsigned long long base, other, err;
    long long total;
    int ndim, nidx;
    long long shape[CUKIT_MAXDIM];
    long long bstride[CUKIT_MAXDIM];
    long long vstride[CUKIT_MAXDIM];
    unsigned long long idx[MAXI];
    long long istride[MAXI][CUKIT_MAXDIM];
    long long len[MAXI];
    long long astride[MAXI];
    long long axis[MAXI];
} index_params;

/* What an index becomes: a basic key for the view its other items make, and the
 * index arrays, each with the view's dimension and the array's axis it indexes. */
typedef struct {
    PyObject *basic;               /* strong ref: the tuple of basic items */
    int nidx;
    cukit_Array *idx[MAXI];        /* strong refs: int64 index arrays on the device */
    int host_checked[MAXI];        /* 1: its values were checked on the host already */
    int vdim[MAXI];                /* the view's dimension it indexes */
    int axis[MAXI];                /* and the original array's, for messages */
    int first;                     /* the view dimensions before the advanced block */
    int adjacent;                  /* 1: the advanced items are next to each other */
} parsed_index;

static void
parsed_clear(parsed_index *p)
{
    Py_CLEAR(p->basic);
    for (int i = 0; i < p->nidx; i++)
        Py_CLEAR(p->idx[i]);
    p->nidx = 0;
}

enum { IT_BASIC_INT, IT_SLICE, IT_NONE, IT_ELLIPSIS, IT_INTS, IT_BOOLS };

/* A host index (list, numpy array, bool) as a numpy array, refusing other dtypes with
 * numpy's IndexError. New ref or NULL. */
static PyObject *
host_index(cukit_state *st, PyObject *it)
{
    PyObject *arr = PyObject_CallOneArg(st->np_asarray, it);
    if (arr == NULL)
        return NULL;
    PyObject *dt = PyObject_GetAttrString(arr, "dtype");
    PyObject *kind = dt ? PyObject_GetAttrString(dt, "kind") : NULL;
    Py_XDECREF(dt);
    const char *k = kind ? PyUnicode_AsUTF8(kind) : NULL;
    if (k == NULL)
        goto fail;
    if (strcmp(k, "f") == 0 && PyList_Check(it) && PyList_GET_SIZE(it) == 0) {
        Py_SETREF(arr, PyObject_CallMethod(arr, "astype", "s", "int64")); /* [] indexes nothing */
    }
    else if (strcmp(k, "i") != 0 && strcmp(k, "u") != 0 && strcmp(k, "b") != 0) {
        PyErr_SetString(PyExc_IndexError,
                        "arrays used as indices must be of integer (or boolean) type");
        goto fail;
    }
    Py_DECREF(kind);
    return arr;
fail:
    Py_XDECREF(kind);
    Py_XDECREF(arr);
    return NULL;
}

/* The item's kind, with a host index turned into a numpy array in *conv (new ref). */
static int
item_kind(cukit_state *st, PyObject *it, PyObject **conv)
{
    *conv = NULL;
    if (it == Py_Ellipsis)
        return IT_ELLIPSIS;
    if (it == Py_None)
        return IT_NONE;
    if (PySlice_Check(it))
        return IT_SLICE;
    int adv = cukit_index_item_is_advanced(st, it);
    if (adv <= 0)
        return adv < 0 ? -1 : IT_BASIC_INT; /* the basic path checks what it is */
    if (Py_IS_TYPE(it, st->ArrayType)) {
        int tc = ((cukit_Array *)it)->typecode;
        if (tc == CUKIT_TC_BOOL)
            return IT_BOOLS;
        if (ck_dtypes[tc].kind != 'i' && ck_dtypes[tc].kind != 'u') {
            PyErr_SetString(PyExc_IndexError,
                            "arrays used as indices must be of integer (or boolean) type");
            return -1;
        }
        return IT_INTS;
    }
    *conv = host_index(st, it);
    if (*conv == NULL)
        return -1;
    PyObject *dt = PyObject_GetAttrString(*conv, "dtype");
    PyObject *kind = dt ? PyObject_GetAttrString(dt, "kind") : NULL;
    Py_XDECREF(dt);
    int boolean = kind && PyUnicode_CompareWithASCIIString(kind, "b") == 0;
    Py_XDECREF(kind);
    return boolean ? IT_BOOLS : IT_INTS;
}

/* Add index array `arr` (a cukit Array of any integer type, or a numpy integer array,
 * whose values are checked against `len` on the host) for view dimension vdim. */
static int
add_index(cukit_state *st, parsed_index *p, cukit_Device *dev, PyObject *arr, int vdim, int axis,
          Py_ssize_t len)
{
    if (p->nidx == MAXI) {
        PyErr_Format(PyExc_IndexError,
                     "cukit takes at most %d index arrays in one index (a boolean array "
                     "counts one per dimension); index in steps", MAXI);
        return -1;
    }
    cukit_Array *dev_arr = NULL;
    int checked = 0;
    if (Py_IS_TYPE(arr, st->ArrayType)) {
        cukit_Array *a = (cukit_Array *)arr;
        if (a->device != dev) {
            PyErr_Format(PyExc_ValueError,
                         "the index array is on device %d and the array on device %d: move "
                         "one with .to(device)", a->device->ordinal, dev->ordinal);
            return -1;
        }
        dev_arr = a->typecode == CUKIT_TC_I64 ? (cukit_Array *)Py_NewRef(arr)
                                              : (cukit_Array *)ck_astype(st, a, CUKIT_TC_I64, Py_None);
    }
    else {
        /* numpy: check the values here, where it is cheap, then move them */
        PyObject *lo = NULL, *hi = NULL;
        Py_ssize_t n = PyObject_Size(arr);
        if (n < 0)
            return -1;
        if (n > 0) {
            lo = PyObject_CallMethod(arr, "min", NULL);
            hi = lo ? PyObject_CallMethod(arr, "max", NULL) : NULL;
            long long l = hi ? PyLong_AsLongLong(lo) : -1, h = hi ? PyLong_AsLongLong(hi) : -1;
            if (PyErr_Occurred()) {
                if (PyErr_ExceptionMatches(PyExc_OverflowError)) { /* a uint64 past int64 */
                    PyErr_Clear();
                    l = 0;
                    h = len;
                }
                else {
                    Py_XDECREF(lo);
                    Py_XDECREF(hi);
                    return -1;
                }
            }
            Py_XDECREF(lo);
            Py_XDECREF(hi);
            long long bad = l < -len ? l : h >= len ? h : 0;
            if (l < -len || h >= len) {
                PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for axis %d with size %zd",
                             bad, axis, len);
                return -1;
            }
        }
        PyObject *i64 = ck_dtype_obj(st, CUKIT_TC_I64);
        PyObject *host = i64 ? PyObject_CallMethod(arr, "astype", "O", i64) : NULL;
        PyObject *devobj = host ? PyLong_FromLong(dev->ordinal) : NULL;
        dev_arr = devobj ? (cukit_Array *)cukit_array_from_host(st, host, NULL, devobj) : NULL;
        Py_XDECREF(host);
        Py_XDECREF(devobj);
        checked = 1;
    }
    if (dev_arr == NULL)
        return -1;
    p->idx[p->nidx] = dev_arr;
    p->host_checked[p->nidx] = checked;
    p->vdim[p->nidx] = vdim;
    p->axis[p->nidx] = axis;
    p->nidx++;
    return 0;
}

/* A boolean index `src` (a cukit or numpy array, or a bool) over the dimensions of self
 * from *d_io on (view dimension *vd_io): the coordinates of its trues, one index array
 * per dimension, added to p with `:` in the basic key; a 0-d mask (True / False)
 * indexes a new axis of length 1 with [0] or []. Advances *d_io and *vd_io. 0 / -1. */
static int
add_mask(cukit_Array *self, PyObject *src, parsed_index *p, PyObject *basic, PyObject *full,
         int *d_io, int *vd_io)
{
    cukit_state *st = self->st;
    int d = *d_io, vd = *vd_io;
    cukit_Array *mask = NULL;
    if (Py_IS_TYPE(src, st->ArrayType))
        mask = (cukit_Array *)Py_NewRef(src);
    else {
        PyObject *devobj = PyLong_FromLong(self->device->ordinal);
        mask = devobj ? (cukit_Array *)cukit_array_from_host(st, src, NULL, devobj) : NULL;
        Py_XDECREF(devobj);
    }
    if (mask == NULL)
        return -1;
    int k = mask->ndim;
    if (k == 0) {
        PyObject *host = NULL;
        int truth = PyObject_IsTrue(src == (PyObject *)mask ? Py_True : src);
        if (Py_IS_TYPE(src, st->ArrayType)) {
            host = PyObject_CallMethod(src, "item", NULL);
            truth = host ? PyObject_IsTrue(host) : -1;
            Py_XDECREF(host);
        }
        Py_DECREF(mask);
        if (truth < 0)
            return -1;
        PyObject *one = PyList_New(truth ? 1 : 0);
        if (one && truth)
            PyList_SET_ITEM(one, 0, PyLong_FromLong(0));
        PyObject *arr = one ? host_index(st, one) : NULL;
        Py_XDECREF(one);
        int bad = arr == NULL || add_index(st, p, self->device, arr, vd, d, 1) < 0 ||
                  PyList_Append(basic, Py_None) < 0;
        Py_XDECREF(arr);
        if (bad)
            return -1;
        *vd_io = vd + 1;
        return 0;
    }
    for (int j = 0; j < k; j++) {
        if (mask->shape[j] != self->shape[d + j]) {
            PyErr_Format(PyExc_IndexError,
                         "boolean index did not match indexed array along axis %d; size "
                         "of axis is %zd but size of corresponding boolean axis is %zd",
                         d + j, self->shape[d + j], mask->shape[j]);
            Py_DECREF(mask);
            return -1;
        }
    }
    cukit_Array *coords = ck_mask_coords(st, mask, 1); /* (k, count) int64 */
    Py_DECREF(mask);
    if (coords == NULL)
        return -1;
    int bad = 0;
    for (int j = 0; j < k && !bad; j++) {
        Py_ssize_t one_shape = coords->shape[1], one_stride = coords->strides[1];
        cukit_Array *row = cukit_array_view_as(coords, coords->dtype, coords->typecode,
                                               coords->itemsize,
                                               coords->offset + j * coords->strides[0], 1,
                                               &one_shape, &one_stride);
        /* coordinates of a mask are in range: no check needed */
        bad = row == NULL || add_index(st, p, self->device, (PyObject *)row, vd + j,
                                       d + j, self->shape[d + j]) < 0 ||
              PyList_Append(basic, full) < 0;
        if (!bad)
            p->host_checked[p->nidx - 1] = 1;
        Py_XDECREF(row);
    }
    Py_DECREF(coords);
    if (bad)
        return -1;
    *d_io = d + k;
    *vd_io = vd + k;
    return 0;
}

/* Read `key` on `self`: the basic key for the view and the index arrays. 0 / -1. */
static int
parse_index(cukit_Array *self, PyObject *key, parsed_index *p)
{
    cukit_state *st = self->st;
    memset(p, 0, sizeof *p);
    PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (items == NULL)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int kinds[64];
    PyObject *conv[64] = {0};
    int rc = -1;
    if (n > 64) {
        PyErr_SetString(PyExc_IndexError, "too many indices for array");
        goto done;
    }
    /* what each item is, and how many of self's dimensions the items take */
    int consumed = 0, ellipsis = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PyTuple_GET_ITEM(items, i);
        if ((kinds[i] = item_kind(st, it, &conv[i])) < 0)
            goto done;
        if (kinds[i] == IT_ELLIPSIS) {
            if (ellipsis >= 0) {
                PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
                goto done;
            }
            ellipsis = (int)i;
        }
        else if (kinds[i] == IT_BOOLS) {
            PyObject *src = conv[i] ? conv[i] : it;
            int nd = 0;
            if (Py_IS_TYPE(src, st->ArrayType))
                nd = ((cukit_Array *)src)->ndim;
            else {
                PyObject *shape = PyObject_GetAttrString(src, "shape"); /* numpy's */
                nd = shape ? (int)PyObject_Length(shape) : -1;
                Py_XDECREF(shape);
                if (nd < 0)
                    goto done;
            }
            consumed += nd;
        }
        else if (kinds[i] != IT_NONE)
            consumed++;
    }
    if (consumed > self->ndim) {
        PyErr_Format(PyExc_IndexError,
                     "too many indices for array: array is %d-dimensional, but %d were indexed",
                     self->ndim, consumed);
        goto done;
    }
    /* the basic key: each index array replaced by `:` over the dimension it indexes */
    PyObject *basic = PyList_New(0);
    if (basic == NULL)
        goto done;
    p->basic = basic; /* a list for now; a tuple below */
    PyObject *full = PySlice_New(NULL, NULL, NULL);
    if (full == NULL)
        goto done;
    int d = 0, vd = 0, first_item = -1, last_item = -1, breaks = 0;
    for (Py_ssize_t i = 0; i < n && rc == -1; i++) {
        PyObject *it = PyTuple_GET_ITEM(items, i), *src = conv[i] ? conv[i] : it;
        int kind = kinds[i], advanced = kind == IT_INTS || kind == IT_BOOLS || kind == IT_BASIC_INT;
        if (advanced) {
            if (first_item < 0) {
                first_item = (int)i;
                p->first = vd;
            }
            else if (last_item < (int)i - 1)
                breaks = 1;
            last_item = (int)i;
        }
        switch (kind) {
        case IT_ELLIPSIS: {
            int k = self->ndim - consumed;
            d += k;
            vd += k;
            if (PyList_Append(basic, it) < 0)
                goto loop_fail;
            break;
        }
        case IT_NONE:
            vd++;
            if (PyList_Append(basic, it) < 0)
                goto loop_fail;
            break;
        case IT_SLICE:
            d++;
            vd++;
            if (PyList_Append(basic, it) < 0)
                goto loop_fail;
            break;
        case IT_BASIC_INT:
            d++;
            if (PyList_Append(basic, it) < 0)
                goto loop_fail;
            break;
        case IT_INTS:
            if (add_index(st, p, self->device, src, vd, d, self->shape[d]) < 0 ||
                PyList_Append(basic, full) < 0)
                goto loop_fail;
            d++;
            vd++;
            break;
        case IT_BOOLS:
            if (add_mask(self, src, p, basic, full, &d, &vd) < 0)
                goto loop_fail;
            break;
        }
        continue;
    loop_fail:
        Py_DECREF(full);
        goto done;
    }
    Py_DECREF(full);
    p->adjacent = !breaks;
    Py_SETREF(p->basic, PyList_AsTuple(basic));
    rc = p->basic ? 0 : -1;
done:
    for (Py_ssize_t i = 0; i < n && i < 64; i++)
        Py_XDECREF(conv[i]);
    Py_DECREF(items);
    if (rc < 0)
        parsed_clear(p);
    return rc;
}

/* The result's shape and the kernel's parameters for view v (the basic part of the
 * index applied) and the parsed index arrays. 0 / -1 (numpy's broadcast error). */
static int
plan(cukit_state *st, cukit_Array *v, parsed_index *p, index_params *k, int *ndim,
     Py_ssize_t *shape)
{
    int bnd;
    Py_ssize_t bshape[CUKIT_MAXDIM];
    if (ck_broadcast(p->idx, p->nidx, &bnd, bshape) < 0) {
        if (PyErr_ExceptionMatches(PyExc_ValueError))
            PyErr_SetString(PyExc_IndexError,
                            "shape mismatch: indexing arrays could not be broadcast together");
        return -1;
    }
    int is_adv[CUKIT_MAXDIM] = {0};
    for (int j = 0; j < p->nidx; j++)
        is_adv[p->vdim[j]] = 1;
    int rest = 0;
    for (int i = 0; i < v->ndim; i++)
        rest += !is_adv[i];
    if (rest + bnd > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_IndexError, "the result would have more than %d dimensions",
                     CUKIT_MAXDIM);
        return -1;
    }
    int at = p->adjacent ? p->first : 0; /* where the broadcast dimensions go */
    memset(k, 0, sizeof *k);
    /* the view's dimensions not indexed, with the broadcast block after the first `at`
     * of them */
    int o = 0, b0 = -1, placed = 0;
    for (int i = 0; i <= v->ndim; i++) {
        if (placed == at && b0 < 0) {
            b0 = o;
            for (int b = 0; b < bnd; b++)
                shape[o++] = bshape[b];
        }
        if (i == v->ndim)
            break;
        if (is_adv[i])
            continue;
        shape[o] = v->shape[i];
        k->bstride[o++] = v->strides[i];
        placed++;
    }
    *ndim = o;
    k->ndim = o;
    k->nidx = p->nidx;
    k->total = 1;
    for (int d = 0; d < o; d++) {
        k->shape[d] = shape[d];
        k->total *= shape[d];
    }
    for (int j = 0; j < p->nidx; j++) {
        cukit_Array *a = p->idx[j];
        int off = bnd - a->ndim; /* right-aligned broadcast */
        for (int d = 0; d < a->ndim; d++)
            k->istride[j][b0 + off + d] = a->shape[d] == 1 ? 0 : a->strides[d] / 8;
        k->idx[j] = cukit_array_ptr(a);
        k->len[j] = v->shape[p->vdim[j]];
        k->astride[j] = v->strides[p->vdim[j]];
    }
    return 0;
}

/* self indexed by the basic key: self itself when the key is only `:` over every
 * dimension (a[idx], a[rows, cols]: no view to make on the hot path), else the view
 * basic indexing gives. New ref or NULL. */
static cukit_Array *
basic_view(cukit_Array *self, PyObject *basic)
{
    Py_ssize_t n = PyTuple_GET_SIZE(basic);
    int whole = n == self->ndim;
    for (Py_ssize_t i = 0; whole && i < n; i++) {
        PyObject *it = PyTuple_GET_ITEM(basic, i);
        whole = PySlice_Check(it) && ((PySliceObject *)it)->start == Py_None &&
                ((PySliceObject *)it)->stop == Py_None && ((PySliceObject *)it)->step == Py_None;
    }
    if (whole)
        return (cukit_Array *)Py_NewRef((PyObject *)self);
    return (cukit_Array *)PyObject_GetItem((PyObject *)self, basic);
}

/* Gather (gather 1) or scatter kernel of index.cu for elements of itemsize bytes on dev
 * (made current). 0 / -1. */
static int
index_function(cukit_state *st, cukit_Device *dev, int gather, Py_ssize_t itemsize, CUfunction *f)
{
    static const char *const names[2][5] = {
        {"ck_gather_1", "ck_gather_2", "ck_gather_4", "ck_gather_8", "ck_gather_16"},
        {"ck_scatter_1", "ck_scatter_2", "ck_scatter_4", "ck_scatter_8", "ck_scatter_16"}};
    int u = itemsize == 1 ? 0 : itemsize == 2 ? 1 : itemsize == 4 ? 2 : itemsize == 8 ? 3 : 4;
    int g = gather ? 0 : 1;
    cukit_compute_state *cs = st->compute;
    if (cs->index_dev != (void *)dev) {
        memset(cs->index_funcs, 0, sizeof cs->index_funcs);
        cs->index_dev = dev;
    }
    if (cs->index_funcs[g][u] != NULL) {
        *f = cs->index_funcs[g][u];
        return cukit_device_activate(dev);
    }
    /* a first load may compile without the GIL, and another thread switch the cache to
     * another device meanwhile: store only into dev's */
    if (cukit_builtin_kernel_file(dev, &cs->index_modules, "#define MAXD 32\n#define MAXI 8\n",
                                  "compute/index/kernels/index.cu", names[g][u], f) < 0)
        return -1;
    if (cs->index_dev == (void *)dev)
        cs->index_funcs[g][u] = *f;
    return 0;
}

/* Launch the gather (gather 1) or scatter of index.cu with k on stream h. An index
 * array not checked on the host is checked by the kernel, which notes the first value
 * out of range in the device's record (runtime/report.c) for the next synchronizing
 * point to raise: the host does not wait. 0 / -1. */
static int
run_index(cukit_state *st, cukit_Device *dev, int gather, Py_ssize_t itemsize, index_params *k,
          parsed_index *p, CUstream h)
{
    int need_check = 0;
    for (int j = 0; j < p->nidx; j++) {
        need_check |= !p->host_checked[j];
        k->axis[j] = p->axis[j];
    }
    if (k->total == 0)
        return 0;
    k->err = 0;
    CUfunction f;
    if ((need_check && cukit_report_device_ptr(dev, &k->err) < 0) ||
        index_function(st, dev, gather, itemsize, &f) < 0)
        return -1;
    long long blocks = (k->total + CK_THREADS - 1) / CK_THREADS;
    if (blocks > 65535LL * 8)
        blocks = 65535LL * 8;
    void *args[] = {k};
    return cukit_builtin_launch_here(st, f, (unsigned)blocks, 1, 1, CK_THREADS, 1, h, args);
}

/* The units an element of itemsize bytes moves as (1, 2, 4, 8 or 16 bytes), or 0. */
static int
unit_ok(Py_ssize_t itemsize)
{
    return itemsize == 1 || itemsize == 2 || itemsize == 4 || itemsize == 8 || itemsize == 16;
}

PyObject *
ck_index_get(cukit_state *st, PyObject *self_obj, PyObject *key)
{
    cukit_Array *self = (cukit_Array *)self_obj;
    if (cukit_numpy(st) < 0)
        return NULL;
    /* a whole-array mask: compaction in one pass */
    if (Py_IS_TYPE(key, st->ArrayType) && ((cukit_Array *)key)->typecode == CUKIT_TC_BOOL &&
        ((cukit_Array *)key)->ndim == self->ndim && self->ndim > 0 &&
        memcmp(((cukit_Array *)key)->shape, self->shape, sizeof(Py_ssize_t) * self->ndim) == 0 &&
        unit_ok(self->itemsize))
        return (PyObject *)ck_mask_select(st, self, (cukit_Array *)key);
    parsed_index p;
    if (parse_index(self, key, &p) < 0)
        return NULL;
    PyObject *out = NULL;
    cukit_Array *v = basic_view(self, p.basic);
    index_params k;
    int ndim;
    Py_ssize_t shape[CUKIT_MAXDIM];
    if (v == NULL || plan(st, v, &p, &k, &ndim, shape) < 0)
        goto done;
    if (!unit_ok(v->itemsize)) {
        PyErr_Format(PyExc_TypeError, "cukit indexes elements of 1, 2, 4, 8 or 16 bytes; %s "
                     "has %zd", Py_TYPE(v->dtype)->tp_name, v->itemsize);
        goto done;
    }
    CUstream h;
    cukit_Array *r = ck_stream(st, Py_None, v->device, NULL, &h) < 0
                         ? NULL
                         : cukit_array_new(st, v->device, v->dtype, v->typecode, v->itemsize, ndim,
                                           shape);
    if (r == NULL)
        goto done;
    k.base = cukit_array_ptr(v);
    k.other = cukit_array_ptr(r);
    if (run_index(st, v->device, 1, v->itemsize, &k, &p, h) < 0)
        Py_DECREF(r);
    else
        out = (PyObject *)r;
done:
    Py_XDECREF(v);
    parsed_clear(&p);
    return out;
}

/* value as an array of a's dtype on a's device (a new array when it is not one). */
static cukit_Array *
value_array(cukit_state *st, cukit_Array *a, PyObject *value)
{
    if (Py_IS_TYPE(value, st->ArrayType)) {
        cukit_Array *v = (cukit_Array *)value;
        if (v->device != a->device) {
            PyErr_SetString(PyExc_ValueError,
                            "the values are on another device than the array: move them with .to()");
            return NULL;
        }
        if (v->typecode == a->typecode)
            return (cukit_Array *)Py_NewRef(value);
        return (cukit_Array *)ck_astype(st, v, a->typecode, Py_None);
    }
    PyObject *host = PyObject_CallFunctionObjArgs(st->np_asarray, value, a->dtype, NULL);
    PyObject *devobj = host ? PyLong_FromLong(a->device->ordinal) : NULL;
    cukit_Array *v = devobj ? (cukit_Array *)cukit_array_from_host(st, host, NULL, devobj) : NULL;
    Py_XDECREF(host);
    Py_XDECREF(devobj);
    return v;
}

int
ck_index_set(cukit_state *st, PyObject *self_obj, PyObject *key, PyObject *value)
{
    cukit_Array *self = (cukit_Array *)self_obj;
    if (cukit_numpy(st) < 0)
        return -1;
    if (self->flags & CUKIT_ARRAY_READONLY) {
        PyErr_SetString(PyExc_ValueError, "a[index] = x: the array is read-only (its producer "
                        "marked the memory read-only); copy it first");
        return -1;
    }
    /* a whole-array mask and one value: a masked fill, queued without a wait */
    cukit_Array *km = (cukit_Array *)key;
    if (Py_IS_TYPE(key, st->ArrayType) && km->typecode == CUKIT_TC_BOOL &&
        km->ndim == self->ndim && self->ndim > 0 &&
        memcmp(km->shape, self->shape, sizeof(Py_ssize_t) * self->ndim) == 0 &&
        unit_ok(self->itemsize) && (self->flags & CUKIT_ARRAY_C_CONTIG)) {
        int done_fill = 0, frc = -1;
        if (Py_IS_TYPE(value, st->ArrayType)) {
            if (((cukit_Array *)value)->size == 1) {
                cukit_Array *one = value_array(st, self, value);
                frc = one ? ck_mask_fill(st, self, km, one, NULL) : -1;
                Py_XDECREF(one);
                done_fill = 1;
            }
        }
        else {
            /* a host value: its bits as numpy casts it, passed with the launch */
            PyObject *hv = PyObject_CallFunctionObjArgs(st->np_asarray, value, self->dtype, NULL);
            PyObject *raw = hv ? PyObject_CallMethod(hv, "tobytes", NULL) : NULL;
            Py_XDECREF(hv);
            if (raw == NULL)
                return -1;
            if (PyBytes_GET_SIZE(raw) == self->itemsize) {
                frc = ck_mask_fill(st, self, km, NULL, PyBytes_AS_STRING(raw));
                done_fill = 1;
            }
            Py_DECREF(raw);
        }
        if (done_fill)
            return frc;
    }
    cukit_Array *val = value_array(st, self, value);
    if (val == NULL)
        return -1;
    int rc = -1;
    parsed_index p;
    if (parse_index(self, key, &p) < 0) {
        Py_DECREF(val);
        return -1;
    }
    cukit_Array *v = basic_view(self, p.basic);
    index_params k;
    int ndim;
    Py_ssize_t shape[CUKIT_MAXDIM];
    if (v == NULL || plan(st, v, &p, &k, &ndim, shape) < 0)
        goto done;
    if (!unit_ok(v->itemsize)) {
        PyErr_Format(PyExc_TypeError, "cukit indexes elements of 1, 2, 4, 8 or 16 bytes; this "
                     "dtype has %zd", v->itemsize);
        goto done;
    }
    /* the values broadcast to the result's shape, right-aligned */
    if (val->ndim > ndim)
        goto mismatch;
    for (int d = 0; d < val->ndim; d++) {
        int o = ndim - val->ndim + d;
        if (val->shape[d] != 1 && val->shape[d] != shape[o])
            goto mismatch;
        k.vstride[o] = val->shape[d] == 1 ? 0 : val->strides[d];
    }
    CUstream h;
    if (ck_stream(st, Py_None, v->device, NULL, &h) < 0)
        goto done;
    k.base = cukit_array_ptr(v);
    k.other = cukit_array_ptr(val);
    rc = run_index(st, v->device, 0, v->itemsize, &k, &p, h);
    goto done;
mismatch: {
    PyObject *vs = cukit_array_shape(val), *rs = PyTuple_New(ndim);
    for (int d = 0; rs && d < ndim; d++)
        PyTuple_SET_ITEM(rs, d, PyLong_FromSsize_t(shape[d]));
    if (vs && rs)
        PyErr_Format(PyExc_ValueError,
                     "shape mismatch: value array of shape %R could not be broadcast to indexing "
                     "result of shape %R", vs, rs);
    Py_XDECREF(vs);
    Py_XDECREF(rs);
}
done:
    Py_XDECREF(v);
    Py_DECREF(val);
    parsed_clear(&p);
    return rc;
}

/* ------------------------------------------------------------------ along an axis */

PyObject *
ck_along_axis(cukit_state *st, PyObject *arr_obj, PyObject *indices, int axis, PyObject *values)
{
    if (!Py_IS_TYPE(arr_obj, st->ArrayType)) {
        PyErr_Format(PyExc_TypeError, "take_along_axis takes a cukit array, not %s: move host "
                     "data to the device with cukit.asarray()", Py_TYPE(arr_obj)->tp_name);
        return NULL;
    }
    cukit_Array *a = (cukit_Array *)arr_obj;
    if (cukit_numpy(st) < 0)
        return NULL;
    if (axis < 0 || axis >= a->ndim) {
        PyErr_Format(PyExc_ValueError, "axis %d is out of bounds for an array of %d dimensions",
                     axis, a->ndim);
        return NULL;
    }
    parsed_index p;
    memset(&p, 0, sizeof p);
    PyObject *out = NULL;
    cukit_Array *val = NULL;
    if (add_index(st, &p, a->device, indices, axis, axis, a->shape[axis]) < 0)
        return NULL;
    cukit_Array *ix = p.idx[0];
    index_params k;
    memset(&k, 0, sizeof k);
    Py_ssize_t shape[CUKIT_MAXDIM];
    if (ix->ndim != a->ndim) {
        PyErr_SetString(PyExc_ValueError,
                        "`indices` and `arr` must have the same number of dimensions");
        goto done;
    }
    /* the result: the indices' shape, broadcast with arr's off the axis; each element
     * is arr at its own coordinates, but along the axis at the index there */
    k.ndim = a->ndim;
    k.nidx = 1;
    k.total = 1;
    for (int d = 0; d < a->ndim; d++) {
        Py_ssize_t n = ix->shape[d], m = d == axis ? n : a->shape[d];
        if (d != axis && n != m && n != 1 && m != 1) {
            PyErr_Format(PyExc_ValueError, "shape mismatch: indices of shape %zd and arr of "
                         "shape %zd along dimension %d cannot be broadcast", n, m, d);
            goto done;
        }
        shape[d] = n == 1 ? m : n;
        k.shape[d] = shape[d];
        k.total *= shape[d];
        k.bstride[d] = d == axis || a->shape[d] == 1 ? 0 : a->strides[d];
        k.istride[0][d] = ix->shape[d] == 1 ? 0 : ix->strides[d] / 8;
    }
    k.idx[0] = cukit_array_ptr(ix);
    k.len[0] = a->shape[axis];
    k.astride[0] = a->strides[axis];
    if (!unit_ok(a->itemsize)) {
        PyErr_Format(PyExc_TypeError, "cukit indexes elements of 1, 2, 4, 8 or 16 bytes; this "
                     "dtype has %zd", a->itemsize);
        goto done;
    }
    CUstream h;
    if (ck_stream(st, Py_None, a->device, NULL, &h) < 0)
        goto done;
    k.base = cukit_array_ptr(a);
    if (values == NULL) {
        cukit_Array *r = cukit_array_new(st, a->device, a->dtype, a->typecode, a->itemsize,
                                         a->ndim, shape);
        if (r == NULL)
            goto done;
        k.other = cukit_array_ptr(r);
        if (run_index(st, a->device, 1, a->itemsize, &k, &p, h) < 0)
            Py_DECREF(r);
        else
            out = (PyObject *)r;
        goto done;
    }
    if (a->flags & CUKIT_ARRAY_READONLY) {
        PyErr_SetString(PyExc_ValueError, "put_along_axis: the array is read-only; copy it first");
        goto done;
    }
    if ((val = value_array(st, a, values)) == NULL)
        goto done;
    if (val->ndim > a->ndim) {
        PyErr_SetString(PyExc_ValueError, "put_along_axis: the values have more dimensions "
                        "than the indices");
        goto done;
    }
    for (int d = 0; d < val->ndim; d++) {
        int o = a->ndim - val->ndim + d;
        if (val->shape[d] != 1 && val->shape[d] != shape[o]) {
            PyErr_SetString(PyExc_ValueError, "put_along_axis: the values cannot be broadcast "
                            "to the indices' shape");
            goto done;
        }
        k.vstride[o] = val->shape[d] == 1 ? 0 : val->strides[d];
    }
    k.other = cukit_array_ptr(val);
    if (run_index(st, a->device, 0, a->itemsize, &k, &p, h) == 0)
        out = Py_NewRef(Py_None);
done:
    Py_XDECREF(val);
    parsed_clear(&p);
    return out;
}
