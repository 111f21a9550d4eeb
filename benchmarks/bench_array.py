"""Array math: cukit against CuPy and PyTorch (and PyCUDA's GPUArray) in one run.

What it measures
    dispatch  microseconds per call on 1-element float32 arrays: 20,000 calls, then
              one synchronize (the GPU work is trivial, so this is the host cost):
              add(a, b, out=c), a + b (allocates its result), an ElementwiseKernel
              saxpy (z = a * x + y, allocating z); and empty(1) and empty(1M) float32
              dropped at once (an allocation and a free).
    bandwidth GB/s on 64M-element arrays (bytes read plus written per call), 20 calls
              timed between synchronizes: add in float32, float16 and float64; the
              saxpy kernel; a transposed float32 add (a.T + b, 8192 x 8192) against the
              contiguous one; exp per dtype; a 3-operation expression (a * x * x + b)
              fused into one kernel against the three separate operations; and a
              device-to-device copy of the same float32 array as the ceiling.
    min / median / max of --reps samples (each way warmed up first), the libraries
    interleaved. Each row gives cukit's
    ratio to the best peer (dispatch: peer time / cukit time, bandwidth: cukit / peer).

Usage
    PYTHONPATH=src python benchmarks/bench_array.py [--reps 7] [--quick] [--json benchmarks/results/array.json]
        [--plot benchmarks/results/array.png]
    python benchmarks/bench_array.py --replot benchmarks/results/array.json --plot benchmarks/results/array.png
"""
import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from _bench import (error_row, import_cukit, interleaved, need_gpu, peer_array, peer_sync, peers,
                    print_table, ratio_to_best_peer, row, write_json)

cukit = import_cukit("bench_array")
N = 64 * 1024 * 1024
CALLS = 20000
BW_CALLS = 20
SIDE = 8192


def libs():
    return peers(cukit)


def sync(name, lib):
    peer_sync(cukit, name, lib)


def dev(name, lib, host):
    return peer_array(cukit, name, lib, host)


def saxpy_kernel(name, lib):
    if name == "cukit":
        return cukit.ElementwiseKernel("T x, float32 a, T y", "T z", "z = a * x + y", "saxpy")
    if name == "cupy":
        return lib.ElementwiseKernel("T x, float32 a, T y", "T z", "z = a * x + y", "saxpy")
    return None


def per_call_us(name, lib, fn, calls=None):
    calls = calls or CALLS
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
    # allocating and dropping an array: the allocator's hot path (cukit's cache of freed
    # blocks, CuPy's and PyTorch's caching allocators)
    for label, n in (("empty(1) + free", 1), ("empty(1M) + free", 1 << 20)):
        if name == "cukit":
            c[label] = ("us", lambda n=n: per_call_us(name, lib, lambda: cukit.empty(n, f32)))
        elif name == "cupy":
            c[label] = ("us", lambda n=n: per_call_us(name, lib, lambda: lib.empty(n, f32)))
        elif name == "torch":
            c[label] = ("us", lambda n=n: per_call_us(
                name, lib, lambda: lib.empty(n, dtype=lib.float32, device="cuda")))
    if name == "cukit":
        # the same with every output from the pool and every free ordered through the
        # release stream (no cache of freed blocks): what these rows cost without it
        def pooled(fn):
            def run():
                was = cukit._keep_freed(False)
                try:
                    return per_call_us(name, lib, fn)
                finally:
                    cukit._keep_freed(was)
            return run
        c["a + b dispatch, no cache"] = ("us", pooled(lambda: a1 + b1))
        c["ElementwiseKernel saxpy dispatch, no cache"] = ("us", pooled(lambda: k(a1, 2.0, b1)))
        c["empty(1) + free, pool"] = ("us", pooled(lambda: cukit.empty(1, f32)))
        c["empty(1M) + free, pool"] = ("us", pooled(lambda: cukit.empty(1 << 20, f32)))

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
        copy = lambda: cukit.copyto(out, x)  # noqa: E731
    c["add bandwidth, 64M float32"] = ("GB/s", lambda: gbps(name, lib, addout, 12 * N))
    c["device-to-device copy, 64M float32"] = ("GB/s", lambda: gbps(name, lib, copy, 8 * N))
    if k is not None:
        c["ElementwiseKernel saxpy bandwidth"] = ("GB/s", lambda: gbps(name, lib, lambda: k(x, 2.0, y), 12 * N))
    side = SIDE
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


def plot(doc, path):
    """Bars of cukit's ratio to the best peer per measure (higher is better for cukit),
    from the JSON this script writes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    med = doc["median"]
    rows = []
    for k, v in med["cukit"].items():
        peers = [med[n][k] for n in med if n != "cukit" and k in med[n]]
        if not peers:
            continue
        if "dispatch" in k or "+ free" in k:  # microseconds: lower is better
            rows.append((k, min(peers) / v))
        else:
            rows.append((k, v / max(peers)))
    c = med["cukit"]
    t_key, a_key = "add 8192x8192 transposed (a.T + b)", "add 8192x8192 contiguous"
    fig, ax = plt.subplots(figsize=(10, 0.38 * len(rows) + 1.6))
    names = [r[0] for r in rows][::-1]
    vals = [r[1] for r in rows][::-1]
    ax.barh(names, vals, color=["tab:green" if v >= 1 else "tab:red" for v in vals])
    ax.axvline(1.0, color="k", lw=0.8)
    for i, v in enumerate(vals):
        ax.text(v, i, f" {v:.2f}x", va="center", fontsize=8)
    title = f"cukit vs the best of {', '.join(n for n in med if n != 'cukit')} on {doc['device']}"
    if t_key in c and a_key in c:
        title += f"\ntransposed / contiguous add: {c[t_key] / c[a_key]:.2f}"
    ax.set_title(title, fontsize=8)
    ax.set_xlabel("cukit / best peer (dispatch: peer time / cukit time)")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="64K elements, few calls: a check "
                    "that it runs (the emulator), not a measurement")
    ap.add_argument("--json", default=None)
    ap.add_argument("--plot", default=None, help="draw the ratios into this PNG (matplotlib)")
    ap.add_argument("--replot", default=None, help="draw --plot from this JSON, measuring nothing")
    args = ap.parse_args()
    if args.replot:
        plot(json.loads(Path(args.replot).read_text()), args.plot or "benchmarks/results/array.png")
        return
    need_gpu("bench_array", cukit, args.quick)
    if args.quick:
        global N, CALLS, BW_CALLS, SIDE
        N, CALLS, BW_CALLS, SIDE, args.reps = 1 << 16, 20, 2, 256, min(args.reps, 3)
    found = libs()
    versions = {n: getattr(mod, "__version__", "?") for n, mod in found.items()}
    table = {n: cases(n, mod) for n, mod in found.items()}
    # every (library, measure) is one way; each sample function warms itself up too
    ways = {(n, k): fn for n in table for k, (_, fn) in table[n].items()}
    samples, errors = interleaved(ways, args.reps, warmup=1)
    for (n, k), e in errors.items():
        print(f"{n}: {k}: {e}")
    results = {n: {k: samples.get((n, k), []) for k in table[n]} for n in table}
    med = {n: {k: statistics.median(v) for k, v in r.items() if v} for n, r in results.items()}
    rows = []
    for k, (unit, _) in table["cukit"].items():
        for n in table:
            if (n, k) in samples:
                rows.append(row(k, n, samples[(n, k)], unit,
                                better="lower" if unit == "us" else "higher"))
            elif (n, k) in errors:
                rows.append(error_row(k, n, unit, errors[(n, k)]))
    ratio_to_best_peer(rows)
    dev = cukit.Device().name
    print(f"device: {dev}; " + ", ".join(f"{n} {v}" for n, v in versions.items())
          + f"; {args.reps} samples per row; ratio: cukit against the best peer (> 1: cukit ahead)")
    print_table(rows)
    c = med["cukit"]
    if len(c) == len(table["cukit"]):
        print(f"transposed / contiguous add: {c['add 8192x8192 transposed (a.T + b)'] / c['add 8192x8192 contiguous']:.2f}; "
              f"fused / unfused: {c['a*x*x + b fused (1 kernel)'] / c['a*x*x + b unfused (3 kernels)']:.2f}x")
    doc = {"device": dev, "versions": versions, "median": med, "samples": results,
           "errors": {f"{n}: {k}": e for (n, k), e in errors.items()}}
    write_json(args.json, doc, rows, dev)
    if args.plot:
        try:
            plot(doc, args.plot)
        except ImportError:
            print("no plot: matplotlib is not installed (pip install matplotlib)")


if __name__ == "__main__":
    main()
