"""numpy's indexing functions that are compositions of cukit's own: argwhere,
take_along_axis, put_along_axis, extract and place. Each builds an index and hands it
to the Array's advanced indexing (csrc/compute/index/), which does the work on the
device in one gather or scatter."""
import numpy as np

from . import _cukit
from ._cukit import Array, flatnonzero, zeros

__all__ = ["argwhere", "take_along_axis", "put_along_axis", "extract", "place"]


def _array(a, who):
    if not isinstance(a, Array):
        raise TypeError(f"{who} takes a cukit array, not {type(a).__name__}: move host data "
                        "to the device with cukit.asarray()")
    return a


def argwhere(a):
    """argwhere(a) -> Array of shape (N, a.ndim): the indices of a's nonzero elements,
    one row each (numpy.argwhere)."""
    a = _array(a, "argwhere")
    if a.ndim == 0:
        return zeros((1 if bool(a) else 0, 0), np.int64)
    return _cukit._argwhere(a)


def _along_axis_args(arr, indices, axis, who):
    """(array, indices, axis) for _along_axis, or the flat form when axis is None."""
    arr = _array(arr, who)
    if axis is None:
        if indices.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        flat = arr if arr.flags["C_CONTIGUOUS"] else arr.copy()
        return flat.reshape(-1), indices, 0
    if not isinstance(indices, Array):
        indices = np.asarray(indices)
    if indices.ndim != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    if indices.dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    return arr, indices, _normalize_axis(axis, arr.ndim)


def _normalize_axis(axis, ndim):
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def take_along_axis(arr, indices, axis):
    """take_along_axis(arr, indices, axis) -> Array: numpy.take_along_axis, picking
    values from arr along axis at the 1-D slices of indices (as argsort gives them)."""
    return _cukit._along_axis(*_along_axis_args(arr, indices, axis, "take_along_axis"))


def put_along_axis(arr, indices, values, axis):
    """put_along_axis(arr, indices, values, axis): numpy.put_along_axis, in place."""
    target, indices, axis = _along_axis_args(arr, indices, axis, "put_along_axis")
    _cukit._along_axis(target, indices, axis, values)


def extract(condition, arr):
    """extract(condition, arr) -> Array: the elements of arr.ravel() where
    condition.ravel() is nonzero (numpy.extract)."""
    arr = _array(arr, "extract")
    return arr.take(flatnonzero(condition) if isinstance(condition, Array)
                    else np.flatnonzero(condition))


def place(arr, mask, vals):
    """place(arr, mask, vals): arr's elements where mask is true take vals in order,
    repeated when vals is shorter (numpy.place), in place."""
    arr = _array(arr, "place")
    idx = flatnonzero(mask) if isinstance(mask, Array) else np.flatnonzero(np.asarray(mask))
    n = idx.size
    if n == 0:
        return
    if isinstance(vals, Array):
        size = vals.size
    else:
        vals = np.asarray(vals, dtype=arr.dtype).ravel()
        size = vals.size
    if size == 0:
        raise ValueError("Cannot insert from an empty array!")
    arr.put(idx, vals)
