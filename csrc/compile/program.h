/* program.h - compile/'s own: what program.c shares with diagnostics.c */
#ifndef CUKIT_COMPILE_PROGRAM_H
#define CUKIT_COMPILE_PROGRAM_H

#include "compile/compile.h"

/* ------------------------------------------------------------------ diagnostics.c */

/* Read the log of the NVRTC program prog into self->log. 0 / -1 with an exception. */
int cukit_program_read_log(cukit_Program *self, nvrtcProgram prog);
/* Raise CompileError for a compile of self for `arch` that failed: its message is
 * the log as file:line:col diagnostics, its `log` attribute the log as NVRTC wrote
 * it. Returns -1. */
int cukit_program_compile_error(cukit_Program *self, const char *arch);

#endif /* CUKIT_COMPILE_PROGRAM_H */
