"""cukit arrays in numpy's and Python's protocols: np.asarray refused with a hint,
numpy's ufuncs and functions running cukit's (NEP 13, NEP 18), repr/str as numpy
prints, iteration, pickling and deepcopy, flags by key and by attribute."""
import copy
import pickle

import numpy as np
import pytest

import cukit


@pytest.fixture
def h():
    return np.random.default_rng().standard_normal((4, 5)).astype(np.float32)


def test_numpy_cannot_read_device_memory_and_says_what_to_do(h):
    a = cukit.asarray(h)
    for conv in (np.asarray, np.array, lambda x: np.ascontiguousarray(x)):
        with pytest.raises(TypeError, match=r"a\.get\(\)"):
            conv(a)


def test_numpy_ufuncs_run_cukits(h):
    a = cukit.asarray(h)
    for f in (np.exp, np.sqrt, np.abs, np.negative):
        r = f(a)
        assert isinstance(r, cukit.Array)
        np.testing.assert_allclose(r.get(), f(h), rtol=1e-6)
    out = cukit.empty_like(a)
    r = np.add(a, a, out=out)
    assert r is out
    np.testing.assert_array_equal(out.get(), h + h)
    with pytest.raises(TypeError, match="host memory"):
        h + a  # numpy defers to cukit, which refuses the hidden copy


def test_numpy_functions_run_cukits(h):
    a = cukit.asarray(h)
    r = np.concatenate([a, a])
    assert isinstance(r, cukit.Array)
    np.testing.assert_array_equal(r.get(), np.concatenate([h, h]))
    np.testing.assert_array_equal(np.where(a > 0, a, 0).get(), np.where(h > 0, h, 0))
    np.testing.assert_allclose(float(np.sum(a)), h.sum(), rtol=1e-5,
                               atol=1e-5 * np.abs(h).sum())  # a sum may cancel: bound the terms
    for got, want in zip(np.nonzero(a > 0), np.nonzero(h > 0)):
        np.testing.assert_array_equal(got.get(), want)


def test_a_numpy_function_cukit_lacks_is_named(h):
    a = cukit.asarray(h)
    with pytest.raises(TypeError, match="no implementation of numpy's function 'piecewise'"):
        np.piecewise(a, [a > 0], [1.0])


@pytest.mark.parametrize("shape", [(3, 4), (0,), (), (2000,), (40, 50), (11, 12, 13)])
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.complex64, np.bool_])
def test_repr_and_str_as_numpy(shape, dtype):
    x = np.random.default_rng().standard_normal(shape) * 100
    h = np.asarray((x > 0) if dtype is np.bool_ else x.astype(dtype))
    a = cukit.asarray(h)
    assert repr(a) == repr(h)
    assert str(a) == str(h)


def test_repr_of_a_large_array_copies_what_it_shows():
    a = cukit.zeros(1 << 22, np.float32)
    a[[0, -1]] = 7
    assert repr(a) == repr(np.concatenate([[7], np.zeros((1 << 22) - 2), [7]]).astype(np.float32))


def test_freed_array_is_described():
    a = cukit.zeros(4, np.float32)
    a.free()
    assert "freed" in repr(a)


def test_iteration_over_the_first_axis(h):
    a = cukit.asarray(h)
    rows = list(a)
    assert len(rows) == 4
    for r, w in zip(rows, h):
        np.testing.assert_array_equal(r.get(), w)
    with pytest.raises(TypeError, match="0-d"):
        iter(cukit.asarray(np.float32(1)))


def test_pickle_and_deepcopy_on_the_same_device(h):
    a = cukit.asarray(h)[:, ::2]
    for b in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a)):
        assert isinstance(b, cukit.Array) and b.device == a.device
        assert b.ptr != a.ptr
        np.testing.assert_array_equal(b.get(), h[:, ::2])


def test_flags_by_key_and_by_attribute(h):
    a = cukit.asarray(h)
    assert a.flags["C_CONTIGUOUS"] and a.flags.c_contiguous
    assert a.T.flags.f_contiguous and not a.T.flags.c_contiguous
    assert a.flags.writeable
    with pytest.raises(AttributeError):
        a.flags.nonsense
