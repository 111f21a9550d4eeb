"""Creation and conversion as numpy names them (array, asarray, asnumpy, eye, diag, tri,
meshgrid, mgrid, indices, copy, get_array_module), and numpy's own names re-exported."""
import numpy as np
import pytest

import cukit
from test_shapes import rand, same, shares

pytestmark = pytest.mark.gpu

DTYPES = ["?", "i1", "u2", "i4", "i8", "f2", "f4", "f8", "c8", "c16"]


# ------------------------------------------------------------------ array, asarray, asnumpy


@pytest.mark.parametrize("dtype", DTYPES)
def test_array_from_host_data(rng, dtype):
    h = rand(rng, (3, 5), dtype)
    same(cukit.array(h), np.array(h))
    same(cukit.array(h.tolist(), dtype=dtype), np.array(h.tolist(), dtype=dtype))
    same(cukit.array(h[::2, ::-1]), h[::2, ::-1].copy())
    if np.dtype(dtype).kind != "c":
        same(cukit.array(h, dtype="f8"), np.array(h, dtype="f8"))


def test_array_from_a_device_array(rng):
    h = rand(rng, (4, 3), "f4")
    d = cukit.to_device(h)
    c = cukit.array(d)
    same(c, h)
    assert not shares(c, d)
    assert cukit.array(d, copy=False) is d
    assert cukit.array(d, copy=None) is d
    same(cukit.array(d, dtype="i4"), h.astype("i4"))
    with pytest.raises(ValueError, match="copy"):
        cukit.array(d, dtype="f8", copy=False)
    with pytest.raises(ValueError, match="copy"):
        cukit.array(h, copy=False)
    same(cukit.array(d, ndmin=4), np.array(h, ndmin=4))
    assert cukit.array(d, order="F").flags["F_CONTIGUOUS"]


def test_array_of_a_list_of_device_arrays(rng):
    a, b = rand(rng, (3,), "f4"), rand(rng, (3,), "f4")
    same(cukit.array([cukit.to_device(a), cukit.to_device(b)]), np.array([a, b]))
    same(cukit.asarray([cukit.to_device(a), b]), np.array([a, b]))


def test_asarray(rng):
    h = rand(rng, (2, 3), "i2")
    d = cukit.to_device(h)
    assert cukit.asarray(d) is d
    same(cukit.asarray(h), h)
    same(cukit.asarray(d, dtype="f4"), h.astype("f4"))
    same(cukit.asarray([1.5, 2.5]), np.asarray([1.5, 2.5]))
    c = cukit.asarray(d, copy=True)
    assert c is not d and not shares(c, d)
    with pytest.raises(ValueError):
        cukit.asarray(d, dtype="f4", copy=False)


def test_asarray_takes_numpy_order_positionally(rng):
    h = rand(rng, (3, 4), "f4")
    f = cukit.asarray(h, None, "F")                  # numpy's asarray(a, dtype, order)
    assert f.flags["F_CONTIGUOUS"]
    same(f, h)
    same(cukit.asarray(h, "f8", "C"), h.astype("f8"))
    assert cukit.asarray(h, None, 0).device.id == 0  # a device still goes there
    with pytest.raises(TypeError, match="numpy's order"):
        cukit.asarray(h, None, "X")


def test_asnumpy(rng):
    h = rand(rng, (3, 4), "c8")
    d = cukit.to_device(h)
    got = cukit.asnumpy(d)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, h)
    np.testing.assert_array_equal(cukit.asnumpy(d[:, ::-2]), h[:, ::-2])
    out = np.empty_like(h)
    assert cukit.asnumpy(d, out=out) is out
    np.testing.assert_array_equal(out, h)
    np.testing.assert_array_equal(cukit.asnumpy([1, 2]), np.array([1, 2]))
    assert cukit.asnumpy(d, order="F").flags.f_contiguous


def test_get_array_module(rng):
    d = cukit.to_device(rand(rng, (3,)))
    assert cukit.get_array_module(d) is cukit
    assert cukit.get_array_module(np.zeros(2), d) is cukit
    assert cukit.get_array_module(np.zeros(2), 3) is np
    assert cukit.get_array_module() is np


def test_copy_is_numpys(rng):
    h = rand(rng, (3, 4), "u2")
    d = cukit.to_device(h)
    c = cukit.copy(d)
    same(c, np.copy(h))
    assert not shares(c, d)
    c[0, 0] = 7
    same(d, h)
    same(cukit.copy(d[::-1, 1:]), np.copy(h[::-1, 1:]))
    same(cukit.copy(h.tolist()), np.copy(h.tolist()))
    same(cukit.copy(cukit.to_device(np.float16(2))), np.copy(np.float16(2)))


# ------------------------------------------------------------------ eye, diag, tri


@pytest.mark.parametrize("args", [(3,), (4, 6), (5, 3, 1), (5, 3, -2), (3, 3, 5), (3, 4, -9),
                                  (0,), (1, 0)])
def test_eye(args):
    for dtype in ("f8", "i4", "?", "c8"):
        same(cukit.eye(*args, dtype=dtype), np.eye(*args, dtype=dtype))
    same(cukit.eye(*args), np.eye(*args))
    assert cukit.eye(*args, order="F").flags["F_CONTIGUOUS"]


def test_identity():
    same(cukit.identity(4), np.identity(4))
    same(cukit.identity(3, dtype="i8"), np.identity(3, dtype="i8"))


@pytest.mark.parametrize("k", [-3, -1, 0, 2])
def test_diag(rng, k):
    v = rand(rng, (4,), "c8")
    same(cukit.diag(cukit.to_device(v), k), np.diag(v, k))
    m = rand(rng, (4, 6), "i4")
    dm = cukit.to_device(m)
    got = cukit.diag(dm, k)
    same(got, np.diag(m, k))
    assert shares(got, dm)
    same(cukit.diagflat(cukit.to_device(m[:2, :2]), k), np.diagflat(m[:2, :2], k))
    same(cukit.diag(cukit.to_device(v)[::-1], k), np.diag(v[::-1], k))


def test_diag_errors(rng):
    with pytest.raises(ValueError, match="1- or 2-d"):
        cukit.diag(cukit.to_device(rand(rng, (2, 2, 2))))
    with pytest.raises(TypeError):
        cukit.diag([1, 2])


@pytest.mark.parametrize("k", [-2, 0, 1, 4])
def test_tri_tril_triu(rng, k):
    same(cukit.tri(4, 5, k), np.tri(4, 5, k))
    same(cukit.tri(3, k=k, dtype="i2"), np.tri(3, k=k, dtype="i2"))
    for dtype in ("f4", "i8", "?", "c16"):
        h = rand(rng, (2, 4, 5), dtype)
        d = cukit.to_device(h)
        same(cukit.tril(d, k), np.tril(h, k))
        same(cukit.triu(d, k), np.triu(h, k))
        same(cukit.triu(d[0, :, ::-1], k), np.triu(h[0, :, ::-1], k))
    v = rand(rng, (4,))
    same(cukit.tril(cukit.to_device(v), k), np.tril(v, k))


# ------------------------------------------------------------------ grids


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(rng, indexing, sparse):
    xs = [rand(rng, (n,), "f4") for n in (3, 4, 2)]
    for k in (1, 2, 3):
        got = cukit.meshgrid(*[cukit.to_device(x) for x in xs[:k]], indexing=indexing,
                             sparse=sparse)
        want = np.meshgrid(*xs[:k], indexing=indexing, sparse=sparse)
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    assert cukit.meshgrid() == ()
    with pytest.raises(ValueError):
        cukit.meshgrid(cukit.to_device(xs[0]), indexing="ji")


def test_meshgrid_copy_false_gives_views(rng):
    x, y = cukit.to_device(rand(rng, (3,))), cukit.to_device(rand(rng, (2,)))
    g = cukit.meshgrid(x, y, copy=False)
    assert shares(g[0], x) and shares(g[1], y)
    same(g[0], np.meshgrid(x.get(), y.get())[0])


@pytest.mark.parametrize("key", [np.s_[0:5], np.s_[-1:1:0.25], np.s_[0:1:7j], np.s_[3:0:-1],
                                 np.s_[0:3, 0:4], np.s_[0:2, 1:3:0.5, 0:1:3j]])
def test_mgrid_ogrid(key):
    got = cukit.mgrid[key]
    same(got, np.mgrid[key])
    got, want = cukit.ogrid[key], np.ogrid[key]
    if isinstance(want, np.ndarray):
        same(got, want)
    else:
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)


@pytest.mark.parametrize("dims", [(3,), (2, 3), (2, 1, 4), ()])
def test_indices(dims):
    same(cukit.indices(dims), np.indices(dims))
    same(cukit.indices(dims, dtype="i4"), np.indices(dims, dtype="i4"))
    got, want = cukit.indices(dims, sparse=True), np.indices(dims, sparse=True)
    for g, w in zip(got, want):
        same(g, w)


# ------------------------------------------------------------------ numpy's names


def test_numpys_names_are_numpys_objects():
    for name in ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float16", "float32", "float64", "complex64", "complex128",
                 "intp", "dtype", "finfo", "iinfo", "newaxis", "pi", "e", "inf", "nan",
                 "integer", "floating", "number"):
        got = getattr(cukit, name)
        want = getattr(np, name)
        assert got is want or (isinstance(want, float) and np.isnan(want) and np.isnan(got)), name
    assert cukit.finfo(cukit.float32).eps == np.finfo(np.float32).eps
    assert cukit.zeros(3, cukit.float32).dtype == cukit.dtype("float32")
    d = cukit.to_device(np.arange(3.0))
    assert d[:, cukit.newaxis].shape == (3, 1)
