"""The array math that cukit.pycuda's gpuarray, elementwise, cumath, reduction,
scan and curandom faces hand to cukit's array engine (csrc/compute/: numpy's
ufuncs with numpy 2's type promotion, ElementwiseKernel, where, concatenate...).

What the engine does not have raises NotImplementedError saying so, from
`needs_engine`.

PyCUDA passes an array's address whatever its dtype; cukit's kernels check it.
`lenient` reads such an array as the declared type: silently when only the integer
signedness differs (uint8 data for char*), with a PycudaCompatWarning (once per kernel
and argument) when the element kind or size differs. ElementwiseKernel's call applies
it before calling, when its C front sees an array of another dtype than declared, and
ReductionKernel's before every call (it changes nothing when the types match).
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

import cukit

from ._ctypes import VectorArg, parse_c_arg

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


def _kind(dtype):
    return "int" if dtype.kind in "iub" else dtype.kind


def mismatch(have, want):
    """None when dtype have is dtype want; 'sign' when they differ only in integer
    signedness (PyCUDA runs that and so do we, silently); 'kind' for other differences
    of the same size; 'wider' when the declared type is wider than the data's (the
    kernel would go past the end); 'narrower' when it is narrower."""
    if have == want:
        return None
    if have.itemsize == want.itemsize:
        return "sign" if _kind(have) == _kind(want) == "int" else "kind"
    return "wider" if want.itemsize > have.itemsize else "narrower"


def warn_once(warned, key, message):
    """Warn PycudaCompatWarning with message unless key is in the set warned, naming
    the program's line that made the call (the first frame outside cukit)."""
    if key in warned:
        return
    warned.add(key)
    level, frame = 2, sys._getframe(1)  # stacklevel 1 is this function
    while frame is not None and frame.f_globals.get("__name__", "").startswith("cukit."):
        frame = frame.f_back
        level += 1
    from . import PycudaCompatWarning
    warnings.warn(message, PycudaCompatWarning, stacklevel=level)


def compat_message(who, what, have, want):
    return ("%s: %s holds %s but the kernel declares %s; PyCUDA runs this, and so does "
            "cukit.pycuda, reading the memory as %s, but it is almost surely a bug: convert "
            "the array with .astype(numpy.%s). (cukit.pycuda.PycudaCompatWarning: silence it "
            "or make it an error with the warnings module)"
            % (who, what, have, want, want, want))


class _Raw:
    __slots__ = ("__cuda_array_interface__", "_owner")

    def __init__(self, a, dtype, shape):
        self.__cuda_array_interface__ = {"data": (a.ptr, False), "shape": shape,
                                         "typestr": dtype.str, "strides": None, "version": 3}
        self._owner = a


def reinterpret(a, dtype):
    """cukit.Array a's memory read as `dtype`, with a's shape (a must be contiguous and
    dtype no wider than a's)."""
    return cukit.asarray(_Raw(a, dtype, a.shape))


def lenient(args, declared, who, warned):
    """args with each cukit.Array at a position of `declared` ({index: (name, dtype)})
    whose dtype differs read as the declared dtype, or None when nothing changes (the
    caller re-raises cukit's error). TypeError when the declared type is wider than
    the array's (the kernel would read past its end)."""
    fixed = list(args)
    changed = False
    for i, want in declared.items():
        if i >= len(args) or type(args[i]) is not cukit.Array:
            continue
        name, want = want
        a = args[i]
        how = mismatch(a.dtype, want)
        if how is None:
            continue
        if not a.is_contiguous:
            return None
        if how == "wider":
            raise TypeError(
                "%s: argument %s holds %s but the kernel declares %s, %d bytes per element "
                "against %d: the kernel would read and write past the end of the array. "
                "Convert it with .astype(numpy.%s)"
                % (who, name, a.dtype, want, want.itemsize, a.dtype.itemsize, want))
        if how != "sign":
            warn_once(warned, (who, i), compat_message(who, "argument %s" % name, a.dtype,
                                                        want))
        fixed[i] = reinterpret(a, want)
        changed = True
    return fixed if changed else None


def declared_arrays(arguments):
    """{index: (name, dtype)} of the pointer arguments of a PyCUDA argument string (or
    list of VectorArg/ScalarArg), or None when a type is not one numpy names."""
    try:
        if isinstance(arguments, str):
            arguments = [parse_c_arg(a) for a in arguments.split(",")]
    except ValueError:
        return None
    return {i: (a.name, a.dtype) for i, a in enumerate(arguments) if isinstance(a, VectorArg)}
