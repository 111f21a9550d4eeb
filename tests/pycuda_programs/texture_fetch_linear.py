# a 1-D texture reference bound to linear memory and read with tex1Dfetch, several
# launches with the binding changed between them
import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray
from pycuda.compiler import SourceModule

mod = SourceModule("""
texture<float, 1, cudaReadModeElementType> in_tex;
__global__ void gather(float *out, const int *idx, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch(in_tex, idx[i]);
}
""")
gather = mod.get_function("gather")
tex = mod.get_texref("in_tex")
rng = np.random.default_rng()
n = 1000
for _ in range(3):
    data = rng.standard_normal(5000).astype(np.float32)
    d = gpuarray.to_gpu(data)
    d.bind_to_texref_ext(tex)
    idx = rng.integers(0, 5000, n).astype(np.int32)
    out = gpuarray.empty(n, np.float32)
    gather(out, gpuarray.to_gpu(idx), np.int32(n), block=(256, 1, 1), grid=(4, 1), texrefs=[tex])
    assert np.array_equal(out.get(), data[idx])
print("ok")
