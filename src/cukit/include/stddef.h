// stddef.h - cukit's stand-in for NVRTC, which has no C library headers. NVRTC has
// size_t and ptrdiff_t itself; this adds NULL, offsetof and max_align_t.
#ifndef CUKIT_STANDIN_STDDEF_H
#define CUKIT_STANDIN_STDDEF_H

// C++ linkage, as the C library's headers give it to their C++ parts: a source
// wrapped in extern "C" { } (PyCUDA's SourceModule) may include this.
extern "C++" {

#ifndef NULL
#define NULL 0
#endif
#ifndef offsetof  // NVRTC has no __builtin_offsetof: the member's address in an object at 0
#define offsetof(type, member) ((size_t)&reinterpret_cast<const volatile char &>(((type *)0)->member))
#endif
typedef double max_align_t;

} // extern "C++"

#endif
