/* pool.h - memory/'s own: per-device pool, cache and staging state shared by buffer.c, pool.c and transfer.c */
#ifndef CUKIT_MEMORY_POOL_H
#define CUKIT_MEMORY_POOL_H

#include "memory/memory.h"

typedef struct cukit_stage cukit_stage;

/* The cache of freed blocks (pool.c): sizes are rounded into bins so that a block serves
 * any later request of its bin. */
#define CUKIT_CACHE_MIN_BLOCK 512u          /* the smallest bin */
#define CUKIT_CACHE_SMALL_MAX (1u << 20)    /* powers of two up to here ... */
#define CUKIT_CACHE_GRAIN (2u << 20)        /* ... multiples of 2 MiB above */
#define CUKIT_CACHE_SMALL_BINS 12           /* 512 B, 1 KiB, ..., 1 MiB */
#define CUKIT_CACHE_BIN_SLOTS 64            /* blocks per small bin */
#define CUKIT_CACHE_LARGE_SLOTS 64          /* blocks above 1 MiB, any size */
#define CUKIT_KEPT_SLOTS 32                 /* streams that keep scratch, per device */
#define CUKIT_KEPT_BYTES 65536u             /* a kept buffer's first size (cukit_stream_kept) */
#define CUKIT_CACHE_DEFAULT_LIMIT ((size_t)1 << 30) /* or an eighth of the device's memory */

/* What cukit keeps per device for its memory, made at the device's first allocation
 * or big copy and destroyed with the module (cukit_mem_teardown). */
typedef struct cukit_devmem {
    int ready;                       /* 1 once the pool is set up */
    CUcontext ctx;                   /* borrowed: the primary context, retained by Device */
    CUmemoryPool pool;               /* borrowed: the device's default pool; NULL: the
                                        driver has none, so plain cuMemAlloc/cuMemFree */
    cukit_stage *stage;              /* owned: staging buffers and threads, NULL until the
                                        first big pageable copy */
    int stage_failed;                /* 1: staging could not be set up; copies go direct */
    /* blocks that arrays let go of, ready in legacy-stream order (pool.c) */
    struct {
        CUdeviceptr ptr[CUKIT_CACHE_BIN_SLOTS]; /* owned: pool memory not given back */
        int n;                                  /* newest last */
    } small[CUKIT_CACHE_SMALL_BINS];
    struct {
        CUdeviceptr ptr;                        /* owned, as above */
        size_t size;                            /* a multiple of CUKIT_CACHE_GRAIN */
    } large[CUKIT_CACHE_LARGE_SLOTS];
    int nlarge;                                 /* oldest first */
    size_t cached_bytes;                        /* the blocks' rounded sizes, summed */
    size_t cache_limit;                         /* cached_bytes stays at or below */
    int cache_off;                              /* 1: never cache (cukit._keep_freed(False)) */
    /* scratch kept by streams (cukit_stream_kept), in the order first asked for */
    struct {
        unsigned long long id;                  /* the stream's cuStreamGetId */
        CUdeviceptr ptr[CUKIT_KEPT_KINDS];      /* owned, per kind (0: none yet): size[k]
                                                   bytes, freed with the context or when
                                                   it grows */
        size_t size[CUKIT_KEPT_KINDS];
        unsigned epoch[CUKIT_KEPT_KINDS];       /* the last epoch handed out */
    } kept[CUKIT_KEPT_SLOTS];
    int nkept;
    int kept_full;                              /* 1: a kept buffer could not be made */
} cukit_devmem;

/* The device's memory state, set up at first use; dev's context must be current.
 * Borrowed pointer into st->memory->devmem, or NULL with an exception. */
cukit_devmem *cukit_devmem_get(cukit_Device *dev);
/* The size cukit allocates for a request of n bytes (n >= 1): its bin (pool.c). */
size_t cukit_cache_round(size_t n);
/* Allocate n bytes (already rounded) from dm's pool (or plainly, without one). When the
 * device is full, give the cache back, wait for the frees still queued, then give the
 * pool's spare memory back, trying again after each: the GIL is released meanwhile. */
CUresult cukit_pool_alloc(cukit_Device *dev, cukit_devmem *dm, CUdeviceptr *p, size_t n);
/* A cached block of rounded size n, ready in legacy-stream order, or 0; the runtime's
 * reuse_epoch is bumped when one is handed out (see cukit_stream_used). Never raises. */
CUdeviceptr cukit_cache_take(cukit_Device *dev, cukit_devmem *dm, size_t n);
/* Cache the block (p, rounded size n) a Buffer lets go of, when that is safe now (pool.c)
 * and the cache has room. 1 when cached, 0 when the caller must free it. Never raises. */
int cukit_cache_put(cukit_Device *dev, cukit_devmem *dm, CUdeviceptr p, size_t n);
/* Free the block p ordered after every stream that may use it: cuMemFreeAsync on the
 * release stream, or cuMemFree (GIL released) without a pool. 0 / -1. */
int cukit_block_free(cukit_Device *dev, cukit_devmem *dm, CUdeviceptr p);
/* Give every cached block back to the pool, as cukit_block_free does. 0 / -1. */
int cukit_cache_flush(cukit_Device *dev, cukit_devmem *dm);
/* Raise OutOfMemoryError giving the requested and available sizes. */
void cukit_oom_error(cukit_state *st, size_t nbytes, const char *call);

#endif /* CUKIT_MEMORY_POOL_H */
