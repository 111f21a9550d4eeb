// stddef.h - cukit's stand-in for NVRTC, which has no C library headers. NVRTC has
// size_t and ptrdiff_t itself; this adds NULL, offsetof and max_align_t.
#ifndef CUKIT_STANDIN_STDDEF_H
#define CUKIT_STANDIN_STDDEF_H

#ifndef NULL
#define NULL 0
#endif
#ifndef offsetof
#define offsetof(type, member) __builtin_offsetof(type, member)
#endif
typedef double max_align_t;

#endif
