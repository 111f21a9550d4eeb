"""Sorting: cukit.sort and argsort against CuPy and PyTorch in one run.

What it measures
    G keys/s  keys sorted per second: --n keys (2^26 by default) of float32 and int32
              (--dtypes for others),
              sort and argsort (stable in each library: CuPy's radix sort is, PyTorch
              is asked for stable=True), --calls calls timed between synchronizes.
    Each figure is the median of --reps repetitions, the libraries interleaved, with
    the min and max beside it; each row gives cukit's ratio to the best peer.

Usage
    PYTHONPATH=src python benchmarks/bench_sort.py [--n 67108864] [--reps 5] [--json out.json]
    On the emulator, as a smoke test: --n 4096 --reps 1 --calls 1
"""
import argparse
import time

import numpy as np

from _bench import (import_cukit, need_gpu, peer_array, peer_sync, peer_table, peers,
                    print_table, write_json)

cukit = import_cukit("bench_sort")


def libs():
    return peers(cukit)


def sync(name, lib):
    peer_sync(cukit, name, lib)


def dev(name, lib, host):
    return peer_array(cukit, name, lib, host)


def op(name, lib, which):
    if name == "torch":
        if which == "sort":
            return lambda x: lib.sort(x, stable=True)
        return lambda x: lib.argsort(x, stable=True)
    m = cukit if name == "cukit" else lib
    return getattr(m, which)


def keys_per_s(name, lib, fn, x, n, calls):
    fn(x)
    sync(name, lib)
    t = time.perf_counter()
    for _ in range(calls):
        fn(x)
    sync(name, lib)
    return n * calls / (time.perf_counter() - t) / 1e9


def keys(rng, dtype, n):
    """n random keys of dtype: normal floats, integers over the whole range."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def cases(name, lib, n, calls, dtypes):
    rng = np.random.default_rng(0)
    hosts = {d: keys(rng, d, n) for d in dtypes}
    c = {}
    for which in ("sort", "argsort"):
        for dtype, host in hosts.items():
            def run(which=which, host=host):
                return keys_per_s(name, lib, op(name, lib, which), dev(name, lib, host), n, calls)
            c[f"{which}, {n} {dtype}"] = ("G keys/s", run)
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1 << 26)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="4096 keys, one call: a check that "
                    "it runs (the emulator), not a measurement")
    ap.add_argument("--dtypes", default="float32,int32", help="comma-separated key dtypes "
                    "(e.g. float32,int32,float64,int64,uint16,uint8)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    need_gpu("bench_sort", cukit, args.quick)
    if args.quick:
        args.n, args.calls, args.reps = 4096, 1, min(args.reps, 3)
    found = libs()
    versions = {n: getattr(mod, "__version__", "?") for n, mod in found.items()}
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    table = {n: cases(n, mod, args.n, args.calls, dtypes) for n, mod in found.items()}
    rows, results, errors = peer_table(table, args.reps, lambda unit: "higher")
    dev = cukit.Device().name
    print(f"device: {dev}; " + ", ".join(f"{n} {v}" for n, v in versions.items())
          + f"; {args.reps} samples per row; ratio: cukit against the best peer (> 1: cukit ahead)")
    print_table(rows)
    write_json(args.json, {"device": dev, "versions": versions, "runs": results,
                           "errors": errors}, rows, dev)


if __name__ == "__main__":
    main()
