// assert.h - cukit's stand-in for NVRTC, which has no C library headers.
//
// assert(e) on the device: when e is false the thread reports the expression, file,
// line and function and the kernel stops with an error (the launch then fails with
// "device-side assert triggered"). With NDEBUG defined before the #include, assert
// does nothing. Like the C header it has no include guard: each #include defines
// assert anew by NDEBUG as it is then.
#undef assert
#ifdef NDEBUG
#define assert(e) (static_cast<void>(0))
#else
#define assert(e) \
    (static_cast<bool>(e) ? static_cast<void>(0) \
                          : __assertfail(#e, __FILE__, __LINE__, __PRETTY_FUNCTION__, sizeof(char)))
#endif
