"""Math and statistics as numpy defines them: round, isclose, diff, the nan-reductions,
median and quantiles, bincount and histogram, average, cov, corrcoef, einsum, and the
Array methods (sort in place, argsort, round, clip, repeat, cumprod)."""
import numpy as np
import pytest

import cukit
from test_shapes import rand, same, strided

pytestmark = pytest.mark.gpu

FLOATS = ["f2", "f4", "f8", "c8", "c16"]
INTS = ["?", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"]


def close(d, h, rtol=1e-6, atol=1e-9):
    assert isinstance(d, cukit.Array)
    assert d.dtype == np.asarray(h).dtype, (d.dtype, np.asarray(h).dtype)
    assert tuple(d.shape) == np.shape(h), (d.shape, np.shape(h))
    np.testing.assert_allclose(d.get(), h, rtol=rtol, atol=atol, equal_nan=True)


# ------------------------------------------------------------------ round


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8", "c8", "c16", "i1", "u2", "i4", "i8"])
@pytest.mark.parametrize("decimals", [0, 1, 3, -1, -2])
def test_round(rng, dtype, decimals):
    h = rand(rng, (5, 7), dtype)
    if np.dtype(dtype).kind in "fc":
        h = (h * 1000).astype(dtype)
    d = cukit.to_device(h)
    want = np.round(h, decimals)
    same(cukit.round(d, decimals), want)
    same(cukit.around(d, decimals), want)
    same(d.round(decimals), want)
    ds, hs = d[::2, ::-3], h[::2, ::-3]
    same(ds.round(decimals), hs.round(decimals))


def test_round_ties_to_even_and_out(rng):
    h = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.25, 0.35])
    d = cukit.to_device(h)
    same(cukit.round(d), np.round(h))
    same(cukit.round(d, 1), np.round(h, 1))
    out = cukit.empty(7)
    assert cukit.round(d, 1, out=out) is out
    same(out, np.round(h, 1))
    with pytest.raises(TypeError):
        cukit.round([1.5])
    b = rng.random(9) < 0.5
    same(cukit.round(cukit.to_device(b)), np.round(b))


# ------------------------------------------------------------------ isclose, allclose, array_equal


@pytest.mark.parametrize("dtype", ["f4", "f8", "c8", "i4"])
def test_isclose(rng, dtype):
    a = rand(rng, (40,), dtype)
    b = a.copy()
    b[::3] = (b[::3] * (1 + 1e-4)).astype(dtype) if a.dtype.kind != "i" else b[::3] + 1
    if a.dtype.kind in "fc":
        a[1], b[1] = np.inf, np.inf
        a[2], b[2] = np.nan, np.nan
        a[4], b[4] = np.inf, -np.inf
        b[5] = np.nan
    da, db = cukit.to_device(a), cukit.to_device(b)
    for kw in ({}, {"rtol": 1e-3}, {"atol": 1.0}, {"equal_nan": True}):
        same(cukit.isclose(da, db, **kw), np.isclose(a, b, **kw))
        assert cukit.allclose(da, db, **kw) == np.allclose(a, b, **kw)
    same(cukit.isclose(da, 0.5), np.isclose(a, 0.5))
    assert cukit.array_equal(da, da) == np.array_equal(a, a)
    assert cukit.array_equal(da, da, equal_nan=True) == np.array_equal(a, a, equal_nan=True)
    assert not cukit.array_equal(da, db)
    assert not cukit.array_equal(da, da[:3])
    with pytest.raises(TypeError):
        cukit.isclose(a, b)


# ------------------------------------------------------------------ diff, ediff1d


@pytest.mark.parametrize("dtype", ["?", "i2", "u4", "f4", "c16"])
def test_diff(rng, dtype):
    d, h = strided(rng, dtype)
    for n in (0, 1, 2, 5):
        for axis in (-1, 0, 1):
            same(cukit.diff(d, n, axis), np.diff(h, n, axis))
    v = rand(rng, (6,), dtype)
    dv = cukit.to_device(v)
    same(cukit.diff(dv, prepend=cukit.to_device(v[:2]), append=cukit.to_device(v[-1:])),
         np.diff(v, prepend=v[:2], append=v[-1:]))
    if dtype == "?":  # numpy's ediff1d refuses bools
        with pytest.raises(TypeError):
            cukit.ediff1d(d)
    else:
        same(cukit.ediff1d(d), np.ediff1d(h))


def test_diff_errors_and_ediff1d_ends(rng):
    v = rand(rng, (5,), "i4")
    d = cukit.to_device(v)
    with pytest.raises(ValueError):
        cukit.diff(d, -1)
    with pytest.raises(ValueError):
        cukit.diff(cukit.to_device(np.float32(1)))
    same(cukit.diff(d, prepend=0, append=[7, 8]), np.diff(v, prepend=0, append=[7, 8]))
    same(cukit.ediff1d(d, to_end=[1, 2], to_begin=-5), np.ediff1d(v, to_end=[1, 2], to_begin=-5))
    with pytest.raises(TypeError):
        cukit.ediff1d(d, to_begin=1.5)


# ------------------------------------------------------------------ nan-reductions, prod, cumprod


@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_nan_reductions(rng, dtype):
    h = rand(rng, (6, 7), dtype)
    h[rng.random(h.shape) < 0.3] = np.nan
    h[2] = np.nan
    d = cukit.to_device(h)
    # a mean of n <= 42 terms that cancels to near 0 is compared at the scale of its terms:
    # each order of summing is within n * eps(float32) * max|x| < 1e-5 * max|x| of exact
    mean_atol = 1e-5 * np.nanmax(np.abs(h))
    for axis in (None, 0, 1):
        # a sum that cancels to near 0 is compared at the scale of its terms
        scale = np.nansum(np.abs(h), axis=axis).real if dtype[0] in "fc" else 0
        close(cukit.nansum(d, axis=axis), np.nansum(h, axis=axis), rtol=1e-5,
              atol=np.max(scale, initial=0) * 1e-6)
        close(cukit.nanmean(d[:, ::-1], axis=axis),
              np.nanmean(h[:, ::-1], axis=axis) if axis != 1 else
              np.array([np.nanmean(r) if not np.isnan(r).all() else np.nan
                        for r in h[:, ::-1]], dtype), rtol=1e-5, atol=mean_atol)
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanmax(h, axis=1)
    close(cukit.nanmax(d, axis=1), want)
    close(cukit.nanmean(d, axis=0, keepdims=True), np.nanmean(h, axis=0, keepdims=True), 1e-5,
          mean_atol)
    close(cukit.nanmean(cukit.to_device(np.arange(5, dtype="i4"))), np.nanmean(np.arange(5, dtype="i4")))


@pytest.mark.parametrize("dtype", ["i4", "u2", "f4", "f8", "c8"])
def test_prod_and_cumprod_methods(rng, dtype):
    h = rand(rng, (3, 4), dtype)
    if h.dtype.kind in "iu":
        h = (h % 3 + 1).astype(dtype)
    d = cukit.to_device(h)
    close(d.prod(axis=1), h.prod(axis=1), rtol=1e-5)
    close(cukit.prod(d), np.prod(h), rtol=1e-5)
    close(d.cumprod(axis=0), h.cumprod(axis=0), rtol=1e-5)
    close(cukit.cumprod(d[:, ::-1]), np.cumprod(h[:, ::-1]), rtol=1e-5)


# ------------------------------------------------------------------ median, quantile, percentile


@pytest.mark.parametrize("dtype", ["i2", "u1", "f2", "f4", "f8"])
def test_median(rng, dtype):
    for shape in ((7,), (6,), (4, 5), (3, 4, 6)):
        h = rand(rng, shape, dtype)
        d = cukit.to_device(h)
        for axis in [None] + list(range(len(shape))):
            close(cukit.median(d, axis=axis), np.median(h, axis=axis), rtol=1e-3 if dtype == "f2" else 1e-6)
        close(cukit.median(d, axis=-1, keepdims=True), np.median(h, axis=-1, keepdims=True),
              rtol=1e-3)
    d, h = strided(rng, "f8")
    close(cukit.median(d, axis=(0, 2)), np.median(h, axis=(0, 2)))


def test_median_and_quantile_with_nan(rng):
    h = rand(rng, (4, 9))
    h[1, 3] = np.nan
    d = cukit.to_device(h)
    close(cukit.median(d, axis=1), np.median(h, axis=1))
    close(cukit.quantile(d, 0.3, axis=1), np.quantile(h, 0.3, axis=1))


def test_median_and_quantile_of_an_empty_axis_as_numpy():
    h = np.zeros((0, 3))
    d = cukit.to_device(h)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        got = cukit.median(d, axis=0)
    with pytest.warns(RuntimeWarning):
        want = np.median(h, axis=0)
    close(got, want)
    for f in (cukit.quantile, np.quantile):
        with pytest.raises(IndexError, match="out of bounds"):
            f(h if f is np.quantile else d, 0.5, axis=0)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
@pytest.mark.parametrize("dtype", ["i4", "f2", "f4", "f8"])
def test_quantile_and_percentile(rng, method, dtype):
    h = rand(rng, (5, 11), dtype)
    if h.dtype.kind == "i":  # numpy subtracts integers before it widens them (overflow)
        h = (h % 100000).astype(dtype)
    d = cukit.to_device(h)
    qs = [0.0, 0.1, 0.25, 0.5, 0.73, 1.0]
    for axis in (None, 0, 1, -1):
        for q in (0.37, qs):
            # numpy's own arithmetic, step by step: the same bits
            same(cukit.quantile(d, q, axis=axis, method=method),
                 np.quantile(h, q, axis=axis, method=method))
        close(cukit.percentile(d, 42, axis=axis, method=method),
              np.percentile(h, 42, axis=axis, method=method), rtol=1e-5)
    for axis in (None, 1):
        close(cukit.quantile(d, qs, axis=axis, method=method, keepdims=True),
              np.quantile(h, qs, axis=axis, method=method, keepdims=True), rtol=1e-5)


def test_quantile_errors(rng):
    d = cukit.to_device(rand(rng, (5,)))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        cukit.quantile(d, 1.5)
    with pytest.raises(ValueError, match=r"\[0, 100\]"):
        cukit.percentile(d, -1)
    with pytest.raises(ValueError):
        cukit.quantile(d, 0.5, method="nonsense")
    with pytest.raises(np.exceptions.AxisError):
        cukit.median(d, axis=1)


# ------------------------------------------------------------------ bincount, histogram


@pytest.mark.parametrize("dtype", ["?", "i1", "u1", "i2", "u4", "i4", "i8"])
def test_bincount(rng, dtype):
    hi = 2 if dtype == "?" else 100
    h = rng.integers(0, hi, size=5000).astype(dtype)
    d = cukit.to_device(h)
    same(cukit.bincount(d), np.bincount(h))
    same(cukit.bincount(d[::-3]), np.bincount(h[::-3]))
    same(cukit.bincount(d, minlength=300), np.bincount(h, minlength=300))
    w = rand(rng, (5000,), "f4")
    close(cukit.bincount(d, weights=cukit.to_device(w)), np.bincount(h, weights=w), rtol=1e-5)


def test_bincount_edges_and_errors(rng):
    same(cukit.bincount(cukit.zeros(0, "i4")), np.bincount(np.zeros(0, "i4")))
    same(cukit.bincount(cukit.zeros(0, "i4"), minlength=3), np.bincount(np.zeros(0, "i4"), minlength=3))
    with pytest.raises(ValueError, match="negative"):
        cukit.bincount(cukit.to_device(np.array([1, -1, 2])))
    with pytest.raises(TypeError):
        cukit.bincount(cukit.to_device(np.array([1.0, 2.0])))
    with pytest.raises(TypeError):
        cukit.bincount(cukit.to_device(np.array([1, 2], "u8")))
    with pytest.raises(ValueError):
        cukit.bincount(cukit.to_device(np.array([[1, 2]])))
    with pytest.raises(ValueError):
        cukit.bincount(cukit.to_device(np.array([1, 2])), minlength=-1)
    with pytest.raises(ValueError):
        cukit.bincount(cukit.to_device(np.array([1, 2])), weights=cukit.to_device(np.ones(3)))
    with pytest.raises(TypeError):
        cukit.bincount(np.array([1, 2]))


@pytest.mark.parametrize("dtype", ["i4", "u1", "f4", "f8"])
@pytest.mark.parametrize("bins", [1, 10, 37])
def test_histogram(rng, dtype, bins):
    h = rand(rng, (40, 50), dtype)
    d = cukit.to_device(h)
    for kw in ({}, {"range": (-1.0, 0.5)}, {"density": True}):
        c, e = cukit.histogram(d, bins, **kw)
        wc, we = np.histogram(h, bins, **kw)
        close(c, wc)
        close(e, we)
    w = rand(rng, (40, 50), "f8")
    c, _ = cukit.histogram(d, bins, weights=cukit.to_device(w))
    close(c, np.histogram(h, bins, weights=w)[0], rtol=1e-9)
    c, e = cukit.histogram(d[::3, ::-2], bins)
    wc, we = np.histogram(h[::3, ::-2], bins)
    close(c, wc)
    close(e, we)


def test_histogram_explicit_edges_and_errors(rng):
    h = rand(rng, (1000,), "f4")
    d = cukit.to_device(h)
    edges = np.array([-3.0, -1.0, -0.5, 0.0, 0.1, 2.0])
    c, e = cukit.histogram(d, edges)
    wc, we = np.histogram(h, edges)
    close(c, wc)
    close(e, we)
    c, _ = cukit.histogram(d, cukit.to_device(edges))
    close(c, wc)
    same(cukit.histogram(cukit.zeros(0), 3)[0], np.histogram(np.zeros(0), 3)[0])
    with pytest.raises(ValueError, match="monotonically"):
        cukit.histogram(d, np.array([0.0, 1.0, 0.5]))
    with pytest.raises(ValueError):
        cukit.histogram(d, 0)
    with pytest.raises(ValueError):
        cukit.histogram(d, 3, range=(1.0, 0.0))
    bad = h.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        cukit.histogram(cukit.to_device(bad))


# ------------------------------------------------------------------ average, cov, corrcoef


@pytest.mark.parametrize("dtype", ["i4", "f4", "f8", "c16"])
def test_average(rng, dtype):
    h = rand(rng, (4, 5), dtype)
    d = cukit.to_device(h)
    w = rng.random((4, 5)) + 0.1
    dw = cukit.to_device(w)
    # an average of n <= 20 terms that cancels to near 0 is compared at the scale of its
    # terms: each order of summing is within n * eps(float32) * max|x| < 1e-5 * max|x|
    atol = 1e-5 * np.abs(h).max()
    for axis in (None, 0, 1):
        close(cukit.average(d, axis=axis), np.average(h, axis=axis), rtol=1e-5, atol=atol)
        close(cukit.average(d, axis=axis, weights=dw), np.average(h, axis=axis, weights=w),
              rtol=1e-5, atol=atol)
    close(cukit.average(d, axis=1, weights=cukit.to_device(w[0])),
          np.average(h, axis=1, weights=w[0]), rtol=1e-5, atol=atol)
    avg, scl = cukit.average(d, axis=0, weights=dw, returned=True)
    wavg, wscl = np.average(h, axis=0, weights=w, returned=True)
    close(avg, wavg, rtol=1e-5, atol=atol)
    close(scl, wscl)


def test_average_errors(rng):
    d = cukit.to_device(rand(rng, (3, 4)))
    with pytest.raises(ZeroDivisionError):
        cukit.average(d, weights=cukit.zeros((3, 4)))
    with pytest.raises(TypeError):
        cukit.average(d, weights=cukit.ones(4))
    with pytest.raises(ValueError):
        cukit.average(d, axis=1, weights=cukit.ones(3))


@pytest.mark.parametrize("dtype", ["i4", "f4", "f8", "c8"])
def test_cov_corrcoef(rng, dtype):
    h = rand(rng, (3, 20), dtype)
    d = cukit.to_device(h)
    y = rand(rng, (2, 20), dtype)
    close(cukit.cov(d), np.cov(h), rtol=1e-4, atol=1e-6)
    close(cukit.cov(d, bias=True), np.cov(h, bias=True), rtol=1e-4, atol=1e-6)
    close(cukit.cov(d, ddof=3), np.cov(h, ddof=3), rtol=1e-4, atol=1e-6)
    close(cukit.cov(d.T, rowvar=False), np.cov(h.T, rowvar=False), rtol=1e-4, atol=1e-6)
    close(cukit.cov(d, cukit.to_device(y)), np.cov(h, y), rtol=1e-4, atol=1e-6)
    close(cukit.cov(d[0]), np.cov(h[0]), rtol=1e-4, atol=1e-6)
    close(cukit.corrcoef(d), np.corrcoef(h), rtol=1e-4, atol=1e-6)
    close(cukit.corrcoef(d, cukit.to_device(y)), np.corrcoef(h, y), rtol=1e-4, atol=1e-6)


def test_cov_errors(rng):
    with pytest.raises(ValueError):
        cukit.cov(cukit.to_device(rand(rng, (2, 2, 2))))
    with pytest.raises(NotImplementedError):
        cukit.cov(cukit.to_device(rand(rng, (2, 3))), fweights=cukit.ones(3))


# ------------------------------------------------------------------ einsum


EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ijk,jil->kl", [(3, 4, 2), (4, 3, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("i...->...", [(3, 2, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("iij->j", [(3, 3, 2)]),
    ("ab,cd->abcd", [(2, 3), (2, 2)]),
]


@pytest.mark.parametrize("dtype", ["f4", "f8", "c8", "i4", "i8"])
@pytest.mark.parametrize("spec,shapes", EINSUMS)
def test_einsum(rng, dtype, spec, shapes):
    hs = [rand(rng, s, dtype) for s in shapes]
    if np.dtype(dtype).kind in "iu":
        hs = [(h % 7).astype(dtype) for h in hs]
    ds = [cukit.to_device(h) for h in hs]
    close(cukit.einsum(spec, *ds), np.einsum(spec, *hs), rtol=1e-4, atol=1e-5)


def test_einsum_strided_and_errors(rng):
    d, h = strided(rng, "f8")
    close(cukit.einsum("ijk->kj", d), np.einsum("ijk->kj", h))
    close(cukit.einsum("ijk,ijk->i", d, d), np.einsum("ijk,ijk->i", h, h))
    a = cukit.to_device(rand(rng, (3, 4)))
    with pytest.raises(ValueError):
        cukit.einsum("ij,jk", a)
    with pytest.raises(ValueError):
        cukit.einsum("ij,jk", a, a)           # 4 against 3
    with pytest.raises(ValueError):
        cukit.einsum("ijk", a)
    with pytest.raises(ValueError):
        cukit.einsum("ij->ii", a)
    with pytest.raises(ValueError):
        cukit.einsum("ij->k", a)
    with pytest.raises(TypeError):
        cukit.einsum("ij->i", a, dtype="f4")          # numpy's casting='safe'
    # a float32 sum of 4 terms may cancel to near 0: within 4 eps(float32) of sum |terms|
    close(cukit.einsum("ij->i", a, dtype="f4", casting="same_kind"),
          np.einsum("ij->i", a.get(), dtype="f4", casting="same_kind"), rtol=1e-5,
          atol=1e-6 * np.abs(a.get()).sum(1).max())
    out = cukit.empty(3)
    assert cukit.einsum("ij->i", a, out=out) is out
    close(out, a.get().sum(1))
    b = rng.random((3, 4)) < 0.5
    same(cukit.einsum("ij,kj->ik", cukit.to_device(b), cukit.to_device(b)),
         np.einsum("ij,kj->ik", b, b))


# ------------------------------------------------------------------ dtype predicates, parts


def test_iscomplexobj_isrealobj_real_imag_conj(rng):
    c = cukit.to_device(rand(rng, (3,), "c8"))
    r = cukit.to_device(rand(rng, (3,), "f4"))
    assert cukit.iscomplexobj(c) and not cukit.isrealobj(c)
    assert cukit.isrealobj(r) and not cukit.iscomplexobj(r)
    assert cukit.iscomplexobj(1j) and cukit.isrealobj([1.0])
    same(cukit.real(c), c.get().real)
    same(cukit.imag(c), c.get().imag)
    same(cukit.conj(c), np.conj(c.get()))
    same(cukit.imag(r), np.imag(r.get()))


# ------------------------------------------------------------------ Array methods


@pytest.mark.parametrize("dtype", ["i1", "u2", "i8", "f2", "f4", "f8"])
def test_sort_in_place_and_argsort(rng, dtype):
    h = rand(rng, (5, 40), dtype)
    for axis in (-1, 0):
        d = cukit.to_device(h)
        assert d.sort(axis=axis) is None
        same(d, np.sort(h, axis=axis))
        same(cukit.to_device(h).argsort(axis=axis), np.argsort(h, axis=axis, kind="stable"))
    same(cukit.to_device(h).argsort(axis=None), np.argsort(h, axis=None, kind="stable"))
    big = cukit.to_device(h)
    view = big[:, ::2]
    view.sort()
    want = h.copy()
    want[:, ::2] = np.sort(h[:, ::2])
    same(big, want)


def test_sort_method_errors(rng):
    d = cukit.to_device(rand(rng, (3, 4)))
    with pytest.raises(ValueError):
        d.sort(axis=None)
    with pytest.raises(ValueError):
        cukit.to_device(np.float32(1)).sort()
    with pytest.raises(ValueError):
        cukit.broadcast_to(d, (2, 3, 4)).sort()
    with pytest.raises(ValueError):
        d.sort(kind="bogus")


@pytest.mark.parametrize("dtype", ["i2", "f4", "f8"])
def test_clip_method(rng, dtype):
    d, h = strided(rng, dtype)
    same(d.clip(-1, 1), h.clip(-1, 1))
    same(d.clip(None, 0), h.clip(None, 0))
    same(d.clip(min=0), h.clip(min=0))
    out = cukit.empty(d.shape, dtype)
    assert d.clip(0, 1, out=out) is out
    same(out, h.clip(0, 1))
    with pytest.raises(ValueError):
        d.clip()
    same(cukit.clip(d, min=-0.5), np.clip(h, -0.5, None))
    same(cukit.clip(d, max=0.5), np.clip(h, None, 0.5))
    same(cukit.clip(d, -1, max=1), np.clip(h, -1, 1))
    with pytest.raises(ValueError):
        cukit.clip(d)
    with pytest.raises(ValueError):
        cukit.clip(d, 0, min=0)
