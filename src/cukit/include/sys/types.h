// sys/types.h - cukit's stand-in for NVRTC, which has no C library headers.
//
// Host code compiled by nvcc gets these short unsigned names from the C library
// (<stdlib.h> includes <sys/types.h>); kernels written for nvcc use them freely.
// size_t and ptrdiff_t are NVRTC's own.
#ifndef CUKIT_STANDIN_SYS_TYPES_H
#define CUKIT_STANDIN_SYS_TYPES_H

// C++ linkage, as the C library's headers give it to their C++ parts: a source
// wrapped in extern "C" { } (PyCUDA's SourceModule) may include this.
extern "C++" {

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;

} // extern "C++"

#endif
