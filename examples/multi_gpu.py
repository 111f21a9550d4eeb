"""Data-parallel SAXPY on every GPU this process sees, then an NCCL all-reduce of the results.

Each GPU computes y = a*x + y on its own shard; one all_reduce (sum) over the
shards' partial sums leaves the same total on every GPU, checked against numpy.
One process drives all GPUs (Communicator.init_all); with one GPU it still runs.
"""
import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast off, as on the shared machines

import numpy as np  # noqa: E402

import cukit  # noqa: E402
import cukit.nccl as nccl  # noqa: E402

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def main():
    ngpu = cukit.device_count()
    if ngpu == 0:
        raise SystemExit("multi_gpu.py: no GPU")
    try:
        nccl.version()
    except cukit.NotSupportedError as e:
        print(f"multi_gpu.py: skipped, {e}")
        return
    n = 1 << 22  # elements per GPU
    rng = np.random.default_rng()
    a = np.float32(2.5)
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(ngpu)]
    ys = [rng.standard_normal(n).astype(np.float32) for _ in range(ngpu)]

    try:
        comms = nccl.init_all(list(range(ngpu)), timeout=120)
    except cukit.NotSupportedError as e:  # no NCCL here, or the CPU emulator
        print(f"multi_gpu.py: skipped, {e}")
        return
    outs = []
    for d in range(ngpu):
        with cukit.Device(d):  # everything inside is made on GPU d
            module = cukit.compile(SOURCE)
            x, y = cukit.to_device(xs[d]), cukit.to_device(ys[d])
            module.saxpy(a, x, y, n, grid=(n + 255) // 256, block=256)
            outs.append(y)
    # Sum the shards' results element-wise across GPUs: one grouped call per GPU.
    with nccl.group():
        for comm, y in zip(comms, outs):
            comm.all_reduce(y, op="sum")
    for comm in comms:
        comm.synchronize()

    want = sum(a * x + y for x, y in zip(xs, ys))
    for d, y in enumerate(outs):
        np.testing.assert_allclose(y.get(), want, rtol=1e-5, atol=1e-5)
    for comm in comms:
        comm.destroy()
    print(f"saxpy on {ngpu} GPU(s), all-reduced with NCCL {'.'.join(map(str, nccl.version()))}: "
          f"{ngpu * n} elements, every GPU holds the same sum (checked against numpy)")


if __name__ == "__main__":
    main()
