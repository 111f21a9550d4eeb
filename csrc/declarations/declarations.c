/* declarations.c - kernel signatures and device globals read from CUDA C source
 *
 * The reader is deliberately small: it takes the tokens of lexer.c (comments and
 * strings skipped, object-like #defines and the user's defines expanded), remembers
 * typedef/using aliases, and reads each __global__ declaration's parameter list,
 * once per name expression for template kernels (templates.c). The compiled
 * kernel's own layout is checked against what it reads before any launch
 * (signature.c). */
#include "declarations/parse.h"

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

/* 1 when t is a word of C's built-in types or their qualifiers: no kernel's name. */
static int
type_keyword(const token *t)
{
    static const char *words[] = {"void", "signed", "unsigned", "short", "long", "int", "char",
                                  "float", "double", "bool", "const", "volatile", "auto"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (token_is(t, words[i]))
            return 1;
    return 0;
}

/* Index of the "(" opening the parameter list of the kernel whose __global__ is
 * toks[i], past attributes such as __launch_bounds__(...); when the declaration is
 * not one cukit can read, -(index of the token the search stopped at) - 1, so the
 * walk goes on from there and no token is searched twice. */
static int
parameter_list_at(const lexer *lx, int i)
{
    int j = i + 1;
    while (j < lx->n) {
        const token *u = &lx->toks[j];
        if (cukit_attribute_at(lx, j)) {
            j = cukit_skip_group(lx, j + 1);
            continue;
        }
        /* A macro that stands for an attribute, as PyCUDA's scans write
         * "__global__ void REQD_WG_SIZE(128, 1, 1) scan(...)": a name's "(...)" followed
         * by another name is no parameter list. */
        if (token_is(u, "(") && lx->toks[j - 1].kind == TOK_IDENT && !type_keyword(&lx->toks[j - 1])) {
            int after = cukit_skip_group(lx, j);
            if (after + 1 < lx->n && lx->toks[after].kind == TOK_IDENT &&
                !token_is(&lx->toks[after], "noexcept") && !token_is(&lx->toks[after], "throw") &&
                !token_is(&lx->toks[after], "const") && !token_is(&lx->toks[after], "__attribute__")) {
                j = after;
                continue;
            }
        }
        if (u->kind == TOK_PUNCT && !token_is(u, "::") && !token_is(u, "*"))
            break;
        if (u->kind == TOK_IDENT && token_is(u, "__global__"))
            break;
        j++;
    }
    /* The name is the identifier right before the parameter list, never a type's
     * word ("__global__ void(int n)" has none). */
    if (j >= lx->n || !token_is(&lx->toks[j], "(") || lx->toks[j - 1].kind != TOK_IDENT ||
        type_keyword(&lx->toks[j - 1]))
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

/* Index of the first "(" of lx outside template arguments and attributes: the
 * parameter list's in "k<int>(float a)"; lx->n when there is none. */
static int
first_paren(const lexer *lx)
{
    int open = 0;
    while (open < lx->n && !token_is(&lx->toks[open], "(")) {
        if (token_is(&lx->toks[open], "<") && open > 0 && lx->toks[open - 1].kind == TOK_IDENT &&
            cukit_group_close(lx, open) > open)
            open = cukit_group_close(lx, open);
        else if (cukit_attribute_at(lx, open) && cukit_group_close(lx, open + 1) > open)
            open = cukit_group_close(lx, open + 1);
        open++;
    }
    return open;
}

/* 1 when the declaration in lx is a bare parameter list ("float a, int n") rather
 * than a name and a list ("k(float a, int n)", "(float a)"): it has no "(", or its
 * first "(" is a declarator's, as in "float (*p)[4], int n" or "void (*f)(int)". */
static int
bare_list(const lexer *lx)
{
    int open = first_paren(lx);
    if (open == lx->n)
        return 1;
    if (open == 0)
        return 0;
    const token *before = &lx->toks[open - 1];
    static const char *type_words[] = {"signed", "unsigned", "short", "long", "int", "char",
                                       "float", "double", "bool", "void", "const", "volatile",
                                       "__restrict__", "*", "&"};
    for (size_t i = 0; i < sizeof type_words / sizeof *type_words; i++)
        if (token_is(before, type_words[i]))
            return 1; /* no kernel is named so */
    int close = cukit_group_close(lx, open);
    if (close < 0 || close + 1 >= lx->n)
        return 0;
    const token *after = &lx->toks[close + 1], *first = &lx->toks[open + 1];
    if (token_is(after, "[") || token_is(after, "("))
        return 1; /* a declarator goes on: MyType (*p)[4] */
    return token_is(after, ",") && (token_is(first, "*") || token_is(first, "&"));
}

/* The Signature of declaration `decl`, whose tokens lx holds (text 0); see
 * cukit_signature_from_decl. Releases lx and its macros, also on error. */
static cukit_Signature *
read_decl(cukit_state *st, const char *decl, const char *name, lexer *lx_in)
{
    lexer lx = *lx_in;
    cukit_text kname = {0};
    cukit_Signature *sig = NULL;
    /* Tokens of the declaration itself are text 0 (errors point into it); a bare
     * parameter list is read again between a "(" and a ")" of texts of their own. */
    if (bare_list(&lx)) {
        PyObject *macros = lx.macros;
        cukit_lexer_release(&lx);
        memset(&lx, 0, sizeof lx); /* a fresh lexer: no state of the first reading */
        lx.macros = macros;
        lx.buf = 1;
        if (cukit_tokenize(&lx, "(", "(" + 1, 0) < 0)
            goto done;
        lx.buf = 0;
        if (cukit_tokenize(&lx, decl, decl + strlen(decl), 0) < 0)
            goto done;
        lx.buf = 2;
        if (cukit_tokenize(&lx, ")", ")" + 1, 0) < 0)
            goto done;
    }
    int open = first_paren(&lx);
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

cukit_Signature *
cukit_signature_from_decl(cukit_state *st, const char *decl, const char *name)
{
    lexer lx = {0};
    if ((lx.macros = PyDict_New()) == NULL)
        return NULL;
    if (cukit_tokenize(&lx, decl, decl + strlen(decl), 0) < 0) {
        cukit_lexer_release(&lx);
        Py_DECREF(lx.macros);
        return NULL;
    }
    return read_decl(st, decl, name, &lx);
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
    if (rc == 0 && !whole)
        return read_decl(st, text, NULL, &lx); /* the tokens are read once */
    cukit_lexer_release(&lx);
    Py_DECREF(lx.macros);
    if (rc < 0)
        return NULL;
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
