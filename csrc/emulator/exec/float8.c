/* float8.c - the emulator's float8 conversions: the cvt forms cuda_fp8.h compiles to on sm_89 and later */
#include "emulator/exec/exec.h"

#include <math.h>
#include <string.h>

/* One float8 of x (finite, infinite or NaN) as cvt.rn.satfinite makes it, the rules of
 * cuda_fp8.hpp's reference conversion: round to nearest even; past the largest finite
 * value (infinities too) that value with x's sign; a NaN 0x7f whatever its sign and
 * payload (the differential corpus on an H100). */
static unsigned
to_f8(double x, int e5)
{
    const int M = e5 ? 2 : 3, B = e5 ? 15 : 7;
    const unsigned max = e5 ? 0x7b : 0x7e, s = signbit(x) ? 0x80 : 0;
    if (isnan(x))
        return 0x7f; /* any NaN, in both formats: what an H100 makes (not cuda_fp8.hpp's rule) */
    double a = fabs(x);
    if (isinf(a))
        return s | max;
    int e = a == 0 ? -1000 : ilogb(a);
    /* units of the last place: 2**(e - M) for a normal float8, 2**(1 - B - M) below */
    int unit = e >= 1 - B ? e - M : 1 - B - M;
    double t = ldexp(a, -unit), r = floor(t); /* exact: a power-of-two scaling */
    if (t - r > 0.5 || (t - r == 0.5 && fmod(r, 2.0) == 1.0))
        r += 1;
    unsigned code;
    if (e < 1 - B)
        code = (unsigned)r; /* a subnormal; 2**M is the smallest normal's code */
    else if (r >= ldexp(1.0, M + 1))
        code = (unsigned)(e + 1 + B) << M; /* rounded up into the next binade */
    else
        code = (unsigned)(e + B) << M | ((unsigned)r - (1u << M));
    return s | (code > max ? max : code);
}

/* A float8 as a half, exactly; a NaN the GPU's canonical half NaN. */
static unsigned
from_f8(unsigned v, int e5)
{
    if (e5)
        return (v & 0x7f) > 0x7c ? 0x7fff : v << 8;
    if ((v & 0x7f) == 0x7f)
        return 0x7fff;
    unsigned e = (v >> 3) & 0xf, m = v & 7;
    float f = e ? ldexpf((float)(8 + m), (int)e - 10) : ldexpf((float)m, -9);
    return (v & 0x80 ? 0x8000u : 0) | emu_f32_to_f16(f);
}

uint64_t
emu_convert_f8x2(const emu_inst *in, uint64_t a, uint64_t b)
{
    if (in->type == TY_F16X2) { /* from two float8s: the high byte to the high half */
        int e5 = in->type2 == TY_E5M2X2;
        return (uint64_t)from_f8((unsigned)(a >> 8) & 0xff, e5) << 16 | from_f8((unsigned)a & 0xff, e5);
    }
    int e5 = in->type == TY_E5M2X2;
    double hi, lo;
    if (in->type2 == TY_F32) {
        hi = F(a);
        lo = F(b);
    }
    else { /* f16x2: its high half to the high byte */
        hi = emu_f16_to_f32((uint16_t)(a >> 16));
        lo = emu_f16_to_f32((uint16_t)a);
    }
    return (uint64_t)(to_f8(hi, e5) << 8 | to_f8(lo, e5));
}
