# PyCUDA's hello_gpu: In/Out arguments, printf from a kernel, a memory pool, a scan
import numpy
import pycuda.autoinit  # noqa: F401
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray
from pycuda.compiler import SourceModule
from pycuda.scan import InclusiveScanKernel
from pycuda.tools import DeviceMemoryPool

mod = SourceModule("""
#include <stdio.h>
__global__ void multiply_them(float *dest, float *a, float *b)
{
  const int i = threadIdx.x;
  dest[i] = a[i] * b[i];
  if (i == 0) printf("hello from block %d\\n", blockIdx.x);
}
""")
multiply_them = mod.get_function("multiply_them")
a = numpy.random.randn(400).astype(numpy.float32)
b = numpy.random.randn(400).astype(numpy.float32)
dest = numpy.zeros_like(a)
multiply_them(drv.Out(dest), drv.In(a), drv.In(b), block=(400, 1, 1), grid=(1, 1))
drv.Context.synchronize()
assert numpy.array_equal(dest, a * b)
pool = DeviceMemoryPool()
x = gpuarray.to_gpu(numpy.arange(1000, dtype=numpy.int32), allocator=pool.allocate)
InclusiveScanKernel(numpy.int32, "a+b")(x)
assert numpy.array_equal(x.get(), numpy.cumsum(numpy.arange(1000, dtype=numpy.int32)))
sel = gpuarray.if_positive(gpuarray.to_gpu(a), gpuarray.to_gpu(a), gpuarray.zeros_like(gpuarray.to_gpu(a)))
assert numpy.array_equal(sel.get(), numpy.where(a > 0, a, 0))
print("ok")
