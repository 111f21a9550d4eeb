"""pycuda.reduction on cukit: ReductionKernel and the sum/dot/min/max kernels, faces of
cukit's reductions (csrc/compute/: one engine for cukit.sum and ReductionKernel).

Results are 0-d GPUArrays, as PyCUDA gives them; `out=` takes a 0-d GPUArray (a view
such as `m[i]` too) and `allocator=` allocates the result.
"""
from __future__ import annotations

import numpy as np

import cukit
from cukit import _cukit

from . import _engine
from ._ctypes import dtype_to_ctype
from .compiler import INCLUDE_DIR, _translate

# GPUArray's C base: a GPUArray is known by it, and a result is made of the class of
# the GPUArray argument, so this module needs no import of gpuarray (which imports it).
_GPUARRAY = _cukit._PycudaArray


def _nvrtc_options(options, who):
    """PyCUDA's nvcc-style options as NVRTC option strings ('' stays none)."""
    if not options:
        return ()
    opts = _translate(options, who)
    out = list(opts.options)
    out += ["-I%s" % d for d in opts.include_dirs]
    out += ["-D%s" % k if v is None else "-D%s=%s" % (k, v) for k, v in opts.defines.items()]
    if opts.lineinfo:
        out.append("-lineinfo")
    return tuple(out)


def _literal(v):
    """A neutral value as C source: text as is; a number as a literal (inf and NaN as bit
    patterns, which NVRTC has no names for)."""
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return "%dll" % v if -2**63 <= v < 2**63 else "%dull" % v
    f = float(v)
    if f != f:
        return "__longlong_as_double(0x7ff8000000000000ll)"
    if f in (float("inf"), float("-inf")):
        return "%s__longlong_as_double(0x7ff0000000000000ll)" % ("-" if f < 0 else "")
    return repr(f)


def _result(r, out, allocator, like):
    """The GPUArray to return for engine result r (already written into out when given)."""
    if out is not None:
        return out
    return type(like)._of(r, r.buffer,
                          allocator=allocator if allocator is not None else like.allocator)


def _out_for(dtype, out, allocator, like):
    """(GPUArray out, its cukit.Array) when out= or allocator= asks for the result's memory
    (a new one of like's class for allocator=)."""
    if out is None and allocator is not None:
        out = type(like)((), dtype, allocator=allocator)
    if out is None:
        return None, None
    if not isinstance(out, _GPUARRAY):
        raise TypeError("out= must be a GPUArray, not %s" % type(out).__name__)
    return out, out.array


def _first_gpuarray(args):
    for a in args:
        if isinstance(a, _GPUARRAY):
            return a
    raise TypeError("a reduction needs at least one GPUArray argument")


# Every builder's source starts by including PyCUDA's complex header, as PyCUDA's do, so
# that pycuda::complex<float>/<double> can be argument, accumulator and scan types; the
# #line keeps the user's preamble counted from its own line 1.
_PREAMBLE_HEAD = '#include <pycuda-complex.hpp>\n#line 1 "preamble"\n'


def _builder_preamble(preamble):
    return _PREAMBLE_HEAD + (preamble or "")


def _builder_options(options, who):
    """NVRTC options for a builder: the user's, then the folder of pycuda-complex.hpp
    and pycuda-helpers.hpp."""
    return _nvrtc_options(options, who) + ("-I" + INCLUDE_DIR,)


def _struct_ctype(dtype):
    """The C type a reduction to dtype accumulates in and returns when it is not the
    engine's own: the registered name of a struct dtype (the struct the preamble
    defines), pycuda::complex<T> for a complex one; None for the other numeric dtypes."""
    if dtype.kind == "c" and dtype.itemsize in (8, 16):
        return "pycuda::complex<%s>" % ("float" if dtype.itemsize == 8 else "double")
    if dtype.fields is None:
        return None
    try:
        return dtype_to_ctype(dtype)
    except ValueError:
        raise TypeError("ReductionKernel: dtype_out %s is a struct dtype with no C name; "
                        "register it first with pycuda.tools.register_dtype(dtype, "
                        "\"its_struct_name\") (the struct the preamble defines)" % (dtype,)) \
            from None


class ReductionKernel:
    """ReductionKernel(dtype_out, neutral, reduce_expr, map_expr=None, arguments=None,
    name="reduce_kernel", keep=False, options=None, preamble="", allocator=None);
    k(*args, stream=None, out=None, allocator=None) -> a 0-d GPUArray."""

    def __init__(self, dtype_out, neutral, reduce_expr, map_expr=None, arguments=None,
                 name="reduce_kernel", keep=False, options=None, preamble="", allocator=None):
        self.dtype_out = np.dtype(dtype_out)
        self.allocator = allocator
        self._k = cukit.ReductionKernel(self.dtype_out, _literal(neutral), reduce_expr, map_expr=map_expr,
                                        arguments=arguments, name=name,
                                        preamble=_builder_preamble(preamble),
                                        options=_builder_options(options, "ReductionKernel"),
                                        ctype=_struct_ctype(self.dtype_out))
        self._arguments = arguments
        self._name = name
        self._warned = set()
        self._declared = (arguments and _engine.declared_arrays(arguments)) or {}

    def __call__(self, *args, stream=None, out=None, allocator=None):
        like = _first_gpuarray(args)
        out, out_a = _out_for(self.dtype_out, out, allocator or self.allocator, like)
        ops = [a.array if isinstance(a, _GPUARRAY) else a for a in args]
        # an array whose dtype is not the declared one: PyCUDA runs those (lenient says
        # how, or leaves it to cukit's error); converted once, called once
        fixed = self._declared and _engine.lenient(ops, self._declared, "%s()" % self._name,
                                                   self._warned)
        r = self._k(*(fixed or ops), stream=stream, out=out_a)
        return _result(r, out, allocator or self.allocator, like)


_kernels = {}


def _cached(key, make):
    k = _kernels.get(key)
    if k is None:
        k = _kernels[key] = make()
    return k


def get_sum_kernel(dtype_out, dtype_in):
    """A ReductionKernel summing one array of dtype_in into dtype_out (dtype_in if None)."""
    dtype_in = np.dtype(dtype_in)
    dtype_out = dtype_in if dtype_out is None else np.dtype(dtype_out)
    return _cached(("sum", dtype_out, dtype_in), lambda: ReductionKernel(
        dtype_out, "0", "a+b", "(%s)in[i]" % dtype_to_ctype(dtype_out),
        "const %s *in" % dtype_to_ctype(dtype_in), name="sum"))


def _common(a, b):
    return np.result_type(a.dtype, b.dtype)


def get_dot_kernel(dtype_out, dtype_a=None, dtype_b=None, conjugate_first=False):
    """A ReductionKernel for sum(a[i] * b[i]) (conj(a[i]) with conjugate_first)."""
    dtype_out = np.dtype(dtype_out)
    dtype_a = dtype_out if dtype_a is None else np.dtype(dtype_a)
    dtype_b = dtype_a if dtype_b is None else np.dtype(dtype_b)
    if "c" in (dtype_out.kind, dtype_a.kind, dtype_b.kind):
        if not dtype_out == dtype_a == dtype_b:
            raise TypeError("get_dot_kernel: complex dot products take one dtype for a, b and "
                            "the result; convert with .astype(%s)" % dtype_out)
        left = "uf_conjugate(a[i])" if conjugate_first else "a[i]"
        mp, t = "%s*b[i]" % left, dtype_out.name  # the engine's names for complex types
        args = "const %s *a, const %s *b" % (t, t)
    else:
        t = dtype_to_ctype(dtype_out)
        mp = "(%s)a[i]*(%s)b[i]" % (t, t)
        args = "const %s *a, const %s *b" % (dtype_to_ctype(dtype_a), dtype_to_ctype(dtype_b))
    return _cached(("dot", dtype_out, dtype_a, dtype_b, conjugate_first), lambda: ReductionKernel(
        dtype_out, "0", "a+b", mp, args, name="dot"))


def _minmax_parts(what, dtype):
    """(neutral, reduce_expr) for min or max over dtype; NaN propagates, as numpy's."""
    dtype = np.dtype(dtype)
    op = "<" if what == "min" else ">"
    if dtype.kind == "f":
        inf = ("__int_as_float(0x7f800000)" if dtype.itemsize <= 4
               else "__longlong_as_double(0x7ff0000000000000ll)")
        return ("%s%s" % ("" if what == "min" else "-", inf),
                "(a != a || (b == b && a %s b)) ? a : b" % op)
    if dtype.kind not in "iub":
        raise TypeError("%s of %s arrays: the order is not defined" % (what, dtype))
    if dtype.kind == "b":
        return ("true" if what == "min" else "false"), "a %s b ? a : b" % op
    info = np.iinfo(dtype)
    if what == "min":
        neutral = "%dull" % info.max if dtype.kind == "u" else "%dll" % info.max
    else:
        neutral = "0" if dtype.kind == "u" else "(%dll - 1)" % (info.min + 1)
    return neutral, "a %s b ? a : b" % op


def get_minmax_kernel(what, dtype):
    """A ReductionKernel for the min or max of one array."""
    neutral, pick = _minmax_parts(what, dtype)
    return _cached(("minmax", what, np.dtype(dtype)), lambda: ReductionKernel(
        dtype, neutral, pick, "in[i]", "const %s *in" % dtype_to_ctype(dtype), name=what))


def get_subset_kernel(what, dtype_out, dtype_index, dtype_a, dtype_b=None):
    """A ReductionKernel over a[lookup_tbl[i]] (sum, dot, min or max)."""
    dtype_out = np.dtype(dtype_out)
    ti, ta, to = dtype_to_ctype(dtype_index), dtype_to_ctype(dtype_a), dtype_to_ctype(dtype_out)
    args = "const %s *lookup_tbl, const %s *a" % (ti, ta)
    if what == "sum":
        neutral, red, mp = "0", "a+b", "(%s)a[lookup_tbl[i]]" % to
    elif what == "dot":
        neutral, red = "0", "a+b"
        mp = "(%s)a[lookup_tbl[i]] * (%s)b[lookup_tbl[i]]" % (to, to)
        args += ", const %s *b" % dtype_to_ctype(dtype_b)
    else:
        neutral, red = _minmax_parts(what, dtype_out)
        mp = "a[lookup_tbl[i]]"
    key = ("subset", what, dtype_out, np.dtype(dtype_index), np.dtype(dtype_a),
           None if dtype_b is None else np.dtype(dtype_b))
    return _cached(key, lambda: ReductionKernel(dtype_out, neutral, red, mp, args,
                                                name="subset_" + what))


def check_indices(indices, n, who, offset=0):
    """IndexError unless every indices[i] + offset is in [0, n): an index outside would
    read or write outside the array on the device. One reduction and a 1-element read."""
    if indices.size == 0:
        return
    count = _cached(("badidx", indices.dtype), lambda: cukit.ReductionKernel(
        np.int64, "0", "a+b",
        "((long long)idx[i] + off < 0 || (long long)idx[i] + off >= n) ? 1ll : 0ll",
        "const %s *idx, long long off, long long n" % _ctype(indices.dtype), name="bad_indices"))
    flat = indices.array if indices.is_c_contiguous else indices.array.copy()
    bad = int(count(flat, np.int64(offset), np.int64(n)).get())
    if bad:
        raise IndexError("%s: %d of the %d indices%s fall outside [0, %d), the array's "
                         "elements; every index must be in range"
                         % (who, bad, indices.size, " (plus offset %d)" % offset if offset else "",
                            n))


def _ctype(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        raise TypeError("indices must be an integer array, not %s" % dtype)
    return dtype_to_ctype(dtype)


# ------------------------------------------------------------------ gpuarray's reductions


def sum(a, dtype=None, stream=None, allocator=None):
    """The sum of a's elements as a 0-d GPUArray, in `dtype` (a's dtype by default, as in
    PyCUDA: int32 sums in int32)."""
    dtype = a.dtype if dtype is None else np.dtype(dtype)
    out, out_a = _out_for(dtype, None, allocator, a)
    r = cukit.sum(a.array, dtype=dtype, out=out_a, stream=stream)
    return _result(r, out, allocator, a)


def dot(a, b, dtype=None, stream=None, allocator=None, conjugate_first=False):
    """sum(a * b) over the elements of two arrays of one size, as a 0-d GPUArray (in
    `dtype`: the operands' common type by default)."""
    if a.size != b.size:
        raise ValueError("dot: the arrays have %d and %d elements; they must have the same "
                         "number" % (a.size, b.size))
    dtype = _common(a, b) if dtype is None else np.dtype(dtype)
    x, y = (_flat_as(v, dtype, "dot") for v in (a, b))
    out, out_a = _out_for(dtype, None, allocator, a)
    if conjugate_first:
        r = cukit.vdot(x, y, stream=stream)
        if out_a is not None:
            out_a[...] = r
    else:
        r = cukit.dot(x, y, out=out_a, stream=stream)
    return _result(r, out, allocator, a)


def _flat_as(a, dtype, who):
    """a's elements as a 1-D cukit.Array of dtype (a copy only when the dtype differs)."""
    v = _contiguous(a, who).array.reshape((a.size,))
    return v if v.dtype == dtype else v.astype(dtype)


def vdot(a, b, dtype=None, stream=None, allocator=None):
    """dot with a conjugated."""
    return dot(a, b, dtype, stream, allocator, conjugate_first=True)


def _contiguous(a, who):
    if not a.is_c_contiguous:
        raise ValueError("%s: the array must be contiguous; copy it first with .copy()" % who)
    return a


def minmax(what, a, stream=None):
    """min or max of a's elements as a 0-d GPUArray (NaN propagates, as numpy's)."""
    if a.size == 0:
        raise ValueError("%s of an empty array: it has no elements" % what)
    r = (cukit.min if what == "min" else cukit.max)(a.array, stream=stream)
    return _result(r, None, None, a)


def subset(what, subset_, a, b=None, dtype=None, stream=None, allocator=None):
    """sum, dot, min or max over a[subset_] (and b[subset_] for dot)."""
    n = a.size
    check_indices(subset_, n, "subset_" + what)
    if b is not None and b.size != n:
        raise ValueError("subset_dot: a and b have %d and %d elements" % (n, b.size))
    if what in ("min", "max"):
        if subset_.size == 0:
            raise ValueError("subset_%s of an empty subset: it has no elements" % what)
        dtype = a.dtype
    elif dtype is None:
        dtype = a.dtype if b is None else _common(a, b)
    krnl = get_subset_kernel(what, dtype, subset_.dtype, a.dtype, None if b is None else b.dtype)
    args = [subset_, _contiguous(a, "subset_" + what)]
    if b is not None:
        args.append(_contiguous(b, "subset_dot"))
    return krnl(*args, stream=stream, allocator=allocator)


__all__ = ["ReductionKernel", "get_sum_kernel", "get_dot_kernel", "get_minmax_kernel",
           "get_subset_kernel"]
