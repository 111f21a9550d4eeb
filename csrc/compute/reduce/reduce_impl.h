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

/* The kernels in one generated module, by index (key bits 0-2). */
enum { RF_ROWV, RF_ROWVW, RF_ROWN, RF_ROWNW, RF_COL, RF_COLV, RF_FULL, RF_ROWV1, RF_COUNT };
/* Blocks of CK_THREADS the full reduction's kernel (ckr_f) of one array input is built
 * to fit on one SM at once (__launch_bounds__' second argument): 4 caps its registers
 * at 64, room for its eight 16-byte loads in flight (6, with four loads and 40
 * registers, ran 5% slower on an H100; tools/reduce_variants.py). */
#define CK_MINB 4
/* ... and of more inputs (dot, where=): left to the compiler it took 150 registers for a
 * float32 dot (one block an SM) and ran 4% slower than the two-pass reduction before it;
 * 2 blocks with eight loads each beat 4 with four. */
#define CK_MINB_MULTI 2
extern const char *const ck_rfunc_names[RF_COUNT];

/* The kernels' build: an internal knob (cukit._cukit._reduce_variant, and the environment
 * variable CUKIT_REDUCE_VARIANT read once at import) so that one run on a GPU can time
 * several builds side by side (tools/reduce_variants.py). Not a setting: every build
 * computes the same results (the tests run each); the default is the build measured
 * best. A spec is "knob=value,..." over the defaults (reduce.c's knob table). */
typedef struct {
    int fnt;     /* threads a block of the full reduction (ckr_f) */
    int fu;      /* its vector loads in flight a thread (unrolled before the first use) */
    int fminb;   /* its blocks an SM in __launch_bounds__, one array input */
    int fminbm;  /* ... two or more array inputs (dot, where=) */
    int fgrid;   /* its grid: blocks an SM (0: as many as the occupancy allows) */
    int fstride; /* 1: its blocks interleave (grid-stride) instead of a run each */
    int crows;   /* rows in flight a warp of the axis-0 kernel (ckcv) */
    int ldg;     /* 1: every reduction kernel's vector loads by ld.global.nc */
    int sitems;  /* items a thread of the 1-D scan's tile, accumulators of up to 4 bytes */
    int sitems8; /* ... wider accumulators */
    int smode;   /* the 1-D scan's tile: 0 staged in shared memory by the block, 1 by each
                    warp (fewer block barriers), 2 kept in registers (no staging) */
    int sminb;   /* its blocks an SM in __launch_bounds__ (0: none given) */
    int sspin;   /* nanoseconds its look-back sleeps between reads of unready tiles */
    int srec;    /* 1: its threads sum their run again from the staged tile when writing,
                    instead of keeping each prefix in a register (staged tiles only) */
    int slook;   /* tiles each lane of its look-back reads a step (packed words only) */
    int kept;    /* 1: reductions split across blocks and 1-D scans (up to 4-byte sums)
                    use scratch their stream keeps (cukit_stream_kept), 0: scratch of
                    their own, zeroed each launch */
    int sbid;    /* 1: the 1-D scan's tile is its block's index (no ticket) */
    int shint;   /* 1: the 1-D scan's 16-byte loads and stores stream (ld/st.global.cs) */
    int wave;    /* 1: split reductions fill whole waves of blocks (reduce.c's wave_splits) */
    int slbw;    /* 1: the 1-D scan's look-back by a ninth warp of its own, from the block's
                    start (staged or register tiles: smode 1 or 2) */
    int spre;    /* the 1-D scan's blocks prefetch into L2 the tile spre x SMs ahead (0: none) */
} ck_rvariant;
/* The build in use (process-wide: a timing knob, plain C data). */
const ck_rvariant *ck_rvariant_now(void);
/* Its number in this process (0: the default), for kernel cache keys: bits 40-47. */
int ck_rvariant_id(void);
/* Use spec's build from now on; 0, or -1 with a ValueError starting with who. */
int ck_rvariant_set(const char *spec, const char *who);
/* The build in use as a spec with every knob. New ref or NULL. */
PyObject *ck_rvariant_str(void);
/* _reduce_variant(spec=None, /) -> str (the Python function). */
PyObject *ck_reduce_variant_py(PyObject *m, PyObject *args);

/* CUDA C of every kernel of spec. New ref or NULL. */
PyObject *ck_reduce_source(const ck_rspec *spec);

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
    long long splits, chunk, gx, gy, ncnt;
} ck_rlaunch;
void ck_rplan_choose(const ck_rplan *plan, int vec, int sm, const int *occ, ck_rlaunch *launch);
/* _reduce_plan(inputs, axes, out, keep_order=False, vec=4, sm=132, blocks=8):
 * the plan and launch of fake arrays ((shape, strides, itemsize, address) each), for the
 * tests that check the engine's layouts without a device. New ref (dict) or NULL. */
PyObject *ck_reduce_plan_py(PyObject *m, PyObject *args);
/* Run plan with the kernels of the module cached under key (compiled from spec at first
 * use) on stream h. acc_size: bytes of the accumulator. 0 / -1. */
int ck_rplan_run(cukit_state *st, cukit_Device *dev, ck_kcache *cache, uint64_t key,
                 const ck_rspec *spec, const char *file, PyObject *options, int acc_size,
                 ck_rplan *plan, CUstream h);

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
