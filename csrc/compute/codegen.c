/* codegen.c - the CUDA C of elementwise kernels: kernels/elementwise.cu (one loop per
 * launch class around one statement, a ufunc's call or an ElementwiseKernel's
 * operation) with the operands' types and kinds, the class and the statement in front
 *
 * Every generated kernel is `ck(const ck_args p_)`: one
 * struct by value whose layout ck_args_layout_of gives the host. The statement sees
 * operand k as CK_E<k>, an lvalue of its element (or the scalar's value), so the
 * same statement serves every class.
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

/* The kind of operand k in class cls, as kernels/elementwise.cu names it. */
static const char *
kind_of(const ck_operand *op, int cls, int load_out)
{
    if (op->scalar)
        return "SCALAR";
    if (op->raw)
        return "RAW";
    if (op->output)
        return load_out ? "INOUT" : "OUT";
    return op->tiled && cls == CK_CLASS_T2 ? "TILED" : "IN";
}

/* kernels/elementwise.cu over `ops` in class cls around `stmt`, after `head` (types,
 * helpers); `prep` (may be NULL) opens the kernel's body and `after` (may be NULL)
 * closes it: then the kernel's frame follows the file (see the file). */
static PyObject *
kernel_source(const char *head, const ck_operand *ops, int nops, int cls, int vec,
              const char *stmt, const int *load_out, const char *prep, const char *after)
{
    static const char *const loops[CK_CLASS_COUNT] = {
        [CK_CLASS_VEC] = "VEC", [CK_CLASS_FLAT] = "FLAT", [CK_CLASS_N1] = "N", [CK_CLASS_N2] = "N",
        [CK_CLASS_N3] = "N", [CK_CLASS_NN] = "NN", [CK_CLASS_T2] = "T2"};
    const char *preamble = cukit_device_file(CK_PREAMBLE);
    const char *body = preamble ? cukit_device_file("compute/elementwise/kernels/elementwise.cu")
                                : NULL;
    if (body == NULL)
        return NULL;
    ck_buf b = {0};
    int own_frame = prep != NULL || after != NULL;
    ck_put(&b, "%s%s\n", ck_ml_define(), preamble);
    for (int k = 0; k < nops; k++)
        ck_put(&b, "typedef %s T%d;\n",
            ops[k].scalar ? ck_dtypes[ops[k].tc].ctype_c : ck_dtypes[ops[k].tc].ctype, k);
    ck_put(&b, "#define CK_NOPS %d\n#define CK_ND %d\n#define CK_VEC %d\n#define CK_NT %d\n"
            "#define CK_LOOP_%s\n%s#define CK_OPERANDS(X)",
        nops, ck_class_dims(cls), vec, CK_THREADS, loops[cls],
        own_frame ? "#define CK_LAMBDA\n#define CK_OWN_FRAME\n" : "");
    for (int k = 0; k < nops; k++)
        ck_put(&b, " X(%d, %s)", k, kind_of(&ops[k], cls, load_out && load_out[k]));
    ck_put(&b, "\n");
    for (int k = 0; k < nops; k++)
        ck_put(&b, "#define CK_E%d CK_AT(%d, %s)\n", k, k, kind_of(&ops[k], cls, load_out && load_out[k]));
    /* the statement as one macro: a line break in it continues the #define */
    ck_put(&b, "%s\n#define CK_STMT ", head);
    for (const char *c = stmt; *c; c++)
        if (*c == '\n')
            ck_put(&b, " \\\n");
        else
            ck_put(&b, "%c", *c);
    ck_put(&b, "\n%s", body);
    if (own_frame)
        ck_put(&b, "CK_KERNEL {\n    CK_KERNEL_BIND\n%s\n    ck_loop(p_, ck_op);\n%s\n}\n",
            prep ? prep : "", after ? after : "");
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
