"""Math and statistics as numpy defines them: round, isclose, diff, the nan-reductions,
median and quantiles, bincount and histogram, average, cov, corrcoef, einsum, and the
Array methods (sort in place, argsort, round, clip, repeat, cumprod)."""
import warnings

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


METHODS = ["inverted_cdf", "averaged_inverted_cdf", "closest_observation",
           "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
           "normal_unbiased", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("method", METHODS)
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


# q as numpy takes it: Python numbers (weak in numpy's promotion), numpy scalars and
# arrays of float32 or float64, integer q (numpy's integer virtual indices), and 0 and 1
Q_FORMS = [0, 1, 0.0, 1.0, 0.37, [0.0, 0.1, 0.5, 0.77, 1.0], np.float32(0.3),
           np.array([0.2, 1.0], np.float32), [0, 1], np.float64(0.61)]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", ["i4", "f4", "f8"])
def test_quantile_methods_as_numpy(rng, method, dtype):
    # every result is numpy's own arithmetic on the same elements (the same virtual
    # indices, gamma and interpolation), so it is compared bit for bit
    h = rand(rng, (4, 6, 5), dtype)
    if h.dtype.kind == "i":  # numpy subtracts integers before it widens them (overflow)
        h = (h % 100000).astype(dtype)
    h[1, 2, 3] = h[0, 0, 0]                           # a tie
    d = cukit.to_device(h)
    for q in Q_FORMS:
        for axis in (None, 1, -1, (0, 2)):
            for keepdims in (False, True):
                same(cukit.quantile(d, q, axis=axis, method=method, keepdims=keepdims),
                     np.asarray(np.quantile(h, q, axis=axis, method=method,
                                            keepdims=keepdims)))
    qs = [0, 13.5, 50, 100]
    same(cukit.percentile(d, qs, axis=(2, 1), method=method),
         np.percentile(h, qs, axis=(2, 1), method=method))
    want = np.quantile(h, [0.3, 0.8], axis=0, method=method)
    out = cukit.to_device(np.full(want.shape, -7, want.dtype))
    assert cukit.quantile(d, [0.3, 0.8], axis=0, method=method, out=out) is out
    same(out, want)
    if dtype != "i4":
        hn = h.copy()
        hn[2, 1, :] = np.nan                          # NaN rows give NaN, as numpy's
        same(cukit.quantile(cukit.to_device(hn), [0.2, 0.9], axis=2, method=method),
             np.quantile(hn, [0.2, 0.9], axis=2, method=method))


@pytest.mark.parametrize("dtype", ["i4", "f4", "f8"])
def test_quantile_weights_as_numpy(rng, dtype):
    h = rand(rng, (4, 6, 5), dtype)
    d = cukit.to_device(h)
    # weights of few binary digits: their sums (so the cumulative weights numpy compares
    # with q, ties included) are exact in any order of summation
    counts = rng.integers(0, 4, h.shape)
    counts[..., 0] += 1
    counts[:, 1, :] += 1                              # no row of zero weight on any axis
    counts[0, 0, :] = 0                               # zero weights (numpy skips them)
    for q in (0.0, 1.0, 0.37, [0.0, 0.25, 0.5, 1.0], np.float32(0.3)):
        for axis in (None, 1, (0, 2)):
            same(cukit.quantile(d, q, axis=axis, method="inverted_cdf",
                                weights=cukit.to_device(counts)),
                 np.asarray(np.quantile(h, q, axis=axis, method="inverted_cdf",
                                        weights=counts)))
        w = rng.integers(1, 5, 6) * 0.5               # one weight per position on axis
        same(cukit.quantile(d, q, axis=1, method="inverted_cdf",
                            weights=cukit.to_device(w)),
             np.asarray(np.quantile(h, q, axis=1, method="inverted_cdf", weights=w)))
    w = rng.integers(1, 5, (5, 4)) * 0.5              # in the order the axes are given
    same(cukit.percentile(d, [10, 90], axis=(2, 0), method="inverted_cdf",
                          weights=cukit.to_device(w)),
         np.percentile(h, [10, 90], axis=(2, 0), method="inverted_cdf", weights=w))


def test_quantile_errors(rng):
    d = cukit.to_device(rand(rng, (5,)))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        cukit.quantile(d, 1.5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        cukit.quantile(d, [0.5, np.nan])
    with pytest.raises(ValueError, match=r"\[0, 100\]"):
        cukit.percentile(d, -1)
    for f in (np.quantile, cukit.quantile):
        x = d.get() if f is np.quantile else d

        def W(v):
            return v if f is np.quantile else cukit.to_device(v)

        with pytest.raises(ValueError, match="'nonsense' is not a valid method"):
            f(x, 0.5, method="nonsense")
        with pytest.raises(ValueError, match="q must be a scalar or 1d"):
            f(x, [[[0.5]]])
        with pytest.raises(ValueError, match="Only method 'inverted_cdf' supports weights"):
            f(x, 0.5, weights=W(np.ones(5)))
        with pytest.raises(ValueError, match="Weights must be non-negative"):
            f(x, 0.5, method="inverted_cdf", weights=W(-np.ones(5)))
        with pytest.raises(ValueError, match="Weights included NaN, inf or were all zero"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # numpy's 0 / 0
                f(x, 0.5, method="inverted_cdf", weights=W(np.zeros(5)))
        x2 = x.reshape(1, 5)
        with pytest.raises(TypeError, match="Axis must be specified"):
            f(x2, 0.5, method="inverted_cdf", weights=W(np.ones(5)))
        with pytest.raises(ValueError, match="Shape of weights must be consistent"):
            f(x2, 0.5, axis=1, method="inverted_cdf", weights=W(np.ones(4)))
    with pytest.raises(TypeError, match="real numbers"):
        cukit.quantile(d.astype(np.complex128), 0.5)
    with pytest.raises(TypeError, match="cukit.asarray"):  # weights are cukit arrays
        cukit.quantile(d, 0.5, method="inverted_cdf", weights=np.ones(5))
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


HIST_RULES = ["auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"]


def rule_ratio(x, rule, span):
    """numpy's span / width for a rule, in float64 from public numpy: where it sits on an
    integer, sums of the statistics taken in another order may round the bin count
    either way."""
    x = x.astype(np.float64).ravel()
    n = x.size
    sd = x.std()
    sqrt_w, sturges_w = span / np.sqrt(n), span / (np.log2(n) + 1)
    fd_w = 2 * np.subtract(*np.percentile(x, [75, 25])) * n ** (-1 / 3)
    width = {"sqrt": sqrt_w, "sturges": sturges_w, "rice": span / (2 * n ** (1 / 3)),
             "scott": (24 * np.pi ** 0.5 / n) ** (1 / 3) * sd, "fd": fd_w,
             "auto": min(max(fd_w, sqrt_w / 2), sturges_w)}.get(rule)
    if rule == "doane":
        sg1 = np.sqrt(6 * (n - 2) / ((n + 1) * (n + 3)))
        g1 = np.mean(((x - x.mean()) / sd) ** 3)
        width = (x.max() - x.min()) / (1 + np.log2(n) + np.log2(1 + abs(g1) / sg1))
    return span / width


@pytest.mark.parametrize("dtype,rule", [(t, r) for t in ("f4", "f8", "i4", "u1")
                                        for r in HIST_RULES
                                        if r != "stone" or t[0] == "f"])
def test_histogram_bin_rules(rng, dtype, rule):
    # skewed data (doane reads the skewness); 'stone' on normal floats only, where no two
    # candidate counts tie and the best count is not the last candidate
    h = rand(rng, (30, 40), "f8") ** (1 if rule == "stone" else 3) * 4 if dtype[0] == "f" else \
        rng.integers(-500, 500, (30, 40)) if dtype == "i4" else rng.integers(0, 256, (30, 40))
    h = h.astype(dtype)
    d = cukit.to_device(h)
    for dd, hh, kw in ((d, h, {}), (d[::2, ::-3], h[::2, ::-3], {}),
                       (d, h, {"range": (-1.5, 40.0)})):
        c, e = cukit.histogram(dd, rule, **kw)
        we = np.histogram_bin_edges(hh, rule, **kw)
        if len(e) != len(we):
            lo, hi = we[0], we[-1]
            x = hh[(hh >= lo) & (hh <= hi)] if kw else hh
            r = rule_ratio(x, rule, float(hi) - float(lo))
            assert rule != "stone" and abs(len(e) - len(we)) == 1, (len(e), len(we))
            assert abs(r - np.round(r)) <= 1e-4 * r, (len(e), len(we), r)
            we = np.histogram_bin_edges(hh, len(e) - 1, range=(lo, hi))
        close(e, we, rtol=0, atol=0)
        close(cukit.histogram_bin_edges(dd, rule, **kw), we, rtol=0, atol=0)
        close(c, np.histogram(hh, we)[0])


def test_histogram_bin_rules_reduce_the_extremes_once(rng, monkeypatch):
    # the range of the bins and the rule's span are the same smallest and largest values:
    # one reduction (and one read), not one for each
    h = rand(rng, (500,), "f8")
    calls = []
    real_min = cukit._stats._cukit.min

    def counting_min(*args, **kwargs):
        calls.append(1)
        return real_min(*args, **kwargs)

    monkeypatch.setattr(cukit._stats._cukit, "min", counting_min)
    for rule in ("sturges", "sqrt", "rice"):
        calls.clear()
        close(cukit.histogram_bin_edges(cukit.to_device(h), rule),
              np.histogram_bin_edges(h, rule), rtol=0, atol=0)
        assert len(calls) == 1, (rule, len(calls))


def test_histogram_bin_rules_edge_cases(rng):
    # no data, no spread, too few values for doane, no data in range: numpy's one bin
    cases = [np.zeros(0), np.full(10, 3.0), np.full(5, 7, np.int32), np.array([1.0, 2.0]),
             rand(rng, (50,), "f4"), rng.random(20) < 0.5]
    for h in cases:
        for rule in HIST_RULES:
            for kw in ({}, {"range": (5.0, 6.0)}):
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # and numpy's bool notice
                    we = np.histogram_bin_edges(h, rule, **kw)
                    wc = np.histogram(h, rule, **kw)[0]
                with warnings.catch_warnings():  # 'stone' on the booleans: both warn
                    warnings.simplefilter("ignore", RuntimeWarning)
                    c, e = cukit.histogram(cukit.to_device(h), rule, **kw)
                same(e, we)
                same(c, wc)
    d = cukit.to_device(rand(rng, (100,), "f8"))
    with pytest.raises(ValueError, match="'nope' is not a valid estimator for `bins`"):
        cukit.histogram(d, "nope")
    with pytest.raises(TypeError, match="not supported for weighted data"):
        cukit.histogram(d, "auto", weights=cukit.ones(100))
    with pytest.raises(TypeError, match="not supported for weighted data"):
        cukit.histogram_bin_edges(d, "fd", weights=cukit.ones(100))
    with pytest.raises(ValueError, match="Too many bins for data range"):
        cukit.histogram(cukit.to_device(np.array([1.0, np.nextafter(1.0, 2)])), 4)
    bad = rand(rng, (100,), "f8")
    bad[3] = np.inf
    with pytest.raises(ValueError, match="autodetected range of"):
        cukit.histogram(cukit.to_device(bad), "scott")


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
    close(cukit.cov(d[:1], rowvar=False, bias=True), np.cov(h[:1], rowvar=False, bias=True),
          rtol=1e-4, atol=1e-6)  # one row, observations in it: numpy transposes it too
    close(cukit.corrcoef(d), np.corrcoef(h), rtol=1e-4, atol=1e-6)
    close(cukit.corrcoef(d, cukit.to_device(y)), np.corrcoef(h, y), rtol=1e-4, atol=1e-6)


def test_cov_errors(rng):
    with pytest.raises(ValueError):
        cukit.cov(cukit.to_device(rand(rng, (2, 2, 2))))
    d = cukit.to_device(rand(rng, (2, 6)))
    # numpy's checks, in numpy's order, with numpy's classes and words
    cases = [({"fweights": np.full(6, 1.5)}, TypeError, "fweights must be integer"),
             ({"fweights": np.ones((6, 1), int)}, RuntimeError,
              "cannot handle multidimensional fweights"),
             ({"fweights": np.ones(5, int)}, RuntimeError,
              "incompatible numbers of samples and fweights"),
             ({"fweights": -np.ones(6, int)}, ValueError, "fweights cannot be negative"),
             ({"aweights": np.ones((2, 6))}, RuntimeError,
              "cannot handle multidimensional aweights"),
             ({"aweights": np.ones(7)}, RuntimeError,
              "incompatible numbers of samples and aweights"),
             ({"fweights": np.ones(6, int), "aweights": -np.ones(6)}, ValueError,
              "aweights cannot be negative"),
             ({"fweights": np.zeros(6, int)}, ZeroDivisionError, "Weights sum to zero")]
    for kw, cls, words in cases:
        with pytest.raises(cls, match=words):
            np.cov(d.get(), **kw)
        with pytest.raises(cls, match=words):
            cukit.cov(d, **{k: cukit.to_device(v) for k, v in kw.items()})
    with pytest.raises(TypeError, match="cukit.Array"):
        cukit.cov(d, fweights=np.ones(6, int))
    f = np.array([1, 0, 0, 0, 0, 0])  # one sample: numpy's warning, and NaN
    with pytest.warns(RuntimeWarning, match="Degrees of freedom <= 0"), \
            np.errstate(divide="ignore"):
        c = cukit.cov(d, fweights=cukit.to_device(f))
    assert np.isnan(c.get()).all()


def cov_bound(h, w, a, ddof, u):
    """|cukit - numpy| for a weighted cov: each computes the weighted means and the n-term
    products within about n u of max|x| and of sum w |x|^2 (centred values are at most
    2 max|x|), scaled by 1 / fact; u is the unit roundoff of the type X is centred in."""
    n = h.shape[-1]
    ws = w.sum()
    fact = ws if ddof == 0 else ws - ddof if a is None else ws - ddof * (w * a).sum() / ws
    return 16 * (n + 4) * u * float(np.abs(h).max()) ** 2 * ws / abs(fact)


@pytest.mark.parametrize("dtype", ["i4", "f4", "f8", "c8"])
def test_cov_weights(rng, dtype):
    h = rand(rng, (3, 24), dtype)
    y = rand(rng, (24,), dtype)
    f = rng.integers(0, 5, size=24)
    a = rng.random(24) + 0.01
    d = cukit.to_device(h)
    # weights as int64, as floats holding integers, and as a strided view
    fd = {"fweights": cukit.to_device(f), "aweights": cukit.to_device(np.repeat(a, 2))[::2]}
    for names in (["fweights"], ["aweights"], ["fweights", "aweights"]):
        kw = {k: {"fweights": f, "aweights": a}[k] for k in names}
        dkw = {k: fd[k] for k in names}
        w = np.prod([kw[k].astype(float) for k in names], axis=0)
        for ddof, bias in ((None, False), (None, True), (0, False), (3, False)):
            dd = ddof if ddof is not None else 0 if bias else 1
            tol = cov_bound(h, w, kw.get("aweights"), dd, 2.0 ** -53)
            close(cukit.cov(d, ddof=ddof, bias=bias, **dkw),
                  np.cov(h, ddof=ddof, bias=bias, **kw), rtol=0, atol=tol)
        tol = cov_bound(np.vstack([h, y]), w, kw.get("aweights"), 1, 2.0 ** -53)
        close(cukit.cov(d.T[::-1], cukit.to_device(y), rowvar=False, **dkw),
              np.cov(h.T[::-1], y, rowvar=False, **kw), rtol=0, atol=tol)
        if dtype != "c8":  # X centred in float32, the weighted result float64, as numpy's
            tol = cov_bound(h, w, kw.get("aweights"), 1, 2.0 ** -24)
            close(cukit.cov(d, dtype=np.float32, **dkw), np.cov(h, dtype=np.float32, **kw),
                  rtol=0, atol=tol)
    fl = cukit.to_device(f.astype(np.float32))
    tol = cov_bound(h, f.astype(float), None, 1, 2.0 ** -53)
    close(cukit.cov(d, fweights=fl), np.cov(h, fweights=f.astype(np.float32)), rtol=0, atol=tol)


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
