"""FFTs: cukit.fft against CuPy and PyTorch in one run.

What it measures
    GB/s    bytes read and written (input + output) per transform over its time, --calls
            transforms timed between synchronizes, plans warm: a 1-D complex64 FFT of
            2^24, a batch of 4096 FFTs of 4096 (complex64), a 2-D 4096 x 4096 complex64
            FFT, a real-to-complex FFT of 2^24 float32, a 3-D 256^3 complex64 FFT and an
            odd length (3^15 complex64); and the same on cukit's own kernels
            (cukit.fft.set_backend("cukit")) for the record beside cuFFT.
    dispatch microseconds of host time per `fft` of one complex64 element with a warm
            plan (--small-calls calls, then one synchronize).
    Each figure is the median of --reps repetitions, the libraries interleaved, with
    the min and max beside it; each row gives cukit's ratio to the best peer.

Usage
    PYTHONPATH=src python benchmarks/bench_fft.py [--reps 7] [--json benchmarks/results/fft.json]
    On the emulator, as a smoke test: --quick
"""
import argparse
import time

import numpy as np

from _bench import (import_cukit, need_gpu, peer_sync, peer_table, peers, print_table,
                    write_json)

cukit = import_cukit("bench_fft")


def sync(name, lib):
    peer_sync(cukit, name, lib)


def dev(name, lib, host):
    if name == "torch":
        return lib.from_numpy(host).cuda()
    return cukit.to_device(host) if name.startswith("cukit") else lib.asarray(host)


def transform(name, lib, kind, x):
    """A callable running one transform of `kind` on the device array x."""
    if name.startswith("cukit"):
        mod = cukit.fft
    elif name == "cupy":
        mod = lib.fft
    else:
        mod = lib.fft
    if kind == "fft":
        return lambda: mod.fft(x)
    if kind == "rfft":
        return lambda: mod.rfft(x)
    if kind == "fft2":
        return lambda: mod.fft2(x)
    if kind == "fftn":
        return lambda: mod.fftn(x)
    raise ValueError(kind)


def seconds_per_call(name, lib, fn, calls):
    fn()
    sync(name, lib)
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(name, lib)
    return (time.perf_counter() - t) / calls


class Own:
    """cukit's own kernels for one measurement, the backend restored after."""

    def __enter__(self):
        self.before = cukit.fft.set_backend("cukit")

    def __exit__(self, *exc):
        cukit.fft.set_backend(self.before)


def shapes(quick):
    """(label, kind, shape, dtype) of each row."""
    if quick:
        return [("1-D complex64 2^10", "fft", (1 << 10,), np.complex64),
                ("batched 16 x 64 complex64", "fft", (16, 64), np.complex64),
                ("2-D 32 x 32 complex64", "fft2", (32, 32), np.complex64),
                ("real-to-complex 2^10 float32", "rfft", (1 << 10,), np.float32),
                ("3-D 8^3 complex64", "fftn", (8, 8, 8), np.complex64),
                ("odd 3^5 complex64", "fft", (3 ** 5,), np.complex64)]
    return [("1-D complex64 2^24", "fft", (1 << 24,), np.complex64),
            ("batched 4096 x 4096 complex64", "fft", (4096, 4096), np.complex64),
            ("2-D 4096 x 4096 complex64", "fft2", (4096, 4096), np.complex64),
            ("real-to-complex 2^24 float32", "rfft", (1 << 24,), np.float32),
            ("3-D 256^3 complex64", "fftn", (256, 256, 256), np.complex64),
            ("odd 3^15 complex64", "fft", (3 ** 15,), np.complex64)]


def cases(name, lib, quick, calls, small_calls):
    """measure name -> (unit, callable returning the figure)."""
    rng = np.random.default_rng(0)
    c = {}
    for label, kind, shape, dtype in shapes(quick):
        host = rng.standard_normal(shape).astype(np.float32)
        if dtype == np.complex64:
            host = (host + 1j * rng.standard_normal(shape).astype(np.float32)).astype(dtype)
        out_bytes = host.size * 8 if kind != "rfft" else (host.size // shape[-1]) * (shape[-1] // 2 + 1) * 8
        moved = host.nbytes + out_bytes
        for own in (False, True):
            if own and name != "cukit":
                continue

            def run(kind=kind, host=host, moved=moved, own=own):
                x = dev(name, lib, host)
                fn = transform(name, lib, kind, x)
                if own:
                    with Own():
                        return moved / seconds_per_call(name, lib, fn, calls) / 1e9
                return moved / seconds_per_call(name, lib, fn, calls) / 1e9
            c[label + (", cukit's own kernels" if own else "")] = ("GB/s", run)
    one = np.ones(1, np.complex64)

    def dispatch():
        x = dev(name, lib, one)
        fn = transform(name, lib, "fft", x)
        return seconds_per_call(name, lib, fn, small_calls) * 1e6
    c["fft dispatch, 1 element, warm plan"] = ("us", dispatch)
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--small-calls", type=int, default=20000)
    ap.add_argument("--quick", action="store_true", help="small transforms, few calls: a check "
                    "that it runs (the emulator), not a measurement")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    need_gpu("bench_fft", cukit, args.quick)
    if args.quick:
        args.calls, args.small_calls, args.reps = 1, 10, min(args.reps, 2)
    found = peers(cukit)
    versions = {n: getattr(mod, "__version__", "?") for n, mod in found.items()}
    table = {n: cases(n, mod, args.quick, args.calls, args.small_calls) for n, mod in found.items()}
    rows, results, errors = peer_table(table, args.reps, lambda unit: "lower" if unit == "us" else "higher")
    info = cukit.fft.info()
    device = cukit.Device().name
    print(f"device: {device}; " + ", ".join(f"{n} {v}" for n, v in versions.items())
          + f"; cuFFT: {info['cufft'] or 'not loaded'} ({info['cufft_version']}); "
          f"{args.reps} samples per row; ratio: cukit against the best peer (> 1: cukit ahead)")
    print_table(rows)
    write_json(args.json, {"device": device, "versions": versions, "cufft": info, "runs": results,
                           "errors": errors}, rows,
               device)


if __name__ == "__main__":
    main()
