"""Streams from other libraries as stream=: the __cuda_stream__ protocol, torch and CuPy
streams, Stream.from_handle, and the errors for streams cukit cannot use."""
import numpy as np
import pytest

import cukit
from conftest import poison

pytestmark = pytest.mark.gpu

SRC = r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture(scope="module")
def mod():
    return cukit.compile(SRC)


class ProtocolStream:
    """What cuda.core and others hand out: __cuda_stream__() -> (version, handle)."""

    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def run_axpy(mod, stream, rng, n=4099):
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    dx, dy = cukit.to_device(x), cukit.to_device(y)
    cukit.synchronize()  # uploaded on the legacy stream, which `stream` may not wait for
    mod.axpy(np.float32(2.5), dx, dy, n, grid=(n + 255) // 256, block=256, stream=stream)
    out = dy.get(stream=stream) if isinstance(stream, cukit.Stream) else None
    cukit.synchronize()
    if out is None:
        out = dy.get()
    # the GPU fuses a * x + y into one rounding (fma); numpy rounds twice
    np.testing.assert_allclose(out, np.float32(2.5) * x + y, rtol=2e-7, atol=0)


def test_cukit_stream_speaks_the_protocol():
    s = cukit.Stream()
    version, handle = s.__cuda_stream__()
    assert version == 0 and handle == s.handle


def test_protocol_object_as_stream(mod, rng):
    s = cukit.Stream()
    run_axpy(mod, ProtocolStream(s.handle), rng)


def test_from_handle_keeps_owner_and_never_destroys(mod, rng):
    owner = cukit.Stream()
    wrapped = cukit.Stream.from_handle(owner.handle, owner=owner)
    h = owner.handle
    del owner  # the wrapper keeps it alive
    run_axpy(mod, wrapped, rng)
    assert wrapped.handle == h
    del wrapped  # must not destroy a stream it does not own twice: nothing to see, no crash


def test_torch_stream(mod, rng):
    torch = pytest.importorskip("torch")
    ts = torch.cuda.Stream()
    run_axpy(mod, ts, rng)
    x = cukit.to_device(rng.random(8, dtype=np.float32))
    out = poison(8, np.float32)
    x.get(out=out, stream=ts)
    ts.synchronize()
    assert not np.isnan(out).any()


def test_cupy_stream(mod, rng):
    cupy = pytest.importorskip("cupy")
    run_axpy(mod, cupy.cuda.Stream(non_blocking=True), rng)


def test_not_a_stream_is_a_type_error(mod):
    x = cukit.zeros(4, np.float32)
    with pytest.raises(TypeError, match=r"stream must be a cukit.Stream, None, or another"):
        mod.axpy(np.float32(1), x, x, 4, grid=1, block=4, stream="fast")
    with pytest.raises(TypeError, match=r"no integer stream handle"):
        mod.axpy(np.float32(1), x, x, 4, grid=1, block=4, stream=ProtocolStream("x"))


def test_from_handle_bad_input():
    with pytest.raises(TypeError, match=r"takes the CUstream as an int"):
        cukit.Stream.from_handle("0x10")
