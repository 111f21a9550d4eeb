// choice.cu - Generator.choice with p=: the search of a cumulative distribution (compute/random/sample.c launches it).
// params: (none: the file takes no defines)
//
// cdf[j] is p[0] + ... + p[j] (float64, summed on the host); u[i] is a uniform draw in
// [0, 1). out[i] is the first j with cdf[j] > u[i] * cdf[n - 1]: an index of zero
// probability is never found (its cdf equals the one before it), and `last` (the last
// index of non-zero probability) is taken when rounding puts the product at the end.
extern "C" __global__ void cukit_choice_search(const double *cdf, long long last, const double *u,
                                               long long *out, long long m, double total) {
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < m; i += step) {
        double x = u[i] * total;
        long long lo = 0, hi = last;
        while (lo < hi) {
            long long mid = lo + (hi - lo) / 2;
            if (cdf[mid] > x)
                hi = mid;
            else
                lo = mid + 1;
        }
        out[i] = lo;
    }
}
