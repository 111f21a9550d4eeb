"""Prepared launches, CUDA graphs, occupancy, cooperative and cluster launches, and
that the launch path allocates nothing that stays."""
import gc
import sys
import threading

import numpy as np
import pytest

import cukit
from conftest import poison

pytestmark = pytest.mark.gpu

SRC = r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void add_one(int* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1;
}
extern "C" __global__ void twice(int* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2;
}
extern "C" __global__ void grid_sum(const int* in, int* partial, int* out, int n) {
    // Needs every block resident at once: a cooperative launch.
    namespace cg = cooperative_groups;
    cg::grid_group grid = cg::this_grid();
    int tid = blockIdx.x * blockDim.x + threadIdx.x, sum = 0;
    for (int i = tid; i < n; i += gridDim.x * blockDim.x) sum += in[i];
    atomicAdd(&partial[blockIdx.x], sum);
    grid.sync();
    if (tid == 0) { int t = 0; for (int b = 0; b < gridDim.x; b++) t += partial[b]; *out = t; }
}
extern "C" __global__ void cluster_ids(int* out) {
    unsigned int rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0) out[blockIdx.x] = rank;
}
"""


@pytest.fixture(scope="module")
def mod():
    return cukit.compile("#include <cooperative_groups.h>\n" + SRC)


def test_prepared_launch_matches_numpy(mod, rng):
    n = 5000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    s = cukit.Stream()
    dx, dy = cukit.to_device(x, stream=s), cukit.to_device(y, stream=s)
    p = mod.axpy.prepare(grid=(n + 255) // 256, block=256, stream=s)
    assert p.kernel is mod.axpy and p.stream is s
    assert "grid=(20, 1, 1)" in repr(p)
    p(2.0, dx, dy, n)
    p(2.0, dx, dy, n)  # same objects: nothing re-packed
    p(0.5, dx, dy, n)  # one scalar changed
    s.synchronize()
    np.testing.assert_allclose(dy.get(), y + 4.5 * x.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_prepared_launch_notices_changed_arguments(mod, rng):
    n = 256
    p = mod.axpy.prepare(grid=1, block=256)
    xs = [cukit.to_device(rng.standard_normal(n).astype(np.float32)) for _ in range(2)]
    ys = [cukit.zeros(n, np.float32) for _ in range(2)]
    p(1.0, xs[0], ys[0], n)
    p(1.0, xs[1], ys[1], n)  # different arrays, same scalars
    np.testing.assert_array_equal(ys[0].get(), xs[0].get())
    np.testing.assert_array_equal(ys[1].get(), xs[1].get())


def test_prepared_launch_checks_arguments_and_frees(mod):
    n = 16
    x, y = cukit.zeros(n, np.float32), cukit.zeros(n, np.float32)
    p = mod.axpy.prepare(grid=1, block=32)
    p(1.0, x, y, n)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        p(1.0, x, y)
    with pytest.raises(TypeError, match="arguments only"):
        p(1.0, x, y, n, grid=2)
    with pytest.raises(TypeError, match="float64"):
        p(1.0, cukit.zeros(n), y, n)
    x.free()
    with pytest.raises(ValueError, match="freed"):
        p(1.0, x, y, n)  # the same object as before, but freed since
    with pytest.raises(TypeError, match="only keywords"):
        mod.axpy.prepare(1, 32)
    with pytest.raises(ValueError, match="block dimension x"):
        mod.axpy.prepare(grid=1, block=4096)


def test_occupancy(mod, rng):
    k = mod.axpy
    assert k.max_active_blocks(256) >= 1
    assert k.max_active_blocks(block=128, shared_mem=0) >= k.max_active_blocks(1024)
    bs = k.suggest_block_size()
    assert 32 <= bs <= 1024 and bs % 32 == 0
    n = 100_003
    x = rng.standard_normal(n).astype(np.float32)
    y = cukit.zeros(n, np.float32)
    k(1.0, cukit.to_device(x), y, n, n=n)  # grid and block from occupancy
    np.testing.assert_array_equal(y.get(), x)
    with pytest.raises(TypeError, match="n=N alone"):
        k(1.0, y, y, n, n=n, block=256)


def test_cooperative_launch(mod, rng):
    if cukit.backend() == "emulator":
        with pytest.raises(cukit.NotSupportedError, match="emulator cannot run cooperative"):
            mod.grid_sum(cukit.zeros(256, np.int32), cukit.zeros(1, np.int32),
                         cukit.zeros(1, np.int32), 256, grid=1, block=256, cooperative=True)
        return
    n = 1 << 20
    host = rng.integers(-100, 100, n, dtype=np.int32)
    dev = cukit.Device(0)
    blocks = mod.grid_sum.max_active_blocks(256) * dev.multiprocessor_count
    partial, out = cukit.zeros(blocks, np.int32), cukit.zeros(1, np.int32)
    mod.grid_sum(cukit.to_device(host), partial, out, n, grid=blocks, block=256, cooperative=True)
    assert out.get()[0] == host.sum()
    with pytest.raises(cukit.LaunchError):
        mod.grid_sum(cukit.to_device(host), partial, out, n, grid=blocks * 4, block=256,
                     cooperative=True)
        cukit.synchronize()


def test_cluster_launch(mod):
    if cukit.Device(0).compute_capability < (9, 0):
        pytest.skip("thread-block clusters need sm_90")
    out = cukit.to_device(poison(64, np.int32))
    if cukit.backend() == "emulator":
        with pytest.raises(cukit.NotSupportedError, match="emulator cannot run thread-block clusters"):
            mod.cluster_ids(out, grid=64, block=32, cluster=(4, 1, 1))
        return
    mod.cluster_ids(out, grid=64, block=32, cluster=(4, 1, 1))
    np.testing.assert_array_equal(out.get(), np.arange(64) % 4)
    with pytest.raises(ValueError, match="multiple of the cluster"):
        mod.cluster_ids(out, grid=63, block=32, cluster=4)


def test_graph_capture_replays_kernels_copies_and_fills(mod, rng):
    n = 1000
    host = rng.integers(-1000, 1000, n, dtype=np.int32)
    a, b = cukit.to_device(host), cukit.to_device(poison(n, np.int32))
    s = cukit.Stream()
    with s.capture() as g:
        cukit.copyto(b, a, stream=s)             # b = a
        mod.add_one(b, n, grid=4, block=256, stream=s)
        mod.twice(b, n, grid=4, block=256, stream=s)
    assert [node.kernel.name for node in g.nodes] == ["add_one", "twice"]
    assert (b.get() == -1).all()  # capturing records the work; nothing ran yet
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(b.get(), (host + 1) * 2)
    a.fill(7)
    s.wait(cukit.Event().record())  # the fill is on the legacy stream, which s does not wait for
    g.launch(s)
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(b.get(), np.full(n, 16))


def test_graph_kernel_node_set_args(mod, rng):
    n = 512
    x1 = rng.standard_normal(n).astype(np.float32)
    x2 = rng.standard_normal(n).astype(np.float32)
    d1, d2, y = cukit.to_device(x1), cukit.to_device(x2), cukit.zeros(n, np.float32)
    cukit.synchronize()  # the zeros (legacy stream) are in place before s's graph runs
    s = cukit.Stream()
    with s.capture() as g:
        mod.axpy(1.0, d1, y, n, grid=2, block=256, stream=s)
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(y.get(), x1)
    node = g.nodes[0]
    node.set_args(3.0, d2, y, n)  # no new capture
    assert node.args[1] is d2
    g.launch(s)
    s.synchronize()
    np.testing.assert_allclose(y.get(), x1 + np.float32(3.0) * x2, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="float64"):
        node.set_args(3.0, cukit.zeros(n), y, n)


def test_explicit_graph_with_dependencies(mod, rng):
    n = 300
    host = rng.integers(0, 100, n, dtype=np.int32)
    x = cukit.to_device(host)
    g = cukit.Graph()
    first = g.add_kernel(mod.add_one, x, n, grid=2, block=256)
    second = g.add_kernel(mod.twice, x, n, grid=2, block=256, depends_on=[first])
    g.add_kernel(mod.add_one, x, n, grid=2, block=256, depends_on=(second,))
    assert len(g.nodes) == 3
    g.launch()
    cukit.synchronize()
    np.testing.assert_array_equal(x.get(), (host + 1) * 2 + 1)
    with pytest.raises(TypeError, match="depends_on"):
        g.add_kernel(mod.add_one, x, n, grid=1, block=32, depends_on=[3])


def test_graph_keeps_its_memory_alive(mod):
    n = 256
    s = cukit.Stream()
    x = cukit.zeros(n, np.int32)
    cukit.synchronize()  # the zeros (legacy stream) are in place before s's graph runs
    with s.capture() as g:
        mod.add_one(x, n, grid=1, block=256, stream=s)
    ref = sys.getrefcount(x)
    del x
    gc.collect()
    (node,) = g.nodes
    kept = node.args[0]
    assert sys.getrefcount(kept) >= ref - 1
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(kept.get(), np.ones(n))


def test_arrays_made_while_capturing_are_kept_by_the_graph(mod, rng):
    """An array allocated inside the capture (the driver refuses that in the capture's
    thread-local mode: cukit relaxes it for the call) and freed there; the graph keeps
    what its kernels write, and each replay writes it again."""
    n = 777
    host = rng.integers(-1000, 1000, n, dtype=np.int32)
    a = cukit.to_device(host)
    cukit.synchronize()  # a (written on the legacy stream) is in place before s reads it
    s = cukit.Stream()
    with s.capture() as g:
        b = cukit.empty(n, np.int32)          # made, not written, under the capture
        cukit.copyto(b, a, stream=s)
        mod.add_one(b, n, grid=4, block=256, stream=s)
        cukit.empty(3 * n, np.float32).free()  # made and freed under the capture
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(b.get(), host + 1)
    host2 = rng.integers(-1000, 1000, n, dtype=np.int32)
    cukit.copyto(a, cukit.to_device(host2))
    cukit.synchronize()
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(b.get(), host2 + 1)


def test_a_free_inside_a_capture_asks_the_other_streams_in_relaxed_mode(mod, rng):
    """Freeing an array inside a capture asks every cukit stream that may still run
    (and the release stream, for a dropped stream's work) whether it is idle, to keep the
    block; under a capture of this thread's the driver refuses any stream's query and
    invalidates the capture unless the mode is relaxed for it. The block cache is on, as
    on a GPU."""
    n = 640
    host = rng.integers(-1000, 1000, n, dtype=np.int32)
    was = cukit._keep_freed(True)
    try:
        a = cukit.to_device(host)
        other, third = cukit.to_device(host), cukit.to_device(host)
        cukit.synchronize()
        busy = cukit.Stream()
        mod.add_one(other, n, grid=3, block=256, stream=busy)  # busy may still run
        dropped = cukit.Stream()
        mod.add_one(third, n, grid=3, block=256, stream=dropped)
        del dropped  # its work, if unfinished, is the release stream's to wait for
        s = cukit.Stream()
        with s.capture() as g:
            b = cukit.empty(n, np.int32)
            cukit.copyto(b, a, stream=s)
            mod.add_one(b, n, grid=3, block=256, stream=s)
            cukit.empty(5 * n, np.float32).free()  # asks busy (and maybe the release stream)
        g.launch(s)
        s.synchronize()
        busy.synchronize()
        np.testing.assert_array_equal(b.get(), host + 1)
        np.testing.assert_array_equal(other.get(), host + 1)
        np.testing.assert_array_equal(third.get(), host + 1)
    finally:
        cukit._keep_freed(was)


def test_a_graph_dropped_during_another_capture_leaves_it_valid(mod, rng):
    """The collector may drop a graph anywhere, a capture included: its destroy is a
    call the driver refuses from a capturing thread (and invalidates the capture) unless
    cukit relaxes the mode for it."""
    n = 500
    host = rng.integers(-1000, 1000, n, dtype=np.int32)
    x = cukit.to_device(host)
    cukit.synchronize()  # x (written on the legacy stream) is in place before s reads it
    s = cukit.Stream()
    with s.capture() as first:
        mod.add_one(x, n, grid=2, block=256, stream=s)
    first.launch(s)  # instantiated: an executable graph to destroy
    s.synchronize()
    gc.collect()  # earlier tests' garbage now, so that the collection below frees `first` alone
    with s.capture() as second:
        del first
        gc.collect()  # (its nodes refer to it: a cycle, which the collector frees)
        mod.add_one(x, n, grid=2, block=256, stream=s)
    second.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(x.get(), host + 2)


def test_an_empty_capture_makes_a_graph_that_does_nothing(mod, rng):
    s = cukit.Stream()
    with s.capture() as g:
        pass
    x = cukit.to_device(rng.integers(-9, 9, 100, dtype=np.int32))
    want = x.get()
    g.launch(s)
    s.synchronize()
    assert len(g.nodes) == 0 and np.array_equal(x.get(), want)


def test_a_captured_stream_is_never_queried_through_another_wrapper(mod, rng):
    """A second cukit.Stream over a stream being captured (here Stream.from_handle of
    it; another library's capture looks the same): a free during the capture asks
    which streams are busy, and a query of the captured stream would invalidate the
    capture (the driver refuses it), so it is not asked."""
    n = 999
    host = rng.integers(-1000, 1000, n, dtype=np.int32)
    x = cukit.to_device(host)
    s = cukit.Stream()
    alias = cukit.Stream.from_handle(s.handle, owner=s)
    mod.add_one(x, n, grid=4, block=256, stream=alias)  # the alias has run work: asked on frees
    with s.capture() as g:
        mod.add_one(x, n, grid=4, block=256, stream=s)
        for size in (5, 70000):
            cukit.empty(size, np.float32).free()  # a cached block, and the pool's
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(x.get(), host + 2)
    del alias


def test_graph_launch_arguments(mod, rng):
    """launch() takes the stream positionally, by keyword or not at all; replays from
    several threads (the launch then lets the others run) each take effect."""
    n = 256
    host = rng.integers(-1000, 1000, n, dtype=np.int32)
    x = cukit.to_device(host)
    s = cukit.Stream()
    with s.capture() as g:
        mod.add_one(x, n, grid=1, block=256, stream=s)
    g.launch(s)
    g.launch(stream=s)
    s.synchronize()
    g.launch()
    g.launch(None)
    g.launch(stream=None)
    cukit.synchronize()
    np.testing.assert_array_equal(x.get(), host + 5)
    with pytest.raises(TypeError, match=r"at most 1 argument, the stream \(2 given\)"):
        g.launch(s, s)
    with pytest.raises(TypeError, match=r"at most 1 argument, the stream \(2 given\)"):
        g.launch(s, stream=s)
    with pytest.raises(TypeError, match="unexpected keyword argument 'strem'; it takes stream= only"):
        g.launch(strem=s)
    with pytest.raises(TypeError, match="stream must be a cukit.Stream"):
        g.launch(5)
    errors = []

    def replay():
        try:
            for _ in range(10):
                g.launch(s)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=replay) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s.synchronize()
    assert not errors
    np.testing.assert_array_equal(x.get(), host + 35)
    with pytest.raises(RuntimeError, match="capture has not ended"):
        s.capture().launch(s)


def test_capture_errors(mod):
    with pytest.raises(ValueError, match="default stream cannot be captured"):
        cukit.default_stream().capture()
    s = cukit.Stream()
    with pytest.raises(ZeroDivisionError):
        with s.capture():
            1 / 0
    x = cukit.zeros(4, np.int32)
    cukit.synchronize()  # the zeros (legacy stream) are in place before s's graph runs
    with s.capture() as g:  # the stream is usable again after the failed capture
        mod.add_one(x, 4, grid=1, block=32, stream=s)
    g.launch(s)
    s.synchronize()
    assert (x.get() == 1).all()


# Under compute-sanitizer the process held 66 more allocated blocks per launch (the
# tool saves each launch's host backtrace, Python frames included); without it, none.
@pytest.mark.unsanitized
def test_launch_path_allocates_nothing_that_stays(mod):
    n = 1024
    x, y = cukit.zeros(n, np.float32), cukit.zeros(n, np.float32)
    k = mod.axpy
    p = k.prepare(grid=4, block=256)
    # warm up caches and free lists, with the loop's synchronizes: the emulator's deferred
    # mode queues the launches in between, and the heap must reach that queue's peak
    # before the count starts (a fresh process, as a pytest-xdist worker is, had not)
    for i in range(10_000):
        k(2.0, x, y, n, grid=4, block=256)
        p(2.0, x, y, n)
        if i % 5_000 == 0:
            cukit.synchronize()
    cukit.synchronize()
    gc.collect()
    blocks = sys.getallocatedblocks()
    rss = _rss()
    for i in range(500_000):
        k(2.0, x, y, n, grid=4, block=256)
        p(2.0, x, y, n)
        if i % 5_000 == 0:
            cukit.synchronize()
    cukit.synchronize()
    gc.collect()
    assert sys.getallocatedblocks() - blocks < 100  # Python objects: none kept per launch
    assert _rss() - rss < 16 << 20  # no growth with a million launches


@pytest.mark.unsanitized
def test_graph_replays_allocate_nothing_that_stays(mod):
    n = 32
    x = cukit.zeros(n, np.int32)
    cukit.synchronize()  # the zeros (legacy stream) are in place before s's graph runs
    s = cukit.Stream()
    with s.capture() as g:
        mod.add_one(x, n, grid=1, block=n, stream=s)
    for _ in range(2_000):
        g.launch(s)
    s.synchronize()
    gc.collect()
    blocks = sys.getallocatedblocks()
    for i in range(50_000):
        g.launch(s)
        if i % 5_000 == 0:
            s.synchronize()
    s.synchronize()
    gc.collect()
    assert sys.getallocatedblocks() - blocks < 100
    np.testing.assert_array_equal(x.get(), np.full(n, 52_000))


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_prepared_launch_from_threads(mod, rng):
    n = 2048
    x = rng.standard_normal(n).astype(np.float32)
    dx = cukit.to_device(x)
    outs = [cukit.zeros(n, np.float32) for _ in range(6)]
    p = mod.axpy.prepare(grid=n // 256, block=256)
    errors = []

    def work(out):
        try:
            for _ in range(200):
                p(1.0, dx, out, n)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(o,)) for o in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cukit.synchronize()
    assert not errors
    for o in outs:
        np.testing.assert_allclose(o.get(), 200 * x, rtol=1e-4)


@pytest.mark.parametrize("dtype, value", [("i1", -5), ("u2", 65535), ("f2", 1.5), ("f4", -2.25),
                                          ("i8", -(2**40) + 3), ("f8", np.pi), ("c16", 1 - 2j),
                                          ("?", True)])
def test_fill(dtype, value):
    a = cukit.to_device(poison(1001, dtype) if dtype != "?" else np.zeros(1001, bool))
    a.fill(value)
    np.testing.assert_array_equal(a.get(), np.full(1001, value, dtype))
    s = cukit.Stream()
    a.fill(0, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(a.get(), np.zeros(1001, dtype))


def test_fill_and_copy_errors():
    a = cukit.zeros(4, np.uint8)
    with pytest.raises(OverflowError):
        a.fill(300)
    with pytest.raises(ValueError, match="one value"):
        a.fill([1, 2])
    with pytest.raises(ValueError, match="shape"):
        cukit.copyto(cukit.zeros(5, np.uint8), a)
    with pytest.raises(TypeError, match="same_kind"):   # numpy's copyto casting rule
        cukit.copyto(a, cukit.zeros(4, np.float32))
    with pytest.raises(TypeError, match="must be a cukit.Array"):
        cukit.copyto(np.zeros(4), np.zeros(4))
    host = np.zeros(4, np.uint8)
    a.fill(9)
    cukit.copyto(host, a)
    assert (host == 9).all()
    cukit.copyto(a, np.arange(4, dtype=np.uint8))
    np.testing.assert_array_equal(a.get(), np.arange(4))
