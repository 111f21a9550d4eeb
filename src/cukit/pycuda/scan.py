"""pycuda.scan on cukit: InclusiveScanKernel and ExclusiveScanKernel, faces of
cukit's scans."""
from __future__ import annotations

import cukit

from ._engine import needs_engine


class _ScanKernel:
    _engine_name = None

    def __init__(self, dtype, scan_expr, neutral=None, name_prefix="scan", options=None,
                 preamble="", devices=None):
        engine = getattr(cukit, self._engine_name, None)
        if engine is None:
            raise needs_engine(type(self).__name__)
        self._k = engine(dtype, scan_expr, neutral=neutral, preamble=preamble)

    def __call__(self, input_ary, output_ary=None, allocator=None, queue=None):
        return self._k(input_ary, output_ary)


class InclusiveScanKernel(_ScanKernel):
    _engine_name = "InclusiveScanKernel"


class ExclusiveScanKernel(_ScanKernel):
    _engine_name = "ExclusiveScanKernel"
