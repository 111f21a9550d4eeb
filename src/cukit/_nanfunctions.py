"""numpy's NaN-ignoring statistics beyond nansum/nanmax/nanmin/nanmean: nanvar, nanstd,
nanprod, nancumsum, nancumprod, nanmedian, nanquantile, nanpercentile. NaNs are replaced
by the operation's identity, or counted out; the quantiles sort each row (NaNs sort
last) and read each row's own positions from its count of numbers."""
import warnings as _warnings

import numpy as _np

from . import _cukit
from ._indexing import take_along_axis as _take_along_axis
from ._shape import _arr
from ._stats import _quantiles_result, _sorted_along, _to_out, nanmean, percentile, quantile

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


_NAN_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _nanquantiles(a, q, axis, method, keepdims, who, scale):
    a = _arr(a, who)
    if method not in _NAN_METHODS:
        raise NotImplementedError(f"cukit.{who}: method {method!r} is not supported; the "
                                  f"methods are {_NAN_METHODS}")
    qh = _np.asarray(q.get() if isinstance(q, _cukit.Array) else q, dtype=_np.float64) / scale
    if not _np.all((qh >= 0) & (qh <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]" if scale == 100
                         else "Quantiles must be in the range [0, 1]")
    if a.dtype.kind != "f":  # no NaN to leave out: numpy's quantile
        return (percentile if scale == 100 else quantile)(a, q, axis=axis, method=method,
                                                           keepdims=keepdims)
    # as quantile: a's type, widened by q unless q is a Python number
    weak = isinstance(q, (int, float)) and not isinstance(q, _np.generic)
    ft = a.dtype.type if weak else _np.result_type(a.dtype, _np.float64).type
    s = _sorted_along(a, axis, who)                  # NaNs last in each row
    n = s.shape[-1]
    count = _cukit.sum(_cukit.logical_not(_cukit.isnan(s)), axis=-1, keepdims=True)
    if n == 0 or bool(_cukit.any(count == 0)):
        _warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
    last = _cukit.maximum(count - 1, 0)
    outs = []
    for qi in qh.ravel():
        vi = last.astype(_np.float64) * qi           # each row's own virtual index
        lo = _cukit.floor(vi).astype(_np.int64)
        hi = _cukit.minimum(lo + 1, last)
        if method == "lower":
            r = _take_along_axis(s, lo, axis=-1)
        elif method == "higher":
            r = _take_along_axis(s, _cukit.ceil(vi).astype(_np.int64), axis=-1)
        elif method == "nearest":
            r = _take_along_axis(s, _cukit.rint(vi).astype(_np.int64), axis=-1)
        else:
            x0 = _take_along_axis(s, lo, axis=-1)
            x1 = _take_along_axis(s, hi, axis=-1)
            if method == "midpoint":
                t = _cukit.where(vi == _cukit.floor(vi), 0.0, 0.5)
            else:
                t = vi - _cukit.floor(vi)                # float64, as numpy's gamma
            d = x1 - x0                                  # in a's own type, as numpy's
            if d.dtype != _np.dtype(ft):
                x0, x1, d = x0.astype(ft), x1.astype(ft), d.astype(ft)
            r = _cukit.where(t >= 0.5, x1 - d * (1.0 - t).astype(ft), x0 + d * t.astype(ft))
        r = _cukit.where(count == 0, _cukit.full((), _np.nan, r.dtype), r)[..., 0]
        outs.append(r)
    return _quantiles_result(outs, qh, s, a, axis, keepdims)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False):
    """numpy.nanquantile: quantile of the numbers that are not NaN, row by row."""
    return _to_out(_nanquantiles(a, q, axis, method, keepdims, "nanquantile", 1), out)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False):
    """numpy.nanpercentile: nanquantile(a, q / 100)."""
    return _to_out(_nanquantiles(a, q, axis, method, keepdims, "nanpercentile", 100), out)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """numpy.nanmedian: the median of the numbers that are not NaN, row by row."""
    a = _arr(a, "nanmedian")
    if a.dtype.kind not in "fc":
        return _cukit.median(a, axis=axis, out=out, keepdims=keepdims)
    return _to_out(_nanquantiles(a, 0.5, axis, "linear", keepdims,
                                 "nanmedian", 1), out)
