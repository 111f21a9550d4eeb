"""Every driver symbol cukit dlopens exists, checked against the toolkit's stub libcuda.

The stub exports the real driver's names, so a misspelt or wrongly versioned
entry point is caught in CI, where there is no GPU and no driver.
"""
import ctypes
import os
import pathlib
import re

import pytest

ENTRY_POINTS = pathlib.Path(__file__).parent.parent / "csrc" / "driver" / "entry_points.h"


def stub_libcuda():
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for root in filter(None, roots):
        for sub in ("lib64/stubs/libcuda.so", "lib/stubs/libcuda.so", "targets/x86_64-linux/lib/stubs/libcuda.so"):
            path = pathlib.Path(root) / sub
            if path.exists():
                return path
    return None


def declared(prefix):
    text = ENTRY_POINTS.read_text()
    return re.findall(r'X\([^,]+,\s*\w+,\s*"(' + prefix + r'\w*)"', text)


def test_driver_symbols_exist():
    stub = stub_libcuda()
    if stub is None:
        pytest.skip("no CUDA toolkit stub libcuda.so to check against")
    lib = ctypes.CDLL(str(stub))
    missing = [name for name in declared("cu") if not hasattr(lib, name)]
    assert not missing, f"entry_points.h names symbols the driver does not export: {missing}"


def test_nvrtc_symbols_exist():
    import cukit

    cukit.nvrtc_version()  # loads NVRTC the way cukit does
    try:
        lib = ctypes.CDLL("libnvrtc.so." + str(cukit.nvrtc_version()[0]))
    except OSError:
        pytest.skip("NVRTC is not on the loader path (cukit found it elsewhere)")
    missing = [name for name in declared("nvrtc") if not hasattr(lib, name)]
    assert not missing, f"entry_points.h names symbols NVRTC does not export: {missing}"


def test_nvjitlink_symbols_exist():
    """Each nvJitLink entry exists plain, and versioned for the library's major where the
    library versions its symbols (the loader prefers the versioned one)."""
    import cukit

    try:
        major, _ = cukit.nvjitlink_version()
    except cukit.NotSupportedError as e:
        pytest.skip(f"nvJitLink is not installed: {e}")
    try:
        lib = ctypes.CDLL(f"libnvJitLink.so.{major}")
    except OSError:
        roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
        paths = [pathlib.Path(r) / "lib64" / f"libnvJitLink.so.{major}" for r in filter(None, roots)]
        found = [p for p in paths if p.exists()]
        if not found:
            pytest.skip("nvJitLink is not on the loader path or in CUDA_HOME (cukit found it elsewhere)")
        lib = ctypes.CDLL(str(found[0]))
    names = declared("nvJitLink")
    assert "nvJitLinkCreate" in names
    missing = [n for n in names if not hasattr(lib, n)]
    assert not missing, f"entry_points.h names symbols nvJitLink does not export: {missing}"
    if hasattr(lib, f"__nvJitLinkCreate_{major}_0"):
        unversioned = [n for n in names if n != "nvJitLinkVersion" and not hasattr(lib, f"__{n}_{major}_0")]
        assert not unversioned, f"no versioned symbol for: {unversioned}"
