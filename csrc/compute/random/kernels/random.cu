// random.cu - the random-number kernels (compute/random/random_kernels.c launches them):
// numpy's distributions over Philox4x64-10 and (kernels named *_x32) Philox4x32-10.
// params: CUKIT_PHILOX_ROUNDS=10 CUKIT_PHILOX_M0=0xD2E7470EE14C6C93ull CUKIT_PHILOX_M1=0xCA5A826395121157ull CUKIT_PHILOX_W0=0x9E3779B97F4A7C15ull CUKIT_PHILOX_W1=0xBB67AE8584CAA73Bull CUKIT_PHILOX32_M0=0xD2511F53u CUKIT_PHILOX32_M1=0xCD9E8D57u CUKIT_PHILOX32_W0=0x9E3779B9u CUKIT_PHILOX32_W1=0xBB67AE85u CUKIT_PERM_MAX_ROUNDS=832
//
// random_kernels.c writes the Philox constants in front (philox.h's, which the host's
// bookkeeping shares) and compiles one kernel at a time (CUKIT_WANT: a first draw waits
// for its own kernel, not the 62 of the file; a KX pair compiles together).
// Params mirrors ck_rand_params. per_word<T> makes one element of
// type T from each 64-bit word; per_half one from each 32-bit half, low half first,
// after an optional pending half (numpy's next_uint32); either from a pair of inputs
// at once where a transform needs two (Box-Muller, Lemire's redraw). Stores are 16
// bytes wide (32 for 8-byte halves' elements, 8 and 4 for small types) where the
// element index allows.
#include "../../../compile/kernels/one_kernel.cuh"
typedef unsigned long long u64;
typedef unsigned int u32;
struct Params {
    u64 out; long long n; u64 ctr[4]; u64 buf[4]; u64 rk[2 * CUKIT_PHILOX_ROUNDS];
    double a, b; long long ilow; u64 irange; int pos, head; u32 uinteger; int vec;
    double c[8]; u32 ulow, ithresh;
};
__device__ __forceinline__ void words64(const Params &p, long long b, u64 w[4]) {
    u64 c0 = p.ctr[0] + (u64)b, cy = c0 < (u64)b;
    u64 c1 = p.ctr[1] + cy; cy &= (u64)(c1 == 0);
    u64 c2 = p.ctr[2] + cy; cy &= (u64)(c2 == 0);
    u64 c3 = p.ctr[3] + cy;
#pragma unroll
    for (int r = 0; r < CUKIT_PHILOX_ROUNDS; r++) {
        u64 lo0 = c0 * CUKIT_PHILOX_M0, hi0 = __umul64hi(c0, CUKIT_PHILOX_M0);
        u64 lo1 = c2 * CUKIT_PHILOX_M1, hi1 = __umul64hi(c2, CUKIT_PHILOX_M1);
        c0 = hi1 ^ c1 ^ p.rk[2 * r]; c1 = lo1; c2 = hi0 ^ c3 ^ p.rk[2 * r + 1]; c3 = lo0;
    }
    w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;
}
__device__ __forceinline__ void ph32_round(u32 &x0, u32 &x1, u32 &x2, u32 &x3, u32 k0, u32 k1) {
    u32 hi0 = __umulhi(x0, CUKIT_PHILOX32_M0), lo0 = x0 * CUKIT_PHILOX32_M0;
    u32 hi1 = __umulhi(x2, CUKIT_PHILOX32_M1), lo1 = x2 * CUKIT_PHILOX32_M1;
    x0 = hi1 ^ x1 ^ k0; x1 = lo1; x2 = hi0 ^ x3 ^ k1; x3 = lo0;
}
struct Steps32 { u64 lo, hi;
    __device__ __forceinline__ Steps32(const Params &p, long long s) {
        const u64 l = p.ctr[0] << 1, h = p.ctr[1] << 1 | p.ctr[0] >> 63;
        lo = l + (u64)s; hi = h + (u64)(lo < l);
    }
    __device__ __forceinline__ void next(u64 stride) { lo += stride; hi += (u64)(lo < stride); }
    __device__ __forceinline__ void words(const Params &p, long long s, u64 w[2]) const {
        if (s < 2) { w[0] = p.buf[2 * s]; w[1] = p.buf[2 * s + 1]; return; }
        u32 x0 = (u32)lo, x1 = (u32)(lo >> 32), x2 = (u32)hi, x3 = (u32)(hi >> 32);
#pragma unroll
        for (int r = 0; r < CUKIT_PHILOX_ROUNDS; r++) {
            ph32_round(x0, x1, x2, x3, (u32)p.rk[2 * r], (u32)p.rk[2 * r + 1]);
        }
        w[0] = (u64)x0 | (u64)x1 << 32; w[1] = (u64)x2 | (u64)x3 << 32;
    }
};
__device__ __forceinline__ void block64(const Params &p, long long b, u64 w[4]) {
    if (b == 0) { w[0] = p.buf[0]; w[1] = p.buf[1]; w[2] = p.buf[2]; w[3] = p.buf[3]; return; }
    words64(p, b, w);
}
__device__ __forceinline__ u64 bits(double x) { return (u64)__double_as_longlong(x); }
__device__ __forceinline__ u64 bits(float x) { return __float_as_uint(x); }
template <class T> __device__ __forceinline__ u64 bits(T x) { return (u64)x; }
__device__ __forceinline__ void st16(void *o, u32 a, u32 b, u32 c, u32 d) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" :: "l"(o), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
__device__ __forceinline__ void st8(void *o, u32 a, u32 b) {
    asm volatile("st.global.v2.b32 [%0], {%1, %2};" :: "l"(o), "r"(a), "r"(b) : "memory");
}
__device__ __forceinline__ void st4(void *o, u32 a) {
    asm volatile("st.global.b32 [%0], %1;" :: "l"(o), "r"(a) : "memory");
}
__device__ __forceinline__ void st2(void *o, u32 a) {
    asm volatile("st.global.b16 [%0], %1;" :: "l"(o), "h"((unsigned short)a) : "memory");
}
template <class T, int K> __device__ __forceinline__ void storev(T *o, const T *v) {
    u32 x[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int j = 0; j < K; j++) {
        u64 e = bits(v[j]);
        if (sizeof(T) == 8) { x[2 * j] = (u32)e; x[2 * j + 1] = (u32)(e >> 32); }
        else if (sizeof(T) == 4) x[j] = (u32)e;
        else if (sizeof(T) == 2) x[j / 2] |= ((u32)e & 0xffffu) << (16 * (j % 2));
        else x[0] |= ((u32)e & 0xffu) << (8 * j);
    }
    const int bytes = K * (int)sizeof(T);
    if (bytes == 32) { st16(o, x[0], x[1], x[2], x[3]); st16((char *)o + 16, x[4], x[5], x[6], x[7]); }
    else if (bytes == 16) st16(o, x[0], x[1], x[2], x[3]);
    else if (bytes == 8) st8(o, x[0], x[1]);
    else if (bytes == 4) st4(o, x[0]);
    else st2(o, x[0]);
}
template <bool PAIRS, class F, class W, class T>
__device__ __forceinline__ void apply(const F &f, W x, W y, T &a, T &b) {
    if constexpr (PAIRS) f(x, y, a, b); else { a = f(x); b = f(y); }
}
#define FIRST ((long long)blockIdx.x * blockDim.x + threadIdx.x)
#define STRIDE ((long long)gridDim.x * blockDim.x)
template <class T, bool X, class F, bool PAIRS = false>
__device__ __forceinline__ void per_word(const Params &p, F f) {
    T *out = (T *)p.out;
    const long long n = p.n;
    if (X) {
        const long long nsub = (p.pos + n + 1) >> 1;
        Steps32 c(p, FIRST);
        for (long long s = FIRST; s < nsub; s += STRIDE, c.next((u64)STRIDE)) {
            u64 w[2];
            c.words(p, s, w);
            T v[2];
            apply<PAIRS>(f, w[0], w[1], v[0], v[1]);
            long long i0 = 2 * s - p.pos;
            if (p.vec && i0 >= 0 && i0 + 2 <= n && (i0 & 1) == 0) { storev<T, 2>(out + i0, v); continue; }
            if (i0 >= 0 && i0 < n) out[i0] = v[0];
            if (i0 + 1 >= 0 && i0 + 1 < n) out[i0 + 1] = v[1];
        }
        return;
    }
    const long long nblk = (p.pos + n + 3) >> 2;
    const long long align = sizeof(T) == 8 ? 1 : 3;
    for (long long b = FIRST; b < nblk; b += STRIDE) {
        u64 w[4];
        block64(p, b, w);
        T v[4];
#pragma unroll
        for (int j = 0; j < 4; j += 2) apply<PAIRS>(f, w[j], w[j + 1], v[j], v[j + 1]);
        long long i0 = 4 * b - p.pos;
        if (p.vec && i0 >= 0 && i0 + 4 <= n && (i0 & align) == 0) { storev<T, 4>(out + i0, v); continue; }
#pragma unroll
        for (int j = 0; j < 4; j++) if (i0 + j >= 0 && i0 + j < n) out[i0 + j] = v[j];
    }
}
template <class T, bool X, class F, bool PAIRS = false>
__device__ __forceinline__ void per_half(const Params &p, F f) {
    T *out = (T *)p.out;
    const long long n = p.n, m = n - p.head;
    if (p.head && FIRST == 0) { T v[2]; apply<PAIRS>(f, p.ulow, p.uinteger, v[0], v[1]); out[0] = v[1]; }
    if (X) {
        const long long nsub = m > 0 ? (2LL * p.pos + m + 3) >> 2 : 0;
        Steps32 c(p, FIRST);
        for (long long s = FIRST; s < nsub; s += STRIDE, c.next((u64)STRIDE)) {
            u64 w[2];
            c.words(p, s, w);
            T v[4];
            apply<PAIRS>(f, (u32)w[0], (u32)(w[0] >> 32), v[0], v[1]);
            apply<PAIRS>(f, (u32)w[1], (u32)(w[1] >> 32), v[2], v[3]);
            long long i0 = p.head + 4 * s - 2LL * p.pos;
            if (p.vec && i0 >= p.head && i0 + 4 <= n && (i0 & 3) == 0) { storev<T, 4>(out + i0, v); continue; }
#pragma unroll
            for (int k = 0; k < 4; k++) if (i0 + k >= p.head && i0 + k < n) out[i0 + k] = v[k];
        }
        return;
    }
    const long long nblk = m > 0 ? (2LL * p.pos + m + 7) >> 3 : 0;
    for (long long b = FIRST; b < nblk; b += STRIDE) {
        u64 w[4];
        block64(p, b, w);
        T v[8];
#pragma unroll
        for (int j = 0; j < 4; j++) apply<PAIRS>(f, (u32)w[j], (u32)(w[j] >> 32), v[2 * j], v[2 * j + 1]);
        long long i0 = p.head + 8 * b - 2LL * p.pos;
        if (p.vec && i0 >= p.head && i0 + 8 <= n && (i0 & 3) == 0) {
            storev<T, 4>(out + i0, v); storev<T, 4>(out + i0 + 4, v + 4); continue;
        }
#pragma unroll
        for (int k = 0; k < 8; k++) if (i0 + k >= p.head && i0 + k < n) out[i0 + k] = v[k];
    }
}
struct Raw { __device__ u64 operator()(u64 w) const { return w; } };
__device__ __forceinline__ double unit64(u64 w) { return (double)(w >> 11) * 0x1.0p-53; }
__device__ __forceinline__ float unit32(u32 x) { return (float)(x >> 8) * 0x1.0p-24f; }
template <bool A> struct Uniform64 { double a, b;
    __device__ double operator()(u64 w) const {
        return A ? __dadd_rn(a, __dmul_rn(b, unit64(w))) : unit64(w); } };
template <bool A> struct Uniform32 { float a, b;
    __device__ float operator()(u32 x) const {
        return A ? __fadd_rn(a, __fmul_rn(b, unit32(x))) : unit32(x); } };
template <bool A> struct Normal64 { double a, b;
    __device__ double operator()(u64 w) const {
        double u = ((double)((w >> 10) & ((1ULL << 53) - 1)) + 0.5) * 0x1.0p-54;
        double z = normcdfinv(u);
        z = (w >> 63) ? -z : z;
        return A ? __dadd_rn(a, __dmul_rn(b, z)) : z;
    } };
__device__ __noinline__ float ndtri_far(float l) {
    float t = sqrtf(l * -0.693147181f) - 3.5f, r = 5.56993327e-05f;
    r = fmaf(r, t, -0.000283470989f); r = fmaf(r, t, 0.00064272352f);
    r = fmaf(r, t, -0.000992616988f); r = fmaf(r, t, 0.00153917319f);
    r = fmaf(r, t, -0.00290976837f); r = fmaf(r, t, 0.00463481573f);
    r = fmaf(r, t, 1.4246341f); return fmaf(r, t, 4.71708918f);
}
__device__ __forceinline__ float ndtri_tail(u32 x) {
    u32 m = x & 0x7fffffffu;
    float u4 = __fmaf_rn((float)m, 0x1.0p-30f, 0x1.0p-31f), q = __fmaf_rn(u4 * -0.25f, u4, u4), l, r;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(l) : "f"(q));
    float t = __fmaf_rn(l, -0.693147181f, -4.0f);
    r = -1.31279221e-09f;
    r = fmaf(r, t, -2.7462038e-08f); r = fmaf(r, t, 3.19055744e-07f);
    r = fmaf(r, t, 4.05440488e-07f); r = fmaf(r, t, -2.25063395e-05f);
    r = fmaf(r, t, 0.000169723571f); r = fmaf(r, t, -0.000286467519f);
    r = fmaf(r, t, -0.0102152806f); r = fmaf(r, t, 0.32294026f); r = fmaf(r, t, 2.6287117f);
    if (l < -11.5415603f) r = ndtri_far(l); /* w > 8 */
    float z = __fmaf_rn((float)(0x7fffffffu - m), 0x1.0p-31f, 0x1.0p-32f) * r; /* exact near u = 1/2 */
    return (x >> 31) ? z : -z;
}
template <bool A> struct Normal32 { float a, b;
    __device__ float operator()(u32 x) const {
        float z = ndtri_tail(x);
        return A ? __fadd_rn(a, __fmul_rn(b, z)) : z; } };
template <bool A> struct BoxMuller32 { float a, b;
    __device__ void operator()(u32 lo, u32 hi, float &z0, float &z1) const {
        float u = __fmaf_rn((float)lo, 0x1.0p-32f, 0x1.0p-33f), l, r, s, c;
        asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(l) : "f"(u));
        asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(l * -1.38629436f)); /* -2 ln 2 */
        __sincosf((float)(int)hi * 1.46291808e-9f, &s, &c); /* pi * 2**-31 */
        z0 = r * c; z1 = r * s;
        if (A) { z0 = __fadd_rn(a, __fmul_rn(b, z0)); z1 = __fadd_rn(a, __fmul_rn(b, z1)); }
    } };
__constant__ double ck_atanh_c[7] = {0.1461645097955211, 0.15331721495826012, 0.18182889128412458,
    0.22222211134751835, 0.2857142862597575, 0.39999999999899505, 0.666666666666667};
__constant__ double ck_sin_c[6] = {1.591812916105078e-10, -2.505113184314626e-08, 2.755731610254353e-06,
    -0.00019841269836758557, 0.008333333333330948, -0.16666666666666666};
__constant__ double ck_cos_c[7] = {-1.1367998556454631e-11, 2.0875886736391893e-09,
    -2.7557315566331455e-07, 2.480158729369343e-05, -0.0013888888888880775, 0.04166666666666664, -0.5};
__constant__ double ck_ln2[2] = {0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56};
__device__ __forceinline__ double minus2log(double u) {
    const long long b = __double_as_longlong(u), mant = b & 0xFFFFFFFFFFFFFLL;
    const int big = mant > 0x6A09E667F3BCCLL; /* m > sqrt(2): halve it */
    const double e = (double)((int)(b >> 52) - 1023 + big);
    const double m = __longlong_as_double(mant | (big ? 0x3FE0000000000000LL : 0x3FF0000000000000LL));
    const double f = m - 1.0, d = 2.0 + f;
    double y, t;
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(d));
    t = __fma_rn(-d, y, 1.0); y = __fma_rn(y, t, y);
    t = __fma_rn(-d, y, 1.0); y = __fma_rn(y, t, y);
    double s = f * y;
    s = __fma_rn(y, __fma_rn(-s, d, f), s);
    const double z = s * s;
    double q = ck_atanh_c[0];
#pragma unroll
    for (int i = 1; i < 7; i++) q = __fma_rn(q, z, ck_atanh_c[i]);
    const double lm = __fma_rn(s * z, q, 2.0 * s);
    /* log(2) in two parts, so that e log(2) keeps its precision */
    return -2.0 * __fma_rn(e, ck_ln2[0], __fma_rn(e, ck_ln2[1], lm));
}
__device__ __forceinline__ void turn(u64 w, double &c, double &s) {
    const double y = (__longlong_as_double((long long)((w & 0xFFFFFFFFFFFFFULL) | 0x3FF0000000000000ULL)) - 1.5)
                     * 1.5707963267948966;
    const double z = y * y;
    double p = ck_sin_c[0], q = ck_cos_c[0];
#pragma unroll
    for (int i = 1; i < 6; i++) p = __fma_rn(p, z, ck_sin_c[i]);
#pragma unroll
    for (int i = 1; i < 7; i++) q = __fma_rn(q, z, ck_cos_c[i]);
    const double sy = __fma_rn(y * z, p, y), cy = __fma_rn(z, q, 1.0);
    const bool quarter = (w >> 62) & 1, flip = w >> 63;
    c = quarter ? -sy : cy; s = quarter ? cy : sy;
    if (flip) { c = -c; s = -s; }
}
template <bool A> struct BoxMuller64 { double a, b;
    __device__ void operator()(u64 w0, u64 w1, double &z0, double &z1) const {
        double c, s;
        const double r = sqrt(minus2log((double)((w0 >> 11) + 1) * 0x1.0p-53));
        turn(w1, c, s);
        z0 = r * c; z1 = r * s;
        if (A) { z0 = __dadd_rn(a, __dmul_rn(b, z0)); z1 = __dadd_rn(a, __dmul_rn(b, z1)); }
    } };
struct Exp64 { double b;
    __device__ double operator()(u64 w) const { return __dmul_rn(b, -log1p(-unit64(w))); } };
struct Exp32 { float b;
    __device__ float operator()(u32 x) const { return __fmul_rn(b, -log1pf(-unit32(x))); } };
template <bool BF> __device__ __forceinline__ unsigned short to16(float f) {
    if (BF) {
        const u32 u = __float_as_uint(f);
        return (u & 0x7fffffffu) > 0x7f800000u ? (unsigned short)(((u >> 16) & 0x8000u) | 0x7fc0u)
                                             : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
template <bool A, bool BF> struct Uniform16 { float a, b;
    __device__ unsigned short operator()(u32 x) const {
        const int P = BF ? 8 : 11;
        const float u = (float)(x >> (32 - P)) * (BF ? 0x1.0p-8f : 0x1.0p-11f);
        return to16<BF>(A ? __fadd_rn(a, __fmul_rn(b, u)) : u); } };
template <class F, bool BF> struct To16 { F f;
    __device__ unsigned short operator()(u32 x) const { return to16<BF>(f(x)); }
    __device__ void operator()(u32 lo, u32 hi, unsigned short &a, unsigned short &b) const {
        float x, y; f(lo, hi, x, y); a = to16<BF>(x); b = to16<BF>(y); } };
template <class T> struct Int { long long low; u64 range;
    __device__ T operator()(u64 w) const {
        u64 off = range == ~0ULL ? w : __umul64hi(w, range + 1);
        return (T)((u64)low + off);
    } };
__device__ __forceinline__ void philox4x32_keyed(u32 c0, u32 c1, u32 c2, u32 c3, u32 k0, u32 k1, u32 x[4]) {
#pragma unroll
    for (int r = 0; r < CUKIT_PHILOX_ROUNDS; r++) {
        ph32_round(c0, c1, c2, c3, k0, k1);
        k0 += CUKIT_PHILOX32_W0; k1 += CUKIT_PHILOX32_W1;
    }
    x[0] = c0; x[1] = c1; x[2] = c2; x[3] = c3;
}
__device__ __noinline__ u32 lemire_redraw(u32 lo, u32 hi, u32 side, u32 count, u32 thresh) {
    for (u32 k = 0;; k++) {
        u32 x[4];
        philox4x32_keyed(k, side, 0x243F6A88u, 0x85A308D3u, lo, hi, x);
        for (int j = 0; j < 4; j++) {
            u64 m = (u64)x[j] * count;
            if ((u32)m >= thresh) return (u32)(m >> 32);
        }
    }
}
template <class T, bool FULL> struct IntHalf { long long low; u32 span, thresh;
    __device__ void operator()(u32 lo, u32 hi, T &a, T &b) const {
        if (FULL) { a = (T)((u64)low + lo); b = (T)((u64)low + hi); return; }
        const u32 count = span + 1;
        u64 m0 = (u64)lo * count, m1 = (u64)hi * count;
        u32 v0 = (u32)(m0 >> 32), v1 = (u32)(m1 >> 32);
        bool r0 = (u32)m0 < thresh, r1 = (u32)m1 < thresh;
        if (r0 | r1) { /* one test for the pair: a branch that is almost never taken */
            if (r0) v0 = lemire_redraw(lo, hi, 0, count, thresh);
            if (r1) v1 = lemire_redraw(lo, hi, 1, count, thresh);
        }
        a = (T)((u64)low + v0); b = (T)((u64)low + v1);
    } };
template <class T> __device__ __forceinline__ void integers_halves(const Params &p) {
    if (p.irange == 0xffffffffULL) per_half<T, true, IntHalf<T, true>, true>(p, IntHalf<T, true>{p.ilow, 0, 0});
    else per_half<T, true, IntHalf<T, false>, true>(p, IntHalf<T, false>{p.ilow, (u32)p.irange, p.ithresh});
}
__device__ __forceinline__ void philox_keyed(u64 c0, u64 c1, u64 k0, u64 k1, u64 w[4]) {
    u64 c2 = 0, c3 = 0;
#pragma unroll
    for (int r = 0; r < CUKIT_PHILOX_ROUNDS; r++) {
        u64 lo0 = c0 * CUKIT_PHILOX_M0, hi0 = __umul64hi(c0, CUKIT_PHILOX_M0);
        u64 lo1 = c2 * CUKIT_PHILOX_M1, hi1 = __umul64hi(c2, CUKIT_PHILOX_M1);
        c0 = hi1 ^ c1 ^ k0; c1 = lo1; c2 = hi0 ^ c3 ^ k1; c3 = lo0;
        k0 += CUKIT_PHILOX_W0; k1 += CUKIT_PHILOX_W1;
    }
    w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;
}
__device__ __forceinline__ double loggam(double x) {
    double prod = 1.0;
    while (x < 7.0) { prod *= x; x += 1.0; }
    double r = 1.0 / x, r2 = r * r;
    double series = r * (1.0 / 12 - r2 * (1.0 / 360 - r2 * (1.0 / 1260 - r2 * (1.0 / 1680 - r2 / 1188))));
    return (x - 0.5) * log(x) - x + 0.91893853320467274178 + series - log(prod);
}
struct Poisson { double lam, b, a, linvalpha, vr, loglam, emlam;
    __device__ long long operator()(u64 w) const {
        if (lam < 10.0) {
            double u = unit64(w), pk = emlam, f = pk;
            long long k = 0;
            while (f <= u && k < 256) { k++; pk *= lam / (double)k; f += pk; }
            return k;
        }
        for (u64 n = 0;; n++) {
            u64 r[4];
            philox_keyed(n, 0, w, 0x6A09E667F3BCC909ULL, r);
            for (int j = 0; j < 4; j += 2) {
                double U = unit64(r[j]) - 0.5, V = unit64(r[j + 1]), us = 0.5 - fabs(U);
                long long k = (long long)floor((2.0 * a / us + b) * U + lam + 0.43);
                if (us >= 0.07 && V <= vr) return k;
                if (k < 0 || (us < 0.013 && V > us)) continue;
                if (log(V) + linvalpha - log(a / (us * us) + b) <=
                    -lam + (double)k * loglam - loggam((double)k + 1.0)) return k;
            }
        }
    } };
#define MAX_ROUNDS CUKIT_PERM_MAX_ROUNDS
struct PermParams { u64 out; long long n; u64 k0, k1; int rounds; };
// One kernel a bit generator from one body: X is false for Philox, true for Philox4x32
// (the kernel named *_x32).
#define KX(name, ...)                                                                    \
    extern "C" __global__ void name(const Params p) {                                    \
        constexpr bool X = false;                                                        \
        __VA_ARGS__;                                                                     \
    }                                                                                    \
    extern "C" __global__ void name##_x32(const Params p) {                              \
        constexpr bool X = true;                                                         \
        __VA_ARGS__;                                                                     \
    }
#if CUKIT_WANT(cukit_permutation)
extern "C" __global__ void cukit_permutation(const PermParams p) {
    __shared__ u64 keys[MAX_ROUNDS];
    const u64 n = (u64)p.n;
    for (int r = threadIdx.x; r < p.rounds; r += blockDim.x) {
        u64 w[4];
        philox_keyed((u64)r, 1ULL << 63, p.k0, p.k1, w);
        keys[r] = __umul64hi(w[0], n);
    }
    __syncthreads();
    for (long long i = FIRST; i < p.n; i += STRIDE) {
        u64 x = (u64)i;
        for (int r = 0; r < p.rounds; r++) {
            u64 k = keys[r], y = k >= x ? k - x : k + (n - x), w[4];
            philox_keyed(x > y ? x : y, (u64)r, p.k0, p.k1, w);
            if (w[0] & 1) x = y;
        }
        ((long long *)p.out)[i] = (long long)x;
    }
}
#endif
template <class T> __device__ __forceinline__ void gather(u64 d, u64 s, const long long *perm,
                                                       long long rows, long long units) {
    T *dst = (T *)d; const T *src = (const T *)s;
    for (long long e = FIRST; e < rows * units; e += STRIDE) {
        long long row = e / units;
        dst[e] = src[perm[row] * units + (e - row * units)];
    }
}
#define GATHER(T, B) extern "C" __global__ void cukit_gather_##B(u64 d, u64 s, \
    const long long *perm, long long rows, long long units) { gather<T>(d, s, perm, rows, units); }
#if CUKIT_WANT(cukit_gather_1)
GATHER(unsigned char, 1)
#endif
#if CUKIT_WANT(cukit_gather_2)
GATHER(unsigned short, 2)
#endif
#if CUKIT_WANT(cukit_gather_4)
GATHER(u32, 4)
#endif
#if CUKIT_WANT(cukit_gather_8)
GATHER(u64, 8)
#endif
#if CUKIT_WANT(cukit_gather_16)
GATHER(uint4, 16)
#endif
#if CUKIT_WANT(cukit_random_raw) || CUKIT_WANT(cukit_random_raw_x32)
KX(cukit_random_raw, per_word<u64, X>(p, Raw()))
#endif
#if CUKIT_WANT(cukit_random_f64) || CUKIT_WANT(cukit_random_f64_x32)
KX(cukit_random_f64, per_word<double, X>(p, Uniform64<false>{0, 1}))
#endif
#if CUKIT_WANT(cukit_uniform_f64) || CUKIT_WANT(cukit_uniform_f64_x32)
KX(cukit_uniform_f64, per_word<double, X>(p, Uniform64<true>{p.a, p.b}))
#endif
#if CUKIT_WANT(cukit_random_f32) || CUKIT_WANT(cukit_random_f32_x32)
KX(cukit_random_f32, per_half<float, X>(p, Uniform32<false>{0, 1}))
#endif
#if CUKIT_WANT(cukit_uniform_f32) || CUKIT_WANT(cukit_uniform_f32_x32)
KX(cukit_uniform_f32, per_half<float, X>(p, Uniform32<true>{(float)p.a, (float)p.b}))
#endif
#if CUKIT_WANT(cukit_standard_normal_f64)
extern "C" __global__ void cukit_standard_normal_f64(const Params p) {
    per_word<double, false>(p, Normal64<false>{0, 1});
}
#endif
#if CUKIT_WANT(cukit_standard_normal_f64_x32)
extern "C" __global__ void cukit_standard_normal_f64_x32(const Params p) {
    per_word<double, true, BoxMuller64<false>, true>(p, BoxMuller64<false>{0, 1});
}
#endif
#if CUKIT_WANT(cukit_normal_f64)
extern "C" __global__ void cukit_normal_f64(const Params p) {
    per_word<double, false>(p, Normal64<true>{p.a, p.b});
}
#endif
#if CUKIT_WANT(cukit_normal_f64_x32)
extern "C" __global__ void cukit_normal_f64_x32(const Params p) {
    per_word<double, true, BoxMuller64<true>, true>(p, BoxMuller64<true>{p.a, p.b});
}
#endif
#if CUKIT_WANT(cukit_standard_normal_f32)
extern "C" __global__ void cukit_standard_normal_f32(const Params p) {
    per_half<float, false>(p, Normal32<false>{0, 1});
}
#endif
#if CUKIT_WANT(cukit_standard_normal_f32_x32)
extern "C" __global__ void cukit_standard_normal_f32_x32(const Params p) {
    per_half<float, true, BoxMuller32<false>, true>(p, BoxMuller32<false>{0, 1});
}
#endif
#if CUKIT_WANT(cukit_normal_f32)
extern "C" __global__ void cukit_normal_f32(const Params p) {
    per_half<float, false>(p, Normal32<true>{(float)p.a, (float)p.b});
}
#endif
#if CUKIT_WANT(cukit_normal_f32_x32)
extern "C" __global__ void cukit_normal_f32_x32(const Params p) {
    per_half<float, true, BoxMuller32<true>, true>(p, BoxMuller32<true>{(float)p.a, (float)p.b});
}
#endif
#if CUKIT_WANT(cukit_random_f16) || CUKIT_WANT(cukit_random_f16_x32)
KX(cukit_random_f16, per_half<unsigned short, X>(p, Uniform16<false, false>{0, 1}))
#endif
#if CUKIT_WANT(cukit_uniform_f16) || CUKIT_WANT(cukit_uniform_f16_x32)
KX(cukit_uniform_f16, per_half<unsigned short, X>(p, Uniform16<true, false>{(float)p.a, (float)p.b}))
#endif
#if CUKIT_WANT(cukit_random_bf16) || CUKIT_WANT(cukit_random_bf16_x32)
KX(cukit_random_bf16, per_half<unsigned short, X>(p, Uniform16<false, true>{0, 1}))
#endif
#if CUKIT_WANT(cukit_uniform_bf16) || CUKIT_WANT(cukit_uniform_bf16_x32)
KX(cukit_uniform_bf16, per_half<unsigned short, X>(p, Uniform16<true, true>{(float)p.a, (float)p.b}))
#endif
#if CUKIT_WANT(cukit_standard_normal_f16)
extern "C" __global__ void cukit_standard_normal_f16(const Params p) {
    per_half<unsigned short, false>(p, To16<Normal32<false>, false>{{0, 1}});
}
#endif
#if CUKIT_WANT(cukit_standard_normal_f16_x32)
extern "C" __global__ void cukit_standard_normal_f16_x32(const Params p) {
    per_half<unsigned short, true, To16<BoxMuller32<false>, false>, true>(p, To16<BoxMuller32<false>, false>{{0, 1}});
}
#endif
#if CUKIT_WANT(cukit_normal_f16)
extern "C" __global__ void cukit_normal_f16(const Params p) {
    per_half<unsigned short, false>(p, To16<Normal32<true>, false>{{(float)p.a, (float)p.b}});
}
#endif
#if CUKIT_WANT(cukit_normal_f16_x32)
extern "C" __global__ void cukit_normal_f16_x32(const Params p) {
    per_half<unsigned short, true, To16<BoxMuller32<true>, false>, true>(p, To16<BoxMuller32<true>, false>{{(float)p.a, (float)p.b}});
}
#endif
#if CUKIT_WANT(cukit_standard_normal_bf16)
extern "C" __global__ void cukit_standard_normal_bf16(const Params p) {
    per_half<unsigned short, false>(p, To16<Normal32<false>, true>{{0, 1}});
}
#endif
#if CUKIT_WANT(cukit_standard_normal_bf16_x32)
extern "C" __global__ void cukit_standard_normal_bf16_x32(const Params p) {
    per_half<unsigned short, true, To16<BoxMuller32<false>, true>, true>(p, To16<BoxMuller32<false>, true>{{0, 1}});
}
#endif
#if CUKIT_WANT(cukit_normal_bf16)
extern "C" __global__ void cukit_normal_bf16(const Params p) {
    per_half<unsigned short, false>(p, To16<Normal32<true>, true>{{(float)p.a, (float)p.b}});
}
#endif
#if CUKIT_WANT(cukit_normal_bf16_x32)
extern "C" __global__ void cukit_normal_bf16_x32(const Params p) {
    per_half<unsigned short, true, To16<BoxMuller32<true>, true>, true>(p, To16<BoxMuller32<true>, true>{{(float)p.a, (float)p.b}});
}
#endif
#if CUKIT_WANT(cukit_exponential_f16) || CUKIT_WANT(cukit_exponential_f16_x32)
KX(cukit_exponential_f16, per_half<unsigned short, X>(p, To16<Exp32, false>{{(float)p.b}}))
#endif
#if CUKIT_WANT(cukit_exponential_bf16) || CUKIT_WANT(cukit_exponential_bf16_x32)
KX(cukit_exponential_bf16, per_half<unsigned short, X>(p, To16<Exp32, true>{{(float)p.b}}))
#endif
#if CUKIT_WANT(cukit_exponential_f64) || CUKIT_WANT(cukit_exponential_f64_x32)
KX(cukit_exponential_f64, per_word<double, X>(p, Exp64{p.b}))
#endif
#if CUKIT_WANT(cukit_exponential_f32) || CUKIT_WANT(cukit_exponential_f32_x32)
KX(cukit_exponential_f32, per_half<float, X>(p, Exp32{(float)p.b}))
#endif
#if CUKIT_WANT(cukit_integers_1) || CUKIT_WANT(cukit_integers_1_x32)
KX(cukit_integers_1, per_word<unsigned char, X>(p, Int<unsigned char>{p.ilow, p.irange}))
#endif
#if CUKIT_WANT(cukit_integers_2) || CUKIT_WANT(cukit_integers_2_x32)
KX(cukit_integers_2, per_word<unsigned short, X>(p, Int<unsigned short>{p.ilow, p.irange}))
#endif
#if CUKIT_WANT(cukit_integers_4) || CUKIT_WANT(cukit_integers_4_x32)
KX(cukit_integers_4, per_word<u32, X>(p, Int<u32>{p.ilow, p.irange}))
#endif
#if CUKIT_WANT(cukit_integers_8) || CUKIT_WANT(cukit_integers_8_x32)
KX(cukit_integers_8, per_word<u64, X>(p, Int<u64>{p.ilow, p.irange}))
#endif
#if CUKIT_WANT(cukit_integers_h1_x32)
extern "C" __global__ void cukit_integers_h1_x32(const Params p) {
    integers_halves<unsigned char>(p);
}
#endif
#if CUKIT_WANT(cukit_integers_h2_x32)
extern "C" __global__ void cukit_integers_h2_x32(const Params p) {
    integers_halves<unsigned short>(p);
}
#endif
#if CUKIT_WANT(cukit_integers_h4_x32)
extern "C" __global__ void cukit_integers_h4_x32(const Params p) {
    integers_halves<u32>(p);
}
#endif
#if CUKIT_WANT(cukit_integers_h8_x32)
extern "C" __global__ void cukit_integers_h8_x32(const Params p) {
    integers_halves<u64>(p);
}
#endif
#if CUKIT_WANT(cukit_poisson) || CUKIT_WANT(cukit_poisson_x32)
KX(cukit_poisson, per_word<long long, X>(p, Poisson{p.c[0], p.c[1], p.c[2], p.c[3], p.c[4], p.c[5], p.c[6]}))
#endif
