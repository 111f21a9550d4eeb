// pycuda-helpers.hpp - cukit's helpers for kernels written for PyCUDA, compiled with NVRTC.
//
// Written for cukit. It brings in pycuda::complex<T>. PyCUDA's fp_tex* helpers
// read texture references, which CUDA 12 removed, so they are not provided:
// use texture objects (cudaTextureObject_t, tex1Dfetch<T>(obj, i)) instead.
#ifndef CUKIT_PYCUDA_HELPERS_HPP
#define CUKIT_PYCUDA_HELPERS_HPP

#include <pycuda-complex.hpp>

#endif  // CUKIT_PYCUDA_HELPERS_HPP
