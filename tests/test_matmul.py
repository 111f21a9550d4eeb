"""Matrix products: cukit.matmul and @ (cuBLAS on a GPU, cukit's own GEMM on the emulator),
dot, inner, outer and tensordot, against numpy on fresh random data."""
import numpy as np
import pytest

import cukit
from conftest import EMULATOR, poison

pytestmark = pytest.mark.gpu

FLOATS = ["f2", "f4", "f8", "c8", "c16"]
INTS = ["i1", "u1", "i2", "i4", "u4", "i8", "u8"]
# relative error allowed per unit of sqrt(k) * max|a| * max|b| (float16: stored result)
TOL = {"f2": 2e-3, "f4": 2e-6, "f8": 1e-14, "c8": 2e-6, "c16": 1e-14}


def fresh(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = (max(info.min, -100), min(info.max, 100))
        return rng.integers(lo, hi, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def check(got, a, b, op=np.matmul):
    """got (an Array) is numpy's op (matmul) of host arrays a and b."""
    want_np = op(a, b)
    host = got.get()
    assert host.shape == want_np.shape and host.dtype == want_np.dtype, \
        (host.shape, host.dtype, want_np.shape, want_np.dtype)
    if host.dtype.kind in "iub":
        np.testing.assert_array_equal(host, want_np)
        return
    wide = np.complex128 if host.dtype.kind == "c" else np.float64
    exact = op(np.asarray(a).astype(wide), np.asarray(b).astype(wide))
    k = np.shape(a)[-1]
    scale = np.sqrt(max(k, 1)) * max(np.abs(a).max(initial=0), 1e-30) * \
        max(np.abs(b).max(initial=0), 1e-30)
    tol = TOL[host.dtype.str[1:]] * scale
    err = np.abs(host.astype(wide) - exact).max(initial=0)
    assert err <= tol, f"max error {err} > {tol}"


def last_path():
    return cukit.linalg.matmul_info()["last"]


@pytest.fixture
def rng():
    return np.random.default_rng()


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_square_and_rectangular(rng, dtype):
    for m, k, n in [(33, 17, 45), (64, 64, 64), (1, 7, 5), (70, 1, 3)]:
        a, b = fresh(rng, (m, k), dtype), fresh(rng, (k, n), dtype)
        check(cukit.to_device(a) @ cukit.to_device(b), a, b)


@pytest.mark.parametrize("sa,sb", [
    ((3, 4, 5), (5, 2)), ((5, 2), (3, 2, 6)), ((2, 1, 4, 5), (3, 5, 6)),
    ((5,), (5, 3)), ((4, 5), (5,)), ((5,), (5,)), ((2, 3, 5), (5,)), ((7,), (2, 7, 3)),
    ((2, 3, 1, 4, 5), (3, 2, 5, 2)),
])
@pytest.mark.parametrize("dtype", ["f4", "c16", "i4"])
def test_batches_broadcast_and_vectors(rng, sa, sb, dtype):
    a, b = fresh(rng, sa, dtype), fresh(rng, sb, dtype)
    check(cukit.matmul(cukit.to_device(a), cukit.to_device(b)), a, b)


@pytest.mark.parametrize("dtype", ["f4", "f8", "c8"])
def test_any_strides(rng, dtype):
    a, b, c = fresh(rng, (9, 12), dtype), fresh(rng, (12, 10), dtype), fresh(rng, (9, 6), dtype)
    da, db, dc = cukit.to_device(a), cukit.to_device(b), cukit.to_device(c)
    pairs = [
        (lambda x, y, z: (x, y)),
        (lambda x, y, z: (x[::2, ::-1], y[::-1])),         # negative strides
        (lambda x, y, z: (x[:, ::3], y[::3])),             # steps: no unit stride at all
        (lambda x, y, z: (x[1::2, 2:], y[2:, ::2])),
        (lambda x, y, z: (x.T, z)),                        # transposed
        (lambda x, y, z: (y.T, x.T)),
    ]
    for pick in pairs:
        ha, hb = pick(a, b, c)
        va, vb = pick(da, db, dc)
        check(cukit.matmul(va, vb), ha, hb)
    # batched strides: a stack viewed with its batch dimension reversed and transposed matrices
    s, t = fresh(rng, (4, 6, 5), dtype), fresh(rng, (4, 6, 3), dtype)
    ds, dt = cukit.to_device(s), cukit.to_device(t)
    check(cukit.matmul(ds[::-1].transpose(0, 2, 1), dt[::-1]), s[::-1].transpose(0, 2, 1), t[::-1])


@pytest.mark.parametrize("da,db", [("f4", "f8"), ("i4", "f4"), ("i1", "u1"), ("f2", "c8"),
                                   ("i8", "u8")])
def test_result_dtype_is_numpys(rng, da, db):
    a, b = fresh(rng, (6, 5), da), fresh(rng, (5, 4), db)
    got = cukit.to_device(a) @ cukit.to_device(b)
    assert got.dtype == np.matmul(a, b).dtype
    check(got, a, b)


def test_out_contiguous_strided_and_overlapping(rng):
    a, b = fresh(rng, (2, 6, 5), "f4"), fresh(rng, (5, 7), "f4")
    da, db = cukit.to_device(a), cukit.to_device(b)
    out = cukit.to_device(poison((2, 6, 7), np.float32))
    assert cukit.matmul(da, db, out=out) is out
    check(out, a, b)
    big = cukit.to_device(poison((2, 7, 6), np.float32))
    view = big.transpose(0, 2, 1)                  # a strided out=
    assert cukit.matmul(da, db, out=view) is view
    check(view, a, b)
    sq = fresh(rng, (8, 8), "f8")
    dsq = cukit.to_device(sq)
    cukit.matmul(dsq, dsq, out=dsq)                # out= is an input: computed aside first
    check(dsq, sq, sq)


def test_empty_and_zero_k(rng):
    a, b = fresh(rng, (3, 0), "f4"), fresh(rng, (0, 4), "f4")
    got = cukit.to_device(a) @ cukit.to_device(b)
    np.testing.assert_array_equal(got.get(), np.zeros((3, 4), np.float32))
    e = cukit.to_device(fresh(rng, (0, 5), "f8")) @ cukit.to_device(fresh(rng, (5, 2), "f8"))
    assert e.shape == (0, 2)


def test_stream(rng):
    s = cukit.Stream()
    a, b = fresh(rng, (20, 30), "f4"), fresh(rng, (30, 10), "f4")
    got = cukit.matmul(cukit.to_device(a, stream=s), cukit.to_device(b, stream=s), stream=s)
    s.synchronize()
    check(got, a, b)


def test_the_path_is_observable(rng):
    a, b = fresh(rng, (16, 16), "f4"), fresh(rng, (16, 16), "f4")
    cukit.to_device(a) @ cukit.to_device(b)
    info = cukit.linalg.matmul_info()
    if EMULATOR:
        assert info["last"] == "cukit"             # no cuBLAS under the emulator
    elif info["backend"] == "auto" and info["cublas"]:
        assert info["last"] == "cublas"
    ai = fresh(rng, (16, 16), "i4")
    cukit.to_device(ai) @ cukit.to_device(ai)
    assert last_path() == "cukit"                   # integers: cuBLAS has no GEMM for them


def test_own_gemm_matches_on_every_backend(rng):
    """cukit's own GEMM forced: the same answers (on a GPU this checks it beside cuBLAS)."""
    before = cukit.linalg.set_matmul_backend("cukit")
    try:
        for dtype in FLOATS:
            a, b = fresh(rng, (2, 65, 33), dtype), fresh(rng, (33, 70), dtype)
            check(cukit.to_device(a) @ cukit.to_device(b), a, b)
            assert last_path() == "cukit"
    finally:
        cukit.linalg.set_matmul_backend(before)


@pytest.mark.skipif(EMULATOR, reason="cuBLAS needs a GPU")
def test_cublas_forced_and_tf32(rng):
    if not cukit.linalg.matmul_info()["cublas"]:
        try:
            cukit.linalg.set_matmul_backend("cublas")
            cukit.to_device(np.ones((2, 2), np.float32)) @ cukit.to_device(np.ones((2, 2), np.float32))
        except cukit.NotSupportedError:
            pytest.skip("cuBLAS is not installed")
        finally:
            cukit.linalg.set_matmul_backend("auto")
    before = cukit.linalg.set_matmul_backend("cublas")
    try:
        for dtype in FLOATS:
            a, b = fresh(rng, (3, 130, 257), dtype), fresh(rng, (257, 66), dtype)
            check(cukit.to_device(a) @ cukit.to_device(b), a, b)
            assert last_path() == "cublas"
        a, b = fresh(rng, (256, 1024), "f4"), fresh(rng, (1024, 256), "f4")
        exact = a.astype(np.float64) @ b.astype(np.float64)
        assert cukit.linalg.set_tf32(True) is False  # off by default
        try:
            fast = (cukit.to_device(a) @ cukit.to_device(b)).get()
        finally:
            assert cukit.linalg.set_tf32(False) is True
        exact_err = np.abs((cukit.to_device(a) @ cukit.to_device(b)).get() - exact).max()
        tf32_err = np.abs(fast - exact).max()
        assert tf32_err < 0.1 * np.sqrt(1024)          # TF32: about 3 decimal digits
        assert exact_err < 1e-3 and exact_err <= tf32_err
    finally:
        cukit.linalg.set_matmul_backend(before)


def test_cublas_forced_on_the_emulator_says_why():
    if not EMULATOR:
        pytest.skip("the emulator's refusal")
    before = cukit.linalg.set_matmul_backend("cublas")
    try:
        x = cukit.to_device(np.ones((2, 2), np.float32))
        with pytest.raises(cukit.NotSupportedError, match="needs a GPU"):
            x @ x
    finally:
        cukit.linalg.set_matmul_backend(before)


def test_dot_inner_outer_tensordot(rng):
    a, b, c = fresh(rng, (4, 5), "f8"), fresh(rng, (5, 3), "f8"), fresh(rng, (2, 5, 6), "f8")
    v, w = fresh(rng, (5,), "f8"), fresh(rng, (3,), "f8")
    da, db, dc, dv, dw = map(cukit.to_device, (a, b, c, v, w))
    check(cukit.dot(da, db), a, b, np.dot)
    check(cukit.dot(da, dc), a, c, np.dot)
    check(cukit.dot(dv, db), v, b, np.dot)
    check(cukit.dot(da, dv), a, v, np.dot)
    np.testing.assert_allclose(cukit.inner(da, cukit.to_device(fresh(rng, (3, 5), "f8"))).shape, (4, 3))
    x = fresh(rng, (3, 5), "f8")
    check(cukit.inner(da, cukit.to_device(x)), a, x, np.inner)
    np.testing.assert_allclose(cukit.outer(dv, dw).get(), np.outer(v, w))
    np.testing.assert_allclose(cukit.outer(da.T, dw).get(), np.outer(a.T, w))
    t1, t2 = fresh(rng, (3, 4, 5), "f8"), fresh(rng, (4, 3, 2), "f8")
    for axes in [([1, 0], [0, 1]), 0, ([0], [1]), ([0, 1], [1, 0])]:
        np.testing.assert_allclose(cukit.tensordot(cukit.to_device(t1), cukit.to_device(t2), axes).get(),
                                   np.tensordot(t1, t2, axes), rtol=1e-12, atol=1e-12)
    sq = fresh(rng, (4, 4), "f8")
    check(cukit.tensordot(cukit.to_device(sq), cukit.to_device(sq)), sq.ravel(), sq.ravel(), np.dot)
    check(da.dot(db), a, b, np.dot)                # the method too
    out = cukit.to_device(poison((4, 2, 6), np.float64))
    assert cukit.dot(da, dc, out=out) is out
    check(out, a, c, np.dot)


# ------------------------------------------------------------------ bad input

def test_bad_shapes():
    x = cukit.to_device(np.ones((3, 4), np.float32))
    y = cukit.to_device(np.ones((5, 2), np.float32))
    with pytest.raises(ValueError, match="shapes not aligned: operand 0 has 4 columns"):
        x @ y
    with pytest.raises(ValueError, match="batch dimensions do not broadcast: 2 against 3"):
        cukit.to_device(np.ones((2, 3, 4))) @ cukit.to_device(np.ones((3, 4, 2)))
    with pytest.raises(ValueError, match="operand 1 is 0-d"):
        x @ cukit.to_device(np.array(2.0, np.float32))
    with pytest.raises(ValueError, match="operand 1 is a scalar"):
        cukit.matmul(x, 2.0)
    with pytest.raises(ValueError, match="tensordot: shape mismatch"):
        cukit.tensordot(x, y, 1)


def test_bad_operands_and_dtypes():
    x = cukit.to_device(np.ones((3, 3), np.float32))
    with pytest.raises(TypeError, match="operand 1 is a numpy.ndarray; .*cukit.to_device"):
        cukit.matmul(x, np.ones((3, 3), np.float32))
    with pytest.raises(TypeError, match="operand 0 is a numpy.ndarray"):
        np.ones((3, 3), np.float32) @ x
    b = cukit.to_device(np.ones((3, 3), bool))
    with pytest.raises(TypeError, match="dtype bool is not supported"):
        b @ b
    x2 = cukit.to_device(np.ones((3, 3), np.float32))
    x2.free()
    with pytest.raises(ValueError, match="freed"):
        x @ x2


def test_bad_out():
    x = cukit.to_device(np.ones((3, 4), np.float32))
    y = cukit.to_device(np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match=r"out= has shape \(2, 3\); the result has shape \(3, 2\)"):
        cukit.matmul(x, y, out=cukit.empty((2, 3), np.float32))
    with pytest.raises(TypeError, match="out= has dtype float64; the result's dtype is float32"):
        cukit.matmul(x, y, out=cukit.empty((3, 2), np.float64))
    with pytest.raises(TypeError, match="out= must be a cukit.Array"):
        cukit.matmul(x, y, out=np.empty((3, 2), np.float32))


def test_bad_switches():
    with pytest.raises(ValueError, match="'auto', 'cublas' or 'cukit'"):
        cukit.linalg.set_matmul_backend("fast")
    assert cukit.linalg.matmul_info()["backend"] in ("auto", "cukit")


def test_bfloat16(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = np.dtype(ml_dtypes.bfloat16)
    a, b = fresh(rng, (3, 40, 33), "f4").astype(bf16), fresh(rng, (33, 70), "f4").astype(bf16)
    got = cukit.to_device(a) @ cukit.to_device(b)
    assert got.dtype == bf16 and got.shape == (3, 40, 70)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.sqrt(33) * np.abs(a.astype(np.float64)).max() * np.abs(b.astype(np.float64)).max()
    assert np.abs(got.get().astype(np.float64) - exact).max() <= 1e-2 * scale
