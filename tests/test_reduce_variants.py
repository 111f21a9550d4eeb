"""The reduction and scan kernel builds (issue 23).

cukit._cukit._reduce_variant (CUKIT_REDUCE_VARIANT at import) picks a build of the full
reduction, axis-0 and 1-D scan kernels, for timing them side by side
(tools/reduce_variants.py). Every build the tool times, and a few more knob values, must
give numpy's results: data are integers in floats, whose sums are exact in any order, so
every build's result is compared bit for bit; normal data for max/argmax (exact too)."""
import os
import re
import runpy
import subprocess
import sys

import numpy as np
import pytest

import cukit
from conftest import EMULATOR

TOOL = os.path.join(os.path.dirname(__file__), os.pardir, "tools", "reduce_variants.py")
TOOL_VARIANTS = [spec for _, spec in runpy.run_path(TOOL, run_name="reduce_variants")["VARIANTS"]]
# the knobs' ends: one thread's vector a step, 1024 threads, 16 rows, 1- and 32-item tiles
MORE_VARIANTS = ["fu=1,crows=1,sitems=1,sitems8=1", "fnt=1024,fminb=2,fminbm=1,fu=2,fstride=1",
                 "fnt=64,fminb=16,fminbm=16,fgrid=32,crows=16,sitems=32,sitems8=8,smode=1",
                 "fu=3,fgrid=1,sitems=7,sitems8=3,smode=2,ldg=1", "sitems=5,sitems8=5,smode=1,sminb=8,sspin=30",
                 "sitems=32,sitems8=8,smode=0", "sitems=44,sitems8=7,smode=0,srec=1,kept=0",
                 "sitems=64,sitems8=8,smode=2,srec=1,slook=8,kept=0", "sitems=3,smode=0,slook=3",
                 "sitems=7,sitems8=3,slook=2,kept=0", "smode=2,sitems=16,kept=0",
                 "smode=0,sbid=0,shint=0,kept=0", "smode=2,sitems=8,sbid=0,shint=1", "wave=0,crows=2",
                 "slbw=1,sbid=0,kept=0", "slbw=1,smode=2,sitems=16,sitems8=3,sspin=0",
                 "slbw=1,sitems=5,sitems8=1,slook=3,sminb=6", "spre=0,sspin=0", "spre=16,smode=2,sitems=8",
                 "spre=3,sbid=0,slbw=1"]
DEFAULT = ("fnt=256,fu=8,fminb=4,fminbm=2,fgrid=0,fstride=1,crows=4,ldg=0,sitems=32,sitems8=8,"
           "smode=1,sminb=0,sspin=32,srec=1,slook=1,kept=1,sbid=1,shint=1,wave=1,slbw=0,spre=1")


@pytest.fixture
def variant():
    """Sets a build with variant(spec); the default build again afterwards."""
    yield cukit._cukit._reduce_variant
    cukit._cukit._reduce_variant("v0")


def ints(rng, n, dtype, lo=-9, hi=10):
    """Integers in [lo, hi) as dtype, with one more element in front (for an unaligned
    view that drops it)."""
    return rng.integers(lo, hi, n + 1).astype(dtype)


def both(h):
    """The device copy of h[1:] aligned (its own allocation) and as an unaligned view."""
    return [cukit.to_device(h[1:].copy()), cukit.to_device(h)[1:]]


def same(got, want):
    got = got.get() if hasattr(got, "get") else got
    assert np.asarray(got).dtype == np.asarray(want).dtype, (np.asarray(got).dtype, want.dtype)
    assert np.array_equal(got, want), (got, want)


@pytest.mark.parametrize("spec", TOOL_VARIANTS + MORE_VARIANTS)
def test_every_reduce_build_gives_numpys_results(rng, variant, spec):
    now = variant(spec)
    if spec != "v0":
        knobs = dict(kv.split("=") for kv in now.split(","))
        for k, v in (kv.split("=") for kv in spec.split(",")):
            assert knobs[k] == v, now
    # full reductions (the split kernel from 16K elements, its unrolled loop over 1M)
    for n in [0, 1, 3, 4097, 70001, (1 << 20) + 3]:
        for dt in ["f4", "f8"]:
            h = ints(rng, n, dt)
            v = h[1:]
            g = rng.standard_normal(n + 1).astype(dt)
            w = ints(rng, n, dt)
            for d, dn, dw in zip(both(h), both(g), both(w)):
                same(cukit.sum(d), v.sum())
                same(cukit.sum(d, where=cukit.to_device(v > 0)), v.sum(where=v > 0))
                same(cukit.dot(d, dw), np.dot(v, w[1:]))
                if n:
                    same(cukit.max(dn), g[1:].max())
                    same(cukit.argmax(dn), np.int64(g[1:].argmax()))
                    same(cukit.argmin(d), np.int64(v.argmin()))  # ties: the first
                    same(cukit.max(d), v.max())
    # axis 0 of a C-contiguous matrix (the column-vector kernel), and its split
    for shape, dt in [((512, 256), "f4"), ((1000, 96), "f8"), ((37, 64), "f4"), ((4099, 40), "f4")]:
        h = rng.integers(-9, 10, shape).astype(dt)
        same(cukit.sum(cukit.to_device(h), axis=0), h.sum(axis=0))
    # 1-D scans: partial and whole tiles, unaligned views, several widths
    for n in [0, 1, 3, 255, 6143, 6144 * 3 + 5, (1 << 18) + 7]:
        for dt in ["f4", "f8", "i4", "i1"]:
            h = ints(rng, n, dt)
            for d in both(h):
                same(cukit.cumsum(d), np.cumsum(h[1:]))
        h = ints(rng, n, "f4") + 1j * ints(rng, n, "f4")
        for d in both(h.astype("c8")):
            same(cukit.cumsum(d), np.cumsum(h[1:].astype("c8")))
    h = ints(rng, 5000, "i8", 1, 3)
    same(cukit.cumprod(cukit.to_device(h[1:40])), np.cumprod(h[1:40]))


def test_kernels_made_under_one_build_run_under_another(rng, variant):
    """A ScanKernel keeps the tile of the build it was made in; ReductionKernel and the
    numpy-named calls compile each build's kernels apart."""
    variant("sitems=7,sitems8=3,smode=2")
    inc = cukit.ScanKernel(np.int32, "a+b")
    exc = cukit.ScanKernel(np.float64, "a+b", 0, exclusive=True)
    red = cukit.ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "sq")
    x = ints(rng, 50001, "i4")[1:]
    f = ints(rng, 30001, "f8")[1:]
    want_red = np.float64((f * f).sum())
    for spec in ["v0", "sitems=32,sitems8=8,smode=1", "fu=8,fminb=4,fnt=512,fminbm=2"]:
        variant(spec)
        same(inc(cukit.to_device(x), cukit.empty(x.shape, x.dtype)), np.cumsum(x).astype("i4"))
        same(exc(cukit.to_device(f), cukit.empty(f.shape, f.dtype)),
             np.concatenate([[0.0], np.cumsum(f)[:-1]]))
        same(red(cukit.to_device(f)), want_red)
        same(cukit.sum(cukit.to_device(f)), f.sum())


def test_each_build_has_its_own_source(variant):
    sources = set()
    for spec in ["v0", "fu=4", "fgrid=3", "crows=2", "fstride=0", "fnt=512,fminb=2", "ldg=1"]:
        variant(spec)
        sources.add(cukit._cukit._reduce_source("sum", "float32"))
    assert len(sources) == 7
    variant("v0")
    src = cukit._cukit._reduce_source("dot", "float32", "float32")
    assert "#define CK_MINB 2\n" in src and "#define CK_FNT 256\n" in src
    variant("fminbm=3")
    assert "#define CK_MINB 3\n" in cukit._cukit._reduce_source("dot", "float32", "float32")
    assert "#define CK_MINB 4\n" in cukit._cukit._reduce_source("sum", "float32")


def test_reduce_variant_default_and_spec_round_trip(variant):
    assert variant() == DEFAULT
    assert variant("v0") == variant("current") == variant("") == DEFAULT
    assert variant("fu=4,smode=2") == DEFAULT.replace("fu=8", "fu=4").replace("smode=1", "smode=2")
    assert variant(variant("fnt=512,fminb=3,fminbm=2,sitems=16")) == variant()


@pytest.mark.parametrize("spec, words", [
    ("foo=1", "'foo=1' is not knob=value"),
    ("fu", "'fu' is not knob=value"),
    ("fu=17", "fu (vector loads in flight a thread of the full reduction) takes an integer "
              "from 1 to 16, not '17'"),
    ("smode=x", "smode (1-D scan tile: 0 block-staged, 1 warp-staged, 2 in registers) takes an "
                "integer from 0 to 2, not 'x'"),
    ("sitems8=9", "sitems8 (the same for wider sums) takes an integer from 1 to 8, not '9'"),
    ("fnt=100", "fnt must be a multiple of 32"),
    ("fnt=1024", "fnt x fminb is more than an SM's 2048 threads"),
    ("fnt=1024,fminb=2,fminbm=3", "fnt x fminbm is more than an SM's 2048 threads"),
    ("sitems=45", "sitems over 44 needs smode=2 (a staged tile would pass 48 KiB of shared "
                  "memory)"),
    ("sitems=65,smode=2", "sitems (items a thread of a 1-D scan tile (up to 4-byte sums; 44 at "
                          "most when staged)) takes an integer from 1 to 64, not '65'"),
    ("slbw=1,sminb=8", "the 1-D scan's threads (256, 288 with slbw=1) x sminb are more than an SM's 2048"),
    ("slbw=1,smode=0", "slbw=1 needs smode=1 or 2 (a block-staged tile's barriers are the whole "
                       "block's)"),
    ("sminb=9", "sminb (1-D scan's blocks an SM in the launch bounds (0: none)) takes an integer "
                "from 0 to 8, not '9'"),
])
def test_reduce_variant_refuses_bad_specs(variant, spec, words):
    before = variant("crows=8")
    with pytest.raises(ValueError, match=re.escape("cukit._reduce_variant(): " + words)):
        variant(spec)
    assert variant() == before


def test_reduce_variant_from_the_environment():
    code = ("import numpy as np, cukit; x = np.random.default_rng().integers(-9, 9, 90001)"
            ".astype('f4'); d = cukit.to_device(x); assert cukit.sum(d).get() == x.sum(); "
            "assert np.array_equal(cukit.cumsum(d).get(), np.cumsum(x)); "
            "print(cukit._cukit._reduce_variant())")
    env = dict(os.environ, CUKIT_REDUCE_VARIANT="fu=4,fminb=6,smode=0")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0 and r.stdout.strip() == (
        DEFAULT.replace("fu=8,fminb=4", "fu=4,fminb=6").replace("smode=1", "smode=0")), \
        r.stdout + r.stderr
    env["CUKIT_REDUCE_VARIANT"] = "sitems=0"
    r = subprocess.run([sys.executable, "-c", "import cukit"], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 1 and "ValueError: CUKIT_REDUCE_VARIANT: sitems" in r.stderr, r.stderr


@pytest.mark.skipif(not EMULATOR, reason="the tool's smoke test (on a GPU it is a measurement)")
def test_reduce_variants_tool_runs(tmp_path):
    out = tmp_path / "rv.json"
    r = subprocess.run([sys.executable, TOOL, "--quick", "--variants", "v0:v0;A:" + TOOL_VARIANTS[1],
                        "--json", str(out)], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, CUKIT_BACKEND="emulator"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "PROBLEMS" not in r.stdout and "WRONG" not in r.stdout, r.stdout
    assert "best build a case:" in r.stdout and "of copy" in r.stdout, r.stdout
    doc = __import__("json").loads(out.read_text())
    assert set(doc["specs"]) == {"v0", "A"} and doc["problems"] == {"v0": [], "A": []}
    assert len(doc["summary"]) == 7 and all(len(s) == 1 for s in doc["samples"].values())
