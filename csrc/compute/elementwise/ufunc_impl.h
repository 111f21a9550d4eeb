/* ufunc_impl.h - compute/'s own: what ufunc.c (tables, dispatch) and ufunc_type.c (the
 * Python type, the Array's hooks) share; not for other layers */
#ifndef CUKIT_COMPUTE_UFUNC_IMPL_H
#define CUKIT_COMPUTE_UFUNC_IMPL_H

#include "compute/compute.h"

enum { OUT_SAME, OUT_BOOL, OUT_REAL };
enum {
    F_TRUEDIV = 1,   /* integer inputs divide in float64 */
    F_CMP = 2,       /* comparison: exact int64/uint64 loops, any Python int compares */
    F_COND = 4,      /* first input is a condition (where): cast to bool, not promoted */
    F_CAST = 8,      /* astype: the caller names the output type; casting is unsafe */
    F_PROMOTE3 = 16, /* three inputs promoted together (clip) */
    F_LOGICAL = 32,  /* two different input dtypes meet as bool (numpy 2's promoter) */
    F_NOBOOL = 64,   /* numpy refuses bool inputs (no implicit int8 loop) */
};

typedef struct {
    const char *name;
    int nin;
    const char *loops; /* numpy's type characters: one loop per character */
    int out;
    int flags;
    const char *doc;
} ufunc_def;

/* 'E' is bfloat16 (ml_dtypes' type character), placed where numpy's search meets it:
 * after float16, which it does not cast to safely, before float32, which it does */
#define ALL "?bBhHiIqQeEfdFD"
#define NUM "bBhHiIqQeEfdFD"
#define INTS "bBhHiIqQ"
#define FLT "eEfd"
#define FLTC "eEfdFD"

enum {
    U_ADD, U_SUB, U_MUL, U_TRUEDIV, U_FLOORDIV, U_MOD, U_POW, U_LSHIFT, U_RSHIFT, U_AND,
    U_OR, U_XOR, U_NEG, U_POS, U_ABS, U_INVERT, U_LT, U_LE, U_EQ, U_NE, U_GT, U_GE,
    U_COUNT = 70, /* entries of ck_ufunc_defs (checked at setup) */
    U_WHERE = U_COUNT - 3, U_CLIP = U_COUNT - 2, U_COPY = U_COUNT - 1,
    U_CONJ = 35, /* checked at setup */
};


extern const ufunc_def ck_ufunc_defs[U_COUNT];

#define NOLOOP 0xffff
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    cukit_state *st;               /* borrowed: the module outlives its ufuncs */
    const ufunc_def *def;          /* static */
    int index;                     /* into defs */
    PyObject *name;                /* strong ref: str */
    /* the loop for each input dtype (pair): loop input typecodes, l0 | l1 << 8 */
    unsigned short loop1[CK_NT];
    unsigned short loop2[CK_NT][CK_NT];
    ck_kcache cache;               /* loaded kernels by packed key */
} ck_Ufunc;

enum { MODE_CALL, MODE_OPERATOR };

/* Fill u's loop tables from its definition (numpy's linear search, done once). */
void ck_ufunc_build_tables(ck_Ufunc *u);
/* The type a loop's result has, before the cast to the output. */
int ck_result_tc(const ufunc_def *def, int ltc);
/* TypeError: no loop of def takes these input types. Returns -1. */
int ck_no_loop(const ufunc_def *def, const int *tc, int nin);
/* The one call: ufunc u on inputs in[0..nin) into out_o (NULL/None: a new array), on
 * stream_o. cast_tc >= 0 (astype) names the output dtype. New ref (the output) or NULL;
 * Py_NotImplemented in MODE_OPERATOR for operands that are not ours. */
PyObject *ck_dispatch(ck_Ufunc *u, PyObject *const *in, int nin, PyObject *out_o,
                      PyObject *stream_o, int mode, int cast_tc);

/* A public ufunc's call with numpy's dtype= (dtype_tc >= 0) and where= (NULL: none). */
PyObject *ck_dispatch_call(ck_Ufunc *u, PyObject *const *in, PyObject *out_o,
                           PyObject *stream_o, int dtype_tc, PyObject *where_o);
/* numpy's dtype=: the loop for input types tc[0..nin) whose result is `want` (the
 * normal one if it gives that, else the first every input casts to by same_kind) into
 * ltc. 0 / -1 with numpy's TypeError. */
int ck_loop_for_dtype(ck_Ufunc *u, const int *tc, int nin, int want, int *ltc);

/* clip(a, lo, hi) with None for no bound, and numpy's round (array_functions.c).
 * New ref or NULL. */
PyObject *ck_clip(cukit_state *st, PyObject *a, PyObject *lo, PyObject *hi, PyObject *out,
                  PyObject *stream);
PyObject *ck_round(cukit_state *st, PyObject *a, Py_ssize_t decimals, PyObject *out);

#endif /* CUKIT_COMPUTE_UFUNC_IMPL_H */
