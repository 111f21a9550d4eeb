"""numpy's names, re-exported as numpy's own objects: the scalar types that name dtypes
(cukit.float32 is numpy.float32), dtype, finfo, iinfo, the constants and newaxis;
the type questions (result_type, can_cast, ...) taking cukit arrays, and ndarray."""
import numpy as _np

from . import _cukit

_Array = _cukit.Array

_DTYPES = (
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
    "intp", "uintp", "int_", "uint", "byte", "ubyte", "short", "ushort", "intc", "uintc",
    "longlong", "ulonglong", "half", "single", "double", "csingle", "cdouble",
    "number", "integer", "signedinteger", "unsignedinteger", "floating", "complexfloating",
    "inexact", "generic", "bool", "long", "ulong",
)
_OTHER = ("dtype", "finfo", "iinfo", "pi", "e", "inf", "nan", "newaxis", "euler_gamma",
          "isscalar", "promote_types", "issubdtype")

globals().update({name: getattr(_np, name) for name in _DTYPES + _OTHER if hasattr(_np, name)})
__all__ = [name for name in _DTYPES + _OTHER if hasattr(_np, name)]


# numpy's type questions, taking cukit arrays for their dtype (numpy's own functions
# would try to convert the array, which cukit refuses)
def _typed(x):
    return x.dtype if isinstance(x, _Array) else x


def result_type(*arrays_and_dtypes):
    """numpy.result_type: cukit arrays stand for their dtype."""
    return _np.result_type(*[_typed(x) for x in arrays_and_dtypes])


def can_cast(from_, to, casting="safe"):
    """numpy.can_cast: a cukit array stands for its dtype."""
    return _np.can_cast(_typed(from_), to, casting)


def min_scalar_type(a):
    """numpy.min_scalar_type: an array's own dtype; a 0-d cukit array's value (read)."""
    if isinstance(a, _Array):
        return a.dtype if a.ndim else _np.min_scalar_type(a.get())
    return _np.min_scalar_type(a)


def common_type(*arrays):
    """numpy.common_type: the inexact scalar type common to the arrays' dtypes."""
    return _np.common_type(*[_np.empty(0, _typed(x)) for x in arrays])


class _AnyArray(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _Array)

    def __subclasscheck__(cls, sub):
        return isinstance(sub, type) and issubclass(sub, _Array)


class ndarray(metaclass=_AnyArray):
    """cukit.Array under numpy's and CuPy's name: isinstance(x, cukit.ndarray) is
    isinstance(x, cukit.Array), and ndarray(shape, dtype=float, order='C') is
    cukit.empty(shape, dtype) (order='F': its transpose's layout)."""

    def __new__(cls, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is not None or strides is not None:
            raise NotImplementedError("cukit.ndarray(shape, dtype, order) only; device "
                                      "memory of another owner comes in through "
                                      "cukit.asarray (CUDA Array Interface, DLPack)")
        if order not in ("C", "F"):
            raise ValueError(f"order must be 'C' or 'F', got {order!r}")
        if order == "F":
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            return _cukit.empty(shape[::-1], dtype).T
        return _cukit.empty(shape, dtype)


__all__ += ["result_type", "can_cast", "min_scalar_type", "common_type", "ndarray",
            "s_", "index_exp"]
s_ = _np.s_
index_exp = _np.index_exp
