/* ctypes.c - the one table of C type names: what each means as a kernel parameter (kind,
 * size, alignment) and as an element type (typecode), for the signature reader and for
 * the CuPy-style parameter lists of ElementwiseKernel and ReductionKernel
 *
 * Plain `char` is a 1-byte integer, int8 as an element type: as a scalar parameter it
 * packs one byte, and in an ElementwiseKernel/ReductionKernel list ("char x") it is an
 * int8 operand, as `signed char` is (numpy's and CuPy's int8; nvcc's char is signed on
 * x86-64, the one ABI cukit's sizes assume, see `long`). A `char*` (and `void*`) kernel
 * parameter is the byte-buffer idiom, so it takes an array of any dtype (bytes_pointee). */
#include "declarations/declarations.h"

#include <string.h>

static const cukit_ctype c_types[] = {
    {"bool", CUKIT_P_BOOL, 1, CUKIT_TC_BOOL, 0, 0},
    {"char", CUKIT_P_INT, 1, CUKIT_TC_I8, 0, 1},
    {"signed char", CUKIT_P_INT, 1, CUKIT_TC_I8, 0, 0},
    {"unsigned char", CUKIT_P_UINT, 1, CUKIT_TC_U8, 0, 0},
    {"short", CUKIT_P_INT, 2, CUKIT_TC_I16, 0, 0},
    {"unsigned short", CUKIT_P_UINT, 2, CUKIT_TC_U16, 0, 0},
    {"int", CUKIT_P_INT, 4, CUKIT_TC_I32, 0, 0},
    {"unsigned int", CUKIT_P_UINT, 4, CUKIT_TC_U32, 0, 0},
    {"long", CUKIT_P_INT, 8, CUKIT_TC_I64, 0, 0}, /* LP64: Linux */
    {"unsigned long", CUKIT_P_UINT, 8, CUKIT_TC_U64, 0, 0},
    {"long long", CUKIT_P_INT, 8, CUKIT_TC_I64, 0, 0},
    {"unsigned long long", CUKIT_P_UINT, 8, CUKIT_TC_U64, 0, 0},
    {"int8_t", CUKIT_P_INT, 1, CUKIT_TC_I8, 0, 0},
    {"uint8_t", CUKIT_P_UINT, 1, CUKIT_TC_U8, 0, 0},
    {"int16_t", CUKIT_P_INT, 2, CUKIT_TC_I16, 0, 0},
    {"uint16_t", CUKIT_P_UINT, 2, CUKIT_TC_U16, 0, 0},
    {"int32_t", CUKIT_P_INT, 4, CUKIT_TC_I32, 0, 0},
    {"uint32_t", CUKIT_P_UINT, 4, CUKIT_TC_U32, 0, 0},
    {"int64_t", CUKIT_P_INT, 8, CUKIT_TC_I64, 0, 0},
    {"uint64_t", CUKIT_P_UINT, 8, CUKIT_TC_U64, 0, 0},
    {"size_t", CUKIT_P_UINT, 8, CUKIT_TC_U64, 0, 0},
    {"ssize_t", CUKIT_P_INT, 8, CUKIT_TC_I64, 0, 0},
    {"ptrdiff_t", CUKIT_P_INT, 8, CUKIT_TC_I64, 0, 0},
    {"intptr_t", CUKIT_P_INT, 8, CUKIT_TC_I64, 0, 0},
    {"uintptr_t", CUKIT_P_UINT, 8, CUKIT_TC_U64, 0, 0},
    {"float", CUKIT_P_FLOAT, 4, CUKIT_TC_F32, 0, 0},
    {"double", CUKIT_P_FLOAT, 8, CUKIT_TC_F64, 0, 0},
    {"half", CUKIT_P_HALF, 2, CUKIT_TC_F16, 0, 0},
    {"__half", CUKIT_P_HALF, 2, CUKIT_TC_F16, 0, 0},
    {"__nv_bfloat16", CUKIT_P_BF16, 2, CUKIT_TC_BF16, 0, 0},
    {"nv_bfloat16", CUKIT_P_BF16, 2, CUKIT_TC_BF16, 0, 0},
    /* cuda_fp8.h's: pointers to them take ml_dtypes' float8 arrays; by value, a byte */
    {"__nv_fp8_e4m3", CUKIT_P_STRUCT, 1, CUKIT_TC_F8E4M3, 0, 0},
    {"__nv_fp8_e5m2", CUKIT_P_STRUCT, 1, CUKIT_TC_F8E5M2, 0, 0},
    {"float2", CUKIT_P_STRUCT, 8, CUKIT_TC_C64, 0, 0},
    {"cuFloatComplex", CUKIT_P_STRUCT, 8, CUKIT_TC_C64, 0, 0},
    {"cuComplex", CUKIT_P_STRUCT, 8, CUKIT_TC_C64, 0, 0},
    {"double2", CUKIT_P_STRUCT, 16, CUKIT_TC_C128, 16, 0},
    {"cuDoubleComplex", CUKIT_P_STRUCT, 16, CUKIT_TC_C128, 16, 0},
    {"pycuda::complex<float>", CUKIT_P_STRUCT, 8, CUKIT_TC_C64, 0, 0},
    {"pycuda::complex<double>", CUKIT_P_STRUCT, 16, CUKIT_TC_C128, 16, 0},
    {"cuda::std::complex<float>", CUKIT_P_STRUCT, 8, CUKIT_TC_C64, 0, 0},
    {"cuda::std::complex<double>", CUKIT_P_STRUCT, 16, CUKIT_TC_C128, 16, 0},
    /* nvcc's host C library names them; cukit declares them the same way */
    {"uchar", CUKIT_P_UINT, 1, CUKIT_TC_U8, 0, 0},
    {"ushort", CUKIT_P_UINT, 2, CUKIT_TC_U16, 0, 0},
    {"uint", CUKIT_P_UINT, 4, CUKIT_TC_U32, 0, 0},
    {"ulong", CUKIT_P_UINT, 8, CUKIT_TC_U64, 0, 0},
    {"void", CUKIT_P_STRUCT, 0, CUKIT_TC_ANY, 0, 1},
    {"cudaTextureObject_t", CUKIT_P_TEXTURE, 8, CUKIT_TC_U64, 0, 0},
    {"CUtexObject", CUKIT_P_TEXTURE, 8, CUKIT_TC_U64, 0, 0},
    {"cudaSurfaceObject_t", CUKIT_P_SURFACE, 8, CUKIT_TC_U64, 0, 0},
    {"CUsurfObject", CUKIT_P_SURFACE, 8, CUKIT_TC_U64, 0, 0},
};

const cukit_ctype *
cukit_ctype_find(const char *name)
{
    for (size_t i = 0; i < sizeof c_types / sizeof *c_types; i++)
        if (strcmp(c_types[i].name, name) == 0)
            return &c_types[i];
    return NULL;
}

int
cukit_ctype_is_int_word(const char *w, size_t n)
{
    static const char *words[] = {"signed", "unsigned", "short", "long", "int", "char"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i]) == n && memcmp(words[i], w, n) == 0)
            return 1;
    return 0;
}

const char *
cukit_ctype_canonical_int(const char *const *words, int n, char *out, size_t cap)
{
    int is_unsigned = 0, is_signed = 0, longs = 0, is_short = 0, is_char = 0;
    for (int i = 0; i < n; i++) {
        const char *w = words[i];
        is_unsigned |= strcmp(w, "unsigned") == 0;
        is_signed |= strcmp(w, "signed") == 0;
        longs += strcmp(w, "long") == 0;
        is_short |= strcmp(w, "short") == 0;
        is_char |= strcmp(w, "char") == 0;
    }
    const char *base = is_char ? "char" : is_short ? "short" : longs >= 2 ? "long long"
                                                     : longs ? "long" : "int";
    const char *sign = is_unsigned ? "unsigned " : (is_signed && is_char) ? "signed " : "";
    PyOS_snprintf(out, cap, "%s%s", sign, base);
    return out;
}

const cukit_ctype *
cukit_ctype_named(const char *spelled)
{
    char copy[64], canonical[32];
    const char *words[8];
    int n = 0;
    if (strlen(spelled) >= sizeof copy)
        return cukit_ctype_find(spelled);
    strcpy(copy, spelled);
    int all_int = 1;
    for (char *save = NULL, *w = strtok_r(copy, " \t\n", &save); w;
         w = strtok_r(NULL, " \t\n", &save)) {
        if (n == (int)(sizeof words / sizeof *words))
            return NULL;
        all_int &= cukit_ctype_is_int_word(w, strlen(w));
        words[n++] = w;
    }
    if (n == 0 || !all_int)
        return cukit_ctype_find(spelled);
    return cukit_ctype_find(cukit_ctype_canonical_int(words, n, canonical, sizeof canonical));
}
