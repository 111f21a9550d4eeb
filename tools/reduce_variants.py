"""Time builds of cukit's reduction and scan kernels side by side with CuPy and PyTorch,
in one process (issue 23).

A build is a shape of the kernels, picked by an internal knob
(cukit._cukit._reduce_variant(spec), or CUKIT_REDUCE_VARIANT at import; spec is
"knob=value,..." over the default, "v0" the default itself; see reduce.c's "variants"):
  fnt, fu, fminb, fminbm, fgrid, fstride   the full reduction of one contiguous run
      (sum, max, argmax, dot, ...): threads a block, 16-byte loads in flight a thread,
      blocks an SM in the launch bounds (one input / more), blocks an SM in the grid
      (0: one wave as the occupancy allows), blocks interleaved instead of a run each
  crows                                    the axis-0 sum's rows in flight a warp
  ldg                                      every reduction's vector loads by
      ld.global.nc (the full and axis-0 kernels here)
  kept                                     every reduction split across blocks: its
      counters and partials in scratch the stream keeps (1) or its own, allocated and
      zeroed on the stream each launch (0); the same for the 1-D scan's tile words
  wave                                     every reduction split across blocks: its
      splits chosen so that its blocks fill whole waves of resident blocks (1), or a
      wave or more, rounded up (0: the grid until 2026-12-02)
  sitems, sitems8, smode, sminb, sspin, srec, slook, sbid, shint, slbw, spre   the 1-D scan's items a thread
      (accumulators of up to 4 bytes / wider), its tile (0 staged by the block, 1 by
      each warp, 2 kept in registers), its blocks an SM in the launch bounds (0: none),
      nanoseconds its look-back sleeps between reads of tiles not ready, and whether a
      thread sums its run again from the staged tile when writing (1) or keeps each
      prefix in a register (0); slook: tiles each lane of the look-back reads a step;
      sbid: the tile is the block's index (1) or a ticket's; shint: streaming 16-byte
      loads and stores (ld/st.global.cs); slbw: a ninth warp walks the look-back from the
      block's start, while the eight load the tile; spre: each block prefetches into L2
      the tile spre x SMs ahead (a block that starts later)
The knobs of one family touch only its kernels, so each build below sets one choice of
each family, and builds that share a family's choice time it twice (a noise figure).

Each build compiles once (NVRTC, cached as usual), is checked against numpy (exact: the
data are integers in floats, whose sums are exact in any order; argmax of ties is the
first; odd sizes, unaligned views, empty and 1-element arrays), then every build, CuPy
and PyTorch are timed interleaved: sum 64M float32, max, argmax, dot (2 x 64M), sum 32M
float64, sum along axis 0 of 8192 x 8192 float32, cumsum 64M float32, and a device to
device copy of 64M float32 as the ceiling. GB/s of the bytes read (reductions) or read
plus written (cumsum, copy), timed by CUDA events around --calls calls; the median of
--reps samples, min and max beside it, the ratio to the best peer and to cukit's copy.

Usage
    PYTHONPATH=src python tools/reduce_variants.py [--reps 9] [--calls 10]
        [--variants "name:spec;name:spec"] [--json out.json]
    On the emulator, as a smoke test: --quick (small arrays, one sample, no peers)
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

# The builds timed by default: one choice of each family (full reduction; axis 0; scan).
VARIANTS = [
    # name   full reduction / axis 0     1-D scan
    ("v0", "v0"),  # the default: kept scratch; 32 items warp-staged, each run summed twice; tile = blockIdx.x; streaming; 32 ns look-back sleeps; L2 prefetch a block-SM ahead; whole waves
    ("W0", "wave=0,"                     "sbid=0,shint=0,sspin=0"),  # the grid and the scan until 2026-12-02
    ("S0", "ldg=1,"                      "sspin=0"),  # the look-back without sleeps
    ("P0", "spre=0"),  # the scan without its L2 prefetch (the default until 2026-12-02)
    ("P2", "spre=2"),  # the tile two SMs' worth of blocks ahead
]
# why (2026-12-02, evening, an H200, two runs): each block prefetching into L2 the tile
# of the block spre x SMs later took cumsum from 0.800 of a copy to 0.870 (spre=1), 0.869
# (2), 0.830 (4), 0.709 (6: a wave ahead thrashes the L2): spre=1 the default. A ninth
# warp walking the look-back from the block's start (slbw=1) gave 0.779 against 0.799
# (0.780 with 6 blocks an SM, registers capped): kept as a knob, not the default.
# why (2026-12-02, third run, an H200, 7 samples): the axis-0 kernel with 2, 4 or 8
# groups of 32 output vectors a block (a knob tried on a branch) gave 0.98, 0.82 and 0.50
# of PyTorch against 1.004 for one; the scan's running values written before the
# look-back, the prefix joined as the warp stores, 0.777-0.783 of a copy against
# 0.794-0.805. Neither was merged. The axis-0 sum's grid was 704 blocks on 660 slots
# (11 splits of 64 blocks, 5 blocks an SM): wave=1 makes it 640.
# why (2026-12-02, fourth run, an H200): wave=1 took the axis-0 sum from 1.010 to 1.094
# of PyTorch; the look-back's 32 ns sleeps (sspin=32) gave cumsum 0.802 of a copy
# against 0.791 (0.802 against 0.794 in an earlier run): both the default.
# why (2026-12-02, second run): the tile by blockIdx.x (sbid=1) and streaming loads and
# stores (shint=1) took cumsum from 0.751 to 0.810 of a copy on an H200 (each alone 0.794
# and 0.779); 24-item tiles with both were 0.698.
# why (2026-12-02): the scans' tile words in scratch their stream keeps (an epoch a
# launch: no memset, allocation or free) and the axis-0 sum's partials too (kept scratch
# grows to 4 MiB) gave cumsum 0.755-0.758 of a copy and the axis-0 sum 1.01-1.03 of
# PyTorch on an H200 in two runs of the day. Slower there, and dropped: a persistent grid
# (one wave of blocks taking tile after tile, with or without the next tile loaded ahead:
# 19-35%), the tile blockIdx.x loaded while the ticket comes (20%), a look-back of 4
# tiles a lane a step (8%), 24- or 40-item tiles (17%, 28%), block staging (26%). They
# are in the git history.
FAMILIES = {"full": ("fnt", "fu", "fminb", "fminbm", "fgrid", "fstride", "ldg", "kept", "wave"),
            "axis0": ("crows", "ldg", "kept", "wave"),
            "scan": ("sitems", "sitems8", "smode", "sminb", "sspin", "srec", "slook", "slbw", "spre",
                     "kept", "sbid", "shint")}
# case -> (label, family); labels name the sizes of a run ({n}: --n, {h}: half of it)
CASES = {
    "sum32": ("sum, {n} float32", "full"),
    "max32": ("max, {n} float32", "full"),
    "argmax32": ("argmax, {n} float32", "full"),
    "dot32": ("dot, 2 x {n} float32", "full"),
    "sum64": ("sum, {h} float64", "full"),
    "ax0": ("sum axis 0, {side} x {side} float32", "axis0"),
    "cumsum32": ("cumsum, {n} float32 (read + write)", "scan"),
    "copy": ("device-to-device copy, {n} float32 (read + write)", None),
}


def size_label(n):
    return f"{n >> 20}M" if n % (1 << 20) == 0 else f"{n >> 10}K" if n % 1024 == 0 else str(n)


def parse_variants(text):
    """ "name:spec;name:spec" (a bare spec is named v0, v1, ...) as [(name, spec)]."""
    out = []
    for i, part in enumerate(p.strip() for p in text.split(";") if p.strip()):
        name, _, spec = part.rpartition(":")
        out.append((name or f"v{i}", spec))
    return out


def family_spec(full_spec, family):
    """The knobs of one family in a full spec ("knob=v,..."), as a string."""
    kv = dict(p.split("=") for p in full_spec.split(","))
    return ",".join(f"{k}={kv[k]}" for k in FAMILIES[family])


# ------------------------------------------------------------------ the calls


def calls_of(name, mod, arrs, side):
    """case -> (callable, bytes moved) for library `name` on its arrays."""
    x, y, x64, out = arrs["x"], arrs["y"], arrs["x64"], arrs["out"]
    n = x.shape[0]
    c = {"sum32": (lambda: mod.sum(x), 4 * n),
         "max32": (lambda: x.max(), 4 * n),
         "argmax32": (lambda: mod.argmax(x), 4 * n),
         "dot32": (lambda: mod.dot(x, y), 8 * n),
         "sum64": (lambda: mod.sum(x64), 8 * x64.shape[0])}
    if name == "torch":
        sq = x.view(side, side)
        c["ax0"] = (lambda: mod.sum(sq, 0), 4 * side * side)
        c["cumsum32"] = (lambda: mod.cumsum(x, 0), 8 * n)
        c["copy"] = (lambda: out.copy_(x), 8 * n)
    else:
        sq = x.reshape(side, side)
        c["ax0"] = (lambda: mod.sum(sq, axis=0), 4 * side * side)
        c["cumsum32"] = (lambda: mod.cumsum(x), 8 * n)
        c["copy"] = ((lambda: cukit.copy(out, x)) if name == "cukit"
                     else (lambda: out.__setitem__(Ellipsis, x)), 8 * n)
    return c


def timer(name, mod):
    """A function (fn, calls) -> seconds of `calls` calls of fn, by the library's CUDA
    events on its default stream."""
    if name == "cupy":
        event, elapsed = mod.cuda.Event, mod.cuda.get_elapsed_time
    elif name == "torch":
        event = lambda: mod.cuda.Event(enable_timing=True)  # noqa: E731
        elapsed = lambda a, b: a.elapsed_time(b)  # noqa: E731
    else:
        event, elapsed = cukit.Event, (lambda a, b: a.elapsed_time(b))

    def t(fn, calls):
        a, b = event(), event()
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        return elapsed(a, b) / 1e3
    return t


def kernel_facts(spec):
    """Registers (and blocks an SM where it matters) of the build's float32 sum kernels
    (ckr_f: the full reduction, ckcv: axis 0) and 1-D scan tile (cks), compiled apart
    from the kernels cukit runs (the same source and compiler): a short string."""
    try:
        fnt = int(dict(kv.split("=") for kv in spec.split(","))["fnt"])
        red = cukit.compile(core._reduce_source("sum", "float32"))
        f, c = red.get_kernel("ckr_f"), red.get_kernel("ckcv")
        scan = cukit.compile(cukit.ScanKernel(np.float32, "a+b").source).get_kernel("cks")
        return (f"ckr_f {f.attributes['num_regs']} regs {f.max_active_blocks(fnt)} blk/SM; "
                f"ckcv {c.attributes['num_regs']} regs; cks {scan.attributes['num_regs']} regs "
                f"{scan.max_active_blocks(256)} blk/SM")
    except Exception as e:  # noqa: BLE001 - a fact not known is no reason to stop
        return f"(no kernel facts: {type(e).__name__}: {e})"


# ------------------------------------------------------------------ checks


def check(hosts, devs, refs, rng, quick):
    """Problems of the build in use against numpy: a list of strings (empty: right).
    Integers in floats: every sum is exact in any order, so results match bit for bit."""
    bad = []
    xi, xi64, yi = devs["xi"], devs["xi64"], devs["yi"]
    side = refs["side"]
    got = {
        "sum32": float(cukit.sum(xi).get()), "sum64": float(cukit.sum(xi64).get()),
        "max32": float(cukit.max(devs["x"]).get()), "argmax32": int(cukit.argmax(devs["x"]).get()),
        "argmax ties": int(cukit.argmax(xi).get()), "dot32": float(cukit.dot(xi, yi).get()),
    }
    for k, v in got.items():
        if v != refs[k]:
            bad.append(f"{k}: {v} != {refs[k]}")
    if not np.array_equal(cukit.sum(xi.reshape(side, side), axis=0).get(), refs["ax0"]):
        bad.append("sum axis 0")
    if not np.array_equal(cukit.cumsum(xi).get(), refs["cumsum32"]):
        bad.append("cumsum")
    # odd sizes, unaligned views (offset 1), empty and 1-element arrays, both widths
    for n in (0, 1, 3, 4097, 100003 if not quick else 20003):
        for dt in (np.float32, np.float64):
            h = rng.integers(-9, 10, n + 1).astype(dt)
            d = cukit.to_device(h)[1:]
            v = h[1:]
            if cukit.sum(d).get() != v.sum(dtype=np.float64):
                bad.append(f"sum {dt.__name__} n={n}")
            if not np.array_equal(cukit.cumsum(d).get(), np.cumsum(v)):
                bad.append(f"cumsum {dt.__name__} n={n}")
            if n and dt is np.float32:  # (float64's max, argmax and dot are not timed: the
                # tests check them; fewer compiles a build here)
                if cukit.max(d).get() != v.max() or cukit.argmax(d).get() != v.argmax():
                    bad.append(f"max/argmax {dt.__name__} n={n}")
                w = cukit.to_device(h[::-1].copy())[1:]
                if cukit.dot(d, w).get() != np.dot(v.astype(np.float64), h[::-1][1:]):
                    bad.append(f"dot {dt.__name__} n={n}")
    return bad


# ------------------------------------------------------------------ main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=64 << 20, help="float32 elements (64M)")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--variants", default=None, help='"name:spec;name:spec" (a bare spec '
                    'is named v0, v1, ...); default: the built-in list')
    ap.add_argument("--json", default=None)
    ap.add_argument("--quick", action="store_true", help="64K elements, one sample, no peers: "
                    "a check that it runs (the emulator), not a measurement")
    args = ap.parse_args()
    if args.quick:
        args.n, args.reps, args.calls = 1 << 16, 1, 1
    side = int(round(args.n ** 0.5))
    if side * side != args.n:
        sys.exit("--n must be a square (the axis-0 case is a side x side view of it)")
    variants = parse_variants(args.variants) if args.variants else VARIANTS
    sizes = {"n": size_label(args.n), "h": size_label(args.n // 2), "side": side}
    labels = {case: label.format(**sizes) for case, (label, _) in CASES.items()}
    t_start = time.perf_counter()
    peers = {}
    if not args.quick:
        try:
            import cupy
            peers["cupy"] = cupy
        except Exception:  # noqa: BLE001 - a peer that does not import is left out
            print("CuPy does not import: left out")
        try:
            import torch
            if torch.cuda.is_available():
                peers["torch"] = torch
        except Exception:  # noqa: BLE001
            print("PyTorch does not import: left out")

    rng = np.random.default_rng(23)
    n = args.n
    host = {"x": rng.standard_normal(n).astype(np.float32)}
    host["y"] = host["x"][::-1].copy()
    host["x64"] = host["x"][: n // 2].astype(np.float64)
    host["out"] = np.empty(n, np.float32)
    xi = rng.integers(-8, 9, n).astype(np.float32)
    yi = rng.integers(-8, 9, n).astype(np.float32)
    refs = {"side": side, "sum32": float(xi.astype(np.int64).sum()),
            "sum64": float(xi[: n // 2].astype(np.int64).sum()),
            "max32": float(host["x"].max()), "argmax32": int(host["x"].argmax()),
            "argmax ties": int(xi.argmax()),
            "dot32": float(np.dot(xi.astype(np.int64), yi.astype(np.int64))),
            "ax0": xi.reshape(side, side).astype(np.int64).sum(axis=0).astype(np.float32),
            "cumsum32": np.cumsum(xi.astype(np.int64)).astype(np.float32)}
    devs = {k: cukit.to_device(v) for k, v in host.items()}
    devs.update(xi=cukit.to_device(xi), yi=cukit.to_device(yi),
                xi64=cukit.to_device(xi[: n // 2].astype(np.float64)))
    del xi, yi
    libs = {"cukit": cukit}
    arrs = {"cukit": devs}
    for p, mod in peers.items():
        libs[p] = mod
        arrs[p] = ({k: mod.asarray(v) for k, v in host.items()} if p == "cupy"
                   else {k: mod.from_numpy(v).cuda() for k, v in host.items()})
    calls = {p: calls_of(p, libs[p], arrs[p], side) for p in libs}
    timers = {p: timer(p, libs[p]) for p in libs}
    print(f"data and numpy references: {time.perf_counter() - t_start:.1f} s", flush=True)

    # compile and check each build
    specs, problems, setup_s, facts = {}, {}, {}, {}
    for name, spec in variants:
        t = time.perf_counter()
        core._reduce_variant(spec)
        specs[name] = core._reduce_variant()
        try:
            problems[name] = check(host, devs, refs, rng, args.quick)
        except cukit.CompileError:
            raise
        except Exception as e:  # noqa: BLE001 - reported in the table, the others still run
            problems[name] = [f"{type(e).__name__}: {e}"]
        for case, (fn, _) in calls["cukit"].items():  # compile every case's kernels now
            fn()
        cukit.synchronize()
        setup_s[name] = round(time.perf_counter() - t, 2)
        facts[name] = kernel_facts(specs[name])
        print(f"  {name}: {specs[name]}  {setup_s[name]} s\n      {facts[name]}"
              + (f"  PROBLEMS: {problems[name]}" if problems[name] else ""), flush=True)
    print(f"compiled and checked: {time.perf_counter() - t_start:.1f} s", flush=True)

    # ways: (who, case); who is a build's name, or a peer's; the copy once (cukit's)
    ways = [(name, case) for name, _ in variants for case in CASES if case != "copy"]
    ways += [("cukit", "copy")]
    ways += [(p, case) for p in peers for case in CASES]
    samples = {w: [] for w in ways}
    for r in range(args.reps + 1):  # the first round warms every way up, not kept
        for who, case in ways:
            lib = "cukit" if who in specs else who
            if who in specs:
                core._reduce_variant(specs[who])
            fn, nbytes = calls[lib][case]
            secs = timers[lib](fn, args.calls)
            if r:
                samples[(who, case)].append(nbytes * args.calls / secs / 1e9)
    core._reduce_variant("v0")

    # the table: per case, every build and peer; ratios to the best peer and to the copy
    med = {w: statistics.median(s) for w, s in samples.items()}
    copy = med[("cukit", "copy")]
    dev = cukit.Device().name
    vers = ", ".join(f"{p} {getattr(m, '__version__', '?')}" for p, m in peers.items()) or "no peers"
    print(f"\ndevice: {dev}; {vers}; GB/s median (min-max) of {args.reps} samples of "
          f"{args.calls} calls (CUDA events); peer = best peer's median; copy = cukit's "
          f"copy ({copy:.0f} GB/s)")
    summary = {}
    for case, (_, fam) in CASES.items():
        label = labels[case]
        peer = max((med[(p, case)] for p in peers), default=None)
        print(f"\n{label}" + (f"  [best peer {peer:.0f}]" if peer else ""))
        whos = ([name for name, _ in variants] if case != "copy" else ["cukit"]) + list(peers)
        for who in whos:
            s = samples[(who, case)]
            m = med[(who, case)]
            knobs = f"  {family_spec(specs[who], fam)}" if who in specs and fam else ""
            print(f"  {who:8s} {m:8.1f} ({min(s):.1f}-{max(s):.1f})"
                  + (f"  {m / peer:5.3f} of peer" if peer else "")
                  + f"  {m / copy:5.3f} of copy" + knobs)
        if case != "copy":
            ok = [nm for nm, _ in variants if not problems[nm]]
            best = max(ok, key=lambda nm: med[(nm, case)], default=None)
            if best:
                summary[case] = {"best": best, "gbps": round(med[(best, case)], 1),
                                 "of_peer": round(med[(best, case)] / peer, 4) if peer else None,
                                 "of_copy": round(med[(best, case)] / copy, 4),
                                 "knobs": family_spec(specs[best], fam)}
    print("\nbest build a case:")
    for case, s in summary.items():
        print(f"  {labels[case]:45s} {s['best']:4s} {s['gbps']:8.1f}"
              + (f"  {s['of_peer']:5.3f} of peer" if s["of_peer"] else "")
              + f"  {s['of_copy']:5.3f} of copy  {s['knobs']}")
    bad = {k: v for k, v in problems.items() if v}
    for name, p in bad.items():
        print(f"WRONG: {name}: {'; '.join(p)}")
    print(f"total {time.perf_counter() - t_start:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "device": dev, "n": n, "calls": args.calls, "reps": args.reps,
            "versions": {p: getattr(m, "__version__", "?") for p, m in peers.items()},
            "specs": specs, "problems": problems, "setup_s": setup_s, "facts": facts, "summary": summary,
            "median": {f"{w}|{c}": v for (w, c), v in med.items()},
            "samples": {f"{w}|{c}": s for (w, c), s in samples.items()}}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
