"""The array math that cukit.pycuda's gpuarray, elementwise, cumath, reduction
and curandom faces hand to cukit.

cukit's own array engine (numpy-style ufuncs with type promotion in C,
ElementwiseKernel, reductions, random numbers) is what these faces call. This
build of cukit does not have it yet, so `binary` and `unary` fall back to a
small generated kernel for contiguous arrays of real types, compiled through
cukit.compile (the same Program and kernel cache as user kernels); the other
entry points say that they need the engine. When cukit has a function of the
operation's name (cukit.add, ...), it is used instead.
"""
from __future__ import annotations

import numpy as np

import cukit

_CTYPES = {
    "int8": "signed char", "uint8": "unsigned char", "int16": "short",
    "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int",
    "int64": "long long", "uint64": "unsigned long long", "float32": "float",
    "float64": "double",
}

# operator symbol -> (cukit function name, C expression)
_BINARY = {
    "+": ("add", "x + y"), "-": ("subtract", "x - y"), "*": ("multiply", "x * y"),
    "/": ("true_divide", "x / y"),
}
_UNARY = {
    "neg": ("negative", "-x"),
}

_kernels = {}


def needs_engine(what):
    """NotImplementedError for an operation that only cukit's array engine provides."""
    return NotImplementedError(
        "%s needs cukit's array engine (elementwise math, reductions, random numbers), which "
        "this build of cukit does not include yet" % what)


def _ctype(dtype, what):
    try:
        return _CTYPES[np.dtype(dtype).name]
    except KeyError:
        raise needs_engine("%s on %s arrays" % (what, np.dtype(dtype))) from None


def _kernel(key, source, name):
    k = _kernels.get(key)
    if k is None:
        k = _kernels[key] = cukit.compile(source).get_kernel(name)
    return k


def _launch(k, n, *args):
    block = 256
    grid = min((n + block - 1) // block, 65535 * 8) or 1
    k(*args, grid=grid, block=block)


def _contiguous(a, what):
    if not a.is_contiguous:
        raise needs_engine("%s on a non-contiguous array" % what)
    return a


def binary(op, a, b, out_dtype, out=None):
    """a op b for cukit arrays a and b (same shape) or a scalar b; a new cukit.Array
    of out_dtype (or into out). reflected: b op a when b is the scalar."""
    name, expr = _BINARY[op]
    engine = getattr(cukit, name, None)
    if engine is not None:
        return engine(a, b, out=out)
    scalar = not isinstance(b, cukit.Array)
    _contiguous(a, op)
    if not scalar:
        _contiguous(b, op)
    ta, tout = _ctype(a.dtype, op), _ctype(out_dtype, op)
    tb = tout if scalar else _ctype(b.dtype, op)
    key = ("bin", op, ta, tb, tout, scalar)
    src = (
        'extern "C" __global__ void cukit_pycuda_binary(const %s* a, %s b, %s* out, size_t n) {\n'
        "    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;\n"
        "         i += (size_t)blockDim.x * gridDim.x) {\n"
        "        %s x = (%s)a[i], y = (%s)(%s);\n"
        "        out[i] = %s;\n"
        "    }\n"
        "}\n" % (ta, tb if scalar else "const %s*" % tb, tout, tout, tout, tout,
                 "b" if scalar else "b[i]", expr))
    k = _kernel(key, src, "cukit_pycuda_binary")
    if out is None:
        out = cukit.empty(a.shape, out_dtype)
    if a.size:
        _launch(k, a.size, a, np.dtype(out_dtype).type(b) if scalar else b, out, a.size)
    return out


def rbinary(op, scalar, b, out_dtype):
    """scalar op b (the scalar on the left) for a cukit array b."""
    if op in ("+", "*"):
        return binary(op, b, scalar, out_dtype)
    name, expr = _BINARY[op]
    engine = getattr(cukit, name, None)
    if engine is not None:
        return engine(scalar, b)
    _contiguous(b, op)
    tb, tout = _ctype(b.dtype, op), _ctype(out_dtype, op)
    key = ("rbin", op, tb, tout)
    src = (
        'extern "C" __global__ void cukit_pycuda_rbinary(%s a, const %s* b, %s* out, size_t n) {\n'
        "    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;\n"
        "         i += (size_t)blockDim.x * gridDim.x) {\n"
        "        %s x = a, y = (%s)b[i];\n"
        "        out[i] = %s;\n"
        "    }\n"
        "}\n" % (tout, tb, tout, tout, tout, expr))
    k = _kernel(key, src, "cukit_pycuda_rbinary")
    out = cukit.empty(b.shape, out_dtype)
    if b.size:
        _launch(k, b.size, np.dtype(out_dtype).type(scalar), b, out, b.size)
    return out


def unary(op, a, out=None):
    name, expr = _UNARY[op]
    engine = getattr(cukit, name, None)
    if engine is not None:
        return engine(a, out=out)
    _contiguous(a, op)
    t = _ctype(a.dtype, op)
    key = ("un", op, t)
    src = (
        'extern "C" __global__ void cukit_pycuda_unary(const %s* a, %s* out, size_t n) {\n'
        "    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;\n"
        "         i += (size_t)blockDim.x * gridDim.x) {\n"
        "        %s x = a[i];\n"
        "        out[i] = %s;\n"
        "    }\n"
        "}\n" % (t, t, t, expr))
    k = _kernel(key, src, "cukit_pycuda_unary")
    if out is None:
        out = cukit.empty(a.shape, a.dtype)
    if a.size:
        _launch(k, a.size, a, out, a.size)
    return out
