"""pycuda.elementwise on cukit: ElementwiseKernel, a face of cukit's
ElementwiseKernel (cukit's array engine takes PyCUDA's argument-string form,
builds, caches and launches the kernel, with range=/slice=, loop_prep and
after_loop)."""
from __future__ import annotations

import cukit

from ._engine import needs_engine
from .tools import ScalarArg, VectorArg, parse_c_arg  # noqa: F401  (PyCUDA's names)


def _engine_kernel():
    k = getattr(cukit, "ElementwiseKernel", None)
    if k is None:
        raise needs_engine("ElementwiseKernel")
    return k


class ElementwiseKernel:
    """ElementwiseKernel(arguments, operation, name="kernel", keep=False, options=None,
    preamble="", loop_prep="", after_loop="")(*args, range=None, slice=None, stream=None)."""

    def __init__(self, arguments, operation, name="kernel", keep=False, options=None,
                 preamble="", loop_prep="", after_loop=""):
        from .reduction import _builder_options, _builder_preamble
        self._k = _engine_kernel()(arguments, operation, name=name,
                                   preamble=_builder_preamble(preamble),
                                   loop_prep=loop_prep, after_loop=after_loop,
                                   options=_builder_options(options, "ElementwiseKernel"))

    def __call__(self, *args, **kwargs):
        from .gpuarray import GPUArray
        return self._k(*[a.array if isinstance(a, GPUArray) else a for a in args], **kwargs)


def get_elwise_module(arguments, operation, name="kernel", keep=False, options=None,
                      preamble="", loop_prep="", after_loop=""):
    raise needs_engine("get_elwise_module")


def get_elwise_kernel(arguments, operation, name="kernel", keep=False, options=None, **kwargs):
    raise needs_engine("get_elwise_kernel")


def get_linear_combination_kernel(summand_descriptors, dtype_z):
    raise needs_engine("get_linear_combination_kernel")
