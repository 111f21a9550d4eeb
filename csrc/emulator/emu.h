/* emu.h - the emulator's internal types: decoded PTX, the allocation registry, launches.
 *
 * Shared by the files of csrc/emulator/ only; the rest of cukit sees the emulator
 * as the driver entry-point table it fills (emulator.h). Its folders, bottom to top,
 * each calling only its own and the ones before it: this root (these types, and
 * state.c: errors, held faults, the registry, the settings), ptx/ (the reader:
 * ptx/ptx.h), exec/ (the interpreter: exec/exec.h), driver/ (the entry points:
 * driver/entries.h). What a folder lends the ones above it is declared here or in
 * its header, with the file that defines it. */
#ifndef CUKIT_EMU_H
#define CUKIT_EMU_H

#include "driver/driver.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ decoded PTX */

/* Element types of instructions and memory accesses. */
enum {
    TY_NONE = 0, TY_U8, TY_U16, TY_U32, TY_U64, TY_S8, TY_S16, TY_S32, TY_S64,
    TY_F16, TY_BF16, TY_F32, TY_F64, TY_PRED, TY_F16X2, TY_BF16X2, TY_B128,
    TY_E4M3X2, TY_E5M2X2, /* two float8s in a .b16 (cvt only) */
    TY_COUNT
};

/* Memory spaces. Global and const addresses are host addresses; shared, local and
 * param addresses are offsets into the block's, lane's or launch's window. */
enum { SP_GENERIC = 0, SP_GLOBAL, SP_SHARED, SP_LOCAL, SP_CONST, SP_PARAM };

/* Rounding modes (mod & 7) and flags. */
enum { RND_NONE = 0, RND_RN, RND_RZ, RND_RM, RND_RP, RND_RNI, RND_RZI, RND_RMI, RND_RPI };
enum { M_FTZ = 0x10, M_SAT = 0x20, M_APPROX = 0x40, M_CC = 0x80 };
#define RND(mod) ((mod) & 0x0f)


/* Base operations: what an instruction does, before specialization by type. */
enum {
    B_NONE = 0, B_MOV, B_ADD, B_SUB, B_MUL, B_MULHI, B_MULWIDE, B_MAD, B_MADHI, B_MADWIDE,
    B_DIV, B_REM, B_ABS, B_NEG, B_MIN, B_MAX, B_AND, B_OR, B_XOR, B_NOT, B_CNOT, B_SHL, B_SHR,
    B_POPC, B_CLZ, B_BREV, B_BFIND, B_BFE, B_BFI, B_PRMT, B_LOP3, B_SHFL_L, B_SHFL_R,
    B_FMA, B_RCP, B_SQRT, B_RSQRT, B_SIN, B_COS, B_LG2, B_EX2, B_TANH, B_COPYSIGN,
    B_TESTP, B_SAD, B_MUL24, B_MAD24, B_DP4A, B_DP2A, B_ADDC, B_SUBC, B_MADC,
    B_COUNT
};

/* Executed operations: the hot ones specialized by type, the rest generic. */
enum {
    OP_NOP = 0,
    OP_MOV,           /* d = a (any width) */
    OP_MOVP,          /* predicate d = predicate a */
    OP_PCONST,        /* predicate d = imm (0 or 1) */
    OP_PACK,          /* d = {s0, s1[, s2, s3]} of width imm bits each */
    OP_UNPACK,        /* {d0, d1[, ...]} = s0 split into imm-bit pieces */
    OP_MOVN,          /* d[k] = s[k] for k < vec, all read before any is written (the two
                       * 64-bit halves of a .b128 register: mov.b128's copy, pack, unpack) */
    OP_ADD32, OP_ADD64, OP_SUB32, OP_SUB64, OP_MUL32, OP_MUL64,
    OP_MAD32, OP_MAD64, OP_MULWIDE_U32, OP_MULWIDE_S32, OP_SHL32, OP_SHL64,
    OP_SHR_U32, OP_SHR_S32, OP_SHR_U64, OP_SHR_S64, OP_AND32, OP_AND64, OP_OR32,
    OP_OR64, OP_XOR32, OP_XOR64,
    OP_FADD32, OP_FSUB32, OP_FMUL32, OP_FFMA32, OP_FADD64, OP_FSUB64, OP_FMUL64, OP_FFMA64,
                      /* OP_FFMA*: imm bit 0 negates s0, bit 1 negates s2 (a contracted
                       * sub: ptx_contract) */
    OP_INT,           /* generic integer: base, type */
    OP_FLT,           /* generic float: base, type, mod */
    OP_SETP,          /* d0 (pred) [, d1 (pred, negated)] = a cmp b [bool-op c] */
    OP_SET,           /* d = a cmp b ? 0xffffffff (or 1.0f) : 0 */
    OP_SELP,          /* d = pred s2 ? a : b */
    OP_SLCT,          /* d = c >= 0 ? a : b */
    OP_PAND, OP_POR, OP_PXOR, OP_PNOT, /* predicate logic */
    OP_CVT,           /* d = convert(s0) type2 -> type */
    OP_CVTA_SHARED, OP_CVTA_TO_SHARED, OP_CVTA_LOCAL, OP_CVTA_TO_LOCAL,
    OP_CVTA_PARAM,
    OP_LD, OP_ST,     /* space, type, vec; address s[3] + imm; values d[] / s[0..vec) */
    OP_LDPARAM,       /* kernel parameter: d = param[imm] */
    OP_ATOM, OP_RED,  /* type2: the B_-like atomic operation (ATOM_*) */
    OP_BRA, OP_EXIT, OP_BAR, OP_BARWARP, OP_FENCE,
    OP_BARRED,        /* bar.red: type2 0 popc, 1 and, 2 or; s[0] the predicate (vec: negated) */
    OP_REDUX,         /* redux.sync: type2 the ATOM_* operation */
    OP_SHFL,          /* type2: mode; d0 value, d1 pred; s0 a, s1 b, s2 c */
    OP_VOTE,          /* type2: mode */
    OP_ACTIVEMASK, OP_MATCH_ANY, OP_MATCH_ALL,
    OP_CLOCK, OP_CLOCK64, OP_GLOBALTIMER,
    OP_PRINTF,        /* s0 format, s1 argument buffer; d0 the result */
    OP_TRAP,
    OP_TEX,           /* base: TG_*; addr the handle; s[] coordinates (type2); d[0..3] */
    OP_SULD, OP_SUST, /* base: TG_*; addr the handle; s[] coordinates; d[0..vec) the values;
                       * mod: 0 trap, 1 clamp, 2 zero outside the array */
    OP_BARN,          /* bar.sync a, b / bar.arrive a, b (a named barrier, b threads, a whole
                       * warp at a time): s[0] the barrier, s[1] the thread count;
                       * type2 1 for arrive (no wait) */
    OP_CPASYNC,       /* cp.async: type2 bytes from global addr + imm to shared s[0] + s[1]
                       * (base 1: that sum mod 2^32); s[2] the bytes read (-1: all), the
                       * rest zeroed; d[0] the ignore-src predicate (-1: none; vec 1: negated) */
    OP_COUNT
};

enum { ATOM_ADD = 1, ATOM_MIN, ATOM_MAX, ATOM_EXCH, ATOM_CAS, ATOM_AND, ATOM_OR, ATOM_XOR,
       ATOM_INC, ATOM_DEC };
enum { CMP_EQ = 1, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_LO, CMP_LS, CMP_HI, CMP_HS,
       CMP_EQU, CMP_NEU, CMP_LTU, CMP_LEU, CMP_GTU, CMP_GEU, CMP_NUM, CMP_NAN };
enum { SHFL_UP = 1, SHFL_DOWN, SHFL_BFLY, SHFL_IDX };
enum { TG_1D = 1, TG_2D, TG_3D, TG_A1D, TG_A2D }; /* texture and surface geometries */
enum { VOTE_ALL = 1, VOTE_ANY, VOTE_UNI, VOTE_BALLOT };

/* One decoded instruction. Register operands are slot numbers in the warp's
 * register file (32 lanes of 64 bits each); immediates, symbols and special
 * registers were turned into pre-filled slots at load, so every operand is a slot. */
typedef struct {
    uint16_t op;      /* OP_* */
    uint8_t type;     /* T_* of the operation (destination for cvt) */
    uint8_t type2;    /* cvt: source type; setp: compare; atom: the operation; ... */
    uint8_t mod;      /* RND_* | M_* */
    uint8_t space;    /* SP_* for memory operations */
    uint8_t vec;      /* elements of a vector access (1, 2, 4) */
    uint8_t gneg;     /* 1: the guard predicate is negated */
    uint8_t base;     /* B_* for the generic operations; setp: the boolean combiner */
    uint8_t wrap32;   /* memory operations: the address register has 32 bits, so the
                       * address is (register + imm) mod 2^32, as the GPU computes it */
    uint8_t pad[2];
    int32_t guard;    /* predicate register, -1 when unguarded */
    int32_t d[4];     /* destinations (slots; predicate numbers for predicate results) */
    int32_t s[4];     /* sources */
    int32_t addr;     /* memory operations: the slot holding the address (plus imm) */
    int64_t imm;      /* address offset, branch target, lut, ... */
    uint32_t line;    /* index into the module's line table (0: unknown) */
    uint32_t ptxline; /* line of the PTX text */
} emu_inst;

/* A register slot filled at warp start: a constant, or a special register. */
enum {
    SR_CONST = 0, SR_TID_X, SR_TID_Y, SR_TID_Z, SR_NTID_X, SR_NTID_Y, SR_NTID_Z,
    SR_CTAID_X, SR_CTAID_Y, SR_CTAID_Z, SR_NCTAID_X, SR_NCTAID_Y, SR_NCTAID_Z,
    SR_LANEID, SR_WARPID, SR_NWARPID, SR_SMID, SR_NSMID, SR_GRIDID,
    SR_LANEMASK_EQ, SR_LANEMASK_LT, SR_LANEMASK_LE, SR_LANEMASK_GT, SR_LANEMASK_GE,
    SR_DYN_SMEM, SR_TOTAL_SMEM, SR_ZERO, SR_ONE, SR_DYNBASE /* value: offset from the dynamic shared base */,
    SR_COUNT
};

typedef struct {
    int32_t slot;
    int32_t kind;    /* SR_* */
    uint64_t value;  /* SR_CONST */
} emu_prefill;

typedef struct {
    size_t offset, size, align;
} emu_param;

typedef struct emu_func {
    char *name;              /* owned */
    int is_entry;
    emu_inst *code;          /* owned */
    int ncode;
    int nslots;              /* register slots */
    int npreds;              /* predicate registers */
    emu_prefill *prefill;    /* owned */
    int nprefill;
    emu_param *params;       /* owned */
    int nparams;
    size_t param_bytes;
    size_t shared_static;    /* bytes of .shared declared */
    size_t local_bytes;      /* bytes of .local per thread */
    int maxntid;             /* .maxntid product, 0 when not given */
    int max_dyn_shared;      /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    struct emu_module *module; /* borrowed: the module owns the function */
    int uses_clock;
    int fused;               /* mul and add/sub pairs contracted into fma (ptx_contract) */
} emu_func;

typedef struct {
    char *name;      /* owned */
    void *data;      /* owned: host memory registered as an allocation */
    size_t size;
    int space;       /* SP_GLOBAL or SP_CONST */
} emu_global;

typedef struct emu_module {
    emu_func **funcs;        /* owned */
    int nfuncs;
    emu_global *globals;     /* owned */
    int nglobals;
    char **files;            /* owned: .file names by index */
    int nfiles;
    uint32_t *lines;         /* owned: line table, (file << 20) | line */
    uint32_t *outer;         /* owned: for each entry, the entry it was inlined at (0: none) */
    int nlines, caplines;
} emu_module;

/* ptx/read.c: bytes of an element of type t (0 for TY_PRED and TY_NONE); half and
 * bfloat16 conversions. */
int emu_type_size(int type);
uint16_t emu_f32_to_f16(float f);
float emu_f16_to_f32(uint16_t h);
uint16_t emu_f32_to_bf16(float f);
float emu_bf16_to_f32(uint16_t h);

/* ptx/load.c: parse and decode PTX text. The module, or NULL with a message in why. */
emu_module *emu_ptx_load(const char *ptx, char *why, size_t whylen);
void emu_module_free(emu_module *m);
/* "kernel.cu:12" for line-table index `line` into buf; "" when unknown (ptx/read.c). */
void emu_line_str(const emu_module *m, uint32_t line, char *buf, size_t n);

/* ------------------------------------------------------------------ memory registry (state.c) */

/* Kinds of registered memory. */
enum { EMU_DEVICE = 0, EMU_HOST, EMU_MANAGED, EMU_GLOBAL, EMU_POOLED, EMU_REGISTERED };

typedef struct {
    uint64_t base, size;
    int kind;            /* EMU_*: cuMemAlloc, pinned host, managed, a module's global, the
                          * stream-ordered pool, registered host memory (the caller's) */
    char origin[160];    /* where it was allocated: "test_x.py:31" or a variable name */
    uint8_t *written;    /* owned by the registry: initcheck's bitmap (checks.h), or NULL */
} emu_alloc;

/* Register [base, base+size). 0 / -1 when memory ran out. */
int emu_registry_add(uint64_t base, uint64_t size, int kind, const char *origin);
/* Remove the allocation starting at base; its record into *out if out. 0 / -1 unknown. */
int emu_registry_remove(uint64_t base, emu_alloc *out);
/* The allocation holding [addr, addr+size) into *out; 1 found, 0 not. Callers hold the read lock. */
int emu_registry_find(uint64_t addr, uint64_t size, emu_alloc *out);
/* The allocation nearest addr (for a fault message); 1 found, 0 none. */
int emu_registry_nearest(uint64_t addr, emu_alloc *out, int *freed);
/* The allocation starting at or containing addr, any size. 1 / 0. */
int emu_registry_containing(uint64_t addr, emu_alloc *out);
void emu_registry_rdlock(void);
void emu_registry_unlock(void);

/* ------------------------------------------------------------------ state.c */

/* Fail with `code`; the text is what cuGetErrorString returns for it on this thread. */
CUresult emu_failed(CUresult code, const char *fmt, ...);
/* Success (the last failure's text stays readable). */
CUresult emu_ok(void);
/* Hold a kernel fault for the next call that waits; report (and clear) it there. */
void emu_set_pending(CUresult code, const char *why);
/* The same, naming the launching thread (by: its emu_launcher() number; 0 when not known). */
void emu_set_pending_from(CUresult code, const char *why, uint64_t by);
/* This thread's number as a launcher of kernels (given at its first launch; 0 if out of
 * memory). At the thread's exit, its unreported faults go to the next wait. */
uint64_t emu_launcher(void);
CUresult emu_take_pending(void);
/* After a fault the context is lost (unless CUKIT_EMULATOR_DEBUG_KEEP_CONTEXT=1):
 * that fault for any call that uses the context; CUDA_SUCCESS otherwise. */
CUresult emu_context_lost(void);
int emu_keep_context(void);
/* The text of this thread's last failure (what cuGetErrorString gives for it). */
const char *emu_last_why(void);
/* 1 when [p, p+n) lies inside one registered allocation. */
int emu_valid_range(CUdeviceptr p, size_t n);
/* "test_x.py:31": the Python line asking for memory, else `what`. */
void emu_origin_of(char *buf, size_t n, const char *what);
/* The emulated architecture (90 for sm_90, CUKIT_EMULATOR_ARCH) and memory size. */
int emu_arch_cc(void);
size_t emu_total_memory(void);
/* CUDA_SUCCESS, or CUDA_ERROR_INVALID_VALUE when CUKIT_EMULATOR_MEMORY is not a size. */
CUresult emu_check_memory_setting(void);
/* A host pointer is pinned, registered or managed memory (not pageable). */
int emu_host_pinned(const void *p);
/* cuGetErrorName and cuGetErrorString into the table. */
void emu_fill_errors(cukit_api_t *api);
extern uint64_t emu_used_bytes;
extern struct CUctx_st emu_primary_ctx;

/* ------------------------------------------------------------------ launches */

typedef struct {
    const emu_func *f;
    unsigned grid[3], block[3];
    unsigned shared_dyn;
    unsigned char *params;   /* borrowed: param_bytes */
    uint64_t by;             /* emu_launcher() of the thread that launched it (a deferred
                              * launch may run on another) */
} emu_launch;

/* exec/grid.c: run a whole grid. CUDA_SUCCESS, or an error with a message in why. */
CUresult emu_run(const emu_launch *L, char *why, size_t whylen);

/* Thread-instructions run since the process started (lanes x instructions), for benchmarks. */
extern uint64_t emu_thread_instructions;

/* Output of printf is written here under this lock (exec/access.c). */
extern pthread_mutex_t emu_print_lock;


/* Seconds of CUKIT_EMULATOR_TIMEOUT: 0 when unset, -1 with *bad its text when it is not
 * a positive number (exec/warp.c). */
double emu_timeout_seconds(const char **bad);

/* The host CPUs the emulator spreads blocks over (CUKIT_EMULATOR_THREADS). */
int emu_thread_count(void);
/* 1 when CUKIT_EMULATOR_THREADS is unset or a whole number of at least 1, else 0. */
int emu_threads_setting_ok(void);

#endif /* CUKIT_EMU_H */
