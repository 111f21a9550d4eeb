"""Shared fixtures: `gpu` and `multi_gpu` markers that skip without the devices, fresh random data.

Without a GPU, cukit's default backend (auto) runs kernels on its CPU emulator, so
`gpu` tests run there too; tests marked `gpu_hardware` need a real GPU (timings,
the driver's memory pool, machine code) and skip on the emulator."""
import os
import shutil
import tempfile

import numpy as np
import pytest

# Tests must not read or fill the user's own kernel cache; subprocesses inherit this.
# The session that made the folder removes it at its end (pytest_unconfigure); a
# child that imports this file (multiprocessing's spawn) uses its parent's.
_PREFIX = os.path.join(tempfile.gettempdir(), "cukit-test-cache-")
_INHERITED = os.environ.get("CUKIT_CACHE_DIR", "")
if _INHERITED.startswith(_PREFIX) and os.path.isdir(_INHERITED):
    TEST_CACHE_DIR, _OWNED = _INHERITED, False
else:
    TEST_CACHE_DIR, _OWNED = tempfile.mkdtemp(prefix="cukit-test-cache-"), True
os.environ["CUKIT_CACHE_DIR"] = TEST_CACHE_DIR
# NVLink multicast (NVLS) stays off in every run and every subprocess: the shared
# multi-GPU machines are run with it switched off.
os.environ["NCCL_NVLS_ENABLE"] = "0"

import cukit  # noqa: E402

DEVICES = cukit.device_count()
HAVE_GPU = DEVICES > 0
EMULATOR = HAVE_GPU and cukit.backend() == "emulator"
if EMULATOR and os.environ.get("CUKIT_BACKEND", "auto") == "auto":
    # processes the tests start use the emulator too, without auto's note on stderr
    os.environ["CUKIT_BACKEND"] = "emulator"
# nor a slow compile's note (test_cache.py tests it), which a loaded machine would
# add to the stderr that tests read
os.environ.setdefault("CUKIT_QUIET", "1")


def children():
    """{pid: (name, state, args)} of this process's children, zombies included (state 'Z',
    args ''), read from Linux's /proc: ps hangs under the sanitizer run's preloaded
    runtime."""
    pids = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    found = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        # pid (name) state ...: the name may hold spaces and parentheses
        found[pid] = (stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2], args)
    return found


# A kernel still reading x long after its launch (tests of when freed memory may be
# reused): waits `ns` nanoseconds of GPU time, then copies x to y. One warp waits and
# copies, so the wait is ns on the emulator too, which runs warps one after another.
SLOW_COPY = r"""
extern "C" __global__ void slow_copy(const float* x, float* y, size_t n, unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        y[i] = x[i];
}
"""


def slow_copy(kernels, x, y, n, ns, stream=None):
    """y = x, ns nanoseconds after the launch (SLOW_COPY in `kernels`)."""
    kernels.slow_copy(x, y, n, ns, grid=1, block=32, stream=stream)


def spread(jobs):
    """The jobs in an order of this test process's own: pytest-xdist's workers warm up
    the same kernels into one shared cache, each starting where the others do not."""
    import random

    jobs = list(jobs)
    random.Random(os.environ.get("PYTEST_XDIST_WORKER", "")).shuffle(jobs)
    return jobs


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gpu_hardware: needs a real GPU, not the emulator (timing, the driver's "
        "memory pool, machine code); skipped on the emulator")


def pytest_unconfigure(config):
    """Leave no cache folder behind (also when tests changed its permissions)."""
    if not _OWNED:
        return
    if os.path.isdir(TEST_CACHE_DIR):
        os.chmod(TEST_CACHE_DIR, 0o700)
    shutil.rmtree(TEST_CACHE_DIR, ignore_errors=True)


def pytest_runtest_logreport(report):
    """With CUKIT_FAILLOG=FILE, each failure's traceback is appended to FILE as it happens:
    a run that a time limit stops keeps the tracebacks pytest would print only at its end.
    (Under pytest-xdist the worker writes; the controller's copy carries `node` and is
    left out.)"""
    path = os.environ.get("CUKIT_FAILLOG")
    if not path or not report.failed or getattr(report, "node", None) is not None:
        return
    with open(path, "a") as f:
        f.write(f"==== {report.nodeid} ({report.when})\n{report.longreprtext}\n")
        for name, text in report.sections:
            f.write(f"---- {name}\n{text[-4000:]}\n")


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (cukit.device_count() == 0)")
    skip_two = pytest.mark.skip(reason=f"needs 2 GPUs (cukit.device_count() == {DEVICES})")
    skip_hw = pytest.mark.skip(reason="needs a real GPU: this run uses cukit's CPU emulator")
    for item in items:
        if ("gpu" in item.keywords or "gpu_hardware" in item.keywords) and not HAVE_GPU:
            item.add_marker(skip_gpu)
        elif "multi_gpu" in item.keywords and DEVICES < 2:
            item.add_marker(skip_two)
        elif "gpu_hardware" in item.keywords and EMULATOR:
            item.add_marker(skip_hw)


# A test marked `fills_device` holds most of the device's memory for a while. Under
# pytest-xdist it runs alone: it waits for the tests running in other workers to end,
# and they start none while it runs, so no test meets a device it filled. Two file locks
# of the run: a gate each test passes through (a filling test holds it to its end) and
# the device, shared by every other test, exclusive to a filling one, held through each
# test's setup (module fixtures included), call and teardown. Only the worker
# itself locks (its pid is noted for the processes it starts, which inherit the note):
# a test's child that ran tests of its own would otherwise wait on its parent.
_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")
if _RUN and not os.environ.get("CUKIT_TEST_LOCKER"):
    os.environ["CUKIT_TEST_LOCKER"] = str(os.getpid())
_LOCKS = _RUN and os.environ.get("CUKIT_TEST_LOCKER") == str(os.getpid())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """The turn of _LOCKS around a test's whole protocol: its setup (fixtures of every
    scope that start with it), call and teardown."""
    if not _LOCKS:
        yield
        return
    import fcntl

    base = os.path.join(tempfile.gettempdir(), f"cukit-test-{_RUN}")
    fills = item.get_closest_marker("fills_device") is not None
    with open(base + ".gate", "a") as gate, open(base + ".device", "a") as device:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(device, fcntl.LOCK_EX if fills else fcntl.LOCK_SH)
        finally:
            if not fills:
                fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(device, fcntl.LOCK_UN)
            if fills:
                fcntl.flock(gate, fcntl.LOCK_UN)


@pytest.fixture
def ctx():
    """A PyCUDA-layer context made current for the test (make_default_context), popped
    after it: what `import pycuda.autoinit` gives a program."""
    import cukit.pycuda.driver as drv
    from cukit.pycuda.tools import make_default_context

    drv.init()
    c = make_default_context()
    yield c
    c.pop()


@pytest.fixture
def rng():
    """A generator seeded afresh each test; the seed is in the test's report on failure."""
    seed = np.random.SeedSequence().entropy
    print(f"random seed: {seed}")
    return np.random.default_rng(seed)


def poison(shape, dtype):
    """A host array of NaN (or all-ones bits) so unwritten outputs show."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return np.full(shape, np.nan, dtype)
    return np.full(shape, -1 if dtype.kind == "i" else np.iinfo(dtype).max, dtype)
