/* launch.c - the emulator's modules, functions, occupancy and kernel launches */
#include "emulator/driver/entries.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ modules and functions */

static CUresult
e_cuModuleLoadData(CUmodule *out, const void *image)
{
    const unsigned char *b = image;
    if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F')
        return emu_failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator runs PTX, not machine code: this image "
                      "is a cubin. Load PTX instead (Program.ptx(), or cukit.compile, which asks for "
                      "PTX under the emulator)");
    uint32_t magic;
    memcpy(&magic, b, 4);
    if (magic == 0xBA55ED50u || magic == 0x466243B1u)
        return emu_failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator runs PTX, not machine code: this image "
                      "is a fatbin. Load PTX instead");
    CUresult lost = emu_context_lost();
    if (lost != CUDA_SUCCESS)
        return lost;
    char why[1024] = "";
    emu_module *m = emu_ptx_load((const char *)image, why, sizeof why);
    if (m == NULL)
        return emu_failed(strstr(why, "out of memory") ? CUDA_ERROR_OUT_OF_MEMORY
                          : strstr(why, "unsupported PTX version") ? CUDA_ERROR_UNSUPPORTED_PTX_VERSION
                          : strstr(why, "no kernel image for this device") ? CUDA_ERROR_NO_BINARY_FOR_GPU
                          : strstr(why, "does not support") || strstr(why, "cannot")
                          ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_PTX, "%s", why);
    *out = (CUmodule)m;
    return emu_ok();
}

static CUresult
e_cuModuleUnload(CUmodule h)
{
    emu_sync_all(); /* queued launches of its kernels run first, as the driver waits */
    emu_module_free((emu_module *)h);
    return emu_ok();
}

static CUresult
e_cuModuleGetFunction(CUfunction *out, CUmodule h, const char *name)
{
    emu_module *m = (emu_module *)h;
    for (int i = 0; i < m->nfuncs; i++) {
        if (strcmp(m->funcs[i]->name, name) == 0) {
            *out = (CUfunction)m->funcs[i];
            return emu_ok();
        }
    }
    return emu_failed(CUDA_ERROR_NOT_FOUND, "the module has no kernel %s", name);
}

static CUresult
e_cuModuleGetGlobal(CUdeviceptr *p, size_t *size, CUmodule h, const char *name)
{
    emu_module *m = (emu_module *)h;
    for (int i = 0; i < m->nglobals; i++) {
        if (strcmp(m->globals[i].name, name) == 0) {
            if (p)
                *p = (CUdeviceptr)(uintptr_t)m->globals[i].data;
            if (size)
                *size = m->globals[i].size;
            return emu_ok();
        }
    }
    return emu_failed(CUDA_ERROR_NOT_FOUND, "the module has no variable %s", name);
}

static int
max_threads(const emu_func *f)
{
    return f->maxntid > 0 && f->maxntid < 1024 ? f->maxntid : 1024;
}

static CUresult
e_cuFuncGetAttribute(int *v, int attr, CUfunction h)
{
    emu_func *f = (emu_func *)h;
    switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = max_threads(f); break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = (int)f->shared_static; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = (int)f->local_bytes; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = f->nslots > 255 ? 255 : f->nslots; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = emu_arch_cc(); break;
    case 7: *v = 0; break; /* CACHE_MODE_CA */
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = f->max_dyn_shared; break;
    default: *v = 0; break;
    }
    return emu_ok();
}

static CUresult
e_cuFuncSetAttribute(CUfunction h, int attr, int v)
{
    emu_func *f = (emu_func *)h;
    if (attr == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (v < 0 || (size_t)v + f->shared_static > 227 * 1024)
            return emu_failed(CUDA_ERROR_INVALID_VALUE, "%d bytes of dynamic shared memory is more than "
                          "the emulated device's 227 KiB per block", v);
        f->max_dyn_shared = v;
    }
    return emu_ok();
}

static CUresult
e_cuFuncGetParamInfo(CUfunction h, size_t i, size_t *offset, size_t *size)
{
    emu_func *f = (emu_func *)h;
    if (i >= (size_t)f->nparams)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "the kernel has %d parameters", f->nparams);
    *offset = f->params[i].offset;
    *size = f->params[i].size;
    return emu_ok();
}

static CUresult
e_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction h, int block, size_t dyn)
{
    emu_func *f = (emu_func *)h;
    if (block <= 0)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "a block needs at least one thread");
    int by_threads = 2048 / block;
    size_t shared = f->shared_static + dyn;
    int by_shared = shared ? (int)((228 * 1024) / shared) : 32;
    int r = by_threads < by_shared ? by_threads : by_shared;
    *n = r > 32 ? 32 : r;
    if (block > max_threads(f))
        *n = 0;
    return emu_ok();
}

static CUresult
e_cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block, CUfunction h, size_t (*fn)(int),
                                   size_t dyn, int limit)
{
    emu_func *f = (emu_func *)h;
    int b = max_threads(f);
    if (limit > 0 && limit < b)
        b = limit;
    b = b >= 32 ? b / 32 * 32 : b;
    int per = 2048 / (b ? b : 1);
    *block = b;
    *min_grid = per * emu_thread_count();
    return emu_ok();
}

/* ------------------------------------------------------------------ launches */

CUresult
emu_launch_kernel(emu_func *f, const unsigned grid[3], const unsigned block[3], unsigned shared,
       CUstream s, void **params, void **extra)
{
    if (f == NULL)
        return emu_failed(CUDA_ERROR_INVALID_HANDLE, "no kernel");
    if (extra != NULL)
        return emu_failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator takes kernel arguments through "
                      "kernelParams only, not `extra`");
    unsigned long long threads = (unsigned long long)block[0] * block[1] * block[2];
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || threads == 0 || block[2] > 64 ||
        grid[0] > 2147483647u || grid[1] > 65535 || grid[2] > 65535)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "grid (%u, %u, %u) or block (%u, %u, %u) is out of "
                      "range", grid[0], grid[1], grid[2], block[0], block[1], block[2]);
    if (threads > (unsigned long long)max_threads(f))
        return emu_failed(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "%llu threads per block is more than "
                      "the kernel's limit of %d", threads, max_threads(f));
    if ((int)shared > f->max_dyn_shared)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "%u bytes of dynamic shared memory is more than the "
                      "kernel allows (%d; raise it with the max_dynamic_shared_size_bytes attribute)",
                      shared, f->max_dyn_shared);
    if (f->nparams > 0 && params == NULL)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "the kernel takes %d parameters and none were given",
                      f->nparams);
    CUresult held = emu_check_stream(s) ?: emu_take_pending();
    if (held != CUDA_SUCCESS)
        return held;
    graph *g = emu_capturing(s);
    if (g) {
        node *n = emu_graph_add(g, N_KERNEL);
        CUDA_KERNEL_NODE_PARAMS p = {(CUfunction)f, grid[0], grid[1], grid[2], block[0], block[1],
                                     block[2], shared, params, NULL, NULL, NULL};
        if (n == NULL)
            return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
        CUresult r = emu_set_kernel_params(n, &p);
        if (r != CUDA_SUCCESS) {
            g->n--;
            emu_node_free(n);
        }
        return r;
    }
    unsigned char stackbuf[4096];
    unsigned char *buf = f->param_bytes <= sizeof stackbuf ? stackbuf : malloc(f->param_bytes);
    if (buf == NULL)
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int i = 0; i < f->nparams; i++)
        memcpy(buf + f->params[i].offset, params[i], f->params[i].size);
    emu_launch L = {f, {grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, shared, buf,
                    emu_launcher()};
    CUresult r = emu_defer_launch(s, &L, emu_launch_now) ? emu_launch_now(&L) : CUDA_SUCCESS;
    if (buf != stackbuf)
        free(buf);
    return r == CUDA_SUCCESS ? emu_ok() : r;
}

CUresult
emu_launch_now(const emu_launch *L)
{
    char why[2048] = "";
    CUresult r = emu_run(L, why, sizeof why);
    if ((r == CUDA_ERROR_OUT_OF_MEMORY || r == CUDA_ERROR_INVALID_VALUE) && !emu_deferring())
        return emu_failed(r, "%s", why);
    if (r != CUDA_SUCCESS) {
        /* reported by the next call that waits, like a GPU's fault */
        char text[2560];
        snprintf(text, sizeof text, "%s. (The emulator checked every access and stopped the "
                 "kernel there. %s)", why, emu_keep_context()
                 ? "The context stays usable: CUKIT_EMULATOR_DEBUG_KEEP_CONTEXT is set."
                 : "As on a GPU, the context is lost: every later call fails until the process "
                   "ends. To debug, CUKIT_EMULATOR_DEBUG_KEEP_CONTEXT=1 keeps it usable.");
        emu_set_pending_from(r, text, L->by);
    }
    return CUDA_SUCCESS;
}

static CUresult
e_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                 unsigned bz, unsigned shared, CUstream s, void **params, void **extra)
{
    unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    return emu_launch_kernel((emu_func *)f, grid, block, shared, s, params, extra);
}

static CUresult
e_cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    for (unsigned i = 0; i < c->numAttrs; i++) {
        const CUlaunchAttribute *a = &c->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a->value.cooperative)
            return emu_failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator cannot run cooperative launches "
                          "(grid-wide synchronization needs every block running at once)");
        if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION &&
            a->value.clusterDim.x * a->value.clusterDim.y * a->value.clusterDim.z > 1)
            return emu_failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator cannot run thread-block clusters");
    }
    unsigned grid[3] = {c->gridDimX, c->gridDimY, c->gridDimZ};
    unsigned block[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};
    return emu_launch_kernel((emu_func *)f, grid, block, c->sharedMemBytes, c->hStream, params, extra);
}

static CUresult
e_cuGraphLaunch(CUgraphExec x, CUstream s)
{
    for (size_t i = 0; i < x->g.n; i++) {
        node *n = x->g.nodes[i];
        CUresult r;
        switch (n->type) {
        case N_KERNEL:
            r = emu_launch_kernel(n->func, n->grid, n->block, n->shared, s, n->ptrs, NULL);
            break;
        case N_MEMCPY:
            if (emu_defer_copy(s, n->dst, (const void *)(uintptr_t)n->pitch, n->width, 0, 0,
                               emu_copy_now))
                r = emu_copy_now(n->dst, (const void *)(uintptr_t)n->pitch, n->width, 0, 0);
            else
                r = CUDA_SUCCESS;
            break;
        default:
            if (emu_defer_memset(s, n->dst, n->pitch, n->value, n->elem, n->width, n->height,
                                 emu_memset_now))
                r = emu_memset_now(n->dst, n->pitch, n->value, n->elem, n->width, n->height);
            else
                r = CUDA_SUCCESS;
            break;
        }
        if (r != CUDA_SUCCESS)
            return r;
    }
    return emu_ok();
}


void
emu_fill_launch(cukit_api_t *api)
{
#define E(name) api->name = e_##name;
    E(cuModuleLoadData) E(cuModuleUnload) E(cuModuleGetFunction) E(cuModuleGetGlobal) E(cuFuncGetAttribute) E(cuFuncSetAttribute) E(cuFuncGetParamInfo) E(cuOccupancyMaxActiveBlocksPerMultiprocessor) E(cuOccupancyMaxPotentialBlockSize) E(cuLaunchKernel) E(cuLaunchKernelEx) E(cuGraphLaunch)
#undef E
}

/* ------------------------------------------------------------------ what the emulator cannot do */

static CUresult
e_cuDeviceCanAccessPeer(int *can, CUdevice a, CUdevice b)
{
    *can = 0; /* one emulated device: no peers */
    return emu_ok();
}

static CUresult
e_cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags)
{
    return emu_failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator cannot do peer access (it has one device)");
}

static CUresult
e_cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *desc, size_t n)
{
    return emu_failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator cannot do peer access (it has one device)");
}

static CUresult
e_cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st)
{
    return emu_failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator cannot do peer copies (it has one device)");
}

/* Memory shared between processes: the emulator's memory is its own process's. */
static CUresult
e_cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr p)
{
    return emu_failed(CUDA_ERROR_NOT_SUPPORTED,
                      "the emulator cannot share memory with another process (cuIpc*)");
}

static CUresult
e_cuIpcOpenMemHandle(CUdeviceptr *p, CUipcMemHandle handle, unsigned int flags)
{
    return e_cuIpcGetMemHandle(NULL, 0);
}

static CUresult
e_cuIpcCloseMemHandle(CUdeviceptr p)
{
    return e_cuIpcGetMemHandle(NULL, 0);
}

void
emu_fill_unsupported(cukit_api_t *api)
{
#define E(name) api->name = e_##name;
    E(cuDeviceCanAccessPeer) E(cuCtxEnablePeerAccess) E(cuMemPoolSetAccess) E(cuMemcpyPeerAsync)
    E(cuIpcGetMemHandle) E(cuIpcOpenMemHandle) E(cuIpcCloseMemHandle)
#undef E
}
