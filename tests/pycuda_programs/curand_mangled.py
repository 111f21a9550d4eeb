# C++ kernels (no_extern_c) called by their mangled names, with curand states
import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray
from pycuda.compiler import SourceModule

mod = SourceModule(r"""
#include <curand_kernel.h>
extern "C++" {
__global__ void initkernel(curandState *s, unsigned long long seed)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; curand_init(seed, i, 0, &s[i]); }
__global__ void normals(curandState *s, float *out, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = curand_normal(&s[i]); }
}
""", no_extern_c=True)
n = 4096
states = drv.mem_alloc(n * 48)
mod.get_function("_Z10initkernelP17curandStateXORWOWy")(states, np.uint64(7), block=(256, 1, 1),
                                                        grid=(n // 256, 1))
out = gpuarray.empty(n, np.float32)
mod.get_function("_Z7normalsP17curandStateXORWOWPfi")(states, out, np.int32(n),
                                                      block=(256, 1, 1), grid=(n // 256, 1))
x = out.get()
assert abs(x.mean()) < 0.1 and abs(x.std() - 1) < 0.1, (x.mean(), x.std())
print("ok")
