"""The many-GPU recipes of docs/guide/many-gpus.md as a program: run under torchrun (nccl.from_env) or
mpirun (nccl.from_mpi), every rank all-reduces its own data and checks the sum of
all ranks' data against numpy. tools/gpu_multi.sh runs it both ways.

    NCCL_NVLS_ENABLE=0 torchrun --nproc-per-node=2 tools/nccl_recipe.py
    NCCL_NVLS_ENABLE=0 mpirun -np 2 python tools/nccl_recipe.py mpi
"""
import os
import sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import numpy as np  # noqa: E402

import cukit  # noqa: E402
import cukit.nccl as nccl  # noqa: E402


def data(rank, n=1 << 20):
    return np.random.default_rng([2026, rank]).standard_normal(n).astype(np.float32)


def main():
    comm = nccl.from_mpi(timeout=300) if sys.argv[1:] == ["mpi"] else nccl.from_env(timeout=300)
    x = cukit.to_device(data(comm.rank), device=comm.device)
    comm.all_reduce(x)
    comm.synchronize()
    want = np.sum([data(r) for r in range(comm.size)], axis=0, dtype=np.float32)
    np.testing.assert_allclose(x.get(), want, rtol=1e-5, atol=1e-5)
    print("recipe %s ok: rank %d of %d on %s" % ("mpirun" if sys.argv[1:] == ["mpi"] else
                                                  "torchrun", comm.rank, comm.size, comm.device))
    comm.destroy()


if __name__ == "__main__":
    main()
