/* compile.h - the compile layer: Program (NVRTC), options, the kernel cache, headers, linking */
#ifndef CUKIT_COMPILE_H
#define CUKIT_COMPILE_H

#include "launch/launch.h"

/* compile/'s part of the module state (st->compile; see cukit_state). */
typedef struct cukit_compile_state {
    PyTypeObject *ProgramType; /* strong ref */
    PyObject *compiled; /* strong ref: dict compile key -> (Module, header records, cwd)
                           that cukit.compile loaded */
} cukit_compile_state;

/* Modules cukit.compile keeps loaded in a process for a repeated compile: the most
 * recently used this many (each holds its code on the device). */
#define CUKIT_COMPILED_KEPT 256

/* ------------------------------------------------------------------ program.c */

/* Lines cukit puts before a source (cukit_Program.prelude). */
enum {
    CUKIT_PRELUDE_FP16 = 1,       /* #include cuda_fp16.h and cuda_bf16.h */
    CUKIT_PRELUDE_NVCC_TYPES = 2, /* typedefs of uint, ushort, ulong, uchar */
};

typedef struct {
    PyObject_HEAD
    cukit_state *st;
    PyObject *source;      /* strong ref: str */
    PyObject *name;        /* strong ref: str, the file name NVRTC reports */
    PyObject *options;     /* strong ref: tuple of str, user options, -I and -D folded in */
    PyObject *log;         /* strong ref: str, the log of the last compile ("" before) */
    PyObject *signatures;  /* strong ref: dict kernel name -> Signature, parsed from source */
    PyObject *name_expressions; /* strong ref: tuple of str given by the user */
    PyObject *deps;        /* strong ref: tuple of user-header records of the last compile
                              (see headers.c), () before one */
    PyObject *globals;     /* strong ref: dict __constant__/__device__ variable -> (typecode,
                              shape or None), read from the source */
    int prelude;           /* CUKIT_PRELUDE_* bits: lines cukit puts before the source */
} cukit_Program;

int cukit_program_setup(PyObject *module, cukit_state *st);
/* program.c: a Program as Program(source, name, options, include_dirs, defines,
 * name_expressions, lineinfo) makes it (any of name..name_expressions may be NULL:
 * not given). New ref or NULL with the exception Program() raises. */
PyObject *cukit_program_new(cukit_state *st, PyObject *source, PyObject *name, PyObject *options,
                            PyObject *include_dirs, PyObject *defines, PyObject *exprs,
                            int lineinfo);
/* functions.c: compile() with its in-process cache, nvrtc_version(), nvrtc_archs(). 0 / -1. */
int cukit_compile_functions_setup(PyObject *module, cukit_state *st);
/* The C entry for the kernels cukit generates itself: what compile(source, name=name,
 * options=options, device=dev) returns, through the same memory and disk caches
 * (dev NULL: the current device, which this makes current). source: str; options: a
 * sequence of str; name NULL: "kernel.cu". New ref to the loaded cukit.Module, or
 * NULL with CompileError or another exception. */
PyObject *cukit_compile_load(cukit_state *st, PyObject *source, const char *name,
                             PyObject *options, cukit_Device *dev);
/* The one way cukit's own kernels are loaded: `source` (str, generated or fixed; file
 * name `file`, NULL "kernel.cu"; NVRTC `options`, a sequence of str or NULL) through
 * cukit_compile_load, so it lands in the memory and disk caches user kernels use, and
 * its kernel `kernel` on dev (made current). New ref to the Module, which the caller
 * keeps while it uses *func, in *module. 0 / -1 (CompileError, NotSupportedError...). */
int cukit_builtin_function(cukit_state *st, cukit_Device *dev, PyObject *source, const char *file,
                           PyObject *options, const char *kernel, PyObject **module,
                           CUfunction *func);
/* Kernel `kernel` of the built-in device file `device_file` (its path under csrc/,
 * see cukit_device_file) with `defines` (C text put in front of it, e.g. "#define N 4\n";
 * may be NULL), whose Module is kept per device in *modules (dict ordinal -> Module,
 * created here; its owner clears it), loaded by cukit_builtin_function the first time.
 * dev is made current. 0 / -1. */
int cukit_builtin_kernel_file(cukit_Device *dev, PyObject **modules, const char *defines,
                              const char *device_file, const char *kernel, CUfunction *func);
/* As cukit_builtin_kernel_file, but the module holds `kernel` alone, so that a first
 * call compiles only the kernel it runs (a disk-cache entry per kernel): the file's
 * text gets `#define CUKIT_ONE_KERNEL 1` and `#define CUKIT_KERNEL_<kernel> 1` in front,
 * which its `#if CUKIT_WANT(name)` guards read (compiled whole, the file keeps every
 * kernel). Modules are kept in *modules under (ordinal, kernel). 0 / -1. */
int cukit_builtin_kernel_one(cukit_Device *dev, PyObject **modules, const char *defines,
                             const char *file, const char *kernel, CUfunction *func);
/* Compile prog for arch ("sm_90") into `kind` with the option `extra` (e.g.
 * "-rdc=true"; may be NULL) added after prog's own; prog is unchanged but for its
 * log. New refs in *image (bytes) and *symbols (dict kernel name -> symbol).
 * 0 / -1 with CompileError or another exception. */
int cukit_program_compile(cukit_Program *prog, const char *arch, cukit_output kind,
                          const char *extra, PyObject **image, PyObject **symbols);
/* Compile prog for dev's exact architecture (through the disk cache, without
 * loading NVRTC on a hit) and load it as a cukit.Module. New ref or NULL. */
PyObject *cukit_program_load(cukit_Program *prog, cukit_Device *dev);

/* ------------------------------------------------------------------ cache.c */

/* cache_info() and clear_cache(). 0 / -1. */
int cukit_cache_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ link.c */

/* Adds cukit.link() and cukit.nvjitlink_version(). 0 / -1. */
int cukit_link_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_COMPILE_H */
