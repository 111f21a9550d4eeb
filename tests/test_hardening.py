"""Hardening: a crashing compiler, strict arch strings, text NVRTC would cut, clear
messages for damaged images and cache settings, and the command line's edges.
Each case was found by fuzzing the compile path; none needs a GPU."""
import os
import subprocess
import sys
import threading
import warnings

import pytest

import cukit
from conftest import HAVE_GPU, children
from test_cli import cli, single_error_line

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
# NVRTC 13.0 dies of SIGSEGV on this malformed template instantiated through a name
# expression (the declaration is made by a macro, so cukit's own reader never sees it).
CRASHER = "#define KERNEL(T) template <class T> __global__ void k(&T v) {}\nKERNEL(T)\n"


# ------------------------------------------------------------------ a compiler crash

def test_a_compiler_crash_is_a_compile_error_and_the_process_lives_on(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    prog = cukit.Program(CRASHER, name="crash.cu", name_expressions=["k<int>"])
    try:
        prog.ptx(arch="sm_90")
        pytest.skip("this NVRTC compiles the crashing case")
    except cukit.CompileError as e:
        msg = str(e)
    if "the compiler crashed" not in msg:
        pytest.skip("this NVRTC rejects the crashing case without crashing")
    assert "NVRTC" in msg and "died of signal 11 (SIGSEGV) while compiling crash.cu for compute_90" in msg
    assert "this one is unharmed" in msg
    saved = list(tmp_path.glob("cukit-crash-*.cu"))
    assert len(saved) == 1 and saved[0].read_text() == CRASHER
    assert f"The source is saved in {saved[0]}" in msg
    assert "CUKIT_COMPILE_IN_PROCESS=1 python -c" in msg
    # The process and the compiler still work.
    assert b".entry saxpy" in cukit.Program(SAXPY).ptx(arch="sm_90")


def test_the_reproducer_in_the_message_does_reproduce_the_crash(tmp_path, monkeypatch):
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        pytest.skip("under AddressSanitizer the reproduced NVRTC crash would be reported as ours")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with pytest.raises(cukit.CompileError) as info:
        cukit.Program(CRASHER, name_expressions=["k<int>"]).cubin(arch="sm_90")
    if "the compiler crashed" not in str(info.value):
        pytest.skip("this NVRTC does not crash on the crashing case")
    command = str(info.value).split("To reproduce it in a process of its own:\n")[1].strip()
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(cukit.__file__)))
    proc = subprocess.run(command, shell=True, env=env, capture_output=True, timeout=120)
    assert proc.returncode == -11 or proc.returncode == 128 + 11, proc.stderr


def test_compiles_in_threads_each_get_a_worker():
    out, errors = {}, []

    def compile_one(i):
        try:
            src = SAXPY.replace("saxpy", f"saxpy{i}")
            out[i] = cukit.Program(src).cubin(arch="sm_80")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=compile_one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(out[i][:4] == b"\x7fELF" and f"saxpy{i}".encode() in out[i] for i in range(6))


def test_compile_errors_and_logs_come_back_from_the_worker():
    prog = cukit.Program('extern "C" __global__ void k(float* y) { y[0] = nope; }', name="w.cu")
    with pytest.raises(cukit.CompileError, match=r'w\.cu:1:49: error: identifier "nope" is undefined'):
        prog.cubin(arch="sm_90")
    assert 'identifier "nope" is undefined' in prog.log


def test_in_process_compiles_give_the_same_code(monkeypatch):
    monkeypatch.setenv("CUKIT_CACHE", "0")
    worker = cukit.Program(SAXPY).cubin(arch="sm_90")
    monkeypatch.setenv("CUKIT_COMPILE_IN_PROCESS", "1")
    assert cukit.Program(SAXPY).cubin(arch="sm_90") == worker


def test_a_forked_child_compiles_with_workers_of_its_own():
    cukit.Program(SAXPY + "// before fork\n").ptx(arch="sm_90")  # this process has a worker
    code = ("import os, cukit, sys\n"
            f"src = {SAXPY!r}\n"
            "cukit.Program(src + '// parent').ptx(arch='sm_90')\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    ok = b'.entry saxpy' in cukit.Program(src + '// child').ptx(arch='sm_90')\n"
            "    os._exit(0 if ok else 3)\n"
            "_, status = os.waitpid(pid, 0)\n"
            "ok = b'.entry saxpy' in cukit.Program(src + '// parent again').ptx(arch='sm_90')\n"
            "sys.exit(os.waitstatus_to_exitcode(status) or (0 if ok else 4))\n")
    env = dict(os.environ, CUKIT_CACHE="0",
               PYTHONPATH=os.path.dirname(os.path.dirname(cukit.__file__)))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr


# ------------------------------------------------------------------ arch strings

VALID_FORMS = 'arch must look like "sm_90" (machine code for one GPU), "sm_90a"'


@pytest.mark.parametrize("arch, words", [
    ("sm_4294967386", "is not an architecture"),
    ("sm_99999999999999999999", "is not an architecture"),
    ("sm_90abc", "is not an architecture"),
    ("sm_90a1", "is not an architecture"),
    ("sm_90\0x", "is not an architecture"),
    ("sm_090", "is not an architecture"),
    ("sm_", "is not an architecture"),
    ("hopper", "is not an architecture"),
    ("sm_90f", "asks for an architecture family (the 'f'), which begin with sm_100"),
    ("sm_80a", "asks for architecture-specific features (the 'a'), which begin with sm_90"),
    ("sm_35", "is not one this NVRTC can compile for"),
    ("compute_35", "is not one this NVRTC can compile for"),
])
@pytest.mark.parametrize("output", ["ptx", "cubin"])
def test_arch_strings_are_parsed_strictly(arch, words, output):
    with pytest.raises(ValueError) as info:
        getattr(cukit.Program(SAXPY), output)(arch=arch)
    msg = str(info.value)
    assert f"arch {arch!r} {words}" in msg
    assert VALID_FORMS in msg and '"compute_90" (PTX)' in msg
    assert "this NVRTC supports sm_" in msg and "sm_90" in msg


def test_arch_must_be_a_str():
    with pytest.raises(TypeError, match=r'arch must be a str such as "sm_90", got int'):
        cukit.Program(SAXPY).ptx(arch=90)


@pytest.mark.parametrize("arch", ["sm_90", "sm_90a", "compute_90", "90", "sm_80"])
def test_valid_arch_strings_compile(arch):
    assert b".entry saxpy" in cukit.Program(SAXPY).ptx(arch=arch)


def test_no_arch_without_a_gpu_is_an_error_naming_the_fix():
    if HAVE_GPU:
        pytest.skip("there is a GPU to take the architecture from")
    with pytest.raises(ValueError, match=r'no GPU to take the architecture from; pass arch, e\.g\. arch="sm_90"'):
        cukit.Program(SAXPY).ptx()


# ------------------------------------------------------------------ text NVRTC would cut

@pytest.mark.parametrize("source, where", [
    ("\0" + SAXPY, "line 1, column 1"),
    (SAXPY + "\n  \0 rest", "line 7, column 3"),
])
def test_a_nul_in_the_source_is_refused(source, where):
    with pytest.raises(ValueError, match=rf"the source contains a NUL character \(\\0\) at {where}: "
                                         r"NVRTC reads it as a C string, so everything after it would "
                                         r"be silently dropped; remove it"):
        cukit.Program(source)


def test_a_nul_in_an_option_or_name_expression_is_refused():
    with pytest.raises(ValueError, match=r"an option contains a NUL character"):
        cukit.Program(SAXPY, options=["-DX=1\0-DY"])
    with pytest.raises(ValueError, match=r"a name expression contains a NUL character"):
        cukit.Program(SAXPY, name_expressions=["k<int>\0"])


@pytest.mark.parametrize("name", ["a\nb.cu", "a\rb.cu", "a\0b.cu"])
def test_a_name_must_be_one_line(name):
    with pytest.raises(ValueError, match=r"name must be one line without NUL characters \(it is the "
                                         r"file name NVRTC puts in #line directives"):
        cukit.Program(SAXPY, name=name)


@pytest.mark.parametrize("option", ["-arch=sm_80", "-arch", "--gpu-architecture=compute_90", "-arch=sm_90"])
def test_options_must_not_set_the_architecture(option):
    with pytest.raises(ValueError, match=r"options must not set the architecture .*give it as arch="):
        cukit.Program(SAXPY, options=[option])


# ------------------------------------------------------------------ damaged images

def test_loading_a_bare_elf_magic_says_it_is_truncated():
    with pytest.raises(ValueError, match=r"starts like a cubin \(an ELF file, b'\\x7fELF'\) but is "
                                         r"only 4 bytes, less than an ELF header \(64\): a truncated"):
        cukit.Module.load(b"\x7fELF")


@pytest.mark.parametrize("keep", [100, 0.5])
def test_loading_a_truncated_cubin_says_so(keep):
    cubin = cukit.Program(SAXPY).cubin(arch="sm_90")
    cut = cubin[:keep if isinstance(keep, int) else int(len(cubin) * keep)]
    with pytest.raises(ValueError, match=r"sections of 64 bytes at offset \d+, past its end "
                                         rf"\({len(cut)} bytes\): a truncated or damaged cubin"):
        cukit.Module.load(cut)


def test_loading_a_32_bit_elf_is_not_a_cubin():
    with pytest.raises(ValueError, match=r"not a 64-bit little-endian one, as a cubin is"):
        cukit.Module.load(b"\x7fELF\x01\x01" + b"\0" * 12 + b"\xbe\x00" + b"\0" * 60)


# ------------------------------------------------------------------ the cache's settings

def test_a_cache_folder_too_long_for_a_path_warns(monkeypatch):
    monkeypatch.setenv("CUKIT_CACHE_DIR", "/tmp/" + "x" * 5000)
    with pytest.warns(RuntimeWarning, match=r"CUKIT_CACHE_DIR is 5005 characters long, more than a "
                                            r"path can be here \(\d+\); compiling without the disk cache"):
        cukit.Program(SAXPY + "// long dir\n").cubin(arch="sm_90")
    with pytest.warns(RuntimeWarning, match="CUKIT_CACHE_DIR is 5005 characters long"):
        assert cukit.cache_info()["dir"] == ""


def test_cache_info_with_the_cache_off_does_not_warn_about_the_folder(monkeypatch, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("CUKIT_CACHE_DIR", str(shared))
    monkeypatch.setenv("CUKIT_CACHE", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        info = cukit.cache_info()
    assert info["enabled"] is False and info["dir"] == str(shared) and info["entries"] == 0
    monkeypatch.setenv("CUKIT_CACHE", "1")
    with pytest.warns(RuntimeWarning, match="is not private to this user"):
        cukit.cache_info()


# ------------------------------------------------------------------ the command line

@pytest.fixture
def saxpy_file(tmp_path):
    path = tmp_path / "saxpy.cu"
    path.write_text(SAXPY)
    return path


@pytest.mark.parametrize("option, words", [
    ("--option=-I", "--option=-I has no value: write it in the same argument, e.g. --option=-I=VALUE, or use -I DIR"),
    ("--option=--include-path=", "--option=--include-path= has no value"),
    ("--option=-D", "or use -D NAME[=VALUE]"),
    ("--option=-arch=sm_80", "--option=-arch=sm_80 sets the architecture; use --arch instead, e.g. --arch sm_80"),
    ("--option=--gpu-architecture=sm_80", "sets the architecture; use --arch instead"),
])
def test_cli_refuses_options_that_would_swallow_or_override(saxpy_file, option, words):
    lines = single_error_line(cli("compile", saxpy_file, "--arch", "sm_90", option, "--option=-lineinfo"))
    assert words in lines[0]


def test_cli_version():
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"cukit {cukit.__version__}"


def test_cli_refuses_a_source_with_a_nul(tmp_path):
    path = tmp_path / "nul.cu"
    path.write_text("\0" + SAXPY)
    lines = single_error_line(cli("compile", path, "--arch", "sm_90"))
    assert "the source contains a NUL character (\\0) at line 1, column 1" in lines[0]


def test_cli_reports_a_kernel_without_shared_memory_as_zero(saxpy_file):
    proc = cli("compile", saxpy_file, "--arch", "sm_90")
    assert proc.returncode == 0, proc.stderr
    assert "saxpy.cu: 1 kernel for sm_90 (--arch)" in proc.stdout
    assert "saxpy: " in proc.stdout and " 0 bytes shared (static)" in proc.stdout


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_compiles_run_in_the_worker_program_shipped_beside_the_module(monkeypatch):
    worker = os.path.join(os.path.dirname(cukit._cukit.__file__), "_cukit_worker")
    assert os.access(worker, os.X_OK), "the build puts _cukit_worker beside the extension"
    monkeypatch.setenv("CUKIT_CACHE", "0")
    cukit.Program(SAXPY + "// which process\n").cubin(arch="sm_90")
    assert "_cukit_worker" in [name for name, _, _ in children().values()]
    proc = subprocess.run([worker], capture_output=True, text=True)
    assert proc.returncode == 2 and "not meant to be run by hand" in proc.stderr


# Long enough to compile (seconds: NVRTC optimises each sinf/cosf chain) that the
# worker can be killed in the middle.
SLOW = ("#define A(x) x = x * 1.0001f + sinf(x) * cosf(x);\n"
        "#define B(x) A(x) A(x) A(x) A(x) A(x) A(x) A(x) A(x) A(x) A(x)\n"
        'extern "C" __global__ void slow(float* x) {\n'
        "    float a = x[threadIdx.x]; B(a) B(a) B(a) B(a) x[threadIdx.x] = a;\n}\n")


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_a_worker_killed_mid_compile_is_a_compile_error_and_the_next_compile_works(monkeypatch,
                                                                                   tmp_path):
    import signal
    import time

    monkeypatch.setenv("CUKIT_CACHE", "0")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where the crashed compile's source goes
    cukit.Program(SAXPY + "// a worker first\n").ptx(arch="sm_90")
    outcome = {}

    def compile_slow():
        try:
            cukit.Program(SLOW).cubin(arch="sm_90")
            outcome["result"] = "compiled"
        except cukit.CompileError as e:
            outcome["result"] = str(e)

    t = threading.Thread(target=compile_slow)
    t.start()
    # Every worker, until the compile gives up: a reused worker that dies is given
    # one more try in a new one (it may have died while idle), which dies too.
    deadline = time.monotonic() + 60
    while t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.3)
        for pid, (name, _, _) in children().items():
            if name == "_cukit_worker":
                os.kill(pid, signal.SIGKILL)
    t.join(timeout=300)
    if outcome.get("result") == "compiled":
        pytest.skip("the compile finished before the worker could be killed")
    assert "the compiler crashed: NVRTC" in outcome["result"]
    assert "died of signal 9 (SIGKILL) while compiling kernel.cu for sm_90" in outcome["result"]
    assert b".entry saxpy" in cukit.Program(SAXPY + "// after\n").ptx(arch="sm_90")


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux's /proc")
def test_a_disk_hit_loads_no_nvrtc_and_starts_no_worker(tmp_path):
    """Neither the strict arch check nor the worker may cost a cache hit anything."""
    code = ("import cukit, os\n"
            f"cukit.Program({SAXPY!r}).cubin(arch='sm_90')\n"
            "maps = open('/proc/self/maps').read()\n"
            "kids = open(f'/proc/self/task/{os.getpid()}/children').read().split()\n"
            "print('libnvrtc' in maps, len(kids))\n")
    env = dict(os.environ, CUKIT_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.path.dirname(os.path.dirname(cukit.__file__)))
    run = lambda: subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,  # noqa: E731
                                 text=True, timeout=120)
    first = run()
    assert first.returncode == 0, first.stderr
    assert first.stdout.split()[0] == "True"  # a compile: NVRTC and a worker
    hit = run()
    assert hit.returncode == 0, hit.stderr
    assert hit.stdout.split() == ["False", "0"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_idle_workers_killed_are_replaced_without_a_word(monkeypatch):
    import signal

    monkeypatch.setenv("CUKIT_CACHE", "0")
    cukit.Program(SAXPY + "// keep a worker\n").ptx(arch="sm_90")
    killed = [pid for pid, (name, _, _) in children().items() if name == "_cukit_worker"]
    assert killed
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    # At once: the kills may not have landed yet when the next compile takes a worker.
    assert b".entry saxpy" in cukit.Program(SAXPY + "// right after\n").ptx(arch="sm_90")


# ------------------------------------------------------------------ a worker outliving its caller

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_worker_blocked_in_nvrtc_ends_when_its_caller_is_killed(tmp_path):
    """An #include of a FIFO blocks NVRTC in the worker; killing the user's process
    ends the worker too, so the caller's pipes reach end of file."""
    import signal
    import time

    os.mkfifo(tmp_path / "slow.h")
    code = ("import cukit, sys\nprint('compiling', flush=True)\n"
            "cukit.Program('#include \"slow.h\"\\nextern \"C\" __global__ void k() {}',\n"
            f"              options=['-I{tmp_path}']).ptx(arch='compute_90')\n")
    env = dict(os.environ, CUKIT_CACHE="0",
               PYTHONPATH=os.path.dirname(os.path.dirname(cukit.__file__)))
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "compiling"
        time.sleep(2)  # the worker is blocked opening the FIFO
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=30)  # end of file: no worker holds the pipes
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_cache_entry_replaced_by_a_fifo_is_not_waited_on(tmp_path):
    src = SAXPY.replace("saxpy", f"saxpy_fifo_{os.getpid()}")
    code = (f"import cukit\nprint(len(cukit.Program({src!r}).cubin('sm_90')) > 0)\n")
    env = dict(os.environ, CUKIT_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.path.dirname(os.path.dirname(cukit.__file__)))
    run = lambda: subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,  # noqa: E731
                                 text=True, timeout=120)
    assert run().stdout.strip() == "True"
    (entry,) = [p for p in (tmp_path / "cache").iterdir() if p.name.endswith(".bin")]
    entry.unlink()
    os.mkfifo(entry, 0o600)
    again = run()  # refused as not a regular file and compiled again, not blocked
    assert again.returncode == 0 and again.stdout.strip() == "True", again.stderr
