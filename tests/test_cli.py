"""python -m cukit: info and compile, run as a user would, in a subprocess. No GPU needed."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

import cukit
from cukit.__main__ import parse_ptxas
from conftest import HAVE_GPU

SRC = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    __shared__ float tile[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x % 64] = x[i];
    __syncthreads();
    if (i < n) y[i] = a * tile[(threadIdx.x + 1) % 64] + y[i] * SCALE;
}
namespace ns { __global__ void fill(double* q) { q[threadIdx.x] = 1.0; } }
"""
# 64 live floats in 16 registers must spill.
SPILLS = r"""
extern "C" __global__ void heavy(const float* x, float* y, int n) {
    float acc[64];
    #pragma unroll
    for (int j = 0; j < 64; j++) acc[j] = x[threadIdx.x + j * n];
    float s = 0;
    #pragma unroll
    for (int j = 0; j < 64; j++) s += acc[j] * acc[63 - j] * acc[(j * 7) % 64];
    y[threadIdx.x] = s;
}
"""
REPORT = re.compile(r"(\S+(?: \[\S+\])?): (\d+) registers, (\d+) bytes shared \(static\), "
                    r"(\d+) bytes spill stores, (\d+) bytes spill loads, (\d+) bytes stack")


def cli(*args, cwd=None):
    """Run `python -m cukit ARGS` with this cukit; returns the CompletedProcess."""
    env = dict(os.environ)
    root = str(pathlib.Path(cukit.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "cukit", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)


def report(stdout):
    return {m.group(1): tuple(map(int, m.groups()[1:])) for m in REPORT.finditer(stdout)}


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "saxpy.cu"
    path.write_text(SRC)
    return path


def single_error_line(proc):
    assert proc.returncode == 1, proc
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines and lines[0].startswith("cukit: error: ")
    return lines


# ------------------------------------------------------------------ info

def test_info():
    proc = cli("info")
    assert proc.returncode == 0, proc.stderr
    major, minor = cukit.nvrtc_version()
    assert f"NVRTC      {major}.{minor}, machine code for sm_" in proc.stdout
    assert "nvJitLink" in proc.stdout and "driver" in proc.stdout
    if HAVE_GPU and cukit.backend() == "emulator":  # no driver claimed where none is used
        assert "driver     not used: CUKIT_BACKEND=emulator" in proc.stdout or \
            "driver     none: " in proc.stdout
        assert "supports CUDA" not in proc.stdout
        assert "devices    cukit's CPU emulator" in proc.stdout
        assert "device 0   cukit emulator" in proc.stdout
    elif HAVE_GPU:
        dev = cukit.Device(0)
        assert "driver     supports CUDA {}.{}".format(*cukit.driver_version()) in proc.stdout
        assert f"device 0   {dev.name}" in proc.stdout
        assert "compute capability           {}.{} ({})".format(*dev.compute_capability, dev.arch) \
            in proc.stdout
        assert f"multiprocessors              {dev.multiprocessor_count}" in proc.stdout
        for row in ("memory", "max threads per block", "shared memory per block"):
            assert row in proc.stdout
    else:
        assert "devices    none" in proc.stdout


# ------------------------------------------------------------------ compile

def test_compile_prints_each_kernels_resources(source):
    proc = cli("compile", source, "--arch", "sm_90", "-DSCALE=2.0f")
    assert proc.returncode == 0, proc.stderr
    assert "saxpy.cu: 2 kernels for sm_90 (--arch)" in proc.stdout
    kernels = report(proc.stdout)
    regs, shared, stores, loads, stack = kernels["saxpy"]
    assert 0 < regs <= 255
    assert shared == 64 * 4
    assert (stores, loads, stack) == (0, 0, 0)
    assert "ns::fill [_ZN2ns4fillEPd]" in kernels  # C++ kernels by source name and symbol


def test_compile_reports_every_time(source):
    # NVRTC 13 caches compiles where a driver exists; a cached cubin has no ptxas report.
    for _ in range(2):
        proc = cli("compile", source, "--arch", "sm_90", "-DSCALE=3")
        assert proc.returncode == 0, proc.stderr
        assert "saxpy" in report(proc.stdout)


def test_compile_reports_spills(tmp_path):
    path = tmp_path / "heavy.cu"
    path.write_text(SPILLS)
    proc = cli("compile", path, "--arch", "sm_90", "--option=-maxrregcount=16")
    assert proc.returncode == 0, proc.stderr
    regs, shared, stores, loads, stack = report(proc.stdout)["heavy"]
    assert regs <= 24 and stores > 0 and loads > 0 and stack > 0


def test_compile_default_arch(source):
    proc = cli("compile", source, "-D", "SCALE=1")
    if not HAVE_GPU:  # as Program.cubin() without arch: no guess
        lines = single_error_line(proc)
        assert "no GPU to take the architecture from; pass --arch, e.g. --arch sm_90" in lines[0]
        return
    assert proc.returncode == 0, proc.stderr
    assert f"kernels for {cukit.Device(0).arch} (the current GPU's)" in proc.stdout
    assert "saxpy" in report(proc.stdout)


@pytest.mark.parametrize("args, kind", [
    (("-o", "out.cubin"), "cubin"),
    (("-o", "out.ptx"), "ptx"),
    (("--ptx", "-o", "out.bin"), "ptx"),
    (("--cubin", "-o", "out.ptx"), "cubin"),
])
def test_compile_writes_output(source, tmp_path, args, kind):
    proc = cli("compile", source, "--arch", "sm_80", "-DSCALE=1", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = (tmp_path / args[-1]).read_bytes()
    if kind == "cubin":
        assert data[:4] == b"\x7fELF" and b"saxpy" in data
    else:
        assert b".target sm_80" in data and b".entry saxpy" in data
    assert f"wrote {kind} to {args[-1]}" in proc.stdout


def test_compile_to_stdout_sends_the_report_to_stderr(source):
    proc = cli("compile", source, "--arch", "sm_90", "-DSCALE=1", "--ptx", "-o", "-")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("//") and ".entry saxpy" in proc.stdout
    assert "saxpy" in report(proc.stderr)


def test_compile_includes_and_std(tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "scale.h").write_text("#define SCALE 3.0f\n")
    path = tmp_path / "k.cu"
    path.write_text('#include "scale.h"\n#if __cplusplus < 202002L\n#error not c++20\n#endif\n'
                    + SRC)
    proc = cli("compile", path, "--arch", "sm_90", "-I", inc, "--std", "c++20")
    assert proc.returncode == 0, proc.stderr
    assert "saxpy" in report(proc.stdout)


def test_warnings_go_to_stderr(tmp_path):
    path = tmp_path / "w.cu"
    path.write_text('extern "C" __global__ void k(int* a) { int unused = 3; a[0] = 1; }\n')
    proc = cli("compile", path, "--arch", "sm_90")
    assert proc.returncode == 0
    assert "unused" in proc.stderr and "warning" in proc.stderr
    assert "k" in report(proc.stdout)


# ------------------------------------------------------------------ errors

def test_compile_error_is_one_line_then_the_diagnostics(source):
    proc = cli("compile", source, "--arch", "sm_90")  # SCALE is not defined
    lines = single_error_line(proc)
    assert lines[0] == "cukit: error: saxpy.cu did not compile for sm_90"
    assert any('identifier "SCALE" is undefined' in line for line in lines[1:])


@pytest.mark.parametrize("args, words", [
    (("compile", "missing.cu"), "cannot read missing.cu: No such file or directory"),
    (("compile", "SOURCE", "--arch", "sm_999"), "--arch 'sm_999' is not an architecture"),
    (("compile", "SOURCE", "--arch", "hopper"), "use one of sm_"),
    (("compile", "SOURCE", "--arch", "sm_90", "-D", "1BAD"), "-D '1BAD': expected NAME or NAME=VALUE"),
    (("compile", "SOURCE", "--arch", "sm_90", "-DSCALE=1", "--option=-no-such-option"),
     "NVRTC rejected an option"),
    (("compile", "SOURCE", "--arch", "sm_90", "-DSCALE=1", "-o", "no/such/dir/x.cubin"),
     "cannot write no/such/dir"),
])
def test_errors_are_a_single_line(source, tmp_path, args, words):
    args = [str(source) if a == "SOURCE" else a for a in args]
    lines = single_error_line(cli(*args, cwd=tmp_path))
    assert len(lines) == 1, lines
    assert words in lines[0]


def test_not_utf8_source(tmp_path):
    path = tmp_path / "bin.cu"
    path.write_bytes(b"\xff\xfe\x00garbage")
    lines = single_error_line(cli("compile", path))
    assert len(lines) == 1 and "not UTF-8" in lines[0]


@pytest.mark.parametrize("args", [(), ("bogus",), ("compile",), ("compile", "a.cu", "--ptx", "--cubin")])
def test_usage_errors_exit_2(args):
    proc = cli(*args)
    assert proc.returncode == 2
    assert "usage: python -m cukit" in proc.stderr and "Traceback" not in proc.stderr


# ------------------------------------------------------------------ the ptxas log parser

def test_parse_ptxas_log():
    log = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'
ptxas info    : Function properties for _Z1kPf
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]
ptxas info    : Function properties for helper
ptxas         .     4 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'plain' for 'sm_90'
ptxas info    : Function properties for plain
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 6 registers
"""
    assert parse_ptxas(log) == {
        "_Z1kPf": dict(registers=40, shared=1024, stack=16, spill_stores=8, spill_loads=12),
        "plain": dict(registers=6, shared=0, stack=0, spill_stores=0, spill_loads=0),
    }


# ------------------------------------------------------------------ cache


def test_cache_info_and_clear(source, tmp_path, monkeypatch):
    monkeypatch.setenv("CUKIT_CACHE_DIR", str(tmp_path / "kc"))
    assert cli("compile", source, "--arch", "sm_90", "-D", "SCALE=2").returncode == 0
    info = cli("cache", "info")
    assert info.returncode == 0, info.stderr
    assert f"folder     {tmp_path / 'kc'}\n" in info.stdout
    assert "enabled    yes\n" in info.stdout
    assert re.search(r"entries    1 \(\d+(\.\d)? KiB\)", info.stdout)
    cleared = cli("cache", "clear")
    assert cleared.stdout == f"removed 1 entry from {tmp_path / 'kc'}\n"
    assert "entries    0 (0 B)" in cli("cache", "info").stdout


def test_cache_off_is_shown(monkeypatch):
    monkeypatch.setenv("CUKIT_CACHE", "0")
    assert "enabled    no (CUKIT_CACHE=0)" in cli("cache", "info").stdout


def test_cache_needs_an_action():
    proc = cli("cache", "purge")
    assert proc.returncode == 2 and "invalid choice: 'purge'" in proc.stderr


# ------------------------------------------------------------------ warmup

def test_warmup_covers_every_family_of_cukits_own_kernels():
    from cukit import _warmup

    groups = _warmup.family_calls(("float32", "int64"))
    assert set(groups) == set(_warmup.REDUCTIONS) | {"sort", "matmul", "random"}
    assert [w for w, _ in groups["std"]] == ["std(float32)", "std(int64)"]
    assert len(_warmup.common_jobs(("float32",))) > 50  # and the ufuncs, as before


@pytest.mark.gpu  # it compiles and runs kernels: a device (or the emulator) is needed
def test_a_warmed_family_compiles_nothing_in_the_next_process(tmp_path, monkeypatch):
    """std warmed (in a child process of its own, so its passes are cached under its
    name); a later process's first std says no compile, and gets numpy's answer."""
    from cukit import _warmup

    monkeypatch.setenv("CUKIT_CACHE_DIR", str(tmp_path / "cache"))
    seen = []
    assert _warmup.run_groups(("float32",), threads=1, only=["std"],
                              progress=lambda d, t: seen.append((d, t))) == 1
    assert seen == [(1, 1)]
    code = ("import cukit, numpy as np\n"
            "x = np.random.default_rng(5).random(1000).astype(np.float32)\n"
            "print(abs(float(cukit.to_device(x).std().get()) - float(x.std())) < 1e-5)\n")
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(cukit.__file__).resolve().parent.parent))
    env.pop("CUKIT_QUIET", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.split() == ["True"], r.stderr
    assert "cukit: compiling" not in r.stderr
