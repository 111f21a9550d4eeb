"""numpy's creation and conversion functions on the device: array, asarray, asnumpy, eye,
identity, diag, tri/tril/triu, meshgrid, mgrid/ogrid, indices, get_array_module, logspace,
geomspace, vander, fromfunction, and save/load through numpy on the host. Each is
a few of the C operations (empty/zeros and strided fills, views, broadcast copies, ufuncs);
only shapes and 1-D grids of mgrid/ogrid are computed on the host."""
import math
import operator

import numpy as _np

from . import _cukit

__all__ = ["array", "asarray", "asnumpy", "eye", "identity", "diag", "diagflat", "tri",
           "tril", "triu", "meshgrid", "mgrid", "ogrid", "indices", "get_array_module", "frombuffer"]

_Array = _cukit.Array
_c_asarray = _cukit.asarray
_c_frombuffer = _cukit.frombuffer


def _has_device_array(obj):
    if isinstance(obj, _Array):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_has_device_array(x) for x in obj)
    return False


def _stack_nested(obj, dtype):
    """A nested list holding cukit arrays: stacked on the device, level by level."""
    if isinstance(obj, _Array):
        return obj if dtype is None else obj.astype(dtype)
    items = [_stack_nested(x, dtype) if _has_device_array(x) else None for x in obj]
    dev = next(x for x in items if x is not None)
    items = [x if x is not None else _cukit.to_device(_np.asarray(o, dtype=dev.dtype),
                                                       device=dev.device)
             for x, o in zip(items, obj)]
    return _cukit.stack(items)


def array(obj, dtype=None, *, copy=True, order="K", ndmin=0, device=None):
    """numpy.array on the device: a new Array from a cukit Array (copied, or as is with
    copy=None/False when nothing changes), from anything numpy.array takes (copied to the
    device), or from nested lists holding cukit arrays (stacked on the device)."""
    if isinstance(obj, _Array):
        same = dtype is None or _np.dtype(dtype) == obj.dtype
        if copy is False and not same:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        out = obj if (same and not copy) else (obj.copy() if same else obj.astype(dtype))
        if device is not None:
            out = out.to(device)
    elif _has_device_array(obj):
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        out = _stack_nested(obj, dtype)
    else:
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested "
                             "(host data is always copied to the device).")
        out = _cukit.to_device(_np.asarray(obj, dtype=dtype, order="C"), device=device)
    if order == "F" and out.ndim > 1 and not out.flags["F_CONTIGUOUS"]:
        out = _cukit.copy(out, order="F")
    if out.ndim < ndmin:
        out = out.reshape((1,) * (ndmin - out.ndim) + tuple(out.shape))
    return out


def asarray(a, dtype=None, device=None, *, order=None, copy=None):
    """numpy.asarray on the device: a cukit Array as is (cast when dtype differs); device
    data of another library (DLPack, CUDA Array Interface) shared without a copy; host
    data copied over. The third argument is numpy's order when it is a string ("C", "F",
    "A", "K"): numpy's asarray(a, dtype, order) works as written."""
    if isinstance(device, str):
        if order is not None or device not in ("C", "F", "A", "K"):
            raise TypeError(f"asarray(a, dtype, {device!r}): the third argument is numpy's "
                            "order ('C', 'F', 'A' or 'K') or a cukit device (a cukit.Device "
                            "or an int)")
        device, order = None, device
    if isinstance(a, _Array) and dtype is not None and _np.dtype(dtype) != a.dtype:
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        a = a.astype(dtype)
        dtype = None
    if not isinstance(a, _Array) and _has_device_array(a):
        return _stack_nested(a, dtype)
    if dtype is not None and not isinstance(a, (_Array, _np.ndarray)) and (
            hasattr(a, "__cuda_array_interface__") or hasattr(a, "__dlpack__")):
        out = _c_asarray(a, None, device)      # another library's device data: shared,
        if out.dtype != _np.dtype(dtype):      # then cast on the device
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as "
                                 "requested.")
            out = out.astype(dtype)
        return out
    out = _c_asarray(a, dtype, device)
    if copy and out is a:
        out = out.copy()
    if order == "F" and out.ndim > 1 and not out.flags["F_CONTIGUOUS"]:
        out = _cukit.copy(out, order="F")
    return out


def asnumpy(a, stream=None, order="C", out=None):
    """CuPy's asnumpy: a host numpy array of a (a.get() for a cukit Array)."""
    if isinstance(a, _Array):
        host = a.get(out=out, stream=stream)
        return _np.asfortranarray(host) if order == "F" and out is None else host
    return _np.asarray(a, order=order)


def get_array_module(*args):
    """CuPy's get_array_module: cukit when any argument is a cukit Array, else numpy."""
    import cukit
    return cukit if any(isinstance(a, _Array) for a in args) else _np


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None):
    """numpy.eye: zeros with ones on the k-th diagonal (a strided fill)."""
    N = operator.index(N)
    M = N if M is None else operator.index(M)
    k = operator.index(k)
    out = _cukit.zeros((N, M), dtype, device)
    count = min(N, M - k) if k >= 0 else min(N + k, M)
    if count > 0 and M > 0:
        start = k if k >= 0 else -k * M
        out.reshape(-1)[start:start + (count - 1) * (M + 1) + 1:M + 1] = 1
    if order == "F":
        out = _cukit.copy(out, order="F")
    return out


def identity(n, dtype=float, *, device=None):
    """numpy.identity: eye(n)."""
    return eye(n, dtype=dtype, device=device)


def diag(v, k=0):
    """numpy.diag: a 1-D v on the k-th diagonal of a new square array; of a 2-D v, its
    k-th diagonal (a view)."""
    if not isinstance(v, _Array):
        raise TypeError(f"cukit.diag() takes a cukit.Array, not {type(v).__name__}")
    k = operator.index(k)
    if v.ndim == 1:
        n = v.shape[0] + abs(k)
        out = _cukit.zeros((n, n), v.dtype, v.device)
        if v.shape[0]:
            start = k if k >= 0 else -k * n
            out.reshape(-1)[start:start + (v.shape[0] - 1) * (n + 1) + 1:n + 1] = v
        return out
    if v.ndim == 2:
        return v.diagonal(k)
    raise ValueError("Input must be 1- or 2-d.")


def diagflat(v, k=0):
    """numpy.diagflat: diag of v flattened."""
    if not isinstance(v, _Array):
        raise TypeError(f"cukit.diagflat() takes a cukit.Array, not {type(v).__name__}")
    return diag(v.ravel(), k)


def tri(N, M=None, k=0, dtype=float, *, device=None):
    """numpy.tri: ones at and below the k-th diagonal."""
    N = operator.index(N)
    M = N if M is None else operator.index(M)
    rows = _cukit.arange(N, dtype=_np.int64, device=device).reshape(N, 1)
    cols = _cukit.arange(-operator.index(k), M - k, dtype=_np.int64, device=device)
    mask = _cukit.greater_equal(rows, cols)
    return mask if _np.dtype(dtype) == _np.bool_ else mask.astype(dtype)


def _tri_mask(m, k, who):
    if not isinstance(m, _Array):
        raise TypeError(f"cukit.{who}() takes a cukit.Array, not {type(m).__name__}")
    shape = tuple(m.shape[-2:]) if m.ndim >= 2 else (m.shape[0], m.shape[0]) if m.ndim else None
    if shape is None:
        raise ValueError(f"{who}: the input must be at least 1-d")
    return tri(*shape, k=k, dtype=bool, device=m.device)


def tril(m, k=0):
    """numpy.tril: m with the elements above the k-th diagonal zeroed (a copy)."""
    mask = _tri_mask(m, k, "tril")
    return _cukit.where(mask, m, _cukit.zeros((), m.dtype, m.device))


def triu(m, k=0):
    """numpy.triu: m with the elements below the k-th diagonal zeroed (a copy)."""
    mask = _tri_mask(m, k - 1, "triu")
    return _cukit.where(mask, _cukit.zeros((), m.dtype, m.device), m)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """numpy.meshgrid: coordinate arrays (broadcast views when copy=False)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    for x in xi:
        if not isinstance(x, _Array):
            raise TypeError(f"cukit.meshgrid() takes cukit arrays, not {type(x).__name__}")
    nd = len(xi)
    shaped = []
    for i, x in enumerate(xi):
        s = [1] * nd
        s[i] = -1
        if indexing == "xy" and nd > 1 and i < 2:
            s[i], s[1 - i] = 1, 1
            s[1 - i] = -1
        shaped.append(x.ravel().reshape(tuple(s)))
    if not sparse and nd:
        shape = _np.broadcast_shapes(*(tuple(x.shape) for x in shaped))
        shaped = [_cukit.broadcast_to(x, shape) for x in shaped]
    if copy:
        shaped = [x.copy() for x in shaped]
    return tuple(shaped)


class _Grid:
    """numpy.mgrid (sparse False) and numpy.ogrid (True): 1-D grids built on the host
    (as numpy does), then broadcast and copied on the device."""

    def __init__(self, sparse):
        self.sparse = sparse

    def __getitem__(self, key):
        single = not isinstance(key, tuple)
        keys = (key,) if single else key
        vecs = [_np.mgrid[k] for k in keys]
        dtype = _np.result_type(*vecs) if vecs else _np.float64
        if single:
            return _cukit.to_device(vecs[0].astype(dtype))
        nd = len(vecs)
        dev = [_cukit.to_device(v.astype(dtype)) for v in vecs]
        parts = []
        for i, v in enumerate(dev):
            s = [1] * nd
            s[i] = -1
            parts.append(v.reshape(tuple(s)))
        if self.sparse:
            return tuple(parts)
        shape = tuple(len(v) for v in vecs)
        return _cukit.stack([_cukit.broadcast_to(p, shape) for p in parts])

    def __repr__(self):
        return "cukit.ogrid" if self.sparse else "cukit.mgrid"


mgrid = _Grid(False)
ogrid = _Grid(True)


def indices(dimensions, dtype=int, sparse=False, *, device=None):
    """numpy.indices: the index of each position along each axis."""
    dims = tuple(operator.index(d) for d in dimensions)
    nd = len(dims)
    parts = []
    for i, n in enumerate(dims):
        s = [1] * nd
        s[i] = n
        parts.append(_cukit.arange(n, dtype=dtype, device=device).reshape(tuple(s)))
    if sparse:
        return tuple(parts)
    if nd == 0:
        return _cukit.empty((0,), dtype, device)
    return _cukit.stack([_cukit.broadcast_to(p, dims) for p in parts])


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """numpy.logspace: base ** linspace(start, stop, num), in float64 then cast."""
    y = _cukit.linspace(start, stop, num, endpoint=endpoint)
    out = _cukit.power(_np.float64(base), y)
    if axis not in (0, -1) and out.ndim:
        raise NotImplementedError("cukit.logspace takes scalar start and stop (axis=0)")
    return out if dtype is None else out.astype(dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """numpy.geomspace: a geometric progression from start to stop, with the end points
    exactly start and stop (real numbers of one sign)."""
    if isinstance(start, complex) or isinstance(stop, complex):
        raise NotImplementedError("cukit.geomspace of complex end points: compute "
                                  "start * (stop / start) ** linspace(0, 1, num) instead")
    start, stop = float(start), float(stop)
    if start == 0 or stop == 0:
        raise ValueError("Geometric sequence cannot include zero")
    if (start < 0) != (stop < 0):
        raise NotImplementedError("cukit.geomspace between a negative and a positive end "
                                  "point (numpy's result is complex)")
    sign = -1.0 if start < 0 else 1.0
    out = logspace(_np.log10(abs(start)), _np.log10(abs(stop)), num, endpoint=endpoint,
                   base=10.0)
    if sign < 0:
        out = -out
    if num > 0:
        out[0] = start
        if endpoint and num > 1:
            out[-1] = stop
    if axis not in (0, -1):
        raise NotImplementedError("cukit.geomspace takes scalar start and stop (axis=0)")
    return out if dtype is None else out.astype(dtype)


def vander(x, N=None, increasing=False):
    """numpy.vander: the Vandermonde matrix of a 1-D x, by repeated multiplication as
    numpy computes it."""
    x = x if isinstance(x, _Array) else asarray(x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = x.shape[0] if N is None else int(N)
    dt = _np.promote_types(x.dtype, int)
    v = _cukit.ones((x.shape[0], n), dtype=dt)
    if n > 1:
        cols = _cukit.broadcast_to(x.astype(dt).reshape(-1, 1), (x.shape[0], n - 1))
        v[:, 1:] = _cukit.cumprod(cols, axis=1)
    return v if increasing else v[:, ::-1].copy()


def fromfunction(function, shape, *, dtype=float, like=None, **kwargs):
    """numpy.fromfunction: function called once with the device arrays of each position's
    index along each axis (cukit.indices)."""
    return function(*indices(shape, dtype=dtype), **kwargs)


def save(file, arr, allow_pickle=True):
    """numpy.save of a device array: copied to the host, then written by numpy."""
    _np.save(file, asnumpy(arr), allow_pickle=allow_pickle)


def savez(file, *args, **kwds):
    """numpy.savez of device arrays (each copied to the host)."""
    _np.savez(file, *[asnumpy(a) for a in args], **{k: asnumpy(v) for k, v in kwds.items()})


def savez_compressed(file, *args, **kwds):
    """numpy.savez_compressed of device arrays (each copied to the host)."""
    _np.savez_compressed(file, *[asnumpy(a) for a in args],
                         **{k: asnumpy(v) for k, v in kwds.items()})


def load(file, mmap_mode=None, allow_pickle=False):
    """numpy.load onto the device: a .npy file as a cukit array; a .npz file as a dict of
    cukit arrays by name (read whole: numpy's lazy NpzFile does not outlive the file)."""
    got = _np.load(file, mmap_mode=mmap_mode, allow_pickle=allow_pickle)
    if isinstance(got, _np.lib.npyio.NpzFile):
        with got:
            return {k: asarray(got[k]) for k in got.files}
    return asarray(got)


__all__ += ["logspace", "geomspace", "vander", "fromfunction", "save", "savez",
            "savez_compressed", "load"]


def _ints(who, name, values, ndim=None):
    try:
        out = tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"{who}(): {name} must be a sequence of integers, got "
                        f"{values!r}") from None
    if ndim is not None and len(out) != ndim:
        raise ValueError(f"{who}(): {len(out)} {name} for {ndim} dimensions")
    return out


def frombuffer(buffer, dtype=float, shape=None, strides=None, offset=0):
    """An Array over a cukit.Buffer's memory (a view: no copy), C-ordered or with the
    strides given (bytes) from offset (bytes). Checked in exact integers before the view
    is made: every element inside the buffer, and offset and strides multiples of the
    item size (a misaligned element is a fault on a GPU)."""
    return _over_buffer(buffer, dtype, shape, strides, offset, "frombuffer")


def _over_buffer(buffer, dtype, shape, strides, offset, who):
    if not isinstance(buffer, _cukit.Buffer):
        return _c_frombuffer(buffer, dtype, shape, strides, offset)  # its TypeError
    # the dtype as cukit's C resolves it (names numpy knows only through ml_dtypes, and
    # its refusals), from an empty view, which has nothing to check
    dtype = _c_frombuffer(buffer, dtype, (0,), None, 0).dtype
    itemsize = dtype.itemsize
    offset = _ints(who, "offset", (offset,))[0]
    if offset < 0 or offset > buffer.size:
        raise ValueError(f"{who}(): offset {offset} is outside the buffer of "
                         f"{buffer.size} bytes")
    if shape is None:
        shape = ((buffer.size - offset) // itemsize,) if itemsize else (0,)
    shape = _ints(who, "shape", (shape,) if isinstance(shape, (int, _np.integer)) else shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"{who}(): negative dimension in shape {shape}")
    if math.prod(shape) * max(itemsize, 1) > 2**63 - 1:
        raise ValueError(f"{who}(): shape {shape} is too big: its size in bytes does "
                         f"not fit in 64 bits")
    if strides is None:
        strides, step = [], itemsize
        for n in reversed(shape):
            strides.insert(0, step)
            step *= n
    strides = _ints(who, "strides", strides, len(shape))
    if itemsize and (offset % itemsize or any(s % itemsize for s in strides)):
        raise ValueError(
            f"{who}(): offset {offset} and strides {strides} must be multiples of the "
            f"item size ({itemsize} bytes): a misaligned element is a fault on a GPU")
    if 0 not in shape:
        lo = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
        hi = offset + itemsize + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
        if lo < 0 or hi > buffer.size:
            raise ValueError(
                f"{who}(): shape {shape} with strides {strides} from offset {offset} "
                f"reaches bytes {lo} to {hi}, outside the buffer of {buffer.size} bytes")
    return _c_frombuffer(buffer, dtype, shape, strides, offset)
