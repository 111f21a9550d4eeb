"""numpy's set routines beyond unique and isin: intersect1d, union1d, setdiff1d and
setxor1d, each on cukit's sort and a mask read (the result's size is read back, as for
any mask)."""
import numpy as _np

from . import _cukit
from ._creation import asarray as _asarray
from ._numeric import isin

__all__ = ["intersect1d", "union1d", "setdiff1d", "setxor1d"]

_Array = _cukit.Array


def _flat(x):
    return (x if isinstance(x, _Array) else _asarray(_np.asarray(x))).ravel()


def _common(a, b):
    dt = _np.result_type(a.dtype, b.dtype)
    return a.astype(dt), b.astype(dt)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """numpy.intersect1d: the sorted unique values in both."""
    if return_indices:
        raise NotImplementedError("cukit.intersect1d(return_indices=True) is not supported")
    a, b = _common(_flat(ar1), _flat(ar2))
    if not assume_unique:
        a, b = _cukit.unique(a), _cukit.unique(b)
    aux = _cukit.sort(_cukit.concatenate([a, b]))
    if aux.size < 2:
        return aux[:0]
    return aux[:-1][aux[1:] == aux[:-1]]


def union1d(ar1, ar2):
    """numpy.union1d: the sorted unique values in either."""
    a, b = _common(_flat(ar1), _flat(ar2))
    return _cukit.unique(_cukit.concatenate([a, b]))


def setdiff1d(ar1, ar2, assume_unique=False):
    """numpy.setdiff1d: the sorted unique values of ar1 not in ar2 (ar1 as given, when
    assume_unique)."""
    a = _flat(ar1)
    if not assume_unique:
        a = _cukit.unique(a)
    return a[isin(a, _flat(ar2), invert=True)]


def setxor1d(ar1, ar2, assume_unique=False):
    """numpy.setxor1d: the sorted unique values in exactly one of the two."""
    a, b = _common(_flat(ar1), _flat(ar2))
    if not assume_unique:
        a, b = _cukit.unique(a), _cukit.unique(b)
    aux = _cukit.sort(_cukit.concatenate([a, b]))
    if aux.size == 0:
        return aux
    edge = _cukit.ones(1, dtype=bool)
    flag = _cukit.concatenate([edge, aux[1:] != aux[:-1], edge])
    return aux[flag[1:] & flag[:-1]]
