// shim.h - CPU stand-ins for the CUDA built-ins cukit's generated reduction and scan
// kernels use (tests only): 256 threads per block, blocks one after another, barriers
// for __syncthreads and the warp shuffles.
#include <pthread.h>
#include <string.h>
#include <math.h>
#include <stdint.h>
#include <thread>
#include <vector>
#include <algorithm>
struct ck_dim3 { unsigned x, y, z; };
static thread_local ck_dim3 threadIdx, blockIdx;
static ck_dim3 blockDim = {256, 1, 1}, gridDim = {1, 1, 1};
static pthread_barrier_t ck_block_bar;
static pthread_barrier_t ck_warp_bar[8];
static int ck_warp_buf[8][32];
static inline void __syncthreads() { pthread_barrier_wait(&ck_block_bar); }
static inline void __syncwarp(unsigned = 0xffffffffu) { pthread_barrier_wait(&ck_warp_bar[threadIdx.x / 32]); }
static inline int ck_xchg(int v, int src, bool valid) {
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    ck_warp_buf[w][l] = v;
    pthread_barrier_wait(&ck_warp_bar[w]);
    int r = valid ? ck_warp_buf[w][src] : v;
    pthread_barrier_wait(&ck_warp_bar[w]);
    return r;
}
static inline int __shfl_down_sync(unsigned, int v, int d) { int l = threadIdx.x % 32; return ck_xchg(v, l + d, l + d < 32); }
static inline int __shfl_up_sync(unsigned, int v, int d) { int l = threadIdx.x % 32; return ck_xchg(v, l - d, l - d >= 0); }
static inline int __shfl_sync(unsigned, int v, int s) { return ck_xchg(v, s, true); }
static inline unsigned ck_vote(int pred) { // the warp's predicates as a mask of lanes
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    ck_warp_buf[w][l] = pred != 0;
    pthread_barrier_wait(&ck_warp_bar[w]);
    unsigned m = 0;
    for (int i = 0; i < 32; i++) m |= (unsigned)ck_warp_buf[w][i] << i;
    pthread_barrier_wait(&ck_warp_bar[w]);
    return m;
}
static inline unsigned __ballot_sync(unsigned, int pred) { return ck_vote(pred); }
static inline int __any_sync(unsigned, int pred) { return ck_vote(pred) != 0; }
static inline int __all_sync(unsigned, int pred) { return ck_vote(pred) == 0xffffffffu; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
struct alignas(16) uint4 { unsigned x, y, z, w; };
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int atomicAdd(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned atomicInc(unsigned *p, unsigned lim) { // old; old >= lim ? 0 : old + 1
    unsigned o = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (!__atomic_compare_exchange_n(p, &o, o >= lim ? 0 : o + 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
    return o;
}
static inline unsigned atomicExch(unsigned *p, unsigned v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
static inline void __threadfence() { __sync_synchronize(); }
static inline void __nanosleep(unsigned) {}  // a hint: sleeping for no time is allowed
template <class T> static inline T __ldcs(const T *p) { return *p; }  // a streaming load: a load
template <class T> static inline void __stcs(T *p, T v) { *p = v; }
template <class A, class B> static inline auto min(A a, B b) { return a < b ? a : b; }
template <class A, class B> static inline auto max(A a, B b) { return a > b ? a : b; }
using std::isinf; using std::isfinite; using std::signbit;
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)
#define asm(...) (void)0
