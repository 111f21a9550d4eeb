"""cukit.sort, argsort and searchsorted against numpy (kind='stable') on fresh random data."""
import numpy as np
import pytest

import cukit

pytestmark = pytest.mark.gpu

DTYPES = ["?", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"]


def fresh(rng, shape, dtype, specials=True):
    """Random values with many repeats (stability shows), and for floats NaNs,
    infinities and both zeros."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        wide = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
        few = rng.integers(0, 9, size=shape).astype(dtype)
        return np.where(rng.random(shape) < 0.5, wide, few)
    x = np.round(rng.standard_normal(shape) * 4, 1).astype(dtype)
    if specials and x.size:
        flat = x.reshape(-1)
        for v in (np.nan, np.inf, -np.inf, 0.0, -0.0):
            flat[rng.integers(0, flat.size, size=max(1, flat.size // 20))] = v
    return x


def same(got, want):
    got = got.get()
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":  # -0.0 and +0.0 in numpy's places too: compare bits
        assert np.array_equal(got.view(f"u{want.itemsize}"), want.view(f"u{want.itemsize}"))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.fixture
def rng():
    return np.random.default_rng()


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_and_argsort_last_axis(rng, dtype):
    for shape in [(1000,), (3, 257), (2, 3, 40), (5, 1), (0,), (4, 0)]:
        x = fresh(rng, shape, dtype)
        d = cukit.to_device(x)
        same(cukit.sort(d), np.sort(x, kind="stable"))
        same(cukit.argsort(d), np.argsort(x, kind="stable"))


@pytest.mark.parametrize("dtype", ["i4", "f4", "f2"])
def test_any_axis_and_flattened(rng, dtype):
    x = fresh(rng, (6, 300, 5), dtype)
    d = cukit.to_device(x)
    for axis in [0, 1, 2, -1, -3, None]:
        same(cukit.sort(d, axis=axis), np.sort(x, axis=axis, kind="stable"))
        same(cukit.argsort(d, axis=axis), np.argsort(x, axis=axis, kind="stable"))
    # a strided view, sorted along a dimension that is not its fastest
    v = d[::-1, ::2].transpose(2, 0, 1)
    hv = x[::-1, ::2].transpose(2, 0, 1)
    same(cukit.sort(v, axis=1), np.sort(hv, axis=1, kind="stable"))
    same(cukit.sort(cukit.to_device(np.array(3.5)), axis=None), np.sort(np.array(3.5), axis=None))


def test_long_rows_merge_many_passes(rng):
    x = fresh(rng, (3, 5000), "f8")
    d = cukit.to_device(x)
    same(cukit.sort(d), np.sort(x, kind="stable"))
    same(cukit.argsort(d, kind="quicksort"), np.argsort(x, kind="stable"))


def test_stream(rng):
    s = cukit.Stream()
    x = fresh(rng, (700,), "f4")
    r = cukit.sort(cukit.to_device(x, stream=s), stream=s)  # the upload on s too: ordered
    s.synchronize()
    same(r, np.sort(x, kind="stable"))


@pytest.mark.parametrize("dtype", ["i8", "f4", "u1"])
def test_searchsorted(rng, dtype):
    a = np.sort(fresh(rng, (300,), dtype))
    v = fresh(rng, (4, 50), dtype)
    da, dv = cukit.to_device(a), cukit.to_device(v)
    for side in ["left", "right"]:
        same(cukit.searchsorted(da, dv, side=side), np.searchsorted(a, v, side=side))
    same(cukit.searchsorted(da, dv), np.searchsorted(a, v))


def test_bad_input():
    x = cukit.to_device(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match="axis 2 is out of bounds for an array of 2 dimensions"):
        cukit.sort(x, axis=2)
    with pytest.raises(TypeError, match="expected a cukit.Array, got numpy.ndarray"):
        cukit.sort(np.ones(3))
    with pytest.raises(TypeError, match="complex128 cannot be sorted"):
        cukit.argsort(cukit.to_device(np.ones(3, np.complex128)))
    with pytest.raises(ValueError, match="kind must be None, 'stable'"):
        cukit.sort(x, kind="bogo")
    with pytest.raises(ValueError, match="0-d array has no axis"):
        cukit.sort(cukit.to_device(np.array(1.0)))
    with pytest.raises(ValueError, match="a must be 1-D"):
        cukit.searchsorted(x, x)
    with pytest.raises(TypeError, match="cast v with v.astype"):
        cukit.searchsorted(cukit.to_device(np.arange(3.0)), cukit.to_device(np.arange(3)))
    with pytest.raises(ValueError, match="side must be 'left' or 'right'"):
        cukit.searchsorted(cukit.to_device(np.arange(3.0)), cukit.to_device(np.arange(3.0)), side="up")
    y = cukit.to_device(np.ones(3, np.float32))
    y.free()
    with pytest.raises(ValueError, match="freed"):
        cukit.sort(y)


def test_bfloat16(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = fresh(rng, (3, 600), "f4").astype(ml_dtypes.bfloat16)
    d = cukit.to_device(x)
    # numpy sorts ml_dtypes' bfloat16 through its compare function, which places NaNs
    # anywhere; float32 holds every bfloat16 exactly, in the same order, NaNs last
    wide = x.astype(np.float32)
    got = cukit.sort(d).get()
    assert got.dtype == x.dtype
    want = np.sort(wide, kind="stable").astype(ml_dtypes.bfloat16)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
    same(cukit.argsort(d), np.argsort(wide, kind="stable"))


@pytest.mark.parametrize("dtype", ["f4", "i2", "u8", "?", "f2"])
def test_unique_matches_numpy(rng, dtype):
    for shape in [(7, 90), (1000,), (1,), (0,), ()]:
        x = fresh(rng, shape, dtype)
        d = cukit.to_device(x)
        # -0.0 and 0.0 are one value: which of them numpy keeps depends on its sort's
        # order (not stable), so values are compared with ==, not bit for bit
        values = cukit.unique(d).get()
        assert values.dtype == x.dtype
        assert np.array_equal(values, np.unique(x), equal_nan=x.dtype.kind == "f")
        got = cukit.unique(d[..., ::-1] if x.ndim else d, return_index=True, return_inverse=True,
                           return_counts=True)
        want = np.unique(x[..., ::-1] if x.ndim else x, return_index=True, return_inverse=True,
                         return_counts=True)
        assert len(got) == 4
        assert np.array_equal(got[0].get(), want[0], equal_nan=x.dtype.kind == "f")
        for g, w in zip(got[1:], want[1:]):
            same(g, w)


def test_unique_bad_input():
    with pytest.raises(NotImplementedError, match="axis= is not supported"):
        cukit.unique(cukit.to_device(np.ones((2, 2))), axis=0)
    with pytest.raises(TypeError, match="complex64 cannot be sorted"):
        cukit.unique(cukit.to_device(np.ones(3, np.complex64)))
    with pytest.raises(TypeError, match="expected a cukit.Array"):
        cukit.unique([1, 2, 2])
