"""Shared fixtures: a `gpu` marker that skips without a device, fresh random data.

Without a GPU, cukit's default backend (auto) runs kernels on its CPU emulator, so
`gpu` tests run there too; tests marked `gpu_hardware` need a real GPU (timings,
the driver's memory pool, machine code) and skip on the emulator."""
import os
import tempfile

import numpy as np
import pytest

# Tests must not read or fill the user's own kernel cache; subprocesses inherit this.
os.environ["CUKIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="cukit-test-cache-")

import cukit  # noqa: E402

HAVE_GPU = cukit.device_count() > 0
EMULATOR = HAVE_GPU and cukit.backend() == "emulator"
if EMULATOR and os.environ.get("CUKIT_BACKEND", "auto") == "auto":
    # processes the tests start use the emulator too, without auto's note on stderr
    os.environ["CUKIT_BACKEND"] = "emulator"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gpu_hardware: needs a real GPU, not the emulator (timing, the driver's "
        "memory pool, machine code); skipped on the emulator")


def pytest_collection_modifyitems(config, items):
    if HAVE_GPU and not EMULATOR:
        return
    if HAVE_GPU:
        reason = "needs a real GPU: this run uses cukit's CPU emulator"
        marker = "gpu_hardware"
    else:
        reason = "needs a CUDA GPU (cukit.device_count() == 0)"
        marker = "gpu"
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if marker in item.keywords or (not HAVE_GPU and "gpu_hardware" in item.keywords):
            item.add_marker(skip)


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
