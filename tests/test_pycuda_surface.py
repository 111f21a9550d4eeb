"""cukit.pycuda: the rest of PyCUDA's surface that programs use (issue 22, items 5, 6, 9,
10 and 11): GPUArrays as copy sources, PyCUDA's lenient argument types, autoprimaryctx,
-W error, and the driver, gpuarray, elementwise, tools and curandom pieces, each against
numpy on fresh random data."""
import io
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import cukit
from conftest import poison

import cukit.pycuda as pycuda
import cukit.pycuda.driver as drv
from cukit.pycuda import curandom, gpuarray
from cukit.pycuda.compiler import SourceModule
from cukit.pycuda.elementwise import (ElementwiseKernel, get_elwise_kernel,
                                      get_elwise_kernel_and_types, get_elwise_module,
                                      get_linear_combination_kernel)
from cukit.pycuda.reduction import ReductionKernel
from cukit.pycuda.scan import ExclusiveScanKernel, InclusiveScanKernel
from cukit.pycuda.tools import DebugMemoryPool, DeviceData, OccupancyRecord

gpu = pytest.mark.gpu
SRC_DIR = os.path.dirname(os.path.dirname(os.path.abspath(cukit.__file__)))


def run_py(*args, code=None, timeout=300):
    """python [args] in a subprocess with this checkout's cukit first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("CUKIT_BACKEND", "emulator")
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


class _Foreign:
    """Another library's device array: only __cuda_array_interface__."""

    def __init__(self, a):
        self._a = a
        self.__cuda_array_interface__ = a.__cuda_array_interface__


# ------------------------------------------------------------------ item 5: device sources


@gpu
@pytest.mark.parametrize("make", ["gpuarray", "cukit", "foreign"])
def test_to_gpu_of_a_device_array_copies_device_to_device(ctx, rng, make):
    host = rng.standard_normal((37, 5)).astype(np.float32)
    a = gpuarray.to_gpu(host)
    src = {"gpuarray": a, "cukit": a.array, "foreign": _Foreign(a)}[make]
    b = gpuarray.to_gpu(src)
    assert isinstance(b, gpuarray.GPUArray) and b.shape == host.shape and b.dtype == host.dtype
    assert b.ptr != a.ptr
    np.testing.assert_array_equal(b.get(), host)
    b.fill(0)  # a copy: the source keeps its values
    np.testing.assert_array_equal(a.get(), host)


@gpu
def test_to_gpu_keeps_fortran_order_and_to_gpu_async_copies_on_a_stream(ctx, rng):
    host = np.asfortranarray(rng.standard_normal((6, 9)))
    a = gpuarray.to_gpu(host)
    b = gpuarray.to_gpu(a)
    assert b.flags.f_contiguous
    np.testing.assert_array_equal(b.get(), host)
    s = drv.Stream()
    c = gpuarray.to_gpu_async(a.T, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(c.get(), host.T)


@gpu
def test_set_from_device_arrays_and_its_errors(ctx, rng):
    host = rng.integers(-1000, 1000, (4, 25)).astype(np.int32)
    src = gpuarray.to_gpu(host)
    dst = gpuarray.to_gpu(poison((100,), np.int32))
    dst.set(src)  # same size, another shape: read in C order, as PyCUDA does
    np.testing.assert_array_equal(dst.get(), host.ravel())
    dst2 = gpuarray.to_gpu(poison((4, 25), np.int32))
    dst2.set(_Foreign(src))
    np.testing.assert_array_equal(dst2.get(), host)
    dst3 = gpuarray.to_gpu(poison((25, 4), np.int32))
    dst3.set(src.T)  # a strided source
    np.testing.assert_array_equal(dst3.get(), host.T)
    with pytest.raises(TypeError, match="float32.*int32|int32.*float32"):
        gpuarray.empty(100, np.float32).set(src)
    with pytest.raises(ValueError, match="elements"):
        gpuarray.empty(99, np.int32).set(src)


# ------------------------------------------------------------------ item 6: lenient types


@gpu
def test_signedness_differences_run_silently_in_the_builders(ctx, rng):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even a warning
        u8 = rng.integers(0, 100, 300).astype(np.uint8)
        a = gpuarray.to_gpu(u8)
        ElementwiseKernel("char *x", "x[i] = x[i] + 1")(a)
        np.testing.assert_array_equal(a.get(), u8 + 1)

        i64 = rng.integers(-10**12, 10**12, 200)
        b = gpuarray.to_gpu(i64.astype(np.uint64))
        ElementwiseKernel("long *x", "x[i] = -x[i]")(b)
        np.testing.assert_array_equal(b.get().view(np.int64), -i64)

        u32 = rng.integers(0, 1000, 500).astype(np.uint32)
        c = gpuarray.to_gpu(u32)
        InclusiveScanKernel(np.int32, "a+b")(c)
        np.testing.assert_array_equal(c.get(), np.cumsum(u32).astype(np.uint32))
        d = gpuarray.to_gpu(u32)
        ExclusiveScanKernel(np.int32, "a+b", 0)(d)
        np.testing.assert_array_equal(d.get()[1:], np.cumsum(u32)[:-1].astype(np.uint32))

        r = ReductionKernel(np.int64, "0", "a+b", "x[i]", "int *x")(gpuarray.to_gpu(u32))
        assert int(r.get()) == int(u32.sum())


@gpu
def test_a_size_mismatch_in_elementwise_warns_once_and_reads_the_memory_as_declared(ctx, rng):
    floats = rng.standard_normal(128).astype(np.float32)
    a = gpuarray.to_gpu(floats.view(np.float64))  # 64 doubles whose bytes are 128 floats
    k = ElementwiseKernel("float *y", "y[i] = y[i] * 2", name="twice")
    with pytest.warns(pycuda.PycudaCompatWarning, match="float64.*float32"):
        k(a)
    expected = floats.copy()
    expected[:64] *= 2  # the first 64 floats of the buffer: n is the array's size
    np.testing.assert_array_equal(a.get().view(np.float32), expected)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k(a)  # once per kernel and argument
    expected[:64] *= 2
    np.testing.assert_array_equal(a.get().view(np.float32), expected)


@gpu
def test_a_declared_type_wider_than_the_data_is_refused_in_the_builders(ctx, rng):
    x = rng.standard_normal(10).astype(np.float32)
    a = gpuarray.to_gpu(x)
    with pytest.raises(TypeError, match="past the end"):
        ElementwiseKernel("double *y", "y[i] = 0")(a)
    np.testing.assert_array_equal(a.get(), x)


@gpu
def test_sourcemodule_runs_a_float64_array_for_float_star_with_one_warning(ctx, rng):
    source = "__global__ void twice(float *x) { x[threadIdx.x] *= 2; }"
    f = SourceModule(source).get_function("twice")
    floats = rng.standard_normal(32).astype(np.float32)
    x = floats.view(np.float64)
    for arg in ("gpuarray", "cukit", "foreign"):
        a = gpuarray.to_gpu(x)
        src = {"gpuarray": a, "cukit": a.array, "foreign": _Foreign(a)}[arg]
        g = SourceModule(source).get_function("twice")
        with pytest.warns(pycuda.PycudaCompatWarning, match=r"twice\(\) argument 1 'x'"):
            g(src, block=(16, 1, 1))
        got = floats.copy()
        got[:16] *= 2
        np.testing.assert_array_equal(a.get().view(np.float32), got)
    # once per kernel and argument; the prepared path too
    a = gpuarray.to_gpu(x)
    with pytest.warns(pycuda.PycudaCompatWarning):
        f(a, block=(16, 1, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(a, block=(16, 1, 1))
    p = SourceModule(source).get_function("twice").prepare("P")
    with pytest.warns(pycuda.PycudaCompatWarning):
        p.prepared_call((1, 1), (16, 1, 1), a)
    got = floats.copy()
    got[:16] *= 8
    np.testing.assert_array_equal(a.get().view(np.float32), got)


@gpu
def test_the_compat_warning_can_be_an_error_and_nothing_runs(ctx, rng):
    f = SourceModule("__global__ void twice(float *x) { x[threadIdx.x] *= 2; }") \
        .get_function("twice")
    x = rng.standard_normal(8)
    a = gpuarray.to_gpu(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pycuda.PycudaCompatWarning)
        with pytest.raises(pycuda.PycudaCompatWarning):
            f(a, block=(8, 1, 1))
    np.testing.assert_array_equal(a.get(), x)
    assert issubclass(pycuda.PycudaCompatWarning, UserWarning)


@gpu
def test_sourcemodule_signedness_difference_is_silent(ctx, rng):
    f = SourceModule("__global__ void neg(int *x) { x[threadIdx.x] = -x[threadIdx.x]; }") \
        .get_function("neg")
    x = rng.integers(0, 2**31, 32).astype(np.uint32)
    a = gpuarray.to_gpu(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(a.array, block=(32, 1, 1))
        f(a, block=(32, 1, 1))
    np.testing.assert_array_equal(a.get(), x)


@gpu
def test_cukit_own_api_stays_strict(ctx, rng):
    mod = cukit.compile('extern "C" __global__ void neg(int *x) { x[threadIdx.x] *= -1; }')
    u = cukit.to_device(rng.integers(0, 100, 32).astype(np.uint32))
    with pytest.raises(TypeError, match="uint32.*int32"):
        mod.neg(u, grid=1, block=32)
    f64 = cukit.to_device(rng.standard_normal(32))
    with pytest.raises(TypeError):
        cukit.ElementwiseKernel("float *y", "y[i] = 1")(f64)
    with pytest.raises(TypeError, match="declared"):
        cukit.ElementwiseKernel("int32 x", "int32 y", "y = x", "k")(u)
    with pytest.raises(TypeError, match="declared int32"):
        cukit.ReductionKernel(np.int32, "0", "a+b", map_expr="x[i]", arguments="int *x")(u)


# ------------------------------------------------------------------ items 9, 10


def test_autoprimaryctx_imports_and_makes_the_primary_context_current():
    r = run_py("-m", "cukit.pycuda", "-c",
               "import pycuda.autoprimaryctx as a, pycuda.driver as d\n"
               "assert d.Context.get_current() is a.context\n"
               "print('device', int(a.device))")
    assert r.returncode == 0, r.stderr
    assert "device 0" in r.stdout


def test_minus_w_error_runs_a_program_using_the_lazy_imports(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import numpy as np\n"
        "import pycuda.autoinit\n"
        "import pycuda.curandom as cr, pycuda.gpuarray as ga, pycuda.tools as tools\n"
        "a = cr.rand(50)\n"
        "assert tools.dtype_to_ctype(np.float32) == 'float'\n"
        "b = ga.to_gpu(a)\n"
        "print('ok', np.isclose(float(ga.sum(b).get()), a.get().sum(), rtol=1e-5))\n")
    r = run_py("-W", "error", "-m", "cukit.pycuda", str(prog))
    assert r.returncode == 0, r.stderr
    assert "ok True" in r.stdout


# ------------------------------------------------------------------ item 11: gpuarray


def _splay(n, dev):
    warp = dev.get_attribute(drv.device_attribute.WARP_SIZE)
    most = 32 * dev.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
    if n < warp:
        return (1, 1), (warp, 1, 1)
    if n < most * warp:
        return ((n + warp - 1) // warp, 1), (warp, 1, 1)
    if n < most * 128:
        return (most, 1), (((n + warp - 1) // warp + most - 1) // most * warp, 1, 1)
    return (most, 1), (128, 1, 1)


@gpu
@pytest.mark.parametrize("n", [1, 31, 100, 2000, 5000, 100000])
def test_grid_and_block_as_pycuda_computes_them_drive_a_prepared_call(ctx, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    a = gpuarray.to_gpu(x)
    assert (a._grid, a._block) == _splay(n, ctx.get_device()) == gpuarray.splay(n)
    f = get_elwise_kernel("float *y, const float *x", "y[i] = 3 * x[i]", "triple")
    y = gpuarray.to_gpu(poison(n, np.float32))
    f.prepared_call(a._grid, a._block, y.gpudata, a.gpudata, a.size)
    np.testing.assert_allclose(y.get(), 3 * x, rtol=1e-6)


@gpu
def test_any_and_all_as_functions(ctx, rng):
    for host in (rng.integers(0, 2, 50), np.zeros(20), np.ones(7), rng.standard_normal(9)):
        a = gpuarray.to_gpu(host)
        assert bool(gpuarray.any(a).get()) == bool(np.any(host))
        assert bool(gpuarray.all(a).get()) == bool(np.all(host))


# ------------------------------------------------------------------ item 11: elementwise


@gpu
def test_get_elwise_module_and_kernel_and_range(ctx, rng):
    from cukit.pycuda.tools import ScalarArg, VectorArg
    x = rng.standard_normal(1000)
    a = gpuarray.to_gpu(x)
    out = gpuarray.to_gpu(poison(1000, np.float64))
    mod = get_elwise_module([VectorArg(np.float64, "z"), VectorArg(np.float64, "x"),
                             ScalarArg(np.float64, "c"), ScalarArg(np.uintp, "n")],
                            "z[i] = x[i] * scale + OFFSET * i", name="affine",
                            preamble="#define OFFSET 1", loop_prep="const double scale = c",
                            after_loop="(void)scale")
    mod.get_function("affine")(out, a, np.float64(0.5), np.uintp(1000), block=(128, 1, 1),
                               grid=(3, 1))
    np.testing.assert_allclose(out.get(), x * 0.5 + np.arange(1000))

    _, f, args = get_elwise_kernel_and_types("double *z", "z[i] = -1", use_range=True)
    assert [a.name for a in args] == ["z", "start", "stop", "step"]
    out.set(x)
    f.prepared_call((2, 1), (64, 1, 1), out.gpudata, 10, 900, 7)
    expected = x.copy()
    expected[10:900:7] = -1
    np.testing.assert_array_equal(out.get(), expected)


@gpu
def test_get_linear_combination_kernel(ctx, rng):
    n = 777
    x0 = rng.standard_normal(n).astype(np.float32)
    x1 = rng.standard_normal(n)
    a0, a1 = np.float32(rng.standard_normal()), np.float64(rng.standard_normal())
    f, textures = get_linear_combination_kernel(
        ((False, np.float32, np.float32), (False, np.float64, np.float64)), np.float64)
    assert textures == []
    z = gpuarray.to_gpu(poison(n, np.float64))
    g0, g1 = gpuarray.to_gpu(x0), gpuarray.to_gpu(x1)
    f.prepared_async_call(z._grid, z._block, None, a0, g0.gpudata, a1, g1.gpudata,
                          z.gpudata, n)
    np.testing.assert_allclose(z.get(), (a0 * x0).astype(np.float64) + a1 * x1, rtol=1e-6,
                               atol=1e-6)  # a0*x0 is a float product in C, as in numpy
    assert get_linear_combination_kernel(
        [(False, np.float32, np.float32), (False, np.float64, np.float64)], np.float64)[0] is f


# ------------------------------------------------------------------ item 11: tools


@gpu
def test_device_data_and_occupancy_record(ctx):
    dev = ctx.get_device()
    d = DeviceData()
    assert d.max_threads == dev.get_attribute(drv.device_attribute.MAX_THREADS_PER_BLOCK)
    assert d.warp_size == dev.get_attribute(drv.device_attribute.WARP_SIZE)
    assert d.registers == dev.get_attribute(drv.device_attribute.MAX_REGISTERS_PER_BLOCK)
    assert d.shared_memory == dev.get_attribute(drv.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK)
    assert d.warps_per_mp == 64 and d.thread_blocks_per_mp == 8
    assert (d.align_bytes(4), d.align_bytes(8), d.align(100), d.align_words(8)) == (64, 128, 128, 16)
    assert d.coalesce(17) == 32 and DeviceData.make_valid_tex_channel_count(3) == 4
    with pytest.raises(ValueError):
        d.align_bytes(3)
    o = OccupancyRecord(d, 256)
    assert (o.tb_per_mp, o.limited_by, o.warps_per_mp, o.occupancy) == (8, "device", 64, 1.0)
    o = OccupancyRecord(d, 1024)
    assert (o.tb_per_mp, o.limited_by, o.occupancy) == (2, "warps", 1.0)
    o = OccupancyRecord(d, 128, registers=255)  # 4 warps of 32 threads of 255 registers
    assert (o.tb_per_mp, o.limited_by) == (d.registers // (4 * 32 * 255), "regs")
    o = OccupancyRecord(d, 64, shared_mem=d.shared_memory // 3)
    assert (o.tb_per_mp, o.limited_by) == (3, "smem")
    with pytest.raises(ValueError, match="too many threads"):
        OccupancyRecord(d, d.max_threads + 1)
    with pytest.raises(ValueError, match="too much smem"):
        OccupancyRecord(d, 32, shared_mem=d.shared_memory + 1)


@gpu
def test_debug_memory_pool_logs_each_allocation(ctx, rng, monkeypatch):
    log = io.StringIO()
    pool = DebugMemoryPool(interactive=False, logfile=log)
    first = pool.allocate(1000)
    second = pool.allocate(2000)
    text = log.getvalue()
    assert "Allocation of size 1000" in text and "Allocation of size 2000" in text
    assert "(1000 bytes): 1x" in text and pool.active_blocks == 2
    x = rng.standard_normal(100)
    a = gpuarray.to_gpu(x)
    g = gpuarray.GPUArray(100, np.float64, allocator=pool.allocate)
    g.set(a)
    np.testing.assert_array_equal(g.get(), x)
    del first, second, g
    answers = iter(["", "my_buffer"])  # [Enter] once for the stack, then a mnemonic
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers, ""))
    ipool = DebugMemoryPool(interactive=True, logfile=log)
    ipool.allocate(64)
    assert "at: my_buffer" in log.getvalue()


# ------------------------------------------------------------------ item 11: curandom state


_DRAW = r"""
#include <curand_kernel.h>
extern "C" __global__ void draw(%s *s, float *out, int k)
{
    const int id = blockIdx.x * blockDim.x + threadIdx.x;
    %s st = s[id];
    for (int j = 0; j < k; j++)
        out[id * k + j] = curand_uniform(&st);
    s[id] = st;
}
"""


@gpu
@pytest.mark.parametrize("cls", [curandom.XORWOWRandomNumberGenerator,
                                 curandom.MRG32k3aRandomNumberGenerator])
def test_generator_state_feeds_custom_curand_kernels_and_skips_ahead(ctx, cls):
    g = cls(curandom.seed_getter_uniform)
    draw = SourceModule(_DRAW % (g.state_type, g.state_type),
                        no_extern_c=True).get_function("draw")
    n, k = g.generator_count, 4
    launch = dict(block=(g.generators_per_block, 1, 1), grid=(g.block_count, 1))
    state = g.state
    assert state is g.state and state.size % n == 0
    copy = drv.mem_alloc(state.size)
    drv.memcpy_dtod(copy, state, state.size)
    out = gpuarray.empty(n * k, np.float32)
    draw(copy, out, np.int32(k), **launch)
    before = out.get().reshape(n, k)
    assert np.all((before > 0) & (before <= 1)) and abs(before.mean() - 0.5) < 0.05
    # one seed for all: generator i is subsequence i, so the starts differ (float32
    # values of n generators meet by chance: about n**2 / 2**25 pairs among the 2**24
    # values near 1; on an H100's 135168 generators some 540)
    assert len(np.unique(before[:, 0])) > n - 16 - 4 * n * n // 2 ** 25
    g.call_skip_ahead(2)
    draw(state, out, np.int32(k), **launch)
    np.testing.assert_array_equal(out.get().reshape(n, k)[:, :2], before[:, 2:])
    # subsequences: generator 0 moved on by one subsequence starts where generator 1 did
    def same_seed(count):
        return gpuarray.to_gpu(np.full(count, 12345, np.int32))

    fresh = cls(same_seed)
    drv.memcpy_dtod(copy, fresh.state, state.size)
    draw(copy, out, np.int32(k), **launch)
    start = out.get().reshape(n, k)
    fresh.call_skip_ahead_sequence(1)
    draw(fresh.state, out, np.int32(k), **launch)
    moved = out.get().reshape(n, k)
    if cls is curandom.XORWOWRandomNumberGenerator:
        # XORWOW's sequences are curand_init's subsequences: generator 0 moved on by
        # one starts where generator 1 did
        np.testing.assert_array_equal(moved[0], start[1])
    else:  # MRG32k3a's sequences are 2**127 draws, its subsequences 2**76
        assert not np.array_equal(moved[0], start[0]) and np.all((moved > 0) & (moved <= 1))
    # per-generator skips
    fresh2 = cls(same_seed)
    skips = np.arange(n) % 3
    fresh2.call_skip_ahead_array(gpuarray.to_gpu(skips.astype(np.uint64)))
    draw(fresh2.state, out, np.int32(1), **launch)
    got = out.get()[:n]
    np.testing.assert_array_equal(got, start[np.arange(n), skips])
    with pytest.raises(ValueError, match="skips for"):
        fresh2.call_skip_ahead_array(gpuarray.to_gpu(np.zeros(3, np.uint64)))


@gpu
def test_generator_state_checks_the_seed_getter(ctx):
    g = curandom.XORWOWRandomNumberGenerator(  # right for one seed, wrong for the states
        lambda count: gpuarray.to_gpu(np.zeros(1 if count == 1 else 3, np.int32)))
    with pytest.raises(TypeError, match="int32 seeds"):
        g.state


# ------------------------------------------------------------------ item 11: driver memory


_TWICE = "__global__ void twice(float *x, int n) { int i = blockIdx.x * blockDim.x + " \
         "threadIdx.x; if (i < n) x[i] *= 2; }"


@gpu
def test_mapped_pagelocked_registered_and_managed_memory_pointers(ctx, rng):
    f = SourceModule(_TWICE).get_function("twice")
    p = drv.pagelocked_empty((10, 10), np.float32, mem_flags=drv.host_alloc_flags.DEVICEMAP)
    p[...] = rng.standard_normal((10, 10))
    expected = p * 2
    f(np.intp(p.base.get_device_pointer()), np.int32(100), block=(128, 1, 1))
    drv.Context.synchronize()
    np.testing.assert_array_equal(p, expected)
    assert p.base.get_flags() & drv.host_alloc_flags.DEVICEMAP

    r = drv.register_host_memory(rng.standard_normal(300).astype(np.float32),
                                 drv.mem_host_register_flags.DEVICEMAP)
    expected = r * 2
    f(np.intp(r.base.get_device_pointer()), np.int32(300), block=(128, 1, 1), grid=(3, 1))
    drv.Context.synchronize()
    np.testing.assert_array_equal(r, expected)
    r.base.unregister()
    with pytest.raises(ValueError, match="unregistered"):
        r.base.get_device_pointer()

    m = drv.managed_empty(50, np.float32, mem_flags=drv.mem_attach_flags.GLOBAL)
    m[...] = rng.standard_normal(50)
    expected = m * 2
    f(np.intp(m.base.get_device_pointer()), np.int32(50), block=(64, 1, 1))
    drv.Context.synchronize()
    np.testing.assert_array_equal(m, expected)


@gpu
@pytest.mark.parametrize("bits", [8, 16, 32])
def test_mem_alloc_pitch_and_2d_memsets(ctx, rng, bits):
    width, height = int(rng.integers(3, 60)), int(rng.integers(2, 9))
    dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32}[bits]
    size = np.dtype(dtype).itemsize
    alloc, pitch = drv.mem_alloc_pitch(width * size, height, 4)
    assert pitch >= width * size and pitch % 512 == 0
    before = rng.integers(0, 200, pitch * height).astype(np.uint8)
    drv.memcpy_htod(alloc, before)
    value = int(rng.integers(1, 2**bits - 1))
    setter = getattr(drv, "memset_d2d%d" % bits)
    setter(alloc, pitch, value, width, height)
    expected = before.copy().view(dtype).reshape(height, pitch // size)
    expected[:, :width] = value
    got = np.empty_like(before)
    drv.memcpy_dtoh(got, alloc)
    np.testing.assert_array_equal(got.view(dtype).reshape(height, -1), expected)
    s = drv.Stream()
    getattr(drv, "memset_d2d%d_async" % bits)(alloc, pitch, value + 1, width - 1, height, s)
    s.synchronize()
    expected[:, :width - 1] = value + 1
    drv.memcpy_dtoh(got, alloc)
    np.testing.assert_array_equal(got.view(dtype).reshape(height, -1), expected)
    with pytest.raises(drv.LogicError, match="pitch"):
        setter(alloc, 4, value, 8, height)


def test_mem_alloc_pitch_refuses_a_bad_access_size(ctx):
    with pytest.raises(drv.LogicError, match="access_size"):
        drv.mem_alloc_pitch(100, 4, 3)


@gpu
@pytest.mark.parametrize("bits", [8, 16, 32])
def test_async_memsets(ctx, rng, bits):
    dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32}[bits]
    host = rng.integers(0, 2**bits - 1, 100).astype(dtype)
    a = gpuarray.to_gpu(host)
    value = int(rng.integers(0, 2**bits - 1))
    s = drv.Stream()
    getattr(drv, "memset_d%d_async" % bits)(a.gpudata, value, 60, s)
    s.synchronize()
    host[:60] = value
    np.testing.assert_array_equal(a.get(), host)


@gpu
def test_memcpy2d_aligned_call_and_memcpy_peer(ctx, rng):
    h, w = 7, 13
    host = rng.standard_normal((h, w)).astype(np.float32)
    alloc, pitch = drv.mem_alloc_pitch(w * 4, h, 4)
    up = drv.Memcpy2D()
    up.set_src_host(host)
    up.set_dst_device(alloc)
    up.width_in_bytes, up.height, up.src_pitch, up.dst_pitch = w * 4, h, w * 4, pitch
    up(aligned=True)
    back = poison((h, w), np.float32)
    down = drv.Memcpy2D()
    down.set_src_device(alloc)
    down.set_dst_host(back)
    down.width_in_bytes, down.height, down.src_pitch, down.dst_pitch = w * 4, h, pitch, w * 4
    down(False)
    np.testing.assert_array_equal(back, host)

    x = rng.standard_normal(500)
    src, dst = drv.to_device(x), drv.mem_alloc(x.nbytes)
    drv.memcpy_peer(dst, src, x.nbytes, ctx, ctx)
    np.testing.assert_array_equal(drv.from_device(dst, x.shape, x.dtype), x)
    drv.memcpy_peer_async(dst, src, 80, stream=drv.Stream())
    drv.Context.synchronize()


@gpu
def test_cuda_array_copies_against_numpy(ctx, rng):
    desc = drv.ArrayDescriptor()
    desc.width, desc.height, desc.format, desc.num_channels = 9, 5, \
        drv.array_format.FLOAT, 1
    ary = drv.Array(desc)
    assert (ary.get_descriptor().width, ary.get_descriptor().height) == (9, 5)
    host = rng.standard_normal((5, 9)).astype(np.float32)
    drv.memcpy_htoa(ary, 0, host)
    out = poison((5, 9), np.float32)
    drv.memcpy_atoh(out, ary, 0)
    np.testing.assert_array_equal(out, host)
    part = rng.standard_normal(4).astype(np.float32)
    drv.memcpy_htoa(ary, 12, part)  # bytes 12..27: elements 3..6
    host.ravel()[3:7] = part
    drv.memcpy_atoh(out, ary, 0)
    np.testing.assert_array_equal(out, host)
    dev = drv.to_device(host * 3)
    drv.memcpy_dtoa(ary, 0, dev, host.nbytes)
    back = drv.mem_alloc(host.nbytes)
    drv.memcpy_atod(back, ary, 0, host.nbytes)
    np.testing.assert_array_equal(drv.from_device(back, host.shape, host.dtype), host * 3)
    drv.memcpy_dtoa(ary, 8, drv.to_device(part), part.nbytes)
    expected = (host * 3).ravel()
    expected[2:6] = part
    drv.memcpy_atod(back, ary, 4, 20)
    np.testing.assert_array_equal(drv.from_device(back, (5,), np.float32), expected[1:6])
    small = np.empty(3, np.float32)
    drv.memcpy_atoh(small, ary, 160)
    np.testing.assert_array_equal(small, expected[40:43])
    with pytest.raises(ValueError, match="do not fit"):
        drv.memcpy_atoh(small, ary, 170)
    with pytest.raises(TypeError, match="driver.Array"):
        drv.memcpy_htoa(dev, 0, host)


# ------------------------------------------------------------------ item 11: functions, limits


@gpu
def test_function_set_attribute_and_context_limits(ctx):
    f = SourceModule(_TWICE).get_function("twice")
    attr = drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES
    f.set_attribute(attr, 60000)
    assert f.get_attribute(attr) == 60000
    with pytest.raises(drv.LogicError):
        f.set_attribute(attr, 1 << 30)
    old = drv.Context.get_limit(drv.limit.STACK_SIZE)
    try:
        drv.Context.set_limit(drv.limit.STACK_SIZE, old + 1024)
        assert drv.Context.get_limit(drv.limit.STACK_SIZE) >= old + 1024
    finally:
        drv.Context.set_limit(drv.limit.STACK_SIZE, old)
    assert drv.Context.get_limit(drv.limit.MALLOC_HEAP_SIZE) > 0


_AXPB = r"""
__global__ void axpb(float *out, const float *x, float a, int b, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + b;
}
"""


@gpu
def test_old_launch_interface(ctx, rng):
    f = SourceModule(_AXPB).get_function("axpb")
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    a, b = np.float32(rng.standard_normal()), np.int32(rng.integers(-5, 5))
    xg, out = drv.to_device(x), drv.to_device(poison(n, np.float32))
    with pytest.raises(drv.LogicError, match="set_block_shape"):
        f.launch_grid(1, 1)
    f.set_block_shape(64, 1, 1)
    f.param_set(out, xg, a, b, np.uint32(n))
    f.launch_grid(5, 1)
    np.testing.assert_allclose(drv.from_device(out, (n,), np.float32), a * x + b, rtol=1e-6,
                               atol=1e-6)  # the device fuses a*x+b

    drv.memcpy_htod(out, poison(n, np.float32))
    f.param_set_size(28)
    f.param_setv(0, np.array([int(out)], np.uint64))
    f.param_setv(8, np.array([int(xg)], np.uint64))
    f.param_setf(16, 0.5)
    f.param_seti(20, 3)
    f.param_seti(24, 64)
    f.launch()  # one block of 64
    got = drv.from_device(out, (n,), np.float32)
    np.testing.assert_allclose(got[:64], 0.5 * x[:64] + 3, rtol=1e-6,
                               atol=1e-6)  # the device fuses a*x+b
    assert np.isnan(got[64:]).all()
    s = drv.Stream()
    f.param_seti(24, n)
    f.launch_grid_async(5, 1, s)
    s.synchronize()
    np.testing.assert_allclose(drv.from_device(out, (n,), np.float32), 0.5 * x + 3, rtol=1e-6,
                               atol=1e-6)  # the device fuses a*x+b
    f.param_set_size(20)
    with pytest.raises(drv.LogicError, match="parameter b"):
        f.launch_grid(1, 1)
    timed = f.prepare("PPfiI").prepared_timed_call((5, 1), (64, 1, 1), out, xg, a, b,
                                                   np.uint32(n))
    assert timed() >= 0
    np.testing.assert_allclose(drv.from_device(out, (n,), np.float32), a * x + b, rtol=1e-6,
                               atol=1e-6)  # the device fuses a*x+b


# ------------------------------------------------------------------ item 11: modules


def test_pycuda_driver_module_is_the_drivers():
    from cukit.pycuda import _driver
    assert _driver.mem_alloc is drv.mem_alloc and _driver.Function is drv.Function
    assert _driver.LogicError is drv.LogicError and _driver.bitlog2(1024) == 10
    r = run_py("-m", "cukit.pycuda", "-c", "import pycuda._driver as d; print(d.Device)")
    assert r.returncode == 0, r.stderr


def test_pycuda_debug_turns_on_cukit_debug_mode(tmp_path):
    r = run_py("-m", "cukit.pycuda", "-c",
               "import cukit, pycuda.debug, pycuda.driver as d\n"
               "print('debug', cukit.set_debug(True), d.CUDA_DEBUGGING)")
    assert r.returncode == 0, r.stderr
    assert "debug True True" in r.stdout and "debugging on" in r.stderr
    prog = tmp_path / "prog.py"
    prog.write_text("import sys, cukit\nprint('args', sys.argv[1:], cukit.set_debug(True))\n")
    r = run_py("-m", "cukit.pycuda", "-m", "pycuda.debug", str(prog), "x", "y")
    assert r.returncode == 0, r.stderr
    assert "args ['x', 'y'] True" in r.stdout


# ------------------------------------------------------------------ the driver calls underneath


@gpu
def test_cukit_limits_attributes_and_registered_pointers(rng):
    dev = cukit.Device(0)
    old = dev.get_limit(2)  # CU_LIMIT_MALLOC_HEAP_SIZE
    try:
        dev.set_limit(2, old + (1 << 20))
        assert dev.get_limit(2) >= old + (1 << 20)
    finally:
        dev.set_limit(2, old)
    with pytest.raises(cukit.InvalidValueError, match="cuCtxGetLimit"):
        dev.get_limit(99)
    with pytest.raises(ValueError, match=">= 0"):
        dev.set_limit(0, -1)
    k = cukit.compile('extern "C" __global__ void f(float *x) { x[threadIdx.x] += 1; }') \
        .get_kernel("f")
    k.set_attribute(8, 50000)  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    assert k.attributes["max_dynamic_shared_size_bytes"] == 50000
    with pytest.raises(cukit.InvalidValueError, match="cuFuncSetAttribute"):
        k.set_attribute(8, -5)
    host = rng.standard_normal(64).astype(np.float32)
    expected = host + 1
    r = cukit.register(host)
    k(r.device_ptr, grid=1, block=64)
    cukit.synchronize()
    np.testing.assert_array_equal(host, expected)
    r.unregister()
    with pytest.raises(ValueError, match="unregistered"):
        r.device_ptr
