/* cuda_abi_textures.h - the CUDA driver ABI of CUDA arrays, texture objects and surface objects (part of cuda_abi.h) */
#ifndef CUKIT_CUDA_ABI_TEXTURES_H
#define CUKIT_CUDA_ABI_TEXTURES_H

/* Included by cuda_abi.h after CUarray and CUdeviceptr. Values and layouts follow
 * the CUDA 13.0 cuda.h (the _v1/_v2 structs its unversioned names stand for);
 * memory/texture.c asserts the sizes. */

typedef unsigned long long CUtexObject;  /* CUtexObject_v1 */
typedef unsigned long long CUsurfObject; /* CUsurfObject_v1 */
typedef struct CUmipmappedArray_st *CUmipmappedArray;
typedef int CUarray_format, CUaddress_mode, CUfilter_mode, CUresourcetype; /* enums: int-sized */
/* CUarray_format: the element formats cukit makes CUDA arrays of */
enum {
    CU_AD_FORMAT_UNSIGNED_INT8 = 0x01, CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
    CU_AD_FORMAT_UNSIGNED_INT32 = 0x03, CU_AD_FORMAT_SIGNED_INT8 = 0x08,
    CU_AD_FORMAT_SIGNED_INT16 = 0x09, CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
    CU_AD_FORMAT_HALF = 0x10, CU_AD_FORMAT_FLOAT = 0x20,
};
enum { CUDA_ARRAY3D_LAYERED = 0x01, CUDA_ARRAY3D_SURFACE_LDST = 0x02 };
enum {
    CU_TR_ADDRESS_MODE_WRAP = 0, CU_TR_ADDRESS_MODE_CLAMP = 1,
    CU_TR_ADDRESS_MODE_MIRROR = 2, CU_TR_ADDRESS_MODE_BORDER = 3,
};
enum { CU_TR_FILTER_MODE_POINT = 0, CU_TR_FILTER_MODE_LINEAR = 1 };
enum {
    CU_RESOURCE_TYPE_ARRAY = 0x00, CU_RESOURCE_TYPE_MIPMAPPED_ARRAY = 0x01,
    CU_RESOURCE_TYPE_LINEAR = 0x02, CU_RESOURCE_TYPE_PITCH2D = 0x03,
};
/* CUDA_TEXTURE_DESC.flags */
enum { CU_TRSF_READ_AS_INTEGER = 0x01, CU_TRSF_NORMALIZED_COORDINATES = 0x02 };
enum { CU_MEMORYTYPE_ARRAY = 3 };
enum { CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT = 14, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT = 51 };

/* CUDA_ARRAY3D_DESCRIPTOR_v2 (40 bytes) */
typedef struct {
    size_t Width, Height, Depth;
    CUarray_format Format;
    unsigned int NumChannels;
    unsigned int Flags; /* CUDA_ARRAY3D_* */
} CUDA_ARRAY3D_DESCRIPTOR;

/* CUDA_RESOURCE_DESC_v1 (144 bytes) */
typedef struct {
    CUresourcetype resType;
    union {
        struct { CUarray hArray; } array;
        struct { CUmipmappedArray hMipmappedArray; } mipmap;
        struct { CUdeviceptr devPtr; CUarray_format format; unsigned int numChannels;
                 size_t sizeInBytes; } linear;
        struct { CUdeviceptr devPtr; CUarray_format format; unsigned int numChannels;
                 size_t width, height, pitchInBytes; } pitch2D;
        struct { int reserved[32]; } reserved;
    } res;
    unsigned int flags; /* must be 0 */
} CUDA_RESOURCE_DESC;

/* CUDA_TEXTURE_DESC_v1 (104 bytes) */
typedef struct {
    CUaddress_mode addressMode[3];
    CUfilter_mode filterMode;
    unsigned int flags; /* CU_TRSF_* */
    unsigned int maxAnisotropy;
    CUfilter_mode mipmapFilterMode;
    float mipmapLevelBias, minMipmapLevelClamp, maxMipmapLevelClamp;
    float borderColor[4];
    int reserved[12];
} CUDA_TEXTURE_DESC;

/* CUDA_RESOURCE_VIEW_DESC_v1 (112 bytes) */
typedef struct {
    int format; /* CUresourceViewFormat; 0 is CU_RES_VIEW_FORMAT_NONE */
    size_t width, height, depth;
    unsigned int firstMipmapLevel, lastMipmapLevel, firstLayer, lastLayer;
    unsigned int reserved[16];
} CUDA_RESOURCE_VIEW_DESC;

#endif /* CUKIT_CUDA_ABI_TEXTURES_H */
