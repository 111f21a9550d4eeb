/* conditions.c - #if and #elif conditions, evaluated as C's preprocessor does, or found unknown
 *
 * Values are 64-bit integers computed without undefined behaviour (wrapping in
 * unsigned arithmetic, a division by zero or an over-wide shift is "unknown"), and
 * the evaluator's recursion is bounded, so no condition can crash or hang it. An
 * identifier that is neither a macro cukit knows nor true/false has an unknown
 * value: it may come from an option cukit does not see (-DX=1) or from the
 * compiler (__CUDACC_VER_MAJOR__), and both branches are then read. */
#include "declarations/parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

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
    int len = 0, uns = 0, suffix = 0;
    if (t->len <= 0 || (size_t)t->len >= sizeof tmp)
        return UNKNOWN;
    for (int i = 0; i < t->len; i++)
        if (t->p[i] != '\'') /* a digit separator: 1'000 */
            tmp[len++] = t->p[i];
    tmp[len] = '\0';
    while (len > 0 && strchr("uUlL", tmp[len - 1])) {
        uns |= tmp[len - 1] == 'u' || tmp[len - 1] == 'U';
        tmp[--len] = '\0';
        suffix++;
    }
    if (len == 0 || suffix > 3)
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
        c.uns = a.uns || b.uns; /* the two branches' common type */
    }
    e->depth--;
    return c;
}

int
cukit_condition(lexer *lx, const char *s, const char *end)
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
                    int d = cukit_macro_defined(lx, a, (size_t)(b - a));
                    /* unknown: an identifier that is no macro has no known value */
                    if (d < 0 || cukit_text_adds(&text, d == 2 ? " __cukit_unknown__ "
                                                 : d ? " 1 " : " 0 ") < 0)
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
    sub.uncertain = Py_XNewRef(lx->uncertain);
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
    /* A macro (re)defined in a branch cukit could not evaluate makes the value unknown. */
    for (int i = 0; i < sub.n && rc != 2; i++)
        if (sub.toks[i].macro)
            rc = 2;
done:
    cukit_lexer_release(&sub);
    cukit_text_free(&text);
    return rc;
}
