/* ptx.h - the PTX reader's private types: tokens, symbols, operands, the parser's state */
#ifndef CUKIT_EMU_PTX_H
#define CUKIT_EMU_PTX_H

#include "emulator/emu.h"

enum { TK_ID, TK_NUM, TK_STR, TK_PUNCT, TK_END };
/* Bounds on one function after inlining (instructions, register slots): a register
 * slot costs 256 bytes per warp, so a 1024-thread block of the largest takes 2 GiB. */
#define EMU_MAX_CODE (1 << 22)
#define EMU_MAX_SLOTS (1 << 18)
/* Device functions inlined inside one another, at most. */
#define EMU_MAX_DEPTH 64
#define PTX_END_PAD 4 /* TK_END tokens at the end of every token list */

typedef struct {
    int kind;
    const char *p;
    int len;
    int line;
} tok;

typedef struct {
    tok *v;
    int n, cap;
} toks;

enum { S_NONE = 0, S_REG, S_PRED, S_SHARED, S_LOCAL, S_GLOBAL, S_KPARAM, S_CPARAM, S_LABEL,
       S_FUNC, S_DYNSHARED, S_PLOCAL /* a call parameter over 8 bytes, in local memory */ };

typedef struct {
    char *name;
    int kind;
    int64_t value; /* slot, predicate, offset, address, code index */
    int type;      /* T_* of a register */
} sym;

typedef struct {
    sym *v;
    int n, cap;
    int *hash; /* open addressing: index+1, 0 empty */
    int hcap;
} symtab;

typedef struct {
    const char *label; /* branch target name, resolved after the body */
    int llen;
    int inst;
} fixup;

/* A .func defined in the module: inlined at each call (the emulator has no call stack). */
typedef struct {
    const char *name;
    int nlen;
    int body;                /* token index of its '{' */
    int nparams, nrets;
    const char *params[32], *rets[2];
    int plens[32], rlens[2];
} devfunc;

/* A name a nested { } block declared, to restore at its '}' (PTX scopes .reg, .param
 * and .local declarations by block; inner ones may shadow outer ones). */
typedef struct {
    char *name;      /* owned */
    int had;         /* 1: it shadowed `old` */
    sym old;         /* name not owned */
} scoped;

typedef struct P {
    toks t;
    int i;
    scoped *undo;            /* owned */
    int nundo, capundo;
    int block_depth;         /* braces open inside the current function body */
    devfunc *funcs;          /* owned */
    int nfuncs;
    const char *inlining[EMU_MAX_DEPTH]; /* the functions being inlined now, outermost first */
    int depth;
    char *why;
    size_t whylen;
    int failed;
    emu_module *m;
    symtab mod;   /* module scope: globals, functions, extern shared */
    symtab fn;    /* function scope */
    symtab fshared; /* the kernel's .shared variables of inlined functions, "func/name":
                     * one per block however many times the function is inlined */
    emu_func *f;
    int capcode, capprefill;
    fixup *fix;
    int nfix, capfix;
    uint32_t cur_line;
    int cur_ptxline;
    int zero_slot;
    int device_launch;       /* the module declares the device runtime's launch functions */
    int version;             /* .version major * 10 + minor, 0 until read */
    int target_seen;         /* .target was read */
    size_t mod_shared;       /* bytes of module-scope .shared variables: every kernel's static
                              * shared memory starts with them (a __shared__ array at file
                              * scope that a __noinline__ function uses) */
    /* load.c's reader of a function body from its '{' to the matching '}' (0 / -1),
     * for call.c, which inlines a .func's body at each call: the body reader
     * sits above the call reader, and the two recurse through this pointer. */
    int (*parse_body)(struct P *p);
} P;

/* read.c: the refusal of a device-side launch (dynamic parallelism), with the way around it. -1. */
int ptx_fail_device_launch(P *p, int line);
/* target.c: the directive at t (.version, .target or .address_size) as a driver checks
 * it: .version first, an ISA version that exists and is not newer than the emulated
 * driver's (CUDA 13: 9.x), a target the driver still compiles (sm_50 and later), not
 * newer than the emulated device and known to the file's ISA version, 64-bit addresses.
 * 0, or -1 with the reason. */
int ptx_check_header(P *p, tok *t);
/* read.c: the refusal of a .b128 register used outside mov.b128. -1. */
int ptx_fail_b128(P *p, int line, const char *name, int len);

enum { OK_NAME = 1, OK_NUM, OK_ADDR, OK_VEC, OK_PAREN };

typedef struct {
    int kind;
    const char *name;  /* OK_NAME, OK_ADDR base (NULL: none) */
    int nlen;
    int neg;           /* OK_NUM: '-'; OK_NAME: '!' */
    const char *name2; /* a|b */
    int n2len;
    int64_t off;       /* OK_ADDR */
    int nitems;        /* OK_VEC, OK_PAREN */
    const char *items[8];
    int ilens[8];
    int inums[8];      /* 1: the item is a number */
    int line;
} operand;


int ptx_lex(const char *s, toks *t);
sym *ptx_sym_find(symtab *t, const char *p, int len);
/* Add or replace `name`. The symbol, or NULL when memory ran out. */
sym *ptx_sym_add(symtab *t, const char *p, int len, int kind, int64_t value, int type);
void ptx_sym_clear(symtab *t);

/* Record the first error of a load (with the source line when known); returns -1. */
int ptx_fail(P *p, int line, const char *fmt, ...);
tok *ptx_peek(P *p);
int ptx_is(const tok *t, const char *s);
int ptx_is_punct(const tok *t, char c);
int ptx_expect(P *p, char c);
void ptx_skip_line(P *p, int line);
void ptx_skip_statement(P *p);

/* A type name ("u32") as TY_*, with its size in *size if asked. */
int ptx_type_of(const char *s, int len, int *size);
int ptx_is_float(int t);
uint64_t ptx_f32_bits(float f);
uint64_t ptx_f64_bits(double d);
/* A literal as the bits of `type`. 0, or -1 when it is not a number. */
int ptx_literal(const char *s, int len, int neg, int type, uint64_t *out);

int ptx_new_slot(P *p);
/* A slot filled at warp start with `kind` (SR_*) and value; the same one when asked again. */
int ptx_add_prefill(P *p, int kind, uint64_t value);
int ptx_const_slot(P *p, uint64_t v);
/* A new instruction, zeroed, at the current source line. NULL after a failure. */
emu_inst *ptx_emit(P *p, int ptxline);

int ptx_parse_operand(P *p, operand *o);
sym *ptx_lookup(P *p, const char *name, int len);
/* A source operand of `type` as a slot; a destination register's slot; a predicate. -1 on error. */
int ptx_src(P *p, const operand *o, int type);
int ptx_dst(P *p, const operand *o);
/* An item of a vector operand {a, b, ..} as an operand of its own. */
operand ptx_vec_item(const operand *v, int k, int line);
int ptx_pred(P *p, const char *name, int len, int line);

/* Note that name is declared in the current block (before declaring it). 0 / -1. */
int ptx_scope_note(P *p, const char *name, int len);

/* call.c: a call: vprintf, or a .func of the module inlined. 0 / -1. */
int ptx_parse_call(P *p, const tok *op, int line, operand *ops, int nops, int guard, int gneg);
/* Find every .func definition of the module (a call may come before the body). */
void ptx_scan_funcs(P *p);

/* tex.c: tex, suld or sust (opcode op, its base nbase characters long). 0 / -1. */
int ptx_parse_texture(P *p, const tok *op, int nbase, int line, operand *ops, int nops,
                      int guard, int gneg);

/* An instruction's modifiers, as ptx_parse_mods reads them. */
typedef struct {
    int types[4], ntypes;
    int rnd, ftz, sat, approx, cc;
    int space;
    int vec;
    int cmp;
    int hi, lo, wide;
    int atom;
    int boolop; /* setp .and/.or/.xor */
    int shfl;
    int vote;
    int bar_arrive, bar_red;
    int shf_left, shf_clamp;
    int to;
    int uni;
    int testp;
    int any, all;
    int shiftamt;
    int warp, popc; /* bar.warp.sync; bar.red.popc */
    int satfinite;  /* cvt to float8: past the largest finite value, that value */
} mods;

/* One instruction being decoded: what ptx_parse_instruction read, handed to the step
 * for its family (decode_mov, decode_ldst, ...). Each step fills in and returns 0, or
 * returns -1 with the error recorded in p. */
typedef struct {
    P *p;
    const tok *op;    /* borrowed: the opcode with its modifiers */
    const char *base; /* borrowed: the opcode without them, nbase characters */
    int nbase;
    int line;
    operand *ops; /* borrowed: the operands read, nops of them */
    int nops;
    mods m;
    int type;     /* the last type modifier, TY_NONE without one */
    emu_inst *in; /* borrowed: the instruction being filled in */
} decoding;

/* read.c: refuse the instruction being decoded (NotSupported, naming it). -1. */
int ptx_refuse(decoding *d);

/* mods.c: the modifiers after the opcode's base (nbase characters) into *m. 0 / -1. */
int ptx_parse_mods(P *p, const tok *op, const char *base, int nbase, mods *m, int line);

/* arith.c: whether base[0..nbase) names integer or float arithmetic (add, mul, fma, ..). */
int ptx_alu_known(const char *base, int nbase);
/* arith.c: decode such an instruction into d->in. 0 / -1. */
int ptx_decode_alu(decoding *d);
/* arith.c: mov (predicates, packing, the clocks, .b128 registers). 0 / -1. */
int ptx_decode_mov(decoding *d);
/* arith.c: the refusal of .b128 on an instruction other than mov. -1. */
int ptx_refuse_b128(decoding *d);
/* arith.c: contract f's mul and add/sub pairs into fma as ptxas does (after its branch
 * targets are set); counts them in f->fused. 0, or -1 out of memory. */
int ptx_contract(emu_func *f);

/* inst.c: one instruction statement (the guard, opcode, operands) into p->f. 0 / -1. */
int ptx_parse_instruction(P *p);

#endif /* CUKIT_EMU_PTX_H */
