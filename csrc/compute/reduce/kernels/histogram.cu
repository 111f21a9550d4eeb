// histogram.cu - bincount and histogram by atomic adds (compute/reduce/histogram.c launches them).
// params: XT=long_long ET=double WEIGHTED=1
//
// XT is the input's element type, ET the type the bin edges are compared in (numpy's:
// the edges' dtype), WEIGHTED 1 adds the double weights, 0 counts (64-bit). Inputs are
// 1-D with a stride in elements; the output is zeroed by the caller.
typedef long long long_long;
typedef unsigned long long u64;

#if WEIGHTED
#define ADD(slot, i) atomicAdd((double *)(slot), w[(i) * ws])
#else
#define ADD(slot, i) atomicAdd((u64 *)(slot), 1ULL)
#endif

// out[x[i]] += 1 (or w[i]); the caller checked 0 <= x[i] < the output's length.
extern "C" __global__ void bincount(const XT *x, long long xs, long long n, void *out,
                                    const double *w, long long ws) {
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        long long b = (long long)x[i * xs];
#if WEIGHTED
        ADD((double *)out + b, i);
#else
        ADD((u64 *)out + b, i);
#endif
    }
}

// out[k] += 1 (or w[i]) for the bin k with edges[k] <= x[i] < edges[k + 1], the last
// bin closed on the right; values outside [edges[0], edges[nb]] and NaNs are skipped.
extern "C" __global__ void histogram(const XT *x, long long xs, long long n, const ET *edges,
                                     int nb, void *out, const double *w, long long ws) {
    long long step = (long long)gridDim.x * blockDim.x;
    ET lo = edges[0], hi = edges[nb];
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        ET v = (ET)x[i * xs];
        if (!(v >= lo && v <= hi))
            continue;
        int a = 0, b = nb; // edges[a] <= v, and v < edges[b] unless b == nb
        while (b - a > 1) {
            int m = (a + b) >> 1;
            if (edges[m] <= v)
                a = m;
            else
                b = m;
        }
#if WEIGHTED
        ADD((double *)out + a, i);
#else
        ADD((u64 *)out + a, i);
#endif
    }
}
