"""More of numpy's names, composed of cukit's operations as the other modules here are:
elementwise ones (frexp, ldexp, i0, bitwise_count) as one ElementwiseKernel each, index
and shape tricks (choose, putmask, block, apply_along_axis), the array API's unique_*
and cumulative_* functions and vector products, histograms in several dimensions,
window functions, and numpy's host-side helpers (print options, errstate, ndindex) as
numpy's own objects. Host reads are limited to what decides a result's shape or an
error numpy raises, and each function that makes one says so."""
import collections as _collections
import math as _math
import operator as _operator
import warnings as _warnings

import numpy as _np

from . import _cukit
from ._creation import asarray
from ._indexing import argwhere as _argwhere, take_along_axis as _take_along_axis
from ._numeric import _floating, lexsort as _lexsort
from ._stats import _bin_edges, _bin_range, diff as _diff
from ._shape import (_arr, _axis, broadcast_arrays as _broadcast_arrays, expand_dims as
                     _expand_dims, moveaxis as _moveaxis, swapaxes as _swapaxes)

__all__ = [
    "frexp", "ldexp", "i0", "bitwise_count", "iscomplex", "isreal", "isfortran",
    "iterable", "putmask", "choose", "apply_along_axis", "apply_over_axes", "array_equiv",
    "asanyarray", "asarray_chkfinite", "astype", "trim_zeros", "unwrap", "sort_complex",
    "real_if_close", "mintypecode", "histogram_bin_edges", "histogram2d", "histogramdd",
    "bartlett", "blackman", "hamming", "hanning", "kaiser", "unique_all", "unique_counts",
    "unique_inverse", "unique_values", "vecdot", "matvec", "vecmat", "cumulative_sum",
    "cumulative_prod", "block", "row_stack", "isdtype", "errstate", "get_printoptions",
    "set_printoptions", "printoptions", "ndindex", "ndenumerate", "broadcast",
]

_Array = _cukit.Array

# numpy's own objects: cukit prints through numpy's formatting, so its print options
# are numpy's; ndindex and isdtype work on shapes and dtypes only.
get_printoptions = _np.get_printoptions
set_printoptions = _np.set_printoptions
printoptions = _np.printoptions
ndindex = _np.ndindex
isdtype = _np.isdtype

# ------------------------------------------------------------------ elementwise

_KERNELS = {}


def _kernel(name, params, outs, body):
    if name not in _KERNELS:
        _KERNELS[name] = _cukit.ElementwiseKernel(params, outs, body, name)
    return _KERNELS[name]


def frexp(x):
    """numpy.frexp: (mantissa, exponent) with x == mantissa * 2**exponent, the mantissa
    in [0.5, 1) by magnitude and the exponent int32; one kernel. float16 computes in
    float32 (exact)."""
    (x,) = _floating("frexp", x)
    dt = x.dtype
    if dt == _np.float16:
        m, e = frexp(x.astype(_np.float32))
        return m.astype(dt), e
    return _kernel("cukit_frexp", "T x", "T m, int32 e",
                   "int k = 0; m = frexp(x, &k); e = k;")(x)


def ldexp(x1, x2):
    """numpy.ldexp: x1 * 2**x2 computed exactly (x2 integers); one kernel. Integer x1
    becomes the float type numpy picks; float16 computes in float32 (exact)."""
    if not isinstance(x1, _Array) and not isinstance(x2, _Array):
        raise TypeError("cukit.ldexp() needs at least one cukit array")
    a, n = [v if isinstance(v, _Array) else asarray(_np.asarray(v)) for v in (x1, x2)]
    if n.dtype.kind not in "iub" or a.dtype.kind not in "iubf":
        raise TypeError("ufunc 'ldexp' not supported for the input types, and the inputs "
                        "could not be safely coerced to any supported types according to "
                        "the casting rule ''safe''")
    dt = _np.ldexp(_np.ones(1, a.dtype), _np.ones(1, n.dtype)).dtype
    a, n = _broadcast_arrays(a, n)
    k = _kernel("cukit_ldexp", "T x, int64 n", "T z",
                "long long m = n > 100000 ? 100000 : (n < -100000 ? -100000 : n);"
                "z = ldexp(x, (int)m);")
    if dt == _np.float16:
        return k(a.astype(_np.float32), n.astype(_np.int64)).astype(dt)
    return k(a.astype(dt), n.astype(_np.int64))


def i0(x):
    """numpy.i0: the modified Bessel function of the first kind, order 0 (CUDA's
    cyl_bessel_i0 in double precision); float64 for integers, x's float type otherwise."""
    x = _arr(x, "i0")
    if x.dtype.kind == "c":
        raise TypeError("i0 not supported for complex values")
    dt = x.dtype if x.dtype.kind == "f" else _np.dtype(_np.float64)
    y = _kernel("cukit_i0", "float64 x", "float64 y", "y = cyl_bessel_i0(x);")(
        x.astype(_np.float64))
    return y.astype(dt)


def bitwise_count(x):
    """numpy.bitwise_count: the number of 1 bits in |x| (uint8); one kernel."""
    x = _arr(x, "bitwise_count")
    if x.dtype.kind not in "iu":
        raise TypeError("ufunc 'bitwise_count' not supported for the input types, and the "
                        "inputs could not be safely coerced to any supported types "
                        "according to the casting rule ''safe''")
    return _kernel("cukit_bitwise_count", "T x", "uint8 y",
                   "unsigned long long v = x < 0 ? 0ull - (unsigned long long)x"
                   " : (unsigned long long)x; y = (unsigned char)__popcll(v);")(x)


def iscomplex(x):
    """numpy.iscomplex: True where the element has a nonzero imaginary part."""
    x = _arr(x, "iscomplex")
    if x.dtype.kind == "c":
        return x.imag != 0
    return _cukit.zeros(x.shape, dtype=bool)


def isreal(x):
    """numpy.isreal: True where the element's imaginary part is zero."""
    x = _arr(x, "isreal")
    if x.dtype.kind == "c":
        return x.imag == 0
    return _cukit.ones(x.shape, dtype=bool)


def isfortran(a):
    """numpy.isfortran: True when a is Fortran-contiguous and not C-contiguous."""
    a = _arr(a, "isfortran")
    return bool(a.flags["F_CONTIGUOUS"] and not a.flags["C_CONTIGUOUS"])


def iterable(y):
    """numpy.iterable: whether iter(y) works (a 0-d cukit array is not iterable)."""
    try:
        iter(y)
    except TypeError:
        return False
    return True


def asanyarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """numpy.asanyarray: cukit.asarray (cukit has no array subclasses)."""
    return asarray(a, dtype, order=order, device=device, copy=copy)


def asarray_chkfinite(a, dtype=None, order=None):
    """numpy.asarray_chkfinite: cukit.asarray, then numpy's ValueError if a float or
    complex result holds an inf or NaN (one read of a single flag)."""
    a = asarray(a, dtype, order=order)
    if a.dtype.kind in "fc" and not bool(_cukit.isfinite(a).all()):
        raise ValueError("array must not contain infs or NaNs")
    return a


def astype(x, dtype, /, *, copy=True, device=None):
    """numpy.astype (numpy 2's function): x.astype(dtype, copy=copy)."""
    if not isinstance(x, _Array):
        raise TypeError(f"Input should be a cukit array. It is a {type(x)} instead.")
    if device is not None and device != x.device:
        raise ValueError("cukit.astype(device=...) takes the array's own device; "
                         "x.to(device) moves it")
    return x.astype(dtype, copy=copy)


# ------------------------------------------------------------------ indices and shapes

def putmask(a, mask, values):
    """numpy.putmask: a.flat[n] = values.flat[n % values.size] where mask.flat[n]."""
    a = _arr(a, "putmask")
    mask = mask if isinstance(mask, _Array) else asarray(_np.asarray(mask))
    if mask.size != a.size:
        raise ValueError("putmask: mask and data must be the same size")
    vals = (values if isinstance(values, _Array) else asarray(_np.asarray(values))).ravel()
    if a.size == 0 or vals.size == 0:
        return
    m = mask.reshape(a.shape).astype(bool)
    if vals.size == 1:
        a[m] = vals[0]
        return
    n = _cukit.arange(a.size, dtype=_np.int64) % vals.size
    a[m] = vals[n].reshape(a.shape)[m]


def choose(a, choices, out=None, mode="raise"):
    """numpy.choose: choices[a[I]][I] for every index I, all arrays broadcast together;
    mode 'raise' (one read of a's range), 'wrap' or 'clip'."""
    a = a if isinstance(a, _Array) else asarray(_np.asarray(a))
    if a.dtype.kind not in "iub":
        raise TypeError(f"Cannot cast array data from dtype('{a.dtype}') to "
                        "dtype('int64') according to the rule 'safe'")
    if isinstance(choices, _Array):
        choices = [choices[i] for i in range(choices.shape[0])]
    choices = [c if isinstance(c, _Array) else asarray(_np.asarray(c)) for c in choices]
    n = len(choices)
    if n == 0:
        raise ValueError("0-length sequence.")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    parts = _broadcast_arrays(a, *choices)
    idx = parts[0].astype(_np.int64)
    if mode == "raise":
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        idx = idx % n
    else:
        idx = _cukit.clip(idx, 0, n - 1)
    dt = _np.result_type(*[c.dtype for c in choices])
    res = _cukit.zeros(idx.shape, dtype=dt)
    for k, c in enumerate(parts[1:]):
        res = _cukit.where(idx == k, c.astype(dt), res)
    if out is not None:
        out[...] = res
        return out
    return res


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """numpy.apply_along_axis: func1d on every 1-D slice along axis (a host loop over the
    other axes; each call gets a device view), the results stacked where the axis was."""
    arr = _arr(arr, "apply_along_axis")
    axis = _axis(axis, arr.ndim)
    moved = _moveaxis(arr, axis, -1)
    outer = tuple(moved.shape[:-1])
    if 0 in outer:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    res = []
    for ind in _np.ndindex(outer):
        r = func1d(moved[ind], *args, **kwargs)
        res.append(r if isinstance(r, _Array) else asarray(_np.asarray(r)))
    out = _cukit.stack(res).reshape(outer + tuple(res[0].shape))
    # the function's dimensions go where the axis was
    k = res[0].ndim
    order = (list(range(axis)) + list(range(len(outer), len(outer) + k)) +
             list(range(axis, len(outer))))
    return out.transpose(order) if k or axis != len(outer) else out


def apply_over_axes(func, a, axes):
    """numpy.apply_over_axes: func(a, axis) for each axis in turn, keeping dimensions."""
    val = _arr(a, "apply_over_axes")
    n = val.ndim
    for ax in _np.atleast_1d(_np.asarray(axes)).tolist():
        ax = ax + n if ax < 0 else ax
        res = func(val, ax)
        if res.ndim != val.ndim:
            res = _expand_dims(res, ax)
            if res.ndim != val.ndim:
                raise ValueError("function is not returning an array of the correct shape")
        val = res
    return val


def array_equiv(a1, a2):
    """numpy.array_equiv: the shapes broadcast together and every element is equal."""
    a1 = a1 if isinstance(a1, _Array) else asarray(_np.asarray(a1))
    a2 = a2 if isinstance(a2, _Array) else asarray(_np.asarray(a2))
    try:
        _np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return False
    return bool((a1 == a2).all())


def trim_zeros(filt, trim="fb", axis=None):
    """numpy.trim_zeros: filt without its leading ('f') and trailing ('b') zeros along
    the axes (all by default): a view, from one read of the nonzero elements' extent."""
    filt = _arr(filt, "trim_zeros")
    trim = trim.lower()
    if trim not in {"fb", "bf", "f", "b"}:
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    axes = (tuple(range(filt.ndim)) if axis is None else
            _np.lib.array_utils.normalize_axis_tuple(axis, filt.ndim, argname="axis"))
    if not axes:
        return filt
    nz = _argwhere(filt)
    if nz.shape[0] == 0:
        start = stop = [0] * filt.ndim
    else:
        ext = _cukit.stack([nz.min(axis=0), nz.max(axis=0)]).get()
        start = [int(v) if "f" in trim else None for v in ext[0]]
        stop = [int(v) + 1 if "b" in trim else None for v in ext[1]]
    return filt[tuple(slice(start[ax], stop[ax]) if ax in axes else slice(None)
                      for ax in range(filt.ndim))]


def block(arrays):
    """numpy.block: an array assembled from nested lists of blocks; the innermost lists
    join along the last axis, the next ones along the one before, and so on."""
    def depth(x, where):
        if type(x) is tuple:
            raise TypeError(f"{where} is a tuple. Only lists can be used to arrange "
                            "blocks, and np.block does not allow implicit conversion "
                            "from tuple to ndarray.")
        if type(x) is not list:
            return 0, (x if isinstance(x, _Array) else asarray(_np.asarray(x))).ndim
        if not x:
            raise ValueError(f"List at {where} cannot be empty")
        found = [depth(e, f"{where}[{i}]") for i, e in enumerate(x)]
        if any(d != found[0][0] for d, _ in found):
            raise ValueError("List depths are mismatched. First element was at depth "
                             f"{found[0][0] + 1}, but there is an element at depth "
                             f"{[d for d, _ in found if d != found[0][0]][0] + 1}")
        return found[0][0] + 1, max(m for _, m in found)

    d, nd = depth(arrays, "arrays")
    nd = max(d, nd)

    def build(x, level):
        if type(x) is not list:
            x = x if isinstance(x, _Array) else asarray(_np.asarray(x))
            return x.reshape((1,) * (nd - x.ndim) + tuple(x.shape))
        return _cukit.concatenate([build(e, level + 1) for e in x], axis=-(d - level))

    return build(arrays, 0)


def row_stack(tup, *, dtype=None, casting="same_kind"):
    """numpy.row_stack: vstack, under the name numpy 2 deprecates."""
    _warnings.warn("`row_stack` alias is deprecated. Use `cukit.vstack` directly.",
                   DeprecationWarning, stacklevel=2)
    from ._shape import vstack
    return vstack(tup, dtype=dtype)


# ------------------------------------------------------------------ values

def unwrap(p, discont=None, axis=-1, *, period=2 * _math.pi):
    """numpy.unwrap: p with jumps larger than discont replaced by their period
    complement, step by step as numpy computes it."""
    p = _arr(p, "unwrap")
    nd = p.ndim
    dd = _diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = _np.result_type(dd.dtype, period)
    if _np.issubdtype(dtype, _np.integer):
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    ddmod = _cukit.mod(dd - (-high), period) + (-high)
    if ambiguous:
        ddmod = _cukit.where((ddmod == -high) & (dd > 0), high, ddmod).astype(ddmod.dtype)
    fix = ddmod - dd
    fix = _cukit.where(_cukit.abs(dd) < discont, 0, fix).astype(fix.dtype)
    up = p.astype(dtype, copy=True)
    sl = [slice(None)] * nd
    sl[axis] = slice(1, None)
    up[tuple(sl)] = p[tuple(sl)] + _cukit.cumsum(fix, axis=axis)
    return up


def sort_complex(a):
    """numpy.sort_complex: sorted by real part, then imaginary part, as complex (small
    integers become complex64, other types complex128)."""
    a = _arr(a, "sort_complex")
    if a.dtype.kind != "c":
        ct = _np.complex64 if a.dtype.char in "bhBH" else _np.complex128
        return _cukit.sort(a, axis=-1).astype(ct)
    if a.ndim == 0:
        return a.copy()
    order = _lexsort([a.imag, a.real], axis=-1)
    return _take_along_axis(a, order, axis=-1)


def real_if_close(a, tol=100):
    """numpy.real_if_close: a.real when every imaginary part is below tol (times the
    dtype's epsilon when tol > 1); one read of the test."""
    a = _arr(a, "real_if_close")
    if a.dtype.kind != "c":
        return a
    if tol > 1:
        tol = _np.finfo(a.dtype).eps * tol
    if bool((_cukit.abs(a.imag) < tol).all()):
        return a.real
    return a


def mintypecode(typechars, typeset="GDFgdf", default="d"):
    """numpy.mintypecode: cukit arrays stand for their dtype's character."""
    chars = [t.dtype.char if isinstance(t, _Array) else t for t in typechars]
    return _np.mintypecode(chars, typeset, default)


# ------------------------------------------------------------------ histograms

def _dd_edges(x, bins, rng, i):
    """One dimension's edges as numpy's histogramdd makes them (float64 from a count;
    the data's smallest and largest values are one read)."""
    if _np.ndim(bins) == 0 and not isinstance(bins, _Array):
        if isinstance(bins, str):
            raise NotImplementedError("cukit.histogramdd: bins given by name are not "
                                      "supported; pass a count or the edges")
        if bins < 1:
            raise ValueError(f"`bins[{i}]` must be positive, when an integer")
        try:
            n = _operator.index(bins)
        except TypeError:
            raise TypeError(f"`bins[{i}]` must be an integer, when a scalar") from None
        lo, hi = _bin_range(rng, x)
        return asarray(_np.linspace(lo, hi, n + 1))
    edges = bins if isinstance(bins, _Array) else asarray(_np.asarray(bins))
    if edges.ndim != 1:
        raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")
    if edges.size > 1 and bool((edges[:-1] > edges[1:]).any()):
        raise ValueError(f"`bins[{i}]` must be monotonically increasing, when an array")
    return edges


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """numpy.histogram_bin_edges: the edges cukit.histogram uses (a count, a rule's name
    or the edges), without counting."""
    _arr(a, "histogram_bin_edges")
    if weights is not None and tuple(_arr(weights, "histogram_bin_edges").shape) != \
            tuple(a.shape):
        raise ValueError("weights should have the same shape as a.")
    return _cukit.to_device(_bin_edges(a, bins, range, weights), device=a.device)


def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """numpy.histogramdd: counts over a grid of bins (float64) and each dimension's
    edges: a binary search per value and dimension, then one bincount."""
    if isinstance(sample, (list, tuple)):
        sample = _cukit.stack([_arr(s, "histogramdd").ravel() for s in sample], axis=1)
    sample = _arr(sample, "histogramdd")
    if sample.ndim == 1:
        sample = sample[:, None]
    n, d = sample.shape
    try:
        nb = len(bins)
    except TypeError:
        bins, nb = [bins] * d, d
    if nb != d:
        raise ValueError("The dimension of bins must be equal to the dimension of the "
                         "sample x.")
    if range is None:
        range = (None,) * d
    elif len(range) != d:
        raise ValueError("range argument must have one entry per dimension")
    edges = [_dd_edges(sample[:, i], bins[i], range[i], i) for i in _builtin_range(d)]
    nbin = [int(e.shape[0]) + 1 for e in edges]   # with an outlier bin on each side
    flat = _cukit.zeros(n, dtype=_np.int64)
    for i, e in enumerate(edges):
        col = sample[:, i].astype(_np.float64)
        e64 = e.astype(_np.float64)
        k = _cukit.searchsorted(e64, col, side="right")
        k = k - (col == e64[-1]).astype(_np.int64)   # the last edge is inside the last bin
        flat = flat * nbin[i] + k
    total = int(_np.prod(nbin))
    w = None if weights is None else _arr(weights, "histogramdd").astype(_np.float64)
    hist = _cukit.bincount(flat, weights=w, minlength=total)[:total].reshape(tuple(nbin))
    hist = hist[tuple(slice(1, -1) for _ in nbin)].astype(_np.float64)
    if density:
        s = hist.sum()
        for i, e in enumerate(edges):
            shape = [1] * d
            shape[i] = -1
            hist = hist / _diff(e.astype(_np.float64)).reshape(tuple(shape))
        hist = hist / s
    return hist, edges


_builtin_range = range


def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """numpy.histogram2d: cukit.histogramdd of the points (x, y): (counts, xedges,
    yedges)."""
    x, y = _arr(x, "histogram2d"), _arr(y, "histogram2d")
    if x.shape != y.shape:
        raise ValueError("x and y must have the same length.")
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb not in (1, 2):
        bins = [bins, bins]
    hist, (xe, ye) = histogramdd([x, y], bins, range, density, weights)
    return hist, xe, ye


# ------------------------------------------------------------------ windows

def _window(M, body):
    M = int(M)
    if M < 1:
        return _cukit.zeros(0, dtype=_np.float64)
    if M == 1:
        return _cukit.ones(1, dtype=_np.float64)
    return body(M, _cukit.arange(M, dtype=_np.float64))


def bartlett(M):
    """numpy.bartlett: the triangular window of M points (float64)."""
    return _window(M, lambda M, n: 1 - _cukit.abs(2 * n - (M - 1)) / (M - 1))


def blackman(M):
    """numpy.blackman: the Blackman window of M points."""
    return _window(M, lambda M, n: (0.42 + 0.5 * _cukit.cos(2 * _math.pi * (n - (M - 1) / 2)
                                                            / (M - 1))
                                    + 0.08 * _cukit.cos(4 * _math.pi * (n - (M - 1) / 2)
                                                        / (M - 1))))


def hamming(M):
    """numpy.hamming: the Hamming window of M points."""
    return _window(M, lambda M, n: 0.54 + 0.46 * _cukit.cos(_math.pi * (2 * n - (M - 1))
                                                            / (M - 1)))


def hanning(M):
    """numpy.hanning: the Hann window of M points."""
    return _window(M, lambda M, n: 0.5 + 0.5 * _cukit.cos(_math.pi * (2 * n - (M - 1))
                                                          / (M - 1)))


def kaiser(M, beta):
    """numpy.kaiser: the Kaiser window of M points for shape beta (i0 on the device)."""
    beta = float(beta)

    def body(M, n):
        alpha = (M - 1) / 2.0
        return i0(beta * _cukit.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / float(_np.i0(beta))
    return _window(M, body)


# ------------------------------------------------------------------ array API

UniqueAllResult = _collections.namedtuple(
    "UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = _collections.namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = _collections.namedtuple("UniqueInverseResult",
                                              ["values", "inverse_indices"])


def unique_all(x):
    """numpy.unique_all: values, first indices, inverse indices (x's shape) and counts.
    NaNs count as one value, as in cukit.unique (numpy's array API functions keep each
    NaN apart)."""
    x = _arr(x, "unique_all")
    v, i, inv, c = _cukit.unique(x, return_index=True, return_inverse=True,
                                 return_counts=True)
    return UniqueAllResult(v, i, inv.reshape(x.shape), c)


def unique_counts(x):
    """numpy.unique_counts: the unique values and their counts."""
    v, c = _cukit.unique(_arr(x, "unique_counts"), return_counts=True)
    return UniqueCountsResult(v, c)


def unique_inverse(x):
    """numpy.unique_inverse: the unique values and, in x's shape, each element's index
    among them."""
    x = _arr(x, "unique_inverse")
    v, inv = _cukit.unique(x, return_inverse=True)
    return UniqueInverseResult(v, inv.reshape(x.shape))


def unique_values(x):
    """numpy.unique_values: the unique values (sorted)."""
    return _cukit.unique(_arr(x, "unique_values"))


def _operands(who, x1, x2):
    x1 = x1 if isinstance(x1, _Array) else asarray(_np.asarray(x1))
    x2 = x2 if isinstance(x2, _Array) else asarray(_np.asarray(x2))
    dt = _np.result_type(x1.dtype, x2.dtype)
    if dt == _np.bool_:
        return x1, x2
    return x1.astype(dt, copy=False), x2.astype(dt, copy=False)


def _contract(a, b):
    """(..., n) x (..., n) -> (...): sum of products, through matmul for floats."""
    if a.dtype.kind in "fc" and a.dtype != _np.float16:
        return _cukit.matmul(a[..., None, :], b[..., :, None])[..., 0, 0]
    prod = a * b
    return prod.sum(axis=-1).astype(prod.dtype) if prod.dtype != _np.bool_ else prod.any(-1)


def _core(name, a, b, na, nb, ka, kb):
    """numpy's checks of a gufunc's operands: at least na and nb dimensions, and the
    contracted core sizes a.shape[ka] and b.shape[kb] equal."""
    if a.ndim < na or b.ndim < nb:
        raise ValueError(f"{name}: Input operand does not have enough dimensions")
    if a.shape[ka] != b.shape[kb]:
        raise ValueError(f"{name}: Input operand 1 has a mismatch in its core dimension 0 "
                         f"(size {b.shape[kb]} is different from {a.shape[ka]})")


def vecdot(x1, x2, /, *, axis=-1):
    """numpy.vecdot: sum over axis of conj(x1) * x2, the other dimensions broadcast."""
    a, b = _operands("vecdot", x1, x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("vecdot: Input operand does not have enough dimensions")
    a, b = _moveaxis(a, axis, -1), _moveaxis(b, axis, -1)
    _core("vecdot", a, b, 1, 1, -1, -1)
    if a.dtype.kind == "c":
        a = _cukit.conj(a)
    return _contract(*_broadcast_arrays(a, b))


def matvec(x1, x2, /):
    """numpy.matvec: the matrix-vector product (..., m, n) x (..., n) -> (..., m)."""
    a, b = _operands("matvec", x1, x2)
    _core("matvec", a, b, 2, 1, -1, -1)
    aa, bb = _broadcast_arrays(a, b[..., None, :])
    return _contract(aa, bb)


def vecmat(x1, x2, /):
    """numpy.vecmat: the vector-matrix product conj(x1) (..., n) x (..., n, m) -> (..., m)."""
    a, b = _operands("vecmat", x1, x2)
    _core("vecmat", a, b, 1, 2, -1, -2)
    if a.dtype.kind == "c":
        a = _cukit.conj(a)
    aa, bb = _broadcast_arrays(a[..., None, :], _swapaxes(b, -1, -2))
    return _contract(aa, bb)


def _cumulative(name, x, axis, dtype, out, include_initial, initial):
    x = _arr(x, f"cumulative_{name}")
    if x.ndim == 0:
        x = x.reshape(1)
    if axis is None:
        if x.ndim > 1:
            raise ValueError("For arrays which have more than one dimension ``axis`` "
                             "argument is required.")
        axis = 0
    axis = _axis(axis, x.ndim)
    res = getattr(_cukit, "cum" + name)(x, axis=axis, dtype=dtype)
    if include_initial:
        shape = list(res.shape)
        shape[axis] = 1
        res = _cukit.concatenate([_cukit.full(tuple(shape), initial, dtype=res.dtype), res],
                                 axis=axis)
    if out is not None:
        out[...] = res
        return out
    return res


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """numpy.cumulative_sum: cumsum, with axis required above 1-D and an optional
    leading 0."""
    return _cumulative("sum", x, axis, dtype, out, include_initial, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """numpy.cumulative_prod: cumprod, with axis required above 1-D and an optional
    leading 1."""
    return _cumulative("prod", x, axis, dtype, out, include_initial, 1)


# ------------------------------------------------------------------ host helpers

class errstate:
    """numpy.errstate's context manager and decorator, taking numpy's arguments (all,
    divide, over, under, invalid, call). cukit's GPU kernels do not raise or report
    floating-point errors (a division by zero gives inf or NaN silently, as on any
    GPU); what the state governs is numpy's own host computations inside the block."""

    _UNSET = object()

    def __init__(self, *, call=_UNSET, all=None, divide=None, over=None, under=None,
                 invalid=None):
        kw = {k: v for k, v in dict(all=all, divide=divide, over=over, under=under,
                                    invalid=invalid).items() if v is not None}
        if call is not errstate._UNSET:
            kw["call"] = call
        with _np.errstate(**kw):        # numpy's ValueError for a value it does not know
            pass
        self._np = _np.errstate(**kw)

    def __enter__(self):
        self._np.__enter__()
        return self

    def __exit__(self, *exc):
        return self._np.__exit__(*exc)

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def inner(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return inner


def ndenumerate(arr):
    """numpy.ndenumerate: (index, value) pairs in C order; a cukit array is copied to
    the host once and iterated there."""
    return _np.ndenumerate(arr.get() if isinstance(arr, _Array) else _np.asarray(arr))


class broadcast:
    """numpy.broadcast over shapes: the broadcast shape, ndim, size and numiter of the
    arguments (cukit arrays, numpy arrays or scalars). Unlike numpy's it does not
    iterate over the elements (that would read them one by one from the device)."""

    def __init__(self, *args):
        if len(args) > 64:
            raise ValueError("Need at least 0 and at most 64 array objects.")
        shapes = [tuple(a.shape) if hasattr(a, "shape") else _np.shape(a) for a in args]
        self.shape = _np.broadcast_shapes(*shapes)
        self.numiter = len(args)

    @property
    def ndim(self):
        return len(self.shape)

    nd = ndim

    @property
    def size(self):
        return int(_np.prod(self.shape, dtype=_np.int64))

    def __repr__(self):
        return f"cukit.broadcast(shape={self.shape})"
