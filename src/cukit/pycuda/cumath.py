"""pycuda.cumath on cukit: elementwise math functions, faces of cukit's ufuncs.

As PyCUDA's: a one-argument function takes (array, stream_or_out=None, *, out=,
stream=), fmod and ldexp take (array, array2, stream=None), and frexp and modf
return two arrays (ElementwiseKernels, since numpy's two-output ufuncs are not
cukit ufuncs)."""
from __future__ import annotations

import cukit

from ._engine import needs_engine

# PyCUDA name -> cukit (numpy) name
_UNARY = {
    "fabs": "absolute", "ceil": "ceil", "floor": "floor", "exp": "exp", "log": "log",
    "log10": "log10", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan",
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh",
}


def _array(a):
    from . import gpuarray
    return a.array if isinstance(a, gpuarray.GPUArray) else a


def _result(r, out):
    from . import gpuarray
    return out if out is not None else gpuarray._of(r, r.buffer)


def _call(pycuda_name, cukit_name, ops, out, stream):
    engine = getattr(cukit, cukit_name, None)
    if engine is None:
        raise needs_engine("cumath.%s" % pycuda_name)
    kw = {"out": None if out is None else _array(out)}
    if stream is not None:
        kw["stream"] = stream
    return _result(engine(*[_array(a) for a in ops], **kw), out)


def _unary(pycuda_name, cukit_name):
    def f(array, stream_or_out=None, *, out=None, stream=None):
        if stream_or_out is not None:
            if isinstance(stream_or_out, cukit.Stream):
                if stream is not None:
                    raise TypeError("cumath.%s: the stream was given twice" % pycuda_name)
                stream = stream_or_out
            elif out is not None:
                raise TypeError("cumath.%s: out was given twice" % pycuda_name)
            else:
                out = stream_or_out
        return _call(pycuda_name, cukit_name, (array,), out, stream)
    f.__name__ = pycuda_name
    f.__doc__ = "cumath.%s(array, stream_or_out=None): cukit.%s on the device." % (
        pycuda_name, cukit_name)
    return f


for _p, _c in _UNARY.items():
    globals()[_p] = _unary(_p, _c)
del _p, _c


def fmod(arg, mod, stream=None):
    """The remainder of arg / mod with the sign of arg (C's fmod), elementwise."""
    return _call("fmod", "fmod", (arg, mod), None, stream)


_kernels = {}


def _kernel(name, params, outs, body):
    k = _kernels.get(name)
    if k is None:
        k = _kernels[name] = cukit.ElementwiseKernel(params, outs, body, "pycuda_" + name)
    return k


def _launch(name, params, outs, body, args, stream):
    k = _kernel(name, params, outs, body)
    r = k(*[_array(a) for a in args]) if stream is None else k(*[_array(a) for a in args],
                                                                 stream=stream)
    return tuple(_result(x, None) for x in r) if isinstance(r, tuple) else _result(r, None)


def ldexp(significand, exponent, stream=None):
    """significand * 2**int(exponent), in significand's dtype."""
    return _launch("ldexp", "T x, E e", "T z", "z = ldexp(x, (int)e);",
                   (significand, exponent), stream)


def frexp(arg, stream=None):
    """(significand, exponent): arg = significand * 2**exponent, both in arg's dtype."""
    return _launch("frexp", "T x", "T s, T e", "int k_; s = frexp(x, &k_); e = (T)k_;",
                   (arg,), stream)


def modf(arg, stream=None):
    """(fractional part, integral part), both with arg's sign and dtype."""
    return _launch("modf", "T x", "T f, T n", "f = modf(x, &n);", (arg,), stream)
