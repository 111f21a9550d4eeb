// index.cu - numpy's advanced indexing: gather (a[idx]) and scatter (a[idx] = v) through
// integer index arrays (compute/index/index.c launches them).
// params: MAXD=32 MAXI=8
//
// The result of an advanced index has shape `shape`: each of its elements is one
// element of the indexed array, found by adding, for every result dimension, the
// dimension's coordinate times `bstride` (the dimensions basic indexing kept), and for
// every index array j, its value at that coordinate times `astride[j]` (the axis it
// indexes). Index arrays are int64, broadcast to the result by their element strides
// `istride[j]` (0 along dimensions they do not span). A value outside [-len, len) is
// never used to address memory: a gather writes 0 for that element and a scatter
// skips it, and the first one met is noted in the device's BadIndex record (mapped
// host memory, runtime/report.c), which cukit's next synchronizing point raises as
// IndexError. The host never waits for the check.
struct BadIndex {
    unsigned long long state; // 0 empty, 1 being written, 2 ready for the host
    long long value, size, axis;
};

struct IndexParams {
    unsigned long long base;  // element [0, ...] of the indexed array (after basic indexing)
    unsigned long long other; // gather: the C-contiguous result; scatter: the values
    unsigned long long err;   // the device's BadIndex (0: every index was checked on the host)
    long long total;          // elements of the result
    int ndim, nidx;
    long long shape[MAXD];
    long long bstride[MAXD];  // bytes
    long long vstride[MAXD];  // scatter: the values' byte strides along the result
    unsigned long long idx[MAXI];
    long long istride[MAXI][MAXD]; // elements
    long long len[MAXI];      // the length of the axis index array j indexes
    long long astride[MAXI];  // and its byte stride
    long long axis[MAXI];     // and its number in the array the user indexed (for the message)
};

// Note bad index v of array j, unless an earlier one was noted; the record's numbers
// are written before its state says they are ready (the host may read it while this
// kernel runs, at a synchronize of another stream).
__device__ __forceinline__ void note_bad_index(const IndexParams &p, int j, long long v) {
    BadIndex *r = (BadIndex *)p.err;
    // a plain read first: once noted, a flood of bad indices costs no atomics over the bus
    if (r == 0 || *(volatile unsigned long long *)&r->state != 0ull ||
        atomicCAS(&r->state, 0ull, 1ull) != 0ull) return;
    r->value = v;
    r->size = p.len[j];
    r->axis = p.axis[j];
    __threadfence_system();
    atomicExch(&r->state, 2ull);
}

struct __align__(16) Unit16 { unsigned long long x, y; };

// The loops over index arrays run to MAXI with a test, unrolled, so that the offsets
// stay in registers whatever p.nidx is.
template <typename I>
__device__ __forceinline__ bool index_offsets(const IndexParams &p, I i, long long &boff,
                                              long long &voff) {
    long long ioff[MAXI];
#pragma unroll
    for (int j = 0; j < MAXI; j++) ioff[j] = 0;
    boff = 0;
    voff = 0;
    if (p.ndim == 1) { // one dimension: the element is its coordinate
        boff = (long long)i * p.bstride[0];
        voff = (long long)i * p.vstride[0];
#pragma unroll
        for (int j = 0; j < MAXI; j++)
            if (j < p.nidx) ioff[j] = (long long)i * p.istride[j][0];
    } else {
        I r = i;
        for (int k = p.ndim - 1; k > 0; k--) {
            I n = (I)p.shape[k], c = r % n;
            r /= n;
            boff += (long long)c * p.bstride[k];
            voff += (long long)c * p.vstride[k];
#pragma unroll
            for (int j = 0; j < MAXI; j++)
                if (j < p.nidx) ioff[j] += (long long)c * p.istride[j][k];
        }
        boff += (long long)r * p.bstride[0];
        voff += (long long)r * p.vstride[0];
#pragma unroll
        for (int j = 0; j < MAXI; j++)
            if (j < p.nidx) ioff[j] += (long long)r * p.istride[j][0];
    }
    bool ok = true;
#pragma unroll
    for (int j = 0; j < MAXI; j++) {
        if (j >= p.nidx) break;
        long long v = __ldg((const long long *)p.idx[j] + ioff[j]), w = v < 0 ? v + p.len[j] : v;
        if (w < 0 || w >= p.len[j]) {
            note_bad_index(p, j, v);
            ok = false;
            w = 0;
        }
        boff += w * p.astride[j];
    }
    return ok;
}

template <typename T, typename I> __device__ void gather_run(const IndexParams &p) {
    I step = (I)gridDim.x * blockDim.x;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)p.total; i += step) {
        long long boff, voff;
        T x = T{};
        if (index_offsets<I>(p, i, boff, voff)) x = *(const T *)(p.base + boff);
        ((T *)p.other)[i] = x;
    }
}

template <typename T, typename I> __device__ void scatter_run(const IndexParams &p) {
    I step = (I)gridDim.x * blockDim.x;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)p.total; i += step) {
        long long boff, voff;
        if (index_offsets<I>(p, i, boff, voff))
            *(T *)(p.base + boff) = *(const T *)(p.other + voff);
    }
}

// One gather and one scatter per element size (1, 2, 4, 8, 16 bytes), moved as units.
#define INDEX_KERNELS(T, B)                                                                \
    extern "C" __global__ void ck_gather_##B(const IndexParams p) {                        \
        if (p.total <= 0x7fffffffLL) gather_run<T, unsigned int>(p);                       \
        else gather_run<T, unsigned long long>(p);                                         \
    }                                                                                      \
    extern "C" __global__ void ck_scatter_##B(const IndexParams p) {                       \
        if (p.total <= 0x7fffffffLL) scatter_run<T, unsigned int>(p);                      \
        else scatter_run<T, unsigned long long>(p);                                        \
    }
INDEX_KERNELS(unsigned char, 1)
INDEX_KERNELS(unsigned short, 2)
INDEX_KERNELS(unsigned int, 4)
INDEX_KERNELS(unsigned long long, 8)
INDEX_KERNELS(Unit16, 16)
