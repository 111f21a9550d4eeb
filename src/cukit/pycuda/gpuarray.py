"""pycuda.gpuarray on cukit: GPUArray, a PyCUDA-shaped face of cukit.Array.

Each GPUArray holds a cukit.Array (`.array`) over its memory; transfers, views,
fills and copies are cukit's. `gpudata` is the allocation (a DeviceAllocation,
or what the allocator returned), or an int address for views, as in PyCUDA.
Arithmetic goes to cukit's array engine through `_engine`.
"""
from __future__ import annotations

import builtins
import numbers

import numpy as np

import cukit

from . import _engine
from . import reduction as _reduction
from . import driver as drv
from cukit import _cukit

from ._ctypes import dtype_to_ctype, vec  # noqa: E402,F401  (vec: CUDA's vector types)


# ------------------------------------------------------------------ helpers


def _shape_tuple(shape):
    if np.ndim(shape) == 0:
        return (int(shape),)
    return tuple(int(s) for s in np.asarray(shape).ravel()) if isinstance(shape, np.ndarray) \
        else tuple(int(s) for s in shape)


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for s in reversed(shape):
        strides.append(step)
        step *= builtins.max(s, 1)
    return tuple(reversed(strides))


def _f_strides(shape, itemsize):
    strides, step = [], itemsize
    for s in shape:
        strides.append(step)
        step *= builtins.max(s, 1)
    return tuple(strides)


class _Holder:
    __slots__ = ("__cuda_array_interface__", "_owner")

    def __init__(self, ptr, shape, dtype, strides, owner):
        self.__cuda_array_interface__ = {"data": (int(ptr), False), "shape": shape,
                                         "typestr": dtype.str, "strides": strides,
                                         "version": 3}
        self._owner = owner


def _wrap_memory(gpudata, shape, dtype, strides, owner):
    """A cukit.Array over gpudata (a Buffer, an int address or a pointer holder)."""
    if isinstance(gpudata, cukit.Buffer):
        return cukit.frombuffer(gpudata, dtype, shape, strides)
    return cukit.asarray(_Holder(int(gpudata), shape, dtype, strides,
                                 gpudata if owner is None else owner))


# ------------------------------------------------------------------ GPUArray


class GPUArray(_cukit._PycudaArray):
    """An N-D array in device memory (PyCUDA's GPUArray over a cukit.Array).

    Its fields (_a, gpudata, base, allocator) and + - * are C (_PycudaArray): two
    GPUArrays of one shape, or one and a Python or numpy number, run cukit's operator
    on the Arrays there; anything else comes to _binary."""

    __slots__ = ("__dict__", "__weakref__")
    __array_priority__ = 100

    def __init__(self, shape, dtype, allocator=None, base=None, gpudata=None, strides=None,
                 order="C"):
        dtype = np.dtype(dtype)
        shape = _shape_tuple(shape)
        if strides is None:
            if order == "F":
                strides = _f_strides(shape, dtype.itemsize)
            elif order == "C":
                strides = None
            else:
                raise ValueError("order must be 'C' or 'F', got %r" % (order,))
        else:
            strides = tuple(int(s) for s in strides)
        size = 1
        for s in shape:
            size *= s
        self.allocator = allocator
        self.base = base
        if gpudata is None and size:
            gpudata = (allocator or drv.mem_alloc)(size * dtype.itemsize)
        self.gpudata = gpudata
        if gpudata is None:
            self._a = cukit.empty(shape, dtype)  # no elements: nothing to point at
        else:
            self._a = _wrap_memory(gpudata, shape, dtype, strides, base)

    @property
    def array(self):
        """The cukit.Array over this array's memory."""
        return self._a

    @property
    def shape(self):
        return self._a.shape

    @property
    def dtype(self):
        return self._a.dtype

    @property
    def strides(self):
        return self._a.strides

    @property
    def size(self):
        return self._a.size

    mem_size = size

    @property
    def nbytes(self):
        return self._a.nbytes

    # ---- properties

    @property
    def ndim(self):
        return self._a.ndim

    @property
    def itemsize(self):
        return self._a.itemsize

    @property
    def ptr(self):
        return 0 if self.gpudata is None else int(self.gpudata)

    @property
    def flags(self):
        return _Flags(self)

    @property
    def _grid(self):
        """The grid PyCUDA's own kernels launch over this array with (splay(size))."""
        return splay(self.size)[0]

    @property
    def _block(self):
        """The block that goes with _grid."""
        return splay(self.size)[1]

    @property
    def is_c_contiguous(self):
        return self._a.is_contiguous

    @property
    def is_f_contiguous(self):
        return self._a.flags["F_CONTIGUOUS"]

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "strides": self.strides, "typestr": self.dtype.str,
                "data": (self.ptr, False), "stream": None, "version": 3}

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self):
        return repr(self.get())

    def __str__(self):
        return str(self.get())

    def __bool__(self):
        if self.size == 1:
            return bool(self.get())
        raise ValueError("The truth value of an array with more than one element is "
                         "ambiguous. Use a.any() or a.all()")

    def __int__(self):
        if self.size == 1:
            return int(self.get())
        raise TypeError("only size-1 arrays can be converted to Python scalars")

    def __float__(self):
        if self.size == 1:
            return float(self.get())
        raise TypeError("only size-1 arrays can be converted to Python scalars")

    def __hash__(self):
        raise TypeError("GPUArrays are not hashable")

    # ---- transfers

    def set(self, ary, async_=False, stream=None, **kwargs):
        src = _device_source(ary)
        if src is not None:
            return self._set_from_device(src, stream)
        ary = np.asarray(ary)
        if ary.size != self.size:
            raise ValueError("set(): the host array has %d elements, this array %d"
                             % (ary.size, self.size))
        if ary.dtype != self.dtype:
            raise TypeError("set(): the host array is %s, this array %s; convert it with "
                            "ary.astype(numpy.%s)" % (ary.dtype, self.dtype, self.dtype))
        if self.size == 0:
            return
        if ary.shape != self.shape:
            ary = ary.reshape(self.shape)
        if stream is None:
            self.array.set(ary)
        else:
            self.array.set(np.ascontiguousarray(ary) if ary.flags.c_contiguous else ary,
                           stream=stream)

    def _set_from_device(self, src, stream):
        """Copy device to device from cukit.Array src (same size and dtype, as PyCUDA
        asks of a host source; a different shape is read in C order)."""
        if src.size != self.size:
            raise ValueError("set(): the source array has %d elements, this array %d"
                             % (src.size, self.size))
        if src.dtype != self.dtype:
            raise TypeError("set(): the source array is %s, this array %s; convert it with "
                            ".astype(numpy.%s)" % (src.dtype, self.dtype, self.dtype))
        if self.size == 0:
            return
        if src.shape != self.shape:
            if not src.is_contiguous:
                src = cukit.ascontiguousarray(src)
            src = src.reshape(self.shape)
        if stream is None:
            cukit.copyto(self._a, src)
        else:
            cukit.copyto(self._a, src, stream=stream)

    def set_async(self, ary, stream=None):
        return self.set(ary, async_=True, stream=stream)

    def get(self, ary=None, pagelocked=False, async_=False, stream=None, **kwargs):
        a = self._a
        if ary is None and stream is None and not pagelocked and a.is_contiguous and a.size:
            return a.get()
        if ary is None:
            if pagelocked:
                ary = drv.pagelocked_empty(self.shape, self.dtype,
                                           "F" if self.is_f_contiguous and not self.is_c_contiguous
                                           else "C")
            elif self.size == 0:
                return np.empty(self.shape, self.dtype)
            elif self.is_f_contiguous and not self.is_c_contiguous:
                return self.array.T.get(stream=stream).T
            else:
                return self.array.get(stream=stream) if stream is not None else self.array.get()
        else:
            if ary.size != self.size or ary.dtype != self.dtype:
                raise TypeError("get(): 'ary' has the wrong size or type")
        if self.size:
            if stream is not None:
                self.array.get(out=ary, stream=stream)
            else:
                self.array.get(out=ary)
        return ary

    def get_async(self, stream=None, ary=None):
        return self.get(ary=ary, async_=True, stream=stream)

    def copy(self):
        if self.size == 0:
            return GPUArray(self.shape, self.dtype, self.allocator)
        new = empty(self.shape, self.dtype, self.allocator,
                    order="F" if self.is_f_contiguous and not self.is_c_contiguous else "C")
        cukit.copyto(new.array, self.array)
        return new

    # ---- fills

    def fill(self, value, stream=None):
        if self.size:
            if stream is None:
                self.array.fill(value)
            else:
                self.array.fill(value, stream=stream)
        return self

    # ---- views

    def _view_of(self, a):
        return _of(a, a.ptr if a.size else None, base=self, allocator=self.allocator)

    def __getitem__(self, index):
        return self._view_of(self._a[index])

    def __setitem__(self, index, value):
        if isinstance(value, GPUArray):
            value = value.array
        self.array[index] = value

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = tuple(shape[0])
        shape = tuple(int(s) for s in shape)
        if order not in ("C", "F"):
            raise ValueError("order must be 'C' or 'F', got %r" % (order,))
        if order == "C" and (self.is_c_contiguous or not self.is_f_contiguous):
            return self._view_of(self._a.reshape(shape))
        # As PyCUDA does, the same memory read in the order asked for (no copy).
        if not (self.is_c_contiguous or self.is_f_contiguous):
            raise ValueError("reshape(order=%r) needs a contiguous array" % order)
        shape = np.empty(self.shape, np.uint8).reshape(shape).shape  # resolves -1, checks size
        if self.size == 0:
            return GPUArray(shape, self.dtype, self.allocator, order=order)
        strides = (_f_strides if order == "F" else _c_strides)(shape, self.itemsize)
        a = _wrap_memory(self.ptr, shape, self.dtype, strides, self)
        return _of(a, self.ptr, base=self, allocator=self.allocator)

    def ravel(self, order="C"):
        return self.reshape(self.size)

    def view(self, dtype=None):
        if dtype is None:
            dtype = self.dtype
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return self._view_of(self.array.reshape(self.shape))
        if not self.is_c_contiguous:
            raise ValueError("view(dtype) needs a C-contiguous array")
        old = self.dtype.itemsize
        if self.shape and (self.shape[-1] * old) % dtype.itemsize:
            raise ValueError("view(): the last axis (%d bytes) is not a multiple of %s's "
                             "%d bytes" % (self.shape[-1] * old, dtype, dtype.itemsize))
        shape = self.shape[:-1] + ((self.shape[-1] * old) // dtype.itemsize,) \
            if self.shape else ()
        a = cukit.asarray(_Holder(self.ptr, shape, dtype, None, self))
        return _of(a, self.ptr, base=self, allocator=self.allocator)

    def squeeze(self):
        """A view without the dimensions of length 1."""
        keep = [i for i, n in enumerate(self.shape) if n != 1]
        if len(keep) == self.ndim:
            return self
        shape = tuple(self.shape[i] for i in keep)
        strides = tuple(self.strides[i] for i in keep)
        a = _wrap_memory(self.ptr, shape, self.dtype, strides, self)
        return _of(a, self.ptr, base=self, allocator=self.allocator)

    def reverse(self, stream=None):
        """A reversed copy of a 1-D array."""
        if self.ndim != 1:
            raise ValueError("reverse() takes a 1-D array")
        return self[::-1].copy()

    @property
    def T(self):
        return self._view_of(self.array.T)

    def transpose(self, axes=None):
        if axes is None:
            return self.T
        return self._view_of(self.array.transpose(*axes))

    # ---- arithmetic (cukit's array engine)

    def _other(self, other):
        """The engine's operand for `other`: a cukit.Array or a scalar; NotImplemented
        for what PyCUDA does not combine with a GPUArray."""
        if isinstance(other, GPUArray):
            if other.shape != self.shape and other.size == 1:
                return other.get().reshape(()).item()  # a 0-d or one-element array: its value
            return other._a
        if isinstance(other, np.ndarray):
            if other.ndim == 0:
                return other.item()
            raise TypeError("GPUArray and numpy array: copy the numpy array to the device "
                            "first (gpuarray.to_gpu)")
        if isinstance(other, (numbers.Number, np.generic)):
            return other
        return NotImplemented

    def _result(self, a):
        return _of(a, a.buffer, allocator=self.allocator)

    def _binary(self, op, other, reflected=False):
        b = self._other(other)
        if b is NotImplemented:
            return NotImplemented
        if reflected:
            return self._result(_engine.binary(op, b, self._a))
        return self._result(_engine.binary(op, self._a, b))

    def _compare(self, op, other):
        """PyCUDA's comparisons: 1 and 0 in the operands' common type, not bool."""
        b = self._other(other)
        if b is NotImplemented:
            return NotImplemented
        dtype = np.result_type(self.dtype, other.dtype if isinstance(other, GPUArray) else other)
        return self._result(_engine.binary(op, self._a, b).astype(dtype))

    # + - * are the C base's (_PycudaArray); what it does not take comes to _binary.

    def __truediv__(self, other):
        return self._binary("/", other)

    def __rtruediv__(self, other):
        return self._binary("/", other, True)

    __div__ = __truediv__
    __rdiv__ = __rtruediv__

    def __pow__(self, other):
        return self._binary("**", other)

    def __rpow__(self, other):
        return self._binary("**", other, True)

    def __eq__(self, other):
        return self._compare("==", other)

    def __ne__(self, other):
        return self._compare("!=", other)

    def __lt__(self, other):
        return self._compare("<", other)

    def __le__(self, other):
        return self._compare("<=", other)

    def __gt__(self, other):
        return self._compare(">", other)

    def __ge__(self, other):
        return self._compare(">=", other)

    def _inplace(self, op, other):
        b = self._other(other)
        if b is NotImplemented:
            return NotImplemented
        _engine.binary(op, self._a, b, out=self._a)
        return self

    def __iadd__(self, other):
        return self._inplace("+", other)

    def __isub__(self, other):
        return self._inplace("-", other)

    def __imul__(self, other):
        return self._inplace("*", other)

    def __itruediv__(self, other):
        return self._inplace("/", other)

    def __ipow__(self, other):
        return self._inplace("**", other)

    def __neg__(self):
        return self._result(_engine.unary("neg", self._a))

    def __pos__(self):
        return self

    def __abs__(self):
        return self._result(_engine.unary("abs", self._a))

    def mul_add(self, selffac, other, otherfac, add_timer=None, stream=None, out=None):
        """selffac * self + otherfac * other, into out when given."""
        if not isinstance(other, GPUArray):
            raise TypeError("mul_add: other must be a GPUArray, not %s" % type(other).__name__)
        s = {} if stream is None else {"stream": stream}
        left = cukit.multiply(self._a, selffac, **s)
        right = cukit.multiply(other._a, otherfac, **s)
        if out is None:
            return self._result(cukit.add(left, right, **s))
        cukit.add(left, right, out=out._a, **s)
        return out

    def astype(self, dtype, stream=None):
        return self._result(self._a.astype(dtype))

    def _part(self, view):
        """A new array in self's order holding `view` (PyCUDA's real and imag are
        copies, contiguous as self is, not numpy's strided views)."""
        out = empty_like(self, dtype=view.dtype)
        cukit.copyto(out._a, view)
        return out

    @property
    def real(self):
        if self.dtype.kind != "c":
            return self
        return self._part(self._a.real)

    @property
    def imag(self):
        if self.dtype.kind != "c":
            return zeros_like(self)
        return self._part(self._a.imag)

    def conj(self, out=None, stream=None):
        """The complex conjugate (self itself for real arrays, as PyCUDA's), into out
        when given."""
        if out is None:
            if self.dtype.kind != "c":
                return self
            return self._result(self._a.conj())
        if not isinstance(out, GPUArray):
            raise TypeError("conj: out must be a GPUArray, not %s" % type(out).__name__)
        s = {} if stream is None else {"stream": stream}
        cukit.conj(self._a, out=out._a, **s)
        return out

    conjugate = conj

    def any(self, stream=None, allocator=None):
        """Whether any element is nonzero: a 0-d bool GPUArray."""
        return self._reduced(cukit.any, stream, allocator)

    def all(self, stream=None, allocator=None):
        """Whether every element is nonzero: a 0-d bool GPUArray."""
        return self._reduced(cukit.all, stream, allocator)

    def _reduced(self, f, stream, allocator):
        if allocator is None:
            return self._result(f(self._a) if stream is None else f(self._a, stream=stream))
        out = empty((), np.bool_, allocator=allocator)
        f(self._a, out=out._a)
        return out

    def bind_to_texref(self, texref, allow_offset=False):
        """Bind a texture reference to this array's memory (tex1Dfetch). Returns the
        offset from the bound address in elements (0 unless allow_offset)."""
        self._check_texture_source()
        return texref.set_address(self.gpudata, self.nbytes,
                                  allow_offset=allow_offset) / self.dtype.itemsize

    def bind_to_texref_ext(self, texref, channels=1, allow_double_hack=False,
                           allow_complex_hack=False, allow_offset=False):
        """bind_to_texref that also sets the format: float64 (allow_double_hack) as int2,
        complex64 (allow_complex_hack) as uint2, complex128 as int4, read with
        pycuda-helpers.hpp's fp_tex1Dfetch; integers are read as integers."""
        self._check_texture_source()
        hack = {np.dtype(np.float64): (allow_double_hack, drv.array_format.SIGNED_INT32, 2),
                np.dtype(np.complex64): (allow_complex_hack, drv.array_format.UNSIGNED_INT32, 2),
                np.dtype(np.complex128): (allow_complex_hack, drv.array_format.SIGNED_INT32, 4),
                }.get(self.dtype)
        if hack is not None and hack[0]:
            if channels != 1:
                raise ValueError("'fake' %s textures can only have one channel" % self.dtype)
            fmt, channels, read_as_int = hack[1], hack[2], True
        else:
            fmt = drv.dtype_to_array_format(self.dtype)
            read_as_int = self.dtype.kind in "iu"
        offset = texref.set_address(self.gpudata, self.nbytes, allow_offset=allow_offset)
        texref.set_format(fmt, channels)
        if read_as_int:
            texref.set_flags(texref.get_flags() | drv.TRSF_READ_AS_INTEGER)
        return offset / self.dtype.itemsize

    def _check_texture_source(self):
        if not self.flags.forc:
            raise RuntimeError("only contiguous arrays may be bound to a texture reference")


_new = object.__new__


def _of(a, gpudata, base=None, allocator=None):
    """A GPUArray for cukit.Array a (whose memory gpudata owns)."""
    self = _new(GPUArray)
    self._a = a
    self.gpudata = gpudata
    self.base = base
    self.allocator = allocator
    return self


GPUArray._of = staticmethod(_of)  # for reduction, which makes results of its argument's class


class _Flags:
    def __init__(self, a):
        self.c_contiguous = a.is_c_contiguous
        self.f_contiguous = a.is_f_contiguous
        self.forc = self.c_contiguous or self.f_contiguous


# ------------------------------------------------------------------ constructors


def _device_source(ary):
    """The cukit.Array over device array ary (a GPUArray, a cukit.Array or another
    library's array with __cuda_array_interface__), or None for host data."""
    t = type(ary)
    if t is np.ndarray:
        return None
    if isinstance(ary, GPUArray):
        return ary._a
    if t is cukit.Array:
        return ary
    if hasattr(ary, "__cuda_array_interface__"):
        return cukit.asarray(ary)
    return None


def _copy_of_device(src, allocator, stream=None):
    """A new GPUArray holding a copy of cukit.Array src, in src's order."""
    order = "F" if src.flags["F_CONTIGUOUS"] and not src.is_contiguous else "C"
    result = GPUArray(src.shape, src.dtype, allocator, order=order)
    result._set_from_device(src, stream)
    return result


def to_gpu(ary, allocator=None):
    """A GPUArray holding a copy of ary: host data, or a device array (GPUArray,
    cukit.Array, __cuda_array_interface__), which is copied device to device."""
    if type(ary) is not np.ndarray:
        src = _device_source(ary)
        if src is not None:
            return _copy_of_device(src, allocator)
        ary = np.asarray(ary)
    if allocator is None and ary.size and ary.flags.c_contiguous:
        # cukit's own copy path; gpudata is then the array's cukit.Buffer
        a = cukit.to_device(ary)
        return _of(a, a.buffer)
    order = "F" if ary.flags.f_contiguous and not ary.flags.c_contiguous else "C"
    result = GPUArray(ary.shape, ary.dtype, allocator, order=order)
    result.set(ary)
    return result


def to_gpu_async(ary, allocator=None, stream=None):
    src = _device_source(ary)
    if src is not None:
        return _copy_of_device(src, allocator, stream)
    ary = np.asarray(ary)
    order = "F" if ary.flags.f_contiguous and not ary.flags.c_contiguous else "C"
    result = GPUArray(ary.shape, ary.dtype, allocator, order=order)
    result.set(ary, stream=stream)
    return result


def empty(shape, dtype, allocator=None, order="C"):
    return GPUArray(shape, dtype, allocator, order=order)


def zeros(shape, dtype=np.float64, allocator=None, order="C"):
    result = GPUArray(shape, dtype, allocator, order=order)
    return result.fill(0)


def ones(shape, dtype=np.float64, allocator=None, order="C"):
    result = GPUArray(shape, dtype, allocator, order=order)
    return result.fill(1)


def _like_order(other, order):
    if order == "K" or order == "A":
        return "F" if other.is_f_contiguous and not other.is_c_contiguous else "C"
    return order


def empty_like(other_ary, dtype=None, order="K"):
    return GPUArray(other_ary.shape, dtype or other_ary.dtype, other_ary.allocator,
                    order=_like_order(other_ary, order))


def zeros_like(other_ary, dtype=None, order="K"):
    return empty_like(other_ary, dtype, order).fill(0)


def ones_like(other_ary, dtype=None, order="K"):
    return empty_like(other_ary, dtype, order).fill(1)


def arange(*args, **kwargs):
    """numpy.arange's values, made on the device."""
    dtype = kwargs.pop("dtype", None)
    allocator = kwargs.pop("allocator", None)
    if kwargs:
        raise TypeError("arange() got unexpected keyword arguments %s" % ", ".join(kwargs))
    a = cukit.arange(*args, dtype=dtype)  # dtype None: numpy's choice
    return _of(a, a.buffer, allocator=allocator)


def _operand(x):
    return x._a if isinstance(x, GPUArray) else x


def _first(*xs):
    for x in xs:
        if isinstance(x, GPUArray):
            return x
    raise TypeError("at least one argument must be a GPUArray")


def maximum(a, b, out=None, stream=None):
    """Elementwise maximum (cukit.maximum)."""
    r = cukit.maximum(_operand(a), _operand(b), out=_operand(out), stream=stream)
    return out if out is not None else _first(a, b)._result(r)


def minimum(a, b, out=None, stream=None):
    """Elementwise minimum (cukit.minimum)."""
    r = cukit.minimum(_operand(a), _operand(b), out=_operand(out), stream=stream)
    return out if out is not None else _first(a, b)._result(r)


def where(criterion, then_, else_, out=None, stream=None):
    """then_ where criterion is nonzero, else else_ (cukit.where)."""
    c = _operand(criterion)
    if not (isinstance(c, cukit.Array) and c.dtype == np.bool_):
        c = cukit.not_equal(c, 0)
    r = cukit.where(c, _operand(then_), _operand(else_), out=_operand(out), stream=stream)
    return out if out is not None else _first(criterion, then_, else_)._result(r)


def if_positive(criterion, then_, else_, out=None, stream=None):
    """then_ where criterion > 0, else else_."""
    c = cukit.greater(_operand(criterion), 0)
    r = cukit.where(c, _operand(then_), _operand(else_), out=_operand(out), stream=stream)
    return out if out is not None else _first(criterion, then_, else_)._result(r)


def concatenate(arrays, axis=0, allocator=None):
    a = cukit.concatenate([_operand(x) for x in arrays], axis=axis)
    return _of(a, a.buffer, allocator=allocator)


def stack(arrays, axis=0, allocator=None):
    a = cukit.stack([_operand(x) for x in arrays], axis=axis)
    return _of(a, a.buffer, allocator=allocator)


# ------------------------------------------------------------------ launch shapes


_splays = {}


def splay(n, dev=None):
    """((blocks, 1), (threads, 1, 1)) for a grid-stride loop over n elements, as
    PyCUDA's own kernels launch: one warp per block up to 32 warps' worth of blocks per
    multiprocessor group, then up to 128 threads per block."""
    if dev is None:
        dev = drv.Context.get_device()
    key = (int(n), int(dev))
    r = _splays.get(key)
    if r is None:
        warp = dev.get_attribute(drv.device_attribute.WARP_SIZE)
        most_threads = 128
        # PyCUDA's DeviceData.thread_blocks_per_mp (8), four times over, per multiprocessor
        most_blocks = 4 * 8 * dev.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
        n = int(n)
        if n < warp:
            blocks, threads = 1, warp
        elif n < most_blocks * warp:
            blocks, threads = (n + warp - 1) // warp, warp
        elif n < most_blocks * most_threads:
            warps = (n + warp - 1) // warp
            blocks, threads = most_blocks, (warps + most_blocks - 1) // most_blocks * warp
        else:
            blocks, threads = most_blocks, most_threads
        r = _splays[key] = ((blocks, 1), (threads, 1, 1))
    return r


# ------------------------------------------------------------------ reductions


def sum(a, dtype=None, stream=None, allocator=None):
    """The sum as a 0-d GPUArray, in a's dtype unless dtype is given (as PyCUDA's)."""
    return _reduction.sum(a, dtype, stream, allocator)


def dot(a, b, dtype=None, stream=None, allocator=None):
    """sum(a * b) as a 0-d GPUArray."""
    return _reduction.dot(a, b, dtype, stream, allocator)


def vdot(a, b, dtype=None, stream=None, allocator=None):
    """sum(conj(a) * b) as a 0-d GPUArray."""
    return _reduction.vdot(a, b, dtype, stream, allocator)


def max(a, stream=None):
    return _reduction.minmax("max", a, stream)


def min(a, stream=None):
    return _reduction.minmax("min", a, stream)


def any(a, stream=None, allocator=None):
    """Whether any element of a is nonzero: a 0-d bool GPUArray."""
    return a.any(stream, allocator)


def all(a, stream=None, allocator=None):
    """Whether every element of a is nonzero: a 0-d bool GPUArray."""
    return a.all(stream, allocator)


def subset_sum(subset, a, dtype=None, stream=None, allocator=None):
    """sum(a[subset]) as a 0-d GPUArray; every index of subset must be in range."""
    return _reduction.subset("sum", subset, a, None, dtype, stream, allocator)


def subset_dot(subset, a, b, dtype=None, stream=None, allocator=None):
    return _reduction.subset("dot", subset, a, b, dtype, stream, allocator)


def subset_max(subset, a, stream=None):
    return _reduction.subset("max", subset, a, stream=stream)


def subset_min(subset, a, stream=None):
    return _reduction.subset("min", subset, a, stream=stream)


# ------------------------------------------------------------------ gathers and scatters


_gathers = {}


def _gather(a_dtype, i_dtype, dest_i_dtype=None):
    """dest[d] = src[s + offset] with d = i or dest_idx[i], s = src_idx[i] (an
    ElementwiseKernel in PyCUDA's form, one per set of dtypes)."""
    key = (np.dtype(a_dtype), np.dtype(i_dtype), dest_i_dtype and np.dtype(dest_i_dtype))
    k = _gathers.get(key)
    if k is None:
        t = dtype_to_ctype(a_dtype) if np.dtype(a_dtype).kind != "c" else (
            "float2" if np.dtype(a_dtype) == np.complex64 else "double2")
        ti = dtype_to_ctype(i_dtype)
        if dest_i_dtype is None:
            k = cukit.ElementwiseKernel(
                "%s *dest, const %s *src, const %s *src_idx, long long offset" % (t, t, ti),
                "dest[i] = src[src_idx[i] + offset]", name="take")
        else:
            k = cukit.ElementwiseKernel(
                "%s *dest, const %s *src, const %s *dest_idx, const %s *src_idx, long long offset"
                % (t, t, dtype_to_ctype(dest_i_dtype), ti),
                "dest[dest_idx[i]] = src[src_idx[i] + offset]", name="take_put")
        _gathers[key] = k
    return k


def _identity_indices(n):
    return arange(n, dtype=np.int64)


def _flat(a, who):
    if not a.is_c_contiguous:
        raise ValueError("%s: the arrays must be contiguous; copy them first with .copy()" % who)
    return a._a.reshape((a.size,))


def _take_put(dest, src, dest_idx, src_idx, offset, stream, who):
    """dest[dest_idx[i]] = src[src_idx[i] + offset] for i < len(src_idx), indices checked."""
    _reduction.check_indices(src_idx, src.size, who, offset)
    if dest_idx is not None:
        _reduction.check_indices(dest_idx, dest.size, who)
        if dest_idx.size != src_idx.size:
            raise ValueError("%s: %d destination indices for %d source indices"
                             % (who, dest_idx.size, src_idx.size))
    if src.dtype != dest.dtype:
        raise TypeError("%s: the arrays are %s and %s; they must have one dtype"
                        % (who, src.dtype, dest.dtype))
    k = _gather(src.dtype, src_idx.dtype, None if dest_idx is None else dest_idx.dtype)
    ops = [_flat(dest, who), _flat(src, who)]
    if dest_idx is not None:
        ops.append(_flat(dest_idx, who))
    ops += [_flat(src_idx, who), np.int64(offset)]
    k(*ops, range=slice(0, src_idx.size), stream=stream)


def take(a, indices, out=None, stream=None):
    """a.ravel()[indices], shaped as indices (every index must be in range)."""
    if out is None:
        out = empty(indices.shape, a.dtype, allocator=a.allocator)
    _take_put(out, a, None, indices, 0, stream, "take")
    return out


def multi_take(arrays, indices, out=None, stream=None):
    """[take(a, indices) for a in arrays], into out's arrays when given."""
    if out is None:
        out = [empty(indices.shape, a.dtype, allocator=a.allocator) for a in arrays]
    elif len(out) != len(arrays):
        raise ValueError("multi_take: %d outputs for %d arrays" % (len(out), len(arrays)))
    for a, o in zip(arrays, out):
        _take_put(o, a, None, indices, 0, stream, "multi_take")
    return out


def multi_put(arrays, dest_indices, dest_shape=None, out=None, stream=None):
    """out[k][dest_indices[i]] = arrays[k][i]."""
    src_indices = _identity_indices(dest_indices.size)
    return multi_take_put(arrays, dest_indices, src_indices, dest_shape, out, stream)


def multi_take_put(arrays, dest_indices, src_indices, dest_shape=None, out=None, stream=None,
                   src_offsets=None):
    """out[k][dest_indices[i]] = arrays[k][src_indices[i] + src_offsets[k]]."""
    if out is None:
        if dest_shape is None:
            raise ValueError("multi_take_put: give dest_shape= or out=")
        out = [empty(dest_shape, a.dtype, allocator=a.allocator) for a in arrays]
    elif len(out) != len(arrays):
        raise ValueError("multi_take_put: %d outputs for %d arrays" % (len(out), len(arrays)))
    if src_offsets is None:
        src_offsets = [0] * len(arrays)
    elif len(src_offsets) != len(arrays):
        raise ValueError("multi_take_put: %d src_offsets for %d arrays"
                         % (len(src_offsets), len(arrays)))
    for a, o, off in zip(arrays, out, src_offsets):
        _take_put(o, a, dest_indices, src_indices, int(off), stream, "multi_take_put")
    return out


# ------------------------------------------------------------------ logical operations


def _logical(f, args, out, stream):
    first = _first(*args)
    r = f(*[_operand(x) for x in args], out=_operand(out), stream=stream)
    return out if out is not None else first._result(r)


def logical_and(x1, x2, /, out=None, stream=None):
    return _logical(cukit.logical_and, (x1, x2), out, stream)


def logical_or(x1, x2, /, out=None, stream=None):
    return _logical(cukit.logical_or, (x1, x2), out, stream)


def logical_not(x, /, out=None, stream=None):
    return _logical(cukit.logical_not, (x,), out, stream)


def hstack(arrays, allocator=None):
    """numpy.hstack: along axis 1, or axis 0 for 1-D arrays."""
    axis = 0 if arrays and arrays[0].ndim == 1 else 1
    return concatenate(arrays, axis=axis, allocator=allocator)


def reshape(a, shape, order="C"):
    return a.reshape(shape, order=order)


def transpose(a, axes=None):
    return a.transpose(axes)
