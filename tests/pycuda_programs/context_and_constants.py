# an explicit context, device queries, __constant__ memory through get_global, a
# GPUArray over raw memory, prepare() with numpy types, async copies on a stream
import numpy as np
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray
from pycuda.compiler import SourceModule

drv.init()
dev = drv.Device(0)
ctx = dev.make_context()
try:
    assert dev.name() and dev.compute_capability()[0] >= 3
    attrs = dev.get_attributes()
    assert attrs[drv.device_attribute.MAX_THREADS_PER_BLOCK] >= 512
    free, total = drv.mem_get_info()
    assert 0 < free <= total
    mod = SourceModule("""
    __constant__ double coef[8];
    __global__ void poly(double *y, const double *x, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        double acc = 0;
        for (int k = 7; k >= 0; --k) acc = acc * x[i] + coef[k];
        y[i] = acc;
    }
    """, options=["-use_fast_math"])
    coef = np.random.randn(8)
    ptr, size = mod.get_global("coef")
    assert size == coef.nbytes
    drv.memcpy_htod(ptr, coef)
    f = mod.get_function("poly")
    assert f.get_attribute(drv.function_attribute.MAX_THREADS_PER_BLOCK) >= 256
    f.prepare([np.intp, np.intp, np.int32])
    n = 2000
    x = np.random.uniform(-1, 1, n)
    s = drv.Stream()
    xg = gpuarray.to_gpu_async(x, stream=s)
    raw = drv.mem_alloc(x.nbytes)
    yg = gpuarray.GPUArray((n,), np.float64, gpudata=raw)
    f.prepared_async_call((8, 1), (256, 1, 1), s, yg.gpudata, xg.gpudata, n)
    y = yg.get_async(stream=s)
    s.synchronize()
    np.testing.assert_allclose(y, np.polynomial.polynomial.polyval(x, coef), rtol=1e-12, atol=1e-12)
    c = gpuarray.to_gpu((np.random.randn(100) + 1j * np.random.randn(100)).astype(np.complex64))
    np.testing.assert_allclose(abs(c).get(), np.abs(c.get()), rtol=1e-6)
    np.testing.assert_array_equal(c.real.get(), c.get().real)
finally:
    ctx.pop()
print("ok")
