/* lexer.c - the tokenizer and small preprocessor that kernel signatures are read from
 *
 * Everything here is bounded: the scan is one loop over an explicit stack of texts
 * (the source, then each macro body being expanded), so no input can exhaust the C
 * stack; macro expansion stops after CUKIT_EXPANSION_BUDGET units of work and the
 * rest is read as written; #if conditions are evaluated, so a dead branch costs only
 * its scan. Where cukit cannot tell, it reads more rather than less: NVRTC, not this
 * reader, decides what compiles, and the compiled kernel's parameter sizes are
 * checked against what is read here before any launch. */
#include "declarations/parse.h"

#include <ctype.h>
#include <limits.h>
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
    t->branch = lx->unknown > 0;
    t->macro = lx->maybe != 0;
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
    Py_CLEAR(lx->uncertain);
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

int
cukit_macro_defined(lexer *lx, const char *name, size_t n)
{
    if (predefined(name, n))
        return 1;
    if (n == 0)
        return 0;
    PyObject *key = PyUnicode_FromStringAndSize(name, (Py_ssize_t)n);
    if (key == NULL)
        return -1;
    int rc = lx->uncertain ? PySet_Contains(lx->uncertain, key) : 0;
    if (rc == 0)
        rc = PyDict_Contains(lx->macros, key);
    else if (rc == 1)
        rc = 2; /* (un)defined in a branch cukit could not evaluate */
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

/* ---- the #if stack */

enum { IF_TAKING = 1, IF_DONE = 2, IF_UNKNOWN = 4 };

/* 1 for a branch read without knowing whether NVRTC reads it. */
static int
uncertain_branch(unsigned char state)
{
    return (state & IF_TAKING) && (state & IF_UNKNOWN);
}

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
    lx->unknown += uncertain_branch(state);
    return 0;
}

static void
if_set(lexer *lx, unsigned char state)
{
    unsigned char *top = &lx->ifs[lx->nif - 1];
    lx->dead += !(state & IF_TAKING) - !(*top & IF_TAKING);
    lx->unknown += uncertain_branch(state) - uncertain_branch(*top);
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

/* Inside a branch cukit could not evaluate, macro `key` is (re)defined or undefined:
 * what it expands to is uncertain from here on. 0 / -1. */
static int
remember_uncertain(lexer *lx, PyObject *key)
{
    if (lx->unknown == 0)
        return 0;
    if (lx->uncertain == NULL && (lx->uncertain = PySet_New(NULL)) == NULL)
        return -1;
    return PySet_Add(lx->uncertain, key);
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
    if (rc == 0)
        rc = remember_uncertain(lx, key);
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
            v = cukit_condition(lx, s, end);
        }
        else {
            const char *q = skip_space(s, end), *e = ident_end(q, end);
            v = cukit_macro_defined(lx, q, (size_t)(e - q));
            if ((v == 0 || v == 1) && WORD("ifndef"))
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
        if (!(state & IF_DONE) && WORD("elif") && (v = cukit_condition(lx, s, end)) < 0)
            return -1;
        if_set(lx, if_branch(state, v));
        return 0;
    }
    if (WORD("endif")) {
        if (lx->nif > 0) {
            lx->dead -= !(lx->ifs[lx->nif - 1] & IF_TAKING);
            lx->unknown -= uncertain_branch(lx->ifs[lx->nif - 1]);
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
        if (rc < 0 && PyErr_ExceptionMatches(PyExc_KeyError)) {
            PyErr_Clear();
            rc = 0;
        }
        if (rc == 0)
            rc = remember_uncertain(lx, key);
        Py_DECREF(key);
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

/* Bytes of the line splice (a backslash, then a line break) at s, or 0. */
static int
splice_at(const char *s, const char *end)
{
    if (s >= end || *s != '\\')
        return 0;
    if (s + 1 < end && s[1] == '\n')
        return 2;
    if (s + 2 < end && s[1] == '\r' && s[2] == '\n')
        return 3;
    return 0;
}

/* When the identifier q[0..len) followed by s is the start of a raw string literal
 * (R"delim( ... )delim", also u8R, uR, UR, LR), the end of the literal (end when it
 * is not closed); else NULL. Its text is the string's: no comment, directive or
 * brace inside it counts. */
static const char *
raw_string_end(const char *q, int len, const char *s, const char *end)
{
    static const char *prefixes[] = {"R", "u8R", "uR", "UR", "LR"};
    int raw = 0;
    if (s >= end || *s != '"' || q[len - 1] != 'R') /* the common case, decided at once */
        return NULL;
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes && !raw; i++)
        raw = (int)strlen(prefixes[i]) == len && memcmp(prefixes[i], q, (size_t)len) == 0;
    if (!raw)
        return NULL;
    const char *d = s + 1, *open = d;
    while (open < end && open - d <= 16 && *open != '(' &&
           !strchr(" ()\\\t\v\f\n\r\"", *open))
        open++;
    if (open >= end || *open != '(' || open - d > 16)
        return NULL; /* not a raw string's delimiter: read as an identifier and a string */
    size_t dl = (size_t)(open - d);
    for (const char *c = open + 1; c + dl + 1 < end; c++)
        if (c[0] == ')' && memcmp(c + 1, d, dl) == 0 && c[dl + 1] == '"')
            return c + dl + 2;
    return end;
}

/* The end of the number that starts at s: a preprocessing number, which takes
 * letters, digits, '.', '_', digit separators (1'000'000) and the sign of an
 * exponent (1e+5, 0x1p-3), as C++ reads it. */
static const char *
number_end(const char *s, const char *end)
{
    const char *q = s;
    while (s < end) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '.' || c == '_')
            s++;
        else if (c == '\'' && s + 1 < end && (isalnum((unsigned char)s[1]) || s[1] == '_'))
            s += 2;
        else if ((c == '+' || c == '-') && s > q && strchr("eEpP", s[-1]))
            s++;
        else
            break;
    }
    return s;
}

/* The end of the directive line that starts at s: its first line break that is not
 * spliced and not inside a comment or string (a comment may carry it over lines). */
static const char *
directive_end(const char *s, const char *end)
{
    while (s < end && *s != '\n') {
        int sp = splice_at(s, end);
        if (sp) {
            s += sp;
        }
        else if (*s == '/' && s + 1 < end && s[1] == '*') {
            s += 2;
            while (s + 1 < end && !(s[0] == '*' && s[1] == '/'))
                s++;
            s = s + 2 < end ? s + 2 : end;
        }
        else if (*s == '/' && s + 1 < end && s[1] == '/') {
            while (s < end && *s != '\n')
                s += splice_at(s, end) ? splice_at(s, end) : 1;
        }
        else if (*s == '"' || *s == '\'') {
            char quote = *s++;
            while (s < end && *s != quote && *s != '\n')
                s += *s == '\\' && s + 1 < end ? 2 : 1;
            s += s < end && *s == quote;
        }
        else {
            s++;
        }
    }
    return s;
}

/* One text being read: the source, or the body of the macro `name`. */
typedef struct {
    const char *s, *end;
    int buf;
    int maybe;          /* its tokens are uncertain (token.maybe) */
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
    if (++lx->spent > CUKIT_EXPANSION_BUDGET || lx->nbufs >= (1 << 26)) {
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

/* Where the comment that starts at s ends (a // comment before its line break, which
 * it keeps); NULL when s starts no comment. */
static const char *
comment_end(const char *s, const char *end)
{
    if (s + 1 >= end || s[0] != '/' || (s[1] != '/' && s[1] != '*'))
        return NULL;
    if (s[1] == '/') {
        while (s < end && *s != '\n') /* a spliced line break goes on with the comment */
            s += splice_at(s, end) ? splice_at(s, end) : 1;
        return s;
    }
    s += 2;
    while (s + 1 < end && !(s[0] == '*' && s[1] == '/'))
        s++;
    return s + 2 < end ? s + 2 : end;
}

/* Read macro `key`'s `body` next: push its frame on the stack (*frames, *nframes of
 * *cap), growing it. Steals key (the frame owns it). 0, or -1 with an exception. */
static int
push_frame(lexer *lx, frame **frames, int *nframes, int *cap, PyObject *key, PyObject *body)
{
    Py_ssize_t blen;
    const char *b = PyUnicode_AsUTF8AndSize(body, &blen);
    if (b == NULL)
        goto error;
    if (*nframes == *cap) {
        frame *grown = *cap > INT_MAX / 4
                           ? NULL : PyMem_Realloc(*frames, (size_t)*cap * 2 * sizeof **frames);
        if (grown == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        *frames = grown;
        *cap *= 2;
    }
    /* A macro defined in an uncertain branch, and all it expands, is uncertain. */
    int maybe = lx->maybe;
    if (!maybe && lx->uncertain && (maybe = PySet_Contains(lx->uncertain, key)) < 0)
        goto error;
    lx->buf = ++lx->nbufs;
    lx->maybe = maybe;
    (*frames)[(*nframes)++] = (frame){b, b + blen, lx->buf, maybe, key};
    return 0;
error:
    Py_DECREF(key);
    return -1;
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
    frames[0] = (frame){s0, end0, lx->buf, lx->maybe, NULL};
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
            if (nframes > 0) {
                lx->buf = frames[nframes - 1].buf;
                lx->maybe = frames[nframes - 1].maybe;
            }
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
        if (c == '\\' && splice_at(s, end)) { /* a line splice between tokens: nothing */
            f->s = s + splice_at(s, end);
            continue;
        }
        const char *after = comment_end(s, end);
        if (after != NULL) {
            f->s = after;
            continue;
        }
        if (c == '#' && line_start && top && !expanded) {
            const char *d = s + 1;
            s = directive_end(d, end);
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
            const char *raw = s < end && *s == '"' ? raw_string_end(q, (int)(s - q), s, end)
                                                   : NULL;
            if (raw != NULL) {
                f->s = raw;
                if (push_tok(lx, TOK_STRING, q, (int)(raw - q)) < 0)
                    goto done;
                continue;
            }
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
            if (push_frame(lx, &frames, &nframes, &cap, key, body) < 0)
                goto done;
            continue;
        }
        if (isdigit((unsigned char)c) || (c == '.' && s + 1 < end && isdigit((unsigned char)s[1]))) {
            const char *q = s;
            s = number_end(s, end);
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
    if (nframes > 0) {
        lx->buf = frames[0].buf;
        lx->maybe = frames[0].maybe;
    }
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

int
cukit_attribute_at(const lexer *lx, int i)
{
    const token *u = &lx->toks[i];
    return u->kind == TOK_IDENT && i + 1 < lx->n && token_is(&lx->toks[i + 1], "(") &&
           (token_is(u, "__launch_bounds__") || token_is(u, "__cluster_dims__") ||
            token_is(u, "__maxnreg__") || token_is(u, "__attribute__") ||
            token_is(u, "__declspec"));
}
