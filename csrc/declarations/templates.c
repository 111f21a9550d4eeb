/* templates.c - template kernels: a Signature for each name expression that instantiates one */
#include "declarations/parse.h"

#include <string.h>

/* One parameter of the template: its name and its default argument's tokens. */
typedef struct {
    int name;        /* index of its identifier in the template's lexer */
    int from, to;    /* default argument tokens; from < 0 when none */
} template_param;

/* The template parameters in lx->toks[lt] = "<" ... ">" into *out (PyMem, owned by
 * the caller). Returns how many, 0 when cukit cannot read them (a parameter pack),
 * -1 with MemoryError. */
static int
template_params(const lexer *lx, int lt, template_param **out)
{
    int *bounds = NULL;
    int n = cukit_params_bounds(lx, lt, &bounds);
    if (n < 0)
        return -1;
    template_param *tp = PyMem_Calloc(n ? (size_t)n : 1, sizeof *tp);
    if (tp == NULL) {
        PyMem_Free(bounds);
        PyErr_NoMemory();
        return -1;
    }
    int ntp = 0;
    for (int k = 0; k < n; k++) {
        int eq = -1, ident = -1;
        for (int q = bounds[2 * k]; q < bounds[2 * k + 1] && eq < 0; q++) {
            if (token_is(&lx->toks[q], "="))
                eq = q;
            else if (token_is(&lx->toks[q], ".")) {
                ntp = 0; /* a parameter pack */
                goto done;
            }
            else if (lx->toks[q].kind == TOK_IDENT)
                ident = q;
        }
        if (ident < 0) {
            if (bounds[2 * k + 1] > bounds[2 * k] || n > 1)
                ntp = 0; /* unreadable */
            goto done;
        }
        tp[ntp].name = ident;
        tp[ntp].from = eq >= 0 ? eq + 1 : -1;
        tp[ntp].to = bounds[2 * k + 1];
        ntp++;
    }
done:
    PyMem_Free(bounds);
    *out = tp;
    return ntp;
}

/* The kernel an expression names, [&][::]name::name<args>, into head; returns the
 * index of the token after it, or -1 with MemoryError. */
static int
expression_head(const lexer *sub, cukit_text *head)
{
    int i = 0;
    while (i < sub->n && token_is(&sub->toks[i], "&"))
        i++;
    if (i < sub->n && token_is(&sub->toks[i], "::"))
        i++;
    if (cukit_text_add(head, "", 0) < 0)
        return -1;
    for (; i < sub->n && (sub->toks[i].kind == TOK_IDENT || token_is(&sub->toks[i], "::")); i++)
        if (cukit_text_add(head, sub->toks[i].p, (size_t)sub->toks[i].len) < 0)
            return -1;
    return i;
}

PyObject *
cukit_template_heads(const lexer *lx, PyObject *exprs)
{
    PyObject *heads = PyDict_New(), *seen = PySet_New(NULL);
    if (seen == NULL)
        Py_CLEAR(heads);
    for (Py_ssize_t x = 0; heads && x < PyTuple_GET_SIZE(exprs); x++) {
        PyObject *expr = PyTuple_GET_ITEM(exprs, x);
        int dup = PySet_Contains(seen, expr);
        if (dup != 0) { /* an expression given twice is read once */
            if (dup < 0)
                Py_CLEAR(heads);
            continue;
        }
        if (PySet_Add(seen, expr) < 0) {
            Py_CLEAR(heads);
            break;
        }
        Py_ssize_t len;
        const char *e = PyUnicode_AsUTF8AndSize(expr, &len);
        lexer sub = {0};
        cukit_text head = {0};
        sub.macros = lx->macros;
        PyObject *key = NULL, *list;
        int ok = e && cukit_tokenize(&sub, e, e + len, 0) == 0 && expression_head(&sub, &head) >= 0 &&
                 (key = PyUnicode_FromStringAndSize(head.s, (Py_ssize_t)head.n)) != NULL;
        if (ok && (list = PyDict_GetItemWithError(heads, key)) == NULL) {
            ok = !PyErr_Occurred() && (list = PyList_New(0)) != NULL;
            if (ok) {
                ok = PyDict_SetItem(heads, key, list) == 0;
                Py_DECREF(list);
            }
        }
        ok = ok && PyList_Append(list, expr) == 0;
        Py_XDECREF(key);
        cukit_text_free(&head);
        cukit_lexer_release(&sub);
        if (!ok)
            Py_CLEAR(heads);
    }
    Py_XDECREF(seen);
    return heads;
}

/* The Signature of template kernel `base` for name expression `expr`, or NULL
 * with no exception when expr does not name it or cannot be read. */
static cukit_Signature *
instantiate(cukit_state *st, const lexer *lx, int open, const char *base, PyObject *aliases,
            const template_param *tp, int ntp, PyObject *expr)
{
    Py_ssize_t len;
    const char *e = PyUnicode_AsUTF8AndSize(expr, &len);
    if (e == NULL)
        return NULL;
    lexer sub = {0};
    sub.macros = lx->macros;
    cukit_text head = {0};
    PyObject *al = NULL;
    int *bounds = NULL;
    cukit_Signature *sig = NULL;
    if (cukit_tokenize(&sub, e, e + len, 0) < 0)
        goto done;
    int i = expression_head(&sub, &head);
    if (i < 0)
        goto done;
    if (i >= sub.n || !token_is(&sub.toks[i], "<") || strcmp(cukit_text_str(&head), base) != 0 ||
        cukit_group_close(&sub, i) != sub.n - 1)
        goto done; /* another kernel's, or not a plain instance (NVRTC will judge it) */
    int nargs = cukit_params_bounds(&sub, i, &bounds);
    if (nargs < 0)
        goto done;
    if (nargs == 1 && bounds[1] == bounds[0])
        nargs = 0; /* k<> */
    if (nargs > ntp)
        goto done;
    if ((al = PyDict_Copy(aliases)) == NULL)
        goto done;
    for (int p = 0; p < ntp; p++) {
        const token *name_tok = &lx->toks[tp[p].name];
        char *name = cukit_text_dup(name_tok->p, (size_t)name_tok->len);
        int rc;
        if (name == NULL)
            goto done;
        if (p < nargs)
            rc = cukit_alias_set(&sub, bounds[2 * p], bounds[2 * p + 1], name, al);
        else if (tp[p].from >= 0)
            rc = cukit_alias_set(lx, tp[p].from, tp[p].to, name, al);
        else
            rc = 1; /* kernels cannot deduce: NVRTC will say what is missing */
        PyMem_Free(name);
        if (rc != 0)
            goto done;
    }
    /* Its name is the expression without the & that takes its address. */
    while (*e == '&' || *e == ' ' || *e == '\t' || *e == '\n')
        e++;
    sig = cukit_params_read(st, lx, open, e, al);
    if (sig != NULL)
        sig->extern_c = 0;
    else if (PyErr_ExceptionMatches(PyExc_ValueError))
        PyErr_Clear(); /* not C once instantiated (T = void): NVRTC will say so */
done:
    PyMem_Free(bounds);
    Py_XDECREF(al);
    cukit_text_free(&head);
    cukit_lexer_release(&sub);
    return sig;
}

int
cukit_template_instantiate(cukit_state *st, const lexer *lx, int stmt, int open, const char *base,
                           PyObject *aliases, PyObject *exprs, PyObject *out)
{
    int t = stmt;
    while (t < open && !token_is(&lx->toks[t], "template"))
        t++;
    if (t + 1 >= open || !token_is(&lx->toks[t + 1], "<"))
        return 0;
    template_param *tp = NULL;
    int ntp = template_params(lx, t + 1, &tp);
    if (ntp < 0)
        return -1;
    int rc = 0;
    for (Py_ssize_t x = 0; ntp > 0 && x < PyList_GET_SIZE(exprs); x++) {
        PyObject *expr = PyList_GET_ITEM(exprs, x);
        cukit_Signature *sig = instantiate(st, lx, open, base, aliases, tp, ntp, expr);
        if (sig == NULL && PyErr_Occurred()) {
            rc = -1;
            break;
        }
        if (sig == NULL)
            continue;
        rc = PyDict_SetItem(out, expr, (PyObject *)sig);
        Py_DECREF(sig);
        if (rc < 0)
            break;
    }
    PyMem_Free(tp);
    return rc;
}
