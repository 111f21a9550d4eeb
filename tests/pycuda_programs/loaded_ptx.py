# a module loaded from PTX: module_from_buffer, prepare and prepared_call
import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray
from pycuda.compiler import compile

ptx = compile(r"""
__global__ void axpy(float a, const float *x, float *y, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i]; }
""", target="ptx")
f = drv.module_from_buffer(ptx).get_function("axpy")
f.prepare("fPPi")
n = 3000
rng = np.random.default_rng()
x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
yg = gpuarray.to_gpu(y)
f.prepared_call((12, 1), (256, 1, 1), 0.5, gpuarray.to_gpu(x).gpudata, yg.gpudata, n)
np.testing.assert_allclose(yg.get(), y + np.float32(0.5) * x, rtol=1e-6, atol=1e-6)
copy = gpuarray.to_gpu(yg)  # device to device, as PyCUDA copies a GPUArray
yg.fill(0)
np.testing.assert_allclose(copy.get(), y + np.float32(0.5) * x, rtol=1e-6, atol=1e-6)
print("ok")
