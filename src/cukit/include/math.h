// math.h - cukit's stand-in for NVRTC, which has no C library headers.
//
// NVRTC declares the math functions itself (sqrt, sqrtf, sinf, isnan, ...). This
// adds what host code gets from the C library's <math.h> and kernels written for
// nvcc use: the M_ constants, INFINITY, NAN, HUGE_VAL(F), MAXFLOAT, the FP_ classes
// with fpclassify and isnormal. INFINITY and NAN are constant expressions (usable in
// constexpr and in initializers), as in C. fpclassify and isnormal are templates, so
// that an NVRTC which declares them itself keeps its own; each macro is defined only
// where it is not yet (CCCL's <cuda/std/cmath> defines INFINITY and NAN too).
#ifndef CUKIT_STANDIN_MATH_H
#define CUKIT_STANDIN_MATH_H

// C++ linkage, as the C library's headers give it to their C++ parts: a source
// wrapped in extern "C" { } (PyCUDA's SourceModule) may include this.
extern "C++" {

#ifndef M_E
#define M_E 2.7182818284590452354
#endif
#ifndef M_LOG2E
#define M_LOG2E 1.4426950408889634074
#endif
#ifndef M_LOG10E
#define M_LOG10E 0.43429448190325182765
#endif
#ifndef M_LN2
#define M_LN2 0.69314718055994530942
#endif
#ifndef M_LN10
#define M_LN10 2.30258509299404568402
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#ifndef M_PI_2
#define M_PI_2 1.57079632679489661923
#endif
#ifndef M_PI_4
#define M_PI_4 0.78539816339744830962
#endif
#ifndef M_1_PI
#define M_1_PI 0.31830988618379067154
#endif
#ifndef M_2_PI
#define M_2_PI 0.63661977236758134308
#endif
#ifndef M_2_SQRTPI
#define M_2_SQRTPI 1.12837916709551257390
#endif
#ifndef M_SQRT2
#define M_SQRT2 1.41421356237309504880
#endif
#ifndef M_SQRT1_2
#define M_SQRT1_2 0.70710678118654752440
#endif

// Constant expressions where NVRTC has __builtin_bit_cast (CUDA 12 and newer), else
// the device's own conversions.
#if defined(__has_builtin)
#if __has_builtin(__builtin_bit_cast)
#define CUKIT_FLOAT_BITS(u) __builtin_bit_cast(float, u)
#define CUKIT_DOUBLE_BITS(u) __builtin_bit_cast(double, u)
#endif
#endif
#ifndef CUKIT_FLOAT_BITS
#define CUKIT_FLOAT_BITS(u) __int_as_float(u)
#define CUKIT_DOUBLE_BITS(u) __longlong_as_double(u)
#endif
#ifndef INFINITY
#define INFINITY (CUKIT_FLOAT_BITS(0x7f800000u))
#endif
#ifndef NAN
#define NAN (CUKIT_FLOAT_BITS(0x7fc00000u))
#endif
#ifndef HUGE_VALF
#define HUGE_VALF INFINITY
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (CUKIT_DOUBLE_BITS(0x7ff0000000000000ull))
#endif
#ifndef MAXFLOAT
#define MAXFLOAT 3.40282346638528859812e+38F
#endif

#ifndef FP_NAN
#define FP_NAN 0
#endif
#ifndef FP_INFINITE
#define FP_INFINITE 1
#endif
#ifndef FP_ZERO
#define FP_ZERO 2
#endif
#ifndef FP_SUBNORMAL
#define FP_SUBNORMAL 3
#endif
#ifndef FP_NORMAL
#define FP_NORMAL 4
#endif

// The class of x by its magnitude: float and double (integers count as double).
template <class T>
static __device__ __forceinline__ int fpclassify(T x)
{
    typedef decltype(x + 0.0f) F;  // float stays float; double and integers are double
    const F a = fabs((F)x);
    const F smallest = sizeof(F) == 4 ? (F)1.17549435082228750797e-38F
                                      : (F)2.22507385850720138309e-308;
    return a != a ? FP_NAN : a == (F)INFINITY ? FP_INFINITE : a == (F)0 ? FP_ZERO
         : a < smallest ? FP_SUBNORMAL : FP_NORMAL;
}
template <class T>
static __device__ __forceinline__ bool isnormal(T x) { return fpclassify(x) == FP_NORMAL; }

} // extern "C++"

#endif
