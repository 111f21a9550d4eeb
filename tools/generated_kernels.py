"""generated_kernels.py - run each kind of kernel cukit writes itself once, checked.

What it does
    Launches one of each family of generated CUDA C, at sizes that take every
    code path of the family (several blocks, the second pass of a split reduction,
    the look-back of a multi-tile scan, vector and scalar loads), and compares
    every result with numpy. It exists for compute-sanitizer's racecheck and
    synccheck, which slow kernels a hundredfold or more: the test suite is too big
    for them, while this covers the shared memory, warp shuffles and barriers of
    every generated kernel in seconds. tools/gpu_sanitize.sh runs it.

    Exits 1, naming the family, if any result differs from numpy's.

Usage
    PYTHONPATH=src python tools/generated_kernels.py [--scale N]
"""
import argparse
import sys

import numpy as np

import cukit
import cukit.random


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=1,
                        help="multiply every size by this (default 1: seconds under racecheck)")
    args = parser.parse_args(argv)
    k = args.scale
    rng = np.random.default_rng()
    failed = []

    def check(name, got, want, rtol=1e-5, atol=1e-6):
        got = got.get() if isinstance(got, cukit.Array) else got
        ok = np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
        if not ok:
            failed.append(name)

    x32 = rng.standard_normal(300_000 * k).astype(np.float32)
    m32 = rng.standard_normal((640 * k, 384)).astype(np.float32)
    i32 = rng.integers(-1000, 1000, 50_000 * k, dtype=np.int32)
    d, dm, di = cukit.to_device(x32), cukit.to_device(m32), cukit.to_device(i32)

    # elementwise: contiguous (vector loads), broadcast and strided, fused
    check("add, contiguous", d + d, x32 + x32)
    check("multiply, broadcast row", dm * dm[0], m32 * m32[0])
    check("exp, transposed view", cukit.exp(dm.T), np.exp(m32.T))
    saxpy = cukit.ElementwiseKernel("T a, T x, T y", "T z", "z = a * x + y", "saxpy")
    check("ElementwiseKernel", saxpy(np.float32(2), d, d), 2 * x32 + x32)
    check("fuse", cukit.fuse(lambda a, b: a * a + b)(d, 1.0), x32 * x32 + 1)
    check("astype", d.astype(np.float64), x32.astype(np.float64))

    # reductions: a split full reduction (two passes), rows, columns, argmax, two inputs
    check("sum, all", cukit.sum(d), x32.sum(dtype=np.float64), rtol=1e-4, atol=1e-2)
    check("max, all", cukit.max(d), x32.max())
    check("argmax, all", cukit.argmax(d), x32.argmax())
    check("sum, axis 1 (rows)", dm.sum(axis=1), m32.sum(axis=1), rtol=1e-4, atol=1e-4)
    check("sum, axis 0 (columns)", dm.sum(axis=0), m32.sum(axis=0), rtol=1e-4, atol=1e-4)
    check("min, axis 0 of a transposed view", dm.T.min(axis=0), m32.T.min(axis=0))
    check("argmin, axis 1", cukit.argmin(dm, axis=1), m32.argmin(axis=1))
    check("var, ddof 1", cukit.var(d, ddof=1), x32.var(ddof=1), rtol=1e-4)
    check("dot", cukit.dot(d, d), np.dot(x32, x32), rtol=1e-4)
    check("sum of int32", cukit.sum(di), i32.sum())
    l2 = cukit.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    check("ReductionKernel, axis 1", l2(dm, axis=1), np.sqrt((m32 * m32).sum(axis=1)), rtol=1e-4)

    # scans: one-pass look-back over many tiles, along each axis, the builders
    check("cumsum, 1-D", cukit.cumsum(di), np.cumsum(i32))
    check("cumsum, float32 1-D", cukit.cumsum(d), np.cumsum(x32.astype(np.float64)),
          rtol=1e-3, atol=0.05 * k)
    check("cumsum, axis 1", cukit.cumsum(dm, axis=1), np.cumsum(m32, axis=1), rtol=1e-4,
          atol=1e-3)
    check("cumprod, axis 0", cukit.cumprod(dm[:4], axis=0), np.cumprod(m32[:4], axis=0),
          rtol=1e-4)
    scan = cukit.InclusiveScanKernel(np.int32, "a + b")
    y = di.copy()
    scan(y)
    check("InclusiveScanKernel", y, np.cumsum(i32))
    ex = cukit.ExclusiveScanKernel(np.int32, "max(a, b)", "-2147483647")
    y = cukit.empty_like(di)
    ex(di, y)
    want = np.maximum.accumulate(np.concatenate([[-2147483647], i32[:-1]]))
    check("ExclusiveScanKernel", y, want)

    # random: numpy's Philox stream bit for bit; the others against themselves split in two
    key = int(rng.integers(1 << 62))
    for dtype in (np.float32, np.float64):
        got = cukit.random.Generator(cukit.random.Philox(key=key)).random(100_000 * k, dtype=dtype)
        want = np.random.Generator(np.random.Philox(key=key)).random(100_000 * k, dtype=dtype)
        check(f"random {np.dtype(dtype).name}, numpy's Philox", got, want, rtol=0, atol=0)
    n = cukit.random.default_rng(7).standard_normal(100_000 * k, dtype=np.float32).get()
    n2 = cukit.random.default_rng(7)
    halves = np.concatenate([n2.standard_normal(50_000 * k, dtype=np.float32).get(),
                             n2.standard_normal(50_000 * k, dtype=np.float32).get()])
    check("standard_normal, split calls", halves, n, rtol=0, atol=0)
    check("integers", cukit.random.default_rng(3).integers(0, 10, 10_000).get().max() < 10,
          True)

    # sort: the radix sort's histogram and one-sweep passes (many tiles, the look-back),
    # NaNs and -0.0, argsort's index payload, several rows, unique and searchsorted
    keys = rng.standard_normal(200_000 * k).astype(np.float32)
    keys[::97] = np.nan
    keys[1::101] = -0.0
    dk = cukit.to_device(keys)
    check("sort, float32 with NaNs", cukit.sort(dk), np.sort(keys), rtol=0, atol=0)
    check("argsort, int32 (stable)", cukit.argsort(di), np.argsort(i32, kind="stable"), rtol=0, atol=0)
    check("sort, rows of a matrix", cukit.sort(dm, axis=1), np.sort(m32, axis=1), rtol=0, atol=0)
    values, counts = cukit.unique(di, return_counts=True)
    want_values, want_counts = np.unique(i32, return_counts=True)
    check("unique, values", values, want_values, rtol=0, atol=0)
    check("unique, counts", counts, want_counts, rtol=0, atol=0)
    sorted_i = np.sort(i32)
    check("searchsorted", cukit.searchsorted(cukit.to_device(sorted_i), di),
          np.searchsorted(sorted_i, i32), rtol=0, atol=0)

    # strided copies and fills
    check("strided copy", cukit.ascontiguousarray(dm[::3, 1::2]), m32[::3, 1::2])
    z = cukit.zeros((640 * k, 384), np.float32)
    z[1::2, ::5] = 3.0
    ref = np.zeros_like(m32)
    ref[1::2, ::5] = 3.0
    check("strided fill", z, ref)

    cukit.synchronize()
    print(f"{len(failed)} of the families differ from numpy" if failed else "every family agrees")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
