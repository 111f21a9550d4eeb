/* program.h - compile/'s own: what program.c shares with arch.c and diagnostics.c */
#ifndef CUKIT_COMPILE_PROGRAM_H
#define CUKIT_COMPILE_PROGRAM_H

#include "compile/worker.h"

/* ------------------------------------------------------------------ arch.c */

/* Parse a user's arch (a str) strictly: "sm_90", "sm_90a", "sm_100f", "compute_90"
 * or "90"; checked against what NVRTC supports when it is loaded already (else at
 * compile time: cukit_arch_check_supported). The number into
 * *num, the suffix ('\0', 'a', 'f') into *suffix. 0, or -1 with a ValueError that
 * lists the valid forms and the supported architectures (TypeError for a non-str). */
int cukit_arch_parse(cukit_state *st, PyObject *arch, int *num, char *suffix);
/* After NVRTC is loaded: ValueError (as cukit_arch_parse's) when it cannot compile for
 * arch ("sm_90", "compute_90a"). 0 / -1. */
int cukit_arch_check_supported(const char *arch);
/* Whether the loaded NVRTC can generate machine code for `cc`; 1 when it cannot say. */
int cukit_nvrtc_supports(int cc);
/* The newest architecture the loaded NVRTC knows (0 when it cannot say). */
int cukit_nvrtc_newest(void);

/* ------------------------------------------------------------------ diagnostics.c */

/* Set self->log from NVRTC's log (n bytes of UTF-8). 0 / -1 with an exception. */
int cukit_program_set_log(cukit_Program *self, const char *log, size_t n);
/* Raise CompileError for a compile of self for `arch` that failed: its message is
 * the log as file:line:col diagnostics, its `log` attribute the log as NVRTC wrote
 * it. Returns -1. */
int cukit_program_compile_error(cukit_Program *self, const char *arch);

/* Raise CompileError for a compile of self that the compiler did not survive (res
 * from cukit_compile_run, res->crashed): how it died, where the source was saved,
 * and a command that reproduces it; or OSError when no worker could be started.
 * Returns -1. */
int cukit_program_crash_error(cukit_Program *self, const char *arch, const cukit_compile_request *req,
                              const cukit_compile_result *res);

#endif /* CUKIT_COMPILE_PROGRAM_H */
