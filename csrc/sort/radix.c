/* radix.c - the LSD radix sort behind cukit.sort and argsort: one histogram, then one onesweep kernel a digit */
#include "sort/sort.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ the kernels
 *
 * Keys are read as unsigned bits and mapped, on every read, to order-preserving
 * unsigned keys (canon): integers flip the sign bit; floats flip the sign bit of
 * positives and all bits of negatives, after -0.0 is made +0.0 and every NaN the
 * largest key. The buffers keep the original bits, so -0.0 stays -0.0 and a NaN keeps
 * its payload, while the sort itself sees -0.0 == 0.0 and all NaNs equal and last:
 * numpy's stable order exactly, with no pass to map keys in or out.
 *
 * 8-bit digits, least significant first (one pass a byte of the key). One histogram
 * kernel counts every pass's digits in one read. Then per pass one kernel: a block
 * (RBLOCK threads, 256 by default: the first 256 own a digit each in the per-digit
 * steps) takes tiles in the order of an atomic ticket, loads RITEMS keys a thread (a warp
 * owns 32 * RITEMS consecutive keys, key j of lane l at j * 32 + l: coalesced, and
 * the warp's order is the input's), ranks them stably by digit (the lanes holding the
 * same digit found with 8 ballots; per-warp counters in shared memory, which the
 * group's highest lane bumps with an atomic add and hands the old count to the group
 * by a shuffle: the shuffle orders the next key's add after this one), publishes its
 * per-digit counts (decoupled look-back), places the keys in shared memory in digit
 * order and writes them out, runs of one digit going to consecutive addresses. (The
 * REARLY build counts the digits first and publishes them before ranking; see the pass
 * kernel, and "variants" below for the builds.)
 *
 * Look-back: a tile's status word for a digit packs a 2-bit flag and a 30-bit count
 * (so a row has fewer than 2^30 keys less the larger of 4096 and a tile: room for a
 * last tile's padding): AGG, the tile's own count, or INC, the count plus everything before
 * it (tile 0: the digit's start from the histogram). Flag and value travel in one
 * 32-bit word written by one volatile store and read by one volatile load, so a
 * reader sees the whole old word or the whole new one, and no fence is needed: the
 * word carries no other data (the keys scattered by a pass are read only by the next
 * kernel). The thread of digit d spins on the previous tile's word while its flag is
 * 0 and walks back over AGG words until an INC one. A block waits only on tiles whose
 * ticket was taken earlier, by blocks already running (on a GPU, resident; on the
 * emulator, running on a host thread or finished): the spin cannot deadlock. */

const char cukit_radix_source[] =
    "#define RWARPS (RBLOCK / 32)\n"
    "#define RTILE (RBLOCK * RITEMS)\n"
    "#define ST_AGG 0x40000000u\n"
    "#define ST_INC 0x80000000u\n"
    "#define ST_VAL 0x3fffffffu\n"
    "#define M_INDEX 1\n"   /* carry the index payload */
    "#define M_FIRST 2\n"   /* the first pass: the index is the position */
    "#define M_LAST 4\n"    /* the last pass: the index goes out as int64 */
    "#define M_NOKEYS 8\n"  /* argsort's last pass: the keys are not written */
    /* the index payload of the warp's keys (both ranking orders load it, at different
     * points): the position on the first pass, else the previous pass's index */
    "#define LOAD_INDEX() if (mode & M_INDEX) { \\\n"
    "    _Pragma(\"unroll\") for (int j = 0; j < RITEMS; j++) { \\\n"
    "        const long long e = w0 + j * 32 + lane; \\\n"
    "        idx[j] = (mode & M_FIRST) ? (unsigned)e : e < n ? iin[e] : 0u; \\\n"
    "    } }\n"
    "__device__ __forceinline__ U canon(U b)\n"
    "{\n"
    "#if KFLOAT\n"
    "    if ((U)(b & (U)~(U)KSIGN) > (U)KEXP) return (U)~(U)0;\n"
    "    if (b == (U)KSIGN) b = 0;\n"
    "    return (b & (U)KSIGN) ? (U)~b : (U)(b | (U)KSIGN);\n"
    "#else\n"
    "    return (U)(b ^ (U)KSIGN);\n"
    "#endif\n"
    "}\n"
    /* a key whose every digit is 255 (a NaN; an integer's largest): a tile's padding */
    "#if KFLOAT\n"
    "#define KPAD ((U)~(U)0)\n"
    "#else\n"
    "#define KPAD ((U)~(U)KSIGN)\n"
    "#endif\n"
    "__device__ __forceinline__ unsigned digit_of(U b, int shift)\n"
    "{\n"
    "    return (unsigned)(canon(b) >> shift) & 255u;\n"
    "}\n"
    /* the exclusive sum over the block's threads (those past 256 add 0); every thread calls it */
    "__device__ __forceinline__ unsigned block_excl(unsigned v, unsigned *wtot)\n"
    "{\n"
    "    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;\n"
    "    unsigned x = v;\n"
    "#pragma unroll\n"
    "    for (int o = 1; o < 32; o <<= 1) {\n"
    "        const unsigned y = __shfl_up_sync(0xffffffffu, x, o);\n"
    "        if (lane >= o) x += y;\n"
    "    }\n"
    "    if (lane == 31) wtot[w] = x;\n"
    "    __syncthreads();\n"
    "    unsigned add = 0;\n"
    "    for (int i = 0; i < w; i++) add += wtot[i];\n"
    "    __syncthreads();\n"
    "    return add + x - v;\n"
    "}\n"
    /* The rank of this lane's key (digit d) among the warp's keys so far: the lanes of
     * one digit (8 ballots, or one match.any with RMATCH), then the warp's count of it,
     * which the group's highest lane bumps with an atomic add and hands to the group by a
     * shuffle (the shuffle orders the next key's add after this one). */
    "__device__ __forceinline__ unsigned warp_rank(unsigned d, unsigned *wc, int lane, unsigned below)\n"
    "{\n"
    "#if RMATCH\n"
    "    const unsigned peers = __match_any_sync(0xffffffffu, d);\n"
    "#else\n"
    "    unsigned peers = 0xffffffffu;\n"
    "#pragma unroll\n"
    "    for (int b = 0; b < 8; b++) {\n"
    /* m: all ones where this lane's bit b is set; the lanes that agree on bit b are the
     * ballot where it is set, its complement where it is not: ~(ballot ^ m) */
    "        const unsigned m = (unsigned)((int)(d << (31 - b)) >> 31);\n"
    "        peers &= ~(__ballot_sync(0xffffffffu, m) ^ m);\n"
    "    }\n"
    "#endif\n"
    "    const int leader = 31 - __clz(peers);\n"
    "    unsigned old = 0;\n"
    "    if (lane == leader) old = atomicAdd(&wc[d], __popc(peers));\n"
    "    return __shfl_sync(0xffffffffu, old, leader) + __popc(peers & below);\n"
    "}\n"
    /* HPARTS copies of the counters, lane l counting into copy l % HPARTS: lanes of one
     * digit (a float's top byte has few values) meet HPARTS times less often on one
     * address; HIL puts a digit's copies side by side (other banks) rather than a table apart */
    "#if HPARTS_WANT * KBYTES > 32\n"
    "#define HPARTS (32 / KBYTES)\n"
    "#else\n"
    "#define HPARTS HPARTS_WANT\n"
    "#endif\n"
    "#if HIL\n"
    "#define HIDX(q, i) ((i) * HPARTS + (q))\n"
    "#else\n"
    "#define HIDX(q, i) ((q) * (KBYTES * 256) + (i))\n"
    "#endif\n"
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "cukit_radix_hist(const U *in, long long n, unsigned *hist, long long rstride)\n"
    "{\n"
    "    in += blockIdx.y * n;\n"
    "    hist += blockIdx.y * rstride;\n"
    "    __shared__ unsigned h[HPARTS * KBYTES * 256];\n"
    "    for (int i = threadIdx.x; i < HPARTS * KBYTES * 256; i += 256) h[i] = 0;\n"
    "    __syncthreads();\n"
    "    const int q = threadIdx.x % HPARTS;\n"
    "    const long long stride = (long long)gridDim.x * 1024;\n"
    "    for (long long e0 = blockIdx.x * 1024LL + threadIdx.x; e0 < n; e0 += stride) {\n"
    "        U k[4];\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < 4; j++) k[j] = e0 + j * 256 < n ? canon(in[e0 + j * 256]) : (U)0;\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < 4; j++)\n"
    "            if (e0 + j * 256 < n)\n"
    "#pragma unroll\n"
    "                for (int p = 0; p < KBYTES; p++)\n"
    "                    atomicAdd(&h[HIDX(q, p * 256 + ((unsigned)(k[j] >> (8 * p)) & 255u))], 1u);\n"
    "    }\n"
    "    __syncthreads();\n"
    "    for (int i = threadIdx.x; i < KBYTES * 256; i += 256) {\n"
    "        unsigned c = 0;\n"
    "#pragma unroll\n"
    "        for (int p = 0; p < HPARTS; p++) c += h[HIDX(p, i)];\n"
    "        if (c) atomicAdd(&hist[i], c);\n"
    "    }\n"
    "}\n"
    /* The pass kernel. Without REARLY: rank (warp_rank, the warps' counters counting),
     * then the tile's counts from the counters. With REARLY: the warps count their digits
     * first (an atomic add a key), the tile publishes its counts (look-back) and turns
     * the counters into each warp's first place for a digit, then ranks: the rank is the
     * place in the tile at once. The digits are kept four to a register. */
    "extern \"C\" __global__ void __launch_bounds__(RBLOCK, RMINB)\n"
    "cukit_radix_pass(const U *kin, U *kout, const unsigned *iin, unsigned *iout, long long *iout64,\n"
    "                 long long n, const unsigned *hist, unsigned *ticket, unsigned *status,\n"
    "                 long long rstride, int shift, int mode)\n"
    "{\n"
    /* row blockIdx.y: its keys, and its own histogram, tickets and look-back words */
    "    const long long roff = blockIdx.y * n, soff = blockIdx.y * rstride;\n"
    "    kin += roff; kout += roff; iin += roff; iout += roff; iout64 += roff;\n"
    "    hist += soff; ticket += soff; status += soff;\n"
    "    __shared__ union { U k[RTILE]; unsigned v[RTILE]; unsigned c[RWARPS * 256]; } sm;\n"
    "    __shared__ unsigned tex[256], base[256], wtot[RWARPS], tile_s;\n"
    /* RSDIG: each placed key's digit beside it, not computed again from the key */
    "#if RSDIG\n"
    "    __shared__ unsigned char sdg[RTILE];\n"
    "#define PLACE(j, dj) (sm.k[rank[j]] = key[j], sdg[rank[j]] = (unsigned char)(dj))\n"
    "#define SDIG_KEY(k, i) ((unsigned)sdg[i])\n"
    "#define SDIG(j, i) ((unsigned)sdg[i])\n"
    "#else\n"
    "#define PLACE(j, dj) (sm.k[rank[j]] = key[j])\n"
    "#define SDIG_KEY(k, i) digit_of(k, shift)\n"
    "#define SDIG(j, i) sd[j]\n"
    "#endif\n"
    "    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;\n"
    "    if (tid == 0) tile_s = atomicAdd(ticket, 1u);\n"
    "    for (int i = tid; i < RWARPS * 256; i += RBLOCK) sm.c[i] = 0;\n"
    "    __syncthreads();\n"
    "    const unsigned tile = tile_s;\n"
    "    const long long t0 = (long long)tile * RTILE, w0 = t0 + w * (RITEMS * 32);\n"
    "    U key[RITEMS];\n"
    "    unsigned rank[RITEMS];\n"
    "    unsigned *const wc = sm.c + w * 256;\n"
    "    const unsigned below = (1u << lane) - 1u;\n"
    "#if REARLY\n"
    "    if (t0 + RTILE <= n) {\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < RITEMS; j++) key[j] = kin[w0 + j * 32 + lane];\n"
    "    } else {\n"
    /* past n: KPAD, digit 255, after every real key of the tile (they come last in its order) */
    "#pragma unroll\n"
    "        for (int j = 0; j < RITEMS; j++) {\n"
    "            const long long e = w0 + j * 32 + lane;\n"
    "            key[j] = e < n ? kin[e] : KPAD;\n"
    "        }\n"
    "    }\n"
    /* the digits, four to a register */
    "    unsigned dpk[(RITEMS + 3) / 4];\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < (RITEMS + 3) / 4; j++) dpk[j] = 0;\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < RITEMS; j++) {\n"
    "        const unsigned dj = digit_of(key[j], shift);\n"
    "        dpk[j >> 2] |= dj << (8 * (j & 3));\n"
    "        atomicAdd(&wc[dj], 1u);\n"
    "    }\n"
    "    __syncthreads();\n"
    "#else\n"
    "    unsigned dig[RITEMS];\n"
    "    if (t0 + RTILE <= n) {\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < RITEMS; j++) key[j] = kin[w0 + j * 32 + lane];\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < RITEMS; j++) dig[j] = digit_of(key[j], shift);\n"
    "    } else {\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < RITEMS; j++) {\n"
    "            const long long e = w0 + j * 32 + lane;\n"
    "            key[j] = e < n ? kin[e] : (U)0;\n"
    "        }\n"
    /* past n: digit 255, after every real key of the tile (they come last in its order) */
    "#pragma unroll\n"
    "        for (int j = 0; j < RITEMS; j++)\n"
    "            dig[j] = w0 + j * 32 + lane < n ? digit_of(key[j], shift) : 255u;\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < RITEMS; j++) rank[j] = warp_rank(dig[j], wc, lane, below);\n"
    "    __syncthreads();\n"
    "#endif\n"
    /* thread d < 256: the tile's count of digit d, the warps' exclusive counts in place */
    "    const int d = tid;\n"
    "#define DIGIT_THREAD (RBLOCK == 256 || d < 256)\n"
    "    unsigned cnt = 0;\n"
    "    if (DIGIT_THREAD) {\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < RWARPS; i++) { const unsigned c = sm.c[i * 256 + d]; sm.c[i * 256 + d] = cnt; cnt += c; }\n"
    "    }\n"
    "    volatile unsigned *const mine = status + (size_t)tile * 256 + d;\n"
    "    if (tile > 0 && DIGIT_THREAD) *mine = ST_AGG | cnt;\n"
    "    const unsigned ex = block_excl(cnt, wtot);\n"
    "    unsigned start = 0;\n"
    "    if (tile == 0) {\n"
    "        start = block_excl(DIGIT_THREAD ? hist[d] : 0u, wtot);\n"
    "        if (DIGIT_THREAD) *mine = ST_INC | (start + cnt);\n"
    "    }\n"
    "    unsigned idx[RITEMS];\n"
    "#if REARLY\n"
    "    if (DIGIT_THREAD) {\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < RWARPS; i++) sm.c[i * 256 + d] += ex;\n"
    "    }\n"
    "    __syncthreads();\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < RITEMS; j++) rank[j] = warp_rank((dpk[j >> 2] >> (8 * (j & 3))) & 255u, wc, lane, below);\n"
    "    __syncthreads();\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < RITEMS; j++) PLACE(j, (dpk[j >> 2] >> (8 * (j & 3))) & 255u);\n"
    /* the index payload after the keys have left their registers */
    "    LOAD_INDEX();\n"
    "#else\n"
    "    if (DIGIT_THREAD) tex[d] = ex;\n"
    "    __syncthreads();\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < RITEMS; j++) rank[j] += tex[dig[j]] + sm.c[w * 256 + dig[j]];\n"
    "    LOAD_INDEX();\n"
    "    __syncthreads();\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < RITEMS; j++) PLACE(j, dig[j]);\n"
    "#endif\n"
    "    if (tile > 0 && DIGIT_THREAD) {\n"
    "        const volatile unsigned *p = status + (size_t)(tile - 1) * 256 + d;\n"
    "        for (;;) {\n"
    "            const unsigned s = *p;\n"
    "            if (s & (ST_AGG | ST_INC)) {\n"
    "                start += s & ST_VAL;\n"
    "                if (s & ST_INC) break;\n"
    "                p -= 256;\n"
    "            }\n"
    "#if RSPIN\n"
    "            else __nanosleep(RSPIN);\n"
    "#endif\n"
    "        }\n"
    "        *mine = ST_INC | (start + cnt);\n"
    "    }\n"
    "    if (DIGIT_THREAD) base[d] = start - ex;\n"
    "    __syncthreads();\n"
    "    const long long valid = n - t0;\n"
    "    unsigned sd[RITEMS];\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < RITEMS; j++) {\n"
    "        const int i = tid + j * RBLOCK;\n"
    "        const U k = sm.k[i];\n"
    "        sd[j] = SDIG_KEY(k, i);\n"
    "        if (!(mode & M_NOKEYS) && i < valid) kout[base[sd[j]] + i] = k;\n"
    "    }\n"
    "    if (mode & M_INDEX) {\n"
    "        __syncthreads();\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < RITEMS; j++) sm.v[rank[j]] = idx[j];\n"
    "        __syncthreads();\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < RITEMS; j++) {\n"
    "            const int i = tid + j * RBLOCK;\n"
    "            if (i < valid) {\n"
    "                const unsigned pos = base[SDIG(j, i)] + i;\n"
    "                if (mode & M_LAST) iout64[pos] = sm.v[i]; else iout[pos] = sm.v[i];\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "}\n";

/* The key type of each dtype: U (unsigned, the element's size), KBYTES (passes),
 * KSIGN (the bit flipped), KFLOAT and KEXP (a float's exponent mask: above it, NaN),
 * (RITEMS, keys a thread, comes with the variant: radix_defines). */
#define RADIX_INT(u, bytes, sign) "typedef " u " U;\n#define KBYTES " #bytes "\n#define KSIGN " sign \
    "\n#define KFLOAT 0\n#define KEXP 0\n"
#define RADIX_FLOAT(u, bytes, sign, exp) "typedef " u " U;\n#define KBYTES " #bytes "\n#define KSIGN " \
    sign "\n#define KFLOAT 1\n#define KEXP " exp "\n"

static const struct {
    int tc, bytes;
    const char *types;
} radix_types[] = {
    {CUKIT_TC_BOOL, 1, RADIX_INT("unsigned char", 1, "0")},
    {CUKIT_TC_I8, 1, RADIX_INT("unsigned char", 1, "0x80")},
    {CUKIT_TC_U8, 1, RADIX_INT("unsigned char", 1, "0")},
    {CUKIT_TC_I16, 2, RADIX_INT("unsigned short", 2, "0x8000")},
    {CUKIT_TC_U16, 2, RADIX_INT("unsigned short", 2, "0")},
    {CUKIT_TC_I32, 4, RADIX_INT("unsigned int", 4, "0x80000000u")},
    {CUKIT_TC_U32, 4, RADIX_INT("unsigned int", 4, "0u")},
    {CUKIT_TC_I64, 8, RADIX_INT("unsigned long long", 8, "0x8000000000000000ull")},
    {CUKIT_TC_U64, 8, RADIX_INT("unsigned long long", 8, "0ull")},
    {CUKIT_TC_F16, 2, RADIX_FLOAT("unsigned short", 2, "0x8000", "0x7c00")},
    {CUKIT_TC_BF16, 2, RADIX_FLOAT("unsigned short", 2, "0x8000", "0x7f80")},
    {CUKIT_TC_F32, 4, RADIX_FLOAT("unsigned int", 4, "0x80000000u", "0x7f800000u")},
    {CUKIT_TC_F64, 8, RADIX_FLOAT("unsigned long long", 8, "0x8000000000000000ull",
                               "0x7ff0000000000000ull")},
};

const char *
cukit_radix_types(int tc)
{
    for (size_t i = 0; i < sizeof radix_types / sizeof *radix_types; i++)
        if (radix_types[i].tc == tc)
            return radix_types[i].types;
    return NULL;
}

/* Keys a thread of v for typecode tc: items8 for 8-byte keys. */
static int
items_of(const cukit_radix_variant *v, int tc)
{
    for (size_t i = 0; i < sizeof radix_types / sizeof *radix_types; i++)
        if (radix_types[i].tc == tc)
            return radix_types[i].bytes == 8 ? v->items8 : v->items;
    return v->items;
}

long long
cukit_radix_tile(const cukit_radix_variant *v, int tc)
{
    return (long long)v->block * items_of(v, tc);
}

int
cukit_radix_wanted(long long L, long long tile)
{
    return L >= CUKIT_RADIX_MIN && L <= (1LL << 30) - (tile > 4096 ? tile : 4096);
}

/* ------------------------------------------------------------------ variants
 *
 * The kernels' shape is an internal knob (cukit._cukit._radix_variant, and the
 * environment variable CUKIT_RADIX_VARIANT read once at import) so that one run on a
 * GPU can time several builds of them side by side (tools/sort_variants.py). It is not
 * a documented setting: the default is the measured best, and every variant sorts
 * correctly (the tests run each). A spec is "knob=value,..." over the defaults. */

/* The default build, the fastest of tools/sort_variants.py's on an H100 (2^26 keys:
 * 37.2 G float32 and 40.5 G int32 keys/s against 30.5 and 31.4 for 256 x 15, rank then
 * count): 512 threads, 17 keys a thread (11 for 8-byte keys), the tile's digits
 * counted before ranking, 64 registers (two blocks an SM). */
static const cukit_radix_variant variant_default = {512, 17, 11, 2, 1, 0, 0, 4, 0, 0};

static const cukit_knob knobs[] = {
    {"block", offsetof(cukit_radix_variant, block), 256, 1024, "threads a block, a multiple of 32"},
    {"items", offsetof(cukit_radix_variant, items), 1, 32, "keys a thread (1-, 2- and 4-byte keys)"},
    {"items8", offsetof(cukit_radix_variant, items8), 1, 32, "keys a thread (8-byte keys)"},
    {"minb", offsetof(cukit_radix_variant, minb), 1, 8, "blocks an SM in the launch bounds (the register cap)"},
    {"early", offsetof(cukit_radix_variant, early), 0, 1, "count the tile's digits before ranking"},
    {"match", offsetof(cukit_radix_variant, match), 0, 1, "find a digit's lanes by match.any, not 8 ballots"},
    {"spin", offsetof(cukit_radix_variant, spin), 0, 10000, "nanoseconds the look-back sleeps between reads"},
    {"hparts", offsetof(cukit_radix_variant, hparts), 1, 8, "the histogram's copies of the counters"},
    {"hil", offsetof(cukit_radix_variant, hil), 0, 1, "the histogram's copies side by side"},
    {"sdig", offsetof(cukit_radix_variant, sdig), 0, 1, "keep each placed key's digit in shared memory"},
};

#define NKNOBS (sizeof knobs / sizeof *knobs)
/* The static shared memory a block may have, less the kernel's other arrays. */
#define TILE_BYTES (48 * 1024 - 3 * 1024)

/* Parse spec over the defaults into *v. 0, or -1 with a ValueError starting with who. */
static int
variant_parse(const char *spec, const char *who, cukit_radix_variant *v)
{
    *v = variant_default;
    int given[NKNOBS] = {0};
    if (cukit_knobs_parse(spec, who, knobs, NKNOBS, v, given) < 0)
        return -1;
    /* what the shape implies, unless given: 8-byte keys take two thirds the keys (their
     * registers), and the register cap lets 768 to 1024 threads share an SM */
    const int b4 = 4 + v->sdig, b8 = 8 + v->sdig; /* shared bytes a key */
    if (!given[2] && (given[0] || given[1] || given[9])) {
        v->items8 = v->items * 2 / 3 < 1 ? 1 : v->items * 2 / 3;
        if (v->block * v->items8 * b8 > TILE_BYTES)
            v->items8 = TILE_BYTES / (b8 * v->block);
    }
    if (!given[3] && given[0])
        v->minb = 1024 / v->block > 3 ? 3 : 1024 / v->block;
    const char *bad =
        v->block % 32 ? "block must be a multiple of 32"
        : v->block * v->items * b4 > TILE_BYTES
            ? "block x items x (4 + sdig) bytes is more than 45 KiB of shared memory"
        : v->block * v->items8 * b8 > TILE_BYTES
            ? "block x items8 x (8 + sdig) bytes is more than 45 KiB of shared memory"
        : v->block * v->minb > 2048 ? "block x minb is more than an SM's 2048 threads"
        : (v->hparts & (v->hparts - 1)) ? "hparts must be 1, 2, 4 or 8" : NULL;
    if (bad) {
        PyErr_Format(PyExc_ValueError, "%s: %s (in '%s')", who, bad, spec);
        return -1;
    }
    return 0;
}

/* The build in use. Process-wide rather than in module state (the one exception to
 * that rule here): a knob for timing, read from the environment once, that every
 * interpreter may share; plain C data, so reading it costs a sort nothing. */
static cukit_radix_variant variant_now = {512, 17, 11, 2, 1, 0, 0, 4, 0, 0}; /* variant_default */

int
cukit_radix_variant_set(const char *spec, const char *who)
{
    cukit_radix_variant v;
    if (variant_parse(spec, who, &v) < 0)
        return -1;
    variant_now = v;
    return 0;
}

const cukit_radix_variant *
cukit_radix_variant_now(void)
{
    return &variant_now;
}

long long
cukit_radix_variant_key(const cukit_radix_variant *v)
{
    /* widths: block / 32 6 bits, items 6, items8 6, minb 4, early 1, match 1, spin 14,
     * hparts 4, hil 1, sdig 1 (the knobs' ranges fit): 44 bits */
    long long k = v->block / 32;
    k = k << 6 | v->items;
    k = k << 6 | v->items8;
    k = k << 4 | v->minb;
    k = k << 1 | v->early;
    k = k << 1 | v->match;
    k = k << 14 | v->spin;
    k = k << 4 | v->hparts;
    k = k << 1 | v->hil;
    return k << 1 | v->sdig;
}

PyObject *
cukit_radix_variant_str(const cukit_radix_variant *v)
{
    char buf[256];
    size_t at = 0;
    for (size_t i = 0; i < NKNOBS; i++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s=%d", i ? "," : "", knobs[i].name,
                               *(const int *)((const char *)v + knobs[i].offset));
    return PyUnicode_FromString(buf);
}

PyObject *
cukit_radix_defines(const cukit_radix_variant *v, int tc)
{
    return PyUnicode_FromFormat("#define RBLOCK %d\n#define RITEMS %d\n#define RMINB %d\n"
                                "#define REARLY %d\n#define RMATCH %d\n#define RSPIN %d\n"
                                "#define HPARTS_WANT %d\n#define HIL %d\n#define RSDIG %d\n", v->block,
                                items_of(v, tc), v->minb, v->early, v->match,
                                v->spin, v->hparts, v->hil, v->sdig);
}

/* ------------------------------------------------------------------ the host side */

/* Rows a launch sorts at most (the grid's y dimension). */
#define ROWS_A_LAUNCH 65535
/* Bytes of scratch a launch of several rows may use (one row may take more). */
#define SCRATCH_A_LAUNCH (64LL << 20)

/* Sort R rows of L keys at `in` (itemsize bytes each), one launch a pass for all of them
 * (grid y: the row), into the key buffers kb (pass p writes kb[p & 1]; the last one only
 * with want_keys) and, with want_index, the int64 positions in the row into out64
 * (passes before the last keep uint32 ones in iu[0] and iu[1]). scratch: zeroed here,
 * `rstride` words a row (radix_words). 0 / -1. */
static int
radix_chunk(cukit_state *st, const cukit_sort_kernel_set *k, int itemsize, long long L,
            long long R, CUdeviceptr in, CUdeviceptr kb[2], CUdeviceptr iu[2], CUdeviceptr out64,
            int want_index, int want_keys, CUdeviceptr scratch, long long rstride, CUstream h)
{
    const int passes = itemsize;
    long long tiles = (L + k->rtile - 1) / k->rtile;
    long long hblocks = (L + 1023) / 1024, hmax = 1024 / R > 1 ? 1024 / R : 1;
    if (hblocks > hmax)
        hblocks = hmax;
    if (CU_CALL(st, cuMemsetD8Async, (scratch, 0, (size_t)(4 * rstride * R), h)) < 0)
        return -1;
    void *hp[] = {&in, &L, &scratch, &rstride};
    if (cukit_builtin_launch_here(st, k->hist, (unsigned)hblocks, (unsigned)R, 1, 256, 1, h, hp) < 0)
        return -1;
    CUdeviceptr none = 0;
    for (int p = 0; p < passes; p++) {
        CUdeviceptr kin = p == 0 ? in : kb[(p - 1) & 1], kout = kb[p & 1];
        CUdeviceptr iin = p == 0 ? none : iu[(p - 1) & 1], iout = iu[p & 1];
        CUdeviceptr hist = scratch + 4 * (CUdeviceptr)(p * 256);
        CUdeviceptr ticket = scratch + 4 * (CUdeviceptr)(passes * 256 + p);
        CUdeviceptr status = scratch + 4 * (CUdeviceptr)(passes * 256 + 8 + p * tiles * 256);
        int shift = 8 * p, last = p == passes - 1;
        int mode = (want_index ? 1 : 0) | (want_index && p == 0 ? 2 : 0) |
                   (want_index && last ? 4 : 0) | (!want_keys && last ? 8 : 0);
        void *pp[] = {&kin, &kout, &iin, &iout, &out64, &L, &hist, &ticket, &status, &rstride,
                      &shift, &mode};
        if (cukit_builtin_launch_here(st, k->pass, (unsigned)tiles, (unsigned)R, 1,
                                      (unsigned)k->rblock, 1, h, pp) < 0)
            return -1;
    }
    return 0;
}

int
cukit_radix_rows(cukit_state *st, const cukit_sort_kernel_set *k, cukit_Array *src, int want_index,
                 int want_keys, CUstream h, PyObject *stream, cukit_Array *buf[2], cukit_Array *ibuf[2],
                 int *which)
{
    const int isz = (int)src->itemsize;
    long long n = src->size, L = src->ndim ? src->shape[src->ndim - 1] : 1, rows = n / L;
    long long tiles = (L + k->rtile - 1) / k->rtile;
    /* a row's scratch: its histogram (256 words a pass), tickets (8), look-back words;
     * short rows have a lot of it for their keys, so a launch takes at most 64 MiB of it
     * (and at least one row) */
    long long rstride = (long long)isz * 256 + 8 + (long long)isz * tiles * 256;
    long long most = SCRATCH_A_LAUNCH / (4 * rstride);
    most = most < 1 ? 1 : most > ROWS_A_LAUNCH ? ROWS_A_LAUNCH : most;
    most = rows < most ? rows : most;
    Py_ssize_t bytes = (Py_ssize_t)(4 * rstride * most);
    cukit_Array *scratch = ck_empty(st, src->device, CUKIT_TC_U8, 1, &bytes);
    if (scratch == NULL || cukit_capture_keep(st, stream, (PyObject *)scratch) < 0) {
        Py_XDECREF(scratch);
        return -1;
    }
    int rc = 0;
    for (long long r = 0; rc == 0 && r < rows; r += most) {
        long long R = rows - r < most ? rows - r : most;
        CUdeviceptr off = (CUdeviceptr)(r * L * isz);
        CUdeviceptr kb[2] = {cukit_array_ptr(buf[0]) + off, cukit_array_ptr(buf[1]) + off};
        /* the uint32 positions between passes: the two halves of ibuf[1] (n int64) */
        CUdeviceptr i1 = want_index ? cukit_array_ptr(ibuf[1]) : 0;
        CUdeviceptr iu[2] = {i1 + (CUdeviceptr)(4 * r * L), i1 + (CUdeviceptr)(4 * (n + r * L))};
        CUdeviceptr o64 = want_index ? cukit_array_ptr(ibuf[0]) + (CUdeviceptr)(r * L * 8) : 0;
        rc = radix_chunk(st, k, isz, L, R, cukit_array_ptr(src) + off, kb, iu, o64, want_index,
                         want_keys, cukit_array_ptr(scratch), rstride, h);
    }
    Py_DECREF(scratch);
    /* keys: the last pass's buffer; argsort's last pass writes ibuf[0] only */
    *which = (isz - 1) & 1;
    return rc;
}
