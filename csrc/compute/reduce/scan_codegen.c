/* scan_codegen.c - the CUDA C of one scan: kernels/scan.cu with the types, the operation
 * and its neutral element in front
 *
 * scan.c launches its kernels (its header comment says which layout takes which). */
#include "compute/reduce/reduce_impl.h"

#include <string.h>

/* Elements per thread of a 1-D tile, from the accumulator's size: 8192-element tiles for
 * accumulators of up to 4 bytes, 2048 above (the tile's shared memory stays under 34 KiB
 * for complex128). A tile's fixed costs (four barriers, the look-back's round trips to
 * L2) are paid per tile: 32 items staged by each warp ran fastest on an H100. The source
 * (CK_IT) and the launch (the tile count) both take it from here. */
int
ck_scan_items(int acc_size)
{
    return acc_size <= 4 ? 32 : 8;
}

/* The source of one scan: types, the operation, its neutral element; with `ctype`, the
 * input, output and accumulator are that type, which head defines. New ref or NULL. */
PyObject *
ck_scan_source(int itc, int otc, const char *acc, int acc_size, const char *head, const char *op,
            const char *neutral, int exclusive, int user, const char *ctype)
{
    /* Each user text under its own #line, and its last line's number again after it, so
     * that the `);` closing it (on a line of its own: a // comment cannot swallow it)
     * counts as that line, where an unfinished expression is reported. */
    const char *ln1 = user ? "\n#line 1 \"scan_expr\"\n" : "";
    const char *ln2 = user ? "\n#line 1 \"neutral\"\n" : "";
    char end1[64] = "", end2[64] = "";
    if (user) {
        int a = 1, b = 1;
        for (const char *c = op; *c; c++)
            a += *c == '\n';
        for (const char *c = neutral; *c; c++)
            b += *c == '\n';
        PyOS_snprintf(end1, sizeof end1, "\n#line %d \"scan_expr\"", a);
        PyOS_snprintf(end2, sizeof end2, "\n#line %d \"neutral\"", b);
    }
    const char *preamble = cukit_device_file(CK_PREAMBLE);
    const char *body = preamble ? cukit_device_file("compute/reduce/kernels/scan.cu") : NULL;
    if (body == NULL)
        return NULL;
    char defs[64];
    PyOS_snprintf(defs, sizeof defs, "#define CK_IT %d\n#define CK_EXCL %d\n",
                  ck_scan_items(acc_size), exclusive);
    PyObject *types = ctype ? PyUnicode_FromString(defs)
                            : PyUnicode_FromFormat("typedef %s TI;\ntypedef %s TO;\ntypedef %s TA;\n%s",
                                                   ck_dtypes[itc].ctype, ck_dtypes[otc].ctype, acc, defs);
    PyObject *after = ctype ? PyUnicode_FromFormat("typedef %s TI;\ntypedef TI TO;\ntypedef TI TA;\n",
                                                   ctype)
                            : PyUnicode_FromString("");
    PyObject *out = types && after ? PyUnicode_FromFormat(
        "%s\n%U%s\n%UCKD TA ck_op(const TA a, const TA b) {\n    return (%s%s%s\n);\n}\n"
        "CKD TA ck_neutral() {\n    return cv<TA>(%s%s%s\n);\n}\n#define CK_SCAN_OP\n%s",
        preamble, types, head ? head : "", after, ln1, op, end1, ln2, neutral, end2, body)
                                   : NULL;
    Py_XDECREF(types);
    Py_XDECREF(after);
    return out;
}
