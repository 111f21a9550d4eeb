/* builders.h - compute/'s own: what the kernel builders share: the CuPy-style parameter
 * list of ElementwiseKernel and ReductionKernel (kernel_params.c) and the growing text
 * buffer generated CUDA C is written into (codegen_buffer.c, for codegen.c and
 * reduce_codegen.c) */
#ifndef CUKIT_COMPUTE_BUILDERS_H
#define CUKIT_COMPUTE_BUILDERS_H

#include "compute/compute.h"

/* ------------------------------------------------------------------ kernel_params.c */

#define CK_MAXPH 4     /* type placeholders per kernel (they are part of the 64-bit key) */
#define CK_PNAME 64    /* bytes of a parameter's or a placeholder's name, with its NUL */

/* One parameter of "float32 x, raw T y". */
typedef struct {
    char name[CK_PNAME];
    int tc;              /* declared dtype, or -1 for a placeholder */
    int ph;              /* placeholder index when tc < 0 */
    int raw;             /* `raw`, or a C pointer (c_decls): a pointer the code indexes */
    int output;
    const char *ctype;   /* static: the C type as written when the rules keep it
                            (pycuda::complex<float>), else NULL: tc's own */
} ck_param;

/* How one kind of kernel reads its lists. Static storage. */
typedef struct {
    const char *who;     /* "ElementwiseKernel": every error starts with it */
    int max_in;          /* inputs it takes */
    int max;             /* parameters it takes, inputs and outputs */
    int c_decls;         /* 1: C declarations too ("const float *x"): const, volatile and
                            restrict are dropped, a '*' makes it raw */
    int placeholders;    /* 1: an identifier that names no type is a type placeholder */
    const char *const *keep_ctypes; /* NULL-terminated C type names kept as written in
                                       ck_param.ctype (their header defines them), or NULL */
} ck_param_rules;

/* The parameters of a kernel and the placeholders they name, as its object holds them. */
typedef struct {
    ck_param *params;               /* room for rules->max */
    int *nparams;
    char (*ph_names)[CK_PNAME];     /* room for CK_MAXPH */
    int *nph;
} ck_param_list;

/* Read "T x, raw float32 y" (output 0: inputs, 1: outputs) onto the end of `list`. A
 * type is a numpy name ("float32"), a C name of compile's one table ("float", "unsigned
 * long int", "char" is int8), or (rules->placeholders) one identifier as a placeholder.
 * 0, or -1 with ValueError naming the parameter and the fix. */
int ck_params_parse(const ck_param_rules *rules, ck_param_list *list, PyObject *text,
                    int output);
/* The typecode a type name means: a numpy name the engine computes on, or a C name
 * whose element type it computes on (struct names only when listed in keep, which may
 * be NULL). -1 when neither. */
int ck_type_named(const char *t, const char *const *keep);
/* The index of placeholder `t`, adding it. -1 with ValueError when there are too many. */
int ck_placeholder(const ck_param_rules *rules, ck_param_list *list, const char *t);
/* 1 when s is a C identifier. */
int ck_is_ident(const char *s);

/* ------------------------------------------------------------------ codegen_buffer.c */

/* Text that grows as a generator writes it; zero-initialize, then ck_put, then
 * ck_buf_finish. */
typedef struct {
    char *p;             /* owned (PyMem) until ck_buf_finish */
    size_t len, cap;
    int failed;          /* 1: out of memory (ck_buf_finish raises it) */
} ck_buf;

/* Append printf-style text; after a failure, nothing (ck_buf_finish reports it). */
void ck_put(ck_buf *b, const char *fmt, ...);
/* The text as str, freeing the buffer. New ref, or NULL with MemoryError. */
PyObject *ck_buf_finish(ck_buf *b);

#endif /* CUKIT_COMPUTE_BUILDERS_H */
