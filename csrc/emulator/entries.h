/* entries.h - what the emulator's driver-table files share: errors, held faults, streams and graphs */
#ifndef CUKIT_EMU_ENTRIES_H
#define CUKIT_EMU_ENTRIES_H

#include "emulator/emu.h"

/* driver.c */
/* Fail with `code`; the text is what cuGetErrorString returns for it on this thread. */
CUresult emu_failed(CUresult code, const char *fmt, ...);
/* Success (the last failure's text stays readable). */
CUresult emu_ok(void);
/* Hold a kernel fault for the next call that waits; report (and clear) it there. */
void emu_set_pending(CUresult code, const char *why);
CUresult emu_take_pending(void);
/* 1 when [p, p+n) lies inside one registered allocation. */
int emu_valid_range(CUdeviceptr p, size_t n);
/* "test_x.py:31": the Python line asking for memory, else `what`. */
void emu_origin_of(char *buf, size_t n, const char *what);
/* The emulated architecture (90 for sm_90, CUKIT_EMULATOR_ARCH) and memory size. */
int emu_arch_cc(void);
size_t emu_total_memory(void);
extern uint64_t emu_used_bytes;
extern struct CUctx_st emu_primary_ctx;

/* streams.c */
enum { N_KERNEL = 0, N_MEMCPY = 1, N_MEMSET = 2 };

typedef struct CUgraphNode_st {
    int type;
    /* kernel */
    emu_func *func;
    unsigned grid[3], block[3], shared;
    unsigned char *params;     /* owned: param_bytes */
    void **ptrs;               /* owned: one pointer per parameter into params */
    /* copy / set */
    CUdeviceptr dst;
    const void *src;
    size_t pitch, width, height, elem;
    unsigned value;
} node;

typedef struct CUgraph_st {
    node **nodes;
    size_t n, cap;
} graph;

typedef struct CUgraphExec_st {
    graph g;
    graph *from;               /* borrowed: the graph it was made from, for node lookups */
} graph_exec;

typedef struct CUstream_st {
    int magic;
    graph *capture;            /* owned until EndCapture: the graph being recorded */
} stream;

enum { STREAM_MAGIC = 0x5354524d };

/* The stream behind a handle, NULL for the default streams and unknown handles. */
stream *emu_stream_of(CUstream h);
/* CUDA_SUCCESS for a live or default stream, else CUDA_ERROR_INVALID_HANDLE. */
CUresult emu_check_stream(CUstream h);
/* The graph a stream is capturing into, or NULL. */
graph *emu_capturing(CUstream h);
node *emu_graph_add(graph *g, int type);
void emu_node_free(node *n);
/* Copy a kernel node's function, configuration and parameter values. */
CUresult emu_set_kernel_params(node *n, const CUDA_KERNEL_NODE_PARAMS *p);
void emu_fill_streams(cukit_api_t *api);

/* memory.c */
CUresult emu_copy_now(CUdeviceptr dst, const void *src, size_t n, int dst_dev, int src_dev);
CUresult emu_memset_now(CUdeviceptr p, size_t pitch, unsigned value, size_t elem, size_t width,
                        size_t height);
void emu_fill_memory(cukit_api_t *api);
/* Bytes the stream-ordered pool holds for reuse (freed, not trimmed): device memory
 * in use, as the driver counts it. */
uint64_t emu_pool_cached_bytes(void);

/* texture.c */
void emu_fill_textures(cukit_api_t *api);
/* A live CUDA array's bytes: data, row pitch, rows a slice, all bytes. 1, or 0 when h
 * is not a live array. */
int emu_array_span(CUarray h, unsigned char **data, size_t *pitch, size_t *rows, size_t *bytes);

/* launch.c */
/* Check and run (or, during a capture, record) one launch. */
CUresult emu_launch_kernel(emu_func *f, const unsigned grid[3], const unsigned block[3], unsigned shared,
                    CUstream s, void **params, void **extra);
void emu_fill_launch(cukit_api_t *api);
/* Peer access: NotSupported, saying the emulator cannot. */
void emu_fill_unsupported(cukit_api_t *api);

#endif /* CUKIT_EMU_ENTRIES_H */
