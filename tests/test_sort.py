"""cukit.sort, argsort and searchsorted against numpy (kind='stable') on fresh random data."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cukit
from conftest import EMULATOR

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


# The radix sort takes rows of 1024 keys and more; a block sorts a tile of
# 256 x 15 keys (256 x 10 for 8-byte keys). Sizes around those edges, for every dtype.
RADIX_MIN, TILE, TILE8 = 1024, 256 * 15, 256 * 10
RADIX_SIZES = [RADIX_MIN - 1, RADIX_MIN, TILE8 - 1, TILE8, TILE8 + 1, TILE - 1, TILE, TILE + 1,
               5 * TILE + 17]


@pytest.mark.parametrize("dtype", DTYPES)
def test_radix_sizes_every_dtype(rng, dtype):
    for n in RADIX_SIZES:
        x = fresh(rng, (n,), dtype)
        d = cukit.to_device(x)
        same(cukit.sort(d), np.sort(x, kind="stable"))
        same(cukit.argsort(d), np.argsort(x, kind="stable"))


@pytest.mark.parametrize("dtype", ["i1", "u2", "i4", "f4", "u8", "f8", "f2"])
def test_radix_few_distinct_keys_stable(rng, dtype):
    """Three distinct values over many tiles: every key has thousands of equals, so the
    indices show any break of stability (across warps, tiles and passes)."""
    n = 7 * TILE + 5
    x = rng.choice(np.array([3, -1, 7] if dtype[0] != "u" else [3, 1, 7]).astype(dtype), n)
    d = cukit.to_device(x)
    same(cukit.argsort(d), np.argsort(x, kind="stable"))
    same(cukit.sort(d), np.sort(x, kind="stable"))
    one = np.full(n, x[0])  # one value: every tile's keys share every digit
    same(cukit.argsort(cukit.to_device(one)), np.arange(n))


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8"])
def test_radix_zeros_nans_infinities(rng, dtype):
    """-0.0 and 0.0 are equal keys (numpy's stable sort keeps their order, and so their
    bits in place); NaNs of any sign and payload are equal and last, their bits kept."""
    n = 3 * TILE + 11
    u = np.dtype(f"u{np.dtype(dtype).itemsize}")
    x = rng.choice(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -1.5], dtype), n)
    bits = x.view(u)
    nan = np.isnan(x)
    # NaNs with the sign bit set and with other payloads
    sign = np.array(1, u) << np.array(8 * u.itemsize - 1, u)
    flip = nan & (rng.random(n) < 0.5)
    bits[flip] |= sign
    bits[nan & (rng.random(n) < 0.3)] += np.array(1, u)
    assert np.isnan(x[nan]).all()
    d = cukit.to_device(x)
    same(cukit.sort(d), np.sort(x, kind="stable"))
    same(cukit.argsort(d), np.argsort(x, kind="stable"))


@pytest.mark.parametrize("dtype", ["i4", "f4", "u8"])
def test_radix_sorted_and_reversed_input(rng, dtype):
    x = np.sort(fresh(rng, (4 * TILE + 3,), dtype, specials=False), kind="stable")
    for y in (x, x[::-1].copy()):
        d = cukit.to_device(y)
        same(cukit.sort(d), np.sort(y, kind="stable"))
        same(cukit.argsort(d), np.argsort(y, kind="stable"))
    # a reversed view: the copy to a contiguous row first
    d = cukit.to_device(x)[::-1]
    same(cukit.argsort(d), np.argsort(x[::-1], kind="stable"))


def test_radix_rows_and_axes(rng):
    """Rows of 1024 keys or more sort by radix, all rows in one launch a pass (each with
    its own histogram and look-back); shorter rows by the merge sort."""
    for shape, axis in [((3, 5000), -1), ((16, 1100), -1), ((300, 1030), -1), ((7, 3 * TILE + 5), -1),
                        ((4100, 3), 0), ((40, 1023), -1), ((2, 1030, 2), 1), ((2, 2, 1500), None)]:
        x = fresh(rng, shape, "f4")
        d = cukit.to_device(x)
        same(cukit.sort(d, axis=axis), np.sort(x, axis=axis, kind="stable"))
        same(cukit.argsort(d, axis=axis), np.argsort(x, axis=axis, kind="stable"))


@pytest.mark.parametrize("dtype", ["f4", "i4"])
def test_radix_large(rng, dtype):
    """Hundreds of tiles: on the emulator, blocks on several host threads wait on each
    other's look-back words."""
    n = 600_000 if EMULATOR else 5_000_000
    x = fresh(rng, (n,), dtype)
    d = cukit.to_device(x)
    same(cukit.sort(d), np.sort(x, kind="stable"))
    same(cukit.argsort(d), np.argsort(x, kind="stable"))


def test_radix_stream(rng):
    s = cukit.Stream()
    x = fresh(rng, (3 * TILE + 1,), "f8")
    d = cukit.to_device(x, stream=s)
    r, i = cukit.sort(d, stream=s), cukit.argsort(d, stream=s)
    s.synchronize()
    same(r, np.sort(x, kind="stable"))
    same(i, np.argsort(x, kind="stable"))


def test_radix_graph_capture_replays(rng):
    """A captured sort replays on new data: its temporaries stay with the graph (they are
    allocated while the stream is captured: the driver refuses that unless the capture
    mode is relaxed for it, as the emulator does too)."""
    n = 3 * TILE + 7
    x = fresh(rng, (n,), "f4")
    d = cukit.to_device(x)
    s = cukit.Stream()
    with s.capture() as g:
        r = cukit.sort(d, stream=s)
        i = cukit.argsort(d, stream=s)
        c = cukit.argsort(d.reshape(n, 1), axis=0, stream=s)  # a copy in and out
    others = [cukit.to_device(fresh(rng, (n,), "f4")) for _ in range(8)]  # reuse freed memory
    for _ in range(2):
        x = fresh(rng, (n,), "f4")
        cukit.copyto(d, cukit.to_device(x))
        cukit.synchronize()
        g.launch(s)
        s.synchronize()
        same(r, np.sort(x, kind="stable"))
        same(i, np.argsort(x, kind="stable"))
        same(c, np.argsort(x, kind="stable").reshape(n, 1))
    del others


DEFERRED = r"""
import numpy as np, cukit
rng = np.random.default_rng()
s = cukit.Stream()
for dtype, n in [("float32", 20000), ("int64", 9000), ("uint8", 5000)]:
    x = (rng.standard_normal(n) * 1000).astype(dtype)
    d = cukit.to_device(x, stream=s)
    r, i = cukit.sort(d, stream=s), cukit.argsort(d, stream=s)
    u = cukit.unique(d, return_counts=True, stream=s)
    s.synchronize()
    assert np.array_equal(r.get(), np.sort(x, kind="stable")), dtype
    assert np.array_equal(i.get(), np.argsort(x, kind="stable")), dtype
    w = np.unique(x, return_counts=True)
    assert np.array_equal(u[0].get(), w[0]) and np.array_equal(u[1].get(), w[1]), dtype
print("ok")
"""


@pytest.mark.skipif(not EMULATOR, reason="the emulator's deferred mode")
def test_radix_emulator_deferred():
    """CUKIT_EMULATOR_DEFER=1 runs queued work only where the driver guarantees it: the
    scratch memset, histogram and passes must all be ordered on the stream."""
    env = dict(os.environ, CUKIT_BACKEND="emulator", CUKIT_EMULATOR_DEFER="1")
    r = subprocess.run([sys.executable, "-c", DEFERRED], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


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
    x = fresh(rng, (3, 4000), "f4").astype(ml_dtypes.bfloat16)
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
    for shape in [(7, 90), (1000,), (1,), (0,), (), (5000,)]:
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


# ------------------------------------------------------------------ the radix tiles
#
# The radix pass kernel's tile: 512 threads of 17 keys (11 of 8-byte keys). Rows just
# under, at and past a tile's edge, several rows at once and few distinct keys
# (stability across warps and tiles) sort exactly as numpy does.


@pytest.mark.parametrize("dtype", ["f4", "i8", "u1", "f2"])
def test_radix_sorts_as_numpy_at_tile_edges(rng, dtype):
    tile = 512 * (11 if np.dtype(dtype).itemsize == 8 else 17)
    for n in sorted({max(RADIX_MIN, tile - 1), tile, tile + 1, 3 * tile + 17}):
        x = fresh(rng, (n,), dtype)
        d = cukit.to_device(x)
        same(cukit.sort(d), np.sort(x, kind="stable"))
        same(cukit.argsort(d), np.argsort(x, kind="stable"))
    x = fresh(rng, (3, 2 * tile + 5), dtype)
    same(cukit.argsort(cukit.to_device(x)), np.argsort(x, kind="stable"))
    x = rng.choice(np.array([3, -1, 7], "i4"), 4 * tile + 3)
    same(cukit.argsort(cukit.to_device(x)), np.argsort(x, kind="stable"))
    same(cukit.sort(cukit.to_device(x)), np.sort(x, kind="stable"))
