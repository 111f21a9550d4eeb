/* texture.c - the emulator's live CUDA arrays and texture and surface objects, and the
 * tex, suld and sust instructions that read and write them (made by arrays.c) */
#include "emulator/exec/exec.h"
#include "emulator/exec/texture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ the live objects */

static pthread_rwlock_t objs_lock = PTHREAD_RWLOCK_INITIALIZER;
static void **objs;            /* owned list of live objects (each owned too) */
static size_t nobjs, capobjs;

int
emu_texobj_add(void *o)
{
    pthread_rwlock_wrlock(&objs_lock);
    int rc = 0;
    if (nobjs == capobjs) {
        size_t cap = capobjs ? capobjs * 2 : 64;
        void **v = realloc(objs, cap * sizeof *v);
        if (v == NULL)
            rc = -1;
        else {
            objs = v;
            capobjs = cap;
        }
    }
    if (rc == 0)
        objs[nobjs++] = o;
    pthread_rwlock_unlock(&objs_lock);
    return rc;
}

int
emu_texobj_remove(const void *o, int magic)
{
    pthread_rwlock_wrlock(&objs_lock);
    int found = 0;
    for (size_t i = 0; i < nobjs && !found; i++) {
        if (objs[i] == o && *(const int *)o == magic) {
            objs[i] = objs[--nobjs];
            found = 1;
        }
    }
    pthread_rwlock_unlock(&objs_lock);
    return found;
}

/* Callers hold objs_lock (read). */
static void *
objs_find(uint64_t handle, int magic)
{
    for (size_t i = 0; i < nobjs; i++)
        if ((uint64_t)(uintptr_t)objs[i] == handle && *(const int *)objs[i] == magic)
            return objs[i];
    return NULL;
}

int
emu_texobj_alive(const void *o, int magic)
{
    pthread_rwlock_rdlock(&objs_lock);
    int live = o && objs_find((uint64_t)(uintptr_t)o, magic) != NULL;
    pthread_rwlock_unlock(&objs_lock);
    return live;
}

int
emu_array_span(CUarray h, unsigned char **data, size_t *pitch, size_t *rows, size_t *bytes)
{
    pthread_rwlock_rdlock(&objs_lock);
    struct CUarray_st *a = objs_find((uint64_t)(uintptr_t)h, MAGIC_ARRAY);
    if (a) {
        *data = a->data;
        *pitch = a->row_bytes;
        *rows = a->rows;
        *bytes = a->row_bytes * a->rows * a->slices;
    }
    pthread_rwlock_unlock(&objs_lock);
    return a != NULL;
}

/* ------------------------------------------------------------------ reading texels */

/* The bytes of texel (x, y, z) of o, checked; NULL after recording a fault. */
static const unsigned char *
texel(block *b, warp *w, int lane, const texobj *o, size_t x, size_t y, size_t z)
{
    size_t off = (z * o->rows + y) * o->row_bytes + x * o->elem;
    if (o->array)
        return o->array->data + off;
    return emu_resolve(b, w, lane, SP_GLOBAL, o->ptr + off, (unsigned)o->elem, 0);
}

/* Channel k of a texel as the texture returns it: an integer (bits) when the texture
 * reads integers as such, else a float (normalized for 8- and 16-bit integers). */
static uint32_t
channel(const texobj *o, const unsigned char *t, int k, int as_int)
{
    size_t fs = o->elem / (size_t)o->channels;
    const unsigned char *q = t + fs * (size_t)k;
    int64_t v;
    switch (o->format) {
    case CU_AD_FORMAT_FLOAT: { uint32_t u; memcpy(&u, q, 4); return u; }
    case CU_AD_FORMAT_HALF: { uint16_t h; memcpy(&h, q, 2); return (uint32_t)UF(emu_f16_to_f32(h)); }
    case CU_AD_FORMAT_UNSIGNED_INT8: v = *q; break;
    case CU_AD_FORMAT_SIGNED_INT8: v = *(const int8_t *)q; break;
    case CU_AD_FORMAT_UNSIGNED_INT16: { uint16_t u; memcpy(&u, q, 2); v = u; break; }
    case CU_AD_FORMAT_SIGNED_INT16: { int16_t s; memcpy(&s, q, 2); v = s; break; }
    case CU_AD_FORMAT_UNSIGNED_INT32: { uint32_t u; memcpy(&u, q, 4); v = u; break; }
    default: { int32_t s; memcpy(&s, q, 4); v = s; break; }
    }
    if (as_int)
        return (uint32_t)v;
    int sgned = o->format == CU_AD_FORMAT_SIGNED_INT8 || o->format == CU_AD_FORMAT_SIGNED_INT16 ||
                o->format == CU_AD_FORMAT_SIGNED_INT32;
    double scale = sgned ? (double)((1ull << (fs * 8 - 1)) - 1) : (double)((1ull << (fs * 8)) - 1);
    float f = (float)((double)v / scale);
    return (uint32_t)UF(f < -1.0f ? -1.0f : f);
}

/* Integer coordinate i along an axis of n texels under address mode `mode`: the texel,
 * or -1 for the border. Wrap and mirror apply to normalized coordinates only (as on a
 * GPU: otherwise they clamp). */
static long long
address(long long i, long long n, int mode, int normalized)
{
    if (i >= 0 && i < n)
        return i;
    if (mode == CU_TR_ADDRESS_MODE_BORDER)
        return -1;
    if (normalized && mode == CU_TR_ADDRESS_MODE_WRAP)
        return ((i % n) + n) % n;
    if (normalized && mode == CU_TR_ADDRESS_MODE_MIRROR) {
        long long j = ((i % (2 * n)) + 2 * n) % (2 * n);
        return j < n ? j : 2 * n - 1 - j;
    }
    return i < 0 ? 0 : n - 1;
}

/* The four channels of texel (i[0], i[1], i[2]) (layer in i[2] for layered textures),
 * the border color outside; 0 or -1 after a fault. */
static int
fetch(block *b, warp *w, int lane, const texobj *o, const long long i[3], int dims, int as_int,
      uint32_t out[4])
{
    long long n[3] = {(long long)o->width, (long long)o->rows, (long long)o->slices};
    long long a[3] = {0, 0, 0};
    int norm = (o->flags & CU_TRSF_NORMALIZED_COORDINATES) != 0;
    for (int d = 0; d < 3; d++) {
        if (d < dims) {
            a[d] = address(i[d], n[d], o->address[d], norm);
            if (a[d] < 0) {
                for (int k = 0; k < 4; k++)
                    out[k] = as_int ? (uint32_t)o->border[k] : (uint32_t)UF(o->border[k]);
                return 0;
            }
        }
        else
            a[d] = i[d] < 0 ? 0 : i[d] >= n[d] ? n[d] - 1 : i[d]; /* a layer: clamped */
    }
    const unsigned char *t = texel(b, w, lane, o, (size_t)a[0], (size_t)a[1], (size_t)a[2]);
    if (t == NULL)
        return -1;
    for (int k = 0; k < 4; k++)
        out[k] = k < o->channels ? channel(o, t, k, as_int)
                                 : (as_int ? 0 : (uint32_t)UF(k == 3 ? 1.0f : 0.0f));
    return 0;
}

/* One tex instruction for one lane: coordinates c[] (floats, or integers when ints). */
static int
sample(block *b, warp *w, int lane, const texobj *o, int dims, int layer_axis, const uint64_t c[4],
       int int_coords, uint32_t out[4])
{
    int as_int = (o->flags & CU_TRSF_READ_AS_INTEGER) && o->format != CU_AD_FORMAT_FLOAT &&
                 o->format != CU_AD_FORMAT_HALF;
    long long i[3] = {0, 0, 0};
    if (layer_axis)
        i[2] = (int32_t)c[3]; /* the layer, moved to the last axis by the caller */
    if (int_coords) {
        if (o->restype == CU_RESOURCE_TYPE_LINEAR) { /* tex1Dfetch: outside is 0 */
            long long x = (int32_t)c[0];
            if (x < 0 || x >= (long long)o->width) {
                out[0] = out[1] = out[2] = out[3] = 0;
                return 0;
            }
        }
        for (int d = 0; d < dims; d++)
            i[d] = (int32_t)c[d];
        return fetch(b, w, lane, o, i, dims, as_int, out);
    }
    double x[3];
    long long n[3] = {(long long)o->width, (long long)o->rows, (long long)o->slices};
    for (int d = 0; d < dims; d++) {
        x[d] = F(c[d]);
        if (o->flags & CU_TRSF_NORMALIZED_COORDINATES)
            x[d] *= (double)n[d];
    }
    if (o->filter != CU_TR_FILTER_MODE_LINEAR || as_int) {
        for (int d = 0; d < dims; d++)
            i[d] = (long long)floor(x[d]);
        return fetch(b, w, lane, o, i, dims, as_int, out);
    }
    /* Linear: the 2**dims texels around x - 0.5, each weight kept to 8 fractional bits as
     * the hardware keeps it, a tie rounded up (measured on an H100: one dimension is then
     * bit for bit; two dimensions still differ, see tests/differential.py's KNOWN). */
    double wt[3];
    long long base[3];
    for (int d = 0; d < dims; d++) {
        double xb = x[d] - 0.5, f = floor(xb);
        base[d] = (long long)f;
        wt[d] = floor((xb - f) * 256.0 + 0.5) / 256.0;
    }
    float acc[4] = {0, 0, 0, 0};
    for (int corner = 0; corner < (1 << dims); corner++) {
        double weight = 1.0;
        for (int d = 0; d < dims; d++) {
            int hi = (corner >> d) & 1;
            i[d] = base[d] + hi;
            weight *= hi ? wt[d] : 1.0 - wt[d];
        }
        uint32_t v[4];
        if (fetch(b, w, lane, o, i, dims, 0, v) < 0)
            return -1;
        for (int k = 0; k < 4; k++)
            acc[k] += (float)weight * F(v[k]);
    }
    for (int k = 0; k < 4; k++)
        out[k] = (uint32_t)UF(acc[k]);
    return 0;
}

/* Dimensions and the layer operand of each geometry (TG_* in in->base). */
static const struct {
    int dims, layered;
} geometry[] = {{0, 0}, {1, 0}, {2, 0}, {3, 0}, {1, 1}, {2, 1}};

static int
lane_fault(block *b, warp *w, int lane, CUresult err, const char *fmt, uint64_t v)
{
    char text[256];
    snprintf(text, sizeof text, fmt, (unsigned long long)v);
    emu_fault_text(b, w, lane, err, text);
    return -1;
}

/* A surface access's element: its bytes at (x bytes, y, z), or NULL when outside and the
 * mode says zero (*skip set) or after a fault (trap). Clamp moves it to the edge. */
static unsigned char *
surface_at(block *b, warp *w, int lane, const emu_inst *in, const texobj *o, long long c[3],
           int dims, size_t size, int *skip)
{
    long long n[3] = {(long long)o->row_bytes, (long long)o->rows, (long long)o->slices};
    *skip = 0;
    for (int d = 0; d < 3; d++) {
        long long lim = d == 0 ? n[0] - (long long)size : n[d] - 1;
        if (d >= dims && !(d == 2 && geometry[in->base].layered))
            c[d] = 0;
        if (c[d] >= 0 && c[d] <= lim && (d > 0 || c[d] % (long long)size == 0))
            continue;
        if (in->mod == 2) { /* .zero */
            *skip = 1;
            return NULL;
        }
        if (in->mod == 1) { /* .clamp */
            c[d] = c[d] < 0 ? 0 : c[d] > lim ? lim : c[d] - c[d] % (long long)size;
            continue;
        }
        lane_fault(b, w, lane, CUDA_ERROR_ILLEGAL_ADDRESS,
                   "a surface access outside its CUDA array (.trap), at coordinate %lld",
                   (uint64_t)c[d]);
        return NULL;
    }
    return o->array->data + ((size_t)c[2] * o->rows + (size_t)c[1]) * o->row_bytes + (size_t)c[0];
}

int
emu_texture_op(block *b, warp *w, const emu_inst *in, uint32_t m)
{
    uint64_t *R = w->R;
    const uint64_t *H = R + (size_t)in->addr * 32;
    int dims = geometry[in->base].dims, layered = geometry[in->base].layered;
    int magic = in->op == OP_TEX ? MAGIC_TEX : MAGIC_SURF;
    int rc = 0;
    pthread_rwlock_rdlock(&objs_lock);
    const texobj *o = NULL;
    uint64_t last = 0;
    for (uint32_t mm = m; mm && rc == 0; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        if (o == NULL || H[l] != last) {
            last = H[l];
            o = objs_find(last, magic);
            if (o == NULL || (o->array && objs_find((uint64_t)(uintptr_t)o->array, MAGIC_ARRAY) == NULL)) {
                rc = lane_fault(b, w, l, CUDA_ERROR_ILLEGAL_ADDRESS,
                                o ? "the CUDA array of texture or surface 0x%llx was destroyed"
                                  : (magic == MAGIC_TEX ? "0x%llx is not a live texture object"
                                                        : "0x%llx is not a live surface object"),
                                last);
                break;
            }
        }
        /* coordinates: the layer first in PTX, moved to the last axis here */
        uint64_t c[4] = {0, 0, 0, 0};
        for (int k = 0; k < dims; k++)
            c[k] = R[(size_t)in->s[k + layered] * 32 + l];
        if (layered)
            c[3] = R[(size_t)in->s[0] * 32 + l];
        if (in->op == OP_TEX) {
            uint32_t v[4];
            if ((rc = sample(b, w, l, o, dims, layered, c, in->type2 == TY_S32, v)) < 0)
                break;
            for (int k = 0; k < 4; k++)
                if (in->d[k] >= 0)
                    R[(size_t)in->d[k] * 32 + l] = v[k];
            continue;
        }
        long long at[3] = {(int32_t)c[0], (int32_t)c[1], (int32_t)c[2]};
        if (layered)
            at[2] = (int32_t)c[3];
        size_t sz = (size_t)emu_type_size(in->type), total = sz * in->vec;
        int skip;
        unsigned char *q = surface_at(b, w, l, in, o, at, dims, total, &skip);
        if (q == NULL && !skip) {
            rc = -1;
            break;
        }
        for (int k = 0; k < in->vec; k++) {
            uint64_t *r = &R[(size_t)in->d[k] * 32 + l];
            if (in->op == OP_SULD)
                *r = skip ? 0 : load_value(q + k * sz, in->type);
            else if (!skip)
                store_value(q + k * sz, (int)sz, *r);
        }
    }
    pthread_rwlock_unlock(&objs_lock);
    return rc;
}
