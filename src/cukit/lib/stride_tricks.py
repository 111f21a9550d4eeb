"""numpy.lib.stride_tricks on cukit arrays: as_strided and sliding_window_view make
views with strides of your choosing over the same device memory, checked by
the checks of cukit.frombuffer to stay inside it.

Unlike numpy's as_strided, a view that would reach outside the memory under the array
is a ValueError, not a read of whatever lies there: a kernel reading past an
allocation on a GPU loses the context. Strides and the offset are multiples of the
item size, as in every array cukit makes: a misaligned element is a fault on a GPU."""
import numpy as _np

from .. import _cukit
from .._cukit import broadcast_to
from .._creation import _ints, _over_buffer
from .._shape import _axis, broadcast_arrays

__all__ = ["as_strided", "sliding_window_view", "broadcast_to", "broadcast_arrays"]


def _over(x, fn):
    if not isinstance(x, _cukit.Array):
        raise TypeError(f"{fn}() takes a cukit.Array, got {type(x).__name__} (cukit.asarray "
                        "copies host data to the device)")
    buf = x.buffer
    if buf is None:
        raise ValueError(f"{fn}(): the array's memory is not a cukit.Buffer (it came from "
                         "another library); copy it first (x.copy())")
    return buf, x.ptr - buf.ptr


def as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    """numpy.lib.stride_tricks.as_strided: a view of x's memory with the given shape and
    strides (in bytes). Where strides is None they are, as numpy's, the C strides of the
    shape for a C-contiguous x and x's own strides otherwise. A view reaching outside the
    memory under x, or with strides that are not multiples of the item size, is a
    ValueError. Writable where x is, unless writeable=False; as with numpy, writing
    through a view whose elements overlap gives an undefined result."""
    buf, offset = _over(x, "as_strided")
    shape = x.shape if shape is None else shape
    if strides is None and not x.flags["C_CONTIGUOUS"]:
        strides = x.strides
    out = _over_buffer(buf, x.dtype, shape, strides, offset, "as_strided")
    if not writeable or not x.flags["WRITEABLE"]:
        out.setflags(write=False)
    return out


def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """numpy.lib.stride_tricks.sliding_window_view: every window of window_shape along
    axis (all axes where None) as a view of x, the window's axes last; read-only unless
    writeable=True, with numpy's errors for bad window shapes and axes."""
    _over(x, "sliding_window_view")
    window_shape = tuple(window_shape) if _np.iterable(window_shape) else (window_shape,)
    window_shape = _ints("sliding_window_view", "window_shape", window_shape)
    if any(w < 0 for w in window_shape):
        raise ValueError("`window_shape` cannot contain negative values")
    if axis is None:
        if len(window_shape) != x.ndim:
            raise ValueError(f"Since axis is `None`, must provide window_shape for all "
                             f"dimensions of `x`; got {len(window_shape)} window_shape "
                             f"elements and `x.ndim` is {x.ndim}.")
        axes = tuple(range(x.ndim))
    else:
        axes = tuple(_axis(a, x.ndim) for a in (axis if _np.iterable(axis) else (axis,)))
        if len(window_shape) != len(axes):
            raise ValueError(f"Must provide matching length window_shape and axis; got "
                             f"{len(window_shape)} window_shape elements and {len(axes)} "
                             f"axes elements.")
    shape = list(x.shape)
    for ax, w in zip(axes, window_shape):
        if shape[ax] < w:
            raise ValueError("window shape cannot be larger than input array shape")
        shape[ax] -= w - 1
    strides = tuple(x.strides) + tuple(x.strides[ax] for ax in axes)
    return as_strided(x, tuple(shape) + window_shape, strides, writeable=writeable)
