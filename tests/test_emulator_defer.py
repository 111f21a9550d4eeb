"""The emulator's deferred execution (CUKIT_EMULATOR_DEFER=1): work queued on a stream
runs only where the driver guarantees completion, so a missing synchronization shows
as stale data on a machine without a GPU, while correct programs (events, waits between
streams, the legacy stream's ordering, graphs, polling queries) still get right results.

Each check runs in a process of its own: the switch is read once, when the emulator
starts."""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import EMULATOR

pytestmark = pytest.mark.skipif(not EMULATOR, reason="runs on cukit's CPU emulator")

PRELUDE = r'''
import numpy as np
import cukit
rng = np.random.default_rng()
mod = cukit.compile(r"""
extern "C" __global__ void axpb(const float* x, float* y, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}
""")
n = 1000
grid, block = (n + 255) // 256, 256
POISON = np.float32(-12345.0)

def pinned(values):
    h = cukit.pinned_empty(n, np.float32)
    h[:] = values
    return h
'''


def run(code, defer="1"):
    env = dict(os.environ, CUKIT_BACKEND="emulator", CUKIT_EMULATOR_DEFER=defer)
    r = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


MISSING_SYNC = r'''
x = rng.standard_normal(n).astype(np.float32)
s = cukit.Stream()
a = cukit.to_device(x, stream=s)
h = pinned(POISON)
a.get(out=h, stream=s)                       # queued: h is filled when s gets there
print("before", bool((h == POISON).all()))   # read without waiting
s.synchronize()
np.testing.assert_array_equal(h, x)
print("after ok")
'''


def test_reading_pinned_memory_before_the_stream_is_synchronized_sees_stale_data():
    out = run(MISSING_SYNC)
    assert "before True" in out and "after ok" in out


def test_without_the_switch_work_still_runs_when_issued():
    out = run(MISSING_SYNC, defer="0")
    assert "before False" in out and "after ok" in out


def test_a_staging_buffer_reused_before_its_copy_ran_shows():
    out = run(r'''
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    s = cukit.Stream()
    a = cukit.to_device(np.full(n, POISON), stream=s)
    h = pinned(x)
    a.set(h, stream=s)                       # reads h when s gets there...
    h[:] = y                                 # ...so this write races with it
    s.synchronize()
    print("copied the later values", bool((a.get() == y).all()))
    # pageable memory is read before an async copy returns, as the driver does
    p = rng.standard_normal(n).astype(np.float32)
    keep = p.copy()
    cukit._copy_htod(a, p, stream=s, sync=False)
    p[:] = 0
    s.synchronize()
    np.testing.assert_array_equal(a.get(), keep)
    print("pageable ok")
    ''')
    assert "copied the later values True" in out and "pageable ok" in out


def test_a_non_blocking_stream_is_not_ordered_with_the_legacy_stream():
    out = run(r'''
    x = rng.standard_normal(n).astype(np.float32)
    a, y = cukit.to_device(x), cukit.to_device(np.full(n, POISON))
    s = cukit.Stream()                           # non-blocking
    mod.axpb(a, y, np.float32(2), np.float32(1), np.int32(n), grid=grid, block=block, stream=s)
    print("legacy copy stale", bool((y.get() == POISON).all()))  # y.get() waits for legacy only
    s.synchronize()
    np.testing.assert_array_equal(y.get(), np.float32(2) * x + np.float32(1))
    # a blocking stream is ordered before the synchronous copy
    b = cukit.Stream(non_blocking=False)
    mod.axpb(a, y, np.float32(3), np.float32(0), np.int32(n), grid=grid, block=block, stream=b)
    np.testing.assert_array_equal(y.get(), np.float32(3) * x)
    print("blocking ok")
    ''')
    assert "legacy copy stale True" in out and "blocking ok" in out


def test_events_and_waits_between_streams_keep_their_order():
    out = run(r'''
    x = rng.standard_normal(n).astype(np.float32)
    a = cukit.to_device(x)
    t, z = cukit.to_device(np.full(n, POISON)), cukit.to_device(np.full(n, POISON))
    s1, s2 = cukit.Stream(), cukit.Stream()
    mod.axpb(a, t, np.float32(2), np.float32(0), np.int32(n), grid=grid, block=block, stream=s1)
    e = cukit.Event().record(s1)
    s2.wait(e)                                   # s2's kernel reads what s1's wrote
    mod.axpb(t, z, np.float32(1), np.float32(5), np.int32(n), grid=grid, block=block, stream=s2)
    h = pinned(POISON)
    z.get(out=h, stream=s2)
    s2.synchronize()
    np.testing.assert_array_equal(h, np.float32(2) * x + np.float32(5))
    # a query answers "not ready" while work is queued; a polling loop still ends
    mod.axpb(a, t, np.float32(4), np.float32(0), np.int32(n), grid=grid, block=block, stream=s1)
    done = cukit.Event().record(s1)
    print("first query", done.query())
    while not done.query():
        pass
    h2 = pinned(POISON)
    t.get(out=h2, stream=s2)                     # s2 has no reason to wait, and s1 is done
    s2.synchronize()
    np.testing.assert_array_equal(h2, np.float32(4) * x)
    # an event synchronize runs the recording stream up to the record
    mod.axpb(a, t, np.float32(-1), np.float32(0), np.int32(n), grid=grid, block=block, stream=s1)
    e2 = cukit.Event().record(s1)
    e2.synchronize()
    np.testing.assert_array_equal(t.get(), -x)
    print("events ok")
    ''')
    assert "first query False" in out and "events ok" in out


def test_graphs_and_context_synchronize_under_deferral():
    out = run(r'''
    x = rng.standard_normal(n).astype(np.float32)
    a, y = cukit.to_device(x), cukit.to_device(np.full(n, POISON))
    s = cukit.Stream()
    with s.capture() as g:
        mod.axpb(a, y, np.float32(2), np.float32(1), np.int32(n), grid=grid, block=block, stream=s)
        mod.axpb(y, y, np.float32(3), np.float32(0), np.int32(n), grid=grid, block=block, stream=s)
    g.launch(s)
    h = pinned(POISON)
    y.get(out=h, stream=s)
    print("graph queued", bool((h == POISON).all()))
    cukit.synchronize()                          # the context: every stream
    np.testing.assert_allclose(h, (np.float32(2) * x + np.float32(1)) * np.float32(3), rtol=1e-6)
    print("graph ok")
    ''')
    assert "graph queued True" in out and "graph ok" in out


def test_a_free_waits_for_queued_work_and_a_fault_is_held_until_a_wait():
    out = run(r'''
    x = rng.standard_normal(n).astype(np.float32)
    s = cukit.Stream()
    a, y = cukit.to_device(x), cukit.to_device(np.full(n, POISON))
    mod.axpb(a, y, np.float32(1), np.float32(1), np.int32(n), grid=grid, block=block, stream=s)
    h = pinned(POISON)
    y.get(out=h, stream=s)
    del a                                        # cukit keeps it until s is past it
    s.synchronize()
    np.testing.assert_array_equal(h, x + np.float32(1))
    bad = cukit.compile(r'extern "C" __global__ void skew(char* p) { *(int*)(p + 1) = 7; }').skew
    bad(cukit.zeros(16, np.uint8), grid=1, block=1, stream=s)
    try:
        s.synchronize()
    except cukit.KernelFaultError as e:
        print("held", "misaligned" in str(e))
    ''')
    assert "held True" in out


def test_managed_memory_read_before_a_synchronize_is_stale():
    out = run(r'''
    x = rng.standard_normal(n).astype(np.float32)
    a = cukit.to_device(x)
    m = cukit.managed_zeros(n, np.float32)
    m[:] = POISON
    mod.axpb(a, m, np.float32(2), np.float32(0), np.int32(n), grid=grid, block=block)
    print("stale", bool((m == POISON).all()))    # the kernel is still queued
    cukit.synchronize()
    np.testing.assert_array_equal(m, np.float32(2) * x)
    print("managed ok")
    ''')
    assert "stale True" in out and "managed ok" in out
