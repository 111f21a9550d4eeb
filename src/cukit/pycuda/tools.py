"""pycuda.tools on cukit: memory pools, context helpers for tests, dtype <-> C
type names, and small utilities."""
from __future__ import annotations

import functools
import math
import os

from . import driver as cuda

# ------------------------------------------------------------------ contexts


def make_default_context(ctx_maker=None):
    """A context on device $CUDA_DEVICE, else on the first device that takes one;
    pushed on this thread's stack."""
    if ctx_maker is None:
        def ctx_maker(dev):
            return dev.make_context()

    ndevices = cuda.Device.count()
    if ndevices == 0:
        raise cuda.RuntimeError("make_default_context(): no CUDA device found")
    devn = os.environ.get("CUDA_DEVICE")
    if devn is not None:
        try:
            devn = int(devn)
        except ValueError:
            raise TypeError("CUDA_DEVICE must be an integer, got %r" % devn) from None
        return ctx_maker(cuda.Device(devn))
    errors = []
    for i in range(ndevices):
        try:
            return ctx_maker(cuda.Device(i))
        except cuda.Error as e:
            errors.append(e)
    raise cuda.RuntimeError("make_default_context(): no device could be used: %s" % errors)


_memoized = []  # every context_dependent_memoize cache, for clear_context_caches


def context_dependent_memoize(func):
    """Cache func's results per current context (and arguments)."""
    cache = {}
    _memoized.append(cache)

    @functools.wraps(func)
    def wrapper(*args):
        ctx = cuda.Context.get_current()
        key = (id(ctx), args)
        try:
            return cache[key]
        except KeyError:
            result = cache[key] = func(*args)
            return result

    wrapper.clear_cache = cache.clear
    return wrapper


def clear_context_caches():
    for cache in _memoized:
        cache.clear()


def _check_context(ctx):
    dev = ctx.get_device()
    assert isinstance(dev.name(), str)
    assert isinstance(dev.compute_capability(), tuple)
    assert isinstance(dev.get_attributes(), dict)


def _release_context(ctx):
    ctx.pop()
    clear_context_caches()
    import gc
    gc.collect()


def mark_cuda_test(inner_f):
    """Run a test inside a fresh default context, popped afterwards."""

    @functools.wraps(inner_f)
    def f(*args, **kwargs):
        cuda.init()
        ctx = make_default_context()
        try:
            _check_context(ctx)
            return inner_f(*args, **kwargs)
        finally:
            _release_context(ctx)

    try:
        import pytest
        return pytest.mark.cuda(f)
    except ImportError:  # pragma: no cover
        return f


def init_cuda_context_fixture():
    """For a pytest fixture: `yield from init_cuda_context_fixture()`."""
    cuda.init()
    ctx = make_default_context()
    _check_context(ctx)
    try:
        yield
    finally:
        _release_context(ctx)


# ------------------------------------------------------------------ small utilities


def bitlog2(n):
    """floor(log2(n)) for n >= 1 (0 for 0)."""
    n = int(n)
    return n.bit_length() - 1 if n > 0 else 0


def get_default_device(default=0):
    return cuda.Device(int(os.environ.get("CUDA_DEVICE", default)))


# ------------------------------------------------------------------ memory pools

_MANTISSA_BITS = 2


class PooledDeviceAllocation(cuda.PointerHolderBase):
    """Memory from a DeviceMemoryPool: it goes back to the pool when freed or dropped."""

    def __init__(self, pool, alloc, size):
        super().__init__()
        self._pool = pool
        self._alloc = alloc
        self.size = size

    def get_pointer(self):
        if self._alloc is None:
            raise cuda.LogicError("this pooled allocation was already freed")
        return int(self._alloc)

    def free(self):
        if self._alloc is None:
            raise cuda.LogicError("this pooled allocation was already freed")
        self._pool._give_back(self._alloc)
        self._alloc = None

    def __del__(self):
        alloc = getattr(self, "_alloc", None)
        if alloc is not None:
            self._pool._give_back(alloc)
            self._alloc = None


class DeviceMemoryPool:
    """Keeps freed device allocations, binned by size (4 bins per power of two), and
    hands them out again; an allocation that fails frees what is held and retries."""

    def __init__(self, allocator=None):
        self._allocator = allocator or cuda.mem_alloc
        self._bins = {}
        self._holding = True
        self.active_blocks = 0
        self.held_blocks = 0
        self.managed_bytes = 0
        self.active_bytes = 0

    @staticmethod
    def bin_number(size):
        size = int(size)
        if size < (1 << _MANTISSA_BITS):
            return size if size > 0 else 1  # a 0-byte request still gets a 1-byte block
        log = size.bit_length() - 1
        shift = log - _MANTISSA_BITS
        mantissa = (size >> shift) & ((1 << _MANTISSA_BITS) - 1)
        bin_nr = (log << _MANTISSA_BITS) | mantissa
        if size & ((1 << shift) - 1):
            bin_nr += 1  # round up to the next bin's size
        return bin_nr

    @staticmethod
    def alloc_size(bin_nr):
        bin_nr = int(bin_nr)
        if bin_nr < (1 << _MANTISSA_BITS):
            return bin_nr
        log = bin_nr >> _MANTISSA_BITS
        mantissa = bin_nr & ((1 << _MANTISSA_BITS) - 1)
        return ((1 << _MANTISSA_BITS) | mantissa) << (log - _MANTISSA_BITS)

    def allocate(self, size):
        bin_nr = self.bin_number(size)
        held = self._bins.get(bin_nr)
        if held:
            alloc = held.pop()
            self.held_blocks -= 1
        else:
            asize = max(self.alloc_size(bin_nr), 1)
            try:
                alloc = self._allocator(asize)
            except cuda.MemoryError:
                self.free_held()
                alloc = self._allocator(asize)
            self.managed_bytes += asize
        self.active_blocks += 1
        self.active_bytes += self.alloc_size(bin_nr)
        return PooledDeviceAllocation(self, alloc, size)

    __call__ = allocate

    def _give_back(self, alloc):
        self.active_blocks -= 1
        size = getattr(alloc, "size", 0)
        self.active_bytes -= size
        if self._holding:
            self._bins.setdefault(self.bin_number(size), []).append(alloc)
            self.held_blocks += 1
        else:
            self.managed_bytes -= size

    def free_held(self):
        for held in self._bins.values():
            for alloc in held:
                self.managed_bytes -= getattr(alloc, "size", 0)
                alloc.free()
        self._bins.clear()
        self.held_blocks = 0

    def stop_holding(self):
        self._holding = False
        self.free_held()


class PageLockedMemoryPool:
    """Page-locked host arrays (pagelocked_empty); cukit frees each with its last
    array, so nothing is held back."""

    def __init__(self, allocator=None):
        self.active_blocks = 0
        self.held_blocks = 0

    def allocate(self, shape, dtype, order="C"):
        return cuda.pagelocked_empty(shape, dtype, order)

    def free_held(self):
        pass

    def stop_holding(self):
        pass


class DebugMemoryPool(DeviceMemoryPool):
    """A DeviceMemoryPool that reports each allocation to `logfile` (stdout by default):
    its size, the device's free memory, the pool's blocks and a histogram of the live
    allocations by where they were made. interactive=True names each call stack by a
    mnemonic asked on the terminal (kept for this process) and waits for Enter."""

    def __init__(self, interactive=True, logfile=None):
        super().__init__()
        import sys
        import weakref
        self.last_free, _ = cuda.mem_get_info()
        self.interactive = interactive
        self.logfile = sys.stdout if logfile is None else logfile
        self.blocks = weakref.WeakKeyDictionary()
        self.stacktrace_mnemonics = {}

    def allocate(self, size):
        import traceback
        stack = tuple(frame.name for frame in traceback.extract_stack()[:-1])
        description = self.describe(stack, size)
        histogram = {}
        for bsize, descr in self.blocks.values():
            histogram[bsize, descr] = histogram.get((bsize, descr), 0) + 1
        prefix = os.path.commonprefix([descr for _, descr in histogram])
        free, total = cuda.mem_get_info()
        print("\n  Allocation of size %d occurring (mem: last_free:%d, free: %d, total:%d) "
              "(pool: held:%d, active:%d):\n      at: %s"
              % (size, self.last_free, free, total, self.held_blocks, self.active_blocks,
                 description), file=self.logfile)
        for (bsize, descr), count in sorted(histogram.items()):
            print("  %s (%d bytes): %dx" % (descr[len(prefix):], bsize, count),
                  file=self.logfile)
        if self.interactive:
            input("  [Enter]")
        result = super().allocate(size)
        self.blocks[result] = (size, description)
        self.last_free, _ = cuda.mem_get_info()
        return result

    __call__ = allocate

    def describe(self, stack, size):
        """The allocation's description: the call stack's function names joined by |,
        or (interactive) the mnemonic the user gave that stack and size."""
        if not self.interactive:
            return "|".join(stack)
        key = (stack, size)
        name = self.stacktrace_mnemonics.get(key)
        while not name:
            print(size, stack, file=self.logfile)
            name = input("Enter mnemonic or [Enter] for more info:")
            if not name:
                import traceback
                traceback.print_stack(file=self.logfile)
        self.stacktrace_mnemonics[key] = name
        return name


# ------------------------------------------------------------------ device data and occupancy


def _ceil_to(value, multiple=1):
    """value rounded up to a multiple of `multiple`."""
    return int(math.ceil(value / multiple)) * multiple


def _floor_to(value, multiple=1):
    """value rounded down to a multiple of `multiple`."""
    return int(math.floor(value / multiple)) * multiple


class DeviceData:
    """PyCUDA's summary of a device for sizing kernels by hand: max_threads, warp_size,
    warps_per_mp, thread_blocks_per_mp, registers, shared_memory, the shared memory
    granularities and register_allocation_unit, from the device's attributes."""

    def __init__(self, dev=None):
        if dev is None:
            dev = cuda.Context.get_device()
        attr = cuda.device_attribute
        cc = dev.compute_capability()
        self.max_threads = dev.get_attribute(attr.MAX_THREADS_PER_BLOCK)
        self.warp_size = dev.get_attribute(attr.WARP_SIZE)
        self.warps_per_mp = 64 if cc >= (3, 0) else 48 if cc >= (2, 0) else \
            32 if cc >= (1, 2) else 24
        self.thread_blocks_per_mp = 8
        self.registers = dev.get_attribute(attr.MAX_REGISTERS_PER_BLOCK)
        self.shared_memory = dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK)
        modern = cc >= (2, 0)
        self.smem_alloc_granularity = 128 if modern else 512
        self.smem_granularity = 32 if modern else 16
        self.register_allocation_unit = "warp" if modern else "block"

    def align(self, bytes, word_size=4):
        """bytes rounded up to the coalescing alignment of word_size fetches."""
        return _ceil_to(bytes, self.align_bytes(word_size))

    def align_dtype(self, elements, dtype_size):
        return _ceil_to(elements, self.align_words(dtype_size))

    def align_words(self, word_size):
        quot, rem = divmod(self.align_bytes(word_size), word_size)
        if rem:
            raise ValueError("%d-byte words do not divide the alignment" % word_size)
        return quot

    def align_bytes(self, word_size=4):
        """The alignment in bytes for fetches of word_size (4, 8 or 16) bytes."""
        try:
            return {4: 64, 8: 128, 16: 128}[word_size]
        except KeyError:
            raise ValueError("no alignment possible for fetches of size %d" % word_size) \
                from None

    def coalesce(self, thread_count):
        return _ceil_to(thread_count, 16)

    @staticmethod
    def make_valid_tex_channel_count(size):
        """The texture channel count (1, 2 or 4) that holds size channels."""
        for valid in (1, 2, 4):
            if size <= valid:
                return valid
        raise ValueError("could not enlarge argument to valid channel count")


class OccupancyRecord:
    """Blocks and warps per multiprocessor for a launch of `threads` threads per block
    using shared_mem bytes and `registers` registers per thread (PyCUDA's occupancy
    estimate): tb_per_mp, limited_by ('device', 'warps', 'regs' or 'smem'), warps_per_mp
    and occupancy (0 to 1). ValueError when the block cannot run at all."""

    def __init__(self, devdata, threads, shared_mem=0, registers=0):
        if threads > devdata.max_threads:
            raise ValueError("too many threads")
        alloc_warps = -(-threads // devdata.warp_size)
        alloc_smem = _ceil_to(shared_mem, devdata.smem_alloc_granularity)
        if devdata.register_allocation_unit == "warp":
            alloc_regs = alloc_warps * 32 * registers
        elif devdata.register_allocation_unit == "block":
            alloc_regs = _ceil_to(alloc_warps * 2, 4) * 16 * registers
        else:
            raise ValueError("Improper register allocation unit:"
                             + devdata.register_allocation_unit)
        if alloc_regs > devdata.registers:
            raise ValueError("too many registers")
        if alloc_smem > devdata.shared_memory:
            raise ValueError("too much smem")
        self.tb_per_mp_limits = [(devdata.thread_blocks_per_mp, "device"),
                                 (_floor_to(devdata.warps_per_mp / alloc_warps), "warps")]
        if registers > 0:
            self.tb_per_mp_limits.append((_floor_to(devdata.registers / alloc_regs), "regs"))
        if shared_mem > 0:
            self.tb_per_mp_limits.append((_floor_to(devdata.shared_memory / alloc_smem),
                                          "smem"))
        self.tb_per_mp, self.limited_by = min(self.tb_per_mp_limits)
        self.warps_per_mp = self.tb_per_mp * alloc_warps
        self.occupancy = self.warps_per_mp / devdata.warps_per_mp


# ------------------------------------------------------------------ dtypes and C types
# (_ctypes.py; PyCUDA's names here)

from ._ctypes import (  # noqa: E402,F401
    Argument,
    ScalarArg,
    TypeNameNotKnown,
    VectorArg,
    _ctype_to_dtype,
    dtype_to_ctype,
    get_arg_type,
    get_or_register_dtype,
    parse_c_arg,
    register_dtype,
)
