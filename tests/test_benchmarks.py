"""The benchmarks' machinery (benchmarks/_bench.py, benchmarks/run_all.py): the figures
every row reports and the mark of a noisy one, the table, the SVG plots, run_all's
record of a benchmark that ran, was skipped, failed or ran too long, and the
performance page it writes. Pure Python, plus benchmarks run end to end with --quick;
no time is asserted."""
import json
import math
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import cukit

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))
import _bench  # noqa: E402
import run_all  # noqa: E402

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))


def made_up(rng, n, centre, spread):
    """n samples between centre and centre * (1 + spread), both ends included."""
    inner = centre * (1 + rng.uniform(0, spread, n - 2))
    return list(rng.permutation(np.concatenate([[centre, centre * (1 + spread)], inner])))


# ------------------------------------------------------------------ the figures


def test_summarize_gives_min_median_max_and_spread():
    rng = np.random.default_rng()
    samples = made_up(rng, 9, 100.0, 0.05)
    s = _bench.summarize(samples)
    assert s["min"] == min(samples) and s["max"] == max(samples)
    assert s["median"] == pytest.approx(float(np.median(samples)))
    assert s["spread"] == pytest.approx(max(samples) / min(samples) - 1)
    assert s["n"] == 9 and not s["noisy"]


def test_a_spread_over_ten_percent_is_marked_and_ten_percent_is_not():
    rng = np.random.default_rng()
    noisy = _bench.row("add", "cukit", made_up(rng, 7, 3.0, 0.25), "us", better="lower")
    assert noisy["noisy"] and _bench.mark(noisy) == "~"
    steady = _bench.row("add", "cukit", [10.0, 10.5, 11.0], "us")  # exactly 10%
    assert not steady["noisy"] and _bench.mark(steady) == ""
    assert _bench.summarize([10.0, 11.02])["noisy"]


def test_summarize_refuses_no_samples_and_marks_a_zero_minimum():
    with pytest.raises(ValueError, match="no samples"):
        _bench.summarize([])
    s = _bench.summarize([0.0, 1.0])
    assert math.isinf(s["spread"]) and s["noisy"]
    assert _bench.summarize([0.0, 0.0])["spread"] == 0


def test_the_table_shows_every_figure_the_mark_and_the_ratio():
    rows = [_bench.row("sum", "cukit", [2.0, 2.1, 2.6], "GB/s"),
            _bench.row("sum", "cupy", [1.0, 1.01, 1.02], "GB/s"),
            _bench.error_row("sum", "torch", "GB/s", "ImportError: no torch")]
    _bench.ratio_to_best_peer(rows)
    assert rows[0]["ratio"] == pytest.approx(2.1 / 1.01)
    lines = _bench.table_lines(rows)
    assert lines[0] == "| case | way | unit | median | min | max | spread | ratio |"
    assert lines[2] == "| sum | cukit | GB/s | 2.10 | 2.00 | 2.60 | 30% ~ | 2.08x |"
    assert lines[3] == "| sum | cupy | GB/s | 1.01 | 1.00 | 1.02 | 2% |  |"
    assert "n/a" in lines[4] and "ImportError: no torch" in lines[4]
    assert lines[-1].startswith("~: max / min over 10%")


def test_ratios_are_better_above_one_for_times_too():
    rows = [_bench.row("launch", "raw C", [4.0, 4.0], "us", better="lower"),
            _bench.row("launch", "cukit", [5.0, 5.0], "us", better="lower")]
    _bench.ratio_to(rows, "raw C")
    assert rows[1]["ratio"] == pytest.approx(0.8) and rows[0]["ratio"] == 1
    _bench.ratio_to_best_peer(rows)
    assert rows[1]["ratio"] == pytest.approx(0.8)


def test_interleaved_warms_up_first_and_keeps_going_past_a_broken_way():
    calls = {"a": 0, "b": 0}

    def a():
        calls["a"] += 1
        return float(calls["a"])

    def b():
        calls["b"] += 1
        if calls["b"] > 2:
            raise RuntimeError("peer gave up")
        return 1.0

    def missing():
        raise ImportError("not installed")

    samples, errors = _bench.interleaved({"a": a, "b": b, "c": missing}, reps=5, warmup=2)
    assert samples == {"a": [3.0, 4.0, 5.0, 6.0, 7.0]}  # the two warm-up calls are not samples
    assert errors == {"b": "RuntimeError: peer gave up", "c": "ImportError: not installed"}


def test_write_json_adds_the_table_and_meta_beside_the_old_keys(tmp_path):
    rows = [_bench.row("sum", "cukit", [1.0, 2.0], "GB/s")]
    path = tmp_path / "sub" / "x.json"
    _bench.write_json(path, {"medians": {"cukit": 1.5}}, rows, "some GPU")
    doc = json.loads(path.read_text())
    assert doc["medians"] == {"cukit": 1.5}
    assert doc["table"][0]["median"] == 1.5 and doc["table"][0]["samples"] == [1.0, 2.0]
    assert doc["meta"]["device"] == "some GPU" and "numpy" in doc["meta"]["versions"]


# ------------------------------------------------------------------ the plots


def test_the_svg_is_xml_with_one_bar_and_whisker_per_measured_row():
    rng = np.random.default_rng()
    rows = [_bench.row(f"case {i}", way, made_up(rng, 5, float(rng.uniform(1, 1000)), 0.2), "GB/s")
            for i in range(3) for way in ("cukit", "cupy", "torch <2.1> & co")]
    rows.append(_bench.error_row("case 0", "PyCUDA", "GB/s", "not installed"))
    svg = run_all.svg_plot("bench_x on <a GPU>", rows)
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    bars = [e for e in root.iter() if e.get("class") == "bar"]
    whiskers = [e for e in root.iter() if e.get("class") == "whisker"]
    assert len(bars) == len(whiskers) == 9
    texts = "".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert "torch <2.1> & co" in texts and "n/a: not installed" in texts
    width = float(root.get("width"))
    for bar in bars:  # inside the picture, the longest bar of a case at most the width
        assert 0 <= float(bar.get("width")) <= width - float(bar.get("x"))


# ------------------------------------------------------------------ run_all


SCRIPTS = {
    "ok": """
        import json, sys
        sys.path.insert(0, {bench!r})
        import _bench
        path = sys.argv[sys.argv.index("--json") + 1]
        _bench.write_json(path, {{"old": 1}}, [_bench.row("c", "w", [1.0, 1.5], "ms")], "dev")
    """,
    "skip": """
        import sys
        sys.path.insert(0, {bench!r})
        import _bench
        _bench.skip("bench_skip", "needs 2 GPUs, this machine has 1")
    """,
    "fail": """
        raise RuntimeError("the peer broke")
    """,
    "slow": """
        import time
        time.sleep(60)
    """,
}


@pytest.mark.parametrize("kind", list(SCRIPTS))
def test_run_one_records_ok_skipped_failed_and_too_slow(tmp_path, kind):
    script = tmp_path / f"bench_{kind}.py"
    script.write_text(textwrap.dedent(SCRIPTS[kind].format(bench=str(BENCH))))
    entry = run_all.run_one(kind, script, tmp_path, reps=3, timeout=5 if kind == "slow" else 60)
    assert (tmp_path / f"{kind}.log").exists()
    if kind == "ok":
        assert entry["status"] == "ok" and entry["table"][0]["max"] == 1.5
        assert "--reps 3" in entry["command"]
    elif kind == "skip":
        assert entry == {**entry, "status": "skipped", "reason": "needs 2 GPUs, this machine has 1"}
    elif kind == "fail":
        assert entry["status"] == "failed" and "RuntimeError: the peer broke" in entry["reason"]
    else:
        assert entry["status"] == "failed" and entry["reason"] == "ran past the time limit of 5 s"


@pytest.mark.skipif(cukit.device_count() >= 2, reason="bench_nccl runs where there are 2 GPUs")
def test_run_all_skips_nccl_on_one_gpu_with_its_reason_and_goes_on(tmp_path):
    r = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--only", "nccl,strided",
                        "--quick", "--results", str(tmp_path), "--timeout", "300"],
                       capture_output=True, text=True, timeout=600, env=ENV)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["meta"]["gpu"] == cukit.Device(0).name and "numpy" in doc["meta"]["versions"]
    nccl = doc["benchmarks"]["nccl"]
    assert nccl["status"] == "skipped"
    assert nccl["reason"] == f"needs 2 GPUs, this machine has {cukit.device_count()}"
    strided = doc["benchmarks"]["strided"]
    assert strided["status"] == "ok", strided.get("reason")
    measured = [r for r in strided["table"] if "error" not in r]  # a peer may fail, and says why
    assert measured and all(r["error"] for r in strided["table"] if "error" in r)
    for r in measured:
        assert r["min"] <= r["median"] <= r["max"] and len(r["samples"]) == r["n"] >= 2
    own = json.loads((tmp_path / "strided.json").read_text())
    assert "device_to_device" in own and own["table"] == strided["table"]  # old keys kept
    svg = ET.parse(tmp_path / "strided.svg").getroot()
    # a bar for each measured row; a row with an error is text (a peer on this machine may
    # refuse a layout)
    assert len([e for e in svg.iter() if e.get("class") == "bar"]) == len(measured)
    assert not (tmp_path / "nccl.svg").exists()


RUN = {"date": "2026-11-27 10:00 UTC", "gpu": "NVIDIA H100 80GB HBM3", "driver": "580.65.06",
       "cuda": "13.0", "nvrtc": "13.0", "cukit": "0.1.0", "commit": "abc1234",
       "versions": {"python": "3.11.7", "numpy": "2.4.6", "cupy": "14.2.0"}}


def made_up_results():
    row = _bench.row
    return {"meta": RUN, "benchmarks": {
        "random": {"status": "ok", "run": RUN, "table": [
            dict(row("uniform float32", "cukit", [2900, 2921, 2950], "GB/s"), ratio=0.94),
            row("uniform float32", "torch", [2000, 2434, 2500], "GB/s"),
            row("normal float32", "cukit", [1890, 1893, 1895], "GB/s")]},
        "launch": {"status": "ok", "run": RUN, "table": [
            row("5 args", w, [v, v], "us", better="lower")
            for w, v in (("raw C", 3.5), ("cukit", 3.6), ("CuPy", 5.4))]
            + [_bench.error_row("5 args", "PyCUDA", "us", "not installed (No module named 'x')"),
               _bench.error_row("5 args", "ctypes", "us", "OSError: no libcuda")]},
        "nccl": {"status": "skipped", "reason": "needs 2 GPUs, this machine has 1", "run": RUN}}}


def test_the_page_has_the_run_a_section_a_benchmark_and_a_table_of_medians(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(made_up_results()))
    out = tmp_path / "page" / "perf.md"
    r = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--table", "--from", str(path),
                        "--out", str(out)], capture_output=True, text=True, timeout=60, env=ENV)
    assert r.returncode == 0, r.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == "# Performance"
    for want in ("| GPU | NVIDIA H100 80GB HBM3 |", "| date | 2026-11-27 |",
                 "| driver | 580.65.06, CUDA 13.0 |", "| cukit | 0.1.0, commit abc1234 |",
                 "| numpy | 2.4.6 |", "| CuPy | 14.2.0 |"):
        assert want in lines
    titles = [ln[3:] for ln in lines if ln.startswith("## ")]
    assert titles == [t for t, _ in run_all.PAGE.values()] + ["Running the benchmarks"]
    at = lines.index("## Random numbers")
    table = lines[lines.index("| case | unit | cukit | PyTorch |", at):]
    assert table[:4] == ["| case | unit | cukit | PyTorch |", "|---|---|---|---|",
                         "| uniform float32 | GB/s | 2,921 (0.94×) | 2,434 ~ |",
                         "| normal float32 | GB/s | 1,893 |  |"]
    at = lines.index("## Launches")  # three ways, one case: the ways go down
    table = lines[lines.index("| way | 5 args (us) |", at):]
    assert table[:5] == ["| way | 5 args (us) |", "|---|---|", "| raw C | 3.50 |",
                         "| cukit | 3.60 |", "| CuPy | 5.40 |"]
    # a library that is not installed has no row; a way that failed is named with why
    assert "PyCUDA" not in "\n".join(table[:8])
    assert "Not measured: ctypes (OSError: no libcuda)." in lines
    assert "No figures: skipped: needs 2 GPUs, this machine has 1." in lines
    assert "No figures: not in this run." in lines  # a benchmark of the page not run
    assert not any(ln.startswith("From another run") for ln in lines)
    data = json.loads((tmp_path / "page" / "perf.json").read_text())
    assert data["meta"] == RUN and set(data["benchmarks"]) == {"random", "launch", "nccl"}
    assert data["benchmarks"]["random"]["table"][0]["max"] == 2950
    assert "samples" not in data["benchmarks"]["random"]["table"][0]
    only = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--table", "--from",
                           str(path), "--only", "launch", "--out", "-"],
                          capture_output=True, text=True, timeout=60, env=ENV)
    assert "## Launches" in only.stdout and "## Random numbers" not in only.stdout


def test_a_section_kept_from_an_earlier_run_names_that_run():
    earlier = dict(RUN, date="2026-11-20 09:00 UTC", gpu="NVIDIA H200", commit="0123456",
                   versions={"cupy": "14.1", "torch": "2.10"})
    kept = {"meta": earlier, "benchmarks": {
        "nccl": {"status": "ok", "run": earlier,
                 "table": [_bench.row("all_reduce 4 B latency us", "cukit", [12.0], "us")]},
        "random": {"status": "ok", "run": earlier,
                   "table": [_bench.row("uniform float32", "cukit", [1.0], "GB/s")]}}}
    doc = run_all.with_kept(made_up_results(), kept)
    assert doc["benchmarks"]["random"]["table"][0]["median"] == 2921  # measured now: stays
    lines = run_all.page(doc, "performance.json").splitlines()
    at = lines.index("## Many GPUs")
    assert lines[at + 2 + lines[at + 2:].index("") + 1] == (
        "From another run: NVIDIA H200, 2026-11-20, driver 580.65.06, CUDA 13.0, cukit at "
        "0123456, CuPy 14.1, PyTorch 2.10. In this run it was skipped (needs 2 GPUs, this "
        "machine has 1).")
    assert "| all_reduce 4 B latency us | us | 12.0 |" in lines
    assert "| GPU | NVIDIA H100 80GB HBM3 |" in lines  # the page's run is this one


def test_the_committed_page_is_what_run_all_writes_from_its_data():
    docs = BENCH.parent / "docs"
    data = json.loads((docs / "performance.json").read_text())
    assert run_all.page(data, "performance.json") == (docs / "performance.md").read_text()
    assert set(data["benchmarks"]) <= set(run_all.PAGE)


def test_every_benchmark_but_the_emulators_has_a_section():
    assert set(run_all.benchmarks()) - set(run_all.PAGE) == {"emulator"}
    assert list(run_all.PAGE) == [n for n in run_all.PAGE if n in run_all.benchmarks()]


@pytest.mark.skipif(cukit.device_count() == 0 or cukit.backend() != "emulator",
                    reason="on a GPU, --quick measures tiny sizes for nothing")
def test_run_all_writes_the_page_from_a_quick_run_on_the_emulator(tmp_path):
    out = tmp_path / "perf.md"
    r = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--table", "--quick",
                        "--only", "copy,sort,fft,nccl", "--out", str(out),
                        "--results", str(tmp_path / "results"), "--commit", "abc1234"],
                       capture_output=True, text=True, timeout=300, env=ENV)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert f"| GPU | {cukit.Device(0).name} |" in text
    assert "| cukit | %s, commit abc1234 |" % cukit.__version__ in text
    assert "| samples | --quick (tiny sizes: the figures mean nothing) |" in text
    data = json.loads((tmp_path / "perf.json").read_text())
    assert data["benchmarks"]["nccl"]["status"] == "skipped"
    for name in ("copy", "sort", "fft"):
        entry = data["benchmarks"][name]
        assert entry["status"] == "ok", entry.get("reason")
        assert entry["run"] == data["meta"]
        title = run_all.PAGE[name][0]
        section = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
        for r in entry["table"]:
            if "median" in r:
                assert r["case"] in section and _bench.fmt(r["median"]) in section
    assert "No figures: not in this run." in text  # the page's other benchmarks
    assert run_all.page(data, "perf.json") == text


def test_quick_figures_are_not_written_into_the_docs():
    r = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--table", "--quick"],
                       capture_output=True, text=True, timeout=60, env=ENV)
    assert r.returncode == 2 and "--quick measures nothing" in r.stderr


def test_run_all_names_the_benchmarks_when_one_is_unknown(tmp_path):
    r = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--only", "nosuch",
                        "--results", str(tmp_path)], capture_output=True, text=True, timeout=60,
                       env=ENV)
    assert r.returncode == 2
    assert "no benchmark named nosuch" in r.stderr and "random" in r.stderr


def test_warm_up_calls_at_least_the_count_and_for_the_time():
    calls, syncs = [], []
    n = _bench.warm_up(lambda: calls.append(1), sync=lambda: syncs.append(1), calls=3, seconds=0)
    assert n == len(calls) == 3 and syncs
    n = _bench.warm_up(lambda: calls.append(1), calls=1, seconds=0.05)
    assert n == len(calls) - 3 >= 1


@pytest.mark.skipif(cukit.device_count() == 0 or cukit.backend() != "emulator",
                    reason="on a GPU the benchmark measures")
def test_a_gpu_benchmark_skips_itself_on_the_emulator_without_quick():
    r = subprocess.run([sys.executable, str(BENCH / "bench_random.py")], capture_output=True,
                       text=True, timeout=120, env=ENV)
    assert r.returncode == _bench.SKIP_STATUS
    assert "bench_random: skipped: no GPU: cukit runs on its CPU emulator here" in r.stderr


@pytest.mark.parametrize("path", sorted(BENCH.glob("bench_*.py")), ids=lambda p: p.stem)
def test_every_benchmark_takes_reps_quick_and_json(path):
    r = subprocess.run([sys.executable, str(path), "--help"], capture_output=True, text=True,
                       timeout=120, env=ENV)
    assert r.returncode == 0, r.stderr
    for flag in ("--reps", "--quick", "--json"):
        assert flag in r.stdout, flag
    source = path.read_text()
    assert "print_table(" in source and "write_json(" in source  # the shared shape


def test_only_keeps_the_other_benchmarks_of_the_same_gpu(tmp_path):
    path = tmp_path / "results.json"
    assert run_all.earlier_runs(path, "GPU A") == {}
    path.write_text(json.dumps({"meta": {"gpu": "GPU A"},
                                "benchmarks": {"copy": {"status": "ok", "table": []}}}))
    assert list(run_all.earlier_runs(path, "GPU A")) == ["copy"]
    assert run_all.earlier_runs(path, "GPU B") == {}  # another GPU's figures are not mixed in
