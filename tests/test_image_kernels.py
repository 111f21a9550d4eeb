"""Kernels no declaration names: C++ kernels asked for by their mangled names, kernels
of loaded PTX and cubin images (Module.load, PyCUDA's module_from_buffer/_file),
sources given as objects, and attribute macros before a kernel's name."""
import numpy as np
import pytest

import cukit
from conftest import EMULATOR, poison

import cukit.pycuda.driver as drv
from cukit.pycuda import gpuarray
from cukit.pycuda.compiler import SourceModule
from cukit.pycuda.compiler import compile as pycuda_compile

gpu = pytest.mark.gpu

CPP = r"""
struct Pair { float a; int b; };
namespace lab {
struct Pair { double w; };
__global__ void shift(float *x, const ::Pair p, lab::Pair *q, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += p.a + p.b;
    if (i == 0) q->w = 2.0 * q->w;
}
}
__global__ void initkernel(int n, float *x)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 2 * x[i] + 1;
}
template <typename T> __global__ void scale(T *x, T a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
template __global__ void scale<float>(float *, float, int);
template __global__ void scale<double>(double *, double, int);
template <typename T, int K> __global__ void addk(const T *x, T *y, unsigned long long n)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + (T)K;
}
template __global__ void addk<int, 7>(const int *, int *, unsigned long long);
template __global__ void addk<short, -3>(const short *, short *, unsigned long long);
"""


def native_image(src):
    """A cubin on a GPU; PTX on the emulator (it runs PTX only)."""
    return pycuda_compile(src, no_extern_c=True,
                          target="ptx" if EMULATOR else "cubin")


# ------------------------------------------------------------------ mangled names


@gpu
def test_a_cpp_kernel_by_its_mangled_name_and_its_own(rng):
    m = cukit.Program(CPP).load()
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    for name in ("initkernel", "_Z10initkerneliPf"):
        d = cukit.to_device(x)
        k = m.get_kernel(name)
        assert "initkernel(int" in str(k)
        k(n, d, grid=2, block=256)
        np.testing.assert_array_equal(d.get(), 2 * x + 1)
    # the same kernel object for both names, and a wrong array refused by its types
    assert m.get_kernel("_Z10initkerneliPf") is m.get_kernel("_Z10initkerneliPf")
    with pytest.raises(TypeError, match="float32"):
        m.get_kernel("_Z10initkerneliPf")(n, cukit.zeros(n, np.float64), grid=2, block=256)


@gpu
@pytest.mark.parametrize("name,dtype,factor", [
    ("_Z5scaleIfEvPT_S0_i", np.float32, 3.5),
    ("_Z5scaleIdEvPT_S0_i", np.float64, -1.25),
])
def test_explicit_template_instances_by_mangled_name(rng, name, dtype, factor):
    m = cukit.Program(CPP).load()
    k = m.get_kernel(name)
    assert str(k.signature.params[0][0]).rstrip() in ("float*", "double*")
    n = 1000
    x = rng.standard_normal(n).astype(dtype)
    d = cukit.to_device(x)
    k(d, factor, n, grid=4, block=256)
    np.testing.assert_array_equal(d.get(), x * dtype(factor))
    with pytest.raises(TypeError):
        k(d, factor, 1.5, grid=4, block=256)  # an int parameter, read from the name


@gpu
@pytest.mark.parametrize("name,dtype,k", [
    ("_Z4addkIiLi7EEvPKT_PS0_y", np.int32, 7),
    ("_Z4addkIsLin3EEvPKT_PS0_y", np.int16, -3),
])
def test_template_value_arguments_in_mangled_names(rng, name, dtype, k):
    m = cukit.Program(CPP).load()
    kern = m.get_kernel(name)
    n = 777
    x = rng.integers(-1000, 1000, n).astype(dtype)
    y = cukit.to_device(poison(n, dtype))
    kern(cukit.to_device(x), y, n, grid=4, block=256)
    np.testing.assert_array_equal(y.get(), (x + k).astype(dtype))


@gpu
def test_nested_names_and_structs_by_value(rng):
    m = cukit.Program(CPP).load()
    k = m.get_kernel("_ZN3lab5shiftEPf4PairPNS_4PairEi")
    assert "lab::shift" in str(k)
    n = 100
    x = rng.standard_normal(n).astype(np.float32)
    d = cukit.to_device(x)
    q = cukit.to_device(np.array([1.5]))
    pair = np.array([(0.25, 3)], dtype=[("a", np.float32), ("b", np.int32)])[0]
    k(d, pair, q, n, grid=1, block=128)
    np.testing.assert_array_equal(d.get(), x + np.float32(3.25))
    assert q.get()[0] == 3.0


@gpu
def test_a_name_not_in_the_module_lists_its_kernels():
    m = cukit.Program(CPP).load()
    with pytest.raises(AttributeError, match="has no kernel '_Z7nothingv'.*initkernel"):
        m.get_kernel("_Z7nothingv")


# ------------------------------------------------------------------ images


@gpu
def test_ptx_entries_give_each_kernel_its_parameters(rng):
    ptx = cukit.Program(CPP + 'extern "C" __global__ void axpy(float a, const float *x, '
                              'float *y, int n) { int i = threadIdx.x; '
                              'if (i < n) y[i] += a * x[i]; }').ptx()
    m = cukit.Module.load(ptx.encode() if isinstance(ptx, str) else ptx)
    k = m.get_kernel("axpy")
    assert [t for t, _ in k.signature.params] == ["float", "u64", "u64", "u32"]
    n = 200
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dy = cukit.to_device(y)
    k(np.float32(2.5), cukit.to_device(x), dy, np.int32(n), grid=1, block=256)
    np.testing.assert_allclose(dy.get(), y + np.float32(2.5) * x, rtol=1e-6, atol=1e-6)
    k(2.5, cukit.to_device(x), dy, n, grid=1, block=256)  # Python numbers too
    with pytest.raises(TypeError, match="integer or address"):
        k(2.5, cukit.to_device(x), dy, 2.0, grid=1, block=256)
    with pytest.raises(TypeError, match="4 bytes here"):
        k(2.5, cukit.to_device(x), dy, np.int64(n), grid=1, block=256)
    with pytest.raises(OverflowError, match="does not fit"):
        k(2.5, cukit.to_device(x), dy, 2 ** 40, grid=1, block=256)


@gpu
def test_module_from_buffer_and_file_launch_and_prepare(ctx, rng, tmp_path):
    image = native_image(CPP)
    path = tmp_path / ("k.ptx" if EMULATOR else "k.cubin")
    path.write_bytes(image)
    n = 500
    x = rng.standard_normal(n).astype(np.float32)
    for mod in (drv.module_from_buffer(image), drv.module_from_file(str(path))):
        f = mod.get_function("_Z5scaleIfEvPT_S0_i")
        xg = gpuarray.to_gpu(x)
        f(xg, np.float32(3), np.int32(n), block=(256, 1, 1), grid=(2, 1))
        np.testing.assert_array_equal(xg.get(), x * np.float32(3))
        f.prepare("Pfi")
        f.prepared_call((2, 1), (256, 1, 1), xg.gpudata, 2.0, n)
        np.testing.assert_array_equal(xg.get(), x * np.float32(6))
        g = mod.get_function("_Z10initkerneliPf")
        g(np.int32(n), xg, block=(256, 1, 1), grid=(2, 1))
        np.testing.assert_array_equal(xg.get(), x * np.float32(12) + 1)


def test_module_from_file_that_does_not_exist(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.cubin"):
        drv.module_from_file(str(tmp_path / "nothing.cubin"))


@gpu
def test_sizes_alone_take_numpy_scalars_of_their_size(rng):
    """A kernel no list describes (a macro made its declaration): the driver's sizes."""
    src = ('#define KERNEL(name) __global__ void name\n'
           'extern "C" KERNEL(fill)(float *x, float v, int n) '
           '{ int i = threadIdx.x; if (i < n) x[i] = v; }')
    m = cukit.Program(src).load()
    k = m.get_kernel("fill")
    assert [t for t, _ in k.signature.params] == ["8 bytes", "4 bytes", "4 bytes"]
    d = cukit.to_device(poison(64, np.float32))
    v = np.float32(rng.standard_normal())
    k(d, v, np.int32(64), grid=1, block=64)
    np.testing.assert_array_equal(d.get(), np.full(64, v))
    with pytest.raises(TypeError, match="has 8"):
        k(d, np.float64(1), np.int32(64), grid=1, block=64)


# ------------------------------------------------------------------ PyCUDA's shapes


@gpu
def test_pycuda_no_extern_c_program_with_curand(ctx):
    """The usual curand pattern: C++ kernels, called by mangled name or plain name."""
    src = r"""
#include <curand_kernel.h>
__global__ void initkernel(curandState *s, unsigned long long seed)
{ int i = threadIdx.x; curand_init(seed, i, 0, &s[i]); }
__global__ void draw(curandState *s, float *out)
{ int i = threadIdx.x; out[i] = curand_uniform(&s[i]); }
"""
    try:
        mod = SourceModule(src, no_extern_c=True)
    except drv.CompileError as e:
        pytest.skip("curand_kernel.h is not available here: %s" % str(e)[:200])
    n = 128
    states = drv.mem_alloc(n * 48)
    mod.get_function("_Z10initkernelP17curandStateXORWOWy")(states, np.uint64(99),
                                                            block=(n, 1, 1))
    out = gpuarray.empty(n, np.float32)
    mod.get_function("_Z4drawP17curandStateXORWOWPf")(states, out, block=(n, 1, 1))
    a = out.get()
    mod.get_function("initkernel")(states, np.uint64(99), block=(n, 1, 1))
    mod.get_function("draw")(states, out, block=(n, 1, 1))
    b = out.get()
    np.testing.assert_array_equal(a, b)  # the same seed: the same stream
    assert ((a > 0) & (a <= 1)).all() and len(np.unique(a)) > n // 2


class _Code:
    """What cgen/codepy hand to SourceModule: an object whose str() is the source."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


@gpu
def test_sourcemodule_of_a_code_object(ctx, rng):
    mod = SourceModule(_Code("__global__ void twice(float *x) "
                             "{ x[threadIdx.x] *= 2; }"))
    x = rng.standard_normal(32).astype(np.float32)
    xg = gpuarray.to_gpu(x)
    mod.get_function("twice")(xg, block=(32, 1, 1))
    np.testing.assert_array_equal(xg.get(), 2 * x)
    assert pycuda_compile(_Code("__global__ void k(int *y) { *y = 1; }"), target="ptx")


@gpu
def test_attribute_macro_before_the_kernel_name(ctx, rng):
    src = r"""
#define REQD_WG_SIZE(X, Y, Z) __launch_bounds__(X * Y * Z, 1)
__global__ void REQD_WG_SIZE(128, 1, 1) scan_step(float *x, const float *y, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += y[i]; }
"""
    mod = SourceModule(src)
    assert "REQD_WG_SIZE" not in str(mod.module)
    f = mod.get_function("scan_step")
    assert [n for _, n in f._k.signature.params] == ["x", "y", "n"]
    x = rng.standard_normal(300).astype(np.float32)
    y = rng.standard_normal(300).astype(np.float32)
    xg = gpuarray.to_gpu(x)
    f(xg, gpuarray.to_gpu(y), np.int32(300), block=(128, 1, 1), grid=(3, 1))
    np.testing.assert_array_equal(xg.get(), x + y)


@gpu
def test_mangled_names_no_declaration_shows_are_read_from_the_name(rng):
    """Kernels a macro declares: the reader sees none, the mangled name says all."""
    src = r"""
#define KERNEL(name) __global__ void name
struct Pair { float a; int b; };
namespace lab { namespace inner {
template <typename T> KERNEL(mix)(T *x, const T *y, Pair p, const Pair *q, int n)
{ int i = threadIdx.x; if (i < n) x[i] = x[i] * p.a + y[i] * q->b; }
template __global__ void mix<float>(float *, const float *, Pair, const Pair *, int);
} }
"""
    m = cukit.Program(src).load()
    k = m.get_kernel("_ZN3lab5inner3mixIfEEvPT_PKS2_4PairPKS6_i")
    assert [t for t, _ in k.signature.params] == [
        "float*", "const float*", "Pair", "const Pair*", "int"]
    n = 64
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dt = np.dtype([("a", np.float32), ("b", np.int32)])
    pair = np.array([(1.5, 0)], dt)[0]
    q = cukit.to_device(np.array([(0, 3)], dt).view(np.uint8))
    dx = cukit.to_device(x)
    k(dx, cukit.to_device(y), pair, q, n, grid=1, block=64)
    np.testing.assert_allclose(dx.get(), x * np.float32(1.5) + y * 3, rtol=1e-6, atol=1e-6)
