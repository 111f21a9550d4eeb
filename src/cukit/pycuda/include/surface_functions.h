// surface_functions.h - cukit.pycuda's stand-in for CUDA 11's header of the surface
// reference functions, which CUDA 12 removed with the references themselves.
//
// Written for cukit. A PyCUDA kernel that includes it gets the reference forms
// (surf1Dread ... surf3Dwrite on a `surface<void, dim>`) from pycuda-texref.hpp, the
// header that lowers references to surface objects; the object forms are NVRTC's own.
#ifndef CUKIT_PYCUDA_SURFACE_FUNCTIONS_H
#define CUKIT_PYCUDA_SURFACE_FUNCTIONS_H
#include <pycuda-texref.hpp>
#endif
