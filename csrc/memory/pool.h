/* pool.h - memory/'s own: per-device pool and staging state shared by buffer.c, pool.c and transfer.c */
#ifndef CUKIT_MEMORY_POOL_H
#define CUKIT_MEMORY_POOL_H

#include "memory/memory.h"

typedef struct cukit_stage cukit_stage;

#define CUKIT_KEEP_SLOTS 16            /* freed blocks kept per device for reuse */
#define CUKIT_KEEP_MAX_BLOCK (8u << 20) /* larger blocks go straight back to the pool */
#define CUKIT_KEEP_MAX_BYTES (32u << 20) /* transfer.c: one device's staging pipeline */

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
    /* recently freed blocks kept for the next kernel output of the same size (pool.c) */
    struct {
        CUdeviceptr ptr;             /* owned: pool memory not yet given back */
        size_t size;
    } kept[CUKIT_KEEP_SLOTS];
    int nkept;
    size_t kept_bytes;
    int keep_off;                    /* 1: never keep (cukit._keep_freed(False)) */
} cukit_devmem;

/* The device's memory state, set up at first use; dev's context must be current.
 * Borrowed pointer into st->memory->devmem, or NULL with an exception. */
cukit_devmem *cukit_devmem_get(cukit_Device *dev);
/* Allocate n bytes from dm's pool (or plainly, without one). When the device is
 * full, wait for the frees still queued, then give the pool's spare memory back,
 * trying again after each: the GIL is released meanwhile. */
CUresult cukit_pool_alloc(cukit_Device *dev, cukit_devmem *dm, CUdeviceptr *p, size_t n);
/* Keep the block (p, n) that a Buffer lets go of for cukit_keep_take, when that is
 * safe now: see the rule in pool.c; the oldest kept blocks go back to the pool to make
 * room. 1 when kept (nothing else to do), 0 when the caller must free it. Never raises. */
int cukit_keep_put(cukit_Device *dev, cukit_devmem *dm, CUdeviceptr p, size_t n);
/* A kept block of exactly n bytes, or 0. Only for memory that work queued next on the
 * legacy stream writes first (pool.c). Never raises. */
CUdeviceptr cukit_keep_take(cukit_devmem *dm, size_t n);
/* Give every kept block back to the pool, ordered as any free is. 0 / -1. */
int cukit_keep_flush(cukit_Device *dev, cukit_devmem *dm);
/* Raise OutOfMemoryError giving the requested and available sizes. */
void cukit_oom_error(cukit_state *st, size_t nbytes, const char *call);

#endif /* CUKIT_MEMORY_POOL_H */
