"""A tiled matrix product on a 2-D grid, checked against numpy."""
import numpy as np

import cukit

TILE = 16
SOURCE = r"""
extern "C" __global__ void matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    __shared__ float ta[TILE][TILE], tb[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < k; t += TILE) {
        ta[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ? a[row * k + t + threadIdx.x] : 0.0f;
        tb[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < k) ? b[(t + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; i++) acc += ta[threadIdx.y][i] * tb[i][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}
"""


def main(m=300, n=200, k=500):
    rng = np.random.default_rng()
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    module = cukit.compile(SOURCE, defines={"TILE": TILE})
    c = cukit.empty((m, n), np.float32)
    grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    module.matmul(cukit.to_device(a), cukit.to_device(b), c, m, n, k, grid=grid, block=(TILE, TILE))
    result = c.get()
    expected = a.astype(np.float64) @ b.astype(np.float64)
    rel = np.linalg.norm(result - expected) / np.linalg.norm(expected)
    assert rel < 1e-5, f"relative error {rel}"
    print(f"matmul {m}x{k} @ {k}x{n} on a {grid[0]}x{grid[1]} grid: relative error {rel:.1e}")


if __name__ == "__main__":
    main()
