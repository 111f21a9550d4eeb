// pycuda-helpers.hpp - cukit's helpers for kernels written for PyCUDA, compiled with NVRTC.
//
// Written for cukit. It brings in pycuda::complex<T>, and, in a source that declares
// texture or surface references (SourceModule then includes pycuda-texref.hpp first),
// PyCUDA's fp_tex* / fp_surf* helpers (pycuda-fp-textures.hpp).
#ifndef CUKIT_PYCUDA_HELPERS_HPP
#define CUKIT_PYCUDA_HELPERS_HPP

#include <pycuda-complex.hpp>
#ifdef CUKIT_PYCUDA_TEXREF_HPP
#include <pycuda-fp-textures.hpp>
#endif

#endif  // CUKIT_PYCUDA_HELPERS_HPP
