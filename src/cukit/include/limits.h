// limits.h - cukit's stand-in for NVRTC, which has no C library headers.
//
// The ranges of the integer types as the device has them (LP64: long is 64 bits,
// char is signed). CCCL's <cuda/std/climits> defines the same names under NVRTC: each
// is defined here only where it is not yet, and spelled as CCCL spells it, so that a
// kernel including both, in either order, compiles without warnings.
#ifndef CUKIT_STANDIN_LIMITS_H
#define CUKIT_STANDIN_LIMITS_H

// C++ linkage, as the C library's headers give it to their C++ parts: a source
// wrapped in extern "C" { } (PyCUDA's SourceModule) may include this.
extern "C++" {

#ifndef CHAR_BIT
#define CHAR_BIT 8
#endif
#ifndef MB_LEN_MAX
#define MB_LEN_MAX 16
#endif

#ifndef SCHAR_MIN
#define SCHAR_MIN (-128)
#endif
#ifndef SCHAR_MAX
#define SCHAR_MAX 127
#endif
#ifndef UCHAR_MAX
#define UCHAR_MAX 255
#endif
#ifndef CHAR_MIN
#define CHAR_MIN SCHAR_MIN
#endif
#ifndef CHAR_MAX
#define CHAR_MAX SCHAR_MAX
#endif

#ifndef SHRT_MAX
#define SHRT_MAX 0x7fff
#endif
#ifndef SHRT_MIN
#define SHRT_MIN (-SHRT_MAX - 1)
#endif
#ifndef USHRT_MAX
#define USHRT_MAX 0xffff
#endif

#ifndef INT_MAX
#define INT_MAX 0x7fffffff
#endif
#ifndef INT_MIN
#define INT_MIN (-INT_MAX - 1)
#endif
#ifndef UINT_MAX
#define UINT_MAX 0xffffffff
#endif

#ifndef LLONG_MAX
#define LLONG_MAX 0x7fffffffffffffffLL
#endif
#ifndef LLONG_MIN
#define LLONG_MIN (-LLONG_MAX - 1)
#endif
#ifndef ULLONG_MAX
#define ULLONG_MAX 0xffffffffffffffffUL
#endif

#ifndef LONG_MAX
#define LONG_MAX LLONG_MAX
#endif
#ifndef LONG_MIN
#define LONG_MIN (-LONG_MAX - 1)
#endif
#ifndef ULONG_MAX
#define ULONG_MAX ULLONG_MAX
#endif

} // extern "C++"

#endif
