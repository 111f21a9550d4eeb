/* target.c - a PTX module's .version, .target and .address_size, checked as a driver checks them */
#include "emulator/ptx/ptx.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The PTX ISA versions that exist up to the emulated driver's (major * 10 + minor). */
static int
known_version(int v)
{
    static const unsigned char last_minor[10] = {0, 5, 3, 2, 3, 0, 5, 8, 8, 9};
    int major = v / 10, minor = v % 10;
    return major >= 1 && major <= 9 && minor <= last_minor[major];
}

/* The first PTX ISA version that knows a target (sm_50 and later, as ptxas states it),
 * or 0 for one the table does not list. */
static int
target_version(int cc, int arch_specific)
{
    static const struct {
        short cc, version;
    } first[] = {{50, 40}, {52, 41}, {53, 42}, {60, 50}, {61, 50}, {62, 50}, {70, 60}, {72, 61},
                 {75, 63}, {80, 70}, {86, 71}, {87, 74}, {89, 78}, {90, 78}, {100, 86},
                 {101, 86}, {103, 88}, {110, 90}, {120, 87}, {121, 88}};
    for (size_t k = 0; k < sizeof first / sizeof *first; k++)
        if (first[k].cc == cc)
            return cc == 90 && arch_specific ? 80 : first[k].version;
    return 0;
}

int
ptx_check_header(P *p, tok *t)
{
    tok *v = t + 1;
    if (ptx_is(t, ".address_size")) {
        if (!ptx_is(v, "64"))
            return ptx_fail(p, t->line, "this PTX has .address_size %.*s: the driver runs only "
                            "64-bit addressing (invalid PTX)", v->len, v->p);
        return 0;
    }
    if (ptx_is(t, ".version")) {
        char *end = NULL;
        long major = v->kind == TK_NUM ? strtol(v->p, &end, 10) : -1;
        if (p->version)
            return ptx_fail(p, t->line, "this PTX has two .version directives");
        if (major < 1 || end == NULL || *end != '.' || !isdigit((unsigned char)end[1]))
            return ptx_fail(p, t->line, "this PTX's .version '%.*s' is not a version number",
                            v->len, v->p);
        if (major > 9)
            return ptx_fail(p, t->line, "this PTX is of PTX ISA version %.*s, newer than the 9.x "
                            "the emulated CUDA 13 driver reads (unsupported PTX version)", v->len, v->p);
        long minor = strtol(end + 1, NULL, 10);
        p->version = (int)(major * 10 + (minor > 9 ? 9 : minor));
        if (minor > 9 || !known_version(p->version))
            return ptx_fail(p, t->line, "this PTX's .version %.*s is not a PTX ISA version "
                            "(unsupported PTX version)", v->len, v->p);
        return 0;
    }
    if (!p->version)
        return ptx_fail(p, t->line, "this PTX has no .version directive before its .target (a "
                        "driver requires it first)");
    p->target_seen = 1;
    for (tok *a = v; a->kind == TK_ID && a->line == t->line; a++) {
        int cc;
        char *end;
        if (a->len > 3 && memcmp(a->p, "sm_", 3) == 0 && sscanf(a->p + 3, "%d", &cc) == 1) {
            if (cc > emu_arch_cc())
                return ptx_fail(p, t->line, "this PTX targets %.*s, newer than the emulated device "
                                "(sm_%d; CUKIT_EMULATOR_ARCH sets it): no kernel image for this "
                                "device", a->len, a->p, emu_arch_cc());
            strtol(a->p + 3, &end, 10);
            int need = target_version(cc, *end == 'a');
            if (need > p->version)
                return ptx_fail(p, t->line, "PTX ISA version %d.%d does not know .target %.*s "
                                "(it needs %d.%d or later): invalid PTX", p->version / 10,
                                p->version % 10, a->len, a->p, need / 10, need % 10);
        }
        if (!ptx_is_punct(a + 1, ','))
            break;
        a++;
    }
    return 0;
}
