/* codegen.c - CUDA C for elementwise kernels: one loop per launch class around one
 * statement (a ufunc's call, or an ElementwiseKernel's operation)
 *
 * Every generated kernel is `extern "C" __global__ void ck(const ck_args p_)`: one
 * struct by value whose layout ck_args_layout_of gives the host. The statement sees
 * operand k as CK_E<k>, an lvalue of its element (or the scalar's value), so the
 * same statement serves every class:
 *   VEC   one contiguous run, aligned: V elements per thread, vector loads/stores
 *   FLAT  one contiguous run: one element per thread, grid-stride
 *   N1-3  strided, 1 to 3 dimensions, 32-bit index and offsets
 *   NN    strided, any number of dimensions, 64-bit
 *   T2    2-D, with inputs transposed relative to the output: a block of 32 x 8 threads
 *         takes a 32 x 32 tile; each transposed input is read along its own fast
 *         dimension into shared memory, then every operand is walked along the
 *         output's, so that both reads and writes stay coalesced
 *
 * An ElementwiseKernel's loop_prep runs before the loop (where its parameters that
 * are scalars or raw pointers are visible by name) and after_loop after it; its
 * operation then becomes a lambda in the kernel, so it sees what loop_prep declares. */
#include "compute/builders.h"

#include <string.h>

int
ck_class_dims(int cls)
{
    switch (cls) {
    case CK_CLASS_N1: return 1;
    case CK_CLASS_N2: return 2;
    case CK_CLASS_T2: return 2;
    case CK_CLASS_N3: return 3;
    case CK_CLASS_NN: return CUKIT_MAXDIM;
    default: return 0;
    }
}

void
ck_args_layout_of(int nops, int cls, ck_args_layout *argblock)
{
    argblock->nd = ck_class_dims(cls);
    argblock->n_off = 16 * (size_t)nops;
    argblock->ndim_off = argblock->n_off + 8;
    argblock->shape_off = argblock->n_off + 16;
    argblock->stride_off = argblock->shape_off + 8 * (size_t)argblock->nd;
    size_t end = argblock->stride_off + 8 * (size_t)argblock->nd * (size_t)nops;
    argblock->size = (end + 15) / 16 * 16;
}

/* ------------------------------------------------------------------ kernels */

/* `#define CK_E<k> ...` for every operand; `how` gives an array operand's access. */
enum { ACC_VEC, ACC_FLAT, ACC_OFF };
static void
defines(ck_buf *b, const ck_operand *ops, int nops, int how)
{
    for (int k = 0; k < nops; k++) {
        ck_put(b, "#undef CK_E%d\n", k);
        if (ops[k].scalar)
            ck_put(b, "#define CK_E%d a%d_\n", k, k);
        else if (ops[k].raw)
            ck_put(b, "#define CK_E%d a%d_\n", k, k);
        else if (how == ACC_VEC)
            ck_put(b, "#define CK_E%d v%d.v[j_]\n", k, k);
        else if (how == ACC_FLAT)
            ck_put(b, "#define CK_E%d a%d_[i]\n", k, k);
        else if (ops[k].tiled)
            ck_put(b, "#define CK_E%d t%d_[threadIdx.x][j_]\n", k, k);
        else
            ck_put(b, "#define CK_E%d (*(T%d *)((char *)a%d_ + o%d))\n", k, k, k, k);
    }
}

/* The kernel over `ops` in class cls around `stmt`, after `head` (types, helpers);
 * `prep` (may be NULL) opens the kernel's body, `after` (may be NULL) closes it. */
static PyObject *
kernel_source(const char *head, const ck_operand *ops, int nops, int cls, int vec,
              const char *stmt, const int *load_out, const char *prep, const char *after)
{
    ck_buf b = {0};
    int nd = ck_class_dims(cls);
    const char *preamble = cukit_device_file(CK_PREAMBLE);
    if (preamble == NULL)
        return NULL;
    ck_put(&b, "%s%s\n", ck_ml_define(), preamble);
    for (int k = 0; k < nops; k++)
        ck_put(&b, "typedef %s T%d;\n",
            ops[k].scalar ? ck_dtypes[ops[k].tc].ctype_c : ck_dtypes[ops[k].tc].ctype, k);
    ck_put(&b, "struct ck_args { ck_slot op[%d]; long long n; int ndim; int pad_;", nops);
    if (nd)
        ck_put(&b, " long long shape[%d]; long long stride[%d][%d];", nd, nops, nd);
    ck_put(&b, " };\n%s\n", head);
    ck_put(&b, "extern \"C\" __global__ void __launch_bounds__(%d) ck(const ck_args p_) {\n",
        CK_THREADS);
    for (int k = 0; k < nops; k++) {
        if (ops[k].scalar)
            ck_put(&b, "    const T%d a%d_ = *(const T%d *)&p_.op[%d];\n", k, k, k, k);
        else
            ck_put(&b, "    T%d *const a%d_ = (T%d *)p_.op[%d].lo;\n", k, k, k, k);
    }
    ck_put(&b, "    const ck_index _ind{p_.n};\n    (void)_ind;\n");
    if (prep)
        ck_put(&b, "%s\n", prep);
    if (cls == CK_CLASS_VEC) {
        ck_put(&b, "    const long long n_ = p_.n, step_ = (long long)gridDim.x * blockDim.x * %d;\n", vec);
        ck_put(&b, "    for (long long b_ = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * %d; "
                "b_ < n_; b_ += step_) {\n", vec);
        ck_put(&b, "        if (b_ + %d <= n_) {\n", vec);
        for (int k = 0; k < nops; k++) {
            if (ops[k].scalar || ops[k].raw)
                continue;
            if (!ops[k].output || (load_out && load_out[k]))
                ck_put(&b, "            ck_vec<T%d, %d> v%d = *(const ck_vec<T%d, %d> *)(a%d_ + b_);\n",
                    k, vec, k, k, vec, k);
            else
                ck_put(&b, "            ck_vec<T%d, %d> v%d;\n", k, vec, k);
        }
        defines(&b, ops, nops, ACC_VEC);
        ck_put(&b, "#pragma unroll\n            for (int j_ = 0; j_ < %d; j_++) {\n", vec);
        ck_put(&b, "                const long long i = b_ + j_;\n                (void)i;\n");
        ck_put(&b, "%s\n            }\n", stmt);
        for (int k = 0; k < nops; k++)
            if (ops[k].output && !ops[k].scalar && !ops[k].raw)
                ck_put(&b, "            *(ck_vec<T%d, %d> *)(a%d_ + b_) = v%d;\n", k, vec, k, k);
        ck_put(&b, "        }\n        else {\n");
        defines(&b, ops, nops, ACC_FLAT);
        ck_put(&b, "            for (long long i = b_; i < n_; i++) {\n%s\n            }\n", stmt);
        ck_put(&b, "        }\n    }\n");
    }
    else if (cls == CK_CLASS_FLAT) {
        ck_put(&b, "    const long long n_ = p_.n, step_ = (long long)gridDim.x * blockDim.x;\n");
        defines(&b, ops, nops, ACC_FLAT);
        ck_put(&b, "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n_; "
                "i += step_) {\n%s\n    }\n", stmt);
    }
    else if (cls == CK_CLASS_T2) {
        /* blockDim (32, 8): tile rows r0_.., columns c0_.. of the [R_][C_] layout */
        ck_put(&b, "    const long long R_ = p_.shape[0], C_ = p_.shape[1];\n"
                "    const long long r0_ = (long long)blockIdx.y * 32, c0_ = (long long)blockIdx.x * 32;\n");
        for (int k = 0; k < nops; k++) {
            if (!ops[k].tiled)
                continue;
            ck_put(&b, "    __shared__ T%d t%d_[32][33];\n", k, k);
            ck_put(&b, "    for (int j_ = threadIdx.y; j_ < 32; j_ += 8) {\n"
                    "        const long long r_ = r0_ + threadIdx.x, c_ = c0_ + j_;\n"
                    "        if (r_ < R_ && c_ < C_)\n"
                    "            t%d_[j_][threadIdx.x] = *(const T%d *)((const char *)a%d_ + "
                    "r_ * p_.stride[%d][0] + c_ * p_.stride[%d][1]);\n    }\n",
                k, k, k, k, k);
        }
        ck_put(&b, "    __syncthreads();\n");
        defines(&b, ops, nops, ACC_OFF);
        ck_put(&b, "    for (int j_ = threadIdx.y; j_ < 32; j_ += 8) {\n"
                "        const long long r_ = r0_ + j_, c_ = c0_ + threadIdx.x;\n"
                "        if (r_ >= R_ || c_ >= C_)\n            continue;\n"
                "        const long long i = r_ * C_ + c_;\n        (void)i;\n");
        for (int k = 0; k < nops; k++)
            if (!ops[k].scalar && !ops[k].raw && !ops[k].tiled)
                ck_put(&b, "        const long long o%d = r_ * p_.stride[%d][0] + c_ * p_.stride[%d][1];\n",
                    k, k, k);
        ck_put(&b, "%s\n    }\n", stmt);
    }
    else if (cls == CK_CLASS_NN) {
        ck_put(&b, "    const long long n_ = p_.n, step_ = (long long)gridDim.x * blockDim.x;\n");
        ck_put(&b, "    const int nd_ = p_.ndim;\n");
        defines(&b, ops, nops, ACC_OFF);
        ck_put(&b, "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n_; "
                "i += step_) {\n        long long r_ = i");
        for (int k = 0; k < nops; k++)
            if (!ops[k].scalar && !ops[k].raw)
                ck_put(&b, ", o%d = 0", k);
        ck_put(&b, ";\n        for (int d_ = nd_ - 1; d_ > 0; d_--) {\n"
                "            const long long c_ = r_ %% p_.shape[d_];\n"
                "            r_ /= p_.shape[d_];\n");
        for (int k = 0; k < nops; k++)
            if (!ops[k].scalar && !ops[k].raw)
                ck_put(&b, "            o%d += c_ * p_.stride[%d][d_];\n", k, k);
        ck_put(&b, "        }\n");
        for (int k = 0; k < nops; k++)
            if (!ops[k].scalar && !ops[k].raw)
                ck_put(&b, "        o%d += r_ * p_.stride[%d][0];\n", k, k);
        ck_put(&b, "%s\n    }\n", stmt);
    }
    else { /* N1..N3: 32-bit */
        ck_put(&b, "    const unsigned int n_ = (unsigned int)p_.n, step_ = gridDim.x * blockDim.x;\n");
        for (int d = 1; d < nd; d++)
            ck_put(&b, "    const unsigned int s%d_ = (unsigned int)p_.shape[%d];\n", d, d);
        for (int k = 0; k < nops; k++)
            for (int d = 0; d < nd && !ops[k].scalar && !ops[k].raw; d++)
                ck_put(&b, "    const int t%d_%d = (int)p_.stride[%d][%d];\n", k, d, k, d);
        defines(&b, ops, nops, ACC_OFF);
        ck_put(&b, "    for (unsigned int u_ = blockIdx.x * blockDim.x + threadIdx.x; u_ < n_; "
                "u_ += step_) {\n        const long long i = u_;\n        (void)i;\n"
                "        unsigned int r_ = u_;\n");
        for (int d = nd - 1; d >= 1; d--) {
            ck_put(&b, "        const unsigned int c%d_ = r_ %% s%d_;\n        r_ /= s%d_;\n", d, d, d);
        }
        for (int k = 0; k < nops; k++) {
            if (ops[k].scalar || ops[k].raw)
                continue;
            ck_put(&b, "        const int o%d = (int)r_ * t%d_0", k, k);
            for (int d = 1; d < nd; d++)
                ck_put(&b, " + (int)c%d_ * t%d_%d", d, k, d);
            ck_put(&b, ";\n");
        }
        ck_put(&b, "%s\n    }\n", stmt);
    }
    if (after)
        ck_put(&b, "%s\n", after);
    ck_put(&b, "}\n");
    return ck_buf_finish(&b);
}

PyObject *
ck_ufunc_source(const ck_ufunc_body *body, const ck_operand *ops, int cls, int vec)
{
    char head[1024], call[512];
    int nops = body->nin + 1;
    size_t used = 0;
    used += (size_t)PyOS_snprintf(call + used, sizeof call - used, "%s(", body->func);
    for (int k = 1; k < nops; k++) {
        int l = body->ltc[k - 1];
        if ((l == CUKIT_TC_F16 || l == CUKIT_TC_BF16) && ops[k].tc != l && !ops[k].scalar)
            /* a wider input meets a float16 or bfloat16 loop (dtype=): rounded to the
             * loop's type first, as numpy casts it */
            used += (size_t)PyOS_snprintf(call + used, sizeof call - used,
                                          "%scv<float>(cv<%s>(x%d))", k > 1 ? ", " : "",
                                          ck_dtypes[l].ctype, k);
        else
            used += (size_t)PyOS_snprintf(call + used, sizeof call - used, "%scv<%s>(x%d)",
                                          k > 1 ? ", " : "", ck_dtypes[l].ctype_c, k);
    }
    PyOS_snprintf(call + used, sizeof call - used, ")");
    used = (size_t)PyOS_snprintf(head, sizeof head, "CKD T0 ck_f(");
    for (int k = 1; k < nops; k++)
        used += (size_t)PyOS_snprintf(head + used, sizeof head - used, "%sT%d x%d",
                                      k > 1 ? ", " : "", k, k);
    /* Round to the loop's own result type first (float16 and bfloat16 compute in float).
     * A cast to bfloat16 or a float8 converts directly: through float a float16 NaN may
     * lose its sign, which ml_dtypes' cast keeps; a cast from a float8 too (cv knows its
     * NaNs, and a copy to its own type keeps the bits). */
    int f8out = ops[0].tc == CUKIT_TC_F8E4M3 || ops[0].tc == CUKIT_TC_F8E5M2;
    int f8in = ops[1].tc == CUKIT_TC_F8E4M3 || ops[1].tc == CUKIT_TC_F8E5M2;
    if (strcmp(body->func, "uf_copy") == 0 && (ops[0].tc == CUKIT_TC_BF16 || f8out || f8in) &&
        !ops[1].scalar)
        PyOS_snprintf(head + used, sizeof head - used, ") {\n    return cv<T0>(x1);\n}\n");
    else
        PyOS_snprintf(head + used, sizeof head - used,
                      ") {\n    return cv<T0>(cv<%s>(%s));\n}\n", ck_dtypes[body->rtc].ctype,
                      call);
    char stmt[256];
    /* where=: the mask is the last operand; the output keeps its value where it is false */
    if (body->masked)
        used = (size_t)PyOS_snprintf(stmt, sizeof stmt, "                if (CK_E%d) CK_E0 = ck_f(",
                                     nops);
    else
        used = (size_t)PyOS_snprintf(stmt, sizeof stmt, "                CK_E0 = ck_f(");
    for (int k = 1; k < nops; k++)
        used += (size_t)PyOS_snprintf(stmt + used, sizeof stmt - used, "%sCK_E%d",
                                      k > 1 ? ", " : "", k);
    PyOS_snprintf(stmt + used, sizeof stmt - used, ");");
    int load_out[CK_UMAXOP + 1] = {body->masked};
    return kernel_source(head, ops, nops + (body->masked ? 1 : 0), cls, vec, stmt, load_out,
                         NULL, NULL);
}

PyObject *
ck_custom_source(const char *head, const ck_operand *ops, int nops, int cls, int vec,
                 const char *stmt, const int *load_out, const char *prep, const char *after)
{
    return kernel_source(head, ops, nops, cls, vec, stmt, load_out, prep, after);
}
