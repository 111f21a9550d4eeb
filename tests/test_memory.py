"""Device memory: Buffer, Array, copies in both directions, checks, and freeing."""
import gc

import numpy as np
import pytest

import cukit
from conftest import poison

pytestmark = pytest.mark.gpu

DTYPES = ["f2", "f4", "f8", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "c8", "c16", "?"]


def random_array(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def test_alloc_gives_a_buffer():
    buf = cukit.alloc(1 << 20)
    assert buf.size == 1 << 20 and buf.nbytes == 1 << 20
    assert int(buf) == buf.ptr and buf.ptr > 0
    assert buf.device is cukit.Device(0)
    assert not buf.freed
    buf.free()
    assert buf.freed
    buf.free()  # idempotent
    with pytest.raises(ValueError, match="freed"):
        int(buf)


def test_alloc_rejects_negative_and_huge_sizes():
    with pytest.raises(ValueError, match="size must be"):
        cukit.alloc(-1)
    with pytest.raises(cukit.OutOfMemoryError) as info:
        cukit.alloc(1 << 60)
    assert isinstance(info.value, MemoryError)
    assert info.value.name == "CUDA_ERROR_OUT_OF_MEMORY"
    assert "could not allocate 1152921504606846976 bytes" in str(info.value)
    assert "are free" in str(info.value)
    cukit.alloc(0).free()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (1000,), (7, 13), (3, 5, 7), ()])
def test_round_trip(rng, dtype, shape):
    host = random_array(rng, shape, dtype)
    dev = cukit.to_device(host)
    assert dev.shape == shape and dev.dtype == host.dtype
    assert dev.size == host.size and dev.nbytes == host.nbytes and dev.ndim == host.ndim
    assert dev.strides == host.strides
    back = dev.get()
    assert back.dtype == host.dtype and back.shape == shape
    np.testing.assert_array_equal(back, host)


def test_get_into_out_and_set(rng):
    host = rng.standard_normal((64, 33)).astype(np.float32)
    dev = cukit.empty((64, 33), np.float32)
    dev.set(host)
    out = poison((64, 33), np.float32)
    assert dev.get(out=out) is out
    np.testing.assert_array_equal(out, host)
    new = rng.standard_normal((64, 33)).astype(np.float32)
    dev.set(new)
    np.testing.assert_array_equal(dev.get(), new)


def test_set_from_a_non_contiguous_view_and_from_lists(rng):
    host = rng.standard_normal((20, 20))
    dev = cukit.empty((10, 10), "f8")
    dev.set(host[::2, ::2])
    np.testing.assert_array_equal(dev.get(), host[::2, ::2])
    small = cukit.empty(3, np.int32)
    small.set([1, 2, 3])
    np.testing.assert_array_equal(small.get(), [1, 2, 3])


def test_set_and_get_with_raw_bytes(rng):
    host = rng.standard_normal(8).astype(np.float32)
    dev = cukit.empty(8, np.float32)
    dev.set(host.tobytes())
    out = bytearray(32)
    dev.get(out=out)
    assert bytes(out) == host.tobytes()


def test_empty_zeros_and_likes(rng):
    z = cukit.zeros((5, 6), np.int16)
    np.testing.assert_array_equal(z.get(), np.zeros((5, 6), np.int16))
    assert cukit.empty(10).dtype == np.float64
    host = rng.standard_normal((3, 4)).astype(np.float32)
    like = cukit.empty_like(host)
    assert like.shape == (3, 4) and like.dtype == np.float32
    like2 = cukit.zeros_like(cukit.to_device(host), dtype=np.float64)
    assert like2.dtype == np.float64 and (like2.get() == 0).all()
    assert cukit.empty(0, np.float32).get().shape == (0,)


def test_to_device_converts_dtype_and_byte_order(rng):
    host = rng.standard_normal(100)
    dev = cukit.to_device(host, dtype=np.float32)
    np.testing.assert_array_equal(dev.get(), host.astype(np.float32))
    big = host.astype(">f8")
    dev = cukit.to_device(big)
    assert dev.dtype == np.dtype("f8")
    np.testing.assert_array_equal(dev.get(), host)
    dev = cukit.to_device(host[::3])  # non-contiguous source
    np.testing.assert_array_equal(dev.get(), host[::3])


def test_copy_is_a_new_allocation(rng):
    host = rng.standard_normal(50)
    a = cukit.to_device(host)
    b = a.copy()
    assert b.ptr != a.ptr
    a.set(np.zeros(50))
    np.testing.assert_array_equal(b.get(), host)
    np.testing.assert_array_equal(cukit.to_device(b).get(), host)


def test_copy_checks_shape_and_dtype_before_copying(rng):
    dev = cukit.to_device(rng.standard_normal((4, 4)).astype(np.float32))
    before = dev.get()
    with pytest.raises(ValueError, match="shape"):
        dev.set(np.zeros((4, 5), np.float32))
    with pytest.raises(TypeError, match="float64"):
        dev.set(np.zeros((4, 4), np.float64))
    with pytest.raises(ValueError, match="holds 12 bytes but the array has 64"):
        dev.set(b"x" * 12)
    with pytest.raises(ValueError, match="shape"):
        dev.get(out=np.zeros((16,), np.float32))
    with pytest.raises(TypeError, match="float64"):
        dev.get(out=np.zeros((4, 4), np.float64))
    with pytest.raises(ValueError, match="out holds 8 bytes"):
        dev.get(out=bytearray(8))
    with pytest.raises(TypeError, match="writable C-contiguous"):
        dev.get(out=b"x" * 64)
    with pytest.raises(ValueError, match="C-contiguous"):
        dev.get(out=np.zeros((4, 8), np.float32)[:, ::2], stream=cukit.Stream())
    np.testing.assert_array_equal(dev.get(), before)  # nothing was overwritten
    strided = poison((4, 8), np.float32)
    dev.get(out=strided[:, ::2])  # without a stream, any layout
    np.testing.assert_array_equal(strided[:, ::2], before)
    assert np.isnan(strided[:, 1::2]).all()


def test_bad_shapes_and_dtypes():
    with pytest.raises(ValueError, match="negative"):
        cukit.empty((3, -1))
    with pytest.raises(TypeError, match="shape must be"):
        cukit.empty("big")
    with pytest.raises(TypeError, match="Python objects"):
        cukit.empty(3, object)
    with pytest.raises(TypeError, match="Python objects"):
        cukit.to_device(np.array([1, "a", None], dtype=object))
    with pytest.raises(ValueError, match="too large"):
        cukit.empty((2**40, 2**40), np.float32)
    with pytest.raises(TypeError, match="copy"):
        cukit.empty(3).set(cukit.empty(3))


@pytest.mark.gpu
def test_buffer_repr_shows_its_address():
    b = cukit.alloc(16)
    assert repr(b) == f"<cukit.Buffer 16 bytes at {hex(b.ptr)} on device 0>"


def test_use_after_free_raises_and_does_not_crash():
    a = cukit.zeros(100, np.float32)
    a.free()
    a.free()
    for op in (a.get, lambda: a.set(np.zeros(100, np.float32)), lambda: a.ptr, a.copy,
               lambda: a.__cuda_array_interface__):
        with pytest.raises(ValueError, match="freed"):
            op()
    assert "freed" in repr(a)


def test_memory_is_freed_with_the_last_reference():
    # this process's arrays (pool_used), not the whole GPU's free memory, which other
    # processes sharing the GPU (a parallel test run) move meanwhile
    start = cukit.memory_info()["pool_used"]
    for _ in range(20):
        a = cukit.empty(256 << 20, np.uint8)  # 256 MiB each, 5 GiB in all if leaked
        assert cukit.memory_info()["pool_used"] >= start + (256 << 20)
        del a
    gc.collect()
    assert cukit.memory_info()["pool_used"] < start + (256 << 20)


def test_cuda_array_interface_export(rng):
    host = rng.standard_normal((3, 4)).astype(np.float32)
    a = cukit.to_device(host)
    cai = a.__cuda_array_interface__
    assert cai["shape"] == (3, 4) and cai["typestr"] == "<f4" and cai["version"] == 3
    assert cai["data"] == (a.ptr, False)


def test_interop_with_cupy_and_torch(rng):
    host = rng.standard_normal(1000).astype(np.float32)
    a = cukit.to_device(host)
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        c = cupy.asarray(a)
        np.testing.assert_array_equal(cupy.asnumpy(c), host)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        t = torch.as_tensor(a, device="cuda")
        np.testing.assert_array_equal(t.cpu().numpy(), host)
    if cupy is None and torch is None:
        pytest.skip("neither cupy nor torch installed")
