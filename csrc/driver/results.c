/* results.c - CUresult / nvrtcResult -> cukit exceptions, from one table */
#include "driver/driver.h"

#include <pthread.h>
#include <string.h>

/* Driver codes with a class of their own; the rest are plain CudaError. Sticky
 * codes leave the context unusable, so their message says to restart. */
static const struct {
    CUresult code;
    int kind;
    int sticky;
} cu_table[] = {
    {CUDA_ERROR_OUT_OF_MEMORY, CUKIT_EXC_OOM, 0},
    {CUDA_ERROR_NO_DEVICE, CUKIT_EXC_NO_DEVICE, 0},
    {CUDA_ERROR_INVALID_DEVICE, CUKIT_EXC_NO_DEVICE, 0},
    {CUDA_ERROR_STUB_LIBRARY, CUKIT_EXC_NO_DEVICE, 0},
    {CUDA_ERROR_INVALID_VALUE, CUKIT_EXC_INVALID_VALUE, 0},
    {CUDA_ERROR_NOT_SUPPORTED, CUKIT_EXC_NOT_SUPPORTED, 0},
    {CUDA_ERROR_NOT_PERMITTED, CUKIT_EXC_NOT_SUPPORTED, 0},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, CUKIT_EXC_LAUNCH, 0},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, CUKIT_EXC_LAUNCH, 0},
    {CUDA_ERROR_ILLEGAL_ADDRESS, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_LAUNCH_TIMEOUT, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_ASSERT, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_HARDWARE_STACK_ERROR, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_MISALIGNED_ADDRESS, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_INVALID_ADDRESS_SPACE, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_INVALID_PC, CUKIT_EXC_FAULT, 1},
    {CUDA_ERROR_LAUNCH_FAILED, CUKIT_EXC_FAULT, 1},
};

static int
lookup(CUresult res, int *sticky)
{
    for (size_t i = 0; i < sizeof cu_table / sizeof *cu_table; i++) {
        if (cu_table[i].code == res) {
            *sticky = cu_table[i].sticky;
            return cu_table[i].kind;
        }
    }
    *sticky = 0;
    return CUKIT_EXC_CUDA;
}

/* ------------------------------------------------------------------ fork()
 *
 * CUDA state does not survive fork(): in a child of a process that initialised
 * the driver every call fails. A flag set by a pthread_atfork child handler turns
 * that into one clear error. Process-wide like the entry-point table it guards. */

static volatile int forked;

static void
on_fork_child(void)
{
    forked = 1;
}

void
cukit_fork_guard(void)
{
    static int armed;
    if (!armed) {
        armed = 1;
        pthread_atfork(NULL, NULL, on_fork_child);
    }
}

int
cukit_forked(void)
{
    return forked;
}

int
cukit_fork_error(cukit_state *st, const char *call)
{
    PyObject *msg = PyUnicode_FromFormat(
        "%s: this process was forked from one that had already used CUDA, and CUDA state "
        "cannot cross fork(); start worker processes with "
        "multiprocessing.get_context(\"spawn\") (or forkserver), or use CUDA only after the "
        "fork. Compiling and the kernel cache still work here", call ? call : "CUDA");
    if (msg == NULL)
        return -1;
    cukit_raise(st, CUKIT_EXC_NOT_SUPPORTED, CUDA_ERROR_NOT_INITIALIZED,
                "CUDA_ERROR_NOT_INITIALIZED", call, msg);
    Py_DECREF(msg);
    return -1;
}

int
cukit_cu_is_sticky(CUresult res)
{
    if (forked)
        return 1; /* nothing inherited from the parent can be released here */
    int sticky;
    lookup(res, &sticky);
    return sticky;
}

int
cukit_check_cu(cukit_state *st, CUresult res, const char *call)
{
    if (res == CUDA_SUCCESS)
        return 0;
    if (forked)
        return cukit_fork_error(st, call);
    /* A call that failed because Ctrl-C stopped it (the emulator stops a running kernel
     * so) raises what the signal raises, KeyboardInterrupt. */
    if (PyErr_CheckSignals() < 0)
        return -1;
    const char *name = NULL, *text = NULL;
    if (cukit_api.cuGetErrorName(res, &name) != CUDA_SUCCESS || name == NULL)
        name = "CUDA_ERROR_UNRECOGNIZED";
    if (cukit_api.cuGetErrorString(res, &text) != CUDA_SUCCESS || text == NULL)
        text = "unrecognized error code";
    int sticky;
    int kind = lookup(res, &sticky);
    /* A fault leaves a GPU's context unusable; ask the driver rather than assume it
     * (the emulator's context survives its faults). */
    if (sticky && cukit_api.cuCtxSynchronize && cukit_api.cuCtxSynchronize() == CUDA_SUCCESS)
        sticky = 0;
    /* What to say after the driver's text, once: the emulator's own text has said that
     * the context is lost and named the thread and line, so it only gets the capture;
     * a GPU's says neither, so its gets both and the tools that find the kernel there. */
    const char *after = "";
    const char *backend = cukit_backend_name();
    if (sticky && backend && strcmp(backend, "emulator") == 0)
        after = st->capture ? "" : " To save the launches that led here for replay, run with "
                                   "CUKIT_CAPTURE=DIR.";
    else if (sticky)
        after = st->capture ? ". A kernel faulted: the CUDA context can no longer be used and every "
                              "later CUDA call in this process will fail; restart the process"
                            : ". A kernel faulted: the CUDA context can no longer be used and every "
                              "later CUDA call in this process will fail; restart the process. To "
                              "find the kernel and line: run with CUKIT_CAPTURE=DIR and replay it on "
                              "the CPU emulator (python -m cukit replay DIR/fault-1 --backend "
                              "emulator), or under compute-sanitizer";
    PyObject *msg = PyUnicode_FromFormat("%s failed: %s (%d): %s%s", call, name, res, text, after);
    if (msg == NULL)
        return -1;
    cukit_raise(st, kind, res, name, call, msg);
    Py_DECREF(msg);
    return -1;
}

int
cukit_check_nvrtc(cukit_state *st, nvrtcResult res, const char *call)
{
    if (res == NVRTC_SUCCESS)
        return 0;
    const char *name = cukit_api.nvrtcGetErrorString(res);
    PyObject *msg = PyUnicode_FromFormat("%s failed: %s (%d)", call, name ? name : "?", res);
    if (msg == NULL)
        return -1;
    cukit_raise(st, res == NVRTC_ERROR_OUT_OF_MEMORY ? CUKIT_EXC_OOM : CUKIT_EXC_CUDA, res, name,
                call, msg);
    Py_DECREF(msg);
    return -1;
}

int
cukit_missing_entry(cukit_state *st, const char *call)
{
    PyObject *msg = PyUnicode_FromFormat(
        "this CUDA driver has no %s; update the NVIDIA driver to use this feature", call);
    if (msg == NULL)
        return -1;
    cukit_raise(st, CUKIT_EXC_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
                call, msg);
    Py_DECREF(msg);
    return -1;
}
