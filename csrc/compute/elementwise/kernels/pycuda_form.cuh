// pycuda_form.cuh - PyCUDA's ElementwiseKernel (pycuda_form.c writes the
// kernels): <name>(arguments, n) over i < n and <name>_range(arguments, start, stop,
// step) over range(start, stop, step), each with loop_prep before its loop and
// after_loop after it, and PyCUDA's names tid, total_threads, cta_start and i. The C
// side writes, after this file and the user's preamble:
//     CK_PYCUDA_KERNEL name(arguments, long long n) {
//         CK_PYCUDA_HEAD <loop_prep> CK_PYCUDA_LOOP { <operation> } <after_loop>
//     }
//     CK_PYCUDA_KERNEL name_range(arguments, long long start, long long stop, long long step) {
//         CK_PYCUDA_HEAD <loop_prep> CK_PYCUDA_RANGE_LOOP { <operation> } <after_loop>
//     }
#ifndef CK_PYCUDA_ELEMENTWISE_CUH
#define CK_PYCUDA_ELEMENTWISE_CUH
#include "../../kernels/preamble.cuh"
#define CK_PYCUDA_KERNEL extern "C" __global__ void
#define CK_PYCUDA_HEAD                                                                   \
    const unsigned tid = threadIdx.x, total_threads = gridDim.x * blockDim.x,            \
                   cta_start = blockDim.x * blockIdx.x;                                  \
    long long i;                                                                         \
    (void)tid; (void)total_threads; (void)cta_start; (void)i;
#define CK_PYCUDA_LOOP for (i = (long long)cta_start + tid; i < n; i += total_threads)
#define CK_PYCUDA_RANGE_LOOP                                                             \
    for (i = start + ((long long)cta_start + tid) * step; step > 0 ? i < stop : i > stop;  \
         i += (long long)total_threads * step)
#endif // CK_PYCUDA_ELEMENTWISE_CUH
