// reduce_helpers.cuh - what the operations of cukit's reductions are written with
// (reduce_codegen.c puts the operation's texts after this file, then reduce.cu):
// identities, NaN handling, numpy's arg pairs, a warp shuffle of any type.
#ifndef CK_REDUCE_HELPERS_CUH
#define CK_REDUCE_HELPERS_CUH
#include "../../kernels/preamble.cuh"
template <class T> struct ck_arg { T v; long long i; };
template <class T> CKD T ck_lowest() {
    if constexpr (K<T>::c) { typedef typename P<T>::t Q; return T{(Q)-CK_INF, (Q)-CK_INF}; }
    else if constexpr (K<T>::f) return (T)-CK_INF;
    else if constexpr (K<T>::s) return ck_minval<T>();
    else return (T)0;
}
template <class T> CKD T ck_highest() {
    if constexpr (K<T>::c) { typedef typename P<T>::t Q; return T{(Q)CK_INF, (Q)CK_INF}; }
    else if constexpr (K<T>::f) return (T)CK_INF;
    else if constexpr (K<T>::s) return (T)(~(typename W<T>::t)ck_minval<T>());
    else if constexpr (K<T>::b) return true;
    else return (T)~(T)0;
}
// NaN for floating types, x otherwise (the identity of nanmax and nanmin)
template <class T> CKD T ck_nanor(T x) {
    if constexpr (K<T>::c) { typedef typename P<T>::t Q; return T{(Q)CK_NAN, (Q)CK_NAN}; }
    else if constexpr (K<T>::f) return (T)CK_NAN;
    else return x;
}
template <class T> CKD T ck_nan0(T x) {
    if constexpr (K<T>::c) return CK_CNAN(x) ? T{0, 0} : x;
    else if constexpr (K<T>::f) return x != x ? (T)0 : x;
    else return x;
}
template <class T> CKD typename P<T>::t ck_absq(T x) {
    if constexpr (K<T>::c) return x.re * x.re + x.im * x.im;
    else return x * x;
}
// numpy's argmax/argmin: the first NaN wins, then the first of equal values
template <class T> CKD ck_arg<T> ck_argmax(ck_arg<T> a, ck_arg<T> b) {
    const bool an = uf_isnan(a.v), bn = uf_isnan(b.v);
    if (an || bn) return (an && bn) ? (a.i <= b.i ? a : b) : (an ? a : b);
    if (a.v > b.v) return a;
    if (b.v > a.v) return b;
    return a.i <= b.i ? a : b;
}
template <class T> CKD ck_arg<T> ck_argmin(ck_arg<T> a, ck_arg<T> b) {
    const bool an = uf_isnan(a.v), bn = uf_isnan(b.v);
    if (an || bn) return (an && bn) ? (a.i <= b.i ? a : b) : (an ? a : b);
    if (a.v < b.v) return a;
    if (b.v < a.v) return b;
    return a.i <= b.i ? a : b;
}
template <class T> CKD T ck_shfl(const T &v, int d) {
    enum { N = (int)((sizeof(T) + 3) / 4) };
    int w[N], r[N];
    memcpy(w, &v, sizeof(T));
#pragma unroll
    for (int k = 0; k < N; k++) r[k] = __shfl_down_sync(0xffffffffu, w[k], d);
    T t;
    memcpy(&t, r, sizeof(T));
    return t;
}
#endif // CK_REDUCE_HELPERS_CUH
