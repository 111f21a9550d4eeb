"""numpy functions composed of cukit's operations: elementwise ones as one fused kernel
each (cukit.fuse), index arithmetic, set membership, polynomials, products of vectors
and arrays, 1-D convolution and bit packing. Each follows numpy's signature, result
dtype and special values; host work is limited to shapes and the checks numpy makes
on values (an index out of range reads one min and one max back)."""
import math as _math

import numpy as _np

from . import _cukit
from ._creation import asarray as _asarray
from ._fuse import fuse as _fuse
from ._indexing import take_along_axis as _take_along_axis
from ._shape import _arr, broadcast_arrays as _broadcast_arrays, copyto as _copyto, moveaxis

__all__ = [
    "logaddexp", "logaddexp2", "deg2rad", "rad2deg", "radians", "degrees", "heaviside",
    "sinc", "nan_to_num", "isposinf", "isneginf", "fabs", "float_power",
    "unravel_index", "ravel_multi_index", "tril_indices", "triu_indices",
    "tril_indices_from", "triu_indices_from", "isin", "lexsort", "interp", "polyval",
    "kron", "cross", "convolve", "correlate", "packbits", "unpackbits",
]

_Array = _cukit.Array


def _dtype(x):
    if isinstance(x, _Array):
        return x.dtype
    if isinstance(x, _np.generic):
        return x.dtype
    return None  # a Python scalar: weak


def _floating(who, *xs):
    """The inputs cast to the loop numpy picks for its ufunc `who` (its own type
    resolution, asked with empty arrays): integers and bools become the smallest float
    that holds them; numpy's TypeError where it has no loop. Python scalars stay weak."""
    probe = []
    for x in xs:
        if isinstance(x, _Array):
            probe.append(_np.empty(0, x.dtype))
        elif isinstance(x, (_np.generic, bool, int, float, complex)):
            probe.append(x)
        else:
            raise TypeError(f"cukit.{who}() takes cukit arrays and scalars, got "
                            f"{type(x).__name__}; cukit.asarray copies host data over")
    if not any(isinstance(x, _Array) for x in xs):
        raise TypeError(f"cukit.{who}() needs at least one cukit array")
    with _np.errstate(all="ignore"):
        res = getattr(_np, who)(*probe)
    loop = (res[0] if isinstance(res, tuple) else res).dtype
    return [x.astype(loop) if isinstance(x, _Array) and x.dtype != loop else
            loop.type(x) if isinstance(x, _np.generic) else x for x in xs]


# ------------------------------------------------------------------ elementwise

_LN2 = _math.log(2.0)
_LOG2E = 1.0 / _LN2


def _lae(x, y):
    t = x - y
    return _cukit.where(x == y, x + _LN2,
                        _cukit.where(t > 0, x + _cukit.log1p(_cukit.exp(-t)),
                                     _cukit.where(t <= 0, y + _cukit.log1p(_cukit.exp(t)), t)))


def _lae2(x, y):
    t = x - y
    return _cukit.where(x == y, x + 1,
                        _cukit.where(t > 0, x + _cukit.log1p(_cukit.exp2(-t)) * _LOG2E,
                                     _cukit.where(t <= 0,
                                                  y + _cukit.log1p(_cukit.exp2(t)) * _LOG2E,
                                                  t)))


def _in_float32(body):
    """float16 as numpy's half loops compute it: in float32, rounded once at the end."""
    def f(x, y):
        return body(x.astype(_np.float32), y.astype(_np.float32)).astype(_np.float16)
    f.__name__ = body.__name__ + "_half"
    return f


_FUSED = {name: (_fuse(body), _fuse(_in_float32(body))) for name, body in
          (("logaddexp", _lae), ("logaddexp2", _lae2))}


def _binary_float(who, x1, x2):
    x1, x2 = _floating(who, x1, x2)
    full, half = _FUSED[who]
    arrays = [x for x in (x1, x2) if isinstance(x, _Array)]
    return half(x1, x2) if arrays[0].dtype == _np.float16 else full(x1, x2)


def logaddexp(x1, x2):
    """numpy.logaddexp: log(exp(x1) + exp(x2)) without overflow, one kernel."""
    return _binary_float("logaddexp", x1, x2)


def logaddexp2(x1, x2):
    """numpy.logaddexp2: log2(2**x1 + 2**x2) without overflow, one kernel."""
    return _binary_float("logaddexp2", x1, x2)


@_fuse
def _scale(x, c):
    return x * c


@_fuse
def _scale_half(x, c):
    return (x.astype(_np.float32) * c).astype(_np.float16)


def _by_constant(who, x, num, den):
    """x * (num / den) with the constant as numpy rounds it for x's dtype: computed in
    x's precision (float32 and float16: a float32 constant, float16 through float32)."""
    (x,) = _floating(who, x)
    if x.dtype == _np.float64:
        return _scale(x, _np.float64(num / den))
    c = _np.float32(num) / _np.float32(den)
    if x.dtype == _np.float16:
        return _scale_half(x, c)
    if x.dtype == _np.float32:
        return _scale(x, c)
    raise TypeError(f"cukit.{who}() takes float16, float32 and float64 (and integers, as "
                    f"float64), got {x.dtype}")


def deg2rad(x):
    """numpy.deg2rad: degrees to radians."""
    return _by_constant("deg2rad", x, _math.pi, 180.0)


def rad2deg(x):
    """numpy.rad2deg: radians to degrees."""
    return _by_constant("rad2deg", x, 180.0, _math.pi)


radians = deg2rad
degrees = rad2deg


@_fuse
def _heaviside(x, h):
    return _cukit.where(x < 0, 0, _cukit.where(x == 0, h, _cukit.where(x > 0, 1, x)))


def heaviside(x1, x2):
    """numpy.heaviside: 0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0 (NaN stays)."""
    return _heaviside(*_floating("heaviside", x1, x2))


@_fuse
def _sinc(x):
    y = _math.pi * _cukit.where(x == 0, 1.0e-20, x)
    return _cukit.sin(y) / y


def sinc(x):
    """numpy.sinc: sin(pi x) / (pi x), 1 at 0, with numpy's formula."""
    x = _arr(x, "sinc")
    if x.dtype.kind in "biu":  # numpy's sinc computes in float64 for these
        x = x.astype(_np.float64)
    return _sinc(x)


@_fuse
def _nan_to_num(x, nan, posinf, neginf):
    return _cukit.where(_cukit.isnan(x), nan,
                        _cukit.where(x == _math.inf, posinf,
                                     _cukit.where(x == -_math.inf, neginf, x)))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """numpy.nan_to_num: NaN to nan, +inf to posinf (default the largest finite value),
    -inf to neginf (the most negative); complex parts each; integers unchanged."""
    x = _arr(x, "nan_to_num")
    if x.dtype.kind not in "fc":
        return x.copy() if copy else x
    ft = _np.empty(0, x.dtype).real.dtype
    big = _np.finfo(ft)
    vals = [ft.type(nan), ft.type(big.max if posinf is None else posinf),
            ft.type(big.min if neginf is None else neginf)]
    if x.dtype.kind == "c":
        res = (_nan_to_num(x.real, *vals) + _nan_to_num(x.imag, *vals) * 1j).astype(x.dtype)
    else:
        res = _nan_to_num(x, *vals)
    if copy:
        return res
    _copyto(x, res)
    return x


def _inf_side(x, who, negative):
    x = _arr(x, who)
    if x.dtype.kind == "c":
        raise TypeError(f"This operation is not supported for complex values because it "
                        f"would be ambiguous (cukit.{who})")
    if x.dtype.kind not in "f":
        return _cukit.zeros(x.shape, dtype=bool)
    return x == (-_math.inf if negative else _math.inf)


def isposinf(x):
    """numpy.isposinf: x is +inf."""
    return _inf_side(x, "isposinf", False)


def isneginf(x):
    """numpy.isneginf: x is -inf."""
    return _inf_side(x, "isneginf", True)


def fabs(x):
    """numpy.fabs: the absolute value of a real array (integers as float64)."""
    return _cukit.absolute(*_floating("fabs", x))


def float_power(x1, x2):
    """numpy.float_power: x1 ** x2 in float64 (complex128 for complex inputs)."""
    xs = []
    for x in (x1, x2):
        d = _dtype(x)
        kind = "c" if (d is not None and d.kind == "c") or isinstance(x, complex) else "f"
        t = _np.complex128 if kind == "c" else _np.float64
        xs.append(x.astype(t) if isinstance(x, _Array) else t(x))
    if any(_np.dtype(type(x)).kind == "c" if not isinstance(x, _Array) else x.dtype.kind == "c"
           for x in xs):
        xs = [x.astype(_np.complex128) if isinstance(x, _Array) else _np.complex128(x)
              for x in xs]
    return _cukit.power(*xs)


# ------------------------------------------------------------------ index arithmetic

def _int_index(x, who):
    if isinstance(x, _Array):
        if x.dtype.kind not in "iu":
            raise TypeError(f"only int indices permitted (cukit.{who} got {x.dtype})")
        return x.astype(_np.int64)
    h = _np.asarray(x)
    if h.dtype.kind not in "iu" and h.size:
        raise TypeError(f"only int indices permitted (cukit.{who} got {h.dtype})")
    return _asarray(h.astype(_np.int64))


def _range_of(x):
    if x.size == 0:
        return 0, -1
    return int(x.min().get()), int(x.max().get())


def unravel_index(indices, shape, order="C"):
    """numpy.unravel_index: the coordinates of flat indices in an array of `shape`, a
    tuple of int64 arrays. An index out of range is numpy's ValueError."""
    shape = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(int(s) for s in shape)
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    idx = _int_index(indices, "unravel_index")
    size = _math.prod(shape)
    lo, hi = _range_of(idx)
    if idx.size and (lo < 0 or hi >= size):
        bad = lo if lo < 0 else hi
        raise ValueError(f"index {bad} is out of bounds for array with size {size}")
    out = [None] * len(shape)
    dims = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    rest = idx
    for d in dims:
        out[d] = rest % shape[d]
        rest = rest // shape[d]
    return tuple(out)


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """numpy.ravel_multi_index: flat indices from coordinate arrays (mode 'raise',
    'wrap' or 'clip', or one per dimension)."""
    dims = tuple(int(d) for d in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    coords = []
    for k, (c, n, m) in enumerate(zip(multi_index, dims, modes)):
        c = _int_index(c, "ravel_multi_index")
        if m == "raise":
            lo, hi = _range_of(c)
            if c.size and (lo < 0 or hi >= n):
                raise ValueError("invalid entry in coordinates array")
        elif m == "wrap":
            c = c % n
        elif m == "clip":
            c = _cukit.clip(c, 0, n - 1)
        else:
            raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {m!r})")
        coords.append(c)
    order_dims = range(len(dims)) if order == "C" else range(len(dims) - 1, -1, -1)
    flat = None
    for d in order_dims:
        flat = coords[d] if flat is None else flat * dims[d] + coords[d]
    return flat


def _tri_indices(n, k, m, upper):
    m = n if m is None else m
    r = _cukit.arange(n, dtype=_np.int64).reshape(n, 1)
    c = _cukit.arange(m, dtype=_np.int64).reshape(1, m)
    mask = (c - r >= k) if upper else (c - r <= k)
    return _cukit.nonzero(mask)


def tril_indices(n, k=0, m=None):
    """numpy.tril_indices: the row and column indices of the lower triangle."""
    return _tri_indices(int(n), int(k), m, False)


def triu_indices(n, k=0, m=None):
    """numpy.triu_indices: the row and column indices of the upper triangle."""
    return _tri_indices(int(n), int(k), m, True)


def tril_indices_from(arr, k=0):
    """numpy.tril_indices_from: tril_indices of a 2-D array's shape."""
    if arr.ndim != 2:
        raise ValueError("input array must be 2-d")
    return _tri_indices(arr.shape[-2], int(k), arr.shape[-1], False)


def triu_indices_from(arr, k=0):
    """numpy.triu_indices_from: triu_indices of a 2-D array's shape."""
    if arr.ndim != 2:
        raise ValueError("input array must be 2-d")
    return _tri_indices(arr.shape[-2], int(k), arr.shape[-1], True)


# ------------------------------------------------------------------ sets and order

def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """numpy.isin: for each element, whether it is in test_elements (sorted once, then a
    binary search per element)."""
    element = _arr(element, "isin")
    test = test_elements if isinstance(test_elements, _Array) else \
        _asarray(_np.asarray(test_elements))
    if test.size == 0:
        return _cukit.full(element.shape, bool(invert), dtype=bool)
    dt = _np.result_type(element.dtype, test.dtype)
    s = _cukit.sort(test.ravel().astype(dt))
    e = element.astype(dt)
    pos = _cukit.clip(_cukit.searchsorted(s, e.ravel()), 0, s.size - 1)
    found = (s[pos] == e.ravel()).reshape(element.shape)
    return ~found if invert else found


def lexsort(keys, axis=-1):
    """numpy.lexsort: the indices that sort by the last key, then the one before it, and
    so on (stable sorts, one per key)."""
    if isinstance(keys, _Array):
        keys = [keys[i] for i in range(keys.shape[0])]
    keys = [_arr(k, "lexsort") for k in keys]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shape = tuple(keys[0].shape)
    if any(tuple(k.shape) != shape for k in keys):
        raise ValueError("all keys need to be the same shape")
    if len(shape) == 0:
        return _cukit.zeros((), dtype=_np.int64)
    keys = [moveaxis(k, axis, -1) for k in keys]
    n = keys[0].shape[-1]
    idx = _cukit.broadcast_to(_cukit.arange(n, dtype=_np.int64), keys[0].shape).copy()
    for k in keys:  # the first key least significant: each later stable sort wins ties
        perm = _cukit.argsort(_take_along_axis(k, idx, axis=-1), axis=-1,
                              kind="stable")
        idx = _take_along_axis(idx, perm, axis=-1)
    return moveaxis(idx, -1, axis)


# ------------------------------------------------------------------ interpolation, polynomials

def interp(x, xp, fp, left=None, right=None, period=None):
    """numpy.interp: piecewise-linear interpolation of increasing xp, float64 (complex128
    for complex fp), with numpy's formula and its exact values at the points of xp."""
    x = _arr(x, "interp") if isinstance(x, _Array) else _asarray(_np.asarray(x, float))
    xp = xp if isinstance(xp, _Array) else _asarray(_np.asarray(xp, float))
    fp = fp if isinstance(fp, _Array) else _asarray(_np.asarray(fp))
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("Data points must be 1D sequences")
    if xp.size != fp.size:
        raise ValueError("fp and xp are not of the same length")
    if xp.size == 0:
        raise ValueError("array of sample points is empty")
    ft = _np.complex128 if fp.dtype.kind == "c" else _np.float64
    x, xp, fp = x.astype(_np.float64), xp.astype(_np.float64), fp.astype(ft)
    if period is not None:
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = abs(float(period))
        x = x % period
        xp = xp % period
        order = _cukit.argsort(xp)
        xp, fp = xp[order], fp[order]
        xp = _cukit.concatenate([xp[-1:] - period, xp, xp[0:1] + period])
        fp = _cukit.concatenate([fp[-1:], fp, fp[0:1]])
        left = right = None
    n = xp.size
    lv = fp[0] if left is None else ft(left)
    rv = fp[-1] if right is None else ft(right)
    if n == 1:
        res = _cukit.where(x < xp[0], lv, _cukit.where(x > xp[0], rv, fp[0]))
        return res.astype(ft)
    j = _cukit.clip(_cukit.searchsorted(xp, x, side="right") - 1, 0, n - 2)
    x0, x1, y0, y1 = xp[j], xp[j + 1], fp[j], fp[j + 1]
    slope = (y1 - y0) / (x1 - x0)
    mid = slope * (x - x0) + y0
    if ft is _np.float64:  # numpy's fix where the slope is not finite
        other = slope * (x - x1) + y1
        mid = _cukit.where(_cukit.isnan(mid), _cukit.where(y0 == y1, y0, other), mid)
    mid = _cukit.where(x == x0, y0, mid)
    res = _cukit.where(x < xp[0], lv, _cukit.where(x > xp[-1], rv,
                       _cukit.where(x == xp[-1], fp[-1], mid)))
    return res.astype(ft)


def polyval(p, x):
    """numpy.polyval: p[0] * x**(N-1) + ... + p[N-1], by Horner's rule as numpy does."""
    if isinstance(p, _Array):
        coeffs = [p[i] for i in range(p.shape[0])]
    else:
        coeffs = list(_np.asarray(p))
    if isinstance(x, _Array):
        y = _cukit.zeros_like(x)
    else:
        raise TypeError("cukit.polyval() takes x as a cukit array; cukit.asarray copies "
                        "host data over")
    for c in coeffs:
        y = y * x + c
    return y


# ------------------------------------------------------------------ products

def kron(a, b):
    """numpy.kron: the Kronecker product (an outer product, reshaped)."""
    a, b = _arr(a, "kron"), _arr(b, "kron")
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + tuple(a.shape)
    sb = (1,) * (nd - b.ndim) + tuple(b.shape)
    ai = a.reshape(tuple(v for s in sa for v in (s, 1)))
    bi = b.reshape(tuple(v for s in sb for v in (1, s)))
    return (ai * bi).reshape(tuple(x * y for x, y in zip(sa, sb)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """numpy.cross: the cross product of 3-vectors (2-vectors: the z component, or padded
    with a zero z against a 3-vector) along an axis."""
    a, b = _arr(a, "cross"), _arr(b, "cross")
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    na, nb = a.shape[-1], b.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n"
                         "(dimension must be 2 or 3)")
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    if na == 2 and nb == 2:
        return a0 * b1 - a1 * b0
    zero = _cukit.zeros((), dtype=_np.result_type(a.dtype, b.dtype))
    a2 = a[..., 2] if na == 3 else zero
    b2 = b[..., 2] if nb == 3 else zero
    c = _cukit.stack(_broadcast_arrays(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2,
                                             a0 * b1 - a1 * b0), axis=-1)
    return moveaxis(c, -1, axisc)


_CONV = None


def _conv_kernel():
    global _CONV
    if _CONV is None:
        _CONV = _cukit.ElementwiseKernel(
            "raw T a, raw T v, int64 na, int64 nv, int64 first", "T out",
            "long long k = i + first; T s{};"
            "long long lo = k - na + 1 > 0 ? k - na + 1 : 0;"
            "long long hi = k < nv - 1 ? k : nv - 1;"
            "for (long long j = lo; j <= hi; j++) s = s + a[k - j] * v[j];"
            "out = s;", "cukit_convolve")
    return _CONV


def _convolve(a, v, mode, who):
    a, v = _arr(a, who), _arr(v, who)
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError("object too deep for desired array")
    if a.size == 0:
        raise ValueError("a cannot be empty")
    if v.size == 0:
        raise ValueError("v cannot be empty")
    if v.size > a.size:
        a, v = v, a
    n, m = a.size, v.size
    dt = _np.result_type(a.dtype, v.dtype)
    if dt == _np.bool_:
        raise TypeError(f"cukit.{who}() of bool arrays: numpy's result is bool; convert "
                        "them first with astype(int)")
    if mode == "full":
        first, size = 0, n + m - 1
    elif mode == "same":
        first, size = (m - 1) // 2, n
    elif mode == "valid":
        first, size = m - 1, n - m + 1
    else:
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    return _conv_kernel()(a.astype(dt).copy(), v.astype(dt).copy(), n, m, first, size=size)


def convolve(a, v, mode="full"):
    """numpy.convolve: the discrete linear convolution of two 1-D arrays ('full', 'same'
    or 'valid'), one kernel summing directly (each output reads the overlap)."""
    return _convolve(a, v, mode, "convolve")


def correlate(a, v, mode="valid"):
    """numpy.correlate: the cross-correlation of two 1-D arrays: convolve(a, conj(v)
    reversed), as numpy defines it."""
    a, v = _arr(a, "correlate"), _arr(v, "correlate")
    swap = v.size > a.size
    if swap:  # numpy correlates the longer with the shorter, then reverses and conjugates
        a, v = v, a
    if v.dtype.kind == "c":
        v = _cukit.conjugate(v)
    res = _convolve(a, v[::-1], mode, "correlate")
    if swap:
        res = res[::-1]
        res = _cukit.conjugate(res) if res.dtype.kind == "c" else res.copy()
    return res


# ------------------------------------------------------------------ bits

def packbits(a, axis=None, bitorder="big"):
    """numpy.packbits: each 8 elements (nonzero is a 1 bit) as one uint8, padded with
    zero bits; the flattened array when axis is None."""
    a = _arr(a, "packbits")
    if a.dtype.kind not in "biu":
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    if axis is None:
        a, axis = a.ravel(), 0
    a = moveaxis(a != 0, axis, -1)
    n = a.shape[-1]
    pad = (-n) % 8
    if pad:
        a = _cukit.concatenate([a, _cukit.zeros(tuple(a.shape[:-1]) + (pad,), dtype=bool)],
                               axis=-1)
    w = _np.array([128, 64, 32, 16, 8, 4, 2, 1] if bitorder == "big"
                  else [1, 2, 4, 8, 16, 32, 64, 128], _np.uint8)
    bits = a.reshape(tuple(a.shape[:-1]) + ((n + pad) // 8, 8)).astype(_np.uint8)
    packed = (bits * _asarray(w)).sum(axis=-1, dtype=_np.uint8)
    return moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """numpy.unpackbits: each uint8 as 8 elements of 0 or 1 (uint8)."""
    a = _arr(a, "unpackbits")
    if a.dtype != _np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    if axis is None:
        a, axis = a.ravel(), 0
    a = moveaxis(a, axis, -1)
    shifts = _np.arange(7, -1, -1, dtype=_np.uint8) if bitorder == "big" \
        else _np.arange(8, dtype=_np.uint8)
    bits = (a.reshape(tuple(a.shape) + (1,)) >> _asarray(shifts)) & _np.uint8(1)
    bits = bits.reshape(tuple(a.shape[:-1]) + (a.shape[-1] * 8,))
    if count is not None:
        count = int(count)
        total = bits.shape[-1]
        if count < 0:
            bits = bits[..., :max(total + count, 0)]
        elif count <= total:
            bits = bits[..., :count]
        else:
            bits = _cukit.concatenate(
                [bits, _cukit.zeros(tuple(bits.shape[:-1]) + (count - total,), _np.uint8)],
                axis=-1)
    return moveaxis(bits.copy(), -1, axis)


# ------------------------------------------------------------------ bins, differences, integrals

def digitize(x, bins, right=False):
    """numpy.digitize: the index of the bin each x falls in (bins increasing or
    decreasing; checked on the host, where numpy checks them too)."""
    x = _arr(x, "digitize")
    hb = _np.asarray(bins.get() if isinstance(bins, _Array) else bins)
    if hb.ndim != 1:
        raise ValueError("object too deep for desired array" if hb.ndim > 1 else
                         "object of too small depth for desired array")
    if x.dtype.kind == "c" or hb.dtype.kind == "c":
        raise TypeError("x may not be complex")
    inc, dec = _np.all(hb[1:] >= hb[:-1]), _np.all(hb[1:] <= hb[:-1])
    if not (inc or dec):
        raise ValueError("bins must be monotonically increasing or decreasing")
    if inc:
        return _cukit.searchsorted(_asarray(hb), x, side="left" if right else "right")
    rev = _asarray(hb[::-1].copy())
    return hb.size - _cukit.searchsorted(rev, x, side="left" if right else "right")


def _spacing(v, n, who):
    if isinstance(v, _Array) or _np.ndim(v):
        h = v if isinstance(v, _Array) else _asarray(_np.asarray(v))
        if h.ndim == 0:
            return float(h.get()), None
        if h.ndim != 1:
            raise ValueError("distances must be either scalars or 1d")
        if h.shape[0] != n:
            raise ValueError("when 1d, distances must match the length of the "
                             "corresponding dimension")
        if h.dtype.kind in "biu":
            h = h.astype(_np.float64)
        d = h[1:] - h[:-1]
        return None, d
    return float(v), None


def gradient(f, *varargs, axis=None, edge_order=1):
    """numpy.gradient: second-order central differences inside, first- or second-order
    one-sided differences at the edges; spacings as scalars or coordinate arrays."""
    f = _arr(f, "gradient")
    nd = f.ndim
    axes = list(range(nd)) if axis is None else \
        [a % nd for a in ((axis,) if isinstance(axis, (int, _np.integer)) else axis)]
    if len(varargs) == 0:
        spac = [1.0] * len(axes)
    elif len(varargs) == 1 and _np.ndim(varargs[0]) == 0 and \
            not isinstance(varargs[0], _Array):
        spac = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spac = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2 or edge_order < 1:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = f.dtype if f.dtype.kind in "fc" else _np.dtype(_np.float64)
    if f.dtype != otype:
        f = f.astype(otype)
    outs = []
    for ax, sp in zip(axes, spac):
        n = f.shape[ax]
        if n < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")
        uni, d = _spacing(sp, n, "gradient")

        def at(sl):
            key = [slice(None)] * nd
            key[ax] = sl
            return f[tuple(key)]

        def dd(sl):  # the spacings, shaped to broadcast along ax
            shape = [1] * nd
            v = d[sl]
            shape[ax] = v.shape[0]
            return v.reshape(tuple(shape))
        out = _cukit.empty(f.shape, dtype=otype)
        okey = [slice(None)] * nd

        def put(sl, v):
            okey[ax] = sl
            out[tuple(okey)] = v
        if uni is not None:
            put(slice(1, -1), (at(slice(2, None)) - at(slice(None, -2))) / (2.0 * uni))
            if edge_order == 1:
                put(0, (at(1) - at(0)) / uni)
                put(-1, (at(-1) - at(-2)) / uni)
            else:
                put(0, -1.5 / uni * at(0) + 2.0 / uni * at(1) + -0.5 / uni * at(2))
                put(-1, 0.5 / uni * at(-3) + -2.0 / uni * at(-2) + 1.5 / uni * at(-1))
        else:
            dx1, dx2 = dd(slice(0, -1)), dd(slice(1, None))
            a = -(dx2) / (dx1 * (dx1 + dx2))
            b = (dx2 - dx1) / (dx1 * dx2)
            c = dx1 / (dx2 * (dx1 + dx2))
            put(slice(1, -1), a * at(slice(None, -2)) + b * at(slice(1, -1)) +
                c * at(slice(2, None)))
            if edge_order == 1:
                put(0, (at(1) - at(0)) / dd(slice(0, 1))[tuple(
                    0 if k == ax else slice(None) for k in range(nd))])
                put(-1, (at(-1) - at(-2)) / dd(slice(-1, None))[tuple(
                    0 if k == ax else slice(None) for k in range(nd))])
            else:
                def edge(i0, i1):
                    return dd(slice(i0, i1))[tuple(0 if k == ax else slice(None)
                                                   for k in range(nd))]
                d1, d2 = edge(0, 1), edge(1, 2)
                a0 = -(2. * d1 + d2) / (d1 * (d1 + d2))
                b0 = (d1 + d2) / (d1 * d2)
                c0 = - d1 / (d2 * (d1 + d2))
                put(0, a0 * at(0) + b0 * at(1) + c0 * at(2))
                d1, d2 = edge(-2, -1), edge(-1, None)
                a1 = d2 / (d1 * (d1 + d2))
                b1 = - (d2 + d1) / (d1 * d2)
                c1 = (2. * d2 + d1) / (d2 * (d1 + d2))
                put(-1, a1 * at(-3) + b1 * at(-2) + c1 * at(-1))
        outs.append(out)
    return outs[0] if len(axes) == 1 else tuple(outs)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """numpy.trapezoid: the integral of y by the trapezoidal rule along axis (sample
    points x, or a constant spacing dx)."""
    y = _arr(y, "trapezoid")
    nd = y.ndim
    ax = axis % nd
    hi = [slice(None)] * nd
    lo = [slice(None)] * nd
    hi[ax], lo[ax] = slice(1, None), slice(None, -1)
    if x is None:
        d = dx
    else:
        x = x if isinstance(x, _Array) else _asarray(_np.asarray(x))
        if x.ndim == 1:
            d = x[1:] - x[:-1]
            shape = [1] * nd
            shape[ax] = d.shape[0]
            d = d.reshape(tuple(shape))
        else:
            d = x[tuple(hi)] - x[tuple(lo)]
    return _cukit.sum(d * (y[tuple(hi)] + y[tuple(lo)]) / 2.0, axis=ax)


trapz = trapezoid


def _kth_checked(a, kth, axis, who):
    a = _arr(a, who)
    if a.ndim == 0:
        raise ValueError("cannot partition a 0-d array")
    n = a.shape[axis]
    for k in _np.atleast_1d(_np.asarray(kth)).ravel():
        if not -n <= int(k) < n:
            raise ValueError(f"kth(={int(k)}) out of bounds ({n})")
    return a


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """numpy.partition: a copy with the kth elements where a sort would put them, smaller
    ones before and larger after; cukit sorts the whole axis, which satisfies this."""
    a = _kth_checked(a, kth, axis if axis is not None else 0, "partition")
    if axis is None:
        return _cukit.sort(a.ravel())
    return _cukit.sort(a, axis=axis)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """numpy.argpartition: the indices that partition a (those of a full sort)."""
    a = _kth_checked(a, kth, axis if axis is not None else 0, "argpartition")
    if axis is None:
        return _cukit.argsort(a.ravel())
    return _cukit.argsort(a, axis=axis)


# ------------------------------------------------------------------ more elementwise

def fix(x, out=None):
    """numpy.fix: rounded toward zero (integers unchanged)."""
    res = _cukit.trunc(_arr(x, "fix"))
    if out is None:
        return res
    out[...] = res
    return out


def divmod_(x1, x2):
    """numpy.divmod: (x1 // x2, x1 % x2)."""
    return _cukit.floor_divide(x1, x2), _cukit.remainder(x1, x2)


@_fuse
def _frac(x):
    t = _cukit.trunc(x)
    return _cukit.where(_cukit.isinf(x), _cukit.copysign(0.0, x), x - t)


def modf(x):
    """numpy.modf: (fractional part, integral part), both with x's sign."""
    (x,) = _floating("modf", x)
    return _frac(x), _cukit.trunc(x)


_INT_KERNELS = {}


def _int_kernel(name, body):
    if name not in _INT_KERNELS:
        _INT_KERNELS[name] = _cukit.ElementwiseKernel("T x, T y", "T z", body, name)
    return _INT_KERNELS[name]


_GCD = ("T a = x < 0 ? -x : x, b = y < 0 ? -y : y;"
        "while (b != 0) { T t = a % b; a = b; b = t; } z = a;")
_LCM = ("T a = x < 0 ? -x : x, b = y < 0 ? -y : y, g = a, h = b;"
        "while (h != 0) { T t = g % h; g = h; h = t; } z = g == 0 ? 0 : a / g * b;")


def _integers(who, x1, x2):
    xs = [x if isinstance(x, _Array) else _np.asarray(x) for x in (x1, x2)]
    if not any(isinstance(x, _Array) for x in xs):
        raise TypeError(f"cukit.{who}() needs at least one cukit array")
    dt = _np.result_type(*[x.dtype if isinstance(x, _Array) else
                           (x.item() if x.ndim == 0 else x.dtype) for x in xs])
    if dt.kind not in "iu" and dt != bool:
        raise TypeError(f"ufunc '{who}' not supported for the input types, and the inputs "
                        "could not be safely coerced to any supported types")
    if dt == bool:
        dt = _np.dtype(_np.int8)
    return [x.astype(dt) if isinstance(x, _Array) else _np.asarray(x, dt)[()] for x in xs]


def gcd(x1, x2):
    """numpy.gcd: the greatest common divisor of |x1| and |x2| (Euclid's, one kernel)."""
    a, b = _integers("gcd", x1, x2)
    return _int_kernel("cukit_gcd", _GCD)(a, b)


def lcm(x1, x2):
    """numpy.lcm: the lowest common multiple of |x1| and |x2| (one kernel)."""
    a, b = _integers("lcm", x1, x2)
    return _int_kernel("cukit_lcm", _LCM)(a, b)


def nextafter(x1, x2):
    """numpy.nextafter: the next representable float after x1 toward x2 (float32 and
    float64; integers as float64)."""
    a, b = _floating("nextafter", x1, x2)
    arrays = [x for x in (a, b) if isinstance(x, _Array)]
    dt = arrays[0].dtype
    if dt not in (_np.float32, _np.float64):
        raise TypeError(f"cukit.nextafter() takes float32 and float64, got {dt}")
    a = a if isinstance(a, _Array) else _cukit.full((), a, dt)
    b = b if isinstance(b, _Array) else _cukit.full((), b, dt)
    return _int_kernel("cukit_nextafter", "z = nextafter(x, y);")(a.astype(dt), b.astype(dt))


def spacing(x):
    """numpy.spacing: the distance from x to the next float away from zero (float32 and
    float64; integers as float64)."""
    (x,) = _floating("spacing", x)
    if x.dtype not in (_np.float32, _np.float64):
        raise TypeError(f"cukit.spacing() takes float32 and float64, got {x.dtype}")
    big = _cukit.full((), _np.inf, x.dtype)
    away = _cukit.where(x < 0, -big, big)          # -0.0 too goes up, as numpy's
    return nextafter(x, away) - x


__all__ += ["digitize", "gradient", "trapezoid", "trapz", "partition", "argpartition",
            "fix", "divmod", "modf", "gcd", "lcm", "nextafter", "spacing"]
globals()["divmod"] = divmod_
