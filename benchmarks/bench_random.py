"""Random numbers: cukit.random against CuPy (default_rng and the legacy RandomState) and PyTorch.

What it measures
    The bandwidth of filling a preallocated device array with random numbers
    (bytes written per second; 64M float32 by default, and as many bytes of
    float64), min / median / max of REPS samples (at least 0.2 s of warm-up calls first), each
    sample timed with events around CALLS back-to-back draws on the legacy default stream (which PyTorch and
    CuPy also use by default, so one pair of cukit events times theirs too).

    * raw baseline: cukit's fill() of the same array, a memset: the write
      bandwidth no generator can beat.
    * cukit: default_rng(1), i.e. Generator(Philox4x32): random /
      standard_normal / integers into out=. Its normals are Box-Muller on pairs
      (float32 on the hardware's lg2/sqrt/sin/cos), its integers below 2**32
      values Lemire's 32-bit multiply-shift on one 32-bit half each.
    * cukit Philox: Generator(Philox), whose random() is numpy's Philox stream
      bit for bit (float32 too); Philox4x64's 64-bit multiplies cost more, and
      its normals are the inverse normal CDF, its integers one word each.
    * CuPy default_rng (XORWOW, cuRAND's device generator): random /
      standard_normal into out=, integers (allocates its result).
    * CuPy legacy RandomState (cuRAND's host API): random_sample /
      standard_normal / randint, which allocate their result (from CuPy's memory pool).
    * PyTorch: tensor.uniform_() / normal_() / random_(0, 1000) (Philox4x32-10).

    Each library's call is warmed up on its own (timer() calls warm_up) before its
    samples, so no library pays for another's compile, pool growth or clock ramp.

    A library that is not importable is left out; its cells read n/a. Each row
    gives its ratio to the raw baseline. Before timing, cukit's first million
    float32 uniforms are checked against numpy's, so a wrong stream shows.

Usage
    PYTHONPATH=src python benchmarks/bench_random.py [--n 67108864] [--reps 9] [--quick] [--json benchmarks/results/random.json]
"""
import argparse
from pathlib import Path

import numpy as np

from _bench import import_cukit, need_gpu, print_table, row, warm_up, write_json

HERE = Path(__file__).resolve().parent
CALLS = 10


def timer(cukit, fn, reps):
    start, end = cukit.Event(), cukit.Event()
    warm_up(fn, cukit.synchronize)  # the pools, the kernels, the clocks
    samples = []
    for _ in range(reps):
        start.record()
        for _ in range(CALLS):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / CALLS)
    return samples


def check_stream(cukit):
    import cukit.random as cr
    ours = cr.Generator(cr.Philox(key=2024)).random(1 << 20, dtype=np.float32).get()
    theirs = np.random.Generator(np.random.Philox(key=2024)).random(1 << 20, dtype=np.float32)
    return bool(np.array_equal(ours, theirs))


def cases(cukit, n):
    """(row, dtype) -> {library: fn}; every fn writes n float32 or int32 elements, or n // 2
    float64 ones: the same bytes."""
    import cukit.random as cr
    g = cr.default_rng(1)
    gp = cr.Generator(cr.Philox(1))
    size = {np.float32: n, np.float64: n // 2}
    arrays = {dt: cukit.empty(size[dt], dt) for dt in size}
    ints = cukit.empty(n, np.int32)
    rows = {
        ("raw baseline: fill (memset)", np.float32): {"cukit": lambda: arrays[np.float32].fill(0.0)},
        ("uniform", np.float32): {"cukit": lambda: g.random(dtype=np.float32, out=arrays[np.float32])},
        ("normal", np.float32): {"cukit": lambda: g.standard_normal(dtype=np.float32,
                                                                    out=arrays[np.float32])},
        ("uniform", np.float64): {"cukit": lambda: g.random(out=arrays[np.float64])},
        ("normal", np.float64): {"cukit": lambda: g.standard_normal(out=arrays[np.float64])},
        ("integers [0, 1000)", np.int32): {"cukit": lambda: g.integers(0, 1000, dtype=np.int32,
                                                                       out=ints)},
    }
    for dt in (np.float32, np.float64):
        rows[("uniform", dt)]["cukit Philox"] = lambda dt=dt: gp.random(dtype=dt, out=arrays[dt])
        rows[("normal", dt)]["cukit Philox"] = (
            lambda dt=dt: gp.standard_normal(dtype=dt, out=arrays[dt]))
    rows[("integers [0, 1000)", np.int32)]["cukit Philox"] = (
        lambda: gp.integers(0, 1000, dtype=np.int32, out=ints))
    try:
        import cupy
        rng = cupy.random.default_rng(1)
        legacy = cupy.random.RandomState(1)
        c = {dt: cupy.empty(size[dt], dt) for dt in size}
        for dt in (np.float32, np.float64):
            rows[("uniform", dt)]["cupy default_rng"] = lambda dt=dt: rng.random(dtype=dt, out=c[dt])
            rows[("normal", dt)]["cupy default_rng"] = (
                lambda dt=dt: rng.standard_normal(dtype=dt, out=c[dt]))
            rows[("uniform", dt)]["cupy legacy"] = (
                lambda dt=dt: legacy.random_sample(size[dt], dtype=dt))
            rows[("normal", dt)]["cupy legacy"] = (
                lambda dt=dt: legacy.standard_normal(size[dt], dtype=dt))
        rows[("integers [0, 1000)", np.int32)]["cupy default_rng"] = (
            lambda: rng.integers(0, 1000, n, dtype=np.int32))
        rows[("integers [0, 1000)", np.int32)]["cupy legacy"] = (
            lambda: legacy.randint(0, 1000, n, dtype=np.int32))
    except ImportError:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            t = {np.float32: torch.empty(n, device="cuda", dtype=torch.float32),
                 np.float64: torch.empty(n // 2, device="cuda", dtype=torch.float64)}
            ti = torch.empty(n, device="cuda", dtype=torch.int32)
            for dt in (np.float32, np.float64):
                rows[("uniform", dt)]["torch"] = lambda dt=dt: t[dt].uniform_()
                rows[("normal", dt)]["torch"] = lambda dt=dt: t[dt].normal_()
            rows[("integers [0, 1000)", np.int32)]["torch"] = lambda: ti.random_(0, 1000)
    except ImportError:
        pass
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=64 << 20, help="float32 elements (default 64M)")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--quick", action="store_true", help="64K elements, 3 repetitions: a check "
                    "that it runs (the emulator), not a measurement")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    cukit = import_cukit("bench_random")
    need_gpu("bench_random", cukit, args.quick)
    if args.quick:
        args.n, args.reps = min(args.n, 1 << 16), min(args.reps, 3)
    device = cukit.Device()
    libs = ["cukit", "cukit Philox", "cupy default_rng", "cupy legacy", "torch"]
    ok = check_stream(cukit)
    results, table = [], []
    baseline = None
    for (name, dt), fns in cases(cukit, args.n).items():
        n = args.n if np.dtype(dt).itemsize <= 4 else args.n // 2  # the same bytes
        nbytes = n * np.dtype(dt).itemsize
        res = {"case": name, "dtype": np.dtype(dt).name, "bytes": nbytes}
        for lib in libs:
            if lib in fns:
                try:
                    ms = timer(cukit, fns[lib], args.reps)
                except Exception as e:  # a peer's version without this call
                    print(f"{lib} {name} {np.dtype(dt).name}: {type(e).__name__}: {e}")
                    continue
                r = row(f"{name} {np.dtype(dt).name}", lib, [nbytes / t / 1e6 for t in ms], "GB/s")
                table.append(r)
                # the older keys (median figures) and the new ones
                res[lib] = {"ms": nbytes / r["median"] / 1e6, "GBps": r["median"], "min": r["min"],
                            "max": r["max"], "spread": r["spread"]}
        if name.startswith("raw baseline"):
            baseline = res["cukit"]["GBps"]
        results.append(res)
    for r in table:  # x the memset
        if baseline:
            r["ratio"] = r["median"] / baseline
    print(f"{device.name}: bytes written per second (GB/s), {args.n >> 20}M float32 "
          f"({args.n * 4 >> 20} MiB); {args.reps} samples of {CALLS} calls each, ratio to the "
          f"memset. cukit float32 uniforms equal numpy's: {ok}")
    print_table(table)
    write_json(args.json, {"device": device.name, "n": args.n, "reps": args.reps, "calls": CALLS,
                           "numpy_stream_equal": ok, "rows": results}, table, device.name)


if __name__ == "__main__":
    main()
