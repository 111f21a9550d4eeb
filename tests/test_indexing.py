"""numpy's advanced indexing on cukit arrays: integer arrays and boolean masks in an
index, read and written, and the functions built on them (take, put, nonzero, ...),
each checked against numpy on fresh random data."""
import numpy as np
import pytest

import cukit
from conftest import EMULATOR

DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.float32, np.int64, np.float64,
          np.complex64, np.complex128]


def rand(rng, shape, dtype=np.float32):
    x = rng.standard_normal(shape) * 10
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


@pytest.fixture
def rng():
    return np.random.default_rng()


# the index forms numpy's documentation defines, on a (5, 6, 7) array
def keys(rng):
    m2 = rng.random((5, 6)) > 0.5
    return [
        np.array([3, 0, -1, 2]),
        [1, 1, 3],
        (np.array([0, 4]), np.array([5, 1])),
        (slice(None), [1, 3]),
        (Ellipsis, [0, -1]),
        (0, slice(None), [2, 5, 6]),          # int and array apart: broadcast block first
        ([0, 1], slice(None), [2, 5]),        # arrays apart: first
        (slice(None), [0, 1], [2, 5]),        # adjacent: in place
        (slice(1, 4), [[0], [2]], [1, 3]),    # broadcast index arrays
        (None, [1, 2], slice(1, 3)),
        (np.array([[0, 1], [2, 3]]),),
        rng.random(5) > 0.5,
        m2,
        (np.array([True, False, False, True, False]), slice(None), [1, 2]),
        rng.random((5, 6, 7)) > 0.5,
        True,
        (np.array([], dtype=np.int64),),
        (slice(None, None, -1), np.array([3, 1])),
    ]


@pytest.mark.parametrize("k", range(18))
def test_read_matches_numpy(rng, k):
    h = rand(rng, (5, 6, 7))
    a = cukit.asarray(h)
    key = keys(rng)[k]
    got = a[key].get()
    want = h[key]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("k", range(18))
def test_write_matches_numpy(rng, k):
    h = rand(rng, (5, 6, 7))
    a = cukit.asarray(h)
    key = keys(rng)[k]
    shape = h[key].shape
    # distinct positions get distinct values only where indices do not repeat
    v = np.float32(3.5) if k == 1 else rand(rng, shape)
    h[key] = v
    a[key] = v
    np.testing.assert_array_equal(a.get(), h)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype(rng, dtype):
    h = rand(rng, (64, 3), dtype)
    a = cukit.asarray(h)
    idx = rng.integers(-64, 64, 100)
    np.testing.assert_array_equal(a[idx].get(), h[idx])
    mask = rng.random(64) > 0.5
    np.testing.assert_array_equal(a[cukit.asarray(mask)].get(), h[mask])
    full = rng.random((64, 3)) > 0.5
    np.testing.assert_array_equal(a[cukit.asarray(full)].get(), h[full])
    v = rand(rng, (int(full.sum()),), dtype)
    a[cukit.asarray(full)] = cukit.asarray(v)
    h[full] = v
    np.testing.assert_array_equal(a.get(), h)
    a[cukit.asarray(~full)] = h[0, 0]
    h[~full] = h[0, 0]
    np.testing.assert_array_equal(a.get(), h)


def test_device_index_arrays_of_every_integer_type(rng):
    h = rand(rng, (40,))
    a = cukit.asarray(h)
    for t in (np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64):
        idx = rng.integers(0, 40, 25).astype(t)
        np.testing.assert_array_equal(a[cukit.asarray(idx)].get(), h[idx])


def test_zero_d_integer_arrays_index_as_integers(rng):
    # numpy takes a 0-d integer array as an integer (basic indexing), a 0-d bool as a mask
    h = rand(rng, (5, 6, 7))
    a = cukit.asarray(h)
    for k in [np.array(2), np.array(-1, dtype=np.int8), (np.array(1), 2), (slice(None), np.array(-2)),
              (np.array(0), [1, 3]), (Ellipsis, np.array(np.uint16(6))), np.array(True)]:
        r = a[k]
        np.testing.assert_array_equal(r.get(), h[k])
    w = h.copy()
    b = cukit.asarray(w)
    b[np.array(3), np.array(1)] = 7.0
    w[np.array(3), np.array(1)] = 7.0
    np.testing.assert_array_equal(b.get(), w)
    with pytest.raises(IndexError, match="out of bounds"):
        a[np.array(5)]
    with pytest.raises(IndexError):
        a[np.array(1.0)]


def test_views_and_strided_inputs(rng):
    h = rand(rng, (20, 30))
    a = cukit.asarray(h)
    av, hv = a[::2, ::-3], h[::2, ::-3]
    idx = rng.integers(0, hv.shape[0], 7)
    np.testing.assert_array_equal(av[idx].get(), hv[idx])
    np.testing.assert_array_equal(av.T[[1, 2]].get(), hv.T[[1, 2]])
    m = hv > 0
    np.testing.assert_array_equal(av[cukit.asarray(m)].get(), hv[m])
    # a strided index array
    ih = rng.integers(0, 20, (8, 6))
    ia = cukit.asarray(ih)[:, ::2]
    np.testing.assert_array_equal(a[ia].get(), h[ih[:, ::2]])
    # writes through a view land in the base
    av[[0, 3]] = 7
    hv[[0, 3]] = 7
    np.testing.assert_array_equal(a.get(), h)
    av[cukit.asarray(m)] = -1
    hv[m] = -1
    np.testing.assert_array_equal(a.get(), h)


def test_in_place_operators_with_repeated_indices_as_numpy(rng):
    h = rand(rng, (10,))
    a = cukit.asarray(h)
    idx = [1, 1, 3, 3, 3]
    a[idx] += 1
    h[idx] += 1
    np.testing.assert_array_equal(a.get(), h)


def test_0d_and_empty(rng):
    h = rand(rng, (0, 4))
    a = cukit.asarray(h)
    np.testing.assert_array_equal(a[[]].get(), h[[]])
    assert a[np.zeros(0, bool)].shape == h[np.zeros(0, bool)].shape
    s = cukit.asarray(np.float32(2.0))
    assert s[True].get().tolist() == [2.0]
    assert s[False].shape == (0,)
    b = cukit.asarray(rand(rng, (3,)))
    assert b[np.array([], dtype=np.int64)].shape == (0,)


def test_out_of_range_is_an_index_error_naming_it(rng):
    a = cukit.asarray(rand(rng, (5, 4)))
    # indices from the host: checked before the launch
    for idx in ([5], np.array([-6])):
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size 5"):
            a[idx]
    # indices on the device: checked by the kernel, raised at the next synchronizing point
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 5"):
        a[cukit.asarray(np.array([0, 9]))].get()
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        a[:, cukit.asarray(np.array([4]))].get()
    before = a.get()
    a[cukit.asarray(np.array([7]))] = 1.0
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        cukit.synchronize()
    np.testing.assert_array_equal(a.get(), before)
    # the array is unchanged by a refused write
    with pytest.raises(IndexError):
        a[[0, 10]] = 0.0
    np.testing.assert_array_equal(a.get(), before)


def test_device_index_errors_wait_for_the_next_sync(rng):
    """A device index array out of range is found by the kernel; every synchronizing
    point cukit owns raises numpy's IndexError once, and nothing is read or written out
    of bounds meanwhile."""
    n = 1000
    h = rand(rng, (n,))
    a = cukit.asarray(h)
    good = rng.integers(-n, n, 300)
    bad = good.copy()
    bad[137] = n + 12
    # a gather returns at once; the sync raises, naming the first bad index met
    r = a[cukit.asarray(bad)]
    with pytest.raises(IndexError, match=f"index {n + 12} is out of bounds for axis 0 with size {n}"):
        r.get()
    # the record is cleared after raising, and a good launch after a bad one works;
    # negative indices wrap as numpy's
    np.testing.assert_array_equal(a[cukit.asarray(good)].get(), h[good])
    cukit.synchronize()
    # a bad element is never a silent wrong value: the gather wrote 0 for it, read
    # nothing out of bounds, and the good ones are right
    want = h[np.where(bad < n, bad, 0)]
    want[137] = 0
    np.testing.assert_array_equal(r.get(), want)
    # a scatter skips the bad index and writes the rest; nothing past the array's end
    big = cukit.asarray(rand(rng, (2 * n,)))
    tail = big[n:].get()
    view = big[:n]
    vals = rand(rng, (300,))
    view[cukit.asarray(bad)] = cukit.asarray(vals)
    with pytest.raises(IndexError, match=f"index {n + 12} is out of bounds"):
        cukit.Device().synchronize()
    np.testing.assert_array_equal(big[n:].get(), tail)
    # each synchronizing point raises it: stream, event, a copy to the host
    r = a.take(cukit.asarray(np.array([0, -n - 1])))
    with pytest.raises(IndexError, match=f"index {-n - 1} is out of bounds"):
        cukit.Stream.null.synchronize()
    e = cukit.Event()
    a[cukit.asarray(np.array([n]))]
    e.record()
    with pytest.raises(IndexError, match=f"index {n} is out of bounds"):
        e.synchronize()
    a[cukit.asarray(np.array([n]))]
    with pytest.raises(IndexError, match=f"index {n} is out of bounds"):
        float(a[0:1].sum())
    cukit.synchronize()  # nothing left to raise


def test_device_index_error_in_take_along_axis_and_put(rng):
    h = rand(rng, (6, 5))
    a = cukit.asarray(h)
    r = cukit.take_along_axis(a, cukit.asarray(np.full((6, 1), 5)), 1)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 1 with size 5"):
        r.get()
    cukit.put(a, cukit.asarray(np.array([3, 30])), cukit.asarray(np.array([8.0, 9.0], np.float32)))
    with pytest.raises(IndexError, match="index 30 is out of bounds"):
        cukit.synchronize()
    h.flat[3] = 8.0  # the good index was written, the bad one skipped
    np.testing.assert_array_equal(a.get(), h)


def test_bad_indices_are_numpys_errors(rng):
    h = rand(rng, (5, 4))
    a = cukit.asarray(h)
    with pytest.raises(IndexError, match="integer \\(or boolean\\) type"):
        a[np.array([1.0])]
    with pytest.raises(IndexError, match="integer \\(or boolean\\) type"):
        a[cukit.asarray(np.array([1.0]))]
    with pytest.raises(IndexError, match="boolean index did not match"):
        a[np.ones(4, bool)]
    with pytest.raises(IndexError, match="could not be broadcast"):
        a[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="too many indices"):
        a[[0], [0], [0]]
    with pytest.raises(ValueError, match="shape mismatch"):
        a[[0, 1]] = np.ones(3, np.float32)


def test_take_put_compress_and_friends(rng):
    h = rand(rng, (6, 5))
    a = cukit.asarray(h)
    idx = rng.integers(0, 5, 4)
    np.testing.assert_array_equal(cukit.take(a, idx, axis=1).get(), np.take(h, idx, axis=1))
    np.testing.assert_array_equal(a.take(idx).get(), h.take(idx))
    np.testing.assert_array_equal(a.take([3, 31, -40], mode="wrap").get(),
                                  h.take([3, 31, -40], mode="wrap"))
    np.testing.assert_array_equal(a.take([3, 31, -40], mode="clip").get(),
                                  h.take([3, 31, -40], mode="clip"))
    with pytest.raises(IndexError):
        a.take([30])
    cond = [True, False, True]
    np.testing.assert_array_equal(cukit.compress(cond, a, axis=0).get(), np.compress(cond, h, axis=0))
    np.testing.assert_array_equal(a.compress(cond, axis=1).get(), h.compress(cond, axis=1))
    a.put([0, 7, 29], [1, 2])
    h.put([0, 7, 29], [1, 2])
    np.testing.assert_array_equal(a.get(), h)
    cukit.put(a, cukit.asarray(np.array([3, 4])), cukit.asarray(np.array([8.0, 9.0], np.float32)))
    np.put(h, [3, 4], [8.0, 9.0])
    np.testing.assert_array_equal(a.get(), h)
    m = h > 0
    for got, want in zip(cukit.nonzero(a > 0), np.nonzero(m)):
        np.testing.assert_array_equal(got.get(), want)
    for got, want in zip((a > 0).nonzero(), m.nonzero()):
        np.testing.assert_array_equal(got.get(), want)
    for got, want in zip(cukit.where(a > 0), np.where(m)):
        np.testing.assert_array_equal(got.get(), want)
    np.testing.assert_array_equal(cukit.flatnonzero(a).get(), np.flatnonzero(h))
    np.testing.assert_array_equal(cukit.argwhere(a > 0).get(), np.argwhere(m))
    np.testing.assert_array_equal(cukit.extract(a > 0, a).get(), np.extract(m, h))
    cukit.place(a, a > 0, [0.5, 1.5])
    np.place(h, m, [0.5, 1.5])
    np.testing.assert_array_equal(a.get(), h)
    assert int(cukit.count_nonzero(a > 1)) == np.count_nonzero(h > 1)
    with pytest.raises(ValueError, match="0d"):
        cukit.nonzero(cukit.asarray(np.float32(1)))


def test_along_axis(rng):
    h = rand(rng, (7, 9))
    a = cukit.asarray(h)
    for axis in (0, 1, -1):
        i = np.argsort(h, axis=axis)
        np.testing.assert_array_equal(cukit.take_along_axis(a, cukit.asarray(i), axis).get(),
                                      np.take_along_axis(h, i, axis))
        v = rand(rng, i.shape)
        cukit.put_along_axis(a, i, v, axis)
        np.put_along_axis(h, i, v, axis)
        np.testing.assert_array_equal(a.get(), h)
    i = np.argsort(h.ravel())
    np.testing.assert_array_equal(cukit.take_along_axis(a, i, None).get(),
                                  np.take_along_axis(h, i, None))


@pytest.mark.parametrize("n", [100_003, 1030 * 4096 + 77])  # the last tile partial;
def test_large_mask_keeps_order(rng, n):                      # more tiles than scan threads
    h = rand(rng, (n,))
    a = cukit.asarray(h)
    m = h > 0.5
    np.testing.assert_array_equal(a[a > 0.5].get(), h[m])
    np.testing.assert_array_equal(cukit.flatnonzero(a > 0.5).get(), np.flatnonzero(m))


def test_along_axis_broadcasts_and_checks(rng):
    h = rand(rng, (6, 5, 4))
    a = cukit.asarray(h)
    i = rng.integers(-5, 5, (1, 3, 4))  # broadcast along the first dimension, negatives
    np.testing.assert_array_equal(cukit.take_along_axis(a, cukit.asarray(i), 1).get(),
                                  np.take_along_axis(h, i, 1))
    v = rand(rng, (6, 3, 4))
    j = np.stack([rng.permutation(5)[:3] for _ in range(24)]).reshape(6, 4, 3).transpose(0, 2, 1)
    cukit.put_along_axis(a, cukit.asarray(np.ascontiguousarray(j)), v, 1)
    np.put_along_axis(h, j, v, 1)
    np.testing.assert_array_equal(a.get(), h)
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 5"):
        cukit.take_along_axis(a, cukit.asarray(np.full((6, 1, 4), 5)), 1).get()
    with pytest.raises(ValueError, match="same number of dimensions"):
        cukit.take_along_axis(a, np.zeros((6, 4), np.int64), 1)


@pytest.mark.parametrize("n", [0, 1, 3, 15, 16, 17, 4095, 4096, 4097, 3 * 4096 + 5])
@pytest.mark.parametrize("fill", ["random", "all", "none"])
def test_nonzero_sizes_off_the_tile_and_word(rng, n, fill):
    h = {"random": rng.random(n) > 0.4, "all": np.ones(n, bool), "none": np.zeros(n, bool)}[fill]
    m = cukit.asarray(h)
    np.testing.assert_array_equal(cukit.nonzero(m)[0].get(), np.nonzero(h)[0])
    np.testing.assert_array_equal(cukit.flatnonzero(m).get(), np.flatnonzero(h))
    np.testing.assert_array_equal(cukit.argwhere(m).get(), np.argwhere(h))
    d = rand(rng, (n,))
    a = cukit.asarray(d)
    np.testing.assert_array_equal(a[m].get(), d[h])
    a[m] = -3.0
    d[h] = -3.0
    np.testing.assert_array_equal(a.get(), d)


def test_masks_not_contiguous_or_aligned(rng):
    h = rng.random((37, 53)) > 0.6
    m = cukit.asarray(h)
    for sl in (np.s_[1:, 3:], np.s_[::2, ::3], np.s_[:, 1:], np.s_[::-1]):
        for got, want in zip(cukit.nonzero(m[sl]), np.nonzero(h[sl])):
            np.testing.assert_array_equal(got.get(), want)
        np.testing.assert_array_equal(cukit.argwhere(m[sl]).get(), np.argwhere(h[sl]))
        np.testing.assert_array_equal(cukit.flatnonzero(m[sl]).get(), np.flatnonzero(h[sl]))
    # a mask and data that start off their vector alignment
    d = rand(rng, (1003,))
    hm = rng.random(1005) > 0.5
    a, mm = cukit.asarray(d), cukit.asarray(hm)
    np.testing.assert_array_equal(a[1:][mm[1:1003]].get(), d[1:][hm[1:1003]])
    part = a[1:]
    part[mm[3:]] = 2.0
    d[1:][hm[3:]] = 2.0
    np.testing.assert_array_equal(a.get(), d)
    # a nonzero of a non-bool array: its nonzero elements
    x = rand(rng, (4, 33)).astype(np.int8)
    for got, want in zip(cukit.nonzero(cukit.asarray(x)), np.nonzero(x)):
        np.testing.assert_array_equal(got.get(), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill_every_dtype_and_value_kind(rng, dtype):
    d = rand(rng, (2, 501), dtype)
    hm = rng.random((2, 501)) > 0.5
    a, m = cukit.asarray(d), cukit.asarray(hm)
    a[m] = 1  # a host scalar: cast as numpy casts it
    d[hm] = 1
    np.testing.assert_array_equal(a.get(), d)
    v = rand(rng, (1,), dtype)
    a[m] = cukit.asarray(v)  # a one-element device array, read by the kernel
    d[hm] = v
    np.testing.assert_array_equal(a.get(), d)
    a[~m] = np.array([v[0]])
    d[~hm] = v[0]
    np.testing.assert_array_equal(a.get(), d)


@pytest.mark.skipif(not EMULATOR, reason="the checkers run on cukit's CPU emulator")
def test_index_and_mask_kernels_pass_the_emulators_checkers(rng):
    """racecheck, initcheck and synccheck find nothing in the gather, the scatter (a bad
    index among good ones included), the mask counts, scan, compaction and fill."""
    n = 3 * 4096 + 21
    h = rand(rng, (n,))
    hm = rng.random(n) > 0.5
    bad = rng.permutation(n)[:700] - rng.integers(0, 2, 700) * n  # distinct, some negative:
    bad[5] = n                                                  # a scatter without races
    with cukit.debug.check() as found:
        a, m = cukit.asarray(h), cukit.asarray(hm)
        np.testing.assert_array_equal(a[m].get(), h[hm])
        np.testing.assert_array_equal(cukit.argwhere(m).get(), np.argwhere(hm))
        a[m] = 1.5
        r = a[cukit.asarray(bad)]
        a[cukit.asarray(bad)] = r
        with pytest.raises(IndexError, match=f"index {n} is out of bounds"):
            cukit.synchronize()
    assert found.reports == []
