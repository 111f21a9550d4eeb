"""Per-call cost of PyCUDA-style code on cukit.pycuda, against cukit's own calls (and
PyCUDA itself when it is installed), in one run.

What it measures (microseconds per call; min, median and max of REPS repetitions,
after 100 calls of each way not counted; ~ where max / min is over 10%)
    * Function.__call__ with 5 arguments (two DeviceAllocations, numpy.float32,
      numpy.int32, numpy.uint32) on a 4 x 256-thread kernel: CALLS calls then one
      synchronize, the time divided by CALLS. Baseline: cukit's own k(...) with the
      same arguments (cukit.Buffer, numpy scalars), interleaved with it.
    * Function.__call__ with the same 5 arguments, the two pointers as GPUArrays of
      1024 float32; baseline cukit's own k(...) with cukit.Arrays.
    * prepared_call with the same arguments; baseline cukit's k.prepare(...)(...).
    * gpuarray.to_gpu and GPUArray.get of 4 KiB; baselines cukit.to_device and
      Array.get.
    * gpuarray `a + b` and `2 * a + b` on 1-element float32 arrays, and a PyCUDA-form
      ElementwiseKernel call (z = a*x + y, 1 element); baselines the same on
      cukit.Arrays (cukit's array engine) and cukit.ElementwiseKernel.
    * the first SourceModule(...).get_function of a small kernel in a fresh process:
      cold (empty cache folder) and cached (the folder holds it); the library is
      imported and the context made first, not timed.
    PyCUDA's rows run in a child process (it makes its own context), only where
    `import pycuda` works outside cukit.

Usage
    PYTHONPATH=src python benchmarks/bench_pycuda.py [--reps 7] [--calls 20000] [--quick]
        [--json benchmarks/results/pycuda.json]
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _bench import import_cukit, need_gpu, print_table, row, write_json  # noqa: E402

KERNEL = r"""
__global__ void axpb(float *out, const float *x, float a, int b, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + b;
}
"""
N = 1024


def per_call(fn, calls, sync):
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t0) / calls * 1e6


def launch_rows(calls, reps):
    import numpy as np
    import cukit
    import cukit.pycuda.driver as drv
    from cukit.pycuda.compiler import SourceModule
    from cukit.pycuda import gpuarray

    drv.init()
    mod = SourceModule(KERNEL)
    f = mod.get_function("axpb")
    out, x = drv.mem_alloc(4 * N), drv.mem_alloc(4 * N)
    a, b, n = np.float32(2), np.int32(1), np.uint32(N)
    k = mod.module.get_kernel("axpb")  # the module's own kernel, as cukit users call it
    kout, kx = cukit.alloc(4 * N), cukit.alloc(4 * N)
    f.prepare("PPfiI")
    grid, block = (4, 1), (256, 1, 1)
    p = k.prepare(grid=4, block=256)
    host = np.random.rand(N).astype(np.float32)  # 4 KiB
    garr = gpuarray.to_gpu(host)
    carr = cukit.to_device(host)
    gout = gpuarray.empty(N, np.float32)
    cout = cukit.empty(N, np.float32)
    sync = cukit.synchronize

    one_a = np.random.rand(1).astype(np.float32)
    one_b = np.random.rand(1).astype(np.float32)
    ca, cb, cz = cukit.to_device(one_a), cukit.to_device(one_b), cukit.to_device(one_a)
    ga, gb, gz = gpuarray.to_gpu(one_a), gpuarray.to_gpu(one_b), gpuarray.to_gpu(one_a)
    from cukit.pycuda.elementwise import ElementwiseKernel
    lin = "float a, float *x, float *y, float *z"
    gek = ElementwiseKernel(lin, "z[i] = a*x[i] + y[i]", "lin_comb")
    cek = cukit.ElementwiseKernel(lin, "z[i] = a*x[i] + y[i]", "lin_comb")
    two = np.float32(2)

    ways = {
        "cukit k(...) 5 args": lambda: k(kout, kx, a, b, n, grid=4, block=256),
        "cukit.pycuda Function.__call__ 5 args":
            lambda: f(out, x, a, b, n, block=block, grid=grid),
        "cukit k(...) 5 args, Arrays": lambda: k(cout, carr, a, b, n, grid=4, block=256),
        "cukit.pycuda Function.__call__ 5 args, GPUArrays":
            lambda: f(gout, garr, a, b, n, block=block, grid=grid),
        "cukit k.prepare(...)(...)": lambda: p(kout, kx, a, b, n),
        "cukit.pycuda prepared_call": lambda: f.prepared_call(grid, block, out, x, a, b, n),
        "cukit to_device 4 KiB": lambda: cukit.to_device(host),
        "cukit.pycuda gpuarray.to_gpu 4 KiB": lambda: gpuarray.to_gpu(host),
        "cukit Array.get 4 KiB": lambda: carr.get(),
        "cukit.pycuda GPUArray.get 4 KiB": lambda: garr.get(),
        "cukit a + b (1 element)": lambda: ca + cb,
        "cukit.pycuda gpuarray a + b (1 element)": lambda: ga + gb,
        "cukit 2 * a + b (1 element)": lambda: 2 * ca + cb,
        "cukit.pycuda gpuarray 2 * a + b (1 element)": lambda: 2 * ga + gb,
        "cukit ElementwiseKernel call (PyCUDA form)": lambda: cek(two, ca, cb, cz),
        "cukit.pycuda ElementwiseKernel call": lambda: gek(two, ga, gb, gz),
    }
    for name, fn in list(ways.items()):  # warm up: compiles, first allocations
        try:
            for _ in range(100):
                fn()
        except Exception as e:  # a part this build of cukit does not have
            print("skipped %s: %s" % (name, e), file=sys.stderr)
            del ways[name]
    samples = {name: [] for name in ways}
    for _ in range(reps):
        for name, fn in ways.items():
            c = calls if "4 KiB" not in name else max(calls // 10, 100)
            samples[name].append(per_call(fn, c, sync))
    return samples


PYCUDA_CHILD = r"""
import json, sys, time
import numpy as np
import pycuda.autoinit, pycuda.driver as drv, pycuda.gpuarray as gpuarray
from pycuda.compiler import SourceModule
calls, reps = int(sys.argv[1]), int(sys.argv[2])
N = 1024
f = SourceModule(sys.argv[3]).get_function("axpb")
out, x = drv.mem_alloc(4 * N), drv.mem_alloc(4 * N)
a, b, n = np.float32(2), np.int32(1), np.uint32(N)
f.prepare("PPfiI")
grid, block = (4, 1), (256, 1, 1)
host = np.random.rand(N).astype(np.float32)
garr = gpuarray.to_gpu(host)
gout = gpuarray.empty(N, np.float32)
from pycuda.elementwise import ElementwiseKernel
one = np.random.rand(1).astype(np.float32)
ga, gb, gz = gpuarray.to_gpu(one), gpuarray.to_gpu(one), gpuarray.to_gpu(one)
lin = ElementwiseKernel("float a, float *x, float *y, float *z", "z[i] = a*x[i] + y[i]", "lin")
two = np.float32(2)
ways = {
    "PyCUDA Function.__call__ 5 args": lambda: f(out, x, a, b, n, block=block, grid=grid),
    "PyCUDA Function.__call__ 5 args, GPUArrays":
        lambda: f(gout, garr, a, b, n, block=block, grid=grid),
    "PyCUDA prepared_call": lambda: f.prepared_call(grid, block, out, x, a, b, n),
    "PyCUDA gpuarray.to_gpu 4 KiB": lambda: gpuarray.to_gpu(host),
    "PyCUDA GPUArray.get 4 KiB": lambda: garr.get(),
    "PyCUDA gpuarray a + b (1 element)": lambda: ga + gb,
    "PyCUDA gpuarray 2 * a + b (1 element)": lambda: 2 * ga + gb,
    "PyCUDA ElementwiseKernel call": lambda: lin(two, ga, gb, gz),
}
def per_call(fn, c):
    drv.Context.synchronize(); t0 = time.perf_counter()
    for _ in range(c): fn()
    drv.Context.synchronize(); return (time.perf_counter() - t0) / c * 1e6
for fn in ways.values():
    for _ in range(100): fn()
samples = {k: [] for k in ways}
for _ in range(reps):
    for k, fn in ways.items():
        samples[k].append(per_call(fn, calls if "4 KiB" not in k else max(calls // 10, 100)))
print(json.dumps(samples))
"""


def pycuda_rows(calls, reps):
    code = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('pycuda') else 1)"
    if subprocess.run([sys.executable, "-c", code]).returncode != 0:
        return {}
    r = subprocess.run([sys.executable, "-c", PYCUDA_CHILD, str(calls), str(reps), KERNEL],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print("PyCUDA rows skipped: %s" % r.stderr.strip().splitlines()[-1:], file=sys.stderr)
        return {}
    return json.loads(r.stdout)


COMPILE_CHILD = r"""
import sys, time
import cukit.pycuda.autoinit
from cukit.pycuda.compiler import SourceModule
src = sys.argv[1]
t0 = time.perf_counter()
SourceModule(src).get_function("axpb")
print((time.perf_counter() - t0) * 1e3)
"""


def compile_rows(reps):
    env = dict(os.environ)
    src_dir = str(HERE.parent / "src")
    env["PYTHONPATH"] = src_dir + os.pathsep + env.get("PYTHONPATH", "")
    cold, cached = [], []
    for i in range(reps):
        with tempfile.TemporaryDirectory(prefix="bench_pycuda_cache_") as d:
            env["CUKIT_CACHE_DIR"] = d
            # A source of its own per repetition, so nothing outside the folder helps.
            src = KERNEL + "\n// repetition %d %f\n" % (i, time.time())
            for sink in (cold, cached):
                r = subprocess.run([sys.executable, "-c", COMPILE_CHILD, src], env=env,
                                   capture_output=True, text=True, timeout=300)
                if r.returncode != 0:
                    raise RuntimeError(r.stderr)
                sink.append(float(r.stdout.strip().splitlines()[-1]))
    return {"first SourceModule, cold (ms)": cold, "first SourceModule, cached (ms)": cached}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--quick", action="store_true", help="200 calls, 3 repetitions: a check "
                    "that it runs (the emulator), not a measurement")
    ap.add_argument("--json", default=str(HERE / "results" / "pycuda.json"))
    args = ap.parse_args()
    cukit = import_cukit("bench_pycuda")
    need_gpu("bench_pycuda", cukit, args.quick)
    if args.quick:
        args.calls, args.reps = min(args.calls, 200), min(args.reps, 3)

    samples = launch_rows(args.calls, args.reps)
    samples.update(pycuda_rows(args.calls, args.reps))
    samples.update(compile_rows(2 if args.quick else max(args.reps // 2, 3)))
    med = {k: statistics.median(v) for k, v in samples.items()}

    baselines = {
        "cukit.pycuda Function.__call__ 5 args": "cukit k(...) 5 args",
        "PyCUDA Function.__call__ 5 args": "cukit k(...) 5 args",
        "cukit.pycuda Function.__call__ 5 args, GPUArrays": "cukit k(...) 5 args, Arrays",
        "PyCUDA Function.__call__ 5 args, GPUArrays": "cukit k(...) 5 args, Arrays",
        "cukit.pycuda prepared_call": "cukit k.prepare(...)(...)",
        "PyCUDA prepared_call": "cukit k.prepare(...)(...)",
        "cukit.pycuda gpuarray.to_gpu 4 KiB": "cukit to_device 4 KiB",
        "PyCUDA gpuarray.to_gpu 4 KiB": "cukit to_device 4 KiB",
        "cukit.pycuda GPUArray.get 4 KiB": "cukit Array.get 4 KiB",
        "PyCUDA GPUArray.get 4 KiB": "cukit Array.get 4 KiB",
        "cukit.pycuda gpuarray a + b (1 element)": "cukit a + b (1 element)",
        "PyCUDA gpuarray a + b (1 element)": "cukit a + b (1 element)",
        "cukit.pycuda gpuarray 2 * a + b (1 element)": "cukit 2 * a + b (1 element)",
        "PyCUDA gpuarray 2 * a + b (1 element)": "cukit 2 * a + b (1 element)",
        "cukit.pycuda ElementwiseKernel call": "cukit ElementwiseKernel call (PyCUDA form)",
        "PyCUDA ElementwiseKernel call": "cukit ElementwiseKernel call (PyCUDA form)",
    }
    table = []
    for name, own in baselines.items():
        if not name.startswith("cukit.pycuda "):
            continue
        case = name[len("cukit.pycuda "):]
        for way, key in (("cukit's own call", own), ("cukit.pycuda", name),
                         ("PyCUDA", "PyCUDA " + case)):
            if samples.get(key):
                r = row(case, way, samples[key], "us", better="lower", key=key)
                if way != "cukit's own call" and med.get(own):
                    r["ratio"] = r["median"] / med[own]
                table.append(r)
    for key in ("first SourceModule, cold (ms)", "first SourceModule, cached (ms)"):
        if samples.get(key):
            table.append(row(key.replace(" (ms)", ""), "cukit.pycuda", samples[key], "ms",
                             better="lower", key=key))
    dev = cukit.Device(0)
    print("cukit.pycuda per-call cost on %s (%d repetitions; ratio: the median over cukit's own "
          "call's, > 1: slower)" % (dev.name, args.reps))
    print_table(table)
    write_json(args.json, {"device": dev.name, "python": platform.python_version(),
                           "reps": args.reps, "calls": args.calls, "medians": med,
                           "samples": samples}, table, dev.name)


if __name__ == "__main__":
    main()
