"""C++ kernels: templates through name_expressions, fp16/bf16, diagnostics, lineinfo, debug mode."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cukit
from conftest import poison

AXPY = r"""
template <typename T>
__global__ void axpy(T a, const T* x, T* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

EXPRS = ["axpy<float>", "axpy<double>", "axpy<int>", "axpy<unsigned long long>"]


def test_template_instances_get_signatures():
    prog = cukit.Program(AXPY, name_expressions=EXPRS)
    sigs = prog.signatures
    assert set(sigs) == set(EXPRS)
    assert str(sigs["axpy<float>"]) == "axpy<float>(float a, const float* x, float* y, size_t n)"
    assert str(sigs["axpy<unsigned long long>"]) == (
        "axpy<unsigned long long>(unsigned long long a, const unsigned long long* x, "
        "unsigned long long* y, size_t n)")
    assert prog.name_expressions == tuple(EXPRS)


def test_template_defaults_namespaces_and_aliases():
    src = r"""
    typedef double real;
    namespace ops {
    template <class T, typename U = real, int N = 4>
    __global__ void mix(T* out, const U* in, T scale) {}
    }
    """
    sigs = cukit.Program(src, name_expressions=["ops::mix<float>", "ops::mix<int, float, 8>"]).signatures
    assert str(sigs["ops::mix<float>"]) == "ops::mix<float>(float* out, const double* in, float scale)"
    assert str(sigs["ops::mix<int, float, 8>"]) == (
        "ops::mix<int, float, 8>(int* out, const float* in, int scale)")


def test_template_instances_compile_without_a_gpu():
    ptx = cukit.Program(AXPY, name_expressions=EXPRS).ptx("sm_90")
    assert ptx.count(b".entry _Z4axpy") == len(EXPRS)


def test_a_wrong_name_expression_is_a_compile_error():
    with pytest.raises(cukit.CompileError, match="axpy<nosuchtype>"):
        cukit.Program(AXPY, name_expressions=["axpy<nosuchtype>"]).ptx("sm_90")


def test_name_expressions_must_be_strings():
    with pytest.raises(TypeError, match="name_expressions must be a sequence of str"):
        cukit.Program(AXPY, name_expressions="axpy<float>")
    with pytest.raises(TypeError, match="each of name_expressions must be a str"):
        cukit.Program(AXPY, name_expressions=[1])


def test_diagnostics_read_like_a_compiler():
    src = ('extern "C" __global__ void k(float* y) {\n'
           "    int unused;\n"
           "    y[0] = x * 2;\n"
           "}\n")
    with pytest.raises(cukit.CompileError) as info:
        cukit.Program(src, name="mine.cu").ptx("sm_90")
    assert str(info.value) == (
        "mine.cu did not compile for compute_90:\n"
        'mine.cu:3:12: error: identifier "x" is undefined\n'
        "    y[0] = x * 2;\n"
        "           ^\n"
        "\n"
        'mine.cu:2:9: warning #177-D: variable "unused" was declared but never referenced\n'
        "    int unused;\n"
        "        ^\n"
        "\n"
        'Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"\n'
        "\n"
        '1 error detected in the compilation of "mine.cu".\n')
    assert "mine.cu(3): error" in info.value.log  # NVRTC's own words stay in .log


def test_diagnostics_count_the_users_lines_when_cukit_adds_headers():
    # `half` without #include <cuda_fp16.h>: cukit puts the headers before line 1
    src = ('extern "C" __global__ void k(half* y) {\n'
           "    y[0] = oops;\n"
           "}\n")
    with pytest.raises(cukit.CompileError) as info:
        cukit.Program(src, name="h.cu").ptx("sm_90")
    assert str(info.value).splitlines()[1:4] == [
        'h.cu:2:12: error: identifier "oops" is undefined',
        "    y[0] = oops;",
        "           ^",
    ]


# The source defines __float2half itself (returning unsigned): with cuda_fp16.h put in
# front it would not compile (an overload differing only in its return type).
OWN_FLOAT2HALF = (
    "__device__ unsigned __float2half(const float x) { return (unsigned)x & 0xffffu; }\n"
    'extern "C" __global__ void k(unsigned* y) { y[0] = __float2half((float)y[0]); }\n')


@pytest.mark.parametrize("words", [
    "// keeps the low half of each word (not a half2, nor a __nv_bfloat16)\n",
    "/* half\n   __half */\n",
    'static const char note[] = "half";\n',
])
def test_a_comment_or_string_naming_half_does_not_pull_the_fp16_header(words):
    cukit.Program(words + OWN_FLOAT2HALF).ptx("sm_90")  # compiles: no header in front


def test_half_in_code_still_pulls_the_fp16_header():
    src = "__device__ void use(half* p) {}\n" + OWN_FLOAT2HALF
    with pytest.raises(cukit.CompileError):
        cukit.Program(src).ptx("sm_90")  # the header came, and its __float2half with it


def test_errors_in_a_header_name_the_header(tmp_path):
    (tmp_path / "bad.h").write_text("static __device__ int bad() { return nope; }\n")
    src = '#include "bad.h"\nextern "C" __global__ void k(int* y) { y[0] = bad(); }\n'
    with pytest.raises(cukit.CompileError) as info:
        cukit.Program(src, include_dirs=[tmp_path]).ptx("sm_90")
    assert "bad.h:1:38: error: identifier \"nope\" is undefined\n" in str(info.value)


def test_lineinfo_puts_source_lines_in_the_ptx():
    src = 'extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n'
    assert b".loc" not in cukit.Program(src).ptx("sm_90")
    assert b".loc" in cukit.Program(src, lineinfo=True).ptx("sm_90")


def test_fp16_and_bf16_headers_work_with_no_setup():
    src = r"""
    #include <cuda_fp16.h>
    #include <cuda_bf16.h>
    #include <cuda/std/limits>
    #include <cub/warp/warp_reduce.cuh>
    extern "C" __global__ void k(__half* h, __nv_bfloat16* b) {
        h[0] = __float2half(cuda::std::numeric_limits<float>::epsilon());
        b[0] = __float2bfloat16(1.0f);
    }
    """
    assert b".entry k" in cukit.Program(src).ptx("sm_90")


# ---------------------------------------------------------------- on the GPU


@pytest.mark.gpu
@pytest.mark.parametrize("expr,dtype", [("axpy<float>", np.float32), ("axpy<double>", np.float64),
                                        ("axpy<int>", np.int32),
                                        ("axpy<unsigned long long>", np.uint64)])
def test_template_kernels_launch_with_checked_arguments(expr, dtype, rng):
    mod = cukit.compile(AXPY, name_expressions=EXPRS)
    k = mod.get_kernel(expr)
    n = 1001
    x = (rng.random(n) * 100).astype(dtype)
    y0 = (rng.random(n) * 100).astype(dtype)
    y = cukit.to_device(y0)
    k(dtype(3), cukit.to_device(x), y, n, grid=4, block=256)
    np.testing.assert_allclose(y.get(), dtype(3) * x + y0, rtol=1e-6)
    other = np.float32 if dtype != np.float32 else np.float64
    with pytest.raises(TypeError, match="float32|float64"):
        k(dtype(3), cukit.to_device(x.astype(other)), y, n, grid=4, block=256)


@pytest.mark.gpu
def test_half_scalars_and_arrays(rng):
    src = r"""
    extern "C" __global__ void scale(half a, const half* x, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = __half2float(a) * __half2float(x[i]);
    }
    """
    mod = cukit.compile(src)
    n = 777
    x = rng.standard_normal(n).astype(np.float16)
    out = cukit.to_device(poison(n, np.float32))
    mod.scale(1.5, cukit.to_device(x), out, n, grid=4, block=256)
    np.testing.assert_array_equal(out.get(), np.float32(1.5) * x.astype(np.float32))
    with pytest.raises(TypeError, match="float16"):
        mod.scale(1.5, cukit.to_device(x.astype(np.float32)), out, n, grid=4, block=256)


@pytest.mark.gpu
def test_bfloat16_arrays_through_ml_dtypes(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    src = r"""
    extern "C" __global__ void twice(__nv_bfloat16 a, const __nv_bfloat16* x, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = __bfloat162float(a) * __bfloat162float(x[i]);
    }
    """
    mod = cukit.compile(src)
    n = 513
    x = rng.standard_normal(n).astype(ml_dtypes.bfloat16)
    out = cukit.to_device(poison(n, np.float32))
    mod.twice(2.0, cukit.to_device(x), out, n, grid=3, block=256)
    np.testing.assert_array_equal(out.get(), 2 * x.astype(np.float32))


@pytest.mark.gpu
@pytest.mark.unsanitized  # its kernel faults on purpose: memcheck rightly reports it
def test_debug_mode_names_the_faulting_launch():
    code = textwrap.dedent(r"""
        import numpy as np, cukit
        cukit.set_debug(True)
        mod = cukit.compile('''
        extern "C" __global__ void poke(float a, float* p, int n) { p[1 << 28] = a; }
        ''')
        x = cukit.zeros((4, 8), np.float32)
        try:
            mod.poke(1.5, x, 32, grid=(2, 1), block=(64, 1, 1))
        except cukit.KernelFaultError as e:
            print(e)
        else:
            print("no error")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in out
    assert ("(debug mode) the launch that failed: poke with grid=(2, 1, 1), block=(64, 1, 1), "
            "shared_mem=0; its arguments:") in out
    assert "    a: float <- 1.5" in out
    assert "    p: float* <- cukit.Array float32 (4, 8)" in out
    assert "    n: int <- 32" in out


@pytest.mark.gpu
def test_debug_mode_is_off_by_default_and_switchable():
    assert cukit.set_debug(True) is False
    try:
        mod = cukit.compile('extern "C" __global__ void nop(int* p) { p[0] = 1; }')
        x = cukit.zeros(1, np.int32)
        mod.nop(x, grid=1, block=1)
        assert x.get()[0] == 1
    finally:
        assert cukit.set_debug(False) is True


GLOBALS = r"""
__constant__ float coef[16];
__device__ int counter;
__device__ double table[4][8];
namespace ns { __device__ float v[3]; }
extern "C" __global__ void apply(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { y[i] = coef[i % 16] * x[i] + (float)table[i % 4][i % 8] + ns::v[i % 3]; atomicAdd(&counter, 1); }
}
"""


@pytest.mark.gpu
def test_constant_and_device_globals_round_trip(rng):
    mod = cukit.compile(GLOBALS, name_expressions=["&ns::v"])
    coef, counter, table, v = (mod.get_global(n) for n in ("coef", "counter", "table", "ns::v"))
    assert (coef.dtype, coef.shape) == (np.float32, (16,))
    assert (counter.dtype, counter.shape) == (np.int32, ())
    assert (table.dtype, table.shape) == (np.float64, (4, 8))
    assert (v.dtype, v.shape) == (np.float32, (3,))
    c, t, vv = rng.random(16, dtype=np.float32), rng.random((4, 8)), rng.random(3, dtype=np.float32)
    coef.set(c)
    table.set(t)
    v.set(vv)
    counter.set(np.array(5, np.int32))
    np.testing.assert_array_equal(coef.get(), c)
    np.testing.assert_array_equal(table.get(), t)
    n = 1000
    x = rng.random(n, dtype=np.float32)
    y = cukit.to_device(poison(n, np.float32))
    mod.apply(cukit.to_device(x), y, n, grid=4, block=256)
    i = np.arange(n)
    want = c[i % 16] * x + t[i % 4, i % 8].astype(np.float32) + vv[i % 3]
    np.testing.assert_allclose(y.get(), want, rtol=1e-6)
    assert counter.get() == 5 + n


@pytest.mark.gpu
def test_get_global_overrides_and_errors():
    mod = cukit.compile(GLOBALS, name_expressions=["&ns::v"])
    raw = mod.get_global("coef", dtype=np.uint32)
    assert (raw.dtype, raw.shape) == (np.uint32, (16,))
    assert mod.get_global("table", shape=(32,)).shape == (32,)
    with pytest.raises(AttributeError, match="no __device__ or __constant__ variable 'nope'"):
        mod.get_global("nope")
    with pytest.raises(ValueError, match="'coef' has 64 bytes, too few for shape"):
        mod.get_global("coef", shape=(17,))


@pytest.mark.gpu
def test_a_global_keeps_its_module_loaded(rng):
    coef = cukit.compile(GLOBALS.replace("coef", "coef2"), name_expressions=["&ns::v"]).get_global("coef2")
    cukit.clear_cache()  # the in-process cache no longer holds the module
    c = rng.random(16, dtype=np.float32)
    coef.set(c)
    np.testing.assert_array_equal(coef.get(), c)


def test_globals_are_read_per_declarator():
    src = r"""
    __device__ float *p, q;
    __device__ int arr[4], *ptr;
    template <class T, int N> struct Foo { T x[N]; };
    __device__ Foo<int, 3> foo;
    __constant__ float c3[3] = {1, 2, 3};
    __device__ unsigned long long big[2][0x10];
    typedef double real;
    __device__ real r;
    namespace ns { __device__ half h[4]; }
    __device__ float not_a_variable(int a) { return a; }
    """
    assert cukit.Program(src).globals == {
        "p": ("uint64", ()), "q": ("float32", ()), "arr": ("int32", (4,)),
        "ptr": ("uint64", ()), "foo": ("unknown", ()), "c3": ("float32", (3,)),
        "big": ("uint64", (2, 16)), "r": ("float64", ()), "ns::h": ("float16", (4,)),
    }


@pytest.mark.gpu
def test_debug_mode_leaves_captures_alone(rng):
    mod = cukit.compile('extern "C" __global__ void inc(float* p) { p[threadIdx.x] += 1.0f; }')
    x0 = rng.random(32, dtype=np.float32)
    x = cukit.to_device(x0)
    cukit.synchronize()  # the upload (legacy stream) lands before s2 and s use x
    s, s2 = cukit.Stream(), cukit.Stream()
    was = cukit.set_debug(True)
    try:
        with s.capture() as g:
            mod.inc(x, grid=1, block=32, stream=s)
            mod.inc(x, grid=1, block=32, stream=s2)  # runs now: not waited for, not captured
        s2.synchronize()
        g.launch(s)
        s.synchronize()
    finally:
        cukit.set_debug(was)
    np.testing.assert_allclose(x.get(), x0 + 2, rtol=1e-6)


@pytest.mark.gpu
def test_get_global_refuses_a_shape_that_overflows():
    mod = cukit.compile(GLOBALS, name_expressions=["&ns::v"])
    with pytest.raises(ValueError, match="too (large|few)"):
        mod.get_global("coef", dtype=np.int32, shape=(1 << 62,))
    with pytest.raises(ValueError, match="too large"):
        mod.get_global("coef", shape=(1 << 40, 1 << 40))
