"""Reductions and scans: the Python-side conveniences over the C engine.

InclusiveScanKernel and ExclusiveScanKernel are PyCUDA's scan builders on cukit arrays,
kept importable from cukit; their documented home is cukit.pycuda.scan (the scan runs in
C, csrc/compute/reduce/scan.c). allclose and array_equal fetch one bool from the device.
"""
from . import _cukit
from ._fuse import fuse


class InclusiveScanKernel(_cukit.ScanKernel):
    """InclusiveScanKernel(dtype, scan_expr, neutral=None, name_prefix="scan", options=None,
    preamble="", devices=None): k(input_ary, output_ary=None, stream=None) writes
    out[i] = in[0] op ... op in[i] (in place when output_ary is None) and returns it."""

    def __new__(cls, dtype, scan_expr, neutral=None, name_prefix="scan", options=None,
                preamble="", devices=None):
        return super().__new__(cls, dtype, scan_expr, neutral, False, name_prefix, options,
                               preamble, devices)


class ExclusiveScanKernel(_cukit.ScanKernel):
    """ExclusiveScanKernel(dtype, scan_expr, neutral, ...): out[0] = neutral and
    out[i] = in[0] op ... op in[i-1]."""

    def __new__(cls, dtype, scan_expr, neutral, name_prefix="scan", options=None,
                preamble="", devices=None):
        return super().__new__(cls, dtype, scan_expr, neutral, True, name_prefix, options,
                               preamble, devices)


@fuse
def _close(a, b, rtol, atol):
    return (_cukit.absolute(a - b) <= atol + rtol * _cukit.absolute(b)) | (a == b)


@fuse
def _close_nan(a, b, rtol, atol):
    return ((_cukit.absolute(a - b) <= atol + rtol * _cukit.absolute(b)) | (a == b)
            | (_cukit.isnan(a) & _cukit.isnan(b)))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """numpy.allclose on device arrays: one elementwise kernel and one reduction; returns
    a Python bool (so it waits for the device)."""
    close = (_close_nan if equal_nan else _close)(a, b, float(rtol), float(atol))
    return bool(_cukit.all(close).get())


def array_equal(a1, a2, equal_nan=False):
    """numpy.array_equal on device arrays: a Python bool."""
    if tuple(a1.shape) != tuple(a2.shape):
        return False
    if a1.size == 0:
        return True
    eq = a1 == a2
    if equal_nan:
        eq = eq | (_cukit.isnan(a1) & _cukit.isnan(a2))
    return bool(_cukit.all(eq).get())
