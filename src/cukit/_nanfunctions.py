"""numpy's NaN-ignoring statistics beyond nansum/nanmax/nanmin/nanmean: nanvar, nanstd,
nanprod, nancumsum, nancumprod, nanmedian, nanquantile, nanpercentile. NaNs are replaced
by the operation's identity, or counted out; the quantiles sort each row (NaNs sort
last) and gather, by each row's count of numbers, numpy's positions and weights for
that count (a host table per q, one entry per count a row can hold)."""
import warnings as _warnings

import numpy as _np

from . import _cukit
from ._indexing import take_along_axis as _take_along_axis
from ._shape import _arr
from ._stats import (_check_q, _lerp, _lerp_type, _plan, _quantiles_result, _sorted_along,
                     _to_out, _weighted_cdf, _weighted_pick, nanmean, percentile, quantile)

__all__ = ["nanvar", "nanstd", "nanprod", "nancumsum", "nancumprod", "nanmedian",
           "nanquantile", "nanpercentile"]


def _filled(a, value):
    """a with its NaNs replaced by value (a itself for types without NaN)."""
    if a.dtype.kind not in "fc":
        return a
    return _cukit.where(_cukit.isnan(a), _cukit.full((), value, a.dtype), a)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False):
    """numpy.nanprod: the product with NaNs taken as 1."""
    return _cukit.prod(_filled(_arr(a, "nanprod"), 1), axis=axis, dtype=dtype, out=out,
                       keepdims=keepdims)


def nancumsum(a, axis=None, dtype=None, out=None):
    """numpy.nancumsum: the running sum with NaNs taken as 0."""
    return _cukit.cumsum(_filled(_arr(a, "nancumsum"), 0), axis=axis, dtype=dtype, out=out)


def nancumprod(a, axis=None, dtype=None, out=None):
    """numpy.nancumprod: the running product with NaNs taken as 1."""
    return _cukit.cumprod(_filled(_arr(a, "nancumprod"), 1), axis=axis, dtype=dtype,
                          out=out)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, mean=None,
           correction=None):
    """numpy.nanvar: the variance of the numbers that are not NaN (NaN, with numpy's
    warning, where fewer than ddof + 1 remain)."""
    a = _arr(a, "nanvar")
    if mean is not None:
        raise NotImplementedError("cukit.nanvar(mean=...) is not supported")
    if correction is not None:
        ddof = correction
    if a.dtype.kind not in "fc":
        return _cukit.var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)
    valid = _cukit.logical_not(_cukit.isnan(a))
    m = nanmean(a, axis=axis, dtype=dtype, keepdims=True)
    d = _filled(a - m, 0)
    sq = (d * _cukit.conjugate(d)).real if d.dtype.kind == "c" else d * d
    total = _cukit.sum(sq, axis=axis, keepdims=keepdims)
    count = _cukit.sum(valid, axis=axis, keepdims=keepdims)
    dof = count.astype(total.dtype) - ddof
    if bool(_cukit.any(dof <= 0)):
        _warnings.warn("Degrees of freedom <= 0 for slice.", RuntimeWarning, stacklevel=2)
    res = _cukit.where(dof > 0, total / _cukit.maximum(dof, 1),
                       _cukit.full((), _np.nan, total.dtype))
    return _to_out(res, out)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, mean=None,
           correction=None):
    """numpy.nanstd: the square root of nanvar."""
    res = _cukit.sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                             mean=mean, correction=correction))
    return _to_out(res, out)


def _nanquantiles(a, q, axis, method, keepdims, who, scale, weights=None):
    a = _arr(a, who)
    qh, weak = _check_q(a, q, method, weights, who, scale)
    if a.dtype.kind != "f":  # no NaN to leave out: numpy's quantile
        return (percentile if scale == 100 else quantile)(
            a, q, axis=axis, method=method, keepdims=keepdims, weights=weights)

    def valid(x):
        return _cukit.logical_not(_cukit.isnan(x))

    if weights is not None:                          # NaNs last, their weights zero
        s, cdf = _weighted_cdf(a, weights, axis, qh, who, valid)
    else:
        s = _sorted_along(a, axis, who)              # NaNs last in each row
    n = s.shape[-1]
    count = _cukit.sum(valid(s), axis=-1, keepdims=True)
    empty = count == 0  # rows of no numbers; whether the first is one (one read)
    some, first = _cukit.stack([_cukit.any(empty), empty.reshape(-1)[0]]).get().tolist() \
        if count.size else (False, False)
    if n == 0 or some:
        _warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
    # numpy goes row by row over more than one row of an axis, its result taking the
    # first row's type: a's own where that row has no numbers
    to_a = first and axis is not None and s.ndim > 1
    last = _cukit.maximum(count - 1, 0)
    # numpy's plan for each count of numbers a row can hold, 0..n (as numpy's Python int
    # count acts on q's type), gathered by each row's count
    c = _np.arange(n + 1)
    wt = _np.result_type(qh.dtype, 0)
    cn, cn1 = c.astype(wt), (c - 1).astype(wt)
    outs = []
    for qk in qh.reshape(-1):
        qk = _np.asarray(qk)
        if weights is not None:
            r = _weighted_pick(s, cdf, qk, last)[..., None]
        else:
            i, j, t, omt = _plan(method, cn, cn1, qk, weak)

            def by_count(table):  # the table's entry for each row's count
                return _cukit.to_device(_np.ascontiguousarray(table),
                                        device=s.device).take(count)

            def rows(table):  # -1: a row's last number
                table = _np.clip(_np.where(table < 0, c - 1, table), 0, max(n - 1, 0))
                return by_count(table.astype(_np.int64))

            if j is None:
                r = _take_along_axis(s, rows(i), axis=-1)
            else:
                ft = _lerp_type(a.dtype, t, weak).type
                r = _lerp(_take_along_axis(s, rows(i), axis=-1),
                          _take_along_axis(s, rows(j), axis=-1), by_count(t), by_count(omt),
                          ft)
        r = _cukit.where(empty, _cukit.full((), _np.nan, r.dtype), r)[..., 0]
        outs.append(r.astype(a.dtype) if to_a and r.dtype != a.dtype else r)
    return _quantiles_result(outs, qh, s, a, axis, keepdims)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
    """numpy.nanquantile: quantile of the numbers that are not NaN, row by row: numpy's
    plan for every count a row can hold, gathered by each row's count."""
    return _to_out(_nanquantiles(a, q, axis, method, keepdims, "nanquantile", 1, weights),
                   out)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
    """numpy.nanpercentile: nanquantile(a, q / 100)."""
    return _to_out(_nanquantiles(a, q, axis, method, keepdims, "nanpercentile", 100,
                                 weights), out)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """numpy.nanmedian: the median of the numbers that are not NaN, row by row."""
    a = _arr(a, "nanmedian")
    if a.dtype.kind not in "fc":
        return _cukit.median(a, axis=axis, out=out, keepdims=keepdims)
    return _to_out(_nanquantiles(a, 0.5, axis, "linear", keepdims,
                                 "nanmedian", 1), out)
