/* cukitmodule.c - the cukit._cukit module: definition, multi-phase init calling each layer's setup, state traverse/clear */
#include "compute/compute.h"
#include "emulator/emulator.h"
#include "fft/fft.h"
#include "linalg/linalg.h"
#include "nccl/nccl.h"
#include "pycuda/pycuda.h"
#include "sort/sort.h"

static struct PyModuleDef cukit_moduledef;

/* The module's one allocation: the bottom's part, which every layer sees as its
 * cukit_state, then each layer's own (defined in its header). */
typedef struct {
    cukit_state base; /* first: PyModule_GetState gives every layer &base */
    cukit_runtime_state runtime;
    cukit_memory_state memory;
    cukit_declarations_state declarations;
    cukit_sandbox_state sandbox;
    cukit_launch_state launch;
    cukit_compile_state compile;
    cukit_array_state array;
    cukit_compute_state compute;
    cukit_linalg_state linalg;
    cukit_fft_state fft;
    cukit_nccl_state nccl;
    cukit_pycuda_state pycuda;
} module_state;

/* nccl.pending first: clearing it releases windows, which use the rest of the state. */
#define STATE_REFS(V)                                                                    \
    V(nccl.pending) V(nccl.oneshot_modules) V(base.ArrayType) V(base.numpy) V(base.np_dtype) V(base.np_empty) V(base.np_asarray) \
    V(base.np_ndarray) V(base.np_generic) V(base.np_floating) V(base.np_integer)         \
    V(base.np_bool) V(base.dtype_memo) V(runtime.DeviceType) V(runtime.StreamType) V(runtime.EventType)     \
    V(runtime.devices) V(runtime.str_cuda_stream_protocol) V(runtime.str_cuda_stream)    \
    V(runtime.str_ptr) V(runtime.last_stream) V(memory.BufferType)                       \
    V(memory.HostMemoryType) V(memory.RegistrationType) V(memory.CudaArrayType)          \
    V(memory.TextureType) V(memory.SurfaceType) V(memory.torch_tensor)                   \
    V(memory.torch_dtypes) V(memory.str_cai) V(memory.str_data) V(memory.str_typestr)    \
    V(memory.str_strides) V(memory.str_shape) V(memory.str_dtype) V(memory.str_data_ptr) \
    V(memory.str_get_device) V(declarations.SignatureType) V(sandbox.image_verdicts)     \
    V(memory.str_torch) V(memory.cai_type) V(memory.str_cupy) V(memory.str_num)          \
    V(memory.str_c_contiguous) V(memory.cupy_ndarray) V(memory.str_dlpack)               \
    V(memory.str_dlpack_device) V(memory.dlpack_kw) V(memory.dlpack_kw_old)              \
    V(memory.dlpack_version)                                                             \
    V(launch.ModuleType) V(launch.KernelType) V(launch.PreparedType) V(launch.GraphType) \
    V(launch.KernelNodeType) V(launch.str_grid) V(launch.str_block)                      \
    V(launch.str_shared_mem) V(launch.str_stream) V(launch.str_n) V(compile.ProgramType) \
    V(compile.compiled) V(array.strided_modules) V(compute.UfuncType)                    \
    V(array.FlagsType) V(array.numpy_table) V(array.repeat_modules)                     \
    V(compute.ElementwiseType) V(compute.ufuncs) V(compute.math_dtypes)                  \
    V(compute.fuse_proxy) V(compute.fuse_apply) V(compute.reduce_tables)                 \
    V(compute.random_modules) V(compute.index_modules) V(compute.mask_modules)           \
    V(compute.stats_modules)                                                             \
    V(compute.ReductionKernelType) V(compute.ScanKernelType) V(compute.PhiloxType)       \
    V(compute.Philox4x32Type) V(compute.GeneratorType) V(nccl.CommunicatorType)          \
    V(nccl.WindowType)                                                                   \
    V(base.capture) V(pycuda.FrontFunctionType) V(pycuda.FrontArrayType)                 \
    V(pycuda.FrontElementwiseType)                                                       \
    V(pycuda.front_kw_plain) V(pycuda.front_kw_launch) V(pycuda.front_grid_1)            \
    V(pycuda.front_zero) V(pycuda.front_str_call_v) V(pycuda.at_edge)                    \
    V(pycuda.front_str_prepared_slow) V(pycuda.front_str_prepared_py)                    \
    V(linalg.gemm_modules)                                                               \
    V(compute.sample_modules) V(linalg.solver_modules) V(fft.modules) V(fft.plans)

static int
cukit_traverse(PyObject *m, visitproc visit, void *arg)
{
    module_state *ms = PyModule_GetState(m);
#define VISIT(f) Py_VISIT(ms->f);
    STATE_REFS(VISIT)
#undef VISIT
    for (int i = 0; i < CUKIT_EXC_COUNT; i++)
        Py_VISIT(ms->base.exc[i]);
    return 0;
}

static int
cukit_clear(PyObject *m)
{
    module_state *ms = PyModule_GetState(m);
#define CLEAR(f) Py_CLEAR(ms->f);
    STATE_REFS(CLEAR)
#undef CLEAR
    for (int i = 0; i < CUKIT_EXC_COUNT; i++)
        Py_CLEAR(ms->base.exc[i]);
    return 0;
}

static void
cukit_free(void *m)
{
    cukit_clear((PyObject *)m);
    /* Only here, not in clear: the module is freed after the last object of its
     * types, so no buffer or copy can still use the pool's or staging state. */
    cukit_state *st = PyModule_GetState((PyObject *)m);
    if (st->memory == NULL)
        return; /* exec never ran */
    cukit_transfer_teardown(st);
    cukit_mem_teardown(st);
}

static int
cukit_exec(PyObject *m)
{
    module_state *ms = PyModule_GetState(m);
    cukit_state *st = &ms->base;
    st->runtime = &ms->runtime;
    st->memory = &ms->memory;
    st->declarations = &ms->declarations;
    st->sandbox = &ms->sandbox;
    st->launch = &ms->launch;
    st->compile = &ms->compile;
    st->array = &ms->array;
    st->compute = &ms->compute;
    st->linalg = &ms->linalg;
    st->fft = &ms->fft;
    st->nccl = &ms->nccl;
    st->pycuda = &ms->pycuda;
    ms->runtime.driver_count = -1;
    static const struct {
        const char *text;
        size_t offset;
    } names[] = {
        {"grid", offsetof(module_state, launch.str_grid)},
        {"block", offsetof(module_state, launch.str_block)},
        {"shared_mem", offsetof(module_state, launch.str_shared_mem)},
        {"stream", offsetof(module_state, launch.str_stream)},
        {"n", offsetof(module_state, launch.str_n)},
        {"__cuda_array_interface__", offsetof(module_state, memory.str_cai)},
        {"data", offsetof(module_state, memory.str_data)},
        {"typestr", offsetof(module_state, memory.str_typestr)},
        {"strides", offsetof(module_state, memory.str_strides)},
        {"shape", offsetof(module_state, memory.str_shape)},
        {"dtype", offsetof(module_state, memory.str_dtype)},
        {"data_ptr", offsetof(module_state, memory.str_data_ptr)},
        {"get_device", offsetof(module_state, memory.str_get_device)},
        {"torch", offsetof(module_state, memory.str_torch)},
        {"cupy", offsetof(module_state, memory.str_cupy)},
        {"num", offsetof(module_state, memory.str_num)},
        {"_c_contiguous", offsetof(module_state, memory.str_c_contiguous)},
        {"__dlpack__", offsetof(module_state, memory.str_dlpack)},
        {"__dlpack_device__", offsetof(module_state, memory.str_dlpack_device)},
        {"__cuda_stream__", offsetof(module_state, runtime.str_cuda_stream_protocol)},
        {"cuda_stream", offsetof(module_state, runtime.str_cuda_stream)},
        {"ptr", offsetof(module_state, runtime.str_ptr)},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        PyObject *s = PyUnicode_InternFromString(names[i].text);
        if (s == NULL)
            return -1;
        *(PyObject **)((char *)ms + names[i].offset) = s;
    }
    /* Bottom layer first: a layer's setup may register hooks that lower layers call. */
    static int (*const setups[])(PyObject *, cukit_state *) = {
        cukit_errors_setup,                                            /* common */
        cukit_loader_setup, cukit_emulator_setup,                      /* driver, emulator */
        cukit_device_setup, cukit_stream_setup, cukit_event_setup,     /* runtime */
        cukit_buffer_setup, cukit_pool_setup, cukit_transfer_setup,    /* memory */
        cukit_hostmem_setup, cukit_registration_setup,
        cukit_cudaarray_setup, cukit_texture_setup,
        cukit_signature_setup,                                         /* declarations */
        cukit_image_check_setup,                                       /* sandbox */
        cukit_module_setup, cukit_kernel_setup, cukit_prepared_setup,  /* launch */
        cukit_graph_setup,
        cukit_program_setup, cukit_compile_functions_setup,            /* compile */
        cukit_cache_setup,
        cukit_link_setup,
        cukit_array_setup, cukit_array_functions_setup, cukit_dlpack_setup, /* array */
        cukit_protocols_setup,
        cukit_array_shape_setup,
        cukit_internal_setup,
        ck_compute_setup,                                              /* compute */
        ck_random_setup,
        cukit_linalg_setup, cukit_sort_setup, cukit_unique_setup,      /* linalg, sort */
        cukit_solver_setup,                                            /* linalg */
        cukit_fft_setup,                                               /* fft */
        cukit_nccl_setup, cukit_communicator_setup, cukit_window_setup, /* nccl */
        cukit_pycuda_setup,                                            /* pycuda */
    };
    for (size_t i = 0; i < sizeof setups / sizeof *setups; i++) {
        if (setups[i](m, st) < 0)
            return -1;
    }
    return PyModule_AddStringConstant(m, "__version__", CUKIT_VERSION);
}

static PyModuleDef_Slot cukit_slots[] = {
    {Py_mod_exec, cukit_exec},
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef cukit_moduledef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cukit._cukit",
    .m_doc = "cukit's C core: NVRTC compilation, kernel launch, device memory, streams, events.",
    .m_size = sizeof(module_state),
    .m_slots = cukit_slots,
    .m_traverse = cukit_traverse,
    .m_clear = cukit_clear,
    .m_free = cukit_free,
};

PyMODINIT_FUNC
PyInit__cukit(void)
{
    return PyModuleDef_Init(&cukit_moduledef);
}
