# PyCUDA's demo: doublify a 4x4 matrix three ways (raw memory, gpuarray, ElementwiseKernel)
import numpy
import pycuda.autoinit  # noqa: F401
import pycuda.driver as cuda
import pycuda.gpuarray as gpuarray
from pycuda.compiler import SourceModule
from pycuda.elementwise import ElementwiseKernel

a = numpy.random.randn(4, 4).astype(numpy.float32)
a_gpu = cuda.mem_alloc(a.size * a.dtype.itemsize)
cuda.memcpy_htod(a_gpu, a)
mod = SourceModule("""
    __global__ void doublify(float *a)
    {
      int idx = threadIdx.x + threadIdx.y*4;
      a[idx] *= 2;
    }
    """)
func = mod.get_function("doublify")
func(a_gpu, block=(4, 4, 1))
a_doubled = numpy.empty_like(a)
cuda.memcpy_dtoh(a_doubled, a_gpu)
assert numpy.array_equal(a_doubled, 2 * a)
a_gpu2 = gpuarray.to_gpu(a)
assert numpy.array_equal((2 * a_gpu2).get(), 2 * a)
func.prepare("P")
func.prepared_call((1, 1), (4, 4, 1), a_gpu2.gpudata)
assert numpy.array_equal(a_gpu2.get(), 2 * a)
double = ElementwiseKernel("float *a", "a[i] *= 2", "double_it")
double(a_gpu2)
assert numpy.array_equal(a_gpu2.get(), 4 * a)
print("ok")
