"""Streams as CuPy users write them: `with stream:` makes it the thread's current stream
for cukit's operations, Stream.null, Device.id, and cukit.benchmark."""
import threading

import numpy as np
import pytest

import cukit
import cukit.random as cr
from conftest import poison

gpu = pytest.mark.gpu


@gpu
def test_with_makes_the_stream_current_on_this_thread_only():
    s, t = cukit.Stream(), cukit.Stream()
    assert cukit.get_current_stream() == cukit.Stream.null == cukit.default_stream()
    with s as entered:
        assert entered is s and cukit.get_current_stream() is s
        with t:
            assert cukit.get_current_stream() is t
            seen = []
            other = threading.Thread(target=lambda: seen.append(cukit.get_current_stream()))
            other.start()
            other.join()
            assert seen == [cukit.Stream.null]  # another thread keeps its own
        assert cukit.get_current_stream() is s
        with cukit.Stream.null:
            assert cukit.get_current_stream() == cukit.Stream.null
        assert cukit.get_current_stream() is s
    assert cukit.get_current_stream() == cukit.Stream.null
    with pytest.raises(RuntimeError, match="without __enter__"):
        s.__exit__(None, None, None)


@gpu
def test_use_makes_a_stream_current_until_the_next():
    s = cukit.Stream()
    try:
        assert s.use() is s and cukit.get_current_stream() is s
        with cukit.Stream() as t:
            assert cukit.get_current_stream() is t
        assert cukit.get_current_stream() is s
    finally:
        cukit.Stream.null.use()
    assert cukit.get_current_stream() == cukit.Stream.null


@gpu
def test_operations_inside_with_are_queued_on_the_stream(rng):
    """Captured into a graph from the current stream without stream= anywhere: each
    operation is queued on that stream (none runs at capture), and each replay runs it."""
    h = rng.standard_normal(1000)
    m = rng.standard_normal((6, 4)).astype(np.float32)
    x, a = cukit.to_device(h), cukit.to_device(m)
    out = cukit.to_device(poison(8, np.float32))
    s = cukit.Stream()
    g_rand = cr.default_rng(7)
    want_draw = cr.default_rng(7).random(5).get()
    with s:
        with s.capture() as graph:
            x += 1.0                                   # a ufunc in place
            y = x * 2.0                                # a ufunc's new output
            c = x.copy()                               # a copy
            z = cukit.zeros(5)                         # zeros' memset
            total = x.sum()                            # a reduction
            cs = cukit.cumsum(x)                       # a scan
            r = g_rand.random(5)                       # a random draw
            out[...] = 3.5                             # a fill
            cat = cukit.concatenate([a, a])            # a copy kernel
            f = cukit.full(4, 2.5)                     # a generated fill
            srt = cukit.sort(x)                        # a sort (kept by the graph)
            mm = a @ a.T                               # a matrix product
    np.testing.assert_array_equal(x.get(), h)  # nothing ran yet
    assert np.isnan(out.get()).all()
    for _ in range(2):
        graph.launch()
    s.synchronize()
    np.testing.assert_allclose(x.get(), h + 2)
    np.testing.assert_allclose(y.get(), (h + 2) * 2)
    np.testing.assert_allclose(c.get(), h + 2)
    np.testing.assert_array_equal(z.get(), np.zeros(5))
    np.testing.assert_allclose(float(total.get()), (h + 2).sum())
    np.testing.assert_allclose(cs.get(), np.cumsum(h + 2))
    np.testing.assert_array_equal(r.get(), want_draw)  # drawn once, at capture
    np.testing.assert_array_equal(out.get(), np.full(8, 3.5, np.float32))
    np.testing.assert_array_equal(cat.get(), np.concatenate([m, m]))
    np.testing.assert_array_equal(f.get(), np.full(4, 2.5))
    np.testing.assert_allclose(srt.get(), np.sort(h + 2))
    np.testing.assert_allclose(mm.get(), m @ m.T, rtol=1e-5, atol=1e-5)


@gpu
def test_a_kernel_launched_inside_with_runs_on_the_stream(rng):
    mod = cukit.compile("""extern "C" __global__ void twice(float *x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }""")
    h = rng.standard_normal(300).astype(np.float32)
    x = cukit.to_device(h)
    s = cukit.Stream()
    with s:
        prepared = mod.twice.prepare(grid=2, block=256)  # binds the current stream
        with s.capture() as graph:
            mod.twice(x, 300, grid=2, block=256)
            prepared(x, 300)
    np.testing.assert_array_equal(x.get(), h)
    graph.launch()
    s.synchronize()
    np.testing.assert_array_equal(x.get(), h * 4)
    with s.capture() as again:  # outside `with`, still on s
        prepared(x, 300)
    again.launch()
    s.synchronize()
    np.testing.assert_array_equal(x.get(), h * 8)


@gpu
def test_copies_inside_with_wait_for_the_stream(rng):
    """get() and to_device() with no stream= copy on the current stream and wait for it,
    so the work queued there before is done."""
    h = rng.standard_normal((256, 64))
    s = cukit.Stream()
    with s:
        a = cukit.to_device(h)
        b = (a * 3.0 + 1.0).sum(axis=1)
        got = b.get()
        e = cukit.Event().record()  # on s
    np.testing.assert_allclose(got, (h * 3 + 1).sum(axis=1))
    e.synchronize()
    assert e.query()


@gpu
def test_stream_null_device_id_and_stream_equality():
    d = cukit.Device()
    assert d.id == d.ordinal == 0 or d.id == d.ordinal
    null = cukit.Stream.null
    assert isinstance(null, cukit.Stream) and null.handle == 0 and null.device == d
    assert null == cukit.default_stream() and hash(null) == hash(cukit.default_stream())
    s = cukit.Stream()
    assert s != null and s == cukit.Stream.from_handle(s.handle)
    assert len({s, cukit.Stream.from_handle(s.handle), null}) == 2


@gpu
def test_benchmark_reports_cpu_and_gpu_times(rng):
    x = cukit.to_device(rng.standard_normal(10_000))
    calls = []

    def f(a, scale=1.0):
        calls.append(1)
        return a * scale

    r = cukit.benchmark(f, (x,), {"scale": 2.0}, n_repeat=7, n_warmup=3)
    assert len(calls) == 10
    assert isinstance(r, cukit.BenchmarkResult) and r.name == "f"
    assert r.cpu_times.shape == (7,) and r.gpu_times.shape == (1, 7)
    assert (r.cpu_times > 0).all() and (r.gpu_times > 0).all()
    text = str(r)
    assert text.startswith("f ") and "CPU:" in text and "GPU-0:" in text and " us" in text
    assert "GPU" not in r.to_str(show_gpu=False)
    short = cukit.benchmark(lambda: x + x, n_repeat=10_000, n_warmup=0, max_duration=0.05,
                            name="add")
    assert short.name == "add" and 1 <= len(short.cpu_times) < 10_000
    assert short.gpu_times.shape == (1, len(short.cpu_times))
    with cukit.Stream():  # times the current stream
        inside = cukit.benchmark(lambda: x + x, n_repeat=3, n_warmup=1)
    assert inside.gpu_times.shape == (1, 3)


BAD_BENCHMARK = [
    (lambda: cukit.benchmark(3), TypeError, "fn must be callable"),
    (lambda: cukit.benchmark(lambda: None, n_repeat=0), ValueError, "n_repeat must be at least 1"),
    (lambda: cukit.benchmark(lambda: None, n_warmup=-1), ValueError, "n_warmup at least 0"),
    (lambda: cukit.benchmark(lambda: None, max_duration=0), ValueError, "max_duration must be"),
    (lambda: cukit.benchmark(lambda: None, devices=[]), ValueError, "at least one device"),
]


@gpu
@pytest.mark.parametrize("call,exc,words", BAD_BENCHMARK, ids=[w for _, _, w in BAD_BENCHMARK])
def test_bad_benchmark_arguments_are_named(call, exc, words):
    with pytest.raises(exc, match=words):
        call()


@pytest.mark.multi_gpu
def test_the_current_stream_applies_to_its_own_device_only(rng):
    h = rng.standard_normal(100)
    s0 = cukit.Stream(device=0)
    with s0:
        assert cukit.get_current_stream(1) == cukit.default_stream(1)
        x1 = cukit.to_device(h, device=1)
        np.testing.assert_allclose((x1 * 2).get(), h * 2)
        assert cukit.get_current_stream(0) is s0
