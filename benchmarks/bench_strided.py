"""Strided copies: cukit against a contiguous copy of the same bytes, and against PyTorch and CuPy.

What it measures
    Milliseconds to copy float32 views laid out in different ways (32
    MiB of elements, the 4-D view 11 MiB), and the bandwidth that gives (bytes
    of elements copied, read once and written once, per second):

    * device to device: views of a 4096 x 4096 array into views of another,
      timed with events around COPIES back-to-back copies on the legacy default
      stream, which PyTorch and CuPy also use by default, so one pair of cukit
      events times theirs too.
      "contiguous" is one cuMemcpyDtoDAsync: the ceiling for the rest.
    * host to device and device to host: the same views filled from, or read
      into, a pageable numpy array; each copy waits for itself (no stream=).
      "contiguous" is one plain copy of the same bytes.

    Every row gives its ratio to the contiguous row of its direction, and where
    PyTorch or CuPy is importable, the time of the same copy in that library
    (t.copy_(s), c[...] = s) and cukit's ratio to it (n/a: a layout the library
    cannot express, such as a negative step in PyTorch). Each result is checked
    against numpy, so a wrong copy shows as WRONG RESULT. Every way is run for
    at least 0.1 s before its samples; each row reports min / median / max of --reps samples.

Usage
    PYTHONPATH=src python benchmarks/bench_strided.py [--reps 9] [--quick] [--json benchmarks/results/strided.json]
"""
import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from _bench import (error_row, import_cukit, need_gpu, print_table, ratio_to_best_peer, row,
                    warm_up, write_json)

HERE = Path(__file__).resolve().parent
N = 4096
COPIES = 20

# name, view of the (N, N) source, view of the (N, N) destination
DEVICE_CASES = [
    ("contiguous", lambda a: a[: N // 2], lambda b: b[: N // 2]),
    ("every other row (cuMemcpy2D)", lambda a: a[::2], lambda b: b[::2]),
    ("every other element (kernel)", lambda a: a[:, ::2], lambda b: b[:, ::2]),
    ("reversed rows (kernel)", lambda a: a[: N // 2, ::-1], lambda b: b[: N // 2]),
    ("transpose (kernel)", lambda a: a[: N // 2].T, lambda b: b[:, : N // 2]),
    ("16 KiB rows of a 4-D view (kernel)", lambda a: a.reshape(8, 16, 32, N * N // 4096)[::3, ::2, 1:31],
     lambda b: b.reshape(8, 16, 32, N * N // 4096)[1::3, 1::2, 2:]),
]
HOST_CASES = [
    ("contiguous", lambda a: a[: N // 2]),
    ("every other row", lambda a: a[::2]),
    ("every other element", lambda a: a[:, ::2]),
]


def samples_ms(fn, reps):
    """reps samples of fn (which returns milliseconds), after warm-up calls."""
    warm_up(fn, calls=1, seconds=0.1)
    return [fn() for _ in range(reps)]


def events_timer(cukit, copy):
    start, end = cukit.Event(), cukit.Event()

    def run():
        start.record()
        for _ in range(COPIES):
            copy()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / COPIES
    return run


def wall_timer(copy, sync):
    def run():
        sync()
        t0 = time.perf_counter()
        copy()
        sync()
        return (time.perf_counter() - t0) * 1e3
    return run


def peers():
    found = {}
    try:
        import torch
        if torch.cuda.is_available():
            found["torch"] = torch
    except ImportError:
        pass
    try:
        import cupy
        found["cupy"] = cupy
    except ImportError:
        pass
    return found


def bench_device(cukit, libs, reps, host):
    a = cukit.to_device(host)
    b = cukit.zeros((N, N), np.float32)
    others = {}
    if "torch" in libs:
        t = libs["torch"].from_numpy(host).cuda()
        others["torch"] = (t, libs["torch"].zeros_like(t), lambda d, s: d.copy_(s))
    if "cupy" in libs:
        c = libs["cupy"].asarray(host)
        others["cupy"] = (c, libs["cupy"].zeros_like(c), lambda d, s: d.__setitem__(Ellipsis, s))
    rows = []
    for name, src, dst in DEVICE_CASES:
        s, d = src(a), dst(b)
        t = samples_ms(events_timer(cukit, lambda: cukit.copyto(d, s)), reps)
        ok = np.array_equal(d.get(), src(host))
        row = {"case": name, "ms": statistics.median(t), "ok": ok, "bytes": s.nbytes,
               "samples_ms": {"cukit": t}}
        for lib, (x, y, copy) in others.items():
            try:
                xs, ys = src(x), dst(y)
            except ValueError:  # torch has no negative steps
                row[lib] = None
                continue
            t = samples_ms(events_timer(cukit, lambda: copy(ys, xs)), reps)
            row[lib] = statistics.median(t)
            row["samples_ms"][lib] = t
        rows.append(row)
    return rows


def bench_host(cukit, libs, reps, host):
    a = cukit.zeros((N, N), np.float32)
    rows = []
    torch = libs.get("torch")
    t = torch.zeros((N, N), device="cuda") if torch else None
    for name, view in HOST_CASES:
        shape = view(host).shape
        h = np.ascontiguousarray(view(host))
        d = view(a)
        up = samples_ms(wall_timer(lambda: d.set(h), cukit.synchronize), reps)
        ok = np.array_equal(d.get(), h)
        down = samples_ms(wall_timer(lambda: d.get(), cukit.synchronize), reps)
        row = {"case": name, "set_ms": statistics.median(up), "get_ms": statistics.median(down),
               "ok": ok and d.get().shape == shape, "bytes": h.nbytes,
               "samples_ms": {"cukit set": up, "cukit get": down}}
        if torch:
            th, tv = torch.from_numpy(h), view(t)
            up = samples_ms(wall_timer(lambda: tv.copy_(th), torch.cuda.synchronize), reps)
            down = samples_ms(wall_timer(lambda: tv.cpu(), torch.cuda.synchronize), reps)
            row["torch_set_ms"], row["torch_get_ms"] = statistics.median(up), statistics.median(down)
            row["samples_ms"].update({"torch set": up, "torch get": down})
        rows.append(row)
    return rows


def gbps(ms, nbytes):
    return 2 * nbytes / (max(ms, 1e-9) * 1e-3) / 1e9


def table_rows(dev_rows, host_rows):
    """The shared rows: GB/s per sample (device to device: bytes read and written;
    host: the bytes copied), each way's, and "vs_contiguous" for cukit's."""
    rows = []
    for r in dev_rows:
        for lib, t in r["samples_ms"].items():
            extra = {"note": "WRONG RESULT"} if lib == "cukit" and not r["ok"] else {}
            rows.append(row(f"device to device: {r['case']}", lib,
                            [gbps(ms, r["bytes"]) for ms in t], "GB/s", **extra))
        for lib in r:
            if r[lib] is None:
                rows.append(error_row(f"device to device: {r['case']}", lib, "GB/s",
                                      "a layout this library cannot express"))
    for r in host_rows:
        for way, t in r["samples_ms"].items():
            lib, op = way.split()
            case = f"{'host to device' if op == 'set' else 'device to host'}: {r['case']}"
            extra = {"note": "WRONG RESULT"} if lib == "cukit" and not r["ok"] else {}
            rows.append(row(case, lib, [r["bytes"] / (max(ms, 1e-9) * 1e-3) / 1e9 for ms in t],
                            "GB/s", **extra))
    base = {}
    for r in rows:
        direction = r["case"].split(":")[0]
        if r["way"] == "cukit" and r["case"].endswith(": contiguous"):
            base[direction] = r["median"]
    for r in rows:
        b = base.get(r["case"].split(":")[0])
        if r["way"] == "cukit" and b:
            r["vs_contiguous"] = r["median"] / b
    return ratio_to_best_peer(rows)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=9)
    p.add_argument("--quick", action="store_true", help="256 x 256 arrays, 2 copies a sample: a "
                   "check that it runs (the emulator), not a measurement")
    p.add_argument("--json", default=str(HERE / "results" / "strided.json"))
    args = p.parse_args()
    cukit = import_cukit("bench_strided")
    need_gpu("bench_strided", cukit, args.quick)
    if args.quick:
        global N, COPIES
        N, COPIES, args.reps = 256, 2, min(args.reps, 3)
    libs = peers()
    dev = cukit.Device(0)
    print(f"{dev.name} ({dev.arch}), driver {cukit.driver_version()}; peers: "
          f"{', '.join(libs) or 'none'}")
    host = np.random.default_rng(0).standard_normal((N, N)).astype(np.float32)
    dev_rows = bench_device(cukit, libs, args.reps, host)
    host_rows = bench_host(cukit, libs, args.reps, host)
    rows = table_rows(dev_rows, host_rows)
    print(f"\nfloat32 copies, {N} x {N} arrays, {args.reps} samples per row (device to device: "
          f"events around {COPIES} copies; host: wall time of one). GB/s counts the bytes read and "
          "written on the device, the bytes copied to or from the host. ratio: cukit against the "
          "best peer (> 1: cukit ahead)")
    print_table(rows)
    print("cukit against its contiguous copy: " + "; ".join(
        f"{r['case']} {r['vs_contiguous']:.2f}x" for r in rows if "vs_contiguous" in r))
    for r in rows:
        if r.get("note"):
            print(f"{r['case']}, {r['way']}: {r['note']}")
    write_json(args.json, {"device": dev.name, "device_to_device": dev_rows, "host": host_rows},
               rows, dev.name)


if __name__ == "__main__":
    main()
