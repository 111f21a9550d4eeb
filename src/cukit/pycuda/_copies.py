"""Host <-> device byte copies and the reading of a device address from what PyCUDA
programs pass for one: shared by driver and _texref."""
from __future__ import annotations

import numpy as np

import cukit
from cukit import _cukit


def _host_bytes(ary, writable):
    """ary as a C-contiguous buffer of the same bytes: an F-contiguous numpy array is
    read through its transpose (the same memory)."""
    if isinstance(ary, np.ndarray) and not ary.flags.c_contiguous:
        if ary.flags.f_contiguous:
            return ary.T
        raise ValueError("memcpy needs a contiguous host array (C or Fortran order); "
                         "pass numpy.ascontiguousarray(a)")
    return ary


def _address(dev):
    """int address of a device-side memcpy argument (a GPUArray's is its gpudata's:
    int() of a one-element GPUArray is its value)."""
    gpudata = getattr(dev, "gpudata", None)
    if gpudata is not None:
        return int(gpudata)
    try:
        return int(dev)
    except TypeError:
        cai = getattr(dev, "__cuda_array_interface__", None)
        if cai is not None:
            return cai["data"][0]
        raise TypeError("expected device memory (a DeviceAllocation, an int address or an "
                        "object with __cuda_array_interface__), got %s"
                        % type(dev).__name__) from None


def _check_fits(dev, nbytes, what):
    size = getattr(dev, "size", None)
    if isinstance(dev, cukit.Buffer) and size is not None and nbytes > size:
        raise ValueError("%s: %d bytes do not fit in the %d-byte allocation"
                         % (what, nbytes, size))


def memcpy_htod(dest, src):
    """Copy len(src) bytes (its whole buffer) from host to device address dest."""
    src = _host_bytes(src, False)
    n = memoryview(src).nbytes
    _check_fits(dest, n, "memcpy_htod")
    if n:
        _cukit._copy_htod(_address(dest), src)


def memcpy_dtoh(dest, src):
    """Fill host buffer dest (all of it) from device address src."""
    dest = _host_bytes(dest, True)
    n = memoryview(dest).nbytes
    _check_fits(src, n, "memcpy_dtoh")
    if n:
        _cukit._copy_dtoh(dest, _address(src))


class _Holder:
    __slots__ = ("__cuda_array_interface__", "_owner")

    def __init__(self, cai, owner):
        self.__cuda_array_interface__ = cai
        self._owner = owner
