/* philox.c - cukit.random.Philox (numpy.random.Philox's key, counter and state) and cukit.random.Philox4x32 on the host, and the bookkeeping of what each draw takes */
#include "compute/random/philox.h"

#include <string.h>

/* ------------------------------------------------------------------ state */

static void
reset_buffer(ck_Philox *bg)
{
    memset(bg->buffer, 0, sizeof bg->buffer);
    bg->buffer_pos = 4;
    bg->has_uint32 = 0;
    bg->uinteger = 0;
    bg->ulow = 0;
}

/* ctr += add (both `n` 64-bit words, least significant first), modulo 2**(64 n). */
static void
add_words(uint64_t *ctr, const uint64_t *add, int n)
{
    uint64_t carry = 0;
    for (int i = 0; i < n; i++) {
        uint64_t s = ctr[i] + add[i];
        uint64_t c = s < add[i];
        ctr[i] = s + carry;
        carry = c | (ctr[i] < s);
    }
}

/* The counter's and the key's 64-bit words. */
static int
ctr_words(const ck_Philox *bg)
{
    return bg->x32 ? 2 : 4;
}

static int
key_words(const ck_Philox *bg)
{
    return bg->x32 ? 1 : 2;
}

/* The counter's bits: Philox4x32's block c takes Random123's counters 2c and 2c + 1,
 * so its counter has 127 bits (at 2**127 blocks the 128-bit counters wrap around). */
static int
ctr_bits(const ck_Philox *bg)
{
    return bg->x32 ? 127 : 256;
}

/* ctr += add, modulo 2**ctr_bits. */
static void
add_ctr(const ck_Philox *bg, uint64_t *ctr, const uint64_t *add)
{
    add_words(ctr, add, ctr_words(bg));
    if (bg->x32)
        ctr[1] &= 0x7fffffffffffffffULL;
}

/* The four words of block `ctr` (see philox.h for Philox4x32's). */
static void
block(const ck_Philox *bg, const uint64_t ctr[4], uint64_t out[4])
{
    if (!bg->x32) {
        ck_philox_block(ctr, bg->key, out);
        return;
    }
    uint32_t key[2] = {(uint32_t)bg->key[0], (uint32_t)(bg->key[0] >> 32)};
    for (int h = 0; h < 2; h++) {
        uint64_t lo = ctr[0] << 1 | (uint64_t)h, hi = ctr[1] << 1 | ctr[0] >> 63;
        uint32_t c[4] = {(uint32_t)lo, (uint32_t)(lo >> 32), (uint32_t)hi, (uint32_t)(hi >> 32)};
        uint32_t x[4];
        ck_philox4x32(c, key, x);
        out[2 * h] = x[0] | (uint64_t)x[1] << 32;
        out[2 * h + 1] = x[2] | (uint64_t)x[3] << 32;
    }
}

void
ck_philox_next_block(const ck_Philox *bg, uint64_t ctr[4], uint64_t out[4])
{
    static const uint64_t one[4] = {1, 0, 0, 0};
    add_ctr(bg, ctr, one);
    block(bg, ctr, out);
}

/* p's counter, buffer and pos for the next word: numpy's buffer when words of it are
 * left, else the next block (computed here, so block 0 of a launch is always the
 * host's). The round keys too. */
static void
begin(const ck_Philox *bg, ck_rand_params *p)
{
    uint64_t k0 = bg->key[0], k1 = bg->key[1];
    uint32_t h0 = (uint32_t)k0, h1 = (uint32_t)(k0 >> 32);
    for (int r = 0; r < CUKIT_PHILOX_ROUNDS; r++) {
        p->rk[2 * r] = bg->x32 ? h0 : k0;
        p->rk[2 * r + 1] = bg->x32 ? h1 : k1;
        k0 += CUKIT_PHILOX_W0;
        k1 += CUKIT_PHILOX_W1;
        h0 += CUKIT_PHILOX32_W0;
        h1 += CUKIT_PHILOX32_W1;
    }
    memcpy(p->ctr, bg->ctr, sizeof p->ctr);
    if (bg->buffer_pos >= 4) {
        static const uint64_t one[4] = {1, 0, 0, 0};
        add_ctr(bg, p->ctr, one);
        block(bg, p->ctr, p->buf);
        p->pos = 0;
    }
    else {
        memcpy(p->buf, bg->buffer, sizeof p->buf);
        p->pos = bg->buffer_pos;
    }
}

/* Move bg past words [pos, pos + n) of p's blocks (n >= 1): its counter becomes the
 * last block's and its buffer that block's words, as numpy leaves them. */
static void
finish(ck_Philox *bg, const ck_rand_params *p, int64_t n)
{
    uint64_t last = (uint64_t)p->pos + (uint64_t)n - 1, blocks[4] = {last / 4, 0, 0, 0};
    memcpy(bg->ctr, p->ctr, sizeof bg->ctr);
    add_ctr(bg, bg->ctr, blocks);
    if (blocks[0] == 0)
        memcpy(bg->buffer, p->buf, sizeof bg->buffer);
    else
        block(bg, bg->ctr, bg->buffer);
    bg->buffer_pos = (int)(last % 4) + 1;
}

void
ck_philox_take64(ck_Philox *bg, int64_t n, ck_rand_params *p)
{
    begin(bg, p);
    finish(bg, p, n);
}

void
ck_philox_take32(ck_Philox *bg, int64_t n, ck_rand_params *p)
{
    begin(bg, p);
    p->head = bg->has_uint32;
    p->uinteger = bg->uinteger;
    p->ulow = bg->ulow;
    int64_t m = n - p->head; /* halves drawn from words */
    bg->has_uint32 = 0;
    if (m > 0) {
        /* numpy keeps the last word's high half in uinteger even once it is used */
        finish(bg, p, (m + 1) / 2);
        bg->has_uint32 = m % 2;
        bg->uinteger = (uint32_t)(bg->buffer[bg->buffer_pos - 1] >> 32);
        bg->ulow = (uint32_t)bg->buffer[bg->buffer_pos - 1];
    }
}

/* ------------------------------------------------------------------ big integers */

/* value (a Python int, 0 <= value < 2**bits, bits <= 64 n) into n words, least
 * significant first; else ValueError in numpy's words, naming `name`. 0 / -1. */
static int
int_words(PyObject *value, const char *name, int n, int bits, uint64_t *out)
{
    PyObject *v = PyNumber_Index(value);
    if (v == NULL)
        return -1;
    PyObject *limit = NULL, *shift = PyLong_FromLong(bits), *one = PyLong_FromLong(1);
    int rc = -1;
    if (shift && one && (limit = PyNumber_Lshift(one, shift)) != NULL) {
        PyObject *zero = PyLong_FromLong(0);
        int neg = zero ? PyObject_RichCompareBool(v, zero, Py_LT) : -1;
        int big = PyObject_RichCompareBool(v, limit, Py_GE);
        Py_XDECREF(zero);
        if (neg == 1 || big == 1)
            PyErr_Format(PyExc_ValueError, "%s must be positive and less than 2**%d.", name,
                         bits);
        else if (neg == 0 && big == 0)
            rc = 0;
    }
    PyObject *w = v, *s64 = PyLong_FromLong(64);
    Py_INCREF(w);
    for (int i = 0; rc == 0 && i < n; i++) {
        out[i] = PyLong_AsUnsignedLongLongMask(w);
        PyObject *next = s64 ? PyNumber_Rshift(w, s64) : NULL;
        Py_SETREF(w, next);
        if (w == NULL || (out[i] == (uint64_t)-1 && PyErr_Occurred()))
            rc = -1;
    }
    Py_XDECREF(w);
    Py_XDECREF(s64);
    Py_XDECREF(limit);
    Py_XDECREF(shift);
    Py_XDECREF(one);
    Py_DECREF(v);
    return rc;
}

/* An int below 2**bits, or a sequence of n ints each below 2**64, the last below
 * 2**(bits - 64 (n - 1)) (numpy's array form). 0 / -1. */
static int
parse_words(PyObject *obj, const char *name, int n, int bits, uint64_t *out)
{
    if (PyLong_Check(obj) || !PySequence_Check(obj))
        return int_words(obj, name, n, bits, out);
    PyObject *seq = PyUnicode_Check(obj) || PyBytes_Check(obj) ? NULL : PySequence_Fast(obj, "");
    if (seq == NULL) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be an int or a sequence of %d ints, got %.200s",
                     name, n, Py_TYPE(obj)->tp_name);
        return -1;
    }
    int rc = 0;
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        PyErr_Format(PyExc_ValueError, "%s must have %d elements when using array form", name, n);
        rc = -1;
    }
    for (int i = 0; rc == 0 && i < n; i++)
        rc = int_words(PySequence_Fast_GET_ITEM(seq, i), name, 1, 64, &out[i]);
    Py_DECREF(seq);
    int top = bits - 64 * (n - 1);
    if (rc == 0 && top < 64 && out[n - 1] >> top) {
        PyErr_Format(PyExc_ValueError, "%s must be positive and less than 2**%d.", name, bits);
        rc = -1;
    }
    return rc;
}

/* The Python int of n words. New ref or NULL. */
static PyObject *
words_int(const uint64_t *w, int n)
{
    PyObject *v = PyLong_FromLong(0), *s64 = PyLong_FromLong(64);
    for (int i = n - 1; v && s64 && i >= 0; i--) {
        PyObject *word = PyLong_FromUnsignedLongLong(w[i]);
        PyObject *sh = word ? PyNumber_Lshift(v, s64) : NULL;
        Py_SETREF(v, sh ? PyNumber_Or(sh, word) : NULL);
        Py_XDECREF(sh);
        Py_XDECREF(word);
    }
    Py_XDECREF(s64);
    return v;
}

/* ------------------------------------------------------------------ the type */

static PyObject *
seed_sequence(cukit_state *st, PyObject *seed)
{
    PyObject *mod = PyImport_ImportModule("numpy.random.bit_generator");
    if (mod == NULL)
        return NULL;
    PyObject *iface = PyObject_GetAttrString(mod, "ISeedSequence"), *out = NULL;
    int is = iface && seed != Py_None ? PyObject_IsInstance(seed, iface) : 0;
    if (is == 1)
        out = Py_NewRef(seed);
    else if (is == 0 && !PyErr_Occurred())
        out = PyObject_CallMethod(mod, "SeedSequence", "O", seed);
    Py_XDECREF(iface);
    Py_DECREF(mod);
    return out;
}

/* A Philox (or Philox4x32, by type) on key and counter words (buffer reset), with
 * seed sequence `ss`. */
static ck_Philox *
philox_make(PyTypeObject *type, PyObject *ss, const uint64_t key[2], const uint64_t ctr[4])
{
    ck_Philox *bg = PyObject_New(ck_Philox, type);
    if (bg == NULL)
        return NULL;
    bg->st = cukit_state_of_type(type);
    bg->x32 = type == bg->st->compute->Philox4x32Type;
    memcpy(bg->key, key, sizeof bg->key);
    memcpy(bg->ctr, ctr, sizeof bg->ctr);
    reset_buffer(bg);
    bg->seed_seq = Py_NewRef(ss);
    return bg;
}

static PyObject *
philox_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"seed", "counter", "key", NULL};
    PyObject *seed = Py_None, *counter = Py_None, *key = Py_None;
    cukit_state *st = cukit_state_of_type(type);
    int x32 = type == st->compute->Philox4x32Type, nk = x32 ? 1 : 2, nc = 2 * nk;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, x32 ? "|OOO:Philox4x32" : "|OOO:Philox",
                                     kwlist, &seed, &counter, &key))
        return NULL;
    if (seed != Py_None && key != Py_None) {
        PyErr_SetString(PyExc_ValueError, "seed and key cannot be both used");
        return NULL;
    }
    if (cukit_numpy(st) < 0)
        return NULL;
    uint64_t k[2] = {0, 0}, c[4] = {0, 0, 0, 0};
    PyObject *ss = seed_sequence(st, seed);
    if (ss == NULL)
        return NULL;
    if (key != Py_None) {
        if (parse_words(key, "key", nk, 64 * nk, k) < 0)
            goto error;
    }
    else {
        PyObject *u64 = PyObject_GetAttrString(st->numpy, "uint64");
        PyObject *state = u64 ? PyObject_CallMethod(ss, "generate_state", "iO", nk, u64) : NULL;
        int rc = state ? parse_words(state, "key", nk, 64 * nk, k) : -1;
        Py_XDECREF(state);
        Py_XDECREF(u64);
        if (rc < 0)
            goto error;
    }
    if (counter != Py_None && parse_words(counter, "counter", nc, x32 ? 127 : 256, c) < 0)
        goto error;
    ck_Philox *bg = philox_make(type, ss, k, c);
    Py_DECREF(ss);
    return (PyObject *)bg;
error:
    Py_DECREF(ss);
    return NULL;
}

static void
philox_dealloc(ck_Philox *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_XDECREF(self->seed_seq);
    PyObject_Free(self);
    Py_DECREF(tp);
}

/* numpy.array(words, dtype=uint64). New ref or NULL. */
static PyObject *
u64_array(cukit_state *st, const uint64_t *w, int n)
{
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(w[i]);
        if (v == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, v);
    }
    PyObject *out = list ? PyObject_CallFunction(st->np_asarray, "Os", list, "uint64") : NULL;
    Py_XDECREF(list);
    return out;
}

static PyObject *
philox_get_state(ck_Philox *self, void *closure)
{
    cukit_state *st = self->st;
    if (cukit_numpy(st) < 0)
        return NULL;
    PyObject *ctr = u64_array(st, self->ctr, ctr_words(self));
    PyObject *key = u64_array(st, self->key, key_words(self));
    PyObject *buf = u64_array(st, self->buffer, 4), *out = NULL;
    if (ctr && key && buf)
        out = Py_BuildValue("{s:s,s:{s:O,s:O},s:O,s:i,s:i,s:k}", "bit_generator",
                            self->x32 ? "Philox4x32" : "Philox",
                            "state", "counter", ctr, "key", key, "buffer", buf, "buffer_pos",
                            self->buffer_pos, "has_uint32", self->has_uint32, "uinteger",
                            (unsigned long)self->uinteger);
    Py_XDECREF(ctr);
    Py_XDECREF(key);
    Py_XDECREF(buf);
    /* Philox4x32's normals and integers draw a pending half from its whole word */
    if (out && self->x32) {
        PyObject *low = PyLong_FromUnsignedLong(self->ulow);
        if (low == NULL || PyDict_SetItemString(out, "uinteger_low", low) < 0)
            Py_CLEAR(out);
        Py_XDECREF(low);
    }
    return out;
}

static int
philox_set_state(ck_Philox *self, PyObject *value, void *closure)
{
    if (value == NULL || !PyDict_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "state must be a dict like Philox.state");
        return -1;
    }
    PyObject *name = PyDict_GetItemString(value, "bit_generator"); /* borrowed */
    PyObject *inner = PyDict_GetItemString(value, "state");
    const char *kind = self->x32 ? "Philox4x32" : "Philox";
    if (name == NULL || !PyUnicode_Check(name) || PyUnicode_CompareWithASCIIString(name, kind) ||
        inner == NULL || !PyDict_Check(inner)) {
        PyErr_Format(PyExc_ValueError, "state must be for a %s RNG", kind);
        return -1;
    }
    PyObject *ctr = PyDict_GetItemString(inner, "counter"), *key = PyDict_GetItemString(inner, "key");
    PyObject *buf = PyDict_GetItemString(value, "buffer");
    PyObject *pos = PyDict_GetItemString(value, "buffer_pos");
    PyObject *has = PyDict_GetItemString(value, "has_uint32");
    PyObject *uint = PyDict_GetItemString(value, "uinteger");
    if (!ctr || !key || !buf || !pos || !has || !uint) {
        PyErr_Format(PyExc_ValueError, "state must be for a %s RNG: it needs counter, key, "
                     "buffer, buffer_pos, has_uint32 and uinteger", kind);
        return -1;
    }
    uint64_t c[4] = {0, 0, 0, 0}, k[2] = {0, 0}, b[4], u;
    long p = PyLong_AsLong(pos), h = PyLong_AsLong(has);
    if (PyErr_Occurred() || parse_words(ctr, "counter", ctr_words(self), ctr_bits(self), c) < 0 ||
        parse_words(key, "key", key_words(self), 64 * key_words(self), k) < 0 ||
        parse_words(buf, "buffer", 4, 256, b) < 0 || int_words(uint, "uinteger", 1, 64, &u) < 0)
        return -1;
    /* optional (a state written before it existed): 0 */
    PyObject *low = self->x32 ? PyDict_GetItemString(value, "uinteger_low") : NULL;
    uint64_t ul = 0;
    if (low && int_words(low, "uinteger_low", 1, 32, &ul) < 0)
        return -1;
    if (p < 0 || p > 4 || u > 0xffffffffULL) {
        PyErr_SetString(PyExc_ValueError, "state: buffer_pos must be 0 to 4 and uinteger below "
                        "2**32");
        return -1;
    }
    memcpy(self->ctr, c, sizeof c);
    memcpy(self->key, k, sizeof k);
    memcpy(self->buffer, b, sizeof b);
    self->buffer_pos = (int)p;
    self->has_uint32 = h != 0;
    self->uinteger = (uint32_t)u;
    self->ulow = (uint32_t)ul;
    return 0;
}

static PyObject *
philox_random_raw(ck_Philox *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"size", "output", "stream", NULL};
    PyObject *size = Py_None, *stream = Py_None;
    int output = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|Op$O:random_raw", kwlist, &size, &output,
                                     &stream))
        return NULL;
    ck_rand_params p;
    memset(&p, 0, sizeof p);
    if (size == Py_None) { /* one word, computed here as numpy returns it: an int */
        ck_philox_take64(self, 1, &p);
        if (!output)
            Py_RETURN_NONE;
        return PyLong_FromUnsignedLongLong(p.buf[p.pos]);
    }
    if (!output) {
        Py_ssize_t n = 1;
        PyObject *t = PyIndex_Check(size) ? PyTuple_Pack(1, size) : PySequence_Tuple(size);
        for (Py_ssize_t i = 0; t && i < PyTuple_GET_SIZE(t); i++) {
            Py_ssize_t d = PyNumber_AsSsize_t(PyTuple_GET_ITEM(t, i), PyExc_ValueError);
            if (d < 0) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "negative dimensions are not allowed");
                Py_CLEAR(t);
                break;
            }
            n *= d;
        }
        if (t == NULL)
            return NULL;
        Py_DECREF(t);
        if (n > 0)
            ck_philox_take64(self, n, &p);
        Py_RETURN_NONE;
    }
    PyObject *name = PyUnicode_FromString("uint64");
    PyObject *dtype = name ? cukit_resolve_dtype(self->st, name) : NULL;
    Py_XDECREF(name);
    PyObject *out = dtype ? ck_random_draw(self, CK_RAND_RAW, dtype, size, NULL, stream, &p,
                                              "random_raw()")
                          : NULL;
    Py_XDECREF(dtype);
    return out;
}

/* counter += delta (mod 2**256; 2**127 for Philox4x32), buffers reset: numpy's advance. */
static int
advance_by(ck_Philox *bg, PyObject *delta)
{
    PyObject *one = PyLong_FromLong(1), *s = PyLong_FromLong(ctr_bits(bg));
    PyObject *mod = one && s ? PyNumber_Lshift(one, s) : NULL;
    PyObject *d = mod ? PyNumber_Remainder(delta, mod) : NULL;
    uint64_t w[4];
    int rc = d ? int_words(d, "delta", ctr_words(bg), ctr_bits(bg), w) : -1;
    Py_XDECREF(one);
    Py_XDECREF(s);
    Py_XDECREF(mod);
    Py_XDECREF(d);
    if (rc < 0)
        return -1;
    add_ctr(bg, bg->ctr, w);
    reset_buffer(bg);
    return 0;
}

static PyObject *
philox_advance(ck_Philox *self, PyObject *delta)
{
    if (!PyIndex_Check(delta)) {
        PyErr_Format(PyExc_TypeError, "advance(delta): delta must be an int, got %.200s",
                     Py_TYPE(delta)->tp_name);
        return NULL;
    }
    if (advance_by(self, delta) < 0)
        return NULL;
    return Py_NewRef(self);
}

static PyObject *
philox_jumped(ck_Philox *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"jumps", NULL};
    PyObject *jumps = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O!:jumped", kwlist, &PyLong_Type, &jumps))
        return NULL;
    /* numpy gives the copy a fresh seed sequence: spawning from it is not tied to self */
    PyObject *ss = seed_sequence(self->st, Py_None);
    if (ss == NULL)
        return NULL;
    ck_Philox *bg = philox_make(Py_TYPE(self), ss, self->key, self->ctr);
    Py_DECREF(ss);
    /* the counter's upper half: 2**128 blocks (numpy's); 2**64 for Philox4x32 (its
     * counter has 127 bits, so jumps repeat after 2**63) */
    PyObject *shift = PyLong_FromLong(32 * ctr_words(self)), *one = PyLong_FromLong(1);
    PyObject *step = shift && one ? PyNumber_Lshift(one, shift) : NULL;
    PyObject *delta = step ? (jumps ? PyNumber_Multiply(jumps, step) : Py_NewRef(step)) : NULL;
    if (bg && (delta == NULL || advance_by(bg, delta) < 0))
        Py_CLEAR(bg);
    Py_XDECREF(shift);
    Py_XDECREF(one);
    Py_XDECREF(step);
    Py_XDECREF(delta);
    return (PyObject *)bg;
}

static PyObject *
philox_spawn(ck_Philox *self, PyObject *arg)
{
    PyObject *children = PyObject_CallMethod(self->seed_seq, "spawn", "O", arg);
    if (children == NULL)
        return NULL;
    PyObject *seq = PySequence_Fast(children, "SeedSequence.spawn did not return a sequence");
    Py_DECREF(children);
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *bg = PyObject_CallOneArg((PyObject *)Py_TYPE(self),
                                           PySequence_Fast_GET_ITEM(seq, i));
        if (bg == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, bg);
    }
    Py_DECREF(seq);
    return out;
}

static PyObject *
philox_get_seed_seq(ck_Philox *self, void *closure)
{
    return Py_NewRef(self->seed_seq);
}

static PyObject *
philox_get_counter(ck_Philox *self, void *closure)
{
    return words_int(self->ctr, ctr_words(self));
}

static PyObject *
philox_get_key(ck_Philox *self, void *closure)
{
    return words_int(self->key, key_words(self));
}

static PyObject *
philox_repr(ck_Philox *self)
{
    PyObject *key = words_int(self->key, key_words(self));
    PyObject *ctr = words_int(self->ctr, ctr_words(self));
    PyObject *r = key && ctr ? PyUnicode_FromFormat("%s(key=%S, counter=%S)",
                                                   self->x32 ? "Philox4x32" : "Philox", key, ctr)
                             : NULL;
    Py_XDECREF(key);
    Py_XDECREF(ctr);
    return r;
}

/* _take(n, halves): what a draw of n values takes, without a GPU: moves the state and
 * returns the launch parameters' bytes. For tests of the bookkeeping. */
static PyObject *
philox_take(ck_Philox *self, PyObject *args)
{
    long long n;
    int halves;
    if (!PyArg_ParseTuple(args, "Lp:_take", &n, &halves))
        return NULL;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "_take(n, halves): n must be at least 1");
        return NULL;
    }
    ck_rand_params p;
    memset(&p, 0, sizeof p);
    p.n = n;
    if (halves)
        ck_philox_take32(self, n, &p);
    else
        ck_philox_take64(self, n, &p);
    return PyBytes_FromStringAndSize((const char *)&p, sizeof p);
}

static PyMethodDef philox_methods[] = {
    {"_take", (PyCFunction)philox_take, METH_VARARGS,
     "_take(n, halves) -> bytes: move the state past a draw of n values (32-bit halves when "
     "halves) and return the kernel parameters it would launch with (tests)."},
    {"random_raw", (PyCFunction)(void (*)(void))philox_random_raw, METH_VARARGS | METH_KEYWORDS,
     "random_raw(size=None, output=True, *, stream=None): the next raw 64-bit words (for "
     "Philox, numpy's exactly). size=None gives one int (computed on the host); otherwise a uint64 "
     "cukit.Array made on the GPU; output=False only moves the state past them."},
    {"advance", (PyCFunction)philox_advance, METH_O,
     "advance(delta) -> self: add delta to the counter (one counter step is a block of four "
     "64-bit words) and empty the buffers, as numpy's Philox.advance."},
    {"jumped", (PyCFunction)(void (*)(void))philox_jumped, METH_VARARGS | METH_KEYWORDS,
     "jumped(jumps=1): a copy whose counter is jumps * 2**128 blocks ahead for Philox "
     "(numpy's Philox.jumped), jumps * 2**64 for Philox4x32 (modulo its 127-bit counter), a "
     "stream that does not overlap this one."},
    {"spawn", (PyCFunction)philox_spawn, METH_O,
     "spawn(n) -> list of n bit generators of this type seeded from children of this one's "
     "SeedSequence."},
    {NULL},
};

static PyGetSetDef philox_getset[] = {
    {"state", (getter)philox_get_state, (setter)philox_set_state,
     "The state as numpy.random.Philox's state dict (readable and writable; a numpy "
     "Philox's state can be set on a cukit Philox and the other way)."},
    {"seed_seq", (getter)philox_get_seed_seq, NULL, "The numpy SeedSequence it was seeded from."},
    {"counter", (getter)philox_get_counter, NULL,
     "The counter, as an int (256 bits; 127 for Philox4x32)."},
    {"key", (getter)philox_get_key, NULL, "The key, as an int (128 bits; 64 for Philox4x32)."},
    {NULL},
};

/* What both types share: all but the name and the doc. */
#define BIT_GENERATOR_SLOTS                                                                   \
    {Py_tp_new, philox_new}, {Py_tp_dealloc, philox_dealloc}, {Py_tp_repr, philox_repr},     \
        {Py_tp_methods, philox_methods}, {Py_tp_getset, philox_getset}, {0, NULL}
#define BIT_GENERATOR_SPEC(type_name, slot_array)                                             \
    {.name = type_name, .basicsize = sizeof(ck_Philox),                                   \
     .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE, .slots = slot_array}

static PyType_Slot philox_slots[] = {
    {Py_tp_doc, "Philox(seed=None, counter=None, key=None): the Philox4x64-10 bit generator, "
                "with numpy.random.Philox's meaning of each argument and the same stream: a "
                "128-bit key (from a numpy SeedSequence of seed when key is None) and a "
                "256-bit counter. The state lives on the host; kernels draw on the GPU."},
    BIT_GENERATOR_SLOTS,
};

static PyType_Slot philox4x32_slots[] = {
    {Py_tp_doc, "Philox4x32(seed=None, counter=None, key=None): the Philox4x32-10 bit "
                "generator (Random123's philox4x32_10, as cuRAND's and PyTorch's Philox), "
                "default_rng's: a 64-bit key (from a numpy SeedSequence of seed when key is "
                "None) and a 127-bit counter. Its 32-bit multiplies are native on a GPU, so "
                "draws run at memory speed; Philox is the one whose stream is numpy's. Block c "
                "of four 64-bit words is philox4x32_10 at counters 2c and 2c + 1, outputs "
                "2j and 2j + 1 the low and high halves of word j. Its state also keeps "
                "uinteger_low, the low half of the word whose high half is pending (its normals "
                "and integers draw that half with its word)."},
    BIT_GENERATOR_SLOTS,
};

static PyType_Spec philox_spec = BIT_GENERATOR_SPEC("cukit.random.Philox", philox_slots);
static PyType_Spec philox4x32_spec =
    BIT_GENERATOR_SPEC("cukit.random.Philox4x32", philox4x32_slots);

int
ck_philox_setup(PyObject *module, cukit_state *st)
{
    st->compute->PhiloxType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &philox_spec, NULL);
    if (st->compute->PhiloxType == NULL || PyModule_AddType(module, st->compute->PhiloxType) < 0)
        return -1;
    st->compute->Philox4x32Type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &philox4x32_spec, NULL);
    if (st->compute->Philox4x32Type == NULL || PyModule_AddType(module, st->compute->Philox4x32Type) < 0)
        return -1;
    return 0;
}

int
ck_is_bit_generator(cukit_state *st, PyObject *obj)
{
    return Py_IS_TYPE(obj, st->compute->PhiloxType) || Py_IS_TYPE(obj, st->compute->Philox4x32Type);
}
