/* ptx.c - reads the PTX that NVRTC emits into the emulator's decoded form, once per module */
#define _POSIX_C_SOURCE 200809L
#include "emulator/emu.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ tokens */

enum { TK_ID, TK_NUM, TK_STR, TK_PUNCT, TK_END };

typedef struct {
    int kind;
    const char *p;
    int len;
    int line;
} tok;

typedef struct {
    tok *v;
    int n, cap;
} toks;

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

static int
lex(const char *s, toks *t)
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
    return push_tok(t, TK_END, p, 0, line);
}

/* ------------------------------------------------------------------ symbols */

enum { S_NONE = 0, S_REG, S_PRED, S_SHARED, S_LOCAL, S_GLOBAL, S_KPARAM, S_CPARAM, S_LABEL,
       S_FUNC, S_DYNSHARED };

typedef struct {
    char *name;
    int kind;
    int64_t value; /* slot, predicate, offset, address, code index */
    int type;      /* T_* of a register */
} sym;

typedef struct {
    sym *v;
    int n, cap;
    int *hash; /* open addressing: index+1, 0 empty */
    int hcap;
} symtab;

static uint32_t
hash_str(const char *p, int len)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < len; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

static sym *
sym_find(symtab *t, const char *p, int len)
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
static sym *
sym_add(symtab *t, const char *p, int len, int kind, int64_t value, int type)
{
    sym *s = sym_find(t, p, len);
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

static void
sym_clear(symtab *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->v[i].name);
    free(t->v);
    free(t->hash);
    memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------------ parser state */

typedef struct {
    const char *label; /* branch target name, resolved after the body */
    int llen;
    int inst;
} fixup;

typedef struct {
    toks t;
    int i;
    char *why;
    size_t whylen;
    int failed;
    emu_module *m;
    symtab mod;   /* module scope: globals, functions, extern shared */
    symtab fn;    /* function scope */
    emu_func *f;
    int capcode, capprefill;
    fixup *fix;
    int nfix, capfix;
    uint32_t cur_line;
    int cur_ptxline;
    int zero_slot;
} P;

static int
fail(P *p, int line, const char *fmt, ...)
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

static tok *
peek(P *p)
{
    return &p->t.v[p->i];
}

static int
is(const tok *t, const char *s)
{
    return (int)strlen(s) == t->len && memcmp(t->p, s, (size_t)t->len) == 0;
}

static int
is_punct(const tok *t, char c)
{
    return t->kind == TK_PUNCT && t->p[0] == c;
}

static int
expect(P *p, char c)
{
    tok *t = peek(p);
    if (!is_punct(t, c))
        return fail(p, t->line, "the emulator could not read this PTX: expected '%c', found '%.*s'",
                    c, t->len, t->p);
    p->i++;
    return 0;
}

static void
skip_line(P *p, int line)
{
    while (peek(p)->kind != TK_END && peek(p)->line == line)
        p->i++;
}

static void
skip_statement(P *p)
{
    while (peek(p)->kind != TK_END && !is_punct(peek(p), ';'))
        p->i++;
    if (is_punct(peek(p), ';'))
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
};

static int
type_of(const char *s, int len, int *size)
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
        [TY_F16X2] = 4, [TY_BF16X2] = 4, [TY_B128] = 16,
    };
    return type > 0 && type < TY_COUNT ? sizes[type] : 0;
}

static int
is_float(int t)
{
    return t == TY_F16 || t == TY_BF16 || t == TY_F32 || t == TY_F64 || t == TY_F16X2 || t == TY_BF16X2;
}

static uint64_t
f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint64_t
f64_bits(double d)
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
static int
literal(const char *s, int len, int neg, int type, uint64_t *out)
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
        *out = type == TY_F64 ? f64_bits(f) : f32_bits(f);
        return 0;
    }
    if ((buf[0] == '0') && (buf[1] == 'd' || buf[1] == 'D') && len == 18) {
        uint64_t u = strtoull(buf + 2, NULL, 16);
        double d;
        memcpy(&d, &u, 8);
        if (neg)
            d = -d;
        *out = type == TY_F64 ? f64_bits(d) : f32_bits((float)d);
        return 0;
    }
    int isfp = strchr(buf, '.') != NULL || (strchr(buf, 'e') && buf[1] != 'x');
    if (is_float(type) || isfp) {
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
            *out = f64_bits(d);
        else if (type == TY_F16)
            *out = emu_f32_to_f16((float)d);
        else if (type == TY_BF16)
            *out = emu_f32_to_bf16((float)d);
        else if (is_float(type))
            *out = f32_bits((float)d);
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

static int
new_slot(P *p)
{
    return p->f->nslots++;
}

static int
add_prefill(P *p, int kind, uint64_t value)
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
            return fail(p, 0, "out of memory");
        f->prefill = v;
        p->capprefill = cap;
    }
    int slot = new_slot(p);
    f->prefill[f->nprefill++] = (emu_prefill){slot, kind, value};
    return slot;
}

static int
const_slot(P *p, uint64_t v)
{
    return add_prefill(p, SR_CONST, v);
}

static emu_inst *
emit(P *p, int ptxline)
{
    emu_func *f = p->f;
    if (f->ncode == p->capcode) {
        int cap = p->capcode ? p->capcode * 2 : 256;
        emu_inst *v = realloc(f->code, (size_t)cap * sizeof *v);
        if (v == NULL) {
            fail(p, ptxline, "out of memory");
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

/* ------------------------------------------------------------------ operands */

enum { OK_NAME = 1, OK_NUM, OK_ADDR, OK_VEC, OK_PAREN };

typedef struct {
    int kind;
    const char *name;  /* OK_NAME, OK_ADDR base (NULL: none) */
    int nlen;
    int neg;           /* OK_NUM: '-'; OK_NAME: '!' */
    const char *name2; /* a|b */
    int n2len;
    int64_t off;       /* OK_ADDR */
    int nitems;        /* OK_VEC, OK_PAREN */
    const char *items[8];
    int ilens[8];
    int inums[8];      /* 1: the item is a number */
    int line;
} operand;

static int
parse_operand(P *p, operand *o)
{
    memset(o, 0, sizeof *o);
    tok *t = peek(p);
    o->line = t->line;
    if (is_punct(t, '[')) {
        p->i++;
        o->kind = OK_ADDR;
        t = peek(p);
        if (t->kind == TK_ID) {
            o->name = t->p;
            o->nlen = t->len;
            p->i++;
        }
        else if (t->kind == TK_NUM) {
            uint64_t v;
            if (literal(t->p, t->len, 0, TY_U64, &v) < 0)
                return fail(p, t->line, "the emulator could not read the address '%.*s'", t->len, t->p);
            o->off = (int64_t)v;
            p->i++;
        }
        while (is_punct(peek(p), '+') || is_punct(peek(p), '-')) {
            int neg = is_punct(peek(p), '-');
            p->i++;
            if (is_punct(peek(p), '-')) {
                neg = !neg;
                p->i++;
            }
            t = peek(p);
            uint64_t v;
            if (t->kind != TK_NUM || literal(t->p, t->len, 0, TY_U64, &v) < 0)
                return fail(p, t->line, "the emulator could not read an address offset '%.*s'",
                            t->len, t->p);
            o->off += neg ? -(int64_t)v : (int64_t)v;
            p->i++;
        }
        return expect(p, ']');
    }
    if (is_punct(t, '{') || is_punct(t, '(')) {
        char close = is_punct(t, '{') ? '}' : ')';
        o->kind = close == '}' ? OK_VEC : OK_PAREN;
        p->i++;
        while (!is_punct(peek(p), close)) {
            t = peek(p);
            if (t->kind == TK_END || o->nitems == 8)
                return fail(p, t->line, "the emulator could not read a vector operand");
            int neg = 0;
            if (is_punct(t, '-')) {
                neg = 1;
                p->i++;
                t = peek(p);
            }
            if (t->kind != TK_ID && t->kind != TK_NUM)
                return fail(p, t->line, "the emulator could not read '%.*s' in a vector operand",
                            t->len, t->p);
            o->items[o->nitems] = neg ? t->p - 1 : t->p;
            o->ilens[o->nitems] = neg ? t->len + 1 : t->len;
            o->inums[o->nitems] = t->kind == TK_NUM;
            o->nitems++;
            p->i++;
            if (is_punct(peek(p), ','))
                p->i++;
        }
        p->i++;
        return 0;
    }
    if (is_punct(t, '-')) {
        o->neg = 1;
        p->i++;
        t = peek(p);
    }
    if (is_punct(t, '!')) {
        o->neg = 1;
        p->i++;
        t = peek(p);
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
        if (is_punct(peek(p), '|')) {
            p->i++;
            t = peek(p);
            o->name2 = t->p;
            o->n2len = t->len;
            p->i++;
        }
        /* sym+offset outside brackets (mov.u64 %rd, sym+8) */
        if (is_punct(peek(p), '+') && peek(p)[1].kind == TK_NUM) {
            p->i++;
            uint64_t v = 0;
            literal(peek(p)->p, peek(p)->len, 0, TY_U64, &v);
            o->off = (int64_t)v;
            p->i++;
        }
        return 0;
    }
    return fail(p, t->line, "the emulator could not read the operand '%.*s'", t->len, t->p);
}

static sym *
lookup(P *p, const char *name, int len)
{
    sym *s = sym_find(&p->fn, name, len);
    return s ? s : sym_find(&p->mod, name, len);
}

/* The slot that holds `name` (a register, special register, or a symbol's address),
 * or -1 with an error. */
static int
name_slot(P *p, const char *name, int len, int64_t off, int line)
{
    sym *s = lookup(p, name, len);
    if (s) {
        switch (s->kind) {
        case S_REG:
        case S_CPARAM:
            return (int)s->value;
        case S_SHARED:
        case S_LOCAL:
        case S_GLOBAL:
        case S_KPARAM:
            return const_slot(p, (uint64_t)(s->value + off));
        case S_DYNSHARED:
            return add_prefill(p, SR_DYNBASE, (uint64_t)off);
        default:
            break;
        }
        return fail(p, line, "the emulator cannot use '%.*s' as a value", len, name);
    }
    if (len == 1 && name[0] == '_')
        return new_slot(p);
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) {
        if ((int)strlen(specials[i].name) == len && memcmp(specials[i].name, name, (size_t)len) == 0)
            return specials[i].kind == SR_ZERO || specials[i].kind == SR_ONE
                       ? const_slot(p, specials[i].kind == SR_ONE)
                       : add_prefill(p, specials[i].kind, 0);
    }
    /* %envreg0..31: the driver's environment registers, zero outside cooperative launches */
    if (len > 7 && memcmp(name, "%envreg", 7) == 0)
        return const_slot(p, 0);
    if ((len == 6 && memcmp(name, "%clock", 6) == 0) || (len == 8 && memcmp(name, "%clock64", 8) == 0) ||
        (len == 12 && memcmp(name, "%globaltimer", 12) == 0))
        return fail(p, line, "'%.*s' is read with mov only", len, name);
    if (name[0] == '%')
        return fail(p, line, "the emulator does not support the special register '%.*s'", len, name);
    return fail(p, line, "the emulator does not know the register or symbol '%.*s'", len, name);
}

/* A source operand of `type` as a slot. */
static int
src(P *p, const operand *o, int type)
{
    uint64_t v;
    if (o->kind == OK_NUM) {
        if (literal(o->name, o->nlen, o->neg, type, &v) < 0)
            return fail(p, o->line, "the emulator could not read the number '%.*s'", o->nlen, o->name);
        return const_slot(p, v);
    }
    if (o->kind == OK_NAME)
        return name_slot(p, o->name, o->nlen, o->off, o->line);
    return fail(p, o->line, "the emulator expected a register or a number here");
}

static int
dst(P *p, const operand *o)
{
    if (o->kind != OK_NAME)
        return fail(p, o->line, "the emulator expected a register to write");
    sym *s = lookup(p, o->name, o->nlen);
    if (s && (s->kind == S_REG || s->kind == S_CPARAM))
        return (int)s->value;
    if (o->nlen == 1 && o->name[0] == '_')
        return new_slot(p);
    return fail(p, o->line, "the emulator cannot write to '%.*s'", o->nlen, o->name);
}

/* A predicate operand: its number, or -1. Constant predicates are not used by NVRTC. */
static int
pred(P *p, const char *name, int len, int line)
{
    sym *s = lookup(p, name, len);
    if (s && s->kind == S_PRED)
        return (int)s->value;
    if (len == 1 && name[0] == '_')
        return p->f->npreds++;
    return fail(p, line, "'%.*s' is not a predicate register", len, name);
}

/* ------------------------------------------------------------------ opcodes */

typedef struct {
    int types[4], ntypes;
    int rnd, ftz, sat, approx, cc;
    int space;
    int vec;
    int cmp;
    int hi, lo, wide;
    int atom;
    int boolop; /* setp .and/.or/.xor */
    int shfl;
    int vote;
    int bar_arrive, bar_red;
    int shf_left, shf_clamp;
    int to;
    int uni;
    int testp;
    int any, all;
    int shiftamt;
} mods;

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
    "L2::evict_last", "L1::evict_unchanged", "unified",
};

static int
parse_mods(P *p, const tok *op, const char *base, int nbase, mods *m, int line)
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
        int ty = type_of(s, len, NULL);
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
            return fail(p, line, "the emulator does not support the PTX instruction '%.*s' "
                                 "(its modifier .%.*s)", op->len, op->p, len, s);
#undef M
        s = e;
    }
    return 0;
}

static int
unsupported(P *p, const tok *op, int line)
{
    return fail(p, line, "the emulator does not support the PTX instruction '%.*s'", op->len, op->p);
}

/* Generic integer and float operations by name. */
static const struct {
    const char *name;
    int base;
    int nsrc;
} alu_names[] = {
    {"add", B_ADD, 2}, {"sub", B_SUB, 2}, {"mul", B_MUL, 2}, {"mad", B_MAD, 3}, {"div", B_DIV, 2},
    {"rem", B_REM, 2}, {"abs", B_ABS, 1}, {"neg", B_NEG, 1}, {"min", B_MIN, 2}, {"max", B_MAX, 2},
    {"and", B_AND, 2}, {"or", B_OR, 2}, {"xor", B_XOR, 2}, {"not", B_NOT, 1}, {"cnot", B_CNOT, 1},
    {"shl", B_SHL, 2}, {"shr", B_SHR, 2}, {"popc", B_POPC, 1}, {"clz", B_CLZ, 1},
    {"brev", B_BREV, 1}, {"bfind", B_BFIND, 1}, {"bfe", B_BFE, 3}, {"bfi", B_BFI, 4},
    {"prmt", B_PRMT, 3}, {"lop3", B_LOP3, 3}, {"shf", B_SHFL_L, 3}, {"fma", B_FMA, 3},
    {"rcp", B_RCP, 1}, {"sqrt", B_SQRT, 1}, {"rsqrt", B_RSQRT, 1}, {"sin", B_SIN, 1},
    {"cos", B_COS, 1}, {"lg2", B_LG2, 1}, {"ex2", B_EX2, 1}, {"tanh", B_TANH, 1},
    {"copysign", B_COPYSIGN, 2}, {"testp", B_TESTP, 1}, {"sad", B_SAD, 3}, {"mul24", B_MUL24, 2},
    {"mad24", B_MAD24, 3}, {"dp4a", B_DP4A, 3}, {"dp2a", B_DP2A, 3}, {"addc", B_ADDC, 2},
    {"subc", B_SUBC, 2}, {"madc", B_MADC, 3},
};

static int
is_signed(int t)
{
    return t == TY_S8 || t == TY_S16 || t == TY_S32 || t == TY_S64;
}

/* The specialized opcode for a common (base, type, mods), or OP_INT / OP_FLT. */
static int
specialize(int base, int type, const mods *m)
{
    int sz = emu_type_size(type);
    if (type == TY_F32 && !m->ftz && !m->sat && (m->rnd == RND_RN || m->rnd == RND_NONE)) {
        switch (base) {
        case B_ADD: return OP_FADD32;
        case B_SUB: return OP_FSUB32;
        case B_MUL: return OP_FMUL32;
        case B_FMA: return OP_FFMA32;
        case B_MAD: return m->rnd == RND_RN ? OP_FFMA32 : OP_FLT;
        }
    }
    if (type == TY_F64 && (m->rnd == RND_RN || m->rnd == RND_NONE) && !m->sat) {
        switch (base) {
        case B_ADD: return OP_FADD64;
        case B_SUB: return OP_FSUB64;
        case B_MUL: return OP_FMUL64;
        case B_FMA: case B_MAD: return OP_FFMA64;
        }
    }
    if (is_float(type))
        return OP_FLT;
    if (m->sat || m->cc)
        return OP_INT;
    if (sz == 4) {
        switch (base) {
        case B_ADD: return OP_ADD32;
        case B_SUB: return OP_SUB32;
        case B_MUL: return m->lo ? OP_MUL32 : m->wide ? (is_signed(type) ? OP_MULWIDE_S32 : OP_MULWIDE_U32) : OP_INT;
        case B_MAD: return m->lo ? OP_MAD32 : OP_INT;
        case B_SHL: return OP_SHL32;
        case B_SHR: return is_signed(type) ? OP_SHR_S32 : OP_SHR_U32;
        case B_AND: return OP_AND32;
        case B_OR: return OP_OR32;
        case B_XOR: return OP_XOR32;
        }
    }
    if (sz == 8) {
        switch (base) {
        case B_ADD: return OP_ADD64;
        case B_SUB: return OP_SUB64;
        case B_MUL: return m->lo ? OP_MUL64 : OP_INT;
        case B_MAD: return m->lo ? OP_MAD64 : OP_INT;
        case B_SHL: return OP_SHL64;
        case B_SHR: return is_signed(type) ? OP_SHR_S64 : OP_SHR_U64;
        case B_AND: return OP_AND64;
        case B_OR: return OP_OR64;
        case B_XOR: return OP_XOR64;
        }
    }
    return OP_INT;
}

/* Address operand -> slot in s[3] and offset in imm; the space's kind of symbol folded in. */
static int
address(P *p, emu_inst *in, const operand *o, int *is_kparam)
{
    if (o->kind != OK_ADDR)
        return fail(p, o->line, "the emulator expected an address [..] here");
    in->imm = o->off;
    in->addr = p->zero_slot;
    if (is_kparam)
        *is_kparam = 0;
    if (o->name == NULL)
        return 0;
    sym *s = lookup(p, o->name, o->nlen);
    if (s == NULL)
        return fail(p, o->line, "the emulator does not know '%.*s'", o->nlen, o->name);
    switch (s->kind) {
    case S_REG:
        in->addr = (int)s->value;
        return 0;
    case S_SHARED:
    case S_LOCAL:
    case S_GLOBAL:
        in->imm += s->value;
        return 0;
    case S_KPARAM:
        in->imm += s->value;
        if (is_kparam)
            *is_kparam = 1;
        return 0;
    case S_DYNSHARED:
        in->addr = add_prefill(p, SR_DYNBASE, 0);
        return 0;
    case S_CPARAM:
        if (is_kparam)
            *is_kparam = 2;
        in->addr = (int)s->value;
        return 0;
    }
    return fail(p, o->line, "the emulator cannot use '%.*s' as an address", o->nlen, o->name);
}

static int
parse_call(P *p, const tok *op, int line, operand *ops, int nops, int guard, int gneg)
{
    /* call[.uni] (ret), fname, (args); or call fname, (args); */
    int k = 0;
    operand *ret = NULL;
    if (k < nops && ops[k].kind == OK_PAREN)
        ret = &ops[k++];
    if (k >= nops || ops[k].kind != OK_NAME)
        return unsupported(p, op, line);
    operand *fn = &ops[k++];
    operand *args = k < nops ? &ops[k] : NULL;
    if (fn->nlen == 7 && memcmp(fn->name, "vprintf", 7) == 0 && args && args->nitems == 2) {
        emu_inst *in = emit(p, line);
        if (in == NULL)
            return -1;
        in->op = OP_PRINTF;
        in->guard = guard;
        in->gneg = (uint8_t)gneg;
        sym *a = lookup(p, args->items[0], args->ilens[0]);
        sym *b = lookup(p, args->items[1], args->ilens[1]);
        if (a == NULL || b == NULL || a->kind != S_CPARAM || b->kind != S_CPARAM)
            return unsupported(p, op, line);
        in->s[0] = (int)a->value;
        in->s[1] = (int)b->value;
        if (ret && ret->nitems == 1) {
            sym *r = lookup(p, ret->items[0], ret->ilens[0]);
            if (r && r->kind == S_CPARAM)
                in->d[0] = (int)r->value;
        }
        return 0;
    }
    return fail(p, line, "the emulator does not support the PTX instruction '%.*s' to '%.*s' (calls to "
                         "device functions that NVRTC did not inline; mark them __forceinline__)",
                op->len, op->p, fn->nlen, fn->name);
}

static int
parse_instruction(P *p)
{
    int guard = -1, gneg = 0;
    tok *t = peek(p);
    int line = t->line;
    if (is_punct(t, '@')) {
        p->i++;
        if (is_punct(peek(p), '!')) {
            gneg = 1;
            p->i++;
        }
        t = peek(p);
        if ((guard = pred(p, t->p, t->len, t->line)) < 0)
            return -1;
        p->i++;
        t = peek(p);
    }
    if (t->kind != TK_ID)
        return fail(p, t->line, "the emulator could not read '%.*s'", t->len, t->p);
    tok *op = t;
    p->i++;
    operand ops[8];
    int nops = 0;
    while (!is_punct(peek(p), ';')) {
        if (peek(p)->kind == TK_END || nops == 8)
            return fail(p, line, "the emulator could not read the operands of '%.*s'", op->len, op->p);
        if (parse_operand(p, &ops[nops++]) < 0)
            return -1;
        if (is_punct(peek(p), ','))
            p->i++;
    }
    p->i++;

    int nbase = 0;
    while (nbase < op->len && op->p[nbase] != '.')
        nbase++;
    const char *base = op->p;
#define B(str) (nbase == (int)sizeof(str) - 1 && memcmp(base, str, sizeof(str) - 1) == 0)
    mods m;
    if (B("call"))
        return parse_call(p, op, line, ops, nops, guard, gneg);
    if (parse_mods(p, op, base, nbase, &m, line) < 0)
        return -1;
    int type = m.ntypes ? m.types[m.ntypes - 1] : TY_NONE;
    emu_inst *in = emit(p, line);
    if (in == NULL)
        return -1;
    in->guard = guard;
    in->gneg = (uint8_t)gneg;
    in->type = (uint8_t)type;
    in->mod = (uint8_t)(m.rnd | (m.ftz ? M_FTZ : 0) | (m.sat ? M_SAT : 0) | (m.approx ? M_APPROX : 0) |
                        (m.cc ? M_CC : 0));

    if (B("mov")) {
        if (nops != 2)
            return unsupported(p, op, line);
        if (type == TY_PRED) {
            in->op = OP_MOVP;
            if ((in->d[0] = pred(p, ops[0].name, ops[0].nlen, line)) < 0 ||
                (in->s[0] = pred(p, ops[1].name, ops[1].nlen, line)) < 0)
                return -1;
            return 0;
        }
        int sz = emu_type_size(type);
        if (ops[1].kind == OK_VEC) { /* pack */
            in->op = OP_PACK;
            in->imm = sz * 8 / ops[1].nitems;
            in->vec = (uint8_t)ops[1].nitems;
            for (int k = 0; k < ops[1].nitems && k < 4; k++) {
                operand o = {.kind = ops[1].inums[k] ? OK_NUM : OK_NAME, .name = ops[1].items[k],
                             .nlen = ops[1].ilens[k], .line = line};
                if ((in->s[k] = src(p, &o, TY_U64)) < 0)
                    return -1;
            }
            return (in->d[0] = dst(p, &ops[0])) < 0 ? -1 : 0;
        }
        if (ops[0].kind == OK_VEC) { /* unpack */
            in->op = OP_UNPACK;
            in->imm = sz * 8 / ops[0].nitems;
            in->vec = (uint8_t)ops[0].nitems;
            for (int k = 0; k < ops[0].nitems && k < 4; k++) {
                operand o = {.kind = OK_NAME, .name = ops[0].items[k], .nlen = ops[0].ilens[k], .line = line};
                if ((in->d[k] = dst(p, &o)) < 0)
                    return -1;
            }
            return (in->s[0] = src(p, &ops[1], type)) < 0 ? -1 : 0;
        }
        if (ops[1].kind == OK_NAME && ops[1].name[0] == '%') {
            static const struct {
                const char *name;
                int op;
            } clocks[] = {{"%clock", OP_CLOCK}, {"%clock64", OP_CLOCK64}, {"%globaltimer", OP_GLOBALTIMER}};
            for (size_t k = 0; k < sizeof clocks / sizeof *clocks; k++) {
                if ((int)strlen(clocks[k].name) == ops[1].nlen && memcmp(clocks[k].name, ops[1].name, (size_t)ops[1].nlen) == 0) {
                    in->op = (uint16_t)clocks[k].op;
                    return (in->d[0] = dst(p, &ops[0])) < 0 ? -1 : 0;
                }
            }
        }
        in->op = OP_MOV;
        if ((in->d[0] = dst(p, &ops[0])) < 0 || (in->s[0] = src(p, &ops[1], type)) < 0)
            return -1;
        return 0;
    }
    if (B("setp") || B("set")) {
        /* setp.cmp[.bool].type p[|q], a, b[, c] */
        int cmp = m.cmp;
        int boolop = m.boolop;
        in->op = B("setp") ? OP_SETP : OP_SET;
        if (B("set")) {
            /* set.cmp.dtype.stype */
            in->type = (uint8_t)(m.ntypes > 1 ? m.types[1] : type);
            in->type2 = (uint8_t)m.types[0];
        }
        in->imm = cmp;
        in->base = (uint8_t)boolop;
        if (nops < 3 || cmp == 0)
            return unsupported(p, op, line);
        int vt = in->type;
        if ((in->s[0] = src(p, &ops[1], vt)) < 0 || (in->s[1] = src(p, &ops[2], vt)) < 0)
            return -1;
        if (boolop) {
            if (nops < 4 || (in->s[2] = pred(p, ops[3].name, ops[3].nlen, line)) < 0)
                return -1;
            in->vec = (uint8_t)ops[3].neg; /* negated third operand */
        }
        if (in->op == OP_SET) {
            if ((in->d[0] = dst(p, &ops[0])) < 0)
                return -1;
            return 0;
        }
        if ((in->d[0] = pred(p, ops[0].name, ops[0].nlen, line)) < 0)
            return -1;
        in->d[1] = -1;
        if (ops[0].name2 && (in->d[1] = pred(p, ops[0].name2, ops[0].n2len, line)) < 0)
            return -1;
        return 0;
    }
    if (B("selp")) {
        in->op = OP_SELP;
        if (nops != 4 || (in->d[0] = dst(p, &ops[0])) < 0 || (in->s[0] = src(p, &ops[1], type)) < 0 ||
            (in->s[1] = src(p, &ops[2], type)) < 0 ||
            (in->s[2] = pred(p, ops[3].name, ops[3].nlen, line)) < 0)
            return -1;
        in->vec = (uint8_t)ops[3].neg;
        return 0;
    }
    if (B("slct")) {
        in->op = OP_SLCT;
        in->type2 = (uint8_t)(m.ntypes > 1 ? m.types[1] : type);
        in->type = (uint8_t)m.types[0];
        if (nops != 4 || (in->d[0] = dst(p, &ops[0])) < 0 || (in->s[0] = src(p, &ops[1], in->type)) < 0 ||
            (in->s[1] = src(p, &ops[2], in->type)) < 0 || (in->s[2] = src(p, &ops[3], in->type2)) < 0)
            return -1;
        return 0;
    }
    if ((B("and") || B("or") || B("xor") || B("not")) && type == TY_PRED) {
        in->op = B("and") ? OP_PAND : B("or") ? OP_POR : B("xor") ? OP_PXOR : OP_PNOT;
        if ((in->d[0] = pred(p, ops[0].name, ops[0].nlen, line)) < 0 ||
            (in->s[0] = pred(p, ops[1].name, ops[1].nlen, line)) < 0)
            return -1;
        in->vec = (uint8_t)(ops[1].neg | (nops > 2 ? ops[2].neg << 1 : 0));
        if (nops > 2 && (in->s[1] = pred(p, ops[2].name, ops[2].nlen, line)) < 0)
            return -1;
        return 0;
    }
    if (B("cvt")) {
        if (m.ntypes != 2 || m.sat > 1)
            return unsupported(p, op, line);
        in->op = OP_CVT;
        in->type = (uint8_t)m.types[0];
        in->type2 = (uint8_t)m.types[1];
        /* the common integer widenings and narrowings run without the generic path */
        int dt = in->type, st = in->type2;
        if (!m.sat && (dt == TY_U64 || dt == TY_S64) && st == TY_U32)
            in->base = 1;
        else if (!m.sat && (dt == TY_U64 || dt == TY_S64) && st == TY_S32)
            in->base = 2;
        else if (!m.sat && (dt == TY_U32 || dt == TY_S32) && (st == TY_U64 || st == TY_S64))
            in->base = 3;
        if (nops != 2 || (in->d[0] = dst(p, &ops[0])) < 0 || (in->s[0] = src(p, &ops[1], in->type2)) < 0)
            return -1;
        return 0;
    }
    if (B("cvta")) {
        static const int ops_from[] = {[SP_SHARED] = OP_CVTA_SHARED, [SP_LOCAL] = OP_CVTA_LOCAL,
                                       [SP_PARAM] = OP_CVTA_PARAM};
        static const int ops_to[] = {[SP_SHARED] = OP_CVTA_TO_SHARED, [SP_LOCAL] = OP_CVTA_TO_LOCAL,
                                     [SP_PARAM] = 0};
        if (m.space == SP_GLOBAL || m.space == SP_CONST)
            in->op = OP_MOV;
        else if (m.space == SP_SHARED || m.space == SP_LOCAL || (m.space == SP_PARAM && !m.to))
            in->op = (uint16_t)(m.to ? ops_to[m.space] : ops_from[m.space]);
        else
            return unsupported(p, op, line);
        if (nops != 2 || (in->d[0] = dst(p, &ops[0])) < 0 || (in->s[0] = src(p, &ops[1], TY_U64)) < 0)
            return -1;
        return 0;
    }
    if (B("ld") || B("ldu") || B("st")) {
        int isst = B("st");
        operand *addr = isst ? &ops[0] : &ops[1];
        operand *val = isst ? &ops[1] : &ops[0];
        if (nops != 2 || type == TY_NONE || type == TY_PRED)
            return unsupported(p, op, line);
        int kparam = 0;
        if (address(p, in, addr, &kparam) < 0)
            return -1;
        in->space = (uint8_t)m.space;
        in->vec = (uint8_t)m.vec;
        if (kparam == 2) { /* a call's own parameter: a register in disguise */
            if (val->kind == OK_VEC)
                return unsupported(p, op, line);
            in->op = OP_MOV;
            if (isst) {
                in->d[0] = in->addr;
                if ((in->s[0] = src(p, val, type)) < 0)
                    return -1;
            }
            else {
                in->s[0] = in->addr;
                if ((in->d[0] = dst(p, val)) < 0)
                    return -1;
            }
            return 0;
        }
        if (kparam == 1 && !isst && in->addr == p->zero_slot && m.vec == 1) {
            in->op = OP_LDPARAM;
            in->space = SP_PARAM;
            return (in->d[0] = dst(p, val)) < 0 ? -1 : 0;
        }
        if (m.space == SP_PARAM && isst)
            return unsupported(p, op, line);
        in->op = isst ? OP_ST : OP_LD;
        int n = m.vec;
        for (int k = 0; k < n; k++) {
            operand o;
            if (val->kind == OK_VEC) {
                if (val->nitems != n)
                    return unsupported(p, op, line);
                o = (operand){.kind = val->inums[k] ? OK_NUM : OK_NAME, .name = val->items[k],
                              .nlen = val->ilens[k], .line = line};
                if (o.name[0] == '-') {
                    o.neg = 1;
                    o.name++;
                    o.nlen--;
                }
            }
            else if (n == 1)
                o = *val;
            else
                return unsupported(p, op, line);
            if (isst ? (in->s[k] = src(p, &o, type)) < 0 : (in->d[k] = dst(p, &o)) < 0)
                return -1;
        }
        return 0;
    }
    if (B("atom") || B("red")) {
        in->op = B("atom") ? OP_ATOM : OP_RED;
        in->type2 = (uint8_t)m.atom;
        in->space = (uint8_t)m.space;
        if (m.atom == 0 || m.vec != 1 || (type != TY_U32 && type != TY_S32 && type != TY_U64 &&
                                          type != TY_S64 && type != TY_F32 && type != TY_F64))
            return unsupported(p, op, line);
        int k = 0;
        if (in->op == OP_ATOM && (in->d[0] = dst(p, &ops[k++])) < 0)
            return -1;
        if (address(p, in, &ops[k++], NULL) < 0)
            return -1;
        if ((in->s[0] = src(p, &ops[k++], type)) < 0)
            return -1;
        if (m.atom == ATOM_CAS && (k >= nops || (in->s[1] = src(p, &ops[k++], type)) < 0))
            return -1;
        return 0;
    }
    if (B("bra")) {
        in->op = OP_BRA;
        if (nops != 1 || ops[0].kind != OK_NAME)
            return unsupported(p, op, line);
        if (p->nfix == p->capfix) {
            int cap = p->capfix ? p->capfix * 2 : 64;
            fixup *v = realloc(p->fix, (size_t)cap * sizeof *v);
            if (v == NULL)
                return fail(p, line, "out of memory");
            p->fix = v;
            p->capfix = cap;
        }
        p->fix[p->nfix++] = (fixup){ops[0].name, ops[0].nlen, p->f->ncode - 1};
        return 0;
    }
    if (B("ret") || B("exit")) {
        in->op = OP_EXIT;
        return 0;
    }
    if (B("bar") || B("barrier")) {
        /* bar.warp.sync */
        if (op->len > nbase + 5 && memcmp(op->p + nbase, ".warp", 5) == 0) {
            in->op = OP_BARWARP;
            return 0;
        }
        if (m.bar_arrive || m.bar_red || nops > 1)
            return unsupported(p, op, line);
        in->op = OP_BAR;
        return 0;
    }
    if (B("membar") || B("fence")) {
        in->op = OP_FENCE;
        return 0;
    }
    if (B("nanosleep") || B("prefetch") || B("prefetchu") || B("pmevent")) {
        in->op = OP_NOP;
        return 0;
    }
    if (B("trap") || B("brkpt")) {
        in->op = OP_TRAP;
        return 0;
    }
    if (B("shfl")) {
        if (!m.shfl || nops != 5)
            return unsupported(p, op, line);
        in->op = OP_SHFL;
        in->type2 = (uint8_t)m.shfl;
        if ((in->d[0] = dst(p, &ops[0])) < 0 || (in->s[0] = src(p, &ops[1], TY_U32)) < 0 ||
            (in->s[1] = src(p, &ops[2], TY_U32)) < 0 || (in->s[2] = src(p, &ops[3], TY_U32)) < 0)
            return -1;
        in->d[1] = -1;
        if (ops[0].name2 && (in->d[1] = pred(p, ops[0].name2, ops[0].n2len, line)) < 0)
            return -1;
        return 0;
    }
    if (B("vote")) {
        if (!m.vote && !(op->len >= nbase + 4 && memcmp(op->p + nbase, ".uni", 4) == 0))
            return unsupported(p, op, line);
        in->op = OP_VOTE;
        in->type2 = (uint8_t)(m.vote ? m.vote : VOTE_UNI);
        if (nops < 2)
            return unsupported(p, op, line);
        if (in->type2 == VOTE_BALLOT) {
            if ((in->d[0] = dst(p, &ops[0])) < 0)
                return -1;
        }
        else if ((in->d[0] = pred(p, ops[0].name, ops[0].nlen, line)) < 0)
            return -1;
        if ((in->s[0] = pred(p, ops[1].name, ops[1].nlen, line)) < 0)
            return -1;
        in->vec = (uint8_t)ops[1].neg;
        return 0;
    }
    if (B("activemask")) {
        in->op = OP_ACTIVEMASK;
        return (in->d[0] = dst(p, &ops[0])) < 0 ? -1 : 0;
    }
    if (B("match")) {
        if (nops < 3 || !(m.any || m.all))
            return unsupported(p, op, line);
        in->op = m.any ? OP_MATCH_ANY : OP_MATCH_ALL;
        if ((in->d[0] = dst(p, &ops[0])) < 0 || (in->s[0] = src(p, &ops[1], type)) < 0)
            return -1;
        in->d[1] = -1;
        if (ops[0].name2 && (in->d[1] = pred(p, ops[0].name2, ops[0].n2len, line)) < 0)
            return -1;
        return 0;
    }
    for (size_t k = 0; k < sizeof alu_names / sizeof *alu_names; k++) {
        if ((int)strlen(alu_names[k].name) == nbase && memcmp(alu_names[k].name, base, (size_t)nbase) == 0) {
            int b = alu_names[k].base;
            if (b == B_MUL && m.hi) b = B_MULHI;
            if (b == B_MUL && m.wide) b = B_MULWIDE;
            if (b == B_MAD && m.hi) b = B_MADHI;
            if (b == B_MAD && m.wide) b = B_MADWIDE;
            if (b == B_SHFL_L && !m.shf_left) b = B_SHFL_R;
            if (b == B_MAD && is_float(type) && !m.rnd)
                return unsupported(p, op, line);
            if ((b == B_SIN || b == B_COS || b == B_LG2 || b == B_EX2 || b == B_TANH) && !m.approx)
                return unsupported(p, op, line);
            if (b == B_BFIND && m.shiftamt)
                return unsupported(p, op, line);
            if (type == TY_F16X2 || type == TY_BF16X2 || type == TY_BF16)
                return unsupported(p, op, line);
            in->base = (uint8_t)b;
            in->op = (uint16_t)specialize(b, type, &m);
            if (b == B_TESTP)
                in->imm = m.testp;
            if (b == B_SHFL_L || b == B_SHFL_R)
                in->imm = m.shf_clamp;
            if (b == B_MUL24 || b == B_MAD24) {
                if (m.hi)
                    return unsupported(p, op, line);
            }
            if ((b == B_DP4A || b == B_DP2A)) {
                if (m.ntypes != 2)
                    return unsupported(p, op, line);
                in->type = (uint8_t)m.types[0];
                in->type2 = (uint8_t)m.types[1];
                if (b == B_DP2A)
                    return unsupported(p, op, line);
            }
            int ns = alu_names[k].nsrc;
            if (b == B_LOP3) {
                if (nops != 5)
                    return unsupported(p, op, line);
                uint64_t lut;
                if (ops[4].kind != OK_NUM || literal(ops[4].name, ops[4].nlen, 0, TY_U32, &lut) < 0)
                    return unsupported(p, op, line);
                in->imm = (int64_t)lut;
            }
            else if (nops != ns + 1)
                return unsupported(p, op, line);
            if (b == B_TESTP) {
                if ((in->d[0] = pred(p, ops[0].name, ops[0].nlen, line)) < 0)
                    return -1;
            }
            else if ((in->d[0] = dst(p, &ops[0])) < 0)
                return -1;
            for (int j = 0; j < ns; j++) {
                int st = type;
                if ((b == B_SHL || b == B_SHR || b == B_BFE || b == B_SHFL_L || b == B_SHFL_R) && j > 0)
                    st = TY_U32;
                if (b == B_BFI && j > 1)
                    st = TY_U32;
                if (b == B_PRMT)
                    st = TY_U32;
                if ((b == B_MULWIDE || b == B_MADWIDE) && j == 2)
                    st = (type == TY_S32 ? TY_S64 : type == TY_U32 ? TY_U64 : type == TY_S16 ? TY_S32 : TY_U32);
                if ((in->s[j] = src(p, &ops[j + 1], st)) < 0)
                    return -1;
            }
            return 0;
        }
    }
#undef B
    return unsupported(p, op, line);
}

/* ------------------------------------------------------------------ declarations */

/* `.reg .type %r<N>;` or `.reg .type a, b;` */
static int
parse_reg(P *p)
{
    p->i++;
    tok *t = peek(p);
    int type = TY_NONE;
    while (t->kind == TK_ID && t->p[0] == '.') {
        int ty = type_of(t->p + 1, t->len - 1, NULL);
        if (ty)
            type = ty;
        else if (!(is(t, ".v2") || is(t, ".v4")))
            return fail(p, t->line, "the emulator does not support registers of type '%.*s'", t->len, t->p);
        else
            return fail(p, t->line, "the emulator does not support vector registers");
        p->i++;
        t = peek(p);
    }
    for (;;) {
        t = peek(p);
        if (t->kind != TK_ID)
            return fail(p, t->line, "the emulator could not read a register declaration");
        const char *name = t->p;
        int len = t->len;
        p->i++;
        long count = -1;
        if (is_punct(peek(p), '<')) {
            p->i++;
            count = strtol(peek(p)->p, NULL, 10);
            p->i++;
            if (expect(p, '>') < 0)
                return -1;
        }
        char buf[256];
        if (len > 200)
            return fail(p, t->line, "register name too long");
        for (long k = count < 0 ? -1 : 0; k < (count < 0 ? 0 : count); k++) {
            int n = len;
            memcpy(buf, name, (size_t)len);
            if (k >= 0)
                n += snprintf(buf + len, sizeof buf - (size_t)len, "%ld", k);
            sym *s = type == TY_PRED ? sym_add(&p->fn, buf, n, S_PRED, p->f->npreds++, type)
                                    : sym_add(&p->fn, buf, n, S_REG, new_slot(p), type);
            if (s == NULL)
                return fail(p, t->line, "out of memory");
        }
        if (is_punct(peek(p), ',')) {
            p->i++;
            continue;
        }
        return expect(p, ';');
    }
}

/* `[.align N] .type name[N][M]...` after a state space; the bytes and alignment. */
static int
parse_var_shape(P *p, const char **name, int *nlen, size_t *size, size_t *align, int *type,
                int *unsized)
{
    tok *t = peek(p);
    *align = 0;
    *type = TY_NONE;
    int esize = 0;
    *unsized = 0;
    while (t->kind == TK_ID && t->p[0] == '.') {
        if (is(t, ".align")) {
            p->i++;
            *align = (size_t)strtoul(peek(p)->p, NULL, 0);
        }
        else if (is(t, ".ptr") || is(t, ".global") || is(t, ".shared") || is(t, ".const") ||
                 is(t, ".local") || is(t, ".v2") || is(t, ".v4")) {
            if (is(t, ".v2") || is(t, ".v4"))
                esize = esize * (t->p[2] - '0'); /* type usually comes after */
        }
        else {
            int sz;
            int ty = type_of(t->p + 1, t->len - 1, &sz);
            if (ty == TY_NONE)
                return fail(p, t->line, "the emulator does not support the declaration '%.*s'", t->len, t->p);
            *type = ty;
            esize = sz;
        }
        p->i++;
        t = peek(p);
    }
    if (t->kind != TK_ID)
        return fail(p, t->line, "the emulator could not read a variable declaration");
    *name = t->p;
    *nlen = t->len;
    p->i++;
    size_t count = 1;
    while (is_punct(peek(p), '[')) {
        p->i++;
        if (is_punct(peek(p), ']')) {
            *unsized = 1;
            count = 0;
        }
        else {
            count *= (size_t)strtoull(peek(p)->p, NULL, 0);
            p->i++;
        }
        if (expect(p, ']') < 0)
            return -1;
    }
    if (esize == 0)
        esize = 1;
    *size = count * (size_t)esize;
    if (*align == 0)
        *align = (size_t)esize;
    return 0;
}

static size_t
align_up(size_t v, size_t a)
{
    return a ? (v + a - 1) / a * a : v;
}

/* A function-scope .shared/.local declaration. */
static int
parse_local_var(P *p, int space)
{
    int line = peek(p)->line;
    p->i++;
    const char *name;
    int nlen, type, unsized;
    size_t size, align;
    if (parse_var_shape(p, &name, &nlen, &size, &align, &type, &unsized) < 0)
        return -1;
    if (is_punct(peek(p), '='))
        return fail(p, line, "the emulator does not support initialized .shared/.local variables");
    if (expect(p, ';') < 0)
        return -1;
    emu_func *f = p->f;
    if (space == SP_SHARED) {
        if (unsized)
            return sym_add(&p->fn, name, nlen, S_DYNSHARED, 0, 0) ? 0 : -1;
        f->shared_static = align_up(f->shared_static, align);
        if (!sym_add(&p->fn, name, nlen, S_SHARED, (int64_t)f->shared_static, 0))
            return -1;
        f->shared_static += size;
    }
    else {
        f->local_bytes = align_up(f->local_bytes, align);
        if (!sym_add(&p->fn, name, nlen, S_LOCAL, (int64_t)f->local_bytes, 0))
            return -1;
        f->local_bytes += size;
    }
    return 0;
}

/* Parameters of .entry (S_KPARAM with layout) or of a call scope / .func (S_CPARAM). */
static int
parse_param_decl(P *p, int entry)
{
    p->i++; /* .param */
    const char *name;
    int nlen, type, unsized;
    size_t size, align;
    if (parse_var_shape(p, &name, &nlen, &size, &align, &type, &unsized) < 0)
        return -1;
    emu_func *f = p->f;
    if (entry) {
        f->param_bytes = align_up(f->param_bytes, align);
        emu_param *v = realloc(f->params, (size_t)(f->nparams + 1) * sizeof *v);
        if (v == NULL)
            return fail(p, 0, "out of memory");
        f->params = v;
        f->params[f->nparams++] = (emu_param){f->param_bytes, size, align};
        if (!sym_add(&p->fn, name, nlen, S_KPARAM, (int64_t)f->param_bytes, type))
            return -1;
        f->param_bytes += size;
        return 0;
    }
    if (size > 8)
        return fail(p, peek(p)->line, "the emulator does not support call parameters larger than 8 bytes");
    return sym_add(&p->fn, name, nlen, S_CPARAM, new_slot(p), type) ? 0 : -1;
}

static uint32_t
add_line(P *p, int file, int line)
{
    emu_module *m = p->m;
    uint32_t v = ((uint32_t)file << 20) | ((uint32_t)line & 0xfffff);
    if (m->nlines > 0 && m->lines[m->nlines - 1] == v)
        return (uint32_t)m->nlines - 1;
    if (m->nlines == m->caplines) {
        int cap = m->caplines ? m->caplines * 2 : 256;
        uint32_t *n = realloc(m->lines, (size_t)cap * sizeof *n);
        if (n == NULL)
            return 0;
        m->lines = n;
        m->caplines = cap;
    }
    m->lines[m->nlines++] = v;
    return (uint32_t)m->nlines - 1;
}

static int
parse_body(P *p)
{
    if (expect(p, '{') < 0)
        return -1;
    int depth = 1;
    while (depth > 0 && !p->failed) {
        tok *t = peek(p);
        if (t->kind == TK_END)
            return fail(p, t->line, "the PTX ends inside a function");
        if (is_punct(t, '{')) {
            depth++;
            p->i++;
        }
        else if (is_punct(t, '}')) {
            depth--;
            p->i++;
        }
        else if (is(t, ".reg")) {
            if (parse_reg(p) < 0)
                return -1;
        }
        else if (is(t, ".shared")) {
            if (parse_local_var(p, SP_SHARED) < 0)
                return -1;
        }
        else if (is(t, ".local")) {
            if (parse_local_var(p, SP_LOCAL) < 0)
                return -1;
        }
        else if (is(t, ".param")) {
            if (parse_param_decl(p, 0) < 0 || expect(p, ';') < 0)
                return -1;
        }
        else if (is(t, ".loc")) {
            int line = t->line;
            p->i++;
            int file = (int)strtol(peek(p)->p, NULL, 10);
            p->i++;
            int l = (int)strtol(peek(p)->p, NULL, 10);
            p->cur_line = l > 0 ? add_line(p, file, l) : 0;
            skip_line(p, line);
        }
        else if (is(t, ".pragma")) {
            skip_statement(p);
        }
        else if (t->kind == TK_ID && is_punct(&t[1], ':')) {
            if (!sym_add(&p->fn, t->p, t->len, S_LABEL, p->f->ncode, 0))
                return fail(p, t->line, "out of memory");
            p->i += 2;
        }
        else if (t->kind == TK_ID && t->p[0] == '.') {
            return fail(p, t->line, "the emulator does not support the directive '%.*s' in a function",
                        t->len, t->p);
        }
        else if (parse_instruction(p) < 0)
            return -1;
    }
    return p->failed ? -1 : 0;
}

static int
parse_function(P *p, int entry)
{
    /* after .entry / .func */
    tok *t = peek(p);
    int line = t->line;
    emu_func *f = calloc(1, sizeof *f);
    if (f == NULL)
        return fail(p, line, "out of memory");
    p->f = f;
    p->capcode = p->capprefill = 0;
    p->nfix = 0;
    p->cur_line = 0;
    sym_clear(&p->fn);
    f->is_entry = entry;
    f->module = p->m;
    p->zero_slot = const_slot(p, 0);
    if (!entry && is_punct(t, '(')) { /* return parameters */
        p->i++;
        while (!is_punct(peek(p), ')')) {
            if (peek(p)->kind == TK_END || parse_param_decl(p, 0) < 0)
                goto error;
            if (is_punct(peek(p), ','))
                p->i++;
        }
        p->i++;
    }
    t = peek(p);
    if (t->kind != TK_ID)
        goto error;
    f->name = malloc((size_t)t->len + 1);
    if (f->name == NULL)
        goto error;
    memcpy(f->name, t->p, (size_t)t->len);
    f->name[t->len] = '\0';
    p->i++;
    if (is_punct(peek(p), '(')) {
        p->i++;
        while (!is_punct(peek(p), ')')) {
            if (peek(p)->kind == TK_END || !is(peek(p), ".param") || parse_param_decl(p, entry) < 0)
                goto error;
            if (is_punct(peek(p), ','))
                p->i++;
        }
        p->i++;
    }
    /* performance directives */
    while (peek(p)->kind == TK_ID && peek(p)->p[0] == '.') {
        t = peek(p);
        int tl = t->line;
        if (is(t, ".maxntid") || is(t, ".reqntid")) {
            p->i++;
            long prod = 1;
            while (peek(p)->kind == TK_NUM) {
                prod *= strtol(peek(p)->p, NULL, 10);
                p->i++;
                if (is_punct(peek(p), ','))
                    p->i++;
            }
            f->maxntid = (int)prod;
        }
        else {
            p->i++;
            while (peek(p)->line == tl && (peek(p)->kind == TK_NUM || is_punct(peek(p), ',')))
                p->i++;
        }
    }
    if (is_punct(peek(p), ';')) { /* a declaration only */
        p->i++;
        free(f->name);
        free(f->prefill);
        free(f->params);
        free(f->code);
        free(f);
        p->f = NULL;
        return 0;
    }
    if (!entry) {
        /* Device functions that NVRTC kept are rejected only if an entry calls them. */
        int depth = 0;
        do {
            if (is_punct(peek(p), '{'))
                depth++;
            else if (is_punct(peek(p), '}'))
                depth--;
            else if (peek(p)->kind == TK_END)
                goto error;
            p->i++;
        } while (depth > 0);
        free(f->name);
        free(f->prefill);
        free(f->params);
        free(f->code);
        free(f);
        p->f = NULL;
        return 0;
    }
    if (parse_body(p) < 0)
        goto error;
    /* a final exit so execution never runs off the end */
    emu_inst *in = emit(p, peek(p)->line);
    if (in == NULL)
        goto error;
    in->op = OP_EXIT;
    for (int k = 0; k < p->nfix; k++) {
        sym *s = sym_find(&p->fn, p->fix[k].label, p->fix[k].llen);
        if (s == NULL || s->kind != S_LABEL) {
            fail(p, f->code[p->fix[k].inst].ptxline, "the branch target '%.*s' is not a label",
                 p->fix[k].llen, p->fix[k].label);
            goto error;
        }
        f->code[p->fix[k].inst].imm = s->value;
    }
    emu_func **v = realloc(p->m->funcs, (size_t)(p->m->nfuncs + 1) * sizeof *v);
    if (v == NULL)
        goto error;
    p->m->funcs = v;
    p->m->funcs[p->m->nfuncs++] = f;
    f->max_dyn_shared = 48 * 1024 - (int)f->shared_static;
    if (f->max_dyn_shared < 0)
        f->max_dyn_shared = 0;
    p->f = NULL;
    return 0;
error:
    if (!p->failed)
        fail(p, line, "the emulator could not read the function at this line");
    free(f->name);
    free(f->prefill);
    free(f->params);
    free(f->code);
    free(f);
    p->f = NULL;
    return -1;
}

/* A module-scope .global/.const/.shared variable, with an optional initializer. */
static int
parse_global(P *p, int space, int is_extern)
{
    int line = peek(p)->line;
    p->i++;
    const char *name;
    int nlen, type, unsized;
    size_t size, align;
    if (parse_var_shape(p, &name, &nlen, &size, &align, &type, &unsized) < 0)
        return -1;
    if (space == SP_SHARED) {
        if (!unsized && !is_extern)
            return fail(p, line, "the emulator does not support module-scope .shared variables");
        if (!sym_add(&p->mod, name, nlen, S_DYNSHARED, 0, 0))
            return -1;
        return expect(p, ';');
    }
    if (is_extern)
        return fail(p, line, "the emulator cannot link the external variable '%.*s'", nlen, name);
    int esize = emu_type_size(type);
    if (esize == 0)
        esize = 1;
    emu_module *m = p->m;
    emu_global *gv = realloc(m->globals, (size_t)(m->nglobals + 1) * sizeof *gv);
    if (gv == NULL)
        return fail(p, line, "out of memory");
    m->globals = gv;
    emu_global *g = &m->globals[m->nglobals];
    size_t alloc = size ? size : 1;
    g->data = aligned_alloc(256, align_up(alloc, 256));
    g->name = malloc((size_t)nlen + 1);
    if (g->data == NULL || g->name == NULL) {
        free(g->data);
        free(g->name);
        return fail(p, line, "out of memory");
    }
    memset(g->data, 0, align_up(alloc, 256));
    memcpy(g->name, name, (size_t)nlen);
    g->name[nlen] = '\0';
    g->size = size;
    g->space = space;
    m->nglobals++;
    if (!sym_add(&p->mod, name, nlen, S_GLOBAL, (int64_t)(uintptr_t)g->data, type))
        return -1;
    if (is_punct(peek(p), '=')) {
        p->i++;
        size_t k = 0;
        int braces = 0;
        while (!is_punct(peek(p), ';')) {
            tok *t = peek(p);
            if (t->kind == TK_END)
                return fail(p, line, "the PTX ends inside an initializer");
            if (is_punct(t, '{'))
                braces++;
            else if (is_punct(t, '}'))
                braces--;
            else if (t->kind == TK_NUM || is_punct(t, '-')) {
                int neg = 0;
                if (is_punct(t, '-')) {
                    neg = 1;
                    p->i++;
                    t = peek(p);
                }
                uint64_t v;
                if (literal(t->p, t->len, neg, type, &v) < 0)
                    return fail(p, t->line, "the emulator could not read the initializer '%.*s'", t->len, t->p);
                if ((k + 1) * (size_t)esize <= size)
                    memcpy((char *)g->data + k * (size_t)esize, &v, (size_t)esize);
                k++;
            }
            else if (t->kind == TK_ID) {
                /* generic(sym) or sym: an address */
                const char *n = t->p;
                int nl = t->len;
                if (is(t, "generic")) {
                    p->i += 2;
                    n = peek(p)->p;
                    nl = peek(p)->len;
                    p->i++;
                }
                sym *s = sym_find(&p->mod, n, nl);
                if (s == NULL || s->kind != S_GLOBAL)
                    return fail(p, t->line, "the emulator cannot initialize with '%.*s'", nl, n);
                uint64_t v = (uint64_t)s->value;
                if ((k + 1) * (size_t)esize <= size && esize == 8)
                    memcpy((char *)g->data + k * 8, &v, 8);
                k++;
            }
            p->i++;
        }
        (void)braces;
    }
    char origin[160];
    snprintf(origin, sizeof origin, "the module variable %s", g->name);
    if (emu_registry_add((uint64_t)(uintptr_t)g->data, size, 3, origin) < 0)
        return fail(p, line, "out of memory");
    return expect(p, ';');
}

static void
add_file(P *p, int idx, const tok *s)
{
    emu_module *m = p->m;
    if (idx < 0 || idx >= 4096)
        return;
    if (idx >= m->nfiles) {
        char **v = realloc(m->files, (size_t)(idx + 1) * sizeof *v);
        if (v == NULL)
            return;
        for (int k = m->nfiles; k <= idx; k++)
            v[k] = NULL;
        m->files = v;
        m->nfiles = idx + 1;
    }
    free(m->files[idx]);
    m->files[idx] = malloc((size_t)s->len + 1);
    if (m->files[idx]) {
        memcpy(m->files[idx], s->p, (size_t)s->len);
        m->files[idx][s->len] = '\0';
    }
}

static int
parse_module(P *p)
{
    while (peek(p)->kind != TK_END && !p->failed) {
        tok *t = peek(p);
        int line = t->line;
        if (is(t, ".version") || is(t, ".target") || is(t, ".address_size")) {
            skip_line(p, line);
        }
        else if (is(t, ".file")) {
            skip_line(p, line);
        }
        else if (is(t, ".section")) {
            while (!is_punct(peek(p), '{') && peek(p)->kind != TK_END)
                p->i++;
            int depth = 0;
            do {
                if (is_punct(peek(p), '{'))
                    depth++;
                else if (is_punct(peek(p), '}'))
                    depth--;
                p->i++;
            } while (depth > 0 && peek(p)->kind != TK_END);
        }
        else if (is(t, ".visible") || is(t, ".weak") || is(t, ".extern") || is(t, ".common")) {
            int ext = is(t, ".extern");
            p->i++;
            tok *n = peek(p);
            if (is(n, ".entry") || is(n, ".func")) {
                p->i++;
                if (parse_function(p, is(n, ".entry")) < 0)
                    return -1;
            }
            else if (is(n, ".global") || is(n, ".const") || is(n, ".shared")) {
                if (parse_global(p, is(n, ".global") ? SP_GLOBAL : is(n, ".const") ? SP_CONST : SP_SHARED, ext) < 0)
                    return -1;
            }
            else
                return fail(p, n->line, "the emulator does not support '%.*s' here", n->len, n->p);
        }
        else if (is(t, ".entry") || is(t, ".func")) {
            p->i++;
            if (parse_function(p, is(t, ".entry")) < 0)
                return -1;
        }
        else if (is(t, ".global") || is(t, ".const")) {
            if (parse_global(p, is(t, ".global") ? SP_GLOBAL : SP_CONST, 0) < 0)
                return -1;
        }
        else if (is(t, ".shared")) {
            if (parse_global(p, SP_SHARED, 0) < 0)
                return -1;
        }
        else
            return fail(p, line, "the emulator does not support the PTX directive '%.*s'", t->len, t->p);
    }
    return p->failed ? -1 : 0;
}

emu_module *
emu_ptx_load(const char *ptx, char *why, size_t whylen)
{
    P p = {0};
    p.why = why;
    p.whylen = whylen;
    p.m = calloc(1, sizeof *p.m);
    if (p.m == NULL) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    add_line(&p, 0, 0); /* index 0: unknown */
    if (lex(ptx, &p.t) < 0) {
        snprintf(why, whylen, "out of memory");
        emu_module_free(p.m);
        return NULL;
    }
    /* .file comes after the functions that use it; read the names first, so that
     * messages at load can name the source line */
    for (int k = 0; k + 2 < p.t.n; k++) {
        tok *t = &p.t.v[k];
        if (t->kind == TK_ID && is(t, ".file") && t[1].kind == TK_NUM && t[2].kind == TK_STR)
            add_file(&p, (int)strtol(t[1].p, NULL, 10), &t[2]);
    }
    int rc = parse_module(&p);
    sym_clear(&p.fn);
    sym_clear(&p.mod);
    free(p.t.v);
    free(p.fix);
    if (rc < 0) {
        emu_module_free(p.m);
        return NULL;
    }
    return p.m;
}

void
emu_module_free(emu_module *m)
{
    if (m == NULL)
        return;
    for (int i = 0; i < m->nfuncs; i++) {
        emu_func *f = m->funcs[i];
        free(f->name);
        free(f->code);
        free(f->prefill);
        free(f->params);
        free(f);
    }
    free(m->funcs);
    for (int i = 0; i < m->nglobals; i++) {
        emu_registry_remove((uint64_t)(uintptr_t)m->globals[i].data, NULL);
        free(m->globals[i].data);
        free(m->globals[i].name);
    }
    free(m->globals);
    for (int i = 0; i < m->nfiles; i++)
        free(m->files[i]);
    free(m->files);
    free(m->lines);
    free(m);
}

void
emu_line_str(const emu_module *m, uint32_t line, char *buf, size_t n)
{
    buf[0] = '\0';
    if (m == NULL || line == 0 || (int)line >= m->nlines)
        return;
    uint32_t v = m->lines[line];
    int file = (int)(v >> 20), l = (int)(v & 0xfffff);
    const char *name = (file < m->nfiles && m->files[file]) ? m->files[file] : "?";
    /* NVRTC writes the file name joined to the working folder; show it as the user gave it */
    char cwd[1024];
    if (getcwd(cwd, sizeof cwd)) {
        size_t c = strlen(cwd);
        if (strncmp(name, cwd, c) == 0 && name[c] == '/')
            name += c + 1;
    }
    snprintf(buf, n, "%s:%d", name, l);
}
