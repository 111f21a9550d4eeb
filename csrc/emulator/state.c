/* state.c - what every part of the emulator uses: errors and held faults, the allocation
 * registry, the device's settings and its one context (the entry points: driver.c and the others) */
#include "emulator/checks.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ errors */

/* The detail of the last failure on this thread, returned by cuGetErrorString for
 * that code: how the emulator says which address faulted or what it cannot do. */
static _Thread_local CUresult last_code;
static _Thread_local char last_why[2560];

CUresult
emu_failed(CUresult code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_why, sizeof last_why, fmt, ap);
    va_end(ap);
    last_code = code;
    return code;
}

const char *
emu_last_why(void)
{
    return last_why;
}

static const struct {
    CUresult code;
    const char *name, *text;
} error_names[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
     "an illegal instruction was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT",
     "the launch timed out and was terminated"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
     "too many blocks in cooperative launch"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult
e_cuGetErrorName(CUresult res, const char **out)
{
    for (size_t i = 0; i < sizeof error_names / sizeof *error_names; i++) {
        if (error_names[i].code == res) {
            *out = error_names[i].name;
            return CUDA_SUCCESS;
        }
    }
    *out = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult
e_cuGetErrorString(CUresult res, const char **out)
{
    if (res == last_code && last_why[0]) {
        *out = last_why;
        return CUDA_SUCCESS;
    }
    for (size_t i = 0; i < sizeof error_names / sizeof *error_names; i++) {
        if (error_names[i].code == res) {
            *out = error_names[i].text;
            return CUDA_SUCCESS;
        }
    }
    *out = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* Success; the last failure's text stays readable until the next failure. */
CUresult
emu_ok(void)
{
    last_code = CUDA_SUCCESS;
    return CUDA_SUCCESS;
}

/* A kernel fault, held until the next call that waits for the device reports it, as a
 * GPU does. Then, as on a GPU, the context is lost: the fault stays held and every
 * later call that uses the context fails with it until the process ends.
 *
 * With CUKIT_EMULATOR_DEBUG_KEEP_CONTEXT=1 (a debugging aid, not a GPU's behaviour),
 * and for failures that do not cost a GPU its context, the context stays usable and
 * each fault is reported once: to the thread that launched the kernel where that is
 * known, else to the next thread that waits. Several are held at once (one thread's
 * fault does not hide another's) and a wait reports all that are its; a thread that
 * ends without waiting hands its faults to the next thread that waits, so none is lost. */
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static CUresult pending_code;         /* the fault that lost the context */
static char pending_why[2560];

enum { HELD_MAX = 16 };
static struct {
    CUresult code;
    uint64_t by;                      /* the launching thread's number; 0: not known */
    char why[2560];
} held[HELD_MAX];                     /* reported once each, oldest first */
static int nheld;                     /* atomic reads outside the lock */
static unsigned held_dropped;         /* faults past HELD_MAX, named in the next report */

/* Threads that launch kernels are numbered (a pthread_t may be reused once its thread
 * ends; a number is not), and the live ones listed. */
static _Thread_local uint64_t my_number;
static uint64_t numbers_given;
static uint64_t *live;
static size_t nlive, caplive;
static pthread_key_t launcher_key;
static pthread_once_t launcher_once = PTHREAD_ONCE_INIT;

int
emu_keep_context(void)
{
    const char *v = getenv("CUKIT_EMULATOR_DEBUG_KEEP_CONTEXT");
    return v && v[0] && strcmp(v, "0") != 0;
}

/* Faults that cost a GPU its context (the driver's sticky errors). */
static int
loses_context(CUresult code)
{
    switch (code) {
    case CUDA_ERROR_ILLEGAL_ADDRESS: case CUDA_ERROR_LAUNCH_TIMEOUT: case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR: case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS: case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC: case CUDA_ERROR_LAUNCH_FAILED:
        return 1;
    default:
        return 0;
    }
}

/* At the exit of a thread that launched kernels: its unreported faults go to whichever
 * thread waits next. */
static void
launcher_exit(void *number)
{
    uint64_t n = (uint64_t)(uintptr_t)number;
    pthread_mutex_lock(&pending_lock);
    for (int i = 0; i < nheld; i++) {
        if (held[i].by == n)
            held[i].by = 0;
    }
    for (size_t i = 0; i < nlive; i++) {
        if (live[i] == n) {
            live[i] = live[--nlive];
            break;
        }
    }
    pthread_mutex_unlock(&pending_lock);
}

static void
launcher_key_make(void)
{
    (void)pthread_key_create(&launcher_key, launcher_exit);
}

uint64_t
emu_launcher(void)
{
    if (my_number)
        return my_number;
    (void)pthread_once(&launcher_once, launcher_key_make);
    uint64_t n = __atomic_add_fetch(&numbers_given, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&pending_lock);
    if (nlive == caplive) {
        size_t cap = caplive ? 2 * caplive : 16;
        uint64_t *grown = realloc(live, cap * sizeof *live);
        if (grown == NULL) {
            pthread_mutex_unlock(&pending_lock);
            return 0; /* out of memory: this thread's faults go to the next wait */
        }
        live = grown;
        caplive = cap;
    }
    live[nlive++] = n;
    pthread_mutex_unlock(&pending_lock);
    (void)pthread_setspecific(launcher_key, (void *)(uintptr_t)n);
    my_number = n;
    return n;
}

void
emu_set_pending_from(CUresult code, const char *why, uint64_t by)
{
    pthread_mutex_lock(&pending_lock);
    if (loses_context(code) && !emu_keep_context()) {
        if (pending_code == CUDA_SUCCESS) {
            snprintf(pending_why, sizeof pending_why, "%s", why);
            __atomic_store_n(&pending_code, code, __ATOMIC_RELAXED);
        }
    }
    else if (nheld == HELD_MAX) {
        held_dropped++;
    }
    else {
        int alive = 0;
        for (size_t i = 0; i < nlive && !alive; i++)
            alive = live[i] == by;
        held[nheld].code = code;
        held[nheld].by = alive ? by : 0; /* a launcher that has ended: the next wait */
        snprintf(held[nheld].why, sizeof held[nheld].why, "%s", why);
        __atomic_store_n(&nheld, nheld + 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&pending_lock);
}

void
emu_set_pending(CUresult code, const char *why)
{
    emu_set_pending_from(code, why, 0);
}

/* The fault for this thread's wait: the lost context's, else every held one that is
 * this thread's or nobody's, reported now and let go (the oldest by its code, the others
 * named in its text: cukit's own check right after a fault must not take one of them);
 * CUDA_SUCCESS if none. */
CUresult
emu_take_pending(void)
{
    if (__atomic_load_n(&pending_code, __ATOMIC_RELAXED) == CUDA_SUCCESS &&
        __atomic_load_n(&nheld, __ATOMIC_RELAXED) == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&pending_lock);
    CUresult code = pending_code;
    if (code != CUDA_SUCCESS) {
        snprintf(last_why, sizeof last_why, "%s", pending_why);
        last_code = code;
        pthread_mutex_unlock(&pending_lock);
        return code;
    }
    int kept = 0, more = 0;
    size_t len = 0;
    for (int i = 0; i < nheld; i++) {
        if (held[i].by && held[i].by != my_number) {
            held[kept++] = held[i]; /* another live thread's */
            continue;
        }
        if (code == CUDA_SUCCESS) {
            code = held[i].code;
            len = (size_t)snprintf(last_why, sizeof last_why, "%s", held[i].why);
        }
        else if (len < sizeof last_why) {
            len += (size_t)snprintf(last_why + len, sizeof last_why - len, "%s%.300s",
                                    more ? " | " : " [held with it, also reported now: ",
                                    held[i].why);
            more++;
        }
    }
    if (more && len < sizeof last_why)
        len += (size_t)snprintf(last_why + len, sizeof last_why - len, "]");
    if (code != CUDA_SUCCESS && held_dropped && len < sizeof last_why)
        snprintf(last_why + len, sizeof last_why - len, " (%u later faults were not held: more "
                 "than %d at once)", held_dropped, HELD_MAX);
    if (code != CUDA_SUCCESS) {
        held_dropped = 0;
        last_code = code;
    }
    __atomic_store_n(&nheld, kept, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&pending_lock);
    return code;
}

/* The lost context's fault for a call that uses the context; CUDA_SUCCESS if none. */
CUresult
emu_context_lost(void)
{
    if (__atomic_load_n(&pending_code, __ATOMIC_RELAXED) == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&pending_lock);
    CUresult code = pending_code;
    snprintf(last_why, sizeof last_why, "%s", pending_why);
    last_code = code;
    pthread_mutex_unlock(&pending_lock);
    return code;
}

/* ------------------------------------------------------------------ the allocation registry */

static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static emu_alloc *allocs;      /* sorted by base */
static size_t nallocs, capallocs;
static emu_alloc freed[64];    /* the last frees, for "already freed" in fault messages */
static size_t nfreed;
static size_t bitmaps;         /* allocations with initcheck's bitmap */
uint64_t emu_used_bytes;

/* index of the first allocation with base > addr */
static size_t
upper(uint64_t addr)
{
    size_t lo = 0, hi = nallocs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (allocs[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int
emu_registry_add(uint64_t base, uint64_t size, int kind, const char *origin)
{
    pthread_rwlock_wrlock(&reg_lock);
    int rc = 0;
    if (nallocs == capallocs) {
        size_t cap = capallocs ? capallocs * 2 : 1024;
        emu_alloc *v = realloc(allocs, cap * sizeof *v);
        if (v == NULL) {
            rc = -1;
            goto done;
        }
        allocs = v;
        capallocs = cap;
    }
    size_t i = upper(base);
    memmove(&allocs[i + 1], &allocs[i], (nallocs - i) * sizeof *allocs);
    allocs[i].base = base;
    allocs[i].size = size;
    allocs[i].kind = kind;
    snprintf(allocs[i].origin, sizeof allocs[i].origin, "%s", origin);
    /* device memory made while initcheck is on: which bytes were written (a GPU's fresh
     * memory is no one's data, whatever it reads as) */
    allocs[i].written = NULL;
    if ((kind == EMU_DEVICE || kind == EMU_POOLED) &&
        (__atomic_load_n(&emu_checks, __ATOMIC_RELAXED) & EMU_CHECK_INIT) &&
        (allocs[i].written = calloc(1, (size_t)(size / 8 + 1))) == NULL) {
        memmove(&allocs[i], &allocs[i + 1], (nallocs - i) * sizeof *allocs);
        rc = -1;
        goto done;
    }
    if (allocs[i].written)
        __atomic_fetch_add(&bitmaps, 1, __ATOMIC_RELAXED);
    nallocs++;
    if (kind == EMU_DEVICE || kind == EMU_MANAGED || kind == EMU_POOLED)
        emu_used_bytes += size;
done:
    pthread_rwlock_unlock(&reg_lock);
    return rc;
}

int
emu_registry_remove(uint64_t base, emu_alloc *out)
{
    pthread_rwlock_wrlock(&reg_lock);
    size_t i = upper(base);
    int rc = -1;
    if (i > 0 && allocs[i - 1].base == base) {
        i--;
        if (allocs[i].written)
            __atomic_fetch_sub(&bitmaps, 1, __ATOMIC_RELAXED);
        free(allocs[i].written);
        allocs[i].written = NULL;
        if (out)
            *out = allocs[i];
        freed[nfreed++ % 64] = allocs[i];
        if (allocs[i].kind == EMU_DEVICE || allocs[i].kind == EMU_MANAGED ||
            allocs[i].kind == EMU_POOLED)
            emu_used_bytes -= allocs[i].size;
        memmove(&allocs[i], &allocs[i + 1], (nallocs - i - 1) * sizeof *allocs);
        nallocs--;
        rc = 0;
    }
    pthread_rwlock_unlock(&reg_lock);
    return rc;
}

int
emu_registry_find(uint64_t addr, uint64_t size, emu_alloc *out)
{
    size_t i = upper(addr);
    if (i == 0)
        return 0;
    const emu_alloc *a = &allocs[i - 1];
    if (addr + size > a->base + a->size || addr + size < addr)
        return 0;
    *out = *a;
    return 1;
}

int
emu_registry_containing(uint64_t addr, emu_alloc *out)
{
    pthread_rwlock_rdlock(&reg_lock);
    int rc = emu_registry_find(addr, 1, out);
    pthread_rwlock_unlock(&reg_lock);
    return rc;
}

int
emu_registry_nearest(uint64_t addr, emu_alloc *out, int *was_freed)
{
    *was_freed = 0;
    size_t i = upper(addr);
    const emu_alloc *below = i > 0 ? &allocs[i - 1] : NULL;
    const emu_alloc *above = i < nallocs ? &allocs[i] : NULL;
    /* memory that was freed and not handed out again */
    for (size_t k = 0; k < (nfreed < 64 ? nfreed : 64); k++) {
        const emu_alloc *f = &freed[k];
        /* a freed block a live neighbour overlaps was handed out again (in part): the
         * address past that neighbour's end is its overrun, not a use after free */
        int reused = (below && f->base < below->base + below->size && below->base < f->base + f->size) ||
                     (above && f->base < above->base + above->size && above->base < f->base + f->size);
        if (addr >= f->base && addr < f->base + f->size && !reused &&
            !(below && addr < below->base + below->size)) {
            *out = *f;
            *was_freed = 1;
            return 1;
        }
    }
    uint64_t db = below ? addr - (below->base + below->size) : UINT64_MAX;
    uint64_t da = above ? above->base - addr : UINT64_MAX;
    if (below && db <= da) {
        *out = *below;
        return 1;
    }
    if (above) {
        *out = *above;
        return 1;
    }
    return 0;
}

void
emu_registry_rdlock(void)
{
    pthread_rwlock_rdlock(&reg_lock);
}

void
emu_registry_unlock(void)
{
    pthread_rwlock_unlock(&reg_lock);
}

void
emu_mark_written(uint64_t addr, uint64_t n)
{
    emu_alloc a;
    if (n == 0 || __atomic_load_n(&bitmaps, __ATOMIC_RELAXED) == 0)
        return;
    pthread_rwlock_rdlock(&reg_lock);
    if (emu_registry_find(addr, n, &a) && a.written)
        emu_bits_set(a.written, addr - a.base, n);
    pthread_rwlock_unlock(&reg_lock);
}

/* Whether [p, p+n) lies inside one registered allocation. */
int
emu_valid_range(CUdeviceptr p, size_t n)
{
    emu_alloc a;
    pthread_rwlock_rdlock(&reg_lock);
    int rc = emu_registry_find(p, n ? n : 1, &a);
    pthread_rwlock_unlock(&reg_lock);
    return rc;
}

/* The folder of cukit's package, with a final '/': the one this extension module was
 * loaded from. "" when unknown. */
static const char *
package_dir(void)
{
    static char dir[4096];
    static int done;
    if (!done) {
        Dl_info info;
        if (dladdr((void *)&package_dir, &info) && info.dli_fname) {
            const char *slash = strrchr(info.dli_fname, '/');
            size_t len = slash ? (size_t)(slash - info.dli_fname) + 1 : 0;
            if (len < sizeof dir) {
                memcpy(dir, info.dli_fname, len);
                dir[len] = '\0';
            }
        }
        done = 1;
    }
    return dir;
}

/* "test_x.py:31": the Python line that asked for the memory, when Python is running
 * this thread; frames inside cukit's own package (its folder, not any folder that
 * happens to be named cukit) are skipped. */
void
emu_origin_of(char *buf, size_t n, const char *what)
{
    snprintf(buf, n, "%s", what);
    const char *own = package_dir();
    size_t ownlen = strlen(own);
    if (!Py_IsInitialized() || !PyGILState_Check())
        return;
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    while (f) {
        PyCodeObject *code = PyFrame_GetCode(f);
        const char *file = code ? PyUnicode_AsUTF8(code->co_filename) : NULL;
        if (file && !(ownlen && strncmp(file, own, ownlen) == 0)) {
            const char *base = strrchr(file, '/');
            snprintf(buf, n, "%s:%d", base ? base + 1 : file, PyFrame_GetLineNumber(f));
            Py_XDECREF(code);
            Py_DECREF(f);
            PyErr_Clear();
            return;
        }
        Py_XDECREF(code);
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    PyErr_Clear();
}

/* ------------------------------------------------------------------ the device's settings and context */

struct CUctx_st {
    int magic;
} emu_primary_ctx;
/* CUKIT_EMULATOR_ARCH as a compute capability (sm_80, compute_80 or 80, sm_50 to sm_199),
 * 0 when it is set to something else; 90 when unset. */
static int
arch_setting(void)
{
    const char *env = getenv("CUKIT_EMULATOR_ARCH");
    if (env == NULL || env[0] == '\0')
        return 90;
    const char *num = strncmp(env, "sm_", 3) == 0 ? env + 3 : strncmp(env, "compute_", 8) == 0
                      ? env + 8 : env;
    char *end;
    long cc = isdigit((unsigned char)num[0]) ? strtol(num, &end, 10) : 0;
    if (cc && (*end == 'a' || *end == 'f') && end[1] == '\0' && num != env)
        end++;
    return cc >= 50 && cc < 200 && *end == '\0' ? (int)cc : 0;
}

int
emu_arch_cc(void)
{
    int cc = arch_setting();
    return cc ? cc : 90;
}

/* The emulated device's memory comes out of the host's, which also holds the host's
 * copies of the same data: by default it is half the host's physical memory (a test
 * that sizes its arrays by the device's free memory then leaves the host room).
 * CUKIT_EMULATOR_MEMORY sets it: bytes, or a number with K, M, G or T (powers of 1024). */
static int memory_env_bad; /* CUKIT_EMULATOR_MEMORY is not a size: cuInit refuses it */

size_t
emu_total_memory(void)
{
    static size_t total;
    size_t t = __atomic_load_n(&total, __ATOMIC_RELAXED);
    if (t)
        return t;
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    t = pages > 0 && size > 0 ? (size_t)pages * (size_t)size / 2 : (size_t)8 << 30;
    const char *env = getenv("CUKIT_EMULATOR_MEMORY");
    if (env && env[0]) {
        char *end = NULL;
        double v = strtod(env, &end);
        static const char units[] = "KMGT";
        const char *u = end && *end ? strchr(units, *end == 'k' ? 'K' : *end) : NULL;
        int shift = u ? 10 * (int)(u - units + 1) : 0;
        double bytes = v * (double)((size_t)1 << shift);
        /* at least a MiB, which cukit's own work needs; at most 2^62 bytes (a size_t) */
        if (end != env && v >= 1 && bytes >= (double)(1 << 20) && bytes <= 0x1p62 &&
            (!*end || (u && (!end[1] || (end[1] == 'B' && !end[2])))))
            t = (size_t)bytes;
        else
            __atomic_store_n(&memory_env_bad, 1, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&total, t, __ATOMIC_RELAXED);
    return t;
}

CUresult
emu_check_memory_setting(void)
{
    emu_total_memory();
    if (memory_env_bad)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "CUKIT_EMULATOR_MEMORY=%s is not a size of "
                          "memory: give bytes or a number with K, M, G or T (such as 8G or 512M), "
                          "from 1M to 4194304T", getenv("CUKIT_EMULATOR_MEMORY"));
    if (!arch_setting())
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "CUKIT_EMULATOR_ARCH=%s is not an architecture: "
                          "give one such as sm_80, compute_90 or 89, from sm_50 to sm_199",
                          getenv("CUKIT_EMULATOR_ARCH"));
    return emu_ok();
}

/* A host pointer is pinned, registered or managed memory (not pageable). */
int
emu_host_pinned(const void *p)
{
    emu_alloc a;
    return emu_registry_containing((uint64_t)(uintptr_t)p, &a);
}

void
emu_fill_errors(cukit_api_t *api)
{
    api->cuGetErrorName = e_cuGetErrorName;
    api->cuGetErrorString = e_cuGetErrorString;
}
