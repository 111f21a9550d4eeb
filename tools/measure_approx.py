"""Measure the emulator's approximate PTX instructions against a GPU's, bit for bit.

For each approximate float32 instruction (ex2.approx, lg2.approx, sin.approx, cos.approx,
rcp.approx, rsqrt.approx, tanh.approx, with and without .ftz) this runs every float32
input (or every k-th with --step k) through the instruction on the GPU and on cukit's
emulator, and reports how many results differ, by how many units in the last place,
and the first differing inputs (saved to an .npz for finding the hardware's method).
Needs a machine with a GPU: the GPU side runs with CUKIT_BACKEND=gpu, the emulator
side in another process with CUKIT_BACKEND=emulator (the emulator uses every core).

    python tools/measure_approx.py                    # all instructions, every input
    python tools/measure_approx.py --step 257 sin.approx.f32 --out approx.json
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

CHUNK = 1 << 26  # inputs per launch: 256 MiB of results


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


def child(instr, first, step, n, path):
    """In a fresh process (its backend from the environment): write the n results."""
    import cukit

    mod = cukit.compile(kernel_source(instr))
    out = cukit.empty(n, np.float32)
    mod.k(out, np.uint64(first), np.uint64(step), np.uint32(n), grid=(n + 255) // 256, block=256)
    np.save(path, out.get().view(np.uint32))


def results(backend, instr, first, step, n, folder):
    path = os.path.join(folder, f"{backend}.npy")
    env = dict(os.environ, CUKIT_BACKEND=backend)
    r = subprocess.run([sys.executable, __file__, "--child", instr, str(first), str(step), str(n),
                        path], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{backend} failed on {instr}:\n{r.stderr}")
    return np.load(path)


def ordered(bits):
    """float32 bits as integers in the order of their values (for ulp distances)."""
    b = bits.astype(np.int64)
    return np.where(b & 0x80000000, 0x80000000 - b, b)


def measure(instr, step, keep):
    total = (1 << 32) // step
    report = {"inputs": 0, "differ": 0, "nan_mismatch": 0, "max_ulp": 0,
              "ulp_histogram": {"1": 0, "2": 0, "3-4": 0, "5-16": 0, "17-256": 0, ">256": 0}}
    first_diffs = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="approx-") as folder:
        for start in range(0, total, CHUNK):
            n = min(CHUNK, total - start)
            first = start * step
            gpu = results("gpu", instr, first, step, n, folder)
            emu = results("emulator", instr, first, step, n, folder)
            inputs = (np.arange(n, dtype=np.uint64) * step + first).astype(np.uint32)
            gnan = (gpu & 0x7fffffff) > 0x7f800000
            enan = (emu & 0x7fffffff) > 0x7f800000
            diff = gpu != emu
            report["inputs"] += n
            report["differ"] += int(diff.sum())
            report["nan_mismatch"] += int((gnan != enan).sum())
            both = diff & ~gnan & ~enan
            ulp = np.abs(ordered(gpu[both]) - ordered(emu[both]))
            if ulp.size:
                report["max_ulp"] = max(report["max_ulp"], int(ulp.max()))
                for name, lo, hi in [("1", 1, 1), ("2", 2, 2), ("3-4", 3, 4), ("5-16", 5, 16),
                                     ("17-256", 17, 256), (">256", 257, 1 << 40)]:
                    report["ulp_histogram"][name] += int(((ulp >= lo) & (ulp <= hi)).sum())
            where = np.nonzero(diff)[0][:max(0, keep - len(first_diffs))]
            first_diffs += list(zip(inputs[where].tolist(), gpu[where].tolist(), emu[where].tolist()))
    report["seconds"] = round(time.monotonic() - t0, 1)
    return report, np.array(first_diffs, dtype=np.uint32).reshape(-1, 3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("instructions", nargs="*", default=INSTRUCTIONS,
                    help="PTX instructions to measure (default: all of %(default)s)")
    ap.add_argument("--step", type=int, default=1,
                    help="measure every STEP-th float32 bit pattern (default 1: all 2^32)")
    ap.add_argument("--keep", type=int, default=100000,
                    help="differing inputs saved per instruction (default %(default)s)")
    ap.add_argument("--out", default="approx.json", help="the report (JSON); the differing "
                    "inputs go beside it as <out>.<instruction>.npz (input, gpu, emulator bits)")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        instr, first, step, n, path = args.child
        return child(instr, int(first), int(step), int(n), path)
    reports = {}
    for instr in args.instructions:
        report, diffs = measure(instr, args.step, args.keep)
        reports[instr] = report
        np.savez_compressed(f"{args.out}.{instr}.npz", diffs=diffs)
        print(f"{instr:24s} {report['inputs']:>11,} inputs  {report['differ']:>11,} differ  "
              f"max {report['max_ulp']} ulp  NaN mismatches {report['nan_mismatch']}  "
              f"{report['ulp_histogram']}", flush=True)
        with open(args.out, "w") as f:
            json.dump(reports, f, indent=1)


if __name__ == "__main__":
    main()
