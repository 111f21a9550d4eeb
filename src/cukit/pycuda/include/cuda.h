// cuda.h - cukit.pycuda's stand-in for the CUDA driver API's header in device code.
//
// Written for cukit. PyCUDA programs often include <cuda.h> in a kernel's source
// (nvcc took it there and ignored the host functions); NVRTC refuses those host
// declarations. SourceModule's include folder comes first, so a kernel that includes
// it gets this: what device code can use of it (the version, the handle types),
// nothing a kernel cannot call.
#ifndef CUKIT_PYCUDA_CUDA_H
#define CUKIT_PYCUDA_CUDA_H

#ifndef CUDA_VERSION
#define CUDA_VERSION (__CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10)
#endif
#ifndef __CUDA_API_VERSION
#define __CUDA_API_VERSION CUDA_VERSION
#endif

typedef unsigned long long CUdeviceptr;
typedef int CUdevice;
typedef unsigned long long CUtexObject;
typedef unsigned long long CUsurfObject;
typedef int CUresult;
#ifndef CUDA_SUCCESS
#define CUDA_SUCCESS 0
#endif

#endif
