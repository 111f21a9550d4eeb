/* reduce_codegen.c - CUDA C for reductions: one module per (operation, dtypes) holding
 * every layout's kernel, so that a new layout of the same operation compiles nothing
 *
 * The texts of a ck_rspec become four device functions (ck_map, ck_red, ck_ident,
 * ck_post); the kernels around them are the same for every operation:
 *   ckr_v / ckr_vw   rows whose reduced part is one contiguous aligned run: a block (v)
 *                    or a warp (vw) per row and split, 4 vector loads in flight; ckr_v1
 *                    is ckr_v for rows not split (no fold in it)
 *   ckr_n / ckr_nw   the same over any strides (one index computation per element)
 *   ckc              a thread per output, looping over its reduced elements: the reduced
 *                    axis is not the innermost, so neighbouring threads read neighbouring
 *                    outputs
 *   ckcv             32 vectors of CK_V neighbouring outputs per block (axis=0 of a
 *                    C-contiguous matrix): a warp reads 32 * 16 contiguous bytes of a row,
 *                    four rows in flight, each warp on its own run of the block's rows
 * A long reduced range is cut into splits (blocks of their own); there is no second
 * kernel: each block stores its partial, counts itself in on a counter of the launch's
 * scratch (after a __threadfence), and the last block of a group (every block of a full
 * reduction; the splits of one set of columns) folds the group's partials and writes
 * the outputs. The counters are zero on entry and the last block resets its own (the
 * host zeroes them only in scratch made for the launch), and the scratch is ordered on
 * the launch's stream, so concurrent reductions never share one.
 * Each thread accumulates its elements in order, then a warp tree (shuffles) and a block
 * tree (shared memory) combine the threads: the order is fixed for a launch shape, so
 * results are deterministic. */
#include "compute/builders.h"
#include "compute/reduce/reduce_impl.h"

#include <string.h>

const char *const ck_rfunc_names[RF_COUNT] = {"ckr_v", "ckr_vw", "ckr_n", "ckr_nw", "ckc", "ckcv", "ckr_f",
                                               "ckr_v1"};

/* The operands of a vector load function: a scalar or raw pointer as it is, an array's
 * nu vectors of CK_V elements, loaded before the first use: u steps of `step` elements
 * from element j0 at byte offsets ko[k] (rows), or u rows of p.rs[k][0] bytes from byte
 * offsets off[k] (columns). */
static void
put_operands(ck_buf *b, const ck_rspec *s, int nin, int nu, int columns)
{
    for (int k = 0; k < nin; k++) {
        if (s->kind[k] == CK_OPND_SCALAR) {
            ck_put(b, "    const T%d a%d = *(const T%d *)&p.op[%d];\n", k, k, k, k);
            continue;
        }
        if (s->kind[k] == CK_OPND_RAW) {
            ck_put(b, "    T%d *const a%d = (T%d *)p.op[%d].lo;\n", k, k, k, k);
            continue;
        }
        ck_put(b, "    ck_vec<T%d, CK_V> a%d[%d];\n#pragma unroll\n"
               "    for (int u = 0; u < %d; u++) a%d[u] = ck_ld((const ck_vec<T%d, CK_V> *)((const char *)"
               "p.op[%d].lo + ", k, k, nu, nu, k, k, k);
        if (columns)
            ck_put(b, "off[%d] + u * p.rs[%d][0]));\n", k, k);
        else
            ck_put(b, "ko[%d] + (j0 + u * step) * (long long)sizeof(T%d)));\n", k, k);
    }
}

/* Helpers every reduction module has: identities, NaN handling, arg pairs, shuffles. */
static const char rhelpers[] =
    "template <class T> struct ck_arg { T v; long long i; };\n"
    "template <class T> CKD T ck_lowest() {\n"
    "    if constexpr (K<T>::c) { typedef typename P<T>::t Q; return T{(Q)-CK_INF, (Q)-CK_INF}; }\n"
    "    else if constexpr (K<T>::f) return (T)-CK_INF;\n"
    "    else if constexpr (K<T>::s) return ck_minval<T>();\n"
    "    else return (T)0;\n"
    "}\n"
    "template <class T> CKD T ck_highest() {\n"
    "    if constexpr (K<T>::c) { typedef typename P<T>::t Q; return T{(Q)CK_INF, (Q)CK_INF}; }\n"
    "    else if constexpr (K<T>::f) return (T)CK_INF;\n"
    "    else if constexpr (K<T>::s) return (T)(~(typename W<T>::t)ck_minval<T>());\n"
    "    else if constexpr (K<T>::b) return true;\n"
    "    else return (T)~(T)0;\n"
    "}\n"
    "// NaN for floating types, x otherwise (the identity of nanmax and nanmin)\n"
    "template <class T> CKD T ck_nanor(T x) {\n"
    "    if constexpr (K<T>::c) { typedef typename P<T>::t Q; return T{(Q)CK_NAN, (Q)CK_NAN}; }\n"
    "    else if constexpr (K<T>::f) return (T)CK_NAN;\n"
    "    else return x;\n"
    "}\n"
    "template <class T> CKD T ck_nan0(T x) {\n"
    "    if constexpr (K<T>::c) return CK_CNAN(x) ? T{0, 0} : x;\n"
    "    else if constexpr (K<T>::f) return x != x ? (T)0 : x;\n"
    "    else return x;\n"
    "}\n"
    "template <class T> CKD typename P<T>::t ck_absq(T x) {\n"
    "    if constexpr (K<T>::c) return x.re * x.re + x.im * x.im;\n"
    "    else return x * x;\n"
    "}\n"
    "// numpy's argmax/argmin: the first NaN wins, then the first of equal values\n"
    "template <class T> CKD ck_arg<T> ck_argmax(ck_arg<T> a, ck_arg<T> b) {\n"
    "    const bool an = uf_isnan(a.v), bn = uf_isnan(b.v);\n"
    "    if (an || bn) return (an && bn) ? (a.i <= b.i ? a : b) : (an ? a : b);\n"
    "    if (a.v > b.v) return a;\n"
    "    if (b.v > a.v) return b;\n"
    "    return a.i <= b.i ? a : b;\n"
    "}\n"
    "template <class T> CKD ck_arg<T> ck_argmin(ck_arg<T> a, ck_arg<T> b) {\n"
    "    const bool an = uf_isnan(a.v), bn = uf_isnan(b.v);\n"
    "    if (an || bn) return (an && bn) ? (a.i <= b.i ? a : b) : (an ? a : b);\n"
    "    if (a.v < b.v) return a;\n"
    "    if (b.v < a.v) return b;\n"
    "    return a.i <= b.i ? a : b;\n"
    "}\n"
    "template <class T> CKD T ck_shfl(const T &v, int d) {\n"
    "    enum { N = (int)((sizeof(T) + 3) / 4) };\n"
    "    int w[N], r[N];\n"
    "    memcpy(w, &v, sizeof(T));\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < N; k++) r[k] = __shfl_down_sync(0xffffffffu, w[k], d);\n"
    "    T t;\n"
    "    memcpy(&t, r, sizeof(T));\n"
    "    return t;\n"
    "}\n";

/* The kernels, around ck_map/ck_red/ck_ident/ck_post, ck_mapk (one element at byte
 * offsets), ck_vec1/ck_vec4/ck_vecu (vector loads) and the ck_rargs block. */
static const char rkernels[] =
    "CKD void ck_koffs(const ck_rargs &p, long long o, long long *ko) {\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < CK_NOPS; k++) ko[k] = 0;\n"
    "    for (int d = p.kd - 1; d >= 0; d--) {\n"
    "        const long long c = o % p.kshape[d];\n"
    "        o /= p.kshape[d];\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < CK_NOPS; k++) ko[k] += c * p.ks[k][d];\n"
    "    }\n"
    "}\n"
    "CKD void ck_roffs(const ck_rargs &p, const long long *ko, long long j, long long *off) {\n"
    "    if (p.rd <= 1) {\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < CK_NOPS; k++) off[k] = ko[k] + j * p.rs[k][0];\n"
    "    }\n"
    "    else {\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < CK_NOPS; k++) off[k] = ko[k];\n"
    "        long long r = j;\n"
    "        for (int d = p.rd - 1; d >= 0; d--) {\n"
    "            const long long c = r % p.rshape[d];\n"
    "            r /= p.rshape[d];\n"
    "#pragma unroll\n"
    "            for (int k = 0; k < CK_NOPS; k++) off[k] += c * p.rs[k][d];\n"
    "        }\n"
    "    }\n"
    "}\n"
    "CKD TA ck_elem(const ck_rargs &p, const long long *ko, long long j) {\n"
    "    long long off[CK_NOPS];\n"
    "    ck_roffs(p, ko, j, off);\n"
    "    return ck_mapk(p, off, j);\n"
    "}\n"
    "CKD void ck_final(const ck_rargs &p, const long long *ko, TA a) {\n"
    "#if CK_HAS_INIT\n"
    "    a = ck_red(a, *(const TA *)&p.init);\n"
    "#endif\n"
    "    TO &y_ = *(TO *)((char *)p.op[CK_NIN].lo + ko[CK_NIN]);\n"
    "    ck_post(a, y_, p.count, p.d);\n"
    "}\n"
    "// The scratch of a launch with splits: a counter per group of blocks that share outputs\n"
    "// (ncnt of them, zero on entry and left zero), then the partials, split by split\n"
    "CKD unsigned *ck_counter(const ck_rargs &p, int c) { return (unsigned *)p.part + c; }\n"
    "CKD TA *ck_parts(const ck_rargs &p, long long ncnt) {\n"
    "    return (TA *)(p.part + (unsigned long long)(ncnt * 4 + 15) / 16 * 16);\n"
    "}\n"
    "CKD void ck_store(const ck_rargs &p, long long o, int s, const long long *ko, TA a, long long ncnt) {\n"
    "    if (p.splits == 1) ck_final(p, ko, a);\n"
    "    else ck_parts(p, ncnt)[(long long)s * p.nout + o] = a;\n"
    "}\n"
    "// The last block to arrive: each thread fences its partials, one thread counts the\n"
    "// block in; the block that brings the count to `total` (every block of its group has\n"
    "// stored) sees true in every thread, fences again, and may read all the partials. It\n"
    "// resets the counter, so the scratch leaves the launch as it came in.\n"
    "// (`last`: a __shared__ int of the kernel's own)\n"
    "CKD bool ck_last(unsigned *c, unsigned total, int &last) {\n"
    "    __threadfence();\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x == 0) {\n"
    "        const unsigned t = atomicAdd(c, 1u);\n"
    "        last = t == total - 1;\n"
    "        if (last) atomicExch(c, 0u);\n"
    "    }\n"
    "    __syncthreads();\n"
    "    const bool r = last != 0;\n"
    "    if (r) __threadfence();\n"
    "    return r;\n"
    "}\n"
    "template <int TPR> CKD TA ck_group(TA acc, TA *sh) {\n"
    "#pragma unroll\n"
    "    for (int d = 16; d > 0; d >>= 1) acc = ck_red(acc, ck_shfl(acc, d));\n"
    "    if constexpr (TPR > 32) {\n"
    "        __syncthreads();\n"
    "        if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = acc;\n"
    "        __syncthreads();\n"
    "        if (threadIdx.x < 32) {\n"
    "            acc = threadIdx.x < TPR / 32 ? sh[threadIdx.x] : ck_ident();\n"
    "#pragma unroll\n"
    "            for (int d = 16; d > 0; d >>= 1) acc = ck_red(acc, ck_shfl(acc, d));\n"
    "        }\n"
    "    }\n"
    "    return acc;\n"
    "}\n"
    "// The row kernels' fold, run by the last block: each output's partials (one per split)\n"
    "// by the whole block where there are few outputs (fblock: a full reduction), else by a\n"
    "// warp per output; the same tree every launch, so the result is deterministic.\n"
    "template <int NT> CKD void ck_fold_rows(const ck_rargs &p, TA *sh) {\n"
    "    const TA *part = ck_parts(p, 1);\n"
    "    if (p.fblock) {\n"
    "        for (long long o = 0; o < p.nout; o++) {\n"
    "            TA acc = ck_ident();\n"
    "            for (int s = threadIdx.x; s < p.splits; s += NT) acc = ck_red(acc, part[(long long)s * p.nout + o]);\n"
    "            acc = ck_group<NT>(acc, sh);\n"
    "            if (threadIdx.x == 0) {\n"
    "                long long ko[CK_NOPS];\n"
    "                ck_koffs(p, o, ko);\n"
    "                ck_final(p, ko, acc);\n"
    "            }\n"
    "        }\n"
    "        return;\n"
    "    }\n"
    "    const int lane = threadIdx.x & 31;\n"
    "    for (long long o = threadIdx.x >> 5; o < p.nout; o += NT / 32) {\n"
    "        TA acc = ck_ident();\n"
    "        for (int s = lane; s < p.splits; s += 32) acc = ck_red(acc, part[(long long)s * p.nout + o]);\n"
    "        acc = ck_group<32>(acc, nullptr);\n"
    "        if (lane == 0) {\n"
    "            long long ko[CK_NOPS];\n"
    "            ck_koffs(p, o, ko);\n"
    "            ck_final(p, ko, acc);\n"
    "        }\n"
    "    }\n"
    "}\n"
    "// The column kernels' fold, run by the last block of column group g (blockIdx.x): the\n"
    "// outputs [o0, o1) its threads own, each output's partials in split order, pairwise (a\n"
    "// binary counter of partial sums: each partial goes through log2(splits) + 1 adds)\n"
    "CKD TA ck_pairwise(const TA *part, long long o, long long nout, int splits) {\n"
    "    TA st[17];\n"
    "    int n = 0;\n"
    "    for (int s = 0; s < splits; s++) {\n"
    "        TA x = part[(long long)s * nout + o];\n"
    "        for (int c = s; c & 1; c >>= 1) x = ck_red(st[--n], x);\n"
    "        st[n++] = x;\n"
    "    }\n"
    "    TA acc = st[--n];\n"
    "    while (n > 0) acc = ck_red(st[--n], acc);\n"
    "    return acc;\n"
    "}\n"
    "CKD void ck_fold_cols(const ck_rargs &p, long long o0, long long o1, long long ostep) {\n"
    "    const TA *part = ck_parts(p, gridDim.x);\n"
    "    for (long long o = o0; o < o1; o += ostep) {\n"
    "        const TA acc = ck_pairwise(part, o, p.nout, p.splits);\n"
    "        long long ko[CK_NOPS];\n"
    "        ck_koffs(p, o, ko);\n"
    "        ck_final(p, ko, acc);\n"
    "    }\n"
    "}\n"
    "template <int TPR, bool VEC, bool FOLD> CKD void ck_row(const ck_rargs &p) {\n"
    "    __shared__ TA sh[32];\n"
    "    __shared__ int last;\n"
    "    const int lane = threadIdx.x % TPR;\n"
    "    const long long per = blockDim.x / TPR, units = p.nout * p.splits;\n"
    "    for (long long u = (long long)blockIdx.x * per + threadIdx.x / TPR; u < units;\n"
    "         u += (long long)gridDim.x * per) {\n"
    "        const long long o = u / p.splits;\n"
    "        const int s = (int)(u - o * p.splits);\n"
    "        long long ko[CK_NOPS];\n"
    "        ck_koffs(p, o, ko);\n"
    "        const long long lo = (long long)s * p.chunk;\n"
    "        const long long hi = min(p.nred, lo + p.chunk);\n"
    "        TA acc = ck_ident();\n"
    "        long long j = lo + lane;\n"
    "        if constexpr (VEC) {\n"
    "            const long long nv = (hi - lo) / CK_V;\n"
    "            long long q = lane;\n"
    "            for (; q + 3 * TPR < nv; q += 4 * TPR)\n"
    "                acc = ck_vec4(acc, p, ko, lo + q * CK_V, (long long)TPR * CK_V);\n"
    "            for (; q < nv; q += TPR) acc = ck_vec1(acc, p, ko, lo + q * CK_V);\n"
    "            j = lo + nv * CK_V + lane;\n"
    "        }\n"
    "        for (; j < hi; j += TPR) acc = ck_red(acc, ck_elem(p, ko, j));\n"
    "        acc = ck_group<TPR>(acc, sh);\n"
    "        if (lane == 0) ck_store(p, o, s, ko, acc, 1);\n"
    "    }\n"
    "    // splits: the last block to finish folds every output's partials, no second launch\n"
    "    if (FOLD && p.splits > 1 && ck_last(ck_counter(p, 0), gridDim.x, last)) ck_fold_rows<CK_NT>(p, sh);\n"
    "}\n"
    "// A full reduction of one contiguous aligned run (one output, kept offsets 0): a block\n"
    "// per split (gridDim.x of them, one wave of resident blocks), each on its split's run\n"
    "// of vectors (the blocks interleaved over the whole run, a vector of each thread in turn),\n"
    "// CK_FU vector loads in flight per thread; built for CK_MINB blocks of CK_FNT an SM.\n"
    "extern \"C\" __global__ void __launch_bounds__(CK_FNT, CK_MINB) ckr_f(const ck_rargs p) {\n"
    "    __shared__ TA sh[32];\n"
    "    __shared__ int last;\n"
    "    const long long ko[CK_NOPS] = {};\n"
    "    const int s = blockIdx.x, lane = threadIdx.x;\n"
    "    const long long lo = 0, hi = p.nred, q0 = (long long)s * CK_FNT + lane, qs = (long long)gridDim.x * CK_FNT;\n"
    "    const long long nv = (hi - lo) / CK_V;\n"
    "    TA acc = ck_ident();\n"
    "    long long q = q0;\n"
    "    for (; q + (CK_FU - 1) * qs < nv; q += CK_FU * qs)\n"
    "        acc = ck_vecu(acc, p, ko, lo + q * CK_V, qs * CK_V);\n"
    "    for (; q < nv; q += qs) acc = ck_vec1(acc, p, ko, lo + q * CK_V);\n"
    "    for (long long j = lo + nv * CK_V + q0; j < hi; j += qs) acc = ck_red(acc, ck_elem(p, ko, j));\n"
    "    acc = ck_group<CK_FNT>(acc, sh);\n"
    "    if (threadIdx.x == 0) ck_store(p, 0, s, ko, acc, 1);\n"
    "    if (p.splits > 1 && ck_last(ck_counter(p, 0), gridDim.x, last)) ck_fold_rows<CK_FNT>(p, sh);\n"
    "}\n"
    "// A warp per row never splits one; a block per row without splits (ckr_v1) has no\n"
    "// fold: with the fold's code in it the loop got other registers (40 against 48 for a\n"
    "// float32 sum) and sums along axis=1 ran 9% slower on the H100\n"
    "extern \"C\" __global__ void __launch_bounds__(CK_NT) ckr_v(const ck_rargs p) { ck_row<CK_NT, true, true>(p); }\n"
    "extern \"C\" __global__ void __launch_bounds__(CK_NT) ckr_v1(const ck_rargs p) { ck_row<CK_NT, true, false>(p); }\n"
    "extern \"C\" __global__ void __launch_bounds__(CK_NT) ckr_vw(const ck_rargs p) { ck_row<32, true, false>(p); }\n"
    "extern \"C\" __global__ void __launch_bounds__(CK_NT) ckr_n(const ck_rargs p) { ck_row<CK_NT, false, true>(p); }\n"
    "extern \"C\" __global__ void __launch_bounds__(CK_NT) ckr_nw(const ck_rargs p) { ck_row<32, false, false>(p); }\n"
    "extern \"C\" __global__ void __launch_bounds__(CK_NT) ckc(const ck_rargs p) {\n"
    "    __shared__ int last;\n"
    "    const int s = blockIdx.y;\n"
    "    const long long lo = (long long)s * p.chunk, hi = min(p.nred, lo + p.chunk);\n"
    "    const long long o0 = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    const long long ostep = (long long)gridDim.x * blockDim.x;\n"
    "    for (long long o = o0; o < p.nout; o += ostep) {\n"
    "        long long ko[CK_NOPS];\n"
    "        ck_koffs(p, o, ko);\n"
    "        TA acc = ck_ident();\n"
    "        long long j = lo;\n"
    "        if (p.rd <= 1) {\n"
    "            for (; j + 4 <= hi; j += 4) {\n"
    "                const TA m0 = ck_elem(p, ko, j), m1 = ck_elem(p, ko, j + 1);\n"
    "                const TA m2 = ck_elem(p, ko, j + 2), m3 = ck_elem(p, ko, j + 3);\n"
    "                acc = ck_red(ck_red(ck_red(ck_red(acc, m0), m1), m2), m3);\n"
    "            }\n"
    "        }\n"
    "        for (; j < hi; j++) acc = ck_red(acc, ck_elem(p, ko, j));\n"
    "        ck_store(p, o, s, ko, acc, gridDim.x);\n"
    "    }\n"
    "    // the last of the splits (blockIdx.y) of these outputs folds their partials\n"
    "    if (p.splits > 1 && ck_last(ck_counter(p, blockIdx.x), gridDim.y, last))\n"
    "        ck_fold_cols(p, o0, p.nout, ostep);\n"
    "}\n"
    "// A block owns 32 vectors of CK_V neighbouring outputs (a warp's width: a warp reads\n"
    "// 32 * 16 contiguous bytes of a row) and its split's rows (blockIdx.y); each warp takes\n"
    "// one run of consecutive rows of the split, CK_CU rows in flight, and the warps' sums are\n"
    "// combined in shared memory in warp order: every output sees its rows in order.\n"
    "extern \"C\" __global__ void __launch_bounds__(CK_NT) ckcv(const ck_rargs p) {\n"
    "    __shared__ TA sh[32 * CK_V];\n"
    "    __shared__ int last;\n"
    "    const int s = blockIdx.y, lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = CK_NT / 32;\n"
    "    const long long lo = (long long)s * p.chunk, hi = min(p.nred, lo + p.chunk);\n"
    "    const long long sub = (hi - lo + nw - 1) / nw;\n"
    "    const long long wlo = min(hi, lo + w * sub), whi = min(hi, wlo + sub);\n"
    "    const long long nv = p.nout / CK_V, u = (long long)blockIdx.x * 32 + lane;\n"
    "    const bool live = u < nv;\n"
    "    TA acc[CK_V];\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < CK_V; e++) acc[e] = ck_ident();\n"
    "    long long ko[CK_NOPS];\n"
    "    if (live) {\n"
    "        ck_koffs(p, u * CK_V, ko);\n"
    "        long long j = wlo;\n"
    "        if (p.rd <= 1) {\n"
    "            long long off[CK_NOPS];\n"
    "            ck_roffs(p, ko, j, off);\n"
    "            for (; j + CK_CU <= whi; j += CK_CU) {\n"
    "                ck_cvecu(acc, p, off, j);\n"
    "#pragma unroll\n"
    "                for (int k = 0; k < CK_NOPS; k++) off[k] += CK_CU * p.rs[k][0];\n"
    "            }\n"
    "        }\n"
    "        for (; j < whi; j++) {\n"
    "            long long off[CK_NOPS];\n"
    "            ck_roffs(p, ko, j, off);\n"
    "            ck_cvec1(acc, p, off, j);\n"
    "        }\n"
    "    }\n"
    "    for (int k = 0; k < nw; k++) {\n"
    "        if (w == k && live) {\n"
    "#pragma unroll\n"
    "            for (int e = 0; e < CK_V; e++)\n"
    "                sh[lane * CK_V + e] = k == 0 ? acc[e] : ck_red(sh[lane * CK_V + e], acc[e]);\n"
    "        }\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (w == 0 && live) {\n"
    "        // the CK_V outputs share their outer coordinates (the host checks that the\n"
    "        // innermost kept extent is a multiple of CK_V): only the inner one moves\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < CK_V; e++) {\n"
    "            long long k2[CK_NOPS];\n"
    "#pragma unroll\n"
    "            for (int k = 0; k < CK_NOPS; k++) k2[k] = ko[k];\n"
    "            k2[CK_NIN] += e * p.ks[CK_NIN][p.kd - 1];\n"
    "            ck_store(p, u * CK_V + e, s, k2, sh[lane * CK_V + e], gridDim.x);\n"
    "        }\n"
    "    }\n"
    "    // the last of the splits (blockIdx.y) of these outputs folds their partials\n"
    "    if (p.splits > 1 && ck_last(ck_counter(p, blockIdx.x), gridDim.y, last)) {\n"
    "        const long long o0 = (long long)blockIdx.x * 32 * CK_V;\n"
    "        ck_fold_cols(p, o0 + threadIdx.x, min(p.nout, o0 + 32 * CK_V), CK_NT);\n"
    "    }\n"
    "}\n";

/* `#line 1 "what"` before a user's text, so that a compile error points into it, and
 * its last line's number again after it: the caller's next line (the `);` that closes
 * it, on a line of its own so that a // comment cannot swallow it) counts as that
 * line, where an unfinished expression is reported. */
static void
user_text(ck_buf *b, const ck_rspec *s, const char *what, const char *text)
{
    if (s->user)
        ck_put(b, "\n#line 1 \"%s\"\n", what);
    ck_put(b, "%s", text);
    if (s->user) {
        int last = 1;
        for (const char *c = text; *c; c++)
            last += *c == '\n';
        ck_put(b, "\n#line %d \"%s\"", last, what);
    }
}

/* ckr_f's blocks an SM (__launch_bounds__): CK_MINB for one array input, CK_MINB_MULTI
 * for more (dot, where=), whose loads need more registers to stay in flight. */
static int
ck_minb(const ck_rspec *s)
{
    int arrays = 0;
    for (int k = 0; k < s->nin; k++)
        arrays += s->kind[k] == CK_OPND_ARRAY;
    return arrays == 1 ? CK_MINB : CK_MINB_MULTI;
}

PyObject *
ck_reduce_source(const ck_rspec *s)
{
    ck_buf b = {0};
    int nin = s->nin, v = s->vec > 0 ? s->vec : 1;
    const char *preamble = cukit_device_file(CK_PREAMBLE);
    if (preamble == NULL)
        return NULL;
    ck_put(&b, "%s%s\n%s\n", ck_ml_define(), preamble, rhelpers);
    /* a struct output is defined by head: its typedef follows head */
    for (int k = 0; k < nin + !s->out_ctype; k++)
        if (k == nin || !s->in_ctype[k])
            ck_put(&b, "typedef %s T%d;\n", ck_dtypes[s->tc[k]].ctype, k);
    if (!s->out_ctype)
        ck_put(&b, "typedef T%d TO;\n", nin);
    ck_put(&b, "#define CK_NIN %d\n#define CK_NOPS %d\n#define CK_V %d\n"
            "#define CK_NT %d\n#define CK_HAS_INIT %d\n#define CK_RMAXD %d\n#define CK_MINB %d\n",
        nin, nin + 1, v, CK_THREADS, s->has_init, CK_RMAXD, ck_minb(s));
    ck_put(&b, "#define CK_FNT %d\n#define CK_FU 8\n#define CK_CU 4\n", CK_FNT);
    ck_put(&b, "template <class V> CKD V ck_ld(const V *p) { return *p; }\n");
    ck_put(&b, "struct ck_rargs {\n    ck_slot op[CK_NOPS];\n    ck_slot init;\n"
            "    unsigned long long part;\n    long long nout, nred, chunk, count;\n"
            "    double d;\n    int splits, kd, rd, fblock;\n"
            "    long long kshape[CK_RMAXD], rshape[CK_RMAXD];\n"
            "    long long ks[CK_NOPS][CK_RMAXD], rs[CK_NOPS][CK_RMAXD];\n};\n");
    if (s->head)
        ck_put(&b, "%s\n", s->head);
    for (int k = 0; k < nin; k++) /* types head defines follow it */
        if (s->in_ctype[k])
            ck_put(&b, "typedef %s T%d;\n", s->in_ctype[k], k);
    ck_put(&b, "typedef %s TA;\n", s->acc);
    if (s->out_ctype)
        ck_put(&b, "typedef %s T%d;\ntypedef T%d TO;\n", s->out_ctype, nin, nin);
    /* the operation's four functions */
    ck_put(&b, "CKD TA ck_ident() {\n    return cv<TA>(");
    user_text(&b, s, "identity", s->identity);
    ck_put(&b, "\n);\n}\nCKD TA ck_red(const TA a, const TA b) {\n    return (");
    user_text(&b, s, "reduce_expr", s->reduce);
    const char *ix = s->index ? s->index : "_j";
    ck_put(&b, "\n);\n}\nCKD TA ck_map(const long long %s", ix);
    for (int k = 0; k < nin; k++)
        ck_put(&b, s->kind[k] == CK_OPND_RAW ? ", T%d *const %s" : ", const T%d %s", k, s->names[k]);
    ck_put(&b, ") {\n    (void)%s;\n    return cv<TA>(", ix);
    user_text(&b, s, "map_expr", s->map);
    ck_put(&b, "\n);\n}\nCKD void ck_post(TA a, TO &%s, const long long _n, const double _d) {\n"
            "    (void)_n; (void)_d;\n", s->names[nin]);
    user_text(&b, s, "post_map_expr", s->post);
    ck_put(&b, "\n;\n}\n");
    /* one element at byte offsets off[k] of each array operand */
    ck_put(&b, "CKD TA ck_mapk(const ck_rargs &p, const long long *off, long long j) {\n"
            "    (void)off;\n    return ck_map(j");
    for (int k = 0; k < nin; k++) {
        if (s->kind[k] == CK_OPND_SCALAR)
            ck_put(&b, ", *(const T%d *)&p.op[%d]", k, k);
        else if (s->kind[k] == CK_OPND_RAW)
            ck_put(&b, ", (T%d *)p.op[%d].lo", k, k);
        else
            ck_put(&b, ", *(const T%d *)((const char *)p.op[%d].lo + off[%d])", k, k, k);
    }
    ck_put(&b, ");\n}\n");
    /* vector loads: one vector of each array input, then four (the rows), then the full
     * reduction's CK_FU */
    for (int four = 0; four < 3; four++) {
        if (four)
            ck_put(&b, "CKD TA ck_vec%s(TA acc, const ck_rargs &p, const long long *ko, long long j0, "
                    "long long step) {\n", four == 1 ? "4" : "u");
        else
            ck_put(&b, "CKD TA ck_vec1(TA acc, const ck_rargs &p, const long long *ko, long long j0) {\n"
                    "    const long long step = 0;\n");
        int nu = four == 2 ? 8 : four ? 4 : 1;
        put_operands(&b, s, nin, nu, 0);
        ck_put(&b, "    (void)step;\n#pragma unroll\n    for (int u = 0; u < %d; u++) {\n#pragma unroll\n"
                "        for (int e = 0; e < CK_V; e++) acc = ck_red(acc, ck_map(j0 + u * step + e", nu);
        for (int k = 0; k < nin; k++)
            ck_put(&b, s->kind[k] == CK_OPND_ARRAY ? ", a%d[u].v[e]" : ", a%d", k);
        ck_put(&b, "));\n    }\n    return acc;\n}\n");
    }
    /* column vectors: CK_V neighbouring outputs' elements of row j0 (ck_cvec1) or of rows
     * j0..j0+CK_CU-1 (ck_cvecu, one reduced dimension), at byte offsets off[k] of row j0;
     * each output's in row order, all loads before the first use */
    for (int four = 0; four < 2; four++) {
        int nu = four ? 4 : 1;
        ck_put(&b, "CKD void ck_cvec%s(TA *acc, const ck_rargs &p, const long long *off, long long j0) {\n"
                "    (void)p;\n", four ? "u" : "1");
        put_operands(&b, s, nin, nu, 1);
        ck_put(&b, "#pragma unroll\n    for (int u = 0; u < %d; u++) {\n#pragma unroll\n"
                "        for (int e = 0; e < CK_V; e++) acc[e] = ck_red(acc[e], ck_map(j0 + u", nu);
        for (int k = 0; k < nin; k++)
            ck_put(&b, s->kind[k] == CK_OPND_ARRAY ? ", a%d[u].v[e]" : ", a%d", k);
        ck_put(&b, "));\n    }\n}\n");
    }
    ck_put(&b, "%s", rkernels);
    return ck_buf_finish(&b);
}
