// limits.h - cukit's stand-in for NVRTC, which has no C library headers.
//
// The ranges of the integer types as the device has them (LP64: long is 64 bits,
// char is signed). Each value is spelled as CCCL's <cuda/std/climits> spells it
// under NVRTC, so that a kernel including both compiles without macro warnings.
#ifndef CUKIT_STANDIN_LIMITS_H
#define CUKIT_STANDIN_LIMITS_H

#define CHAR_BIT 8
#define MB_LEN_MAX 16

#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#define CHAR_MIN SCHAR_MIN
#define CHAR_MAX SCHAR_MAX

#define SHRT_MAX 0x7fff
#define SHRT_MIN (-SHRT_MAX - 1)
#define USHRT_MAX 0xffff

#define INT_MAX 0x7fffffff
#define INT_MIN (-INT_MAX - 1)
#define UINT_MAX 0xffffffff

#define LLONG_MAX 0x7fffffffffffffffLL
#define LLONG_MIN (-LLONG_MAX - 1)
#define ULLONG_MAX 0xffffffffffffffffUL

#define LONG_MAX LLONG_MAX
#define LONG_MIN (-LONG_MAX - 1)
#define ULONG_MAX ULLONG_MAX

#endif
