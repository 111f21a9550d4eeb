/* declarations.h - the declarations layer: kernel signatures read from C declarations (cukit.Signature), the C type table, arguments packed by a signature */
#ifndef CUKIT_DECLARATIONS_H
#define CUKIT_DECLARATIONS_H

#include "memory/memory.h"

/* declarations/'s part of the module state (st->declarations; see cukit_state). */
typedef struct cukit_declarations_state {
    PyTypeObject *SignatureType; /* strong ref */
} cukit_declarations_state;

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


/* ------------------------------------------------------------------ args.c */

/* Convert v to parameter p's C type at dst (p->size bytes). `index` (0-based) and
 * `sig` are for messages; `dev` (may be NULL) is checked against device arrays.
 * 0 / -1 with TypeError, OverflowError or ValueError naming the parameter.
 * Used by Kernel calls, prepared launches and Signature.pack. */
int cukit_pack_arg(cukit_state *st, const cukit_Signature *sig, int index, PyObject *v,
                   unsigned char *dst, const cukit_Device *dev);

#endif /* CUKIT_DECLARATIONS_H */
