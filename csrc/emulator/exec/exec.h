/* exec.h - the interpreter's private types: a warp's registers and lanes, a block's memory */
#ifndef CUKIT_EMU_EXEC_H
#define CUKIT_EMU_EXEC_H

#include "emulator/checks.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* A monotonic clock in nanoseconds (the watchdog, clock64, a launch's deadline). */
static inline uint64_t
emu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
    uint32_t red_pc;     /* the bar.red its lanes wait at (NOPC: none), answered at release */
    int barid;           /* the named barrier (OP_BARN) it waits at, -1: bar.sync 0's */
    int fullid;          /* the barrier its bar.sync (or bar.red) without a count waits at */
    uint32_t barn_pc;    /* the OP_BARN its lanes gather at before the warp arrives (NOPC: */
    uint32_t barn_lanes; /* none), the lanes there, */
    int barn_id;         /* its barrier */
    uint32_t barn_want;  /* and the warps the barrier waits for */
    int state;
    int index;
    uint32_t wsync;      /* bar.warp.sync executed (racecheck: lanes of one warp synchronized) */
} warp;

/* racecheck: what one byte of a block's shared memory last saw in this barrier interval.
 * An interval is named by the block's epoch, which every barrier (and every new block)
 * advances, so a cell of an earlier one is empty without being cleared. */
typedef struct {
    uint32_t wepoch, wtid, wpc, wsync; /* the last write: interval, thread (linear in the
                                        * block), instruction, its warp's wsync */
    uint32_t repoch;                   /* the interval of the reads: */
    uint32_t rtid[2], rpc[2], rsync[2]; /* two reads by different threads (rtid ~0: none) */
} race_cell;

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
    uint8_t *local;      /* nwarps * 32 lanes * local_stride */
    size_t local_bytes;  /* a thread's local memory, */
    size_t local_stride; /* and its distance to the next thread's (16-aligned, as accesses are) */
    uint64_t lo, hi;     /* the allocation the last global access hit */
    uint64_t icount;     /* thread-instructions executed (lanes x instructions) */
    uint32_t red_popc;   /* bar.red of the barrier now: threads whose predicate is true, */
    int red_all, red_any; /* whether all are, whether any is */
    uint8_t nb_arrived[16], nb_expect[16]; /* named barriers: warps arrived, and expected
                                            * (0: the barrier is not in use) */
    uint64_t deadline;   /* CLOCK_MONOTONIC ns past which the launch stops (0: none) */
    unsigned poll;       /* backward branches left before the next look at the clock */
    unsigned turns;      /* times a warp of the block yielded in a loop (take_turn): a block
                          * that loops long may wait for another block (grid.c) */
    unsigned interrupts; /* emu_interrupts when the launch began */
    unsigned check;      /* EMU_CHECK_* on for this launch (checks.h; 0: none) */
    uint32_t epoch;      /* barrier intervals begun on this seat (racecheck) */
    race_cell *race;     /* owned: racecheck's cell of each shared byte, or NULL */
    struct emu_global_races *global; /* owned: racecheck's cells of global bytes (check.c) */
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

/* The bits of a float32 result of arithmetic: a NaN is the GPU's canonical one
 * (0x7fffffff), whatever NaN the operands held. */
static inline uint64_t
UFC(float f)
{
    return f != f ? 0x7fffffffu : UF(f);
}

/* The bits of a float64 result of add, sub, mul or fma with operands b and c: where
 * more than one operand is NaN the GPU returns the last one, quieted (x86 the first);
 * a single NaN operand is returned quieted on both. c is 0 for two operands. */
static inline uint64_t
UDN(double r, uint64_t b, uint64_t c)
{
    uint64_t u;
    memcpy(&u, &r, 8);
    if (r == r)
        return u;
    if ((c & 0x7fffffffffffffffull) > 0x7ff0000000000000ull)
        return c | 0x0008000000000000ull;
    if ((b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull)
        return b | 0x0008000000000000ull;
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

/* Any memory access: the value of `type` at p, extended to 64 bits, and its store. */
static inline uint64_t
load_value(const void *p, int type)
{
    /* memcpy: p may be misaligned (an ld.param at any offset, as a GPU loads it) */
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t v;
    switch (type) {
    case TY_U8: memcpy(&u8, p, 1); return u8;
    case TY_S8: memcpy(&u8, p, 1); return (uint64_t)(int64_t)(int8_t)u8;
    case TY_U16: case TY_F16: case TY_BF16: memcpy(&u16, p, 2); return u16;
    case TY_S16: memcpy(&u16, p, 2); return (uint64_t)(int64_t)(int16_t)u16;
    case TY_U32: case TY_F32: case TY_F16X2: case TY_BF16X2: memcpy(&u32, p, 4); return u32;
    case TY_S32: memcpy(&u32, p, 4); return (uint64_t)(int64_t)(int32_t)u32;
    default:
        memcpy(&v, p, 8);
        return v;
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


/* alu.c: one lane's generic integer and float operations, conversions, compares and
 * atomics (the hot cases are inline in warp.c). */
uint64_t emu_alu_int(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c, uint64_t e, uint32_t *carry);
uint64_t emu_alu_float(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c);
uint64_t emu_convert(const emu_inst *in, uint64_t v);
/* cvt to or from a pair of float8 (decode_cvt_f8's forms): a and b the two f32 sources,
 * or a the one packed source. */
uint64_t emu_convert_f8x2(const emu_inst *in, uint64_t a, uint64_t b);
int emu_compare(int cmp, int type, uint64_t a, uint64_t b);
uint64_t emu_atomic_op(void *p, const emu_inst *in, uint64_t b, uint64_t c);

/* texture.c: one tex, suld or sust for the lanes in m. 0, or -1 after recording a fault. */
int emu_texture_op(block *b, warp *w, const emu_inst *in, uint32_t m);

/* access.c: checked addresses, fault messages, printf. */
/* Host address of a checked `size`-byte access by lane (store: 0 read, 1 write, 2 atomic),
 * or NULL after recording a fault. */
void *emu_resolve(block *b, warp *w, int lane, int space, uint64_t addr, unsigned size, int store);
/* Record a fault with text (the block's first fault wins). */
void emu_fault_text(block *b, warp *w, int lane, CUresult err, const char *text);
/* The warp's lanes have gathered at a named barrier (bar.sync/bar.arrive a, b): the warp
 * arrives. 0, or -1 on a fault. */
int emu_barn_arrive(block *b, warp *w);
/* One lane's printf: the format at fmt_addr, its arguments at args_addr. */
void emu_do_printf(block *b, warp *w, int lane, uint64_t fmt_addr, uint64_t args_addr, FILE *out);


/* Run a statement for each lane l of mask m; the whole warp as one plain loop. */
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

/* rare.c: the instructions emu_run_warp's switch hands off, each for the lanes m of
 * warp w, one call per instruction (not per lane), so that the loop the common ones
 * share stays small. Those returning int give -1 after recording a fault, else 0. */
void emu_op_pack(warp *w, const emu_inst *in, uint32_t m);
void emu_op_unpack(warp *w, const emu_inst *in, uint32_t m);
void emu_op_movn(warp *w, const emu_inst *in, uint32_t m);
void emu_op_int(warp *w, const emu_inst *in, uint32_t m);
void emu_op_flt(warp *w, const emu_inst *in, uint32_t m);
void emu_op_set(warp *w, const emu_inst *in, uint32_t m);
void emu_op_slct(warp *w, const emu_inst *in, uint32_t m);
int emu_op_ld_any(block *b, warp *w, const emu_inst *in, uint32_t m);
int emu_op_st_any(block *b, warp *w, const emu_inst *in, uint32_t m);
int emu_op_cpasync(block *b, warp *w, const emu_inst *in, uint32_t m);
int emu_op_atom(block *b, warp *w, const emu_inst *in, uint32_t m);
void emu_op_redux(warp *w, const emu_inst *in, uint32_t m);
void emu_op_shfl(warp *w, const emu_inst *in, uint32_t m);
void emu_op_vote(warp *w, const emu_inst *in, uint32_t m);
void emu_op_match(warp *w, const emu_inst *in, uint32_t m);
int emu_op_printf(block *b, warp *w, const emu_inst *in, uint32_t m);
void emu_op_clock(warp *w, const emu_inst *in, uint32_t m);

/* ------------------------------------------------------------------ warp.c, for grid.c */

/* fma over the lanes of mask m: the CPU's FMA instruction (hw) or libm's (sw); the
 * two pointers hold the one this CPU takes, chosen at the first launch. */
typedef void (*lanes_fn)(uint32_t, uint64_t *, const uint64_t *, const uint64_t *, const uint64_t *);
void emu_fma32_hw(uint32_t m, uint64_t *d, const uint64_t *a, const uint64_t *b, const uint64_t *c);
void emu_fma64_hw(uint32_t m, uint64_t *d, const uint64_t *a, const uint64_t *b, const uint64_t *c);
void emu_fma32_sw(uint32_t m, uint64_t *d, const uint64_t *a, const uint64_t *b, const uint64_t *c);
void emu_fma64_sw(uint32_t m, uint64_t *d, const uint64_t *a, const uint64_t *b, const uint64_t *c);
extern lanes_fn emu_fma32_lanes_fn, emu_fma64_lanes_fn;
/* Instructions a warp runs between looks at Ctrl-C and the watchdog. */
#define POLL_EVERY 4096u
/* Ctrl-C presses seen since the process started (the SIGINT handler counts them). */
extern unsigned emu_interrupts;
/* Chain cukit's SIGINT handler in front of Python's, once. */
void emu_watch_sigint(void);
/* 1 when the launch must stop (Ctrl-C or the watchdog's deadline), the reason set. */
int emu_must_stop(block *b, warp *w);
/* Let the warp's next group of lanes run (independent thread scheduling). */
void emu_reschedule(warp *w);
/* Run warp w of block b until it exits, waits at a barrier or faults. */
void emu_run_warp(block *b, warp *w);

#endif /* CUKIT_EMU_EXEC_H */
