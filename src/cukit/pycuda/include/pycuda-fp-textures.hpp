// pycuda-fp-textures.hpp - PyCUDA's fp_tex* / fp_surf* helpers over cukit's texture and
// surface references (pycuda-texref.hpp).
//
// Written for cukit. Textures and surfaces hold no 64-bit elements, so PyCUDA stores
// double as int2, complex<float> as uint2 and complex<double> as int4 (np_to_array,
// gpuarray_to_array and bind_to_texref_ext with the double/complex "hack"); these
// helpers read and write them as the numbers they are, and take surface x in elements.
// pycuda-helpers.hpp includes this when the source declares references.
#ifndef CUKIT_PYCUDA_FP_TEXTURES_HPP
#define CUKIT_PYCUDA_FP_TEXTURES_HPP

#include <pycuda-complex.hpp>
#include <pycuda-texref.hpp>

extern "C++" {

typedef float fp_tex_float;
typedef int2 fp_tex_double;
typedef uint2 fp_tex_cfloat;
typedef int4 fp_tex_cdouble;

namespace cukit_texref {
static __device__ __forceinline__ double as_double(int2 v) { return __hiloint2double(v.y, v.x); }
static __device__ __forceinline__ pycuda::complex<float> as_cfloat(uint2 v)
{
    return pycuda::complex<float>(__uint_as_float(v.x), __uint_as_float(v.y));
}
static __device__ __forceinline__ pycuda::complex<double> as_cdouble(int4 v)
{
    return pycuda::complex<double>(__hiloint2double(v.y, v.x), __hiloint2double(v.w, v.z));
}
static __device__ __forceinline__ int2 of_double(double d)
{
    return make_int2(__double2loint(d), __double2hiint(d));
}
static __device__ __forceinline__ uint2 of_cfloat(pycuda::complex<float> z)
{
    return make_uint2(__float_as_uint(z.real()), __float_as_uint(z.imag()));
}
static __device__ __forceinline__ int4 of_cdouble(pycuda::complex<double> z)
{
    return make_int4(__double2loint(z.real()), __double2hiint(z.real()),
                     __double2loint(z.imag()), __double2hiint(z.imag()));
}
}  // namespace cukit_texref

// ---- texture reads: any texel type as tex* reads it, and the three stored forms
// (PARAMS and ARGS are parenthesized lists, opened by CUKIT_X)

#define CUKIT_X(...) __VA_ARGS__
#define CUKIT_FP_TEX(NAME, DIM, PARAMS, ARGS) \
    template <class T, enum cudaTextureReadMode M> \
    static __device__ __forceinline__ typename cukit_texref::fetch<T, M>::type \
    fp_##NAME(texture<T, DIM, M> t, CUKIT_X PARAMS) { return NAME(t, CUKIT_X ARGS); } \
    template <enum cudaTextureReadMode M> \
    static __device__ __forceinline__ double \
    fp_##NAME(texture<fp_tex_double, DIM, M> t, CUKIT_X PARAMS) \
    { return cukit_texref::as_double(NAME(t, CUKIT_X ARGS)); } \
    template <enum cudaTextureReadMode M> \
    static __device__ __forceinline__ pycuda::complex<float> \
    fp_##NAME(texture<fp_tex_cfloat, DIM, M> t, CUKIT_X PARAMS) \
    { return cukit_texref::as_cfloat(NAME(t, CUKIT_X ARGS)); } \
    template <enum cudaTextureReadMode M> \
    static __device__ __forceinline__ pycuda::complex<double> \
    fp_##NAME(texture<fp_tex_cdouble, DIM, M> t, CUKIT_X PARAMS) \
    { return cukit_texref::as_cdouble(NAME(t, CUKIT_X ARGS)); }

CUKIT_FP_TEX(tex1Dfetch, cudaTextureType1D, (int i), (i))
CUKIT_FP_TEX(tex2D, cudaTextureType2D, (float i, float j), (i, j))
CUKIT_FP_TEX(tex2DLayered, cudaTextureType2DLayered, (float i, float j, int layer), (i, j, layer))
CUKIT_FP_TEX(tex3D, cudaTextureType3D, (float i, float j, float k), (i, j, k))
#undef CUKIT_FP_TEX

// ---- surface reads and writes, x in elements

#define CUKIT_FP_SURF_AS(NAME, DIM, T, STORED, OF, AS, PARAMS, ARGS) \
    static __device__ __forceinline__ void fp_##NAME##write(T v, surface<void, DIM> s, int i, \
        CUKIT_X PARAMS, enum cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap) \
    { NAME##write(cukit_texref::OF(v), s, i * (int)sizeof(STORED), CUKIT_X ARGS, mode); } \
    static __device__ __forceinline__ void fp_##NAME##read(T *v, surface<void, DIM> s, int i, \
        CUKIT_X PARAMS, enum cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap) \
    { STORED w; NAME##read(&w, s, i * (int)sizeof(STORED), CUKIT_X ARGS, mode); \
      *v = cukit_texref::AS(w); }
#define CUKIT_FP_SURF(NAME, DIM, PARAMS, ARGS) \
    template <class T> \
    static __device__ __forceinline__ void fp_##NAME##write(T v, surface<void, DIM> s, int i, \
        CUKIT_X PARAMS, enum cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap) \
    { NAME##write(v, s, i * (int)sizeof(T), CUKIT_X ARGS, mode); } \
    template <class T> \
    static __device__ __forceinline__ void fp_##NAME##read(T *v, surface<void, DIM> s, int i, \
        CUKIT_X PARAMS, enum cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap) \
    { NAME##read(v, s, i * (int)sizeof(T), CUKIT_X ARGS, mode); } \
    CUKIT_FP_SURF_AS(NAME, DIM, double, fp_tex_double, of_double, as_double, PARAMS, ARGS) \
    CUKIT_FP_SURF_AS(NAME, DIM, pycuda::complex<float>, fp_tex_cfloat, of_cfloat, as_cfloat, \
                     PARAMS, ARGS) \
    CUKIT_FP_SURF_AS(NAME, DIM, pycuda::complex<double>, fp_tex_cdouble, of_cdouble, \
                     as_cdouble, PARAMS, ARGS)

CUKIT_FP_SURF(surf2D, cudaSurfaceType2D, (int j), (j))
CUKIT_FP_SURF(surf3D, cudaSurfaceType3D, (int j, int k), (j, k))
CUKIT_FP_SURF(surf2DLayered, cudaSurfaceType2DLayered, (int j, int layer), (j, layer))
#undef CUKIT_FP_SURF
#undef CUKIT_FP_SURF_AS
#undef CUKIT_X

}  // extern "C++"

#endif  // CUKIT_PYCUDA_FP_TEXTURES_HPP
