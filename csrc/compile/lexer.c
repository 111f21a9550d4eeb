/* lexer.c - the tokenizer and small preprocessor that kernel signatures are read from */
#include "compile/parse.h"

#include <ctype.h>
#include <string.h>

static int
active(const lexer *lx)
{
    for (int i = 0; i < lx->nif && i < MAX_IF_DEPTH; i++)
        if (!lx->taking[i])
            return 0;
    return 1;
}

static int
push_tok(lexer *lx, tok_kind kind, const char *p, int len)
{
    if (!active(lx))
        return 0;
    if (lx->n == lx->cap) {
        if (lx->cap >= MAX_TOKENS) {
            PyErr_SetString(PyExc_ValueError,
                            "the source expands to too many tokens to read kernel signatures "
                            "(a macro that expands into itself?)");
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
    lx->toks[lx->n++] = (token){kind, p, len, lx->buf};
    return 0;
}

/* Names the compiler defines itself, for #ifdef. */
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
    while (s < end && (*s == ' ' || *s == '\t'))
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

/* Value of a #if condition: 1, 0, or 2 when cukit cannot tell (both branches are
 * then read, and the compiled kernel's layout check remains the safety net). */
static int
condition(lexer *lx, const char *s, const char *end)
{
    int negate = 0;
    s = skip_space(s, end);
    while (end > s && isspace((unsigned char)end[-1]))
        end--;
    if (s < end && *s == '!') {
        negate = 1;
        s = skip_space(s + 1, end);
    }
    int v = 2;
    if (end - s >= 7 && strncmp(s, "defined", 7) == 0) {
        const char *q = skip_space(s + 7, end);
        int paren = q < end && *q == '(';
        if (paren)
            q = skip_space(q + 1, end);
        const char *e = ident_end(q, end);
        const char *after = skip_space(e, end);
        if (paren && after < end && *after == ')')
            after = skip_space(after + 1, end);
        if (e > q && after == end)
            v = is_defined(lx, q, (size_t)(e - q));
    }
    else if (s < end && isdigit((unsigned char)*s)) {
        char *stop;
        char tmp[32];
        size_t n = (size_t)(end - s) < sizeof tmp - 1 ? (size_t)(end - s) : sizeof tmp - 1;
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        long x = strtol(tmp, &stop, 0);
        if (*skip_space(stop, stop + strlen(stop)) == '\0')
            v = x != 0;
    }
    if (v < 0)
        return -1;
    return v == 2 ? 2 : (negate ? !v : v);
}

/* Handle one directive line (without its '#'): conditionals and #define. */
static int
directive(lexer *lx, const char *s, const char *end)
{
    s = skip_space(s, end);
    const char *w = s;
    s = ident_end(s, end);
    size_t wl = (size_t)(s - w);
#define WORD(x) (wl == strlen(x) && memcmp(w, x, wl) == 0)
    if (WORD("ifdef") || WORD("ifndef") || WORD("if")) {
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
        if (v < 0)
            return -1;
        if (lx->nif < MAX_IF_DEPTH) {
            lx->taking[lx->nif] = v != 0;
            lx->taken[lx->nif] = v == 2 ? 2 : v;
        }
        lx->nif++;
        return 0;
    }
    if (WORD("elif") || WORD("else")) {
        int i = lx->nif - 1;
        if (i < 0 || i >= MAX_IF_DEPTH)
            return 0;
        if (lx->taken[i] == 1) {
            lx->taking[i] = 0;
            return 0;
        }
        int v = WORD("else") ? 1 : condition(lx, s, end);
        if (v < 0)
            return -1;
        if (lx->taken[i] == 2 && v != 2)
            v = 2; /* an unknown branch came before: read this one too */
        lx->taking[i] = v != 0;
        lx->taken[i] = v == 2 ? 2 : v;
        return 0;
    }
    if (WORD("endif")) {
        if (lx->nif > 0)
            lx->nif--;
        return 0;
    }
    if (!WORD("define") || !active(lx))
        return 0;
#undef WORD
    s = skip_space(s, end);
    const char *name = s;
    s = ident_end(s, end);
    if (s == name || (s < end && *s == '('))
        return 0;
    PyObject *key = PyUnicode_FromStringAndSize(name, s - name);
    /* Line continuations inside the body become spaces. */
    PyObject *raw = PyUnicode_DecodeUTF8(s, end - s, "replace");
    PyObject *body = NULL;
    if (raw) {
        PyObject *t = PyObject_CallMethod(raw, "replace", "ss", "\\\r\n", " ");
        body = t ? PyObject_CallMethod(t, "replace", "ss", "\\\n", " ") : NULL;
        Py_XDECREF(t);
    }
    Py_XDECREF(raw);
    int rc = (key && body) ? PyDict_SetItem(lx->macros, key, body) : -1;
    Py_XDECREF(key);
    Py_XDECREF(body);
    return rc;
}

/* Expand an identifier that names a macro into its body's tokens; 1 if expanded.
 * A macro is never expanded inside its own expansion (as in C). */
static int
expand(lexer *lx, const char *p, int len)
{
    PyObject *key = PyUnicode_FromStringAndSize(p, len);
    if (key == NULL)
        return -1;
    PyObject *body = PyDict_GetItemWithError(lx->macros, key);
    int hidden = body ? PySequence_Contains(lx->hidden, key) : 0;
    if (body == NULL || hidden != 0 || !active(lx)) {
        Py_DECREF(key);
        return (PyErr_Occurred() || hidden < 0) ? -1 : 0;
    }
    Py_ssize_t blen;
    const char *b = PyUnicode_AsUTF8AndSize(body, &blen);
    if (b == NULL || PyList_Append(lx->keep, body) < 0 || PyList_Append(lx->hidden, key) < 0) {
        Py_DECREF(key);
        return -1;
    }
    Py_DECREF(key);
    int saved = lx->buf;
    lx->buf = ++lx->nbufs;
    int rc = cukit_tokenize(lx, b, b + blen, 0);
    lx->buf = saved;
    if (PySequence_DelItem(lx->hidden, PyList_GET_SIZE(lx->hidden) - 1) < 0)
        return -1;
    return rc < 0 ? -1 : 1;
}

static int
is_ident_char(unsigned char c)
{
    return isalnum(c) || c == '_' || c >= 0x80; /* UTF-8 identifiers stay whole */
}

int
cukit_tokenize(lexer *lx, const char *s, const char *end, int top)
{
    int line_start = 1;
    while (s < end) {
        char c = *s;
        if (c == '\n') {
            line_start = 1;
            s++;
            continue;
        }
        if (isspace((unsigned char)c)) {
            s++;
            continue;
        }
        if (c == '/' && s + 1 < end && s[1] == '/') {
            while (s < end && *s != '\n')
                s++;
            continue;
        }
        if (c == '/' && s + 1 < end && s[1] == '*') {
            s += 2;
            while (s + 1 < end && !(s[0] == '*' && s[1] == '/'))
                s++;
            s = s + 2 < end ? s + 2 : end;
            continue;
        }
        if (c == '#' && line_start && top) {
            const char *d = s + 1;
            while (s < end && !(*s == '\n' && s[-1] != '\\' && !(s[-1] == '\r' && s[-2] == '\\')))
                s++;
            if (directive(lx, d, s) < 0)
                return -1;
            continue;
        }
        line_start = 0;
        if (c == '"' || c == '\'') {
            const char *q = s++;
            while (s < end && *s != c) {
                if (*s == '\\')
                    s++;
                s++;
            }
            s = s < end ? s + 1 : end;
            if (push_tok(lx, TOK_STRING, q, (int)(s - q)) < 0)
                return -1;
            continue;
        }
        if (isalpha((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80) {
            const char *q = s;
            while (s < end && is_ident_char((unsigned char)*s))
                s++;
            int r = expand(lx, q, (int)(s - q));
            if (r < 0)
                return -1;
            if (r == 0 && push_tok(lx, TOK_IDENT, q, (int)(s - q)) < 0)
                return -1;
            continue;
        }
        if (isdigit((unsigned char)c)) {
            const char *q = s;
            while (s < end && (isalnum((unsigned char)*s) || *s == '.' || *s == '_'))
                s++;
            if (push_tok(lx, TOK_NUMBER, q, (int)(s - q)) < 0)
                return -1;
            continue;
        }
        int len = (c == ':' && s + 1 < end && s[1] == ':') ? 2 : 1;
        if (push_tok(lx, TOK_PUNCT, s, len) < 0)
            return -1;
        s += len;
    }
    return 0;
}

int
cukit_skip_group(const lexer *lx, int i)
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
            return i + 1;
    }
    return lx->n;
}
