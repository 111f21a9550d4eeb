/* sample.c - Generator.choice: samples of range(n) or of an array's rows, with and without replacement, uniform or with p= */
#include "compute/random/philox.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WHO "choice"

/* size= as a shape: None (0-d), an int or a tuple of ints. Elements into *count. 0 / -1. */
static int
shape_of_size(PyObject *size, Py_ssize_t *shape, int *ndim, Py_ssize_t *count)
{
    *ndim = 0;
    *count = 1;
    if (size == Py_None)
        return 0;
    PyObject *seq = PyIndex_Check(size) ? PyTuple_Pack(1, size)
                                        : PySequence_Fast(size, WHO ": size must be None, an "
                                                                "int or a tuple of ints");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int rc = 0;
    if (n > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, WHO ": size has %zd dimensions; cukit allows at most %d",
                     n, CUKIT_MAXDIM);
        rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        Py_ssize_t v = PyIndex_Check(item) ? PyNumber_AsSsize_t(item, PyExc_ValueError) : -2;
        if (v == -2 && !PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, WHO ": size must be None, an int or a tuple of ints, "
                         "got %R", size);
        else if (v < 0 && !PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "negative dimensions are not allowed");
        if (PyErr_Occurred()) {
            rc = -1;
            break;
        }
        shape[i] = v;
        *count *= v;
    }
    Py_DECREF(seq);
    *ndim = (int)n;
    return rc;
}

/* p= on the host as float64 (a cukit.Array is copied back on `stream`, waited for;
 * anything else goes through numpy.asarray), checked as numpy checks it against a
 * population of n. The running
 * sums into *cdf (PyMem, n of them; the caller frees), the last index of non-zero
 * probability into *last and the count of them into *nonzero. 0 / -1. */
static int
read_p(cukit_state *st, PyObject *p, PyObject *stream, Py_ssize_t n, double **cdf,
       Py_ssize_t *last, Py_ssize_t *nonzero)
{
    PyObject *host = NULL, *f64 = NULL;
    int rc = -1;
    *cdf = NULL;
    if (cukit_numpy(st) < 0)
        return -1;
    if (Py_IS_TYPE(p, st->ArrayType)) {
        cukit_Array *a = (cukit_Array *)p;
        PyObject *shape = cukit_array_live(a) ? cukit_array_shape(a) : NULL;
        if (shape == NULL)
            return cukit_array_live(a) ? -1 : cukit_freed_error();
        host = PyObject_CallFunctionObjArgs(st->np_empty, shape, a->dtype, NULL);
        Py_DECREF(shape);
        Py_buffer view;
        if (host == NULL || PyObject_GetBuffer(host, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        CUstream h;
        int r = -1;
        if (!(a->flags & CUKIT_ARRAY_C_CONTIG))
            PyErr_SetString(PyExc_ValueError, WHO ": p must be C-contiguous (use "
                            "cukit.ascontiguousarray(p))");
        else if (cukit_stream_handle(st, stream, a->device, &h) == 0 &&
                 cukit_device_activate(a->device) == 0)
            r = a->nbytes ? cukit_copy_dtoh(st, view.buf, cukit_array_ptr(a), (size_t)a->nbytes,
                                            h, 1) : 0;
        PyBuffer_Release(&view);
        if (r < 0)
            goto done;
    }
    else
        host = Py_NewRef(p);
    /* float32 probabilities sum to 1 only to float32's precision: numpy's tolerance */
    PyObject *dt = PyObject_GetAttrString(host, "dtype");
    double atol = 1.4901161193847656e-08; /* sqrt(float64's eps) */
    if (dt == NULL)
        PyErr_Clear();
    else {
        PyObject *size = PyObject_GetAttrString(dt, "itemsize");
        PyObject *kind = PyObject_GetAttrString(dt, "kind");
        if (size && kind && PyLong_AsLong(size) == 4 && PyUnicode_CompareWithASCIIString(kind, "f") == 0)
            atol = 3.4526698300124393e-04; /* sqrt(float32's eps) */
        Py_XDECREF(size);
        Py_XDECREF(kind);
        Py_DECREF(dt);
        PyErr_Clear();
    }
    PyObject *name = PyUnicode_FromString("float64");
    f64 = name ? PyObject_CallFunctionObjArgs(st->np_asarray, host, name, NULL) : NULL;
    Py_XDECREF(name);
    if (f64 == NULL)
        goto done;
    Py_buffer v;
    if (PyObject_GetBuffer(f64, &v, PyBUF_C_CONTIGUOUS | PyBUF_ND) < 0)
        goto done;
    if (v.ndim != 1)
        PyErr_SetString(PyExc_ValueError, "p must be 1-dimensional");
    else if (v.shape[0] != n)
        PyErr_SetString(PyExc_ValueError, "a and p must have same size");
    else if ((*cdf = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(double))) == NULL)
        PyErr_NoMemory();
    else {
        const double *w = v.buf;
        double sum = 0.0;
        *last = 0;
        *nonzero = 0;
        rc = 0;
        for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
            if (isnan(w[i])) {
                PyErr_SetString(PyExc_ValueError, "Probabilities contain NaN");
                rc = -1;
            }
            else if (w[i] < 0) {
                PyErr_SetString(PyExc_ValueError, "Probabilities are not non-negative");
                rc = -1;
            }
            else if (w[i] > 0) {
                *last = i;
                (*nonzero)++;
            }
            sum += w[i];
            (*cdf)[i] = sum;
        }
        if (rc == 0 && !(fabs(sum - 1.0) <= atol)) {
            PyErr_SetString(PyExc_ValueError, "Probabilities do not sum to 1 (to within "
                            "sqrt(eps) of p's float type, as numpy requires)");
            rc = -1;
        }
    }
    PyBuffer_Release(&v);
done:
    if (rc < 0) {
        PyMem_Free(*cdf);
        *cdf = NULL;
    }
    Py_XDECREF(host);
    Py_XDECREF(f64);
    return rc;
}

/* An int64 array of `shape` on dev. New ref or NULL. */
static cukit_Array *
new_index(cukit_state *st, cukit_Device *dev, int ndim, const Py_ssize_t *shape)
{
    PyObject *name = PyUnicode_FromString("int64");
    PyObject *dtype = name ? cukit_resolve_dtype(st, name) : NULL;
    Py_XDECREF(name);
    cukit_Array *a = dtype ? cukit_array_create(st, dev, ndim, shape, dtype) : NULL;
    Py_XDECREF(dtype);
    return a;
}

/* With replacement, p given: idx[i] = the index whose cumulative range holds uniform
 * draw i (one 64-bit word each, as random() draws), found on the device. 0 / -1. */
static int
weighted_with_replacement(ck_Philox *bg, cukit_Array *idx, const double *cdf, Py_ssize_t n,
                          Py_ssize_t last, PyObject *stream)
{
    cukit_state *st = bg->st;
    cukit_Device *dev = idx->device;
    PyObject *name = PyUnicode_FromString("float64");
    PyObject *f64 = name ? cukit_resolve_dtype(st, name) : NULL;
    Py_XDECREF(name);
    cukit_Array *u = f64 ? cukit_array_create(st, dev, idx->ndim, idx->shape, f64) : NULL;
    Py_XDECREF(f64);
    if (u == NULL)
        return -1;
    ck_rand_params p;
    memset(&p, 0, sizeof p);
    p.a = 0.0;
    p.b = 1.0;
    cukit_scratch dcdf = {0, 0};
    CUstream h;
    CUfunction f;
    int rc = -1;
    PyObject *drawn = ck_random_draw(bg, CK_RAND_U64, u->dtype, Py_None, (PyObject *)u, stream,
                                     &p, WHO);
    if (drawn == NULL || cukit_stream_handle(st, stream, dev, &h) < 0 ||
        cukit_capture_keep(st, stream, (PyObject *)u) < 0 ||
        cukit_scratch_alloc(dev, (size_t)n * sizeof(double), h, &dcdf) < 0)
        goto done;
    /* synchronous: the host cdf is freed when choice returns */
    if (cukit_copy_htod(st, dcdf.ptr, cdf, (size_t)n * sizeof(double), h, 1) < 0 ||
        cukit_builtin_kernel_file(dev, &st->compute->sample_modules, NULL,
                                  "compute/random/kernels/choice.cu", "cukit_choice_search",
                                  &f) < 0)
        goto done;
    {
        unsigned long long dc = dcdf.ptr, du = cukit_array_ptr(u), dout = cukit_array_ptr(idx);
        long long lastl = last, m = idx->size;
        double total = cdf[n - 1];
        void *args[] = {&dc, &lastl, &du, &dout, &m, &total};
        long long blocks = (m + 255) / 256, most = (long long)dev->sm_count * 8;
        if (blocks > most)
            blocks = most;
        rc = cukit_builtin_launch(dev, f, (unsigned)(blocks ? blocks : 1), 1, 256, 1, h, args);
    }
done:
    if (dcdf.ptr && cukit_scratch_release(dev, &dcdf, h) < 0)
        rc = -1;
    Py_XDECREF(drawn);
    Py_DECREF(u);
    return rc;
}

typedef struct {
    double key;
    int64_t index;
} keyed;

static int
by_key(const void *a, const void *b)
{
    double x = ((const keyed *)a)->key, y = ((const keyed *)b)->key;
    if (x != y)
        return x < y ? -1 : 1;
    int64_t i = ((const keyed *)a)->index, j = ((const keyed *)b)->index;
    return (i > j) - (i < j);
}

/* Without replacement, p given: the k indices with the smallest keys E_i / p_i, E_i
 * exponential (Efraimidis and Spirakis: the order in which a race of exponential
 * clocks of rates p_i ends, which draws as numpy does, each next index with
 * probability proportional to p among those not yet drawn). One word of the stream
 * per index, on the host, where p already is; the k indices are copied to idx. 0 / -1. */
static int
weighted_without_replacement(ck_Philox *bg, cukit_Array *idx, const double *cdf, Py_ssize_t n,
                             PyObject *stream)
{
    Py_ssize_t k = idx->size;
    keyed *keys = PyMem_Malloc((size_t)n * sizeof *keys);
    int64_t *out = PyMem_Malloc((size_t)(k ? k : 1) * sizeof *out);
    int rc = -1;
    if (keys == NULL || out == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    ck_rand_params p;
    memset(&p, 0, sizeof p);
    ck_philox_take64(bg, n, &p);
    /* the words drawn: p's buffer from pos, then the blocks after p's counter */
    uint64_t ctr[4], words[4];
    memcpy(ctr, p.ctr, sizeof ctr);
    memcpy(words, p.buf, sizeof words);
    int pos = p.pos;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (pos == 4) {
            ck_philox_next_block(bg, ctr, words);
            pos = 0;
        }
        double u = (double)(words[pos++] >> 11) * 0x1.0p-53;
        double w = cdf[i] - (i ? cdf[i - 1] : 0.0);
        keys[i].key = w > 0 ? -log1p(-u) / w : INFINITY;
        keys[i].index = i;
    }
    qsort(keys, (size_t)n, sizeof *keys, by_key);
    for (Py_ssize_t i = 0; i < k; i++)
        out[i] = keys[i].index;
    CUstream h;
    if (cukit_stream_handle(bg->st, stream, idx->device, &h) < 0 ||
        cukit_device_activate(idx->device) < 0)
        goto done;
    /* synchronous: `out` is freed below */
    rc = k ? cukit_copy_htod(bg->st, cukit_array_ptr(idx), out, (size_t)k * 8, h, 1) : 0;
done:
    PyMem_Free(keys);
    PyMem_Free(out);
    return rc;
}

/* Without replacement, no p: the first k of a permutation of range(n). 0 / -1. */
static int
uniform_without_replacement(ck_Philox *bg, cukit_Array *idx, Py_ssize_t n, PyObject *stream)
{
    cukit_state *st = bg->st;
    cukit_Device *dev = idx->device;
    if (idx->size == 0)
        return 0;
    CUstream h;
    cukit_scratch perm = {0, 0};
    int rc = -1;
    if (cukit_stream_handle(st, stream, dev, &h) < 0 ||
        cukit_capture_keep(st, stream, (PyObject *)idx) < 0 ||
        cukit_scratch_alloc(dev, (size_t)n * 8, h, &perm) < 0)
        return -1;
    if (ck_random_permute(bg, dev, perm.ptr, n, h) == 0)
        rc = CU_CALL(st, cuMemcpyDtoDAsync, (cukit_array_ptr(idx), perm.ptr,
                                             (size_t)idx->size * 8, h));
    if (cukit_scratch_release(dev, &perm, h) < 0)
        rc = -1;
    return rc;
}

PyObject *
ck_random_choice(ck_Philox *bg, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "size", "replace", "p", "axis", "shuffle", "stream", NULL};
    PyObject *a_obj, *size = Py_None, *p_obj = Py_None, *stream = Py_None;
    int replace = 1, axis = 0, shuffle = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OpOip$O:choice", kwlist, &a_obj, &size,
                                     &replace, &p_obj, &axis, &shuffle, &stream))
        return NULL;
    (void)shuffle; /* a sample without replacement always comes in random order */
    cukit_state *st = bg->st;
    if (axis != 0) {
        PyErr_Format(PyExc_ValueError, WHO ": cukit samples along axis 0 only (got axis=%d); "
                     "move that axis first (x.transpose(...)) and copy", axis);
        return NULL;
    }
    cukit_Array *src = NULL;
    Py_ssize_t n;
    if (Py_IS_TYPE(a_obj, st->ArrayType)) {
        src = (cukit_Array *)a_obj;
        if (!cukit_array_live(src)) {
            cukit_freed_error();
            return NULL;
        }
        if (src->ndim < 1) {
            PyErr_SetString(PyExc_ValueError, "a must be an integer or at least 1-dimensional");
            return NULL;
        }
        if (!(src->flags & CUKIT_ARRAY_C_CONTIG)) {
            PyErr_SetString(PyExc_ValueError, WHO ": a must be C-contiguous (use "
                            "cukit.ascontiguousarray(a))");
            return NULL;
        }
        n = src->shape[0];
    }
    else if (PyIndex_Check(a_obj) && !PyBool_Check(a_obj) && !PySequence_Check(a_obj)) {
        n = PyNumber_AsSsize_t(a_obj, PyExc_OverflowError);
        if (n == -1 && PyErr_Occurred())
            return NULL;
    }
    else {
        PyErr_Format(PyExc_TypeError, WHO ": a must be an int or a cukit.Array, got %.200s (copy "
                     "host data to the device with cukit.to_device first)",
                     Py_TYPE(a_obj)->tp_name);
        return NULL;
    }
    Py_ssize_t shape[CUKIT_MAXDIM], k;
    int ndim;
    if (shape_of_size(size, shape, &ndim, &k) < 0)
        return NULL;
    if (n <= 0 && k != 0) {
        PyErr_SetString(PyExc_ValueError, src ? "a cannot be empty unless no samples are taken"
                                              : "a must be a positive integer unless no samples "
                                                "are taken");
        return NULL;
    }
    if (src && ndim + src->ndim - 1 > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, WHO ": the sample would have %d dimensions; cukit allows "
                     "at most %d", ndim + src->ndim - 1, CUKIT_MAXDIM);
        return NULL;
    }
    cukit_Device *dev = src ? src->device : cukit_device_current(st);
    CUstream h;
    if (dev == NULL || cukit_stream_handle(st, stream, dev, &h) < 0)
        return NULL;
    if (p_obj != Py_None && cukit_stream_capturing(h)) {
        PyErr_SetString(PyExc_RuntimeError, WHO ": with p= it reads p on the host and cannot "
                        "be captured into a graph; draw outside the capture");
        return NULL;
    }
    double *cdf = NULL;
    Py_ssize_t last = 0, nonzero = n;
    if (p_obj != Py_None && read_p(st, p_obj, stream, n, &cdf, &last, &nonzero) < 0)
        return NULL;
    cukit_Array *idx = NULL, *out = NULL;
    if (!replace && k > n) {
        PyErr_SetString(PyExc_ValueError, "Cannot take a larger sample than population when "
                        "replace is False");
        goto done;
    }
    if (!replace && cdf && k > nonzero) {
        PyErr_SetString(PyExc_ValueError, "Fewer non-zero entries in p than size");
        goto done;
    }
    if ((idx = new_index(st, dev, ndim, shape)) == NULL)
        goto done;
    int rc = 0;
    if (k == 0)
        rc = 0;
    else if (replace && cdf == NULL) {
        PyObject *r = ck_random_below(bg, (uint64_t)n, Py_None, (PyObject *)idx, stream, WHO);
        rc = r ? 0 : -1;
        Py_XDECREF(r);
    }
    else if (replace)
        rc = weighted_with_replacement(bg, idx, cdf, n, last, stream);
    else if (cdf == NULL)
        rc = uniform_without_replacement(bg, idx, n, stream);
    else
        rc = weighted_without_replacement(bg, idx, cdf, n, stream);
    if (rc < 0)
        Py_CLEAR(idx);
    if (idx == NULL || src == NULL)
        goto done;
    /* rows of a: the result has shape size + a.shape[1:] */
    Py_ssize_t oshape[CUKIT_MAXDIM];
    memcpy(oshape, shape, (size_t)ndim * sizeof *shape);
    memcpy(oshape + ndim, src->shape + 1, (size_t)(src->ndim - 1) * sizeof *shape);
    out = cukit_array_create(st, dev, ndim + src->ndim - 1, oshape, src->dtype);
    if (out && (cukit_capture_keep(st, stream, (PyObject *)out) < 0 ||
                cukit_capture_keep(st, stream, (PyObject *)idx) < 0 ||
                cukit_capture_keep(st, stream, a_obj) < 0 ||
                ck_random_gather_rows(out, src, cukit_array_ptr(idx), k, h) < 0))
        Py_CLEAR(out);
done:
    PyMem_Free(cdf);
    if (src == NULL)
        return (PyObject *)idx;
    Py_XDECREF(idx);
    return (PyObject *)out;
}
