// scan.cu - the scans (compute/reduce/scan.c launches them): the 1-D tile kernel (cks:
// decoupled look-back, each warp staging its part of the tile), a warp a line (ckw) and
// a thread a line (ckl).
// params: CK_IT=32 CK_EXCL=0
//
// scan_codegen.c writes in front: the preamble, the types TI (input), TO (output) and TA
// (accumulator), CK_IT (items a thread of a tile: 32, 8 for accumulators over 4 bytes),
// CK_EXCL (1: exclusive), the operation ck_op(a, b) and its neutral element
// ck_neutral(), then defines CK_SCAN_OP. On its own (the device-file test) the file is a
// float32 sum.
#include "../../kernels/preamble.cuh"
#include "../../../compile/kernels/one_kernel.cuh"
#ifndef CK_SCAN_OP
typedef float TI;
typedef float TO;
typedef float TA;
CKD TA ck_op(const TA a, const TA b) { return a + b; }
CKD TA ck_neutral() { return 0; }
#endif
// The look-back: a lane reads CK_SLOOK tiles a step, sleeping CK_SSPIN ns between reads
// of tiles not ready.
#define CK_SLOOK 1
#define CK_SSPIN 32
// ck_wsh(v, d, mode): a warp shuffle of any T, word by word: mode 0 reads lane d,
// 1 the lane d below, 2 the lane d above.
template <class T> CKD T ck_wsh(const T &v, int d, int mode) {
    enum { N = (int)((sizeof(T) + 3) / 4) };
    int w[N], r[N];
    memcpy(w, &v, sizeof(T));
#pragma unroll
    for (int k = 0; k < N; k++)
        r[k] = mode == 1 ? __shfl_up_sync(0xffffffffu, w[k], d)
             : mode == 2 ? __shfl_down_sync(0xffffffffu, w[k], d) : __shfl_sync(0xffffffffu, w[k], d);
    T t;
    memcpy(&t, r, sizeof(T));
    return t;
}
// A tile's status and value in one 64-bit word, for accumulators of up to 4 bytes: the
// flag in the high half, the value's bytes in the low one.
template <class T> CKD unsigned long long ck_pack(unsigned flag, const T &v) {
    unsigned u = 0;
    memcpy(&u, &v, sizeof(T) < 4 ? sizeof(T) : 4);
    return (unsigned long long)flag << 32 | u;
}
template <class T> CKD T ck_unpack(unsigned long long w) {
    const unsigned u = (unsigned)w;
    T t = T();
    memcpy(&t, &u, sizeof(T) < 4 ? sizeof(T) : 4);
    return t;
}
template <class T> CKD T ck_vload(const ck_slot *s) {
    // only the words the value fills: a slot's second word is unwritten for 8-byte values
    const volatile unsigned long long *q = (const volatile unsigned long long *)s;
    unsigned long long w[2] = {q[0], sizeof(T) > 8 ? q[1] : 0ull};
    T t;
    memcpy(&t, w, sizeof(T));
    return t;
}
// A look-back step's window: lanes 0..top hold their tiles' values (top's the oldest);
// folded with the oldest on the left, then put left of what the walk folded so far
// (ex, has): the operator need not commute.
CKD void ck_lb_fold(TA x, int lane, int top, TA &ex, bool &has) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const TA o = ck_wsh(x, d, 2);
        if (lane + d <= top) x = ck_op(o, x);
    }
    const TA win = ck_wsh(x, 0, 0);
    ex = has ? ck_op(win, ex) : win;
    has = true;
}
struct ck_sargs {
    unsigned long long in, out, status;
    long long n, sin, sout, nlines;
    int ntiles, nd;
    unsigned epoch, spare;
    long long lshape[8], lsin[8], lsout[8];
};
#define CK_PAD(i) ((i) + ((i) >> 5))
// the tile's 16-byte loads and stores: streaming (evict first: each byte is read once
// and written once)
#define CK_LD16(p) __ldcs(p)
#define CK_ST16(p, v) __stcs(p, v)
// a hint to the L2: fetch the line holding p (a no-op where the source is built for a
// host, as the tests' host shim does)
CKD void ck_prefetch_l2(const void *p) {
#ifdef __CUDA_ARCH__
    asm volatile("prefetch.global.L2 [%0];" :: "l"(p));
#else
    (void)p;
#endif
}
#define CK_TILE (256 * CK_IT)
// 16-byte accesses of whole tiles: E elements a vector, NC vectors a tile.
template <class T> struct ck_v16 {
    enum { ok = sizeof(T) <= 16 && 16 % sizeof(T) == 0, E = ok ? 16 / sizeof(T) : 1,
           NC = CK_TILE / E, STEPS = (NC + 255) / 256 };
};
// One tile of CK_TILE elements a block: tile blockIdx.x. Every tile a block waits on
// belongs to a block that started earlier (a GPU starts a grid's blocks in index order, as CUB's and Thrust's
// scans also rely on; the emulator runs them in index order), hence is running or done:
// no spin waits on a block that is not scheduled. The block loads its tile into shared memory (16-byte
// vectors when the input is contiguous, aligned and the tile whole), scans it, and warp 0
// finds the sum of all tiles before it by decoupled look-back.
//
// p.status (scan.c lays it out): 16 bytes unused, then from byte 16 per tile j either one 64-bit word
// (accumulators of up to 4 bytes: the flag in its high half, the value's bytes in the low
// one, so one volatile store publishes both and one volatile load reads both, no fences,
// as CUB's tile status for small types), or (wider accumulators) flags[j], then agg[j]
// and incl[j] of 16 bytes each. A flag is (p.epoch << 2) | s, s = 1 for an aggregate, 2
// for an inclusive prefix: a flag of an earlier epoch (an earlier launch on memory the
// stream keeps) reads as nothing published, so the words need no zeroing between launches.
// Wider accumulators' ordering: a publisher stores the value, __threadfence(), then the
// flag with a volatile store; a reader loads the flag with a volatile load (so each spin
// re-reads memory, past L1), __threadfence(), then the value with volatile loads. The two
// fences order the pair (fence-fence synchronization of the PTX memory model: "st value;
// fence; st flag" and "ld flag; fence; ld value"), so a reader that saw flag f reads the
// value published before f. The aggregate stays valid after the flag becomes 2, so a
// reader that saw 1 may read agg[j] at any later time.
// The look-back of tile (> 0) by one warp: wait until every tile a step reads has
// published something, take the nearest inclusive prefix and the aggregates of the tiles
// between it and this one, fold them in tile order (an earlier tile on the left: the
// operator need not commute), and step back while no inclusive prefix was seen. Tile 0
// only ever publishes an inclusive prefix, so the walk ends at tile 0 at the latest. ex:
// the prefix of every tile before this one (has: true). dflt: any value (idle lanes').
CKD void ck_lookback(const ck_sargs &p, int tile, int lane, TA dflt, TA &ex, bool &has) {
    const bool pk = sizeof(TA) <= 4;
    const unsigned ep = p.epoch << 2;
    volatile unsigned long long *const vpk = (volatile unsigned long long *)(p.status + 16);
    volatile int *const vf = (volatile int *)(p.status + 16);
    ck_slot *const agg = (ck_slot *)(p.status + 16 + ((4ull * p.ntiles + 15) / 16) * 16);
    ck_slot *const incl = agg + p.ntiles;
    if (pk) {
    // packed words: lane l looks at CK_SLOOK tiles, j - l * CK_SLOOK - k (k = 0 the
    // nearest), so a step covers 32 * CK_SLOOK tiles. A word before tile 0 reads
    // as ready; tile 0's is always an inclusive prefix, nearer, so it is never used.
    for (int j = tile - 1;; j -= 32 * CK_SLOOK) {
        unsigned long long wd[CK_SLOOK];
        for (;;) {
            bool wait = false;
#pragma unroll
            for (int k = 0; k < CK_SLOOK; k++) {
                const int t = j - lane * CK_SLOOK - k;
                wd[k] = t >= 0 ? vpk[t] : (unsigned long long)(ep | 1u) << 32;
                wait |= ((unsigned)(wd[k] >> 32) & ~3u) != ep;
            }
            if (!__any_sync(0xffffffffu, wait)) break;
            __nanosleep(CK_SSPIN);
        }
        // the nearest inclusive prefix: the lowest lane with one, its nearest word
        int kin = CK_SLOOK;
#pragma unroll
        for (int k = CK_SLOOK - 1; k >= 0; k--)
            if ((unsigned)(wd[k] >> 32) == (ep | 2u)) kin = k;
        const unsigned m = __ballot_sync(0xffffffffu, kin < CK_SLOOK);
        const int top = m ? __ffs(m) - 1 : 31;
        const int kmax = lane == top && m ? kin : CK_SLOOK - 1;
        // each lane folds its words, the oldest on the left
        TA x = dflt;
        bool hx = false;
#pragma unroll
        for (int k = CK_SLOOK - 1; k >= 0; k--) {
            if (k <= kmax) {
                const TA y = ck_unpack<TA>(wd[k]);
                x = hx ? ck_op(x, y) : y;
                hx = true;
            }
        }
        ck_lb_fold(x, lane, top, ex, has);
        if (m) break;
    }
    }
    else {
    // lane l looks at tile j - l, 32 tiles a step
    for (int j = tile - 1;; j -= 32) {
        const int t = j - lane;
        int f;
        for (;;) {
            const unsigned g = t >= 0 ? (unsigned)vf[t] : ep | 1u;
            f = (g & ~3u) == ep ? (int)(g & 3u) : 0;
            if (!__any_sync(0xffffffffu, f == 0)) break;
            __nanosleep(CK_SSPIN);
        }
        __threadfence();
        const unsigned m = __ballot_sync(0xffffffffu, f == 2);
        const int last = m ? __ffs(m) - 1 : 31;
        const int top = last < j ? last : j;
        TA x = dflt;
        if (lane <= top) x = ck_vload<TA>(f == 2 ? &incl[t] : &agg[t]);
        // lane l ends up holding lanes l..top folded (top's tile leftmost)
        ck_lb_fold(x, lane, top, ex, has);
        if (m) break;
    }
    }
}
// The tile's inclusive prefix published (ex, has: the look-back's) and handed to the block.
CKD void ck_tile_done(const ck_sargs &p, int tile, TA ex, bool has, TA aggv, TA &tile_pre,
                      int &tile_has) {
    const unsigned ep = p.epoch << 2;
    const TA mine = has ? ck_op(ex, aggv) : aggv;
    if (sizeof(TA) <= 4) ((volatile unsigned long long *)(p.status + 16))[tile] = ck_pack(ep | 2u, mine);
    else {
        ck_slot *const agg = (ck_slot *)(p.status + 16 + ((4ull * p.ntiles + 15) / 16) * 16);
        memcpy(&agg[p.ntiles + tile], &mine, sizeof(TA));
        __threadfence();
        ((volatile int *)(p.status + 16))[tile] = (int)(ep | 2u);
    }
    tile_pre = ex;
    tile_has = has;
}
#if CUKIT_WANT(cks)
extern "C" __global__ void __launch_bounds__(256) cks(const ck_sargs p) {
    __shared__ TA sh[CK_PAD(CK_TILE) + 1];
    __shared__ TA wsum[8];
    __shared__ TA tile_pre;
    __shared__ int tile_has;
    volatile unsigned long long *const vpk = (volatile unsigned long long *)(p.status + 16);
    volatile int *const vf = (volatile int *)(p.status + 16);
    ck_slot *const agg = (ck_slot *)(p.status + 16 + ((4ull * p.ntiles + 15) / 16) * 16);
    const unsigned ep = p.epoch << 2;
    const bool pk = sizeof(TA) <= 4;
    const char *const in = (const char *)p.in;
    char *const out = (char *)p.out;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const bool vin0 = ck_v16<TI>::ok && p.sin == (long long)sizeof(TI) && (p.in & 15) == 0;
    const bool vout0 = ck_v16<TO>::ok && p.sout == (long long)sizeof(TO) && (p.out & 15) == 0;
    const int w0 = w * 32 * CK_IT;
    enum { EI = ck_v16<TI>::E, NCW = 32 * CK_IT / EI, WSTEPS = (NCW + 31) / 32 };
    // the tile by the block's index: blocks start in index order, so every tile a block
    // waits on is running or done (CUB's scan relies on the same)
    const int tile = (int)blockIdx.x;
    // the tile p.spare tiles ahead (a block that starts later) prefetched into L2, so that
    // DRAM keeps reading while blocks scan and look back: its block finds it there
    if (vin0 && p.spare && tile + (long long)p.spare < p.ntiles) {
        const long long pb = (tile + (long long)p.spare) * CK_TILE * (long long)sizeof(TI);
        const long long pe = min(pb + CK_TILE * (long long)sizeof(TI), p.n * (long long)sizeof(TI));
        for (long long o = pb + threadIdx.x * 128ll; o < pe; o += (long long)blockDim.x * 128)
            ck_prefetch_l2(in + o);
    }
    const long long base = (long long)tile * CK_TILE;
    const bool whole = base + CK_TILE <= p.n;
    // this thread's CK_IT elements: [first, first + cnt) (in every mode)
    const long long first = base + (long long)threadIdx.x * CK_IT;
    const int cnt = (int)min((long long)CK_IT, p.n - first);
    const bool vin = vin0 && whole;
    // staged by each warp: its own run of 32 * CK_IT elements (from w0 of the tile), so a
    // __syncwarp is enough
    if (vin) {
        const uint4 *src = (const uint4 *)(in + (base + w0) * (long long)sizeof(TI));
#pragma unroll
        for (int s = 0; s < WSTEPS; s++) {
            const int c = s * 32 + lane;
            if (NCW % 32 == 0 || c < NCW) {
                const uint4 q = CK_LD16(src + c);
                TI e[EI];
                memcpy(e, &q, sizeof e < 16 ? sizeof e : 16);
#pragma unroll
                for (int k = 0; k < EI; k++) sh[CK_PAD(w0 + c * EI + k)] = cv<TA>(e[k]);
            }
        }
    }
    else {
#pragma unroll
        for (int k = 0; k < CK_IT; k++) {
            const long long i = base + w0 + k * 32 + lane;
            if (i < p.n) sh[CK_PAD(w0 + k * 32 + lane)] = cv<TA>(*(const TI *)(in + i * p.sin));
        }
    }
    __syncwarp();
#define CK_X(k) sh[CK_PAD(threadIdx.x * CK_IT + (k))]
    // the thread's run summed here and again, the same way, when it is written (from
    // the staged tile): CK_IT registers fewer than keeping each prefix
    TA run = CK_X(0);
#pragma unroll
    for (int k = 1; k < CK_IT; k++)
        if (k < cnt) run = ck_op(run, CK_X(k));

    TA inc = run;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const TA o = ck_wsh(inc, d, 1);
        if (lane >= d) inc = ck_op(o, inc);
    }
    if (lane == 31) wsum[w] = inc;
    __syncthreads();
    // every thread folds the 8 warp sums itself (broadcast reads): the sum of the warps
    // before its own, and the tile's aggregate
    TA aggv = wsum[0], wpre = aggv;
#pragma unroll
    for (int k = 1; k < 8; k++) {
        if (k == w) wpre = aggv;
        aggv = ck_op(aggv, wsum[k]);
    }
    if (threadIdx.x == 0 && tile > 0) {
        if (pk) vpk[tile] = ck_pack(ep | 1u, aggv);
        else {
            memcpy(&agg[tile], &aggv, sizeof(TA));
            __threadfence();
            vf[tile] = (int)(ep | 1u);
        }
    }
    if (w == 0) {
        TA ex = aggv;
        bool has = false;
        if (tile > 0) ck_lookback(p, tile, lane, aggv, ex, has);
        if (lane == 0) ck_tile_done(p, tile, ex, has, aggv, tile_pre, tile_has);
    }
    __syncthreads();
    TA pre = inc;
    bool has = false;
    if (tile_has) { pre = tile_pre; has = true; }
    if (w > 0) { const TA x = wpre; pre = has ? ck_op(pre, x) : x; has = true; }
    const TA lp = ck_wsh(inc, 1, 1);
    if (lane > 0) { pre = has ? ck_op(pre, lp) : lp; has = true; }
    const bool vout = vout0 && whole;
    TA r = CK_X(0);
#pragma unroll
    for (int k = 0; k < CK_IT; k++) {
        if (k < cnt) {
            const TA xk = CK_X(k);
            TA o;
            if (CK_EXCL) o = k == 0 ? (has ? pre : ck_neutral()) : (has ? ck_op(pre, r) : r);
            r = k ? ck_op(r, xk) : xk;
            if (!CK_EXCL) o = has ? ck_op(pre, r) : r;
            sh[CK_PAD(threadIdx.x * CK_IT + k)] = o;
        }
    }
    __syncwarp();
    if (vout) {
        enum { E = ck_v16<TO>::E, NCW = 32 * CK_IT / E, WSTEPS = (NCW + 31) / 32 };
        uint4 *dst = (uint4 *)(out + (base + w0) * (long long)sizeof(TO));
#pragma unroll
        for (int s = 0; s < WSTEPS; s++) {
            const int c = s * 32 + lane;
            if (NCW % 32 == 0 || c < NCW) {
                TO e[E];
#pragma unroll
                for (int k = 0; k < E; k++) e[k] = cv<TO>(sh[CK_PAD(w0 + c * E + k)]);
                uint4 q;
                memcpy(&q, e, sizeof e < 16 ? sizeof e : 16);
                CK_ST16(dst + c, q);
            }
        }
    }
    else {
#pragma unroll
        for (int k = 0; k < CK_IT; k++) {
            const long long i = base + w0 + k * 32 + lane;
            if (i < p.n) *(TO *)(out + i * p.sout) = cv<TO>(sh[CK_PAD(w0 + k * 32 + lane)]);
        }
    }
}
#endif
#undef CK_X
CKD void ck_loffs(const ck_sargs &p, long long l, long long &oi, long long &oo) {
    oi = oo = 0;
    for (int d = p.nd - 1; d >= 0; d--) {
        const long long c = l % p.lshape[d];
        l /= p.lshape[d];
        oi += c * p.lsin[d];
        oo += c * p.lsout[d];
    }
}
#if CUKIT_WANT(ckl)
extern "C" __global__ void __launch_bounds__(256) ckl(const ck_sargs p) {
    for (long long l = (long long)blockIdx.x * 256 + threadIdx.x; l < p.nlines;
         l += (long long)gridDim.x * 256) {
        long long oi, oo;
        ck_loffs(p, l, oi, oo);
        const char *in = (const char *)p.in + oi;
        char *out = (char *)p.out + oo;
        TA run = ck_neutral();
        for (long long j = 0; j < p.n; j++) {
            const TA x = cv<TA>(*(const TI *)(in + j * p.sin));
            if (CK_EXCL) *(TO *)(out + j * p.sout) = cv<TO>(run);
            run = j ? ck_op(run, x) : (CK_EXCL ? ck_op(run, x) : x);
            if (!CK_EXCL) *(TO *)(out + j * p.sout) = cv<TO>(run);
        }
    }
}
#endif
#if CUKIT_WANT(ckw)
extern "C" __global__ void __launch_bounds__(256) ckw(const ck_sargs p) {
    const int lane = threadIdx.x & 31;
    const long long nw = (long long)gridDim.x * 8;
    for (long long l = (long long)blockIdx.x * 8 + (threadIdx.x >> 5); l < p.nlines; l += nw) {
        long long oi, oo;
        ck_loffs(p, l, oi, oo);
        const char *in = (const char *)p.in + oi;
        char *out = (char *)p.out + oo;
        TA carry = ck_neutral();
        bool has = false;
        for (long long j0 = 0; j0 < p.n; j0 += 32) {
            const long long j = j0 + lane;
            const bool ok = j < p.n;
            TA inc = cv<TA>(*(const TI *)(in + (ok ? j : j0) * p.sin));
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
                const TA o = ck_wsh(inc, d, 1);
                if (lane >= d) inc = ck_op(o, inc);
            }
            const TA val = has ? ck_op(carry, inc) : inc;
            TA e = ck_wsh(val, 1, 1);
            if (lane == 0) e = has ? carry : ck_neutral();
            if (ok) *(TO *)(out + j * p.sout) = cv<TO>(CK_EXCL ? e : val);
            const long long last = p.n - 1 - j0 < 31 ? p.n - 1 - j0 : 31;
            carry = ck_wsh(val, (int)last, 0);
            has = true;
        }
    }
}
#endif
