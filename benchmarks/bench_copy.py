"""Host <-> device copies: cukit against the driver's own copies from raw C, and CuPy.

What it measures
    GB/s (1e9 bytes per second) of synchronous copies of 1 MiB, 64 MiB and 1 GiB to
    the device (HtoD) and back (DtoH), from ordinary pageable numpy memory and from
    pinned (page-locked) memory. Host arrays are written before any timing, so no
    first-touch page faults are timed, and reused. A sample is min(50, max(1,
    256 MiB / size)) copies followed by one synchronize of the device, so that every
    way is timed to the moment its data has landed (the driver's copy from pageable
    memory returns before its last DMA). Each way is timed REPS times, the ways
    taking turns within each repetition, after a first round that is not counted
    (warm-up); the table shows min, median and max (~ where max / min is over 10%)
    and the median's ratio to raw C on the same kind of memory.

How
    * raw C: benchmarks/copy_baseline.c, compiled on the spot with the system C
      compiler (cc), dlopens libcuda.so.1 and times cuMemcpyHtoD / cuMemcpyDtoH on
      the legacy default stream. It runs once before and once after the Python
      ways; their samples are pooled.
    * cukit copy path: cukit._copy_htod / cukit._copy_dtoh, the transfer functions
      behind Array.set, Array.get and to_device (pinned staging pipeline for big
      pageable copies, the driver directly for pinned memory and small copies).
    * cukit Array.set / Array.get(out=...) and cukit.to_device, as users call them.
    * cukit register(): page-lock the pageable array with cukit.register, copy,
      unlock, all timed (64 MiB and up): the other way to avoid the driver's
      pageable path.
    * CuPy, if importable: cupy.asarray(host) (then a stream synchronize) and
      a.get(out=host).
    Every way's result is compared with the source after it is timed.

    --tune first sweeps the pipeline's chunk size, threads and buffers per thread
    on 256 MiB pageable copies (cukit._transfer_config), then the size from which
    the pipeline beats the driver's own copy (the threshold), prints both, and
    measures the main table with the best configuration.

Usage
    PYTHONPATH=src python benchmarks/bench_copy.py [--reps 7] [--tune] [--quick]
        [--json benchmarks/results/copy.json]
"""
import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from _bench import error_row, import_cukit, need_gpu, print_table, row, run_c, write_json

HERE = Path(__file__).resolve().parent
MiB = 1 << 20
SIZES = [1 * MiB, 64 * MiB, 1024 * MiB]
TUNE_SIZE = 256 * MiB

RAW_C = "raw C cuMemcpy"


def fail(message):
    sys.exit(f"bench_copy: {message}")


def size_name(n):
    return f"{n // (1 << 30)} GiB" if n >= 1 << 30 else f"{n // MiB} MiB"


def iterations(nbytes):
    """Copies per timed sample: enough that small copies are not timer noise."""
    return max(1, min(50, (256 * MiB) // nbytes))


# ------------------------------------------------------------------ raw C


def run_c_baseline(device, reps, sizes):
    return run_c("copy_baseline.c", [device, reps, *sizes], timeout=600)


def try_c_baseline(device, reps, sizes):
    try:
        return run_c_baseline(device, reps, sizes)
    except Exception as e:  # noqa: BLE001 - reported in the table
        return e


# ------------------------------------------------------------------ the Python ways


class Way:
    """One way of copying: a callable per (direction, memory, size), or None."""

    def __init__(self, name, make):
        self.name = name
        self.make = make  # make(direction, memory, size, buffers) -> (fn, check) or None


def cukit_ways(cukit):
    def path(direction, memory, n, b):
        if direction == "htod":
            return (lambda: cukit._copy_htod(b.dev, b.src)), lambda: b.dev.get()
        return (lambda: cukit._copy_dtoh(b.out, b.dev)), lambda: b.out

    def array(direction, memory, n, b):
        if direction == "htod":
            return (lambda: b.dev.set(b.src)), lambda: b.dev.get()
        return (lambda: b.dev.get(out=b.out)), lambda: b.out

    def to_device(direction, memory, n, b):
        if direction != "htod":
            return None
        last = {}

        def run():
            last["a"] = cukit.to_device(b.src)

        return run, lambda: last["a"].get()

    def register(direction, memory, n, b):
        if memory != "pageable" or n < 64 * MiB:
            return None
        if direction == "htod":
            def run():
                with cukit.register(b.src):
                    cukit._copy_htod(b.dev, b.src)
            return run, lambda: b.dev.get()

        def run_out():
            with cukit.register(b.out):
                cukit._copy_dtoh(b.out, b.dev)
        return run_out, lambda: b.out

    return [Way("cukit copy path (_copy_htod/_dtoh)", path),
            Way("cukit Array.set / Array.get(out=)", array),
            Way("cukit.to_device", to_device),
            Way("cukit register() + copy + unregister", register)]


def cupy_ways():
    try:
        import cupy
    except Exception as e:  # noqa: BLE001 - not installed, or no usable CUDA for it
        return [], f"CuPy not available ({type(e).__name__}: {e})"

    def make(direction, memory, n, b):
        if direction == "htod":
            last = {}

            def run():
                last["a"] = cupy.asarray(b.src)
                cupy.cuda.get_current_stream().synchronize()

            return run, lambda: cupy.asnumpy(last["a"])
        dev = cupy.asarray(b.src)

        def run_get():
            dev.get(out=b.out)

        return run_get, lambda: b.out

    return [Way(f"CuPy {cupy.__version__} asarray / get(out=)", make)], None


class Buffers:
    """The host source, host destination and device array of one size and memory kind."""

    def __init__(self, cukit, memory, n, rng):
        count = n // 4
        if memory == "pinned":
            self.src = cukit.pinned_empty(count, np.float32)
            self.out = cukit.pinned_empty(count, np.float32)
        else:
            self.src = np.empty(count, np.float32)
            self.out = np.empty(count, np.float32)
        self.src[:] = rng.standard_normal(count, dtype=np.float32)
        self.out[:] = 0  # written once: no page faults while timing
        self.dev = cukit.to_device(self.src)


def measure(cukit, ways, reps, sizes, rng):
    """samples[(way, direction, memory, size)] = [GB/s, ...]; notes for failed ways."""
    samples, notes = {}, {}
    for n in sizes:
        for memory in ("pageable", "pinned"):
            bufs = Buffers(cukit, memory, n, rng)
            runs = []
            for way in ways:
                for direction in ("htod", "dtoh"):
                    made = way.make(direction, memory, n, bufs)
                    if made is not None:
                        runs.append((way.name, direction, made))
            count = iterations(n)
            for _ in range(reps + 1):  # the first round is warm-up
                for name, direction, (fn, _) in runs:
                    key = (name, direction, memory, n)
                    if key in notes:
                        continue
                    try:
                        cukit.synchronize()
                        t0 = time.perf_counter()
                        for _ in range(count):
                            fn()
                        cukit.synchronize()
                        seconds = (time.perf_counter() - t0) / count
                    except Exception as e:  # noqa: BLE001 - reported in the table
                        notes[key] = f"{type(e).__name__}: {e}"
                        continue
                    samples.setdefault(key, []).append(n / seconds / 1e9)
            for name, direction, (fn, check) in runs:
                key = (name, direction, memory, n)
                if key in samples:
                    samples[key] = samples[key][1:]  # drop the warm-up
                    got = np.asarray(check())
                    if not np.array_equal(got, bufs.src):
                        notes[key] = "WRONG RESULT"
            del bufs
    return samples, notes


# ------------------------------------------------------------------ tuning


def tune(cukit, rng):
    n = TUNE_SIZE
    src = rng.standard_normal(n // 4, dtype=np.float32)
    out = np.zeros_like(src)
    dev = cukit.to_device(src)
    results = []
    for chunk in (1 * MiB, 2 * MiB, 4 * MiB):
        for threads in (4, 6, 8, 12):
            for slots in (2, 3):
                cukit._transfer_config(chunk=chunk, threads=threads, slots=slots)
                row = {"chunk": chunk, "threads": threads, "slots": slots}
                for direction in ("htod", "dtoh"):
                    fn = ((lambda: cukit._copy_htod(dev, src)) if direction == "htod"
                          else (lambda: cukit._copy_dtoh(out, dev)))
                    fn()  # builds the staging
                    times = []
                    for _ in range(5):
                        t0 = time.perf_counter()
                        fn()
                        times.append(time.perf_counter() - t0)
                    row[direction] = n / statistics.median(times) / 1e9
                if not np.array_equal(out, src):
                    row["note"] = "WRONG RESULT"
                results.append(row)
                print(f"  chunk {chunk // MiB:>2} MiB, {threads:>2} threads, {slots} buffers each: "
                      f"HtoD {row['htod']:6.2f} GB/s, DtoH {row['dtoh']:6.2f} GB/s"
                      f"{'  ' + row['note'] if 'note' in row else ''}", flush=True)
    # The best by the slower direction (to 1 GB/s), then the fewer threads and the
    # less pinned memory.
    good = [r for r in results if "note" not in r]
    best = max(good, key=lambda r: (round(min(r["htod"], r["dtoh"]), 0),
                                    -r["threads"], -r["chunk"] * r["threads"] * r["slots"]))
    cukit._transfer_config(chunk=best["chunk"], threads=best["threads"], slots=best["slots"])
    return results, best


def tune_threshold(cukit, rng):
    """GB/s of the driver's copy and of the pipeline at small sizes; the threshold is
    the smallest size from which the pipeline is at least 10% faster both ways."""
    rows, threshold = [], None
    for n in (1 * MiB, 2 * MiB, 4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB):
        src = rng.standard_normal(n // 4, dtype=np.float32)
        out = np.zeros_like(src)
        dev = cukit.to_device(src)
        row = {"bytes": n}
        for mode, value in (("driver", 1 << 62), ("pipeline", 0)):
            cukit._transfer_config(threshold=value)
            for direction in ("htod", "dtoh"):
                fn = ((lambda: cukit._copy_htod(dev, src)) if direction == "htod"
                      else (lambda: cukit._copy_dtoh(out, dev)))
                count = iterations(n)
                times = []
                for _ in range(6):
                    cukit.synchronize()
                    t0 = time.perf_counter()
                    for _ in range(count):
                        fn()
                    cukit.synchronize()
                    times.append((time.perf_counter() - t0) / count)
                row[f"{mode}_{direction}"] = n / statistics.median(times[1:]) / 1e9
        wins = all(row[f"pipeline_{d}"] >= 1.1 * row[f"driver_{d}"] for d in ("htod", "dtoh"))
        threshold = (threshold or n) if wins else None
        rows.append(row)
        print(f"  {size_name(n):>7}: HtoD driver {row['driver_htod']:6.2f}, pipeline "
              f"{row['pipeline_htod']:6.2f}; DtoH driver {row['driver_dtoh']:6.2f}, pipeline "
              f"{row['pipeline_dtoh']:6.2f} GB/s", flush=True)
    threshold = threshold or 64 * MiB
    cukit._transfer_config(threshold=threshold)
    return rows, threshold


# ------------------------------------------------------------------ report


def c_rows(before, after):
    """samples[(RAW_C, direction, memory, size)] from the C runs that worked."""
    samples = {}
    for run in (before, after):
        if not isinstance(run, dict):
            continue
        for size, kinds in run["gbps"].items():
            for kind, data in kinds.items():
                direction, memory = kind.split("_")
                samples.setdefault((RAW_C, direction, memory, int(size)), []).extend(
                    data["samples"])
    return samples


def table_rows(samples, notes, sizes, way_names):
    """The shared rows (benchmarks/_bench.py); "ratio" is the median over raw C's."""
    rows = []
    for direction in ("htod", "dtoh"):
        for memory in ("pageable", "pinned"):
            for n in sizes:
                case = f"{'HtoD' if direction == 'htod' else 'DtoH'} {memory} {size_name(n)}"
                base = samples.get((RAW_C, direction, memory, n))
                for name in [RAW_C, *way_names]:
                    key = (name, direction, memory, n)
                    if key in samples and samples[key]:
                        r = row(case, name, samples[key], "GB/s")
                        if base:
                            r["ratio"] = r["median"] / statistics.median(base)
                        if key in notes:
                            r["note"] = notes[key]
                        rows.append(r)
                    elif key in notes:
                        rows.append(error_row(case, name, "GB/s", notes[key]))
    return rows


def write_results(path, cukit, device, args, samples, notes, c_before, c_after, tuning, config,
                  table):
    rows = []
    for (name, direction, memory, n), values in sorted(samples.items(), key=str):
        base = samples.get((RAW_C, direction, memory, n))
        rows.append({"way": name, "direction": direction, "memory": memory, "bytes": n,
                     "gbps_median": statistics.median(values), "samples": values,
                     "ratio_to_raw_c": (statistics.median(values) / statistics.median(base)
                                        if base else None)})
    data = {
        "meta": {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "device": device.name,
            "driver_version": cukit.driver_version(),
            "cukit_version": cukit.__version__,
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
        },
        "config": {"reps": args.reps, "sizes": SIZES, "statistic": "median of reps",
                   "unit": "GB/s = 1e9 bytes per second", "transfer_config": config},
        "rows": rows,
        "notes": [{"way": k[0], "direction": k[1], "memory": k[2], "bytes": k[3], "note": v}
                  for k, v in notes.items()],
        "c_baseline": [r if isinstance(r, dict) else repr(r) for r in (c_before, c_after)],
        "tuning": tuning,
    }
    write_json(path, data, table, device.name)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7, help="repetitions per figure (default 7)")
    parser.add_argument("--quick", action="store_true", help="1 and 4 MiB, 3 repetitions: a check "
                        "that it runs (the emulator), not a measurement")
    parser.add_argument("--tune", action="store_true",
                        help="sweep the pipeline's tuning first and use the best")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "copy.json",
                        help="where to write all results (default benchmarks/results/copy.json)")
    args = parser.parse_args()
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    return args


def main():
    args = parse_args()
    cukit = import_cukit("bench_copy")
    try:
        device = cukit.Device(0)
    except cukit.NoDeviceError as e:
        fail(f"needs an NVIDIA GPU and its driver: {e}")
    need_gpu("bench_copy", cukit, args.quick)
    if args.quick:
        SIZES[:] = [1 * MiB, 4 * MiB]
        args.reps = min(args.reps, 3)
    rng = np.random.default_rng(0)
    print(f"{device.name}, driver {cukit.driver_version()}, Python {platform.python_version()}; "
          f"{args.reps} repetitions per figure", flush=True)
    tuning = None
    if args.tune:
        print(f"\ntuning the pageable pipeline on {size_name(TUNE_SIZE)} copies:", flush=True)
        results, best = tune(cukit, rng)
        print(f"best: chunk {best['chunk'] // MiB} MiB, {best['threads']} threads, "
              f"{best['slots']} buffers each", flush=True)
        print("\nthe driver's copy against the pipeline, by size:", flush=True)
        sizes, threshold = tune_threshold(cukit, rng)
        print(f"threshold: {size_name(threshold)}", flush=True)
        tuning = {"bytes": TUNE_SIZE, "results": results, "best": best,
                  "threshold_sweep": sizes, "threshold": threshold}
    config = cukit._transfer_config()
    print(f"pipeline: {config}", flush=True)

    c_before = try_c_baseline(device.ordinal, args.reps, SIZES)
    ways = cukit_ways(cukit)
    peers, peer_note = cupy_ways()
    ways += peers
    samples, notes = measure(cukit, ways, args.reps, SIZES, rng)
    c_after = try_c_baseline(device.ordinal, args.reps, SIZES)
    samples.update(c_rows(c_before, c_after))
    for run in (c_before, c_after):
        if not isinstance(run, dict):
            print(f"raw C baseline failed: {run}")
    if not any(isinstance(run, dict) for run in (c_before, c_after)):
        for key in [(RAW_C, d, m, n) for d in ("htod", "dtoh") for m in ("pageable", "pinned")
                    for n in SIZES]:
            notes[key] = f"failed: {c_before}"
    if peer_note:
        print(peer_note)

    table = table_rows(samples, notes, SIZES, [w.name for w in ways])
    print(f"\n{args.reps} samples per row; ratio: the median over raw C's on the same memory")
    print_table(table)
    write_results(args.json, cukit, device, args, samples, notes, c_before, c_after, tuning,
                  config, table)


if __name__ == "__main__":
    main()
