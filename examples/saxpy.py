"""saxpy on 16.7M floats (512 x 32768), checked against numpy and timed with events."""
import numpy as np

import cukit

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""


def main():
    threads, blocks = 512, 32768
    n = threads * blocks
    rng = np.random.default_rng()
    a = np.float32(rng.standard_normal())
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)

    module = cukit.compile(SOURCE)
    dx, dy = cukit.to_device(x), cukit.to_device(y)
    out = cukit.empty(n, np.float32)

    module.saxpy(a, dx, dy, out, n, grid=blocks, block=threads)  # warm-up
    start, end = cukit.Event(), cukit.Event()
    start.record()
    module.saxpy(a, dx, dy, out, n, grid=blocks, block=threads)
    end.record()
    ms = start.elapsed_time(end)

    result = out.get()
    expected = a * x + y
    err = np.max(np.abs(result - expected))
    assert np.allclose(result, expected, rtol=1e-6, atol=1e-6), f"max error {err}"
    gbps = 3 * n * 4 / (ms * 1e-3) / 1e9
    print(f"saxpy on {n:,} floats: max error {err:.2e}, {ms * 1e3:.1f} us ({gbps:.0f} GB/s) "
          f"on {cukit.get_device().name}")


if __name__ == "__main__":
    main()
