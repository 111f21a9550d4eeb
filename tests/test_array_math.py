"""Array math: ufuncs, operators, promotion, broadcasting, functions, ElementwiseKernel, fuse.

Every result is checked against numpy on fresh random data with edge values. The
kernels the GPU tests need are compiled up front on every core (the same sources a
call builds, through cukit._warmup), so each compiles once."""
import itertools
import math

import numpy as np
import pytest

import cukit
from cukit import _warmup
from conftest import HAVE_GPU, poison, spread

gpu = pytest.mark.gpu
ALL = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
       "float16", "float32", "float64", "complex64", "complex128"]
TESTED = ["bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
UFUNCS = _warmup.ufuncs()
BINARY = sorted(n for n, f in UFUNCS.items() if f.nin == 2)
UNARY = sorted(n for n, f in UFUNCS.items() if f.nin == 1)
# IEEE-exact (or integer) results must match numpy bit for bit; the rest within tolerance
APPROX = {"power", "arctan2", "hypot", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10",
          "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
          "arcsinh", "arccosh", "arctanh", "sqrt", "absolute", "sign", "reciprocal",
          "true_divide", "multiply", "square"}  # the last ones: complex formulas only
MIXED = [("int8", "uint8"), ("int64", "uint64"), ("float16", "int16"), ("float32", "float64"),
         ("int32", "float32"), ("complex64", "float64"), ("bool", "int8"), ("uint8", "int64")]


def loop_dtypes(f):
    out = []
    for t in TESTED:
        try:
            f.resolve(*[np.dtype(t)] * f.nin)
            out.append(t)
        except TypeError:
            pass
    return out


def edge(dtype):
    d = np.dtype(dtype)
    if d.kind == "b":
        return np.array([True, False])
    if d.kind in "iu":
        i = np.iinfo(d)
        return np.array([0, 1, i.min, i.max, i.max - 1, 2], dtype=d)
    if d.kind == "f":
        f = np.finfo(d)
        return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, f.max, f.tiny, 0.5],
                        dtype=d)
    return np.array([0, -0.0, 1 + 1j, complex(np.inf, 1), complex(np.nan, 0), -2.5j], dtype=d)


def data(rng, dtype, n=257, edges=True, small=False, positive=False):
    """Fresh random values of dtype, edge values first."""
    d = np.dtype(dtype)
    if d.kind == "b":
        x = rng.random(n) < 0.5
    elif d.kind in "iu":
        i = np.iinfo(d)
        lo, hi = (0, 6) if small else (max(i.min, -10**6), min(i.max, 10**6))
        x = rng.integers(lo, hi, n, endpoint=True).astype(d)
    elif d.kind == "f":
        x = (rng.standard_normal(n) * (2 if small else 40)).astype(d)
    else:
        x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(d) * 3
    if positive and d.kind in "fc":
        x = np.abs(x.real).astype(d) + d.type(0.01)
    if edges:
        e = edge(d)
        x[: len(e)] = e
    return x


def same(got, want, name="", approx=False, cond=1.0):
    """Every element equal (NaN equal NaN; +0 and -0 told apart for exact ops). cond: how
    much the function's condition number scales the approximate tolerance."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if approx and want.dtype.kind in "fc":
        tol = cond * {2: 2e-3, 4: 4e-6, 8: 1e-13}[want.real.dtype.itemsize]
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=tol, atol=tol)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
        return
    np.testing.assert_array_equal(got, want, err_msg=name)
    if want.dtype.kind == "f" and name not in ("maximum", "minimum", "fmax", "fmin", "clip"):
        num = ~np.isnan(want)  # a NaN's sign and payload are not numpy's to promise (docs/guide/arrays.md)
        np.testing.assert_array_equal(np.signbit(got[num]), np.signbit(want[num]),
                                      err_msg=name + " sign")


def expect(name, *args):
    with np.errstate(all="ignore"):
        return getattr(np, name)(*args)


# ------------------------------------------------------------------ CPU: promotion tables

def test_every_ufunc_resolves_as_numpy():
    bad = []
    for name, f in UFUNCS.items():
        for ts in itertools.product(ALL, repeat=f.nin):
            dts = tuple(np.dtype(t) for t in ts)
            try:
                want = getattr(np, name).resolve_dtypes(dts + (None,))
            except Exception:
                want = None
            try:
                loops, got = f.resolve(*dts)
            except TypeError:
                got = None
            if want is None and got is None:
                continue
            if want is None or got is None or (tuple(loops), got) != (tuple(want[:-1]), want[-1]):
                bad.append((name, ts, want, got))
    assert not bad, bad[:10]


@pytest.mark.parametrize("name", ["add", "true_divide", "less", "power", "arctan2", "maximum"])
def test_python_scalars_are_weak(name):
    f = UFUNCS[name]
    for t, s in itertools.product(ALL, (int, float, complex)):
        try:
            want = getattr(np, name).resolve_dtypes((np.dtype(t), s, None))
        except Exception:
            want = None
        try:
            loops, got = f.resolve(np.dtype(t), s)
        except TypeError:
            assert want is None, (t, s)
            continue
        assert want is not None and (tuple(loops), got) == (tuple(want[:-1]), want[-1]), (t, s)


def test_ufunc_objects():
    assert cukit.add.nin == 2 and cukit.sqrt.nin == 1 and cukit.add.nout == 1
    assert "ff->f" in cukit.add.types and "FF->F" in cukit.add.types
    assert cukit.divide is cukit.true_divide and cukit.abs is cukit.absolute
    assert "numpy.add" in cukit.add.__doc__
    assert repr(cukit.sqrt) == "<cukit.ufunc 'sqrt'>"


def test_missing_loop_is_named():
    with pytest.raises(TypeError, match="cukit.cbrt does not support the input type complex64"):
        cukit.cbrt.resolve(np.complex64)


def test_dtype_argument_resolves_as_numpy():
    """dtype= picks numpy's loop (or raises numpy's TypeError) for every ufunc, input
    dtype and requested dtype."""
    bad = []
    for name, f in UFUNCS.items():
        for t in ("int8", "int32", "uint64", "float16", "float32", "float64", "complex64", "bool"):
            for want in ("bool", "int16", "int64", "float16", "float32", "float64", "complex128"):
                ins = [np.dtype(t)] * f.nin
                try:
                    with np.errstate(all="ignore"):
                        r = getattr(np, name)(*[np.ones(1, d) for d in ins], dtype=want)
                    expect_dt = r.dtype
                except TypeError:
                    expect_dt = None
                try:
                    got = f.resolve(*ins, dtype=want)[1]
                except TypeError:
                    got = None
                if got != expect_dt:
                    bad.append((name, t, want, expect_dt, got))
    assert not bad, bad[:10]
    with pytest.raises(TypeError, match=r"Cannot cast ufunc 'add' input 0 from dtype\('float64'\) "
                                        r"to dtype\('int32'\) with casting rule 'same_kind'"):
        cukit.add.resolve(np.float64, np.float64, dtype=np.int32)
    with pytest.raises(TypeError, match="No loop matching the specified signature .* less"):
        cukit.less.resolve(np.int32, np.int32, dtype=np.float64)
    assert cukit.add.resolve(np.int32, float, dtype=np.float32)[1] == np.float32


def test_new_kernel_forms_compile():
    """Tiled (transposed 2-D) and where= ufunc kernels, and ElementwiseKernel's
    loop_prep/after_loop, compile for sm_90 with NVRTC alone."""
    try:
        cukit.nvrtc_version()
    except cukit.CudaError:
        pytest.skip("NVRTC is not available")
    T2 = 6
    for f, ins, kw in [(cukit.add, ["float32", "float32"], dict(cls=T2, tiled=2)),
                       (cukit.add, ["float16", "float64"], dict(cls=T2, tiled=6)),
                       (cukit.multiply, ["complex128", "complex128"], dict(cls=T2, tiled=6, masked=True)),
                       (cukit.add, ["float32", "float32"], dict(cls=0, vec=4, masked=True)),
                       (cukit.arcsinh, ["complex64"], dict(cls=5, masked=True)),
                       (cukit.add, ["float32", "float32"], dict(cls=1, out="float16"))]:
        src, name, opts = f._source(ins, **kw)
        cukit.Program(src, name=name, options=opts).cubin(arch="sm_90")
    k = cukit.ElementwiseKernel("T x, float32 a, raw T w", "T z", "z = a * x + s", "lp",
                                loop_prep="T s = a * 2;", after_loop="if (s < -1e30f) w[0] = s;")
    for cls in range(7):
        src = k._source(["float32"] * 4, [False, True, False, False], cls=cls, tiled=1)
        cukit.Program(src, name="lp.cu").cubin(arch="sm_90")
    named = cukit.ElementwiseKernel("T p, float32 a1, raw T n", "T z", "z = p * a1 + q",
                                    "names", loop_prep="const float q = a1 + n[0];")
    for cls in (0, 5, 6):   # parameters may be named like generated locals
        src = named._source(["float32"] * 4, [False, True, False, False], cls=cls, tiled=1)
        cukit.Program(src, name="names.cu").cubin(arch="sm_90")
    pk = cukit.ElementwiseKernel("float a, float *x, float *z", "z[i] = a * x[i] + s", "pyc",
                                 loop_prep="float s = 2 * a;", after_loop="x[0] = s;")
    prog = cukit.Program(pk._source([], []), name="pyc.cu")
    prog.cubin(arch="sm_90")
    assert str(prog.signatures["pyc"]) == "pyc(float a, float* x, float* z, long long n)"
    assert str(prog.signatures["pyc_range"]) == ("pyc_range(float a, float* x, float* z, long long "
                                                "start, long long stop, long long step)")
    bad = cukit.ElementwiseKernel("T x", "T z", "z = x", "lp2", loop_prep="int q = ;")
    with pytest.raises(cukit.CompileError, match=r"loop_prep:1:\d+: error"):
        cukit.Program(bad._source(["float32"] * 2, [False, False]), name="lp2.cu").cubin(arch="sm_90")


def test_generated_sources_compile():
    """A sample of generated kernels compiles for sm_90 with NVRTC alone (no GPU)."""
    try:
        cukit.nvrtc_version()
    except cukit.CudaError:
        pytest.skip("NVRTC is not available")
    jobs = [_warmup.job(cukit.add, ["float16", "float64"], [False, True]),
            _warmup.job(cukit.less, ["int64", "uint64"]),
            _warmup.job(cukit.remainder, ["float32", "float32"]),
            _warmup.job(cukit.sqrt, ["complex128"])]
    for src, name, opts in map(_warmup.source, jobs):
        cukit.Program(src, name=name, options=opts).cubin(arch="sm_90")
    for cls in range(2, 6):
        src, name, opts = cukit.absolute._source(["complex64"], cls=cls)
        cukit.Program(src, name=name, options=opts).cubin(arch="sm_90")


def test_elementwise_bad_declarations():
    with pytest.raises(ValueError, match="unknown type 'flaot 3'|cannot read"):
        cukit.ElementwiseKernel("flaot 3 x", "T y", "y = x")
    with pytest.raises(ValueError, match="given twice"):
        cukit.ElementwiseKernel("T x", "T x", "x = x")
    with pytest.raises(ValueError, match="at least one output"):
        cukit.ElementwiseKernel("T x", "", "x")
    with pytest.raises(ValueError, match="not a C identifier"):
        cukit.ElementwiseKernel("T x", "T y", "y = x", "my kernel")


def test_elementwise_compile_error_points_into_operation():
    try:
        cukit.nvrtc_version()
    except cukit.CudaError:
        pytest.skip("NVRTC is not available")
    k = cukit.ElementwiseKernel("T x", "T z", "z = x +* 2", "bad")
    src = k._source(["float32", "float32"], [False, False])
    with pytest.raises(cukit.CompileError) as e:
        cukit.Program(src, name="bad.cu").cubin(arch="sm_90")
    assert "operation:1:" in str(e.value) and "z = x +* 2" in str(e.value)
    assert str(e.value).count("error:") == 1


def test_fuse_refuses_what_it_cannot_fuse():
    def branch(x):
        return x if x > 0 else -x

    with pytest.raises(TypeError, match=r"cannot fuse a branch on a traced value .*branch\(\)"):
        cukit.fuse(branch)._build((np.dtype("float32"),))
    with pytest.raises(TypeError, match="cannot fuse numpy.exp .use cukit.exp."):
        cukit.fuse(lambda x: np.exp(x))._build((np.dtype("float32"),))
    with pytest.raises(TypeError, match="cannot fuse numpy.sum"):
        cukit.fuse(lambda x: np.sum(x))._build((np.dtype("float32"),))
    with pytest.raises(TypeError, match="cannot fuse indexing"):
        cukit.fuse(lambda x: x[0])._build((np.dtype("float32"),))
    with pytest.raises(TypeError, match="returns a Python scalar|must return traced"):
        cukit.fuse(lambda x: 3)._build((np.dtype("float32"),))
    with pytest.raises(TypeError, match="cannot fuse cukit.add with dtype="):
        cukit.fuse(lambda x: cukit.add(x, x, dtype=np.float64))._build((np.dtype("float32"),))
    with pytest.raises(TypeError, match="cannot fuse cukit.sqrt with where="):
        cukit.fuse(lambda x: cukit.sqrt(x, where=x > 0))._build((np.dtype("float32"),))


# ------------------------------------------------------------------ GPU: compile up front

def _jobs():
    jobs = []
    for name, f in UFUNCS.items():
        for t in loop_dtypes(f):
            jobs.append(_warmup.job(f, [t] * f.nin))
    for a, b in MIXED:
        for name in ("add", "multiply", "less", "equal", "maximum", "true_divide"):
            jobs.append(_warmup.job(UFUNCS[name], [a, b]))
    for t in TESTED:
        for name in ("add", "multiply", "less"):
            try:
                jobs.append(_warmup.job(UFUNCS[name], [t, t], [False, True]))
            except TypeError:
                pass
    return jobs


@pytest.fixture(scope="module")
def compiled():
    if HAVE_GPU:
        _warmup.compile_jobs(spread(_jobs()))


# ------------------------------------------------------------------ GPU: ufuncs

@gpu
@pytest.mark.parametrize("name", BINARY)
def test_binary_every_dtype(name, rng, compiled):
    f = UFUNCS[name]
    for t in loop_dtypes(f):
        small = name in ("power", "left_shift", "right_shift")
        a = data(rng, t, small=small and name != "power")
        b = data(rng, t, small=small, edges=not small)
        if name == "power" and np.dtype(t).kind in "iu":
            a = data(rng, t, small=True, edges=False)
        if np.dtype(t).kind == "c" and name in APPROX:  # complex formulas: no edge values
            a, b = data(rng, t, edges=False), data(rng, t, edges=False)
        want = expect(name, a, b)
        got = f(cukit.to_device(a), cukit.to_device(b)).get()
        cond = 1.0
        if name == "power" and np.dtype(t).kind == "c":
            # a**b = exp(b log a): an error of eps in log a becomes |b log a| eps in the
            # result, in numpy's computation as in ours (CI saw 4.3e-6 at |a**b| = 1.6e9)
            finite = np.isfinite(want) & (want != 0)
            cond = max(1.0, float(np.log(np.abs(want[finite])).max())) if finite.any() else 1.0
        same(got, want, f"{name} {t}",
             approx=name in APPROX and (np.dtype(t).kind == "c" or name in
                                        ("power", "arctan2", "hypot")), cond=cond)


@gpu
@pytest.mark.parametrize("name", UNARY)
def test_unary_every_dtype(name, rng, compiled):
    f = UFUNCS[name]
    for t in loop_dtypes(f):
        kind = np.dtype(t).kind
        a = data(rng, t, edges=kind != "c" or name in
                 ("negative", "positive", "conjugate", "isnan", "isinf", "isfinite"))
        exact_float = kind == "f" and name in ("sqrt", "absolute", "sign", "reciprocal", "square")
        want = expect(name, a)
        got = f(cukit.to_device(a)).get()
        same(got, want, f"{name} {t}", approx=name in APPROX and not exact_float)


@gpu
@pytest.mark.parametrize("a,b", MIXED)
def test_mixed_dtypes_promote_in_the_kernel(a, b, rng, compiled):
    x, y = data(rng, a), data(rng, b)
    for name in ("add", "multiply", "less", "equal", "maximum", "true_divide"):
        same(UFUNCS[name](cukit.to_device(x), cukit.to_device(y)).get(), expect(name, x, y),
             name, approx=name == "true_divide" and "complex" in (a + b))


@gpu
@pytest.mark.parametrize("t", TESTED)
def test_operators_with_python_scalars(t, rng, compiled):
    x = data(rng, t)
    d = cukit.to_device(x)
    kind = np.dtype(t).kind
    s = {"b": True, "i": 3, "u": 3, "f": 2.5, "c": 1.5 - 2j}[kind]
    same((d + s).get(), x + s)
    same((s + d).get(), s + x)
    same((d * s).get(), x * s, approx=kind == "c")
    same((d < s).get(), x < s)
    if kind in "iu":
        with pytest.raises(OverflowError, match=r"Python integer \d+ out of bounds for"):
            d + 1000 if np.dtype(t).itemsize == 1 else d + 2**70
        same((d == -1).get(), x == -1)   # comparisons take any Python int, as numpy 2
        same((d < 2**70).get(), x < 2**70)


@gpu
def test_every_operator(rng, compiled):
    x = data(rng, "int32", small=True, edges=False) + 1
    y = data(rng, "int32", small=True, edges=False)
    a, b = cukit.to_device(x), cukit.to_device(y)
    with np.errstate(all="ignore"):
        for op in ("+", "-", "*", "//", "%", "**", "<<", ">>", "&", "|", "^",
                   "<", "<=", "==", "!=", ">", ">="):
            same(eval(f"a {op} b").get(), eval(f"x {op} y"), op)
        same((a / b).get(), x / y)
        same((-a).get(), -x)
        same((+a).get(), +x)
        same(abs(a).get(), abs(x))
        same((~a).get(), ~x)
        c = a.copy()
        c += b
        c *= 2
        c -= 1
        same(c.get(), (x + y) * 2 - 1)
    assert bool(cukit.to_device(np.array([3]))) is True
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        a ** -1


@gpu
def test_numpy_scalars_are_strong(rng, compiled):
    x = data(rng, "float16")
    d = cukit.to_device(x)
    same((d + np.float32(1.5)).get(), x + np.float32(1.5))
    same((np.float64(2) * d).get(), np.float64(2) * x)
    same((d + 1.5).get(), x + 1.5)  # weak: stays float16


# ------------------------------------------------------------------ GPU: layouts

@gpu
@pytest.mark.parametrize("sa,sb", [((3, 1), (1, 4)), ((), (5,)), ((2, 0, 3), (1, 3)),
                                   ((4, 1, 6), (5, 1)), ((1,), (7, 1))])
def test_broadcasting(sa, sb, rng, compiled):
    x = rng.standard_normal(sa).astype(np.float32)
    y = rng.standard_normal(sb).astype(np.float32)
    same(cukit.add(cukit.to_device(x), cukit.to_device(y)).get(), np.add(x, y))
    same((cukit.to_device(x) < 0.5).get(), x < 0.5)


@gpu
def test_strided_transposed_and_negative_step_views(rng, compiled):
    x = rng.standard_normal((6, 8, 5, 3)).astype(np.float32)
    y = rng.standard_normal((3, 5, 8, 6)).astype(np.float32)
    a, b = cukit.to_device(x), cukit.to_device(y)
    pairs = [(a[::2, 1::3], a[::-2, ::3], x[::2, 1::3], x[::-2, ::3]),
             (a.transpose(3, 2, 1, 0), b, x.transpose(3, 2, 1, 0), y),
             (a[:, ::-1, 2], b.T[:, :, 2], x[:, ::-1, 2], y.T[:, :, 2]),
             (a[..., ::-2], b.T[..., ::-2], x[..., ::-2], y.T[..., ::-2])]
    for va, vb, wa, wb in pairs:
        same(cukit.multiply(va, vb).get(), np.multiply(wa, wb))
        same(cukit.subtract(va, 1.0).get(), wa - np.float32(1))
    big = rng.standard_normal((3, 4, 5, 6, 7)).astype(np.float64)
    v = cukit.to_device(big).transpose(4, 0, 3, 1, 2)[::-1]
    same(cukit.sqrt(v).get(), np.sqrt(big.transpose(4, 0, 3, 1, 2)[::-1]), approx=True)


@gpu
@pytest.mark.parametrize("shape", [(67, 45), (32, 32), (5, 300), (1000, 33)])
@pytest.mark.parametrize("t", ["float32", "float16", "int8", "complex128"])
def test_transposed_2d_operands_use_tiles(shape, t, rng, compiled):
    """Inputs transposed relative to the output (the tiled kernel): every element."""
    x, y = data(rng, t, n=shape[0] * shape[1]).reshape(shape), data(rng, t, n=shape[0] * shape[1]).reshape(shape)
    a, b = cukit.to_device(x), cukit.to_device(y)
    with np.errstate(all="ignore"):
        same(cukit.add(a.T, b.T).get(), x.T + y.T)                 # both tiled
        same(cukit.add(a.T, b[:, ::-1].T).get(), x.T + y[:, ::-1].T)
        same(cukit.subtract(a.T[::-1], 1).get(), x.T[::-1] - 1)   # negative steps
        m = cukit.to_device(x.T.copy())
        same((a.T * m).get(), x.T * x.T.copy(), approx=np.dtype(t).kind == "c")  # one tiled, one direct
        out = cukit.to_device(poison(shape, t))
        cukit.add(a, m.T, out=out)                                  # out= sets the order
        same(out.get(), x + x)
        ot = cukit.to_device(poison(shape[::-1], t)).T              # a transposed out=
        cukit.multiply(a, b, out=ot)
        same(ot.get(), x * y, approx=np.dtype(t).kind == "c")
        c = x > y if np.dtype(t).kind != "c" else x.real > y.real
        same(cukit.where(cukit.to_device(c.T.copy()).T, a, b).get(), np.where(c, x, y))
    k = cukit.ElementwiseKernel("T x, T y", "T z", "z = x + y + y", "tiled_ek")
    # Kernel code is C++: float16 operands are float in its arithmetic, rounded once
    # when z is stored (numpy rounds each + to float16).
    w = np.float32 if t == "float16" else t
    xw, yw = x.astype(w), y.astype(w)
    with np.errstate(all="ignore"):
        same(k(a.T, b).get() if shape[0] == shape[1] else k(a.T, b.T).get(),
             ((xw.T + yw + yw) if shape[0] == shape[1] else (xw.T + yw.T + yw.T)).astype(t))


@gpu
def test_where_argument(rng, compiled):
    x, y = rng.standard_normal((4, 50)).astype(np.float32), rng.standard_normal(50).astype(np.float32)
    m = rng.random((4, 50)) < 0.5
    a, b, M = cukit.to_device(x), cukit.to_device(y), cukit.to_device(m)
    out = cukit.to_device(poison((4, 50), np.float32))
    o0 = out.get()
    assert cukit.add(a, b, out=out, where=M) is out
    same(out.get(), np.add(x, y, out=o0.copy(), where=m))
    got = cukit.sqrt(a, where=M).get()                  # no out=: only where True is defined
    with np.errstate(all="ignore"):
        same(got[m], np.sqrt(x)[m], approx=True)
    row = rng.random(50) < 0.5                          # the mask broadcasts, and can widen
    out = cukit.to_device(poison((4, 50), np.float64))
    cukit.multiply(a, 2.0, out=out, where=cukit.to_device(row))
    same(out.get(), np.multiply(x, 2.0, out=poison((4, 50), np.float64), where=row))
    wide = cukit.add(b, 1.0, where=M)                   # shape (4, 50) from the mask
    assert wide.shape == (4, 50)
    same(wide.get()[m], (y + np.float32(1))[np.nonzero(m)[1]])
    out = cukit.to_device(poison((4, 50), np.float32))
    cukit.add(a, b, out=out, where=False)
    same(out.get(), poison((4, 50), np.float32))
    cukit.add(a, b, out=out, where=True)
    same(out.get(), x + y)
    mt = cukit.to_device(m.T.copy()).T                 # a transposed mask (tiled)
    out = cukit.to_device(poison((4, 50), np.float32))
    cukit.negative(a, out=out, where=mt)
    same(out.get(), np.negative(x, out=poison((4, 50), np.float32), where=m))
    with pytest.raises(TypeError, match=r"Cannot cast array data from dtype\('int32'\) to "
                                        r"dtype\('bool'\) according to the rule 'safe'"):
        cukit.add(a, b, where=cukit.to_device(m.astype(np.int32)))
    with pytest.raises(TypeError, match="where= is a numpy array in host memory"):
        cukit.add(a, b, where=m)
    with pytest.raises(ValueError, match="could not be broadcast"):
        cukit.add(a, b, where=cukit.to_device(np.ones(3, bool)))
    with pytest.raises(TypeError, match="where= takes a bool cukit.Array or True/False, not str"):
        cukit.add(a, b, where="yes")


@gpu
def test_dtype_argument(rng, compiled):
    i = data(rng, "int32", edges=False)
    f = data(rng, "float32", edges=False)
    d = data(rng, "float64", edges=False)
    I, F, D = map(cukit.to_device, (i, f, d))
    same(cukit.add(I, I, dtype=np.float32).get(), np.add(i, i, dtype=np.float32))
    same(cukit.sqrt(I, dtype="float32").get(), np.sqrt(i, dtype=np.float32), approx=True)
    same(cukit.add(F, F, dtype=np.float16).get(), np.add(f, f, dtype=np.float16))   # inputs round first
    same(cukit.multiply(D, 3, dtype=np.float32).get(), np.multiply(d, 3, dtype=np.float32))
    same(cukit.add(I, 7, dtype=np.int8).get(), np.add(i, 7, dtype=np.int8))
    same(cukit.less(I, F, dtype=bool).get(), np.less(i, f, dtype=bool))
    out = cukit.to_device(poison(len(i), np.float64))
    cukit.add(I, I, out=out, dtype=np.float32)
    same(out.get(), np.add(i, i, dtype=np.float32).astype(np.float64))
    with pytest.raises(TypeError, match=r"Cannot cast ufunc 'add' input 0 from dtype\('float64'\)"):
        cukit.add(D, D, dtype=np.int32)
    with pytest.raises(TypeError, match="No loop matching the specified signature"):
        cukit.less(I, I, dtype=np.float64)
    with pytest.raises(TypeError, match="does not support dtype"):
        cukit.add(I, I, dtype="S3")


@gpu
def test_out_and_aliasing(rng, compiled):
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    a, b = cukit.to_device(x), cukit.to_device(y)
    out = cukit.to_device(poison(1000, np.float32))
    assert cukit.add(a, b, out=out) is out
    same(out.get(), x + y)
    cukit.multiply(a, b, out=a)            # out= is an input: elementwise
    same(a.get(), x * y)
    a = cukit.to_device(x)
    cukit.add(a[1:], a[:-1], out=a[1:])    # partial overlap: as if the input were copied
    want = x.copy()
    want[1:] = x[1:] + x[:-1]
    same(a.get(), want)
    o64 = cukit.to_device(poison(1000, np.float64))
    cukit.add(cukit.to_device(x), cukit.to_device(y), out=o64)   # same_kind: float32 -> float64
    same(o64.get(), (x + y).astype(np.float64))
    t = cukit.to_device(poison((10, 100), np.float32)).T      # a strided out=
    cukit.add(cukit.to_device(x.reshape(100, 10)), 1.0, out=t)
    same(t.get(), x.reshape(100, 10) + np.float32(1))


@gpu
def test_bad_inputs(rng, compiled):
    a = cukit.to_device(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"could not be broadcast together with shapes \(2, 3\) \(4,\)"):
        a + cukit.to_device(np.ones(4, np.float32))
    with pytest.raises(ValueError, match=r"non-broadcastable output operand with shape \(3,\)"):
        cukit.add(a, a, out=cukit.to_device(np.ones(3, np.float32)))
    with pytest.raises(TypeError, match=r"Cannot cast ufunc 'add' output from dtype\('float32'\) "
                                        r"to dtype\('int32'\) with casting rule 'same_kind'"):
        cukit.add(a, a, out=cukit.to_device(np.ones((2, 3), np.int32)))
    i = cukit.to_device(np.ones(3, np.int64))
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output from dtype.'float64'."):
        i += 1.5
    with pytest.raises(TypeError, match="numpy array cannot be mixed .* cukit.to_device"):
        a + np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="numpy array cannot be mixed .* cukit.to_device"):
        np.ones((2, 3), np.float32) + a
    with pytest.raises(TypeError, match="numpy array cannot be mixed"):
        cukit.add(a, np.ones(3))
    with pytest.raises(TypeError, match="boolean subtract"):
        cukit.to_device(np.ones(2, bool)) - cukit.to_device(np.ones(2, bool))
    with pytest.raises(TypeError, match="boolean negative"):
        -cukit.to_device(np.ones(2, bool))
    with pytest.raises(TypeError, match="cukit.bitwise_and does not support the input types "
                                        "float32, float32"):
        a & a
    with pytest.raises(TypeError, match="needs at least one cukit.Array"):
        cukit.add(2, 3)
    with pytest.raises(TypeError, match="expected a cukit.Array or a Python or numpy scalar, got list"):
        cukit.add(a, [1, 2, 3])
    with pytest.raises(TypeError, match="unsupported operand"):
        a + "x"
    with pytest.raises(TypeError, match="unexpected keyword argument 'casting'"):
        cukit.add(a, a, casting="unsafe")
    with pytest.raises(ValueError, match=r"truth value of an array with 6 elements is ambiguous; "
                       r"use a.any\(\) or a.all\(\)"):
        bool(a)
    with pytest.raises(ValueError, match="out= is read-only"):
        cukit.add(a, a, out=_readonly_view())
    b = cukit.to_device(np.ones(3))
    b.free()
    with pytest.raises(ValueError, match="freed"):
        b + 1
    with pytest.raises(TypeError, match="does not support dtype"):
        cukit.to_device(np.zeros(3, "S4")) + 1


def _readonly_view():
    class RO:
        def __init__(self):
            self.a = cukit.to_device(np.ones((2, 3), np.float32))
            cai = dict(self.a.__cuda_array_interface__)
            cai["data"] = (cai["data"][0], True)
            self.__cuda_array_interface__ = cai
    return cukit.asarray(RO())


@gpu
@pytest.mark.skipif(cukit.device_count() < 2, reason="needs two GPUs")
def test_two_devices():
    a = cukit.to_device(np.ones(3), device=0)
    b = cukit.to_device(np.ones(3), device=1)
    with pytest.raises(ValueError, match="device 0 and device 1"):
        a + b


@gpu
def test_stream_and_capture(rng, compiled):
    x = rng.standard_normal(4096).astype(np.float32)
    s = cukit.Stream()
    a = cukit.to_device(x, stream=s)
    out = cukit.sqrt(cukit.absolute(a, stream=s), stream=s)  # all on s: ordered
    s.synchronize()
    same(out.get(), np.sqrt(np.abs(x)), approx=True)


# ------------------------------------------------------------------ GPU: functions

@gpu
def test_where_clip_astype(rng, compiled):
    x = data(rng, "float32")
    y = data(rng, "int16")
    c = x > 0
    same(cukit.where(cukit.to_device(c), cukit.to_device(x), cukit.to_device(y)).get(),
         np.where(c, x, y))
    same(cukit.where(cukit.to_device(c), cukit.to_device(x), 0.0).get(), np.where(c, x, np.float32(0)))
    same(cukit.clip(cukit.to_device(x), -1.0, 2.0).get(), np.clip(x, -1.0, 2.0))
    same(cukit.clip(cukit.to_device(x), None, 2.0).get(), np.clip(x, None, 2.0))
    for got, want in zip(cukit.where(cukit.to_device(c)), np.where(c)):  # nonzero
        same(got.get(), want)
    with pytest.raises(ValueError, match="both or neither"):
        cukit.where(cukit.to_device(c), 1.0)
    for src, dst in [("float32", "float16"), ("float64", "int32"), ("int64", "float32"),
                     ("complex64", "float32"), ("float32", "bool"), ("int8", "uint8"),
                     ("bool", "float64"), ("float16", "complex128")]:
        v = data(rng, src, edges=False)
        with np.errstate(all="ignore"):
            want = v.astype(dst) if np.dtype(src).kind != "c" else v.real.astype(dst)
        same(cukit.to_device(v).astype(dst).get(), want, f"{src}->{dst}")
    a = cukit.to_device(x)
    assert a.astype(np.float32, copy=False) is a
    same(a[::3].astype(np.float64).get(), x[::3].astype(np.float64))


@gpu
def test_creation_functions(compiled):
    same(cukit.arange(10).get(), np.arange(10))
    same(cukit.arange(2, 20, 3).get(), np.arange(2, 20, 3))
    same(cukit.arange(10, 0, -3).get(), np.arange(10, 0, -3))
    same(cukit.arange(0.0, 1.0, 0.1).get(), np.arange(0.0, 1.0, 0.1))
    same(cukit.arange(1.5, 9, 0.37, dtype=np.float32).get(), np.arange(1.5, 9, 0.37, dtype=np.float32))
    same(cukit.arange(0, 3, 0.25, dtype=np.float16).get(), np.arange(0, 3, 0.25, dtype=np.float16))
    same(cukit.linspace(0, 1, 11).get(), np.linspace(0, 1, 11))
    same(cukit.linspace(-3.5, 7.25, 100, endpoint=False).get(), np.linspace(-3.5, 7.25, 100, endpoint=False))
    same(cukit.linspace(0, 10, 7, dtype=np.int32).get(), np.linspace(0, 10, 7, dtype=np.int32))
    same(cukit.linspace(2, 3, 1).get(), np.linspace(2, 3, 1))
    arr, step = cukit.linspace(0, 1, 5, retstep=True)
    assert step == 0.25
    same(cukit.full((2, 3), 7, np.int16).get(), np.full((2, 3), 7, np.int16))
    same(cukit.ones(4).get(), np.ones(4))
    z = cukit.to_device(np.zeros((3, 2), np.complex64))
    same(cukit.ones_like(z).get(), np.ones((3, 2), np.complex64))
    same(cukit.full_like(z, 2 - 1j).get(), np.full((3, 2), 2 - 1j, np.complex64))
    with pytest.raises(ZeroDivisionError, match="step is zero"):
        cukit.arange(0, 5, 0)


@gpu
def test_concatenate_stack(rng, compiled):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.integers(0, 9, (4, 3)).astype(np.int16)
    c = rng.standard_normal((2, 5)).astype(np.float64)
    A, B, C = map(cukit.to_device, (a, b, c))
    same(cukit.concatenate([A, B]).get(), np.concatenate([a, b]))
    same(cukit.concatenate([A, C], axis=1).get(), np.concatenate([a, c], axis=1))
    same(cukit.concatenate([A.T, C.T], axis=0).get(), np.concatenate([a.T, c.T], axis=0))
    same(cukit.concatenate([A, B.T], axis=None).get(), np.concatenate([a, b.T], axis=None))
    same(cukit.stack([A, A[::-1]]).get(), np.stack([a, a[::-1]]))
    same(cukit.stack([A, A], axis=-1).get(), np.stack([a, a], axis=-1))
    with pytest.raises(ValueError, match="dimensions except for the concatenation axis must match"):
        cukit.concatenate([A, C])
    with pytest.raises(ValueError, match="same shape"):
        cukit.stack([A, B])
    with pytest.raises(TypeError, match="not a cukit.Array .copy host data with cukit.to_device"):
        cukit.concatenate([A, a])


@gpu
def test_real_imag_conj(rng, compiled):
    z = data(rng, "complex128", edges=False)
    Z = cukit.to_device(z)
    same(Z.real.get(), z.real)
    same(cukit.imag(Z).get(), z.imag)
    same(Z.conj().get(), z.conj())
    Z.imag.fill(0.5)                        # a view: writes reach the array
    same(Z.get(), z.real + 0.5j)
    r = cukit.to_device(z.real)
    assert r.real is r
    same(r.imag.get(), np.zeros_like(z.real))


# ------------------------------------------------------------------ GPU: ElementwiseKernel, fuse

@gpu
def test_elementwise_kernel(rng, compiled):
    saxpy = cukit.ElementwiseKernel("T x, float32 a, T y", "T z", "z = a * x + y", "saxpy")
    x, y = (rng.standard_normal(10001).astype(np.float32) for _ in range(2))
    got = saxpy(cukit.to_device(x), 2.5, cukit.to_device(y)).get()
    same(got, np.float32(2.5) * x + y, approx=True)   # user code: the compiler may fuse a*x+y
    out = cukit.to_device(poison(10001, np.float32))
    assert saxpy(cukit.to_device(x), 2.5, cukit.to_device(y), out) is out
    same(out.get(), np.float32(2.5) * x + y, approx=True)
    m = rng.standard_normal((5, 1)).astype(np.float64)           # broadcast, float64 binding
    n = rng.standard_normal((1, 7)).astype(np.float64)
    same(saxpy(cukit.to_device(m), 3, cukit.to_device(n)).get(), np.float32(3) * m + n, approx=True)
    two = cukit.ElementwiseKernel("T x", "T s, T d", "s = x + x; d = x * x", "two")
    s, d = two(cukit.to_device(x)[::-2])
    same(s.get(), x[::-2] + x[::-2])
    same(d.get(), x[::-2] * x[::-2])
    shift = cukit.ElementwiseKernel("raw T x, T y", "T z",
                                    "z = x[(i + 1) % _ind.size()] - y", "shift")
    same(shift(cukit.to_device(x), cukit.to_device(y)).get(), np.roll(x, -1) - y)
    with pytest.raises(TypeError, match="placeholder T is bound to both float32 and float64"):
        saxpy(cukit.to_device(x), 1.0, cukit.to_device(y.astype(np.float64)))
    typed = cukit.ElementwiseKernel("float32 x", "float32 y", "y = x", "typed")
    with pytest.raises(TypeError, match="declared float32 but the array is int32.*astype"):
        typed(cukit.to_device(np.ones(3, np.int32)))
    with pytest.raises(TypeError, match="numpy array in host memory.*cukit.to_device"):
        typed(np.ones(3, np.float32))
    bad = cukit.ElementwiseKernel("T x", "T z", "z = x +* 2", "bad")
    with pytest.raises(cukit.CompileError, match=r"operation:1:\d+: error"):
        bad(cukit.to_device(x))


@gpu
def test_elementwise_kernel_loop_prep_and_after_loop(rng, compiled):
    x = rng.standard_normal(5000).astype(np.float32)
    w = cukit.to_device(poison(4, np.float32))
    k = cukit.ElementwiseKernel("T x, float32 a, raw T w", "T z", "z = x * s", "prep",
                                loop_prep="const T s = a * 2;",
                                after_loop="if (blockIdx.x == 0 && threadIdx.x == 0) w[1] = s;")
    same(k(cukit.to_device(x), 1.5, w).get(), x * np.float32(3))
    assert w.get()[1] == 3.0 and np.isnan(w.get()[0])
    same(k(cukit.to_device(x)[::-2], 0.5, w).get(), x[::-2] * np.float32(1))   # strided
    m = rng.standard_normal((40, 40)).astype(np.float32)
    same(k(cukit.to_device(m).T, 1.0, w).get(), m.T * np.float32(2))  # tiled
    bad = cukit.ElementwiseKernel("T x", "T z", "z = x", "badprep", loop_prep="int q = ;")
    with pytest.raises(cukit.CompileError, match=r"loop_prep:1:\d+: error"):
        bad(cukit.to_device(x))


@gpu
def test_elementwise_kernel_pycuda_range_slice_and_prep(rng, compiled):
    k = cukit.ElementwiseKernel("float a, float *x, float *z, float *w", "z[i] = a * x[i] + s",
                                "lin_prep", loop_prep="float s = 2 * a;",
                                after_loop="if (blockIdx.x == 0 && threadIdx.x == 0) w[1] = s;")
    n = 3001
    x = rng.standard_normal(n).astype(np.float32)
    X = cukit.to_device(x)
    for kw, idx in [({}, slice(None)), ({"range": slice(5, 2001, 3)}, slice(5, 2001, 3)),
                    ({"range": slice(2999, 10, -7)}, slice(2999, 10, -7)),
                    ({"slice": slice(None, None, -2)}, slice(None, None, -2)),
                    ({"slice": slice(-100, None)}, slice(-100, None))]:
        Z, W = cukit.to_device(poison(n, np.float32)), cukit.to_device(poison(4, np.float32))
        k(np.float32(1.5), X, Z, W, **kw)
        want = poison(n, np.float32)
        # Kernel code is compiled with NVRTC's defaults: a * x[i] + s is one fused
        # multiply-add, rounded once (exact in float64 here, then rounded to float32).
        want[idx] = (1.5 * x[idx].astype(np.float64) + 3.0).astype(np.float32)
        same(Z.get(), want, str(kw))
        assert W.get()[1] == 3.0 and np.isnan(W.get()[0])
    with pytest.raises(TypeError, match="give range= or slice=, not both"):
        k(np.float32(1), X, X, X, range=slice(0, 3), slice=slice(0, 3))
    with pytest.raises(ValueError, match="range= needs a stop"):
        k(np.float32(1), X, X, X, range=slice(3, None))
    with pytest.raises(ValueError, match="step cannot be zero"):
        k(np.float32(1), X, X, X, range=slice(0, 3, 0))
    with pytest.raises(TypeError, match="range= takes a slice object, not int"):
        k(np.float32(1), X, X, X, range=3)


@gpu
def test_elementwise_kernel_pycuda_form(rng, compiled):
    k = cukit.ElementwiseKernel("float a, float *x, float *y, float *z",
                                "z[i] = a*x[i] + y[i]", "lin_comb")
    x, y = (rng.standard_normal(3000).astype(np.float32) for _ in range(2))
    z = cukit.to_device(poison(3000, np.float32))
    k(np.float32(2), cukit.to_device(x), cukit.to_device(y), z)
    same(z.get(), np.float32(2) * x + y, approx=True)
    with pytest.raises(TypeError, match="float64"):
        k(2.0, cukit.to_device(x.astype(np.float64)), cukit.to_device(y), z)


@gpu
def test_fuse(rng, compiled):
    f = cukit.fuse(lambda x, a, b: a * x * x + b)
    x = rng.standard_normal(5000).astype(np.float32)
    same(f(cukit.to_device(x), 2.0, 1.0).get(), np.float32(2.0) * x * x + np.float32(1.0))
    xi = rng.integers(-100, 100, 5000).astype(np.int16)
    same(f(cukit.to_device(xi), 3, -7).get(), 3 * xi * xi - 7)
    with pytest.raises(OverflowError, match="Python integer 100000 out of bounds for int16"):
        f(cukit.to_device(xi), 100000, 1)

    @cukit.fuse
    def g(x, y):
        return cukit.where(x > y, cukit.sqrt(cukit.absolute(x)), y * 0.5), x.astype(np.float16)

    y = rng.standard_normal(5000)
    p, q = g(cukit.to_device(x), cukit.to_device(y))
    same(p.get(), np.where(x > y, np.sqrt(np.abs(x)), y * 0.5), approx=True)
    same(q.get(), x.astype(np.float16))
    with pytest.raises(TypeError, match="numpy array lives in host memory"):
        f(x, 1.0, 2.0)


def test_float32_fmod_remainder_floor_divide_by_subnormals():
    """fmodf's quotient guess is div.approx.f32, whose 1/y overflows for a subnormal y:
    the GPU scales first (an H100 gives numpy's answers bit for bit), and so must the
    emulator (it gave inf)."""
    rng = np.random.default_rng()
    n = 4096
    sign = lambda: rng.choice([-1, 1], n).astype(np.float32)  # noqa: E731
    y = rng.integers(1, 1 << 23, n).astype(np.uint32).view(np.float32) * sign()
    x = (rng.uniform(0, 1, n) * np.float32(2.0) ** rng.integers(-149, -100, n)).astype(
        np.float32) * sign()
    dx, dy = cukit.to_device(x), cukit.to_device(y)
    for name in ("fmod", "remainder", "floor_divide"):
        got, want = getattr(cukit, name)(dx, dy).get(), getattr(np, name)(x, y)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=name)


def test_dtype_like_arguments_resolve_the_same_every_time():
    """empty() resolves a type, a dtype or a name as numpy does, the first time and every
    time after (cukit remembers what these gave), any number of distinct ones, and still
    refuses a dtype that holds Python objects each time."""
    forms = [np.float32, np.dtype("float32"), "float32", "f4", "<f4", float, int, bool,
             np.int8, "uint16", np.dtype(">i4"), "complex64", np.dtype([("a", "i4"), ("b", "f8")])]
    forms += [f"V{n}" for n in range(1, 80)]  # more than the memo keeps
    for _ in range(3):
        for form in forms:
            got = cukit.empty(3, form)
            assert got.dtype == np.dtype(form) and got.itemsize == np.dtype(form).itemsize, form
    for _ in range(3):
        with pytest.raises(TypeError, match="holds Python objects"):
            cukit.empty(3, object)


def test_a_dtype_with_metadata_keeps_it():
    """numpy dtypes that differ only in metadata compare equal: each array keeps its own."""
    plain = np.dtype("float32")
    meta = np.dtype("float32", metadata={"unit": "m"})
    for _ in range(2):
        a, b = cukit.empty(2, plain), cukit.empty(2, meta)
        assert a.dtype.metadata is None and b.dtype.metadata == {"unit": "m"}
