// mask.cu - boolean masks: counting, compaction in order, and masked fills
// (compute/index/mask.c launches them).
// params: MAXD=32
//
// A mask is n bytes (0 or not), contiguous. Each block takes one tile of TILE
// elements: thread t owns the VEC consecutive bytes t * VEC.. of it, read as one
// 16-byte word where the mask is 16-byte aligned. ck_mask_count counts each tile's
// trues, ck_mask_scan turns the counts into each tile's first output position (and the
// total, last), and the compaction kernels place tile b's trues from that position on:
// one block-wide scan of the threads' counts gives each thread where its trues go in
// the tile, their positions are listed in shared memory in order, and the block then
// writes the tile's output as one contiguous, coalesced run.
#define THREADS 256
#define VEC 16
#define TILE (THREADS * VEC)
#define WARPS (THREADS / 32)

struct __align__(16) Unit16 { unsigned long long x, y; };

// Bit k set when byte k of w is not 0 (k = 0..3).
__device__ __forceinline__ unsigned int nonzero4(unsigned int w) {
    unsigned int hi = (((w & 0x7f7f7f7fu) + 0x7f7f7f7fu) | w) & 0x80808080u;
    return ((hi >> 7) & 1u) | ((hi >> 14) & 2u) | ((hi >> 21) & 4u) | ((hi >> 28) & 8u);
}

// The trues among the VEC bytes from e0 on (bit k: byte e0 + k), bytes past n false.
__device__ __forceinline__ unsigned int thread_bits(const unsigned char *__restrict__ mask,
                                                    long long n, long long e0) {
    if (e0 + VEC <= n && ((unsigned long long)mask & 15) == 0) {
        uint4 w = *(const uint4 *)(mask + e0);
        return nonzero4(w.x) | (nonzero4(w.y) << 4) | (nonzero4(w.z) << 8) | (nonzero4(w.w) << 12);
    }
    unsigned int bits = 0;
    for (int k = 0; k < VEC; k++)
        if (e0 + k < n && mask[e0 + k] != 0) bits |= 1u << k;
    return bits;
}

extern "C" __global__ void __launch_bounds__(THREADS)
ck_mask_count(const unsigned char *__restrict__ mask, long long n, unsigned int *counts) {
    __shared__ unsigned int part[WARPS];
    long long e0 = (long long)blockIdx.x * TILE + threadIdx.x * VEC;
    unsigned int c = __popc(thread_bits(mask, n, e0));
    for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int t = 0;
        for (int w = 0; w < WARPS; w++) t += part[w];
        counts[blockIdx.x] = t;
    }
}

// One block of up to 1024 threads (a multiple of 32): offsets[b] = counts[0] + ... +
// counts[b - 1] for b < nb, offsets[nb] the total. Thread t sums a run of the counts,
// the runs' sums are scanned with warp shuffles, then each thread writes its run's.
extern "C" __global__ void __launch_bounds__(1024)
ck_mask_scan(const unsigned int *__restrict__ counts, long long nb, long long *offsets) {
    __shared__ long long wsum[32];
    unsigned int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    long long chunk = (nb + blockDim.x - 1) / blockDim.x, lo = threadIdx.x * chunk;
    long long hi = lo + chunk < nb ? lo + chunk : nb, s = 0;
    for (long long b = lo; b < hi; b++) s += counts[b];
    long long x = s;
    for (int o = 1; o < 32; o <<= 1) { // inclusive scan over the warp
        long long y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= (unsigned int)o) x += y;
    }
    if (lane == 31) wsum[w] = x;
    __syncthreads();
    if (w == 0) { // the warps' sums, scanned by the first warp
        long long v = lane < nw ? wsum[lane] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            long long y = __shfl_up_sync(0xffffffffu, v, o);
            if (lane >= (unsigned int)o) v += y;
        }
        if (lane < nw) wsum[lane] = v;
    }
    __syncthreads();
    long long at = x - s + (w ? wsum[w - 1] : 0);
    for (long long b = lo; b < hi; b++) {
        offsets[b] = at;
        at += counts[b];
    }
    if (threadIdx.x == blockDim.x - 1) offsets[nb] = at;
}

// List this block's tile's trues in order: pos[0 .. count) are their positions in the
// tile. Returns the count; every thread of the block calls it once.
__device__ __forceinline__ unsigned int tile_place(const unsigned char *__restrict__ mask,
                                                   long long n, unsigned short *pos,
                                                   unsigned int *part) {
    unsigned int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned int bits = thread_bits(mask, n, (long long)blockIdx.x * TILE + threadIdx.x * VEC);
    unsigned int c = __popc(bits), x = c;
    for (int o = 1; o < 32; o <<= 1) { // inclusive scan over the warp
        unsigned int y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= (unsigned int)o) x += y;
    }
    if (lane == 31) part[w] = x;
    __syncthreads();
    unsigned int before = 0, all = 0;
    for (unsigned int k = 0; k < WARPS; k++) {
        before += k < w ? part[k] : 0;
        all += part[k];
    }
    unsigned int slot = before + x - c;
    while (bits) {
        int k = __ffs(bits) - 1;
        bits &= bits - 1;
        pos[slot++] = (unsigned short)(threadIdx.x * VEC + k);
    }
    __syncthreads();
    return all;
}

// out[...] = the elements of data (n units of T, contiguous) where the mask is true.
template <typename T>
__device__ void compact_run(const unsigned char *__restrict__ mask, long long n,
                            const long long *__restrict__ offsets, const T *__restrict__ data,
                            T *__restrict__ out) {
    __shared__ unsigned short pos[TILE];
    __shared__ unsigned int part[WARPS];
    unsigned int all = tile_place(mask, n, pos, part);
    long long base = (long long)blockIdx.x * TILE;
    T *o = out + offsets[blockIdx.x];
    for (unsigned int s = threadIdx.x; s < all; s += THREADS) o[s] = data[base + pos[s]];
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
    long long n, count; // mask elements; trues
    int ndim, rows;     // rows 1: out is (ndim, count) (nonzero); 0: (count, ndim) (argwhere)
    long long shape[MAXD];
};

// The coordinates of the trues, in row-major order of the mask: the s-th true's
// coordinate d goes to out[d * count + s] (rows) or out[s * ndim + d].
extern "C" __global__ void __launch_bounds__(THREADS)
ck_mask_coords(const unsigned char *mask, const long long *offsets, long long *out,
               const CoordParams p) {
    __shared__ unsigned short pos[TILE];
    __shared__ unsigned int part[WARPS];
    unsigned int all = tile_place(mask, p.n, pos, part);
    long long base = (long long)blockIdx.x * TILE, first = offsets[blockIdx.x];
    long long dstep = p.rows ? p.count : 1, sstep = p.rows ? 1 : p.ndim;
    for (unsigned int s = threadIdx.x; s < all; s += THREADS) {
        long long r = base + pos[s], *o = out + (first + s) * sstep;
        for (int d = p.ndim - 1; d > 0; d--) {
            long long q = r / p.shape[d];
            o[d * dstep] = r - q * p.shape[d];
            r = q;
        }
        o[0] = r; // the outermost coordinate needs no division
    }
}

// data[e] = value where mask[e], as numpy's where(mask, value, data) written in place
// (data: n units of T, contiguous; the value from *vp when vp is not 0). Each thread
// takes four elements at a time: their mask bytes as one word, their data as one
// vector (read only when some but not all four are set, written only when some are).
template <typename T, int A> struct __align__(A) Quad { T x[4]; };

template <typename T, int A>
__device__ void fill_run(const unsigned char *__restrict__ mask, long long n, T *data, T value,
                         const T *vp) {
    if (vp) value = *vp;
    long long step = (long long)gridDim.x * blockDim.x, t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long start = 0;
    if ((((unsigned long long)mask & 3) | ((unsigned long long)data & (A - 1))) == 0) {
        long long nq = n / 4;
        for (long long q = t; q < nq; q += step) {
            unsigned int m = nonzero4(((const unsigned int *)mask)[q]);
            if (m == 0) continue;
            Quad<T, A> *dq = (Quad<T, A> *)data + q;
            // a partly selected quad is read and written whole (one vector each way, as
            // PyTorch's masked fill writes every element): the elements the mask leaves
            // are written back with their own values
            Quad<T, A> d;
            if (m != 15) d = *dq;
#pragma unroll
            for (int k = 0; k < 4; k++)
                if (m & (1u << k)) d.x[k] = value;
            *dq = d;
        }
        start = nq * 4;
    }
    for (long long e = start + t; e < n; e += step)
        if (mask[e]) data[e] = value;
}

#define FILL_KERNEL(T, B, A)                                                               \
    extern "C" __global__ void ck_mask_fill_##B(const unsigned char *mask, long long n,     \
                                                T *data, const T value, const T *vp) {     \
        fill_run<T, A>(mask, n, data, value, vp);                                          \
    }
FILL_KERNEL(unsigned char, 1, 4)
FILL_KERNEL(unsigned short, 2, 8)
FILL_KERNEL(unsigned int, 4, 16)
FILL_KERNEL(unsigned long long, 8, 16)
FILL_KERNEL(Unit16, 16, 16)
