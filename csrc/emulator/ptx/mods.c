/* mods.c - reads a PTX instruction's modifiers: types, rounding, spaces, vectors, comparisons */
#include "emulator/ptx/ptx.h"

#include <string.h>

static const struct {
    const char *name;
    int value;
} cmp_names[] = {
    {"eq", CMP_EQ}, {"ne", CMP_NE}, {"lt", CMP_LT}, {"le", CMP_LE}, {"gt", CMP_GT}, {"ge", CMP_GE},
    {"lo", CMP_LO}, {"ls", CMP_LS}, {"hi", CMP_HI}, {"hs", CMP_HS}, {"equ", CMP_EQU},
    {"neu", CMP_NEU}, {"ltu", CMP_LTU}, {"leu", CMP_LEU}, {"gtu", CMP_GTU}, {"geu", CMP_GEU},
    {"num", CMP_NUM}, {"nan", CMP_NAN},
};

static const struct {
    const char *name;
    int value;
} atom_names[] = {
    {"add", ATOM_ADD}, {"min", ATOM_MIN}, {"max", ATOM_MAX}, {"exch", ATOM_EXCH},
    {"cas", ATOM_CAS}, {"and", ATOM_AND}, {"or", ATOM_OR}, {"xor", ATOM_XOR},
    {"inc", ATOM_INC}, {"dec", ATOM_DEC},
};

/* Modifiers that change nothing the emulator models: caching, memory order and scope
 * (every access is sequentially consistent here), alignment and uniformity hints. */
static const char *const ignored_mods[] = {
    "sync", "aligned", "nc", "volatile", "relaxed", "acquire", "release", "acq_rel", "sc",
    "weak", "gpu", "sys", "cta", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "full", "noftz",
    "mmio", "shared::cta", "L1::evict_normal", "L1::evict_last", "L1::evict_first",
    "L1::no_allocate", "L2::64B", "L2::128B", "L2::256B", "L2::evict_normal", "L2::evict_first",
    "L2::evict_last", "L1::evict_unchanged", "unified", "gl",
};

int
ptx_parse_mods(P *p, const tok *op, const char *base, int nbase, mods *m, int line)
{
    memset(m, 0, sizeof *m);
    m->space = SP_GENERIC;
    m->vec = 1;
    const char *s = op->p + nbase, *end = op->p + op->len;
    while (s < end) {
        s++; /* the dot */
        const char *e = s;
        while (e < end && *e != '.')
            e++;
        /* "L1::evict_last" etc. carry no dots; "shared::cta" neither */
        int len = (int)(e - s);
        int ty = ptx_type_of(s, len, NULL);
#define M(str) (len == (int)sizeof(str) - 1 && memcmp(s, str, sizeof(str) - 1) == 0)
        int known = 1;
        if (ty != TY_NONE) {
            if (m->ntypes < 4)
                m->types[m->ntypes++] = ty;
        }
        else if (M("rn")) m->rnd = RND_RN;
        else if (M("rz")) m->rnd = RND_RZ;
        else if (M("rm")) m->rnd = RND_RM;
        else if (M("rp")) m->rnd = RND_RP;
        else if (M("rni")) m->rnd = RND_RNI;
        else if (M("rzi")) m->rnd = RND_RZI;
        else if (M("rmi")) m->rnd = RND_RMI;
        else if (M("rpi")) m->rnd = RND_RPI;
        else if (M("ftz")) m->ftz = 1;
        else if (M("sat")) m->sat = 1;
        else if (M("satfinite")) m->satfinite = 1;
        else if (M("approx")) m->approx = 1;
        else if (M("cc")) m->cc = 1;
        else if (M("global")) m->space = SP_GLOBAL;
        else if (M("shared") || M("shared::cta")) m->space = SP_SHARED;
        else if (M("local")) m->space = SP_LOCAL;
        else if (M("const")) m->space = SP_CONST;
        else if (M("param")) m->space = SP_PARAM;
        else if (M("v2")) m->vec = 2;
        else if (M("v4")) m->vec = 4;
        else if (M("hi")) m->hi = 1;
        else if (M("lo")) m->lo = 1;
        else if (M("wide")) m->wide = 1;
        else if (M("to")) m->to = 1;
        else if (M("uni")) m->uni = 1;
        else if (M("up")) m->shfl = SHFL_UP;
        else if (M("down")) m->shfl = SHFL_DOWN;
        else if (M("bfly")) m->shfl = SHFL_BFLY;
        else if (M("idx")) m->shfl = SHFL_IDX;
        else if (M("all")) m->vote = VOTE_ALL, m->all = 1;
        else if (M("any")) m->vote = VOTE_ANY, m->any = 1;
        else if (M("ballot")) m->vote = VOTE_BALLOT;
        else if (M("arrive")) m->bar_arrive = 1;
        else if (M("red")) m->bar_red = 1;
        else if (M("l")) m->shf_left = 1;
        else if (M("r")) m->shf_left = 0;
        else if (M("clamp")) m->shf_clamp = 1;
        else if (M("wrap")) m->shf_clamp = 0;
        else if (M("finite")) m->testp = 1;
        else if (M("infinite")) m->testp = 2;
        else if (M("number")) m->testp = 3;
        else if (M("notanumber")) m->testp = 4;
        else if (M("normal")) m->testp = 5;
        else if (M("subnormal")) m->testp = 6;
        else if (M("shiftamt")) m->shiftamt = 1;
        else if (M("warp")) m->warp = 1;
        else if (M("popc")) m->popc = 1;
        else
            known = 0;
        if (!known) {
            for (size_t i = 0; i < sizeof cmp_names / sizeof *cmp_names && !known; i++) {
                if ((int)strlen(cmp_names[i].name) == len && memcmp(cmp_names[i].name, s, (size_t)len) == 0) {
                    if (nbase == 4 && memcmp(base, "setp", 4) == 0 && m->cmp)
                        break; /* and/or handled below */
                    m->cmp = cmp_names[i].value;
                    known = 1;
                }
            }
        }
        if (!known) {
            for (size_t i = 0; i < sizeof atom_names / sizeof *atom_names && !known; i++) {
                if ((int)strlen(atom_names[i].name) == len && memcmp(atom_names[i].name, s, (size_t)len) == 0) {
                    m->atom = atom_names[i].value;
                    if (M("and")) m->boolop = 1;
                    if (M("or")) m->boolop = 2;
                    if (M("xor")) m->boolop = 3;
                    known = 1;
                }
            }
        }
        if (!known) {
            for (size_t i = 0; i < sizeof ignored_mods / sizeof *ignored_mods && !known; i++)
                known = (int)strlen(ignored_mods[i]) == len && memcmp(ignored_mods[i], s, (size_t)len) == 0;
        }
        if (!known)
            return ptx_fail(p, line, "the emulator does not support the PTX instruction '%.*s' "
                                 "(its modifier .%.*s)", op->len, op->p, len, s);
#undef M
        s = e;
    }
    return 0;
}
