/* checks.h - the emulator's checkers (racecheck, initcheck, synccheck): which are on, the
 * written-bytes bitmaps of initcheck, and the log of what they report (checks.c) */
#ifndef CUKIT_EMU_CHECKS_H
#define CUKIT_EMU_CHECKS_H

#include "emulator/emu.h"

#include <string.h>

/* The checkers, as bits of emu_checks. */
enum { EMU_CHECK_RACE = 1, EMU_CHECK_INIT = 2, EMU_CHECK_SYNC = 4, EMU_CHECK_ALL = 7 };

/* The checkers on now (CUKIT_EMULATOR_CHECK, or cukit.debug.check). A launch reads it
 * once, as its blocks start: with none on, the interpreter runs as it does without
 * them. Allocations made while initcheck is on carry a bitmap of their written bytes. */
extern unsigned emu_checks;

/* CUKIT_EMULATOR_CHECK read once: the checkers it names (0 when unset or empty), or -1
 * with *bad its text when it is not a comma-separated list of race, init, sync, all. */
int emu_check_setting(const char **bad);

/* Record one report of checker `kind` (EMU_CHECK_*). Reports with the same kind and
 * place (`kernel`, `a`, `b`: the kernel and the instructions involved) are one report,
 * counted; text is kept from the first. Under CUKIT_EMULATOR_CHECK the first of each is
 * also written to stderr. Thread-safe. */
void emu_check_report(int kind, const void *kernel, uint64_t a, uint64_t b, const char *text);

typedef struct {
    int kind;           /* EMU_CHECK_* */
    uint64_t count;     /* times it was met */
    char *text;         /* owned (malloc) */
} emu_report;

/* The reports made since the last take, oldest first, in an array the caller frees
 * (with each text); *n their number, and *dropped those past the log's limit. NULL with
 * *n 0 when there are none. */
emu_report *emu_check_take(size_t *n, uint64_t *dropped);

/* ------------------------------------------------------------------ initcheck's bitmaps
 *
 * An allocation made while initcheck is on has a bitmap, one bit per byte, set where
 * the byte was written (by a copy, a memset or a kernel). */

/* Mark [off, off + n) of the bitmap written (atomically: blocks run on several threads). */
static inline void
emu_bits_set(uint8_t *bits, uint64_t off, uint64_t n)
{
    uint64_t end = off + n;
    while (off < end && (off & 7)) {
        __atomic_fetch_or(&bits[off >> 3], (uint8_t)(1u << (off & 7)), __ATOMIC_RELAXED);
        off++;
    }
    if (end - off >= 8) {
        memset(bits + (off >> 3), 0xff, (size_t)((end - off) >> 3));
        off += (end - off) & ~(uint64_t)7;
    }
    while (off < end) {
        __atomic_fetch_or(&bits[off >> 3], (uint8_t)(1u << (off & 7)), __ATOMIC_RELAXED);
        off++;
    }
}

/* The first byte of [off, off + n) not written, or UINT64_MAX when all were. */
static inline uint64_t
emu_bits_unset(const uint8_t *bits, uint64_t off, uint64_t n)
{
    for (uint64_t i = off; i < off + n; i++)
        if (!(__atomic_load_n(&bits[i >> 3], __ATOMIC_RELAXED) & (1u << (i & 7))))
            return i;
    return UINT64_MAX;
}

/* state.c: mark [addr, addr + n) written where it lies in an allocation with a bitmap
 * (a copy's or memset's destination). */
void emu_mark_written(uint64_t addr, uint64_t n);

#endif /* CUKIT_EMU_CHECKS_H */
