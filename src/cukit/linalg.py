"""cukit.linalg: vector norms on the device (numpy.linalg.norm's vector cases), and the
matmul switches (TF32, the backend)."""
import math

from . import _cukit
from ._matmul import matmul, matmul_info, set_matmul_backend, set_tf32, tensordot  # noqa: F401

_ORDS = {None: 2, 2: 2, 1: 1, math.inf: 3, -math.inf: -3}


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm for vectors: ord None or 2 (sqrt of the sum of |x|**2), 1 (sum of
    |x|), inf (max |x|), -inf (min |x|), over axis (an int; None: every element, which
    for ord=None is numpy's Frobenius norm of any array). Returns a device Array."""
    if axis is None and ord is not None and x.ndim != 1:
        raise NotImplementedError(
            "cukit.linalg.norm computes vector norms: pass a 1-D array or axis= (matrix "
            "norms are not implemented)")
    if isinstance(axis, tuple):
        raise NotImplementedError("cukit.linalg.norm: axis= takes one axis (matrix norms are "
                                  "not implemented)")
    try:
        code = _ORDS[ord]
    except (KeyError, TypeError):
        raise ValueError(f"cukit.linalg.norm: ord={ord!r} is not supported for vectors "
                         f"(it takes None, 1, 2, inf and -inf)") from None
    return _cukit._vector_norm(x, code, axis, bool(keepdims))
