// one_kernel.cuh - CUKIT_WANT(name): whether a file of several kernels compiles kernel
// `name`. cukit_builtin_kernel_one (compile/functions.c) compiles such a file for one
// kernel at a time, with `#define CUKIT_ONE_KERNEL 1` and `#define CUKIT_KERNEL_<name> 1`
// in front, so that a first call waits for NVRTC on the kernel it runs and not on the
// whole family; compiled whole (the device-file test), the file keeps every kernel.
// Usage: `#if CUKIT_WANT(cukit_normal_f32)` ... `#endif` around a kernel.
#ifndef CUKIT_ONE_KERNEL_CUH
#define CUKIT_ONE_KERNEL_CUH
#ifndef CUKIT_ONE_KERNEL
#define CUKIT_ONE_KERNEL 0
#endif
// CUKIT_KERNEL_<name> not defined reads as 0 in #if
#define CUKIT_WANT(name) (!CUKIT_ONE_KERNEL || CUKIT_KERNEL_##name)
#endif
