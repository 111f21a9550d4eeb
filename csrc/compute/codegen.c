/* codegen.c - CUDA C for elementwise kernels: one loop per launch class around one
 * statement (a ufunc's call, or an ElementwiseKernel's operation)
 *
 * Every generated kernel is `extern "C" __global__ void ck(const ck_args p)`: one
 * struct by value whose layout ck_args_layout_of gives the host. The statement sees
 * operand k as CK_E<k>, an lvalue of its element (or the scalar's value), so the
 * same statement serves every class:
 *   VEC   one contiguous run, aligned: V elements per thread, vector loads/stores
 *   FLAT  one contiguous run: one element per thread, grid-stride
 *   N1-3  strided, 1 to 3 dimensions, 32-bit index and offsets
 *   NN    strided, any number of dimensions, 64-bit */
#include "compute/compute.h"

#include <stdarg.h>
#include <string.h>

int
ck_class_dims(int cls)
{
    switch (cls) {
    case CK_CLASS_N1: return 1;
    case CK_CLASS_N2: return 2;
    case CK_CLASS_N3: return 3;
    case CK_CLASS_NN: return CUKIT_MAXDIM;
    default: return 0;
    }
}

void
ck_args_layout_of(int nops, int cls, ck_args_layout *L)
{
    L->nd = ck_class_dims(cls);
    L->n_off = 16 * (size_t)nops;
    L->ndim_off = L->n_off + 8;
    L->shape_off = L->n_off + 16;
    L->stride_off = L->shape_off + 8 * (size_t)L->nd;
    size_t end = L->stride_off + 8 * (size_t)L->nd * (size_t)nops;
    L->size = (end + 15) / 16 * 16;
}

/* ------------------------------------------------------------------ a growing buffer */

typedef struct {
    char *p;
    size_t len, cap;
    int failed;
} sbuf;

static void
put(sbuf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list va;
        va_start(va, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, va);
        va_end(va);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if (b->p && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap <= b->len + (size_t)n)
            cap *= 2;
        char *grown = PyMem_Realloc(b->p, cap);
        if (grown == NULL) {
            b->failed = 1;
            return;
        }
        b->p = grown;
        b->cap = cap;
    }
}

/* The buffer as str, freeing it. New ref or NULL. */
static PyObject *
finish(sbuf *b)
{
    PyObject *s = b->failed ? PyErr_NoMemory()
                            : PyUnicode_FromStringAndSize(b->p ? b->p : "", (Py_ssize_t)b->len);
    PyMem_Free(b->p);
    return s;
}

/* ------------------------------------------------------------------ kernels */

/* `#define CK_E<k> ...` for every operand; `how` gives an array operand's access. */
enum { ACC_VEC, ACC_FLAT, ACC_OFF };
static void
defines(sbuf *b, const ck_operand *ops, int nops, int how)
{
    for (int k = 0; k < nops; k++) {
        put(b, "#undef CK_E%d\n", k);
        if (ops[k].scalar)
            put(b, "#define CK_E%d a%d\n", k, k);
        else if (ops[k].raw)
            put(b, "#define CK_E%d a%d\n", k, k);
        else if (how == ACC_VEC)
            put(b, "#define CK_E%d v%d.v[j_]\n", k, k);
        else if (how == ACC_FLAT)
            put(b, "#define CK_E%d a%d[i]\n", k, k);
        else
            put(b, "#define CK_E%d (*(T%d *)((char *)a%d + o%d))\n", k, k, k, k);
    }
}

/* The kernel over `ops` in class cls around `stmt`, after `head` (types, helpers). */
static PyObject *
kernel_source(const char *head, const ck_operand *ops, int nops, int cls, int vec,
              const char *stmt, const int *load_out)
{
    sbuf b = {0};
    int nd = ck_class_dims(cls);
    put(&b, "%s\n", ck_preamble);
    for (int k = 0; k < nops; k++)
        put(&b, "typedef %s T%d;\n",
            ops[k].scalar ? ck_dtypes[ops[k].tc].ctype_c : ck_dtypes[ops[k].tc].ctype, k);
    put(&b, "struct ck_args { ck_slot op[%d]; long long n; int ndim; int pad_;", nops);
    if (nd)
        put(&b, " long long shape[%d]; long long stride[%d][%d];", nd, nops, nd);
    put(&b, " };\n%s\n", head);
    put(&b, "extern \"C\" __global__ void __launch_bounds__(%d) ck(const ck_args p) {\n",
        CK_THREADS);
    for (int k = 0; k < nops; k++) {
        if (ops[k].scalar)
            put(&b, "    const T%d a%d = *(const T%d *)&p.op[%d];\n", k, k, k, k);
        else
            put(&b, "    T%d *const a%d = (T%d *)p.op[%d].lo;\n", k, k, k, k);
    }
    put(&b, "    const ck_index _ind{p.n};\n    (void)_ind;\n");
    if (cls == CK_CLASS_VEC) {
        put(&b, "    const long long n = p.n, step = (long long)gridDim.x * blockDim.x * %d;\n", vec);
        put(&b, "    for (long long b_ = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * %d; "
                "b_ < n; b_ += step) {\n", vec);
        put(&b, "        if (b_ + %d <= n) {\n", vec);
        for (int k = 0; k < nops; k++) {
            if (ops[k].scalar || ops[k].raw)
                continue;
            if (!ops[k].output || (load_out && load_out[k]))
                put(&b, "            ck_vec<T%d, %d> v%d = *(const ck_vec<T%d, %d> *)(a%d + b_);\n",
                    k, vec, k, k, vec, k);
            else
                put(&b, "            ck_vec<T%d, %d> v%d;\n", k, vec, k);
        }
        defines(&b, ops, nops, ACC_VEC);
        put(&b, "#pragma unroll\n            for (int j_ = 0; j_ < %d; j_++) {\n", vec);
        put(&b, "                const long long i = b_ + j_;\n                (void)i;\n");
        put(&b, "%s\n            }\n", stmt);
        for (int k = 0; k < nops; k++)
            if (ops[k].output && !ops[k].scalar && !ops[k].raw)
                put(&b, "            *(ck_vec<T%d, %d> *)(a%d + b_) = v%d;\n", k, vec, k, k);
        put(&b, "        }\n        else {\n");
        defines(&b, ops, nops, ACC_FLAT);
        put(&b, "            for (long long i = b_; i < n; i++) {\n%s\n            }\n", stmt);
        put(&b, "        }\n    }\n}\n");
    }
    else if (cls == CK_CLASS_FLAT) {
        put(&b, "    const long long n = p.n, step = (long long)gridDim.x * blockDim.x;\n");
        defines(&b, ops, nops, ACC_FLAT);
        put(&b, "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; "
                "i += step) {\n%s\n    }\n}\n", stmt);
    }
    else if (cls == CK_CLASS_NN) {
        put(&b, "    const long long n = p.n, step = (long long)gridDim.x * blockDim.x;\n");
        put(&b, "    const int nd_ = p.ndim;\n");
        defines(&b, ops, nops, ACC_OFF);
        put(&b, "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; "
                "i += step) {\n        long long r_ = i");
        for (int k = 0; k < nops; k++)
            if (!ops[k].scalar && !ops[k].raw)
                put(&b, ", o%d = 0", k);
        put(&b, ";\n        for (int d_ = nd_ - 1; d_ > 0; d_--) {\n"
                "            const long long c_ = r_ %% p.shape[d_];\n"
                "            r_ /= p.shape[d_];\n");
        for (int k = 0; k < nops; k++)
            if (!ops[k].scalar && !ops[k].raw)
                put(&b, "            o%d += c_ * p.stride[%d][d_];\n", k, k);
        put(&b, "        }\n");
        for (int k = 0; k < nops; k++)
            if (!ops[k].scalar && !ops[k].raw)
                put(&b, "        o%d += r_ * p.stride[%d][0];\n", k, k);
        put(&b, "%s\n    }\n}\n", stmt);
    }
    else { /* N1..N3: 32-bit */
        put(&b, "    const unsigned int n = (unsigned int)p.n, step = gridDim.x * blockDim.x;\n");
        for (int d = 1; d < nd; d++)
            put(&b, "    const unsigned int s%d_ = (unsigned int)p.shape[%d];\n", d, d);
        for (int k = 0; k < nops; k++)
            for (int d = 0; d < nd && !ops[k].scalar && !ops[k].raw; d++)
                put(&b, "    const int t%d_%d = (int)p.stride[%d][%d];\n", k, d, k, d);
        defines(&b, ops, nops, ACC_OFF);
        put(&b, "    for (unsigned int u_ = blockIdx.x * blockDim.x + threadIdx.x; u_ < n; "
                "u_ += step) {\n        const long long i = u_;\n        (void)i;\n"
                "        unsigned int r_ = u_;\n");
        for (int d = nd - 1; d >= 1; d--) {
            put(&b, "        const unsigned int c%d_ = r_ %% s%d_;\n        r_ /= s%d_;\n", d, d, d);
        }
        for (int k = 0; k < nops; k++) {
            if (ops[k].scalar || ops[k].raw)
                continue;
            put(&b, "        const int o%d = (int)r_ * t%d_0", k, k);
            for (int d = 1; d < nd; d++)
                put(&b, " + (int)c%d_ * t%d_%d", d, k, d);
            put(&b, ";\n");
        }
        put(&b, "%s\n    }\n}\n", stmt);
    }
    return finish(&b);
}

PyObject *
ck_ufunc_source(const ck_ufunc_body *body, const ck_operand *ops, int cls, int vec)
{
    char head[1024], call[512];
    int nops = body->nin + 1;
    size_t used = 0;
    used += (size_t)PyOS_snprintf(call + used, sizeof call - used, "%s(", body->func);
    for (int k = 1; k < nops; k++)
        used += (size_t)PyOS_snprintf(call + used, sizeof call - used, "%scv<%s>(x%d)",
                                      k > 1 ? ", " : "", ck_dtypes[body->ltc[k - 1]].ctype_c, k);
    PyOS_snprintf(call + used, sizeof call - used, ")");
    used = (size_t)PyOS_snprintf(head, sizeof head, "CKD T0 ck_f(");
    for (int k = 1; k < nops; k++)
        used += (size_t)PyOS_snprintf(head + used, sizeof head - used, "%sT%d x%d",
                                      k > 1 ? ", " : "", k, k);
    /* Round to the loop's own result type first (float16 computes in float). */
    PyOS_snprintf(head + used, sizeof head - used, ") {\n    return cv<T0>(cv<%s>(%s));\n}\n",
                  ck_dtypes[body->rtc].ctype, call);
    char stmt[256];
    used = (size_t)PyOS_snprintf(stmt, sizeof stmt, "                CK_E0 = ck_f(");
    for (int k = 1; k < nops; k++)
        used += (size_t)PyOS_snprintf(stmt + used, sizeof stmt - used, "%sCK_E%d",
                                      k > 1 ? ", " : "", k);
    PyOS_snprintf(stmt + used, sizeof stmt - used, ");");
    return kernel_source(head, ops, nops, cls, vec, stmt, NULL);
}

PyObject *
ck_custom_source(const char *head, const ck_operand *ops, int nops, int cls, int vec,
                 const char *stmt, const int *load_out)
{
    return kernel_source(head, ops, nops, cls, vec, stmt, load_out);
}
