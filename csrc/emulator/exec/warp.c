/* warp.c - runs decoded PTX: one warp of 32 lanes in lockstep (its rarer instructions: rare.c; the grid: grid.c) */
#include "emulator/exec/check.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

uint64_t emu_thread_instructions;

/* ------------------------------------------------------------------ warps */


/* fma for 32 lanes: libm's fmaf is a call per lane; the CPU's FMA instruction, where
 * it has one, is one instruction (both round once, as PTX's fma.rn does). */
__attribute__((target("fma"))) void
emu_fma32_hw(uint32_t m, uint64_t *d, const uint64_t *a, const uint64_t *b, const uint64_t *c)
{
    LANES(m, d[l] = UFC(__builtin_fmaf(F(a[l]), F(b[l]), F(c[l]))));
}

__attribute__((target("fma"))) void
emu_fma64_hw(uint32_t m, uint64_t *d, const uint64_t *a, const uint64_t *b, const uint64_t *c)
{
    LANES(m, d[l] = UDN(__builtin_fma(D(a[l]), D(b[l]), D(c[l])), b[l], c[l]));
}

void
emu_fma32_sw(uint32_t m, uint64_t *d, const uint64_t *a, const uint64_t *b, const uint64_t *c)
{
    LANES(m, d[l] = UFC(fmaf(F(a[l]), F(b[l]), F(c[l]))));
}

void
emu_fma64_sw(uint32_t m, uint64_t *d, const uint64_t *a, const uint64_t *b, const uint64_t *c)
{
    LANES(m, d[l] = UDN(fma(D(a[l]), D(b[l]), D(c[l])), b[l], c[l]));
}

lanes_fn emu_fma32_lanes_fn, emu_fma64_lanes_fn;

static void
fma32_lanes(uint32_t m, uint64_t *d, const uint64_t *a, const uint64_t *b, const uint64_t *c)
{
    emu_fma32_lanes_fn(m, d, a, b, c);
}

static void
fma64_lanes(uint32_t m, uint64_t *d, const uint64_t *a, const uint64_t *b, const uint64_t *c)
{
    emu_fma64_lanes_fn(m, d, a, b, c);
}

/* A contracted sub (ptx_contract): fma with s0 (imm bit 0) or s2 (bit 1) negated, as the
 * GPU's FFMA/DFMA negates an operand: its sign flipped, NaNs included. */
__attribute__((noinline)) static void
ffma_neg(warp *w, const emu_inst *in, uint32_t m)
{
    int wide = in->op == OP_FFMA64;
    uint64_t sign = wide ? 1ull << 63 : 1ull << 31;
    const uint64_t *A = w->R + (size_t)in->s[0] * 32, *C = w->R + (size_t)in->s[2] * 32;
    uint64_t na[32], nc[32];
    for (int l = 0; l < 32; l++) {
        na[l] = (in->imm & 1) ? A[l] ^ sign : A[l];
        nc[l] = (in->imm & 2) ? C[l] ^ sign : C[l];
    }
    (wide ? emu_fma64_lanes_fn : emu_fma32_lanes_fn)(m, w->R + (size_t)in->d[0] * 32, na,
                                                     w->R + (size_t)in->s[1] * 32, nc);
}

/* The number of lanes in m. Not __builtin_popcount: the build targets x86-64 CPUs
 * without the POPCNT instruction, where it is a call into libgcc, and this runs once
 * for every instruction a warp executes. */
static inline uint32_t
lanes_in(uint32_t m)
{
    m = m - ((m >> 1) & 0x55555555u);
    m = (m & 0x33333333u) + ((m >> 2) & 0x33333333u);
    m = (m + (m >> 4)) & 0x0f0f0f0fu;
    return (m * 0x01010101u) >> 24;
}

/* Run the lanes of cand at pc next; wmin: the lowest pc of cand's other lanes. */
static inline void
run_group(warp *w, uint32_t cand, uint32_t pc)
{
    uint32_t mask = 0, others = NOPC;
    for (uint32_t m = cand; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        if (w->lpc[l] == pc)
            mask |= 1u << l;
        else if (w->lpc[l] < others)
            others = w->lpc[l];
    }
    w->pc = pc;
    w->mask = mask;
    w->wmin = others;
}

/* Pick the next group: the runnable lanes with the lowest pc. */
void
emu_reschedule(warp *w)
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
    run_group(w, cand, min);
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

/* A yield inside the warp: the group of lanes with the next higher pc runs (the lowest
 * again after the highest), so lanes that wait in a loop for another lane do not keep
 * it from running. wmin stays the lowest pc of the others: the first branch or exit
 * of that group goes back to lowest-pc-first, where lanes reconverge. */
__attribute__((noinline, cold)) static void
next_group(warp *w)
{
    uint32_t cand = w->live & ~w->barwait & ~w->mask;
    if (cand == 0)
        return;
    set_group_pc(w, w->mask, w->pc);
    uint32_t above = NOPC, lowest = NOPC;
    for (uint32_t m = cand; m; m &= m - 1) {
        uint32_t pc = w->lpc[__builtin_ctz(m)];
        if (pc > w->pc && pc < above)
            above = pc;
        if (pc < lowest)
            lowest = pc;
    }
    uint32_t pick = above != NOPC ? above : lowest;
    run_group(w, cand | w->mask, pick);
}

/* ------------------------------------------------------------------ stopping a launch */

/* Ctrl-C while a kernel runs: counted by the SIGINT handler below, compared by each
 * block with the count when its launch began. */
unsigned emu_interrupts;
static struct sigaction python_sigint; /* the handler ours chains to */
static pthread_mutex_t sigint_lock = PTHREAD_MUTEX_INITIALIZER;


static void
on_sigint(int sig, siginfo_t *info, void *ctx)
{
    __atomic_fetch_add(&emu_interrupts, 1, __ATOMIC_SEQ_CST);
    /* then what was there before: Python's handler, which raises KeyboardInterrupt
     * once the launch returns (cukit_check_cu looks for it) */
    if (python_sigint.sa_flags & SA_SIGINFO)
        python_sigint.sa_sigaction(sig, info, ctx);
    else if (python_sigint.sa_handler == SIG_DFL) {
        signal(SIGINT, SIG_DFL);
        raise(SIGINT);
    }
    else if (python_sigint.sa_handler != SIG_IGN)
        python_sigint.sa_handler(sig);
}

/* Put on_sigint in front of whatever handles SIGINT now (Python may have changed it). */
void
emu_watch_sigint(void)
{
    struct sigaction now;
    pthread_mutex_lock(&sigint_lock);
    if (sigaction(SIGINT, NULL, &now) == 0 && now.sa_sigaction != on_sigint &&
        now.sa_handler != SIG_IGN) {
        struct sigaction ours = {0};
        ours.sa_sigaction = on_sigint;
        ours.sa_flags = SA_SIGINFO | (now.sa_flags & SA_ONSTACK);
        sigemptyset(&ours.sa_mask);
        python_sigint = now;
        sigaction(SIGINT, &ours, NULL);
    }
    pthread_mutex_unlock(&sigint_lock);
}

/* Seconds of CUKIT_EMULATOR_TIMEOUT, 0 when unset; -1 (and *bad the text) when it is
 * not a positive number. */
double
emu_timeout_seconds(const char **bad)
{
    const char *env = getenv("CUKIT_EMULATOR_TIMEOUT");
    *bad = NULL;
    if (env == NULL || env[0] == '\0')
        return 0;
    char *end;
    double v = strtod(env, &end);
    while (*end == ' ')
        end++;
    if (end == env || *end != '\0' || !(v > 0) || v > 1e9) {
        *bad = env;
        return -1;
    }
    return v;
}

/* The lines the warps of b are at, "warp 0 at k.cu:5, warp 1 at k.cu:9 (at a barrier)". */
static void
warp_lines(const block *b, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < b->nwarps && k + 80 < n; i++) {
        const warp *w = &b->warps[i];
        if (w->state == W_DONE)
            continue;
        const emu_inst *in = &b->f->code[w->pc < (uint32_t)b->f->ncode ? w->pc : 0];
        char line[200];
        emu_line_str(b->f->module, in->line, line, sizeof line);
        k += (size_t)snprintf(buf + k, n - k, "%swarp %d at %s%sPTX line %u%s%s", k ? ", " : "", i,
                              line, line[0] ? " (" : "(", in->ptxline, ")",
                              w->state == W_BAR ? " waiting at a barrier" : "");
        if (k >= n)
            k = n - 1;
    }
}

/* Whether the launch must stop now (Ctrl-C or the watchdog); records the fault if so. */
__attribute__((noinline, cold)) int
emu_must_stop(block *b, warp *w)
{
    b->poll = POLL_EVERY;
    int interrupted = __atomic_load_n(&emu_interrupts, __ATOMIC_RELAXED) != b->interrupts;
    if (!interrupted && (b->deadline == 0 || emu_now_ns() < b->deadline))
        return 0;
    if (b->fault)
        return 1;
    char lines[700] = "between two blocks";
    if (w)
        warp_lines(b, lines, sizeof lines);
    b->fault = 1;
    b->err = CUDA_ERROR_LAUNCH_TIMEOUT;
    if (interrupted)
        snprintf(b->why, sizeof b->why, "the kernel %s was interrupted (Ctrl-C) in block (%u, %u, %u): "
                 "%s", b->f->name, b->bid[0], b->bid[1], b->bid[2], lines);
    else
        snprintf(b->why, sizeof b->why, "the kernel %s ran past CUKIT_EMULATOR_TIMEOUT (%s s); in "
                 "block (%u, %u, %u): %s. A loop that never ends? (raise the limit if the kernel "
                 "is only slow)", b->f->name, getenv("CUKIT_EMULATOR_TIMEOUT"), b->bid[0],
                 b->bid[1], b->bid[2], lines);
    return 1;
}

/* For the fast 4-byte access: a is in the last allocation hit when a - b->lo < this. */
static inline uint64_t
fit4(const block *b)
{
    return b->hi - b->lo >= 4 ? b->hi - b->lo - 3 : 0;
}

/* A backward branch (to target, taken by lanes m) every POLL_EVERY: look for Ctrl-C
 * and the watchdog (a kernel that never ends must still be stoppable), then take the
 * branch and yield, to the warp's other lanes and to the block's other warps, so that
 * a lane or warp spinning on a flag that another sets lets it run (independent thread
 * scheduling, sm_70 on). 0, or -1 after recording a fault. */
__attribute__((noinline, cold)) static int
take_turn(block *b, warp *w, uint32_t m, uint32_t target)
{
    if (emu_must_stop(b, w))
        return -1;
    b->turns++;
    if (m == w->mask) {
        w->pc = target;
        if (target > w->wmin) {
            set_group_pc(w, w->mask, target);
            emu_reschedule(w);
        }
        else if (target == w->wmin)
            merge(w);
    }
    else if (m == 0) {
        w->pc++;
        if (w->pc == w->wmin)
            merge(w);
    }
    else {
        set_group_pc(w, m, target);
        set_group_pc(w, w->mask & ~m, w->pc + 1);
        emu_reschedule(w);
    }
    if (w->state == W_RUN)
        next_group(w);
    return 0;
}

/* Whether the group m of w may enter the block's barrier (bar.sync without a count, or
 * bar.red): all of the group, and no lanes of w waiting at a named barrier. 0, or -1 with
 * the fault recorded. */
__attribute__((noinline, cold)) static int
full_bar_refused(block *b, warp *w, uint32_t m, const char *what)
{
    char text[200];
    if (m != w->mask)
        snprintf(text, sizeof text, "%s under a predicate that is false for some threads", what);
    else
        snprintf(text, sizeof text, "%s while other threads of the warp wait at a named barrier: "
                 "threads of one warp wait at two barriers", what);
    emu_fault_text(b, w, __builtin_ctz(m != w->mask ? w->mask & ~m : w->mask),
                   CUDA_ERROR_ILLEGAL_INSTRUCTION, text);
    return -1;
}

/* The barrier a bar.sync or bar.red without a count waits at (its operand a, in slot):
 * the same for every lane, 0 to 15; noted in w->fullid. 0, or -1 with the fault recorded. */
__attribute__((noinline)) static int
full_bar_id(block *b, warp *w, uint32_t m, int slot, const char *what)
{
    const uint64_t *A = w->R + (size_t)slot * 32;
    const int lane = __builtin_ctz(m);
    const uint32_t id = (uint32_t)A[lane];
    char text[200];
    for (uint32_t k = m; k; k &= k - 1) {
        const int l = __builtin_ctz(k);
        if ((uint32_t)A[l] != id) {
            snprintf(text, sizeof text, "the threads of a warp name different barriers in one %s "
                     "(lane %d: %u; lane %d: %u): they must agree", what, lane, id, l, (uint32_t)A[l]);
            emu_fault_text(b, w, l, CUDA_ERROR_ILLEGAL_INSTRUCTION, text);
            return -1;
        }
    }
    if (id > 15) {
        snprintf(text, sizeof text, "%s %u: a block has barriers 0 to 15", what, id);
        emu_fault_text(b, w, lane, CUDA_ERROR_ILLEGAL_INSTRUCTION, text);
        return -1;
    }
    w->fullid = (int)id;
    return 0;
}

/* bar.red (__syncthreads_count/and/or): the warp's share of the block's reduction, then
 * it waits at the barrier. */
__attribute__((noinline)) static int
op_barred(block *b, warp *w, const emu_inst *in, uint32_t m)
{
    if (m != w->mask || w->barn_lanes)
        return full_bar_refused(b, w, m, "bar.red");
    if (full_bar_id(b, w, m, in->s[1], "bar.red") < 0)
        return -1;
    uint32_t p = w->P[in->s[0]];
    if (in->vec)
        p = ~p;
    p &= m;
    b->red_popc += (uint32_t)__builtin_popcount(p);
    b->red_all &= p == m;
    b->red_any |= p != 0;
    w->red_pc = w->pc;
    set_group_pc(w, w->mask, w->pc + 1);
    w->barwait |= w->mask;
    w->mask = 0;
    emu_reschedule(w);
    return 0;
}

/* bar.sync a, b and bar.arrive a, b: named barrier a (0 to 15) of b threads, counted in
 * whole warps (PTX: a warp arrives when its threads that have not exited do; b is a
 * multiple of 32; bar.sync a alone is OP_BAR, full_bar_id). The lanes of a warp gather at the instruction
 * (lanes the emulator ran apart, or that exit, come there or leave first), then the warp
 * arrives: barn_arrive. The warp that completes the barrier releases the warps waiting
 * at it and goes on; otherwise sync waits, arrive goes on. A barrier nobody can complete
 * is a fault (grid.c's named_deadlock), not a hang. */
__attribute__((noinline)) int
emu_barn_arrive(block *b, warp *w)
{
    const int id = w->barn_id;
    const uint32_t want = w->barn_want;
    const int arrive = b->f->code[w->barn_pc].type2;
    w->barn_pc = NOPC;
    w->barn_lanes = 0;
    if (b->nb_expect[id] && b->nb_expect[id] != want) {
        char text[200];
        snprintf(text, sizeof text, "bar.%s %d, %u: the barrier is waited on with another thread "
                 "count (%d) now", arrive ? "arrive" : "sync", id, 32 * want,
                 32 * b->nb_expect[id]);
        emu_fault_text(b, w, __builtin_ctz(w->live), CUDA_ERROR_ILLEGAL_INSTRUCTION, text);
        return -1;
    }
    b->nb_expect[id] = (uint8_t)want;
    if (++b->nb_arrived[id] == want) {
        b->nb_arrived[id] = b->nb_expect[id] = 0;
        b->epoch++;
        for (int i = 0; i < b->nwarps; i++) {
            warp *x = &b->warps[i];
            if (x != w && x->state == W_BAR && x->barid == id) {
                x->barwait = 0;
                x->barid = -1;
                emu_reschedule(x);
            }
        }
        w->barwait = 0;
    }
    else if (arrive)
        w->barwait = 0;
    else
        w->barid = id;
    emu_reschedule(w);
    return 0;
}

__attribute__((noinline)) static int
op_barn(block *b, warp *w, const emu_inst *in, uint32_t m)
{
    int lane = __builtin_ctz(m);
    const char *bad = NULL;
    if (m != w->mask)
        bad = "under a predicate that is false for some threads";
    else if (w->barwait & ~w->barn_lanes)
        bad = "while other threads of the warp wait at bar.sync without a count: threads of one "
              "warp wait at two barriers";
    else if (w->barn_pc != NOPC && w->barn_pc != w->pc)
        bad = "while other threads of the warp wait at another bar.sync or bar.arrive: threads of "
              "one warp wait at two barriers";
    char text[300];
    if (bad) {
        snprintf(text, sizeof text, "bar.%s %s", in->type2 ? "arrive" : "sync", bad);
        emu_fault_text(b, w, lane, CUDA_ERROR_ILLEGAL_INSTRUCTION, text);
        return -1;
    }
    const uint64_t *A = w->R + (size_t)in->s[0] * 32;
    const uint64_t *N = w->R + (size_t)in->s[1] * 32;
    uint32_t id = (uint32_t)A[lane], n = (uint32_t)N[lane];
    for (uint32_t k = m; k; k &= k - 1) {
        int l = __builtin_ctz(k);
        if ((uint32_t)A[l] != id || (uint32_t)N[l] != n) {
            snprintf(text, sizeof text, "the threads of a warp name different barriers or "
                     "thread counts in one bar.sync or bar.arrive (lane %d: %u, %u; lane %d: "
                     "%u, %u): they must agree", lane, id, n, l, (uint32_t)A[l],
                     (uint32_t)N[l]);
            emu_fault_text(b, w, l, CUDA_ERROR_ILLEGAL_INSTRUCTION, text);
            return -1;
        }
    }
    if (w->barn_pc != NOPC && ((uint32_t)w->barn_id != id || 32 * w->barn_want != n))
        bad = "the threads of a warp name different barriers or thread counts: they must agree";
    else if (id > 15)
        bad = "a block has barriers 0 to 15";
    else if (n == 0 || n % 32 || n > 32u * (uint32_t)b->nwarps)
        bad = "a thread count is a multiple of 32, from 32 up to the block's threads in whole warps";
    if (bad) {
        snprintf(text, sizeof text, "bar.%s %u, %u: %s (%d threads in this block)",
                 in->type2 ? "arrive" : "sync", id, n, bad, 32 * b->nwarps);
        emu_fault_text(b, w, lane, CUDA_ERROR_ILLEGAL_INSTRUCTION, text);
        return -1;
    }
    set_group_pc(w, w->mask, w->pc + 1);
    w->barwait |= w->mask;
    w->barn_lanes |= w->mask;
    w->barn_pc = w->pc;
    w->barn_id = (int)id;
    w->barn_want = n / 32;
    w->mask = 0;
    if (w->barn_lanes == w->live)
        return emu_barn_arrive(b, w);
    emu_reschedule(w); /* the warp's other lanes run on to here, or exit */
    return 0;
}

/* setp: the comparison for each lane of m, combined with a predicate (.and/.or/.xor),
 * to p and its negation to q. Inlined into the switch: it runs in nearly every loop, and
 * the common integer comparisons have lanes loops of their own. */
__attribute__((always_inline)) static inline void
op_setp(warp *w, const emu_inst *in, uint32_t m, const uint64_t *A, const uint64_t *Bv)
{
    uint32_t *P = w->P;
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
        LANES(m, bits |= (uint32_t)emu_compare(cmp, t, A[l], Bv[l]) << l);
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
}

/* Run warp w until it exits, waits at a barrier, or faults.
 *
 * One function over 150 lines, on purpose: this is the interpreter's dispatch loop, and
 * every thread-instruction the emulator runs passes through it. The common instructions
 * (moves, integer and float arithmetic, setp, cvt, 4-byte loads and stores, branches)
 * keep their lanes loops in the switch, so that the compiler holds the warp's register
 * pointers, mask and count in machine registers across iterations and goes from one
 * case to the next without a call (with one lane running, the call alone would be a
 * large part of an instruction's time). Everything rarer is one call (emu_op_*, in
 * rare.c) per instruction, not per lane. */
void
emu_run_warp(block *b, warp *w)
{
    const emu_inst *code = b->f->code;
    uint64_t *R = w->R;
    uint32_t *P = w->P;
    uint64_t count = 0;
    while (w->state == W_RUN) {
        const emu_inst *in = &code[w->pc];
        uint32_t m = w->mask;
        if (in->guard >= 0)
            m &= in->gneg ? ~P[in->guard] : P[in->guard];
        count += lanes_in(m);
        uint64_t *Dd = R + (size_t)in->d[0] * 32;
        const uint64_t *A = R + (size_t)in->s[0] * 32;
        const uint64_t *Bv = R + (size_t)in->s[1] * 32;
        const uint64_t *C = R + (size_t)in->s[2] * 32;
        switch (in->op) {
        case OP_BARWARP:
            w->wsync++;
            if (b->check & EMU_CHECK_SYNC)
                emu_syncwarp_check(b, w, in, m);
            break;
        case OP_NOP:
        case OP_FENCE:
            break;
        case OP_MOV: LANES(m, Dd[l] = A[l]); break;
        case OP_MOVP: P[in->d[0]] = (P[in->d[0]] & ~m) | (P[in->s[0]] & m); break;
        case OP_PCONST: P[in->d[0]] = (P[in->d[0]] & ~m) | (in->imm ? m : 0); break;
        case OP_PACK: emu_op_pack(w, in, m); break;
        case OP_UNPACK: emu_op_unpack(w, in, m); break;
        case OP_MOVN: emu_op_movn(w, in, m); break;
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
        case OP_FADD32: LANES(m, Dd[l] = UFC(F(A[l]) + F(Bv[l]))); break;
        case OP_FSUB32: LANES(m, Dd[l] = UFC(F(A[l]) - F(Bv[l]))); break;
        case OP_FMUL32: LANES(m, Dd[l] = UFC(F(A[l]) * F(Bv[l]))); break;
        case OP_FFMA32:
            if (in->imm)
                ffma_neg(w, in, m);
            else
                fma32_lanes(m, Dd, A, Bv, C);
            break;
        case OP_FADD64: LANES(m, Dd[l] = UDN(D(A[l]) + D(Bv[l]), Bv[l], 0)); break;
        case OP_FSUB64: LANES(m, Dd[l] = UDN(D(A[l]) - D(Bv[l]), Bv[l], 0)); break;
        case OP_FMUL64: LANES(m, Dd[l] = UDN(D(A[l]) * D(Bv[l]), Bv[l], 0)); break;
        case OP_FFMA64:
            if (in->imm)
                ffma_neg(w, in, m);
            else
                fma64_lanes(m, Dd, A, Bv, C);
            break;
        case OP_INT: emu_op_int(w, in, m); break;
        case OP_FLT: emu_op_flt(w, in, m); break;
        case OP_SETP: op_setp(w, in, m, A, Bv); break;
        case OP_SET: emu_op_set(w, in, m); break;
        case OP_SELP: {
            uint32_t p = P[in->s[2]];
            if (in->vec)
                p = ~p;
            LANES(m, Dd[l] = ((p >> l) & 1) ? A[l] : Bv[l]);
            break;
        }
        case OP_SLCT: emu_op_slct(w, in, m); break;
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
            case 4: LANES(m, Dd[l] = emu_convert_f8x2(in, A[l], Bv[l])); break;
            case 5: LANES(m, Dd[l] = emu_convert_f8x2(in, A[l], 0)); break;
            default: LANES(m, Dd[l] = emu_convert(in, A[l])); break;
            }
            break;
        case OP_CVTA_SHARED: LANES(m, Dd[l] = A[l] + (uint64_t)(uintptr_t)b->shared); break;
        case OP_CVTA_TO_SHARED: LANES(m, Dd[l] = A[l] - (uint64_t)(uintptr_t)b->shared); break;
        case OP_CVTA_LOCAL:
            LANES(m, Dd[l] = A[l] + (uint64_t)(uintptr_t)(b->local + (size_t)(w->index * 32 + l) * b->local_stride));
            break;
        case OP_CVTA_TO_LOCAL:
            LANES(m, Dd[l] = A[l] - (uint64_t)(uintptr_t)(b->local + (size_t)(w->index * 32 + l) * b->local_stride));
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
            int sp = in->space;
            if (n == 1 && (sp == SP_GLOBAL || sp == SP_GENERIC) && sz == 4 && t != TY_S32 && !in->wrap32) {
                /* a - lo < room: inside [lo, hi - 4] with no sum that can wrap around
                 * (an address near 2^64 plus 4 would pass a + 4 <= hi) */
                uint64_t lo = b->lo, room = fit4(b);
                LANES(m, {
                    uint64_t a = Ad[l] + (uint64_t)in->imm;
                    if (a - lo < room && !(a & 3))
                        Dd[l] = *(const uint32_t *)(uintptr_t)a;
                    else {
                        const void *q = emu_resolve(b, w, l, sp, a, 4, 0);
                        if (q == NULL)
                            return;
                        Dd[l] = *(const uint32_t *)q;
                        lo = b->lo;
                        room = fit4(b);
                    }
                });
                break;
            }
            if (emu_op_ld_any(b, w, in, m) < 0)
                return;
            break;
        }
        case OP_ST: {
            const uint64_t *Ad = R + (size_t)in->addr * 32;
            int sz = emu_type_size(in->type), n = in->vec;
            int sp = in->space;
            if (n == 1 && (sp == SP_GLOBAL || sp == SP_GENERIC) && sz == 4 && !in->wrap32) {
                /* a - lo < room: inside [lo, hi - 4] with no sum that can wrap around
                 * (an address near 2^64 plus 4 would pass a + 4 <= hi) */
                uint64_t lo = b->lo, room = fit4(b);
                LANES(m, {
                    uint64_t a = Ad[l] + (uint64_t)in->imm;
                    if (a - lo < room && !(a & 3))
                        *(uint32_t *)(uintptr_t)a = (uint32_t)A[l];
                    else {
                        void *q = emu_resolve(b, w, l, sp, a, 4, 1);
                        if (q == NULL)
                            return;
                        *(uint32_t *)q = (uint32_t)A[l];
                        lo = b->lo;
                        room = fit4(b);
                    }
                });
                break;
            }
            if (emu_op_st_any(b, w, in, m) < 0)
                return;
            break;
        }
        case OP_ATOM:
        case OP_RED:
            if (emu_op_atom(b, w, in, m) < 0)
                return;
            break;
        case OP_BRA: {
            uint32_t target = (uint32_t)in->imm;
            /* A loop now and then takes its turn (take_turn): out of the hot path */
            if (target <= w->pc && --b->poll == 0) {
                if (take_turn(b, w, m, target) == 0)
                    b->icount += count;
                return;
            }
            if (m == w->mask) {
                w->pc = target;
                if (target > w->wmin) {
                    set_group_pc(w, w->mask, target);
                    emu_reschedule(w);
                }
                else if (target == w->wmin)
                    merge(w);
                continue;
            }
            if (m == 0)
                break;
            set_group_pc(w, m, target);
            set_group_pc(w, w->mask & ~m, w->pc + 1);
            emu_reschedule(w);
            continue;
        }
        case OP_EXIT:
            w->live &= ~m;
            w->mask &= ~m;
            if (w->barn_pc != NOPC && w->live && w->barn_lanes == w->live) {
                /* the rest of the warp waits at a named barrier: now it arrives */
                if (emu_barn_arrive(b, w) < 0)
                    return;
                continue;
            }
            if (w->mask == 0) {
                emu_reschedule(w);
                continue;
            }
            break;
        case OP_BAR:
            if (m != w->mask || w->barn_lanes) {
                full_bar_refused(b, w, m, "bar.sync");
                return;
            }
            if (full_bar_id(b, w, m, in->s[0], "bar.sync") < 0)
                return;
            if (b->check & EMU_CHECK_SYNC && w->barwait &&
                w->lpc[__builtin_ctz(w->barwait)] != w->pc + 1) /* lanes at another bar.sync */
                emu_split_bar_check(b, w);
            set_group_pc(w, w->mask, w->pc + 1);
            w->barwait |= w->mask;
            w->mask = 0;
            emu_reschedule(w);
            continue;
        case OP_BARRED:
            if (op_barred(b, w, in, m) < 0)
                return;
            continue;
        case OP_BARN:
            if (m == 0)
                break;
            if (op_barn(b, w, in, m) < 0)
                return;
            continue;
        case OP_REDUX: emu_op_redux(w, in, m); break;
        case OP_SHFL: emu_op_shfl(w, in, m); break;
        case OP_VOTE: emu_op_vote(w, in, m); break;
        case OP_ACTIVEMASK: LANES(m, Dd[l] = m); break;
        case OP_MATCH_ANY:
        case OP_MATCH_ALL: emu_op_match(w, in, m); break;
        case OP_PRINTF:
            if (m && emu_op_printf(b, w, in, m) < 0)
                return;
            break;
        case OP_CPASYNC:
            if (m && emu_op_cpasync(b, w, in, m) < 0)
                return;
            break;
        case OP_TEX:
        case OP_SULD:
        case OP_SUST:
            if (m && emu_texture_op(b, w, in, m) < 0)
                return;
            break;
        case OP_TRAP:
            if (m) {
                emu_fault_text(b, w, __builtin_ctz(m), CUDA_ERROR_LAUNCH_FAILED,
                           "the kernel executed trap (or a failed assert)");
                return;
            }
            break;
        case OP_CLOCK:
        case OP_CLOCK64:
        case OP_GLOBALTIMER: emu_op_clock(w, in, m); break;
        default:
            emu_fault_text(b, w, __builtin_ctz(w->mask), CUDA_ERROR_ILLEGAL_INSTRUCTION,
                       "the emulator met an instruction it cannot run");
            return;
        }
        w->pc++;
        if (w->pc == w->wmin)
            merge(w);
    }
    b->icount += count;
}

