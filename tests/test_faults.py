"""Crash-prone cases run in a subprocess: a faulting kernel must raise, never crash."""
import subprocess
import sys
import textwrap

import pytest

import cukit

pytestmark = pytest.mark.gpu


def run(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120)


def test_illegal_address_raises_at_the_next_synchronize():
    out = run("""
        import cukit
        mod = cukit.compile('extern "C" __global__ void bad(float* p) { p[threadIdx.x] = 1; }')
        mod.bad(8, grid=1, block=32)   # address 8: not device memory
        try:
            cukit.synchronize()
        except cukit.KernelFaultError as e:
            print("CLASS", type(e).__name__)
            print("NAME", e.name)
            print("CALL", e.call)
            print("MSG", e)
        try:
            cukit.zeros(4)
        except cukit.CudaError as e:
            print("AFTER", type(e).__name__)
        print("EXIT OK")
    """)
    assert out.returncode == 0, out.stderr
    assert "CLASS KernelFaultError" in out.stdout
    assert "NAME CUDA_ERROR_ILLEGAL_ADDRESS" in out.stdout
    assert "CALL cuCtxSynchronize" in out.stdout
    # the emulator loses its context as a GPU does (unless told to keep it, for
    # debugging); the message says so once, and names what finds the bug where it runs
    assert "AFTER" in out.stdout
    msg = next(line for line in out.stdout.splitlines() if line.startswith("MSG"))
    assert "CUKIT_CAPTURE=DIR" in msg
    if cukit.backend() == "emulator":
        assert "CUKIT_EMULATOR_DEBUG_KEEP_CONTEXT=1 keeps it usable" in msg
        assert msg.count("context is lost") == 1 and "can no longer be used" not in msg
        assert "compute-sanitizer" not in msg
    else:
        assert msg.count("can no longer be used") == 1
    assert "EXIT OK" in out.stdout


def test_objects_dropped_after_a_fault_exit_cleanly():
    out = run("""
        import cukit, numpy as np
        a = cukit.to_device(np.ones(1000, np.float32))
        s = cukit.Stream(); e = cukit.Event()
        mod = cukit.compile('extern "C" __global__ void bad(float* p) { p[threadIdx.x] = 1; }')
        mod.bad(8, grid=1, block=32)
        try:
            s.synchronize(); cukit.synchronize()
        except cukit.KernelFaultError:
            pass
        del a, s, e, mod
        print("EXIT OK")
    """)
    assert out.returncode == 0, out.stderr
    assert "EXIT OK" in out.stdout
    assert "Traceback" not in out.stderr
