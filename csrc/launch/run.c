/* run.c - the launches: a Kernel's (cukit_kernel_launch) and cukit's own kernels' with set_debug's check */
#include "launch/launch.h"

#include <string.h>

int
cukit_kernel_launch(cukit_Kernel *k, const cukit_launch_cfg *c, void **ptrs)
{
    if (cukit_device_activate(k->device) < 0)
        return -1;
    if (c->stream == NULL)
        cukit_stream_legacy_queued(); /* memory/'s cache may serve this thread again */
    CUresult res;
    /* cuLaunchKernel only queues work (about 3 us on an H200). With no other
     * Python thread to run, releasing and retaking the GIL around it buys
     * nothing and measured 0.1 to 0.7 us more per launch, with a wide spread;
     * with other threads it is released, so they run while this one launches. */
    if (!c->cooperative && !c->cluster[0]) {
        if (cukit_other_threads()) {
            Py_BEGIN_ALLOW_THREADS
            res = cukit_api.cuLaunchKernel(k->func, c->grid[0], c->grid[1], c->grid[2],
                                           c->block[0], c->block[1], c->block[2], c->shared,
                                           c->stream, ptrs, NULL);
            Py_END_ALLOW_THREADS
        }
        else {
            res = cukit_api.cuLaunchKernel(k->func, c->grid[0], c->grid[1], c->grid[2],
                                           c->block[0], c->block[1], c->block[2], c->shared,
                                           c->stream, ptrs, NULL);
        }
        return cukit_check_cu(k->st, res, "cuLaunchKernel");
    }
    if (cukit_api.cuLaunchKernelEx == NULL)
        return cukit_missing_entry(k->st, "cuLaunchKernelEx");
    CUlaunchAttribute attrs[2];
    memset(attrs, 0, sizeof attrs);
    unsigned int nattrs = 0;
    if (c->cooperative) {
        attrs[nattrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[nattrs++].value.cooperative = 1;
    }
    if (c->cluster[0]) {
        attrs[nattrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[nattrs].value.clusterDim.x = c->cluster[0];
        attrs[nattrs].value.clusterDim.y = c->cluster[1];
        attrs[nattrs++].value.clusterDim.z = c->cluster[2];
    }
    CUlaunchConfig lc = {c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
                         c->block[2], c->shared, c->stream, attrs, nattrs};
    res = cukit_api.cuLaunchKernelEx(&lc, k->func, ptrs, NULL);
    return cukit_check_cu(k->st, res, "cuLaunchKernelEx");
}


int
cukit_builtin_launch_here(cukit_state *st, CUfunction func, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned by, CUstream stream, void **args)
{
    if (stream == NULL)
        cukit_stream_legacy_queued(); /* memory/'s cache may serve this thread again */
    if (CU_CALL(st, cuLaunchKernel, (func, gx, gy, gz, bx, by, 1, 0, stream, args, NULL)) < 0)
        return -1;
    /* set_debug: the fault, if any, is raised here, by the call that queued it (not
     * during a capture, which a synchronize would break) */
    if (st->launch->debug && st->runtime->captures == 0)
        CU_CALL_NOGIL(st, cuCtxSynchronize, ());
    return 0;
error:
    return -1;
}

int
cukit_builtin_launch(cukit_Device *dev, CUfunction func, unsigned gx, unsigned gy, unsigned bx,
                     unsigned by, CUstream stream, void **args)
{
    if (cukit_device_activate(dev) < 0)
        return -1;
    return cukit_builtin_launch_here(dev->st, func, gx, gy, 1, bx, by, stream, args);
}
