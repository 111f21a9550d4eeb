/* kernel_params.c - the CuPy-style parameter lists of ElementwiseKernel and
 * ReductionKernel ("float32 x, raw T y", and PyCUDA's "const float *x" for the latter):
 * one reader, whose type names are compile's one table of C types plus numpy's names */
#include "compute/builders.h"

#include <ctype.h>
#include <string.h>

#define MAX_PARAM_WORDS 8

int
ck_is_ident(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

int
ck_type_named(const char *t, const char *const *keep)
{
    for (int tc = 0; tc < CK_NT; tc++)
        if (ck_dtypes[tc].ch && strcmp(ck_dtypes[tc].name, t) == 0)
            return tc;
    const cukit_ctype *ct = cukit_ctype_named(t);
    if (ct == NULL || !ck_math_tc(ct->typecode))
        return -1;
    if (ct->kind != CUKIT_P_STRUCT)
        return ct->typecode;
    for (; keep && *keep; keep++)
        if (strcmp(*keep, t) == 0)
            return ct->typecode;
    return -1; /* float2, cuComplex: the kernel would see the engine's complex type */
}

int
ck_placeholder(const ck_param_rules *rules, ck_param_list *list, const char *t)
{
    for (int i = 0; i < *list->nph; i++)
        if (strcmp(list->ph_names[i], t) == 0)
            return i;
    if (strlen(t) >= CK_PNAME) {
        PyErr_Format(PyExc_ValueError, "%s: the type placeholder '%s' is over %d bytes long",
                     rules->who, t, CK_PNAME - 1);
        return -1;
    }
    if (*list->nph >= CK_MAXPH) {
        PyErr_Format(PyExc_ValueError, "%s takes at most %d type placeholders", rules->who,
                     CK_MAXPH);
        return -1;
    }
    strcpy(list->ph_names[*list->nph], t);
    return (*list->nph)++;
}

static int
is_c_qualifier(const char *w)
{
    return strcmp(w, "const") == 0 || strcmp(w, "__restrict__") == 0 ||
           strcmp(w, "restrict") == 0 || strcmp(w, "volatile") == 0;
}

/* The type words [w0, nw - 1) joined by single spaces into type. 0, or -1 with
 * ValueError when they are too long. */
static int
join_type(const ck_param_rules *rules, char *const *words, int w0, int nw, const char *name,
          char *type, size_t cap)
{
    size_t tl = 0;
    type[0] = '\0';
    for (int i = w0; i < nw - 1; i++) {
        size_t wl = strlen(words[i]);
        if (tl + (i > w0) + wl >= cap) {
            PyErr_Format(PyExc_ValueError,
                         "%s: the type of parameter '%s' is over %d bytes long: write a numpy "
                         "name such as float32, a C name such as float, or one identifier as "
                         "a type placeholder", rules->who, name, (int)cap - 1);
            return -1;
        }
        if (i > w0)
            type[tl++] = ' ';
        memcpy(type + tl, words[i], wl + 1);
        tl += wl;
    }
    return 0;
}

/* Fill p's type from `type`: a dtype, a kept C type, or a placeholder. 0 / -1. */
static int
set_type(const ck_param_rules *rules, ck_param_list *list, ck_param *p, const char *type)
{
    p->tc = ck_type_named(type, rules->keep_ctypes);
    for (const char *const *k = rules->keep_ctypes; k && *k; k++)
        if (strcmp(type, *k) == 0)
            p->ctype = *k;
    if (p->tc >= 0)
        return 0;
    if (!rules->placeholders || !ck_is_ident(type)) {
        PyErr_Format(PyExc_ValueError, "%s: unknown type '%s' for parameter '%s' (use a numpy "
                     "name such as float32 or a C name such as float%s)", rules->who, type,
                     p->name, rules->placeholders ? ", or one identifier as a type placeholder"
                                                  : "");
        return -1;
    }
    return (p->ph = ck_placeholder(rules, list, type)) < 0 ? -1 : 0;
}

/* One item of the list (its words split at blanks, in place). 0 / -1. */
static int
parse_one(const ck_param_rules *rules, ck_param_list *list, PyObject *text, char *item,
          int pointer, int output)
{
    char *words[MAX_PARAM_WORDS], *save = NULL, *w = strtok_r(item, " \t\n", &save);
    int nw = 0;
    for (; w && nw < MAX_PARAM_WORDS; w = strtok_r(NULL, " \t\n", &save))
        if (!rules->c_decls || !is_c_qualifier(w))
            words[nw++] = w;
    if (w != NULL) { /* a word past the eighth: never dropped without a word */
        PyErr_Format(PyExc_ValueError, "%s: a parameter of %R has more than %d words: write "
                     "each as \"[raw] type name\", e.g. \"float32 x\"", rules->who, text,
                     MAX_PARAM_WORDS);
        return -1;
    }
    if (nw == 0)
        return 0;
    int in = 0;
    for (int i = 0; i < *list->nparams; i++)
        in += !list->params[i].output;
    if (*list->nparams >= rules->max || (!output && in >= rules->max_in)) {
        PyErr_Format(PyExc_ValueError, "%s takes at most %d %s", rules->who,
                     output ? rules->max : rules->max_in, output ? "parameters" : "inputs");
        return -1;
    }
    ck_param *p = &list->params[*list->nparams];
    memset(p, 0, sizeof *p);
    p->output = output;
    p->raw = pointer;
    int w0 = 0;
    if (strcmp(words[0], "raw") == 0)
        p->raw = w0 = 1;
    if (nw - w0 < 2 || !ck_is_ident(words[nw - 1]) || strlen(words[nw - 1]) >= sizeof p->name) {
        PyErr_Format(PyExc_ValueError, "%s: cannot read the parameters %R: write each as "
                     "\"[raw] type name\", e.g. \"float32 x\" or \"T y\"", rules->who, text);
        return -1;
    }
    strcpy(p->name, words[nw - 1]);
    char type[256];
    if (join_type(rules, words, w0, nw, p->name, type, sizeof type) < 0 ||
        set_type(rules, list, p, type) < 0)
        return -1;
    for (int i = 0; i < *list->nparams; i++)
        if (strcmp(list->params[i].name, p->name) == 0) {
            PyErr_Format(PyExc_ValueError, "%s: parameter %s given twice", rules->who, p->name);
            return -1;
        }
    (*list->nparams)++;
    return 0;
}

int
ck_params_parse(const ck_param_rules *rules, ck_param_list *list, PyObject *text, int output)
{
    const char *s = PyUnicode_AsUTF8(text);
    if (s == NULL)
        return -1;
    char buf[1024];
    if (strlen(s) >= sizeof buf) {
        PyErr_Format(PyExc_ValueError, "%s: parameter list too long", rules->who);
        return -1;
    }
    strcpy(buf, s);
    if (rules->c_decls)
        for (char *c = buf; *c; c++)
            if (*c == '*')
                *c = ' '; /* a pointer is seen in the original text below */
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        /* the same item in the original text, to see its '*' */
        size_t at = (size_t)(item - buf), len = strlen(item);
        int pointer = rules->c_decls && memchr(s + at, '*', len) != NULL;
        if (parse_one(rules, list, text, item, pointer, output) < 0)
            return -1;
    }
    return 0;
}
