"""pycuda.driver on cukit: devices, contexts, memory, copies, streams, events and
kernel calls with PyCUDA's names and argument conventions.

Kernel calls go straight into cukit's C launch path: a `Function` holds a
strict `cukit.Kernel` built once (plain Python numbers refused, as in PyCUDA),
and `__call__` hands it the arguments as they are; only when cukit refuses one
(In/Out/InOut, GPUArrays, host arrays) does the call convert them in Python.
`prepared_call` calls a `cukit.PreparedLaunch` kept per configuration.
"""
from __future__ import annotations

import functools
import gc
import os
import threading

import numpy as np

import cukit
from cukit import _cukit

from ._enums import (  # noqa: F401  (re-exported: PyCUDA's names)
    FUNCTION_ATTRIBUTE_KEYS,
    address_mode,
    array_format,
    compute_mode,
    ctx_flags,
    device_attribute,
    event_flags,
    filter_mode,
    func_cache,
    function_attribute,
    host_alloc_flags,
    jit_input_type,
    limit,
    mem_attach_flags,
    mem_host_register_flags,
    memory_type,
    pointer_attribute,
    shared_config,
    stream_flags,
)

# ------------------------------------------------------------------ errors
#
# PyCUDA's classes (_errors.py); a cukit error raised inside the layer leaves it as
# one of them (_errors.at_edge).
from ._errors import (  # noqa: E402,F401  (PyCUDA's names)
    CompileError,
    Error,
    LaunchError,
    LogicError,
    MemoryError,
    RuntimeError,
)
from ._errors import edge as _edge  # noqa: E402
from . import _copies  # noqa: E402
from ._copies import _Holder, _address, _check_fits, _host_bytes  # noqa: E402,F401

memcpy_htod = _edge(_copies.memcpy_htod)
memcpy_dtoh = _edge(_copies.memcpy_dtoh)
from ._ctypes import _ctype_to_dtype  # noqa: E402
from . import _engine  # noqa: E402
# Texture and surface references, CUDA arrays and their copies: _texref.py.
from . import _texref  # noqa: E402
from ._texref import (  # noqa: E402,F401  (PyCUDA's names)
    TR_DEFAULT,
    TRSA_OVERRIDE_FORMAT,
    TRSF_NORMALIZED_COORDINATES,
    TRSF_READ_AS_INTEGER,
    Array,
    ArrayDescriptor,
    ArrayDescriptor3D,
    SurfaceReference,
    TextureReference,
    array3d_flags,
    bind_array_to_texref,
    dtype_to_array_format,
    gpuarray_to_array,
    make_multichannel_2d_array,
    matrix_to_array,
    matrix_to_texref,
    np_to_array,
)

# ------------------------------------------------------------------ debugging

CUDA_DEBUGGING = False


def set_debugging(flag=True):
    """Debugging on or off (pycuda.debug turns it on): cukit's debug mode, in which
    every launch waits for its kernel and a fault names the kernel, its grid and block
    and its arguments (cukit.set_debug)."""
    global CUDA_DEBUGGING
    CUDA_DEBUGGING = bool(flag)
    cukit.set_debug(CUDA_DEBUGGING)


# ------------------------------------------------------------------ init, versions


@_edge
def init(flags=0):
    """Check that a driver and a GPU are there (cukit loads the driver itself)."""
    if cukit.device_count() == 0:
        cukit.Device(0)  # raises NoDeviceError saying what was looked for


@_edge
def get_driver_version():
    """The CUDA version the driver supports, as an int: 13000 for 13.0."""
    major, minor = cukit.driver_version()
    return major * 1000 + minor * 10


@_edge
def get_version():
    """The CUDA version as (major, minor, 0): the driver's (cukit is not built
    against a toolkit)."""
    major, minor = cukit.driver_version()
    return (major, minor, 0)


# ------------------------------------------------------------------ devices and contexts


class Device:
    """A GPU, by ordinal. PyCUDA's attribute names read device attributes
    (`dev.max_threads_per_block`)."""

    __slots__ = ("_dev",)

    def __init__(self, ordinal):
        if isinstance(ordinal, str):
            raise LogicError("cukit.pycuda takes a device by ordinal, not by PCI bus id")
        self._dev = cukit.Device(int(ordinal))

    @staticmethod
    def count():
        return cukit.device_count()

    def name(self):
        return self._dev.name

    def compute_capability(self):
        return tuple(self._dev.compute_capability)

    def total_memory(self):
        return self._dev.total_memory

    def pci_bus_id(self):
        a = self._dev.attributes
        return "%04x:%02x:%02x.0" % (a["pci_domain_id"], a["pci_bus_id"], a["pci_device_id"])

    @_edge
    def get_attribute(self, attr):
        return self._dev.attributes[device_attribute(attr).name.lower()]

    @_edge
    def get_attributes(self):
        attrs = self._dev.attributes
        return {a: attrs[a.name.lower()] for a in device_attribute if a.name.lower() in attrs}

    def __getattr__(self, name):
        attr = device_attribute.__members__.get(name.upper())
        if attr is None:
            raise AttributeError(name)
        return self.get_attribute(attr)

    @_edge
    def make_context(self, flags=0):
        """A context on this device, pushed on this thread's stack. cukit runs on
        the device's primary context: every context of a device shares it."""
        ctx = Context(self)
        ctx.push()
        return ctx

    @_edge
    def retain_primary_context(self):
        """The primary context, not pushed (push() it to make it current)."""
        return Context(self)

    def __eq__(self, other):
        return isinstance(other, Device) and other._dev.ordinal == self._dev.ordinal

    def __hash__(self):
        return hash(("cukit.pycuda.Device", self._dev.ordinal))

    def __int__(self):
        return self._dev.ordinal

    def __repr__(self):
        return "<cukit.pycuda Device %d: %s>" % (self._dev.ordinal, self._dev.name)


_tls = threading.local()


class _either:
    """A method callable on the class (self is None) or on an instance."""

    def __init__(self, func):
        self.func = func
        self.__doc__ = func.__doc__

    def __get__(self, obj, owner=None):
        return functools.partial(self.func, obj)


def _stack():
    s = getattr(_tls, "stack", None)
    if s is None:
        s = _tls.stack = []
    return s


class Context:
    """PyCUDA's per-thread context stack, over the devices' primary contexts:
    push/pop/detach move this thread's stack and make the top's device current."""

    __slots__ = ("_device", "_cache_config", "__weakref__")

    def __init__(self, device):
        self._device = device
        self._cache_config = func_cache.PREFER_NONE

    @_edge
    def push(self):
        _stack().append(self)
        self._device._dev.use()

    @staticmethod
    @_edge
    def pop():
        s = _stack()
        if not s:
            raise LogicError("Context.pop: this thread's context stack is empty")
        s.pop()
        if s:
            s[-1]._device._dev.use()

    @_edge
    def detach(self):
        s = _stack()
        if s and s[-1] is self:
            Context.pop()
        elif self in s:
            s.remove(self)

    @staticmethod
    def get_current():
        s = _stack()
        return s[-1] if s else None

    @_either
    def get_device(self):
        """ctx.get_device(): the context's device; Context.get_device(): the current one's."""
        if self is not None:
            return self._device
        s = _stack()
        if s:
            return s[-1]._device
        return Device(cukit.get_device().ordinal)

    @staticmethod
    @_edge
    def synchronize():
        cukit.synchronize()

    def get_api_version(self):
        return get_driver_version()

    @staticmethod
    @_edge
    def set_cache_config(config):
        pass  # a preference only; cukit leaves the driver's default

    @staticmethod
    @_edge
    def get_cache_config():
        return func_cache.PREFER_NONE

    @staticmethod
    @_edge
    def set_limit(which, value):
        """Set a limit (driver.limit: STACK_SIZE, PRINTF_FIFO_SIZE, MALLOC_HEAP_SIZE, ...)
        of the current context (cuCtxSetLimit)."""
        (_context_device() or cukit.get_device()).set_limit(int(limit(which)), int(value))

    @staticmethod
    @_edge
    def get_limit(which):
        """A limit of the current context, in bytes or counts (cuCtxGetLimit)."""
        return (_context_device() or cukit.get_device()).get_limit(int(limit(which)))

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


def _context_device():
    """The cukit.Device of this thread's current PyCUDA context (or cukit's current)."""
    s = _stack()
    return s[-1]._device._dev if s else None


# ------------------------------------------------------------------ device memory


class DeviceAllocation(cukit.Buffer):
    """Device memory from mem_alloc: a cukit.Buffer, so kernels take it directly.
    int() is the address; `alloc + n` is an int address; a second free() raises."""

    __slots__ = ()

    @_edge
    def free(self):
        if self.freed:
            raise LogicError("cuMemFree failed: this allocation was already freed")
        cukit.Buffer.free(self)

    def __add__(self, other):
        return int(self) + int(other)

    __radd__ = __add__

    def __sub__(self, other):
        return int(self) - int(other)

    def as_buffer(self, size, offset=0):
        raise LogicError(
            "as_buffer() needs memory the host can read; a DeviceAllocation is device "
            "memory: copy it with memcpy_dtoh, or use managed_empty for shared memory")

    def __repr__(self):
        if self.freed:
            return "<DeviceAllocation %d bytes, freed>" % self.size
        return "<DeviceAllocation %d bytes at 0x%x>" % (self.size, int(self))


class PointerHolderBase:
    """Base for objects that hold a device pointer: subclasses define get_pointer()."""

    def get_pointer(self):
        raise NotImplementedError

    def __int__(self):
        return int(self.get_pointer())

    __index__ = __int__

    def as_buffer(self, size, offset=0):
        raise LogicError("as_buffer() needs memory the host can read")


class DevicePointer(int):
    """An int device address that keeps what owns the memory alive (Module.get_global)."""

    def __new__(cls, ptr, owner=None):
        self = int.__new__(cls, ptr)
        self._owner = owner
        return self


@_edge
def mem_alloc(nbytes):
    """nbytes of device memory. On out-of-memory, collects garbage (dropped
    arrays free their memory) and tries once more before raising."""
    try:
        return DeviceAllocation(nbytes)
    except cukit.OutOfMemoryError:
        gc.collect()
        return DeviceAllocation(nbytes)


@_edge
def mem_alloc_like(ary):
    return mem_alloc(ary.nbytes)


@_edge
def mem_get_info():
    """(free, total) device memory in bytes."""
    info = cukit.memory_info()
    return info["free"], info["total"]


@_edge
def memcpy_htod_async(dest, src, stream=None):
    """Queue the copy on stream; src must stay alive and unchanged until then
    (page-locked memory makes it truly asynchronous)."""
    src = _host_bytes(src, False)
    n = memoryview(src).nbytes
    _check_fits(dest, n, "memcpy_htod_async")
    if n:
        _cukit._copy_htod(_address(dest), src, stream, stream is None)


@_edge
def memcpy_dtoh_async(dest, src, stream=None):
    dest = _host_bytes(dest, True)
    n = memoryview(dest).nbytes
    _check_fits(src, n, "memcpy_dtoh_async")
    if n:
        _cukit._copy_dtoh(dest, _address(src), stream, stream is None)


def _device_view(ptr, nbytes, owner=None):
    """A cukit.Array of nbytes uint8 at a device address (kept alive by owner)."""
    if isinstance(ptr, cukit.Buffer):
        return cukit.frombuffer(ptr, np.uint8, (nbytes,))
    return cukit.asarray(_RawCAI(int(ptr), nbytes, owner))


class _RawCAI:
    __slots__ = ("__cuda_array_interface__", "_owner")

    def __init__(self, ptr, nbytes, owner):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (nbytes,),
                                         "typestr": "|u1", "strides": None, "version": 3}
        self._owner = owner


@_edge
def memcpy_dtod(dest, src, size):
    """Copy size bytes between device addresses (on the default stream)."""
    if size:
        cukit.copyto(_device_view(dest, size), _device_view(src, size))


@_edge
def memcpy_dtod_async(dest, src, size, stream=None):
    if size:
        cukit.copyto(_device_view(dest, size), _device_view(src, size), stream=stream)


@_edge
def memset_d8(dest, data, count):
    _device_view(dest, count).fill(np.uint8(data))


@_edge
def memset_d32(dest, data, count):
    a = cukit.asarray(_TypedCAI(_address(dest), count, "<u4", dest))
    a.fill(np.uint32(data))


class _TypedCAI:
    __slots__ = ("__cuda_array_interface__", "_owner")

    def __init__(self, ptr, count, typestr, owner):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (count,),
                                         "typestr": typestr, "strides": None, "version": 3}
        self._owner = owner


@_edge
def memset_d16(dest, data, count):
    cukit.asarray(_TypedCAI(_address(dest), count, "<u2", dest)).fill(np.uint16(data))


def _fill(dest, data, count, typestr, scalar, stream):
    if count:
        a = cukit.asarray(_TypedCAI(_address(dest), count, typestr, dest))
        if stream is None:
            a.fill(scalar(data))
        else:
            a.fill(scalar(data), stream=stream)


@_edge
def memset_d8_async(dest, data, count, stream=None):
    """memset_d8 queued on stream."""
    _fill(dest, data, count, "|u1", np.uint8, stream)


@_edge
def memset_d16_async(dest, data, count, stream=None):
    _fill(dest, data, count, "<u2", np.uint16, stream)


@_edge
def memset_d32_async(dest, data, count, stream=None):
    _fill(dest, data, count, "<u4", np.uint32, stream)


_MEMSET_2D = {1: ("|u1", np.uint8), 2: ("<u2", np.uint16), 4: ("<u4", np.uint32)}


def _fill_2d(size, dest, pitch, data, width, height, stream):
    """height rows of width items of `size` bytes, rows `pitch` bytes apart, set to data."""
    if width * size > pitch:
        raise LogicError("memset_d2d%d: a row of %d items of %d bytes does not fit the "
                         "pitch of %d bytes" % (size * 8, width, size, pitch))
    if not (width and height):
        return
    typestr, scalar = _MEMSET_2D[size]
    cai = {"data": (_address(dest), False), "shape": (int(height), int(width)),
           "typestr": typestr, "strides": (int(pitch), size), "version": 3}
    a = cukit.asarray(_Holder(cai, dest))
    if stream is None:
        a.fill(scalar(data))
    else:
        a.fill(scalar(data), stream=stream)


@_edge
def memset_d2d8(dest, pitch, data, width, height):
    """Set a pitched 2-D region: height rows of width bytes, rows pitch bytes apart."""
    _fill_2d(1, dest, pitch, data, width, height, None)


@_edge
def memset_d2d16(dest, pitch, data, width, height):
    _fill_2d(2, dest, pitch, data, width, height, None)


@_edge
def memset_d2d32(dest, pitch, data, width, height):
    _fill_2d(4, dest, pitch, data, width, height, None)


@_edge
def memset_d2d8_async(dest, pitch, data, width, height, stream=None):
    _fill_2d(1, dest, pitch, data, width, height, stream)


@_edge
def memset_d2d16_async(dest, pitch, data, width, height, stream=None):
    _fill_2d(2, dest, pitch, data, width, height, stream)


@_edge
def memset_d2d32_async(dest, pitch, data, width, height, stream=None):
    _fill_2d(4, dest, pitch, data, width, height, stream)


_PITCH_ALIGNMENT = 512  # what cuMemAllocPitch gives on current GPUs


@_edge
def mem_alloc_pitch(width, height, access_size):
    """(DeviceAllocation, pitch): height rows of width bytes, each row starting at a
    multiple of the pitch, which is width rounded up to 512 bytes. access_size (4, 8
    or 16) is the size of the widest access the kernels make."""
    if access_size not in (4, 8, 16):
        raise LogicError("mem_alloc_pitch: access_size must be 4, 8 or 16 bytes, got %r"
                         % (access_size,))
    width, height = int(width), int(height)
    if width <= 0 or height <= 0:
        raise LogicError("mem_alloc_pitch: width and height must be positive, got %d x %d"
                         % (width, height))
    pitch = -(-width // _PITCH_ALIGNMENT) * _PITCH_ALIGNMENT
    return mem_alloc(pitch * height), pitch


def _context_of(ctx):
    return None if ctx is None else ctx._device._dev


def _peer_view(ptr, size, ctx):
    """A uint8 cukit.Array of size bytes at ptr on ctx's device (the current one when
    ctx is None)."""
    if isinstance(ptr, cukit.Buffer) or ctx is None:
        return _device_view(ptr, size)
    with ctx._device._dev:
        return _device_view(ptr, size)


@_edge
def memcpy_peer(dest, src, size, dest_context=None, src_context=None):
    """Copy size bytes from src (memory of src_context's device) to dest (of
    dest_context's device); the contexts default to the current one."""
    if size:
        cukit.copyto(_peer_view(dest, size, dest_context), _peer_view(src, size, src_context))


@_edge
def memcpy_peer_async(dest, src, size, dest_context=None, src_context=None, stream=None):
    if size:
        cukit.copyto(_peer_view(dest, size, dest_context), _peer_view(src, size, src_context),
                   stream=stream)


@_edge
def to_device(bf_obj):
    """A new DeviceAllocation holding a copy of the host buffer."""
    src = _host_bytes(bf_obj, False)
    n = memoryview(src).nbytes
    result = mem_alloc(n)
    if n:
        _cukit._copy_htod(int(result), src)
    return result


@_edge
def from_device(devptr, shape, dtype, order="C"):
    result = np.empty(shape, dtype, order=order)
    memcpy_dtoh(result, devptr)
    return result


@_edge
def from_device_like(devptr, other_ary):
    result = np.empty_like(other_ary)
    memcpy_dtoh(result, devptr)
    return result


# ------------------------------------------------------------------ host memory


def _shape(shape):
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)


def _host_array(make, shape, dtype, order):
    """A numpy array from cukit's allocator `make` whose .base is the allocation,
    in C or Fortran order."""
    shape = _shape(shape)
    if order == "C":
        return make(shape, dtype)
    if order != "F":
        raise ValueError("order must be 'C' or 'F', got %r" % (order,))
    flat = make(int(np.prod(shape)), dtype)
    return np.ndarray(shape, flat.dtype, buffer=flat.base, order="F")


def _order_of(array):
    return "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"


class HostAllocation(np.ndarray):
    """The .base of pagelocked_* and managed_* arrays (PyCUDA's HostAllocation and
    ManagedAllocation): get_device_pointer() is the address kernels use for the same
    memory (cukit's pinned memory is always mapped), as an int."""

    def get_device_pointer(self):
        memory = self.base
        while isinstance(memory, np.ndarray):
            memory = memory.base
        return memory.device_ptr + (self.__array_interface__["data"][0] - memory.ptr)

    def get_flags(self):
        return host_alloc_flags.PORTABLE | host_alloc_flags.DEVICEMAP


PagelockedHostAllocation = ManagedAllocation = HostAllocation


def _with_allocation(ary):
    """A plain numpy array over ary's memory whose .base is a HostAllocation (over the
    cukit.HostMemory itself: numpy would fold a view of a view into one base)."""
    memory = ary.base
    while isinstance(memory, np.ndarray):
        memory = memory.base
    holder = np.ndarray.__new__(HostAllocation, ary.shape, ary.dtype, buffer=memory,
                                offset=ary.__array_interface__["data"][0] - memory.ptr,
                                strides=ary.strides)
    return holder.view(np.ndarray)


@_edge
def pagelocked_empty(shape, dtype, order="C", mem_flags=0):
    """A numpy array in page-locked (pinned) host memory, mapped into the device's
    address space: .base.get_device_pointer() is its device address."""
    return _with_allocation(_host_array(cukit.pinned_empty, shape, dtype, order))


@_edge
def pagelocked_zeros(shape, dtype, order="C", mem_flags=0):
    return _with_allocation(_host_array(cukit.pinned_zeros, shape, dtype, order))


@_edge
def pagelocked_empty_like(array, mem_flags=0):
    return pagelocked_empty(array.shape, array.dtype, _order_of(array))


@_edge
def pagelocked_zeros_like(array, mem_flags=0):
    return pagelocked_zeros(array.shape, array.dtype, _order_of(array))


def _check_attach(mem_flags):
    if mem_flags not in (0, mem_attach_flags.GLOBAL):
        raise LogicError("cukit.pycuda allocates managed memory attached globally "
                         "(mem_attach_flags.GLOBAL); other attach flags are not provided")


@_edge
def managed_empty(shape, dtype, order="C", mem_flags=0):
    """A numpy array in managed memory, attached globally (mem_flags 0 means that
    too), usable as a kernel pointer argument. Touch it on the host only after
    Context.synchronize()."""
    _check_attach(mem_flags)
    return _with_allocation(_host_array(cukit.managed_empty, shape, dtype, order))


@_edge
def managed_zeros(shape, dtype, order="C", mem_flags=0):
    _check_attach(mem_flags)
    return _with_allocation(_host_array(cukit.managed_zeros, shape, dtype, order))


@_edge
def managed_empty_like(array, mem_flags=0):
    return managed_empty(array.shape, array.dtype, _order_of(array), mem_flags)


@_edge
def managed_zeros_like(array, mem_flags=0):
    return managed_zeros(array.shape, array.dtype, _order_of(array), mem_flags)


def aligned_empty(shape, dtype, order="C", alignment=4096):
    """An ordinary numpy array whose data starts at a multiple of `alignment`."""
    shape = _shape(shape)
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + alignment, np.uint8)
    start = (-raw.ctypes.data) % alignment
    flat = raw[start:start + nbytes].view(dtype)
    if order == "F":
        return flat.reshape(shape[::-1]).T
    return flat.reshape(shape)


def aligned_zeros(shape, dtype, order="C", alignment=4096):
    a = aligned_empty(shape, dtype, order, alignment)
    a.fill(0)
    return a


def aligned_empty_like(ary, alignment=4096):
    return aligned_empty(ary.shape, ary.dtype, alignment=alignment)


def aligned_zeros_like(ary, alignment=4096):
    return aligned_zeros(ary.shape, ary.dtype, alignment=alignment)


class RegisteredHostMemory:
    """The .base of register_host_memory's array: unregister() unlocks the pages."""

    def __init__(self, ary, registration):
        self._ary = ary
        self._reg = registration
        self.__array_interface__ = ary.__array_interface__
        self.base = ary

    def unregister(self):
        self._reg.unregister()

    def get_device_pointer(self):
        """The address kernels use for the registered memory (mapped: no copy)."""
        return self._reg.device_ptr


@_edge
def register_host_memory(ary, flags=0):
    """Page-lock an existing C-contiguous numpy array; the returned array's .base
    is a RegisteredHostMemory (unregister() to unlock)."""
    reg = cukit.register(ary)
    return np.asarray(RegisteredHostMemory(ary, reg))


# ------------------------------------------------------------------ streams and events


class Stream(cukit.Stream):
    """A stream. flags=0 makes one that waits for the legacy default stream, as in
    PyCUDA; stream_flags.NON_BLOCKING one that does not."""

    __slots__ = ()

    def __new__(cls, flags=0):
        return cukit.Stream.__new__(cls, non_blocking=bool(flags & stream_flags.NON_BLOCKING))

    @_edge
    def is_done(self):
        return self.query()

    @_edge
    def wait_for_event(self, event):
        self.wait(event)


class Event(cukit.Event):
    """A marker in a stream, for timing and ordering."""

    __slots__ = ()

    def __new__(cls, flags=0):
        return cukit.Event.__new__(cls, timing=not (flags & event_flags.DISABLE_TIMING),
                                   blocking=bool(flags & event_flags.BLOCKING_SYNC))

    @_edge
    def record(self, stream=None):
        cukit.Event.record(self, stream)
        return self

    @_edge
    def time_since(self, event):
        """Milliseconds from `event` to this one (both recorded)."""
        return event.elapsed_time(self)

    @_edge
    def time_till(self, event):
        """Milliseconds from this event to `event`."""
        return self.elapsed_time(event)


# ------------------------------------------------------------------ kernel arguments


class ArgumentHandler:
    """A host numpy array passed to a kernel through device memory made for the call."""

    def __init__(self, array):
        if not isinstance(array, np.ndarray):
            array = np.asarray(array)
        self.array = array
        self.dev_alloc = None

    def get_device_alloc(self):
        if self.dev_alloc is None:
            self.dev_alloc = mem_alloc(max(self.array.nbytes, 1))
        return self.dev_alloc

    def pre_call(self, stream):
        pass

    def post_call(self, stream):
        pass


class In(ArgumentHandler):
    """Copied to the device before the launch."""

    def pre_call(self, stream):
        if stream is None:
            memcpy_htod(self.get_device_alloc(), self.array)
        else:
            memcpy_htod_async(self.get_device_alloc(), self.array, stream)


class Out(ArgumentHandler):
    """Copied back to the host array after the launch."""

    def post_call(self, stream):
        if stream is None:
            memcpy_dtoh(self.array, self.get_device_alloc())
        else:
            memcpy_dtoh_async(self.array, self.get_device_alloc(), stream)


class InOut(In, Out):
    """Copied in before the launch and back after it."""


# Arguments cukit's launch takes as they are: numpy scalars convert to the
# parameter's declared type (PyCUDA packs them by dtype; with the kernel's own
# signature a mismatch is an error rather than wrong bytes), device memory is
# a pointer.
_DIRECT = frozenset([
    DeviceAllocation, cukit.Buffer, cukit.Array, DevicePointer, np.void,
    np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
    np.uint8, np.uint16, np.uint32, np.uint64, np.bool_, np.longlong, np.ulonglong,
])

_UNKNOWN_KW = "%s() got unexpected keyword arguments %s; a call takes block=, grid=, stream=, shared=, texrefs= and time_kernel="


def _is_managed(ary):
    """True for numpy arrays in cukit's managed (or mapped pinned) memory."""
    base = ary
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, cukit.HostMemory) and base.kind == "managed"


class Function(_cukit._PycudaFunction):
    """A kernel of a Module, called PyCUDA's way:
    f(*args, block=(x, y, z), grid=(1, 1), stream=None, shared=0, time_kernel=False),
    or prepared once with prepare(arg_types) and called with prepared_call.

    The call itself is C (_PycudaFunction): device memory, numpy scalars (converted
    to each parameter's type by cukit's launch) and GPUArrays and cukit.Arrays of the
    dtype their parameter declares go to cukit's launch with grid and block as they
    are. Anything else (In/Out, arrays of another dtype, host arrays, Python numbers,
    texrefs=, time_kernel=, a texture reference changed since the last launch) goes
    to _call_v, which converts the arguments once and launches once.

    A module whose source declares texture or surface references gives Functions
    that write the references changed since the last launch before each launch
    (_pending, the module's list of them, shared by its Functions)."""

    __slots__ = ("_module", "_formats", "_prepared",
                 "_shared", "_block", "_cache_config", "_warned",
                 "_old_args", "_old_buf", "_old_block", "__weakref__")

    def __init__(self, kernel, module=None):
        self._k = kernel.strict()  # plain Python numbers are refused, as in PyCUDA
        self._module = module
        self._pending = module._pending if module is not None else None
        self._pointees = _pointees_of(kernel)
        self._formats = None
        self._lp_key = None
        self._lp = None
        self._prepared = {}
        self._shared = 0
        self._block = None
        self._cache_config = func_cache.PREFER_NONE
        self._warned = None
        self._old_args = None  # param_set's arguments, for launch_grid
        self._old_buf = None   # param_setv/seti/setf's bytes, for launch_grid
        self._old_block = None

    # ---- plain calls

    @_edge
    def _call_v(self, *args, block=None, grid=(1, 1), stream=None, shared=0,
                texrefs=None, time_kernel=False, **extra):
        if self._pending:
            _texref.flush(self._module)
        return self._call_slow(args, block, grid, stream, shared, texrefs, time_kernel, extra)

    def _describe(self, i):
        params = self._k.signature.params
        if i < len(params):
            ctype, name = params[i]
            return "%s() argument %d%s (%s)" % (self._k.name, i + 1,
                                                " '%s'" % name if name else "", ctype)
        return "%s() argument %d" % (self._k.name, i + 1)

    def _is_pointer_param(self, i):
        params = self._k.signature.params
        return i < len(params) and _param_kind(params[i][0]) == "pointer"

    def _pointee(self, i):
        """The numpy dtype parameter i points to, or None (not a pointer, or a type
        numpy has no name for: void*, a struct)."""
        return self._pointees[i] if i < len(self._pointees) else None

    def _address_of_array(self, i, a, dtype, address):
        """The address of a device array for parameter i whose dtype differs from the
        one declared (PyCUDA passes the address whatever the dtype): silently when only
        the integer signedness differs, else with a PycudaCompatWarning once per
        argument of this kernel."""
        want = self._pointee(i)
        dtype = np.dtype(dtype)
        if want is not None and want.fields is None:
            how = _engine.mismatch(dtype, want)
            if how is not None and how != "sign":
                if self._warned is None:
                    self._warned = set()
                _engine.warn_once(self._warned, i, _engine.compat_message(
                    self._describe(i), "the array", dtype, want))
        return DevicePointer(address, a)

    def _convert(self, i, a, handlers):
        t = type(a)
        if t is cukit.Array and self._is_pointer_param(i):
            want = self._pointee(i)
            if want is not None and a.dtype != want and a.is_contiguous:
                return self._address_of_array(i, a, a.dtype, a.ptr)
            return a
        if t in _DIRECT:
            return a
        if t is int or t is float or t is bool or t is complex:
            raise TypeError(
                "%s: got a plain Python %s (%r). PyCUDA passes numpy scalars, which carry "
                "their C type: pass numpy.int32(%r), numpy.float32(...) or the type that "
                "matches the parameter (or use prepare() with the argument types)"
                % (self._describe(i), t.__name__, a, a))
        if isinstance(a, np.generic):
            return a
        if isinstance(a, ArgumentHandler):
            handlers.append(a)
            return a.get_device_alloc()
        if isinstance(a, np.ndarray):
            if _is_managed(a):
                return a
            if self._is_pointer_param(i):
                raise TypeError(
                    "%s: got a numpy array in host memory for a pointer parameter; wrap it "
                    "as pycuda.driver.In(a), Out(a) or InOut(a) to copy it for the call, or "
                    "copy it to the device first (pycuda.driver.to_device(a), "
                    "gpuarray.to_gpu(a))" % self._describe(i))
            return a.tobytes()  # passed by value, as PyCUDA does
        if isinstance(a, (cukit.Buffer, cukit.Array)):
            return a
        # Addresses go as DevicePointer: an int the strict kernel takes for a pointer
        # (a plain int is refused there, as PyCUDA refuses it).
        gpudata = getattr(a, "gpudata", None)
        if gpudata is not None:
            dtype = getattr(a, "dtype", None)
            if dtype is not None and self._is_pointer_param(i):
                return self._address_of_array(i, a, dtype, int(gpudata))
            return DevicePointer(int(gpudata), a)
        cai = getattr(a, "__cuda_array_interface__", None)
        if cai is not None:
            if self._is_pointer_param(i):
                return self._address_of_array(i, a, cai["typestr"], int(cai["data"][0]))
            return DevicePointer(int(cai["data"][0]), a)
        if isinstance(a, PointerHolderBase):
            return DevicePointer(int(a.get_pointer()), a)
        raise TypeError("%s: invalid type %s (PyCUDA takes numpy scalars, device memory, "
                        "GPUArrays and In/Out/InOut)" % (self._describe(i), t.__name__))

    def _call_slow(self, args, block, grid, stream, shared, texrefs, time_kernel, extra):
        if extra:
            raise ValueError(_UNKNOWN_KW % (self._k.name, ", ".join(sorted(extra))))
        if texrefs:
            _texref.flush_given(texrefs)
        if block is None:
            raise ValueError("%s(): block= is required, e.g. block=(256, 1, 1)" % self._k.name)
        if time_kernel and stream is not None:
            raise ValueError("%s(): time_kernel=True cannot be used with a stream"
                             % self._k.name)
        handlers = []
        converted = [self._convert(i, a, handlers) for i, a in enumerate(args)]
        for h in handlers:
            h.pre_call(stream)
        start = end = None
        if time_kernel:
            start, end = Event(), Event()
            start.record()
        self._k(*converted, grid=grid, block=block, shared_mem=shared, stream=stream)
        if time_kernel:
            end.record()
        for h in handlers:
            h.post_call(stream)
        if time_kernel:
            end.synchronize()
            return end.time_since(start) * 1e-3
        return None

    # ---- prepared calls

    @_edge
    def prepare(self, arg_types, block=None, shared=None, texrefs=()):
        """Declare the argument types (a struct format string such as "PiP", or numpy
        types/dtypes); they are checked against the kernel's parameters. Returns self."""
        if texrefs:
            _texref.flush_given(texrefs)
        self._formats = _check_formats(self, _formats_of(arg_types))
        self._block = block
        if shared is not None:
            self._shared = shared
        return self

    @property
    def arg_format(self):
        return "".join(self._formats or ())

    def _launcher(self, grid, block, shared, stream):
        key = (tuple(grid) if not isinstance(grid, int) else grid,
               tuple(block) if not isinstance(block, int) else block, shared, stream)
        p = self._prepared.get(key)
        if p is None:
            if self._formats is None:
                raise LogicError("%s: call prepare(arg_types) before prepared_call"
                                 % self._k.name)
            p = self._k.prepare(grid=grid, block=block, shared_mem=shared, stream=stream)
            if len(self._prepared) > 64:
                self._prepared.clear()
            self._prepared[key] = p
        return p

    # prepared_call(grid, block, *args, shared_size=0) is the C type's: it calls the last
    # prepared launch itself, or this once
    def _prepared_call_py(self, grid, block, *args, shared_size=0):
        if self._pending:
            _texref.flush(self._module)
        lk = self._lp_key
        if lk is not None and grid is lk[0] and block is lk[1] and shared_size == lk[2]:
            return self._launch_prepared(self._lp, *args)  # C: the call, or _prepared_slow
        return self._prepared_first(grid, block, args, shared_size)

    @_edge
    def _prepared_first(self, grid, block, args, shared_size):
        if block is None:
            block = self._block
        p = self._launcher(grid, block, shared_size or self._shared, None)
        if type(grid) is tuple and type(block) is tuple:  # immutable: safe to know by identity
            self._lp_key = (grid, block, shared_size)
            self._lp = p
        return self._launch_prepared(p, *args)

    @_edge
    def _prepared_slow(self, p, args):
        """p(*args) for a prepared call with an argument that _launch_prepared (C) does not
        pass as it is: GPUArrays and arrays of another dtype than declared, objects with
        gpudata or __cuda_array_interface__, pointer holders. Converts once, calls once."""
        fixed = []
        changed = False
        for i, a in enumerate(args):
            if type(a) is cukit.Array:
                want = self._pointee(i) if self._is_pointer_param(i) else None
                if want is not None and a.dtype != want and a.is_contiguous:
                    a, changed = int(self._address_of_array(i, a, a.dtype, a.ptr)), True
            elif type(a) not in _DIRECT and not isinstance(a, (int, float, np.generic, bytes)):
                gpudata = getattr(a, "gpudata", None)
                cai = getattr(a, "__cuda_array_interface__", None)
                if gpudata is not None:
                    dtype = getattr(a, "dtype", None)
                    if dtype is not None and self._is_pointer_param(i):
                        self._address_of_array(i, a, dtype, 0)  # warns when it should
                    a, changed = int(gpudata), True
                elif cai is not None:
                    if self._is_pointer_param(i):
                        self._address_of_array(i, a, cai["typestr"], 0)
                    a, changed = int(cai["data"][0]), True
                elif isinstance(a, PointerHolderBase):
                    a, changed = int(a.get_pointer()), True
            fixed.append(a)
        return p(*(fixed if changed else args))  # unchanged: cukit's own error explains

    @_edge
    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        if self._pending:
            _texref.flush(self._module)
        if block is None:
            block = self._block
        p = self._launcher(grid, block, shared_size or self._shared, stream)
        return self._launch_prepared(p, *args)

    @_edge
    def prepared_timed_call(self, grid, block, *args, shared_size=0):
        """Launch, and return a function that gives the kernel's time in seconds."""
        start, end = Event(), Event()
        start.record()
        self.prepared_call(grid, block, *args, shared_size=shared_size)
        end.record()

        def get_call_time():
            end.synchronize()
            return end.time_since(start) * 1e-3

        return get_call_time

    # ---- PyCUDA's old launch interface: set the block shape and the parameters, then
    # launch_grid. param_set takes the arguments as a call does; param_seti/setf/setv
    # write the parameter bytes at offsets, read back by the kernel's parameter layout.

    def set_block_shape(self, x, y=1, z=1):
        self._old_block = (int(x), int(y), int(z))

    def set_shared_size(self, nbytes):
        """Dynamic shared memory per block for launch_grid and prepared calls."""
        self._shared = int(nbytes)

    def param_set(self, *args):
        """The arguments of the next launch/launch_grid (as a call takes them)."""
        self._old_args = args
        self._old_buf = None

    def param_set_size(self, nbytes):
        buf = self._old_buf if self._old_buf is not None else bytearray()
        nbytes = int(nbytes)
        self._old_buf = buf[:nbytes] + bytearray(max(0, nbytes - len(buf)))
        self._old_args = None

    def param_setv(self, offset, buf):
        data = bytes(memoryview(buf).cast("B"))
        offset = int(offset)
        if self._old_buf is None:
            self._old_buf = bytearray()
        if len(self._old_buf) < offset + len(data):
            self._old_buf += bytearray(offset + len(data) - len(self._old_buf))
        self._old_buf[offset:offset + len(data)] = data
        self._old_args = None

    def param_seti(self, offset, value):
        self.param_setv(offset, np.array([int(value) & 0xFFFFFFFF], np.uint32))

    def param_setf(self, offset, value):
        self.param_setv(offset, np.array([value], np.float32))

    def _old_arguments(self):
        """The arguments param_set* gave, as call arguments."""
        if self._old_args is not None:
            return self._old_args
        buf = self._old_buf or bytearray()
        sig = self._k.signature
        args = []
        for (ctype, name), (offset, size) in zip(sig.params, sig.layout):
            if offset + size > len(buf):
                raise LogicError(
                    "%s: the parameters set hold %d bytes, but parameter %s (%s) takes "
                    "bytes %d to %d; set it with param_seti/param_setf/param_setv (or use "
                    "param_set(*args))" % (self._k.name, len(buf), name, ctype, offset,
                                           offset + size))
            chunk = bytes(buf[offset:offset + size])
            kind = _param_kind(ctype)
            if kind == "pointer":
                args.append(DevicePointer(int.from_bytes(chunk, "little")))
            elif kind == "float" and size in (2, 4, 8):
                args.append(np.frombuffer(chunk, "<f%d" % size)[0])
            elif kind == "bool":
                args.append(np.bool_(chunk[0]))
            elif kind == "int" and size in (1, 2, 4, 8):
                unsigned = "unsigned" in ctype or ctype.strip().startswith(("uint", "size_t"))
                args.append(np.frombuffer(chunk, "<%s%d" % ("u" if unsigned else "i", size))[0])
            else:
                args.append(np.void(chunk))
        return args

    def _old_launch(self, grid, stream):
        if self._old_block is None:
            raise LogicError("%s: call set_block_shape(x, y, z) before launch_grid (or call "
                             "the function with block=)" % self._k.name)
        self(*self._old_arguments(), block=self._old_block, grid=grid, stream=stream,
             shared=self._shared)

    @_edge
    def launch(self):
        """One block, of set_block_shape's shape, with param_set*'s arguments."""
        self._old_launch((1, 1), None)

    @_edge
    def launch_grid(self, width, height=1):
        self._old_launch((int(width), int(height)), None)

    @_edge
    def launch_grid_async(self, width, height, stream):
        self._old_launch((int(width), int(height)), stream)

    # ---- attributes

    @_edge
    def get_attribute(self, attr):
        key = FUNCTION_ATTRIBUTE_KEYS.get(function_attribute(attr))
        if key is None:
            raise LogicError("function attribute %s is not provided" % function_attribute(attr).name)
        return self._k.attributes[key]

    @_edge
    def set_attribute(self, attr, value):
        """Set a function attribute (function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
        PREFERRED_SHARED_MEMORY_CARVEOUT, ...) with cuFuncSetAttribute."""
        self._k.set_attribute(int(function_attribute(attr)), int(value))

    @_edge
    def set_cache_config(self, config):
        self._cache_config = config  # a preference only; cukit leaves the driver's default

    @_edge
    def set_shared_config(self, config):
        pass

    def param_set_texref(self, texref):
        """Write texref's binding now (launches write changed references themselves)."""
        _texref.flush_given([texref])

    @property
    def num_regs(self):
        return self._k.attributes["num_regs"]

    @property
    def max_threads_per_block(self):
        return self._k.attributes["max_threads_per_block"]

    @property
    def shared_size_bytes(self):
        return self._k.attributes["shared_size_bytes"]

    @property
    def local_size_bytes(self):
        return self._k.attributes["local_size_bytes"]

    @property
    def const_size_bytes(self):
        return self._k.attributes["const_size_bytes"]

    @property
    def kernel(self):
        """The cukit.Kernel this function calls."""
        return self._k

    def __repr__(self):
        return "<cukit.pycuda Function %s>" % self._k.signature


# struct format characters by what they carry: (kind, size). 'P' is a pointer.
def _pointees_of(kernel):
    """Per parameter of the kernel, the numpy dtype a pointer parameter points to, or
    None (not a pointer, or a type numpy has no name for: void*, a struct)."""
    found = []
    for ctype, _ in kernel.signature.params:
        dtype = None
        if _param_kind(ctype) == "pointer" and ctype.count("*") == 1:
            base = " ".join(w for w in ctype.replace("*", " ").split()
                            if w not in ("const", "volatile", "__restrict__"))
            try:
                dtype = _ctype_to_dtype(base)
            except ValueError:
                pass
        found.append(dtype)
    return tuple(found)


_FORMAT_KIND = {
    "b": ("int", 1), "B": ("int", 1), "h": ("int", 2), "H": ("int", 2),
    "i": ("int", 4), "I": ("int", 4), "l": ("int", 8), "L": ("int", 8),
    "q": ("int", 8), "Q": ("int", 8), "n": ("int", 8), "N": ("int", 8),
    "e": ("float", 2), "f": ("float", 4), "d": ("float", 8), "?": ("bool", 1),
    "P": ("pointer", 8),
}


def _formats_of(arg_types):
    """One struct format item per parameter, from a format string or numpy types."""
    if isinstance(arg_types, str):
        items = []
        count = ""
        for ch in arg_types:
            if ch.isdigit():
                count += ch
            elif ch in " @=<>!":
                continue
            elif ch == "s":
                items.append("%ss" % (count or "1"))
                count = ""
            elif ch in _FORMAT_KIND:
                items.extend([ch] * int(count or 1))
                count = ""
            else:
                raise ValueError("prepare(): %r is not a struct format character cukit knows"
                                 % ch)
        return items
    items = []
    for t in arg_types:
        if isinstance(t, str) and len(t) == 1 and t in _FORMAT_KIND:
            items.append(t)
            continue
        dt = np.dtype(t)
        if dt.kind == "V" or dt.kind == "c":
            items.append("%ds" % dt.itemsize)
        elif dt.char == "p" or dt.char == "P":
            items.append("P" if dt.char == "P" else "q")
        else:
            items.append(dt.char)
    return items


_INT_TYPES = frozenset([
    "char", "signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int",
    "unsigned", "signed", "long", "unsigned long", "long long", "unsigned long long",
    "short int", "long int", "long long int", "unsigned short int", "unsigned long int",
    "unsigned long long int", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t", "int8_t",
    "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
    "CUdeviceptr",
])
_FLOAT_TYPES = frozenset(["float", "double", "half", "__half", "__nv_bfloat16",
                          "nv_bfloat16"])


def _param_kind(ctype):
    """'pointer', 'float', 'bool', 'int' or 'struct' for a declared parameter type."""
    if "*" in ctype or "[" in ctype:
        return "pointer"
    base = " ".join(w for w in ctype.split() if w not in ("const", "volatile", "__restrict__"))
    if base in _FLOAT_TYPES:
        return "float"
    if base == "bool":
        return "bool"
    if base in _INT_TYPES:
        return "int"
    return "struct"


def _check_formats(func, items):
    """The prepare() types against the kernel's parameters: same count, same kind.
    Raises TypeError naming the parameter. Returns items."""
    k = func._k
    decls = [("%s %s" % (t, n)).strip() for t, n in k.signature.params]
    if len(decls) != len(items):
        raise TypeError("prepare(): %d argument types for %s, which takes %d"
                        % (len(items), k.signature, len(decls)))
    for i, (item, decl) in enumerate(zip(items, decls)):
        kind = _param_kind(k.signature.params[i][0])
        if item.endswith("s"):
            have = "struct"
        else:
            have = _FORMAT_KIND[item][0]
        ok = (have == kind or (kind == "pointer" and have == "int" and _FORMAT_KIND[item][1] == 8)
              or (kind == "struct" and have == "struct")
              or (kind == "bool" and have == "int")
              or (kind == "int" and have == "bool"))
        if kind == "struct" and have != "struct":
            ok = True  # a typedef cukit reads as a struct: the launch checks the size
        if not ok:
            raise TypeError(
                "prepare(): argument %d of %s is %r (%s), but the kernel declares %s; use "
                "the matching type (%s)"
                % (i + 1, k.name, item, have, decl,
                   {"pointer": "'P' or numpy.intp", "float": "'f' for float, 'd' for double",
                    "int": "'i' for int, 'I' for unsigned, 'q' for long long",
                    "bool": "'?'", "struct": "the struct's numpy dtype"}[kind]))
    return items


# ------------------------------------------------------------------ modules


class Module:
    """A loaded module: get_function, get_global, get_texref, get_surfref."""

    _refs = None     # (kind, name) -> TextureReference / SurfaceReference, once asked for

    def __init__(self, cukit_module):
        self._m = cukit_module
        self._functions = {}
        self._pending = []  # references changed since the last launch; shared with Functions

    def get_function(self, name):
        f = self._functions.get(name)
        if f is None:
            try:
                k = self._m.get_kernel(name)
            except (AttributeError, KeyError, ValueError) as e:
                raise LogicError("cuModuleGetFunction failed: %s" % e) from None
            f = self._functions[name] = Function(k, self)
        return f

    @_edge
    def get_global(self, name):
        """(device address, size in bytes) of a __device__ or __constant__ variable."""
        try:
            arr = self._m.get_global(name)
        except AttributeError as e:
            raise LogicError("cuModuleGetGlobal failed: %s" % e) from None
        return DevicePointer(arr.ptr, arr), arr.nbytes

    def get_texref(self, name):
        """The TextureReference of `texture<T, dim, mode> name;` in the module's source."""
        return _texref.get_reference(self, name, _texref.TextureReference)

    def get_surfref(self, name):
        """The SurfaceReference of `surface<void, dim> name;` in the module's source."""
        return _texref.get_reference(self, name, _texref.SurfaceReference)

    @property
    def module(self):
        """The cukit.Module."""
        return self._m


@_edge
def module_from_buffer(buffer, options=None, message_handler=None):
    """Load a cubin, fatbin or PTX given as bytes. Each kernel's parameters come from
    its PTX .entry list, its mangled C++ name, or the sizes the driver gives, so
    calls and prepare()/prepared_call work as in PyCUDA. JIT `options` are accepted
    and have no effect (the driver's defaults apply)."""
    try:
        m = cukit.Module.load(bytes(buffer))
    except ValueError as e:
        raise LogicError("cuModuleLoadData failed: %s" % e) from None
    return Module(m)


@_edge
def module_from_file(filename):
    """Load a .cubin, .fatbin or .ptx file (see module_from_buffer)."""
    with open(os.fspath(filename), "rb") as f:  # FileNotFoundError names the file
        data = f.read()
    return module_from_buffer(data)


# ------------------------------------------------------------------ CUDA arrays (2-D/3-D copies)


class Memcpy2D:
    """A 2-D copy between host and device memory with pitches (cuMemcpy2D's fields)."""

    def __init__(self):
        self.src_x_in_bytes = self.src_y = 0
        self.dst_x_in_bytes = self.dst_y = 0
        self.src_pitch = self.dst_pitch = 0
        self.width_in_bytes = self.height = 0
        self._src = self._dst = None

    def set_src_host(self, ary):
        self._src = ("host", ary)

    def set_src_device(self, ptr):
        self._src = ("device", ptr)

    def set_dst_host(self, ary):
        self._dst = ("host", ary)

    def set_dst_device(self, ptr):
        self._dst = ("device", ptr)

    def set_src_array(self, ary):
        self._src = ("array", _check_array(ary))

    def set_dst_array(self, ary):
        self._dst = ("array", _check_array(ary))

    def _view(self, side, x, y, pitch, owner_kind):
        kind, obj = side
        h, w = self.height, self.width_in_bytes
        if kind == "host":
            # the array's own bytes (a view, never a copy: a destination is written)
            flat = np.frombuffer(memoryview(_host_bytes(obj, False)).cast("B"), np.uint8)
            if not flat.flags.writeable and owner_kind == "dst":
                raise ValueError("Memcpy2D: the host destination is read-only")
            return np.lib.stride_tricks.as_strided(flat[y * pitch + x:], (h, w), (pitch, 1))
        base = _address(obj) + y * pitch + x
        cai = {"data": (base, False), "shape": (h, w), "typestr": "|u1",
               "strides": (pitch, 1), "version": 3}
        return cukit.asarray(_Holder(cai, obj))

    @_edge
    def __call__(self, stream=None, aligned=None):
        """Copy now (`copy()` or `copy(aligned)`: aligned=False tolerates device
        misalignment, which changes nothing here), or queued on `stream`."""
        if isinstance(stream, (bool, np.bool_)):
            stream = None  # PyCUDA's __call__(aligned): a synchronous copy either way
        if self._src is None or self._dst is None:
            raise LogicError("Memcpy2D: set a source and a destination first")
        if self._src[0] == "array" or self._dst[0] == "array":
            return _texref.copy_with_arrays(self, 1, stream)
        src = self._view(self._src, self.src_x_in_bytes, self.src_y,
                         self.src_pitch or self.width_in_bytes, "src")
        dst = self._view(self._dst, self.dst_x_in_bytes, self.dst_y,
                         self.dst_pitch or self.width_in_bytes, "dst")
        if isinstance(src, np.ndarray) and isinstance(dst, np.ndarray):
            dst[...] = src
        elif isinstance(src, np.ndarray):
            dst.set(np.ascontiguousarray(src), stream=stream) if stream else dst.set(src)
        elif isinstance(dst, np.ndarray):
            dst[...] = src.get()
        else:
            cukit.copyto(dst, src, stream=stream)


def _check_array(ary):
    if not isinstance(ary, Array):
        raise TypeError("expected a pycuda driver.Array, got %s" % type(ary).__name__)
    return ary


class Memcpy3D(Memcpy2D):
    """Memcpy2D with depth slices; src_height / dst_height rows apart in memory."""

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.src_height = self.dst_height = 0
        self.src_z = self.dst_z = 0

    @_edge
    def __call__(self, stream=None, aligned=None):
        if isinstance(stream, (bool, np.bool_)):
            stream = None  # PyCUDA's __call__(aligned): a synchronous copy either way
        if self._src is None or self._dst is None:
            raise LogicError("Memcpy3D: set a source and a destination first")
        if self.depth > 1 or self._src[0] == "array" or self._dst[0] == "array":
            return _texref.copy_with_arrays(self, self.depth, stream)
        super().__call__(stream)


def _cuda_array(ary, who):
    """The cukit.CudaArray of a driver.Array (or a cukit.CudaArray itself)."""
    ca = ary if isinstance(ary, cukit.CudaArray) else getattr(ary, "_a", None)
    if not isinstance(ca, cukit.CudaArray):
        raise TypeError("%s: expected a driver.Array, got %s" % (who, type(ary).__name__))
    return ca


def _array_host_shape(ca):
    return ca.shape + ((ca.channels,) if ca.channels > 1 else ())


def _typed_view(ptr, ca):
    """A cukit.Array at device address ptr shaped and typed as CUDA array ca's elements."""
    count = ca.nbytes // ca.dtype.itemsize
    return cukit.asarray(_TypedCAI(_address(ptr), count, ca.dtype.str, ptr)).reshape(
        _array_host_shape(ca))


def _check_array_range(ca, index, nbytes, who):
    if index < 0 or index + nbytes > ca.nbytes:
        raise ValueError("%s: %d bytes at byte %d do not fit in the array's %d bytes"
                         % (who, nbytes, index, ca.nbytes))


@_edge
def memcpy_htoa(ary, index, src):
    """Copy host buffer src into CUDA array ary, starting at byte `index` of its
    elements in row order (a part of the array is read, patched and written back)."""
    ca = _cuda_array(ary, "memcpy_htoa")
    src = np.frombuffer(memoryview(_host_bytes(src, False)).cast("B"), np.uint8)
    _check_array_range(ca, int(index), src.size, "memcpy_htoa")
    if index == 0 and src.size == ca.nbytes:
        ca.set(src.view(ca.dtype).reshape(_array_host_shape(ca)))
        return
    whole = ca.get()
    whole.reshape(-1).view(np.uint8)[index:index + src.size] = src
    ca.set(whole)


@_edge
def memcpy_atoh(dest, ary, index):
    """Fill host buffer dest (all of it) from CUDA array ary, starting at byte index."""
    ca = _cuda_array(ary, "memcpy_atoh")
    out = np.frombuffer(memoryview(_host_bytes(dest, True)).cast("B"), np.uint8)
    _check_array_range(ca, int(index), out.size, "memcpy_atoh")
    out[...] = ca.get().reshape(-1).view(np.uint8)[index:index + out.size]


@_edge
def memcpy_dtoa(ary, index, src, len):
    """Copy len bytes from device address src into CUDA array ary at byte index."""
    ca = _cuda_array(ary, "memcpy_dtoa")
    _check_array_range(ca, int(index), int(len), "memcpy_dtoa")
    if index == 0 and len == ca.nbytes:
        ca.set(_typed_view(src, ca))
        return
    staged = np.empty(int(len), np.uint8)
    memcpy_dtoh(staged, _address(src))
    memcpy_htoa(ary, index, staged)


@_edge
def memcpy_atod(dest, ary, index, len):
    """Copy len bytes of CUDA array ary, from byte index, to device address dest."""
    ca = _cuda_array(ary, "memcpy_atod")
    _check_array_range(ca, int(index), int(len), "memcpy_atod")
    if index == 0 and len == ca.nbytes:
        ca.get(out=_typed_view(dest, ca))
        return
    staged = np.empty(int(len), np.uint8)
    memcpy_atoh(staged, ary, index)
    memcpy_htod(_address(dest), staged)
