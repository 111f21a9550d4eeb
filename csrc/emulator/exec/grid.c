/* grid.c - runs a launch's grid: blocks of warps spread over CPU threads, the watchdog and Ctrl-C (split from warp.c, which runs one warp) */
#include "emulator/exec/check.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ blocks */

static void warp_start(block *b, warp *w, int all);

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
    b->local_stride = (f->local_bytes + 15) / 16 * 16;
    b->warps = calloc((size_t)b->nwarps, sizeof *b->warps);
    b->regs = malloc((size_t)b->nwarps * (size_t)(f->nslots ? f->nslots : 1) * 32 * sizeof(uint64_t));
    b->preds = calloc((size_t)b->nwarps * (size_t)(f->npreds + 1), sizeof(uint32_t));
    b->shared = calloc(1, b->shared_size ? b->shared_size : 1);
    b->local = calloc(1, (size_t)b->nwarps * 32 * b->local_stride + 1);
    /* the checkers: read once here, for the whole launch */
    b->check = __atomic_load_n(&emu_checks, __ATOMIC_RELAXED);
    if (b->check & EMU_CHECK_RACE)
        b->race = calloc(b->shared_size + 1, sizeof *b->race);
    if (!b->warps || !b->regs || !b->preds || !b->shared || !b->local ||
        (b->check & EMU_CHECK_RACE && !b->race))
        return -1;
    for (int i = 0; i < b->nwarps; i++) {
        b->warps[i].R = b->regs + (size_t)i * (size_t)f->nslots * 32;
        b->warps[i].P = b->preds + (size_t)i * (size_t)(f->npreds + 1);
        b->warps[i].index = i;
        warp_start(b, &b->warps[i], 1);
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
    free(b->race);
    emu_race_free(b);
}

/* The value of prefilled slot pf in lane l of warp w. */
static uint64_t
prefill_value(const block *b, const warp *w, const emu_prefill *pf, int l)
{
    const emu_launch *L = b->L;
    unsigned bx = L->block[0], by = L->block[1];
    unsigned t = (unsigned)(w->index * 32 + l);
    switch (pf->kind) {
    case SR_CONST: return pf->value;
    case SR_TID_X: return t % bx;
    case SR_TID_Y: return (t / bx) % by;
    case SR_TID_Z: return t / (bx * by);
    case SR_NTID_X: return L->block[0];
    case SR_NTID_Y: return L->block[1];
    case SR_NTID_Z: return L->block[2];
    case SR_CTAID_X: return b->bid[0];
    case SR_CTAID_Y: return b->bid[1];
    case SR_CTAID_Z: return b->bid[2];
    case SR_NCTAID_X: return L->grid[0];
    case SR_NCTAID_Y: return L->grid[1];
    case SR_NCTAID_Z: return L->grid[2];
    case SR_LANEID: return (uint64_t)l;
    case SR_WARPID: return (uint64_t)w->index;
    case SR_NWARPID: return (uint64_t)b->nwarps;
    case SR_NSMID: case SR_GRIDID: return 1;
    case SR_LANEMASK_EQ: return 1u << l;
    case SR_LANEMASK_LT: return (1u << l) - 1;
    case SR_LANEMASK_LE: return (uint32_t)((2ull << l) - 1);
    case SR_LANEMASK_GT: return (uint32_t)~((2ull << l) - 1);
    case SR_LANEMASK_GE: return (uint32_t)~((1u << l) - 1);
    case SR_DYN_SMEM: return L->shared_dyn;
    case SR_TOTAL_SMEM: return b->shared_size;
    case SR_DYNBASE: return (b->f->shared_static + 15) / 16 * 16 + pf->value;
    default: return 0;
    }
}

static int
per_block(int kind)
{
    return kind == SR_CTAID_X || kind == SR_CTAID_Y || kind == SR_CTAID_Z;
}

/* Start warp w of a block. Constants and special registers are written once per
 * launch (`all`): no instruction writes them; only the block indices change. */
static void
warp_start(block *b, warp *w, int all)
{
    const emu_func *f = b->f;
    uint32_t live = 0;
    for (int l = 0; l < 32; l++) {
        if ((unsigned)(w->index * 32 + l) < b->nthreads)
            live |= 1u << l;
    }
    for (int i = 0; i < f->nprefill; i++) {
        const emu_prefill *pf = &f->prefill[i];
        if (!all && !per_block(pf->kind))
            continue;
        uint64_t *d = w->R + (size_t)pf->slot * 32;
        if (pf->kind == SR_CONST) {
            for (int l = 0; l < 32; l++)
                d[l] = pf->value;
        }
        else {
            for (int l = 0; l < 32; l++)
                d[l] = prefill_value(b, w, pf, l);
        }
    }
    memset(w->P, 0, (size_t)(f->npreds + 1) * sizeof(uint32_t));
    w->pc = 0;
    w->mask = live;
    w->live = live;
    w->barwait = 0;
    w->wmin = NOPC;
    w->cc = 0;
    w->red_pc = NOPC;
    w->barid = -1;
    w->fullid = 0;
    w->barn_pc = NOPC;
    w->barn_lanes = 0;
    w->state = live ? W_RUN : W_DONE;
}

/* The lanes of w waiting at bar.red get its result: the count, or the and / or. */
__attribute__((noinline, cold)) static void
answer_bar_red(block *b, warp *w)
{
    const emu_inst *in = &b->f->code[w->red_pc];
    uint32_t lanes = w->barwait;
    if (in->type2 == 0) {
        uint64_t *d = w->R + (size_t)in->d[0] * 32;
        for (uint32_t m = lanes; m; m &= m - 1)
            d[__builtin_ctz(m)] = b->red_popc;
    }
    else {
        int r = in->type2 == 1 ? b->red_all : b->red_any;
        w->P[in->d[0]] = (w->P[in->d[0]] & ~lanes) | (r ? lanes : 0);
    }
    w->red_pc = NOPC;
}

/* No warp runs and one waits at a named barrier that is not complete: on a GPU the block
 * would wait forever. Records the fault (-1), or 0 when every waiting warp is at
 * bar.sync 0's barrier (released by the caller). */
__attribute__((noinline, cold)) static int
named_deadlock(block *b)
{
    int id = -1;
    for (int i = 0; i < b->nwarps && id < 0; i++)
        if (b->warps[i].state == W_BAR && b->warps[i].barid >= 0)
            id = b->warps[i].barid;
    if (id < 0)
        return 0;
    char text[300];
    snprintf(text, sizeof text, "every warp of the block waits and none can go on: named barrier "
             "%d waits for %d threads and %d have arrived (a warp that exits, or takes another "
             "path, never arrives; a GPU would hang here)", id, 32 * b->nb_expect[id],
             32 * b->nb_arrived[id]);
    for (int i = 0; i < b->nwarps; i++)
        if (b->warps[i].state == W_BAR && b->warps[i].barid == id) {
            emu_fault_text(b, &b->warps[i], __builtin_ctz(b->warps[i].live), CUDA_ERROR_LAUNCH_TIMEOUT,
                           text);
            break;
        }
    return -1;
}

/* Every warp left waits at a barrier without a count: on a GPU those at barrier a wait
 * for every thread of the block at a, so warps at two such barriers would hang. Records
 * the fault (-1), or 0 when all wait at one. */
__attribute__((noinline, cold)) static int
full_bars_split(block *b)
{
    const warp *first = NULL;
    for (int i = 0; i < b->nwarps; i++) {
        const warp *w = &b->warps[i];
        if (w->state != W_BAR)
            continue;
        if (first == NULL)
            first = w;
        else if (w->fullid != first->fullid) {
            char text[300];
            snprintf(text, sizeof text, "every warp of the block waits and none can go on: warp %d "
                     "waits at barrier %d and warp %d at barrier %d, each for every thread of the "
                     "block (bar.sync without a count; a GPU would hang here)", first->index,
                     first->fullid, w->index, w->fullid);
            emu_fault_text(b, (warp *)w, __builtin_ctz(w->live), CUDA_ERROR_LAUNCH_TIMEOUT, text);
            return -1;
        }
    }
    return 0;
}

/* Start block `linear` of the grid in b (made by block_init). */
static void
block_begin(block *b, uint64_t linear)
{
    const emu_launch *L = b->L;
    b->bid[0] = (unsigned)(linear % L->grid[0]);
    b->bid[1] = (unsigned)((linear / L->grid[0]) % L->grid[1]);
    b->bid[2] = (unsigned)(linear / ((uint64_t)L->grid[0] * L->grid[1]));
    if (b->f->shared_static || L->shared_dyn)
        memset(b->shared, 0, b->shared_size);
    b->red_popc = 0;
    b->red_all = 1;
    b->red_any = 0;
    b->turns = 0;
    b->epoch++;
    if (b->race)
        emu_race_block_begin(b);
    memset(b->nb_arrived, 0, sizeof b->nb_arrived);
    memset(b->nb_expect, 0, sizeof b->nb_expect);
    for (int i = 0; i < b->nwarps; i++)
        warp_start(b, &b->warps[i], 0);
}

/* One pass over the block's warps, each running until it ends, waits at a barrier or
 * yields in a loop. 1 when the block has ended, 0 when it has more to run, -1 on a fault
 * (in b->why). */
static int
block_pass(block *b)
{
    int running = 0, waiting = 0;
    for (int i = 0; i < b->nwarps; i++) {
        warp *w = &b->warps[i];
        if (w->state == W_RUN) {
            emu_run_warp(b, w);
            if (b->fault)
                return -1;
        }
    }
    /* counted after the pass: a warp that completes a named barrier releases warps
     * the pass has already visited */
    for (int i = 0; i < b->nwarps; i++) {
        running += b->warps[i].state == W_RUN;
        waiting += b->warps[i].state == W_BAR;
    }
    if (waiting == 0 && running == 0)
        return 1;
    if (running == 0 && (named_deadlock(b) || full_bars_split(b)))
        return -1;
    if (running == 0) {
        /* every thread still alive waits at the barrier: release it, with the
         * answer of a bar.red */
        if (b->check & EMU_CHECK_SYNC)
            emu_barrier_of_some(b);
        b->epoch++;
        for (int i = 0; i < b->nwarps; i++) {
            warp *w = &b->warps[i];
            if (w->state == W_BAR) {
                if (w->red_pc != NOPC)
                    answer_bar_red(b, w);
                w->barwait = 0;
                emu_reschedule(w);
            }
        }
        b->red_popc = 0;
        b->red_all = 1;
        b->red_any = 0;
    }
    return 0;
}

/* ------------------------------------------------------------------ the grid
 *
 * Each CPU thread runs one block at a time while its blocks end. A block whose warps
 * keep looping (LONG_TURNS yields) may be waiting for another block, as a block that
 * spins on a flag a later block sets does; a GPU runs up to a wave of blocks at once, so
 * the thread then takes the next block of the grid as well and runs its blocks in turn,
 * one pass each, up to its share of one wave of the emulated GPU. A block that ends
 * gives its place to the next block of the grid. */

#define LONG_TURNS 8u
#define EMU_SMS 132 /* an H100's multiprocessors */

typedef struct {
    const emu_launch *L;
    uint64_t nblocks;       /* up to (2^31 - 1) * 65535 * 65535: 64 bits */
    uint64_t next;          /* atomic: the next block to run */
    uint64_t deadline;      /* CLOCK_MONOTONIC ns (0: no watchdog) */
    unsigned interrupts;    /* emu_interrupts at the start */
    int stop;               /* atomic: a block faulted */
    int resident;           /* blocks one CPU thread may run at once (its share of a wave) */
    pthread_mutex_t lock;
    CUresult err;
    char *why;
    size_t whylen;
} grid_job;

/* The blocks one wave of the emulated GPU holds: 2048 threads and 32 blocks per
 * multiprocessor, and its shared memory (227 KiB). */
static uint64_t
wave_blocks(const emu_launch *L, size_t shared_per_block)
{
    uint64_t threads = (uint64_t)L->block[0] * L->block[1] * L->block[2];
    uint64_t per_sm = threads ? 2048 / threads : 1;
    if (per_sm > 32)
        per_sm = 32;
    if (shared_per_block && 227 * 1024 / shared_per_block < per_sm)
        per_sm = 227 * 1024 / shared_per_block;
    return (per_sm ? per_sm : 1) * EMU_SMS;
}

/* Record block b's fault as the launch's and stop every thread. */
static void
grid_fault(grid_job *g, const block *b)
{
    pthread_mutex_lock(&g->lock);
    if (g->err == CUDA_SUCCESS) {
        g->err = b->err;
        snprintf(g->why, g->whylen, "%s", b->why);
    }
    pthread_mutex_unlock(&g->lock);
    __atomic_store_n(&g->stop, 1, __ATOMIC_SEQ_CST);
}

/* A block of this thread, made when first needed. */
typedef struct {
    block b;
    int made;  /* block_init ran (block_free is owed) */
    int busy;  /* it runs a block of the grid now */
} seat;

/* Take the grid's next block into seat s. 1 taken, 0 none left, -1 out of memory. */
static int
seat_take(grid_job *g, seat *s)
{
    if (!s->made) {
        s->made = 1;
        if (block_init(&s->b, g->L) < 0)
            return -1;
        s->b.deadline = g->deadline;
        s->b.interrupts = g->interrupts;
        s->b.poll = POLL_EVERY;
    }
    uint64_t i = __atomic_fetch_add(&g->next, 1, __ATOMIC_RELAXED);
    if (i >= g->nblocks)
        return 0;
    block_begin(&s->b, i);
    s->busy = 1;
    return 1;
}

static void *
worker(void *arg)
{
    grid_job *g = arg;
    seat *seats = calloc((size_t)g->resident, sizeof *seats);
    int nseats = 0, busy = 0, more = 1;
    uint64_t ran = 0;
    if (seats == NULL)
        goto oom;
    while (!__atomic_load_n(&g->stop, __ATOMIC_RELAXED)) {
        /* every block here loops long: take one more, up to the thread's share of a wave */
        int all_long = busy > 0;
        for (int k = 0; k < nseats && all_long; k++)
            all_long = !seats[k].busy || seats[k].b.turns >= LONG_TURNS;
        if (more && (busy == 0 || (all_long && nseats < g->resident))) {
            int k = 0;
            while (k < nseats && seats[k].busy)
                k++;
            int rc = seat_take(g, &seats[k]);
            nseats += k == nseats;
            if (rc < 0)
                goto oom;
            more = rc;
            busy += rc;
            if (rc && (ran++ & 255) == 255 && emu_must_stop(&seats[k].b, NULL)) {
                /* a grid of many short blocks is stopped between them */
                grid_fault(g, &seats[k].b);
                break;
            }
        }
        if (busy == 0)
            break;
        for (int k = 0; k < nseats; k++) {
            seat *s = &seats[k];
            if (!s->busy)
                continue;
            int rc = block_pass(&s->b);
            if (rc < 0) {
                grid_fault(g, &s->b);
                break;
            }
            if (rc == 1) {
                s->busy = 0;
                busy--;
                if (more && nseats > 1) { /* its place to the next block */
                    int got = seat_take(g, s);
                    if (got < 0)
                        goto oom;
                    more = got;
                    busy += got;
                }
            }
        }
    }
    goto done;
oom:
    pthread_mutex_lock(&g->lock);
    if (g->err == CUDA_SUCCESS) {
        g->err = CUDA_ERROR_OUT_OF_MEMORY;
        snprintf(g->why, g->whylen, "the emulator ran out of host memory for a block's registers");
    }
    pthread_mutex_unlock(&g->lock);
    __atomic_store_n(&g->stop, 1, __ATOMIC_SEQ_CST);
done:
    for (int k = 0; seats && k < nseats; k++) {
        __atomic_fetch_add(&emu_thread_instructions, seats[k].b.icount, __ATOMIC_RELAXED);
        block_free(&seats[k].b);
    }
    free(seats);
    return NULL;
}

/* CUKIT_EMULATOR_THREADS: a whole number of threads, at least 1 (more than 256 are 256);
 * 0 when unset, -1 when it is set to something else. */
static long
threads_setting(void)
{
    const char *env = getenv("CUKIT_EMULATOR_THREADS");
    if (env == NULL || env[0] == '\0')
        return 0;
    char *end;
    long v = strtol(env, &end, 10);
    while (*end == ' ')
        end++;
    return end == env || *end != '\0' || v < 1 ? -1 : v;
}

int
emu_threads_setting_ok(void)
{
    return threads_setting() >= 0;
}

int
emu_thread_count(void)
{
    static int n = 0;
    if (n == 0) {
        long v = threads_setting();
        if (v <= 0)
            v = sysconf(_SC_NPROCESSORS_ONLN);
        n = v < 1 ? 1 : v > 256 ? 256 : (int)v;
    }
    return n;
}

CUresult
emu_run(const emu_launch *L, char *why, size_t whylen)
{
    if (emu_fma32_lanes_fn == NULL) {
        __builtin_cpu_init();
        int hw = __builtin_cpu_supports("fma");
        emu_fma32_lanes_fn = hw ? emu_fma32_hw : emu_fma32_sw;
        emu_fma64_lanes_fn = hw ? emu_fma64_hw : emu_fma64_sw;
    }
    const char *bad;
    double timeout = emu_timeout_seconds(&bad);
    if (timeout < 0) {
        snprintf(why, whylen, "CUKIT_EMULATOR_TIMEOUT=%s is not a number of seconds (such as 10 "
                 "or 0.5)", bad);
        return CUDA_ERROR_INVALID_VALUE;
    }
    emu_watch_sigint();
    grid_job g = {0};
    g.L = L;
    g.nblocks = (uint64_t)L->grid[0] * L->grid[1] * L->grid[2];
    g.deadline = timeout > 0 ? emu_now_ns() + (uint64_t)(timeout * 1e9) : 0;
    g.interrupts = __atomic_load_n(&emu_interrupts, __ATOMIC_SEQ_CST);
    g.err = CUDA_SUCCESS;
    g.why = why;
    g.whylen = whylen;
    pthread_mutex_init(&g.lock, NULL);
    unsigned long long work = (unsigned long long)g.nblocks * L->block[0] * L->block[1] * L->block[2];
    int nthreads = emu_thread_count();
    if ((uint64_t)nthreads > g.nblocks)
        nthreads = (int)g.nblocks;
    if (work < 16384)
        nthreads = 1;
    uint64_t wave = wave_blocks(L, L->f->shared_static + L->shared_dyn);
    uint64_t share = (wave + (uint64_t)nthreads - 1) / (uint64_t)nthreads;
    g.resident = share > 1024 ? 1024 : (int)share;
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

