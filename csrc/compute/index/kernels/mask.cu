// mask.cu - boolean masks: counting, compaction in order, and masked fills
// (compute/index/mask.c launches them).
// params: MAXD=32
//
// A mask is n bytes (0 or 1), contiguous. Each block takes a tile of TILE elements in
// ROUNDS rounds of THREADS consecutive ones, so every load is coalesced and the order
// of the true elements is kept: ck_mask_count counts each tile's trues, ck_mask_scan
// turns the counts into each tile's first output position (and the total, last), and
// the compaction kernels write tile b's trues from that position on.
#define THREADS 256
#define ROUNDS 16
#define TILE (THREADS * ROUNDS)
#define WARPS (THREADS / 32)

struct __align__(16) Unit16 { unsigned long long x, y; };

extern "C" __global__ void __launch_bounds__(THREADS)
ck_mask_count(const unsigned char *__restrict__ mask, long long n, unsigned int *counts) {
    __shared__ unsigned int part[WARPS];
    long long base = (long long)blockIdx.x * TILE;
    unsigned int c = 0;
    for (int k = 0; k < ROUNDS; k++) {
        long long e = base + k * THREADS + threadIdx.x;
        c += e < n && mask[e] != 0;
    }
    for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int t = 0;
        for (int w = 0; w < WARPS; w++) t += part[w];
        counts[blockIdx.x] = t;
    }
}

// One block of 1024 threads: offsets[b] = counts[0] + ... + counts[b - 1] for b < nb,
// offsets[nb] the total.
extern "C" __global__ void __launch_bounds__(1024)
ck_mask_scan(const unsigned int *__restrict__ counts, long long nb, long long *offsets) {
    __shared__ long long sums[1024];
    long long chunk = (nb + 1023) / 1024, lo = threadIdx.x * chunk;
    long long hi = lo + chunk < nb ? lo + chunk : nb, s = 0;
    for (long long b = lo; b < hi; b++) s += counts[b];
    sums[threadIdx.x] = s;
    __syncthreads();
    for (int o = 1; o < 1024; o <<= 1) { // inclusive scan of the chunks' sums
        long long v = threadIdx.x >= o ? sums[threadIdx.x - o] : 0;
        __syncthreads();
        sums[threadIdx.x] += v;
        __syncthreads();
    }
    long long at = threadIdx.x ? sums[threadIdx.x - 1] : 0;
    for (long long b = lo; b < hi; b++) {
        offsets[b] = at;
        at += counts[b];
    }
    if (threadIdx.x == 1023) offsets[nb] = sums[1023];
}

// Where element e of the tile goes, or -1 when its mask byte is 0; every thread of
// the block calls it for the same round.
__device__ __forceinline__ long long mask_slot(const unsigned char *__restrict__ mask, long long n,
                                               long long e, long long &running,
                                               unsigned int *part) {
    bool f = e < n && mask[e] != 0;
    unsigned int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned int ballot = __ballot_sync(0xffffffffu, f);
    if (lane == 0) part[w] = __popc(ballot);
    __syncthreads();
    unsigned int before = 0, all = 0;
    for (unsigned int k = 0; k < WARPS; k++) {
        before += k < w ? part[k] : 0;
        all += part[k];
    }
    long long slot = f ? running + before + __popc(ballot & ((1u << lane) - 1u)) : -1;
    running += all;
    __syncthreads();
    return slot;
}

// out[...] = the elements of data (n units of T, contiguous) where the mask is true.
template <typename T>
__device__ void compact_run(const unsigned char *__restrict__ mask, long long n,
                            const long long *__restrict__ offsets, const T *__restrict__ data,
                            T *__restrict__ out) {
    __shared__ unsigned int part[WARPS];
    long long base = (long long)blockIdx.x * TILE, running = offsets[blockIdx.x];
    for (int k = 0; k < ROUNDS; k++) {
        long long e = base + k * THREADS + threadIdx.x;
        long long s = mask_slot(mask, n, e, running, part);
        if (s >= 0) out[s] = data[e];
    }
}

#define COMPACT_KERNEL(T, B)                                                               \
    extern "C" __global__ void __launch_bounds__(THREADS)                                  \
    ck_mask_compact_##B(const unsigned char *mask, long long n, const long long *offsets,   \
                        const T *data, T *out) {                                           \
        compact_run<T>(mask, n, offsets, data, out);                                       \
    }
COMPACT_KERNEL(unsigned char, 1)
COMPACT_KERNEL(unsigned short, 2)
COMPACT_KERNEL(unsigned int, 4)
COMPACT_KERNEL(unsigned long long, 8)
COMPACT_KERNEL(Unit16, 16)

struct CoordParams {
    long long n, count; // mask elements; trues (the output's row length)
    int ndim, pad;
    long long shape[MAXD];
};

// The coordinates of the trues: out[d * count + s] is coordinate d of the s-th true
// element (row-major order), an (ndim, count) int64 array.
extern "C" __global__ void __launch_bounds__(THREADS)
ck_mask_coords(const unsigned char *mask, const long long *offsets, long long *out,
               const CoordParams p) {
    __shared__ unsigned int part[WARPS];
    long long base = (long long)blockIdx.x * TILE, running = offsets[blockIdx.x];
    for (int k = 0; k < ROUNDS; k++) {
        long long e = base + k * THREADS + threadIdx.x;
        long long s = mask_slot(mask, p.n, e, running, part);
        if (s >= 0) {
            long long r = e;
            for (int d = p.ndim - 1; d > 0; d--) {
                out[d * p.count + s] = r % p.shape[d];
                r /= p.shape[d];
            }
            out[s] = r; // the outermost coordinate needs no division
        }
    }
}

// data[e] = value where mask[e] (data: n units of T, contiguous). Each thread takes
// four elements, reading their mask bytes as one word when `mask` is 4-byte aligned.
template <typename T>
__device__ void fill_run(const unsigned char *__restrict__ mask, long long n, T *data, T value) {
    long long step = (long long)gridDim.x * blockDim.x * 4;
    bool words = ((unsigned long long)mask & 3) == 0;
    for (long long e = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4; e < n; e += step) {
        if (words && e + 4 <= n) {
            unsigned int m = __ldg((const unsigned int *)(mask + e));
            if (m & 0xffu) data[e] = value;
            if (m & 0xff00u) data[e + 1] = value;
            if (m & 0xff0000u) data[e + 2] = value;
            if (m & 0xff000000u) data[e + 3] = value;
        } else {
            for (long long k = e; k < e + 4 && k < n; k++)
                if (mask[k]) data[k] = value;
        }
    }
}

#define FILL_KERNEL(T, B)                                                                  \
    extern "C" __global__ void ck_mask_fill_##B(const unsigned char *mask, long long n,     \
                                                T *data, const T value) {                  \
        fill_run<T>(mask, n, data, value);                                                 \
    }
FILL_KERNEL(unsigned char, 1)
FILL_KERNEL(unsigned short, 2)
FILL_KERNEL(unsigned int, 4)
FILL_KERNEL(unsigned long long, 8)
FILL_KERNEL(Unit16, 16)
