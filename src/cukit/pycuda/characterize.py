"""pycuda.characterize on cukit: what the current device can do."""
from __future__ import annotations

import numpy as np

from . import driver as cuda


def has_double_support():
    """Every GPU that CUDA 12 and newer run on computes in double precision."""
    return cuda.Context.get_device().compute_capability() >= (1, 3)


def has_stack():
    return cuda.Context.get_device().compute_capability() >= (2, 0)


def platform_bits():
    return tuple.__itemsize__ * 8


def sizeof(type_name, preamble=""):
    """sizeof(type_name) in device code, measured by a kernel."""
    from .compiler import SourceModule
    mod = SourceModule("""
        %s
        __global__ void write_size(size_t *output) { *output = sizeof(%s); }
        """ % (preamble, type_name), no_extern_c=False)
    result = np.zeros(1, np.uintp)
    mod.get_function("write_size")(cuda.Out(result), block=(1, 1, 1))
    return int(result[0])
