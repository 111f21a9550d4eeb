/* access.c - checked memory addresses of the emulator's kernels, fault messages, printf */
#include "emulator/exec/check.h"

#include <stdlib.h>

pthread_mutex_t emu_print_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------ faults */


/* 1 when the access is so far from allocation a (more than a MiB, and more than a's own
 * size) that "N bytes past the end" would mislead: a wild pointer, not an overrun. */
static int
far_from(unsigned long long addr, unsigned size, const emu_alloc *a)
{
    unsigned long long gap = addr >= a->base ? addr + size - (a->base + a->size)
                                             : a->base - addr;
    unsigned long long near = a->size > (1ULL << 20) ? a->size : (1ULL << 20);
    return gap > near;
}

static const char *const space_names[] = {
    [SP_GENERIC] = "global", [SP_GLOBAL] = "global", [SP_SHARED] = "shared",
    [SP_LOCAL] = "local", [SP_CONST] = "constant", [SP_PARAM] = "parameter",
};

static void
fault_access(block *b, warp *w, int lane, int space, uint64_t addr, unsigned size, int store,
             int misaligned)
{
    if (b->fault)
        return;
    b->fault = 1;
    char loc[512], what[768];
    emu_where(b, w, lane, loc, sizeof loc);
    const char *rw = store ? "write" : "read";
    if (misaligned) {
        b->err = CUDA_ERROR_MISALIGNED_ADDRESS;
        snprintf(what, sizeof what, "a %u-byte %s %s at 0x%llx is misaligned (it must be a multiple "
                 "of %u)", size, space_names[space], rw, (unsigned long long)addr, size);
    }
    else if (space == SP_SHARED && (int64_t)addr < 0) {
        b->err = CUDA_ERROR_ILLEGAL_ADDRESS;
        snprintf(what, sizeof what, "out-of-bounds %u-byte shared %s at shared offset %lld: %llu "
                 "bytes before the start of the block's %zu bytes of shared memory", size, rw,
                 (long long)addr, 0ull - (unsigned long long)addr, b->shared_size);
    }
    else if (space == SP_SHARED) {
        b->err = CUDA_ERROR_ILLEGAL_ADDRESS;
        snprintf(what, sizeof what, "out-of-bounds %u-byte shared %s at shared offset %lld: %lld bytes "
                 "past the end of the block's %zu bytes of shared memory", size, rw,
                 (long long)addr, (long long)(addr + size - b->shared_size), b->shared_size);
    }
    else if (space == SP_LOCAL && (int64_t)addr < 0) {
        b->err = CUDA_ERROR_ILLEGAL_ADDRESS;
        snprintf(what, sizeof what, "out-of-bounds %u-byte local %s at local offset %lld: %llu "
                 "bytes before the start of the thread's %zu bytes of local memory", size, rw,
                 (long long)addr, 0ull - (unsigned long long)addr, b->local_bytes);
    }
    else if (space == SP_LOCAL) {
        b->err = CUDA_ERROR_ILLEGAL_ADDRESS;
        snprintf(what, sizeof what, "out-of-bounds %u-byte local %s at local offset %lld, past the "
                 "thread's %zu bytes of local memory", size, rw, (long long)addr, b->local_bytes);
    }
    else if (space == SP_PARAM) {
        b->err = CUDA_ERROR_ILLEGAL_ADDRESS;
        snprintf(what, sizeof what, "out-of-bounds %u-byte parameter %s at offset %lld (the kernel "
                 "has %zu bytes of parameters)", size, rw, (long long)addr, b->f->param_bytes);
    }
    else {
        b->err = CUDA_ERROR_ILLEGAL_ADDRESS;
        emu_alloc a;
        int freed = 0;
        int n = snprintf(what, sizeof what, "out-of-bounds %u-byte %s %s at address 0x%llx", size,
                         space_names[space], rw, (unsigned long long)addr);
        if (addr < 4096) {
            snprintf(what + n, sizeof what - (size_t)n, ": a null pointer (was an argument left "
                     "unset, or an array freed?)");
        }
        else if (emu_registry_nearest(addr, &a, &freed)) {
            if (freed)
                snprintf(what + n, sizeof what - (size_t)n, ": inside a %llu-byte allocation (made "
                         "at %s) that was already freed", (unsigned long long)a.size, a.origin);
            else if (far_from(addr, size, &a))
                snprintf(what + n, sizeof what - (size_t)n, ": no allocation is near it (the "
                         "nearest, %llu bytes at 0x%llx, was made at %s; is it a pointer at "
                         "all?)", (unsigned long long)a.size, (unsigned long long)a.base,
                         a.origin);
            else if (addr >= a.base)
                snprintf(what + n, sizeof what - (size_t)n, ": %llu bytes past the end of a "
                         "%llu-byte allocation made at %s",
                         (unsigned long long)(addr + size - (a.base + a.size)),
                         (unsigned long long)a.size, a.origin);
            else
                snprintf(what + n, sizeof what - (size_t)n, ": %llu bytes before the start of a "
                         "%llu-byte allocation made at %s", (unsigned long long)(a.base - addr),
                         (unsigned long long)a.size, a.origin);
        }
        else
            snprintf(what + n, sizeof what - (size_t)n, ": no allocation is near it");
    }
    snprintf(b->why, sizeof b->why, "%s %s", what, loc);
}

void
emu_fault_text(block *b, warp *w, int lane, CUresult err, const char *text)
{
    if (b->fault)
        return;
    b->fault = 1;
    b->err = err;
    char loc[512];
    emu_where(b, w, lane, loc, sizeof loc);
    snprintf(b->why, sizeof b->why, "%s %s", text, loc);
}

/* ------------------------------------------------------------------ memory */

/* Whether [addr, addr + size) lies in [base, base + len), with no sum that could wrap
 * around (an address near 2^64 plus its size would pass addr + size <= end). */
static inline int
inside(uint64_t addr, uint64_t size, uint64_t base, uint64_t len)
{
    return addr >= base && addr - base <= len && len - (addr - base) >= size;
}

/* Host address of a `size`-byte access to `addr` in `space` by lane, checked; NULL
 * after recording a fault. store: 0 a read, 1 a write, 2 an atomic (both). */
void *
emu_resolve(block *b, warp *w, int lane, int space, uint64_t addr, unsigned size, int store)
{
    if ((addr & (uint64_t)(size - 1)) != 0 && (size & (size - 1)) == 0) {
        fault_access(b, w, lane, space, addr, size, store, 1);
        return NULL;
    }
    switch (space) {
    case SP_SHARED:
        if (addr + size <= b->shared_size && addr < b->shared_size) {
            if (b->race)
                emu_race_shared(b, w, lane, addr, size, store);
            return b->shared + addr;
        }
        fault_access(b, w, lane, space, addr, size, store, 0);
        return NULL;
    case SP_LOCAL:
        if (addr + size <= b->local_bytes && addr < b->local_bytes)
            return b->local + ((size_t)(w->index * 32 + lane)) * b->local_stride + addr;
        fault_access(b, w, lane, space, addr, size, store, 0);
        return NULL;
    case SP_PARAM:
        if (!store && addr + size <= b->f->param_bytes && addr < b->f->param_bytes)
            return b->L->params + addr;
        fault_access(b, w, lane, space, addr, size, store, 0);
        return NULL;
    default:
        break;
    }
    if (inside(addr, size, b->lo, b->hi - b->lo))
        return (void *)(uintptr_t)addr;
    if (space == SP_GENERIC) {
        uint64_t sh = (uint64_t)(uintptr_t)b->shared;
        if (inside(addr, size, sh, b->shared_size)) {
            if (b->race)
                emu_race_shared(b, w, lane, addr - sh, size, store);
            return (void *)(uintptr_t)addr;
        }
        uint64_t lo = (uint64_t)(uintptr_t)b->local;
        if (b->local_bytes && inside(addr, size, lo, (uint64_t)b->nwarps * 32 * b->local_stride))
            return (void *)(uintptr_t)addr;
        uint64_t pa = (uint64_t)(uintptr_t)b->L->params;
        if (!store && inside(addr, size, pa, b->f->param_bytes))
            return (void *)(uintptr_t)addr;
    }
    emu_alloc a;
    if (emu_registry_find(addr, size, &a)) {
        if (a.written || b->race) {
            /* made under initcheck, or racecheck on: every access is seen (none is kept
             * in b->lo and hi, so warp.c's inline loads and stores come here too) */
            if (a.written)
                emu_init_access(b, w, lane, &a, addr, size, store);
            if (b->race)
                emu_race_global(b, w, lane, addr, size, store);
            return (void *)(uintptr_t)addr;
        }
        b->lo = a.base;
        b->hi = a.base + a.size;
        return (void *)(uintptr_t)addr;
    }
    fault_access(b, w, lane, space, addr, size, store, 0);
    return NULL;
}

/* ------------------------------------------------------------------ printf */

/* Bytes readable at a generic address, for printf's strings and argument buffers. */
static const uint8_t *
span(block *b, warp *w, uint64_t addr, size_t *avail)
{
    uint64_t sh = (uint64_t)(uintptr_t)b->shared;
    if (addr >= sh && addr < sh + b->shared_size) {
        *avail = sh + b->shared_size - addr;
        return (const uint8_t *)(uintptr_t)addr;
    }
    uint64_t lo = (uint64_t)(uintptr_t)b->local, lsz = (uint64_t)b->nwarps * 32 * b->local_stride;
    if (addr >= lo && addr < lo + lsz) {
        *avail = lo + lsz - addr;
        return (const uint8_t *)(uintptr_t)addr;
    }
    emu_alloc a;
    if (emu_registry_find(addr, 1, &a)) {
        *avail = a.base + a.size - addr;
        return (const uint8_t *)(uintptr_t)addr;
    }
    (void)w;
    return NULL;
}

/* printf's output of one call, gathered in a buffer that goes to the stream each time it
 * fills: a line of any length comes out whole, newlines included, as C's does. */
typedef struct {
    FILE *out;
    size_t n;
    char buf[4096];
} outbuf;

static void
put(outbuf *o, const char *s, size_t len)
{
    while (len > 0) {
        if (o->n == sizeof o->buf) {
            fwrite(o->buf, 1, o->n, o->out);
            o->n = 0;
        }
        size_t k = sizeof o->buf - o->n < len ? sizeof o->buf - o->n : len;
        memcpy(o->buf + o->n, s, k);
        o->n += k;
        s += k;
        len -= k;
    }
}

static void
pad(outbuf *o, long count)
{
    static const char spaces[] = "                                ";
    for (; count > 0; count -= 32)
        put(o, spaces, count < 32 ? (size_t)count : 32);
}

/* A string or pointer's text with C's width, left-justified by '-' or a negative `*`. */
static void
put_padded(outbuf *o, const char *s, size_t len, long width, int left)
{
    long fill = width > (long)len ? width - (long)len : 0;
    if (!left)
        pad(o, fill);
    put(o, s, len);
    if (left)
        pad(o, fill);
}

/* An integer argument as C's length modifiers have it: h a short, hh a char, l/ll/j/z/t
 * 64 bits (asz 8); signed for d and i. */
static long long
int_arg(uint64_t v, size_t asz, int hs, char conv)
{
    int sgn = conv == 'd' || conv == 'i';
    if (asz == 8)
        return (long long)v;
    if (hs >= 2)
        return sgn ? (long long)(int8_t)v : (long long)(uint8_t)v;
    if (hs == 1)
        return sgn ? (long long)(int16_t)v : (long long)(uint16_t)v;
    return sgn ? (long long)(int32_t)v : (long long)(uint32_t)v;
}

void
emu_do_printf(block *b, warp *w, int lane, uint64_t fmt_addr, uint64_t args_addr, FILE *out)
{
    size_t favail = 0, aavail = 0;
    const uint8_t *fmt = span(b, w, fmt_addr, &favail);
    const uint8_t *args = args_addr ? span(b, w, args_addr, &aavail) : NULL;
    if (fmt == NULL) {
        emu_fault_text(b, w, lane, CUDA_ERROR_ILLEGAL_ADDRESS, "printf's format string is not in memory");
        return;
    }
    size_t off = 0;
    outbuf o = {.out = out};
    flockfile(out); /* one call's output together, however many writes it takes */
    for (size_t i = 0; i < favail && fmt[i]; i++) {
        if (fmt[i] != '%') {
            put(&o, (const char *)&fmt[i], 1);
            continue;
        }
        if (i + 1 < favail && fmt[i + 1] == '%') {
            put(&o, "%", 1);
            i++;
            continue;
        }
        /* The spec is rebuilt with width and precision as numbers: a `*` takes an int
         * from the arguments as on the GPU (a negative width left-justifies, a negative
         * precision is none), and both are bounded by 4096 (so "%.999999999f" costs no
         * more than that). */
        char spec[64];
        size_t k = 0;
        int longs = 0, hs = 0;
        spec[k++] = '%';
        size_t j = i + 1;
        int left = 0;
        while (j < favail && fmt[j] && strchr("-+ #0", fmt[j])) {
            if (k < 8)
                spec[k++] = (char)fmt[j];
            left |= fmt[j] == '-';
            j++;
        }
        long width = -1, prec = -1;
        int star_left = 0;
        for (int part = 0; part < 2; part++) {
            long val = -1;
            if (part == 1) {
                if (!(j < favail && fmt[j] == '.'))
                    break;
                j++;
                val = 0;
            }
            if (j < favail && fmt[j] == '*') {
                j++;
                off = (off + 3) / 4 * 4;
                int32_t star = 0;
                if (args && off + 4 <= aavail)
                    memcpy(&star, args + off, 4);
                off += 4;
                val = star;
                if (part == 0 && star < 0) {
                    star_left = 1;
                    val = star == INT32_MIN ? (long)INT32_MAX : -(long)star;
                }
                if (part == 1 && star < 0)
                    val = -1;
            }
            else {
                while (j < favail && fmt[j] >= '0' && fmt[j] <= '9') {
                    val = (val < 0 ? 0 : val) * 10 + (fmt[j] - '0');
                    if (val > 1000000)
                        val = 1000000;
                    j++;
                }
            }
            if (val > (long)sizeof o.buf)
                val = (long)sizeof o.buf;
            if (part == 0)
                width = val;
            else
                prec = val;
        }
        left |= star_left;
        if (star_left && k < 9)
            spec[k++] = '-';
        if (width >= 0)
            k += (size_t)snprintf(spec + k, sizeof spec - k, "%ld", width);
        if (prec >= 0)
            k += (size_t)snprintf(spec + k, sizeof spec - k, ".%ld", prec);
        while (j < favail && fmt[j] && strchr("hlLqjzt", fmt[j])) {
            if (fmt[j] == 'h')
                hs++;
            else
                longs++;
            j++;
        }
        char conv = j < favail ? (char)fmt[j] : '\0';
        if (conv == '\0')
            break;
        i = j;
        size_t asz = (conv == 'f' || conv == 'F' || conv == 'e' || conv == 'E' || conv == 'g' ||
                      conv == 'G' || conv == 'a' || conv == 'A' || conv == 's' || conv == 'p' || longs)
                         ? 8 : 4;
        off = (off + asz - 1) / asz * asz;
        uint64_t v = 0;
        if (args && off + asz <= aavail)
            memcpy(&v, args + off, asz);
        off += asz;
        char piece[sizeof o.buf + 64];
        int m;
        if (strchr("fFeEgGaA", conv)) {
            spec[k++] = conv;
            spec[k] = '\0';
            m = snprintf(piece, sizeof piece, spec, D(v));
        }
        else if (conv == 's') {
            /* the string as far as its NUL, its precision or the memory it is in */
            size_t savail = 0, q = 0;
            const uint8_t *s = v ? span(b, w, v, &savail) : NULL;
            if (s == NULL) {
                s = (const uint8_t *)"(null)";
                savail = 6;
            }
            while (q < savail && s[q] && (prec < 0 || q < (size_t)prec))
                q++;
            put_padded(&o, (const char *)s, q, width, left);
            continue;
        }
        else if (conv == 'p') {
            m = snprintf(piece, sizeof piece, "0x%llx", (unsigned long long)v);
            put_padded(&o, piece, (size_t)m, width, left);
            continue;
        }
        else if (conv == 'c') {
            spec[k++] = 'c';
            spec[k] = '\0';
            m = snprintf(piece, sizeof piece, spec, (int)(uint8_t)v);
        }
        else if (strchr("diouxX", conv)) {
            spec[k++] = 'l';
            spec[k++] = 'l';
            spec[k++] = conv;
            spec[k] = '\0';
            m = snprintf(piece, sizeof piece, spec, int_arg(v, asz, hs, conv));
        }
        else {
            m = snprintf(piece, sizeof piece, "%%%c", conv);
        }
        if (m > 0)
            put(&o, piece, (size_t)m < sizeof piece - 1 ? (size_t)m : sizeof piece - 1);
    }
    fwrite(o.buf, 1, o.n, out);
    funlockfile(out);
}
