"""Measure the emulator's approximate PTX instructions against a GPU's, bit for bit.

For each approximate float32 instruction (ex2.approx, lg2.approx, sin.approx, cos.approx,
rcp.approx, rsqrt.approx, tanh.approx, sqrt.approx, with and without .ftz) this runs every
float32 input (or every k-th with --step k) through the instruction on the GPU and on
cukit's emulator, and reports how many results differ, by how many units in the last
place, how far each side is from the exact value (float64, on a sample), and the first
differing inputs (saved for finding the hardware's method). One command on a machine with
a GPU; the emulator side runs on that machine's CPU cores at the same time:

    python tools/measure_approx.py                       # all instructions, every input
    python tools/measure_approx.py --step 3              # every 3rd input: about 3x faster
    python tools/measure_approx.py sin.approx.f32 --out sin.json

Writes OUT (JSON, default approx.json), OUT.md (the table for the docs: one row per
instruction, written after each so an interrupted run keeps what it measured) and
OUT.<instruction>.npz (input, GPU and emulator bits of the first differing inputs). A run
that stops (a time limit) goes on where it stopped when given the same command again.
--against emulator runs both sides on the emulator (no GPU: checks the tool itself).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

INSTRUCTIONS = [
    "ex2.approx.f32", "ex2.approx.ftz.f32", "lg2.approx.f32", "lg2.approx.ftz.f32",
    "sin.approx.f32", "sin.approx.ftz.f32", "cos.approx.f32", "cos.approx.ftz.f32",
    "rcp.approx.f32", "rcp.approx.ftz.f32", "rsqrt.approx.f32", "rsqrt.approx.ftz.f32",
    "tanh.approx.f32", "sqrt.approx.f32", "sqrt.approx.ftz.f32",
]

# the exact function each approximates, in float64 (for the error columns)
EXACT = {"ex2": np.exp2, "lg2": np.log2, "sin": np.sin, "cos": np.cos,
         "rcp": lambda x: 1.0 / x, "rsqrt": lambda x: 1.0 / np.sqrt(x), "tanh": np.tanh,
         "sqrt": np.sqrt}

# measured by absolute error, as the PTX ISA states their accuracy (their results pass
# through zero, where a relative error means nothing)
ABSOLUTE = ("sin", "cos", "lg2")

CHUNK = 1 << 26  # inputs per launch: 256 MiB of results on each side
SAMPLE = 61      # every SAMPLE-th result of a chunk is compared with the exact value


def kernel_source(instr):
    return r"""
extern "C" __global__ void k(float* out, unsigned long long first, unsigned long long step,
                             unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = __uint_as_float((unsigned)(first + (unsigned long long)i * step)), r;
    asm volatile("%s %%0, %%1;" : "=f"(r) : "f"(x));
    out[i] = r;
}
""" % instr


def worker():
    """A process of one backend (from the environment): reads 'instr first step n path'
    lines, writes the n results' bits to path, answers 'ok' (or 'error: ...')."""
    import cukit

    modules, out = {}, None
    for line in sys.stdin:
        instr, first, step, n, path = line.split()
        first, step, n = int(first), int(step), int(n)
        try:
            if instr not in modules:
                modules[instr] = cukit.compile(kernel_source(instr))
            if out is None or out.size < n:
                out = cukit.empty(n, np.float32)
            modules[instr].k(out, np.uint64(first), np.uint64(step), np.uint32(n),
                             grid=(n + 255) // 256, block=256)
            out.get()[:n].view(np.uint32).tofile(path)
            print("ok", flush=True)
        except Exception as e:  # the parent reports it and stops
            print(f"error: {type(e).__name__}: {e}".replace("\n", " "), flush=True)


class Side:
    """A worker process for one backend."""

    def __init__(self, backend):
        self.backend = backend
        env = dict(os.environ, CUKIT_BACKEND=backend)
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker"], env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def ask(self, instr, first, step, n, path):
        self.proc.stdin.write(f"{instr} {first} {step} {n} {path}\n")
        self.proc.stdin.flush()

    def answer(self):
        line = self.proc.stdout.readline().strip()
        if line != "ok":
            sys.exit(f"{self.backend} failed: {line or 'the worker ended'}")

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def ordered(bits):
    """float32 bits as integers in the order of their values (for ulp distances)."""
    b = bits.astype(np.int64)
    return np.where(b & 0x80000000, 0x80000000 - b, b)


def exact_errors(instr, inputs, gpu, emu):
    """The largest error of each side against the exact function (float64; ABSOLUTE's
    absolute, the others' relative), over
    finite inputs whose exact result is a finite, normal float32; sin and cos only for
    |x| <= 100 pi (beyond, the hardware's single-precision reduction is the answer). The
    .ftz forms take a subnormal input as zero."""
    with np.errstate(all="ignore"):  # signaling NaNs among the inputs
        x = inputs.view(np.float32).astype(np.float64)
        if ".ftz" in instr:
            x = np.where(np.abs(x) < np.finfo(np.float32).tiny, 0.0, x)
        ref = EXACT[instr.split(".")[0]](x)
        ok = np.isfinite(x) & np.isfinite(ref) & (np.abs(ref) >= np.finfo(np.float32).tiny) & \
            (np.abs(ref) <= np.finfo(np.float32).max)
        if instr.startswith(("sin", "cos")):
            ok &= np.abs(x) <= 100 * np.pi
        errs = []
        for bits in (gpu, emu):
            with np.errstate(all="ignore"):
                y = bits.view(np.float32).astype(np.float64)
            rel = np.abs(y[ok] - ref[ok])
            if instr.split(".")[0] not in ABSOLUTE:
                rel /= np.abs(ref[ok])
            errs.append(float(np.nanmax(rel)) if rel.size else 0.0)
    return errs


BUCKETS = [("1", 1, 1), ("2", 2, 2), ("3-4", 3, 4), ("5-16", 5, 16), ("17-256", 17, 256),
           (">256", 257, 1 << 40)]


def measure(instr, step, keep, sides, folder):
    total = ((1 << 32) + step - 1) // step
    report = {"inputs": 0, "differ": 0, "nan_mismatch": 0, "max_ulp": 0,
              "ulp_histogram": {name: 0 for name, _, _ in BUCKETS},
              "gpu_max_error": 0.0, "emulator_max_error": 0.0}
    first_diffs = []
    t0 = time.monotonic()
    paths = [os.path.join(folder, f"{i}.bin") for i in range(2)]
    for start in range(0, total, CHUNK):
        n = min(CHUNK, total - start)
        first = start * step
        for side, path in zip(sides, paths):  # both run at once
            side.ask(instr, first, step, n, path)
        for side in sides:
            side.answer()
        gpu, emu = (np.fromfile(p, dtype=np.uint32) for p in paths)
        gnan = (gpu & 0x7fffffff) > 0x7f800000
        enan = (emu & 0x7fffffff) > 0x7f800000
        diff = gpu != emu  # bit for bit: a NaN's payload and sign count too
        report["inputs"] += n
        report["differ"] += int(diff.sum())
        report["nan_mismatch"] += int((gnan != enan).sum())
        where = np.nonzero(diff & ~gnan & ~enan)[0]
        ulp = np.abs(ordered(gpu[where]) - ordered(emu[where]))
        if ulp.size:
            report["max_ulp"] = max(report["max_ulp"], int(ulp.max()))
            for name, lo, hi in BUCKETS:
                report["ulp_histogram"][name] += int(((ulp >= lo) & (ulp <= hi)).sum())
        idx = np.nonzero(diff)[0][:max(0, keep - len(first_diffs))]
        inputs = (idx.astype(np.uint64) * step + first).astype(np.uint32)
        first_diffs += list(zip(inputs.tolist(), gpu[idx].tolist(), emu[idx].tolist()))
        s = np.arange(0, n, SAMPLE)
        sample_inputs = (s.astype(np.uint64) * step + first).astype(np.uint32)
        g_err, e_err = exact_errors(instr, sample_inputs, gpu[s], emu[s])
        report["gpu_max_error"] = max(report["gpu_max_error"], g_err)
        report["emulator_max_error"] = max(report["emulator_max_error"], e_err)
    report["seconds"] = round(time.monotonic() - t0, 1)
    return report, np.array(first_diffs, dtype=np.uint32).reshape(-1, 3)


def log2_text(err):
    return "exact" if err == 0 else f"2^{np.log2(err):.1f}"


def table(reports, against, step):
    """The Markdown table of the reports: one row per instruction."""
    other = "GPU" if against == "gpu" else "the other emulator"
    lines = [f"Every {'' if step == 1 else f'{step}th '}float32 input; {other} against the "
             "emulator. Errors against the exact value, on 1 in "
             f"{SAMPLE} of those inputs: absolute for {', '.join(ABSOLUTE)} (sin and cos for "
             "|x| <= 100 pi), relative for the others.", "",
             f"| instruction | inputs | identical | differ | max ulp apart | NaN mismatches | "
             f"{other} max error | emulator max error |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for instr, r in reports.items():
        same = r["inputs"] - r["differ"]
        lines.append(f"| `{instr}` | {r['inputs']:,} | {100 * same / r['inputs']:.4f}% | "
                     f"{r['differ']:,} | {r['max_ulp']} | {r['nan_mismatch']} | "
                     f"{log2_text(r['gpu_max_error'])} | {log2_text(r['emulator_max_error'])} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(
        prog="measure_approx.py", description=__doc__.split("\n\n")[0],
        epilog="Needs a GPU (and cukit's build with NVRTC there) unless --against emulator. "
               "Every input of all 15 instructions: 2^32 x 15 results on each side, in "
               "chunks of 2^26; the emulator uses every CPU core.")
    ap.add_argument("instructions", nargs="*", default=INSTRUCTIONS,
                    help="PTX instructions to measure (default: all of %(default)s)")
    ap.add_argument("--step", type=int, default=1,
                    help="measure every STEP-th float32 bit pattern (default 1: all 2^32)")
    ap.add_argument("--keep", type=int, default=100000,
                    help="differing inputs saved per instruction (default %(default)s)")
    ap.add_argument("--out", default="approx.json", help="the report (JSON, default "
                    "%(default)s); the table goes to OUT.md, differing inputs to "
                    "OUT.<instruction>.npz")
    ap.add_argument("--against", default="gpu", choices=["gpu", "emulator"],
                    help="the backend the emulator is compared with (default %(default)s)")
    ap.add_argument("--fresh", action="store_true",
                    help="measure again what OUT holds already (by default a run with the same "
                         "--step and --against goes on where the last one stopped)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker()
    if args.step < 1:
        ap.error("--step must be 1 or more")
    for instr in args.instructions:
        if instr.split(".")[0] not in EXACT:
            ap.error(f"{instr}: not one of {', '.join(INSTRUCTIONS)}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    sides = [Side(args.against), Side("emulator")]
    reports, settings = {}, {"step": args.step, "against": args.against}
    if os.path.exists(args.out) and not args.fresh:  # go on where a run stopped
        with open(args.out) as f:
            saved = json.load(f)
        if saved.get("settings") == settings:
            reports = saved["instructions"]
            print(f"{args.out}: {len(reports)} instructions measured already (--fresh to redo)")
    # the results pass through files: in memory (/dev/shm) where there is one
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    try:
        with tempfile.TemporaryDirectory(prefix="approx-", dir=shm) as folder:
            for instr in args.instructions:
                if instr in reports:
                    continue
                report, diffs = measure(instr, args.step, args.keep, sides, folder)
                reports[instr] = report
                np.savez_compressed(f"{args.out}.{instr}.npz", diffs=diffs)
                print(f"{instr:22s} {report['inputs']:>13,} inputs {report['differ']:>13,} differ"
                      f"  max {report['max_ulp']} ulp  NaN mismatches {report['nan_mismatch']}"
                      f"  {report['ulp_histogram']}  ({report['seconds']} s)", flush=True)
                with open(args.out, "w") as f:
                    json.dump({"settings": settings, "instructions": reports}, f, indent=1)
                with open(args.out + ".md", "w") as f:
                    f.write(table(reports, args.against, args.step))
    finally:
        for side in sides:
            side.close()
    print(f"\n{table(reports, args.against, args.step)}")


if __name__ == "__main__":
    main()
