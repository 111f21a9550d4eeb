"""Run every benchmark (or some), each in its own process with a time limit, and write
one JSON of all their rows plus a plot per benchmark; or print the docs' tables from
such a JSON.

Usage
    python benchmarks/run_all.py [--only random,reduce] [--reps N] [--quick]
        [--timeout 900] [--out benchmarks/results]
    python benchmarks/run_all.py --table benchmarks/results/results.json [--only ...]

What it writes under --out
    results.json     the run: "meta" (GPU name, date, versions of the libraries) and,
                     per benchmark, its status ("ok", "skipped" or "failed"), the
                     reason when not ok, seconds taken, and its rows (case, way, unit,
                     min, median, max, spread, noisy, ...)
    NAME.json        the benchmark's own JSON (every sample, its older keys too)
    NAME.log         what it printed
    NAME.svg         its rows as bars: the median, with a whisker from min to max

With --only, the entries of the other benchmarks in an existing results.json made on the
same GPU are kept, so a few runs of some benchmarks each add up to one file.

A benchmark that cannot run here (no GPU, a second GPU missing) exits with status 77
and is recorded as skipped with its reason; one that fails or runs past --timeout is
recorded as failed; neither stops the others. --table prints, per benchmark, a
markdown table of medians (cases down, ways across; the ratio in brackets where the
benchmark gives one; ~ marks a row whose max / min is over 10%).
"""
import argparse
import json
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from xml.sax.saxutils import escape

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _bench import MARK, NOISY, SKIP_STATUS, fmt  # noqa: E402

# distributions whose versions the run records (those installed)
PACKAGES = ("numpy", "cukit", "torch", "pycuda", "cuda-core", "cuda-bindings", "cuda-python",
            "nvidia-nccl-cu12", "nvidia-nccl-cu13", "numba-cuda")


def benchmarks():
    """name -> path of every benchmarks/bench_NAME.py."""
    return {p.stem[len("bench_"):]: p for p in sorted(HERE.glob("bench_*.py"))}


def library_versions():
    out = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    for dist in metadata.distributions():  # cupy-cuda12x and its kin
        name = dist.metadata.get("Name") or ""
        if name.lower().startswith("cupy"):
            out[name] = dist.version
    return out


DEVICE_PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from _bench import import_cukit
cukit = import_cukit("run_all")
out = {"backend": cukit.backend(), "cukit": cukit.__version__, "device_count": cukit.device_count()}
try:
    out["gpu"] = cukit.Device(0).name
    out["driver_version"] = cukit.driver_version()
except Exception as e:
    out["gpu"] = None
    out["error"] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
"""


def probe_device(timeout=120):
    """The GPU's name and cukit's backend, asked in a child (this process makes no
    CUDA context)."""
    try:
        r = subprocess.run([sys.executable, "-c", DEVICE_PROBE, str(HERE)], capture_output=True,
                           text=True, timeout=timeout)
        if r.returncode == 0:
            return json.loads(r.stdout.strip().splitlines()[-1])
        return {"gpu": None, "error": (r.stderr.strip().splitlines() or ["failed"])[-1]}
    except (subprocess.TimeoutExpired, ValueError, IndexError) as e:
        return {"gpu": None, "error": f"{type(e).__name__}: {e}"}


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
        entry.update(status="failed", reason=f"ran past the time limit of {timeout} s")
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


# ------------------------------------------------------------------ the docs' tables


def cell(r):
    """A table cell: the median, the ratio in brackets where there is one, MARK if noisy."""
    if r is None:
        return ""
    if "median" not in r:
        return "n/a"
    c = fmt(r["median"])
    if "ratio" in r:
        c += f" ({r['ratio']:.2f}x)"
    return c + (f" {MARK}" if r.get("noisy") else "")


def benchmark_table(rows):
    """Markdown lines of one benchmark's rows: cases down and ways across, or ways down
    and cases across where there are more ways than cases. A way with no figure at all
    is left out of the table and named below it with its reason."""
    measured = {r["way"] for r in rows if "median" in r}
    missing = {}
    for r in rows:
        if r["way"] not in measured:
            missing.setdefault(r["way"], r.get("error", "not measured"))
    rows = [r for r in rows if r["way"] in measured]
    ways, cases, grid = [], [], {}
    for r in rows:
        if r["way"] not in ways:
            ways.append(r["way"])
        if r["case"] not in cases:
            cases.append(r["case"])
        grid[(r["case"], r["way"])] = r
    units = {}
    for r in rows:
        units.setdefault(r["case"], r["unit"])
    if len(ways) > len(cases):  # ways down
        head = [f"{c} ({units[c]})" for c in cases]
        lines = ["| way | " + " | ".join(head) + " |", "|---|" + "---|" * len(cases)]
        for w in ways:
            lines.append(f"| {w} | " + " | ".join(cell(grid.get((c, w))) for c in cases) + " |")
    else:
        lines = ["| case | unit | " + " | ".join(ways) + " |", "|---|---|" + "---|" * len(ways)]
        for c in cases:
            lines.append(f"| {c} | {units[c]} | "
                         + " | ".join(cell(grid.get((c, w))) for w in ways) + " |")
    if missing:
        lines += ["", "Not measured: " + "; ".join(f"{w} ({why})" for w, why in missing.items())
                  + "."]
    return lines


def markdown_tables(doc, only=None):
    """Markdown lines from a results.json (or one benchmark's own JSON): a table per
    benchmark (see benchmark_table), each cell the median, with the ratio in brackets
    where the benchmark gives one and MARK on a noisy row."""
    if "benchmarks" in doc:
        runs, meta = doc["benchmarks"], doc.get("meta", {})
    else:
        runs, meta = {"benchmark": {"status": "ok", "table": doc.get("table", [])}}, doc.get("meta", {})
    lines = []
    gpu = meta.get("gpu") or meta.get("device")
    if gpu or meta.get("date"):
        vers = ", ".join(f"{k} {v}" for k, v in meta.get("versions", {}).items())
        lines += [f"On {gpu or 'an unnamed device'}, {meta.get('date', '')}"
                  + (f" ({vers})" if vers else "") + ".", ""]
    noisy = False
    for name, run in runs.items():
        if only and name not in only:
            continue
        if run.get("status") != "ok":
            lines += [f"**{name}**: {run.get('status', '?')} ({run.get('reason', '')})", ""]
            continue
        noisy = noisy or any(r.get("noisy") for r in run.get("table", []))
        lines += [f"**{name}**", ""] + benchmark_table(run.get("table", [])) + [""]
    if noisy:
        lines.append(f"{MARK}: the row's max / min was over {NOISY:.0%}; take its median with care.")
    return lines


def earlier_runs(path, gpu):
    """The entries of an earlier results.json made on the same GPU (so that runs of a few
    benchmarks at a time, --only, add up to one file); {} if there is none."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if doc.get("meta", {}).get("gpu") != gpu:
        return {}
    return dict(doc.get("benchmarks", {}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--only", help="comma-separated names (random,reduce,...); default all")
    ap.add_argument("--reps", type=int, help="passed to each benchmark (default: its own)")
    ap.add_argument("--quick", action="store_true",
                    help="tiny sizes: checks that each runs (the emulator), measures nothing")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per benchmark")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--table", type=Path, metavar="RESULTS_JSON",
                    help="print markdown tables from this JSON and run nothing")
    args = ap.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()] if args.only else None
    if args.table:
        print("\n".join(markdown_tables(json.loads(args.table.read_text()), only)))
        return 0
    found = benchmarks()
    if only:
        unknown = [n for n in only if n not in found]
        if unknown:
            ap.error(f"no benchmark named {', '.join(unknown)} (there are: {', '.join(found)})")
        found = {n: found[n] for n in only}
    args.out.mkdir(parents=True, exist_ok=True)
    device = probe_device()
    doc = {"meta": {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "gpu": device.get("gpu"),
                    "device": device,
                    "versions": {**library_versions(),
                                 **({"cukit": device["cukit"]} if device.get("cukit") else {})},
                    "reps": args.reps, "quick": args.quick, "timeout_s": args.timeout},
           "benchmarks": {}}
    results = args.out / "results.json"
    kept = earlier_runs(results, device.get("gpu")) if only else {}
    doc["benchmarks"].update(kept)
    print(f"{device.get('gpu') or device.get('error')}; writing {results}"
          + (f" (keeping {', '.join(kept)} from earlier runs on this GPU)" if kept else ""),
          flush=True)
    for name, path in found.items():
        print(f"{name}: ...", end="", flush=True)
        entry = run_one(name, path, args.out, args.reps, args.quick, args.timeout)
        entry["date"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
        doc["benchmarks"][name] = entry
        if entry["status"] == "ok":
            title = f"bench_{name} on {entry['meta'].get('device') or device.get('gpu')}"
            (args.out / f"{name}.svg").write_text(svg_plot(title, entry["table"]))
            noisy = sum(1 for r in entry["table"] if r.get("noisy"))
            print(f" ok, {len(entry['table'])} rows ({noisy} noisy), {entry['seconds']} s",
                  flush=True)
        else:
            print(f" {entry['status']}: {entry['reason']}", flush=True)
        results.write_text(json.dumps(doc, indent=1, default=str) + "\n")  # so far
    return 0


if __name__ == "__main__":
    sys.exit(main())
