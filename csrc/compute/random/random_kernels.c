/* random_kernels.c - the random-number kernels: one generated CUDA C source, compiled once per device, and the draw that launches them
 *
 * Every element is a pure function of (key, counter, position): a thread computes
 * one block (four 64-bit words: Philox4x64-10's, or two of Philox4x32-10's for the
 * kernels named *_x32) per step of a grid-stride loop and
 * writes the elements those words make, so the numbers do not depend on the grid
 * or on how a request is split into calls. Which words a call draws, and how the
 * bit generator moves past them, is philox.c's bookkeeping (numpy's own rules). */
#include "compute/random/philox.h"

#include <string.h>

#define THREADS 256
#define BLOCKS_PER_SM 16 /* two waves of 256-thread blocks: 10% faster than one on an H200 */

#define STR_(x) #x
#define STR(x) STR_(x)

/* One kernel per bit generator: X is false for Philox, true for Philox4x32. */
#define KX(name, body)                                                                        \
    "extern \"C\" __global__ void " name "(const Params p) { constexpr bool X = false; " body   \
    "; }\n"                                                                                   \
    "extern \"C\" __global__ void " name "_x32(const Params p) { constexpr bool X = true; " body \
    "; }\n"
/* The same kernel with another body for Philox4x32, and a kernel for Philox4x32 only. */
#define KX2(name, body, body32)                                                               \
    "extern \"C\" __global__ void " name "(const Params p) { " body "; }\n"                   \
    "extern \"C\" __global__ void " name "_x32(const Params p) { " body32 "; }\n"
#define K32(name, body) "extern \"C\" __global__ void " name "_x32(const Params p) { " body "; }\n"

/* The kernels. Params mirrors ck_rand_params. per_word<T> makes one element of
 * type T from each 64-bit word; per_half one from each 32-bit half, low half first,
 * after an optional pending half (numpy's next_uint32); either from a pair of inputs
 * at once where a transform needs two (Box-Muller, Lemire's redraw). Stores are 16
 * bytes wide (32 for 8-byte halves' elements, 8 and 4 for small types) where the
 * element index allows. */
static const char kernel_source[] =
    "typedef unsigned long long u64;\n"
    "typedef unsigned int u32;\n"
    "struct Params {\n"
    "    u64 out; long long n; u64 ctr[4]; u64 buf[4]; u64 rk[" STR(2 * CUKIT_PHILOX_ROUNDS) "];\n"
    "    double a, b; long long ilow; u64 irange; int pos, head; u32 uinteger; int vec;\n"
    "    double c[8]; u32 ulow, ithresh;\n"
    "};\n"
    /* The words of block b: counter ctr + b (256 bits).
     * The 64 x 64 -> 128-bit products are left to the compiler (mul.lo and mul.hi
     * of u64): that ran faster than writing them as four 32 x 32 -> 64 products
     * with an explicit carry chain (uniform float32 on an H200: 1.86 against 1.50
     * TB/s). */
    "__device__ __forceinline__ void words64(const Params &p, long long b, u64 w[4]) {\n"
    "    u64 c0 = p.ctr[0] + (u64)b, cy = c0 < (u64)b;\n"
    "    u64 c1 = p.ctr[1] + cy; cy &= (u64)(c1 == 0);\n"
    "    u64 c2 = p.ctr[2] + cy; cy &= (u64)(c2 == 0);\n"
    "    u64 c3 = p.ctr[3] + cy;\n"
    "#pragma unroll\n"
    "    for (int r = 0; r < " STR(CUKIT_PHILOX_ROUNDS) "; r++) {\n"
    "        u64 lo0 = c0 * " STR(CUKIT_PHILOX_M0) ", hi0 = __umul64hi(c0, " STR(CUKIT_PHILOX_M0) ");\n"
    "        u64 lo1 = c2 * " STR(CUKIT_PHILOX_M1) ", hi1 = __umul64hi(c2, " STR(CUKIT_PHILOX_M1) ");\n"
    "        c0 = hi1 ^ c1 ^ p.rk[2 * r]; c1 = lo1; c2 = hi0 ^ c3 ^ p.rk[2 * r + 1]; c3 = lo0;\n"
    "    }\n"
    "    w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;\n"
    "}\n"
    /* A thread's steps under Philox4x32: step s is half s & 1 of block s >> 1 (its words
     * 2h and 2h + 1), philox4x32_10 at the 128-bit counter 2 (ctr + (s >> 1)) + (s & 1)
     * = 2 ctr + s, outputs 2j and 2j + 1 in the low and high halves of word j; 32-bit
     * products, native. The counter is set once and moved on by the grid's stride
     * (a 128-bit add) rather than rebuilt from s each step. Block 0 is the host's
     * buffer. */
    /* one Philox4x32 round, keys k0 and k1 (the generator's and the keyed redraws') */
    "__device__ __forceinline__ void ph32_round(u32 &x0, u32 &x1, u32 &x2, u32 &x3, u32 k0, u32 k1) {\n"
    "    u32 hi0 = __umulhi(x0, " STR(CUKIT_PHILOX32_M0) "), lo0 = x0 * " STR(CUKIT_PHILOX32_M0) ";\n"
    "    u32 hi1 = __umulhi(x2, " STR(CUKIT_PHILOX32_M1) "), lo1 = x2 * " STR(CUKIT_PHILOX32_M1) ";\n"
    "    x0 = hi1 ^ x1 ^ k0; x1 = lo1; x2 = hi0 ^ x3 ^ k1; x3 = lo0;\n"
    "}\n"
    "struct Steps32 { u64 lo, hi;\n"
    "    __device__ __forceinline__ Steps32(const Params &p, long long s) {\n"
    "        const u64 l = p.ctr[0] << 1, h = p.ctr[1] << 1 | p.ctr[0] >> 63;\n"
    "        lo = l + (u64)s; hi = h + (u64)(lo < l);\n"
    "    }\n"
    "    __device__ __forceinline__ void next(u64 stride) { lo += stride; hi += (u64)(lo < stride); }\n"
    "    __device__ __forceinline__ void words(const Params &p, long long s, u64 w[2]) const {\n"
    "        if (s < 2) { w[0] = p.buf[2 * s]; w[1] = p.buf[2 * s + 1]; return; }\n"
    "        u32 x0 = (u32)lo, x1 = (u32)(lo >> 32), x2 = (u32)hi, x3 = (u32)(hi >> 32);\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < " STR(CUKIT_PHILOX_ROUNDS) "; r++) {\n"
    "            ph32_round(x0, x1, x2, x3, (u32)p.rk[2 * r], (u32)p.rk[2 * r + 1]);\n"
    "        }\n"
    "        w[0] = (u64)x0 | (u64)x1 << 32; w[1] = (u64)x2 | (u64)x3 << 32;\n"
    "    }\n"
    "};\n"
    "__device__ __forceinline__ void block64(const Params &p, long long b, u64 w[4]) {\n"
    "    if (b == 0) { w[0] = p.buf[0]; w[1] = p.buf[1]; w[2] = p.buf[2]; w[3] = p.buf[3]; return; }\n"
    "    words64(p, b, w);\n"
    "}\n"
    "__device__ __forceinline__ u64 bits(double x) { return (u64)__double_as_longlong(x); }\n"
    "__device__ __forceinline__ u64 bits(float x) { return __float_as_uint(x); }\n"
    "template <class T> __device__ __forceinline__ u64 bits(T x) { return (u64)x; }\n"
    /* K elements at o (K * sizeof(T) bytes, aligned to that or 16) as vector stores. In
     * PTX, so they stay whole: written in C++, the compiler split a 16-byte store into
     * four, sharing them with the edge path's stores, and a warp's stores then touched
     * four times the sectors. */
    "__device__ __forceinline__ void st16(void *o, u32 a, u32 b, u32 c, u32 d) {\n"
    "    asm volatile(\"st.global.v4.b32 [%0], {%1, %2, %3, %4};\" :: \"l\"(o), \"r\"(a), \"r\"(b), \"r\"(c), \"r\"(d) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void st8(void *o, u32 a, u32 b) {\n"
    "    asm volatile(\"st.global.v2.b32 [%0], {%1, %2};\" :: \"l\"(o), \"r\"(a), \"r\"(b) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void st4(void *o, u32 a) {\n"
    "    asm volatile(\"st.global.b32 [%0], %1;\" :: \"l\"(o), \"r\"(a) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void st2(void *o, u32 a) {\n"
    "    asm volatile(\"st.global.b16 [%0], %1;\" :: \"l\"(o), \"h\"((unsigned short)a) : \"memory\");\n"
    "}\n"
    "template <class T, int K> __device__ __forceinline__ void storev(T *o, const T *v) {\n"
    "    u32 x[8] = {0, 0, 0, 0, 0, 0, 0, 0};\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < K; j++) {\n"
    "        u64 e = bits(v[j]);\n"
    "        if (sizeof(T) == 8) { x[2 * j] = (u32)e; x[2 * j + 1] = (u32)(e >> 32); }\n"
    "        else if (sizeof(T) == 4) x[j] = (u32)e;\n"
    "        else if (sizeof(T) == 2) x[j / 2] |= ((u32)e & 0xffffu) << (16 * (j % 2));\n"
    "        else x[0] |= ((u32)e & 0xffu) << (8 * j);\n"
    "    }\n"
    "    const int bytes = K * (int)sizeof(T);\n"
    "    if (bytes == 32) { st16(o, x[0], x[1], x[2], x[3]); st16((char *)o + 16, x[4], x[5], x[6], x[7]); }\n"
    "    else if (bytes == 16) st16(o, x[0], x[1], x[2], x[3]);\n"
    "    else if (bytes == 8) st8(o, x[0], x[1]);\n"
    "    else if (bytes == 4) st4(o, x[0]);\n"
    "    else st2(o, x[0]);\n"
    "}\n"
    /* One element per input (f(x)) or two from a pair of inputs (f(x, y, a, b)). */
    "template <bool PAIRS, class F, class W, class T>\n"
    "__device__ __forceinline__ void apply(const F &f, W x, W y, T &a, T &b) {\n"
    "    if constexpr (PAIRS) f(x, y, a, b); else { a = f(x); b = f(y); }\n"
    "}\n"
    "#define FIRST ((long long)blockIdx.x * blockDim.x + threadIdx.x)\n"
    "#define STRIDE ((long long)gridDim.x * blockDim.x)\n"
    /* Element i is word pos + i. Philox: a thread computes a block of four words a step;
     * Philox4x32: half a block (one philox4x32_10, two words), so that neighbouring
     * threads write neighbouring bytes. F makes one element of a word (f(w)); with
     * PAIRS, two elements of the words 2k and 2k + 1 of a block (f(w0, w1, a, b)),
     * Philox4x32 only: its half block is such a pair. */
    "template <class T, bool X, class F, bool PAIRS = false>\n"
    "__device__ __forceinline__ void per_word(const Params &p, F f) {\n"
    "    T *out = (T *)p.out;\n"
    "    const long long n = p.n;\n"
    "    if (X) {\n"
    "        const long long nsub = (p.pos + n + 1) >> 1;\n"
    "        Steps32 c(p, FIRST);\n"
    "        for (long long s = FIRST; s < nsub; s += STRIDE, c.next((u64)STRIDE)) {\n"
    "            u64 w[2];\n"
    "            c.words(p, s, w);\n"
    "            T v[2];\n"
    "            apply<PAIRS>(f, w[0], w[1], v[0], v[1]);\n"
    "            long long i0 = 2 * s - p.pos;\n"
    "            if (p.vec && i0 >= 0 && i0 + 2 <= n && (i0 & 1) == 0) { storev<T, 2>(out + i0, v); continue; }\n"
    "            if (i0 >= 0 && i0 < n) out[i0] = v[0];\n"
    "            if (i0 + 1 >= 0 && i0 + 1 < n) out[i0 + 1] = v[1];\n"
    "        }\n"
    "        return;\n"
    "    }\n"
    "    const long long nblk = (p.pos + n + 3) >> 2;\n"
    "    const long long align = sizeof(T) == 8 ? 1 : 3;\n"
    "    for (long long b = FIRST; b < nblk; b += STRIDE) {\n"
    "        u64 w[4];\n"
    "        block64(p, b, w);\n"
    "        T v[4];\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < 4; j += 2) apply<PAIRS>(f, w[j], w[j + 1], v[j], v[j + 1]);\n"
    "        long long i0 = 4 * b - p.pos;\n"
    "        if (p.vec && i0 >= 0 && i0 + 4 <= n && (i0 & align) == 0) { storev<T, 4>(out + i0, v); continue; }\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < 4; j++) if (i0 + j >= 0 && i0 + j < n) out[i0 + j] = v[j];\n"
    "    }\n"
    "}\n"
    /* Element i >= head is half 2 * pos + i - head (half 2k: the low 32 bits of word k).
     * F makes one element of a half (f(x)); with PAIRS, the elements of a word's low and
     * high halves from both (f(lo, hi, a, b)): a pending high half (the head) is then
     * drawn with its word's low half, ulow. Philox4x32: four elements a step (16 bytes
     * of float), Philox: eight. */
    "template <class T, bool X, class F, bool PAIRS = false>\n"
    "__device__ __forceinline__ void per_half(const Params &p, F f) {\n"
    "    T *out = (T *)p.out;\n"
    "    const long long n = p.n, m = n - p.head;\n"
    "    if (p.head && FIRST == 0) { T v[2]; apply<PAIRS>(f, p.ulow, p.uinteger, v[0], v[1]); out[0] = v[1]; }\n"
    "    if (X) {\n"
    "        const long long nsub = m > 0 ? (2LL * p.pos + m + 3) >> 2 : 0;\n"
    "        Steps32 c(p, FIRST);\n"
    "        for (long long s = FIRST; s < nsub; s += STRIDE, c.next((u64)STRIDE)) {\n"
    "            u64 w[2];\n"
    "            c.words(p, s, w);\n"
    "            T v[4];\n"
    "            apply<PAIRS>(f, (u32)w[0], (u32)(w[0] >> 32), v[0], v[1]);\n"
    "            apply<PAIRS>(f, (u32)w[1], (u32)(w[1] >> 32), v[2], v[3]);\n"
    "            long long i0 = p.head + 4 * s - 2LL * p.pos;\n"
    "            if (p.vec && i0 >= p.head && i0 + 4 <= n && (i0 & 3) == 0) { storev<T, 4>(out + i0, v); continue; }\n"
    "#pragma unroll\n"
    "            for (int k = 0; k < 4; k++) if (i0 + k >= p.head && i0 + k < n) out[i0 + k] = v[k];\n"
    "        }\n"
    "        return;\n"
    "    }\n"
    "    const long long nblk = m > 0 ? (2LL * p.pos + m + 7) >> 3 : 0;\n"
    "    for (long long b = FIRST; b < nblk; b += STRIDE) {\n"
    "        u64 w[4];\n"
    "        block64(p, b, w);\n"
    "        T v[8];\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < 4; j++) apply<PAIRS>(f, (u32)w[j], (u32)(w[j] >> 32), v[2 * j], v[2 * j + 1]);\n"
    "        long long i0 = p.head + 8 * b - 2LL * p.pos;\n"
    "        if (p.vec && i0 >= p.head && i0 + 8 <= n && (i0 & 3) == 0) {\n"
    "            storev<T, 4>(out + i0, v); storev<T, 4>(out + i0 + 4, v + 4); continue;\n"
    "        }\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < 8; k++) if (i0 + k >= p.head && i0 + k < n) out[i0 + k] = v[k];\n"
    "    }\n"
    "}\n"
    /* The transforms. Uniforms are numpy's: (w >> 11) * 2**-53 and (x >> 8) * 2**-24. */
    "struct Raw { __device__ u64 operator()(u64 w) const { return w; } };\n"
    "__device__ __forceinline__ double unit64(u64 w) { return (double)(w >> 11) * 0x1.0p-53; }\n"
    "__device__ __forceinline__ float unit32(u32 x) { return (float)(x >> 8) * 0x1.0p-24f; }\n"
    /* A = false: the plain draw (a = 0, b = 1), without the two operations. */
    "template <bool A> struct Uniform64 { double a, b;\n"
    "    __device__ double operator()(u64 w) const {\n"
    "        return A ? __dadd_rn(a, __dmul_rn(b, unit64(w))) : unit64(w); } };\n"
    "template <bool A> struct Uniform32 { float a, b;\n"
    "    __device__ float operator()(u32 x) const {\n"
    "        return A ? __fadd_rn(a, __fmul_rn(b, unit32(x))) : unit32(x); } };\n"
    /* Normals by the inverse normal CDF: the sign from the top bit, the tail
     * probability u in (0, 1/2) from the rest. */
    "template <bool A> struct Normal64 { double a, b;\n"
    "    __device__ double operator()(u64 w) const {\n"
    "        double u = ((double)((w >> 10) & ((1ULL << 53) - 1)) + 0.5) * 0x1.0p-54;\n"
    "        double z = normcdfinv(u);\n"
    "        z = (w >> 63) ? -z : z;\n"
    "        return A ? __dadd_rn(a, __dmul_rn(b, z)) : z;\n"
    "    } };\n"
    /* float: z = x * P(w) = sqrt(2) erfinv(x), x = 1 - 2u, w = -log(1 - x * x) =
     * -log(4u(1 - u)); P a polynomial fitted to within 6e-7 relative error: degree 9
     * in w - 4 for w < 8, degree 8 in sqrt(w) - 3.5 beyond (u < 8.4e-5, down to
     * 2**-33). log2 by the hardware's approximation: 4u(1 - u) is never subnormal. */
    /* beyond w = 8; apart and not inlined, so that it stays a branch that one value in
     * 6000 takes (inlined, the compiler computed it for every value: a third of the
     * kernel's work) */
    "__device__ __noinline__ float ndtri_far(float l) {\n"
    "    float t = sqrtf(l * -0.693147181f) - 3.5f, r = 5.56993327e-05f;\n"
    "    r = fmaf(r, t, -0.000283470989f); r = fmaf(r, t, 0.00064272352f);\n"
    "    r = fmaf(r, t, -0.000992616988f); r = fmaf(r, t, 0.00153917319f);\n"
    "    r = fmaf(r, t, -0.00290976837f); r = fmaf(r, t, 0.00463481573f);\n"
    "    r = fmaf(r, t, 1.4246341f); return fmaf(r, t, 4.71708918f);\n"
    "}\n"
    "__device__ __forceinline__ float ndtri_tail(u32 x) {\n"
    "    u32 m = x & 0x7fffffffu;\n"
    "    float u4 = __fmaf_rn((float)m, 0x1.0p-30f, 0x1.0p-31f), q = __fmaf_rn(u4 * -0.25f, u4, u4), l, r;\n"
    "    asm(\"lg2.approx.ftz.f32 %0, %1;\" : \"=f\"(l) : \"f\"(q));\n"
    "    float t = __fmaf_rn(l, -0.693147181f, -4.0f);\n"
    "    r = -1.31279221e-09f;\n"
    "    r = fmaf(r, t, -2.7462038e-08f); r = fmaf(r, t, 3.19055744e-07f);\n"
    "    r = fmaf(r, t, 4.05440488e-07f); r = fmaf(r, t, -2.25063395e-05f);\n"
    "    r = fmaf(r, t, 0.000169723571f); r = fmaf(r, t, -0.000286467519f);\n"
    "    r = fmaf(r, t, -0.0102152806f); r = fmaf(r, t, 0.32294026f); r = fmaf(r, t, 2.6287117f);\n"
    "    if (l < -11.5415603f) r = ndtri_far(l); /* w > 8 */\n"
    "    float z = __fmaf_rn((float)(0x7fffffffu - m), 0x1.0p-31f, 0x1.0p-32f) * r; /* exact near u = 1/2 */\n"
    "    return (x >> 31) ? z : -z;\n"
    "}\n"
    "template <bool A> struct Normal32 { float a, b;\n"
    "    __device__ float operator()(u32 x) const {\n"
    "        float z = ndtri_tail(x);\n"
    "        return A ? __fadd_rn(a, __fmul_rn(b, z)) : z; } };\n"
    /* Philox4x32's normals: Box-Muller (Box and Muller, 1958) on the two halves of a
     * word (float32) or the two words of a half block (float64), both values of each
     * pair used: z0 = r cos(t), z1 = r sin(t), r = sqrt(-2 log u), u in (0, 1] from the
     * first input, t uniform in [-pi, pi) from the second. float32 with the hardware's
     * approximations (lg2, sqrt, sin and cos: one instruction each) and u from all 32
     * bits, so |z| reaches 6.7; float64 in full precision (a log, a sqrt and a cos and
     * sin pair per two values: below) from 53-bit inputs, so |z| reaches 8.5. */
    "template <bool A> struct BoxMuller32 { float a, b;\n"
    "    __device__ void operator()(u32 lo, u32 hi, float &z0, float &z1) const {\n"
    "        float u = __fmaf_rn((float)lo, 0x1.0p-32f, 0x1.0p-33f), l, r, s, c;\n"
    "        asm(\"lg2.approx.ftz.f32 %0, %1;\" : \"=f\"(l) : \"f\"(u));\n"
    "        asm(\"sqrt.approx.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(l * -1.38629436f)); /* -2 ln 2 */\n"
    "        __sincosf((float)(int)hi * 1.46291808e-9f, &s, &c); /* pi * 2**-31 */\n"
    "        z0 = r * c; z1 = r * s;\n"
    "        if (A) { z0 = __fadd_rn(a, __fmul_rn(b, z0)); z1 = __fadd_rn(a, __fmul_rn(b, z1)); }\n"
    "    } };\n"
    /* float64: -2 log(u) for u in [2**-53, 1] (normal numbers, no special cases), as
     * e log(2) + log(m), m in [sqrt(1/2), sqrt(2)): log(m) = 2 atanh(s) = 2s + s z Q(z),
     * s = (m - 1) / (m + 1), z = s * s <= 0.0295; the division by the hardware's
     * reciprocal and two Newton steps. */
    /* The polynomials are Chebyshev fits (tools/fit_normal64.py, mpmath at 50 digits),
     * near minimax: Q of degree 6 (7 terms; |dQ| < 3.2e-16, so log(m) within 2**-57
     * of itself), sin y = y + y z P(z) with P of degree 5 (|dP| < 3.2e-17 with the
     * coefficients rounded to doubles: 2**-55.4 of sin y) and cos y = 1 + z C(z) with C
     * of degree 6 (|dC| < 7e-19 rounded), z = y * y <=
     * (pi/4)**2. The Taylor series before took 10, 8 and 8 terms for the same
     * precision: 6 double operations a pair fewer. In constant memory: an operand of
     * DFMA as they are (as immediates, ptxas loaded each into two registers on every
     * pass of the loop) */
    "__constant__ double ck_atanh_c[7] = {0.1461645097955211, 0.15331721495826012, 0.18182889128412458,\n"
    "    0.22222211134751835, 0.2857142862597575, 0.39999999999899505, 0.666666666666667};\n"
    "__constant__ double ck_sin_c[6] = {1.591812916105078e-10, -2.505113184314626e-08, 2.755731610254353e-06,\n"
    "    -0.00019841269836758557, 0.008333333333330948, -0.16666666666666666};\n"
    "__constant__ double ck_cos_c[7] = {-1.1367998556454631e-11, 2.0875886736391893e-09,\n"
    "    -2.7557315566331455e-07, 2.480158729369343e-05, -0.0013888888888880775, 0.04166666666666664, -0.5};\n"
    "__constant__ double ck_ln2[2] = {0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56};\n"
    "__device__ __forceinline__ double minus2log(double u) {\n"
    "    const long long b = __double_as_longlong(u), mant = b & 0xFFFFFFFFFFFFFLL;\n"
    "    const int big = mant > 0x6A09E667F3BCCLL; /* m > sqrt(2): halve it */\n"
    "    const double e = (double)((int)(b >> 52) - 1023 + big);\n"
    "    const double m = __longlong_as_double(mant | (big ? 0x3FE0000000000000LL : 0x3FF0000000000000LL));\n"
    "    const double f = m - 1.0, d = 2.0 + f;\n"
    "    double y, t;\n"
    "    asm(\"rcp.approx.ftz.f64 %0, %1;\" : \"=d\"(y) : \"d\"(d));\n"
    "    t = __fma_rn(-d, y, 1.0); y = __fma_rn(y, t, y);\n"
    "    t = __fma_rn(-d, y, 1.0); y = __fma_rn(y, t, y);\n"
    "    double s = f * y;\n"
    "    s = __fma_rn(y, __fma_rn(-s, d, f), s);\n"
    "    const double z = s * s;\n"
    "    double q = ck_atanh_c[0];\n"
    "#pragma unroll\n"
    "    for (int i = 1; i < 7; i++) q = __fma_rn(q, z, ck_atanh_c[i]);\n"
    "    const double lm = __fma_rn(s * z, q, 2.0 * s);\n"
    "    /* log(2) in two parts, so that e log(2) keeps its precision */\n"
    "    return -2.0 * __fma_rn(e, ck_ln2[0], __fma_rn(e, ck_ln2[1], lm));\n"
    "}\n"
    /* float64: cos and sin of theta = q pi/2 + y, q the top two bits of w (a quarter
     * turn), y = (f - 1/2) pi/2 in [-pi/4, pi/4) from its low 52 bits f: uniform on the
     * circle. The polynomials above, rotated by q quarter turns. */
    "__device__ __forceinline__ void turn(u64 w, double &c, double &s) {\n"
    "    const double y = (__longlong_as_double((long long)((w & 0xFFFFFFFFFFFFFULL) | 0x3FF0000000000000ULL)) - 1.5)\n"
    "                     * 1.5707963267948966;\n"
    "    const double z = y * y;\n"
    "    double p = ck_sin_c[0], q = ck_cos_c[0];\n"
    "#pragma unroll\n"
    "    for (int i = 1; i < 6; i++) p = __fma_rn(p, z, ck_sin_c[i]);\n"
    "#pragma unroll\n"
    "    for (int i = 1; i < 7; i++) q = __fma_rn(q, z, ck_cos_c[i]);\n"
    "    const double sy = __fma_rn(y * z, p, y), cy = __fma_rn(z, q, 1.0);\n"
    "    const bool quarter = (w >> 62) & 1, half = w >> 63;\n"
    "    c = quarter ? -sy : cy; s = quarter ? cy : sy;\n"
    "    if (half) { c = -c; s = -s; }\n"
    "}\n"
    "template <bool A> struct BoxMuller64 { double a, b;\n"
    "    __device__ void operator()(u64 w0, u64 w1, double &z0, double &z1) const {\n"
    "        double c, s;\n"
    "        const double r = sqrt(minus2log((double)((w0 >> 11) + 1) * 0x1.0p-53));\n"
    "        turn(w1, c, s);\n"
    "        z0 = r * c; z1 = r * s;\n"
    "        if (A) { z0 = __dadd_rn(a, __dmul_rn(b, z0)); z1 = __dadd_rn(a, __dmul_rn(b, z1)); }\n"
    "    } };\n"
    /* Exponentials: -log(1 - U) of the same uniform that random() gives. */
    "struct Exp64 { double b;\n"
    "    __device__ double operator()(u64 w) const { return __dmul_rn(b, -log1p(-unit64(w))); } };\n"
    "struct Exp32 { float b;\n"
    "    __device__ float operator()(u32 x) const { return __fmul_rn(b, -log1pf(-unit32(x))); } };\n"
    /* float16 and bfloat16 (stored as their bits, u16). Uniforms are numpy's rule at
     * the type's own precision, (x >> (32 - P)) * 2**-P with P = 11 or 8 significant
     * bits: every value exact, the largest 1 - 2**-P, so never 1.0 (a float32 uniform
     * rounded to 16 bits would give 1.0 for x >= 2**32 - 2**(31 - P)). low + range * u
     * is computed in float32 and rounded once. Normals and exponentials are the float32
     * draw rounded once to nearest even (bfloat16 in integer arithmetic, as the array
     * math's; float16 by cvt.rn). */
    "template <bool BF> __device__ __forceinline__ unsigned short to16(float f) {\n"
    "    if (BF) {\n"
    "        const u32 u = __float_as_uint(f);\n"
    "        return (u & 0x7fffffffu) > 0x7f800000u ? (unsigned short)(((u >> 16) & 0x8000u) | 0x7fc0u)\n"
    "                                             : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "    }\n"
    "    unsigned short h;\n"
    "    asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"
    "    return h;\n"
    "}\n"
    "template <bool A, bool BF> struct Uniform16 { float a, b;\n"
    "    __device__ unsigned short operator()(u32 x) const {\n"
    "        const int P = BF ? 8 : 11;\n"
    "        const float u = (float)(x >> (32 - P)) * (BF ? 0x1.0p-8f : 0x1.0p-11f);\n"
    "        return to16<BF>(A ? __fadd_rn(a, __fmul_rn(b, u)) : u); } };\n"
    /* a float32 transform F (one value a half, or a pair from two) rounded to 16 bits */
    "template <class F, bool BF> struct To16 { F f;\n"
    "    __device__ unsigned short operator()(u32 x) const { return to16<BF>(f(x)); }\n"
    "    __device__ void operator()(u32 lo, u32 hi, unsigned short &a, unsigned short &b) const {\n"
    "        float x, y; f(lo, hi, x, y); a = to16<BF>(x); b = to16<BF>(y); } };\n"
    /* Integers: low + floor(w * count / 2**64), the high word of a 128-bit product. */
    "template <class T> struct Int { long long low; u64 range;\n"
    "    __device__ T operator()(u64 w) const {\n"
    "        u64 off = range == ~0ULL ? w : __umul64hi(w, range + 1);\n"
    "        return (T)((u64)low + off);\n"
    "    } };\n"
    /* Integers from 32-bit halves (Philox4x32, count = span + 1 <= 2**32): Lemire's
     * multiply-shift, m = x * count (32 x 32 -> 64 bits, one multiply-add), the value
     * low + m >> 32, unless m's low half is below 2**32 mod count (thresh): those x
     * would make some values more likely, and are drawn again from a Philox4x32
     * stream keyed by their word, so every value is equally likely and a value still
     * takes one half of the generator. The pair (lo, hi) is a word's halves. */
    "__device__ __forceinline__ void philox4x32_keyed(u32 c0, u32 c1, u32 c2, u32 c3, u32 k0, u32 k1, u32 x[4]) {\n"
    "#pragma unroll\n"
    "    for (int r = 0; r < " STR(CUKIT_PHILOX_ROUNDS) "; r++) {\n"
    "        ph32_round(c0, c1, c2, c3, k0, k1);\n"
    "        k0 += " STR(CUKIT_PHILOX32_W0) "; k1 += " STR(CUKIT_PHILOX32_W1) ";\n"
    "    }\n"
    "    x[0] = c0; x[1] = c1; x[2] = c2; x[3] = c3;\n"
    "}\n"
    /* apart and not inlined: one value in 2**32 / thresh takes it */
    "__device__ __noinline__ u32 lemire_redraw(u32 lo, u32 hi, u32 side, u32 count, u32 thresh) {\n"
    "    for (u32 k = 0;; k++) {\n"
    "        u32 x[4];\n"
    "        philox4x32_keyed(k, side, 0x243F6A88u, 0x85A308D3u, lo, hi, x);\n"
    "        for (int j = 0; j < 4; j++) {\n"
    "            u64 m = (u64)x[j] * count;\n"
    "            if ((u32)m >= thresh) return (u32)(m >> 32);\n"
    "        }\n"
    "    }\n"
    "}\n"
    /* FULL: count = 2**32, every x its own value */
    "template <class T, bool FULL> struct IntHalf { long long low; u32 span, thresh;\n"
    "    __device__ void operator()(u32 lo, u32 hi, T &a, T &b) const {\n"
    "        if (FULL) { a = (T)((u64)low + lo); b = (T)((u64)low + hi); return; }\n"
    "        const u32 count = span + 1;\n"
    "        u64 m0 = (u64)lo * count, m1 = (u64)hi * count;\n"
    "        u32 v0 = (u32)(m0 >> 32), v1 = (u32)(m1 >> 32);\n"
    "        bool r0 = (u32)m0 < thresh, r1 = (u32)m1 < thresh;\n"
    "        if (r0 | r1) { /* one test for the pair: a branch that is almost never taken */\n"
    "            if (r0) v0 = lemire_redraw(lo, hi, 0, count, thresh);\n"
    "            if (r1) v1 = lemire_redraw(lo, hi, 1, count, thresh);\n"
    "        }\n"
    "        a = (T)((u64)low + v0); b = (T)((u64)low + v1);\n"
    "    } };\n"
    "template <class T> __device__ __forceinline__ void integers_halves(const Params &p) {\n"
    "    if (p.irange == 0xffffffffULL) per_half<T, true, IntHalf<T, true>, true>(p, IntHalf<T, true>{p.ilow, 0, 0});\n"
    "    else per_half<T, true, IntHalf<T, false>, true>(p, IntHalf<T, false>{p.ilow, (u32)p.irange, p.ithresh});\n"
    "}\n"
    /* Poisson. lam < 10: inversion of the CDF at the word's uniform. lam >= 10:
     * Hormann's transformed rejection (PTRS), its (U, V) pairs drawn from a Philox
     * stream keyed by the word, so a value still takes one word of the generator.
     * c: lam, b, a, 1/alpha's log, v_r, log(lam), exp(-lam). */
    "__device__ __forceinline__ void philox_keyed(u64 c0, u64 c1, u64 k0, u64 k1, u64 w[4]) {\n"
    "    u64 c2 = 0, c3 = 0;\n"
    "#pragma unroll\n"
    "    for (int r = 0; r < " STR(CUKIT_PHILOX_ROUNDS) "; r++) {\n"
    "        u64 lo0 = c0 * " STR(CUKIT_PHILOX_M0) ", hi0 = __umul64hi(c0, " STR(CUKIT_PHILOX_M0) ");\n"
    "        u64 lo1 = c2 * " STR(CUKIT_PHILOX_M1) ", hi1 = __umul64hi(c2, " STR(CUKIT_PHILOX_M1) ");\n"
    "        c0 = hi1 ^ c1 ^ k0; c1 = lo1; c2 = hi0 ^ c3 ^ k1; c3 = lo0;\n"
    "        k0 += " STR(CUKIT_PHILOX_W0) "; k1 += " STR(CUKIT_PHILOX_W1) ";\n"
    "    }\n"
    "    w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;\n"
    "}\n"
    /* log(gamma(x)) for x >= 1: Stirling's series from x >= 7, the recurrence below. */
    "__device__ __forceinline__ double loggam(double x) {\n"
    "    double prod = 1.0;\n"
    "    while (x < 7.0) { prod *= x; x += 1.0; }\n"
    "    double r = 1.0 / x, r2 = r * r;\n"
    "    double series = r * (1.0 / 12 - r2 * (1.0 / 360 - r2 * (1.0 / 1260 - r2 * (1.0 / 1680 - r2 / 1188))));\n"
    "    return (x - 0.5) * log(x) - x + 0.91893853320467274178 + series - log(prod);\n"
    "}\n"
    "struct Poisson { double lam, b, a, linvalpha, vr, loglam, emlam;\n"
    "    __device__ long long operator()(u64 w) const {\n"
    "        if (lam < 10.0) {\n"
    "            double u = unit64(w), pk = emlam, f = pk;\n"
    "            long long k = 0;\n"
    "            while (f <= u && k < 256) { k++; pk *= lam / (double)k; f += pk; }\n"
    "            return k;\n"
    "        }\n"
    "        for (u64 n = 0;; n++) {\n"
    "            u64 r[4];\n"
    "            philox_keyed(n, 0, w, 0x6A09E667F3BCC909ULL, r);\n"
    "            for (int j = 0; j < 4; j += 2) {\n"
    "                double U = unit64(r[j]) - 0.5, V = unit64(r[j + 1]), us = 0.5 - fabs(U);\n"
    "                long long k = (long long)floor((2.0 * a / us + b) * U + lam + 0.43);\n"
    "                if (us >= 0.07 && V <= vr) return k;\n"
    "                if (k < 0 || (us < 0.013 && V > us)) continue;\n"
    "                if (log(V) + linvalpha - log(a / (us * us) + b) <=\n"
    "                    -lam + (double)k * loglam - loggam((double)k + 1.0)) return k;\n"
    "            }\n"
    "        }\n"
    "    } };\n"
    /* Permutations: Hoang, Morris and Rogaway's swap-or-not shuffle, a keyed bijection
     * of [0, n) that each element follows alone. Round r pairs x with K_r - x (mod n),
     * K_r uniform in [0, n) (the block computes them first), and swaps the pair when a
     * bit keyed by (the larger of the two, r) is set. */
    "#define MAX_ROUNDS " STR(CUKIT_PERM_MAX_ROUNDS) "\n"
    "struct PermParams { u64 out; long long n; u64 k0, k1; int rounds; };\n"
    "extern \"C\" __global__ void cukit_permutation(const PermParams p) {\n"
    "    __shared__ u64 keys[MAX_ROUNDS];\n"
    "    const u64 n = (u64)p.n;\n"
    "    for (int r = threadIdx.x; r < p.rounds; r += blockDim.x) {\n"
    "        u64 w[4];\n"
    "        philox_keyed((u64)r, 1ULL << 63, p.k0, p.k1, w);\n"
    "        keys[r] = __umul64hi(w[0], n);\n"
    "    }\n"
    "    __syncthreads();\n"
    "    for (long long i = FIRST; i < p.n; i += STRIDE) {\n"
    "        u64 x = (u64)i;\n"
    "        for (int r = 0; r < p.rounds; r++) {\n"
    "            u64 k = keys[r], y = k >= x ? k - x : k + (n - x), w[4];\n"
    "            philox_keyed(x > y ? x : y, (u64)r, p.k0, p.k1, w);\n"
    "            if (w[0] & 1) x = y;\n"
    "        }\n"
    "        ((long long *)p.out)[i] = (long long)x;\n"
    "    }\n"
    "}\n"
    /* dst's row i = src's row perm[i], in units of T. */
    "template <class T> __device__ __forceinline__ void gather(u64 d, u64 s, const long long *perm,\n"
    "                                                       long long rows, long long units) {\n"
    "    T *dst = (T *)d; const T *src = (const T *)s;\n"
    "    for (long long e = FIRST; e < rows * units; e += STRIDE) {\n"
    "        long long row = e / units;\n"
    "        dst[e] = src[perm[row] * units + (e - row * units)];\n"
    "    }\n"
    "}\n"
    "#define GATHER(T, B) extern \"C\" __global__ void cukit_gather_##B(u64 d, u64 s, \\\n"
    "    const long long *perm, long long rows, long long units) { gather<T>(d, s, perm, rows, units); }\n"
    "GATHER(unsigned char, 1) GATHER(unsigned short, 2) GATHER(u32, 4) GATHER(u64, 8) GATHER(uint4, 16)\n"
    /* Each kernel twice: for Philox (4x64) and, named *_x32, for Philox4x32 (written
     * out, so that cukit's signature scanner sees every name) */
    KX("cukit_random_raw", "per_word<u64, X>(p, Raw())")
    KX("cukit_random_f64", "per_word<double, X>(p, Uniform64<false>{0, 1})")
    KX("cukit_uniform_f64", "per_word<double, X>(p, Uniform64<true>{p.a, p.b})")
    KX("cukit_random_f32", "per_half<float, X>(p, Uniform32<false>{0, 1})")
    KX("cukit_uniform_f32", "per_half<float, X>(p, Uniform32<true>{(float)p.a, (float)p.b})")
    /* normals: Philox's by the inverse CDF, Philox4x32's by Box-Muller on pairs */
    KX2("cukit_standard_normal_f64", "per_word<double, false>(p, Normal64<false>{0, 1})",
        "per_word<double, true, BoxMuller64<false>, true>(p, BoxMuller64<false>{0, 1})")
    KX2("cukit_normal_f64", "per_word<double, false>(p, Normal64<true>{p.a, p.b})",
        "per_word<double, true, BoxMuller64<true>, true>(p, BoxMuller64<true>{p.a, p.b})")
    KX2("cukit_standard_normal_f32", "per_half<float, false>(p, Normal32<false>{0, 1})",
        "per_half<float, true, BoxMuller32<false>, true>(p, BoxMuller32<false>{0, 1})")
    KX2("cukit_normal_f32", "per_half<float, false>(p, Normal32<true>{(float)p.a, (float)p.b})",
        "per_half<float, true, BoxMuller32<true>, true>(p, BoxMuller32<true>{(float)p.a, (float)p.b})")
    /* float16 and bfloat16: the float32 draws rounded once (To16); uniforms at their
     * own precision (Uniform16) */
    KX("cukit_random_f16", "per_half<unsigned short, X>(p, Uniform16<false, false>{0, 1})")
    KX("cukit_uniform_f16", "per_half<unsigned short, X>(p, Uniform16<true, false>{(float)p.a, (float)p.b})")
    KX("cukit_random_bf16", "per_half<unsigned short, X>(p, Uniform16<false, true>{0, 1})")
    KX("cukit_uniform_bf16", "per_half<unsigned short, X>(p, Uniform16<true, true>{(float)p.a, (float)p.b})")
    KX2("cukit_standard_normal_f16",
        "per_half<unsigned short, false>(p, To16<Normal32<false>, false>{{0, 1}})",
        "per_half<unsigned short, true, To16<BoxMuller32<false>, false>, true>(p, To16<BoxMuller32<false>, false>{{0, 1}})")
    KX2("cukit_normal_f16",
        "per_half<unsigned short, false>(p, To16<Normal32<true>, false>{{(float)p.a, (float)p.b}})",
        "per_half<unsigned short, true, To16<BoxMuller32<true>, false>, true>(p, To16<BoxMuller32<true>, false>{{(float)p.a, (float)p.b}})")
    KX2("cukit_standard_normal_bf16",
        "per_half<unsigned short, false>(p, To16<Normal32<false>, true>{{0, 1}})",
        "per_half<unsigned short, true, To16<BoxMuller32<false>, true>, true>(p, To16<BoxMuller32<false>, true>{{0, 1}})")
    KX2("cukit_normal_bf16",
        "per_half<unsigned short, false>(p, To16<Normal32<true>, true>{{(float)p.a, (float)p.b}})",
        "per_half<unsigned short, true, To16<BoxMuller32<true>, true>, true>(p, To16<BoxMuller32<true>, true>{{(float)p.a, (float)p.b}})")
    KX("cukit_exponential_f16", "per_half<unsigned short, X>(p, To16<Exp32, false>{{(float)p.b}})")
    KX("cukit_exponential_bf16", "per_half<unsigned short, X>(p, To16<Exp32, true>{{(float)p.b}})")
    KX("cukit_exponential_f64", "per_word<double, X>(p, Exp64{p.b})")
    KX("cukit_exponential_f32", "per_half<float, X>(p, Exp32{(float)p.b})")
    KX("cukit_integers_1", "per_word<unsigned char, X>(p, Int<unsigned char>{p.ilow, p.irange})")
    KX("cukit_integers_2", "per_word<unsigned short, X>(p, Int<unsigned short>{p.ilow, p.irange})")
    KX("cukit_integers_4", "per_word<u32, X>(p, Int<u32>{p.ilow, p.irange})")
    KX("cukit_integers_8", "per_word<u64, X>(p, Int<u64>{p.ilow, p.irange})")
    /* integers from one 32-bit half each: Philox4x32, counts up to 2**32 */
    K32("cukit_integers_h1", "integers_halves<unsigned char>(p)")
    K32("cukit_integers_h2", "integers_halves<unsigned short>(p)")
    K32("cukit_integers_h4", "integers_halves<u32>(p)")
    K32("cukit_integers_h8", "integers_halves<u64>(p)")
    KX("cukit_poisson", "per_word<long long, X>(p, Poisson{p.c[0], p.c[1], p.c[2], p.c[3], p.c[4], p.c[5], p.c[6]})");

/* By ck_rand_kind: the kernels for the plain draw (a = 0, b = 1) and for any a
 * and b, each for Philox and (named *_x32) for Philox4x32, and whether they draw 32-bit
 * halves. */
#define KIND(plain, affine, halves) {{{plain, affine}, {plain "_x32", affine "_x32"}}, halves}
static const struct {
    const char *names[2][2]; /* [x32][affine] */
    int halves;
} kinds[CK_RAND_COUNT] = {
    [CK_RAND_RAW] = KIND("cukit_random_raw", "cukit_random_raw", 0),
    [CK_RAND_U64] = KIND("cukit_random_f64", "cukit_uniform_f64", 0),
    [CK_RAND_U32] = KIND("cukit_random_f32", "cukit_uniform_f32", 1),
    [CK_RAND_N64] = KIND("cukit_standard_normal_f64", "cukit_normal_f64", 0),
    [CK_RAND_N32] = KIND("cukit_standard_normal_f32", "cukit_normal_f32", 1),
    [CK_RAND_E64] = KIND("cukit_exponential_f64", "cukit_exponential_f64", 0),
    [CK_RAND_E32] = KIND("cukit_exponential_f32", "cukit_exponential_f32", 1),
    [CK_RAND_U16] = KIND("cukit_random_f16", "cukit_uniform_f16", 1),
    [CK_RAND_UBF16] = KIND("cukit_random_bf16", "cukit_uniform_bf16", 1),
    [CK_RAND_N16] = KIND("cukit_standard_normal_f16", "cukit_normal_f16", 1),
    [CK_RAND_NBF16] = KIND("cukit_standard_normal_bf16", "cukit_normal_bf16", 1),
    [CK_RAND_E16] = KIND("cukit_exponential_f16", "cukit_exponential_f16", 1),
    [CK_RAND_EBF16] = KIND("cukit_exponential_bf16", "cukit_exponential_bf16", 1),
    [CK_RAND_I8] = KIND("cukit_integers_1", "cukit_integers_1", 0),
    [CK_RAND_I16] = KIND("cukit_integers_2", "cukit_integers_2", 0),
    [CK_RAND_I32] = KIND("cukit_integers_4", "cukit_integers_4", 0),
    [CK_RAND_I64] = KIND("cukit_integers_8", "cukit_integers_8", 0),
    [CK_RAND_POISSON] = KIND("cukit_poisson", "cukit_poisson", 0),
    /* Philox4x32 only (generator.c picks them for it) */
    [CK_RAND_IH8] = KIND("cukit_integers_h1", "cukit_integers_h1", 1),
    [CK_RAND_IH16] = KIND("cukit_integers_h2", "cukit_integers_h2", 1),
    [CK_RAND_IH32] = KIND("cukit_integers_h4", "cukit_integers_h4", 1),
    [CK_RAND_IH64] = KIND("cukit_integers_h8", "cukit_integers_h8", 1),
};

/* The source, for tests that compile it without a device (cukit._random_source). */
const char *
ck_random_kernel_source(void)
{
    return kernel_source;
}

int
ck_random_launch(cukit_Device *dev, const char *name, long long work, void **args, CUstream h)
{
    CUfunction f;
    long long blocks = (work + THREADS - 1) / THREADS, most = (long long)dev->sm_count * BLOCKS_PER_SM;
    if (blocks > most)
        blocks = most;
    if (blocks < 1)
        blocks = 1;
    if (cukit_builtin_kernel(dev, &dev->st->compute->random_modules, kernel_source, "cukit_random.cu", name,
                             &f) < 0)
        return -1;
    return cukit_builtin_launch(dev, f, (unsigned)blocks, 1, THREADS, 1, h, args);
}

/* ------------------------------------------------------------------ arguments */

/* size= : None (one element, 0-d), an int, or a tuple of ints. 0 / -1. */
static int
parse_size(PyObject *size, Py_ssize_t *shape, int *ndim, const char *who)
{
    *ndim = 0;
    if (size == NULL || size == Py_None)
        return 0;
    PyObject *seq = PyIndex_Check(size) ? PyTuple_Pack(1, size)
                                        : PySequence_Fast(size, "size must be None, an int or a "
                                                                "tuple of ints");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int rc = 0;
    if (n > CUKIT_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "%s: size has %zd dimensions; cukit allows at most %d",
                     who, n, CUKIT_MAXDIM);
        rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        Py_ssize_t v = PyIndex_Check(item) ? PyNumber_AsSsize_t(item, PyExc_ValueError) : -2;
        if (v == -2 && !PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "%s: size must be None, an int or a tuple of ints, "
                         "got %R", who, size);
            rc = -1;
        }
        else if (v == -1 && PyErr_Occurred()) {
            rc = -1;
        }
        else if (v < 0) {
            PyErr_Format(PyExc_ValueError, "%s: negative dimensions are not allowed (size=%R)",
                         who, size);
            rc = -1;
        }
        else {
            shape[i] = v;
        }
    }
    Py_DECREF(seq);
    *ndim = (int)n;
    return rc;
}

/* out= checked for a draw of `dtype` and (when size was given) shape. 0 / -1. */
static int
check_out(cukit_state *st, cukit_Array *a, PyObject *dtype, int sized, int ndim,
          const Py_ssize_t *shape, const char *who)
{
    if (!cukit_array_live(a))
        return cukit_freed_error();
    if (a->flags & CUKIT_ARRAY_READONLY) {
        PyErr_Format(PyExc_ValueError, "%s: out is read-only (imported as such); pass a "
                     "writable array", who);
        return -1;
    }
    if (!(a->flags & CUKIT_ARRAY_C_CONTIG)) {
        PyErr_Format(PyExc_ValueError, "%s: out must be C-contiguous; draw into a new array "
                     "and copy it into the view (out[...] = draw)", who);
        return -1;
    }
    int same = PyObject_RichCompareBool(a->dtype, dtype, Py_EQ);
    if (same < 0)
        return -1;
    if (!same) {
        PyErr_Format(PyExc_TypeError, "%s: out has dtype %S but the draw is %S; pass "
                     "dtype=%S or an out of dtype %S", who, a->dtype, dtype, a->dtype, dtype);
        return -1;
    }
    int match = ndim == a->ndim;
    for (int i = 0; match && i < ndim; i++)
        match = shape[i] == a->shape[i];
    if (sized && !match) {
        PyObject *want = cukit_array_shape(a);
        if (want)
            PyErr_Format(PyExc_ValueError, "%s: size must match out.shape when used together "
                         "(out.shape is %S)", who, want);
        Py_XDECREF(want);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ the draw */

PyObject *
ck_random_draw(ck_Philox *bg, ck_rand_kind kind, PyObject *dtype, PyObject *size,
                  PyObject *out, PyObject *stream, ck_rand_params *p, const char *who)
{
    cukit_state *st = bg->st;
    Py_ssize_t shape[CUKIT_MAXDIM];
    int ndim;
    if (parse_size(size, shape, &ndim, who) < 0)
        return NULL;
    cukit_Array *a;
    if (out != NULL && out != Py_None) {
        if (!Py_IS_TYPE(out, st->ArrayType)) {
            PyErr_Format(PyExc_TypeError, "%s: out must be a cukit.Array, got %.200s (for host "
                         "data draw into a device array and .get() it)", who,
                         Py_TYPE(out)->tp_name);
            return NULL;
        }
        a = (cukit_Array *)out;
        if (check_out(st, a, dtype, size != NULL && size != Py_None, ndim, shape, who) < 0)
            return NULL;
        Py_INCREF(a);
    }
    else {
        cukit_Device *dev = cukit_device_current(st);
        a = dev ? cukit_array_create(st, dev, ndim, shape, dtype) : NULL;
        if (a == NULL)
            return NULL;
    }
    CUstream h;
    int64_t n = a->size;
    if (cukit_stream_handle(st, stream, a->device, &h) < 0 ||
        cukit_capture_keep(st, stream, (PyObject *)a) < 0) { /* a graph writes it */
        Py_DECREF(a);
        return NULL;
    }
    if (n == 0)
        return (PyObject *)a;
    /* Keep the state to put back if the launch fails: only what was drawn moves it. */
    ck_Philox saved = *bg;
    long long nblk;
    p->out = cukit_array_ptr(a);
    p->n = n;
    p->vec = p->out % 16 == 0;
    if (kinds[kind].halves) {
        ck_philox_take32(bg, n, p);
        nblk = (2LL * p->pos + (n - p->head) + 7) / 8;
    }
    else {
        ck_philox_take64(bg, n, p);
        p->head = 0;
        nblk = (p->pos + n + 3) / 4;
    }
    if (bg->x32) /* a thread computes half a block a step */
        nblk *= 2;
    void *args[] = {p};
    const char *name = kinds[kind].names[bg->x32][!(p->a == 0.0 && p->b == 1.0)];
    if (ck_random_launch(a->device, name, nblk, args, h) < 0) {
        memcpy(bg->ctr, saved.ctr, sizeof bg->ctr);
        memcpy(bg->buffer, saved.buffer, sizeof bg->buffer);
        bg->buffer_pos = saved.buffer_pos;
        bg->has_uint32 = saved.has_uint32;
        bg->uinteger = saved.uinteger;
        bg->ulow = saved.ulow;
        Py_DECREF(a);
        return NULL;
    }
    return (PyObject *)a;
}
