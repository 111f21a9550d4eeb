"""NCCL through cukit against torch.distributed (NCCL backend) in the same run, and
peer copies between two GPUs against torch's copy_.

What it measures
    * all_reduce (sum, float32, in place) of 16 MiB, 256 MiB and 1 GiB: bus bandwidth
      in GB/s (1e9 B/s) = algorithm bandwidth x 2(n-1)/n, NCCL's own definition. A
      sample is ITERS back-to-back all_reduces, then one wait.
    * all_reduce of 4 bytes: latency in microseconds of one call plus its wait
      (cukit: comm.all_reduce + comm.synchronize; torch: dist.all_reduce +
      torch.cuda.synchronize; raw: ncclAllReduce + cuStreamSynchronize through
      ctypes on cukit's own communicator, which adds ctypes' overhead to the raw
      number), median over 2000 calls per sample; cukit both on the default stream
      and on a cukit.Stream of its own.
    * the same 4-byte all_reduce captured in a CUDA graph: one replayed with its wait
      (cukit: stream.capture() and Graph.launch; torch: torch.cuda.graph and
      replay), and 100 in one graph, the time per collective.
    * those three again (eager on a cukit.Stream, one in a graph, 100 in a graph) on
      symmetric memory (comm.symmetric_empty, NCCL 2.27+), rows marked "symmetric".
    * cukit's 4-byte all_reduce is its one-shot kernel (comm.one_shot; see
      docs/guide/many-gpus.md): the graph rows are run again with CUKIT_NCCL_ONESHOT=0,
      marked "NCCL's kernel"
      (plain memory: NCCL's ring LL kernel; symmetric: its symmetric kernels).
    * the floor under the graph rows: a graph of one empty kernel replayed and waited
      for, on one GPU.
    * peer copy of 256 MiB from GPU 0 to GPU 1 in one process: cukit.copyto (through
      cuMemcpyPeerAsync; the copy turns peer access on, for the memory pool too)
      against torch's dst.copy_(src).
    Each way is run once (warm-up: connections, buffers), then sampled REPS times,
    the ways taking turns; the table shows min, median and max (~ where max / min
    is over 10%) and the ratio cukit / torch of the medians (for bandwidth, > 1 is
    better; for latency, < 1).

How
    The parent process measures the peer copy, makes an NCCL unique id and starts
    one worker per GPU (RANK, WORLD_SIZE, MASTER_ADDR/PORT set as torchrun would).
    Each worker makes a cukit Communicator and, if torch is installed, a
    torch.distributed process group on the same GPU; rank 0 reports. NVLink
    multicast stays off (NCCL_NVLS_ENABLE=0) in the parent and the workers.

Usage
    PYTHONPATH=src python benchmarks/bench_nccl.py [--reps 7] [--gpus 2] [--quick]
        [--json benchmarks/results/nccl.json]
"""
import argparse
import faulthandler
import ctypes
import json
import os
import socket
import statistics
import subprocess
import sys
import time

os.environ["NCCL_NVLS_ENABLE"] = "0"

from _bench import import_cukit, print_table, row, skip, write_json  # noqa: E402

cukit = import_cukit("bench_nccl")
import numpy as np  # noqa: E402

import cukit.nccl as nccl  # noqa: E402

SIZES = [16 << 20, 256 << 20, 1 << 30]


def iters_for(nbytes):
    return max(5, min(50, (2 << 30) // nbytes))


def worker(args):
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    uid = bytes.fromhex(os.environ["CUKIT_BENCH_UID"])
    comm = nccl.Communicator(size, uid, rank, device=rank, timeout=300)
    try:
        import torch
        import torch.distributed as dist

        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", rank=rank, world_size=size,
                                device_id=torch.device(f"cuda:{rank}"))
    except ImportError:
        torch = dist = None
    factor = 2 * (size - 1) / size
    rows = []
    for nbytes in SIZES if not args.graphs_only else ():
        print("rank %d: all_reduce of %d MiB" % (rank, nbytes >> 20), file=sys.stderr, flush=True)
        n = nbytes // 4
        iters = iters_for(nbytes)
        x = cukit.to_device(np.ones(n, np.float32), device=rank)
        ways = {"cukit": lambda: ([comm.all_reduce(x) for _ in range(iters)], comm.synchronize())}
        if torch is not None:
            t = torch.ones(n, dtype=torch.float32, device=f"cuda:{rank}")
            ways["torch.distributed"] = lambda: ([dist.all_reduce(t) for _ in range(iters)],
                                                torch.cuda.synchronize())
        for fn in ways.values():  # warm up: connections, buffers
            fn()
        samples = {k: [] for k in ways}
        for _ in range(args.reps):
            for k, fn in ways.items():
                t0 = time.perf_counter()
                fn()
                samples[k].append(time.perf_counter() - t0)
        for k, s in samples.items():
            sec = statistics.median(s) / iters
            rows.append({"measure": f"all_reduce {nbytes >> 20} MiB bus GB/s", "way": k,
                         "value": nbytes / sec / 1e9 * factor,
                         "samples": [nbytes / (x / iters) / 1e9 * factor for x in s]})
        x.free()
        if torch is not None:
            del t
            torch.cuda.empty_cache()
    # 4-byte latency: one call and its wait.
    calls = 2000
    x = cukit.to_device(np.ones(1, np.float32), device=rank)
    ways = {}

    def cukit_latency():
        for _ in range(calls):
            comm.all_reduce(x)
            comm.synchronize()

    ways["cukit"] = cukit_latency
    stream = cukit.Stream(device=rank)

    def cukit_stream_latency():
        for _ in range(calls):
            comm.all_reduce(x, stream=stream)
            comm.synchronize(stream)

    ways["cukit, on a cukit.Stream"] = cukit_stream_latency
    raw = raw_nccl(comm, x)
    if raw is not None:
        ways["raw ncclAllReduce (ctypes)"] = raw
    if torch is not None:
        t = torch.ones(1, dtype=torch.float32, device=f"cuda:{rank}")

        def torch_latency():
            for _ in range(calls):
                dist.all_reduce(t)
                torch.cuda.synchronize()

        ways["torch.distributed"] = torch_latency
    # Under a CUDA graph (a worker of their own, after the others: a hang there, with
    # its stack, costs only these rows): one captured all_reduce replayed with its wait,
    # and 100 in one graph (the time per collective).
    if args.graphs_only:
        ways.clear()
        faulthandler.dump_traceback_later(120, exit=True)
        graph_ways(ways, comm, x, stream, rank, calls, torch, dist, t if torch else None)
    for fn in ways.values():
        fn()
    samples = {k: [] for k in ways}
    for _ in range(args.reps):
        for k, fn in ways.items():
            t0 = time.perf_counter()
            fn()
            samples[k].append(time.perf_counter() - t0)
    report_latency(rows, samples, calls)
    assert x.get()[0] >= 1  # summed many times over: only that it was written
    if rank == 0:
        print("RESULT " + json.dumps(rows), flush=True)
    # The graphs go first: NCCL's destroy (cukit's and torch's) waits for every graph
    # holding a communicator's work (the loop's last `fn` holds one too).
    del fn
    ways.clear()
    if torch is not None:
        torch.cuda.synchronize()
    comm.destroy()
    if dist is not None:
        dist.destroy_process_group()


def replays(g1, g100, stream, calls):
    """The timed ways of two captured graphs: g1 (one collective) replayed and waited for
    `calls` times, g100 (100 collectives) calls // 100 times."""
    def one():
        for _ in range(calls):
            g1.launch(stream)
            stream.synchronize()

    def hundred():
        for _ in range(calls // 100):
            g100.launch(stream)
            stream.synchronize()

    return one, hundred


def graph_ways(ways, comm, x, stream, rank, calls, torch, dist, t):
    """The 4-byte all_reduce captured in CUDA graphs, by cukit and by torch."""
    print("rank %d: capturing (cukit)" % rank, file=sys.stderr, flush=True)
    with stream.capture() as g1:
        comm.all_reduce(x, stream=stream)
    with stream.capture() as g100:
        for _ in range(100):
            comm.all_reduce(x, stream=stream)

    ways["cukit graph"], ways["cukit graph of 100"] = replays(g1, g100, stream, calls)
    # The floor: a graph of one empty kernel on this GPU alone, replayed and waited for.
    nothing = cukit.compile('extern "C" __global__ void nothing() {}', device=rank).nothing
    with stream.capture() as g0:
        nothing(grid=1, block=1, stream=stream)
    ways[FLOOR] = replays(g0, g0, stream, calls)[0]
    symmetric_ways(ways, comm, stream, rank, calls)
    if torch is not None:
        print("rank %d: capturing (torch)" % rank, file=sys.stderr, flush=True)
        ts = torch.cuda.Stream(device=rank)
        tg1, tg100 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        with torch.cuda.stream(ts):
            dist.all_reduce(t)  # warm up outside capture, as torch asks
        torch.cuda.synchronize()
        with torch.cuda.graph(tg1, stream=ts):
            dist.all_reduce(t)
        with torch.cuda.graph(tg100, stream=ts):
            for _ in range(100):
                dist.all_reduce(t)

        def torch_graph_latency():
            for _ in range(calls):
                tg1.replay()
                torch.cuda.synchronize()

        def torch_graph100():
            for _ in range(calls // 100):
                tg100.replay()
                torch.cuda.synchronize()

        ways["torch graph"] = torch_graph_latency
        ways["torch graph of 100"] = torch_graph100


def symmetric_ways(ways, comm, stream, rank, calls):
    """The same 4-byte all_reduce on symmetric memory (comm.symmetric_empty: ncclMemAlloc
    registered as an NCCL window), where NCCL 2.27+ may run its symmetric kernels: eager
    (call + wait) and captured like the rows above."""
    try:
        xs = comm.symmetric_empty(1, np.float32)
    except cukit.NotSupportedError as e:
        print(f"rank {rank}: no symmetric rows: {e}", file=sys.stderr, flush=True)
        return
    xs.set(np.ones(1, np.float32))
    print("rank %d: symmetric window registered: %s" % (rank, nccl.window_of(xs).registered),
          file=sys.stderr, flush=True)
    comm.all_reduce(xs, stream=stream)  # once before capture: NCCL maps the peers' windows
    comm.synchronize(stream)
    with stream.capture() as g1:
        comm.all_reduce(xs, stream=stream)
    with stream.capture() as g100:
        for _ in range(100):
            comm.all_reduce(xs, stream=stream)

    def eager():
        for _ in range(calls):
            comm.all_reduce(xs, stream=stream)
            comm.synchronize(stream)

    ways["cukit, symmetric"] = eager
    ways["cukit graph, symmetric"], ways["cukit graph of 100, symmetric"] = replays(
        g1, g100, stream, calls)


def report_latency(rows, samples, calls):
    for k, s in samples.items():
        measure = "all_reduce 4 B latency us"
        if k == FLOOR:
            rows.append({"measure": FLOOR, "way": "cukit", "value": statistics.median(s) / calls * 1e6,
                         "samples": [x / calls * 1e6 for x in s]})
            continue
        symmetric = k.endswith(", symmetric")
        if symmetric:  # a measure of its own, next to the usual memory's
            k = k[:-len(", symmetric")]
            k = "cukit, on a cukit.Stream" if k == "cukit" else k
        if k == "cukit, on a cukit.Stream":
            measure, k = measure + " (stream)", "cukit"
        elif k.endswith("graph"):
            measure, k = measure + " (graph replay + wait)", k.split()[0]
        elif k.endswith("graph of 100"):
            # calls // 100 replays of 100 each: calls collectives in all
            measure, k = "all_reduce 4 B per collective us (100 in one graph)", k.split()[0]
        if symmetric:
            measure = measure.replace(" us", " us, symmetric", 1)
        rows.append({"measure": measure, "way": k, "value": statistics.median(s) / calls * 1e6,
                     "samples": [x / calls * 1e6 for x in s]})


def raw_nccl(comm, x):
    """ncclAllReduce + cuStreamSynchronize on cukit's communicator, through ctypes."""
    try:
        path = nccl.library().replace(" (already loaded)", "")
        lib = ctypes.CDLL(path)
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    fn = lib.ncclAllReduce
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                   ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    sync = cuda.cuStreamSynchronize
    sync.argtypes = [ctypes.c_void_p]
    handle, ptr, calls = comm.handle, x.ptr, 2000

    def run():
        for _ in range(calls):
            fn(ptr, ptr, 1, 7, 0, handle, None)
            sync(None)

    return run


def peer_copy(reps):
    rows = []
    nbytes = 256 << 20
    src = cukit.to_device(np.ones(nbytes // 4, np.float32), device=0)
    dst = cukit.empty(nbytes // 4, np.float32, device=1)
    d1 = cukit.Device(1)
    ways = {"cukit": lambda: ([cukit.copyto(dst, src) for _ in range(10)], d1.synchronize())}
    try:
        import torch

        ts = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda:0")
        td = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda:1")
        ways["torch copy_"] = lambda: ([td.copy_(ts) for _ in range(10)], torch.cuda.synchronize(1))
    except ImportError:
        pass
    for fn in ways.values():
        fn()
    samples = {k: [] for k in ways}
    for _ in range(reps):
        for k, fn in ways.items():
            t0 = time.perf_counter()
            fn()
            samples[k].append(time.perf_counter() - t0)
    for k, s in samples.items():
        rows.append({"measure": "peer copy 256 MiB GPU0->GPU1 GB/s", "way": k,
                     "value": nbytes * 10 / statistics.median(s) / 1e9,
                     "samples": [nbytes * 10 / x / 1e9 for x in s]})
    assert (dst.get()[:: 1 << 16] == 1).all()
    return rows


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The ways that are torch's baseline: torch.distributed's calls, torch's graphs (recorded
# as "torch"), torch's copy_.
TORCH_WAYS = ("torch.distributed", "torch", "torch copy_")
# cukit's rows run with CUKIT_NCCL_ONESHOT=0 (NCCL's kernels for every all_reduce)
NCCL_KERNEL = ", NCCL's kernel"
# what a graph replay and its wait cost with nothing to wait for (one GPU)
FLOOR = "empty kernel in a graph, replay + wait us"


def torch_value(by, measure):
    """torch's median for a measure: its own row, or, for cukit's rows of its own (on a
    cukit.Stream, on symmetric memory), the row of the measure they stand beside."""
    plain = measure.replace(" (stream)", "").replace(", symmetric", "").replace(NCCL_KERNEL, "")
    for m in (measure, plain):
        for way in TORCH_WAYS:
            if way in by.get(m, {}):
                return by[m][way]
    return None


def table(rows):
    by = {}
    for r in rows:
        by.setdefault(r["measure"], {})[r["way"]] = r["value"]
    lines = [f"{'measure':<38} {'cukit':>10} {'torch':>10} {'raw':>10} {'cukit/torch':>12}"]
    for measure, ways in by.items():
        torch_v = torch_value(by, measure)
        raw_v = ways.get("raw ncclAllReduce (ctypes)")
        ratio = ways["cukit"] / torch_v if torch_v and "cukit" in ways else float("nan")
        fmt = lambda v: f"{v:10.1f}" if v is not None else f"{'-':>10}"  # noqa: E731
        lines.append(f"{measure:<38} {fmt(ways.get('cukit'))} {fmt(torch_v)} {fmt(raw_v)} "
                     f"{ratio:12.2f}")
    return "\n".join(lines)


def table_rows(rows):
    """The shared rows (benchmarks/_bench.py); "ratio": cukit against torch's median
    (> 1: cukit ahead, for bandwidth and latency alike)."""
    out, by = [], {}
    for r in rows:
        by.setdefault(r["measure"], {})[r["way"]] = r["value"]
    for r in rows:
        better = "lower" if " us" in r["measure"] else "higher"
        t = row(r["measure"], r["way"], r.get("samples") or [r["value"]],
                "us" if better == "lower" else "GB/s", better=better)
        tv = torch_value(by, r["measure"])
        if r["way"] == "cukit" and tv:
            t["ratio"] = t["median"] / tv if better == "higher" else tv / t["median"]
        out.append(t)
    return out


def run_workers(args, extra, env_extra=None):
    """One worker per GPU; rank 0's rows."""
    uid = nccl.get_unique_id().hex()
    port = free_port()
    procs = []
    for rank in range(args.gpus):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(args.gpus),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), CUKIT_BENCH_UID=uid,
                   NCCL_NVLS_ENABLE="0")
        env.update(env_extra or {})
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", "--reps",
                                       str(args.reps)] + (["--quick"] if args.quick else [])
                                      + extra,
                                      env=env, stdout=subprocess.PIPE, text=True))
    outs = [p.communicate()[0] for p in procs]
    if "RESULT " not in outs[0] or any(p.returncode for p in procs):
        raise RuntimeError(f"a worker failed: {[p.returncode for p in procs]}")
    return json.loads(outs[0].split("RESULT ", 1)[1].splitlines()[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="16 MiB only, 3 repetitions: a check "
                    "that it runs, not a measurement")
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--no-graphs", dest="graphs", action="store_false",
                    help="skip the rows of all_reduce captured in CUDA graphs")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--graphs-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        SIZES[:] = [16 << 20]
        args.reps = min(args.reps, 3)
    if args.worker:
        return worker(args)
    n = cukit.device_count()
    if n < args.gpus or args.gpus < 2:
        skip("bench_nccl", f"needs {max(args.gpus, 2)} GPUs, this machine has {n}")
    rows = peer_copy(args.reps)
    rows += run_workers(args, [])
    if args.graphs:
        try:
            rows += run_workers(args, ["--graphs-only"])
        except RuntimeError as e:
            print(f"bench_nccl: the graph rows are missing: {e}", file=sys.stderr)
        # The same graphs with cukit's one-shot all-reduce off: NCCL's kernels, for
        # comparison (torch's rows of that run repeat the ones above).
        try:
            rows += [dict(r, measure=r["measure"] + NCCL_KERNEL)
                     for r in run_workers(args, ["--graphs-only"], {"CUKIT_NCCL_ONESHOT": "0"})
                     if r["way"] == "cukit" and r["measure"] != FLOOR]
        except RuntimeError as e:
            print(f"bench_nccl: the graph rows with NCCL's kernel are missing: {e}",
                  file=sys.stderr)
    info = {"nccl": nccl.version(), "gpus": args.gpus,
            "device": cukit.Device(0).name, "reps": args.reps}
    print(f"NCCL {'.'.join(map(str, info['nccl']))}, {args.gpus} x {info['device']}")
    print(table(rows))
    shared = table_rows(rows)
    print_table(shared)
    write_json(args.json, {"info": info, "rows": rows}, shared, info["device"])


if __name__ == "__main__":
    main()
