"""numpy's manipulation and index routines (cukit/_manip.py), the creation functions
logspace/geomspace/vander/fromfunction/save/load, numpy's type questions and
cukit.ndarray, each against numpy on fresh random data."""
import numpy as np
import pytest

import cukit
from test_shapes import rand, same, strided

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_append_delete_insert(rng, axis):
    h = rand(rng, (4, 5), "i4")
    d = cukit.to_device(h)
    v = rand(rng, (4, 5), "i4")
    same(cukit.append(d, cukit.to_device(v), axis=axis), np.append(h, v, axis=axis))
    for obj in (1, -1, [0, 2], slice(1, None, 2), np.array([True, False, True, False])):
        if isinstance(obj, np.ndarray) and axis is None:
            continue
        if isinstance(obj, np.ndarray) and axis == 1:
            obj = np.array([True, False, True, False, True])
        same(cukit.delete(d, obj, axis=axis), np.delete(h, obj, axis=axis))
    for obj, val in ((1, 7), (0, [7]), (-1, 9), ([0, 2], 8), ([3, 1, 1], [5, 6, 7]),
                     (slice(0, 2), 4)):
        try:
            want = np.insert(h, obj, val, axis=axis)
        except ValueError:                            # values numpy cannot place
            with pytest.raises(ValueError):
                cukit.insert(d, obj, val, axis=axis)
            continue
        same(cukit.insert(d, obj, val, axis=axis), want)
    if axis == 1:
        col = rand(rng, (4,), "i4")
        same(cukit.insert(d, 2, col, axis=1), np.insert(h, 2, col, axis=1))
        same(cukit.insert(d, [2], col.reshape(4, 1), axis=1),
             np.insert(h, [2], col.reshape(4, 1), axis=1))
    with pytest.raises(IndexError, match="out of bounds"):
        cukit.delete(d, 40, axis=axis)
    with pytest.raises(IndexError, match="out of bounds"):
        cukit.insert(d, 41, 0, axis=axis)


def test_resize_rot90_rollaxis_require(rng):
    h = rand(rng, (3, 4, 2), "f4")
    d = cukit.to_device(h)
    for shape in ((5, 7), 30, (2, 2), (0,)):
        same(cukit.resize(d, shape), np.resize(h, shape))
    for k in range(-1, 5):
        same(cukit.rot90(d, k), np.rot90(h, k))
        same(cukit.rot90(d, k, axes=(2, 0)), np.rot90(h, k, axes=(2, 0)))
    with pytest.raises(ValueError, match="different"):
        cukit.rot90(d, 1, axes=(1, 1))
    for axis, start in ((2, 0), (0, 3), (1, 1), (-1, 1)):
        same(cukit.rollaxis(d, axis, start), np.rollaxis(h, axis, start))
    ds, hs = strided(rng, "f8")
    r = cukit.require(ds, "f4", ["C"])
    assert r.flags["C_CONTIGUOUS"] and r.dtype == np.float32
    same(r, np.require(hs, "f4", ["C"]))
    assert cukit.require(ds, requirements="F").flags["F_CONTIGUOUS"]
    with pytest.raises(ValueError, match="both C and Fortran"):
        cukit.require(ds, requirements="CF")


def test_array_api_names(rng):
    h = rand(rng, (2, 3, 4), "f8")
    d = cukit.to_device(h)
    same(cukit.concat([d, d], axis=1), np.concat([h, h], axis=1))
    same(cukit.concat([d, d], axis=None), np.concat([h, h], axis=None))
    same(cukit.permute_dims(d, (2, 0, 1)), np.permute_dims(h, (2, 0, 1)))
    same(cukit.matrix_transpose(d), np.matrix_transpose(h))
    for g, w in zip(cukit.unstack(d, axis=1), np.unstack(h, axis=1)):
        same(g, w)


def test_ix_r_c(rng):
    h = rand(rng, (5, 6), "f4")
    d = cukit.to_device(h)
    rows, cols = [0, 3, 4], np.array([True, False, True, False, False, True])
    same(d[cukit.ix_(rows, cols)], h[np.ix_(rows, cols)])
    same(cukit.r_[1:4, cukit.to_device(np.array([9, 8])), 0], np.r_[1:4, [9, 8], 0])
    same(cukit.r_[0:1:5j], np.r_[0:1:5j])
    a, b = rand(rng, (4,), "f8"), rand(rng, (4,), "f8")
    same(cukit.c_[cukit.to_device(a), cukit.to_device(b)], np.c_[a, b])
    with pytest.raises(NotImplementedError, match="directive"):
        cukit.r_["0,2", cukit.to_device(a)]


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (6, 2), (3, 3, 3)])
def test_fill_diagonal_and_diag_indices(rng, shape):
    h = rand(rng, shape, "f8")
    d = cukit.to_device(h)
    for val, wrap in ((7.5, False), ([1.0, 2.0], False), (3.0, True)):
        hh, dd = h.copy(), cukit.to_device(h)
        np.fill_diagonal(hh, val, wrap=wrap)
        cukit.fill_diagonal(dd, val, wrap=wrap)
        same(dd, hh)
    if len(set(shape)) == 1:
        for g, w in zip(cukit.diag_indices_from(d), np.diag_indices_from(h)):
            same(g, w.astype(np.int64))
        same(d[cukit.diag_indices(shape[0], len(shape))], h[np.diag_indices(shape[0], len(shape))])


def test_select(rng):
    h = rand(rng, (5, 6), "f8")
    d = cukit.to_device(h)
    conds = [d < -0.5, d > 0.5]
    same(cukit.select(conds, [d * 2, d * d], default=-1.0),
         np.select([h < -0.5, h > 0.5], [h * 2, h * h], default=-1.0))
    same(cukit.select([d > 0], [1], 0), np.select([h > 0], [1], 0))
    with pytest.raises(ValueError, match="same length"):
        cukit.select([d > 0], [d, d])


def test_shares_memory():
    a = cukit.zeros((6, 8))
    assert cukit.shares_memory(a, a[2:4])
    assert not cukit.shares_memory(a[:, ::2], a[:, 1::2])
    assert cukit.may_share_memory(a[:, ::2], a[:, 1::2])
    assert cukit.shares_memory(a[::2, ::3], a[2:, ::6])
    assert not cukit.shares_memory(a, cukit.zeros(3))
    assert not cukit.may_share_memory(a[:0], a)


def test_logspace_geomspace_vander_fromfunction(rng):
    np.testing.assert_allclose(cukit.logspace(-2, 3, 11).get(), np.logspace(-2, 3, 11),
                               rtol=1e-14)
    same(cukit.logspace(0, 2, 3, base=2.0, dtype="f4"), np.logspace(0, 2, 3, base=2.0,
                                                                    dtype="f4"))
    for a, b in ((1, 1000), (-5, -0.01), (2.0, 3.0)):
        g = cukit.geomspace(a, b, 7)
        np.testing.assert_allclose(g.get(), np.geomspace(a, b, 7), rtol=1e-14)
        assert g.get()[0] == a and g.get()[-1] == b
    with pytest.raises(ValueError, match="zero"):
        cukit.geomspace(0, 4)
    x = rand(rng, (5,), "i4") % 7
    same(cukit.vander(cukit.to_device(x)), np.vander(x))
    same(cukit.vander(cukit.to_device(x), 3, increasing=True), np.vander(x, 3, increasing=True))
    xf = rand(rng, (4,), "f8")
    np.testing.assert_allclose(cukit.vander(cukit.to_device(xf)).get(), np.vander(xf),
                               rtol=1e-15)
    same(cukit.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=int),
         np.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=int))


def test_save_and_load(rng, tmp_path):
    h = rand(rng, (3, 4), "c8")
    d = cukit.to_device(h)
    cukit.save(tmp_path / "a.npy", d)
    same(cukit.load(tmp_path / "a.npy"), h)
    cukit.savez(tmp_path / "b.npz", d, w=d[1])
    got = cukit.load(tmp_path / "b.npz")
    same(got["arr_0"], h)
    same(got["w"], h[1])
    cukit.savez_compressed(tmp_path / "c.npz", x=d)
    same(cukit.load(tmp_path / "c.npz")["x"], h)


def test_type_questions_and_ndarray():
    a = cukit.zeros(3, np.float32)
    assert cukit.result_type(a, 1.0) == np.float32
    assert cukit.result_type(a, np.float64) == np.float64
    assert cukit.can_cast(a, np.float64) and not cukit.can_cast(a, np.int8)
    assert cukit.min_scalar_type(a) == np.float32
    assert cukit.min_scalar_type(cukit.to_device(np.array(200))) == np.uint8
    assert cukit.common_type(a, cukit.zeros(2, np.int32)) is np.float64
    assert isinstance(a, cukit.ndarray) and not isinstance(np.zeros(2), cukit.ndarray)
    assert issubclass(cukit.Array, cukit.ndarray)
    b = cukit.ndarray((2, 3), np.int16)
    assert isinstance(b, cukit.Array) and b.shape == (2, 3) and b.dtype == np.int16
    assert cukit.ndarray((2, 3), order="F").flags["F_CONTIGUOUS"]
    with pytest.raises(NotImplementedError):
        cukit.ndarray((2,), memptr=1)
    h = np.arange(10)
    assert (cukit.to_device(h)[cukit.s_[2:8:2]].get() == h[np.s_[2:8:2]]).all()
