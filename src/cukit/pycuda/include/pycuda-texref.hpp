// pycuda-texref.hpp - texture and surface references on CUDA 12 and newer, lowered to
// texture and surface objects.
//
// Written for cukit. CUDA 12 removed texture and surface references; this header gives
// back their source form. `texture<T, dim, mode>` and `surface<void, dim>` are small
// structs: the object's handle, then a marker and a descriptor (the declaration's
// dimensionality, read mode and texel type) that the host reads to check what it
// binds. SourceModule declares each namespace-scope reference __constant__ and
// includes this header; TextureReference / SurfaceReference (cukit.pycuda.driver)
// create the object and write its handle there before the kernels that read it run.
// The tex* and surf* overloads below take a reference and call the object functions.
#ifndef CUKIT_PYCUDA_TEXREF_HPP
#define CUKIT_PYCUDA_TEXREF_HPP

extern "C++" {

namespace cukit_texref {

// Markers the host checks (get_texref / get_surfref of a name that is no reference).
enum : unsigned int { TEXTURE_MARK = 0x58544b43u, SURFACE_MARK = 0x46534b43u };
enum { KIND_SIGNED = 0, KIND_UNSIGNED = 1, KIND_FLOAT = 2 };

template <class T> struct always_false { enum { value = 0 }; };

// What a texel type is: its component kind, channels and bytes per component, and
// what a read in cudaReadModeNormalizedFloat returns for it.
template <class T> struct texel {
    static_assert(always_false<T>::value,
                  "texture<T, ...>: T must be char, short, int, their unsigned forms or float, "
                  "alone or as a 1-, 2- or 4-vector (uchar4, float2, ...)");
    enum { kind = KIND_FLOAT, channels = 1, bytes = 4 };
    typedef float normalized;
};

#define CUKIT_TEXEL(T, K, N, B, F) \
    template <> struct texel<T> { \
        enum { kind = K, channels = N, bytes = B }; \
        typedef F normalized; \
    };
#define CUKIT_TEXELS(S, S1, S2, S4, K, B) \
    CUKIT_TEXEL(S, K, 1, B, float) CUKIT_TEXEL(S1, K, 1, B, float1) \
    CUKIT_TEXEL(S2, K, 2, B, float2) CUKIT_TEXEL(S4, K, 4, B, float4)
CUKIT_TEXEL(char, KIND_SIGNED, 1, 1, float)
CUKIT_TEXELS(signed char, char1, char2, char4, KIND_SIGNED, 1)
CUKIT_TEXELS(unsigned char, uchar1, uchar2, uchar4, KIND_UNSIGNED, 1)
CUKIT_TEXELS(short, short1, short2, short4, KIND_SIGNED, 2)
CUKIT_TEXELS(unsigned short, ushort1, ushort2, ushort4, KIND_UNSIGNED, 2)
CUKIT_TEXELS(int, int1, int2, int4, KIND_SIGNED, 4)
CUKIT_TEXELS(unsigned int, uint1, uint2, uint4, KIND_UNSIGNED, 4)
CUKIT_TEXELS(float, float1, float2, float4, KIND_FLOAT, 4)
#undef CUKIT_TEXELS
#undef CUKIT_TEXEL

// What a fetch returns: T itself, or floats for cudaReadModeNormalizedFloat.
template <class T, enum cudaTextureReadMode M> struct fetch { typedef T type; };
template <class T> struct fetch<T, cudaReadModeNormalizedFloat> {
    typedef typename texel<T>::normalized type;
};

// tex2Dgather returns four of one component.
template <class T> struct gather4 { typedef float4 type; };
#define CUKIT_GATHER(T, V) template <> struct gather4<T> { typedef V type; };
CUKIT_GATHER(char, char4) CUKIT_GATHER(signed char, char4) CUKIT_GATHER(char1, char4)
CUKIT_GATHER(char2, char4) CUKIT_GATHER(char4, char4)
CUKIT_GATHER(unsigned char, uchar4) CUKIT_GATHER(uchar1, uchar4) CUKIT_GATHER(uchar2, uchar4)
CUKIT_GATHER(uchar4, uchar4)
CUKIT_GATHER(short, short4) CUKIT_GATHER(short1, short4) CUKIT_GATHER(short2, short4)
CUKIT_GATHER(short4, short4)
CUKIT_GATHER(unsigned short, ushort4) CUKIT_GATHER(ushort1, ushort4) CUKIT_GATHER(ushort2, ushort4)
CUKIT_GATHER(ushort4, ushort4)
CUKIT_GATHER(int, int4) CUKIT_GATHER(int1, int4) CUKIT_GATHER(int2, int4) CUKIT_GATHER(int4, int4)
CUKIT_GATHER(unsigned int, uint4) CUKIT_GATHER(uint1, uint4) CUKIT_GATHER(uint2, uint4)
CUKIT_GATHER(uint4, uint4)
#undef CUKIT_GATHER
template <class T, enum cudaTextureReadMode M> struct gather {
    typedef typename gather4<T>::type type;
};
template <class T> struct gather<T, cudaReadModeNormalizedFloat> { typedef float4 type; };

}  // namespace cukit_texref

// The reference types. Field order and sizes are what the host reads and writes:
// 8 bytes of handle, the marker, the descriptor
// (dim | read mode << 8 | kind << 10 | channels << 12 | bytes per component << 16).
template <class T, int dim = cudaTextureType1D,
          enum cudaTextureReadMode mode = cudaReadModeElementType>
struct texture {
    cudaTextureObject_t object = 0;
    unsigned int mark = cukit_texref::TEXTURE_MARK;
    unsigned int desc = (unsigned int)dim | ((unsigned int)mode << 8) |
                        ((unsigned int)cukit_texref::texel<T>::kind << 10) |
                        ((unsigned int)cukit_texref::texel<T>::channels << 12) |
                        ((unsigned int)cukit_texref::texel<T>::bytes << 16);
};

template <class T = void, int dim = cudaSurfaceType1D>
struct surface {
    cudaSurfaceObject_t object = 0;
    unsigned int mark = cukit_texref::SURFACE_MARK;
    unsigned int desc = (unsigned int)dim;
};

// ------------------------------------------------------------------ texture reads

#define CUKIT_R typename cukit_texref::fetch<T, M>::type
#define CUKIT_TEX(NAME, DIM, PARAMS, ARGS) \
    template <class T, enum cudaTextureReadMode M> \
    static __device__ __forceinline__ CUKIT_R NAME(texture<T, DIM, M> t PARAMS) \
    { return NAME<CUKIT_R>(t.object ARGS); }
#define CUKIT_P(...) , __VA_ARGS__

CUKIT_TEX(tex1Dfetch, cudaTextureType1D, CUKIT_P(int x), CUKIT_P(x))
CUKIT_TEX(tex1D, cudaTextureType1D, CUKIT_P(float x), CUKIT_P(x))
CUKIT_TEX(tex1DLod, cudaTextureType1D, CUKIT_P(float x, float level), CUKIT_P(x, level))
CUKIT_TEX(tex1DGrad, cudaTextureType1D, CUKIT_P(float x, float dx, float dy), CUKIT_P(x, dx, dy))
CUKIT_TEX(tex2D, cudaTextureType2D, CUKIT_P(float x, float y), CUKIT_P(x, y))
CUKIT_TEX(tex2DLod, cudaTextureType2D, CUKIT_P(float x, float y, float level),
          CUKIT_P(x, y, level))
CUKIT_TEX(tex2DGrad, cudaTextureType2D, CUKIT_P(float x, float y, float2 dx, float2 dy),
          CUKIT_P(x, y, dx, dy))
CUKIT_TEX(tex3D, cudaTextureType3D, CUKIT_P(float x, float y, float z), CUKIT_P(x, y, z))
CUKIT_TEX(tex3DLod, cudaTextureType3D, CUKIT_P(float x, float y, float z, float level),
          CUKIT_P(x, y, z, level))
CUKIT_TEX(tex3DGrad, cudaTextureType3D,
          CUKIT_P(float x, float y, float z, float4 dx, float4 dy), CUKIT_P(x, y, z, dx, dy))
CUKIT_TEX(tex1DLayered, cudaTextureType1DLayered, CUKIT_P(float x, int layer),
          CUKIT_P(x, layer))
CUKIT_TEX(tex1DLayeredLod, cudaTextureType1DLayered, CUKIT_P(float x, int layer, float level),
          CUKIT_P(x, layer, level))
CUKIT_TEX(tex2DLayered, cudaTextureType2DLayered, CUKIT_P(float x, float y, int layer),
          CUKIT_P(x, y, layer))
CUKIT_TEX(tex2DLayeredLod, cudaTextureType2DLayered,
          CUKIT_P(float x, float y, int layer, float level), CUKIT_P(x, y, layer, level))
CUKIT_TEX(texCubemap, cudaTextureTypeCubemap, CUKIT_P(float x, float y, float z),
          CUKIT_P(x, y, z))
CUKIT_TEX(texCubemapLayered, cudaTextureTypeCubemapLayered,
          CUKIT_P(float x, float y, float z, int layer), CUKIT_P(x, y, z, layer))

template <class T, enum cudaTextureReadMode M>
static __device__ __forceinline__ typename cukit_texref::gather<T, M>::type
tex2Dgather(texture<T, cudaTextureType2D, M> t, float x, float y, int comp = 0)
{
    return tex2Dgather<typename cukit_texref::gather<T, M>::type>(t.object, x, y, comp);
}

#undef CUKIT_TEX
#undef CUKIT_R

// ------------------------------------------------------------------ surface reads and writes
// x is in bytes, as with surface references.

#define CUKIT_SURF(NAME, DIM, PARAMS, ARGS) \
    template <class T> \
    static __device__ __forceinline__ void NAME##read(T *out, surface<void, DIM> s PARAMS, \
        enum cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap) \
    { NAME##read<T>(out, s.object ARGS, mode); } \
    template <class T> \
    static __device__ __forceinline__ T NAME##read(surface<void, DIM> s PARAMS, \
        enum cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap) \
    { return NAME##read<T>(s.object ARGS, mode); } \
    template <class T> \
    static __device__ __forceinline__ void NAME##write(T value, surface<void, DIM> s PARAMS, \
        enum cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap) \
    { NAME##write<T>(value, s.object ARGS, mode); }

CUKIT_SURF(surf1D, cudaSurfaceType1D, CUKIT_P(int x), CUKIT_P(x))
CUKIT_SURF(surf2D, cudaSurfaceType2D, CUKIT_P(int x, int y), CUKIT_P(x, y))
CUKIT_SURF(surf3D, cudaSurfaceType3D, CUKIT_P(int x, int y, int z), CUKIT_P(x, y, z))
CUKIT_SURF(surf1DLayered, cudaSurfaceType1DLayered, CUKIT_P(int x, int layer),
           CUKIT_P(x, layer))
CUKIT_SURF(surf2DLayered, cudaSurfaceType2DLayered, CUKIT_P(int x, int y, int layer),
           CUKIT_P(x, y, layer))
CUKIT_SURF(surfCubemap, cudaSurfaceTypeCubemap, CUKIT_P(int x, int y, int face),
           CUKIT_P(x, y, face))
CUKIT_SURF(surfCubemapLayered, cudaSurfaceTypeCubemapLayered,
           CUKIT_P(int x, int y, int layerface), CUKIT_P(x, y, layerface))

#undef CUKIT_SURF
#undef CUKIT_P

}  // extern "C++"

#endif  // CUKIT_PYCUDA_TEXREF_HPP
