/* check.h - the checkers' side of a running kernel (check.c), for the interpreter's files */
#ifndef CUKIT_EMU_CHECK_H
#define CUKIT_EMU_CHECK_H

#include "emulator/exec/exec.h"

/* "in kernel k, block (..), thread (..), at file:line (PTX line n)" for lane of w at
 * w->pc into buf (snprintf's count). */
int emu_where(const block *b, const warp *w, int lane, char *buf, size_t n);
/* Record a report of checker `kind` (EMU_CHECK_*) about lane's thread at w->pc: what,
 * followed by emu_where's text. key tells reports of one instruction apart (what kind
 * of problem). */
void emu_check_text(block *b, warp *w, int lane, int kind, uint64_t key, const char *what);

/* initcheck: an access (store: 0 read, 1 write, 2 atomic) of [addr, addr + size) in
 * allocation a, which has a bitmap: a read of bytes never written is reported when the
 * launch checks (b->check), a write marks them. */
void emu_init_access(block *b, warp *w, int lane, const emu_alloc *a, uint64_t addr, unsigned size,
                     int store);
/* racecheck (b->race set): a shared access of [off, off + size) by lane against what the
 * bytes saw since the block's last barrier; one hazard reported per access. */
void emu_race_shared(block *b, warp *w, int lane, uint64_t off, unsigned size, int store);
/* racecheck: the same for an access of global memory at addr, against the accesses of
 * the block's other threads (blocks run apart: between blocks nothing is checked). The
 * table of cells is made at the first (b->global), emptied when a block begins, freed
 * with the block. */
void emu_race_global(block *b, warp *w, int lane, uint64_t addr, unsigned size, int store);
void emu_race_block_begin(block *b);
void emu_race_free(block *b);

/* synccheck: a bar.warp.sync by the lanes m of w (its mask in in->s[0]); the group of w
 * at a bar.sync while other lanes wait at another one; the block's barrier released
 * with threads that exited before it. Each only reports. */
void emu_syncwarp_check(block *b, warp *w, const emu_inst *in, uint32_t m);
void emu_split_bar_check(block *b, warp *w);
void emu_barrier_of_some(block *b);

#endif /* CUKIT_EMU_CHECK_H */
