/* exec.c - runs decoded PTX: warps of 32 lanes in lockstep, blocks spread over CPU threads */
#define _POSIX_C_SOURCE 200809L
#include "emulator/emu.h"

#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t emu_print_lock = PTHREAD_MUTEX_INITIALIZER;

#define FULL 0xffffffffu
#define NOPC 0xffffffffu

enum { W_RUN = 0, W_BAR, W_DONE };

typedef struct {
    uint64_t *R;         /* nslots * 32: slot s, lane l at R[s * 32 + l] */
    uint32_t *P;         /* predicate registers, one bit per lane */
    uint32_t pc, mask;   /* the group running now: its pc and lanes */
    uint32_t live;       /* lanes that have not exited */
    uint32_t barwait;    /* lanes waiting at bar.sync */
    uint32_t wmin;       /* lowest pc of the other runnable lanes, NOPC if none */
    uint32_t cc;         /* carry flags of add.cc / sub.cc, one bit per lane */
    uint32_t lpc[32];    /* pc of each lane outside the running group */
    int state;
    int index;
} warp;

typedef struct {
    const emu_launch *L;
    const emu_func *f;
    unsigned bid[3];
    unsigned nthreads;
    int nwarps;
    warp *warps;
    uint64_t *regs;
    uint32_t *preds;
    uint8_t *shared;
    size_t shared_size;
    uint8_t *local;      /* nwarps * 32 lanes * local_bytes */
    size_t local_bytes;
    uint64_t lo, hi;     /* the allocation the last global access hit */
    int fault;           /* 1: this block faulted; fault text in why */
    CUresult err;
    char why[1536];
} block;

/* ------------------------------------------------------------------ values */

static inline float
F(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint64_t
UF(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline double
D(uint64_t v)
{
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static inline uint64_t
UD(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static inline uint64_t
zx(uint64_t v, int size)
{
    return size >= 8 ? v : v & ((1ull << (size * 8)) - 1);
}

static inline int64_t
sx(uint64_t v, int size)
{
    switch (size) {
    case 1: return (int8_t)v;
    case 2: return (int16_t)v;
    case 4: return (int32_t)v;
    default: return (int64_t)v;
    }
}

static inline int
sgn(int t)
{
    return t == TY_S8 || t == TY_S16 || t == TY_S32 || t == TY_S64;
}

/* ------------------------------------------------------------------ faults */

static void
thread_of(const block *b, const warp *w, int lane, unsigned t[3])
{
    unsigned lin = (unsigned)(w->index * 32 + lane);
    const unsigned *bd = b->L->block;
    t[0] = lin % bd[0];
    t[1] = (lin / bd[0]) % bd[1];
    t[2] = lin / (bd[0] * bd[1]);
}

static const char *const space_names[] = {
    [SP_GENERIC] = "global", [SP_GLOBAL] = "global", [SP_SHARED] = "shared",
    [SP_LOCAL] = "local", [SP_CONST] = "constant", [SP_PARAM] = "parameter",
};

/* "in kernel k, block (..), thread (..), at file:line" */
static int
where(const block *b, const warp *w, int lane, char *buf, size_t n)
{
    unsigned t[3];
    thread_of(b, w, lane, t);
    const emu_inst *in = &b->f->code[w->pc];
    char line[256];
    emu_line_str(b->f->module, in->line, line, sizeof line);
    return snprintf(buf, n, "in kernel %s, block (%u, %u, %u), thread (%u, %u, %u)%s%s (PTX line %u)",
                    b->f->name, b->bid[0], b->bid[1], b->bid[2], t[0], t[1], t[2],
                    line[0] ? ", at " : "", line, in->ptxline);
}

static void
fault_access(block *b, warp *w, int lane, int space, uint64_t addr, unsigned size, int store,
             int misaligned)
{
    if (b->fault)
        return;
    b->fault = 1;
    char loc[512], what[768];
    where(b, w, lane, loc, sizeof loc);
    const char *rw = store ? "write" : "read";
    if (misaligned) {
        b->err = CUDA_ERROR_MISALIGNED_ADDRESS;
        snprintf(what, sizeof what, "a %u-byte %s %s at 0x%llx is misaligned (it must be a multiple "
                 "of %u)", size, space_names[space], rw, (unsigned long long)addr, size);
    }
    else if (space == SP_SHARED) {
        b->err = CUDA_ERROR_ILLEGAL_ADDRESS;
        snprintf(what, sizeof what, "out-of-bounds %u-byte shared %s at shared offset %lld: %lld bytes "
                 "past the end of the block's %zu bytes of shared memory", size, rw,
                 (long long)addr, (long long)(addr + size - b->shared_size), b->shared_size);
    }
    else if (space == SP_LOCAL) {
        b->err = CUDA_ERROR_ILLEGAL_ADDRESS;
        snprintf(what, sizeof what, "out-of-bounds %u-byte local %s at local offset %lld, past the "
                 "thread's %zu bytes of local memory", size, rw, (long long)addr, b->local_bytes);
    }
    else if (space == SP_PARAM) {
        b->err = CUDA_ERROR_ILLEGAL_ADDRESS;
        snprintf(what, sizeof what, "out-of-bounds %u-byte parameter %s at offset %lld (the kernel "
                 "has %zu bytes of parameters)", size, rw, (long long)addr, b->f->param_bytes);
    }
    else {
        b->err = CUDA_ERROR_ILLEGAL_ADDRESS;
        emu_alloc a;
        int freed = 0;
        int n = snprintf(what, sizeof what, "out-of-bounds %u-byte %s %s at address 0x%llx", size,
                         space_names[space], rw, (unsigned long long)addr);
        if (addr < 4096) {
            snprintf(what + n, sizeof what - (size_t)n, ": a null pointer (was an argument left "
                     "unset, or an array freed?)");
        }
        else if (emu_registry_nearest(addr, &a, &freed)) {
            if (freed)
                snprintf(what + n, sizeof what - (size_t)n, ": inside a %llu-byte allocation (made "
                         "at %s) that was already freed", (unsigned long long)a.size, a.origin);
            else if (addr >= a.base)
                snprintf(what + n, sizeof what - (size_t)n, ": %llu bytes past the end of a "
                         "%llu-byte allocation made at %s",
                         (unsigned long long)(addr + size - (a.base + a.size)),
                         (unsigned long long)a.size, a.origin);
            else
                snprintf(what + n, sizeof what - (size_t)n, ": %llu bytes before the start of a "
                         "%llu-byte allocation made at %s", (unsigned long long)(a.base - addr),
                         (unsigned long long)a.size, a.origin);
        }
        else
            snprintf(what + n, sizeof what - (size_t)n, ": no allocation is near it");
    }
    snprintf(b->why, sizeof b->why, "%s %s", what, loc);
}

static void
fault_text(block *b, warp *w, int lane, CUresult err, const char *text)
{
    if (b->fault)
        return;
    b->fault = 1;
    b->err = err;
    char loc[512];
    where(b, w, lane, loc, sizeof loc);
    snprintf(b->why, sizeof b->why, "%s %s", text, loc);
}

/* ------------------------------------------------------------------ memory */

/* Host address of a `size`-byte access to `addr` in `space` by lane, checked; NULL
 * after recording a fault. */
static void *
resolve(block *b, warp *w, int lane, int space, uint64_t addr, unsigned size, int store)
{
    if ((addr & (uint64_t)(size - 1)) != 0 && (size & (size - 1)) == 0) {
        fault_access(b, w, lane, space, addr, size, store, 1);
        return NULL;
    }
    switch (space) {
    case SP_SHARED:
        if (addr + size <= b->shared_size && addr < b->shared_size)
            return b->shared + addr;
        fault_access(b, w, lane, space, addr, size, store, 0);
        return NULL;
    case SP_LOCAL:
        if (addr + size <= b->local_bytes && addr < b->local_bytes)
            return b->local + ((size_t)(w->index * 32 + lane)) * b->local_bytes + addr;
        fault_access(b, w, lane, space, addr, size, store, 0);
        return NULL;
    case SP_PARAM:
        if (!store && addr + size <= b->f->param_bytes && addr < b->f->param_bytes)
            return b->L->params + addr;
        fault_access(b, w, lane, space, addr, size, store, 0);
        return NULL;
    default:
        break;
    }
    if (addr >= b->lo && addr + size <= b->hi)
        return (void *)(uintptr_t)addr;
    if (space == SP_GENERIC) {
        uint64_t sh = (uint64_t)(uintptr_t)b->shared;
        if (addr >= sh && addr + size <= sh + b->shared_size)
            return (void *)(uintptr_t)addr;
        uint64_t lo = (uint64_t)(uintptr_t)b->local;
        if (b->local_bytes && addr >= lo && addr + size <= lo + (size_t)b->nwarps * 32 * b->local_bytes)
            return (void *)(uintptr_t)addr;
        uint64_t pa = (uint64_t)(uintptr_t)b->L->params;
        if (!store && addr >= pa && addr + size <= pa + b->f->param_bytes)
            return (void *)(uintptr_t)addr;
    }
    emu_alloc a;
    if (emu_registry_find(addr, size, &a)) {
        b->lo = a.base;
        b->hi = a.base + a.size;
        return (void *)(uintptr_t)addr;
    }
    fault_access(b, w, lane, space, addr, size, store, 0);
    return NULL;
}

static inline uint64_t
load_value(const void *p, int type)
{
    switch (type) {
    case TY_U8: return *(const uint8_t *)p;
    case TY_S8: return (uint64_t)(int64_t)*(const int8_t *)p;
    case TY_U16: case TY_F16: case TY_BF16: return *(const uint16_t *)p;
    case TY_S16: return (uint64_t)(int64_t)*(const int16_t *)p;
    case TY_U32: case TY_F32: case TY_F16X2: case TY_BF16X2: return *(const uint32_t *)p;
    case TY_S32: return (uint64_t)(int64_t)*(const int32_t *)p;
    default: {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

static inline void
store_value(void *p, int size, uint64_t v)
{
    switch (size) {
    case 1: *(uint8_t *)p = (uint8_t)v; break;
    case 2: *(uint16_t *)p = (uint16_t)v; break;
    case 4: *(uint32_t *)p = (uint32_t)v; break;
    default: memcpy(p, &v, 8); break;
    }
}

/* ------------------------------------------------------------------ arithmetic */

static inline uint32_t
brev32(uint32_t x)
{
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
    return (x >> 16) | (x << 16);
}

static uint64_t
alu_int(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c, uint64_t e, uint32_t *carry)
{
    int t = in->type, size = emu_type_size(t), s = sgn(t);
    int bits = size * 8;
    uint64_t r = 0;
    switch (in->base) {
    case B_ADD:
    case B_ADDC: {
        uint64_t cin = in->base == B_ADDC ? (*carry & 1) : 0;
        if ((in->mod & M_SAT) && s) {
            int64_t v = sx(a, size) + sx(b, size);
            int64_t lo = size == 4 ? INT32_MIN : INT64_MIN, hi = size == 4 ? INT32_MAX : INT64_MAX;
            if (size == 8) {
                int64_t out;
                if (__builtin_add_overflow((int64_t)a, (int64_t)b, &out))
                    out = (int64_t)a < 0 ? INT64_MIN : INT64_MAX;
                return (uint64_t)out;
            }
            return zx((uint64_t)(v < lo ? lo : v > hi ? hi : v), size);
        }
        uint64_t za = zx(a, size), zb = zx(b, size);
        r = za + zb + cin;
        if (in->mod & M_CC)
            *carry = size == 8 ? (r < za || (cin && r == za)) : (uint32_t)((r >> bits) & 1);
        return zx(r, size);
    }
    case B_SUB:
    case B_SUBC: {
        uint64_t bin = in->base == B_SUBC ? (*carry & 1) : 0;
        if ((in->mod & M_SAT) && s && size == 4) {
            int64_t v = sx(a, 4) - sx(b, 4);
            return zx((uint64_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v), 4);
        }
        uint64_t za = zx(a, size), zb = zx(b, size);
        r = za - zb - bin;
        if (in->mod & M_CC)
            *carry = (za < zb + bin) || (bin && zb == UINT64_MAX);
        return zx(r, size);
    }
    case B_MUL:
        return zx(a * b, size);
    case B_MULHI:
    case B_MADHI:
        if (size == 8)
            r = s ? (uint64_t)(((__int128)(int64_t)a * (int64_t)b) >> 64)
                  : (uint64_t)(((unsigned __int128)a * b) >> 64);
        else
            r = s ? (uint64_t)((sx(a, size) * sx(b, size)) >> bits)
                  : (zx(a, size) * zx(b, size)) >> bits;
        if (in->base == B_MADHI)
            r += c;
        return zx(r, size);
    case B_MULWIDE:
    case B_MADWIDE:
        r = s ? (uint64_t)(sx(a, size) * sx(b, size)) : zx(a, size) * zx(b, size);
        if (in->base == B_MADWIDE)
            r += c;
        return zx(r, size * 2);
    case B_MAD:
    case B_MADC: {
        uint64_t cin = in->base == B_MADC ? (*carry & 1) : 0;
        uint64_t prod = zx(a * b, size), zc = zx(c, size);
        if ((in->mod & M_SAT) && s && size == 4) {
            int64_t v = sx(a, 4) * sx(b, 4) + sx(c, 4);
            return zx((uint64_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v), 4);
        }
        r = prod + zc + cin;
        if (in->mod & M_CC)
            *carry = size == 8 ? (r < prod || (cin && r == prod)) : (uint32_t)((r >> bits) & 1);
        return zx(r, size);
    }
    case B_MUL24:
    case B_MAD24: {
        int64_t x = s ? ((int64_t)(a << 40) >> 40) : (int64_t)(a & 0xffffff);
        int64_t y = s ? ((int64_t)(b << 40) >> 40) : (int64_t)(b & 0xffffff);
        r = (uint64_t)(x * y);
        if (in->base == B_MAD24)
            r += c;
        return zx(r, 4);
    }
    case B_SAD: {
        uint64_t d = s ? (uint64_t)(sx(a, size) > sx(b, size) ? sx(a, size) - sx(b, size) : sx(b, size) - sx(a, size))
                       : (zx(a, size) > zx(b, size) ? zx(a, size) - zx(b, size) : zx(b, size) - zx(a, size));
        return zx(d + c, size);
    }
    case B_DIV:
        if (zx(b, size) == 0)
            return zx(~0ull, size);
        if (s) {
            int64_t x = sx(a, size), y = sx(b, size);
            if (y == -1)
                return zx((uint64_t)0 - (uint64_t)x, size);
            return zx((uint64_t)(x / y), size);
        }
        return zx(zx(a, size) / zx(b, size), size);
    case B_REM:
        if (zx(b, size) == 0)
            return zx(a, size);
        if (s) {
            int64_t x = sx(a, size), y = sx(b, size);
            if (y == -1)
                return 0;
            return zx((uint64_t)(x % y), size);
        }
        return zx(zx(a, size) % zx(b, size), size);
    case B_ABS: {
        int64_t x = sx(a, size);
        return zx((uint64_t)(x < 0 ? -(uint64_t)x : (uint64_t)x), size);
    }
    case B_NEG:
        return zx((uint64_t)0 - a, size);
    case B_MIN:
        if (s)
            return zx((uint64_t)(sx(a, size) < sx(b, size) ? sx(a, size) : sx(b, size)), size);
        return zx(a, size) < zx(b, size) ? zx(a, size) : zx(b, size);
    case B_MAX:
        if (s)
            return zx((uint64_t)(sx(a, size) > sx(b, size) ? sx(a, size) : sx(b, size)), size);
        return zx(a, size) > zx(b, size) ? zx(a, size) : zx(b, size);
    case B_AND: return zx(a & b, size);
    case B_OR: return zx(a | b, size);
    case B_XOR: return zx(a ^ b, size);
    case B_NOT: return zx(~a, size);
    case B_CNOT: return zx(a, size) == 0;
    case B_SHL: {
        uint64_t n = zx(b, 4);
        return n >= (uint64_t)bits ? 0 : zx(a << n, size);
    }
    case B_SHR: {
        uint64_t n = zx(b, 4);
        if (s) {
            int64_t x = sx(a, size);
            return zx((uint64_t)(n >= (uint64_t)bits ? (x < 0 ? -1 : 0) : x >> n), size);
        }
        return n >= (uint64_t)bits ? 0 : zx(a, size) >> n;
    }
    case B_POPC:
        return (uint64_t)__builtin_popcountll(zx(a, size));
    case B_CLZ: {
        uint64_t x = zx(a, size);
        return x == 0 ? (uint64_t)bits : (uint64_t)(__builtin_clzll(x) - (64 - bits));
    }
    case B_BREV:
        if (size == 4)
            return brev32((uint32_t)a);
        return ((uint64_t)brev32((uint32_t)a) << 32) | brev32((uint32_t)(a >> 32));
    case B_BFIND: {
        uint64_t x = zx(a, size);
        if (s && sx(a, size) < 0)
            x = zx(~a, size);
        if (x == 0)
            return 0xffffffffu;
        return (uint64_t)(63 - __builtin_clzll(x));
    }
    case B_BFE: {
        unsigned pos = (unsigned)(b & 0xff), len = (unsigned)(c & 0xff);
        uint64_t x = zx(a, size), out = 0;
        unsigned msb = pos + len - 1;
        uint64_t sbit = 0;
        if (s && len > 0)
            sbit = (x >> (msb < (unsigned)bits - 1 ? msb : (unsigned)bits - 1)) & 1;
        for (unsigned i = 0; i < (unsigned)bits; i++) {
            uint64_t bit = (i < len && pos + i < (unsigned)bits) ? (x >> (pos + i)) & 1 : sbit;
            out |= bit << i;
        }
        return out;
    }
    case B_BFI: {
        unsigned pos = (unsigned)(c & 0xff), len = (unsigned)(e & 0xff);
        uint64_t out = zx(b, size);
        for (unsigned i = 0; i < len && pos + i < (unsigned)bits; i++)
            out = (out & ~(1ull << (pos + i))) | (((a >> i) & 1) << (pos + i));
        return out;
    }
    case B_PRMT: {
        uint64_t tmp = ((b & 0xffffffffu) << 32) | (a & 0xffffffffu);
        uint32_t out = 0;
        for (int i = 0; i < 4; i++) {
            unsigned sel = (unsigned)(c >> (4 * i)) & 0xf;
            uint32_t byte = (uint32_t)(tmp >> (8 * (sel & 7))) & 0xff;
            if (sel & 8)
                byte = (byte & 0x80) ? 0xff : 0;
            out |= byte << (8 * i);
        }
        return out;
    }
    case B_LOP3: {
        uint32_t A = (uint32_t)a, Bv = (uint32_t)b, C = (uint32_t)c, out = 0;
        unsigned lut = (unsigned)in->imm;
        for (int i = 0; i < 8; i++) {
            if (lut & (1u << i))
                out |= ((i & 4) ? A : ~A) & ((i & 2) ? Bv : ~Bv) & ((i & 1) ? C : ~C);
        }
        return out;
    }
    case B_SHFL_L:
    case B_SHFL_R: {
        uint32_t n = (uint32_t)c;
        n = in->imm ? (n > 32 ? 32 : n) : (n & 31);
        uint64_t pair = ((b & 0xffffffffu) << 32) | (a & 0xffffffffu);
        if (in->base == B_SHFL_L)
            return n == 32 ? (a & 0xffffffffu) : (uint32_t)((pair << n) >> 32);
        return n == 32 ? (b & 0xffffffffu) : (uint32_t)(pair >> n);
    }
    case B_DP4A: {
        int sa = sgn(in->type), sb = sgn(in->type2);
        int64_t acc = sa || sb ? sx(c, 4) : (int64_t)zx(c, 4);
        for (int i = 0; i < 4; i++) {
            int64_t x = sa ? (int8_t)(a >> (8 * i)) : (uint8_t)(a >> (8 * i));
            int64_t y = sb ? (int8_t)(b >> (8 * i)) : (uint8_t)(b >> (8 * i));
            acc += x * y;
        }
        return zx((uint64_t)acc, 4);
    }
    default:
        return 0;
    }
}

static inline float
ftz32(float x)
{
    return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

static int
set_round(int rnd)
{
    static const int modes[] = {[RND_RZ] = FE_TOWARDZERO, [RND_RM] = FE_DOWNWARD, [RND_RP] = FE_UPWARD};
    if (rnd == RND_RZ || rnd == RND_RM || rnd == RND_RP) {
        fesetround(modes[rnd]);
        return 1;
    }
    return 0;
}

static uint64_t
alu_float(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c)
{
    int ftz = (in->mod & M_FTZ) != 0;
    int changed = set_round(RND(in->mod));
    uint64_t out = 0;
    if (in->type == TY_F64) {
        volatile double x = D(a), y = D(b), z = D(c);
        volatile double r = 0;
        switch (in->base) {
        case B_ADD: r = x + y; break;
        case B_SUB: r = x - y; break;
        case B_MUL: r = x * y; break;
        case B_FMA: case B_MAD: r = fma(x, y, z); break;
        case B_DIV: r = x / y; break;
        case B_RCP: r = 1.0 / x; break;
        case B_SQRT: r = sqrt(x); break;
        case B_RSQRT: r = 1.0 / sqrt(x); break;
        case B_ABS: out = a & ~(1ull << 63); goto done;
        case B_NEG: out = a ^ (1ull << 63); goto done;
        case B_MIN: r = fmin(x, y); break;
        case B_MAX: r = fmax(x, y); break;
        case B_COPYSIGN: r = copysign(y, x); break;
        case B_TESTP: {
            int cls = fpclassify(x);
            switch (in->imm) {
            case 1: out = isfinite(x); break;
            case 2: out = isinf(x) != 0; break;
            case 3: out = !isnan(x); break;
            case 4: out = isnan(x) != 0; break;
            case 5: out = cls == FP_NORMAL; break;
            default: out = cls == FP_SUBNORMAL; break;
            }
            goto done;
        }
        default: r = NAN; break;
        }
        if (in->mod & M_SAT)
            r = isnan(r) ? 0.0 : r < 0 ? 0.0 : r > 1 ? 1.0 : r;
        out = UD(r);
        goto done;
    }
    if (in->type == TY_F16) {
        float x = emu_f16_to_f32((uint16_t)a), y = emu_f16_to_f32((uint16_t)b), z = emu_f16_to_f32((uint16_t)c);
        float r;
        switch (in->base) {
        case B_ADD: r = x + y; break;
        case B_SUB: r = x - y; break;
        case B_MUL: r = x * y; break;
        case B_FMA: r = fmaf(x, y, z); break;
        case B_ABS: out = a & 0x7fff; goto done;
        case B_NEG: out = (a ^ 0x8000) & 0xffff; goto done;
        case B_MIN: r = fminf(x, y); break;
        case B_MAX: r = fmaxf(x, y); break;
        default: r = NAN; break;
        }
        if (in->mod & M_SAT)
            r = isnan(r) ? 0.0f : r < 0 ? 0.0f : r > 1 ? 1.0f : r;
        out = emu_f32_to_f16(r);
        goto done;
    }
    {
        volatile float x = F(a), y = F(b), z = F(c);
        if (ftz) {
            x = ftz32(x);
            y = ftz32(y);
            z = ftz32(z);
        }
        volatile float r = 0;
        switch (in->base) {
        case B_ADD: r = x + y; break;
        case B_SUB: r = x - y; break;
        case B_MUL: r = x * y; break;
        case B_FMA: case B_MAD: r = fmaf(x, y, z); break;
        case B_DIV:
            if (in->mod & M_APPROX) {
                float yy = y;
                /* div.approx: x * (1/y), with 1/y computed for |y| up to 2^126 */
                r = fabsf(yy) > 8.507059e37f ? 0.0f * x : x * (1.0f / yy);
            }
            else
                r = x / y;
            break;
        case B_RCP: r = 1.0f / x; break;
        case B_SQRT: r = sqrtf(x); break;
        case B_RSQRT: r = 1.0f / sqrtf(x); break;
        case B_SIN: r = sinf(x); break;
        case B_COS: r = cosf(x); break;
        case B_LG2: r = log2f(x); break;
        case B_EX2: r = exp2f(x); break;
        case B_TANH: r = tanhf(x); break;
        case B_ABS: r = fabsf(x); if (!ftz) { out = a & 0x7fffffffu; goto done; } break;
        case B_NEG: if (!ftz) { out = (a ^ 0x80000000u) & 0xffffffffu; goto done; } r = -x; break;
        case B_MIN: r = fminf(x, y); break;
        case B_MAX: r = fmaxf(x, y); break;
        case B_COPYSIGN: r = copysignf(y, x); break;
        case B_TESTP: {
            float v = x;
            int cls = fpclassify(v);
            switch (in->imm) {
            case 1: out = isfinite(v); break;
            case 2: out = isinf(v) != 0; break;
            case 3: out = !isnan(v); break;
            case 4: out = isnan(v) != 0; break;
            case 5: out = cls == FP_NORMAL; break;
            default: out = cls == FP_SUBNORMAL; break;
            }
            goto done;
        }
        default: r = NAN; break;
        }
        float rr = r;
        if (ftz)
            rr = ftz32(rr);
        if (in->mod & M_SAT)
            rr = isnan(rr) ? 0.0f : rr < 0 ? 0.0f : rr > 1 ? 1.0f : rr;
        out = UF(rr);
    }
done:
    if (changed)
        fesetround(FE_TONEAREST);
    return out;
}

/* cvt between any two types, with PTX's rounding, saturation and NaN rules. */
static uint64_t
convert(const emu_inst *in, uint64_t v)
{
    int dt = in->type, st = in->type2, rnd = RND(in->mod);
    int dsz = emu_type_size(dt), ssz = emu_type_size(st);
    int dflt = dt == TY_F16 || dt == TY_BF16 || dt == TY_F32 || dt == TY_F64;
    int sflt = st == TY_F16 || st == TY_BF16 || st == TY_F32 || st == TY_F64;
    if (!dflt && !sflt) {
        if (in->mod & M_SAT) {
            /* clamp to the destination's range */
            int64_t x = sgn(st) ? sx(v, ssz) : (int64_t)zx(v, ssz);
            int dbits = dsz * 8;
            if (sgn(dt)) {
                int64_t lo = dbits == 64 ? INT64_MIN : -(1ll << (dbits - 1));
                int64_t hi = dbits == 64 ? INT64_MAX : (1ll << (dbits - 1)) - 1;
                if (!sgn(st) && ssz == 8 && v > (uint64_t)INT64_MAX)
                    return zx((uint64_t)hi, dsz);
                return zx((uint64_t)(x < lo ? lo : x > hi ? hi : x), dsz);
            }
            uint64_t hi = dbits == 64 ? UINT64_MAX : (1ull << dbits) - 1;
            if (sgn(st) && x < 0)
                return 0;
            uint64_t ux = sgn(st) ? (uint64_t)x : zx(v, ssz);
            return ux > hi ? hi : ux;
        }
        uint64_t x = sgn(st) ? (uint64_t)sx(v, ssz) : zx(v, ssz);
        /* the destination register holds the value extended to its width */
        return sgn(dt) ? (uint64_t)sx(x, dsz) : zx(x, dsz);
    }
    int changed = 0;
    uint64_t out;
    if (sflt) {
        double x;
        if (st == TY_F32)
            x = F(v);
        else if (st == TY_F64)
            x = D(v);
        else if (st == TY_F16)
            x = emu_f16_to_f32((uint16_t)v);
        else
            x = emu_bf16_to_f32((uint16_t)v);
        if ((in->mod & M_FTZ) && st == TY_F32)
            x = ftz32((float)x);
        if (!dflt) {
            /* float -> integer: round to an integer, saturate, NaN -> 0 */
            double r;
            switch (rnd) {
            case RND_RNI: r = nearbyint(x); break;
            case RND_RMI: r = floor(x); break;
            case RND_RPI: r = ceil(x); break;
            default: r = trunc(x); break;
            }
            int dbits = dsz * 8;
            if (isnan(r))
                return 0;
            if (sgn(dt)) {
                double lo = -ldexp(1.0, dbits - 1), hi = ldexp(1.0, dbits - 1);
                if (r < lo)
                    return zx((uint64_t)(dbits == 64 ? INT64_MIN : -(1ll << (dbits - 1))), dsz);
                if (r >= hi)
                    return zx((uint64_t)(dbits == 64 ? INT64_MAX : (1ll << (dbits - 1)) - 1), dsz);
                return zx((uint64_t)(int64_t)r, dsz);
            }
            double hi = ldexp(1.0, dbits);
            if (r <= 0)
                return 0;
            if (r >= hi)
                return dbits == 64 ? UINT64_MAX : (1ull << dbits) - 1;
            return (uint64_t)r;
        }
        /* float -> float */
        if (rnd >= RND_RNI) {
            switch (rnd) {
            case RND_RNI: x = nearbyint(x); break;
            case RND_RMI: x = floor(x); break;
            case RND_RPI: x = ceil(x); break;
            default: x = trunc(x); break;
            }
        }
        changed = set_round(rnd);
        if (dt == TY_F64)
            out = UD(x);
        else if (dt == TY_F32) {
            volatile double vx = x;
            volatile float f = (float)vx;
            float ff = f;
            if (in->mod & M_FTZ)
                ff = ftz32(ff);
            if (in->mod & M_SAT)
                ff = isnan(ff) ? 0.0f : ff < 0 ? 0.0f : ff > 1 ? 1.0f : ff;
            out = UF(ff);
        }
        else if (dt == TY_F16)
            out = emu_f32_to_f16((float)x);
        else
            out = emu_f32_to_bf16((float)x);
    }
    else {
        /* integer -> float */
        changed = set_round(rnd);
        if (dt == TY_F64) {
            volatile double r = sgn(st) ? (double)sx(v, ssz) : (double)zx(v, ssz);
            out = UD(r);
        }
        else {
            volatile float r = sgn(st) ? (float)sx(v, ssz) : (float)zx(v, ssz);
            float rr = r;
            if (in->mod & M_SAT)
                rr = rr < 0 ? 0.0f : rr > 1 ? 1.0f : rr;
            if (dt == TY_F32)
                out = UF(rr);
            else if (dt == TY_F16)
                out = emu_f32_to_f16(rr);
            else
                out = emu_f32_to_bf16(rr);
        }
    }
    if (changed)
        fesetround(FE_TONEAREST);
    return out;
}

static int
compare(int cmp, int type, uint64_t a, uint64_t b)
{
    if (type == TY_F32 || type == TY_F64 || type == TY_F16) {
        double x = type == TY_F32 ? F(a) : type == TY_F64 ? D(a) : emu_f16_to_f32((uint16_t)a);
        double y = type == TY_F32 ? F(b) : type == TY_F64 ? D(b) : emu_f16_to_f32((uint16_t)b);
        int un = isnan(x) || isnan(y);
        switch (cmp) {
        case CMP_EQ: return !un && x == y;
        case CMP_NE: return !un && x != y;
        case CMP_LT: return !un && x < y;
        case CMP_LE: return !un && x <= y;
        case CMP_GT: return !un && x > y;
        case CMP_GE: return !un && x >= y;
        case CMP_EQU: return un || x == y;
        case CMP_NEU: return un || x != y;
        case CMP_LTU: return un || x < y;
        case CMP_LEU: return un || x <= y;
        case CMP_GTU: return un || x > y;
        case CMP_GEU: return un || x >= y;
        case CMP_NUM: return !un;
        case CMP_NAN: return un;
        }
        return 0;
    }
    int size = emu_type_size(type);
    if (size == 0)
        size = 4;
    if (sgn(type)) {
        int64_t x = sx(a, size), y = sx(b, size);
        switch (cmp) {
        case CMP_EQ: return x == y;
        case CMP_NE: return x != y;
        case CMP_LT: case CMP_LO: return x < y;
        case CMP_LE: case CMP_LS: return x <= y;
        case CMP_GT: case CMP_HI: return x > y;
        case CMP_GE: case CMP_HS: return x >= y;
        }
        return 0;
    }
    uint64_t x = zx(a, size), y = zx(b, size);
    switch (cmp) {
    case CMP_EQ: return x == y;
    case CMP_NE: return x != y;
    case CMP_LT: case CMP_LO: return x < y;
    case CMP_LE: case CMP_LS: return x <= y;
    case CMP_GT: case CMP_HI: return x > y;
    case CMP_GE: case CMP_HS: return x >= y;
    }
    return 0;
}

/* ------------------------------------------------------------------ atomics */

static uint64_t
atomic_op(void *p, const emu_inst *in, uint64_t b, uint64_t c)
{
    int t = in->type, size = emu_type_size(t);
    if (size == 4) {
        uint32_t *q = p, old = __atomic_load_n(q, __ATOMIC_SEQ_CST), nv;
        for (;;) {
            switch (in->type2) {
            case ATOM_ADD: nv = t == TY_F32 ? (uint32_t)UF(F(old) + F(b)) : old + (uint32_t)b; break;
            case ATOM_MIN:
                nv = t == TY_F32 ? (uint32_t)UF(fminf(F(old), F(b)))
                   : t == TY_S32 ? ((int32_t)old < (int32_t)b ? old : (uint32_t)b)
                                : (old < (uint32_t)b ? old : (uint32_t)b);
                break;
            case ATOM_MAX:
                nv = t == TY_F32 ? (uint32_t)UF(fmaxf(F(old), F(b)))
                   : t == TY_S32 ? ((int32_t)old > (int32_t)b ? old : (uint32_t)b)
                                : (old > (uint32_t)b ? old : (uint32_t)b);
                break;
            case ATOM_EXCH: nv = (uint32_t)b; break;
            case ATOM_CAS: nv = old == (uint32_t)b ? (uint32_t)c : old; break;
            case ATOM_AND: nv = old & (uint32_t)b; break;
            case ATOM_OR: nv = old | (uint32_t)b; break;
            case ATOM_XOR: nv = old ^ (uint32_t)b; break;
            case ATOM_INC: nv = old >= (uint32_t)b ? 0 : old + 1; break;
            case ATOM_DEC: nv = (old == 0 || old > (uint32_t)b) ? (uint32_t)b : old - 1; break;
            default: nv = old; break;
            }
            if (__atomic_compare_exchange_n(q, &old, nv, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                return old;
        }
    }
    uint64_t *q = p, old = __atomic_load_n(q, __ATOMIC_SEQ_CST), nv;
    for (;;) {
        switch (in->type2) {
        case ATOM_ADD: nv = t == TY_F64 ? UD(D(old) + D(b)) : old + b; break;
        case ATOM_MIN:
            nv = t == TY_F64 ? UD(fmin(D(old), D(b))) : t == TY_S64 ? ((int64_t)old < (int64_t)b ? old : b)
                                                                  : (old < b ? old : b);
            break;
        case ATOM_MAX:
            nv = t == TY_F64 ? UD(fmax(D(old), D(b))) : t == TY_S64 ? ((int64_t)old > (int64_t)b ? old : b)
                                                                  : (old > b ? old : b);
            break;
        case ATOM_EXCH: nv = b; break;
        case ATOM_CAS: nv = old == b ? c : old; break;
        case ATOM_AND: nv = old & b; break;
        case ATOM_OR: nv = old | b; break;
        case ATOM_XOR: nv = old ^ b; break;
        default: nv = old; break;
        }
        if (__atomic_compare_exchange_n(q, &old, nv, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return old;
    }
}

/* ------------------------------------------------------------------ printf */

/* Bytes readable at a generic address, for printf's strings and argument buffers. */
static const uint8_t *
span(block *b, warp *w, uint64_t addr, size_t *avail)
{
    uint64_t sh = (uint64_t)(uintptr_t)b->shared;
    if (addr >= sh && addr < sh + b->shared_size) {
        *avail = sh + b->shared_size - addr;
        return (const uint8_t *)(uintptr_t)addr;
    }
    uint64_t lo = (uint64_t)(uintptr_t)b->local, lsz = (uint64_t)b->nwarps * 32 * b->local_bytes;
    if (addr >= lo && addr < lo + lsz) {
        *avail = lo + lsz - addr;
        return (const uint8_t *)(uintptr_t)addr;
    }
    emu_alloc a;
    if (emu_registry_find(addr, 1, &a)) {
        *avail = a.base + a.size - addr;
        return (const uint8_t *)(uintptr_t)addr;
    }
    (void)w;
    return NULL;
}

static void
do_printf(block *b, warp *w, int lane, uint64_t fmt_addr, uint64_t args_addr, FILE *out)
{
    size_t favail = 0, aavail = 0;
    const uint8_t *fmt = span(b, w, fmt_addr, &favail);
    const uint8_t *args = args_addr ? span(b, w, args_addr, &aavail) : NULL;
    if (fmt == NULL) {
        fault_text(b, w, lane, CUDA_ERROR_ILLEGAL_ADDRESS, "printf's format string is not in memory");
        return;
    }
    size_t off = 0;
    char line[4096];
    size_t n = 0;
    for (size_t i = 0; i < favail && fmt[i]; i++) {
        if (fmt[i] != '%') {
            if (n < sizeof line - 1)
                line[n++] = (char)fmt[i];
            continue;
        }
        if (i + 1 < favail && fmt[i + 1] == '%') {
            if (n < sizeof line - 1)
                line[n++] = '%';
            i++;
            continue;
        }
        char spec[32];
        size_t k = 0;
        int longs = 0;
        spec[k++] = '%';
        size_t j = i + 1;
        while (j < favail && fmt[j] && strchr("-+ #0123456789.*", fmt[j]) && k < 20)
            spec[k++] = (char)fmt[j++];
        while (j < favail && fmt[j] && strchr("hlLqjzt", fmt[j])) {
            if (fmt[j] == 'l' || fmt[j] == 'L' || fmt[j] == 'q' || fmt[j] == 'j' || fmt[j] == 'z' || fmt[j] == 't')
                longs++;
            j++;
        }
        char conv = j < favail ? (char)fmt[j] : '\0';
        if (conv == '\0')
            break;
        i = j;
        size_t asz = (conv == 'f' || conv == 'F' || conv == 'e' || conv == 'E' || conv == 'g' ||
                      conv == 'G' || conv == 'a' || conv == 'A' || conv == 's' || conv == 'p' || longs)
                         ? 8 : 4;
        off = (off + asz - 1) / asz * asz;
        uint64_t v = 0;
        if (args && off + asz <= aavail)
            memcpy(&v, args + off, asz);
        off += asz;
        char piece[512];
        int m;
        if (strchr("fFeEgGaA", conv)) {
            spec[k++] = conv;
            spec[k] = '\0';
            m = snprintf(piece, sizeof piece, spec, D(v));
        }
        else if (conv == 's') {
            size_t savail = 0;
            const uint8_t *s = v ? span(b, w, v, &savail) : NULL;
            char str[400];
            size_t q = 0;
            while (s && q < savail && q < sizeof str - 1 && s[q]) {
                str[q] = (char)s[q];
                q++;
            }
            str[q] = '\0';
            spec[k++] = 's';
            spec[k] = '\0';
            m = snprintf(piece, sizeof piece, spec, s ? str : "(null)");
        }
        else if (conv == 'p') {
            m = snprintf(piece, sizeof piece, "0x%llx", (unsigned long long)v);
        }
        else if (conv == 'c') {
            spec[k++] = 'c';
            spec[k] = '\0';
            m = snprintf(piece, sizeof piece, spec, (int)(uint8_t)v);
        }
        else if (strchr("diouxX", conv)) {
            spec[k++] = 'l';
            spec[k++] = 'l';
            spec[k++] = conv;
            spec[k] = '\0';
            long long x = asz == 8 ? (long long)v : (conv == 'd' || conv == 'i') ? (long long)(int32_t)v
                                                                                  : (long long)(uint32_t)v;
            m = snprintf(piece, sizeof piece, spec, x);
        }
        else {
            m = snprintf(piece, sizeof piece, "%%%c", conv);
        }
        for (int q = 0; q < m && q < (int)sizeof piece - 1 && n < sizeof line - 1; q++)
            line[n++] = piece[q];
    }
    fwrite(line, 1, n, out);
}

/* ------------------------------------------------------------------ warps */

#define LANES(m, ...)                                                       \
    do {                                                                    \
        if ((m) == FULL) {                                                  \
            for (int l = 0; l < 32; l++) { __VA_ARGS__; }                   \
        }                                                                   \
        else {                                                              \
            for (uint32_t mm_ = (m); mm_; mm_ &= mm_ - 1) {                 \
                int l = __builtin_ctz(mm_);                                 \
                __VA_ARGS__;                                                \
            }                                                               \
        }                                                                   \
    } while (0)

/* Pick the next group: the runnable lanes with the lowest pc. */
static void
reschedule(warp *w)
{
    uint32_t cand = w->live & ~w->barwait;
    if (cand == 0) {
        w->mask = 0;
        w->state = w->live ? W_BAR : W_DONE;
        return;
    }
    uint32_t min = NOPC;
    for (uint32_t m = cand; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        if (w->lpc[l] < min)
            min = w->lpc[l];
    }
    uint32_t mask = 0, next = NOPC;
    for (uint32_t m = cand; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        if (w->lpc[l] == min)
            mask |= 1u << l;
        else if (w->lpc[l] < next)
            next = w->lpc[l];
    }
    w->pc = min;
    w->mask = mask;
    w->wmin = next;
    w->state = W_RUN;
}

/* Lanes waiting at pc join the running group. */
static void
merge(warp *w)
{
    uint32_t cand = w->live & ~w->barwait & ~w->mask, next = NOPC;
    for (uint32_t m = cand; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        if (w->lpc[l] == w->pc)
            w->mask |= 1u << l;
        else if (w->lpc[l] < next)
            next = w->lpc[l];
    }
    w->wmin = next;
}

static void
set_group_pc(warp *w, uint32_t lanes, uint32_t pc)
{
    for (uint32_t m = lanes; m; m &= m - 1)
        w->lpc[__builtin_ctz(m)] = pc;
}

/* Run warp w until it exits, waits at a barrier, or faults. */
static void
run_warp(block *b, warp *w)
{
    const emu_inst *code = b->f->code;
    uint64_t *R = w->R;
    uint32_t *P = w->P;
    FILE *out = stdout;
    while (w->state == W_RUN) {
        const emu_inst *in = &code[w->pc];
        uint32_t m = w->mask;
        if (in->guard >= 0)
            m &= in->gneg ? ~P[in->guard] : P[in->guard];
        uint64_t *Dd = R + (size_t)in->d[0] * 32;
        const uint64_t *A = R + (size_t)in->s[0] * 32;
        const uint64_t *Bv = R + (size_t)in->s[1] * 32;
        const uint64_t *C = R + (size_t)in->s[2] * 32;
        switch (in->op) {
        case OP_NOP:
        case OP_FENCE:
        case OP_BARWARP:
            break;
        case OP_MOV: LANES(m, Dd[l] = A[l]); break;
        case OP_MOVP: P[in->d[0]] = (P[in->d[0]] & ~m) | (P[in->s[0]] & m); break;
        case OP_PACK: {
            int wbits = (int)in->imm, n = in->vec;
            uint64_t mk = wbits >= 64 ? ~0ull : (1ull << wbits) - 1;
            LANES(m, {
                uint64_t v = 0;
                for (int k = 0; k < n; k++)
                    v |= (R[(size_t)in->s[k] * 32 + l] & mk) << (k * wbits);
                Dd[l] = v;
            });
            break;
        }
        case OP_UNPACK: {
            int wbits = (int)in->imm, n = in->vec;
            uint64_t mk = wbits >= 64 ? ~0ull : (1ull << wbits) - 1;
            LANES(m, {
                uint64_t v = A[l];
                for (int k = 0; k < n; k++)
                    R[(size_t)in->d[k] * 32 + l] = (v >> (k * wbits)) & mk;
            });
            break;
        }
        case OP_ADD32: LANES(m, Dd[l] = (uint32_t)(A[l] + Bv[l])); break;
        case OP_ADD64: LANES(m, Dd[l] = A[l] + Bv[l]); break;
        case OP_SUB32: LANES(m, Dd[l] = (uint32_t)(A[l] - Bv[l])); break;
        case OP_SUB64: LANES(m, Dd[l] = A[l] - Bv[l]); break;
        case OP_MUL32: LANES(m, Dd[l] = (uint32_t)(A[l] * Bv[l])); break;
        case OP_MUL64: LANES(m, Dd[l] = A[l] * Bv[l]); break;
        case OP_MAD32: LANES(m, Dd[l] = (uint32_t)(A[l] * Bv[l] + C[l])); break;
        case OP_MAD64: LANES(m, Dd[l] = A[l] * Bv[l] + C[l]); break;
        case OP_MULWIDE_U32: LANES(m, Dd[l] = (uint64_t)(uint32_t)A[l] * (uint32_t)Bv[l]); break;
        case OP_MULWIDE_S32: LANES(m, Dd[l] = (uint64_t)((int64_t)(int32_t)A[l] * (int32_t)Bv[l])); break;
        case OP_SHL32: LANES(m, { uint32_t n = (uint32_t)Bv[l]; Dd[l] = n > 31 ? 0 : (uint32_t)(A[l] << n); }); break;
        case OP_SHL64: LANES(m, { uint32_t n = (uint32_t)Bv[l]; Dd[l] = n > 63 ? 0 : A[l] << n; }); break;
        case OP_SHR_U32: LANES(m, { uint32_t n = (uint32_t)Bv[l]; Dd[l] = n > 31 ? 0 : (uint32_t)A[l] >> n; }); break;
        case OP_SHR_S32: LANES(m, { uint32_t n = (uint32_t)Bv[l]; Dd[l] = (uint32_t)((int32_t)A[l] >> (n > 31 ? 31 : n)); }); break;
        case OP_SHR_U64: LANES(m, { uint32_t n = (uint32_t)Bv[l]; Dd[l] = n > 63 ? 0 : A[l] >> n; }); break;
        case OP_SHR_S64: LANES(m, { uint32_t n = (uint32_t)Bv[l]; Dd[l] = (uint64_t)((int64_t)A[l] >> (n > 63 ? 63 : n)); }); break;
        case OP_AND32: LANES(m, Dd[l] = (uint32_t)(A[l] & Bv[l])); break;
        case OP_AND64: LANES(m, Dd[l] = A[l] & Bv[l]); break;
        case OP_OR32: LANES(m, Dd[l] = (uint32_t)(A[l] | Bv[l])); break;
        case OP_OR64: LANES(m, Dd[l] = A[l] | Bv[l]); break;
        case OP_XOR32: LANES(m, Dd[l] = (uint32_t)(A[l] ^ Bv[l])); break;
        case OP_XOR64: LANES(m, Dd[l] = A[l] ^ Bv[l]); break;
        case OP_FADD32: LANES(m, Dd[l] = UF(F(A[l]) + F(Bv[l]))); break;
        case OP_FSUB32: LANES(m, Dd[l] = UF(F(A[l]) - F(Bv[l]))); break;
        case OP_FMUL32: LANES(m, Dd[l] = UF(F(A[l]) * F(Bv[l]))); break;
        case OP_FFMA32: LANES(m, Dd[l] = UF(fmaf(F(A[l]), F(Bv[l]), F(C[l])))); break;
        case OP_FADD64: LANES(m, Dd[l] = UD(D(A[l]) + D(Bv[l]))); break;
        case OP_FSUB64: LANES(m, Dd[l] = UD(D(A[l]) - D(Bv[l]))); break;
        case OP_FMUL64: LANES(m, Dd[l] = UD(D(A[l]) * D(Bv[l]))); break;
        case OP_FFMA64: LANES(m, Dd[l] = UD(fma(D(A[l]), D(Bv[l]), D(C[l])))); break;
        case OP_INT: {
            const uint64_t *E = R + (size_t)in->s[3] * 32;
            if (in->base == B_TESTP)
                break;
            LANES(m, {
                uint32_t carry = (w->cc >> l) & 1;
                Dd[l] = alu_int(in, A[l], Bv[l], C[l], E[l], &carry);
                if (in->mod & M_CC)
                    w->cc = (w->cc & ~(1u << l)) | (carry << l);
            });
            break;
        }
        case OP_FLT:
            if (in->base == B_TESTP) {
                uint32_t bits = 0;
                LANES(m, bits |= (alu_float(in, A[l], 0, 0) ? 1u : 0u) << l);
                P[in->d[0]] = (P[in->d[0]] & ~m) | bits;
                break;
            }
            LANES(m, Dd[l] = alu_float(in, A[l], Bv[l], C[l]));
            break;
        case OP_SETP: {
            uint32_t bits = 0;
            int cmp = (int)in->imm, t = in->type;
            if (t == TY_S32 && (cmp == CMP_LT || cmp == CMP_GE || cmp == CMP_GT || cmp == CMP_LE || cmp == CMP_EQ || cmp == CMP_NE)) {
                switch (cmp) {
                case CMP_LT: LANES(m, bits |= (uint32_t)((int32_t)A[l] < (int32_t)Bv[l]) << l); break;
                case CMP_GE: LANES(m, bits |= (uint32_t)((int32_t)A[l] >= (int32_t)Bv[l]) << l); break;
                case CMP_GT: LANES(m, bits |= (uint32_t)((int32_t)A[l] > (int32_t)Bv[l]) << l); break;
                case CMP_LE: LANES(m, bits |= (uint32_t)((int32_t)A[l] <= (int32_t)Bv[l]) << l); break;
                case CMP_EQ: LANES(m, bits |= (uint32_t)((uint32_t)A[l] == (uint32_t)Bv[l]) << l); break;
                default: LANES(m, bits |= (uint32_t)((uint32_t)A[l] != (uint32_t)Bv[l]) << l); break;
                }
            }
            else if ((t == TY_U64 || t == TY_S64) && (cmp == CMP_GE || cmp == CMP_LT) ) {
                if (t == TY_U64 && cmp == CMP_GE)
                    LANES(m, bits |= (uint32_t)(A[l] >= Bv[l]) << l);
                else if (t == TY_U64)
                    LANES(m, bits |= (uint32_t)(A[l] < Bv[l]) << l);
                else if (cmp == CMP_GE)
                    LANES(m, bits |= (uint32_t)((int64_t)A[l] >= (int64_t)Bv[l]) << l);
                else
                    LANES(m, bits |= (uint32_t)((int64_t)A[l] < (int64_t)Bv[l]) << l);
            }
            else
                LANES(m, bits |= (uint32_t)compare(cmp, t, A[l], Bv[l]) << l);
            uint32_t nbits = ~bits & m;
            if (in->base) {
                uint32_t c = P[in->s[2]];
                if (in->vec)
                    c = ~c;
                switch (in->base) {
                case 1: bits &= c; nbits &= c; break;
                case 2: bits |= c; nbits |= c; break;
                default: bits ^= c; nbits ^= c; break;
                }
            }
            P[in->d[0]] = (P[in->d[0]] & ~m) | (bits & m);
            if (in->d[1] >= 0)
                P[in->d[1]] = (P[in->d[1]] & ~m) | (nbits & m);
            break;
        }
        case OP_SET: {
            int cmp = (int)in->imm;
            LANES(m, {
                int r = compare(cmp, in->type, A[l], Bv[l]);
                if (in->base) {
                    int c = (P[in->s[2]] >> l) & 1;
                    if (in->vec)
                        c = !c;
                    r = in->base == 1 ? (r && c) : in->base == 2 ? (r || c) : (r ^ c);
                }
                Dd[l] = in->type2 == TY_F32 ? (r ? UF(1.0f) : 0) : (r ? 0xffffffffu : 0);
            });
            break;
        }
        case OP_SELP: {
            uint32_t p = P[in->s[2]];
            if (in->vec)
                p = ~p;
            LANES(m, Dd[l] = ((p >> l) & 1) ? A[l] : Bv[l]);
            break;
        }
        case OP_SLCT:
            LANES(m, {
                int ge = in->type2 == TY_F32 ? !(F(C[l]) < 0.0f) : (int32_t)C[l] >= 0;
                Dd[l] = ge ? A[l] : Bv[l];
            });
            break;
        case OP_PAND:
        case OP_POR:
        case OP_PXOR:
        case OP_PNOT: {
            uint32_t x = P[in->s[0]], y = P[in->s[1]], r;
            if (in->vec & 1)
                x = ~x;
            if (in->vec & 2)
                y = ~y;
            r = in->op == OP_PAND ? x & y : in->op == OP_POR ? x | y : in->op == OP_PXOR ? x ^ y : ~x;
            P[in->d[0]] = (P[in->d[0]] & ~m) | (r & m);
            break;
        }
        case OP_CVT:
            switch (in->base) {
            case 1: LANES(m, Dd[l] = (uint32_t)A[l]); break;
            case 2: LANES(m, Dd[l] = (uint64_t)(int64_t)(int32_t)A[l]); break;
            case 3: LANES(m, Dd[l] = (uint32_t)A[l]); break;
            default: LANES(m, Dd[l] = convert(in, A[l])); break;
            }
            break;
        case OP_CVTA_SHARED: LANES(m, Dd[l] = A[l] + (uint64_t)(uintptr_t)b->shared); break;
        case OP_CVTA_TO_SHARED: LANES(m, Dd[l] = A[l] - (uint64_t)(uintptr_t)b->shared); break;
        case OP_CVTA_LOCAL:
            LANES(m, Dd[l] = A[l] + (uint64_t)(uintptr_t)(b->local + (size_t)(w->index * 32 + l) * b->local_bytes));
            break;
        case OP_CVTA_TO_LOCAL:
            LANES(m, Dd[l] = A[l] - (uint64_t)(uintptr_t)(b->local + (size_t)(w->index * 32 + l) * b->local_bytes));
            break;
        case OP_CVTA_PARAM: LANES(m, Dd[l] = A[l] + (uint64_t)(uintptr_t)b->L->params); break;
        case OP_LDPARAM: {
            uint64_t v = load_value(b->L->params + in->imm, in->type);
            LANES(m, Dd[l] = v);
            break;
        }
        case OP_LD: {
            const uint64_t *Ad = R + (size_t)in->addr * 32;
            int t = in->type, sz = emu_type_size(t), n = in->vec;
            unsigned total = (unsigned)(sz * n);
            int sp = in->space;
            if (n == 1 && (sp == SP_GLOBAL || sp == SP_GENERIC) && sz == 4 && t != TY_S32) {
                uint64_t lo = b->lo, hi = b->hi;
                LANES(m, {
                    uint64_t a = Ad[l] + (uint64_t)in->imm;
                    if (a >= lo && a + 4 <= hi && !(a & 3))
                        Dd[l] = *(const uint32_t *)(uintptr_t)a;
                    else {
                        const void *q = resolve(b, w, l, sp, a, 4, 0);
                        if (q == NULL)
                            return;
                        Dd[l] = *(const uint32_t *)q;
                        lo = b->lo;
                        hi = b->hi;
                    }
                });
                break;
            }
            LANES(m, {
                uint64_t a = Ad[l] + (uint64_t)in->imm;
                const uint8_t *q = resolve(b, w, l, sp, a, total, 0);
                if (q == NULL)
                    return;
                for (int k = 0; k < n; k++)
                    R[(size_t)in->d[k] * 32 + l] = load_value(q + k * sz, t);
            });
            break;
        }
        case OP_ST: {
            const uint64_t *Ad = R + (size_t)in->addr * 32;
            int sz = emu_type_size(in->type), n = in->vec;
            unsigned total = (unsigned)(sz * n);
            int sp = in->space;
            if (n == 1 && (sp == SP_GLOBAL || sp == SP_GENERIC) && sz == 4) {
                uint64_t lo = b->lo, hi = b->hi;
                LANES(m, {
                    uint64_t a = Ad[l] + (uint64_t)in->imm;
                    if (a >= lo && a + 4 <= hi && !(a & 3))
                        *(uint32_t *)(uintptr_t)a = (uint32_t)A[l];
                    else {
                        void *q = resolve(b, w, l, sp, a, 4, 1);
                        if (q == NULL)
                            return;
                        *(uint32_t *)q = (uint32_t)A[l];
                        lo = b->lo;
                        hi = b->hi;
                    }
                });
                break;
            }
            LANES(m, {
                uint64_t a = Ad[l] + (uint64_t)in->imm;
                uint8_t *q = resolve(b, w, l, sp, a, total, 1);
                if (q == NULL)
                    return;
                for (int k = 0; k < n; k++)
                    store_value(q + k * sz, sz, R[(size_t)in->s[k] * 32 + l]);
            });
            break;
        }
        case OP_ATOM:
        case OP_RED: {
            const uint64_t *Ad = R + (size_t)in->addr * 32;
            unsigned sz = (unsigned)emu_type_size(in->type);
            LANES(m, {
                uint64_t a = Ad[l] + (uint64_t)in->imm;
                void *q = resolve(b, w, l, in->space, a, sz, 1);
                if (q == NULL)
                    return;
                uint64_t old = atomic_op(q, in, A[l], Bv[l]);
                if (in->op == OP_ATOM)
                    Dd[l] = old;
            });
            break;
        }
        case OP_BRA: {
            uint32_t target = (uint32_t)in->imm;
            if (m == w->mask) {
                w->pc = target;
                if (target > w->wmin) {
                    set_group_pc(w, w->mask, target);
                    reschedule(w);
                }
                else if (target == w->wmin)
                    merge(w);
                continue;
            }
            if (m == 0)
                break;
            set_group_pc(w, m, target);
            set_group_pc(w, w->mask & ~m, w->pc + 1);
            reschedule(w);
            continue;
        }
        case OP_EXIT:
            w->live &= ~m;
            w->mask &= ~m;
            if (w->mask == 0) {
                reschedule(w);
                continue;
            }
            break;
        case OP_BAR:
            if (m != w->mask) {
                fault_text(b, w, __builtin_ctz(w->mask & ~m), CUDA_ERROR_ILLEGAL_INSTRUCTION,
                           "bar.sync under a predicate that is false for some threads");
                return;
            }
            set_group_pc(w, w->mask, w->pc + 1);
            w->barwait |= w->mask;
            w->mask = 0;
            reschedule(w);
            continue;
        case OP_SHFL: {
            uint64_t vals[32];
            uint32_t okbits = 0;
            int mode = in->type2;
            LANES(m, {
                uint32_t bval = (uint32_t)Bv[l], cval = (uint32_t)C[l];
                uint32_t segmask = (cval >> 8) & 0x1f, clamp = cval & 0x1f;
                uint32_t maxl = ((uint32_t)l & segmask) | (clamp & ~segmask);
                uint32_t minl = (uint32_t)l & segmask;
                int32_t j;
                int ok;
                switch (mode) {
                case SHFL_UP: j = l - (int32_t)bval; ok = j >= (int32_t)minl; break;
                case SHFL_DOWN: j = l + (int32_t)bval; ok = j <= (int32_t)maxl; break;
                case SHFL_BFLY: j = l ^ (int32_t)bval; ok = j <= (int32_t)maxl; break;
                default: j = (int32_t)(minl | (bval & ~segmask)); ok = j <= (int32_t)maxl; break;
                }
                if (!ok || j < 0 || j > 31)
                    j = l;
                vals[l] = A[j];
                okbits |= (uint32_t)ok << l;
            });
            LANES(m, Dd[l] = vals[l] & 0xffffffffu);
            if (in->d[1] >= 0)
                P[in->d[1]] = (P[in->d[1]] & ~m) | (okbits & m);
            break;
        }
        case OP_VOTE: {
            uint32_t p = P[in->s[0]];
            if (in->vec)
                p = ~p;
            p &= m;
            switch (in->type2) {
            case VOTE_ALL: P[in->d[0]] = (P[in->d[0]] & ~m) | (p == m ? m : 0); break;
            case VOTE_ANY: P[in->d[0]] = (P[in->d[0]] & ~m) | (p ? m : 0); break;
            case VOTE_UNI: P[in->d[0]] = (P[in->d[0]] & ~m) | ((p == 0 || p == m) ? m : 0); break;
            default: LANES(m, Dd[l] = p); break;
            }
            break;
        }
        case OP_ACTIVEMASK: LANES(m, Dd[l] = m); break;
        case OP_MATCH_ANY:
        case OP_MATCH_ALL: {
            uint32_t res[32], all = 1;
            int sz = emu_type_size(in->type);
            LANES(m, {
                uint32_t eq = 0;
                for (uint32_t mm = m; mm; mm &= mm - 1) {
                    int k = __builtin_ctz(mm);
                    if (zx(A[k], sz) == zx(A[l], sz))
                        eq |= 1u << k;
                }
                res[l] = eq;
                if (eq != m)
                    all = 0;
            });
            if (in->op == OP_MATCH_ANY)
                LANES(m, Dd[l] = res[l]);
            else
                LANES(m, Dd[l] = all ? m : 0);
            if (in->d[1] >= 0)
                P[in->d[1]] = (P[in->d[1]] & ~m) | (all ? m : 0);
            break;
        }
        case OP_PRINTF:
            if (m) {
                pthread_mutex_lock(&emu_print_lock);
                LANES(m, {
                    do_printf(b, w, l, A[l], Bv[l], out);
                    Dd[l] = 0;
                });
                pthread_mutex_unlock(&emu_print_lock);
                if (b->fault)
                    return;
            }
            break;
        case OP_TRAP:
            if (m) {
                fault_text(b, w, __builtin_ctz(m), CUDA_ERROR_LAUNCH_FAILED,
                           "the kernel executed trap (or a failed assert)");
                return;
            }
            break;
        case OP_CLOCK:
        case OP_CLOCK64:
        case OP_GLOBALTIMER: {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            uint64_t v = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
            LANES(m, Dd[l] = in->op == OP_CLOCK ? (uint32_t)v : v);
            break;
        }
        default:
            fault_text(b, w, __builtin_ctz(w->mask), CUDA_ERROR_ILLEGAL_INSTRUCTION,
                       "the emulator met an instruction it cannot run");
            return;
        }
        w->pc++;
        if (w->pc == w->wmin)
            merge(w);
    }
}

/* ------------------------------------------------------------------ blocks */

static int
block_init(block *b, const emu_launch *L)
{
    const emu_func *f = L->f;
    memset(b, 0, sizeof *b);
    b->L = L;
    b->f = f;
    b->nthreads = L->block[0] * L->block[1] * L->block[2];
    b->nwarps = (int)((b->nthreads + 31) / 32);
    size_t dyn_base = (f->shared_static + 15) / 16 * 16;
    b->shared_size = dyn_base + L->shared_dyn;
    b->local_bytes = f->local_bytes;
    b->warps = calloc((size_t)b->nwarps, sizeof *b->warps);
    b->regs = malloc((size_t)b->nwarps * (size_t)(f->nslots ? f->nslots : 1) * 32 * sizeof(uint64_t));
    b->preds = calloc((size_t)b->nwarps * (size_t)(f->npreds + 1), sizeof(uint32_t));
    b->shared = calloc(1, b->shared_size ? b->shared_size : 1);
    b->local = calloc(1, (size_t)b->nwarps * 32 * b->local_bytes + 1);
    if (!b->warps || !b->regs || !b->preds || !b->shared || !b->local)
        return -1;
    for (int i = 0; i < b->nwarps; i++) {
        b->warps[i].R = b->regs + (size_t)i * (size_t)f->nslots * 32;
        b->warps[i].P = b->preds + (size_t)i * (size_t)(f->npreds + 1);
        b->warps[i].index = i;
    }
    return 0;
}

static void
block_free(block *b)
{
    free(b->warps);
    free(b->regs);
    free(b->preds);
    free(b->shared);
    free(b->local);
}

static void
warp_start(block *b, warp *w)
{
    const emu_launch *L = b->L;
    const emu_func *f = b->f;
    unsigned bx = L->block[0], by = L->block[1];
    size_t dyn_base = (f->shared_static + 15) / 16 * 16;
    uint32_t live = 0;
    for (int l = 0; l < 32; l++) {
        if ((unsigned)(w->index * 32 + l) < b->nthreads)
            live |= 1u << l;
    }
    for (int i = 0; i < f->nprefill; i++) {
        const emu_prefill *pf = &f->prefill[i];
        uint64_t *d = w->R + (size_t)pf->slot * 32;
        uint64_t v;
        switch (pf->kind) {
        case SR_CONST: v = pf->value; break;
        case SR_NTID_X: v = L->block[0]; break;
        case SR_NTID_Y: v = L->block[1]; break;
        case SR_NTID_Z: v = L->block[2]; break;
        case SR_CTAID_X: v = b->bid[0]; break;
        case SR_CTAID_Y: v = b->bid[1]; break;
        case SR_CTAID_Z: v = b->bid[2]; break;
        case SR_NCTAID_X: v = L->grid[0]; break;
        case SR_NCTAID_Y: v = L->grid[1]; break;
        case SR_NCTAID_Z: v = L->grid[2]; break;
        case SR_WARPID: v = (uint64_t)w->index; break;
        case SR_NWARPID: v = (uint64_t)b->nwarps; break;
        case SR_SMID: v = 0; break;
        case SR_NSMID: v = 1; break;
        case SR_GRIDID: v = 1; break;
        case SR_DYN_SMEM: v = L->shared_dyn; break;
        case SR_TOTAL_SMEM: v = b->shared_size; break;
        case SR_DYNBASE: v = dyn_base + pf->value; break;
        default: v = 0; break;
        }
        for (int l = 0; l < 32; l++) {
            unsigned t = (unsigned)(w->index * 32 + l);
            switch (pf->kind) {
            case SR_TID_X: v = t % bx; break;
            case SR_TID_Y: v = (t / bx) % by; break;
            case SR_TID_Z: v = t / (bx * by); break;
            case SR_LANEID: v = (uint64_t)l; break;
            case SR_LANEMASK_EQ: v = 1u << l; break;
            case SR_LANEMASK_LT: v = (1u << l) - 1; break;
            case SR_LANEMASK_LE: v = (uint32_t)((2ull << l) - 1); break;
            case SR_LANEMASK_GT: v = (uint32_t)~((2ull << l) - 1); break;
            case SR_LANEMASK_GE: v = (uint32_t)~((1u << l) - 1); break;
            default: break;
            }
            d[l] = v;
        }
    }
    memset(w->P, 0, (size_t)(f->npreds + 1) * sizeof(uint32_t));
    w->pc = 0;
    w->mask = live;
    w->live = live;
    w->barwait = 0;
    w->wmin = NOPC;
    w->cc = 0;
    w->state = live ? W_RUN : W_DONE;
}

/* Run one block to its end. 0, or -1 on a fault (in b->why). */
static int
run_block(block *b, unsigned linear)
{
    const emu_launch *L = b->L;
    b->bid[0] = linear % L->grid[0];
    b->bid[1] = (linear / L->grid[0]) % L->grid[1];
    b->bid[2] = linear / (L->grid[0] * L->grid[1]);
    if (b->f->shared_static || L->shared_dyn)
        memset(b->shared, 0, b->shared_size);
    for (int i = 0; i < b->nwarps; i++)
        warp_start(b, &b->warps[i]);
    for (;;) {
        int running = 0, waiting = 0;
        for (int i = 0; i < b->nwarps; i++) {
            warp *w = &b->warps[i];
            if (w->state == W_RUN) {
                run_warp(b, w);
                if (b->fault)
                    return -1;
            }
            running += w->state == W_RUN;
            waiting += w->state == W_BAR;
        }
        if (waiting == 0 && running == 0)
            return 0;
        if (running == 0) {
            /* every thread still alive waits at the barrier: release it */
            for (int i = 0; i < b->nwarps; i++) {
                warp *w = &b->warps[i];
                if (w->state == W_BAR) {
                    w->barwait = 0;
                    reschedule(w);
                }
            }
        }
    }
}

/* ------------------------------------------------------------------ the grid */

typedef struct {
    const emu_launch *L;
    unsigned nblocks;
    unsigned next;          /* atomic: the next block to run */
    int stop;               /* atomic: a block faulted */
    pthread_mutex_t lock;
    CUresult err;
    char *why;
    size_t whylen;
} grid_job;

static void *
worker(void *arg)
{
    grid_job *g = arg;
    block b;
    if (block_init(&b, g->L) < 0) {
        block_free(&b);
        pthread_mutex_lock(&g->lock);
        if (g->err == CUDA_SUCCESS) {
            g->err = CUDA_ERROR_OUT_OF_MEMORY;
            snprintf(g->why, g->whylen, "the emulator ran out of host memory for a block's registers");
        }
        pthread_mutex_unlock(&g->lock);
        __atomic_store_n(&g->stop, 1, __ATOMIC_SEQ_CST);
        return NULL;
    }
    for (;;) {
        if (__atomic_load_n(&g->stop, __ATOMIC_RELAXED))
            break;
        unsigned i = __atomic_fetch_add(&g->next, 1, __ATOMIC_RELAXED);
        if (i >= g->nblocks)
            break;
        if (run_block(&b, i) < 0) {
            pthread_mutex_lock(&g->lock);
            if (g->err == CUDA_SUCCESS) {
                g->err = b.err;
                snprintf(g->why, g->whylen, "%s", b.why);
            }
            pthread_mutex_unlock(&g->lock);
            __atomic_store_n(&g->stop, 1, __ATOMIC_SEQ_CST);
            break;
        }
    }
    block_free(&b);
    return NULL;
}

int
emu_thread_count(void)
{
    static int n = 0;
    if (n == 0) {
        const char *env = getenv("CUKIT_EMULATOR_THREADS");
        long v = env ? strtol(env, NULL, 10) : 0;
        if (v <= 0)
            v = sysconf(_SC_NPROCESSORS_ONLN);
        n = v < 1 ? 1 : v > 256 ? 256 : (int)v;
    }
    return n;
}

CUresult
emu_run(const emu_launch *L, char *why, size_t whylen)
{
    grid_job g = {0};
    g.L = L;
    g.nblocks = L->grid[0] * L->grid[1] * L->grid[2];
    g.err = CUDA_SUCCESS;
    g.why = why;
    g.whylen = whylen;
    pthread_mutex_init(&g.lock, NULL);
    unsigned long long work = (unsigned long long)g.nblocks * L->block[0] * L->block[1] * L->block[2];
    int nthreads = emu_thread_count();
    if ((unsigned)nthreads > g.nblocks)
        nthreads = (int)g.nblocks;
    if (work < 16384)
        nthreads = 1;
    emu_registry_rdlock();
    if (nthreads <= 1) {
        worker(&g);
    }
    else {
        pthread_t *th = calloc((size_t)nthreads, sizeof *th);
        int started = 0;
        for (int i = 1; th && i < nthreads; i++) {
            if (pthread_create(&th[i], NULL, worker, &g) == 0)
                started |= 0, th[i] = th[i];
            else
                th[i] = 0;
        }
        worker(&g);
        for (int i = 1; th && i < nthreads; i++) {
            if (th[i])
                pthread_join(th[i], NULL);
        }
        free(th);
        (void)started;
    }
    emu_registry_unlock();
    fflush(stdout);
    pthread_mutex_destroy(&g.lock);
    return g.err;
}
