"""The CPU emulator's speed: thread-instructions per second per core on a compute-bound
kernel, on saxpy (memory-bound) and with one lane of each warp active, from one core to
all of them; saxpy end to end; and numba's CUDA simulator on the same saxpy when it is
installed. Each configuration runs in a fresh process (the thread count is read once).

    python benchmarks/bench_emulator.py [--reps 7] [--quick] [--json out.json]

Each configuration runs once (not counted) before its REPS samples; every row gives
min, median and max (~ where max / min is over 10%).

Thread-instructions are counted by the emulator itself: every instruction a warp runs
counts once per lane it runs on."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _bench import HERE, import_cukit, print_table, row, write_json

KERNELS = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" __global__ void fma_loop(float* out, int iters) {
    float v = threadIdx.x, a = 0.999f, b = 0.5f;
    for (int k = 0; k < iters; k++) v = fmaf(v, a, b);
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
extern "C" __global__ void one_lane(float* out, int iters) {
    float v = threadIdx.x, a = 0.999f, b = 0.5f;
    if (threadIdx.x % 32 == 0)
        for (int k = 0; k < iters; k++) v = fmaf(v, a, b);
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
"""

REPS = int(os.environ.get("CUKIT_BENCH_REPS", "7"))
QUICK = os.environ.get("CUKIT_BENCH_QUICK") == "1"


def child(which):
    """Run in a fresh process: time `which`, print a JSON line."""
    import numpy as np

    cukit = import_cukit("bench_emulator")
    from cukit import _cukit

    if cukit.backend() != "emulator":
        sys.exit("bench_emulator: run with CUKIT_BACKEND=emulator")
    mod = cukit.compile(KERNELS)
    out = {"threads": _cukit._emulator_threads()}
    if which in ("fma_loop", "one_lane", "saxpy"):
        n = 1 << (18 if QUICK else 24)
        iters = 200 if QUICK else 2000
        o = cukit.empty(n, np.float32)
        if which == "saxpy":
            x = cukit.to_device(np.random.rand(n).astype(np.float32))
            y = cukit.to_device(np.random.rand(n).astype(np.float32))
            run = lambda: mod.saxpy(np.float32(2), x, y, o, n, grid=n // 512, block=512)  # noqa: E731
        elif which == "fma_loop":
            run = lambda: mod.fma_loop(o, iters, grid=256, block=256)  # noqa: E731
        else:
            run = lambda: mod.one_lane(o, iters, grid=256, block=256)  # noqa: E731
        run()
        times, cpu, counts = [], [], []
        for _ in range(REPS):
            c0 = _cukit._emulator_instructions()
            t0, p0 = time.perf_counter(), time.process_time()
            run()
            cukit.synchronize()
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - p0)
            counts.append(_cukit._emulator_instructions() - c0)
        t, c = statistics.median(times), statistics.median(cpu)
        out.update(seconds=t, cpu_seconds=c, thread_instructions=counts[0],
                   per_second=counts[0] / t, per_cpu_second=counts[0] / c,
                   samples_seconds=times, samples_cpu_seconds=cpu)
    elif which.startswith("saxpy_end_to_end"):
        n = int(which.split(":")[1]) if ":" in which else 1 << 20
        xh, yh = np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
        def run():  # noqa: E306
            x, y, o = cukit.to_device(xh), cukit.to_device(yh), cukit.empty(n, np.float32)
            mod.saxpy(np.float32(2), x, y, o, n, grid=(n + 255) // 256, block=256)
            return o.get()
        res = run()
        assert np.allclose(res, 2 * xh + yh)
        times = []
        for _ in range(REPS):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        out.update(seconds=statistics.median(times), samples_seconds=times)
    print(json.dumps(out))


NUMBA_N = 1 << 14  # the simulator runs a Python thread per CUDA thread: a smaller saxpy


def numba_saxpy():
    """numba's CUDA simulator on a saxpy of NUMBA_N elements (Python kernels on the CPU)."""
    global cuda  # the simulator swaps the module in the kernel's globals
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    try:
        import numpy as np
        from numba import cuda
    except ImportError:
        return None

    @cuda.jit
    def saxpy(a, x, y, out, n):
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if i < n:
            out[i] = a * x[i] + y[i]

    n = NUMBA_N
    xh, yh = np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
    t0 = time.perf_counter()
    x, y, o = cuda.to_device(xh), cuda.to_device(yh), cuda.device_array(n, np.float32)
    saxpy[(n + 255) // 256, 256](np.float32(2), x, y, o, n)
    res = o.copy_to_host()
    t = time.perf_counter() - t0
    assert np.allclose(res, 2 * xh + yh)
    return t


def spawn(which, threads, extra_env=None):
    env = dict(os.environ, CUKIT_BACKEND="emulator", CUKIT_EMULATOR_THREADS=str(threads),
               CUKIT_BENCH_REPS=str(REPS), CUKIT_BENCH_QUICK="1" if QUICK else "0")
    env.update(extra_env or {})
    # the children import the cukit this process found (installed, or the checkout's
    # src/ built in place), not the checkout's src/ whatever is installed
    found = str(Path(import_cukit("bench_emulator").__file__).resolve().parent.parent)
    env["PYTHONPATH"] = found + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, __file__, "--child", which], capture_output=True,
                          text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    global REPS, QUICK
    ap = argparse.ArgumentParser(
        prog="bench_emulator.py", description=__doc__.split("\n\n")[0],
        epilog="Each measurement runs in a fresh process with CUKIT_BACKEND=emulator and "
               "CUKIT_EMULATOR_THREADS set to the core count of its column; the table goes to "
               "stdout, every number to the JSON file. Runs cukit as installed, or the "
               "checkout's src/ after `python setup.py build_ext --inplace -b src`.")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="rate per second of wall time (default), or per second of CPU time "
                         "the process used, all its threads together: steadier on a machine "
                         "shared with other work, and per core by construction")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--numba-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=REPS, help="samples per row (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="small kernels, 3 samples, no numba: a "
                    "check that it runs, not a measurement")
    ap.add_argument("--json", default=str(HERE / "results" / "emulator.json"), metavar="PATH",
                    help="where to write the results as JSON (default: %(default)s)")
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    if args.numba_child:
        print(json.dumps({"seconds": numba_saxpy()}))
        return
    REPS, QUICK = (min(args.reps, 3), True) if args.quick else (args.reps, False)
    table = []
    cores = os.cpu_count() or 1
    counts = sorted({1, 2, cores} & set(range(1, cores + 1)))
    results = {"cores": cores, "clock": args.clock, "kernels": {}}
    rate = "per_second" if args.clock == "wall" else "per_cpu_second"
    samples = "samples_seconds" if args.clock == "wall" else "samples_cpu_seconds"
    print(f"cukit emulator on {cores} cores; thread-instructions per second of {args.clock} "
          f"time (G), medians of {REPS}")
    print("| kernel | " + " | ".join(f"{c} core{'s' if c > 1 else ''}" for c in counts) +
          f" | per core at 1 | {'scaling' if args.clock == 'wall' else 'per-core efficiency'} |")
    print("|---|" + "---|" * (len(counts) + 2))
    for which in ("fma_loop", "saxpy", "one_lane"):
        got = {c: spawn(which, c) for c in counts}
        results["kernels"][which] = got
        for c in counts:
            table.append(row(f"{which}: G thread-instructions/s", f"{c} core{'s' if c > 1 else ''}",
                             [got[c]["thread_instructions"] / t / 1e9
                              for t in got[c][samples]], "G/s"))
        rates = [got[c][rate] / 1e9 for c in counts]
        scale = rates[-1] / rates[0]
        print(f"| {which} | " + " | ".join(f"{r:.2f}" for r in rates) +
              f" | {rates[0]:.2f} | {scale:.2f}x on {counts[-1]} |")
    sax16 = results["kernels"]["saxpy"][1]["seconds"]
    print(f"\n{'256K' if QUICK else '16.7M'}-element saxpy kernel on 1 core: {sax16 * 1e3:.0f} ms")
    e2e_runs = {c: spawn("saxpy_end_to_end", c) for c in counts}
    e2e = {c: r["seconds"] for c, r in e2e_runs.items()}
    results["saxpy_1m_end_to_end"] = e2e
    for c, r in e2e_runs.items():
        table.append(row("1M-element saxpy end to end", f"{c} core{'s' if c > 1 else ''}",
                         [t * 1e3 for t in r["samples_seconds"]], "ms", better="lower"))
    line = ", ".join(f"{e2e[c] * 1e3:.1f} ms on {c} core{'s' if c > 1 else ''}" for c in counts)
    print(f"1M-element saxpy end to end (copies in, kernel, copy out): {line}")
    env = dict(os.environ)
    nb = None
    if not QUICK:
        proc = subprocess.run([sys.executable, __file__, "--numba-child"], capture_output=True,
                              text=True, env=env, timeout=3600)
        nb = json.loads(proc.stdout.strip().splitlines()[-1])["seconds"] if proc.returncode == 0 else None
    results["numba_simulator_saxpy"] = {"n": NUMBA_N, "seconds": nb}
    if nb:
        small = spawn(f"saxpy_end_to_end:{NUMBA_N}", 1)
        mine = small["seconds"]
        results["cukit_saxpy_small"] = mine
        case = f"{NUMBA_N}-element saxpy end to end, 1 core"
        table.append(row(case, "cukit emulator", [t * 1e3 for t in small["samples_seconds"]], "ms",
                         better="lower"))
        table.append(row(case, "numba CUDA simulator (1 sample)", [nb * 1e3], "ms",
                         better="lower"))
        print(f"{NUMBA_N}-element saxpy end to end: numba's CUDA simulator {nb * 1e3:.0f} ms, "
              f"cukit's emulator on 1 core {mine * 1e3:.2f} ms ({nb / mine:,.0f}x faster)")
    else:
        print("numba's CUDA simulator: not installed (pip install numba-cuda)")
    print()
    print_table(table)
    write_json(args.json, results, table, f"cukit emulator on {cores} cores")


if __name__ == "__main__":
    main()
