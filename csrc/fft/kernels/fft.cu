// fft.cu - cukit's own FFT (fft/own.c launches these): Stockham stages of any radix up
// to MAXR, Bluestein's chirps for other lengths, and the real <-> complex steps.
// params: MAXR=64 (the largest radix of one stage; own.c writes the same)
//
// Data is laid out (outer, n, inner) in complex elements: element i of transform
// (o, j) is at (o * n + i) * inner + j, so a transform along any axis of a C-ordered
// array needs no transposing copy. Every kernel runs a grid-stride loop. Twiddles
// are computed in double (sincospi of an exact fraction) and rounded once, so a
// single-precision transform is as accurate as its arithmetic.

template <typename R> struct Cpx { R x, y; };

template <typename R> __device__ __forceinline__ Cpx<R> cmul(Cpx<R> a, Cpx<R> b) {
    return Cpx<R>{a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x};
}

// exp(2 pi i * q / d) for 0 <= q < d (the sign is folded into q by the caller: d - q).
template <typename R> __device__ __forceinline__ Cpx<R> unit(long long q, long long d) {
    double s, c;
    sincospi(2.0 * (double)q / (double)d, &s, &c);
    return Cpx<R>{(R)c, (R)s};
}

__device__ __forceinline__ long long first_thread() {
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long all_threads() { return (long long)gridDim.x * blockDim.x; }

// One Stockham stage of radix `radix` over sub-transforms of length `ns` (the product
// of the radices before it): the `total` = outer * inner * n / radix butterflies each
// read `radix` elements n / radix apart, twiddle them, take their DFT and write them
// ns apart, in natural order after the last stage. sign -1 forward, +1 inverse;
// every output is multiplied by `scale` (1 but on the last stage).
template <typename R>
__device__ void stage(const Cpx<R> *in, Cpx<R> *out, long long n, long long inner,
                      long long total, int radix, long long ns, int sign, double scale) {
    const long long m = n / radix, span = ns * radix;
    Cpx<R> v[MAXR], w[MAXR];
    for (long long t = first_thread(); t < total; t += all_threads()) {
        const long long j = t % inner, r = t / inner, b = r % m, o = r / m;
        const Cpx<R> *src = in + o * n * inner + j;
        Cpx<R> *dst = out + o * n * inner + j;
        const long long k = b % ns;
        for (int q = 0; q < radix; q++) {
            Cpx<R> x = src[(b + q * m) * inner];
            long long e = (q * k) % span;
            if (e) x = cmul(x, unit<R>(sign < 0 ? span - e : e, span));
            v[q] = x;
        }
        const long long base = (b / ns) * span + k;
        if (radix == 2) {
            Cpx<R> a = v[0], c = v[1];
            dst[base * inner] = Cpx<R>{(R)((a.x + c.x) * scale), (R)((a.y + c.y) * scale)};
            dst[(base + ns) * inner] = Cpx<R>{(R)((a.x - c.x) * scale), (R)((a.y - c.y) * scale)};
            continue;
        }
        if (radix == 4) {
            // the DFT of 4: rotations by -i (forward) or +i (inverse)
            Cpx<R> s02{v[0].x + v[2].x, v[0].y + v[2].y}, d02{v[0].x - v[2].x, v[0].y - v[2].y};
            Cpx<R> s13{v[1].x + v[3].x, v[1].y + v[3].y}, d13{v[1].x - v[3].x, v[1].y - v[3].y};
            // forward: X1 = d02 - i d13, X3 = d02 + i d13; inverse swaps them
            Cpx<R> id13{-d13.y, d13.x};
            Cpx<R> x1 = sign < 0 ? Cpx<R>{d02.x - id13.x, d02.y - id13.y}
                                 : Cpx<R>{d02.x + id13.x, d02.y + id13.y};
            Cpx<R> x3 = sign < 0 ? Cpx<R>{d02.x + id13.x, d02.y + id13.y}
                                 : Cpx<R>{d02.x - id13.x, d02.y - id13.y};
            dst[base * inner] = Cpx<R>{(R)((s02.x + s13.x) * scale), (R)((s02.y + s13.y) * scale)};
            dst[(base + ns) * inner] = Cpx<R>{(R)(x1.x * scale), (R)(x1.y * scale)};
            dst[(base + 2 * ns) * inner] =
                Cpx<R>{(R)((s02.x - s13.x) * scale), (R)((s02.y - s13.y) * scale)};
            dst[(base + 3 * ns) * inner] = Cpx<R>{(R)(x3.x * scale), (R)(x3.y * scale)};
            continue;
        }
        for (int q = 0; q < radix; q++)
            w[q] = unit<R>(sign < 0 ? (radix - q) % radix : q, radix);
        for (int s = 0; s < radix; s++) {
            Cpx<R> acc{0, 0};
            for (int q = 0; q < radix; q++) {
                Cpx<R> p = cmul(v[q], w[(q * s) % radix]);
                acc.x += p.x;
                acc.y += p.y;
            }
            dst[(base + s * ns) * inner] = Cpx<R>{(R)(acc.x * scale), (R)(acc.y * scale)};
        }
    }
}

// out = in * scale over `count` complex elements (a transform of length 1, or norm=
// applied after a library's transform).
template <typename R>
__device__ void scale_copy(const Cpx<R> *in, Cpx<R> *out, long long count, double scale) {
    for (long long t = first_thread(); t < count; t += all_threads())
        out[t] = Cpx<R>{(R)(in[t].x * scale), (R)(in[t].y * scale)};
}

// out = in * scale over `count` real elements (the output of a library's c2r).
template <typename R> __device__ void rscale_copy(const R *in, R *out, long long count, double scale) {
    for (long long t = first_thread(); t < count; t += all_threads()) out[t] = (R)(in[t] * scale);
}

// Bluestein: X_k = c_k * sum_j (x_j c_j) conj(c_{k-j}), c_k = exp(sign pi i k^2 / n), the
// sum a circular convolution of length m >= 2n - 1 taken by FFTs of length m.
// The chirp of c at k, with k^2 reduced modulo 2n so the angle stays exact.
template <typename R> __device__ __forceinline__ Cpx<R> chirp(long long k, long long n, int sign) {
    long long e = (long long)(((unsigned long long)k * (unsigned long long)k) %
                              (unsigned long long)(2 * n));
    return unit<R>(sign < 0 ? (2 * n - e) % (2 * n) : e, 2 * n);
}

// b (length m): conj(c_t) at t and m - t for t < n, zero between.
template <typename R> __device__ void blu_chirp(Cpx<R> *b, long long n, long long m, int sign) {
    for (long long t = first_thread(); t < m; t += all_threads()) {
        long long d = t < n ? t : (m - t < n ? m - t : -1);
        b[t] = d < 0 ? Cpx<R>{0, 0} : chirp<R>(d, n, -sign);
    }
}

// w (outer, m, inner) = x (outer, n, inner) * c, zero past n.
template <typename R>
__device__ void blu_pre(const Cpx<R> *x, Cpx<R> *w, long long n, long long m, long long inner,
                        long long total, int sign) {
    for (long long t = first_thread(); t < total; t += all_threads()) {
        long long j = t % inner, r = t / inner, k = r % m, o = r / m;
        w[t] = k < n ? cmul(x[(o * n + k) * inner + j], chirp<R>(k, n, sign)) : Cpx<R>{0, 0};
    }
}

// w (outer, m, inner) *= bhat (m), the transformed chirp.
template <typename R>
__device__ void blu_mul(Cpx<R> *w, const Cpx<R> *bhat, long long m, long long inner,
                        long long total) {
    for (long long t = first_thread(); t < total; t += all_threads())
        w[t] = cmul(w[t], bhat[(t / inner) % m]);
}

// out (outer, n, inner) = w (outer, m, inner) * c * scale, the first n of each.
template <typename R>
__device__ void blu_post(const Cpx<R> *w, Cpx<R> *out, long long n, long long m,
                         long long inner, long long total, int sign, double scale) {
    for (long long t = first_thread(); t < total; t += all_threads()) {
        long long j = t % inner, r = t / inner, k = r % n, o = r / n;
        Cpx<R> v = cmul(w[(o * m + k) * inner + j], chirp<R>(k, n, sign));
        out[t] = Cpx<R>{(R)(v.x * scale), (R)(v.y * scale)};
    }
}

// Real input widened to complex (count elements).
template <typename R> __device__ void widen(const R *x, Cpx<R> *w, long long count) {
    for (long long t = first_thread(); t < count; t += all_threads())
        w[t] = Cpx<R>{x[t], (R)0};
}

// The full Hermitian spectrum w (outer, n, inner) from its first h = n / 2 + 1 terms
// (outer, h, inner): w_k = h_k for k < h, conj(h_{n-k}) above.
template <typename R>
__device__ void hermitian(const Cpx<R> *h, Cpx<R> *w, long long n, long long hl,
                          long long inner, long long total) {
    for (long long t = first_thread(); t < total; t += all_threads()) {
        long long j = t % inner, r = t / inner, k = r % n, o = r / n;
        if (k < hl) {
            w[t] = h[(o * hl + k) * inner + j];
        } else {
            Cpx<R> v = h[(o * hl + (n - k)) * inner + j];
            w[t] = Cpx<R>{v.x, -v.y};
        }
    }
}

// The real parts of count complex elements.
template <typename R> __device__ void real_part(const Cpx<R> *w, R *x, long long count) {
    for (long long t = first_thread(); t < count; t += all_threads()) x[t] = w[t].x;
}

// One kernel of each per precision: _f (complex64, float32) and _d (complex128, float64).
#define FFT_KERNELS(R, S)                                                                  \
    extern "C" __global__ void fft_stage_##S(const Cpx<R> *in, Cpx<R> *out, long long n,   \
                                             long long inner, long long total, int radix,  \
                                             long long ns, int sign, double scale) {       \
        stage<R>(in, out, n, inner, total, radix, ns, sign, scale);                        \
    }                                                                                      \
    extern "C" __global__ void fft_scale_##S(const Cpx<R> *in, Cpx<R> *out, long long count,  \
                                             double scale) {                               \
        scale_copy<R>(in, out, count, scale);                                              \
    }                                                                                      \
    extern "C" __global__ void fft_rscale_##S(const R *in, R *out, long long count,         \
                                              double scale) {                              \
        rscale_copy<R>(in, out, count, scale);                                             \
    }                                                                                      \
    extern "C" __global__ void fft_blu_chirp_##S(Cpx<R> *b, long long n, long long m,      \
                                                 int sign) {                               \
        blu_chirp<R>(b, n, m, sign);                                                       \
    }                                                                                      \
    extern "C" __global__ void fft_blu_pre_##S(const Cpx<R> *x, Cpx<R> *w, long long n,    \
                                               long long m, long long inner,               \
                                               long long total, int sign) {                \
        blu_pre<R>(x, w, n, m, inner, total, sign);                                        \
    }                                                                                      \
    extern "C" __global__ void fft_blu_mul_##S(Cpx<R> *w, const Cpx<R> *bhat, long long m, \
                                               long long inner, long long total) {         \
        blu_mul<R>(w, bhat, m, inner, total);                                              \
    }                                                                                      \
    extern "C" __global__ void fft_blu_post_##S(const Cpx<R> *w, Cpx<R> *out, long long n, \
                                                long long m, long long inner,              \
                                                long long total, int sign, double scale) { \
        blu_post<R>(w, out, n, m, inner, total, sign, scale);                              \
    }                                                                                      \
    extern "C" __global__ void fft_widen_##S(const R *x, Cpx<R> *w, long long count) {     \
        widen<R>(x, w, count);                                                             \
    }                                                                                      \
    extern "C" __global__ void fft_hermitian_##S(const Cpx<R> *h, Cpx<R> *w, long long n,  \
                                                 long long hl, long long inner,            \
                                                 long long total) {                        \
        hermitian<R>(h, w, n, hl, inner, total);                                           \
    }                                                                                      \
    extern "C" __global__ void fft_real_##S(const Cpx<R> *w, R *x, long long count) {      \
        real_part<R>(w, x, count);                                                         \
    }

FFT_KERNELS(float, f)
FFT_KERNELS(double, d)
