"""cukit.pycuda: PyCUDA's API on cukit.

Use it with one change to a PyCUDA program (`import cukit.pycuda.driver as cuda`,
`from cukit.pycuda.compiler import SourceModule`, `import cukit.pycuda.autoinit`),
or none: `python -m cukit.pycuda prog.py` runs a program with `pycuda` and all
its submodules resolved to these, for that run only.
"""
from __future__ import annotations

VERSION = (2026, 1)


class PycudaCompatWarning(UserWarning):
    """cukit.pycuda ran something that PyCUDA runs but that is almost surely a bug (a
    float64 array passed for a float* parameter, say). Silence it, or make it an error,
    with the warnings module: warnings.simplefilter("error", PycudaCompatWarning)."""


VERSION_STATUS = ""
VERSION_TEXT = "2026.1 (cukit)"
