"""Cold start: a fresh process's time from `import` to its first five results.

What it measures
    A program's first minute on a machine: a child process imports the library,
    then makes, in order and each waited for, `a + b`, `a.sum()`, a sort, a normal
    draw and a 256 x 256 float32 matmul, on fresh arrays of --size float32 elements.
    The figure of each step is the time from before `import` to that step's result
    (so the last is the whole program); the import itself is its own row.

    * first process  the library's kernel cache is an empty temporary folder
                     (CUKIT_CACHE_DIR, CUPY_CACHE_DIR): every kernel is compiled
    * warm cache     a second process on the folder the first one filled

    The first process minus the warm one is what compiling costs. cukit also
    reports the kernels its first process compiled (the cache's entries). Peers,
    each where it imports: CuPy (its own cache folder, also empty) and PyTorch
    (its kernels are built ahead: it compiles nothing for these). On the
    emulator (no GPU) cukit runs alone, on --size 4096 unless given.

    Each row gives min, median and max of --reps samples (~ where max / min is
    over 10%); the two processes of a sample run one after the other, and the
    libraries take turns, each sample starting with the next one, so drift in the
    machine (and the first sample's cold files) favours none of them.

    --drop-caches (root, Linux) empties the page cache before every first process,
    so each starts as the first program on a freshly booted machine does: its
    libraries (NVRTC's among them) read from disk. Without it, the very first
    process of a run pays that alone and the others find the files in memory.

Usage
    PYTHONPATH=src python benchmarks/bench_coldstart.py [--reps 5] [--size N] [--quick]
        [--drop-caches] [--json benchmarks/results/coldstart.json]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import error_row, import_cukit, print_table, row, write_json  # noqa: E402

STEPS = ("import", "a + b", "a.sum()", "sort", "normal draw", "matmul 256x256")
DEFAULT_JSON = str(Path(__file__).resolve().parent / "results" / "coldstart.json")


# ---------------------------------------------------------------- the programs, in a child


def program_cukit(t0, n, marks):
    import cukit
    import cukit.random
    import numpy as np

    marks.append(time.perf_counter() - t0)
    rng = np.random.default_rng()
    a = cukit.to_device(rng.random(n, dtype=np.float32))
    b = cukit.to_device(rng.random(n, dtype=np.float32))
    steps = (lambda: a + b, lambda: a.sum(), lambda: cukit.sort(a),
             lambda: cukit.random.default_rng().standard_normal(n, dtype="float32"),
             lambda: cukit.to_device(rng.random((256, 256), dtype=np.float32))
             @ cukit.to_device(rng.random((256, 256), dtype=np.float32)))
    for step in steps:
        step().get()
        marks.append(time.perf_counter() - t0)
    return {"compiled": cukit.cache_info()["entries"], "device": cukit.Device().name}


def program_cupy(t0, n, marks):
    import cupy
    import numpy as np

    marks.append(time.perf_counter() - t0)
    rng = np.random.default_rng()
    a = cupy.asarray(rng.random(n, dtype=np.float32))
    b = cupy.asarray(rng.random(n, dtype=np.float32))
    steps = (lambda: a + b, lambda: a.sum(), lambda: cupy.sort(a),
             lambda: cupy.random.default_rng().standard_normal(n, dtype="float32"),
             lambda: cupy.asarray(rng.random((256, 256), dtype=np.float32))
             @ cupy.asarray(rng.random((256, 256), dtype=np.float32)))
    for step in steps:
        cupy.asnumpy(step())
        marks.append(time.perf_counter() - t0)
    return {}


def program_torch(t0, n, marks):
    import numpy as np
    import torch

    marks.append(time.perf_counter() - t0)
    rng = np.random.default_rng()
    a = torch.from_numpy(rng.random(n, dtype=np.float32)).cuda()
    b = torch.from_numpy(rng.random(n, dtype=np.float32)).cuda()
    steps = (lambda: a + b, lambda: a.sum(), lambda: torch.sort(a).values,
             lambda: torch.randn(n, device="cuda"),
             lambda: torch.from_numpy(rng.random((256, 256), dtype=np.float32)).cuda()
             @ torch.from_numpy(rng.random((256, 256), dtype=np.float32)).cuda())
    for step in steps:
        step().cpu()
        marks.append(time.perf_counter() - t0)
    return {}


PROGRAMS = {"cukit": program_cukit, "cupy": program_cupy, "torch": program_torch}


def child(way, n):
    t0 = time.perf_counter()
    marks = []
    extra = PROGRAMS[way](t0, n, marks)
    print(json.dumps({"marks": marks, **extra}))


# ---------------------------------------------------------------- the parent


def available(gpu):
    """The libraries to run: cukit, and on a GPU the peers that import."""
    ways = ["cukit"]
    if not gpu:
        return ways
    for name, probe in (("cupy", "import cupy; cupy.cuda.runtime.getDeviceCount()"),
                        ("torch", "import torch; assert torch.cuda.is_available()")):
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=300)
        if r.returncode == 0:
            ways.append(name)
    return ways


def drop_caches():
    """Empty the kernel's page cache (what a reboot does to the files a program reads)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def sample(way, cache_dir, n):
    env = dict(os.environ, CUKIT_CACHE_DIR=cache_dir, CUPY_CACHE_DIR=cache_dir,
               PYTHONPATH=os.pathsep.join(sys.path), CUKIT_QUIET="1")
    r = subprocess.run([sys.executable, __file__, "--child", way, "--size", str(n)], env=env,
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--size", type=int, help="elements of a and b (default: 1,000,000 on a "
                    "GPU, 4,096 on the emulator)")
    ap.add_argument("--json", default=DEFAULT_JSON)
    ap.add_argument("--quick", action="store_true", help="one sample of 1,024 elements: a "
                    "check that it runs, not a measurement")
    ap.add_argument("--drop-caches", action="store_true", help="empty the page cache before "
                    "each first process (needs root): every first process starts cold")
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.size)
    cukit = import_cukit("bench_coldstart")
    gpu = cukit.device_count() > 0 and cukit.backend() != "emulator"
    if args.quick:
        args.reps, args.size = 1, args.size or 1024
    n = args.size or (1_000_000 if gpu else 4096)
    ways = available(gpu)
    if args.drop_caches:
        try:
            drop_caches()
        except OSError as exc:
            sys.exit(f"bench_coldstart: --drop-caches cannot empty the page cache ({exc}): "
                     "run as root on Linux, or leave the option out")
    samples = {w: {"first": [], "warm": [], "compiled": []} for w in ways}
    errors = {}
    device = None
    for rep in range(args.reps):
        for way in ways[rep % len(ways):] + ways[:rep % len(ways)]:  # each sample starts anew
            if way in errors:
                continue
            try:
                with tempfile.TemporaryDirectory(prefix="bench-coldstart-") as cache:
                    if args.drop_caches:
                        drop_caches()
                    first = sample(way, cache, n)
                    warm = sample(way, cache, n)
            except Exception as exc:  # a peer that fails is reported, not fatal
                errors[way] = f"{type(exc).__name__}: {exc}"
                continue
            samples[way]["first"].append(first["marks"])
            samples[way]["warm"].append(warm["marks"])
            if "compiled" in first:
                samples[way]["compiled"].append(first["compiled"])
                device = first.get("device", device)
        print(f"sample {rep + 1}/{args.reps} done", file=sys.stderr, flush=True)

    table = []
    for process in ("first", "warm"):
        label = "first process" if process == "first" else "warm cache"
        for i, step in enumerate(STEPS):
            case = f"{label}: to {step}"
            for way in ways:
                if way in errors:
                    table.append(error_row(case, way, "s", errors[way], better="lower"))
                    continue
                table.append(row(case, way, [m[i] for m in samples[way][process]], "s",
                                 better="lower"))
    for way in ways:
        if way in errors:
            continue
        compile_s = [f[-1] - w[-1] for f, w in zip(samples[way]["first"], samples[way]["warm"])]
        table.append(row("compiling (first - warm)", way, compile_s, "s", better="lower"))
    if samples["cukit"]["compiled"]:
        table.append(row("kernels the first process compiled", "cukit",
                         samples["cukit"]["compiled"], "kernels", better="lower"))
    print(f"from `import` to each result, {args.reps} samples per row, {n} float32 elements"
          + ("" if gpu else " (cukit on its CPU emulator)"))
    print_table(table)
    write_json(args.json, {"machine": platform.node(), "python": sys.version, "reps": args.reps,
                           "size": n, "errors": errors, "samples": samples}, table, device)


if __name__ == "__main__":
    main()
