/* reduce_codegen.c - the CUDA C of one reduction: kernels/reduce.cu with the types, the
 * sizes and the operation's four functions in front
 *
 * reduce.cu's opening comment says which kernel takes which layout and how splits are
 * folded; reduce.c picks the kernel and launches it. */
#include "compute/builders.h"
#include "compute/reduce/reduce_impl.h"

#include <string.h>

const char *const ck_rfunc_names[RF_COUNT] = {"ckr_v", "ckr_vw", "ckr_n", "ckr_nw", "ckc", "ckcv", "ckr_f",
                                               "ckr_v1"};

/* `#line 1 "what"` before a user's text, so that a compile error points into it, and
 * its last line's number again after it: the caller's next line (the `);` that closes
 * it, on a line of its own so that a // comment cannot swallow it) counts as that
 * line, where an unfinished expression is reported. */
static void
user_text(ck_buf *b, const ck_rspec *s, const char *what, const char *text)
{
    if (s->user)
        ck_put(b, "\n#line 1 \"%s\"\n", what);
    ck_put(b, "%s", text);
    if (s->user) {
        int last = 1;
        for (const char *c = text; *c; c++)
            last += *c == '\n';
        ck_put(b, "\n#line %d \"%s\"", last, what);
    }
}

/* ckr_f's blocks an SM (__launch_bounds__): CK_MINB for one array input, CK_MINB_MULTI
 * for more (dot, where=), whose loads need more registers to stay in flight. */
static int
ck_minb(const ck_rspec *s)
{
    int arrays = 0;
    for (int k = 0; k < s->nin; k++)
        arrays += s->kind[k] == CK_OPND_ARRAY;
    return arrays == 1 ? CK_MINB : CK_MINB_MULTI;
}

PyObject *
ck_reduce_source(const ck_rspec *s, int fn)
{
    static const char *const kinds[] = {[CK_OPND_ARRAY] = "ARRAY", [CK_OPND_SCALAR] = "SCALAR",
                                        [CK_OPND_RAW] = "RAW"};
    ck_buf b = {0};
    int nin = s->nin, v = s->vec > 0 ? s->vec : 1;
    const char *helpers = cukit_device_file("compute/reduce/kernels/reduce_helpers.cuh");
    const char *body = helpers ? cukit_device_file("compute/reduce/kernels/reduce.cu") : NULL;
    if (body == NULL)
        return NULL;
    if (fn >= 0) /* the one kernel: see compile/kernels/one_kernel.cuh */
        ck_put(&b, "#define CUKIT_ONE_KERNEL 1\n#define CUKIT_KERNEL_%s 1\n", ck_rfunc_names[fn]);
    ck_put(&b, "%s%s\n", ck_ml_define(), helpers);
    /* a struct output is defined by head: its typedef follows head */
    for (int k = 0; k < nin + !s->out_ctype; k++)
        if (k == nin || !s->in_ctype[k])
            ck_put(&b, "typedef %s T%d;\n", ck_dtypes[s->tc[k]].ctype, k);
    if (!s->out_ctype)
        ck_put(&b, "typedef T%d TO;\n", nin);
    ck_put(&b, "#define CK_NIN %d\n#define CK_V %d\n#define CK_NT %d\n#define CK_HAS_INIT %d\n"
            "#define CK_RMAXD %d\n#define CK_MINB %d\n#define CK_FNT %d\n#define CK_OPERANDS(X)",
        nin, v, CK_THREADS, s->has_init, CK_RMAXD, ck_minb(s), CK_FNT);
    for (int k = 0; k < nin; k++)
        ck_put(&b, " X(%d, %s)", k, kinds[s->kind[k]]);
    ck_put(&b, "\n");
    if (s->head)
        ck_put(&b, "%s\n", s->head);
    for (int k = 0; k < nin; k++) /* types head defines follow it */
        if (s->in_ctype[k])
            ck_put(&b, "typedef %s T%d;\n", s->in_ctype[k], k);
    ck_put(&b, "typedef %s TA;\n", s->acc);
    if (s->out_ctype)
        ck_put(&b, "typedef %s T%d;\ntypedef T%d TO;\n", s->out_ctype, nin, nin);
    /* the operation's four functions */
    ck_put(&b, "CKD TA ck_ident() {\n    return cv<TA>(");
    user_text(&b, s, "identity", s->identity);
    ck_put(&b, "\n);\n}\nCKD TA ck_red(const TA a, const TA b) {\n    return (");
    user_text(&b, s, "reduce_expr", s->reduce);
    const char *ix = s->index ? s->index : "_j";
    ck_put(&b, "\n);\n}\nCKD TA ck_map(const long long %s", ix);
    for (int k = 0; k < nin; k++)
        ck_put(&b, s->kind[k] == CK_OPND_RAW ? ", T%d *const %s" : ", const T%d %s", k, s->names[k]);
    ck_put(&b, ") {\n    (void)%s;\n    return cv<TA>(", ix);
    user_text(&b, s, "map_expr", s->map);
    ck_put(&b, "\n);\n}\nCKD void ck_post(TA a, TO &%s, const long long _n, const double _d) {\n"
            "    (void)_n; (void)_d;\n", s->names[nin]);
    user_text(&b, s, "post_map_expr", s->post);
    ck_put(&b, "\n;\n}\n#define CK_REDUCE_OPS\n%s", body);
    return ck_buf_finish(&b);
}
