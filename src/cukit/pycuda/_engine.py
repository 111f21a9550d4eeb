"""The array math that cukit.pycuda's gpuarray, elementwise, cumath, reduction,
scan and curandom faces hand to cukit's array engine (csrc/compute/: numpy's
ufuncs with numpy 2's type promotion, ElementwiseKernel, where, concatenate...).

What the engine does not have (PyCUDA's kernel-building helpers get_elwise_module,
get_elwise_kernel, get_linear_combination_kernel) raises NotImplementedError saying
so, from `needs_engine`.
"""
from __future__ import annotations

import cukit

# PyCUDA's operators -> the engine's ufuncs (numpy's names)
_BINARY = {
    "+": "add", "-": "subtract", "*": "multiply", "/": "true_divide", "**": "power",
    "==": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater",
    ">=": "greater_equal",
}
_UNARY = {"neg": "negative", "abs": "absolute"}


def needs_engine(what):
    """NotImplementedError for an operation that cukit's array engine does not have yet."""
    return NotImplementedError(
        "%s is not provided by cukit's array engine; use ElementwiseKernel (PyCUDA's form) "
        "instead" % what)


def ufunc(name):
    """cukit's ufunc `name`, or NotImplementedError."""
    f = getattr(cukit, name, None)
    if f is None:
        raise needs_engine("cukit.%s" % name)
    return f


def binary(op, a, b, out=None, stream=None):
    """a op b for cukit arrays and scalars (numpy's broadcasting and promotion): a new
    cukit.Array, or `out`."""
    f = ufunc(_BINARY[op])
    if stream is None:
        return f(a, b, out=out)
    return f(a, b, out=out, stream=stream)


def unary(op, a, out=None, stream=None):
    f = ufunc(_UNARY[op])
    if stream is None:
        return f(a, out=out)
    return f(a, out=out, stream=stream)
