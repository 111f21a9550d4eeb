"""cukit.linalg against numpy.linalg on fresh random data, stacked and single matrices of
the four dtypes: the factorizations, what is built on them, the norms, the errors. On
the emulator the factorizations run on cukit's own kernels; on a GPU the same tests run
on cuSOLVER, and the `gpu_hardware` tests put cuSOLVER, cukit's own kernels and numpy
side by side.

Tolerances (largest error over every element, relative to the largest magnitude of
the reference, on matrices kept well conditioned):
  solve, inv, det, slogdet, cholesky, lstsq, pinv, matrix_power: TOL
  qr (Q and R against numpy's, LAPACK's sign convention), eigh/eigvalsh values, svd values: TOL
  eigenvectors and singular vectors (defined up to a phase): checked through
  a @ v = v * w, v^H v = I and u diag(s) vh = a, each within 10 * TOL
with TOL 2e-4 for float32 and complex64, 1e-11 for float64 and complex128."""
import numpy as np
import pytest

import cukit
import cukit.linalg as la
from conftest import EMULATOR, poison

pytestmark = pytest.mark.gpu

DTYPES = ["f4", "f8", "c8", "c16"]
TOL = {"f4": 2e-4, "c8": 2e-4, "f8": 1e-11, "c16": 1e-11}
D = cukit.to_device


def fresh(rng, shape, dtype):
    dtype = np.dtype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def well(rng, shape, dtype):
    """Random square matrices made well conditioned (a diagonal of n added)."""
    n = shape[-1]
    return (fresh(rng, shape, dtype) + n * np.eye(n)).astype(dtype)


def hermitian_pd(rng, shape, dtype):
    a = fresh(rng, shape, dtype)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def dirty_pool(nbytes):
    """Leave a block of NaN in the pool, so a result that is not written shows."""
    x = cukit.to_device(poison((max(nbytes, 8) + 7) // 8, np.float64))
    x.free()


def host(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def close(got, want, dtype, factor=1.0):
    got = host(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert not np.isnan(got).any()
    scale = max(np.abs(want).max() if want.size else 0.0, 1.0)
    err = np.abs(got - want).max() if want.size else 0.0
    assert err <= TOL[dtype] * factor * scale, f"error {err / scale:.2e}, allowed {TOL[dtype] * factor:.1e}"


SHAPES = [(1, 1), (5, 5), (33, 33), (3, 7, 7), (2, 2, 4, 4)]


# ------------------------------------------------------------------ LU and what is built on it

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_inv_det(rng, dtype, shape):
    a = well(rng, shape, dtype)
    b = fresh(rng, shape[:-1] + (3,), dtype)
    dirty_pool(a.nbytes * 4)
    x = la.solve(D(a), D(b))
    assert x.dtype == a.dtype
    close(x, np.linalg.solve(a, b), dtype)
    close(la.inv(D(a)), np.linalg.inv(a), dtype)
    small = (a / shape[-1]).astype(dtype)          # determinants near 1, in range
    d = np.linalg.det(small)
    close(la.det(D(small)), d, dtype, factor=10)
    sign, logabs = la.slogdet(D(a))
    ns, nl = np.linalg.slogdet(a)
    close(sign, ns, dtype)
    close(logabs, nl, dtype)


def test_solve_shapes_as_numpy(rng):
    a = well(rng, (3, 4, 4), "f8")
    v = fresh(rng, (4,), "f8")
    close(la.solve(D(a[0]), D(v)), np.linalg.solve(a[0], v), "f8")       # b a vector
    b = fresh(rng, (4, 2), "f8")
    close(la.solve(D(a), D(b)), np.linalg.solve(a, b), "f8")             # b broadcast
    bb = fresh(rng, (3, 4, 2), "f8")
    close(la.solve(D(a[:1]), D(bb)), np.linalg.solve(a[:1], bb), "f8")  # a broadcast
    single = fresh(rng, (4, 2), "f4")
    assert la.solve(D(a[0]), D(single)).dtype == np.float64             # promoted


def test_strided_and_integer_operands(rng):
    a = well(rng, (6, 6), "f8")
    d = D(a)
    close(la.inv(d.T), np.linalg.inv(a.T), "f8")
    close(la.det(d[::-1, :]), np.linalg.det(a[::-1, :]), "f8", factor=10)
    ints = rng.integers(-5, 5, (4, 4)) + 20 * np.eye(4, dtype=np.int64)
    got = la.inv(D(ints))
    assert got.dtype == np.float64
    close(got, np.linalg.inv(ints), "f8")


def test_singular_matrices_raise_linalgerror():
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    for f in (la.solve, la.inv):
        args = (D(s), D(np.ones(2))) if f is la.solve else (D(s),)
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            f(*args)
    stack = np.stack([np.eye(2), s])
    with pytest.raises(la.LinAlgError, match="Singular matrix"):
        la.inv(D(stack))                        # one singular matrix of a stack is enough
    assert la.det(D(s)).get() == 0.0           # det does not raise, as numpy's
    sign, logabs = la.slogdet(D(s))
    assert sign.get() == 0 and logabs.get() == -np.inf


@pytest.mark.parametrize("dtype", DTYPES)
def test_small_systems_one_kernel_and_past_it(rng, dtype):
    """small_solve takes orders and right-hand sides up to 32 (a group of threads per
    matrix, several matrices a block); 33 right-hand sides go through the LU."""
    for shape, k in (((9, 32, 32), 32), ((20, 8, 8), 1), ((3, 16, 16), 33), ((5, 2, 2), 2)):
        a = well(rng, shape, dtype)
        b = fresh(rng, shape[:-1] + (k,), dtype)
        dirty_pool(a.nbytes * 4)
        close(la.solve(D(a), D(b)), np.linalg.solve(a, b), dtype, factor=shape[-1] ** 0.5)
        close(la.inv(D(a)), np.linalg.inv(a), dtype, factor=shape[-1] ** 0.5)
    # a zero column: an exact zero pivot in one matrix of a stack of 16 x 16
    a = well(rng, (4, 16, 16), dtype)
    a[2, :, 5] = 0
    with pytest.raises(la.LinAlgError, match="Singular matrix"):
        la.inv(D(a))
    a[2] = well(rng, (16, 16), dtype)
    a[1, 4, 7] = np.nan                         # NaN is not a zero pivot: NaN out, as numpy
    got = la.inv(D(a)).get()
    assert np.isnan(got[1]).all() == np.isnan(np.linalg.inv(a)[1]).all() and np.isnan(got[1]).any()
    close(got[[0, 2, 3]], np.linalg.inv(a[[0, 2, 3]]), dtype)
    strided = well(rng, (6, 5, 5), dtype)[::2].transpose(0, 2, 1)
    close(la.inv(D(strided)), np.linalg.inv(strided), dtype)


def test_layout_kernels_the_library_path_uses(rng):
    """transpose_tiles, reflect and eye_tiles (kernels/solver.cu) move cuSOLVER's
    column-major operands; they run only beside the library, so here they are compiled
    on their own and checked bit for bit on sizes that cut 32 x 32 tiles."""
    text = cukit._cukit._device_files()["linalg/kernels/solver.cu"]
    mod = cukit.Program(text, name="solver.cu").load()
    batch, rows, cols, ld, n = 2, 37, 45, 40, 45
    for letter, dtype in (("c", "c8"), ("d", "f8")):
        tt = mod.get_kernel(f"transpose_tiles_{letter}", signature="(const void *in, void *out, "
                            "int rows, int cols, int ld, long long s, long long t, int flags)")
        src = fresh(rng, (batch, cols, ld), dtype)
        for flags in (0, 1, 2, 3):
            out = D(poison((batch, rows, cols), dtype))
            tt(D(src), out, rows, cols, ld, cols * ld, rows * cols, flags, grid=(2 * batch, 2),
               block=(32, 8))
            want = np.swapaxes(src[:, :, :rows], 1, 2)
            want = np.conj(want) if flags & 1 else want
            want = np.triu(want) if flags & 2 else want
            assert np.array_equal(out.get(), want), flags
        rf = mod.get_kernel(f"reflect_{letter}", signature="(void *a, int n, int mode)")
        a = fresh(rng, (batch, n, n), dtype)
        ct = np.conj(np.swapaxes(a, 1, 2))
        for mode, want in ((0, np.tril(a) + np.triu(ct, 1)), (1, np.tril(ct)), (2, ct)):
            d = D(a)
            rf(d, n, mode, grid=(2 * batch, 2), block=(32, 8))
            assert np.array_equal(d.get(), want), mode
        ey = mod.get_kernel(f"eye_tiles_{letter}", signature="(void *a, int n)")
        d = D(poison((batch, n, n), dtype))
        ey(d, n, grid=(2 * batch, 2), block=(32, 8))
        assert np.array_equal(d.get(), np.broadcast_to(np.eye(n, dtype=dtype), (batch, n, n)))


def test_matrix_power(rng):
    a = well(rng, (2, 5, 5), "c16") / 5
    for n in (0, 1, 2, 3, 6, -1, -3):
        close(la.matrix_power(D(a), n), np.linalg.matrix_power(a, n), "c16", factor=10)


# ------------------------------------------------------------------ Cholesky

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky(rng, dtype, shape):
    a = hermitian_pd(rng, shape, dtype)
    dirty_pool(a.nbytes)
    close(la.cholesky(D(a)), np.linalg.cholesky(a), dtype, factor=shape[-1] ** 0.5)
    close(la.cholesky(D(a), upper=True), np.linalg.cholesky(a, upper=True), dtype,
          factor=shape[-1] ** 0.5)


def test_cholesky_reads_the_lower_triangle_and_raises(rng):
    a = hermitian_pd(rng, (5, 5), "f8")
    junk = np.triu(fresh(rng, (5, 5), "f8"), 1) + np.tril(a)
    close(la.cholesky(D(junk)), np.linalg.cholesky(a), "f8")
    with pytest.raises(la.LinAlgError, match="not positive definite"):
        la.cholesky(D(-np.eye(3)))


# ------------------------------------------------------------------ QR

@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (3, 9, 5), (1, 1)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_qr(rng, dtype, shape):
    a = fresh(rng, shape, dtype)
    q, r = la.qr(D(a))
    nq, nr = np.linalg.qr(a)
    close(q, nq, dtype, factor=10)
    close(r, nr, dtype, factor=10)
    q, r = la.qr(D(a), mode="complete")
    nq, nr = np.linalg.qr(a, mode="complete")
    assert q.shape == nq.shape and r.shape == nr.shape
    close(q.get() @ r.get(), a, dtype, factor=10)
    eye = np.eye(shape[-2])
    close(np.conj(np.swapaxes(q.get(), -1, -2)) @ q.get(), np.broadcast_to(eye, nq.shape), dtype,
          factor=10)
    close(la.qr(D(a), mode="r"), np.linalg.qr(a, mode="r"), dtype, factor=10)


# ------------------------------------------------------------------ eigh

@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (6, 6), (20, 20), (4, 5, 5)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh(rng, dtype, shape):
    a = fresh(rng, shape, dtype)
    a = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
    for uplo in ("L", "U"):
        w, v = la.eigh(D(a), UPLO=uplo)
        nw = np.linalg.eigvalsh(a, UPLO=uplo)
        assert w.dtype == nw.dtype and v.dtype == a.dtype
        close(w, nw, dtype, factor=10)
        close(la.eigvalsh(D(a), uplo), nw, dtype, factor=10)
        V, W = v.get(), w.get()
        close(a @ V, V * W[..., None, :], dtype, factor=10 * shape[-1] ** 0.5)
        close(np.conj(np.swapaxes(V, -1, -2)) @ V, np.broadcast_to(np.eye(shape[-1]), a.shape),
              dtype, factor=10)


def test_eigh_reads_one_triangle(rng):
    a = fresh(rng, (6, 6), "c16")
    h = (a + a.conj().T) / 2
    lower_only = np.tril(h) + np.triu(fresh(rng, (6, 6), "c16"), 1)
    close(la.eigvalsh(D(lower_only)), np.linalg.eigvalsh(h), "c16")
    with pytest.raises(ValueError, match="UPLO argument must be 'L' or 'U'"):
        la.eigh(D(h), UPLO="X")


# ------------------------------------------------------------------ SVD and what is built on it

@pytest.mark.parametrize("shape", [(1, 1), (6, 4), (4, 6), (8, 8), (3, 7, 5), (2, 3, 9)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_svd(rng, dtype, shape):
    a = fresh(rng, shape, dtype)
    m, n = shape[-2:]
    ns = np.linalg.svd(a, compute_uv=False)
    s = la.svd(D(a), compute_uv=False)
    assert s.dtype == ns.dtype
    close(s, ns, dtype, factor=10)
    for full in (True, False):
        u, s, vh = la.svd(D(a), full_matrices=full)
        nu, _, nvh = np.linalg.svd(a, full_matrices=full)
        assert u.shape == nu.shape and vh.shape == nvh.shape
        U, S, VH = u.get(), s.get(), vh.get()
        k = min(m, n)
        close((U[..., :, :k] * S[..., None, :]) @ VH[..., :k, :], a, dtype, factor=10)
        close(np.conj(np.swapaxes(U, -1, -2)) @ U,
              np.broadcast_to(np.eye(U.shape[-1]), U.shape[:-2] + (U.shape[-1],) * 2), dtype,
              factor=10)
        close(VH @ np.conj(np.swapaxes(VH, -1, -2)),
              np.broadcast_to(np.eye(VH.shape[-2]), VH.shape[:-1] + (VH.shape[-2],)), dtype,
              factor=10)


def test_svd_of_rank_deficient_matrices(rng):
    b = fresh(rng, (7, 2), "f8")
    a = b @ fresh(rng, (2, 5), "f8")                       # rank 2
    a[:, 4] = 0.0                                          # and an exact zero column
    u, s, vh = la.svd(D(a))
    close(s, np.linalg.svd(a, compute_uv=False), "f8", factor=10)
    U = u.get()
    close(U.T @ U, np.eye(7), "f8", factor=10)             # completed to an orthonormal set
    close((U[:, :5] * s.get()) @ vh.get(), a, "f8", factor=10)
    assert int(la.matrix_rank(D(a)).get()) == np.linalg.matrix_rank(a) == 2


@pytest.mark.parametrize("dtype", DTYPES)
def test_lstsq_pinv_rank_cond(rng, dtype):
    a = fresh(rng, (9, 4), dtype)
    b = fresh(rng, (9, 2), dtype)
    x, res, rank, s = la.lstsq(D(a), D(b))
    nx, nres, nrank, ns = np.linalg.lstsq(a, b)
    close(x, nx, dtype, factor=10)
    close(res, nres, dtype, factor=10)
    assert rank == nrank
    close(s, ns, dtype, factor=10)
    v = fresh(rng, (9,), dtype)
    close(la.lstsq(D(a), D(v))[0], np.linalg.lstsq(a, v)[0], dtype, factor=10)
    stack = fresh(rng, (3, 5, 7), dtype)
    close(la.pinv(D(stack)), np.linalg.pinv(stack), dtype, factor=10)
    np.testing.assert_array_equal(la.matrix_rank(D(stack)).get(), np.linalg.matrix_rank(stack))
    sq = well(rng, (2, 5, 5), dtype)
    for p in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf):
        close(la.cond(D(sq), p), np.linalg.cond(sq, p), dtype, factor=10)


# ------------------------------------------------------------------ norms

MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]
VECTOR_ORDS = [None, 0, 1, 2, 3, 0.5, -1, np.inf, -np.inf]


@pytest.mark.parametrize("dtype", DTYPES)
def test_norms(rng, dtype):
    a = fresh(rng, (3, 4, 5), dtype)
    d = D(a)
    for ord in MATRIX_ORDS:
        for axis in ((1, 2), (2, 0), (-1, -2)):
            for keepdims in (False, True):
                close(la.norm(d, ord, axis, keepdims), np.linalg.norm(a, ord, axis, keepdims),
                      dtype, factor=10)
        close(la.norm(d[0], ord), np.linalg.norm(a[0], ord), dtype, factor=10)
    for ord in VECTOR_ORDS:
        close(la.norm(d, ord, axis=1), np.linalg.norm(a, ord, axis=1), dtype, factor=10)
        close(la.norm(d[0, 0], ord), np.linalg.norm(a[0, 0], ord), dtype, factor=10)
    close(la.norm(d), np.linalg.norm(a), dtype)
    close(la.norm(d, keepdims=True), np.linalg.norm(a, keepdims=True), dtype)


def test_norm_errors():
    d = D(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="improper number of dimensions"):
        la.norm(d, 2)
    with pytest.raises(ValueError, match="invalid norm order 'fro' for vectors"):
        la.norm(d, "fro", axis=0)
    with pytest.raises(ValueError, match="invalid norm order 3 for matrices"):
        la.norm(d, 3, axis=(0, 1))
    with pytest.raises(ValueError, match="duplicate axes"):
        la.norm(d, axis=(1, 1))
    with pytest.raises(np.exceptions.AxisError):
        la.norm(d, axis=5)


# ------------------------------------------------------------------ products and tensors

def test_multi_dot_and_tensors(rng):
    ms = [fresh(rng, s, "f8") for s in [(4,), (4, 9), (9, 2), (2, 6), (6, 3), (3,)]]
    close(la.multi_dot([D(m) for m in ms]), np.linalg.multi_dot(ms), "f8")
    close(la.multi_dot([D(m) for m in ms[1:-1]]), np.linalg.multi_dot(ms[1:-1]), "f8")
    close(la.multi_dot([D(m) for m in ms[:2]]), np.linalg.multi_dot(ms[:2]), "f8")
    t = fresh(rng, (4, 6, 8, 3), "f8") + np.eye(24).reshape(4, 6, 8, 3) * 6
    close(la.tensorinv(D(t)), np.linalg.tensorinv(t), "f8", factor=10)
    a = fresh(rng, (6, 4, 2, 3, 4), "f8") + np.eye(24).reshape(6, 4, 2, 3, 4) * 6
    b = fresh(rng, (6, 4), "f8")
    close(la.tensorsolve(D(a), D(b)), np.linalg.tensorsolve(a, b), "f8", factor=10)


def test_gpuarrays_in_and_out(rng):
    from cukit.pycuda import gpuarray
    a = well(rng, (4, 4), "f4")
    g = la.inv(gpuarray.to_gpu(a))
    assert isinstance(g, gpuarray.GPUArray)
    close(g.array, np.linalg.inv(a), "f4")


def test_empty_matrices():
    assert la.det(D(np.zeros((0, 0)))).get() == 1.0
    assert la.inv(D(np.zeros((3, 0, 0)))).shape == (3, 0, 0)


# ------------------------------------------------------------------ errors

def test_bad_input_is_named():
    with pytest.raises(TypeError, match="must be a cukit.Array"):
        la.inv(np.eye(2))
    with pytest.raises(la.LinAlgError, match="must be square"):
        la.inv(D(np.ones((2, 3))))
    with pytest.raises(la.LinAlgError, match="at least two-dimensional"):
        la.det(D(np.ones(3)))
    with pytest.raises(ValueError, match="unrecognized mode 'raw'"):
        la.qr(D(np.eye(2)), mode="raw")
    with pytest.raises(ValueError, match="b has 3 rows"):
        la.solve(D(np.eye(2)), D(np.ones(3)))
    with pytest.raises(ValueError, match="'auto', 'cusolver' or 'cukit'"):
        la.set_solver_backend("fast")
    with pytest.raises(TypeError, match="dtype bool is not supported"):
        cukit._cukit._lu_factor(D(np.eye(2, dtype=bool)))


def test_the_path_is_observable(rng):
    la.inv(D(well(rng, (3, 3), "f4")))
    info = la.solver_info()
    if EMULATOR:
        assert info["last"] == "cukit"
    elif info["backend"] == "auto" and info["cusolver"]:
        assert info["last"] == "cusolver"


def test_cusolver_forced_on_the_emulator_says_why():
    if not EMULATOR:
        pytest.skip("the emulator's refusal")
    before = la.set_solver_backend("cusolver")
    try:
        with pytest.raises(cukit.NotSupportedError, match="needs a GPU"):
            la.inv(D(np.eye(2)))
    finally:
        la.set_solver_backend(before)


# ------------------------------------------------------------------ cuSOLVER beside cukit's own

def _cusolver_or_skip():
    before = la.set_solver_backend("cusolver")
    try:
        la.inv(D(np.eye(2)))
    except cukit.NotSupportedError:
        pytest.skip("cuSOLVER is not installed")
    finally:
        la.set_solver_backend(before)


@pytest.mark.gpu_hardware
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(70, 70), (200, 8, 8), (5, 40, 40), (130, 130)])
def test_cusolver_and_own_kernels_agree_with_numpy(rng, dtype, shape):
    """Each routine on both paths: the batched library routines for the small stacks
    (getrfBatched, potrfBatched, syevjBatched, gesvdjBatched), the one-matrix ones for
    the others."""
    _cusolver_or_skip()
    a = well(rng, shape, dtype)
    spd = hermitian_pd(rng, shape, dtype)
    h = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
    b = fresh(rng, shape[:-1] + (3,), dtype)
    tall = fresh(rng, shape[:-2] + (shape[-1] + 3, shape[-1]), dtype)
    n = shape[-1]
    for backend in ("cusolver", "cukit"):
        before = la.set_solver_backend(backend)
        try:
            close(la.solve(D(a), D(b)), np.linalg.solve(a, b), dtype)
            close(la.inv(D(a)), np.linalg.inv(a), dtype)
            close(la.slogdet(D(a))[1], np.linalg.slogdet(a)[1], dtype)
            close(la.cholesky(D(spd)), np.linalg.cholesky(spd), dtype, factor=n ** 0.5)
            close(la.eigvalsh(D(h)), np.linalg.eigvalsh(h), dtype, factor=10 * n ** 0.5)
            w, v = la.eigh(D(h))
            V, W = v.get(), w.get()
            close(h @ V, V * W[..., None, :], dtype, factor=10 * n)
            close(la.svd(D(tall), compute_uv=False), np.linalg.svd(tall, compute_uv=False), dtype,
                  factor=10 * n ** 0.5)
            u, s, vh = la.svd(D(tall), full_matrices=False)
            close((u.get() * s.get()[..., None, :]) @ vh.get(), tall, dtype, factor=10 * n)
            q, r = la.qr(D(tall))
            nq, nr = np.linalg.qr(tall)
            close(q, nq, dtype, factor=10 * n)
            close(r, nr, dtype, factor=10 * n)
            assert la.solver_info()["last"] == backend
        finally:
            la.set_solver_backend(before)
