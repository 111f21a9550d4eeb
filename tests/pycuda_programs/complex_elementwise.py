# complex numbers in an ElementwiseKernel and a ReductionKernel, PyCUDA's way
import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.gpuarray as gpuarray
from pycuda.elementwise import ElementwiseKernel
from pycuda.reduction import ReductionKernel

rng = np.random.default_rng()
n = 5000
x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
y = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
mul = ElementwiseKernel("pycuda::complex<float> *x, pycuda::complex<float> *y, "
                        "pycuda::complex<float> *z", "z[i] = x[i] * y[i]", "cmul")
xg, yg = gpuarray.to_gpu(x), gpuarray.to_gpu(y)
zg = gpuarray.empty_like(xg)
mul(xg, yg, zg)
np.testing.assert_allclose(zg.get(), x * y, rtol=1e-5, atol=1e-5)
dot = ReductionKernel(np.complex64, neutral="0", reduce_expr="a+b", map_expr="x[i]*y[i]",
                      arguments="pycuda::complex<float> *x, pycuda::complex<float> *y")
np.testing.assert_allclose(dot(xg, yg).get(), np.sum(x * y), rtol=1e-3)
print("ok")
