"""pycuda.curandom on cukit: random arrays, a face of cukit's random numbers.
The generator classes take PyCUDA's arguments and draw from cukit's generator."""
from __future__ import annotations

import numpy as np

import cukit

from ._engine import needs_engine


def rand(shape, dtype=np.float32, stream=None):
    """Uniform random numbers in [0, 1) (float32/float64), or random 32-bit integers."""
    engine = getattr(cukit, "random", None)
    if engine is None:
        raise needs_engine("curandom.rand")
    return engine.rand(shape, dtype=dtype, stream=stream)


def get_curand_version():
    """The version of cukit's random number generator (cukit does not use cuRAND)."""
    engine = getattr(cukit, "random", None)
    if engine is None:
        raise needs_engine("curandom.get_curand_version")
    return engine.version()


class _Generator:
    def __init__(self, seed_getter=None, offset=0):
        if getattr(cukit, "random", None) is None:
            raise needs_engine(type(self).__name__)


class XORWOWRandomNumberGenerator(_Generator):
    pass


class MRG32k3aRandomNumberGenerator(_Generator):
    pass
