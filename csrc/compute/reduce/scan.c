/* scan.c - prefix scans: cumsum and cumprod along any axis, and cukit.ScanKernel (the
 * base of InclusiveScanKernel and ExclusiveScanKernel, PyCUDA's scan builders)
 *
 * One dimension: a single pass with decoupled look-back. Each block takes the next tile
 * (6144 elements, 2048 for accumulators over 4 bytes) from a counter, loads it into shared
 * memory (16-byte vectors when contiguous and aligned), scans it, publishes the tile's
 * aggregate, and a warp adds the aggregates of the tiles before it, 32 a step, up to the
 * first inclusive prefix it meets; then it publishes its own prefix: every element is
 * read once and written once. Along an axis of an N-D array: a warp per line when the axis is
 * contiguous (32 elements a step, a carry between steps), else a thread per line
 * (neighbouring threads on neighbouring lines, so the accesses coalesce). */
#include "compute/reduce/reduce_impl.h"

#include <ctype.h>
#include <string.h>

/* Elements per thread of a 1-D tile, from the accumulator's size: 6144-element tiles for
 * accumulators of up to 4 bytes, 2048 above (the tile's shared memory stays under 34 KiB
 * for complex128). A tile's fixed costs (its ticket, four barriers, the look-back's round
 * trips to L2) are paid per tile: 24 items (48 registers for float32 with sm_90's
 * compiler, 5 blocks an SM, 24 KiB of loads in flight a block) amortize them over 1.5
 * times the bytes of 16 items (40 registers, 6 blocks, 16 KiB). The source (CK_IT) and
 * the launch (the tile count) both take it from here, called with the same size. */
static int
scan_items(int acc_size)
{
    return acc_size <= 4 ? 24 : 8;
}
#define LMAXD 8     /* dimensions besides the scanned one */

static const char *const fnames[] = {"cks", "ckl", "ckw"};
enum { SF_TILES, SF_LINES, SF_WARPS, SF_COUNT };

static const char scan_body[] =
    "// ck_wsh(v, d, mode): a warp shuffle of any T, word by word: mode 0 reads lane d,\n"
    "// 1 the lane d below, 2 the lane d above.\n"
    "template <class T> CKD T ck_wsh(const T &v, int d, int mode) {\n"
    "    enum { N = (int)((sizeof(T) + 3) / 4) };\n"
    "    int w[N], r[N];\n"
    "    memcpy(w, &v, sizeof(T));\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < N; k++)\n"
    "        r[k] = mode == 1 ? __shfl_up_sync(0xffffffffu, w[k], d)\n"
    "             : mode == 2 ? __shfl_down_sync(0xffffffffu, w[k], d) : __shfl_sync(0xffffffffu, w[k], d);\n"
    "    T t;\n"
    "    memcpy(&t, r, sizeof(T));\n"
    "    return t;\n"
    "}\n"
    "// A tile's status and value in one 64-bit word, for accumulators of up to 4 bytes: the\n"
    "// flag in the high half, the value's bytes in the low one.\n"
    "template <class T> CKD unsigned long long ck_pack(unsigned flag, const T &v) {\n"
    "    unsigned u = 0;\n"
    "    memcpy(&u, &v, sizeof(T) < 4 ? sizeof(T) : 4);\n"
    "    return (unsigned long long)flag << 32 | u;\n"
    "}\n"
    "template <class T> CKD T ck_unpack(unsigned long long w) {\n"
    "    const unsigned u = (unsigned)w;\n"
    "    T t = T();\n"
    "    memcpy(&t, &u, sizeof(T) < 4 ? sizeof(T) : 4);\n"
    "    return t;\n"
    "}\n"
    "template <class T> CKD T ck_vload(const ck_slot *s) {\n"
    "    const volatile unsigned long long *q = (const volatile unsigned long long *)s;\n"
    "    unsigned long long w[2] = {q[0], q[1]};\n"
    "    T t;\n"
    "    memcpy(&t, w, sizeof(T));\n"
    "    return t;\n"
    "}\n"
    "struct ck_sargs {\n"
    "    unsigned long long in, out, status;\n"
    "    long long n, sin, sout, nlines;\n"
    "    int ntiles, nd;\n"
    "    long long lshape[8], lsin[8], lsout[8];\n"
    "};\n"
    "#define CK_PAD(i) ((i) + ((i) >> 5))\n"
    "#define CK_TILE (256 * CK_IT)\n"
    "// 16-byte accesses of whole tiles: E elements a vector, NC vectors a tile.\n"
    "template <class T> struct ck_v16 {\n"
    "    enum { ok = sizeof(T) <= 16 && 16 % sizeof(T) == 0, E = ok ? 16 / sizeof(T) : 1,\n"
    "           NC = CK_TILE / E, STEPS = (NC + 255) / 256 };\n"
    "};\n"
    "// One tile of CK_TILE elements a block, tiles in the order of a ticket (so every tile a\n"
    "// block waits on took its ticket earlier, hence is running or done: no spin can wait on a\n"
    "// block that is not scheduled). The block loads its tile into shared memory (16-byte\n"
    "// vectors when the input is contiguous, aligned and the tile whole), scans it, and warp 0\n"
    "// finds the sum of all tiles before it by decoupled look-back, 32 predecessors a step.\n"
    "//\n"
    "// Accumulators of up to 4 bytes: per tile j one 64-bit word in place of agg[j], the flag\n"
    "// (0 nothing, 1 aggregate, 2 inclusive prefix) in its high half and the value in its low\n"
    "// one, so one volatile store publishes both and one volatile load reads both (a reader\n"
    "// sees one whole store): no fences, as CUB's tile status for small types.\n"
    "// Wider accumulators: per tile j flags[1 + j] (the same flags), agg[j], incl[j].\n"
    "// Their ordering: a publisher stores the value, __threadfence(), then the flag with a volatile\n"
    "// store; a reader loads the flag with a volatile load (so each spin re-reads memory, past\n"
    "// L1), __threadfence(), then the value with volatile loads. The two fences order the pair\n"
    "// (fence-fence synchronization of the PTX memory model: \"st value; fence; st flag\" and\n"
    "// \"ld flag; fence; ld value\"), so a reader that saw flag f reads the value published\n"
    "// before f. The aggregate stays valid after the flag becomes 2, so a reader that saw 1 may\n"
    "// read agg[j] at any later time.\n"
    "extern \"C\" __global__ void __launch_bounds__(256) cks(const ck_sargs p) {\n"
    "    __shared__ TA sh[CK_PAD(CK_TILE) + 1];\n"
    "    __shared__ TA wsum[8];\n"
    "    __shared__ TA tile_pre;\n"
    "    __shared__ int tile_id, tile_has;\n"
    "    int *const flags = (int *)p.status;\n"
    "    ck_slot *const agg = (ck_slot *)(p.status + ((4ull * (p.ntiles + 1) + 15) / 16) * 16);\n"
    "    ck_slot *const incl = agg + p.ntiles;\n"
    "    if (threadIdx.x == 0) tile_id = atomicAdd(flags, 1);\n"
    "    __syncthreads();\n"
    "    const int tile = tile_id;\n"
    "    const long long base = (long long)tile * CK_TILE;\n"
    "    const bool whole = base + CK_TILE <= p.n;\n"
    "    const char *const in = (const char *)p.in;\n"
    "    if (ck_v16<TI>::ok && whole && p.sin == (long long)sizeof(TI) && (p.in & 15) == 0) {\n"
    "        typedef ck_v16<TI> V;\n"
    "        const uint4 *src = (const uint4 *)(in + base * (long long)sizeof(TI));\n"
    "#pragma unroll\n"
    "        for (int s = 0; s < V::STEPS; s++) {\n"
    "            const int c = s * 256 + threadIdx.x;\n"
    "            if (V::NC % 256 == 0 || c < V::NC) {\n"
    "                const uint4 q = src[c];\n"
    "                TI e[V::E];\n"
    "                memcpy(e, &q, sizeof e < 16 ? sizeof e : 16);\n"
    "#pragma unroll\n"
    "                for (int k = 0; k < V::E; k++) sh[CK_PAD(c * V::E + k)] = cv<TA>(e[k]);\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "    else {\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < CK_IT; k++) {\n"
    "            const long long i = base + k * 256 + threadIdx.x;\n"
    "            if (i < p.n) sh[CK_PAD(k * 256 + threadIdx.x)] = cv<TA>(*(const TI *)(in + i * p.sin));\n"
    "        }\n"
    "    }\n"
    "    __syncthreads();\n"
    "    const long long first = base + (long long)threadIdx.x * CK_IT;\n"
    "    const int cnt = (int)min((long long)CK_IT, p.n - first);\n"
    "    TA v[CK_IT];\n"
    "    TA run = sh[CK_PAD(threadIdx.x * CK_IT)];\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < CK_IT; k++) {\n"
    "        if (k < cnt) {\n"
    "            const TA x = sh[CK_PAD(threadIdx.x * CK_IT + k)];\n"
    "            run = k ? ck_op(run, x) : x;\n"
    "        }\n"
    "        v[k] = run;\n"
    "    }\n"
    "    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;\n"
    "    TA inc = run;\n"
    "#pragma unroll\n"
    "    for (int d = 1; d < 32; d <<= 1) {\n"
    "        const TA o = ck_wsh(inc, d, 1);\n"
    "        if (lane >= d) inc = ck_op(o, inc);\n"
    "    }\n"
    "    if (lane == 31) wsum[w] = inc;\n"
    "    __syncthreads();\n"
    "    // every thread folds the 8 warp sums itself (broadcast reads): the sum of the warps\n"
    "    // before its own, and the tile's aggregate\n"
    "    TA aggv = wsum[0], wpre = aggv;\n"
    "#pragma unroll\n"
    "    for (int k = 1; k < 8; k++) {\n"
    "        if (k == w) wpre = aggv;\n"
    "        aggv = ck_op(aggv, wsum[k]);\n"
    "    }\n"
    "    if (w == 0) {\n"
    "        volatile int *const vf = flags + 1;\n"
    "        volatile unsigned long long *const vpk = (volatile unsigned long long *)agg;\n"
    "        const bool pk = sizeof(TA) <= 4;\n"
    "        if (tile == 0) {\n"
    "            if (lane == 0) {\n"
    "                if (pk) vpk[0] = ck_pack(2u, aggv);\n"
    "                else {\n"
    "                    memcpy(&incl[0], &aggv, sizeof(TA));\n"
    "                    __threadfence();\n"
    "                    vf[0] = 2;\n"
    "                }\n"
    "                tile_has = 0;\n"
    "            }\n"
    "        }\n"
    "        else {\n"
    "            if (lane == 0) {\n"
    "                if (pk) vpk[tile] = ck_pack(1u, aggv);\n"
    "                else {\n"
    "                    memcpy(&agg[tile], &aggv, sizeof(TA));\n"
    "                    __threadfence();\n"
    "                    vf[tile] = 1;\n"
    "                }\n"
    "            }\n"
    "            // Look-back: lane l looks at tile j - l. Wait until all 32 have published\n"
    "            // something, take the nearest inclusive prefix (the lowest lane whose flag is\n"
    "            // 2) and the aggregates of the tiles between it and this one, fold them in\n"
    "            // tile order (an earlier tile on the left: the operator need not commute),\n"
    "            // and step back 32 tiles while no inclusive prefix was seen. Tile 0 only ever\n"
    "            // publishes an inclusive prefix, so the walk ends at tile 0 at the latest.\n"
    "            TA ex = aggv;\n"
    "            bool has = false;\n"
    "            for (int j = tile - 1;; j -= 32) {\n"
    "                const int t = j - lane;\n"
    "                int f;\n"
    "                unsigned long long wd = 0;\n"
    "                if (pk) {\n"
    "                    do {\n"
    "                        wd = t >= 0 ? vpk[t] : 1ull << 32;\n"
    "                    } while (__any_sync(0xffffffffu, (wd >> 32) == 0));\n"
    "                    f = (int)(wd >> 32);\n"
    "                }\n"
    "                else {\n"
    "                    do {\n"
    "                        f = t >= 0 ? vf[t] : 1;\n"
    "                    } while (__any_sync(0xffffffffu, f == 0));\n"
    "                    __threadfence();\n"
    "                }\n"
    "                const unsigned m = __ballot_sync(0xffffffffu, f == 2);\n"
    "                const int last = m ? __ffs(m) - 1 : 31;\n"
    "                const int top = last < j ? last : j;\n"
    "                TA x = aggv;\n"
    "                if (lane <= top) x = pk ? ck_unpack<TA>(wd) : ck_vload<TA>(f == 2 ? &incl[t] : &agg[t]);\n"
    "                // lane l ends up holding lanes l..top folded (top's tile leftmost)\n"
    "#pragma unroll\n"
    "                for (int d = 1; d < 32; d <<= 1) {\n"
    "                    const TA o = ck_wsh(x, d, 2);\n"
    "                    if (lane + d <= top) x = ck_op(o, x);\n"
    "                }\n"
    "                const TA win = ck_wsh(x, 0, 0);\n"
    "                ex = has ? ck_op(win, ex) : win;\n"
    "                has = true;\n"
    "                if (m) break;\n"
    "            }\n"
    "            if (lane == 0) {\n"
    "                const TA mine = ck_op(ex, aggv);\n"
    "                if (pk) vpk[tile] = ck_pack(2u, mine);\n"
    "                else {\n"
    "                    memcpy(&incl[tile], &mine, sizeof(TA));\n"
    "                    __threadfence();\n"
    "                    vf[tile] = 2;\n"
    "                }\n"
    "                tile_pre = ex;\n"
    "                tile_has = 1;\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "    __syncthreads();\n"
    "    TA pre = inc;\n"
    "    bool has = false;\n"
    "    if (tile_has) { pre = tile_pre; has = true; }\n"
    "    if (w > 0) { const TA x = wpre; pre = has ? ck_op(pre, x) : x; has = true; }\n"
    "    const TA lp = ck_wsh(inc, 1, 1);\n"
    "    if (lane > 0) { pre = has ? ck_op(pre, lp) : lp; has = true; }\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < CK_IT; k++) {\n"
    "        if (k < cnt) {\n"
    "            TA o;\n"
    "            if (CK_EXCL) o = k == 0 ? (has ? pre : ck_neutral()) : (has ? ck_op(pre, v[k - 1]) : v[k - 1]);\n"
    "            else o = has ? ck_op(pre, v[k]) : v[k];\n"
    "            sh[CK_PAD(threadIdx.x * CK_IT + k)] = o;\n"
    "        }\n"
    "    }\n"
    "    __syncthreads();\n"
    "    char *const out = (char *)p.out;\n"
    "    if (ck_v16<TO>::ok && whole && p.sout == (long long)sizeof(TO) && (p.out & 15) == 0) {\n"
    "        typedef ck_v16<TO> V;\n"
    "        uint4 *dst = (uint4 *)(out + base * (long long)sizeof(TO));\n"
    "#pragma unroll\n"
    "        for (int s = 0; s < V::STEPS; s++) {\n"
    "            const int c = s * 256 + threadIdx.x;\n"
    "            if (V::NC % 256 == 0 || c < V::NC) {\n"
    "                TO e[V::E];\n"
    "#pragma unroll\n"
    "                for (int k = 0; k < V::E; k++) e[k] = cv<TO>(sh[CK_PAD(c * V::E + k)]);\n"
    "                uint4 q;\n"
    "                memcpy(&q, e, sizeof e < 16 ? sizeof e : 16);\n"
    "                dst[c] = q;\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "    else {\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < CK_IT; k++) {\n"
    "            const long long i = base + k * 256 + threadIdx.x;\n"
    "            if (i < p.n) *(TO *)(out + i * p.sout) = cv<TO>(sh[CK_PAD(k * 256 + threadIdx.x)]);\n"
    "        }\n"
    "    }\n"
    "}\n"
    "CKD void ck_loffs(const ck_sargs &p, long long l, long long &oi, long long &oo) {\n"
    "    oi = oo = 0;\n"
    "    for (int d = p.nd - 1; d >= 0; d--) {\n"
    "        const long long c = l % p.lshape[d];\n"
    "        l /= p.lshape[d];\n"
    "        oi += c * p.lsin[d];\n"
    "        oo += c * p.lsout[d];\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(256) ckl(const ck_sargs p) {\n"
    "    for (long long l = (long long)blockIdx.x * 256 + threadIdx.x; l < p.nlines;\n"
    "         l += (long long)gridDim.x * 256) {\n"
    "        long long oi, oo;\n"
    "        ck_loffs(p, l, oi, oo);\n"
    "        const char *in = (const char *)p.in + oi;\n"
    "        char *out = (char *)p.out + oo;\n"
    "        TA run = ck_neutral();\n"
    "        for (long long j = 0; j < p.n; j++) {\n"
    "            const TA x = cv<TA>(*(const TI *)(in + j * p.sin));\n"
    "            if (CK_EXCL) *(TO *)(out + j * p.sout) = cv<TO>(run);\n"
    "            run = j ? ck_op(run, x) : (CK_EXCL ? ck_op(run, x) : x);\n"
    "            if (!CK_EXCL) *(TO *)(out + j * p.sout) = cv<TO>(run);\n"
    "        }\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(256) ckw(const ck_sargs p) {\n"
    "    const int lane = threadIdx.x & 31;\n"
    "    const long long nw = (long long)gridDim.x * 8;\n"
    "    for (long long l = (long long)blockIdx.x * 8 + (threadIdx.x >> 5); l < p.nlines; l += nw) {\n"
    "        long long oi, oo;\n"
    "        ck_loffs(p, l, oi, oo);\n"
    "        const char *in = (const char *)p.in + oi;\n"
    "        char *out = (char *)p.out + oo;\n"
    "        TA carry = ck_neutral();\n"
    "        bool has = false;\n"
    "        for (long long j0 = 0; j0 < p.n; j0 += 32) {\n"
    "            const long long j = j0 + lane;\n"
    "            const bool ok = j < p.n;\n"
    "            TA inc = cv<TA>(*(const TI *)(in + (ok ? j : j0) * p.sin));\n"
    "#pragma unroll\n"
    "            for (int d = 1; d < 32; d <<= 1) {\n"
    "                const TA o = ck_wsh(inc, d, 1);\n"
    "                if (lane >= d) inc = ck_op(o, inc);\n"
    "            }\n"
    "            const TA val = has ? ck_op(carry, inc) : inc;\n"
    "            TA e = ck_wsh(val, 1, 1);\n"
    "            if (lane == 0) e = has ? carry : ck_neutral();\n"
    "            if (ok) *(TO *)(out + j * p.sout) = cv<TO>(CK_EXCL ? e : val);\n"
    "            const long long last = p.n - 1 - j0 < 31 ? p.n - 1 - j0 : 31;\n"
    "            carry = ck_wsh(val, (int)last, 0);\n"
    "            has = true;\n"
    "        }\n"
    "    }\n"
    "}\n";

/* The source of one scan: types, the operation, its neutral element; with `ctype`, the
 * input, output and accumulator are that type, which head defines. New ref or NULL. */
static PyObject *
scan_source(int itc, int otc, const char *acc, int acc_size, const char *head, const char *op,
            const char *neutral, int exclusive, int user, const char *ctype)
{
    /* Each user text under its own #line, and its last line's number again after it, so
     * that the `);` closing it (on a line of its own: a // comment cannot swallow it)
     * counts as that line, where an unfinished expression is reported. */
    const char *ln1 = user ? "\n#line 1 \"scan_expr\"\n" : "";
    const char *ln2 = user ? "\n#line 1 \"neutral\"\n" : "";
    char end1[64] = "", end2[64] = "";
    if (user) {
        int a = 1, b = 1;
        for (const char *c = op; *c; c++)
            a += *c == '\n';
        for (const char *c = neutral; *c; c++)
            b += *c == '\n';
        PyOS_snprintf(end1, sizeof end1, "\n#line %d \"scan_expr\"", a);
        PyOS_snprintf(end2, sizeof end2, "\n#line %d \"neutral\"", b);
    }
    PyObject *types = ctype ? PyUnicode_FromFormat("#define CK_IT %d\n#define CK_EXCL %d\n",
                                                   scan_items(acc_size), exclusive)
                            : PyUnicode_FromFormat("typedef %s TI;\ntypedef %s TO;\ntypedef %s TA;\n"
                                                   "#define CK_IT %d\n#define CK_EXCL %d\n",
                                                   ck_dtypes[itc].ctype, ck_dtypes[otc].ctype, acc,
                                                   scan_items(acc_size), exclusive);
    PyObject *after = ctype ? PyUnicode_FromFormat("typedef %s TI;\ntypedef TI TO;\ntypedef TI TA;\n",
                                                   ctype)
                            : PyUnicode_FromString("");
    PyObject *out = types && after ? PyUnicode_FromFormat(
        "%s\n%U%s\n%UCKD TA ck_op(const TA a, const TA b) {\n    return (%s%s%s\n);\n}\n"
        "CKD TA ck_neutral() {\n    return cv<TA>(%s%s%s\n);\n}\n%s",
        ck_preamble, types, head ? head : "", after, ln1, op, end1, ln2, neutral, end2, scan_body)
                                   : NULL;
    Py_XDECREF(types);
    Py_XDECREF(after);
    return out;
}

/* Scan `len` elements along each line of (nd, lshape) from in to out. 0 / -1. */
typedef struct {
    CUdeviceptr in, out;
    long long n, sin, sout, nlines;
    int nd;
    long long lshape[LMAXD], lsin[LMAXD], lsout[LMAXD];
} splan;

static int
scan_run(cukit_state *st, cukit_Device *dev, ck_kcache *cache, uint64_t key, PyObject *src_args[4],
         int acc_size, const splan *plan, CUstream h, int itemsize)
{
    if (plan->n == 0 || plan->nlines == 0)
        return 0;
    int fn = plan->nlines == 1 && plan->nd == 0 ? SF_TILES
             : (plan->sin == itemsize && plan->n >= 32) ? SF_WARPS : SF_LINES;
    ck_entry *e = ck_kcache_find(cache, key | (uint64_t)fn);
    if (e == NULL) {
        PyObject *module = NULL;
        CUfunction f;
        const char *file = PyUnicode_AsUTF8(src_args[1]);
        int rc = file ? cukit_builtin_function(st, dev, src_args[0], file, src_args[2], fnames[0],
                                              &module, &f)
                       : -1;
        for (int i = 0; rc == 0 && i < SF_COUNT; i++) {
            if (i > 0 && CU_CALL(st, cuModuleGetFunction,
                                 (&f, ((cukit_Module *)module)->handle, fnames[i])) < 0)
                rc = -1;
            if (rc == 0)
                rc = ck_kcache_add(cache, key | (uint64_t)i, f, 0, module);
        }
        Py_XDECREF(module);
        if (rc < 0)
            return -1;
        e = ck_kcache_find(cache, key | (uint64_t)fn);
    }
    struct {
        unsigned long long in, out, status;
        long long n, sin, sout, nlines;
        int ntiles, nd;
        long long lshape[8], lsin[8], lsout[8];
    } a;
    memset(&a, 0, sizeof a);
    a.in = plan->in;
    a.out = plan->out;
    a.n = plan->n;
    a.sin = plan->sin;
    a.sout = plan->sout;
    a.nlines = plan->nlines;
    a.nd = plan->nd;
    memcpy(a.lshape, plan->lshape, sizeof a.lshape);
    memcpy(a.lsin, plan->lsin, sizeof a.lsin);
    memcpy(a.lsout, plan->lsout, sizeof a.lsout);
    cukit_Array *status = NULL;
    long long grid;
    if (fn == SF_TILES) {
        const long long tile = CK_THREADS * scan_items(acc_size);
        long long ntiles = (plan->n + tile - 1) / tile;
        if (ntiles > 0x7fffffffLL) {
            PyErr_SetString(PyExc_ValueError, "scan: too many elements");
            return -1;
        }
        size_t head = (4 * (size_t)(ntiles + 1) + 15) / 16 * 16;
        Py_ssize_t bytes = (Py_ssize_t)(head + 32 * (size_t)ntiles);
        /* zeroed: the ticket, the flags, and the first 8 bytes of each tile's slot, where an
         * accumulator of up to 4 bytes keeps its packed flag and value; zeroed for every
         * accumulator (a few bytes a tile), so the kernel alone decides which it uses */
        size_t zeroed = head + 8 * (size_t)ntiles;
        status = ck_empty(st, dev, CUKIT_TC_U8, 1, &bytes);
        if (status == NULL)
            return -1;
        a.status = cukit_array_ptr(status);
        a.ntiles = (int)ntiles;
        grid = ntiles;
        if (cukit_device_activate(dev) < 0 ||
            CU_CALL(st, cuMemsetD8Async, ((CUdeviceptr)a.status, 0, zeroed, h)) < 0) {
            Py_DECREF(status);
            return -1;
        }
    }
    else {
        long long per = fn == SF_WARPS ? 8 : 256;
        grid = (plan->nlines + per - 1) / per;
        if (grid > 0x7fffffffLL)
            grid = 0x7fffffffLL;
    }
    void *args[] = {&a};
    int rc = cukit_builtin_launch(dev, e->func, (unsigned)grid, 1, 256, 1, h, args);
    Py_XDECREF(status);
    return rc;
}

/* Plan a scan of a along axis (-1: a flattened C-contiguous a) into out. 0 / -1. */
static int
scan_plan(splan *plan, cukit_Array *a, int axis, cukit_Array *out)
{
    memset(plan, 0, sizeof *plan);
    plan->in = cukit_array_ptr(a);
    plan->out = cukit_array_ptr(out);
    if (axis < 0) {
        plan->n = a->size;
        plan->sin = a->itemsize;
        plan->sout = out->ndim ? out->strides[out->ndim - 1] : out->itemsize;
        plan->nlines = 1;
        return 0;
    }
    plan->n = a->shape[axis];
    plan->sin = a->strides[axis];
    plan->sout = out->strides[axis];
    plan->nlines = 1;
    for (int d = 0; d < a->ndim; d++) {
        if (d == axis)
            continue;
        plan->nlines *= a->shape[d];
        if (a->shape[d] == 1)
            continue;
        if (plan->nd >= LMAXD) {
            PyErr_Format(PyExc_ValueError, "cukit scans take up to %d dimensions besides the "
                         "scanned one", LMAXD);
            return -1;
        }
        plan->lshape[plan->nd] = a->shape[d];
        plan->lsin[plan->nd] = a->strides[d];
        plan->lsout[plan->nd] = out->strides[d];
        plan->nd++;
    }
    if (plan->nd == 0 && plan->nlines == 1)
        plan->nd = 0;
    return 0;
}

static int
sum_type(int tc)
{
    const ck_dtype *d = &ck_dtypes[tc];
    if (d->kind == 'b' || (d->kind == 'i' && d->size < 8))
        return CUKIT_TC_I64;
    if (d->kind == 'u' && d->size < 8)
        return CUKIT_TC_U64;
    return tc;
}

PyObject *
ck_scan_call(cukit_state *st, int which, PyObject *const *args, Py_ssize_t nargs,
             PyObject *kwnames)
{
    const char *who = which ? "cumprod" : "cumsum";
    PyObject *v[5] = {NULL, NULL, NULL, NULL, NULL}; /* a, axis, dtype, out, stream */
    static const char *const names[] = {"a", "axis", "dtype", "out", "stream"};
    if (nargs < 1 || nargs > 4)
        return PyErr_Format(PyExc_TypeError, "cukit.%s() takes 1 to 4 positional arguments", who);
    for (Py_ssize_t i = 0; i < nargs; i++)
        v[i] = args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        int k = -1;
        for (int j = 1; j < 5 && k < 0; j++)
            if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), names[j]) == 0)
                k = j;
        if (k < 0 || v[k])
            return PyErr_Format(PyExc_TypeError, "cukit.%s() got an unexpected or repeated "
                                "keyword argument %R", who, PyTuple_GET_ITEM(kwnames, i));
        v[k] = args[nargs + i];
    }
    if (!Py_IS_TYPE(v[0], st->ArrayType))
        return PyErr_Format(PyExc_TypeError, "cukit.%s(): a must be a cukit.Array, not %s", who,
                            Py_TYPE(v[0])->tp_name);
    cukit_Array *a = (cukit_Array *)v[0];
    if (!cukit_array_live(a))
        return cukit_freed_error(), NULL;
    if (!ck_math_tc(a->typecode))
        return PyErr_Format(PyExc_TypeError, "cukit.%s() does not support dtype %S%s", who, a->dtype,
                            ck_dtype_hint(a->typecode));
    int axis = -1;
    if (v[1] && v[1] != Py_None) {
        uint64_t mask;
        PyObject *t = PyTuple_Pack(1, v[1]);
        int rc = t && !PyTuple_Check(v[1]) ? ck_parse_axes(st, t, a->ndim, &mask) : -1;
        Py_XDECREF(t);
        if (rc < 0)
            return PyErr_Occurred() ? NULL
                                    : PyErr_Format(PyExc_TypeError, "cukit.%s(): axis must be an "
                                                   "integer or None", who);
        for (axis = 0; !(mask & (1ULL << axis)); axis++)
            ;
    }
    int otc = sum_type(a->typecode);
    if (v[2] && v[2] != Py_None && (otc = ck_tc_of(st, v[2])) < 0)
        return NULL;
    int atc = otc == CUKIT_TC_F16 || otc == CUKIT_TC_BF16 ? CUKIT_TC_F32 : otc;
    cukit_Array *src = a;
    Py_INCREF(src);
    if (axis < 0 && a->ndim > 1 && !(a->flags & CUKIT_ARRAY_C_CONTIG)) {
        Py_SETREF(src, cukit_array_copy(a));
        if (src == NULL)
            return NULL;
    }
    if (axis < 0 && a->ndim == 1)
        axis = 0;
    Py_ssize_t shape[CUKIT_MAXDIM];
    int ond = axis < 0 ? 1 : a->ndim;
    if (axis < 0)
        shape[0] = a->size;
    else
        memcpy(shape, a->shape, sizeof(Py_ssize_t) * (size_t)a->ndim);
    cukit_Array *out;
    if (v[3] && v[3] != Py_None) {
        out = (cukit_Array *)v[3];
        if (!Py_IS_TYPE(v[3], st->ArrayType) || !ck_math_tc(out->typecode) || out->ndim != ond ||
            memcmp(out->shape, shape, sizeof(Py_ssize_t) * (size_t)ond)) {
            Py_DECREF(src);
            return PyErr_Format(PyExc_ValueError, "cukit.%s(): out= must be a cukit.Array of the "
                                "result's shape", who);
        }
        otc = out->typecode;
        Py_INCREF(out);
    }
    else if ((out = ck_empty(st, a->device, otc, ond, shape)) == NULL) {
        Py_DECREF(src);
        return NULL;
    }
    splan plan;
    CUstream h = NULL;
    int rc = scan_plan(&plan, src, src == a ? axis : -1, out) < 0 ||
             ck_stream(st, v[4], a->device, NULL, &h) < 0 ? -1 : 0;
    if (rc == 0) {
        uint64_t key = (1ULL << 63) | (uint64_t)which << 2 | (uint64_t)src->typecode << 4 |
                       (uint64_t)otc << 9 | (uint64_t)(a->device->ordinal & 63) << 14;
        ck_kcache *cache = ck_reduce_cache(st, 1);
        const char *acc = ck_dtypes[atc].ctype_c;
        PyObject *sa[4] = {NULL, NULL, NULL, NULL};
        sa[0] = scan_source(src->typecode, otc, acc, ck_acc_size(atc), NULL, which ? "uf_multiply(a, b)" : "uf_add(a, b)",
                            which ? "1" : "0", 0, 0, NULL);
        sa[1] = PyUnicode_FromFormat("cukit_%s.cu", who);
        sa[2] = PyTuple_New(0);
        rc = cache && sa[0] && sa[1] && sa[2]
                 ? scan_run(st, a->device, cache, key, sa, ck_acc_size(atc), &plan, h, (int)src->itemsize)
                 : -1;
        for (int i = 0; i < 3; i++)
            Py_XDECREF(sa[i]);
    }
    Py_DECREF(src);
    if (rc < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return (PyObject *)out;
}

static PyObject *
fn_cumsum(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return ck_scan_call(PyModule_GetState(m), 0, args, nargs, kwnames);
}

static PyObject *
fn_cumprod(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return ck_scan_call(PyModule_GetState(m), 1, args, nargs, kwnames);
}

/* ------------------------------------------------------------------ ScanKernel */

typedef struct {
    PyObject_HEAD
    cukit_state *st;     /* borrowed */
    int tc, exclusive;
    PyObject *source;    /* strong ref: the CUDA C */
    PyObject *file;      /* strong ref: str */
    PyObject *options;   /* strong ref: tuple */
    ck_kcache cache;
} ck_ScanKernel;

static PyObject *
sk_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    /* a Python subclass (InclusiveScanKernel) has no module: its base has */
    PyTypeObject *t = type;
    while (t && !(t->tp_flags & Py_TPFLAGS_HEAPTYPE && ((PyHeapTypeObject *)t)->ht_module))
        t = t->tp_base;
    cukit_state *st = t ? cukit_state_of_type(t) : NULL;
    if (st == NULL)
        return PyErr_Format(PyExc_TypeError, "ScanKernel: no module state");
    static char *kw[] = {"dtype", "scan_expr", "neutral", "exclusive", "name_prefix", "options",
                         "preamble", "devices", "ctype", NULL};
    PyObject *dtype, *neutral = Py_None, *name = NULL, *opts = Py_None, *pre = NULL, *devs = NULL;
    const char *expr, *ctype = NULL;
    int exclusive = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Os|OpOOOOz:ScanKernel", kw, &dtype, &expr,
                                     &neutral, &exclusive, &name, &opts, &pre, &devs, &ctype))
        return NULL;
    int tc = ck_tc_of(st, dtype);
    if (tc < 0)
        return NULL;
    /* A complex may be scanned in a type of its layout that the preamble defines
     * (pycuda::complex<T>), so scan_expr can use that type's functions. */
    if (ctype && tc != CUKIT_TC_C64 && tc != CUKIT_TC_C128)
        return PyErr_Format(PyExc_TypeError, "ScanKernel: ctype= names the C type a complex "
                            "dtype is scanned in (e.g. pycuda::complex<float>); dtype %s is not "
                            "complex: leave ctype out", ck_dtypes[tc].name);
    for (const char *c = ctype; c && *c; c++)
        if (!(isalnum((unsigned char)*c) || strchr("_: <>", *c)))
            return PyErr_Format(PyExc_ValueError, "ScanKernel: ctype='%s' must be a C type name, "
                                "e.g. 'pycuda::complex<float>'", ctype);
    if (exclusive && neutral == Py_None)
        return PyErr_Format(PyExc_ValueError, "ExclusiveScanKernel needs neutral= (the value "
                            "the first element of the result gets)");
    PyObject *ntext = neutral == Py_None ? PyUnicode_FromString("0") : PyObject_Str(neutral);
    PyObject *ptext = pre && pre != Py_None ? PyObject_Str(pre) : PyUnicode_FromString("");
    const char *nt = ntext ? PyUnicode_AsUTF8(ntext) : NULL, *pt = ptext ? PyUnicode_AsUTF8(ptext) : NULL;
    PyObject *head = pt ? PyUnicode_FromFormat("#line 1 \"preamble\"\n%s\n", pt) : NULL;
    const char *ht = head ? PyUnicode_AsUTF8(head) : NULL;
    PyObject *src = ht && nt ? scan_source(tc, tc, ck_dtypes[tc].ctype, ck_dtypes[tc].size, ht, expr, nt, exclusive, 1,
                                           ctype)
                             : NULL;
    Py_XDECREF(ntext);
    Py_XDECREF(ptext);
    Py_XDECREF(head);
    if (src == NULL)
        return NULL;
    ck_ScanKernel *self = (ck_ScanKernel *)type->tp_alloc(type, 0); /* tracked by the GC */
    if (self == NULL) {
        Py_DECREF(src);
        return NULL;
    }
    self->st = st;
    self->tc = tc;
    self->exclusive = exclusive;
    self->source = src;
    self->file = PyUnicode_FromFormat("%s.cu", name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name)
                                                                             : "scan");
    self->options = opts != Py_None ? PySequence_Tuple(opts) : PyTuple_New(0);
    memset(&self->cache, 0, sizeof self->cache);
    if (self->file == NULL || self->options == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* k(input_ary, output_ary=None, stream=None): in place when output_ary is None. */
static PyObject *
sk_call(ck_ScanKernel *self, PyObject *args, PyObject *kwargs)
{
    cukit_state *st = self->st;
    static char *kw[] = {"input_ary", "output_ary", "stream", "allocator", "queue", "output", NULL};
    PyObject *in_o, *out_o = Py_None, *stream = Py_None, *alloc = NULL, *queue = NULL,
             *output = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOOO:scan", kw, &in_o, &out_o, &stream,
                                     &alloc, &queue, &output))
        return NULL;
    if (out_o == Py_None)
        out_o = output != Py_None ? output : in_o;
    if (!Py_IS_TYPE(in_o, st->ArrayType) || !Py_IS_TYPE(out_o, st->ArrayType))
        return PyErr_Format(PyExc_TypeError, "scan kernel: the input and output must be "
                            "cukit.Array objects");
    cukit_Array *a = (cukit_Array *)in_o, *o = (cukit_Array *)out_o;
    if (!cukit_array_live(a) || !cukit_array_live(o))
        return cukit_freed_error(), NULL;
    if (a->typecode != self->tc || o->typecode != self->tc)
        return PyErr_Format(PyExc_TypeError, "scan kernel: the arrays must be %s (the kernel's "
                            "dtype)", ck_dtypes[self->tc].name);
    if (a->ndim != 1 || o->ndim != 1 || a->size != o->size)
        return PyErr_Format(PyExc_ValueError, "scan kernel: the input and output must be 1-D "
                            "arrays of one size");
    splan plan;
    CUstream h = NULL;
    if (scan_plan(&plan, a, 0, o) < 0 || ck_stream(st, stream, a->device, NULL, &h) < 0)
        return NULL;
    uint64_t key = (1ULL << 63) | (uint64_t)(a->device->ordinal & 63) << 4;
    PyObject *sa[4] = {self->source, self->file, self->options, NULL};
    if (scan_run(st, a->device, &self->cache, key, sa, ck_dtypes[self->tc].size, &plan, h,
                 (int)a->itemsize) < 0)
        return NULL;
    return Py_NewRef(out_o);
}

static void
sk_dealloc(ck_ScanKernel *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    ck_kcache_clear(&self->cache);
    Py_CLEAR(self->source);
    Py_CLEAR(self->file);
    Py_CLEAR(self->options);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int
sk_traverse(ck_ScanKernel *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->cache.modules);
    return 0;
}

static PyMemberDef sk_members[] = {
    {"source", Py_T_OBJECT_EX, offsetof(ck_ScanKernel, source), Py_READONLY, "The CUDA C."},
    {NULL},
};

static PyType_Slot sk_slots[] = {
    {Py_tp_new, sk_new},
    {Py_tp_dealloc, sk_dealloc},
    {Py_tp_traverse, sk_traverse},
    {Py_tp_call, sk_call},
    {Py_tp_members, sk_members},
    {Py_tp_doc, "ScanKernel(dtype, scan_expr, neutral=None, exclusive=False, name_prefix='scan', "
                "options=None, preamble='', devices=None, ctype=None): the base of "
                "InclusiveScanKernel and ExclusiveScanKernel. ctype: the C type a complex dtype "
                "is scanned in, defined by the preamble (e.g. pycuda::complex<float>)."},
    {0, NULL},
};

static PyType_Spec sk_spec = {
    .name = "cukit.ScanKernel",
    .basicsize = sizeof(ck_ScanKernel),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = sk_slots,
};

static PyMethodDef scan_functions[] = {
    {"cumsum", (PyCFunction)(void (*)(void))fn_cumsum, METH_FASTCALL | METH_KEYWORDS,
     "cumsum(a, axis=None, dtype=None, out=None, *, stream=None) -> Array: numpy.cumsum."},
    {"cumprod", (PyCFunction)(void (*)(void))fn_cumprod, METH_FASTCALL | METH_KEYWORDS,
     "cumprod(a, axis=None, dtype=None, out=None, *, stream=None) -> Array: numpy.cumprod."},
    {NULL},
};

int
ck_scan_setup(PyObject *module, cukit_state *st)
{
    st->compute->ScanKernelType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &sk_spec, NULL);
    if (st->compute->ScanKernelType == NULL ||
        PyModule_AddObjectRef(module, "ScanKernel", (PyObject *)st->compute->ScanKernelType) < 0)
        return -1;
    return PyModule_AddFunctions(module, scan_functions);
}
