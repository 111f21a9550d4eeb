"""numpy dtypes <-> C type names (tools.dtype_to_ctype, parse_c_arg, ...) and CUDA's
vector types (gpuarray.vec): what the layer's modules that read or write C
declarations share."""
from __future__ import annotations

import re

import numpy as np


# ------------------------------------------------------------------ vector types


class _VecTypes:
    """CUDA's vector types (float3, int4, ...) as numpy structured dtypes, with
    make_<type>(x, y, ...) giving a 0-d array to pass by value."""

    def __init__(self):
        self._by_name = {}
        self._names = {}
        base = [("char", np.int8), ("uchar", np.uint8), ("short", np.int16),
                ("ushort", np.uint16), ("int", np.int32), ("uint", np.uint32),
                ("long", np.int64), ("ulong", np.uint64), ("longlong", np.int64),
                ("ulonglong", np.uint64), ("float", np.float32), ("double", np.float64)]
        fields = "xyzw"
        for name, t in base:
            for n in (1, 2, 3, 4):
                tname = "%s%d" % (name, n)
                size = np.dtype(t).itemsize
                # CUDA aligns 2- and 4-vectors to their size (up to 16 bytes); 3-vectors not.
                align = size * n if n in (2, 4) and size * n <= 16 else size
                if name in ("long", "ulong", "longlong", "ulonglong", "double") and n == 4:
                    align = 16
                dtype = np.dtype({"names": list(fields[:n]), "formats": [t] * n,
                                  "itemsize": _round_up(size * n, align)}, align=True)
                self._by_name[tname] = dtype
                self._names[dtype] = tname
                setattr(self, tname, dtype)
                setattr(self, "make_" + tname, self._maker(dtype, n))
                setattr(self, "filled_" + tname, self._filler(dtype, n))
        self.types = dict(self._by_name)

    @staticmethod
    def _maker(dtype, n):
        def make(*args):
            if len(args) != n:
                raise TypeError("expected %d components, got %d" % (n, len(args)))
            return np.array(tuple(args), dtype=dtype)
        return make

    @staticmethod
    def _filler(dtype, n):
        def fill(value):
            return np.array((value,) * n, dtype=dtype)
        return fill

    def name_of(self, dtype):
        return self._names.get(np.dtype(dtype))

    def dtype_of(self, name):
        return self._by_name.get(name)


def _round_up(n, align):
    return (n + align - 1) // align * align


vec = _VecTypes()


# ------------------------------------------------------------------ dtypes and C types

_ctypes = {}
_registered = {}  # dtype -> the C name dtype_to_ctype gives (the first registered)
_by_name = {}     # every registered C name -> its dtype


class TypeNameNotKnown(RuntimeError):
    """get_or_register_dtype was asked for a C name that no dtype has."""


def _init_ctypes():
    if _ctypes:
        return
    table = [
        (np.int8, "signed char"), (np.uint8, "unsigned char"), (np.int16, "short"),
        (np.uint16, "unsigned short"), (np.int32, "int"), (np.uint32, "unsigned int"),
        (np.int64, "long"), (np.uint64, "unsigned long"), (np.float16, "__half"),
        (np.float32, "float"), (np.float64, "double"),
        (np.complex64, "pycuda::complex<float>"), (np.complex128, "pycuda::complex<double>"),
        (np.bool_, "bool"),
    ]
    for t, name in table:
        _ctypes[np.dtype(t)] = name


def get_or_register_dtype(c_names, dtype=None):
    """With dtype: name it (a struct dtype, say) in C by c_names (a str or a list; the
    first is what dtype_to_ctype gives unless dtype already has a name) and return it.
    Without: the dtype the names stand for (TypeNameNotKnown when none)."""
    if isinstance(c_names, str):
        c_names = [c_names]
    if dtype is None:
        found = set()
        for nm in c_names:
            try:
                found.add(_ctype_to_dtype(nm))
            except ValueError:
                raise TypeNameNotKnown("C type %r has no dtype; register one with "
                                       "get_or_register_dtype(%r, dtype)" % (nm, nm)) from None
        if len(found) != 1:
            raise TypeNameNotKnown("C types %s stand for different dtypes" % (c_names,))
        return found.pop()
    dtype = np.dtype(dtype)
    for nm in c_names:
        try:
            known = _ctype_to_dtype(nm)
        except ValueError:
            continue
        if known != dtype:
            raise RuntimeError("C type %r is already registered as dtype %s" % (nm, known))
    for nm in c_names:
        _by_name[nm] = dtype
    _registered.setdefault(dtype, c_names[0])
    return dtype


def register_dtype(dtype, c_names, alias_ok=False):
    """Name a (structured) dtype's C type for dtype_to_ctype; a second, different name
    is an error unless alias_ok (then both names stand for it; the first stays its name)."""
    dtype = np.dtype(dtype)
    if isinstance(c_names, str):
        c_names = [c_names]
    if dtype in _registered and not alias_ok and _registered[dtype] != c_names[0]:
        raise RuntimeError("dtype %s is already registered as %s" % (dtype, _registered[dtype]))
    return get_or_register_dtype(c_names, dtype)


def dtype_to_ctype(dtype, with_fp_tex_hack=False):
    """The C type name of a numpy dtype (complex64 -> "pycuda::complex<float>")."""
    if dtype is None:
        raise ValueError("dtype may not be None")
    dtype = np.dtype(dtype)
    if with_fp_tex_hack:
        if dtype == np.float64:
            return "fp_tex_double"
        if dtype == np.complex64:
            return "fp_tex_cfloat"
        if dtype == np.complex128:
            return "fp_tex_cdouble"
    if dtype in _registered:
        return _registered[dtype]
    _init_ctypes()
    try:
        return _ctypes[dtype]
    except KeyError:
        pass
    name = vec.name_of(dtype)
    if name is not None:
        return name
    raise ValueError("unable to map dtype '%s' to a C type" % dtype)


# ------------------------------------------------------------------ argument descriptions


class Argument:
    def __init__(self, dtype, name):
        self.dtype = np.dtype(dtype)
        self.name = name

    def __repr__(self):
        return "%s(%r, %s)" % (type(self).__name__, self.name, self.dtype)


class VectorArg(Argument):
    def declarator(self):
        return "%s *%s" % (dtype_to_ctype(self.dtype), self.name)

    struct_char = "P"


class ScalarArg(Argument):
    def declarator(self):
        return "%s %s" % (dtype_to_ctype(self.dtype), self.name)

    @property
    def struct_char(self):
        return self.dtype.char


def parse_c_arg(c_arg):
    """'float *x' -> VectorArg(float32, 'x'); 'int n' -> ScalarArg(int32, 'n')."""
    c_arg = c_arg.replace("const", "").replace("volatile", "").strip()
    m = re.match(r"^(.*?)([\w]+)\s*(\[\s*\])?$", c_arg)
    if m is None:
        raise ValueError("cannot parse C argument %r" % c_arg)
    ctype, name, brackets = m.group(1).strip(), m.group(2), m.group(3)
    is_vector = brackets is not None or ctype.endswith("*")
    ctype = ctype.rstrip("*").strip()
    dtype = _ctype_to_dtype(ctype)
    return (VectorArg if is_vector else ScalarArg)(dtype, name)


def _ctype_to_dtype(ctype):
    _init_ctypes()
    ctype = " ".join(ctype.split())
    aliases = {"int": np.int32, "signed int": np.int32, "unsigned": np.uint32,
               "long long": np.int64, "unsigned long long": np.uint64, "size_t": np.uintp,
               "ptrdiff_t": np.intp, "char": np.int8, "signed": np.int32,
               "long int": np.int64, "unsigned long int": np.uint64, "half": np.float16}
    if ctype in aliases:
        return np.dtype(aliases[ctype])
    if ctype in _by_name:
        return _by_name[ctype]
    for dt, name in _ctypes.items():
        if name == ctype:
            return dt
    dt = vec.dtype_of(ctype)
    if dt is not None:
        return dt
    raise ValueError("unknown C type %r" % ctype)


def get_arg_type(c_arg):
    return parse_c_arg(c_arg).struct_char

