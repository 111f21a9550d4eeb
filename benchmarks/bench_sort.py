"""Sorting: cukit.sort and argsort against CuPy and PyTorch in one run.

What it measures
    G keys/s  keys sorted per second: --n keys (2^26 by default) of float32 and int32,
              sort and argsort (stable in each library: CuPy's radix sort is, PyTorch
              is asked for stable=True), --calls calls timed between synchronizes.
    Each figure is the median of --reps repetitions, the libraries interleaved, with
    the min and max beside it; each row gives cukit's ratio to the best peer.

Usage
    PYTHONPATH=src python benchmarks/bench_sort.py [--n 67108864] [--reps 5] [--json out.json]
    On the emulator, as a smoke test: --n 4096 --reps 1 --calls 1
"""
import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from _bench import import_cukit

cukit = import_cukit("bench_sort")


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


def cases(name, lib, n, calls):
    rng = np.random.default_rng(0)
    hosts = {"float32": rng.standard_normal(n).astype(np.float32),
             "int32": rng.integers(-2**31, 2**31 - 1, n, dtype=np.int32)}
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
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    found = libs()
    versions = {n: getattr(mod, "__version__", "?") for n, mod in found.items()}
    table = {n: cases(n, mod, args.n, args.calls) for n, mod in found.items()}
    results = {n: {k: [] for k in table[n]} for n in table}
    errors = {}
    for _ in range(args.reps):
        for n in table:  # interleaved
            for k, (_, fn) in table[n].items():
                if (n, k) in errors:
                    continue
                try:
                    results[n][k].append(fn())
                except Exception as e:
                    errors[(n, k)] = f"{type(e).__name__}: {e}"
    for (n, k), e in errors.items():
        print(f"{n}: {k}: {e}")
    stats = {n: {k: (min(v), statistics.median(v), max(v)) for k, v in r.items() if v}
             for n, r in results.items()}
    names = list(table)
    print(f"device: {cukit.Device().name}; " + ", ".join(f"{n} {v}" for n, v in versions.items()))
    print("| measure | " + " | ".join(f"{n} median (min–max)" for n in names)
          + " | cukit vs best peer |")
    print("|---|" + "---|" * (len(names) + 1))
    for k, (unit, _) in table["cukit"].items():
        row = ["—" if k not in stats[n] else
               "{:.3g} {} ({:.3g}–{:.3g})".format(stats[n][k][1], unit, stats[n][k][0], stats[n][k][2])
               for n in names]
        peers = [stats[n][k][1] for n in names if n != "cukit" and k in stats[n]]
        ratio = f"{stats['cukit'][k][1] / max(peers):.2f}x" if peers and k in stats["cukit"] else ""
        print(f"| {k} | " + " | ".join(row) + f" | {ratio} |")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(
            {"device": cukit.Device().name, "versions": versions,
             "stats": {n: {k: list(v) for k, v in s.items()} for n, s in stats.items()},
             "runs": results}, indent=1))


if __name__ == "__main__":
    main()
