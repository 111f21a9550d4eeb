"""Compile-and-load cost: cukit's kernel cache against CuPy's RawModule and cuda.core's Program.

What it measures
    The time from source text to a kernel ready to launch, for a saxpy kernel,
    three ways (cukit twice: compiling in its worker process, as it does, and
    in-process with CUKIT_COMPILE_IN_PROCESS=1, to show what the isolation costs):

    * cold         a fresh process with an empty cache folder: a real compile
    * disk hit     a fresh process whose cache folder already holds the entry
    * memory hit   the same compile again in a process that already did it

    Fresh-process figures are taken in a child process per sample: it imports
    the library and makes the CUDA context current first (not timed), then
    times one compile-and-get-kernel call on the host clock. Memory hits are
    timed in batches of CALLS calls; the figure is the median batch / CALLS.
    Each row gives min, median and max of REPS samples (~ where max / min is over
    10%); every sample is in the JSON. A cold sample has no warm-up by design (it is
    what is measured); a disk hit's folder is filled by a first process not counted,
    and a memory hit's process calls twice before its batches.

    Peers, each only where importable: CuPy (cupy.RawModule(...).get_function,
    cache folder CUPY_CACHE_DIR) and cuda.core (Program(...).compile("cubin")
    then get_kernel; it keeps no cache, so all three rows are compiles).

    The CPU side (--cpu, no GPU needed): what a cache hit does before the GPU is
    involved, for one or more builds of cukit (--build DIR, a folder holding a
    built cukit such as another checkout's src/; default: the cukit imported
    here), each in fresh child processes:

    * sha256       hashing the saxpy source (hashlib): the raw baseline, the
                   least any cache keyed by the source must do
    * Program()    constructing Program(saxpy): the source's kernel signatures
                   are read, as at every compile
    * Program(big) the same for a 1,000-line source of 100 kernels with
                   typedefs, macros, #if branches and a 4,096-entry table
    * Signature()  cukit.Signature("saxpy(float a, ...)"), as get_kernel(signature=)
    * disk hit     Program(saxpy).cubin("sm_90") from a warm cache folder, the
                   first such call of a fresh process (the CPU part of a disk hit)
    Each figure is the median over REPS processes (each: batches of CALLS, the
    best batch / CALLS); ratios are to the first build's figure.

Usage
    PYTHONPATH=src python benchmarks/bench_compile.py [--reps 7] [--calls 2000] [--quick]
        [--json benchmarks/results/compile.json]
    PYTHONPATH=src python benchmarks/bench_compile.py --cpu [--build OTHER/src --build src]
        [--json benchmarks/results/compile_cpu.json]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import error_row, import_cukit, need_gpu, print_table, row, write_json  # noqa: E402

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


# ---------------------------------------------------------------- the ways, run in a child


def setup_cukit():
    import cukit

    cukit.zeros(1)  # the context, not timed

    def once():
        return cukit.compile(SAXPY).saxpy

    return once


def setup_cukit_in_process():
    # The same, with NVRTC run in this process instead of a worker process: what
    # isolating the compiler costs is the difference between the two rows.
    os.environ["CUKIT_COMPILE_IN_PROCESS"] = "1"
    return setup_cukit()


def setup_cupy():
    import cupy

    cupy.zeros(1)  # the context, not timed

    def once():
        return cupy.RawModule(code=SAXPY).get_function("saxpy")

    return once


def setup_cuda_core():
    try:
        from cuda.core import Device, Program, ProgramOptions
    except ImportError:
        from cuda.core.experimental import Device, Program, ProgramOptions
    dev = Device(0)
    dev.set_current()
    arch = "sm_" + "".join(str(v) for v in dev.compute_capability)

    def once():
        obj = Program(SAXPY, code_type="c++", options=ProgramOptions(arch=arch)).compile("cubin")
        return obj.get_kernel("saxpy")

    return once


WAYS = {"cukit": setup_cukit, "cukit in-process": setup_cukit_in_process, "CuPy RawModule": setup_cupy, "cuda.core Program": setup_cuda_core}


def child(way, calls):
    """Print one fresh-process sample (seconds), then the memory-hit batches."""
    once = WAYS[way]()
    t0 = time.perf_counter()
    once()
    first = time.perf_counter() - t0
    # A way without an in-memory cache compiles again each call: time fewer calls.
    t0 = time.perf_counter()
    once()
    calls = max(3, min(calls, int(0.05 / max(time.perf_counter() - t0, 1e-9))))
    batches = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            once()
        batches.append((time.perf_counter() - t0) / calls)
    print(json.dumps({"first": first, "again": batches}))


def child_alternate(n):
    """Compiles of fresh sources (no cache) in one process, alternating between a
    worker process and this one; the first of each is left out (the fork, NVRTC's
    own start-up). Prints both lists of seconds."""
    import cukit

    times = {"worker": [], "in-process": []}
    for i in range(n + 1):
        for mode in ("worker", "in-process"):
            os.environ["CUKIT_COMPILE_IN_PROCESS"] = "1" if mode == "in-process" else "0"
            src = SAXPY + f"\n// {mode} {i}\n"
            t0 = time.perf_counter()
            cukit.Program(src).cubin(arch="sm_90")
            if i:
                times[mode].append(time.perf_counter() - t0)
    print(json.dumps(times))


# ---------------------------------------------------------------- the CPU side


def big_source(kernels=100):
    """A larger source, as generated code or a kernel library looks: aliases, macros,
    #if branches, a table, and kernels of several parameters."""
    parts = ["#define REAL float", "#define KERNEL extern \"C\" __global__",
             "typedef unsigned int uint;", "using index_t = long long;",
             "template <typename T> struct Vec { T x, y; };",
             "__constant__ float table[4096] = {" + ", ".join(str(i % 97) for i in range(4096)) + "};"]
    for k in range(kernels):
        parts += [f"#if defined(REAL) && {k % 3} > 0",
                  f"KERNEL void k{k}(const REAL* __restrict__ x, REAL* y, uint n, index_t m, "
                  f"Vec<REAL> v, double s) {{",
                  "    index_t i = blockIdx.x * (index_t)blockDim.x + threadIdx.x;",
                  "    if (i < n) { y[i] = s * x[i] + v.x * table[i % 4096]; }",
                  "}", "#else",
                  f"KERNEL void k{k}(const REAL* x, REAL* y, uint n) {{",
                  "    /* the other branch */ if (threadIdx.x < n) y[threadIdx.x] = x[threadIdx.x];",
                  "}", "#endif"]
    return "\n".join(parts) + "\n"


def child_cpu(calls):
    """Print the CPU-side figures of the cukit on sys.path (seconds per call)."""
    import hashlib

    import cukit

    t0 = time.perf_counter()
    cukit.Program(SAXPY).cubin(arch="sm_90")  # the cache folder is warm: a disk hit
    first = time.perf_counter() - t0
    big = big_source()
    decl = "saxpy(float a, const float* x, float* y, size_t n)"
    ways = {
        "sha256": lambda: hashlib.sha256(SAXPY.encode()).digest(),
        "Program()": lambda: cukit.Program(SAXPY),
        "Program(big)": lambda: cukit.Program(big),
        "Signature()": lambda: cukit.Signature(decl),
    }
    out = {"disk hit": first, "kernels in big": len(cukit.Program(big).signatures)}
    for name, once in ways.items():
        n = max(3, calls // 100) if "big" in name else calls
        once()
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                once()
            best = min(best, (time.perf_counter() - t0) / n)
        out[name] = best
    print(json.dumps(out))


def main_cpu(args):
    import cukit

    builds = args.build or [str(Path(cukit.__file__).resolve().parents[1])]
    rows = ["sha256", "Program()", "Program(big)", "Signature()", "disk hit"]
    results = {}
    samples = {build: [] for build in builds}
    with tempfile.TemporaryDirectory(prefix="bench-compile-cpu-") as root:
        # builds take turns, so drift in the machine favours none of them
        for rep in range(args.reps + 1):  # the first round fills each cache folder
            for b, build in enumerate(builds):
                env = dict(os.environ, CUKIT_CACHE_DIR=os.path.join(root, f"cache{b}"),
                           PYTHONPATH=os.path.abspath(build))
                r = subprocess.run([sys.executable, __file__, "--child", "cpu", "--calls",
                                    str(args.calls)], env=env, capture_output=True, text=True,
                                   timeout=600)
                if r.returncode != 0:
                    sys.exit(f"{build}: {r.stderr.strip()}")
                if rep:
                    samples[build].append(json.loads(r.stdout.strip().splitlines()[-1]))
    for build in builds:
        results[build] = {row: [s[row] for s in samples[build]] for row in rows}
        results[build]["kernels in big"] = samples[build][0]["kernels in big"]
    print(f"CPU side of a compile-cache hit, {args.reps} fresh processes per build, medians "
          f"(ratio to {builds[0]})")
    print("kernels in big: " + ", ".join(str(results[b]["kernels in big"]) for b in builds))
    table = []
    for r in rows:
        base = statistics.median(results[builds[0]][r])
        for build in builds:
            t = row(r, build, [v * 1e6 for v in results[build][r]], "us", better="lower")
            t["ratio"] = t["median"] / (base * 1e6)
            table.append(t)
    print_table(table)
    out = Path(args.json if args.json != DEFAULT_JSON else DEFAULT_JSON.replace("compile.json",
                                                                              "compile_cpu.json"))
    write_json(out, {"machine": platform.node(), "python": sys.version, "reps": args.reps,
                     "calls": args.calls, "results": results}, table)


# ---------------------------------------------------------------- the parent


def sample(way, cache_dir, calls):
    env = dict(os.environ, CUKIT_CACHE_DIR=cache_dir, CUPY_CACHE_DIR=cache_dir,
               PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, __file__, "--child", way, "--calls", str(calls)],
                       env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed")
    return json.loads(r.stdout.strip().splitlines()[-1])


DEFAULT_JSON = str(Path(__file__).resolve().parent / "results" / "compile.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--json", default=DEFAULT_JSON)
    ap.add_argument("--cpu", action="store_true", help="the CPU side only (no GPU needed)")
    ap.add_argument("--quick", action="store_true", help="2 samples, 50 calls: a check that it "
                    "runs (the emulator), not a measurement")
    ap.add_argument("--build", action="append", help="with --cpu: a folder holding a built cukit "
                    "(repeatable; default: the one imported here)")
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child == "cpu":
        return child_cpu(args.calls)
    if args.child == "alternate":
        return child_alternate(args.reps * 3)
    if args.child:
        return child(args.child, args.calls)
    if args.quick:
        args.reps, args.calls = min(args.reps, 2), min(args.calls, 50)
    if args.cpu:
        return main_cpu(args)
    need_gpu("bench_compile", import_cukit("bench_compile"), args.quick)

    results = {}
    for way in WAYS:
        cold, disk, memory = [], [], []
        try:
            with tempfile.TemporaryDirectory(prefix="bench-compile-") as root:
                warm = os.path.join(root, "warm")
                sample(way, warm, 10)  # fills the warm folder
                # interleave cold and warm samples so drift in the machine favours neither
                for rep in range(args.reps):
                    cold.append(sample(way, os.path.join(root, f"cold{rep}"), 10)["first"])
                    s = sample(way, warm, args.calls)
                    disk.append(s["first"])
                    memory.extend(s["again"])
            print(f"{way}: done", file=sys.stderr, flush=True)
        except Exception as exc:  # a peer that is missing or fails is reported, not fatal
            results[way] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        results[way] = {"cold_s": cold, "disk_hit_s": disk, "memory_hit_s": memory}

    def fmt(v, unit):
        return f"{v * 1e3:9.3f} ms" if unit == "ms" else f"{v * 1e6:9.2f} us"

    print(f"saxpy, {args.reps} fresh processes per row, medians; memory hit: batches of {args.calls}")
    print(f"{'way':<20} {'cold compile':>14} {'disk hit':>14} {'memory hit':>14}")
    for way, r in results.items():
        if "error" in r:
            print(f"{way:<20} not measured: {r['error']}")
            continue
        print(f"{way:<20} {fmt(statistics.median(r['cold_s']), 'ms'):>14} "
              f"{fmt(statistics.median(r['disk_hit_s']), 'ms'):>14} "
              f"{fmt(statistics.median(r['memory_hit_s']), 'us'):>14}")
    c = results.get("cukit", {})
    if "error" not in c:
        print(f"\ncukit targets: memory hit {statistics.median(c['memory_hit_s']) * 1e6:.2f} us "
              f"(<= 5 us), disk hit {statistics.median(c['disk_hit_s']) * 1e3:.3f} ms (<= 2 ms), "
              f"cold {statistics.median(c['cold_s']) * 1e3:.1f} ms")
    i = results.get("cukit in-process", {})
    if "error" not in c and "error" not in i and c and i:
        print("cost of compiling in a worker process (cukit - cukit in-process): cold "
              f"{(statistics.median(c['cold_s']) - statistics.median(i['cold_s'])) * 1e3:+.2f} ms, "
              f"disk hit {(statistics.median(c['disk_hit_s']) - statistics.median(i['disk_hit_s'])) * 1e3:+.3f} ms, "
              f"memory hit {(statistics.median(c['memory_hit_s']) - statistics.median(i['memory_hit_s'])) * 1e6:+.2f} us")
    env = dict(os.environ, CUKIT_CACHE="0", PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, __file__, "--child", "alternate", "--reps", str(args.reps)],
                       env=env, capture_output=True, text=True, timeout=600)
    if r.returncode == 0:
        alt = json.loads(r.stdout.strip().splitlines()[-1])
        results["alternating compiles"] = alt
        w, p = statistics.median(alt["worker"]), statistics.median(alt["in-process"])
        print(f"compiles after the first, alternating in one process: worker {w * 1e3:.2f} ms, "
              f"in-process {p * 1e3:.2f} ms ({(w - p) * 1e3:+.2f} ms)")
    table = []
    for way, r in results.items():
        if way == "alternating compiles":
            for mode, v in r.items():
                table.append(row("compiles after the first, alternating in one process",
                                 f"cukit, {mode}", [x * 1e3 for x in v], "ms", better="lower"))
            continue
        for case, key, unit, scale in (("cold compile", "cold_s", "ms", 1e3),
                                       ("disk hit", "disk_hit_s", "ms", 1e3),
                                       ("memory hit", "memory_hit_s", "us", 1e6)):
            if "error" in r:
                table.append(error_row(case, way, unit, r["error"], better="lower"))
            else:
                table.append(row(case, way, [x * scale for x in r[key]], unit, better="lower"))
    print(f"\n{args.reps} samples per row (memory hit: 5 batches per process)")
    print_table(table)
    device = None
    try:
        device = import_cukit("bench_compile").Device(0).name
    except Exception:  # noqa: BLE001 - only descriptive
        pass
    write_json(args.json, {"machine": platform.node(), "python": sys.version, "reps": args.reps,
                           "calls": args.calls, "results": results}, table, device)


if __name__ == "__main__":
    main()
