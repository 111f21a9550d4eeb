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
    if (w->globals && cukit_globals_record(lx, stmt, i, w->ns, w->aliases, w->globals) < 0)
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
        char *renamed = cukit_text_dup(name, strlen(name));
        if (renamed == NULL) {
            Py_DECREF(sig);
            return NULL;
        }
        PyMem_Free(sig->name);
        sig->name = renamed;
    }
    return sig;
}
