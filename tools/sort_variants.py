"""Time builds of cukit's radix sort side by side with CuPy's, in one process (issue 26).

A build is a shape of the sort's kernels, picked by an internal knob
(cukit._cukit._radix_variant(spec), or CUKIT_RADIX_VARIANT at import; spec is
"knob=value,..." over the default: block, items, items8, minb, early, match, spin,
hparts, hil, sdig; see csrc/sort/radix.c). Each build compiles once (NVRTC, cached as
usual), is checked against numpy, then all builds and CuPy are timed interleaved:
sort and argsort of --n keys (2^26) of float32 and int32, G keys/s, the median of
--reps samples of --calls calls each, min and max beside it, and the ratio to CuPy.

Checked once a build: the sorted --n keys of each dtype against numpy (the keys have
no zeros or NaNs, so any sort's result is the stable one, bit for bit), argsort of their
first 2^22 against np.argsort(kind="stable"), and 100003 keys with NaNs, -0.0, +0.0 and
many repeats in float32 and int64 (the 8-byte build), sort and argsort.

Usage
    PYTHONPATH=src python tools/sort_variants.py [--n 67108864] [--reps 7] [--calls 5]
        [--variants "name:spec;name:spec"] [--json out.json]
    On the emulator, as a smoke test: --quick (20000 keys, one sample, no CuPy)
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

try:
    import cukit
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    import cukit
import cukit._cukit as core

# The builds timed by default (why each: its comment). Each is a spec over the default.
VARIANTS = [
    ("default", ""),                                           # 512 x 17, counts first
    ("256x15", "block=256,items=15,early=0"),                  # the first build: rank, then count
    ("early", "block=256,items=15,early=1"),                   # counts first, that tile
    ("384x20", "block=384,items=20,early=1"),                  # CUB's sm_90 shape
    ("384x20m", "block=384,items=20,early=1,match=1"),         # ... ranked by match.any
    ("384x20h", "block=384,items=20,early=1,hil=1"),           # ... histogram copies side by side
    ("384x20d", "block=384,items=20,early=1,sdig=1"),          # ... digits kept for the scatter
    ("512x15", "block=512,items=15,early=1"),                  # 64 registers: 32 warps an SM
]
CASES = [("sort", "float32"), ("sort", "int32"), ("argsort", "float32"), ("argsort", "int32")]
ARG_CHECK = 1 << 22


def keys(rng, dtype, n):
    """The benchmark's keys (as benchmarks/bench_sort.py): normal floats, full-range ints."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def specials(rng, dtype, n):
    """Keys with many repeats, and for floats NaNs (both signs), infinities and both zeros."""
    if np.dtype(dtype).kind == "f":
        x = np.round(rng.standard_normal(n) * 4, 1).astype(dtype)
        for v in (np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0):
            x[rng.integers(0, n, n // 20)] = v
        return x
    return rng.integers(-9, 9, n).astype(dtype)


def same_bits(a, b):
    u = f"u{a.dtype.itemsize}"
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(u), b.view(u))


def pass_kernel_facts(before, block):
    """Registers, shared memory and blocks an SM of the pass kernel compiled since `before`
    (the keys of cukit's kernel cache then), for the first dtype compiled: a dict."""
    for key, entry in core._sort_kernels.items():
        if key not in before:
            try:
                k = entry[0].get_kernel("cukit_radix_pass")
                a = k.attributes
                blocks = k.max_active_blocks(block)
            except Exception as e:  # noqa: BLE001 - a fact not known is no reason to stop
                print(f"(no kernel facts: {e})")
                return {}
            return {"regs": a["num_regs"], "smem": a["shared_size_bytes"], "blocks_sm": blocks,
                    "warps_sm": blocks * block // 32}
    return {}


def check(devs, refs, arg_refs, rng, quick):
    """Problems of the build in use against numpy: a list of strings (empty: right)."""
    bad = []
    for dt, d in devs.items():
        if not same_bits(cukit.sort(d).get(), refs[dt]):
            bad.append(f"sort {dt}")
        m = arg_refs[dt].size
        if not np.array_equal(cukit.argsort(d[:m]).get(), arg_refs[dt]):
            bad.append(f"argsort {dt} (first {m})")
    for dt in ("float32", "int64"):
        y = specials(rng, dt, 2003 if quick else 100003)
        d = cukit.to_device(y)
        if not same_bits(cukit.sort(d).get(), np.sort(y, kind="stable")):
            bad.append(f"sort {dt} specials")
        if not np.array_equal(cukit.argsort(d).get(), np.argsort(y, kind="stable")):
            bad.append(f"argsort {dt} specials")
    return bad


def rate(fn, x, n, calls, sync):
    t = time.perf_counter()
    for _ in range(calls):
        fn(x)
    sync()
    return n * calls / (time.perf_counter() - t) / 1e9


def parse_variants(text):
    """ "name:spec;name:spec" (a bare spec is named v0, v1, ...) as [(name, spec)]."""
    out = []
    for i, part in enumerate(p.strip() for p in text.split(";") if p.strip()):
        name, _, spec = part.rpartition(":")
        out.append((name or f"v{i}", spec))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1 << 26)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--variants", default=None, help='"name:spec;name:spec" (a bare spec '
                    'is named v0, v1, ...); default: the built-in list')
    ap.add_argument("--json", default=None)
    ap.add_argument("--quick", action="store_true", help="20000 keys, one sample, no CuPy: a "
                    "check that it runs (the emulator), not a measurement")
    args = ap.parse_args()
    if args.quick:
        args.n, args.reps, args.calls = 20000, 1, 1
    variants = parse_variants(args.variants) if args.variants else VARIANTS
    t_start = time.perf_counter()
    cupy = None
    if not args.quick:
        try:
            import cupy
        except ImportError:
            print("CuPy does not import: timing cukit's builds alone")
    rng = np.random.default_rng(0)
    hosts = {dt: keys(rng, dt, args.n) for dt in ("float32", "int32")}
    assert not (hosts["float32"] == 0).any() and not np.isnan(hosts["float32"]).any()
    refs = {dt: np.sort(x) for dt, x in hosts.items()}  # no equal keys of other bits: stable
    arg_refs = {dt: np.argsort(x[:ARG_CHECK], kind="stable") for dt, x in hosts.items()}
    devs = {dt: cukit.to_device(x) for dt, x in hosts.items()}
    cdevs = {dt: cupy.asarray(x) for dt, x in hosts.items()} if cupy else {}
    csync = cupy.cuda.Device().synchronize if cupy else None
    print(f"data and numpy references: {time.perf_counter() - t_start:.1f} s")

    # compile, describe and check each build
    facts, problems, specs = {}, {}, {}
    for name, spec in variants:
        t = time.perf_counter()
        core._radix_variant(spec)
        specs[name] = core._radix_variant()
        block = int(specs[name].split(",")[0].split("=")[1])
        before = set(core._sort_kernels)
        for dt in ("float32", "int32"):
            cukit.sort(devs[dt][:4096])
        cukit.synchronize()
        facts[name] = pass_kernel_facts(before, block)
        try:
            problems[name] = check(devs, refs, arg_refs, rng, args.quick)
        except cukit.CompileError:
            raise
        except Exception as e:  # noqa: BLE001 - reported in the table, the others still run
            problems[name] = [f"{type(e).__name__}: {e}"]
        facts[name]["setup_s"] = round(time.perf_counter() - t, 2)
    print(f"compiled and checked: {time.perf_counter() - t_start:.1f} s")

    # time: every build and CuPy in each round, after a round not kept
    ways = [(name, which, dt) for name, _ in variants for which, dt in CASES]
    if cupy:
        ways += [("cupy", which, dt) for which, dt in CASES]
    samples = {w: [] for w in ways}
    for r in range(args.reps + 1):
        for name, which, dt in ways:
            if name == "cupy":
                fn, x, sync = getattr(cupy, which), cdevs[dt], csync
            else:
                core._radix_variant(specs[name])
                fn, x, sync = getattr(cukit, which), devs[dt], cukit.synchronize
            fn(x)
            sync()
            v = rate(fn, x, args.n, args.calls, sync)
            if r:
                samples[(name, which, dt)].append(v)
    core._radix_variant("")

    # the table
    med = {w: statistics.median(s) for w, s in samples.items()}
    head = ["build", "regs", "smem", "blk/SM", "warps", "check"] + [f"{w} {d}" for w, d in CASES]
    rows = []
    for name, _ in variants + ([("cupy", "")] if cupy else []):
        f = facts.get(name, {})
        row = [name, str(f.get("regs", "")), str(f.get("smem", "")), str(f.get("blocks_sm", "")),
               str(f.get("warps_sm", "")),
               "" if name == "cupy" else ("ok" if not problems[name] else "WRONG")]
        for which, dt in CASES:
            m = med[(name, which, dt)]
            c = med.get(("cupy", which, dt))
            row.append((f"{m:6.2f}" if m >= 0.1 else f"{m:.2e}")
                       + (f" {m / c:4.2f}x" if c and name != "cupy" else ""))
        rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    dev = cukit.Device().name
    print(f"\ndevice: {dev}; n = {args.n}; G keys/s, median of {args.reps} samples of "
          f"{args.calls} calls; ratio: against CuPy {cupy.__version__ if cupy else '(none)'}")
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    print("\nmin-max G keys/s:")
    for name, _ in variants + ([("cupy", "")] if cupy else []):
        print(f"  {name:10s} " + "  ".join(
            f"{min(samples[(name, w, d)]):.3g}-{max(samples[(name, w, d)]):.3g}" for w, d in CASES))
    print("\nbuilds:")
    for name, _ in variants:
        extra = f"  PROBLEMS: {', '.join(problems[name])}" if problems[name] else ""
        print(f"  {name:10s} {specs[name]}  (compile+check {facts[name]['setup_s']} s){extra}")
    for which, dt in CASES:
        best = max((n for n, _ in variants if not problems[n]), key=lambda n: med[(n, which, dt)],
                   default=None)
        if best:
            print(f"best for {which} {dt}: {best} ({med[(best, which, dt)]:.2f} G keys/s)")
    print(f"total {time.perf_counter() - t_start:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "device": dev, "n": args.n, "calls": args.calls, "specs": specs, "facts": facts,
            "problems": problems,
            "samples": {f"{n}|{w}|{d}": s for (n, w, d), s in samples.items()}}, indent=1))
    return 1 if any(problems.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
