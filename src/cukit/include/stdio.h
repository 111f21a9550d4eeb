// stdio.h - cukit's stand-in for NVRTC, which has no C library headers.
//
// Device code has printf from NVRTC itself; this lets sources written for nvcc keep
// their #include <stdio.h>.
#ifndef CUKIT_STANDIN_STDIO_H
#define CUKIT_STANDIN_STDIO_H

// C++ linkage, as the C library's headers give it to their C++ parts: a source
// wrapped in extern "C" { } (PyCUDA's SourceModule) may include this.
extern "C++" {
#include <stddef.h>
} // extern "C++"

#endif
