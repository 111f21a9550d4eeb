"""pycuda.cumath on cukit: elementwise math functions, faces of cukit's ufuncs.

Unary functions take PyCUDA's (array, out=None, stream=None); a second positional
argument is out when it is a GPUArray, else the stream, as in PyCUDA;
fmod(arg, mod, stream=None); ldexp, frexp and modf run an ElementwiseKernel each (one
per dtype, cached), as the C library defines them.
"""
from __future__ import annotations

import numpy as np

import cukit

from ._engine import needs_engine

# PyCUDA name -> cukit (numpy) name
_UNARY = {
    "fabs": "absolute", "ceil": "ceil", "floor": "floor", "exp": "exp", "log": "log",
    "log10": "log10", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan",
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh",
}


def _gpuarray():
    from . import gpuarray
    return gpuarray


def _run(pycuda_name, cukit_name, ops, out, stream):
    ga = _gpuarray()
    engine = getattr(cukit, cukit_name, None)
    if engine is None:
        raise needs_engine("cumath.%s" % pycuda_name)
    ops = [a.array if isinstance(a, ga.GPUArray) else a for a in ops]
    kw = {} if stream is None else {"stream": stream}
    if out is not None:
        if not isinstance(out, ga.GPUArray):
            raise TypeError("cumath.%s: out must be a GPUArray, not %s"
                            % (pycuda_name, type(out).__name__))
        engine(*ops, out=out.array, **kw)
        return out
    r = engine(*ops, **kw)
    return ga._of(r, r.buffer)


def _unary(pycuda_name, cukit_name):
    def f(array, stream_or_out=None, out=None, stream=None):
        if stream_or_out is not None:  # PyCUDA's older positional form: a GPUArray or a stream
            if isinstance(stream_or_out, _gpuarray().GPUArray):
                out = stream_or_out
            else:
                stream = stream_or_out
        return _run(pycuda_name, cukit_name, (array,), out, stream)
    f.__name__ = pycuda_name
    f.__doc__ = "cumath.%s(array, out=None, stream=None): cukit.%s on the device." % (
        pycuda_name, cukit_name)
    return f


for _p, _c in _UNARY.items():
    globals()[_p] = _unary(_p, _c)
del _p, _c


def fmod(arg, mod, stream=None):
    """The remainder of arg / mod with arg's sign (C's fmod), elementwise."""
    return _run("fmod", "fmod", (arg, mod), None, stream)


_kernels = {}


def _float_kernel(name, dtype, arguments, operation):
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError("cumath.%s takes float32 or float64 arrays, not %s" % (name, dtype))
    key = (name, dtype)
    k = _kernels.get(key)
    if k is None:
        t, suffix = ("float", "f") if dtype == np.float32 else ("double", "")
        k = _kernels[key] = cukit.ElementwiseKernel(
            arguments.replace("T", t), operation.replace("$", suffix), name="cumath_" + name)
    return k


def _like(a):
    return _gpuarray().empty_like(a)


def _contiguous(name, *arrays):
    for a in arrays:
        if not a.is_c_contiguous:
            raise ValueError("cumath.%s takes contiguous arrays; copy with .copy() first" % name)


def _call(k, arrays, stream):
    flat = [a.array.reshape((a.size,)) for a in arrays]
    if stream is None:
        k(*flat)
    else:
        k(*flat, stream=stream)


def ldexp(significand, exponent, stream=None):
    """significand * 2**int(exponent), elementwise (C's ldexp; exponent is truncated)."""
    if significand.shape != exponent.shape or significand.dtype != exponent.dtype:
        raise ValueError("cumath.ldexp: significand and exponent must have one shape and dtype")
    _contiguous("ldexp", significand, exponent)
    k = _float_kernel("ldexp", significand.dtype, "T *z, const T *s, const T *e",
                      "z[i] = ldexp$(s[i], (int)e[i])")
    z = _like(significand)
    _call(k, (z, significand, exponent), stream)
    return z


def frexp(arg, stream=None):
    """(significand, exponent) with arg = significand * 2**exponent, elementwise (C's
    frexp; the exponent in arg's dtype)."""
    _contiguous("frexp", arg)
    k = _float_kernel("frexp", arg.dtype, "T *sig, T *ex, const T *x",
                      "int e; sig[i] = frexp$(x[i], &e); ex[i] = e")
    sig, ex = _like(arg), _like(arg)
    _call(k, (sig, ex, arg), stream)
    return sig, ex


def modf(arg, stream=None):
    """(fractional part, integral part), both with arg's sign, elementwise (C's modf)."""
    _contiguous("modf", arg)
    k = _float_kernel("modf", arg.dtype, "T *frac, T *whole, const T *x",
                      "frac[i] = modf$(x[i], &whole[i])")
    frac, whole = _like(arg), _like(arg)
    _call(k, (frac, whole, arg), stream)
    return frac, whole
