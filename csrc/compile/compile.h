/* compile.h - the compile layer: Program (NVRTC), the kernel cache, linking, device-code images, signatures */
#ifndef CUKIT_COMPILE_H
#define CUKIT_COMPILE_H

#include "runtime/runtime.h"

/* ------------------------------------------------------------------ signature.c */

/* Parameter lists up to this long are laid out and packed in fixed arrays (on the
 * C stack); longer ones, which kernels may have, use the heap. */
#define CUKIT_MAX_PARAMS 256

/* One kernel parameter: its C type as declared and, once verified, its place in
 * the compiled kernel's parameter buffer. */
typedef enum {
    CUKIT_P_INT, CUKIT_P_UINT, CUKIT_P_FLOAT, CUKIT_P_BOOL,
    CUKIT_P_HALF, CUKIT_P_BF16, CUKIT_P_POINTER, CUKIT_P_STRUCT,
    CUKIT_P_TEXTURE, /* cudaTextureObject_t, CUtexObject: a cukit.Texture or its handle */
    CUKIT_P_SURFACE, /* cudaSurfaceObject_t, CUsurfObject: a cukit.Surface or its handle */
    CUKIT_P_RAW      /* `size` bytes whose C type the loaded image does not say (a kernel of
                        a cubin, or a PTX .b32/.u64): a numpy scalar or bytes of that size, a
                        Python int, device memory when 8 bytes; see raw_ints */
} cukit_param_kind;

typedef struct {
    cukit_param_kind kind;
    int typecode;   /* scalars: their own; pointers: the element type they accept */
    size_t size;    /* bytes; 0 for a struct whose size only the compiled kernel knows */
    size_t offset;  /* bytes from the start of the parameter buffer */
    size_t align;   /* C alignment, for layouts computed without a compiled kernel */
    char *type;     /* owned (PyMem): the type as shown to users, "const float*" */
    char *name;     /* owned (PyMem): the parameter's name, "" when unnamed */
    int uncertain;  /* 1: its type was read from a branch of #if cukit could not evaluate */
    int raw_ints;   /* CUKIT_P_RAW: 1 when the image says an integer (or an address), so a
                       float given for it is refused */
} cukit_param;

typedef struct cukit_Signature_s {
    PyObject_HEAD
    char *name;            /* owned (PyMem): the kernel's name as written in the source */
    int extern_c;          /* 1: declared extern "C", so its symbol is its name */
    int nparams;
    cukit_param *params;   /* owned (PyMem): nparams entries */
    size_t arg_bytes;      /* size of the whole parameter buffer */
    int verified;          /* 1: sizes and offsets come from the compiled kernel */
} cukit_Signature;

int cukit_signature_setup(PyObject *module, cukit_state *st);
/* Parse every __global__ function in `source`; `defines` maps macro names to values
 * (may be NULL). Template kernels are read once per name expression (tuple of str,
 * may be NULL) that instantiates them, under the expression as written. When
 * `globals` (a dict) is given, __constant__/__device__ variables go into it as
 * name -> (typecode, shape tuple or None). Never rejects a source NVRTC accepts: what
 * it cannot read is left out or read as written, with a RuntimeWarning where that may
 * make a parameter's type wrong. New ref: dict name -> Signature; NULL with an
 * exception. */
PyObject *cukit_signatures_parse(cukit_state *st, const char *source, PyObject *defines,
                                 PyObject *name_expressions, PyObject *globals);
/* Parse one declaration "name(type a, type b)", "(type a, ...)" or "type a, ..."
 * written for cukit; `name` (may be NULL) replaces the one written. New ref, or NULL
 * with ValueError showing the line with a caret under the column that is not C. */
cukit_Signature *cukit_signature_from_decl(cukit_state *st, const char *decl, const char *name);
/* A copy of `sig` laid out by the compiled kernel's own offsets and sizes
 * (n entries). New ref, or NULL with TypeError when the two disagree. */
cukit_Signature *cukit_signature_verify(cukit_state *st, cukit_Signature *sig, int n,
                                        const size_t *offsets, const size_t *sizes);
/* Same layout computed by the C ABI rules, for packing without a compiled kernel. */
cukit_Signature *cukit_signature_layout(cukit_state *st, cukit_Signature *sig);
/* "saxpy(float a, const float* x)". New ref or NULL. */
PyObject *cukit_signature_str(cukit_Signature *sig);
/* Raise TypeError for a wrong argument count, showing the signature. Returns -1. */
int cukit_arg_count_error(cukit_Signature *sig, Py_ssize_t given);

/* ------------------------------------------------------------------ ctypes.c */

/* One C type name: the one table every reader of C type names uses (kernel signatures,
 * ElementwiseKernel and ReductionKernel parameter lists). Static storage. */
typedef struct {
    const char *name;       /* canonical spelling: "unsigned long long", "int8_t" */
    cukit_param_kind kind;  /* as a kernel parameter */
    size_t size;            /* bytes (0: void) */
    int typecode;           /* the element type it is; CUKIT_TC_ANY for void */
    size_t align;           /* 0: the size, up to 8 */
    int bytes_pointee;      /* 1: a pointer to it takes an array of any dtype (char*, void*) */
} cukit_ctype;

/* The entry spelled exactly `name` (canonical), or NULL (no exception). */
const cukit_ctype *cukit_ctype_find(const char *name);
/* The entry for a type written as space-separated words, integer words in any order
 * and form ("long unsigned int" is "unsigned long"), or NULL (no exception). */
const cukit_ctype *cukit_ctype_named(const char *spelled);
/* 1 when the n bytes at w are one of C's integer words (signed, unsigned, short, long,
 * int, char). */
int cukit_ctype_is_int_word(const char *w, size_t n);
/* The canonical name of the integer type the n words spell, into out: "signed" ->
 * "int", "unsigned long int" -> "unsigned long". Returns out. */
const char *cukit_ctype_canonical_int(const char *const *words, int n, char *out, size_t cap);

/* Modules cukit.compile keeps loaded in a process for a repeated compile: the most
 * recently used this many (each holds its code on the device). */
#define CUKIT_COMPILED_KEPT 256

/* ------------------------------------------------------------------ image_signature.c */

/* The kernel name and "(type, type)" parameter list a C++ kernel's mangled name
 * `mangled` says, into name/params. 1 when read, 0 when the name is not one it can
 * read (no exception), -1 with MemoryError. */
int cukit_demangle_kernel(const char *mangled, char *name, size_t name_cap, char *params,
                          size_t params_cap);
/* A Signature of n parameters known only by their compiled offsets and sizes
 * (CUKIT_P_RAW). New ref or NULL. */
cukit_Signature *cukit_signature_of_sizes(cukit_state *st, const char *name, int n,
                                          const size_t *offsets, const size_t *sizes);
/* dict entry name -> Signature read from every ".entry" of PTX text (n bytes); entries
 * whose list it cannot read are left out. New ref or NULL. */
PyObject *cukit_ptx_signatures(cukit_state *st, const char *ptx, size_t n);

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
/* What compiling a Program produces. */
typedef enum { CUKIT_OUT_PTX = 0, CUKIT_OUT_CUBIN = 1, CUKIT_OUT_LTOIR = 2 } cukit_output;
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
/* 0 when CUKIT_CACHE turns the cache off ("0", "off", "false", "no"), else 1. */
int cukit_cache_enabled(void);
/* The cache folder into out. 0, or -1 (no exception) when none can be named. */
int cukit_cache_dir(char *out, size_t n);

/* ------------------------------------------------------------------ image.c, link.c */

/* What `n` bytes of device code are, by their magic: NVJITLINK_INPUT_CUBIN, _PTX,
 * _FATBIN, _LTOIR, _OBJECT (a host ELF object), _LIBRARY (an ar archive), or
 * NVJITLINK_INPUT_NONE when none of these. Never raises. */
int cukit_image_kind(const unsigned char *data, size_t n);
/* "cubin", "PTX", ... for a kind from cukit_image_kind. Static storage. */
const char *cukit_image_kind_name(int kind);
/* What is wrong with the layout of n bytes of a cubin (or anything starting like an
 * ELF file that is not a host object) or a fatbin: 1 with a sentence saying what and
 * what to do in why, 0 when every size and offset the driver follows lies inside the
 * bytes (and for other kinds). Never raises. */
int cukit_image_problem(const unsigned char *data, size_t n, char *why, size_t cap);
/* The file at `path` (str or os.PathLike): all of it, or its first `limit` bytes
 * when limit >= 0. New ref: bytes; NULL with OSError (FileNotFoundError, ...)
 * naming the file, or TypeError. */
PyObject *cukit_read_file(PyObject *path, Py_ssize_t limit);
/* ------------------------------------------------------------------ imagecheck.c */

/* 0 when CUKIT_IMAGE_CHECK turns the out-of-process check off ("0", "off", "false",
 * "no"), else 1. */
int cukit_image_check_enabled(void);
/* Before an image from outside cukit (Module.load) is loaded in this process: load
 * it in a worker process with the driver at `driver` (its real path) on device
 * `ordinal`, unless a verdict for it (its digest, the driver and `identity`: the
 * driver's version and the device) is remembered. 0 when it may be loaded here
 * (the driver loaded it, or refused it with an error that the load here reports
 * again); -1 with ValueError naming `label` when the driver crashed or did not
 * answer within CUKIT_IMAGE_CHECK_TIMEOUT seconds, RuntimeError/OSError when no
 * check could be run. Releases the GIL while it waits. */
int cukit_image_check(cukit_state *st, const unsigned char *data, size_t n, const char *driver,
                      int ordinal, const char *identity, PyObject *label);
/* Adds the private _image_checks() and _image_check(). 0 / -1. */
int cukit_image_check_setup(PyObject *module, cukit_state *st);
/* Adds cukit.link() and cukit.nvjitlink_version(). 0 / -1. */
int cukit_link_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_COMPILE_H */
