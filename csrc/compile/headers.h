/* headers.h - compile/'s own: the #include scan of headers.c, used by cache.c */
#ifndef CUKIT_COMPILE_HEADERS_H
#define CUKIT_COMPILE_HEADERS_H

#include "compile/compile.h"

#include <sys/stat.h>

/* One scan: every header read is recorded in deps and hashed into sha, so a cache
 * key covers what the compile would read. */
typedef struct {
    cukit_sha256 *sha;  /* borrowed: each header's path and text are fed to it */
    PyObject *deps;     /* borrowed: list the records go to */
    PyObject *seen;     /* borrowed: set of paths already read */
    PyObject *idirs;    /* borrowed: list of absolute -I folders, in order */
    int files;
    size_t bytes;
    int complete;       /* 0 once an include cannot be followed */
} cukit_header_scan;

/* Resolve one #include of `name` (n bytes, quoted "..." or not <...>) written in a
 * file in folder `dir`, record it, and scan it in turn. 0 (sc->complete becomes 0
 * when it cannot be followed) / -1 with an exception. */
int cukit_header_follow(cukit_header_scan *sc, const char *name, size_t n, int quoted,
                        const char *dir, int depth);
/* Follow every #include line of `text`, read from folder `dir`, `depth` files deep.
 * 0 / -1 with an exception. */
int cukit_header_scan_text(cukit_header_scan *sc, const char *text, const char *dir, int depth);
/* One dependency record: (path, mtime_ns, size, inode), or (path, None, None, None)
 * when s is NULL (a place NVRTC would look and found nothing). New ref or NULL. */
PyObject *cukit_header_record(const char *path, const struct stat *s);

#endif /* CUKIT_COMPILE_HEADERS_H */
