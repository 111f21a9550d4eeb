"""pycuda.curandom on cukit: random arrays, a face of cukit.random.

cukit does not use cuRAND: its numbers come from cukit's counter-based Philox generator
(csrc/compute/random/generator.c). `rand` draws from a module-wide generator; the generator
classes (XORWOWRandomNumberGenerator, MRG32k3aRandomNumberGenerator) take PyCUDA's
arguments and methods and draw from a generator of their own, so the numbers have the
distributions PyCUDA documents but not cuRAND's bit patterns. Their `state` (made on
first use, with curand_kernel.h) holds real cuRAND states for the program's own kernels,
and call_skip_ahead* advance those, as in PyCUDA. `get_curand_version()`
is None, as PyCUDA gives when cuRAND is absent. The quasi-random (Sobol) generators
have no cukit counterpart and raise NotSupportedError naming the alternative.
"""
from __future__ import annotations

import os

import numpy as np

import cukit
import cukit.random as _random


def _wrap(a):
    from .gpuarray import _of
    return _of(a, a.buffer)


def _stream(stream):
    return {} if stream is None else {"stream": stream}


def rand(shape, dtype=np.float32, stream=None):
    """Uniform numbers in [0, 1) (float32, float64; complex: both parts), or integers over
    the dtype's whole range, as a GPUArray."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        part = np.float32 if dtype == np.complex64 else np.float64
        parts = _random.rand(tuple(np.atleast_1d(shape)) + (2,), dtype=part, stream=stream)
        return _wrap(cukit.frombuffer(parts.buffer, dtype, parts.shape[:-1]))
    return _wrap(_random.rand(shape, dtype=dtype, stream=stream))


def get_curand_version():
    """None: cukit draws from its own Philox generator, not cuRAND."""
    return None


def seed_getter_uniform(n):
    """n random 32-bit seeds (one value repeated: PyCUDA's per-thread seed arrays have no
    meaning for a counter-based generator, only its first value is used)."""
    value = int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF
    from .gpuarray import to_gpu
    return to_gpu(np.full(n, value, dtype=np.int32))


def seed_getter_unique(n):
    """n different random 32-bit seeds (only the first is used, as above)."""
    from .gpuarray import to_gpu
    return to_gpu(np.frombuffer(os.urandom(4 * n), dtype=np.int32).copy())


_FLOAT = (np.float32, np.float64)


# The per-thread cuRAND states that PyCUDA's generators keep for kernels of the
# program's own (which include curand_kernel.h and take a `curandState... *`), made on
# first use of `state`: curand_init(seed[i], i, offset, &s[i]) for each generator i,
# and cuRAND's skip-ahead functions over them.
_STATE_SOURCE = r"""
#include <curand_kernel.h>

extern "C" {
__global__ void prepare(%(state)s *s, const int n, const int *seed, const unsigned int offset)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        curand_init(seed[i], i, offset, &s[i]);
}

__global__ void skip_ahead(%(state)s *s, const int n, const unsigned long long skip)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        skipahead(skip, &s[i]);
}

__global__ void skip_ahead_array(%(state)s *s, const int n, const unsigned long long *skip)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        skipahead(skip[i], &s[i]);
}

__global__ void skip_ahead_sequence(%(state)s *s, const int n, const unsigned long long skip)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        skipahead_sequence(skip, &s[i]);
}

__global__ void skip_ahead_sequence_array(%(state)s *s, const int n,
                                          const unsigned long long *skip)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        skipahead_sequence(skip[i], &s[i]);
}

__global__ void state_size(unsigned int *out)
{
    *out = sizeof(%(state)s);
}
}
"""


class _Generator:
    """A PyCUDA-shaped generator. Its fill_*/gen_* methods draw from a cukit.random
    Generator of its own; `state` holds cuRAND states (curandStateXORWOW or
    curandStateMRG32k3a) for the program's own kernels, one per thread of a
    (block_count,) x (generators_per_block,) launch, as PyCUDA's does."""

    state_type = None  # the curand_kernel.h struct of the subclass

    def __init__(self, seed_getter=None, offset=0):
        self._seed_getter = seed_getter or seed_getter_uniform
        self._offset = int(offset)
        seeds = self._seed_getter(1)
        seed = int(seeds.get().reshape(-1)[0]) & 0xFFFFFFFF if hasattr(seeds, "get") \
            else int(np.asarray(seeds).reshape(-1)[0]) & 0xFFFFFFFF
        self._g = _random.default_rng([seed, int(offset)])
        self._module = None
        self._state = None
        from . import driver as drv
        self.block_count = drv.Context.get_device().get_attribute(
            drv.device_attribute.MULTIPROCESSOR_COUNT)

    # ---- cuRAND states for the program's kernels

    @property
    def module(self):
        """The SourceModule of the state kernels (curand_kernel.h), compiled on first use."""
        if self._module is None:
            from .compiler import SourceModule
            self._module = SourceModule(_STATE_SOURCE % {"state": self.state_type},
                                        no_extern_c=True)
        return self._module

    @property
    def generators_per_block(self):
        """Threads per block of the state launches (the most every state kernel takes)."""
        m = self.module
        return min(m.get_function(n).max_threads_per_block
                   for n in ("prepare", "skip_ahead", "skip_ahead_array",
                             "skip_ahead_sequence", "skip_ahead_sequence_array"))

    @property
    def generator_count(self):
        return self.block_count * self.generators_per_block

    @property
    def state(self):
        """Device memory holding generator_count cuRAND states of state_type, generator
        i made by curand_init(seed[i], i, offset) with seed_getter's seeds."""
        if self._state is None:
            from . import driver as drv
            from .gpuarray import GPUArray
            m = self.module
            size = drv.mem_alloc(4)
            m.get_function("state_size")(size, block=(1, 1, 1))
            nbytes = int(drv.from_device(size, (1,), np.uint32)[0])
            count = self.generator_count
            seeds = self._seed_getter(count)
            if not (isinstance(seeds, GPUArray) and seeds.dtype == np.int32
                    and seeds.size == count):
                raise TypeError("seed_getter(%d) must return a GPUArray of %d int32 seeds"
                                % (count, count))
            state = drv.mem_alloc(count * nbytes)
            m.get_function("prepare")(state, np.int32(count), seeds, np.uint32(self._offset),
                                      block=(self.generators_per_block, 1, 1),
                                      grid=(self.block_count, 1))
            self._state = state
        return self._state

    def _skip(self, name, i, stream):
        from .gpuarray import GPUArray
        if name.endswith("_array"):
            if not isinstance(i, GPUArray):
                raise TypeError("%s: i must be a GPUArray of skips, one per generator (%d), "
                                "not %s" % (name, self.generator_count, type(i).__name__))
            if i.size != self.generator_count:
                raise ValueError("%s: %d skips for %d generators"
                                 % (name, i.size, self.generator_count))
            i = i if i.dtype == np.uint64 else i.astype(np.uint64)
        else:
            i = np.uint64(i)
        self.module.get_function(name)(self.state, np.int32(self.generator_count), i,
                                       block=(self.generators_per_block, 1, 1),
                                       grid=(self.block_count, 1), stream=stream)

    def call_skip_ahead(self, i, stream=None):
        """Advance every generator of `state` by i draws (cuRAND's skipahead)."""
        self._skip("skip_ahead", i, stream)

    def call_skip_ahead_array(self, i, stream=None):
        """Advance generator k of `state` by i[k] draws (i: a GPUArray, one per generator)."""
        self._skip("skip_ahead_array", i, stream)

    def call_skip_ahead_sequence(self, i, stream=None):
        """Advance every generator of `state` by i subsequences (skipahead_sequence)."""
        self._skip("skip_ahead_sequence", i, stream)

    def call_skip_ahead_sequence_array(self, i, stream=None):
        self._skip("skip_ahead_sequence_array", i, stream)

    # ---- uniform

    def fill_uniform(self, data, stream=None):
        """Uniform floats in [0, 1), or uniform 32-bit integers for uint32/int32 data."""
        dtype = np.dtype(data.dtype)
        a = _as_out(data, "fill_uniform")
        if dtype.kind in "iu":
            if dtype.itemsize != 4:
                raise TypeError("fill_uniform: integers are 32-bit (uint32, int32), not %s"
                                % dtype)
            info = np.iinfo(dtype)
            self._g.integers(int(info.min), int(info.max), size=a.shape, dtype=dtype,
                             endpoint=True, out=a, **_stream(stream))
        else:
            _need_float(dtype, "fill_uniform")
            self._g.random(size=a.shape, dtype=dtype, out=a, **_stream(stream))
        return data

    def gen_uniform(self, shape, dtype, stream=None):
        from .gpuarray import empty
        return self.fill_uniform(empty(shape, dtype), stream)

    # ---- normal

    def fill_normal(self, data, stream=None):
        _need_float(data.dtype, "fill_normal")
        self._g.standard_normal(size=data.shape, dtype=data.dtype,
                                out=_as_out(data, "fill_normal"), **_stream(stream))
        return data

    def gen_normal(self, shape, dtype, stream=None):
        from .gpuarray import empty
        return self.fill_normal(empty(shape, dtype), stream)

    def fill_log_normal(self, data, mean, stddev, stream=None):
        """exp(N(mean, stddev)) into data."""
        _need_float(data.dtype, "fill_log_normal")
        a = _as_out(data, "fill_log_normal")
        self._g.normal(float(mean), float(stddev), size=a.shape, dtype=data.dtype, out=a,
                       **_stream(stream))
        cukit.exp(a, out=a, **_stream(stream))
        return data

    def gen_log_normal(self, shape, dtype, mean, stddev, stream=None):
        from .gpuarray import empty
        return self.fill_log_normal(empty(shape, dtype), mean, stddev, stream)

    # ---- Poisson

    def fill_poisson(self, data, lambda_value=None, stream=None):
        """Poisson counts with mean lambda_value into data (any real or integer dtype).
        PyCUDA's per-element means (lambda_value=None) are not supported."""
        if lambda_value is None:
            raise cukit.NotSupportedError(
                "fill_poisson: per-element means (lambda_value=None) are not supported by "
                "cukit's generator; pass lambda_value=")
        a = _as_out(data, "fill_poisson")
        if a.dtype == np.int64:
            self._g.poisson(float(lambda_value), size=a.shape, out=a, **_stream(stream))
        else:
            counts = self._g.poisson(float(lambda_value), size=a.shape, **_stream(stream))
            a[...] = counts.astype(a.dtype)
        return data

    def gen_poisson(self, shape, dtype, lambda_value, stream=None):
        from .gpuarray import empty
        return self.fill_poisson(empty(shape, dtype), lambda_value, stream)



def _as_out(data, who):
    from .gpuarray import GPUArray
    if not isinstance(data, GPUArray):
        raise TypeError("%s: data must be a GPUArray, not %s" % (who, type(data).__name__))
    if not data.is_c_contiguous:
        raise ValueError("%s: data must be contiguous" % who)
    return data.array


def _need_float(dtype, who):
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError("%s: the dtype must be float32 or float64, not %s"
                        % (who, np.dtype(dtype)))


class XORWOWRandomNumberGenerator(_Generator):
    """PyCUDA's XORWOW generator's interface: draws from cukit's Philox; `state` holds
    curandStateXORWOW states."""

    state_type = "curandStateXORWOW"


class MRG32k3aRandomNumberGenerator(_Generator):
    """PyCUDA's MRG32k3a generator's interface: draws from cukit's Philox; `state` holds
    curandStateMRG32k3a states."""

    state_type = "curandStateMRG32k3a"


def _quasi(name):
    class Quasi:
        def __init__(self, *args, **kwargs):
            raise cukit.NotSupportedError(
                "%s: cukit has no quasi-random (Sobol) generator; use "
                "XORWOWRandomNumberGenerator or cukit.random for pseudo-random numbers" % name)
    Quasi.__name__ = Quasi.__qualname__ = name
    return Quasi


Sobol32RandomNumberGenerator = _quasi("Sobol32RandomNumberGenerator")
ScrambledSobol32RandomNumberGenerator = _quasi("ScrambledSobol32RandomNumberGenerator")
Sobol64RandomNumberGenerator = _quasi("Sobol64RandomNumberGenerator")
ScrambledSobol64RandomNumberGenerator = _quasi("ScrambledSobol64RandomNumberGenerator")


def generate_direction_vectors(count, direction=None):
    raise cukit.NotSupportedError("generate_direction_vectors: cukit has no Sobol generator")


def generate_scramble_constants32(count):
    raise cukit.NotSupportedError("generate_scramble_constants32: cukit has no Sobol generator")


def generate_scramble_constants64(count):
    raise cukit.NotSupportedError("generate_scramble_constants64: cukit has no Sobol generator")
