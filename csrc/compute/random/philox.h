/* philox.h - compute/'s random-number internals: Philox4x64-10 and Philox4x32-10 on the host, the bit generators' state, the draw parameters the kernels take */
#ifndef CUKIT_COMPUTE_PHILOX_H
#define CUKIT_COMPUTE_PHILOX_H

#include "compute/compute.h"

/* Philox4x64-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
 * SC11): the multipliers and the Weyl key increments. The device code in
 * random_kernels.c uses the same numbers. */
#define CUKIT_PHILOX_M0 0xD2E7470EE14C6C93ULL
#define CUKIT_PHILOX_M1 0xCA5A826395121157ULL
#define CUKIT_PHILOX_W0 0x9E3779B97F4A7C15ULL
#define CUKIT_PHILOX_W1 0xBB67AE8584CAA73BULL
#define CUKIT_PHILOX_ROUNDS 10

static inline void
ck_mulhilo64(uint64_t a, uint64_t b, uint64_t *lo, uint64_t *hi)
{
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, t = a0 * b1 + (p00 >> 32), s = a1 * b0 + (uint32_t)t;
    *hi = a1 * b1 + (t >> 32) + (s >> 32);
    *lo = (s << 32) | (uint32_t)p00;
}

/* Philox4x32-10 (the same paper; Random123's philox4x32_10): 32-bit multipliers and
 * key increments. */
#define CUKIT_PHILOX32_M0 0xD2511F53U
#define CUKIT_PHILOX32_M1 0xCD9E8D57U
#define CUKIT_PHILOX32_W0 0x9E3779B9U
#define CUKIT_PHILOX32_W1 0xBB67AE85U

/* Random123's philox4x32_10(ctr, key): four 32-bit words. */
static inline void
ck_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < CUKIT_PHILOX_ROUNDS; r++) {
        uint64_t p0 = (uint64_t)CUKIT_PHILOX32_M0 * c0, p1 = (uint64_t)CUKIT_PHILOX32_M1 * c2;
        c0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        c1 = (uint32_t)p1;
        c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c3 = (uint32_t)p0;
        k0 += CUKIT_PHILOX32_W0;
        k1 += CUKIT_PHILOX32_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* The four 64-bit words of Philox4x64-10 for counter `ctr` and key `key`, as
 * numpy.random.Philox computes them (word 0 first). */
static inline void
ck_philox_block(const uint64_t ctr[4], const uint64_t key[2], uint64_t out[4])
{
    uint64_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < CUKIT_PHILOX_ROUNDS; r++) {
        uint64_t lo0, hi0, lo1, hi1;
        ck_mulhilo64(CUKIT_PHILOX_M0, c0, &lo0, &hi0);
        ck_mulhilo64(CUKIT_PHILOX_M1, c2, &lo1, &hi1);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += CUKIT_PHILOX_W0;
        k1 += CUKIT_PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* cukit.random.Philox and cukit.random.Philox4x32. The fields are
 * numpy.random.Philox's state, with its meaning: `buffer` holds the words of counter
 * `ctr` (numpy adds one to the counter before computing a block), buffer_pos of them
 * were used; has_uint32/uinteger are the high half of a word of which a 32-bit draw
 * used the low half.
 *
 * Philox4x32 (x32 set) keeps the same bookkeeping with a block of four 64-bit words:
 * block c is Philox4x32-10 at the 128-bit counters 2c and 2c + 1, each giving two
 * words (output 2j in the low half of word j, 2j + 1 in the high). Its counter is
 * ctr[0..1] (127 bits, as 2c + 1 must fit Random123's 128; ctr[2..3] stay 0) and its key key[0] (64 bits: Random123's
 * key[0] in the low half, key[1] in the high; key[1] stays 0). */
typedef struct {
    PyObject_HEAD
    cukit_state *st;
    int x32;               /* Philox4x32-10 (cukit.random.Philox4x32) */
    uint64_t ctr[4];
    uint64_t key[2];
    uint64_t buffer[4];
    int buffer_pos;        /* 0..4; 4: the buffer is used up */
    int has_uint32;
    uint32_t uinteger;
    uint32_t ulow;         /* the low half of the word whose high half is uinteger: the
                            * pair-wise transforms of Philox4x32 (normals, integers) draw
                            * the pending half from both halves of its word */
    PyObject *seed_seq;    /* strong ref: the numpy SeedSequence behind spawn() */
} ck_Philox;

/* What one kernel launch draws from: the device struct `Params` in
 * random_kernels.c has this layout, field for field. */
typedef struct {
    uint64_t out;          /* device address of element 0 */
    int64_t n;             /* elements */
    uint64_t ctr[4];       /* the counter of block 0 */
    uint64_t buf[4];       /* the words of block 0 (numpy's buffer, taken as it is) */
    uint64_t rk[2 * CUKIT_PHILOX_ROUNDS]; /* the key of each round */
    double a, b;           /* low and range, loc and scale, or 0 and scale */
    int64_t ilow;          /* integers: the lowest value */
    uint64_t irange;       /* integers: values - 1 (2**64 - 1: every 64-bit value) */
    int32_t pos;           /* first word of block 0 drawn (0..3) */
    int32_t head;          /* 32-bit draws: 1 when element 0 is `uinteger` */
    uint32_t uinteger;
    int32_t vec;           /* 1 when `out` is 16-byte aligned */
    double c[8];           /* a distribution's constants (poisson: lam and PTRS's) */
    uint32_t ulow;         /* 32-bit draws: the low half of uinteger's word */
    uint32_t ithresh;      /* integers from 32-bit halves: 2**32 mod count (Lemire's rejection) */
} ck_rand_params;

/* What a Generator method draws: one kernel each. */
typedef enum {
    CK_RAND_RAW,          /* uint64 words */
    /* each float kind four times, by dtype: float64, float32, float16, bfloat16 */
    CK_RAND_U64, CK_RAND_U32, CK_RAND_U16, CK_RAND_UBF16, /* uniform */
    CK_RAND_N64, CK_RAND_N32, CK_RAND_N16, CK_RAND_NBF16, /* normal */
    CK_RAND_E64, CK_RAND_E32, CK_RAND_E16, CK_RAND_EBF16, /* exponential */
    CK_RAND_I8, CK_RAND_I16, CK_RAND_I32, CK_RAND_I64, /* integers, one word each */
    CK_RAND_POISSON,      /* int64, one word each */
    /* integers from one 32-bit half each (Philox4x32, counts up to 2**32), by size */
    CK_RAND_IH8, CK_RAND_IH16, CK_RAND_IH32, CK_RAND_IH64,
    CK_RAND_COUNT
} ck_rand_kind;

/* What cukit_permutation takes: the device struct PermParams, field for field. */
#define CUKIT_PERM_MAX_ROUNDS 832 /* 12 rounds per bit of n, and 64: n up to 2**64 */
typedef struct {
    uint64_t out;          /* int64[n]: the permutation */
    int64_t n;
    uint64_t k0, k1;       /* its key: two words of the bit generator */
    int32_t rounds, pad;
} ck_perm_params;

/* ------------------------------------------------------------------ philox.c */

/* The Philox types into st->compute->PhiloxType and st->compute->Philox4x32Type. 0 / -1. */
int ck_philox_setup(PyObject *module, cukit_state *st);
/* Whether obj is a bit generator of either type. */
int ck_is_bit_generator(cukit_state *st, PyObject *obj);
/* Take the next n 64-bit words of bg (n >= 1) for a launch: fills p's counter,
 * buffer, round keys and pos, and moves bg past them exactly as numpy would. */
void ck_philox_take64(ck_Philox *bg, int64_t n, ck_rand_params *p);
/* Take n 32-bit draws (n >= 1), with numpy's rule: a pending high half first, then
 * the low and high halves of each next word, an odd last high half kept pending.
 * Fills p's head, uinteger and ulow too. */
void ck_philox_take32(ck_Philox *bg, int64_t n, ck_rand_params *p);

/* The block after counter ctr (ctr += 1 first, as numpy counts), as a draw takes it. */
void ck_philox_next_block(const ck_Philox *bg, uint64_t ctr[4], uint64_t out[4]);

/* ------------------------------------------------------------------ generator.c */

/* A permutation of [0, n) into int64 device memory at `out`, queued on h: its key is
 * the next two words of bg (put back if the launch fails). 0 / -1. */
int ck_random_permute(ck_Philox *bg, cukit_Device *dev, CUdeviceptr out, Py_ssize_t n,
                      CUstream h);
/* dst's first `rows` rows (axis 0; rows of src's row size) = src's rows at the int64
 * indices `perm` (device memory), both C-contiguous of one dtype, queued on h. 0 / -1. */
int ck_random_gather_rows(cukit_Array *dst, cukit_Array *src, CUdeviceptr perm, long long rows,
                          CUstream h);
/* int64 integers in [0, count) (count >= 1) drawn as Generator.integers draws them, into
 * a new array of `size` or into `out`. New ref or NULL (ck_random_draw's contract). */
PyObject *ck_random_below(ck_Philox *bg, uint64_t count, PyObject *size, PyObject *out,
                          PyObject *stream, const char *who);

/* ------------------------------------------------------------------ sample.c */

/* Generator.choice(a, size=None, replace=True, p=None, axis=0, shuffle=True, *,
 * stream=None) drawing from bg. New ref or NULL. */
PyObject *ck_random_choice(ck_Philox *bg, PyObject *args, PyObject *kwargs);

/* ------------------------------------------------------------------ random_kernels.c */

/* Launch kernel `name` of the random module on dev (compiled at first need) with
 * `args`, enough 256-thread blocks for `work` threads (capped; the kernels loop), on
 * h. 0 / -1. */
int ck_random_launch(cukit_Device *dev, const char *name, long long work, void **args,
                        CUstream h);
/* The names of every kernel ck_random_launch may run (a tuple of str). New ref or NULL. */
PyObject *ck_random_kernel_names(void);
/* Load kernel `name` on dev as ck_random_launch would (compiled alone at its first use),
 * without launching it: what `python -m cukit warmup` compiles. 0 / -1. */
int ck_random_load(cukit_Device *dev, const char *name);
/* The CUDA C source of the kernels (kernels/random.cu with its constants in front). New
 * ref or NULL. */
PyObject *ck_random_kernel_source(void);
/* Draw `kind` into a new array of shape `size` (None: a 0-d array; an int or a tuple)
 * with dtype `dtype`, or into `out` (a C-contiguous writable cukit.Array of that
 * dtype whose shape matches `size` when both are given), on the current device or
 * out's, queued on `stream` (a stream= argument; NULL or None: the default
 * stream). p's a, b, ilow and irange are the caller's; the rest is filled here and
 * bg advanced by what was drawn. `who` names the method in messages. New ref (the
 * array) or NULL with an exception, the state then unchanged. */
PyObject *ck_random_draw(ck_Philox *bg, ck_rand_kind kind, PyObject *dtype,
                            PyObject *size, PyObject *out, PyObject *stream,
                            ck_rand_params *p, const char *who);

#endif /* CUKIT_COMPUTE_PHILOX_H */
