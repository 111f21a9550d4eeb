/* headers.c - a source's user headers, found as NVRTC finds them, for the cache key */
#include "compile/headers.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEADERS 256
#define MAX_HEADER_BYTES (64u << 20)

/* The whole file at path, NUL-terminated, into *text (malloc: the caller frees) and
 * its length into *len. 0, or -1 (no exception) when it cannot be read whole. */
static int
read_file(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        char *bigger = cap > MAX_HEADER_BYTES ? NULL : realloc(buf, 2 * cap + 1);
        if (bigger == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (buf == NULL || bad) {
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return 0;
}

/* One dependency record: (path, mtime_ns, size, inode), or (path, None, None, None)
 * for a place NVRTC would look and found nothing. New ref. */
PyObject *
cukit_header_record(const char *path, const struct stat *s)
{
    PyObject *p = PyUnicode_DecodeFSDefault(path);
    if (p == NULL)
        return NULL;
    if (s == NULL)
        return Py_BuildValue("(NOOO)", p, Py_None, Py_None, Py_None);
    long long ns = (long long)s->st_mtim.tv_sec * 1000000000LL + s->st_mtim.tv_nsec;
    return Py_BuildValue("(NLLK)", p, ns, (long long)s->st_size, (unsigned long long)s->st_ino);
}

/* Resolve one #include the way NVRTC does: "name" in the including file's folder,
 * then the -I folders; <name> in the -I folders only. Toolkit and built-in headers
 * are not found here: the NVRTC identity in the entry covers those. */
int
cukit_header_follow(cukit_header_scan *sc, const char *name, size_t n, int quoted, const char *dir,
                    int depth)
{
    char rel[PATH_MAX];
    if (n >= sizeof rel)
        return sc->complete = 0;
    memcpy(rel, name, n);
    rel[n] = '\0';
    Py_ssize_t ndirs = PyList_GET_SIZE(sc->idirs);
    for (Py_ssize_t i = quoted ? -1 : 0; i < ndirs; i++) {
        const char *base = i < 0 ? dir : PyUnicode_AsUTF8(PyList_GET_ITEM(sc->idirs, i));
        char path[PATH_MAX];
        if (base == NULL)
            return -1;
        if (snprintf(path, sizeof path, "%s/%s", rel[0] == '/' ? "" : base,
                     rel[0] == '/' ? rel + 1 : rel) >= (int)sizeof path)
            return sc->complete = 0;
        struct stat s;
        int found = stat(path, &s) == 0 && S_ISREG(s.st_mode);
        PyObject *key = PyUnicode_DecodeFSDefault(path);
        if (key == NULL)
            return -1;
        int seen = PySet_Contains(sc->seen, key);
        if (seen < 0 || (!seen && PySet_Add(sc->seen, key) < 0)) {
            Py_DECREF(key);
            return -1;
        }
        Py_DECREF(key);
        if (seen) { /* already recorded, and read if it was found */
            if (found)
                return 0;
            continue;
        }
        PyObject *rec = cukit_header_record(path, found ? &s : NULL);
        if (rec == NULL || PyList_Append(sc->deps, rec) < 0) {
            Py_XDECREF(rec);
            return -1;
        }
        Py_DECREF(rec);
        cukit_sha256_field(sc->sha, path, strlen(path));
        if (!found) {
            cukit_sha256_field(sc->sha, "-", 1);
            continue;
        }
        char *text;
        size_t len;
        /* Too many, too big or unreadable: the entry could not vouch for it. */
        if (++sc->files > MAX_HEADERS || read_file(path, &text, &len) < 0)
            return sc->complete = 0;
        if ((sc->bytes += len) > MAX_HEADER_BYTES) {
            free(text);
            return sc->complete = 0;
        }
        cukit_sha256_field(sc->sha, text, len);
        char *slash = strrchr(path, '/');
        *slash = '\0';
        int rc = cukit_header_scan_text(sc, text, path, depth + 1);
        free(text);
        return rc;
    }
    return 0;
}

/* Every #include line of `text`, read from folder `dir`. Conditional includes are
 * all followed: reading a header NVRTC skips only costs a stat and a hash. */
int
cukit_header_scan_text(cukit_header_scan *sc, const char *text, const char *dir, int depth)
{
    if (depth > 64 || strstr(text, "__has_include") || strstr(text, "include_next"))
        return sc->complete = 0; /* reads headers cukit does not follow */
    for (const char *p = text; *p;) {
        const char *q = p;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q == '#') {
            q++;
            while (*q == ' ' || *q == '\t')
                q++;
            if (strncmp(q, "include", 7) == 0 && (q[7] == ' ' || q[7] == '\t' || q[7] == '"' ||
                                                 q[7] == '<')) {
                q += 7;
                while (*q == ' ' || *q == '\t')
                    q++;
                char close = *q == '"' ? '"' : *q == '<' ? '>' : 0;
                const char *end = close ? strchr(q + 1, close) : NULL;
                const char *eol = strchr(q, '\n');
                if (close == 0 || end == NULL || (eol && end > eol))
                    sc->complete = 0; /* #include MACRO: cannot tell what it reads */
                else if (cukit_header_follow(sc, q + 1, (size_t)(end - q - 1), close == '"', dir,
                                             depth) < 0)
                    return -1;
            }
        }
        const char *eol = strchr(p, '\n');
        if (eol == NULL)
            break;
        p = eol + 1;
    }
    return 0;
}
