/* arrays.c - the emulator's entry points for CUDA arrays and texture and surface objects
 * (kept, and read by the tex, suld and sust instructions, in texture.c) */
#include "emulator/driver/entries.h"
#include "emulator/exec/texture.h"

#include <stdlib.h>
#include <string.h>

static size_t
format_size(int format)
{
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
    }
}

static CUresult
e_cuArray3DCreate(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    size_t fs = format_size(d->Format);
    if (fs == 0 || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4) || d->Width == 0)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "a CUDA array needs a width, a known format "
                          "and 1, 2 or 4 channels");
    struct CUarray_st *a = calloc(1, sizeof *a);
    if (a == NULL)
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    a->magic = MAGIC_ARRAY;
    a->format = d->Format;
    a->channels = (int)d->NumChannels;
    a->layered = (d->Flags & CUDA_ARRAY3D_LAYERED) != 0;
    a->surface = (d->Flags & CUDA_ARRAY3D_SURFACE_LDST) != 0;
    a->elem = fs * d->NumChannels;
    a->width = d->Width;
    a->rows = d->Height ? d->Height : 1;
    a->slices = d->Depth ? d->Depth : 1;
    a->row_bytes = a->width * a->elem;
    a->data = calloc(a->slices * a->rows, a->row_bytes);
    if (a->data == NULL || emu_texobj_add(a) < 0) {
        free(a->data);
        free(a);
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory for a CUDA array");
    }
    *out = a;
    return emu_ok();
}

static CUresult
e_cuArrayDestroy(CUarray a)
{
    emu_sync_all(); /* deferred work that reads or writes it runs first */
    if (a == NULL || !emu_texobj_remove(a, MAGIC_ARRAY))
        return emu_failed(CUDA_ERROR_INVALID_HANDLE, "not a live CUDA array");
    free(a->data);
    free(a);
    return emu_ok();
}

/* The resource of a texture or surface into o. CUDA_SUCCESS or an error. */
static CUresult
resource(texobj *o, const CUDA_RESOURCE_DESC *r, int surface)
{
    o->restype = r->resType;
    if (r->resType == CU_RESOURCE_TYPE_ARRAY) {
        struct CUarray_st *a = r->res.array.hArray;
        if (!emu_texobj_alive(a, MAGIC_ARRAY))
            return emu_failed(CUDA_ERROR_INVALID_HANDLE, "the resource is not a live CUDA array");
        if (surface && !a->surface)
            return emu_failed(CUDA_ERROR_INVALID_VALUE, "a surface needs a CUDA array made for "
                              "surface loads and stores");
        o->array = a;
        o->format = a->format;
        o->channels = a->channels;
        o->width = a->width, o->rows = a->rows, o->slices = a->slices;
        o->row_bytes = a->row_bytes, o->elem = a->elem;
        return CUDA_SUCCESS;
    }
    if (surface)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "a surface needs a CUDA array");
    if (r->resType == CU_RESOURCE_TYPE_LINEAR) {
        o->ptr = r->res.linear.devPtr;
        o->format = r->res.linear.format;
        o->channels = (int)r->res.linear.numChannels;
        o->elem = format_size(o->format) * (size_t)o->channels;
        o->width = o->elem ? r->res.linear.sizeInBytes / o->elem : 0;
        o->rows = o->slices = 1;
        o->row_bytes = o->width * o->elem;
    }
    else if (r->resType == CU_RESOURCE_TYPE_PITCH2D) {
        o->ptr = r->res.pitch2D.devPtr;
        o->format = r->res.pitch2D.format;
        o->channels = (int)r->res.pitch2D.numChannels;
        o->elem = format_size(o->format) * (size_t)o->channels;
        o->width = r->res.pitch2D.width, o->rows = r->res.pitch2D.height, o->slices = 1;
        o->row_bytes = r->res.pitch2D.pitchInBytes;
    }
    else
        return emu_failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator has no mipmapped arrays");
    if (o->elem == 0 || o->width == 0)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "the texture's memory holds no element");
    return CUDA_SUCCESS;
}

static CUresult
make_object(unsigned long long *out, const CUDA_RESOURCE_DESC *r, const CUDA_TEXTURE_DESC *td, int surface)
{
    texobj *o = calloc(1, sizeof *o);
    if (o == NULL)
        return emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    o->magic = surface ? MAGIC_SURF : MAGIC_TEX;
    CUresult rc = resource(o, r, surface);
    if (rc == CUDA_SUCCESS && td) {
        for (int k = 0; k < 3; k++)
            o->address[k] = td->addressMode[k];
        o->filter = td->filterMode;
        o->flags = (int)td->flags;
        memcpy(o->border, td->borderColor, sizeof o->border);
    }
    if (rc == CUDA_SUCCESS && emu_texobj_add(o) < 0)
        rc = emu_failed(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (rc != CUDA_SUCCESS) {
        free(o);
        return rc;
    }
    *out = (uint64_t)(uintptr_t)o;
    return emu_ok();
}

static CUresult
e_cuTexObjectCreate(CUtexObject *t, const CUDA_RESOURCE_DESC *r, const CUDA_TEXTURE_DESC *d,
                    const CUDA_RESOURCE_VIEW_DESC *v)
{
    if (v && v->format != 0)
        return emu_failed(CUDA_ERROR_NOT_SUPPORTED, "the emulator has no resource views");
    return make_object(t, r, d, 0);
}

static CUresult
destroy(uint64_t h, int magic)
{
    emu_sync_all(); /* deferred launches that use it run first */
    if (h == 0 || !emu_texobj_remove((void *)(uintptr_t)h, magic))
        return emu_failed(CUDA_ERROR_INVALID_HANDLE, "not a live %s object",
                          magic == MAGIC_TEX ? "texture" : "surface");
    free((void *)(uintptr_t)h);
    return emu_ok();
}

static CUresult e_cuTexObjectDestroy(CUtexObject t) { return destroy(t, MAGIC_TEX); }
static CUresult e_cuSurfObjectCreate(CUsurfObject *s, const CUDA_RESOURCE_DESC *r) { return make_object(s, r, NULL, 1); }
static CUresult e_cuSurfObjectDestroy(CUsurfObject s) { return destroy(s, MAGIC_SURF); }

void
emu_fill_textures(cukit_api_t *api)
{
#define E(name) api->name = e_##name;
    E(cuArray3DCreate) E(cuArrayDestroy) E(cuTexObjectCreate) E(cuTexObjectDestroy)
    E(cuSurfObjectCreate) E(cuSurfObjectDestroy)
#undef E
}
