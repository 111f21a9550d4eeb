/* cukitmodule.c - the cukit._cukit module: definition, multi-phase init calling each layer's setup, state traverse/clear */
#include "compute/compute.h"
#include "emulator/emulator.h"
#include "nccl/nccl.h"

static struct PyModuleDef cukit_moduledef;

#define STATE_REFS(V)                                                                    \
    V(DeviceType) V(ProgramType) V(ModuleType) V(KernelType) V(SignatureType)            \
    V(BufferType) V(ArrayType) V(StreamType) V(EventType) V(PreparedType) V(GraphType)     \
    V(KernelNodeType) V(devices) V(strided_modules) V(numpy) V(np_dtype) \
    V(np_empty) V(np_asarray) V(np_ndarray) V(np_generic) V(np_floating)       \
    V(np_integer) V(np_bool) V(torch_tensor) V(torch_dtypes) V(str_grid) V(str_block) V(str_shared_mem) V(str_stream) V(str_n) \
    V(str_cai) V(str_data) V(str_typestr) V(str_strides) V(str_shape) V(str_dtype) \
    V(str_data_ptr) V(str_get_device) V(str_cuda_stream_protocol) V(str_cuda_stream) V(str_ptr) V(last_stream) \
    V(compiled) V(image_verdicts) \
    V(HostMemoryType) V(RegistrationType) V(CommunicatorType) V(CudaArrayType) V(TextureType) \
    V(SurfaceType) \
    V(UfuncType) V(ElementwiseType) V(ufuncs) V(math_dtypes) V(fuse_proxy) \
    V(reduce_tables) V(ReductionKernelType) V(ScanKernelType) \
    V(PhiloxType) V(Philox4x32Type) V(GeneratorType) V(random_modules)

static int
cukit_traverse(PyObject *m, visitproc visit, void *arg)
{
    cukit_state *st = PyModule_GetState(m);
#define VISIT(f) Py_VISIT(st->f);
    STATE_REFS(VISIT)
#undef VISIT
    for (int i = 0; i < CUKIT_EXC_COUNT; i++)
        Py_VISIT(st->exc[i]);
    return 0;
}

static int
cukit_clear(PyObject *m)
{
    cukit_state *st = PyModule_GetState(m);
#define CLEAR(f) Py_CLEAR(st->f);
    STATE_REFS(CLEAR)
#undef CLEAR
    for (int i = 0; i < CUKIT_EXC_COUNT; i++)
        Py_CLEAR(st->exc[i]);
    return 0;
}

static void
cukit_free(void *m)
{
    cukit_clear((PyObject *)m);
    /* Only here, not in clear: the module is freed after the last object of its
     * types, so no buffer or copy can still use the pool's or staging state. */
    cukit_state *st = PyModule_GetState((PyObject *)m);
    cukit_transfer_teardown(st);
    cukit_mem_teardown(st);
}

static int
cukit_exec(PyObject *m)
{
    cukit_state *st = PyModule_GetState(m);
    st->driver_count = -1;
    static const struct {
        const char *text;
        size_t offset;
    } names[] = {
        {"grid", offsetof(cukit_state, str_grid)},
        {"block", offsetof(cukit_state, str_block)},
        {"shared_mem", offsetof(cukit_state, str_shared_mem)},
        {"stream", offsetof(cukit_state, str_stream)},
        {"n", offsetof(cukit_state, str_n)},
        {"__cuda_array_interface__", offsetof(cukit_state, str_cai)},
        {"data", offsetof(cukit_state, str_data)},
        {"typestr", offsetof(cukit_state, str_typestr)},
        {"strides", offsetof(cukit_state, str_strides)},
        {"shape", offsetof(cukit_state, str_shape)},
        {"dtype", offsetof(cukit_state, str_dtype)},
        {"data_ptr", offsetof(cukit_state, str_data_ptr)},
        {"get_device", offsetof(cukit_state, str_get_device)},
        {"__cuda_stream__", offsetof(cukit_state, str_cuda_stream_protocol)},
        {"cuda_stream", offsetof(cukit_state, str_cuda_stream)},
        {"ptr", offsetof(cukit_state, str_ptr)},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        PyObject *s = PyUnicode_InternFromString(names[i].text);
        if (s == NULL)
            return -1;
        *(PyObject **)((char *)st + names[i].offset) = s;
    }
    /* Bottom layer first: a layer's setup may register hooks that lower layers call. */
    static int (*const setups[])(PyObject *, cukit_state *) = {
        cukit_errors_setup,                                            /* common */
        cukit_loader_setup, cukit_emulator_setup,                      /* driver, emulator */
        cukit_device_setup, cukit_stream_setup, cukit_event_setup,     /* runtime */
        cukit_buffer_setup, cukit_pool_setup, cukit_transfer_setup,    /* memory */
        cukit_hostmem_setup, cukit_registration_setup,
        cukit_cudaarray_setup, cukit_texture_setup,
        cukit_signature_setup, cukit_program_setup, cukit_compile_functions_setup, /* compile */
        cukit_cache_setup,
        cukit_link_setup,
        cukit_image_check_setup,
        cukit_module_setup, cukit_kernel_setup, cukit_prepared_setup,  /* launch */
        cukit_graph_setup,
        cukit_array_setup, cukit_array_functions_setup, cukit_dlpack_setup, /* array */
        cukit_internal_setup,
        ck_compute_setup,                                           /* compute */
        ck_random_setup,
        cukit_nccl_setup, cukit_communicator_setup,                    /* nccl */
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
    .m_size = sizeof(cukit_state),
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
