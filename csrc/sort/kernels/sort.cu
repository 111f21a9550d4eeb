// sort.cu - the sort kernels (sort/sort.c and sort/radix.c launch them): a tile sort and
// merge passes for short rows, searchsorted, unique's flags and scatter, and the LSD
// radix sort's histogram and onesweep pass. sort.c compiles them in groups (CUKIT_WANT):
// the merge sort's, the radix sort's, searchsorted's, unique's, each at its first use.
// params: SORT_T=float SORT_U=unsigned KBYTES=4 KSIGN=0x80000000u KFLOAT=1 KEXP=0x7f800000u KLT=1 RITEMS=17
//
// sort.c writes in front, for the element type: SORT_T (the element), SORT_U (the unsigned
// type of its bits), KBYTES (its bytes: the radix passes), KSIGN (the bit flipped),
// KFLOAT and KEXP (a float's exponent mask: above it, NaN), KLT (how two elements
// compare: 0 integers, 1 float32, 2 float64, 3 float16, 4 bfloat16) and RITEMS (keys a
// thread of the radix pass: 17, 11 for 8-byte keys, within its shared memory).
#include "../../compile/kernels/one_kernel.cuh"
typedef SORT_T T;
typedef SORT_U U;

// numpy's order: NaN after everything, NaNs equal among themselves (so a stable sort
// keeps their order), -0.0 equal to +0.0.
__device__ __forceinline__ bool flt(float a, float b) { return b != b ? a == a : a < b; }
#if KLT == 0
#define lt(a, b) ((a) < (b))
#elif KLT == 1
#define lt(a, b) flt(a, b)
#elif KLT == 2
__device__ __forceinline__ bool lt(double a, double b) { return b != b ? a == a : a < b; }
#elif KLT == 3
__device__ __forceinline__ float h2f(T h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
#define lt(a, b) flt(h2f(a), h2f(b))
#else
#define lt(a, b) flt(__uint_as_float((unsigned)(a) << 16), __uint_as_float((unsigned)(b) << 16))
#endif

// ------------------------------------------------------------------ tile sort and merges
//
// Rows of length L sort independently (the axis is moved last first). Tiles of 256
// elements of a row are sorted in shared memory, each thread placing its element by
// its rank (the elements less than it, and the equal ones before it: stable). Then
// passes of width w = 256, 512, ... merge pairs of sorted runs: an element of the
// left run lands at its index plus the count of elements of the right run less than
// it (a binary search); one of the right run at its index plus the count of the left
// run's elements not greater than it, so equal keys keep their order. Every pass is
// one kernel over all elements, reading one buffer and writing the other.
#define TILE 256
#if CUKIT_WANT(cukit_tile_sort)
extern "C" __global__ void __launch_bounds__(TILE)
cukit_tile_sort(const T *in, T *out, long long *iout, long long L, long long tiles, int with_index)
{
    __shared__ T s[TILE];
    const long long row = blockIdx.x / tiles, t = blockIdx.x % tiles;
    const long long base = row * L + t * TILE;
    const int cnt = (int)(L - t * TILE < TILE ? L - t * TILE : TILE), i = threadIdx.x;
    if (i < cnt) s[i] = in[base + i];
    __syncthreads();
    if (i >= cnt) return;
    const T x = s[i];
    int r = 0;
    for (int j = 0; j < cnt; j++) { const T y = s[j]; r += lt(y, x) || (j < i && !lt(x, y)); }
    out[base + r] = x;
    if (with_index) iout[base + r] = t * TILE + i;
}
#endif
#if CUKIT_WANT(cukit_merge)
extern "C" __global__ void __launch_bounds__(256)
cukit_merge(const T *in, T *out, const long long *iin, long long *iout, long long n,
            long long L, long long w, int with_index)
{
    const long long e = blockIdx.x * 256LL + threadIdx.x;
    if (e >= n) return;
    const long long row = e / L, p = e % L, start = p / (2 * w) * (2 * w);
    const long long mid = start + w < L ? start + w : L, end = start + 2 * w < L ? start + 2 * w : L;
    const T *r = in + row * L;
    const T x = r[p];
    long long lo, hi, pos;
    if (p < mid) {
        lo = mid; hi = end;
        while (lo < hi) { long long m = (lo + hi) / 2; if (lt(r[m], x)) lo = m + 1; else hi = m; }
        pos = p + (lo - mid);
    } else {
        lo = start; hi = mid;
        while (lo < hi) { long long m = (lo + hi) / 2; if (!lt(x, r[m])) lo = m + 1; else hi = m; }
        pos = start + (p - mid) + (lo - start);
    }
    out[row * L + pos] = x;
    if (with_index) iout[row * L + pos] = iin[e];
}
#endif
#if CUKIT_WANT(cukit_search)
extern "C" __global__ void __launch_bounds__(256)
cukit_search(const T *a, long long na, const T *v, long long *out, long long nv, int right)
{
    const long long e = blockIdx.x * 256LL + threadIdx.x;
    if (e >= nv) return;
    const T x = v[e];
    long long lo = 0, hi = na;
    while (lo < hi) {
        long long m = (lo + hi) / 2;
        if (right ? !lt(x, a[m]) : lt(a[m], x)) lo = m + 1; else hi = m;
    }
    out[e] = lo;
}
#endif
#if CUKIT_WANT(cukit_unique_flags)
extern "C" __global__ void __launch_bounds__(256)
cukit_unique_flags(const T *s, long long *f, long long n)
{
    const long long e = blockIdx.x * 256LL + threadIdx.x;
    if (e < n) f[e] = e == 0 || lt(s[e - 1], s[e]);
}
#endif
#if CUKIT_WANT(cukit_unique_scatter)
extern "C" __global__ void __launch_bounds__(256)
cukit_unique_scatter(const T *s, const long long *f, const long long *pos, T *out,
                     const long long *sidx, long long *oidx, long long *first, long long *inv,
                     long long n)
{
    const long long e = blockIdx.x * 256LL + threadIdx.x;
    if (e >= n) return;
    const long long p = pos[e] - 1;
    if (f[e]) { out[p] = s[e]; if (oidx) oidx[p] = sidx[e]; if (first) first[p] = e; }
    if (inv) inv[sidx[e]] = p;
}
#endif
#if CUKIT_WANT(cukit_unique_counts)
extern "C" __global__ void __launch_bounds__(256)
cukit_unique_counts(const long long *first, long long *counts, long long u, long long n)
{
    const long long j = blockIdx.x * 256LL + threadIdx.x;
    if (j < u) counts[j] = (j + 1 < u ? first[j + 1] : n) - first[j];
}
#endif

// ------------------------------------------------------------------ the radix sort
//
// Keys are read as unsigned bits and mapped, on every read, to order-preserving
// unsigned keys (canon): integers flip the sign bit; floats flip the sign bit of
// positives and all bits of negatives, after -0.0 is made +0.0 and every NaN the
// largest key. The buffers keep the original bits, so -0.0 stays -0.0 and a NaN keeps
// its payload, while the sort itself sees -0.0 == 0.0 and all NaNs equal and last:
// numpy's stable order exactly, with no pass to map keys in or out.
//
// 8-bit digits, least significant first (one pass a byte of the key). One histogram
// kernel counts every pass's digits in one read. Then per pass one kernel: a block
// (RBLOCK threads: the first 256 own a digit each in the per-digit steps) takes tiles in the order of an atomic ticket, loads RITEMS keys a thread (a warp
// owns 32 * RITEMS consecutive keys, key j of lane l at j * 32 + l: coalesced, and
// the warp's order is the input's), ranks them stably by digit (the lanes holding the
// same digit found with 8 ballots; per-warp counters in shared memory, which the
// group's highest lane bumps with an atomic add and hands the old count to the group
// by a shuffle: the shuffle orders the next key's add after this one), publishes its
// per-digit counts (decoupled look-back), places the keys in shared memory in digit
// order and writes them out, runs of one digit going to consecutive addresses. The
// tile's digits are counted and published before the keys are ranked.
//
// Look-back: a tile's status word for a digit packs a 2-bit flag and a 30-bit count
// (so a row has fewer than 2^30 keys less the larger of 4096 and a tile: room for a
// last tile's padding): AGG, the tile's own count, or INC, the count plus everything before
// it (tile 0: the digit's start from the histogram). Flag and value travel in one
// 32-bit word written by one volatile store and read by one volatile load, so a
// reader sees the whole old word or the whole new one, and no fence is needed: the
// word carries no other data (the keys scattered by a pass are read only by the next
// kernel). The thread of digit d spins on the previous tile's word while its flag is
// 0 and walks back over AGG words until an INC one. A block waits only on tiles whose
// ticket was taken earlier, by blocks already running (on a GPU, resident; on the
// emulator, running on a host thread or finished): the spin cannot deadlock.
// The pass kernel: 512 threads a block, two blocks an SM in its launch bounds (64
// registers), 17 keys a thread (11 of 8 bytes), the tile's digits counted before the
// keys are ranked: the fastest shape measured (2^26 keys on an H100).
#define RBLOCK 512
#define RMINB 2
#define RWARPS (RBLOCK / 32)
#define RTILE (RBLOCK * RITEMS)
#define ST_AGG 0x40000000u
#define ST_INC 0x80000000u
#define ST_VAL 0x3fffffffu
#define M_INDEX 1
#define M_FIRST 2
#define M_LAST 4
#define M_NOKEYS 8
#define LOAD_INDEX() if (mode & M_INDEX) { \
    _Pragma("unroll") for (int j = 0; j < RITEMS; j++) { \
        const long long e = w0 + j * 32 + lane; \
        idx[j] = (mode & M_FIRST) ? (unsigned)e : e < n ? iin[e] : 0u; \
    } }
__device__ __forceinline__ U canon(U b)
{
#if KFLOAT
    if ((U)(b & (U)~(U)KSIGN) > (U)KEXP) return (U)~(U)0;
    if (b == (U)KSIGN) b = 0;
    return (b & (U)KSIGN) ? (U)~b : (U)(b | (U)KSIGN);
#else
    return (U)(b ^ (U)KSIGN);
#endif
}
#if KFLOAT
#define KPAD ((U)~(U)0)
#else
#define KPAD ((U)~(U)KSIGN)
#endif
__device__ __forceinline__ unsigned digit_of(U b, int shift)
{
    return (unsigned)(canon(b) >> shift) & 255u;
}
__device__ __forceinline__ unsigned block_excl(unsigned v, unsigned *wtot)
{
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const unsigned y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) wtot[w] = x;
    __syncthreads();
    unsigned add = 0;
    for (int i = 0; i < w; i++) add += wtot[i];
    __syncthreads();
    return add + x - v;
}
__device__ __forceinline__ unsigned warp_rank(unsigned d, unsigned *wc, int lane, unsigned below)
{
    unsigned peers = 0xffffffffu;
#pragma unroll
    for (int b = 0; b < 8; b++) {
        const unsigned m = (unsigned)((int)(d << (31 - b)) >> 31);
        peers &= ~(__ballot_sync(0xffffffffu, m) ^ m);
    }
    const int leader = 31 - __clz(peers);
    unsigned old = 0;
    if (lane == leader) old = atomicAdd(&wc[d], __popc(peers));
    return __shfl_sync(0xffffffffu, old, leader) + __popc(peers & below);
}
#define HPARTS 4
#define HIDX(q, i) ((q) * (KBYTES * 256) + (i))
#if CUKIT_WANT(cukit_radix_hist)
extern "C" __global__ void __launch_bounds__(256)
cukit_radix_hist(const U *in, long long n, unsigned *hist, long long rstride)
{
    in += blockIdx.y * n;
    hist += blockIdx.y * rstride;
    __shared__ unsigned h[HPARTS * KBYTES * 256];
    for (int i = threadIdx.x; i < HPARTS * KBYTES * 256; i += 256) h[i] = 0;
    __syncthreads();
    const int q = threadIdx.x % HPARTS;
    const long long stride = (long long)gridDim.x * 1024;
    for (long long e0 = blockIdx.x * 1024LL + threadIdx.x; e0 < n; e0 += stride) {
        U k[4];
#pragma unroll
        for (int j = 0; j < 4; j++) k[j] = e0 + j * 256 < n ? canon(in[e0 + j * 256]) : (U)0;
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (e0 + j * 256 < n)
#pragma unroll
                for (int p = 0; p < KBYTES; p++)
                    atomicAdd(&h[HIDX(q, p * 256 + ((unsigned)(k[j] >> (8 * p)) & 255u))], 1u);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < KBYTES * 256; i += 256) {
        unsigned c = 0;
#pragma unroll
        for (int p = 0; p < HPARTS; p++) c += h[HIDX(p, i)];
        if (c) atomicAdd(&hist[i], c);
    }
}
#endif
#if CUKIT_WANT(cukit_radix_pass)
extern "C" __global__ void __launch_bounds__(RBLOCK, RMINB)
cukit_radix_pass(const U *kin, U *kout, const unsigned *iin, unsigned *iout, long long *iout64,
                 long long n, const unsigned *hist, unsigned *ticket, unsigned *status,
                 long long rstride, int shift, int mode)
{
    const long long roff = blockIdx.y * n, soff = blockIdx.y * rstride;
    kin += roff; kout += roff; iin += roff; iout += roff; iout64 += roff;
    hist += soff; ticket += soff; status += soff;
    __shared__ union { U k[RTILE]; unsigned v[RTILE]; unsigned c[RWARPS * 256]; } sm;
    __shared__ unsigned tex[256], base[256], wtot[RWARPS], tile_s;
#define PLACE(j, dj) (sm.k[rank[j]] = key[j])
#define SDIG_KEY(k, i) digit_of(k, shift)
#define SDIG(j, i) sd[j]
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    if (tid == 0) tile_s = atomicAdd(ticket, 1u);
    for (int i = tid; i < RWARPS * 256; i += RBLOCK) sm.c[i] = 0;
    __syncthreads();
    const unsigned tile = tile_s;
    const long long t0 = (long long)tile * RTILE, w0 = t0 + w * (RITEMS * 32);
    U key[RITEMS];
    unsigned rank[RITEMS];
    unsigned *const wc = sm.c + w * 256;
    const unsigned below = (1u << lane) - 1u;
    if (t0 + RTILE <= n) {
#pragma unroll
        for (int j = 0; j < RITEMS; j++) key[j] = kin[w0 + j * 32 + lane];
    } else {
#pragma unroll
        for (int j = 0; j < RITEMS; j++) {
            const long long e = w0 + j * 32 + lane;
            key[j] = e < n ? kin[e] : KPAD;
        }
    }
    unsigned dpk[(RITEMS + 3) / 4];
#pragma unroll
    for (int j = 0; j < (RITEMS + 3) / 4; j++) dpk[j] = 0;
#pragma unroll
    for (int j = 0; j < RITEMS; j++) {
        const unsigned dj = digit_of(key[j], shift);
        dpk[j >> 2] |= dj << (8 * (j & 3));
        atomicAdd(&wc[dj], 1u);
    }
    __syncthreads();
    const int d = tid;
#define DIGIT_THREAD (RBLOCK == 256 || d < 256)
    unsigned cnt = 0;
    if (DIGIT_THREAD) {
#pragma unroll
        for (int i = 0; i < RWARPS; i++) { const unsigned c = sm.c[i * 256 + d]; sm.c[i * 256 + d] = cnt; cnt += c; }
    }
    volatile unsigned *const mine = status + (size_t)tile * 256 + d;
    if (tile > 0 && DIGIT_THREAD) *mine = ST_AGG | cnt;
    const unsigned ex = block_excl(cnt, wtot);
    unsigned start = 0;
    if (tile == 0) {
        start = block_excl(DIGIT_THREAD ? hist[d] : 0u, wtot);
        if (DIGIT_THREAD) *mine = ST_INC | (start + cnt);
    }
    unsigned idx[RITEMS];
    if (DIGIT_THREAD) {
#pragma unroll
        for (int i = 0; i < RWARPS; i++) sm.c[i * 256 + d] += ex;
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < RITEMS; j++) rank[j] = warp_rank((dpk[j >> 2] >> (8 * (j & 3))) & 255u, wc, lane, below);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < RITEMS; j++) PLACE(j, (dpk[j >> 2] >> (8 * (j & 3))) & 255u);
    LOAD_INDEX();
    if (tile > 0 && DIGIT_THREAD) {
        const volatile unsigned *p = status + (size_t)(tile - 1) * 256 + d;
        for (;;) {
            const unsigned s = *p;
            if (s & (ST_AGG | ST_INC)) {
                start += s & ST_VAL;
                if (s & ST_INC) break;
                p -= 256;
            }
        }
        *mine = ST_INC | (start + cnt);
    }
    if (DIGIT_THREAD) base[d] = start - ex;
    __syncthreads();
    const long long valid = n - t0;
    unsigned sd[RITEMS];
#pragma unroll
    for (int j = 0; j < RITEMS; j++) {
        const int i = tid + j * RBLOCK;
        const U k = sm.k[i];
        sd[j] = SDIG_KEY(k, i);
        if (!(mode & M_NOKEYS) && i < valid) kout[base[sd[j]] + i] = k;
    }
    if (mode & M_INDEX) {
        __syncthreads();
#pragma unroll
        for (int j = 0; j < RITEMS; j++) sm.v[rank[j]] = idx[j];
        __syncthreads();
#pragma unroll
        for (int j = 0; j < RITEMS; j++) {
            const int i = tid + j * RBLOCK;
            if (i < valid) {
                const unsigned pos = base[SDIG(j, i)] + i;
                if (mode & M_LAST) iout64[pos] = sm.v[i]; else iout[pos] = sm.v[i];
            }
        }
    }
}
#endif
