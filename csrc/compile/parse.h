/* parse.h - compile/'s own: what the signature readers share (lexer.c, params.c, templates.c, declarations.c, signature.c, signature_type.c) */
#ifndef CUKIT_COMPILE_PARSE_H
#define CUKIT_COMPILE_PARSE_H

#include "compile/compile.h"

#include <string.h>

/* ------------------------------------------------------------------ lexer.c */

typedef enum { TOK_IDENT, TOK_NUMBER, TOK_STRING, TOK_PUNCT } tok_kind;

typedef struct {
    tok_kind kind;
    const char *p;      /* borrowed: into the source or a buffer in lexer.keep */
    int len;
    int buf;            /* which text p points into: tokens join only within one */
} token;

#define MAX_TOKENS (1 << 22) /* a bound on macro expansion, far above real kernels */
#define MAX_IF_DEPTH 64

typedef struct {
    token *toks;        /* owned (PyMem): n of cap used */
    int n, cap;
    PyObject *macros;   /* borrowed: dict str name -> str body (object-like only) */
    PyObject *keep;     /* strong ref: list of str whose buffers tokens point into */
    PyObject *hidden;   /* strong ref: list of macro names being expanded: never expanded
                           again inside */
    int buf;            /* id of the text being tokenized */
    int nbufs;
    /* #if nesting: each level is taking its branch, has taken one, or is unknown */
    int nif;
    signed char taking[MAX_IF_DEPTH];
    signed char taken[MAX_IF_DEPTH];
} lexer;

/* Append the tokens of s[0..end) to lx->toks: comments skipped, macros from
 * lx->macros expanded, and, when `top` (the source itself rather than a macro
 * body), directives obeyed: #define adds to lx->macros, #if/#ifdef/#else drop the
 * branches known not taken. 0 / -1 with an exception. */
int cukit_tokenize(lexer *lx, const char *s, const char *end, int top);
/* Index just past the group opened at lx->toks[i] (one of "(", "[", "<", "{"), or
 * lx->n when it is never closed. */
int cukit_skip_group(const lexer *lx, int i);

/* 1 when token t is exactly `text`. */
static inline int
token_is(const token *t, const char *text)
{
    return (int)strlen(text) == t->len && memcmp(t->p, text, (size_t)t->len) == 0;
}

/* ------------------------------------------------------------------ params.c */

/* Parse the parameter list whose "(" is lx->toks[open] into a Signature named
 * `name`, with typedef/using `aliases` (dict alias -> (str base, int pointer
 * depth)) applied. New ref, or NULL with an exception. */
cukit_Signature *cukit_params_read(cukit_state *st, const lexer *lx, int open, const char *name,
                                   PyObject *aliases);
/* Remember in `aliases` the `typedef ... NAME` (is_using 0) or `using NAME = ...`
 * (is_using 1) in lx->toks[from..to), the ";" excluded; one cukit cannot read
 * (a struct body, a function pointer) is left out. 0 / -1 with an exception. */
int cukit_alias_record(const lexer *lx, int from, int to, PyObject *aliases, int is_using);
/* The statement lx->toks[from..to): when it is `__constant__ float coef[16];` or
 * `__device__ int a, b[2][3];` (file or namespace `ns` scope), record each variable
 * in `globals` as name -> (element typecode, shape tuple or None when a dimension is
 * not a plain number). Declarations cukit cannot read are left out; get_global then
 * asks for dtype and shape. 0 / -1 with an exception. */
int cukit_globals_record(const lexer *lx, int from, int to, const char *ns, PyObject *aliases,
                         PyObject *globals);

/* ------------------------------------------------------------------ templates.c */

/* For each name expression in exprs (tuple of str) naming the template kernel
 * `base` ("axpy<float>"), the kernel's Signature with the template parameters
 * replaced by the expression's arguments, stored in out under the expression as
 * the user wrote it (the key NVRTC lowers). toks[stmt..] holds "template < ... >";
 * toks[open] is the "(" of the kernel's parameter list. Templates cukit cannot read
 * are left out. 0 / -1 with an exception. */
int cukit_template_instantiate(cukit_state *st, const lexer *lx, int stmt, int open,
                               const char *base, PyObject *aliases, PyObject *exprs,
                               PyObject *out);

/* ------------------------------------------------------------------ signature.c */

/* A PyMem copy of s[0..n) with a terminating NUL (a Signature frees its strings
 * with PyMem_Free). NULL with MemoryError. */
char *cukit_text_dup(const char *s, size_t n);
/* A new Signature named `name` with room for nparams zeroed parameters and
 * nparams set to 0 (the caller counts them in as it fills them, so dealloc frees
 * only those). New ref, or NULL with an exception. */
cukit_Signature *cukit_signature_alloc(cukit_state *st, const char *name, int nparams);
/* The Signature type's dealloc: frees the strings and parameters. */
void cukit_signature_dealloc(cukit_Signature *self);

#endif /* CUKIT_COMPILE_PARSE_H */
