/* tex.c - decodes the texture and surface instructions: tex, suld.b and sust.b */
#include "emulator/ptx/ptx.h"

#include <string.h>

static int
refuse(P *p, const tok *op, int line, const char *why)
{
    return ptx_fail(p, line, "the emulator does not support the PTX instruction '%.*s' (%s)",
                    op->len, op->p, why);
}

/* A register or literal named by item k of a vector operand, as an operand. */
static operand
item(const operand *v, int k, int line)
{
    operand o = {.kind = v->inums[k] ? OK_NUM : OK_NAME, .name = v->items[k], .nlen = v->ilens[k],
                 .line = line};
    if (o.name[0] == '-') {
        o.neg = 1;
        o.name++;
        o.nlen--;
    }
    return o;
}

/* tex.geom.v4.dtype.ctype d, [t, {c}]; suld.b.geom[.vN].btype.mode d, [s, {c}];
 * sust.b.geom[.vN].btype.mode [s, {c}], v. */
int
ptx_parse_texture(P *p, const tok *op, int nbase, int line, operand *ops, int nops, int guard,
                  int gneg)
{
    static const struct {
        const char *name;
        int geom, ncoords;
    } geoms[] = {{"1d", TG_1D, 1}, {"2d", TG_2D, 2}, {"3d", TG_3D, 3}, {"a1d", TG_A1D, 2},
                 {"a2d", TG_A2D, 3}};
    int is_tex = nbase == 3, is_st = nbase == 4 && op->p[2] == 's' && op->p[3] == 't';
    int geom = 0, ncoords = 0, vec = 1, types[2] = {TY_NONE, TY_NONE}, ntypes = 0, mode = 0, b = 0;
    const char *s = op->p + nbase, *end = op->p + op->len;
    while (s < end) {
        const char *e = ++s;
        while (e < end && *e != '.')
            e++;
        int len = (int)(e - s), ty = ptx_type_of(s, len, NULL), known = 1;
#define M(str) (len == (int)sizeof(str) - 1 && memcmp(s, str, sizeof(str) - 1) == 0)
        if (M("v2") || M("v4"))
            vec = s[1] - '0';
        else if (M("b"))
            b = 1;
        else if (M("trap"))
            mode = 0;
        else if (M("clamp"))
            mode = 1;
        else if (M("zero"))
            mode = 2;
        else if (ty != TY_NONE && ntypes < 2)
            types[ntypes++] = ty;
        else {
            known = 0;
            for (size_t k = 0; k < sizeof geoms / sizeof *geoms && !known; k++) {
                if ((int)strlen(geoms[k].name) == len && memcmp(geoms[k].name, s, (size_t)len) == 0) {
                    geom = geoms[k].geom;
                    ncoords = geoms[k].ncoords;
                    known = 1;
                }
            }
        }
#undef M
        if (!known)
            return ptx_fail(p, line, "the emulator does not support the PTX instruction '%.*s' "
                            "(its modifier .%.*s)", op->len, op->p, len, s);
        s = e;
    }
    if (geom == 0)
        return refuse(p, op, line, "cube maps, 2-D multisample and mipmaps are not emulated");
    const operand *addr = &ops[is_st ? 0 : 1], *val = &ops[is_st ? 1 : 0];
    if (nops != 2 || addr->kind != OK_ADDR || addr->name == NULL || addr->nitems < ncoords ||
        (is_tex && (vec != 4 || ntypes != 2 || val->kind != OK_VEC || val->nitems != 4)) ||
        (!is_tex && (!b || ntypes != 1)))
        return refuse(p, op, line, is_tex ? "the emulator reads .v4 results with one coordinate "
                                            "type, without offsets or depth compare"
                                          : "the emulator reads the .b forms");
    emu_inst *in = ptx_emit(p, line);
    if (in == NULL)
        return -1;
    in->guard = guard;
    in->gneg = (uint8_t)gneg;
    in->op = is_tex ? OP_TEX : is_st ? OP_SUST : OP_SULD;
    in->base = (uint8_t)geom;
    in->type = (uint8_t)types[0];
    in->type2 = (uint8_t)(is_tex ? types[1] : types[0]);
    in->vec = (uint8_t)(is_tex ? 4 : vec);
    in->mod = (uint8_t)mode;
    if (is_tex && types[1] != TY_F32 && types[1] != TY_S32)
        return refuse(p, op, line, "coordinates are .f32 or .s32");
    if (!is_tex && in->type != TY_U8 && in->type != TY_U16 && in->type != TY_U32 && in->type != TY_U64) {
        /* .b8 to .b64 read as the unsigned types of their size */
        int size = emu_type_size(in->type);
        in->type = (uint8_t)(size == 1 ? TY_U8 : size == 2 ? TY_U16 : size == 4 ? TY_U32 : TY_U64);
    }
    operand h = {.kind = OK_NAME, .name = addr->name, .nlen = addr->nlen, .line = line};
    if ((in->addr = ptx_src(p, &h, TY_U64)) < 0)
        return -1;
    /* the layer of a layered geometry comes first, an integer */
    for (int k = 0; k < ncoords && k < 4; k++) {
        operand c = item(addr, k, line);
        int layer = (geom == TG_A1D || geom == TG_A2D) && k == 0;
        if ((in->s[k] = ptx_src(p, &c, layer || !is_tex ? TY_S32 : in->type2)) < 0)
            return -1;
    }
    for (int k = 0; k < in->vec; k++) {
        operand v;
        if (val->kind == OK_VEC && val->nitems == in->vec)
            v = item(val, k, line);
        else if (val->kind != OK_VEC && in->vec == 1)
            v = *val;
        else
            return refuse(p, op, line, "the values do not match the vector size");
        if (is_st ? (in->d[k] = ptx_src(p, &v, in->type)) < 0 : (in->d[k] = ptx_dst(p, &v)) < 0)
            return -1;
    }
    for (int k = in->vec; k < 4; k++)
        in->d[k] = -1;
    return 0;
}
