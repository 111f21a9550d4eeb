"""Kernel launch on the GPU: results against numpy, argument checks, configuration checks."""
import threading

import numpy as np
import pytest

import cukit
from conftest import poison

pytestmark = pytest.mark.gpu

SRC = r"""
struct Affine { float scale; int shift; double bias; };

extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void affine(Affine p, const float* x, double* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (double)(p.scale * x[i]) + p.shift + p.bias;
}

extern "C" __global__ void scalars(signed char a, unsigned short b, int c, unsigned int d,
                                   long long e, unsigned long long f, float g, double h,
                                   bool k, double* out) {
    out[0] = a; out[1] = b; out[2] = c; out[3] = d; out[4] = (double)e; out[5] = (double)f;
    out[6] = g; out[7] = h; out[8] = k ? 1.0 : 0.0;
}

extern "C" __global__ void fill_index2d(int* out, int rows, int cols) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows && c < cols) out[r * cols + c] = r * 1000 + c;
}

extern "C" __global__ void bytes_xor(void* data, unsigned char key, size_t nbytes) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < nbytes) ((unsigned char*)data)[i] ^= key;
}

extern "C" __global__ void dyn_shared_reverse(const int* in, int* out, int n) {
    extern __shared__ int tile[];
    int i = threadIdx.x;
    if (i < n) tile[i] = in[i];
    __syncthreads();
    if (i < n) out[i] = tile[n - 1 - i];
}

extern "C" __global__ void big_shared(int* out) {
    extern __shared__ int s[];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}

__global__ void cpp_scale(double* x, double k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= k;
}

extern "C" __global__ void spin(float* x, int iters) {
    float v = x[threadIdx.x];
    for (int i = 0; i < iters; i++) v = v * 0.999f + 0.001f;
    x[threadIdx.x] = v;
}
"""


@pytest.fixture(scope="module")
def mod():
    return cukit.compile(SRC)


def test_module_and_kernel_objects(mod):
    assert mod.arch == cukit.Device(0).arch
    assert mod.device is cukit.Device(0)
    assert "saxpy" in mod.kernels and "cpp_scale" in mod.kernels
    k = mod.saxpy
    assert k is mod.get_kernel("saxpy")  # cached
    assert k.name == "saxpy"
    assert str(k.signature) == "saxpy(float a, const float* x, float* y, size_t n)"
    assert k.signature.layout == ((0, 4), (8, 8), (16, 8), (24, 8))
    attrs = k.attributes
    for key in ("num_regs", "shared_size_bytes", "local_size_bytes", "max_threads_per_block"):
        assert key in attrs
    assert attrs["max_threads_per_block"] > 0
    assert "saxpy" in dir(mod)


def test_missing_kernel_lists_the_kernels(mod):
    with pytest.raises(AttributeError) as info:
        mod.saxpi
    assert "'saxpi'" in str(info.value) and "saxpy" in str(info.value)
    assert "affine" in str(info.value)
    with pytest.raises(AttributeError, match="saxpy"):
        mod.get_kernel("nope")


@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_saxpy_matches_numpy(mod, rng, n):
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    a = float(rng.standard_normal())
    dx, dy = cukit.to_device(x), cukit.to_device(y)
    mod.saxpy(a, dx, dy, n, grid=(n + 255) // 256, block=256)
    np.testing.assert_allclose(dy.get(), np.float32(a) * x + y, rtol=1e-6, atol=1e-6)


def test_struct_by_value(mod, rng):
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    dt = np.dtype([("scale", "f4"), ("shift", "i4"), ("bias", "f8")], align=True)
    p = np.zeros((), dt)
    p["scale"], p["shift"], p["bias"] = 1.5, -3, 0.25
    out = cukit.to_device(poison(n, np.float64))
    mod.affine(p[()], cukit.to_device(x), out, n, grid=2, block=256)
    np.testing.assert_allclose(out.get(), (np.float32(1.5) * x).astype(np.float64) - 3 + 0.25)
    out2 = cukit.to_device(poison(n, np.float64))
    mod.affine(p.tobytes(), cukit.to_device(x), out2, n, grid=2, block=256)
    np.testing.assert_array_equal(out2.get(), out.get())
    with pytest.raises(TypeError, match="struct is 16 bytes"):
        mod.affine(b"12345678", cukit.to_device(x), out, n, grid=2, block=256)


def test_every_scalar_type_reaches_the_kernel(mod, rng):
    out = cukit.to_device(poison(9, np.float64))
    vals = [-7, 60000, -123456, 4000000000, -(2**40), 2**50, 0.1, 0.1, True]
    mod.scalars(*vals, out, grid=1, block=1)
    expect = [-7, 60000, -123456, 4000000000, -(2**40), 2**50, float(np.float32(0.1)), 0.1, 1]
    np.testing.assert_array_equal(out.get(), expect)
    mod.scalars(*[np.int8(-7), np.uint16(1), np.int32(2), np.uint32(3), np.int64(4),
                  np.uint64(5), np.float32(6.5), np.float64(7.25), np.bool_(False)], out,
                grid=1, block=1)
    np.testing.assert_array_equal(out.get(), [-7, 1, 2, 3, 4, 5, 6.5, 7.25, 0])


def test_2d_grid(mod):
    rows, cols = 37, 70
    out = cukit.to_device(poison((rows, cols), np.int32))
    mod.fill_index2d(out, rows, cols, grid=((cols + 15) // 16, (rows + 7) // 8), block=(16, 8))
    r, c = np.indices((rows, cols))
    np.testing.assert_array_equal(out.get(), r * 1000 + c)


def test_void_pointer_takes_any_array_and_buffers(mod, rng):
    host = rng.integers(0, 2**31, 64, dtype=np.int64)
    dev = cukit.to_device(host)
    mod.bytes_xor(dev, 0x5A, host.nbytes, grid=1, block=512)
    np.testing.assert_array_equal(dev.get().view(np.uint8), host.view(np.uint8) ^ 0x5A)
    buf = cukit.alloc(host.nbytes)
    mod.bytes_xor(buf, 1, host.nbytes, grid=1, block=512)  # a Buffer for void*
    mod.bytes_xor(int(buf), 1, host.nbytes, grid=1, block=512)  # a raw address


def test_cpp_kernel_without_extern_c(mod, rng):
    x = rng.standard_normal(100)
    d = cukit.to_device(x)
    mod.cpp_scale(d, 2.5, 100, grid=1, block=128)
    np.testing.assert_allclose(d.get(), x * 2.5)


def test_dynamic_shared_memory(mod, rng):
    n = 256
    host = rng.integers(-1000, 1000, n, dtype=np.int32)
    out = cukit.to_device(poison(n, np.int32))
    mod.dyn_shared_reverse(cukit.to_device(host), out, n, grid=1, block=n, shared_mem=n * 4)
    np.testing.assert_array_equal(out.get(), host[::-1])


def test_shared_memory_above_48k_opts_in(mod):
    limit = cukit.Device(0).attributes["max_shared_memory_per_block_optin"]
    out = cukit.to_device(poison(1024, np.int32))
    mod.big_shared(out, grid=1, block=1024, shared_mem=100 * 1024)
    np.testing.assert_array_equal(out.get(), np.arange(1024)[::-1])
    with pytest.raises(ValueError, match="max_shared_memory_per_block_optin"):
        mod.big_shared(out, grid=1, block=1024, shared_mem=limit + 1)


def test_dtype_mismatch_is_a_type_error(mod):
    x64 = cukit.zeros(10, np.float64)
    y = cukit.zeros(10, np.float32)
    with pytest.raises(TypeError, match=r"saxpy\(\) argument 2 'x' \(const float\*\): got a float64 array, but the kernel reads float32"):
        mod.saxpy(1.0, x64, y, 10, grid=1, block=32)
    with pytest.raises(TypeError, match="int32"):
        mod.saxpy(1.0, y, cukit.zeros(10, np.int32), 10, grid=1, block=32)


def test_host_array_for_a_pointer_is_a_type_error(mod):
    with pytest.raises(TypeError, match="host memory.*cukit.to_device"):
        mod.saxpy(1.0, np.zeros(10, np.float32), cukit.zeros(10, np.float32), 10, grid=1, block=32)


def test_argument_errors(mod):
    x, y = cukit.zeros(10, np.float32), cukit.zeros(10, np.float32)
    with pytest.raises(TypeError, match=r"takes 4 arguments but 3 were given; the kernel is saxpy\(float a"):
        mod.saxpy(1.0, x, y, grid=1, block=32)
    # the kernel's arguments go by position: keywords for them say so
    with pytest.raises(TypeError, match=r"saxpy\(\) takes the kernel's 4 arguments by position, in "
                       r"the kernel's order, not as keywords \(a= given\); the kernel is saxpy"):
        mod.saxpy(a=1.0, x=x, y=y, n=10, grid=1, block=32)
    with pytest.raises(TypeError, match="integer parameter"):
        mod.saxpy(1.0, x, y, 10.0, grid=1, block=32)
    with pytest.raises(OverflowError, match="argument 4 'n'"):
        mod.saxpy(1.0, x, y, -1, grid=1, block=32)
    with pytest.raises(OverflowError, match="float32"):
        mod.saxpy(1e300, x, y, 10, grid=1, block=32)
    with pytest.raises(TypeError, match="needs grid= and block="):
        mod.saxpy(1.0, x, y, 10)
    with pytest.raises(TypeError, match="unexpected keyword argument 'blocks'"):
        mod.saxpy(1.0, x, y, 10, grid=1, blocks=32)
    freed = cukit.zeros(10, np.float32)
    freed.free()
    with pytest.raises(ValueError, match="freed"):
        mod.saxpy(1.0, freed, y, 10, grid=1, block=32)


@pytest.mark.parametrize("config, words", [
    (dict(grid=1, block=2048), "block dimension x is 2048"),
    (dict(grid=1, block=(32, 32, 2)), "2048 threads"),
    (dict(grid=1, block=(1, 1, 128)), "block dimension z is 128"),
    (dict(grid=(1, 70000), block=32), "grid dimension y is 70000"),
    (dict(grid=0, block=32), "from 1 to"),
    (dict(grid=(1, 2, 3, 4), block=32), "tuple of 1 to 3 ints"),
    (dict(grid=1.5, block=32), "int or a tuple"),
    (dict(grid=1, block=32, shared_mem=-1), "shared_mem=-1"),
])
def test_launch_configuration_is_checked(mod, config, words):
    x, y = cukit.zeros(10, np.float32), cukit.zeros(10, np.float32)
    with pytest.raises(ValueError if "1.5" not in str(config) else TypeError, match=words):
        mod.saxpy(1.0, x, y, 10, **config)


def test_signature_override_for_get_kernel(mod, rng):
    k = mod.get_kernel("saxpy", signature="(float a, const float* x, float* y, size_t n)")
    x = rng.standard_normal(10).astype(np.float32)
    y = cukit.zeros(10, np.float32)
    k(2.0, cukit.to_device(x), y, 10, grid=1, block=32)
    np.testing.assert_allclose(y.get(), 2 * x)
    with pytest.raises(TypeError, match="compiled kernel has 4 parameters"):
        mod.get_kernel("saxpy", signature="(float a, const float* x)")


def test_layout_mismatch_is_caught_before_launch():
    # cukit cannot evaluate this #if, so it reads both branches and the last
    # #define wins (float), while NVRTC compiles double.
    src = """
    #if __CUDACC_VER_MAJOR__ >= 9
    #define WIDE double
    #else
    #define WIDE float
    #endif
    extern "C" __global__ void k(WIDE a) {}
    """
    with pytest.raises(TypeError, match="compiled kernel has 1 parameter of sizes \\[8\\]"):
        cukit.compile(src).k  # noqa: B018


def test_streams_and_events(mod, rng):
    n = 1 << 20
    x = rng.standard_normal(n).astype(np.float32)
    dx, dy = cukit.to_device(x), cukit.zeros(n, np.float32)
    s = cukit.Stream()
    start, end = cukit.Event(), cukit.Event()
    start.record(s)
    mod.saxpy(3.0, dx, dy, n, grid=n // 256, block=256, stream=s)
    end.record(stream=s)
    s.synchronize()
    assert s.query() and end.query()
    ms = start.elapsed_time(end)
    assert 0 < ms < 1000
    np.testing.assert_allclose(dy.get(), 3 * x, rtol=1e-6)
    d = cukit.default_stream()
    assert d.handle == 0
    mod.saxpy(1.0, dx, dy, n, grid=n // 256, block=256, stream=d)
    d.synchronize()
    np.testing.assert_allclose(dy.get(), 4 * x, rtol=1e-6)


def test_stream_wait_orders_work(mod, rng):
    a, b = cukit.Stream(), cukit.Stream()
    x = cukit.to_device(rng.standard_normal(32).astype(np.float32))
    mod.spin(x, 200000, grid=1, block=32, stream=a)
    done = cukit.Event().record(a)
    b.wait(done)
    after = cukit.Event().record(b)
    after.synchronize()
    assert done.query()


def test_event_errors():
    e = cukit.Event()
    with pytest.raises(ValueError, match="recorded"):
        e.elapsed_time(cukit.Event())
    untimed = cukit.Event(timing=False).record()
    with pytest.raises(ValueError, match="timing=True"):
        cukit.Event().record().elapsed_time(untimed)
    with pytest.raises(TypeError, match="Stream"):
        e.record(stream=3)


def test_launch_from_several_threads(mod, rng):
    n = 4096
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(8)]
    outs = [cukit.zeros(n, np.float32) for _ in range(8)]
    cukit.synchronize()  # the zeros (legacy stream) are in place before the threads' streams
    errors = []

    def work(i):
        try:
            s = cukit.Stream()
            dx = cukit.to_device(xs[i], stream=s)
            for _ in range(50):
                mod.saxpy(1.0, dx, outs[i], n, grid=n // 256, block=256, stream=s)
            s.synchronize()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for x, out in zip(xs, outs):
        np.testing.assert_allclose(out.get(), 50 * x, rtol=1e-5)


def test_foreign_arrays_as_arguments(mod, rng):
    n = 500
    x = rng.standard_normal(n).astype(np.float32)
    used = 0
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        cx, cy = cupy.asarray(x), cupy.zeros(n, cupy.float32)
        mod.saxpy(2.0, cx, cy, n, grid=2, block=256)
        cukit.synchronize()
        np.testing.assert_allclose(cupy.asnumpy(cy), 2 * x, rtol=1e-6)
        with pytest.raises(TypeError, match="float64"):
            mod.saxpy(2.0, cupy.zeros(n), cy, n, grid=2, block=256)
        with pytest.raises(ValueError, match="not C-contiguous"):
            mod.saxpy(2.0, cupy.asarray(np.repeat(x, 2))[::2], cy, n, grid=2, block=256)
        mod.saxpy.prepare(grid=2, block=256)(1.0, cx, cy, n)  # the same values, prepared
        cukit.synchronize()
        np.testing.assert_allclose(cupy.asnumpy(cy), 3 * x, rtol=1e-6)
        used += 1
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        tx = torch.from_numpy(x).cuda()
        ty = torch.zeros(n, device="cuda")
        torch.cuda.synchronize()
        mod.saxpy(2.0, tx, ty, n, grid=2, block=256)
        cukit.synchronize()
        np.testing.assert_allclose(ty.cpu().numpy(), 2 * x, rtol=1e-6)
        with pytest.raises(TypeError, match="int64"):
            mod.saxpy(2.0, torch.zeros(n, dtype=torch.int64, device="cuda"), ty, n, grid=2, block=256)
        used += 1
    if not used:
        pytest.skip("neither cupy nor torch installed")


def test_hostile_arguments_do_not_crash(mod):
    with pytest.raises(UnicodeEncodeError):
        mod.get_kernel("saxpy", signature="\ud800")
    dims = []

    class Shrinks:
        def __index__(self):
            dims.clear()
            return 1

    dims.extend([Shrinks(), Shrinks()])
    x = cukit.zeros(4, np.float32)
    mod.saxpy(1.0, x, x, 4, grid=dims, block=32)  # reads its own copy of the tuple
    cukit.synchronize()
    with pytest.raises(ValueError, match="shared_mem"):
        mod.saxpy(1.0, x, x, 4, grid=1, block=32, shared_mem=2**63 - 1)
