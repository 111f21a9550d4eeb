"""Matrix products: cukit's `a @ b` against PyTorch and CuPy in one run.

What it measures
    TFLOPS  2 * n^3 per product of two n x n matrices, --calls products timed between
            synchronizes: float32 (TF32 off, numpy's answer), float32 with TF32 on
            (cukit.linalg.set_tf32, torch's allow_tf32; CuPy only when CUPY_TF32=1 was
            set before it was imported), float16, bfloat16 (cukit with ml_dtypes;
            CuPy has none), and cukit's own GEMM (set_matmul_backend("cukit")) for
            the record beside cuBLAS.
    dispatch microseconds of host time per `a @ b` of 16 x 16 float32 matrices
            (--small-calls calls, then one synchronize; a new result each call).
    Each figure is the median of --reps repetitions, the libraries interleaved, with
    the min and max beside it; each row gives cukit's ratio to the best peer.

Usage
    PYTHONPATH=src python benchmarks/bench_matmul.py [--sizes 4096,8192] [--reps 5]
        [--json benchmarks/results/matmul.json]
    On the emulator, as a smoke test: --sizes 64 --reps 1 --calls 1 --small-calls 10
"""
import argparse
import os
import time

import numpy as np

from _bench import (import_cukit, need_gpu, peer_sync, peer_table, peers, print_table,
                    write_json)

cukit = import_cukit("bench_matmul")


def libs():
    return peers(cukit)


def sync(name, lib):
    peer_sync(cukit, name, lib)


def bf16_numpy():
    try:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        return None


def dev(name, lib, host, dtype):
    """host (float32) on the device as dtype ('float32', 'float16', 'bfloat16')."""
    if name == "torch":
        return lib.from_numpy(host).cuda().to(getattr(lib, dtype))
    if dtype == "bfloat16":
        if name == "cupy" or bf16_numpy() is None:
            raise NotImplementedError("no bfloat16 (CuPy has none; cukit needs ml_dtypes)")
        return cukit.to_device(host.astype(bf16_numpy()))
    arr = host.astype(dtype)
    return cukit.to_device(arr) if name == "cukit" else lib.asarray(arr)


def tflops(name, lib, fn, n, calls):
    fn()
    sync(name, lib)
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(name, lib)
    return 2.0 * n ** 3 * calls / (time.perf_counter() - t) / 1e12


def per_call_us(name, lib, fn, calls):
    fn()
    sync(name, lib)
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(name, lib)
    return (time.perf_counter() - t) / calls * 1e6


class Switch:
    """TF32 on (or cukit's own GEMM) for one measurement, the setting restored after."""

    def __init__(self, name, lib, what):
        self.name, self.lib, self.what = name, lib, what

    def __enter__(self):
        if self.what == "tf32":
            if self.name == "cukit":
                self.before = cukit.linalg.set_tf32(True)
            elif self.name == "torch":
                self.before = self.lib.backends.cuda.matmul.allow_tf32
                self.lib.backends.cuda.matmul.allow_tf32 = True
            elif os.environ.get("CUPY_TF32") != "1":
                raise NotImplementedError("CuPy reads CUPY_TF32=1 at import only")
        elif self.what == "own":
            if self.name != "cukit":
                raise NotImplementedError("cukit's own GEMM")
            self.before = cukit.linalg.set_matmul_backend("cukit")

    def __exit__(self, *exc):
        if self.what == "tf32" and self.name == "cukit":
            cukit.linalg.set_tf32(self.before)
        elif self.what == "tf32" and self.name == "torch":
            self.lib.backends.cuda.matmul.allow_tf32 = self.before
        elif self.what == "own":
            cukit.linalg.set_matmul_backend(self.before)


def cases(name, lib, sizes, calls, small_calls):
    """measure name -> (unit, callable returning the figure)."""
    rng = np.random.default_rng(0)
    c = {}
    for n in sizes:
        host_a = rng.standard_normal((n, n)).astype(np.float32)
        host_b = rng.standard_normal((n, n)).astype(np.float32)
        for label, dtype, switch in [("float32", "float32", None),
                                     ("float32 TF32", "float32", "tf32"),
                                     ("float16", "float16", None),
                                     ("bfloat16", "bfloat16", None),
                                     ("float32, cukit's own GEMM", "float32", "own")]:
            def run(dtype=dtype, switch=switch, n=n, ha=host_a, hb=host_b):
                a, b = dev(name, lib, ha, dtype), dev(name, lib, hb, dtype)
                if switch is None:
                    return tflops(name, lib, lambda: a @ b, n, calls)
                with Switch(name, lib, switch):
                    return tflops(name, lib, lambda: a @ b, n, calls)
            c[f"{n} x {n} {label}"] = ("TFLOPS", run)
    small = rng.standard_normal((16, 16)).astype(np.float32)

    def dispatch():
        a = dev(name, lib, small, "float32")
        return per_call_us(name, lib, lambda: a @ a, small_calls)
    c["a @ b dispatch, 16 x 16 float32"] = ("us", dispatch)
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--small-calls", type=int, default=20000)
    ap.add_argument("--quick", action="store_true", help="64 x 64 matrices, few calls: a check "
                    "that it runs (the emulator), not a measurement")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    need_gpu("bench_matmul", cukit, args.quick)
    if args.quick:
        args.sizes, args.calls, args.small_calls, args.reps = "64", 1, 10, min(args.reps, 3)
    sizes = [int(s) for s in args.sizes.split(",")]
    found = libs()
    versions = {n: getattr(mod, "__version__", "?") for n, mod in found.items()}
    table = {n: cases(n, mod, sizes, args.calls, args.small_calls) for n, mod in found.items()}
    rows, results, errors = peer_table(
        table, args.reps, lambda unit: "lower" if unit == "us" else "higher")
    info = cukit.linalg.matmul_info()
    dev = cukit.Device().name
    print(f"device: {dev}; " + ", ".join(f"{n} {v}" for n, v in versions.items())
          + f"; cuBLAS: {info['cublas'] or 'not loaded'} ({info['cublas_version']}); "
          f"{args.reps} samples per row; ratio: cukit against the best peer (> 1: cukit ahead)")
    print_table(rows)
    write_json(args.json, {"device": dev, "versions": versions, "cublas": info, "runs": results,
                           "errors": errors}, rows, dev)


if __name__ == "__main__":
    main()
