// gemm.cu - cukit's own GEMM (linalg/gemm.c launches it where cuBLAS is absent): one
// strided batch of C = A @ B, 64 x 64 tiles of C per block of 256 threads, each thread
// 4 x 4 elements spaced 16 apart (so that a warp's stores of C run along a row); A and
// B pass through shared memory 16 deep along k, each tile read along whichever of its
// dimensions has the smaller stride.
// params: GEMM_FORM=0 GEMM_T=float GEMM_ACC=float
//
// gemm.c writes in front GEMM_FORM, how an element is stored and accumulated: 0 as
// GEMM_T, accumulated in GEMM_ACC (float and double as themselves, integers in 64 bits,
// which wrap as numpy's do once stored); 1 float16 and 2 bfloat16, in float; 3 a complex
// of two GEMM_T.
#if GEMM_FORM == 0
typedef GEMM_T T;
typedef GEMM_ACC ACC;
#define LOAD(p) ((ACC)*(p))
#define STORE(v) ((T)(v))
#elif GEMM_FORM == 1
typedef unsigned short T;
typedef float ACC;
__device__ __forceinline__ float LOAD(const T *p) { float f; unsigned short h = *p;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ T STORE(float f) { unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#elif GEMM_FORM == 2
typedef unsigned short T;
typedef float ACC;
__device__ __forceinline__ float LOAD(const T *p) {
    return __uint_as_float((unsigned)*p << 16); }
// round to nearest even; a NaN stays a (quiet) NaN
__device__ __forceinline__ T STORE(float f) { unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (T)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u); return (T)(u >> 16); }
#else
struct __align__(2 * sizeof(GEMM_T)) ck_complex { GEMM_T re, im; };
typedef ck_complex T;
typedef ck_complex ACC;
#define LOAD(p) (*(p))
#define STORE(v) (v)
__device__ __forceinline__ ACC MAD(ACC s, ACC a, ACC b) {
    return ACC{s.re + a.re * b.re - a.im * b.im, s.im + a.re * b.im + a.im * b.re}; }
#endif
#if GEMM_FORM != 3
#define MAD(s, a, b) ((s) + (a) * (b))
#endif
#define BM 64
#define BN 64
#define BK 16
__device__ __forceinline__ long long mag(long long s) { return s < 0 ? -s : s; }
extern "C" __global__ void __launch_bounds__(256)
cukit_gemm(const T *A, const T *B, T *C, long long M, long long N, long long K,
           long long sam, long long sak, long long sab, long long sbk, long long sbn,
           long long sbb, long long scm, long long scn, long long scb)
{
    __shared__ ACC As[BK][BM];
    __shared__ ACC Bs[BK][BN];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const long long z = blockIdx.z;
    A += z * sab; B += z * sbb; C += z * scb;
    const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
    const bool a_kfast = mag(sak) <= mag(sam), b_nfast = mag(sbn) <= mag(sbk);
    ACC acc[4][4];
    #pragma unroll
    for (int i = 0; i < 4; i++)
        #pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = ACC();
    for (long long k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += 256) {
            const int r = a_kfast ? e / BK : e % BM, c = a_kfast ? e % BK : e / BM;
            const long long gm = m0 + r, gk = k0 + c;
            As[c][r] = (gm < M && gk < K) ? LOAD(A + gm * sam + gk * sak) : ACC();
        }
        for (int e = tid; e < BK * BN; e += 256) {
            const int r = b_nfast ? e / BN : e % BK, c = b_nfast ? e % BN : e / BK;
            const long long gk = k0 + r, gn = n0 + c;
            Bs[r][c] = (gk < K && gn < N) ? LOAD(B + gk * sbk + gn * sbn) : ACC();
        }
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            ACC a[4], b[4];
            #pragma unroll
            for (int i = 0; i < 4; i++) { a[i] = As[kk][ty + 16 * i]; b[i] = Bs[kk][tx + 16 * i]; }
            #pragma unroll
            for (int i = 0; i < 4; i++)
                #pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = MAD(acc[i][j], a[i], b[j]);
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < 4; i++) {
        const long long gm = m0 + ty + 16 * i;
        #pragma unroll
        for (int j = 0; j < 4; j++) {
            const long long gn = n0 + tx + 16 * j;
            if (gm < M && gn < N) C[gm * scm + gn * scn] = STORE(acc[i][j]);
        }
    }
}
