/* params.c - C types in declarations: kernel parameter lists, device globals' types and shapes, typedef/using aliases */
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
    {"cudaTextureObject_t", CUKIT_P_TEXTURE, 8, CUKIT_TC_U64},
    {"CUtexObject", CUKIT_P_TEXTURE, 8, CUKIT_TC_U64},
    {"cudaSurfaceObject_t", CUKIT_P_SURFACE, 8, CUKIT_TC_U64},
    {"CUsurfObject", CUKIT_P_SURFACE, 8, CUKIT_TC_U64},
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
