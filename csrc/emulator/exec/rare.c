/* rare.c - the instructions a warp runs rarely, each one call for all its lanes */
#include "emulator/exec/exec.h"

#include <math.h>

#define REG(slot) (w->R + (size_t)(slot) * 32)

/* mov.bN d, {a, b, ..}: the items packed into one register, the first lowest. */
void
emu_op_pack(warp *w, const emu_inst *in, uint32_t m)
{
    uint64_t *R = w->R, *Dd = REG(in->d[0]);
    int wbits = (int)in->imm, n = in->vec;
    uint64_t mk = wbits >= 64 ? ~0ull : (1ull << wbits) - 1;
    LANES(m, {
        uint64_t v = 0;
        for (int k = 0; k < n; k++)
            v |= (R[(size_t)in->s[k] * 32 + l] & mk) << (k * wbits);
        Dd[l] = v;
    });
}

/* mov.bN {a, b, ..}, s: one register split into the items. */
void
emu_op_unpack(warp *w, const emu_inst *in, uint32_t m)
{
    uint64_t *R = w->R;
    const uint64_t *A = REG(in->s[0]);
    int wbits = (int)in->imm, n = in->vec;
    uint64_t mk = wbits >= 64 ? ~0ull : (1ull << wbits) - 1;
    LANES(m, {
        uint64_t v = A[l];
        for (int k = 0; k < n; k++)
            R[(size_t)in->d[k] * 32 + l] = (v >> (k * wbits)) & mk;
    });
}

/* mov.b128: vec 64-bit slots copied at once (a .b128 register is two slots, low first). */
void
emu_op_movn(warp *w, const emu_inst *in, uint32_t m)
{
    uint64_t *R = w->R;
    int n = in->vec;
    LANES(m, {
        uint64_t v[4];
        for (int k = 0; k < n; k++)
            v[k] = R[(size_t)in->s[k] * 32 + l];
        for (int k = 0; k < n; k++)
            R[(size_t)in->d[k] * 32 + l] = v[k];
    });
}

/* Any integer instruction the switch has no case of its own for, lane by lane; carry
 * in and out of w->cc. */
void
emu_op_int(warp *w, const emu_inst *in, uint32_t m)
{
    uint64_t *Dd = REG(in->d[0]);
    const uint64_t *A = REG(in->s[0]), *Bv = REG(in->s[1]), *C = REG(in->s[2]), *E = REG(in->s[3]);
    if (in->base == B_TESTP)
        return;
    LANES(m, {
        uint32_t carry = (w->cc >> l) & 1;
        Dd[l] = emu_alu_int(in, A[l], Bv[l], C[l], E[l], &carry);
        if (in->mod & M_CC)
            w->cc = (w->cc & ~(1u << l)) | (carry << l);
    });
}

/* Any float instruction the switch has no case of its own for, lane by lane; testp
 * writes a predicate. */
void
emu_op_flt(warp *w, const emu_inst *in, uint32_t m)
{
    uint32_t *P = w->P;
    uint64_t *Dd = REG(in->d[0]);
    const uint64_t *A = REG(in->s[0]), *Bv = REG(in->s[1]), *C = REG(in->s[2]);
    if (in->base == B_TESTP) {
        uint32_t bits = 0;
        LANES(m, bits |= (emu_alu_float(in, A[l], 0, 0) ? 1u : 0u) << l);
        P[in->d[0]] = (P[in->d[0]] & ~m) | bits;
        return;
    }
    LANES(m, Dd[l] = emu_alu_float(in, A[l], Bv[l], C[l]));
}

/* set.cmp.dtype: 1.0f or all ones where the comparison holds, combined with a
 * predicate (.and/.or/.xor). */
void
emu_op_set(warp *w, const emu_inst *in, uint32_t m)
{
    const uint32_t *P = w->P;
    uint64_t *Dd = REG(in->d[0]);
    const uint64_t *A = REG(in->s[0]), *Bv = REG(in->s[1]);
    int cmp = (int)in->imm;
    LANES(m, {
        int r = emu_compare(cmp, in->type, A[l], Bv[l]);
        if (in->base) {
            int c = (P[in->s[2]] >> l) & 1;
            if (in->vec)
                c = !c;
            r = in->base == 1 ? (r && c) : in->base == 2 ? (r || c) : (r ^ c);
        }
        Dd[l] = in->type2 == TY_F32 ? (r ? UF(1.0f) : 0) : (r ? 0xffffffffu : 0);
    });
}

/* slct: a where c >= 0, else b. */
void
emu_op_slct(warp *w, const emu_inst *in, uint32_t m)
{
    uint64_t *Dd = REG(in->d[0]);
    const uint64_t *A = REG(in->s[0]), *Bv = REG(in->s[1]), *C = REG(in->s[2]);
    LANES(m, {
        int ge = in->type2 == TY_F32 ? !(F(C[l]) < 0.0f) : (int32_t)C[l] >= 0;
        Dd[l] = ge ? A[l] : Bv[l];
    });
}

/* ld of any space, type and vector width, each lane's address resolved and checked. */
int
emu_op_ld_any(block *b, warp *w, const emu_inst *in, uint32_t m)
{
    uint64_t *R = w->R;
    const uint64_t *Ad = REG(in->addr);
    int t = in->type, sz = emu_type_size(t), n = in->vec;
    unsigned total = (unsigned)(sz * n);
    uint64_t amask = in->wrap32 ? 0xffffffffu : ~0ull;
    LANES(m, {
        uint64_t a = (Ad[l] + (uint64_t)in->imm) & amask;
        const uint8_t *q = emu_resolve(b, w, l, in->space, a, total, 0);
        if (q == NULL)
            return -1;
        for (int k = 0; k < n; k++)
            R[(size_t)in->d[k] * 32 + l] = load_value(q + k * sz, t);
    });
    return 0;
}

/* st of any space, type and vector width. */
int
emu_op_st_any(block *b, warp *w, const emu_inst *in, uint32_t m)
{
    const uint64_t *R = w->R;
    const uint64_t *Ad = REG(in->addr);
    int sz = emu_type_size(in->type), n = in->vec;
    unsigned total = (unsigned)(sz * n);
    uint64_t amask = in->wrap32 ? 0xffffffffu : ~0ull;
    LANES(m, {
        uint64_t a = (Ad[l] + (uint64_t)in->imm) & amask;
        uint8_t *q = emu_resolve(b, w, l, in->space, a, total, 1);
        if (q == NULL)
            return -1;
        for (int k = 0; k < n; k++)
            store_value(q + k * sz, sz, R[(size_t)in->s[k] * 32 + l]);
    });
    return 0;
}

/* cp.async, done at issue (inst.c's decode_cp says why): each lane's type2 bytes
 * from global memory to shared memory, those past its source size zero. Both ends must
 * be aligned to the copy's size, as on the GPU. */
int
emu_op_cpasync(block *b, warp *w, const emu_inst *in, uint32_t m)
{
    const uint64_t *Ad = REG(in->addr), *Dd = REG(in->s[0]), *Off = REG(in->s[1]);
    const uint64_t *Sz = in->s[2] >= 0 ? REG(in->s[2]) : NULL;
    uint32_t ignore = in->d[0] >= 0 ? w->P[in->d[0]] ^ (in->vec ? ~0u : 0u) : 0;
    unsigned size = in->type2;
    uint64_t amask = in->wrap32 ? 0xffffffffu : ~0ull, dmask = in->base ? 0xffffffffu : ~0ull;
    LANES(m, {
        uint64_t want = Sz ? Sz[l] & 0xffffffffu : size;
        unsigned n = (ignore >> l) & 1 ? 0 : want < size ? (unsigned)want : size;
        uint8_t *dst = emu_resolve(b, w, l, SP_SHARED, (Dd[l] + Off[l]) & dmask, size, 1);
        if (dst == NULL)
            return -1;
        uint8_t v[16] = {0};
        if (n) {
            uint64_t a = (Ad[l] + (uint64_t)in->imm) & amask;
            /* aligned to the copy's size, then the bytes read checked */
            const uint8_t *src = (a & (size - 1)) == 0 ? emu_resolve(b, w, l, SP_GLOBAL, a, n, 0)
                                                      : emu_resolve(b, w, l, SP_GLOBAL, a, size, 0);
            if (src == NULL)
                return -1;
            memcpy(v, src, n);
        }
        memcpy(dst, v, size);
    });
    return 0;
}

/* atom and red: each lane's read-modify-write, atom's old value to d. */
int
emu_op_atom(block *b, warp *w, const emu_inst *in, uint32_t m)
{
    uint64_t *Dd = REG(in->d[0]);
    const uint64_t *A = REG(in->s[0]), *Bv = REG(in->s[1]), *Ad = REG(in->addr);
    unsigned sz = (unsigned)emu_type_size(in->type);
    uint64_t amask = in->wrap32 ? 0xffffffffu : ~0ull;
    LANES(m, {
        uint64_t a = (Ad[l] + (uint64_t)in->imm) & amask;
        void *q = emu_resolve(b, w, l, in->space, a, sz, 2);
        if (q == NULL)
            return -1;
        uint64_t old = emu_atomic_op(q, in, A[l], Bv[l]);
        if (in->op == OP_ATOM)
            Dd[l] = old;
    });
    return 0;
}

/* redux.sync (__reduce_*_sync): one 32-bit reduction over the lanes, to each. */
void
emu_op_redux(warp *w, const emu_inst *in, uint32_t m)
{
    uint64_t *Dd = REG(in->d[0]);
    const uint64_t *A = REG(in->s[0]);
    int sgnd = in->type == TY_S32, op = in->type2;
    uint32_t acc = op == ATOM_AND ? ~0u : op == ATOM_MIN ? (sgnd ? 0x7fffffffu : ~0u)
                 : op == ATOM_MAX && sgnd ? 0x80000000u : 0;
    LANES(m, {
        uint32_t v = (uint32_t)A[l];
        switch (op) {
        case ATOM_ADD: acc += v; break;
        case ATOM_AND: acc &= v; break;
        case ATOM_OR: acc |= v; break;
        case ATOM_XOR: acc ^= v; break;
        case ATOM_MIN: acc = sgnd ? ((int32_t)v < (int32_t)acc ? v : acc) : (v < acc ? v : acc); break;
        default: acc = sgnd ? ((int32_t)v > (int32_t)acc ? v : acc) : (v > acc ? v : acc); break;
        }
    });
    LANES(m, Dd[l] = acc);
}

/* shfl.sync: each lane reads another's value (up, down, bfly, idx within segments);
 * the optional predicate says whether the source lane was in range. */
void
emu_op_shfl(warp *w, const emu_inst *in, uint32_t m)
{
    uint32_t *P = w->P;
    uint64_t *Dd = REG(in->d[0]);
    const uint64_t *A = REG(in->s[0]), *Bv = REG(in->s[1]), *C = REG(in->s[2]);
    uint64_t vals[32];
    uint32_t okbits = 0;
    int mode = in->type2;
    LANES(m, {
        uint32_t bval = (uint32_t)Bv[l], cval = (uint32_t)C[l];
        uint32_t segmask = (cval >> 8) & 0x1f, clamp = cval & 0x1f;
        uint32_t maxl = ((uint32_t)l & segmask) | (clamp & ~segmask);
        uint32_t minl = (uint32_t)l & segmask;
        int32_t j;
        int ok;
        switch (mode) {
        case SHFL_UP: j = l - (int32_t)bval; ok = j >= (int32_t)minl; break;
        case SHFL_DOWN: j = l + (int32_t)bval; ok = j <= (int32_t)maxl; break;
        case SHFL_BFLY: j = l ^ (int32_t)bval; ok = j <= (int32_t)maxl; break;
        default: j = (int32_t)(minl | (bval & ~segmask)); ok = j <= (int32_t)maxl; break;
        }
        if (!ok || j < 0 || j > 31)
            j = l;
        vals[l] = A[j];
        okbits |= (uint32_t)ok << l;
    });
    LANES(m, Dd[l] = vals[l] & 0xffffffffu);
    if (in->d[1] >= 0)
        P[in->d[1]] = (P[in->d[1]] & ~m) | (okbits & m);
}

/* vote.all/any/uni to a predicate, vote.ballot to a register. */
void
emu_op_vote(warp *w, const emu_inst *in, uint32_t m)
{
    uint32_t *P = w->P;
    uint64_t *Dd = REG(in->d[0]);
    uint32_t p = P[in->s[0]];
    if (in->vec)
        p = ~p;
    p &= m;
    switch (in->type2) {
    case VOTE_ALL: P[in->d[0]] = (P[in->d[0]] & ~m) | (p == m ? m : 0); break;
    case VOTE_ANY: P[in->d[0]] = (P[in->d[0]] & ~m) | (p ? m : 0); break;
    case VOTE_UNI: P[in->d[0]] = (P[in->d[0]] & ~m) | ((p == 0 || p == m) ? m : 0); break;
    default: LANES(m, Dd[l] = p); break;
    }
}

/* match.any (the lanes holding the same value as each) and match.all (all of m, or
 * none, and the predicate). */
void
emu_op_match(warp *w, const emu_inst *in, uint32_t m)
{
    uint32_t *P = w->P;
    uint64_t *Dd = REG(in->d[0]);
    const uint64_t *A = REG(in->s[0]);
    uint32_t res[32], all = 1;
    int sz = emu_type_size(in->type);
    LANES(m, {
        uint32_t eq = 0;
        for (uint32_t mm = m; mm; mm &= mm - 1) {
            int k = __builtin_ctz(mm);
            if (zx(A[k], sz) == zx(A[l], sz))
                eq |= 1u << k;
        }
        res[l] = eq;
        if (eq != m)
            all = 0;
    });
    if (in->op == OP_MATCH_ANY)
        LANES(m, Dd[l] = res[l]);
    else
        LANES(m, Dd[l] = all ? m : 0);
    if (in->d[1] >= 0)
        P[in->d[1]] = (P[in->d[1]] & ~m) | (all ? m : 0);
}

/* printf (vprintf): each lane's line in lane order, under the process's print lock. */
int
emu_op_printf(block *b, warp *w, const emu_inst *in, uint32_t m)
{
    uint64_t *Dd = REG(in->d[0]);
    const uint64_t *A = REG(in->s[0]), *Bv = REG(in->s[1]);
    pthread_mutex_lock(&emu_print_lock);
    LANES(m, {
        emu_do_printf(b, w, l, A[l], Bv[l], stdout);
        Dd[l] = 0;
    });
    pthread_mutex_unlock(&emu_print_lock);
    return b->fault ? -1 : 0;
}

/* %clock, %clock64, %globaltimer: the host's monotonic clock in nanoseconds. */
void
emu_op_clock(warp *w, const emu_inst *in, uint32_t m)
{
    uint64_t *Dd = REG(in->d[0]);
    uint64_t v = emu_now_ns();
    LANES(m, Dd[l] = in->op == OP_CLOCK ? (uint32_t)v : v);
}

#undef REG
