"""0-d arrays as numpy's scalars: float/int/index/bool/complex/format, item() and tolist()."""
import operator

import numpy as np
import pytest

import cukit

pytestmark = pytest.mark.gpu

DTYPES = ["?", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "c8", "c16"]


def fresh(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return (rng.standard_normal(shape) * 100).astype(dtype)


def same_scalar(got, want):
    assert type(got) is type(want), (got, want)
    assert got == want or (got != got and want != want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_d_conversions_match_numpy(dtype):
    rng = np.random.default_rng()
    host = fresh(rng, (), dtype)
    a = cukit.to_device(host)
    assert a.ndim == 0
    same_scalar(a.item(), host.item())
    same_scalar(a.tolist(), host.tolist())
    same_scalar(bool(a), bool(host))
    same_scalar(complex(a), complex(host))
    if np.dtype(dtype).kind != "c":
        same_scalar(float(a), float(host))
        same_scalar(int(a), int(host))
        assert format(a, "") == format(host, "")
        spec = "08.3f" if np.dtype(dtype).kind == "f" else ">12"
        assert format(a, spec) == format(host, spec)
        assert f"{a}" == f"{host}"
    if np.dtype(dtype).kind in "iu":
        same_scalar(operator.index(a), operator.index(host))


def test_reduction_results_are_python_numbers():
    rng = np.random.default_rng()
    host = rng.random(257).astype(np.float32)
    x = cukit.to_device(host)
    assert float(cukit.sum(x)) == pytest.approx(float(host.sum()), rel=1e-5)
    assert int(cukit.argmax(x)) == int(host.argmax())
    assert list(range(cukit.argmin(x))) == list(range(host.argmin()))
    assert [10, 20, 30, 40][cukit.argmax(cukit.to_device(np.array([1, 5, 2, 3])))] == 20
    assert bool(cukit.any(x > 0.5)) is True and not cukit.all(x > 2.0)
    assert f"{cukit.max(x):.4f}" == f"{host.max():.4f}"


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 0, 3), (2, 3, 2)])
@pytest.mark.parametrize("dtype", ["i4", "f4", "c16", "?", "u8"])
def test_tolist_any_shape(shape, dtype):
    host = fresh(np.random.default_rng(), shape, dtype)
    a = cukit.to_device(host)
    assert a.tolist() == host.tolist()
    if host.shape[-1]:
        assert a[..., ::-1].tolist() == host[..., ::-1].tolist()


def test_item_with_index_matches_numpy():
    host = fresh(np.random.default_rng(), (3, 4), "f8")
    a = cukit.to_device(host)
    for args in [(0,), (7,), (-1,), (2, 3), ((1, 2),)]:
        same_scalar(a.item(*args), host.item(*args))
    with pytest.raises(IndexError):
        a.item(12)
    one = cukit.to_device(host[:1, :1])
    same_scalar(one.item(), host[:1, :1].item())


def test_many_elements_refuse_to_convert():
    a = cukit.to_device(np.random.default_rng().random(6))
    for conv in (float, int, complex):
        with pytest.raises(TypeError, match=f"{conv.__name__}\\(\\) of an array of 6 elements"):
            conv(a)
    with pytest.raises(ValueError, match="item\\(\\) of an array of 6 elements"):
        a.item()
    with pytest.raises(ValueError, match="ambiguous"):
        bool(a)


def test_one_element_nd_arrays_follow_numpy():
    host = np.array([2.5])
    a = cukit.to_device(host)
    assert bool(a) is bool(host)
    for conv in (float, int, complex):
        try:
            want = conv(host)
        except TypeError:
            with pytest.raises(TypeError):
                conv(a)
        else:
            assert conv(a) == want


def test_index_needs_a_zero_d_integer_array():
    with pytest.raises(TypeError, match="only 0-d arrays of an integer dtype"):
        operator.index(cukit.to_device(np.array(2.0)))
    with pytest.raises(TypeError, match="only 0-d arrays of an integer dtype"):
        operator.index(cukit.to_device(np.array([2])))
    with pytest.raises(TypeError, match="only 0-d arrays of an integer dtype"):
        range(cukit.to_device(np.array(True)))
    # as an index: a 0-d integer array is an integer, an N-d one an index array
    host = np.arange(10.0)
    a = cukit.to_device(host)
    assert a[cukit.to_device(np.array(3))].item() == 3.0
    np.testing.assert_array_equal(a[cukit.to_device(np.array([1, 2]))].get(), host[[1, 2]])


def test_format_of_nd_arrays():
    a = cukit.to_device(np.arange(3.0))
    assert format(a, "") == str(a)
    with pytest.raises(TypeError, match="applies to 0-d arrays only"):
        format(a, ".2f")
    with pytest.raises(TypeError, match="must be str"):
        a.__format__(3)


def test_freed_array_refuses():
    a = cukit.to_device(np.array(1.5))
    a.free()
    for conv in (float, int, bool, lambda x: x.item(), lambda x: x.tolist(), lambda x: f"{x:.1f}"):
        with pytest.raises(Exception, match="freed"):
            conv(a)
