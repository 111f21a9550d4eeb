// sys/types.h - cukit's stand-in for NVRTC, which has no C library headers.
//
// Host code compiled by nvcc gets these short unsigned names from the C library
// (<stdlib.h> includes <sys/types.h>); kernels written for nvcc use them freely.
// size_t and ptrdiff_t are NVRTC's own.
#ifndef CUKIT_STANDIN_SYS_TYPES_H
#define CUKIT_STANDIN_SYS_TYPES_H

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;

#endif
