"""Many GPUs in one process: device scopes, peer access, copies between devices, a thread per GPU."""
import threading

import numpy as np
import pytest

import cukit

from conftest import poison

# Every test here uses all the GPUs there are: under pytest-xdist with --dist loadgroup
# (tools/gpu_check.sh) they run in one worker, not in every worker at once (24 workers
# each making communicators on 4 GPUs ran the GPUs out of memory for the whole suite).
pytestmark = pytest.mark.xdist_group("all_gpus")

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}"""


@pytest.mark.gpu
def test_device_scope_restores_the_previous_device():
    cukit.Device(0).use()
    with cukit.Device(0) as d:
        assert d is cukit.Device(0) and cukit.get_device() is d
    assert cukit.get_device() is cukit.Device(0)


@pytest.mark.gpu
def test_device_exit_without_enter():
    with pytest.raises(RuntimeError, match="without a matching __enter__"):
        cukit.Device(0).__exit__(None, None, None)


@pytest.mark.gpu
def test_can_access_self_and_bad_ordinal():
    assert cukit.can_access_peer(0, 0) is True
    with pytest.raises(ValueError, match="there is no CUDA device 99"):
        cukit.can_access_peer(0, 99)


@pytest.mark.multi_gpu
def test_nested_scopes_per_thread():
    cukit.Device(0).use()
    with cukit.Device(1):
        assert cukit.get_device().ordinal == 1
        with cukit.Device(0):
            assert cukit.get_device().ordinal == 0
            seen = []
            t = threading.Thread(target=lambda: seen.append(cukit.Device(1).use().ordinal))
            t.start()
            t.join()
            assert seen == [1] and cukit.get_device().ordinal == 0  # the other thread's own
        assert cukit.get_device().ordinal == 1
        a = cukit.zeros(4, np.float32)
        assert a.device.ordinal == 1
    assert cukit.get_device().ordinal == 0


@pytest.mark.multi_gpu
def test_peer_access_is_idempotent():
    if not cukit.can_access_peer(0, 1):
        pytest.skip("devices 0 and 1 have no peer path")
    assert cukit.Device(0).can_access_peer(1)
    cukit.Device(0).enable_peer_access(cukit.Device(1))
    cukit.Device(0).enable_peer_access(1)  # again: no error
    cukit.Device(1).enable_peer_access(0)


@pytest.mark.multi_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8])
def test_array_to_another_device(rng, dtype):
    x = (rng.standard_normal((37, 129)) * 100).astype(dtype)
    a = cukit.to_device(x, device=0)
    b = a.to(1)
    assert b.device.ordinal == 1 and b.shape == x.shape and b.dtype == x.dtype
    np.testing.assert_array_equal(b.get(), x)
    assert a.to(0) is a
    # A strided view is made contiguous on its device first.
    c = a[:, ::3].to(cukit.Device(1))
    np.testing.assert_array_equal(c.get(), x[:, ::3])


@pytest.mark.multi_gpu
def test_copy_between_devices_on_a_stream(rng):
    x = rng.standard_normal(1 << 20).astype(np.float32)
    src = cukit.to_device(x, device=0)
    dst = cukit.empty(x.shape, np.float32, device=1)
    dst.set(poison(x.shape, np.float32))
    s = cukit.Stream(device=1)
    cukit.copyto(dst, src, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(dst.get(), x)


@pytest.mark.multi_gpu
def test_copy_waits_for_the_kernel_that_wrote_the_source(rng):
    """A kernel on device 0 writes src; the peer copy to device 1 must see its result."""
    mod = cukit.compile(SAXPY, device=0)
    n = 1 << 22
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    dx, dy = cukit.to_device(x, device=0), cukit.to_device(y, device=0)
    mod.saxpy(np.float32(3.0), dx, dy, n, grid=(n + 255) // 256, block=256)
    out = dy.to(1)
    # The GPU fuses a*x + y (one rounding), numpy rounds twice: 1 ulp apart at most.
    np.testing.assert_allclose(out.get(), 3.0 * x + y, rtol=1e-5, atol=1e-6)


@pytest.mark.multi_gpu
def test_copy_between_devices_needs_contiguous_arrays():
    a = cukit.zeros((8, 8), np.float32, device=0)
    b = cukit.zeros((8, 4), np.float32, device=1)
    with pytest.raises(ValueError, match="needs two C-contiguous arrays"):
        cukit.copyto(b, a[:, ::2])


@pytest.mark.multi_gpu
def test_two_gpus_four_threads_each(rng):
    """8 threads, 4 per GPU, each compiling, launching and copying on its own device."""
    n = 1 << 16
    jobs = [(d, rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32))
            for d in (0, 1) for _ in range(4)]
    errors, results = [], [None] * len(jobs)

    def work(i, device, x, y):
        try:
            with cukit.Device(device):
                mod = cukit.compile(SAXPY)
                dx, dy = cukit.to_device(x), cukit.to_device(y)
                assert dx.device.ordinal == device
                mod.saxpy(np.float32(2.0), dx, dy, n, grid=(n + 255) // 256, block=256)
                results[i] = dy.get()
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i, *job)) for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    for (device, x, y), got in zip(jobs, results):
        np.testing.assert_allclose(got, 2.0 * x + y, rtol=1e-6)


DEFAULT_DEVICE = r"""
import numpy as np, cukit
x = np.arange(1000, dtype=np.float32)
a = cukit.to_device(x, device=1)        # work on GPU 1's objects...
b = (a + a).get()
a.to(0)
del a
seen = [cukit.get_device().ordinal, cukit.empty(4, np.float32).device.ordinal]
with cukit.Device(1):                    # ...a scope chooses it...
    seen.append(cukit.empty(4, np.float32).device.ordinal)
    cukit.to_device(x, device=0).get()   # (work on GPU 0 inside does not unchoose it)
    seen.append(cukit.get_device().ordinal)
seen.append(cukit.get_device().ordinal)
cukit.Device(1).use()                    # ...and so does use(), until changed
cukit.to_device(x, device=0) + 1
seen.append(cukit.get_device().ordinal)
print(seen)
"""


@pytest.mark.multi_gpu
def test_working_on_another_gpu_does_not_change_the_default_device():
    """The default device is GPU 0 or the one chosen (use(), with), never the GPU cukit
    last made current to work on an array there."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", DEFAULT_DEVICE], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "[0, 0, 1, 1, 0, 1]"
