"""Texture and surface references for cukit.pycuda, on CUDA 12 and newer.

CUDA 12 removed texture and surface references; cukit lowers them to texture and
surface objects. SourceModule includes pycuda-texref.hpp, where `texture<T, dim, mode>`
and `surface<void, dim>` are structs holding an object's handle (and a marker and a
descriptor of the declaration), and declares each namespace-scope reference
`__constant__` (lower_references). Module.get_texref / get_surfref give a
TextureReference / SurfaceReference over that variable: its set_* calls record the
binding, and before the next launch of one of the module's kernels the reference
creates the cukit.Texture / cukit.Surface and writes its handle into the variable,
only when something changed (a launch with nothing changed costs one check).

Also here: PyCUDA's CUDA arrays (driver.Array over cukit.CudaArray), the copies
into and out of them (Memcpy2D/Memcpy3D with set_src_array/set_dst_array) and the
helpers that make them (matrix_to_array, np_to_array, gpuarray_to_array, ...).
"""
from __future__ import annotations

import os
import re
import struct

import numpy as np

import cukit
from cukit import _cukit

from . import _copies
from ._errors import LogicError
from ._enums import PyCudaEnum, address_mode, array_format, filter_mode

TRSA_OVERRIDE_FORMAT = 1
TRSF_READ_AS_INTEGER = 1
TRSF_NORMALIZED_COORDINATES = 2
TR_DEFAULT = -1

array3d_flags = PyCudaEnum("array3d_flags", {
    "ARRAY3D_LAYERED": 1, "LAYERED": 1, "2DARRAY": 1, "SURFACE_LDST": 2, "CUBEMAP": 4,
    "TEXTURE_GATHER": 8,
})

# pycuda-texref.hpp's markers and descriptor layout (see the header).
_TEXTURE_MARK = 0x58544B43
_SURFACE_MARK = 0x46534B43
_KIND_SIGNED, _KIND_UNSIGNED, _KIND_FLOAT = 0, 1, 2

# A declaration's dimensionality (cudaTextureType* / cudaSurfaceType*): (coordinates, layered).
_GEOMETRY = {0x01: (1, False), 0x02: (2, False), 0x03: (3, False), 0xF1: (1, True),
             0xF2: (2, True), 0x0C: (3, False), 0xFC: (3, True)}
_CUBEMAPS = (0x0C, 0xFC)
_GEOMETRY_NAME = {0x01: "1-D", 0x02: "2-D", 0x03: "3-D", 0xF1: "1-D layered",
                  0xF2: "2-D layered", 0x0C: "cubemap", 0xFC: "cubemap layered"}

# array_format <-> numpy dtype of one channel.
_FORMAT_DTYPE = {
    array_format.UNSIGNED_INT8: np.dtype(np.uint8),
    array_format.UNSIGNED_INT16: np.dtype(np.uint16),
    array_format.UNSIGNED_INT32: np.dtype(np.uint32), array_format.SIGNED_INT8: np.dtype(np.int8),
    array_format.SIGNED_INT16: np.dtype(np.int16), array_format.SIGNED_INT32: np.dtype(np.int32),
    array_format.HALF: np.dtype(np.float16), array_format.FLOAT: np.dtype(np.float32),
}
_DTYPE_FORMAT = {v: k for k, v in _FORMAT_DTYPE.items()}
# (kind, bytes per component) of a declared texel -> its natural format
_KIND_FORMAT = {
    (_KIND_SIGNED, 1): array_format.SIGNED_INT8, (_KIND_SIGNED, 2): array_format.SIGNED_INT16,
    (_KIND_SIGNED, 4): array_format.SIGNED_INT32, (_KIND_UNSIGNED, 1): array_format.UNSIGNED_INT8,
    (_KIND_UNSIGNED, 2): array_format.UNSIGNED_INT16,
    (_KIND_UNSIGNED, 4): array_format.UNSIGNED_INT32, (_KIND_FLOAT, 4): array_format.FLOAT,
}
_ADDRESS_NAMES = {address_mode.WRAP: "wrap", address_mode.CLAMP: "clamp",
                  address_mode.MIRROR: "mirror", address_mode.BORDER: "border"}

# ------------------------------------------------------------------ the source rewrite

_MENTION = re.compile(r"\b(?:texture|surface)\s*<")
_DECLARATION = re.compile(r"(\bstatic\s+)?\b(?:texture|surface)\s*<")
_SKIP = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"
                   r"|^[ \t]*#(?:\\\n|[^\n])*", re.S | re.M)


def lower_references(source):
    """(source, True) with each namespace-scope `texture<...>` / `surface<...>`
    declaration made `__constant__` (a leading `static` dropped); (source, False)
    unchanged when it mentions neither. Comments, strings and preprocessor lines
    are left alone; positions and line numbers are kept."""
    if _MENTION.search(source) is None:
        return source, False
    masked = _SKIP.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)
    found = False
    out = []
    last = 0
    for m in _DECLARATION.finditer(masked):
        before = masked[:m.start()].rstrip()
        found = True
        if before and before[-1] not in ";{}":
            continue  # a parameter, a template argument, a cast: a type, not a declaration
        out.append(source[last:m.start()])
        out.append("__constant__ ")
        last = m.end(1) if m.group(1) else m.start()
    if not found:
        return source, False
    out.append(source[last:])
    return "".join(out), True


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^">\n]+)[">][^\n]*', re.M)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.S)
_PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once[^\n]*", re.M)


def _find_include(name, quoted, here, dirs):
    """The path #include of name opens: its own folder first for "name", then dirs."""
    for d in ([here] if quoted and here else []) + list(dirs):
        path = os.path.join(d, name)
        if os.path.isfile(path):
            return os.path.abspath(path), d == here
    return None, False


def inline_references(source, dirs, own=(), name="kernel.cu", here=None, _seen=None, _depth=0):
    """(source, True) with each #include of a file that declares texture or surface
    references (itself or through its own includes), found as NVRTC would find it
    (its own folder for "x", then dirs), replaced by that file with its references
    lowered (lower_references), between #line directives that keep the file's name
    and line numbers in messages; (source, False) where nothing is included so.
    Files in `own` (the layer's headers, written for the lowering) are left as they
    are; a "x" include of a file inlined this way is given its full path, so it
    still finds what is beside it."""
    seen = set() if _seen is None else _seen
    masked = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)
    out, last, changed = [], 0, False
    for m in _INCLUDE.finditer(masked):
        quoted = m.group(1) == '"'
        path, beside = _find_include(m.group(2).strip(), quoted, here, dirs)
        if path is None or any(path.startswith(os.path.join(o, "")) for o in own) or _depth > 40:
            continue
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read(1 << 24)
        except OSError:
            continue
        inner, deeper = inline_references(text, dirs, own, path, os.path.dirname(path), seen,
                                          _depth + 1)
        lowered, refs = lower_references(inner)
        if not (refs or deeper):
            if beside:  # found beside this file, which moves into the source: say where
                out.append(source[last:m.start()] + f'#include "{path}"')
                last, changed = m.end(), True
            continue
        once = _PRAGMA_ONCE.search(lowered) is not None
        body = "" if once and path in seen else _PRAGMA_ONCE.sub("", lowered)
        seen.add(path)
        line = masked.count("\n", 0, m.end()) + 2
        out.append(source[last:m.start()])
        out.append(f'#line 1 "{path}"\n{body}\n#line {line} "{name}"')
        last, changed = m.end(), True
    if not changed:
        return source, False
    out.append(source[last:])
    return "".join(out), True


# ------------------------------------------------------------------ CUDA arrays


class ArrayDescriptor:
    """width, height (0: a 1-D array), format (array_format), num_channels."""

    def __init__(self):
        self.width = self.height = 0
        self.num_channels = 1
        self.format = array_format.FLOAT


class ArrayDescriptor3D(ArrayDescriptor):
    """ArrayDescriptor with depth (0: a 2-D array; layers of a layered array) and
    flags (array3d_flags)."""

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.flags = 0


def _descriptor_shape(descr):
    """(cukit.CudaArray shape, layered, surface) of a descriptor."""
    w, h = int(descr.width), int(descr.height)
    d = int(getattr(descr, "depth", 0))
    flags = int(getattr(descr, "flags", 0))
    if flags & array3d_flags.CUBEMAP:
        raise LogicError("Array: cubemap arrays (array3d_flags.CUBEMAP) are not provided "
                              "by cukit.pycuda")
    layered = bool(flags & array3d_flags.ARRAY3D_LAYERED)
    if w < 1:
        raise LogicError("Array: the descriptor's width must be at least 1, got %d" % w)
    if layered:
        shape = (max(d, 1), h, w) if h else (max(d, 1), w)
    elif d:
        shape = (d, max(h, 1), w)
    elif h:
        shape = (h, w)
    else:
        shape = (w,)
    return shape, layered, bool(flags & array3d_flags.SURFACE_LDST)


class Array:
    """A CUDA array (PyCUDA's driver.Array), over a cukit.CudaArray: made from an
    ArrayDescriptor or ArrayDescriptor3D, filled with Memcpy2D / Memcpy3D
    (set_dst_array) and read by texture references (set_array) and, when made
    with array3d_flags.SURFACE_LDST, surface references."""

    __slots__ = ("_a", "_descr3d", "__weakref__")

    def __init__(self, descriptor):
        fmt = array_format(descriptor.format)
        dtype = _FORMAT_DTYPE.get(fmt)
        if dtype is None:
            raise LogicError("Array: format %s has no CUDA array element type" % fmt.name)
        shape, layered, surface = _descriptor_shape(descriptor)
        try:
            self._a = cukit.CudaArray(shape, dtype, int(descriptor.num_channels), layered=layered,
                                      surface=surface)
        except (TypeError, ValueError) as e:
            raise LogicError("Array: %s" % e) from None
        self._descr3d = isinstance(descriptor, ArrayDescriptor3D)

    @property
    def handle(self):
        return self._a.handle

    @property
    def cuda_array(self):
        """The cukit.CudaArray underneath."""
        return self._a

    def _extent(self):
        """(width, height, depth) as CUDA counts them (0 for a missing dimension)."""
        a = self._a
        s = a.shape
        if a.layered:
            return (s[-1], s[1] if len(s) == 3 else 0, s[0])
        return (s[-1], s[-2] if len(s) >= 2 else 0, s[0] if len(s) == 3 else 0)

    def get_descriptor(self):
        d = ArrayDescriptor()
        d.width, d.height, _ = self._extent()
        d.format = _DTYPE_FORMAT[np.dtype(self._a.dtype)]
        d.num_channels = self._a.channels
        return d

    def get_descriptor_3d(self):
        d = ArrayDescriptor3D()
        d.width, d.height, d.depth = self._extent()
        d.format = _DTYPE_FORMAT[np.dtype(self._a.dtype)]
        d.num_channels = self._a.channels
        d.flags = ((array3d_flags.ARRAY3D_LAYERED if self._a.layered else 0)
                   | (array3d_flags.SURFACE_LDST if self._a.surface else 0))
        return d

    def free(self):
        """Drop this object's hold on the array (a texture still bound keeps it)."""

    def __eq__(self, other):
        return isinstance(other, Array) and other._a is self._a

    def __hash__(self):
        return hash(self._a.handle)

    def __repr__(self):
        return "<cukit.pycuda Array over %r>" % (self._a,)


# ---- copies that involve a CUDA array (Memcpy2D / Memcpy3D)


def _host_block(obj, offset, shape, strides, write):
    """A uint8 view of host memory obj: shape (depth, height, width) from byte offset,
    with (slice, row, 1) byte strides; never a copy, so a destination is written."""
    flat = np.frombuffer(memoryview(_copies._host_bytes(obj, write)).cast("B"), np.uint8)
    end = offset + (shape[0] - 1) * strides[0] + (shape[1] - 1) * strides[1] + shape[2]
    if end > flat.size:
        raise ValueError("Memcpy: the copy reaches byte %d of a %d-byte host buffer"
                         % (end, flat.size))
    if write and not flat.flags.writeable:
        raise ValueError("Memcpy: the host destination is read-only")
    return np.lib.stride_tricks.as_strided(flat[offset:], shape, strides,
                                           writeable=flat.flags.writeable)


def _array_bytes(ary):
    """The CUDA array's elements as a (depth, height, row bytes) uint8 host array."""
    _, h, d = ary._extent()
    return np.ascontiguousarray(ary._a.get()).view(np.uint8).reshape(max(d, 1), max(h, 1), -1)


def _set_array_bytes(ary, data):
    a = ary._a
    shape = a.shape + ((a.channels,) if a.channels > 1 else ())
    a.set(np.ascontiguousarray(data).view(np.dtype(a.dtype)).reshape(shape))


def copy_with_arrays(cp, depth, stream=None):
    """Perform Memcpy2D / Memcpy3D `cp` (depth slices) where a side may be an Array,
    or a 3-D copy. Staged through the host and synchronous, with a stream too."""
    w = int(cp.width_in_bytes)
    h = max(int(cp.height), 1)
    depth = max(int(depth), 1)
    kind_s, src = cp._src
    kind_d, dst = cp._dst
    sx, sy, sz = int(cp.src_x_in_bytes), int(cp.src_y), int(getattr(cp, "src_z", 0))
    dx, dy, dz = int(cp.dst_x_in_bytes), int(cp.dst_y), int(getattr(cp, "dst_z", 0))
    s_pitch = int(cp.src_pitch) or w
    d_pitch = int(cp.dst_pitch) or w
    s_height = int(getattr(cp, "src_height", 0)) or h
    d_height = int(getattr(cp, "dst_height", 0)) or h
    shape = (depth, h, w)

    # the source block, (depth, h, w) bytes on the host
    if kind_s == "array":
        whole = _array_bytes(src)
        block = whole[sz:sz + depth, sy:sy + h, sx:sx + w]
        if block.shape != (depth, h, w):
            raise ValueError("Memcpy: the copy reaches outside the source array (%s bytes of "
                             "rows, %d rows, %d slices)" % (whole.shape[2], whole.shape[1],
                                                          whole.shape[0]))
    elif kind_s == "host":
        block = _host_block(src, (sz * s_height + sy) * s_pitch + sx, shape,
                            (s_height * s_pitch, s_pitch, 1), False)
    else:
        start = _copies._address(src) + (sz * s_height + sy) * s_pitch + sx
        span = ((depth - 1) * s_height + (h - 1)) * s_pitch + w
        if (kind_d == "array" and s_pitch == w and (depth == 1 or s_height == h)
                and (dx, dy, dz) == (0, 0, 0) and _covers(dst, w, h, depth)):
            a = dst._a
            shape = a.shape + ((a.channels,) if a.channels > 1 else ())
            view = cukit.asarray(_copies._Holder(
                {"data": (start, False), "shape": shape, "typestr": np.dtype(a.dtype).str,
                 "strides": None, "version": 3}, src))
            a.set(view)
            return
        raw = np.empty(span, np.uint8)
        _copies.memcpy_dtoh(raw, start)
        block = np.lib.stride_tricks.as_strided(raw, shape, (s_height * s_pitch, s_pitch, 1))

    if kind_d == "array":
        if (dx, dy, dz) == (0, 0, 0) and _covers(dst, w, h, depth):
            _set_array_bytes(dst, block)
            return
        whole = _array_bytes(dst)
        region = whole[dz:dz + depth, dy:dy + h, dx:dx + w]
        if region.shape != block.shape:
            raise ValueError("Memcpy: the copy reaches outside the destination array")
        region[...] = block
        _set_array_bytes(dst, whole)
    elif kind_d == "host":
        _host_block(dst, (dz * d_height + dy) * d_pitch + dx, shape,
                    (d_height * d_pitch, d_pitch, 1), True)[...] = block
    else:
        start = _copies._address(dst) + (dz * d_height + dy) * d_pitch + dx
        span = ((depth - 1) * d_height + (h - 1)) * d_pitch + w
        raw = np.empty(span, np.uint8)
        if d_pitch != w or (depth > 1 and d_height != h):
            _copies.memcpy_dtoh(raw, start)  # keep the bytes between rows
        np.lib.stride_tricks.as_strided(raw, shape, (d_height * d_pitch, d_pitch, 1))[...] = block
        _copies.memcpy_htod(start, raw)


def _covers(ary, w, h, depth):
    aw, ah, ad = ary._extent()
    row = aw * np.dtype(ary._a.dtype).itemsize * ary._a.channels
    return w == row and h == max(ah, 1) and depth == max(ad, 1)


# ---- PyCUDA's helpers that make arrays


def _fill_array(ary, src, kind, pitch, height, depth):
    """Copy `depth` slices of `height` rows of `pitch` bytes (the array's row) from host
    or device memory into the whole array."""
    class _Copy:
        pass
    cp = _Copy()
    cp.src_x_in_bytes = cp.src_y = cp.src_z = cp.dst_x_in_bytes = cp.dst_y = cp.dst_z = 0
    cp.width_in_bytes = cp.src_pitch = pitch
    cp.dst_pitch = 0
    cp.height = cp.src_height = height
    cp.dst_height = 0
    cp._src = (kind, src)
    cp._dst = ("array", ary)
    copy_with_arrays(cp, depth)


def _format_of(dtype, double_hack):
    dtype = np.dtype(dtype)
    if double_hack:
        if dtype == np.complex64 or dtype == np.float64:
            return array_format.SIGNED_INT32, 2
        if dtype == np.complex128:
            return array_format.SIGNED_INT32, 4
    return dtype_to_array_format(dtype), 1


def dtype_to_array_format(dtype):
    dtype = np.dtype(dtype)
    try:
        return _DTYPE_FORMAT[dtype]
    except KeyError:
        raise TypeError("cannot convert dtype '%s' to array format (CUDA arrays hold int8, "
                        "uint8, int16, uint16, int32, uint32, float16 or float32 channels)"
                        % dtype) from None


def matrix_to_array(matrix, order="C", allow_double_hack=False):
    """A 2-D Array holding a 2-D numpy array: with order "C" tex2D(x, y) reads
    matrix[y, x], with "F" matrix[x, y]."""
    order = order.upper()
    if order not in ("C", "F"):
        raise LogicError("order must be either F or C")
    matrix = np.asarray(matrix, order=order)
    if matrix.ndim != 2:
        raise ValueError("matrix_to_array takes a 2-D array, got %d dimensions" % matrix.ndim)
    h, w = matrix.shape if order == "C" else matrix.shape[::-1]
    descr = ArrayDescriptor()
    descr.width, descr.height = w, h
    descr.format, descr.num_channels = _format_of(
        matrix.dtype, allow_double_hack and matrix.dtype == np.float64)
    ary = Array(descr)
    _fill_array(ary, matrix, "host", matrix.strides[0 if order == "C" else -1], h, 1)
    return ary


def make_multichannel_2d_array(ndarray, order):
    """A 2-D Array of several channels: shape (height, width, channels) with order
    "C", (channels, width, height) with "F"."""
    order = order.upper()
    if order not in ("C", "F"):
        raise LogicError("order must be either F or C")
    ndarray = np.asarray(ndarray)
    if order == "C":
        h, w, channels = ndarray.shape
        pitch = ndarray.strides[0]
    else:
        channels, w, h = ndarray.shape
        pitch = ndarray.strides[2]
    descr = ArrayDescriptor()
    descr.width, descr.height = w, h
    descr.format = dtype_to_array_format(ndarray.dtype)
    descr.num_channels = channels
    ary = Array(descr)
    _fill_array(ary, ndarray, "host", pitch, h, 1)
    return ary


def _to_array(obj, kind, shape, strides, dtype, order, surface):
    if order not in ("C", "F"):
        raise LogicError("order must be either F or C")
    if len(shape) == 2:
        h, w = shape
        d = 1
        pitch = strides[0 if order == "C" else -1]
    elif len(shape) == 3:
        d, h, w = shape
        pitch = strides[1]
    else:
        raise LogicError("CUDA arrays of 2 or 3 dimensions are made from arrays; got %d"
                              % len(shape))
    descr = ArrayDescriptor3D() if (surface or len(shape) == 3) else ArrayDescriptor()
    descr.width, descr.height = int(w), int(h)
    if isinstance(descr, ArrayDescriptor3D):
        descr.depth = int(d) if len(shape) == 3 else 1
        descr.flags = ((array3d_flags.ARRAY3D_LAYERED if len(shape) == 2 else 0)
                       | array3d_flags.SURFACE_LDST) if surface else 0
    descr.format, descr.num_channels = _format_of(dtype, True)
    ary = Array(descr)
    _fill_array(ary, obj, kind, int(pitch), int(h), int(d))
    return ary


def np_to_array(nparray, order, allowSurfaceBind=False):  # noqa: N803 (PyCUDA's name)
    """A 2-D or 3-D Array holding a numpy array; float64, complex64 and complex128 are
    held as 2 or 4 int32 channels (read with pycuda-helpers.hpp's fp_tex* functions).
    allowSurfaceBind=True makes it surface-writable (a 2-D one as one layer)."""
    nparray = np.asarray(nparray)
    return _to_array(nparray, "host", nparray.shape, nparray.strides, nparray.dtype, order,
                     allowSurfaceBind)


def gpuarray_to_array(gpuarray, order, allowSurfaceBind=False):  # noqa: N803
    """np_to_array for a GPUArray (copied on the device)."""
    return _to_array(gpuarray.gpudata, "device", gpuarray.shape, gpuarray.strides,
                     gpuarray.dtype, order, allowSurfaceBind)


def bind_array_to_texref(ary, texref):
    texref.set_array(ary)
    texref.set_address_mode(0, address_mode.CLAMP)
    texref.set_address_mode(1, address_mode.CLAMP)
    texref.set_filter_mode(filter_mode.POINT)


def matrix_to_texref(matrix, texref, order):
    bind_array_to_texref(matrix_to_array(matrix, order), texref)


# ------------------------------------------------------------------ references


def _read_reference(module, name, mark, what):
    """(device address, descriptor word, keeper) of the reference variable `name`."""
    m = module._m
    if m is None:
        raise LogicError("%s: the module is not linked yet" % what)
    try:
        var = m.get_global(name, dtype=np.uint32, shape=(4,))
    except AttributeError:
        raise LogicError(
            "%s failed: the module has no reference named %r; declare it at namespace scope "
            "in the SourceModule's source (texture<float, 2> %s; or surface<void, 2> %s;)"
            % (what, name, name, name)) from None
    except (ValueError, TypeError):
        var = None
    words = var.get() if var is not None else None
    if words is None or int(words[2]) not in (_TEXTURE_MARK, _SURFACE_MARK):
        raise LogicError(
            "%s: %r is a __device__ or __constant__ variable, not a %s reference (a "
            "`%s<...> %s;` declaration at namespace scope of a SourceModule)"
            % (what, name, "texture" if mark == _TEXTURE_MARK else "surface",
               "texture" if mark == _TEXTURE_MARK else "surface", name))
    if int(words[2]) != mark:
        raise LogicError(
            "%s: %r is a %s reference; use %s" % (
                what, name, "surface" if mark == _TEXTURE_MARK else "texture",
                "get_surfref" if mark == _TEXTURE_MARK else "get_texref"))
    return var.ptr, int(words[3]), var


def _check_geometry(ref, source_dims, source_layered, what):
    coords, layered = _GEOMETRY.get(ref._dim, (None, None))
    if ref._dim in _CUBEMAPS:
        raise LogicError("%s %r: cubemap references are not provided by cukit.pycuda"
                              % (ref._kind, ref._name))
    if coords != source_dims or layered != source_layered:
        raise LogicError(
            "%s %r is declared %s but is bound to %s; bind it to data of its own shape, or "
            "declare it to match" % (ref._kind, ref._name, _GEOMETRY_NAME.get(ref._dim, "?"),
                                     what))


def _describe_array(a):
    return "a %s%d-D CUDA array" % ("layered " if a.layered else "",
                                     a.ndim - 1 if a.layered else a.ndim)


class _Reference:
    __slots__ = ("_module", "_name", "_addr", "_keep", "_dim", "_desc", "_source", "_object",
                 "_dirty", "_handle", "__weakref__")
    _kind = "reference"

    def __init__(self, *args, **kwargs):
        raise LogicError("%s objects are made by Module.get_%s(name)"
                              % (type(self).__name__, "texref" if self._kind == "texture"
                                 else "surfref"))

    @classmethod
    def _make(cls, module, name, addr, desc, keep):
        self = object.__new__(cls)
        self._module = module
        self._name = name
        self._addr = addr
        self._keep = keep
        self._dim = desc & 0xFF
        self._desc = desc
        self._source = None
        self._object = None
        self._dirty = False
        self._handle = 0
        self._setup()
        return self

    def _setup(self):
        pass

    def _changed(self):
        if not self._dirty:
            self._dirty = True
            self._module._pending.append(self)

    def _flush(self):
        """Create the object for the current binding and write its handle into the
        module's variable (on the legacy default stream)."""
        if self._source is not None:
            try:
                obj = self._create()
            except (TypeError, ValueError) as e:
                raise LogicError("%s %r: %s" % (self._kind, self._name, e)) from None
            _cukit._copy_htod(self._addr, struct.pack("<Q", int(obj)))
            self._object = obj  # the one it replaces is destroyed once queued work is done
        self._dirty = False

    def get_array(self):
        src = self._source
        return src[1] if src is not None and src[0] == "array" else None

    def __repr__(self):
        return "<cukit.pycuda %s %r>" % (type(self).__name__, self._name)


class TextureReference(_Reference):
    """A `texture<T, dim, mode> name;` of a SourceModule (Module.get_texref), bound to
    an Array (set_array), linear memory (set_address) or pitched 2-D memory
    (set_address_2d). Its texture object is made before the next launch of the
    module's kernels after a change."""

    __slots__ = ("_format", "_modes", "_filter", "_flags")
    _kind = "texture"

    def _setup(self):
        self._format = None
        self._modes = [address_mode.WRAP] * 3  # the driver's initial state (clamps unnormalized)
        self._filter = filter_mode.POINT
        self._flags = 0

    # ---- the declaration
    @property
    def _read_normalized(self):
        return (self._desc >> 8) & 3 == 1

    @property
    def _texel(self):
        d = self._desc
        return (d >> 10) & 3, (d >> 12) & 0xF, (d >> 16) & 0xFF  # kind, channels, bytes

    # ---- binding
    def set_array(self, ary):
        if not isinstance(ary, Array):
            raise TypeError("TextureReference.set_array takes a pycuda driver.Array, got %s"
                            % type(ary).__name__)
        self._source = ("array", ary)
        self._changed()

    def set_address(self, devptr, bytes, allow_offset=False):  # noqa: A002 (PyCUDA's name)
        """Bind to `bytes` bytes of linear memory at devptr (tex1Dfetch). Returns the
        byte offset from the aligned address bound (nonzero only with allow_offset)."""
        ptr = _copies._address(devptr)
        align = _device_attribute("texture_alignment")
        offset = ptr % align if align else 0
        if offset and not allow_offset:
            raise LogicError(
                "TextureReference.set_address: address 0x%x is %d bytes past the device's "
                "texture alignment (%d bytes); pass allow_offset=True and add the returned "
                "offset (in elements) to tex1Dfetch's index" % (ptr, offset, align))
        self._source = ("linear", ptr - offset, int(bytes) + offset, devptr)
        self._changed()
        return offset

    def set_address_2d(self, devptr, descr, pitch):
        """Bind to pitched 2-D memory: descr gives width, height, format and channels."""
        self._source = ("pitch2d", _copies._address(devptr), int(descr.width), int(descr.height),
                        int(pitch), devptr)
        self._format = (array_format(descr.format), int(descr.num_channels))
        self._changed()

    def set_format(self, fmt, num_components):
        self._format = (array_format(fmt), int(num_components))
        self._changed()

    def set_address_mode(self, dim, am):
        if not 0 <= int(dim) < 3:
            raise ValueError("set_address_mode: dim is 0, 1 or 2, got %r" % (dim,))
        self._modes[int(dim)] = address_mode(am)
        self._changed()

    def set_filter_mode(self, fm):
        self._filter = filter_mode(fm)
        self._changed()

    def set_flags(self, flags):
        self._flags = int(flags)
        self._changed()

    def get_address_mode(self, dim):
        return self._modes[int(dim)]

    def get_filter_mode(self):
        return self._filter

    def get_flags(self):
        return self._flags

    def get_format(self):
        if self._format is not None:
            return self._format
        src = self._source
        if src is not None and src[0] == "array":
            a = src[1]._a
            return _DTYPE_FORMAT[np.dtype(a.dtype)], a.channels
        kind, channels, nbytes = self._texel
        return _KIND_FORMAT.get((kind, nbytes), array_format.FLOAT), channels

    # ---- the object
    def _read_mode(self, dtype):
        """Integers are read as integers when the declaration's texel type is an integer
        type read as cudaReadModeElementType, and as normalized floats otherwise (a float
        texel type, or cudaReadModeNormalizedFloat), as a reference's fetch instruction
        reads them; floats are read as they are."""
        if dtype.kind == "f":
            return "element_type"
        kind = self._texel[0]
        if kind != _KIND_FLOAT and not self._read_normalized:
            return "element_type"
        if dtype.itemsize > 2:
            raise LogicError(
                "texture %r reads integers as normalized floats (its texel type is float, or "
                "its read mode cudaReadModeNormalizedFloat), which only 8- and 16-bit integers "
                "can be; bound to %s data, declare it with an integer texel type read as "
                "cudaReadModeElementType (texture<int, ...>)" % (self._name, dtype))
        return "normalized_float"

    def _create(self):
        src = self._source
        normalized = bool(self._flags & TRSF_NORMALIZED_COORDINATES)
        if src[0] == "linear":
            _check_geometry(self, 1, False, "linear memory (set_address)")
            fmt, channels = self.get_format()
            dtype = _FORMAT_DTYPE[fmt]
            elem = dtype.itemsize * channels
            count = src[2] // elem
            shape = (count, channels) if channels > 1 else (count,)
            view = _copies._Holder({"data": (src[1], False), "shape": shape, "typestr": dtype.str,
                                 "strides": None, "version": 3}, src[3])
            return cukit.Texture(view, read_mode=self._read_mode(dtype),
                                 channels=channels if channels > 1 else None)
        if src[0] == "pitch2d":
            _check_geometry(self, 2, False, "pitched 2-D memory (set_address_2d)")
            fmt, channels = self._format
            dtype = _FORMAT_DTYPE[fmt]
            _, ptr, w, h, pitch, owner = src
            shape = (h, w, channels) if channels > 1 else (h, w)
            strides = (pitch, dtype.itemsize * channels, dtype.itemsize)[:len(shape)]
            view = _copies._Holder({"data": (ptr, False), "shape": shape, "typestr": dtype.str,
                                 "strides": strides, "version": 3}, owner)
            dims = 2
            kwargs = {"channels": channels if channels > 1 else None}
        else:
            a = src[1]._a
            dims = a.ndim - 1 if a.layered else a.ndim
            _check_geometry(self, dims, bool(a.layered), _describe_array(a))
            view = a
            dtype = np.dtype(a.dtype)
            kwargs = {}
        modes = tuple(_ADDRESS_NAMES[m] if normalized or m in (address_mode.CLAMP,
                                                                address_mode.BORDER)
                      else "clamp" for m in self._modes[:dims])
        return cukit.Texture(view, address_mode=modes,
                             filter_mode="linear" if self._filter == filter_mode.LINEAR
                             else "point",
                             normalized_coords=normalized, read_mode=self._read_mode(dtype),
                             **kwargs)


class SurfaceReference(_Reference):
    """A `surface<void, dim> name;` of a SourceModule (Module.get_surfref), bound to an
    Array made with array3d_flags.SURFACE_LDST (set_array)."""

    __slots__ = ()
    _kind = "surface"

    def set_array(self, ary, flags=0):
        if not isinstance(ary, Array):
            raise TypeError("SurfaceReference.set_array takes a pycuda driver.Array, got %s"
                            % type(ary).__name__)
        if not ary._a.surface:
            raise LogicError(
                "SurfaceReference.set_array: the Array was not made for surfaces; create it "
                "with ArrayDescriptor3D flags=array3d_flags.SURFACE_LDST (np_to_array(..., "
                "allowSurfaceBind=True))")
        self._source = ("array", ary)
        self._changed()

    def _create(self):
        a = self._source[1]._a
        _check_geometry(self, a.ndim - 1 if a.layered else a.ndim, bool(a.layered),
                        _describe_array(a))
        return cukit.Surface(a)


def _device_attribute(name):
    return cukit.get_device().attributes.get(name, 0)


def get_reference(module, name, cls):
    """The module's TextureReference / SurfaceReference for `name` (one per name)."""
    refs = module._refs
    if refs is None:
        refs = module._refs = {}
    key = (cls._kind, name)
    ref = refs.get(key)
    if ref is None:
        what = "get_texref" if cls is TextureReference else "get_surfref"
        addr, desc, keep = _read_reference(
            module, name, _TEXTURE_MARK if cls is TextureReference else _SURFACE_MARK, what)
        ref = refs[key] = cls._make(module, name, addr, desc, keep)
    return ref


def flush(module):
    """Write the changed references' handles before a launch of the module's kernels."""
    pending = module._pending
    while pending:
        pending[0]._flush()  # if it raises, it and the rest stay pending: no stale binding
        del pending[0]


def flush_given(refs):
    """texrefs= of a call or prepare: each a reference; their changes are written now."""
    for ref in refs:
        if not isinstance(ref, _Reference):
            raise TypeError("texrefs= takes TextureReference objects (Module.get_texref), "
                            "got %s" % type(ref).__name__)
        if ref._dirty:
            flush(ref._module)
