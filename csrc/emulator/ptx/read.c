/* read.c - the PTX reader's tokens, symbols, literals and operands */
#include "emulator/ptx/ptx.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
push_tok(toks *t, int kind, const char *p, int len, int line)
{
    if (t->n == t->cap) {
        int cap = t->cap ? t->cap * 2 : 4096;
        tok *v = realloc(t->v, (size_t)cap * sizeof *v);
        if (v == NULL)
            return -1;
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = (tok){kind, p, len, line};
    return 0;
}

static int
id_start(int c)
{
    return isalpha(c) || c == '_' || c == '$' || c == '%' || c == '.';
}

static int
id_char(int c)
{
    return isalnum(c) || c == '_' || c == '$' || c == '%' || c == '.';
}

int
ptx_lex(const char *s, toks *t)
{
    int line = 1;
    const char *p = s;
    while (*p) {
        if (*p == '\n') {
            line++;
            p++;
        }
        else if (isspace((unsigned char)*p)) {
            p++;
        }
        else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n')
                p++;
        }
        else if (p[0] == '/' && p[1] == '*') {
            p += 2;
            while (*p && !(p[0] == '*' && p[1] == '/')) {
                if (*p == '\n')
                    line++;
                p++;
            }
            if (*p)
                p += 2;
        }
        else if (*p == '"') {
            const char *q = p + 1;
            while (*q && *q != '"') {
                if (*q == '\\' && q[1])
                    q++;
                q++;
            }
            if (push_tok(t, TK_STR, p + 1, (int)(q - p - 1), line) < 0)
                return -1;
            p = *q ? q + 1 : q;
        }
        else if (id_start((unsigned char)*p)) {
            const char *q = p + 1;
            for (;;) {
                if (id_char((unsigned char)*q))
                    q++;
                else if (q[0] == ':' && q[1] == ':')
                    q += 2;
                else
                    break;
            }
            if (push_tok(t, TK_ID, p, (int)(q - p), line) < 0)
                return -1;
            p = q;
        }
        else if (isdigit((unsigned char)*p)) {
            const char *q = p + 1;
            while (isalnum((unsigned char)*q) || *q == '.' || *q == '_')
                q++;
            if (push_tok(t, TK_NUM, p, (int)(q - p), line) < 0)
                return -1;
            p = q;
        }
        else {
            if (push_tok(t, TK_PUNCT, p, 1, line) < 0)
                return -1;
            p++;
        }
    }
    /* The end is PTX_END_PAD tokens, so that a reader looking a few tokens ahead
     * (p[1], p[2]) stays inside the array; ptx_peek never goes past the first. */
    for (int i = 0; i < PTX_END_PAD; i++) {
        if (push_tok(t, TK_END, p, 0, line) < 0)
            return -1;
    }
    return 0;
}

static uint32_t
hash_str(const char *p, int len)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < len; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

sym *
ptx_sym_find(symtab *t, const char *p, int len)
{
    if (t->hcap == 0)
        return NULL;
    uint32_t h = hash_str(p, len) & (uint32_t)(t->hcap - 1);
    while (t->hash[h]) {
        sym *s = &t->v[t->hash[h] - 1];
        if ((int)strlen(s->name) == len && memcmp(s->name, p, (size_t)len) == 0)
            return s;
        h = (h + 1) & (uint32_t)(t->hcap - 1);
    }
    return NULL;
}

static int
sym_rehash(symtab *t, int hcap)
{
    int *hash = calloc((size_t)hcap, sizeof *hash);
    if (hash == NULL)
        return -1;
    free(t->hash);
    t->hash = hash;
    t->hcap = hcap;
    for (int i = 0; i < t->n; i++) {
        uint32_t h = hash_str(t->v[i].name, (int)strlen(t->v[i].name)) & (uint32_t)(hcap - 1);
        while (hash[h])
            h = (h + 1) & (uint32_t)(hcap - 1);
        hash[h] = i + 1;
    }
    return 0;
}

/* Add or replace `name`. The symbol, or NULL when memory ran out. */
sym *
ptx_sym_add(symtab *t, const char *p, int len, int kind, int64_t value, int type)
{
    sym *s = ptx_sym_find(t, p, len);
    if (s) {
        s->kind = kind;
        s->value = value;
        s->type = type;
        return s;
    }
    if (t->n == t->cap) {
        int cap = t->cap ? t->cap * 2 : 256;
        sym *v = realloc(t->v, (size_t)cap * sizeof *v);
        if (v == NULL)
            return NULL;
        t->v = v;
        t->cap = cap;
    }
    if ((t->n + 1) * 2 > t->hcap && sym_rehash(t, t->hcap ? t->hcap * 2 : 512) < 0)
        return NULL;
    char *name = malloc((size_t)len + 1);
    if (name == NULL)
        return NULL;
    memcpy(name, p, (size_t)len);
    name[len] = '\0';
    s = &t->v[t->n++];
    *s = (sym){name, kind, value, type};
    uint32_t h = hash_str(p, len) & (uint32_t)(t->hcap - 1);
    while (t->hash[h])
        h = (h + 1) & (uint32_t)(t->hcap - 1);
    t->hash[h] = t->n;
    return s;
}

void
ptx_sym_clear(symtab *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->v[i].name);
    free(t->v);
    free(t->hash);
    memset(t, 0, sizeof *t);
}

int
ptx_fail(P *p, int line, const char *fmt, ...)
{
    if (!p->failed) {
        va_list ap;
        va_start(ap, fmt);
        char msg[512];
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        char where[192] = "";
        if (p->cur_line)
            emu_line_str(p->m, p->cur_line, where, sizeof where);
        snprintf(p->why, p->whylen, "%s%s%s (PTX line %d)", msg, where[0] ? " at " : "", where,
                 line);
    }
    p->failed = 1;
    return -1;
}

tok *
ptx_peek(P *p)
{
    /* A reader that steps past the end (truncated PTX) stays at the end. */
    if (p->i > p->t.n - PTX_END_PAD)
        p->i = p->t.n - PTX_END_PAD;
    return &p->t.v[p->i];
}

int
ptx_is(const tok *t, const char *s)
{
    return (int)strlen(s) == t->len && memcmp(t->p, s, (size_t)t->len) == 0;
}

int
ptx_is_punct(const tok *t, char c)
{
    return t->kind == TK_PUNCT && t->p[0] == c;
}

int
ptx_expect(P *p, char c)
{
    tok *t = ptx_peek(p);
    if (!ptx_is_punct(t, c))
        return ptx_fail(p, t->line, "the emulator could not read this PTX: expected '%c', found '%.*s'",
                    c, t->len, t->p);
    p->i++;
    return 0;
}

void
ptx_skip_line(P *p, int line)
{
    while (ptx_peek(p)->kind != TK_END && ptx_peek(p)->line == line)
        p->i++;
}

void
ptx_skip_statement(P *p)
{
    while (ptx_peek(p)->kind != TK_END && !ptx_is_punct(ptx_peek(p), ';'))
        p->i++;
    if (ptx_is_punct(ptx_peek(p), ';'))
        p->i++;
}

/* ------------------------------------------------------------------ types and literals */

static const struct {
    const char *name;
    int type;
    int size;
} type_names[] = {
    {"u8", TY_U8, 1}, {"u16", TY_U16, 2}, {"u32", TY_U32, 4}, {"u64", TY_U64, 8},
    {"s8", TY_S8, 1}, {"s16", TY_S16, 2}, {"s32", TY_S32, 4}, {"s64", TY_S64, 8},
    {"b8", TY_U8, 1}, {"b16", TY_U16, 2}, {"b32", TY_U32, 4}, {"b64", TY_U64, 8},
    {"f16", TY_F16, 2}, {"bf16", TY_BF16, 2}, {"f32", TY_F32, 4}, {"f64", TY_F64, 8},
    {"pred", TY_PRED, 0}, {"f16x2", TY_F16X2, 4}, {"bf16x2", TY_BF16X2, 4}, {"b128", TY_B128, 16},
    {"e4m3x2", TY_E4M3X2, 2}, {"e5m2x2", TY_E5M2X2, 2},
};

int
ptx_type_of(const char *s, int len, int *size)
{
    for (size_t i = 0; i < sizeof type_names / sizeof *type_names; i++) {
        if ((int)strlen(type_names[i].name) == len && memcmp(type_names[i].name, s, (size_t)len) == 0) {
            if (size)
                *size = type_names[i].size;
            return type_names[i].type;
        }
    }
    return TY_NONE;
}

int
emu_type_size(int type)
{
    static const int sizes[TY_COUNT] = {
        [TY_U8] = 1, [TY_U16] = 2, [TY_U32] = 4, [TY_U64] = 8, [TY_S8] = 1, [TY_S16] = 2,
        [TY_S32] = 4, [TY_S64] = 8, [TY_F16] = 2, [TY_BF16] = 2, [TY_F32] = 4, [TY_F64] = 8,
        [TY_F16X2] = 4, [TY_BF16X2] = 4, [TY_B128] = 16, [TY_E4M3X2] = 2, [TY_E5M2X2] = 2,
    };
    return type > 0 && type < TY_COUNT ? sizes[type] : 0;
}

int
ptx_is_float(int t)
{
    return t == TY_F16 || t == TY_BF16 || t == TY_F32 || t == TY_F64 || t == TY_F16X2 || t == TY_BF16X2;
}

uint64_t
ptx_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

uint64_t
ptx_f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* float -> IEEE half bits, round to nearest even. */
uint16_t
emu_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t exp = (int32_t)((x >> 23) & 0xff);
    uint32_t man = x & 0x7fffff;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
    int32_t e = exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000;
        int shift = 14 - e;
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
        half++;
    return (uint16_t)(sign | half);
}

float
emu_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, x;
    if (exp == 0) {
        if (man == 0)
            x = sign;
        else {
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) {
                man <<= 1;
                exp--;
            }
            x = sign | (exp << 23) | ((man & 0x3ff) << 13);
        }
    }
    else if (exp == 31)
        x = sign | 0x7f800000 | (man << 13);
    else
        x = sign | ((exp + 127 - 15) << 23) | (man << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t
emu_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

float
emu_bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* A literal as the bits of `type`. 0, or -1 when it is not a number. */
int
ptx_literal(const char *s, int len, int neg, int type, uint64_t *out)
{
    char buf[80];
    if (len <= 0 || len >= (int)sizeof buf)
        return -1;
    memcpy(buf, s, (size_t)len);
    buf[len] = '\0';
    if ((buf[0] == '0') && (buf[1] == 'f' || buf[1] == 'F') && len == 10) {
        uint32_t u = (uint32_t)strtoul(buf + 2, NULL, 16);
        float f;
        memcpy(&f, &u, 4);
        if (neg)
            f = -f;
        *out = type == TY_F64 ? ptx_f64_bits(f) : ptx_f32_bits(f);
        return 0;
    }
    if ((buf[0] == '0') && (buf[1] == 'd' || buf[1] == 'D') && len == 18) {
        uint64_t u = strtoull(buf + 2, NULL, 16);
        double d;
        memcpy(&d, &u, 8);
        if (neg)
            d = -d;
        *out = type == TY_F64 ? ptx_f64_bits(d) : ptx_f32_bits((float)d);
        return 0;
    }
    int isfp = strchr(buf, '.') != NULL || (strchr(buf, 'e') && buf[1] != 'x');
    if (ptx_is_float(type) || isfp) {
        double d = strtod(buf, NULL);
        if (!isfp) {
            char *end;
            unsigned long long v = strtoull(buf, &end, 0);
            if (*end == 'U')
                end++;
            if (*end)
                return -1;
            d = (double)v;
        }
        if (neg)
            d = -d;
        if (type == TY_F64)
            *out = ptx_f64_bits(d);
        else if (type == TY_F16)
            *out = emu_f32_to_f16((float)d);
        else if (type == TY_BF16)
            *out = emu_f32_to_bf16((float)d);
        else if (ptx_is_float(type))
            *out = ptx_f32_bits((float)d);
        else
            *out = (uint64_t)(int64_t)d;
        return 0;
    }
    char *end;
    unsigned long long v = strtoull(buf, &end, 0);
    if (*end == 'U')
        end++;
    if (*end)
        return -1;
    *out = neg ? (uint64_t)(-(int64_t)v) : (uint64_t)v;
    return 0;
}

/* ------------------------------------------------------------------ functions under construction */

int
ptx_new_slot(P *p)
{
    return p->f->nslots++;
}

int
ptx_add_prefill(P *p, int kind, uint64_t value)
{
    emu_func *f = p->f;
    for (int i = 0; i < f->nprefill; i++) {
        if (f->prefill[i].kind == kind && f->prefill[i].value == value)
            return f->prefill[i].slot;
    }
    if (f->nprefill == p->capprefill) {
        int cap = p->capprefill ? p->capprefill * 2 : 32;
        emu_prefill *v = realloc(f->prefill, (size_t)cap * sizeof *v);
        if (v == NULL)
            return ptx_fail(p, 0, "out of memory");
        f->prefill = v;
        p->capprefill = cap;
    }
    int slot = ptx_new_slot(p);
    f->prefill[f->nprefill++] = (emu_prefill){slot, kind, value};
    return slot;
}

int
ptx_const_slot(P *p, uint64_t v)
{
    return ptx_add_prefill(p, SR_CONST, v);
}

emu_inst *
ptx_emit(P *p, int ptxline)
{
    emu_func *f = p->f;
    if (f->ncode >= EMU_MAX_CODE || f->nslots > EMU_MAX_SLOTS) {
        /* a bound before host memory runs out: inlining a fan-out of device functions
         * multiplies both */
        ptx_fail(p, ptxline, "the emulator does not support kernels this large: %s %s once its "
                 "device functions are inlined, past its limit of %d", f->name,
                 f->ncode >= EMU_MAX_CODE ? "has too many instructions" : "needs too many registers",
                 f->ncode >= EMU_MAX_CODE ? EMU_MAX_CODE : EMU_MAX_SLOTS);
        return NULL;
    }
    if (f->ncode == p->capcode) {
        int cap = p->capcode ? p->capcode * 2 : 256;
        emu_inst *v = realloc(f->code, (size_t)cap * sizeof *v);
        if (v == NULL) {
            ptx_fail(p, ptxline, "out of memory");
            return NULL;
        }
        f->code = v;
        p->capcode = cap;
    }
    emu_inst *in = &f->code[f->ncode++];
    memset(in, 0, sizeof *in);
    in->guard = -1;
    in->vec = 1;
    in->line = p->cur_line;
    in->addr = p->zero_slot;
    in->ptxline = (uint32_t)ptxline;
    for (int i = 0; i < 4; i++)
        in->d[i] = in->s[i] = p->zero_slot;
    return in;
}

static const struct {
    const char *name;
    int kind;
} specials[] = {
    {"%tid.x", SR_TID_X}, {"%tid.y", SR_TID_Y}, {"%tid.z", SR_TID_Z},
    {"%ntid.x", SR_NTID_X}, {"%ntid.y", SR_NTID_Y}, {"%ntid.z", SR_NTID_Z},
    {"%ctaid.x", SR_CTAID_X}, {"%ctaid.y", SR_CTAID_Y}, {"%ctaid.z", SR_CTAID_Z},
    {"%nctaid.x", SR_NCTAID_X}, {"%nctaid.y", SR_NCTAID_Y}, {"%nctaid.z", SR_NCTAID_Z},
    {"%laneid", SR_LANEID}, {"%warpid", SR_WARPID}, {"%nwarpid", SR_NWARPID},
    {"%smid", SR_SMID}, {"%nsmid", SR_NSMID}, {"%gridid", SR_GRIDID},
    {"%lanemask_eq", SR_LANEMASK_EQ}, {"%lanemask_lt", SR_LANEMASK_LT},
    {"%lanemask_le", SR_LANEMASK_LE}, {"%lanemask_gt", SR_LANEMASK_GT},
    {"%lanemask_ge", SR_LANEMASK_GE}, {"%dynamic_smem_size", SR_DYN_SMEM},
    {"%total_smem_size", SR_TOTAL_SMEM},
    /* without a cluster launch each block is a cluster of one */
    {"%clusterid.x", SR_CTAID_X}, {"%clusterid.y", SR_CTAID_Y}, {"%clusterid.z", SR_CTAID_Z},
    {"%nclusterid.x", SR_NCTAID_X}, {"%nclusterid.y", SR_NCTAID_Y}, {"%nclusterid.z", SR_NCTAID_Z},
    {"%cluster_ctaid.x", SR_ZERO}, {"%cluster_ctaid.y", SR_ZERO}, {"%cluster_ctaid.z", SR_ZERO},
    {"%cluster_nctaid.x", SR_ONE}, {"%cluster_nctaid.y", SR_ONE}, {"%cluster_nctaid.z", SR_ONE},
    {"%cluster_ctarank", SR_ZERO}, {"%cluster_nctarank", SR_ONE}, {"%is_explicit_cluster", SR_ZERO},
};

int
ptx_parse_operand(P *p, operand *o)
{
    memset(o, 0, sizeof *o);
    tok *t = ptx_peek(p);
    o->line = t->line;
    if (ptx_is_punct(t, '[')) {
        p->i++;
        o->kind = OK_ADDR;
        t = ptx_peek(p);
        if (t->kind == TK_ID) {
            o->name = t->p;
            o->nlen = t->len;
            p->i++;
            if (ptx_is_punct(ptx_peek(p), ',')) { /* [handle, {coordinates}]: tex, suld, sust */
                p->i++;
                operand v;
                if (!ptx_is_punct(ptx_peek(p), '{') || ptx_parse_operand(p, &v) < 0)
                    return ptx_fail(p, t->line, "the emulator could not read the coordinates of "
                                    "a texture or surface access");
                o->nitems = v.nitems;
                memcpy(o->items, v.items, sizeof o->items);
                memcpy(o->ilens, v.ilens, sizeof o->ilens);
                memcpy(o->inums, v.inums, sizeof o->inums);
                return ptx_expect(p, ']');
            }
        }
        else if (t->kind == TK_NUM) {
            uint64_t v;
            if (ptx_literal(t->p, t->len, 0, TY_U64, &v) < 0)
                return ptx_fail(p, t->line, "the emulator could not read the address '%.*s'", t->len, t->p);
            o->off = (int64_t)v;
            p->i++;
        }
        while (ptx_is_punct(ptx_peek(p), '+') || ptx_is_punct(ptx_peek(p), '-')) {
            int neg = ptx_is_punct(ptx_peek(p), '-');
            p->i++;
            if (ptx_is_punct(ptx_peek(p), '-')) {
                neg = !neg;
                p->i++;
            }
            t = ptx_peek(p);
            uint64_t v;
            if (t->kind != TK_NUM || ptx_literal(t->p, t->len, 0, TY_U64, &v) < 0)
                return ptx_fail(p, t->line, "the emulator could not read an address offset '%.*s'",
                            t->len, t->p);
            o->off += neg ? -(int64_t)v : (int64_t)v;
            p->i++;
        }
        return ptx_expect(p, ']');
    }
    if (ptx_is_punct(t, '{') || ptx_is_punct(t, '(')) {
        char close = ptx_is_punct(t, '{') ? '}' : ')';
        o->kind = close == '}' ? OK_VEC : OK_PAREN;
        p->i++;
        while (!ptx_is_punct(ptx_peek(p), close)) {
            t = ptx_peek(p);
            if (t->kind == TK_END || o->nitems == 8)
                return ptx_fail(p, t->line, "the emulator could not read a vector operand");
            int neg = 0;
            if (ptx_is_punct(t, '-')) {
                neg = 1;
                p->i++;
                t = ptx_peek(p);
            }
            if (t->kind != TK_ID && t->kind != TK_NUM)
                return ptx_fail(p, t->line, "the emulator could not read '%.*s' in a vector operand",
                            t->len, t->p);
            o->items[o->nitems] = neg ? t->p - 1 : t->p;
            o->ilens[o->nitems] = neg ? t->len + 1 : t->len;
            o->inums[o->nitems] = t->kind == TK_NUM;
            o->nitems++;
            p->i++;
            if (ptx_is_punct(ptx_peek(p), ','))
                p->i++;
        }
        p->i++;
        return 0;
    }
    if (ptx_is_punct(t, '-')) {
        o->neg = 1;
        p->i++;
        t = ptx_peek(p);
    }
    if (ptx_is_punct(t, '!')) {
        o->neg = 1;
        p->i++;
        t = ptx_peek(p);
    }
    if (t->kind == TK_NUM) {
        o->kind = OK_NUM;
        o->name = t->p;
        o->nlen = t->len;
        p->i++;
        return 0;
    }
    if (t->kind == TK_ID) {
        o->kind = OK_NAME;
        o->name = t->p;
        o->nlen = t->len;
        p->i++;
        if (ptx_is_punct(ptx_peek(p), '|')) {
            p->i++;
            t = ptx_peek(p);
            o->name2 = t->p;
            o->n2len = t->len;
            p->i++;
        }
        /* sym+offset outside brackets (mov.u64 %rd, sym+8) */
        if (ptx_is_punct(ptx_peek(p), '+') && ptx_peek(p)[1].kind == TK_NUM) {
            p->i++;
            uint64_t v = 0;
            ptx_literal(ptx_peek(p)->p, ptx_peek(p)->len, 0, TY_U64, &v);
            o->off = (int64_t)v;
            p->i++;
        }
        return 0;
    }
    return ptx_fail(p, t->line, "the emulator could not read the operand '%.*s'", t->len, t->p);
}

sym *
ptx_lookup(P *p, const char *name, int len)
{
    sym *s = ptx_sym_find(&p->fn, name, len);
    return s ? s : ptx_sym_find(&p->mod, name, len);
}

/* The slot that holds `name` (a register, special register, or a symbol's address),
 * or -1 with an error. */
static int
name_slot(P *p, const char *name, int len, int64_t off, int line)
{
    sym *s = ptx_lookup(p, name, len);
    if (s) {
        if (s->kind == S_REG && s->type == TY_B128)
            return ptx_fail_b128(p, line, name, len);
        switch (s->kind) {
        case S_REG:
        case S_CPARAM:
            return (int)s->value;
        case S_SHARED:
        case S_LOCAL:
        case S_GLOBAL:
        case S_KPARAM:
            return ptx_const_slot(p, (uint64_t)(s->value + off));
        case S_DYNSHARED:
            return ptx_add_prefill(p, SR_DYNBASE, (uint64_t)off);
        default:
            break;
        }
        return ptx_fail(p, line, "the emulator cannot use '%.*s' as a value", len, name);
    }
    if (len == 1 && name[0] == '_')
        return ptx_new_slot(p);
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) {
        if ((int)strlen(specials[i].name) == len && memcmp(specials[i].name, name, (size_t)len) == 0)
            return specials[i].kind == SR_ZERO || specials[i].kind == SR_ONE
                       ? ptx_const_slot(p, specials[i].kind == SR_ONE)
                       : ptx_add_prefill(p, specials[i].kind, 0);
    }
    /* %envreg0..31: the driver's environment registers, zero outside cooperative launches */
    if (len > 7 && memcmp(name, "%envreg", 7) == 0)
        return ptx_const_slot(p, 0);
    if ((len == 6 && memcmp(name, "%clock", 6) == 0) || (len == 8 && memcmp(name, "%clock64", 8) == 0) ||
        (len == 12 && memcmp(name, "%globaltimer", 12) == 0))
        return ptx_fail(p, line, "'%.*s' is read with mov only", len, name);
    if (name[0] == '%')
        return ptx_fail(p, line, "the emulator does not support the special register '%.*s'", len, name);
    if (p->device_launch)
        return ptx_fail_device_launch(p, line); /* the child kernel's name, as a value */
    return ptx_fail(p, line, "the emulator does not know the register or symbol '%.*s'", len, name);
}

/* A source operand of `type` as a slot. */
int
ptx_src(P *p, const operand *o, int type)
{
    uint64_t v;
    if (o->kind == OK_NUM) {
        if (ptx_literal(o->name, o->nlen, o->neg, type, &v) < 0)
            return ptx_fail(p, o->line, "the emulator could not read the number '%.*s'", o->nlen, o->name);
        return ptx_const_slot(p, v);
    }
    if (o->kind == OK_NAME)
        return name_slot(p, o->name, o->nlen, o->off, o->line);
    return ptx_fail(p, o->line, "the emulator expected a register or a number here");
}

int
ptx_dst(P *p, const operand *o)
{
    if (o->kind != OK_NAME)
        return ptx_fail(p, o->line, "the emulator expected a register to write");
    sym *s = ptx_lookup(p, o->name, o->nlen);
    if (s && s->kind == S_REG && s->type == TY_B128)
        return ptx_fail_b128(p, o->line, o->name, o->nlen);
    if (s && (s->kind == S_REG || s->kind == S_CPARAM))
        return (int)s->value;
    if (o->nlen == 1 && o->name[0] == '_')
        return ptx_new_slot(p);
    return ptx_fail(p, o->line, "the emulator cannot write to '%.*s'", o->nlen, o->name);
}

/* A predicate operand: its number, or -1. Constant predicates are not used by NVRTC. */
int
ptx_pred(P *p, const char *name, int len, int line)
{
    sym *s = ptx_lookup(p, name, len);
    if (s && s->kind == S_PRED)
        return (int)s->value;
    if (len == 1 && name[0] == '_')
        return p->f->npreds++;
    return ptx_fail(p, line, "'%.*s' is not a predicate register", len, name);
}

int
ptx_fail_device_launch(P *p, int line)
{
    return ptx_fail(p, line, "the emulator does not support device-side kernel launches (dynamic "
                    "parallelism; launch the child kernels from Python after the parent returns, "
                    "or run on a GPU): a kernel launched from a kernel");
}

/* An item of a vector operand {a, b, ..} as an operand of its own. */
operand
ptx_vec_item(const operand *v, int k, int line)
{
    return (operand){.kind = v->inums[k] ? OK_NUM : OK_NAME, .name = v->items[k],
                     .nlen = v->ilens[k], .line = line};
}

int
ptx_fail_b128(P *p, int line, const char *name, int len)
{
    return ptx_fail(p, line, "the emulator does not support the 128-bit register '%.*s' outside "
                    "mov.b128 (it packs, unpacks and copies .b128 registers; use two .b64 halves "
                    "for the rest)", len, name);
}

int
ptx_refuse(decoding *d)
{
    return ptx_fail(d->p, d->line, "the emulator does not support the PTX instruction '%.*s'",
                    d->op->len, d->op->p);
}

void
emu_line_str(const emu_module *m, uint32_t line, char *buf, size_t n)
{
    buf[0] = '\0';
    if (m == NULL || line == 0 || (int)line >= m->nlines)
        return;
    /* a line inside the toolkit's headers (NVRTC's builtin one, cuda/include): the
     * user's line that the inline function was called from, when known */
    const char *name = "?";
    int l = 0;
    for (int hops = 0; hops < 64; hops++) {
        uint32_t v = m->lines[line];
        int file = (int)(v >> 20);
        l = (int)(v & 0xfffff);
        name = (file < m->nfiles && m->files[file]) ? m->files[file] : "?";
        const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
        int header = strncmp(base, "__nv_", 5) == 0 || (strstr(name, "/cuda") && strstr(name, "/include/"));
        if (!header || m->outer[line] == 0)
            break;
        line = m->outer[line];
    }
    /* NVRTC writes the file name joined to the working folder; show it as the user gave it */
    char cwd[1024];
    if (getcwd(cwd, sizeof cwd)) {
        size_t c = strlen(cwd);
        if (strncmp(name, cwd, c) == 0 && name[c] == '/')
            name += c + 1;
    }
    snprintf(buf, n, "%s:%d", name, l);
}

