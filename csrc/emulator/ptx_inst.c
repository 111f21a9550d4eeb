/* ptx_inst.c - decodes one PTX instruction: its modifiers, operands and specialized opcode */
#include "emulator/ptx.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    int types[4], ntypes;
    int rnd, ftz, sat, approx, cc;
    int space;
    int vec;
    int cmp;
    int hi, lo, wide;
    int atom;
    int boolop; /* setp .and/.or/.xor */
    int shfl;
    int vote;
    int bar_arrive, bar_red;
    int shf_left, shf_clamp;
    int to;
    int uni;
    int testp;
    int any, all;
    int shiftamt;
    int warp, popc; /* bar.warp.sync; bar.red.popc */
} mods;

static const struct {
    const char *name;
    int value;
} cmp_names[] = {
    {"eq", CMP_EQ}, {"ne", CMP_NE}, {"lt", CMP_LT}, {"le", CMP_LE}, {"gt", CMP_GT}, {"ge", CMP_GE},
    {"lo", CMP_LO}, {"ls", CMP_LS}, {"hi", CMP_HI}, {"hs", CMP_HS}, {"equ", CMP_EQU},
    {"neu", CMP_NEU}, {"ltu", CMP_LTU}, {"leu", CMP_LEU}, {"gtu", CMP_GTU}, {"geu", CMP_GEU},
    {"num", CMP_NUM}, {"nan", CMP_NAN},
};

static const struct {
    const char *name;
    int value;
} atom_names[] = {
    {"add", ATOM_ADD}, {"min", ATOM_MIN}, {"max", ATOM_MAX}, {"exch", ATOM_EXCH},
    {"cas", ATOM_CAS}, {"and", ATOM_AND}, {"or", ATOM_OR}, {"xor", ATOM_XOR},
    {"inc", ATOM_INC}, {"dec", ATOM_DEC},
};

/* Modifiers that change nothing the emulator models: caching, memory order and scope
 * (every access is sequentially consistent here), alignment and uniformity hints. */
static const char *const ignored_mods[] = {
    "sync", "aligned", "nc", "volatile", "relaxed", "acquire", "release", "acq_rel", "sc",
    "weak", "gpu", "sys", "cta", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "full", "noftz",
    "mmio", "shared::cta", "L1::evict_normal", "L1::evict_last", "L1::evict_first",
    "L1::no_allocate", "L2::64B", "L2::128B", "L2::256B", "L2::evict_normal", "L2::evict_first",
    "L2::evict_last", "L1::evict_unchanged", "unified", "gl",
};

static int
parse_mods(P *p, const tok *op, const char *base, int nbase, mods *m, int line)
{
    memset(m, 0, sizeof *m);
    m->space = SP_GENERIC;
    m->vec = 1;
    const char *s = op->p + nbase, *end = op->p + op->len;
    while (s < end) {
        s++; /* the dot */
        const char *e = s;
        while (e < end && *e != '.')
            e++;
        /* "L1::evict_last" etc. carry no dots; "shared::cta" neither */
        int len = (int)(e - s);
        int ty = ptx_type_of(s, len, NULL);
#define M(str) (len == (int)sizeof(str) - 1 && memcmp(s, str, sizeof(str) - 1) == 0)
        int known = 1;
        if (ty != TY_NONE) {
            if (m->ntypes < 4)
                m->types[m->ntypes++] = ty;
        }
        else if (M("rn")) m->rnd = RND_RN;
        else if (M("rz")) m->rnd = RND_RZ;
        else if (M("rm")) m->rnd = RND_RM;
        else if (M("rp")) m->rnd = RND_RP;
        else if (M("rni")) m->rnd = RND_RNI;
        else if (M("rzi")) m->rnd = RND_RZI;
        else if (M("rmi")) m->rnd = RND_RMI;
        else if (M("rpi")) m->rnd = RND_RPI;
        else if (M("ftz")) m->ftz = 1;
        else if (M("sat")) m->sat = 1;
        else if (M("approx")) m->approx = 1;
        else if (M("cc")) m->cc = 1;
        else if (M("global")) m->space = SP_GLOBAL;
        else if (M("shared") || M("shared::cta")) m->space = SP_SHARED;
        else if (M("local")) m->space = SP_LOCAL;
        else if (M("const")) m->space = SP_CONST;
        else if (M("param")) m->space = SP_PARAM;
        else if (M("v2")) m->vec = 2;
        else if (M("v4")) m->vec = 4;
        else if (M("hi")) m->hi = 1;
        else if (M("lo")) m->lo = 1;
        else if (M("wide")) m->wide = 1;
        else if (M("to")) m->to = 1;
        else if (M("uni")) m->uni = 1;
        else if (M("up")) m->shfl = SHFL_UP;
        else if (M("down")) m->shfl = SHFL_DOWN;
        else if (M("bfly")) m->shfl = SHFL_BFLY;
        else if (M("idx")) m->shfl = SHFL_IDX;
        else if (M("all")) m->vote = VOTE_ALL, m->all = 1;
        else if (M("any")) m->vote = VOTE_ANY, m->any = 1;
        else if (M("ballot")) m->vote = VOTE_BALLOT;
        else if (M("arrive")) m->bar_arrive = 1;
        else if (M("red")) m->bar_red = 1;
        else if (M("l")) m->shf_left = 1;
        else if (M("r")) m->shf_left = 0;
        else if (M("clamp")) m->shf_clamp = 1;
        else if (M("wrap")) m->shf_clamp = 0;
        else if (M("finite")) m->testp = 1;
        else if (M("infinite")) m->testp = 2;
        else if (M("number")) m->testp = 3;
        else if (M("notanumber")) m->testp = 4;
        else if (M("normal")) m->testp = 5;
        else if (M("subnormal")) m->testp = 6;
        else if (M("shiftamt")) m->shiftamt = 1;
        else if (M("warp")) m->warp = 1;
        else if (M("popc")) m->popc = 1;
        else
            known = 0;
        if (!known) {
            for (size_t i = 0; i < sizeof cmp_names / sizeof *cmp_names && !known; i++) {
                if ((int)strlen(cmp_names[i].name) == len && memcmp(cmp_names[i].name, s, (size_t)len) == 0) {
                    if (nbase == 4 && memcmp(base, "setp", 4) == 0 && m->cmp)
                        break; /* and/or handled below */
                    m->cmp = cmp_names[i].value;
                    known = 1;
                }
            }
        }
        if (!known) {
            for (size_t i = 0; i < sizeof atom_names / sizeof *atom_names && !known; i++) {
                if ((int)strlen(atom_names[i].name) == len && memcmp(atom_names[i].name, s, (size_t)len) == 0) {
                    m->atom = atom_names[i].value;
                    if (M("and")) m->boolop = 1;
                    if (M("or")) m->boolop = 2;
                    if (M("xor")) m->boolop = 3;
                    known = 1;
                }
            }
        }
        if (!known) {
            for (size_t i = 0; i < sizeof ignored_mods / sizeof *ignored_mods && !known; i++)
                known = (int)strlen(ignored_mods[i]) == len && memcmp(ignored_mods[i], s, (size_t)len) == 0;
        }
        if (!known)
            return ptx_fail(p, line, "the emulator does not support the PTX instruction '%.*s' "
                                 "(its modifier .%.*s)", op->len, op->p, len, s);
#undef M
        s = e;
    }
    return 0;
}

static int
unsupported(P *p, const tok *op, int line)
{
    return ptx_fail(p, line, "the emulator does not support the PTX instruction '%.*s'", op->len, op->p);
}

/* Generic integer and float operations by name. */
static const struct {
    const char *name;
    int base;
    int nsrc;
} alu_names[] = {
    {"add", B_ADD, 2}, {"sub", B_SUB, 2}, {"mul", B_MUL, 2}, {"mad", B_MAD, 3}, {"div", B_DIV, 2},
    {"rem", B_REM, 2}, {"abs", B_ABS, 1}, {"neg", B_NEG, 1}, {"min", B_MIN, 2}, {"max", B_MAX, 2},
    {"and", B_AND, 2}, {"or", B_OR, 2}, {"xor", B_XOR, 2}, {"not", B_NOT, 1}, {"cnot", B_CNOT, 1},
    {"shl", B_SHL, 2}, {"shr", B_SHR, 2}, {"popc", B_POPC, 1}, {"clz", B_CLZ, 1},
    {"brev", B_BREV, 1}, {"bfind", B_BFIND, 1}, {"bfe", B_BFE, 3}, {"bfi", B_BFI, 4},
    {"prmt", B_PRMT, 3}, {"lop3", B_LOP3, 3}, {"shf", B_SHFL_L, 3}, {"fma", B_FMA, 3},
    {"rcp", B_RCP, 1}, {"sqrt", B_SQRT, 1}, {"rsqrt", B_RSQRT, 1}, {"sin", B_SIN, 1},
    {"cos", B_COS, 1}, {"lg2", B_LG2, 1}, {"ex2", B_EX2, 1}, {"tanh", B_TANH, 1},
    {"copysign", B_COPYSIGN, 2}, {"testp", B_TESTP, 1}, {"sad", B_SAD, 3}, {"mul24", B_MUL24, 2},
    {"mad24", B_MAD24, 3}, {"dp4a", B_DP4A, 3}, {"dp2a", B_DP2A, 3}, {"addc", B_ADDC, 2},
    {"subc", B_SUBC, 2}, {"madc", B_MADC, 3},
};

static int
is_signed(int t)
{
    return t == TY_S8 || t == TY_S16 || t == TY_S32 || t == TY_S64;
}

/* The specialized opcode for a common (base, type, mods), or OP_INT / OP_FLT. */
static int
specialize(int base, int type, const mods *m)
{
    int sz = emu_type_size(type);
    if (type == TY_F32 && !m->ftz && !m->sat && (m->rnd == RND_RN || m->rnd == RND_NONE)) {
        switch (base) {
        case B_ADD: return OP_FADD32;
        case B_SUB: return OP_FSUB32;
        case B_MUL: return OP_FMUL32;
        case B_FMA: return OP_FFMA32;
        case B_MAD: return m->rnd == RND_RN ? OP_FFMA32 : OP_FLT;
        }
    }
    if (type == TY_F64 && (m->rnd == RND_RN || m->rnd == RND_NONE) && !m->sat) {
        switch (base) {
        case B_ADD: return OP_FADD64;
        case B_SUB: return OP_FSUB64;
        case B_MUL: return OP_FMUL64;
        case B_FMA: case B_MAD: return OP_FFMA64;
        }
    }
    if (ptx_is_float(type))
        return OP_FLT;
    if (m->sat || m->cc)
        return OP_INT;
    if (sz == 4) {
        switch (base) {
        case B_ADD: return OP_ADD32;
        case B_SUB: return OP_SUB32;
        case B_MUL: return m->lo ? OP_MUL32 : m->wide ? (is_signed(type) ? OP_MULWIDE_S32 : OP_MULWIDE_U32) : OP_INT;
        case B_MAD: return m->lo ? OP_MAD32 : OP_INT;
        case B_SHL: return OP_SHL32;
        case B_SHR: return is_signed(type) ? OP_SHR_S32 : OP_SHR_U32;
        case B_AND: return OP_AND32;
        case B_OR: return OP_OR32;
        case B_XOR: return OP_XOR32;
        }
    }
    if (sz == 8) {
        switch (base) {
        case B_ADD: return OP_ADD64;
        case B_SUB: return OP_SUB64;
        case B_MUL: return m->lo ? OP_MUL64 : OP_INT;
        case B_MAD: return m->lo ? OP_MAD64 : OP_INT;
        case B_SHL: return OP_SHL64;
        case B_SHR: return is_signed(type) ? OP_SHR_S64 : OP_SHR_U64;
        case B_AND: return OP_AND64;
        case B_OR: return OP_OR64;
        case B_XOR: return OP_XOR64;
        }
    }
    return OP_INT;
}

/* Address operand -> slot in s[3] and offset in imm; the space's kind of symbol folded in. */
static int
address(P *p, emu_inst *in, const operand *o, int *is_kparam)
{
    if (o->kind != OK_ADDR)
        return ptx_fail(p, o->line, "the emulator expected an address [..] here");
    in->imm = o->off;
    in->addr = p->zero_slot;
    if (is_kparam)
        *is_kparam = 0;
    if (o->name == NULL)
        return 0;
    sym *s = ptx_lookup(p, o->name, o->nlen);
    if (s == NULL)
        return ptx_fail(p, o->line, "the emulator does not know '%.*s'", o->nlen, o->name);
    switch (s->kind) {
    case S_REG:
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
    tok *op = t;
    p->i++;
    operand ops[8];
    int nops = 0;
    while (!ptx_is_punct(ptx_peek(p), ';')) {
        if (ptx_peek(p)->kind == TK_END || nops == 8)
            return ptx_fail(p, line, "the emulator could not read the operands of '%.*s'", op->len, op->p);
        if (ptx_parse_operand(p, &ops[nops++]) < 0)
            return -1;
        if (ptx_is_punct(ptx_peek(p), ','))
            p->i++;
    }
    p->i++;

    int nbase = 0;
    while (nbase < op->len && op->p[nbase] != '.')
        nbase++;
    const char *base = op->p;
#define B(str) (nbase == (int)sizeof(str) - 1 && memcmp(base, str, sizeof(str) - 1) == 0)
    mods m;
    if (B("call"))
        return ptx_parse_call(p, op, line, ops, nops, guard, gneg);
    if (B("tex") || B("suld") || B("sust"))
        return ptx_parse_texture(p, op, nbase, line, ops, nops, guard, gneg);
    static const char *const known[] = {
        "mov", "setp", "set", "selp", "slct", "and", "or", "xor", "not", "cvt", "cvta", "ld", "ldu",
        "st", "atom", "red", "bra", "ret", "exit", "bar", "barrier", "membar", "fence", "nanosleep",
        "prefetch", "prefetchu", "pmevent", "trap", "brkpt", "shfl", "vote", "activemask", "match",
        "add", "sub", "mul", "mad", "div", "rem", "abs", "neg", "min", "max", "cnot", "shl", "shr",
        "popc", "clz", "brev", "bfind", "bfe", "bfi", "prmt", "lop3", "shf", "fma", "rcp", "sqrt",
        "rsqrt", "sin", "cos", "lg2", "ex2", "tanh", "copysign", "testp", "sad", "mul24", "mad24",
        "dp4a", "dp2a", "addc", "subc", "madc", "redux",
    };
    int is_known = 0;
    for (size_t k = 0; k < sizeof known / sizeof *known && !is_known; k++)
        is_known = (int)strlen(known[k]) == nbase && memcmp(known[k], base, (size_t)nbase) == 0;
    if (!is_known)
        return unsupported(p, op, line);
    if (parse_mods(p, op, base, nbase, &m, line) < 0)
        return -1;
    int type = m.ntypes ? m.types[m.ntypes - 1] : TY_NONE;
    emu_inst *in = ptx_emit(p, line);
    if (in == NULL)
        return -1;
    in->guard = guard;
    in->gneg = (uint8_t)gneg;
    in->type = (uint8_t)type;
    in->mod = (uint8_t)(m.rnd | (m.ftz ? M_FTZ : 0) | (m.sat ? M_SAT : 0) | (m.approx ? M_APPROX : 0) |
                        (m.cc ? M_CC : 0));

    if (B("mov")) {
        if (nops != 2)
            return unsupported(p, op, line);
        if (type == TY_PRED && ops[1].kind == OK_NUM) {
            uint64_t v;
            in->op = OP_PCONST;
            if (ptx_literal(ops[1].name, ops[1].nlen, 0, TY_U32, &v) < 0 ||
                (in->d[0] = ptx_pred(p, ops[0].name, ops[0].nlen, line)) < 0)
                return ptx_fail(p, line, "the emulator could not read '%.*s'", op->len, op->p);
            in->imm = v != 0;
            return 0;
        }
        if (type == TY_PRED) {
            in->op = OP_MOVP;
            if ((in->d[0] = ptx_pred(p, ops[0].name, ops[0].nlen, line)) < 0 ||
                (in->s[0] = ptx_pred(p, ops[1].name, ops[1].nlen, line)) < 0)
                return -1;
            return 0;
        }
        int sz = emu_type_size(type);
        if ((ops[0].kind == OK_VEC && (ops[0].nitems < 2 || ops[0].nitems > 4)) ||
            (ops[1].kind == OK_VEC && (ops[1].nitems < 2 || ops[1].nitems > 4)))
            return ptx_fail(p, line, "the emulator could not read the vector operand of '%.*s'",
                            op->len, op->p);
        if (ops[1].kind == OK_VEC) { /* pack */
            in->op = OP_PACK;
            in->imm = sz * 8 / ops[1].nitems;
            in->vec = (uint8_t)ops[1].nitems;
            for (int k = 0; k < ops[1].nitems && k < 4; k++) {
                operand o = {.kind = ops[1].inums[k] ? OK_NUM : OK_NAME, .name = ops[1].items[k],
                             .nlen = ops[1].ilens[k], .line = line};
                if ((in->s[k] = ptx_src(p, &o, TY_U64)) < 0)
                    return -1;
            }
            return (in->d[0] = ptx_dst(p, &ops[0])) < 0 ? -1 : 0;
        }
        if (ops[0].kind == OK_VEC) { /* unpack */
            in->op = OP_UNPACK;
            in->imm = sz * 8 / ops[0].nitems;
            in->vec = (uint8_t)ops[0].nitems;
            for (int k = 0; k < ops[0].nitems && k < 4; k++) {
                operand o = {.kind = OK_NAME, .name = ops[0].items[k], .nlen = ops[0].ilens[k], .line = line};
                if ((in->d[k] = ptx_dst(p, &o)) < 0)
                    return -1;
            }
            return (in->s[0] = ptx_src(p, &ops[1], type)) < 0 ? -1 : 0;
        }
        if (ops[1].kind == OK_NAME && ops[1].name[0] == '%') {
            static const struct {
                const char *name;
                int op;
            } clocks[] = {{"%clock", OP_CLOCK}, {"%clock64", OP_CLOCK64}, {"%globaltimer", OP_GLOBALTIMER}};
            for (size_t k = 0; k < sizeof clocks / sizeof *clocks; k++) {
                if ((int)strlen(clocks[k].name) == ops[1].nlen && memcmp(clocks[k].name, ops[1].name, (size_t)ops[1].nlen) == 0) {
                    in->op = (uint16_t)clocks[k].op;
                    return (in->d[0] = ptx_dst(p, &ops[0])) < 0 ? -1 : 0;
                }
            }
        }
        in->op = OP_MOV;
        if ((in->d[0] = ptx_dst(p, &ops[0])) < 0 || (in->s[0] = ptx_src(p, &ops[1], type)) < 0)
            return -1;
        return 0;
    }
    if (B("setp") || B("set")) {
        /* setp.cmp[.bool].type p[|q], a, b[, c] */
        int cmp = m.cmp;
        int boolop = m.boolop;
        in->op = B("setp") ? OP_SETP : OP_SET;
        if (B("set")) {
            /* set.cmp.dtype.stype */
            in->type = (uint8_t)(m.ntypes > 1 ? m.types[1] : type);
            in->type2 = (uint8_t)m.types[0];
        }
        in->imm = cmp;
        in->base = (uint8_t)boolop;
        if (nops < 3 || cmp == 0)
            return unsupported(p, op, line);
        int vt = in->type;
        if ((in->s[0] = ptx_src(p, &ops[1], vt)) < 0 || (in->s[1] = ptx_src(p, &ops[2], vt)) < 0)
            return -1;
        if (boolop) {
            if (nops < 4 || (in->s[2] = ptx_pred(p, ops[3].name, ops[3].nlen, line)) < 0)
                return -1;
            in->vec = (uint8_t)ops[3].neg; /* negated third operand */
        }
        if (in->op == OP_SET) {
            if ((in->d[0] = ptx_dst(p, &ops[0])) < 0)
                return -1;
            return 0;
        }
        if ((in->d[0] = ptx_pred(p, ops[0].name, ops[0].nlen, line)) < 0)
            return -1;
        in->d[1] = -1;
        if (ops[0].name2 && (in->d[1] = ptx_pred(p, ops[0].name2, ops[0].n2len, line)) < 0)
            return -1;
        return 0;
    }
    if (B("selp")) {
        in->op = OP_SELP;
        if (nops != 4 || (in->d[0] = ptx_dst(p, &ops[0])) < 0 || (in->s[0] = ptx_src(p, &ops[1], type)) < 0 ||
            (in->s[1] = ptx_src(p, &ops[2], type)) < 0 ||
            (in->s[2] = ptx_pred(p, ops[3].name, ops[3].nlen, line)) < 0)
            return -1;
        in->vec = (uint8_t)ops[3].neg;
        return 0;
    }
    if (B("slct")) {
        in->op = OP_SLCT;
        in->type2 = (uint8_t)(m.ntypes > 1 ? m.types[1] : type);
        in->type = (uint8_t)m.types[0];
        if (nops != 4 || (in->d[0] = ptx_dst(p, &ops[0])) < 0 || (in->s[0] = ptx_src(p, &ops[1], in->type)) < 0 ||
            (in->s[1] = ptx_src(p, &ops[2], in->type)) < 0 || (in->s[2] = ptx_src(p, &ops[3], in->type2)) < 0)
            return -1;
        return 0;
    }
    if ((B("and") || B("or") || B("xor") || B("not")) && type == TY_PRED) {
        in->op = B("and") ? OP_PAND : B("or") ? OP_POR : B("xor") ? OP_PXOR : OP_PNOT;
        if ((in->d[0] = ptx_pred(p, ops[0].name, ops[0].nlen, line)) < 0 ||
            (in->s[0] = ptx_pred(p, ops[1].name, ops[1].nlen, line)) < 0)
            return -1;
        in->vec = (uint8_t)(ops[1].neg | (nops > 2 ? ops[2].neg << 1 : 0));
        if (nops > 2 && (in->s[1] = ptx_pred(p, ops[2].name, ops[2].nlen, line)) < 0)
            return -1;
        return 0;
    }
    if (B("cvt")) {
        if (m.ntypes != 2 || m.sat > 1)
            return unsupported(p, op, line);
        in->op = OP_CVT;
        in->type = (uint8_t)m.types[0];
        in->type2 = (uint8_t)m.types[1];
        /* the common integer widenings and narrowings run without the generic path */
        int dt = in->type, st = in->type2;
        if (!m.sat && (dt == TY_U64 || dt == TY_S64) && st == TY_U32)
            in->base = 1;
        else if (!m.sat && (dt == TY_U64 || dt == TY_S64) && st == TY_S32)
            in->base = 2;
        else if (!m.sat && (dt == TY_U32 || dt == TY_S32) && (st == TY_U64 || st == TY_S64))
            in->base = 3;
        if (nops != 2 || (in->d[0] = ptx_dst(p, &ops[0])) < 0 || (in->s[0] = ptx_src(p, &ops[1], in->type2)) < 0)
            return -1;
        return 0;
    }
    if (B("cvta")) {
        static const int ops_from[] = {[SP_SHARED] = OP_CVTA_SHARED, [SP_LOCAL] = OP_CVTA_LOCAL,
                                       [SP_PARAM] = OP_CVTA_PARAM};
        static const int ops_to[] = {[SP_SHARED] = OP_CVTA_TO_SHARED, [SP_LOCAL] = OP_CVTA_TO_LOCAL,
                                     [SP_PARAM] = 0};
        if (m.space == SP_GLOBAL || m.space == SP_CONST)
            in->op = OP_MOV;
        else if (m.space == SP_SHARED || m.space == SP_LOCAL || (m.space == SP_PARAM && !m.to))
            in->op = (uint16_t)(m.to ? ops_to[m.space] : ops_from[m.space]);
        else
            return unsupported(p, op, line);
        if (nops != 2 || (in->d[0] = ptx_dst(p, &ops[0])) < 0 || (in->s[0] = ptx_src(p, &ops[1], TY_U64)) < 0)
            return -1;
        return 0;
    }
    if (B("ld") || B("ldu") || B("st")) {
        int isst = B("st");
        operand *addr = isst ? &ops[0] : &ops[1];
        operand *val = isst ? &ops[1] : &ops[0];
        if (nops != 2 || type == TY_NONE || type == TY_PRED)
            return unsupported(p, op, line);
        int kparam = 0;
        if (address(p, in, addr, &kparam) < 0)
            return -1;
        in->space = (uint8_t)(kparam == 3 ? SP_LOCAL : m.space);
        in->vec = (uint8_t)m.vec;
        if (kparam == 2) { /* a call's own parameter: a register in disguise */
            if (val->kind == OK_VEC)
                return unsupported(p, op, line);
            in->op = OP_MOV;
            if (isst) {
                in->d[0] = in->addr;
                if ((in->s[0] = ptx_src(p, val, type)) < 0)
                    return -1;
            }
            else {
                in->s[0] = in->addr;
                if ((in->d[0] = ptx_dst(p, val)) < 0)
                    return -1;
            }
            return 0;
        }
        if (kparam == 1 && !isst && in->addr == p->zero_slot && m.vec == 1) {
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
            m.space = SP_LOCAL; /* an aggregate call parameter */
        if (m.space == SP_PARAM && isst)
            return unsupported(p, op, line);
        in->op = isst ? OP_ST : OP_LD;
        int n = m.vec;
        for (int k = 0; k < n; k++) {
            operand o;
            if (val->kind == OK_VEC) {
                if (val->nitems != n)
                    return unsupported(p, op, line);
                o = (operand){.kind = val->inums[k] ? OK_NUM : OK_NAME, .name = val->items[k],
                              .nlen = val->ilens[k], .line = line};
                if (o.name[0] == '-') {
                    o.neg = 1;
                    o.name++;
                    o.nlen--;
                }
            }
            else if (n == 1)
                o = *val;
            else
                return unsupported(p, op, line);
            if (isst ? (in->s[k] = ptx_src(p, &o, type)) < 0 : (in->d[k] = ptx_dst(p, &o)) < 0)
                return -1;
        }
        return 0;
    }
    if (B("atom") || B("red")) {
        in->op = B("atom") ? OP_ATOM : OP_RED;
        in->type2 = (uint8_t)m.atom;
        in->space = (uint8_t)m.space;
        if (m.atom == 0 || m.vec != 1 || (type != TY_U32 && type != TY_S32 && type != TY_U64 &&
                                          type != TY_S64 && type != TY_F32 && type != TY_F64))
            return unsupported(p, op, line);
        int k = 0;
        if (in->op == OP_ATOM && (in->d[0] = ptx_dst(p, &ops[k++])) < 0)
            return -1;
        if (address(p, in, &ops[k++], NULL) < 0)
            return -1;
        if ((in->s[0] = ptx_src(p, &ops[k++], type)) < 0)
            return -1;
        if (m.atom == ATOM_CAS && (k >= nops || (in->s[1] = ptx_src(p, &ops[k++], type)) < 0))
            return -1;
        return 0;
    }
    if (B("bra")) {
        in->op = OP_BRA;
        if (nops != 1 || ops[0].kind != OK_NAME)
            return unsupported(p, op, line);
        if (p->nfix == p->capfix) {
            int cap = p->capfix ? p->capfix * 2 : 64;
            fixup *v = realloc(p->fix, (size_t)cap * sizeof *v);
            if (v == NULL)
                return ptx_fail(p, line, "out of memory");
            p->fix = v;
            p->capfix = cap;
        }
        p->fix[p->nfix++] = (fixup){ops[0].name, ops[0].nlen, p->f->ncode - 1};
        return 0;
    }
    if (B("ret") && p->depth > 0) { /* the end of an inlined function */
        in->op = OP_BRA;
        if (p->nfix == p->capfix) {
            int cap = p->capfix ? p->capfix * 2 : 64;
            fixup *v = realloc(p->fix, (size_t)cap * sizeof *v);
            if (v == NULL)
                return ptx_fail(p, line, "out of memory");
            p->fix = v;
            p->capfix = cap;
        }
        p->fix[p->nfix++] = (fixup){"$__emu_ret", 10, p->f->ncode - 1};
        return 0;
    }
    if (B("ret") || B("exit")) {
        in->op = OP_EXIT;
        return 0;
    }
    if (B("bar") || B("barrier")) {
        /* bar.warp.sync: the lanes of a warp run converged here already */
        if (m.warp) {
            in->op = OP_BARWARP;
            return 0;
        }
        if (m.bar_red) {
            /* bar.red.popc.u32 d, a, {!}p; bar.red.and|or.pred d, a, {!}p (__syncthreads_count,
             * _and, _or): a barrier that also reduces p over the block */
            if (m.bar_arrive || nops != 3 || ops[2].kind != OK_NAME ||
                !(m.popc || m.boolop == 1 || m.boolop == 2))
                return unsupported(p, op, line);
            const operand *c = &ops[2];
            in->op = OP_BARRED;
            in->type2 = (uint8_t)(m.popc ? 0 : m.boolop);
            if ((in->d[0] = m.popc ? ptx_dst(p, &ops[0]) : ptx_pred(p, ops[0].name, ops[0].nlen, line)) < 0 ||
                (in->s[0] = ptx_pred(p, c->name, c->nlen, line)) < 0)
                return -1;
            in->vec = (uint8_t)c->neg;
            return 0;
        }
        if (m.bar_arrive || nops > 1)
            return unsupported(p, op, line);
        in->op = OP_BAR;
        return 0;
    }
    if (B("redux")) {
        /* redux.sync.op.type d, a, membermask (__reduce_*_sync) */
        if (nops != 3 || (type != TY_U32 && type != TY_S32) ||
            !(m.atom == ATOM_ADD || m.atom == ATOM_MIN || m.atom == ATOM_MAX || m.atom == ATOM_AND ||
              m.atom == ATOM_OR || m.atom == ATOM_XOR))
            return unsupported(p, op, line);
        in->op = OP_REDUX;
        in->type2 = (uint8_t)m.atom;
        return (in->d[0] = ptx_dst(p, &ops[0])) < 0 || (in->s[0] = ptx_src(p, &ops[1], type)) < 0 ||
               (in->s[1] = ptx_src(p, &ops[2], TY_U32)) < 0 ? -1 : 0;
    }
    if (B("membar") || B("fence")) {
        in->op = OP_FENCE;
        return 0;
    }
    if (B("nanosleep") || B("prefetch") || B("prefetchu") || B("pmevent")) {
        in->op = OP_NOP;
        return 0;
    }
    if (B("trap") || B("brkpt")) {
        in->op = OP_TRAP;
        return 0;
    }
    if (B("shfl")) {
        if (!m.shfl || nops != 5)
            return unsupported(p, op, line);
        in->op = OP_SHFL;
        in->type2 = (uint8_t)m.shfl;
        if ((in->d[0] = ptx_dst(p, &ops[0])) < 0 || (in->s[0] = ptx_src(p, &ops[1], TY_U32)) < 0 ||
            (in->s[1] = ptx_src(p, &ops[2], TY_U32)) < 0 || (in->s[2] = ptx_src(p, &ops[3], TY_U32)) < 0)
            return -1;
        in->d[1] = -1;
        if (ops[0].name2 && (in->d[1] = ptx_pred(p, ops[0].name2, ops[0].n2len, line)) < 0)
            return -1;
        return 0;
    }
    if (B("vote")) {
        if (!m.vote && !(op->len >= nbase + 4 && memcmp(op->p + nbase, ".uni", 4) == 0))
            return unsupported(p, op, line);
        in->op = OP_VOTE;
        in->type2 = (uint8_t)(m.vote ? m.vote : VOTE_UNI);
        if (nops < 2)
            return unsupported(p, op, line);
        if (in->type2 == VOTE_BALLOT) {
            if ((in->d[0] = ptx_dst(p, &ops[0])) < 0)
                return -1;
        }
        else if ((in->d[0] = ptx_pred(p, ops[0].name, ops[0].nlen, line)) < 0)
            return -1;
        if ((in->s[0] = ptx_pred(p, ops[1].name, ops[1].nlen, line)) < 0)
            return -1;
        in->vec = (uint8_t)ops[1].neg;
        return 0;
    }
    if (B("activemask")) {
        in->op = OP_ACTIVEMASK;
        return (in->d[0] = ptx_dst(p, &ops[0])) < 0 ? -1 : 0;
    }
    if (B("match")) {
        if (nops < 3 || !(m.any || m.all))
            return unsupported(p, op, line);
        in->op = m.any ? OP_MATCH_ANY : OP_MATCH_ALL;
        if ((in->d[0] = ptx_dst(p, &ops[0])) < 0 || (in->s[0] = ptx_src(p, &ops[1], type)) < 0)
            return -1;
        in->d[1] = -1;
        if (ops[0].name2 && (in->d[1] = ptx_pred(p, ops[0].name2, ops[0].n2len, line)) < 0)
            return -1;
        return 0;
    }
    for (size_t k = 0; k < sizeof alu_names / sizeof *alu_names; k++) {
        if ((int)strlen(alu_names[k].name) == nbase && memcmp(alu_names[k].name, base, (size_t)nbase) == 0) {
            int b = alu_names[k].base;
            if (b == B_MUL && m.hi) b = B_MULHI;
            if (b == B_MUL && m.wide) b = B_MULWIDE;
            if (b == B_MAD && m.hi) b = B_MADHI;
            if (b == B_MADC)
                in->imm = m.hi; /* madc.hi */
            if (b == B_MAD && m.wide) b = B_MADWIDE;
            if (b == B_SHFL_L && !m.shf_left) b = B_SHFL_R;
            if (b == B_MAD && ptx_is_float(type) && !m.rnd)
                return unsupported(p, op, line);
            if ((b == B_SIN || b == B_COS || b == B_LG2 || b == B_EX2 || b == B_TANH) && !m.approx)
                return unsupported(p, op, line);
            if (b == B_BFIND)
                in->imm = m.shiftamt; /* .shiftamt: the left shift that normalizes */
            if (type == TY_F16X2 || type == TY_BF16X2 || type == TY_BF16)
                return unsupported(p, op, line);
            in->base = (uint8_t)b;
            in->op = (uint16_t)specialize(b, type, &m);
            if (b == B_TESTP)
                in->imm = m.testp;
            if (b == B_SHFL_L || b == B_SHFL_R)
                in->imm = m.shf_clamp;
            if (b == B_MUL24 || b == B_MAD24) {
                if (m.hi)
                    return unsupported(p, op, line);
            }
            if ((b == B_DP4A || b == B_DP2A)) {
                if (m.ntypes != 2)
                    return unsupported(p, op, line);
                in->type = (uint8_t)m.types[0];
                in->type2 = (uint8_t)m.types[1];
                if (b == B_DP2A)
                    return unsupported(p, op, line);
            }
            int ns = alu_names[k].nsrc;
            if (b == B_LOP3) {
                if (nops != 5)
                    return unsupported(p, op, line);
                uint64_t lut;
                if (ops[4].kind != OK_NUM || ptx_literal(ops[4].name, ops[4].nlen, 0, TY_U32, &lut) < 0)
                    return unsupported(p, op, line);
                in->imm = (int64_t)lut;
            }
            else if (nops != ns + 1)
                return unsupported(p, op, line);
            if (b == B_TESTP) {
                if ((in->d[0] = ptx_pred(p, ops[0].name, ops[0].nlen, line)) < 0)
                    return -1;
            }
            else if ((in->d[0] = ptx_dst(p, &ops[0])) < 0)
                return -1;
            for (int j = 0; j < ns; j++) {
                int st = type;
                if ((b == B_SHL || b == B_SHR || b == B_BFE || b == B_SHFL_L || b == B_SHFL_R) && j > 0)
                    st = TY_U32;
                if (b == B_BFI && j > 1)
                    st = TY_U32;
                if (b == B_PRMT)
                    st = TY_U32;
                if ((b == B_MULWIDE || b == B_MADWIDE) && j == 2)
                    st = (type == TY_S32 ? TY_S64 : type == TY_U32 ? TY_U64 : type == TY_S16 ? TY_S32 : TY_U32);
                if ((in->s[j] = ptx_src(p, &ops[j + 1], st)) < 0)
                    return -1;
            }
            return 0;
        }
    }
#undef B
    return unsupported(p, op, line);
}

