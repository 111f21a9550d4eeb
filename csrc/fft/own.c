/* own.c - cukit's own FFT: lengths factored into Stockham stages, Bluestein's algorithm for large prime factors */
#include "fft/cufft.h"

#include <stdio.h>
#include <string.h>

#define THREADS 256
#define MAX_BLOCKS (1 << 20) /* the kernels loop over the rest */

/* ------------------------------------------------------------------ launches */

int
cukit_fft_own_launch(cukit_state *st, cukit_Device *dev, const char *name, int tc, long long total,
               CUstream h, void **args)
{
    char kernel[64], defines[32];
    int single = tc == CUKIT_TC_C64 || tc == CUKIT_TC_F32;
    snprintf(kernel, sizeof kernel, "fft_%s_%c", name, single ? 'f' : 'd');
    snprintf(defines, sizeof defines, "#define MAXR %d\n", FFT_MAXR);
    CUfunction func;
    if (cukit_builtin_kernel_file(dev, &st->fft->modules, defines, "fft/kernels/fft.cu", kernel,
                                  &func) < 0)
        return -1;
    if (total <= 0)
        return 0;
    long long blocks = (total + THREADS - 1) / THREADS;
    if (blocks > MAX_BLOCKS)
        blocks = MAX_BLOCKS;
    return cukit_builtin_launch(dev, func, (unsigned)blocks, 1, THREADS, 1, h, args);
}

/* ------------------------------------------------------------------ plans */

/* The radices of n in *f (4s first, then 2, then the odd primes rising), or 0 when a
 * prime factor is past FFT_MAXR (Bluestein's case). */
static int
factor(long long n, int *f)
{
    int k = 0;
    while (n % 4 == 0)
        f[k++] = 4, n /= 4;
    if (n % 2 == 0)
        f[k++] = 2, n /= 2;
    for (long long p = 3; n > 1; p += 2) {
        if (p > FFT_MAXR)
            return 0;
        while (n % p == 0)
            f[k++] = (int)p, n /= p;
    }
    return k;
}

void
cukit_fft_own_plan(fft_plan *p, long long n)
{
    p->library = FFT_OWN;
    p->n = n;
    p->nf = n > 1 ? factor(n, p->radix) : 0;
    p->m = 0;
    if (n > 1 && p->nf == 0) {
        long long m = 1;
        while (m < 2 * n - 1)
            m *= 2;
        p->m = m;
        p->mf = factor(m, p->mradix);
    }
}

/* ------------------------------------------------------------------ the stages */

/* dst = the length-n transform of src over `radix` (nf stages), through tmp (distinct
 * from both; unused for one stage); src is not written. */
static int
stockham(cukit_state *st, cukit_Device *dev, int tc, const int *radix, int nf, long long n,
         CUdeviceptr src, CUdeviceptr dst, CUdeviceptr tmp, long long outer, long long inner,
         int sign, double scale, CUstream h)
{
    CUdeviceptr in = src;
    long long ns = 1;
    for (int i = 0; i < nf; i++) {
        CUdeviceptr out = (nf - 1 - i) % 2 == 0 ? dst : tmp;
        long long total = outer * inner * (n / radix[i]);
        int r = radix[i], sg = sign;
        double sc = i == nf - 1 ? scale : 1.0;
        void *args[] = {&in, &out, &n, &inner, &total, &r, &ns, &sg, &sc};
        if (cukit_fft_own_launch(st, dev, "stage", tc, total, h, args) < 0)
            return -1;
        ns *= r;
        in = out;
    }
    return 0;
}

/* A scratch array of `count` elements of typecode tc. New ref or NULL. */
static cukit_Array *
scratch(cukit_state *st, cukit_Device *dev, int tc, long long count)
{
    Py_ssize_t shape[1] = {(Py_ssize_t)count};
    return ck_empty(st, dev, tc, 1, shape);
}

/* The transformed chirp of Bluestein's convolution for direction `sign`, made at
 * first use and kept on the plan. */
static cukit_Array *
bluestein_chirp(cukit_state *st, fft_plan *p, int tc, int sign, CUstream h)
{
    int which = sign < 0 ? 0 : 1;
    if (p->bhat[which])
        return p->bhat[which];
    cukit_Device *dev = p->dev;
    cukit_Array *b = scratch(st, dev, tc, p->m), *tmp = scratch(st, dev, tc, p->m);
    cukit_Array *bhat = b && tmp ? scratch(st, dev, tc, p->m) : NULL;
    if (bhat == NULL)
        goto error;
    CUdeviceptr bp = cukit_array_ptr(b);
    long long n = p->n, m = p->m;
    int sg = sign;
    void *args[] = {&bp, &n, &m, &sg};
    if (cukit_fft_own_launch(st, dev, "blu_chirp", tc, m, h, args) < 0 ||
        stockham(st, dev, tc, p->mradix, p->mf, m, bp, cukit_array_ptr(bhat),
                 cukit_array_ptr(tmp), 1, 1, -1, 1.0, h) < 0)
        goto error;
    /* Made on this stream, used on any: wait once (not while a capture is recording). */
    if (st->runtime->captures == 0)
        CU_CALL_NOGIL(st, cuStreamSynchronize, (h));
    Py_DECREF(b);
    Py_DECREF(tmp);
    p->bhat[which] = bhat;
    return bhat;
error:
    Py_XDECREF(b);
    Py_XDECREF(tmp);
    Py_XDECREF(bhat);
    return NULL;
}

int
cukit_fft_own_c2c(cukit_state *st, fft_plan *p, int tc, CUdeviceptr src, CUdeviceptr dst,
            long long outer, long long inner, int sign, double scale, CUstream h)
{
    cukit_Device *dev = p->dev;
    long long n = p->n, total = outer * n * inner;
    if (total == 0)
        return 0;
    if (n == 1) {
        void *args[] = {&src, &dst, &total, &scale};
        return cukit_fft_own_launch(st, dev, "scale", tc, total, h, args);
    }
    int rc = -1;
    cukit_Array *w1 = NULL, *w2 = NULL, *w3 = NULL;
    if (p->m == 0) {
        if ((w1 = p->nf > 1 ? scratch(st, dev, tc, total) : NULL) == NULL && p->nf > 1)
            return -1;
        rc = stockham(st, dev, tc, p->radix, p->nf, n, src, dst, w1 ? cukit_array_ptr(w1) : 0,
                      outer, inner, sign, scale, h);
        Py_XDECREF(w1);
        return rc;
    }
    long long m = p->m, mt = outer * m * inner;
    cukit_Array *bhat = bluestein_chirp(st, p, tc, sign, h);
    if (bhat == NULL || (w1 = scratch(st, dev, tc, mt)) == NULL ||
        (w2 = scratch(st, dev, tc, mt)) == NULL || (w3 = scratch(st, dev, tc, mt)) == NULL)
        goto done;
    CUdeviceptr a = cukit_array_ptr(w1), b = cukit_array_ptr(w2), c = cukit_array_ptr(w3);
    CUdeviceptr bh = cukit_array_ptr(bhat);
    int sg = sign;
    double post = scale / (double)m;
    void *pre_args[] = {&src, &a, &n, &m, &inner, &mt, &sg};
    void *mul_args[] = {&b, &bh, &m, &inner, &mt};
    void *post_args[] = {&a, &dst, &n, &m, &inner, &total, &sg, &post};
    if (cukit_fft_own_launch(st, dev, "blu_pre", tc, mt, h, pre_args) < 0 ||
        stockham(st, dev, tc, p->mradix, p->mf, m, a, b, c, outer, inner, -1, 1.0, h) < 0 ||
        cukit_fft_own_launch(st, dev, "blu_mul", tc, mt, h, mul_args) < 0 ||
        stockham(st, dev, tc, p->mradix, p->mf, m, b, a, c, outer, inner, 1, 1.0, h) < 0 ||
        cukit_fft_own_launch(st, dev, "blu_post", tc, total, h, post_args) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(w1);
    Py_XDECREF(w2);
    Py_XDECREF(w3);
    return rc;
}
