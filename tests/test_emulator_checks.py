"""The emulator's checkers (cukit.debug.check, CUKIT_EMULATOR_CHECK): racecheck, initcheck
and synccheck each report the kernel written to have exactly its bug, naming the threads,
lines, allocation and offset, and report nothing for kernels without it (cukit's own
generated kernels included). On a GPU, the same kernels under compute-sanitizer agree."""
import os
import re
import shutil
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import cukit
from conftest import EMULATOR

emulator = pytest.mark.skipif(not EMULATOR, reason="the checkers run on cukit's CPU emulator")

BUGS = r"""
extern "C" __global__ void race_raw(const float* x, float* y) {
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = x[t];                                    // RAW_WRITE
    y[t] = s[(t + 64) % 256];                       // RAW_READ
}

extern "C" __global__ void race_fixed(const float* x, float* y) {
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncthreads();
    y[t] = s[(t + 64) % 256];
}

extern "C" __global__ void race_waw(const float* x, float* y) {
    __shared__ float s[1];
    int t = threadIdx.x;
    if (t % 64 == 0) s[0] = x[t];                   // WAW
    __syncthreads();
    y[t] = s[0];
}

extern "C" __global__ void race_war(const float* x, float* y) {
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncthreads();
    float v = s[255 - t];                           // WAR_READ
    s[t] = v * 2.0f;                                // WAR_WRITE
    __syncthreads();
    y[t] = s[t];
}

extern "C" __global__ void race_global(const float* x, float* y) {
    int t = threadIdx.x;
    y[t] = x[t];                                    // GLOBAL_WRITE
    y[t + 256] = y[(t + 64) % 256];                 // GLOBAL_READ
}

extern "C" __global__ void race_global_fixed(const float* x, float* y) {
    int t = threadIdx.x;
    y[t] = x[t];
    __syncthreads();
    y[t + 256] = y[(t + 64) % 256];
}

extern "C" __global__ void warp_exchange(const float* x, float* y) {
    __shared__ float s[32];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncwarp();
    y[t] = s[31 - t];
}

extern "C" __global__ void reduce(const float* x, float* y) {
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = s[0];
}

extern "C" __global__ void add_one(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;                  // INIT_READ
}

extern "C" __global__ void count_into(const int* x, int* total, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(total, x[i]);              // INIT_ATOMIC
}

extern "C" __global__ void sync_half_warp(float* y) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = t;
    if (t % 2) __syncthreads();                     // SYNC_HALF
    y[t] = s[t];
}

extern "C" __global__ void sync_if_else(float* y) {
    __shared__ float s[64];
    int t = threadIdx.x;
    if (t % 2) {
        s[t] = 1.0f;
        __syncthreads();
    } else {
        s[t] = 2.0f;
        __syncthreads();
    }
    y[t] = s[t ^ 1];
}

extern "C" __global__ void sync_after_return(float* y) {
    __shared__ float s[64];
    int t = threadIdx.x;
    if (t >= 32) return;
    s[t] = t;
    __syncthreads();                                // SYNC_RETURN
    y[t] = s[31 - t];
}

extern "C" __global__ void syncwarp_half(float* y) {
    int t = threadIdx.x;
    y[t] = t;
    __syncwarp(0x0000ffffu);                        // SYNCWARP
}
"""


def line(tag):
    """The line of BUGS (as bugs.cu) that carries // tag."""
    for n, text in enumerate(BUGS.splitlines(), 1):
        if text.rstrip().endswith("// " + tag):
            return f"bugs.cu:{n}"
    raise KeyError(tag)


@pytest.fixture(scope="module")
def mod():
    return cukit.compile(BUGS, name="bugs.cu")


def launch(mod, name, rng):
    """Run kernel `name` of BUGS once on fresh data; the arrays it used."""
    x = cukit.to_device(rng.standard_normal(1024).astype(np.float32))
    y = cukit.to_device(np.full(1024, np.nan, np.float32))
    if name in ("race_raw", "race_fixed", "race_waw", "race_war", "race_global",
                "race_global_fixed"):
        getattr(mod, name)(x, y, grid=1, block=256)
    elif name == "warp_exchange":
        mod.warp_exchange(x, y, grid=1, block=32)
    elif name == "reduce":
        mod.reduce(x, y, grid=4, block=256)
    elif name == "add_one":
        y = cukit.empty(1024, np.float32)   # never written
        mod.add_one(y, x, 1024, grid=4, block=256)
    elif name == "count_into":
        total = cukit.empty(1, np.int32)     # never written
        mod.count_into(cukit.to_device(rng.integers(0, 9, 1024).astype(np.int32)), total, 1024,
                       grid=4, block=256)
    elif name == "syncwarp_half":
        mod.syncwarp_half(y, grid=1, block=32)
    else:
        getattr(mod, name)(y, grid=1, block=64)
    cukit.synchronize()
    return x, y


def checked(fn, *checkers):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with cukit.debug.check(*checkers) as found:
            fn()
    return found.reports, [w for w in caught if issubclass(w.category, cukit.debug.CheckWarning)]


# ------------------------------------------------------------------ racecheck

@emulator
def test_racecheck_reports_a_read_after_write_with_both_threads_and_lines(mod, rng):
    reports, warned = checked(lambda: launch(mod, "race_raw", rng), "race")
    assert {r.checker for r in reports} == {"racecheck"}, reports
    raw = [r for r in reports if r.message.startswith("read-after-write")]
    assert raw, reports
    msg = raw[0].message
    assert "hazard on shared memory at offset" in msg
    assert f"wrote it at {line('RAW_WRITE')}" in msg and f"at {line('RAW_READ')}" in msg, msg
    assert re.search(r"thread \(\d+, 0, 0\) wrote it .* thread \(\d+, 0, 0\)", msg), msg
    assert "in kernel race_raw, block (0, 0, 0)" in msg
    # one report an access, however many of its bytes meet the other thread's: each
    # thread's write or its read, whichever came second
    assert sum(r.count for r in reports) == 256, reports
    assert len(warned) == 1 and "racecheck:" in str(warned[0].message)


@emulator
def test_racecheck_reports_write_after_write_and_write_after_read(mod, rng):
    reports, _ = checked(lambda: launch(mod, "race_waw", rng), "race")
    assert [r.message.split(" hazard")[0] for r in reports] == ["write-after-write"], reports
    assert f"wrote it at {line('WAW')}" in reports[0].message
    # each thread reads the byte another writes: the earlier of the two meets a write
    # after its read, the later a read after the other's write
    reports, _ = checked(lambda: launch(mod, "race_war", rng), "race")
    kinds = {r.message.split(" hazard")[0]: r.message for r in reports}
    assert set(kinds) == {"write-after-read", "read-after-write"}, reports
    war = kinds["write-after-read"]
    assert f"read it at {line('WAR_READ')}" in war and f"at {line('WAR_WRITE')}" in war, war


@emulator
def test_racecheck_reports_global_memory_within_a_block(mod, rng):
    reports, _ = checked(lambda: launch(mod, "race_global", rng), "race")
    assert reports and all("hazard on global memory at address 0x" in r.message for r in reports)
    kinds = {r.message.split(" hazard")[0]: r.message for r in reports}
    assert sum(r.count for r in reports) == 256, reports
    raw = kinds["read-after-write"]
    assert f"wrote it at {line('GLOBAL_WRITE')}" in raw and f"at {line('GLOBAL_READ')}" in raw, raw


@emulator
@pytest.mark.parametrize("name", ["race_fixed", "warp_exchange", "reduce", "race_global_fixed"])
def test_racecheck_is_quiet_with_the_barriers_in_place(mod, rng, name):
    reports, warned = checked(lambda: launch(mod, name, rng), "race")
    assert reports == [] and warned == []


@emulator
def test_the_results_are_unchanged_under_the_checkers(mod, rng):
    x = rng.standard_normal(1024).astype(np.float32)
    y = cukit.to_device(np.full(4, np.nan, np.float32))
    with cukit.debug.check():
        mod.reduce(cukit.to_device(x), y, grid=4, block=256)
    # a sum of 256 terms may cancel: its rounding is relative to the terms (16 eps of them)
    np.testing.assert_allclose(y.get(), x.reshape(4, 256).sum(axis=1), rtol=1e-5,
                               atol=16 * np.finfo(np.float32).eps * np.abs(x).reshape(4, 256).sum(1).max())


# ------------------------------------------------------------------ initcheck

@emulator
def test_initcheck_reports_a_read_of_memory_never_written(mod, rng):
    reports, warned = checked(lambda: launch(mod, "add_one", rng), "init")
    assert [r.checker for r in reports] == ["initcheck"], reports
    msg = reports[0].message
    assert reports[0].count == 1024  # every thread's read, one place
    assert "4-byte global read of device memory never written" in msg
    assert "byte 0 of a 4096-byte allocation made at test_emulator_checks.py:" in msg, msg
    assert "in kernel add_one, block (0, 0, 0), thread (0, 0, 0)" in msg
    assert f"at {line('INIT_READ')}" in msg
    assert len(warned) == 1


@emulator
def test_initcheck_names_the_first_byte_never_written(mod, rng):
    def half():
        x = cukit.empty(1024, np.float32)
        x[:512] = cukit.to_device(rng.standard_normal(512).astype(np.float32))  # a kernel writes
        y = cukit.to_device(np.full(1024, np.nan, np.float32))
        mod.add_one(x, y, 1024, grid=4, block=256)
    reports, _ = checked(half, "init")
    assert len(reports) == 1 and reports[0].count == 512, reports
    assert "byte 2048 of a 4096-byte allocation" in reports[0].message
    assert "block (2, 0, 0), thread (0, 0, 0)" in reports[0].message


@emulator
def test_initcheck_reports_an_atomic_on_memory_never_written(mod, rng):
    reports, _ = checked(lambda: launch(mod, "count_into", rng), "init")
    assert len(reports) == 1 and "4-byte atomic global read" in reports[0].message, reports
    assert f"at {line('INIT_ATOMIC')}" in reports[0].message


@emulator
def test_initcheck_is_quiet_after_copies_memsets_and_kernel_writes(mod, rng):
    def written():
        n = 1024
        for y in (cukit.to_device(rng.standard_normal(n).astype(np.float32)),
                  cukit.zeros(n, np.float32), cukit.full(n, 2.0, np.float32),
                  cukit.to_device(rng.standard_normal(n).astype(np.float32)).copy()):
            out = cukit.empty(n, np.float32)
            mod.add_one(y, out, n, grid=4, block=256)
            mod.add_one(out, y, n, grid=4, block=256)  # out: written by the kernel before
        cukit.synchronize()
    reports, warned = checked(written, "init")
    assert reports == [] and warned == []


# ------------------------------------------------------------------ synccheck

@emulator
def test_synccheck_reports_a_barrier_half_a_warp_reaches(mod, rng):
    reports, _ = checked(lambda: launch(mod, "sync_half_warp", rng), "sync")
    assert [r.checker for r in reports] == ["synccheck"], reports
    msg = reports[0].message
    assert "a barrier reached by 16 of the 32 threads of warp 0" in msg, msg
    assert "lanes 0x55555555 exited without reaching it" in msg
    assert f"at {line('SYNC_HALF')}" in msg


@emulator
def test_synccheck_reports_a_barrier_reached_at_two_places(mod, rng):
    reports, _ = checked(lambda: launch(mod, "sync_if_else", rng), "sync")
    assert reports and all("reach a barrier at two places" in r.message for r in reports), reports


@emulator
def test_synccheck_reports_warps_that_returned_before_a_barrier(mod, rng):
    reports, _ = checked(lambda: launch(mod, "sync_after_return", rng), "sync")
    assert len(reports) == 1, reports
    assert "a barrier reached by 32 of the block's 64 threads: 1 warps (32 threads) exited" \
        in reports[0].message
    assert f"at {line('SYNC_RETURN')}" in reports[0].message


@emulator
def test_synccheck_reports_a_syncwarp_mask_without_the_caller(mod, rng):
    reports, _ = checked(lambda: launch(mod, "syncwarp_half", rng), "sync")
    assert len(reports) == 1, reports
    assert "__syncwarp(0x0000ffff) by lane 16, which its mask leaves out" in reports[0].message
    assert f"at {line('SYNCWARP')}" in reports[0].message


@emulator
@pytest.mark.parametrize("name", ["reduce", "race_fixed", "warp_exchange"])
def test_synccheck_is_quiet_on_whole_blocks_at_each_barrier(mod, rng, name):
    reports, _ = checked(lambda: launch(mod, name, rng), "sync")
    assert reports == []


# ------------------------------------------------------------------ cukit's own kernels

@emulator
@pytest.mark.parametrize("n", [1, 37, 1000, 5000])
def test_cukits_generated_kernels_give_no_report(rng, n):
    def work():
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.integers(-1000, 1000, n).astype(np.int32)
        da, db = cukit.to_device(a), cukit.to_device(b)
        got = [cukit.sum(da), cukit.cumsum(da), cukit.sort(da), cukit.sort(db), cukit.argsort(db),
               cukit.max(db), da * 2 + 1, cukit.cumsum(da.astype(np.float64)),
               cukit.cumsum(db.astype(np.int64))]
        want = [a.sum(dtype=np.float32), np.cumsum(a), np.sort(a), np.sort(b), None, b.max(),
                a * 2 + 1, np.cumsum(a.astype(np.float64)), np.cumsum(b.astype(np.int64))]
        for g, w in zip(got, want):
            g = g.get() if hasattr(g, "get") else g
            if w is not None:
                np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4 * max(1, n))
    reports, warned = checked(work)
    assert reports == [] and warned == []


# ------------------------------------------------------------------ switches

@emulator
def test_without_the_switch_nothing_is_checked(mod, rng):
    cukit._cukit._emulator_check_reports()
    launch(mod, "race_raw", rng)
    launch(mod, "add_one", rng)
    assert cukit._cukit._emulator_check_reports() == ([], 0)


@emulator
def test_a_check_names_only_its_checkers(mod, rng):
    reports, _ = checked(lambda: launch(mod, "race_raw", rng), "init", "sync")
    assert reports == []


def test_an_unknown_checker_is_refused_by_name():
    with pytest.raises(ValueError, match=r"'memcheck' is not a checker; the checkers are 'race'"):
        cukit.debug.check("memcheck")


def run(code, **env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, **env))


PROGRAM = """
import numpy as np, cukit
mod = cukit.compile(open({path!r}).read(), name="bugs.cu")
x = cukit.to_device(np.random.default_rng(0).standard_normal(1024).astype(np.float32))
y = cukit.to_device(np.zeros(1024, np.float32))
{body}
cukit.synchronize()
print("done")
"""


def program(tmp_path, body):
    src = tmp_path / "bugs.cu"
    src.write_text(BUGS)
    return PROGRAM.format(path=str(src), body=textwrap.dedent(body))


@emulator
def test_the_environment_variable_prints_each_report_once(tmp_path):
    p = run(program(tmp_path, """
        for _ in range(3):
            mod.race_raw(x, y, grid=1, block=256)
        mod.add_one(cukit.empty(1024, np.float32), y, 1024, grid=4, block=256)
        """), CUKIT_EMULATOR_CHECK="race,init")
    assert p.returncode == 0 and "done" in p.stdout, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("cukit emulator ")]
    assert sum("racecheck: read-after-write hazard" in ln for ln in lines) == 1, p.stderr
    assert sum("initcheck: 4-byte global read" in ln for ln in lines) == 1, p.stderr


@emulator
def test_a_bad_environment_value_is_refused_by_name(tmp_path):
    p = run("import cukit; cukit.zeros(4)", CUKIT_EMULATOR_CHECK="race,memcheck")
    assert p.returncode != 0
    assert "CUKIT_EMULATOR_CHECK=race,memcheck is not a list of the emulator's checkers" in p.stderr
    assert "InvalidValueError" in p.stderr


# ------------------------------------------------------------------ against compute-sanitizer

# kernel, compute-sanitizer's tool, whether the emulator's checker reports it. Left out:
# warps that return before a __syncthreads() (sync_after_return: whether exited threads
# count at a barrier is not defined, so the sanitizer may stay quiet there), and races on
# global memory (race_global: compute-sanitizer's racecheck watches shared memory).
AGREE = [
    ("race_raw", "racecheck", True), ("race_waw", "racecheck", True),
    ("race_war", "racecheck", True), ("race_fixed", "racecheck", False),
    ("warp_exchange", "racecheck", False), ("reduce", "racecheck", False),
    ("add_one", "initcheck", True), ("count_into", "initcheck", True),
    ("reduce", "initcheck", False),
    ("sync_half_warp", "synccheck", True), ("sync_if_else", "synccheck", True),
    ("syncwarp_half", "synccheck", True), ("reduce", "synccheck", False),
]
TOOL = {"racecheck": "race", "initcheck": "init", "synccheck": "sync"}

LAUNCH = """
import sys
sys.path.insert(0, {tests!r})
import numpy as np, cukit
import test_emulator_checks as t
mod = cukit.compile(t.BUGS, name="bugs.cu")
t.launch(mod, {name!r}, np.random.default_rng(0))
print("launched")
"""


@emulator
@pytest.mark.parametrize("name,tool,found", AGREE)
def test_the_agreement_table_holds_on_the_emulator(mod, rng, name, tool, found):
    reports, _ = checked(lambda: launch(mod, name, rng), TOOL[tool])
    assert bool(reports) == found, reports


@pytest.mark.gpu
@pytest.mark.skipif(EMULATOR, reason="compute-sanitizer needs a real GPU")
@pytest.mark.skipif(shutil.which("compute-sanitizer") is None, reason="compute-sanitizer is not on PATH")
@pytest.mark.parametrize("name,tool,found", AGREE)
def test_compute_sanitizer_agrees(name, tool, found):
    code = LAUNCH.format(tests=os.path.dirname(os.path.abspath(__file__)), name=name)
    p = subprocess.run(["compute-sanitizer", "--tool", tool, "--target-processes", "application-only",
                        sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, CUKIT_BACKEND="gpu"))
    out = p.stdout + p.stderr
    # synccheck stops a kernel at the barrier it reports (the launch then fails): the
    # run reached the kernel when the tool says so, or when the script ended
    assert "launched" in out or (found and "ERROR SUMMARY" in out), out[-3000:]
    errors = sum(int(n) for n in re.findall(r"ERROR SUMMARY: (\d+) error", out))
    hazards = sum(int(n) for n in re.findall(r"RACECHECK SUMMARY: (\d+) hazard", out))
    assert (errors + hazards > 0) == found, out[-3000:]


@pytest.mark.gpu
@pytest.mark.skipif(EMULATOR, reason="on the emulator, check() runs")
def test_check_on_a_gpu_points_at_compute_sanitizer():
    with pytest.raises(cukit.NotSupportedError, match="compute-sanitizer --tool racecheck"):
        with cukit.debug.check():
            pass
