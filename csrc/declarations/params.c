/* params.c - C types in declarations: kernel parameter lists, device globals' types and shapes, typedef/using aliases */
#include "declarations/parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ C types */

/* The type names themselves, and their integer spellings, are ctypes.c's one table. */

/* Words that only ever qualify a parameter; they do not change what it takes. */
static const char *qualifiers[] = {
    "const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "class",
    "union", "typename", "__grid_constant__", "register", "enum",
};

/* ------------------------------------------------------------------ parameters */

static int
is_qualifier(const token *t)
{
    for (size_t i = 0; i < sizeof qualifiers / sizeof *qualifiers; i++)
        if (token_is(t, qualifiers[i]))
            return 1;
    return 0;
}

#define MAX_INT_WORDS 16 /* as many as a declaration has (MAX_WORDS) */

/* "unsigned long int" -> "unsigned long"; "signed" -> "int". */
static const char *
canonical_int(const cukit_text *words, int n, char *out, size_t cap)
{
    const char *w[MAX_INT_WORDS];
    if (n > MAX_INT_WORDS)
        n = MAX_INT_WORDS;
    for (int i = 0; i < n; i++)
        w[i] = cukit_text_str(&words[i]);
    return cukit_ctype_canonical_int(w, n, out, cap);
}

/* ------------------------------------------------------------------ reading a declaration */

#define MAX_WORDS 16        /* words of one declaration: "const unsigned long long int x" */
#define MAX_TEMPLATE_DEPTH 32 /* A<B<C<...>>> deeper than this is shown as written */

/* What one declaration's tokens say, before its words become a type. */
typedef struct {
    cukit_text w[MAX_WORDS]; /* owned: each word, with its scope (ns::T) and template
                                arguments (Vec<float*>) joined in */
    int n;
    int pointers, const_first, arrays, parens;
    int open_parens;         /* declarator parentheses open here: float (*p)[4] */
    int paren_pointers;      /* '*' and '&' met inside them: the declarator's own */
    int plain;               /* 1: only words, qualifiers, * & and <...>: a type */
    int uncertain;           /* 1: a token or an alias of it comes from a branch of #if
                                cukit could not evaluate (token.maybe) */
} decl_words;

static void
words_free(decl_words *d)
{
    for (int i = 0; i < MAX_WORDS; i++)
        cukit_text_free(&d->w[i]);
}

static int type_arg_text(const lexer *lx, int from, int to, PyObject *aliases, int depth,
                         cukit_text *out, int *uncertain);

/* Append the template argument list whose "<" is toks[lt] to t, each argument
 * shown as a type when it is one ("Vec<float*>"), else as written. Returns the
 * index past the ">", or -1 with an exception. */
static int
template_args(const lexer *lx, int lt, int to, PyObject *aliases, int depth, cukit_text *t,
              int *uncertain)
{
    int gt = cukit_skip_group(lx, lt) - 1;
    if (gt >= to)
        gt = to - 1;
    if (cukit_text_add(t, "<", 1) < 0)
        return -1;
    int start = lt + 1;
    for (int i = lt + 1; i <= gt; i++) {
        const token *k = &lx->toks[i];
        if (i < gt && k->kind == TOK_PUNCT && strchr("([<{", k->p[0])) {
            i = cukit_skip_group(lx, i) - 1;
            continue;
        }
        if (i < gt && !(k->kind == TOK_PUNCT && k->p[0] == ','))
            continue;
        if (start > lt + 1 && cukit_text_add(t, ", ", 2) < 0)
            return -1;
        if (i > start && type_arg_text(lx, start, i, aliases, depth + 1, t, uncertain) < 0)
            return -1;
        start = i + 1;
    }
    if (cukit_text_add(t, ">", 1) < 0)
        return -1;
    return gt + 1;
}

int
cukit_declarator_at(const lexer *lx, int i, int to)
{
    if (i >= to)
        return 0;
    const token *t = &lx->toks[i];
    if (t->kind == TOK_PUNCT)
        return strchr("*&(", t->p[0]) != NULL;
    return t->kind == TOK_IDENT && !cukit_ctype_is_int_word(t->p, (size_t)t->len) &&
           !token_is(t, "float") && !token_is(t, "double") && !token_is(t, "bool") &&
           !token_is(t, "void") &&
           i + 1 < to && (token_is(&lx->toks[i + 1], ")") || token_is(&lx->toks[i + 1], "["));
}

/* Collect the words of toks[from..to) into d: qualifiers dropped, '*' '&' and
 * array brackets counted, attributes skipped, a default argument (= ...) ignored.
 * 0 / -1 with an exception. */
static int
collect_words(const lexer *lx, int from, int to, PyObject *aliases, int depth, decl_words *d)
{
    memset(d, 0, sizeof *d);
    d->plain = 1;
    for (int i = from; i < to; i++)
        d->uncertain |= lx->toks[i].macro;
    for (int i = from; i < to; i++) {
        const token *t = &lx->toks[i];
        if (t->kind == TOK_PUNCT && t->p[0] == '=')
            break; /* a default argument */
        if (t->kind == TOK_PUNCT && (t->p[0] == '*' || t->p[0] == '&')) {
            d->pointers++;
            d->paren_pointers += d->open_parens > 0;
            continue;
        }
        if (t->kind == TOK_PUNCT && t->p[0] == '[' && i + 1 < to &&
            token_is(&lx->toks[i + 1], "[")) {
            i = cukit_skip_group(lx, i) - 1; /* an attribute: [[maybe_unused]] */
            continue;
        }
        if (t->kind == TOK_PUNCT && t->p[0] == '[') {
            /* T x[] and T x[][4] are one pointer, and so is T (x)[4]; T (*x)[4] is a
             * pointer to arrays, which already counted its '*' */
            if (d->arrays++ == 0 && !d->paren_pointers)
                d->pointers++;
            d->plain = 0;
            i = cukit_skip_group(lx, i) - 1;
            continue;
        }
        if (t->kind == TOK_PUNCT && t->p[0] == '(' && i > from &&
            (token_is(&lx->toks[i - 1], ")") ||
             (!d->parens && lx->toks[i - 1].kind == TOK_IDENT &&
              (d->n >= 2 || (d->n == 1 && !cukit_declarator_at(lx, i + 1, to)))))) {
            /* A function's parameter list: void (*f)(int), int f(int) or, unnamed,
             * float(int n), which as a parameter is a pointer to the function. */
            if (!d->paren_pointers)
                d->pointers++;
            d->parens = 1;
            d->plain = 0;
            i = cukit_skip_group(lx, i) - 1;
            continue;
        }
        if (t->kind == TOK_PUNCT && (t->p[0] == '(' || t->p[0] == ')')) {
            d->open_parens += t->p[0] == '(' ? 1 : -(d->open_parens > 0);
            d->parens = 1;
            d->plain = 0;
            continue;
        }
        if (t->kind == TOK_IDENT && (token_is(t, "__align__") || token_is(t, "alignas") ||
                                   token_is(t, "__attribute__"))) {
            if (i + 1 < to && token_is(&lx->toks[i + 1], "("))
                i = cukit_skip_group(lx, i + 1) - 1;
            continue;
        }
        if (t->kind == TOK_PUNCT && token_is(t, "::")) { /* std::size_t -> size_t; ns::T -> ns::T */
            /* A leading :: (::uint32_t) only says "global": the next word is read as usual. */
            if (d->n > 0 && i > from && i + 1 < to && lx->toks[i + 1].kind == TOK_IDENT &&
                !is_qualifier(&lx->toks[i - 1])) {
                const token *next = &lx->toks[i + 1];
                cukit_text *w = &d->w[d->n - 1];
                if (strcmp(cukit_text_str(w), "std") == 0)
                    w->n = 0;
                else if (cukit_text_add(w, "::", 2) < 0)
                    return -1;
                if (cukit_text_add(w, next->p, (size_t)next->len) < 0)
                    return -1;
                i++;
            }
            continue;
        }
        if ((token_is(t, "decltype") || token_is(t, "__typeof__") || token_is(t, "typeof")) &&
            i + 1 < to && token_is(&lx->toks[i + 1], "(")) {
            /* decltype(expr) is one word: its text, tokens joined as C would print them */
            int close = cukit_skip_group(lx, i + 1);
            if (close > to)
                close = to;
            if (d->n == MAX_WORDS) {
                i = close - 1;
                continue;
            }
            cukit_text *w = &d->w[d->n++];
            for (int k = i; k < close; k++) {
                const token *u = &lx->toks[k];
                int word = u->kind == TOK_IDENT || u->kind == TOK_NUMBER;
                if (k > i + 1 && word && (lx->toks[k - 1].kind == TOK_IDENT ||
                                          lx->toks[k - 1].kind == TOK_NUMBER) &&
                    cukit_text_add(w, " ", 1) < 0)
                    return -1;
                if (cukit_text_add(w, u->p, (size_t)u->len) < 0)
                    return -1;
            }
            i = close - 1;
            continue;
        }
        if (token_is(t, "const") && d->pointers == 0)
            d->const_first = 1;
        if (t->kind == TOK_IDENT && is_qualifier(t))
            continue;
        if (t->kind == TOK_PUNCT && t->p[0] == '<') { /* template arguments join the word */
            if (d->n == 0 || depth >= MAX_TEMPLATE_DEPTH) {
                d->plain = 0;
                i = cukit_skip_group(lx, i) - 1;
                continue;
            }
            int past = template_args(lx, i, to, aliases, depth, &d->w[d->n - 1], &d->uncertain);
            if (past < 0)
                return -1;
            i = past - 1;
            continue;
        }
        if (t->kind != TOK_IDENT)
            d->plain = 0;
        if (d->n == MAX_WORDS)
            continue;
        if (cukit_text_add(&d->w[d->n++], t->p, (size_t)t->len) < 0)
            return -1;
    }
    return 0;
}

/* The type named by d's words [0..n): canonical for integer words ("unsigned long
 * long"), else the words joined, then typedef/using aliases applied until the name
 * is not an alias (each may add pointer levels to *pointers). 0 / -1. */
static int
type_text(decl_words *d, int n, PyObject *aliases, cukit_text *base, int *pointers)
{
    int all_int = n > 0;
    for (int i = 0; i < n; i++)
        all_int &= cukit_ctype_is_int_word(d->w[i].s ? d->w[i].s : "", d->w[i].n);
    base->n = 0;
    if (all_int) {
        char buf[32];
        if (cukit_text_adds(base, canonical_int(d->w, n, buf, sizeof buf)) < 0)
            return -1;
    }
    else {
        for (int i = 0; i < n; i++)
            if ((i && cukit_text_add(base, " ", 1) < 0) ||
                cukit_text_add(base, cukit_text_str(&d->w[i]), d->w[i].n) < 0)
                return -1;
    }
    for (int guard = 0; aliases && base->n && guard < 16; guard++) {
        PyObject *hit = PyDict_GetItemString(aliases, cukit_text_str(base));
        if (hit == NULL)
            break;
        Py_ssize_t len;
        const char *text = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(hit, 0), &len);
        if (text == NULL)
            return -1;
        base->n = 0;
        if (cukit_text_add(base, text, (size_t)len) < 0)
            return -1;
        *pointers += (int)PyLong_AsLong(PyTuple_GET_ITEM(hit, 1));
        if (PyTuple_GET_SIZE(hit) > 2 && PyTuple_GET_ITEM(hit, 2) == Py_True)
            d->uncertain = 1;
    }
    return 0;
}

/* "const float*": a type as shown to users. 0 / -1. */
static int
shown_type(const cukit_text *base, int pointers, int const_first, cukit_text *out)
{
    if (const_first && pointers && cukit_text_add(out, "const ", 6) < 0)
        return -1;
    if (cukit_text_add(out, cukit_text_str(base), base->n) < 0)
        return -1;
    for (int i = 0; i < pointers; i++)
        if (cukit_text_add(out, "*", 1) < 0)
            return -1;
    return 0;
}

/* Append template argument toks[from..to) to out: as a type when it reads as one,
 * else its tokens as written (a number, an expression). 0 / -1. */
static int
type_arg_text(const lexer *lx, int from, int to, PyObject *aliases, int depth, cukit_text *out,
              int *uncertain)
{
    decl_words d;
    cukit_text base = {0};
    int rc = -1;
    if (collect_words(lx, from, to, aliases, depth, &d) < 0)
        goto done;
    for (int i = from; i < to && d.plain; i++)
        d.plain = lx->toks[i].kind == TOK_IDENT ||
                  (lx->toks[i].kind == TOK_PUNCT && strchr("*&:<>,", lx->toks[i].p[0]));
    if (d.plain && d.n > 0) {
        int pointers = d.pointers;
        rc = type_text(&d, d.n, aliases, &base, &pointers) < 0 ? -1
             : shown_type(&base, pointers, d.const_first, out);
        *uncertain |= d.uncertain;
        goto done;
    }
    *uncertain |= d.uncertain;
    for (int i = from; i < to; i++) {
        const token *t = &lx->toks[i];
        int word = t->kind == TOK_IDENT || t->kind == TOK_NUMBER;
        if (i > from && word && (lx->toks[i - 1].kind == TOK_IDENT ||
                                 lx->toks[i - 1].kind == TOK_NUMBER) &&
            cukit_text_add(out, " ", 1) < 0)
            goto done;
        if (cukit_text_add(out, t->p, (size_t)t->len) < 0)
            goto done;
    }
    rc = 0;
done:
    words_free(&d);
    cukit_text_free(&base);
    return rc;
}

/* Fill p from the tokens of one parameter declaration. 0 / -1. */
static int
parse_param(const lexer *lx, int from, int to, PyObject *aliases, cukit_param *p)
{
    decl_words d;
    cukit_text base = {0}, shown = {0};
    int rc = -1;
    if (collect_words(lx, from, to, aliases, 0, &d) < 0)
        goto done;
    /* The last word is the parameter's name unless it is part of the type. */
    const cukit_text *name = NULL;
    if (d.n >= 2) {
        const char *last = cukit_text_str(&d.w[d.n - 1]);
        if (!cukit_ctype_is_int_word(last, strlen(last)) && strcmp(last, "float") != 0 &&
            strcmp(last, "double") != 0 && strcmp(last, "bool") != 0 && !strchr(last, '<') &&
            !strchr(last, ':'))
            name = &d.w[--d.n];
    }
    if (d.n == 0) {
        PyErr_SetString(PyExc_ValueError, "a kernel parameter has no type");
        goto done;
    }
    int pointers = d.pointers;
    if (type_text(&d, d.n, aliases, &base, &pointers) < 0)
        goto done;
    p->kind = CUKIT_P_STRUCT;
    p->typecode = CUKIT_TC_ANY; /* a pointer to an unknown struct takes any array */
    p->size = 0;
    p->align = 0;
    const cukit_ctype *ct = cukit_ctype_find(cukit_text_str(&base));
    if (ct != NULL) {
        p->kind = ct->kind;
        p->size = ct->size;
        p->typecode = ct->typecode;
        p->align = ct->align;
    }
    if (pointers > 0) {
        if (pointers > 1)
            p->typecode = CUKIT_TC_PTR;
        else if (ct != NULL && ct->bytes_pointee)
            p->typecode = CUKIT_TC_ANY; /* char*, void*: bytes of any array */
        p->kind = CUKIT_P_POINTER;
        p->size = 8;
    }
    else if (strcmp(cukit_text_str(&base), "void") == 0) {
        PyErr_SetString(PyExc_ValueError, "a kernel parameter cannot have type void");
        goto done;
    }
    if (shown_type(&base, pointers, d.const_first, &shown) < 0)
        goto done;
    p->uncertain = d.uncertain;
    p->type = cukit_text_dup(cukit_text_str(&shown), shown.n);
    p->name = name ? cukit_text_dup(cukit_text_str(name), name->n) : cukit_text_dup("", 0);
    rc = (p->type && p->name) ? 0 : -1;
done:
    words_free(&d);
    cukit_text_free(&base);
    cukit_text_free(&shown);
    return rc;
}

int
cukit_params_bounds(const lexer *lx, int open, int **bounds)
{
    int close = cukit_skip_group(lx, open) - 1;
    int count = 0, cap = 0, start = open + 1;
    int *b = NULL;
    for (int i = open + 1; i <= close; i++) {
        const token *t = &lx->toks[i];
        if (i < close && t->kind == TOK_PUNCT && strchr("([<{", t->p[0])) {
            int past = cukit_skip_group(lx, i);
            if (past - 1 < close) {
                i = past - 1;
                continue;
            }
            i = close; /* a group left open inside the list ends with it */
            t = &lx->toks[i];
        }
        if (i < close && !(t->kind == TOK_PUNCT && t->p[0] == ','))
            continue;
        if (count == cap) {
            int grown_cap = cap ? cap * 2 : 16;
            int *grown = grown_cap < INT_MAX / 4
                             ? PyMem_Realloc(b, (size_t)grown_cap * 2 * sizeof *b) : NULL;
            if (grown == NULL) {
                PyMem_Free(b);
                PyErr_NoMemory();
                return -1;
            }
            b = grown;
            cap = grown_cap;
        }
        b[2 * count] = start;
        b[2 * count + 1] = i;
        count++;
        start = i + 1;
    }
    *bounds = b;
    return count;
}

cukit_Signature *
cukit_params_read(cukit_state *st, const lexer *lx, int open, const char *name,
                  PyObject *aliases)
{
    int *bounds = NULL;
    int all = cukit_params_bounds(lx, open, &bounds);
    if (all < 0)
        return NULL;
    /* Empty entries (a stray comma) are not parameters. */
    int count = 0;
    for (int k = 0; k < all; k++)
        if (bounds[2 * k + 1] > bounds[2 * k]) {
            bounds[2 * count] = bounds[2 * k];
            bounds[2 * count + 1] = bounds[2 * k + 1];
            count++;
        }
    /* `(void)` declares no parameters. */
    if (count == 1 && bounds[1] - bounds[0] == 1 && token_is(&lx->toks[bounds[0]], "void"))
        count = 0;
    cukit_Signature *sig = cukit_signature_alloc(st, name, count);
    for (int k = 0; sig && k < count; k++) {
        sig->nparams = k + 1;
        if (parse_param(lx, bounds[2 * k], bounds[2 * k + 1], aliases, &sig->params[k]) < 0)
            Py_CLEAR(sig);
    }
    PyMem_Free(bounds);
    return sig;
}

int
cukit_alias_record(const lexer *lx, int from, int to, PyObject *aliases, int is_using)
{
    int name_at, type_from, type_to;
    if (is_using) { /* using NAME = type ; */
        if (to - from < 4 || !token_is(&lx->toks[from + 2], "="))
            return 0;
        name_at = from + 1;
        type_from = from + 3;
        type_to = to;
    }
    else { /* typedef type NAME ; */
        name_at = to - 1;
        type_from = from + 1;
        type_to = to - 1;
    }
    if (lx->toks[name_at].kind != TOK_IDENT)
        return 0;
    for (int i = type_from; i < type_to; i++) {
        const token *t = &lx->toks[i];
        if (t->kind == TOK_PUNCT && t->p[0] == '<') {
            i = cukit_skip_group(lx, i) - 1;
            continue;
        }
        if (t->kind == TOK_PUNCT && (t->p[0] == '{' || t->p[0] == '(' || t->p[0] == '['))
            return 0; /* typedef struct {...}, a function pointer, an array: stays opaque */
    }
    /* A typedef in a branch cukit could not evaluate may not be NVRTC's. */
    int branch = 0;
    for (int i = from; i < to; i++)
        branch |= lx->toks[i].branch;
    decl_words d;
    cukit_text base = {0};
    int rc = -1, pointers;
    if (collect_words(lx, type_from, type_to, aliases, 0, &d) < 0)
        goto done;
    pointers = d.pointers;
    if (d.n == 0) {
        rc = 0;
        goto done;
    }
    if (type_text(&d, d.n, aliases, &base, &pointers) < 0)
        goto done;
    PyObject *v = Py_BuildValue("(s#iO)", cukit_text_str(&base), (Py_ssize_t)base.n, pointers,
                                d.uncertain || branch ? Py_True : Py_False);
    PyObject *k = PyUnicode_FromStringAndSize(lx->toks[name_at].p, lx->toks[name_at].len);
    rc = (v && k) ? PyDict_SetItem(aliases, k, v) : -1;
    Py_XDECREF(v);
    Py_XDECREF(k);
done:
    words_free(&d);
    cukit_text_free(&base);
    return rc;
}

int
cukit_alias_set(const lexer *lx, int from, int to, const char *name, PyObject *aliases)
{
    decl_words d;
    cukit_text base = {0};
    int rc = -1, pointers = 0;
    if (collect_words(lx, from, to, aliases, 0, &d) < 0)
        goto done;
    /* A type, arrays included: int[3] for T makes `T v` an int* (a parameter's array
     * decays to a pointer). */
    int plain = 1;
    for (int i = from; i < to && plain; i++) {
        if (token_is(&lx->toks[i], "[") || token_is(&lx->toks[i], "<")) {
            i = cukit_skip_group(lx, i) - 1;
            continue;
        }
        plain = lx->toks[i].kind == TOK_IDENT ||
                (lx->toks[i].kind == TOK_PUNCT && strchr("*&:", lx->toks[i].p[0]));
    }
    if (plain && d.n > 0) {
        pointers = d.pointers;
        if (type_text(&d, d.n, aliases, &base, &pointers) < 0)
            goto done;
    }
    else if (type_arg_text(lx, from, to, aliases, 0, &base, &d.uncertain) < 0) { /* 3, N + 1 */
        goto done;
    }
    PyObject *v = Py_BuildValue("(s#iO)", cukit_text_str(&base), (Py_ssize_t)base.n, pointers,
                                d.uncertain ? Py_True : Py_False);
    rc = v ? PyDict_SetItemString(aliases, name, v) : -1;
    Py_XDECREF(v);
done:
    words_free(&d);
    cukit_text_free(&base);
    return rc;
}

/* ------------------------------------------------------------------ device globals */

/* The count a C integer literal in an array's brackets says (16, 0x10, 020, 1'024,
 * 16u) into *count: 0, or -1 when it is not a plain integer (an expression, 1e3). */
static int
array_count(const token *t, unsigned long long *count)
{
    char num[32];
    int n = 0;
    for (int k = 0; k < t->len; k++) {
        if (t->p[k] == '\'')
            continue; /* a digit separator */
        if (n == (int)sizeof num - 1)
            return -1;
        num[n++] = t->p[k];
    }
    while (n > 0 && strchr("uUlL", num[n - 1]))
        n--;
    num[n] = '\0';
    if (n == 0 || !isdigit((unsigned char)num[0]))
        return -1;
    char *stop;
    errno = 0;
    *count = strtoull(num, &stop, 0);
    return *stop == '\0' && errno == 0 ? 0 : -1;
}

int
cukit_globals_record(const lexer *lx, int from, int to, const char *ns, PyObject *aliases,
                     PyObject *globals)
{
    int is_var = 0;
    for (int i = from; i < to; i++) {
        if (lx->toks[i].kind == TOK_PUNCT && lx->toks[i].p[0] == '(')
            return 0; /* a function, or an initializer cukit does not read */
        is_var |= token_is(&lx->toks[i], "__constant__") || token_is(&lx->toks[i], "__device__") ||
                  token_is(&lx->toks[i], "__managed__");
    }
    if (!is_var)
        return 0;
    /* The type: the words before the first declarator's name; template arguments
     * (Foo<int, 3>) are skipped, so such a type reads as unknown. */
    int i = from, name_at = -1, alias_ptrs = 0;
    decl_words d;
    memset(&d, 0, sizeof d);
    cukit_text base = {0};
    for (; i < to; i++) {
        const token *t = &lx->toks[i];
        if (t->kind == TOK_PUNCT && t->p[0] == '<') {
            i = cukit_skip_group(lx, i) - 1;
            continue;
        }
        if (t->kind == TOK_PUNCT && (t->p[0] == '[' || t->p[0] == '=' || t->p[0] == ','))
            break;
        if (t->kind != TOK_IDENT || is_qualifier(t) || token_is(t, "__constant__") ||
            token_is(t, "__device__") || token_is(t, "__managed__") || token_is(t, "static") ||
            token_is(t, "extern") || token_is(t, "__shared__") || d.n == MAX_WORDS)
            continue;
        if (cukit_text_add(&d.w[d.n++], t->p, (size_t)t->len) < 0)
            goto error;
        name_at = i;
    }
    if (d.n < 2) {
        words_free(&d);
        return 0;
    }
    if (type_text(&d, d.n - 1, aliases, &base, &alias_ptrs) < 0)
        goto error;
    const cukit_ctype *ct = cukit_ctype_find(cukit_text_str(&base));
    int base_tc = ct != NULL && ct->kind != CUKIT_P_STRUCT ? ct->typecode : CUKIT_TC_OTHER;
    words_free(&d);
    cukit_text_free(&base);
    /* Each declarator: its own '*'s, its name, [N] dimensions, an initializer. The
     * first starts at the first declarator name's stars; later ones after a comma. */
    int start = name_at;
    while (start > from && token_is(&lx->toks[start - 1], "*"))
        start--;
    for (i = start; i < to; i++) {
        int stars = 0;
        while (i < to && token_is(&lx->toks[i], "*")) {
            stars++;
            i++;
        }
        while (i < to && lx->toks[i].kind == TOK_IDENT && is_qualifier(&lx->toks[i]))
            i++; /* float * const p */
        if (i >= to || lx->toks[i].kind != TOK_IDENT)
            return 0; /* a declarator cukit does not read (function pointer, ...) */
        const token *t = &lx->toks[i];
        int next = i + 1;
        int typecode = (stars || alias_ptrs) ? CUKIT_TC_U64 : base_tc;
        PyObject *shape = PyList_New(0);
        if (shape == NULL)
            return -1;
        int j = next, known = 1;
        while (j < to && token_is(&lx->toks[j], "[")) {
            int end = cukit_skip_group(lx, j);
            if (end == j + 3 && lx->toks[j + 1].kind == TOK_NUMBER) {
                unsigned long long count;
                PyObject *n = array_count(&lx->toks[j + 1], &count) == 0
                                  ? PyLong_FromUnsignedLongLong(count) : NULL;
                if (n == NULL && PyErr_Occurred()) {
                    Py_DECREF(shape);
                    return -1;
                }
                if (n == NULL) {
                    known = 0;
                }
                else {
                    int rc = PyList_Append(shape, n);
                    Py_DECREF(n);
                    if (rc < 0) {
                        Py_DECREF(shape);
                        return -1;
                    }
                }
            }
            else {
                known = 0;
            }
            j = end;
        }
        PyObject *shape_t = known ? PyList_AsTuple(shape) : Py_NewRef(Py_None);
        Py_DECREF(shape);
        PyObject *rec = shape_t ? Py_BuildValue("(iN)", typecode, shape_t) : NULL;
        cukit_text full = {0};
        PyObject *name = NULL;
        if (rec && cukit_text_adds(&full, ns) == 0 && cukit_text_add(&full, t->p, (size_t)t->len) == 0)
            name = PyUnicode_FromStringAndSize(full.s, (Py_ssize_t)full.n);
        cukit_text_free(&full);
        if (name == NULL || PyDict_SetItem(globals, name, rec) < 0) {
            Py_XDECREF(rec);
            Py_XDECREF(name);
            return -1;
        }
        Py_DECREF(rec);
        Py_DECREF(name);
        /* skip to the next top-level comma */
        for (i = j; i < to && !token_is(&lx->toks[i], ","); i++)
            if (lx->toks[i].kind == TOK_PUNCT && strchr("([{", lx->toks[i].p[0]))
                i = cukit_skip_group(lx, i) - 1;
    }
    return 0;
error:
    words_free(&d);
    cukit_text_free(&base);
    return -1;
}
