/* lexer.c - the tokenizer and small preprocessor that kernel signatures are read from
 *
 * Everything here is bounded: the scan is one loop over an explicit stack of texts
 * (the source, then each macro body being expanded), so no input can exhaust the C
 * stack; macro expansion stops after CUKIT_EXPANSION_BUDGET units of work and the
 * rest is read as written; #if conditions are evaluated, so a dead branch costs only
 * its scan. Where cukit cannot tell, it reads more rather than less: NVRTC, not this
 * reader, decides what compiles, and the compiled kernel's parameter sizes are
 * checked against what is read here before any launch. */
#include "compile/parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ growing text */

int
cukit_text_add(cukit_text *t, const char *s, size_t n)
{
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < t->n + n + 1)
            cap *= 2;
        char *grown = PyMem_Realloc(t->s, cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->s = grown;
        t->cap = cap;
    }
    if (n)
        memcpy(t->s + t->n, s, n);
    t->n += n;
    t->s[t->n] = '\0';
    return 0;
}

int
cukit_text_adds(cukit_text *t, const char *s)
{
    return cukit_text_add(t, s, strlen(s));
}

const char *
cukit_text_str(const cukit_text *t)
{
    return t->s ? t->s : "";
}

void
cukit_text_free(cukit_text *t)
{
    PyMem_Free(t->s);
    t->s = NULL;
    t->n = t->cap = 0;
}

/* ------------------------------------------------------------------ tokens */

#define MAX_LEXER_TOKENS (1 << 30)

static int
push_tok(lexer *lx, tok_kind kind, const char *p, int len)
{
    if (lx->dead)
        return 0;
    /* A brace initializer (`= { ... }`, `x[] { ... }`) keeps only its braces: a
     * 2-million-element table costs no tokens, and the walk skips it anyway. */
    if (kind == TOK_PUNCT && *p == '{') {
        if (lx->init_depth > 0)
            lx->init_depth++;
        else if (lx->n > 0 && lx->toks[lx->n - 1].kind == TOK_PUNCT &&
                 (lx->toks[lx->n - 1].p[0] == '=' || lx->toks[lx->n - 1].p[0] == ']'))
            lx->init_depth = 1;
    }
    else if (kind == TOK_PUNCT && *p == '}' && lx->init_depth > 0) {
        lx->init_depth--;
    }
    else if (lx->init_depth > 0) {
        return 0;
    }
    if (lx->n == lx->cap) {
        if (lx->cap >= MAX_LEXER_TOKENS) {
            PyErr_SetString(PyExc_ValueError,
                            "the source has over 2**30 tokens, more than cukit can read kernel "
                            "signatures from; split it into several programs");
            return -1;
        }
        int cap = lx->cap ? lx->cap * 2 : 256;
        token *t = PyMem_Realloc(lx->toks, (size_t)cap * sizeof *t);
        if (t == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        lx->toks = t;
        lx->cap = cap;
    }
    token *t = &lx->toks[lx->n++];
    t->p = p;
    t->len = len;
    t->buf = (unsigned)lx->buf;
    t->kind = (unsigned)kind;
    return 0;
}

void
cukit_lexer_release(lexer *lx)
{
    PyMem_Free(lx->toks);
    PyMem_Free(lx->ifs);
    lx->toks = NULL;
    lx->ifs = NULL;
    lx->n = lx->cap = lx->nif = lx->ifcap = 0;
    Py_CLEAR(lx->keep);
    Py_CLEAR(lx->hidden);
}

/* ------------------------------------------------------------------ directives */

/* Names the compiler defines itself, for #ifdef and defined(). */
static int
predefined(const char *name, size_t n)
{
    static const char *names[] = {"__CUDACC__", "__CUDACC_RTC__", "__NVCC__", "__cplusplus",
                                  "__CUDA_ARCH__"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == n && memcmp(names[i], name, n) == 0)
            return 1;
    return 0;
}

/* 1 if macro `name` is defined, 0 if not, -1 on error. */
static int
is_defined(lexer *lx, const char *name, size_t n)
{
    if (predefined(name, n))
        return 1;
    if (n == 0)
        return 0;
    PyObject *key = PyUnicode_FromStringAndSize(name, (Py_ssize_t)n);
    if (key == NULL)
        return -1;
    int rc = PyDict_Contains(lx->macros, key);
    Py_DECREF(key);
    return rc;
}

static const char *
skip_space(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\f' || *s == '\v' ||
                       (*s == '\\' && s + 1 < end && (s[1] == '\n' || s[1] == '\r'))))
        s++;
    return s;
}

static const char *
ident_end(const char *s, const char *end)
{
    while (s < end && (isalnum((unsigned char)*s) || *s == '_'))
        s++;
    return s;
}

/* ---- #if expressions: integers as C computes them, or "unknown" */

typedef struct {
    long long v;
    int known;
    int uns;
} pp_val;

typedef struct {
    const token *t;
    int n, i;
    int depth;
} pp_eval;

#define PP_MAX_DEPTH 100

static const pp_val UNKNOWN = {0, 0, 0};

/* 1 and step past it when the tokens at e->i spell operator `op` (one or two
 * characters, written together). */
static int
pp_op(pp_eval *e, const char *op)
{
    if (e->i >= e->n || e->t[e->i].kind != TOK_PUNCT || e->t[e->i].p[0] != op[0])
        return 0;
    if (op[1] == '\0') {
        /* "<" must not be the first half of "<<" or "<=" and so on */
        if (e->i + 1 < e->n) {
            const token *a = &e->t[e->i], *b = &e->t[e->i + 1];
            if (b->kind == TOK_PUNCT && b->buf == a->buf && b->p == a->p + 1 &&
                strchr("=&|<>", b->p[0]) && (b->p[0] == '=' ? strchr("<>=!", op[0]) != NULL
                                                              : b->p[0] == op[0]))
                return 0;
        }
        e->i++;
        return 1;
    }
    if (e->i + 1 >= e->n)
        return 0;
    const token *a = &e->t[e->i], *b = &e->t[e->i + 1];
    if (b->kind != TOK_PUNCT || b->buf != a->buf || b->p != a->p + 1 || b->p[0] != op[1])
        return 0;
    e->i += 2;
    return 1;
}

static pp_val pp_expr(pp_eval *e);

static pp_val
pp_number(const token *t)
{
    char tmp[64];
    if (t->len <= 0 || (size_t)t->len >= sizeof tmp)
        return UNKNOWN;
    memcpy(tmp, t->p, (size_t)t->len);
    tmp[t->len] = '\0';
    int len = t->len, uns = 0;
    while (len > 0 && strchr("uUlL", tmp[len - 1])) {
        uns |= tmp[len - 1] == 'u' || tmp[len - 1] == 'U';
        tmp[--len] = '\0';
    }
    if (len == 0 || t->len - len > 3)
        return UNKNOWN;
    char *stop;
    errno = 0;
    unsigned long long x = strtoull(tmp, &stop, 0);
    if (*stop != '\0' || errno != 0)
        return UNKNOWN; /* a float, a digit separator, out of range */
    pp_val v = {(long long)x, 1, uns || x > (unsigned long long)LLONG_MAX};
    return v;
}

static pp_val
pp_primary(pp_eval *e)
{
    if (e->i >= e->n)
        return UNKNOWN;
    const token *t = &e->t[e->i];
    if (pp_op(e, "(")) {
        pp_val v = pp_expr(e);
        if (!pp_op(e, ")"))
            e->i = e->n + 1; /* malformed: the whole condition is unknown */
        return v;
    }
    e->i++;
    if (t->kind == TOK_NUMBER)
        return pp_number(t);
    if (t->kind == TOK_STRING && t->len == 3 && t->p[0] == '\'' && t->p[1] != '\\') {
        pp_val v = {(unsigned char)t->p[1], 1, 0};
        return v;
    }
    if (t->kind == TOK_IDENT) {
        if (token_is(t, "true") || token_is(t, "false")) {
            pp_val v = {token_is(t, "true"), 1, 0};
            return v;
        }
        /* Undefined here, or defined by an option cukit does not see, or a
         * function-like macro: its value is unknown. */
        if (e->i < e->n && token_is(&e->t[e->i], "(")) {
            int depth = 0;
            for (; e->i < e->n; e->i++) {
                if (token_is(&e->t[e->i], "("))
                    depth++;
                else if (token_is(&e->t[e->i], ")") && --depth == 0) {
                    e->i++;
                    break;
                }
            }
        }
        return UNKNOWN;
    }
    e->i = e->n + 1;
    return UNKNOWN;
}

static pp_val
pp_unary(pp_eval *e)
{
    if (++e->depth > PP_MAX_DEPTH) {
        e->i = e->n + 1;
        return UNKNOWN;
    }
    pp_val v;
    if (pp_op(e, "!")) {
        v = pp_unary(e);
        v.v = !v.v;
        v.uns = 0;
    }
    else if (pp_op(e, "~")) {
        v = pp_unary(e);
        v.v = (long long)~(unsigned long long)v.v;
    }
    else if (pp_op(e, "-")) {
        v = pp_unary(e);
        v.v = (long long)(0ULL - (unsigned long long)v.v);
    }
    else if (pp_op(e, "+")) {
        v = pp_unary(e);
    }
    else {
        v = pp_primary(e);
    }
    e->depth--;
    return v;
}

/* Binary operators and their precedence (higher binds tighter). */
enum { OP_MUL, OP_DIV, OP_MOD, OP_ADD, OP_SUB, OP_SHL, OP_SHR, OP_LE, OP_GE, OP_LT, OP_GT,
       OP_EQ, OP_NE, OP_LAND, OP_LOR, OP_AND, OP_XOR, OP_OR };
static const struct {
    const char *op;
    int prec;
} binops[] = {
    [OP_MUL] = {"*", 10}, [OP_DIV] = {"/", 10}, [OP_MOD] = {"%", 10}, [OP_ADD] = {"+", 9},
    [OP_SUB] = {"-", 9},  [OP_SHL] = {"<<", 8}, [OP_SHR] = {">>", 8}, [OP_LE] = {"<=", 7},
    [OP_GE] = {">=", 7},  [OP_LT] = {"<", 7},   [OP_GT] = {">", 7},   [OP_EQ] = {"==", 6},
    [OP_NE] = {"!=", 6},  [OP_LAND] = {"&&", 2}, [OP_LOR] = {"||", 1}, [OP_AND] = {"&", 5},
    [OP_XOR] = {"^", 4},  [OP_OR] = {"|", 3},
};

static pp_val
pp_apply(int op, pp_val l, pp_val r)
{
    if (op == OP_LAND) {
        if ((l.known && !l.v) || (r.known && !r.v))
            return (pp_val){0, 1, 0};
        return (pp_val){1, l.known && r.known, 0};
    }
    if (op == OP_LOR) {
        if ((l.known && l.v) || (r.known && r.v))
            return (pp_val){1, 1, 0};
        return (pp_val){0, l.known && r.known, 0};
    }
    if (!l.known || !r.known)
        return UNKNOWN;
    int uns = l.uns || r.uns;
    unsigned long long a = (unsigned long long)l.v, b = (unsigned long long)r.v;
    pp_val out = {0, 1, uns};
    switch (op) {
    case OP_MUL: out.v = (long long)(a * b); break;
    case OP_ADD: out.v = (long long)(a + b); break;
    case OP_SUB: out.v = (long long)(a - b); break;
    case OP_DIV:
    case OP_MOD:
        if (b == 0 || (!uns && l.v == LLONG_MIN && r.v == -1))
            return UNKNOWN;
        if (uns)
            out.v = (long long)(op == OP_DIV ? a / b : a % b);
        else
            out.v = op == OP_DIV ? l.v / r.v : l.v % r.v;
        break;
    case OP_SHL:
    case OP_SHR:
        if (r.v < 0 || r.v >= 64)
            return UNKNOWN;
        if (op == OP_SHL)
            out.v = (long long)(a << b);
        else
            out.v = l.uns ? (long long)(a >> b) : (l.v < 0 ? ~(~l.v >> r.v) : l.v >> r.v);
        out.uns = l.uns;
        break;
    case OP_LT: out = (pp_val){uns ? a < b : l.v < r.v, 1, 0}; break;
    case OP_GT: out = (pp_val){uns ? a > b : l.v > r.v, 1, 0}; break;
    case OP_LE: out = (pp_val){uns ? a <= b : l.v <= r.v, 1, 0}; break;
    case OP_GE: out = (pp_val){uns ? a >= b : l.v >= r.v, 1, 0}; break;
    case OP_EQ: out = (pp_val){a == b, 1, 0}; break;
    case OP_NE: out = (pp_val){a != b, 1, 0}; break;
    case OP_AND: out.v = (long long)(a & b); break;
    case OP_XOR: out.v = (long long)(a ^ b); break;
    case OP_OR: out.v = (long long)(a | b); break;
    default: return UNKNOWN;
    }
    return out;
}

/* Precedence climbing: left-associative operators loop, so only the number of
 * precedence levels (not the expression's length) adds to the C stack. */
static pp_val
pp_binary(pp_eval *e, int min_prec)
{
    pp_val l = pp_unary(e);
    for (;;) {
        size_t k;
        int save = e->i;
        for (k = 0; k < sizeof binops / sizeof *binops; k++)
            if (binops[k].prec >= min_prec && pp_op(e, binops[k].op))
                break;
        if (k == sizeof binops / sizeof *binops) {
            e->i = save;
            return l;
        }
        pp_val r = pp_binary(e, binops[k].prec + 1);
        l = pp_apply((int)k, l, r);
    }
}

static pp_val
pp_expr(pp_eval *e)
{
    if (++e->depth > PP_MAX_DEPTH) {
        e->i = e->n + 1;
        return UNKNOWN;
    }
    pp_val c = pp_binary(e, 1);
    if (pp_op(e, "?")) {
        pp_val a = pp_expr(e);
        if (!pp_op(e, ":"))
            e->i = e->n + 1;
        pp_val b = pp_expr(e);
        if (!c.known)
            c = (a.known && b.known && a.v == b.v) ? a : UNKNOWN;
        else
            c = c.v ? a : b;
    }
    e->depth--;
    return c;
}

/* Value of a #if condition s[0..end): 1, 0, or 2 when cukit cannot tell (every
 * branch is then read, and the compiled kernel's layout check remains the safety
 * net). -1 with an exception. */
static int
condition(lexer *lx, const char *s, const char *end)
{
    /* defined X and defined(X) are answered before macros are expanded. */
    cukit_text text = {0};
    int rc = -1;
    lexer sub = {0};
    while (s < end) {
        const char *q = s;
        if (isalpha((unsigned char)*s) || *s == '_') {
            s = ident_end(s, end);
            if (s - q == 7 && memcmp(q, "defined", 7) == 0) {
                const char *a = skip_space(s, end);
                int paren = a < end && *a == '(';
                if (paren)
                    a = skip_space(a + 1, end);
                const char *b = ident_end(a, end);
                const char *after = skip_space(b, end);
                if (b > a && (!paren || (after < end && *after == ')'))) {
                    int d = is_defined(lx, a, (size_t)(b - a));
                    if (d < 0 || cukit_text_adds(&text, d ? " 1 " : " 0 ") < 0)
                        goto done;
                    s = paren ? after + 1 : b;
                    continue;
                }
            }
        }
        else if (isdigit((unsigned char)*s)) {
            while (s < end && (isalnum((unsigned char)*s) || *s == '.' || *s == '_'))
                s++;
        }
        else {
            s++;
        }
        if (cukit_text_add(&text, q, (size_t)(s - q)) < 0)
            goto done;
    }
    sub.macros = lx->macros;
    sub.spent = lx->spent;
    sub.gave_up = lx->gave_up;
    const char *c = cukit_text_str(&text);
    if (cukit_tokenize(&sub, c, c + text.n, 0) < 0)
        goto done;
    lx->spent = sub.spent;
    lx->gave_up = sub.gave_up;
    pp_eval e = {sub.toks, sub.n, 0, 0};
    pp_val v = sub.n ? pp_expr(&e) : UNKNOWN;
    rc = (e.i != e.n || !v.known) ? 2 : v.v != 0;
done:
    cukit_lexer_release(&sub);
    cukit_text_free(&text);
    return rc;
}

/* ---- the #if stack */

enum { IF_TAKING = 1, IF_DONE = 2, IF_UNKNOWN = 4 };

static int
if_push(lexer *lx, unsigned char state)
{
    if (lx->nif == lx->ifcap) {
        if (lx->ifcap >= INT_MAX / 2) {
            PyErr_SetString(PyExc_ValueError, "#if nesting too deep to read");
            return -1;
        }
        int cap = lx->ifcap ? lx->ifcap * 2 : 16;
        unsigned char *grown = PyMem_Realloc(lx->ifs, (size_t)cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        lx->ifs = grown;
        lx->ifcap = cap;
    }
    lx->ifs[lx->nif++] = state;
    lx->dead += !(state & IF_TAKING);
    return 0;
}

static void
if_set(lexer *lx, unsigned char state)
{
    unsigned char *top = &lx->ifs[lx->nif - 1];
    lx->dead += !(state & IF_TAKING) - !(*top & IF_TAKING);
    *top = state;
}

/* A branch whose condition is v (0, 1, 2 unknown), after the branches in `state`. */
static unsigned char
if_branch(unsigned char state, int v)
{
    if (state & IF_DONE || v == 0)
        return state & ~IF_TAKING;
    if (v == 1 && !(state & IF_UNKNOWN))
        return IF_TAKING | IF_DONE;
    return IF_TAKING | IF_UNKNOWN; /* read it, and what follows too */
}

/* #define NAME body: object-like macros are stored with their body, function-like
 * ones as None (defined, never expanded). */
static int
define(lexer *lx, const char *s, const char *end)
{
    s = skip_space(s, end);
    const char *name = s;
    s = ident_end(s, end);
    if (s == name)
        return 0;
    PyObject *key = PyUnicode_FromStringAndSize(name, s - name);
    PyObject *body = NULL;
    if (key && s < end && *s == '(') {
        body = Py_NewRef(Py_None);
    }
    else if (key) {
        /* Line continuations inside the body become spaces. */
        PyObject *raw = PyUnicode_DecodeUTF8(s, end - s, "replace");
        if (raw) {
            PyObject *t = PyObject_CallMethod(raw, "replace", "ss", "\\\r\n", " ");
            body = t ? PyObject_CallMethod(t, "replace", "ss", "\\\n", " ") : NULL;
            Py_XDECREF(t);
        }
        Py_XDECREF(raw);
    }
    int rc = (key && body) ? PyDict_SetItem(lx->macros, key, body) : -1;
    Py_XDECREF(key);
    Py_XDECREF(body);
    return rc;
}

/* Handle one directive line (without its '#'). 0 / -1. */
static int
directive(lexer *lx, const char *s, const char *end)
{
    s = skip_space(s, end);
    const char *w = s;
    s = ident_end(s, end);
    size_t wl = (size_t)(s - w);
#define WORD(x) (wl == strlen(x) && memcmp(w, x, wl) == 0)
    if (WORD("ifdef") || WORD("ifndef") || WORD("if")) {
        if (lx->dead)
            return if_push(lx, IF_DONE); /* inside a dead branch: nothing here is read */
        int v;
        if (WORD("if")) {
            v = condition(lx, s, end);
        }
        else {
            const char *q = skip_space(s, end), *e = ident_end(q, end);
            v = is_defined(lx, q, (size_t)(e - q));
            if (v >= 0 && WORD("ifndef"))
                v = !v;
        }
        return v < 0 ? -1 : if_push(lx, if_branch(0, v));
    }
    if (WORD("elif") || WORD("else")) {
        if (lx->nif == 0)
            return 0;
        unsigned char state = lx->ifs[lx->nif - 1];
        int v = 1;
        /* A level not yet done has a live parent (levels inside dead branches are
         * pushed done), so its #elif condition is worth evaluating. */
        if (!(state & IF_DONE) && WORD("elif") && (v = condition(lx, s, end)) < 0)
            return -1;
        if_set(lx, if_branch(state, v));
        return 0;
    }
    if (WORD("endif")) {
        if (lx->nif > 0) {
            lx->dead -= !(lx->ifs[lx->nif - 1] & IF_TAKING);
            lx->nif--;
        }
        return 0;
    }
    if (lx->dead)
        return 0;
    if (WORD("define"))
        return define(lx, s, end);
    if (WORD("undef")) {
        const char *q = skip_space(s, end), *e = ident_end(q, end);
        if (e == q)
            return 0;
        PyObject *key = PyUnicode_FromStringAndSize(q, e - q);
        if (key == NULL)
            return -1;
        int rc = PyDict_DelItem(lx->macros, key);
        Py_DECREF(key);
        if (rc < 0 && PyErr_ExceptionMatches(PyExc_KeyError)) {
            PyErr_Clear();
            rc = 0;
        }
        return rc;
    }
#undef WORD
    return 0;
}

/* ------------------------------------------------------------------ the scan */

static int
is_ident_char(unsigned char c)
{
    return isalnum(c) || c == '_' || c >= 0x80; /* UTF-8 identifiers stay whole */
}

/* One text being read: the source, or the body of the macro `name`. */
typedef struct {
    const char *s, *end;
    int buf;
    PyObject *name;     /* strong ref: the macro expanded here, in lx->hidden; NULL at the bottom */
} frame;

/* The body of macro q[0..len) when it should be expanded here: a new ref to its
 * key in *key and a borrowed body; 0 when it is not expanded; -1 on error. */
static int
macro_body(lexer *lx, const char *q, int len, PyObject **key, PyObject **body)
{
    *key = NULL;
    if (lx->dead || lx->gave_up || PyDict_GET_SIZE(lx->macros) == 0)
        return 0;
    PyObject *k = PyUnicode_FromStringAndSize(q, len);
    if (k == NULL)
        return -1;
    PyObject *b = PyDict_GetItemWithError(lx->macros, k);
    if (b == NULL || !PyUnicode_Check(b)) {
        Py_DECREF(k);
        return PyErr_Occurred() ? -1 : 0;
    }
    if (lx->hidden == NULL && (lx->hidden = PySet_New(NULL)) == NULL) {
        Py_DECREF(k);
        return -1;
    }
    int hidden = PySet_Contains(lx->hidden, k);
    if (hidden != 0) {
        Py_DECREF(k);
        return hidden < 0 ? -1 : 0;
    }
    if (++lx->spent > CUKIT_EXPANSION_BUDGET || lx->nbufs >= (1 << 28)) {
        lx->gave_up = 1;
        Py_DECREF(k);
        return 0;
    }
    if (lx->keep == NULL && (lx->keep = PyList_New(0)) == NULL) {
        Py_DECREF(k);
        return -1;
    }
    if (PyList_Append(lx->keep, b) < 0 || PySet_Add(lx->hidden, k) < 0) {
        Py_DECREF(k);
        return -1;
    }
    *key = k;
    *body = b;
    return 1;
}

int
cukit_tokenize(lexer *lx, const char *s0, const char *end0, int top)
{
    frame *frames = PyMem_Malloc(16 * sizeof *frames);
    int nframes = 1, cap = 16, rc = -1, line_start = 1;
    if (frames == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    frames[0] = (frame){s0, end0, lx->buf, NULL};
    while (nframes > 0) {
        frame *f = &frames[nframes - 1];
        const char *s = f->s, *end = f->end;
        if (s >= end) {
            if (f->name) {
                if (PySet_Discard(lx->hidden, f->name) < 0)
                    goto done;
                Py_DECREF(f->name);
            }
            nframes--;
            if (nframes > 0)
                lx->buf = frames[nframes - 1].buf;
            continue;
        }
        char c = *s;
        int expanded = nframes > 1;
        if (c == '\n') {
            line_start |= !expanded;
            f->s = s + 1;
            continue;
        }
        if (isspace((unsigned char)c)) {
            f->s = s + 1;
            continue;
        }
        if (c == '/' && s + 1 < end && s[1] == '/') {
            while (s < end && *s != '\n')
                s++;
            f->s = s;
            continue;
        }
        if (c == '/' && s + 1 < end && s[1] == '*') {
            s += 2;
            while (s + 1 < end && !(s[0] == '*' && s[1] == '/'))
                s++;
            f->s = s + 2 < end ? s + 2 : end;
            continue;
        }
        if (c == '#' && line_start && top && !expanded) {
            const char *d = s + 1;
            while (s < end && !(*s == '\n' && s[-1] != '\\' && !(s[-1] == '\r' && s[-2] == '\\')))
                s++;
            f->s = s;
            if (directive(lx, d, s) < 0)
                goto done;
            continue;
        }
        if (!expanded)
            line_start = 0;
        else if (lx->spent++ > CUKIT_EXPANSION_BUDGET)
            lx->gave_up = 1; /* each token a macro produces is work too */
        if (c == '"' || c == '\'') {
            const char *q = s++;
            while (s < end && *s != c && *s != '\n') {
                if (*s == '\\' && s + 1 < end)
                    s++;
                s++;
            }
            s = s < end && *s == c ? s + 1 : s;
            f->s = s;
            if (push_tok(lx, TOK_STRING, q, (int)(s - q)) < 0)
                goto done;
            continue;
        }
        if (isalpha((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80) {
            const char *q = s;
            while (s < end && is_ident_char((unsigned char)*s))
                s++;
            f->s = s;
            PyObject *key, *body;
            int r = macro_body(lx, q, (int)(s - q), &key, &body);
            if (r < 0)
                goto done;
            if (r == 0) {
                if (push_tok(lx, TOK_IDENT, q, (int)(s - q)) < 0)
                    goto done;
                continue;
            }
            Py_ssize_t blen;
            const char *b = PyUnicode_AsUTF8AndSize(body, &blen);
            if (b == NULL || (nframes == cap && cap > INT_MAX / 4)) {
                Py_DECREF(key);
                if (b != NULL)
                    PyErr_NoMemory();
                goto done;
            }
            if (nframes == cap) {
                frame *grown = PyMem_Realloc(frames, (size_t)cap * 2 * sizeof *frames);
                if (grown == NULL) {
                    Py_DECREF(key);
                    PyErr_NoMemory();
                    goto done;
                }
                frames = grown;
                cap *= 2;
            }
            lx->buf = ++lx->nbufs;
            frames[nframes++] = (frame){b, b + blen, lx->buf, key};
            continue;
        }
        if (isdigit((unsigned char)c)) {
            const char *q = s;
            while (s < end && (isalnum((unsigned char)*s) || *s == '.' || *s == '_'))
                s++;
            f->s = s;
            if (push_tok(lx, TOK_NUMBER, q, (int)(s - q)) < 0)
                goto done;
            continue;
        }
        int len = (c == ':' && s + 1 < end && s[1] == ':') ? 2 : 1;
        f->s = s + len;
        if (push_tok(lx, TOK_PUNCT, s, len) < 0)
            goto done;
    }
    rc = 0;
done:
    /* On error, unwind what is still being expanded. */
    if (nframes > 1) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        for (int i = nframes - 1; i >= 1; i--) {
            if (lx->hidden && PySet_Discard(lx->hidden, frames[i].name) < 0)
                PyErr_Clear();
            Py_DECREF(frames[i].name);
        }
        PyErr_Restore(type, value, tb);
    }
    if (nframes > 0)
        lx->buf = frames[0].buf;
    PyMem_Free(frames);
    return rc;
}

int
cukit_group_close(const lexer *lx, int i)
{
    static const char open[] = "([<{", close[] = ")]>}";
    const char *o = strchr(open, lx->toks[i].p[0]);
    char oc = *o, cc = close[o - open];
    int depth = 0;
    for (; i < lx->n; i++) {
        if (lx->toks[i].kind != TOK_PUNCT)
            continue;
        if (lx->toks[i].p[0] == oc)
            depth++;
        else if (lx->toks[i].p[0] == cc && --depth == 0)
            return i;
    }
    return -1;
}

int
cukit_skip_group(const lexer *lx, int i)
{
    int close = cukit_group_close(lx, i);
    return close < 0 ? lx->n : close + 1;
}
