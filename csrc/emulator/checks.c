/* checks.c - the emulator's checkers: which are on (CUKIT_EMULATOR_CHECK, cukit.debug.check)
 * and the log of their reports, each place counted once */
#include "emulator/checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

unsigned emu_checks;

/* Whether the setting came from the environment: its reports go to stderr as found. */
static int from_env;

static const struct {
    const char *name;
    int bits;
} check_names[] = {
    {"race", EMU_CHECK_RACE}, {"racecheck", EMU_CHECK_RACE},
    {"init", EMU_CHECK_INIT}, {"initcheck", EMU_CHECK_INIT},
    {"sync", EMU_CHECK_SYNC}, {"synccheck", EMU_CHECK_SYNC},
    {"all", EMU_CHECK_ALL},
};

int
emu_check_setting(const char **bad)
{
    const char *v = getenv("CUKIT_EMULATOR_CHECK");
    *bad = v;
    if (v == NULL)
        return 0;
    int bits = 0;
    for (const char *p = v; *p;) {
        while (*p == ',' || *p == ' ')
            p++;
        size_t n = strcspn(p, ", ");
        if (n == 0)
            break;
        int found = -1;
        for (size_t i = 0; i < sizeof check_names / sizeof *check_names; i++)
            if (strlen(check_names[i].name) == n && strncasecmp(p, check_names[i].name, n) == 0)
                found = check_names[i].bits;
        if (found < 0)
            return -1;
        bits |= found;
        p += n;
    }
    if (bits) {
        from_env = 1;
        __atomic_fetch_or(&emu_checks, (unsigned)bits, __ATOMIC_RELAXED);
    }
    return bits;
}

/* ------------------------------------------------------------------ the log */

#define MAX_REPORTS 4096

typedef struct {
    int kind;
    const void *kernel;
    uint64_t a, b;
    uint64_t count;
    char *text;           /* owned */
} entry;

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static entry *entries;   /* owned, in the order found */
static size_t nentries, capentries;
static uint64_t dropped;

static const char *const tool_names[] = {
    [EMU_CHECK_RACE] = "racecheck", [EMU_CHECK_INIT] = "initcheck", [EMU_CHECK_SYNC] = "synccheck",
};

void
emu_check_report(int kind, const void *kernel, uint64_t a, uint64_t b, const char *text)
{
    pthread_mutex_lock(&log_lock);
    for (size_t i = nentries; i-- > 0;) {
        entry *e = &entries[i];
        if (e->kind == kind && e->kernel == kernel && e->a == a && e->b == b) {
            e->count++;
            goto done;
        }
    }
    if (nentries == MAX_REPORTS) {
        dropped++;
        goto done;
    }
    if (nentries == capentries) {
        size_t cap = capentries ? capentries * 2 : 16;
        entry *v = realloc(entries, cap * sizeof *v);
        if (v == NULL) {
            dropped++;
            goto done;
        }
        entries = v;
        capentries = cap;
    }
    char *copy = strdup(text);
    if (copy == NULL) {
        dropped++;
        goto done;
    }
    entries[nentries++] = (entry){kind, kernel, a, b, 1, copy};
    if (from_env) {
        fprintf(stderr, "cukit emulator %s: %s\n", tool_names[kind], text);
        fflush(stderr);
    }
done:
    pthread_mutex_unlock(&log_lock);
}

emu_report *
emu_check_take(size_t *n, uint64_t *lost)
{
    pthread_mutex_lock(&log_lock);
    emu_report *out = nentries ? malloc(nentries * sizeof *out) : NULL;
    *n = out ? nentries : 0;
    *lost = dropped;
    for (size_t i = 0; i < nentries; i++) {
        if (out)
            out[i] = (emu_report){entries[i].kind, entries[i].count, entries[i].text};
        else
            free(entries[i].text);
    }
    nentries = 0;
    dropped = 0;
    pthread_mutex_unlock(&log_lock);
    return out;
}
