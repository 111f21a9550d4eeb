/* declarations.c - kernel signatures and device globals read from CUDA C source
 *
 * The reader is deliberately small: it takes the tokens of lexer.c (comments and
 * strings skipped, object-like #defines and the user's defines expanded), remembers
 * typedef/using aliases, and reads each __global__ declaration's parameter list,
 * once per name expression for template kernels (templates.c). The compiled
 * kernel's own layout is checked against what it reads before any launch
 * (signature.c). */
#include "compile/parse.h"

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

/* ------------------------------------------------------------------ parameters */

static int
is_qualifier(const token *t)
{
    for (size_t i = 0; i < sizeof qualifiers / sizeof *qualifiers; i++)
        if (token_is(t, qualifiers[i]))
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
        if (token_is(&words[i], "unsigned"))
            is_unsigned = 1;
        else if (token_is(&words[i], "signed"))
            is_signed = 1;
        else if (token_is(&words[i], "long"))
            longs++;
        else if (token_is(&words[i], "short"))
            is_short = 1;
        else if (token_is(&words[i], "char"))
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
            i = cukit_skip_group(lx, i) - 1;
            continue;
        }
        if (t->kind == TOK_PUNCT && (t->p[0] == '(' || t->p[0] == ')')) {
            parens = 1;
            continue;
        }
        if (t->kind == TOK_IDENT && (token_is(t, "__align__") || token_is(t, "alignas") ||
                                   token_is(t, "__attribute__"))) {
            if (i + 1 < to && token_is(&lx->toks[i + 1], "("))
                i = cukit_skip_group(lx, i + 1) - 1;
            continue;
        }
        if (t->kind == TOK_PUNCT && token_is(t, "::")) { /* std::size_t -> size_t; ns::T -> ns::T */
            if (nwords > 0 && i + 1 < to && lx->toks[i + 1].kind == TOK_IDENT) {
                token *w = &words[nwords - 1];
                const token *next = &lx->toks[i + 1];
                if (token_is(w, "std") || next->buf != w->buf || next->p < w->p)
                    *w = *next;
                else
                    w->len = (int)(next->p + next->len - w->p);
                i++;
            }
            continue;
        }
        if (token_is(t, "const") && pointers == 0)
            is_const_before_ptr = 1;
        if (is_qualifier(t))
            continue;
        if (t->kind == TOK_PUNCT && t->p[0] == '<') { /* template arguments join the word */
            int j = cukit_skip_group(lx, i);
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
        !token_is(&words[nwords - 1], "float") && !token_is(&words[nwords - 1], "double") &&
        !token_is(&words[nwords - 1], "bool")) {
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
    p->type = cukit_text_dup(shown, strlen(shown));
    p->name = name ? cukit_text_dup(name->p, (size_t)name->len) : cukit_text_dup("", 0);
    return (p->type && p->name) ? 0 : -1;
}

cukit_Signature *
cukit_params_read(cukit_state *st, const lexer *lx, int open, const char *name,
                  PyObject *aliases)
{
    int close = cukit_skip_group(lx, open) - 1;
    int count = 0, start = open + 1;
    int bounds[512];
    for (int i = open + 1; i <= close; i++) {
        const token *t = &lx->toks[i];
        if (t->kind == TOK_PUNCT && strchr("([<{", t->p[0])) {
            i = cukit_skip_group(lx, i) - 1;
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
    if (count == 1 && bounds[1] - bounds[0] == 1 && token_is(&lx->toks[bounds[0]], "void"))
        count = 0;
    cukit_Signature *sig = cukit_signature_alloc(st, name, count);
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
        is_var |= token_is(&lx->toks[i], "__constant__") || token_is(&lx->toks[i], "__device__") ||
                  token_is(&lx->toks[i], "__managed__");
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
            i = cukit_skip_group(lx, i) - 1;
            continue;
        }
        if (t->kind == TOK_PUNCT && (t->p[0] == '[' || t->p[0] == '=' || t->p[0] == ','))
            break;
        if (t->kind != TOK_IDENT || is_qualifier(t) || token_is(t, "__constant__") ||
            token_is(t, "__device__") || token_is(t, "__managed__") || token_is(t, "static") ||
            token_is(t, "extern") || token_is(t, "__shared__") || nwords == 16)
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
        for (i = j; i < to && !token_is(&lx->toks[i], ","); i++)
            if (lx->toks[i].kind == TOK_PUNCT && strchr("([{", lx->toks[i].p[0]))
                i = cukit_skip_group(lx, i) - 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ the walk over a file */

/* Kernels count only at file scope, in namespaces and in extern "C" { } blocks;
 * inside any other braces (a function body, a struct) nothing is read. */
enum { S_FILE, S_EXTERN_C, S_NAMESPACE, S_OTHER };
#define MAX_SCOPES 256

typedef struct {
    cukit_state *st;
    lexer lx;                   /* the source's tokens; lx.macros is owned here */
    PyObject *aliases;          /* strong ref: dict alias -> (str base, int pointer depth) */
    PyObject *out;              /* strong ref: dict kernel name -> Signature */
    PyObject *globals;          /* borrowed: dict for device variables, or NULL */
    PyObject *name_expressions; /* borrowed: tuple of str, or NULL */
    int scopes[MAX_SCOPES];     /* the kind (S_...) of each open brace */
    int ns_len[MAX_SCOPES];     /* strlen(ns) before each open brace */
    char ns[512];               /* "a::b::": the namespaces open here */
    int depth;                  /* braces open */
    int other;                  /* of those, how many are S_OTHER */
    int stmt;                   /* index of the current statement's first token */
} file_walk;

/* Copy the user's defines (name -> value, None for "1") into macros. 0 / -1. */
static int
add_defines(PyObject *macros, PyObject *defines)
{
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(defines, &pos, &k, &v)) {
        PyObject *body = v == Py_None ? PyUnicode_FromString("1") : PyObject_Str(v);
        if (body == NULL || PyDict_SetItem(macros, k, body) < 0) {
            Py_XDECREF(body);
            return -1;
        }
        Py_DECREF(body);
    }
    return 0;
}

/* The "{" at toks[i] opens a scope: extern "C", a namespace (whose name joins
 * w->ns), or anything else. */
static void
open_scope(file_walk *w, int i)
{
    const token *toks = w->lx.toks;
    int kind = S_OTHER, saved = (int)strlen(w->ns);
    if (i >= 2 && token_is(&toks[i - 1], "\"C\"") && token_is(&toks[i - 2], "extern"))
        kind = S_EXTERN_C;
    else if (i >= 1 && token_is(&toks[i - 1], "namespace"))
        kind = S_NAMESPACE; /* anonymous */
    else {
        /* namespace a { or namespace a::b { */
        int j = i - 1;
        while (j >= 1 && (toks[j].kind == TOK_IDENT || token_is(&toks[j], "::")) &&
               !token_is(&toks[j], "namespace"))
            j--;
        if (j < i - 1 && j >= 0 && token_is(&toks[j], "namespace")) {
            kind = S_NAMESPACE;
            for (int q = j + 1; q < i; q++) {
                if (toks[q].kind != TOK_IDENT)
                    continue;
                size_t used = strlen(w->ns);
                PyOS_snprintf(w->ns + used, sizeof w->ns - used, "%.*s::", toks[q].len,
                              toks[q].p);
            }
        }
    }
    if (w->depth < MAX_SCOPES) {
        w->scopes[w->depth] = kind;
        w->ns_len[w->depth] = saved;
    }
    w->depth++;
    w->other += kind == S_OTHER;
}

/* A "}" closes the innermost scope (a stray one is ignored). */
static void
close_scope(file_walk *w)
{
    if (w->depth == 0)
        return;
    w->depth--;
    int kind = w->depth < MAX_SCOPES ? w->scopes[w->depth] : S_OTHER;
    w->other -= kind == S_OTHER;
    if (w->depth < MAX_SCOPES)
        w->ns[w->ns_len[w->depth]] = '\0';
}

/* The ";" at toks[i] ends the statement toks[w->stmt..i): at file or namespace
 * scope, remember a typedef or using alias, and device variables when asked. 0 / -1. */
static int
end_statement(file_walk *w, int i)
{
    const lexer *lx = &w->lx;
    int stmt = w->stmt;
    if (w->other != 0 || i <= stmt)
        return 0;
    int is_typedef = token_is(&lx->toks[stmt], "typedef");
    int is_using = token_is(&lx->toks[stmt], "using");
    if ((is_typedef || is_using) && cukit_alias_record(lx, stmt, i, w->aliases, is_using) < 0)
        return -1;
    if (w->globals && record_globals(lx, stmt, i, w->ns, w->aliases, w->globals) < 0)
        return -1;
    return 0;
}

/* Index of the "(" opening the parameter list of the kernel whose __global__ is
 * toks[i], past attributes such as __launch_bounds__(...); -1 when the
 * declaration is not one cukit can read. */
static int
parameter_list_at(const lexer *lx, int i)
{
    int j = i + 1;
    while (j < lx->n) {
        const token *u = &lx->toks[j];
        if (u->kind == TOK_IDENT && j + 1 < lx->n && token_is(&lx->toks[j + 1], "(") &&
            (token_is(u, "__launch_bounds__") || token_is(u, "__cluster_dims__") ||
             token_is(u, "__maxnreg__") || token_is(u, "__attribute__") ||
             token_is(u, "__declspec"))) {
            j = cukit_skip_group(lx, j + 1);
            continue;
        }
        if (u->kind == TOK_PUNCT && (u->p[0] == '(' || u->p[0] == ';' || u->p[0] == '{' ||
                                   u->p[0] == '<'))
            break;
        j++;
    }
    /* The name is the identifier right before the parameter list. */
    if (j >= lx->n || !token_is(&lx->toks[j], "(") || lx->toks[j - 1].kind != TOK_IDENT)
        return -1;
    return j;
}

/* The __global__ at toks[i]: read the kernel's parameter list into w->out, under
 * its name (with its namespaces unless extern "C"), or once per name expression
 * for a template. Returns the index of the list's ")" to go on after, i when the
 * declaration is not one cukit can read; -1 with an exception. */
static int
read_kernel(file_walk *w, int i)
{
    const lexer *lx = &w->lx;
    int is_template = 0, extern_c = 0;
    for (int j = w->stmt; j < i; j++) {
        if (token_is(&lx->toks[j], "template"))
            is_template = 1;
        if (token_is(&lx->toks[j], "extern") && j + 1 < i && token_is(&lx->toks[j + 1], "\"C\""))
            extern_c = 1;
    }
    for (int d = 0; d < w->depth && d < MAX_SCOPES; d++)
        extern_c |= w->scopes[d] == S_EXTERN_C;
    int open = parameter_list_at(lx, i);
    if (open < 0)
        return i;
    const token *name_tok = &lx->toks[open - 1];
    if (is_template) {
        char base[512];
        PyOS_snprintf(base, sizeof base, "%s%.*s", w->ns, name_tok->len, name_tok->p);
        if (w->name_expressions &&
            cukit_template_instantiate(w->st, lx, w->stmt, open, base, w->aliases,
                                       w->name_expressions, w->out) < 0)
            return -1;
        return cukit_skip_group(lx, open) - 1;
    }
    char name[512];
    PyOS_snprintf(name, sizeof name, "%s%.*s", extern_c ? "" : w->ns, name_tok->len, name_tok->p);
    cukit_Signature *sig = cukit_params_read(w->st, lx, open, name, w->aliases);
    if (sig == NULL)
        return -1;
    sig->extern_c = extern_c;
    /* A later definition replaces an earlier declaration (it has the names). */
    int rc = PyDict_SetItemString(w->out, name, (PyObject *)sig);
    Py_DECREF(sig);
    if (rc < 0)
        return -1;
    return cukit_skip_group(lx, open) - 1;
}

PyObject *
cukit_signatures_parse(cukit_state *st, const char *source, PyObject *defines,
                       PyObject *name_expressions, PyObject *globals)
{
    file_walk w = {0};
    w.st = st;
    w.globals = globals;
    w.name_expressions = name_expressions;
    w.out = PyDict_New();
    w.aliases = PyDict_New();
    w.lx.macros = PyDict_New();
    w.lx.keep = PyList_New(0);
    w.lx.hidden = PyList_New(0);
    if (!w.out || !w.aliases || !w.lx.macros || !w.lx.keep || !w.lx.hidden)
        goto error;
    if (defines && defines != Py_None && add_defines(w.lx.macros, defines) < 0)
        goto error;
    if (cukit_tokenize(&w.lx, source, source + strlen(source), 1) < 0)
        goto error;

    /* Each token either moves between scopes, ends a statement, or starts a kernel. */
    const lexer *lx = &w.lx;
    for (int i = 0; i < lx->n; i++) {
        const token *t = &lx->toks[i];
        char punct = t->kind == TOK_PUNCT ? t->p[0] : '\0';
        if (punct == '{' && i > 0 &&
            (token_is(&lx->toks[i - 1], "=") || token_is(&lx->toks[i - 1], "]"))) {
            i = cukit_skip_group(lx, i) - 1; /* an initializer: part of the statement */
        }
        else if (punct == '{') {
            open_scope(&w, i);
            w.stmt = i + 1;
        }
        else if (punct == '}') {
            close_scope(&w);
            w.stmt = i + 1;
        }
        else if (punct == ';') {
            if (end_statement(&w, i) < 0)
                goto error;
            w.stmt = i + 1;
        }
        else if (w.other == 0 && t->kind == TOK_IDENT && token_is(t, "__global__")) {
            if ((i = read_kernel(&w, i)) < 0)
                goto error;
        }
    }
    PyMem_Free(w.lx.toks);
    Py_DECREF(w.aliases);
    Py_DECREF(w.lx.macros);
    Py_DECREF(w.lx.keep);
    Py_DECREF(w.lx.hidden);
    return w.out;
error:
    PyMem_Free(w.lx.toks);
    Py_XDECREF(w.out);
    Py_XDECREF(w.aliases);
    Py_XDECREF(w.lx.macros);
    Py_XDECREF(w.lx.keep);
    Py_XDECREF(w.lx.hidden);
    return NULL;
}
