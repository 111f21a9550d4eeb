"""numpy's shape and layout functions on device arrays, composed of the Array's C views
(indexing, reshape, transpose, the shape methods of csrc/array/shape.c, broadcast_to) and
its C copies (copy, concatenate): a view wherever numpy returns one, else a copy; pad's
statistic and ramp modes add cukit's reductions and elementwise arithmetic. No element
passes through Python."""
import operator
import warnings as _warnings

import numpy as _np

from . import _cukit

__all__ = [
    "reshape", "ravel", "transpose", "swapaxes", "squeeze", "expand_dims", "moveaxis",
    "diagonal", "repeat", "tile", "pad", "roll", "flip", "fliplr", "flipud",
    "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "dstack", "column_stack",
    "split", "array_split", "hsplit", "vsplit", "dsplit", "asfortranarray",
    "broadcast_arrays", "broadcast_shapes", "shape", "ndim", "size", "copyto",
]

broadcast_shapes = _np.broadcast_shapes
_Array = _cukit.Array


def _arr(a, who):
    if not isinstance(a, _Array):
        raise TypeError(f"cukit.{who}() takes a cukit.Array, not {type(a).__name__} (copy "
                        f"host data with cukit.asarray first)")
    return a


def _axis(axis, ndim):
    """numpy's normalize_axis_index: AxisError (a ValueError and IndexError)."""
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise _np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def _axes(axis, ndim):
    if isinstance(axis, (list, tuple)):
        out = [_axis(a, ndim) for a in axis]
    else:
        out = [_axis(axis, ndim)]
    if len(set(out)) != len(out):
        raise ValueError("repeated axis")
    return out


def _along(ndim, axis, key):
    """The index tuple that applies `key` along `axis` and takes the rest whole."""
    return (slice(None),) * axis + (key,)


def shape(a):
    """numpy.shape."""
    return tuple(a.shape) if isinstance(a, _Array) else _np.shape(a)


def ndim(a):
    """numpy.ndim."""
    return a.ndim if isinstance(a, _Array) else _np.ndim(a)


def size(a, axis=None):
    """numpy.size."""
    if not isinstance(a, _Array):
        return _np.size(a, axis)
    return a.size if axis is None else a.shape[_axis(axis, a.ndim)]


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """numpy.reshape: a view when the layout allows one, else (copy=None) a copy."""
    _arr(a, "reshape")
    if shape is None:
        shape = newshape
    if shape is None:
        raise TypeError("reshape() missing the required argument 'shape'")
    if isinstance(shape, int) or hasattr(shape, "__index__"):
        shape = (operator.index(shape),)
    shape = tuple(shape)
    if order not in ("C", "F", "A"):
        raise ValueError(f"order must be one of 'C', 'F', 'A' (got {order!r})")
    fortran = order == "F" or (order == "A" and a.flags["F_CONTIGUOUS"]
                               and not a.flags["C_CONTIGUOUS"])
    src = a.T if fortran else a
    want = shape[::-1] if fortran else shape
    if copy:
        src = src.copy()
    try:
        out = src.reshape(want)
    except ValueError as e:
        if copy is False or "without copying" not in str(e):
            raise
        out = src.copy().reshape(want)
    return out.T if fortran else out


def ravel(a, order="C"):
    """numpy.ravel: a.ravel(order)."""
    return _arr(a, "ravel").ravel(order)


def transpose(a, axes=None):
    """numpy.transpose: a view with the dimensions permuted (reversed by default)."""
    _arr(a, "transpose")
    return a.transpose() if axes is None else a.transpose(tuple(axes))


def swapaxes(a, axis1, axis2):
    """numpy.swapaxes: a view."""
    return _arr(a, "swapaxes").swapaxes(axis1, axis2)


def squeeze(a, axis=None):
    """numpy.squeeze: a view."""
    return _arr(a, "squeeze").squeeze(axis)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """numpy.diagonal: a view (which may be written, unlike numpy's)."""
    return _arr(a, "diagonal").diagonal(offset, axis1, axis2)


def repeat(a, repeats, axis=None):
    """numpy.repeat: a copy."""
    return _arr(a, "repeat").repeat(repeats, axis)


def expand_dims(a, axis):
    """numpy.expand_dims: a view with length-1 dimensions inserted at `axis`."""
    _arr(a, "expand_dims")
    axes = axis if isinstance(axis, (list, tuple)) else (axis,)
    out_nd = a.ndim + len(axes)
    places = _axes(list(axes), out_nd)
    return a[tuple(None if d in places else slice(None) for d in range(out_nd))]


def moveaxis(a, source, destination):
    """numpy.moveaxis: a view with the axes in `source` moved to `destination`."""
    _arr(a, "moveaxis")
    src = _axes(source, a.ndim)
    dst = _axes(destination, a.ndim)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number "
                         "of elements")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return a.transpose(tuple(order))


def flip(m, axis=None):
    """numpy.flip: a view with the order of the elements along axis reversed."""
    _arr(m, "flip")
    axes = range(m.ndim) if axis is None else _axes(axis, m.ndim)
    key = [slice(None)] * m.ndim
    for ax in axes:
        key[ax] = slice(None, None, -1)
    return m[tuple(key)]


def fliplr(m):
    """numpy.fliplr: a view."""
    if _arr(m, "fliplr").ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return m[:, ::-1]


def flipud(m):
    """numpy.flipud: a view."""
    if _arr(m, "flipud").ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return m[::-1]


def _atleast(arys, n, who):
    out = []
    for a in arys:
        _arr(a, who)
        if a.ndim < n:
            if n == 3 and a.ndim == 2:
                a = a[:, :, None]
            elif n == 3 and a.ndim == 1:
                a = a[None, :, None]
            else:
                a = a.reshape((1,) * (n - a.ndim) + tuple(a.shape))
        out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*arys):
    """numpy.atleast_1d: views of at least one dimension."""
    return _atleast(arys, 1, "atleast_1d")


def atleast_2d(*arys):
    """numpy.atleast_2d: views of at least two dimensions."""
    return _atleast(arys, 2, "atleast_2d")


def atleast_3d(*arys):
    """numpy.atleast_3d: views of at least three dimensions (N -> 1xNx1, MxN -> MxNx1)."""
    return _atleast(arys, 3, "atleast_3d")


def _seq(tup, who):
    if isinstance(tup, _Array) or not hasattr(tup, "__iter__"):
        raise TypeError(f"cukit.{who}() takes a sequence of arrays")
    arrs = list(tup)
    if not arrs:
        raise ValueError("need at least one array to concatenate")
    return arrs


def _one(x):
    return [x] if isinstance(x, _Array) else list(x)


def hstack(tup, *, dtype=None):
    """numpy.hstack: concatenate along the second axis (the first for 1-D arrays)."""
    arrs = _one(atleast_1d(*_seq(tup, "hstack")))
    axis = 0 if arrs[0].ndim == 1 else 1
    return _cukit.concatenate(arrs, axis=axis, dtype=dtype)


def vstack(tup, *, dtype=None):
    """numpy.vstack: concatenate along the first axis, 1-D arrays as rows."""
    return _cukit.concatenate(_one(atleast_2d(*_seq(tup, "vstack"))), axis=0, dtype=dtype)


def dstack(tup):
    """numpy.dstack: concatenate along the third axis."""
    return _cukit.concatenate(_one(atleast_3d(*_seq(tup, "dstack"))), axis=2)


def column_stack(tup):
    """numpy.column_stack: 1-D arrays as columns, then hstack."""
    arrs = []
    for a in _seq(tup, "column_stack"):
        _arr(a, "column_stack")
        arrs.append(a.reshape(-1, 1) if a.ndim < 2 else a)
    return _cukit.concatenate(arrs, axis=1)


def tile(A, reps):
    """numpy.tile: A repeated reps times along each axis (one copy of a broadcast view)."""
    _arr(A, "tile")
    reps = (operator.index(reps),) if hasattr(reps, "__index__") else tuple(reps)
    d = max(len(reps), A.ndim)
    reps = (1,) * (d - len(reps)) + reps
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    a = A.reshape((1,) * (d - A.ndim) + tuple(A.shape)) if A.ndim < d else A
    # (1, s0, 1, s1, ...) broadcast to (r0, s0, r1, s1, ...), copied, then merged
    key = []
    for _ in range(d):
        key += [None, slice(None)]
    wide = a[tuple(key)]
    shape = []
    for r, s in zip(reps, a.shape):
        shape += [r, s]
    out = _cukit.broadcast_to(wide, tuple(shape)).copy()
    return out.reshape(tuple(r * s for r, s in zip(reps, a.shape)))


def _runs(idx):
    """Split the host index vector idx into (start, stop, step) slices of steps +1/-1."""
    runs, i, n = [], 0, len(idx)
    while i < n:
        j = i + 1
        step = 1
        if j < n and idx[j] - idx[i] in (1, -1):
            step = int(idx[j] - idx[i])
            while j < n and idx[j] - idx[j - 1] == step:
                j += 1
        runs.append((int(idx[i]), int(idx[j - 1]), step))
        i = j
    return runs


def _gather_axis(x, axis, idx):
    """x's slices along axis in the host order idx, as one concatenation of views."""
    pieces = []
    for lo, hi, step in _runs(idx):
        if step == 1:
            key = slice(lo, hi + 1)
        else:
            key = slice(lo, hi - 1 if hi > 0 else None, -1)
        pieces.append(x[_along(x.ndim, axis, key)])
    return pieces[0].copy() if len(pieces) == 1 else _cukit.concatenate(pieces, axis=axis)


_PAD_KWARGS = {"constant": ("constant_values",), "empty": (), "edge": (), "wrap": (),
               "reflect": ("reflect_type",), "symmetric": ("reflect_type",),
               "linear_ramp": ("end_values",), "maximum": ("stat_length",),
               "mean": ("stat_length",), "median": ("stat_length",),
               "minimum": ("stat_length",)}


def _pairs(x, ndim, as_index=False):
    """x broadcast to ndim (before, after) pairs as numpy's pad reads its arguments: one
    or two values stay numpy scalars (typed, where a Python number in a longer list is
    weak: it decides linear_ramp's arithmetic type); as_index rounds to integers and
    refuses negative ones."""
    if x is None:
        return [(None, None)] * ndim
    x = _np.array(x)
    if as_index:
        x = _np.round(x).astype(_np.intp, copy=False)
        if x.size and x.min() < 0:
            raise ValueError("index can't contain negative values")
    if x.ndim < 3 and x.size == 1:
        x = x.ravel()
        return [(x[0], x[0])] * ndim
    if x.ndim < 3 and x.size == 2 and x.shape != (2, 1):
        x = x.ravel()
        return [(x[0], x[1])] * ndim
    return _np.broadcast_to(x, (ndim, 2)).tolist()


def _pad_sides(x, axis, left, right):
    """x with left and right (pieces of x's other extents, or None) joined along axis."""
    parts = [p for p in (left, x, right) if p is not None and p.shape[axis]]
    return _cukit.concatenate(parts, axis=axis)


def _pad_stat(x, axis, widths, lengths, mode):
    """numpy's stat modes along one axis: each side filled with the maximum, minimum,
    mean or median of stat_length elements next to it (all of the axis by default),
    rounded half to even for integer arrays."""
    n = x.shape[axis]
    lens = [n if s is None or s > n else int(s) for s in lengths]
    if 0 in lens and (mode in ("maximum", "minimum") or x.dtype.kind in "iu"):
        raise ValueError("stat_length of 0 yields no value for padding")
    if not any(widths):
        return x
    from ._stats import median
    stat = {"maximum": _cukit.max, "minimum": _cukit.min, "mean": _cukit.mean,
            "median": median}[mode]
    stats, s = [], None
    for side, (w, k) in enumerate(zip(widths, lens)):
        if not w:
            stats.append(None)
            continue
        if side and s is not None and lens[0] == k == n:
            pass  # both sides take the whole axis: the left's statistic
        elif k == 0:  # numpy's NaN, with its warning (integer arrays have none: above)
            _warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=3)
            shape = list(x.shape)
            shape[axis] = 1
            s = _cukit.full(tuple(shape), _np.nan, _np.float64, x.device).astype(x.dtype)
        else:
            chunk = x[_along(x.ndim, axis, slice(0, k) if side == 0 else slice(n - k, n))]
            s = stat(chunk, axis=axis, keepdims=True)
            if x.dtype.kind in "iu":
                s = _cukit.round(s)
            if s.dtype != x.dtype:
                s = s.astype(x.dtype)
        shape = list(x.shape)
        shape[axis] = w
        stats.append(_cukit.broadcast_to(s, tuple(shape)))
    return _pad_sides(x, axis, *stats)


def _pad_ramp(x, axis, widths, ends):
    """numpy's linear_ramp along one axis: each side is numpy.linspace(end value, edge,
    width, endpoint=False) taken elementwise, in the type numpy's linspace computes in
    (its arithmetic, step by step, so the bits agree), floored for integer arrays."""
    n = x.shape[axis]
    ramps = []
    for side, (w, end) in enumerate(zip(widths, ends)):
        if not w:
            ramps.append(None)
            continue
        edge = x[_along(x.ndim, axis, slice(0, 1) if side == 0 else slice(n - 1, n))]
        dt = _np.result_type(end, edge.dtype, 0.0)  # linspace's: inexact, end maybe weak
        start, div = dt.type(end), dt.type(w)
        delta = edge.astype(dt) - start
        step = delta / div
        shape = [1] * x.ndim
        shape[axis] = w
        i = _cukit.arange(w, device=x.device).astype(dt).reshape(tuple(shape))
        # numpy's linspace scales by delta / div, or (when any step is 0: denormal
        # deltas) divides first; the choice is made on the device, not read back
        y = _cukit.where(_cukit.any(step == 0), (i / div) * delta, i * step) + start
        if _np.issubdtype(x.dtype, _np.integer):
            y = _cukit.floor(y)
        if y.dtype != x.dtype:
            y = y.astype(x.dtype)
        ramps.append(y if side == 0 else y[_along(x.ndim, axis, slice(None, None, -1))])
    return _pad_sides(x, axis, *ramps)


def _pad_odd(x, axis, widths, include_edge):
    """numpy's reflect_type='odd' along one axis (of length > 1): numpy's own loop, which
    reflects at most the current extent at a time, each piece 2 * edge - mirror image,
    so values farther out are computed from the ones before them as numpy's are."""
    period = x.shape[axis]
    b, e = widths
    off = 1 if include_edge else 0
    while b or e:
        n = x.shape[axis]
        if include_edge:
            avail = n // period * period
        else:
            avail = (n - 1) // (period - 1) * (period - 1)
        left = right = None
        if b:
            c = min(avail, b)
            chunk = x[_along(x.ndim, axis, slice(c - off, None if off else 0, -1))]
            edge = x[_along(x.ndim, axis, slice(0, 1))]
            left = 2 * edge - chunk
            b -= c
        if e:
            c = min(avail, e)
            stop = n - 2 + off - c
            chunk = x[_along(x.ndim, axis, slice(n - 2 + off, stop if stop >= 0 else None, -1))]
            edge = x[_along(x.ndim, axis, slice(n - 1, n))]
            right = 2 * edge - chunk
            e -= c
        if left is not None and left.dtype != x.dtype:
            left = left.astype(x.dtype)
        if right is not None and right.dtype != x.dtype:
            right = right.astype(x.dtype)
        x = _pad_sides(x, axis, left, right)
    return x


def _pad_dict(pad_width, ndim):
    """numpy's {axis: width} pad_width as one (before, after) pair per axis: an int
    pads both ends, a pair of ints each; axes not named are not padded."""
    seq = [(0, 0)] * ndim
    for axis, width in pad_width.items():
        if not isinstance(axis, (int, _np.integer)):
            raise TypeError(f"pad_width's keys must be axes (ints), not {axis!r}")
        if not -ndim <= axis < ndim:
            raise _np.exceptions.AxisError(axis, ndim, "pad_width")
        if isinstance(width, int):
            seq[axis] = (width, width)
        elif isinstance(width, tuple) and len(width) == 2 and \
                all(isinstance(w, int) for w in width):
            seq[axis] = width
        else:
            raise TypeError(f"pad_width's value for axis {axis} must be an int or a tuple "
                            f"(before, after) of two ints, not {width!r}")
    return seq


def pad(array, pad_width, mode="constant", **kwargs):
    """numpy.pad with all of numpy's named modes (pad_width also as numpy 2.4's dict
    {axis: width}): a copy, built axis by axis (as numpy pads), of views of the input
    (constant, edge, reflect, symmetric, wrap, empty), of cukit's reductions along the
    axis (maximum, minimum, mean, median with stat_length=) or of elementwise arithmetic
    (linear_ramp with end_values=, reflect_type='odd')."""
    _arr(array, "pad")
    a = array
    if isinstance(pad_width, dict):
        pad_width = _pad_dict(pad_width, a.ndim)
    widths = _np.asarray(pad_width)
    if widths.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    widths = [(int(b), int(e)) for b, e in _pairs(widths, a.ndim, as_index=True)]
    if callable(mode):
        raise NotImplementedError("cukit.pad: a function as mode is not supported (it "
                                  "would run per row on the host); use a named mode")
    if mode not in _PAD_KWARGS:
        raise ValueError(f"mode '{mode}' is not supported")
    bad = set(kwargs) - set(_PAD_KWARGS[mode])
    if bad:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {bad}")
    odd = kwargs.get("reflect_type", "even")
    if odd not in ("even", "odd"):
        raise ValueError(f"reflect_type must be 'even' or 'odd', not {odd!r}")
    odd = odd == "odd"
    new_shape = tuple(s + b + e for s, (b, e) in zip(a.shape, widths))
    if mode in ("constant", "empty"):
        values = _np.broadcast_to(_np.asarray(kwargs.get("constant_values", 0)),
                                  (a.ndim, 2)).tolist()
        center = tuple(slice(b, b + s) for s, (b, _) in zip(a.shape, widths))
        out = _cukit.empty(new_shape, a.dtype, a.device)
        if mode == "constant":
            uniform = len({v for pair in values for v in pair}) == 1
            if uniform:
                out.fill(values[0][0])
            else:  # numpy fills axis by axis: later axes' values win in the corners
                for ax in range(a.ndim):
                    b, e = widths[ax]
                    if b:
                        out[_along(a.ndim, ax, slice(0, b))] = values[ax][0]
                    if e:
                        out[_along(a.ndim, ax, slice(new_shape[ax] - e, None))] = values[ax][1]
        if a.size:
            out[center] = a
        return out
    if a.size == 0:  # numpy: only constant and empty extend an empty axis
        for ax, (b, e) in enumerate(widths):
            if a.shape[ax] == 0 and (b or e):
                raise ValueError(f"can't extend empty axis {ax} using modes other than "
                                 f"'constant' or 'empty'")
        return _cukit.empty(new_shape, a.dtype, a.device)
    stat_lengths = _pairs(kwargs.get("stat_length"), a.ndim, as_index=True)
    ends = _pairs(kwargs.get("end_values", 0), a.ndim)
    x = a
    for ax in range(a.ndim):
        b, e = widths[ax]
        if mode in ("maximum", "minimum", "mean", "median"):
            x = _pad_stat(x, ax, (b, e), stat_lengths[ax], mode)
        elif b == 0 and e == 0:
            continue
        elif mode == "linear_ramp":
            x = _pad_ramp(x, ax, (b, e), ends[ax])
        elif odd and x.shape[ax] > 1:
            x = _pad_odd(x, ax, (b, e), mode == "symmetric")
        else:
            idx = _np.pad(_np.arange(x.shape[ax]), (b, e), mode=mode)  # numpy's own errors
            x = _gather_axis(x, ax, idx)
    return x if x is not a else a.copy()


def roll(a, shift, axis=None):
    """numpy.roll: a copy with the elements shifted along axis (the flattened array for
    None), as a concatenation of two views per axis."""
    _arr(a, "roll")
    if axis is None:
        return roll(a.ravel(), shift, 0).reshape(a.shape)
    shifts = _np.broadcast_to(_np.asarray(shift), _np.broadcast_shapes(
        _np.shape(shift), _np.shape(axis))).ravel().tolist()
    axes = _np.broadcast_to(_np.asarray(axis), _np.broadcast_shapes(
        _np.shape(shift), _np.shape(axis))).ravel().tolist()
    total = [0] * a.ndim
    for s, ax in zip(shifts, axes):
        total[_axis(ax, a.ndim)] += int(s)
    x = a
    for ax, s in enumerate(total):
        n = x.shape[ax]
        if n == 0 or s % n == 0:
            continue
        s %= n
        x = _cukit.concatenate([x[_along(x.ndim, ax, slice(n - s, None))],
                                x[_along(x.ndim, ax, slice(0, n - s))]], axis=ax)
    return x if x is not a else a.copy()


def array_split(ary, indices_or_sections, axis=0):
    """numpy.array_split: a list of views; sections need not divide the axis."""
    _arr(ary, "array_split")
    axis = _axis(axis, ary.ndim)
    n = ary.shape[axis]
    if isinstance(indices_or_sections, _Array):
        indices_or_sections = indices_or_sections.get()
    if _np.ndim(indices_or_sections) == 0:
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        sizes = [0] + extra * [each + 1] + (sections - extra) * [each]
        bounds = _np.cumsum(sizes).tolist()
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        out.append(ary[_along(ary.ndim, axis, slice(lo, hi))])
    return out


def split(ary, indices_or_sections, axis=0):
    """numpy.split: a list of views; equal sections must divide the axis."""
    _arr(ary, "split")
    if _np.ndim(indices_or_sections) == 0 and not isinstance(indices_or_sections, _Array):
        sections = operator.index(indices_or_sections)
        n = ary.shape[_axis(axis, ary.ndim)]
        if sections == 0 or n % sections:
            raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    """numpy.hsplit: split along the second axis (the first for 1-D arrays)."""
    if _arr(ary, "hsplit").ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """numpy.vsplit: split along the first axis."""
    if _arr(ary, "vsplit").ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    """numpy.dsplit: split along the third axis."""
    if _arr(ary, "dsplit").ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


def asfortranarray(a, dtype=None):
    """numpy.asfortranarray: a itself when Fortran-contiguous (and of dtype), else a
    Fortran-ordered copy."""
    _arr(a, "asfortranarray")
    if dtype is not None and _np.dtype(dtype) != a.dtype:
        a = a.astype(dtype)
    if a.ndim == 0:
        return a.reshape(1)
    if a.flags["F_CONTIGUOUS"]:
        return a
    return _cukit.copy(a, order="F")


def broadcast_arrays(*args):
    """numpy.broadcast_arrays: read-only views of one broadcast shape."""
    arrs = [_arr(a, "broadcast_arrays") for a in args]
    shape = _np.broadcast_shapes(*(tuple(a.shape) for a in arrs))
    return tuple(a if tuple(a.shape) == shape else _cukit.broadcast_to(a, shape)
                 for a in arrs)


_c_copyto = _cukit.copyto


def copyto(dst, src, casting="same_kind", where=True, *, stream=None):
    """numpy.copyto: dst[...] = src, src broadcast to dst's shape and cast by `casting`,
    only where `where` is true; either side may be host data (one copy over), any
    layouts. With stream= the copy is only queued (see the memory guide)."""
    if isinstance(dst, _Array) and not isinstance(src, _Array):
        host = _np.asarray(src)
        if host.dtype != dst.dtype or host.shape != tuple(dst.shape) or where is not True:
            if not _np.can_cast(host, dst.dtype, casting) and not (
                    host.ndim == 0 and isinstance(src, (int, float, complex, bool))):
                raise TypeError(f"Cannot cast scalar from {host.dtype!r} to {dst.dtype!r} "
                                f"according to the rule {casting!r}")
            src = _cukit.to_device(_np.broadcast_to(host.astype(dst.dtype), tuple(dst.shape)),
                                   device=dst.device)
    if isinstance(dst, _Array) and isinstance(src, _Array):
        if src.dtype != dst.dtype:
            if not _np.can_cast(src.dtype, dst.dtype, casting):
                raise TypeError(f"Cannot cast array data from {src.dtype!r} to {dst.dtype!r} "
                                f"according to the rule {casting!r}")
        if tuple(src.shape) != tuple(dst.shape):
            src = _cukit.broadcast_to(src, tuple(dst.shape))
        if src.dtype != dst.dtype:
            src = src.astype(dst.dtype)
        if where is not True:
            if not isinstance(where, _Array):
                where = _cukit.to_device(_np.asarray(where, dtype=bool), device=dst.device)
            src = _cukit.where(where, src, dst)
    return _c_copyto(dst, src, stream=stream)
