"""cukit.fft: numpy.fft's discrete Fourier transforms on the device.

Each transform runs along one axis at a time in C (csrc/fft/): on cuFFT where it loads,
else on cukit's own kernels (always on the emulator). float32 and complex64 stay in
single precision, float64 and complex128 in double; other dtypes are computed in double
(float16 in single), as CuPy does. Plans are kept in a bounded cache (`plan_cache`).
"""
import math

import numpy as np

from . import _cukit

__all__ = [
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
    "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
    "plan_cache", "PlanCache", "set_backend", "info",
]

_Array = _cukit.Array
_C2C, _R2C, _C2R = 0, 1, 2
_AxisError = np.exceptions.AxisError


# ------------------------------------------------------------------ operands

def _unwrap(x, who):
    """(the cukit.Array of x, a function that wraps a result like x): a cukit.Array
    gives Arrays back, a PyCUDA GPUArray GPUArrays."""
    if isinstance(x, _Array):
        return x, _same
    if isinstance(x, _cukit._PycudaArray):
        return x.array, x._result
    raise TypeError(f"cukit.fft.{who}: the input must be a cukit.Array (or a GPUArray), not "
                    f"{type(x).__name__}; pass cukit.to_device(x)")


def _same(a):
    return a


_COMPLEX_OF = {np.dtype(k): np.dtype(v) for k, v in [
    (np.complex64, np.complex64), (np.complex128, np.complex128), (np.float32, np.complex64),
    (np.float16, np.complex64), (np.float64, np.complex128)]}
_COMPLEX128 = np.dtype(np.complex128)


def _complex_dtype(dtype):
    """The complex dtype a complex transform of `dtype` runs in (CuPy's rule)."""
    return _COMPLEX_OF.get(dtype, _COMPLEX128)


def _real_dtype(dtype, who):
    """The real dtype a real-input transform of `dtype` runs in."""
    if dtype.kind == "c":
        raise TypeError(f"cukit.fft.{who}: the input is {dtype}; this transform takes real "
                        f"input (pass a.real, or use fft for complex input)")
    if dtype in (np.float32, np.float64):
        return dtype
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(np.float64)


def _cast(a, dtype):
    have = a.dtype
    return a if have is dtype or have == dtype else a.astype(dtype)


def _scale(norm, n, inverse, who):
    """The factor a length-n transform's result is multiplied by under `norm`."""
    if norm is None:
        return 1.0 / n if inverse else 1.0
    if norm == "backward":
        return 1.0 / n if inverse else 1.0
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if norm == "forward":
        return 1.0 if inverse else 1.0 / n
    raise ValueError(f'cukit.fft.{who}: invalid norm value {norm!r}; it should be "backward", '
                     f'"ortho" or "forward"')


_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _axis(axis, ndim, who):
    if type(axis) is int and -ndim <= axis < ndim:
        return axis % ndim
    try:
        axis = int(axis)
    except TypeError:
        raise TypeError(f"cukit.fft.{who}: axis must be an int, not {type(axis).__name__}") from None
    if not -ndim <= axis < ndim:
        raise _AxisError(axis, ndim)
    return axis % ndim


def _length(n, default, who):
    if n is None and default >= 1:
        return default
    try:
        n = int(default if n is None else n)
    except TypeError:
        raise TypeError(f"cukit.fft.{who}: n must be an int, not {type(n).__name__}") from None
    if n < 1:
        raise ValueError(f"cukit.fft.{who}: invalid number of FFT data points ({n}) specified")
    return n


def _one(a, n, axis, norm, kind, inverse, who, stream):
    """One transform of the cukit.Array a along an axis (the C entry's checks apply)."""
    if a.ndim == 0:
        raise ValueError(f"cukit.fft.{who}: the input is 0-dimensional; pass an array of one "
                         f"or more dimensions")
    axis = _axis(axis, a.ndim, who)
    if kind == _R2C:
        a = _cast(a, _real_dtype(a.dtype, who))
        n = _length(n, a.shape[axis], who)
    elif kind == _C2R:
        a = _cast(a, _complex_dtype(a.dtype))
        n = _length(n, 2 * (a.shape[axis] - 1), who)
    else:
        a = _cast(a, _complex_dtype(a.dtype))
        n = _length(n, a.shape[axis], who)
    return _cukit._fft(a, axis, n, kind, inverse, _scale(norm, n, inverse, who), stream=stream)


# ------------------------------------------------------------------ one dimension

def fft(a, n=None, axis=-1, norm=None, *, stream=None):
    """numpy.fft.fft: the 1-D discrete Fourier transform along `axis`, the input cut or
    zero-padded to n."""
    x, wrap = _unwrap(a, "fft")
    return wrap(_one(x, n, axis, norm, _C2C, False, "fft", stream))


def ifft(a, n=None, axis=-1, norm=None, *, stream=None):
    """numpy.fft.ifft: the 1-D inverse discrete Fourier transform."""
    x, wrap = _unwrap(a, "ifft")
    return wrap(_one(x, n, axis, norm, _C2C, True, "ifft", stream))


def rfft(a, n=None, axis=-1, norm=None, *, stream=None):
    """numpy.fft.rfft: the transform of real input, its n // 2 + 1 non-negative
    frequency terms."""
    x, wrap = _unwrap(a, "rfft")
    return wrap(_one(x, n, axis, norm, _R2C, False, "rfft", stream))


def irfft(a, n=None, axis=-1, norm=None, *, stream=None):
    """numpy.fft.irfft: the inverse of rfft, real output of length n (default
    2 * (m - 1) for m input terms)."""
    x, wrap = _unwrap(a, "irfft")
    return wrap(_one(x, n, axis, norm, _C2R, True, "irfft", stream))


def hfft(a, n=None, axis=-1, norm=None, *, stream=None):
    """numpy.fft.hfft: the transform of a signal with Hermitian symmetry given by its
    first half, real output of length n."""
    x, wrap = _unwrap(a, "hfft")
    x = _cast(x, _complex_dtype(x.dtype)).conj()
    _scale(norm, 1, False, "hfft")
    return wrap(_one(x, n, axis, _SWAP[norm], _C2R, True, "hfft", stream))


def ihfft(a, n=None, axis=-1, norm=None, *, stream=None):
    """numpy.fft.ihfft: the inverse of hfft, n // 2 + 1 terms."""
    x, wrap = _unwrap(a, "ihfft")
    _scale(norm, 1, False, "ihfft")
    return wrap(_one(x, n, axis, _SWAP[norm], _R2C, False, "ihfft", stream).conj())


# ------------------------------------------------------------------ n dimensions

def _axes_and_sizes(a, s, axes, who, last_real=False):
    """numpy's s= and axes= rules: the axes (normalised) and the lengths (None: the
    input's own; with last_real, the last of them 2 * (m - 1))."""
    if axes is None:
        axes = list(range(-len(s), 0)) if s is not None else list(range(a.ndim))
    else:
        axes = [axes] if isinstance(axes, int) else list(axes)
    axes = [_axis(ax, a.ndim, who) for ax in axes]
    if s is None:
        s = [None] * len(axes)
        if last_real and axes:
            s[-1] = 2 * (a.shape[axes[-1]] - 1)
    else:
        s = [s] if isinstance(s, int) else list(s)
        if len(s) != len(axes):
            raise ValueError(f"cukit.fft.{who}: s and axes have different lengths "
                             f"({len(s)} and {len(axes)})")
        s = [None if v == -1 else v for v in s]
    return axes, s


def _one_plan(x, s, axes):
    """Whether one N-D cuFFT plan can take these axes: the last k (up to 3) of x, each
    at its own length (s None or equal), none empty."""
    k = len(axes)
    return 0 < k <= 3 and x.ndim >= k and axes == list(range(x.ndim - k, x.ndim)) and \
        all(n is None or n == x.shape[ax] for n, ax in zip(s, axes)) and \
        all(x.shape[ax] > 0 for ax in axes)


def _raw_n(x, s, axes, norm, inverse, who, stream):
    # One N-D cuFFT plan where cuFFT runs and it can, else one axis at a time.
    if _one_plan(x, s, axes):
        c = _cast(x, _complex_dtype(x.dtype))
        total = math.prod(c.shape[ax] for ax in axes)
        r = _cukit._fftn(c, len(axes), inverse, _scale(norm, total, inverse, who), stream=stream)
        if r is not None:
            return r
    for n, ax in reversed(list(zip(s, axes))):
        x = _one(x, n, ax, norm, _C2C, inverse, who, stream)
    return x


def fftn(a, s=None, axes=None, norm=None, *, stream=None):
    """numpy.fft.fftn: the N-D transform over `axes` (default: all, or the last len(s))."""
    x, wrap = _unwrap(a, "fftn")
    axes, s = _axes_and_sizes(x, s, axes, "fftn")
    if not axes:
        return wrap(_cast(x, _complex_dtype(x.dtype)).copy())
    return wrap(_raw_n(x, s, axes, norm, False, "fftn", stream))


def ifftn(a, s=None, axes=None, norm=None, *, stream=None):
    """numpy.fft.ifftn: the N-D inverse transform."""
    x, wrap = _unwrap(a, "ifftn")
    axes, s = _axes_and_sizes(x, s, axes, "ifftn")
    if not axes:
        return wrap(_cast(x, _complex_dtype(x.dtype)).copy())
    return wrap(_raw_n(x, s, axes, norm, True, "ifftn", stream))


def rfftn(a, s=None, axes=None, norm=None, *, stream=None):
    """numpy.fft.rfftn: the N-D transform of real input, the last axis halved."""
    x, wrap = _unwrap(a, "rfftn")
    axes, s = _axes_and_sizes(x, s, axes, "rfftn")
    if not axes:
        raise ValueError("cukit.fft.rfftn: at least one axis must be transformed")
    if _one_plan(x, s, axes):  # one real-to-complex N-D plan on cuFFT
        r = _cast(x, _real_dtype(x.dtype, "rfftn"))
        total = math.prod(r.shape[ax] for ax in axes)
        y = _cukit._fftn(r, len(axes), False, _scale(norm, total, False, "rfftn"), kind=_R2C,
                         stream=stream)
        if y is not None:
            return wrap(y)
    x = _one(x, s[-1], axes[-1], norm, _R2C, False, "rfftn", stream)
    return wrap(_raw_n(x, s[:-1], axes[:-1], norm, False, "rfftn", stream))


def irfftn(a, s=None, axes=None, norm=None, *, stream=None):
    """numpy.fft.irfftn: the inverse of rfftn, real output (the last axis of length
    s[-1], default 2 * (m - 1))."""
    x, wrap = _unwrap(a, "irfftn")
    axes, s = _axes_and_sizes(x, s, axes, "irfftn", last_real=True)
    if not axes:
        raise ValueError("cukit.fft.irfftn: at least one axis must be transformed")
    # Not one complex-to-real N-D plan: cuFFT's assumes Hermitian symmetry along every
    # axis, numpy's irfftn along the last one only (their results differ on other input).
    x = _raw_n(x, s[:-1], axes[:-1], norm, True, "irfftn", stream)
    return wrap(_one(x, s[-1], axes[-1], norm, _C2R, True, "irfftn", stream))


def fft2(a, s=None, axes=(-2, -1), norm=None, *, stream=None):
    """numpy.fft.fft2: fftn over the last two axes."""
    return fftn(a, s, axes, norm, stream=stream)


def ifft2(a, s=None, axes=(-2, -1), norm=None, *, stream=None):
    """numpy.fft.ifft2: ifftn over the last two axes."""
    return ifftn(a, s, axes, norm, stream=stream)


def rfft2(a, s=None, axes=(-2, -1), norm=None, *, stream=None):
    """numpy.fft.rfft2: rfftn over the last two axes."""
    return rfftn(a, s, axes, norm, stream=stream)


def irfft2(a, s=None, axes=(-2, -1), norm=None, *, stream=None):
    """numpy.fft.irfft2: irfftn over the last two axes."""
    return irfftn(a, s, axes, norm, stream=stream)


# ------------------------------------------------------------------ helpers

def fftfreq(n, d=1.0, *, dtype=np.float64, device=None):
    """numpy.fft.fftfreq on the device: the sample frequencies [0, 1, ..., -1] / (d * n)."""
    return _cukit.to_device(np.fft.fftfreq(n, d).astype(dtype, copy=False), device=device)


def rfftfreq(n, d=1.0, *, dtype=np.float64, device=None):
    """numpy.fft.rfftfreq on the device: [0, 1, ..., n // 2] / (d * n)."""
    return _cukit.to_device(np.fft.rfftfreq(n, d).astype(dtype, copy=False), device=device)


def _roll(x, shifts, axes):
    for k, ax in zip(shifts, axes):
        n = x.shape[ax]
        k %= n if n else 1
        if k:
            head = [slice(None)] * x.ndim
            tail = [slice(None)] * x.ndim
            head[ax], tail[ax] = slice(n - k, None), slice(0, n - k)
            x = _cukit.concatenate((x[tuple(head)], x[tuple(tail)]), axis=ax)
    return x


def _shift(x, axes, sign, who):
    a, wrap = _unwrap(x, who)
    if axes is None:
        axes = list(range(a.ndim))
    elif isinstance(axes, int):
        axes = [axes]
    axes = [_axis(ax, a.ndim, who) for ax in axes]
    shifts = [(a.shape[ax] // 2) * sign for ax in axes]
    out = _roll(a, shifts, axes)
    return wrap(out.copy() if out is a else out)


def fftshift(x, axes=None):
    """numpy.fft.fftshift: the zero frequency moved to the middle of `axes` (default all)."""
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x, axes=None):
    """numpy.fft.ifftshift: the inverse of fftshift."""
    return _shift(x, axes, -1, "ifftshift")


# ------------------------------------------------------------------ plans and the path

class PlanCache:
    """cukit.fft's plans, oldest use first: a cuFFT plan per (device, type, length,
    batch, stride), one of cukit's own per (device, precision, length). Bounded by
    `max_size` (16 by default; 0 keeps none); the least recently used plan is dropped
    past it. The one instance is `cukit.fft.plan_cache`."""

    @property
    def max_size(self):
        """The bound; setting it drops the oldest plans past the new one."""
        return _cukit._fft_config()["plan_cache_size"]

    @max_size.setter
    def max_size(self, size):
        _cukit._fft_config(plan_cache_size=size)

    def keys(self):
        """The cached plans' keys, oldest use first: (device, type, length, batch,
        stride, library), batch and stride None for cukit's own."""
        return _cukit._fft_config()["plans"]

    def __len__(self):
        return len(self.keys())

    def clear(self):
        """Drop every plan (cuFFT's are destroyed, their memory given back)."""
        _cukit._fft_config(clear=True)

    def __repr__(self):
        return f"<cukit.fft.PlanCache {len(self)} of {self.max_size} plans>"


plan_cache = PlanCache()


def set_backend(name):
    """'auto' (cuFFT where it loads, else cukit's own kernels, said once), 'cufft' (raise
    when it cannot load) or 'cukit' (always cukit's own kernels). Returns the previous
    one. The environment variable CUKIT_FFT sets the default."""
    return _cukit._fft_config(backend=name)["backend"]


def info():
    """dict: backend, last (the path of the last transform: 'cufft', 'cukit' or None),
    cufft (the library's path once loaded) and cufft_version."""
    r = _cukit._fft_config()
    return {k: r[k] for k in ("backend", "last", "cufft", "cufft_version")}
