"""pycuda.reduction on cukit: ReductionKernel, a face of cukit's reductions."""
from __future__ import annotations

import cukit

from ._engine import needs_engine


class ReductionKernel:
    """ReductionKernel(dtype_out, neutral, reduce_expr, map_expr=None, arguments=None,
    name="reduce_kernel", keep=False, options=None, preamble="", allocator=None)."""

    def __init__(self, dtype_out, neutral, reduce_expr, map_expr=None, arguments=None,
                 name="reduce_kernel", keep=False, options=None, preamble="", allocator=None):
        engine = getattr(cukit, "ReductionKernel", None)
        if engine is None:
            raise needs_engine("ReductionKernel")
        self._k = engine(dtype_out, neutral, reduce_expr, map_expr=map_expr,
                         arguments=arguments, name=name, preamble=preamble)

    def __call__(self, *args, **kwargs):
        return self._k(*args, **kwargs)


def get_sum_kernel(dtype_out, dtype_in):
    raise needs_engine("get_sum_kernel")


def get_dot_kernel(dtype_out, dtype_a=None, dtype_b=None):
    raise needs_engine("get_dot_kernel")
