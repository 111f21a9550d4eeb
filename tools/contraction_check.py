"""contraction_check.py - the emulator's fused mul+add pairs against ptxas's, kernel by kernel.

What it does
    PTX's mul, add and sub without a rounding modifier may be contracted into fma by
    ptxas, which changes the results' last bits; the emulator contracts the pairs it
    believes ptxas does (csrc/emulator/ptx/arith.c, ptx_contract). This tool checks that
    belief on the kernels of the differential corpus (tests/differential.py run: the
    handwritten kernels and those cukit generates), on a machine with the CUDA toolkit:

    1. runs the corpus on the emulator with a fresh kernel cache, so every kernel's PTX
       is in the cache folder (the emulator asks NVRTC for PTX);
    2. for each PTX module, assembles it with ptxas twice, as is and with --fmad=false,
       and counts FFMA and DFMA in `cuobjdump -sass` of each kernel: the difference is
       the pairs ptxas contracted;
    3. asks the emulator how many pairs it fuses in each kernel
       (cukit._cukit._emulator_contractions);
    4. prints one line per kernel whose counts differ, and a summary line.

    Counts are static (instructions in the code, not executed): ptxas may unroll or
    duplicate code, so a difference is a kernel to look at, not a proof of a wrong
    result. Exits 0 when every kernel's counts agree, 1 when some differ, 2 when a
    tool is missing.

Usage
    PYTHONPATH=src python tools/contraction_check.py [--arch sm_90] [--keep FOLDER]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def tool(name):
    """The CUDA toolkit's program `name`, or None."""
    found = shutil.which(name)
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.path.exists(os.path.join(home, "bin", name)):
            return os.path.join(home, "bin", name)
    return None


def ptx_of(entry):
    """The PTX text a kernel-cache entry holds, or None (an entry of machine code)."""
    with open(entry, "rb") as f:
        data = f.read()
    at = min((i for i in (data.find(b"//\n// Generated"), data.find(b".version")) if i >= 0),
             default=-1)
    if at < 0:
        return None
    end = data.find(b"\0", at)
    return data[at:end if end >= 0 else len(data)]


def sass_fmas(ptxas, cuobjdump, ptx, arch, fmad, folder):
    """{kernel: FFMA + DFMA count} of the PTX assembled by ptxas."""
    src, cubin = os.path.join(folder, "m.ptx"), os.path.join(folder, "m.cubin")
    with open(src, "wb") as f:
        f.write(ptx)
    subprocess.run([ptxas, f"-arch={arch}", f"--fmad={'true' if fmad else 'false'}", src, "-o",
                    cubin], check=True, capture_output=True)
    out = subprocess.run([cuobjdump, "-sass", cubin], check=True, capture_output=True,
                         text=True).stdout
    counts, name = {}, None
    for line in out.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = m.group(1)
            counts[name] = 0
        elif name and re.search(r"\b[DF]FMA(\.\S+)?\s", line):
            counts[name] += 1
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="sm_90", help="the GPU ptxas assembles for")
    parser.add_argument("--keep", help="a folder for the kernel cache and the PTX (kept)")
    args = parser.parse_args(argv)
    ptxas, cuobjdump = tool("ptxas"), tool("cuobjdump")
    if not ptxas or not cuobjdump:
        print("contraction_check: needs ptxas and cuobjdump (the CUDA toolkit) on PATH or in "
              "CUDA_HOME/bin")
        return 2
    folder = args.keep or tempfile.mkdtemp(prefix="cukit-contraction-")
    cache = os.path.join(folder, "cache")
    os.makedirs(cache, exist_ok=True)
    env = dict(os.environ, CUKIT_BACKEND="emulator", CUKIT_CACHE_DIR=cache)
    env["PYTHONPATH"] = os.path.join(ROOT, "src") + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "differential.py"), "run",
                          os.path.join(folder, "emu.npz")], env=env, capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout + run.stderr)
        return 1
    sys.path.insert(0, os.path.join(ROOT, "src"))
    from cukit import _cukit

    kernels = differ = ptx_pairs = emu_pairs = 0
    for entry in sorted(os.listdir(cache)):
        ptx = ptx_of(os.path.join(cache, entry))
        if ptx is None:
            continue
        try:
            fused = _cukit._emulator_contractions(ptx)
        except ValueError as e:
            print(f"{entry}: {e}")
            differ += 1
            continue
        on = sass_fmas(ptxas, cuobjdump, ptx, args.arch, True, folder)
        off = sass_fmas(ptxas, cuobjdump, ptx, args.arch, False, folder)
        for name in sorted(on):
            kernels += 1
            theirs, ours = on[name] - off.get(name, 0), fused.get(name, 0)
            ptx_pairs += theirs
            emu_pairs += ours
            if theirs != ours:
                differ += 1
                print(f"{name} ({entry[:12]}): ptxas contracts {theirs}, the emulator {ours}")
    print(f"{kernels} kernels: ptxas contracts {ptx_pairs} pairs, the emulator {emu_pairs}; "
          f"{differ} kernels differ")
    if args.keep is None:
        shutil.rmtree(folder, ignore_errors=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
