"""Importing and asking about devices works on any machine, with or without a driver."""
import subprocess
import sys

import pytest

import cukit
from conftest import HAVE_GPU


def test_device_count_is_an_int():
    n = cukit.device_count()
    assert isinstance(n, int) and n >= 0


def test_exception_hierarchy():
    assert issubclass(cukit.OutOfMemoryError, cukit.CudaError)
    assert issubclass(cukit.OutOfMemoryError, MemoryError)
    assert issubclass(cukit.NoDeviceError, cukit.CudaError)
    assert issubclass(cukit.CompileError, cukit.CudaError)
    assert issubclass(cukit.KernelFaultError, cukit.CudaError)
    assert issubclass(cukit.InvalidValueError, ValueError)
    assert issubclass(cukit.CudaError, RuntimeError)


@pytest.mark.skipif(HAVE_GPU, reason="checks the behaviour without a GPU")
def test_no_device_error_says_what_was_looked_for():
    assert cukit.device_count() == 0
    for make in (lambda: cukit.Device(0), lambda: cukit.empty(4), cukit.synchronize,
                 lambda: cukit.alloc(16), cukit.Stream, cukit.Event):
        with pytest.raises(cukit.NoDeviceError) as info:
            make()
        assert "libcuda.so.1" in str(info.value) or "cuInit" in str(info.value)
        assert info.value.name == "CUDA_ERROR_NO_DEVICE"
        assert info.value.code == 100


def test_import_with_no_driver_on_the_loader_path(tmp_path):
    """A process whose loader cannot find libcuda still imports and counts 0 devices."""
    code = "import cukit; print(cukit.device_count())"
    env = {"LD_LIBRARY_PATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    # LD_PRELOAD of nothing, and a library path that holds no libcuda: on a GPU
    # machine the system libcuda is still found, so only the no-crash part is universal.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**env, "PYTHONPATH": ":".join(sys.path)})
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) >= 0


def test_version_matches_the_package_metadata():
    import pathlib
    import re

    import cukit

    pyproject = pathlib.Path(__file__).resolve().parent.parent / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("not run from a source checkout")
    declared = re.search(r'^version = "([^"]+)"', pyproject.read_text(), re.M).group(1)
    assert cukit.__version__ == declared  # the kernel cache keys on it
