/* transfer.c - host <-> device byte copies: the one place every such copy goes through
 *
 * This is the plain version: the driver's own copy calls, the GIL released
 * around the blocking ones. The caller has made the right context current. */
#include "cukit.h"

int
cukit_copy_htod(cukit_state *st, CUdeviceptr dst, const void *src, size_t nbytes,
                CUstream stream, int sync)
{
    if (nbytes == 0)
        return 0;
    if (!sync)
        return CU_CALL(st, cuMemcpyHtoDAsync, (dst, src, nbytes, stream));
    if (stream == NULL) {
        CU_CALL_NOGIL(st, cuMemcpyHtoD, (dst, src, nbytes));
        return 0;
    }
    if (CU_CALL(st, cuMemcpyHtoDAsync, (dst, src, nbytes, stream)) < 0)
        return -1;
    CU_CALL_NOGIL(st, cuStreamSynchronize, (stream));
    return 0;
error:
    return -1;
}

int
cukit_copy_dtoh(cukit_state *st, void *dst, CUdeviceptr src, size_t nbytes, CUstream stream,
                int sync)
{
    if (nbytes == 0)
        return 0;
    if (!sync)
        return CU_CALL(st, cuMemcpyDtoHAsync, (dst, src, nbytes, stream));
    if (stream == NULL) {
        CU_CALL_NOGIL(st, cuMemcpyDtoH, (dst, src, nbytes));
        return 0;
    }
    if (CU_CALL(st, cuMemcpyDtoHAsync, (dst, src, nbytes, stream)) < 0)
        return -1;
    CU_CALL_NOGIL(st, cuStreamSynchronize, (stream));
    return 0;
error:
    return -1;
}
