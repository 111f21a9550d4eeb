// preamble.cuh - what every kernel cukit generates for array math starts with: element
// types, conversions with numpy's meaning, and one device function per ufunc
// (uf_<name>), overloaded on the type the loop computes in. float16 and bfloat16 are
// computed in float and rounded back, as numpy and ml_dtypes do. Compiled with
// -fmad=false so that each + and * is rounded on its own, as numpy's C loops round them.
#ifndef CK_PREAMBLE_CUH
#define CK_PREAMBLE_CUH
typedef signed char i8;
typedef unsigned char u8;
typedef short i16;
typedef unsigned short u16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;
#define CKD __device__ __forceinline__
#define CK_NAN __int_as_float(0x7fc00000)
#define CK_INF __int_as_float(0x7f800000)

struct __align__(2) f16 {
    unsigned short x;
    f16() = default;
    __device__ f16(float f) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(x) : "f"(f)); }
    __device__ operator float() const { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x)); return f; }
};
// bfloat16: the high half of a float. Round to nearest even in integer arithmetic
// (any architecture, and host C++ for the tests); a NaN keeps its sign and becomes
// the quiet 0x7fc0, as ml_dtypes makes it.
struct __align__(2) bf16 {
    unsigned short x;
    bf16() = default;
    __device__ bf16(float f) {
        union { float f; unsigned int u; } b_{f};  // a move of the bits
        const unsigned int u = b_.u;
        x = (u & 0x7fffffffu) > 0x7f800000u ? (unsigned short)(((u >> 16) & 0x8000u) | 0x7fc0u)
                                           : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    __device__ operator float() const { return __int_as_float((int)((unsigned int)x << 16)); }
};
// float8 (ml_dtypes' float8_e4m3fn: E = 4, M = 3, FN: no infinity, S.1111.111 the
// only NaN, overflow a NaN; float8_e5m2: E = 5, M = 2, IEEE's rules). From a float by
// round to nearest even in integer arithmetic, the same on every architecture and
// in the emulator; a NaN becomes the quiet one with its sign, as ml_dtypes makes it.
// (bits moved through a union, so that host C++ compiles it too, as bf16's)
template <int E, int M, bool FN> struct __align__(1) ck_f8 {
    unsigned char x;
    ck_f8() = default;
    static __device__ unsigned int ubits(float f) { union { float f; unsigned int u; } b_{f}; return b_.u; }
    static __device__ float fbits(unsigned int u) { union { unsigned int u; float f; } b_{u}; return b_.f; }
    __device__ ck_f8(float f) {
        const int B = (1 << (E - 1)) - 1;
        const unsigned int u = ubits(f), s = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
        unsigned int r;
        if (a > 0x7f800000u) r = FN ? 0x7fu : 0x7eu;
        else if (a >= (unsigned int)(128 - B) << 23) {  // a normal float8, or beyond
            r = a - ((unsigned int)(127 - B) << 23);
            r = (r + (1u << (22 - M)) - 1u + ((r >> (23 - M)) & 1u)) >> (23 - M);
            if (FN && r > 0x7eu) r = 0x7fu;             // past 448 (and infinity): NaN
            if (!FN && r > 0x7cu) r = 0x7cu;            // past the largest: infinity
        } else {  // a subnormal float8 or zero: units of 2**(1 - B - M)
            const int sh = 24 - B - M - ((int)(a >> 23) - 127);
            const unsigned int m = (a & 0x7fffffu) | 0x800000u;
            if (sh > 24) r = 0;
            else {
                const unsigned int rem = m & ((1u << sh) - 1u), tie = 1u << (sh - 1);
                r = m >> sh;
                r += rem > tie || (rem == tie && (r & 1u));
            }
        }
        x = (unsigned char)(s | r);
    }
    __device__ bool nan() const { return FN ? (x & 0x7f) == 0x7f : (x & 0x7f) > 0x7c; }
    __device__ operator float() const {
        const int B = (1 << (E - 1)) - 1;
        const unsigned int s = (unsigned int)(x & 0x80) << 24, e = (x >> M) & ((1 << E) - 1), m = x & ((1 << M) - 1);
        if (nan()) return fbits(s | 0x7fc00000u);
        if (!FN && e == (1u << E) - 1u) return fbits(s | 0x7f800000u);
        if (e == 0) return fbits(s | ubits((float)m * fbits((unsigned int)(128 - B - M) << 23)));
        return fbits(s | (e + 127 - B) << 23 | m << (23 - M));
    }
};
typedef ck_f8<4, 3, true> f8e4m3;
typedef ck_f8<5, 2, false> f8e5m2;
template <class T> struct ck_isf8 { static const bool v = false; };
template <int E, int M, bool FN> struct ck_isf8<ck_f8<E, M, FN> > { static const bool v = true; };
struct __align__(8) c64 { float re, im; };
struct __align__(16) c128 { double re, im; };
struct __align__(16) ck_slot { unsigned long long lo, hi; };
template <class T, int V> struct __align__(sizeof(T) * V) ck_vec { T v[V]; };
struct ck_index { long long n; __device__ long long size() const { return n; } };

template <class A, class B> struct ck_same { static const bool v = false; };
template <class A> struct ck_same<A, A> { static const bool v = true; };
// Kinds: b bool, s signed, u unsigned, f float, c complex.
template <class T> struct K { enum { b = 0, s = 0, u = 0, f = 0, c = 0 }; };
template <> struct K<bool> { enum { b = 1, s = 0, u = 0, f = 0, c = 0 }; };
#define CK_SINT(T) template <> struct K<T> { enum { b = 0, s = 1, u = 0, f = 0, c = 0 }; };
#define CK_UINT(T) template <> struct K<T> { enum { b = 0, s = 0, u = 1, f = 0, c = 0 }; };
CK_SINT(i8) CK_SINT(i16) CK_SINT(i32) CK_SINT(i64) CK_SINT(long)
CK_UINT(u8) CK_UINT(u16) CK_UINT(u32) CK_UINT(u64) CK_UINT(unsigned long)
template <> struct K<float> { enum { b = 0, s = 0, u = 0, f = 1, c = 0 }; };
template <> struct K<double> { enum { b = 0, s = 0, u = 0, f = 1, c = 0 }; };
template <> struct K<c64> { enum { b = 0, s = 0, u = 0, f = 0, c = 1 }; };
template <> struct K<c128> { enum { b = 0, s = 0, u = 0, f = 0, c = 1 }; };
#define CK_INT(T) (K<T>::s || K<T>::u)
// Unsigned type integer arithmetic wraps in (no signed overflow in C++).
template <class T> struct W { typedef u32 t; };
template <> struct W<i64> { typedef u64 t; };
template <> struct W<u64> { typedef u64 t; };
template <> struct W<long> { typedef u64 t; };
template <> struct W<unsigned long> { typedef u64 t; };
template <class T> struct P { typedef T t; };
template <> struct P<c64> { typedef float t; };
template <> struct P<c128> { typedef double t; };

// CK_ML: where ml_dtypes' versions differ, what the installed one does (cukit writes it
// in front where it is not 0): bit 2t (float64) or 2t+1 (ints of 32 and 64 bits) set
// where a cast to bfloat16 (t 0), float8_e4m3fn (1) or float8_e5m2 (2) rounds through
// float32, as older versions did, instead of once.
#ifndef CK_ML
#define CK_ML 0
#endif
#define CK_MLT(T) (ck_same<T, bf16>::v ? 0 : ck_same<T, f8e4m3>::v ? 1 : 2)
// x to float rounded toward zero, its last bit set where that was inexact (round to
// odd): rounded again to 22 bits or fewer, it gives what one rounding of x gives.
CKD float ck_odd(double x) {
    union { float f; unsigned int u; } b_{(float)x};
    if (x != x) return b_.f;
    if (fabs((double)b_.f) > fabs(x)) b_.u--;  // one step toward zero
    if ((double)b_.f != x) b_.u |= 1u;
    return b_.f;
}
CKD float ck_odd(u64 m, bool neg) {  // an integer of magnitude m
    unsigned int sticky = 0, d = 0;
    while (m >> 24) { sticky |= (unsigned int)(m & 1u); m >>= 1; d++; }
    union { unsigned int u; float f; } s_{(127u + d) << 23};
    const float f = (float)(unsigned int)(m | sticky) * s_.f;
    return neg ? -f : f;
}
// a float64 or an int of 32 or 64 bits to float, ready to round to small type t
template <int t, class From> CKD float ck_wide(From x) {
    if constexpr (ck_same<From, double>::v) return ((CK_ML >> (2 * t)) & 1) ? (float)x : ck_odd(x);
    else if ((CK_ML >> (2 * t + 1)) & 1) return (float)x;
    else if constexpr (K<From>::s) return x < 0 ? ck_odd((u64)0 - (u64)(i64)x, true) : ck_odd((u64)x, false);
    else return ck_odd((u64)x, false);
}
#define CK_WIDE(T) (CK_INT(T) && sizeof(T) >= 4)

// cv<To>(x): numpy's cast (complex to real keeps the real part; to bool is != 0).
template <class To, class From> CKD To cv(From x) {
    if constexpr (ck_same<To, From>::v) return x;
    else if constexpr (ck_isf8<From>::v) {
        // exact in float; a NaN made the quiet one of the target with its sign
        if constexpr (ck_same<To, f16>::v) {
            if (x.nan()) { f16 h; h.x = (x.x & 0x80) ? 0xfe00 : 0x7e00; return h; }
            return f16((float)x);
        }
        else if constexpr (ck_same<To, double>::v) {
            if (x.nan()) {
                union { unsigned long long u; double d; } b_{(x.x & 0x80) ? 0xfff8000000000000ULL : 0x7ff8000000000000ULL};
                return b_.d;
            }
            return (double)(float)x;
        }
        else if constexpr (ck_same<To, c128>::v) return c128{cv<double>(x), 0.0};
        else return cv<To>((float)x);
    }
    else if constexpr (ck_isf8<To>::v) {
        // from float, rounded once; float64 and the wide ints as ml_dtypes casts them.
        // A NaN keeps its sign, which a conversion to float need not keep.
        if constexpr (ck_same<From, f16>::v) {
            if ((x.x & 0x7fff) > 0x7c00) return To(To::fbits((x.x & 0x8000) ? 0xffc00000u : 0x7fc00000u));
            return To((float)x);
        }
        else if constexpr (ck_same<From, double>::v) {
            if (x != x) return To(To::fbits(signbit(x) ? 0xffc00000u : 0x7fc00000u));
            return To(ck_wide<CK_MLT(To)>(x));
        }
        else if constexpr (K<From>::c) return cv<To>(x.re);
        else if constexpr (CK_WIDE(From)) return To(ck_wide<CK_MLT(To)>(x));
        else return To(cv<float>(x));
    }
    else if constexpr (ck_same<From, f16>::v) {
        if constexpr (ck_same<To, bf16>::v) {
            if ((x.x & 0x7fff) > 0x7c00) { bf16 h; h.x = (x.x & 0x8000) | 0x7fc0; return h; }
        }
        return cv<To>((float)x);
    }
    else if constexpr (ck_same<From, bf16>::v) return cv<To>((float)x);
    else if constexpr (ck_same<To, f16>::v) {
        if constexpr (ck_same<From, double>::v) {
            f16 h; asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h.x) : "d"(x)); return h;
        }
        else if constexpr (K<From>::c) return cv<f16>(x.re);
        else return f16(cv<float>(x));
    }
    else if constexpr (ck_same<To, bf16>::v) {
        // float64 and the wide ints as ml_dtypes casts them (see CK_ML). A NaN keeps
        // its sign, which a conversion to float need not keep.
        if constexpr (K<From>::c) return cv<bf16>(x.re);
        else if constexpr (ck_same<From, double>::v) {
            if (x != x) { bf16 h; h.x = signbit(x) ? 0xffc0 : 0x7fc0; return h; }
            return bf16(ck_wide<0>(x));
        }
        else if constexpr (CK_WIDE(From)) return bf16(ck_wide<0>(x));
        else return bf16(cv<float>(x));
    }
    else if constexpr (K<To>::b) {
        if constexpr (K<From>::c) return x.re != 0 || x.im != 0;
        else return x != 0;
    }
    else if constexpr (K<To>::c) {
        typedef typename P<To>::t Q;
        if constexpr (K<From>::c) return To{(Q)x.re, (Q)x.im};
        else return To{cv<Q>(x), (Q)0};
    }
    else if constexpr (K<From>::c) return cv<To>(x.re);
    else return (To)x;
}

// complex arithmetic (also for ElementwiseKernel code)
#define CK_CX(C)                                                                         \
    CKD C operator+(C a, C b) { return C{a.re + b.re, a.im + b.im}; }                    \
    CKD C operator-(C a, C b) { return C{a.re - b.re, a.im - b.im}; }                    \
    CKD C operator-(C a) { return C{-a.re, -a.im}; }                                     \
    CKD C operator*(C a, C b) { return C{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; } \
    CKD bool operator==(C a, C b) { return a.re == b.re && a.im == b.im; }               \
    CKD bool operator!=(C a, C b) { return a.re != b.re || a.im != b.im; }             \
    CKD C operator+(C a, decltype(C::re) b) { return C{a.re + b, a.im}; }              \
    CKD C operator+(decltype(C::re) a, C b) { return C{a + b.re, b.im}; }              \
    CKD C operator-(C a, decltype(C::re) b) { return C{a.re - b, a.im}; }              \
    CKD C operator-(decltype(C::re) a, C b) { return C{a - b.re, -b.im}; }             \
    CKD C operator*(C a, decltype(C::re) b) { return C{a.re * b, a.im * b}; }          \
    CKD C operator*(decltype(C::re) a, C b) { return C{a * b.re, a * b.im}; }          \
    CKD C operator/(C a, decltype(C::re) b) { return C{a.re / b, a.im / b}; }
CK_CX(c64)
CK_CX(c128)
// Division as numpy does it (Smith's method).
template <class C> CKD C ck_cdiv(C a, C b) {
    typedef typename P<C>::t Q;
    Q ar = fabs(b.re), ai = fabs(b.im);
    if (ar >= ai) {
        if (ar == 0 && ai == 0) return C{a.re / ar, a.im / ar};
        Q rat = b.im / b.re, scl = (Q)1.0 / (b.re + b.im * rat);
        return C{(a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl};
    }
    Q rat = b.re / b.im, scl = (Q)1.0 / (b.im + b.re * rat);
    return C{(a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl};
}
CKD c64 operator/(c64 a, c64 b) { return ck_cdiv(a, b); }
CKD c128 operator/(c128 a, c128 b) { return ck_cdiv(a, b); }

// float/double overloads of the math library, by name
#define CK_M1(name)                                                                      \
    CKD float ck_##name(float x) { return name##f(x); }                                  \
    CKD double ck_##name(double x) { return name(x); }
#define CK_M2(name)                                                                      \
    CKD float ck_##name(float x, float y) { return name##f(x, y); }                      \
    CKD double ck_##name(double x, double y) { return name(x, y); }
CK_M1(sqrt) CK_M1(cbrt) CK_M1(exp) CK_M1(exp2) CK_M1(expm1) CK_M1(log) CK_M1(log2)
CK_M1(log10) CK_M1(log1p) CK_M1(sin) CK_M1(cos) CK_M1(tan) CK_M1(asin) CK_M1(acos)
CK_M1(atan) CK_M1(sinh) CK_M1(cosh) CK_M1(tanh) CK_M1(asinh) CK_M1(acosh) CK_M1(atanh)
CK_M1(floor) CK_M1(ceil) CK_M1(trunc) CK_M1(rint) CK_M1(fabs)
CK_M2(fmod) CK_M2(pow) CK_M2(atan2) CK_M2(hypot) CK_M2(copysign)

// ------------------------------------------------------------------ binary
template <class T> CKD T uf_add(T a, T b) {
    if constexpr (K<T>::b) return a || b;
    else if constexpr (CK_INT(T)) return (T)((typename W<T>::t)a + (typename W<T>::t)b);
    else return a + b;
}
template <class T> CKD T uf_subtract(T a, T b) {
    if constexpr (CK_INT(T)) return (T)((typename W<T>::t)a - (typename W<T>::t)b);
    else return a - b;
}
template <class T> CKD T uf_multiply(T a, T b) {
    if constexpr (K<T>::b) return a && b;
    else if constexpr (CK_INT(T)) return (T)((typename W<T>::t)a * (typename W<T>::t)b);
    else return a * b;
}
template <class T> CKD T uf_true_divide(T a, T b) { return a / b; }
template <class T> CKD T ck_minval() { return (T)((typename W<T>::t)1 << (sizeof(T) * 8 - 1)); }
// numpy's npy_divmod: Python's floor division and remainder for floats
template <class T> CKD T ck_divmod(T a, T b, T &mod) {
    mod = ck_fmod(a, b);
    if (!b) return a / b;
    T div = (a - mod) / b;
    if (mod) {
        if ((b < 0) != (mod < 0)) { mod += b; div -= (T)1; }
    }
    else mod = ck_copysign((T)0, b);
    T fl;
    if (div) { fl = ck_floor(div); if (div - fl > (T)0.5) fl += (T)1; }
    else fl = ck_copysign((T)0, a / b);
    return fl;
}
template <class T> CKD T uf_floor_divide(T a, T b) {
    if constexpr (K<T>::f) { if (!b) return a / b; T m; return ck_divmod(a, b, m); }
    else if constexpr (K<T>::s) {
        if (b == 0) return 0;
        if (b == -1 && a == ck_minval<T>()) return a;
        T q = a / b;
        if (((a > 0) != (b > 0)) && (T)(q * b) != a) q--;
        return q;
    }
    else return b == 0 ? (T)0 : (T)(a / b);
}
template <class T> CKD T uf_remainder(T a, T b) {
    if constexpr (K<T>::f) { if (!b) return ck_fmod(a, b); T m; ck_divmod(a, b, m); return m; }
    else if constexpr (K<T>::s) {
        if (b == 0 || b == -1) return 0;
        T r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
    }
    else return b == 0 ? (T)0 : (T)(a % b);
}
template <class T> CKD T uf_fmod(T a, T b) {
    if constexpr (K<T>::f) return ck_fmod(a, b);
    else if constexpr (K<T>::s) return (b == 0 || b == -1) ? (T)0 : (T)(a % b);
    else return b == 0 ? (T)0 : (T)(a % b);
}
template <class C> CKD C ck_cpow(C a, C b) {
    typedef typename P<C>::t Q;
    if (b.re == 0 && b.im == 0) return C{1, 0};
    if (a.re == 0 && a.im == 0) {
        if (b.re > 0) return C{0, 0};
        return C{(Q)CK_NAN, (Q)CK_NAN};
    }
    if (b.im == 0 && b.re == (Q)(long long)b.re && b.re > -100 && b.re < 100) {
        long long n = (long long)b.re;
        if (n == 1) return a;
        if (n == 2) return a * a;
        if (n == 3) return (a * a) * a;
        C r = C{1, 0}, p = a;
        long long m = n < 0 ? -n : n, mask = 1;
        for (;;) {
            if (m & mask) r = r * p;
            mask <<= 1;
            if (m < mask || mask <= 0) break;
            p = p * p;
        }
        return n < 0 ? ck_cdiv(C{1, 0}, r) : r;
    }
    Q la = ck_log(ck_hypot(a.re, a.im)), th = ck_atan2(a.im, a.re);
    Q re = b.re * la - b.im * th, im = b.im * la + b.re * th, e = ck_exp(re);
    return C{e * ck_cos(im), e * ck_sin(im)};
}
template <class T> CKD T uf_power(T a, T b) {
    if constexpr (K<T>::f) return ck_pow(a, b);
    else if constexpr (K<T>::c) return ck_cpow(a, b);
    else {
        if constexpr (K<T>::s) {
            if (b < 0) return a == 1 ? (T)1 : a == -1 ? (T)((b & 1) ? -1 : 1) : (T)0;
        }
        typename W<T>::t r = 1, x = (typename W<T>::t)a;
        u64 e = (u64)b;
        while (e) { if (e & 1) r *= x; x *= x; e >>= 1; }
        return (T)r;
    }
}
// numpy's lexicographic complex order; NaN parts make every order test false
#define CK_CLT(a, b) ((a.re < b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im < b.im))
#define CK_CLE(a, b) ((a.re < b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im <= b.im))
#define CK_CGT(a, b) ((a.re > b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im > b.im))
#define CK_CGE(a, b) ((a.re > b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im >= b.im))
#define CK_CNAN(a) (a.re != a.re || a.im != a.im)
template <class T> CKD T uf_maximum(T a, T b) {
    if constexpr (K<T>::b) return a || b;
    else if constexpr (K<T>::c) return (CK_CNAN(a) || CK_CGE(a, b)) ? a : b;
    else if constexpr (K<T>::f) return (a > b || a != a) ? a : b;
    else return a > b ? a : b;
}
template <class T> CKD T uf_minimum(T a, T b) {
    if constexpr (K<T>::b) return a && b;
    else if constexpr (K<T>::c) return (CK_CNAN(a) || CK_CLE(a, b)) ? a : b;
    else if constexpr (K<T>::f) return (a < b || a != a) ? a : b;
    else return a < b ? a : b;
}
template <class T> CKD T uf_fmax(T a, T b) {
    if constexpr (K<T>::c) return (CK_CNAN(b) || CK_CGE(a, b)) ? a : b;
    else if constexpr (K<T>::f) return (a > b || b != b) ? a : b;
    else return uf_maximum(a, b);
}
template <class T> CKD T uf_fmin(T a, T b) {
    if constexpr (K<T>::c) return (CK_CNAN(b) || CK_CLE(a, b)) ? a : b;
    else if constexpr (K<T>::f) return (a < b || b != b) ? a : b;
    else return uf_minimum(a, b);
}
template <class T> CKD T uf_arctan2(T a, T b) { return ck_atan2(a, b); }
template <class T> CKD T uf_hypot(T a, T b) { return ck_hypot(a, b); }
template <class T> CKD T uf_copysign(T a, T b) { return ck_copysign(a, b); }
template <class T> CKD bool uf_logical_and(T a, T b) { return cv<bool>(a) && cv<bool>(b); }
template <class T> CKD bool uf_logical_or(T a, T b) { return cv<bool>(a) || cv<bool>(b); }
template <class T> CKD bool uf_logical_xor(T a, T b) { return cv<bool>(a) != cv<bool>(b); }
template <class T> CKD T uf_bitwise_and(T a, T b) { return (T)(a & b); }
template <class T> CKD T uf_bitwise_or(T a, T b) { return (T)(a | b); }
template <class T> CKD T uf_bitwise_xor(T a, T b) { return (T)(a ^ b); }
// numpy: a shift by the type's width or more (or a negative one) gives 0, or -1 for
// a right shift of a negative value
template <class T> CKD T uf_left_shift(T a, T b) {
    if ((u64)(i64)b >= sizeof(T) * 8) return 0;
    return (T)((typename W<T>::t)a << b);
}
template <class T> CKD T uf_right_shift(T a, T b) {
    if ((u64)(i64)b >= sizeof(T) * 8) {
        if constexpr (K<T>::s) return a < 0 ? (T)-1 : (T)0;
        else return 0;
    }
    return (T)(a >> b);
}
#define CK_CMP(name, op, cop)                                                           \
    template <class T> CKD bool uf_##name(T a, T b) {                                    \
        if constexpr (K<T>::c) return cop(a, b);                                         \
        else return a op b;                                                              \
    }                                                                                    \
    CKD bool uf_##name(i64 a, u64 b) { return a < 0 ? (i64)-1 op (i64)0 : (u64)a op b; }  \
    CKD bool uf_##name(u64 a, i64 b) { return b < 0 ? (i64)0 op (i64)-1 : a op (u64)b; }
#define CK_CEQ(a, b) (a == b)
#define CK_CNE(a, b) (a != b)
CK_CMP(equal, ==, CK_CEQ)
CK_CMP(not_equal, !=, CK_CNE)
CK_CMP(less, <, CK_CLT)
CK_CMP(less_equal, <=, CK_CLE)
CK_CMP(greater, >, CK_CGT)
CK_CMP(greater_equal, >=, CK_CGE)

// ------------------------------------------------------------------ unary
template <class T> CKD T uf_negative(T a) {
    if constexpr (CK_INT(T)) return (T)((typename W<T>::t)0 - (typename W<T>::t)a);
    else return -a;
}
template <class T> CKD T uf_positive(T a) { return a; }
template <class T> CKD T uf_copy(T a) { return a; }
template <class T> CKD T uf_conjugate(T a) {
    if constexpr (K<T>::c) return T{a.re, -a.im};
    else return a;
}
template <class T> CKD typename P<T>::t uf_absolute(T a) {
    if constexpr (K<T>::c) return ck_hypot(a.re, a.im);
    else if constexpr (K<T>::f) return ck_fabs(a);
    else if constexpr (K<T>::s) return a < 0 ? (T)((typename W<T>::t)0 - (typename W<T>::t)a) : a;
    else return a;
}
template <class T> CKD T uf_sign(T a) {
    typedef typename P<T>::t Q;
    if constexpr (K<T>::c) {
        if (a.re == 0 && a.im == 0) return T{0, 0};
        Q m = ck_hypot(a.re, a.im);
        if (m != m) return T{(Q)CK_NAN, (Q)CK_NAN};
        if (isinf(m)) {
            if (isinf(a.re) && isinf(a.im)) return T{(Q)CK_NAN, (Q)CK_NAN};
            if (isinf(a.re)) return T{a.re > 0 ? (Q)1 : (Q)-1, 0};
            return T{0, a.im > 0 ? (Q)1 : (Q)-1};
        }
        return T{a.re / m, a.im / m};
    }
    else if constexpr (K<T>::f) return a > 0 ? (T)1 : a < 0 ? (T)-1 : a == 0 ? (T)0 : a;
    else if constexpr (K<T>::s) return (T)((a > 0) - (a < 0));
    else return (T)(a > 0);
}
template <class T> CKD T uf_square(T a) { return uf_multiply(a, a); }
template <class T> CKD T uf_reciprocal(T a) {
    if constexpr (K<T>::c) {
        typedef typename P<T>::t Q;
        if (ck_fabs(a.im) <= ck_fabs(a.re)) {
            Q r = a.im / a.re, d = a.re + a.im * r;
            return T{(Q)1 / d, -r / d};
        }
        Q r = a.re / a.im, d = a.re * r + a.im;
        return T{r / d, (Q)-1 / d};
    }
    else if constexpr (K<T>::f) return (T)1 / a;
    else if constexpr (K<T>::s) {
        // numpy's 1.0/x cast back: 0 gives what x86 makes of an infinity
        if (a == 0) return sizeof(T) >= 4 ? ck_minval<T>() : (T)0;
        return a == 1 ? (T)1 : a == -1 ? (T)-1 : (T)0;
    }
    else return a == 1 ? (T)1 : (T)0;
}
template <class C> CKD C ck_csqrt(C z) {
    typedef typename P<C>::t Q;
    Q x = z.re, y = z.im;
    if (x == 0 && y == 0) return C{0, y};
    if (isinf(y)) return C{(Q)CK_INF, y};
    if (x != x) return C{x, (y - y) / (y - y)};
    if (isinf(x)) {
        if (x > 0) return C{x, ck_copysign(y != y ? y : (Q)0, y)};
        return C{ck_fabs(y - y), ck_copysign(-x, y)};
    }
    Q t = ck_sqrt((ck_fabs(x) + ck_hypot(x, y)) * (Q)0.5);
    if (x >= 0) return C{t, y / (2 * t)};
    return C{ck_fabs(y) / (2 * t), ck_copysign(t, y)};
}
template <class C> CKD C ck_cexp(C z) {
    typedef typename P<C>::t Q;
    if (z.im == 0) return C{ck_exp(z.re), z.im};
    Q e = ck_exp(z.re);
    return C{e * ck_cos(z.im), e * ck_sin(z.im)};
}
template <class C> CKD C ck_clog(C z) { return C{ck_log(ck_hypot(z.re, z.im)), ck_atan2(z.im, z.re)}; }
template <class T> CKD T uf_sqrt(T a) { if constexpr (K<T>::c) return ck_csqrt(a); else return ck_sqrt(a); }
template <class T> CKD T uf_exp(T a) { if constexpr (K<T>::c) return ck_cexp(a); else return ck_exp(a); }
template <class T> CKD T uf_log(T a) { if constexpr (K<T>::c) return ck_clog(a); else return ck_log(a); }
template <class T> CKD T uf_log2(T a) {
    if constexpr (K<T>::c) { T l = ck_clog(a); typedef typename P<T>::t Q; const Q k = (Q)1.4426950408889634; return T{l.re * k, l.im * k}; }
    else return ck_log2(a);
}
template <class T> CKD T uf_log10(T a) {
    if constexpr (K<T>::c) { T l = ck_clog(a); typedef typename P<T>::t Q; const Q k = (Q)0.43429448190325182; return T{l.re * k, l.im * k}; }
    else return ck_log10(a);
}
template <class T> CKD T uf_sin(T a) {
    if constexpr (K<T>::c) return T{ck_sin(a.re) * ck_cosh(a.im), ck_cos(a.re) * ck_sinh(a.im)};
    else return ck_sin(a);
}
template <class T> CKD T uf_cos(T a) {
    if constexpr (K<T>::c) return T{ck_cos(a.re) * ck_cosh(a.im), -(ck_sin(a.re) * ck_sinh(a.im))};
    else return ck_cos(a);
}
template <class T> CKD T uf_sinh(T a) {
    if constexpr (K<T>::c) return T{ck_sinh(a.re) * ck_cos(a.im), ck_cosh(a.re) * ck_sin(a.im)};
    else return ck_sinh(a);
}
template <class T> CKD T uf_cosh(T a) {
    if constexpr (K<T>::c) return T{ck_cosh(a.re) * ck_cos(a.im), ck_sinh(a.re) * ck_sin(a.im)};
    else return ck_cosh(a);
}
#define CK_REAL1(name, fn) template <class T> CKD T uf_##name(T a) { return ck_##fn(a); }
CK_REAL1(cbrt, cbrt)
// Complex exp2, expm1, log1p, tan(h) and the inverse functions, computed in double
// (complex64 too, then rounded): numpy's formulas for exp2, expm1 and log1p; Kahan's
// for tanh; the others through asinh and atanh written so that nothing cancels, with
// tan, asin, atan = -i f(iz). NaN and infinite parts follow the formulas, not C99.
CKD c128 ck_cexp2(c128 z) { const double l = 0.69314718055994531; return ck_cexp(c128{z.re * l, z.im * l}); }
CKD c128 ck_cexpm1(c128 z) {
    double a = sin(z.im * 0.5);
    return c128{expm1(z.re) * cos(z.im) - 2 * a * a, exp(z.re) * sin(z.im)};
}
CKD c128 ck_clog1p(c128 z) { return c128{log(hypot(z.re + 1, z.im)), atan2(z.im, z.re + 1)}; }
CKD c128 ck_ctanh(c128 z) {
    double x = z.re, y = z.im;
    if (x != x) return c128{x, y == 0 ? y : x * y};
    if (isinf(x)) return c128{copysign(1.0, x), copysign(0.0, isinf(y) ? y : sin(y) * cos(y))};
    if (!isfinite(y)) return c128{x != 0 ? y - y : x, y - y};
    if (fabs(x) >= 22) {
        double e = exp(-fabs(x));
        return c128{copysign(1.0, x), 4 * sin(y) * cos(y) * e * e};
    }
    double t = tan(y), beta = 1 + t * t, s = sinh(x), rho = sqrt(1 + s * s);
    double d = 1 + beta * s * s;
    return c128{beta * rho * s / d, t / d};
}
CKD c128 ck_ctan(c128 z) { c128 w = ck_ctanh(c128{-z.im, z.re}); return c128{w.im, -w.re}; }
CKD c128 ck_casinh(c128 z) {
    double ax = fabs(z.re), ay = fabs(z.im), re, im;
    if (ax > 1e150 || ay > 1e150) {  // log(2z): z * z would overflow
        re = log(hypot(ax, ay)) + 0.69314718055994531;
        im = atan2(ay, ax);
    }
    else {  // log(z + sqrt(z * z + 1)) in the first quadrant: every sum adds like signs
        c128 s = ck_csqrt(c128{(ax - ay) * (ax + ay) + 1, 2 * ax * ay});
        double vr = ax + s.re, vi = ay + s.im;
        re = log(hypot(vr, vi));
        im = atan2(vi, vr);
    }
    return c128{copysign(re, z.re), copysign(im, z.im)};
}
CKD c128 ck_casin(c128 z) { c128 w = ck_casinh(c128{-z.im, z.re}); return c128{w.im, -w.re}; }
CKD c128 ck_cacos(c128 z) { c128 w = ck_casin(z); return c128{1.5707963267948966 - w.re, -w.im}; }
CKD c128 ck_cacosh(c128 z) { c128 w = ck_cacos(z); return c128{fabs(w.im), copysign(w.re, z.im)}; }
CKD c128 ck_catanh(c128 z) {
    double ax = fabs(z.re), ay = fabs(z.im);
    double re = 0.25 * log1p(4 * ax / ((1 - ax) * (1 - ax) + ay * ay));
    double im = 0.5 * atan2(2 * ay, (1 - ax) * (1 + ax) - ay * ay);
    return c128{copysign(re, z.re), copysign(im, z.im)};
}
CKD c128 ck_catan(c128 z) { c128 w = ck_catanh(c128{-z.im, z.re}); return c128{w.im, -w.re}; }
#define CK_CX1(name, fn)                                                                 \
    template <class T> CKD T uf_##name(T a) {                                            \
        if constexpr (K<T>::c) {                                                         \
            typedef typename P<T>::t Q;                                                  \
            c128 w = ck_c##fn(c128{(double)a.re, (double)a.im});                        \
            return T{(Q)w.re, (Q)w.im};                                                  \
        }                                                                                \
        else return ck_##fn(a);                                                          \
    }
CK_CX1(exp2, exp2) CK_CX1(expm1, expm1) CK_CX1(log1p, log1p)
CK_CX1(tan, tan) CK_CX1(arcsin, asin) CK_CX1(arccos, acos) CK_CX1(arctan, atan)
CK_CX1(tanh, tanh) CK_CX1(arcsinh, asinh) CK_CX1(arccosh, acosh) CK_CX1(arctanh, atanh)
#define CK_ROUND(name)                                                                   \
    template <class T> CKD T uf_##name(T a) {                                            \
        if constexpr (K<T>::f) return ck_##name(a);                                      \
        else if constexpr (K<T>::c) return T{ck_##name(a.re), ck_##name(a.im)};         \
        else return a;                                                                   \
    }
CK_ROUND(floor) CK_ROUND(ceil) CK_ROUND(trunc) CK_ROUND(rint)
template <class T> CKD bool uf_isnan(T a) {
    if constexpr (K<T>::c) return CK_CNAN(a);
    else if constexpr (K<T>::f) return a != a;
    else return false;
}
template <class T> CKD bool uf_isinf(T a) {
    if constexpr (K<T>::c) return isinf(a.re) || isinf(a.im);
    else if constexpr (K<T>::f) return isinf(a);
    else return false;
}
template <class T> CKD bool uf_isfinite(T a) {
    if constexpr (K<T>::c) return isfinite(a.re) && isfinite(a.im);
    else if constexpr (K<T>::f) return isfinite(a);
    else return true;
}
template <class T> CKD bool uf_signbit(T a) { return signbit(a); }
template <class T> CKD bool uf_logical_not(T a) { return !cv<bool>(a); }
template <class T> CKD T uf_invert(T a) {
    if constexpr (K<T>::b) return !a;
    else return (T)~(typename W<T>::t)a;
}
// ------------------------------------------------------------------ three operands
template <class T> CKD T uf_where(bool c, T a, T b) { return c ? a : b; }
template <class T> CKD T uf_clip(T a, T lo, T hi) { return uf_minimum(uf_maximum(a, lo), hi); }
#endif // CK_PREAMBLE_CUH
