"""Zero-copy exchange: DLPack both ways, __cuda_array_interface__ import, foreign kernel arguments."""
import ctypes
import gc
import subprocess
import sys

import numpy as np
import pytest

import cukit

gpu = pytest.mark.gpu

_name = ctypes.pythonapi.PyCapsule_GetName
_name.restype, _name.argtypes = ctypes.c_char_p, [ctypes.py_object]


def capsule_name(cap):
    return _name(cap).decode()


class DLPackOnly:
    """Speaks DLPack and nothing else (as JAX arrays do); may lie about its device."""

    def __init__(self, inner, device=None):
        self.inner, self.device = inner, device

    def __dlpack__(self, **kw):
        return self.inner.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.device or self.inner.__dlpack_device__()


class CAIOnly:
    """Speaks only the CUDA Array Interface, with what we choose in it."""

    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


class CPUOnly:
    def __dlpack__(self, **kw):
        raise AssertionError("a CPU tensor's capsule must not be asked for")

    def __dlpack_device__(self):
        return (1, 0)


def torch_or_skip():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


# ------------------------------------------------------------------ no GPU needed


def test_host_data_through_dlpack_is_a_type_error():
    with pytest.raises(TypeError, match=r"host memory \(DLPack device kDLCPU\).*cukit.to_device"):
        cukit.from_dlpack(np.arange(4.0))
    with pytest.raises(TypeError, match="host memory.*cukit.to_device"):
        cukit.from_dlpack(CPUOnly())
    with pytest.raises(TypeError, match="host memory.*cukit.to_device"):
        cukit.asarray(CPUOnly())
    with pytest.raises(TypeError, match="does not support DLPack"):
        cukit.from_dlpack(object())


def test_other_devices_through_dlpack():
    class OnVulkan(CPUOnly):
        def __dlpack_device__(self):
            return (7, 0)

    with pytest.raises(TypeError, match="kDLVulkan.*not a CUDA GPU"):
        cukit.from_dlpack(OnVulkan())


def test_torch_cpu_tensors_are_refused():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="host memory.*cukit.to_device"):
        cukit.asarray(torch.arange(4.0))


# ------------------------------------------------------------------ our own exchange


@gpu
def test_dlpack_export_capsules(rng):
    a = cukit.to_device(rng.standard_normal((4, 6)).astype(np.float32))
    assert a.__dlpack_device__() == (2, 0)
    assert capsule_name(a.__dlpack__()) == "dltensor"
    assert capsule_name(a.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert capsule_name(a.__dlpack__(max_version=(0, 8))) == "dltensor"
    assert capsule_name(a.__dlpack__(stream=None, max_version=(2, 3), dl_device=(2, 0))) == \
        "dltensor_versioned"


@gpu
@pytest.mark.parametrize("versioned", [False, True])
@pytest.mark.parametrize("key", [(slice(None),), (slice(1, None, 2), slice(None, None, -3)),
                                 (Ellipsis, 2), (slice(None, None, -1),)])
def test_dlpack_round_trip_shares_memory(rng, versioned, key):
    host = rng.standard_normal((7, 13)).astype(np.float32)
    a = cukit.to_device(host)
    v = a[key]
    cap = v.__dlpack__(max_version=(1, 0) if versioned else None)
    b = cukit.from_dlpack(cap)
    assert capsule_name(cap).startswith("used_")
    assert b.ptr == v.ptr and b.shape == v.shape and b.strides == v.strides
    assert b.buffer is None  # imported memory: no Buffer of cukit's
    np.testing.assert_array_equal(b.get(), host[key])
    b.fill(1.5)
    host[key] = 1.5
    np.testing.assert_array_equal(a.get(), host)
    with pytest.raises(BufferError, match="consumed only once"):
        cukit.from_dlpack(cap)


@gpu
def test_exported_capsules_keep_the_array_alive(rng):
    host = rng.standard_normal(1000)
    a = cukit.to_device(host)
    refs = sys.getrefcount(a)
    caps = [a.__dlpack__(), a.__dlpack__(max_version=(1, 0))]
    assert sys.getrefcount(a) == refs + 2
    del caps  # never consumed: the capsules' destructors call the deleters
    assert sys.getrefcount(a) == refs
    cap = a.__dlpack__(max_version=(1, 0))
    del a
    gc.collect()
    junk = [cukit.to_device(np.full(1000, -1.0)) for _ in range(8)]  # would reuse freed memory
    b = cukit.from_dlpack(cap)
    del cap
    gc.collect()
    np.testing.assert_array_equal(b.get(), host)
    del junk


@gpu
def test_dlpack_export_options(rng):
    host = rng.standard_normal((3, 5))
    a = cukit.to_device(host)
    c = cukit.from_dlpack(a, copy=True)
    assert c.ptr != a.ptr
    np.testing.assert_array_equal(c.get(), host)
    cap = a[:, ::2].__dlpack__(copy=True, max_version=(1, 0))
    d = cukit.from_dlpack(cap)
    assert d.is_contiguous
    np.testing.assert_array_equal(d.get(), host[:, ::2])

    class Holder:  # hands numpy the host capsule __dlpack__(dl_device=CPU) gives
        def __init__(self, cap):
            self.cap = cap

        def __dlpack__(self, **kw):
            return self.cap

        def __dlpack_device__(self):
            return (1, 0)

    got = np.from_dlpack(Holder(a[::-1].__dlpack__(dl_device=(1, 0))))
    np.testing.assert_array_equal(got, host[::-1])
    with pytest.raises(BufferError, match="needs a copy"):
        a.__dlpack__(dl_device=(1, 0), copy=False)
    with pytest.raises(BufferError, match="cannot be exported"):
        a.__dlpack__(dl_device=(2, 7))
    with pytest.raises(ValueError, match="stream=0"):
        a.__dlpack__(stream=0)
    with pytest.raises(TypeError, match="stream"):
        a.__dlpack__(stream="default")
    s = cukit.Stream()
    e = cukit.from_dlpack(DLPackOnly(a))  # stream 1: nothing to wait for
    a.__dlpack__(stream=s.handle)         # the consumer's stream waits on ours
    a.__dlpack__(stream=-1)
    np.testing.assert_array_equal(e.get(), host)
    with pytest.raises(BufferError, match="no type"):
        cukit.to_device(np.zeros(3, "S4")).__dlpack__()
    a.free()
    with pytest.raises(ValueError, match="freed"):
        a.__dlpack__()


@gpu
def test_device_mismatches_are_named(rng):
    a = cukit.to_device(rng.standard_normal(8))
    with pytest.raises(ValueError, match="no CUDA device 5"):
        cukit.from_dlpack(DLPackOnly(a, device=(2, 5)))
    if cukit.device_count() > 1:
        with pytest.raises(ValueError, match="on CUDA device 0, but device 1 was asked for"):
            cukit.from_dlpack(a, device=1)
        with pytest.raises(ValueError, match="device 0, but device 1"):
            cukit.asarray(a, device=1)


@gpu
def test_asarray(rng):
    host = rng.standard_normal((5, 4)).astype(np.float32)
    a = cukit.to_device(host)
    assert cukit.asarray(a) is a
    assert cukit.asarray(a, dtype=np.float32) is a
    cast = cukit.asarray(a, dtype=np.float64)  # numpy's asarray converts
    assert cast.dtype == np.float64 and cast.buffer is not a.buffer
    np.testing.assert_array_equal(cast.get(), host.astype(np.float64))
    b = cukit.asarray(host)
    assert b.ptr != a.ptr
    np.testing.assert_array_equal(b.get(), host)
    np.testing.assert_array_equal(cukit.asarray([[1, 2], [3, 4]], dtype=np.int16).get(),
                                  np.array([[1, 2], [3, 4]], np.int16))
    np.testing.assert_array_equal(cukit.asarray(host[::2, ::-1]).get(), host[::2, ::-1])
    c = cukit.asarray(DLPackOnly(a[1:, ::2]))
    assert c.ptr == a[1:, ::2].ptr and c.strides == (16, 8)
    np.testing.assert_array_equal(c.get(), host[1:, ::2])
    np.testing.assert_array_equal(cukit.ascontiguousarray(DLPackOnly(a.T)).get(), host.T)


@gpu
def test_cuda_array_interface_import(rng):
    host = rng.standard_normal((6, 7))
    a = cukit.to_device(host)
    v = a[::2, 1::3]
    obj = CAIOnly(v.__cuda_array_interface__)
    b = cukit.asarray(obj)
    assert b.ptr == v.ptr and b.strides == v.strides and b.shape == v.shape
    np.testing.assert_array_equal(b.get(), host[::2, 1::3])
    refs = sys.getrefcount(obj)
    c = cukit.asarray(obj)
    assert sys.getrefcount(obj) == refs + 1  # the array keeps its producer alive
    del c
    assert sys.getrefcount(obj) == refs
    ro = dict(a.__cuda_array_interface__, data=(a.ptr, True))
    r = cukit.asarray(CAIOnly(ro))
    assert r.flags["WRITEABLE"] is False
    assert r.__cuda_array_interface__["data"] == (a.ptr, True)
    with pytest.raises(ValueError, match="read-only"):
        r.fill(0)
    with pytest.raises(ValueError, match="read-only"):
        r.set(host)
    with pytest.raises(ValueError, match="read-only"):
        cukit.copyto(r, a)
    np.testing.assert_array_equal(r.copy().get(), host)
    s = cukit.Stream()
    cukit.asarray(CAIOnly(dict(a.__cuda_array_interface__, stream=s.handle)))


@gpu
def test_cuda_array_interface_bad_inputs(rng):
    a = cukit.to_device(rng.standard_normal(8))
    cai = a.__cuda_array_interface__
    host = np.zeros(8)
    with pytest.raises(TypeError, match="not CUDA device memory"):
        cukit.asarray(CAIOnly(dict(cai, data=(host.ctypes.data, False))))
    with pytest.raises(ValueError, match="stream"):
        cukit.asarray(CAIOnly(dict(cai, stream=0)))
    with pytest.raises(TypeError, match="masked"):
        cukit.asarray(CAIOnly(dict(cai, mask=object())))
    with pytest.raises(TypeError, match="lacks"):
        cukit.asarray(CAIOnly({"shape": (8,)}))
    with pytest.raises(TypeError, match="native byte order"):
        cukit.asarray(CAIOnly(dict(cai, typestr=">f8")))


@gpu
def test_imported_arrays_let_go_with_free(rng):
    a = cukit.to_device(rng.standard_normal(8))
    obj = CAIOnly(a.__cuda_array_interface__)
    b = cukit.asarray(obj)
    refs = sys.getrefcount(obj)
    b.free()
    assert sys.getrefcount(obj) == refs - 1
    with pytest.raises(ValueError, match="freed"):
        b.get()


# ------------------------------------------------------------------ foreign kernel arguments

SAXPY = r'''
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}'''


@gpu
def test_dlpack_only_objects_as_kernel_arguments(rng):
    mod = cukit.compile(SAXPY)
    x = rng.standard_normal(300).astype(np.float32)
    y = rng.standard_normal(300).astype(np.float32)
    dx, dy = cukit.to_device(x), cukit.to_device(y)
    mod.saxpy(2.0, DLPackOnly(dx), DLPackOnly(dy), 300, grid=2, block=256)
    np.testing.assert_allclose(dy.get(), 2 * x + y, rtol=1e-6)
    with pytest.raises(ValueError, match="on device 1 but the kernel runs on device 0"):
        mod.saxpy(2.0, DLPackOnly(dx, device=(2, 1)), dy, 300, grid=2, block=256)
    with pytest.raises(TypeError, match="float64"):
        mod.saxpy(2.0, DLPackOnly(cukit.zeros(300)), dy, 300, grid=2, block=256)
    with pytest.raises(ValueError, match="not C-contiguous"):
        mod.saxpy(2.0, DLPackOnly(dx[::2]), dy, 150, grid=1, block=256)
    with pytest.raises(TypeError, match="host memory.*cukit.to_device"):
        mod.saxpy(2.0, CPUOnly(), dy, 300, grid=2, block=256)
    with pytest.raises(ValueError, match="not C-contiguous"):
        mod.saxpy(2.0, CAIOnly(dx[::2].__cuda_array_interface__), dy, 150, grid=1, block=256)


class OldDLPack(DLPackOnly):
    """A producer from before DLPack 1.0: __dlpack__ takes stream= alone."""

    def __init__(self, inner):
        super().__init__(inner)
        self.streams = []

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return self.inner.__dlpack__(stream=stream)


@gpu
def test_dlpack_producers_of_either_signature_as_kernel_arguments(rng):
    mod = cukit.compile(SAXPY)
    n = 300
    for make in (DLPackOnly, OldDLPack):
        for _ in range(3):
            x = rng.standard_normal(n).astype(np.float32)
            y = rng.standard_normal(n).astype(np.float32)
            dx, dy = cukit.to_device(x), cukit.to_device(y)
            px = make(dx)
            mod.saxpy(2.0, px, make(dy), n, grid=2, block=256)
            np.testing.assert_allclose(dy.get(), 2 * x + y, rtol=1e-6)
            if make is OldDLPack:
                assert px.streams == [None]  # asked with the legacy default stream's order
            with pytest.raises(TypeError, match="got a float64 array, but the kernel reads float32"):
                mod.saxpy(2.0, make(cukit.zeros(n)), dy, n, grid=2, block=256)
    gone = cukit.to_device(np.ones(n, np.float32))
    stale = DLPackOnly(gone)
    gone.free()
    with pytest.raises(ValueError, match="freed"):
        mod.saxpy(2.0, stale, dy, n, grid=2, block=256)


class CAIView:
    """A producer whose __cuda_array_interface__ is a property over a cukit array's (as
    CuPy's and Numba's are properties): it raises once the memory is freed."""

    def __init__(self, array):
        self.array = array

    @property
    def __cuda_array_interface__(self):
        return self.array.__cuda_array_interface__


def read_only(cai):
    return dict(cai, data=(cai["data"][0], True))


@gpu
@pytest.mark.parametrize("make", [CAIView, lambda a: CAIOnly(a.__cuda_array_interface__)],
                         ids=["property", "attribute"])
def test_cai_objects_as_kernel_arguments(rng, make):
    """The first object of a type goes the general way; later ones of that type go straight
    to their interface: the same results and the same errors each time."""
    mod = cukit.compile(SAXPY)
    n = 300
    for _ in range(3):
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        dx, dy = cukit.to_device(x), cukit.to_device(y)
        mod.saxpy(2.0, make(dx), make(dy), n, grid=2, block=256)
        np.testing.assert_allclose(dy.get(), 2 * x + y, rtol=1e-6)
        p = mod.saxpy.prepare(grid=2, block=256)
        p(3.0, make(dx), dy, n)
        np.testing.assert_allclose(dy.get(), 3 * x + (2 * x + y), rtol=1e-5, atol=1e-6)
        with pytest.raises(TypeError, match="got a float64 array, but the kernel reads float32"):
            mod.saxpy(2.0, make(cukit.to_device(x.astype(np.float64))), dy, n, grid=2, block=256)
        with pytest.raises(ValueError, match="not C-contiguous"):
            mod.saxpy(2.0, make(dx[::2]), dy, 150, grid=1, block=256)
        gone = cukit.to_device(x)
        view = CAIView(gone)
        gone.free()
        with pytest.raises(ValueError, match="freed"):
            mod.saxpy(2.0, view, dy, n, grid=2, block=256)
        # The launch path does not read the read-only flag (nor does it for cukit's own
        # read-only arrays): the producer's address is passed as for any other array.
        out = cukit.to_device(y)
        mod.saxpy(2.0, dx, CAIOnly(read_only(out.__cuda_array_interface__)), n, grid=2, block=256)
        np.testing.assert_allclose(out.get(), 2 * x + y, rtol=1e-6)


@gpu
def test_a_type_that_drops_its_interface_is_read_again(rng):
    class Producer:
        def __init__(self, array, on_device=True):
            self.array, self.on_device = array, on_device

        @property
        def __cuda_array_interface__(self):
            if not self.on_device:  # as torch's CPU tensors do
                raise AttributeError("not on the device")
            return self.array.__cuda_array_interface__

    mod = cukit.compile(SAXPY)
    n = 100
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dx, dy = cukit.to_device(x), cukit.to_device(y)
    mod.saxpy(2.0, Producer(dx), dy, n, grid=1, block=128)  # its type is remembered
    with pytest.raises(TypeError, match="expected device memory"):
        mod.saxpy(2.0, Producer(dx, on_device=False), dy, n, grid=1, block=128)
    mod.saxpy(2.0, Producer(dx), dy, n, grid=1, block=128)
    np.testing.assert_allclose(dy.get(), 2 * x + (2 * x + y), rtol=1e-5, atol=1e-6)
    del Producer.__cuda_array_interface__
    with pytest.raises(TypeError, match="expected device memory"):
        mod.saxpy(2.0, Producer(dx), dy, n, grid=1, block=128)


# Stands in for CuPy in a process of its own (cukit remembers cupy.ndarray once seen):
# the attributes cukit reads from a CuPy array, and an interface that counts its calls.
FAKE_CUPY = r"""
import sys, types
import numpy as np
import cukit

calls = 0

class MemoryPointer:
    def __init__(self, ptr):
        self.ptr = ptr

class ndarray:
    def __init__(self, array):
        self.array, self.data, self.dtype = array, MemoryPointer(array.ptr), array.dtype
        self._c_contiguous = array.flags["C_CONTIGUOUS"]

    @property
    def __cuda_array_interface__(self):
        global calls
        calls += 1
        return self.array.__cuda_array_interface__

cupy = types.ModuleType("cupy")
cupy.ndarray = ndarray
sys.modules["cupy"] = cupy

mod = cukit.compile(sys.argv[1])
rng = np.random.default_rng(int(sys.argv[2]))
n = 300
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)
for _ in range(2):  # the general path first, then cupy.ndarray's own check
    dx, dy = cukit.to_device(x), cukit.to_device(y)
    mod.saxpy(2.0, ndarray(dx), ndarray(dy), n, grid=2, block=256)
    np.testing.assert_allclose(dy.get(), 2 * x + y, rtol=1e-6)
    mod.saxpy.prepare(grid=2, block=256)(2.0, ndarray(dx), dy, n)
    np.testing.assert_allclose(dy.get(), 2 * x + (2 * x + y), rtol=1e-5, atol=1e-6)
    for bad, exc, words in [(cukit.zeros(n), TypeError,
                             "got a float64 array, but the kernel reads float32"),
                            (dx[::2], ValueError, "not C-contiguous")]:
        try:
            mod.saxpy(2.0, ndarray(bad), dy, n, grid=2, block=256)
        except exc as e:
            assert words in str(e), e
        else:
            raise AssertionError("no error")
assert calls == 0, calls  # read by its attributes
old = ndarray(cukit.to_device(x))
del old._c_contiguous  # a CuPy without the attribute: its interface is read instead
dy = cukit.to_device(y)
mod.saxpy(2.0, old, ndarray(dy), n, grid=2, block=256)
np.testing.assert_allclose(dy.get(), 2 * x + y, rtol=1e-6)
assert calls == 2, calls
print("ok")
"""


@gpu
def test_cupy_arrays_are_read_by_their_attributes(rng):
    proc = subprocess.run([sys.executable, "-c", FAKE_CUPY, SAXPY, str(rng.integers(2**32))],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


# ------------------------------------------------------------------ PyTorch


@gpu
def test_torch_exchange_both_ways(rng):
    torch = torch_or_skip()
    host = rng.standard_normal((7, 13, 5)).astype(np.float32)
    a = cukit.to_device(host)
    t = torch.from_dlpack(a)
    assert t.data_ptr() == a.ptr and tuple(t.shape) == host.shape
    np.testing.assert_array_equal(t.cpu().numpy(), host)
    tv = torch.from_dlpack(a[1::2, ::3])
    assert tv.stride() == tuple(s // 4 for s in a[1::2, ::3].strides)
    np.testing.assert_array_equal(tv.cpu().numpy(), host[1::2, ::3])
    t.mul_(2)  # torch writes, cukit reads
    torch.cuda.synchronize()
    np.testing.assert_array_equal(a.get(), host * 2)
    ts = torch.as_tensor(a[::2, 1:], device="cuda")  # through __cuda_array_interface__
    np.testing.assert_array_equal(ts.cpu().numpy(), host[::2, 1:] * 2)

    src = torch.from_numpy(host).cuda()
    for obj, want in [(src, host), (src[::2, 1:], host[::2, 1:]),
                      (src.transpose(0, 2), host.transpose(2, 1, 0)), (src[3], host[3])]:
        for imp in (cukit.from_dlpack, cukit.asarray):
            b = imp(obj)
            assert b.ptr == obj.data_ptr()
            assert b.strides == tuple(s * 4 for s in obj.stride())
            np.testing.assert_array_equal(b.get(), want)
    with torch.cuda.stream(torch.cuda.Stream()):
        tw = torch.from_dlpack(a)  # torch passes its own stream; it waits on ours
    np.testing.assert_array_equal(tw.cpu().numpy(), host * 2)


@gpu
def test_torch_lifetimes(rng):
    torch = torch_or_skip()
    host = rng.standard_normal(1 << 16).astype(np.float32)
    t = torch.from_numpy(host).cuda()
    a = cukit.from_dlpack(t)
    b = cukit.asarray(t[::2])
    del t
    gc.collect()
    torch.cuda.empty_cache()
    junk = [torch.full((1 << 16,), -1.0, device="cuda") for _ in range(8)]
    np.testing.assert_array_equal(a.get(), host)
    np.testing.assert_array_equal(b.get(), host[::2])
    c = cukit.to_device(host)
    u = torch.from_dlpack(c)
    del c
    gc.collect()
    junk += [cukit.to_device(np.full(1 << 16, -1.0, np.float32)) for _ in range(8)]
    np.testing.assert_array_equal(u.cpu().numpy(), host)
    del junk


@gpu
def test_torch_views_as_kernel_arguments(rng):
    torch = torch_or_skip()
    mod = cukit.compile(SAXPY)
    x = torch.randn(64, 4, device="cuda")
    y = torch.zeros(64, device="cuda")
    mod.saxpy(1.0, x[:, 0].contiguous(), y, 64, grid=1, block=64)
    torch.cuda.synchronize()
    assert torch.equal(y, x[:, 0])


# ------------------------------------------------------------------ CuPy, JAX, numba


@gpu
def test_cupy_exchange_both_ways(rng):
    cupy = pytest.importorskip("cupy")
    host = rng.standard_normal((9, 6)).astype(np.float64)
    a = cukit.to_device(host)
    for make in (cupy.from_dlpack, cupy.asarray):
        c = make(a[::2, ::-1])
        np.testing.assert_array_equal(cupy.asnumpy(c), host[::2, ::-1])
    c = cupy.from_dlpack(a)
    assert c.data.ptr == a.ptr
    src = cupy.asarray(host)
    for obj, want in [(src, host), (src[1::2, ::3], host[1::2, ::3]), (src.T, host.T)]:
        for imp in (cukit.from_dlpack, cukit.asarray):
            b = imp(obj)
            assert b.ptr == obj.data.ptr and b.strides == obj.strides
            np.testing.assert_array_equal(b.get(), want)
    keep = cukit.from_dlpack(cupy.asarray(host))  # the cupy array is dropped at once
    gc.collect()
    junk = [cupy.full(host.shape, -1.0) for _ in range(8)]
    np.testing.assert_array_equal(keep.get(), host)
    del junk


@gpu
def test_jax_exchange(rng):
    jax = pytest.importorskip("jax")
    try:
        x = jax.device_put(np.arange(12.0, dtype=np.float32).reshape(3, 4), jax.devices("gpu")[0])
    except RuntimeError:
        pytest.skip("jax has no GPU")
    a = cukit.from_dlpack(x)
    np.testing.assert_array_equal(a.get(), np.arange(12.0, dtype=np.float32).reshape(3, 4))
    y = jax.dlpack.from_dlpack(cukit.to_device(np.ones(5, np.float32)))
    np.testing.assert_array_equal(np.asarray(y), np.ones(5))


@gpu
def test_numba_exchange(rng):
    cuda = pytest.importorskip("numba.cuda")
    if not cuda.is_available():
        pytest.skip("numba has no CUDA")
    host = rng.standard_normal((4, 6))
    d = cuda.to_device(host)
    a = cukit.asarray(d)
    np.testing.assert_array_equal(a.get(), host)
    back = cuda.as_cuda_array(cukit.to_device(host)[:, ::2])
    np.testing.assert_array_equal(back.copy_to_host(), host[:, ::2])
