// elementwise.cu - the elementwise kernel (compute/codegen.c writes what goes in front;
// compute/engine.c launches it): one loop per launch class around one statement, a
// ufunc's call or an ElementwiseKernel's operation.
// params: CK_LOOP_VEC=1 CK_VEC=4 CK_ND=0 CK_NT=256
//
// In front: the preamble, the operand types T0.., CK_NOPS, CK_OPERANDS(X) (X(k, kind)
// for each operand k, kind one of IN (an array read), OUT (an array written), INOUT (an
// array output read first), TILED (an input of CK_LOOP_T2 read through a tile), SCALAR,
// RAW (a pointer the statement indexes itself)), CK_E<k> for each operand as CK_AT(k,
// kind), the class (CK_LOOP_VEC, _FLAT, _N, _NN or _T2), CK_ND (dimensions of its
// shape and strides), CK_VEC (elements a thread of CK_LOOP_VEC takes), CK_NT (threads
// a block), what the statement calls, and CK_STMT, the statement, which sees operand k
// as CK_E<k>: an lvalue of its element (or the scalar's value). With CK_LAMBDA the
// statement calls ck_op, a lambda the kernel's frame declares after the user's
// loop_prep; then codegen.c defines CK_OWN_FRAME and writes that frame after this file
// (see CK_KERNEL at the end). On its own (the device-file test) the file adds
// two float32 arrays.
//
// The classes:
//   VEC   one contiguous run, aligned: CK_VEC elements per thread, vector loads/stores
//   FLAT  one contiguous run: one element per thread, grid-stride
//   N     strided, 1 to 3 dimensions (CK_ND), 32-bit index and offsets
//   NN    strided, any number of dimensions, 64-bit
//   T2    2-D, with inputs transposed relative to the output: a block of 32 x 8 threads
//         takes a 32 x 32 tile; each transposed input is read along its own fast
//         dimension into shared memory, then every operand is walked along the
//         output's, so that both reads and writes stay coalesced
#include "../../kernels/preamble.cuh"
#ifndef CK_STMT
typedef float T0;
typedef float T1;
typedef float T2;
#define CK_NOPS 3
#define CK_OPERANDS(X) X(0, OUT) X(1, IN) X(2, IN)
#define CK_E0 CK_AT(0, OUT)
#define CK_E1 CK_AT(1, IN)
#define CK_E2 CK_AT(2, IN)
#define CK_STMT CK_E0 = CK_E1 + CK_E2;
#endif
// The argument block (codegen.c's ck_args_layout_of is its layout on the host)
struct ck_args {
    ck_slot op[CK_NOPS];
    long long n;
    int ndim;
    int pad_;
#if CK_ND
    long long shape[CK_ND];
    long long stride[CK_NOPS][CK_ND];
#endif
};
// Operand k's element: CK_ARR(k) for an array (defined again before each loop, for its
// way of reaching elements), the tile for a tiled input, a scalar or pointer as it is.
#define CK_AT(k, kind) CK_AT_##kind(k)
#define CK_AT_IN(k) CK_ARR(k)
#define CK_AT_OUT(k) CK_ARR(k)
#define CK_AT_INOUT(k) CK_ARR(k)
#define CK_AT_TILED(k) t##k##_[threadIdx.x][j_]
#define CK_AT_SCALAR(k) a##k##_
#define CK_AT_RAW(k) a##k##_
// What a loop does for each kind of operand, X(k, kind) -> CK_<what>_<kind>(k); a
// kind a step has nothing to do for expands to nothing.
#define CK_NOTHING(k)
#define CK_BIND(k, kind) CK_BIND_##kind(k)
#define CK_BIND_PTR(k) T##k *const a##k##_ = (T##k *)p_.op[k].lo;
#define CK_BIND_IN CK_BIND_PTR
#define CK_BIND_OUT CK_BIND_PTR
#define CK_BIND_INOUT CK_BIND_PTR
#define CK_BIND_TILED CK_BIND_PTR
#define CK_BIND_RAW CK_BIND_PTR
#define CK_BIND_SCALAR(k) const T##k a##k##_ = *(const T##k *)&p_.op[k];
// CK_LOOP_VEC: a vector of each array, read first unless only written, stored after
#define CK_VLOAD(k, kind) CK_VLOAD_##kind(k)
#define CK_VLOAD_READ(k) ck_vec<T##k, CK_VEC> v##k = *(const ck_vec<T##k, CK_VEC> *)(a##k##_ + b_);
#define CK_VLOAD_IN CK_VLOAD_READ
#define CK_VLOAD_INOUT CK_VLOAD_READ
#define CK_VLOAD_TILED CK_VLOAD_READ
#define CK_VLOAD_OUT(k) ck_vec<T##k, CK_VEC> v##k;
#define CK_VLOAD_SCALAR CK_NOTHING
#define CK_VLOAD_RAW CK_NOTHING
#define CK_VSTORE(k, kind) CK_VSTORE_##kind(k)
#define CK_VSTORE_WRITE(k) *(ck_vec<T##k, CK_VEC> *)(a##k##_ + b_) = v##k;
#define CK_VSTORE_OUT CK_VSTORE_WRITE
#define CK_VSTORE_INOUT CK_VSTORE_WRITE
#define CK_VSTORE_IN CK_NOTHING
#define CK_VSTORE_TILED CK_NOTHING
#define CK_VSTORE_SCALAR CK_NOTHING
#define CK_VSTORE_RAW CK_NOTHING
// the strided loops: byte offset o<k> of each array operand (a tiled one reads its tile)
#define CK_OFFSET_OF(k) (*(T##k *)((char *)a##k##_ + o##k))
#define CK_STRIDED(k, kind, what) CK_STRIDED_##kind(k, what)
#define CK_STRIDED_IN(k, what) what(k)
#define CK_STRIDED_OUT(k, what) what(k)
#define CK_STRIDED_INOUT(k, what) what(k)
#define CK_STRIDED_TILED(k, what)
#define CK_STRIDED_SCALAR(k, what)
#define CK_STRIDED_RAW(k, what)
#define CK_TILE(k, kind) CK_TILE_##kind(k)
#define CK_TILE_TILED(k)                                                                 \
    __shared__ T##k t##k##_[32][33];                                                     \
    for (int j_ = threadIdx.y; j_ < 32; j_ += 8) {                                       \
        const long long r_ = r0_ + threadIdx.x, c_ = c0_ + j_;                           \
        if (r_ < R_ && c_ < C_)                                                          \
            t##k##_[j_][threadIdx.x] = *(const T##k *)((const char *)a##k##_ +           \
                                                       r_ * p_.stride[k][0] + c_ * p_.stride[k][1]); \
    }
#define CK_TILE_IN CK_NOTHING
#define CK_TILE_OUT CK_NOTHING
#define CK_TILE_INOUT CK_NOTHING
#define CK_TILE_SCALAR CK_NOTHING
#define CK_TILE_RAW CK_NOTHING
#define CK_T2_OFF(k) const long long o##k = r_ * p_.stride[k][0] + c_ * p_.stride[k][1];
#define CK_T2_OFFS(k, kind) CK_STRIDED(k, kind, CK_T2_OFF)
#define CK_NN_ZERO(k) , o##k = 0
#define CK_NN_ZEROS(k, kind) CK_STRIDED(k, kind, CK_NN_ZERO)
#define CK_NN_STEP(k) o##k += c_ * p_.stride[k][d_];
#define CK_NN_STEPS(k, kind) CK_STRIDED(k, kind, CK_NN_STEP)
#define CK_NN_LAST(k) o##k += r_ * p_.stride[k][0];
#define CK_NN_LASTS(k, kind) CK_STRIDED(k, kind, CK_NN_LAST)
// CK_LOOP_N: dimension d's part is there when CK_ND > d
#if CK_ND >= 2
#define CK_D1(x) x
#else
#define CK_D1(x)
#endif
#if CK_ND >= 3
#define CK_D2(x) x
#else
#define CK_D2(x)
#endif
#define CK_N_STRIDE(k)                                                                   \
    const int t##k##_0 = (int)p_.stride[k][0];                                           \
    CK_D1(const int t##k##_1 = (int)p_.stride[k][1];)                                    \
    CK_D2(const int t##k##_2 = (int)p_.stride[k][2];)
#define CK_N_STRIDES(k, kind) CK_STRIDED(k, kind, CK_N_STRIDE)
#define CK_N_OFF(k) const int o##k = (int)r_ * t##k##_0 CK_D1(+ (int)c1_ * t##k##_1) CK_D2(+ (int)c2_ * t##k##_2);
#define CK_N_OFFS(k, kind) CK_STRIDED(k, kind, CK_N_OFF)
// The statement's operation under the name it calls: the kernel frame's lambda, or none
#ifdef CK_LAMBDA
#define CK_OP_NAME ck_op
#else
#define CK_OP_NAME ck_no_op_
#endif

// The loop of the class over the elements of p_, with the statement in it.
template <class F> CKD void ck_loop(const ck_args &p_, const F &CK_OP_NAME) {
    CK_OPERANDS(CK_BIND)
    const ck_index _ind{p_.n};
    (void)_ind;
#if defined(CK_LOOP_VEC)
    const long long n_ = p_.n, step_ = (long long)gridDim.x * blockDim.x * CK_VEC;
    for (long long b_ = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * CK_VEC; b_ < n_; b_ += step_) {
        if (b_ + CK_VEC <= n_) {
            CK_OPERANDS(CK_VLOAD)
#define CK_ARR(k) v##k.v[j_]
#pragma unroll
            for (int j_ = 0; j_ < CK_VEC; j_++) {
                const long long i = b_ + j_;
                (void)i;
                CK_STMT
            }
            CK_OPERANDS(CK_VSTORE)
        }
        else {
#undef CK_ARR
#define CK_ARR(k) a##k##_[i]
            for (long long i = b_; i < n_; i++) {
                CK_STMT
            }
        }
    }
#elif defined(CK_LOOP_FLAT)
    const long long n_ = p_.n, step_ = (long long)gridDim.x * blockDim.x;
#define CK_ARR(k) a##k##_[i]
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n_; i += step_) {
        CK_STMT
    }
#elif defined(CK_LOOP_T2)
    // blockDim (32, 8): tile rows r0_.., columns c0_.. of the [R_][C_] layout
    const long long R_ = p_.shape[0], C_ = p_.shape[1];
    const long long r0_ = (long long)blockIdx.y * 32, c0_ = (long long)blockIdx.x * 32;
    CK_OPERANDS(CK_TILE)
    __syncthreads();
#define CK_ARR CK_OFFSET_OF
    for (int j_ = threadIdx.y; j_ < 32; j_ += 8) {
        const long long r_ = r0_ + j_, c_ = c0_ + threadIdx.x;
        if (r_ >= R_ || c_ >= C_)
            continue;
        const long long i = r_ * C_ + c_;
        (void)i;
        CK_OPERANDS(CK_T2_OFFS)
        CK_STMT
    }
#elif defined(CK_LOOP_NN)
    const long long n_ = p_.n, step_ = (long long)gridDim.x * blockDim.x;
    const int nd_ = p_.ndim;
#define CK_ARR CK_OFFSET_OF
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n_; i += step_) {
        long long r_ = i CK_OPERANDS(CK_NN_ZEROS);
        for (int d_ = nd_ - 1; d_ > 0; d_--) {
            const long long c_ = r_ % p_.shape[d_];
            r_ /= p_.shape[d_];
            CK_OPERANDS(CK_NN_STEPS)
        }
        CK_OPERANDS(CK_NN_LASTS)
        CK_STMT
    }
#else // CK_LOOP_N: 32-bit
    const unsigned int n_ = (unsigned int)p_.n, step_ = gridDim.x * blockDim.x;
    CK_D1(const unsigned int s1_ = (unsigned int)p_.shape[1];)
    CK_D2(const unsigned int s2_ = (unsigned int)p_.shape[2];)
    CK_OPERANDS(CK_N_STRIDES)
#define CK_ARR CK_OFFSET_OF
    for (unsigned int u_ = blockIdx.x * blockDim.x + threadIdx.x; u_ < n_; u_ += step_) {
        const long long i = u_;
        (void)i;
        unsigned int r_ = u_;
        CK_D2(const unsigned int c2_ = r_ % s2_; r_ /= s2_;)
        CK_D1(const unsigned int c1_ = r_ % s1_; r_ /= s1_;)
        CK_OPERANDS(CK_N_OFFS)
        CK_STMT
    }
#endif
}

// The kernel: its frame here, or (CK_OWN_FRAME) codegen.c's after the file:
//     CK_KERNEL { CK_KERNEL_BIND <loop_prep> ck_loop(p_, ck_op); <after_loop> }
#define CK_KERNEL extern "C" __global__ void __launch_bounds__(CK_NT) ck(const ck_args p_)
#define CK_KERNEL_BIND                                                                   \
    CK_OPERANDS(CK_BIND)                                                                 \
    const ck_index _ind{p_.n};                                                           \
    (void)_ind;
#ifndef CK_OWN_FRAME
CK_KERNEL { ck_loop(p_, 0); }
#endif
