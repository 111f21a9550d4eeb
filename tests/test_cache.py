"""The kernel cache: in this process and on disk, keys, header tracking, damage, races."""
import os
import re
import stat
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import cukit

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh, empty cache folder for one test."""
    d = tmp_path / "cache"
    monkeypatch.setenv("CUKIT_CACHE_DIR", str(d))
    monkeypatch.delenv("CUKIT_CACHE", raising=False)
    return d


def entries(d):
    return sorted(p for p in d.iterdir() if p.name.endswith(".bin")) if d.exists() else []


def unique_source(tag):
    """A kernel no earlier test compiled, so the first compile is a miss."""
    return SAXPY.replace("saxpy", f"saxpy_{tag}_{os.getpid()}_{np.random.randint(1 << 30)}")


def test_first_compile_writes_one_private_entry(cache_dir):
    cukit.Program(unique_source("a")).cubin("sm_90")
    (entry,) = entries(cache_dir)
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(entry.stat().st_mode) & 0o077 == 0
    info = cukit.cache_info()
    assert info["dir"] == str(cache_dir)
    assert info["enabled"] is True
    assert info["entries"] == 1 and info["bytes"] == entry.stat().st_size


def test_second_compile_is_a_hit_and_rewrites_nothing(cache_dir):
    src = unique_source("hit")
    first = cukit.Program(src).cubin("sm_90")
    (entry,) = entries(cache_dir)
    before = entry.stat()
    second = cukit.Program(src).cubin("sm_90")
    assert second == first
    after = entries(cache_dir)[0].stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


@pytest.mark.parametrize(
    "change",
    [
        dict(options=("-use_fast_math",)),
        dict(options=("-DEXTRA=1",)),
        dict(arch="sm_80"),
        dict(name="other.cu"),
        dict(lineinfo=True),
    ],
    ids=["option", "define", "arch", "name", "lineinfo"],
)
def test_what_the_key_covers(cache_dir, change):
    src = unique_source("key")
    arch = change.pop("arch", "sm_90")
    cukit.Program(src).cubin("sm_90")
    cukit.Program(src, **change).cubin(arch)
    assert len(entries(cache_dir)) == 2


def test_ptx_and_cubin_are_separate_entries(cache_dir):
    src = unique_source("kind")
    ptx = cukit.Program(src).ptx("sm_90")
    cubin = cukit.Program(src).cubin("sm_90")
    assert len(entries(cache_dir)) == 2
    assert cukit.Program(src).ptx("sm_90") == ptx and ptx.startswith(b"//")
    assert cukit.Program(src).cubin("sm_90") == cubin and cubin[:4] == b"\x7fELF"


def test_editing_an_included_header_recompiles(cache_dir, tmp_path):
    inc = tmp_path / "inc"
    (inc / "sub").mkdir(parents=True)
    (inc / "scale.h").write_text('#include "sub/inner.h"\n')
    (inc / "sub" / "inner.h").write_text("#define SCALE 2.5f\n")
    src = unique_source("hdr").replace("a * x[i]", "SCALE * x[i]")
    src = '#include "scale.h"\n' + src
    first = cukit.Program(src, include_dirs=[inc]).ptx("sm_90")
    assert b"0f40200000" in first  # 2.5f
    # a nested header, edited: a new key, and PTX with the new constant
    (inc / "sub" / "inner.h").write_text("#define SCALE 3.5f\n")
    second = cukit.Program(src, include_dirs=[inc]).ptx("sm_90")
    assert b"0f40600000" in second  # 3.5f
    assert len(entries(cache_dir)) == 2
    # back to the first content: the first entry again, no third one
    (inc / "sub" / "inner.h").write_text("#define SCALE 2.5f\n")
    assert cukit.Program(src, include_dirs=[inc]).ptx("sm_90") == first
    assert len(entries(cache_dir)) == 2


def test_a_header_appearing_earlier_in_the_search_path_recompiles(cache_dir, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (b / "k.h").write_text("#define K 2.5f\n")
    src = '#include <k.h>\n' + unique_source("order").replace("a * x[i]", "K * x[i]")
    assert b"0f40200000" in cukit.Program(src, include_dirs=[a, b]).ptx("sm_90")
    (a / "k.h").write_text("#define K 3.5f\n")  # now found first
    assert b"0f40600000" in cukit.Program(src, include_dirs=[a, b]).ptx("sm_90")


def test_quoted_includes_are_found_beside_the_named_source(cache_dir, tmp_path, monkeypatch):
    (tmp_path / "near.h").write_text("#define K 2.5f\n")
    monkeypatch.chdir(tmp_path)
    src = '#include "near.h"\n' + unique_source("near").replace("a * x[i]", "K * x[i]")
    assert b"0f40200000" in cukit.Program(src).ptx("sm_90")
    (tmp_path / "near.h").write_text("#define K 3.5f\n")
    assert b"0f40600000" in cukit.Program(src).ptx("sm_90")


def test_an_include_cukit_cannot_follow_is_not_cached(cache_dir, tmp_path):
    (tmp_path / "m.h").write_text("#define K 2.5f\n")
    src = '#define HDR "m.h"\n#include HDR\n' + unique_source("macro").replace("a * x[i]", "K * x[i]")
    assert b"0f40200000" in cukit.Program(src, include_dirs=[tmp_path]).ptx("sm_90")
    assert entries(cache_dir) == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_a_damaged_entry_is_recompiled_with_a_warning(cache_dir, damage):
    src = unique_source("bad")
    good = cukit.Program(src).cubin("sm_90")
    (entry,) = entries(cache_dir)
    data = bytearray(entry.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "empty":
        data = b""
    else:
        data = os.urandom(len(data))
    entry.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match="ignoring the kernel cache entry .*compiling again"):
        again = cukit.Program(src).cubin("sm_90")
    assert again == good
    # the recompile replaced the entry: it loads quietly now
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cukit.Program(src).cubin("sm_90") == good


def test_an_entry_others_can_write_is_not_trusted(cache_dir):
    src = unique_source("perm")
    good = cukit.Program(src).cubin("sm_90")
    (entry,) = entries(cache_dir)
    entry.chmod(0o666)
    with pytest.warns(RuntimeWarning, match="not trusted"):
        assert cukit.Program(src).cubin("sm_90") == good


def test_a_folder_others_can_write_is_not_used(cache_dir):
    cache_dir.mkdir(mode=0o700)
    cache_dir.chmod(0o777)
    with pytest.warns(RuntimeWarning, match="not private to this user.*chmod 700"):
        cukit.Program(unique_source("dir")).cubin("sm_90")
    assert entries(cache_dir) == []


def test_cache_off(cache_dir, monkeypatch):
    monkeypatch.setenv("CUKIT_CACHE", "0")
    cukit.Program(unique_source("off")).cubin("sm_90")
    assert entries(cache_dir) == []
    assert cukit.cache_info()["enabled"] is False


def test_default_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("CUKIT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cukit.cache_info()["dir"] == str(tmp_path / "xdg" / "cukit")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cukit.cache_info()["dir"] == str(tmp_path / "home" / ".cache" / "cukit")


def test_clear_cache(cache_dir):
    for tag in "xyz":
        cukit.Program(unique_source(tag)).cubin("sm_90")
    assert cukit.cache_info()["entries"] == 3
    (cache_dir / "keep.txt").write_text("not ours")
    assert cukit.clear_cache() == 3
    assert cukit.cache_info()["entries"] == 0
    assert (cache_dir / "keep.txt").exists()


def test_eight_processes_compiling_at_once(cache_dir):
    src = unique_source("race")
    code = textwrap.dedent(f"""
        import cukit
        cubin = cukit.Program({src!r}).cubin("sm_90")
        assert cubin[:4] == b"\\x7fELF"
        print(len(cubin))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(8)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err for _, err in outs]
    assert len({out for out, _ in outs}) == 1
    assert all("Warning" not in err for _, err in outs)
    assert [p.name for p in cache_dir.iterdir()] == [entries(cache_dir)[0].name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cukit.Program(src).cubin("sm_90")


# ---------------------------------------------------------------- on the GPU


@pytest.mark.gpu
def test_compile_again_returns_the_loaded_module(cache_dir):
    src = unique_source("mem")
    m1 = cukit.compile(src)
    assert cukit.compile(src) is m1
    assert cukit.compile(src, options=["-use_fast_math"]) is not m1
    assert cukit.cache_info()["memory_entries"] >= 2


@pytest.mark.gpu
def test_the_in_process_cache_keeps_the_most_recent_modules_only(cache_dir):
    """Many unique compiles do not keep every module loaded: the least recently used go
    (the module is unloaded once nothing else holds it); a repeated compile is still the
    same module while it is kept."""
    import gc
    import weakref

    cukit.clear_cache(disk=False)
    first = cukit.compile(unique_source("lru0"))
    gone = weakref.ref(first) if hasattr(first, "__weakref__") else None
    keep_src = unique_source("lrukeep")
    keep = cukit.compile(keep_src)
    for i in range(300):
        cukit.compile(unique_source(f"lru{i + 1}"))
        if i % 50 == 0:
            assert cukit.compile(keep_src) is keep  # used recently: stays
    assert cukit.cache_info()["memory_entries"] <= 256
    assert cukit.compile(keep_src) is keep
    if gone is not None:
        del first
        gc.collect()
        assert gone() is None


def test_clear_cache_can_leave_the_disk_alone(cache_dir):
    cukit.Program(unique_source("disk")).ptx()  # one entry on disk
    assert len(entries(cache_dir)) == 1
    assert cukit.clear_cache(disk=False) == 0
    assert len(entries(cache_dir)) == 1 and cukit.cache_info()["memory_entries"] == 0
    assert cukit.clear_cache() == 1 and entries(cache_dir) == []


@pytest.mark.gpu
def test_in_process_cache_sees_header_edits(cache_dir, tmp_path, rng):
    (tmp_path / "k.h").write_text("#define K 2.5f\n")
    src = '#include "k.h"\n' + unique_source("memhdr").replace("a * x[i]", "K * x[i]")
    name = src.split("void ")[1].split("(")[0]
    m1 = cukit.compile(src, include_dirs=[tmp_path])
    assert cukit.compile(src, include_dirs=[tmp_path]) is m1
    (tmp_path / "k.h").write_text("#define K 5.0f\n")
    m2 = cukit.compile(src, include_dirs=[tmp_path])
    assert m2 is not m1
    x = rng.random(1000, dtype=np.float32)
    y = cukit.zeros(1000, np.float32)
    getattr(m2, name)(1.0, cukit.to_device(x), y, 1000, grid=4, block=256)
    np.testing.assert_allclose(y.get(), 5.0 * x, rtol=1e-6)


@pytest.mark.gpu
def test_a_fresh_process_loads_from_disk_and_launches(cache_dir, rng):
    src = unique_source("fresh")
    name = src.split("void ")[1].split("(")[0]
    code = textwrap.dedent(f"""
        import sys, numpy as np, cukit
        cukit.synchronize()
        mod = cukit.compile({src!r})
        x = np.arange(1000, dtype=np.float32)
        y = cukit.to_device(np.ones(1000, np.float32))
        mod.{name}(2.0, cukit.to_device(x), y, 1000, grid=4, block=256)
        assert np.array_equal(y.get(), 2 * x + 1)
        print(cukit.cache_info()["entries"])
    """)
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "1"


@pytest.mark.parametrize("spelling", [
    lambda d: ["-I", str(d)],
    lambda d: ["--include-path", str(d)],
    lambda d: [f"--include-path={d}"],
    lambda d: [f"-I{d}"],
], ids=["-I DIR", "--include-path DIR", "--include-path=DIR", "-IDIR"])
def test_every_spelling_of_an_include_folder_is_tracked(cache_dir, tmp_path, spelling):
    (tmp_path / "k.h").write_text("#define K 2.5f\n")
    src = '#include <k.h>\n' + unique_source("spell").replace("a * x[i]", "K * x[i]")
    assert b"0f40200000" in cukit.Program(src, options=spelling(tmp_path)).ptx("sm_90")
    (tmp_path / "k.h").write_text("#define K 3.5f\n")
    assert b"0f40600000" in cukit.Program(src, options=spelling(tmp_path)).ptx("sm_90")


@pytest.mark.parametrize("spelling", [
    lambda f: ["-include", str(f)],
    lambda f: [f"--pre-include={f}"],
], ids=["-include FILE", "--pre-include=FILE"])
def test_pre_included_headers_are_tracked(cache_dir, tmp_path, spelling):
    hdr = tmp_path / "pre.h"
    hdr.write_text("#define K 2.5f\n")
    src = unique_source("pre").replace("a * x[i]", "K * x[i]")
    assert b"0f40200000" in cukit.Program(src, options=spelling(hdr)).ptx("sm_90")
    hdr.write_text("#define K 3.5f\n")
    assert b"0f40600000" in cukit.Program(src, options=spelling(hdr)).ptx("sm_90")


def test_has_include_is_not_cached(cache_dir, tmp_path):
    src = "#if __has_include(<k.h>)\n#endif\n" + unique_source("has")
    cukit.Program(src).ptx("sm_90")
    assert entries(cache_dir) == []


def test_clear_cache_touches_only_its_own_files(cache_dir):
    cukit.Program(unique_source("own")).cubin("sm_90")
    others = ["requirements-dev.backup", "x" * 64 + ".bin", "notes.txt"]
    for name in others:
        (cache_dir / name).write_text("keep")
    assert cukit.clear_cache() == 1
    assert sorted(p.name for p in cache_dir.iterdir()) == sorted(others)


def test_a_file_name_with_quotes_still_compiles_with_the_fp16_prelude(cache_dir):
    src = 'extern "C" __global__ void k(half* y) { y[0] = __float2half(1.0f); }\n'
    assert b".entry k" in cukit.Program(src, name='my "odd" \\ name.cu').ptx("sm_90")


@pytest.mark.gpu
def test_a_compile_the_key_cannot_vouch_for_is_not_kept_in_process(cache_dir, tmp_path):
    (tmp_path / "v.h").write_text("#define V 1\n")
    src = ('#define HDR "v.h"\n#include HDR\n'
           'extern "C" __global__ void setv(int* p) { p[0] = V; }\n')
    out = cukit.zeros(1, np.int32)
    cukit.compile(src, include_dirs=[tmp_path]).setv(out, grid=1, block=1)
    assert out.get()[0] == 1
    (tmp_path / "v.h").write_text("#define V 2\n")
    cukit.compile(src, include_dirs=[tmp_path]).setv(out, grid=1, block=1)
    assert out.get()[0] == 2


@pytest.mark.gpu
def test_unhashable_arguments_compile_without_the_in_process_cache(cache_dir):
    src = unique_source("set")
    m1 = cukit.compile(src, options={"-lineinfo"})
    m2 = cukit.compile(src, options={"-lineinfo"})
    assert m1 is not m2 and m1.kernels == m2.kernels


SLOW = r"""
#include <cub/block/block_reduce.cuh>
#include <curand_kernel.h>
extern "C" __global__ void slow_TAG(float* y) {
    typedef cub::BlockReduce<float, 128> R;
    __shared__ typename R::TempStorage t;
    curandStatePhilox4_32_10_t s; curand_init(1, threadIdx.x, 0, &s);
    float v = R(t).Sum(y[threadIdx.x] + curand_normal(&s));
    if (threadIdx.x == 0) y[0] = v;
}
"""


@pytest.mark.parametrize("quiet", [None, "1"])
def test_a_slow_compile_says_so_once_unless_quiet(tmp_path, quiet):
    """A compile over a second names what it compiled and that the cache keeps it;
    CUKIT_QUIET=1 hides it. (Where the compile is faster, there is nothing to say.)"""
    src = SLOW.replace("TAG", f"{os.getpid()}_{np.random.randint(1 << 30)}")
    code = ("import cukit, time\nt = time.monotonic()\n"
            f"cukit.Program({src!r}, name='slow.cu').ptx(arch='compute_90')\n"
            "print(time.monotonic() - t)\n")
    env = dict(os.environ, CUKIT_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.path.dirname(os.path.dirname(cukit.__file__)))
    env.pop("CUKIT_QUIET", None)
    if quiet:
        env["CUKIT_QUIET"] = quiet
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0 and "cannot open source file" in r.stdout + r.stderr:
        pytest.skip("no cub or curand headers here")
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stderr.splitlines() if line.startswith("cukit: compiling")]
    if quiet:
        assert notes == []
        return
    took = float(r.stdout)
    if took < 1.5:
        pytest.skip(f"the compile took {took:.2f} s here: too fast to need a note")
    assert len(notes) == 1, r.stderr
    assert re.match(r"cukit: compiling slow\.cu for compute_90 took \d+\.\d s \(NVRTC\); the "
                    r"kernel cache keeps it for next time \(python -m cukit warmup", notes[0])
