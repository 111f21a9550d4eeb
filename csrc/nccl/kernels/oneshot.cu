// oneshot.cu - the one-shot all-reduce kernels (nccl/oneshot.c launches them; its opening
// comment says how the workspace and the lines work): one per NCCL type and op,
// ck_os_<ncclDataType_t>_<ncclRedOp_t>. CK_MAXR, CK_DATA, CK_WORDS and the 512 threads
// are oneshot.c's ONESHOT_MAX_RANKS, ONESHOT_CTRL, ONESHOT_SLOT / 4 and ONESHOT_THREADS.
#define CK_MAXR 8
#define CK_DATA 4096
#define CK_WORDS (16u << 10) // 4-byte words of data a slot holds (64 KiB)
struct ck_peers { unsigned long long p[CK_MAXR]; };
// A line: one 4-byte word of data in the low half, the call's flag in the high half,
// stored and loaded whole, so a line seen with this call's flag holds this call's data.
__device__ __forceinline__ void ck_put(unsigned long long *a, unsigned long long v) {
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" :: "l"(a), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long ck_get(const unsigned long long *a) {
    unsigned long long v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(a) : "memory");
    return v;
}
template <class T, int OP> __device__ __forceinline__ T ck_op(T a, T b) {
    return OP == 1 ? a * b : OP == 2 ? (b > a ? b : a) : OP == 3 ? (b < a ? b : a) : a + b;
}
// Unit u of the input as W words: one element of 4 or 8 bytes, or four of 1 byte
// (zero past the end).
template <class T, int U> __device__ __forceinline__ void ck_unit(const T *in, size_t u,
                                                               size_t n, unsigned *w) {
    if (sizeof(T) == U) {
        T v = in[u];
        memcpy(w, &v, U);
    } else {
        unsigned char b[4] = {0, 0, 0, 0};
        for (int j = 0; j < 4; j++)
            if (u * 4 + j < n)
                memcpy(&b[j], &in[u * 4 + j], 1);
        memcpy(w, b, 4);
    }
}
template <class T, int OP>
__device__ void ck_oneshot(const T *in, T *out, unsigned long long n, const ck_peers &peers,
                           int rank, int nranks, const volatile int *stop) {
    enum { U = sizeof(T) < 4 ? 4 : (int)sizeof(T), W = U / 4, E = U / (int)sizeof(T) };
    unsigned char *mine = (unsigned char *)peers.p[rank];
    // every thread reads the call counter (bumped at the end, after a barrier), so the
    // first line leaves after two loads side by side, with no barrier before it
    unsigned long long *count = (unsigned long long *)mine;
    const unsigned long long e = *count + 1, flag = (unsigned long long)(unsigned)e << 32;
    const size_t set = CK_DATA + (size_t)(e & 1) * nranks * CK_WORDS * 8;
    const size_t units = (n + E - 1) / E;
    // Every unit of this thread to every peer first, then the peers' units: no thread
    // waits for one that has not sent.
    for (size_t u = threadIdx.x; u < units; u += blockDim.x) {
        unsigned w[W];
        ck_unit<T, U>(in, u, n, w);
        for (int q = 0; q < nranks; q++) {
            if (q == rank)
                continue;
            unsigned long long *line = (unsigned long long *)((unsigned char *)peers.p[q] + set +
                                       (size_t)rank * CK_WORDS * 8) + u * W;
            for (int k = 0; k < W; k++)
                ck_put(line + k, flag | w[k]);
        }
    }
    bool stopped = false; // aborted: no result
    for (size_t u = threadIdx.x; u < units && !stopped; u += blockDim.x) {
        T acc[E];
        for (int q = 0; q < nranks && !stopped; q++) {
            unsigned w[W];
            if (q == rank) {
                ck_unit<T, U>(in, u, n, w);
            } else {
                const unsigned long long *line = (const unsigned long long *)(mine + set +
                                                 (size_t)q * CK_WORDS * 8) + u * W;
                for (int k = 0; k < W && !stopped; k++) {
                    unsigned long long v;
                    for (unsigned spins = 1; ((v = ck_get(line + k)) >> 32 << 32) != flag; spins++)
                        if ((spins & 1023) == 0 && *stop) {
                            stopped = true;
                            break;
                        }
                    w[k] = (unsigned)v;
                }
            }
            T v[E];
            memcpy(v, w, sizeof v);
            for (int j = 0; j < E; j++)
                acc[j] = q == 0 ? v[j] : ck_op<T, OP>(acc[j], v[j]);
        }
        for (int j = 0; j < E && !stopped; j++)
            if (u * E + j < n)
                out[u * E + j] = OP == 4 ? (T)(acc[j] / (T)nranks) : acc[j];
    }
    __syncthreads(); // every thread has read the counter
    if (threadIdx.x == 0)
        *count = e;
}
#define CK_K(T, t, op) extern "C" __global__ void __launch_bounds__(512)\
    ck_os_##t##_##op(const T *in, T *out, unsigned long long n, ck_peers peers, int rank,\
                     int nranks, const volatile int *stop) {\
        ck_oneshot<T, op>(in, out, n, peers, rank, nranks, stop);\
    }
#define CK_INT(T, t) CK_K(T, t, 0) CK_K(T, t, 1) CK_K(T, t, 2) CK_K(T, t, 3)
CK_INT(signed char, 0) CK_INT(unsigned char, 1) CK_INT(int, 2) CK_INT(unsigned, 3)
CK_INT(long long, 4) CK_INT(unsigned long long, 5)
CK_INT(float, 7) CK_K(float, 7, 4) CK_INT(double, 8) CK_K(double, 8, 4)
