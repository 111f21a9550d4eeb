/* program.h - compile/'s own: what program.c shares with arch.c, diagnostics.c, includes.c and prelude.c */
#ifndef CUKIT_COMPILE_PROGRAM_H
#define CUKIT_COMPILE_PROGRAM_H

#include "compile/compile.h"

#include <limits.h>

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

/* ------------------------------------------------------------------ prelude.c */

/* The CUKIT_PRELUDE_* lines the source needs: CUKIT_PRELUDE_FP16 when it names the
 * fp16/bf16 types but includes neither header, CUKIT_PRELUDE_NVCC_TYPES when it uses
 * uint, ushort, ulong or uchar without declaring them; words in comments and strings
 * do not count. -1 with MemoryError. */
int cukit_prelude_needs(const char *src);
/* The source NVRTC reads: self's, after the lines self->prelude asks for (half and
 * bfloat16 need their headers; nvcc's uint, ushort, ulong and uchar come from its
 * host's C library) and a #line so diagnostics count the user's lines. `name` is
 * self's name in UTF-8. New ref, or NULL with an exception. */
PyObject *cukit_prelude_source(cukit_Program *self, const char *name);

/* ------------------------------------------------------------------ includes.c */

#define CUKIT_MAX_INCLUDE_DIRS 8

/* The folders NVRTC searches after a compile's own -I, in order: NVIDIA's include
 * folders beside the NVRTC loaded (toolkit or wheels), then cukit's stand-ins for the
 * standard headers (always last). NULL-terminated; static storage. Before NVRTC is
 * loaded, the stand-ins alone. Call with the GIL held. */
const char *const *cukit_default_include_dirs(void);
/* 1 when one of cukit_default_include_dirs() holds the file `name` ("cuda_fp16.h"). */
int cukit_default_include_has(const char *name);
/* The include folders found beside an NVRTC library in folder libdir, each once, as
 * real paths, at most cap of them into dirs; where none has cuda_fp16.h, a toolkit's
 * (CUDA_HOME, else CUDA_PATH, else /usr/local/cuda) after them. Their number. */
int cukit_include_dirs_beside(const char *libdir, char dirs[][PATH_MAX], int cap);
/* The lines of advice a failed compile's log calls for: a header no include folder has
 * (which of NVIDIA's wheels or the toolkit provides it), and half used without
 * cuda_fp16.h. New ref: str, "" when none; NULL with an exception. */
PyObject *cukit_compile_hints(const char *log, const char *source);
/* cukit._include_dirs(nvrtc_library=None) -> list of str: the default include folders,
 * or those found beside the given NVRTC library file. */
PyObject *cukit_mod_include_dirs(PyObject *m, PyObject *const *args, Py_ssize_t nargs);

#endif /* CUKIT_COMPILE_PROGRAM_H */
