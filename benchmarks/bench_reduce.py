"""Reductions and scans: cukit against CuPy and PyTorch in one run.

What it measures
    dispatch  microseconds per sum() of a 1-element float32 array (20,000 calls, then
              one synchronize; the result is a new 0-d array each call).
    bandwidth GB/s counting the bytes read (reductions) or read plus written (cumsum
              and the copy), 20 calls timed between synchronizes, 64M float32 unless
              said: sum, max, argmax, dot (two inputs), float64 sum, sum along axis 0
              and axis 1 of an 8192 x 8192 matrix, cumsum, a ReductionKernel L2 norm
              (CuPy's form, where the library has one), and a device-to-device copy
              as the ceiling.
    Medians of --reps repetitions, the libraries interleaved; each row gives cukit's
    ratio to the best peer.

Usage
    PYTHONPATH=src python benchmarks/bench_reduce.py [--reps 5] [--json benchmarks/results/reduce.json]
"""
import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from _bench import import_cukit

cukit = import_cukit("bench_reduce")
N = 64 * 1024 * 1024
CALLS = 20000
BW_CALLS = 20
SIDE = 8192


def libs():
    out = {"cukit": cukit}
    try:
        import cupy
        out["cupy"] = cupy
    except Exception:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            out["torch"] = torch
    except Exception:
        pass
    return out


def sync(name, lib):
    if name == "cukit":
        cukit.synchronize()
    elif name == "cupy":
        lib.cuda.Device().synchronize()
    else:
        lib.cuda.synchronize()


def dev(name, lib, host):
    if name == "cukit":
        return cukit.to_device(host)
    if name == "cupy":
        return lib.asarray(host)
    return lib.from_numpy(host).cuda()


def per_call_us(name, lib, fn, calls=CALLS):
    fn()
    sync(name, lib)
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(name, lib)
    return (time.perf_counter() - t) / calls * 1e6


def gbps(name, lib, fn, nbytes):
    fn()
    sync(name, lib)
    t = time.perf_counter()
    for _ in range(BW_CALLS):
        fn()
    sync(name, lib)
    return nbytes * BW_CALLS / (time.perf_counter() - t) / 1e9


def cases(name, lib):
    """measure name -> (unit, callable returning the figure)."""
    c = {}
    m = cukit if name == "cukit" else lib
    a1 = dev(name, lib, np.ones(1, np.float32))
    c["sum dispatch (1 element)"] = ("us", lambda: per_call_us(name, lib, lambda: m.sum(a1)))
    rng = np.random.default_rng(0)
    host = rng.standard_normal(N).astype(np.float32)
    x, y = dev(name, lib, host), dev(name, lib, host[::-1].copy())
    out = dev(name, lib, np.empty(N, np.float32))
    c["sum, 64M float32"] = ("GB/s", lambda: gbps(name, lib, lambda: m.sum(x), 4 * N))
    c["max, 64M float32"] = ("GB/s", lambda: gbps(name, lib, lambda: x.max(), 4 * N))
    c["argmax, 64M float32"] = ("GB/s", lambda: gbps(name, lib, lambda: m.argmax(x), 4 * N))
    c["dot, 2 x 64M float32"] = ("GB/s", lambda: gbps(name, lib, lambda: m.dot(x, y), 8 * N))
    x64 = dev(name, lib, host[: N // 2].astype(np.float64))
    c["sum, 32M float64"] = ("GB/s", lambda: gbps(name, lib, lambda: m.sum(x64), 4 * N))
    sq = x.reshape(SIDE, SIDE) if name != "torch" else x.view(SIDE, SIDE)
    if name == "torch":
        ax0 = lambda: lib.sum(sq, 0)  # noqa: E731
        ax1 = lambda: lib.sum(sq, 1)  # noqa: E731
        cs = lambda: lib.cumsum(x, 0)  # noqa: E731
        copy = lambda: out.copy_(x)  # noqa: E731
    else:
        ax0 = lambda: m.sum(sq, axis=0)  # noqa: E731
        ax1 = lambda: m.sum(sq, axis=1)  # noqa: E731
        cs = lambda: m.cumsum(x)  # noqa: E731
        copy = (lambda: cukit.copy(out, x)) if name == "cukit" else (lambda: out.__setitem__(Ellipsis, x))  # noqa: E731
    c["sum axis 0, 8192 x 8192 float32"] = ("GB/s", lambda: gbps(name, lib, ax0, 4 * SIDE * SIDE))
    c["sum axis 1, 8192 x 8192 float32"] = ("GB/s", lambda: gbps(name, lib, ax1, 4 * SIDE * SIDE))
    c["cumsum, 64M float32 (read + write)"] = ("GB/s", lambda: gbps(name, lib, cs, 8 * N))
    c["device-to-device copy, 64M float32"] = ("GB/s", lambda: gbps(name, lib, copy, 8 * N))
    if name in ("cukit", "cupy"):
        l2 = m.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
        c["ReductionKernel L2 norm, 64M float32"] = ("GB/s", lambda: gbps(name, lib, lambda: l2(x), 4 * N))
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    found = libs()
    versions = {n: getattr(mod, "__version__", "?") for n, mod in found.items()}
    table = {n: cases(n, mod) for n, mod in found.items()}
    results = {n: {k: [] for k in table[n]} for n in table}
    errors = {}
    for _ in range(args.reps):
        for n in table:  # interleaved
            for k, (_, fn) in table[n].items():
                if (n, k) in errors:
                    continue
                try:
                    results[n][k].append(fn())
                except Exception as e:  # a library without this operation: say so, go on
                    errors[(n, k)] = f"{type(e).__name__}: {e}"
    for (n, k), e in errors.items():
        print(f"{n}: {k}: {e}")
    med = {n: {k: statistics.median(v) for k, v in r.items() if v} for n, r in results.items()}
    names = list(table)
    print(f"device: {cukit.Device().name}; " + ", ".join(f"{n} {v}" for n, v in versions.items()))
    print("| measure | " + " | ".join(names) + " | cukit vs best peer |")
    print("|---|" + "---|" * (len(names) + 1))
    for k, (unit, _) in table["cukit"].items():
        row = []
        for n in names:
            v = med[n].get(k)
            row.append("—" if v is None else f"{v:.2f} {unit}" if unit == "us" else f"{v:.0f} {unit}")
        peers = [med[n][k] for n in names if n != "cukit" and k in med[n]]
        ratio = ""
        if peers and k in med["cukit"]:
            best = min(peers) if unit == "us" else max(peers)
            ratio = f"{best / med['cukit'][k]:.2f}x" if unit == "us" else f"{med['cukit'][k] / best:.2f}x"
        print(f"| {k} | " + " | ".join(row) + f" | {ratio} |")
    c = med["cukit"]
    if "cumsum, 64M float32 (read + write)" in c and "device-to-device copy, 64M float32" in c:
        print(f"cumsum / copy: {c['cumsum, 64M float32 (read + write)'] / c['device-to-device copy, 64M float32']:.2f}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"device": cukit.Device().name, "versions": versions,
                                               "medians": med, "runs": results}, indent=1))


if __name__ == "__main__":
    main()
