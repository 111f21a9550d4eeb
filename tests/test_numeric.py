"""numpy's functions composed of cukit operations (cukit/_numeric.py): the fused
elementwise ones (logaddexp, deg2rad, heaviside, sinc, nan_to_num, ...), index arithmetic,
isin, lexsort, interp, polyval, kron, cross, convolve/correlate and bit packing, each
against numpy on fresh random data, with numpy's dtypes and errors."""
import warnings

import numpy as np
import pytest

import cukit
from test_shapes import rand, same, strided

pytestmark = pytest.mark.gpu


def close(d, h, rtol=1e-6, atol=0.0):
    assert isinstance(d, cukit.Array)
    h = np.asarray(h)
    assert d.dtype == h.dtype, (d.dtype, h.dtype)
    assert tuple(d.shape) == h.shape, (d.shape, h.shape)
    np.testing.assert_allclose(d.get(), h, rtol=rtol, atol=atol, equal_nan=True)


def specials(rng, dtype, shape=(7, 9)):
    h = (rng.standard_normal(shape) * 30).astype(dtype)
    flat = h.reshape(-1)
    flat[:6] = [0, -0.0, np.inf, -np.inf, np.nan, 1]
    return h


# ------------------------------------------------------------------ elementwise, fused

@pytest.mark.parametrize("dtype", ["f2", "f4", "f8", "i4"])
def test_logaddexp_and_logaddexp2(rng, dtype):
    h1 = rand(rng, (5, 8), dtype) if dtype == "i4" else specials(rng, dtype, (5, 8))
    if dtype == "i4":
        h1 = (h1 % 50).astype(dtype)
    h2 = np.flip(h1, 1).copy()
    h2[0, 0] = h1[0, 0]                               # x == y: x + log 2
    d1, d2 = cukit.to_device(h1), cukit.to_device(h2)
    rtol = 2e-3 if dtype == "f2" else 1e-6
    with np.errstate(invalid="ignore"):
        close(cukit.logaddexp(d1, d2), np.logaddexp(h1, h2), rtol)
        close(cukit.logaddexp2(d1, d2), np.logaddexp2(h1, h2), rtol)
        close(cukit.logaddexp(d1, 1), np.logaddexp(h1, 1), rtol)   # a weak scalar
    with pytest.raises(TypeError, match="logaddexp"):
        cukit.logaddexp(d1.astype("c8"), d2)


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8", "i2", "?"])
def test_deg2rad_rad2deg_exactly(rng, dtype):
    h = rand(rng, (6, 7), dtype)
    if dtype[0] == "f":
        h = (h * 400).astype(dtype)
    d = cukit.to_device(h)
    for f in ("deg2rad", "rad2deg", "radians", "degrees"):
        same(getattr(cukit, f)(d), getattr(np, f)(h))
    ds, hs = strided(rng, "f4")
    same(cukit.deg2rad(ds), np.deg2rad(hs))


@pytest.mark.parametrize("dtype", ["f4", "f8", "i8"])
def test_heaviside_and_sinc(rng, dtype):
    h = rand(rng, (9, 4), dtype) if dtype == "i8" else specials(rng, dtype, (9, 4))
    if dtype == "i8":
        h = h % 5 - 2
    d = cukit.to_device(h)
    same(cukit.heaviside(d, 0.5), np.heaviside(h, 0.5))
    hv = rand(rng, (9, 4), "f8")
    same(cukit.heaviside(d, cukit.to_device(hv)), np.heaviside(h, hv))
    with np.errstate(invalid="ignore"):
        close(cukit.sinc(d), np.sinc(h), rtol=1e-5, atol=1e-7)
    hc = rand(rng, (5,), "c16")
    close(cukit.sinc(cukit.to_device(hc)), np.sinc(hc), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8", "c8", "c16", "i4"])
def test_nan_to_num(rng, dtype):
    h = rand(rng, (4, 6), dtype)
    if h.dtype.kind == "f":
        h = specials(rng, dtype, (4, 6))
    elif h.dtype.kind == "c":
        h.real.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
        h.imag.reshape(-1)[2:5] = [np.inf, np.nan, -np.inf]
    d = cukit.to_device(h)
    same(cukit.nan_to_num(d), np.nan_to_num(h))
    same(cukit.nan_to_num(d, nan=-1.5, posinf=7, neginf=-7),
         np.nan_to_num(h, nan=-1.5, posinf=7, neginf=-7))
    same(d, h)                                        # copy=True left it alone
    out = cukit.nan_to_num(d, copy=False)
    assert out is d
    same(d, np.nan_to_num(h))


def test_isposinf_isneginf_fabs_float_power(rng):
    h = specials(rng, "f4")
    d = cukit.to_device(h)
    same(cukit.isposinf(d), np.isposinf(h))
    same(cukit.isneginf(d), np.isneginf(h))
    hi = rand(rng, (3, 4), "i4")
    same(cukit.isposinf(cukit.to_device(hi)), np.isposinf(hi))
    with pytest.raises(TypeError, match="complex"):
        cukit.isposinf(cukit.to_device(h.astype("c8")))
    same(cukit.fabs(d), np.fabs(h))
    same(cukit.fabs(cukit.to_device(hi)), np.fabs(hi))
    hb = np.abs(rand(rng, (3, 4), "f4"))
    he = rand(rng, (3, 4), "f4")
    close(cukit.float_power(cukit.to_device(hb), cukit.to_device(he)), np.float_power(hb, he),
          rtol=1e-14)
    hc = rand(rng, (3,), "c8")
    close(cukit.float_power(cukit.to_device(hc), 2), np.float_power(hc, 2), rtol=1e-12)


def test_elementwise_fuse_to_one_kernel_and_refuse_host_data(rng):
    h = rand(rng, (5,), "f4")
    with pytest.raises(TypeError, match="cukit arrays"):
        cukit.logaddexp(h, h)
    with pytest.raises(TypeError, match="at least one cukit array"):
        cukit.heaviside(1.0, 0.5)


# ------------------------------------------------------------------ index arithmetic

@pytest.mark.parametrize("order", ["C", "F"])
def test_unravel_and_ravel_multi_index(rng, order):
    shape = (4, 5, 6)
    flat = rng.integers(0, 120, size=17)
    got = cukit.unravel_index(cukit.to_device(flat), shape, order=order)
    want = np.unravel_index(flat, shape, order=order)
    for g, w in zip(got, want):
        same(g, w.astype(np.int64))
    back = cukit.ravel_multi_index(got, shape, order=order)
    same(back, np.ravel_multi_index(want, shape, order=order).astype(np.int64))
    same(cukit.unravel_index(cukit.to_device(np.int64(7)), 10)[0], np.array(7))
    with pytest.raises(ValueError, match="out of bounds"):
        cukit.unravel_index(cukit.to_device(np.array([3, 120])), shape)
    with pytest.raises(TypeError, match="int indices"):
        cukit.unravel_index(cukit.to_device(np.array([1.0])), shape)


def test_ravel_multi_index_modes(rng):
    rows = rng.integers(-6, 10, size=11)
    cols = rng.integers(-6, 10, size=11)
    dr, dc = cukit.to_device(rows), cukit.to_device(cols)
    for mode in ("wrap", "clip", ("wrap", "clip")):
        same(cukit.ravel_multi_index((dr, dc), (4, 5), mode=mode),
             np.ravel_multi_index((rows, cols), (4, 5), mode=mode).astype(np.int64))
    with pytest.raises(ValueError, match="invalid entry"):
        cukit.ravel_multi_index((dr, dc), (4, 5))
    with pytest.raises(ValueError, match="clipmode"):
        cukit.ravel_multi_index((dr, dc), (4, 5), mode="bad")


@pytest.mark.parametrize("n,k,m", [(4, 0, None), (5, -1, 3), (3, 2, 6), (1, 0, None)])
def test_tri_indices(n, k, m):
    for f in ("tril_indices", "triu_indices"):
        for g, w in zip(getattr(cukit, f)(n, k, m), getattr(np, f)(n, k, m)):
            same(g, w.astype(np.int64))
    a = cukit.zeros((3, 5))
    for f in ("tril_indices_from", "triu_indices_from"):
        for g, w in zip(getattr(cukit, f)(a, 1), getattr(np, f)(np.zeros((3, 5)), 1)):
            same(g, w.astype(np.int64))
    with pytest.raises(ValueError, match="2-d"):
        cukit.tril_indices_from(cukit.zeros(3))


# ------------------------------------------------------------------ isin, lexsort

@pytest.mark.parametrize("dtype", ["i4", "f8", "u1"])
def test_isin(rng, dtype):
    h = rand(rng, (6, 7), dtype) % 20 if dtype != "f8" else \
        np.round(rng.standard_normal((6, 7)) * 3)
    h = h.astype(dtype)
    t = np.unique(h.reshape(-1)[::3])[:5]
    d = cukit.to_device(h)
    same(cukit.isin(d, cukit.to_device(t)), np.isin(h, t))
    same(cukit.isin(d, list(t), invert=True), np.isin(h, list(t), invert=True))
    same(cukit.isin(d, []), np.isin(h, []))
    hn = np.array([1.0, np.nan, 2.0])
    same(cukit.isin(cukit.to_device(hn), cukit.to_device(np.array([np.nan, 2.0]))),
         np.isin(hn, [np.nan, 2.0]))


def test_lexsort(rng):
    k1 = rng.integers(0, 3, size=40)
    k2 = rng.integers(0, 4, size=40)
    k3 = rng.standard_normal(40).round(1)
    got = cukit.lexsort([cukit.to_device(k) for k in (k3, k2, k1)])
    same(got, np.lexsort((k3, k2, k1)).astype(np.int64))
    h = rng.integers(0, 3, size=(2, 5, 6))
    got = cukit.lexsort(cukit.to_device(h), axis=0)
    same(got, np.lexsort(h, axis=0).astype(np.int64))
    with pytest.raises(ValueError, match="same shape"):
        cukit.lexsort([cukit.zeros(3), cukit.zeros(4)])


# ------------------------------------------------------------------ interp, polyval

def test_interp(rng):
    xp = np.sort(rng.standard_normal(12))
    fp = rng.standard_normal(12)
    x = np.concatenate([rng.standard_normal(50) * 2, xp[[0, 5, -1]]])
    dx, dxp, dfp = (cukit.to_device(v) for v in (x, xp, fp))
    close(cukit.interp(dx, dxp, dfp), np.interp(x, xp, fp), rtol=1e-13, atol=1e-15)
    close(cukit.interp(dx, dxp, dfp, left=-9, right=9), np.interp(x, xp, fp, -9, 9),
          rtol=1e-13, atol=1e-15)
    close(cukit.interp(dx, list(xp), list(fp)), np.interp(x, xp, fp), rtol=1e-13, atol=1e-15)
    fc = fp + 1j * fp[::-1]
    close(cukit.interp(dx, dxp, cukit.to_device(fc)), np.interp(x, xp, fc), rtol=1e-13,
          atol=1e-15)
    xa = rng.uniform(-400, 400, 30)
    xpa = np.array([-170.0, -20, 10, 95, 170])
    fpa = rng.standard_normal(5)
    close(cukit.interp(cukit.to_device(xa), cukit.to_device(xpa), cukit.to_device(fpa),
                       period=360), np.interp(xa, xpa, fpa, period=360), rtol=1e-12, atol=1e-14)
    close(cukit.interp(dx, cukit.to_device(xp[:1]), cukit.to_device(fp[:1])),
          np.interp(x, xp[:1], fp[:1]))
    with pytest.raises(ValueError, match="same length"):
        cukit.interp(dx, dxp, dfp[:3])


@pytest.mark.parametrize("dtype", ["f4", "f8", "i8", "c8"])
def test_polyval(rng, dtype):
    p = rand(rng, (5,), dtype) % 7 if dtype == "i8" else rand(rng, (5,), dtype)
    x = rand(rng, (3, 4), dtype) % 5 if dtype == "i8" else rand(rng, (3, 4), dtype)
    dx = cukit.to_device(x)
    rtol = 1e-5 if dtype in ("f4", "c8") else 1e-12
    close(cukit.polyval(cukit.to_device(p), dx), np.polyval(p, x), rtol)
    close(cukit.polyval(list(p), dx), np.polyval(list(p), x), rtol)


# ------------------------------------------------------------------ kron, cross

@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 5)), ((3,), (2, 2)), ((2, 1, 3), (3,))])
def test_kron(rng, sa, sb):
    a, b = rand(rng, sa, "f8"), rand(rng, sb, "i4") % 9
    same(cukit.kron(cukit.to_device(a), cukit.to_device(b)), np.kron(a, b))


def test_cross(rng):
    a, b = rand(rng, (6, 3), "f8"), rand(rng, (6, 3), "f8")
    da, db = cukit.to_device(a), cukit.to_device(b)
    close(cukit.cross(da, db), np.cross(a, b), rtol=1e-14)
    close(cukit.cross(da.T, db.T, axis=0), np.cross(a.T, b.T, axis=0), rtol=1e-14)
    close(cukit.cross(da, db[0]), np.cross(a, b[0]), rtol=1e-14)
    a2 = rand(rng, (6, 2), "f4")
    # a 2-vector is a 3-vector with z = 0 (numpy 2.0 deprecated the form, later ones refuse it)
    close(cukit.cross(cukit.to_device(a2), db.astype("f4")),
          np.cross(np.pad(a2, [(0, 0), (0, 1)]), b.astype("f4")), rtol=1e-6)
    with pytest.raises(ValueError, match="dimension must be 2 or 3"):
        cukit.cross(cukit.zeros((2, 4)), cukit.zeros((2, 4)))


# ------------------------------------------------------------------ convolve, correlate

@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("na,nv", [(50, 7), (6, 13), (1, 1), (8, 8)])
def test_convolve_and_correlate(rng, mode, na, nv):
    a, v = rand(rng, (na,), "f8"), rand(rng, (nv,), "f8")
    da, dv = cukit.to_device(a), cukit.to_device(v)
    close(cukit.convolve(da, dv, mode), np.convolve(a, v, mode), rtol=1e-12, atol=1e-12)
    close(cukit.correlate(da, dv, mode), np.correlate(a, v, mode), rtol=1e-12, atol=1e-12)
    ai, vi = rand(rng, (na,), "i2") % 100, rand(rng, (nv,), "i2") % 100
    same(cukit.convolve(cukit.to_device(ai), cukit.to_device(vi), mode),
         np.convolve(ai, vi, mode))
    ac, vc = rand(rng, (na,), "c16"), rand(rng, (nv,), "c16")
    close(cukit.correlate(cukit.to_device(ac), cukit.to_device(vc), mode),
          np.correlate(ac, vc, mode), rtol=1e-12, atol=1e-12)


def test_convolve_errors():
    with pytest.raises(ValueError, match="cannot be empty"):
        cukit.convolve(cukit.zeros(0), cukit.zeros(3))
    with pytest.raises(ValueError, match="mode"):
        cukit.convolve(cukit.zeros(4), cukit.zeros(3), "bad")
    with pytest.raises(ValueError, match="too deep"):
        cukit.convolve(cukit.zeros((2, 2)), cukit.zeros(3))


# ------------------------------------------------------------------ packbits, unpackbits

@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_packbits_and_unpackbits(rng, bitorder):
    h = rng.random((3, 13)) < 0.5
    d = cukit.to_device(h)
    same(cukit.packbits(d, bitorder=bitorder), np.packbits(h, bitorder=bitorder))
    for axis in (0, 1, -1):
        same(cukit.packbits(d, axis=axis, bitorder=bitorder),
             np.packbits(h, axis=axis, bitorder=bitorder))
    hi = rng.integers(0, 3, size=(4, 9)).astype("i4")
    same(cukit.packbits(cukit.to_device(hi), axis=1), np.packbits(hi, axis=1))
    u = rng.integers(0, 256, size=(3, 4), dtype=np.uint8)
    du = cukit.to_device(u)
    same(cukit.unpackbits(du, bitorder=bitorder), np.unpackbits(u, bitorder=bitorder))
    for axis, count in ((0, None), (1, 5), (1, -3), (1, 40)):
        same(cukit.unpackbits(du, axis=axis, count=count, bitorder=bitorder),
             np.unpackbits(u, axis=axis, count=count, bitorder=bitorder))
    with pytest.raises(TypeError, match="unsigned byte"):
        cukit.unpackbits(cukit.zeros(3))
    with pytest.raises(TypeError, match="integer or boolean"):
        cukit.packbits(cukit.zeros(3))


def test_numpy_functions_dispatch_to_these(rng):
    h = rand(rng, (4, 3), "f4")
    d = cukit.to_device(h)
    got = np.kron(d, d)
    assert isinstance(got, cukit.Array)
    same(got, np.kron(h, h))
    got = np.isin(d, d[0])
    assert isinstance(got, cukit.Array)
    same(got, np.isin(h, h[0]))


# ------------------------------------------------------------------ digitize, gradient, trapezoid

@pytest.mark.parametrize("right", [False, True])
def test_digitize(rng, right):
    x = np.round(rng.standard_normal(40) * 3, 1)
    bins = np.array([-3.0, -1.0, 0.0, 0.5, 2.0, 4.0])
    dx = cukit.to_device(x)
    same(cukit.digitize(dx, bins, right=right), np.digitize(x, bins, right=right))
    same(cukit.digitize(dx, bins[::-1].copy(), right=right),
         np.digitize(x, bins[::-1], right=right))
    with pytest.raises(ValueError, match="monotonically"):
        cukit.digitize(dx, [0.0, 2.0, 1.0])


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient(rng, edge_order):
    h = rand(rng, (6, 7), "f8")
    d = cukit.to_device(h)
    for g, w in zip(cukit.gradient(d, edge_order=edge_order),
                    np.gradient(h, edge_order=edge_order)):
        close(g, w, rtol=1e-12, atol=1e-12)
    x = np.cumsum(rng.random(7) + 0.1)
    close(cukit.gradient(d, 0.5, cukit.to_device(x), edge_order=edge_order)[1],
          np.gradient(h, 0.5, x, edge_order=edge_order)[1], rtol=1e-10, atol=1e-10)
    close(cukit.gradient(d, 2.0, axis=0, edge_order=edge_order),
          np.gradient(h, 2.0, axis=0, edge_order=edge_order), rtol=1e-12, atol=1e-12)
    hi = rand(rng, (9,), "i4") % 100
    close(cukit.gradient(cukit.to_device(hi)), np.gradient(hi), rtol=1e-12)
    with pytest.raises(ValueError, match="too small"):
        cukit.gradient(cukit.zeros(2), edge_order=2)


def test_trapezoid(rng):
    h = rand(rng, (5, 8), "f8")
    d = cukit.to_device(h)

    def near(got, want, **kw):
        # a sum that cancels to near 0: its rounding is relative to the terms, whose sum
        # of magnitudes is at most the trapezoid of |h| (8 terms: within 1e-15 of it)
        close(got, want, rtol=1e-12, atol=1e-12 * np.trapezoid(np.abs(h), **kw).max())

    near(cukit.trapezoid(d), np.trapezoid(h))
    near(cukit.trapezoid(d, dx=0.3, axis=0), np.trapezoid(h, dx=0.3, axis=0), dx=0.3, axis=0)
    x = np.cumsum(rng.random(8))
    near(cukit.trapz(d, cukit.to_device(x)), np.trapezoid(h, x), x=x)


def test_partition_and_argpartition(rng):
    h = rand(rng, (5, 9), "f4")
    d = cukit.to_device(h)
    for k in (0, 4, -1):
        p = cukit.partition(d, k, axis=1).get()
        assert (p[:, k] == np.partition(h, k, axis=1)[:, k]).all()
        ip = cukit.argpartition(d, k, axis=1).get()
        assert (np.take_along_axis(h, ip, 1)[:, k] == np.partition(h, k, axis=1)[:, k]).all()
    with pytest.raises(ValueError, match="out of bounds"):
        cukit.partition(d, 9, axis=1)


def test_fix_divmod_modf_gcd_lcm(rng):
    h = specials(rng, "f8")
    d = cukit.to_device(h)
    same(cukit.fix(d), np.fix(h))
    with np.errstate(invalid="ignore"):
        for g, w in zip(cukit.modf(d), np.modf(h)):
            same(g, w)
    a, b = rand(rng, (30,), "i4") % 1000, rand(rng, (30,), "i4") % 97 + 1
    for g, w in zip(cukit.divmod(cukit.to_device(a), cukit.to_device(b)), np.divmod(a, b)):
        same(g, w)
    a[:3] = [0, -12, 7]
    b[:3] = [5, 18, 0]
    same(cukit.gcd(cukit.to_device(a), cukit.to_device(b)), np.gcd(a, b))
    same(cukit.lcm(cukit.to_device(a), cukit.to_device(b)), np.lcm(a, b))
    same(cukit.gcd(cukit.to_device(a.astype("u2") % 300), 12), np.gcd(a.astype("u2") % 300, 12))
    with pytest.raises(TypeError, match="gcd"):
        cukit.gcd(d, 2)


@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_nextafter_and_spacing(rng, dtype):
    h = specials(rng, dtype)
    d = cukit.to_device(h)
    same(cukit.nextafter(d, np.inf), np.nextafter(h, np.inf))
    same(cukit.nextafter(d, cukit.to_device(h[::-1].copy())), np.nextafter(h, h[::-1]))
    with np.errstate(invalid="ignore"):
        same(cukit.spacing(d), np.spacing(h))


# ------------------------------------------------------------------ nan-statistics

def with_nans(rng, shape, dtype="f8"):
    h = rand(rng, shape, dtype)
    h.reshape(-1)[rng.choice(h.size, h.size // 4, replace=False)] = np.nan
    return h


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_nan_reductions_and_scans(rng, axis):
    h = with_nans(rng, (6, 9))
    d = cukit.to_device(h)
    close(cukit.nanprod(d, axis=axis), np.nanprod(h, axis=axis), rtol=1e-12)
    close(cukit.nanvar(d, axis=axis), np.nanvar(h, axis=axis), rtol=1e-12)
    close(cukit.nanstd(d, axis=axis, ddof=1), np.nanstd(h, axis=axis, ddof=1), rtol=1e-12)
    if axis is not None:
        close(cukit.nancumsum(d, axis=axis), np.nancumsum(h, axis=axis), rtol=1e-12,
              atol=1e-13 * np.nansum(np.abs(h)))  # partial sums may cancel
        close(cukit.nancumprod(d, axis=axis), np.nancumprod(h, axis=axis), rtol=1e-12)
    hc = with_nans(rng, (4, 5), "c16")
    close(cukit.nanvar(cukit.to_device(hc), axis=axis), np.nanvar(hc, axis=axis), rtol=1e-12)


METHODS = ["inverted_cdf", "averaged_inverted_cdf", "closest_observation",
           "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
           "normal_unbiased", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", ["f2", "f4", "f8"])
def test_nan_quantiles_bit_for_bit(rng, method, dtype):
    # numpy's own arithmetic on the same elements of each row's numbers: the same bits
    h = with_nans(rng, (6, 9), dtype)
    d = cukit.to_device(h)
    for axis in (None, 0, 1):
        for q in (0.37, [0.0, 0.1, 0.5, 0.73, 1.0], 1, np.array([0.2, 1.0], np.float32)):
            same(cukit.nanquantile(d, q, axis=axis, method=method),
                 np.asarray(np.nanquantile(h, q, axis=axis, method=method)))
    h3 = with_nans(rng, (3, 4, 5), dtype)
    same(cukit.nanquantile(cukit.to_device(h3), [0.0, 0.6], axis=(0, 2), method=method,
                           keepdims=True),
         np.nanquantile(h3, [0.0, 0.6], axis=(0, 2), method=method, keepdims=True))
    hi = rand(rng, (4, 7), "i4") % 1000
    same(cukit.nanpercentile(cukit.to_device(hi), [10, 60], axis=1, method=method),
         np.nanpercentile(hi, [10, 60], axis=1, method=method))


@pytest.mark.parametrize("method", METHODS)
def test_nan_quantiles(rng, method):
    h = with_nans(rng, (5, 11))
    h[2] = np.nan                                     # an all-NaN row
    d = cukit.to_device(h)
    with pytest.warns(RuntimeWarning, match="All-NaN"):
        got = cukit.nanquantile(d, [0.1, 0.5, 0.9], axis=1, method=method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanquantile(h, [0.1, 0.5, 0.9], axis=1, method=method)
        close(got, want, rtol=1e-12)
        close(cukit.nanpercentile(d[[0, 1, 3]], 30, axis=1, method=method, keepdims=True),
              np.nanpercentile(h[[0, 1, 3]], 30, axis=1, method=method, keepdims=True),
              rtol=1e-12)
        close(cukit.nanmedian(d[[0, 1, 3]], axis=1), np.nanmedian(h[[0, 1, 3]], axis=1),
              rtol=1e-12)
        close(cukit.nanmedian(d[[0, 1, 3]]), np.nanmedian(h[[0, 1, 3]]), rtol=1e-12)


@pytest.mark.parametrize("method", ["linear", "hazen", "inverted_cdf"])
def test_nan_quantiles_of_an_all_nan_first_row_in_numpys_type(rng, method):
    # numpy fills its result row by row, in the type of the first row's (a's own type
    # where that row holds no number)
    h = with_nans(rng, (4, 7), "f4")
    h[0] = np.nan
    d = cukit.to_device(h)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for q in ([0.2, 0.7], np.float64(0.4)):
            same(cukit.nanquantile(d, q, axis=1, method=method),
                 np.asarray(np.nanquantile(h, q, axis=1, method=method)))


@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_nan_quantiles_with_weights(rng, dtype):
    h = with_nans(rng, (4, 6, 5), dtype)
    h[1, :, 2] = np.nan                               # an all-NaN row along axis 1
    d = cukit.to_device(h)
    counts = rng.integers(1, 5, h.shape)              # sums exact in any order
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for q in (0.0, 1.0, 0.37, [0.0, 0.5, 1.0]):
            for axis in (None, 1, (0, 2)):
                same(cukit.nanquantile(d, q, axis=axis, method="inverted_cdf",
                                       weights=cukit.to_device(counts)),
                     np.asarray(np.nanquantile(h, q, axis=axis, method="inverted_cdf",
                                               weights=counts)))
        w = rng.integers(1, 5, h.shape) * 0.25
        same(cukit.nanpercentile(d, [5, 95], axis=1, method="inverted_cdf",
                                 weights=cukit.to_device(w)),
             np.nanpercentile(h, [5, 95], axis=1, method="inverted_cdf", weights=w))


# ------------------------------------------------------------------ set routines

@pytest.mark.parametrize("dtype", ["i4", "f8"])
def test_set_routines(rng, dtype):
    a = (rand(rng, (30,), "i4") % 12).astype(dtype)
    b = (rand(rng, (17,), "i4") % 15).astype(dtype)
    da, db = cukit.to_device(a), cukit.to_device(b)
    for f in ("intersect1d", "union1d", "setdiff1d", "setxor1d"):
        same(getattr(cukit, f)(da, db), getattr(np, f)(a, b))
        same(getattr(cukit, f)(da, list(b)), getattr(np, f)(a, list(b)))
    same(cukit.intersect1d(da[:0], db), np.intersect1d(a[:0], b))
    with pytest.raises(NotImplementedError):
        cukit.intersect1d(da, db, return_indices=True)
