/* knobs.c - the "knob=value,..." specs that pick a build of cukit's kernels (reduce.c's and radix.c's timing knobs) */
#include "common/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
cukit_knobs_parse(const char *spec, const char *who, const cukit_knob *knobs, size_t n, void *out,
                  int *given)
{
    const char *s = spec;
    while (*s) {
        const char *eq = strchr(s, '='), *end = strchr(s, ',');
        if (end == NULL)
            end = s + strlen(s);
        size_t i = 0;
        if (eq != NULL && eq < end)
            for (; i < n; i++)
                if (strlen(knobs[i].name) == (size_t)(eq - s) &&
                    strncmp(knobs[i].name, s, eq - s) == 0)
                    break;
        char part[64]; /* PyErr_Format has no %.*s */
        if (eq == NULL || eq > end || i == n) {
            char names[256] = "";
            for (size_t k = 0; k < n; k++) {
                size_t used = strlen(names);
                snprintf(names + used, sizeof names - used, "%s%s", k ? ", " : "", knobs[k].name);
            }
            snprintf(part, sizeof part, "%.*s", (int)(end - s), s);
            PyErr_Format(PyExc_ValueError, "%s: '%s' is not knob=value with a knob of %s (in '%s')",
                         who, part, names, spec);
            return -1;
        }
        char *stop;
        long x = strtol(eq + 1, &stop, 10);
        if (stop != end || eq + 1 == end || x < knobs[i].lo || x > knobs[i].hi) {
            snprintf(part, sizeof part, "%.*s", (int)(end - eq - 1), eq + 1);
            PyErr_Format(PyExc_ValueError, "%s: %s (%s) takes an integer from %d to %d, not '%s'",
                         who, knobs[i].name, knobs[i].what, knobs[i].lo, knobs[i].hi, part);
            return -1;
        }
        *(int *)((char *)out + knobs[i].offset) = (int)x;
        if (given)
            given[i] = 1;
        s = *end ? end + 1 : end;
    }
    return 0;
}
