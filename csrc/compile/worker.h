/* worker.h - compile/'s own: one NVRTC compile as plain C data, run in a worker process or in this one */
#ifndef CUKIT_COMPILE_WORKER_H
#define CUKIT_COMPILE_WORKER_H

#include "compile/compile.h"

/* What NVRTC is asked: borrowed strings, all NUL-terminated. */
typedef struct {
    cukit_output kind;
    const char *source;
    const char *name;
    int nopts;
    const char *const *opts;
    int nnames;
    const char *const *names; /* name expressions */
} cukit_compile_request;

/* What came back. Every pointer is owned (malloc); clear with cukit_compile_result_clear. */
typedef struct {
    int status;          /* the failed call's nvrtcResult; 0 when none failed */
    char call[40];       /* the failed call's name */
    int oom;             /* 1: memory ran out (in this process or the worker) */
    int crashed;         /* 1: the worker died before answering */
    int signal;          /* ...of this signal (0: it exited, with exit_status) */
    int exit_status;
    int spawn_errno;     /* no worker could be started: fork's errno */
    char *log;           /* NVRTC's log, NUL-terminated; NULL when none was read */
    size_t log_len;
    char *image;         /* the output: PTX (with its NUL), cubin or LTO-IR */
    size_t image_len;
    char **lowered;      /* nnames lowered names, after a successful compile */
} cukit_compile_result;

/* The worker executable's file name, beside the extension module. */
#define CUKIT_WORKER_NAME "_cukit_worker"

/* 1 unless CUKIT_COMPILE_IN_PROCESS asks for compiles in this process. */
int cukit_compile_isolated(void);
/* Compile req: in a worker process (forked from this one, NVRTC already loaded;
 * kept for the next compile), or in this process when not isolated. Needs no GIL
 * and touches no Python object: call it with the GIL released. 0, or -1 with res
 * saying what failed (res->crashed: the worker died; res->status/call: an NVRTC
 * call failed; res->oom; res->spawn_errno). Clear res either way. */
int cukit_compile_run(const cukit_compile_request *req, cukit_compile_result *res);
void cukit_compile_result_clear(cukit_compile_result *res, int nnames);
/* A compile is coming: start a worker now, unless one is idle, so that it loads
 * NVRTC while this process does. Call it before cukit_nvrtc_load on a cache miss,
 * with the GIL held. Never fails and leaves no exception (a worker is started
 * later if need be). */
void cukit_compile_warm(void);
/* Serve compile requests on fd until its other end closes, then _exit. Run by a
 * worker process (forked, or the executable, which passes ensure_nvrtc: it makes
 * the NVRTC at the path each request names the one in cukit_api, 0 / -1). Never
 * returns; touches no Python object. */
void cukit_worker_serve(int fd, int (*ensure_nvrtc)(const char *path));

#endif /* CUKIT_COMPILE_WORKER_H */
