/* memory.c - the emulator's memory entry points: allocations in the registry, copies, memsets */
#include "emulator/checks.h"
#include "emulator/driver/entries.h"
#include "emulator/exec/texture.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ memory */

/* A fresh block reads as zero, as a GPU's new memory does in a fresh process (an H100's
 * did at every size tried): blocks of 64 KiB and more are mapped pages (zero, and taken
 * from the host only when touched); smaller ones are cleared. Either way the 512 bytes
 * before the block (outside every allocation, so a kernel that reaches them faults) say
 * how to give it back. The pool's reuse of a freed block keeps its bytes, as the
 * driver's pool does. */
#define BLOCK_HEAD 512
#define BLOCK_MAGIC 0x636b626cu
#define MAPPED_FROM ((size_t)64 << 10)

typedef struct {
    uint32_t magic;
    size_t mapped; /* bytes mapped from the header's page on, 0: from aligned_alloc */
} block_head;

static void *
fresh_block(size_t n)
{
    size_t rounded = (n + 511) / 512 * 512;
    if (rounded < n || rounded > SIZE_MAX - 2 * 4096)
        return NULL;
    char *base;
    size_t mapped = 0, at;
    if (rounded >= MAPPED_FROM) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        at = (BLOCK_HEAD + page - 1) / page * page; /* the block starts on a page */
        mapped = at + (rounded + page - 1) / page * page;
        base = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED)
            return NULL;
    }
    else {
        at = BLOCK_HEAD;
        if ((base = aligned_alloc(512, at + rounded)) == NULL)
            return NULL;
        memset(base + at, 0, rounded);
    }
    block_head *h = (block_head *)(base + at - BLOCK_HEAD);
    h->magic = BLOCK_MAGIC;
    h->mapped = mapped;
    return base + at;
}

/* Give back a block of fresh_block (NULL passes). */
static void
release_block(void *p)
{
    if (p == NULL)
        return;
    block_head *h = (block_head *)((char *)p - BLOCK_HEAD);
    if (h->magic != BLOCK_MAGIC)
        abort(); /* not a block of ours: a bug in this file, never a user's input */
    h->magic = 0;
    if (h->mapped) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        munmap((char *)p - (BLOCK_HEAD + page - 1) / page * page, h->mapped);
    }
    else
        free(h);
}

/* Allocations are whole 256-byte units, as the driver's. */
static size_t
units(size_t n)
{
    return (n + 255) / 256 * 256;
}

/* A new allocation of n bytes registered as `kind`, made at `origin`. */
static CUresult
alloc_at(CUdeviceptr *p, size_t n, int kind, const char *origin)
{
    if (n == 0)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "a zero-byte allocation");
    CUresult lost = emu_context_lost();
    if (lost != CUDA_SUCCESS)
        return lost;
    uint64_t total = emu_total_memory(), used = emu_used_bytes + emu_pool_cached_bytes();
    if ((used > total || n > total - used) && emu_deferring()) {
        /* Frees still queued: the device would have got to them by now. */
        emu_sync_all();
        used = emu_used_bytes + emu_pool_cached_bytes();
    }
    if (used > total || n > total - used)
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "the emulated device has %llu bytes free",
                          (unsigned long long)(used < total ? total - used : 0));
    /* 512-byte aligned, as a GPU's allocations are in practice (its texture alignment) */
    void *mem = fresh_block(n);
    if (mem == NULL)
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "the host could not provide %zu bytes", n);
    if (emu_registry_add((uint64_t)(uintptr_t)mem, n, kind, origin) < 0) {
        release_block(mem);
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    *p = (CUdeviceptr)(uintptr_t)mem;
    return emu_ok();
}

static CUresult
alloc_kind(CUdeviceptr *p, size_t n, int kind, const char *what)
{
    char origin[160];
    emu_origin_of(origin, sizeof origin, what);
    return alloc_at(p, n, kind, origin);
}

static CUresult
e_cuMemAlloc(CUdeviceptr *p, size_t n)
{
    return emu_capture_unsafe("cuMemAlloc") ?: alloc_kind(p, n, EMU_DEVICE, "an unknown place");
}

/* ------------------------------------------------------------------ the stream-ordered pool
 *
 * The device's default pool. Work runs when it is issued, so a free queued on any
 * stream is complete at once (under deferred execution, when its stream reaches it:
 * defer.c): the block leaves the registry (a kernel that still uses
 * it faults as "already freed") and waits in the pool's cache, where a later
 * allocation of a size that fits takes it back. The cache counts as device memory in
 * use, as the driver counts a pool's reserved memory, until cuMemPoolTrimTo or the
 * release threshold gives it back. The driver's pool carves any request out of the
 * memory it reserved, so what it reserves stays within the most ever in use at once;
 * the cache holds whole blocks, so an allocation that no cached block fits first gives
 * cached blocks back until the pool reserves no more than that high mark (without it,
 * allocations of ever-new sizes grew the cache without end). */

struct CUmemPoolHandle_st {
    int magic;
};
static struct CUmemPoolHandle_st default_pool;

typedef struct {
    void *mem;
    size_t cap; /* whole units */
} cached_block;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static cached_block *cache;   /* owned, with each block's memory */
static size_t ncache, capcache;
static uint64_t cached_bytes, used_bytes, used_high, reserved_high;
static uint64_t release_threshold; /* the driver's default: give back at once */

uint64_t
emu_pool_cached_bytes(void)
{
    return __atomic_load_n(&cached_bytes, __ATOMIC_RELAXED);
}

/* Give cached blocks back until the pool reserves at most keep bytes. pool_lock held. */
static void
trim_locked(uint64_t keep)
{
    while (ncache > 0 && used_bytes + cached_bytes > keep) {
        ncache--;
        release_block(cache[ncache].mem);
        __atomic_fetch_sub(&cached_bytes, cache[ncache].cap, __ATOMIC_RELAXED);
    }
}

static CUresult
pool_alloc(CUdeviceptr *p, size_t n)
{
    if (n == 0)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "a zero-byte allocation");
    /* Where Python asked for it, before taking the lock: reading the frames may run the
     * garbage collector, whose frees take the lock too. */
    char origin[160];
    emu_origin_of(origin, sizeof origin, "an unknown place");
    size_t want = units(n), best = SIZE_MAX;
    pthread_mutex_lock(&pool_lock);
    /* The smallest cached block that fits without wasting more than half of it. */
    for (size_t i = 0; i < ncache; i++)
        if (cache[i].cap >= want && cache[i].cap / 2 <= want &&
            (best == SIZE_MAX || cache[i].cap < cache[best].cap))
            best = i;
    cached_block b = {NULL, 0};
    if (best != SIZE_MAX) {
        b = cache[best];
        cache[best] = cache[--ncache];
        __atomic_fetch_sub(&cached_bytes, b.cap, __ATOMIC_RELAXED);
    }
    used_bytes += want;
    used_high = used_bytes > used_high ? used_bytes : used_high;
    if (best == SIZE_MAX)
        trim_locked(used_high);
    reserved_high = used_bytes + cached_bytes > reserved_high ? used_bytes + cached_bytes : reserved_high;
    pthread_mutex_unlock(&pool_lock);
    CUresult r;
    if (b.mem) {
        if (emu_registry_add((uint64_t)(uintptr_t)b.mem, n, EMU_POOLED, origin) < 0) {
            release_block(b.mem);
            r = emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
        }
        else {
            *p = (CUdeviceptr)(uintptr_t)b.mem;
            r = emu_ok();
        }
    }
    else
        r = alloc_at(p, n, EMU_POOLED, origin);
    if (r != CUDA_SUCCESS) {
        pthread_mutex_lock(&pool_lock);
        used_bytes -= want;
        pthread_mutex_unlock(&pool_lock);
    }
    return r;
}

/* p is the start of device memory (0 passes). */
static CUresult
check_free(CUdeviceptr p)
{
    emu_alloc a;
    if (p != 0 && (!emu_registry_containing(p, &a) || a.base != p ||
                   (a.kind != EMU_DEVICE && a.kind != EMU_MANAGED && a.kind != EMU_POOLED)))
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "0x%llx is not the start of device memory",
                          (unsigned long long)p);
    if (p != 0 && emu_capture_freed(p))
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "0x%llx was freed already, in a stream capture "
                          "(its graph frees it)", (unsigned long long)p);
    return CUDA_SUCCESS;
}

/* Free p, whichever allocator made it: a pool block goes to the cache. */
static CUresult
free_device(CUdeviceptr p)
{
    emu_alloc a;
    if (p == 0)
        return emu_ok();
    CUresult c = check_free(p);
    if (c != CUDA_SUCCESS)
        return c;
    if (emu_registry_remove(p, &a) < 0)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "0x%llx was freed twice at once",
                          (unsigned long long)p);
    if (a.kind != EMU_POOLED) {
        release_block((void *)(uintptr_t)p);
        return emu_ok();
    }
    pthread_mutex_lock(&pool_lock);
    size_t cap = units(a.size);
    used_bytes -= cap;
    if (ncache == capcache) {
        size_t more = capcache ? capcache * 2 : 64;
        cached_block *v = realloc(cache, more * sizeof *v);
        if (v == NULL) {
            release_block((void *)(uintptr_t)p); /* not kept, still freed */
            pthread_mutex_unlock(&pool_lock);
            return emu_ok();
        }
        cache = v;
        capcache = more;
    }
    cache[ncache].mem = (void *)(uintptr_t)p;
    cache[ncache].cap = cap;
    ncache++;
    __atomic_fetch_add(&cached_bytes, cap, __ATOMIC_RELAXED);
    trim_locked(release_threshold);
    pthread_mutex_unlock(&pool_lock);
    return emu_ok();
}

/* cuMemFree waits for the device first (deferred work that uses p runs before it goes);
 * cuMemFreeAsync frees when the stream reaches it. */
static CUresult e_cuMemFree(CUdeviceptr p) { emu_sync_all(); return free_device(p); }

static CUresult
e_cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    CUresult r = emu_check_stream(s) ?: check_free(p);
    if (r != CUDA_SUCCESS)
        return r;
    graph *g = emu_capturing(s);
    if (g)
        return emu_graph_keep(g, p, free_device) < 0
                   ? emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory") : emu_ok();
    return emu_defer_free(s, p, free_device) ? free_device(p) : emu_ok();
}
/* On a stream being captured an allocation is a node of the graph (made at once here);
 * on the legacy stream it is an unsafe call under a strict capture (the H100 refused
 * it). On another stream it is not refused: whether the driver does is not measured. */
static CUresult
pool_alloc_on(CUdeviceptr *p, size_t n, CUstream s, const char *call)
{
    int legacy = s == NULL || s == CU_STREAM_LEGACY;
    CUresult r = emu_check_stream(s) ?: (legacy ? emu_capture_unsafe(call) : CUDA_SUCCESS) ?: pool_alloc(p, n);
    graph *g = r == CUDA_SUCCESS ? emu_capturing(s) : NULL;
    if (g && emu_graph_keep(g, 0, free_device) < 0) /* the graph has an allocation node now */
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    return r;
}

static CUresult e_cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s) { return pool_alloc_on(p, n, s, "cuMemAllocAsync"); }

static CUresult
e_cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice d)
{
    if (d != 0)
        return emu_failed(CUDA_ERROR_INVALID_DEVICE, "the emulator has one device, 0");
    *pool = &default_pool;
    return emu_ok();
}

static CUresult
check_pool(CUmemoryPool pool)
{
    return pool == &default_pool ? CUDA_SUCCESS
                                 : emu_failed(CUDA_ERROR_INVALID_VALUE, "the emulator has one memory pool, the device's default");
}

static CUresult
e_cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s)
{
    return check_pool(pool) ?: pool_alloc_on(p, n, s, "cuMemAllocFromPoolAsync");
}

static CUresult
e_cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    CUresult r = check_pool(pool);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&pool_lock);
    trim_locked(keep);
    /* What was in use before a trim no longer bounds the cache: the most in use counts
     * afresh from here (else one large array early in a process let the cache keep that
     * much for ever). */
    used_high = used_bytes;
    pthread_mutex_unlock(&pool_lock);
    return emu_ok();
}

/* The attributes the driver reads as int are the reuse switches (accepted; a free is
 * always complete here); the byte counts are 64-bit. */
static CUresult
pool_attribute(CUmemoryPool pool, int attr, void *value, int set)
{
    CUresult r = check_pool(pool);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&pool_lock);
    uint64_t *v = value, reserved = used_bytes + cached_bytes;
    r = CUDA_SUCCESS;
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        if (!set)
            *(int *)value = 1;
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        if (set) {
            release_threshold = *v;
            trim_locked(release_threshold);
        }
        else
            *v = release_threshold;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: if (!set) *v = reserved; else r = CUDA_ERROR_INVALID_VALUE; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: if (!set) *v = used_bytes; else r = CUDA_ERROR_INVALID_VALUE; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: if (set) reserved_high = reserved; else *v = reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: if (set) used_high = used_bytes; else *v = used_high; break;
    default: r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&pool_lock);
    return r == CUDA_SUCCESS ? emu_ok() : emu_failed(r, "the emulator's pool has no settable attribute %d", attr);
}

static CUresult e_cuMemPoolSetAttribute(CUmemoryPool pool, int attr, void *v) { return pool_attribute(pool, attr, v, 1); }
static CUresult e_cuMemPoolGetAttribute(CUmemoryPool pool, int attr, void *v) { return pool_attribute(pool, attr, v, 0); }

/* ------------------------------------------------------------------ copies and sets */

static CUresult
check_dev(CUdeviceptr p, size_t n, const char *what)
{
    if (n == 0 || emu_valid_range(p, n))
        return CUDA_SUCCESS;
    return emu_failed(CUDA_ERROR_INVALID_VALUE, "%s: [0x%llx, +%zu) is not inside one allocation", what,
                  (unsigned long long)p, n);
}

CUresult
emu_copy_now(CUdeviceptr dst, const void *src, size_t n, int dst_dev, int src_dev)
{
    CUresult r;
    if (dst_dev && (r = check_dev(dst, n, "copy destination")) != CUDA_SUCCESS)
        return r;
    if (src_dev && (r = check_dev((CUdeviceptr)(uintptr_t)src, n, "copy source")) != CUDA_SUCCESS)
        return r;
    if (n)
        memmove((void *)(uintptr_t)dst, src, n);
    emu_mark_written(dst, n);
    return emu_ok();
}

/* A copy queued on a stream being captured becomes a graph node; a host source is
 * read at replay, as with the driver. */
static CUresult
capture_copy(graph *g, CUdeviceptr dst, const void *src, size_t n)
{
    node *nd = emu_graph_add(g, N_MEMCPY);
    if (nd == NULL)
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    nd->dst = dst;
    nd->pitch = (size_t)(uintptr_t)src;
    nd->width = n;
    nd->height = 1;
    return emu_ok();
}

/* The synchronous copies are issued on the legacy stream and wait for the device, so
 * they run what they are ordered after and report a held fault. */
/* From pageable memory the driver returns once the bytes are staged, before the DMA ends
 * on the legacy stream: deferred execution queues it there (staged), so a non-blocking
 * stream that reads the destination without waiting sees the race. */
static CUresult
e_cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n)
{
    emu_sync_legacy();
    CUresult r = emu_take_pending();
    if (r != CUDA_SUCCESS)
        return r;
    if (!emu_host_pinned(s) && n > 0) {
        if ((r = check_dev(d, n, "copy destination")) != CUDA_SUCCESS)
            return r;
        if (emu_defer_copy(NULL, d, s, n, 1, 0, emu_copy_now) == 0)
            return emu_ok();
    }
    return emu_copy_now(d, s, n, 1, 0);
}
static CUresult e_cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) { emu_sync_legacy(); return emu_take_pending() ?: emu_copy_now((CUdeviceptr)(uintptr_t)d, (const void *)(uintptr_t)s, n, 0, 1); }
static CUresult e_cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n) { emu_sync_legacy(); return emu_take_pending() ?: emu_copy_now(d, (const void *)(uintptr_t)s, n, 1, 1); }

/* An async copy: recorded while capturing; else checked, then queued or run. */
static CUresult
copy_on(CUstream st, CUdeviceptr d, const void *s, size_t n, int dst_dev, int src_dev)
{
    CUresult r = emu_check_stream(st);
    if (r != CUDA_SUCCESS)
        return r;
    graph *g = emu_capturing(st);
    if (g)
        return capture_copy(g, d, s, n);
    if ((dst_dev && (r = check_dev(d, n, "copy destination")) != CUDA_SUCCESS) ||
        (src_dev && (r = check_dev((CUdeviceptr)(uintptr_t)s, n, "copy source")) != CUDA_SUCCESS))
        return r;
    return emu_defer_copy(st, d, s, n, dst_dev, src_dev, emu_copy_now) ? emu_copy_now(d, s, n, dst_dev, src_dev) : emu_ok();
}

static CUresult e_cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream st) { return copy_on(st, d, s, n, 1, 0); }
static CUresult e_cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream st) { return copy_on(st, (CUdeviceptr)(uintptr_t)d, (const void *)(uintptr_t)s, n, 0, 1); }
static CUresult e_cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return copy_on(st, d, (const void *)(uintptr_t)s, n, 1, 1); }

CUresult
emu_memset_now(CUdeviceptr p, size_t pitch, unsigned value, size_t elem, size_t width, size_t height)
{
    if (width == 0 || height == 0)
        return emu_ok();
    CUresult r = check_dev(p, pitch * (height - 1) + width * elem, "memset destination");
    if (r != CUDA_SUCCESS)
        return r;
    for (size_t y = 0; y < height; y++) {
        unsigned char *row = (unsigned char *)(uintptr_t)(p + y * pitch);
        switch (elem) {
        case 1: memset(row, (int)(value & 0xff), width); break;
        case 2: for (size_t x = 0; x < width; x++) ((uint16_t *)row)[x] = (uint16_t)value; break;
        default: for (size_t x = 0; x < width; x++) ((uint32_t *)row)[x] = value; break;
        }
        emu_mark_written(p + y * pitch, width * elem);
    }
    return emu_ok();
}

static CUresult
memset_on(CUstream st, CUdeviceptr p, size_t pitch, unsigned value, size_t elem, size_t w, size_t h)
{
    CUresult r = emu_check_stream(st);
    if (r != CUDA_SUCCESS)
        return r;
    graph *g = emu_capturing(st);
    if (g == NULL) {
        if (w == 0 || h == 0)
            return emu_ok();
        if ((r = check_dev(p, pitch * (h - 1) + w * elem, "memset destination")) != CUDA_SUCCESS)
            return r;
        return emu_defer_memset(st, p, pitch, value, elem, w, h, emu_memset_now) ? emu_memset_now(p, pitch, value, elem, w, h)
                                                                 : emu_ok();
    }
    node *nd = emu_graph_add(g, N_MEMSET);
    if (nd == NULL)
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    nd->dst = p;
    nd->pitch = pitch;
    nd->value = value;
    nd->elem = elem;
    nd->width = w;
    nd->height = h;
    return emu_ok();
}

static CUresult e_cuMemsetD8(CUdeviceptr p, unsigned char v, size_t n) { emu_sync_legacy(); return emu_memset_now(p, n, v, 1, n, 1); }
static CUresult e_cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) { return memset_on(s, p, n, v, 1, n, 1); }
static CUresult e_cuMemsetD16Async(CUdeviceptr p, unsigned short v, size_t n, CUstream s) { return memset_on(s, p, n * 2, v, 2, n, 1); }
static CUresult e_cuMemsetD2D8Async(CUdeviceptr p, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) { return memset_on(s, p, pitch, v, 1, w, h); }
static CUresult e_cuMemsetD2D16Async(CUdeviceptr p, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) { return memset_on(s, p, pitch, v, 2, w, h); }
static CUresult e_cuMemsetD2D32Async(CUdeviceptr p, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s) { return memset_on(s, p, pitch, v, 4, w, h); }

/* One side of a copy: where its bytes start, its row pitch and rows a slice, and for a
 * CUDA array its size (device memory is checked against the registry instead). */
typedef struct {
    unsigned char *base;
    size_t pitch, rows, bytes;
    int type;
} copy_side;

static CUresult
side(copy_side *s, CUmemorytype type, const void *host, CUdeviceptr dev, CUarray array,
     size_t pitch, size_t rows, size_t height)
{
    s->type = type;
    if (type == CU_MEMORYTYPE_ARRAY) {
        if (!emu_array_span(array, &s->base, &s->pitch, &s->rows, &s->bytes))
            return emu_failed(CUDA_ERROR_INVALID_VALUE, "a copy names a CUDA array that is not alive");
        return CUDA_SUCCESS;
    }
    s->base = (unsigned char *)(type == CU_MEMORYTYPE_HOST ? (uintptr_t)host : (uintptr_t)dev);
    s->pitch = pitch;
    s->rows = rows ? rows : height;
    return CUDA_SUCCESS;
}

/* The span [base + off, + len) of a side is inside its memory. */
static CUresult
check_side(const copy_side *s, size_t off, size_t len, const char *what)
{
    if (s->type == CU_MEMORYTYPE_ARRAY)
        return off + len <= s->bytes && off + len >= off
                   ? CUDA_SUCCESS
                   : emu_failed(CUDA_ERROR_INVALID_VALUE, "%s: the region runs past the CUDA array's "
                                "%zu bytes", what, s->bytes);
    if (s->type == CU_MEMORYTYPE_HOST)
        return CUDA_SUCCESS;
    return check_dev((CUdeviceptr)(uintptr_t)(s->base + off), len, what);
}

CUresult
emu_copy3d(const CUDA_MEMCPY3D *c, int run)
{
    copy_side src, dst;
    CUresult r;
    if ((r = side(&src, c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcPitch,
                  c->srcHeight, c->Height)) != CUDA_SUCCESS ||
        (r = side(&dst, c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstPitch,
                  c->dstHeight, c->Height)) != CUDA_SUCCESS)
        return r;
    size_t depth = c->Depth ? c->Depth : 1;
    if (c->WidthInBytes == 0 || c->Height == 0)
        return emu_ok();
    /* the first byte and the span of each side */
    size_t soff = (c->srcZ * src.rows + c->srcY) * src.pitch + c->srcXInBytes;
    size_t doff = (c->dstZ * dst.rows + c->dstY) * dst.pitch + c->dstXInBytes;
    size_t sspan = ((depth - 1) * src.rows + c->Height - 1) * src.pitch + c->WidthInBytes;
    size_t dspan = ((depth - 1) * dst.rows + c->Height - 1) * dst.pitch + c->WidthInBytes;
    if ((r = check_side(&src, soff, sspan, "copy source")) != CUDA_SUCCESS ||
        (r = check_side(&dst, doff, dspan, "copy destination")) != CUDA_SUCCESS)
        return r;
    for (size_t z = 0; run && z < depth; z++) {
        for (size_t y = 0; y < c->Height; y++) {
            const unsigned char *from = src.base + soff + (z * src.rows + y) * src.pitch;
            unsigned char *to = dst.base + doff + (z * dst.rows + y) * dst.pitch;
            memmove(to, from, c->WidthInBytes);
            if (dst.type != CU_MEMORYTYPE_ARRAY)
                emu_mark_written((uint64_t)(uintptr_t)to, c->WidthInBytes);
        }
    }
    return emu_ok();
}

static CUresult
e_cuMemcpy3D(const CUDA_MEMCPY3D *c)
{
    emu_sync_legacy();
    return emu_copy3d(c, 1);
}

static CUresult
copy3d_on(const CUDA_MEMCPY3D *c, CUstream s)
{
    CUresult r = emu_check_stream(s);
    if (r != CUDA_SUCCESS)
        return r;
    if (emu_capturing(s))
        return emu_failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator cannot capture 2-D or 3-D copies into a graph");
    if ((r = emu_copy3d(c, 0)) != CUDA_SUCCESS)
        return r;
    return emu_defer_copy3d(s, c, emu_copy3d) ? emu_copy3d(c, 1) : emu_ok();
}

static CUresult e_cuMemcpy3DAsync(const CUDA_MEMCPY3D *c, CUstream s) { return copy3d_on(c, s); }

static void
to_3d(CUDA_MEMCPY3D *t, const CUDA_MEMCPY2D *c)
{
    memset(t, 0, sizeof *t);
    t->srcXInBytes = c->srcXInBytes, t->srcY = c->srcY, t->srcMemoryType = c->srcMemoryType;
    t->srcHost = c->srcHost, t->srcDevice = c->srcDevice, t->srcArray = c->srcArray;
    t->srcPitch = c->srcPitch;
    t->dstXInBytes = c->dstXInBytes, t->dstY = c->dstY, t->dstMemoryType = c->dstMemoryType;
    t->dstHost = c->dstHost, t->dstDevice = c->dstDevice, t->dstArray = c->dstArray;
    t->dstPitch = c->dstPitch;
    t->WidthInBytes = c->WidthInBytes, t->Height = c->Height, t->Depth = 1;
}

static CUresult
e_cuMemcpy2D(const CUDA_MEMCPY2D *c)
{
    CUDA_MEMCPY3D t;
    to_3d(&t, c);
    emu_sync_legacy();
    return emu_copy3d(&t, 1);
}

static CUresult
e_cuMemcpy2DAsync(const CUDA_MEMCPY2D *c, CUstream s)
{
    CUDA_MEMCPY3D t;
    to_3d(&t, c);
    return copy3d_on(&t, s);
}

static CUresult
e_cuMemHostAlloc(void **p, size_t n, unsigned int flags)
{
    CUdeviceptr d = 0;
    CUresult r = alloc_kind(&d, n ? n : 1, EMU_HOST, "pinned memory");
    if (r == CUDA_SUCCESS)
        *p = (void *)(uintptr_t)d;
    return r;
}

static CUresult
e_cuMemFreeHost(void *p)
{
    emu_alloc a;
    emu_sync_all();
    if (!emu_registry_containing((uint64_t)(uintptr_t)p, &a) || a.base != (uint64_t)(uintptr_t)p ||
        a.kind != EMU_HOST || emu_registry_remove((uint64_t)(uintptr_t)p, &a) < 0)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "%p is not pinned memory", p);
    release_block(p);
    return emu_ok();
}

static CUresult
e_cuMemHostGetDevicePointer(CUdeviceptr *d, void *p, unsigned int flags)
{
    *d = (CUdeviceptr)(uintptr_t)p;
    return emu_ok();
}

static CUresult
e_cuMemHostRegister(void *p, size_t n, unsigned int flags)
{
    emu_alloc a;
    if (emu_registry_containing((uint64_t)(uintptr_t)p, &a))
        return emu_failed(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "the memory is already registered");
    char origin[160];
    emu_origin_of(origin, sizeof origin, "registered host memory");
    return emu_registry_add((uint64_t)(uintptr_t)p, n, EMU_REGISTERED, origin) < 0
               ? emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory") : emu_ok();
}

static CUresult
e_cuMemHostUnregister(void *p)
{
    emu_sync_all();
    return emu_registry_remove((uint64_t)(uintptr_t)p, NULL) < 0
               ? emu_failed(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "the memory is not registered") : emu_ok();
}

static CUresult
e_cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags)
{
    return alloc_kind(p, n, EMU_MANAGED, "managed memory");
}

static CUresult
e_cuPointerGetAttribute(void *out, int attr, CUdeviceptr p)
{
    emu_alloc a;
    if (!emu_registry_containing(p, &a))
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "0x%llx is not memory the emulator knows", (unsigned long long)p);
    if (attr == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) {
        *(int *)out = 0;
        return emu_ok();
    }
    if (attr == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
        *(unsigned int *)out = a.kind == EMU_HOST || a.kind == EMU_REGISTERED ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        return emu_ok();
    }
    return emu_failed(CUDA_ERROR_INVALID_VALUE, "the emulator does not know pointer attribute %d", attr);
}

static CUresult e_cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int f, CUstream s) { return emu_ok(); }
static CUresult e_cuMemAdvise(CUdeviceptr p, size_t n, int advice, CUmemLocation loc) { return emu_ok(); }


void
emu_fill_memory(cukit_api_t *api)
{
#define E(name) api->name = e_##name;
    E(cuMemAlloc) E(cuMemFree) E(cuMemAllocAsync) E(cuMemFreeAsync) E(cuDeviceGetDefaultMemPool) E(cuMemAllocFromPoolAsync) E(cuMemPoolTrimTo) E(cuMemPoolSetAttribute) E(cuMemPoolGetAttribute) E(cuMemcpyHtoD) E(cuMemcpyDtoH) E(cuMemcpyDtoD) E(cuMemcpyHtoDAsync) E(cuMemcpyDtoHAsync) E(cuMemcpyDtoDAsync) E(cuMemsetD8) E(cuMemsetD8Async) E(cuMemsetD16Async) E(cuMemsetD2D8Async) E(cuMemsetD2D16Async) E(cuMemsetD2D32Async) E(cuMemcpy3D) E(cuMemcpy3DAsync) E(cuMemcpy2D) E(cuMemcpy2DAsync) E(cuMemHostAlloc) E(cuMemFreeHost) E(cuMemHostGetDevicePointer) E(cuMemHostRegister) E(cuMemHostUnregister) E(cuMemAllocManaged) E(cuPointerGetAttribute) E(cuMemPrefetchAsync) E(cuMemAdvise)
#undef E
}
