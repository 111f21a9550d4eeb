# gpuarray and cumath as tutorials use them: reductions, math, random, streams
import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.cumath as cumath
import pycuda.curandom as curandom
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray
from pycuda.reduction import ReductionKernel

x = np.random.rand(10000).astype(np.float32)
y = np.random.rand(10000).astype(np.float32)
xg, yg = gpuarray.to_gpu(x), gpuarray.to_gpu(y)
np.testing.assert_allclose(gpuarray.sum(xg).get(), x.sum(), rtol=1e-4)
np.testing.assert_allclose(gpuarray.dot(xg, yg).get(), x @ y, rtol=1e-4)
np.testing.assert_allclose(gpuarray.max(xg).get(), x.max())
np.testing.assert_allclose(cumath.exp(xg).get(), np.exp(x), rtol=1e-6)
np.testing.assert_allclose((xg / yg + 1).get(), x / y + 1, rtol=1e-6)
dot = ReductionKernel(np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i]*y[i]",
                      arguments="float *x, float *y")
np.testing.assert_allclose(dot(xg, yg).get(), x @ y, rtol=1e-4)
r = curandom.rand((5000,))
assert 0 <= r.get().min() and r.get().max() < 1
s = drv.Stream()
host = drv.pagelocked_empty(10000, np.float32)
host[:] = x
dev = drv.mem_alloc(host.nbytes)
drv.memcpy_htod_async(dev, host, s)
back = drv.pagelocked_zeros_like(host)
drv.memcpy_dtoh_async(back, dev, s)
s.synchronize()
assert np.array_equal(back, x)
z = gpuarray.zeros_like(xg)
z.fill(np.float32(3))
assert (z.get() == 3).all() and gpuarray.arange(0, 10, 1, dtype=np.int32).get().tolist() == list(range(10))
assert xg[10:20].get().tolist() == x[10:20].tolist()
print("ok")
