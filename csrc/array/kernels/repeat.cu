// repeat.cu - a.repeat(counts, axis) with one count per element (array/shape.c launches it).
// params: (none: sizes and counts are arguments)
//
// The source is C-contiguous, seen as (outer, n, inner) elements; the output as
// (outer, total, inner). ends[i] is the sum of the counts up to and including element i,
// so output row j along the axis copies source row i, the first with ends[i] > j.
template <typename T>
__device__ void expand(T *out, const T *src, const long long *ends, long long n, long long total,
                       long long inner, long long count) {
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < count;
         idx += step) {
        long long k = idx % inner, r = idx / inner;
        long long j = r % total, o = r / total;
        long long lo = 0, hi = n - 1;
        while (lo < hi) {
            long long m = (lo + hi) >> 1;
            if (ends[m] > j)
                hi = m;
            else
                lo = m + 1;
        }
        out[idx] = src[(o * n + lo) * inner + k];
    }
}

struct Unit16 {
    unsigned long long lo, hi;
};

#define REPEAT(NAME, T)                                                                       \
    extern "C" __global__ void NAME(T *out, const T *src, const long long *ends, long long n, \
                                    long long total, long long inner, long long count) {      \
        expand<T>(out, src, ends, n, total, inner, count);                                    \
    }
REPEAT(repeat_1, unsigned char)
REPEAT(repeat_2, unsigned short)
REPEAT(repeat_4, unsigned int)
REPEAT(repeat_8, unsigned long long)
REPEAT(repeat_16, Unit16)
