/* builtin.c - the one launch of cukit's own kernels, with set_debug's check (compile/functions.c loads them) */
#include "launch/launch.h"

int
cukit_builtin_launch(cukit_Device *dev, CUfunction func, unsigned gx, unsigned gy, unsigned bx,
                     unsigned by, CUstream stream, void **args)
{
    cukit_state *st = dev->st;
    if (cukit_device_activate(dev) < 0 ||
        CU_CALL(st, cuLaunchKernel, (func, gx, gy, 1, bx, by, 1, 0, stream, args, NULL)) < 0)
        return -1;
    /* set_debug: the fault, if any, is raised here, by the call that queued it (not
     * during a capture, which a synchronize would break) */
    if (st->launch->debug && st->runtime->captures == 0)
        CU_CALL_NOGIL(st, cuCtxSynchronize, ());
    return 0;
error:
    return -1;
}
