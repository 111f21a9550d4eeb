// reduce.cu - the reduction kernels (compute/reduce/reduce.c launches them): each is
// compiled alone (CUKIT_WANT) for an (operation, dtypes) at its first use, so that a
// first a.sum() waits for the kernel it runs, not for the eight layouts'.
// params: CK_V=4 CK_NT=256 CK_FNT=256 CK_MINB=4 CK_RMAXD=8 CK_HAS_INIT=0
//
// reduce_codegen.c writes in front: reduce_helpers.cuh, the operand types T0.. (TO the
// output's, TA the accumulator), CK_NIN (inputs), CK_OPERANDS(X) (X(k, ARRAY), X(k,
// SCALAR) or X(k, RAW) for each input k), the sizes above, and the operation's four
// functions ck_ident(), ck_red(a, b), ck_map(j, inputs...) and ck_post(a, out, n, d);
// then defines CK_REDUCE_OPS. On its own (the device-file test) the file is a float32 sum.
//
// The kernels:
//   ckr_v / ckr_vw   rows whose reduced part is one contiguous aligned run: a block (v)
//                    or a warp (vw) per row and split, 4 vector loads in flight; ckr_v1
//                    is ckr_v for rows not split (no fold in it)
//   ckr_n / ckr_nw   the same over any strides (one index computation per element)
//   ckr_f            a full reduction of one contiguous aligned run
//   ckc              a thread per output, looping over its reduced elements: the reduced
//                    axis is not the innermost, so neighbouring threads read neighbouring
//                    outputs
//   ckcv             32 vectors of CK_V neighbouring outputs per block (axis=0 of a
//                    C-contiguous matrix): a warp reads 32 * 16 contiguous bytes of a row,
//                    four rows in flight, each warp on its own run of the block's rows
// A long reduced range is cut into splits (blocks of their own); there is no second
// kernel: each block stores its partial, counts itself in on a counter of the launch's
// scratch (after a __threadfence), and the last block of a group (every block of a full
// reduction; the splits of one set of columns) folds the group's partials and writes
// the outputs. The counters are zero on entry and the last block resets its own (the
// host zeroes them only in scratch made for the launch), and the scratch is ordered on
// the launch's stream, so concurrent reductions never share one.
// Each thread accumulates its elements in order, then a warp tree (shuffles) and a block
// tree (shared memory) combine the threads: the order is fixed for a launch shape, so
// results are deterministic.
#include "reduce_helpers.cuh"
#include "../../../compile/kernels/one_kernel.cuh"
#ifndef CK_REDUCE_OPS
typedef float T0;
typedef float T1;
typedef T1 TO;
typedef float TA;
#define CK_NIN 1
#define CK_OPERANDS(X) X(0, ARRAY)
CKD TA ck_ident() { return 0; }
CKD TA ck_red(const TA a, const TA b) { return a + b; }
CKD TA ck_map(const long long _j, const T0 x) { (void)_j; return x; }
CKD void ck_post(TA a, TO &y, const long long _n, const double _d) { (void)_n; (void)_d; y = a; }
#endif
#define CK_NOPS (CK_NIN + 1)
// loads in flight: a thread of ckr_f (vectors), a warp of ckcv (rows)
#define CK_FU 8
#define CK_CU 4
template <class V> CKD V ck_ld(const V *p) { return *p; }
struct ck_rargs {
    ck_slot op[CK_NOPS];
    ck_slot init;
    unsigned long long part;
    long long nout, nred, chunk, count;
    double d;
    int splits, kd, rd, fblock;
    long long kshape[CK_RMAXD], rshape[CK_RMAXD];
    long long ks[CK_NOPS][CK_RMAXD], rs[CK_NOPS][CK_RMAXD];
};
// Input k as ck_map takes it: at byte offsets off[k] (ck_mapk), or in a vector
// function's loop over u (load) and e (element), where a scalar or raw pointer is as it
// is and an array's NU vectors of CK_V elements are loaded before the first use (each
// function declares NU): u steps of `step` elements from element j0 at byte offsets
// ko[k] (rows), or u rows of p.rs[k][0] bytes from byte offsets off[k] (columns).
#define CK_AT_SCALAR(k) , *(const T##k *)&p.op[k]
#define CK_AT_RAW(k) , (T##k *)p.op[k].lo
#define CK_AT_ARRAY(k) , *(const T##k *)((const char *)p.op[k].lo + off[k])
#define CK_AT(k, kind) CK_AT_##kind(k)
#define CK_LOAD_SCALAR(k, OFF) const T##k a##k = *(const T##k *)&p.op[k];
#define CK_LOAD_RAW(k, OFF) T##k *const a##k = (T##k *)p.op[k].lo;
#define CK_LOAD_ARRAY(k, OFF)                                                          \
    ck_vec<T##k, CK_V> a##k[NU];                                                       \
    _Pragma("unroll") for (int u = 0; u < NU; u++) a##k[u] =                           \
        ck_ld((const ck_vec<T##k, CK_V> *)((const char *)p.op[k].lo + OFF(k)));
#define CK_ROW_OFF(k) ko[k] + (j0 + u * step) * (long long)sizeof(T##k)
#define CK_COL_OFF(k) off[k] + u * p.rs[k][0]
#define CK_LOAD_ROWS(k, kind) CK_LOAD_##kind(k, CK_ROW_OFF)
#define CK_LOAD_COLS(k, kind) CK_LOAD_##kind(k, CK_COL_OFF)
#define CK_USE_SCALAR(k) , a##k
#define CK_USE_RAW(k) , a##k
#define CK_USE_ARRAY(k) , a##k[u].v[e]
#define CK_USE(k, kind) CK_USE_##kind(k)
// one element at byte offsets off[k] of each array operand
CKD TA ck_mapk(const ck_rargs &p, const long long *off, long long j) {
    (void)off;
    return ck_map(j CK_OPERANDS(CK_AT));
}
// vector loads: NU vectors of each array input, `step` elements apart (one vector, then
// four in the rows, then the full reduction's CK_FU)
template <int NU> CKD TA ck_vecs(TA acc, const ck_rargs &p, const long long *ko, long long j0,
                                 long long step) {
    CK_OPERANDS(CK_LOAD_ROWS)
    (void)step;
#pragma unroll
    for (int u = 0; u < NU; u++) {
#pragma unroll
        for (int e = 0; e < CK_V; e++) acc = ck_red(acc, ck_map(j0 + u * step + e CK_OPERANDS(CK_USE)));
    }
    return acc;
}
CKD TA ck_vec1(TA acc, const ck_rargs &p, const long long *ko, long long j0) {
    return ck_vecs<1>(acc, p, ko, j0, 0);
}
CKD TA ck_vec4(TA acc, const ck_rargs &p, const long long *ko, long long j0, long long step) {
    return ck_vecs<4>(acc, p, ko, j0, step);
}
CKD TA ck_vecu(TA acc, const ck_rargs &p, const long long *ko, long long j0, long long step) {
    return ck_vecs<CK_FU>(acc, p, ko, j0, step);
}
// column vectors: CK_V neighbouring outputs' elements of row j0 (ck_cvec1) or of rows
// j0..j0+CK_CU-1 (ck_cvecu, one reduced dimension), at byte offsets off[k] of row j0;
// each output's in row order, all loads before the first use
template <int NU> CKD void ck_cvecs(TA *acc, const ck_rargs &p, const long long *off, long long j0) {
    (void)p;
    CK_OPERANDS(CK_LOAD_COLS)
#pragma unroll
    for (int u = 0; u < NU; u++) {
#pragma unroll
        for (int e = 0; e < CK_V; e++) acc[e] = ck_red(acc[e], ck_map(j0 + u CK_OPERANDS(CK_USE)));
    }
}
CKD void ck_cvec1(TA *acc, const ck_rargs &p, const long long *off, long long j0) {
    ck_cvecs<1>(acc, p, off, j0);
}
CKD void ck_cvecu(TA *acc, const ck_rargs &p, const long long *off, long long j0) {
    ck_cvecs<CK_CU>(acc, p, off, j0);
}
CKD void ck_koffs(const ck_rargs &p, long long o, long long *ko) {
#pragma unroll
    for (int k = 0; k < CK_NOPS; k++) ko[k] = 0;
    for (int d = p.kd - 1; d >= 0; d--) {
        const long long c = o % p.kshape[d];
        o /= p.kshape[d];
#pragma unroll
        for (int k = 0; k < CK_NOPS; k++) ko[k] += c * p.ks[k][d];
    }
}
CKD void ck_roffs(const ck_rargs &p, const long long *ko, long long j, long long *off) {
    if (p.rd <= 1) {
#pragma unroll
        for (int k = 0; k < CK_NOPS; k++) off[k] = ko[k] + j * p.rs[k][0];
    }
    else {
#pragma unroll
        for (int k = 0; k < CK_NOPS; k++) off[k] = ko[k];
        long long r = j;
        for (int d = p.rd - 1; d >= 0; d--) {
            const long long c = r % p.rshape[d];
            r /= p.rshape[d];
#pragma unroll
            for (int k = 0; k < CK_NOPS; k++) off[k] += c * p.rs[k][d];
        }
    }
}
CKD TA ck_elem(const ck_rargs &p, const long long *ko, long long j) {
    long long off[CK_NOPS];
    ck_roffs(p, ko, j, off);
    return ck_mapk(p, off, j);
}
CKD void ck_final(const ck_rargs &p, const long long *ko, TA a) {
#if CK_HAS_INIT
    a = ck_red(a, *(const TA *)&p.init);
#endif
    TO &y_ = *(TO *)((char *)p.op[CK_NIN].lo + ko[CK_NIN]);
    ck_post(a, y_, p.count, p.d);
}
// The scratch of a launch with splits: a counter per group of blocks that share outputs
// (ncnt of them, zero on entry and left zero), then the partials, split by split
CKD unsigned *ck_counter(const ck_rargs &p, int c) { return (unsigned *)p.part + c; }
CKD TA *ck_parts(const ck_rargs &p, long long ncnt) {
    return (TA *)(p.part + (unsigned long long)(ncnt * 4 + 15) / 16 * 16);
}
CKD void ck_store(const ck_rargs &p, long long o, int s, const long long *ko, TA a, long long ncnt) {
    if (p.splits == 1) ck_final(p, ko, a);
    else ck_parts(p, ncnt)[(long long)s * p.nout + o] = a;
}
// The last block to arrive: each thread fences its partials, one thread counts the
// block in; the block that brings the count to `total` (every block of its group has
// stored) sees true in every thread, fences again, and may read all the partials. It
// resets the counter, so the scratch leaves the launch as it came in.
// (`last`: a __shared__ int of the kernel's own)
CKD bool ck_last(unsigned *c, unsigned total, int &last) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned t = atomicAdd(c, 1u);
        last = t == total - 1;
        if (last) atomicExch(c, 0u);
    }
    __syncthreads();
    const bool r = last != 0;
    if (r) __threadfence();
    return r;
}
template <int TPR> CKD TA ck_group(TA acc, TA *sh) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) acc = ck_red(acc, ck_shfl(acc, d));
    if constexpr (TPR > 32) {
        __syncthreads();
        if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = acc;
        __syncthreads();
        if (threadIdx.x < 32) {
            acc = threadIdx.x < TPR / 32 ? sh[threadIdx.x] : ck_ident();
#pragma unroll
            for (int d = 16; d > 0; d >>= 1) acc = ck_red(acc, ck_shfl(acc, d));
        }
    }
    return acc;
}
// The row kernels' fold, run by the last block: each output's partials (one per split)
// by the whole block where there are few outputs (fblock: a full reduction), else by a
// warp per output; the same tree every launch, so the result is deterministic.
template <int NT> CKD void ck_fold_rows(const ck_rargs &p, TA *sh) {
    const TA *part = ck_parts(p, 1);
    if (p.fblock) {
        for (long long o = 0; o < p.nout; o++) {
            TA acc = ck_ident();
            for (int s = threadIdx.x; s < p.splits; s += NT) acc = ck_red(acc, part[(long long)s * p.nout + o]);
            acc = ck_group<NT>(acc, sh);
            if (threadIdx.x == 0) {
                long long ko[CK_NOPS];
                ck_koffs(p, o, ko);
                ck_final(p, ko, acc);
            }
        }
        return;
    }
    const int lane = threadIdx.x & 31;
    for (long long o = threadIdx.x >> 5; o < p.nout; o += NT / 32) {
        TA acc = ck_ident();
        for (int s = lane; s < p.splits; s += 32) acc = ck_red(acc, part[(long long)s * p.nout + o]);
        acc = ck_group<32>(acc, nullptr);
        if (lane == 0) {
            long long ko[CK_NOPS];
            ck_koffs(p, o, ko);
            ck_final(p, ko, acc);
        }
    }
}
// The column kernels' fold, run by the last block of column group g (blockIdx.x): the
// outputs [o0, o1) its threads own, each output's partials in split order, pairwise (a
// binary counter of partial sums: each partial goes through log2(splits) + 1 adds)
CKD TA ck_pairwise(const TA *part, long long o, long long nout, int splits) {
    TA st[17];
    int n = 0;
    for (int s = 0; s < splits; s++) {
        TA x = part[(long long)s * nout + o];
        for (int c = s; c & 1; c >>= 1) x = ck_red(st[--n], x);
        st[n++] = x;
    }
    TA acc = st[--n];
    while (n > 0) acc = ck_red(st[--n], acc);
    return acc;
}
CKD void ck_fold_cols(const ck_rargs &p, long long o0, long long o1, long long ostep) {
    const TA *part = ck_parts(p, gridDim.x);
    for (long long o = o0; o < o1; o += ostep) {
        const TA acc = ck_pairwise(part, o, p.nout, p.splits);
        long long ko[CK_NOPS];
        ck_koffs(p, o, ko);
        ck_final(p, ko, acc);
    }
}
template <int TPR, bool VEC, bool FOLD> CKD void ck_row(const ck_rargs &p) {
    __shared__ TA sh[32];
    __shared__ int last;
    const int lane = threadIdx.x % TPR;
    const long long per = blockDim.x / TPR, units = p.nout * p.splits;
    for (long long u = (long long)blockIdx.x * per + threadIdx.x / TPR; u < units;
         u += (long long)gridDim.x * per) {
        const long long o = u / p.splits;
        const int s = (int)(u - o * p.splits);
        long long ko[CK_NOPS];
        ck_koffs(p, o, ko);
        const long long lo = (long long)s * p.chunk;
        const long long hi = min(p.nred, lo + p.chunk);
        TA acc = ck_ident();
        long long j = lo + lane;
        if constexpr (VEC) {
            const long long nv = (hi - lo) / CK_V;
            long long q = lane;
            for (; q + 3 * TPR < nv; q += 4 * TPR)
                acc = ck_vec4(acc, p, ko, lo + q * CK_V, (long long)TPR * CK_V);
            for (; q < nv; q += TPR) acc = ck_vec1(acc, p, ko, lo + q * CK_V);
            j = lo + nv * CK_V + lane;
        }
        for (; j < hi; j += TPR) acc = ck_red(acc, ck_elem(p, ko, j));
        acc = ck_group<TPR>(acc, sh);
        if (lane == 0) ck_store(p, o, s, ko, acc, 1);
    }
    // splits: the last block to finish folds every output's partials, no second launch
    if (FOLD && p.splits > 1 && ck_last(ck_counter(p, 0), gridDim.x, last)) ck_fold_rows<CK_NT>(p, sh);
}
// A full reduction of one contiguous aligned run (one output, kept offsets 0): a block
// per split (gridDim.x of them, one wave of resident blocks), each on its split's run
// of vectors (the blocks interleaved over the whole run, a vector of each thread in turn),
// CK_FU vector loads in flight per thread; built for CK_MINB blocks of CK_FNT an SM.
#if CUKIT_WANT(ckr_f)
extern "C" __global__ void __launch_bounds__(CK_FNT, CK_MINB) ckr_f(const ck_rargs p) {
    __shared__ TA sh[32];
    __shared__ int last;
    const long long ko[CK_NOPS] = {};
    const int s = blockIdx.x, lane = threadIdx.x;
    const long long lo = 0, hi = p.nred, q0 = (long long)s * CK_FNT + lane, qs = (long long)gridDim.x * CK_FNT;
    const long long nv = (hi - lo) / CK_V;
    TA acc = ck_ident();
    long long q = q0;
    for (; q + (CK_FU - 1) * qs < nv; q += CK_FU * qs)
        acc = ck_vecu(acc, p, ko, lo + q * CK_V, qs * CK_V);
    for (; q < nv; q += qs) acc = ck_vec1(acc, p, ko, lo + q * CK_V);
    for (long long j = lo + nv * CK_V + q0; j < hi; j += qs) acc = ck_red(acc, ck_elem(p, ko, j));
    acc = ck_group<CK_FNT>(acc, sh);
    if (threadIdx.x == 0) ck_store(p, 0, s, ko, acc, 1);
    if (p.splits > 1 && ck_last(ck_counter(p, 0), gridDim.x, last)) ck_fold_rows<CK_FNT>(p, sh);
}
#endif
// A warp per row never splits one; a block per row without splits (ckr_v1) has no
// fold: with the fold's code in it the loop got other registers (40 against 48 for a
// float32 sum) and sums along axis=1 ran 9% slower on the H100
#if CUKIT_WANT(ckr_v)
extern "C" __global__ void __launch_bounds__(CK_NT) ckr_v(const ck_rargs p) { ck_row<CK_NT, true, true>(p); }
#endif
#if CUKIT_WANT(ckr_v1)
extern "C" __global__ void __launch_bounds__(CK_NT) ckr_v1(const ck_rargs p) { ck_row<CK_NT, true, false>(p); }
#endif
#if CUKIT_WANT(ckr_vw)
extern "C" __global__ void __launch_bounds__(CK_NT) ckr_vw(const ck_rargs p) { ck_row<32, true, false>(p); }
#endif
#if CUKIT_WANT(ckr_n)
extern "C" __global__ void __launch_bounds__(CK_NT) ckr_n(const ck_rargs p) { ck_row<CK_NT, false, true>(p); }
#endif
#if CUKIT_WANT(ckr_nw)
extern "C" __global__ void __launch_bounds__(CK_NT) ckr_nw(const ck_rargs p) { ck_row<32, false, false>(p); }
#endif
#if CUKIT_WANT(ckc)
extern "C" __global__ void __launch_bounds__(CK_NT) ckc(const ck_rargs p) {
    __shared__ int last;
    const int s = blockIdx.y;
    const long long lo = (long long)s * p.chunk, hi = min(p.nred, lo + p.chunk);
    const long long o0 = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long ostep = (long long)gridDim.x * blockDim.x;
    for (long long o = o0; o < p.nout; o += ostep) {
        long long ko[CK_NOPS];
        ck_koffs(p, o, ko);
        TA acc = ck_ident();
        long long j = lo;
        if (p.rd <= 1) {
            for (; j + 4 <= hi; j += 4) {
                const TA m0 = ck_elem(p, ko, j), m1 = ck_elem(p, ko, j + 1);
                const TA m2 = ck_elem(p, ko, j + 2), m3 = ck_elem(p, ko, j + 3);
                acc = ck_red(ck_red(ck_red(ck_red(acc, m0), m1), m2), m3);
            }
        }
        for (; j < hi; j++) acc = ck_red(acc, ck_elem(p, ko, j));
        ck_store(p, o, s, ko, acc, gridDim.x);
    }
    // the last of the splits (blockIdx.y) of these outputs folds their partials
    if (p.splits > 1 && ck_last(ck_counter(p, blockIdx.x), gridDim.y, last))
        ck_fold_cols(p, o0, p.nout, ostep);
}
#endif
// A block owns 32 vectors of CK_V neighbouring outputs (a warp's width: a warp reads
// 32 * 16 contiguous bytes of a row) and its split's rows (blockIdx.y); each warp takes
// one run of consecutive rows of the split, CK_CU rows in flight, and the warps' sums are
// combined in shared memory in warp order: every output sees its rows in order.
#if CUKIT_WANT(ckcv)
extern "C" __global__ void __launch_bounds__(CK_NT) ckcv(const ck_rargs p) {
    __shared__ TA sh[32 * CK_V];
    __shared__ int last;
    const int s = blockIdx.y, lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = CK_NT / 32;
    const long long lo = (long long)s * p.chunk, hi = min(p.nred, lo + p.chunk);
    const long long sub = (hi - lo + nw - 1) / nw;
    const long long wlo = min(hi, lo + w * sub), whi = min(hi, wlo + sub);
    const long long nv = p.nout / CK_V, u = (long long)blockIdx.x * 32 + lane;
    const bool live = u < nv;
    TA acc[CK_V];
#pragma unroll
    for (int e = 0; e < CK_V; e++) acc[e] = ck_ident();
    long long ko[CK_NOPS];
    if (live) {
        ck_koffs(p, u * CK_V, ko);
        long long j = wlo;
        if (p.rd <= 1) {
            long long off[CK_NOPS];
            ck_roffs(p, ko, j, off);
            for (; j + CK_CU <= whi; j += CK_CU) {
                ck_cvecu(acc, p, off, j);
#pragma unroll
                for (int k = 0; k < CK_NOPS; k++) off[k] += CK_CU * p.rs[k][0];
            }
        }
        for (; j < whi; j++) {
            long long off[CK_NOPS];
            ck_roffs(p, ko, j, off);
            ck_cvec1(acc, p, off, j);
        }
    }
    for (int k = 0; k < nw; k++) {
        if (w == k && live) {
#pragma unroll
            for (int e = 0; e < CK_V; e++)
                sh[lane * CK_V + e] = k == 0 ? acc[e] : ck_red(sh[lane * CK_V + e], acc[e]);
        }
        __syncthreads();
    }
    if (w == 0 && live) {
        // the CK_V outputs share their outer coordinates (the host checks that the
        // innermost kept extent is a multiple of CK_V): only the inner one moves
#pragma unroll
        for (int e = 0; e < CK_V; e++) {
            long long k2[CK_NOPS];
#pragma unroll
            for (int k = 0; k < CK_NOPS; k++) k2[k] = ko[k];
            k2[CK_NIN] += e * p.ks[CK_NIN][p.kd - 1];
            ck_store(p, u * CK_V + e, s, k2, sh[lane * CK_V + e], gridDim.x);
        }
    }
    // the last of the splits (blockIdx.y) of these outputs folds their partials
    if (p.splits > 1 && ck_last(ck_counter(p, blockIdx.x), gridDim.y, last)) {
        const long long o0 = (long long)blockIdx.x * 32 * CK_V;
        ck_fold_cols(p, o0 + threadIdx.x, min(p.nout, o0 + 32 * CK_V), CK_NT);
    }
}
#endif
