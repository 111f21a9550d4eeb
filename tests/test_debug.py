"""cukit.debug: capture launches, write reproducers on a fault, replay them (issue 27).

Faults run in a subprocess: a faulted context is lost for the rest of the process."""
import hashlib
import json
import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cukit
from cukit import debug

ROOT = str(pathlib.Path(cukit.__file__).resolve().parent.parent)

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void addto(const int* src, int* dst, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] += src[i] * k;
}
"""

FAULT = r"""
import sys, cukit, numpy as np
mod = cukit.compile('''
extern "C" __global__ void shift(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i + 1];
}''', name="shift.cu")
x = cukit.to_device(np.random.rand(1000).astype(np.float32))
y = cukit.zeros(1000, np.float32)
try:
    with cukit.debug.capture(sys.argv[1]):
        mod.shift(x, y, 999, grid=4, block=256)   # fine
        mod.shift(x, y, 1000, grid=4, block=256)  # reads x[1000]
        y.get()
except cukit.KernelFaultError as e:
    print(str(e))
    sys.exit(3)
"""


# On a GPU a read 4 bytes past an allocation may land in mapped memory; this one does not.
WILD = (FAULT.replace("y[i] = x[i + 1];", "y[(size_t)i * 50000000] = x[i];")
        .replace("shift", "wild"))


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, e.get("PYTHONPATH")]))
    e["CUKIT_BACKEND"] = "emulator"
    return e


def run(args, cwd=None, extra=None):
    e = env()
    e.update(extra or {})
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=e, timeout=300)


@pytest.fixture(scope="module")
def mod():
    return cukit.compile(SAXPY, name="saxpy.cu")


def saxpy_run(mod, rng, path, launches=2, **kw):
    n = 1000
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    dx, dy = cukit.to_device(x), cukit.to_device(y)
    a = [np.float32(rng.random()) for _ in range(launches)]
    with debug.capture(path, **kw) as cap:
        for i in range(launches):
            mod.saxpy(a[i], dx, dy, n, grid=4, block=256)
    want = y.copy()
    for i in range(launches):
        want = a[i] * x + want
    np.testing.assert_allclose(dy.get(), want, rtol=1e-6)
    return cap, x, y, dy


def manifest(path):
    return json.loads((pathlib.Path(path) / "reproducer.json").read_text())


# ------------------------------------------------------------------ fault -> folder -> line

def test_fault_writes_a_reproducer_that_replays_to_the_source_line(tmp_path):
    script = tmp_path / "fault.py"
    script.write_text(FAULT)
    proc = run([script, tmp_path / "cap"], cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    folder = tmp_path / "cap" / "fault-1"
    assert f"saved in {folder}" in proc.stdout
    assert f"python -m cukit replay {folder} --backend emulator" in proc.stdout
    assert "shift (launch 1)" in proc.stdout  # the faulting launch, not the good one before
    m = manifest(folder)
    assert [l["sequence"] for l in m["launches"]] == [1]
    assert "ILLEGAL_ADDRESS" in m["reason"]
    # private, like the cache
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in folder.rglob("*") if p.is_file())
    # replay elsewhere: the folder moved, no user code, a fresh process
    moved = tmp_path / "elsewhere"
    shutil.move(str(folder), moved)
    proc = run(["-m", "cukit", "replay", moved, "--backend", "emulator"], cwd="/")
    assert proc.returncode == 1
    err = proc.stderr
    assert "replaying launch 0 (shift)" in err
    # the emulator names the file as NVRTC wrote it into the PTX (a path where it was made)
    assert re.search(r"in kernel shift, block \(3, 0, 0\), thread \(231, 0, 0\), "
                     r"at \S*shift\.cu:4 ", err), err
    assert "4 bytes past the end of a 4000-byte allocation" in err
    assert "the buffers' addresses: x = 0x" in err
    # the allocation's place is the manifest's line of its region, not the replay's code
    line = int(re.search(r"allocation made at reproducer\.json:(\d+) ", err).group(1))
    assert '"nbytes": 4000' in (moved / "reproducer.json").read_text().splitlines()[line - 1]
    assert "CUKIT_CAPTURE=DIR" not in err  # a replay is not captured: no advice to


HANDLED = r"""
import sys, cukit, numpy as np
mod = cukit.compile('extern "C" __global__ void shift(const float* x, float* y, int n) {'
                    ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i + 1]; }')
x = cukit.to_device(np.random.rand(1000).astype(np.float32))
y = cukit.zeros(1000, np.float32)
with cukit.debug.capture(sys.argv[1]) as cap:
    mod.shift(x, y, 999, grid=4, block=256)
    try:
        mod.shift(x, y, 1000, grid=4, block=256)
    except cukit.KernelFaultError as e:
        print("CAUGHT", "saved in" in str(e))
print("LEFT", cap.folder)
"""


def test_a_fault_handled_inside_the_capture_is_not_raised_again(tmp_path):
    script = tmp_path / "handled.py"
    script.write_text(HANDLED)
    proc = run([script, tmp_path / "cap"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["CAUGHT", "True", "LEFT", str(tmp_path / "cap")]
    assert "Traceback" not in proc.stderr
    assert [l["sequence"] for l in manifest(tmp_path / "cap" / "fault-1")["launches"]] == [1]
    assert [l["sequence"] for l in manifest(tmp_path / "cap")["launches"]] == [0, 1]


def test_replay_from_python_raises_the_fault(tmp_path):
    script = tmp_path / "fault.py"
    script.write_text(FAULT)
    assert run([script, tmp_path / "cap"], cwd=tmp_path).returncode == 3
    code = textwrap.dedent(f"""
        import cukit
        try:
            cukit.debug.replay({str(tmp_path / 'cap' / 'fault-1')!r}, backend="emulator")
        except cukit.KernelFaultError as e:
            print("FAULT", e)
    """)
    proc = run(["-c", code])
    assert "FAULT replaying launch 0 (shift)" in proc.stdout, proc.stderr
    assert re.search(r"at \S*shift\.cu:4 ", proc.stdout)


def test_cukit_capture_env_records_a_whole_program(tmp_path):
    script = tmp_path / "fault.py"
    script.write_text(FAULT.replace("with cukit.debug.capture(sys.argv[1]):", "if True:"))
    proc = run([script, "unused"], cwd=tmp_path, extra={"CUKIT_CAPTURE": str(tmp_path / "env")})
    assert proc.returncode == 3
    assert f"saved in {tmp_path / 'env' / 'fault-1'}" in proc.stdout


def test_a_program_without_fault_under_cukit_capture_writes_its_launches(tmp_path):
    code = textwrap.dedent("""
        import cukit, numpy as np
        m = cukit.compile('extern "C" __global__ void inc(int* x) { x[threadIdx.x] += 1; }')
        x = cukit.to_device(np.arange(64, dtype=np.int32))
        for _ in range(3):
            m.inc(x, grid=1, block=64)
    """)
    proc = run(["-c", code], extra={"CUKIT_CAPTURE": str(tmp_path / "env")})
    assert proc.returncode == 0, proc.stderr
    m = manifest(tmp_path / "env")
    assert len(m["launches"]) == 3
    assert debug.replay(tmp_path / "env").compared == 3


# ------------------------------------------------------------------ correct runs

def test_correct_run_replays_equal(mod, rng, tmp_path):
    cap, x, y, dy = saxpy_run(mod, rng, tmp_path / "cap")
    m = manifest(cap.folder)
    assert [l["sequence"] for l in m["launches"]] == [0, 1]
    first = m["launches"][0]
    # the buffers before the first launch are the data the program put there
    regions = {a["param"]: first["regions"][a["region"]] for a in first["args"] if "region" in a}
    before = (tmp_path / "cap" / regions[1]["before"]).read_bytes()
    assert before == x.tobytes()
    assert (tmp_path / "cap" / regions[2]["before"]).read_bytes() == y.tobytes()
    assert bytes.fromhex(first["args"][3]["value"]) == np.int32(1000).tobytes()
    result = debug.replay(cap.folder)
    assert result and result.first_difference is None
    assert result.launches == [0, 1] and result.compared == 4
    proc = run(["-m", "cukit", "replay", cap.folder, "--launch", "1"])
    assert proc.returncode == 0, proc.stderr
    assert "all outputs are identical to those recorded" in proc.stdout


def test_tampered_output_reports_the_first_difference(mod, rng, tmp_path):
    cap, x, y, dy = saxpy_run(mod, rng, tmp_path / "cap", launches=1)
    folder = pathlib.Path(cap.folder)
    m = manifest(folder)
    launch = m["launches"][0]
    yr = launch["regions"][[a for a in launch["args"] if a["param"] == 2][0]["region"]]
    after = np.frombuffer((folder / yr["after"]).read_bytes(), np.float32).copy()
    recorded = after[17]
    after[17] += 1.0
    after[400] -= 1.0
    data = after.tobytes()
    name = f"data/{hashlib.sha256(data).hexdigest()}.bin"
    (folder / name).write_bytes(data)
    yr["after"] = name
    (folder / "reproducer.json").write_text(json.dumps(m))
    result = debug.replay(folder)
    assert not result
    assert "launch 0 (saxpy), argument 'y': element 17 (float32)" in result.first_difference
    assert f"recorded {np.float32(recorded + 1.0)!r}" in result.first_difference
    assert f"replayed {np.float32(recorded)!r}" in result.first_difference
    assert "2 of 1000 element(s) differ" in result.first_difference
    proc = run(["-m", "cukit", "replay", folder])
    assert proc.returncode == 1
    assert "first difference: launch 0 (saxpy), argument 'y': element 17" in proc.stdout


def test_aliased_arguments_share_one_region(mod, rng, tmp_path):
    n = 512
    base = rng.integers(-100, 100, 2 * n, dtype=np.int32)
    d = cukit.to_device(base)
    with debug.capture(tmp_path / "cap") as cap:
        mod.addto(d[:n], d, n, 3, grid=2, block=256)  # src lies inside dst
    want = base.copy()
    want[:n] += base[:n] * 3
    np.testing.assert_array_equal(d.get(), want)
    launch = manifest(cap.folder)["launches"][0]
    assert len(launch["regions"]) == 1 and launch["regions"][0]["nbytes"] == 8 * n
    assert [a.get("offset") for a in launch["args"][:2]] == [0, 0]
    assert debug.replay(cap.folder).compared == 1


def test_outputs_are_taken_before_other_work_changes_them(mod, rng, tmp_path):
    x = cukit.to_device(rng.integers(0, 9, 300, dtype=np.int32))
    y = cukit.to_device(rng.integers(0, 9, 300, dtype=np.int32))
    with debug.capture(tmp_path / "cap") as cap:
        mod.addto(x, y, 300, 2, grid=2, block=256)
        y += 5                     # the array math, not recorded
        y.set(y.get() * 3)         # a copy
        mod.addto(x, y, 300, 4, grid=2, block=256)
    result = debug.replay(cap.folder)
    assert result, result.first_difference
    assert result.compared == 4


def test_foreign_arrays_and_bare_addresses(mod, rng, tmp_path):
    class Foreign:  # another library's array, seen through __cuda_array_interface__ only
        def __init__(self, a):
            self.a = a
            self.__cuda_array_interface__ = a.__cuda_array_interface__

    x = cukit.to_device(rng.integers(0, 9, 256, dtype=np.int32))
    y = cukit.to_device(rng.integers(0, 9, 256, dtype=np.int32))
    with debug.capture(tmp_path / "cap") as cap:
        mod.addto(Foreign(x), Foreign(y), 256, 3, grid=1, block=256)
        mod.addto(x.ptr, y, 256, 3, grid=1, block=256)
    first, second = manifest(cap.folder)["launches"]
    assert [r["dtype"] for r in first["regions"]] == ["<i4", "<i4"]
    befores = [(tmp_path / "cap" / r["before"]).read_bytes() for r in first["regions"]]
    assert x.get().tobytes() in befores  # x (src) is only read: its bytes then are its bytes now
    assert "argument 1 is an address whose extent is not known" in second["notes"][0]
    assert len(second["regions"]) == 1
    assert debug.replay(cap.folder, launch=0).compared == 2


def test_prepared_launches_are_recorded(mod, rng, tmp_path):
    x = cukit.to_device(rng.integers(0, 50, 300, dtype=np.int32))
    y = cukit.to_device(rng.integers(0, 50, 300, dtype=np.int32))
    run_ = mod.addto.prepare(grid=2, block=256)
    with debug.capture(tmp_path / "cap") as cap:
        run_(x, y, 300, 2)
        run_(x, y, 300, 5)
    m = manifest(cap.folder)
    assert [bytes.fromhex(l["args"][3]["value"]) for l in m["launches"]] == [
        np.int32(2).tobytes(), np.int32(5).tobytes()]
    assert debug.replay(cap.folder)


# ------------------------------------------------------------------ bounds

def test_ring_keeps_the_last_launches(mod, rng, tmp_path):
    cap, *_ = saxpy_run(mod, rng, tmp_path / "ring", launches=7, last=3)
    assert [l["sequence"] for l in manifest(cap.folder)["launches"]] == [4, 5, 6]
    assert debug.replay(cap.folder).compared == 6
    cap, *_ = saxpy_run(mod, rng, tmp_path / "all", launches=7, last=3, every=True)
    assert [l["sequence"] for l in manifest(cap.folder)["launches"]] == list(range(7))


def test_byte_budget(mod, rng, tmp_path):
    # each launch keeps x and y (4000 bytes each) before and after it: 16000 bytes
    cap, *_ = saxpy_run(mod, rng, tmp_path / "small", launches=2, budget=1000)
    m = manifest(cap.folder)
    assert not any(l["data"] for l in m["launches"])
    assert all(any("exceed the capture's budget (1000 bytes)" in n for n in l["notes"])
               for l in m["launches"])
    result = debug.replay(cap.folder)
    assert result.launches == [] and len(result.skipped) == 2
    assert "recorded without their data" in result.summary()
    # room for two launches' data, not five: the oldest go
    cap, *_ = saxpy_run(mod, rng, tmp_path / "ring", launches=5, budget=40000, last=100)
    seqs = [l["sequence"] for l in manifest(cap.folder)["launches"]]
    assert seqs == [3, 4]


def test_capture_arguments_and_nesting(tmp_path):
    with pytest.raises(ValueError, match="keep at least 1 launch"):
        debug.capture(tmp_path, last=0)
    with pytest.raises(ValueError, match="a number of bytes"):
        debug.capture(tmp_path, budget=-1)
    with debug.capture(tmp_path / "a"):
        with pytest.raises(RuntimeError, match="is already on; end it first"):
            debug.capture(tmp_path / "b").start()


# ------------------------------------------------------------------ save_launch

def test_save_launch(mod, rng, tmp_path):
    x = rng.integers(-1000, 1000, 777, dtype=np.int32)
    y = rng.integers(-1000, 1000, 777, dtype=np.int32)
    dx, dy = cukit.to_device(x), cukit.to_device(y)
    path = debug.save_launch(mod.addto, dx, dy, 777, 7, grid=4, block=256, path=tmp_path / "bug")
    np.testing.assert_array_equal(dy.get(), y + 7 * x)
    m = manifest(path)
    assert len(m["launches"]) == 1 and m["launches"][0]["grid"] == [4, 1, 1]
    assert (pathlib.Path(path) / m["kernels"][0]["source"]).read_text() == SAXPY
    assert debug.replay(path).compared == 2
    assert not (pathlib.Path(path) / ".partial").exists()


def test_machine_code_is_replaced_by_ptx_with_line_information(mod, rng, tmp_path, monkeypatch):
    # On a GPU the module holds a cubin: the recorder compiles the kernel's source again
    # to PTX with line information, which the emulator and any GPU can run.
    monkeypatch.setattr(debug, "_is_ptx", lambda image: False)
    cap, *_ = saxpy_run(mod, rng, tmp_path / "cap", launches=1)
    k = manifest(cap.folder)["kernels"][0]
    assert k["cubin"] is None and k["ptx"] == "kernels/0.ptx"
    ptx = (pathlib.Path(cap.folder) / k["ptx"]).read_text()
    assert ".target sm_90" in ptx or ".target sm_" in ptx
    assert ".loc" in ptx  # line information
    assert debug.replay(cap.folder).compared == 2


def test_launches_into_a_graph_capture_are_not_recorded(mod, rng, tmp_path):
    x = cukit.to_device(rng.integers(0, 9, 256, dtype=np.int32))
    y = cukit.to_device(rng.integers(0, 9, 256, dtype=np.int32))
    want = y.get() + 2 * x.get()
    s = cukit.Stream()
    with debug.capture(tmp_path / "cap") as cap:
        with s.capture() as g:
            mod.addto(x, y, 256, 2, grid=1, block=256, stream=s)
        g.launch(s)
        s.synchronize()
    np.testing.assert_array_equal(y.get(), want)
    assert manifest(cap.folder)["launches"] == []


# ------------------------------------------------------------------ bad folders

@pytest.fixture
def good(mod, rng, tmp_path):
    cap, *_ = saxpy_run(mod, rng, tmp_path / "good", launches=1)
    return pathlib.Path(cap.folder)


def edit(folder, change):
    m = manifest(folder)
    change(m)
    (folder / "reproducer.json").write_text(json.dumps(m))


def y_after(m):
    return m["launches"][0]["regions"][-1]


BAD = {
    "no manifest": (lambda f: (f / "reproducer.json").unlink(), "no reproducer.json"),
    "not json": (lambda f: (f / "reproducer.json").write_text("{ nope"), "is not valid JSON"),
    "other format": (lambda f: edit(f, lambda m: m.update(format="x")), "is not a cukit reproducer"),
    "newer version": (lambda f: edit(f, lambda m: m.update(version=99)),
                      "format version 99 is newer than this cukit reads"),
    "no launches": (lambda f: edit(f, lambda m: m.pop("launches")), "must have lists"),
    "bad kernel index": (lambda f: edit(f, lambda m: m["launches"][0].update(kernel=5)),
                         "launches[0].kernel must index 'kernels'"),
    "bad grid": (lambda f: edit(f, lambda m: m["launches"][0].update(grid=[0, 1, 1])),
                 "grid and .block must be lists of 3 positive ints"),
    "bad shared": (lambda f: edit(f, lambda m: m["launches"][0].update(shared_mem=-4)),
                   "shared_mem must be an int >= 0"),
    "arg size": (lambda f: edit(f, lambda m: m["launches"][0]["args"][3].update(value="00")),
                 "has 1 bytes; the kernel's parameter 4 has 4"),
    "arg not hex": (lambda f: edit(f, lambda m: m["launches"][0]["args"][3].update(value="zz")),
                    "value is not hex"),
    "bad region": (lambda f: edit(f, lambda m: m["launches"][0]["args"][1].update(region=9)),
                   "names a region or offset that does not exist"),
    "data missing": (lambda f: [p.unlink() for p in (f / "data").iterdir()],
                     "which is missing"),
    "data changed": (lambda f: [p.write_bytes(p.read_bytes()[::-1]) for p in (f / "data").iterdir()],
                     "does not match its checksum"),
    "data path": (lambda f: edit(f, lambda m: y_after(m).update(after="../../etc/passwd")),
                  "not a data file"),
    "size mismatch": (lambda f: edit(f, lambda m: y_after(m).update(nbytes=12)),
                      "says 12 bytes but data/"),
    "code missing": (lambda f: (f / "kernels" / "0.ptx").unlink(), "kernels/0.ptx, which is missing"),
    "no code": (lambda f: edit(f, lambda m: m["kernels"][0].update(ptx=None)), "has no code to load"),
    "code changed": (lambda f: (f / "kernels" / "0.ptx").write_bytes(b"garbage"),
                     "kernels/0.ptx does not match its checksum"),
    "no such kernel": (lambda f: edit(f, lambda m: m["kernels"][0].update(symbol="nope")),
                       "its code has no kernel 'nope'"),
    "no before data": (lambda f: edit(f, lambda m: y_after(m).update(before=None)),
                       "has no 'before' data, which a launch recorded with its data needs"),
    "huge region without data": (lambda f: edit(f, lambda m: y_after(m).update(
        nbytes=1 << 62, before=None, after=None)), "has no 'before' data"),
    "deeply nested": (lambda f: (f / "reproducer.json").write_text("[" * 100000 + "]" * 100000),
                      "is nested too deeply"),
    "data linked out": (lambda f: [(p.unlink(), p.symlink_to("/etc/hostname"))
                                   for p in (f / "data").iterdir()],
                        "a symbolic link (not followed: a reproducer's files"),
    "data folder linked out": (lambda f: (shutil.move(str(f / "data"), str(f.parent / "d")),
                                          (f / "data").symlink_to(f.parent / "d")),
                               "a symbolic link (not followed: a reproducer's files"),
    "manifest linked out": (lambda f: (shutil.move(str(f / "reproducer.json"), str(f.parent / "m")),
                                       (f / "reproducer.json").symlink_to(f.parent / "m")),
                            "a symbolic link (not followed: a reproducer's files"),
    "a FIFO for data": (lambda f: [(p.unlink(), os.mkfifo(p)) for p in (f / "data").iterdir()],
                        "which is not a regular file"),
    "param out of range": (lambda f: edit(f, lambda m: m["launches"][0]["args"][0].update(param=7)),
                           "args[0].param must index the kernel's parameters"),
    "params not a list": (lambda f: edit(f, lambda m: m["kernels"][0].update(params=3)),
                          "params must be [[type, name or null], ...]"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_folder_gives_a_clear_error(good, case):
    damage, words = BAD[case]
    damage(good)
    with pytest.raises(debug.ReproducerError, match=words.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        debug.replay(good)


def test_missing_and_non_folder_paths(tmp_path):
    with pytest.raises(debug.ReproducerError, match="no such folder"):
        debug.replay(tmp_path / "nothing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(debug.ReproducerError, match="not a folder"):
        debug.replay(tmp_path / "file")


def test_cli_bad_manifests_say_cannot_replay(good):
    """The cases that once ended in a traceback: a message, exit status 1."""
    edit(good, lambda m: y_after(m).update(nbytes=1 << 62, before=None, after=None))
    proc = run(["-m", "cukit", "replay", good])
    assert proc.returncode == 1 and "cannot replay: " in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    (good / "reproducer.json").write_text("{\"a\": " * 50000 + "1" + "}" * 50000)
    proc = run(["-m", "cukit", "replay", good])
    assert proc.returncode == 1 and "cannot replay: " in proc.stderr
    assert "nested too deeply" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_bad_input(good):
    proc = run(["-m", "cukit", "replay", good, "--launch", "4"])
    assert proc.returncode == 1
    assert "cukit: error: cannot replay: " in proc.stderr
    assert "there is no launch 4: the folder has launches 0 to 0" in proc.stderr
    (good / "reproducer.json").write_text("[]")
    proc = run(["-m", "cukit", "replay", good])
    assert proc.returncode == 1 and "is not a cukit reproducer" in proc.stderr
    assert "Traceback" not in proc.stderr
    with pytest.raises(ValueError, match="choose 'emulator' or 'gpu'"):
        debug.replay(good, backend="tpu")


# ------------------------------------------------------------------ on a GPU

@pytest.mark.gpu_hardware
@pytest.mark.unsanitized  # the kernel writes out of bounds on purpose
def test_gpu_fault_replays_on_the_emulator(tmp_path):
    """Record on the GPU, replay on the emulator: the line of the fault."""
    script = tmp_path / "fault.py"
    script.write_text(WILD)
    proc = run([script, tmp_path / "cap"], cwd=tmp_path, extra={"CUKIT_BACKEND": "gpu"})
    assert proc.returncode == 3, proc.stderr
    folder = tmp_path / "cap" / "fault-1"
    assert f"python -m cukit replay {folder} --backend emulator" in proc.stdout
    assert manifest(folder)["backend"] == "gpu"
    proc = run(["-m", "cukit", "replay", folder, "--backend", "emulator"])
    assert proc.returncode == 1
    assert re.search(r"in kernel wild, block \(\d+, 0, 0\), thread \(\d+, 0, 0\), "
                     r"at \S*wild\.cu:4 ", proc.stderr), proc.stderr


def test_wild_write_replays_on_the_emulator(tmp_path):
    """The GPU test's kernel, recorded and replayed on the emulator."""
    script = tmp_path / "fault.py"
    script.write_text(WILD)
    assert run([script, tmp_path / "cap"], cwd=tmp_path).returncode == 3
    proc = run(["-m", "cukit", "replay", tmp_path / "cap" / "fault-1", "--backend", "emulator"])
    assert proc.returncode == 1
    assert re.search(r"in kernel wild, block \(\d+, 0, 0\), thread \(\d+, 0, 0\), "
                     r"at \S*wild\.cu:4 ", proc.stderr), proc.stderr


@pytest.mark.gpu_hardware
def test_gpu_capture_of_integer_kernels_replays_equal_on_the_emulator(tmp_path):
    code = textwrap.dedent(f"""
        import sys, cukit, numpy as np
        mod = cukit.compile({SAXPY!r})
        rng = np.random.default_rng()
        x = cukit.to_device(rng.integers(-1000, 1000, 5000, dtype=np.int32))
        y = cukit.to_device(rng.integers(-1000, 1000, 5000, dtype=np.int32))
        with cukit.debug.capture(sys.argv[1]):
            for k in range(5):
                mod.addto(x, y, 5000, k, grid=20, block=256)
    """)
    proc = run(["-c", code, tmp_path / "cap"], extra={"CUKIT_BACKEND": "gpu"})
    assert proc.returncode == 0, proc.stderr
    for backend in ("gpu", "emulator"):
        proc = run(["-m", "cukit", "replay", tmp_path / "cap", "--backend", backend])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "compared 10 output buffer(s)" in proc.stdout
        assert "all outputs are identical to those recorded" in proc.stdout


# ------------------------------------------------------------------ the writer's safety

def saxpy_capture(path, extra=None):
    """A subprocess that captures one good launch into path; its result."""
    code = textwrap.dedent(f"""
        import cukit, numpy as np
        m = cukit.compile('extern "C" __global__ void inc(int* x) {{ x[threadIdx.x] += 1; }}')
        x = cukit.to_device(np.arange(64, dtype=np.int32))
        with cukit.debug.capture({str(path)!r}) as cap:
            m.inc(x, grid=1, block=64)
        print("FOLDER", cap.folder)
    """)
    return run(["-c", code], extra=extra)


def test_a_link_planted_in_the_folder_is_replaced_not_written_through(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    victim.chmod(0o644)
    cap = tmp_path / "cap"
    cap.mkdir(mode=0o700)
    (cap / "reproducer.json").symlink_to(victim)
    (cap / "data").symlink_to(tmp_path)  # a folder link: refused, not followed
    proc = saxpy_capture(cap)
    assert victim.read_text() == "keep me" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert "data (in the capture folder): it is a symbolic link (not followed)" in proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    (cap / "data").unlink()
    proc = saxpy_capture(cap)
    assert proc.returncode == 0 and f"FOLDER {cap}" in proc.stdout, proc.stderr
    assert not (cap / "reproducer.json").is_symlink() and manifest(cap)["launches"]
    assert victim.read_text() == "keep me"


def test_a_fault_folder_planted_as_a_link_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    cap = tmp_path / "cap"
    cap.mkdir(mode=0o700)
    (cap / "fault-1").symlink_to(elsewhere)
    script = tmp_path / "fault.py"
    script.write_text(FAULT)
    proc = run([script, cap], cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "the reproducer could not be written" in proc.stdout
    assert "fault-1 (in the capture folder): it is a symbolic link (not followed)" in proc.stdout
    assert list(elsewhere.iterdir()) == [] and stat.S_IMODE(elsewhere.stat().st_mode) == 0o755


@pytest.mark.parametrize("case", ["a link", "others can write", "a file", "under /proc"])
def test_a_capture_that_cannot_be_written_says_so_once_at_the_start(tmp_path, case):
    target = tmp_path / "target"
    target.mkdir(mode=0o755)
    path = {"a link": tmp_path / "link", "others can write": tmp_path / "open",
            "a file": tmp_path / "file", "under /proc": pathlib.Path("/proc/cukit-capture")}[case]
    if case == "a link":
        path.symlink_to(target)
    elif case == "others can write":
        path.mkdir()
        path.chmod(0o777)
    elif case == "a file":
        path.write_text("x")
    proc = saxpy_capture(path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("cukit.debug.capture records nothing: cannot write reproducers to") == 1
    assert proc.stdout.strip() == "FOLDER None"
    assert stat.S_IMODE(target.stat().st_mode) == 0o755 and list(target.iterdir()) == []
    if case == "others can write":
        assert "other users can write to it" in proc.stderr
        assert stat.S_IMODE(path.stat().st_mode) == 0o777
    # CUKIT_CAPTURE: one line, the program runs
    code = "import cukit, numpy as np; print((cukit.arange(3) + 1).get().sum())"
    proc = run(["-c", code], extra={"CUKIT_CAPTURE": str(path)})
    assert proc.returncode == 0 and proc.stdout.split() == ["6"], proc.stderr
    lines = [l for l in proc.stderr.splitlines() if "CUKIT_CAPTURE" in l]
    assert len(lines) == 1 and "records nothing" in lines[0]
    with pytest.raises(OSError, match="save_launch cannot write a reproducer to"):
        debug.save_launch(cukit.compile('extern "C" __global__ void k() {}').k,
                          grid=1, block=1, path=path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: gives the folder to another user")
def test_a_folder_another_user_owns_is_refused(tmp_path):
    cap = tmp_path / "cap"
    cap.mkdir(mode=0o700)
    os.chown(cap, 65534, 65534)
    proc = saxpy_capture(cap)
    assert proc.returncode == 0 and "another user owns it" in proc.stderr
    assert list(cap.iterdir()) == []
