/* driver.c - the emulator's driver table: the device and context entry points, and
 * cukit_emulator_fill, which takes the others from state.c, streams.c, memory.c, launch.c, arrays.c */
#include "emulator/checks.h"
#include "emulator/emulator.h"
#include "emulator/driver/entries.h"

#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------------ device and context */

static _Thread_local CUcontext current_ctx;

/* The emulator's settings from the environment, checked where a driver checks its own:
 * at cuInit and when the context is made. */
static CUresult
check_settings(void)
{
    CUresult r = emu_check_memory_setting();
    if (r != CUDA_SUCCESS)
        return r;
    if (!emu_threads_setting_ok())
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "CUKIT_EMULATOR_THREADS=%s is not a number of "
                          "threads (a whole number, at least 1)", getenv("CUKIT_EMULATOR_THREADS"));
    const char *bad;
    if (emu_check_setting(&bad) < 0)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "CUKIT_EMULATOR_CHECK=%s is not a list of the "
                          "emulator's checkers (race, init, sync, or all; such as race,init)", bad);
    if (emu_timeout_seconds(&bad) < 0)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "CUKIT_EMULATOR_TIMEOUT=%s is not a number of "
                          "seconds (such as 10 or 0.5)", bad);
    return emu_ok();
}

static CUresult e_cuInit(unsigned int flags) { return check_settings(); }
static CUresult e_cuDriverGetVersion(int *v) { *v = 13000; return emu_ok(); }
static CUresult e_cuDeviceGetCount(int *n) { *n = 1; return emu_ok(); }

static CUresult
e_cuDeviceGet(CUdevice *d, int ordinal)
{
    if (ordinal != 0)
        return emu_failed(CUDA_ERROR_INVALID_DEVICE, "the emulator has one device, 0");
    *d = 0;
    return emu_ok();
}

static CUresult
e_cuDeviceGetName(char *name, int len, CUdevice d)
{
    int cc = emu_arch_cc();
    snprintf(name, (size_t)len, "cukit emulator (PTX on the CPU, sm_%d)", cc);
    return emu_ok();
}

static CUresult
e_cuDeviceTotalMem(size_t *bytes, CUdevice d)
{
    *bytes = emu_total_memory();
    return emu_ok();
}

static CUresult
e_cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
    int cc = emu_arch_cc();
    static const struct {
        int attr, value;
    } table[] = {
        {1, 1024}, {2, 1024}, {3, 1024}, {4, 64}, {5, 2147483647}, {6, 65535}, {7, 65535},
        {8, 48 * 1024}, {9, 64 * 1024}, {10, 32}, {11, 2147483647}, {12, 65536}, {13, 1000000},
        {14, 512}, {51, 32}, {15, 1}, {17, 0}, {18, 0}, {19, 1}, {20, 0}, {30, 512}, {31, 1}, {36, 1000000},
        {37, 64}, {38, 1 << 20}, {39, 2048}, {40, 1}, {41, 1}, {78, 1}, {79, 1}, {80, 1},
        {81, 228 * 1024}, {82, 65536}, {83, 1}, {86, 1}, {87, 2}, {88, 1}, {89, 1}, {91, 1},
        {95, 0}, {96, 0}, {97, 227 * 1024}, {99, 1}, {100, 1}, {101, 1}, {106, 32}, {115, 1},
        {120, 0},
    };
    if (attr == CUKIT_DEVICE_ATTRIBUTE_PTX_ONLY) {
        *v = 1;
        return emu_ok();
    }
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = cc / 10; return emu_ok();
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = cc % 10; return emu_ok();
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = emu_thread_count(); return emu_ok();
    }
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        if (table[i].attr == attr) {
            *v = table[i].value;
            return emu_ok();
        }
    }
    if (attr <= 0 || attr > 200)
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "the emulator has no device attribute %d", attr);
    *v = 0;
    return emu_ok();
}

static CUresult
e_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d)
{
    CUresult r = check_settings();
    if (r != CUDA_SUCCESS)
        return r;
    *ctx = &emu_primary_ctx;
    return emu_ok();
}

static CUresult e_cuCtxGetCurrent(CUcontext *ctx) { *ctx = current_ctx; return emu_ok(); }
static CUresult e_cuCtxSetCurrent(CUcontext ctx) { current_ctx = ctx; return emu_ok(); }
static CUresult e_cuCtxGetDevice(CUdevice *d) { *d = 0; return emu_ok(); }
/* Runs what deferred execution queued, and reports a fault held since. */
static CUresult e_cuCtxSynchronize(void) { emu_sync_all(); return emu_take_pending() ?: emu_ok(); }

/* The context limits (CUlimit 0 to 6), as a GPU's context starts: stack size, printf
 * FIFO, malloc heap, device-runtime sync depth and pending launches, L2 fetch
 * granularity, persisting L2. The emulator keeps what is set and enforces none. */
static size_t emu_limits[7] = {1024, 1 << 20, 8 << 20, 2, 2048, 64, 0};

static CUresult
e_cuCtxGetLimit(size_t *v, int which)
{
    if (which < 0 || which >= (int)(sizeof emu_limits / sizeof *emu_limits))
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "no context limit %d", which);
    *v = emu_limits[which];
    return emu_ok();
}

static CUresult
e_cuCtxSetLimit(int which, size_t v)
{
    if (which < 0 || which >= (int)(sizeof emu_limits / sizeof *emu_limits))
        return emu_failed(CUDA_ERROR_INVALID_VALUE, "no context limit %d", which);
    emu_limits[which] = v;
    return emu_ok();
}

static CUresult
e_cuMemGetInfo(size_t *free_, size_t *total)
{
    *total = emu_total_memory();
    uint64_t used = emu_used_bytes + emu_pool_cached_bytes();
    *free_ = used < *total ? *total - used : 0;
    return emu_ok();
}

/* ------------------------------------------------------------------ the table */

int
cukit_emulator_fill(cukit_api_t *api)
{
#define E(name) api->name = e_##name;
    E(cuInit) E(cuDriverGetVersion) E(cuDeviceGetCount) E(cuDeviceGet) E(cuDeviceGetName) E(cuDeviceTotalMem) E(cuDeviceGetAttribute) E(cuDevicePrimaryCtxRetain) E(cuCtxGetCurrent) E(cuCtxSetCurrent) E(cuCtxGetDevice) E(cuCtxSynchronize) E(cuMemGetInfo)
    E(cuCtxGetLimit) E(cuCtxSetLimit)
#undef E
    emu_fill_errors(api);
    emu_fill_streams(api);
    emu_fill_memory(api);
    emu_fill_launch(api);
    emu_fill_unsupported(api);
    emu_fill_textures(api);
    return 0;
}

static PyObject *
mod_emulator_instructions(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(__atomic_load_n(&emu_thread_instructions, __ATOMIC_RELAXED));
}

static PyObject *
mod_emulator_threads(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(emu_thread_count());
}

/* {kernel: mul and add/sub pairs the emulator fuses into fma} of a PTX module, for
 * tools/contraction_check.py, which compares them with ptxas's. Needs no device. */
static PyObject *
mod_emulator_contractions(PyObject *m, PyObject *arg)
{
    char *ptx;
    Py_ssize_t n;
    if (PyBytes_AsStringAndSize(arg, &ptx, &n) < 0)
        return NULL;
    if ((Py_ssize_t)strlen(ptx) != n) {
        PyErr_SetString(PyExc_ValueError, "_emulator_contractions: the PTX holds a NUL byte");
        return NULL;
    }
    char why[1024] = "";
    emu_module *mod;
    Py_BEGIN_ALLOW_THREADS
    mod = emu_ptx_load(ptx, why, sizeof why);
    Py_END_ALLOW_THREADS
    if (mod == NULL) {
        PyErr_Format(PyExc_ValueError, "_emulator_contractions: the emulator cannot read this PTX: %s",
                     why);
        return NULL;
    }
    PyObject *out = PyDict_New();
    for (int i = 0; out && i < mod->nfuncs; i++) {
        PyObject *v = PyLong_FromLong(mod->funcs[i]->fused);
        if (v == NULL || PyDict_SetItemString(out, mod->funcs[i]->name, v) < 0)
            Py_CLEAR(out);
        Py_XDECREF(v);
    }
    emu_module_free(mod);
    return out;
}

/* The checkers on (a mask of EMU_CHECK_*), for cukit.debug.check: the mask before. */
static PyObject *
mod_emulator_check(PyObject *m, PyObject *arg)
{
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    if (v < 0 || v > EMU_CHECK_ALL) {
        PyErr_Format(PyExc_ValueError, "_emulator_check: %ld is not a mask of the checkers (0 to %d)",
                     v, EMU_CHECK_ALL);
        return NULL;
    }
    return PyLong_FromUnsignedLong(__atomic_exchange_n(&emu_checks, (unsigned)v, __ATOMIC_RELAXED));
}

/* ([(checker, text, count), ...], dropped): the checkers' reports since the last call. */
static PyObject *
mod_emulator_check_reports(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    static const char *const names[] = {
        [EMU_CHECK_RACE] = "racecheck", [EMU_CHECK_INIT] = "initcheck", [EMU_CHECK_SYNC] = "synccheck",
    };
    size_t n;
    uint64_t dropped;
    emu_report *r = emu_check_take(&n, &dropped);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; i < n; i++) {
        if (list) {
            PyObject *item = Py_BuildValue("(ssK)", names[r[i].kind], r[i].text,
                                           (unsigned long long)r[i].count);
            if (item == NULL)
                Py_CLEAR(list);
            else
                PyList_SET_ITEM(list, (Py_ssize_t)i, item);
        }
        free(r[i].text);
    }
    free(r);
    if (list == NULL)
        return NULL;
    PyObject *out = Py_BuildValue("(NK)", list, (unsigned long long)dropped);
    return out;
}

static PyMethodDef emulator_functions[] = {
    {"_emulator_check", mod_emulator_check, METH_O,
     "Set the emulator's checkers on (a mask: 1 race, 2 init, 4 sync); the mask before (cukit.debug.check)."},
    {"_emulator_check_reports", mod_emulator_check_reports, METH_NOARGS,
     "([(checker, text, count), ...], dropped): the checkers' reports since the last call."},
    {"_emulator_contractions", mod_emulator_contractions, METH_O,
     "{kernel: mul and add/sub pairs fused into fma} of a PTX module (tools/contraction_check.py)."},
    {"_emulator_instructions", mod_emulator_instructions, METH_NOARGS,
     "Thread-instructions the emulator has run in this process (for benchmarks)."},
    {"_emulator_threads", mod_emulator_threads, METH_NOARGS,
     "CPU threads the emulator spreads blocks over (CUKIT_EMULATOR_THREADS)."},
    {NULL},
};

int
cukit_emulator_setup(PyObject *module, cukit_state *st)
{
    cukit_driver_set_emulator(cukit_emulator_fill);
    return PyModule_AddFunctions(module, emulator_functions);
}
