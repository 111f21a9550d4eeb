/* check.c - the checkers' side of a running kernel: racecheck's shared-memory cells,
 * initcheck's bitmaps, synccheck's barriers, and the text that names a thread and its line */
#include "emulator/exec/check.h"

#include <stdlib.h>

/* ------------------------------------------------------------------ where */

static void
thread_at(const block *b, unsigned lin, unsigned t[3])
{
    const unsigned *bd = b->L->block;
    t[0] = lin % bd[0];
    t[1] = (lin / bd[0]) % bd[1];
    t[2] = lin / (bd[0] * bd[1]);
}

int
emu_where(const block *b, const warp *w, int lane, char *buf, size_t n)
{
    unsigned t[3];
    thread_at(b, (unsigned)(w->index * 32 + lane), t);
    const emu_inst *in = &b->f->code[w->pc];
    char line[256];
    emu_line_str(b->f->module, in->line, line, sizeof line);
    return snprintf(buf, n, "in kernel %s, block (%u, %u, %u), thread (%u, %u, %u)%s%s (PTX line %u)",
                    b->f->name, b->bid[0], b->bid[1], b->bid[2], t[0], t[1], t[2],
                    line[0] ? ", at " : "", line, in->ptxline);
}

void
emu_check_text(block *b, warp *w, int lane, int kind, uint64_t key, const char *what)
{
    char loc[512], text[1536];
    emu_where(b, w, lane, loc, sizeof loc);
    snprintf(text, sizeof text, "%s %s", what, loc);
    emu_check_report(kind, b->f, w->pc, key, text);
}

/* ------------------------------------------------------------------ accesses
 *
 * Called from emu_resolve (access.c): initcheck on each access to an allocation with a
 * bitmap, racecheck on each shared access of a launch with it on. */

/* "kernel.cu:5 (PTX line 35)" for instruction pc of b's kernel. */
static void
line_at(const block *b, uint32_t pc, char *buf, size_t n)
{
    const emu_inst *in = &b->f->code[pc];
    char line[256];
    emu_line_str(b->f->module, in->line, line, sizeof line);
    snprintf(buf, n, "%s%sPTX line %u%s", line, line[0] ? " (" : "", in->ptxline, line[0] ? ")" : "");
}

/* initcheck: with it on, a read (store 0) or atomic (2) of bytes never written is
 * reported; a write or atomic marks them written, on or not. */
void
emu_init_access(block *b, warp *w, int lane, const emu_alloc *a, uint64_t addr, unsigned size,
                int store)
{
    uint64_t off = addr - a->base;
    uint64_t bad = store == 1 || !(b->check & EMU_CHECK_INIT) ? UINT64_MAX
                                                                : emu_bits_unset(a->written, off, size);
    if (bad != UINT64_MAX) {
        char what[512];
        snprintf(what, sizeof what, "%u-byte %sglobal read of device memory never written, at address "
                 "0x%llx: byte %llu of a %llu-byte allocation made at %s (no copy, memset or "
                 "kernel wrote it)", size, store == 2 ? "atomic " : "",
                 (unsigned long long)addr, (unsigned long long)bad, (unsigned long long)a->size,
                 a->origin);
        emu_check_text(b, w, lane, EMU_CHECK_INIT, 0, what);
    }
    if (store)
        emu_bits_set(a->written, off, size);
}

/* Whether thread `tid`'s access (made when its warp's wsync was `sync`) is ordered before
 * this one of w without a block barrier: only by a bar.warp.sync of the same warp since. */
static inline int
warp_synced(const warp *w, uint32_t tid, uint32_t sync)
{
    return tid / 32 == (uint32_t)w->index && sync != w->wsync;
}

__attribute__((noinline, cold)) static void
hazard(block *b, warp *w, int lane, const char *kind, int store, uint32_t other, uint32_t other_pc,
       int other_store, uint64_t at, int global, unsigned size)
{
    unsigned t[3];
    char there[300], what[900];
    thread_at(b, other, t);
    line_at(b, other_pc, there, sizeof there);
    snprintf(what, sizeof what, "%s hazard on %s 0x%llx: thread (%u, %u, %u) %s it at %s, with "
             "no barrier between that and this %u-byte %s", kind,
             global ? "global memory at address" : "shared memory at offset", (unsigned long long)at,
             t[0], t[1], t[2], other_store ? "wrote" : "read", there, size, store ? "write" : "read");
    uint64_t key = (uint64_t)other_pc << 2 | (uint64_t)(store << 1 | other_store);
    emu_check_text(b, w, lane, EMU_CHECK_RACE, key, what);
}

/* racecheck: one byte's access by lane (store 1 a write) against its cell, which then
 * records it; 1 when it found a hazard, reported unless `quiet` (one report an access:
 * at names the byte). */
static int
race_byte(block *b, warp *w, int lane, race_cell *c, uint64_t at, int global, unsigned size,
          int store, int quiet)
{
    const uint32_t tid = (uint32_t)(w->index * 32 + lane), ep = b->epoch, pc = w->pc;
    int reported = quiet;
    if (!reported && c->wepoch == ep && c->wtid != tid && !warp_synced(w, c->wtid, c->wsync)) {
        hazard(b, w, lane, store ? "write-after-write" : "read-after-write", store, c->wtid, c->wpc,
               1, at, global, size);
        reported = 1;
    }
    if (c->repoch != ep) {
        c->repoch = ep;
        c->rtid[0] = c->rtid[1] = ~0u;
    }
    if (store) {
        for (int k = 0; k < 2 && !reported; k++)
            if (c->rtid[k] != ~0u && c->rtid[k] != tid && !warp_synced(w, c->rtid[k], c->rsync[k])) {
                hazard(b, w, lane, "write-after-read", 1, c->rtid[k], c->rpc[k], 0, at, global, size);
                reported = 1;
            }
        c->wepoch = ep;
        c->wtid = tid;
        c->wpc = pc;
        c->wsync = w->wsync;
        return reported;
    }
    int k = c->rtid[0] == ~0u || c->rtid[0] == tid ? 0 : 1;
    if (k == 1 && c->rtid[1] != ~0u && c->rtid[1] != tid)
        return reported; /* two other readers are known: either shows a later write's hazard */
    c->rtid[k] = tid;
    c->rpc[k] = pc;
    c->rsync[k] = w->wsync;
    return reported;
}

/* racecheck: a shared access of [off, off + size) by lane against what the bytes saw in
 * this barrier interval; one hazard reported per access. Atomics (store 2) are ordered
 * among themselves and are not recorded. */
void
emu_race_shared(block *b, warp *w, int lane, uint64_t off, unsigned size, int store)
{
    if (store == 2)
        return;
    int reported = 0;
    for (uint64_t i = off; i < off + size; i++)
        reported |= race_byte(b, w, lane, &b->race[i], i, 0, size, store, reported);
}

/* Global memory a block touches: its bytes' cells in an open-addressed table (key: the
 * address + 1, 0 empty), emptied as each block begins. Past MAX_GLOBAL cells, bytes not
 * yet in it go unwatched for the rest of the block. */
#define MAX_GLOBAL (1u << 22)

struct emu_global_races {
    size_t cap, used;     /* cap: a power of two */
    uint64_t *key;        /* owned: cap keys */
    race_cell *cell;      /* owned: cap cells */
};

static uint64_t
slot_of(uint64_t addr, size_t cap)
{
    return (addr * 0x9e3779b97f4a7c15ull >> 17) & (cap - 1);
}

static int
grow(struct emu_global_races *g)
{
    size_t cap = g->cap ? g->cap * 2 : 4096;
    uint64_t *key = calloc(cap, sizeof *key);
    race_cell *cell = malloc(cap * sizeof *cell);
    if (key == NULL || cell == NULL) {
        free(key);
        free(cell);
        return -1;
    }
    for (size_t i = 0; i < g->cap; i++) {
        if (g->key[i] == 0)
            continue;
        size_t s = slot_of(g->key[i], cap);
        while (key[s])
            s = (s + 1) & (cap - 1);
        key[s] = g->key[i];
        cell[s] = g->cell[i];
    }
    free(g->key);
    free(g->cell);
    g->key = key;
    g->cell = cell;
    g->cap = cap;
    return 0;
}

/* The cell of the byte at addr, made empty when new; NULL when the table is full. */
static race_cell *
global_cell(struct emu_global_races *g, uint64_t addr)
{
    if (g->cap == 0 || (g->used + 1) * 2 > g->cap) {
        if (g->cap >= MAX_GLOBAL || grow(g) < 0) {
            if (g->cap == 0)
                return NULL;
        }
    }
    size_t s = slot_of(addr + 1, g->cap);
    while (g->key[s] && g->key[s] != addr + 1)
        s = (s + 1) & (g->cap - 1);
    if (g->key[s] == 0) {
        if ((g->used + 1) * 2 > g->cap)
            return NULL; /* full: stays unwatched */
        g->key[s] = addr + 1;
        g->cell[s] = (race_cell){0, 0, 0, 0, 0, {~0u, ~0u}, {0, 0}, {0, 0}};
        g->used++;
    }
    return &g->cell[s];
}

void
emu_race_global(block *b, warp *w, int lane, uint64_t addr, unsigned size, int store)
{
    if (store == 2)
        return;
    if (b->global == NULL && (b->global = calloc(1, sizeof *b->global)) == NULL)
        return;
    int reported = 0;
    for (uint64_t i = addr; i < addr + size; i++) {
        race_cell *c = global_cell(b->global, i);
        if (c == NULL)
            return;
        reported |= race_byte(b, w, lane, c, i, 1, size, store, reported);
    }
}

void
emu_race_block_begin(block *b)
{
    if (b->global && b->global->used) {
        memset(b->global->key, 0, b->global->cap * sizeof *b->global->key);
        b->global->used = 0;
    }
}

void
emu_race_free(block *b)
{
    if (b->global) {
        free(b->global->key);
        free(b->global->cell);
        free(b->global);
        b->global = NULL;
    }
}

/* ------------------------------------------------------------------ barriers */

/* synccheck: __syncwarp(mask) (bar.warp.sync) by a thread its mask leaves out, or with
 * a mask that names threads that have exited or do not exist. */
__attribute__((noinline, cold)) void
emu_syncwarp_check(block *b, warp *w, const emu_inst *in, uint32_t m)
{
    if (in->s[0] < 0)
        return;
    const uint64_t *M = w->R + (size_t)in->s[0] * 32;
    for (uint32_t k = m; k; k &= k - 1) {
        const int l = __builtin_ctz(k);
        const uint32_t mask = (uint32_t)M[l];
        char what[300];
        if (!(mask >> l & 1)) {
            snprintf(what, sizeof what, "__syncwarp(0x%08x) by lane %d, which its mask leaves out "
                     "(a thread must name itself)", mask, l);
            emu_check_text(b, w, l, EMU_CHECK_SYNC, 3, what);
            return;
        }
        if (mask & ~w->live) {
            snprintf(what, sizeof what, "__syncwarp(0x%08x) names lanes 0x%08x, which have exited or "
                     "are past the block's threads: they can never reach it", mask, mask & ~w->live);
            emu_check_text(b, w, l, EMU_CHECK_SYNC, 4, what);
            return;
        }
    }
}

/* synccheck: the lanes of a warp at two different bar.sync instructions (as in an if and
 * its else, each with a __syncthreads()): a barrier of one warp reached from two places. */
__attribute__((noinline, cold)) void
emu_split_bar_check(block *b, warp *w)
{
    const int other = __builtin_ctz(w->barwait);
    char there[300], what[600];
    line_at(b, w->lpc[other] - 1, there, sizeof there);
    snprintf(what, sizeof what, "the threads of warp %d reach a barrier at two places: lanes 0x%08x "
             "here, lanes 0x%08x at %s (divergent threads at __syncthreads())", w->index, w->mask,
             w->barwait, there);
    emu_check_text(b, w, __builtin_ctz(w->mask), EMU_CHECK_SYNC, 5, what);
}

/* A synccheck report about warp w waiting at a barrier, at that barrier's line. */
static void
at_barrier(block *b, warp *w, uint64_t key, const char *what)
{
    /* w->pc is where its last group stopped (an exit, maybe): name the barrier */
    const uint32_t pc = w->pc;
    const int lane = __builtin_ctz(w->live);
    w->pc = w->lpc[lane] - 1;
    emu_check_text(b, w, lane, EMU_CHECK_SYNC, key, what);
    w->pc = pc;
}

/* synccheck, as the block's barrier without a count is released: the threads that
 * exited without reaching it (a GPU's barrier waits for every thread of the block;
 * whether exited ones count is not defined). One report for a warp with lanes gone, one
 * for warps gone whole. */
__attribute__((noinline, cold)) void
emu_barrier_of_some(block *b)
{
    warp *at = NULL;
    unsigned waiting = 0, gone = 0, gone_warps = 0;
    for (int i = 0; i < b->nwarps; i++) {
        warp *w = &b->warps[i];
        unsigned n = b->nthreads - (unsigned)i * 32 < 32 ? b->nthreads - (unsigned)i * 32 : 32;
        uint32_t all = n == 32 ? FULL : (1u << n) - 1;
        if (w->state != W_BAR) {
            gone += n;
            gone_warps++;
            continue;
        }
        waiting += (unsigned)__builtin_popcount(w->live);
        at = at ? at : w;
        if (w->live != all) {
            char what[300];
            snprintf(what, sizeof what, "a barrier reached by %d of the %u threads of warp %d: "
                     "lanes 0x%08x exited without reaching it (every thread of the block must "
                     "reach a __syncthreads())", __builtin_popcount(w->live), n, w->index,
                     all & ~w->live);
            at_barrier(b, w, 1, what);
        }
    }
    if (at && gone_warps) {
        char what[300];
        snprintf(what, sizeof what, "a barrier reached by %u of the block's %u threads: %u warps "
                 "(%u threads) exited without reaching it (every thread of the block must reach a "
                 "__syncthreads())", waiting, b->nthreads, gone_warps, gone);
        at_barrier(b, at, 2, what);
    }
}

