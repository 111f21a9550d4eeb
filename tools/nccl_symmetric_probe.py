"""Does NCCL's symmetric-memory path pay off here? A probe for two (or more) GPUs of one
host, under a minute: a 4-byte float32 all_reduce on ordinary cukit memory against the
same on symmetric memory (comm.symmetric_empty), eager (call + wait) and in CUDA graphs
(one replayed with its wait; 100 in one graph, per collective).

It runs two rounds of one process per GPU, NCCL_NVLS_ENABLE=0 in both:
  1. NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=TUNING into a file: one call of each kind, then
     what NCCL chose is printed (a "[Symmetric]" line names the symmetric kernel, e.g.
     AllReduce_AGxLL_R; without one NCCL kept its usual kernel for the symmetric array).
  2. NCCL_DEBUG=WARN: the timings (medians of 5 samples, microseconds), and a check of
     the sums against numpy.
Prints NCCL's version and whether each rank's window was registered.

    PYTHONPATH=src python tools/nccl_symmetric_probe.py [--gpus 2] [--calls 1000]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["NCCL_NVLS_ENABLE"] = "0"

import numpy as np  # noqa: E402

import cukit  # noqa: E402
import cukit.nccl as nccl  # noqa: E402


def worker(args):
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    uid = bytes.fromhex(os.environ["PROBE_UID"])
    comm = nccl.Communicator(size, uid, rank, device=rank, timeout=60)
    s = cukit.Stream(device=rank)
    plain = cukit.to_device(np.ones(1, np.float32), device=rank)
    sym = comm.symmetric_empty(1, np.float32)
    sym.set(np.ones(1, np.float32))
    win = nccl.window_of(sym)
    out = {"rank": rank, "registered": win.registered, "window_bytes": win.nbytes}
    # correctness: every rank's rank + 1, summed
    for x in (plain, sym):
        x.set(np.full(1, rank + 1, np.float32))
        comm.all_reduce(x, stream=s)
        comm.synchronize(s)
        assert x.get()[0] == size * (size + 1) / 2, (x.get(), size)
    graphs = {}
    for name, x in (("plain", plain), ("symmetric", sym)):
        with s.capture() as g1:
            comm.all_reduce(x, stream=s)
        with s.capture() as g100:
            for _ in range(100):
                comm.all_reduce(x, stream=s)
        graphs[name] = (x, g1, g100)
    if args.kernels_only:  # one replay each, for the log
        for x, g1, g100 in graphs.values():
            g1.launch(s)
        s.synchronize()
        print("RESULT " + json.dumps(out), flush=True)
        x = g1 = g100 = plain = sym = win = None  # noqa: F841 (only graphs holds them)
        return finish(comm, graphs)
    calls = args.calls
    ways = {}
    for name, (x, g1, g100) in graphs.items():
        def eager(x=x):
            for _ in range(calls):
                comm.all_reduce(x, stream=s)
                comm.synchronize(s)

        def graph1(g1=g1):
            for _ in range(calls):
                g1.launch(s)
                s.synchronize()

        def graph100(g100=g100):
            for _ in range(max(1, calls // 100)):
                g100.launch(s)
                s.synchronize()

        ways[(name, "eager: call + wait")] = (eager, calls)
        ways[(name, "graph: replay + wait")] = (graph1, calls)
        ways[(name, "graph of 100: per collective")] = (graph100, max(1, calls // 100) * 100)
    for fn, _ in ways.values():  # warm up
        fn()
    samples = {k: [] for k in ways}
    for _ in range(5):
        for k, (fn, n) in ways.items():  # taking turns
            t0 = time.perf_counter()
            fn()
            samples[k].append((time.perf_counter() - t0) / n * 1e6)
    out["us"] = {f"{k[0]}|{k[1]}": [statistics.median(v), min(v), max(v)]
                 for k, v in samples.items()}
    print("RESULT " + json.dumps(out), flush=True)
    del fn, ways, eager, graph1, graph100
    x = g1 = g100 = plain = sym = win = None  # noqa: F841 (only graphs holds them)
    return finish(comm, graphs)


def finish(comm, graphs):
    comm.synchronize()
    graphs.clear()  # the graphs (and the symmetric array they hold) before the communicator
    comm.destroy()


def launch(args, env_extra, extra):
    uid = nccl.get_unique_id().hex()
    procs = []
    for rank in range(args.gpus):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.gpus), PROBE_UID=uid,
                   NCCL_NVLS_ENABLE="0")
        env.update({k: v.replace("{rank}", str(rank)) for k, v in env_extra.items()})
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", "--calls",
                                       str(args.calls)] + extra, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for rank, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        if p.returncode != 0 or "RESULT " not in out:
            print(f"rank {rank} failed (exit {p.returncode}):\n{out[-2000:]}\n{err[-3000:]}")
            sys.exit(1)
        results.append(json.loads(out.split("RESULT ", 1)[1].splitlines()[0]))
    return results


def kernels_chosen(log):
    """The distinct NCCL tuning lines for all_reduce, without the host/pid prefix."""
    seen = []
    for line in log.splitlines():
        if "AllReduce" not in line or "opCount" in line:  # the call's trace, not a choice
            continue
        text = line.split("NCCL INFO", 1)[-1].strip()
        if text not in seen:
            seen.append(text)
    return seen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=50)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--kernels-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    n = cukit.device_count()
    if n < args.gpus or cukit.backend() == "emulator":
        sys.exit(f"nccl_symmetric_probe: needs {args.gpus} GPUs (this machine: {n}, "
                 f"backend {cukit.backend()})")
    print(f"NCCL {'.'.join(map(str, nccl.version()))} ({nccl.library()}), "
          f"{args.gpus} x {cukit.Device(0).name}, NCCL_NVLS_ENABLE=0")
    with tempfile.TemporaryDirectory() as tmp:
        logs = pathlib.Path(tmp)
        t0 = time.perf_counter()
        res = launch(args, {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "TUNING",
                            "NCCL_DEBUG_FILE": str(logs / "rank{rank}.log")}, ["--kernels-only"])
        for r in res:
            print(f"rank {r['rank']}: symmetric window registered: {r['registered']} "
                  f"({r['window_bytes']} bytes)")
        log = "".join(p.read_text(errors="replace") for p in sorted(logs.glob("rank*.log")))
        lines = kernels_chosen(log)
        print("NCCL's choices for the all_reduces (NCCL_DEBUG_SUBSYS=TUNING, rank 0 logs them):")
        for line in lines[:12] or ["(no tuning lines in the log: NCCL printed none)"]:
            print("   ", line)
        symmetric = [ln for ln in lines if "symmetric" in ln.lower()]
        print("symmetric kernel chosen:", "yes: " + symmetric[0] if symmetric else "NO")
        if not lines:  # another NCCL's wording: what it did log, to read by eye
            print("rank 0's log ends with:")
            for ln in log.splitlines()[-8:]:
                print("   ", ln[:200])
        print(f"(round 1 took {time.perf_counter() - t0:.1f} s)")
    res = launch(args, {"NCCL_DEBUG": "WARN"}, [])
    us = res[0]["us"]
    print(f"\n4-byte float32 all_reduce, rank 0, microseconds (median [min, max] of 5 samples, "
          f"{args.calls} calls each):")
    kinds = ["eager: call + wait", "graph: replay + wait", "graph of 100: per collective"]
    print(f"{'':32}{'plain memory':>24}{'symmetric':>24}{'symmetric/plain':>17}")
    for kind in kinds:
        p, q = us[f"plain|{kind}"], us[f"symmetric|{kind}"]
        cell = lambda v: f"{v[0]:8.2f} [{v[1]:.2f}, {v[2]:.2f}]"  # noqa: E731
        print(f"{kind:32}{cell(p):>24}{cell(q):>24}{q[0] / p[0]:17.2f}")


if __name__ == "__main__":
    main()
