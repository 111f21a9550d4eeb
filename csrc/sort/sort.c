/* sort.c - cukit.sort, argsort and searchsorted: radix.c's radix sort, a stable merge sort for short rows, numpy's order (NaNs last) */
#include "sort/sort.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ the kernels
 *
 * kernels/sort.cu, with the element type's #defines in front (the file says what each
 * means): the element and its bits' unsigned type, bytes, sign bit, float exponent
 * mask, how two compare (KLT), and the radix pass's keys a thread. */
#define INT_KEY(tc, t, u, bytes, sign) {tc, t, u, bytes, sign, 0, "0", 0}
#define FLOAT_KEY(tc, t, u, bytes, sign, exp, lt) {tc, t, u, bytes, sign, 1, exp, lt}
static const struct {
    int tc;
    const char *t, *u; /* SORT_T, SORT_U */
    int bytes;
    const char *sign;
    int kfloat;
    const char *exp;
    int lt;
} sort_types[] = {
    INT_KEY(CUKIT_TC_BOOL, "unsigned char", "unsigned char", 1, "0"),
    INT_KEY(CUKIT_TC_I8, "signed char", "unsigned char", 1, "0x80"),
    INT_KEY(CUKIT_TC_U8, "unsigned char", "unsigned char", 1, "0"),
    INT_KEY(CUKIT_TC_I16, "short", "unsigned short", 2, "0x8000"),
    INT_KEY(CUKIT_TC_U16, "unsigned short", "unsigned short", 2, "0"),
    INT_KEY(CUKIT_TC_I32, "int", "unsigned int", 4, "0x80000000u"),
    INT_KEY(CUKIT_TC_U32, "unsigned int", "unsigned int", 4, "0u"),
    INT_KEY(CUKIT_TC_I64, "long long", "unsigned long long", 8, "0x8000000000000000ull"),
    INT_KEY(CUKIT_TC_U64, "unsigned long long", "unsigned long long", 8, "0ull"),
    FLOAT_KEY(CUKIT_TC_F32, "float", "unsigned int", 4, "0x80000000u", "0x7f800000u", 1),
    FLOAT_KEY(CUKIT_TC_F64, "double", "unsigned long long", 8, "0x8000000000000000ull",
              "0x7ff0000000000000ull", 2),
    FLOAT_KEY(CUKIT_TC_F16, "unsigned short", "unsigned short", 2, "0x8000", "0x7c00", 3),
    FLOAT_KEY(CUKIT_TC_BF16, "unsigned short", "unsigned short", 2, "0x8000", "0x7f80", 4),
};

/* The row of sort_types for typecode tc, or -1 (the type does not sort). */
static int
sort_type(int tc)
{
    for (int i = 0; i < (int)(sizeof sort_types / sizeof *sort_types); i++)
        if (sort_types[i].tc == tc)
            return i;
    return -1;
}

/* The #defines kernels/sort.cu reads for typecode tc (one cukit_sort_arg took). New ref
 * or NULL. */
static PyObject *
sort_defines(int tc)
{
    int i = sort_type(tc);
    return PyUnicode_FromFormat(
                "#define SORT_T %s\n#define SORT_U %s\n#define KBYTES %d\n#define KSIGN %s\n"
                "#define KFLOAT %d\n#define KEXP %s\n#define KLT %d\n#define RITEMS %d\n",
                sort_types[i].t, sort_types[i].u, sort_types[i].bytes, sort_types[i].sign,
                sort_types[i].kfloat, sort_types[i].exp, sort_types[i].lt,
                sort_types[i].bytes == 8 ? CUKIT_RADIX_ITEMS8 : CUKIT_RADIX_ITEMS);
}

/* Each kernel of sort.cu: its group and where cukit_sort_kernel_set keeps it. */
#define SK(name, group, field) {name, group, offsetof(cukit_sort_kernel_set, field)}
static const struct {
    const char *name;
    int group;
    size_t off;
} sort_kernels[] = {
    SK("cukit_tile_sort", CUKIT_SORT_MERGE, tile),
    SK("cukit_merge", CUKIT_SORT_MERGE, merge),
    SK("cukit_search", CUKIT_SORT_SEARCH, search),
    SK("cukit_unique_flags", CUKIT_SORT_UNIQUE, flags),
    SK("cukit_unique_scatter", CUKIT_SORT_UNIQUE, scatter),
    SK("cukit_unique_counts", CUKIT_SORT_UNIQUE, counts),
    SK("cukit_radix_hist", CUKIT_SORT_RADIX, hist),
    SK("cukit_radix_pass", CUKIT_SORT_RADIX, pass),
};
#define SORT_KERNELS ((int)(sizeof sort_kernels / sizeof *sort_kernels))

static CUfunction *
kernel_slot(cukit_sort_kernel_set *k, int i)
{
    return (CUfunction *)(void *)((char *)k + sort_kernels[i].off);
}

/* The kernels of a group for (dev, tc), compiled through cukit_compile_load at first use
 * (sort.cu for the group's kernels only: CUKIT_WANT) and kept in the module's
 * _sort_kernels dict: (ordinal * 64 + tc) * CUKIT_SORT_GROUPS + group -> (Module,
 * the group's addresses in sort_kernels' order). */
int
cukit_sort_kernels(cukit_state *st, PyObject *module, cukit_Device *dev, int tc, int group,
                   cukit_sort_kernel_set *k)
{
    int rc = -1;
    PyObject *source = NULL, *defines = NULL, *options = NULL, *mod = NULL, *entry = NULL;
    memset(k, 0, sizeof *k);
    k->rtile = cukit_radix_tile(ck_dtypes[tc].size);
    PyObject *cache = PyObject_GetAttrString(module, "_sort_kernels");
    PyObject *key = cache ? PyLong_FromLongLong(((long long)dev->ordinal * 64 + tc) * CUKIT_SORT_GROUPS +
                                                group)
                          : NULL;
    if (key == NULL)
        goto done;
    PyObject *hit = PyDict_GetItemWithError(cache, key);
    if (hit) {
        for (int i = 0, j = 1; i < SORT_KERNELS; i++)
            if (sort_kernels[i].group == group)
                *kernel_slot(k, i) = (CUfunction)PyLong_AsVoidPtr(PyTuple_GET_ITEM(hit, j++));
        rc = 0;
        goto done;
    }
    if (PyErr_Occurred())
        goto done;
    const char *body = cukit_device_file("sort/kernels/sort.cu");
    defines = body ? sort_defines(tc) : NULL;
    /* the group's kernels only: see compile/kernels/one_kernel.cuh */
    for (int i = 0; defines && i < SORT_KERNELS; i++)
        if (sort_kernels[i].group == group)
            Py_SETREF(defines, PyUnicode_FromFormat("%U#define CUKIT_KERNEL_%s 1\n", defines,
                                                    sort_kernels[i].name));
    source = defines ? PyUnicode_FromFormat("#define CUKIT_ONE_KERNEL 1\n%U%s", defines, body)
                     : NULL;
    options = source ? PyList_New(0) : NULL;
    mod = options ? cukit_compile_load(st, source, "cukit_sort.cu", options, dev) : NULL;
    if (mod == NULL || cukit_device_activate(dev) < 0)
        goto done;
    CUmodule h = ((cukit_Module *)mod)->handle;
    entry = PyList_New(0);
    if (entry == NULL || PyList_Append(entry, mod) < 0)
        goto done;
    for (int i = 0; i < SORT_KERNELS; i++) {
        if (sort_kernels[i].group != group)
            continue;
        CUfunction *f = kernel_slot(k, i);
        if (CU_CALL(st, cuModuleGetFunction, (f, h, sort_kernels[i].name)) < 0)
            goto done;
        PyObject *addr = PyLong_FromVoidPtr((void *)*f);
        if (addr == NULL || PyList_Append(entry, addr) < 0) {
            Py_XDECREF(addr);
            goto done;
        }
        Py_DECREF(addr);
    }
    Py_SETREF(entry, PyList_AsTuple(entry));
    if (entry && PyDict_SetItem(cache, key, entry) == 0)
        rc = 0;
done:
    Py_XDECREF(cache);
    Py_XDECREF(key);
    Py_XDECREF(source);
    Py_XDECREF(defines);
    Py_XDECREF(options);
    Py_XDECREF(mod);
    Py_XDECREF(entry);
    return rc;
}

int
cukit_sort_launch(cukit_state *st, CUfunction f, long long blocks, CUstream h, void **params)
{
    if (blocks > 0x7fffffffLL) {
        PyErr_SetString(PyExc_ValueError, "sort: the array is too large for one grid");
        return -1;
    }
    return cukit_builtin_launch_here(st, f, (unsigned)blocks, 1, 1, 256, 1, h, params);
}

/* ------------------------------------------------------------------ sort and argsort */

/* The checked array argument `obj` of `who`. Borrowed or NULL. */
cukit_Array *
cukit_sort_arg(cukit_state *st, PyObject *obj, const char *who)
{
    if (!Py_IS_TYPE(obj, st->ArrayType)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a cukit.Array, got %.100s; pass "
                     "cukit.to_device(x)", who, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    cukit_Array *a = (cukit_Array *)obj;
    if (!cukit_array_live(a)) {
        cukit_freed_error();
        return NULL;
    }
    if (sort_type(a->typecode) < 0) {
        PyErr_Format(PyExc_TypeError, "%s: dtype %S cannot be sorted (cukit sorts bool, the "
                     "integer dtypes, float16, bfloat16, float32 and float64)", who, a->dtype);
        return NULL;
    }
    return a;
}

/* A C-contiguous copy of a with dimension `axis` moved last (a itself as a new ref
 * when it is already so), queued on h. New ref or NULL. */
static cukit_Array *
axis_last(cukit_state *st, cukit_Array *a, int axis, CUstream h)
{
    if (axis == a->ndim - 1 && (a->flags & CUKIT_ARRAY_C_CONTIG))
        return (cukit_Array *)Py_NewRef(a);
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    int o = 0;
    for (int d = 0; d < a->ndim; d++)
        if (d != axis) {
            shape[o] = a->shape[d];
            strides[o++] = a->strides[d];
        }
    shape[o] = a->shape[axis];
    strides[o] = a->strides[axis];
    cukit_Array *c = cukit_array_new(st, a->device, a->dtype, a->typecode, a->itemsize, a->ndim,
                                     shape);
    if (c && cukit_strided_copy(a->device, cukit_array_ptr(c), c->strides, cukit_array_ptr(a),
                                strides, a->ndim, shape, a->itemsize, h) < 0)
        Py_CLEAR(c);
    return c;
}

/* res (axis last, C order) back to a's dimension order as a new C-contiguous array
 * (res itself when axis is last). Steals res. New ref or NULL. */
static cukit_Array *
axis_back(cukit_state *st, cukit_Array *res, int axis, CUstream h)
{
    int nd = res->ndim;
    if (axis == nd - 1)
        return res;
    Py_ssize_t shape[CUKIT_MAXDIM], strides[CUKIT_MAXDIM];
    for (int d = 0, o = 0; d < nd; d++) {
        int from = d == axis ? nd - 1 : o++;
        shape[d] = res->shape[from];
        strides[d] = res->strides[from];
    }
    cukit_Array *c = cukit_array_new(st, res->device, res->dtype, res->typecode, res->itemsize,
                                     nd, shape);
    if (c && cukit_strided_copy(res->device, cukit_array_ptr(c), c->strides, cukit_array_ptr(res),
                                strides, nd, shape, res->itemsize, h) < 0)
        Py_CLEAR(c);
    Py_DECREF(res);
    return c;
}

int
cukit_sort_rows(cukit_state *st, PyObject *module, cukit_Array *src, int want_index, CUstream h,
                PyObject *stream, cukit_Array **vals, cukit_Array **idx)
{
    cukit_Array *buf[2] = {NULL, NULL}, *ibuf[2] = {NULL, NULL};
    int rc = -1;
    long long n = src->size, L = src->ndim ? src->shape[src->ndim - 1] : 1;
    buf[0] = cukit_array_new(st, src->device, src->dtype, src->typecode, src->itemsize, src->ndim,
                             src->shape);
    buf[1] = buf[0] ? cukit_array_new(st, src->device, src->dtype, src->typecode, src->itemsize,
                                      src->ndim, src->shape) : NULL;
    if (buf[1] == NULL)
        goto done;
    if (want_index) {
        PyObject *i64 = ck_dtype_obj(st, CUKIT_TC_I64);
        for (int i = 0; i < 2; i++)
            if (i64 == NULL || (ibuf[i] = cukit_array_new(st, src->device, i64, CUKIT_TC_I64, 8,
                                                          src->ndim, src->shape)) == NULL)
                goto done;
    }
    int cur = 0, radix = 0;
    /* a graph captured from `stream` keeps what its work uses (the buffer not returned too) */
    for (int i = 0; i < 2; i++)
        if (cukit_capture_keep(st, stream, (PyObject *)buf[i]) < 0 ||
            (ibuf[i] && cukit_capture_keep(st, stream, (PyObject *)ibuf[i]) < 0))
            goto done;
    if (n > 0) {
        cukit_sort_kernel_set k;
        radix = cukit_radix_wanted(L, cukit_radix_tile(ck_dtypes[src->typecode].size));
        if (cukit_sort_kernels(st, module, src->device, src->typecode,
                               radix ? CUKIT_SORT_RADIX : CUKIT_SORT_MERGE, &k) < 0 ||
            cukit_device_activate(src->device) < 0)
            goto done;
        if (radix) {
            if (cukit_radix_rows(st, &k, src, want_index, vals != NULL, h, stream, buf, ibuf,
                                 &cur) < 0)
                goto done;
            goto sorted;
        }
        long long tiles = (L + 255) / 256, w = 256;
        CUdeviceptr in = cukit_array_ptr(src), out = cukit_array_ptr(buf[0]);
        CUdeviceptr iin = 0, iout = want_index ? cukit_array_ptr(ibuf[0]) : 0;
        void *p1[] = {&in, &out, &iout, &L, &tiles, &want_index};
        if (cukit_sort_launch(st, k.tile, (n / L) * tiles, h, p1) < 0)
            goto done;
        for (; w < L; w *= 2, cur ^= 1) {
            in = cukit_array_ptr(buf[cur]);
            out = cukit_array_ptr(buf[cur ^ 1]);
            iin = want_index ? cukit_array_ptr(ibuf[cur]) : 0;
            iout = want_index ? cukit_array_ptr(ibuf[cur ^ 1]) : 0;
            void *p2[] = {&in, &out, &iin, &iout, &n, &L, &w, &want_index};
            if (cukit_sort_launch(st, k.merge, (n + 255) / 256, h, p2) < 0)
                goto done;
        }
    }
sorted:
    /* the radix sort leaves the keys in buf[cur] and argsort's indices in ibuf[0] */
    if (vals)
        *vals = (cukit_Array *)Py_NewRef(buf[cur]);
    *idx = want_index ? (cukit_Array *)Py_NewRef(ibuf[radix ? 0 : cur]) : NULL;
    rc = 0;
done:
    for (int i = 0; i < 2; i++) {
        Py_XDECREF(buf[i]);
        Py_XDECREF(ibuf[i]);
    }
    return rc;
}

/* sort (want_index 0) or argsort (1) of `obj` along axis (None: flattened). New ref. */
static PyObject *
sort_impl(PyObject *module, PyObject *obj, PyObject *axis_obj, PyObject *kind, PyObject *stream,
          int want_index)
{
    cukit_state *st = PyModule_GetState(module);
    const char *who = want_index ? "cukit.argsort()" : "cukit.sort()";
    cukit_Array *a = cukit_sort_arg(st, obj, who);
    if (a == NULL)
        return NULL;
    if (kind != Py_None && !(PyUnicode_Check(kind) &&
                             (PyUnicode_CompareWithASCIIString(kind, "stable") == 0 ||
                              PyUnicode_CompareWithASCIIString(kind, "mergesort") == 0 ||
                              PyUnicode_CompareWithASCIIString(kind, "quicksort") == 0 ||
                              PyUnicode_CompareWithASCIIString(kind, "heapsort") == 0)))
        return PyErr_Format(PyExc_ValueError, "%s: kind must be None, 'stable', 'mergesort', "
                            "'quicksort' or 'heapsort' (each sorts stably here), not %R", who, kind);
    CUstream h;
    if (ck_stream(st, stream, a->device, (PyObject *)a, &h) < 0)
        return NULL;
    PyObject *result = NULL;
    cukit_Array *src = NULL, *buf[2] = {NULL, NULL}, *ibuf[2] = {NULL, NULL};
    /* buf[0], ibuf[0]: the sorted values and indices; [1] unused here */
    int axis;
    if (axis_obj == Py_None) {
        /* flattened, in C order */
        Py_ssize_t n = a->size;
        src = a->ndim ? axis_last(st, a, a->ndim - 1, h) : (cukit_Array *)Py_NewRef(a);
        if (src == NULL)
            goto done;
        if (src->ndim != 1) { /* C order: one run of n elements */
            cukit_Array *flat = cukit_array_view_as(src, src->dtype, src->typecode, src->itemsize,
                                                    src->offset, 1, &n, &src->itemsize);
            Py_SETREF(src, flat);
            if (src == NULL)
                goto done;
        }
        axis = 0;
    }
    else {
        if (a->ndim == 0)
            return PyErr_Format(PyExc_ValueError, "%s: a 0-d array has no axis to sort along "
                                "(pass axis=None)", who);
        long ax = PyLong_AsLong(axis_obj);
        if (ax == -1 && PyErr_Occurred())
            return NULL;
        if (ax < -a->ndim || ax >= a->ndim)
            return PyErr_Format(PyExc_ValueError, "%s: axis %ld is out of bounds for an array "
                                "of %d dimensions", who, ax, a->ndim);
        axis = (int)(ax < 0 ? ax + a->ndim : ax);
        src = axis_last(st, a, axis, h);
        if (src == NULL)
            goto done;
    }
    if (cukit_capture_keep(st, stream, (PyObject *)src) < 0 ||
        cukit_sort_rows(st, module, src, want_index, h, stream, want_index ? NULL : &buf[0],
                        &ibuf[0]) < 0)
        goto done;
    int cur = 0;
    cukit_Array *res = (cukit_Array *)Py_NewRef(want_index ? ibuf[cur] : buf[cur]);
    if (axis_obj != Py_None && res && cukit_capture_keep(st, stream, (PyObject *)res) < 0)
        Py_CLEAR(res);
    if (axis_obj != Py_None && res)
        res = axis_back(st, res, axis, h);
    if (res && cukit_capture_keep(st, stream, (PyObject *)res) < 0) /* None: the current one */
        Py_CLEAR(res);
    result = (PyObject *)res;
done:
    Py_XDECREF(src);
    for (int i = 0; i < 2; i++) {
        Py_XDECREF(buf[i]);
        Py_XDECREF(ibuf[i]);
    }
    return result;
}

static PyObject *
fn_sort(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "axis", "kind", "stream", NULL};
    PyObject *a, *axis = NULL, *kind = Py_None, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO$O:sort", kwlist, &a, &axis, &kind, &stream))
        return NULL;
    PyObject *minus1 = axis ? NULL : PyLong_FromLong(-1);
    PyObject *r = sort_impl(m, a, axis ? axis : minus1, kind, stream, 0);
    Py_XDECREF(minus1);
    return r;
}

static PyObject *
fn_argsort(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "axis", "kind", "stream", NULL};
    PyObject *a, *axis = NULL, *kind = Py_None, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO$O:argsort", kwlist, &a, &axis, &kind,
                                     &stream))
        return NULL;
    PyObject *minus1 = axis ? NULL : PyLong_FromLong(-1);
    PyObject *r = sort_impl(m, a, axis ? axis : minus1, kind, stream, 1);
    Py_XDECREF(minus1);
    return r;
}

static PyObject *fn_searchsorted(PyObject *m, PyObject *args, PyObject *kwargs);

/* numpy's check of partition's kth (an int or a sequence of them) against the length
 * n of the axis. 0, or -1 with ValueError. */
static int
check_kth(PyObject *kth, Py_ssize_t n)
{
    PyObject *seq = PyIndex_Check(kth) ? PyTuple_Pack(1, kth)
                                       : PySequence_Fast(kth, "kth must be an int or a "
                                                              "sequence of ints");
    if (seq == NULL)
        return -1;
    int rc = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && rc == 0; i++) {
        Py_ssize_t k = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(seq, i), PyExc_OverflowError);
        if (k == -1 && PyErr_Occurred())
            rc = -1;
        else if (k < -n || k >= n) {
            PyErr_Format(PyExc_ValueError, "kth(=%zd) out of bounds (%zd)", k, n);
            rc = -1;
        }
    }
    Py_DECREF(seq);
    return rc;
}

/* a.searchsorted(v, side='left', sorter=None): searchsorted(a, v, side) of a, or of
 * a[sorter] (compute/index's gather, hooks.array_index). */
static PyObject *
searchsorted_method(cukit_state *st, PyObject *module, PyObject *self, PyObject *args,
                    PyObject *kwargs)
{
    static char *kwlist[] = {"v", "side", "sorter", NULL};
    PyObject *v, *side = NULL, *sorter = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:searchsorted", kwlist, &v, &side,
                                     &sorter))
        return NULL;
    PyObject *a = sorter == Py_None ? Py_NewRef(self)
                  : st->hooks.array_index ? st->hooks.array_index(st, self, sorter)
                  : PyErr_Format(PyExc_NotImplementedError, "indexing is not available");
    if (a == NULL)
        return NULL;
    PyObject *fargs = PyTuple_Pack(2, a, v);
    PyObject *fkw = fargs && side ? Py_BuildValue("{sO}", "side", side) : NULL;
    PyObject *r = fargs && (fkw || !side) ? fn_searchsorted(module, fargs, fkw) : NULL;
    Py_DECREF(a);
    Py_XDECREF(fargs);
    Py_XDECREF(fkw);
    return r;
}

/* hooks.array_sort: a.sort(axis=-1, kind=None, *, stream=None) sorts in place (a
 * sorted copy written back over a) and returns None; a.argsort(...) is argsort(a, ...).
 * a.partition(kth, axis=-1, kind, order) and a.argpartition(...) check kth as numpy
 * does and then sort (argsort) the whole axis, which satisfies partition's contract. */
static PyObject *
array_sort_hook(cukit_state *st, int what, PyObject *self, PyObject *args,
                PyObject *kwargs)
{
    PyObject *module = PyType_GetModule(st->ArrayType);
    if (module == NULL)
        return NULL;
    if (what == CUKIT_SORT_SEARCHSORTED)
        return searchsorted_method(st, module, self, args, kwargs);
    cukit_Array *a = (cukit_Array *)self;
    PyObject *axis = NULL, *kind = Py_None, *stream = Py_None, *kth = NULL, *order = Py_None;
    int partition = what == CUKIT_SORT_PARTITION || what == CUKIT_SORT_ARGPARTITION;
    int want_index = what == CUKIT_SORT_ARGSORT || what == CUKIT_SORT_ARGPARTITION;
    if (partition) {
        static char *pkw[] = {"kth", "axis", "kind", "order", NULL};
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, want_index ? "O|OOO:argpartition"
                                         : "O|OOO:partition", pkw, &kth, &axis, &kind, &order))
            return NULL;
        if (order != Py_None)
            return PyErr_Format(PyExc_ValueError, "Cannot specify order when the array has "
                                "no fields.");
        if (a->ndim == 0 && !(want_index && axis == Py_None))
            return PyErr_Format(PyExc_ValueError, "a 0-d array cannot be partitioned; "
                                "its only element is in place");
        Py_ssize_t n = a->size;
        if (axis != Py_None) {
            long ax = axis ? PyLong_AsLong(axis) : -1;
            if (ax == -1 && PyErr_Occurred())
                return NULL;
            n = ax >= -a->ndim && ax < a->ndim ? a->shape[ax < 0 ? ax + a->ndim : ax] : n;
        }
        if (check_kth(kth, n) < 0)
            return NULL;
        kind = Py_None;
    }
    else {
        static char *kwlist[] = {"axis", "kind", "stream", NULL};
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, want_index ? "|OO$O:argsort"
                                         : "|OO$O:sort", kwlist, &axis, &kind, &stream))
            return NULL;
    }
    const char *name = partition ? "a.partition()" : "a.sort()";
    if (!want_index && (axis == Py_None || (axis == NULL && a->ndim == 0)))
        return PyErr_Format(PyExc_ValueError, "%s: sorting in place needs an axis%s", name,
                            a->ndim == 0 ? " (a 0-d array has none)" : "; pass one, or use "
                            "cukit.sort(a, axis=None) for a flattened copy");
    if (!want_index && (a->flags & CUKIT_ARRAY_READONLY))
        return PyErr_Format(PyExc_ValueError, "%s: the array is read-only; sort a copy", name);
    PyObject *minus1 = axis ? NULL : PyLong_FromLong(-1);
    PyObject *r = sort_impl(module, self, axis ? axis : minus1, kind, stream, want_index);
    Py_XDECREF(minus1);
    if (r == NULL || want_index)
        return r;
    int rc = ck_copyto(st, a, (cukit_Array *)r, stream);
    Py_DECREF(r);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ searchsorted */

static PyObject *
fn_searchsorted(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "v", "side", "stream", NULL};
    PyObject *ao, *vo, *side = NULL, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O$O:searchsorted", kwlist, &ao, &vo, &side,
                                     &stream))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    const char *who = "cukit.searchsorted()";
    int right = 0;
    if (side && !(PyUnicode_Check(side) && (PyUnicode_CompareWithASCIIString(side, "left") == 0 ||
                                            (right = PyUnicode_CompareWithASCIIString(side, "right") == 0))))
        return PyErr_Format(PyExc_ValueError, "%s: side must be 'left' or 'right', not %R", who, side);
    cukit_Array *a = cukit_sort_arg(st, ao, who), *v = a ? cukit_sort_arg(st, vo, who) : NULL;
    if (v == NULL)
        return NULL;
    if (a->ndim != 1)
        return PyErr_Format(PyExc_ValueError, "%s: a must be 1-D (a sorted vector), not %d-D",
                            who, a->ndim);
    if (a->device != v->device)
        return PyErr_Format(PyExc_ValueError, "%s: a and v are on different devices", who);
    if (a->typecode != v->typecode)
        return PyErr_Format(PyExc_TypeError, "%s: a is %S and v is %S; cast v with "
                            "v.astype(a.dtype) first", who, a->dtype, v->dtype);
    CUstream h;
    if (ck_stream(st, stream, a->device, (PyObject *)a, &h) < 0)
        return NULL;
    PyObject *result = NULL;
    cukit_Array *ca = axis_last(st, a, 0, h), *cv = ca ? axis_last(st, v, v->ndim ? v->ndim - 1 : 0, h) : NULL;
    cukit_Array *out = cv ? ck_empty_out(st, a->device, CUKIT_TC_I64, v->ndim, v->shape, stream) : NULL;
    if (out == NULL)
        goto done;
    long long na = ca->size, nv = cv->size;
    if (nv > 0) {
        cukit_sort_kernel_set k;
        if (cukit_sort_kernels(st, m, a->device, a->typecode, CUKIT_SORT_SEARCH, &k) < 0 ||
            cukit_device_activate(a->device) < 0)
            goto done;
        CUdeviceptr pa = cukit_array_ptr(ca), pv = cukit_array_ptr(cv), po = cukit_array_ptr(out);
        void *p[] = {&pa, &na, &pv, &po, &nv, &right};
        if (cukit_sort_launch(st, k.search, (nv + 255) / 256, h, p) < 0)
            goto done;
    }
    result = Py_NewRef(out);
done:
    Py_XDECREF(ca);
    Py_XDECREF(cv);
    Py_XDECREF(out);
    return result;
}

static PyMethodDef functions[] = {
    {"sort", (PyCFunction)(void (*)(void))fn_sort, METH_VARARGS | METH_KEYWORDS,
     "sort(a, axis=-1, kind=None, *, stream=None) -> Array: a sorted copy along axis (None: "
     "flattened), stable, NaNs last (numpy's order)."},
    {"argsort", (PyCFunction)(void (*)(void))fn_argsort, METH_VARARGS | METH_KEYWORDS,
     "argsort(a, axis=-1, kind=None, *, stream=None) -> Array of int64: the indices that sort "
     "a along axis, stable (numpy's kind='stable')."},
    {"searchsorted", (PyCFunction)(void (*)(void))fn_searchsorted, METH_VARARGS | METH_KEYWORDS,
     "searchsorted(a, v, side='left', *, stream=None) -> Array of int64: where each element "
     "of v goes in the sorted 1-D a to keep it sorted."},
    {NULL},
};

int
cukit_sort_setup(PyObject *module, cukit_state *st)
{
    st->hooks.array_sort = array_sort_hook;
    PyObject *cache = PyDict_New();
    if (cache == NULL || PyModule_AddObjectRef(module, "_sort_kernels", cache) < 0) {
        Py_XDECREF(cache);
        return -1;
    }
    Py_DECREF(cache);
    return PyModule_AddFunctions(module, functions);
}
