/* signature.c - cukit.Signature: __global__ parameter lists parsed from CUDA C source
 *
 * The parser is deliberately small: it tokenizes the source (comments and
 * strings skipped, object-like #defines and the user's defines expanded,
 * typedef/using aliases remembered) and reads each __global__ declaration's
 * parameter list. It never has the last word on layout: a kernel's Signature is
 * checked against the compiled kernel's own parameter sizes before any launch. */
#include "compile/compile.h"

#include <ctype.h>
#include <string.h>

/* ------------------------------------------------------------------ C types */

static const struct {
    const char *name;
    cukit_param_kind kind;
    size_t size;
    int typecode; /* of a scalar, and of the elements a T* accepts */
    size_t align; /* 0: the size, up to 8 */
} c_types[] = {
    {"bool", CUKIT_P_BOOL, 1, CUKIT_TC_BOOL},
    {"char", CUKIT_P_INT, 1, CUKIT_TC_ANY},
    {"signed char", CUKIT_P_INT, 1, CUKIT_TC_I8},
    {"unsigned char", CUKIT_P_UINT, 1, CUKIT_TC_U8},
    {"short", CUKIT_P_INT, 2, CUKIT_TC_I16},
    {"unsigned short", CUKIT_P_UINT, 2, CUKIT_TC_U16},
    {"int", CUKIT_P_INT, 4, CUKIT_TC_I32},
    {"unsigned int", CUKIT_P_UINT, 4, CUKIT_TC_U32},
    {"long", CUKIT_P_INT, 8, CUKIT_TC_I64}, /* LP64: Linux */
    {"unsigned long", CUKIT_P_UINT, 8, CUKIT_TC_U64},
    {"long long", CUKIT_P_INT, 8, CUKIT_TC_I64},
    {"unsigned long long", CUKIT_P_UINT, 8, CUKIT_TC_U64},
    {"int8_t", CUKIT_P_INT, 1, CUKIT_TC_I8},
    {"uint8_t", CUKIT_P_UINT, 1, CUKIT_TC_U8},
    {"int16_t", CUKIT_P_INT, 2, CUKIT_TC_I16},
    {"uint16_t", CUKIT_P_UINT, 2, CUKIT_TC_U16},
    {"int32_t", CUKIT_P_INT, 4, CUKIT_TC_I32},
    {"uint32_t", CUKIT_P_UINT, 4, CUKIT_TC_U32},
    {"int64_t", CUKIT_P_INT, 8, CUKIT_TC_I64},
    {"uint64_t", CUKIT_P_UINT, 8, CUKIT_TC_U64},
    {"size_t", CUKIT_P_UINT, 8, CUKIT_TC_U64},
    {"ssize_t", CUKIT_P_INT, 8, CUKIT_TC_I64},
    {"ptrdiff_t", CUKIT_P_INT, 8, CUKIT_TC_I64},
    {"intptr_t", CUKIT_P_INT, 8, CUKIT_TC_I64},
    {"uintptr_t", CUKIT_P_UINT, 8, CUKIT_TC_U64},
    {"float", CUKIT_P_FLOAT, 4, CUKIT_TC_F32},
    {"double", CUKIT_P_FLOAT, 8, CUKIT_TC_F64},
    {"half", CUKIT_P_HALF, 2, CUKIT_TC_F16},
    {"__half", CUKIT_P_HALF, 2, CUKIT_TC_F16},
    {"__nv_bfloat16", CUKIT_P_BF16, 2, CUKIT_TC_BF16},
    {"nv_bfloat16", CUKIT_P_BF16, 2, CUKIT_TC_BF16},
    {"float2", CUKIT_P_STRUCT, 8, CUKIT_TC_C64},
    {"cuFloatComplex", CUKIT_P_STRUCT, 8, CUKIT_TC_C64},
    {"cuComplex", CUKIT_P_STRUCT, 8, CUKIT_TC_C64},
    {"double2", CUKIT_P_STRUCT, 16, CUKIT_TC_C128, 16},
    {"cuDoubleComplex", CUKIT_P_STRUCT, 16, CUKIT_TC_C128, 16},
    {"void", CUKIT_P_STRUCT, 0, CUKIT_TC_ANY},
};

/* Words that only ever qualify a parameter; they do not change what it takes. */
static const char *qualifiers[] = {
    "const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "class",
    "union", "typename", "__grid_constant__", "register", "enum",
};

/* ------------------------------------------------------------------ tokens */

typedef enum { TOK_IDENT, TOK_NUMBER, TOK_STRING, TOK_PUNCT } tok_kind;

typedef struct {
    tok_kind kind;
    const char *p;
    int len;
    int buf;            /* which text p points into: tokens join only within one */
} token;

#define MAX_TOKENS (1 << 22) /* a bound on macro expansion, far above real kernels */
#define MAX_IF_DEPTH 64

typedef struct {
    token *toks;
    int n, cap;
    PyObject *macros;   /* borrowed: dict str name -> str body (object-like only) */
    PyObject *keep;     /* list of str whose buffers tokens point into */
    PyObject *hidden;   /* list of macro names being expanded: never expanded again inside */
    int buf;            /* id of the text being tokenized */
    int nbufs;
    /* #if nesting: each level is taking its branch, has taken one, or is unknown */
    int nif;
    signed char taking[MAX_IF_DEPTH];
    signed char taken[MAX_IF_DEPTH];
} lexer;

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

static int tokenize(lexer *lx, const char *s, const char *end, int top);

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
    int rc = tokenize(lx, b, b + blen, 0);
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

static int
tokenize(lexer *lx, const char *s, const char *end, int top)
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

static int
is(const token *t, const char *text)
{
    return (int)strlen(text) == t->len && memcmp(t->p, text, (size_t)t->len) == 0;
}

/* Index just past the group opened at toks[i] (one of "(", "[", "<", "{"). */
static int
skip_group(const lexer *lx, int i)
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

/* ------------------------------------------------------------------ parameters */

typedef struct {
    PyObject *aliases; /* borrowed: dict alias -> (str base, int pointer depth) */
} scope_info;

static char *
dup_text(const char *s, size_t n)
{
    char *out = PyMem_Malloc(n + 1);
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

static int
is_qualifier(const token *t)
{
    for (size_t i = 0; i < sizeof qualifiers / sizeof *qualifiers; i++)
        if (is(t, qualifiers[i]))
            return 1;
    return 0;
}

static int
is_int_word(const char *w, size_t n)
{
    static const char *words[] = {"signed", "unsigned", "short", "long", "int", "char"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i]) == n && memcmp(words[i], w, n) == 0)
            return 1;
    return 0;
}

/* "unsigned long int" -> "unsigned long"; "signed" -> "int". Writes into out. */
static void
canonical_int(const token *words, int n, char *out, size_t cap)
{
    int is_unsigned = 0, is_signed = 0, longs = 0, is_short = 0, is_char = 0;
    for (int i = 0; i < n; i++) {
        if (is(&words[i], "unsigned"))
            is_unsigned = 1;
        else if (is(&words[i], "signed"))
            is_signed = 1;
        else if (is(&words[i], "long"))
            longs++;
        else if (is(&words[i], "short"))
            is_short = 1;
        else if (is(&words[i], "char"))
            is_char = 1;
    }
    const char *base = is_char ? "char" : is_short ? "short" : longs >= 2 ? "long long"
                                                     : longs ? "long" : "int";
    const char *sign = is_unsigned ? "unsigned " : (is_signed && is_char) ? "signed " : "";
    PyOS_snprintf(out, cap, "%s%s", sign, base);
}

/* The type named by words[0..n): canonical for integer words ("unsigned long
 * long"), else the words joined, then typedef/using aliases applied until the name
 * is not an alias (each may add pointer levels to *pointers). */
static void
type_name(const token *words, int n, PyObject *aliases, char *base, size_t cap, int *pointers)
{
    int all_int = 1;
    for (int i = 0; i < n; i++)
        all_int &= is_int_word(words[i].p, (size_t)words[i].len);
    base[0] = '\0';
    if (all_int) {
        canonical_int(words, n, base, cap);
    }
    else {
        size_t used = 0;
        for (int i = 0; i < n && used + (size_t)words[i].len + 2 < cap; i++)
            used += (size_t)PyOS_snprintf(base + used, cap - used, "%s%.*s", used ? " " : "",
                                          words[i].len, words[i].p);
    }
    for (int guard = 0; aliases && guard < 16; guard++) {
        PyObject *hit = PyDict_GetItemString(aliases, base);
        if (hit == NULL)
            break;
        PyOS_snprintf(base, cap, "%s", PyUnicode_AsUTF8(PyTuple_GET_ITEM(hit, 0)));
        *pointers += (int)PyLong_AsLong(PyTuple_GET_ITEM(hit, 1));
    }
}

/* Fill p from the tokens of one parameter declaration. */
static int
parse_param(const lexer *lx, int from, int to, PyObject *aliases, cukit_param *p)
{
    token words[16];
    int nwords = 0, pointers = 0, is_const_before_ptr = 0, arrays = 0, parens = 0;
    for (int i = from; i < to; i++) {
        const token *t = &lx->toks[i];
        if (t->kind == TOK_PUNCT && t->p[0] == '=')
            break; /* a default argument */
        if (t->kind == TOK_PUNCT && (t->p[0] == '*' || t->p[0] == '&')) {
            pointers++;
            continue;
        }
        if (t->kind == TOK_PUNCT && t->p[0] == '[') {
            /* T x[] and T x[][4] are one pointer; T (*x)[4] already counted its '*' */
            if (arrays++ == 0 && !parens)
                pointers++;
            i = skip_group(lx, i) - 1;
            continue;
        }
        if (t->kind == TOK_PUNCT && (t->p[0] == '(' || t->p[0] == ')')) {
            parens = 1;
            continue;
        }
        if (t->kind == TOK_IDENT && (is(t, "__align__") || is(t, "alignas") ||
                                   is(t, "__attribute__"))) {
            if (i + 1 < to && is(&lx->toks[i + 1], "("))
                i = skip_group(lx, i + 1) - 1;
            continue;
        }
        if (t->kind == TOK_PUNCT && is(t, "::")) { /* std::size_t -> size_t; ns::T -> ns::T */
            if (nwords > 0 && i + 1 < to && lx->toks[i + 1].kind == TOK_IDENT) {
                token *w = &words[nwords - 1];
                const token *next = &lx->toks[i + 1];
                if (is(w, "std") || next->buf != w->buf || next->p < w->p)
                    *w = *next;
                else
                    w->len = (int)(next->p + next->len - w->p);
                i++;
            }
            continue;
        }
        if (is(t, "const") && pointers == 0)
            is_const_before_ptr = 1;
        if (is_qualifier(t))
            continue;
        if (t->kind == TOK_PUNCT && t->p[0] == '<') { /* template arguments join the word */
            int j = skip_group(lx, i);
            const token *last = &lx->toks[j - 1];
            if (nwords > 0 && last->buf == words[nwords - 1].buf &&
                last->p > words[nwords - 1].p) {
                token *w = &words[nwords - 1];
                w->len = (int)(last->p + last->len - w->p);
            }
            i = j - 1;
            continue;
        }
        if (nwords == (int)(sizeof words / sizeof *words))
            break;
        words[nwords++] = *t;
    }
    /* The last word is the parameter's name unless it is part of the type. */
    const token *name = NULL;
    if (nwords >= 2 && words[nwords - 1].kind == TOK_IDENT &&
        !is_int_word(words[nwords - 1].p, (size_t)words[nwords - 1].len) &&
        !is(&words[nwords - 1], "float") && !is(&words[nwords - 1], "double") &&
        !is(&words[nwords - 1], "bool")) {
        name = &words[--nwords];
    }
    if (nwords == 0) {
        PyErr_SetString(PyExc_ValueError, "a kernel parameter has no type");
        return -1;
    }
    char base[256];
    type_name(words, nwords, aliases, base, sizeof base, &pointers);
    p->kind = CUKIT_P_STRUCT;
    p->typecode = CUKIT_TC_ANY; /* a pointer to an unknown struct takes any array */
    p->size = 0;
    p->align = 0;
    for (size_t i = 0; i < sizeof c_types / sizeof *c_types; i++) {
        if (strcmp(c_types[i].name, base) == 0) {
            p->kind = c_types[i].kind;
            p->size = c_types[i].size;
            p->typecode = c_types[i].typecode;
            p->align = c_types[i].align;
            break;
        }
    }
    if (pointers > 0) {
        if (pointers > 1)
            p->typecode = CUKIT_TC_PTR;
        p->kind = CUKIT_P_POINTER;
        p->size = 8;
    }
    else if (strcmp(base, "void") == 0) {
        PyErr_SetString(PyExc_ValueError, "a kernel parameter cannot have type void");
        return -1;
    }
    char shown[300];
    PyOS_snprintf(shown, sizeof shown, "%s%s%.*s", is_const_before_ptr && pointers ? "const " : "",
                  base, pointers, "********************************");
    p->type = dup_text(shown, strlen(shown));
    p->name = name ? dup_text(name->p, (size_t)name->len) : dup_text("", 0);
    return (p->type && p->name) ? 0 : -1;
}

/* ------------------------------------------------------------------ the object */

static cukit_Signature *
signature_alloc(cukit_state *st, const char *name, int nparams)
{
    cukit_Signature *sig = PyObject_New(cukit_Signature, st->SignatureType);
    if (sig == NULL)
        return NULL;
    sig->name = NULL;
    sig->params = NULL;
    sig->nparams = 0;
    sig->extern_c = 0;
    sig->arg_bytes = 0;
    sig->verified = 0;
    sig->name = dup_text(name, strlen(name));
    sig->params = PyMem_Calloc(nparams ? (size_t)nparams : 1, sizeof(cukit_param));
    if (sig->name == NULL || sig->params == NULL) {
        Py_DECREF(sig);
        return (cukit_Signature *)PyErr_NoMemory();
    }
    return sig;
}

static void
signature_dealloc(cukit_Signature *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    for (int i = 0; i < self->nparams; i++) {
        PyMem_Free(self->params[i].type);
        PyMem_Free(self->params[i].name);
    }
    PyMem_Free(self->params);
    PyMem_Free(self->name);
    PyObject_Free(self);
    Py_DECREF(tp);
}

/* Parse the parameter list whose "(" is toks[open]. New ref or NULL. */
static cukit_Signature *
parse_params(cukit_state *st, const lexer *lx, int open, const char *name, PyObject *aliases)
{
    int close = skip_group(lx, open) - 1;
    int count = 0, start = open + 1;
    int bounds[512];
    for (int i = open + 1; i <= close; i++) {
        const token *t = &lx->toks[i];
        if (t->kind == TOK_PUNCT && strchr("([<{", t->p[0])) {
            i = skip_group(lx, i) - 1;
            continue;
        }
        if (i == close || (t->kind == TOK_PUNCT && t->p[0] == ',')) {
            if (i > start && count == 256) {
                PyErr_Format(PyExc_ValueError, "kernel %s has more than 256 parameters", name);
                return NULL;
            }
            if (i > start) {
                bounds[2 * count] = start;
                bounds[2 * count + 1] = i;
                count++;
            }
            start = i + 1;
        }
    }
    /* `(void)` declares no parameters. */
    if (count == 1 && bounds[1] - bounds[0] == 1 && is(&lx->toks[bounds[0]], "void"))
        count = 0;
    cukit_Signature *sig = signature_alloc(st, name, count);
    if (sig == NULL)
        return NULL;
    for (int k = 0; k < count; k++) {
        if (parse_param(lx, bounds[2 * k], bounds[2 * k + 1], aliases, &sig->params[k]) < 0) {
            sig->nparams = k + 1;
            Py_DECREF(sig);
            return NULL;
        }
        sig->nparams = k + 1;
    }
    return sig;
}

/* Remember `typedef ... NAME;` and `using NAME = ...;` written at file scope. */
static int
record_alias(const lexer *lx, int from, int to, PyObject *aliases, int is_using)
{
    int name_at, type_from, type_to;
    if (is_using) { /* using NAME = type ; */
        if (to - from < 4 || !is(&lx->toks[from + 2], "="))
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
    int pointers = 0, nwords = 0;
    char base[256] = "";
    size_t used = 0;
    token ints[8];
    int nints = 0, all_int = 1;
    for (int i = type_from; i < type_to; i++) {
        const token *t = &lx->toks[i];
        if (t->kind == TOK_PUNCT && (t->p[0] == '{' || t->p[0] == '('))
            return 0; /* typedef struct {...} or a function pointer: stays opaque */
        if (t->kind == TOK_PUNCT && t->p[0] == '*') {
            pointers++;
            continue;
        }
        if (is_qualifier(t) || t->kind != TOK_IDENT)
            continue;
        nwords++;
        if (is_int_word(t->p, (size_t)t->len) && nints < 8)
            ints[nints++] = *t;
        else
            all_int = 0;
        used += (size_t)PyOS_snprintf(base + used, sizeof base - used, "%s%.*s", used ? " " : "",
                                      t->len, t->p);
        if (used >= sizeof base - 1)
            return 0;
    }
    if (nwords == 0 || lx->toks[name_at].kind != TOK_IDENT)
        return 0;
    if (all_int)
        canonical_int(ints, nints, base, sizeof base);
    PyObject *v = Py_BuildValue("(si)", base, pointers);
    PyObject *k = PyUnicode_FromStringAndSize(lx->toks[name_at].p, lx->toks[name_at].len);
    int rc = (v && k) ? PyDict_SetItem(aliases, k, v) : -1;
    Py_XDECREF(v);
    Py_XDECREF(k);
    return rc;
}

/* ------------------------------------------------------------------ device globals */

/* `__constant__ float coef[16];` or `__device__ int a, b[2][3];` at file or namespace
 * scope: record each variable as name -> (element typecode, shape tuple or None when
 * a dimension is not a plain number). Declarations cukit cannot read are left out;
 * get_global then asks for dtype and shape. */
static int
record_globals(const lexer *lx, int from, int to, const char *ns, PyObject *aliases,
               PyObject *globals)
{
    int is_var = 0;
    for (int i = from; i < to; i++) {
        if (lx->toks[i].kind == TOK_PUNCT && lx->toks[i].p[0] == '(')
            return 0; /* a function, or an initializer cukit does not read */
        is_var |= is(&lx->toks[i], "__constant__") || is(&lx->toks[i], "__device__") ||
                  is(&lx->toks[i], "__managed__");
    }
    if (!is_var)
        return 0;
    /* The type: the words before the first declarator's name; template arguments
     * (Foo<int, 3>) are skipped, so such a type reads as unknown. */
    char base[256];
    int i = from, name_at = -1, alias_ptrs = 0;
    token words[16];
    int nwords = 0;
    for (; i < to; i++) {
        const token *t = &lx->toks[i];
        if (t->kind == TOK_PUNCT && t->p[0] == '<') {
            i = skip_group(lx, i) - 1;
            continue;
        }
        if (t->kind == TOK_PUNCT && (t->p[0] == '[' || t->p[0] == '=' || t->p[0] == ','))
            break;
        if (t->kind != TOK_IDENT || is_qualifier(t) || is(t, "__constant__") ||
            is(t, "__device__") || is(t, "__managed__") || is(t, "static") || is(t, "extern") ||
            is(t, "__shared__") || nwords == 16)
            continue;
        words[nwords++] = *t;
        name_at = i;
    }
    if (nwords < 2)
        return 0;
    type_name(words, nwords - 1, aliases, base, sizeof base, &alias_ptrs);
    int base_tc = CUKIT_TC_OTHER;
    for (size_t c = 0; c < sizeof c_types / sizeof *c_types; c++)
        if (strcmp(c_types[c].name, base) == 0 && c_types[c].kind != CUKIT_P_STRUCT)
            base_tc = c_types[c].typecode == CUKIT_TC_ANY ? CUKIT_TC_I8 : c_types[c].typecode;
    /* Each declarator: its own '*'s, its name, [N] dimensions, an initializer. The
     * first starts at the first declarator name's stars; later ones after a comma. */
    int start = name_at;
    while (start > from && is(&lx->toks[start - 1], "*"))
        start--;
    for (i = start; i < to; i++) {
        int stars = 0;
        while (i < to && is(&lx->toks[i], "*")) {
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
        while (j < to && is(&lx->toks[j], "[")) {
            int end = skip_group(lx, j);
            if (end == j + 3 && lx->toks[j + 1].kind == TOK_NUMBER) {
                char num[32];
                PyOS_snprintf(num, sizeof num, "%.*s", lx->toks[j + 1].len, lx->toks[j + 1].p);
                PyObject *n = PyLong_FromString(num, NULL, 0);
                if (n == NULL) { /* 16u, 1e3: not a plain count */
                    PyErr_Clear();
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
        char name[512];
        PyOS_snprintf(name, sizeof name, "%s%.*s", ns, t->len, t->p);
        PyObject *shape_t = known ? PyList_AsTuple(shape) : Py_NewRef(Py_None);
        Py_DECREF(shape);
        PyObject *rec = shape_t ? Py_BuildValue("(iN)", typecode, shape_t) : NULL;
        if (rec == NULL || PyDict_SetItemString(globals, name, rec) < 0) {
            Py_XDECREF(rec);
            return -1;
        }
        Py_DECREF(rec);
        /* skip to the next top-level comma */
        for (i = j; i < to && !is(&lx->toks[i], ","); i++)
            if (lx->toks[i].kind == TOK_PUNCT && strchr("([{", lx->toks[i].p[0]))
                i = skip_group(lx, i) - 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ templates */

/* aliases[name] = what `type` is, read as if the source said `using name = type;`. */
static int
alias_from_text(const lexer *parent, PyObject *aliases, const char *name, const char *type)
{
    lexer sub = {0};
    int rc = -1;
    PyObject *text = PyUnicode_FromFormat("using %s = %s ;", name, type);
    sub.macros = parent->macros;
    sub.keep = PyList_New(0);
    sub.hidden = PyList_New(0);
    const char *t = text ? PyUnicode_AsUTF8(text) : NULL;
    if (t == NULL || sub.keep == NULL || sub.hidden == NULL || PyList_Append(sub.keep, text) < 0)
        goto done;
    if (tokenize(&sub, t, t + strlen(t), 1) < 0)
        goto done;
    rc = sub.n >= 4 ? record_alias(&sub, 0, sub.n - 1, aliases, 1) : 0;
done:
    PyMem_Free(sub.toks);
    Py_XDECREF(sub.keep);
    Py_XDECREF(sub.hidden);
    Py_XDECREF(text);
    return rc;
}

/* Copy the text between a and b (exclusive) without the spaces around it. */
static void
trimmed(const char *a, const char *b, char *out, size_t cap)
{
    while (a < b && isspace((unsigned char)*a))
        a++;
    while (b > a && isspace((unsigned char)b[-1]))
        b--;
    PyOS_snprintf(out, cap, "%.*s", (int)(b - a), a);
}

#define MAX_TEMPLATE_PARAMS 32

/* For each name expression naming the template kernel `base` ("axpy<float>"), the
 * kernel's Signature with the template parameters replaced by the expression's
 * arguments, stored in out under the expression as the user wrote it (the key
 * NVRTC lowers). toks[stmt..] holds "template < ... >"; toks[open] is the "(" of
 * the kernel's parameter list. Templates cukit cannot read are left out. */
static int
instantiate(cukit_state *st, const lexer *lx, int stmt, int open, const char *base,
            PyObject *aliases, PyObject *exprs, PyObject *out)
{
    int t = stmt;
    while (t < open && !is(&lx->toks[t], "template"))
        t++;
    if (t + 1 >= open || !is(&lx->toks[t + 1], "<"))
        return 0;
    int close = skip_group(lx, t + 1) - 1;
    struct {
        char name[128];
        int from, to; /* default argument tokens, from < 0 when none */
    } tp[MAX_TEMPLATE_PARAMS];
    int ntp = 0, start = t + 2;
    for (int k = t + 2; k <= close; k++) {
        const token *tk = &lx->toks[k];
        if (k < close && tk->kind == TOK_PUNCT && strchr("([<{", tk->p[0])) {
            k = skip_group(lx, k) - 1;
            continue;
        }
        if (k < close && !(tk->kind == TOK_PUNCT && tk->p[0] == ','))
            continue;
        if (k > start) {
            int eq = -1, ident = -1;
            for (int q = start; q < k && eq < 0; q++) {
                if (is(&lx->toks[q], "="))
                    eq = q;
                else if (is(&lx->toks[q], "."))
                    return 0; /* a parameter pack */
                else if (lx->toks[q].kind == TOK_IDENT)
                    ident = q;
            }
            if (ident < 0 || ntp == MAX_TEMPLATE_PARAMS)
                return 0;
            PyOS_snprintf(tp[ntp].name, sizeof tp[ntp].name, "%.*s", lx->toks[ident].len,
                          lx->toks[ident].p);
            tp[ntp].from = eq >= 0 ? eq + 1 : -1;
            tp[ntp].to = k;
            ntp++;
        }
        start = k + 1;
    }
    for (Py_ssize_t x = 0; x < PyTuple_GET_SIZE(exprs); x++) {
        PyObject *expr = PyTuple_GET_ITEM(exprs, x);
        const char *e = PyUnicode_AsUTF8(expr);
        if (e == NULL)
            return -1;
        while (*e == '&' || isspace((unsigned char)*e))
            e++;
        if (strncmp(e, "::", 2) == 0)
            e += 2;
        const char *lt = strchr(e, '<'), *gt = strrchr(e, '>');
        char head[512];
        if (lt == NULL || gt == NULL || gt < lt)
            continue;
        trimmed(e, lt, head, sizeof head);
        if (strcmp(head, base) != 0)
            continue;
        /* The arguments, split at commas outside brackets. */
        char args[MAX_TEMPLATE_PARAMS][256];
        int nargs = 0, depth = 0;
        const char *a = lt + 1;
        for (const char *c = lt + 1; c <= gt && nargs < MAX_TEMPLATE_PARAMS; c++) {
            if (c < gt && strchr("<([", *c))
                depth++;
            else if (c < gt && strchr(">)]", *c))
                depth--;
            else if ((c == gt || *c == ',') && depth == 0) {
                trimmed(a, c, args[nargs], sizeof args[nargs]);
                if (args[nargs][0] || c != gt || nargs > 0)
                    nargs++;
                a = c + 1;
            }
        }
        if (nargs > ntp)
            continue;
        PyObject *al = PyDict_Copy(aliases);
        if (al == NULL)
            return -1;
        int ok = 1;
        for (int p = 0; p < ntp && ok; p++) {
            char text[256] = "";
            if (p < nargs) {
                PyOS_snprintf(text, sizeof text, "%s", args[p]);
            }
            else if (tp[p].from >= 0) {
                size_t used = 0;
                for (int q = tp[p].from; q < tp[p].to && used + 2 < sizeof text; q++)
                    used += (size_t)PyOS_snprintf(text + used, sizeof text - used, "%s%.*s",
                                                  used ? " " : "", lx->toks[q].len, lx->toks[q].p);
            }
            else {
                ok = 0; /* kernels cannot deduce: NVRTC will say what is missing */
                break;
            }
            if (alias_from_text(lx, al, tp[p].name, text) < 0) {
                Py_DECREF(al);
                return -1;
            }
        }
        cukit_Signature *sig = ok ? parse_params(st, lx, open, PyUnicode_AsUTF8(expr), al) : NULL;
        Py_DECREF(al);
        if (!ok)
            continue;
        if (sig == NULL)
            return -1;
        sig->extern_c = 0;
        int rc = PyDict_SetItem(out, expr, (PyObject *)sig);
        Py_DECREF(sig);
        if (rc < 0)
            return -1;
    }
    return 0;
}

PyObject *
cukit_signatures_parse(cukit_state *st, const char *source, PyObject *defines,
                       PyObject *name_expressions, PyObject *globals)
{
    lexer lx = {0};
    PyObject *out = PyDict_New();
    PyObject *aliases = PyDict_New();
    lx.macros = PyDict_New();
    lx.keep = PyList_New(0);
    lx.hidden = PyList_New(0);
    if (!out || !aliases || !lx.macros || !lx.keep || !lx.hidden)
        goto error;
    if (defines && defines != Py_None) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(defines, &pos, &k, &v)) {
            PyObject *body = v == Py_None ? PyUnicode_FromString("1") : PyObject_Str(v);
            if (body == NULL || PyDict_SetItem(lx.macros, k, body) < 0) {
                Py_XDECREF(body);
                goto error;
            }
            Py_DECREF(body);
        }
    }
    if (tokenize(&lx, source, source + strlen(source), 1) < 0)
        goto error;

    /* Walk the tokens tracking braces: kernels count only at file scope, in
     * namespaces and in extern "C" { } blocks. */
    enum { S_FILE, S_EXTERN_C, S_NAMESPACE, S_OTHER };
    int scopes[256], ns_len[256];
    char ns[512] = "";
    int depth = 0, other = 0, stmt = 0;
    for (int i = 0; i < lx.n; i++) {
        const token *t = &lx.toks[i];
        if (t->kind == TOK_PUNCT && t->p[0] == '{' && i > 0 &&
            (is(&lx.toks[i - 1], "=") || is(&lx.toks[i - 1], "]"))) {
            i = skip_group(&lx, i) - 1; /* an initializer: part of the statement */
            continue;
        }
        if (t->kind == TOK_PUNCT && t->p[0] == '{') {
            int kind = S_OTHER, saved = (int)strlen(ns);
            if (i >= 2 && is(&lx.toks[i - 1], "\"C\"") && is(&lx.toks[i - 2], "extern"))
                kind = S_EXTERN_C;
            else if (i >= 1 && is(&lx.toks[i - 1], "namespace"))
                kind = S_NAMESPACE; /* anonymous */
            else {
                /* namespace a { or namespace a::b { */
                int j = i - 1;
                while (j >= 1 && (lx.toks[j].kind == TOK_IDENT || is(&lx.toks[j], "::")) &&
                       !is(&lx.toks[j], "namespace"))
                    j--;
                if (j < i - 1 && j >= 0 && is(&lx.toks[j], "namespace")) {
                    kind = S_NAMESPACE;
                    for (int q = j + 1; q < i; q++) {
                        if (lx.toks[q].kind != TOK_IDENT)
                            continue;
                        size_t used = strlen(ns);
                        PyOS_snprintf(ns + used, sizeof ns - used, "%.*s::", lx.toks[q].len,
                                      lx.toks[q].p);
                    }
                }
            }
            if (depth < 256) {
                scopes[depth] = kind;
                ns_len[depth] = saved;
            }
            depth++;
            other += kind == S_OTHER;
            stmt = i + 1;
            continue;
        }
        if (t->kind == TOK_PUNCT && t->p[0] == '}') {
            if (depth > 0) {
                depth--;
                int kind = depth < 256 ? scopes[depth] : S_OTHER;
                other -= kind == S_OTHER;
                if (depth < 256)
                    ns[ns_len[depth]] = '\0';
            }
            stmt = i + 1;
            continue;
        }
        if (t->kind == TOK_PUNCT && t->p[0] == ';') {
            if (other == 0 && i > stmt) {
                if (is(&lx.toks[stmt], "typedef") &&
                    record_alias(&lx, stmt, i, aliases, 0) < 0)
                    goto error;
                if (is(&lx.toks[stmt], "using") && record_alias(&lx, stmt, i, aliases, 1) < 0)
                    goto error;
                if (globals && record_globals(&lx, stmt, i, ns, aliases, globals) < 0)
                    goto error;
            }
            stmt = i + 1;
            continue;
        }
        if (other != 0 || t->kind != TOK_IDENT || !is(t, "__global__"))
            continue;

        int is_template = 0, extern_c = 0;
        for (int j = stmt; j < i; j++) {
            if (is(&lx.toks[j], "template"))
                is_template = 1;
            if (is(&lx.toks[j], "extern") && j + 1 < i && is(&lx.toks[j + 1], "\"C\""))
                extern_c = 1;
        }
        for (int d = 0; d < depth && d < 256; d++)
            extern_c |= scopes[d] == S_EXTERN_C;
        /* Find the name: the identifier right before the parameter list. */
        int j = i + 1;
        while (j < lx.n) {
            const token *u = &lx.toks[j];
            if (u->kind == TOK_IDENT && j + 1 < lx.n && is(&lx.toks[j + 1], "(") &&
                (is(u, "__launch_bounds__") || is(u, "__cluster_dims__") ||
                 is(u, "__maxnreg__") || is(u, "__attribute__") || is(u, "__declspec"))) {
                j = skip_group(&lx, j + 1);
                continue;
            }
            if (u->kind == TOK_PUNCT && (u->p[0] == '(' || u->p[0] == ';' || u->p[0] == '{' ||
                                       u->p[0] == '<'))
                break;
            j++;
        }
        if (j >= lx.n || !is(&lx.toks[j], "(") || lx.toks[j - 1].kind != TOK_IDENT)
            continue; /* not a kernel declaration we can read */
        if (is_template) { /* read once per name expression that instantiates it */
            char base[512];
            PyOS_snprintf(base, sizeof base, "%s%.*s", ns, lx.toks[j - 1].len, lx.toks[j - 1].p);
            if (name_expressions &&
                instantiate(st, &lx, stmt, j, base, aliases, name_expressions, out) < 0)
                goto error;
            i = skip_group(&lx, j) - 1;
            continue;
        }
        char name[512];
        PyOS_snprintf(name, sizeof name, "%s%.*s", extern_c ? "" : ns, lx.toks[j - 1].len,
                      lx.toks[j - 1].p);
        cukit_Signature *sig = parse_params(st, &lx, j, name, aliases);
        if (sig == NULL)
            goto error;
        sig->extern_c = extern_c;
        /* A later definition replaces an earlier declaration (it has the names). */
        int rc = PyDict_SetItemString(out, name, (PyObject *)sig);
        Py_DECREF(sig);
        if (rc < 0)
            goto error;
        i = skip_group(&lx, j) - 1;
    }
    PyMem_Free(lx.toks);
    Py_DECREF(aliases);
    Py_DECREF(lx.macros);
    Py_DECREF(lx.keep);
    Py_DECREF(lx.hidden);
    return out;
error:
    PyMem_Free(lx.toks);
    Py_XDECREF(out);
    Py_XDECREF(aliases);
    Py_XDECREF(lx.macros);
    Py_XDECREF(lx.keep);
    Py_XDECREF(lx.hidden);
    return NULL;
}

cukit_Signature *
cukit_signature_from_decl(cukit_state *st, const char *decl, const char *name)
{
    /* Read it as a kernel so the one parser handles both. */
    PyObject *src = PyUnicode_FromFormat("extern \"C\" __global__ void %s%s%s%s;",
                                         strchr(decl, '(') ? "" : (name ? name : "kernel"),
                                         strchr(decl, '(') ? "" : "(", decl,
                                         strchr(decl, '(') ? "" : ")");
    if (src == NULL)
        return NULL;
    PyObject *found = cukit_signatures_parse(st, PyUnicode_AsUTF8(src), NULL, NULL, NULL);
    Py_DECREF(src);
    if (found == NULL)
        return NULL;
    if (PyDict_GET_SIZE(found) != 1) {
        Py_DECREF(found);
        PyErr_Format(PyExc_ValueError,
                     "could not read a parameter list from '%s'; write it as "
                     "\"name(float a, const float* x)\"", decl);
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    PyDict_Next(found, &pos, &k, &v);
    cukit_Signature *sig = (cukit_Signature *)Py_NewRef(v);
    Py_DECREF(found);
    if (name && strcmp(sig->name, name) != 0) {
        char *renamed = dup_text(name, strlen(name));
        if (renamed == NULL) {
            Py_DECREF(sig);
            return NULL;
        }
        PyMem_Free(sig->name);
        sig->name = renamed;
    }
    return sig;
}

/* A copy of sig with the given layout. */
static cukit_Signature *
with_layout(cukit_state *st, cukit_Signature *sig, const size_t *offsets, const size_t *sizes,
            size_t total)
{
    cukit_Signature *out = signature_alloc(st, sig->name, sig->nparams);
    if (out == NULL)
        return NULL;
    out->extern_c = sig->extern_c;
    for (int i = 0; i < sig->nparams; i++) {
        out->params[i] = sig->params[i];
        out->params[i].type = dup_text(sig->params[i].type, strlen(sig->params[i].type));
        out->params[i].name = dup_text(sig->params[i].name, strlen(sig->params[i].name));
        out->params[i].offset = offsets[i];
        out->params[i].size = sizes[i];
        out->nparams = i + 1;
        if (!out->params[i].type || !out->params[i].name) {
            Py_DECREF(out);
            return NULL;
        }
    }
    out->arg_bytes = total;
    out->verified = 1;
    return out;
}

cukit_Signature *
cukit_signature_verify(cukit_state *st, cukit_Signature *sig, int n, const size_t *offsets,
                       const size_t *sizes)
{
    int ok = n == sig->nparams;
    size_t total = 0;
    for (int i = 0; ok && i < n; i++) {
        const cukit_param *p = &sig->params[i];
        if (p->kind != CUKIT_P_STRUCT || p->size != 0)
            ok = p->size == sizes[i] || (p->kind == CUKIT_P_STRUCT && p->typecode == CUKIT_TC_ANY);
        if (offsets[i] + sizes[i] > total)
            total = offsets[i] + sizes[i];
    }
    if (ok)
        return with_layout(st, sig, offsets, sizes, total);
    PyObject *shown = cukit_signature_str(sig);
    PyObject *sz = PyList_New(0);
    for (int i = 0; sz && i < n; i++) {
        PyObject *v = PyLong_FromSize_t(sizes[i]);
        if (v == NULL || PyList_Append(sz, v) < 0)
            Py_CLEAR(sz);
        Py_XDECREF(v);
    }
    if (shown && sz)
        PyErr_Format(PyExc_TypeError,
                     "cukit read kernel %s as %U, but the compiled kernel has %d parameter%s "
                     "of sizes %R bytes. Declare its parameters with plain C types, or give "
                     "get_kernel(name, signature=\"...\") the right list",
                     sig->name, shown, n, n == 1 ? "" : "s", sz);
    Py_XDECREF(shown);
    Py_XDECREF(sz);
    return NULL;
}

cukit_Signature *
cukit_signature_layout(cukit_state *st, cukit_Signature *sig)
{
    if (sig->verified)
        return (cukit_Signature *)Py_NewRef(sig);
    size_t offsets[CUKIT_MAX_PARAMS], sizes[CUKIT_MAX_PARAMS], at = 0;
    if (sig->nparams > CUKIT_MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "too many parameters");
        return NULL;
    }
    for (int i = 0; i < sig->nparams; i++) {
        size_t size = sig->params[i].size;
        if (size == 0) {
            PyErr_Format(PyExc_TypeError,
                         "the size of struct parameter %d (%s) is known only once the kernel "
                         "is compiled; pack it through a Kernel",
                         i + 1, sig->params[i].type);
            return NULL;
        }
        size_t align = sig->params[i].kind != CUKIT_P_POINTER && sig->params[i].align
                           ? sig->params[i].align : (size >= 8 ? 8 : size);
        at = (at + align - 1) / align * align;
        offsets[i] = at;
        sizes[i] = size;
        at += size;
    }
    return with_layout(st, sig, offsets, sizes, at);
}

PyObject *
cukit_signature_str(cukit_Signature *sig)
{
    PyObject *parts = PyList_New(0);
    if (parts == NULL)
        return NULL;
    for (int i = 0; i < sig->nparams; i++) {
        const cukit_param *p = &sig->params[i];
        PyObject *s = PyUnicode_FromFormat("%s%s%s", p->type, p->name[0] ? " " : "", p->name);
        if (s == NULL || PyList_Append(parts, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(parts);
            return NULL;
        }
        Py_DECREF(s);
    }
    PyObject *sep = PyUnicode_FromString(", ");
    PyObject *joined = sep ? PyUnicode_Join(sep, parts) : NULL;
    Py_XDECREF(sep);
    Py_DECREF(parts);
    if (joined == NULL)
        return NULL;
    PyObject *out = PyUnicode_FromFormat("%s(%U)", sig->name, joined);
    Py_DECREF(joined);
    return out;
}

/* ------------------------------------------------------------------ Python API */

int
cukit_arg_count_error(cukit_Signature *sig, Py_ssize_t given)
{
    PyObject *shown = cukit_signature_str(sig);
    if (shown == NULL)
        return -1;
    PyErr_Format(PyExc_TypeError, "%s() takes %d argument%s but %zd %s given; the kernel is %U",
                 sig->name, sig->nparams, sig->nparams == 1 ? "" : "s", given,
                 given == 1 ? "was" : "were", shown);
    Py_DECREF(shown);
    return -1;
}

static PyObject *
signature_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"declaration", NULL};
    const char *decl;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s:Signature", kwlist, &decl))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    if (strstr(decl, "__global__")) {
        PyObject *all = cukit_signatures_parse(st, decl, NULL, NULL, NULL);
        if (all == NULL)
            return NULL;
        if (PyDict_GET_SIZE(all) != 1) {
            PyErr_Format(PyExc_ValueError, "expected one __global__ declaration, found %zd",
                         PyDict_GET_SIZE(all));
            Py_DECREF(all);
            return NULL;
        }
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        PyDict_Next(all, &pos, &k, &v);
        Py_INCREF(v);
        Py_DECREF(all);
        return v;
    }
    return (PyObject *)cukit_signature_from_decl(st, decl, NULL);
}

static PyObject *
signature_repr(cukit_Signature *self)
{
    PyObject *s = cukit_signature_str(self);
    if (s == NULL)
        return NULL;
    PyObject *out = PyUnicode_FromFormat("<cukit.Signature %U>", s);
    Py_DECREF(s);
    return out;
}

static PyObject *
signature_get_name(cukit_Signature *self, void *c)
{
    return PyUnicode_FromString(self->name);
}

static PyObject *
signature_get_params(cukit_Signature *self, void *c)
{
    PyObject *out = PyTuple_New(self->nparams);
    for (int i = 0; out && i < self->nparams; i++) {
        PyObject *item = Py_BuildValue("(ss)", self->params[i].type, self->params[i].name);
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, item);
    }
    return out;
}

static PyObject *
signature_get_layout(cukit_Signature *self, void *c)
{
    if (!self->verified)
        Py_RETURN_NONE;
    PyObject *out = PyTuple_New(self->nparams);
    for (int i = 0; out && i < self->nparams; i++) {
        PyObject *item = Py_BuildValue("(nn)", (Py_ssize_t)self->params[i].offset,
                                       (Py_ssize_t)self->params[i].size);
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, item);
    }
    return out;
}

static Py_ssize_t
signature_len(cukit_Signature *self)
{
    return self->nparams;
}

static PyObject *
signature_pack(cukit_Signature *self, PyObject *const *args, Py_ssize_t nargs)
{
    cukit_state *st = cukit_state_of_type(Py_TYPE(self));
    if (cukit_numpy(st) < 0) /* numpy scalar types take part in conversion */
        return NULL;
    if (nargs != self->nparams) {
        cukit_arg_count_error(self, nargs);
        return NULL;
    }
    cukit_Signature *laid = cukit_signature_layout(st, self);
    if (laid == NULL)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)laid->arg_bytes);
    if (out != NULL) {
        unsigned char *buf = (unsigned char *)PyBytes_AS_STRING(out);
        memset(buf, 0, laid->arg_bytes);
        for (int i = 0; i < laid->nparams; i++) {
            if (st->hooks.pack_arg(st, laid, i, args[i], buf + laid->params[i].offset, NULL) < 0) {
                Py_CLEAR(out);
                break;
            }
        }
    }
    Py_DECREF(laid);
    return out;
}

static PyGetSetDef signature_getset[] = {
    {"name", (getter)signature_get_name, NULL, "The kernel's name."},
    {"params", (getter)signature_get_params, NULL, "((type, name), ...) as declared."},
    {"layout", (getter)signature_get_layout, NULL,
     "((offset, size), ...) in the compiled kernel's parameter buffer; None if not compiled."},
    {NULL},
};

static PyMethodDef signature_methods[] = {
    {"pack", (PyCFunction)(void (*)(void))signature_pack, METH_FASTCALL,
     "pack(*args) -> bytes: the parameter buffer a launch would pass, for checking "
     "conversions without a GPU."},
    {NULL},
};

static PyType_Slot signature_slots[] = {
    {Py_tp_doc, "Signature(declaration): a kernel's parameter list, e.g.\n"
                "Signature('saxpy(float a, const float* x, float* y, size_t n)')."},
    {Py_tp_new, signature_new},
    {Py_tp_dealloc, signature_dealloc},
    {Py_tp_repr, signature_repr},
    {Py_tp_str, cukit_signature_str},
    {Py_tp_getset, signature_getset},
    {Py_tp_methods, signature_methods},
    {Py_sq_length, signature_len},
    {0, NULL},
};

static PyType_Spec signature_spec = {
    .name = "cukit.Signature",
    .basicsize = sizeof(cukit_Signature),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = signature_slots,
};

int
cukit_signature_setup(PyObject *module, cukit_state *st)
{
    st->SignatureType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &signature_spec, NULL);
    if (st->SignatureType == NULL)
        return -1;
    return PyModule_AddType(module, st->SignatureType);
}
