"""Run the benchmarks, each in its own process with a time limit, and keep all their rows
in one JSON; with --table, write docs/performance.md from that run.

Usage
    python benchmarks/run_all.py [--only random,reduce] [--reps N] [--quick]
        [--timeout 900] [--results benchmarks/results]
    python benchmarks/run_all.py --table [--out docs/performance.md] [--keep JSON]
        [--commit REV] [--only ...] [--reps N] [--quick]
    python benchmarks/run_all.py --table --from RESULTS_JSON [--out FILE]

What it writes under --results
    results.json     the run ("meta": GPU, date, driver, CUDA and NVRTC versions, cukit's
                     version and commit, the libraries' versions) and, per benchmark, its
                     status ("ok", "skipped" or "failed"), the reason when not ok, seconds
                     taken, the run that measured it ("run") and its rows (case, way,
                     unit, min, median, max, spread, noisy, ratio, every sample)
    NAME.json        the benchmark's own JSON (every sample, its own keys too)
    NAME.log         what it printed
    NAME.svg         its rows as bars: the median, with a whisker from min to max

How a benchmark hands its rows over: it takes --reps, --quick and --json PATH, and
writes its rows under the JSON key "table" through _bench.write_json (see _bench.py for
a row's keys); it exits with status 77 (_bench.skip) when it cannot run here. A
benchmark that fails or runs past --timeout is recorded as failed; neither stops the
others. With --only, the entries of the other benchmarks in an existing results.json
made on the same GPU are kept.

--table writes the whole page to --out (Markdown: the run, then per benchmark of PAGE
its paragraph and a table of medians) and the page's data beside it (the same name,
.json: the rows without their samples, and for each benchmark the run that measured
it), again after each benchmark, so that a run cut short leaves a page. --keep takes the page's data of an earlier run: a benchmark of the page that this
run did not measure (left out by --only, skipped, failed) keeps its table from there,
and its section names that run. --from writes the page from an earlier results.json or
page data, running nothing.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from xml.sax.saxutils import escape

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _bench import MARK, NOISY, SKIP_STATUS, fmt  # noqa: E402

PAGE_PATH = HERE.parent / "docs" / "performance.md"

# distributions whose versions the run records (those installed), in the page's order
PACKAGES = ("numpy", "cupy", "torch", "cuda-core", "cuda-bindings", "cuda-python", "pycuda",
            "nvidia-nccl-cu12", "nvidia-nccl-cu13", "numba-cuda")

# The page's sections, in order: benchmark name -> (title, what it measures and how to
# run it alone). bench_emulator is not on the page: the emulator's speed is on its own
# guide page.
PAGE = {
    "launch": ("Launches", """
Microseconds per launch of a small kernel (4 blocks of 256 threads) with 0, 5 and 16
arguments: each way is warmed up, then timed over repetitions of many launches ended by
one synchronize, the ways taking turns. The baseline is `benchmarks/launch_baseline.c`,
compiled on the spot: it opens the driver with `dlopen` and calls `cuLaunchKernel` with
its arguments packed once. Beside cukit's `k(...)` and `k.prepare(...)`: other
libraries' arrays as pointer arguments, CUDA graph replays, a launch and its wait,
launches under `cukit.debug.capture`, and the peers that are installed (cuda.core,
cuda.bindings, CuPy, ctypes, PyCUDA). Ratio: the median over raw C's (> 1: slower than
C). Alone: `python benchmarks/bench_launch.py`.
"""),
    "compile": ("Compiling", """
Milliseconds from source text to a kernel ready to launch (a saxpy): a cold compile (a
fresh process, an empty cache folder), a disk hit (a fresh process whose cache folder
holds the kernel) and a memory hit (the same call again in one process, in µs). cukit
is timed compiling in its NVRTC worker process, as it does, and in-process
(`CUKIT_COMPILE_IN_PROCESS=1`), against CuPy's `RawModule` and cuda.core's `Program`
(which keeps no cache). A fresh process imports its library and makes its context
before the timed call. A disk hit loads the cubin without loading NVRTC. Alone:
`python benchmarks/bench_compile.py`.
"""),
    "coldstart": ("Cold start", """
Seconds from `import` to each of a fresh process's first five results (`a + b`,
`a.sum()`, a sort, a normal draw and a 256 × 256 float32 matmul, each waited for, on 1M
float32 elements): the first process with an empty kernel cache (every kernel compiled;
each library's cache pointed at an empty folder) and a second one on the cache the
first filled. Their difference is what compiling costs; cukit also reports the cache
entries its first process made. Against CuPy and PyTorch (which compiles nothing for
these). Lower is better. Alone: `python benchmarks/bench_coldstart.py`.
"""),
    "copy": ("Copies", """
GB/s of synchronous copies of 1 MiB, 64 MiB and 1 GiB to the device (HtoD) and back
(DtoH), from pageable numpy memory and from pinned memory, each sample ended by a device
synchronize (the driver's copy from pageable memory returns before its last transfer).
The baseline is the driver's `cuMemcpyHtoD` / `cuMemcpyDtoH` called from
`benchmarks/copy_baseline.c`, compiled on the spot and run before and after the others.
cukit copies large pageable arrays through a pipeline of pinned staging buffers and
threads; pinned memory and small copies are the driver's own call. Ratio: the median
over raw C's on the same memory. Alone: `python benchmarks/bench_copy.py` (`--tune`
sweeps the pipeline's chunk size and threads first).
"""),
    "array": ("Array math", """
Microseconds of host time per call on 1-element float32 arrays (`add(a, b, out=c)`,
`a + b`, an `ElementwiseKernel` saxpy, `empty` and its free, and the same with cukit's
caches off), and GB/s of bytes read plus written on 64M-element arrays: `add` in three
dtypes, a transposed add, `exp` per dtype, a three-operation expression fused into one
kernel against three kernels, and a device-to-device copy (the ceiling). Ratio: cukit
against the best peer (> 1: cukit ahead). Alone: `python benchmarks/bench_array.py`.
"""),
    "reduce": ("Reductions and scans", """
GB/s of bytes read (reductions) or read plus written (cumsum and the copy), 64M float32
unless said: `sum`, `max`, `argmax`, `dot`, a float64 `sum`, sums along each axis of an
8192 × 8192 matrix, `cumsum`, a `ReductionKernel` L2 norm, and a device-to-device copy
(the ceiling); and microseconds of host time per `sum` of a 1-element array, beside an
`add`'s. Ratio: cukit against the best peer (> 1: cukit ahead). Alone:
`python benchmarks/bench_reduce.py`.
"""),
    "random": ("Random numbers", """
GB/s written, filling a preallocated array of 64M float32 (and as many bytes of float64
and int32), timed with events around back-to-back draws: cukit's `default_rng`
(Philox4x32; Box–Muller normals, Lemire's multiply-shift integers), cukit's `Philox`
(numpy's stream, bit for bit), CuPy's `default_rng` and legacy `RandomState`, and
PyTorch's `uniform_`, `normal_` and `random_`. The first row is a memset of the same
bytes, the write ceiling. Ratio: the median over the memset's. Alone:
`python benchmarks/bench_random.py`.
"""),
    "sort": ("Sorting", """
Keys sorted per second (G keys/s) of 2^26 float32 and int32 keys, `sort` and `argsort`
(stable in every library), against CuPy (CUB's radix sort) and PyTorch. Ratio: cukit
against the best peer (> 1: cukit ahead). Alone: `python benchmarks/bench_sort.py`.
"""),
    "strided": ("Strided copies", """
GB/s copying float32 views laid out in different ways (every other row, every other
element, reversed rows, a transpose, rows of a 4-D view) device to device, host to
device and device to host, beside one contiguous copy of the same bytes (the ceiling)
and the same copy in PyTorch and CuPy. Ratio: cukit against the best peer (> 1: cukit
ahead). Alone: `python benchmarks/bench_strided.py`.
"""),
    "indexing": ("Advanced indexing", """
GB/s of the bytes an operation must move: a gather `a[idx]` and a scatter `a[idx] = v`
of 64M float32 through random int64 indices, a mask read `a[m]` and a masked fill
`a[m] = 0`, `take_along_axis` of an 8192 × 8192 float32 along axis 1, and `nonzero` of
a 64M-element bool mask; and microseconds of host time of `a[idx]` on one element,
beside `a + b`. Ratio: cukit against the best peer (> 1: cukit ahead). Alone:
`python benchmarks/bench_indexing.py`.
"""),
    "matmul": ("Matrix products", """
TFLOPS (2n³ a product) of `a @ b` of n × n matrices: float32 (TF32 off), float32 with
TF32 on, float16 and bfloat16, cuBLAS underneath, and cukit's own GEMM on the rows so
named; and microseconds of host time per product of 16 × 16 matrices. Ratio: cukit
against the best peer (> 1: cukit ahead). Alone: `python benchmarks/bench_matmul.py`.
"""),
    "fft": ("FFT", """
GB/s of input plus output per transform, with a warm plan: 1-D complex64 of 2^24, a
batch of 4096 transforms of 4096, 2-D 4096 × 4096, real-to-complex of 2^24 float32,
3-D 256³ and an odd length (3^15); cuFFT underneath for every library, and cukit's own
kernels (what runs where cuFFT is missing) on the rows so named; and microseconds of
host time of a one-element `fft`. Ratio: cukit against the best peer (> 1: cukit
ahead). Alone: `python benchmarks/bench_fft.py`.
"""),
    "linalg": ("Linear algebra", """
Milliseconds a call (lower is better) of `solve`, `inv`, `cholesky`, `qr`, `eigh` and
`svd` on large matrices, on batches of small ones and on 256 × 256, cuSOLVER underneath
for every library, and cukit's own kernels on the rows so named. Ratio: the best peer's
time over cukit's (> 1: cukit ahead). Alone: `python benchmarks/bench_linalg.py`.
"""),
    "pycuda": ("The PyCUDA layer", """
Microseconds per call of PyCUDA-style code on `cukit.pycuda`, against cukit's own call
doing the same (and PyCUDA itself where it is installed): `Function.__call__` and
`prepared_call` with 5 arguments, `gpuarray.to_gpu` and `GPUArray.get` of 4 KiB,
`a + b` and `2 * a + b` on 1-element arrays, an `ElementwiseKernel` call; and the first
`SourceModule(...).get_function` of a fresh process, cold and cached (ms). Ratio: the
layer's median over cukit's own (> 1: slower). Alone: `python benchmarks/bench_pycuda.py`.
"""),
    "nccl": ("Many GPUs", """
Needs two GPUs. All-reduce (sum, float32, in place) bus bandwidth in GB/s (algorithm
bandwidth × 2(n-1)/n) of 16 MiB, 256 MiB and 1 GiB; the microseconds of a 4-byte
all-reduce and its wait: eager, on a `cukit.Stream`, replayed in a CUDA graph, and per
collective with 100 in one graph, on plain and on symmetric memory, with cukit's
one-shot kernel and with NCCL's (the rows so named); the floor under the graph rows (a
graph of one empty kernel replayed and waited for); and a 256 MiB copy between the two
GPUs. Against torch.distributed and a raw `ncclAllReduce` through ctypes, with NVLink
multicast off (`NCCL_NVLS_ENABLE=0`). Ratio: cukit against torch (> 1: cukit ahead).
Alone: `python benchmarks/bench_nccl.py --gpus 2`.
"""),
}

INTRO = """\
# Performance

This page is written by `python benchmarks/run_all.py --table`: one run of the
benchmarks in `benchmarks/`, each in its own process, described in the first table.
Every figure is the median of a benchmark's samples, taken after each way was warmed up
(kernels compiled, memory pools filled, the GPU's clocks up), the libraries taking turns
within each round of samples. {mark} marks a figure whose max / min was over {noisy:.0%}:
a noisy one. The ratio in brackets is defined under each heading. A library that is not
installed has no column. `{data}`, beside this page, holds every row with all the
figures its run recorded (min and max too). The emulator's speed is in
[Running without a GPU](guide/emulator.md).
"""

RUNNING = """\
## Running the benchmarks

```
python benchmarks/run_all.py --table [--out docs/performance.md] [--only launch,copy]
    [--reps N] [--keep docs/performance.json]
```

runs the benchmarks of this page and writes it, with its data beside it. `--only` runs
some of them; with `--keep` (the data of an earlier page), the others keep that run's
tables and their sections name it. `--reps` sets every benchmark's number of samples
(their defaults are 5 to 9). A benchmark that cannot run on the machine (no GPU, one GPU
for the NCCL benchmark) is recorded as skipped, one that fails or runs past `--timeout`
as failed, and the others go on. Every run keeps all its samples under `--results`
(default `benchmarks/results/`): `results.json`, each benchmark's own JSON and log, and
an SVG of its rows (the median, with a whisker from min to max).
`--quick` shrinks every size to check that each benchmark runs end to end, on the
emulator too; its figures mean nothing. The paragraphs above each table are kept in
`benchmarks/run_all.py`; after editing one, `--table --from docs/performance.json`
writes the page again from its data, running nothing.
"""


def benchmarks():
    """name -> path of every benchmarks/bench_NAME.py."""
    return {p.stem[len("bench_"):]: p for p in sorted(HERE.glob("bench_*.py"))}


def library_versions():
    """{distribution: version} of Python and of the PACKAGES installed (CuPy under any of
    its wheel names)."""
    out = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    for dist in metadata.distributions():  # cupy-cuda12x and its kin
        name = dist.metadata.get("Name") or ""
        if name.lower().startswith("cupy") and "cupy" not in out:
            out["cupy"] = dist.version
    return out


def driver_release():
    """The NVIDIA kernel driver's version ("580.65.06") from /proc, or None."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return None
    m = re.search(r"Kernel Module\s+(?:for \S+\s+)?([0-9][0-9.]+)", text)
    return m.group(1) if m else None


def git_commit():
    """The checkout's commit ("eeb3a4a", "-dirty" after it with uncommitted changes), or
    None outside a git checkout."""
    try:
        r = subprocess.run(["git", "-C", str(HERE.parent), "describe", "--always", "--dirty"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (r.stdout.strip() or None) if r.returncode == 0 else None


DEVICE_PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from _bench import import_cukit
cukit = import_cukit("run_all")
out = {"backend": cukit.backend(), "cukit": cukit.__version__, "device_count": cukit.device_count()}
try:
    out["nvrtc"] = "%d.%d" % tuple(cukit.nvrtc_version())
except Exception as e:
    pass
try:
    out["gpu"] = cukit.Device(0).name
    out["cuda"] = "%d.%d" % tuple(cukit.driver_version())
except Exception as e:
    out["gpu"] = None
    out["error"] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
"""


def probe_device(timeout=120):
    """The GPU's name, cukit's backend and version, and the CUDA versions, asked in a
    child (this process makes no CUDA context)."""
    try:
        r = subprocess.run([sys.executable, "-c", DEVICE_PROBE, str(HERE)], capture_output=True,
                           text=True, timeout=timeout)
        if r.returncode == 0:
            return json.loads(r.stdout.strip().splitlines()[-1])
        return {"gpu": None, "error": (r.stderr.strip().splitlines() or ["failed"])[-1]}
    except (subprocess.TimeoutExpired, ValueError, IndexError) as e:
        return {"gpu": None, "error": f"{type(e).__name__}: {e}"}


def run_meta(device, commit=None, reps=None, quick=False):
    """The description of this run, as results.json's "meta" and each entry's "run"."""
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "gpu": device.get("gpu"), "backend": device.get("backend"),
            "driver": driver_release(), "cuda": device.get("cuda"), "nvrtc": device.get("nvrtc"),
            "cukit": device.get("cukit"), "commit": commit or git_commit(),
            "versions": library_versions(), "reps": reps, "quick": quick}


def last_line(text, prefer=None):
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if prefer:
        chosen = [ln for ln in lines if prefer in ln]
        if chosen:
            return chosen[-1]
    return lines[-1] if lines else ""


def run_one(name, path, out, reps=None, quick=False, timeout=900):
    """Run one benchmark in a child process; its entry for results.json."""
    json_path = out / f"{name}.json"
    if json_path.exists():
        json_path.unlink()
    cmd = [sys.executable, str(path), "--json", str(json_path)]
    if reps:
        cmd += ["--reps", str(reps)]
    if quick:
        cmd += ["--quick"]
    t0 = time.perf_counter()
    entry = {"command": " ".join([Path(cmd[0]).name, f"benchmarks/{path.name}", *cmd[2:]])}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=HERE)
        stdout, stderr, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        stdout, stderr, rc = text(e.stdout), text(e.stderr), None
    entry["seconds"] = round(time.perf_counter() - t0, 1)
    (out / f"{name}.log").write_text(stdout + ("\n--- stderr ---\n" + stderr if stderr else ""))
    if rc is None:
        entry.update(status="failed", reason=f"ran past the time limit of {timeout:g} s")
    elif rc == SKIP_STATUS:
        reason = last_line(stderr, "skipped:")
        entry.update(status="skipped", reason=reason.split("skipped:", 1)[-1].strip() or reason)
    elif rc != 0:
        entry.update(status="failed", reason=f"exit status {rc}: {last_line(stderr or stdout)}")
    elif not json_path.exists():
        entry.update(status="failed", reason="it wrote no JSON")
    else:
        doc = json.loads(json_path.read_text())
        entry.update(status="ok", json=json_path.name, meta=doc.get("meta", {}),
                     table=doc.get("table", []))
        if not entry["table"]:
            entry.update(status="failed", reason="its JSON has no \"table\" rows")
    return entry


# ------------------------------------------------------------------ the plots

COLORS = ["#e8702a", "#3b7dd8", "#4aa564", "#9b59b6", "#c0392b", "#7f8c8d", "#d4ac0d",
          "#16a085", "#34495e", "#e84393"]


def svg_plot(title, rows, width=960):
    """A self-contained SVG of a benchmark's rows: per case, one bar per way (the
    median), a whisker from min to max, the figure and its unit beside it; bars of a case
    share a scale (its largest max). Ways keep one colour across cases. Rows with an
    error are listed as text, without a bar."""
    label_w, bar_w, bar_h, gap = 360, width - 360 - 170, 14, 4
    ways = []
    for r in rows:
        if r["way"] not in ways:
            ways.append(r["way"])
    cases = {}
    for r in rows:
        cases.setdefault(r["case"], []).append(r)
    height = 40 + sum(22 + len(rs) * (bar_h + gap) for rs in cases.values()) + 20
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="8" y="20" font-size="13" font-weight="bold">{escape(title)}</text>']
    y = 40
    for case, rs in cases.items():
        measured = [r for r in rs if "median" in r]
        top = max([r["max"] for r in measured] + [0]) or 1.0
        unit = rs[0]["unit"]
        better = rs[0].get("better", "higher")
        parts.append(f'<text x="8" y="{y + 12}" font-weight="bold">{escape(case)} '
                     f'({escape(unit)}, {"higher" if better == "higher" else "lower"} '
                     f'is better)</text>')
        y += 22
        for r in rs:
            color = COLORS[ways.index(r["way"]) % len(COLORS)]
            label = r["way"] if len(r["way"]) <= 58 else r["way"][:57] + "…"
            parts.append(f'<text x="{label_w - 6}" y="{y + bar_h - 3}" text-anchor="end">'
                         f'{escape(label)}</text>')
            if "median" not in r:
                parts.append(f'<text x="{label_w}" y="{y + bar_h - 3}" fill="#888">n/a: '
                             f'{escape(r.get("error", "")[:90])}</text>')
            else:
                def x(v):
                    return label_w + max(v, 0) / top * bar_w
                mid = y + bar_h / 2
                parts.append(f'<rect class="bar" x="{label_w}" y="{y}" '
                             f'width="{x(r["median"]) - label_w:.1f}" height="{bar_h}" '
                             f'fill="{color}"><title>{escape(r["way"])}: median '
                             f'{fmt(r["median"])}, min {fmt(r["min"])}, max {fmt(r["max"])} '
                             f'{escape(unit)}</title></rect>')
                x0, x1 = x(r["min"]), x(r["max"])
                parts.append(f'<path class="whisker" d="M{x0:.1f},{mid:.1f}H{x1:.1f}'
                             f'M{x0:.1f},{y + 3}V{y + bar_h - 3}M{x1:.1f},{y + 3}V{y + bar_h - 3}" '
                             'stroke="black" stroke-width="1" fill="none"/>')
                text = f'{fmt(r["median"])} {unit}'
                if "ratio" in r:
                    text += f' ({r["ratio"]:.2f}x)'
                if r.get("noisy"):
                    text += f" {MARK}"
                parts.append(f'<text x="{x1 + 5:.1f}" y="{y + bar_h - 3}">{escape(text)}</text>')
            y += bar_h + gap
    parts.append(f'<text x="8" y="{height - 6}" fill="#555">bars: median; whiskers: min to max; '
                 f'{MARK}: max / min over {NOISY:.0%}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"




# ------------------------------------------------------------------ the page

# how a way or a library is named on the page
DISPLAY = {"cupy": "CuPy", "torch": "PyTorch", "numpy": "numpy", "python": "Python",
           "cuda-core": "cuda.core", "cuda-bindings": "cuda.bindings",
           "cuda-python": "cuda-python", "pycuda": "PyCUDA", "numba-cuda": "numba-cuda",
           "nvidia-nccl-cu12": "NCCL (nvidia-nccl-cu12)",
           "nvidia-nccl-cu13": "NCCL (nvidia-nccl-cu13)"}


def way_name(way):
    """A way as the page names it: a library's distribution name as the library's."""
    first, _, rest = way.partition(" ")
    return text(" ".join(x for x in (DISPLAY.get(first, first), rest) if x))


def text(s, limit=None):
    """s for a table cell or a line of the page: its first line (cut at limit), with
    Markdown's cell separator escaped."""
    s = (str(s).strip().splitlines() or [""])[0]
    if limit and len(s) > limit:
        s = s[:limit - 1] + "…"
    return s.replace("|", "\\|")


def absent(error):
    """Whether a way's error says its library is not installed (the way then has no
    column: the run's table lists what was installed)."""
    return "No module named" in error or error.startswith("not installed")


def cell(r):
    """A table cell: the median, the ratio in brackets where there is one, MARK if noisy."""
    if r is None:
        return ""
    if "median" not in r:
        return "n/a"
    c = fmt(r["median"])
    if "ratio" in r:
        c += f" ({r['ratio']:.2f}×)"
    return c + (f" {MARK}" if r.get("noisy") else "")


def benchmark_table(rows):
    """Markdown lines of one benchmark's rows: cases down and ways across, or ways down
    and cases across where there are more ways than cases, or a row a figure where such
    a grid would be mostly empty. A way whose library is not
    installed is left out; another way with no figure at all is named below the table
    with its reason."""
    measured = {r["way"] for r in rows if "median" in r}
    missing = {}
    for r in rows:
        if r["way"] not in measured and not absent(r.get("error", "")):
            missing.setdefault(r["way"], text(r.get("error") or "not measured", 160))
    rows = [r for r in rows if r["way"] in measured]
    ways, cases, grid, units = [], [], {}, {}
    for r in rows:
        if r["way"] not in ways:
            ways.append(r["way"])
        if r["case"] not in cases:
            cases.append(r["case"])
        grid[(r["case"], r["way"])] = r
        units.setdefault(r["case"], text(r["unit"]))
    shown = {w: way_name(w) for w in ways}
    lines = []
    if len(grid) * 2 < len(ways) * len(cases):  # a grid mostly empty: a row a figure
        lines += ["| case | way | unit | median |", "|---|---|---|---|"]
        for c in cases:
            lines += [f"| {text(c)} | {shown[w]} | {units[c]} | {cell(grid[(c, w)])} |"
                      for w in ways if (c, w) in grid]
    elif len(ways) > len(cases):  # ways down
        lines += ["| way | " + " | ".join(f"{text(c)} ({units[c]})" for c in cases) + " |",
                  "|---|" + "---|" * len(cases)]
        for w in ways:
            lines.append(f"| {shown[w]} | " + " | ".join(cell(grid.get((c, w))) for c in cases)
                         + " |")
    elif ways:
        lines += ["| case | unit | " + " | ".join(shown[w] for w in ways) + " |",
                  "|---|---|" + "---|" * len(ways)]
        for c in cases:
            lines.append(f"| {text(c)} | {units[c]} | "
                         + " | ".join(cell(grid.get((c, w))) for w in ways) + " |")
    if missing:
        lines += ["" if lines else None,
                  "Not measured: " + "; ".join(f"{way_name(w)} ({why.rstrip('.')})"
                                               for w, why in missing.items()) + "."]
    return [ln for ln in lines if ln is not None]


def day(meta):
    return (meta.get("date") or "")[:10] or "an unknown date"


def driver_text(meta):
    """"580.65.06, CUDA 13.0" (what is known of the driver), or ""."""
    return ", ".join(x for x in (meta.get("driver"), meta.get("cuda") and f"CUDA {meta['cuda']}")
                     if x)


def run_summary(meta):
    """One line naming a run: GPU, date, driver, cukit's commit, the peers' versions."""
    parts = [meta.get("gpu") or "an unnamed device", day(meta)]
    if driver_text(meta):
        parts.append("driver " + driver_text(meta) if meta.get("driver") else driver_text(meta))
    if meta.get("commit"):
        parts.append(f"cukit at {meta['commit']}")
    vers = meta.get("versions", {})
    parts += [f"{DISPLAY.get(k, k)} {vers[k]}" for k in ("cupy", "torch") if k in vers]
    return ", ".join(parts)


def run_table(meta):
    """The page's table describing the run."""
    rows = [("GPU", meta.get("gpu") or "none found"), ("date", day(meta))]
    if driver_text(meta):
        rows.append(("driver", driver_text(meta)))
    if meta.get("nvrtc"):
        rows.append(("NVRTC", meta["nvrtc"]))
    vers = meta.get("versions", {})
    rows.append(("cukit", ", ".join(x for x in (meta.get("cukit") or vers.get("cukit"),
                                                 meta.get("commit") and f"commit {meta['commit']}")
                                     if x) or "unknown"))
    rows += [(DISPLAY.get(k, k), v) for k, v in vers.items() if k != "cukit"]
    opts = []
    if meta.get("reps"):
        opts.append(f"--reps {meta['reps']}")
    if meta.get("quick"):
        opts.append("--quick (tiny sizes: the figures mean nothing)")
    rows.append(("samples", ", ".join(opts) if opts else "each benchmark's default"))
    return ["| the run | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]


def page(doc, data_name, only=None):
    """The whole Markdown page from a results.json or page data (doc): the introduction,
    the run, one section per benchmark of PAGE (in PAGE's order), how to run them."""
    meta = doc.get("meta", {})
    runs = doc.get("benchmarks", {})
    lines = [INTRO.format(mark=f"`{MARK}`", noisy=NOISY, data=data_name)]
    lines += run_table(meta) + [""]
    for name, (title, about) in PAGE.items():
        if only and name not in only:
            continue
        lines += [f"## {title}", "", about.strip(), ""]
        entry = runs.get(name)
        if entry is None or entry.get("status") != "ok":
            why = (f"{entry.get('status')}: {entry.get('reason', '')}" if entry
                   else "not in this run")
            lines += [f"No figures: {why}.", ""]
            continue
        run = entry.get("run") or meta
        if run != meta:
            lines += [f"From another run: {run_summary(run)}."]
            if entry.get("this_run"):
                lines[-1] += f" In this run it {entry['this_run']}."
            lines += [""]
        lines += benchmark_table(entry.get("table", [])) + [""]
        if entry.get("earlier"):  # rows this run did not measure, kept from an earlier one
            e = entry["earlier"]
            lines += [f"Not measured in this run, from {e['text']}: "
                      + "; ".join(text(c) for c in e["cases"]) + ".", ""]
    lines += [RUNNING]
    return "\n".join(lines).rstrip("\n") + "\n"


def page_data(doc, only=None):
    """The page's data: doc's meta, and per benchmark of PAGE its entry with the run that
    measured it and its rows without their samples."""
    meta = doc.get("meta", {})
    out = {"meta": meta, "benchmarks": {}}
    for name in PAGE:
        entry = doc.get("benchmarks", {}).get(name)
        if entry is None or (only and name not in only):
            continue
        e = {k: v for k, v in entry.items() if k not in ("table", "meta", "json")}
        e["run"] = entry.get("run") or meta
        e["table"] = [{k: v for k, v in r.items() if k != "samples"}
                      for r in entry.get("table", [])]
        out["benchmarks"][name] = e
    return out


def with_kept(doc, kept):
    """doc with each benchmark of PAGE that it did not measure taken from kept (the data
    of an earlier page), which names the run that measured it."""
    doc = dict(doc, benchmarks=dict(doc.get("benchmarks", {})))
    for name in PAGE:
        mine = doc["benchmarks"].get(name)
        theirs = kept.get("benchmarks", {}).get(name)
        if (mine or {}).get("status") == "ok" or (theirs or {}).get("status") != "ok":
            continue
        theirs = dict(theirs, run=theirs.get("run") or kept.get("meta", {}))
        if mine:
            theirs["this_run"] = f"was {mine['status']} ({mine.get('reason', '')})"
        doc["benchmarks"][name] = theirs
    return doc


def write_page(doc, out, only=None):
    """Write the page to out and its data beside it (out with .json); out "-": print the
    page, no data."""
    if str(out) == "-":
        sys.stdout.write(page(doc, "performance.json", only))
        return
    out = Path(out)
    data = out.with_suffix(".json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(doc, data.name, only))
    data.write_text(json.dumps(page_data(doc, only), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {out} and {data}", flush=True)


def earlier_runs(path, gpu):
    """The entries of an earlier results.json made on the same GPU (so that runs of a few
    benchmarks at a time, --only, add up to one file); {} if there is none."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    meta = doc.get("meta", {})
    if meta.get("gpu") != gpu:
        return {}
    return {k: dict(v, run=v.get("run") or meta) for k, v in doc.get("benchmarks", {}).items()}


def run(names, found, args, after=None):
    """Run the benchmarks named, writing results.json under args.results as each ends
    and then calling after(doc) if given; returns the doc."""
    args.results.mkdir(parents=True, exist_ok=True)
    device = probe_device()
    meta = run_meta(device, args.commit, args.reps, args.quick)
    doc = {"meta": meta, "benchmarks": {}}
    results = args.results / "results.json"
    kept = earlier_runs(results, device.get("gpu")) if args.only else {}
    doc["benchmarks"].update(kept)
    print(f"{device.get('gpu') or device.get('error')}; writing {results}"
          + (f" (keeping {', '.join(kept)} from earlier runs on this GPU)" if kept else ""),
          flush=True)
    for name in names:
        print(f"{name}: ...", end="", flush=True)
        entry = run_one(name, found[name], args.results, args.reps, args.quick, args.timeout)
        entry["run"] = meta
        doc["benchmarks"][name] = entry
        if entry["status"] == "ok":
            title = f"bench_{name} on {device.get('gpu')}"
            (args.results / f"{name}.svg").write_text(svg_plot(title, entry["table"]))
            noisy = sum(1 for r in entry["table"] if r.get("noisy"))
            print(f" ok, {len(entry['table'])} rows ({noisy} noisy), {entry['seconds']} s",
                  flush=True)
        else:
            print(f" {entry['status']}: {entry['reason']}", flush=True)
        results.write_text(json.dumps(doc, indent=1, default=str) + "\n")  # so far
        if after:
            after(doc)
    return doc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--only", help="comma-separated names (random,reduce,...); default: all "
                                   "(with --table: the page's)")
    ap.add_argument("--reps", type=int, help="passed to each benchmark (default: its own)")
    ap.add_argument("--quick", action="store_true",
                    help="tiny sizes: checks that each runs (the emulator), measures nothing")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per benchmark")
    ap.add_argument("--results", type=Path, default=HERE / "results",
                    help="the folder of results.json and each benchmark's files")
    ap.add_argument("--table", action="store_true", help="write the performance page")
    ap.add_argument("--out", default=str(PAGE_PATH),
                    help="with --table: the page's file (its data beside it, .json); - prints it")
    ap.add_argument("--keep", type=Path, metavar="JSON",
                    help="with --table: an earlier page's data, for the benchmarks not measured")
    ap.add_argument("--from", dest="source", type=Path, metavar="JSON",
                    help="with --table: write the page from this results.json, running nothing")
    ap.add_argument("--commit", help="cukit's commit, where the tree is not a git checkout")
    args = ap.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()] if args.only else None
    if (args.source or args.keep) and not args.table:
        ap.error("--from and --keep go with --table")
    if (args.table and args.quick and args.out != "-"
            and Path(args.out).resolve() == PAGE_PATH.resolve()):
        ap.error("--quick measures nothing: give --out another file than docs/performance.md")
    kept = json.loads(args.keep.read_text()) if args.keep else None
    if args.source:
        doc = json.loads(args.source.read_text())
        write_page(with_kept(doc, kept) if kept else doc, args.out, only)
        return 0
    found = benchmarks()
    names = only or (list(PAGE) if args.table else list(found))
    unknown = [n for n in names if n not in found]
    if unknown:
        ap.error(f"no benchmark named {', '.join(unknown)} (there are: {', '.join(found)})")
    def write(doc):  # after each benchmark: a run cut short still leaves its page
        write_page(with_kept(doc, kept) if kept else doc, args.out)

    doc = run(names, found, args, write if args.table and args.out != "-" else None)
    if args.table and args.out == "-":
        write(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
