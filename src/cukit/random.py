"""cukit.random: numpy's Generator API drawing on the GPU, from counter-based Philox.

    import cukit.random
    g = cukit.random.default_rng(42)              # Generator(Philox4x32(42)): the fast one
    x = g.random(10_000_000, dtype="float32")     # a cukit.Array
    z = g.standard_normal((1024, 1024))

`Generator(Philox(key=k)).random(n)` equals `numpy.random.Generator(numpy.random.Philox(key=k)).random(n)`
bit for bit (float64 and float32), and so does the raw stream. default_rng draws from
Philox4x32-10 instead (32-bit multiplies, native on a GPU: about twice as fast; numpy's
default_rng is PCG64, so neither stream is numpy's default one). Normals, exponentials
and integers are counter-based too but not numpy's streams (see the README).
"""
import numpy as _np

from ._cukit import Generator, Philox, Philox4x32
from ._cukit import _random_kernel_source as _kernel_source  # for tests without a GPU

__all__ = ["Generator", "Philox", "Philox4x32", "default_rng", "rand", "randn", "seed", "version"]


def default_rng(seed=None):
    """A Generator on Philox4x32(seed); a Generator is returned as is, a bit generator
    (Philox or Philox4x32) wrapped. For numpy's Philox stream: Generator(Philox(seed))."""
    if isinstance(seed, Generator):
        return seed
    if isinstance(seed, (Philox, Philox4x32)):
        return Generator(seed)
    return Generator(Philox4x32(seed))


_global = None


def _default():
    global _global
    if _global is None:
        _global = default_rng()
    return _global


def seed(seed=None):
    """Reseed the generator behind rand() and randn()."""
    global _global
    _global = default_rng(seed)


def rand(shape, dtype=_np.float32, stream=None):
    """Uniform numbers in [0, 1) of `shape` (PyCUDA's curandom.rand), from a module-wide
    generator; an integer dtype gives integers over its whole range. float16 and
    bfloat16 too (drawn at their own precision: never 1.0)."""
    if dtype == "bfloat16":  # a name numpy knows only once ml_dtypes is imported
        return _default().random(shape, dtype=dtype, stream=stream)
    dtype = _np.dtype(dtype)
    if dtype.kind in "iu":
        info = _np.iinfo(dtype)
        return _default().integers(int(info.min), int(info.max), shape, dtype=dtype,
                                   endpoint=True, stream=stream)
    return _default().random(shape, dtype=dtype, stream=stream)


def randn(shape, dtype=_np.float32, stream=None):
    """Standard normal numbers of `shape`, from the module-wide generator."""
    return _default().standard_normal(shape, dtype=dtype, stream=stream)


def version():
    """The version of cukit's random numbers (cukit's own: it does not use cuRAND)."""
    from . import __version__
    return tuple(int(part) for part in __version__.split(".")[:3])
