/* templates.c - template kernels: a Signature for each name expression that instantiates one */
#include "compile/parse.h"

#include <ctype.h>
#include <string.h>

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
    if (cukit_tokenize(&sub, t, t + strlen(t), 1) < 0)
        goto done;
    rc = sub.n >= 4 ? cukit_alias_record(&sub, 0, sub.n - 1, aliases, 1) : 0;
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

int
cukit_template_instantiate(cukit_state *st, const lexer *lx, int stmt, int open, const char *base,
            PyObject *aliases, PyObject *exprs, PyObject *out)
{
    int t = stmt;
    while (t < open && !token_is(&lx->toks[t], "template"))
        t++;
    if (t + 1 >= open || !token_is(&lx->toks[t + 1], "<"))
        return 0;
    int close = cukit_skip_group(lx, t + 1) - 1;
    struct {
        char name[128];
        int from, to; /* default argument tokens, from < 0 when none */
    } tp[MAX_TEMPLATE_PARAMS];
    int ntp = 0, start = t + 2;
    for (int k = t + 2; k <= close; k++) {
        const token *tk = &lx->toks[k];
        if (k < close && tk->kind == TOK_PUNCT && strchr("([<{", tk->p[0])) {
            k = cukit_skip_group(lx, k) - 1;
            continue;
        }
        if (k < close && !(tk->kind == TOK_PUNCT && tk->p[0] == ','))
            continue;
        if (k > start) {
            int eq = -1, ident = -1;
            for (int q = start; q < k && eq < 0; q++) {
                if (token_is(&lx->toks[q], "="))
                    eq = q;
                else if (token_is(&lx->toks[q], "."))
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
        cukit_Signature *sig =
            ok ? cukit_params_read(st, lx, open, PyUnicode_AsUTF8(expr), al) : NULL;
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
