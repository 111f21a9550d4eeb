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
    CudaArray,
    CudaError,
    Device,
    Event,
    Graph,
    HostMemory,
    KernelNode,
    PreparedLaunch,
    InvalidValueError,
    Kernel,
    KernelFaultError,
    LaunchError,
    LinkError,
    Module,
    NcclError,
    NcclTimeoutError,
    NoDeviceError,
    NotSupportedError,
    OutOfMemoryError,
    Program,
    Registration,
    Signature,
    Stream,
    Surface,
    Texture,
    __version__,
    advise,
    alloc,
    cache_info,
    can_access_peer,
    clear_cache,
    asarray,
    backend,
    ascontiguousarray,
    compile,
    copy,
    copyto,
    default_stream,
    device_count,
    driver_version,
    empty,
    empty_like,
    from_dlpack,
    frombuffer,
    get_device,
    link,
    managed_empty,
    managed_zeros,
    memory_info,
    nvjitlink_version,
    nvrtc_archs,
    nvrtc_version,
    pinned_empty,
    pinned_zeros,
    pool_cache_limit,
    prefetch,
    register,
    set_backend,
    set_debug,
    synchronize,
    to_device,
    trim_pool,
    zeros,
    zeros_like,
)

# Internal, for tests and benchmarks: cukit's host <-> device copy path on raw memory,
# its tuning, and what it sees of a host buffer; live pinned/managed allocations.
from ._cukit import (  # noqa: E402
    _copy_dtoh,
    _copy_htod,
    _host_memory_stats,
    _keep_freed,
    _pointer_kind,
    _transfer_config,
)

# Array math (csrc/compute/): every ufunc the core defines (add, sqrt, ... and numpy's
# other names for them), the array functions, ElementwiseKernel and fuse.
from . import _cukit  # noqa: E402
from ._cukit import (  # noqa: E402
    ElementwiseKernel,
    arange,
    around,
    bincount,
    broadcast_to,
    clip,
    concatenate,
    full,
    full_like,
    imag,
    linspace,
    ones,
    ones_like,
    real,
    round,
    stack,
    ufunc,
    where,
)

globals().update({n: f for n, f in vars(_cukit).items() if isinstance(f, ufunc)})
# numpy's advanced indexing (csrc/compute/index/): a[idx], a[mask], and the functions on it
from ._cukit import compress, flatnonzero, nonzero, put, take  # noqa: E402
from ._indexing import argwhere, extract, place, put_along_axis, take_along_axis  # noqa: E402
from ._fuse import fuse  # noqa: E402

# Reductions and scans (csrc/compute/reduce*.c, scan.c).
from ._cukit import (  # noqa: E402
    ReductionKernel,
    ScanKernel,
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    count_nonzero,
    cumprod,
    cumsum,
    dot,
    inner,
    max,
    mean,
    min,
    nanmax,
    nanmin,
    nansum,
    prod,
    ptp,
    std,
    sum,
    var,
    vdot,
)
from ._reduce import ExclusiveScanKernel, InclusiveScanKernel, allclose, array_equal  # noqa: E402
# Matrix products (csrc/linalg/): dot and inner of matrices go through matmul.
from ._matmul import dot, inner, matmul, outer, tensordot  # noqa: E402
from ._cukit import argsort, searchsorted, sort, unique  # noqa: E402  (csrc/sort/)
from . import fft  # noqa: E402  (cukit.fft: numpy.fft on cuFFT or cukit's own kernels)
from . import linalg  # noqa: E402
# numpy's shape, creation, statistics and other numeric functions composed of the C
# operations above, and numpy's own names (dtypes, constants).
from ._names import *  # noqa: E402,F401,F403
from ._shape import *  # noqa: E402,F401,F403
from ._creation import *  # noqa: E402,F401,F403
from ._stats import *  # noqa: E402,F401,F403
from ._numeric import *  # noqa: E402,F401,F403
from ._manip import *  # noqa: E402,F401,F403
from ._nanfunctions import *  # noqa: E402,F401,F403
from ._sets import *  # noqa: E402,F401,F403
from ._extra import *  # noqa: E402,F401,F403
from ._polynomial import *  # noqa: E402,F401,F403
from . import nccl  # noqa: E402  (libnccl itself is loaded at first use)
from . import random  # noqa: E402  (cukit.random: numpy's Generator on the GPU)
from . import lib  # noqa: E402  (cukit.lib.stride_tricks: as_strided, sliding_window_view)

from . import debug  # noqa: E402  (cukit.debug: capture launches, replay reproducers)
# Streams as CuPy users write them (`with stream:`, csrc/runtime/stream.c) and timing.
from ._cukit import get_current_stream  # noqa: E402
from ._benchmark import BenchmarkResult, benchmark  # noqa: E402

if __import__("os").environ.get("CUKIT_CAPTURE"):
    debug._capture_from_env(__import__("os").environ["CUKIT_CAPTURE"])



def _numpy_table():
    """numpy's function or ufunc -> cukit's of the same name, for the Array's
    __array_function__ and __array_ufunc__ (np.exp(a) runs cukit.exp(a))."""
    import types

    import numpy as np
    table = {}
    for space, ours in ((np, globals()), (np.linalg, vars(linalg)), (np.random, vars(random))):
        for name, obj in list(ours.items()):
            theirs = getattr(space, name, None)
            if (name.startswith("_") or theirs is None or not callable(obj) or
                    isinstance(theirs, (type, types.ModuleType))):
                continue
            try:
                table[theirs] = obj
            except TypeError:  # an unhashable numpy object
                pass
    return table


_cukit._set_numpy_table(_numpy_table())

__all__ = [name for name in dir() if not name.startswith("_")]
