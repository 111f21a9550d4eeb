"""numpy's math and statistics on device arrays, composed of cukit's C operations: ufuncs,
reductions, the sort, matmul, views and copies; bincount and histogram count with atomic
adds in a kernel of cukit's own (csrc/compute/stats/). Host work is limited to shapes,
bin edges and the few scalars a function must have on the host (allclose, the range of
a histogram and its bin rule's statistics, cov's checks of its weights and their sums,
quantile's checks of its weights); the quantiles' virtual indices are numpy's, worked out
on the host from the axis length and q alone."""
import operator
import warnings as _warnings

import numpy as _np

from . import _cukit
from ._indexing import take_along_axis as _take_along_axis
from ._shape import _arr, _axis, _along, moveaxis

__all__ = [
    "isclose", "diff", "ediff1d", "nanmean", "median", "percentile", "quantile",
    "histogram", "average", "cov", "corrcoef", "einsum", "iscomplexobj", "isrealobj",
    "trace", "nanargmax", "nanargmin", "angle",
]

_Array = _cukit.Array


def _dtype_of(x):
    return x.dtype if isinstance(x, _Array) else _np.asarray(x).dtype


def iscomplexobj(x):
    """numpy.iscomplexobj: whether x's dtype is complex (no data is read)."""
    return _dtype_of(x).kind == "c"


def isrealobj(x):
    """numpy.isrealobj: not iscomplexobj(x)."""
    return not iscomplexobj(x)





def angle(z, deg=False):
    """numpy.angle: arctan2(z.imag, z.real) (in degrees with deg=True)."""
    _arr(z, "angle")
    a = _cukit.arctan2(z.imag, z.real) if z.dtype.kind == "c" else \
        _cukit.arctan2(_cukit.zeros_like(z, dtype=_np.float64), z.astype(_np.float64))
    return a * (180.0 / _np.pi) if deg else a


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """numpy.isclose: |a - b| <= atol + rtol * |b| elementwise (infinities equal to
    themselves; NaN equal to NaN only with equal_nan), computed in floating point."""
    if not isinstance(a, _Array) and not isinstance(b, _Array):
        raise TypeError("cukit.isclose() takes at least one cukit.Array")
    dt = _np.result_type(_dtype_of(a), _dtype_of(b), 1.0)

    def prep(x):
        return x.astype(dt) if isinstance(x, _Array) else dt.type(x)

    def absolute(x):
        return _cukit.absolute(x) if isinstance(x, _Array) else abs(x)

    def finite(x):
        return _cukit.isfinite(x) if isinstance(x, _Array) else bool(_np.isfinite(x))

    a, b = prep(a), prep(b)
    close = _cukit.less_equal(absolute(a - b), atol + rtol * absolute(b))
    fin = finite(b)
    if fin is not True:
        close = _cukit.logical_and(close, fin)
    close = _cukit.logical_or(close, _cukit.equal(a, b))
    if equal_nan and dt.kind in "fc":
        nan_a = _cukit.isnan(a) if isinstance(a, _Array) else bool(_np.isnan(a))
        nan_b = _cukit.isnan(b) if isinstance(b, _Array) else bool(_np.isnan(b))
        both = _cukit.logical_and(nan_a, nan_b) if isinstance(nan_a, _Array) or \
            isinstance(nan_b, _Array) else (nan_a and nan_b)
        close = _cukit.logical_or(close, both)
    return close


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """numpy.diff: the n-th differences along axis (not_equal for bool arrays)."""
    _arr(a, "diff")
    if n == 0:
        return a
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = _axis(axis, a.ndim)
    parts = []
    for extra, first in ((prepend, True), (append, False)):
        if extra is None:
            continue
        if not isinstance(extra, _Array):
            extra = _cukit.to_device(_np.asarray(extra), device=a.device)
        if extra.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            extra = _cukit.broadcast_to(extra, tuple(shape))
        parts.append((first, extra))
    if parts:
        seq = [p for f, p in parts if f] + [a] + [p for f, p in parts if not f]
        a = _cukit.concatenate(seq, axis=axis)
    op = _cukit.not_equal if a.dtype == _np.bool_ else _cukit.subtract
    for _ in range(n):
        m = a.shape[axis]
        a = op(a[_along(a.ndim, axis, slice(1, None))],
               a[_along(a.ndim, axis, slice(None, max(m - 1, 0)))])
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """numpy.ediff1d: differences of the flattened array, with to_begin/to_end added."""
    _arr(ary, "ediff1d")
    if ary.dtype == _np.bool_:
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the "
                        "bitwise_xor, the `^` operator, or the logical_xor function instead.")
    flat = ary.ravel()
    d = flat[1:] - flat[:-1]
    parts = []
    if to_begin is not None:
        parts.append(_as_vector(to_begin, ary))
    parts.append(d)
    if to_end is not None:
        parts.append(_as_vector(to_end, ary))
    return parts[0] if len(parts) == 1 else _cukit.concatenate(parts, dtype=ary.dtype)


def _as_vector(x, like):
    if isinstance(x, _Array):
        return x.ravel()
    host = _np.asarray(x).ravel()
    if not _np.can_cast(host, like.dtype, casting="same_kind"):
        raise TypeError(f"dtype of `to_begin`/`to_end` must be compatible with input "
                        f"`ary` under the `same_kind` rule.")
    return _cukit.to_device(host.astype(like.dtype), device=like.device)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False):
    """numpy.nanmean: the mean of the elements that are not NaN."""
    _arr(a, "nanmean")
    if a.dtype.kind not in "fc":
        return _cukit.mean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
    valid = _cukit.logical_not(_cukit.isnan(a))
    total = _cukit.nansum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    count = _cukit.sum(valid, axis=axis, keepdims=keepdims)
    res = _cukit.true_divide(total, count.astype(total.dtype if total.dtype.kind == "f"
                                                  else _np.float64))
    if out is not None:
        out[...] = res
        return out
    return res


def _rows(a, axis):
    """a with the reduced axes moved last and merged into one (axis None flattens)."""
    if axis is None:
        x = a.ravel()
    elif isinstance(axis, (tuple, list)):
        axes = [_axis(ax, a.ndim) for ax in axis]
        x = moveaxis(a, axes, list(range(a.ndim - len(axes), a.ndim)))
        x = x.reshape(tuple(x.shape[:a.ndim - len(axes)]) + (-1,)) if x.is_contiguous \
            else _cukit.ascontiguousarray(x).reshape(tuple(x.shape[:a.ndim - len(axes)]) + (-1,))
    else:
        x = moveaxis(a, _axis(axis, a.ndim), -1)
    return x.reshape(1) if x.ndim == 0 else x


def _sorted_along(a, axis, who):
    """a sorted along one axis, moved last; axis None flattens."""
    return _cukit.sort(_rows(a, axis), axis=-1)


def _keep(res, a, axis):
    """res (the reduced axes gone) with length-1 axes put back where axis was."""
    if axis is None:
        axes = list(range(a.ndim))
    else:
        axes = [_axis(ax, a.ndim) for ax in (axis if isinstance(axis, (tuple, list)) else [axis])]
    lead = res.ndim - (a.ndim - len(axes))
    shape = list(res.shape[:lead])
    rest = iter(res.shape[lead:])
    for d in range(a.ndim):
        shape.append(1 if d in axes else next(rest))
    return res.reshape(tuple(shape))


def _nan_where(res, s):
    """NaN where the sorted rows s hold a NaN (sorted last), as numpy's quantiles give."""
    if s.dtype.kind not in "fc" or s.shape[-1] == 0:
        return res
    has_nan = _cukit.isnan(s[..., -1])
    return _cukit.where(has_nan, _cukit.full((), _np.nan, res.dtype, s.device), res)


_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
            "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
            "normal_unbiased", "lower", "higher", "midpoint", "nearest")
# Hyndman and Fan's continuous methods by their (alpha, beta); the others have rules of
# their own in _virtual. These methods pick an element (numpy's integer virtual index):
_HF = {"interpolated_inverted_cdf": (0, 1), "hazen": (0.5, 0.5), "weibull": (0, 0),
       "median_unbiased": (1 / 3.0, 1 / 3.0), "normal_unbiased": (3 / 8.0, 3 / 8.0)}
_PICK = ("inverted_cdf", "closest_observation", "lower", "higher", "nearest")


def _virtual(method, n, n1, q):
    """numpy's virtual index of the quantile q among n sorted numbers, in numpy's own
    arithmetic: n and n1 (= n - 1) are Python ints, or arrays of the type a Python int
    takes beside q (one index per n). An integer array for the methods that pick."""
    if method in _HF:
        alpha, beta = _HF[method]
        return n * q + (alpha + q * (1 - alpha - beta)) - 1
    if method in ("inverted_cdf", "closest_observation"):
        v = n * q - 1 if method == "inverted_cdf" else n * q - 1 - 0.5
        lo = _np.floor(v)
        pick_lo = v - lo == 0
        if method == "closest_observation":  # ties go to the even (1-based) order statistic
            pick_lo = pick_lo & (lo % 2 == 1)
        return _np.maximum(_np.where(pick_lo, lo, lo + 1).astype(_np.intp), 0)
    if method == "averaged_inverted_cdf":
        return n * q - 1
    x = n1 * q
    if method == "lower":
        return _np.floor(x).astype(_np.intp)
    if method == "higher":
        return _np.ceil(x).astype(_np.intp)
    if method == "nearest":
        return _np.around(x).astype(_np.intp)
    if method == "midpoint":
        return 0.5 * (_np.floor(x) + _np.ceil(x))
    return x  # linear


def _plan(method, n, n1, q, weak):
    """Where numpy reads the quantile q (a 0-d array of numpy's q type): (i, None, None,
    None) for the element at i, or (i, j, t, 1 - t) for numpy's interpolation from
    element i towards element j by t; -1 is the last number. t and 1 - t are in numpy's
    type for gamma (Python floats' precision when q is a Python number). n and n1 as
    _virtual takes them; with arrays, one plan per n."""
    v = _np.asarray(_virtual(method, n, n1, q))
    if method in _PICK or (method == "linear" and v.dtype.kind in "iu"):
        return v, None, None, None
    lo = _np.floor(v)
    hi = lo + 1
    top, low = v >= n1, v < 0  # numpy's clamps: the last number; the first
    lo, hi = _np.where(top, -1, lo), _np.where(top, -1, hi)
    lo, hi = _np.where(low, 0, lo), _np.where(low, 0, hi)
    t = v - lo
    if method == "averaged_inverted_cdf":
        t = _np.where(t == 0, 0.5, 1.0)
    elif method == "midpoint":
        t = _np.where(v % 1 == 0, 0.0, 0.5)
    t = _np.asarray(t, dtype=v.dtype)
    if weak:  # numpy takes a Python float for t: 1 - t in double, each cast weakly later
        t = t.astype(_np.float64)
        return lo.astype(_np.intp), hi.astype(_np.intp), t, 1.0 - t
    return lo.astype(_np.intp), hi.astype(_np.intp), t, 1 - t


def _lerp_type(a_dtype, t, weak):
    """numpy's result type for the interpolating methods: a's type with gamma's (weakly
    as a Python float when q is a Python number)."""
    return _np.result_type(a_dtype, 0.0 if weak else t.dtype)


def _lerp(x0, x1, t, omt, ft):
    """numpy's interpolation x0 + (x1 - x0) * t (from x1 back by 1 - t where t >= 0.5):
    the difference in the elements' type, the rest in ft. t and omt are host scalars
    (t >= 0.5 decides on the host) or device arrays of the rows' weights."""
    d = x1 - x0
    if d.dtype != _np.dtype(ft):
        x0, x1, d = x0.astype(ft), x1.astype(ft), d.astype(ft)
    if not isinstance(t, _Array):
        return x1 - d * ft(omt) if t >= 0.5 else x0 + d * ft(t)
    return _cukit.where(t >= 0.5, x1 - d * omt.astype(ft), x0 + d * t.astype(ft))


def _check_q(a, q, method, weights, who, scale):
    """numpy's checks, in numpy's order, and q as numpy holds it (its own type; divided
    by 100 for percentile), with whether q was a Python number (weak in numpy's
    promotion)."""
    _arr(a, who)
    if a.dtype.kind == "c":
        raise TypeError("a must be an array of real numbers")
    weak = type(q) in (int, float)
    qh = q.get() if isinstance(q, _Array) else q
    qh = _np.asarray(_np.true_divide(qh, 100) if scale == 100 else qh)
    if not _np.all((qh >= 0) & (qh <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]" if scale == 100
                         else "Quantiles must be in the range [0, 1]")
    if weights is not None and method != "inverted_cdf":
        raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
    if qh.ndim > 2:
        raise ValueError("q must be a scalar or 1d")
    if method not in _METHODS:
        raise ValueError(f"{method!r} is not a valid method. Use one of: {_METHODS}")
    return qh, weak


def _weight_rows(weights, a, axis, who):
    """The weights (a cukit array) as numpy broadcasts them over a (one weight per
    element, or one per position along the reduced axes), arranged as _rows arranges a."""
    w = _arr(weights, who)
    if tuple(w.shape) != tuple(a.shape):
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        axes = [_axis(ax, a.ndim) for ax in (axis if isinstance(axis, (tuple, list))
                                             else [axis])]
        if tuple(w.shape) != tuple(a.shape[ax] for ax in axes):
            raise ValueError("Shape of weights must be consistent with shape of a along "
                             "specified axis.")
        w = w.transpose(tuple(int(i) for i in _np.argsort(axes)))
        w = _cukit.broadcast_to(w.reshape(tuple(s if d in axes else 1
                                                for d, s in enumerate(a.shape))), a.shape)
    return _rows(w, axis)


def _weighted_cdf(a, weights, axis, qh, who, valid=None):
    """Rows of a sorted (NaNs last), and numpy's normalized cumulative weights of them in
    q's type when q is floating (leading zeros as -1, as numpy has them), where valid
    (optional) masks the numbers that count. numpy's two checks of the weights (negative;
    NaN, infinite or all zero) come back in one read."""
    x, w = _rows(a, axis), _weight_rows(weights, a, axis, who)
    order = _cukit.argsort(x, axis=-1)
    s = _take_along_axis(x, order, -1)
    ws = _take_along_axis(_cukit.ascontiguousarray(w), order, -1)
    if valid is not None:
        ws = _cukit.where(valid(s), ws, _cukit.zeros((), ws.dtype, s.device))
    cdf = _cukit.cumsum(ws, axis=-1, dtype=_np.float64)
    cdf = cdf / cdf[..., -1:]
    bad = _cukit.isnan(cdf[..., -1])
    if valid is not None:
        bad = _cukit.logical_and(bad, valid(s[..., :1])[..., 0])
    negative, bad = _cukit.stack([_cukit.any(w < 0), _cukit.any(bad)]).get().tolist()
    if negative:
        raise ValueError("Weights must be non-negative.")
    if bad:
        raise ValueError("Weights included NaN, inf or were all zero.")
    if qh.dtype.kind == "f":
        cdf = cdf.astype(qh.dtype)
    return s, _cukit.where(cdf == 0, _cukit.full((), -1, cdf.dtype, s.device), cdf)


def _weighted_pick(s, cdf, qk, last):
    """numpy's weighted inverted_cdf: the first number whose cumulative weight reaches
    qk (an index per row of the rows' last numbers, last, at most)."""
    qv = cdf.dtype.type(qk)
    i = _cukit.sum(cdf < qv, axis=-1, keepdims=True)
    return _take_along_axis(s, _cukit.minimum(i, last), -1)[..., 0]


def _quantiles(a, q, axis, method, keepdims, who, scale, weights=None):
    qh, weak = _check_q(a, q, method, weights, who, scale)
    if weights is not None:
        s, cdf = _weighted_cdf(a, weights, axis, qh, who)
    else:
        s = _sorted_along(a, axis, who)
    n = s.shape[-1]
    if n == 0:  # numpy's own error for an empty axis
        raise IndexError("index -1 is out of bounds for axis 0 with size 0")
    outs = []
    for qk in qh.reshape(-1):
        qk = _np.asarray(qk)
        if weights is not None:
            outs.append(_nan_where(_weighted_pick(s, cdf, qk, n - 1), s))
            continue
        i, j, t, omt = _plan(method, n, n - 1, qk, weak)
        if j is None:
            r = s[..., int(i)]
        else:
            r = _lerp(s[..., int(i)], s[..., int(j)], t[()], omt[()],
                      _lerp_type(a.dtype, t, weak).type)
        outs.append(_nan_where(r, s))
    return _quantiles_result(outs, qh, s, a, axis, keepdims)


def _quantiles_result(outs, qh, s, a, axis, keepdims):
    """One result per q (stacked in q's shape), never a view of the sorted rows s, with
    the reduced axes put back for keepdims."""
    res = outs[0] if qh.ndim == 0 else _cukit.stack(outs).reshape(qh.shape + tuple(outs[0].shape))
    if res.ndim == 0 or res.buffer is s.buffer:
        res = res.copy()
    if keepdims:
        res = _keep(res, a, axis)
    return res


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
    """numpy.quantile, all of numpy's methods, on cukit's sort: the elements numpy's
    virtual indices name, interpolated in numpy's arithmetic; weights (inverted_cdf
    only, as numpy) by the sorted rows' cumulative weights."""
    res = _quantiles(a, q, axis, method, keepdims, "quantile", 1, weights)
    return _to_out(res, out)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
    """numpy.percentile: quantile(a, q / 100)."""
    res = _quantiles(a, q, axis, method, keepdims, "percentile", 100, weights)
    return _to_out(res, out)


def _to_out(res, out):
    if out is None:
        return res
    out[...] = res
    return out


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """numpy.median: the middle element (the mean of the two middle ones) along axis, on
    cukit's sort; NaN where a row holds a NaN."""
    _arr(a, "median")
    if a.dtype.kind not in "fc":
        a = a.astype(_np.float64)
    s = _sorted_along(a, axis, "median")
    n = s.shape[-1]
    if n == 0:  # numpy: NaN, with its warning
        _warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
        res = _cukit.full(s.shape[:-1], _np.nan, dtype=a.dtype)
    elif n % 2:
        res = s[..., n // 2].copy()
    else:
        res = (s[..., n // 2 - 1] + s[..., n // 2]) / a.dtype.type(2) \
            if a.dtype.kind == "f" else (s[..., n // 2 - 1] + s[..., n // 2]) / 2
    res = _nan_where(res, s)
    if keepdims:
        res = _keep(res, a, axis)
    return _to_out(res, out)


def _extremes(x):
    """x's smallest and largest values, read in one: numpy scalars of x's type."""
    return _cukit.stack([_cukit.min(x), _cukit.max(x)]).get()[()]


def _bin_range(rng, x, extremes=None):
    """(lo, hi) of equal bins as numpy makes them: the range given, checked, or x's
    smallest and largest values (extremes where the caller has read them, else one
    read); an empty x gives (0, 1) and an empty span is widened by 0.5 each way."""
    if rng is not None:
        lo, hi = rng
        if lo > hi:
            raise ValueError("max must be larger than min in range parameter.")
        if not (_np.isfinite(lo) and _np.isfinite(hi)):
            raise ValueError(f"supplied range of [{lo}, {hi}] is not finite")
    elif x.size == 0:
        lo, hi = 0, 1
    else:
        lo, hi = _extremes(x) if extremes is None else extremes
        if not (_np.isfinite(lo) and _np.isfinite(hi)):
            raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


_BIN_RULES = ("auto", "doane", "fd", "rice", "scott", "sqrt", "stone", "sturges")


def _span(hi, lo):
    """hi - lo as numpy's histogram measures a range: in the common type, except that
    signed integers subtract in the unsigned type of their width (no overflow)."""
    dt = _np.result_type(hi, lo)
    if dt.kind == "i":
        return _np.subtract(_np.asarray(hi, dt), _np.asarray(lo, dt), casting="unsafe",
                            dtype=_np.dtype(f"u{dt.itemsize}"))
    return _np.subtract(hi, lo, dtype=dt)


def _stone_width(x, ptp, lo, hi):
    """numpy's 'stone' width: ptp / k for the count k in 1..max(100, sqrt(n)) that
    minimizes numpy's estimate of the integrated squared error, each candidate's
    histogram counted on the device between lo and hi and its sum of squared
    frequencies reduced there; the candidates' sums come back in one read."""
    n = x.size
    if n <= 1 or ptp == 0:
        return 0
    top = max(100, int(_np.sqrt(n)))
    sums = []
    for k in range(1, top + 1):
        p = _count(x, _equal_edges(lo, hi, k, x.dtype), None) / n
        sums.append(_cukit.dot(p, p))
    sums = _cukit.stack(sums).get()
    best = min(range(1, top + 1),
               key=lambda k: (2 - (n + 1) * sums[k - 1]) / (ptp / k))
    if best == top:
        _warnings.warn("The number of bins estimated may be suboptimal.", RuntimeWarning,
                       stacklevel=6)
    return ptp / best


def _rule_width(x, rule, lo, hi, extremes):
    """numpy's bin width for the named rule over the (non-empty, 1-D) data x binned
    between lo and hi: the data's statistics reduced on the device, the few scalars read
    back as numpy scalars of the reductions' types, and numpy's formulas (and so its
    arithmetic types) on them. extremes: x's smallest and largest values, or None."""
    n = x.size
    xlo, xhi = _extremes(x) if extremes is None else extremes
    ptp = _span(xhi, xlo)
    if rule == "stone":
        return _stone_width(x, ptp, lo, hi)
    sqrt_w = ptp / _np.sqrt(n)
    sturges_w = ptp / (_np.log2(n) + 1.0)
    if rule == "sqrt":
        return sqrt_w
    if rule == "sturges":
        return sturges_w
    if rule == "rice":
        return ptp / (2.0 * n ** (1.0 / 3))
    if rule == "scott":
        std = _cukit.std(x).get()[()]
        return (24.0 * _np.pi ** 0.5 / n) ** (1.0 / 3.0) * std
    if rule in ("fd", "auto"):
        q75, q25 = percentile(x, [75, 25]).get()
        fd_w = 2.0 * (q75 - q25) * n ** (-1.0 / 3.0)
        return fd_w if rule == "fd" else min(max(fd_w, sqrt_w / 2), sturges_w)
    # doane: the skewness g1 = mean(((x - mean) / std) ** 3), reduced on the device
    if n <= 2:
        return 0.0
    sg1 = _np.sqrt(6.0 * (n - 2) / ((n + 1.0) * (n + 3)))
    sigma = _cukit.std(x)
    g1 = _cukit.mean(((x - _cukit.mean(x)) / sigma) ** 3)
    sigma, g1 = _cukit.stack([sigma, g1.astype(sigma.dtype)]).get()
    if not sigma > 0.0:
        return 0.0
    return ptp / (1.0 + _np.log2(n) + _np.log2(1.0 + _np.absolute(g1) / sg1))


def _rule_bins(x, rule, rng, lo, hi, extremes):
    """The number of equal bins numpy's rule gives the 1-D data x between lo and hi (a
    range given truncates the data to it first; extremes: x's smallest and largest
    values where read already, else None)."""
    if rng is not None:
        x, extremes = x[(x >= lo) & (x <= hi)], None
    if x.size == 0:
        return 1
    width = _rule_width(x, rule, lo, hi, extremes)
    if not width:  # e.g. fd of data whose quartiles coincide
        return 1
    if x.dtype.kind in "iu" and width < 1:
        width = 1
    return int(_np.ceil(_span(hi, lo) / width))


def _bin_edges(a, bins, range, weights):
    """The edges (a host array) numpy's histogram uses for a's values: bins a count, a
    rule's name or the edges themselves, with numpy's checks."""
    if a.dtype == _np.bool_:  # numpy counts booleans as uint8
        a = a.astype(_np.uint8)
    if isinstance(bins, str):
        if bins not in _BIN_RULES:
            raise ValueError(f"{bins!r} is not a valid estimator for `bins`")
        if weights is not None:
            raise TypeError("Automated estimation of the number of bins is not supported "
                            "for weighted data")
        extremes = _extremes(a) if range is None and a.size else None
        lo, hi = _bin_range(range, a, extremes)
        nb = _rule_bins(a.ravel(), bins, range, lo, hi, extremes)
    elif _np.ndim(bins) == 0 and not isinstance(bins, _Array):
        try:
            nb = operator.index(bins)
        except TypeError:
            raise TypeError("`bins` must be an integer, a string, or an array") from None
        if nb < 1:
            raise ValueError("`bins` must be positive, when an integer")
        lo, hi = _bin_range(range, a)
    else:
        edges = bins.get() if isinstance(bins, _Array) else _np.asarray(bins)
        if edges.ndim != 1:
            raise ValueError("`bins` must be 1d, when an array")
        if _np.any(edges[:-1] > edges[1:]):
            raise ValueError("`bins` must increase monotonically, when an array")
        return edges
    return _equal_edges(lo, hi, nb, a.dtype)


def _equal_edges(lo, hi, nb, dtype):
    """numpy's nb equal bins from lo to hi for data of dtype (a host array)."""
    et = _np.result_type(lo, hi, dtype)
    if et.kind in "biu":
        et = _np.result_type(et, float)
    edges = _np.linspace(lo, hi, nb + 1, endpoint=True, dtype=et)
    if _np.any(edges[:-1] >= edges[1:]):
        raise ValueError(f"Too many bins for data range. Cannot create {nb} finite-sized "
                         f"bins.")
    return edges


def _count(flat, edges_host, weights):
    """The counts (or sums of weights) of the 1-D data flat between the host edges: one
    kernel of atomic adds, comparing in float32 for float32 or float16 edges, else in
    float64."""
    if flat.dtype.kind == "f" and flat.dtype.itemsize < 4:
        flat = flat.astype(_np.float32)
    cmp_t = _np.float32 if edges_host.dtype in (_np.float32, _np.float16) else _np.float64
    edges_cmp = _cukit.to_device(edges_host.astype(cmp_t), device=flat.device)
    return _cukit._histogram(flat, edges_cmp, weights)


def histogram(a, bins=10, range=None, density=None, weights=None):
    """numpy.histogram: (counts, edges); the counting is one kernel of atomic adds. bins
    an int (equal bins between range, or the data's min and max: one read), a rule's
    name (numpy's estimators, on statistics reduced on the device: a few reads), or
    increasing edges (a cukit or host array)."""
    _arr(a, "histogram")
    flat = a.ravel()
    if weights is not None:
        _arr(weights, "histogram")
        if tuple(weights.shape) != tuple(a.shape):
            raise ValueError("weights should have the same shape as a.")
        weights = weights.ravel()
    if flat.dtype.kind == "c":
        raise TypeError("cukit.histogram() of complex data: take .real or abs() first")
    edges_host = _bin_edges(a, bins, range, weights)
    counts = _count(flat, edges_host, weights)
    if weights is not None and weights.dtype.kind == "f" and weights.dtype != _np.float64:
        counts = counts.astype(weights.dtype)
    edges = _cukit.to_device(edges_host, device=a.device)
    if density:
        widths = _cukit.to_device(_np.diff(edges_host).astype(_np.float64), device=a.device)
        total = _cukit.sum(counts).astype(_np.float64)
        counts = counts.astype(_np.float64) / widths / total
    return counts, edges


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """numpy.average: the mean, or the weighted mean sum(a * w) / sum(w)."""
    _arr(a, "average")
    if weights is None:
        avg = _cukit.mean(a, axis=axis, keepdims=keepdims)
        if returned:
            n = a.size if axis is None else int(_np.prod(
                [a.shape[_axis(x, a.ndim)] for x in (axis if isinstance(axis, tuple) else (axis,))]))
            return avg, _cukit.full(avg.shape, n, avg.dtype, a.device)
        return avg
    _arr(weights, "average")
    wgt = weights
    if tuple(wgt.shape) != tuple(a.shape):
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        axes = [_axis(x, a.ndim) for x in (axis if isinstance(axis, tuple) else (axis,))]
        if tuple(wgt.shape) != tuple(a.shape[x] for x in axes):
            raise ValueError("Shape of weights must be consistent with shape of a along "
                             "specified axis.")
        shape = [1] * a.ndim
        for x in axes:
            shape[x] = a.shape[x]
        order = sorted(range(len(axes)), key=lambda i: axes[i])
        wgt = wgt.transpose(tuple(order)).reshape(tuple(shape)) if len(axes) > 1 else \
            wgt.reshape(tuple(shape))
    rt = _np.result_type(a.dtype, wgt.dtype, _np.float64 if a.dtype.kind in "biu" else a.dtype)
    if a.dtype.kind in "biu" and wgt.dtype.kind in "biu":
        rt = _np.float64
    scl = _cukit.sum(wgt.astype(rt) if wgt.dtype != rt else wgt, axis=axis, keepdims=keepdims)
    if bool(_cukit.any(scl == 0).item()):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    prod = a.astype(rt) * wgt if a.dtype != rt else a * wgt
    avg = _cukit.sum(prod, axis=axis, keepdims=keepdims) / scl
    if avg.dtype != rt:
        avg = avg.astype(rt)
    if returned:
        if tuple(scl.shape) != tuple(avg.shape):
            scl = _cukit.broadcast_to(scl, avg.shape).copy()
        return avg, scl
    return avg


def _cov_weights(fweights, aweights, n, ddof):
    """numpy's checks of cov's frequency and analytic weights, in numpy's order, and
    their product w (float64, on the device, or None) with the sums numpy's
    normalization takes: (w, sum(w), sum(w * aweights)). The checks and sums come back
    in one read."""
    fw = aw = w = None
    flags = []
    if fweights is not None:
        fw = _arr(fweights, "cov").astype(_np.float64)
        flags += [_cukit.all(fw == _cukit.round(fw)), _cukit.any(fw < 0)]
    if aweights is not None:
        aw = _arr(aweights, "cov").astype(_np.float64)
        flags += [_cukit.any(aw < 0)]
    shapes_ok = all(v.ndim == 1 and v.shape[0] == n for v in (fw, aw) if v is not None)
    if shapes_ok:
        w = fw if aw is None else aw if fw is None else fw * aw
        flags += [_cukit.sum(w), _cukit.sum(w * aw) if aw is not None and ddof else
                  _cukit.zeros((), _np.float64, w.device)]
    read = _cukit.stack([f.astype(_np.float64) for f in flags]).get().tolist()
    for name, v in (("fweights", fw), ("aweights", aw)):
        if v is None:
            continue
        if name == "fweights" and not read.pop(0):
            raise TypeError("fweights must be integer")
        if v.ndim > 1:
            raise RuntimeError(f"cannot handle multidimensional {name}")
        if v.ndim == 0 or v.shape[0] != n:
            raise RuntimeError(f"incompatible numbers of samples and {name}")
        if read.pop(0):
            raise ValueError(f"{name} cannot be negative")
    w_sum, w_aw = read
    if w_sum == 0:
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    return w, w_sum, w_aw


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """numpy.cov: the covariance matrix of the rows (variables) of m, as one matmul;
    fweights (integer counts) and aweights (analytic weights) as numpy weighs the
    columns, with numpy's checks (read back with the weights' sums: one read)."""
    _arr(m, "cov")
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        _arr(y, "cov")
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = _np.result_type(m.dtype, _np.float64) if y is None else \
            _np.result_type(m.dtype, y.dtype, _np.float64)
    from ._shape import atleast_2d
    X = atleast_2d(m).astype(dtype)
    if not rowvar and m.ndim != 1:
        X = X.T
    if X.shape[0] == 0:
        return _cukit.empty((0, 0), dtype, m.device)
    if y is not None:
        Y = atleast_2d(y).astype(dtype)
        if not rowvar and Y.shape[0] != 1:
            Y = Y.T
        X = _cukit.concatenate([X, Y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    N = X.shape[1]
    if fweights is None and aweights is None:
        fact = N - ddof
        if fact <= 0:
            _warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        X = X - _cukit.mean(X, axis=1, keepdims=True)
        Xt = _cukit.conjugate(X.T) if X.dtype.kind == "c" else X.T
        c = _cukit.matmul(_cukit.ascontiguousarray(X), _cukit.ascontiguousarray(Xt))
        c = c / (fact if fact > 0 else 0.0)
        return c.squeeze()
    w, w_sum, w_aw = _cov_weights(fweights, aweights, N, ddof)
    if ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * w_aw / w_sum
    if fact <= 0:
        _warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    # numpy's average: the weighted sums in float64 (or complex128) over sum(w); the
    # centred X is kept in X's type, its weighted copy (and so the result) is not
    rt = _np.result_type(X.dtype, _np.float64)
    avg = _cukit.sum(X.astype(rt) * w, axis=1, keepdims=True) / w_sum
    X = (X - avg).astype(X.dtype)
    Xw = X * w
    Xt = _cukit.conjugate(Xw.T) if rt.kind == "c" else Xw.T
    c = _cukit.matmul(_cukit.ascontiguousarray(X.astype(rt)), _cukit.ascontiguousarray(Xt))
    c = c * float(_np.true_divide(1, fact))
    return c.squeeze()


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """numpy.corrcoef: cov normalized by the standard deviations, clipped to [-1, 1]."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = c.diagonal().copy()
    std = _cukit.sqrt(d.real)
    c = c / std[:, None]
    c = c / std[None, :]
    if c.dtype.kind == "c":
        re = _cukit.clip(c.real, -1, 1)
        im = _cukit.clip(c.imag, -1, 1)
        out = c.copy()
        out.real[...] = re
        out.imag[...] = im
        return out
    return _cukit.clip(c, -1, 1)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """numpy.trace: the sum along a diagonal."""
    return _cukit.sum(_arr(a, "trace").diagonal(offset, axis1, axis2), axis=-1, dtype=dtype,
                      out=out)


def _nanarg(a, axis, fill, who, fn):
    _arr(a, who)
    if a.dtype.kind not in "fc":
        return fn(a, axis=axis)
    nan = _cukit.isnan(a)
    if bool(_cukit.any(_cukit.all(nan, axis=axis)).item()):
        raise ValueError("All-NaN slice encountered")
    return fn(_cukit.where(nan, _cukit.full((), fill, a.dtype, a.device), a), axis=axis)


def nanargmax(a, axis=None):
    """numpy.nanargmax: argmax ignoring NaNs (ValueError on an all-NaN slice)."""
    return _nanarg(a, axis, -_np.inf, "nanargmax", _cukit.argmax)


def nanargmin(a, axis=None):
    """numpy.nanargmin: argmin ignoring NaNs (ValueError on an all-NaN slice)."""
    return _nanarg(a, axis, _np.inf, "nanargmin", _cukit.argmin)


# ------------------------------------------------------------------ einsum

def _einsum_parse(subscripts, operands):
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        ins, out = subscripts.split("->")
        if "->" in out:
            raise ValueError("einstein sum subscripts string includes output subscript '-' "
                             "multiple times")
    else:
        ins, out = subscripts, None
    terms = ins.split(",")
    if len(terms) != len(operands):
        raise ValueError("more operands provided to einstein sum function than specified "
                         "in the subscripts string" if len(operands) > len(terms) else
                         "fewer operands provided to einstein sum function than specified "
                         "in the subscripts string")
    pool = iter(chr(c) for c in range(0x100, 0x200))
    ell_labels = []
    max_ell = 0
    labels = []
    for t, op in zip(terms, operands):
        if "." in t:
            if t.count("...") != 1 or t.replace("...", "").count("."):
                raise ValueError("einstein sum subscripts string contains a '.' that is not "
                                 "part of an ellipsis ('...')")
            max_ell = max(max_ell, op.ndim - (len(t) - 3))
        for ch in t.replace("...", ""):
            if not ch.isalpha():
                raise ValueError(f"invalid subscript '{ch}' in einstein sum subscripts "
                                 f"string, subscripts must be letters")
    ell_labels = [next(pool) for _ in range(max_ell)]
    for t, op in zip(terms, operands):
        if "..." in t:
            pre, post = t.split("...")
            k = op.ndim - len(pre) - len(post)
            if k < 0:
                raise ValueError("operand has more dimensions than subscripts given in "
                                 "einstein sum")
            lab = list(pre) + ell_labels[max_ell - k:] + list(post)
        else:
            lab = list(t)
        if len(lab) != op.ndim:
            raise ValueError(f"operand has more dimensions than subscripts given in einstein "
                             f"sum, but no '...' ellipsis provided to broadcast the extra "
                             f"dimensions." if op.ndim > len(lab) else
                             f"einstein sum subscripts string contains too many subscripts "
                             f"for operand")
        labels.append(lab)
    if out is None:
        counts = {}
        for lab in labels:
            for ch in lab:
                counts[ch] = counts.get(ch, 0) + 1
        out_labels = ell_labels + sorted(ch for ch, c in counts.items()
                                         if c == 1 and ch not in ell_labels)
    else:
        if out.count("...") > 1 or out.replace("...", "").count("."):
            raise ValueError("einstein sum subscripts string contains a '.' that is not part "
                             "of an ellipsis ('...')")
        pre, _, post = out.partition("...") if "..." in out else (out, "", "")
        out_labels = list(pre) + (ell_labels if "..." in out else []) + list(post)
        seen = set()
        for ch in out_labels:
            if ch in seen:
                raise ValueError(f"einstein sum subscripts string includes output subscript "
                                 f"'{ch}' multiple times")
            seen.add(ch)
            if not any(ch in lab for lab in labels):
                raise ValueError(f"einstein sum subscripts string included output subscript "
                                 f"'{ch}' which never appeared in an input")
    return labels, out_labels


def _einsum_single(x, lab, keep):
    """Take x's diagonals over repeated labels and sum the labels not in keep."""
    while True:
        dup = next((ch for ch in lab if lab.count(ch) > 1), None)
        if dup is None:
            break
        i = lab.index(dup)
        j = lab.index(dup, i + 1)
        if x.shape[i] != x.shape[j]:
            raise ValueError(f"dimensions in operand for collapsing index '{dup}' don't match "
                             f"({x.shape[i]} != {x.shape[j]})")
        x = x.diagonal(0, i, j)
        lab = [c for k, c in enumerate(lab) if k not in (i, j)] + [dup]
    gone = tuple(k for k, c in enumerate(lab) if c not in keep)
    if gone:
        x = _cukit.sum(x, axis=gone, dtype=x.dtype if x.dtype.kind != "b" else None)
        lab = [c for c in lab if c in keep]
    return x, lab


def _einsum_pair(a, la, b, lb, keep, sizes):
    """Contract a and b over their shared labels not in keep, through matmul."""
    batch = [c for c in la if c in lb and c in keep]
    inner = [c for c in la if c in lb and c not in keep]
    fa = [c for c in la if c not in lb]
    fb = [c for c in lb if c not in la]

    def arrange(x, lab, order):
        x = x.transpose(tuple(lab.index(c) for c in order))
        shape = tuple(sizes[c] for c in order)
        if tuple(x.shape) != shape:
            x = _cukit.broadcast_to(x, shape)
        return _cukit.ascontiguousarray(x)

    nb = int(_np.prod([sizes[c] for c in batch]))
    ni = int(_np.prod([sizes[c] for c in inner]))
    na = int(_np.prod([sizes[c] for c in fa]))
    nbf = int(_np.prod([sizes[c] for c in fb]))
    rt = _np.result_type(a.dtype, b.dtype)
    if rt.kind in "fc":
        A = arrange(a, la, batch + fa + inner).astype(rt, copy=False).reshape(nb, na, ni)
        B = arrange(b, lb, batch + inner + fb).astype(rt, copy=False).reshape(nb, ni, nbf)
        r = _cukit.matmul(A, B)
    else:  # integers and bools: a broadcast product and a sum (matmul takes floats)
        A = arrange(a, la, batch + fa + inner).reshape(nb, na, 1, ni)
        B = arrange(b, lb, batch + inner + fb).reshape(nb, ni, nbf)
        B = B.transpose((0, 2, 1)).reshape(nb, 1, nbf, ni)
        prod = _cukit.multiply(A, B)
        r = _cukit.sum(prod, axis=-1, dtype=rt if rt.kind != "b" else None)
        if rt.kind == "b":
            r = r.astype(rt)
    lab = batch + fa + fb
    return r.reshape(tuple(sizes[c] for c in lab)), lab


def einsum(subscripts, *operands, out=None, dtype=None, order="K", casting="safe",
           optimize=False, **kwargs):
    """numpy.einsum: diagonals as views, sums of the labels one operand holds alone,
    then operand by operand a contraction through matmul (batched; integer types as a
    broadcast product and a sum), and a transpose to the output's order."""
    if kwargs:
        raise TypeError(f"einsum() got unexpected keyword arguments {sorted(kwargs)}")
    if not isinstance(subscripts, str):
        raise NotImplementedError("cukit.einsum takes the subscripts as a string")
    ops = [_arr(op, "einsum") for op in operands]
    if not ops:
        raise ValueError("No input operands")
    labels, out_labels = _einsum_parse(subscripts, ops)
    rt = _np.result_type(*(op.dtype for op in ops)) if dtype is None else _np.dtype(dtype)
    for op in ops:
        if not _np.can_cast(op.dtype, rt, casting):
            raise TypeError(f"Iterator operand dtype could not be cast from {op.dtype!r} to "
                            f"{rt!r} according to the rule {casting!r}")
    sizes = {}
    for op, lab in zip(ops, labels):
        for n, ch in zip(op.shape, lab):
            if sizes.get(ch, 1) not in (1, n) and n != 1:
                raise ValueError(f"operands could not be broadcast together with remapped "
                                 f"shapes: label '{ch}' has sizes {sizes[ch]} and {n}")
            sizes[ch] = max(sizes.get(ch, 1), n) if ch in sizes else n
    ops = [op.astype(rt) if op.dtype != rt and dtype is not None else op for op in ops]
    work = []
    for k, (op, lab) in enumerate(zip(ops, labels)):
        others = set(out_labels)
        for j, l2 in enumerate(labels):
            if j != k:
                others |= set(l2)
        work.append(_einsum_single(op, lab, others))
    x, lx = work[0]
    for k in range(1, len(work)):
        y, ly = work[k]
        keep = set(out_labels)
        for _, l2 in work[k + 1:]:
            keep |= set(l2)
        x, lx = _einsum_pair(x, lx, y, ly, keep, sizes)
    x, lx = _einsum_single(x, lx, set(out_labels))
    x = x.transpose(tuple(lx.index(c) for c in out_labels)) if lx else x
    if tuple(x.shape) != tuple(sizes[c] for c in out_labels):
        x = _cukit.broadcast_to(x, tuple(sizes[c] for c in out_labels))
    if x.dtype != rt:
        x = x.astype(rt)
    if out is not None:
        out[...] = x
        return out
    return x if x.ndim else x.copy()
