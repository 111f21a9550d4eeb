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

/* ------------------------------------------------------------------ an image loaded by the driver
 *
 * A second request kind: the worker dlopens the CUDA driver at the path given
 * (the one the user's process loaded), loads the image on the device given and
 * answers. Only the worker executable serves it, started for that one request:
 * never a process forked from one that has initialised CUDA. */

/* The request's kind, beside the CUKIT_OUT_* compile kinds. */
#define CUKIT_REQUEST_IMAGE 0x494d4731u

typedef struct {
    int status;          /* 0: the driver loaded the image; > 0: the CUresult of `call`;
                            -1: the worker could not use the driver at that path */
    char call[40];       /* the failed call's name */
    char name[160];      /* the CUresult's name, or why the driver could not be used */
    int crashed;         /* 1: the worker died before answering */
    int signal;          /* ...of this signal (0: it exited, with exit_status) */
    int exit_status;
    int hung;            /* 1: no answer within the time limit; the worker was killed */
    int no_program;      /* 1: the worker executable is not beside the extension */
    int spawn_errno;     /* no worker could be started: its errno */
} cukit_image_check_result;

/* Load n bytes of image with the driver at `driver` on device `ordinal`, in a new
 * worker process, waiting at most timeout_s seconds (then it is killed). Needs no
 * GIL and touches no Python object. 0 when the worker answered (res->status says
 * how the load went), -1 when it did not (res says why: crashed, hung, no_program,
 * spawn_errno). */
int cukit_image_check_run(const char *driver, int ordinal, const void *image, size_t n,
                          double timeout_s, cukit_image_check_result *res);

#endif /* CUKIT_COMPILE_WORKER_H */
