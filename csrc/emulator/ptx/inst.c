/* inst.c - decodes one PTX instruction: its guard, operands and the step for its family */
#include "emulator/ptx/ptx.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Address operand -> slot in s[3] and offset in imm; the space's kind of symbol folded in. */
static int
address(P *p, emu_inst *in, const operand *o, int *is_kparam)
{
    if (o->kind != OK_ADDR)
        return ptx_fail(p, o->line, "the emulator expected an address [..] here");
    in->imm = o->off;
    in->addr = p->zero_slot;
    in->wrap32 = 0; /* a register's below */
    if (is_kparam)
        *is_kparam = 0;
    if (o->name == NULL)
        return 0;
    sym *s = ptx_lookup(p, o->name, o->nlen);
    if (s == NULL)
        return ptx_fail(p, o->line, "the emulator does not know '%.*s'", o->nlen, o->name);
    switch (s->kind) {
    case S_REG:
        if (s->type == TY_B128)
            return ptx_fail_b128(p, o->line, o->name, o->nlen);
        in->addr = (int)s->value;
        in->wrap32 = emu_type_size(s->type) == 4 && in->imm != 0;
        return 0;
    case S_SHARED:
    case S_LOCAL:
    case S_GLOBAL:
        in->imm += s->value;
        return 0;
    case S_KPARAM:
        in->imm += s->value;
        if (is_kparam)
            *is_kparam = 1;
        return 0;
    case S_DYNSHARED:
        in->addr = ptx_add_prefill(p, SR_DYNBASE, 0);
        return 0;
    case S_PLOCAL:
        in->imm += s->value;
        if (is_kparam)
            *is_kparam = 3;
        return 0;
    case S_CPARAM:
        if (is_kparam)
            *is_kparam = 2;
        in->addr = (int)s->value;
        return 0;
    }
    return ptx_fail(p, o->line, "the emulator cannot use '%.*s' as an address", o->nlen, o->name);
}

#define IS(d, str) ((d)->nbase == (int)sizeof(str) - 1 && memcmp((d)->base, str, sizeof(str) - 1) == 0)

/* The operand ops[k] as a predicate register. */
static int
pred_of(decoding *d, int k)
{
    return ptx_pred(d->p, d->ops[k].name, d->ops[k].nlen, d->line);
}

/* setp.cmp[.bool].type p[|q], a, b[, c]; set.cmp[.bool].dtype.stype d, a, b[, c] */
static int
decode_setp(decoding *d)
{
    P *p = d->p;
    emu_inst *in = d->in;
    operand *ops = d->ops;
    int cmp = d->m.cmp, boolop = d->m.boolop;
    in->op = IS(d, "setp") ? OP_SETP : OP_SET;
    if (in->op == OP_SET) {
        in->type = (uint8_t)(d->m.ntypes > 1 ? d->m.types[1] : d->type);
        in->type2 = (uint8_t)d->m.types[0];
    }
    in->imm = cmp;
    in->base = (uint8_t)boolop;
    if (d->nops < 3 || cmp == 0)
        return ptx_refuse(d);
    int vt = in->type;
    if ((in->s[0] = ptx_src(p, &ops[1], vt)) < 0 || (in->s[1] = ptx_src(p, &ops[2], vt)) < 0)
        return -1;
    if (boolop) {
        if (d->nops < 4 || (in->s[2] = pred_of(d, 3)) < 0)
            return -1;
        in->vec = (uint8_t)ops[3].neg; /* negated third operand */
    }
    if (in->op == OP_SET)
        return (in->d[0] = ptx_dst(p, &ops[0])) < 0 ? -1 : 0;
    if ((in->d[0] = pred_of(d, 0)) < 0)
        return -1;
    in->d[1] = -1;
    if (ops[0].name2 && (in->d[1] = ptx_pred(p, ops[0].name2, ops[0].n2len, d->line)) < 0)
        return -1;
    return 0;
}

/* selp d, a, b, {!}c */
static int
decode_selp(decoding *d)
{
    P *p = d->p;
    emu_inst *in = d->in;
    operand *ops = d->ops;
    in->op = OP_SELP;
    if (d->nops != 4 || (in->d[0] = ptx_dst(p, &ops[0])) < 0 || (in->s[0] = ptx_src(p, &ops[1], d->type)) < 0 ||
        (in->s[1] = ptx_src(p, &ops[2], d->type)) < 0 || (in->s[2] = pred_of(d, 3)) < 0)
        return -1;
    in->vec = (uint8_t)ops[3].neg;
    return 0;
}

/* slct.dtype.stype d, a, b, c */
static int
decode_slct(decoding *d)
{
    P *p = d->p;
    emu_inst *in = d->in;
    operand *ops = d->ops;
    in->op = OP_SLCT;
    in->type2 = (uint8_t)(d->m.ntypes > 1 ? d->m.types[1] : d->type);
    in->type = (uint8_t)d->m.types[0];
    if (d->nops != 4 || (in->d[0] = ptx_dst(p, &ops[0])) < 0 || (in->s[0] = ptx_src(p, &ops[1], in->type)) < 0 ||
        (in->s[1] = ptx_src(p, &ops[2], in->type)) < 0 || (in->s[2] = ptx_src(p, &ops[3], in->type2)) < 0)
        return -1;
    return 0;
}

/* and, or, xor, not of predicates; of registers they are arithmetic (decode_alu). */
static int
decode_logic(decoding *d)
{
    emu_inst *in = d->in;
    operand *ops = d->ops;
    if (d->type != TY_PRED)
        return ptx_decode_alu(d);
    in->op = IS(d, "and") ? OP_PAND : IS(d, "or") ? OP_POR : IS(d, "xor") ? OP_PXOR : OP_PNOT;
    if ((in->d[0] = pred_of(d, 0)) < 0 || (in->s[0] = pred_of(d, 1)) < 0)
        return -1;
    in->vec = (uint8_t)(ops[1].neg | (d->nops > 2 ? ops[2].neg << 1 : 0));
    if (d->nops > 2 && (in->s[1] = pred_of(d, 2)) < 0)
        return -1;
    return 0;
}

/* cvt to and from pairs of float8 (what cuda_fp8.h compiles to on sm_89 and later):
 * cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, a, b (base 4: a to d's high byte, b to its
 * low), cvt.rn.satfinite.{e4m3x2,e5m2x2}.f16x2 d, a and cvt.rn.f16x2.{e4m3x2,e5m2x2} d, a
 * (base 5: half by half). .relu and the other float8 formats are refused. */
static int
decode_cvt_f8(decoding *d)
{
    emu_inst *in = d->in;
    const mods *m = &d->m;
    int dt = m->types[0], st = m->types[1];
    int d8 = dt == TY_E4M3X2 || dt == TY_E5M2X2, s8 = st == TY_E4M3X2 || st == TY_E5M2X2;
    int to8 = d8 && (st == TY_F32 || st == TY_F16X2) && m->satfinite;
    int from8 = s8 && dt == TY_F16X2 && !m->satfinite;
    int two = to8 && st == TY_F32;
    if ((!to8 && !from8) || m->rnd != RND_RN || m->sat || m->ftz)
        return ptx_refuse(d);
    in->op = OP_CVT;
    in->type = (uint8_t)dt;
    in->type2 = (uint8_t)st;
    in->base = two ? 4 : 5;
    if (d->nops != 2 + two || (in->d[0] = ptx_dst(d->p, &d->ops[0])) < 0 ||
        (in->s[0] = ptx_src(d->p, &d->ops[1], st)) < 0 ||
        (two && (in->s[1] = ptx_src(d->p, &d->ops[2], st)) < 0))
        return -1;
    return 0;
}

/* cvt.dtype.stype: the common integer widenings and narrowings marked (in->base) to
 * run without the generic path. */
static int
decode_cvt(decoding *d)
{
    emu_inst *in = d->in;
    const mods *m = &d->m;
    if (m->ntypes == 2 && (m->types[0] == TY_E4M3X2 || m->types[0] == TY_E5M2X2 ||
                           m->types[1] == TY_E4M3X2 || m->types[1] == TY_E5M2X2))
        return decode_cvt_f8(d);
    if (m->ntypes != 2 || m->sat > 1 || m->satfinite)
        return ptx_refuse(d);
    in->op = OP_CVT;
    in->type = (uint8_t)m->types[0];
    in->type2 = (uint8_t)m->types[1];
    int dt = in->type, st = in->type2;
    if (!m->sat && (dt == TY_U64 || dt == TY_S64) && st == TY_U32)
        in->base = 1;
    else if (!m->sat && (dt == TY_U64 || dt == TY_S64) && st == TY_S32)
        in->base = 2;
    else if (!m->sat && (dt == TY_U32 || dt == TY_S32) && (st == TY_U64 || st == TY_S64))
        in->base = 3;
    if (d->nops != 2 || (in->d[0] = ptx_dst(d->p, &d->ops[0])) < 0 ||
        (in->s[0] = ptx_src(d->p, &d->ops[1], in->type2)) < 0)
        return -1;
    return 0;
}

/* cvta[.to].space: generic addresses from and to a window's offsets. */
static int
decode_cvta(decoding *d)
{
    static const int ops_from[] = {[SP_SHARED] = OP_CVTA_SHARED, [SP_LOCAL] = OP_CVTA_LOCAL,
                                   [SP_PARAM] = OP_CVTA_PARAM};
    static const int ops_to[] = {[SP_SHARED] = OP_CVTA_TO_SHARED, [SP_LOCAL] = OP_CVTA_TO_LOCAL,
                                 [SP_PARAM] = 0};
    emu_inst *in = d->in;
    const mods *m = &d->m;
    if (m->space == SP_GLOBAL || m->space == SP_CONST)
        in->op = OP_MOV;
    else if (m->space == SP_SHARED || m->space == SP_LOCAL || (m->space == SP_PARAM && !m->to))
        in->op = (uint16_t)(m->to ? ops_to[m->space] : ops_from[m->space]);
    else
        return ptx_refuse(d);
    if (d->nops != 2 || (in->d[0] = ptx_dst(d->p, &d->ops[0])) < 0 ||
        (in->s[0] = ptx_src(d->p, &d->ops[1], TY_U64)) < 0)
        return -1;
    return 0;
}

/* ld or st of a call's own parameter (kparam 2): a register in disguise, a mov. */
static int
decode_call_param(decoding *d, int isst, const operand *val)
{
    emu_inst *in = d->in;
    if (val->kind == OK_VEC)
        return ptx_refuse(d);
    in->op = OP_MOV;
    if (isst) {
        in->d[0] = in->addr;
        return (in->s[0] = ptx_src(d->p, val, d->type)) < 0 ? -1 : 0;
    }
    in->s[0] = in->addr;
    return (in->d[0] = ptx_dst(d->p, val)) < 0 ? -1 : 0;
}

/* ld, ldu, st: a kernel parameter read (checked here, once), a call's parameter, or a
 * memory access of one value or a vector. */
static int
decode_ldst(decoding *d)
{
    P *p = d->p;
    emu_inst *in = d->in;
    mods *m = &d->m;
    int type = d->type, line = d->line;
    int isst = IS(d, "st");
    operand *addr = isst ? &d->ops[0] : &d->ops[1];
    operand *val = isst ? &d->ops[1] : &d->ops[0];
    if (d->nops != 2 || type == TY_NONE || type == TY_PRED)
        return ptx_refuse(d);
    int kparam = 0;
    if (address(p, in, addr, &kparam) < 0)
        return -1;
    in->space = (uint8_t)(kparam == 3 ? SP_LOCAL : m->space);
    in->vec = (uint8_t)m->vec;
    if (kparam == 2)
        return decode_call_param(d, isst, val);
    if (kparam == 1 && !isst && in->addr == p->zero_slot && m->vec == 1) {
        /* checked here, once: OP_LDPARAM reads the parameter buffer unchecked */
        if (in->imm < 0 || (uint64_t)in->imm + (uint64_t)emu_type_size(type) > p->f->param_bytes)
            return ptx_fail(p, line, "ld.param reads %d bytes at offset %lld of the kernel's "
                            "parameters, outside its %zu bytes of parameters",
                            emu_type_size(type), (long long)in->imm, p->f->param_bytes);
        in->op = OP_LDPARAM;
        in->space = SP_PARAM;
        return (in->d[0] = ptx_dst(p, val)) < 0 ? -1 : 0;
    }
    if (kparam == 3)
        m->space = SP_LOCAL; /* an aggregate call parameter */
    if (m->space == SP_PARAM && isst)
        return ptx_refuse(d);
    in->op = isst ? OP_ST : OP_LD;
    int n = m->vec;
    for (int k = 0; k < n; k++) {
        operand o;
        if (val->kind == OK_VEC) {
            if (val->nitems != n)
                return ptx_refuse(d);
            o = ptx_vec_item(val, k, line);
            if (o.name[0] == '-') {
                o.neg = 1;
                o.name++;
                o.nlen--;
            }
        }
        else if (n == 1)
            o = *val;
        else
            return ptx_refuse(d);
        if (isst ? (in->s[k] = ptx_src(p, &o, type)) < 0 : (in->d[k] = ptx_dst(p, &o)) < 0)
            return -1;
    }
    return 0;
}

/* atom.op.type [d,] [addr], b[, c]; red.op.type [addr], b */
static int
decode_atom(decoding *d)
{
    P *p = d->p;
    emu_inst *in = d->in;
    const mods *m = &d->m;
    int type = d->type;
    in->op = IS(d, "atom") ? OP_ATOM : OP_RED;
    in->type2 = (uint8_t)m->atom;
    in->space = (uint8_t)m->space;
    if (m->atom == 0 || m->vec != 1 || (type != TY_U32 && type != TY_S32 && type != TY_U64 &&
                                        type != TY_S64 && type != TY_F32 && type != TY_F64))
        return ptx_refuse(d);
    int k = 0;
    if (in->op == OP_ATOM && (in->d[0] = ptx_dst(p, &d->ops[k++])) < 0)
        return -1;
    if (address(p, in, &d->ops[k++], NULL) < 0)
        return -1;
    if ((in->s[0] = ptx_src(p, &d->ops[k++], type)) < 0)
        return -1;
    if (m->atom == ATOM_CAS && (k >= d->nops || (in->s[1] = ptx_src(p, &d->ops[k++], type)) < 0))
        return -1;
    return 0;
}

/* A branch to a label, resolved once the function is read (p->fix). */
static int
branch_to(decoding *d, const char *label, int len)
{
    P *p = d->p;
    d->in->op = OP_BRA;
    if (p->nfix == p->capfix) {
        int cap = p->capfix ? p->capfix * 2 : 64;
        fixup *v = realloc(p->fix, (size_t)cap * sizeof *v);
        if (v == NULL)
            return ptx_fail(p, d->line, "out of memory");
        p->fix = v;
        p->capfix = cap;
    }
    p->fix[p->nfix++] = (fixup){label, len, p->f->ncode - 1};
    return 0;
}

static int
decode_bra(decoding *d)
{
    if (d->nops != 1 || d->ops[0].kind != OK_NAME)
        return ptx_fail(d->p, d->line, "'%.*s' is not valid PTX: a branch takes one operand, the "
                        "label it goes to", d->op->len, d->op->p);
    return branch_to(d, d->ops[0].name, d->ops[0].nlen);
}

/* ret at the end of an inlined function jumps past its body; else ret and exit end the
 * thread. */
static int
decode_exit(decoding *d)
{
    if (IS(d, "ret") && d->p->depth > 0)
        return branch_to(d, "$__emu_ret", 10);
    d->in->op = OP_EXIT;
    return 0;
}

/* bar.sync, barrier.sync, bar.warp.sync, bar.red (__syncthreads_count/and/or), and named
 * barriers with a thread count (bar.sync a, b; bar.arrive a, b). */
static int
decode_bar(decoding *d)
{
    emu_inst *in = d->in;
    const mods *m = &d->m;
    /* bar.warp.sync: the lanes of a warp run converged here already */
    if (m->warp) {
        in->op = OP_BARWARP;
        /* the mask, for synccheck */
        in->s[0] = -1;
        if (d->nops >= 1 && (in->s[0] = ptx_src(d->p, &d->ops[0], TY_U32)) < 0)
            return -1;
        return 0;
    }
    if (m->bar_red) {
        /* bar.red.popc.u32 d, a, {!}p; bar.red.and|or.pred d, a, {!}p: a barrier that
         * also reduces p over the block */
        if (m->bar_arrive || d->nops != 3 || d->ops[2].kind != OK_NAME ||
            !(m->popc || m->boolop == 1 || m->boolop == 2))
            return ptx_refuse(d);
        const operand *c = &d->ops[2];
        in->op = OP_BARRED;
        in->type2 = (uint8_t)(m->popc ? 0 : m->boolop);
        if ((in->d[0] = m->popc ? ptx_dst(d->p, &d->ops[0]) : pred_of(d, 0)) < 0 ||
            (in->s[0] = ptx_pred(d->p, c->name, c->nlen, d->line)) < 0 ||
            (in->s[1] = ptx_src(d->p, &d->ops[1], TY_U32)) < 0)
            return -1;
        in->vec = (uint8_t)c->neg;
        return 0;
    }
    /* bar.sync a, b and bar.arrive a, b: a named barrier with a thread count (arrive needs
     * one); bar.sync a alone is barrier a of every thread of the block (OP_BAR, a in s[0]) */
    if (m->bar_arrive || d->nops == 2) {
        if (d->nops != 2)
            return ptx_refuse(d);
        in->op = OP_BARN;
        in->type2 = (uint8_t)m->bar_arrive;
        return (in->s[0] = ptx_src(d->p, &d->ops[0], TY_U32)) < 0 ||
               (in->s[1] = ptx_src(d->p, &d->ops[1], TY_U32)) < 0 ? -1 : 0;
    }
    if (d->nops != 1)
        return ptx_refuse(d);
    in->op = OP_BAR;
    return (in->s[0] = ptx_src(d->p, &d->ops[0], TY_U32)) < 0 ? -1 : 0;
}

/* redux.sync.op.type d, a, membermask (__reduce_*_sync) */
static int
decode_redux(decoding *d)
{
    emu_inst *in = d->in;
    int atom = d->m.atom, type = d->type;
    if (d->nops != 3 || (type != TY_U32 && type != TY_S32) ||
        !(atom == ATOM_ADD || atom == ATOM_MIN || atom == ATOM_MAX || atom == ATOM_AND ||
          atom == ATOM_OR || atom == ATOM_XOR))
        return ptx_refuse(d);
    in->op = OP_REDUX;
    in->type2 = (uint8_t)atom;
    return (in->d[0] = ptx_dst(d->p, &d->ops[0])) < 0 || (in->s[0] = ptx_src(d->p, &d->ops[1], type)) < 0 ||
           (in->s[1] = ptx_src(d->p, &d->ops[2], TY_U32)) < 0 ? -1 : 0;
}

/* Instructions with no operands the emulator reads: an opcode alone. */
static int
decode_fence(decoding *d)
{
    d->in->op = OP_FENCE;
    return 0;
}

static int
decode_nop(decoding *d)
{
    d->in->op = OP_NOP;
    return 0;
}

static int
decode_trap(decoding *d)
{
    d->in->op = OP_TRAP;
    return 0;
}

/* shfl.sync.mode.b32 d[|p], a, b, c, membermask */
static int
decode_shfl(decoding *d)
{
    P *p = d->p;
    emu_inst *in = d->in;
    operand *ops = d->ops;
    if (!d->m.shfl || d->nops != 5)
        return ptx_refuse(d);
    in->op = OP_SHFL;
    in->type2 = (uint8_t)d->m.shfl;
    if ((in->d[0] = ptx_dst(p, &ops[0])) < 0 || (in->s[0] = ptx_src(p, &ops[1], TY_U32)) < 0 ||
        (in->s[1] = ptx_src(p, &ops[2], TY_U32)) < 0 || (in->s[2] = ptx_src(p, &ops[3], TY_U32)) < 0)
        return -1;
    in->d[1] = -1;
    if (ops[0].name2 && (in->d[1] = ptx_pred(p, ops[0].name2, ops[0].n2len, d->line)) < 0)
        return -1;
    return 0;
}

/* vote.mode d, {!}a[, membermask]: ballot to a register, all/any/uni to a predicate */
static int
decode_vote(decoding *d)
{
    emu_inst *in = d->in;
    const tok *op = d->op;
    if (!d->m.vote && !(op->len >= d->nbase + 4 && memcmp(op->p + d->nbase, ".uni", 4) == 0))
        return ptx_refuse(d);
    in->op = OP_VOTE;
    in->type2 = (uint8_t)(d->m.vote ? d->m.vote : VOTE_UNI);
    if (d->nops < 2)
        return ptx_refuse(d);
    if (in->type2 == VOTE_BALLOT) {
        if ((in->d[0] = ptx_dst(d->p, &d->ops[0])) < 0)
            return -1;
    }
    else if ((in->d[0] = pred_of(d, 0)) < 0)
        return -1;
    if ((in->s[0] = pred_of(d, 1)) < 0)
        return -1;
    in->vec = (uint8_t)d->ops[1].neg;
    return 0;
}

static int
decode_activemask(decoding *d)
{
    d->in->op = OP_ACTIVEMASK;
    return (d->in->d[0] = ptx_dst(d->p, &d->ops[0])) < 0 ? -1 : 0;
}

/* match.any|all.sync.type d[|p], a, membermask */
static int
decode_match(decoding *d)
{
    P *p = d->p;
    emu_inst *in = d->in;
    operand *ops = d->ops;
    if (d->nops < 3 || !(d->m.any || d->m.all))
        return ptx_refuse(d);
    in->op = d->m.any ? OP_MATCH_ANY : OP_MATCH_ALL;
    if ((in->d[0] = ptx_dst(p, &ops[0])) < 0 || (in->s[0] = ptx_src(p, &ops[1], d->type)) < 0)
        return -1;
    in->d[1] = -1;
    if (ops[0].name2 && (in->d[1] = ptx_pred(p, ops[0].name2, ops[0].n2len, d->line)) < 0)
        return -1;
    return 0;
}

/* The next word of an opcode's modifiers (each after a dot) from *s, before end: its
 * start in *w, its length returned; -1 when none is left. */
static int
next_mod(const char **s, const char *end, const char **w)
{
    if (*s >= end)
        return -1;
    *w = ++*s;
    while (*s < end && **s != '.')
        ++*s;
    return (int)(*s - *w);
}

/* cp.async, sm_80's copy from global to shared memory, done when it is issued: the GPU
 * may finish a copy at any time up to the cp.async.wait_group or wait_all that covers
 * it, so finishing it at once is one of the GPU's own orders, and commit_group and
 * wait_group have nothing left to do. Its modifiers are read here (ptx_parse_mods knows
 * none of them); the bulk (TMA) and mbarrier forms are refused.
 *   cp.async.{ca,cg}.shared{::cta}.global{.L2::cache_hint}{.L2::NB} [dst], [src], cp-size
 *       {, src-size | , ignore-src}{, cache-policy}
 * cp-size is 4, 8 or 16 bytes (16 only with .cg); src-size bytes are read and the rest
 * of cp-size zeroed; ignore-src true reads none. */
static int
decode_cp(decoding *d)
{
    P *p = d->p;
    emu_inst *in = d->in;
    operand *ops = d->ops;
    const char *s = d->op->p + d->nbase, *end = d->op->p + d->op->len;
    int word = 0, what = 0, shared = 0, global = 0, hint = 0, cg = 0, count = 0; /* what: 1 copy, 2 group */
    const char *w;
    int len;
    while ((len = next_mod(&s, end, &w)) >= 0) {
#define W(str) (len == (int)sizeof(str) - 1 && memcmp(w, str, sizeof(str) - 1) == 0)
        if (word++ == 0 ? !W("async") : what == 2)
            return ptx_refuse(d);
        else if (word == 1)
            continue;
        else if (W("commit_group") || W("wait_group") || W("wait_all"))
            what = word == 2 ? 2 : -1, count = W("wait_group");
        else if (W("ca") || W("cg"))
            cg = W("cg"), what = word == 2 ? 1 : -1;
        else if (W("shared") || W("shared::cta"))
            shared = 1;
        else if (W("global"))
            global = 1;
        else if (W("L2::cache_hint"))
            hint = 1;
        else if (!(W("L2::64B") || W("L2::128B") || W("L2::256B")))
            return ptx_refuse(d);
        if (what < 0)
            return ptx_refuse(d);
#undef W
    }
    if (what == 2) {
        in->op = OP_NOP; /* every copy is done already; wait_group takes its count */
        return d->nops == count ? 0 : ptx_refuse(d);
    }
    if (what != 1 || !shared || !global || d->nops < 3 + hint || d->nops > 4 + hint)
        return ptx_refuse(d);
    uint64_t size = 0;
    if (ops[2].kind != OK_NUM || ptx_literal(ops[2].name, ops[2].nlen, 0, TY_U32, &size) < 0 ||
        !(size == 4 || size == 8 || size == 16) || (cg && size != 16))
        return ptx_fail(p, d->line, "cp.async copies 4, 8 or 16 bytes (.cg only 16), not '%.*s'",
                        ops[2].nlen, ops[2].name);
    /* the destination: its register (or the zero slot) plus its offset, kept in a slot */
    if (address(p, in, &ops[0], NULL) < 0)
        return -1;
    int dreg = in->addr, dwrap = in->wrap32;
    int64_t doff = in->imm;
    if (address(p, in, &ops[1], NULL) < 0)
        return -1;
    in->op = OP_CPASYNC;
    in->space = SP_GLOBAL;
    in->type2 = (uint8_t)size;
    in->s[0] = dreg;
    in->base = (uint8_t)dwrap;
    if ((in->s[1] = ptx_const_slot(p, (uint64_t)doff)) < 0)
        return -1;
    in->s[2] = in->d[0] = -1;
    if (d->nops == 4 + hint) {
        const operand *o = &ops[3];
        sym *q = o->kind == OK_NAME ? ptx_lookup(p, o->name, o->nlen) : NULL;
        if (q && q->kind == S_PRED) {
            in->d[0] = (int)q->value;
            in->vec = (uint8_t)o->neg;
        }
        else if ((in->s[2] = ptx_src(p, o, TY_U32)) < 0)
            return -1;
    }
    return 0;
}

/* prefetch and prefetchu: a hint that a line will be read, which the GPU may drop (a
 * prefetch of an unmapped line faults nothing), so a no-op here; its modifiers are
 * checked, the tensor map form refused.
 *   prefetch{.global|.local}.{L1|L2}  [a]      prefetch.global.L2::evict_{last|normal}  [a]
 *   prefetchu.L1  [a] */
static int
decode_prefetch(decoding *d)
{
    const char *s = d->op->p + d->nbase, *end = d->op->p + d->op->len;
    const int u = d->nbase == 9; /* prefetchu */
    int level = 0, space = 0;
    const char *w;
    int len;
    while ((len = next_mod(&s, end, &w)) >= 0) {
#define W(str) (len == (int)sizeof(str) - 1 && memcmp(w, str, sizeof(str) - 1) == 0)
        if (level)
            return ptx_refuse(d); /* the level comes last */
        else if (!u && !space && (W("global") || W("local")))
            space = W("global") ? 1 : 2;
        else if (W("L1"))
            level = 1;
        else if (!u && W("L2"))
            level = 2;
        else if (!u && space == 1 && (W("L2::evict_last") || W("L2::evict_normal")))
            level = 2;
        else
            return ptx_refuse(d);
#undef W
    }
    if (!level || d->nops != 1 || d->ops[0].kind != OK_ADDR)
        return ptx_refuse(d);
    d->in->op = OP_NOP;
    return 0;
}

/* createpolicy (an L2 cache policy for the .L2::cache_hint of loads, stores and
 * cp.async): the emulator has no cache, so the policy is an opaque 0 that every hint
 * accepts. Its modifiers (fractional, range, L2::evict_*) are read by no one. */
static int
decode_createpolicy(decoding *d)
{
    if (d->nops < 2)
        return ptx_refuse(d);
    d->in->op = OP_MOV;
    d->in->s[0] = d->p->zero_slot;
    return (d->in->d[0] = ptx_dst(d->p, &d->ops[0])) < 0 ? -1 : 0;
}

/* Every opcode the emulator reads, and the step that decodes it; those of alu_names
 * not listed here go to decode_alu. Those marked 1 read their own modifiers. */
static const struct {
    const char *name;
    int (*decode)(decoding *);
    int own_mods;
} families[] = {
    {"mov", ptx_decode_mov}, {"setp", decode_setp}, {"set", decode_setp}, {"selp", decode_selp},
    {"slct", decode_slct}, {"and", decode_logic}, {"or", decode_logic}, {"xor", decode_logic},
    {"not", decode_logic}, {"cvt", decode_cvt}, {"cvta", decode_cvta}, {"ld", decode_ldst},
    {"ldu", decode_ldst}, {"st", decode_ldst}, {"atom", decode_atom}, {"red", decode_atom},
    {"bra", decode_bra}, {"ret", decode_exit}, {"exit", decode_exit}, {"bar", decode_bar},
    {"barrier", decode_bar}, {"membar", decode_fence}, {"fence", decode_fence},
    {"nanosleep", decode_nop}, {"prefetch", decode_prefetch, 1},
    {"prefetchu", decode_prefetch, 1},
    {"pmevent", decode_nop}, {"trap", decode_trap}, {"brkpt", decode_trap},
    {"shfl", decode_shfl}, {"vote", decode_vote}, {"activemask", decode_activemask},
    {"match", decode_match}, {"redux", decode_redux}, {"cp", decode_cp, 1},
    {"createpolicy", decode_createpolicy, 1},
};

/* The step for the opcode base[0..nbase), NULL for one the emulator does not know;
 * *own_mods 1 when it reads its modifiers itself. */
static int (*decoder_of(const char *base, int nbase, int *own_mods))(decoding *)
{
    *own_mods = 0;
    for (size_t k = 0; k < sizeof families / sizeof *families; k++)
        if ((int)strlen(families[k].name) == nbase && memcmp(families[k].name, base, (size_t)nbase) == 0) {
            *own_mods = families[k].own_mods;
            return families[k].decode;
        }
    return ptx_alu_known(base, nbase) ? ptx_decode_alu : NULL;
}

/* The operands of an instruction up to its ';' (at most 8). */
static int
read_operands(P *p, const tok *op, int line, operand *ops, int *nops)
{
    *nops = 0;
    while (!ptx_is_punct(ptx_peek(p), ';')) {
        if (ptx_peek(p)->kind == TK_END || *nops == 8)
            return ptx_fail(p, line, "the emulator could not read the operands of '%.*s'", op->len, op->p);
        if (ptx_parse_operand(p, &ops[(*nops)++]) < 0)
            return -1;
        if (ptx_is_punct(ptx_peek(p), ','))
            p->i++;
    }
    p->i++;
    return 0;
}

int
ptx_parse_instruction(P *p)
{
    int guard = -1, gneg = 0;
    tok *t = ptx_peek(p);
    int line = t->line;
    if (ptx_is_punct(t, '@')) {
        p->i++;
        if (ptx_is_punct(ptx_peek(p), '!')) {
            gneg = 1;
            p->i++;
        }
        t = ptx_peek(p);
        if ((guard = ptx_pred(p, t->p, t->len, t->line)) < 0)
            return -1;
        p->i++;
        t = ptx_peek(p);
    }
    if (t->kind != TK_ID)
        return ptx_fail(p, t->line, "the emulator could not read '%.*s'", t->len, t->p);
    decoding d = {.p = p, .op = t, .base = t->p, .line = line};
    operand ops[8];
    p->i++;
    if (read_operands(p, d.op, line, ops, &d.nops) < 0)
        return -1;
    d.ops = ops;
    while (d.nbase < d.op->len && d.op->p[d.nbase] != '.')
        d.nbase++;
    if (IS(&d, "call"))
        return ptx_parse_call(p, d.op, line, ops, d.nops, guard, gneg);
    if (IS(&d, "tex") || IS(&d, "suld") || IS(&d, "sust"))
        return ptx_parse_texture(p, d.op, d.nbase, line, ops, d.nops, guard, gneg);
    int own_mods;
    int (*decode)(decoding *) = decoder_of(d.base, d.nbase, &own_mods);
    if (decode == NULL)
        return ptx_refuse(&d);
    if (!own_mods && ptx_parse_mods(p, d.op, d.base, d.nbase, &d.m, line) < 0)
        return -1;
    d.type = d.m.ntypes ? d.m.types[d.m.ntypes - 1] : TY_NONE;
    for (int k = 0; k < d.m.ntypes; k++)
        if (d.m.types[k] == TY_B128 && decode != ptx_decode_mov)
            return ptx_refuse_b128(&d);
    emu_inst *in = d.in = ptx_emit(p, line);
    if (in == NULL)
        return -1;
    in->guard = guard;
    in->gneg = (uint8_t)gneg;
    in->type = (uint8_t)d.type;
    in->mod = (uint8_t)(d.m.rnd | (d.m.ftz ? M_FTZ : 0) | (d.m.sat ? M_SAT : 0) |
                        (d.m.approx ? M_APPROX : 0) | (d.m.cc ? M_CC : 0));
    return decode(&d);
}

#undef IS
