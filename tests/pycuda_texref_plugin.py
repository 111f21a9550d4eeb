"""A pytest plugin that runs PyCUDA's texture- and surface-reference tests on cukit.

PyCUDA's own tests skip themselves where `drv.get_driver_version() // 1000 >= 12`
("texture references were removed in CUDA 12"). cukit.pycuda gives references back on
CUDA 12 and newer (lowered to texture and surface objects), so for those tests only,
found by that skip in their source, this plugin makes get_driver_version answer as
CUDA 11.8; every other test sees the real driver version. Load it with

    python -m cukit.pycuda -m pytest -p pycuda_texref_plugin test_driver.py

with this folder on PYTHONPATH (tests/test_pycuda_texref.py does so)."""
import inspect

import pytest

_SKIPS = ("texture references were removed in CUDA 12",
          "surface references were removed in CUDA 12")
CUDA_11 = 11080


def _skips_for_references(function):
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    return "get_driver_version()" in source and any(s in source for s in _SKIPS)


@pytest.fixture(autouse=True)
def _references_as_on_cuda_11(request, monkeypatch):
    function = getattr(request, "function", None)
    if function is not None and _skips_for_references(function):
        import pycuda.driver as drv  # cukit.pycuda.driver under `python -m cukit.pycuda`

        monkeypatch.setattr(drv, "get_driver_version", lambda: CUDA_11)
    yield
