"""pycuda.scan on cukit: InclusiveScanKernel and ExclusiveScanKernel, faces of
cukit's scans (single pass with decoupled look-back, csrc/compute/reduce/scan.c)."""
from __future__ import annotations

import numpy as np

import cukit

from . import _engine
from .gpuarray import GPUArray
from .reduction import _builder_options, _builder_preamble, _struct_ctype


class _ScanKernel:
    _exclusive = False

    def __init__(self, dtype, scan_expr, neutral=None, name_prefix="scan", options=None,
                 preamble="", devices=None):
        dtype = np.dtype(dtype)
        # a complex is scanned as PyCUDA scans it: in pycuda::complex<T>, so scan_expr
        # and the preamble can use that type's functions
        ctype = _struct_ctype(dtype) if dtype.kind == "c" else None
        self._k = cukit._cukit.ScanKernel(dtype, scan_expr, neutral, self._exclusive,
                                          name_prefix,
                                          _builder_options(options, type(self).__name__),
                                          _builder_preamble(preamble), None, ctype)
        self.dtype = dtype
        self._warned = set()

    def __call__(self, input_ary, output_ary=None, allocator=None, queue=None, stream=None):
        """Scan input_ary into output_ary (into input_ary itself when None) and return it."""
        if not isinstance(input_ary, GPUArray):
            raise TypeError("%s: the input must be a GPUArray, not %s"
                            % (type(self).__name__, type(input_ary).__name__))
        if output_ary is None:
            output_ary = input_ary
        elif not isinstance(output_ary, GPUArray):
            raise TypeError("%s: the output must be a GPUArray, not %s"
                            % (type(self).__name__, type(output_ary).__name__))
        ins, outs = _flat(input_ary), _flat(output_ary)
        # an array whose dtype is not the scan's: PyCUDA runs those (lenient says how, or
        # leaves it to cukit's error); converted once, called once
        fixed = _engine.lenient([ins, outs], {0: ("input_ary", self.dtype),
                                              1: ("output_ary", self.dtype)},
                                type(self).__name__, self._warned)
        self._k(*(fixed or (ins, outs)), stream=stream or queue)
        return output_ary


def _flat(a):
    """The cukit.Array over a's elements in order, 1-D (PyCUDA scans the memory)."""
    if a.ndim == 1:
        return a.array
    if not a.is_c_contiguous:
        raise ValueError("a scan of a %d-D array needs it C-contiguous; copy it first with "
                         ".copy()" % a.ndim)
    return a.array.reshape((a.size,))


class InclusiveScanKernel(_ScanKernel):
    """InclusiveScanKernel(dtype, scan_expr, neutral=None, ...):
    out[i] = in[0] op ... op in[i]."""


class ExclusiveScanKernel(_ScanKernel):
    """ExclusiveScanKernel(dtype, scan_expr, neutral, ...): out[0] = neutral and
    out[i] = in[0] op ... op in[i-1]."""
    _exclusive = True

    def __init__(self, dtype, scan_expr, neutral, name_prefix="scan", options=None,
                 preamble="", devices=None):
        super().__init__(dtype, scan_expr, neutral, name_prefix, options, preamble, devices)
