// scalar.cuh - the four element types of cukit's own factorizations (float, double and
// their complex pairs) behind one set of operations, so each algorithm is written once.
#pragma once

template <typename R> struct Cx {
    R x, y;
};

template <typename T> struct RealOf { typedef T type; };
template <typename R> struct RealOf<Cx<R>> { typedef R type; };

template <typename R> __device__ __forceinline__ Cx<R> operator+(Cx<R> a, Cx<R> b) {
    return Cx<R>{a.x + b.x, a.y + b.y};
}
template <typename R> __device__ __forceinline__ Cx<R> operator-(Cx<R> a, Cx<R> b) {
    return Cx<R>{a.x - b.x, a.y - b.y};
}
template <typename R> __device__ __forceinline__ Cx<R> operator-(Cx<R> a) { return Cx<R>{-a.x, -a.y}; }
template <typename R> __device__ __forceinline__ Cx<R> operator*(Cx<R> a, Cx<R> b) {
    return Cx<R>{a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x};
}
template <typename R> __device__ __forceinline__ Cx<R> operator*(Cx<R> a, R b) {
    return Cx<R>{a.x * b, a.y * b};
}
// Division scaled by the larger part of the divisor (Smith's), as LAPACK's ladiv.
template <typename R> __device__ __forceinline__ Cx<R> operator/(Cx<R> a, Cx<R> b) {
    if (fabs(b.x) >= fabs(b.y)) {
        R r = b.y / b.x, d = b.x + b.y * r;
        return Cx<R>{(a.x + a.y * r) / d, (a.y - a.x * r) / d};
    }
    R r = b.x / b.y, d = b.y + b.x * r;
    return Cx<R>{(a.x * r + a.y) / d, (a.y * r - a.x) / d};
}
template <typename R> __device__ __forceinline__ Cx<R> operator/(Cx<R> a, R b) {
    return Cx<R>{a.x / b, a.y / b};
}

__device__ __forceinline__ float conjg(float a) { return a; }
__device__ __forceinline__ double conjg(double a) { return a; }
template <typename R> __device__ __forceinline__ Cx<R> conjg(Cx<R> a) { return Cx<R>{a.x, -a.y}; }

__device__ __forceinline__ float re(float a) { return a; }
__device__ __forceinline__ double re(double a) { return a; }
template <typename R> __device__ __forceinline__ R re(Cx<R> a) { return a.x; }

__device__ __forceinline__ float im(float) { return 0; }
__device__ __forceinline__ double im(double) { return 0; }
template <typename R> __device__ __forceinline__ R im(Cx<R> a) { return a.y; }

__device__ __forceinline__ float abs2(float a) { return a * a; }
__device__ __forceinline__ double abs2(double a) { return a * a; }
template <typename R> __device__ __forceinline__ R abs2(Cx<R> a) { return a.x * a.x + a.y * a.y; }

__device__ __forceinline__ float absv(float a) { return fabsf(a); }
__device__ __forceinline__ double absv(double a) { return fabs(a); }
template <typename R> __device__ __forceinline__ R absv(Cx<R> a) { return hypot(a.x, a.y); }

// T from a real part and an imaginary part (dropped for real T).
template <typename T> struct Make {
    static __device__ __forceinline__ T of(typename RealOf<T>::type r, typename RealOf<T>::type) {
        return r;
    }
};
template <typename R> struct Make<Cx<R>> {
    static __device__ __forceinline__ Cx<R> of(R r, R i) { return Cx<R>{r, i}; }
};
template <typename T> __device__ __forceinline__ T mk(typename RealOf<T>::type r,
                                                      typename RealOf<T>::type i = 0) {
    return Make<T>::of(r, i);
}

template <typename R> struct Eps;
template <> struct Eps<float> {
    static __device__ __forceinline__ float v() { return 5.9604645e-08f; } // 2^-24
    static __device__ __forceinline__ float tiny() { return 1.1754944e-38f; }
};
template <> struct Eps<double> {
    static __device__ __forceinline__ double v() { return 1.1102230246251565e-16; } // 2^-53
    static __device__ __forceinline__ double tiny() { return 2.2250738585072014e-308; }
};

// The sum over the block of one value per thread (every thread gets it). `buf` is
// blockDim.x elements of shared memory; the caller's last use of it is behind a
// __syncthreads().
template <typename V> __device__ V block_sum(V v, V *buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] = buf[threadIdx.x] + buf[threadIdx.x + s];
        __syncthreads();
    }
    V r = buf[0];
    __syncthreads();
    return r;
}
