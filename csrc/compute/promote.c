/* promote.c - element types of array math: numpy 2's promotion and casting rules
 * (NEP 50 weak Python scalars), and host conversion of scalars for a kernel
 *
 * The rules are numpy's, written once as functions of kind and size; each ufunc
 * turns them into its own table of loops at creation (ufunc.c), so a call only
 * indexes a table. tests/test_array_math.py checks every pair against numpy. */
#include "compute/compute.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const ck_dtype ck_dtypes[CK_NT] = {
    [CUKIT_TC_BOOL] = {'?', 'b', 1, "bool", "bool", "bool"},
    [CUKIT_TC_I8] = {'b', 'i', 1, "int8", "i8", "i8"},
    [CUKIT_TC_U8] = {'B', 'u', 1, "uint8", "u8", "u8"},
    [CUKIT_TC_I16] = {'h', 'i', 2, "int16", "i16", "i16"},
    [CUKIT_TC_U16] = {'H', 'u', 2, "uint16", "u16", "u16"},
    [CUKIT_TC_I32] = {'i', 'i', 4, "int32", "i32", "i32"},
    [CUKIT_TC_U32] = {'I', 'u', 4, "uint32", "u32", "u32"},
    [CUKIT_TC_I64] = {'q', 'i', 8, "int64", "i64", "i64"},
    [CUKIT_TC_U64] = {'Q', 'u', 8, "uint64", "u64", "u64"},
    [CUKIT_TC_F16] = {'e', 'f', 2, "float16", "f16", "float"},
    [CUKIT_TC_BF16] = {'E', 'f', 2, "bfloat16", "bf16", "float"},
    [CUKIT_TC_F32] = {'f', 'f', 4, "float32", "float", "float"},
    [CUKIT_TC_F64] = {'d', 'f', 8, "float64", "double", "double"},
    [CUKIT_TC_C64] = {'F', 'c', 8, "complex64", "c64", "c64"},
    [CUKIT_TC_C128] = {'D', 'c', 16, "complex128", "c128", "c128"},
    /* ml_dtypes' type characters; astype only (ck_math_tc leaves them out) */
    [CUKIT_TC_F8E4M3] = {'4', 'f', 1, "float8_e4m3fn", "f8e4m3", "float", 1},
    [CUKIT_TC_F8E5M2] = {'5', 'f', 1, "float8_e5m2", "f8e5m2", "float", 1},
};

const char *
ck_dtype_hint(int tc)
{
    return tc > 0 && tc < CK_NT && ck_dtypes[tc].cast_only
               ? ": float8 is a storage type in cukit; convert first with "
                 ".astype(numpy.float32) or .astype('bfloat16'), and back with .astype(...)"
               : "";
}

int
ck_tc_of_char(char c)
{
    if (c == 'l')
        c = 'q';
    else if (c == 'L')
        c = 'Q';
    for (int tc = 0; tc < CK_NT; tc++)
        if (ck_dtypes[tc].ch == c && c != 0)
            return tc;
    return -1;
}

/* The typecode of kind `kind` and `size` bytes, or -1 (float16 for 2-byte floats:
 * bfloat16 never comes out of the rules of kind and size). */
static int
tc_of(char kind, int size)
{
    for (int tc = 0; tc < CK_NT; tc++)
        if (ck_dtypes[tc].kind == kind && ck_dtypes[tc].size == size && ck_dtypes[tc].ch &&
            tc != CUKIT_TC_BF16)
            return tc;
    return -1;
}

/* bfloat16 (ml_dtypes' numpy dtype) next to `other`: the dtype numpy's ufuncs give,
 * np.add(bfloat16 array, other array). Only bool, int8 and uint8 cast safely to
 * bfloat16; bfloat16 casts safely to float32 and wider; so bfloat16 meets float16 and
 * the 16-bit ints in float32, the wider ints in float64 (np.result_type raises
 * DTypePromotionError for those pairs; the ufuncs, and cukit, answer). */
static int
promote_bf16(int other)
{
    const ck_dtype *d = &ck_dtypes[other];
    if (other == CUKIT_TC_BF16 || d->kind == 'b' || ((d->kind == 'i' || d->kind == 'u') && d->size == 1))
        return CUKIT_TC_BF16;
    if (d->kind == 'c')
        return other;
    if (d->kind == 'f')
        return d->size <= 4 ? CUKIT_TC_F32 : other;
    return d->size == 2 ? CUKIT_TC_F32 : CUKIT_TC_F64;
}

/* ------------------------------------------------------------------ ml_dtypes' versions */

/* What the installed ml_dtypes does where its versions differ (0 before it is
 * imported): CK_ML_VIA_F32(t, w) set where float64 (w 0) or a wide int (w 1) rounds to
 * t (0 bfloat16, 1 float8_e4m3fn, 2 float8_e5m2) through float32, as older versions
 * did, instead of once; CK_ML_CX_BF16 where complex casts to bfloat16 by same_kind. */
#define CK_ML_VIA_F32(target, wide_int) (1 << (2 * (target) + (wide_int)))
#define CK_ML_CX_BF16 64

/* The probe of ck_ml_rules, in Python over numpy (n) and ml_dtypes (m): for each small
 * type and each wide source (float64, int64), a value just past a tie of the small type
 * is cast directly and through float32; through float32 the tie is kept and rounds to
 * even, rounded once it rounds up. Equal results set the bit (CK_ML_VIA_F32). */
static const char ml_probe[] =
    "sum(1 << (2 * k + w) for k, (name, b) in enumerate("
    "        [('bfloat16', 8), ('float8_e4m3fn', 4), ('float8_e5m2', 3)]) for w in (0, 1)"
    "    if (lambda x, t: x.astype(t)[0] == x.astype(n.float32).astype(t)[0])("
    "        n.array([(1 << 40) + (1 << (40 - b)) + 1], 'int64') if w"
    "        else n.array([1 + 2.0 ** -b + 2.0 ** -40]), getattr(m, name)))"
    " + CX * bool(n.can_cast(n.complex64, m.bfloat16, 'same_kind'))";

/* What the installed ml_dtypes does where its versions differ, read from it once it is
 * imported (before, none of its types can be in use). Kept for the process, not in
 * module state: it is a fact of the one ml_dtypes the process imported. -1: not read. */
static int ml_rules = -1;

static int
ck_ml_rules(void)
{
    if (ml_rules >= 0)
        return ml_rules;
    PyObject *name = PyUnicode_FromString("ml_dtypes");
    PyObject *ml = name ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    if (ml == NULL) {
        PyErr_Clear();
        return 0;  /* not imported: no rule is asked yet; read again next time */
    }
    PyObject *np = PyImport_ImportModule("numpy"), *g = PyDict_New(), *cx = PyLong_FromLong(CK_ML_CX_BF16);
    PyObject *r = NULL;
    if (np && g && cx && PyDict_SetItemString(g, "n", np) == 0 && PyDict_SetItemString(g, "m", ml) == 0 &&
        PyDict_SetItemString(g, "CX", cx) == 0)
        r = PyRun_String(ml_probe, Py_eval_input, g, g);
    long v = r ? PyLong_AsLong(r) : -1;
    Py_XDECREF(r);
    Py_XDECREF(cx);
    Py_XDECREF(g);
    Py_XDECREF(np);
    Py_DECREF(ml);
    if (v < 0) {  /* an ml_dtypes without these types: today's rules */
        PyErr_Clear();
        v = 0;
    }
    ml_rules = (int)v;
    return ml_rules;
}

/* "#define CK_ML <rules>\n" where the rules are not the preamble's default; "". */
const char *
ck_ml_define(void)
{
    static char text[32];
    int r = ck_ml_rules();
    if (r == 0)
        return "";
    snprintf(text, sizeof text, "#define CK_ML %d\n", r);
    return text;
}

/* numpy's can_cast with ml_dtypes' bfloat16 on either side (its casts' registered
 * safety): safe from bool, int8, uint8 and to float32 and wider; every real dtype casts
 * to bfloat16 by same_kind, complex too where the installed ml_dtypes registers it
 * (CK_ML_CX_BF16), and bfloat16 to nothing narrower than float32, float16 included. */
static int
can_cast_bf16(int from, int to, int same_kind)
{
    if (from == to)
        return 1;
    if (to == CUKIT_TC_BF16) {
        const ck_dtype *f = &ck_dtypes[from];
        if (f->kind == 'c' && same_kind)
            return (ck_ml_rules() & CK_ML_CX_BF16) != 0;
        return same_kind || f->kind == 'b' || ((f->kind == 'i' || f->kind == 'u') && f->size == 1);
    }
    const ck_dtype *t = &ck_dtypes[to];
    return (t->kind == 'f' && t->size >= 4) || t->kind == 'c';
}

/* Bytes of the smallest float that holds every value of tc (numpy's view: int8 and
 * uint8 fit float16, 16-bit ints float32, wider ints float64); a complex's part. */
static int
float_size(int tc)
{
    const ck_dtype *d = &ck_dtypes[tc];
    switch (d->kind) {
    case 'b': return 2;
    case 'i': case 'u': return d->size <= 1 ? 2 : d->size == 2 ? 4 : 8;
    case 'f': return d->size;
    default: return d->size / 2;
    }
}

int
ck_promote(int a, int b)
{
    if (!ck_math_tc(a) || !ck_math_tc(b))
        return -1;
    if (a == b)
        return a;
    if (a == CUKIT_TC_BF16 || b == CUKIT_TC_BF16)
        return promote_bf16(a == CUKIT_TC_BF16 ? b : a);
    char ka = ck_dtypes[a].kind, kb = ck_dtypes[b].kind;
    int sa = ck_dtypes[a].size, sb = ck_dtypes[b].size;
    if (ka == 'b')
        return b;
    if (kb == 'b')
        return a;
    if ((ka == 'i' || ka == 'u') && (kb == 'i' || kb == 'u')) {
        if (ka == kb)
            return sa >= sb ? a : b;
        int ssize = ka == 'i' ? sa : sb, usize = ka == 'u' ? sa : sb;
        if (ssize > usize)
            return ka == 'i' ? a : b;
        return usize >= 8 ? CUKIT_TC_F64 : tc_of('i', 2 * usize);
    }
    int fs = float_size(a) > float_size(b) ? float_size(a) : float_size(b);
    if (ka == 'c' || kb == 'c')
        return fs <= 4 ? CUKIT_TC_C64 : CUKIT_TC_C128;
    return tc_of('f', fs);
}

static int
kind_rank(char k)
{
    return k == 'b' ? 0 : k == 'u' ? 1 : k == 'i' ? 2 : k == 'f' ? 3 : 4;
}

int
ck_can_cast(int from, int to, int same_kind)
{
    if (!ck_math_tc(from) || !ck_math_tc(to))
        return 0;
    if (from == to)
        return 1;
    if (from == CUKIT_TC_BF16 || to == CUKIT_TC_BF16)
        return can_cast_bf16(from, to, same_kind);
    const ck_dtype *f = &ck_dtypes[from], *t = &ck_dtypes[to];
    if (same_kind && kind_rank(f->kind) <= kind_rank(t->kind))
        return 1;
    if (f->kind == 'b')
        return 1;
    switch (f->kind) {
    case 'i': case 'u':
        if (t->kind == f->kind)
            return t->size >= f->size;
        if (t->kind == 'i')
            return t->size > f->size;
        if (t->kind == 'f')
            return float_size(from) <= t->size;
        if (t->kind == 'c')
            return float_size(from) <= t->size / 2;
        return 0;
    case 'f':
        return (t->kind == 'f' && t->size >= f->size) || (t->kind == 'c' && t->size / 2 >= f->size);
    case 'c':
        return t->kind == 'c' && t->size >= f->size;
    }
    return 0;
}

int
ck_weak_tc(int weak, int strong)
{
    char k = strong >= 0 ? ck_dtypes[strong].kind : 0;
    switch (weak) {
    case CK_WEAK_BOOL:
        return strong >= 0 ? strong : CUKIT_TC_BOOL;
    case CK_WEAK_INT:
        return (strong < 0 || k == 'b') ? CUKIT_TC_I64 : strong;
    case CK_WEAK_FLOAT:
        return (strong < 0 || k == 'b' || k == 'i' || k == 'u') ? CUKIT_TC_F64 : strong;
    case CK_WEAK_COMPLEX:
        if (strong < 0 || k == 'b' || k == 'i' || k == 'u')
            return CUKIT_TC_C128;
        if (k == 'f')
            return strong == CUKIT_TC_F64 ? CUKIT_TC_C128 : CUKIT_TC_C64;
        return strong;
    }
    return strong;
}

/* ------------------------------------------------------------------ half */

unsigned short
ck_double_to_half(double d)
{
    uint64_t bits;
    memcpy(&bits, &d, 8);
    unsigned short sign = (unsigned short)((bits >> 48) & 0x8000);
    int exp = (int)((bits >> 52) & 0x7ff);
    uint64_t mant = bits & ((1ULL << 52) - 1);
    if (exp == 0x7ff) {
        if (mant == 0)
            return sign | 0x7c00;
        unsigned short payload = (unsigned short)(mant >> 42);
        return sign | 0x7c00 | (payload ? payload : 0x200);
    }
    int e = exp - 1023;
    if (e >= 16)
        return sign | 0x7c00;
    if (e < -25)
        return sign;
    if (e < -14) { /* a subnormal half: units of 2^-24 */
        uint64_t m = mant | (1ULL << 52);
        int s = 28 - e;
        uint64_t h = m >> s, rem = m & ((1ULL << s) - 1), half = 1ULL << (s - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return sign | (unsigned short)h;
    }
    unsigned int h = (unsigned int)((e + 15) << 10) | (unsigned int)(mant >> 42);
    uint64_t rem = mant & ((1ULL << 42) - 1), half = 1ULL << 41;
    if (rem > half || (rem == half && (h & 1)))
        h++; /* a carry into the exponent is right, up to infinity */
    return sign | (unsigned short)h;
}

/* x to float rounded toward zero, the last bit set where that was inexact ("round to
 * odd"): rounded again to a type of 22 bits or fewer (bfloat16), it gives what one
 * rounding of x gives. */
static float
odd_float(double x)
{
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    if (x != x)
        return f;
    if (fabs((double)f) > fabs(x))
        u--; /* one step toward zero: the magnitude's bits are ordered as its values */
    memcpy(&f, &u, 4);
    if ((double)f != x)
        u |= 1u;
    memcpy(&f, &u, 4);
    return f;
}

unsigned short
ck_float_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: ml_dtypes keeps the sign, the payload is quiet */
        return (unsigned short)(((u >> 16) & 0x8000u) | 0x7fc0u);
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float
ck_bf16_to_float(unsigned short h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float
ck_half_to_float(unsigned short h)
{
    int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 0x400), exp - 25);
    return (h & 0x8000) ? -v : v;
}

/* ------------------------------------------------------------------ scalars */

static const struct {
    int tc;
    long long lo;
    unsigned long long hi;
} int_range[] = {
    {CUKIT_TC_I8, -128, 127},
    {CUKIT_TC_U8, 0, 255},
    {CUKIT_TC_I16, -32768, 32767},
    {CUKIT_TC_U16, 0, 65535},
    {CUKIT_TC_I32, -2147483647LL - 1, 2147483647},
    {CUKIT_TC_U32, 0, 4294967295ULL},
    {CUKIT_TC_I64, -9223372036854775807LL - 1, 9223372036854775807ULL},
    {CUKIT_TC_U64, 0, 18446744073709551615ULL},
};

int
ck_scalar_to(PyObject *v, int tc, int range_check, ck_slot *out)
{
    memset(out, 0, sizeof *out);
    const ck_dtype *d = &ck_dtypes[tc];
    if (d->kind == 'b') {
        int b = PyObject_IsTrue(v);
        if (b < 0)
            return -1;
        out->b[0] = (unsigned char)b;
        return 0;
    }
    if (d->kind == 'i' || d->kind == 'u') {
        PyObject *i = PyBool_Check(v) ? PyLong_FromLong(v == Py_True) : PyNumber_Index(v);
        if (i == NULL)
            return -1;
        int overflow = 0;
        long long s = PyLong_AsLongLongAndOverflow(i, &overflow);
        unsigned long long u = 0;
        int negative = overflow < 0 || (overflow == 0 && s < 0);
        if (overflow > 0) {
            u = PyLong_AsUnsignedLongLong(i);
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                overflow = 2; /* beyond 64 bits */
            }
        }
        if (s == -1 && PyErr_Occurred()) {
            Py_DECREF(i);
            return -1;
        }
        int ok = 0;
        for (size_t k = 0; k < sizeof int_range / sizeof *int_range; k++) {
            if (int_range[k].tc != tc)
                continue;
            if (overflow == 0)
                ok = negative ? s >= int_range[k].lo : (unsigned long long)s <= int_range[k].hi;
            else if (overflow == 1 && u <= int_range[k].hi)
                ok = 1;
            break;
        }
        if (!ok && range_check) {
            PyErr_Format(PyExc_OverflowError, "Python integer %S out of bounds for %s", i,
                         d->name);
            Py_DECREF(i);
            return -1;
        }
        unsigned long long bits = overflow == 1 ? u : (unsigned long long)s;
        Py_DECREF(i);
        memcpy(out->b, &bits, (size_t)d->size); /* little-endian: the low bytes */
        return 0;
    }
    if (d->kind == 'c') {
        Py_complex c = PyComplex_AsCComplex(v);
        if (c.real == -1.0 && PyErr_Occurred())
            return -1;
        if (tc == CUKIT_TC_C64) {
            float p[2] = {(float)c.real, (float)c.imag};
            memcpy(out->b, p, 8);
        }
        else {
            memcpy(out->b, &c.real, 8);
            memcpy(out->b + 8, &c.imag, 8);
        }
        return 0;
    }
    double x = PyFloat_AsDouble(v);
    if (x == -1.0 && PyErr_Occurred())
        return -1;
    if (tc == CUKIT_TC_F64) {
        memcpy(out->b, &x, 8);
    }
    else {
        /* bfloat16 from float64 as the installed ml_dtypes casts it: once, or through float32 */
        float f = tc == CUKIT_TC_F16 ? ck_half_to_float(ck_double_to_half(x))
                  : tc == CUKIT_TC_BF16
                      ? ck_bf16_to_float(ck_float_to_bf16(
                            ck_ml_rules() & CK_ML_VIA_F32(0, 0) ? (float)x : odd_float(x)))
                      : (float)x;
        memcpy(out->b, &f, 4);
    }
    return 0;
}
