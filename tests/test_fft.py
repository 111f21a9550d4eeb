"""cukit.fft against numpy.fft on fresh random data: every transform, n=/s=, axes=, norm=,
strided inputs, the dtypes, the helpers, the plan cache and the errors. On the emulator
the transforms run on cukit's own kernels; on a GPU the same tests run on cuFFT, and
the `gpu_hardware` tests put cuFFT, cukit's own kernels and numpy side by side.

Tolerances: the largest error over every element, relative to the largest magnitude of
numpy's result, is at most 2e-6 * log2(n) in single precision (complex64, float32
in) and 1e-14 * log2(n) in double."""
import math

import numpy as np
import pytest

import cukit
import cukit.fft as cf
from conftest import EMULATOR, poison

pytestmark = pytest.mark.gpu

SINGLE_TOL, DOUBLE_TOL = 2e-6, 1e-14
NORMS = [None, "backward", "ortho", "forward"]


def fresh(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


def dirty_pool(nbytes):
    """Leave a block of NaN in the pool, so a result that is not written shows."""
    x = cukit.to_device(poison((max(nbytes, 8) + 7) // 8, np.float64))
    x.free()


def check(got, want, n, single):
    """got (a cukit.Array) matches numpy's want: dtype and shape, every element."""
    got = got.get()
    assert got.shape == want.shape
    assert not np.isnan(got).any()
    tol = (SINGLE_TOL if single else DOUBLE_TOL) * max(1.0, math.log2(max(n, 2)))
    scale = max(np.abs(want).max() if want.size else 0.0, 1e-30)
    err = np.abs(got - want).max() if want.size else 0.0
    assert err <= tol * scale, f"error {err / scale:.2e} relative, allowed {tol:.1e}"


def expect_dtype(got, single, real=False):
    kind = (np.float32 if single else np.float64) if real else (np.complex64 if single else np.complex128)
    assert got.dtype == kind


# ------------------------------------------------------------------ complex transforms

# powers of two, mixed radices, primes up to the direct limit, and Bluestein's (primes
# past 64, and lengths with such a factor)
SIZES = [1, 2, 3, 4, 5, 7, 8, 12, 16, 30, 49, 61, 64, 97, 120, 127, 128, 210, 257, 2 * 67, 1000]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["c8", "c16"])
def test_fft_and_ifft_of_every_kind_of_length(rng, n, dtype):
    x = fresh(rng, (3, n), dtype)
    d = cukit.to_device(x)
    dirty_pool(x.nbytes)
    got = cf.fft(d)
    expect_dtype(got, dtype == "c8")
    check(got, np.fft.fft(x), n, dtype == "c8")
    check(cf.ifft(d), np.fft.ifft(x), n, dtype == "c8")


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_norms(rng, name, norm):
    real_in = name in ("rfft", "ihfft")
    x = fresh(rng, (4, 18), "f8" if real_in else "c16")
    got = getattr(cf, name)(cukit.to_device(x), norm=norm)
    check(got, getattr(np.fft, name)(x, norm=norm), 18, False)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
def test_any_axis_and_n(rng, axis):
    x = fresh(rng, (5, 6, 7), "c16")
    d = cukit.to_device(x)
    for n in (None, 3, 6, 11):
        check(cf.fft(d, n=n, axis=axis), np.fft.fft(x, n=n, axis=axis), 11, False)
        check(cf.ifft(d, n, axis), np.fft.ifft(x, n, axis), 11, False)


def test_any_strides(rng):
    x = fresh(rng, (8, 9, 10), "c8")
    d = cukit.to_device(x)
    for view in [(slice(None, None, -1), slice(1, None, 2)), (slice(2, 7), Ellipsis, slice(None, None, 3))]:
        for axis in (0, 1, -1):
            check(cf.fft(d[view], axis=axis), np.fft.fft(x[view], axis=axis), 10, True)
    t = d.transpose(2, 0, 1)
    check(cf.fft(t, axis=1), np.fft.fft(x.transpose(2, 0, 1), axis=1), 10, True)
    check(cf.rfft(cukit.to_device(x.real.copy())[:, ::2], axis=0),
          np.fft.rfft(x.real[:, ::2], axis=0), 8, True)


def test_the_input_is_not_changed(rng):
    x = fresh(rng, (4, 33), "c16")
    d = cukit.to_device(x)
    for f in (cf.fft, cf.ifft, cf.irfft, cf.hfft):
        f(d)
    np.testing.assert_array_equal(d.get(), x)


# ------------------------------------------------------------------ real transforms

@pytest.mark.parametrize("n", [1, 2, 5, 8, 9, 31, 64, 100, 101])
@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_rfft_irfft(rng, n, dtype):
    x = fresh(rng, (3, n), dtype)
    single = dtype == "f4"
    got = cf.rfft(cukit.to_device(x))
    expect_dtype(got, single)
    check(got, np.fft.rfft(x), n, single)
    h = np.fft.rfft(x).astype(np.complex64 if single else np.complex128)
    back = cf.irfft(cukit.to_device(h), n=n)
    expect_dtype(back, single, real=True)
    check(back, np.fft.irfft(h, n=n), n, single)
    if n > 1:
        check(cf.irfft(cukit.to_device(h)), np.fft.irfft(h), n, single)  # default n


def test_irfft_of_any_complex_input_matches_numpy(rng):
    """Not Hermitian: the imaginary parts of the zero (and Nyquist) terms are dropped."""
    h = fresh(rng, (4, 9), "c16")
    for n in (16, 17, 10, 20):
        check(cf.irfft(cukit.to_device(h), n), np.fft.irfft(h, n), n, False)


def test_hfft_ihfft(rng):
    x = fresh(rng, (3, 12), "c16")
    for n in (None, 20, 23):
        check(cf.hfft(cukit.to_device(x), n), np.fft.hfft(x, n), 23, False)
    r = fresh(rng, (3, 15), "f8")
    check(cf.ihfft(cukit.to_device(r)), np.fft.ihfft(r), 15, False)
    check(cf.ihfft(cukit.to_device(r), 8, axis=0), np.fft.ihfft(r, 8, axis=0), 8, False)


# ------------------------------------------------------------------ n dimensions

@pytest.mark.parametrize("name", ["fftn", "ifftn", "fft2", "ifft2"])
def test_complex_n_dimensional(rng, name):
    x = fresh(rng, (4, 6, 10), "c16")
    d = cukit.to_device(x)
    f, g = getattr(cf, name), getattr(np.fft, name)
    check(f(d), g(x), 60, False)
    check(f(d, norm="ortho"), g(x, norm="ortho"), 60, False)
    check(f(d, s=(3, 12), axes=(0, 2)), g(x, s=(3, 12), axes=(0, 2)), 60, False)
    check(f(d, axes=(1, 0)), g(x, axes=(1, 0)), 60, False)
    if name.endswith("n"):
        check(f(d, axes=(-1,)), g(x, axes=(-1,)), 10, False)


@pytest.mark.parametrize("name", ["rfftn", "rfft2"])
def test_real_n_dimensional(rng, name):
    x = fresh(rng, (4, 6, 10), "f4")
    d = cukit.to_device(x)
    f, g = getattr(cf, name), getattr(np.fft, name)
    check(f(d), g(x), 60, True)
    check(f(d, s=(5, 7), axes=(0, 1)), g(x, s=(5, 7), axes=(0, 1)), 60, True)
    check(f(d, norm="forward"), g(x, norm="forward"), 60, True)


@pytest.mark.parametrize("name", ["irfftn", "irfft2"])
def test_inverse_real_n_dimensional(rng, name):
    x = np.fft.rfftn(fresh(rng, (4, 6, 10), "f8"))
    d = cukit.to_device(x)
    f, g = getattr(cf, name), getattr(np.fft, name)
    check(f(d), g(x), 60, False)
    check(f(d, s=(6, 9), axes=(1, 2)), g(x, s=(6, 9), axes=(1, 2)), 60, False)
    check(f(d, norm="ortho"), g(x, norm="ortho"), 60, False)


def test_dtypes_as_cupy_keeps_them(rng):
    x = fresh(rng, (16,), "i4")
    got = cf.fft(cukit.to_device(x))
    assert got.dtype == np.complex128                       # integers: double
    check(got, np.fft.fft(x), 16, False)
    r = fresh(rng, (16,), "f4")
    assert cf.fft(cukit.to_device(r)).dtype == np.complex64  # float32 stays single
    check(cf.fft(cukit.to_device(r)), np.fft.fft(r), 16, True)
    assert cf.rfft(cukit.to_device(x)).dtype == np.complex128
    h = fresh(rng, (9,), "f2")
    assert cf.rfft(cukit.to_device(h)).dtype == np.complex64


# ------------------------------------------------------------------ helpers

def test_frequencies_and_shifts(rng):
    for n, d in ((8, 1.0), (9, 0.25), (1, 2.0)):
        np.testing.assert_allclose(cf.fftfreq(n, d).get(), np.fft.fftfreq(n, d), rtol=1e-15)
        np.testing.assert_allclose(cf.rfftfreq(n, d).get(), np.fft.rfftfreq(n, d), rtol=1e-15)
    assert cf.fftfreq(4, dtype=np.float32).dtype == np.float32
    x = fresh(rng, (5, 6, 7), "f8")
    d = cukit.to_device(x)
    for axes in (None, 0, (1, 2), (-1,)):
        np.testing.assert_array_equal(cf.fftshift(d, axes).get(), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(cf.ifftshift(d, axes).get(), np.fft.ifftshift(x, axes))
    assert cf.fftshift(d) is not d


def test_gpuarrays_in_and_out(rng):
    from cukit.pycuda import gpuarray
    x = fresh(rng, (4, 8), "c8")
    g = gpuarray.to_gpu(x)
    y = cf.fft(g)
    assert isinstance(y, gpuarray.GPUArray)
    check(y.array, np.fft.fft(x), 8, True)


def test_on_a_stream(rng):
    s = cukit.Stream()
    x = fresh(rng, (6, 40), "c16")
    d = cukit.to_device(x, stream=s)
    got = cf.fft(d, axis=0, stream=s)
    s.synchronize()
    check(got, np.fft.fft(x, axis=0), 6, False)


def test_empty_batches(rng):
    x = np.zeros((0, 8), np.complex128)
    got = cf.fft(cukit.to_device(x))
    assert got.shape == (0, 8)


# ------------------------------------------------------------------ plans

def test_the_plan_cache_is_bounded_readable_and_clearable(rng):
    cache = cf.plan_cache
    old = cache.max_size
    try:
        cache.clear()
        assert len(cache) == 0
        for n in (6, 10, 12):
            cf.fft(cukit.to_device(fresh(rng, (2, n), "c8")))
        keys = cache.keys()
        assert [k[2] for k in keys] == [6, 10, 12] and len(cache) == 3
        assert all(k[0] == 0 and k[1] == "C2C" for k in keys)
        cf.fft(cukit.to_device(fresh(rng, (2, 6), "c8")))       # a hit moves to the end
        assert [k[2] for k in cache.keys()] == [10, 12, 6]
        cache.max_size = 2                                     # the oldest goes
        assert [k[2] for k in cache.keys()] == [12, 6]
        cf.fft(cukit.to_device(fresh(rng, (2, 14), "c8")))
        assert [k[2] for k in cache.keys()] == [6, 14]
        cache.max_size = 0                                     # none kept, still right
        x = fresh(rng, (2, 9), "c16")
        check(cf.fft(cukit.to_device(x)), np.fft.fft(x), 9, False)
        assert len(cache) == 0
        assert "0 of 0" in repr(cache)
        with pytest.raises(ValueError, match="0 or more"):
            cache.max_size = -1
    finally:
        cache.max_size = old
        cache.clear()


def test_the_path_is_observable(rng):
    cf.fft(cukit.to_device(fresh(rng, (8,), "c8")))
    info = cf.info()
    if EMULATOR:
        assert info["last"] == "cukit"
    elif info["backend"] == "auto" and info["cufft"]:
        assert info["last"] == "cufft"


def test_own_kernels_forced(rng):
    before = cf.set_backend("cukit")
    try:
        x = fresh(rng, (3, 5, 97), "c8")
        check(cf.fftn(cukit.to_device(x)), np.fft.fftn(x), 97 * 15, True)
        assert cf.info()["last"] == "cukit"
    finally:
        cf.set_backend(before)


# ------------------------------------------------------------------ errors

def test_bad_input_is_named():
    d = cukit.to_device(np.ones(8, np.complex64))
    with pytest.raises(TypeError, match="must be a cukit.Array"):
        cf.fft(np.ones(8))
    with pytest.raises(ValueError, match=r"invalid number of FFT data points \(0\)"):
        cf.fft(d, n=0)
    with pytest.raises(ValueError, match="invalid norm value 'nope'"):
        cf.fft(d, norm="nope")
    with pytest.raises(np.exceptions.AxisError):
        cf.fft(d, axis=1)
    with pytest.raises(TypeError, match="takes real input"):
        cf.rfft(d)
    with pytest.raises(ValueError, match="0-dimensional"):
        cf.fft(cukit.to_device(np.array(1.0 + 0j)))
    with pytest.raises(ValueError, match="s and axes have different lengths"):
        cf.fftn(cukit.to_device(np.ones((2, 2))), s=(2,), axes=(0, 1))
    with pytest.raises(ValueError, match="'auto', 'cufft' or 'cukit'"):
        cf.set_backend("fast")
    with pytest.raises(ValueError, match="invalid number of FFT data points"):
        cf.irfft(cukit.to_device(np.ones(1, np.complex64)))  # default n = 0
    freed = cukit.to_device(np.ones(4, np.complex64))
    freed.free()
    with pytest.raises(ValueError, match="freed"):
        cf.fft(freed)


def test_cufft_forced_on_the_emulator_says_why():
    if not EMULATOR:
        pytest.skip("the emulator's refusal")
    before = cf.set_backend("cufft")
    try:
        with pytest.raises(cukit.NotSupportedError, match="needs a GPU"):
            cf.fft(cukit.to_device(np.ones(4, np.complex64)))
    finally:
        cf.set_backend(before)


# ------------------------------------------------------------------ cuFFT beside cukit's own

def _cufft_or_skip():
    before = cf.set_backend("cufft")
    try:
        cf.fft(cukit.to_device(np.ones(4, np.complex64)))
    except cukit.NotSupportedError:
        pytest.skip("cuFFT is not installed")
    finally:
        cf.set_backend(before)


@pytest.mark.gpu_hardware
@pytest.mark.parametrize("dtype", ["c8", "c16", "f4", "f8"])
def test_cufft_and_own_kernels_agree_with_numpy(rng, dtype):
    _cufft_or_skip()
    single = dtype in ("c8", "f4")
    real = dtype in ("f4", "f8")
    cases = [((4, 1 << 12), -1, None), ((30, 7, 9), 1, 11), ((3, 5, 1031), -1, None),
             ((64, 48), 0, 100), ((6, 3 ** 7), -1, None)]
    for shape, axis, n in cases:
        x = fresh(rng, shape, dtype)
        d = cukit.to_device(x)
        length = n or shape[axis]
        for backend in ("cufft", "cukit"):
            before = cf.set_backend(backend)
            try:
                if real:
                    got = cf.rfft(d, n, axis)
                    check(got, np.fft.rfft(x, n, axis), length, single)
                    back = cf.irfft(got, length, axis)
                    check(back, np.fft.irfft(np.fft.rfft(x, n, axis), length, axis), length, single)
                else:
                    check(cf.fft(d, n, axis), np.fft.fft(x, n, axis), length, single)
                    check(cf.ifft(d, n, axis, norm="ortho"), np.fft.ifft(x, n, axis, norm="ortho"),
                          length, single)
                # real transforms off the last axis run on cukit's own kernels (cuFFT's
                # strided real plans were wrong on an H100)
                inner = int(np.prod(shape[axis % len(shape) + 1:]))
                assert cf.info()["last"] == ("cukit" if real and inner > 1 else backend)
            finally:
                cf.set_backend(before)
    if not real:
        x = fresh(rng, (16, 32, 24), dtype)
        for backend in ("cufft", "cukit"):
            before = cf.set_backend(backend)
            try:  # on cuFFT: one N-D plan over the trailing axes
                d = cukit.to_device(x)
                check(cf.fftn(d), np.fft.fftn(x), 16 * 32 * 24, single)
                check(cf.fft2(d), np.fft.fft2(x), 32 * 24, single)
                check(cf.ifftn(d, axes=(1, 2), norm="ortho"),
                      np.fft.ifftn(x, axes=(1, 2), norm="ortho"), 32 * 24, single)
                check(cf.ifft2(d[:, ::2]), np.fft.ifft2(x[:, ::2]), 16 * 24, single)
            finally:
                cf.set_backend(before)
    else:
        x = fresh(rng, (16, 32, 24), dtype)
        for backend in ("cufft", "cukit"):
            before = cf.set_backend(backend)
            try:  # on cuFFT: one real-to-complex N-D plan over the trailing axes
                d = cukit.to_device(x)
                cf.plan_cache.clear()
                check(cf.rfftn(d), np.fft.rfftn(x), 16 * 32 * 24, single)
                check(cf.rfft2(d, norm="ortho"), np.fft.rfft2(x, norm="ortho"), 32 * 24, single)
                nd = [k for k in cf.plan_cache.keys() if isinstance(k[2], tuple)]
                assert bool(nd) == (backend == "cufft"), cf.plan_cache.keys()
                assert all(k[1] in ("R2C", "D2Z") for k in nd)
                check(cf.rfftn(d[:, ::2]), np.fft.rfftn(x[:, ::2]), 16 * 16 * 24, single)
                half = np.fft.rfftn(x)
                check(cf.irfftn(cukit.to_device(half), x.shape), np.fft.irfftn(half, x.shape),
                      16 * 32 * 24, single)
            finally:
                cf.set_backend(before)
    cf.plan_cache.clear()
