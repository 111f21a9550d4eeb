"""Linear algebra: cukit.linalg against CuPy and PyTorch in one run.

What it measures
    ms      milliseconds per call, --calls calls timed between synchronizes (each call
            reads its result's failure flags back, as every library here does for the
            routines that raise): solve (one right-hand side) and inv of 4096 x 4096,
            cholesky of 8192 x 8192, qr of 4096 x 4096, eigh and svd of 2048 x 2048, each
            float32 and float64; batched inv and solve of 10000 x 8 x 8 and eigh of
            1000 x 32 x 32 (float32). cukit's own kernels
            (cukit.linalg.set_solver_backend("cukit")) are measured for the record on the
            batched rows and on 256 x 256 matrices, beside cuSOLVER.
    Each figure is the median of --reps repetitions, the libraries interleaved, with
    the min and max beside it; each row gives cukit's ratio to the best peer (> 1:
    cukit faster).

Usage
    PYTHONPATH=src python benchmarks/bench_linalg.py [--reps 5] [--json benchmarks/results/linalg.json]
        [--only cholesky "inv batched"]   (rows whose label holds one of the words)
    On the emulator, as a smoke test: --quick
"""
import argparse
import time

import numpy as np

from _bench import (import_cukit, need_gpu, peer_sync, peer_table, peers, print_table,
                    write_json)

cukit = import_cukit("bench_linalg")


def sync(name, lib):
    peer_sync(cukit, name, lib)


def dev(name, lib, host):
    if name == "torch":
        return lib.from_numpy(host).cuda()
    return cukit.to_device(host) if name == "cukit" else lib.asarray(host)


def routine(name, lib, op, a, b):
    """A callable running `op` on the device operands (b: solve's right-hand side)."""
    la = cukit.linalg if name == "cukit" else lib.linalg
    if op == "solve":
        return lambda: la.solve(a, b)
    if op == "inv":
        return lambda: la.inv(a)
    if op == "cholesky":
        return lambda: la.cholesky(a)
    if op == "qr":
        return lambda: la.qr(a)
    if op == "eigh":
        return lambda: la.eigh(a)
    if op == "svd":
        return lambda: la.svd(a, full_matrices=False)
    raise ValueError(op)


def ms_per_call(name, lib, fn, calls):
    fn()
    sync(name, lib)
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(name, lib)
    return (time.perf_counter() - t) / calls * 1e3


class Own:
    """cukit's own kernels for one measurement, the backend restored after."""

    def __enter__(self):
        self.before = cukit.linalg.set_solver_backend("cukit")

    def __exit__(self, *exc):
        cukit.linalg.set_solver_backend(self.before)


def operands(rng, op, shape, dtype):
    """Host operands of op: well-conditioned (or positive definite, or symmetric) a, and
    a right-hand side for solve."""
    n = shape[-1]
    a = rng.standard_normal(shape).astype(dtype)
    if op in ("solve", "inv"):
        a = a + np.asarray(n * np.eye(n), dtype)
    elif op == "cholesky":
        a = (a @ np.swapaxes(a, -1, -2) / n + np.eye(n)).astype(dtype)
    elif op == "eigh":
        a = ((a + np.swapaxes(a, -1, -2)) / 2).astype(dtype)
    # one right-hand side: a vector for one matrix, (batch, n, 1) for a stack
    b = rng.standard_normal(shape[:-1] + ((1,) if len(shape) > 2 else ())).astype(dtype)
    return a, b


def rows_of(quick):
    """(label, op, shape, dtype, own): own also measures cukit's own kernels."""
    if quick:
        big = [("solve", 32), ("inv", 32), ("cholesky", 32), ("qr", 32), ("eigh", 16), ("svd", 16)]
        batched = [("inv", (50, 8, 8)), ("solve", (50, 8, 8)), ("eigh", (10, 8, 8))]
        own_n = 12
    else:
        big = [("solve", 4096), ("inv", 4096), ("cholesky", 8192), ("qr", 4096), ("eigh", 2048),
               ("svd", 2048)]
        batched = [("inv", (10000, 8, 8)), ("solve", (10000, 8, 8)), ("eigh", (1000, 32, 32))]
        own_n = 256
    out = []
    for op, n in big:
        for dtype in (np.float32, np.float64):
            out.append((f"{op} {n} x {n} {np.dtype(dtype).name}", op, (n, n), dtype, False))
    for op, shape in batched:
        label = f"{op} batched {shape[0]} x {shape[1]} x {shape[2]} float32"
        out.append((label, op, shape, np.float32, True))
    for op, _ in big:
        out.append((f"{op} {own_n} x {own_n} float32", op, (own_n, own_n), np.float32, True))
    return out


def cases(name, lib, quick, calls, only=()):
    """measure name -> (unit, callable returning the figure); only: the rows whose label
    holds one of these words (every row when empty)."""
    rng = np.random.default_rng(0)
    c = {}
    for label, op, shape, dtype, own in rows_of(quick):
        if only and not any(word in label for word in only):
            continue
        ha, hb = operands(rng, op, shape, dtype)
        for mine in (False, True):
            if mine and (name != "cukit" or not own):
                continue

            def run(op=op, ha=ha, hb=hb, mine=mine):
                a, b = dev(name, lib, ha), dev(name, lib, hb)
                fn = routine(name, lib, op, a, b)
                if mine:
                    with Own():
                        return ms_per_call(name, lib, fn, calls)
                return ms_per_call(name, lib, fn, calls)
            c[label + (", cukit's own kernels" if mine else "")] = ("ms", run)
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small matrices, one call: a check "
                    "that it runs (the emulator), not a measurement")
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", nargs="+", default=(), metavar="WORDS",
                    help="the rows whose label holds one of these (e.g. 'cholesky' 'batched')")
    args = ap.parse_args()
    need_gpu("bench_linalg", cukit, args.quick)
    if args.quick:
        args.calls, args.reps = 1, min(args.reps, 2)
    found = peers(cukit)
    versions = {n: getattr(mod, "__version__", "?") for n, mod in found.items()}
    table = {n: cases(n, mod, args.quick, args.calls, args.only) for n, mod in found.items()}
    rows, results, errors = peer_table(table, args.reps, lambda unit: "lower")
    info = cukit.linalg.solver_info()
    device = cukit.Device().name
    print(f"device: {device}; " + ", ".join(f"{n} {v}" for n, v in versions.items())
          + f"; cuSOLVER: {info['cusolver'] or 'not loaded'} ({info['cusolver_version']}); "
          f"{args.reps} samples per row; ratio: cukit against the best peer (> 1: cukit ahead)")
    print_table(rows)
    write_json(args.json, {"device": device, "versions": versions, "cusolver": info,
                           "runs": results,
                           "errors": errors}, rows,
               device)


if __name__ == "__main__":
    main()
