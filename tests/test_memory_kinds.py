"""Pinned, registered and managed host memory, the stream-ordered pool, and the copy path."""
import gc
import subprocess
import sys
import threading

import numpy as np
import pytest

import cukit
from conftest import SLOW_COPY, poison, slow_copy

gpu = pytest.mark.gpu

KERNELS = r"""
extern "C" __global__ void twice(const float* x, float* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}

extern "C" __global__ void add_one(double* x, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0;
}
""" + SLOW_COPY


@pytest.fixture(scope="module")
def kernels():
    return cukit.compile(KERNELS)


def launch(kernel, n, *args, stream=None):
    kernel(*args, grid=(n + 255) // 256, block=256, stream=stream)


# ------------------------------------------------------------------ bad input (no GPU needed)


def test_host_arrays_reject_bad_shapes_and_dtypes():
    for make in (cukit.pinned_empty, cukit.pinned_zeros, cukit.managed_empty, cukit.managed_zeros):
        with pytest.raises(ValueError, match="negative dimension"):
            make((3, -1))
        with pytest.raises(ValueError, match="too large"):
            make((2**40, 2**40), np.float32)
        with pytest.raises(TypeError, match="shape must be an int or a sequence of ints"):
            make("big")
        with pytest.raises(TypeError, match="Python objects"):
            make(3, object)


def test_advise_rejects_an_unknown_advice_name():
    with pytest.raises(ValueError, match="unknown advice 'often'.*read_mostly.*unset_"):
        cukit.advise(np.zeros(4), "often")


def test_prefetch_and_advise_want_managed_arrays():
    for call in (lambda a: cukit.prefetch(a, "host"), lambda a: cukit.advise(a, "read_mostly")):
        with pytest.raises(TypeError, match="managed arrays.*ordinary host memory"):
            call(np.zeros(4))
        with pytest.raises(TypeError, match="managed arrays.*list"):
            call([1.0, 2.0])


def test_register_rejects_strided_views_and_non_buffers():
    a = np.zeros((8, 8))
    with pytest.raises(ValueError, match="C-contiguous.*strided view.*ascontiguousarray"):
        cukit.register(a[:, ::2])
    with pytest.raises(TypeError, match="register\\(\\) takes a numpy array"):
        cukit.register([1, 2, 3])


def test_trim_pool_and_transfer_config_reject_bad_values():
    with pytest.raises(ValueError, match="keep must be 0 or more"):
        cukit.trim_pool(keep=-1)
    with pytest.raises(ValueError, match="chunk must be at least 4096"):
        cukit._transfer_config(chunk=100)
    with pytest.raises(ValueError, match="threads 1 to"):
        cukit._transfer_config(threads=0)


# ------------------------------------------------------------------ pinned memory


@gpu
@pytest.mark.parametrize("dtype", ["f4", "f8", "i2", "u1", "c8"])
def test_pinned_arrays(rng, dtype):
    z = cukit.pinned_zeros((37, 11), dtype)
    assert z.shape == (37, 11) and z.dtype == np.dtype(dtype) and z.flags.c_contiguous
    assert z.flags.writeable and (z == 0).all()
    assert isinstance(z.base, cukit.HostMemory) and z.base.kind == "pinned"
    assert z.base.nbytes == z.nbytes and z.base.ptr == z.ctypes.data
    assert cukit._pointer_kind(z) == "page-locked"
    e = cukit.pinned_empty(1000, dtype)
    assert e.shape == (1000,) and cukit.pinned_empty(5).dtype == np.float64
    data = (rng.standard_normal(1000) * 100).astype(dtype)
    e[:] = data
    np.testing.assert_array_equal(cukit.to_device(e).get(), data)
    back = cukit.to_device(data)
    out = cukit.pinned_empty(1000, dtype)
    out[:] = poison(1000, dtype)
    back.get(out=out)
    np.testing.assert_array_equal(out, data)
    assert cukit.pinned_zeros(0).shape == (0,)


@gpu
def test_pinned_memory_is_freed_with_the_last_array(rng):
    gc.collect()
    count, nbytes = cukit._host_memory_stats()
    for _ in range(200):
        a = cukit.pinned_empty(1 << 20, np.uint8)  # 1 MiB each
        a[:] = 7
        del a
    assert cukit._host_memory_stats() == (count, nbytes)
    a = cukit.pinned_empty(1000)
    data = rng.standard_normal(1000)
    a[:] = data
    view = a[100:200]
    del a  # the view keeps the memory
    assert cukit._host_memory_stats() == (count + 1, nbytes + 8000)
    np.testing.assert_array_equal(view, data[100:200])
    del view
    assert cukit._host_memory_stats() == (count, nbytes)


@gpu
def test_pinned_array_as_a_kernel_argument(rng, kernels):
    n = 5000
    x = cukit.pinned_empty(n, np.float32)
    x[:] = rng.standard_normal(n)
    y = cukit.pinned_empty(n, np.float32)
    y[:] = np.nan
    launch(kernels.twice, n, x, y, n)
    cukit.synchronize()
    np.testing.assert_array_equal(y, 2 * x)


# ------------------------------------------------------------------ registered memory


@gpu
def test_register_as_a_context_manager(rng):
    host = rng.standard_normal(3 << 20)  # 24 MiB
    assert cukit._pointer_kind(host) == "pageable"
    reg = cukit.register(host)
    assert isinstance(reg, cukit.Registration) and reg.registered
    with reg as same:
        assert same is host and reg.array is host
        assert cukit._pointer_kind(host) == "page-locked"
        dev = cukit.empty(host.shape, host.dtype)
        cukit._copy_htod(dev, host)
        out = poison(host.shape, host.dtype)
        cukit._copy_dtoh(out, dev)
        np.testing.assert_array_equal(out, host)
        with pytest.raises(cukit.InvalidValueError, match="already page-locked"):
            cukit.register(host)
    assert not reg.registered and "unregistered" in repr(reg)
    assert cukit._pointer_kind(host) == "pageable"
    reg.unregister()  # idempotent
    with cukit.register(host[1000:2000]):  # a contiguous slice is fine
        pass
    with cukit.register(np.zeros(0)):
        pass


@gpu
def test_registration_ends_with_the_object():
    host = np.ones(1 << 20)
    reg = cukit.register(host)
    assert cukit._pointer_kind(host) == "page-locked"
    del reg
    gc.collect()
    assert cukit._pointer_kind(host) == "pageable"


# ------------------------------------------------------------------ managed memory


@gpu
def test_managed_arrays_in_kernels_and_on_the_host(rng, kernels):
    n = 100_003
    x = cukit.managed_empty(n, np.float32)
    assert isinstance(x.base, cukit.HostMemory) and x.base.kind == "managed"
    x[:] = rng.standard_normal(n)
    y = cukit.managed_zeros(n, np.float32)
    assert (y == 0).all()
    y[:] = np.nan
    launch(kernels.twice, n, x, y, n)
    cukit.synchronize()  # the host reads managed data only after synchronizing
    np.testing.assert_array_equal(y, 2 * x)
    # a contiguous slice passes its own address
    z = cukit.managed_empty(n, np.float32)
    z[:] = np.nan
    launch(kernels.twice, n - 3, x[3:], z[3:], n - 3)
    cukit.synchronize()
    np.testing.assert_array_equal(z[3:], 2 * x[3:])
    assert np.isnan(z[:3]).all()


@gpu
def test_managed_arrays_get_the_dtype_and_layout_checks(kernels):
    x = cukit.managed_zeros(64, np.float64)
    y = cukit.managed_zeros(64, np.float32)
    with pytest.raises(TypeError, match="float64.*float32"):
        launch(kernels.twice, 64, x, y, 64)
    m = cukit.managed_zeros((8, 8), np.float32)
    with pytest.raises(ValueError, match="not C-contiguous"):
        launch(kernels.twice, 32, m[:, ::2], y, 32)
    with pytest.raises(TypeError, match="in host memory"):
        launch(kernels.twice, 64, np.zeros(64, np.float32), y, 64)


@gpu
def test_prefetch_and_advise(rng, kernels):
    n = 1 << 20
    a = cukit.managed_empty(n)
    data = rng.standard_normal(n)
    a[:] = data
    for advice in ("read_mostly", "unset_read_mostly", "accessed_by", "unset_accessed_by",
                   "preferred_location", "unset_preferred_location"):
        cukit.advise(a, advice, 0)
    cukit.advise(a, "preferred_location", "host")
    cukit.advise(a, "unset_preferred_location", "host")
    cukit.advise(a, "accessed_by", cukit.Device(0))
    s = cukit.Stream()
    cukit.prefetch(a, 0, stream=s)
    launch(kernels.add_one, n, a, n, stream=s)
    cukit.prefetch(a, "host", stream=s)
    s.synchronize()
    np.testing.assert_array_equal(a, data + 1)
    cukit.prefetch(a[: n // 2], cukit.Device(0))
    cukit.synchronize()
    np.testing.assert_array_equal(a, data + 1)


@gpu
def test_prefetch_and_advise_bad_input():
    a = cukit.managed_zeros(1000)
    with pytest.raises(ValueError, match="'host', got 'gpu'"):
        cukit.prefetch(a, "gpu")
    with pytest.raises(ValueError, match="no CUDA device 99"):
        cukit.prefetch(a, 99)
    with pytest.raises(ValueError, match="no CUDA device 99"):
        cukit.advise(a, "accessed_by", 99)
    with pytest.raises(TypeError, match="device must be"):
        cukit.advise(a, "accessed_by", 1.5)
    with pytest.raises(TypeError, match="this one is pinned memory"):
        cukit.prefetch(cukit.pinned_zeros(10), 0)
    with pytest.raises(TypeError, match="stream must be"):
        cukit.prefetch(a, 0, stream=3)
    with pytest.raises(ValueError, match="not C-contiguous"):
        cukit.prefetch(cukit.managed_zeros((4, 4))[:, 1], 0)


@gpu
def test_managed_memory_beyond_the_free_device_memory_is_refused():
    total = cukit.memory_info()["total"]
    with pytest.raises(cukit.OutOfMemoryError) as info:
        cukit.managed_empty(total + 1, np.uint8)
    assert f"could not allocate {total + 1} bytes of managed memory" in str(info.value)
    assert "are free" in str(info.value) and "never allocates more managed memory" in str(info.value)


@gpu
def test_managed_memory_is_freed_with_the_last_array():
    gc.collect()
    before = cukit._host_memory_stats()
    for _ in range(50):
        a = cukit.managed_zeros(1 << 20, np.uint8)
        del a
    assert cukit._host_memory_stats() == before


# ------------------------------------------------------------------ the pool


@gpu
def test_memory_info_and_trim_pool():
    info = cukit.memory_info()
    assert set(info) == {"free", "total", "pool_reserved", "pool_used", "pool_cached",
                         "stream_scratch"}
    assert 0 < info["free"] <= info["total"] == cukit.Device(0).total_memory
    # per stream (up to 32) and kind (reductions' counters, scans' words): 64 KiB to 4 MiB
    assert info["stream_scratch"] % (64 << 10) == 0 and info["stream_scratch"] <= 32 * 2 * (4 << 20)
    a = cukit.empty(64 << 20, np.uint8)
    held = cukit.memory_info(0)
    assert held["pool_used"] >= info["pool_used"] + (64 << 20)
    assert held["pool_reserved"] >= held["pool_used"]
    del a
    assert cukit.memory_info()["pool_used"] <= held["pool_used"] - (64 << 20)  # cached, not used
    cukit.trim_pool(keep=0)
    after = cukit.memory_info(cukit.Device(0))
    assert after["pool_cached"] == 0
    assert after["pool_used"] <= held["pool_used"] - (64 << 20)
    # What goes back to the device is checked in a process of its own: memory that
    # earlier tests keep alive shares the pool's chunks (test_allocator's trim test).
    cukit.trim_pool(0, keep=1 << 20)
    with pytest.raises(ValueError, match="no CUDA device 99"):
        cukit.memory_info(99)
    with pytest.raises(ValueError, match="no CUDA device 99"):
        cukit.trim_pool(99)


@gpu
def test_allocation_sizes_in_errors():
    with pytest.raises(ValueError, match="size must be from 0"):
        cukit.alloc(-5)
    total = cukit.memory_info()["total"]
    with pytest.raises(cukit.OutOfMemoryError) as info:
        cukit.empty(total // 8 + 1, np.float64)  # a little more than the whole device
    text = str(info.value)
    assert f"could not allocate {8 * (total // 8 + 1)} bytes" in text and "are free" in text
    assert info.value.name == "CUDA_ERROR_OUT_OF_MEMORY"


@gpu
def test_pool_reuses_memory_in_a_loop():
    cukit.synchronize()
    start = cukit.memory_info()["pool_reserved"]
    for _ in range(500):
        a = cukit.empty(8 << 20, np.uint8)
        del a
    cukit.synchronize()
    # Reused, not 500 x 8 MiB; a few blocks of slack for frees still in flight.
    assert cukit.memory_info()["pool_reserved"] <= start + (256 << 20)


@gpu
@pytest.mark.gpu_hardware  # a kernel still running while the host goes on
def test_free_while_a_stream_still_reads_does_not_wait_and_is_safe(rng, kernels):
    """Dropping an array that a running kernel reads neither blocks the host nor lets
    new allocations reuse the memory before the kernel is done."""
    n = 1 << 20
    data = rng.standard_normal(n).astype(np.float32)
    s = cukit.Stream()
    x = cukit.to_device(data)
    y = cukit.to_device(poison(n, np.float32))
    slow_copy(kernels, x, y, n, 1_500_000_000, stream=s)  # reads x after 1.5 s
    del x
    fresh = []
    for _ in range(200):
        a = cukit.empty(n, np.float32)  # legacy-stream allocations; may not reuse x yet
        a.fill(-1.0)
        fresh.append(a)
        b = cukit.empty(1 << 16, np.uint8)
        del b
    assert not s.query(), "allocating and freeing waited for the device"
    s.synchronize()
    np.testing.assert_array_equal(y.get(), data)
    for a in fresh:
        assert (a.get() == -1.0).all()


@gpu
@pytest.mark.gpu_hardware  # a kernel still running while the host goes on
def test_dropping_a_stream_with_work_still_orders_frees(rng, kernels):
    n = 1 << 18
    data = rng.standard_normal(n).astype(np.float32)
    s = cukit.Stream()
    x = cukit.to_device(data)
    y = cukit.to_device(poison(n, np.float32))
    slow_copy(kernels, x, y, n, 500_000_000, stream=s)
    del s, x
    gc.collect()
    junk = [cukit.zeros(n, np.float32) for _ in range(50)]
    cukit.synchronize()
    np.testing.assert_array_equal(y.get(), data)
    assert all((j.get() == 0).all() for j in junk)


def ptr(a):
    return a.__cuda_array_interface__["data"][0]


@pytest.fixture
def cached():
    """The cache of freed blocks on (off by default on the emulator), as before after."""
    was = cukit._keep_freed(True)
    yield
    cukit._keep_freed(was)


@gpu
def test_kernel_outputs_reuse_freed_blocks(rng, cached):
    """A ufunc's or ElementwiseKernel's output on the legacy stream takes the block an
    array just let go of, and the results stay right through a long loop."""
    n = 1 << 16
    x = rng.standard_normal(n).astype(np.float32)
    a = cukit.to_device(x)
    big = [a.astype(np.float64) + 0.0 for _ in range(80)]   # more than a bin holds
    del big                                                  # (the rest go back to the pool)
    c = a + 1.0
    old = ptr(c)
    del c
    c = a * 2.0
    assert ptr(c) == old                       # reused, no driver call
    want = x.copy()
    r = a
    for i in range(300):
        r = (r + np.float32(i)) * np.float32(0.5)
        want = (want + np.float32(i)) * np.float32(0.5)
    np.testing.assert_array_equal(r.get(), want)
    saxpy = cukit.ElementwiseKernel("T x, T y", "T z", "z = x - y", "sub_keep")
    for _ in range(50):
        z = saxpy(a, c)
    np.testing.assert_array_equal(z.get(), x - 2 * x)
    assert cukit._keep_freed(False) is True       # off: every block goes back to the pool
    for _ in range(20):
        d = a + 1.0
    np.testing.assert_array_equal(d.get(), x + np.float32(1))
    assert cukit.memory_info()["pool_cached"] == 0


@gpu
def test_a_kept_block_waits_for_the_legacy_stream(rng, kernels, cached):
    """Freed while a legacy-stream kernel still reads it: the next output on the legacy
    stream may take it (it runs after that kernel), and so may an output on another stream,
    which then waits for the legacy stream first (memory/pool.c)."""
    n = 1 << 18
    data = rng.standard_normal(n).astype(np.float32)
    x = cukit.to_device(data)
    y = cukit.to_device(poison(n, np.float32))
    a = cukit.to_device(np.ones(n, np.float32))
    cukit.synchronize()  # the uploads landed: `a` is read on another stream below
    slow_copy(kernels, x, y, n, 300_000_000)   # legacy stream, reads x for 0.3 s
    del x
    s = cukit.Stream()
    other = cukit.add(a, a, stream=s)   # another stream: if it takes the block, s waits
    same = a + a                        # for the legacy stream first; legacy: runs after
    s.synchronize()
    cukit.synchronize()
    np.testing.assert_array_equal(y.get(), data)
    np.testing.assert_array_equal(same.get(), np.full(n, 2, np.float32))
    np.testing.assert_array_equal(other.get(), np.full(n, 2, np.float32))


@gpu
@pytest.mark.gpu_hardware  # a kernel still running while the host goes on
@pytest.mark.unsanitized  # memcheck runs kernels one at a time: the reader has ended
@pytest.mark.parametrize("drop_stream", [False, True])
def test_blocks_another_stream_may_use_are_not_kept(rng, kernels, drop_stream, cached):
    n = 1 << 18
    data = rng.standard_normal(n).astype(np.float32)
    s = cukit.Stream()
    x = cukit.to_device(data)
    y = cukit.to_device(poison(n, np.float32))
    a = cukit.to_device(np.ones(n, np.float32))
    cukit.synchronize()
    slow_copy(kernels, x, y, n, 300_000_000, stream=s)  # s reads x for 0.3 s
    reading = cukit.Event().record(s)
    old = ptr(x)
    del x
    if drop_stream:
        del s
        gc.collect()
    outs = [a + a for _ in range(8)]                    # legacy outputs of x's size
    # Only while the reader still runs is a reuse wrong: on a busy machine this process
    # may be paused past the 0.3 s, and then the block is free to be given again.
    if not reading.query():
        assert all(ptr(o) != old for o in outs), "a block still read on a stream was reused"
    cukit.synchronize()
    np.testing.assert_array_equal(y.get(), data)
    for o in outs:
        np.testing.assert_array_equal(o.get(), np.full(n, 2, np.float32))


# ------------------------------------------------------------------ copies


CHUNK = 64 << 10


@pytest.fixture
def small_pipeline():
    """The pageable pipeline with 64 KiB chunks from the first byte, so odd sizes
    cross chunk boundaries; the previous tuning comes back afterwards."""
    old = cukit._transfer_config()
    cukit._transfer_config(threshold=0, chunk=CHUNK, slots=2, threads=3)
    yield
    cukit._transfer_config(**old)


SIZES = [1, 3, CHUNK - 1, CHUNK, CHUNK + 1, 5 * CHUNK + 123, 2 * 3 * 2 * CHUNK + 7, 40 * CHUNK + 1]


@gpu
@pytest.mark.parametrize("nbytes", SIZES)
@pytest.mark.parametrize("sync", [True, False])
@pytest.mark.parametrize("on_stream", [False, True])
def test_pipeline_copies_at_odd_sizes(rng, small_pipeline, nbytes, sync, on_stream):
    s = cukit.Stream() if on_stream else None
    host = rng.integers(0, 256, nbytes, dtype=np.uint8)
    dev = cukit.empty(nbytes, np.uint8)
    dev.fill(0x5A)
    if s is not None:  # the fill is on the legacy stream, which s does not wait for
        s.wait(cukit.Event().record())
    cukit._copy_htod(dev, host, stream=s, sync=sync)
    if not sync:
        (s or cukit).synchronize()
    np.testing.assert_array_equal(dev.get(), host)
    other = rng.integers(0, 256, nbytes, dtype=np.uint8)
    dev.set(other)
    out = np.full(nbytes, 0xA5, np.uint8)
    cukit._copy_dtoh(out, dev, stream=s, sync=sync)
    if not sync:
        (s or cukit).synchronize()
    np.testing.assert_array_equal(out, other)


@gpu
@pytest.mark.parametrize("threads,slots", [(1, 1), (1, 3), (4, 2), (8, 1)])
def test_pipeline_shapes(rng, small_pipeline, threads, slots):
    cukit._transfer_config(threads=threads, slots=slots)
    nbytes = 37 * CHUNK + 5
    host = rng.standard_normal(nbytes // 8 + 1)
    dev = cukit.empty(host.shape, host.dtype)
    cukit._copy_htod(dev, host)
    out = poison(host.shape, host.dtype)
    cukit._copy_dtoh(out, dev)
    np.testing.assert_array_equal(out, host)


@gpu
@pytest.mark.parametrize("pinned", [False, True])
def test_big_copies_with_the_default_tuning(rng, pinned):
    n = (20 << 20) // 4 + 3  # about 20 MiB of float32: above the default threshold
    host = cukit.pinned_empty(n, np.float32) if pinned else np.empty(n, np.float32)
    host[:] = rng.standard_normal(n)
    dev = cukit.empty(n, np.float32)
    cukit._copy_htod(dev, host)
    np.testing.assert_array_equal(dev.get(), host)
    out = cukit.pinned_empty(n, np.float32) if pinned else np.empty(n, np.float32)
    out[:] = np.nan
    cukit._copy_dtoh(out, dev, sync=False)
    cukit.synchronize()
    np.testing.assert_array_equal(out, host)


@gpu
def test_copies_from_several_threads_at_once(rng, small_pipeline):
    """One thread gets the staging buffers, the others go straight to the driver."""
    nbytes = 30 * CHUNK + 17
    srcs = [rng.integers(0, 256, nbytes, dtype=np.uint8) for _ in range(4)]
    devs = [cukit.empty(nbytes, np.uint8) for _ in range(4)]
    outs = [np.zeros(nbytes, np.uint8) for _ in range(4)]
    errors = []

    def work(i):
        try:
            for _ in range(5):
                cukit._copy_htod(devs[i], srcs[i])
                cukit._copy_dtoh(outs[i], devs[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for src, out in zip(srcs, outs):
        np.testing.assert_array_equal(out, src)


@gpu
def test_copy_hooks_check_their_arguments(small_pipeline):
    dev = cukit.empty(100, np.uint8)
    with pytest.raises(ValueError, match="holds 99 bytes but the device side 100"):
        cukit._copy_htod(dev, np.zeros(99, np.uint8))
    with pytest.raises(TypeError, match="cukit.Array, a cukit.Buffer or an int address"):
        cukit._copy_dtoh(np.zeros(100, np.uint8), np.zeros(100, np.uint8))
    with pytest.raises(ValueError, match="address is 0"):
        cukit._copy_htod(0, bytes(4))
    buf = cukit.alloc(100)
    cukit._copy_htod(buf, bytes(range(100)))
    out = bytearray(100)
    cukit._copy_dtoh(out, buf)
    assert out == bytes(range(100))
    cukit._copy_htod(int(buf) + 10, bytes(range(50, 60)))  # an int address: len(src) bytes
    part = bytearray(20)
    cukit._copy_dtoh(part, int(buf))
    assert part == bytes(range(10)) + bytes(range(50, 60))
    buf.free()
    with pytest.raises(ValueError, match="freed"):
        cukit._copy_htod(buf, bytes(100))


@gpu
def test_exit_with_staging_threads_alive():
    """The staging threads and buffers made by a big copy do not hang or crash the exit."""
    code = (
        "import numpy as np, cukit\n"
        "a = np.arange((24 << 20) // 8, dtype=np.float64)\n"
        "d = cukit.to_device(a)\n"
        "cukit._copy_htod(d, a)\n"
        "b = np.zeros_like(a)\n"
        "cukit._copy_dtoh(b, d)\n"
        "assert (a == b).all()\n"
        "print('done')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done"
