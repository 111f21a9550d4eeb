"""More of numpy's names (cukit/_extra.py, _polynomial.py, the array API's names in
cukit.linalg, and cukit.random's transformed distributions), each against numpy on
fresh random data: views and non-contiguous inputs, empty and 0-d arrays where they
apply, numpy's dtypes and numpy's errors."""
import math
import pickle
import warnings

import numpy as np
import pytest

import cukit
from test_shapes import rand, same, strided

pytestmark = pytest.mark.gpu


def close(d, h, rtol=1e-10, atol=0.0):
    assert isinstance(d, cukit.Array), type(d)
    h = np.asarray(h)
    assert d.dtype == h.dtype, (d.dtype, h.dtype)
    assert tuple(d.shape) == h.shape, (d.shape, h.shape)
    np.testing.assert_allclose(d.get(), h, rtol=rtol, atol=atol, equal_nan=True)


D = cukit.to_device


# ------------------------------------------------------------------ elementwise

@pytest.mark.parametrize("dtype", ["f2", "f4", "f8", "i4"])
def test_frexp(rng, dtype):
    d, h = strided(rng, dtype)
    if dtype == "f8":
        h = h.copy()
        h.reshape(-1)[:4] = [0.0, np.inf, -np.inf, np.nan]
        d = D(h)[:, ::-1][:, ::-1]
    m, e = cukit.frexp(d)
    hm, he = np.frexp(h)
    same(m, hm)
    same(e, he)
    m0, e0 = cukit.frexp(D(np.array(3.0)))
    assert m0.shape == () and float(m0) == 0.75 and int(e0) == 2


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8", "i2"])
def test_ldexp(rng, dtype):
    d, h = strided(rng, dtype)
    n = rng.integers(-20, 20, h.shape).astype(np.int32)
    with np.errstate(over="ignore"):                  # float16 overflows to inf
        same(cukit.ldexp(d, D(n)), np.ldexp(h, n))
        same(cukit.ldexp(d, 3), np.ldexp(h, 3))
    same(cukit.ldexp(D(np.zeros(0, dtype)), D(np.zeros(0, np.int64))),
         np.ldexp(np.zeros(0, dtype), np.zeros(0, np.int64)))
    with pytest.raises(TypeError, match="ldexp"):
        cukit.ldexp(d, D(n.astype(np.float64)))


@pytest.mark.parametrize("dtype", ["f4", "f8", "i8"])
def test_i0(rng, dtype):
    d, h = strided(rng, dtype)
    if dtype == "i8":
        h = h % 50
        d = D(h)
    close(cukit.i0(d), np.i0(h), rtol=1e-6 if dtype == "f4" else 1e-12)
    with pytest.raises(TypeError, match="complex"):
        cukit.i0(D(np.ones(2, complex)))


@pytest.mark.parametrize("dtype", ["i1", "u1", "i2", "i4", "u4", "i8", "u8"])
def test_bitwise_count(rng, dtype):
    d, h = strided(rng, dtype)
    same(cukit.bitwise_count(d), np.bitwise_count(h))
    with pytest.raises(TypeError, match="bitwise_count"):
        cukit.bitwise_count(D(np.ones(3)))


def test_iscomplex_isreal_isfortran_iterable(rng):
    d, h = strided(rng, "c16")
    h = h.copy()
    h.real[0, 0] = 0
    h.imag[0, :2] = 0
    d = D(h)[:, ::1]
    same(cukit.iscomplex(d), np.iscomplex(h))
    same(cukit.isreal(d), np.isreal(h))
    r = rand(rng, (3, 4))
    same(cukit.iscomplex(D(r)), np.iscomplex(r))
    same(cukit.isreal(D(r)), np.isreal(r))
    f = np.asfortranarray(r)
    assert cukit.isfortran(D(r).T) == np.isfortran(r.T) is True
    assert cukit.isfortran(D(r)) is False
    assert cukit.isfortran(cukit.asfortranarray(D(f))) is np.isfortran(f)
    assert cukit.iterable(D(r)) and cukit.iterable([1]) and not cukit.iterable(2)
    assert not cukit.iterable(D(np.array(1.0)))


def test_putmask(rng):
    for values in ([7.0], [1.0, 2.0, 3.0], rand(rng, 5)):
        h = rand(rng, (6, 5, 4))
        d = D(h)
        mask = rng.random((6, 5, 4)) < 0.4
        np.putmask(h[::2, ::-1], mask[::2, ::-1], values)
        cukit.putmask(d[::2, ::-1], D(mask[::2, ::-1]), D(np.asarray(values)))
        same(d, h)
    with pytest.raises(ValueError, match="same size"):
        cukit.putmask(D(h), D(mask[:2]), D(np.ones(1)))


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_choose(rng, mode):
    idx = rng.integers(0, 3, (5, 7)) if mode == "raise" else rng.integers(-4, 7, (5, 7))
    choices = [rand(rng, (5, 7)), rand(rng, 7), rand(rng, (5, 7), "f4")[:, ::-1]]
    got = cukit.choose(D(idx), [D(np.ascontiguousarray(c)) for c in choices], mode=mode)
    close(got, np.choose(idx, choices, mode=mode))
    with pytest.raises(ValueError, match="invalid entry"):
        cukit.choose(D(np.array([0, 3])), [D(np.ones(2))] * 3)
    out = cukit.empty((5, 7), np.float64)
    assert cukit.choose(D(idx % 3), [D(c) for c in choices[:2]] + [D(choices[0])], out=out) \
        is out


def test_apply_along_and_over_axes(rng):
    d, h = strided(rng)
    atol = 1e-13 * np.abs(h).sum()  # sums that cancel: within 60 eps of the sum of all |h|
    for axis in (0, 1, -1):
        close(cukit.apply_along_axis(lambda v: v * 2 + v.sum(), axis, d),
              np.apply_along_axis(lambda v: v * 2 + v.sum(), axis, h), atol=atol)
        close(cukit.apply_along_axis(lambda v: float(v.max()), axis, d),
              np.apply_along_axis(lambda v: v.max(), axis, h))
    close(cukit.apply_along_axis(lambda v: cukit.outer(v, v), 1, d),
          np.apply_along_axis(lambda v: np.outer(v, v), 1, h))
    with pytest.raises(ValueError, match="iteration dimensions are 0"):
        cukit.apply_along_axis(lambda v: v, 1, D(np.ones((0, 3, 2))))
    for axes in ([0, 2], 1, [-1]):
        close(cukit.apply_over_axes(cukit.sum, d, axes), np.apply_over_axes(np.sum, h, axes),
              atol=atol)


def test_array_equiv_and_conversions(rng):
    h = rand(rng, (3, 4))
    assert cukit.array_equiv(D(h[0]), D(np.tile(h[0], (3, 1))))
    assert not cukit.array_equiv(D(h), D(h[:2]))
    assert not cukit.array_equiv(D(h), D(h + 1))
    same(cukit.asanyarray([1, 2]), np.asanyarray([1, 2]))
    d = D(h)
    assert cukit.asanyarray(d) is d
    same(cukit.asarray_chkfinite(d), h)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="infs or NaNs"):
            cukit.asarray_chkfinite(D(np.array([1.0, bad])))
    same(cukit.asarray_chkfinite(D(np.arange(3))), np.arange(3))
    same(cukit.astype(d[:, ::2], np.float32), np.astype(h[:, ::2], np.float32))
    assert cukit.astype(d, np.float64, copy=False) is d
    with pytest.raises(TypeError, match="cukit array"):
        cukit.astype(h, np.float32)


def test_trim_zeros(rng):
    h = np.zeros(12)
    h[3:8] = rng.standard_normal(5)
    for trim in ("fb", "f", "b", "BF"):
        same(cukit.trim_zeros(D(h), trim), np.trim_zeros(h, trim))
    h2 = np.zeros((6, 7))
    h2[1:4, 2:5] = rng.standard_normal((3, 3))
    for axis in (None, 0, -1, (0, 1)):
        same(cukit.trim_zeros(D(h2), axis=axis), np.trim_zeros(h2, axis=axis))
    same(cukit.trim_zeros(D(np.zeros(4))), np.trim_zeros(np.zeros(4)))
    same(cukit.trim_zeros(D(np.zeros(0))), np.trim_zeros(np.zeros(0)))
    with pytest.raises(ValueError, match="unexpected character"):
        cukit.trim_zeros(D(h), "x")


def test_block_and_row_stack(rng):
    a, b, c, e = rand(rng, (2, 2)), rand(rng, (2, 3)), rand(rng, (1, 2)), rand(rng, (1, 3))
    same(cukit.block([[D(a), D(b)], [D(c), D(e)]]), np.block([[a, b], [c, e]]))
    same(cukit.block([D(a[:, 0]), 3.0, D(b[0])]), np.block([a[:, 0], 3.0, b[0]]))
    same(cukit.block(D(a)), np.block(a))
    same(cukit.block([[[D(a)]], [[D(a)]]]), np.block([[[a]], [[a]]]))
    with pytest.raises(ValueError, match="depths are mismatched"):
        cukit.block([D(a), [D(a)]])
    with pytest.raises(ValueError, match="cannot be empty"):
        cukit.block([])
    with pytest.raises(TypeError, match="tuple"):
        cukit.block((D(a), D(a)))
    with pytest.warns(DeprecationWarning):
        got = cukit.row_stack([D(a), D(c)])
    same(got, np.vstack([a, c]))


def test_unwrap(rng):
    ph = np.cumsum(rng.random((4, 30)) * 5, axis=1)
    for axis in (-1, 0):
        close(cukit.unwrap(D(ph), axis=axis), np.unwrap(ph, axis=axis), rtol=1e-12)
    close(cukit.unwrap(D(ph)[:, ::2], discont=4.0), np.unwrap(ph[:, ::2], discont=4.0))
    n = rng.integers(0, 20, 25)
    same(cukit.unwrap(D(n), period=6), np.unwrap(n, period=6))
    close(cukit.unwrap(D(ph.astype(np.float32)), period=3.0),
          np.unwrap(ph.astype(np.float32), period=3.0), rtol=1e-5)
    same(cukit.unwrap(D(np.zeros(0))), np.unwrap(np.zeros(0)))


def test_sort_complex_real_if_close_mintypecode(rng):
    z = rng.integers(0, 3, (3, 10)) + 1j * rng.integers(-2, 3, (3, 10))
    same(cukit.sort_complex(D(z)[:, ::-1]), np.sort_complex(z[:, ::-1]))
    for dt in ("i1", "u2", "i4", "f4", "f8"):
        h = rand(rng, 9, dt)
        same(cukit.sort_complex(D(h)), np.sort_complex(h))
    h = rand(rng, (3, 4))
    same(cukit.real_if_close(D(h + 1e-20j)), np.real_if_close(h + 1e-20j))
    same(cukit.real_if_close(D(h + 1e-3j)), np.real_if_close(h + 1e-3j))
    same(cukit.real_if_close(D(h), tol=1e-30), np.real_if_close(h))
    assert cukit.mintypecode([D(h), "f"]) == np.mintypecode(["d", "f"])
    assert cukit.mintypecode("idF") == np.mintypecode("idF")


# ------------------------------------------------------------------ histograms

def test_histogram_bin_edges_and_dd(rng):
    x = rng.standard_normal(500)
    for bins in (10, 3, [-1.0, 0.0, 0.5, 2.0]):
        close(cukit.histogram_bin_edges(D(x), bins), np.histogram_bin_edges(x, bins))
    close(cukit.histogram_bin_edges(D(x), 4, range=(-1, 1)),
          np.histogram_bin_edges(x, 4, range=(-1, 1)))
    pts = rng.random((300, 3))
    for kw in (dict(bins=(3, 4, 5)), dict(bins=4, range=[(0, 0.5), None, (0.2, 1)]),
               dict(bins=[np.array([0, 0.3, 1.0]), 3, 2], density=True),
               dict(bins=2, weights=pts[:, 0] * 2)):
        dkw = dict(kw, weights=D(kw["weights"])) if "weights" in kw else kw
        hist, edges = cukit.histogramdd(D(pts), **dkw)
        eh, ee = np.histogramdd(pts, **kw)
        close(hist, eh)
        for got, want in zip(edges, ee):
            close(got, want)
    hist, edges = cukit.histogramdd(D(pts[:, ::2].copy())[:, ::-1])
    close(hist, np.histogramdd(pts[:, ::2][:, ::-1])[0])
    with pytest.raises(ValueError, match="must be positive"):
        cukit.histogramdd(D(pts), bins=0)
    with pytest.raises(ValueError, match="monotonically"):
        cukit.histogramdd(D(pts[:, 0]), bins=[[1.0, 0.0]])
    with pytest.raises(ValueError, match="dimension of bins"):
        cukit.histogramdd(D(pts), bins=[2, 2])


def test_histogram2d(rng):
    x, y, w = rng.random(200), rng.random(200), rng.random(200)
    for kw in (dict(), dict(bins=5, density=True), dict(bins=[3, 4]),
               dict(bins=[[0, 0.5, 1], [0, 0.2, 0.9]])):
        hist, xe, ye = cukit.histogram2d(D(x), D(y), **kw)
        eh, exe, eye = np.histogram2d(x, y, **kw)
        close(hist, eh)
        close(xe, exe)
        close(ye, eye)
    hist, _, _ = cukit.histogram2d(D(x), D(y), bins=3, weights=D(w))
    close(hist, np.histogram2d(x, y, bins=3, weights=w)[0])
    hist, _, _ = cukit.histogram2d(D(np.zeros(0)), D(np.zeros(0)), bins=2)
    close(hist, np.histogram2d(np.zeros(0), np.zeros(0), bins=2)[0])
    with pytest.raises(ValueError, match="same length"):
        cukit.histogram2d(D(x), D(y[:5]))


# ------------------------------------------------------------------ windows

@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_windows(name):
    for m in (-1, 0, 1, 2, 7, 50):
        close(getattr(cukit, name)(m), getattr(np, name)(m), atol=1e-15)


def test_kaiser():
    for m, beta in ((0, 3.0), (1, 3.0), (9, 4.0), (40, 14.0), (8, 0.0)):
        close(cukit.kaiser(m, beta), np.kaiser(m, beta), rtol=1e-12)


# ------------------------------------------------------------------ polynomials

def test_polyadd_sub_mul_div(rng):
    p1, p2 = rng.standard_normal(5), rng.standard_normal(3)
    for f in ("polyadd", "polysub", "polymul"):
        for a, b in ((p1, p2), (p2, p1), (p1, p1[::-1])):
            close(getattr(cukit, f)(D(a), D(b)), getattr(np, f)(a, b))
    for a, b in ((p1, p2), (p2, p1), (p1, p1[:1]), (np.array([1.0, 3, 2]), [1.0, 1])):
        q, r = cukit.polydiv(D(a), D(np.asarray(b)))
        eq, er = np.polydiv(a, b)
        close(q, eq)
        close(r, er, atol=1e-12)
    i = rng.integers(-5, 5, 4)
    same(cukit.polyadd(D(i), D(i[:2])), np.polyadd(i, i[:2]))


def test_polyder_polyint(rng):
    p = rng.standard_normal(6)
    for m in (0, 1, 3, 7):
        close(cukit.polyder(D(p)[::-1], m), np.polyder(p[::-1], m))
    same(cukit.polyder(D(np.array([3, 2, 1])), 1), np.polyder(np.array([3, 2, 1]), 1))
    for m, k in ((1, None), (2, [1.0, 2.0]), (3, 5.0), (0, None)):
        close(cukit.polyint(D(p), m, k), np.polyint(p, m, k))
    with pytest.raises(ValueError, match="Order of derivative"):
        cukit.polyder(D(p), -1)
    with pytest.raises(ValueError, match="Order of integral"):
        cukit.polyint(D(p), -1)
    with pytest.raises(ValueError, match="k must be"):
        cukit.polyint(D(p), 3, [1.0, 2.0])


def test_poly_roots(rng):
    r = rng.standard_normal(4)
    close(cukit.poly(D(r)), np.poly(r))
    z = np.array([1 + 2j, 1 - 2j, 3.0])
    close(cukit.poly(D(z)), np.poly(z), atol=1e-12)
    z2 = np.array([1 + 2j, 3.0])
    close(cukit.poly(D(z2)), np.poly(z2))
    m = rng.standard_normal((3, 3))
    m = m + m.T
    close(cukit.poly(D(m)), np.poly(m), rtol=1e-9, atol=1e-12)
    assert cukit.poly(D(np.zeros(0))) == np.poly(np.zeros(0)) == 1.0
    with pytest.raises(ValueError, match="square"):
        cukit.poly(D(np.ones((2, 3))))
    p = rng.standard_normal(5)
    close(cukit.roots(D(p)), np.roots(p))
    close(cukit.roots(D(np.array([0.0, 0.0, 1.0, -3.0, 2.0]))), np.roots([0, 0, 1, -3, 2]))


def test_polyfit(rng):
    x, y = rng.random(40), rng.standard_normal(40)
    for deg in (0, 1, 3):
        close(cukit.polyfit(D(x), D(y), deg), np.polyfit(x, y, deg), rtol=1e-8, atol=1e-10)
    y2 = rng.standard_normal((40, 2))
    close(cukit.polyfit(D(x), D(y2), 2), np.polyfit(x, y2, 2), rtol=1e-8, atol=1e-10)
    w = rng.random(40)
    close(cukit.polyfit(D(x), D(y), 2, w=D(w)), np.polyfit(x, y, 2, w=w), rtol=1e-8)
    c, v = cukit.polyfit(D(x), D(y), 2, cov=True)
    ec, ev = np.polyfit(x, y, 2, cov=True)
    close(v, ev, rtol=1e-7, atol=1e-12)
    c, res, rank, sv, rcond = cukit.polyfit(D(x), D(y), 2, full=True)
    e = np.polyfit(x, y, 2, full=True)
    close(res, e[1], rtol=1e-8)
    assert rank == e[2] and rcond == e[4]
    with pytest.raises(ValueError, match="deg >= 0"):
        cukit.polyfit(D(x), D(y), -1)
    with pytest.raises(TypeError, match="same length"):
        cukit.polyfit(D(x), D(y[:5]), 1)
    with pytest.raises(TypeError, match="1D vector"):
        cukit.polyfit(D(y2), D(y), 1)


# ------------------------------------------------------------------ the array API

def test_unique_family(rng):
    h = rng.integers(0, 6, (5, 7))
    d = D(h)[:, ::-1]
    h = h[:, ::-1]
    got, want = cukit.unique_all(d), np.unique_all(h)
    assert got._fields == want._fields
    for g, w in zip(got, want):
        same(g, w)
    same(cukit.unique_counts(d).counts, np.unique_counts(h).counts)
    inv = cukit.unique_inverse(d)
    same(inv.values, np.unique_inverse(h).values)
    same(inv.inverse_indices, np.unique_inverse(h).inverse_indices)
    same(cukit.unique_values(d), np.sort(np.unique_values(h)))
    same(cukit.unique_values(D(np.zeros(0))), np.unique_values(np.zeros(0)))


@pytest.mark.parametrize("dtype", ["f8", "f4", "c16", "i4"])
def test_vecdot_matvec_vecmat(rng, dtype):
    a, b = rand(rng, (3, 4), dtype), rand(rng, (2, 3, 4), dtype)
    if dtype == "i4":
        a, b = a % 100, b % 100
    tol = 1e-5 if dtype == "f4" else 1e-12

    def near(d, h):  # sums of products may cancel: the error is relative to the terms
        close(d, h, rtol=tol, atol=tol * 16)

    near(cukit.vecdot(D(a), D(b)), np.vecdot(a, b))
    near(cukit.vecdot(D(b), D(b), axis=1), np.vecdot(b, b, axis=1))
    near(cukit.linalg.vecdot(D(a)[:, ::-1], D(b)), np.linalg.vecdot(a[:, ::-1], b))
    near(cukit.matvec(D(b), D(a[0])), np.matvec(b, a[0]))
    near(cukit.matvec(D(b)[:, ::-1], D(a[1])), np.matvec(b[:, ::-1], a[1]))
    near(cukit.matvec(D(b[:, None]), D(a)), np.matvec(b[:, None], a))
    near(cukit.vecmat(D(a[0, :3]), D(b)), np.vecmat(a[0, :3], b))
    with pytest.raises(ValueError, match="mismatch"):
        cukit.vecdot(D(a), D(a[:, :2]))
    with pytest.raises(ValueError, match="mismatch"):
        cukit.matvec(D(b), D(a[0, :2]))


def test_cumulative_sum_prod(rng):
    d, h = strided(rng)
    for axis in (0, 1, -1):
        for ini in (False, True):
            close(cukit.cumulative_sum(d, axis=axis, include_initial=ini),  # partial sums
                  np.cumulative_sum(h, axis=axis, include_initial=ini),  # may cancel
                  atol=1e-13 * np.abs(h).sum())
            close(cukit.cumulative_prod(d, axis=axis, include_initial=ini),
                  np.cumulative_prod(h, axis=axis, include_initial=ini))
    i = rng.integers(-5, 5, 7).astype(np.int32)
    same(cukit.cumulative_sum(D(i)), np.cumulative_sum(i))
    same(cukit.cumulative_sum(D(i), dtype=np.int8), np.cumulative_sum(i, dtype=np.int8))
    same(cukit.cumulative_sum(D(np.array(3.0))), np.cumulative_sum(np.array(3.0)))
    same(cukit.cumulative_sum(D(np.zeros(0)), include_initial=True),
         np.cumulative_sum(np.zeros(0), include_initial=True))
    with pytest.raises(ValueError, match="axis"):
        cukit.cumulative_sum(d)


# ------------------------------------------------------------------ numpy's own helpers

def test_printoptions_errstate_ndindex(rng):
    d = D(np.array([1.123456789, 2.0]))
    assert cukit.printoptions is np.printoptions
    with cukit.printoptions(precision=3):
        assert repr(d) == repr(np.array([1.123456789, 2.0]))
        assert "1.123," in repr(d)
        assert cukit.get_printoptions()["precision"] == 3
    assert cukit.get_printoptions()["precision"] == 8
    with cukit.errstate(divide="ignore", invalid="ignore", over="warn", under="ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert np.isinf((d / 0).get()).all()
            np.float64(1.0) / np.float64(0.0)            # numpy's host state: ignored

    @cukit.errstate(all="ignore")
    def f():
        return np.float64(1.0) / np.float64(0.0)
    assert f() == np.inf
    with pytest.raises(ValueError):
        cukit.errstate(divide="sometimes")
    assert list(cukit.ndindex(2, 3)) == list(np.ndindex(2, 3))
    h = rand(rng, (2, 3))
    assert list(cukit.ndenumerate(D(h))) == list(np.ndenumerate(h))


def test_broadcast_and_dtype_names(rng):
    b = cukit.broadcast(D(rand(rng, (3, 4))), np.ones((2, 1, 1)), 3.0)
    nb = np.broadcast(np.ones((3, 4)), np.ones((2, 1, 1)), 3.0)
    assert (b.shape, b.ndim, b.nd, b.size, b.numiter) == \
        (nb.shape, nb.ndim, nb.nd, nb.size, nb.numiter)
    with pytest.raises(ValueError):
        cukit.broadcast(D(np.ones(3)), D(np.ones(4)))
    assert cukit.bool is np.bool and cukit.long is np.long and cukit.ulong is np.ulong
    assert cukit.zeros(2, cukit.bool).dtype == np.bool_
    assert cukit.isdtype(np.float32, "real floating") and not cukit.isdtype(np.int8, "bool")


# ------------------------------------------------------------------ cukit.linalg

def test_linalg_array_api_names(rng):
    a, b = rand(rng, (2, 3, 3)), rand(rng, (2, 3, 3))
    L = cukit.linalg
    # products that cancel, and singular values that may be small: error bounds on the
    # terms (a few float64 eps of the largest), not on the result
    tiny = 1e-13 * np.abs(a).max() * np.abs(b).max() * 3
    close(L.cross(D(a), D(b)), np.linalg.cross(a, b), atol=tiny)
    close(L.cross(D(a), D(b), axis=1), np.linalg.cross(a, b, axis=1), atol=tiny)
    with pytest.raises(ValueError, match="3-dimensional"):
        L.cross(D(a[..., :2]), D(b[..., :2]))
    close(L.diagonal(D(a), offset=1), np.linalg.diagonal(a, offset=1))
    close(L.trace(D(a)[:, ::-1]), np.linalg.trace(a[:, ::-1]), atol=1e-13 * np.abs(a).sum())
    same(L.matrix_transpose(D(a)), np.linalg.matrix_transpose(a))
    close(L.outer(D(a[0, 0]), D(b[0, 1])), np.linalg.outer(a[0, 0], b[0, 1]))
    with pytest.raises(ValueError, match="one-dimensional"):
        L.outer(D(a), D(b))
    small = 1e-13 * np.abs(a).sum()
    close(L.svdvals(D(a)), np.linalg.svdvals(a), atol=small)
    for o in ("fro", "nuc", 1, -1, 2, np.inf):
        close(L.matrix_norm(D(a), ord=o), np.linalg.matrix_norm(a, ord=o), atol=small)
        close(L.matrix_norm(D(a), ord=o, keepdims=True),
              np.linalg.matrix_norm(a, ord=o, keepdims=True), atol=small)
    for o in (2, 1, np.inf, -np.inf, 0, 3):
        for axis in (None, 1, (0, 2)):
            for keep in (False, True):
                close(L.vector_norm(D(a), ord=o, axis=axis, keepdims=keep),
                      np.linalg.vector_norm(a, ord=o, axis=axis, keepdims=keep))


# ------------------------------------------------------------------ cukit.random

N = 20000


def _erf_cdf(z):
    return 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))


CDFS = {
    "standard_exponential": ((), lambda x: 1 - np.exp(-x), 1.0, 1.0),
    "lognormal": ((0.3, 0.5), lambda x: _erf_cdf((np.log(x) - 0.3) / 0.5),
                  math.exp(0.3 + 0.125), None),
    "laplace": ((1.0, 2.0), lambda x: np.where(x < 1, 0.5 * np.exp((x - 1) / 2),
                                              1 - 0.5 * np.exp(-(x - 1) / 2)), 1.0, 8.0),
    "gumbel": ((0.5, 2.0), lambda x: np.exp(-np.exp(-(x - 0.5) / 2)),
               0.5 + 2 * np.euler_gamma, math.pi ** 2 / 6 * 4),
    "logistic": ((1.0, 0.5), lambda x: 1 / (1 + np.exp(-(x - 1) / 0.5)),
                 1.0, 0.25 * math.pi ** 2 / 3),
    "rayleigh": ((2.0,), lambda x: 1 - np.exp(-x * x / 8), 2 * math.sqrt(math.pi / 2),
                 (4 - math.pi) / 2 * 4),
    "weibull": ((1.5,), lambda x: 1 - np.exp(-x ** 1.5), math.gamma(1 + 1 / 1.5), None),
    "pareto": ((3.0,), lambda x: 1 - (1 + x) ** -3.0, 0.5, 0.75),
    "power": ((2.5,), lambda x: x ** 2.5, 2.5 / 3.5, None),
    "standard_cauchy": ((), lambda x: 0.5 + np.arctan(x) / math.pi, None, None),
    "wald": ((1.5, 2.0), lambda x: (_erf_cdf(np.sqrt(2.0 / x) * (x / 1.5 - 1)) +
                                    np.exp(2 * 2.0 / 1.5) *
                                    _erf_cdf(-np.sqrt(2.0 / x) * (x / 1.5 + 1))),
             1.5, 1.5 ** 3 / 2.0),
    "standard_gamma": ((0.5,), lambda x: np.vectorize(math.erf)(np.sqrt(x)), 0.5, 0.5),
    "gamma": ((2.0, 1.5), lambda x: 1 - np.exp(-x / 1.5) * (1 + x / 1.5), 3.0, 4.5),
    "chisquare": ((2.0,), lambda x: 1 - np.exp(-x / 2), 2.0, 4.0),
    "beta": ((2.0, 1.0), lambda x: x * x, 2 / 3, 1 / 18),
    "triangular": ((-1.0, 0.5, 2.0), lambda x: np.where(
        x <= 0.5, (x + 1) ** 2 / (3 * 1.5), 1 - (2 - x) ** 2 / (3 * 1.5)), 0.5, None),
}


@pytest.mark.parametrize("name", sorted(CDFS))
def test_random_distributions(name):
    args, cdf, mean, var = CDFS[name]
    cukit.random.seed(1234)
    d = getattr(cukit.random, name)(*args, size=N)
    assert d.dtype == np.float64 and d.shape == (N,)
    x = np.sort(d.get())
    assert np.isfinite(x).all()
    f = cdf(x)
    ks = max(np.max(np.arange(1, N + 1) / N - f), np.max(f - np.arange(N) / N))
    assert ks < 1.8 / math.sqrt(N), ks                     # the KS test at p ~ 0.003
    if mean is not None:
        assert abs(x.mean() - mean) < 6 * math.sqrt((var or x.var()) / N)
    if var is not None:
        assert abs(x.var() / var - 1) < 0.1
    f32 = getattr(cukit.random, name)(*args, size=(3, 4), dtype=np.float32)
    assert f32.dtype == np.float32 and f32.shape == (3, 4)
    cukit.random.seed(7)
    a = getattr(cukit.random, name)(*args, size=5).get()
    cukit.random.seed(7)
    np.testing.assert_array_equal(getattr(cukit.random, name)(*args, size=5).get(), a)


def test_random_parameters_broadcast_and_errors():
    loc = D(np.array([0.0, 100.0, -100.0]))
    d = cukit.random.laplace(loc, 1.0, size=(1000, 3)).get()
    np.testing.assert_allclose(d.mean(axis=0), [0, 100, -100], atol=0.3)
    assert cukit.random.gumbel(loc).shape == (3,)
    assert cukit.random.rayleigh().shape == ()
    with pytest.raises(ValueError, match="shape mismatch"):
        cukit.random.laplace(loc, size=(4,))
    for call, msg in ((lambda: cukit.random.weibull(-1.0), "a < 0"),
                      (lambda: cukit.random.pareto(0.0), "a <= 0"),
                      (lambda: cukit.random.power(D(np.array([1.0, -1.0]))), "a <= 0"),
                      (lambda: cukit.random.lognormal(0, -1.0), "sigma < 0"),
                      (lambda: cukit.random.wald(0.0, 1.0), "mean <= 0"),
                      (lambda: cukit.random.wald(1.0, 0.0), "scale <= 0"),
                      (lambda: cukit.random.triangular(1.0, 0.0, 2.0), "left > mode"),
                      (lambda: cukit.random.triangular(0.0, 3.0, 2.0), "mode > right"),
                      (lambda: cukit.random.triangular(1.0, 1.0, 1.0), "left == right"),
                      (lambda: cukit.random.standard_gamma(-1.0), "shape < 0"),
                      (lambda: cukit.random.gamma(1.0, -1.0), "scale < 0"),
                      (lambda: cukit.random.chisquare(0.0), "df <= 0"),
                      (lambda: cukit.random.beta(1.0, D(np.array([1.0, 0.0]))), "b <= 0")):
        with pytest.raises(ValueError, match=msg):
            call()
    assert (cukit.random.weibull(0.0, size=4).get() == 0).all()
    assert (cukit.random.standard_gamma(0.0, size=4).get() == 0).all()
    shapes = D(np.array([0.3, 1.0, 7.0]))
    g = cukit.random.standard_gamma(shapes, size=(4000, 3)).get()
    np.testing.assert_allclose(g.mean(axis=0), [0.3, 1.0, 7.0], rtol=0.08)
    assert cukit.random.beta(2.0, 2.0, size=(0, 3)).shape == (0, 3)


def test_pickle_of_new_results_round_trips(rng):
    h = rand(rng, (3, 4))
    got = pickle.loads(pickle.dumps(cukit.unique_all(D(np.round(h)))))
    assert got.values.shape == np.unique_all(np.round(h)).values.shape


def test_random_poisson_module_function():
    cukit.random.seed(3)
    x = cukit.random.poisson(4.0, size=N)
    assert x.dtype == np.int64 and x.shape == (N,)
    h = x.get()
    assert abs(h.mean() - 4.0) < 6 * math.sqrt(4.0 / N) and abs(h.var() / 4.0 - 1) < 0.1


# ------------------------------------------------------------------ Array methods

def test_array_mT_trace(rng):
    d, h = strided(rng)
    same(d.mT, h.mT)
    assert d.mT.buffer is d.buffer
    for args in ((), (1,), (-1, 1, 2), (0, 2, 0)):  # sums that cancel: 60 eps of all |h|
        close(d.trace(*args), h.trace(*args), atol=1e-13 * np.abs(h).sum())
    i = rand(rng, (4, 4), "i4") % 100
    same(D(i).trace(dtype=np.int8), i.trace(dtype=np.int8))
    out = cukit.empty((), np.float64)
    assert D(h[0]).trace(out=out) is out
    with pytest.raises(ValueError, match="ndim < 2"):
        D(h[0, 0]).mT
    with pytest.raises(ValueError, match="two dimensions"):
        D(h[0, 0]).trace()


def test_array_searchsorted_partition(rng):
    a = np.sort(rng.standard_normal(50))
    v = rng.standard_normal((3, 4))
    for side in ("left", "right"):
        same(D(a).searchsorted(D(v), side), a.searchsorted(v, side))
    u = rng.standard_normal(30)
    order = np.argsort(u)
    same(D(u).searchsorted(D(v), sorter=D(order)), u.searchsorted(v, sorter=order))
    with pytest.raises(ValueError, match="side"):
        D(a).searchsorted(D(v), "middle")
    d, h = strided(rng)
    for kth, axis in ((1, -1), ([0, 2], 0), (-1, 1)):
        p, hp = d.copy(), h.copy()
        assert p.partition(kth, axis=axis) is None
        hp.partition(kth, axis=axis)
        for k in np.atleast_1d(kth):
            np.testing.assert_array_equal(p.get().take([k], axis=axis),
                                          hp.take([k], axis=axis))
        idx = d.argpartition(kth, axis=axis)
        assert idx.dtype == np.int64
        got = np.take_along_axis(h, idx.get(), axis)
        for k in np.atleast_1d(kth):
            np.testing.assert_array_equal(got.take([k], axis=axis), hp.take([k], axis=axis))
    flat = d.argpartition(3, axis=None)
    assert flat.shape == (h.size,)
    assert h.ravel()[flat.get()[3]] == np.partition(h.ravel(), 3)[3]
    with pytest.raises(ValueError, match="out of bounds"):
        d.partition(h.shape[-1])
    with pytest.raises(ValueError, match="out of bounds"):
        d.argpartition([0, -h.shape[0] - 1], axis=0)
    with pytest.raises(ValueError, match="read-only"):
        cukit.broadcast_to(D(a), (2, 50)).partition(1)


def test_array_host_exchange(rng, tmp_path):
    d, h = strided(rng, "f4")
    assert d.tobytes() == h.tobytes()
    assert d.tobytes("F") == h.tobytes("F")
    same(pickle.loads(d.dumps()), np.ascontiguousarray(h))
    path = tmp_path / "a.pkl"
    d.dump(str(path))
    same(pickle.loads(path.read_bytes()), np.ascontiguousarray(h))
    with open(path, "wb") as f:
        d.dump(f)
    same(pickle.loads(path.read_bytes()), np.ascontiguousarray(h))
    raw = tmp_path / "a.bin"
    d.tofile(str(raw))
    np.testing.assert_array_equal(np.fromfile(raw, np.float32), h.ravel())
    d.tofile(str(raw), sep=",")
    np.testing.assert_array_equal(np.fromfile(raw, np.float32, sep=","), h.ravel())
    assert d.to_device(d.device) is d
    assert d.to_device(0) is d
    empty = D(np.zeros((0, 3)))
    assert empty.tobytes() == b""


def test_array_flat_and_setflags(rng):
    d, h = strided(rng)
    same(d.flat, h.flat[:])
    c = D(h.copy())
    assert c.flat.buffer is c.buffer and not c.flat.flags.writeable
    same(D(h[0, 0]).flat, h[0, 0].ravel())
    v = D(h[0, 0, 0].copy())
    assert v.flat.buffer is v.buffer and v.flat.shape == (1,)
    with pytest.raises(ValueError, match="read-only"):
        c.flat[3] = 1.0
    same(c, h)                                        # nothing was written
    c.setflags(write=False)
    assert not c.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        c[0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        c.fill(2.0)
    with pytest.raises(ValueError, match="read-only"):
        cukit.add(c, 1.0, out=c)
    assert not c[1:].flags.writeable                  # its views too
    c.setflags(write=True)
    c[0] = 1.0
    assert c.flags.writeable and float(c[0, 0, 0]) == 1.0
    b = cukit.broadcast_to(D(h[0, 0]), (3, 4))
    with pytest.raises(ValueError, match="WRITEABLE"):
        b.setflags(write=True)
    with pytest.raises(ValueError, match="WRITEBACKIFCOPY"):
        c.setflags(uic=True)
    c.setflags(align=True)
