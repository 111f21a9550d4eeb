"""Try each name of the CuPy census on cukit, against numpy on fresh random data.

    python tools/census_coverage.py [--names tools/census/cupy_names.json] [--json OUT]

For each of the census's names (tools/census/cupy_names.json, written by
tools/census_count.py) one small call on cukit is checked against numpy: CHECKS below,
name -> a function that returns True when cukit agrees. Names that are CuPy's own (its
cuda module, its kernels, cupyx) are tried through cukit's documented equivalent, named
in the check; MISSING lists those cukit has no equivalent for. It runs on the backend
cukit picks (CUKIT_BACKEND=emulator runs it on the CPU). Prints each missing or failing
name with its number of repositories and the reason, then the coverage weighted by
repositories: the repositories of the working names over those of all names. --json
writes the same as JSON (OUT, or - for standard output).
"""
import argparse
import json
import os
import sys

import numpy as np

import cukit

HERE = os.path.dirname(os.path.abspath(__file__))
h = a = w = dw = None
idx, cols = np.array([0, 2, 5]), np.array([1, 3, 4])


def setup():
    """Fresh data each run: h (6x5 float32) and a, its copy on the device; w well conditioned."""
    global h, a, w, dw
    r = np.random.default_rng()
    h = r.standard_normal((6, 5)).astype(np.float32)
    a = cukit.asarray(h)
    w = h[:5] + 5 * np.eye(5, dtype=np.float32)
    dw = cukit.asarray(w)


def g(x):
    return x.get() if hasattr(x, "get") else x


def same(x, y, **tol):
    """cukit's result x equals numpy's y: values and dtype."""
    x = np.asarray(g(x))
    return x.dtype == np.asarray(y).dtype and np.allclose(x, y, **tol)


def written(key, value):
    """b[key(b)] = value on a copy of a and of h, compared."""
    b, hb = a.copy(), h.copy()
    b[key(b)] = value
    hb[key(hb)] = value
    return np.allclose(g(b), hb)


def in_stream():
    with cukit.Stream() as s:
        b = a + 1
    s.synchronize()
    return np.allclose(g(b), h + 1)


ADD = r'''extern "C" __global__ void my_add(const float* x, const float* y, float* z, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
}
extern "C" __global__ void my_sub(const float* x, const float* y, float* z, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) z[i] = x[i] - y[i];
}'''


def raw_kernel(names):
    """CuPy's RawKernel/RawModule: cukit.compile(source) and its kernels by name."""
    mod = cukit.compile(ADD)
    x = cukit.asarray(h.ravel())
    ok = True
    for name, op in zip(names, (np.add, np.subtract)):
        z = cukit.zeros(h.size, np.float32)
        getattr(mod, name)(x, x, z, np.int32(h.size), grid=1, block=64)
        ok = ok and np.allclose(g(z), op(h.ravel(), h.ravel()))
    return ok


def seeded():
    cukit.random.seed(7)
    x = cukit.random.rand(5)
    cukit.random.seed(7)
    return np.array_equal(g(x), g(cukit.random.rand(5)))


CHECKS = {
    # indexing, reading and writing
    "a[i] (integers)": lambda: np.allclose(g(a[2, 3]), h[2, 3]) and np.allclose(g(a[-1]), h[-1]),
    "a[i] (integers) = v": lambda: written(lambda x: (2, 3), 7) and written(lambda x: 1, 2),
    "a[i:j] (slices)": lambda: np.allclose(g(a[1:4, ::2]), h[1:4, ::2]),
    "a[i:j] (slices) = v": lambda: written(lambda x: (slice(1, 3), slice(1, None)), 5),
    "a[:, None] (newaxis or ellipsis)": lambda: np.allclose(g(a[:, None]), h[:, None])
    and np.allclose(g(a[..., 0]), h[..., 0]),
    "a[:, None] (newaxis or ellipsis) = v": lambda: written(lambda x: Ellipsis, 3)
    and written(lambda x: (Ellipsis, 1), 2),
    "a[idx]": lambda: np.allclose(g(a[cukit.asarray(idx)]), h[idx]),
    "a[idx] = v": lambda: written(lambda x: idx, 1),
    "a[rows, cols]": lambda: np.allclose(g(a[idx, cols]), h[idx, cols]),
    "a[rows, cols] = v": lambda: written(lambda x: (idx, cols), 2),
    "a[mask]": lambda: np.allclose(g(a[a > 0]), h[h > 0]),
    "a[mask] = v": lambda: written(lambda x: x > 0, 0),
    "a[:, idx] (array with slices or ints)": lambda: np.allclose(g(a[:, cols]), h[:, cols])
    and np.allclose(g(a[1, cols]), h[1, cols]),
    "a[:, idx] (array with slices or ints) = v": lambda: written(lambda x: (slice(None), cols), 4),
    "a[mask, ...] (mask with other indices)": lambda: np.allclose(
        g(a[a[:, 0] > 0, 1:]), h[h[:, 0] > 0, 1:]),
    "a[mask, ...] (mask with other indices) = v": lambda: written(
        lambda x: (x[:, 0] > 0, slice(1, None)), 9),
    "a[tuple(...)]": lambda: np.allclose(g(a[tuple([idx, cols])]), h[tuple([idx, cols])])
    and np.allclose(g(a[tuple([slice(None), 1])]), h[:, 1]),
    # creation and conversion
    "zeros": lambda: same(cukit.zeros((3, 4)), np.zeros((3, 4))),
    "array": lambda: same(cukit.array(h), h) and same(cukit.array([[1, 2], [3, 4]]),
                                                      np.array([[1, 2], [3, 4]])),
    "arange": lambda: same(cukit.arange(10), np.arange(10)) and same(cukit.arange(0, 1, 0.25),
                                                                   np.arange(0, 1, 0.25)),
    "asarray": lambda: same(cukit.asarray(h), h),
    "asnumpy": lambda: same(cukit.asnumpy(a), h),
    "zeros_like": lambda: same(cukit.zeros_like(a), np.zeros_like(h)),
    "ones": lambda: same(cukit.ones((2, 3)), np.ones((2, 3))),
    "empty": lambda: (lambda x: x.dtype == np.float64 and x.shape == (2, 3))(cukit.empty((2, 3))),
    "empty_like": lambda: (lambda x: (x.shape, x.dtype) == (h.shape, h.dtype))(cukit.empty_like(a)),
    "full": lambda: same(cukit.full((2, 3), 1.5), np.full((2, 3), 1.5)),
    "linspace": lambda: same(cukit.linspace(0, 1, 7), np.linspace(0, 1, 7)),
    "meshgrid": lambda: all(same(x, y) for x, y in zip(
        cukit.meshgrid(cukit.arange(3), cukit.arange(2), indexing="ij"),
        np.meshgrid(np.arange(3), np.arange(2), indexing="ij"))),
    "mgrid": lambda: same(cukit.mgrid[0:3, 0:2], np.mgrid[0:3, 0:2]),
    "indices": lambda: same(cukit.indices((3, 2)), np.indices((3, 2))),
    "eye": lambda: same(cukit.eye(3), np.eye(3)),
    "ascontiguousarray": lambda: same(cukit.ascontiguousarray(a.T), np.ascontiguousarray(h.T))
    and cukit.ascontiguousarray(a.T).flags.c_contiguous,
    "asanyarray": lambda: same(cukit.asanyarray(h), h),
    "copy": lambda: same(cukit.copy(a), h),
    "copyto": lambda: (lambda b: (cukit.copyto(b, a), same(b, h))[-1])(cukit.empty_like(a)),
    "get_array_module": lambda: cukit.get_array_module(a) is cukit,
    "ndarray": lambda: isinstance(a, cukit.ndarray),
    "atleast_1d": lambda: same(cukit.atleast_1d(cukit.asarray(np.float32(2))),
                               np.atleast_1d(np.float32(2))),
    # math, reductions, shape functions
    "sum": lambda: same(cukit.sum(a, axis=0), np.sum(h, axis=0), rtol=1e-5),
    "exp": lambda: same(cukit.exp(a), np.exp(h)),
    "sqrt": lambda: same(cukit.sqrt(cukit.abs(a)), np.sqrt(np.abs(h))),
    "maximum": lambda: same(cukit.maximum(0, a), np.maximum(0, h)),
    "minimum": lambda: same(cukit.minimum(a, 0.5), np.minimum(h, 0.5)),
    "abs": lambda: same(cukit.abs(a), np.abs(h)),
    "dot": lambda: same(cukit.dot(a, a.T), np.dot(h, h.T), rtol=1e-4, atol=1e-5),
    "matmul": lambda: same(cukit.matmul(a, a.T), h @ h.T, rtol=1e-4, atol=1e-5),
    "tensordot": lambda: same(cukit.tensordot(a, a, axes=([1], [1])),
                              np.tensordot(h, h, axes=([1], [1])), rtol=1e-4, atol=1e-5),
    "outer": lambda: same(cukit.outer(a[0], a[1]), np.outer(h[0], h[1])),
    "einsum": lambda: same(cukit.einsum("ij,kj->ik", a, a), np.einsum("ij,kj->ik", h, h),
                           rtol=1e-4, atol=1e-5),
    "where": lambda: same(cukit.where(a > 0, a, 0), np.where(h > 0, h, 0)),
    "max": lambda: same(cukit.max(a, axis=1), np.max(h, axis=1)),
    "min": lambda: same(cukit.min(a), np.min(h)),
    "amax": lambda: same(cukit.amax(a, axis=0), np.amax(h, axis=0)),
    "clip": lambda: same(cukit.clip(a, -0.5, 0.5), np.clip(h, -0.5, 0.5)),
    "mean": lambda: same(cukit.mean(a, axis=0), np.mean(h, axis=0), rtol=1e-5),
    "average": lambda: same(cukit.average(a, axis=0), np.average(h, axis=0), rtol=1e-5),
    "argmax": lambda: same(cukit.argmax(a, axis=1), np.argmax(h, axis=1)),
    "argmin": lambda: same(cukit.argmin(a), np.argmin(h)),
    "argsort": lambda: same(cukit.argsort(a, axis=1), np.argsort(h, axis=1, kind="stable")),
    "argpartition": lambda: np.array_equal(
        np.sort(h[0][g(cukit.argpartition(a[0], 2))[:3]]), np.sort(h[0])[:3]),
    "argwhere": lambda: same(cukit.argwhere(a > 0), np.argwhere(h > 0)),
    "sort": lambda: same(cukit.sort(a, axis=0), np.sort(h, axis=0)),
    "cos": lambda: same(cukit.cos(a), np.cos(h)),
    "sin": lambda: same(cukit.sin(a), np.sin(h)),
    "arctan": lambda: same(cukit.arctan(a), np.arctan(h)),
    "log": lambda: same(cukit.log(cukit.abs(a) + 1), np.log(np.abs(h) + 1)),
    "log1p": lambda: same(cukit.log1p(cukit.abs(a)), np.log1p(np.abs(h))),
    "ceil": lambda: same(cukit.ceil(a), np.ceil(h)),
    "floor": lambda: same(cukit.floor(a), np.floor(h)),
    "square": lambda: same(cukit.square(a), np.square(h)),
    "power": lambda: same(cukit.power(cukit.abs(a), 1.5), np.power(np.abs(h), 1.5), rtol=1e-5),
    "add": lambda: same(cukit.add(a, 1), np.add(h, 1)),
    "subtract": lambda: same(cukit.subtract(a, a[0]), np.subtract(h, h[0])),
    "divide": lambda: same(cukit.divide(a, 2), np.divide(h, 2)),
    "isnan": lambda: same(cukit.isnan(a / a), np.isnan(h / h)),
    "any": lambda: bool(cukit.any(a > 0)) == bool(np.any(h > 0)),
    "all": lambda: bool(cukit.all(a > -100)) and not bool(cukit.all(a > 0)),
    "count_nonzero": lambda: int(cukit.count_nonzero(a > 0)) == np.count_nonzero(h > 0),
    "cumsum": lambda: same(cukit.cumsum(a, axis=0), np.cumsum(h, axis=0), rtol=1e-5),
    "histogram": lambda: all(same(x, y, rtol=1e-5) for x, y in zip(
        cukit.histogram(a, bins=4), np.histogram(h, bins=4))),
    "add.at": lambda: (lambda b, hb: (cukit.add.at(b, cukit.asarray(idx), 1.0),
                                      np.add.at(hb, idx, 1.0), same(b, hb))[-1])(
        cukit.asarray(h[:, 0]), h[:, 0].copy()),
    "add.reduce": lambda: same(cukit.add.reduce(a, axis=0), np.add.reduce(h, axis=0), rtol=1e-5),
    "stack": lambda: same(cukit.stack([a, a], axis=2), np.stack([h, h], axis=2)),
    "concatenate": lambda: same(cukit.concatenate([a, a], axis=1), np.concatenate([h, h], axis=1)),
    "column_stack": lambda: same(cukit.column_stack((a[0], a[1])), np.column_stack((h[0], h[1]))),
    "append": lambda: same(cukit.append(a, a[:1], axis=0), np.append(h, h[:1], axis=0)),
    "pad": lambda: same(cukit.pad(a, ((1, 1), (2, 0))), np.pad(h, ((1, 1), (2, 0))))
    and same(cukit.pad(a, 1, mode="wrap"), np.pad(h, 1, mode="wrap")),
    "tile": lambda: same(cukit.tile(a, (2, 1)), np.tile(h, (2, 1))),
    "repeat": lambda: same(cukit.repeat(a, 2, axis=0), np.repeat(h, 2, axis=0)),
    "broadcast_to": lambda: same(cukit.broadcast_to(a[0], (3, 5)), np.broadcast_to(h[0], (3, 5))),
    "transpose": lambda: same(cukit.transpose(a), np.transpose(h)),
    "reshape": lambda: same(cukit.reshape(a, (5, 6)), np.reshape(h, (5, 6))),
    "expand_dims": lambda: same(cukit.expand_dims(a, 1), np.expand_dims(h, 1)),
    "shape": lambda: cukit.shape(a) == np.shape(h),
    "size": lambda: cukit.size(a) == np.size(h),
    # numpy's names
    "float32": lambda: cukit.float32 is np.float32
    and cukit.zeros(2, cukit.float32).dtype == np.float32,
    "float64": lambda: cukit.float64 is np.float64,
    "float16": lambda: cukit.float16 is np.float16
    and same(a.astype(cukit.float16), h.astype(np.float16)),
    "int32": lambda: cukit.int32 is np.int32,
    "int16": lambda: cukit.int16 is np.int16,
    "uint8": lambda: cukit.uint8 is np.uint8,
    "uint32": lambda: cukit.uint32 is np.uint32,
    "complex64": lambda: cukit.complex64 is np.complex64,
    "bool_": lambda: cukit.bool_ is np.bool_,
    "newaxis": lambda: cukit.newaxis is None,
    "pi": lambda: cukit.pi == np.pi,
    "inf": lambda: cukit.inf == np.inf,
    "nan": lambda: np.isnan(cukit.nan),
    "__version__": lambda: isinstance(cukit.__version__, str),
    # random, numpy's legacy module functions
    "random.rand": lambda: cukit.random.rand(3, 4).shape == (3, 4)
    and cukit.random.rand(3, 4).dtype == np.float64,
    "random.randn": lambda: cukit.random.randn(3, 4).shape == (3, 4),
    "random.randint": lambda: (lambda x: x.shape == (7,) and 0 <= x.min() and x.max() < 5)(
        g(cukit.random.randint(0, 5, 7))),
    "random.uniform": lambda: (lambda x: x.shape == (5,) and ((2 <= x) & (x < 3)).all())(
        g(cukit.random.uniform(2, 3, 5))),
    "random.random": lambda: cukit.random.random(5).shape == (5,),
    "random.normal": lambda: cukit.random.normal(0, 1, (2, 3)).shape == (2, 3),
    "random.seed": seeded,
    "random.choice": lambda: len(set(g(cukit.random.choice(10, 3, replace=False)).tolist())) == 3,
    # linalg, fft
    "linalg.norm": lambda: same(cukit.linalg.norm(a), np.linalg.norm(h), rtol=1e-5),
    "linalg.solve": lambda: same(cukit.linalg.solve(dw, dw[0]), np.linalg.solve(w, w[0]),
                                 rtol=1e-4, atol=1e-5),
    "fft.fft": lambda: same(cukit.fft.fft(a), np.fft.fft(h).astype(np.complex64), atol=1e-4),
    "fft.fft2": lambda: same(cukit.fft.fft2(a), np.fft.fft2(h).astype(np.complex64), atol=1e-4),
    "fft.fftn": lambda: same(cukit.fft.fftn(a), np.fft.fftn(h).astype(np.complex64), atol=1e-4),
    "fft.ifft": lambda: same(cukit.fft.ifft(a), np.fft.ifft(h).astype(np.complex64), atol=1e-5),
    "fft.ifft2": lambda: same(cukit.fft.ifft2(a), np.fft.ifft2(h).astype(np.complex64), atol=1e-5),
    "fft.rfft": lambda: same(cukit.fft.rfft(a), np.fft.rfft(h).astype(np.complex64), atol=1e-4),
    "fft.irfft": lambda: same(cukit.fft.irfft(cukit.fft.rfft(a), 5), h, atol=1e-5),
    "fft.fftshift": lambda: same(cukit.fft.fftshift(a), np.fft.fftshift(h)),
    "fft.ifftshift": lambda: same(cukit.fft.ifftshift(a), np.fft.ifftshift(h)),
    "fft.fftfreq": lambda: same(cukit.fft.fftfreq(8, 0.5), np.fft.fftfreq(8, 0.5)),
    # array methods and attributes
    ".reshape": lambda: same(a.reshape(5, 6), h.reshape(5, 6))
    and same(a.reshape(-1), h.reshape(-1)),
    ".shape": lambda: a.shape == h.shape,
    ".astype": lambda: same(a.astype(np.int32), h.astype(np.int32)),
    ".T": lambda: same(a.T, h.T),
    ".get": lambda: isinstance(a.get(), np.ndarray) and same(a.get(), h),
    ".dtype": lambda: a.dtype == h.dtype,
    ".sum": lambda: same(a.sum(axis=1, keepdims=True), h.sum(axis=1, keepdims=True), rtol=1e-5),
    ".transpose": lambda: same(a.transpose(1, 0), h.transpose(1, 0)),
    ".size": lambda: a.size == h.size,
    ".ndim": lambda: a.ndim == h.ndim,
    ".ravel": lambda: same(a.ravel(), h.ravel()),
    ".flatten": lambda: same(a.flatten(), h.flatten()),
    ".copy": lambda: same(a.copy(), h),
    ".max": lambda: same(a.max(axis=0), h.max(axis=0)),
    ".min": lambda: same(a.min(), h.min()),
    ".mean": lambda: same(a.mean(axis=(0, 1)), h.mean(axis=(0, 1)), rtol=1e-5),
    ".std": lambda: same(a.std(axis=0), h.std(axis=0), rtol=1e-4),
    ".var": lambda: same(a.var(axis=0, ddof=0), h.var(axis=0, ddof=0), rtol=1e-4),
    ".set": lambda: (lambda b: (b.set(h[::-1].copy()), same(b, h[::-1]))[-1])(cukit.empty_like(a)),
    ".strides": lambda: a.strides == h.strides,
    ".tolist": lambda: a.tolist() == h.tolist(),
    ".all": lambda: bool((a > -100).all()),
    ".any": lambda: bool((a > 0).any()) == bool((h > 0).any()),
    ".argmax": lambda: same(a.argmax(axis=1), h.argmax(axis=1)),
    ".device": lambda: a.device is not None,
    ".fill": lambda: (lambda b: (b.fill(2.5), same(b, np.full_like(h, 2.5)))[-1])(
        cukit.empty_like(a)),
    ".item": lambda: a[1, 2].item() == h[1, 2].item(),
    ".nbytes": lambda: a.nbytes == h.nbytes,
    ".real": lambda: same(a.real, h.real),
    ".imag": lambda: same((a * 1j).imag, (h * 1j).imag),
    ".dot": lambda: same(a.dot(a.T), h.dot(h.T), rtol=1e-4, atol=1e-5),
    ".flags": lambda: a.flags.c_contiguous and not a.T.flags.c_contiguous,
    ".repeat": lambda: same(a.repeat(2, axis=1), h.repeat(2, axis=1)),
    ".squeeze": lambda: same(a[:, None].squeeze(), h),
    ".swapaxes": lambda: same(a.swapaxes(0, 1), h.swapaxes(0, 1)),
    ".tofile": lambda: tofile(),
    ".__cuda_array_interface__": lambda: a.__cuda_array_interface__["shape"] == h.shape,
    ".data.ptr": lambda: a.ptr != 0,  # CuPy's a.data.ptr: cukit's a.ptr (docs/guide/memory.md)
    # CuPy's own names, through cukit's documented equivalents
    "cuda.Device": lambda: cukit.Device(0).id == 0
    and (lambda d: (d.use(), True)[-1])(cukit.Device(0)),
    "cuda.Stream": in_stream,
    "cuda.Stream.null": lambda: cukit.Stream.null is not None,
    "cuda.Stream.null.synchronize": lambda: (cukit.Stream.null.synchronize(), True)[-1],
    "cuda.Stream.null.use": lambda: (cukit.Stream.null.use(),
                                     cukit.get_current_stream() == cukit.Stream.null)[-1],
    "cuda.Stream.null.ptr": lambda: isinstance(cukit.Stream.null.handle, int),  # cukit's .handle
    "cuda.get_current_stream": lambda: cukit.get_current_stream() is not None,
    "cuda.Event": lambda: event_time() >= 0,
    "lib.stride_tricks.as_strided": lambda: as_strided(),
    "cuda.runtime.getDeviceCount": lambda: cukit.device_count() >= 1,  # cukit.device_count()
    "cuda.runtime.getDeviceProperties": lambda: bool(cukit.Device(0).name)  # Device attributes
    and cukit.Device(0).total_memory > 0 and len(cukit.Device(0).compute_capability) == 2,
    "cuda.runtime.runtimeGetVersion": lambda: cukit.driver_version() is not None,  # no CUDA runtime
    "cuda.runtime.deviceSynchronize": lambda: (cukit.synchronize(), True)[-1],
    "cuda.is_available": lambda: cukit.device_count() > 0,
    "is_available": lambda: cukit.device_count() > 0,
    "get_default_memory_pool": lambda: "pool_used" in cukit.memory_info()  # and trim_pool()
    and (cukit.trim_pool(), True)[-1],
    "cuda.malloc_managed": lambda: same(cukit.managed_zeros((2, 3), np.float32),  # managed_*
                                        np.zeros((2, 3), np.float32)),
    "cupyx.profiler.benchmark": lambda: cukit.benchmark(lambda x: x + 1, (a,), n_repeat=3)
    is not None,
    "ElementwiseKernel": lambda: same(cukit.ElementwiseKernel(
        "T x, T y", "T z", "z = (x - y) * (x - y)", "sqdiff")(a, a[0]), (h - h[0]) ** 2),
    "ReductionKernel": lambda: same(cukit.ReductionKernel(
        "T x", "T y", "x * x", "a + b", "y = a", "0", "sqsum")(a), np.float32((h * h).sum()),
        rtol=1e-4),
    "fuse": lambda: same(cukit.fuse(lambda x, y: x * y + 1)(a, a), h * h + 1),
    "RawKernel": lambda: raw_kernel(["my_add"]),  # cukit.compile(source).my_add
    "RawModule": lambda: raw_kernel(["my_add", "my_sub"]),
}


def tofile():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "a.bin")
        a.tofile(p)
        return np.array_equal(np.fromfile(p, np.float32), h.ravel())


def as_strided():
    from cukit.lib.stride_tricks import as_strided as ours
    return np.array_equal(g(ours(a, (4, 3), (4, 4))),
                          np.lib.stride_tricks.as_strided(h, (4, 3), (4, 4)))


def event_time():
    e1, e2 = cukit.Event(), cukit.Event()
    e1.record()
    b = a * 2  # noqa: F841
    e2.record()
    e2.synchronize()
    return e1.elapsed_time(e2)


# CuPy's names with no cukit equivalent in cukit's documentation, and why
MISSING = {
    "cupyx.scipy.ndimage.gaussian_filter": "no scipy.ndimage",
    "cupyx.scipy.signal.convolve2d": "no scipy.signal",
    "cupyx.scatter_add": "no scatter_add (numpy's form, ufunc.at, is missing too)",
    "cuda.set_allocator": "no pluggable allocator (the pool is cukit's own)",
    "cuda.MemoryPool": "no pool object to create (memory_info/trim_pool only)",
    "cuda.cudnn.getVersion": "no cuDNN",
    "cuda.curand.createGenerator": "no cuRAND host API (cukit.random's Generators instead)",
    "cuda.curand.generateUniform": "no cuRAND host API (cukit.random's Generators instead)",
    "cuda.curand.CURAND_RNG_PSEUDO_PHILOX4_32_10": "no cuRAND host API",
    "int": "numpy's alias np.int, removed in numpy 1.24",
    "NaN": "numpy's alias np.NaN, removed in numpy 2.0",
    "cfloat": "numpy's alias np.cfloat, removed in numpy 2.0",
}


def run(entries):
    """(name, repos, status, reason) for each census entry; status: ok, missing, failing."""
    setup()
    rows = []
    for e in entries:
        name, repos = e["name"], e["repos"]
        if name in MISSING:
            rows.append((name, repos, "missing", MISSING[name]))
            continue
        if name not in CHECKS:
            rows.append((name, repos, "missing", "no check written for this name"))
            continue
        try:
            ok = bool(CHECKS[name]())
            reason = "" if ok else "differs from numpy"
            rows.append((name, repos, "ok" if ok else "failing", reason))
        except AttributeError as exc:
            rows.append((name, repos, "missing", f"AttributeError: {exc}"))
        except Exception as exc:  # noqa: BLE001 (the report names it)
            rows.append((name, repos, "failing", f"{type(exc).__name__}: {exc}"))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--names", default=os.path.join(HERE, "census", "cupy_names.json"))
    ap.add_argument("--json", metavar="OUT", help="write the result as JSON (- for stdout)")
    args = ap.parse_args(argv)
    with open(args.names) as fh:
        census = json.load(fh)
    rows = run(census["names"])
    total = sum(r[1] for r in rows)
    working = sum(r[1] for r in rows if r[2] == "ok")
    coverage = working / total if total else 0.0
    bad = sorted((r for r in rows if r[2] != "ok"), key=lambda r: (-r[1], r[0]))
    if args.json != "-":
        print(f"backend {cukit.backend()}; {len(rows)} names from {census['repositories_read']} "
              f"repositories ({census['date']})")
        for name, repos, status, reason in bad:
            print(f"{repos:4d}  {status:8s} {name}: {reason[:120]}")
        print(f"coverage weighted by repositories: {working}/{total} = {coverage:.1%} "
              f"({sum(r[2] == 'ok' for r in rows)} of {len(rows)} names work)")
    if args.json:
        out = {"backend": str(cukit.backend()), "coverage": coverage, "repos_working": working,
               "repos_total": total,
               "names": [dict(zip(("name", "repos", "status", "reason"), r)) for r in rows]}
        text = json.dumps(out, indent=1)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as fh:
                fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
