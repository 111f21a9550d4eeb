"""cukit.lib.stride_tricks (as_strided, sliding_window_view, broadcast_arrays) and the
checks of cukit.frombuffer that keep every such view inside its memory, against numpy
on fresh random data."""
import subprocess
import sys

import numpy as np
import pytest

import cukit
from cukit.lib.stride_tricks import as_strided, broadcast_arrays, sliding_window_view
from test_shapes import DTYPES, rand, same, shares

pytestmark = pytest.mark.gpu

np_swv = np.lib.stride_tricks.sliding_window_view
np_as_strided = np.lib.stride_tricks.as_strided


@pytest.mark.parametrize("dtype", DTYPES)
def test_sliding_window_view_of_every_axis(rng, dtype):
    h = rand(rng, (6, 7), dtype)
    d = cukit.to_device(h)
    w = sliding_window_view(d, (2, 3))
    same(w, np_swv(h, (2, 3)))
    assert shares(w, d) and not w.flags["WRITEABLE"]


@pytest.mark.parametrize("window, axis", [(3, 0), (2, -1), ((2, 2), (1, 1)), ((2, 3), (1, 0)),
                                          (0, 1), (5, 0)])
def test_sliding_window_view_along_axes_of_a_strided_view(rng, window, axis):
    h0 = rand(rng, (5, 8, 3), "f4")
    d, h = cukit.to_device(h0)[:, ::-2], h0[:, ::-2]
    same(sliding_window_view(d, window, axis=axis), np_swv(h, window, axis=axis))


def test_sliding_window_view_computes_a_moving_sum(rng):
    h = rand(rng, (1000,), "f8")
    d = cukit.to_device(h)
    got = sliding_window_view(d, 16).sum(axis=-1)
    np.testing.assert_allclose(got.get(), np_swv(h, 16).sum(axis=-1), rtol=1e-12, atol=1e-12)


def test_sliding_window_view_errors_are_numpys(rng):
    d, h = cukit.zeros((4, 5)), np.zeros((4, 5))
    for args, kwargs in [((3,), {}), (((-1, 2),), {}), (((5, 2),), {}), (((2,),), {"axis": (0, 1)}),
                         (((2,),), {"axis": 2})]:
        with pytest.raises((ValueError, IndexError)) as theirs:
            np_swv(h, *args, **kwargs)
        with pytest.raises(type(theirs.value)) as ours:
            sliding_window_view(d, *args, **kwargs)
        assert str(ours.value) == str(theirs.value)


def test_writeable_sliding_windows_write_into_the_array(rng):
    h = rand(rng, (10,), "f4")
    d = cukit.to_device(h)
    sliding_window_view(d, 3, writeable=True)[2] = 0  # elements 2, 3, 4
    h[2:5] = 0
    same(d, h)
    with pytest.raises(ValueError):
        sliding_window_view(d, 3)[2] = 0  # read-only by default, as numpy's


@pytest.mark.parametrize("dtype", ["i1", "f4", "c16"])
def test_as_strided_matches_numpy_within_the_memory(rng, dtype):
    h = rand(rng, (6, 5), dtype)
    d = cukit.to_device(h)
    i = h.itemsize
    for shape, strides in [((5,), (6 * i,)), ((4, 3), (i, i)), ((3, 2), (0, 5 * i)),
                           ((2, 3, 2), (10 * i, i, 5 * i)), ((0, 9), (i, 1000 * i))]:
        same(as_strided(d, shape, strides), np_as_strided(h, shape, strides))
    v, hv = d[1:, ::-2], h[1:, ::-2]  # from a strided view: its own offset and strides
    same(as_strided(v), hv)
    same(as_strided(v, (4,), (hv.strides[0] + hv.strides[1],)),
         np_as_strided(hv, (4,), (hv.strides[0] + hv.strides[1],)))


def test_as_strided_writes_into_the_array_and_keeps_read_only_inputs_so(rng):
    h = rand(rng, (4, 4), "f8")
    d = cukit.to_device(h)
    diag = as_strided(d, (4,), (5 * 8,))
    diag[...] = 7.0
    np.fill_diagonal(h, 7.0)
    same(d, h)
    assert not as_strided(d, writeable=False).flags["WRITEABLE"]
    d.setflags(write=False)
    assert not as_strided(d).flags["WRITEABLE"]


def test_a_view_outside_the_memory_is_a_value_error_not_a_read(rng):
    d = cukit.to_device(rand(rng, (4, 4), "f4"))
    v = d[1:3]  # the memory under it is all 64 bytes: as_strided may reach all of it
    same(as_strided(v, (12,), (4,)), d.get().ravel()[4:])
    with pytest.raises(ValueError, match="reaches bytes 16 to 68, outside the buffer of 64"):
        as_strided(v, (13,), (4,))
    with pytest.raises(ValueError, match="reaches bytes -4 to"):
        as_strided(v, (6,), (-4,))
    with pytest.raises(ValueError, match="multiples of the item size"):
        as_strided(d, (3,), (6,))
    with pytest.raises(ValueError, match="too big"):
        as_strided(d, (2**40, 2**40), (0, 0))
    with pytest.raises(ValueError, match="outside the buffer"):
        as_strided(d, (4, 2), (2**62, 4))  # 3 * 2**62 wraps in 64 bits
    with pytest.raises(TypeError, match="takes a cukit.Array"):
        as_strided(np.zeros(3))
    with pytest.raises(TypeError, match="sequence of integers"):
        as_strided(d, (2.5,), (4,))


def test_frombuffer_checks_shape_strides_and_offset_exactly():
    buf = cukit.zeros(16, np.float32).buffer
    ok = cukit.frombuffer(buf, np.float32, (4,), (-4,), 12)
    assert ok.get().shape == (4,)
    same(cukit.frombuffer(buf, np.float32, offset=8), np.zeros(14, np.float32))
    for shape, strides, offset, match in [
            ((2**62, 4), (4, 2**62), 0, "too big"),
            ((3,), (2**62,), 0, "outside the buffer"),
            ((3,), (3,), 0, "multiples of the item size"),
            ((3,), None, 2, "multiples of the item size"),
            (None, None, 2, "multiples of the item size"),
            ((4,), (-4,), 8, "reaches bytes -4 to 12"),
            ((2,), None, 65, "offset 65 is outside"),
            ((-1,), None, 0, "negative dimension"),
            ((2, 2), (4,), 0, "1 strides for 2 dimensions")]:
        with pytest.raises(ValueError, match=match):
            cukit.frombuffer(buf, np.float32, shape, strides, offset)
    with pytest.raises(TypeError, match="cukit.Buffer"):
        cukit.frombuffer(b"bytes", np.uint8)


def test_broadcast_arrays_are_views(rng):
    h1, h2 = rand(rng, (3, 1), "f4"), rand(rng, (1, 4), "f4")
    d1, d2 = cukit.to_device(h1), cukit.to_device(h2)
    for got, want in zip(broadcast_arrays(d1, d2), np.broadcast_arrays(h1, h2)):
        same(got, want)


def test_as_strided_with_a_shape_alone_steps_as_numpys(rng):
    # numpy takes a C-contiguous array's strides as the new shape's C strides, and a
    # strided one's own strides
    h = rand(rng, (4, 5), "f8")
    d = cukit.to_device(h)
    for shape in ((2, 3), (2, 5), (20,), (5, 2, 2)):
        same(as_strided(d, shape), np_as_strided(h, shape))
    v, hv = d[:, ::2], h[:, ::2]
    same(as_strided(v, (2, 3)), np_as_strided(hv, (2, 3)))
    with pytest.raises(ValueError, match=r"^as_strided\(\): 1 strides for 2 dimensions"):
        as_strided(d[::2, 0], (2, 2))
    with pytest.raises(TypeError, match=r"^as_strided\(\): shape must be a sequence of "):
        as_strided(d, (2.5,))
    with pytest.raises(ValueError, match=r"^frombuffer\(\): 1 strides for 2 dimensions"):
        cukit.frombuffer(d.buffer, np.float64, (2, 2), (8,))



def test_frombuffer_takes_the_dtype_names_cukit_takes():
    # names numpy knows only once ml_dtypes is imported: as cukit.zeros, frombuffer takes
    # them in a program that never imported it (a fresh process)
    code = ("import cukit, numpy as np\n"
            "b = cukit.to_device(np.arange(8, dtype=np.uint16)).buffer\n"
            "for name in ('bfloat16', 'float8_e4m3fn'):\n"
            "    v = cukit.frombuffer(b, name, (3,), None, 2)\n"
            "    print(v.dtype, v.shape, v.get().view(np.uint8).tolist())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["bfloat16 (3,) [1, 0, 2, 0, 3, 0]",
                                         "float8_e4m3fn (3,) [1, 0, 2]"], r.stdout
