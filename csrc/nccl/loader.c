/* loader.c - finds and dlopens libnccl, fills cukit_nccl_api, NCCL results to NcclError, the dtype and op tables */
#include "nccl/nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cukit_nccl_api_t cukit_nccl_api;

enum { REQUIRED = 1, OPTIONAL = 0 };

static const cukit_entry entries[] = {
#define CUKIT_X(ret, name, sym, req, params) {sym, offsetof(cukit_nccl_api_t, name), req},
    CUKIT_NCCL_API(CUKIT_X)
#undef CUKIT_X
};

/* What the first attempt found; later calls repeat it. Process-wide, like the table. */
static struct {
    int state;        /* 0 not tried, 1 ready, -1 failed */
    int version;      /* ncclGetVersion's code */
    char path[1024];
    char why[3072];
} loaded;

/* Searched in order: CUKIT_NCCL (alone when set), a libnccl already in the process
 * (torch's), NVIDIA's wheels (nvidia-nccl-cu13 and nvidia-nccl-cu12 both install
 * nccl/lib), torch's lib folder (some builds ship libnccl there), the loader path. */
static const cukit_library nccl_library = {
    {"libnccl.so.2", "libnccl.so", NULL},
    "CUKIT_NCCL",
    1,
    {{"nvidia", {"nccl/lib", "cu13/lib", "cu12/lib", NULL}}, {"torch", {"lib", NULL}}},
    {CUKIT_LIB_LOADED, CUKIT_LIB_PACKAGES, CUKIT_LIB_LOADER_PATH},
};

int
cukit_nccl_load(cukit_state *st)
{
    if (loaded.state == 0) {
        char tried[2048] = "";
        void *lib = cukit_library_search(&nccl_library, NULL, loaded.path, sizeof loaded.path,
                                         tried, sizeof tried);
        loaded.state = -1;
        if (lib == NULL) {
            snprintf(loaded.why, sizeof loaded.why,
                     "NCCL (libnccl.so.2) was not found; looked in: %s. Install it with "
                     "`pip install nvidia-nccl-cu13` (CUDA 13; nvidia-nccl-cu12 for CUDA 12; "
                     "or `pip install '.[nccl]'` in cukit's checkout), or point CUKIT_NCCL at "
                     "the library",
                     tried);
        }
        else {
            const char *missing = cukit_entries_fill(&cukit_nccl_api, lib, entries,
                                                     sizeof entries / sizeof *entries, 0);
            int v = 0;
            if (missing)
                snprintf(loaded.why, sizeof loaded.why,
                         "%s has no %s: it is too old for cukit (NCCL 2.13 or newer is needed); "
                         "`pip install -U nvidia-nccl-cu13`",
                         loaded.path, missing);
            else if (cukit_nccl_api.ncclGetVersion(&v) != ncclSuccess || v < CUKIT_NCCL_MIN_VERSION)
                snprintf(loaded.why, sizeof loaded.why,
                         "%s is NCCL version code %d; cukit needs NCCL 2.13 or newer "
                         "(`pip install -U nvidia-nccl-cu13`)",
                         loaded.path, v);
            else {
                loaded.version = v;
                loaded.state = 1;
            }
            if (loaded.state != 1)
                memset(&cukit_nccl_api, 0, sizeof cukit_nccl_api);
        }
    }
    if (loaded.state == 1)
        return 0;
    PyObject *msg = PyUnicode_FromString(loaded.why);
    if (msg)
        cukit_raise(st, CUKIT_EXC_NOT_SUPPORTED, -1, NULL, "dlopen", msg);
    Py_XDECREF(msg);
    return -1;
}

/* ------------------------------------------------------------------ results */

static const char *const result_names[] = {
    [ncclSuccess] = "ncclSuccess",
    [ncclUnhandledCudaError] = "ncclUnhandledCudaError",
    [ncclSystemError] = "ncclSystemError",
    [ncclInternalError] = "ncclInternalError",
    [ncclInvalidArgument] = "ncclInvalidArgument",
    [ncclInvalidUsage] = "ncclInvalidUsage",
    [ncclRemoteError] = "ncclRemoteError",
    [ncclInProgress] = "ncclInProgress",
};

int
cukit_nccl_check(cukit_state *st, ncclResult_t res, const char *call, ncclComm_t comm)
{
    if (res == ncclSuccess)
        return 0;
    const char *name = res >= 0 && res < (int)(sizeof result_names / sizeof *result_names)
                           ? result_names[res] : "ncclUnknownResult";
    const char *text = cukit_nccl_api.ncclGetErrorString ? cukit_nccl_api.ncclGetErrorString(res)
                                                         : NULL;
    const char *last = cukit_nccl_api.ncclGetLastError ? cukit_nccl_api.ncclGetLastError(comm)
                                                       : NULL;
    PyObject *msg = PyUnicode_FromFormat("%s failed: %s (%s, %d)%s%s", call, text ? text : "?",
                                         name, res, last && last[0] ? "; NCCL says: " : "",
                                         last && last[0] ? last : "");
    PyObject *exc = msg ? cukit_make_error(st, CUKIT_EXC_NCCL, res, name, call, msg) : NULL;
    Py_XDECREF(msg);
    if (exc == NULL)
        return -1;
    PyObject *pylast = PyUnicode_FromString(last ? last : "");
    if (pylast == NULL || PyObject_SetAttrString(exc, "last_error", pylast) < 0) {
        Py_XDECREF(pylast);
        Py_DECREF(exc);
        return -1;
    }
    Py_DECREF(pylast);
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return -1;
}

/* ------------------------------------------------------------------ dtypes and operations */

enum { OPS_ALL = 0x1f, OPS_INT = 0x0f, OPS_ORDER = (1 << ncclMax) | (1 << ncclMin),
       OPS_SUM = (1 << ncclSum) | (1 << ncclAvg) };

/* How each element type travels through NCCL: as `lanes` elements of an NCCL type,
 * and which reductions give the right answer that way (bit i: ncclRedOp_t i).
 * Complex numbers add as pairs of reals; int16 only moves, as bytes. */
static const struct {
    int typecode;
    int type;
    int lanes;
    int ops;
} type_table[] = {
    {CUKIT_TC_BOOL, ncclUint8, 1, OPS_ORDER},
    {CUKIT_TC_I8, ncclInt8, 1, OPS_INT},
    {CUKIT_TC_U8, ncclUint8, 1, OPS_INT},
    {CUKIT_TC_I16, ncclUint8, 2, 0},
    {CUKIT_TC_U16, ncclUint8, 2, 0},
    {CUKIT_TC_I32, ncclInt32, 1, OPS_INT},
    {CUKIT_TC_U32, ncclUint32, 1, OPS_INT},
    {CUKIT_TC_I64, ncclInt64, 1, OPS_INT},
    {CUKIT_TC_U64, ncclUint64, 1, OPS_INT},
    {CUKIT_TC_F16, ncclFloat16, 1, OPS_ALL},
    {CUKIT_TC_BF16, ncclBfloat16, 1, OPS_ALL},
    {CUKIT_TC_F32, ncclFloat32, 1, OPS_ALL},
    {CUKIT_TC_F64, ncclFloat64, 1, OPS_ALL},
    {CUKIT_TC_C64, ncclFloat32, 2, OPS_SUM},
    {CUKIT_TC_C128, ncclFloat64, 2, OPS_SUM},
};

static const char *const op_names[] = {"sum", "prod", "max", "min", "avg"};

int
cukit_nccl_datatype(int tc, int op, int *lanes, const char *who)
{
    for (size_t i = 0; i < sizeof type_table / sizeof *type_table; i++) {
        if (type_table[i].typecode != tc)
            continue;
        if (op >= 0 && !(type_table[i].ops & (1 << op))) {
            PyErr_Format(PyExc_TypeError,
                         "%s: NCCL cannot reduce %s with op=\"%s\"%s", who,
                         cukit_typecode_name(tc), op_names[op],
                         op == ncclAvg && (type_table[i].ops & 1)
                             ? " (avg needs a floating dtype: use sum, then divide)"
                             : "; reductions take int8/uint8/int32/uint32/int64/uint64, "
                               "float16/bfloat16/float32/float64 (complex: sum and avg only)");
            return -1;
        }
        *lanes = type_table[i].lanes;
        return type_table[i].type;
    }
    PyErr_Format(PyExc_TypeError,
                 "%s: NCCL cannot carry elements of dtype %s; use a numeric dtype (bool, "
                 "integers, float16/bfloat16/float32/float64, complex)",
                 who, cukit_typecode_name(tc));
    return -1;
}

int
cukit_nccl_op(PyObject *name, const char *who)
{
    if (PyUnicode_Check(name)) {
        for (int i = 0; i < (int)(sizeof op_names / sizeof *op_names); i++) {
            if (PyUnicode_CompareWithASCIIString(name, op_names[i]) == 0)
                return i;
        }
    }
    PyErr_Format(PyExc_ValueError,
                 "%s: op must be one of \"sum\", \"prod\", \"min\", \"max\", \"avg\", got %R", who,
                 name);
    return -1;
}

/* ------------------------------------------------------------------ module functions */

static PyObject *
mod_version(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    if (cukit_nccl_load(PyModule_GetState(m)) < 0)
        return NULL;
    int v = loaded.version;
    return Py_BuildValue("(iii)", v / 10000, (v / 100) % 100, v % 100);
}

static PyObject *
mod_library(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    if (cukit_nccl_load(PyModule_GetState(m)) < 0)
        return NULL;
    return PyUnicode_FromString(loaded.path);
}

static PyObject *
mod_get_unique_id(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = PyModule_GetState(m);
    ncclUniqueId id;
    ncclResult_t res;
    if (cukit_nccl_load(st) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS res = cukit_nccl_api.ncclGetUniqueId(&id);
    Py_END_ALLOW_THREADS if (cukit_nccl_check(st, res, "ncclGetUniqueId", NULL) < 0) return NULL;
    return PyBytes_FromStringAndSize(id.internal, sizeof id.internal);
}

/* _nccl_datatype(dtype, op=None) -> (NCCL type, lanes): the mapping, for tests. */
static PyObject *
mod_datatype(PyObject *m, PyObject *args)
{
    PyObject *dtype, *opname = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:_nccl_datatype", &dtype, &opname))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    PyObject *d = cukit_resolve_dtype(st, dtype);
    if (d == NULL)
        return NULL;
    int tc = cukit_typecode_of_dtype(d);
    Py_DECREF(d);
    int op = opname == Py_None ? -1 : cukit_nccl_op(opname, "_nccl_datatype()");
    if (tc < 0 || (op < 0 && opname != Py_None))
        return NULL;
    int lanes = 1, type = cukit_nccl_datatype(tc, op, &lanes, "_nccl_datatype()");
    return type < 0 ? NULL : Py_BuildValue("(ii)", type, lanes);
}

static PyMethodDef nccl_functions[] = {
    {"nccl_version", mod_version, METH_NOARGS,
     "nccl_version() -> (major, minor, patch) of the libnccl cukit loaded (loading it)."},
    {"nccl_library", mod_library, METH_NOARGS, "nccl_library() -> where libnccl was loaded from."},
    {"nccl_get_unique_id", mod_get_unique_id, METH_NOARGS,
     "nccl_get_unique_id() -> bytes: a new NCCL unique id (128 bytes) for Communicator()."},
    {"_nccl_oneshot_source", cukit_oneshot_source, METH_NOARGS,
     "_nccl_oneshot_source() -> str: the CUDA C of the one-shot all-reduce kernels."},
    {"_nccl_oneshot_orphans", cukit_oneshot_orphans, METH_NOARGS,
     "_nccl_oneshot_orphans() -> int: one-shot workspaces kept for graphs of communicators "
     "that are gone."},
    {"_nccl_datatype", mod_datatype, METH_VARARGS,
     "_nccl_datatype(dtype, op=None) -> (ncclDataType_t, lanes), or TypeError."},
    {NULL},
};

int
cukit_nccl_setup(PyObject *module, cukit_state *st)
{
    return PyModule_AddFunctions(module, nccl_functions);
}
