/* worker.c - NVRTC compiles and driver image loads run in worker processes, so a crash there cannot take the user's process down */
#include "sandbox/sandbox.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ one compile, wherever it runs */

void
cukit_compile_result_clear(cukit_compile_result *res, int nnames)
{
    free(res->log);
    free(res->image);
    if (res->lowered) {
        for (int i = 0; i < nnames; i++)
            free(res->lowered[i]);
        free(res->lowered);
    }
    memset(res, 0, sizeof *res);
}

/* A malloc'd copy of n bytes plus a NUL; NULL when memory runs out. */
static char *
dup_bytes(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    if (out) {
        memcpy(out, s, n);
        out[n] = '\0';
    }
    return out;
}

/* Set the failing call; always returns -1. */
static int
failed(cukit_compile_result *res, nvrtcResult status, const char *call)
{
    res->status = (int)status;
    snprintf(res->call, sizeof res->call, "%s", call);
    return -1;
}

/* Run NVRTC on req in this process. Uses no Python: it runs without the GIL and in
 * a worker. 0, or -1 with res->status and res->call naming the failed call
 * (res->oom when memory ran out). */
static int
run_nvrtc(const cukit_compile_request *req, cukit_compile_result *res)
{
    static const struct {
        nvrtcResult (**size)(nvrtcProgram, size_t *);
        nvrtcResult (**get)(nvrtcProgram, char *);
        const char *call;
    } outputs[] = {
        [CUKIT_OUT_PTX] = {&cukit_api.nvrtcGetPTXSize, &cukit_api.nvrtcGetPTX, "nvrtcGetPTX"},
        [CUKIT_OUT_CUBIN] = {&cukit_api.nvrtcGetCUBINSize, &cukit_api.nvrtcGetCUBIN, "nvrtcGetCUBIN"},
        [CUKIT_OUT_LTOIR] = {&cukit_api.nvrtcGetLTOIRSize, &cukit_api.nvrtcGetLTOIR, "nvrtcGetLTOIR"},
    };
    nvrtcProgram prog = NULL;
    nvrtcResult r;
    int rc = -1;
    memset(res, 0, sizeof *res);
    if ((r = cukit_api.nvrtcCreateProgram(&prog, req->source, req->name, 0, NULL, NULL)) != 0)
        return failed(res, r, "nvrtcCreateProgram");
    for (int i = 0; i < req->nnames; i++)
        if ((r = cukit_api.nvrtcAddNameExpression(prog, req->names[i])) != 0) {
            failed(res, r, "nvrtcAddNameExpression");
            goto done;
        }
    nvrtcResult compiled = cukit_api.nvrtcCompileProgram(prog, req->nopts, req->opts);
    size_t n = 0;
    if ((r = cukit_api.nvrtcGetProgramLogSize(prog, &n)) != 0) {
        failed(res, r, "nvrtcGetProgramLogSize");
        goto done;
    }
    if ((res->log = calloc(n + 1, 1)) == NULL)
        goto oom;
    if ((r = cukit_api.nvrtcGetProgramLog(prog, res->log)) != 0) {
        failed(res, r, "nvrtcGetProgramLog");
        goto done;
    }
    res->log_len = strlen(res->log);
    if (compiled != 0) {
        failed(res, compiled, "nvrtcCompileProgram");
        goto done;
    }
    if ((r = (*outputs[req->kind].size)(prog, &n)) != 0) {
        failed(res, r, outputs[req->kind].call);
        goto done;
    }
    if ((res->image = malloc(n ? n : 1)) == NULL)
        goto oom;
    if ((r = (*outputs[req->kind].get)(prog, res->image)) != 0) {
        failed(res, r, outputs[req->kind].call);
        goto done;
    }
    res->image_len = n;
    if (req->nnames && (res->lowered = calloc((size_t)req->nnames, sizeof *res->lowered)) == NULL)
        goto oom;
    for (int i = 0; i < req->nnames; i++) {
        const char *lowered = NULL;
        if ((r = cukit_api.nvrtcGetLoweredName(prog, req->names[i], &lowered)) != 0) {
            failed(res, r, "nvrtcGetLoweredName");
            goto done;
        }
        if ((res->lowered[i] = dup_bytes(lowered, strlen(lowered))) == NULL)
            goto oom;
    }
    rc = 0;
    goto done;
oom:
    res->oom = 1;
done:
    cukit_api.nvrtcDestroyProgram(&prog);
    return rc;
}

/* ------------------------------------------------------------------ the wire
 *
 * Request: u32 kind, field nvrtc (the library's real path), field cwd, field source, field name, u32 nopts, nopts fields, u32 nnames,
 * nnames fields. Response: i32 status, u32 oom, field call, field log, field image,
 * nnames fields (lowered names). A field is a u64 length and that many bytes. */

typedef struct {
    char *data;
    size_t len, cap;
} buffer;

static int
put(buffer *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (grown == NULL)
            return -1;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

static int
put_u32(buffer *b, uint32_t v)
{
    return put(b, &v, sizeof v);
}

static int
put_field(buffer *b, const char *s, size_t n)
{
    uint64_t len = n;
    return put(b, &len, sizeof len) < 0 || put(b, s ? s : "", n) < 0 ? -1 : 0;
}

/* send(2) all of it; no SIGPIPE when the other side is gone. 0 / -1. */
static int
send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* read(2) exactly n bytes. 0, or -1 on end of file or error. */
static int
recv_all(int fd, void *dst, size_t n)
{
    char *p = dst;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int
recv_u32(int fd, uint32_t *v)
{
    return recv_all(fd, v, sizeof *v);
}

/* A field into a new malloc'd, NUL-terminated string. 0 / -1. */
static int
recv_field(int fd, char **out, size_t *len)
{
    uint64_t n;
    *out = NULL;
    if (recv_all(fd, &n, sizeof n) < 0 || n > ((uint64_t)1 << 40) || (*out = malloc(n + 1)) == NULL)
        return -1;
    if (recv_all(fd, *out, n) < 0) {
        free(*out);
        *out = NULL;
        return -1;
    }
    (*out)[n] = '\0';
    if (len)
        *len = n;
    return 0;
}

/* ------------------------------------------------------------------ the worker's side */

/* Close every descriptor but 0-2 and keep: the worker must not hold the user's
 * pipes and sockets open (a reader waiting for end of file would wait for it). */
static void
close_others(int keep)
{
#ifdef SYS_close_range
    if (keep > 3 && syscall(SYS_close_range, 3, keep - 1, 0) != 0)
        goto slow;
    if (syscall(SYS_close_range, keep + 1, ~0U, 0) == 0)
        return;
slow:
#endif
    for (int fd = 3; fd < 65536; fd++)
        if (fd != keep)
            close(fd);
}

/* Ends the worker when its caller ends (its end of the socket closes), even mid-compile. */
static void *
watch_parent(void *fd)
{
    struct pollfd p = {.fd = (int)(intptr_t)fd, .events = POLLRDHUP};
    while (poll(&p, 1, -1) <= 0 || p.revents == 0)
        continue;
    _exit(0);
}

/* The driver's entry points, in a table of its own (the worker program fills no
 * driver part of cukit_api, and a forked worker never loads an image): only those
 * an image load calls, in this order, each required; their symbols come from
 * entry_points.h's table and the loader's own walk fills them (driver/entries.c). */
static cukit_api_t drv;
static const size_t drv_needs[] = {
    offsetof(cukit_api_t, cuInit),           offsetof(cukit_api_t, cuDeviceGet),
    offsetof(cukit_api_t, cuDevicePrimaryCtxRetain), offsetof(cukit_api_t, cuCtxSetCurrent),
    offsetof(cukit_api_t, cuModuleLoadData), offsetof(cukit_api_t, cuModuleUnload),
    offsetof(cukit_api_t, cuGetErrorName),
};
enum { DRV_NEEDS = sizeof drv_needs / sizeof *drv_needs };

/* Fill drv's needed entries from lib. NULL, or the first needed symbol it lacks. */
static const char *
drv_fill(void *lib)
{
    cukit_entry list[DRV_NEEDS];
    for (size_t i = 0; i < DRV_NEEDS; i++)
        for (size_t j = 0; j < cukit_driver_nentries; j++)
            if (cukit_driver_entries[j].offset == drv_needs[i]) {
                list[i] = cukit_driver_entries[j];
                list[i].required = 1;
            }
    return cukit_entries_fill(&drv, lib, list, DRV_NEEDS, 0);
}

/* Load image with the driver at `path` on device `ordinal`. 0, the failed call's
 * CUresult (> 0, its name in call and name), or -1 when the driver cannot be used
 * (why in name). */
static int32_t
load_image(const char *path, int ordinal, const char *image, char *call, char *name, size_t cap)
{
    void *lib = path[0] ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (lib == NULL) {
        const char *e = path[0] ? dlerror() : "no driver library was named";
        snprintf(call, 40, "dlopen");
        snprintf(name, cap, "%s", e ? e : "dlopen failed");
        return -1;
    }
    const char *missing = drv_fill(lib);
    if (missing) {
        snprintf(call, 40, "dlsym");
        snprintf(name, cap, "the library has no %s", missing);
        return -1;
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUresult r;
    if ((r = drv.cuInit(0)) != 0)
        snprintf(call, 40, "cuInit");
    else if ((r = drv.cuDeviceGet(&dev, ordinal)) != 0)
        snprintf(call, 40, "cuDeviceGet");
    else if ((r = drv.cuDevicePrimaryCtxRetain(&ctx, dev)) != 0)
        snprintf(call, 40, "cuDevicePrimaryCtxRetain");
    else if ((r = drv.cuCtxSetCurrent(ctx)) != 0)
        snprintf(call, 40, "cuCtxSetCurrent");
    else if ((r = drv.cuModuleLoadData(&mod, image)) != 0)
        snprintf(call, 40, "cuModuleLoadData");
    else
        drv.cuModuleUnload(mod);
    const char *n = NULL;
    if (r != 0 && drv.cuGetErrorName(r, &n) == 0 && n)
        snprintf(name, cap, "%s", n);
    return (int32_t)r;
}

/* Serve one image request (its kind already read); _exit when the other side is gone. */
static void
serve_image(int fd, int executable)
{
    char *driver = NULL, *image = NULL, call[40] = "", name[160] = "";
    uint32_t ordinal = 0;
    if (recv_field(fd, &driver, NULL) < 0 || recv_u32(fd, &ordinal) < 0 ||
        recv_field(fd, &image, NULL) < 0)
        _exit(0);
    int32_t status = -1;
    if (executable) /* never in a process forked from one that may have initialised CUDA */
        status = load_image(driver, (int)ordinal, image, call, name, sizeof name);
    else
        snprintf(name, sizeof name, "a forked worker does not load images");
    buffer out = {0};
    if (put(&out, &status, sizeof status) < 0 || put_field(&out, call, strlen(call)) < 0 ||
        put_field(&out, name, strlen(name)) < 0 || send_all(fd, out.data, out.len) < 0)
        _exit(3);
    free(out.data);
    free(driver);
    free(image);
}

/* A helper process's way to make sure the NVRTC at a path is the one in
 * cukit_api (NULL in a forked worker, which has the parent's). */
static int (*use_nvrtc)(const char *path);

void
cukit_worker_serve(int fd, int (*ensure_nvrtc)(const char *path))
{
    use_nvrtc = ensure_nvrtc;
    /* A crash must end the worker plainly, so the parent reads its signal: no
     * Python fault handler, no sanitizer report of NVRTC's own fault. */
    static const int defaults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGPIPE};
    for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++)
        signal(defaults[i], SIG_DFL);
    signal(SIGINT, SIG_IGN); /* Ctrl-C is for the user's process, which stops waiting */
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        if (null > 2)
            close(null);
    }
    close_others(fd);
    pthread_t watcher; /* detached: it lives as long as the worker */
    if (pthread_create(&watcher, NULL, watch_parent, (void *)(intptr_t)fd) == 0)
        pthread_detach(watcher);
    for (;;) {
        cukit_compile_request req = {0};
        uint32_t kind, nopts = 0, nnames = 0;
        char *fields[2] = {NULL, NULL}, *cwd = NULL, *nvrtc = NULL;
        char **opts = NULL, **names = NULL;
        if (recv_u32(fd, &kind) < 0)
            _exit(0);
        if (kind == CUKIT_REQUEST_IMAGE) {
            serve_image(fd, use_nvrtc != NULL);
            continue;
        }
        int ok = kind <= CUKIT_OUT_LTOIR &&
                 recv_field(fd, &nvrtc, NULL) == 0 && recv_field(fd, &cwd, NULL) == 0 && recv_field(fd, &fields[0], NULL) == 0 && recv_field(fd, &fields[1], NULL) == 0 &&
                 recv_u32(fd, &nopts) == 0 && nopts < 1000000 &&
                 (opts = calloc(nopts + 1, sizeof *opts)) != NULL;
        for (uint32_t i = 0; ok && i < nopts; i++)
            ok = recv_field(fd, &opts[i], NULL) == 0;
        ok = ok && recv_u32(fd, &nnames) == 0 && nnames < 1000000 &&
             (names = calloc(nnames + 1, sizeof *names)) != NULL;
        for (uint32_t i = 0; ok && i < nnames; i++)
            ok = recv_field(fd, &names[i], NULL) == 0;
        if (!ok)
            _exit(0); /* the user's process closed its end (or is gone) */
        req.kind = (cukit_output)kind;
        req.source = fields[0];
        req.name = fields[1];
        req.nopts = (int)nopts;
        req.opts = (const char *const *)opts;
        req.nnames = (int)nnames;
        req.names = (const char *const *)names;
        cukit_compile_result res;
        /* Quoted #includes and relative -I folders are found from the working folder
         * the user's process has now (gone meanwhile: NVRTC says which file it lacks). */
        if (cwd[0] && chdir(cwd) != 0)
            cwd[0] = '\0';
        if (use_nvrtc && use_nvrtc(nvrtc) < 0) {
            memset(&res, 0, sizeof res);
            failed(&res, (nvrtcResult)11 /* NVRTC_ERROR_INTERNAL_ERROR */, "dlopen");
        }
        else
            run_nvrtc(&req, &res);
        buffer out = {0};
        int32_t status = res.status;
        ok = put(&out, &status, sizeof status) == 0 && put_u32(&out, (uint32_t)res.oom) == 0 &&
             put_field(&out, res.call, strlen(res.call)) == 0 &&
             put_field(&out, res.log, res.log_len) == 0 &&
             put_field(&out, res.image, res.image_len) == 0;
        for (uint32_t i = 0; ok && i < nnames; i++) {
            const char *l = res.lowered ? res.lowered[i] : NULL;
            ok = put_field(&out, l, l ? strlen(l) : 0) == 0;
        }
        if (!ok || send_all(fd, out.data, out.len) < 0)
            _exit(ok ? 0 : 3);
        free(out.data);
        cukit_compile_result_clear(&res, (int)nnames);
        for (uint32_t i = 0; i < nopts; i++)
            free(opts[i]);
        for (uint32_t i = 0; i < nnames; i++)
            free(names[i]);
        free(opts);
        free(names);
        free(fields[0]);
        free(fields[1]);
        free(cwd);
        free(nvrtc);
    }
}

#ifndef CUKIT_WORKER_PROGRAM /* the worker program (worker_main.c) serves; the rest is the extension's */

/* ------------------------------------------------------------------ the pool, in the user's process
 *
 * A worker is the small executable built beside the extension (worker_main.c),
 * started with posix_spawn: no copy of this process's memory and no fork handlers
 * run, which matters once a CUDA context makes fork() cost tens of milliseconds.
 * The first one is started as soon as a compile is known to be needed, before this
 * process loads NVRTC, so both load it at the same time. Idle workers are kept for
 * the next compile; compiles running at once in several threads each get their
 * own. Where the executable is missing, a worker is forked from this process
 * instead (NVRTC already loaded in it). The pool belongs to the process, not to a
 * module instance: it is the second process-wide global besides the entry-point
 * table, and a child forked by the user starts an empty pool of its own (the
 * inherited workers are not its children). */

#define MAX_IDLE 4

typedef struct {
    int fd;    /* our end of the socket pair */
    pid_t pid;
} worker;

static struct {
    pthread_mutex_t lock;
    pid_t owner;  /* the process whose workers these are */
    int nidle;
    worker idle[MAX_IDLE];
} pool = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {{0, 0}}};

static void worker_give_back(worker *w);

static char helper[PATH_MAX]; /* written once, by find_helper */

static void
find_helper(void)
{
    Dl_info info;
    if (dladdr((void *)cukit_compile_run, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        int n = slash ? (int)(slash - info.dli_fname) : 0;
        snprintf(helper, sizeof helper, "%.*s%s" CUKIT_WORKER_NAME, n, info.dli_fname,
                 slash ? "/" : "");
        if (access(helper, X_OK) != 0)
            helper[0] = '\0';
    }
}

/* The worker program beside this extension module, or "" when there is none. */
static const char *
helper_path(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, find_helper);
    return helper;
}

extern char **environ;

/* Start a worker: the helper executable, else a fork. `dirs` (NULL-terminated, may
 * be NULL) are more folders for the program to look for NVRTC in, after its own
 * places, when this process has not loaded NVRTC yet. 0, or -1 with errno. */
static int
worker_start(worker *w, char *const *dirs, int image)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    const char *program = helper_path();
    pid_t pid = -1;
    int err = 0;
    if (image && !program[0]) {
        err = ENOENT; /* an image is loaded only by the executable, never by a fork */
    }
    else if (program[0]) {
        /* The worker's end becomes its descriptor 3 (dup2 clears close-on-exec). */
        int end = sv[1] == 3 ? fcntl(sv[1], F_DUPFD_CLOEXEC, 4) : sv[1];
        posix_spawn_file_actions_t fa;
        const char *nvrtc = cukit_nvrtc_realpath();
        char *argv[16] = {(char *)program, (char *)(image ? "--image" : nvrtc ? nvrtc : ""), NULL};
        for (int i = 0; dirs && dirs[i] && i + 3 < 16; i++)
            argv[i + 2] = dirs[i];
        if (end < 0)
            err = errno;
        else if ((err = posix_spawn_file_actions_init(&fa)) == 0) {
            if ((err = posix_spawn_file_actions_adddup2(&fa, end, 3)) == 0)
                err = posix_spawn(&pid, program, &fa, NULL, argv, environ);
            posix_spawn_file_actions_destroy(&fa);
        }
        if (end >= 0 && end != sv[1])
            close(end);
    }
    else {
        pid = fork();
        if (pid == 0) {
            close(sv[0]);
            cukit_worker_serve(sv[1], NULL);
        }
        err = pid < 0 ? errno : 0;
    }
    close(sv[1]);
    if (err != 0 || pid < 0) {
        close(sv[0]);
        errno = err ? err : EAGAIN;
        return -1;
    }
    w->fd = sv[0];
    w->pid = pid;
    return 0;
}

/* Forget the workers of the process this one was forked from, and those that ended.
 * Under the lock. */
static void
adopt_pool(void)
{
    if (pool.owner != getpid()) {
        for (int i = 0; i < pool.nidle; i++)
            close(pool.idle[i].fd);
        pool.nidle = 0;
        pool.owner = getpid();
    }
    /* Reap the idle ones that ended meanwhile (killed, say), so that none stays a
     * zombie until the pool comes round to it. Only one whose socket shows its end is
     * waited for: an idle worker never writes, and a pid is not asked about while its
     * process may be gone and the number reused (reaped by someone else). */
    for (int i = 0; i < pool.nidle;) {
        struct pollfd p = {pool.idle[i].fd, POLLIN, 0};
        if (poll(&p, 1, 0) == 0) {
            i++;
            continue;
        }
        close(pool.idle[i].fd);
        kill(pool.idle[i].pid, SIGKILL); /* if it is ending, or broke the protocol */
        while (waitpid(pool.idle[i].pid, NULL, 0) < 0 && errno == EINTR)
            ;
        pool.idle[i] = pool.idle[--pool.nidle];
    }
}

/* An idle worker that is still alive (*reused = 1), else a new one. 0, or -1 with
 * errno. */
static int
worker_take(worker *w, int *reused)
{
    for (;;) {
        pthread_mutex_lock(&pool.lock);
        adopt_pool();
        int have = pool.nidle > 0;
        if (have)
            *w = pool.idle[--pool.nidle];
        pthread_mutex_unlock(&pool.lock);
        *reused = have;
        if (!have)
            return worker_start(w, NULL, 0);
        /* One that ended while idle (killed, say) is replaced, not reported. */
        if (waitpid(w->pid, NULL, WNOHANG) == 0)
            return 0;
        close(w->fd);
    }
}

void
cukit_compile_warm(void)
{
    if (!cukit_compile_isolated() || !helper_path()[0])
        return; /* a forked worker needs NVRTC loaded here first */
    pthread_mutex_lock(&pool.lock);
    adopt_pool();
    int none = pool.nidle == 0;
    pthread_mutex_unlock(&pool.lock);
    if (!none)
        return;
    /* The last places the loader looks are the lib folders of NVIDIA's wheels,
     * which only Python can name (the `nvidia` namespace package): the program is
     * told them, so it finds the NVRTC this process will load wherever that is. */
    static const char *subdirs[] = {"cu13/lib", "cuda_nvrtc/lib", "cu12/lib"};
    PyObject *found = PyList_New(0), *pkg = found ? PyImport_ImportModule("nvidia") : NULL;
    PyObject *paths = pkg ? PyObject_GetAttrString(pkg, "__path__") : NULL;
    PyObject *it = paths ? PyObject_GetIter(paths) : NULL, *p;
    while (it && (p = PyIter_Next(it)) != NULL) {
        for (size_t i = 0; i < sizeof subdirs / sizeof *subdirs; i++) {
            PyObject *d = PyUnicode_FromFormat("%S/%s", p, subdirs[i]);
            if (d == NULL || PyList_Append(found, d) < 0)
                PyErr_Clear();
            Py_XDECREF(d);
        }
        Py_DECREF(p);
    }
    PyErr_Clear(); /* no wheels: nothing more to tell */
    char *dirs[13] = {NULL};
    for (Py_ssize_t i = 0; found && i < PyList_GET_SIZE(found) && i < 12; i++)
        if ((dirs[i] = (char *)PyUnicode_AsUTF8(PyList_GET_ITEM(found, i))) == NULL) {
            PyErr_Clear();
            break;
        }
    worker w;
    if (worker_start(&w, dirs, 0) == 0)
        worker_give_back(&w);
    Py_XDECREF(it);
    Py_XDECREF(paths);
    Py_XDECREF(pkg);
    Py_XDECREF(found);
}

static void
worker_give_back(worker *w)
{
    pthread_mutex_lock(&pool.lock);
    adopt_pool();
    int keep = pool.nidle < MAX_IDLE;
    if (keep)
        pool.idle[pool.nidle++] = *w;
    pthread_mutex_unlock(&pool.lock);
    if (!keep) {
        close(w->fd); /* it reads end of file and exits */
        waitpid(w->pid, NULL, 0);
    }
}

/* The worker failed mid-compile: reap it, say how it ended. */
static void
worker_lost(worker *w, cukit_compile_result *res)
{
    int status = 0;
    close(w->fd);
    kill(w->pid, SIGKILL); /* if it is alive but broke the protocol */
    while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
        ;
    res->crashed = 1;
    res->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    res->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int
worker_run(const cukit_compile_request *req, cukit_compile_result *res)
{
    buffer out = {0};
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL)
        cwd[0] = '\0';
    const char *nvrtc = cukit_nvrtc_realpath() ? cukit_nvrtc_realpath() : "";
    int ok = put_u32(&out, (uint32_t)req->kind) == 0 && put_field(&out, nvrtc, strlen(nvrtc)) == 0 &&
             put_field(&out, cwd, strlen(cwd)) == 0 &&
             put_field(&out, req->source, strlen(req->source)) == 0 &&
             put_field(&out, req->name, strlen(req->name)) == 0 &&
             put_u32(&out, (uint32_t)req->nopts) == 0;
    for (int i = 0; ok && i < req->nopts; i++)
        ok = put_field(&out, req->opts[i], strlen(req->opts[i])) == 0;
    ok = ok && put_u32(&out, (uint32_t)req->nnames) == 0;
    for (int i = 0; ok && i < req->nnames; i++)
        ok = put_field(&out, req->names[i], strlen(req->names[i])) == 0;
    memset(res, 0, sizeof *res);
    if (!ok) {
        free(out.data);
        res->oom = 1;
        return -1;
    }
    /* A worker kept idle may have been ended meanwhile (killed, out of memory)
     * without its end of the socket showing it yet: when a reused one fails, the
     * compile is tried once more in a new one before it counts as a crash. */
    worker w;
    int32_t status = 0;
    uint32_t oom = 0;
    for (int attempt = 0;; attempt++) {
        int reused = 0;
        memset(res, 0, sizeof *res);
        if ((attempt == 0 ? worker_take(&w, &reused) : worker_start(&w, NULL, 0)) < 0) {
            free(out.data);
            res->spawn_errno = errno;
            return -1;
        }
        char *call = NULL;
        ok = send_all(w.fd, out.data, out.len) == 0 && recv_all(w.fd, &status, sizeof status) == 0 &&
             recv_u32(w.fd, &oom) == 0 && recv_field(w.fd, &call, NULL) == 0 &&
             recv_field(w.fd, &res->log, &res->log_len) == 0 &&
             recv_field(w.fd, &res->image, &res->image_len) == 0;
        if (ok && req->nnames && (res->lowered = calloc((size_t)req->nnames, sizeof *res->lowered)) == NULL)
            ok = 0;
        for (int i = 0; ok && i < req->nnames; i++)
            ok = recv_field(w.fd, &res->lowered[i], NULL) == 0;
        if (call) {
            snprintf(res->call, sizeof res->call, "%s", call);
            free(call);
        }
        if (ok)
            break;
        cukit_compile_result_clear(res, req->nnames);
        worker_lost(&w, res);
        if (!reused) {
            free(out.data);
            return -1;
        }
    }
    free(out.data);
    worker_give_back(&w);
    res->status = status;
    res->oom = (int)oom;
    if (status == 0 && !oom)
        return 0;
    if (res->lowered) { /* a failed compile has no names to give */
        for (int i = 0; i < req->nnames; i++)
            free(res->lowered[i]);
        free(res->lowered);
        res->lowered = NULL;
    }
    return -1;
}

int
cukit_compile_isolated(void)
{
    const char *e = getenv("CUKIT_COMPILE_IN_PROCESS");
    return !(e && e[0] && strcmp(e, "0") != 0);
}

int
cukit_compile_run(const cukit_compile_request *req, cukit_compile_result *res)
{
    return cukit_compile_isolated() ? worker_run(req, res) : run_nvrtc(req, res);
}


/* ------------------------------------------------------------------ an image check, in the user's process */

/* Wait until fd is readable or deadline (CLOCK_MONOTONIC, ms) passes: 1 readable
 * (or closed), 0 time is up. */
static int
wait_readable(int fd, long long deadline_ms)
{
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long left = deadline_ms - ((long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
        if (left <= 0)
            return 0;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return 1; /* the read that follows reports it */
    }
}

int
cukit_image_check_run(const char *driver, int ordinal, const void *image, size_t n,
                      double timeout_s, cukit_image_check_result *res)
{
    memset(res, 0, sizeof *res);
    if (!helper_path()[0]) {
        res->no_program = 1;
        return -1;
    }
    buffer out = {0};
    if (put_u32(&out, CUKIT_REQUEST_IMAGE) < 0 || put_field(&out, driver, strlen(driver)) < 0 ||
        put_u32(&out, (uint32_t)ordinal) < 0 || put_field(&out, image, n) < 0) {
        free(out.data);
        res->spawn_errno = ENOMEM;
        return -1;
    }
    worker w;
    if (worker_start(&w, NULL, 1) < 0) {
        free(out.data);
        res->spawn_errno = errno;
        return -1;
    }
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long long deadline = (long long)start.tv_sec * 1000 + start.tv_nsec / 1000000 +
                         (long long)(timeout_s * 1000);
    char *call = NULL, *name = NULL;
    int32_t status = 0;
    /* A worker that never reads its request is as stuck as one that never answers. */
    struct timeval limit = {(time_t)timeout_s, (suseconds_t)((timeout_s - (time_t)timeout_s) * 1e6)};
    setsockopt(w.fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    int sent = send_all(w.fd, out.data, out.len) == 0;
    int stuck = !sent && (errno == EAGAIN || errno == EWOULDBLOCK);
    free(out.data);
    int ready = sent ? wait_readable(w.fd, deadline) : !stuck;
    int ok = sent && ready && recv_all(w.fd, &status, sizeof status) == 0 &&
             recv_field(w.fd, &call, NULL) == 0 && recv_field(w.fd, &name, NULL) == 0;
    if (ok) {
        res->status = status;
        snprintf(res->call, sizeof res->call, "%s", call);
        snprintf(res->name, sizeof res->name, "%s", name);
        close(w.fd); /* it reads end of file and exits */
        while (waitpid(w.pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    else {
        cukit_compile_result lost = {0};
        worker_lost(&w, &lost);
        res->hung = !ready;
        res->crashed = ready;
        res->signal = ready ? lost.signal : 0;
        res->exit_status = lost.exit_status;
    }
    free(call);
    free(name);
    return ok ? 0 : -1;
}

#endif /* CUKIT_WORKER_PROGRAM */
