"""Headers for NVRTC: cukit's stand-ins for the C and C++ standard headers (each in a
kernel compiled and run against numpy), nvcc's uint/ushort/ulong/uchar, the include
folders found beside NVRTC (a fake site-packages layout, no network), and the hints a
missing header's CompileError carries (NVRTC moved away from its headers, in a
subprocess)."""
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import cukit
from conftest import HAVE_GPU, poison

gpu = pytest.mark.gpu
INCLUDE = os.path.join(os.path.dirname(os.path.abspath(cukit.__file__)), "include")
SRC_DIR = os.path.dirname(os.path.dirname(os.path.abspath(cukit.__file__)))
N = 1000


def run1(src, *arrays, n=N, extra=()):
    """Compile src's kernel k(arrays..., extra..., int n) and run it over n threads."""
    m = cukit.compile(src)
    m.k(*arrays, *extra, n, grid=(n + 127) // 128, block=128)
    return m


def toolkit_headers():
    return any(os.path.exists(os.path.join(d, "cuda", "std", "cstdint"))
               for d in cukit._cukit._include_dirs())


# ------------------------------------------------------------------ the stand-ins


def test_the_stand_ins_are_searched_last():
    dirs = cukit._cukit._include_dirs()
    assert os.path.samefile(dirs[-1], INCLUDE)
    for h in ("math.h", "cmath", "stdint.h", "cstdint", "float.h", "cfloat", "limits.h",
              "climits", "assert.h", "cassert", "stdlib.h", "cstdlib", "string.h", "cstring",
              "stdio.h", "cstdio", "stddef.h", "cstddef", "sys/types.h"):
        assert os.path.isfile(os.path.join(INCLUDE, h)), h


@gpu
@pytest.mark.parametrize("header", ["math.h", "cmath"])
def test_math_constants_and_functions(header, rng):
    std = "std::" if header == "cmath" else ""
    src = """#include <%s>
extern "C" __global__ void k(const double *x, const float *y, double *out, float *fout,
                             int *cls, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = %ssin(x[i] * M_PI) + M_E * M_SQRT2 - M_LN2 / M_PI_2 + %sexp(M_LOG2E) * M_1_PI;
    fout[i] = %ssqrt(y[i]) + (float)M_PI_4;
    const double special[] = {INFINITY, -HUGE_VAL, NAN, 0.0, 1e-310, x[i] + 2.0};
    cls[i] = %sfpclassify(special[i %% 6]) * 10 + %sisnormal(x[i] + 2.0) + 2 * isinf(HUGE_VALF);
}""" % (header, std, std, std, std, std)
    x = rng.uniform(-1, 1, N)
    y = rng.uniform(0, 4, N).astype(np.float32)
    out, fout, cls = poison(N, np.float64), poison(N, np.float32), poison(N, np.int32)
    dx, dy, do, df, dc = map(cukit.asarray, (x, y, out, fout, cls))
    run1(src, dx, dy, do, df, dc)
    want = np.sin(x * np.pi) + np.e * np.sqrt(2) - np.log(2) / (np.pi / 2) + \
        np.exp(np.log2(np.e)) / np.pi
    np.testing.assert_allclose(do.get(), want, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(df.get(), np.sqrt(y) + np.float32(np.pi / 4), rtol=1e-6)
    classes = np.array([1, 1, 0, 2, 3, 4]) * 10  # glibc's FP_INFINITE, FP_NAN, ...
    np.testing.assert_array_equal(dc.get(), classes[np.arange(N) % 6] + 1 + 2)


@gpu
def test_infinity_and_nan_are_constant_expressions():
    src = """#include <math.h>
constexpr float inf = INFINITY;
__constant__ double table[3] = {NAN, HUGE_VAL, -INFINITY};
extern "C" __global__ void k(double *out, int n) {
    int i = threadIdx.x;
    if (i < n) out[i] = i < 3 ? table[i] : (double)inf;
}"""
    out = cukit.asarray(poison(4, np.float64))
    run1(src, out, n=4)
    got = out.get()
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == -np.inf and got[3] == np.inf


@gpu
@pytest.mark.parametrize("header", ["stdint.h", "cstdint"])
def test_exact_width_integers_and_their_limits(header, rng):
    std = "std::" if header == "cstdint" else ""
    src = """#include <%s>
extern "C" __global__ void k(const %sint64_t *x, %suint8_t *low, int32_t *clamped,
                             uint64_t *lim, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    low[i] = (uint8_t)(x[i] & UINT8_MAX);
    clamped[i] = x[i] > INT32_MAX ? INT32_MAX : x[i] < INT32_MIN ? INT32_MIN : (int32_t)x[i];
    const uint64_t lims[] = {(uint64_t)INT64_MAX, UINT64_MAX, (uint64_t)INT16_MIN, SIZE_MAX,
                             (uint64_t)INT64_C(-5), UINT32_C(7), sizeof(intptr_t),
                             sizeof(int_fast16_t)};
    if (i < 8) lim[i] = lims[i];
}""" % (header, std, std)
    x = rng.integers(-2**40, 2**40, N, dtype=np.int64)
    low, cl, lim = poison(N, np.uint8), poison(N, np.int32), poison(8, np.uint64)
    dx, dl, dc, dm = map(cukit.asarray, (x, low, cl, lim))
    sig = run1(src, dx, dl, dc, dm).get_kernel("k").signature
    # the reader knows std::int64_t as int64_t
    assert [p[0] for p in sig.params][:3] == ["const int64_t*", "uint8_t*", "int32_t*"]
    np.testing.assert_array_equal(dl.get(), (x & 0xff).astype(np.uint8))
    np.testing.assert_array_equal(dc.get(), np.clip(x, -2**31, 2**31 - 1).astype(np.int32))
    np.testing.assert_array_equal(dm.get(), np.array(
        [2**63 - 1, 2**64 - 1, 2**64 - 2**15, 2**64 - 1, 2**64 - 5, 7, 8, 2], np.uint64))


@gpu
@pytest.mark.parametrize("header", ["float.h", "cfloat", "limits.h", "climits"])
def test_limits_of_the_types(header):
    if "float" in header:
        names = ["FLT_MAX", "FLT_MIN", "FLT_EPSILON", "FLT_TRUE_MIN", "DBL_MAX", "DBL_MIN",
                 "DBL_EPSILON", "DBL_TRUE_MIN", "FLT_MANT_DIG", "DBL_MANT_DIG", "FLT_DIG",
                 "DBL_DIG", "FLT_MAX_EXP", "DBL_MIN_EXP", "FLT_RADIX"]
        f, d = np.finfo(np.float32), np.finfo(np.float64)
        want = [f.max, f.tiny, f.eps, f.smallest_subnormal, d.max, d.tiny, d.eps,
                d.smallest_subnormal, f.nmant + 1, d.nmant + 1, f.precision, d.precision,
                f.maxexp, d.minexp + 1, 2]
        ctype, dtype = "double", np.float64
    else:
        names = ["CHAR_BIT", "SCHAR_MIN", "SCHAR_MAX", "UCHAR_MAX", "CHAR_MIN", "SHRT_MIN",
                 "SHRT_MAX", "USHRT_MAX", "INT_MIN", "INT_MAX", "UINT_MAX", "LONG_MIN",
                 "LONG_MAX", "LLONG_MIN", "LLONG_MAX"]
        want = [8] + [v for t in (np.int8,) for v in (np.iinfo(t).min, np.iinfo(t).max)] + \
            [255, -128, -2**15, 2**15 - 1, 2**16 - 1, -2**31, 2**31 - 1, 2**32 - 1, -2**63,
             2**63 - 1, -2**63, 2**63 - 1]
        ctype, dtype = "long long", np.int64
    src = "#include <%s>\nextern \"C\" __global__ void k(%s *out, int n) {\n" \
          "    const %s v[] = {%s};\n    if (threadIdx.x < n) out[threadIdx.x] = v[threadIdx.x];\n}" \
          % (header, ctype, ctype, ", ".join("(%s)%s" % (ctype, n) for n in names))
    out = cukit.asarray(poison(len(names), dtype))
    run1(src, out, n=len(names))
    np.testing.assert_array_equal(out.get(), np.array(want, dtype))


@gpu
@pytest.mark.parametrize("header", ["stdlib.h", "cstdlib"])
def test_stdlib_and_nvcc_type_names(header, rng):
    std = "std::" if header == "cstdlib" else ""
    src = """#include <%s>
extern "C" __global__ void k(const int *x, const long long *y, uint *out, ulong *lout,
                             int *codes, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = (uint)%sabs(x[i]) + (ushort)1 + (uchar)2;
    lout[i] = (ulong)%sllabs(y[i]);
    if (i == 0) { codes[0] = EXIT_SUCCESS; codes[1] = EXIT_FAILURE; codes[2] = NULL == 0; }
}""" % (header, std, std)
    x = rng.integers(-2**30, 2**30, N, dtype=np.int32)
    y = rng.integers(-2**62, 2**62, N, dtype=np.int64)
    out, lout, codes = poison(N, np.uint32), poison(N, np.uint64), poison(3, np.int32)
    dx, dy, do, dl, dc = map(cukit.asarray, (x, y, out, lout, codes))
    run1(src, dx, dy, do, dl, dc)
    np.testing.assert_array_equal(do.get(), (np.abs(x) + 3).astype(np.uint32))
    np.testing.assert_array_equal(dl.get(), np.abs(y).astype(np.uint64))
    np.testing.assert_array_equal(dc.get(), [0, 1, 1])


@gpu
@pytest.mark.parametrize("header", ["string.h", "cstring"])
def test_string_functions(header, rng):
    std = "std::" if header == "cstring" else ""
    src = """#include <%s>
__device__ const char words[4][9] = {"alpha", "beta", "alphabet", "al"};
extern "C" __global__ void k(const unsigned char *a, const unsigned char *b, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int c = %smemcmp(a + 4 * i, b + 4 * i, 4);
    const char *w = words[i %% 4], *v = words[(i / 4) %% 4];
    char buf[9];
    %sstrcpy(buf, w);
    unsigned char moved[6] = {1, 2, 3, 4, 5, 6};
    %smemmove(moved + 1, moved, 4);
    out[i] = (c > 0) - (c < 0) + 4 * (int)%sstrlen(buf) + 64 * ((%sstrcmp(w, v) > 0) - (%sstrcmp(w, v) < 0))
             + 256 * (%sstrncmp(w, v, 2) == 0) + 1024 * (moved[4] == 4 && moved[1] == 1);
}""" % ((header,) + (std,) * 7)
    a = rng.integers(0, 3, 4 * N, dtype=np.uint8)
    b = rng.integers(0, 3, 4 * N, dtype=np.uint8)
    out = poison(N, np.int32)
    da, db, do = map(cukit.asarray, (a, b, out))
    run1(src, da, db, do)
    words = ["alpha", "beta", "alphabet", "al"]
    want = []
    for i in range(N):
        x, y = bytes(a[4 * i:4 * i + 4]), bytes(b[4 * i:4 * i + 4])
        w, v = words[i % 4], words[(i // 4) % 4]
        want.append((x > y) - (x < y) + 4 * len(w) + 64 * ((w > v) - (w < v)) +
                    256 * (w[:2] == v[:2]) + 1024)
    np.testing.assert_array_equal(do.get(), want)


@gpu
@pytest.mark.parametrize("header", ["stddef.h", "cstddef", "stdio.h", "cstdio"])
def test_stddef_and_stdio(header, rng):
    std = "std::" if header.startswith("c") else ""
    src = """#include <%s>
struct rec { char c; double d; int i; };
extern "C" __global__ void k(const float *x, float *y, %ssize_t *offs, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2 * x[i];
    if (i == 0) { offs[0] = offsetof(rec, d); offs[1] = offsetof(rec, i); }
    if (i == n) printf("");
}""" % (header, "" if header.startswith("stdio") or header == "cstdio" else std)
    x = rng.standard_normal(N).astype(np.float32)
    dx, dy, do = cukit.asarray(x), cukit.asarray(poison(N, np.float32)), \
        cukit.asarray(poison(2, np.uint64))
    run1(src, dx, dy, do)
    np.testing.assert_array_equal(dy.get(), 2 * x)
    np.testing.assert_array_equal(do.get(), [8, 16])


@gpu
@pytest.mark.parametrize("header", ["assert.h", "cassert"])
def test_assert_is_off_under_ndebug(header, rng):
    src = "#define NDEBUG\n#include <%s>\n" % header + """
extern "C" __global__ void k(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { assert(x[i] > 1e30f); y[i] = x[i] + 1; }
}"""
    x = rng.standard_normal(N).astype(np.float32)
    dx, dy = cukit.asarray(x), cukit.asarray(poison(N, np.float32))
    run1(src, dx, dy)
    np.testing.assert_array_equal(dy.get(), x + 1)


@pytest.mark.parametrize("header", ["assert.h", "cassert"])
def test_assert_calls_the_device_assert(header):
    src = "#include <%s>\n" % header + \
        'extern "C" __global__ void k(const float *x) { assert(x[0] > 0 && "positive"); }'
    ptx = cukit.Program(src).ptx(arch="sm_90").decode()
    assert "__assertfail" in ptx and "positive" not in src.split("assert(")[0]
    # undefined again and redefined by NDEBUG at each #include, as the C header is
    again = "#include <%s>\n#define NDEBUG\n#include <%s>\n" % (header, header) + \
        'extern "C" __global__ void k(const float *x) { assert(x[0] > 0); }'
    assert "__assertfail" not in cukit.Program(again).ptx(arch="sm_90").decode()


@gpu
@pytest.mark.skipif(cukit.device_count() == 0 or cukit.backend() == "emulator",
                    reason="the emulator does not run __assertfail; needs a real GPU")
@pytest.mark.unsanitized  # the kernel asserts on purpose
def test_a_failing_assert_fails_the_launch():
    code = r"""
import numpy as np, cukit
m = cukit.compile('#include <cassert>\nextern "C" __global__ void k(const int *x) { assert(x[threadIdx.x] >= 0); }')
x = cukit.asarray(np.array([1, -1], np.int32))
try:
    m.k(x, grid=1, block=2); cukit.synchronize()
except cukit.CudaError as e:
    print("raised", e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, PYTHONPATH=SRC_DIR))
    assert "raised" in r.stdout and "assert" in r.stdout.lower(), r.stdout + r.stderr


# ------------------------------------------------------------------ nvcc's type names


@gpu
def test_uint_ushort_ulong_uchar_without_an_include(rng):
    src = """extern "C" __global__ void k(const uint *x, ushort s, uchar c, ulong *out, uint n) {
    uint i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (ulong)x[i] * s + c;
}"""
    m = cukit.compile(src)
    sig = m.get_kernel("k").signature
    assert [p[0] for p in sig.params] == ["const uint*", "ushort", "uchar", "ulong*", "uint"]
    x = rng.integers(0, 2**32, N, dtype=np.uint32)
    dx, do = cukit.asarray(x), cukit.asarray(poison(N, np.uint64))
    m.k(dx, 40000, 200, do, N, grid=(N + 127) // 128, block=128)
    np.testing.assert_array_equal(do.get(), x.astype(np.uint64) * 40000 + 200)
    with pytest.raises(TypeError):  # uint* takes uint32 arrays, as unsigned int* does
        m.k(cukit.asarray(x.astype(np.float32)), 1, 1, do, N, grid=1, block=1)


@gpu
def test_a_source_that_declares_uint_itself_keeps_its_own(rng):
    src = """typedef long long uint;
extern "C" __global__ void k(const uint *x, uint *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = -x[i];
}"""
    x = rng.integers(-2**60, 2**60, N, dtype=np.int64)
    dx, dy = cukit.asarray(x), cukit.asarray(poison(N, np.int64))
    run1(src, dx, dy)
    np.testing.assert_array_equal(dy.get(), -x)


# ------------------------------------------------------------------ order and interplay


@gpu
def test_a_users_include_folder_comes_before_the_stand_ins(tmp_path, rng):
    (tmp_path / "math.h").write_text("#define M_PI 3\n")
    src = """#include <math.h>
extern "C" __global__ void k(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * M_PI;
}"""
    x = rng.standard_normal(N).astype(np.float32)
    dx, dy = cukit.asarray(x), cukit.asarray(poison(N, np.float32))
    m = cukit.compile(src, include_dirs=[str(tmp_path)])
    m.k(dx, dy, N, grid=(N + 127) // 128, block=128)
    np.testing.assert_array_equal(dy.get(), x * 3)


@pytest.mark.skipif(not toolkit_headers(), reason="no CCCL headers beside NVRTC")
def test_stand_ins_after_cccl_compile_without_warnings():
    src = "".join("#include <%s>\n" % h for h in (
        "cuda/std/cstdint", "cuda/std/climits", "cuda/std/cfloat", "cuda/std/cmath",
        "stdint.h", "climits", "cfloat", "cmath", "cstdlib")) + \
        'extern "C" __global__ void k(int64_t *x) { x[0] = INT64_C(5) + INT_MAX + (int64_t)FLT_EPSILON' \
        ' + (int64_t)std::sqrt(2.0f) + (INFINITY > 0); }'
    p = cukit.Program(src)
    p.ptx(arch="sm_90")
    assert "warning" not in p.log, p.log
    # the other order compiles too (CCCL redefines what it defines itself)
    swapped = src.replace("#include <cuda/std/cstdint>\n", "").replace(
        "#include <cstdlib>\n", "#include <cstdlib>\n#include <cuda/std/cstdint>\n")
    cukit.Program(swapped).ptx(arch="sm_90")


def test_a_kernel_including_stand_ins_is_cached(tmp_path):
    """The stand-ins are followed by the cache key's #include scan (no __has_include in
    them), so such a compile is kept on disk."""
    src = '#include <cmath>\n#include <cstdint>\n#include <cassert>\n#include <cstring>\n' \
          'extern "C" __global__ void k(int64_t *x) { x[0] = (int64_t)std::floor(M_PI); }'
    env = dict(os.environ, PYTHONPATH=SRC_DIR, CUKIT_CACHE_DIR=str(tmp_path))
    code = "import cukit; cukit.Program(%r).ptx(arch='sm_90'); " \
           "print(cukit.cache_info()['entries'])" % src
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.split() == ["1"], r.stdout + r.stderr


# ------------------------------------------------------------------ NVIDIA's include folders


def make_tree(root, folders, files=()):
    for f in folders:
        os.makedirs(os.path.join(root, f), exist_ok=True)
    for f in files:
        os.makedirs(os.path.dirname(os.path.join(root, f)), exist_ok=True)
        open(os.path.join(root, f), "wb").close()


def test_include_folders_of_the_cuda13_wheels(tmp_path):
    sp = tmp_path / "site-packages"
    make_tree(sp, ["nvidia/cu13/lib", "nvidia/cu13/include/cccl/cuda/std"],
              ["nvidia/cu13/include/cccl/nv/target"])
    (sp / "nvidia/cu13/lib/libnvrtc.so.13").write_bytes(b"")
    (sp / "nvidia/cu13/include/cuda_fp16.h").write_bytes(b"")
    got = cukit._cukit._include_dirs(str(sp / "nvidia/cu13/lib/libnvrtc.so.13"))
    assert got == [str((sp / "nvidia/cu13/include").resolve()),
                   str((sp / "nvidia/cu13/include/cccl").resolve())]


def test_include_folders_of_the_cuda12_wheels(tmp_path):
    sp = tmp_path / "site-packages"
    make_tree(sp, ["nvidia/cuda_nvrtc/lib", "nvidia/cuda_nvrtc/include",
                   "nvidia/cuda_runtime/include", "nvidia/cuda_cccl/include",
                   "nvidia/curand/include", "nvidia/cublas/include"],
              ["nvidia/cuda_cccl/include/nv/target"])
    (sp / "nvidia/cuda_runtime/include/cuda_fp16.h").write_bytes(b"")
    got = cukit._cukit._include_dirs(str(sp / "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"))
    assert got == [str((sp / "nvidia" / p / "include").resolve())
                   for p in ("cuda_nvrtc", "cuda_runtime", "cuda_cccl", "curand")]


def test_include_folders_of_a_toolkit(tmp_path):
    make_tree(tmp_path, ["cuda/targets/x86_64-linux/lib"],
              ["cuda/targets/x86_64-linux/include/nv/target"])
    (tmp_path / "cuda/targets/x86_64-linux/include/cuda_fp16.h").write_bytes(b"")
    os.symlink("targets/x86_64-linux/lib", tmp_path / "cuda/lib64")
    got = cukit._cukit._include_dirs(str(tmp_path / "cuda/lib64/libnvrtc.so"))
    assert got == [str((tmp_path / "cuda/targets/x86_64-linux/include").resolve())]


def test_an_nvrtc_without_headers_takes_a_toolkits(tmp_path, monkeypatch):
    """An NVRTC library on its own (or a wheel without nvidia-cuda-runtime) gets the
    headers of the toolkit that CUDA_HOME names, as the missing-header hint says."""
    make_tree(tmp_path, ["bare/lib", "tk/include/cccl", "empty/include"])
    (tmp_path / "tk/include/cuda_fp16.h").write_bytes(b"")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "tk"))
    assert cukit._cukit._include_dirs(str(tmp_path / "bare/lib/libnvrtc.so.13")) == [
        str((tmp_path / "tk/include").resolve()), str((tmp_path / "tk/include/cccl").resolve())]
    # CUDA_HOME names the toolkit: one without the headers gives none (CUDA_PATH and
    # /usr/local/cuda are not tried behind it); CUDA_PATH alone names it too
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "empty"))
    monkeypatch.setenv("CUDA_PATH", str(tmp_path / "tk"))
    assert cukit._cukit._include_dirs(str(tmp_path / "bare/lib/libnvrtc.so.13")) == []
    monkeypatch.delenv("CUDA_HOME")
    assert cukit._cukit._include_dirs(str(tmp_path / "bare/lib/libnvrtc.so.13"))[0] == str(
        (tmp_path / "tk/include").resolve())


def test_wheels_without_cccl_take_a_toolkits_cccl(tmp_path, monkeypatch):
    """NVIDIA's wheels without nvidia-cuda-cccl (PyTorch's set: curand_kernel.h then needs
    <nv/target>) take CCCL alone from the toolkit CUDA_HOME names, after their own
    folders; a CUDA 12 toolkit has it in include, a CUDA 13 one in include/cccl."""
    sp = tmp_path / "site-packages"
    make_tree(sp, ["nvidia/cu13/lib"], ["nvidia/cu13/include/cuda_fp16.h"])
    make_tree(tmp_path, [], ["tk13/include/cuda_fp16.h", "tk13/include/cccl/nv/target",
                             "tk12/include/cuda_fp16.h", "tk12/include/nv/target"])
    lib = str(sp / "nvidia/cu13/lib/libnvrtc.so.13")
    own = str((sp / "nvidia/cu13/include").resolve())
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "tk13"))
    assert cukit._cukit._include_dirs(lib) == [own, str((tmp_path / "tk13/include/cccl").resolve())]
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "tk12"))
    assert cukit._cukit._include_dirs(lib) == [own, str((tmp_path / "tk12/include").resolve())]
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "none"))
    assert cukit._cukit._include_dirs(lib) == [own]


# ------------------------------------------------------------------ hints


def compile_error(src):
    with pytest.raises(cukit.CompileError) as e:
        cukit.Program(src).ptx(arch="sm_90")
    return str(e.value)


def test_a_header_in_no_folder_gets_a_hint():
    msg = compile_error('#include <no_such_header.h>\nextern "C" __global__ void k() {}')
    assert 'hint: "no_such_header.h" is in none of the folders searched' in msg
    assert "include_dirs=" in msg and INCLUDE in msg


@pytest.mark.skipif(not toolkit_headers(), reason="no CUDA headers beside NVRTC")
def test_a_misspelt_cuda_header_gets_a_hint():
    msg = compile_error('#include <curand_kernell.h>\nextern "C" __global__ void k() {}')
    assert "nvidia-curand" in msg and "check its name" in msg


def nvrtc_without_headers(tmp_path):
    """This NVRTC, linked (or copied) into a fake wheel layout with no headers beside it."""
    found = None
    for d in cukit._cukit._include_dirs()[:-1]:  # NVIDIA's, whose lib is beside include
        lib = os.path.join(os.path.dirname(d.replace("/include/cccl", "/include")), "lib")
        for cand in (lib, lib + "64"):
            for name in ("libnvrtc.so.13", "libnvrtc.so.12"):
                if os.path.exists(os.path.join(cand, name)):
                    found = os.path.realpath(os.path.join(cand, name))
    if found is None:
        pytest.skip("cannot tell where this NVRTC's library is")
    libdir = tmp_path / "site-packages" / "nvidia" / "cu13" / "lib"
    libdir.mkdir(parents=True)
    for f in os.listdir(os.path.dirname(found)):
        if f.startswith(("libnvrtc.so", "libnvrtc-builtins.so")):
            src = os.path.join(os.path.dirname(found), f)
            try:
                os.link(os.path.realpath(src), libdir / f)
            except OSError:
                shutil.copy(os.path.realpath(src), libdir / f)
    return libdir / os.path.basename(found)


def test_without_cuda_headers_the_errors_say_which_wheel(tmp_path):
    lib = nvrtc_without_headers(tmp_path)
    code = r"""
import cukit
print("DIRS", cukit._cukit._include_dirs())
for s in ['#include <cuda_fp16.h>\nextern "C" __global__ void k() {}',
          '#include <cooperative_groups.h>\nextern "C" __global__ void k() {}',
          '#include <curand_kernel.h>\nextern "C" __global__ void k() {}',
          '#include <cub/cub.cuh>\nextern "C" __global__ void k() {}',
          'extern "C" __global__ void k(half *x) { x[0] = x[1]; }']:
    try:
        cukit.Program(s).ptx(arch="sm_90")
        print("COMPILED")
    except cukit.CompileError as e:
        print("HINT", str(e).splitlines()[-1])
p = cukit.Program('#include <cmath>\nextern "C" __global__ void k(float *x) { x[0] = std::sqrt(M_PI); }')
p.ptx(arch="sm_90")
print("STANDINS OK")
"""
    # CUDA_HOME names a folder without headers, so no toolkit's are taken either
    (tmp_path / "no_toolkit").mkdir()
    env = dict(os.environ, PYTHONPATH=SRC_DIR, CUKIT_NVRTC=str(lib),
               CUDA_HOME=str(tmp_path / "no_toolkit"))
    env.pop("CUDA_PATH", None)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "DIRS %r" % [os.path.realpath(INCLUDE)], lines[0]
    hints = [ln for ln in lines if ln.startswith("HINT")]
    assert len(hints) == 5, r.stdout
    for h, wheel in zip(hints, ["nvidia-cuda-runtime", "nvidia-cuda-runtime", "nvidia-curand",
                                "nvidia-cuda-cccl", "nvidia-cuda-runtime"]):
        assert "`%s`" % wheel in h and "`pip install %s`" % wheel in h, h
        assert "`pip install '.[nvrtc]'`" in h, h
    assert "half or bfloat16" in hints[4]
    assert lines[-1] == "STANDINS OK"


STAND_INS = sorted(p.name for p in (pathlib.Path(cukit.__file__).parent / "include").iterdir()
                   if p.is_file()) + ["sys/types.h"]


@pytest.mark.parametrize("header", STAND_INS)
def test_each_stand_in_can_be_included_inside_extern_c(header):
    """PyCUDA's SourceModule wraps a source in extern "C" { }: as with the C library's
    headers under nvcc, what the stand-ins declare for C++ keeps C++ linkage."""
    src = 'extern "C" {\n#include <%s>\n__global__ void k(int *x) { x[0] = 1; }\n}\n' % header
    assert cukit.Program(src).ptx()


def test_every_header_wheel_a_hint_names_is_in_the_nvrtc_extra():
    """A hint that says `pip install '.[nvrtc]'` brings a header's wheel is true:
    each wheel csrc/compile/includes.c names is in pyproject's nvrtc extra."""
    import re
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and newer

    root = pathlib.Path(__file__).resolve().parent.parent
    named = set(re.findall(r'"(nvidia-[a-z-]+)"', (root / "csrc/compile/includes.c").read_text()))
    extra = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert named and named <= set(extra["nvrtc"]), named - set(extra["nvrtc"])
    assert "nvidia-cuda-crt" in named  # mma.h's crt/ headers
