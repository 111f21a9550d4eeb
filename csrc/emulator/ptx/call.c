/* call.c - calls in PTX: vprintf, and the module's .func bodies inlined at each call */
#include "emulator/ptx/ptx.h"

#include <stdlib.h>
#include <string.h>

/* A call to a .func of the module, inlined here: its parameters become the caller's
 * call-scope parameter registers, its registers fresh slots, `ret` a branch to its end. */
static int
inline_call(P *p, const tok *op, int line, operand *ret, operand *fn, operand *args, int guard)
{
    devfunc *df = NULL;
    for (int k = 0; k < p->nfuncs && !df; k++) {
        if (p->funcs[k].nlen == fn->nlen && memcmp(p->funcs[k].name, fn->name, (size_t)fn->nlen) == 0)
            df = &p->funcs[k];
    }
    if (df == NULL && p->device_launch)
        return ptx_fail_device_launch(p, line);
    static const char *const heap[] = {"malloc", "free", "__nv_aligned_device_malloc"};
    for (size_t k = 0; df == NULL && k < sizeof heap / sizeof *heap; k++) {
        if ((int)strlen(heap[k]) == fn->nlen && memcmp(heap[k], fn->name, (size_t)fn->nlen) == 0)
            return ptx_fail(p, line, "the emulator does not support the device heap (allocate "
                            "the memory before the launch, with cukit.empty, and pass it to the "
                            "kernel; or run on a GPU): %s inside a kernel (malloc, free, new or "
                            "delete)", heap[k]);
    }
    if (df == NULL)
        return ptx_fail(p, line, "the emulator does not support the PTX instruction '%.*s' to '%.*s' "
                        "(a function this module does not define)", op->len, op->p, fn->nlen, fn->name);
    if (guard >= 0)
        return ptx_fail(p, line, "the emulator does not support the PTX instruction '%.*s' under a "
                        "predicate", op->len, op->p);
    for (int k = 0; k < p->depth; k++) {
        if (p->inlining[k] == df->name)
            return ptx_fail(p, line, "the emulator does not support the PTX instruction '%.*s' to the "
                            "recursive function '%.*s' (it inlines device functions)", op->len, op->p,
                            fn->nlen, fn->name);
    }
    if (p->depth == EMU_MAX_DEPTH)
        return ptx_fail(p, line, "the emulator does not support device functions that call one "
                        "another more than %d deep (it inlines each call)", EMU_MAX_DEPTH);
    if ((args ? args->nitems : 0) != df->nparams || (ret ? ret->nitems : 0) > df->nrets)
        return ptx_fail(p, line, "the call to '%.*s' does not match its parameters", fn->nlen, fn->name);
    symtab callee = {0};
    for (int k = 0; k < df->nparams + (ret ? ret->nitems : 0); k++) {
        int isret = k >= df->nparams;
        const char *item = isret ? ret->items[k - df->nparams] : args->items[k];
        int ilen = isret ? ret->ilens[k - df->nparams] : args->ilens[k];
        sym *a = ptx_lookup(p, item, ilen);
        if (a == NULL || (a->kind != S_CPARAM && a->kind != S_PLOCAL)) {
            ptx_sym_clear(&callee);
            return ptx_fail(p, line, "the emulator could not read the arguments of '%.*s'", fn->nlen, fn->name);
        }
        const char *name = isret ? df->rets[k - df->nparams] : df->params[k];
        int nlen = isret ? df->rlens[k - df->nparams] : df->plens[k];
        if (!ptx_sym_add(&callee, name, nlen, a->kind, a->value, a->type)) {
            ptx_sym_clear(&callee);
            return ptx_fail(p, line, "out of memory");
        }
    }
    symtab caller = p->fn;
    int back = p->i, fix0 = p->nfix;
    uint32_t line_here = p->cur_line;
    p->fn = callee;
    p->i = df->body;
    p->inlining[p->depth++] = df->name;
    int rc = p->parse_body(p);
    if (rc == 0 && !ptx_sym_add(&p->fn, "$__emu_ret", 10, S_LABEL, p->f->ncode, 0))
        rc = ptx_fail(p, line, "out of memory");
    for (int k = fix0; rc == 0 && k < p->nfix; k++) {
        sym *s = ptx_sym_find(&p->fn, p->fix[k].label, p->fix[k].llen);
        if (s == NULL || s->kind != S_LABEL)
            rc = ptx_fail(p, line, "the branch target '%.*s' is not a label", p->fix[k].llen, p->fix[k].label);
        else
            p->f->code[p->fix[k].inst].imm = s->value;
    }
    p->nfix = fix0;
    p->depth--;
    ptx_sym_clear(&p->fn);
    p->fn = caller;
    p->i = back;
    p->cur_line = line_here;
    return rc;
}

int
ptx_parse_call(P *p, const tok *op, int line, operand *ops, int nops, int guard, int gneg)
{
    /* call[.uni] (ret), fname, (args); or call fname, (args); */
    int k = 0;
    operand *ret = NULL;
    if (k < nops && ops[k].kind == OK_PAREN)
        ret = &ops[k++];
    if (k >= nops || ops[k].kind != OK_NAME)
        return ptx_fail(p, line, "the emulator does not support the PTX instruction '%.*s'", op->len, op->p);
    operand *fn = &ops[k++];
    operand *args = k < nops ? &ops[k] : NULL;
    if (fn->nlen == 7 && memcmp(fn->name, "vprintf", 7) == 0 && args && args->nitems == 2) {
        emu_inst *in = ptx_emit(p, line);
        if (in == NULL)
            return -1;
        in->op = OP_PRINTF;
        in->guard = guard;
        in->gneg = (uint8_t)gneg;
        sym *a = ptx_lookup(p, args->items[0], args->ilens[0]);
        sym *b = ptx_lookup(p, args->items[1], args->ilens[1]);
        if (a == NULL || b == NULL || a->kind != S_CPARAM || b->kind != S_CPARAM)
            return ptx_fail(p, line, "the emulator does not support the PTX instruction '%.*s'", op->len, op->p);
        in->s[0] = (int)a->value;
        in->s[1] = (int)b->value;
        if (ret && ret->nitems == 1) {
            sym *r = ptx_lookup(p, ret->items[0], ret->ilens[0]);
            if (r && r->kind == S_CPARAM)
                in->d[0] = (int)r->value;
        }
        return 0;
    }
    return inline_call(p, op, line, ret, fn, args, guard);
}

/* The names in a parameter list "(.param .b32 a, .param .align 4 .b8 b[8])" starting
 * at token k; the index after its ')'. */
static int
param_names(P *p, int k, const char **names, int *lens, int *n, int max)
{
    tok *v = p->t.v;
    *n = 0;
    if (!ptx_is_punct(&v[k], '('))
        return k;
    k++;
    const char *last = NULL;
    int lastlen = 0;
    for (; v[k].kind != TK_END && !ptx_is_punct(&v[k], ')'); k++) {
        if (v[k].kind == TK_ID && v[k].p[0] != '.') {
            last = v[k].p;
            lastlen = v[k].len;
        }
        if (ptx_is_punct(&v[k], ',') && last && *n < max) {
            names[*n] = last;
            lens[(*n)++] = lastlen;
            last = NULL;
        }
    }
    if (last && *n < max) {
        names[*n] = last;
        lens[(*n)++] = lastlen;
    }
    return v[k].kind == TK_END ? k : k + 1;
}

/* Find every .func definition first: a call may come before the callee's body; note
 * whether the module launches kernels from the device. */
void
ptx_scan_funcs(P *p)
{
    tok *v = p->t.v;
    static const char *const launchers[] = {"__cudaCDP2LaunchDeviceV2", "__cudaCDP2LaunchDevice",
                                            "cudaLaunchDeviceV2", "cudaLaunchDevice"};
    for (int k = 0; k < p->t.n; k++) {
        for (size_t j = 0; v[k].kind == TK_ID && j < sizeof launchers / sizeof *launchers; j++)
            p->device_launch |= ptx_is(&v[k], launchers[j]);
        if (v[k].kind != TK_ID || !ptx_is(&v[k], ".func"))
            continue;
        devfunc d = {0};
        int j = param_names(p, k + 1, d.rets, d.rlens, &d.nrets, 2);
        if (v[j].kind != TK_ID)
            continue;
        d.name = v[j].p;
        d.nlen = v[j].len;
        j = param_names(p, j + 1, d.params, d.plens, &d.nparams, 32);
        while (v[j].kind != TK_END && !ptx_is_punct(&v[j], '{') && !ptx_is_punct(&v[j], ';'))
            j++;
        if (!ptx_is_punct(&v[j], '{'))
            continue;
        d.body = j;
        devfunc *grown = realloc(p->funcs, (size_t)(p->nfuncs + 1) * sizeof *grown);
        if (grown == NULL)
            return;
        p->funcs = grown;
        p->funcs[p->nfuncs++] = d;
    }
}

