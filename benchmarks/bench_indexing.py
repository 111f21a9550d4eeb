"""Advanced indexing: gathers, scatters and masks, cukit against CuPy and PyTorch in one run.

What it measures
    GB/s      bytes the operation must move (read + written) per second:
              gather a[idx] and scatter a[idx] = v of --n float32 with random int64
              indices; mask read a[a > 0.5] (the mask made beforehand) and mask write
              a[m] = 0; take_along_axis of an 8192 x 8192 float32 (argsort-shaped
              indices) along axis 1; nonzero of an --n-element bool mask.
    us        the host time of a[idx] on a one-element array (dispatch), beside a + b.
    Each figure is the median of --reps repetitions, the libraries interleaved, with
    the min and max beside it; each row gives cukit's ratio to the best peer.

Usage
    PYTHONPATH=src python benchmarks/bench_indexing.py [--n 67108864] [--reps 7] [--json out.json]
    On the emulator, as a smoke test: --quick
"""
import argparse
import time

import numpy as np

from _bench import (import_cukit, need_gpu, peer_array, peer_sync, peer_table, peers,
                    print_table, write_json)

cukit = import_cukit("bench_indexing")


def sync(name, lib):
    peer_sync(cukit, name, lib)


def dev(name, lib, host):
    return peer_array(cukit, name, lib, host)


def rate(name, lib, fn, nbytes, calls):
    fn()
    sync(name, lib)
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(name, lib)
    return nbytes * calls / (time.perf_counter() - t) / 1e9


def host_us(name, lib, fn, calls):
    fn()
    sync(name, lib)
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    dt = time.perf_counter() - t
    sync(name, lib)
    return dt / calls * 1e6


def take_along(name, lib):
    if name == "torch":
        return lambda a, i: lib.take_along_dim(a, i, dim=1)
    m = cukit if name == "cukit" else lib
    return lambda a, i: m.take_along_axis(a, i, 1)


def nonzero(name, lib):
    if name == "torch":
        return lambda m: lib.nonzero(m, as_tuple=True)
    m = cukit if name == "cukit" else lib
    return m.nonzero


def cases(name, lib, n, side, calls):
    rng = np.random.default_rng(0)
    a = dev(name, lib, rng.random(n, dtype=np.float32))
    idx = dev(name, lib, rng.integers(0, n, n))
    v = dev(name, lib, rng.random(n, dtype=np.float32))
    m = a > 0.5
    count = int(np.count_nonzero(rng.random(n) > 0.5))  # about the mask's trues
    sq = dev(name, lib, rng.random((side, side), dtype=np.float32))
    order = dev(name, lib, np.argsort(rng.random((side, side), dtype=np.float32), axis=1))
    one = dev(name, lib, np.ones(1, np.float32))
    one_idx = dev(name, lib, np.zeros(1, np.int64))
    ta, nz = take_along(name, lib), nonzero(name, lib)

    def scatter():
        a[idx] = v

    def mask_write():
        a[m] = 0

    c = {
        f"gather a[idx], {n} float32": ("GB/s", lambda: rate(name, lib, lambda: a[idx], n * 16, calls)),
        f"scatter a[idx] = v, {n} float32": ("GB/s", lambda: rate(name, lib, scatter, n * 16, calls)),
        f"mask read a[m], {n} float32": ("GB/s", lambda: rate(name, lib, lambda: a[m], n * 5 + count * 4, calls)),
        f"mask write a[m] = 0, {n} float32": ("GB/s", lambda: rate(name, lib, mask_write, n * 5 + count * 4, calls)),
        f"take_along_axis {side}x{side} float32": ("GB/s", lambda: rate(name, lib, lambda: ta(sq, order), side * side * 20, calls)),
        f"nonzero, {n} bool": ("GB/s", lambda: rate(name, lib, lambda: nz(m), n + count * 8, calls)),
        "host time a[idx], 1 element": ("us", lambda: host_us(name, lib, lambda: one[one_idx], 2000)),
        "host time a + b, 1 element": ("us", lambda: host_us(name, lib, lambda: one + one, 2000)),
    }
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1 << 26)
    ap.add_argument("--side", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="small sizes, one call: a check "
                    "that it runs (the emulator), not a measurement")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    need_gpu("bench_indexing", cukit, args.quick)
    if args.quick:
        args.n, args.side, args.calls, args.reps = 4096, 64, 1, min(args.reps, 2)
    found = peers(cukit)
    versions = {n: getattr(mod, "__version__", "?") for n, mod in found.items()}
    table = {n: cases(n, mod, args.n, args.side, args.calls) for n, mod in found.items()}
    rows, results, errors = peer_table(table, args.reps, lambda unit: "lower" if unit == "us" else "higher")
    name = cukit.Device().name
    print(f"device: {name}; " + ", ".join(f"{n} {v}" for n, v in versions.items())
          + f"; {args.reps} samples per row; ratio: cukit against the best peer (> 1: cukit ahead)")
    print_table(rows)
    write_json(args.json, {"device": name, "versions": versions, "runs": results,
                           "errors": errors}, rows, name)


if __name__ == "__main__":
    main()
