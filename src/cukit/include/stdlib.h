// stdlib.h - cukit's stand-in for NVRTC, which has no C library headers.
//
// What the device has of <stdlib.h>: NVRTC declares malloc, free, abs, labs and
// llabs itself; this adds abort() (stops the kernel with an error, as __trap()
// does), EXIT_SUCCESS/EXIT_FAILURE, NULL, and the short unsigned type names the C
// library gives nvcc's host compiler (uint, ushort, ulong; uchar).
#ifndef CUKIT_STANDIN_STDLIB_H
#define CUKIT_STANDIN_STDLIB_H

// C++ linkage, as the C library's headers give it to their C++ parts: a source
// wrapped in extern "C" { } (PyCUDA's SourceModule) may include this.
extern "C++" {

#include <stddef.h>
#include <sys/types.h>

#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1

static __device__ __forceinline__ void abort(void) { __trap(); }

} // extern "C++"

#endif
