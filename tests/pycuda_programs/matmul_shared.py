# a tiled matrix product with shared memory, the kernel text made with % formatting
import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.driver as drv
from pycuda import gpuarray
from pycuda.compiler import SourceModule

TILE = 16
kernel = """
__global__ void MatMul(float *a, float *b, float *c, int n)
{
    __shared__ float As[%(T)d][%(T)d];
    __shared__ float Bs[%(T)d][%(T)d];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * %(T)d + ty, col = blockIdx.x * %(T)d + tx;
    float acc = 0;
    for (int k = 0; k < n / %(T)d; ++k) {
        As[ty][tx] = a[row * n + k * %(T)d + tx];
        Bs[ty][tx] = b[(k * %(T)d + ty) * n + col];
        __syncthreads();
        for (int j = 0; j < %(T)d; ++j) acc += As[ty][j] * Bs[j][tx];
        __syncthreads();
    }
    c[row * n + col] = acc;
}
""" % {"T": TILE}
n = 64
a = np.random.randn(n, n).astype(np.float32)
b = np.random.randn(n, n).astype(np.float32)
c_gpu = gpuarray.empty((n, n), np.float32)
start, end = drv.Event(), drv.Event()
start.record()
SourceModule(kernel).get_function("MatMul")(gpuarray.to_gpu(a), gpuarray.to_gpu(b), c_gpu,
                                            np.int32(n), block=(TILE, TILE, 1),
                                            grid=(n // TILE, n // TILE))
end.record()
end.synchronize()
assert start.time_till(end) >= 0
np.testing.assert_allclose(c_gpu.get(), a @ b, rtol=1e-4, atol=1e-4)
print("ok")
