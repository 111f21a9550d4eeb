# a texture reference read with tex2D, as PyCUDA programs were written before CUDA 12
import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.driver as drv
from pycuda.compiler import SourceModule

mod = SourceModule(r"""
texture<float, 2, cudaReadModeElementType> tex;
__global__ void copy_texture(float *dest, int w)
{
    int x = threadIdx.x, y = blockIdx.x;
    dest[y * w + x] = tex2D(tex, x + 0.5f, y + 0.5f) * 2.0f;
}
""")
rng = np.random.default_rng()
a = rng.standard_normal((24, 32)).astype(np.float32)
tex = mod.get_texref("tex")
drv.matrix_to_texref(a, tex, order="C")
dest = np.full_like(a, np.nan)
mod.get_function("copy_texture")(drv.Out(dest), np.int32(32), block=(32, 1, 1), grid=(24, 1),
                                 texrefs=[tex])
np.testing.assert_array_equal(dest, 2 * a)
print("ok")
