// solver.cu - cukit's own factorizations (linalg/solver.c launches them): LU with partial
// pivoting and its solve and determinant, Cholesky, Householder QR, Jacobi eigh and
// one-sided Jacobi SVD.
// params: (none: every kernel is instantiated for the four types below)
//
// One block per matrix of a stack (blockIdx.x), blockDim.x a power of two up to 256
// threads sharing the matrix's work. Matrices are row-major and contiguous, one after
// another. They are written to be right, not fast: the libraries are the fast path.
#include "scalar.cuh"

#define MAXT 256

// ------------------------------------------------------------------ LU (getrf, getrs)

// a (n x n) = P L U in place, L unit lower; piv[k] the row swapped with row k at step
// k; *info the first zero pivot (1-based), 0 when none.
template <typename T> __device__ void lu(T *a, int *piv, int *info, int n) {
    typedef typename RealOf<T>::type R;
    __shared__ R bv[MAXT];
    __shared__ int bi[MAXT];
    const int t = threadIdx.x, nt = blockDim.x;
    if (t == 0) *info = 0;
    for (int k = 0; k < n; k++) {
        R best = -1;
        int at = k;
        for (int i = k + t; i < n; i += nt) {
            R v = fabs(re(a[i * n + k])) + fabs(im(a[i * n + k]));
            if (v > best) best = v, at = i;
        }
        bv[t] = best;
        bi[t] = at;
        __syncthreads();
        for (int s = nt / 2; s > 0; s >>= 1) {
            if (t < s && (bv[t + s] > bv[t] || (bv[t + s] == bv[t] && bi[t + s] < bi[t])))
                bv[t] = bv[t + s], bi[t] = bi[t + s];
            __syncthreads();
        }
        const int p = bi[0];
        const bool zero = !(bv[0] > 0);
        __syncthreads();
        if (t == 0) {
            piv[k] = p;
            if (zero && *info == 0) *info = k + 1;
        }
        if (p != k)
            for (int j = t; j < n; j += nt) {
                T x = a[k * n + j];
                a[k * n + j] = a[p * n + j];
                a[p * n + j] = x;
            }
        __syncthreads();
        if (!zero) {
            const T d = a[k * n + k];
            for (int i = k + 1 + t; i < n; i += nt) a[i * n + k] = a[i * n + k] / d;
            __syncthreads();
            const int w = n - k - 1;
            for (int e = t; e < w * w; e += nt) {
                int i = k + 1 + e / w, j = k + 1 + e % w;
                a[i * n + j] = a[i * n + j] - a[i * n + k] * a[k * n + j];
            }
        }
        __syncthreads();
    }
}

// b (n x nrhs) = A^-1 b from A's LU and pivots.
template <typename T> __device__ void lu_solve(const T *a, const int *piv, T *b, int n, int nrhs) {
    const int t = threadIdx.x, nt = blockDim.x;
    for (int k = 0; k < n; k++) {
        const int p = piv[k];
        if (p != k)
            for (int c = t; c < nrhs; c += nt) {
                T x = b[k * nrhs + c];
                b[k * nrhs + c] = b[p * nrhs + c];
                b[p * nrhs + c] = x;
            }
        __syncthreads();
    }
    for (int i = 0; i < n; i++) { // L y = P b
        const int w = n - i - 1;
        for (int e = t; e < w * nrhs; e += nt) {
            int r = i + 1 + e / nrhs, c = e % nrhs;
            b[r * nrhs + c] = b[r * nrhs + c] - a[r * n + i] * b[i * nrhs + c];
        }
        __syncthreads();
    }
    for (int i = n - 1; i >= 0; i--) { // U x = y
        for (int c = t; c < nrhs; c += nt) b[i * nrhs + c] = b[i * nrhs + c] / a[i * n + i];
        __syncthreads();
        for (int e = t; e < i * nrhs; e += nt) {
            int r = e / nrhs, c = e % nrhs;
            b[r * nrhs + c] = b[r * nrhs + c] - a[r * n + i] * b[i * nrhs + c];
        }
        __syncthreads();
    }
}

// det(A) as sign (unit modulus, 0 when singular) and log|det|, from the LU.
template <typename T> __device__ void lu_det(const T *a, const int *piv, T *sign,
                                             typename RealOf<T>::type *logabs, int n) {
    typedef typename RealOf<T>::type R;
    if (threadIdx.x != 0) return;
    T s = mk<T>(1);
    R l = 0;
    for (int k = 0; k < n; k++) {
        const T d = a[k * n + k];
        const R m = absv(d);
        if (m == 0) {
            s = mk<T>(0);
            l = log((R)0);
            break;
        }
        s = s * (d / mk<T>(m));
        if (piv[k] != k) s = -s;
        l += log(m);
    }
    *sign = s;
    *logabs = l;
}

// ------------------------------------------------------------------ Cholesky (potrf)

// a (n x n) = L L^H from its lower triangle, L in the lower triangle and zeros above;
// *info the order of the first leading minor that is not positive definite.
template <typename T> __device__ void cholesky(T *a, int *info, int n) {
    typedef typename RealOf<T>::type R;
    __shared__ int bad;
    const int t = threadIdx.x, nt = blockDim.x;
    if (t == 0) *info = 0, bad = 0;
    __syncthreads();
    for (int j = 0; j < n; j++) {
        const R d = re(a[j * n + j]);
        if (!(d > 0)) {
            if (t == 0) *info = j + 1, bad = 1;
            break;
        }
        const R l = sqrt(d);
        __syncthreads();
        if (t == 0) a[j * n + j] = mk<T>(l);
        for (int i = j + 1 + t; i < n; i += nt) a[i * n + j] = a[i * n + j] / mk<T>(l);
        __syncthreads();
        const int w = n - j - 1;
        for (int e = t; e < w * w; e += nt) {
            int i = j + 1 + e / w, k = j + 1 + e % w;
            if (k <= i) a[i * n + k] = a[i * n + k] - a[i * n + j] * conjg(a[k * n + j]);
        }
        __syncthreads();
    }
    __syncthreads();
    if (bad) return;
    for (int e = t; e < n * n; e += nt)
        if (e % n > e / n) a[e] = mk<T>(0);
}

// ------------------------------------------------------------------ QR (geqrf, orgqr)

// a (m x n) = Q R in place as LAPACK keeps it: R on and above the diagonal, the
// Householder vectors below it (their first element 1 implied), their factors in tau;
// H_j = I - tau_j v v^H and Q = H_0 H_1 ... H_{k-1}, k = min(m, n).
template <typename T> __device__ void qr(T *a, T *tau, int m, int n) {
    typedef typename RealOf<T>::type R;
    __shared__ R buf[MAXT];
    __shared__ T h[2]; // conj(tau), and the scale of v
    const int t = threadIdx.x, nt = blockDim.x, k = m < n ? m : n;
    for (int j = 0; j < k; j++) {
        R part = 0;
        for (int i = j + 1 + t; i < m; i += nt) part += abs2(a[i * n + j]);
        const R xnorm2 = block_sum(part, buf);
        const T alpha = a[j * n + j];
        if (xnorm2 == 0 && im(alpha) == 0) {
            if (t == 0) tau[j] = mk<T>(0);
            __syncthreads();
            continue;
        }
        R beta = sqrt(abs2(alpha) + xnorm2);
        if (re(alpha) >= 0) beta = -beta;
        if (t == 0) {
            const T tj = mk<T>((beta - re(alpha)) / beta, -im(alpha) / beta);
            tau[j] = tj;
            h[0] = conjg(tj);
            h[1] = mk<T>(1) / (alpha - mk<T>(beta));
        }
        __syncthreads();
        for (int i = j + 1 + t; i < m; i += nt) a[i * n + j] = a[i * n + j] * h[1];
        __syncthreads();
        if (t == 0) a[j * n + j] = mk<T>(beta);
        // H^H applied to the columns on the right: a_c -= conj(tau) v (v^H a_c)
        for (int c = j + 1 + t; c < n; c += nt) {
            T w = a[j * n + c];
            for (int i = j + 1; i < m; i++) w = w + conjg(a[i * n + j]) * a[i * n + c];
            w = h[0] * w;
            a[j * n + c] = a[j * n + c] - w;
            for (int i = j + 1; i < m; i++) a[i * n + c] = a[i * n + c] - a[i * n + j] * w;
        }
        __syncthreads();
    }
}

// q (m x kq) = the first kq columns of Q from qr's a (m x n) and tau.
template <typename T> __device__ void qr_q(const T *a, const T *tau, T *q, int m, int n, int kq) {
    const int t = threadIdx.x, nt = blockDim.x, k = m < n ? m : n;
    for (int e = t; e < m * kq; e += nt) q[e] = mk<T>(e / kq == e % kq ? 1 : 0);
    __syncthreads();
    for (int j = k - 1; j >= 0; j--) {
        const T tj = tau[j];
        for (int c = t; c < kq; c += nt) {
            T w = q[j * kq + c];
            for (int i = j + 1; i < m; i++) w = w + conjg(a[i * n + j]) * q[i * kq + c];
            w = tj * w;
            q[j * kq + c] = q[j * kq + c] - w;
            for (int i = j + 1; i < m; i++) q[i * kq + c] = q[i * kq + c] - a[i * n + j] * w;
        }
        __syncthreads();
    }
}

// r (rows x n) = the upper triangle of qr's a (m x n), zeros below.
template <typename T> __device__ void qr_r(const T *a, T *r, int m, int n, int rows) {
    for (int e = threadIdx.x; e < rows * n; e += blockDim.x) {
        int i = e / n, c = e % n;
        r[e] = c >= i && i < m ? a[i * n + c] : mk<T>(0);
    }
}

// ------------------------------------------------------------------ Jacobi eigh

// A Jacobi rotation's numbers for the 2 x 2 Hermitian [[app, apq], [conj(apq), aqq]]
// (|apq| > 0): c, s and the phase e of apq, so that with G = [[c, s], [-s conj(e),
// c conj(e)]] (in rows p, q and columns p, q of the identity) G^H A G has apq zeroed.
template <typename T, typename R>
__device__ void rotation(R app, R aqq, T apq, R *c, R *s, T *e) {
    const R g = absv(apq);
    const R theta = (aqq - app) / (2 * g);
    const R tt = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(1 + theta * theta));
    *c = 1 / sqrt(1 + tt * tt);
    *s = tt * *c;
    *e = apq / mk<T>(g);
}

// The eigenvalues w (ascending) and eigenvectors v (columns, n x n) of the Hermitian
// a (n x n) read from its lower (lower=1) or upper triangle; a is destroyed. *info 1
// when the sweeps did not converge.
template <typename T> __device__ void eigh(T *a, typename RealOf<T>::type *w, T *v, int *info,
                                           int n, int lower) {
    typedef typename RealOf<T>::type R;
    __shared__ R buf[MAXT];
    __shared__ R rc, rs;
    __shared__ T re_;
    __shared__ int rotated;
    const int t = threadIdx.x, nt = blockDim.x;
    for (int e = t; e < n * n; e += nt) {
        int i = e / n, j = e % n;
        if (i == j) a[e] = mk<T>(re(a[e]));
        else if ((i > j) != (lower != 0)) a[e] = conjg(a[j * n + i]);
        v[e] = mk<T>(i == j ? 1 : 0);
    }
    __syncthreads();
    R part = 0;
    for (int e = t; e < n * n; e += nt) part += abs2(a[e]);
    const R fro = sqrt(block_sum(part, buf));
    const R thresh = Eps<R>::v() * fro;
    int sweep = 0;
    for (; sweep < 60; sweep++) {
        if (t == 0) rotated = 0;
        __syncthreads();
        for (int p = 0; p < n - 1; p++)
            for (int q = p + 1; q < n; q++) {
                const T apq = a[p * n + q];
                if (absv(apq) <= thresh) continue; // every thread reads the same value
                if (t == 0) {
                    rotation(re(a[p * n + p]), re(a[q * n + q]), apq, &rc, &rs, &re_);
                    rotated = 1;
                }
                __syncthreads();
                const R c = rc, s = rs;
                const T ec = conjg(re_), eo = re_;
                for (int i = t; i < n; i += nt) { // columns: A G, V G
                    T x = a[i * n + p], y = a[i * n + q];
                    a[i * n + p] = x * c - y * ec * s;
                    a[i * n + q] = x * s + y * ec * c;
                    x = v[i * n + p], y = v[i * n + q];
                    v[i * n + p] = x * c - y * ec * s;
                    v[i * n + q] = x * s + y * ec * c;
                }
                __syncthreads();
                for (int j = t; j < n; j += nt) { // rows: G^H (A G)
                    T x = a[p * n + j], y = a[q * n + j];
                    a[p * n + j] = x * c - y * eo * s;
                    a[q * n + j] = x * s + y * eo * c;
                }
                __syncthreads();
                if (t == 0) {
                    a[p * n + q] = a[q * n + p] = mk<T>(0);
                    a[p * n + p] = mk<T>(re(a[p * n + p]));
                    a[q * n + q] = mk<T>(re(a[q * n + q]));
                }
                __syncthreads();
            }
        __syncthreads();
        if (!rotated) break;
        __syncthreads();
    }
    if (t == 0) *info = sweep == 60 ? 1 : 0;
    for (int i = t; i < n; i += nt) w[i] = re(a[i * n + i]);
    __syncthreads();
    __shared__ int at;
    for (int i = 0; i < n; i++) { // selection sort, ascending, columns of v along
        if (t == 0) {
            at = i;
            for (int j = i + 1; j < n; j++)
                if (w[j] < w[at]) at = j;
            R x = w[i];
            w[i] = w[at];
            w[at] = x;
        }
        __syncthreads();
        const int j = at;
        if (j != i)
            for (int r = t; r < n; r += nt) {
                T x = v[r * n + i];
                v[r * n + i] = v[r * n + j];
                v[r * n + j] = x;
            }
        __syncthreads();
    }
}

// ------------------------------------------------------------------ one-sided Jacobi SVD

// u (m x mu, m >= n, mu n or m) holds A in its first n columns; on return the left
// singular vectors (every column, completed to an orthonormal set where a singular
// value is zero or past n), s the n singular values descending, vh (n x n) = V^H;
// v (n x n) is scratch. *info 1 when the sweeps did not converge.
template <typename T> __device__ void svd(T *u, typename RealOf<T>::type *s, T *v, T *vh,
                                          int *info, int m, int n, int mu) {
    typedef typename RealOf<T>::type R;
    __shared__ R buf[MAXT];
    __shared__ T cbuf[MAXT];
    __shared__ R rc, rs;
    __shared__ T re_;
    __shared__ int rotated, at;
    const int t = threadIdx.x, nt = blockDim.x;
    for (int e = t; e < n * n; e += nt) v[e] = mk<T>(e / n == e % n ? 1 : 0);
    __syncthreads();
    // Columns count as orthogonal within sqrt(m) roundings (LAPACK's gesvj's tolerance).
    const R eps = Eps<R>::v() * sqrt((R)(m > 1 ? m : 1)) * 2;
    int sweep = 0;
    for (; sweep < 60; sweep++) {
        if (t == 0) rotated = 0;
        __syncthreads();
        for (int p = 0; p < n - 1; p++)
            for (int q = p + 1; q < n; q++) {
                R pa = 0, pb = 0;
                T pg = mk<T>(0);
                for (int i = t; i < m; i += nt) {
                    T x = u[i * mu + p], y = u[i * mu + q];
                    pa += abs2(x);
                    pb += abs2(y);
                    pg = pg + conjg(x) * y;
                }
                const R alpha = block_sum(pa, buf), beta = block_sum(pb, buf);
                const T gamma = block_sum(pg, cbuf);
                const R g = absv(gamma);
                if (!(g > eps * sqrt(alpha * beta)) || g < Eps<R>::tiny()) continue;
                if (t == 0) {
                    rotation(alpha, beta, gamma, &rc, &rs, &re_);
                    rotated = 1;
                }
                __syncthreads();
                const R c = rc, sn = rs;
                const T ec = conjg(re_);
                for (int i = t; i < m; i += nt) {
                    T x = u[i * mu + p], y = u[i * mu + q] * ec;
                    u[i * mu + p] = x * c - y * sn;
                    u[i * mu + q] = x * sn + y * c;
                }
                for (int i = t; i < n; i += nt) {
                    T x = v[i * n + p], y = v[i * n + q] * ec;
                    v[i * n + p] = x * c - y * sn;
                    v[i * n + q] = x * sn + y * c;
                }
                __syncthreads();
            }
        __syncthreads();
        if (!rotated) break;
        __syncthreads();
    }
    if (t == 0) *info = sweep == 60 ? 1 : 0;
    for (int j = 0; j < n; j++) {
        R pa = 0;
        for (int i = t; i < m; i += nt) pa += abs2(u[i * mu + j]);
        const R norm = sqrt(block_sum(pa, buf));
        if (t == 0) s[j] = norm;
    }
    __syncthreads();
    for (int i = 0; i < n; i++) { // selection sort, descending, columns of u and v along
        if (t == 0) {
            at = i;
            for (int j = i + 1; j < n; j++)
                if (s[j] > s[at]) at = j;
            R x = s[i];
            s[i] = s[at];
            s[at] = x;
        }
        __syncthreads();
        const int j = at;
        if (j != i) {
            for (int r = t; r < m; r += nt) {
                T x = u[r * mu + i];
                u[r * mu + i] = u[r * mu + j];
                u[r * mu + j] = x;
            }
            for (int r = t; r < n; r += nt) {
                T x = v[r * n + i];
                v[r * n + i] = v[r * n + j];
                v[r * n + j] = x;
            }
        }
        __syncthreads();
    }
    for (int e = t; e < n * n; e += nt) vh[e] = conjg(v[(e % n) * n + e / n]);
    for (int j = 0; j < n; j++) {
        const R sj = s[j];
        if (sj > 0)
            for (int i = t; i < m; i += nt) u[i * mu + j] = u[i * mu + j] / mk<T>(sj);
    }
    __syncthreads();
    // Columns with no singular vector of their own (a zero singular value, or past n):
    // a unit vector that keeps enough of its length once orthogonalised against the
    // columns kept (twice, for rounding), normalised. Some unit vector keeps at least
    // 1/sqrt(m) of it, so a second round over them all with that bound always ends.
    int cand = 0;
    for (int j = 0; j < mu; j++) {
        if (j < n && s[j] > 0) continue;
        for (int tries = 0; tries < 2 * m; tries++, cand = (cand + 1) % m) {
            const R keep = tries < m ? (R)0.5 : (R)0.9 / sqrt((R)m);
            for (int i = t; i < m; i += nt) u[i * mu + j] = mk<T>(i == cand ? 1 : 0);
            __syncthreads();
            for (int pass = 0; pass < 2; pass++)
                for (int k = 0; k < mu; k++) {
                    if (k == j || (k > j && !(k < n && s[k] > 0))) continue;
                    T pg = mk<T>(0);
                    for (int i = t; i < m; i += nt) pg = pg + conjg(u[i * mu + k]) * u[i * mu + j];
                    const T d = block_sum(pg, cbuf);
                    for (int i = t; i < m; i += nt) u[i * mu + j] = u[i * mu + j] - u[i * mu + k] * d;
                    __syncthreads();
                }
            R pa = 0;
            for (int i = t; i < m; i += nt) pa += abs2(u[i * mu + j]);
            const R norm = sqrt(block_sum(pa, buf));
            if (norm > keep) {
                for (int i = t; i < m; i += nt) u[i * mu + j] = u[i * mu + j] / mk<T>(norm);
                __syncthreads();
                cand = (cand + 1) % m;
                break;
            }
        }
    }
}

// ------------------------------------------------------------------ small systems, batched

// Up to 32 x 32 systems with up to 32 right-hand sides, a group of g threads (a power of
// two >= n, at most 32) per matrix, one thread per row, the augmented [A | B] in shared
// memory: Gauss-Jordan elimination with LAPACK's partial pivoting (the largest |re| +
// |im| of the column, the first of equals), so the pivots, and *info (the first zero
// pivot, 1-based), are those of getrf. b NULL: B is the identity (the inverse).
// Every thread runs every step (n is the stack's), so __syncthreads is safe.
#define SMALL_N 32
#define SMALL_ROW (2 * SMALL_N + 1)
template <typename T, int BLOCK>
__device__ void small_solve(const T *a, const T *b, T *x, int *info, int n, int k, int g,
                            long long batch) {
    typedef typename RealOf<T>::type R;
    __shared__ T s[BLOCK * SMALL_ROW];
    const int t = threadIdx.x, i = t % g;
    const long long z = (long long)blockIdx.x * (blockDim.x / g) + t / g;
    const bool live = z < batch && i < n;
    T *row = s + t * SMALL_ROW, *first = s + (t - i) * SMALL_ROW;
    const int w = n + k;
    if (live) {
        for (int j = 0; j < n; j++) row[j] = a[z * n * n + (long long)i * n + j];
        for (int c = 0; c < k; c++)
            row[n + c] = b ? b[z * n * k + (long long)i * k + c] : mk<T>(i == c ? 1 : 0);
    }
    int bad = 0;
    __syncthreads();
    for (int p = 0; p < n; p++) {
        if (live && i == p) { // the pivot row's thread finds the pivot and swaps the rows
            R best = -1;
            int at = p;
            for (int q = p; q < n; q++) {
                const T v = first[q * SMALL_ROW + p];
                const R m = fabs(re(v)) + fabs(im(v));
                if (m > best) best = m, at = q;
            }
            if (at != p)
                for (int j = 0; j < w; j++) {
                    const T y = row[j];
                    row[j] = first[at * SMALL_ROW + j];
                    first[at * SMALL_ROW + j] = y;
                }
        }
        __syncthreads();
        const T d = first[p * SMALL_ROW + p];
        const bool zero = re(d) == 0 && im(d) == 0; // NaN goes on, as LAPACK's does
        if (zero && bad == 0) bad = p + 1;
        if (live && !zero && i != p) {
            const T f = row[p] / d;
            for (int j = p + 1; j < w; j++) row[j] = row[j] - f * first[p * SMALL_ROW + j];
        }
        __syncthreads();
        if (live && !zero && i == p)
            for (int j = p + 1; j < w; j++) row[j] = row[j] / d;
        __syncthreads();
    }
    if (live)
        for (int c = 0; c < k; c++) x[z * n * k + (long long)i * k + c] = row[n + c];
    if (z < batch && i == 0) info[z] = bad;
}

// ------------------------------------------------------------------ the libraries' layouts
// (linalg/cusolver.c): 32 x 32 tiles through shared memory, a (32, 8) block per tile,
// grid (tiles across * matrices, tiles down), so reads and writes are both coalesced.

#define TILE 32

// out (rows x cols, row-major) = in read column-major (leading dimension ld): out[r][c] =
// in[c * ld + r]; flags 1: conjugated, 2: zeros below the diagonal (R of a QR).
template <typename T>
__device__ void transpose_tiles(const T *in, T *out, int rows, int cols, int ld,
                                long long in_step, long long out_step, int flags) {
    __shared__ T tile[TILE][TILE + 1];
    const int tx = (cols + TILE - 1) / TILE;
    const long long z = blockIdx.x / tx;
    const int r0 = blockIdx.y * TILE, c0 = (blockIdx.x % tx) * TILE, l = threadIdx.x;
    in += z * in_step;
    out += z * out_step;
    for (int q = threadIdx.y; q < TILE; q += blockDim.y)
        if (c0 + q < cols && r0 + l < rows) tile[q][l] = in[(long long)(c0 + q) * ld + r0 + l];
    __syncthreads();
    for (int q = threadIdx.y; q < TILE; q += blockDim.y) {
        const int r = r0 + q, c = c0 + l;
        if (r < rows && c < cols) {
            T v = tile[l][q];
            if (flags & 1) v = conjg(v);
            if ((flags & 2) && c < r) v = mk<T>(0);
            out[(long long)r * cols + c] = v;
        }
    }
}

// In place on a (n x n, row-major), tile pairs taken from the lower one:
//   mode 0: the strict upper triangle = the conjugate transpose of the strict lower one;
//   mode 1: the lower triangle (diagonal too) = the conjugate transpose of the upper one,
//           the strict upper triangle zeroed;
//   mode 2: a = its conjugate transpose.
template <typename T> __device__ void reflect(T *a, int n, int mode) {
    __shared__ T lo[TILE][TILE + 1], up[TILE][TILE + 1];
    const int tx = (n + TILE - 1) / TILE, ti = blockIdx.y, tj = blockIdx.x % tx;
    if (tj > ti) return;
    a += (long long)(blockIdx.x / tx) * n * n;
    const int l = threadIdx.x;
    for (int q = threadIdx.y; q < TILE; q += blockDim.y) {
        int i = ti * TILE + q, j = tj * TILE + l;
        if (i < n && j < n) lo[q][l] = a[(long long)i * n + j];
        i = tj * TILE + q, j = ti * TILE + l;
        if (i < n && j < n) up[q][l] = a[(long long)i * n + j];
    }
    __syncthreads();
    for (int q = threadIdx.y; q < TILE; q += blockDim.y) {
        int i = ti * TILE + q, j = tj * TILE + l; // in the lower tile; its mirror is up[l][q]
        if (i < n && j < n && i >= j && mode != 0) a[(long long)i * n + j] = conjg(up[l][q]);
        i = tj * TILE + q, j = ti * TILE + l; // in the upper tile; its mirror is lo[l][q]
        if (i < n && j < n && i < j)
            a[(long long)i * n + j] = mode == 1 ? mk<T>(0) : conjg(lo[l][q]);
    }
}

// a (n x n) = the identity.
template <typename T> __device__ void eye_tiles(T *a, int n) {
    const int tx = (n + TILE - 1) / TILE;
    a += (long long)(blockIdx.x / tx) * n * n;
    const int j = (blockIdx.x % tx) * TILE + threadIdx.x;
    for (int q = threadIdx.y; q < TILE; q += blockDim.y) {
        const int i = blockIdx.y * TILE + q;
        if (i < n && j < n) a[(long long)i * n + j] = mk<T>(i == j ? 1 : 0);
    }
}

// ------------------------------------------------------------------ the libraries' layouts
// (linalg/cusolver.c): element-wise steps spread over blockIdx.y as well.

__device__ __forceinline__ long long spread_first() {
    return (long long)blockIdx.y * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long spread_step() { return (long long)gridDim.y * blockDim.x; }

// piv (n per matrix) += by: the libraries count rows from 1, cukit from 0.
__device__ void piv_shift(int *piv, int n, int by) {
    for (long long e = spread_first(); e < n; e += spread_step()) piv[e] += by;
}

// The strict upper triangle of a (n x n) zeroed (a Cholesky factor's unused half).
template <typename T> __device__ void zero_upper(T *a, int n) {
    for (long long e = spread_first(); e < (long long)n * n; e += spread_step())
        if (e % n > e / n) a[e] = mk<T>(0);
}

// out[z] = base + z * step: the batched routines' array of matrix addresses.
__device__ void mat_ptrs(unsigned long long base, long long step, unsigned long long *out) {
    if (threadIdx.x == 0 && blockIdx.y == 0)
        out[blockIdx.x] = base + (unsigned long long)((long long)blockIdx.x * step);
}

// One kernel of each per type, named with LAPACK's letters: s float, d double,
// c complex64, z complex128.
#define SOLVER_KERNELS(T, L)                                                               \
    extern "C" __global__ void __launch_bounds__(MAXT)                                     \
        lu_##L(T *a, int *piv, int *info, int n) {                                         \
        const long long z = blockIdx.x;                                                    \
        lu<T>(a + z * n * n, piv + z * n, info + z, n);                                    \
    }                                                                                      \
    extern "C" __global__ void __launch_bounds__(MAXT)                                     \
        lu_solve_##L(const T *a, const int *piv, T *b, int n, int nrhs) {                  \
        const long long z = blockIdx.x;                                                    \
        lu_solve<T>(a + z * n * n, piv + z * n, b + z * n * nrhs, n, nrhs);                \
    }                                                                                      \
    extern "C" __global__ void lu_det_##L(const T *a, const int *piv, T *sign,             \
                                          RealOf<T>::type *logabs, int n) {                \
        const long long z = blockIdx.x;                                                    \
        lu_det<T>(a + z * n * n, piv + z * n, sign + z, logabs + z, n);                    \
    }                                                                                      \
    extern "C" __global__ void __launch_bounds__(MAXT)                                     \
        cholesky_##L(T *a, int *info, int n) {                                             \
        const long long z = blockIdx.x;                                                    \
        cholesky<T>(a + z * n * n, info + z, n);                                           \
    }                                                                                      \
    extern "C" __global__ void __launch_bounds__(MAXT)                                     \
        qr_##L(T *a, T *tau, int m, int n) {                                               \
        const long long z = blockIdx.x;                                                    \
        qr<T>(a + z * m * n, tau + z * (m < n ? m : n), m, n);                             \
    }                                                                                      \
    extern "C" __global__ void __launch_bounds__(MAXT)                                     \
        qr_q_##L(const T *a, const T *tau, T *q, int m, int n, int kq) {                   \
        const long long z = blockIdx.x;                                                    \
        qr_q<T>(a + z * m * n, tau + z * (m < n ? m : n), q + z * m * kq, m, n, kq);       \
    }                                                                                      \
    extern "C" __global__ void qr_r_##L(const T *a, T *r, int m, int n, int rows) {        \
        const long long z = blockIdx.x;                                                    \
        qr_r<T>(a + z * m * n, r + z * rows * n, m, n, rows);                              \
    }                                                                                      \
    extern "C" __global__ void __launch_bounds__(MAXT)                                     \
        eigh_##L(T *a, RealOf<T>::type *w, T *v, int *info, int n, int lower) {            \
        const long long z = blockIdx.x;                                                    \
        eigh<T>(a + z * n * n, w + z * n, v + z * n * n, info + z, n, lower);              \
    }                                                                                      \
    extern "C" __global__ void __launch_bounds__(MAXT)                                     \
        svd_##L(T *u, RealOf<T>::type *s, T *v, T *vh, int *info, int m, int n, int mu) {  \
        const long long z = blockIdx.x;                                                    \
        svd<T>(u + z * m * mu, s + z * n, v + z * n * n, vh + z * n * n, info + z, m, n,   \
               mu);                                                                        \
    }                                                                                      \
    extern "C" __global__ void zero_upper_##L(T *a, int n) {                               \
        zero_upper<T>(a + (long long)blockIdx.x * n * n, n);                               \
    }                                                                                      \
    extern "C" __global__ void mat_ptrs_##L(unsigned long long base, long long step,       \
                                            unsigned long long *out) {                     \
        mat_ptrs(base, step, out);                                                         \
    }                                                                                      \
    extern "C" __global__ void piv_shift_##L(int *piv, int n, int by) {                    \
        piv_shift(piv + (long long)blockIdx.x * n, n, by);                                 \
    }                                                                                      \
    extern "C" __global__ void __launch_bounds__(SMALL_BLOCK_##L)                          \
        small_solve_##L(const T *a, const T *b, T *x, int *info, int n, int k, int g,      \
                        long long batch) {                                                 \
        small_solve<T, SMALL_BLOCK_##L>(a, b, x, info, n, k, g, batch);                    \
    }                                                                                      \
    extern "C" __global__ void transpose_tiles_##L(const T *in, T *out, int rows, int cols, \
                                                   int ld, long long in_step,              \
                                                   long long out_step, int flags) {        \
        transpose_tiles<T>(in, out, rows, cols, ld, in_step, out_step, flags);             \
    }                                                                                      \
    extern "C" __global__ void reflect_##L(T *a, int n, int mode) { reflect<T>(a, n, mode); } \
    extern "C" __global__ void eye_tiles_##L(T *a, int n) { eye_tiles<T>(a, n); }

// small_solve's block per type: BLOCK * SMALL_ROW elements of shared memory, 33 KB each
// (linalg/cusolver.c's small_block() says the same).
#define SMALL_BLOCK_s 128
#define SMALL_BLOCK_d 64
#define SMALL_BLOCK_c 64
#define SMALL_BLOCK_z 32

SOLVER_KERNELS(float, s)
SOLVER_KERNELS(double, d)
SOLVER_KERNELS(Cx<float>, c)
SOLVER_KERNELS(Cx<double>, z)
