/* cache.h - compile/'s own: the disk cache's keys, used by program.c, functions.c and cache.c */
#ifndef CUKIT_COMPILE_CACHE_H
#define CUKIT_COMPILE_CACHE_H

#include "compile/compile.h"

/* What names one compile on disk. */
typedef struct {
    int usable;     /* 0: the compile cannot be cached (an #include cukit cannot follow) */
    char hex[65];   /* SHA-256 of everything the key covers: the entry's file name */
    PyObject *deps; /* strong ref: tuple of user-header records, checked by
                       cukit_cache_deps_unchanged; NULL until made */
} cukit_cache_key;

/* Key for compiling prog for arch into `kind` with NVRTC options `opts` (tuple of
 * str, what the user asked for plus cukit's own, without the toolkit's -I): covers
 * cukit's version, arch, output kind, options, name expressions, file name, source
 * and every user header the source can reach. 0 / -1 with an exception; clear with
 * cukit_cache_key_clear. */
int cukit_cache_key_make(cukit_Program *prog, const char *arch, cukit_output kind, PyObject *opts,
                         cukit_cache_key *key);
void cukit_cache_key_clear(cukit_cache_key *key);
/* 1 when every header record still describes the file system, 0 when one changed,
 * -1 with an exception. */
int cukit_cache_deps_unchanged(PyObject *deps);
/* Look key up on disk. 1: hit, new refs in *image (bytes), *symbols (dict kernel ->
 * lowered name) and *log; 0: miss (a damaged or untrusted entry warns and misses);
 * -1 with an exception (a warning turned error). */
int cukit_cache_load(const cukit_cache_key *key, cukit_output kind, PyObject **image,
                     PyObject **symbols, PyObject **log);
/* Store a compile under key, atomically. 0 (also when it could not, with a
 * RuntimeWarning) / -1 when the warning became an error. */
int cukit_cache_store(const cukit_cache_key *key, cukit_output kind, PyObject *image,
                      PyObject *symbols, PyObject *log);

#endif /* CUKIT_COMPILE_CACHE_H */
