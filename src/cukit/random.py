"""cukit.random: numpy's Generator API drawing on the GPU, from counter-based Philox.

    import cukit.random
    g = cukit.random.default_rng(42)              # Generator(Philox4x32(42)): the fast one
    x = g.random(10_000_000, dtype="float32")     # a cukit.Array
    z = g.standard_normal((1024, 1024))

`Generator(Philox(key=k)).random(n)` equals `numpy.random.Generator(numpy.random.Philox(key=k)).random(n)`
bit for bit (float64 and float32), and so does the raw stream. default_rng draws from
Philox4x32-10 instead (32-bit multiplies, native on a GPU: about twice as fast; numpy's
default_rng is PCG64, so neither stream is numpy's default one). Normals, exponentials
and integers are counter-based too but not numpy's streams (see the guide).

numpy's legacy module functions draw from one module-wide generator, reseeded by seed():

    cukit.random.seed(0)
    cukit.random.rand(3, 4), cukit.random.randn(1000), cukit.random.randint(0, 10, 50)
    cukit.random.choice(100, 10, replace=False), cukit.random.shuffle(x)

Floats are float64 by default, as numpy's; dtype=numpy.float32 is the fast choice.
"""
import numpy as _np

from ._cukit import Generator, Philox, Philox4x32
from ._cukit import _random_kernel_source as _kernel_source  # for tests without a GPU

__all__ = ["Generator", "Philox", "Philox4x32", "default_rng", "seed", "rand", "randn",
           "random", "random_sample", "randint", "uniform", "normal", "standard_normal",
           "exponential", "choice", "permutation", "shuffle", "version"]


def default_rng(seed=None):
    """A Generator on Philox4x32(seed); a Generator is returned as is, a bit generator
    (Philox or Philox4x32) wrapped. For numpy's Philox stream: Generator(Philox(seed))."""
    if isinstance(seed, Generator):
        return seed
    if isinstance(seed, (Philox, Philox4x32)):
        return Generator(seed)
    return Generator(Philox4x32(seed))


# numpy's legacy module functions (numpy.random.rand, ...) draw from one module-wide
# Generator on Philox4x32, made at first use; seed() replaces it.
_global = None


def _default():
    global _global
    if _global is None:
        _global = default_rng()
    return _global


def seed(seed=None):
    """Reseed the module-wide generator behind rand(), randn(), choice() and the other
    module functions: the same seed gives the same numbers (cukit's Philox4x32 stream,
    not numpy's MT19937 one)."""
    global _global
    _global = default_rng(seed)


def _shape(size):
    """rand(3, 4) and rand((3, 4)) (PyCUDA's curandom.rand) both mean shape (3, 4)."""
    if len(size) == 1 and not hasattr(size[0], "__index__"):
        return tuple(size[0])
    return size


def rand(*size, dtype=_np.float64, stream=None):
    """Uniform numbers in [0, 1) of shape `size` (numpy's rand(d0, d1, ...); a shape tuple
    is taken too), float64 as numpy's; dtype=numpy.float32 for speed (half the bytes and
    numpy's float32 rule), float16 and bfloat16 too. An integer dtype gives integers over
    its whole range (PyCUDA's curandom.rand)."""
    shape = _shape(size)
    if isinstance(dtype, str) and dtype == "bfloat16":  # numpy knows it only through ml_dtypes
        return _default().random(shape, dtype=dtype, stream=stream)
    dt = _np.dtype(dtype)
    if dt.kind in "iu":
        info = _np.iinfo(dt)
        return _default().integers(int(info.min), int(info.max), shape, dtype=dt,
                                   endpoint=True, stream=stream)
    return _default().random(shape, dtype=dtype, stream=stream)


def randn(*size, dtype=_np.float64, stream=None):
    """Standard normal numbers of shape `size` (numpy's randn(d0, d1, ...)), float64;
    dtype=numpy.float32 for speed."""
    return _default().standard_normal(_shape(size), dtype=dtype, stream=stream)


def random_sample(size=None, dtype=_np.float64, stream=None):
    """Uniform numbers in [0, 1) of shape `size` (None: a 0-d array)."""
    return _default().random(size, dtype=dtype, stream=stream)


random = random_sample


def randint(low, high=None, size=None, dtype=_np.int64, stream=None):
    """Integers in [low, high), or [0, low) with one bound; int64 as numpy's."""
    return _default().integers(low, high, size, dtype=dtype, stream=stream)


def uniform(low=0.0, high=1.0, size=None, dtype=_np.float64, stream=None):
    """Uniform numbers in [low, high)."""
    return _default().uniform(low, high, size, dtype=dtype, stream=stream)


def normal(loc=0.0, scale=1.0, size=None, dtype=_np.float64, stream=None):
    """Normal numbers of mean loc and standard deviation scale."""
    return _default().normal(loc, scale, size, dtype=dtype, stream=stream)


def standard_normal(size=None, dtype=_np.float64, stream=None):
    """Standard normal numbers."""
    return _default().standard_normal(size, dtype=dtype, stream=stream)


def exponential(scale=1.0, size=None, dtype=_np.float64, stream=None):
    """Exponential numbers of mean scale."""
    return _default().exponential(scale, size, dtype=dtype, stream=stream)


def choice(a, size=None, replace=True, p=None, stream=None):
    """A sample of range(a) (a an int) or of the rows of the cukit.Array a: see
    Generator.choice."""
    return _default().choice(a, size, replace, p, stream=stream)


def permutation(x, stream=None):
    """A permutation of range(x) (x an int), or a copy of the cukit.Array x with its rows
    permuted."""
    return _default().permutation(x, stream=stream)


def shuffle(x, stream=None):
    """Permute the rows (the first axis) of the cukit.Array x in place."""
    _default().shuffle(x, stream=stream)


def version():
    """The version of cukit's random numbers (cukit's own: it does not use cuRAND)."""
    from . import __version__
    return tuple(int(part) for part in __version__.split(".")[:3])
