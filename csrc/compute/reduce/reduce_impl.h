/* reduce_impl.h - compute/'s own: what the reduction engine (reduce.c), its code
 * generator (reduce_codegen.c), the numpy-named reductions (reductions.c),
 * ReductionKernel (reduce_kernel.c) and the scans (scan.c) share; not for other layers */
#ifndef CUKIT_COMPUTE_REDUCE_IMPL_H
#define CUKIT_COMPUTE_REDUCE_IMPL_H

#include "compute/compute.h"

#define CK_RMAXD 8   /* dimensions of each group (kept, reduced) after merging */
#define CK_RMAXIN 8  /* inputs of one reduction kernel */

/* What a generated reduction computes. Every text is C (CUDA) in the generated file. */
typedef struct {
    int nin;                      /* inputs */
    int tc[CK_RMAXIN + 1];        /* element type of each input (as stored), then the output */
    int kind[CK_RMAXIN];          /* CK_OPND_* */
    const char *names[CK_RMAXIN + 1]; /* inputs' and the output's names in the texts */
    const char *acc;              /* C type of the accumulator (TA) */
    const char *head;             /* code before the kernels (typedefs, a user's preamble) */
    const char *map;              /* expression of the inputs and _j (the reduced index) -> TA */
    const char *reduce;           /* expression of a and b (TA) -> TA */
    const char *identity;         /* expression -> TA */
    const char *post;             /* statement: sees a (TA), the output by name, _n, _d */
    int user;                     /* 1: the texts are a user's: #line each one */
    int has_init;                 /* 1: the final value is reduce(a, initial) */
    int vec;                      /* elements per vector load in the vector kernels */
    const char *index;            /* the map's name for the reduced index (NULL: "_j") */
    const char *out_ctype;        /* C type of the output when head defines it (a struct for
                                     CUKIT_TC_OTHER, pycuda::complex<T> for a complex), else NULL */
    const char *in_ctype[CK_RMAXIN]; /* C type of an input when head defines it (declared as
                                        pycuda::complex<T>), else NULL: tc's own */
} ck_rspec;

enum { CK_OPND_ARRAY = 0, CK_OPND_SCALAR, CK_OPND_RAW };

/* The kernels of a reduction, by index (key bits 0-2); each compiled alone. */
enum { RF_ROWV, RF_ROWVW, RF_ROWN, RF_ROWNW, RF_COL, RF_COLV, RF_FULL, RF_ROWV1, RF_COUNT };
/* The full reduction's kernel (ckr_f): CK_FNT threads a block, each with CK_FU 16-byte
 * loads in flight, its blocks interleaved over the run, a wave of resident blocks (the
 * grid as the occupancy allows). __launch_bounds__ fits CK_MINB blocks an SM for one
 * array input: a cap of 64 registers, room for the eight loads (four loads and 6 blocks
 * ran 5% slower on an H100). */
#define CK_FNT 256
#define CK_MINB 4
/* ... and CK_MINB_MULTI for more inputs (dot, where=): left to the compiler it took 150
 * registers for a float32 dot (one block an SM) and ran 4% slower than the two-pass
 * reduction before it; 2 blocks with eight loads each beat 4 with four. */
#define CK_MINB_MULTI 2
extern const char *const ck_rfunc_names[RF_COUNT];

/* CUDA C of kernel fn (RF_*) of spec, alone in its module; fn -1: every kernel (the
 * tests'). New ref or NULL. */
PyObject *ck_reduce_source(const ck_rspec *spec, int fn);

/* One reduction as the kernels see it: kept dimensions (the output's), reduced ones. */
typedef struct {
    int nin;
    int kind[CK_RMAXIN];
    int itemsize[CK_RMAXIN + 1];
    CUdeviceptr ptr[CK_RMAXIN + 1];   /* inputs, then the output */
    ck_slot val[CK_RMAXIN];           /* scalar inputs */
    int kd, rd;
    long long nout, nred;
    long long kshape[CK_RMAXD], rshape[CK_RMAXD];
    long long ks[CK_RMAXIN + 1][CK_RMAXD], rs[CK_RMAXIN + 1][CK_RMAXD]; /* bytes */
    long long count;                  /* post's _n */
    double d;                         /* post's _d */
    ck_slot init;
} ck_rplan;

/* Plan the reduction of `nin` operands (arrays, or scalars/raw pointers where in[k] is
 * NULL and kind[k] says so) broadcast to (ndim, shape) over the dimensions in `axes`
 * (bit d) into out, whose shape is the kept dimensions (keepdims: with 1s). keep_order:
 * reduced dimensions stay in C order (arg reductions count in it). 0 / -1. */
int ck_rplan_make(ck_rplan *plan, cukit_Array *const *in, const int *kind, int nin, int ndim,
                  const Py_ssize_t *shape, uint64_t axes, cukit_Array *out, int keep_order);
/* How a plan is launched: the kernel (RF_*), splits of the reduced range and their
 * length, the grid; for splits > 1 the counters of the last-block fold (ncnt: one per
 * group of blocks that share outputs) and whether the fold gives each output the whole
 * block (fblock: few outputs) or a warp. vec: the spec's
 * elements per vector load; sm: the device's SMs; occ[RF_*]: blocks of each kernel an
 * SM holds at once (0: unknown, 8 assumed). */
typedef struct {
    int fn, fblock;
    int occ_fn; /* the kernel (RF_*) whose occ[] the choice read; -1: none */
    long long splits, chunk, gx, gy, ncnt;
} ck_rlaunch;
void ck_rplan_choose(const ck_rplan *plan, int vec, int sm, const int *occ, ck_rlaunch *launch);
/* _reduce_plan(inputs, axes, out, keep_order=False, vec=4, sm=132, blocks=8):
 * the plan and launch of fake arrays ((shape, strides, itemsize, address) each), for the
 * tests that check the engine's layouts without a device. New ref (dict) or NULL. */
PyObject *ck_reduce_plan_py(PyObject *m, PyObject *args);
/* Completes *spec with the texts of a reduction (a copy the callee fills whole) and
 * writes its file name into file (n bytes), when a kernel must be compiled. 0 / -1. */
typedef int (*ck_rspec_texts)(void *ctx, ck_rspec *spec, char *file, size_t n);
/* Run plan on stream h with the kernel it needs of those cached under key (key | RF_*),
 * each compiled alone from spec at its first use (file: its name; options: NVRTC's or
 * NULL). texts (NULL: spec and file are complete): called with ctx, once, before a
 * compile, where spec has the types but not the texts. acc_size: bytes of the
 * accumulator. 0 / -1. */
int ck_rplan_run(cukit_state *st, cukit_Device *dev, ck_kcache *cache, uint64_t key,
                 const ck_rspec *spec, const char *file, PyObject *options, ck_rspec_texts texts,
                 void *ctx, int acc_size, ck_rplan *plan, CUstream h);

/* Elements a thread of a 1-D scan tile in the build in use, for an accumulator of
 * acc_size bytes (the tile: CK_THREADS of them). */
int ck_scan_items(int acc_size);
/* CUDA C of one scan (scan_codegen.c): the input, output and accumulator types (itc,
 * otc, acc: a C type; with ctype, all three are that type, which head defines), the
 * operation over a and b, its neutral element; user: the texts are a user's (#line them).
 * The tile's items come from ck_scan_items(acc_size). New ref or NULL. */
PyObject *ck_scan_source(int itc, int otc, const char *acc, int acc_size, const char *head,
                         const char *op, const char *neutral, int exclusive, int user,
                         const char *ctype);

/* The output shape of reducing (ndim, shape) over axes. */
int ck_rout_shape(int ndim, const Py_ssize_t *shape, uint64_t axes, int keepdims,
                  Py_ssize_t *oshape);
/* Parse an axis= argument (None, int, tuple) for ndim dimensions into a bit mask;
 * numpy's AxisError (a ValueError and IndexError) when out of range or repeated. 0 / -1. */
int ck_parse_axes(cukit_state *st, PyObject *axis, int ndim, uint64_t *axes);
/* The reduction and scan kernel tables of the module state (created at setup). */
ck_kcache *ck_reduce_cache(cukit_state *st, int which);
/* Bytes of typecode tc's compute type (float16: 4). */
int ck_acc_size(int tc);

#endif /* CUKIT_COMPUTE_REDUCE_IMPL_H */
