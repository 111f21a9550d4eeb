// strided.cu - copies and fills of strided layouts (array/strided.c launches them).
// params: MAXD=33 (the array's dimensions, plus the units of one element)
//
// Both kernels take one struct by value whose layout the host structs in strided.c
// mirror; indices use 32-bit arithmetic when the count allows (the common case).
struct CopyParams {
    unsigned long long dst, src;
    long long total;
    int ndim, pad;
    long long n[MAXD], d[MAXD], s[MAXD];
};
struct FillParams {
    unsigned long long dst;
    long long total;
    int ndim, k;
    long long n[MAXD], d[MAXD];
    unsigned long long value[16];
};

template <typename T, typename I> __device__ void copy_run(const CopyParams &p) {
    I step = (I)gridDim.x * blockDim.x;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)p.total; i += step) {
        I r = i;
        long long od = 0, os = 0;
        for (int k = p.ndim - 1; k > 0; k--) {
            I n = (I)p.n[k], c = r % n;
            r /= n;
            od += (long long)c * p.d[k];
            os += (long long)c * p.s[k];
        }
        od += (long long)r * p.d[0];
        os += (long long)r * p.s[0];
        *(T *)(p.dst + od) = *(const T *)(p.src + os);
    }
}

template <typename T, typename I> __device__ void fill_run(const FillParams &p) {
    I step = (I)gridDim.x * blockDim.x;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)p.total; i += step) {
        I r = i;
        long long od = 0;
        for (int k = p.ndim - 1; k > 0; k--) {
            I n = (I)p.n[k], c = r % n;
            r /= n;
            od += (long long)c * p.d[k];
        }
        od += (long long)r * p.d[0];
        T *out = (T *)(p.dst + od);
        for (int j = 0; j < p.k; j++) { /* unit j of the element, little-endian */
            unsigned long long w = p.value[j * sizeof(T) / 8];
            out[j] = (T)(w >> (8 * (j * sizeof(T) % 8)));
        }
    }
}

struct __align__(16) Vec16 { unsigned long long x, y; };

// One copy kernel per unit size (1, 2, 4, 8, 16 bytes) and one fill per 1..8.
#define COPY_KERNEL(T, B)                                                                  \
    extern "C" __global__ void cukit_copy_##B(const CopyParams p) {                        \
        if (p.total <= 0x7fffffffLL) copy_run<T, unsigned int>(p);                         \
        else copy_run<T, unsigned long long>(p);                                           \
    }
#define FILL_KERNEL(T, B)                                                                  \
    extern "C" __global__ void cukit_fill_##B(const FillParams p) {                        \
        if (p.total <= 0x7fffffffLL) fill_run<T, unsigned int>(p);                         \
        else fill_run<T, unsigned long long>(p);                                           \
    }
COPY_KERNEL(unsigned char, 1)
COPY_KERNEL(unsigned short, 2)
COPY_KERNEL(unsigned int, 4)
COPY_KERNEL(unsigned long long, 8)
COPY_KERNEL(Vec16, 16)
FILL_KERNEL(unsigned char, 1)
FILL_KERNEL(unsigned short, 2)
FILL_KERNEL(unsigned int, 4)
FILL_KERNEL(unsigned long long, 8)
