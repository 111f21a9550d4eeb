/* load.c - reads the PTX that NVRTC emits into the emulator's decoded form, once per module (emu_ptx_load) */
#include "emulator/ptx/ptx.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ declarations */

/* `.reg .type %r<N>;` or `.reg .type a, b;` */
static int
parse_reg(P *p)
{
    p->i++;
    tok *t = ptx_peek(p);
    int type = TY_NONE;
    while (t->kind == TK_ID && t->p[0] == '.') {
        int ty = ptx_type_of(t->p + 1, t->len - 1, NULL);
        if (ty)
            type = ty;
        else if (!(ptx_is(t, ".v2") || ptx_is(t, ".v4")))
            return ptx_fail(p, t->line, "the emulator does not support registers of type '%.*s'", t->len, t->p);
        else
            return ptx_fail(p, t->line, "the emulator does not support vector registers");
        p->i++;
        t = ptx_peek(p);
    }
    for (;;) {
        t = ptx_peek(p);
        if (t->kind != TK_ID)
            return ptx_fail(p, t->line, "the emulator could not read a register declaration");
        const char *name = t->p;
        int len = t->len;
        p->i++;
        long count = -1;
        if (ptx_is_punct(ptx_peek(p), '<')) {
            p->i++;
            count = strtol(ptx_peek(p)->p, NULL, 10);
            p->i++;
            if (ptx_expect(p, '>') < 0)
                return -1;
        }
        char buf[256];
        if (len > 200)
            return ptx_fail(p, t->line, "register name too long");
        if (count > (EMU_MAX_SLOTS - (long)p->f->nslots) / (type == TY_B128 ? 2 : 1))
            return ptx_fail(p, t->line, "the emulator does not support kernels this large: %s "
                            "declares more than %d registers once its device functions are "
                            "inlined (%ld in this declaration)", p->f->name, EMU_MAX_SLOTS, count);
        for (long k = count < 0 ? -1 : 0; k < (count < 0 ? 0 : count); k++) {
            int n = len;
            memcpy(buf, name, (size_t)len);
            if (k >= 0)
                n += snprintf(buf + len, sizeof buf - (size_t)len, "%ld", k);
            if (ptx_scope_note(p, buf, n) < 0)
                return -1;
            sym *s = type == TY_PRED ? ptx_sym_add(&p->fn, buf, n, S_PRED, p->f->npreds++, type)
                                    : ptx_sym_add(&p->fn, buf, n, S_REG, ptx_new_slot(p), type);
            if (type == TY_B128) /* its high half, in the next slot */
                ptx_new_slot(p);
            if (s == NULL)
                return ptx_fail(p, t->line, "out of memory");
        }
        if (ptx_is_punct(ptx_peek(p), ',')) {
            p->i++;
            continue;
        }
        return ptx_expect(p, ';');
    }
}

/* `[.align N] .type name[N][M]...` after a state space; the bytes and alignment. */
static int
parse_var_shape(P *p, const char **name, int *nlen, size_t *size, size_t *align, int *type,
                int *unsized)
{
    tok *t = ptx_peek(p);
    *align = 0;
    *type = TY_NONE;
    int esize = 0;
    *unsized = 0;
    while (t->kind == TK_ID && t->p[0] == '.') {
        if (ptx_is(t, ".align")) {
            p->i++;
            *align = (size_t)strtoul(ptx_peek(p)->p, NULL, 0);
        }
        else if (ptx_is(t, ".attribute") && ptx_is_punct(t + 1, '(') && ptx_is(t + 2, ".managed") &&
                 ptx_is_punct(t + 3, ')')) {
            /* __managed__: the emulator's device memory is the host's, so a managed
             * variable is a global one that the host reads and writes as it is */
            p->i += 3;
        }
        else if (ptx_is(t, ".ptr") || ptx_is(t, ".global") || ptx_is(t, ".shared") || ptx_is(t, ".const") ||
                 ptx_is(t, ".local") || ptx_is(t, ".v2") || ptx_is(t, ".v4")) {
            if (ptx_is(t, ".v2") || ptx_is(t, ".v4"))
                esize = esize * (t->p[2] - '0'); /* type usually comes after */
        }
        else {
            int sz;
            int ty = ptx_type_of(t->p + 1, t->len - 1, &sz);
            if (ty == TY_NONE)
                return ptx_fail(p, t->line, "the emulator does not support the declaration '%.*s'", t->len, t->p);
            *type = ty;
            esize = sz;
        }
        p->i++;
        t = ptx_peek(p);
    }
    if (t->kind != TK_ID)
        return ptx_fail(p, t->line, "the emulator could not read a variable declaration");
    *name = t->p;
    *nlen = t->len;
    p->i++;
    size_t count = 1;
    while (ptx_is_punct(ptx_peek(p), '[')) {
        p->i++;
        if (ptx_is_punct(ptx_peek(p), ']')) {
            *unsized = 1;
            count = 0;
        }
        else {
            unsigned long long d = strtoull(ptx_peek(p)->p, NULL, 0);
            /* beyond any memory: refused before the product can wrap around */
            if (d > (1ull << 40) || count * d > (1ull << 40))
                return ptx_fail(p, t->line, "the variable '%.*s' is larger than the emulator's "
                                "memory: out of memory", *nlen, *name);
            count *= (size_t)d;
            p->i++;
        }
        if (ptx_expect(p, ']') < 0)
            return -1;
    }
    if (*align & (*align - 1) || *align > 65536)
        return ptx_fail(p, t->line, "the alignment %zu of '%.*s' is not a power of two up to "
                        "65536", *align, *nlen, *name);
    if (esize == 0)
        esize = 1;
    *size = count * (size_t)esize;
    if (*align == 0)
        *align = (size_t)esize;
    return 0;
}

static size_t
align_up(size_t v, size_t a)
{
    return a ? (v + a - 1) / a * a : v;
}

/* A function-scope .shared/.local declaration. */
static int
parse_local_var(P *p, int space)
{
    int line = ptx_peek(p)->line;
    p->i++;
    const char *name;
    int nlen, type, unsized;
    size_t size, align;
    if (parse_var_shape(p, &name, &nlen, &size, &align, &type, &unsized) < 0)
        return -1;
    if (ptx_is_punct(ptx_peek(p), '='))
        return ptx_fail(p, line, "the emulator does not support initialized .shared/.local variables");
    if (ptx_expect(p, ';') < 0)
        return -1;
    emu_func *f = p->f;
    if (space == SP_SHARED) {
        if (unsized)
            return ptx_sym_add(&p->fn, name, nlen, S_DYNSHARED, 0, 0) ? 0 : -1;
        if (p->depth > 0) { /* a device function's: the same variable at every call */
            char key[512];
            /* the function by where its name is in the text (names there end at no NUL) */
            int klen = snprintf(key, sizeof key, "%p/%.*s", (const void *)p->inlining[p->depth - 1],
                                nlen, name);
            if (klen >= (int)sizeof key)
                return ptx_fail(p, line, "the name '%.*s' is too long", nlen, name);
            sym *had = ptx_sym_find(&p->fshared, key, klen);
            if (had && had->kind == S_SHARED)
                return ptx_sym_add(&p->fn, name, nlen, S_SHARED, had->value, 0) ? 0 : -1;
            if (!ptx_sym_add(&p->fshared, key, klen, S_SHARED,
                             (int64_t)align_up(f->shared_static, align), 0))
                return -1;
        }
        f->shared_static = align_up(f->shared_static, align);
        if (!ptx_sym_add(&p->fn, name, nlen, S_SHARED, (int64_t)f->shared_static, 0))
            return -1;
        f->shared_static += size;
    }
    else {
        f->local_bytes = align_up(f->local_bytes, align);
        if (!ptx_sym_add(&p->fn, name, nlen, S_LOCAL, (int64_t)f->local_bytes, 0))
            return -1;
        f->local_bytes += size;
    }
    /* the limits a GPU's ptxas enforces (it refuses such PTX at load) */
    if (f->local_bytes > 512 * 1024)
        return ptx_fail(p, line, "%s uses %zu bytes of local memory per thread, more than the "
                        "512 KiB a GPU allows", f->name, f->local_bytes);
    if (f->shared_static > 48 * 1024)
        return ptx_fail(p, line, "%s declares %zu bytes of static shared memory, more than the "
                        "48 KiB a GPU allows (use dynamic shared memory, up to 227 KiB)", f->name,
                        f->shared_static);
    return 0;
}

/* Parameters of .entry (S_KPARAM with layout) or of a call scope / .func (S_CPARAM). */
static int
parse_param_decl(P *p, int entry)
{
    p->i++; /* .param */
    const char *name;
    int nlen, type, unsized;
    size_t size, align;
    if (parse_var_shape(p, &name, &nlen, &size, &align, &type, &unsized) < 0)
        return -1;
    emu_func *f = p->f;
    if (entry) {
        f->param_bytes = align_up(f->param_bytes, align);
        emu_param *v = realloc(f->params, (size_t)(f->nparams + 1) * sizeof *v);
        if (v == NULL)
            return ptx_fail(p, 0, "out of memory");
        f->params = v;
        f->params[f->nparams++] = (emu_param){f->param_bytes, size, align};
        if (!ptx_sym_add(&p->fn, name, nlen, S_KPARAM, (int64_t)f->param_bytes, type))
            return -1;
        f->param_bytes += size;
        return 0;
    }
    if (ptx_scope_note(p, name, nlen) < 0)
        return -1;
    if (size > 8) { /* an aggregate: lives in the thread's local memory */
        f->local_bytes = align_up(f->local_bytes, align);
        if (!ptx_sym_add(&p->fn, name, nlen, S_PLOCAL, (int64_t)f->local_bytes, type))
            return -1;
        f->local_bytes += size;
        return 0;
    }
    return ptx_sym_add(&p->fn, name, nlen, S_CPARAM, ptx_new_slot(p), type) ? 0 : -1;
}

static uint32_t
line_value(int file, int line)
{
    return ((uint32_t)file << 20) | ((uint32_t)line & 0xfffff);
}

/* The line-table entry of (file, line) inlined at entry `outer` (0: not inlined). */
static uint32_t
add_line(P *p, int file, int line, uint32_t outer)
{
    emu_module *m = p->m;
    uint32_t v = line_value(file, line);
    if (m->nlines > 0 && m->lines[m->nlines - 1] == v && m->outer[m->nlines - 1] == outer)
        return (uint32_t)m->nlines - 1;
    if (m->nlines == m->caplines) {
        int cap = m->caplines ? m->caplines * 2 : 256;
        uint32_t *n = realloc(m->lines, (size_t)cap * sizeof *n);
        if (n == NULL)
            return 0;
        m->lines = n;
        uint32_t *o = realloc(m->outer, (size_t)cap * sizeof *o);
        if (o == NULL)
            return 0;
        m->outer = o;
        m->caplines = cap;
    }
    m->lines[m->nlines] = v;
    m->outer[m->nlines] = outer;
    return (uint32_t)m->nlines++;
}

/* .loc FILE LINE COL[, function_name NAME, inlined_at FILE LINE COL]: the entry, with
 * the place it was inlined at (the latest entry of that file and line), so that a fault
 * in a header's inline function can be reported at the user's line that called it. */
static uint32_t
parse_loc(P *p, int line)
{
    int file = (int)strtol(ptx_peek(p)->p, NULL, 10);
    p->i++;
    int l = (int)strtol(ptx_peek(p)->p, NULL, 10);
    uint32_t outer = 0;
    for (tok *t = ptx_peek(p); t->kind != TK_END && t->line == line; t = ptx_peek(p)) {
        p->i++;
        tok *a = ptx_peek(p);
        if (ptx_is(t, "inlined_at") && a->line == line && a[1].line == line) {
            uint32_t at = line_value((int)strtol(a->p, NULL, 10), (int)strtol(a[1].p, NULL, 10));
            for (int k = p->m->nlines - 1; k > 0 && k >= p->m->nlines - 512 && outer == 0; k--)
                if (p->m->lines[k] == at)
                    outer = (uint32_t)k;
        }
    }
    return l > 0 ? add_line(p, file, l, outer) : 0;
}

/* A function body from its '{' to the matching '}'. 0 / -1. */
static int
parse_body(P *p)
{
    if (ptx_expect(p, '{') < 0)
        return -1;
    int depth = 1;
    int marks[64];
    int saved_depth = p->block_depth;
    marks[1] = p->nundo;
    while (depth > 0 && !p->failed) {
        tok *t = ptx_peek(p);
        if (t->kind == TK_END)
            return ptx_fail(p, t->line, "the PTX ends inside a function");
        if (ptx_is_punct(t, '{')) {
            depth++;
            p->i++;
            marks[depth < 64 ? depth : 63] = p->nundo;
        }
        else if (ptx_is_punct(t, '}')) {
            /* the block's declarations end: what they shadowed is visible again */
            int mark = marks[depth < 64 ? depth : 63];
            while (depth > 1 && p->nundo > mark) {
                scoped *u = &p->undo[--p->nundo];
                if (u->had)
                    ptx_sym_add(&p->fn, u->name, (int)strlen(u->name), u->old.kind, u->old.value, u->old.type);
                else
                    ptx_sym_add(&p->fn, u->name, (int)strlen(u->name), S_NONE, 0, 0);
                free(u->name);
            }
            depth--;
            p->i++;
        }
        else if ((p->block_depth = depth) && ptx_is(t, ".reg")) {
            if (parse_reg(p) < 0)
                return -1;
        }
        else if (ptx_is(t, ".shared")) {
            if (parse_local_var(p, SP_SHARED) < 0)
                return -1;
        }
        else if (ptx_is(t, ".local")) {
            if (parse_local_var(p, SP_LOCAL) < 0)
                return -1;
        }
        else if ((p->block_depth = depth) && ptx_is(t, ".param")) {
            if (parse_param_decl(p, 0) < 0 || ptx_expect(p, ';') < 0)
                return -1;
        }
        else if (ptx_is(t, ".loc")) {
            int line = t->line;
            p->i++;
            p->cur_line = parse_loc(p, line);
            ptx_skip_line(p, line);
        }
        else if (ptx_is(t, ".pragma")) {
            ptx_skip_statement(p);
        }
        else if (t->kind == TK_ID && ptx_is_punct(&t[1], ':')) {
            if (!ptx_sym_add(&p->fn, t->p, t->len, S_LABEL, p->f->ncode, 0))
                return ptx_fail(p, t->line, "out of memory");
            p->i += 2;
        }
        else if (t->kind == TK_ID && t->p[0] == '.') {
            return ptx_fail(p, t->line, "the emulator does not support the directive '%.*s' in a function",
                        t->len, t->p);
        }
        else if (ptx_parse_instruction(p) < 0)
            return -1;
    }
    p->block_depth = saved_depth;
    return p->failed ? -1 : 0;
}

int
ptx_scope_note(P *p, const char *name, int len)
{
    if (p->block_depth <= 1)
        return 0; /* the function's own scope: nothing to restore */
    if (p->nundo == p->capundo) {
        int cap = p->capundo ? p->capundo * 2 : 64;
        scoped *v = realloc(p->undo, (size_t)cap * sizeof *v);
        if (v == NULL)
            return ptx_fail(p, 0, "out of memory");
        p->undo = v;
        p->capundo = cap;
    }
    scoped *u = &p->undo[p->nundo];
    sym *old = ptx_sym_find(&p->fn, name, len);
    u->name = malloc((size_t)len + 1);
    if (u->name == NULL)
        return ptx_fail(p, 0, "out of memory");
    memcpy(u->name, name, (size_t)len);
    u->name[len] = '\0';
    u->had = old != NULL && old->kind != S_NONE;
    if (u->had)
        u->old = *old;
    p->nundo++;
    return 0;
}

static int
parse_function(P *p, int entry)
{
    /* after .entry / .func */
    tok *t = ptx_peek(p);
    int line = t->line;
    emu_func *f = calloc(1, sizeof *f);
    if (f == NULL)
        return ptx_fail(p, line, "out of memory");
    p->f = f;
    p->capcode = p->capprefill = 0;
    p->nfix = 0;
    p->cur_line = 0;
    ptx_sym_clear(&p->fn);
    ptx_sym_clear(&p->fshared);
    f->is_entry = entry;
    f->module = p->m;
    p->zero_slot = ptx_const_slot(p, 0);
    f->shared_static = p->mod_shared;
    if (!entry && ptx_is_punct(t, '(')) { /* return parameters */
        p->i++;
        while (!ptx_is_punct(ptx_peek(p), ')')) {
            if (ptx_peek(p)->kind == TK_END || parse_param_decl(p, 0) < 0)
                goto error;
            if (ptx_is_punct(ptx_peek(p), ','))
                p->i++;
        }
        p->i++;
    }
    t = ptx_peek(p);
    if (t->kind != TK_ID)
        goto error;
    f->name = malloc((size_t)t->len + 1);
    if (f->name == NULL)
        goto error;
    memcpy(f->name, t->p, (size_t)t->len);
    f->name[t->len] = '\0';
    p->i++;
    if (ptx_is_punct(ptx_peek(p), '(')) {
        p->i++;
        while (!ptx_is_punct(ptx_peek(p), ')')) {
            if (ptx_peek(p)->kind == TK_END || !ptx_is(ptx_peek(p), ".param") || parse_param_decl(p, entry) < 0)
                goto error;
            if (ptx_is_punct(ptx_peek(p), ','))
                p->i++;
        }
        p->i++;
    }
    /* performance directives */
    while (ptx_peek(p)->kind == TK_ID && ptx_peek(p)->p[0] == '.') {
        t = ptx_peek(p);
        int tl = t->line;
        if (ptx_is(t, ".maxntid") || ptx_is(t, ".reqntid")) {
            p->i++;
            long prod = 1;
            while (ptx_peek(p)->kind == TK_NUM) {
                prod *= strtol(ptx_peek(p)->p, NULL, 10);
                p->i++;
                if (ptx_is_punct(ptx_peek(p), ','))
                    p->i++;
            }
            f->maxntid = (int)prod;
        }
        else {
            p->i++;
            while (ptx_peek(p)->line == tl && (ptx_peek(p)->kind == TK_NUM || ptx_is_punct(ptx_peek(p), ',')))
                p->i++;
        }
    }
    if (ptx_is_punct(ptx_peek(p), ';')) { /* a declaration only */
        p->i++;
        free(f->name);
        free(f->prefill);
        free(f->params);
        free(f->code);
        free(f);
        p->f = NULL;
        return 0;
    }
    if (!entry) {
        /* Device functions that NVRTC kept are rejected only if an entry calls them. */
        int depth = 0;
        do {
            if (ptx_is_punct(ptx_peek(p), '{'))
                depth++;
            else if (ptx_is_punct(ptx_peek(p), '}'))
                depth--;
            else if (ptx_peek(p)->kind == TK_END)
                goto error;
            p->i++;
        } while (depth > 0);
        free(f->name);
        free(f->prefill);
        free(f->params);
        free(f->code);
        free(f);
        p->f = NULL;
        return 0;
    }
    if (parse_body(p) < 0)
        goto error;
    /* a final exit so execution never runs off the end */
    emu_inst *in = ptx_emit(p, ptx_peek(p)->line);
    if (in == NULL)
        goto error;
    in->op = OP_EXIT;
    for (int k = 0; k < p->nfix; k++) {
        sym *s = ptx_sym_find(&p->fn, p->fix[k].label, p->fix[k].llen);
        if (s == NULL || s->kind != S_LABEL) {
            ptx_fail(p, f->code[p->fix[k].inst].ptxline, "the branch target '%.*s' is not a label",
                 p->fix[k].llen, p->fix[k].label);
            goto error;
        }
        f->code[p->fix[k].inst].imm = s->value;
    }
    if (ptx_contract(f) < 0) {
        ptx_fail(p, line, "out of memory");
        goto error;
    }
    for (int k = 0; k < p->m->nfuncs; k++)
        if (strcmp(p->m->funcs[k]->name, f->name) == 0) {
            ptx_fail(p, line, "the kernel '%s' is defined twice in this PTX (duplicate definition)",
                     f->name);
            goto error;
        }
    emu_func **v = realloc(p->m->funcs, (size_t)(p->m->nfuncs + 1) * sizeof *v);
    if (v == NULL)
        goto error;
    p->m->funcs = v;
    p->m->funcs[p->m->nfuncs++] = f;
    f->max_dyn_shared = 48 * 1024 - (int)f->shared_static;
    if (f->max_dyn_shared < 0)
        f->max_dyn_shared = 0;
    p->f = NULL;
    return 0;
error:
    if (!p->failed)
        ptx_fail(p, line, "the emulator could not read the function at this line");
    free(f->name);
    free(f->prefill);
    free(f->params);
    free(f->code);
    free(f);
    p->f = NULL;
    return -1;
}

/* A module-scope .global/.const/.shared variable, with an optional initializer. */
static int
parse_global(P *p, int space, int is_extern)
{
    int line = ptx_peek(p)->line;
    p->i++;
    const char *name;
    int nlen, type, unsized;
    size_t size, align;
    if (parse_var_shape(p, &name, &nlen, &size, &align, &type, &unsized) < 0)
        return -1;
    sym *had = ptx_sym_find(&p->mod, name, nlen);
    if (had && had->kind != S_NONE && !is_extern)
        return ptx_fail(p, line, "the variable '%.*s' is defined twice in this PTX (duplicate "
                        "definition)", nlen, name);
    if (space == SP_SHARED && !unsized && !is_extern) {
        /* at the same offset of every kernel's block, each block its own copy, as on a GPU */
        p->mod_shared = align_up(p->mod_shared, align);
        if (!ptx_sym_add(&p->mod, name, nlen, S_SHARED, (int64_t)p->mod_shared, 0))
            return -1;
        p->mod_shared += size;
        if (p->mod_shared > 48 * 1024)
            return ptx_fail(p, line, "this PTX declares %zu bytes of static shared memory at "
                            "module scope, more than the 48 KiB a GPU allows", p->mod_shared);
        return ptx_expect(p, ';');
    }
    if (space == SP_SHARED) {
        if (!ptx_sym_add(&p->mod, name, nlen, S_DYNSHARED, 0, 0))
            return -1;
        return ptx_expect(p, ';');
    }
    if (is_extern)
        return ptx_fail(p, line, "the emulator cannot link the external variable '%.*s'", nlen, name);
    int esize = emu_type_size(type);
    if (esize == 0)
        esize = 1;
    if (size > emu_total_memory())
        return ptx_fail(p, line, "the variable '%.*s' (%zu bytes) is larger than the emulated "
                        "device's memory: out of memory", nlen, name, size);
    emu_module *m = p->m;
    emu_global *gv = realloc(m->globals, (size_t)(m->nglobals + 1) * sizeof *gv);
    if (gv == NULL)
        return ptx_fail(p, line, "out of memory");
    m->globals = gv;
    emu_global *g = &m->globals[m->nglobals];
    size_t alloc = size ? size : 1;
    g->data = aligned_alloc(256, align_up(alloc, 256));
    g->name = malloc((size_t)nlen + 1);
    if (g->data == NULL || g->name == NULL) {
        free(g->data);
        free(g->name);
        return ptx_fail(p, line, "out of memory");
    }
    memset(g->data, 0, align_up(alloc, 256));
    memcpy(g->name, name, (size_t)nlen);
    g->name[nlen] = '\0';
    g->size = size;
    g->space = space;
    m->nglobals++;
    if (!ptx_sym_add(&p->mod, name, nlen, S_GLOBAL, (int64_t)(uintptr_t)g->data, type))
        return -1;
    if (ptx_is_punct(ptx_peek(p), '=')) {
        p->i++;
        size_t k = 0;
        int braces = 0;
        while (!ptx_is_punct(ptx_peek(p), ';')) {
            tok *t = ptx_peek(p);
            if (t->kind == TK_END)
                return ptx_fail(p, line, "the PTX ends inside an initializer");
            if (ptx_is_punct(t, '{'))
                braces++;
            else if (ptx_is_punct(t, '}'))
                braces--;
            else if (t->kind == TK_NUM || ptx_is_punct(t, '-')) {
                int neg = 0;
                if (ptx_is_punct(t, '-')) {
                    neg = 1;
                    p->i++;
                    t = ptx_peek(p);
                }
                uint64_t v;
                if (ptx_literal(t->p, t->len, neg, type, &v) < 0)
                    return ptx_fail(p, t->line, "the emulator could not read the initializer '%.*s'", t->len, t->p);
                if ((k + 1) * (size_t)esize <= size) {
                    /* a .b128 element: the literal (at most 64 bits) extended to 128 */
                    uint64_t wide[2] = {v, neg && (int64_t)v < 0 ? ~0ull : 0};
                    memcpy((char *)g->data + k * (size_t)esize, wide, (size_t)(esize > 16 ? 16 : esize));
                }
                k++;
            }
            else if (t->kind == TK_ID) {
                /* generic(sym) or sym: an address */
                const char *n = t->p;
                int nl = t->len;
                if (ptx_is(t, "generic")) {
                    p->i += 2;
                    n = ptx_peek(p)->p;
                    nl = ptx_peek(p)->len;
                    p->i++;
                }
                sym *s = ptx_sym_find(&p->mod, n, nl);
                if (s == NULL || s->kind != S_GLOBAL)
                    return ptx_fail(p, t->line, "the emulator cannot initialize with '%.*s'", nl, n);
                uint64_t v = (uint64_t)s->value;
                if ((k + 1) * (size_t)esize <= size && esize == 8)
                    memcpy((char *)g->data + k * 8, &v, 8);
                k++;
            }
            p->i++;
        }
        (void)braces;
    }
    char origin[160];
    snprintf(origin, sizeof origin, "the module variable %s", g->name);
    if (emu_registry_add((uint64_t)(uintptr_t)g->data, size, EMU_GLOBAL, origin) < 0)
        return ptx_fail(p, line, "out of memory");
    return ptx_expect(p, ';');
}

static void
add_file(P *p, int idx, const tok *s)
{
    emu_module *m = p->m;
    if (idx < 0 || idx >= 4096)
        return;
    if (idx >= m->nfiles) {
        char **v = realloc(m->files, (size_t)(idx + 1) * sizeof *v);
        if (v == NULL)
            return;
        for (int k = m->nfiles; k <= idx; k++)
            v[k] = NULL;
        m->files = v;
        m->nfiles = idx + 1;
    }
    free(m->files[idx]);
    m->files[idx] = malloc((size_t)s->len + 1);
    if (m->files[idx]) {
        memcpy(m->files[idx], s->p, (size_t)s->len);
        m->files[idx][s->len] = '\0';
    }
}

static int
parse_module(P *p)
{
    while (ptx_peek(p)->kind != TK_END && !p->failed) {
        tok *t = ptx_peek(p);
        int line = t->line;
        if (ptx_is(t, ".version") || ptx_is(t, ".target")) {
            if (ptx_check_header(p, t) < 0)
                return -1;
            ptx_skip_line(p, line);
        }
        else if (ptx_is(t, ".address_size")) {
            if (ptx_check_header(p, t) < 0)
                return -1;
            ptx_skip_line(p, line);
        }
        else if (ptx_is(t, ".file")) {
            ptx_skip_line(p, line);
        }
        else if (!p->version || !p->target_seen) {
            return ptx_fail(p, line, "this PTX has no %s directive before its first '%.*s' (a "
                            "driver requires .version and .target first)",
                            p->version ? ".target" : ".version", t->len, t->p);
        }
        else if (ptx_is(t, ".section")) {
            while (!ptx_is_punct(ptx_peek(p), '{') && ptx_peek(p)->kind != TK_END)
                p->i++;
            int depth = 0;
            do {
                if (ptx_is_punct(ptx_peek(p), '{'))
                    depth++;
                else if (ptx_is_punct(ptx_peek(p), '}'))
                    depth--;
                p->i++;
            } while (depth > 0 && ptx_peek(p)->kind != TK_END);
        }
        else if (ptx_is(t, ".visible") || ptx_is(t, ".weak") || ptx_is(t, ".extern") || ptx_is(t, ".common")) {
            int ext = ptx_is(t, ".extern");
            p->i++;
            tok *n = ptx_peek(p);
            if (ptx_is(n, ".entry") || ptx_is(n, ".func")) {
                p->i++;
                if (parse_function(p, ptx_is(n, ".entry")) < 0)
                    return -1;
            }
            else if (ptx_is(n, ".global") || ptx_is(n, ".const") || ptx_is(n, ".shared")) {
                if (parse_global(p, ptx_is(n, ".global") ? SP_GLOBAL : ptx_is(n, ".const") ? SP_CONST : SP_SHARED, ext) < 0)
                    return -1;
            }
            else
                return ptx_fail(p, n->line, "the emulator does not support '%.*s' here", n->len, n->p);
        }
        else if (ptx_is(t, ".entry") || ptx_is(t, ".func")) {
            p->i++;
            if (parse_function(p, ptx_is(t, ".entry")) < 0)
                return -1;
        }
        else if (ptx_is(t, ".global") || ptx_is(t, ".const")) {
            if (parse_global(p, ptx_is(t, ".global") ? SP_GLOBAL : SP_CONST, 0) < 0)
                return -1;
        }
        else if (ptx_is(t, ".shared")) {
            if (parse_global(p, SP_SHARED, 0) < 0)
                return -1;
        }
        else
            return ptx_fail(p, line, "the emulator does not support the PTX directive '%.*s'", t->len, t->p);
    }
    return p->failed ? -1 : 0;
}

emu_module *
emu_ptx_load(const char *ptx, char *why, size_t whylen)
{
    P p = {0};
    p.why = why;
    p.whylen = whylen;
    p.parse_body = parse_body;
    p.m = calloc(1, sizeof *p.m);
    if (p.m == NULL) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    add_line(&p, 0, 0, 0); /* index 0: unknown */
    if (ptx_lex(ptx, &p.t) < 0) {
        snprintf(why, whylen, "out of memory");
        emu_module_free(p.m);
        return NULL;
    }
    /* .file comes after the functions that use it; read the names first, so that
     * messages at load can name the source line */
    for (int k = 0; k + 2 < p.t.n; k++) {
        tok *t = &p.t.v[k];
        if (t->kind == TK_ID && ptx_is(t, ".file") && t[1].kind == TK_NUM && t[2].kind == TK_STR)
            add_file(&p, (int)strtol(t[1].p, NULL, 10), &t[2]);
    }
    ptx_scan_funcs(&p);
    int rc = parse_module(&p);
    ptx_sym_clear(&p.fn);
    ptx_sym_clear(&p.fshared);
    ptx_sym_clear(&p.mod);
    free(p.t.v);
    free(p.fix);
    free(p.funcs);
    for (int k = 0; k < p.nundo; k++)
        free(p.undo[k].name);
    free(p.undo);
    if (rc < 0) {
        emu_module_free(p.m);
        return NULL;
    }
    return p.m;
}

void
emu_module_free(emu_module *m)
{
    if (m == NULL)
        return;
    for (int i = 0; i < m->nfuncs; i++) {
        emu_func *f = m->funcs[i];
        free(f->name);
        free(f->code);
        free(f->prefill);
        free(f->params);
        free(f);
    }
    free(m->funcs);
    for (int i = 0; i < m->nglobals; i++) {
        emu_registry_remove((uint64_t)(uintptr_t)m->globals[i].data, NULL);
        free(m->globals[i].data);
        free(m->globals[i].name);
    }
    free(m->globals);
    for (int i = 0; i < m->nfiles; i++)
        free(m->files[i]);
    free(m->files);
    free(m->lines);
    free(m->outer);
    free(m);
}
