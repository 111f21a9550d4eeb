/* image_signature.c - kernels' parameter lists where no source says them: C++ names demangled, PTX .entry lists, sizes from the compiled kernel
 *
 * A kernel compiled from source has the Signature its declaration gives. One looked
 * up by its mangled name (PyCUDA's get_function("_Z10initkerneli")), or one of a
 * loaded cubin or PTX, has only what its name and image say. What is read here is
 * never the last word: the kernel's own parameter sizes check it at lookup, and a
 * list that disagrees falls back to the sizes alone. */
#include "declarations/parse.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ demangling */

/* Enough for the names kernels have: a few namespaces, template arguments, and
 * parameters of builtin, struct and pointer types. What it does not know (function
 * and array types, expressions, std:: abbreviations) makes it give up, never guess. */
#define DM_TEXT 256
#define DM_SUBS 64

typedef struct {
    const char *s;
    size_t pos, n;
    char subs[DM_SUBS][DM_TEXT]; /* the substitution candidates, in order (S_, S0_, ...) */
    int nsubs;
    char targs[DM_SUBS][DM_TEXT]; /* the function's template arguments (T_, T0_, ...) */
    int ntargs;
    int fail;
} demangler;

static const struct {
    char code;
    const char *type;
} builtins[] = {
    {'v', "void"}, {'b', "bool"}, {'c', "char"}, {'a', "signed char"},
    {'h', "unsigned char"}, {'s', "short"}, {'t', "unsigned short"}, {'i', "int"},
    {'j', "unsigned int"}, {'l', "long"}, {'m', "unsigned long"}, {'x', "long long"},
    {'y', "unsigned long long"}, {'f', "float"}, {'d', "double"}, {'w', "wchar_t"},
};

static void
dm_cat(demangler *d, char *dst, const char *a, const char *b, const char *c)
{
    if (strlen(a) + strlen(b) + strlen(c) + 1 > DM_TEXT) {
        d->fail = 1;
        dst[0] = '\0';
        return;
    }
    char tmp[DM_TEXT];
    PyOS_snprintf(tmp, sizeof tmp, "%s%s%s", a, b, c);
    memcpy(dst, tmp, strlen(tmp) + 1);
}

static void
dm_add_sub(demangler *d, const char *text)
{
    if (d->nsubs >= DM_SUBS) {
        d->fail = 1;
        return;
    }
    memcpy(d->subs[d->nsubs++], text, strlen(text) + 1);
}

static char
dm_peek(const demangler *d)
{
    return d->pos < d->n ? d->s[d->pos] : '\0';
}

/* <number> <identifier> */
static int
dm_source_name(demangler *d, char *out)
{
    size_t len = 0;
    if (!isdigit((unsigned char)dm_peek(d)))
        return d->fail = 1, -1;
    while (isdigit((unsigned char)dm_peek(d)) && len < DM_TEXT)
        len = len * 10 + (size_t)(d->s[d->pos++] - '0');
    if (len == 0 || len >= DM_TEXT || d->pos + len > d->n)
        return d->fail = 1, -1;
    memcpy(out, d->s + d->pos, len);
    out[len] = '\0';
    d->pos += len;
    return 0;
}

/* "S_" / "S<base 36>_" / "T_" / "T<n>_": the index, or -1. */
static int
dm_seq(demangler *d)
{
    int v = 0;
    if (dm_peek(d) == '_') {
        d->pos++;
        return 0;
    }
    while (isdigit((unsigned char)dm_peek(d)) || isupper((unsigned char)dm_peek(d))) {
        char c = d->s[d->pos++];
        v = v * 36 + (isdigit((unsigned char)c) ? c - '0' : c - 'A' + 10);
        if (v > DM_SUBS)
            return d->fail = 1, -1;
    }
    if (dm_peek(d) != '_')
        return d->fail = 1, -1;
    d->pos++;
    return v + 1;
}

static int dm_type(demangler *d, char *out);

/* I <arg>+ E appended to out as "<a, b>"; function_args: they are the function's own. */
static int
dm_template_args(demangler *d, char *out, int function_args)
{
    char list[DM_TEXT] = "";
    d->pos++; /* I */
    if (function_args)
        d->ntargs = 0;
    while (!d->fail && dm_peek(d) != 'E') {
        char arg[DM_TEXT];
        if (dm_peek(d) == 'L') { /* a literal: L <type> <value> E */
            char ty[DM_TEXT];
            d->pos++;
            if (dm_type(d, ty) < 0)
                return -1;
            size_t at = 0;
            if (dm_peek(d) == 'n') {
                arg[at++] = '-';
                d->pos++;
            }
            while (at + 1 < DM_TEXT && (isalnum((unsigned char)dm_peek(d))))
                arg[at++] = d->s[d->pos++];
            arg[at] = '\0';
            if (dm_peek(d) != 'E')
                return d->fail = 1, -1;
            d->pos++;
            if (strcmp(ty, "bool") == 0)
                PyOS_snprintf(arg, sizeof arg, "%s", strcmp(arg, "0") ? "true" : "false");
        }
        else if (dm_type(d, arg) < 0) {
            return -1;
        }
        if (function_args) {
            if (d->ntargs >= DM_SUBS)
                return d->fail = 1, -1;
            memcpy(d->targs[d->ntargs++], arg, strlen(arg) + 1);
        }
        dm_cat(d, list, list, list[0] ? ", " : "", arg);
    }
    if (d->fail || dm_peek(d) != 'E')
        return d->fail = 1, -1;
    d->pos++;
    char closed[DM_TEXT];
    dm_cat(d, closed, "<", list, list[strlen(list) ? strlen(list) - 1 : 0] == '>' ? " >" : ">");
    dm_cat(d, out, out, closed, "");
    return d->fail ? -1 : 0;
}

/* A name: N...E, St..., S_, or an unscoped source name, with template arguments.
 * is_function: the kernel's own name (its complete name is no candidate, its template
 * arguments are the ones T_ names). */
static int
dm_name(demangler *d, char *out, int is_function)
{
    out[0] = '\0';
    if (dm_peek(d) == 'N') {
        d->pos++;
        while (dm_peek(d) == 'r' || dm_peek(d) == 'V' || dm_peek(d) == 'K')
            d->pos++;
        /* Each prefix is a candidate once: fresh says out was built here (a prefix
         * taken from the table is not added again). */
        int parts = 0, fresh = 0;
        while (!d->fail && dm_peek(d) != 'E') {
            if (fresh)
                dm_add_sub(d, out);
            if (dm_peek(d) == 'I') {
                if (!parts || dm_template_args(d, out, is_function) < 0)
                    return d->fail = 1, -1;
                fresh = 1;
            }
            else if (dm_peek(d) == 'S' && d->pos + 1 < d->n && d->s[d->pos + 1] == 't' && !parts) {
                d->pos += 2;
                dm_cat(d, out, "std", "", "");
                fresh = 0;
            }
            else if (dm_peek(d) == 'S' && !parts) {
                d->pos++;
                int k = dm_seq(d);
                if (k < 0 || k >= d->nsubs)
                    return d->fail = 1, -1;
                dm_cat(d, out, d->subs[k], "", "");
                fresh = 0;
            }
            else {
                char part[DM_TEXT];
                if (dm_source_name(d, part) < 0)
                    return -1;
                dm_cat(d, out, out, parts ? "::" : "", part);
                fresh = 1;
            }
            parts++;
        }
        if (d->fail || dm_peek(d) != 'E')
            return d->fail = 1, -1;
        d->pos++;
        if (!is_function && fresh)
            dm_add_sub(d, out);
        return d->fail ? -1 : 0;
    }
    if (dm_peek(d) == 'S' && d->pos + 1 < d->n && d->s[d->pos + 1] == 't') {
        char part[DM_TEXT];
        d->pos += 2;
        if (dm_source_name(d, part) < 0)
            return -1;
        dm_cat(d, out, "std::", part, "");
    }
    else if (dm_source_name(d, out) < 0) {
        return -1;
    }
    if (dm_peek(d) == 'I') {
        dm_add_sub(d, out); /* an unscoped template name */
        if (dm_template_args(d, out, is_function) < 0)
            return -1;
    }
    if (!is_function)
        dm_add_sub(d, out);
    return d->fail ? -1 : 0;
}

static int
dm_type(demangler *d, char *out)
{
    char c = dm_peek(d), inner[DM_TEXT];
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
        if (builtins[i].code == c) {
            d->pos++;
            dm_cat(d, out, builtins[i].type, "", "");
            return d->fail ? -1 : 0;
        }
    switch (c) {
    case 'P': case 'K': case 'V': case 'r':
        d->pos++;
        if (dm_type(d, inner) < 0)
            return -1;
        if (c == 'P')
            dm_cat(d, out, inner, "*", "");
        else if (c == 'r')
            dm_cat(d, out, inner, "", "");
        else if (inner[strlen(inner) - 1] == '*')
            dm_cat(d, out, inner, c == 'K' ? " const" : " volatile", "");
        else
            dm_cat(d, out, c == 'K' ? "const " : "volatile ", inner, "");
        if (c != 'r')
            dm_add_sub(d, out);
        return d->fail ? -1 : 0;
    case 'D':
        if (d->pos + 1 < d->n && d->s[d->pos + 1] == 'h') { /* IEEE half: __half's builtin */
            d->pos += 2;
            dm_cat(d, out, "__half", "", "");
            return d->fail ? -1 : 0;
        }
        return d->fail = 1, -1;
    case 'T': {
        d->pos++;
        int k = dm_seq(d);
        if (k < 0 || k >= d->ntargs)
            return d->fail = 1, -1;
        dm_cat(d, out, d->targs[k], "", "");
        dm_add_sub(d, out);
        return d->fail ? -1 : 0;
    }
    case 'S':
        if (d->pos + 1 < d->n && d->s[d->pos + 1] == 't')
            return dm_name(d, out, 0);
        d->pos++;
        {
            int k = dm_seq(d);
            if (k < 0 || k >= d->nsubs)
                return d->fail = 1, -1;
            dm_cat(d, out, d->subs[k], "", "");
        }
        if (dm_peek(d) == 'I') { /* a substituted template name, then its arguments */
            if (dm_template_args(d, out, 0) < 0)
                return -1;
            dm_add_sub(d, out);
        }
        return d->fail ? -1 : 0;
    case 'N':
        return dm_name(d, out, 0);
    default:
        if (isdigit((unsigned char)c))
            return dm_name(d, out, 0);
        return d->fail = 1, -1;
    }
}

int
cukit_demangle_kernel(const char *mangled, char *name, size_t name_cap, char *params,
                      size_t params_cap)
{
    demangler *d = PyMem_Calloc(1, sizeof *d);
    if (d == NULL)
        return -1;
    int ok = 0;
    char fname[DM_TEXT], list[4 * DM_TEXT] = "(", ty[DM_TEXT];
    d->s = mangled;
    d->n = strlen(mangled);
    if (d->n < 3 || memcmp(mangled, "_Z", 2) != 0)
        goto done;
    d->pos = 2;
    if (dm_name(d, fname, 1) < 0)
        goto done;
    if (d->ntargs > 0 && dm_type(d, ty) < 0) /* a template function's return type */
        goto done;
    size_t np = 0;
    while (!d->fail && d->pos < d->n && dm_peek(d) != '.') {
        if (dm_type(d, ty) < 0)
            goto done;
        if (np == 0 && strcmp(ty, "void") == 0 && (d->pos >= d->n || dm_peek(d) == '.'))
            break; /* f(void) */
        if (strlen(list) + strlen(ty) + 3 >= sizeof list)
            goto done;
        strcat(list, np ? ", " : "");
        strcat(list, ty);
        np++;
    }
    strcat(list, ")");
    if (d->fail || strlen(fname) >= name_cap || strlen(list) >= params_cap)
        goto done;
    memcpy(name, fname, strlen(fname) + 1);
    memcpy(params, list, strlen(list) + 1);
    ok = 1;
done:
    PyMem_Free(d);
    return ok;
}

/* ------------------------------------------------------------------ sizes alone */

cukit_Signature *
cukit_signature_of_sizes(cukit_state *st, const char *name, int n, const size_t *offsets,
                         const size_t *sizes)
{
    cukit_Signature *sig = cukit_signature_alloc(st, name, n);
    if (sig == NULL)
        return NULL;
    sig->extern_c = 1;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        cukit_param *p = &sig->params[i];
        char type[32], pname[32];
        PyOS_snprintf(type, sizeof type, "%zu bytes", sizes[i]);
        PyOS_snprintf(pname, sizeof pname, "param_%d", i);
        p->kind = CUKIT_P_RAW;
        p->typecode = CUKIT_TC_ANY;
        p->size = sizes[i];
        p->offset = offsets[i];
        p->align = sizes[i] >= 8 ? 8 : sizes[i] ? sizes[i] : 1;
        p->type = cukit_text_dup(type, strlen(type));
        p->name = cukit_text_dup(pname, strlen(pname));
        sig->nparams = i + 1;
        if (p->type == NULL || p->name == NULL) {
            Py_DECREF(sig);
            return NULL;
        }
        if (offsets[i] + sizes[i] > total)
            total = offsets[i] + sizes[i];
    }
    sig->arg_bytes = total;
    sig->verified = 1;
    return sig;
}

/* ------------------------------------------------------------------ PTX .entry lists */

/* The PTX types a parameter may have: what each becomes. */
static const struct {
    const char *ptx;
    cukit_param_kind kind;
    int typecode;
    size_t size;
    const char *type;
} ptx_types[] = {
    {".f32", CUKIT_P_FLOAT, CUKIT_TC_F32, 4, "float"},
    {".f64", CUKIT_P_FLOAT, CUKIT_TC_F64, 8, "double"},
    {".f16", CUKIT_P_HALF, CUKIT_TC_F16, 2, "half"},
    {".s8", CUKIT_P_RAW, CUKIT_TC_I8, 1, "s8"},   {".u8", CUKIT_P_RAW, CUKIT_TC_U8, 1, "u8"},
    {".b8", CUKIT_P_RAW, CUKIT_TC_ANY, 1, "b8"},
    {".s16", CUKIT_P_RAW, CUKIT_TC_I16, 2, "s16"}, {".u16", CUKIT_P_RAW, CUKIT_TC_U16, 2, "u16"},
    {".b16", CUKIT_P_RAW, CUKIT_TC_ANY, 2, "b16"},
    {".s32", CUKIT_P_RAW, CUKIT_TC_I32, 4, "s32"}, {".u32", CUKIT_P_RAW, CUKIT_TC_U32, 4, "u32"},
    {".b32", CUKIT_P_RAW, CUKIT_TC_ANY, 4, "b32"},
    {".s64", CUKIT_P_RAW, CUKIT_TC_I64, 8, "s64"}, {".u64", CUKIT_P_RAW, CUKIT_TC_U64, 8, "u64"},
    {".b64", CUKIT_P_RAW, CUKIT_TC_ANY, 8, "b64"},
};

static const char *
skip_space(const char *p, const char *end)
{
    while (p < end) {
        if (isspace((unsigned char)*p))
            p++;
        else if (end - p >= 2 && p[0] == '/' && p[1] == '/')
            while (p < end && *p != '\n')
                p++;
        else if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
            const char *close = NULL;
            for (const char *q = p + 2; q + 1 < end; q++)
                if (q[0] == '*' && q[1] == '/') {
                    close = q + 2;
                    break;
                }
            p = close ? close : end;
        }
        else
            break;
    }
    return p;
}

/* One word: a directive (.param), an identifier, a number, or one punctuation mark. */
static const char *
word(const char *p, const char *end, const char **wend)
{
    p = skip_space(p, end);
    const char *q = p;
    if (q < end && (*q == '.' || *q == '_' || *q == '$' || *q == '%' || isalnum((unsigned char)*q))) {
        q++;
        while (q < end && (*q == '_' || *q == '$' || isalnum((unsigned char)*q)))
            q++;
    }
    else if (q < end) {
        q++;
    }
    *wend = q;
    return p;
}

static int
word_is(const char *w, const char *wend, const char *s)
{
    return (size_t)(wend - w) == strlen(s) && memcmp(w, s, strlen(s)) == 0;
}

/* One ".param ..." of an entry into *p; returns the text after it, or NULL when it is
 * not one cukit can read (the caller then leaves the kernel to its sizes). */
static const char *
ptx_param(const char *p, const char *end, cukit_param *out, int index)
{
    const char *we, *w;
    int have_type = 0, is_ptr = 0;
    size_t align = 0, count = 1;
    for (;;) {
        w = word(p, end, &we);
        if (w >= end)
            return NULL;
        p = we;
        if (*w != '.')
            break; /* the parameter's name */
        if (word_is(w, we, ".ptr")) {
            is_ptr = 1;
        }
        else if (word_is(w, we, ".align")) {
            w = word(p, end, &we);
            align = (size_t)strtoul(w, NULL, 10);
            p = we;
        }
        else if (!have_type) {
            for (size_t i = 0; i < sizeof ptx_types / sizeof *ptx_types && !have_type; i++)
                if (word_is(w, we, ptx_types[i].ptx)) {
                    out->kind = ptx_types[i].kind;
                    out->typecode = ptx_types[i].typecode;
                    out->size = ptx_types[i].size;
                    out->type = cukit_text_dup(ptx_types[i].type, strlen(ptx_types[i].type));
                    have_type = 1;
                }
            if (!have_type)
                return NULL;
        }
        /* else: the state space a .ptr points into (.global, .const, ...) */
    }
    if (!have_type || out->type == NULL)
        return NULL;
    w = word(p, end, &we);
    if (w < end && *w == '[') { /* .b8 name[16]: a struct passed by value */
        w = word(we, end, &we);
        count = (size_t)strtoul(w, NULL, 10);
        w = word(we, end, &we);
        if (w >= end || *w != ']' || count == 0)
            return NULL;
        p = we;
        PyMem_Free(out->type);
        char shown[48];
        PyOS_snprintf(shown, sizeof shown, "struct of %zu bytes", count * out->size);
        out->type = cukit_text_dup(shown, strlen(shown));
        out->kind = CUKIT_P_STRUCT;
        out->typecode = CUKIT_TC_ANY;
        out->size *= count;
    }
    if (out->kind == CUKIT_P_RAW)
        out->raw_ints = out->typecode != CUKIT_TC_ANY || is_ptr;
    if (is_ptr) {
        PyMem_Free(out->type);
        out->type = cukit_text_dup("void*", 5);
        out->kind = CUKIT_P_POINTER;
        out->typecode = CUKIT_TC_ANY;
        out->raw_ints = 0;
    }
    else if (out->kind == CUKIT_P_RAW) {
        out->typecode = CUKIT_TC_ANY; /* the element check of an address: none */
    }
    out->align = align ? align : out->size >= 8 ? 8 : out->size;
    char pname[32];
    PyOS_snprintf(pname, sizeof pname, "param_%d", index);
    out->name = cukit_text_dup(pname, strlen(pname));
    return out->type && out->name ? p : NULL;
}

/* The parameter list after ".entry NAME": a Signature, or NULL (no exception) when
 * it cannot be read, or NULL with an exception. */
static cukit_Signature *
ptx_entry(cukit_state *st, const char *name, const char *p, const char *end, const char **after)
{
    const char *we, *w = word(p, end, &we);
    *after = we;
    if (w >= end || *w != '(')
        return NULL;
    cukit_param params[CUKIT_MAX_PARAMS];
    int n = 0, ok = 1;
    p = we;
    for (;;) {
        w = word(p, end, &we);
        if (w < end && *w == ')') {
            p = we;
            break;
        }
        if (n > 0) {
            if (w >= end || *w != ',') {
                ok = 0;
                break;
            }
            w = word(we, end, &we);
        }
        if (w >= end || !word_is(w, we, ".param") || n >= CUKIT_MAX_PARAMS) {
            ok = 0;
            break;
        }
        memset(&params[n], 0, sizeof params[n]);
        p = ptx_param(we, end, &params[n], n);
        n++;
        if (p == NULL) {
            ok = 0;
            break;
        }
    }
    *after = p ? p : end;
    cukit_Signature *sig = NULL;
    if (ok && (sig = cukit_signature_alloc(st, name, n)) != NULL) {
        sig->extern_c = 1;
        memcpy(sig->params, params, (size_t)n * sizeof *params);
        sig->nparams = n;
        return sig; /* owns the texts now */
    }
    for (int i = 0; i < n; i++) {
        PyMem_Free(params[i].type);
        PyMem_Free(params[i].name);
    }
    return sig;
}

PyObject *
cukit_ptx_signatures(cukit_state *st, const char *ptx, size_t n)
{
    PyObject *out = PyDict_New();
    const char *p = ptx, *end = ptx + n;
    while (out && p < end) {
        const char *we, *w = word(p, end, &we);
        if (w >= end)
            break;
        p = we;
        if (!word_is(w, we, ".entry"))
            continue;
        w = word(p, end, &we);
        if (w >= end || we - w >= 1024)
            break;
        char name[1024];
        memcpy(name, w, (size_t)(we - w));
        name[we - w] = '\0';
        cukit_Signature *sig = ptx_entry(st, name, we, end, &p);
        if (sig == NULL && PyErr_Occurred())
            Py_CLEAR(out);
        else if (sig != NULL && PyDict_SetItemString(out, name, (PyObject *)sig) < 0)
            Py_CLEAR(out);
        Py_XDECREF(sig);
    }
    return out;
}
