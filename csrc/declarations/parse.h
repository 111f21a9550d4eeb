/* parse.h - declarations/'s own: what the signature readers share (lexer.c, conditions.c, params.c, templates.c, declarations.c, checks.c, signature.c, signature_type.c) */
#ifndef CUKIT_DECLARATIONS_PARSE_H
#define CUKIT_DECLARATIONS_PARSE_H

#include "declarations/declarations.h"

#include <string.h>

/* ------------------------------------------------------------------ lexer.c */

typedef enum { TOK_IDENT, TOK_NUMBER, TOK_STRING, TOK_PUNCT } tok_kind;

typedef struct {
    const char *p;      /* borrowed: into the source or a buffer in lexer.keep */
    int len;
    unsigned buf : 27;  /* which text p points into: tokens join only within one */
    unsigned kind : 3;  /* a tok_kind */
    unsigned branch : 1; /* 1: read in a branch of #if cukit could not evaluate */
    unsigned macro : 1; /* 1: from a macro (re)defined in such a branch: what NVRTC
                           reads there may differ */
} token;

/* Macro expansion is bounded: after this many units of work (one per expansion and
 * one per token a macro produces) macros are no longer expanded, and what is left of
 * the source is read as written (lexer.gave_up). The source's own tokens are not
 * bounded: they cost what the source does. */
#define CUKIT_EXPANSION_BUDGET (1 << 21)

/* A growing text, NUL-terminated once anything was added. */
typedef struct {
    char *s;            /* owned (PyMem), or NULL while empty */
    size_t n, cap;
} cukit_text;

/* Append s[0..n) to t. 0 / -1 with MemoryError. */
int cukit_text_add(cukit_text *t, const char *s, size_t n);
/* Append a NUL-terminated string. 0 / -1 with MemoryError. */
int cukit_text_adds(cukit_text *t, const char *s);
/* t's text ("" when empty). Borrowed: valid until t changes. */
const char *cukit_text_str(const cukit_text *t);
void cukit_text_free(cukit_text *t);

typedef struct {
    token *toks;        /* owned (PyMem): n of cap used */
    int n, cap;
    PyObject *macros;   /* borrowed: dict str name -> str body (object-like), None
                           (function-like: defined, never expanded) */
    PyObject *keep;     /* strong ref or NULL: list of str whose buffers tokens point into */
    PyObject *hidden;   /* strong ref or NULL: set of the macro names being expanded:
                           never expanded again inside (as in C) */
    int buf;            /* id of the text being tokenized */
    int nbufs;
    long spent;         /* expansion work done, against CUKIT_EXPANSION_BUDGET */
    int gave_up;        /* 1: the budget ran out; later macros were left unexpanded */
    int init_depth;     /* >0: inside a brace initializer (= { ... }), whose tokens
                           are dropped but for its braces */
    /* #if nesting: per level, bit 0 taking its branch, bit 1 one was taken,
       bit 2 an earlier condition was unknown */
    unsigned char *ifs; /* owned (PyMem): nif of ifcap used */
    int nif, ifcap;
    int dead;           /* levels not taking their branch: tokens are dropped while > 0 */
    int unknown;        /* levels reading a branch whose condition cukit could not evaluate */
    int maybe;          /* the text being read comes from an uncertain macro (token.macro) */
    PyObject *uncertain; /* strong ref or NULL: set of macro names (re)defined or undefined
                            in such a branch */
} lexer;

/* Append the tokens of s[0..end) to lx->toks: comments skipped, macros from
 * lx->macros expanded (iteratively, within the budget), brace initializers reduced
 * to their braces, and, when `top` (the source itself rather than a macro body),
 * directives obeyed: #define/#undef change lx->macros, #if/#ifdef/#elif/#else drop
 * the branches known not taken (conditions are evaluated; an unknown one reads
 * every branch). A lexer is zero-initialized with macros set. 0 / -1 with an
 * exception (MemoryError, or ValueError for a source of over 2**30 tokens). */
int cukit_tokenize(lexer *lx, const char *s, const char *end, int top);
/* 1 if macro `name` (n bytes) is defined (cukit's own list of the compiler's
 * included), 0 if not, 2 when that depends on a branch of #if cukit could not
 * evaluate, -1 with an exception. */
int cukit_macro_defined(lexer *lx, const char *name, size_t n);
/* Free what the lexer owns (not its macros). */
void cukit_lexer_release(lexer *lx);
/* Index of the token that closes the group opened at lx->toks[i] (one of "(",
 * "[", "<", "{"; only that kind of bracket is counted), or -1 when none does. */
int cukit_group_close(const lexer *lx, int i);
/* Index just past the group opened at lx->toks[i] (one of "(", "[", "<", "{"), or
 * lx->n when it is never closed. */
int cukit_skip_group(const lexer *lx, int i);
/* 1 when lx->toks[i] is a kernel attribute with its arguments: __launch_bounds__(...). */
int cukit_attribute_at(const lexer *lx, int i);

/* 1 when token t is exactly `text`. */
static inline int
token_is(const token *t, const char *text)
{
    return (int)strlen(text) == t->len && memcmp(t->p, text, (size_t)t->len) == 0;
}

/* ------------------------------------------------------------------ conditions.c */

/* The value of the #if/#elif condition s[0..end) read by lx: 1, 0, or 2 when cukit
 * cannot tell (every branch is then read, and the compiled kernel's layout check
 * remains the safety net). Macros are expanded within lx's budget. -1 with an
 * exception. */
int cukit_condition(lexer *lx, const char *s, const char *end);

/* ------------------------------------------------------------------ params.c */

/* Split the parameter list whose "(" is lx->toks[open] at its top-level commas:
 * *bounds (owned by the caller, PyMem; NULL when none) gets [from, to) token index
 * pairs, one per entry, empty entries included ("()" is one empty entry). Returns
 * the number of entries, or -1 with MemoryError. */
int cukit_params_bounds(const lexer *lx, int open, int **bounds);
/* Parse the parameter list whose "(" is lx->toks[open] into a Signature named
 * `name`, with typedef/using `aliases` (dict alias -> (str base, int pointer
 * depth, bool uncertain), or NULL) applied. New ref, or NULL with an exception
 * (ValueError for a list that is not C: a void parameter, one with no type). */
/* 1 when toks[i..to), just inside a "(", begins a declarator in parentheses, as in
 * float (*p)[4], float (&r)[2] or float (x): a '*', '&' or '(' first, or one name
 * (not a type's word) then ')' or '['. 0 for a function's parameter list. */
int cukit_declarator_at(const lexer *lx, int i, int to);
cukit_Signature *cukit_params_read(cukit_state *st, const lexer *lx, int open, const char *name,
                                   PyObject *aliases);
/* Remember in `aliases` the `typedef ... NAME` (is_using 0) or `using NAME = ...`
 * (is_using 1) in lx->toks[from..to), the ";" excluded; one cukit cannot read
 * (a struct body, a function pointer) is left out. 0 / -1 with an exception. */
int cukit_alias_record(const lexer *lx, int from, int to, PyObject *aliases, int is_using);
/* aliases[name] = the type (or, for a value argument such as 3, the text) in
 * lx->toks[from..to), as `using name = ...;` would. 0 / -1 with an exception. */
int cukit_alias_set(const lexer *lx, int from, int to, const char *name, PyObject *aliases);
/* The statement lx->toks[from..to): when it is `__constant__ float coef[16];` or
 * `__device__ int a, b[2][3];` (file or namespace `ns` scope), record each variable
 * in `globals` as name -> (element typecode, shape tuple or None when a dimension is
 * not a plain number). Declarations cukit cannot read are left out; get_global then
 * asks for dtype and shape. 0 / -1 with an exception. */
int cukit_globals_record(const lexer *lx, int from, int to, const char *ns, PyObject *aliases,
                         PyObject *globals);

/* ------------------------------------------------------------------ templates.c */

/* The name expressions (tuple of str) by the kernel each names: new ref to a dict
 * "ns::k" -> list of the expressions as written ("&ns::k<int>"), or NULL with an
 * exception. Made once per source, so each template kernel meets only its own. */
PyObject *cukit_template_heads(const lexer *lx, PyObject *exprs);
/* For each name expression in exprs (a list of str from cukit_template_heads) naming
 * the template kernel `base` ("axpy<float>"), the kernel's Signature with the
 * template parameters replaced by the expression's arguments, stored in out under
 * the expression as the user wrote it (the key NVRTC lowers). toks[stmt..] holds
 * "template < ... >"; toks[open] is the "(" of the kernel's parameter list.
 * Templates cukit cannot read are left out. 0 / -1 with an exception. */
int cukit_template_instantiate(cukit_state *st, const lexer *lx, int stmt, int open,
                               const char *base, PyObject *aliases, PyObject *exprs,
                               PyObject *out);

/* ------------------------------------------------------------------ declarations.c */

/* Like cukit_signatures_parse without defines, globals or name expressions, for a
 * declaration the user wrote for cukit: a malformed parameter list raises
 * ValueError pointing at its column. New ref or NULL. */
PyObject *cukit_signatures_parse_strict(cukit_state *st, const char *source);
/* cukit.Signature(text): one kernel's declaration, "name(float a)", "(float a)",
 * "float a, int n" or a whole `__global__ void k(...)`. New ref, or NULL with
 * ValueError pointing at the column (cukit_decl_error). */
cukit_Signature *cukit_signature_read(cukit_state *st, const char *text);

/* ------------------------------------------------------------------ checks.c */

/* Raise ValueError about `text` at token `at` of lx (lx->n: the end), showing the
 * line with a caret under the column and saying `what`. Returns -1. */
int cukit_decl_error(const char *text, const lexer *lx, int at, const char *what);
/* Check the parameter list whose "(" is lx->toks[open] as C declares parameters.
 * Returns the index past its ")", or -1 with ValueError (cukit_decl_error). */
int cukit_decl_check(const char *text, const lexer *lx, int open);
/* Check the kernel's name before lx->toks[open] ("k", "ns::k<int>", "void k").
 * Returns the index of the name's first token (open when there is none), or -1
 * with ValueError. */
int cukit_decl_check_name(const char *text, const lexer *lx, int open);

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

#endif /* CUKIT_DECLARATIONS_PARSE_H */
