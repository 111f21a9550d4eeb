"""cukit.linalg: numpy.linalg on the device, and the matmul switches.

The factorizations (LU, Cholesky, QR, the Hermitian eigensolver and the SVD) run in C
(csrc/linalg/solver.c) on cuSOLVER where it loads, else on cukit's own kernels (always
on the emulator); what numpy builds on them (solve, inv, det, lstsq, pinv, norms,
...) is written here over them and cukit's array math. Stacked matrices (..., M, N)
work everywhere numpy takes them. float32 and complex64 stay single precision,
float64 and complex128 double; integers are computed in float64, float16 in float32.
A singular matrix raises numpy's LinAlgError, read back from the factorization.
"""
import collections
import math

import numpy as np

from . import _cukit
from ._matmul import matmul, matmul_info, set_matmul_backend, set_tf32, tensordot  # noqa: F401

LinAlgError = np.linalg.LinAlgError

__all__ = [
    "LinAlgError", "solve", "inv", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh",
    "svd", "lstsq", "pinv", "matrix_rank", "matrix_power", "norm", "cond", "multi_dot",
    "tensorsolve", "tensorinv", "set_solver_backend", "solver_info",
    "matmul", "matmul_info", "set_matmul_backend", "set_tf32", "tensordot",
]

SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])
QRResult = collections.namedtuple("QRResult", ["Q", "R"])
EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])
LstsqResult = collections.namedtuple("LstsqResult", ["x", "residuals", "rank", "s"])

_Array = _cukit.Array


# ------------------------------------------------------------------ operands

def _unwrap(x, who):
    """(the cukit.Array of x, a function that wraps a result like x)."""
    if isinstance(x, _Array):
        return x, _same
    if isinstance(x, _cukit._PycudaArray):
        return x.array, x._result
    raise TypeError(f"cukit.linalg.{who}: the operand must be a cukit.Array (or a GPUArray), "
                    f"not {type(x).__name__}; pass cukit.to_device(x)")


def _same(a):
    return a


def _solve_dtype(*dtypes):
    """The dtype numpy.linalg computes in for these operands (float16 kept single)."""
    t = np.result_type(*dtypes)
    if t.kind == "c":
        return np.dtype(np.complex128 if t == np.clongdouble else t)
    if t in (np.float16, np.float32):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def _real(dtype):
    return np.dtype(np.float32) if dtype in (np.float32, np.complex64) else np.dtype(np.float64)


def _cast(a, dtype):
    return a if a.dtype == dtype else a.astype(dtype)


def _operand(x, who, square=False, matrix=True):
    a, wrap = _unwrap(x, who)
    if matrix and a.ndim < 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least "
                          f"two-dimensional")
    if square and a.shape[-1] != a.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return _cast(a, _solve_dtype(a.dtype)), wrap


def _check(info, message):
    """Raise LinAlgError when any factorization of the stack reported a failure."""
    if info.size and info.get().any():
        raise LinAlgError(message)


def _mT(a):
    """The last two axes swapped (a view)."""
    order = list(range(a.ndim))
    order[-1], order[-2] = order[-2], order[-1]
    return a.transpose(*order)


def _mH(a):
    """The conjugate transpose of the last two axes."""
    return _mT(a.conj() if a.dtype.kind == "c" else a)


def _contig(a):
    return a if a.is_contiguous else _cukit.ascontiguousarray(a)


def _broadcast(a, shape):
    """a broadcast to shape, materialised."""
    if tuple(a.shape) == tuple(shape):
        return a
    return _cukit.zeros(shape, a.dtype, device=a.device) + a


def _eye(n, dtype, batch=(), device=None):
    """Identity matrices (batch..., n, n), made on the device (zeros, then the diagonal:
    every (n + 1)-th element of each flattened matrix)."""
    count = int(np.prod(batch)) if batch else 1
    flat = _cukit.zeros((count, n * n), dtype, device=device)
    if n:
        flat[:, ::n + 1] = 1
    return flat.reshape(*(tuple(batch) + (n, n)))


# ------------------------------------------------------------------ solve, inv, det

def solve(a, b):
    """numpy.linalg.solve: x with a @ x = b; b of shape (M,) is a vector, (..., M, K)
    matrices; the stacks broadcast. LinAlgError when a matrix is singular."""
    x, wrap = _operand(a, "solve", square=True)
    y, _ = _unwrap(b, "solve")
    dtype = _solve_dtype(x.dtype, y.dtype)
    x, y = _cast(x, dtype), _cast(y, dtype)
    vector = y.ndim == 1
    if vector:
        y = y.reshape(y.shape[0], 1)
    if y.shape[-2] != x.shape[-1]:
        raise ValueError(f"cukit.linalg.solve: b has {y.shape[-2]} rows; the matrices are "
                         f"{x.shape[-1]} x {x.shape[-1]}")
    batch = tuple(np.broadcast_shapes(tuple(x.shape[:-2]), tuple(y.shape[:-2])))
    x = _broadcast(x, batch + tuple(x.shape[-2:]))
    y = _broadcast(y, batch + tuple(y.shape[-2:]))
    r, info = _cukit._solve(x, y)
    _check(info, "Singular matrix")
    return wrap(r.reshape(*r.shape[:-1]) if vector else r)


def inv(a):
    """numpy.linalg.inv: the inverse of each matrix. LinAlgError when one is singular."""
    x, wrap = _operand(a, "inv", square=True)
    r, info = _cukit._inv(x)
    _check(info, "Singular matrix")
    return wrap(r)


def slogdet(a):
    """numpy.linalg.slogdet: (sign, logabsdet) of each matrix; sign 0 and logabsdet -inf
    for a singular one."""
    x, wrap = _operand(a, "slogdet", square=True)
    lu, piv, _ = _cukit._lu_factor(x)
    sign, logabs = _cukit._lu_det(lu, piv)
    batch = tuple(x.shape[:-2])
    return SlogdetResult(wrap(sign.reshape(batch)), wrap(logabs.reshape(batch)))


def det(a):
    """numpy.linalg.det: the determinant of each matrix (sign * exp(logabsdet), as numpy
    computes it)."""
    x, wrap = _operand(a, "det", square=True)
    lu, piv, _ = _cukit._lu_factor(x)
    sign, logabs = _cukit._lu_det(lu, piv)
    d = sign * _cukit.exp(logabs)
    return wrap(d.reshape(tuple(x.shape[:-2])))


# ------------------------------------------------------------------ factorizations

def cholesky(a, /, *, upper=False):
    """numpy.linalg.cholesky: L with a = L @ L^H from a's lower triangle (upper=True:
    U = L^H). LinAlgError when a matrix is not positive definite."""
    x, wrap = _operand(a, "cholesky", square=True)
    lo, info = _cukit._cholesky(x)
    _check(info, "Matrix is not positive definite")
    return wrap(_contig(_mH(lo)) if upper else lo)


def qr(a, mode="reduced"):
    """numpy.linalg.qr by Householder reflections: mode 'reduced' (Q M x K, R K x N),
    'complete' (Q M x M, R M x N) or 'r' (R alone)."""
    modes = {"reduced": 0, "complete": 1, "r": 2}
    if mode not in modes:
        raise ValueError(f"cukit.linalg.qr: unrecognized mode {mode!r}; it takes 'reduced', "
                         f"'complete' or 'r'")
    x, wrap = _operand(a, "qr")
    q, r = _cukit._qr(x, modes[mode])
    return wrap(r) if mode == "r" else QRResult(wrap(q), wrap(r))


def _uplo(UPLO, who):
    if UPLO not in ("L", "U"):
        raise ValueError(f"cukit.linalg.{who}: UPLO argument must be 'L' or 'U', not {UPLO!r}")
    return UPLO == "L"


def eigh(a, UPLO="L"):
    """numpy.linalg.eigh: the eigenvalues (ascending) and eigenvectors (columns) of each
    Hermitian matrix, read from its lower ('L') or upper ('U') triangle."""
    lower = _uplo(UPLO, "eigh")
    x, wrap = _operand(a, "eigh", square=True)
    w, v, info = _cukit._eigh(x, lower, True)
    _check(info, "Eigenvalues did not converge")
    return EighResult(wrap(w), wrap(v))


def eigvalsh(a, UPLO="L"):
    """numpy.linalg.eigvalsh: the eigenvalues of each Hermitian matrix, ascending."""
    lower = _uplo(UPLO, "eigvalsh")
    x, wrap = _operand(a, "eigvalsh", square=True)
    w, _, info = _cukit._eigh(x, lower, False)
    _check(info, "Eigenvalues did not converge")
    return wrap(w)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """numpy.linalg.svd: U, S (descending) and Vh with a = U @ diag(S) @ Vh (the general
    algorithm serves hermitian=True too)."""
    x, wrap = _operand(a, "svd")
    full, uv = bool(full_matrices), bool(compute_uv)
    wide = x.shape[-2] < x.shape[-1]
    u, s, vh, info = _cukit._svd(_mH(x) if wide else x, full, uv)
    _check(info, "SVD did not converge")
    if not uv:
        return wrap(s)
    if wide:  # the SVD of a^H: a = vh^H diag(s) u^H
        u, vh = _contig(_mH(vh)), _contig(_mH(u))
    return SVDResult(wrap(u), wrap(s), wrap(vh))


# ------------------------------------------------------------------ built on the SVD

def _eps(dtype):
    return float(np.finfo(_real(dtype)).eps)


def lstsq(a, b, rcond=None):
    """numpy.linalg.lstsq: the least-squares solution x of a @ x = b (a 2-D), with the
    residuals' sums of squares (when a has full column rank and more rows than
    columns), a's rank (an int) and its singular values. rcond=None: eps * max(M, N)."""
    x, wrap = _operand(a, "lstsq")
    y, _ = _unwrap(b, "lstsq")
    if x.ndim != 2:
        raise LinAlgError(f"{x.ndim}-dimensional array given. Array must be two-dimensional")
    if y.ndim not in (1, 2):
        raise LinAlgError(f"{y.ndim}-dimensional array given. Array must be one or "
                          f"two-dimensional")
    m, n = x.shape
    if y.shape[0] != m:
        raise LinAlgError("Incompatible dimensions")
    dtype = _solve_dtype(x.dtype, y.dtype)
    x, y = _cast(x, dtype), _cast(y, dtype)
    vector = y.ndim == 1
    y2 = y.reshape(m, 1) if vector else y
    if rcond is None:
        rcond = _eps(dtype) * max(m, n)
    u, s, vh = svd(x, full_matrices=False)
    sh = s.get()
    cutoff = rcond * (sh.max() if sh.size else 0.0)
    keep = sh > cutoff
    rank = int(keep.sum())
    inv_s = np.zeros(sh.shape, sh.dtype)
    inv_s[keep] = 1 / sh[keep]
    scale = _cukit.to_device(inv_s.reshape(-1, 1), device=x.device)
    sol = matmul(_mH(vh), scale * matmul(_mH(u), y2))
    if rank == n and m > n:
        r = y2 - matmul(x, sol)
        resid = (_cukit.abs(r) ** 2).sum(axis=0)
    else:
        resid = _cukit.empty((0,), _real(dtype), device=x.device)
    return LstsqResult(wrap(sol.reshape(n) if vector else sol), wrap(resid), rank, wrap(s))


def pinv(a, rcond=None, hermitian=False, *, rtol=None):
    """numpy.linalg.pinv: the Moore-Penrose pseudo-inverse of each matrix from its SVD,
    singular values at or under rcond * the largest dropped (rcond=None: rtol, or
    max(M, N) * eps when neither is given)."""
    x, wrap = _operand(a, "pinv")
    if rcond is not None and rtol is not None:
        raise ValueError("cukit.linalg.pinv: rtol and rcond can't be both set")
    if rcond is None:
        rcond = rtol if rtol is not None else max(x.shape[-2:]) * _eps(x.dtype)
    m, n = x.shape[-2:]
    if m == 0 or n == 0:
        return wrap(_cukit.zeros(tuple(x.shape[:-2]) + (n, m), x.dtype, device=x.device))
    u, s, vh = svd(x, full_matrices=False)
    cutoff = s.max(axis=-1, keepdims=True) * rcond
    large = s > cutoff
    inv_s = _cukit.where(large, 1 / _cukit.where(large, s, 1), 0).astype(s.dtype)
    k = inv_s.shape[-1]
    res = matmul(_mH(vh), inv_s.reshape(*inv_s.shape[:-1], k, 1) * _mH(u))
    return wrap(res)


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """numpy.linalg.matrix_rank: the number of singular values over tol (default: the
    largest times rtol, itself max(M, N) * eps by default); a device array."""
    x, wrap = _unwrap(A, "matrix_rank")
    if x.ndim < 2:
        return int((_cukit.count_nonzero(x) if x.size else 0) != 0)
    x = _cast(x, _solve_dtype(x.dtype))
    s = svd(x, compute_uv=False)
    if tol is None:
        if rtol is None:
            rtol = max(x.shape[-2:]) * _eps(x.dtype)
        tol = s.max(axis=-1, keepdims=True) * rtol if s.shape[-1] else 0.0
    elif not isinstance(tol, (int, float)):
        tol, _ = _unwrap(tol, "matrix_rank")
        tol = tol.reshape(*tol.shape, 1)
    return wrap(_cukit.count_nonzero(s > tol, axis=-1))


def cond(x, p=None):
    """numpy.linalg.cond: the condition number of each matrix in norm p (None, 2, -2
    from the singular values; 'fro', 'nuc', 1, -1, inf, -inf as norm(x) * norm(inv(x)),
    inf for a singular matrix)."""
    a, wrap = _operand(x, "cond")
    if p in (None, 2, -2):
        s = svd(a, compute_uv=False)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
        return wrap(r)
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    try:
        ainv = inv(a)
    except LinAlgError:
        shape = tuple(a.shape[:-2])
        return wrap(_cukit.full(shape, np.inf, _real(a.dtype), device=a.device))
    return wrap(norm(a, p, axis=(-2, -1)) * norm(ainv, p, axis=(-2, -1)))


# ------------------------------------------------------------------ norms

_VECTOR_CODES = {None: 2, 2: 2, 1: 1, math.inf: 3, -math.inf: -3}


def _vector_norm(x, ord, axis, keepdims):
    if isinstance(ord, str):
        raise ValueError(f"cukit.linalg.norm: invalid norm order {ord!r} for vectors")
    code = _VECTOR_CODES.get(ord)
    if code is not None:
        return _cukit._vector_norm(x, code, axis, keepdims)
    ax = _cukit.abs(x)
    if ord == 0:
        return (ax != 0).astype(_real(x.dtype)).sum(axis=axis, keepdims=keepdims)
    p = float(ord)
    return (ax ** p).sum(axis=axis, keepdims=keepdims) ** (1.0 / p)


def _matrix_norm(x, ord, row, col, keepdims):
    nd = x.ndim
    if ord in (None, "fro", "f"):
        r = _cukit.sqrt((_cukit.abs(x) ** 2).sum(axis=(row, col)))
    elif ord in (1, -1, math.inf, -math.inf):
        sum_axis, over = (row, col) if ord in (1, -1) else (col, row)
        sums = _cukit.abs(x).sum(axis=sum_axis)
        over -= over > sum_axis
        r = sums.max(axis=over) if ord > 0 else sums.min(axis=over)
    elif ord in (2, -2, "nuc"):
        rest = [d for d in range(nd) if d not in (row, col)]
        s = svd(x.transpose(*rest, row, col), compute_uv=False)
        r = s.sum(axis=-1) if ord == "nuc" else s.max(axis=-1) if ord == 2 else s.min(axis=-1)
    else:
        raise ValueError(f"cukit.linalg.norm: invalid norm order {ord!r} for matrices")
    if keepdims:
        shape = list(x.shape)
        shape[row] = shape[col] = 1
        r = r.reshape(*shape)
    return r


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm: vector norms (ord None/2, 1, inf, -inf, 0, any p) over one
    axis, matrix norms (None/'fro', 'nuc', 1, -1, 2, -2, inf, -inf) over two; axis=None:
    the Frobenius/2-norm of every element for ord=None, else x must be 1-D or 2-D."""
    a, wrap = _unwrap(x, "norm")
    if a.dtype.kind not in "fc":
        a = a.astype(np.float64)
    nd = a.ndim
    if axis is None:
        if ord is None:
            r = _cukit._vector_norm(a, 2, None, False)
            return wrap(r.reshape(*([1] * nd)) if keepdims else r)
        if nd == 1:
            axis = (0,)
        elif nd == 2:
            axis = (0, 1)
        else:
            raise ValueError("cukit.linalg.norm: improper number of dimensions to norm")
    elif not isinstance(axis, tuple):
        try:
            axis = (int(axis),)
        except TypeError:
            raise TypeError("cukit.linalg.norm: 'axis' must be None, an integer or a tuple "
                            "of integers") from None
    axis = tuple(_norm_axis(ax, nd) for ax in axis)
    if len(axis) == 1:
        return wrap(_vector_norm(a, ord, axis[0], keepdims))
    if len(axis) == 2:
        if axis[0] == axis[1]:
            raise ValueError("cukit.linalg.norm: duplicate axes given")
        return wrap(_matrix_norm(a, ord, axis[0], axis[1], keepdims))
    raise ValueError("cukit.linalg.norm: improper number of dimensions to norm")


def _norm_axis(ax, nd):
    if not -nd <= ax < nd:
        raise np.exceptions.AxisError(ax, nd)
    return ax % nd


# ------------------------------------------------------------------ products and tensors

def matrix_power(a, n):
    """numpy.linalg.matrix_power: a ** n for an integer n by repeated squaring (n < 0:
    of inv(a); n == 0: the identity)."""
    x, wrap = _unwrap(a, "matrix_power")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    if not isinstance(n, (int, np.integer)):
        raise TypeError("cukit.linalg.matrix_power: exponent must be an integer")
    n = int(n)
    if n == 0:
        return wrap(_eye(x.shape[-1], x.dtype, x.shape[:-2], x.device))
    if n < 0:
        x = _unwrap(inv(x), "matrix_power")[0]
        n = -n
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return wrap(result if result is not x else result.copy())


def _chain_order(dims):
    """The split table of the cheapest parenthesisation of a matrix chain with
    dimensions dims (dims[i] x dims[i + 1] for matrix i)."""
    k = len(dims) - 1
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = math.inf
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s
    return split


def multi_dot(arrays, *, out=None):
    """numpy.linalg.multi_dot: the product of two or more matrices in the cheapest order
    (the first may be a 1-D row, the last a 1-D column)."""
    xs = [_unwrap(x, "multi_dot")[0] for x in arrays]
    if len(xs) < 2:
        raise ValueError("cukit.linalg.multi_dot: expecting at least two arrays")
    wrap = _unwrap(arrays[0], "multi_dot")[1]
    first_1d, last_1d = xs[0].ndim == 1, xs[-1].ndim == 1
    if first_1d:
        xs[0] = xs[0].reshape(1, xs[0].shape[0])
    if last_1d:
        xs[-1] = xs[-1].reshape(xs[-1].shape[0], 1)
    for x in xs:
        if x.ndim != 2:
            raise ValueError(f"cukit.linalg.multi_dot: {x.ndim}-dimensional array given; "
                             f"the arrays must be 2-D (the first and last may be 1-D)")
    split = _chain_order([xs[0].shape[0]] + [x.shape[1] for x in xs])

    def product(i, j):
        if i == j:
            return xs[i]
        s = split[i][j]
        return matmul(product(i, s), product(s + 1, j))

    r = product(0, len(xs) - 1)
    if first_1d and last_1d:
        r = r.reshape(())
    elif first_1d:
        r = r.reshape(r.shape[1])
    elif last_1d:
        r = r.reshape(r.shape[0])
    if out is not None:
        o, _ = _unwrap(out, "multi_dot")
        _cukit.copy(o, r)
        return out
    return wrap(r)


def tensorinv(a, ind=2):
    """numpy.linalg.tensorinv: the inverse of a under tensordot over its first `ind`
    axes."""
    x, wrap = _unwrap(a, "tensorinv")
    if ind <= 0:
        raise ValueError("cukit.linalg.tensorinv: ind must be a positive integer")
    outer, inner = tuple(x.shape[:ind]), tuple(x.shape[ind:])
    prod = int(np.prod(outer))
    if prod != int(np.prod(inner)):
        raise LinAlgError("cukit.linalg.tensorinv: the first ind axes and the rest must hold "
                          "as many elements")
    r = _unwrap(inv(_contig(x).reshape(prod, prod)), "tensorinv")[0]
    return wrap(r.reshape(*(inner + outer)))


def tensorsolve(a, b, axes=None):
    """numpy.linalg.tensorsolve: x with tensordot(a, x, x.ndim) = b."""
    x, wrap = _unwrap(a, "tensorsolve")
    y, _ = _unwrap(b, "tensorsolve")
    if axes is not None:
        order = [d for d in range(x.ndim) if d not in [ax % x.ndim for ax in axes]]
        order += [ax % x.ndim for ax in axes]
        x = x.transpose(*order)
    rest = tuple(x.shape[y.ndim:])
    prod = int(np.prod(rest))
    if int(np.prod(x.shape[:y.ndim])) != prod:
        raise LinAlgError("cukit.linalg.tensorsolve: a's shape does not make a square problem")
    sol = _unwrap(solve(_contig(x).reshape(prod, prod), _contig(y).reshape(prod)), "tensorsolve")[0]
    return wrap(sol.reshape(*rest))


# ------------------------------------------------------------------ the path

def set_solver_backend(name):
    """'auto' (cuSOLVER where it loads, else cukit's own kernels, said once), 'cusolver'
    (raise when it cannot load) or 'cukit' (always cukit's own kernels), for the
    factorizations. Returns the previous one. CUKIT_SOLVER sets the default."""
    return _cukit._solver_config(backend=name)["backend"]


def solver_info():
    """dict: backend, last (the path of the last factorization: 'cusolver', 'cukit' or
    None), cusolver (the library's path once loaded) and cusolver_version."""
    return _cukit._solver_config()


# ------------------------------------------------------------------ the array API's names

def _dev(x, who):
    if not isinstance(x, _Array):
        raise TypeError(f"cukit.linalg.{who}() takes a cukit.Array, not {type(x).__name__} "
                        "(copy host data with cukit.asarray first)")
    return x


def cross(x1, x2, /, *, axis=-1):
    """numpy.linalg.cross: the cross product of 3-vectors along axis (cukit.cross)."""
    from ._numeric import cross as _cross
    x1, x2 = _dev(x1, "cross"), _dev(x2, "cross")
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but "
                         f"they are {x1.shape[axis]} and {x2.shape[axis]} dimensional "
                         "instead.")
    return _cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset=0):
    """numpy.linalg.diagonal: the diagonals of the matrices in the last two axes (a
    view)."""
    return _dev(x, "diagonal").diagonal(offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    """numpy.linalg.trace: the sums of the diagonals of the matrices in the last two
    axes."""
    return _cukit.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def matrix_transpose(x, /):
    """numpy.linalg.matrix_transpose: the last two axes swapped (a view)."""
    from ._manip import matrix_transpose as _mt
    return _mt(_dev(x, "matrix_transpose"))


def outer(x1, x2, /):
    """numpy.linalg.outer: the outer product of two 1-D arrays."""
    from ._matmul import outer as _outer
    x1, x2 = _dev(x1, "outer"), _dev(x2, "outer")
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError("Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={x1.ndim} and x2.ndim={x2.ndim}.")
    return _outer(x1, x2)


def vecdot(x1, x2, /, *, axis=-1):
    """numpy.linalg.vecdot: sum over axis of conj(x1) * x2 (cukit.vecdot)."""
    from ._extra import vecdot as _vecdot
    return _vecdot(x1, x2, axis=axis)


def svdvals(x, /):
    """numpy.linalg.svdvals: the singular values, largest first (svd without vectors)."""
    return svd(_dev(x, "svdvals"), compute_uv=False)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """numpy.linalg.matrix_norm: the norm of the matrices in the last two axes."""
    return norm(_dev(x, "matrix_norm"), axis=(-2, -1), keepdims=keepdims, ord=ord)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """numpy.linalg.vector_norm: the vector norm over axis (an int, a tuple of axes
    taken as one vector, or None for all elements)."""
    x = _dev(x, "vector_norm")
    shape = list(x.shape)
    if axis is None:
        y, ax = x.ravel(), 0
    elif isinstance(axis, tuple):
        axes = np.lib.array_utils.normalize_axis_tuple(axis, x.ndim)
        rest = tuple(i for i in range(x.ndim) if i not in axes)
        y = x.transpose(*(axes + rest)).copy().reshape(
            (int(np.prod([x.shape[i] for i in axes], dtype=np.int64)),) +
            tuple(x.shape[i] for i in rest))
        ax = 0
    else:
        y, ax = x, axis
    res = norm(y, axis=ax, ord=ord)
    if keepdims:
        axes = np.lib.array_utils.normalize_axis_tuple(
            range(len(shape)) if axis is None else axis, len(shape))
        for i in axes:
            shape[i] = 1
        res = res.reshape(tuple(shape))
    return res


__all__ += ["cross", "diagonal", "trace", "matrix_transpose", "outer", "vecdot", "svdvals",
            "matrix_norm", "vector_norm"]
