/* cachedir.c - the cache folder: where it is, whether cukit trusts it, and the markers kept in it */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A RuntimeWarning; 0, or -1 when warnings are errors. */
static int
warn(const char *fmt, const char *a, const char *b)
{
    return PyErr_WarnFormat(PyExc_RuntimeWarning, 1, fmt, a, b);
}

int
cukit_cache_enabled(void)
{
    const char *e = getenv("CUKIT_CACHE");
    return !(e && (strcmp(e, "0") == 0 || strcmp(e, "off") == 0 || strcmp(e, "false") == 0 ||
                   strcmp(e, "no") == 0));
}

int
cukit_cache_dir(char *out, size_t n)
{
    const char *d = getenv("CUKIT_CACHE_DIR");
    if (d && d[0])
        return snprintf(out, n, "%s", d) < (int)n ? 0 : -1;
    d = getenv("XDG_CACHE_HOME");
    if (d && d[0] == '/') /* the XDG spec ignores relative values */
        return snprintf(out, n, "%s/cukit", d) < (int)n ? 0 : -1;
    d = getenv("HOME");
    if (d == NULL || d[0] == '\0') {
        struct passwd *pw = getpwuid(getuid());
        d = pw ? pw->pw_dir : NULL;
    }
    if (d == NULL)
        return -1;
    return snprintf(out, n, "%s/.cache/cukit", d) < (int)n ? 0 : -1;
}

/* mkdir -p, each new folder private (0700), as the XDG spec asks for ~/.cache. */
static int
make_dirs(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return -1;
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return (mkdir(path, 0700) != 0 && errno != EEXIST) ? -1 : 0;
}

/* Whether `dir` can hold entries we trust: ours and writable by no one else.
 * 1 yes, 0 no (a warning says why, unless `quiet`), -1 when the warning became an
 * error. */
int
cukit_cache_dir_ready(const char *dir, int create, int quiet)
{
    struct stat s;
    if (quiet)
        return stat(dir, &s) == 0 && S_ISDIR(s.st_mode) && s.st_uid == getuid() &&
               (s.st_mode & 022) == 0;
    if (stat(dir, &s) != 0) {
        if (!create)
            return 0;
        if (make_dirs(dir) != 0 || stat(dir, &s) != 0)
            return warn("cukit: could not create the kernel cache folder %s (%s); compiling "
                        "without the cache", dir, strerror(errno)) < 0 ? -1 : 0;
    }
    if (!S_ISDIR(s.st_mode))
        return warn("cukit: the kernel cache path %s is not a folder%s; compiling without the "
                    "cache (set CUKIT_CACHE_DIR elsewhere)", dir, "") < 0 ? -1 : 0;
    if (s.st_uid != getuid() || (s.st_mode & 022) != 0)
        return warn("cukit: the kernel cache folder %s is not private to this user (another "
                    "user owns it or can write to it), so its entries are not trusted; "
                    "compiling without the cache. Fix: `chmod 700 %s`, or set CUKIT_CACHE_DIR",
                    dir, dir) < 0 ? -1 : 0;
    return 1;
}

/* ------------------------------------------------------------------ markers
 *
 * A marker is a small file that records a fact about this machine (an image the
 * driver loaded safely): its name is a 64-hex key and MARKER_SUFFIX, its content
 * one line that says what it is. Only folders cukit trusts are read or written. */

#define MARKER_SUFFIX CUKIT_CACHE_MARKER_SUFFIX

static int
marker_path(const char *hex, char *dir, size_t dn, char *out, size_t n)
{
    if (!cukit_cache_enabled() || cukit_cache_dir(dir, dn) < 0 || strlen(hex) != 64)
        return -1;
    return snprintf(out, n, "%s/%s" MARKER_SUFFIX, dir, hex) < (int)n ? 0 : -1;
}

int
cukit_cache_marker_exists(const char *hex)
{
    char dir[PATH_MAX], path[PATH_MAX + 80];
    struct stat s;
    return marker_path(hex, dir, sizeof dir, path, sizeof path) == 0 && cukit_cache_dir_ready(dir, 0, 1) > 0 &&
           lstat(path, &s) == 0 && S_ISREG(s.st_mode) && s.st_uid == getuid();
}

void
cukit_cache_marker_write(const char *hex, const char *line)
{
    char dir[PATH_MAX], path[PATH_MAX + 80], tmp[PATH_MAX + 80];
    if (marker_path(hex, dir, sizeof dir, path, sizeof path) < 0)
        return;
    struct stat s;
    if (stat(dir, &s) != 0 && make_dirs(dir) != 0)
        return;
    if (cukit_cache_dir_ready(dir, 0, 1) <= 0 ||
        snprintf(tmp, sizeof tmp, "%s/%.16s.XXXXXX", dir, hex) >= (int)sizeof tmp)
        return;
    /* Written whole under a private name, then renamed: never seen half written. */
    int fd = mkstemp(tmp);
    if (fd < 0)
        return;
    size_t n = strlen(line);
    int ok = write(fd, line, n) == (ssize_t)n;
    ok &= close(fd) == 0;
    if (!(ok && rename(tmp, path) == 0))
        unlink(tmp);
}
