"""cukit: run CUDA C kernels from Python.

    import cukit, numpy as np
    mod = cukit.compile(r'''
    extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
        size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }''')
    x = cukit.to_device(np.random.rand(1000).astype(np.float32))
    y = cukit.zeros(1000, np.float32)
    mod.saxpy(2.0, x, y, 1000, grid=4, block=256)
    print(y.get())
"""
from ._cukit import (
    Array,
    Buffer,
    CompileError,
    CudaError,
    Device,
    Event,
    Graph,
    KernelNode,
    PreparedLaunch,
    InvalidValueError,
    Kernel,
    KernelFaultError,
    LaunchError,
    Module,
    NoDeviceError,
    NotSupportedError,
    OutOfMemoryError,
    Program,
    Signature,
    Stream,
    alloc,
    asarray,
    ascontiguousarray,
    compile,
    copy,
    default_stream,
    device_count,
    driver_version,
    empty,
    empty_like,
    from_dlpack,
    get_device,
    nvrtc_version,
    synchronize,
    to_device,
    zeros,
    zeros_like,
)

__version__ = "0.1.0"

__all__ = [name for name in dir() if not name.startswith("_")]
