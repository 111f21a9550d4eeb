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

/* ------------------------------------------------------------------ the walk over a file */

/* Kernels count only at file scope, in namespaces and in extern "C" { } blocks;
 * inside any other braces (a function body, a struct) nothing is read. */
enum { S_FILE, S_EXTERN_C, S_NAMESPACE, S_OTHER };

typedef struct {
    int kind;                   /* S_... */
    size_t ns_len;              /* strlen(ns) before the brace */
} scope;

typedef struct {
    cukit_state *st;
    lexer lx;                   /* the source's tokens; lx.macros is owned here */
    const char *text;           /* borrowed: the source, for messages */
    int strict;                 /* 1: a declaration the user wrote for cukit: malformed
                                   parameter lists are errors, not left to NVRTC */
    PyObject *aliases;          /* strong ref: dict alias -> (str base, int pointer depth) */
    PyObject *out;              /* strong ref: dict kernel name -> Signature */
    PyObject *globals;          /* borrowed: dict for device variables, or NULL */
    PyObject *name_expressions; /* borrowed: tuple of str, or NULL */
    PyObject *heads;            /* strong ref or NULL until needed: cukit_template_heads */
    PyObject *branchy;          /* strong ref or NULL: set of the kernels declared in a branch
                                   of #if cukit could not evaluate */
    scope *scopes;              /* owned (PyMem): one per open brace, depth of cap used */
    int depth, cap;
    cukit_text ns;              /* "a::b::": the namespaces open here */
    int other;                  /* of the open braces, how many are S_OTHER */
    int extern_c_blocks;        /* of the open braces, how many are extern "C" { */
    int stmt;                   /* index of the current statement's first token */
    int template_at;            /* index of the statement's `template`, or -1 */
    int extern_c;               /* 1: the statement says extern "C" */
    int globals_seen;           /* __global__ tokens met, and where the first two are */
    int global_at[2];
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
 * w->ns), or anything else. 0 / -1 with MemoryError. */
static int
open_scope(file_walk *w, int i)
{
    const token *toks = w->lx.toks;
    int kind = S_OTHER;
    size_t saved = w->ns.n;
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
            for (int q = j + 1; q < i; q++)
                if (toks[q].kind == TOK_IDENT &&
                    (cukit_text_add(&w->ns, toks[q].p, (size_t)toks[q].len) < 0 ||
                     cukit_text_add(&w->ns, "::", 2) < 0))
                    return -1;
        }
    }
    if (w->depth == w->cap) {
        int cap = w->cap ? w->cap * 2 : 64;
        scope *grown = cap < (1 << 28) ? PyMem_Realloc(w->scopes, (size_t)cap * sizeof *grown)
                                       : NULL;
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        w->scopes = grown;
        w->cap = cap;
    }
    w->scopes[w->depth++] = (scope){kind, saved};
    w->other += kind == S_OTHER;
    w->extern_c_blocks += kind == S_EXTERN_C;
    return 0;
}

/* A "}" closes the innermost scope (a stray one is ignored). */
static void
close_scope(file_walk *w)
{
    if (w->depth == 0)
        return;
    scope *sc = &w->scopes[--w->depth];
    w->other -= sc->kind == S_OTHER;
    w->extern_c_blocks -= sc->kind == S_EXTERN_C;
    w->ns.n = sc->ns_len;
    if (w->ns.s)
        w->ns.s[w->ns.n] = '\0';
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
    if (w->globals &&
        cukit_globals_record(lx, stmt, i, cukit_text_str(&w->ns), w->aliases, w->globals) < 0)
        return -1;
    return 0;
}

/* Index of the "(" opening the parameter list of the kernel whose __global__ is
 * toks[i], past attributes such as __launch_bounds__(...); when the declaration is
 * not one cukit can read, -(index of the token the search stopped at) - 1, so the
 * walk goes on from there and no token is searched twice. */
/* 1 when toks[i] is an attribute of a kernel with its arguments: __launch_bounds__(...). */
static int
attribute_at(const lexer *lx, int i)
{
    const token *u = &lx->toks[i];
    return u->kind == TOK_IDENT && i + 1 < lx->n && token_is(&lx->toks[i + 1], "(") &&
           (token_is(u, "__launch_bounds__") || token_is(u, "__cluster_dims__") ||
            token_is(u, "__maxnreg__") || token_is(u, "__attribute__") ||
            token_is(u, "__declspec"));
}

static int
parameter_list_at(const lexer *lx, int i)
{
    int j = i + 1;
    while (j < lx->n) {
        const token *u = &lx->toks[j];
        if (attribute_at(lx, j)) {
            j = cukit_skip_group(lx, j + 1);
            continue;
        }
        if (u->kind == TOK_PUNCT && !token_is(u, "::") && !token_is(u, "*"))
            break;
        if (u->kind == TOK_IDENT && token_is(u, "__global__"))
            break;
        j++;
    }
    /* The name is the identifier right before the parameter list. */
    if (j >= lx->n || !token_is(&lx->toks[j], "(") || lx->toks[j - 1].kind != TOK_IDENT)
        return -(j > i + 1 ? j - 1 : i) - 1;
    return j;
}

/* When kernel `name` is declared both in a branch of #if cukit could not evaluate
 * and elsewhere, with other parameters, which one NVRTC compiles is unknown: mark
 * sig's parameters uncertain. 0 / -1. */
static int
uncertain_twin(file_walk *w, const token *name_tok, const char *name, cukit_Signature *sig)
{
    PyObject *key = PyUnicode_FromString(name);
    if (key == NULL)
        return -1;
    int rc = 0, was = w->branchy ? PySet_Contains(w->branchy, key) : 0;
    PyObject *old = was < 0 ? NULL : PyDict_GetItemWithError(w->out, key);
    if (was < 0 || (old == NULL && PyErr_Occurred()))
        rc = -1;
    else if (old && (was || name_tok->branch)) {
        PyObject *a = cukit_signature_str((cukit_Signature *)old), *b = cukit_signature_str(sig);
        int same = a && b ? PyUnicode_Compare(a, b) == 0 : -1;
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (same < 0 || PyErr_Occurred())
            rc = -1;
        for (int i = 0; same == 0 && i < sig->nparams; i++)
            sig->params[i].uncertain = 1;
    }
    if (rc == 0 && name_tok->branch) {
        if (w->branchy == NULL && (w->branchy = PySet_New(NULL)) == NULL)
            rc = -1;
        else if (PySet_Add(w->branchy, key) < 0)
            rc = -1;
    }
    Py_DECREF(key);
    return rc;
}

/* The __global__ at toks[i]: read the kernel's parameter list into w->out, under
 * its name (with its namespaces unless extern "C"), or once per name expression
 * for a template. Returns the index of the token to go on after; -1 with an
 * exception. */
static int
read_kernel(file_walk *w, int i)
{
    const lexer *lx = &w->lx;
    int extern_c = w->extern_c || w->extern_c_blocks > 0;
    int open = parameter_list_at(lx, i);
    if (open < 0) {
        if (w->strict)
            return cukit_decl_error(w->text, lx, -open - 1 + 1, "expected the kernel's name "
                                    "and its parameter list");
        return -open - 1;
    }
    if (w->strict && cukit_decl_check(w->text, lx, open) < 0)
        return -1;
    const token *name_tok = &lx->toks[open - 1];
    cukit_text name = {0};
    int rc = -1;
    if ((!extern_c || w->template_at >= 0) &&
        cukit_text_add(&name, cukit_text_str(&w->ns), w->ns.n) < 0)
        goto done;
    if (cukit_text_add(&name, name_tok->p, (size_t)name_tok->len) < 0)
        goto done;
    if (w->template_at >= 0) {
        if (w->name_expressions && w->heads == NULL &&
            (w->heads = cukit_template_heads(lx, w->name_expressions)) == NULL)
            goto done;
        PyObject *mine = w->heads ? PyDict_GetItemString(w->heads, cukit_text_str(&name)) : NULL;
        if (mine && cukit_template_instantiate(w->st, lx, w->template_at, open,
                                               cukit_text_str(&name), w->aliases, mine, w->out) < 0)
            goto done;
    }
    else {
        cukit_Signature *sig = cukit_params_read(w->st, lx, open, cukit_text_str(&name), w->aliases);
        if (sig == NULL && !w->strict && PyErr_ExceptionMatches(PyExc_ValueError)) {
            /* A list that is not C (a parameter of type void, one with no type): NVRTC
             * says what is wrong when it compiles; cukit leaves the kernel out. */
            PyErr_Clear();
            rc = cukit_skip_group(lx, open) - 1;
            goto done;
        }
        if (sig == NULL)
            goto done;
        sig->extern_c = extern_c;
        if (!w->strict && uncertain_twin(w, name_tok, cukit_text_str(&name), sig) < 0) {
            Py_DECREF(sig);
            goto done;
        }
        /* A later definition replaces an earlier declaration (it has the names). */
        int set = PyDict_SetItemString(w->out, cukit_text_str(&name), (PyObject *)sig);
        Py_DECREF(sig);
        if (set < 0)
            goto done;
    }
    rc = cukit_skip_group(lx, open) - 1;
done:
    cukit_text_free(&name);
    return rc;
}

/* One RuntimeWarning naming the kernels whose parameter types cukit read from a
 * branch of #if it could not evaluate (they may differ from NVRTC's). 0 / -1. */
static int
warn_uncertain(PyObject *out)
{
    PyObject *names = PyList_New(0), *k, *v;
    Py_ssize_t pos = 0;
    int rc = names ? 0 : -1;
    while (rc == 0 && PyDict_Next(out, &pos, &k, &v)) {
        cukit_Signature *sig = (cukit_Signature *)v;
        for (int i = 0; i < sig->nparams; i++)
            if (sig->params[i].uncertain) {
                PyObject *shown = cukit_signature_str(sig);
                rc = shown ? PyList_Append(names, shown) : -1;
                Py_XDECREF(shown);
                break;
            }
    }
    if (rc == 0 && PyList_GET_SIZE(names) > 0) {
        PyObject *sep = PyUnicode_FromString(", "), *listed = sep ? PyUnicode_Join(sep, names) : NULL;
        if (listed == NULL ||
            PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                             "cukit read %U with parameter types that depend on a branch of #if "
                             "it cannot evaluate (a macro NVRTC or an option defines); if NVRTC "
                             "takes another branch, those types are wrong: give the kernel its "
                             "parameters with get_kernel(name, signature=\"(float a, int n)\"), "
                             "or pass the macros as defines=", listed) < 0)
            rc = -1;
        Py_XDECREF(sep);
        Py_XDECREF(listed);
    }
    Py_XDECREF(names);
    return rc;
}

/* Read every kernel of `source`; see cukit_signatures_parse. */
static PyObject *
read_source(cukit_state *st, const char *source, PyObject *defines, PyObject *name_expressions,
            PyObject *globals, int strict)
{
    file_walk w = {0};
    w.st = st;
    w.text = source;
    w.strict = strict;
    w.globals = globals;
    w.name_expressions = name_expressions;
    w.template_at = -1;
    w.out = PyDict_New();
    w.aliases = PyDict_New();
    w.lx.macros = PyDict_New();
    if (!w.out || !w.aliases || !w.lx.macros)
        goto error;
    if (defines && defines != Py_None && add_defines(w.lx.macros, defines) < 0)
        goto error;
    if (cukit_tokenize(&w.lx, source, source + strlen(source), 1) < 0)
        goto error;
    if (w.lx.gave_up &&
        PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                         "cukit stopped expanding macros while reading kernel signatures: the "
                         "source's macros expand into more than %d tokens (a macro that "
                         "doubles itself?). NVRTC still compiles the source as written, but a "
                         "kernel whose parameter types come from a macro may be read wrongly: "
                         "give it with get_kernel(name, signature=\"(float a, int n)\")",
                         CUKIT_EXPANSION_BUDGET) < 0)
        goto error;

    /* Each token either moves between scopes, ends a statement, marks it (template,
     * extern "C"), or starts a kernel. Every token is looked at a bounded number of
     * times, so the walk is linear in the source. */
    const lexer *lx = &w.lx;
    for (int i = 0; i < lx->n; i++) {
        const token *t = &lx->toks[i];
        char punct = t->kind == TOK_PUNCT ? t->p[0] : '\0';
        if (punct == '{' && i > 0 &&
            (token_is(&lx->toks[i - 1], "=") || token_is(&lx->toks[i - 1], "]"))) {
            i = cukit_skip_group(lx, i) - 1; /* an initializer: part of the statement */
            continue;
        }
        if (punct == '{' || punct == '}' || punct == ';') {
            if (punct == '{' && open_scope(&w, i) < 0)
                goto error;
            if (punct == '}')
                close_scope(&w);
            if (punct == ';' && end_statement(&w, i) < 0)
                goto error;
            w.stmt = i + 1;
            w.template_at = -1;
            w.extern_c = 0;
        }
        else if (t->kind == TOK_IDENT && token_is(t, "template")) {
            if (w.template_at < 0)
                w.template_at = i;
        }
        else if (t->kind == TOK_IDENT && token_is(t, "extern") && i + 1 < lx->n &&
                 token_is(&lx->toks[i + 1], "\"C\"")) {
            w.extern_c = 1;
        }
        else if (t->kind == TOK_IDENT && token_is(t, "__global__")) {
            if (w.globals_seen < 2)
                w.global_at[w.globals_seen] = i;
            w.globals_seen++;
            if (w.other == 0 && (i = read_kernel(&w, i)) < 0)
                goto error;
        }
    }
    if (!strict && warn_uncertain(w.out) < 0)
        goto error;
    if (strict && PyDict_GET_SIZE(w.out) != 1) {
        /* A declaration for cukit is one kernel's: say where that is not so. */
        if (PyDict_GET_SIZE(w.out) == 0)
            cukit_decl_error(source, lx, w.globals_seen ? w.global_at[0] : lx->n,
                             "no kernel declaration could be read here (is it inside braces "
                             "or a branch of #if that is not taken?)");
        else
            cukit_decl_error(source, lx, w.global_at[1],
                             "a Signature is one kernel's declaration, and this is another");
        goto error;
    }
    cukit_lexer_release(&w.lx);
    PyMem_Free(w.scopes);
    cukit_text_free(&w.ns);
    Py_XDECREF(w.heads);
    Py_XDECREF(w.branchy);
    Py_DECREF(w.aliases);
    Py_DECREF(w.lx.macros);
    return w.out;
error:
    cukit_lexer_release(&w.lx);
    PyMem_Free(w.scopes);
    cukit_text_free(&w.ns);
    Py_XDECREF(w.heads);
    Py_XDECREF(w.branchy);
    Py_XDECREF(w.out);
    Py_XDECREF(w.aliases);
    Py_XDECREF(w.lx.macros);
    return NULL;
}

PyObject *
cukit_signatures_parse(cukit_state *st, const char *source, PyObject *defines,
                       PyObject *name_expressions, PyObject *globals)
{
    return read_source(st, source, defines, name_expressions, globals, 0);
}

PyObject *
cukit_signatures_parse_strict(cukit_state *st, const char *source)
{
    return read_source(st, source, NULL, NULL, NULL, 1);
}

cukit_Signature *
cukit_signature_from_decl(cukit_state *st, const char *decl, const char *name)
{
    lexer lx = {0};
    cukit_text kname = {0};
    cukit_Signature *sig = NULL;
    if ((lx.macros = PyDict_New()) == NULL)
        return NULL;
    /* Tokens of the declaration itself are text 0 (errors point into it); without
     * a "(", the whole of it is the parameter list. */
    int bare = strchr(decl, '(') == NULL;
    lx.buf = 1;
    if (bare && cukit_tokenize(&lx, "(", "(" + 1, 0) < 0)
        goto done;
    lx.buf = 0;
    if (cukit_tokenize(&lx, decl, decl + strlen(decl), 0) < 0)
        goto done;
    lx.buf = 2;
    if (bare && cukit_tokenize(&lx, ")", ")" + 1, 0) < 0)
        goto done;
    int open = 0; /* the first "(" outside template arguments and attributes */
    while (open < lx.n && !token_is(&lx.toks[open], "(")) {
        if (token_is(&lx.toks[open], "<") && open > 0 && lx.toks[open - 1].kind == TOK_IDENT &&
            cukit_group_close(&lx, open) > open)
            open = cukit_group_close(&lx, open);
        else if (attribute_at(&lx, open) && cukit_group_close(&lx, open + 1) > open)
            open = cukit_group_close(&lx, open + 1);
        open++;
    }
    if (open == lx.n) { /* "(" inside a string or a comment only */
        cukit_decl_error(decl, &lx, lx.n, "expected a parameter list in parentheses");
        goto done;
    }
    int start = cukit_decl_check_name(decl, &lx, open);
    if (start < 0)
        goto done;
    int past = cukit_decl_check(decl, &lx, open);
    if (past < 0)
        goto done;
    /* A definition's body may follow, as in the source: k(float a) { ... } */
    if (past < lx.n && token_is(&lx.toks[past], "{") && cukit_group_close(&lx, past) > past)
        past = cukit_group_close(&lx, past) + 1;
    if (past < lx.n && token_is(&lx.toks[past], ";"))
        past++;
    if (past < lx.n) {
        cukit_decl_error(decl, &lx, past, "unexpected text after the parameter list");
        goto done;
    }
    if (name == NULL && start < open) {
        const token *a = &lx.toks[start], *b = &lx.toks[open - 1];
        if (cukit_text_add(&kname, a->p, (size_t)(b->p + b->len - a->p)) < 0)
            goto done;
    }
    sig = cukit_params_read(st, &lx, open, name ? name : cukit_text_str(&kname), NULL);
    if (sig != NULL) {
        sig->extern_c = 1;
    }
    else if (PyErr_ExceptionMatches(PyExc_ValueError)) {
        /* What the checks above let through and the reader refuses still gets a caret. */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *why = value ? PyObject_Str(value) : NULL;
        const char *what = why ? PyUnicode_AsUTF8(why) : NULL;
        if (what != NULL) {
            cukit_decl_error(decl, &lx, open, what);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        }
        else {
            PyErr_Clear();
            PyErr_Restore(type, value, tb);
        }
        Py_XDECREF(why);
    }
done:
    cukit_text_free(&kname);
    cukit_lexer_release(&lx);
    Py_DECREF(lx.macros);
    return sig;
}

/* ------------------------------------------------------------------ declarations users write */

/* Where token `at` (lx->n: the end) points into text: its start when it is the
 * text's own (buf 0), else just past the last token before it that is. */
static size_t
position_of(const char *text, const lexer *lx, int at)
{
    if (at < lx->n && lx->toks[at].buf == 0)
        return (size_t)(lx->toks[at].p - text);
    for (int k = (at < lx->n ? at : lx->n) - 1; k >= 0; k--)
        if (lx->toks[k].buf == 0)
            return (size_t)(lx->toks[k].p + lx->toks[k].len - text);
    return 0;
}

static int
utf8_continuation(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

int
cukit_decl_error(const char *text, const lexer *lx, int at, const char *what)
{
    size_t pos = position_of(text, lx, at), n = strlen(text);
    size_t ls = pos, le = pos;
    while (ls > 0 && text[ls - 1] != '\n')
        ls--;
    while (le < n && text[le] != '\n' && text[le] != '\r')
        le++;
    int line = 1, column = 1;
    for (size_t k = 0; k < ls; k++)
        line += text[k] == '\n';
    for (size_t k = ls; k < pos; k++)
        column += !utf8_continuation((unsigned char)text[k]);
    /* A long line is shown around the column. */
    size_t from = ls, to = le;
    if (pos - from > 60) {
        from = pos - 60;
        while (from < pos && utf8_continuation((unsigned char)text[from]))
            from++;
    }
    if (to - pos > 60) {
        to = pos + 60;
        while (to > pos && utf8_continuation((unsigned char)text[to]))
            to--;
    }
    cukit_text caret = {0}, shown = {0};
    int rc = cukit_text_add(&caret, "", 0);
    for (size_t k = from; rc == 0 && k < pos; k++)
        if (!utf8_continuation((unsigned char)text[k]))
            rc = cukit_text_add(&caret, text[k] == '\t' ? "\t" : " ", 1);
    if (rc == 0 && from > ls)
        rc = cukit_text_add(&shown, "...", 3) < 0 || cukit_text_add(&caret, "   ", 3) < 0 ? -1 : 0;
    /* Control characters and Unicode's line breaks (U+0085, U+2028, U+2029) are shown
     * as '?', one column each, so the message keeps its lines and the caret its place. */
    for (size_t k = from; rc == 0 && k < to; k++) {
        const unsigned char *c = (const unsigned char *)text + k;
        size_t skip = 0;
        if ((c[0] < 0x20 && c[0] != '\t') || c[0] == 0x7f)
            skip = 1;
        else if (c[0] == 0xC2 && k + 1 < to && c[1] == 0x85)
            skip = 2;
        else if (c[0] == 0xE2 && k + 2 < to && c[1] == 0x80 && (c[2] == 0xA8 || c[2] == 0xA9))
            skip = 3;
        rc = cukit_text_add(&shown, skip ? "?" : text + k, 1);
        k += skip ? skip - 1 : 0;
    }
    if (rc == 0 && to < le)
        rc = cukit_text_add(&shown, "...", 3);
    if (rc == 0)
        PyErr_Format(PyExc_ValueError,
                     "could not read the declaration at line %d, column %d: %s\n"
                     "    %s\n    %s^\n"
                     "write it as C, such as \"name(float a, const float* x, int n)\"",
                     line, column, what, cukit_text_str(&shown), cukit_text_str(&caret));
    cukit_text_free(&shown);
    cukit_text_free(&caret);
    return -1;
}

/* Words that name a built-in type: a parameter has at most one other word (its
 * name) beside them, else at most two (a type and a name). */
static int
builtin_word(const token *t)
{
    static const char *words[] = {"signed", "unsigned", "short", "long", "int", "char",
                                  "float", "double", "bool", "void"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (token_is(t, words[i]))
            return 1;
    return 0;
}

static int
qualifier_word(const token *t)
{
    static const char *words[] = {"const", "volatile", "__restrict__", "__restrict", "restrict",
                                  "struct", "class", "union", "typename", "__grid_constant__",
                                  "register", "enum"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (token_is(t, words[i]))
            return 1;
    return 0;
}

/* Inside a group of a parameter (template arguments, array bounds, an attribute's
 * or a declarator's parentheses): nothing that ends a declaration, and brackets that
 * match. Returns the index past the group, or -1 with the error raised. */
static int
check_group(const char *text, const lexer *lx, int i, int to)
{
    int end = cukit_skip_group(lx, i);
    if (end > to) {
        cukit_decl_error(text, lx, i, "this bracket is never closed");
        return -1;
    }
    int parens = 0, squares = 0, entry = i + 1;
    for (int k = i + 1; k < end - 1; k++) {
        if (token_is(&lx->toks[i], "(") && parens == 0 && squares == 0 &&
            token_is(&lx->toks[k], ",")) {
            if (k == entry) {
                cukit_decl_error(text, lx, k, "an empty entry in parentheses (a stray comma?)");
                return -1;
            }
            entry = k + 1;
        }
        const token *t = &lx->toks[k];
        if (t->kind == TOK_STRING && i > 0 && token_is(&lx->toks[i - 1], "__attribute__"))
            continue;
        if (t->kind == TOK_STRING || (t->kind == TOK_PUNCT && strchr(";#{}\\@$`", t->p[0]))) {
            cukit_decl_error(text, lx, k, t->kind == TOK_STRING
                             ? "a string cannot appear inside these brackets"
                             : "this cannot appear inside these brackets");
            return -1;
        }
        if (t->kind != TOK_PUNCT)
            continue;
        parens += (t->p[0] == '(') - (t->p[0] == ')');
        squares += (t->p[0] == '[') - (t->p[0] == ']');
        if (parens < 0 || squares < 0) {
            cukit_decl_error(text, lx, k, "this bracket closes nothing");
            return -1;
        }
    }
    if (entry > i + 1 && entry == end - 1) {
        cukit_decl_error(text, lx, end - 1, "an empty entry in parentheses (a stray comma?)");
        return -1;
    }
    return end;
}

/* Parameter number `index` (1-based), toks[from..to). 0 / -1 with the error raised. */
static int
check_param(const char *text, const lexer *lx, int from, int to, int index, int only)
{
    char what[96];
    int builtins = 0, others = 0, stars = 0, is_void = 0;
    for (int i = from; i < to; i++) {
        const token *t = &lx->toks[i];
        const char *why = NULL;
        if (t->kind == TOK_PUNCT && t->p[0] == '=') { /* a default argument */
            if (i + 1 == to)
                why = "a default argument has no value";
            for (int k = i + 1; k < to && why == NULL; k++)
                if (lx->toks[k].kind == TOK_PUNCT && strchr(";#", lx->toks[k].p[0]))
                    return cukit_decl_error(text, lx, k, "this cannot be part of a parameter");
            if (why == NULL)
                break;
        }
        else if (t->kind == TOK_IDENT) {
            if ((token_is(t, "__align__") || token_is(t, "alignas") ||
                 token_is(t, "__attribute__") || token_is(t, "__declspec")) &&
                i + 1 < to && token_is(&lx->toks[i + 1], "(")) {
                int end = check_group(text, lx, i + 1, to);
                if (end < 0)
                    return -1;
                i = end - 1;
                continue;
            }
            if (qualifier_word(t))
                continue;
            is_void |= token_is(t, "void"); /* std::void reads as void too */
            if (i > from && token_is(&lx->toks[i - 1], "::"))
                continue;
            if (builtin_word(t))
                builtins++;
            else if (++others > (builtins ? 1 : 2))
                why = "one word too many: a parameter is a type and a name";
        }
        else if (t->kind == TOK_PUNCT && (strchr("*&", t->p[0]) || token_is(t, "::"))) {
            stars += t->p[0] != ':';
            continue;
        }
        else if (t->kind == TOK_PUNCT && strchr("[<(", t->p[0])) {
            if (t->p[0] == '<' && (i == from || lx->toks[i - 1].kind != TOK_IDENT))
                why = "'<' must follow a template's name";
            else {
                int end = check_group(text, lx, i, to);
                if (end < 0)
                    return -1;
                stars += t->p[0] != '<';
                i = end - 1;
                continue;
            }
        }
        else if (t->kind == TOK_PUNCT && t->p[0] == '.') {
            why = "a kernel cannot take a variable number of arguments";
        }
        else if (t->kind == TOK_NUMBER) {
            why = "a number cannot be a parameter's type or name";
        }
        else if (t->kind == TOK_STRING) {
            why = "a string cannot be part of a parameter";
        }
        else {
            unsigned char c = (unsigned char)t->p[0];
            if (c < 0x20 || c == 0x7f)
                PyOS_snprintf(what, sizeof what, "the control character \\x%02x cannot be "
                              "part of a parameter", c);
            else
                PyOS_snprintf(what, sizeof what, "'%c' cannot be part of a parameter", c);
            why = what;
        }
        if (why) {
            if (why != what)
                PyOS_snprintf(what, sizeof what, "%s (parameter %d)", why, index);
            return cukit_decl_error(text, lx, i, what);
        }
    }
    if (builtins + others == 0) {
        PyOS_snprintf(what, sizeof what, "parameter %d has no type", index);
        return cukit_decl_error(text, lx, from, what);
    }
    if (is_void && !stars && !(only && to - from == 1)) {
        PyOS_snprintf(what, sizeof what, "parameter %d cannot have type void", index);
        return cukit_decl_error(text, lx, from, what);
    }
    return 0;
}

int
cukit_decl_check(const char *text, const lexer *lx, int open)
{
    /* The ")" that closes the list, counting only parentheses. */
    int depth = 0, close = -1;
    for (int i = open; i < lx->n && close < 0; i++) {
        if (lx->toks[i].kind != TOK_PUNCT)
            continue;
        depth += (lx->toks[i].p[0] == '(') - (lx->toks[i].p[0] == ')');
        if (depth == 0)
            close = i;
    }
    if (close < 0)
        return cukit_decl_error(text, lx, lx->n, "the parameter list is not closed: a ')' is "
                                "missing");
    int *bounds = NULL;
    int n = cukit_params_bounds(lx, open, &bounds);
    if (n < 0)
        return -1;
    int rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        int from = bounds[2 * k], to = bounds[2 * k + 1];
        if (from == to && n > 1) {
            char what[64];
            PyOS_snprintf(what, sizeof what, "parameter %d is empty (a stray comma?)", k + 1);
            rc = cukit_decl_error(text, lx, to, what);
        }
        else if (from < to) {
            rc = check_param(text, lx, from, to, k + 1, n == 1);
        }
    }
    PyMem_Free(bounds);
    return rc < 0 ? -1 : close + 1;
}

int
cukit_decl_check_name(const char *text, const lexer *lx, int open)
{
    int start = open;
    for (int i = 0; i < open; i++) {
        const token *t = &lx->toks[i];
        /* A name starts at an identifier or a "::" that does not continue one. */
        int continues = i > 0 && (lx->toks[i - 1].kind == TOK_IDENT || token_is(&lx->toks[i - 1], ">"));
        if (t->kind == TOK_IDENT) {
            if (i == 0 || !token_is(&lx->toks[i - 1], "::"))
                start = i;
            continue;
        }
        if (token_is(t, "::")) {
            if (!continues)
                start = i;
            continue;
        }
        if (t->kind == TOK_STRING && token_is(t, "\"C\""))
            continue;
        if (token_is(t, "(") && i > 0 && attribute_at(lx, i - 1)) {
            int end = check_group(text, lx, i, open);
            if (end < 0)
                return -1;
            i = end - 1;
            continue;
        }
        if (token_is(t, "<") && i > 0 && lx->toks[i - 1].kind == TOK_IDENT) {
            int end = check_group(text, lx, i, open);
            if (end < 0)
                return -1;
            i = end - 1;
            continue;
        }
        return cukit_decl_error(text, lx, i, "this cannot be part of a kernel's name");
    }
    if (open > 0 && lx->toks[open - 1].kind != TOK_IDENT && !token_is(&lx->toks[open - 1], ">"))
        return cukit_decl_error(text, lx, open - 1, "expected the kernel's name before '('");
    return start;
}

cukit_Signature *
cukit_signature_read(cukit_state *st, const char *text)
{
    /* A whole kernel declaration when __global__ is one of its words. */
    lexer lx = {0};
    int whole = 0;
    if ((lx.macros = PyDict_New()) == NULL)
        return NULL;
    int rc = cukit_tokenize(&lx, text, text + strlen(text), 0);
    for (int i = 0; rc == 0 && i < lx.n && !whole; i++)
        whole = lx.toks[i].kind == TOK_IDENT && token_is(&lx.toks[i], "__global__");
    cukit_lexer_release(&lx);
    Py_DECREF(lx.macros);
    if (rc < 0)
        return NULL;
    if (!whole)
        return cukit_signature_from_decl(st, text, NULL);
    PyObject *all = cukit_signatures_parse_strict(st, text);
    if (all == NULL)
        return NULL;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    PyDict_Next(all, &pos, &k, &v);
    Py_INCREF(v);
    Py_DECREF(all);
    return (cukit_Signature *)v;
}
