"""pycuda.cumath on cukit: elementwise math functions, faces of cukit's ufuncs
(each takes out= and stream=)."""
from __future__ import annotations

import cukit

from ._engine import needs_engine

# PyCUDA name -> cukit (numpy) name
_NAMES = {
    "fabs": "absolute", "ceil": "ceil", "floor": "floor", "exp": "exp", "log": "log",
    "log10": "log10", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan",
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "fmod": "fmod", "frexp": "frexp", "ldexp": "ldexp", "modf": "modf",
}


def _face(pycuda_name, cukit_name):
    def f(*args, out=None, stream=None):
        from . import gpuarray
        engine = getattr(cukit, cukit_name, None)
        if engine is None:
            raise needs_engine("cumath.%s" % pycuda_name)
        ops = [a.array if isinstance(a, gpuarray.GPUArray) else a for a in args]
        r = engine(*ops, out=None if out is None else out.array, stream=stream)
        if out is not None:
            return out
        return gpuarray._of(r, r.buffer)
    f.__name__ = pycuda_name
    f.__doc__ = "cumath.%s: cukit.%s on the device." % (pycuda_name, cukit_name)
    return f


for _p, _c in _NAMES.items():
    globals()[_p] = _face(_p, _c)
del _p, _c
