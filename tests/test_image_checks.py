"""Module.load's checks of images from outside cukit: the static layout checks of cubins
and fatbins (CPU), the fuzz cases that crashed or hung the driver on an H200, replayed,
and the out-of-process check: its worker protocol, crash and hang handling and verdict
cache, driven on the CPU through a small stand-in driver library built here."""
import os
import re
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest

import cukit
from cukit import _cukit
from conftest import children

TESTS = os.path.dirname(os.path.abspath(__file__))
SRC = ('extern "C" __device__ float g[4];\n'
       'extern "C" __global__ void k(float* x) { x[0] = g[1]; }\n')


@pytest.fixture(scope="module")
def cubin():
    return cukit.Program(SRC).cubin(arch="sm_90")


# ------------------------------------------------------------------ a cubin's layout, for editing

class Elf:
    """The fields of a cubin's ELF header and section headers this file edits."""

    def __init__(self, data):
        self.data = bytearray(data)
        self.phoff, self.shoff = struct.unpack_from("<QQ", data, 32)
        self.phnum, = struct.unpack_from("<H", data, 56)
        self.shnum, self.shstrndx = struct.unpack_from("<HH", data, 60)
        names_off = self.section(self.shstrndx)["offset"]
        self.names = {}
        for i in range(self.shnum):
            s = self.section(i)
            start = names_off + s["name"]
            self.names[bytes(data[start:data.index(b"\0", start)]).decode()] = i

    FIELDS = [("name", "I", 0), ("type", "I", 4), ("flags", "Q", 8), ("offset", "Q", 24),
              ("size", "Q", 32), ("link", "I", 40), ("info", "I", 44), ("entsize", "Q", 56)]

    def section(self, i):
        at = self.shoff + 64 * i
        return {f: struct.unpack_from("<" + c, self.data, at + o)[0] for f, c, o in self.FIELDS}

    def set(self, i, field, value):
        _, code, off = next(f for f in self.FIELDS if f[0] == field)
        struct.pack_into("<" + code, self.data, self.shoff + 64 * i + off, value)
        return self

    def index(self, name):
        return self.names[name]

    def bytes(self):
        return bytes(self.data)


def damaged(cubin, edit):
    elf = Elf(cubin)
    edit(elf)
    return elf.bytes()


def with_header(data, offset, fmt, value):
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def load_error(image):
    with pytest.raises(ValueError) as info:
        cukit.Module.load(image)
    return str(info.value)


def test_a_real_cubin_passes_the_static_checks(cubin):
    # The emulator runs PTX only: what it refuses is the kind, not the layout.
    try:
        cukit.Module.load(cubin)
    except cukit.CudaError as e:
        assert "damaged" not in str(e)


RICH = ('#include <cuda_fp16.h>\n'
        'extern "C" __device__ float g[4];\n'
        '__device__ float f(float a) { return a * g[0]; }\n'
        'extern "C" __global__ void k(float* x, __half* h) {\n'
        '    __shared__ float s[64]; s[threadIdx.x] = x[threadIdx.x]; __syncthreads();\n'
        '    x[0] = f(s[1]) + __half2float(h[0]); printf("%f", x[0]); }\n'
        'template <int N> __global__ void t(int* y) { y[N] = N; }\n')


@pytest.mark.parametrize("arch, options", [("sm_80", []), ("sm_90", ["-G"]), ("sm_90", ["-lineinfo"]),
                                           ("sm_90", ["-rdc=true"]), ("sm_120", [])])
def test_real_cubins_of_every_kind_pass_the_static_checks(arch, options):
    # debug sections, line tables, relocatable code, printf, templates: nothing NVRTC
    # makes is refused as damaged
    try:
        image = cukit.Program(RICH, options=options, name_expressions=["t<3>"]).cubin(arch=arch)
    except ValueError as e:
        pytest.skip(f"this NVRTC has no {arch}: {e}")
    try:
        cukit.Module.load(image)
    except cukit.CudaError as e:
        assert "damaged" not in str(e)


def facts(cubin):
    """The numbers of this cubin that the messages quote (they differ between NVRTC
    versions, so they are read from the image, never written here)."""
    e = Elf(cubin)
    symtab = e.section(e.index(".symtab"))
    return dict(n=e.shnum, text=e.index(".text.k"), strtab=e.index(".strtab"),
                symtab=e.index(".symtab"), names=e.section(e.shstrndx)["size"],
                strings=e.section(symtab["link"])["size"], symsize=symtab["size"],
                nsyms=symtab["size"] // 24, rela=e.index(".rela.nv.constant4"),
                relasize=e.section(e.index(".rela.nv.constant4"))["size"])


# each case: the damage, and the message's words with {fact}s of the cubin filled in
ELF_CASES = {
    "section table past the end":
        (lambda c: c[:len(c) // 2], r"sections of 64 bytes at offset \d+, past its end"),
    "section header size":
        (lambda c: with_header(c, 58, "<H", 40), r"section headers of 40 bytes \(a cubin has sections, of 64"),
    "no sections":
        (lambda c: with_header(c, 60, "<H", 0), r"gives 0 section headers of 64 bytes"),
    "program headers past the end":
        (lambda c: with_header(c, 32, "<Q", len(c) - 8), r"program headers of 56 bytes .* past its end"),
    "a program header's bytes past the end":
        (lambda c: with_header(c, Elf(c).phoff + 32, "<Q", 1 << 40),
         r"program header 0 places 1099511627776 bytes at offset \d+, past its end"),
    "a section's bytes past the end":
        (lambda c: damaged(c, lambda e: e.set(e.index(".text.k"), "size", 1 << 50)),
         r"section {text} places 1125899906842624 bytes at offset \d+, past its end"),
    "a section's offset past the end":
        (lambda c: damaged(c, lambda e: e.set(e.index(".strtab"), "offset", len(c) + 1)),
         r"section {strtab} places \d+ bytes at offset \d+, past its end"),
    "a link to no section":
        (lambda c: damaged(c, lambda e: e.set(e.index(".symtab"), "link", 900)),
         r"section {symtab} links to section 900 \(info \d+\), but it has only {n} sections"),
    "a relocation's target section":
        (lambda c: damaged(c, lambda e: e.set(e.index(".rela.debug_frame"), "info", e.shnum)),
         r"links to section {symtab} \(info {n}\), but it has only {n} sections"),
    "section names' index":
        (lambda c: with_header(c, 62, "<H", Elf(c).shnum),
         r"section names are in section {n}, but it has {n} sections"),
    "section names not a string table":
        (lambda c: with_header(c, 62, "<H", Elf(c).index(".symtab")),
         r"section names \(section {symtab}\) are not a string table ending in a NUL byte"),
    "section names without their NUL":
        (lambda c: damaged(c, lambda e: e.data.__setitem__(
            e.section(e.shstrndx)["offset"] + e.section(e.shstrndx)["size"] - 1, ord("x"))),
         r"section names \(section \d+\) are not a string table ending in a NUL byte"),
    "a section's name outside the names":
        (lambda c: damaged(c, lambda e: e.set(4, "name", 100000)),
         r"section 4 has its name at 100000, outside the {names} bytes of section names"),
    "symbol entry size":
        (lambda c: damaged(c, lambda e: e.set(e.index(".symtab"), "entsize", 16)),
         r"symbol table \(section {symtab}\) has {symsize} bytes of 16-byte entries \(24 each"),
    "symbol table size not whole entries":
        (lambda c: damaged(c, lambda e: e.set(e.index(".symtab"), "size", 300)),
         r"symbol table \(section {symtab}\) has 300 bytes of 24-byte entries"),
    "symbol strings not a string table":
        (lambda c: damaged(c, lambda e: e.set(e.index(".symtab"), "link", e.index(".text.k"))),
         r"symbol table \(section {symtab}\) names section {text} for its strings, which is not a string table"),
    "a symbol's section":
        (lambda c: damaged(c, lambda e: struct.pack_into(
            "<H", e.data, e.section(e.index(".symtab"))["offset"] + 24 + 6, 200)),
         r"symbol 1 \(section {symtab}\) has its name at \d+ of {strings} bytes of strings and lies in section 200 of {n}"),
    "a symbol's name":
        (lambda c: damaged(c, lambda e: struct.pack_into(
            "<I", e.data, e.section(e.index(".symtab"))["offset"] + 24, 5000)),
         r"symbol 1 \(section {symtab}\) has its name at 5000 of {strings} bytes"),
    "relocation entry size":
        (lambda c: damaged(c, lambda e: e.set(e.index(".rela.nv.constant4"), "entsize", 16)),
         r"relocation section {rela} has {relasize} bytes of 16-byte entries \(24 each"),
    "relocation symbols not a symbol table":
        (lambda c: damaged(c, lambda e: e.set(e.index(".rela.nv.constant4"), "link", e.index(".strtab"))),
         r"relocation section {rela} .* names section {strtab}, not a symbol table"),
    "a relocation's symbol":
        (lambda c: damaged(c, lambda e: struct.pack_into(
            "<I", e.data, e.section(e.index(".rela.nv.constant4"))["offset"] + 12, 99)),
         r"relocation 0 in section {rela} names symbol 99, but its symbol table has {nsyms}"),
}


@pytest.mark.parametrize("case", sorted(ELF_CASES))
def test_a_damaged_cubin_is_refused_before_the_driver_sees_it(cubin, case):
    make, words = ELF_CASES[case]
    image = make(cubin)
    msg = load_error(image)
    assert msg.startswith("Module.load: the bytes given cannot be loaded: it ")
    assert msg.endswith(": a truncated or damaged cubin; rebuild it"), msg
    words = words.format(**facts(cubin))
    assert re.search(words, msg), (words, msg)


# ------------------------------------------------------------------ fatbins, built by hand

def entry(payload, kind=1, header=64):
    """One fatbin entry: u16 kind, u16 version, u32 header size, u64 payload size, then
    the rest of its header (zeros here) and the payload."""
    return struct.pack("<HHIQ", kind, 0x101, header, len(payload)) + bytes(header - 16) + payload


def fatbin(*entries, size=None, header=16):
    body = b"".join(entries)
    return (struct.pack("<IHHQ", 0xBA55ED50, 1, header, len(body) if size is None else size)
            + bytes(header - 16) + body)


PTX = b".version 8.0\n.target sm_90\n.address_size 64\n\0\0\0\0"

FATBIN_CASES = {
    "shorter than its header": (fatbin(entry(PTX))[:15], r"only 15 bytes, less than a fatbin's header \(16\)"),
    "header size below 16": (fatbin(entry(PTX), header=16)[:6] + b"\x08\x00" + fatbin(entry(PTX))[8:],
                             r"header \(8 bytes, at least 16\)"),
    "entries past the end": (fatbin(entry(PTX), size=1000), r"says 1000 bytes of entries follow it, past its end"),
    "no entries": (fatbin(), r"no entries \(its header says 0 bytes follow\)"),
    "a truncated entry header": (fatbin(entry(PTX), b"\x01\x00\x01\x01\x40"),
                                 r"entry 1 at offset 128 has only 5 bytes left for its header \(at least 16\)"),
    "an entry header size of 0 (a loop that never moves)":
        (fatbin(entry(PTX)[:4] + b"\0\0\0\0" + entry(PTX)[8:]), r"entry 0 at offset 16 \(a 0-byte header"),
    "an entry's code past the end":
        (fatbin(entry(PTX)[:8] + struct.pack("<Q", 1 << 40) + entry(PTX)[16:]),
         r"entry 0 at offset 16 \(a 64-byte header, at least 16, and 1099511627776 bytes of code\) runs past"),
}


@pytest.mark.parametrize("case", sorted(FATBIN_CASES))
def test_a_damaged_fatbin_is_refused_before_the_driver_sees_it(case):
    image, words = FATBIN_CASES[case]
    msg = load_error(image)
    assert msg.startswith("Module.load: the bytes given cannot be loaded: it ")
    assert msg.endswith("fatbin; rebuild it"), msg
    assert re.search(words, msg), msg


def test_a_consistent_fatbin_passes_the_static_checks(tmp_path):
    image = fatbin(entry(PTX), entry(b"\x7fELF" + bytes(60), kind=2, header=72))
    path = tmp_path / "k.fatbin"
    path.write_bytes(image + b"trailing bytes after the container are not its concern")
    for given in (image, str(path)):
        try:
            cukit.Module.load(given)
        except (ValueError, cukit.CudaError) as e:
            assert "damaged" not in str(e), e


# ------------------------------------------------------------------ the fuzz cases found on an H200

# seed 16 of the `load` target: the driver crashed (SIGSEGV) on the first six, hung on the rest
DRIVER_CRASHES = [79, 127, 140, 156, 280, 357]
DRIVER_HANGS = [78, 150, 167, 120]


def replay(index):
    sys.path.insert(0, TESTS)
    from fuzz import case_rng
    from fuzz.targets import TARGETS
    spec = TARGETS["load"]
    spec.setup()
    try:
        spec.index = index
        data = spec.make(case_rng(16, "load", index))
        with pytest.raises(spec.allowed) as info:
            spec.check(data)
        return info.value
    finally:
        spec.teardown() if hasattr(spec, "teardown") else None


@pytest.mark.parametrize("index", DRIVER_CRASHES + DRIVER_HANGS)
def test_the_cases_that_broke_the_driver_are_refused(index):
    err = replay(index)
    assert isinstance(err, ValueError)
    assert "cannot be loaded" in str(err) and "damaged" in str(err), err


@pytest.mark.gpu_hardware
@pytest.mark.parametrize("index", DRIVER_CRASHES + DRIVER_HANGS)
def test_the_cases_that_broke_the_driver_are_refused_on_the_gpu(index):
    # In a process of its own: should the driver still crash or hang, this test fails
    # and the suite goes on.
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {TESTS!r})
        from fuzz import case_rng
        from fuzz.targets import TARGETS
        spec = TARGETS["load"]
        spec.setup()
        spec.index = {index}
        try:
            spec.check(spec.make(case_rng(16, "load", {index})))
            print("loaded")
        except spec.allowed as e:
            print("refused", type(e).__name__, e)
        """)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=150)
    except subprocess.TimeoutExpired:
        pytest.fail(f"case {index} still hangs the process that loads it")
    assert out.returncode == 0, f"case {index}: exit {out.returncode}\n{out.stderr[-2000:]}"
    assert out.stdout.startswith("refused ValueError"), out.stdout + out.stderr[-2000:]


# ------------------------------------------------------------------ the out-of-process check

STAND_IN = r"""
/* A stand-in for the CUDA driver's few entry points the image check uses: it crashes,
 * hangs or refuses by the image's first bytes, so the check's handling of each can
 * be run on a machine without a GPU. */
#include <signal.h>
#include <string.h>
#include <unistd.h>
typedef int CUresult;
CUresult cuInit(unsigned f) { (void)f; return 0; }
CUresult cuDeviceGet(int *d, int o) { *d = o; return o == 0 ? 0 : 101; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = (void *)1; return 0; }
CUresult cuCtxSetCurrent(void *c) { (void)c; return 0; }
CUresult cuModuleLoadData(void **m, const void *image) {
    const char *s = image;
    if (strncmp(s, "CRASH", 5) == 0) raise(SIGSEGV);
    if (strncmp(s, "ABORT", 5) == 0) _exit(7);
    if (strncmp(s, "HANG", 4) == 0) for (;;) pause();
    if (strncmp(s, "BAD", 3) == 0) return 200;
    *m = (void *)1;
    return 0;
}
CUresult cuModuleUnload(void *m) { (void)m; return 0; }
CUresult cuGetErrorName(CUresult r, const char **n) {
    *n = r == 200 ? "CUDA_ERROR_INVALID_IMAGE" : "CUDA_ERROR_INVALID_DEVICE";
    return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("needs a C compiler to build the stand-in driver library")
    d = tmp_path_factory.mktemp("driver")
    (d / "driver.c").write_text(STAND_IN)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(d / "libcuda-stand-in.so"), str(d / "driver.c")],
                   check=True)
    return str(d / "libcuda-stand-in.so")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUKIT_CACHE", raising=False)
    monkeypatch.delenv("CUKIT_IMAGE_CHECK_TIMEOUT", raising=False)
    return tmp_path / "cache"


def markers(folder):
    return sorted(p for p in os.listdir(folder) if p.endswith(".image")) if folder.exists() else []


def test_an_image_the_driver_loads_is_checked_once(driver, cache):
    image = os.urandom(8).hex().encode() + b" loads"
    before = _cukit._image_checks()
    assert _cukit._image_check(image, driver, 0, "driver 1; device 0") is None
    assert _cukit._image_checks() == before + 1
    assert len(markers(cache)) == 1
    # the same bytes again: remembered in this process, no worker
    _cukit._image_check(image, driver, 0, "driver 1; device 0")
    assert _cukit._image_checks() == before + 1
    # another driver version or device is another verdict
    _cukit._image_check(image, driver, 0, "driver 2; device 0")
    assert _cukit._image_checks() == before + 2
    assert len(markers(cache)) == 2


def test_a_verdict_on_disk_spares_the_next_process_the_check(driver, cache):
    image = os.urandom(8).hex().encode() + b" loads"
    _cukit._image_check(image, driver, 0, "id")
    code = (f"from cukit import _cukit; _cukit._image_check({image!r}, {driver!r}, 0, 'id'); "
            "print(_cukit._image_checks())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"
    assert cukit.clear_cache() >= 1 and markers(cache) == []  # clear_cache removes the markers
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


def test_without_the_disk_cache_verdicts_stay_in_the_process(driver, cache, monkeypatch):
    monkeypatch.setenv("CUKIT_CACHE", "0")
    _cukit._image_check(os.urandom(8).hex().encode(), driver, 0, "id")
    assert markers(cache) == []


def test_a_driver_error_lets_the_load_here_report_it(driver, cache):
    # the driver refused the image cleanly: no exception from the check, and remembered
    image = b"BAD " + os.urandom(8).hex().encode()
    before = _cukit._image_checks()
    _cukit._image_check(image, driver, 0, "id")
    _cukit._image_check(image, driver, 0, "id")
    assert _cukit._image_checks() == before + 1


def test_a_failure_before_the_load_is_no_verdict(driver, cache):
    image = os.urandom(8).hex().encode()
    before = _cukit._image_checks()
    _cukit._image_check(image, driver, 5, "id")  # cuDeviceGet refuses device 5
    _cukit._image_check(image, driver, 5, "id")
    assert _cukit._image_checks() == before + 2
    assert markers(cache) == []


def test_a_driver_crash_is_a_value_error(driver, cache):
    image = b"CRASH " + os.urandom(8).hex().encode()
    before = _cukit._image_checks()
    for _ in range(2):  # a bad verdict is not remembered as a good one
        with pytest.raises(ValueError, match=r"^Module.load: the bytes given cannot be loaded: the "
                                             r"CUDA driver crashed \(SIGSEGV\) while loading it in a "
                                             r"separate process \(the image is damaged\); rebuild it$"):
            _cukit._image_check(image, driver, 0, "id")
    assert _cukit._image_checks() == before + 2
    assert markers(cache) == []


def test_a_driver_that_ends_the_process_is_a_value_error(driver, cache):
    with pytest.raises(ValueError, match=r"the CUDA driver ended the separate process that was "
                                         r"loading it \(exit status 7\) before answering"):
        _cukit._image_check(b"ABORT", driver, 0, "id")


def test_a_driver_hang_is_a_value_error_after_the_time_limit(driver, cache, monkeypatch):
    monkeypatch.setenv("CUKIT_IMAGE_CHECK_TIMEOUT", "1")
    with pytest.raises(ValueError, match=r"the CUDA driver did not finish loading it within 1 s in a "
                                         r"separate process, which was stopped .*"
                                         r"CUKIT_IMAGE_CHECK_TIMEOUT"):
        _cukit._image_check(b"HANG " + os.urandom(8).hex().encode(), driver, 0, "id")


def test_the_hung_worker_is_killed(driver, cache, monkeypatch):
    monkeypatch.setenv("CUKIT_IMAGE_CHECK_TIMEOUT", "0.5")
    before = set(children())
    with pytest.raises(ValueError, match="did not finish"):
        _cukit._image_check(b"HANG", driver, 0, "id")
    # the image worker is reaped: none is left, running or a zombie (earlier tests of this
    # process may have left compile workers, which are not the check's)
    left = [c for pid, c in children().items() if pid not in before and
            ("--image" in c[2] or (c[1] == "Z" and c[0] == "_cukit_worker"))]
    assert not left, left


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan"])
def test_a_bad_time_limit_is_a_value_error(driver, cache, monkeypatch, value):
    monkeypatch.setenv("CUKIT_IMAGE_CHECK_TIMEOUT", value)
    with pytest.raises(ValueError, match=rf"CUKIT_IMAGE_CHECK_TIMEOUT is '{value}': it must be a "
                                         r"number of seconds above 0 \(the default is 60\)"):
        _cukit._image_check(os.urandom(8).hex().encode(), driver, 0, "id")


def test_a_missing_driver_library_is_a_clean_error(cache, tmp_path):
    missing = str(tmp_path / "libcuda-missing.so")
    with pytest.raises(RuntimeError, match=r"could not be checked in a separate process: the worker "
                                           r"could not use the CUDA driver at '.*libcuda-missing.so' "
                                           r"\(dlopen: .*\); set CUKIT_IMAGE_CHECK=0"):
        _cukit._image_check(b"x", missing, 0, "id")


def test_a_library_that_is_not_the_driver_is_a_clean_error(cache):
    libc = next(p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6", "/usr/lib/libc.so.6")
                if os.path.exists(p)) if sys.platform.startswith("linux") else None
    if libc is None:
        pytest.skip("no libc path known here")
    with pytest.raises(RuntimeError, match=r"\(dlsym: the library has no cuInit\)"):
        _cukit._image_check(b"x", libc, 0, "id")


def test_large_images_cross_the_pipe_whole(driver, cache):
    # more than a socket buffer holds: the request is streamed while the worker reads
    image = b"loads" + os.urandom(8 << 20)
    _cukit._image_check(image, driver, 0, "id")
    with pytest.raises(ValueError, match="crashed"):
        _cukit._image_check(b"CRASH" + os.urandom(8 << 20), driver, 0, "id")


def test_no_check_under_the_emulator(cubin):
    if cukit.backend() != "emulator":
        pytest.skip("this run uses a GPU")
    before = _cukit._image_checks()
    with pytest.raises(ValueError):
        cukit.Module.load(cubin[:100])
    try:
        cukit.Module.load(PTX.rstrip(b"\0"))
    except cukit.CudaError:
        pass
    assert _cukit._image_checks() == before


# ------------------------------------------------------------------ the check around Module.load, on a GPU

def fresh_source():
    """SRC with code no other test compiled: a comment alone leaves the cubin the same,
    and this process remembers the verdicts of the images it has checked."""
    return SRC.replace("x[0] = g[1];", f"x[0] = g[1] + {int.from_bytes(os.urandom(3), 'little')}.0f;")


@pytest.mark.gpu_hardware
def test_module_load_checks_an_image_once(cubin, monkeypatch, tmp_path):
    monkeypatch.setenv("CUKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CUKIT_IMAGE_CHECK", raising=False)
    image = cukit.Program(fresh_source()).cubin(arch=cukit.Device(0).arch)
    before = _cukit._image_checks()
    cukit.Module.load(image).get_kernel("k", signature="(float* x)")
    assert _cukit._image_checks() == before + 1
    cukit.Module.load(image)
    assert _cukit._image_checks() == before + 1
    assert len(markers(tmp_path)) == 1


@pytest.mark.gpu_hardware
def test_module_load_without_the_check(monkeypatch, tmp_path):
    monkeypatch.setenv("CUKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CUKIT_IMAGE_CHECK", "0")
    image = cukit.Program(fresh_source()).cubin(arch=cukit.Device(0).arch)
    before = _cukit._image_checks()
    cukit.Module.load(image)
    assert _cukit._image_checks() == before


@pytest.mark.gpu_hardware
def test_programs_are_not_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("CUKIT_CACHE_DIR", str(tmp_path))
    before = _cukit._image_checks()
    cukit.Program(fresh_source()).load().k
    assert _cukit._image_checks() == before
