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

from . import _cukit
from ._cukit import Generator, Philox, Philox4x32
from ._cukit import _random_kernel_source as _kernel_source  # for tests without a GPU

__all__ = ["Generator", "Philox", "Philox4x32", "default_rng", "seed", "rand", "randn",
           "random", "random_sample", "randint", "uniform", "normal", "standard_normal",
           "exponential", "choice", "permutation", "shuffle", "version",
           "standard_exponential", "lognormal", "laplace", "gumbel", "logistic", "rayleigh",
           "weibull", "pareto", "power", "standard_cauchy", "wald", "triangular", "poisson",
           "standard_gamma", "gamma", "chisquare", "beta"]


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


# More of numpy's legacy distributions, each a transformation of the generator's uniform,
# normal and exponential draws (elementwise cukit math, no new device code). Parameters
# are scalars or cukit arrays, broadcast against size as numpy's; a parameter numpy
# refuses is numpy's ValueError (a cukit array parameter is checked with one read).

def _params(size, **params):
    """(shape of the draws, the parameters as floats or float64 cukit arrays)."""
    shapes = [tuple(p.shape) for p in params.values() if isinstance(p, _cukit.Array)]
    bshape = _np.broadcast_shapes(*shapes) if shapes else ()
    if size is None:
        shape = bshape
    else:
        shape = (size,) if hasattr(size, "__index__") else tuple(size)
        if _np.broadcast_shapes(shape, bshape) != shape:
            raise ValueError(f"shape mismatch: parameters of shape {bshape} cannot be "
                             f"broadcast to size {shape}")
    return shape, params


def _check(value, bad, message):
    """numpy's ValueError when bad(value) holds for any element."""
    if isinstance(value, _cukit.Array):
        hit = value.size and bool(bad(value).any())
    else:
        hit = bool(_np.any(bad(_np.asarray(value, dtype=_np.float64))))
    if hit:
        raise ValueError(message)


def _as(x, dtype):
    return x.astype(dtype) if isinstance(x, _cukit.Array) else x


def _exp(shape, dtype, stream):
    return _default().exponential(1.0, shape, dtype=dtype, stream=stream)


def _norm(shape, dtype, stream):
    return _default().standard_normal(shape, dtype=dtype, stream=stream)


def _unif(shape, dtype, stream):
    return _default().random(shape, dtype=dtype, stream=stream)


def poisson(lam=1.0, size=None, stream=None):
    """Poisson counts of mean lam (int64): Generator.poisson on the module-wide
    generator."""
    return _default().poisson(lam, size, stream=stream)


def standard_exponential(size=None, dtype=_np.float64, stream=None):
    """Exponential numbers of mean 1."""
    return _default().exponential(1.0, size, dtype=dtype, stream=stream)


def lognormal(mean=0.0, sigma=1.0, size=None, dtype=_np.float64, stream=None):
    """exp(normal(mean, sigma))."""
    shape, _ = _params(size, mean=mean, sigma=sigma)
    _check(sigma, lambda v: v < 0, "sigma < 0")
    return _cukit.exp(_norm(shape, dtype, stream) * _as(sigma, dtype) + _as(mean, dtype))


def laplace(loc=0.0, scale=1.0, size=None, dtype=_np.float64, stream=None):
    """The double exponential: loc +- scale * exponential, each sign with probability
    1/2."""
    shape, _ = _params(size, loc=loc, scale=scale)
    _check(scale, lambda v: v < 0, "scale < 0")
    e = _exp(shape, dtype, stream)
    signed = _cukit.where(_unif(shape, dtype, stream) < 0.5, -e, e)
    return signed * _as(scale, dtype) + _as(loc, dtype)


def gumbel(loc=0.0, scale=1.0, size=None, dtype=_np.float64, stream=None):
    """loc - scale * log(E), E standard exponential (numpy's -log(-log U))."""
    shape, _ = _params(size, loc=loc, scale=scale)
    _check(scale, lambda v: v < 0, "scale < 0")
    return _as(loc, dtype) - _as(scale, dtype) * _cukit.log(_exp(shape, dtype, stream))


def logistic(loc=0.0, scale=1.0, size=None, dtype=_np.float64, stream=None):
    """loc + scale * log(E1 / E2), the difference of two Gumbel draws (numpy's
    log(U / (1 - U)) in distribution)."""
    shape, _ = _params(size, loc=loc, scale=scale)
    _check(scale, lambda v: v < 0, "scale < 0")
    ratio = _exp(shape, dtype, stream) / _exp(shape, dtype, stream)
    return _as(loc, dtype) + _as(scale, dtype) * _cukit.log(ratio)


def rayleigh(scale=1.0, size=None, dtype=_np.float64, stream=None):
    """scale * sqrt(2 E), E standard exponential."""
    shape, _ = _params(size, scale=scale)
    _check(scale, lambda v: v < 0, "scale < 0")
    return _as(scale, dtype) * _cukit.sqrt(2.0 * _exp(shape, dtype, stream))


def weibull(a, size=None, dtype=_np.float64, stream=None):
    """E ** (1 / a), E standard exponential (0 where a == 0, as numpy)."""
    shape, _ = _params(size, a=a)
    _check(a, lambda v: v < 0, "a < 0")
    e = _exp(shape, dtype, stream)
    if not isinstance(a, _cukit.Array):
        return e * 0.0 if a == 0 else e ** (1.0 / a)
    a = a.astype(dtype)
    return _cukit.where(a == 0, 0.0, e ** (1.0 / _cukit.where(a == 0, 1.0, a))).astype(e.dtype)


def pareto(a, size=None, dtype=_np.float64, stream=None):
    """The Lomax (shifted Pareto) numbers numpy draws: exp(E / a) - 1."""
    shape, _ = _params(size, a=a)
    _check(a, lambda v: v <= 0, "a <= 0")
    return _cukit.expm1(_exp(shape, dtype, stream) / _as(a, dtype))


def power(a, size=None, dtype=_np.float64, stream=None):
    """Numbers in [0, 1] of density a x**(a - 1): (1 - exp(-E)) ** (1 / a)."""
    shape, _ = _params(size, a=a)
    _check(a, lambda v: v <= 0, "a <= 0")
    return (-_cukit.expm1(-_exp(shape, dtype, stream))) ** (1.0 / _as(a, dtype))


def standard_cauchy(size=None, dtype=_np.float64, stream=None):
    """The ratio of two standard normals."""
    shape, _ = _params(size)
    return _norm(shape, dtype, stream) / _norm(shape, dtype, stream)


def wald(mean, scale, size=None, dtype=_np.float64, stream=None):
    """The inverse Gaussian, by numpy's transformation of one normal and one uniform
    draw (Michael, Schucany and Haas)."""
    shape, _ = _params(size, mean=mean, scale=scale)
    _check(mean, lambda v: v <= 0, "mean <= 0")
    _check(scale, lambda v: v <= 0, "scale <= 0")
    mean, scale = _as(mean, dtype), _as(scale, dtype)
    y = _norm(shape, dtype, stream)
    y = mean * y * y
    x = mean + mean / (2 * scale) * (y - _cukit.sqrt(4 * scale * y + y * y))
    u = _unif(shape, dtype, stream)
    return _cukit.where(u <= mean / (mean + x), x, mean * mean / x).astype(x.dtype)


def triangular(left, mode, right, size=None, dtype=_np.float64, stream=None):
    """The triangular distribution over [left, right] peaking at mode (numpy's inverse
    of the distribution function on one uniform draw)."""
    shape, _ = _params(size, left=left, mode=mode, right=right)
    _check(left - mode,
           lambda v: v > 0, "left > mode")
    _check(mode - right,
           lambda v: v > 0, "mode > right")
    _check(left - right,
           lambda v: v == 0, "left == right")
    left, mode, right = _as(left, dtype), _as(mode, dtype), _as(right, dtype)
    base = right - left
    ratio = (mode - left) / base
    u = _unif(shape, dtype, stream)
    lo = left + _cukit.sqrt(u * (mode - left) * base)
    hi = right - _cukit.sqrt((1.0 - u) * (right - mode) * base)
    return _cukit.where(u <= ratio, lo, hi).astype(u.dtype)


def _gamma64(k, shape, stream):
    """Gamma(k, 1) numbers in float64, exactly: Marsaglia and Tsang's method (a normal
    and a uniform per try, accepted by their test) for k >= 1, and Gamma(k + 1) * U**(1/k)
    below 1. Rejected places are drawn again, each round only for those (one read of
    their number per round; about 2-5% are rejected, so a few rounds)."""
    size = int(_np.prod(shape, dtype=_np.int64))
    kk = (_cukit.broadcast_to(k.astype(_np.float64), shape).ravel() if isinstance(k, _cukit.Array)
          else _cukit.full(size, float(k), dtype=_np.float64))
    kb = _cukit.where(kk < 1, kk + 1.0, kk)
    d = kb - 1.0 / 3.0
    c = 1.0 / _cukit.sqrt(9.0 * d)
    out = _cukit.empty(size, dtype=_np.float64)
    todo = _cukit.arange(size, dtype=_np.int64)
    while todo.shape[0]:
        n = todo.shape[0]
        dt, ct = d[todo], c[todo]
        z = _default().standard_normal(n, dtype=_np.float64, stream=stream)
        u = _default().random(n, dtype=_np.float64, stream=stream)
        v = 1.0 + ct * z
        v = v * v * v
        ok = (v > 0) & (_cukit.log(u) < 0.5 * z * z + dt - dt * v +
                        dt * _cukit.log(_cukit.where(v > 0, v, 1.0)))
        out[todo[ok]] = (dt * v)[ok]
        todo = todo[~ok]
    if size:
        u = _default().random(size, dtype=_np.float64, stream=stream)
        boost = u ** (1.0 / _cukit.where(kk == 0, 1.0, kk))
        out = _cukit.where(kk == 0, 0.0, _cukit.where(kk < 1, out * boost, out))
    return out.reshape(shape)


def standard_gamma(shape, size=None, dtype=_np.float64, stream=None):
    """Gamma numbers of shape `shape` and scale 1 (exact: Marsaglia and Tsang's
    rejection, see the guide). shape >= 0."""
    out_shape, _ = _params(size, shape=shape)
    _check(shape, lambda v: v < 0, "shape < 0")
    return _gamma64(shape, out_shape, stream).astype(dtype)


def gamma(shape, scale=1.0, size=None, dtype=_np.float64, stream=None):
    """Gamma numbers: scale * standard_gamma(shape)."""
    out_shape, _ = _params(size, shape=shape, scale=scale)
    _check(shape, lambda v: v < 0, "shape < 0")
    _check(scale, lambda v: v < 0, "scale < 0")
    return (_gamma64(shape, out_shape, stream) * _as(scale, _np.float64)).astype(dtype)


def chisquare(df, size=None, dtype=_np.float64, stream=None):
    """Chi-square numbers with df degrees of freedom: 2 * standard_gamma(df / 2)."""
    out_shape, _ = _params(size, df=df)
    _check(df, lambda v: v <= 0, "df <= 0")
    return (2.0 * _gamma64(df / 2.0, out_shape, stream)).astype(dtype)


def beta(a, b, size=None, dtype=_np.float64, stream=None):
    """Beta numbers: X / (X + Y) of X ~ Gamma(a) and Y ~ Gamma(b)."""
    out_shape, _ = _params(size, a=a, b=b)
    _check(a, lambda v: v <= 0, "a <= 0")
    _check(b, lambda v: v <= 0, "b <= 0")
    x = _gamma64(a, out_shape, stream)
    y = _gamma64(b, out_shape, stream)
    return (x / (x + y)).astype(dtype)


def version():
    """The version of cukit's random numbers (cukit's own: it does not use cuRAND)."""
    from . import __version__
    return tuple(int(part) for part in __version__.split(".")[:3])
