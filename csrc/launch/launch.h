/* launch.h - the launch layer: Module and loading, Kernel, prepared launches, graphs */
#ifndef CUKIT_LAUNCH_H
#define CUKIT_LAUNCH_H

#include "memory/memory.h"
#include "declarations/declarations.h"
#include "sandbox/sandbox.h"

/* launch/'s part of the module state (st->launch; see cukit_state). */
typedef struct cukit_launch_state {
    /* strong refs: the types */
    PyTypeObject *ModuleType, *KernelType, *PreparedType, *GraphType, *KernelNodeType;
    int debug;          /* 1: synchronize after every launch and name a faulting kernel */
    /* strong refs: interned keyword names the launch path compares by pointer */
    PyObject *str_grid, *str_block, *str_shared_mem, *str_stream, *str_n;
} cukit_launch_state;

#define CUKIT_STACK_ARG_BYTES 4096 /* parameter buffers up to this size live on the C stack */
#define CUKIT_STACK_PARAMS CUKIT_MAX_PARAMS /* ...and so do this many parameter pointers */

/* ------------------------------------------------------------------ module.c, load.c */

typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;  /* strong ref: the context the code is loaded in */
    CUmodule handle;       /* owned: unloaded on dealloc */
    PyObject *signatures;  /* strong ref: dict kernel name -> Signature (parsed) */
    PyObject *symbols;     /* strong ref: dict kernel name -> str symbol (lowered C++ names) */
    PyObject *kernels;     /* strong ref: dict kernel name -> Kernel, so module.k is cheap */
    PyObject *arch;        /* strong ref: str, "sm_90" */
    PyObject *globals;     /* strong ref: dict variable -> (typecode, shape or None) from
                              the source, for get_global; NULL when there is no source */
    PyObject *image;       /* strong ref: bytes the driver loaded (PTX, cubin, fatbin), or NULL;
                              what a reproducer (capture.c) writes */
    PyObject *origin;      /* strong ref: the cukit.Program compiled, or NULL: its source and
                              options, for a reproducer */
} cukit_Module;

/* The Module type. 0 / -1. */
int cukit_module_setup(PyObject *module, cukit_state *st);
/* Load `image` (cubin/fatbin/PTX) on dev. signatures/symbols may be NULL (empty).
 * New ref, or NULL with an exception. */
cukit_Module *cukit_module_create(cukit_state *st, cukit_Device *dev, const void *image,
                                  PyObject *signatures, PyObject *symbols, const char *arch);
/* Module.load(path_or_bytes, device=None), a class method of Module. New ref or NULL. */
PyObject *cukit_module_load(PyObject *cls, PyObject *args, PyObject *kwargs);
/* Module.get_kernel(name, signature=None): the Kernel `name` (str) of self; signature
 * NULL or None reads it from the module. New ref or NULL with an exception. */
PyObject *cukit_module_get_kernel(cukit_Module *self, PyObject *name, PyObject *signature);

/* ------------------------------------------------------------------ kernel.c */

typedef struct cukit_Kernel_s {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    cukit_state *st;
    cukit_Module *module;  /* strong ref: keeps the code loaded while the kernel lives */
    cukit_Device *device;  /* strong ref */
    CUfunction func;       /* borrowed from module */
    cukit_Signature *sig;  /* strong ref: verified against the compiled kernel */
    int max_threads;       /* the kernel's own threads-per-block limit (registers) */
    int static_shared;     /* bytes of __shared__ declared in the kernel */
    int dyn_shared_set;    /* current MAX_DYNAMIC_SHARED_SIZE_BYTES attribute */
    int best_block;        /* occupancy-suggested block size, 0 until asked */
    int strict;            /* 1: plain Python int/float/bool arguments are refused (strict()) */
} cukit_Kernel;

/* A launch's configuration, checked against the kernel's and device's limits. */
typedef struct {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int shared;
    CUstream stream;
    cukit_Stream *stream_obj; /* borrowed: the cukit.Stream passed, or NULL */
    PyObject *stream_arg;     /* borrowed: what stream= was (any library's stream), or NULL */
    int cooperative;
    unsigned int cluster[3];  /* all 0: no cluster */
} cukit_launch_cfg;

/* A kernel's packed parameters: on the C stack up to CUKIT_STACK_ARG_BYTES and
 * CUKIT_STACK_PARAMS, else on the heap; ptrs[i] points at parameter i in buf. */
typedef struct {
    _Alignas(16) unsigned char stack[CUKIT_STACK_ARG_BYTES];
    void *stack_ptrs[CUKIT_STACK_PARAMS];
    unsigned char *buf;    /* stack, or owned (PyMem) */
    void **ptrs;           /* stack_ptrs, or inside buf's allocation */
} cukit_params;

/* Make p room for sig's parameters. 0 / -1 with MemoryError. */
int cukit_params_init(cukit_params *p, const cukit_Signature *sig);
/* Free what cukit_params_init took from the heap. */
void cukit_params_release(cukit_params *p);

int cukit_kernel_setup(PyObject *module, cukit_state *st);
/* Kernel `name` of mod with signature sig (verified here). New ref or NULL. */
cukit_Kernel *cukit_kernel_create(cukit_Module *mod, CUfunction func, cukit_Signature *sig);
/* Fill cfg from launch keywords (values[i] named by kwnames[i]) and check it.
 * `allow_stream` 0 refuses stream= (graph nodes). 0 / -1 with an exception. */
int cukit_launch_config(cukit_Kernel *k, PyObject *const *values, PyObject *kwnames,
                        int allow_stream, cukit_launch_cfg *cfg);
/* Pack args (k->sig->nparams of them) into buf, writing one pointer per parameter
 * into ptrs; a strict kernel refuses plain Python numbers first. 0 / -1 with the
 * conversion error. */
int cukit_kernel_pack(cukit_Kernel *k, PyObject *const *args, unsigned char *buf, void **ptrs);
/* Launch k with packed parameters: with the GIL released when another Python thread
 * exists, else held (the call only queues work, and releasing costs). 0 / -1. */
int cukit_kernel_launch(cukit_Kernel *k, const cukit_launch_cfg *cfg, void **ptrs);
/* During a capture on cfg's stream, record k and its arguments (k->sig->nparams of
 * them) so the graph keeps them alive. 0 (also when not capturing) / -1. */
int cukit_kernel_keep_for_capture(cukit_Kernel *k, const cukit_launch_cfg *cfg,
                                  PyObject *const *args);
/* In debug mode (cukit.set_debug), wait for the launch and on failure raise the
 * driver's error with the kernel, grid, block and arguments named; else 0. */
int cukit_kernel_debug_check(cukit_Kernel *k, const cukit_launch_cfg *cfg, PyObject *const *args);

/* ------------------------------------------------------------------ capture.c */

/* cukit_kernel_launch with a capture on (st->capture set; callers test that and call
 * this instead, so the launch path costs one branch when it is off): the recorder keeps
 * the launch, its arguments, its packed parameters (buf, sig->arg_bytes) and its
 * buffers' bytes before it, then it runs, then the recorder waits for it and keeps its
 * buffers' bytes after it. 0 / -1 with the driver's or the recorder's error. */
int cukit_capture_launch(cukit_Kernel *k, const cukit_launch_cfg *cfg, PyObject *const *args,
                         const unsigned char *buf, void **ptrs);
/* _capture_set, _capture_kernel_info, _capture_read; CUKIT_CAPTURE is read in Python. */
int cukit_capture_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ prepared.c, graph.c */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    cukit_Kernel *kernel;   /* strong ref */
    cukit_launch_cfg cfg;
    PyObject *stream;       /* strong ref: the stream= given, keeping cfg.stream alive
                               (None for default) */
    unsigned char *buf;     /* owned (PyMem): the packed parameters of the last call */
    void **ptrs;            /* inside buf's allocation: one pointer per parameter */
    PyObject **last;        /* owned (PyMem): strong refs to the last call's arguments */
} cukit_Prepared;

/* PreparedLaunch's vectorcall, installed by Kernel.prepare(). */
PyObject *cukit_prepared_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames);
int cukit_prepared_setup(PyObject *module, cukit_state *st);
/* Graph and KernelNode; registers hooks.stream_capture. 0 / -1. */
int cukit_graph_setup(PyObject *module, cukit_state *st);

/* ------------------------------------------------------------------ run.c
 * (cukit_kernel_launch is declared with the Kernel above; loading cukit's own kernels is
 * compile/'s: cukit_builtin_function, cukit_builtin_kernel_file) */

/* The one launch of cukit's own kernels: func on dev (made current), a gx x gy grid of
 * bx x by threads, no dynamic shared memory, parameters as cuLaunchKernel takes them.
 * In debug mode (cukit.set_debug) it waits for the kernel, outside captures, so a fault
 * is raised by the call that caused it. No allocation. 0 / -1 with the driver's error. */
int cukit_builtin_launch(cukit_Device *dev, CUfunction func, unsigned gx, unsigned gy,
                         unsigned bx, unsigned by, CUstream stream, void **args);
/* cukit_builtin_launch on the current context (the caller made func's device current),
 * with a third grid dimension. 0 / -1. */
int cukit_builtin_launch_here(cukit_state *st, CUfunction func, unsigned gx, unsigned gy,
                              unsigned gz, unsigned bx, unsigned by, CUstream stream, void **args);

#endif /* CUKIT_LAUNCH_H */
