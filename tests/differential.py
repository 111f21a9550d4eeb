"""The emulator against a GPU: a corpus of kernels run on fixed inputs on one backend,
outputs saved; two saves compared bit for bit (integers and IEEE-exact operations) or
within the PTX ISA's stated bounds (the .approx instructions).

The corpus: hand-written kernels (integer and float arithmetic in every rounding mode,
conversions, doubles, approximate functions, shuffles, votes, divergence, barriers,
atomics) and the kernels cukit generates (ufuncs, whose math-library functions are
sequences of IEEE-exact operations; integer reductions and scans; random numbers;
complex128 and complex64 arithmetic and functions), texture fetches, and cuRAND's device
API (Philox and XORWOW: bits, uniform, normal, log-normal, Poisson).

    python tests/differential.py check            (on a machine with a GPU: both, compared)
    CUKIT_BACKEND=gpu      python tests/differential.py run gpu.npz
    CUKIT_BACKEND=emulator python tests/differential.py run emu.npz
    python tests/differential.py compare gpu.npz emu.npz

tests/test_emulator.py runs `check` on a machine with a GPU."""
import os
import subprocess
import sys
import tempfile

import numpy as np

CORPUS = r"""
#include <cuda_fp16.h>
extern "C" __global__ void ints(const unsigned* a, const unsigned* b, unsigned* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i];
    int sx = (int)x, sy = (int)y;
    unsigned long long X = ((unsigned long long)x << 32) | y, Y = ((unsigned long long)y << 29) ^ x;
    unsigned* o = out + 32 * i;
    o[0] = x + y; o[1] = x - y; o[2] = x * y; o[3] = __umulhi(x, y); o[4] = (unsigned)__mulhi(sx, sy);
    o[5] = x / (y | 1); o[6] = x % (y | 1); o[7] = (unsigned)(sx / (sy | 1)); o[8] = (unsigned)(sx % (sy | 1));
    o[9] = x << (y & 31); o[10] = x >> (y & 31); o[11] = (unsigned)(sx >> (y & 31));
    o[12] = __popc(x); o[13] = __clz(x); o[14] = __brev(x); o[15] = __ffs(x);
    o[16] = min(sx, sy); o[17] = max(x, y); o[18] = abs(sx); o[19] = __byte_perm(x, y, y & 0x7777);
    o[20] = __funnelshift_l(x, y, y); o[21] = __funnelshift_r(x, y, x); o[22] = __sad(sx, sy, x);
    o[23] = __dp4a(x, y, 7u); o[24] = (unsigned)(X * Y); o[25] = (unsigned)(X * Y >> 32);
    o[26] = (unsigned)__umul64hi(X, Y); o[27] = (unsigned)(X / (Y | 1)); o[28] = (unsigned)(X % (Y | 1));
    o[29] = __popcll(X); o[30] = __clzll(Y); o[31] = (unsigned)((long long)X >> (y & 63));
}
extern "C" __global__ void floats(const float* a, const float* b, const float* c, float* out, int* k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i], z = c[i];
    float* o = out + 24 * i;
    o[0] = __fadd_rn(x, y); o[1] = __fadd_rz(x, y); o[2] = __fadd_rd(x, y); o[3] = __fadd_ru(x, y);
    o[4] = __fmul_rn(x, y); o[5] = __fmul_rz(x, y); o[6] = __fmul_rd(x, y); o[7] = __fmul_ru(x, y);
    o[8] = __fdiv_rn(x, y); o[9] = __fdiv_rz(x, y); o[10] = __fdiv_rd(x, y); o[11] = __fdiv_ru(x, y);
    o[12] = __fmaf_rn(x, y, z); o[13] = __fmaf_rz(x, y, z); o[14] = __fsqrt_rn(fabsf(x)); o[15] = __fsqrt_rz(fabsf(x));
    o[16] = __frcp_rn(y); o[17] = fminf(x, z); o[18] = fmaxf(x, z); o[19] = copysignf(x, y);
    o[20] = __int2float_rz((int)(x * 1e8f)); o[21] = __uint2float_ru((unsigned)fabsf(y * 1e9f));
    o[22] = __half2float(__float2half_rn(x)); o[23] = __half2float(__hadd(__float2half_rn(x), __float2half_rn(y)));
    int* q = k + 8 * i;
    q[0] = __float2int_rn(x * 1e4f); q[1] = __float2int_rz(x * 1e4f); q[2] = __float2int_rd(x * 1e4f);
    q[3] = __float2int_ru(x * 1e4f); q[4] = __float2int_rn(x * 1e10f); q[5] = (int)__float2uint_rz(x * 1e4f);
    q[6] = (int)__float2ll_rn(x * 1e12f); q[7] = isnan(x / (y - y)) + 2 * isinf(x / (y - y));
}
extern "C" __global__ void doubles(const double* a, const double* b, double* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = a[i], y = b[i];
    double* o = out + 12 * i;
    o[0] = __dadd_rn(x, y); o[1] = __dadd_rz(x, y); o[2] = __dadd_rd(x, y); o[3] = __dadd_ru(x, y);
    o[4] = __dmul_rz(x, y); o[5] = __ddiv_rn(x, y); o[6] = __ddiv_ru(x, y); o[7] = __dsqrt_rn(fabs(x));
    o[8] = __fma_rn(x, y, x); o[9] = (double)__double2float_rz(x); o[10] = (double)__double2ll_rd(x * 1e6);
    o[11] = __drcp_rn(y);
}
extern "C" __global__ void approx(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i];
    float* o = out + 6 * i;
    o[0] = __sinf(x); o[1] = __cosf(x); o[2] = __expf(x * 0.1f); o[3] = __logf(fabsf(x) + 1.0f);
    o[4] = rsqrtf(fabsf(x) + 0.5f); o[5] = __fdividef(x, 1.5f + fabsf(x));
}
extern "C" __global__ void nans(const unsigned* a, const unsigned long long* b, unsigned* o32,
                                 unsigned long long* o64, unsigned short* o16, int n) {
    /* which NaN each operation gives: a holds NaNs with payloads, signs and a signaling one */
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = __uint_as_float(a[i]), y = __uint_as_float(a[(i + 1) % n]);
    double X = __longlong_as_double(b[i]), Y = __longlong_as_double(b[(i + 1) % n]);
    __half h = __float2half_rn(x), k = __float2half_rn(1.5f);
    unsigned* p = o32 + 8 * i;
    p[0] = __float_as_uint(x + 1.0f); p[1] = __float_as_uint(x * y); p[2] = __float_as_uint(fmaf(x, 2.0f, y));
    p[3] = __float_as_uint(sqrtf(x)); p[4] = __float_as_uint(fminf(x, y)); p[5] = __float_as_uint((float)X);
    p[6] = __float_as_uint(-x); p[7] = __float_as_uint(fabsf(x));
    unsigned long long* q = o64 + 6 * i;
    q[0] = __double_as_longlong(X + 1.0); q[1] = __double_as_longlong(X * Y); q[2] = __double_as_longlong(fma(X, 2.0, Y));
    q[3] = __double_as_longlong(sqrt(X)); q[4] = __double_as_longlong(fmin(X, Y)); q[5] = __double_as_longlong((double)x);
    unsigned short* r = o16 + 4 * i;
    r[0] = __half_as_ushort(h); r[1] = __half_as_ushort(__hadd(h, k)); r[2] = __half_as_ushort(__hmul(h, h));
    r[3] = __half_as_ushort(__hfma(h, k, k));
}
extern "C" __global__ void warps(const int* x, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    int v = x[i];
    int* o = out + 8 * i;
    int s = v;
    for (int d = 1; d < 32; d *= 2) { int t = __shfl_up_sync(0xffffffffu, s, d); if (lane >= d) s += t; }
    o[0] = s;
    o[1] = __shfl_sync(0xffffffffu, v, (lane * 7) & 31);
    o[2] = __shfl_down_sync(0xffffffffu, v, 5, 16);
    o[3] = __shfl_xor_sync(0xffffffffu, v, 9);
    o[4] = (int)__ballot_sync(0xffffffffu, v & 1);
    o[5] = __all_sync(0xffffffffu, v > -50) | (__any_sync(0xffffffffu, v > 95) << 1);
    o[6] = (int)__match_any_sync(0xffffffffu, v & 3);
    unsigned m = 0;
    if (v & 2) m = __activemask();
    o[7] = (int)m;
}
extern "C" __global__ void diverge(const int* x, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = x[i], steps = 0, acc = 0;
    while (v != 1 && steps < 500) {
        if (v & 1) { v = 3 * v + 1; acc ^= v; } else { v >>= 1; acc += v; }
        if ((acc & 63) == 5) break;
        steps++;
    }
    switch (steps & 3) { case 0: acc += 1; break; case 1: acc *= 3; break; default: acc -= steps; }
    out[i] = acc;
}
extern "C" __global__ void blocks(const float* x, float* sums, int* hist, unsigned* mx, int n) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * 256 + t;
    float v = i < n ? x[i] : 0.0f;
    s[t] = v;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) { if (t < k) s[t] += s[t + k]; __syncthreads(); }
    if (t == 0) sums[blockIdx.x] = s[0];
    if (i < n) {
        atomicAdd(&hist[((int)(v * 100.0f) & 63)], 1);
        atomicMax(mx, __float_as_uint(fabsf(v)));
        atomicCAS((unsigned*)&hist[64], 0u, (unsigned)i + 1);
    }
}
"""

N = 4096
# the nans kernel's inputs: quiet and signaling NaNs with payloads and both signs, 1.0,
# infinity and the smallest subnormal, as float32 and as float64
NAN_INPUTS = (np.array([0x7fc00000, 0xffc00000, 0x7f800001, 0x7fc12345, 0x3f800000, 0xff812345,
                        0x7f800000, 0x00000001], np.uint32),
              np.array([0x7ff8000000000000, 0xfff8000000000000, 0x7ff0000000000001,
                        0x7ff8123456789abc, 0x3ff0000000000000, 0xfff0000000000123,
                        0x7ff0000000000000, 1], np.uint64))


def inputs():
    rng = np.random.default_rng(20261123)
    u = lambda: rng.integers(0, 2**32, N, dtype=np.uint32)  # noqa: E731
    f = rng.standard_normal(N).astype(np.float32) * np.float32(3)
    f[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-42, 3.4e38]
    g = (rng.standard_normal(N) * 2).astype(np.float32)
    h = rng.standard_normal(N).astype(np.float32)
    d = rng.standard_normal(N) * 100
    e = rng.standard_normal(N) + 0.1
    ints = rng.integers(-100, 100, N, dtype=np.int32)
    coll = rng.integers(1, 100000, N, dtype=np.int32)
    return u(), u(), f, g, h, d, e, ints, coll


def run(path):
    import cukit

    out = {}
    # first of all, while the process's device memory is fresh: it reads as zero
    out["fresh_memory"] = np.array([np.count_nonzero(cukit.empty(n, np.uint8).get())
                                    for n in (1, 1000, 1 << 16, 1 << 20, 1 << 24)], np.int64)
    mod = cukit.compile(CORPUS, name="corpus.cu")
    a, b, f, g, h, d, e, ints, coll = inputs()
    dev = lambda v: cukit.to_device(v)  # noqa: E731
    grid, block = N // 128, 128

    o = cukit.zeros(32 * N, np.uint32)
    mod.ints(dev(a), dev(b), o, N, grid=grid, block=block)
    out["ints"] = o.get()
    o, k = cukit.zeros(24 * N, np.float32), cukit.zeros(8 * N, np.int32)
    mod.floats(dev(f), dev(g), dev(h), o, k, N, grid=grid, block=block)
    out["floats"], out["float_to_int"] = o.get(), k.get()
    o = cukit.zeros(12 * N, np.float64)
    mod.doubles(dev(d), dev(e), o, N, grid=grid, block=block)
    out["doubles"] = o.get()
    o = cukit.zeros(6 * N, np.float32)
    mod.approx(dev(f), o, N, grid=grid, block=block)
    out["approx"] = o.get()
    nan32, nan64 = NAN_INPUTS
    o32, o64, o16 = cukit.zeros(64, np.uint32), cukit.zeros(48, np.uint64), cukit.zeros(32, np.uint16)
    mod.nans(dev(nan32), dev(nan64), o32, o64, o16, 8, grid=1, block=8)
    out["nans_f32"], out["nans_f64"], out["nans_f16"] = o32.get(), o64.get(), o16.get()
    o = cukit.zeros(8 * N, np.int32)
    mod.warps(dev(ints), o, N, grid=grid, block=block)
    out["warps"] = o.get()
    o = cukit.zeros(N, np.int32)
    mod.diverge(dev(coll), o, N, grid=grid, block=block)
    out["diverge"] = o.get()
    sums, hist, mx = cukit.zeros(N // 256, np.float32), cukit.zeros(65, np.int32), cukit.zeros(1, np.uint32)
    mod.blocks(dev(h), sums, hist, mx, N, grid=N // 256, block=256)
    out["block_sums"], out["hist"], out["atomic_max"] = sums.get(), hist.get()[:64], mx.get()
    out["cas_set"] = (hist.get()[64:] > 0).astype(np.int32)  # which thread wins is a race
    generated(cukit, out, f, d, ints)
    complex_math(cukit, out, d, e)
    textures(cukit, out, h)
    curand_draws(cukit, out)
    float8(cukit, out, f)
    wide_ints(cukit, out, a, b)
    contraction(cukit, out, f, g, h, d, e)
    np.savez(path, **out)
    print(f"{path}: {len(out)} outputs on {cukit.backend()}")


def generated(cukit, out, f, d, ints):
    """Kernels cukit generates, on the same inputs."""
    dev = cukit.to_device
    x32, x64 = dev(f[8:]), dev(d)                     # finite floats
    pos32, pos64 = dev(np.abs(f[8:]) + np.float32(0.5)), dev(np.abs(d) + 0.5)
    for name in ("exp", "log", "sin", "cos", "tanh", "expm1", "log1p", "arctan", "cbrt"):
        fn = getattr(cukit, name)
        arg32, arg64 = (pos32, pos64) if name in ("log", "log1p") else (x32, x64)
        if name in ("exp", "expm1"):
            arg32, arg64 = arg32 * np.float32(0.1), arg64 * 0.01
        out[f"ufunc_{name}_f32"] = fn(arg32).get()
        out[f"ufunc_{name}_f64"] = fn(arg64).get()
    out["ufunc_power_f64"] = cukit.power(pos64, x64 * 0.05).get()
    out["ufunc_divide_f32"] = (x32 / pos32).get()
    out["ufunc_hypot_f32"] = cukit.hypot(x32, pos32).get()
    i = dev(ints.reshape(64, -1))
    out["reduce_sum_i32"] = cukit.sum(i, axis=1).get()
    out["reduce_max_i32"] = cukit.max(i, axis=0).get()
    out["reduce_argmin_i32"] = cukit.argmin(i, axis=1).get()
    out["cumsum_i32"] = cukit.cumsum(dev(ints)).get()
    g = cukit.random.Generator(cukit.random.Philox(20261123))
    out["random_f64"] = g.random(N * 4).get()
    out["random_f32"] = g.random(N * 4, dtype=np.float32).get()
    out["random_integers"] = g.integers(-1000, 1000, N * 4).get()
    out["random_normal_f64"] = g.normal(size=N * 4).get()
    out["random_normal_f32"] = g.normal(size=N * 4, dtype=np.float32).get()


def complex_math(cukit, out, d, e):
    """complex128 and complex64 arithmetic and functions as cukit's ufuncs run them
    (multiply, divide, a*x + b*y as PyCUDA's axpbyz does it, log10, exp, sqrt, abs)."""
    dev = cukit.to_device
    z = (d * 0.01 + 1j * e).astype(np.complex128)
    w = (e + 1j * d * 0.01).astype(np.complex128)
    for dt in (np.complex128, np.complex64):
        tag = "c128" if dt == np.complex128 else "c64"
        x, y = dev(z.astype(dt)), dev(w.astype(dt))
        res = {"mul": x * y, "div": x / y, "axpbyz": x * dt(1.5 - 0.25j) + y * dt(-0.5 + 2j)}
        for name in ("log10", "exp", "sqrt", "absolute"):
            res[name] = getattr(cukit, name)(x)
        for name, r in res.items():  # real and imaginary parts side by side: floats
            v = r.get()
            out[f"complex_{name}_{tag}"] = v.view(v.real.dtype) if np.iscomplexobj(v) else v


def textures(cukit, out, h):
    """Texture fetches: point sampling (exact) with clamp and wrap addressing, and linear
    filtering (the hardware's 8-bit weights; within float32 rounding of them)."""
    hh, ww = 37, 53
    img = h[:hh * ww].reshape(hh, ww).astype(np.float32)
    ca = cukit.CudaArray((hh, ww), np.float32)
    ca.set(img)
    mod = cukit.compile(r"""
    extern "C" __global__ void sample(cudaTextureObject_t t, const float* xs, const float* ys,
                                      float* o, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) o[i] = tex2D<float>(t, xs[i], ys[i]);
    }""", name="textures.cu")
    n = 4096
    k = np.arange(n)
    xs = ((k * 0.7311) % (ww + 6) - 3).astype(np.float32)  # past the edges on both sides
    ys = ((k * 0.3177) % (hh + 6) - 3).astype(np.float32)
    x, y = cukit.to_device(xs), cukit.to_device(ys)
    for name, tex, sx, sy in [
            ("tex_point_clamp", cukit.Texture(ca), 1.0, 1.0),
            ("tex_point_wrap", cukit.Texture(ca, address_mode="wrap", normalized_coords=True),
             1.0 / ww, 1.0 / hh),
            ("tex_linear", cukit.Texture(ca, filter_mode="linear", address_mode="clamp"), 1.0, 1.0)]:
        o = cukit.empty(n, np.float32)
        xx = x if sx == 1.0 else cukit.to_device((xs * np.float32(sx)).astype(np.float32))
        yy = y if sy == 1.0 else cukit.to_device((ys * np.float32(sy)).astype(np.float32))
        mod.sample(tex, xx, yy, o, n, grid=n // 128, block=128)
        out[name] = o.get()


WIDE = r"""
extern "C" __global__ void wide(const unsigned* a, const unsigned* b, unsigned* o32,
                                unsigned long long* o64, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i], z = a[(i + 1) % n], r[6];
    // carry chains that mix additions and subtractions (CF after sub.cc: 1 = no borrow)
    asm("sub.cc.u32 %0, %2, %3;\n\taddc.u32 %1, %4, %4;" : "=r"(r[0]), "=r"(r[1]) : "r"(x), "r"(y), "r"(z));
    asm("add.cc.u32 %0, %2, %3;\n\tsubc.u32 %1, %4, %3;" : "=r"(r[2]), "=r"(r[3]) : "r"(x), "r"(y), "r"(z));
    asm("sub.cc.u32 %0, %2, %3;\n\tmadc.lo.u32 %1, %2, %3, %4;" : "=r"(r[4]), "=r"(r[5]) : "r"(x), "r"(y), "r"(z));
    for (int k = 0; k < 6; k++) o32[6 * i + k] = r[k];
    unsigned long long X = ((unsigned long long)x << 32) | y, Y = ((unsigned long long)z << 32) | (x ^ y);
    unsigned __int128 p = ((unsigned __int128)X << 64) | Y, q = ((unsigned __int128)(Y | 1) << (x & 63)) | (y | 1);
    __int128 sp = (__int128)p, sq = (__int128)q;
    unsigned __int128 w[6] = {p / q, p % q, (unsigned __int128)(sp / sq), (unsigned __int128)(sp % sq),
                              p * q, p - q};
    unsigned long long lo, hi;
    // a .b128 register packed, copied and unpacked
    asm("{\n\t.reg .b128 t, u;\n\tmov.b128 t, {%2, %3};\n\tmov.b128 u, t;\n\tmov.b128 {%0, %1}, u;\n\t}"
        : "=l"(lo), "=l"(hi) : "l"(X), "l"(Y));
    unsigned long long* o = o64 + 14 * i;
    for (int k = 0; k < 6; k++) { o[2 * k] = (unsigned long long)w[k]; o[2 * k + 1] = (unsigned long long)(w[k] >> 64); }
    o[12] = lo; o[13] = hi;
}
"""


def wide_ints(cukit, out, a, b):
    """Mixed carry chains, NVRTC's __int128 arithmetic (division and modulo mix sub.cc
    with addc) and .b128 moves: exact integers."""
    mod = cukit.compile(WIDE, name="wide.cu", options=["--device-int128"])
    o32, o64 = cukit.zeros(6 * N, np.uint32), cukit.zeros(14 * N, np.uint64)
    mod.wide(cukit.to_device(a), cukit.to_device(b), o32, o64, N, grid=N // 128, block=128)
    out["carry_chains"], out["int128"] = o32.get(), o64.get()


CONTRACTION = r"""
struct cf { float re, im; };
struct cd { double re, im; };
extern "C" __global__ void contract(const float* x, const float* y, const float* z, float* o,
                                    const double* X, const double* Y, double* O, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = y[i], c = z[i], r[3];
    // mul and add/sub without a rounding modifier: ptxas fuses them into one fma
    asm("{ .reg .f32 t; mul.f32 t, %1, %2; add.f32 %0, t, %3; }" : "=f"(r[0]) : "f"(a), "f"(b), "f"(c));
    asm("{ .reg .f32 t; mul.f32 t, %1, %2; sub.f32 %0, t, %3; }" : "=f"(r[1]) : "f"(a), "f"(b), "f"(c));
    asm("{ .reg .f32 t; mul.f32 t, %1, %2; sub.f32 %0, %3, t; }" : "=f"(r[2]) : "f"(a), "f"(b), "f"(c));
    for (int k = 0; k < 3; k++) o[3 * i + k] = r[k];
    // a complex<float> divided by a complex<double>, as PyCUDA's complex does it
    cf u = {a, b};
    cd v = {X[i], Y[i]};
    double den = v.re * v.re + v.im * v.im;
    O[2 * i] = (u.re * v.re + u.im * v.im) / den;
    O[2 * i + 1] = (u.im * v.re - u.re * v.im) / den;
}
"""


def contraction(cukit, out, f, g, h, d, e):
    """Floating-point contraction: mul then add/sub without rounding modifiers, which
    ptxas fuses, and mixed-precision complex division."""
    mod = cukit.compile(CONTRACTION, name="contraction.cu")
    x, y = f[8:N + 8], g
    z = np.resize(x[:N - 8] * y[:N - 8] * np.float32(1 + 2**-20), N).astype(np.float32)
    o, O = cukit.zeros(3 * N, np.float32), cukit.zeros(2 * N, np.float64)
    mod.contract(cukit.to_device(np.resize(x, N)), cukit.to_device(y), cukit.to_device(z), o,
                 cukit.to_device(d), cukit.to_device(e), O, N, grid=N // 128, block=128)
    out["contraction_f32"], out["complex_div_mixed"] = o.get(), O.get()


def float8(cukit, out, f):
    """cuda_fp8.h's conversions, as sm_89 and later run them: float and half pairs to
    e4m3 and e5m2 (cvt.rn.satfinite: round to nearest even, saturating) and back to half
    pairs (cvt.rn.f16x2.e4m3x2), on values of every float8 binade, past the largest, NaNs
    of both signs and payloads, infinities and zeros."""
    mod = cukit.compile(r"""
    #include <cuda_fp8.h>
    extern "C" __global__ void f8(const float2* x, const __half2_raw* h, unsigned short* o,
                                  unsigned* back, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        __nv_fp8x2_storage_t a = __nv_cvt_float2_to_fp8x2(x[i], __NV_SATFINITE, __NV_E4M3);
        __nv_fp8x2_storage_t b = __nv_cvt_float2_to_fp8x2(x[i], __NV_SATFINITE, __NV_E5M2);
        o[4 * i] = a; o[4 * i + 1] = b;
        o[4 * i + 2] = __nv_cvt_halfraw2_to_fp8x2(h[i], __NV_SATFINITE, __NV_E4M3);
        o[4 * i + 3] = __nv_cvt_halfraw2_to_fp8x2(h[i], __NV_SATFINITE, __NV_E5M2);
        __half2_raw p = __nv_cvt_fp8x2_to_halfraw2(a, __NV_E4M3), q = __nv_cvt_fp8x2_to_halfraw2(b, __NV_E5M2);
        back[2 * i] = p.x | (unsigned)p.y << 16; back[2 * i + 1] = q.x | (unsigned)q.y << 16;
    }""", name="float8.cu")
    special = np.array([0x7fc00000, 0xffc00000, 0x7fa00001, 0xff800001, 0x7f800000, 0xff800000,
                        0, 0x80000000], np.uint32).view(np.float32)
    edges = np.array([448, 464, 465, 480, 57344, 61439, 61440, 1e30, 2.0**-9, 2.0**-10,
                      3 * 2.0**-11, 2.0**-16, 2.0**-17, 3 * 2.0**-18, 1e-40], np.float32)
    scales = np.float32(2.0) ** np.arange(-20, 20, dtype=np.float32)
    x = np.concatenate([special, edges, -edges, (f[:4096].reshape(-1, 1) * scales[::4]).ravel()])
    x = np.resize(x, (x.size + 255) // 256 * 256)
    h = x.astype(np.float16)
    n = x.size // 2
    o, back = cukit.zeros(4 * n, np.uint16), cukit.zeros(2 * n, np.uint32)
    mod.f8(cukit.to_device(x.view(np.complex64)), cukit.to_device(h), o, back, n, grid=n // 128,
           block=128)
    out["float8"], out["float8_back"] = o.get(), back.get()


def curand_draws(cukit, out):
    """cuRAND's device API (curand_kernel.h), Philox and XORWOW: uniform and integer draws
    are integer arithmetic (bit for bit); float32 normals go through sin.approx.f32 (Box-
    Muller), log-normals through ex2.approx.ftz.f32 too, float64 normals through
    rcp.approx.ftz.f64 (which the ISA defines exactly)."""
    mod = cukit.compile(r"""
    #include <curand_kernel.h>
    template <typename S>
    __device__ void draw(S* s, unsigned* bits, float* u, float* nf, double* nd, float* ln,
                         unsigned* po, int i, int n) {
        bits[i] = curand(s);
        u[i] = curand_uniform(s);
        nf[i] = curand_normal(s);
        nd[i] = curand_normal_double(s);
        ln[i] = curand_log_normal(s, 0.5f, 0.75f);
        po[i] = curand_poisson(s, 3.5);
    }
    extern "C" __global__ void philox(unsigned* bits, float* u, float* nf, double* nd, float* ln,
                                      unsigned* po, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        curandStatePhilox4_32_10_t s;
        curand_init(20261127ull, i, 3, &s);
        draw(&s, bits, u, nf, nd, ln, po, i, n);
    }
    extern "C" __global__ void xorwow(unsigned* bits, float* u, float* nf, double* nd, float* ln,
                                      unsigned* po, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        curandState s;
        curand_init(20261127ull, i, 0, &s);
        draw(&s, bits, u, nf, nd, ln, po, i, n);
    }""", name="curand_draws.cu")
    n = 2048
    for gen in ("philox", "xorwow"):
        bufs = [cukit.empty(n, t) for t in (np.uint32, np.float32, np.float32, np.float64,
                                            np.float32, np.uint32)]
        getattr(mod, gen)(*bufs, n, grid=n // 128, block=128)
        for name, b in zip(("bits", "uniform", "normal_f32", "normal_f64", "log_normal_f32",
                            "poisson"), bufs):
            out[f"curand_{gen}_{name}"] = b.get()


# abs, rel bounds looser than the ISA's worst case for the .approx instructions (float32
# normals take one hardware log2)
APPROX = {"approx": (2.0 ** -20, 2.0 ** -20), "random_normal_f32": (2.0 ** -20, 2.0 ** -19),
          "tex_linear": (2.0 ** -20, 2.0 ** -20),
          "curand_philox_normal_f32": (2.0 ** -20, 2.0 ** -19),
          "curand_xorwow_normal_f32": (2.0 ** -20, 2.0 ** -19),
          "curand_philox_log_normal_f32": (2.0 ** -19, 2.0 ** -19),
          "curand_xorwow_log_normal_f32": (2.0 ** -19, 2.0 ** -19)}
# Results of CUDA's math library that go through an .approx instruction (ex2, lg2, rcp of
# float32; the float64 reciprocal's first guess in normcdfinv): the hardware's tables are
# not published, so the emulator's last bits may differ. Each is within the library's
# documented maximum error of the exact result; the two may differ by at most that many
# units in the last place.
ULPS = {"ufunc_exp_f32": 2, "ufunc_tanh_f32": 2, "ufunc_arctan_f32": 2, "ufunc_cbrt_f32": 1,
        "ufunc_sin_f32": 2, "ufunc_cos_f32": 2, "ufunc_log_f32": 1, "ufunc_expm1_f32": 1,
        "ufunc_log1p_f32": 1, "random_normal_f64": 5,
        # complex64 functions: float32 expf, logf, hypotf inside (CUDA: 2, 2, 3 ulp)
        "complex_log10_c64": 2, "complex_exp_c64": 2, "complex_sqrt_c64": 3,
        "complex_absolute_c64": 3}


# Outputs where the emulator is known to differ from the GPU today, with why: reported,
# not counted, until fixed (issue 24). An entry that matches again says so, to be removed.
KNOWN = {
    # H100, 2026-11-27: 4-6% of the elements differ in the last bits. CUDA's double
    # complex log10, sqrt and abs go through hypot and log, whose first guesses come from
    # rcp.approx.ftz.f64 / rsqrt.approx.f64; the emulator's reading of those tables is
    # not the hardware's.
    "complex_log10_c128": "double hypot/log first guesses (rcp/rsqrt .approx.f64)",
    "complex_sqrt_c128": "double hypot/log first guesses (rcp/rsqrt .approx.f64)",
    "complex_absolute_c128": "double hypot first guess (rsqrt.approx.f64)",
    # H100, 2026-11-27: up to 7e-3 apart. A later H100 probe found the weight's tie
    # rounded up (the emulator rounded it to even): one-dimensional filtering is now bit
    # for bit (16,384 coordinates on a 1/8192 grid, texels of any size); this corpus
    # samples in two dimensions, where 11,009 of 20,000 probe samples still differ by up
    # to 9.4e-3 under every model tried (weights rounded or cut, lerp in x then y).
    "tex_linear": "two-dimensional linear filtering: up to 9.4e-3 apart, cause not found yet",
}


def ulps_apart(x, y):
    """How many representable numbers lie between x and y (NaN and NaN: 0)."""
    it = np.int64 if x.dtype == np.float64 else np.int32
    a, b = x.view(it).astype(np.int64), y.view(it).astype(np.int64)
    # the bit patterns of negative numbers run backwards: make the order monotonic
    a = np.where(a < 0, np.iinfo(it).min - a, a)
    b = np.where(b < 0, np.iinfo(it).min - b, b)
    d = np.abs(a - b)
    return np.where(np.isnan(x) & np.isnan(y), 0, d)


def compare(p, q):
    a, b = np.load(p), np.load(q)
    arrays = elements = bad = 0
    for name in a.files:
        x, y = a[name], b[name]
        arrays += 1
        elements += x.size
        if name in APPROX:
            atol, rtol = APPROX[name]
            ok = np.isclose(x, y, atol=atol, rtol=rtol, equal_nan=True)
        elif name in ULPS:
            ok = ulps_apart(x, y) <= ULPS[name]
        else:
            ok = x.view(np.uint8).reshape(x.size, -1) == y.view(np.uint8).reshape(y.size, -1)
            ok = ok.all(axis=1)
        n = int((~ok).sum())
        mode = ("within bounds" if name in APPROX else f"within {ULPS[name]} ulp" if name in ULPS
                else "bit for bit")
        verdict = "OK" if n == 0 else f"{n} DIFFER"
        if name in KNOWN:
            verdict = (f"{n} differ, known: {KNOWN[name]}" if n else
                       "OK, though listed in KNOWN: remove it there")
        else:
            bad += n
        print(f"{name:14s} {x.size:7d} elements {mode:13s} {verdict}")
        if n:
            idx = np.flatnonzero(~ok)[:5]
            print("    first:", [(int(i), x.flat[i], y.flat[i]) for i in idx])
    print(f"{arrays} outputs, {elements} elements, {bad} differ")
    return bad


def check(folder):
    """Run the corpus on the GPU and on the emulator (each in a process of its own) and
    compare. The number of elements that differ (0 passes)."""
    for backend in ("gpu", "emulator"):
        r = subprocess.run([sys.executable, __file__, "run", os.path.join(folder, backend + ".npz")],
                           env=dict(os.environ, CUKIT_BACKEND=backend), text=True,
                           capture_output=True, timeout=900)
        print(r.stdout, end="")
        if r.returncode != 0:
            sys.exit(f"the corpus failed on the {backend} backend:\n{r.stderr}")
    return compare(os.path.join(folder, "gpu.npz"), os.path.join(folder, "emulator.npz"))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "run":
        run(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(1 if compare(sys.argv[2], sys.argv[3]) else 0)
    elif len(sys.argv) in (2, 3) and sys.argv[1] == "check":
        if len(sys.argv) == 3:
            sys.exit(1 if check(sys.argv[2]) else 0)
        with tempfile.TemporaryDirectory() as folder:
            sys.exit(1 if check(folder) else 0)
    else:
        sys.exit(__doc__)
