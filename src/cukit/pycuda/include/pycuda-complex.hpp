// pycuda-complex.hpp - cukit's pycuda::complex<T> for kernels compiled with NVRTC.
//
// Written for cukit (not PyCUDA's header): the type and functions that kernels
// written for PyCUDA use, with the layout of numpy's complex64/complex128 (the
// real part, then the imaginary part) so device arrays of those dtypes can be
// read as arrays of pycuda::complex<float> / <double>. Needs no standard headers.
#ifndef CUKIT_PYCUDA_COMPLEX_HPP
#define CUKIT_PYCUDA_COMPLEX_HPP

extern "C++" {
namespace pycuda {

template <typename T>
struct complex_math;  // the real functions for T (float or double)

template <>
struct complex_math<float> {
    static __device__ __forceinline__ float sqrt_(float x) { return ::sqrtf(x); }
    static __device__ __forceinline__ float hypot_(float x, float y) { return ::hypotf(x, y); }
    static __device__ __forceinline__ float atan2_(float y, float x) { return ::atan2f(y, x); }
    static __device__ __forceinline__ float exp_(float x) { return ::expf(x); }
    static __device__ __forceinline__ float log_(float x) { return ::logf(x); }
    static __device__ __forceinline__ float sin_(float x) { return ::sinf(x); }
    static __device__ __forceinline__ float cos_(float x) { return ::cosf(x); }
    static __device__ __forceinline__ float sinh_(float x) { return ::sinhf(x); }
    static __device__ __forceinline__ float cosh_(float x) { return ::coshf(x); }
    static __device__ __forceinline__ float fabs_(float x) { return ::fabsf(x); }
    static __device__ __forceinline__ float pow_(float x, float y) { return ::powf(x, y); }
};

template <>
struct complex_math<double> {
    static __device__ __forceinline__ double sqrt_(double x) { return ::sqrt(x); }
    static __device__ __forceinline__ double hypot_(double x, double y) { return ::hypot(x, y); }
    static __device__ __forceinline__ double atan2_(double y, double x) { return ::atan2(y, x); }
    static __device__ __forceinline__ double exp_(double x) { return ::exp(x); }
    static __device__ __forceinline__ double log_(double x) { return ::log(x); }
    static __device__ __forceinline__ double sin_(double x) { return ::sin(x); }
    static __device__ __forceinline__ double cos_(double x) { return ::cos(x); }
    static __device__ __forceinline__ double sinh_(double x) { return ::sinh(x); }
    static __device__ __forceinline__ double cosh_(double x) { return ::cosh(x); }
    static __device__ __forceinline__ double fabs_(double x) { return ::fabs(x); }
    static __device__ __forceinline__ double pow_(double x, double y) { return ::pow(x, y); }
};

template <typename T>
struct __align__(2 * sizeof(T)) complex {
    typedef T value_type;
    T _re, _im;

    __host__ __device__ complex(const T &re = T(), const T &im = T()) : _re(re), _im(im) {}
    template <typename U>
    __host__ __device__ complex(const complex<U> &z) : _re(T(z.real())), _im(T(z.imag())) {}
    complex(const complex &) = default;  // (defaulted: for host and device alike)
    complex &operator=(const complex &) = default;

    // Volatile access, for reductions through volatile shared memory (a warp's last
    // steps, as PyCUDA-era kernels write them): read a volatile complex into a plain
    // one, store a plain or volatile one into a volatile one.
    __host__ __device__ complex(const volatile complex &z) : _re(z._re), _im(z._im) {}
    __host__ __device__ volatile complex &operator=(const complex &z) volatile {
        _re = z._re;
        _im = z._im;
        return *this;
    }
    __host__ __device__ volatile complex &operator=(const volatile complex &z) volatile {
        _re = z._re;
        _im = z._im;
        return *this;
    }

    __host__ __device__ T real() const { return _re; }
    __host__ __device__ T imag() const { return _im; }
    __host__ __device__ T real() const volatile { return _re; }
    __host__ __device__ T imag() const volatile { return _im; }
    __host__ __device__ void real(T re) { _re = re; }
    __host__ __device__ void imag(T im) { _im = im; }

    __host__ __device__ complex &operator=(const T &x) { _re = x; _im = T(); return *this; }
    template <typename U>
    __host__ __device__ complex &operator=(const complex<U> &z) {
        _re = T(z.real());
        _im = T(z.imag());
        return *this;
    }
    __host__ __device__ complex &operator+=(const T &x) { _re += x; return *this; }
    __host__ __device__ complex &operator-=(const T &x) { _re -= x; return *this; }
    __host__ __device__ complex &operator*=(const T &x) { _re *= x; _im *= x; return *this; }
    __host__ __device__ complex &operator/=(const T &x) { _re /= x; _im /= x; return *this; }
    template <typename U>
    __host__ __device__ complex &operator+=(const complex<U> &z) {
        _re += z.real();
        _im += z.imag();
        return *this;
    }
    template <typename U>
    __host__ __device__ complex &operator-=(const complex<U> &z) {
        _re -= z.real();
        _im -= z.imag();
        return *this;
    }
    template <typename U>
    __host__ __device__ complex &operator*=(const complex<U> &z) {
        const T re = _re * z.real() - _im * z.imag();
        _im = _re * z.imag() + _im * z.real();
        _re = re;
        return *this;
    }
    template <typename U>
    __host__ __device__ complex &operator/=(const complex<U> &z) {
        *this = *this / complex<T>(z);
        return *this;
    }
};

template <typename T>
__host__ __device__ inline T real(const complex<T> &z) { return z.real(); }
template <typename T>
__host__ __device__ inline T imag(const complex<T> &z) { return z.imag(); }
template <typename T>
__host__ __device__ inline complex<T> conj(const complex<T> &z) { return complex<T>(z.real(), -z.imag()); }
template <typename T>
__host__ __device__ inline T norm(const complex<T> &z) { return z.real() * z.real() + z.imag() * z.imag(); }

template <typename T>
__host__ __device__ inline complex<T> operator+(const complex<T> &a, const complex<T> &b) { return complex<T>(a.real() + b.real(), a.imag() + b.imag()); }
template <typename T>
__host__ __device__ inline complex<T> operator+(const complex<T> &a, const T &b) { return complex<T>(a.real() + b, a.imag()); }
template <typename T>
__host__ __device__ inline complex<T> operator+(const T &a, const complex<T> &b) { return complex<T>(a + b.real(), b.imag()); }
template <typename T>
__host__ __device__ inline complex<T> operator-(const complex<T> &a, const complex<T> &b) { return complex<T>(a.real() - b.real(), a.imag() - b.imag()); }
template <typename T>
__host__ __device__ inline complex<T> operator-(const complex<T> &a, const T &b) { return complex<T>(a.real() - b, a.imag()); }
template <typename T>
__host__ __device__ inline complex<T> operator-(const T &a, const complex<T> &b) { return complex<T>(a - b.real(), -b.imag()); }
template <typename T>
__host__ __device__ inline complex<T> operator*(const complex<T> &a, const complex<T> &b) {
    return complex<T>(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
}
template <typename T>
__host__ __device__ inline complex<T> operator*(const complex<T> &a, const T &b) { return complex<T>(a.real() * b, a.imag() * b); }
template <typename T>
__host__ __device__ inline complex<T> operator*(const T &a, const complex<T> &b) { return complex<T>(a * b.real(), a * b.imag()); }

// Division scaled by the larger part of the divisor (Smith's method), so that
// neither |b|^2 nor the products overflow or underflow for ordinary values.
template <typename T>
__device__ inline complex<T> operator/(const complex<T> &a, const complex<T> &b) {
    const T br = b.real(), bi = b.imag();
    if (complex_math<T>::fabs_(br) >= complex_math<T>::fabs_(bi)) {
        const T r = bi / br, d = br + bi * r;
        return complex<T>((a.real() + a.imag() * r) / d, (a.imag() - a.real() * r) / d);
    }
    const T r = br / bi, d = bi + br * r;
    return complex<T>((a.real() * r + a.imag()) / d, (a.imag() * r - a.real()) / d);
}
template <typename T>
__host__ __device__ inline complex<T> operator/(const complex<T> &a, const T &b) { return complex<T>(a.real() / b, a.imag() / b); }
template <typename T>
__device__ inline complex<T> operator/(const T &a, const complex<T> &b) { return complex<T>(a) / b; }

// The arithmetic on volatile operands (one or both): each read once into a plain value.
template <typename T>
__host__ __device__ inline complex<T> operator+(const volatile complex<T> &a, const volatile complex<T> &b) { return complex<T>(a) + complex<T>(b); }
template <typename T>
__host__ __device__ inline complex<T> operator-(const volatile complex<T> &a, const volatile complex<T> &b) { return complex<T>(a) - complex<T>(b); }
template <typename T>
__host__ __device__ inline complex<T> operator*(const volatile complex<T> &a, const volatile complex<T> &b) { return complex<T>(a) * complex<T>(b); }
template <typename T>
__device__ inline complex<T> operator/(const volatile complex<T> &a, const volatile complex<T> &b) { return complex<T>(a) / complex<T>(b); }

template <typename T>
__host__ __device__ inline complex<T> operator+(const complex<T> &a) { return a; }
template <typename T>
__host__ __device__ inline complex<T> operator-(const complex<T> &a) { return complex<T>(-a.real(), -a.imag()); }

template <typename T>
__host__ __device__ inline bool operator==(const complex<T> &a, const complex<T> &b) { return a.real() == b.real() && a.imag() == b.imag(); }
template <typename T>
__host__ __device__ inline bool operator==(const complex<T> &a, const T &b) { return a.real() == b && a.imag() == T(); }
template <typename T>
__host__ __device__ inline bool operator==(const T &a, const complex<T> &b) { return b == a; }
template <typename T>
__host__ __device__ inline bool operator!=(const complex<T> &a, const complex<T> &b) { return !(a == b); }
template <typename T>
__host__ __device__ inline bool operator!=(const complex<T> &a, const T &b) { return !(a == b); }
template <typename T>
__host__ __device__ inline bool operator!=(const T &a, const complex<T> &b) { return !(b == a); }

template <typename T>
__device__ inline T abs(const complex<T> &z) { return complex_math<T>::hypot_(z.real(), z.imag()); }
template <typename T>
__device__ inline T arg(const complex<T> &z) { return complex_math<T>::atan2_(z.imag(), z.real()); }
template <typename T>
__device__ inline complex<T> polar(const T &rho, const T &theta = T()) {
    return complex<T>(rho * complex_math<T>::cos_(theta), rho * complex_math<T>::sin_(theta));
}

template <typename T>
__device__ inline complex<T> exp(const complex<T> &z) { return polar(complex_math<T>::exp_(z.real()), z.imag()); }
template <typename T>
__device__ inline complex<T> log(const complex<T> &z) { return complex<T>(complex_math<T>::log_(abs(z)), arg(z)); }
template <typename T>
__device__ inline complex<T> log10(const complex<T> &z) { return log(z) / complex_math<T>::log_(T(10)); }

template <typename T>
__device__ inline complex<T> sqrt(const complex<T> &z) {
    const T x = z.real(), y = z.imag();
    if (x == T()) {
        const T t = complex_math<T>::sqrt_(complex_math<T>::fabs_(y) / T(2));
        return complex<T>(t, y < T() ? -t : t);
    }
    const T t = complex_math<T>::sqrt_(T(2) * (abs(z) + complex_math<T>::fabs_(x)));
    const T u = t / T(2);
    return x > T() ? complex<T>(u, y / t) : complex<T>(complex_math<T>::fabs_(y) / t, y < T() ? -u : u);
}

template <typename T>
__device__ inline complex<T> sin(const complex<T> &z) {
    const T x = z.real(), y = z.imag();
    return complex<T>(complex_math<T>::sin_(x) * complex_math<T>::cosh_(y), complex_math<T>::cos_(x) * complex_math<T>::sinh_(y));
}
template <typename T>
__device__ inline complex<T> cos(const complex<T> &z) {
    const T x = z.real(), y = z.imag();
    return complex<T>(complex_math<T>::cos_(x) * complex_math<T>::cosh_(y), -complex_math<T>::sin_(x) * complex_math<T>::sinh_(y));
}
template <typename T>
__device__ inline complex<T> tan(const complex<T> &z) { return sin(z) / cos(z); }
template <typename T>
__device__ inline complex<T> sinh(const complex<T> &z) {
    const T x = z.real(), y = z.imag();
    return complex<T>(complex_math<T>::sinh_(x) * complex_math<T>::cos_(y), complex_math<T>::cosh_(x) * complex_math<T>::sin_(y));
}
template <typename T>
__device__ inline complex<T> cosh(const complex<T> &z) {
    const T x = z.real(), y = z.imag();
    return complex<T>(complex_math<T>::cosh_(x) * complex_math<T>::cos_(y), complex_math<T>::sinh_(x) * complex_math<T>::sin_(y));
}
template <typename T>
__device__ inline complex<T> tanh(const complex<T> &z) { return sinh(z) / cosh(z); }

template <typename T>
__device__ inline complex<T> pow(const complex<T> &z, const complex<T> &w) {
    return (z == T()) ? complex<T>() : exp(w * log(z));
}
template <typename T>
__device__ inline complex<T> pow(const complex<T> &z, const T &x) {
    if (z.imag() == T() && z.real() > T())
        return complex<T>(complex_math<T>::pow_(z.real(), x));
    return (z == T()) ? complex<T>() : exp(x * log(z));
}
template <typename T>
__device__ inline complex<T> pow(const T &x, const complex<T> &w) {
    return (x == T()) ? complex<T>() : exp(w * complex_math<T>::log_(x));
}
template <typename T>
__device__ inline complex<T> pow(const complex<T> &z, int n) { return pow(z, T(n)); }

}  // namespace pycuda
}  // extern "C++"

#endif  // CUKIT_PYCUDA_COMPLEX_HPP
