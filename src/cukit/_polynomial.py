"""numpy's polynomial functions on coefficient arrays (highest power first): sums,
products (cukit.convolve), division, derivatives, integrals, poly (from roots), polyfit
(least squares through cukit.linalg.lstsq) and roots. Coefficients stay on the device;
roots, and poly of a matrix, take eigenvalues on the host (cukit has no general
eigensolver) and say so."""
import warnings as _warnings

import numpy as _np

from . import _cukit
from ._creation import asarray as _asarray
from ._matmul import outer as _outer

__all__ = ["poly", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint",
           "polyfit", "roots"]

_Array = _cukit.Array


def _vec(p):
    """The coefficients as a 1-D cukit array (host data is copied over)."""
    p = p if isinstance(p, _Array) else _asarray(_np.asarray(p))
    return p.reshape(1) if p.ndim == 0 else p


def _padded(a1, a2):
    a1, a2 = _vec(a1), _vec(a2)
    d = a2.shape[0] - a1.shape[0]
    if d > 0:
        a1 = _cukit.concatenate([_cukit.zeros(d, dtype=a1.dtype), a1])
    elif d < 0:
        a2 = _cukit.concatenate([_cukit.zeros(-d, dtype=a2.dtype), a2])
    return a1, a2


def polyadd(a1, a2):
    """numpy.polyadd: the sum of two polynomials."""
    a1, a2 = _padded(a1, a2)
    return a1 + a2


def polysub(a1, a2):
    """numpy.polysub: the difference a1 - a2 of two polynomials."""
    a1, a2 = _padded(a1, a2)
    return a1 - a2


def polymul(a1, a2):
    """numpy.polymul: the product of two polynomials (cukit.convolve)."""
    return _cukit_convolve(_vec(a1), _vec(a2))


def _cukit_convolve(a, v):
    from ._numeric import convolve
    return convolve(a, v)


def polydiv(u, v):
    """numpy.polydiv: (quotient, remainder) by numpy's long division, one step per
    quotient term on the device; the remainder's leading near-zero terms are trimmed
    as numpy does (one read of the remainder)."""
    u, v = _vec(u), _vec(v)
    w = _np.result_type(u.dtype, v.dtype, _np.float64 if u.dtype.kind in "biu" else
                        u.dtype, 0.0)
    u, v = u.astype(w), v.astype(w)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / v[0]
    q = _cukit.zeros(max(m - n + 1, 1), dtype=w)
    r = u.copy()
    for k in range(0, m - n + 1):
        d = scale * r[k]
        q[k] = d
        r[k:k + n + 1] -= d * v
    host = r.get()
    skip = 0
    while skip < host.shape[0] - 1 and _np.allclose(host[skip], 0, rtol=1e-14):
        skip += 1
    return q, r[skip:]


def polyder(p, m=1):
    """numpy.polyder: the m-th derivative."""
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    p = _vec(p)
    for _ in range(m):
        n = p.shape[0] - 1
        p = p[:-1] * _cukit.arange(n, 0, -1, dtype=_np.int64 if p.dtype.kind in "biu"
                                   else p.dtype)
    return p


def polyint(p, m=1, k=None):
    """numpy.polyint: the m-th antiderivative, with integration constants k (the
    first one for the first integration)."""
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    if k is None:
        k = _np.zeros(m, float)
    k = _np.atleast_1d(k.get() if isinstance(k, _Array) else k)
    if len(k) == 1 and m > 1:
        k = k[0] * _np.ones(m, float)
    if len(k) < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    p = _vec(p)
    for j in range(m):
        dt = _np.result_type(p.dtype, _np.float64 if p.dtype.kind in "biu" else p.dtype,
                             k.dtype)
        n = p.shape[0]
        p = _cukit.concatenate([(p / _cukit.arange(n, 0, -1, dtype=_np.float64)).astype(dt),
                                _cukit.full(1, k[j], dtype=dt)])
    return p


def poly(seq_of_zeros):
    """numpy.poly: the coefficients of the monic polynomial with these roots (one
    convolution per root); for a square matrix, of its characteristic polynomial, with
    the eigenvalues taken on the host."""
    z = seq_of_zeros if isinstance(seq_of_zeros, _Array) else \
        _asarray(_np.asarray(seq_of_zeros))
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] != 0:
        z = _asarray(_np.linalg.eigvals(z.get()))
    elif z.ndim == 1:
        pass
    elif z.ndim == 0 or z.ndim == 2 and 0 in z.shape and z.shape[0] == z.shape[1]:
        z = z.reshape(-1)
    else:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if z.shape[0] == 0:
        return 1.0
    dt = _np.result_type(z.dtype, _np.float64 if z.dtype.kind in "biu" else z.dtype)
    a = _cukit.ones(1, dtype=dt)
    for i in range(z.shape[0]):
        a = _cukit_convolve(a, _cukit.concatenate([_cukit.ones(1, dtype=dt),
                                                   -z[i:i + 1].astype(dt)]))
    if dt.kind == "c":
        r = z.astype(_np.complex128)
        if bool((_sort_c(r) == _sort_c(_cukit.conj(r))).all()):
            a = a.real.copy()
    return a


def _sort_c(z):
    from ._extra import sort_complex
    return sort_complex(z)


def roots(p):
    """numpy.roots: the roots of the polynomial with coefficients p, as numpy computes
    them (the eigenvalues of the companion matrix). Computed on the host, by numpy:
    the coefficients are read back and the roots copied over."""
    host = p.get() if isinstance(p, _Array) else _np.asarray(p)
    return _asarray(_np.asarray(_np.roots(host)))


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """numpy.polyfit: the least-squares polynomial fit of degree deg, through
    cukit.linalg.lstsq on the scaled Vandermonde matrix as numpy does; full= and cov=
    as numpy's."""
    from . import linalg
    from ._creation import vander
    order = int(deg) + 1
    x = x if isinstance(x, _Array) else _asarray(_np.asarray(x))
    y = y if isinstance(y, _Array) else _asarray(_np.asarray(y))
    x = x.astype(_np.result_type(x.dtype, 0.0)) if x.dtype.kind in "biu" else x
    y = y.astype(_np.result_type(y.dtype, 0.0)) if y.dtype.kind in "biu" else y
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.size == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = x.shape[0] * _np.finfo(x.dtype).eps
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        w = w if isinstance(w, _Array) else _asarray(_np.asarray(w))
        w = w.astype(_np.result_type(w.dtype, 0.0))
        if w.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if w.shape[0] != y.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w[:, None]
        rhs = rhs * (w if rhs.ndim == 1 else w[:, None])
    scale = _cukit.sqrt((lhs * lhs).sum(axis=0))
    lhs = lhs / scale
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if rank != order and not full:
        _warnings.warn("Polyfit may be poorly conditioned", _np.exceptions.RankWarning,
                       stacklevel=2)
    if full:
        return c, resids, rank, s, rcond
    if cov:
        vbase = linalg.inv(lhs.T @ lhs)
        vbase = vbase / _outer(scale, scale)
        if cov == "unscaled":
            fac = 1
        else:
            if x.shape[0] <= order:
                raise ValueError("the number of data points must exceed order to scale "
                                 "the covariance matrix")
            fac = resids / (x.shape[0] - order)
        if y.ndim == 1:
            return c, vbase * fac
        return c, vbase[:, :, None] * fac
    return c
