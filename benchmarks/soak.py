"""Soak: many threads doing random device work for minutes, every result checked.

What it does
    THREADS threads, each with a stream of its own, run for MINUTES minutes picking
    at random among: allocate an array of random size and copy random data to it,
    launch a kernel on it, copy it device to device, fill it, replay a captured
    graph with new arguments, and free it (explicitly or by dropping it). Every
    result comes back to the host and is compared element by element with numpy
    (unsigned integer arithmetic, so exactly). It reports operations done, errors
    (a wrong element or any exception: must be 0), and the process's resident
    memory and the device's used memory at the start and at the end.

    Then it allocates device memory in 1 GiB pieces until cukit.OutOfMemoryError,
    frees it all, and runs each kind of operation once more, checked.

    Not part of CI: it needs a GPU and minutes. JSON goes to --json.

Usage
    PYTHONPATH=src python benchmarks/soak.py [--minutes 2] [--threads 16] [--json PATH]
"""
import argparse
import gc
import json
import os
import platform
import random
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np

import cukit

SOURCE = r"""
extern "C" __global__ void affine(unsigned a, const unsigned* x, unsigned b, unsigned* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}
"""
MAX_ELEMENTS = 1 << 22  # 16 MiB of uint32


def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def device_used():
    info = cukit.memory_info()
    return info["total"] - info["free"]


def affine(a, x, b):
    return (np.uint32(a) * x + np.uint32(b)).astype(np.uint32)


class Worker:
    """One thread's loop: its own stream, generator, graph and tallies."""

    def __init__(self, kernel, seed, deadline):
        self.kernel = kernel
        self.rng = np.random.default_rng(seed)
        self.pick = random.Random(seed)
        self.deadline = deadline
        self.ops = {}
        self.errors = []
        self.checked = 0

    def check(self, what, got, want):
        self.checked += want.size
        if not np.array_equal(got, want):
            bad = int(np.count_nonzero(got != want))
            self.errors.append(f"{what}: {bad} of {want.size} elements wrong")

    def data(self, n):
        return self.rng.integers(0, 2**32, n, dtype=np.uint32)

    def launch(self, stream, a, x, b, y, n):
        self.kernel(a, x, b, y, n, grid=(n + 255) // 256, block=256, stream=stream)

    def run(self):
        try:
            self.loop()
        except Exception:  # noqa: BLE001 - counted, the soak goes on in the other threads
            self.errors.append(traceback.format_exc())

    def loop(self):
        s = cukit.Stream()
        # A graph of one launch over fixed buffers, replayed with new arguments.
        gn = 4096
        gx, gy = cukit.empty(gn, np.uint32), cukit.empty(gn, np.uint32)
        with s.capture() as graph:
            self.launch(s, 1, gx, 0, gy, gn)
        kept = []  # arrays alive across operations, freed later at random
        ops = ("alloc+copy+launch", "copy d2d", "fill", "graph replay", "free")
        while time.monotonic() < self.deadline:
            op = self.pick.choice(ops)
            try:
                self.step(op, s, graph, gx, gy, gn, kept)
            except Exception as e:  # noqa: BLE001 - every failure is an error of the soak
                self.errors.append(f"{op}: {type(e).__name__}: {e}")
            self.ops[op] = self.ops.get(op, 0) + 1
        for a in kept:
            a.free()
        s.synchronize()

    def step(self, op, s, graph, gx, gy, gn, kept):
        n = int(self.rng.integers(1, MAX_ELEMENTS))
        a, b = (int(v) for v in self.rng.integers(0, 2**32, 2))
        if op == "alloc+copy+launch":
            host = self.data(n)
            x = cukit.to_device(host, stream=s)
            y = cukit.empty(n, np.uint32)
            self.launch(s, a, x, b, y, n)
            out = y.get(stream=s)
            s.synchronize()
            self.check(op, out, affine(a, host, b))
            kept.append(x)
            if len(kept) > 4:
                kept.pop(0)  # dropped: freed with its last reference, after the stream's work
        elif op == "copy d2d":
            host = self.data(n)
            x = cukit.to_device(host, stream=s)
            y = cukit.empty(n, np.uint32)
            cukit.copyto(y, x, stream=s)
            out = y.get(stream=s)
            s.synchronize()
            self.check(op, out, host)
            x.free()
            y.free()
        elif op == "fill":
            y = cukit.empty(n, np.uint32)
            y.fill(a, stream=s)
            out = y.get(stream=s)
            s.synchronize()
            self.check(op, out, np.full(n, a, np.uint32))
        elif op == "graph replay":
            host = self.data(gn)
            gx.set(host, stream=s)
            graph.nodes[0].set_args(a, gx, b, gy, gn)
            graph.launch(s)
            out = gy.get(stream=s)
            s.synchronize()
            self.check(op, out, affine(a, host, b))
        elif op == "free" and kept:
            kept.pop(self.pick.randrange(len(kept))).free()


def every_operation_works(kernel):
    """One of each kind of operation after running out of memory, checked."""
    w = Worker(kernel, 12345, 0)
    s = cukit.Stream()
    gn = 4096
    gx, gy = cukit.empty(gn, np.uint32), cukit.empty(gn, np.uint32)
    with s.capture() as graph:
        w.launch(s, 1, gx, 0, gy, gn)
    kept = []
    for op in ("alloc+copy+launch", "copy d2d", "fill", "graph replay", "free"):
        w.step(op, s, graph, gx, gy, gn, kept)
    return w.checked, w.errors


def out_of_memory(kernel):
    piece = 1 << 30
    held = []
    t0 = time.perf_counter()
    error = None
    try:
        while True:
            held.append(cukit.alloc(piece))
    except cukit.OutOfMemoryError as e:
        error = str(e).splitlines()[0]
    got = len(held)
    for b in held:
        b.free()
    held.clear()
    cukit.synchronize()
    cukit.trim_pool()
    checked, errors = every_operation_works(kernel)
    return {"allocated_gib": got, "seconds": round(time.perf_counter() - t0, 2),
            "error": error, "checked_after": checked, "errors_after": errors}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=2.0)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--no-oom", action="store_true", help="skip the out-of-memory part")
    ap.add_argument("--json", default=str(Path(__file__).resolve().parent / "results" / "soak.json"))
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")

    kernel = cukit.compile(SOURCE).affine
    cukit.synchronize()
    gc.collect()
    start = {"rss": rss_bytes(), "device_used": device_used(), "pool": cukit.memory_info()}
    deadline = time.monotonic() + args.minutes * 60
    workers = [Worker(kernel, seed + i, deadline) for i in range(args.threads)]
    threads = [threading.Thread(target=w.run) for w in workers]
    # RSS ten times over the run: a leak climbs to the end, a working set (pinned staging
    # buffers, the allocator's arenas, the driver's own) levels off after the first part
    samples, stop = [], threading.Event()

    def sample():
        while not stop.wait(args.minutes * 6):
            samples.append(rss_bytes())

    sampler = threading.Thread(target=sample, daemon=True)
    t0 = time.perf_counter()
    sampler.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    elapsed = time.perf_counter() - t0
    cukit.synchronize()
    gc.collect()
    cukit.trim_pool()
    end = {"rss": rss_bytes(), "device_used": device_used(), "pool": cukit.memory_info()}

    ops, errors, checked = {}, [], 0
    for w in workers:
        for k, v in w.ops.items():
            ops[k] = ops.get(k, 0) + v
        errors += w.errors
        checked += w.checked
    total = sum(ops.values())
    mib = 1 << 20
    print(f"soak: {args.threads} threads, {elapsed / 60:.1f} min, seed {seed}, device "
          f"{cukit.Device().name}")
    print(f"  operations  {total} ({total / elapsed:.0f}/s): "
          + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
    print(f"  checked     {checked} elements, every one compared with numpy")
    print(f"  errors      {len(errors)}")
    for e in errors[:10]:
        print("    " + e.strip().replace("\n", "\n    "))
    print(f"  RSS         {start['rss'] / mib:.0f} MiB at the start, {end['rss'] / mib:.0f} MiB at the end")
    if len(samples) >= 4:
        half = samples[len(samples) // 2]
        print("  RSS by tenth " + " ".join(f"{s / mib:.0f}" for s in samples) + " MiB; "
              f"second half {(samples[-1] - half) / mib:+.0f} MiB")
    print(f"  device used {start['device_used'] / mib:.0f} MiB at the start, "
          f"{end['device_used'] / mib:.0f} MiB at the end (the whole GPU's, pool trimmed)")
    print(f"  cukit pool  {start['pool']['pool_used'] / mib:.0f} MiB used and "
          f"{start['pool']['pool_reserved'] / mib:.0f} MiB reserved at the start, "
          f"{end['pool']['pool_used'] / mib:.0f} and {end['pool']['pool_reserved'] / mib:.0f} at the end")
    result = {"machine": platform.node(), "python": sys.version, "threads": args.threads,
              "minutes": args.minutes, "seed": seed, "seconds": elapsed, "operations": ops,
              "checked_elements": checked, "errors": errors, "start": start, "end": end,
              "rss_samples": samples}
    if not args.no_oom:
        oom = out_of_memory(kernel)
        result["out_of_memory"] = oom
        print(f"  out of memory after {oom['allocated_gib']} GiB in 1 GiB pieces "
              f"({oom['seconds']} s): {oom['error']}")
        print(f"  after freeing it: every operation again, {oom['checked_after']} elements checked, "
              f"{len(oom['errors_after'])} errors")
        errors += oom["errors_after"]
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
