# a kernel written for nvcc: <math.h>, <stdint.h>, <float.h>, uint and M_PI
import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.gpuarray as gpuarray
from pycuda.compiler import SourceModule

mod = SourceModule(r"""
#include <math.h>
#include <stdint.h>
#include <float.h>
__global__ void wave(float *out, const float *x, uint n)
{
    uint i = blockIdx.x * blockDim.x + threadIdx.x;
    int32_t k = 3;
    if (i < n) out[i] = fminf(sinf((float)M_PI * x[i]) * k, FLT_MAX);
}
""")
n = 1000
x = np.random.default_rng().uniform(-1, 1, n).astype(np.float32)
out = gpuarray.empty(n, np.float32)
mod.get_function("wave")(out, gpuarray.to_gpu(x), np.uint32(n), block=(256, 1, 1), grid=(4, 1))
np.testing.assert_allclose(out.get(), 3 * np.sin(np.float32(np.pi) * x), rtol=1e-5, atol=1e-5)
print("ok")
