"""The allocator's cache of freed blocks (memory/pool.c): reuse without a driver call on the
legacy stream, never while another stream may still use a block, trim_pool, the limit
and the out-of-memory retry. Run also under CUKIT_EMULATOR_DEFER=1, where the emulator
keeps each stream's work queued until something waits for it, as a GPU would."""
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cukit
from conftest import EMULATOR, SLOW_COPY, poison, slow_copy

gpu = pytest.mark.gpu
# kernels queued on a stream are still pending when the host goes on: a GPU, or the
# emulator's deferred mode
DEFERRED = EMULATOR and os.environ.get("CUKIT_EMULATOR_DEFER", "0") not in ("", "0")
PENDING = not EMULATOR or DEFERRED

KERNELS = r"""
extern "C" __global__ void twice(const float* x, float* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
""" + SLOW_COPY


@pytest.fixture(scope="module")
def kernels():
    return cukit.compile(KERNELS)


def twice(kernels, x, y, n, stream=None):
    kernels.twice(x, y, n, grid=(n + 255) // 256, block=256, stream=stream)


def ptr(a):
    return a.__cuda_array_interface__["data"][0]


@pytest.fixture(autouse=True)
def cache_on():
    """Each test starts with the cache on and empty, at its default limit."""
    cukit.synchronize()
    cukit.trim_pool()
    was = cukit._keep_freed(True)
    yield
    cukit._keep_freed(was)


# ------------------------------------------------------------------ bad input


@gpu
def test_pool_cache_limit_rejects_bad_sizes():
    with pytest.raises(ValueError, match=r"pool_cache_limit\(\): nbytes must be 0 \(no cache\) "
                                         r"or more bytes, got -1"):
        cukit.pool_cache_limit(-1)
    with pytest.raises(TypeError):
        cukit.pool_cache_limit("1 GiB")
    with pytest.raises(ValueError, match="no CUDA device 99"):
        cukit.pool_cache_limit(device=99)


# ------------------------------------------------------------------ reuse


@gpu
@pytest.mark.parametrize("nbytes", [1, 4, 300, 4 << 20, (3 << 20) + 5])
def test_empty_free_empty_reuses_the_block_on_the_legacy_stream(nbytes):
    a = cukit.empty(nbytes, np.uint8)
    old = ptr(a)
    del a
    assert cukit.memory_info()["pool_cached"] >= nbytes
    b = cukit.empty(nbytes, np.uint8)
    assert ptr(b) == old
    assert cukit.memory_info()["pool_cached"] == 0
    buf = b.buffer if hasattr(b, "buffer") else None
    del b, buf
    c = cukit.alloc(nbytes)                     # a Buffer takes it too
    assert int(c) == old
    c.free()
    d = cukit.alloc(nbytes)
    assert d.ptr == old


@gpu
def test_sizes_of_one_bin_share_blocks_and_pool_used_counts_arrays_only():
    a = cukit.empty(100, np.uint8)              # the 512-byte bin
    old = ptr(a)
    used = cukit.memory_info()["pool_used"]
    del a
    info = cukit.memory_info()
    assert info["pool_used"] == used - 512 and info["pool_cached"] == 512
    b = cukit.empty(130, np.float32)            # 520 bytes: the 1 KiB bin, another block
    assert ptr(b) != old
    c = cukit.empty(3, np.float64)              # 24 bytes: the 512-byte bin
    assert ptr(c) == old


@gpu
def test_the_pycuda_layer_reuses_blocks():
    import cukit.pycuda.driver as drv

    a = drv.mem_alloc(4096)
    old = int(a)
    a.free()
    b = drv.mem_alloc(4000)
    assert int(b) == old
    host = np.random.default_rng().standard_normal(1000).astype(np.float32)
    drv.memcpy_htod(b, host)
    back = np.empty_like(host)
    drv.memcpy_dtoh(back, b)
    np.testing.assert_array_equal(back, host)


@gpu
def test_reused_blocks_hold_right_results_in_a_loop(rng):
    x = rng.standard_normal(5000).astype(np.float32)
    a = cukit.to_device(x)
    want = x.copy()
    r = a
    for i in range(200):
        r = (r + np.float32(i)) * np.float32(0.5)   # each step frees the last result
        want = (want + np.float32(i)) * np.float32(0.5)
    np.testing.assert_array_equal(r.get(), want)


# ------------------------------------------------------------------ other streams


@gpu
@pytest.mark.unsanitized  # memcheck runs kernels one at a time: the reader has ended
@pytest.mark.parametrize("drop_stream", [False, True])
def test_a_block_another_stream_reads_is_not_reused(rng, kernels, drop_stream):
    """Freed while a kernel on a cukit.Stream still reads it: not cached, and no new
    allocation gets it before that kernel is done."""
    n = 1 << 18
    data = rng.standard_normal(n).astype(np.float32)
    s = cukit.Stream()
    x = cukit.to_device(data)
    y = cukit.to_device(poison(n, np.float32))
    cukit.synchronize()
    slow_copy(kernels, x, y, n, 300_000_000, stream=s)  # s reads x for 0.3 s
    reading = cukit.Event().record(s)
    old = ptr(x)
    cached = cukit.memory_info()["pool_cached"]
    del x
    if drop_stream:
        del s
        gc.collect()
    twice(kernels, y, cukit.empty(n, np.float32), n)       # legacy work: the cache serves
    outs = [cukit.empty(n, np.float32) for _ in range(8)]   # x's size, legacy stream
    if DEFERRED and not drop_stream:  # nothing ran yet: s's kernel is pending for sure
        # (dropping s asks it a second time, which runs its work in the deferred mode)
        assert all(ptr(o) != old for o in outs), "a block still read on a stream was reused"
    # On a GPU only while the reader still runs is a reuse wrong: a busy machine may
    # pause this process past the 0.3 s, and then the block is free to be given again.
    elif not reading.query():
        assert all(ptr(o) != old for o in outs), "a block still read on a stream was reused"
        assert cukit.memory_info()["pool_cached"] <= cached
    cukit.synchronize()
    np.testing.assert_array_equal(y.get(), data)


@gpu
@pytest.mark.unsanitized
def test_a_reused_block_is_ready_for_another_stream(rng, kernels):
    """A block freed while a legacy kernel still reads it goes to the cache (legacy order
    keeps it safe there); given to an array that a cukit.Stream then writes, that stream
    waits for the legacy kernel first."""
    n = 1 << 18
    data = rng.standard_normal(n).astype(np.float32)
    ones = rng.standard_normal(n).astype(np.float32)
    a = cukit.to_device(ones)
    x = cukit.to_device(data)
    y = cukit.to_device(poison(n, np.float32))
    s = cukit.Stream()
    cukit.synchronize()
    slow_copy(kernels, x, y, n, 300_000_000)            # legacy, reads x for 0.3 s
    old = ptr(x)
    del x
    b = cukit.empty(n, np.float32)
    assert ptr(b) == old                                 # reused at once
    twice(kernels, a, b, n, stream=s)                    # writes x's old block on s
    s.synchronize()
    cukit.synchronize()
    np.testing.assert_array_equal(y.get(), data)         # the reader saw x, not 2 * a
    np.testing.assert_array_equal(b.get(), 2 * ones)


@gpu
@pytest.mark.unsanitized
def test_outputs_on_another_stream_wait_for_the_legacy_users_of_their_block(rng, kernels):
    """An operation's output on a cukit.Stream, made while a legacy kernel still reads
    the block last freed: whether or not it gets that block, it is written only after."""
    n = 1 << 18
    data = rng.standard_normal(n).astype(np.float32)
    a = cukit.to_device(np.ones(n, np.float32))
    s = cukit.Stream()
    twos = 2 * np.ones(n, np.float32)
    for make in (lambda: cukit.add(a, a, stream=s), lambda: cukit.to_device(twos, stream=s)):
        x = cukit.to_device(data)
        y = cukit.to_device(poison(n, np.float32))
        cukit.synchronize()
        slow_copy(kernels, x, y, n, 300_000_000)        # legacy, reads x for 0.3 s
        old = ptr(x)
        del x
        other = make()
        s.synchronize()
        cukit.synchronize()
        np.testing.assert_array_equal(y.get(), data)
        np.testing.assert_array_equal(other.get(), np.full(n, 2, np.float32))
        del other
    same = a + a                                        # legacy: the cache serves
    assert ptr(same) == old or cukit.memory_info()["pool_cached"] == 0


@gpu
@pytest.mark.unsanitized
def test_a_prepared_launch_on_a_stream_waits_for_a_reused_blocks_legacy_users(rng, kernels):
    """A prepared launch binds its stream once; each call still orders it after the legacy
    stream when a cached block was handed out since, and marks it busy for frees."""
    n = 1 << 18
    data = rng.standard_normal(n).astype(np.float32)
    ones = rng.standard_normal(n).astype(np.float32)
    a = cukit.to_device(ones)
    s = cukit.Stream()
    p = kernels.twice.prepare(grid=(n + 255) // 256, block=256, stream=s)
    b0 = cukit.empty(n, np.float32)
    p(a, b0, n)                                          # s ordered once already
    twice(kernels, a, cukit.empty(1, np.float32), 1)     # legacy work: the cache serves
    for _ in range(3):
        x = cukit.to_device(data)
        y = cukit.to_device(poison(n, np.float32))
        cukit.synchronize()
        slow_copy(kernels, x, y, n, 300_000_000)         # legacy, reads x for 0.3 s
        old = ptr(x)
        del x
        b = cukit.empty(n, np.float32)
        assert ptr(b) == old
        p(a, b, n)                                       # writes x's old block on s
        s.synchronize()
        cukit.synchronize()
        np.testing.assert_array_equal(y.get(), data)
        np.testing.assert_array_equal(b.get(), 2 * ones)
        del b, y
    s.synchronize()
    np.testing.assert_array_equal(b0.get(), 2 * ones)


@gpu
def test_results_stay_right_through_churn_on_three_streams(rng, kernels):
    """Arrays made, used and dropped on the legacy stream and three cukit streams in a
    random order, many freed while their stream still runs; every result checked."""
    streams = [None, cukit.Stream(), cukit.Stream(), cukit.Stream()]
    sizes = [1, 7, 300, 4096, 70_000, 300_000]
    live = []

    def check(entry):
        z, want, zs = entry
        (zs or cukit).synchronize()
        np.testing.assert_array_equal(z.get(), want)

    for i in range(240):
        s = streams[int(rng.integers(len(streams)))]
        n = sizes[int(rng.integers(len(sizes)))]
        h = rng.standard_normal(n).astype(np.float32)
        x = cukit.to_device(h, stream=s)
        y = cukit.empty(n, np.float32)                  # legacy-made, written on s
        twice(kernels, x, y, n, stream=s)
        z = cukit.multiply(y, np.float32(3), stream=s)  # an output made for s
        del x, y                                        # freed while s may still run
        live.append((z, h * np.float32(6), s))
        if len(live) > 10:
            entry = live.pop(int(rng.integers(len(live))))
            if rng.random() < 0.5:
                check(entry)
            del entry                                   # dropped unchecked: freed busy
    for entry in live:
        check(entry)


@gpu
def test_a_capture_takes_no_cached_block_and_its_graph_keeps_what_it_uses(rng, kernels):
    n = 4096
    host = rng.standard_normal(n).astype(np.float32)
    a = cukit.to_device(host)
    s = cukit.Stream()
    junk = cukit.empty(n, np.float32)
    cached = ptr(junk)
    del junk                                             # a cached block of out's size
    cukit.synchronize()
    with s.capture() as g:
        out = cukit.empty(n, np.float32)
        assert ptr(out) != cached                        # no cached reuse while capturing
        twice(kernels, a, out, n, stream=s)
    kept = ptr(out)
    del out                                              # the graph keeps it
    others = [cukit.empty(n, np.float32) for _ in range(4)]
    assert kept not in [ptr(o) for o in others]
    for _ in range(2):
        g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(g.nodes[0].args[1].get(), 2 * host)


# ------------------------------------------------------------------ limits, trim, OOM


@gpu
def test_trim_pool_empties_the_cache():
    """In a process of its own: memory that earlier tests keep alive shares the pool's
    chunks, and a chunk goes back only when nothing in it lives."""
    code = textwrap.dedent("""
        import numpy as np, cukit
        cukit._keep_freed(True)  # (off by default on the emulator)
        arrays = [cukit.empty(n, np.uint8) for n in (1, 1000, 1 << 20, 5 << 20)]
        del arrays
        info = cukit.memory_info()
        print("cached", info["pool_cached"] >= (1 << 20) + (6 << 20))
        cukit.trim_pool()
        after = cukit.memory_info()
        print("emptied", after["pool_cached"] == 0)
        print("released", after["pool_reserved"] <= info["pool_reserved"] - (7 << 20))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["cached", "True", "emptied", "True", "released", "True"], \
        out.stdout + out.stderr


@gpu
def test_pool_cache_limit_bounds_the_cache():
    was = cukit.pool_cache_limit()
    assert was > 0
    try:
        assert cukit.pool_cache_limit(1 << 20) == was
        a = cukit.empty(2 << 20, np.uint8)              # over the limit: to the pool
        del a
        assert cukit.memory_info()["pool_cached"] == 0
        b, c = cukit.empty(512 << 10, np.uint8), cukit.empty(512 << 10, np.uint8)
        del b, c                                        # both fit exactly
        assert cukit.memory_info()["pool_cached"] == 1 << 20
        assert cukit.pool_cache_limit(0) == 1 << 20     # lowering gives them back
        assert cukit.memory_info()["pool_cached"] == 0
        d = cukit.empty(10, np.uint8)
        del d
        assert cukit.memory_info()["pool_cached"] == 0
    finally:
        cukit.pool_cache_limit(was)
    assert cukit._keep_freed(False) is True             # off: nothing is cached
    try:
        e = cukit.empty(10, np.uint8)
        del e
        assert cukit.memory_info()["pool_cached"] == 0
    finally:
        assert cukit._keep_freed(True) is False


@gpu
@pytest.mark.xdist_group("all_gpus")  # it fills the device: not beside NCCL's set-up, which cannot retry
@pytest.mark.fills_device  # nor beside any other test
def test_an_allocation_that_finds_the_device_full_gives_the_cache_back():
    """Blocks cached from freed arrays are given back before OutOfMemoryError: an
    allocation that fits only without them succeeds; one that never fits raises."""
    code = textwrap.dedent("""
        import numpy as np, cukit
        total = cukit.Device(0).total_memory
        cukit._keep_freed(True)
        cukit.pool_cache_limit(total)
        quarter = (total // 4) // (2 << 20) * (2 << 20)
        blocks = [cukit.empty(quarter, np.uint8) for _ in range(3)]
        del blocks
        print("cached", cukit.memory_info()["pool_cached"] >= 3 * quarter)
        big = cukit.empty(2 * quarter, np.uint8)
        print("big", cukit.memory_info()["pool_cached"])
        x = np.random.default_rng().standard_normal(1000)
        print("right", np.array_equal(cukit.to_device(x).get(), x))
        try:
            cukit.empty(total, np.uint8)
        except cukit.OutOfMemoryError as e:
            print("OOM", "could not allocate" in str(e))
    """)
    env = dict(os.environ, CUKIT_EMULATOR_MEMORY="256M")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["cached", "True", "big", "0", "right", "True", "OOM", "True"], \
        out.stdout + out.stderr


TURNS = """
import os, time
import pytest


def note(what):
    with open(os.environ["TURN_LOG"], "a") as f:
        f.write(f"{time.monotonic()} {what}\\n")


@pytest.mark.parametrize("i", range(8))
def test_plain(i):
    note(f"start p{i}")
    time.sleep(0.2)
    note(f"end p{i}")


@pytest.mark.fills_device
def test_fill():
    note("start F")
    time.sleep(0.6)
    note("end F")
"""


def test_a_test_that_fills_the_device_runs_while_no_other_test_does(tmp_path):
    """conftest's turns under pytest-xdist: no test of another worker runs while a
    `fills_device` test does (they meet a full device otherwise)."""
    pytest.importorskip("xdist")
    here = os.path.dirname(os.path.abspath(__file__))
    (tmp_path / "conftest.py").write_text(open(os.path.join(here, "conftest.py")).read())
    (tmp_path / "test_turns.py").write_text(TURNS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    fills_device: x\n")
    log = tmp_path / "turns.log"
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUKIT_TEST_LOCKER", "PYTEST_XDIST_TESTRUNUID", "PYTEST_XDIST_WORKER")}
    env["TURN_LOG"] = str(log)
    # the cukit under test (an in-place build's src/ too), whatever the child's folder
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(cukit.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([pkg] + [p for p in [env.get("PYTHONPATH")] if p])
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "3", "-p", "no:cacheprovider",
                        "-p", "no:randomly", str(tmp_path)], capture_output=True, text=True,
                       env=env, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    spans = {}
    for line in log.read_text().split("\n"):
        if line:
            t, what, who = line.split()
            spans.setdefault(who, {})[what] = float(t)
    assert len(spans) == 9, spans
    fill = spans.pop("F")
    for who, s in spans.items():
        assert s["end"] <= fill["start"] or s["start"] >= fill["end"], (who, s, fill)


@gpu
def test_the_cache_limit_from_the_environment():
    code = textwrap.dedent("""
        import numpy as np, cukit
        try:
            cukit.empty(1)
        except ValueError as e:
            print("bad", e)
        else:
            a = cukit.empty(1000, np.uint8)
            del a
            print("limit", cukit.pool_cache_limit(), "cached", cukit.memory_info()["pool_cached"])
    """)
    def run(value):
        env = dict(os.environ, CUKIT_POOL_CACHE=value)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    # on, also under the emulator: the 512- and 1024-byte bins hold a block each
    assert run("3M") == f"limit {3 << 20} cached 1536"
    assert run("0") == "limit 0 cached 0"
    assert run("lots") == ("bad CUKIT_POOL_CACHE must be the cache's limit in bytes, with an "
                           "optional K, M or G suffix (0 turns the cache off), got 'lots'")
