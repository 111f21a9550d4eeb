"""The generated reduction and scan kernels run on the host (no GPU): their CUDA C is
compiled as C++ against tests/host_cuda/shim.h, a thread per CUDA thread, and fed the
engine's own plans. This checks the kernels' logic (vector loads, warp and block trees,
splits and the second pass, a thread per column, argmax's order, the look-back scan)
and that the argument block the host packs is the one the kernels read."""
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import cukit

sys.path.insert(0, str(Path(__file__).resolve().parent / "host_cuda"))
import run as host  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


@pytest.fixture(scope="module", autouse=True)
def workdir(tmp_path_factory):
    host.WORK = str(tmp_path_factory.mktemp("host_cuda"))


def within(got, want, x, axis):
    if want.dtype.kind in "fc":
        if not np.array_equal(np.isnan(got), np.isnan(want)):
            return False
        scale = np.nansum(np.abs(x.astype(np.complex128)), axis=axis)
        ok = np.abs(got - want) <= 1e-5 * (scale + np.abs(want))
        return np.all(ok | np.isnan(want))
    return np.array_equal(got, want)


@pytest.mark.parametrize("kind,dtype,acc", [("sum", "float32", 4), ("argmax", "float64", 16),
                                            ("nanmin", "int16", 2), ("all", "bool", 1)])
def test_kernels_on_every_layout(rng, kind, dtype, acc):
    src = cukit._cukit._reduce_source(kind, dtype)
    if dtype == "bool":
        base = rng.random((6, 9, 40)) > 0.1
    elif dtype == "int16":
        base = rng.integers(-1000, 1000, (6, 9, 40)).astype(dtype)
    else:
        base = rng.standard_normal((6, 9, 40)).astype(dtype)
        base.reshape(-1)[rng.integers(0, base.size, 2)] = np.nan
    used = set()
    for v in (base, base.T, base[:, ::2, 3:], base[::-1, :, ::-3]):
        for axis in (None, 0, 2, (1, 2)):
            if kind == "argmax" and isinstance(axis, tuple):
                continue
            want = np.asarray(getattr(np, kind)(v, axis=axis))
            out = np.full(want.shape, 77, want.dtype)
            p = host.reduce_run(src, [v], axis, out, keep_order=kind == "argmax", acc_size=acc)
            used.add(p["fn"])
            assert within(out, want, v, axis), (v.shape, v.strides, axis, p)
    assert len(used) >= 2


def test_splits_second_pass_and_columns(rng):
    src = cukit._cukit._reduce_source("sum", "float32")
    used = set()
    for shape, axis in [((40000,), None), ((3, 20000), 1), ((300, 41), 0), ((4200, 3), 1)]:
        x = rng.standard_normal(shape).astype(np.float32)
        for v in (x, x[..., 1:]):
            want = np.asarray(np.sum(v, axis=axis))
            out = np.full(want.shape, np.nan, np.float32)
            p = host.reduce_run(src, [v], axis, out, acc_size=4, sm=2)
            used.add(p["fn"])
            assert within(out, want, v, axis), (shape, axis, p)
    assert {0, 2, 4} <= used  # vector rows, strided rows, a thread per column


def test_two_inputs_where_and_initial(rng):
    import struct
    x = rng.standard_normal((7, 300)).astype(np.float32)
    m = np.mean(x, axis=1, keepdims=True)
    out = np.zeros(7, np.float32)
    host.reduce_run(cukit._cukit._reduce_source("var", "float32", "float32"), [x, m], 1, out,
                    acc_size=4, d=299)
    assert within(out, np.var(x, axis=1, ddof=1), x * x, 1)
    v = rng.standard_normal(300).astype(np.float32)
    host.reduce_run(cukit._cukit._reduce_source("dot", "float32", "float32"), [x, v], -1, out,
                    acc_size=4)
    assert within(out, x @ v, x * v, 1)
    mask = rng.random((7, 300)) > 0.4
    host.reduce_run(cukit._cukit._reduce_source("max", "float32", None, True, True), [x, mask],
                    1, out, acc_size=4, init=struct.pack("<f", -0.5))
    np.testing.assert_array_equal(out, np.max(x, axis=1, where=mask, initial=-0.5))


def test_look_back_scan_and_lines(rng):
    for excl in (False, True):
        src = cukit.ScanKernel("int32", "a+b", 0, excl).source
        for n in (1, 33, 2048, 2049, 10000):
            x = rng.integers(-100, 100, n).astype(np.int32)
            out = np.full(n, 99, np.int32)
            host.scan_run(src, x, out)
            want = np.cumsum(x).astype(np.int32)
            np.testing.assert_array_equal(out, want - x if excl else want)
        x = rng.integers(-100, 100, (5, 7, 70)).astype(np.int32)
        for axis in (0, 2):
            out = np.full(x.shape, 99, np.int32)
            host.scan_run(src, x, out, axis)
            want = np.cumsum(x, axis=axis).astype(np.int32)
            np.testing.assert_array_equal(out, want - x if excl else want)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src = cukit.ScanKernel("float32", "max(a, b)").source
        x = rng.standard_normal(5000).astype(np.float32)
        out = np.zeros_like(x)
        host.scan_run(src, x, out)
        np.testing.assert_array_equal(out, np.maximum.accumulate(x))


@pytest.mark.parametrize("kind,dtype,acc", [("sum", "float32", 4), ("sum", "int8", 8),
                                            ("sum", "complex64", 8), ("argmax", "float32", 16),
                                            ("max", "float64", 8), ("nanmin", "float32", 4)])
@pytest.mark.filterwarnings("ignore:All-NaN slice")
def test_column_vectors(rng, kind, dtype, acc):
    # a thread per vector of neighbouring outputs (ckcv), the reduced axis split across
    # blocks, on layouts that allow it and on ones that must fall back to ckc
    src = cukit._cukit._reduce_source(kind, dtype)
    used = set()
    cases = [((300, 64), 0), ((4097, 32), 0), ((1, 64), 0), ((100, 3, 16), 0),
             ((4, 6, 5, 16), (0, 2)), ((70, 72), 0)]
    for shape, axis in cases:
        if kind == "argmax" and isinstance(axis, tuple):
            continue
        if dtype == "int8":
            x = rng.integers(-3, 3, shape).astype(dtype)  # ties for argmax too
        elif dtype == "complex64":
            x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
        else:
            x = rng.integers(-4, 4, shape).astype(dtype)  # ties
            x += rng.standard_normal(shape).astype(dtype) * (rng.random(shape) < 0.5)
            x.reshape(-1)[rng.integers(0, x.size, 3)] = np.nan
        views = [x, x[..., 1:], x[..., :-8]] if shape != (70, 72) else [x[:, :64], x[:, 8:]]
        for v in views:
            want = np.asarray(getattr(np, kind)(v, axis=axis))
            out = np.full(want.shape, 77, want.dtype)
            p = host.reduce_run(src, [v], axis, out, keep_order=kind == "argmax", acc_size=acc,
                                sm=8)
            used.add(p["fn"])
            assert within(out, want, v, axis), (shape, v.strides, axis, p)
            if (v.shape[-1] % (16 // v.itemsize) == 0 and v.ctypes.data % 16 == 0
                    and all(st % 16 == 0 for st in v.strides[:-1])
                    and p["nred"] > 1 and p["nout"] >= 32):
                assert p["fn"] == 5, (shape, v.strides, axis, p)
    assert {4, 5} <= used


def test_column_vector_splits_and_block_second_pass(rng):
    src = cukit._cukit._reduce_source("sum", "float32")
    x = rng.standard_normal((2048, 256)).astype(np.float32)
    want = x.sum(axis=0)
    out = np.full(want.shape, np.nan, np.float32)
    p = host.reduce_run(src, [x], 0, out, acc_size=4, sm=132)
    assert p["fn"] == 5 and p["gy"] == p["splits"] > 1 and p["chunk"] >= 32, p
    assert within(out, want, x, 0)
    # a full reduction: many splits for one output, folded by the last block as a whole
    x = rng.standard_normal(600_000).astype(np.float32)
    out = np.full((), np.nan, np.float32)
    p = host.reduce_run(src, [x], None, out, acc_size=4, sm=16)
    assert p["fblock"] == 1 and p["splits"] > 64 and p["ncnt"] == 1, p
    assert within(out, np.sum(x), x, None)
