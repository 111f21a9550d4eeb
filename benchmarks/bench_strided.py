"""Strided copies: cukit against a contiguous copy of the same bytes, and against PyTorch and CuPy.

What it measures
    Milliseconds (median) to copy float32 views laid out in different ways (32
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
    against numpy, so a wrong copy shows as WRONG RESULT.

Usage
    PYTHONPATH=src python benchmarks/bench_strided.py [--reps 7] [--json benchmarks/results/strided.json]
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

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
    ("16 KiB rows of a 4-D view (kernel)", lambda a: a.reshape(8, 16, 32, N)[::3, ::2, 1:31],
     lambda b: b.reshape(8, 16, 32, N)[1::3, 1::2, 2:]),
]
HOST_CASES = [
    ("contiguous", lambda a: a[: N // 2]),
    ("every other row", lambda a: a[::2]),
    ("every other element", lambda a: a[:, ::2]),
]


def median_ms(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        times.append(fn())
    return statistics.median(times)


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
        ms = median_ms(events_timer(cukit, lambda: cukit.copy(d, s)), reps)
        ok = np.array_equal(d.get(), src(host))
        row = {"case": name, "ms": ms, "ok": ok, "bytes": s.nbytes}
        for lib, (x, y, copy) in others.items():
            try:
                xs, ys = src(x), dst(y)
            except ValueError:  # torch has no negative steps
                row[lib] = None
                continue
            row[lib] = median_ms(events_timer(cukit, lambda: copy(ys, xs)), reps)
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
        up = median_ms(wall_timer(lambda: d.set(h), cukit.synchronize), reps)
        ok = np.array_equal(d.get(), h)
        down = median_ms(wall_timer(lambda: d.get(), cukit.synchronize), reps)
        row = {"case": name, "set_ms": up, "get_ms": down, "ok": ok and d.get().shape == shape}
        if torch:
            th, tv = torch.from_numpy(h), view(t)
            row["torch_set_ms"] = median_ms(wall_timer(lambda: tv.copy_(th), torch.cuda.synchronize), reps)
            row["torch_get_ms"] = median_ms(wall_timer(lambda: tv.cpu(), torch.cuda.synchronize), reps)
        rows.append(row)
    return rows


def gbps(ms, nbytes):
    return 2 * nbytes / (max(ms, 1e-9) * 1e-3) / 1e9


def print_tables(dev_rows, host_rows, libs):
    base = gbps(dev_rows[0]["ms"], dev_rows[0]["bytes"])
    print(f"\ndevice to device, float32 (median of events around {COPIES} copies); GB/s counts "
          "the elements' bytes read and written; 'vs contig' is the contiguous row's GB/s over "
          "this one's")
    head = f"{'layout':36} {'MiB':>5} {'cukit ms':>9} {'GB/s':>7} {'vs contig':>9}"
    for lib in libs:
        head += f" {lib + ' ms':>10} {'cukit/' + lib:>11}"
    print(head)
    for r in dev_rows:
        bw = gbps(r["ms"], r["bytes"])
        line = (f"{r['case']:36} {r['bytes'] / 2**20:5.1f} {r['ms']:9.3f} {bw:7.0f}"
                f" {base / bw:8.2f}x")
        for lib in libs:
            if r[lib] is None:
                line += f" {'n/a':>10} {'':>11}"
            else:
                line += f" {r[lib]:10.3f} {r['ms'] / r[lib]:10.2f}x"
        print(line + ("" if r["ok"] else "  WRONG RESULT"))
    print("\nhost <-> device, 32 MiB of float32, pageable numpy memory (median wall time)")
    head = f"{'device layout':36} {'set ms':>8} {'vs contig':>9} {'get ms':>8} {'vs contig':>9}"
    if "torch" in libs:
        head += f" {'torch set':>10} {'torch get':>10}"
    print(head)
    s0, g0 = max(host_rows[0]["set_ms"], 1e-9), max(host_rows[0]["get_ms"], 1e-9)
    for r in host_rows:
        line = (f"{r['case']:36} {r['set_ms']:8.2f} {r['set_ms'] / s0:8.2f}x {r['get_ms']:8.2f}"
                f" {r['get_ms'] / g0:8.2f}x")
        if "torch" in libs:
            line += f" {r['torch_set_ms']:10.2f} {r['torch_get_ms']:10.2f}"
        print(line + ("" if r["ok"] else "  WRONG RESULT"))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--json", default=str(HERE / "results" / "strided.json"))
    args = p.parse_args()
    try:
        import cukit
    except ImportError:
        sys.path.insert(0, str(HERE.parent / "src"))
        import cukit
    if cukit.device_count() == 0:
        sys.exit("bench_strided: needs an NVIDIA GPU and its driver")
    libs = peers()
    dev = cukit.Device(0)
    print(f"{dev.name} ({dev.arch}), driver {cukit.driver_version()}; peers: "
          f"{', '.join(libs) or 'none'}")
    host = np.random.default_rng(0).standard_normal((N, N)).astype(np.float32)
    dev_rows = bench_device(cukit, libs, args.reps, host)
    host_rows = bench_host(cukit, libs, args.reps, host)
    print_tables(dev_rows, host_rows, list(libs))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"device": dev.name, "device_to_device": dev_rows,
                               "host": host_rows}, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
