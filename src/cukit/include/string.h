// string.h - cukit's stand-in for NVRTC, which has no C library headers.
//
// NVRTC declares memcpy and memset itself; this adds device versions of the few
// other functions kernels use on bytes and NUL-terminated strings.
#ifndef CUKIT_STANDIN_STRING_H
#define CUKIT_STANDIN_STRING_H

// C++ linkage, as the C library's headers give it to their C++ parts: a source
// wrapped in extern "C" { } (PyCUDA's SourceModule) may include this.
extern "C++" {

#include <stddef.h>

static __device__ __forceinline__ int memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
    for (size_t i = 0; i < n; i++)
        if (p[i] != q[i])
            return p[i] < q[i] ? -1 : 1;
    return 0;
}

static __device__ __forceinline__ void *memmove(void *dst, const void *src, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    if (d < s)
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    else
        for (size_t i = n; i > 0; i--)
            d[i - 1] = s[i - 1];
    return dst;
}

static __device__ __forceinline__ size_t strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

static __device__ __forceinline__ int strncmp(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (x != y)
            return x < y ? -1 : 1;
        if (x == 0)
            break;
    }
    return 0;
}

static __device__ __forceinline__ int strcmp(const char *a, const char *b)
{
    return strncmp(a, b, (size_t)-1);
}

static __device__ __forceinline__ char *strcpy(char *dst, const char *src)
{
    size_t i = 0;
    for (; src[i]; i++)
        dst[i] = src[i];
    dst[i] = 0;
    return dst;
}

} // extern "C++"

#endif
