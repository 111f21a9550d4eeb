"""Reductions and scans: cukit against CuPy and PyTorch in one run.

What it measures
    dispatch  microseconds per sum() of a 1-element float32 array (20,000 calls, then
              one synchronize; the result is a new 0-d array each call), and per add()
              of two such arrays, the elementwise dispatch it is measured against.
    bandwidth GB/s counting the bytes read (reductions) or read plus written (cumsum
              and the copy), 20 calls timed between synchronizes, 64M float32 unless
              said: sum, max, argmax, dot (two inputs), float64 sum, sum along axis 0
              and axis 1 of an 8192 x 8192 matrix, cumsum, a ReductionKernel L2 norm
              (CuPy's form, where the library has one), and a device-to-device copy
              as the ceiling.
    min / median / max of --reps samples (each way warmed up first), the libraries
    interleaved; each row gives cukit's
    ratio to the best peer.

Usage
    PYTHONPATH=src python benchmarks/bench_reduce.py [--reps 7] [--quick] [--json benchmarks/results/reduce.json]
"""
import argparse
import statistics
import time
import numpy as np

from _bench import (error_row, import_cukit, interleaved, need_gpu, peer_array, peer_sync, peers,
                    print_table, ratio_to_best_peer, row, write_json)

cukit = import_cukit("bench_reduce")
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
    """measure name -> (unit, callable returning the figure)."""
    c = {}
    m = cukit if name == "cukit" else lib
    a1 = dev(name, lib, np.ones(1, np.float32))
    b1 = dev(name, lib, np.ones(1, np.float32))
    c["sum dispatch (1 element)"] = ("us", lambda: per_call_us(name, lib, lambda: m.sum(a1)))
    c["add dispatch (1 element)"] = ("us", lambda: per_call_us(name, lib, lambda: m.add(a1, b1)))
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
        copy = (lambda: cukit.copyto(out, x)) if name == "cukit" else (lambda: out.__setitem__(Ellipsis, x))  # noqa: E731
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
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="64K elements, few calls: a check "
                    "that it runs (the emulator), not a measurement")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    need_gpu("bench_reduce", cukit, args.quick)
    if args.quick:
        global N, CALLS, BW_CALLS, SIDE
        N, CALLS, BW_CALLS, SIDE, args.reps = 1 << 16, 20, 2, 256, min(args.reps, 3)
    found = libs()
    versions = {n: getattr(mod, "__version__", "?") for n, mod in found.items()}
    table = {n: cases(n, mod) for n, mod in found.items()}
    # every (library, measure) is one way; each sample function warms itself up too
    ways = {(n, k): fn for n in table for k, (_, fn) in table[n].items()}
    samples, errs = interleaved(ways, args.reps, warmup=1)
    errors = {key: e for key, e in errs.items()}
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
    # issue 23's goals: the sum and cumsum against a copy (bytes moved per second), the
    # sum's dispatch against add's
    c = med["cukit"]
    copy = c.get("device-to-device copy, 64M float32")
    for k in ("sum, 64M float32", "cumsum, 64M float32 (read + write)"):
        if k in c and copy:
            print(f"cukit {k.split(',')[0]} / copy: {c[k] / copy:.2f}")
    if "sum dispatch (1 element)" in c and "add dispatch (1 element)" in c:
        print(f"cukit sum dispatch - add dispatch: "
              f"{c['sum dispatch (1 element)'] - c['add dispatch (1 element)']:+.2f} us")
    write_json(args.json, {"device": dev, "versions": versions, "medians": med, "runs": results,
                           "errors": {f"{n}: {k}": e for (n, k), e in errors.items()}}, rows, dev)


if __name__ == "__main__":
    main()
