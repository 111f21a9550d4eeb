"""Matrix products around cukit.matmul (csrc/linalg/): numpy's dot, inner, outer and
tensordot as reshapes and transposes of one matmul, and the matmul switches."""
from . import _cukit

_matmul = _cukit.matmul
_vector_dot = _cukit.dot      # the reduction: a second operand of one dimension
_vector_inner = _cukit.inner


def matmul(a, b, out=None, *, stream=None):
    """numpy.matmul on the device: 2-D products and stacks of them with numpy's
    broadcasting of the leading dimensions, any strides, out= of the result's shape
    and dtype. Runs on cuBLAS where it is loaded, else on cukit's own tiled GEMM."""
    return _matmul(a, b, out, stream=stream)


def _contiguous(x):
    return x if x.is_contiguous else _cukit.ascontiguousarray(x)


def tensordot(a, b, axes=2):
    """numpy.tensordot: sum the products over axes of a and b (an int n: a's last n
    and b's first n; or two sequences of axes), as one matmul."""
    _check(a, "tensordot"), _check(b, "tensordot")
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError("tensordot: axes must be a non-negative integer or two "
                             "sequences of axes")
        axes_a, axes_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        try:
            axes_a, axes_b = axes
        except (TypeError, ValueError):
            raise TypeError("tensordot: axes must be an int or a pair of axis "
                            "sequences") from None
        axes_a = [axes_a] if isinstance(axes_a, int) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, int) else list(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError(f"tensordot: {len(axes_a)} axes of a against {len(axes_b)} of b")
    axes_a = [_axis(x, a.ndim, "a") for x in axes_a]
    axes_b = [_axis(x, b.ndim, "b") for x in axes_b]
    for i, j in zip(axes_a, axes_b):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: shape mismatch for sum: axis {i} of a has "
                             f"{a.shape[i]}, axis {j} of b has {b.shape[j]}")
    free_a = [i for i in range(a.ndim) if i not in axes_a]
    free_b = [j for j in range(b.ndim) if j not in axes_b]
    k = 1
    for i in axes_a:
        k *= a.shape[i]
    m = 1
    for i in free_a:
        m *= a.shape[i]
    n = 1
    for j in free_b:
        n *= b.shape[j]
    a2 = _contiguous(a.transpose(*(free_a + axes_a))).reshape(m, k)
    b2 = _contiguous(b.transpose(*(axes_b + free_b))).reshape(k, n)
    shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[j] for j in free_b)
    return _matmul(a2, b2).reshape(*shape) if shape else _matmul(a2, b2).reshape(())


def _axis(x, ndim, name):
    if not -ndim <= x < ndim:
        raise ValueError(f"tensordot: axis {x} is out of bounds for {name}, which has "
                         f"{ndim} dimensions")
    return x % ndim


def _check(x, who):
    if not isinstance(x, _cukit.Array):
        raise TypeError(f"cukit.{who}(): the operands must be cukit.Array, got "
                        f"{type(x).__name__}; pass cukit.to_device(x)")


def _into(result, out):
    if out is None:
        return result
    _check(out, "dot")
    if out.shape != result.shape or out.dtype != result.dtype:
        raise ValueError(f"dot: out= has shape {out.shape} and dtype {out.dtype}; the result "
                         f"has shape {result.shape} and dtype {result.dtype}")
    _cukit.copyto(out, result)
    return out


def dot(a, b, out=None, *, stream=None):
    """numpy.dot: a product of scalars (0-d), vectors (the reduction), or a sum over
    a's last axis and b's second-to-last (a matmul; through tensordot when b has more
    than two dimensions)."""
    if not isinstance(b, _cukit.Array) or b.ndim < 2 or not isinstance(a, _cukit.Array):
        if isinstance(a, _cukit.Array) and isinstance(b, _cukit.Array) and 0 in (a.ndim, b.ndim):
            return _cukit.multiply(a, b, out=out, stream=stream)
        return _vector_dot(a, b, out, stream=stream)
    if a.ndim == 0:
        return _cukit.multiply(a, b, out=out, stream=stream)
    if b.ndim == 2:
        return _matmul(a, b, out, stream=stream)
    return _into(tensordot(a, b, ([-1], [b.ndim - 2])), out)


def inner(a, b, *, stream=None):
    """numpy.inner: sums over the last axes of a and b."""
    if isinstance(a, _cukit.Array) and isinstance(b, _cukit.Array):
        if 0 in (a.ndim, b.ndim):
            return _cukit.multiply(a, b, stream=stream)
        if b.ndim >= 2:
            return tensordot(a, b, ([-1], [-1]))
    return _vector_inner(a, b, stream=stream)


def outer(a, b, out=None, *, stream=None):
    """numpy.outer: a (flattened) as a column times b (flattened) as a row."""
    _check(a, "outer"), _check(b, "outer")
    col = _contiguous(a).reshape(a.size, 1)
    row = _contiguous(b).reshape(1, b.size)
    return _cukit.multiply(col, row, out=out, stream=stream)


def set_tf32(enabled):
    """Let float32 matmuls on cuBLAS use TensorFloat-32 tensor cores (10-bit mantissa
    inputs, float32 sums; PyTorch's allow_tf32). Off by default: results then match
    numpy's float32. Returns the previous setting."""
    return _cukit._matmul_config(tf32=bool(enabled))["tf32"]


def set_matmul_backend(name):
    """'auto' (cuBLAS where it loads, else cukit's own GEMM), 'cublas' (raise when it
    cannot load) or 'cukit' (always cukit's own GEMM). Returns the previous one. The
    environment variable CUKIT_MATMUL sets the default."""
    return _cukit._matmul_config(backend=name)["backend"]


def matmul_info():
    """dict: backend, tf32, last (the path the last matmul took: 'cublas', 'cukit' or
    None), cublas (the library's path once loaded) and cublas_version."""
    return _cukit._matmul_config()
