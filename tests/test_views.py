"""Views and strided copies: indexing, reshape, transpose, copies and fills of strided layouts."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cukit
from conftest import poison

pytestmark = pytest.mark.gpu

# itemsizes 1, 2, 3 (packed struct), 4, 8, 12 (struct), 16, and bool
DTYPES = ["f4", "f8", "i1", "u2", "f2", "c16", "?",
          np.dtype([("a", "u1"), ("b", "<u2")]), np.dtype([("x", "<f4"), ("y", "<i8")])]


def random_array(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "V":  # random bytes, viewed as the structure
        raw = rng.integers(0, 256, size=int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
        return raw.view(dtype).reshape(shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def poisoned(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "V?b":
        return np.frombuffer(b"\xa5" * (int(np.prod(shape)) * dtype.itemsize), dtype).reshape(shape).copy()
    return poison(shape, dtype)


def same(a, b):
    """Exact equality, bit for bit (NaN poison included)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes()


KEYS = [
    (slice(1, 9, 2), slice(None, None, 3)),
    (Ellipsis, 2),
    (1,),
    3,
    (-1, slice(None, None, -2)),
    (None, 2, Ellipsis, None),
    (slice(None, None, -1), slice(3, None), slice(None, None, -4)),
    (slice(2, 2),),
    (slice(None), 4, slice(1, 4)),
    (6, 12, 4),
    (Ellipsis,),
    (slice(-3, None), Ellipsis, slice(None, None, 2)),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_indexing_matches_numpy(rng, key):
    host = rng.standard_normal((7, 13, 5)).astype(np.float32)
    a = cukit.to_device(host)
    view, want = a[key], host[key]
    assert view.shape == want.shape and view.strides == want.strides
    assert view.buffer is a.buffer
    assert view.is_contiguous == want.flags.c_contiguous
    out = poison(want.shape, np.float32)
    view.get(out=out)
    same(out, want)
    same(view.get(), want)


def test_views_of_views_and_writes_through_them(rng):
    host = rng.standard_normal((9, 11, 6))
    a = cukit.to_device(host)
    v = a[1:, ::2][::-1, 1:5][:, ::2, ::-3]
    want = host[1:, ::2][::-1, 1:5][:, ::2, ::-3]
    assert v.shape == want.shape and v.strides == want.strides
    same(v.get(), want)
    new = rng.standard_normal(want.shape)
    v.set(new)
    host[1:, ::2][::-1, 1:5][:, ::2, ::-3] = new
    same(a.get(), host)
    # a view keeps the memory alive after its parent is gone
    del a
    same(v.get(), new)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("key", [
    (slice(1, 6, 2), slice(None, None, 3)),          # the copy kernel
    (slice(None, None, -1), 4, slice(None, None, -2)),
    (Ellipsis, slice(1, 4)),                          # short rows
    (slice(2, 5),),                                   # one contiguous run
], ids=["steps", "negative", "rows", "run"])
def test_strided_copies_in_every_direction(rng, dtype, key):
    shape = (7, 13, 5)
    host = random_array(rng, shape, dtype)
    want = host[key]
    # device strided -> host
    a = cukit.to_device(host)
    same(a[key].get(), want)
    # device strided -> strided host view (untouched host elements keep their poison)
    big = poisoned((want.shape[0] * 2,) + want.shape[1:], dtype) if want.ndim else None
    if big is not None:
        a[key].get(out=big[::2])
        expect = poisoned(big.shape, dtype)
        expect[::2] = want
        same(big, expect)
    # host -> device strided (poison outside the view must survive)
    d = cukit.to_device(poisoned(shape, dtype))
    new = random_array(rng, want.shape, dtype)
    d[key].set(new)
    expect = poisoned(shape, dtype)
    expect[key] = new
    same(d.get(), expect)
    # strided host -> strided device
    src_host = random_array(rng, (want.shape[0] * 3,) + want.shape[1:], dtype) if want.ndim else None
    if src_host is not None:
        d[key].set(src_host[::3])
        expect[key] = src_host[::3]
        same(d.get(), expect)
    # device -> device, both strided, different layouts
    e = cukit.to_device(poisoned(shape, dtype))
    cukit.copyto(e[key], a[key])
    expect = poisoned(shape, dtype)
    expect[key] = want
    same(e.get(), expect)
    # into a fresh contiguous array, and from it back into a strided one
    c = cukit.ascontiguousarray(a[key])
    assert c.is_contiguous
    same(c.get(), want)
    f = cukit.to_device(poisoned(shape, dtype))
    cukit.copyto(f[key], c)
    same(f.get(), expect)


@pytest.mark.parametrize("shape, key", [
    ((40, 64), (slice(None, None, 2),)),                      # wide rows: cuMemcpy2D
    ((8, 9, 40), (slice(None, None, 2), slice(None, None, 3))),  # cuMemcpy3D
    ((8, 9, 40), (slice(1, None, 2), slice(None), slice(2, 38))),
    ((6, 100), (slice(None), slice(None, None, 7))),          # element steps: the kernel
    ((3, 4, 5, 6, 7), (slice(None, None, 2), Ellipsis, slice(None, None, -1))),
    ((4, 6, 8, 32), (slice(None, None, 2), slice(None, None, 3), slice(None, None, 2))),  # 16-byte units
    ((5, 7, 9, 6), (slice(1, None, 2), slice(None, None, 3), slice(None, None, 2))),  # 8-byte units
])
def test_copy_layouts(rng, shape, key):
    host = rng.standard_normal(shape).astype(np.float32)
    a = cukit.to_device(host)
    b = cukit.to_device(poison(shape, np.float32))
    cukit.copyto(b[key], a[key])
    expect = poison(shape, np.float32)
    expect[key] = host[key]
    same(b.get(), expect)
    same(a[key].copy().get(), host[key])
    # transposed source into a contiguous destination
    t = cukit.to_device(poison(host.T.shape, np.float32))
    cukit.copyto(t, a.T)
    same(t.get(), host.T)


def test_overlapping_copies_behave_as_if_the_source_were_read_first(rng):
    host = rng.standard_normal((50, 8))
    a = cukit.to_device(host)
    cukit.copyto(a[1:], a[:-1])
    host[1:] = host[:-1].copy()
    same(a.get(), host)
    cukit.copyto(a[:, ::-1], a)
    host[:, ::-1] = host.copy()
    same(a.get(), host)
    cukit.copyto(a, a)  # the same layout: nothing to do
    same(a.get(), host)


def test_async_copies_on_a_stream(rng):
    s = cukit.Stream()
    host = rng.standard_normal((64, 48)).astype(np.float32)
    a = cukit.to_device(host, stream=s)
    b = cukit.to_device(poison((64, 48), np.float32), stream=s)
    cukit.copyto(b[::2, 1::3], a[::2, 1::3], stream=s)
    out = poison((32, 16), np.float32)
    b[::2, 1::3].get(out=out, stream=s)
    got = a.get(stream=s)
    new = rng.standard_normal((32, 16)).astype(np.float32)
    a[1::2, ::3].set(new, stream=s)
    s.synchronize()
    same(out, host[::2, 1::3])
    same(got, host)
    host[1::2, ::3] = new
    same(a.get(), host)
    c = a[::-1].copy(stream=s)
    s.synchronize()
    same(c.get(), host[::-1])


@pytest.mark.parametrize("dtype, value", [("i1", -5), ("u2", 65535), ("f2", 1.5), ("f4", -2.25),
                                          ("f8", np.pi), ("c16", 1 - 2j), ("?", True),
                                          (np.dtype([("a", "u1"), ("b", "<u2")]), (7, 513)),
                                          (np.dtype([("x", "<f4"), ("y", "<i8")]), (1.5, -3))])
@pytest.mark.parametrize("key", [(slice(None, None, 2), slice(1, None, 3)),
                                 (slice(1, 5), slice(None, None, -1)),
                                 (Ellipsis, 2), (slice(None), slice(2, 9))],
                         ids=["steps", "reversed", "column", "rows"])
def test_fill_strided_views(dtype, value, key):
    shape = (6, 10)
    a = cukit.to_device(poisoned(shape, dtype))
    a[key].fill(value)
    expect = poisoned(shape, dtype)
    expect[key] = value
    same(a.get(), expect)
    s = cukit.Stream()
    a[key].fill(value, stream=s)
    s.synchronize()
    same(a.get(), expect)


def test_fill_of_large_elements_in_a_strided_view():
    big = np.dtype("S200")
    a = cukit.to_device(np.zeros((6, 4), big))
    a.fill(b"x" * 200)  # contiguous: the memset family
    a[::2, 1].fill(b"z" * 200)  # one gap per element: the memset family too
    expect = np.full((6, 4), b"x" * 200, big)
    expect[::2, 1] = b"z" * 200
    same(a.get(), expect)
    with pytest.raises(TypeError, match="at most 128 bytes"):
        a[:, 1:3].fill(b"y" * 200)
    same(a.get(), expect)


def test_setitem(rng):
    host = rng.standard_normal((8, 9))
    a = cukit.to_device(host)
    a[2:5, ::2] = 7.5
    host[2:5, ::2] = 7.5
    row = rng.standard_normal(9)
    a[1] = row
    host[1] = row
    a[..., 0] = a[:, 3]
    host[..., 0] = host[:, 3]
    a[6] = [1, 2, 3, 4, 5, 6, 7, 8, 9]
    host[6] = np.arange(1, 10)
    a[7, ::3] = np.array([-1.0])  # broadcast from the host
    host[7, ::3] = -1.0
    same(a.get(), host)
    with pytest.raises(ValueError, match="shape"):
        a[0] = a[:, 0]
    with pytest.raises(TypeError, match="delete"):
        del a[0]


def test_zero_dimensional_views(rng):
    host = rng.standard_normal((7, 13, 5))
    a = cukit.to_device(host)
    x = a[6, 12, 4]
    assert x.shape == () and x.ndim == 0 and x.size == 1
    same(x.get(), np.asarray(host[6, 12, 4]))
    x.fill(3.25)
    host[6, 12, 4] = 3.25
    same(a.get(), host)


def test_reshape(rng):
    host = rng.standard_normal((6, 8, 5)).astype(np.float32)
    a = cukit.to_device(host)
    r = a.reshape(48, 5)
    assert r.ptr == a.ptr and r.buffer is a.buffer
    same(r.get(), host.reshape(48, 5))
    same(a.reshape(-1).get(), host.reshape(-1))
    same(a.reshape((2, -1, 10)).get(), host.reshape(2, -1, 10))
    v = a[::2]                    # (3, 8, 5), rows 2 apart
    same(v.reshape(3, 40).get(), host[::2].reshape(3, 40))
    same(v.reshape(3, 1, 8, 5, 1).get(), host[::2].reshape(3, 1, 8, 5, 1))
    with pytest.raises(ValueError, match="without copying"):
        v.reshape(24, 5)
    same(cukit.ascontiguousarray(v).reshape(24, 5).get(), host[::2].reshape(24, 5))
    with pytest.raises(ValueError, match="cannot reshape"):
        a.reshape(7, 7)
    with pytest.raises(ValueError, match="cannot reshape"):
        a.reshape(-1, 7)
    with pytest.raises(ValueError, match="negative"):
        a.reshape(-1, -1)


def test_transpose(rng):
    host = rng.standard_normal((4, 6, 3))
    a = cukit.to_device(host)
    for got, want in [(a.T, host.T), (a.transpose(), host.transpose()),
                      (a.transpose(1, 0, 2), host.transpose(1, 0, 2)),
                      (a.transpose((2, 0, 1)), host.transpose((2, 0, 1))),
                      (a.transpose(-1, 0, 1), host.transpose(-1, 0, 1)),
                      (a[1:, ::2].T, host[1:, ::2].T)]:
        assert got.shape == want.shape and got.strides == want.strides
        same(got.get(), want)
    assert a.T.flags["F_CONTIGUOUS"] and not a.T.is_contiguous
    with pytest.raises(ValueError, match="permutation"):
        a.transpose(0, 0, 1)
    with pytest.raises(ValueError, match="3 axes|2 axes"):
        a.transpose(0, 1)


def test_flags_copy_and_cuda_array_interface(rng):
    host = rng.standard_normal((5, 6)).astype(np.float32)
    a = cukit.to_device(host)
    assert a.is_contiguous and a.flags == {"C_CONTIGUOUS": True, "F_CONTIGUOUS": False,
                                           "WRITEABLE": True}
    assert cukit.ascontiguousarray(a) is a
    v = a[1:, ::2]
    assert not v.is_contiguous and v.ptr == a.ptr + 6 * 4
    cai = v.__cuda_array_interface__
    assert cai["data"] == (a.ptr + 24, False) and cai["strides"] == (24, 8)
    assert cai["shape"] == (4, 3) and a.__cuda_array_interface__["strides"] is None
    c = v.copy()
    assert c.is_contiguous and c.buffer is not a.buffer
    same(c.get(), host[1:, ::2])
    assert not v.flags.c_contiguous and repr(v) == repr(host[1:, ::2])


def test_to_device_of_strided_host_data_and_of_device_arrays(rng):
    host = rng.standard_normal((10, 12))
    same(cukit.to_device(host[::-2, 1::3]).get(), host[::-2, 1::3])
    a = cukit.to_device(host)
    b = cukit.to_device(a[::2])
    assert b.is_contiguous and b.buffer is not a.buffer
    same(b.get(), host[::2])
    with pytest.raises(TypeError, match="does not convert"):
        cukit.to_device(a, dtype=np.float32)


def test_kernel_refuses_a_strided_view(rng):
    mod = cukit.compile(r'''
    extern "C" __global__ void twice(float* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= 2;
    }''')
    a = cukit.to_device(rng.standard_normal((8, 8)).astype(np.float32))
    with pytest.raises(ValueError, match=r"not C-contiguous.*cukit.ascontiguousarray"):
        mod.twice(a[:, ::2], 32, grid=1, block=32)
    with pytest.raises(ValueError, match="not C-contiguous"):
        mod.twice(a.T, 64, grid=1, block=64)


def test_kernel_takes_contiguous_views(rng):
    mod = cukit.compile(r'''
    extern "C" __global__ void twice(float* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= 2;
    }''')
    host = rng.standard_normal((8, 8)).astype(np.float32)
    a = cukit.to_device(host)
    mod.twice(a[2:4], 16, grid=1, block=32)   # rows 2 and 3: one contiguous run
    host[2:4] *= 2
    same(a.get(), host)


def test_bad_indices_and_copies(rng):
    a = cukit.to_device(rng.standard_normal((4, 5)))
    with pytest.raises(IndexError, match="too many indices"):
        a[1, 2, 3]
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 5"):
        a[0, 5]
    with pytest.raises(IndexError, match="out of bounds"):
        a[-5]
    with pytest.raises(IndexError, match="only integers, slices"):
        a[1.5]
    with pytest.raises(IndexError, match="only integers, slices"):
        a["0"]
    with pytest.raises(IndexError, match="single ellipsis"):
        a[..., 1, ...]
    with pytest.raises(ValueError, match="step cannot be zero"):
        a[::0]
    with pytest.raises(ValueError, match="shape"):
        cukit.copyto(a[:, ::2], a[:, 1:])
    with pytest.raises(TypeError, match="same_kind"):   # numpy's copyto casting rule
        cukit.copyto(cukit.zeros((4, 3), np.int32), a[:, ::2])
    with pytest.raises(ValueError, match="shape"):
        a[:, ::2].set(np.zeros((4, 2)))
    with pytest.raises(TypeError, match="float32"):
        a[:, ::2].set(np.zeros((4, 3), np.float32))


def test_async_copies_need_contiguous_host_buffers(rng):
    s = cukit.Stream()
    a = cukit.to_device(rng.standard_normal((6, 8)))
    before = a.get()
    host = rng.standard_normal((6, 16))
    with pytest.raises(ValueError, match="C-contiguous"):
        a.set(host[:, ::2], stream=s)
    with pytest.raises(ValueError, match="C-contiguous"):
        a.set([[0.0] * 8] * 6, stream=s)
    with pytest.raises(ValueError, match="C-contiguous"):
        a.get(out=np.zeros((6, 16))[:, ::2], stream=s)
    with pytest.raises(ValueError, match="C-contiguous"):
        cukit.to_device(host[:, ::2], stream=s)
    with pytest.raises(ValueError, match="C-contiguous"):
        cukit.copyto(np.zeros((6, 16))[:, ::2], a, stream=s)
    with pytest.raises(ValueError, match="C-contiguous host buffer"):
        a.set(memoryview(np.zeros(96))[::2])
    with pytest.raises(TypeError, match="writable C-contiguous"):
        a.get(out=memoryview(bytearray(768))[::2])
    s.synchronize()
    same(a.get(), before)  # nothing was overwritten


DEBUG_OBSERVED = r"""
import sys
import numpy as np
import cukit
from cukit._cukit import _emulator_instructions as ran
src = np.random.default_rng(int(sys.argv[1])).standard_normal((8, 8)).astype(np.float32)
m = cukit.to_device(src)
m.T.copy()
cukit.synchronize()
for debug in (False, True):
    cukit.set_debug(debug)
    before = ran()
    y = m.T.copy()
    print(debug, ran() > before)   # the copy kernel ran by the time the call returned
    cukit.synchronize()
    assert np.array_equal(y.get(), src.T)
"""


def test_debug_mode_waits_for_a_strided_copy(rng):
    """cukit.set_debug covers the strided copy kernel: with the emulator deferring work
    to the next synchronize, the copy has run when the call returns only in debug mode."""
    if cukit.backend() != "emulator":
        pytest.skip("observes the emulator's deferred execution")
    env = dict(os.environ, CUKIT_EMULATOR_DEFER="1", CUKIT_BACKEND="emulator")
    out = subprocess.run([sys.executable, "-c", DEBUG_OBSERVED, str(rng.integers(1 << 30))],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "True", "True"]
