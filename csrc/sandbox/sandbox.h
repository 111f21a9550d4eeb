/* sandbox.h - the sandbox layer: NVRTC compiles and driver image loads in worker processes, checks of device-code images, the trusted cache folder */
#ifndef CUKIT_SANDBOX_H
#define CUKIT_SANDBOX_H

#include "driver/driver.h"
#include "sandbox/sha256.h"

/* sandbox/'s part of the module state (st->sandbox; see cukit_state). */
typedef struct cukit_sandbox_state {
    PyObject *image_verdicts; /* strong ref: set of keys (64 hex) of images from outside
                                 that the driver loaded safely in a worker */
    Py_ssize_t image_checks;  /* how many workers checked one */
} cukit_sandbox_state;

/* What compiling a Program produces. */
typedef enum { CUKIT_OUT_PTX = 0, CUKIT_OUT_CUBIN = 1, CUKIT_OUT_LTOIR = 2 } cukit_output;

/* ------------------------------------------------------------------ worker.c */

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

/* ------------------------------------------------------------------ image.c, link.c */

/* What `n` bytes of device code are, by their magic: NVJITLINK_INPUT_CUBIN, _PTX,
 * _FATBIN, _LTOIR, _OBJECT (a host ELF object), _LIBRARY (an ar archive), or
 * NVJITLINK_INPUT_NONE when none of these. Never raises. */
int cukit_image_kind(const unsigned char *data, size_t n);
/* "cubin", "PTX", ... for a kind from cukit_image_kind. Static storage. */
const char *cukit_image_kind_name(int kind);
/* What is wrong with the layout of n bytes of a cubin (or anything starting like an
 * ELF file that is not a host object) or a fatbin: 1 with a sentence saying what and
 * what to do in why, 0 when every size and offset the driver follows lies inside the
 * bytes (and for other kinds). Never raises. */
int cukit_image_problem(const unsigned char *data, size_t n, char *why, size_t cap);
/* The file at `path` (str or os.PathLike): all of it, or its first `limit` bytes
 * when limit >= 0. New ref: bytes; NULL with OSError (FileNotFoundError, ...)
 * naming the file, or TypeError. */
PyObject *cukit_read_file(PyObject *path, Py_ssize_t limit);

/* ------------------------------------------------------------------ imagecheck.c */

/* 0 when CUKIT_IMAGE_CHECK turns the out-of-process check off ("0", "off", "false",
 * "no"), else 1. */
int cukit_image_check_enabled(void);
/* Before an image from outside cukit (Module.load) is loaded in this process: load
 * it in a worker process with the driver at `driver` (its real path) on device
 * `ordinal`, unless a verdict for it (its digest, the driver and `identity`: the
 * driver's version and the device) is remembered. 0 when it may be loaded here
 * (the driver loaded it, or refused it with an error that the load here reports
 * again); -1 with ValueError naming `label` when the driver crashed or did not
 * answer within CUKIT_IMAGE_CHECK_TIMEOUT seconds, RuntimeError/OSError when no
 * check could be run. Releases the GIL while it waits. */
int cukit_image_check(cukit_state *st, const unsigned char *data, size_t n, const char *driver,
                      int ordinal, const char *identity, PyObject *label);
/* Adds the private _image_checks() and _image_check(). 0 / -1. */
int cukit_image_check_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ cachedir.c */

/* 0 when CUKIT_CACHE turns the cache off ("0", "off", "false", "no"), else 1. */
int cukit_cache_enabled(void);
/* The cache folder into out. 0, or -1 (no exception) when none can be named. */
int cukit_cache_dir(char *out, size_t n);
/* Whether `dir` can hold entries cukit trusts: its own and writable by no one else
 * (created, private, when `create` and missing). 1 yes, 0 no (a RuntimeWarning says
 * why, unless `quiet`), -1 when the warning became an error. */
int cukit_cache_dir_ready(const char *dir, int create, int quiet);
/* A marker's file name is its 64-hex key and this. */
#define CUKIT_CACHE_MARKER_SUFFIX ".image"
/* Whether the marker named by `hex` (64 hex digits) is in the cache folder, which
 * cukit trusts: 1 / 0 (also with CUKIT_CACHE=0). Never raises. */
int cukit_cache_marker_exists(const char *hex);
/* Write the marker named by `hex` holding `line`, atomically; nothing when the cache
 * is off or its folder cannot be used. Never raises. */
void cukit_cache_marker_write(const char *hex, const char *line);

#endif /* CUKIT_SANDBOX_H */
