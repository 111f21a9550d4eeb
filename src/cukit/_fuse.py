"""cukit.fuse: trace a function of arrays and scalars into one elementwise kernel.

    @cukit.fuse
    def f(x, a, b):
        return a * x * x + b

    y = f(x, 2.0, 1.0)        # one kernel, one pass over memory

The function is run once per signature (the arguments' dtypes, Python scalar kinds)
on traced values; every operator and cukit ufunc it applies is resolved with the
ufunc's own promotion table (NEP 50: Python scalars are weak) and written as one
statement of a cukit.ElementwiseKernel, which the C engine compiles and launches.
Anything that cannot be fused raises a TypeError naming the operation.
"""
import functools
import re

import numpy as np

from . import _cukit

_STORAGE = {
    "bool": ("bool", "bool"), "int8": ("i8", "i8"), "uint8": ("u8", "u8"),
    "int16": ("i16", "i16"), "uint16": ("u16", "u16"), "int32": ("i32", "i32"),
    "uint32": ("u32", "u32"), "int64": ("i64", "i64"), "uint64": ("u64", "u64"),
    "float16": ("f16", "float"), "bfloat16": ("bf16", "float"), "float32": ("float", "float"),
    "float64": ("double", "double"), "complex64": ("c64", "c64"),
    "complex128": ("c128", "c128"),
}
# a weak Python scalar travels as the widest of its kind and is cast where it is used
_WEAK_PARAM = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}


class FuseError(TypeError):
    """An operation that cukit.fuse cannot put in a kernel."""


def _unfusable(what, fn):
    raise FuseError(f"cukit.fuse cannot fuse {what} (in {fn}()); only cukit ufuncs, "
                    f"operators, cukit.where, cukit.clip and astype on the arguments can be fused")


class _Value:
    """A traced value: a C expression of a known dtype (or a weak Python scalar kind)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _unfusable(f"numpy.{ufunc.__name__} (use cukit.{ufunc.__name__})", self._t.name)

    def __init__(self, tracer, expr, dtype=None, weak=None):
        self._t = tracer
        self._expr = expr
        self.dtype = dtype          # numpy dtype, or None for a weak scalar
        self._weak = weak           # bool/int/float/complex for a weak scalar

    # -- the C engine's hook (_set_fuse_proxy below): a cukit ufunc met a traced value
    @classmethod
    def _apply(cls, ufunc, args):
        tracer = next(a._t for a in args if isinstance(a, _Value))
        return tracer.apply(ufunc, args)

    def __array_function__(self, func, types, args, kwargs):
        _unfusable(f"numpy.{func.__name__}", self._t.name)

    def __bool__(self):
        _unfusable("a branch on a traced value (if/and/or/not, bool()); use cukit.where",
                   self._t.name)

    def __len__(self):
        _unfusable("len() of a traced value", self._t.name)

    def __iter__(self):
        _unfusable("iterating over a traced value", self._t.name)

    def __getitem__(self, key):
        _unfusable("indexing a traced value", self._t.name)

    def __setitem__(self, key, value):
        _unfusable("assigning into a traced value", self._t.name)

    def __float__(self):
        _unfusable("float() of a traced value", self._t.name)

    def __int__(self):
        _unfusable("int() of a traced value", self._t.name)

    def __index__(self):
        _unfusable("using a traced value as an index", self._t.name)

    def astype(self, dtype):
        return self._t.cast(self, np.dtype(dtype))

    def conj(self):
        return _cukit.conjugate(self)

    conjugate = conj

    @property
    def real(self):
        if self.dtype is not None and self.dtype.kind == "c":
            return self._t.part(self, "re")
        return self

    @property
    def imag(self):
        if self.dtype is not None and self.dtype.kind == "c":
            return self._t.part(self, "im")
        return self._t.cast(self * 0, self.dtype)


def _binop(name, reflected=False):
    def op(self, other):
        f = getattr(_cukit, name)
        return f(other, self) if reflected else f(self, other)
    return op


for _py, _uf in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                 ("truediv", "true_divide"), ("floordiv", "floor_divide"), ("mod", "remainder"),
                 ("pow", "power"), ("lshift", "left_shift"), ("rshift", "right_shift"),
                 ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor")]:
    setattr(_Value, f"__{_py}__", _binop(_uf))
    setattr(_Value, f"__r{_py}__", _binop(_uf, True))
for _py, _uf in [("lt", "less"), ("le", "less_equal"), ("eq", "equal"), ("ne", "not_equal"),
                 ("gt", "greater"), ("ge", "greater_equal")]:
    setattr(_Value, f"__{_py}__", _binop(_uf))
_Value.__hash__ = None
_Value.__neg__ = lambda self: _cukit.negative(self)
_Value.__pos__ = lambda self: _cukit.positive(self)
_Value.__abs__ = lambda self: _cukit.absolute(self)
_Value.__invert__ = lambda self: _cukit.invert(self)

_cukit._set_fuse_proxy(_Value, _Value._apply)


def _literal(v):
    """A C literal for a Python constant met while tracing."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        if -(2 ** 63) <= v < 2 ** 63:
            return f"({v}LL)" if v != -(2 ** 63) else "(-9223372036854775807LL - 1)"
        return f"({v}ULL)"
    if isinstance(v, float):
        if v != v:
            return "(double)CK_NAN"
        if v in (float("inf"), float("-inf")):
            return "(double)CK_INF" if v > 0 else "(-(double)CK_INF)"
        return f"({v.hex()})"
    if isinstance(v, complex):
        return f"c128{{{_literal(v.real)}, {_literal(v.imag)}}}"
    raise TypeError(v)


class _Tracer:
    def __init__(self, name):
        self.name = name
        self.lines = []
        self.count = 0
        self.weak_uses = {}  # parameter -> loop dtypes it was cast to (range checks)

    def _tmp(self):
        self.count += 1
        return f"t{self.count}"

    def operand(self, v, fn):
        if isinstance(v, _Value):
            return v
        if type(v) in (bool, int, float, complex):
            return _Value(self, _literal(v), None, type(v))
        if isinstance(v, np.generic):
            return _Value(self, f"cv<{_STORAGE[v.dtype.name][0]}>({_literal(v.item())})", v.dtype)
        if isinstance(v, np.ndarray):
            raise TypeError(f"cukit.fuse: {fn}() got a numpy array, which lives in host memory; "
                            "copy it to the device first with cukit.to_device(x)")
        _unfusable(f"an operand of type {type(v).__name__}", self.name)

    def apply(self, ufunc, args):
        fn = ufunc.__name__
        vals = [self.operand(a, fn) for a in args]
        types = [v.dtype if v.dtype is not None else v._weak for v in vals]
        loops, result = ufunc.resolve(*types)
        parts = []
        for v, lt in zip(vals, loops):
            s, c = _STORAGE[lt.name]
            parts.append(f"cv<{c}>(cv<{s}>({v._expr}))")
            if v._weak is int and v._expr in self.weak_uses:
                self.weak_uses[v._expr].add(lt)
        rs = _STORAGE[result.name][0]
        t = self._tmp()
        self.lines.append(f"const {rs} {t} = cv<{rs}>({ufunc._op}({', '.join(parts)}));")
        return _Value(self, t, result)

    def cast(self, v, dtype):
        rs = _STORAGE[dtype.name][0]
        t = self._tmp()
        self.lines.append(f"const {rs} {t} = cv<{rs}>({v._expr});")
        return _Value(self, t, dtype)

    def part(self, v, which):
        dtype = np.dtype(np.float32 if v.dtype == np.complex64 else np.float64)
        rs = _STORAGE[dtype.name][0]
        t = self._tmp()
        self.lines.append(f"const {rs} {t} = {v._expr}.{which};")
        return _Value(self, t, dtype)


class Fused:
    """A function traced into one kernel per argument signature; see cukit.fuse."""

    def __init__(self, func, kernel_name=None):
        self._func = func
        self._name = re.sub(r"\W", "_", kernel_name or getattr(func, "__name__", "fused"))
        if not self._name or self._name[0].isdigit():
            self._name = "fused_" + self._name
        self._kernels = {}
        functools.update_wrapper(self, func)

    def _signature(self, args):
        sig = []
        for a in args:
            if isinstance(a, _cukit.Array):
                sig.append(a.dtype)
            elif type(a) in _WEAK_PARAM:
                sig.append(type(a))
            elif isinstance(a, np.generic):
                sig.append(a.dtype)
            elif isinstance(a, np.ndarray):
                raise TypeError(f"{self._name}(): a numpy array lives in host memory; copy it "
                                "to the device first with cukit.to_device(x)")
            else:
                raise TypeError(f"{self._name}(): cukit.fuse takes cukit.Array and scalar "
                                f"arguments, not {type(a).__name__}")
        return tuple(sig)

    def _build(self, sig):
        tracer = _Tracer(self._name)
        params, proxies = [], []
        for k, s in enumerate(sig):
            name = f"in{k}"
            if isinstance(s, type):  # a weak Python scalar
                params.append(f"{_WEAK_PARAM[s]} {name}")
                proxies.append(_Value(tracer, name, None, s))
                if s is int:
                    tracer.weak_uses[name] = set()
            else:
                params.append(f"{s.name} {name}")
                proxies.append(_Value(tracer, name, s))
        out = self._func(*proxies)
        multiple = isinstance(out, tuple)
        outs = list(out) if multiple else [out]
        if not outs:
            raise FuseError(f"cukit.fuse: {self._name}() returns nothing to compute")
        out_params, stmts = [], list(tracer.lines)
        for j, o in enumerate(outs):
            if not isinstance(o, _Value):
                raise FuseError(f"cukit.fuse: {self._name}() must return traced values (the "
                                f"result of array operations), not {type(o).__name__}")
            if o.dtype is None:
                raise FuseError(f"cukit.fuse: {self._name}() returns a Python scalar; the "
                                "result must depend on an array")
            s = _STORAGE[o.dtype.name][0]
            out_params.append(f"{o.dtype.name} out{j}")
            stmts.append(f"out{j} = cv<{s}>({o._expr});")
        # numpy rounds every operation: no fused multiply-adds
        kernel = _cukit.ElementwiseKernel(", ".join(params), ", ".join(out_params),
                                          "\n".join(stmts), self._name,
                                          options=("-fmad=false",))
        checks = [(int(p[2:]), sorted(d.name for d in dts))
                  for p, dts in tracer.weak_uses.items() if dts]
        return kernel, multiple, checks

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{self._name}(): cukit.fuse functions take positional arguments")
        sig = self._signature(args)
        entry = self._kernels.get(sig)
        if entry is None:
            entry = self._kernels[sig] = self._build(sig)
        kernel, multiple, checks = entry
        for k, names in checks:  # numpy's OverflowError for a Python int out of range
            for n in names:
                info = np.iinfo(n) if np.dtype(n).kind in "iu" else None
                if info is not None and not info.min <= args[k] <= info.max:
                    raise OverflowError(f"Python integer {args[k]} out of bounds for {n}")
        return kernel(*args)


def fuse(func=None, *, kernel_name=None):
    """fuse(func) -> a callable that runs func's elementwise arithmetic as one kernel.

    Usable as @cukit.fuse or @cukit.fuse(kernel_name="name"). Arguments are cukit
    arrays (broadcast together) and scalars; the result is a new array (a tuple for
    several). A branch on a value, indexing, numpy functions or anything other than
    cukit ufuncs, operators, cukit.where/clip and astype raise a TypeError naming it."""
    if func is None:
        return lambda f: Fused(f, kernel_name)
    return Fused(func, kernel_name)
