"""What the benchmarks share: finding cukit, timing (warm-up, then samples), the
figures every row reports (min, median, max and their spread, marked when over 10%),
the table they print, the JSON rows they write, and building a raw C baseline.

A row is a dict: {"case", "way", "unit", "better": "higher" | "lower", "min",
"median", "max", "spread", "noisy", "n", "samples"} plus what the benchmark adds
("ratio", "note", ...); a way that could not be measured has "error" instead of the
figures (a library that is not installed: an error naming the missing module).

How a benchmark hands its rows to benchmarks/run_all.py, which runs each in its own
process: it takes --reps N, --quick (tiny sizes, a check that it runs, on the emulator
too) and --json PATH, writes its rows through write_json (under the key "table",
beside keys of its own), and leaves through skip() (exit status SKIP_STATUS) where it
cannot run.
"""
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# A row whose max / min is more than 1 + NOISY apart is marked: not a stable figure.
NOISY = 0.10
MARK = "~"
# The exit status of a benchmark that cannot run here (no GPU, too few GPUs): run_all
# records it as skipped, with the reason the benchmark printed.
SKIP_STATUS = 77


def import_cukit(tool):
    """cukit from the environment, else from the checkout's src/ (built in place)."""
    try:
        import cukit
    except ImportError:
        sys.path.insert(0, str(HERE.parent / "src"))
        try:
            import cukit
        except ImportError as e:
            sys.exit(f"{tool}: cannot import cukit ({e}). Build it first: "
                     "python setup.py build_ext --inplace -b src, then run with PYTHONPATH=src")
    return cukit


def peers(cukit):
    """{name: module} of the libraries a benchmark compares: cukit, and CuPy and PyTorch
    (with CUDA) where they import."""
    out = {"cukit": cukit}
    try:
        import cupy
        out["cupy"] = cupy
    except Exception:  # noqa: BLE001 - a peer that does not import is left out
        pass
    try:
        import torch
        if torch.cuda.is_available():
            out["torch"] = torch
    except Exception:  # noqa: BLE001
        pass
    return out


def peer_sync(cukit, name, lib):
    """Wait for the device work of library `name`."""
    if name == "cukit":
        cukit.synchronize()
    elif name == "cupy":
        lib.cuda.Device().synchronize()
    else:
        lib.cuda.synchronize()


def peer_array(cukit, name, lib, host):
    """The numpy array host on the device, as library `name`'s array."""
    if name == "cukit":
        return cukit.to_device(host)
    if name == "cupy":
        return lib.asarray(host)
    return lib.from_numpy(host).cuda()


def skip(tool, reason):
    """Leave the benchmark, telling run_all why it cannot run here (not a failure)."""
    print(f"{tool}: skipped: {reason}", file=sys.stderr, flush=True)
    sys.exit(SKIP_STATUS)


def need_gpu(tool, cukit, quick=False):
    """Skip (see skip) where there is no GPU to measure: none at all, or cukit running
    on its CPU emulator, unless quick (a check that the benchmark runs)."""
    if cukit.device_count() == 0:
        skip(tool, "no GPU")
    if cukit.backend() == "emulator" and not quick:
        skip(tool, "no GPU: cukit runs on its CPU emulator here (--quick checks that the "
                   "benchmark runs, measuring nothing)")


# ------------------------------------------------------------------ figures


def summarize(samples):
    """min, median, max, spread (max / min - 1) and whether it is noisy, of a non-empty
    list of numbers."""
    s = sorted(float(x) for x in samples)
    if not s:
        raise ValueError("no samples to summarize")
    lo, hi = s[0], s[-1]
    if lo > 0:
        spread = hi / lo - 1
    else:  # a zero or negative figure has no meaningful ratio
        spread = 0.0 if hi == lo else math.inf
    # compared as products, so that exactly 10% (11 against 10) is not marked by rounding
    noisy = hi > lo * (1 + NOISY) if lo > 0 else hi != lo
    return {"min": lo, "median": statistics.median(s), "max": hi, "spread": spread,
            "noisy": noisy, "n": len(s)}


def mark(row):
    """MARK for a row whose spread is over NOISY, else ""."""
    return MARK if row.get("noisy") else ""


def row(case, way, samples, unit, better="higher", **extra):
    """One table row from its samples (see the module's docstring)."""
    r = {"case": case, "way": way, "unit": unit, "better": better}
    r.update(summarize(samples))
    r["samples"] = [float(x) for x in samples]
    r.update(extra)
    return r


def error_row(case, way, unit, error, better="higher", **extra):
    """A row for a way that could not be measured; error says why."""
    r = {"case": case, "way": way, "unit": unit, "better": better, "error": str(error)}
    r.update(extra)
    return r


def ratio_to(rows, baseline_way):
    """Add "ratio" to each measured row: its median over that of the row of
    baseline_way in the same case (for a "lower" row: the baseline's over its own, so
    > 1 is always better than the baseline)."""
    base = {r["case"]: r["median"] for r in rows if r["way"] == baseline_way and "median" in r}
    for r in rows:
        b = base.get(r["case"])
        if b and "median" in r and r["median"] > 0:
            r["ratio"] = r["median"] / b if r["better"] == "higher" else b / r["median"]
    return rows


def ratio_to_best_peer(rows, way="cukit"):
    """Add "ratio" to each row of `way`: its median against the best other way's in the
    same case (> 1: `way` is better, whether higher or lower is better)."""
    by_case = {}
    for r in rows:
        if "median" in r:
            by_case.setdefault(r["case"], []).append(r)
    for rs in by_case.values():
        mine = [r for r in rs if r["way"] == way]
        peers = [r["median"] for r in rs if r["way"] != way]
        if not mine or not peers:
            continue
        r = mine[0]
        if r["better"] == "higher":
            r["ratio"] = r["median"] / max(peers)
        elif r["median"] > 0:
            r["ratio"] = min(peers) / r["median"]
    return rows


# ------------------------------------------------------------------ timing


def warm_up(fn, sync=None, calls=2, seconds=0.2):
    """Call fn at least `calls` times and for at least `seconds` (then sync()): kernels
    compiled, pools filled, and the GPU's clocks up from idle before the first sample.
    Returns the number of calls made."""
    n, t0 = 0, time.perf_counter()
    while n < calls or time.perf_counter() - t0 < seconds:
        fn()
        n += 1
        if n >= calls and sync:
            sync()
    if sync:
        sync()
    return n


def clock_samples(fn, reps, warmup=1, count=1, sync=None):
    """Seconds per call of fn: warmup calls first (not timed), then reps samples of
    count calls each, each sample ended by sync() when given."""
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(count):
            fn()
        if sync:
            sync()
        out.append((time.perf_counter() - t0) / count)
    return out


def interleaved(ways, reps, warmup=1):
    """Take reps samples of each way, the ways taking turns within each round so that a
    drift in the machine's speed spreads over all of them. ways maps a name to a
    function returning one sample; each is called warmup times first, its result
    dropped. Returns ({name: [samples]}, {name: error text}) - a way that raises is
    dropped with its error, the others go on."""
    samples, errors = {}, {}
    for name, fn in ways.items():
        try:
            for _ in range(warmup):
                fn()
            samples[name] = []
        except Exception as e:  # noqa: BLE001 - a peer without this call: reported
            errors[name] = f"{type(e).__name__}: {e}"
    for _ in range(reps):
        for name in list(samples):
            try:
                samples[name].append(ways[name]())
            except Exception as e:  # noqa: BLE001
                errors[name] = f"{type(e).__name__}: {e}"
                del samples[name]
    return samples, errors


# ------------------------------------------------------------------ output


def fmt(value, unit=""):
    """A figure to 3 or 4 significant digits, without exponent."""
    if value is None:
        return "-"
    if value != value or math.isinf(value):
        return str(value)
    a = abs(value)
    if a >= 100:
        return f"{value:,.0f}"
    if a >= 10:
        return f"{value:.1f}"
    if a >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def table_lines(rows, title=None):
    """The markdown lines of a benchmark's rows: one line per row with median, min, max
    and spread, MARK after a spread over NOISY, and the ratio where rows have one."""
    has_ratio = any("ratio" in r for r in rows)
    lines = [title] if title else []
    head = "| case | way | unit | median | min | max | spread |" + (" ratio |" if has_ratio else "")
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        cells = [r["case"], r["way"], r["unit"]]
        if "error" in r:
            cells += ["n/a", "", "", r["error"][:80]]
        else:
            cells += [fmt(r["median"]), fmt(r["min"]), fmt(r["max"]),
                      f"{r['spread'] * 100:.0f}%" + (f" {MARK}" if r["noisy"] else "")]
        if has_ratio:
            cells.append(f"{r['ratio']:.2f}x" if "ratio" in r else "")
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    if any(r.get("noisy") for r in rows):
        lines.append(f"{MARK}: max / min over {NOISY:.0%}: a noisy row, not a stable figure "
                     "(run again, or with more --reps)")
    return lines


def print_table(rows, title=None):
    print("\n".join(table_lines(rows, title)), flush=True)


def versions(extra=()):
    """Versions of numpy, cukit and of the peers importable here (without importing a
    peer that is not already imported, except the ones named in extra)."""
    out = {"python": platform.python_version()}
    for name in ("numpy", "cukit", "cupy", "torch", "pycuda", "cuda.core", "cuda.bindings",
                 *extra):
        mod = sys.modules.get(name)
        if mod is not None:
            out[name] = getattr(mod, "__version__", getattr(mod, "VERSION_TEXT", "?"))
    return out


def meta(device=None, **extra):
    """The run's description: date, device name, versions, platform."""
    m = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "device": device,
         "versions": versions(), "platform": platform.platform(),
         "backend": os.environ.get("CUKIT_BACKEND", "")}
    cukit = sys.modules.get("cukit")
    if cukit is not None and hasattr(cukit, "backend"):
        try:
            m["backend"] = cukit.backend()
        except Exception:  # noqa: BLE001 - only descriptive
            pass
    m.update(extra)
    return m


def write_json(path, doc, rows, device=None, **meta_extra):
    """Write doc (the benchmark's own keys) with the shared "table" rows and "meta"
    added to PATH; the folder is made if needed."""
    if path is None:
        return
    path = Path(path)
    doc = dict(doc)
    doc["table"] = rows
    doc.setdefault("meta", {})
    if isinstance(doc["meta"], dict):
        m = meta(device, **meta_extra)
        m.update(doc["meta"])
        doc["meta"] = m
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(f"wrote {path}", flush=True)


# ------------------------------------------------------------------ raw C


def run_c(source, args, timeout, files=None):
    """Compile benchmarks/SOURCE with the system C compiler, run it with ARGS (files
    named in FILES, a dict name -> bytes, are written beside it first; "{dir}" in an
    argument is their folder) and return the JSON object it prints."""
    cc = shutil.which("cc")
    if cc is None:
        raise RuntimeError("no C compiler: `cc` is not on PATH")
    with tempfile.TemporaryDirectory(prefix="bench_") as workdir:
        exe = Path(workdir) / Path(source).stem
        proc = subprocess.run([cc, "-O2", "-std=c11", "-o", str(exe), str(HERE / source), "-ldl"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"cc failed:\n{proc.stderr}")
        for name, data in (files or {}).items():
            (Path(workdir) / name).write_bytes(data)
        argv = [str(exe), *(str(a).replace("{dir}", workdir) for a in args)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip() or f"exit status {proc.returncode}")
    return json.loads(proc.stdout)


def peer_table(table, reps, better=lambda unit: "higher"):
    """Run every library's cases, interleaved, and make the rows: `table` is {library:
    {case: (unit, fn)}} with cukit's cases first in order; `better(unit)` says which way
    a unit improves. Returns (rows with cukit's ratio to the best peer, {library:
    {case: samples}}, {"library: case": error}); the errors are printed."""
    ways = {(n, k): fn for n in table for k, (_, fn) in table[n].items()}
    samples, errors = interleaved(ways, reps, warmup=1)
    for (n, k), e in errors.items():
        print(f"{n}: {k}: {e}")
    rows = []
    for k, (unit, _) in table["cukit"].items():
        for n in table:
            if (n, k) in samples:
                rows.append(row(k, n, samples[(n, k)], unit, better(unit)))
            elif (n, k) in errors:
                rows.append(error_row(k, n, unit, errors[(n, k)], better(unit)))
    ratio_to_best_peer(rows)
    results = {n: {k: samples.get((n, k), []) for k in table[n]} for n in table}
    return rows, results, {f"{n}: {k}": e for (n, k), e in errors.items()}
