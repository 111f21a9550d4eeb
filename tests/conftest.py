"""Shared fixtures: a `gpu` marker that skips without a device, fresh random data."""
import os
import tempfile

import numpy as np
import pytest

# Tests must not read or fill the user's own kernel cache; subprocesses inherit this.
os.environ["CUKIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="cukit-test-cache-")

import cukit  # noqa: E402

HAVE_GPU = cukit.device_count() > 0


def pytest_collection_modifyitems(config, items):
    if HAVE_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (cukit.device_count() == 0)")
    for item in items:
        if "gpu" in item.keywords:
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
