/* alu.c - one lane's generic arithmetic for the emulator: integers, floats with PTX's
 * rounding modes, conversions, comparisons, atomics */
#include "emulator/exec/exec.h"

#include <fenv.h>
#include <math.h>

/* ------------------------------------------------------------------ arithmetic */

static inline uint32_t
brev32(uint32_t x)
{
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
    return (x >> 16) | (x << 16);
}

/* The steps of emu_alu_int, one per family of instructions; static inline, so the
 * switch below compiles as it did when they were written in it. t, size, s, bits: the
 * instruction's type, its size in bytes, whether signed, its width in bits. */

/* The high half of the product a * b (mul.hi, mad.hi). */
static inline uint64_t
mul_high(uint64_t a, uint64_t b, int size, int s)
{
    int bits = size * 8;
    if (size == 8)
        return s ? (uint64_t)(((__int128)(int64_t)a * (int64_t)b) >> 64)
                 : (uint64_t)(((unsigned __int128)a * b) >> 64);
    return s ? (uint64_t)((sx(a, size) * sx(b, size)) >> bits) : (zx(a, size) * zx(b, size)) >> bits;
}

static inline int64_t
clamp_s32(int64_t v)
{
    return v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v;
}

/* add, addc: .sat clamps a signed sum; .cc sets the carry out. */
static inline uint64_t
alu_add(const emu_inst *in, uint64_t a, uint64_t b, int size, int s, uint32_t *carry)
{
    uint64_t cin = in->base == B_ADDC ? (*carry & 1) : 0;
    if ((in->mod & M_SAT) && s) {
        if (size == 8) {
            int64_t out;
            if (__builtin_add_overflow((int64_t)a, (int64_t)b, &out))
                out = (int64_t)a < 0 ? INT64_MIN : INT64_MAX;
            return (uint64_t)out;
        }
        int64_t v = sx(a, size) + sx(b, size);
        int64_t lo = size == 4 ? INT32_MIN : INT64_MIN, hi = size == 4 ? INT32_MAX : INT64_MAX;
        return zx((uint64_t)(v < lo ? lo : v > hi ? hi : v), size);
    }
    uint64_t za = zx(a, size), zb = zx(b, size);
    uint64_t r = za + zb + cin;
    if (in->mod & M_CC)
        *carry = size == 8 ? (r < za || (cin && r == za)) : (uint32_t)((r >> (size * 8)) & 1);
    return zx(r, size);
}

/* sub, subc as the GPU computes them: a + ~b + 1 (sub) or a + ~b + CF (subc), so .cc
 * leaves the carry out of that sum (1 means no borrow), which addc and madc read as a
 * carry, and subc reads an add's carry as "no borrow". .sat clamps a signed 32-bit
 * difference. */
static inline uint64_t
alu_sub(const emu_inst *in, uint64_t a, uint64_t b, int size, int s, uint32_t *carry)
{
    uint64_t cin = in->base == B_SUBC ? (*carry & 1) : 1;
    if ((in->mod & M_SAT) && s && size == 4)
        return zx((uint64_t)clamp_s32(sx(a, 4) - sx(b, 4)), 4);
    uint64_t za = zx(a, size), nb = zx(~b, size);
    uint64_t r = za + nb + cin;
    if (in->mod & M_CC)
        *carry = size == 8 ? (r < za || (cin && r == za)) : (uint32_t)((r >> (size * 8)) & 1);
    return zx(r, size);
}

/* mad.lo / mad.hi, with carry in (madc) and out (.cc): the hi variants add the high
 * half of the product. */
static inline uint64_t
alu_mad(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c, int size, int s, uint32_t *carry)
{
    uint64_t cin = in->base == B_MADC ? (*carry & 1) : 0;
    uint64_t prod = zx(a * b, size), zc = zx(c, size);
    if (in->base == B_MADHI || (in->base == B_MADC && in->imm))
        prod = zx(mul_high(a, b, size, s), size);
    if ((in->mod & M_SAT) && s && size == 4)
        return zx((uint64_t)clamp_s32(sx(a, 4) * sx(b, 4) + sx(c, 4)), 4);
    uint64_t r = prod + zc + cin;
    if (in->mod & M_CC)
        *carry = size == 8 ? (r < prod || (cin && r == prod)) : (uint32_t)((r >> (size * 8)) & 1);
    return zx(r, size);
}

/* div and rem as the GPU gives them: by zero, all ones and a; by -1, no overflow trap. */
static inline uint64_t
alu_divrem(const emu_inst *in, uint64_t a, uint64_t b, int size, int s)
{
    int div = in->base == B_DIV;
    if (zx(b, size) == 0)
        return div ? zx(~0ull, size) : zx(a, size);
    if (s) {
        int64_t x = sx(a, size), y = sx(b, size);
        if (y == -1)
            return div ? zx((uint64_t)0 - (uint64_t)x, size) : 0;
        return zx((uint64_t)(div ? x / y : x % y), size);
    }
    return zx(div ? zx(a, size) / zx(b, size) : zx(a, size) % zx(b, size), size);
}

/* shl, shr: a count past the width shifts everything out (shr.s: the sign fills). */
static inline uint64_t
alu_shift(const emu_inst *in, uint64_t a, uint64_t b, int size, int s)
{
    int bits = size * 8;
    uint64_t n = zx(b, 4);
    if (in->base == B_SHL)
        return n >= (uint64_t)bits ? 0 : zx(a << n, size);
    if (s) {
        int64_t x = sx(a, size);
        return zx((uint64_t)(n >= (uint64_t)bits ? (x < 0 ? -1 : 0) : x >> n), size);
    }
    return n >= (uint64_t)bits ? 0 : zx(a, size) >> n;
}

/* popc, clz, brev, bfind: counting and finding bits. */
static inline uint64_t
alu_count_bits(const emu_inst *in, uint64_t a, int size, int s)
{
    int bits = size * 8;
    uint64_t x = zx(a, size);
    switch (in->base) {
    case B_POPC:
        return (uint64_t)__builtin_popcountll(x);
    case B_CLZ:
        return x == 0 ? (uint64_t)bits : (uint64_t)(__builtin_clzll(x) - (64 - bits));
    case B_BREV:
        if (size == 4)
            return brev32((uint32_t)a);
        return ((uint64_t)brev32((uint32_t)a) << 32) | brev32((uint32_t)(a >> 32));
    default: { /* B_BFIND */
        if (s && sx(a, size) < 0)
            x = zx(~a, size);
        if (x == 0)
            return 0xffffffffu;
        uint64_t msb = (uint64_t)(63 - __builtin_clzll(x));
        return in->imm ? (uint64_t)(bits - 1) - msb : msb;
    }
    }
}

/* bfe: len bits of a from pos, sign-extended from the field's top bit when signed. */
static inline uint64_t
alu_bfe(uint64_t a, uint64_t b, uint64_t c, int size, int s)
{
    int bits = size * 8;
    unsigned pos = (unsigned)(b & 0xff), len = (unsigned)(c & 0xff);
    uint64_t x = zx(a, size), out = 0;
    unsigned msb = pos + len - 1;
    uint64_t sbit = 0;
    if (s && len > 0)
        sbit = (x >> (msb < (unsigned)bits - 1 ? msb : (unsigned)bits - 1)) & 1;
    for (unsigned i = 0; i < (unsigned)bits; i++) {
        uint64_t bit = (i < len && pos + i < (unsigned)bits) ? (x >> (pos + i)) & 1 : sbit;
        out |= bit << i;
    }
    return out;
}

/* bfi: the low len bits of a put into b at pos. */
static inline uint64_t
alu_bfi(uint64_t a, uint64_t b, uint64_t c, uint64_t e, int size)
{
    int bits = size * 8;
    unsigned pos = (unsigned)(c & 0xff), len = (unsigned)(e & 0xff);
    uint64_t out = zx(b, size);
    for (unsigned i = 0; i < len && pos + i < (unsigned)bits; i++)
        out = (out & ~(1ull << (pos + i))) | (((a >> i) & 1) << (pos + i));
    return out;
}

/* prmt: four bytes picked from the eight of b:a by the selectors in c (bit 3: the
 * picked byte's sign replicated). */
static inline uint64_t
alu_prmt(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t tmp = ((b & 0xffffffffu) << 32) | (a & 0xffffffffu);
    uint32_t out = 0;
    for (int i = 0; i < 4; i++) {
        unsigned sel = (unsigned)(c >> (4 * i)) & 0xf;
        uint32_t byte = (uint32_t)(tmp >> (8 * (sel & 7))) & 0xff;
        if (sel & 8)
            byte = (byte & 0x80) ? 0xff : 0;
        out |= byte << (8 * i);
    }
    return out;
}

/* lop3: any function of three inputs, bit by bit, given by its truth table imm. */
static inline uint64_t
alu_lop3(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c)
{
    uint32_t A = (uint32_t)a, Bv = (uint32_t)b, C = (uint32_t)c, out = 0;
    unsigned lut = (unsigned)in->imm;
    for (int i = 0; i < 8; i++) {
        if (lut & (1u << i))
            out |= ((i & 4) ? A : ~A) & ((i & 2) ? Bv : ~Bv) & ((i & 1) ? C : ~C);
    }
    return out;
}

/* shf.l, shf.r: the funnel shift of b:a by c, clamped at 32 (.clamp) or mod 32 (.wrap). */
static inline uint64_t
alu_funnel(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c)
{
    uint32_t n = (uint32_t)c;
    n = in->imm ? (n > 32 ? 32 : n) : (n & 31);
    uint64_t pair = ((b & 0xffffffffu) << 32) | (a & 0xffffffffu);
    if (in->base == B_SHFL_L)
        return n == 32 ? (a & 0xffffffffu) : (uint32_t)((pair << n) >> 32);
    return n == 32 ? (b & 0xffffffffu) : (uint32_t)(pair >> n);
}

/* dp4a: c plus the dot product of the four bytes of a and of b (each signed or not). */
static inline uint64_t
alu_dp4a(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c)
{
    int sa = sgn(in->type), sb = sgn(in->type2);
    int64_t acc = sa || sb ? sx(c, 4) : (int64_t)zx(c, 4);
    for (int i = 0; i < 4; i++) {
        int64_t x = sa ? (int8_t)(a >> (8 * i)) : (uint8_t)(a >> (8 * i));
        int64_t y = sb ? (int8_t)(b >> (8 * i)) : (uint8_t)(b >> (8 * i));
        acc += x * y;
    }
    return zx((uint64_t)acc, 4);
}

uint64_t
emu_alu_int(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c, uint64_t e, uint32_t *carry)
{
    int t = in->type, size = emu_type_size(t), s = sgn(t);
    uint64_t r;
    switch (in->base) {
    case B_ADD:
    case B_ADDC:
        return alu_add(in, a, b, size, s, carry);
    case B_SUB:
    case B_SUBC:
        return alu_sub(in, a, b, size, s, carry);
    case B_MUL:
        return zx(a * b, size);
    case B_MULHI:
        return zx(mul_high(a, b, size, s), size);
    case B_MULWIDE:
    case B_MADWIDE:
        r = s ? (uint64_t)(sx(a, size) * sx(b, size)) : zx(a, size) * zx(b, size);
        if (in->base == B_MADWIDE)
            r += c;
        return zx(r, size * 2);
    case B_MAD:
    case B_MADHI:
    case B_MADC:
        return alu_mad(in, a, b, c, size, s, carry);
    case B_MUL24:
    case B_MAD24: {
        int64_t x = s ? ((int64_t)(a << 40) >> 40) : (int64_t)(a & 0xffffff);
        int64_t y = s ? ((int64_t)(b << 40) >> 40) : (int64_t)(b & 0xffffff);
        r = (uint64_t)(x * y);
        if (in->base == B_MAD24)
            r += c;
        return zx(r, 4);
    }
    case B_SAD: {
        uint64_t d = s ? (uint64_t)(sx(a, size) > sx(b, size) ? sx(a, size) - sx(b, size) : sx(b, size) - sx(a, size))
                       : (zx(a, size) > zx(b, size) ? zx(a, size) - zx(b, size) : zx(b, size) - zx(a, size));
        return zx(d + c, size);
    }
    case B_DIV:
    case B_REM:
        return alu_divrem(in, a, b, size, s);
    case B_ABS: {
        int64_t x = sx(a, size);
        return zx((uint64_t)(x < 0 ? -(uint64_t)x : (uint64_t)x), size);
    }
    case B_NEG:
        return zx((uint64_t)0 - a, size);
    case B_MIN:
        if (s)
            return zx((uint64_t)(sx(a, size) < sx(b, size) ? sx(a, size) : sx(b, size)), size);
        return zx(a, size) < zx(b, size) ? zx(a, size) : zx(b, size);
    case B_MAX:
        if (s)
            return zx((uint64_t)(sx(a, size) > sx(b, size) ? sx(a, size) : sx(b, size)), size);
        return zx(a, size) > zx(b, size) ? zx(a, size) : zx(b, size);
    case B_AND: return zx(a & b, size);
    case B_OR: return zx(a | b, size);
    case B_XOR: return zx(a ^ b, size);
    case B_NOT: return zx(~a, size);
    case B_CNOT: return zx(a, size) == 0;
    case B_SHL:
    case B_SHR:
        return alu_shift(in, a, b, size, s);
    case B_POPC:
    case B_CLZ:
    case B_BREV:
    case B_BFIND:
        return alu_count_bits(in, a, size, s);
    case B_BFE: return alu_bfe(a, b, c, size, s);
    case B_BFI: return alu_bfi(a, b, c, e, size);
    case B_PRMT: return alu_prmt(a, b, c);
    case B_LOP3: return alu_lop3(in, a, b, c);
    case B_SHFL_L:
    case B_SHFL_R:
        return alu_funnel(in, a, b, c);
    case B_DP4A: return alu_dp4a(in, a, b, c);
    default:
        return 0;
    }
}

static inline float
ftz32(float x)
{
    return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

/* x / (2 pi) in turns, as the GPU's sin.approx and cos.approx take it: one single
 * precision multiplication by 1/(2 pi) (0x3e22f983), rounded toward zero. The product
 * of two floats is exact in a double; rounding it to nearest and stepping back toward
 * zero where that went past gives the toward-zero float without changing the mode. */
static float
emu_turns32(float x)
{
    double t = (double)x * 0.159154936671257019f;
    float r = (float)t;
    if (fabs((double)r) > fabs(t))
        r = nextafterf(r, 0.0f);
    return r;
}

static int
set_round(int rnd)
{
    static const int modes[] = {[RND_RZ] = FE_TOWARDZERO, [RND_RM] = FE_DOWNWARD, [RND_RP] = FE_UPWARD};
    if (rnd == RND_RZ || rnd == RND_RM || rnd == RND_RP) {
        fesetround(modes[rnd]);
        return 1;
    }
    return 0;
}

/* testp: whether a value of class cls (fpclassify's) passes test imm (1 finite,
 * 2 infinite, 3 number, 4 not a number, 5 normal, 6 subnormal). */
static uint64_t
test_class(int cls, int64_t imm)
{
    switch (imm) {
    case 1: return cls != FP_INFINITE && cls != FP_NAN;
    case 2: return cls == FP_INFINITE;
    case 3: return cls != FP_NAN;
    case 4: return cls == FP_NAN;
    case 5: return cls == FP_NORMAL;
    default: return cls == FP_SUBNORMAL;
    }
}

/* rcp.approx.ftz.f64, as the ISA defines it: the reciprocal of the top 32 bits of the
 * operand (its low 32 ignored), the result's low 32 bits zero (rcp_approx_bits).
 * Routines such as normcdfinv refine it, so its bits reach their results. */
static double
rcp_of_top_half(uint64_t a)
{
    double hi = D(a & 0xffffffff00000000ull);
    if (fpclassify(hi) == FP_SUBNORMAL)
        hi = copysign(0.0, hi);
    return 1.0 / hi;
}

static uint64_t
rcp_approx_bits(double q)
{
    uint64_t out = UD(q) & 0xffffffff00000000ull;
    if (fpclassify(D(out)) == FP_SUBNORMAL)
        out &= 1ull << 63;
    return out;
}

/* The steps of emu_alu_float, one per type; the rounding mode is set around them.
 * The operands are volatile so that the compiler computes in the mode set at run time. */
static uint64_t
alu_f64(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c)
{
    volatile double x = D(a), y = D(b), z = D(c);
    volatile double r = 0;
    switch (in->base) {
    case B_ADD: r = x + y; break;
    case B_SUB: r = x - y; break;
    case B_MUL: r = x * y; break;
    case B_FMA: case B_MAD: r = fma(x, y, z); break;
    case B_DIV: r = x / y; break;
    case B_RCP:
        if ((in->mod & M_APPROX) && (in->mod & M_FTZ)) {
            double q = rcp_of_top_half(a);
            if (!isnan(q))
                return rcp_approx_bits(q);
            r = q;
        }
        else
            r = 1.0 / x;
        break;
    case B_SQRT: r = sqrt(x); break;
    case B_RSQRT:
        /* rsqrt.approx.ftz.f64 works on the top 32 bits like rcp's (the H100's results
         * have their low 32 bits zero; this model gives its bits for 94% of inputs, the
         * rest one unit of the top word apart); without .ftz, the full operand (the
         * H100's top word equals this one's for every input measured). */
        if ((in->mod & M_APPROX) && (in->mod & M_FTZ)) {
            double hi = D(a & 0xffffffff00000000ull);
            if (fpclassify(hi) == FP_SUBNORMAL)
                hi = copysign(0.0, hi);
            double q = 1.0 / sqrt(hi);
            if (!isnan(q))
                return rcp_approx_bits(q);
            r = q;
        }
        else
            r = 1.0 / sqrt(x);
        break;
    case B_ABS: return a & ~(1ull << 63);
    case B_NEG: return a ^ (1ull << 63);
    case B_MIN: case B_MAX:
        /* a NaN operand, signaling too, is ignored; of two NaNs the second, quieted */
        if (isnan(x) && isnan(y))
            return b | 0x0008000000000000ull;
        r = isnan(x) ? y : isnan(y) ? x : in->base == B_MIN ? fmin(x, y) : fmax(x, y);
        break;
    case B_COPYSIGN: return (b & ~(1ull << 63)) | (a & (1ull << 63)); /* bits: a NaN keeps its payload */
    case B_TESTP: return test_class(fpclassify(x), in->imm);
    default: r = NAN; break;
    }
    if (in->mod & M_SAT)
        r = isnan(r) ? 0.0 : r < 0 ? 0.0 : r > 1 ? 1.0 : r;
    return UDN(r, in->base == B_MIN || in->base == B_MAX ? 0 : b,
               in->base == B_FMA || in->base == B_MAD ? c : 0);
}

static uint64_t
alu_f16(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c)
{
    float x = emu_f16_to_f32((uint16_t)a), y = emu_f16_to_f32((uint16_t)b), z = emu_f16_to_f32((uint16_t)c);
    float r;
    switch (in->base) {
    case B_ADD: r = x + y; break;
    case B_SUB: r = x - y; break;
    case B_MUL: r = x * y; break;
    case B_FMA: r = fmaf(x, y, z); break;
    case B_ABS: return a & 0x7fff;
    case B_NEG: return (a ^ 0x8000) & 0xffff;
    case B_MIN: r = isnan(x) ? y : isnan(y) ? x : fminf(x, y); break;
    case B_MAX: r = isnan(x) ? y : isnan(y) ? x : fmaxf(x, y); break;
    default: r = NAN; break;
    }
    if (in->mod & M_SAT)
        r = isnan(r) ? 0.0f : r < 0 ? 0.0f : r > 1 ? 1.0f : r;
    return isnan(r) ? 0x7fff : emu_f32_to_f16(r); /* the GPU's canonical half NaN */
}

static uint64_t
alu_f32(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c)
{
    int ftz = (in->mod & M_FTZ) != 0;
    volatile float x = F(a), y = F(b), z = F(c);
    if (ftz) {
        x = ftz32(x);
        y = ftz32(y);
        z = ftz32(z);
    }
    volatile float r = 0;
    switch (in->base) {
    case B_ADD: r = x + y; break;
    case B_SUB: r = x - y; break;
    case B_MUL: r = x * y; break;
    case B_FMA: case B_MAD: r = fmaf(x, y, z); break;
    case B_DIV:
        if (in->mod & M_APPROX) {
            float xx = x, yy = y;
            /* div.approx: x * (1/y), with 1/y computed for |y| up to 2^126. A subnormal
             * divisor (no .ftz) is scaled first, as the H100 does: its 1/y would
             * overflow, and the GPU gives fmodf(1e-39f, 9.18e-41f) = 8.2e-41, not inf. */
            if (fpclassify(yy) == FP_SUBNORMAL) {
                xx *= 16777216.0f;
                yy *= 16777216.0f;
            }
            r = fabsf(yy) > 8.507059e37f ? 0.0f * xx : xx * (1.0f / yy);
        }
        else
            r = x / y;
        break;
    case B_RCP: r = 1.0f / x; break;
    case B_SQRT: r = sqrtf(x); break;
    case B_RSQRT: r = 1.0f / sqrtf(x); break;
    /* sin.approx and cos.approx: the hardware takes the angle in turns, multiplied
     * by 1/(2 pi) in single precision rounding toward zero, so an argument as large
     * as 3.4e38 is a whole number of turns (sin 0, cos 1), as it is on the GPU. */
    case B_SIN: case B_COS: {
        double turns = (double)emu_turns32(x);
        double a2 = 6.283185307179586 * (turns - nearbyint(turns));
        r = in->base == B_SIN ? (float)sin(a2) : (float)cos(a2);
        if (isinf(x) || isnan(x))
            r = NAN;
        break;
    }
    case B_LG2: r = log2f(x); break;
    case B_EX2: r = exp2f(x); break;
    case B_TANH: r = tanhf(x); break;
    /* abs and neg change the sign bit, but a NaN comes out canonical, as on the GPU */
    case B_ABS: r = fabsf(x); if (!ftz && !isnan(x)) return a & 0x7fffffffu; break;
    case B_NEG: if (!ftz && !isnan(x)) return (a ^ 0x80000000u) & 0xffffffffu; r = -x; break;
    /* a NaN operand, signaling too, is ignored (glibc's fminf returns NaN for one) */
    case B_MIN: r = isnan(x) ? y : isnan(y) ? x : fminf(x, y); break;
    case B_MAX: r = isnan(x) ? y : isnan(y) ? x : fmaxf(x, y); break;
    case B_COPYSIGN: return (b & 0x7fffffffu) | (a & 0x80000000u);
    case B_TESTP: {
        float v = x;
        return test_class(fpclassify(v), in->imm);
    }
    default: r = NAN; break;
    }
    float rr = r;
    if (ftz)
        rr = ftz32(rr);
    if (in->mod & M_SAT)
        rr = isnan(rr) ? 0.0f : rr < 0 ? 0.0f : rr > 1 ? 1.0f : rr;
    /* a NaN that arithmetic makes is the canonical one, as the GPU's (0x7fffffff),
     * whatever NaN came in */
    return isnan(rr) ? 0x7fffffffu : UF(rr);
}

uint64_t
emu_alu_float(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c)
{
    int changed = set_round(RND(in->mod));
    uint64_t out = in->type == TY_F64 ? alu_f64(in, a, b, c)
                 : in->type == TY_F16 ? alu_f16(in, a, b, c) : alu_f32(in, a, b, c);
    if (changed)
        fesetround(FE_TONEAREST);
    return out;
}

/* cvt between any two types, with PTX's rounding, saturation and NaN rules. */
uint64_t
emu_convert(const emu_inst *in, uint64_t v)
{
    int dt = in->type, st = in->type2, rnd = RND(in->mod);
    int dsz = emu_type_size(dt), ssz = emu_type_size(st);
    int dflt = dt == TY_F16 || dt == TY_BF16 || dt == TY_F32 || dt == TY_F64;
    int sflt = st == TY_F16 || st == TY_BF16 || st == TY_F32 || st == TY_F64;
    if (!dflt && !sflt) {
        if (in->mod & M_SAT) {
            /* clamp to the destination's range */
            int64_t x = sgn(st) ? sx(v, ssz) : (int64_t)zx(v, ssz);
            int dbits = dsz * 8;
            if (sgn(dt)) {
                int64_t lo = dbits == 64 ? INT64_MIN : -(1ll << (dbits - 1));
                int64_t hi = dbits == 64 ? INT64_MAX : (1ll << (dbits - 1)) - 1;
                if (!sgn(st) && ssz == 8 && v > (uint64_t)INT64_MAX)
                    return zx((uint64_t)hi, dsz);
                return zx((uint64_t)(x < lo ? lo : x > hi ? hi : x), dsz);
            }
            uint64_t hi = dbits == 64 ? UINT64_MAX : (1ull << dbits) - 1;
            if (sgn(st) && x < 0)
                return 0;
            uint64_t ux = sgn(st) ? (uint64_t)x : zx(v, ssz);
            return ux > hi ? hi : ux;
        }
        uint64_t x = sgn(st) ? (uint64_t)sx(v, ssz) : zx(v, ssz);
        /* the destination register holds the value extended to its width */
        return sgn(dt) ? (uint64_t)sx(x, dsz) : zx(x, dsz);
    }
    int changed = 0;
    uint64_t out;
    if (sflt) {
        double x;
        if (st == TY_F32)
            x = F(v);
        else if (st == TY_F64)
            x = D(v);
        else if (st == TY_F16)
            x = emu_f16_to_f32((uint16_t)v);
        else
            x = emu_bf16_to_f32((uint16_t)v);
        if ((in->mod & M_FTZ) && st == TY_F32)
            x = ftz32((float)x);
        if (!dflt) {
            /* float -> integer: round to an integer, saturate, NaN -> 0 */
            double r;
            switch (rnd) {
            case RND_RNI: r = nearbyint(x); break;
            case RND_RMI: r = floor(x); break;
            case RND_RPI: r = ceil(x); break;
            default: r = trunc(x); break;
            }
            int dbits = dsz * 8;
            if (isnan(r))
                return 0;
            if (sgn(dt)) {
                double lo = -ldexp(1.0, dbits - 1), hi = ldexp(1.0, dbits - 1);
                if (r < lo)
                    return zx((uint64_t)(dbits == 64 ? INT64_MIN : -(1ll << (dbits - 1))), dsz);
                if (r >= hi)
                    return zx((uint64_t)(dbits == 64 ? INT64_MAX : (1ll << (dbits - 1)) - 1), dsz);
                return zx((uint64_t)(int64_t)r, dsz);
            }
            double hi = ldexp(1.0, dbits);
            if (r <= 0)
                return 0;
            if (r >= hi)
                return dbits == 64 ? UINT64_MAX : (1ull << dbits) - 1;
            return (uint64_t)r;
        }
        /* float -> float */
        if (rnd >= RND_RNI) {
            switch (rnd) {
            case RND_RNI: x = nearbyint(x); break;
            case RND_RMI: x = floor(x); break;
            case RND_RPI: x = ceil(x); break;
            default: x = trunc(x); break;
            }
        }
        changed = set_round(rnd);
        if (dt == TY_F64)
            out = UD(x);
        else if (dt == TY_F32) {
            volatile double vx = x;
            volatile float f = (float)vx;
            float ff = f;
            if (in->mod & M_FTZ)
                ff = ftz32(ff);
            if (in->mod & M_SAT)
                ff = isnan(ff) ? 0.0f : ff < 0 ? 0.0f : ff > 1 ? 1.0f : ff;
            /* a NaN from float64 keeps its sign and top payload bits, quieted (as the
             * GPU's and the CPU's conversions do); from a half, the canonical NaN */
            out = isnan(ff) && st != TY_F64 ? 0x7fffffffu : UF(ff);
        }
        else if (isnan(x))
            out = 0x7fff; /* the GPU's canonical half and bfloat16 NaN */
        else if (dt == TY_F16)
            out = emu_f32_to_f16((float)x);
        else
            out = emu_f32_to_bf16((float)x);
    }
    else {
        /* integer -> float */
        changed = set_round(rnd);
        if (dt == TY_F64) {
            volatile double r = sgn(st) ? (double)sx(v, ssz) : (double)zx(v, ssz);
            out = UD(r);
        }
        else {
            volatile float r = sgn(st) ? (float)sx(v, ssz) : (float)zx(v, ssz);
            float rr = r;
            if (in->mod & M_SAT)
                rr = rr < 0 ? 0.0f : rr > 1 ? 1.0f : rr;
            if (dt == TY_F32)
                out = UF(rr);
            else if (dt == TY_F16)
                out = emu_f32_to_f16(rr);
            else
                out = emu_f32_to_bf16(rr);
        }
    }
    if (changed)
        fesetround(FE_TONEAREST);
    return out;
}

int
emu_compare(int cmp, int type, uint64_t a, uint64_t b)
{
    if (type == TY_F32 || type == TY_F64 || type == TY_F16) {
        double x = type == TY_F32 ? F(a) : type == TY_F64 ? D(a) : emu_f16_to_f32((uint16_t)a);
        double y = type == TY_F32 ? F(b) : type == TY_F64 ? D(b) : emu_f16_to_f32((uint16_t)b);
        int un = isnan(x) || isnan(y);
        switch (cmp) {
        case CMP_EQ: return !un && x == y;
        case CMP_NE: return !un && x != y;
        case CMP_LT: return !un && x < y;
        case CMP_LE: return !un && x <= y;
        case CMP_GT: return !un && x > y;
        case CMP_GE: return !un && x >= y;
        case CMP_EQU: return un || x == y;
        case CMP_NEU: return un || x != y;
        case CMP_LTU: return un || x < y;
        case CMP_LEU: return un || x <= y;
        case CMP_GTU: return un || x > y;
        case CMP_GEU: return un || x >= y;
        case CMP_NUM: return !un;
        case CMP_NAN: return un;
        }
        return 0;
    }
    int size = emu_type_size(type);
    if (size == 0)
        size = 4;
    if (sgn(type)) {
        int64_t x = sx(a, size), y = sx(b, size);
        switch (cmp) {
        case CMP_EQ: return x == y;
        case CMP_NE: return x != y;
        case CMP_LT: case CMP_LO: return x < y;
        case CMP_LE: case CMP_LS: return x <= y;
        case CMP_GT: case CMP_HI: return x > y;
        case CMP_GE: case CMP_HS: return x >= y;
        }
        return 0;
    }
    uint64_t x = zx(a, size), y = zx(b, size);
    switch (cmp) {
    case CMP_EQ: return x == y;
    case CMP_NE: return x != y;
    case CMP_LT: case CMP_LO: return x < y;
    case CMP_LE: case CMP_LS: return x <= y;
    case CMP_GT: case CMP_HI: return x > y;
    case CMP_GE: case CMP_HS: return x >= y;
    }
    return 0;
}

/* ------------------------------------------------------------------ atomics */

uint64_t
emu_atomic_op(void *p, const emu_inst *in, uint64_t b, uint64_t c)
{
    int t = in->type, size = emu_type_size(t);
    if (size == 4) {
        uint32_t *q = p, old = __atomic_load_n(q, __ATOMIC_SEQ_CST), nv;
        for (;;) {
            switch (in->type2) {
            case ATOM_ADD: nv = t == TY_F32 ? (uint32_t)UF(F(old) + F(b)) : old + (uint32_t)b; break;
            case ATOM_MIN:
                nv = t == TY_F32 ? (uint32_t)UF(fminf(F(old), F(b)))
                   : t == TY_S32 ? ((int32_t)old < (int32_t)b ? old : (uint32_t)b)
                                : (old < (uint32_t)b ? old : (uint32_t)b);
                break;
            case ATOM_MAX:
                nv = t == TY_F32 ? (uint32_t)UF(fmaxf(F(old), F(b)))
                   : t == TY_S32 ? ((int32_t)old > (int32_t)b ? old : (uint32_t)b)
                                : (old > (uint32_t)b ? old : (uint32_t)b);
                break;
            case ATOM_EXCH: nv = (uint32_t)b; break;
            case ATOM_CAS: nv = old == (uint32_t)b ? (uint32_t)c : old; break;
            case ATOM_AND: nv = old & (uint32_t)b; break;
            case ATOM_OR: nv = old | (uint32_t)b; break;
            case ATOM_XOR: nv = old ^ (uint32_t)b; break;
            case ATOM_INC: nv = old >= (uint32_t)b ? 0 : old + 1; break;
            case ATOM_DEC: nv = (old == 0 || old > (uint32_t)b) ? (uint32_t)b : old - 1; break;
            default: nv = old; break;
            }
            if (__atomic_compare_exchange_n(q, &old, nv, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                return old;
        }
    }
    uint64_t *q = p, old = __atomic_load_n(q, __ATOMIC_SEQ_CST), nv;
    for (;;) {
        switch (in->type2) {
        case ATOM_ADD: nv = t == TY_F64 ? UD(D(old) + D(b)) : old + b; break;
        case ATOM_MIN:
            nv = t == TY_F64 ? UD(fmin(D(old), D(b))) : t == TY_S64 ? ((int64_t)old < (int64_t)b ? old : b)
                                                                  : (old < b ? old : b);
            break;
        case ATOM_MAX:
            nv = t == TY_F64 ? UD(fmax(D(old), D(b))) : t == TY_S64 ? ((int64_t)old > (int64_t)b ? old : b)
                                                                  : (old > b ? old : b);
            break;
        case ATOM_EXCH: nv = b; break;
        case ATOM_CAS: nv = old == b ? c : old; break;
        case ATOM_AND: nv = old & b; break;
        case ATOM_OR: nv = old | b; break;
        case ATOM_XOR: nv = old ^ b; break;
        default: nv = old; break;
        }
        if (__atomic_compare_exchange_n(q, &old, nv, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return old;
    }
}

