"""numpy's array manipulation and index routines not in _shape.py: append, insert,
delete, resize, rot90, rollaxis, require, the array API's names (concat, permute_dims,
matrix_transpose, unstack), ix_, r_ and c_, fill_diagonal, diag_indices, select, and
the memory-overlap questions. Composed of cukit's views, copies and kernels; host work
is limited to shapes and index lists."""
import numpy as _np

from . import _cukit
from ._creation import asarray as _asarray
from ._shape import _arr, _axis, moveaxis

__all__ = [
    "append", "insert", "delete", "resize", "rot90", "rollaxis", "require", "concat",
    "permute_dims", "matrix_transpose", "unstack", "ix_", "r_", "c_", "fill_diagonal",
    "diag_indices", "diag_indices_from", "select", "shares_memory", "may_share_memory",
]

_Array = _cukit.Array


def _dev(x, who, dtype=None):
    """x as a cukit array: host data copied over (these functions take both, as numpy's
    take lists)."""
    if isinstance(x, _Array):
        return x if dtype is None or x.dtype == dtype else x.astype(dtype)
    return _asarray(_np.asarray(x, dtype=dtype))


def append(arr, values, axis=None):
    """numpy.append: a copy of arr with values added at the end (flattened when axis is
    None)."""
    arr = _dev(arr, "append")
    values = _dev(values, "append")
    if axis is None:
        return _cukit.concatenate([arr.ravel(), values.ravel()])
    return _cukit.concatenate([arr, values], axis=axis)


def _positions(obj, n, who):
    """obj (an int, slice or sequence of ints) as a sorted host array of positions in
    range(n), numpy's IndexError for one out of range."""
    if isinstance(obj, slice):
        return _np.arange(n)[obj]
    h = _np.asarray(obj.get() if isinstance(obj, _Array) else obj)
    if h.dtype == bool:
        if h.shape != (n,):
            raise ValueError(f"boolean array argument obj to {who} must be one dimensional "
                             f"and match the axis length of {n}")
        return _np.flatnonzero(h)
    if h.size and h.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    h = h.astype(_np.int64)
    bad = (h < -n) | (h >= n)
    if bad.any():
        raise IndexError(f"index {int(h[bad][0])} is out of bounds for axis 0 with size {n}")
    return h % n if n else h


def delete(arr, obj, axis=None):
    """numpy.delete: a copy of arr without the entries obj (int, slice, sequence or
    mask) along axis (flattened when None)."""
    arr = _arr(arr, "delete")
    if axis is None:
        arr, axis = arr.ravel(), 0
    axis = _axis(axis, arr.ndim)
    n = arr.shape[axis]
    gone = _positions(obj, n, "delete")
    keep = _np.setdiff1d(_np.arange(n), gone)
    return _cukit.take(arr, _asarray(keep), axis=axis)


def insert(arr, obj, values, axis=None):
    """numpy.insert: a copy of arr with values placed before the positions obj (an int,
    slice or sequence) along axis (flattened when None), with numpy's rules for how
    values are shaped."""
    arr = _arr(arr, "insert")
    if axis is None:
        arr, axis = arr.ravel(), 0
    axis = _axis(axis, arr.ndim)
    n = arr.shape[axis]
    if isinstance(obj, slice):
        idx = _np.arange(*obj.indices(n))
    else:
        idx = _np.asarray(obj.get() if isinstance(obj, _Array) else obj)
        if idx.size and idx.dtype.kind not in "iu":
            raise IndexError("index array argument obj to insert must be one dimensional "
                             "or scalar, of integer type")
        idx = idx.astype(_np.int64)
    bad = (idx < -n) | (idx > n)
    if bad.any():
        raise IndexError(f"index {int(idx[bad].ravel()[0])} is out of bounds for axis "
                         f"{axis} with size {n}")
    idx = _np.where(idx < 0, idx + n, idx)
    vals = _dev(values, "insert", arr.dtype)
    if idx.size == 1:  # numpy: values as one block of at least arr's ndim
        if vals.ndim < arr.ndim:
            vals = vals.reshape((1,) * (arr.ndim - vals.ndim) + tuple(vals.shape))
        if idx.ndim == 0:
            vals = moveaxis(vals, 0, axis)
        numnew = vals.shape[axis]
        new = _np.arange(int(idx.ravel()[0]), int(idx.ravel()[0]) + numnew)
    else:
        numnew = idx.size
        new = idx.copy()
        new[_np.argsort(idx, kind="stable")] += _np.arange(numnew)
    shape = list(arr.shape)
    shape[axis] = numnew
    block = moveaxis(_cukit.broadcast_to(vals, tuple(shape)), axis, 0)
    old = _np.ones(n + numnew, bool)
    old[new] = False
    out = _cukit.empty((n + numnew,) + tuple(moveaxis(arr, axis, 0).shape[1:]),
                       dtype=arr.dtype)
    if n:
        out[_asarray(_np.flatnonzero(old))] = moveaxis(arr, axis, 0)
    if numnew:
        out[_asarray(new)] = block
    return moveaxis(out, 0, axis)


def resize(a, new_shape):
    """numpy.resize: a new array of new_shape filled with a's elements repeated in
    order (numpy's function, not the in-place method)."""
    a = _arr(a, "resize")
    new_shape = (new_shape,) if isinstance(new_shape, (int, _np.integer)) else \
        tuple(int(s) for s in new_shape)
    if any(s < 0 for s in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    total = int(_np.prod(new_shape, dtype=_np.int64))
    flat = a.ravel()
    if total == 0 or flat.size == 0:
        return _cukit.zeros(new_shape, dtype=a.dtype)
    reps = -(-total // flat.size)
    return _cukit.concatenate([flat] * reps)[:total].reshape(new_shape)


def rot90(m, k=1, axes=(0, 1)):
    """numpy.rot90: m rotated by 90 degrees k times in the plane of axes (a view, as
    numpy's)."""
    m = _arr(m, "rot90")
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError("Axes must be different.")
    if not (-m.ndim <= axes[0] < m.ndim and -m.ndim <= axes[1] < m.ndim):
        raise ValueError(f"Axes={axes} out of range for array of ndim={m.ndim}.")
    k %= 4
    a0, a1 = axes

    def flip(x, ax):
        key = [slice(None)] * x.ndim
        key[ax] = slice(None, None, -1)
        return x[tuple(key)]
    if k == 0:
        return m[...]
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return flip(m, a1).transpose(perm)
    return flip(m.transpose(perm), a1)


def rollaxis(a, axis, start=0):
    """numpy.rollaxis: axis moved to before start (a view)."""
    a = _arr(a, "rollaxis")
    n = a.ndim
    axis = _axis(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise _np.exceptions.AxisError(f"start arg requires {-n} <= start < {n + 1}, but "
                                       f"{start} was passed in")
    if axis < start:
        start -= 1
    if axis == start:
        return a[...]
    return moveaxis(a, axis, start)


def require(a, dtype=None, requirements=None):
    """numpy.require: a (or a copy) with dtype and the flags asked for: 'C', 'F', 'W',
    'O', 'E' ('A' is accepted; cukit arrays are always aligned)."""
    a = _dev(a, "require", dtype)
    req = set()
    for r in (requirements or ()):
        r = r.upper()
        req.add({"C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F_CONTIGUOUS": "F",
                 "FORTRAN": "F", "WRITEABLE": "W", "OWNDATA": "O", "ENSUREARRAY": "E",
                 "ALIGNED": "A"}.get(r, r))
    if "C" in req and "F" in req:
        raise ValueError("Cannot specify both C and Fortran contiguous.")
    if "C" in req and not a.flags["C_CONTIGUOUS"]:
        a = a.copy()
    elif "F" in req and not a.flags["F_CONTIGUOUS"]:
        a = _cukit.copy(a, order="F")
    elif "O" in req:
        a = a.copy()
    return a


def concat(arrays, /, *, axis=0):
    """The array API's concat: concatenate, flattening each when axis is None."""
    if axis is None:
        return _cukit.concatenate([_arr(x, "concat").ravel() for x in arrays])
    return _cukit.concatenate(list(arrays), axis=axis)


def permute_dims(a, /, axes):
    """The array API's permute_dims: transpose(a, axes), a view."""
    return _arr(a, "permute_dims").transpose(tuple(axes))


def matrix_transpose(x, /):
    """numpy.matrix_transpose: the last two axes swapped (a view)."""
    x = _arr(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {x.ndim}")
    return x.swapaxes(-1, -2)


def unstack(x, /, *, axis=0):
    """numpy.unstack: the views along axis, as a tuple."""
    x = _arr(x, "unstack")
    if x.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    x = moveaxis(x, axis, 0)
    return tuple(x[i] for i in range(x.shape[0]))


def ix_(*args):
    """numpy.ix_: an open mesh of index arrays (each 1-D, int or bool) for a[ix_(r, c)]."""
    out = []
    nd = len(args)
    for k, v in enumerate(args):
        v = _dev(v, "ix_")
        if v.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if v.dtype == bool:
            v = _cukit.nonzero(v)[0]
        elif v.dtype.kind not in "iu":
            if v.size == 0:
                v = v.astype(_np.intp)
            else:
                raise ValueError("index arrays must be of integer or boolean type")
        out.append(v.reshape((1,) * k + (v.size,) + (1,) * (nd - k - 1)))
    return tuple(out)


class _Concatenator:
    """numpy's r_ and c_: slices become ranges (a complex step a count, as linspace),
    scalars one element, arrays themselves; all joined along the first axis (r_) or
    as columns (c_). A leading string of numpy's directives is not taken."""

    def __init__(self, columns):
        self._columns = columns

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        parts = []
        for item in key:
            if isinstance(item, str):
                raise NotImplementedError(
                    f"cukit.{'c_' if self._columns else 'r_'}: the string directive {item!r} "
                    "is not supported; use cukit.concatenate or cukit.stack with axis=")
            if isinstance(item, slice):
                step = item.step
                start = 0 if item.start is None else item.start
                if isinstance(step, complex):
                    h = _np.linspace(start, item.stop, int(abs(step)))
                else:
                    h = _np.arange(start, item.stop, 1 if step is None else step)
                parts.append(_asarray(h))
            elif isinstance(item, _Array):
                parts.append(item if item.ndim else item.reshape(1))
            else:
                parts.append(_asarray(_np.atleast_1d(_np.asarray(item))))
        dt = _np.result_type(*[p.dtype for p in parts])
        parts = [p.astype(dt) if p.dtype != dt else p for p in parts]
        if self._columns:
            return _cukit.concatenate([p.reshape(-1, 1) if p.ndim == 1 else p
                                       for p in parts], axis=1)
        return _cukit.concatenate(parts, axis=0)

    def __len__(self):
        return 0


r_ = _Concatenator(False)
c_ = _Concatenator(True)


def fill_diagonal(a, val, wrap=False):
    """numpy.fill_diagonal: writes val (a scalar or values repeated in order) on a's main
    diagonal, in place."""
    a = _arr(a, "fill_diagonal")
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    if a.ndim == 2:
        rows, cols = a.shape
        step = cols + 1
        end = None if wrap else cols * cols
        flat_idx = _np.arange(a.size)[:end:step]
    else:
        step = 1 + sum(a.shape[0] ** k for k in range(1, a.ndim))
        flat_idx = _np.arange(a.size)[::step]
    n = flat_idx.size
    idx = _np.unravel_index(flat_idx, a.shape)
    if isinstance(val, _Array):
        v = val.ravel()
        if v.size == 0:
            return
        if v.size < n:
            v = resize(v, (n,))
        v = v[:n]
    else:
        hv = _np.asarray(val).ravel()
        if hv.size == 0:
            return
        v = _asarray(_np.resize(hv, n).astype(a.dtype)) if hv.size > 1 else hv[0]
    a[tuple(_asarray(i) for i in idx)] = v


def diag_indices(n, ndim=2):
    """numpy.diag_indices: ndim copies of arange(n), for a[diag_indices(n)]."""
    idx = _cukit.arange(n, dtype=_np.int64)
    return (idx,) * ndim


def diag_indices_from(arr):
    """numpy.diag_indices_from: diag_indices of an array whose sides are equal."""
    arr = _arr(arr, "diag_indices_from")
    if arr.ndim < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(arr.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(arr.shape[0], arr.ndim)


def select(condlist, choicelist, default=0):
    """numpy.select: from the first true condition's choice, element by element (a
    where per condition, from the last)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    choices = [c if isinstance(c, _Array) else _np.asarray(c) for c in choicelist]
    dt = _np.result_type(*[c.dtype for c in choices], _np.asarray(default).dtype if
                         not isinstance(default, (int, float, complex, bool)) else default)
    for c in condlist:
        if not isinstance(c, _Array) or c.dtype != bool:
            raise TypeError("invalid entry in condlist: should be boolean ndarray "
                            "(a cukit bool array)")
    out = _cukit.asarray(default, dtype=dt) if not isinstance(default, _Array) else \
        default.astype(dt)
    for cond, choice in zip(reversed(condlist), reversed(choices)):
        ch = _dev(choice, "select", dt)
        out = _cukit.where(cond, ch, out)
    shape = _np.broadcast_shapes(*[tuple(c.shape) for c in condlist],
                                 *[tuple(c.shape) for c in choices])
    return _cukit.broadcast_to(out, shape).copy() if tuple(out.shape) != shape else out


def _extent(a):
    """The bytes a's elements can touch: [lowest, highest) addresses."""
    base = a.__cuda_array_interface__["data"][0]
    lo = hi = base
    for n, s in zip(a.shape, a.strides):
        if n == 0:
            return base, base
        (lo, hi) = (lo + (n - 1) * s, hi) if s < 0 else (lo, hi + (n - 1) * s)
    return lo, hi + a.itemsize


def may_share_memory(a, b, /, max_work=None):
    """numpy.may_share_memory: whether the memory extents of a and b overlap."""
    if not isinstance(a, _Array) or not isinstance(b, _Array):
        return False
    if a.size == 0 or b.size == 0:
        return False
    (alo, ahi), (blo, bhi) = _extent(a), _extent(b)
    return alo < bhi and blo < ahi


def shares_memory(a, b, /, max_work=None):
    """numpy.shares_memory: whether a and b have a byte in common, exactly: where the
    extents overlap and neither is contiguous, each element's bytes are compared on the
    host (the addresses, not the data)."""
    if not may_share_memory(a, b):
        return False
    if a.flags["C_CONTIGUOUS"] or b.flags["C_CONTIGUOUS"] or \
            a.flags["F_CONTIGUOUS"] or b.flags["F_CONTIGUOUS"]:
        return True

    def starts(x):
        base = x.__cuda_array_interface__["data"][0]
        idx = _np.indices(tuple(x.shape)).reshape(x.ndim, -1)
        return _np.sort(base + (idx * _np.array(x.strides).reshape(-1, 1)).sum(0))
    sa, sb = starts(a), starts(b)
    # an element of a [s, s + itemsize) meets one of b [t, t + itemsize_b) when the
    # first b start at or after s - itemsize_b + 1 is below s + itemsize
    k = _np.searchsorted(sb, sa - b.itemsize + 1)
    ok = k < sb.size
    return bool((sb[_np.minimum(k, sb.size - 1)][ok] < sa[ok] + a.itemsize).any())
