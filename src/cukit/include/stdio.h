// stdio.h - cukit's stand-in for NVRTC, which has no C library headers.
//
// Device code has printf from NVRTC itself; this lets sources written for nvcc keep
// their #include <stdio.h>.
#ifndef CUKIT_STANDIN_STDIO_H
#define CUKIT_STANDIN_STDIO_H
#include <stddef.h>
#endif
