/* arith.c - decodes PTX arithmetic (the operation, its specialized opcode, its operands' types) and mov, and contracts mul+add into fma as ptxas does */
#include "emulator/ptx/ptx.h"

#include <stdlib.h>
#include <string.h>

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

/* The arithmetic base (B_*) of an alu_names entry with the modifiers that change it
 * (mul.hi, mad.wide, shf.r, ...) applied; the immediate some carry set in in->imm. */
static int
alu_base(decoding *d, int b)
{
    const mods *m = &d->m;
    if (b == B_MUL && m->hi) b = B_MULHI;
    if (b == B_MUL && m->wide) b = B_MULWIDE;
    if (b == B_MAD && m->hi) b = B_MADHI;
    if (b == B_MADC)
        d->in->imm = m->hi; /* madc.hi */
    if (b == B_MAD && m->wide) b = B_MADWIDE;
    if (b == B_SHFL_L && !m->shf_left) b = B_SHFL_R;
    return b;
}

/* Whether the emulator refuses arithmetic base b of this type and these modifiers
 * (sets what dp4a and testp, bfind, shf carry on the way). */
static int
alu_refused(decoding *d, int b)
{
    const mods *m = &d->m;
    emu_inst *in = d->in;
    if (b == B_MAD && ptx_is_float(d->type) && !m->rnd)
        return 1;
    if ((b == B_SIN || b == B_COS || b == B_LG2 || b == B_EX2 || b == B_TANH) && !m->approx)
        return 1;
    if (b == B_BFIND)
        in->imm = m->shiftamt; /* .shiftamt: the left shift that normalizes */
    if (d->type == TY_F16X2 || d->type == TY_BF16X2 || d->type == TY_BF16)
        return 1;
    in->base = (uint8_t)b;
    in->op = (uint16_t)specialize(b, d->type, m);
    if (b == B_TESTP)
        in->imm = m->testp;
    if (b == B_SHFL_L || b == B_SHFL_R)
        in->imm = m->shf_clamp;
    if ((b == B_MUL24 || b == B_MAD24) && m->hi)
        return 1;
    if (b == B_DP4A || b == B_DP2A) {
        if (m->ntypes != 2)
            return 1;
        in->type = (uint8_t)m->types[0];
        in->type2 = (uint8_t)m->types[1];
        if (b == B_DP2A)
            return 1;
    }
    return 0;
}

/* The type source j of arithmetic base b is read as: shift counts, bit positions and
 * selectors are u32, the addend of mul.wide/mad.wide is twice as wide. */
static int
alu_src_type(int b, int j, int type)
{
    if ((b == B_SHL || b == B_SHR || b == B_BFE || b == B_SHFL_L || b == B_SHFL_R) && j > 0)
        return TY_U32;
    if (b == B_BFI && j > 1)
        return TY_U32;
    if (b == B_PRMT)
        return TY_U32;
    if ((b == B_MULWIDE || b == B_MADWIDE) && j == 2)
        return type == TY_S32 ? TY_S64 : type == TY_U32 ? TY_U64 : type == TY_S16 ? TY_S32 : TY_U32;
    return type;
}

/* Integer and float arithmetic by name (alu_names): d, then its nsrc sources (lop3:
 * and the truth table). */
int
ptx_decode_alu(decoding *d)
{
    P *p = d->p;
    emu_inst *in = d->in;
    operand *ops = d->ops;
    size_t k = 0;
    while (k < sizeof alu_names / sizeof *alu_names &&
           !((int)strlen(alu_names[k].name) == d->nbase && memcmp(alu_names[k].name, d->base, (size_t)d->nbase) == 0))
        k++;
    if (k == sizeof alu_names / sizeof *alu_names)
        return ptx_refuse(d);
    int b = alu_base(d, alu_names[k].base);
    if (alu_refused(d, b))
        return ptx_refuse(d);
    int ns = alu_names[k].nsrc;
    if (b == B_LOP3) {
        uint64_t lut;
        if (d->nops != 5 || ops[4].kind != OK_NUM || ptx_literal(ops[4].name, ops[4].nlen, 0, TY_U32, &lut) < 0)
            return ptx_refuse(d);
        in->imm = (int64_t)lut;
    }
    else if (d->nops != ns + 1)
        return ptx_refuse(d);
    if ((in->d[0] = b == B_TESTP ? ptx_pred(p, ops[0].name, ops[0].nlen, d->line) : ptx_dst(p, &ops[0])) < 0)
        return -1;
    for (int j = 0; j < ns; j++) {
        if ((in->s[j] = ptx_src(p, &ops[j + 1], alu_src_type(b, j, d->type))) < 0)
            return -1;
    }
    return 0;
}

int
ptx_alu_known(const char *base, int nbase)
{
    for (size_t k = 0; k < sizeof alu_names / sizeof *alu_names; k++)
        if ((int)strlen(alu_names[k].name) == nbase && memcmp(alu_names[k].name, base, (size_t)nbase) == 0)
            return 1;
    return 0;
}

/* ------------------------------------------------------------------ mov */

/* The .b128 register an operand names: its first slot (the high half is the next), or
 * -1 with the reason. */
static int
b128_reg(decoding *d, const operand *o)
{
    sym *s = o->kind == OK_NAME ? ptx_lookup(d->p, o->name, o->nlen) : NULL;
    if (s == NULL || s->kind != S_REG || s->type != TY_B128)
        return ptx_fail(d->p, d->line, "'%.*s' is not valid PTX: its operand '%.*s' is not a .b128 "
                        "register (mov.b128 copies one, packs two 64-bit values into one, or "
                        "unpacks one into two)", d->op->len, d->op->p,
                        o->kind == OK_VEC ? 1 : o->nlen, o->kind == OK_VEC ? "{" : o->name);
    return (int)s->value;
}

/* mov.b128 as the PTX ISA defines it: d = a between .b128 registers, d = {lo, hi} from
 * two 64-bit values, {lo, hi} = a into two 64-bit registers. One OP_MOVN of the two
 * halves. */
static int
decode_mov128(decoding *d)
{
    operand *ops = d->ops;
    emu_inst *in = d->in;
    in->op = OP_MOVN;
    in->vec = 2;
    in->type = TY_U64;
    const operand *vec = ops[0].kind == OK_VEC ? &ops[0] : ops[1].kind == OK_VEC ? &ops[1] : NULL;
    if (vec && vec->nitems != 2)
        return ptx_fail(d->p, d->line, "'%.*s' is not valid PTX: a .b128 value packs or unpacks "
                        "into two 64-bit values, not %d", d->op->len, d->op->p, vec->nitems);
    if (ops[0].kind == OK_VEC && ops[1].kind == OK_VEC)
        return ptx_refuse(d);
    for (int k = 0; k < 2; k++) {
        if (ops[1].kind == OK_VEC) {
            operand o = ptx_vec_item(&ops[1], k, d->line);
            if ((in->s[k] = ptx_src(d->p, &o, TY_U64)) < 0)
                return -1;
        }
        else if ((in->s[k] = b128_reg(d, &ops[1])) < 0)
            return -1;
        else
            in->s[k] += k;
        if (ops[0].kind == OK_VEC) {
            operand o = {.kind = OK_NAME, .name = ops[0].items[k], .nlen = ops[0].ilens[k],
                         .line = d->line};
            if ((in->d[k] = ptx_dst(d->p, &o)) < 0)
                return -1;
        }
        else if ((in->d[k] = b128_reg(d, &ops[0])) < 0)
            return -1;
        else
            in->d[k] += k;
    }
    return 0;
}

/* mov: a predicate constant or copy, packing into and out of vectors, the clocks, or
 * a plain copy. */
int
ptx_decode_mov(decoding *d)
{
    P *p = d->p;
    emu_inst *in = d->in;
    operand *ops = d->ops;
    int type = d->type, line = d->line;
    if (d->nops != 2)
        return ptx_refuse(d);
    if (type == TY_PRED && ops[1].kind == OK_NUM) {
        uint64_t v;
        in->op = OP_PCONST;
        if (ptx_literal(ops[1].name, ops[1].nlen, 0, TY_U32, &v) < 0 || (in->d[0] = ptx_pred(p, ops[0].name, ops[0].nlen, line)) < 0)
            return ptx_fail(p, line, "the emulator could not read '%.*s'", d->op->len, d->op->p);
        in->imm = v != 0;
        return 0;
    }
    if (type == TY_PRED) {
        in->op = OP_MOVP;
        return (in->d[0] = ptx_pred(p, ops[0].name, ops[0].nlen, line)) < 0 || (in->s[0] = ptx_pred(p, ops[1].name, ops[1].nlen, line)) < 0 ? -1 : 0;
    }
    if (type == TY_B128)
        return decode_mov128(d);
    int sz = emu_type_size(type);
    if ((ops[0].kind == OK_VEC && (ops[0].nitems < 2 || ops[0].nitems > 4)) ||
        (ops[1].kind == OK_VEC && (ops[1].nitems < 2 || ops[1].nitems > 4)))
        return ptx_fail(p, line, "the emulator could not read the vector operand of '%.*s'",
                        d->op->len, d->op->p);
    if (ops[1].kind == OK_VEC) { /* pack */
        in->op = OP_PACK;
        in->imm = sz * 8 / ops[1].nitems;
        in->vec = (uint8_t)ops[1].nitems;
        for (int k = 0; k < ops[1].nitems && k < 4; k++) {
            operand o = ptx_vec_item(&ops[1], k, line);
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
    return (in->d[0] = ptx_dst(p, &ops[0])) < 0 || (in->s[0] = ptx_src(p, &ops[1], type)) < 0 ? -1 : 0;
}

#define IS(d, str) ((d)->nbase == (int)sizeof(str) - 1 && memcmp((d)->base, str, sizeof(str) - 1) == 0)

/* An instruction of type .b128 other than mov: the memory ones PTX defines (ld, st and
 * atom's cas and exch, sm_70 and later) are not implemented; the rest are not PTX. */
int
ptx_refuse_b128(decoding *d)
{
    if (IS(d, "ld") || IS(d, "st") || IS(d, "ldu") || IS(d, "atom") || IS(d, "red"))
        return ptx_fail(d->p, d->line, "the emulator does not support 128-bit memory operations: "
                        "'%.*s' (load or store the two 64-bit halves instead)", d->op->len, d->op->p);
    return ptx_fail(d->p, d->line, "'%.*s' is not valid PTX: .b128 is a type of mov, ld, st and "
                    "atom only", d->op->len, d->op->p);
}

#undef IS

/* ------------------------------------------------------------------ contraction */

/* PTX's mul, add and sub without a rounding modifier may be fused by the code
 * generator, and ptxas fuses them: a float32 or float64 mul whose result is read only by
 * one add or sub without one (neither .rn nor .ftz nor .sat, neither guarded), later in
 * the same straight run of code with the mul's operands unchanged in between, becomes
 * one fma at the add, rounded once, as the GPU computes it: a*b + c, a*b - c (c
 * negated), c - a*b (a negated). __fmul_rn and __fadd_rn (mul.rn, add.rn) are never
 * fused. */

static int
slot_written(const emu_inst *in, int slot)
{
    for (int k = 0; k < 4; k++)
        if (in->d[k] == slot && in->op != OP_SUST)
            return 1;
    return 0;
}

/* The pair (mul at i, add or sub at j) may fuse: the code from i to j runs straight
 * through and leaves the mul's operands as they were. */
static int
straight_run(const emu_func *f, const uint8_t *target, int i, int j)
{
    const emu_inst *mul = &f->code[i];
    for (int k = i + 1; k <= j; k++)
        if (target[k])
            return 0;
    for (int k = i; k < j; k++) {
        const emu_inst *in = &f->code[k];
        if (in->op == OP_BRA || in->op == OP_EXIT)
            return 0;
        if (k > i && (slot_written(in, mul->s[0]) || slot_written(in, mul->s[1])))
            return 0;
    }
    return 1;
}

static int
plain(const emu_inst *in)
{
    return (in->mod & 0x0f) == RND_NONE && in->guard < 0;
}

int
ptx_contract(emu_func *f)
{
    int n = f->ncode, ns = f->nslots;
    uint8_t *target = calloc((size_t)n + 1, 1);
    int *uses = calloc((size_t)ns + 1, sizeof *uses), *defs = calloc((size_t)ns + 1, sizeof *defs);
    int *def_at = calloc((size_t)ns + 1, sizeof *def_at);
    if (!target || !uses || !defs || !def_at) {
        free(target), free(uses), free(defs), free(def_at);
        return -1;
    }
    for (int k = 0; k < n; k++) {
        const emu_inst *in = &f->code[k];
        if (in->op == OP_BRA && in->imm >= 0 && in->imm < n)
            target[in->imm] = 1;
        for (int q = 0; q < 4; q++) {
            if (in->s[q] >= 0 && in->s[q] < ns)
                uses[in->s[q]]++;
            if (in->d[q] >= 0 && in->d[q] < ns) {
                if (in->op == OP_SUST)
                    uses[in->d[q]]++;
                else {
                    defs[in->d[q]]++;
                    def_at[in->d[q]] = k;
                }
            }
        }
        if (in->addr >= 0 && in->addr < ns)
            uses[in->addr]++;
    }
    for (int j = 0; j < n; j++) {
        emu_inst *add = &f->code[j];
        int wide = add->op == OP_FADD64 || add->op == OP_FSUB64;
        if (!(add->op == OP_FADD32 || add->op == OP_FSUB32 || wide) || !plain(add))
            continue;
        for (int q = 0; q < 2; q++) {
            int x = add->s[q];
            if (x < 0 || x >= ns || uses[x] != 1 || defs[x] != 1 || def_at[x] >= j)
                continue;
            int i = def_at[x];
            emu_inst *mul = &f->code[i];
            if (mul->op != (wide ? OP_FMUL64 : OP_FMUL32) || !plain(mul) || mul->d[0] != x ||
                !straight_run(f, target, i, j))
                continue;
            int sub = add->op == OP_FSUB32 || add->op == OP_FSUB64;
            int c = add->s[1 - q];
            add->op = wide ? OP_FFMA64 : OP_FFMA32;
            add->s[0] = mul->s[0];
            add->s[1] = mul->s[1];
            add->s[2] = c;
            add->imm = !sub ? 0 : q == 0 ? 2 : 1;
            mul->op = OP_NOP;
            f->fused++;
            break;
        }
    }
    free(target), free(uses), free(defs), free(def_at);
    return 0;
}
