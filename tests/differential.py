"""The emulator against a GPU: a corpus of kernels run on fixed inputs on one backend,
outputs saved; two saves compared bit for bit (integers and IEEE-exact operations) or
within the PTX ISA's stated bounds (the .approx instructions).

    CUKIT_BACKEND=gpu      python tests/differential.py run gpu.npz
    CUKIT_BACKEND=emulator python tests/differential.py run emu.npz
    python tests/differential.py compare gpu.npz emu.npz

tests/test_emulator.py runs both and compares them on a machine with a GPU."""
import sys

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

    mod = cukit.compile(CORPUS, name="corpus.cu")
    a, b, f, g, h, d, e, ints, coll = inputs()
    dev = lambda v: cukit.to_device(v)  # noqa: E731
    out = {}
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
    np.savez(path, **out)
    print(f"{path}: {len(out)} outputs on {cukit.backend()}")


APPROX = {"approx": (2.0 ** -20, 2.0 ** -20)}  # abs, rel bounds looser than the ISA's worst case


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
        else:
            ok = x.view(np.uint8).reshape(x.size, -1) == y.view(np.uint8).reshape(y.size, -1)
            ok = ok.all(axis=1)
        n = int((~ok).sum())
        bad += n
        mode = "within bounds" if name in APPROX else "bit for bit"
        print(f"{name:14s} {x.size:7d} elements {mode:13s} {'OK' if n == 0 else f'{n} DIFFER'}")
        if n:
            idx = np.flatnonzero(~ok)[:5]
            print("    first:", [(int(i), x.flat[i], y.flat[i]) for i in idx])
    print(f"{arrays} outputs, {elements} elements, {bad} differ")
    return bad


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "run":
        run(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(1 if compare(sys.argv[2], sys.argv[3]) else 0)
    else:
        sys.exit(__doc__)
