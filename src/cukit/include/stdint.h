// stdint.h - cukit's stand-in for NVRTC, which has no C library headers.
//
// The exact-width integer types and their limits. The types are the ones CCCL's
// <cuda/std/cstdint> declares under NVRTC (int64_t is long long), and the macros
// are spelled as it spells them (CCCL 13.3's INTn_C; 13.0's differ by a space, which
// makes NVRTC warn of a redefinition when this header comes first), so a kernel may
// include both. Each macro is defined only where it is not yet.
#ifndef CUKIT_STANDIN_STDINT_H
#define CUKIT_STANDIN_STDINT_H

// C++ linkage, as the C library's headers give it to their C++ parts: a source
// wrapped in extern "C" { } (PyCUDA's SourceModule) may include this.
extern "C++" {

#include <limits.h>

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;

typedef int8_t int_least8_t;
typedef int16_t int_least16_t;
typedef int32_t int_least32_t;
typedef int64_t int_least64_t;
typedef uint8_t uint_least8_t;
typedef uint16_t uint_least16_t;
typedef uint32_t uint_least32_t;
typedef uint64_t uint_least64_t;

typedef int8_t int_fast8_t;
typedef int16_t int_fast16_t;
typedef int32_t int_fast32_t;
typedef int64_t int_fast64_t;
typedef uint8_t uint_fast8_t;
typedef uint16_t uint_fast16_t;
typedef uint32_t uint_fast32_t;
typedef uint64_t uint_fast64_t;

typedef int64_t intptr_t;
typedef uint64_t uintptr_t;
typedef int64_t intmax_t;
typedef uint64_t uintmax_t;

#ifndef INT8_MIN
#define INT8_MIN SCHAR_MIN
#endif
#ifndef INT16_MIN
#define INT16_MIN SHRT_MIN
#endif
#ifndef INT32_MIN
#define INT32_MIN INT_MIN
#endif
#ifndef INT64_MIN
#define INT64_MIN LLONG_MIN
#endif
#ifndef INT8_MAX
#define INT8_MAX SCHAR_MAX
#endif
#ifndef INT16_MAX
#define INT16_MAX SHRT_MAX
#endif
#ifndef INT32_MAX
#define INT32_MAX INT_MAX
#endif
#ifndef INT64_MAX
#define INT64_MAX LLONG_MAX
#endif
#ifndef UINT8_MAX
#define UINT8_MAX UCHAR_MAX
#endif
#ifndef UINT16_MAX
#define UINT16_MAX USHRT_MAX
#endif
#ifndef UINT32_MAX
#define UINT32_MAX UINT_MAX
#endif
#ifndef UINT64_MAX
#define UINT64_MAX ULLONG_MAX
#endif

#ifndef INT_LEAST8_MIN
#define INT_LEAST8_MIN INT8_MIN
#endif
#ifndef INT_LEAST16_MIN
#define INT_LEAST16_MIN INT16_MIN
#endif
#ifndef INT_LEAST32_MIN
#define INT_LEAST32_MIN INT32_MIN
#endif
#ifndef INT_LEAST64_MIN
#define INT_LEAST64_MIN INT64_MIN
#endif
#ifndef INT_LEAST8_MAX
#define INT_LEAST8_MAX INT8_MAX
#endif
#ifndef INT_LEAST16_MAX
#define INT_LEAST16_MAX INT16_MAX
#endif
#ifndef INT_LEAST32_MAX
#define INT_LEAST32_MAX INT32_MAX
#endif
#ifndef INT_LEAST64_MAX
#define INT_LEAST64_MAX INT64_MAX
#endif
#ifndef UINT_LEAST8_MAX
#define UINT_LEAST8_MAX UINT8_MAX
#endif
#ifndef UINT_LEAST16_MAX
#define UINT_LEAST16_MAX UINT16_MAX
#endif
#ifndef UINT_LEAST32_MAX
#define UINT_LEAST32_MAX UINT32_MAX
#endif
#ifndef UINT_LEAST64_MAX
#define UINT_LEAST64_MAX UINT64_MAX
#endif

#ifndef INT_FAST8_MIN
#define INT_FAST8_MIN INT8_MIN
#endif
#ifndef INT_FAST16_MIN
#define INT_FAST16_MIN INT16_MIN
#endif
#ifndef INT_FAST32_MIN
#define INT_FAST32_MIN INT32_MIN
#endif
#ifndef INT_FAST64_MIN
#define INT_FAST64_MIN INT64_MIN
#endif
#ifndef INT_FAST8_MAX
#define INT_FAST8_MAX INT8_MAX
#endif
#ifndef INT_FAST16_MAX
#define INT_FAST16_MAX INT16_MAX
#endif
#ifndef INT_FAST32_MAX
#define INT_FAST32_MAX INT32_MAX
#endif
#ifndef INT_FAST64_MAX
#define INT_FAST64_MAX INT64_MAX
#endif
#ifndef UINT_FAST8_MAX
#define UINT_FAST8_MAX UINT8_MAX
#endif
#ifndef UINT_FAST16_MAX
#define UINT_FAST16_MAX UINT16_MAX
#endif
#ifndef UINT_FAST32_MAX
#define UINT_FAST32_MAX UINT32_MAX
#endif
#ifndef UINT_FAST64_MAX
#define UINT_FAST64_MAX UINT64_MAX
#endif

#ifndef INTPTR_MIN
#define INTPTR_MIN INT64_MIN
#endif
#ifndef INTPTR_MAX
#define INTPTR_MAX INT64_MAX
#endif
#ifndef UINTPTR_MAX
#define UINTPTR_MAX UINT64_MAX
#endif
#ifndef INTMAX_MIN
#define INTMAX_MIN INT64_MIN
#endif
#ifndef INTMAX_MAX
#define INTMAX_MAX INT64_MAX
#endif
#ifndef UINTMAX_MAX
#define UINTMAX_MAX UINT64_MAX
#endif
#ifndef PTRDIFF_MIN
#define PTRDIFF_MIN INT64_MIN
#endif
#ifndef PTRDIFF_MAX
#define PTRDIFF_MAX INT64_MAX
#endif
#ifndef SIZE_MAX
#define SIZE_MAX UINT64_MAX
#endif

#ifndef INT8_C
#define INT8_C(X) ((::int_least8_t) (X))
#endif
#ifndef INT16_C
#define INT16_C(X) ((::int_least16_t) (X))
#endif
#ifndef INT32_C
#define INT32_C(X) ((::int_least32_t) (X))
#endif
#ifndef INT64_C
#define INT64_C(X) ((::int_least64_t) (X))
#endif
#ifndef UINT8_C
#define UINT8_C(X) ((::uint_least8_t) (X))
#endif
#ifndef UINT16_C
#define UINT16_C(X) ((::uint_least16_t) (X))
#endif
#ifndef UINT32_C
#define UINT32_C(X) ((::uint_least32_t) (X))
#endif
#ifndef UINT64_C
#define UINT64_C(X) ((::uint_least64_t) (X))
#endif
#ifndef INTMAX_C
#define INTMAX_C(X) ((::intmax_t) (X))
#endif
#ifndef UINTMAX_C
#define UINTMAX_C(X) ((::uintmax_t) (X))
#endif

} // extern "C++"

#endif
