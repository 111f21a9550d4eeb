"""fork() after CUDA was used: the child's first CUDA call says what happened and what
to do; compiling and the cache keep working there; a spawned child just works."""
import multiprocessing as mp
import os
import subprocess
import sys
import textwrap

import pytest

import cukit
from conftest import HAVE_GPU

SRC = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }'


@pytest.mark.gpu
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_gets_a_clear_error_and_can_still_compile():
    code = textwrap.dedent(f"""
        import os, sys, numpy as np, cukit
        cukit.to_device(np.ones(4, np.float32))          # CUDA is initialised here
        pid = os.fork()
        if pid == 0:
            try:
                cukit.zeros(4, np.float32)
            except cukit.CudaError as e:
                ok = "cannot cross fork()" in str(e) and 'get_context("spawn")' in str(e)
                ptx = cukit.Program({SRC!r}).ptx(arch="sm_90")  # no GPU needed
                os._exit(0 if ok and b".entry" in ptx else 3)
            os._exit(4)
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def child_sum(q):
    import numpy as np

    import cukit as ck
    q.put(float(ck.to_device(np.arange(10, dtype=np.float64)).get().sum()))


@pytest.mark.gpu
def test_spawned_child_works():
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=child_sum, args=(q,))
    p.start()
    assert q.get(timeout=120) == 45.0
    p.join(60)
    assert p.exitcode == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.skipif(HAVE_GPU, reason="checks a child of a process that never used CUDA")
def test_fork_before_cuda_is_harmless():
    pid = os.fork()
    if pid == 0:
        os._exit(0 if cukit.device_count() == 0 else 5)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
