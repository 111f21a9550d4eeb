/* random_kernels.c - the random-number kernels (kernels/random.cu), each compiled alone at its first use, and the draw that launches them
 *
 * Every element is a pure function of (key, counter, position): a thread computes
 * one block (four 64-bit words: Philox4x64-10's, or two of Philox4x32-10's for the
 * kernels named *_x32) per step of a grid-stride loop and
 * writes the elements those words make, so the numbers do not depend on the grid
 * or on how a request is split into calls. Which words a call draws, and how the
 * bit generator moves past them, is philox.c's bookkeeping (numpy's own rules). */
#include "compute/random/philox.h"

#include <string.h>

#define THREADS 256
#define BLOCKS_PER_SM 16 /* two waves of 256-thread blocks: 10% faster than one on an H200 */

#define STR_(x) #x
#define STR(x) STR_(x)

/* The kernels are kernels/random.cu's, with philox.h's constants in front. */
static const char random_defines[] =
    "#define CUKIT_PHILOX_ROUNDS " STR(CUKIT_PHILOX_ROUNDS) "\n"
    "#define CUKIT_PHILOX_M0 " STR(CUKIT_PHILOX_M0) "\n#define CUKIT_PHILOX_M1 " STR(CUKIT_PHILOX_M1) "\n"
    "#define CUKIT_PHILOX_W0 " STR(CUKIT_PHILOX_W0) "\n#define CUKIT_PHILOX_W1 " STR(CUKIT_PHILOX_W1) "\n"
    "#define CUKIT_PHILOX32_M0 " STR(CUKIT_PHILOX32_M0) "\n#define CUKIT_PHILOX32_M1 " STR(CUKIT_PHILOX32_M1) "\n"
    "#define CUKIT_PHILOX32_W0 " STR(CUKIT_PHILOX32_W0) "\n#define CUKIT_PHILOX32_W1 " STR(CUKIT_PHILOX32_W1) "\n"
    "#define CUKIT_PERM_MAX_ROUNDS " STR(CUKIT_PERM_MAX_ROUNDS) "\n";
#define RANDOM_FILE "compute/random/kernels/random.cu"

/* By ck_rand_kind: the kernels for the plain draw (a = 0, b = 1) and for any a
 * and b, each for Philox and (named *_x32) for Philox4x32, and whether they draw 32-bit
 * halves. */
#define KIND(plain, affine, halves) {{{plain, affine}, {plain "_x32", affine "_x32"}}, halves}
static const struct {
    const char *names[2][2]; /* [x32][affine] */
    int halves;
} kinds[CK_RAND_COUNT] = {
    [CK_RAND_RAW] = KIND("cukit_random_raw", "cukit_random_raw", 0),
    [CK_RAND_U64] = KIND("cukit_random_f64", "cukit_uniform_f64", 0),
    [CK_RAND_U32] = KIND("cukit_random_f32", "cukit_uniform_f32", 1),
    [CK_RAND_N64] = KIND("cukit_standard_normal_f64", "cukit_normal_f64", 0),
    [CK_RAND_N32] = KIND("cukit_standard_normal_f32", "cukit_normal_f32", 1),
    [CK_RAND_E64] = KIND("cukit_exponential_f64", "cukit_exponential_f64", 0),
    [CK_RAND_E32] = KIND("cukit_exponential_f32", "cukit_exponential_f32", 1),
    [CK_RAND_U16] = KIND("cukit_random_f16", "cukit_uniform_f16", 1),
    [CK_RAND_UBF16] = KIND("cukit_random_bf16", "cukit_uniform_bf16", 1),
    [CK_RAND_N16] = KIND("cukit_standard_normal_f16", "cukit_normal_f16", 1),
    [CK_RAND_NBF16] = KIND("cukit_standard_normal_bf16", "cukit_normal_bf16", 1),
    [CK_RAND_E16] = KIND("cukit_exponential_f16", "cukit_exponential_f16", 1),
    [CK_RAND_EBF16] = KIND("cukit_exponential_bf16", "cukit_exponential_bf16", 1),
    [CK_RAND_I8] = KIND("cukit_integers_1", "cukit_integers_1", 0),
    [CK_RAND_I16] = KIND("cukit_integers_2", "cukit_integers_2", 0),
    [CK_RAND_I32] = KIND("cukit_integers_4", "cukit_integers_4", 0),
    [CK_RAND_I64] = KIND("cukit_integers_8", "cukit_integers_8", 0),
    [CK_RAND_POISSON] = KIND("cukit_poisson", "cukit_poisson", 0),
    /* Philox4x32 only (generator.c picks them for it) */
    [CK_RAND_IH8] = KIND("cukit_integers_h1", "cukit_integers_h1", 1),
    [CK_RAND_IH16] = KIND("cukit_integers_h2", "cukit_integers_h2", 1),
    [CK_RAND_IH32] = KIND("cukit_integers_h4", "cukit_integers_h4", 1),
    [CK_RAND_IH64] = KIND("cukit_integers_h8", "cukit_integers_h8", 1),
};

PyObject *
ck_random_kernel_source(void)
{
    const char *body = cukit_device_file(RANDOM_FILE);
    return body ? PyUnicode_FromFormat("%s%s", random_defines, body) : NULL;
}

PyObject *
ck_random_kernel_names(void)
{
    static const char *const others[] = {"cukit_permutation", "cukit_gather_1", "cukit_gather_2",
                                         "cukit_gather_4", "cukit_gather_8", "cukit_gather_16"};
    PyObject *seen = PyDict_New(); /* insertion-ordered set */
    for (int k = 0; seen && k < CK_RAND_COUNT; k++)
        for (int x = 0; seen && x < 2; x++)
            for (int a = 0; seen && a < 2; a++) {
                const char *name = kinds[k].names[x][a];
                /* the kernels of Philox4x32 only have no Philox4x64 twin */
                if (name == NULL || (x == 0 && k >= CK_RAND_IH8))
                    continue;
                PyObject *s = PyUnicode_FromString(name);
                if (s == NULL || PyDict_SetItem(seen, s, Py_None) < 0)
                    Py_CLEAR(seen);
                Py_XDECREF(s);
            }
    for (size_t i = 0; seen && i < sizeof others / sizeof *others; i++) {
        PyObject *s = PyUnicode_FromString(others[i]);
        if (s == NULL || PyDict_SetItem(seen, s, Py_None) < 0)
            Py_CLEAR(seen);
        Py_XDECREF(s);
    }
    PyObject *out = seen ? PySequence_Tuple(seen) : NULL;
    Py_XDECREF(seen);
    return out;
}

int
ck_random_load(cukit_Device *dev, const char *name)
{
    CUfunction f;
    return cukit_builtin_kernel_one(dev, &dev->st->compute->random_modules, random_defines,
                                    RANDOM_FILE, name, &f);
}

int
ck_random_launch(cukit_Device *dev, const char *name, long long work, void **args, CUstream h)
{
    CUfunction f;
    long long blocks = (work + THREADS - 1) / THREADS, most = (long long)dev->sm_count * BLOCKS_PER_SM;
    if (blocks > most)
        blocks = most;
    if (blocks < 1)
        blocks = 1;
    if (cukit_builtin_kernel_one(dev, &dev->st->compute->random_modules, random_defines, RANDOM_FILE,
                                 name, &f) < 0)
        return -1;
    return cukit_builtin_launch(dev, f, (unsigned)blocks, 1, THREADS, 1, h, args);
}

/* ------------------------------------------------------------------ arguments */

/* size= : None (one element, 0-d), an int, or a tuple of ints. 0 / -1. */
static int
parse_size(PyObject *size, Py_ssize_t *shape, int *ndim, const char *who)
{
    *ndim = 0;
    if (size == NULL || size == Py_None)
        return 0;
    PyObject *seq = PyIndex_Check(size) ? PyTuple_Pack(1, size)
                                        : PySequence_Fast(size, "size must be None, an int or a "
                                                                "tuple of ints");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int rc = 0;
    if (n > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "%s: size has %zd dimensions; cukit allows at most %d",
                     who, n, CUKIT_MAXDIM);
        rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        Py_ssize_t v = PyIndex_Check(item) ? PyNumber_AsSsize_t(item, PyExc_ValueError) : -2;
        if (v == -2 && !PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "%s: size must be None, an int or a tuple of ints, "
                         "got %R", who, size);
            rc = -1;
        }
        else if (v == -1 && PyErr_Occurred()) {
            rc = -1;
        }
        else if (v < 0) {
            PyErr_Format(PyExc_ValueError, "%s: negative dimensions are not allowed (size=%R)",
                         who, size);
            rc = -1;
        }
        else {
            shape[i] = v;
        }
    }
    Py_DECREF(seq);
    *ndim = (int)n;
    return rc;
}

/* out= checked for a draw of `dtype` and (when size was given) shape. 0 / -1. */
static int
check_out(cukit_state *st, cukit_Array *a, PyObject *dtype, int sized, int ndim,
          const Py_ssize_t *shape, const char *who)
{
    if (!cukit_array_live(a))
        return cukit_freed_error();
    if (a->flags & CUKIT_ARRAY_READONLY) {
        PyErr_Format(PyExc_ValueError, "%s: out is read-only (imported as such); pass a "
                     "writable array", who);
        return -1;
    }
    if (!(a->flags & CUKIT_ARRAY_C_CONTIG)) {
        PyErr_Format(PyExc_ValueError, "%s: out must be C-contiguous; draw into a new array "
                     "and copy it into the view (out[...] = draw)", who);
        return -1;
    }
    int same = PyObject_RichCompareBool(a->dtype, dtype, Py_EQ);
    if (same < 0)
        return -1;
    if (!same) {
        PyErr_Format(PyExc_TypeError, "%s: out has dtype %S but the draw is %S; pass "
                     "dtype=%S or an out of dtype %S", who, a->dtype, dtype, a->dtype, dtype);
        return -1;
    }
    int match = ndim == a->ndim;
    for (int i = 0; match && i < ndim; i++)
        match = shape[i] == a->shape[i];
    if (sized && !match) {
        PyObject *want = cukit_array_shape(a);
        if (want)
            PyErr_Format(PyExc_ValueError, "%s: size must match out.shape when used together "
                         "(out.shape is %S)", who, want);
        Py_XDECREF(want);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ the draw */

PyObject *
ck_random_draw(ck_Philox *bg, ck_rand_kind kind, PyObject *dtype, PyObject *size,
                  PyObject *out, PyObject *stream, ck_rand_params *p, const char *who)
{
    cukit_state *st = bg->st;
    Py_ssize_t shape[CUKIT_MAXDIM];
    int ndim;
    if (parse_size(size, shape, &ndim, who) < 0)
        return NULL;
    cukit_Array *a;
    if (out != NULL && out != Py_None) {
        if (!Py_IS_TYPE(out, st->ArrayType)) {
            PyErr_Format(PyExc_TypeError, "%s: out must be a cukit.Array, got %.200s (for host "
                         "data draw into a device array and .get() it)", who,
                         Py_TYPE(out)->tp_name);
            return NULL;
        }
        a = (cukit_Array *)out;
        if (check_out(st, a, dtype, size != NULL && size != Py_None, ndim, shape, who) < 0)
            return NULL;
        Py_INCREF(a);
    }
    else {
        cukit_Device *dev = cukit_device_current(st);
        a = dev ? cukit_array_create(st, dev, ndim, shape, dtype) : NULL;
        if (a == NULL)
            return NULL;
    }
    CUstream h;
    int64_t n = a->size;
    if (cukit_stream_handle(st, stream, a->device, &h) < 0 ||
        cukit_capture_keep(st, stream, (PyObject *)a) < 0) { /* a graph writes it */
        Py_DECREF(a);
        return NULL;
    }
    if (n == 0)
        return (PyObject *)a;
    /* Keep the state to put back if the launch fails: only what was drawn moves it. */
    ck_Philox saved = *bg;
    long long nblk;
    p->out = cukit_array_ptr(a);
    p->n = n;
    p->vec = p->out % 16 == 0;
    if (kinds[kind].halves) {
        ck_philox_take32(bg, n, p);
        nblk = (2LL * p->pos + (n - p->head) + 7) / 8;
    }
    else {
        ck_philox_take64(bg, n, p);
        p->head = 0;
        nblk = (p->pos + n + 3) / 4;
    }
    if (bg->x32) /* a thread computes half a block a step */
        nblk *= 2;
    void *args[] = {p};
    const char *name = kinds[kind].names[bg->x32][!(p->a == 0.0 && p->b == 1.0)];
    if (ck_random_launch(a->device, name, nblk, args, h) < 0) {
        memcpy(bg->ctr, saved.ctr, sizeof bg->ctr);
        memcpy(bg->buffer, saved.buffer, sizeof bg->buffer);
        bg->buffer_pos = saved.buffer_pos;
        bg->has_uint32 = saved.has_uint32;
        bg->uinteger = saved.uinteger;
        bg->ulow = saved.ulow;
        Py_DECREF(a);
        return NULL;
    }
    return (PyObject *)a;
}
