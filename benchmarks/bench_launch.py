"""Kernel launch overhead: cukit against raw C and other ways of launching from Python.

What it measures
    Microseconds per launch of tiny kernels (1024 elements, 4 blocks of 256
    threads) with 0, 5 and 16 arguments:

    * empty0()                                     0 arguments
    * saxpy(float a, const float* x, const float* y, float* out, size_t n)
                                                   5 arguments
    * args16(8 pointers, then int/float/size_t scalars)
                                                   16 arguments

    Every figure is taken the same way: WARMUP launches, then REPS repetitions
    of LAUNCHES launches followed by one synchronize, timed on the host clock;
    the table shows min, median and max of the repetitions divided by LAUNCHES
    (~ where max / min is over 10%), and the median's ratio to the raw C figure
    for the same argument count (> 1: slower than C).

How
    * raw C: benchmarks/launch_baseline.c, compiled on the spot with the
      system C compiler (cc). It dlopens libcuda.so.1, loads the cubin that
      cukit.Program(...).cubin() produces for this GPU, and calls cuLaunchKernel
      with arguments packed once. It also times a CUDA graph of 100 saxpy
      launches (microseconds per kernel), replays of a graph of one saxpy
      back to back (microseconds per replay: the replay's own cost) and the
      GPU time of a big saxpy.
    * cukit: kernel(...) with cukit arrays and Python scalars; kernel.prepare()
      when this cukit has it; the same two graphs replayed with Graph.launch;
      as pointer arguments, objects that hold a __cuda_array_interface__ dict
      and nothing else (what cukit itself adds for the protocol), torch tensors
      and CuPy arrays (each only if importable; CuPy's property builds its dict
      on each call).
      Apart from the others (after them): the same call with cukit.debug.capture on
      (no buffers, three 4 KiB arrays, three 1 MiB arrays), what recording costs.
    * peers, each only if importable: cuda.core, cuda.bindings (arguments packed
      once / on every call), CuPy RawModule, ctypes into libcuda.so.1 and PyCUDA.
      A peer that is missing or fails is listed with the reason.

    All launches go to the legacy default stream of the device's primary
    context, which every library here shares, so cukit.synchronize() (that is,
    cuCtxSynchronize) ends each repetition. After each timing the output array
    is checked, so a way that packs arguments wrongly shows up as WRONG RESULT.

    Separately, the GPU time of saxpy_big (y = a*x + y over 512*32768 floats,
    blocks of 512) is taken with CUDA events, in C and with cukit.Event around
    a cukit launch (median of 50); the two should agree within 2%.

Usage
    PYTHONPATH=src python benchmarks/bench_launch.py [--reps 7] [--launches 20000] [--quick]
        [--json benchmarks/results/launch.json] [--png benchmarks/results/launch.png]

Writes the table to stdout, every sample to the JSON file and, when matplotlib
is importable, a bar chart of the 5-argument rows to the PNG file.
"""
import argparse
import ctypes
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from _bench import error_row, import_cukit, need_gpu, print_table, row, run_c, write_json

HERE = Path(__file__).resolve().parent

KERNEL_SOURCE = r"""
extern "C" __global__ void empty0() {}

extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i];
}

extern "C" __global__ void args16(const float* p0, const float* p1, const float* p2,
                                  const float* p3, const float* p4, const float* p5,
                                  const float* p6, float* out, int i0, float f0, size_t s0,
                                  int i1, float f1, size_t s1, int i2, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = f0 * p0[i] + f1 * p1[i] + p2[i] + p3[i] + p4[i] + p5[i] + p6[i]
                 + (float)(i0 + i1 + i2) + (float)(s0 + s1);
}

extern "C" __global__ void saxpy_big(float a, const float* x, float* y, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
"""

N = 1024
GRID, BLOCK = 4, 256
WARMUP = 1000
GRAPH_REPLAYS = 200  # of a 100-kernel graph, per repetition
BIG_N, BIG_BLOCK, BIG_REPS = 512 * 32768, 512, 50

KERNEL_NAMES = {0: "empty0", 5: "saxpy", 16: "args16"}

# Each kernel's arguments as (C type, value); "ptr" values name a device array.
# launch_baseline.c passes the same values.
ARGS = {
    0: [],
    5: [("float", 2.0), ("ptr", "x"), ("ptr", "y"), ("ptr", "out"), ("size_t", N)],
    16: [("ptr", "x")] * 7
    + [("ptr", "out"), ("int", 1), ("float", 0.5), ("size_t", 2), ("int", 3), ("float", 1.5),
       ("size_t", 4), ("int", 5), ("size_t", N)],
}

CTYPES = {"ptr": ctypes.c_void_p, "int": ctypes.c_int, "float": ctypes.c_float,
          "size_t": ctypes.c_size_t}
NUMPY_SCALARS = {"int": np.int32, "float": np.float32, "size_t": np.uint64}
STRUCT_CODES = {"ptr": "P", "int": "i", "float": "f", "size_t": "Q"}

RAW_C = "raw C, cuLaunchKernel, args pre-packed"
RAW_C_GRAPH = "raw C, CUDA graph replay (per kernel)"
RAW_C_GRAPH1 = "raw C, 1-kernel graph replays back to back (per replay)"
CUKIT_GRAPH1 = "cukit, 1-kernel graph.launch(s) back to back (per replay)"
# One empty launch, or one replay of a graph of it, and its wait: the floor under any
# launch a program waits for (and under bench_nccl's graph rows).
RAW_C_TRIP = "raw C, cuLaunchKernel + cuStreamSynchronize"
RAW_C_GRAPH_TRIP = "raw C, 1-kernel graph replay + cuStreamSynchronize"
CUKIT_TRIP = "cukit, k(stream=s) + s.synchronize()"
CUKIT_GRAPH_TRIP = "cukit, 1-kernel graph.launch(s) + s.synchronize()"
ROUND_TRIPS = 2000  # per sample, as launch_baseline.c


def fail(message):
    sys.exit(f"bench_launch: {message}")


def expected_output(nargs, x, y):
    """What the nargs-argument kernel writes to out, from host copies of x and y."""
    if nargs == 5:
        return 2.0 * x + y
    if nargs == 16:  # p0..p6 all point at x: 0.5x + 1.5x + 5x, plus i0+i1+i2 + s0+s1
        return 7 * x + np.float32(15)
    return None


def arg_values(nargs, pointers, convert):
    """The kernel's argument values: pointers[name] for "ptr", convert[ctype](value) otherwise."""
    return [pointers[v] if t == "ptr" else convert.get(t, lambda v: v)(v) for t, v in ARGS[nargs]]


def call_text(nargs):
    """"a0, a1, ..." - the argument names that launch statements use."""
    return ", ".join(f"a{i}" for i in range(nargs))


def call(callee, *parts):
    """Source text of a call, skipping empty parts: call("k", "a0, a1", "grid=4")."""
    return f"{callee}({', '.join(p for p in parts if p)})"


def tuple_text(nargs):
    """Source text of a tuple of the argument names."""
    return f"({call_text(nargs)},)" if nargs else "()"


def named_args(values):
    return {f"a{i}": v for i, v in enumerate(values)}


def ctypes_params(nargs, pointers):
    """(values, void* array) with each argument stored once, as cuLaunchKernel wants them."""
    values = [CTYPES[t](pointers[v] if t == "ptr" else v) for t, v in ARGS[nargs]]
    params = (ctypes.c_void_p * max(nargs, 1))(*[ctypes.addressof(v) for v in values])
    return values, params


def make_loop(stmt, namespace):
    """A function running `stmt` count times.

    Like timeit, the statement is compiled into the loop body, so no extra
    Python call per launch is counted."""
    code = f"def loop(count):\n    for _ in range(count):\n        {stmt}\n"
    scope = dict(namespace)
    exec(code, scope)
    return scope["loop"]


class LaunchBench:
    """The shared state (device, arrays, cubin, settings) and the rows measured so far."""

    def __init__(self, cukit, launches, reps):
        self.cukit = cukit
        self.launches, self.reps = launches, reps
        self.device = cukit.get_device()
        self.module = cukit.compile(KERNEL_SOURCE)
        self.cubin = cukit.Program(KERNEL_SOURCE).cubin(arch=self.device.arch)
        rng = np.random.default_rng(0)
        self.host = {"x": rng.random(N, dtype=np.float32), "y": rng.random(N, dtype=np.float32)}
        self.arrays = {"x": cukit.to_device(self.host["x"]), "y": cukit.to_device(self.host["y"]),
                       "out": cukit.zeros(N, np.float32)}
        self.pointers = {name: a.ptr for name, a in self.arrays.items()}
        self.rows = []
        self.pending = []  # ways checked and waiting to be timed together
        self.c_median = {}  # args -> raw C microseconds per launch
        self.c_graph_median = None  # raw C microseconds per kernel in graph replay
        self.c_graph1_median = None  # raw C microseconds per replay of a 1-kernel graph
        self.c_trip_median = {}  # "launch" / "graph" -> raw C microseconds per round trip

    def add_row(self, way, nargs, samples=None, note=""):
        us = statistics.median(samples) if samples else None
        self.rows.append({"way": way, "args": nargs, "us": us, "samples_us": samples or [],
                          "note": note})

    def measure(self, way, nargs, stmt, namespace, loop=None, sync=None, launches=None):
        """Check `stmt` (one launch of the nargs-argument kernel) gives the right output,
        then queue it for timing; run_pending() times every queued way together."""
        out = self.arrays["out"]
        try:
            loop = loop or make_loop(stmt, namespace)
            sync = sync or self.cukit.synchronize
            out.set(np.zeros(N, np.float32))
            loop(100 if launches is None else launches // 100)
            sync()
            want = expected_output(nargs, self.host["x"], self.host["y"])
            ok = want is None or np.allclose(out.get(), want, rtol=1e-5, atol=1e-5)
            self.pending.append({"way": way, "args": nargs, "loop": loop, "sync": sync,
                                 "launches": launches or self.launches,
                                 "note": "" if ok else "WRONG RESULT"})
        except Exception as e:  # one broken way must not stop the others
            self.add_row(way, nargs, note=f"{type(e).__name__}: {e}")

    def run_pending(self):
        """Time every queued way, one repetition of each in turn, so that drift in the
        machine's speed during the run spreads evenly over all of them."""
        for p in self.pending:
            p["loop"](WARMUP)
            p["sync"]()
            p["samples"] = []
        for _ in range(self.reps):
            for p in self.pending:
                if p["note"].startswith("failed"):
                    continue
                try:
                    t0 = time.perf_counter()
                    p["loop"](p["launches"])
                    p["sync"]()
                    p["samples"].append((time.perf_counter() - t0) * 1e6 / p["launches"])
                except Exception as e:  # noqa: BLE001 - recorded in the row
                    p["note"] = f"failed while timing: {type(e).__name__}: {e}"
        for p in self.pending:
            self.add_row(p["way"], p["args"], p["samples"], p["note"])
        self.pending.clear()


# ------------------------------------------------------------------ raw C


def run_c_baseline(bench):
    """Run the C program on the same cubin; returns its parsed JSON."""
    args = ["{dir}/kernels.cubin", bench.device.ordinal, bench.launches, bench.reps, WARMUP,
            GRAPH_REPLAYS, BIG_N, BIG_REPS]
    return run_c("launch_baseline.c", args, timeout=300, files={"kernels.cubin": bench.cubin})


def try_raw_c(bench):
    """The C baseline's JSON, or the exception that stopped it."""
    try:
        return run_c_baseline(bench)
    except Exception as e:  # noqa: BLE001 - reported in the rows
        return e


def bench_raw_c(bench, before, after):
    """Rows for the C baseline, run once before and once after the Python ways; its
    samples from both runs are pooled. Returns one run's JSON, or None."""
    runs = [r for r in (before, after) if isinstance(r, dict)]
    if not runs:
        for nargs in (0, 5, 16):
            bench.add_row(RAW_C, nargs, note=f"{type(before).__name__}: {before}")
        return None
    for nargs in (0, 5, 16):
        samples = [x for r in runs for x in r["launch_us"][str(nargs)]["samples"]]
        bench.add_row(RAW_C, nargs, samples)
        bench.c_median[nargs] = statistics.median(samples)
    graph = [x for r in runs for x in r["graph_us"]["samples"]]
    bench.add_row(RAW_C_GRAPH, 5, graph)
    bench.c_graph_median = statistics.median(graph)
    graph1 = [x for r in runs if "graph1_us" in r for x in r["graph1_us"]["samples"]]
    if graph1:
        bench.add_row(RAW_C_GRAPH1, 5, graph1)
        bench.c_graph1_median = statistics.median(graph1)
    for way, key in ((RAW_C_TRIP, "launch"), (RAW_C_GRAPH_TRIP, "graph")):
        trips = [x for r in runs if "round_trip_us" in r for x in r["round_trip_us"][key]["samples"]]
        if trips:
            bench.add_row(way, 0, trips)
            bench.c_trip_median[key] = statistics.median(trips)
    return runs[-1]


# ------------------------------------------------------------------ cukit


def bench_cukit(bench):
    arrays = bench.arrays
    for nargs in (0, 5, 16):
        kernel = getattr(bench.module, KERNEL_NAMES[nargs])
        ns = {"k": kernel, **named_args(arg_values(nargs, arrays, {}))}
        bench.measure("cukit, k(...)", nargs,
                      call("k", call_text(nargs), f"grid={GRID}", f"block={BLOCK}"), ns)
    for nargs in (0, 5, 16):
        kernel = getattr(bench.module, KERNEL_NAMES[nargs])
        if not hasattr(kernel, "prepare"):
            bench.add_row("cukit, p = k.prepare(...); p(...)", nargs,
                          note="Kernel.prepare not in this cukit")
            continue
        ns = {"p": kernel.prepare(grid=GRID, block=BLOCK),
              **named_args(arg_values(nargs, arrays, {}))}
        bench.measure("cukit, p = k.prepare(...); p(...)", nargs, call("p", call_text(nargs)), ns)


def bench_cukit_graph(bench):
    """A 100-launch graph captured from cukit calls, replayed (µs per kernel), and a
    1-launch graph replayed back to back (µs per replay)."""
    cukit, a = bench.cukit, bench.arrays
    for way, kernels in (("cukit, CUDA graph replay (per kernel)", 100), (CUKIT_GRAPH1, 1)):
        try:
            stream = cukit.Stream()
            with stream.capture() as graph:
                for _ in range(kernels):
                    bench.module.saxpy(2.0, a["x"], a["y"], a["out"], N, grid=GRID,
                                       block=BLOCK, stream=stream)
        except Exception as e:  # one broken way must not stop the others
            bench.add_row(way, 5, note=f"{type(e).__name__}: {e}")
            continue

        def loop(count, graph=graph, stream=stream, kernels=kernels):
            launch = graph.launch
            for _ in range(max(1, count // kernels)):
                launch(stream)

        bench.measure(way, 5, None, None, loop=loop, sync=stream.synchronize,
                      launches=GRAPH_REPLAYS * 100)


def bench_cukit_round_trips(bench):
    """One empty launch and its wait, and one replay of a one-kernel graph and its wait,
    on a cukit.Stream: what cukit adds to the driver's floor (raw C's rows)."""
    cukit = bench.cukit
    kernel = getattr(bench.module, KERNEL_NAMES[0])
    try:
        stream = cukit.Stream()
        with stream.capture() as graph:
            kernel(grid=1, block=1, stream=stream)
    except Exception as e:  # one broken way must not stop the others
        bench.add_row(CUKIT_GRAPH_TRIP, 0, note=f"{type(e).__name__}: {e}")
        return
    sync = stream.synchronize

    def launches(count):
        for _ in range(count):
            kernel(grid=1, block=1, stream=stream)
            sync()

    def replays(count):
        for _ in range(count):
            graph.launch(stream)
            sync()

    bench.measure(CUKIT_TRIP, 0, None, None, loop=launches, sync=sync, launches=ROUND_TRIPS)
    bench.measure(CUKIT_GRAPH_TRIP, 0, None, None, loop=replays, sync=sync,
                  launches=ROUND_TRIPS)


CAPTURE_LAUNCHES = 400  # launches per sample under cukit.debug.capture (each waits)
BIG_CAPTURE_N = 1 << 18  # floats: 1 MiB in each of saxpy's three arrays


def bench_cukit_capture(bench):
    """The cost of cukit.debug.capture while on (issue 27): k(...) with no buffers, with
    three 4 KiB arrays and with three 1 MiB arrays, each launch recorded in the default
    ring (last 16 launches, 256 MiB). Timed apart from the other rows."""
    import tempfile

    cukit, a = bench.cukit, bench.arrays
    if not hasattr(cukit, "debug") or not hasattr(cukit.debug, "capture"):
        bench.add_row("cukit, k(...) under debug.capture", 0, note="no cukit.debug.capture")
        return
    rng = np.random.default_rng(1)
    big = {k: cukit.to_device(rng.random(BIG_CAPTURE_N, dtype=np.float32)) for k in ("x", "y")}
    big["out"] = cukit.empty(BIG_CAPTURE_N, np.float32)
    m = bench.module
    ways = [("cukit, k(...) under debug.capture", 0,
             lambda: m.empty0(grid=GRID, block=BLOCK)),
            ("cukit, k(...) under debug.capture", 5,
             lambda: m.saxpy(2.0, a["x"], a["y"], a["out"], N, grid=GRID, block=BLOCK)),
            ("cukit, k(...) under debug.capture, 3 x 1 MiB", 5,
             lambda: m.saxpy(2.0, big["x"], big["y"], big["out"], BIG_CAPTURE_N,
                             grid=BIG_CAPTURE_N // BLOCK, block=BLOCK))]
    with tempfile.TemporaryDirectory() as tmp:
        rec = cukit.debug.capture(tmp)
        rec.start()
        try:
            for way, nargs, launch in ways:
                def loop(count, launch=launch):
                    for _ in range(count):
                        launch()
                bench.pending.append({"way": way, "args": nargs, "loop": loop,
                                      "sync": cukit.synchronize, "launches": CAPTURE_LAUNCHES,
                                      "note": ""})
            bench.run_pending()
        finally:
            rec.stop(write=False)
    want = 2.0 * big["x"].get() + big["y"].get()
    if not np.allclose(big["out"].get(), want, rtol=1e-5, atol=1e-5):
        bench.rows[-1]["note"] = "WRONG RESULT"


class CAIArray:
    """The least a producer of __cuda_array_interface__ can be: the dict in an attribute,
    built once. Its row is what cukit adds for the protocol, apart from what a producer
    spends building the dict (CuPy's property builds it on each call)."""

    def __init__(self, array):
        self.__cuda_array_interface__ = array.__cuda_array_interface__


def bench_cukit_cai(bench):
    views = {name: CAIArray(a) for name, a in bench.arrays.items()}
    ns = {"k": bench.module.saxpy, **named_args(arg_values(5, views, {}))}
    bench.measure("cukit, objects with __cuda_array_interface__ as args", 5,
                  call("k", call_text(5), f"grid={GRID}", f"block={BLOCK}"), ns)


def bench_cukit_torch(bench):
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("torch.cuda.is_available() is False")
    views = {name: torch.as_tensor(a, device="cuda") for name, a in bench.arrays.items()}
    ns = {"k": bench.module.saxpy, **named_args(arg_values(5, views, {}))}
    bench.measure(f"cukit, torch {torch.__version__} tensors as args", 5,
                  call("k", call_text(5), f"grid={GRID}", f"block={BLOCK}"), ns)


def bench_cukit_streams(bench):
    """The same 5-argument launch on a cukit.Stream and on a torch stream (stream=)."""
    import torch

    cukit = bench.cukit
    ns = {"k": bench.module.saxpy, "s": cukit.Stream(), "ts": torch.cuda.Stream(),
          **named_args(arg_values(5, bench.arrays, {}))}
    bench.measure("cukit, k(..., stream=cukit.Stream)", 5,
                  call("k", call_text(5), f"grid={GRID}", f"block={BLOCK}", "stream=s"), ns,
                  sync=ns["s"].synchronize)
    bench.measure(f"cukit, k(..., stream=torch {torch.__version__} stream)", 5,
                  call("k", call_text(5), f"grid={GRID}", f"block={BLOCK}", "stream=ts"), ns,
                  sync=ns["ts"].synchronize)


def bench_cukit_cupy(bench):
    import cupy

    views = {name: cupy.asarray(a) for name, a in bench.arrays.items()}
    ns = {"k": bench.module.saxpy, **named_args(arg_values(5, views, {}))}
    bench.measure(f"cukit, cupy {cupy.__version__} arrays as args", 5,
                  call("k", call_text(5), f"grid={GRID}", f"block={BLOCK}"), ns)


# ------------------------------------------------------------------ peers


def bench_cuda_core(bench):
    import cuda.core

    try:
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
    except ImportError:  # before 0.4 the API lived in cuda.core.experimental
        from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch

    dev = Device(bench.device.ordinal)
    dev.set_current()
    program = Program(KERNEL_SOURCE, code_type="c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
    code = program.compile("cubin")
    version = getattr(cuda.core, "__version__", "")
    for nargs in (0, 5, 16):
        ns = {"launch": launch, "stream": dev.default_stream,
              "config": LaunchConfig(grid=GRID, block=BLOCK),
              "kernel": code.get_kernel(KERNEL_NAMES[nargs]),
              **named_args(arg_values(nargs, bench.pointers, NUMPY_SCALARS))}
        bench.measure(f"cuda.core {version} launch()", nargs,
                      call("launch", "stream, config, kernel", call_text(nargs)), ns)


def bench_cuda_bindings(bench):
    import cuda.bindings
    from cuda.bindings import driver

    def checked(result):
        err, *rest = result
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuda.bindings: {err!r}")
        return rest[0] if rest else None

    module = checked(driver.cuModuleLoadData(bench.cubin))
    stream = driver.CUstream(0)
    version = getattr(cuda.bindings, "__version__", "")
    for nargs in (0, 5, 16):
        func = checked(driver.cuModuleGetFunction(module, KERNEL_NAMES[nargs].encode()))
        values, params = ctypes_params(nargs, bench.pointers)
        packed = ctypes.addressof(params) if nargs else 0
        ns = {"cuLaunchKernel": driver.cuLaunchKernel, "f": func, "stream": stream,
              "packed": packed, "keep": (values, params)}
        bench.measure(f"cuda.bindings {version}, args pre-packed", nargs,
                      f"cuLaunchKernel(f, {GRID}, 1, 1, {BLOCK}, 1, 1, 0, stream, packed, 0)", ns)

        types = tuple(CTYPES[t] for t, _ in ARGS[nargs])
        ns = {"cuLaunchKernel": driver.cuLaunchKernel, "f": func, "stream": stream,
              "types": types, **named_args(arg_values(nargs, bench.pointers, {}))}
        packing = f"({tuple_text(nargs)}, types)" if nargs else "0"
        bench.measure(f"cuda.bindings {version}, args packed each call", nargs,
                      f"cuLaunchKernel(f, {GRID}, 1, 1, {BLOCK}, 1, 1, 0, stream, {packing}, 0)", ns)


def bench_cupy(bench):
    import cupy

    module = cupy.RawModule(code=KERNEL_SOURCE)
    views = {name: cupy.asarray(a) for name, a in bench.arrays.items()}
    for nargs in (0, 5, 16):
        ns = {"kernel": module.get_function(KERNEL_NAMES[nargs]),
              **named_args(arg_values(nargs, views, NUMPY_SCALARS))}
        bench.measure(f"CuPy {cupy.__version__} RawModule kernel", nargs,
                      f"kernel(({GRID},), ({BLOCK},), {tuple_text(nargs)})", ns)


def bench_ctypes(bench):
    libcuda = ctypes.CDLL("libcuda.so.1")
    c_uint, c_void_p = ctypes.c_uint, ctypes.c_void_p
    libcuda.cuModuleLoadData.argtypes = [ctypes.POINTER(c_void_p), ctypes.c_char_p]
    libcuda.cuModuleGetFunction.argtypes = [ctypes.POINTER(c_void_p), c_void_p, ctypes.c_char_p]
    launch = libcuda.cuLaunchKernel
    launch.argtypes = [c_void_p] + [c_uint] * 7 + [c_void_p, c_void_p, c_void_p]
    launch.restype = ctypes.c_int

    module = c_void_p()
    if libcuda.cuModuleLoadData(ctypes.byref(module), bench.cubin) != 0:
        raise RuntimeError("cuModuleLoadData failed")
    for nargs in (0, 5, 16):
        func = c_void_p()
        if libcuda.cuModuleGetFunction(ctypes.byref(func), module, KERNEL_NAMES[nargs].encode()):
            raise RuntimeError("cuModuleGetFunction failed")
        values, params = ctypes_params(nargs, bench.pointers)
        ns = {"launch": launch, "f": func, "params": params if nargs else None,
              "keep": values}
        bench.measure("ctypes cuLaunchKernel, args pre-packed", nargs,
                      f"launch(f, {GRID}, 1, 1, {BLOCK}, 1, 1, 0, None, params, None)", ns)


def bench_pycuda(bench):
    import pycuda
    import pycuda.driver as drv

    drv.init()
    context = drv.Device(bench.device.ordinal).retain_primary_context()
    context.push()
    try:
        module = drv.module_from_buffer(bench.cubin)
        for nargs in (0, 5, 16):
            func = module.get_function(KERNEL_NAMES[nargs])
            func.prepare("".join(STRUCT_CODES[t] for t, _ in ARGS[nargs]))
            ns = {"func": func, **named_args(arg_values(nargs, bench.pointers, {}))}
            bench.measure(f"PyCUDA {pycuda.VERSION_TEXT} prepared_call", nargs,
                          call("func.prepared_call", f"({GRID}, 1), ({BLOCK}, 1, 1)",
                               call_text(nargs)), ns)
    finally:
        context.pop()


PEERS = [
    ("cukit, torch tensors as args", bench_cukit_torch),
    ("cukit, cupy arrays as args", bench_cukit_cupy),
    ("cukit, k(..., stream=torch stream)", bench_cukit_streams),
    ("cuda.core launch()", bench_cuda_core),
    ("cuda.bindings", bench_cuda_bindings),
    ("CuPy RawModule kernel", bench_cupy),
    ("ctypes cuLaunchKernel, args pre-packed", bench_ctypes),
    ("PyCUDA prepared_call", bench_pycuda),
]


def bench_peers(bench):
    for label, run in PEERS:
        try:
            run(bench)
        except ModuleNotFoundError as e:
            bench.add_row(label, 5, note=f"not installed ({e})")
        except Exception as e:
            bench.add_row(label, 5, note=f"{type(e).__name__}: {e}")
        # Peers may change the current context; give it back to cukit's device.
        bench.device.use()


# ------------------------------------------------------------------ big saxpy


def bench_big_saxpy(bench, c_result):
    """GPU milliseconds of saxpy_big timed with cukit.Event, against the C figure."""
    cukit = bench.cukit
    kernel = bench.module.saxpy_big
    x, y = cukit.zeros(BIG_N, np.float32), cukit.zeros(BIG_N, np.float32)
    grid = (BIG_N + BIG_BLOCK - 1) // BIG_BLOCK
    start, end = cukit.Event(), cukit.Event()
    for _ in range(5):
        kernel(2.0, x, y, BIG_N, grid=grid, block=BIG_BLOCK)
    cukit.synchronize()
    samples = []
    for _ in range(BIG_REPS):
        start.record()
        kernel(2.0, x, y, BIG_N, grid=grid, block=BIG_BLOCK)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    result = {"n": BIG_N, "grid": grid, "block": BIG_BLOCK, "reps": BIG_REPS,
              "cukit_ms": statistics.median(samples), "cukit_samples_ms": samples}
    if c_result is not None:
        result["c_ms"] = c_result["big_saxpy_ms"]["median"]
        result["c_samples_ms"] = c_result["big_saxpy_ms"]["samples"]
        result["ratio"] = result["cukit_ms"] / result["c_ms"]
    return result


# ------------------------------------------------------------------ output


def round_trip(way):
    """"launch" or "graph" for the rows of a launch and its wait, else None."""
    if "synchronize" not in way.lower():
        return None
    return "graph" if "graph" in way else "launch"


def ratio_to_c(bench, row):
    if round_trip(row["way"]):
        base = bench.c_trip_median.get(round_trip(row["way"]))
    elif "1-kernel graph" in row["way"]:
        base = bench.c_graph1_median
    elif "graph" in row["way"]:
        base = bench.c_graph_median
    else:
        base = bench.c_median.get(row["args"])
    return row["us"] / base if row["us"] is not None and base else None


def table_rows(bench, big):
    """The shared rows (benchmarks/_bench.py): by argument count, the baseline first;
    "ratio" is the median over raw C's (> 1: slower than C)."""
    rows = []
    for r in sorted(bench.rows, key=lambda r: (r["args"], round_trip(r["way"]) or "",
                                               not r["way"].startswith("raw C"))):
        trip = round_trip(r["way"])
        case = ({"launch": "launch and wait", "graph": "1-kernel graph replay and wait"}[trip]
                if trip else f"{r['args']} args, 1-kernel CUDA graph (per replay)"
                if "1-kernel graph" in r["way"] else f"{r['args']} args, in a CUDA graph (per kernel)"
                if "graph" in r["way"] else f"{r['args']} args")
        if r["samples_us"]:
            t = row(case, r["way"], r["samples_us"], "us", better="lower")
            if ratio_to_c(bench, r) is not None:
                t["ratio"] = ratio_to_c(bench, r)
            if r["note"]:
                t["note"] = r["note"]
        else:
            t = error_row(case, r["way"], "us", r["note"] or "not measured", better="lower")
        rows.append(t)
    case = f"saxpy_big GPU time by events ({big['n']:,} floats)"
    rows.append(row(case, "cukit.Event around a cukit launch", big["cukit_samples_ms"], "ms",
                    better="lower"))
    if "c_samples_ms" in big:
        rows.append(row(case, "raw C cuEventRecord", big["c_samples_ms"], "ms", better="lower"))
    return rows


def print_tables(bench, big, rows):
    print(f"\n{bench.reps} samples of {bench.launches} launches per row; ratio: median over "
          "raw C's (> 1: slower than C)")
    print_table(rows)
    for r in rows:
        if r.get("note"):
            print(f"  {r['case']}, {r['way']}: {r['note']}")
    print(f"\nbig saxpy, n = {big['n']:,} floats, grid {big['grid']} x block {big['block']}, "
          f"GPU time by CUDA events, median of {big['reps']}:")
    print(f"  cukit.Event around a cukit launch: {big['cukit_ms']:.4f} ms")
    if "c_ms" in big:
        print(f"  cuEventRecord around cuLaunchKernel (C): {big['c_ms']:.4f} ms")
        print(f"  ratio cukit / C: {big['ratio']:.4f} (target: within 2%)")


def write_results(path, bench, big, c_result, rows):
    for r in bench.rows:
        r["ratio_to_raw_c"] = ratio_to_c(bench, r)
    cukit = bench.cukit
    data = {
        "meta": {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "device": bench.device.name,
            "arch": bench.device.arch,
            "driver_version": cukit.driver_version(),
            "nvrtc_version": cukit.nvrtc_version(),
            "cukit_version": cukit.__version__,
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
        },
        "config": {"n": N, "grid": GRID, "block": BLOCK, "launches": bench.launches,
                   "reps": bench.reps, "warmup": WARMUP, "graph_kernels": 100,
                   "graph_replays": GRAPH_REPLAYS, "statistic": "median of reps"},
        "rows": bench.rows,
        "big_saxpy": big,
        "c_baseline": c_result,
    }
    write_json(path, data, rows, bench.device.name)


def write_png(path, bench):
    """Horizontal bars of the 5-argument rows; returns False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = [r for r in bench.rows if r["args"] == 5 and r["us"] is not None]
    rows.sort(key=lambda r: r["us"], reverse=True)
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.5))
    bars = ax.barh([r["way"] for r in rows], [r["us"] for r in rows], color="tab:blue")
    for bar, r in zip(bars, rows):
        if r["way"].startswith("cukit"):
            bar.set_color("tab:orange")
    ax.bar_label(bars, fmt="%.2f", padding=3)
    if 5 in bench.c_median:
        ax.axvline(bench.c_median[5], color="gray", linestyle="--", linewidth=1)
    ax.set_xlabel("µs per launch (median), lower is better")
    ax.set_title(f"Launching saxpy (5 args, {GRID}x{BLOCK} threads) on {bench.device.name}")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7, help="repetitions per figure (default 7)")
    parser.add_argument("--quick", action="store_true", help="200 launches a sample, 3 samples: "
                        "a check that it runs (the emulator), not a measurement")
    parser.add_argument("--launches", type=int, default=20000,
                        help="launches per repetition (default 20000)")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "launch.json",
                        help="where to write all results (default benchmarks/results/launch.json)")
    parser.add_argument("--png", type=Path, default=HERE / "results" / "launch.png",
                        help="bar chart of the 5-arg rows (default benchmarks/results/launch.png)")
    args = parser.parse_args()
    if args.reps < 1 or args.launches < 1:
        parser.error("--reps and --launches must be at least 1")
    return args


def main():
    args = parse_args()
    cukit = import_cukit("bench_launch")
    need_gpu("bench_launch", cukit, args.quick)
    if args.quick:
        global WARMUP, GRAPH_REPLAYS, BIG_N, BIG_REPS
        WARMUP, GRAPH_REPLAYS, BIG_N, BIG_REPS = 10, 2, 512 * 64, 3
        args.launches, args.reps = min(args.launches, 200), min(args.reps, 3)
    try:
        bench = LaunchBench(cukit, args.launches, args.reps)
    except cukit.NoDeviceError as e:
        fail(f"needs an NVIDIA GPU and its driver: {e}")
    print(f"{bench.device.name} ({bench.device.arch}), driver {cukit.driver_version()}, "
          f"Python {platform.python_version()}; {args.reps} x {args.launches} launches "
          f"of {GRID} x {BLOCK} threads per figure")

    c_before = try_raw_c(bench)
    bench_cukit(bench)
    bench_cukit_cai(bench)
    bench_cukit_graph(bench)
    bench_cukit_round_trips(bench)
    bench_peers(bench)
    bench.run_pending()
    c_result = bench_raw_c(bench, c_before, try_raw_c(bench))
    bench_cukit_capture(bench)
    big = bench_big_saxpy(bench, c_result)

    rows = table_rows(bench, big)
    print_tables(bench, big, rows)
    write_results(args.json, bench, big, c_result, rows)
    if write_png(args.png, bench):
        print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
