"""Square an array in place on the GPU."""
import numpy as np

import cukit

SOURCE = r"""
extern "C" __global__ void square(double* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * x[i];
}
"""


def main(n=100_000):
    host = np.random.default_rng().standard_normal(n)
    x = cukit.to_device(host)
    cukit.compile(SOURCE).square(x, n, grid=(n + 255) // 256, block=256)
    assert np.array_equal(x.get(), host * host)
    print(f"squared {n:,} doubles in place")


if __name__ == "__main__":
    main()
