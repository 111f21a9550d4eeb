/* texture.h - the emulator's CUDA arrays and texture and surface objects, as texture.c
 * keeps them and arrays.c makes them */
#ifndef CUKIT_EMU_TEXTURE_H
#define CUKIT_EMU_TEXTURE_H

#include "emulator/emu.h"

/* A CUDA array is a dense block of host memory: rows of `width` elements, `rows` rows a
 * slice, `slices` slices (a 3-D array's depth or a layered array's layers). A texture
 * or surface object's handle is its address; every object alive is listed, so a handle
 * that names none (destroyed, or never made) is a fault, not a read of freed memory. */

enum { MAGIC_ARRAY = 0x41525259, MAGIC_TEX = 0x54455855, MAGIC_SURF = 0x53555246 };

struct CUarray_st {
    int magic;
    unsigned char *data;   /* owned */
    size_t width, rows, slices, elem, row_bytes;
    int format, channels, layered, surface;
};

typedef struct {
    int magic;
    int restype;               /* CU_RESOURCE_TYPE_* */
    struct CUarray_st *array;  /* borrowed: checked alive at each use */
    uint64_t ptr;              /* linear and pitch2D: device memory */
    size_t width, rows, slices, row_bytes, elem;
    int format, channels;
    int address[3], filter, flags;
    float border[4];
} texobj;

/* Add o (an array or object, its magic set) to the live list: 0, or -1 when memory ran
 * out. Remove o if it is alive with this magic: 1 removed, 0 not found. */
int emu_texobj_add(void *o);
int emu_texobj_remove(const void *o, int magic);
/* 1 when o is alive with this magic. */
int emu_texobj_alive(const void *o, int magic);

/* A live CUDA array's bytes: data, row pitch, rows a slice, all bytes. 1, or 0 when h
 * is not a live array. */
int emu_array_span(CUarray h, unsigned char **data, size_t *pitch, size_t *rows, size_t *bytes);

#endif /* CUKIT_EMU_TEXTURE_H */
