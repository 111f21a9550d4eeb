"""numpy's names, re-exported as numpy's own objects: the scalar types that name dtypes
(cukit.float32 is numpy.float32), dtype, finfo, iinfo, the constants and newaxis."""
import numpy as _np

_DTYPES = (
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
    "intp", "uintp", "int_", "uint", "byte", "ubyte", "short", "ushort", "intc", "uintc",
    "longlong", "ulonglong", "half", "single", "double", "csingle", "cdouble",
    "number", "integer", "signedinteger", "unsignedinteger", "floating", "complexfloating",
    "inexact", "generic",
)
_OTHER = ("dtype", "finfo", "iinfo", "pi", "e", "inf", "nan", "newaxis", "euler_gamma",
          "isscalar", "promote_types", "issubdtype")

globals().update({name: getattr(_np, name) for name in _DTYPES + _OTHER if hasattr(_np, name)})
__all__ = [name for name in _DTYPES + _OTHER if hasattr(_np, name)]
