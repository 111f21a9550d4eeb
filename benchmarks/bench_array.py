"""Array math: cukit against CuPy and PyTorch (and PyCUDA's GPUArray) in one run.

What it measures
    dispatch  microseconds per call on 1-element float32 arrays: 20,000 calls, then
              one synchronize (the GPU work is trivial, so this is the host cost):
              add(a, b, out=c), a + b (allocates its result), an ElementwiseKernel
              saxpy (z = a * x + y, allocating z).
    bandwidth GB/s on 64M-element arrays (bytes read plus written per call), 20 calls
              timed between synchronizes: add in float32, float16 and float64; the
              saxpy kernel; a transposed float32 add (a.T + b, 8192 x 8192) against the
              contiguous one; exp per dtype; a 3-operation expression (a * x * x + b)
              fused into one kernel against the three separate operations; and a
              device-to-device copy of the same float32 array as the ceiling.
    Medians of --reps repetitions, the libraries interleaved. Each row gives cukit's
    ratio to the best peer (dispatch: peer time / cukit time, bandwidth: cukit / peer).

Usage
    PYTHONPATH=src python benchmarks/bench_array.py [--reps 5] [--json benchmarks/results/array.json]
"""
import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from _bench import import_cukit

cukit = import_cukit("bench_array")
N = 64 * 1024 * 1024
CALLS = 20000
BW_CALLS = 20


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


def saxpy_kernel(name, lib):
    if name == "cukit":
        return cukit.ElementwiseKernel("T x, float32 a, T y", "T z", "z = a * x + y", "saxpy")
    if name == "cupy":
        return lib.ElementwiseKernel("T x, float32 a, T y", "T z", "z = a * x + y", "saxpy")
    return None


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
    """measure name -> (kind, callable returning the figure)."""
    c = {}
    f32 = np.float32
    one = [dev(name, lib, np.ones(1, f32)) for _ in range(3)]
    a1, b1, c1 = one
    if name == "cukit":
        c["add(a, b, out=c) dispatch"] = ("us", lambda: per_call_us(name, lib, lambda: cukit.add(a1, b1, out=c1)))
    elif name == "cupy":
        c["add(a, b, out=c) dispatch"] = ("us", lambda: per_call_us(name, lib, lambda: lib.add(a1, b1, out=c1)))
    else:
        c["add(a, b, out=c) dispatch"] = ("us", lambda: per_call_us(name, lib, lambda: lib.add(a1, b1, out=c1)))
    c["a + b dispatch"] = ("us", lambda: per_call_us(name, lib, lambda: a1 + b1))
    k = saxpy_kernel(name, lib)
    if k is not None:
        c["ElementwiseKernel saxpy dispatch"] = ("us", lambda: per_call_us(name, lib, lambda: k(a1, 2.0, b1)))

    rng = np.random.default_rng(0)
    host = rng.standard_normal(N).astype(f32)
    x, y = dev(name, lib, host), dev(name, lib, host[::-1].copy())
    out = dev(name, lib, np.empty(N, f32))
    if name == "torch":
        addout = lambda: lib.add(x, y, out=out)  # noqa: E731
        copy = lambda: out.copy_(x)  # noqa: E731
    elif name == "cupy":
        addout = lambda: lib.add(x, y, out=out)  # noqa: E731
        copy = lambda: out.__setitem__(Ellipsis, x)  # noqa: E731
    else:
        addout = lambda: cukit.add(x, y, out=out)  # noqa: E731
        copy = lambda: cukit.copy(out, x)  # noqa: E731
    c["add bandwidth, 64M float32"] = ("GB/s", lambda: gbps(name, lib, addout, 12 * N))
    c["device-to-device copy, 64M float32"] = ("GB/s", lambda: gbps(name, lib, copy, 8 * N))
    if k is not None:
        c["ElementwiseKernel saxpy bandwidth"] = ("GB/s", lambda: gbps(name, lib, lambda: k(x, 2.0, y), 12 * N))
    side = 8192
    sq = dev(name, lib, host[: side * side].reshape(side, side))
    sq2 = dev(name, lib, host[: side * side][::-1].copy().reshape(side, side))
    c["add 8192x8192 contiguous"] = ("GB/s", lambda: gbps(name, lib, lambda: sq + sq2, 12 * side * side))
    c["add 8192x8192 transposed (a.T + b)"] = ("GB/s", lambda: gbps(name, lib, lambda: sq.T + sq2, 12 * side * side))
    for dt in ("float16", "float64"):
        h = host.astype(dt)
        p, q = dev(name, lib, h), dev(name, lib, h[::-1].copy())
        sz = np.dtype(dt).itemsize
        c[f"add bandwidth, 64M {dt}"] = ("GB/s", lambda p=p, q=q, sz=sz: gbps(name, lib, lambda: p + q, 3 * sz * N))
    for dt in ("float16", "float32", "float64", "complex64"):
        h = (host[: N // 2] * 0.1).astype(dt)
        p = dev(name, lib, h)
        sz = np.dtype(dt).itemsize
        ex = (lambda p=p: cukit.exp(p)) if name == "cukit" else (lambda p=p: lib.exp(p))
        c[f"exp bandwidth, 32M {dt}"] = ("GB/s", lambda ex=ex, sz=sz: gbps(name, lib, ex, 2 * sz * N // 2))
    unfused = lambda: 2.0 * x * x + 1.0  # noqa: E731
    c["a*x*x + b unfused (3 kernels)"] = ("GB/s", lambda: gbps(name, lib, unfused, 8 * N))
    if name in ("cukit", "cupy"):
        def axxb(x, a, b):
            return a * x * x + b
        fused = lib.fuse(axxb)
        c["a*x*x + b fused (1 kernel)"] = ("GB/s", lambda: gbps(name, lib, lambda: fused(x, 2.0, 1.0), 8 * N))
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    found = libs()
    versions = {n: getattr(m, "__version__", "?") for n, m in found.items()}
    table = {n: cases(n, m) for n, m in found.items()}
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
    if len(c) == len(table["cukit"]):
        print(f"transposed / contiguous add: {c['add 8192x8192 transposed (a.T + b)'] / c['add 8192x8192 contiguous']:.2f}; "
              f"fused / unfused: {c['a*x*x + b fused (1 kernel)'] / c['a*x*x + b unfused (3 kernels)']:.2f}x")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"device": cukit.Device().name, "versions": versions,
                                               "median": med, "samples": results,
                                               "errors": {f"{n}: {k}": e for (n, k), e in errors.items()}},
                                              indent=1))


if __name__ == "__main__":
    main()
