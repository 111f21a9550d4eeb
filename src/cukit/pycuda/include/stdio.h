// stdio.h - for kernels compiled with NVRTC through cukit.pycuda.
//
// NVRTC has no C library headers; device code gets printf from NVRTC itself.
// This empty header lets sources written for nvcc keep their #include <stdio.h>.
#ifndef CUKIT_PYCUDA_STDIO_H
#define CUKIT_PYCUDA_STDIO_H
#endif
