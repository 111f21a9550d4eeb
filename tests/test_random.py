"""cukit.random: numpy's Philox stream bit for bit, Philox4x32 (default_rng's) against its
host computation and Random123's answers, the counter-based distributions, bad input."""
import json
import math
import re
import os
import struct
import subprocess
import sys
import textwrap
from statistics import NormalDist

import numpy as np
import pytest

import cukit
import cukit.random as cr
from conftest import poison

gpu = pytest.mark.gpu

# (key, counter): small, at the top of both ranges (the counter wraps), array forms
STREAMS = [
    (5, None),
    (2**128 - 1, 2**256 - 3),
    ([1, 2], [2**63 - 1, 2**62, 0, 7]),
    (123456789, 2**64 - 2),
]
SPLITS = [[1], [1000], [3, 5, 1, 8], [1, 1, 1, 2, 7], [33, 2, 31], [0, 4, 0, 1], [4097, 3, 65536]]


def same_state(ours, theirs):
    a, b = ours.state, theirs.state
    return (all(np.array_equal(a["state"][k], b["state"][k]) for k in ("counter", "key"))
            and np.array_equal(a["buffer"], b["buffer"])
            and all(a[k] == b[k] for k in ("buffer_pos", "has_uint32", "uinteger")))


def pair(key, counter):
    return (cr.Generator(cr.Philox(key=key, counter=counter)),
            np.random.Generator(np.random.Philox(key=key, counter=counter)))


def numpy_draw(g, kind, n):
    if kind == "raw":
        return g.bit_generator.random_raw(n)
    if kind == "float64":
        return g.random(n)
    return g.random(n, dtype=np.float32)


def cukit_draw(g, kind, n, out=None):
    if kind == "raw":
        return g.bit_generator.random_raw(n)
    return g.random(n, dtype=np.float64 if kind == "float64" else np.float32, out=out)


# ------------------------------------------------------------------ the host side (no GPU)


@pytest.mark.parametrize("key,counter", STREAMS)
def test_key_counter_and_state_are_numpys(key, counter):
    ours, theirs = cr.Philox(key=key, counter=counter), np.random.Philox(key=key, counter=counter)
    assert same_state(ours, theirs)
    assert [ours.random_raw() for _ in range(11)] == [int(theirs.random_raw()) for _ in range(11)]
    assert same_state(ours, theirs)


@pytest.mark.parametrize("seed", [0, 42, 2**70 + 3, [1, 2, 3], "SeedSequence(7)"])
def test_seeding_is_numpys(seed):
    if seed == "SeedSequence(7)":  # one each: spawning counts its children
        ours, theirs = cr.Philox(np.random.SeedSequence(7)), np.random.Philox(np.random.SeedSequence(7))
    else:
        ours, theirs = cr.Philox(seed), np.random.Philox(seed)
    assert same_state(ours, theirs)
    for a, b in zip(ours.spawn(3), theirs.spawn(3)):
        assert same_state(a, b)
    assert isinstance(ours.seed_seq, np.random.SeedSequence)


def test_advance_and_jumped_are_numpys(rng):
    key = int(rng.integers(0, 2**62))
    ours, theirs = cr.Philox(key=key), np.random.Philox(key=key)
    ours.random_raw(5, output=False)
    theirs.random_raw(5, output=False)
    assert same_state(ours, theirs)
    for delta in (1, 3, 2**64 + 5, -1, 2**255):
        assert ours.advance(delta) is ours
        theirs.advance(delta)
        assert same_state(ours, theirs)
    for jumps in (1, 2, 7):
        assert same_state(ours.jumped(jumps), theirs.jumped(jumps))
    assert ours.jumped().counter == ours.counter + 2**128


def test_state_moves_between_numpy_and_cukit(rng):
    theirs = np.random.Generator(np.random.Philox(int(rng.integers(0, 2**62))))
    theirs.random(3, dtype=np.float32)  # leaves a pending high half and a part-used buffer
    ours = cr.Philox()
    ours.state = theirs.bit_generator.state
    assert same_state(ours, theirs.bit_generator)
    back = np.random.Philox()
    back.state = ours.state
    assert same_state(ours, back)


def test_the_bookkeeping_of_32_and_64_bit_draws_is_numpys(rng):
    """Philox._take moves the state as a draw would, without a GPU."""
    for _ in range(50):
        key = int(rng.integers(0, 2**62))
        ours = cr.Philox(key=key)
        theirs = np.random.Generator(np.random.Philox(key=key))
        for _ in range(8):
            n = int(rng.integers(1, 40))
            halves = bool(rng.integers(2))
            ours._take(n, halves)
            theirs.random(n, dtype=np.float32 if halves else np.float64)
            assert same_state(ours, theirs.bit_generator)


def test_default_rng_and_generator():
    g = cr.default_rng(3)
    assert isinstance(g, cr.Generator) and isinstance(g.bit_generator, cr.Philox4x32)
    assert g.bit_generator.key == int(np.random.SeedSequence(3).generate_state(1, np.uint64)[0])
    assert g.bit_generator.counter == 0
    assert cr.default_rng(g) is g
    p = cr.Philox(key=1)
    assert cr.default_rng(p).bit_generator is p
    q = cr.Philox4x32(key=1)
    assert cr.default_rng(q).bit_generator is q
    kids = g.spawn(2)
    assert [type(k) for k in kids] == [cr.Generator] * 2
    assert kids[0].bit_generator.key != kids[1].bit_generator.key


# Random123's known answers for philox4x32_10: (counter words, key words, output words)
PHILOX4X32_KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("ctr,key,want", PHILOX4X32_KAT)
def test_philox4x32_gives_random123s_known_answers(ctr, key, want):
    """Block c is philox4x32_10 at counters 2c and 2c + 1; numpy's rule adds one to the
    counter before the first block, so counter = C/2 - 1 draws counter C first."""
    c = sum(w << (32 * i) for i, w in enumerate(ctr))
    first = c - c % 2
    p = cr.Philox4x32(key=key[0] | key[1] << 32, counter=(first // 2 - 1) % 2**127)
    words = [p.random_raw() for _ in range(4)]
    outs = [h for w in words for h in (w & 0xFFFFFFFF, w >> 32)]
    got = outs[:4] if c == first else outs[4:]
    assert tuple(got) == want


def test_philox4x32_state_keeps_the_pending_words_low_half():
    """Philox4x32's state adds uinteger_low (its normals and integers draw a pending half
    with its word); a state without it (written before it existed) reads as 0."""
    p = cr.Philox4x32(key=3)
    p._take(3, True)  # two halves of word 0, one of word 1: word 1's high half pending
    st = p.state
    w1 = cr.Philox4x32(key=3)
    w1.random_raw()
    word = w1.random_raw()
    assert st["has_uint32"] == 1 and st["uinteger"] == word >> 32
    assert st["uinteger_low"] == word & 0xFFFFFFFF
    q = cr.Philox4x32()
    q.state = {k: v for k, v in st.items() if k != "uinteger_low"}
    assert q.state["uinteger_low"] == 0 and q.state["uinteger"] == st["uinteger"]
    assert "uinteger_low" not in cr.Philox(3).state  # numpy's dict stays numpy's


def test_philox4x32_state_advance_jumped_and_spawn():
    p = cr.Philox4x32(key=[2**64 - 1], counter=[2**64 - 1, 2**63 - 1])
    assert p.key == 2**64 - 1 and p.counter == 2**127 - 1  # 127 bits: 2c + 1 fits 128
    first = p.random_raw()  # the counter wraps to 0
    assert p.counter == 0 and p.state["buffer_pos"] == 1
    q = cr.Philox4x32()
    q.state = p.state
    assert q.random_raw() == p.random_raw()
    assert q.state["bit_generator"] == "Philox4x32"
    assert [int(x) for x in q.state["state"]["counter"]] == [0, 0]
    r = cr.Philox4x32(key=5)
    assert r.advance(2**128 + 3) is r and r.counter == 3 and r.state["buffer_pos"] == 4
    assert r.jumped().counter == 3 + 2**64 and r.jumped(3).counter == 3 + 3 * 2**64
    assert r.jumped(2**63).counter == 3  # modulo 2**127
    assert cr.Philox4x32(key=5, counter=3).advance(2**127 - 3).counter == 0
    assert r.jumped().key == r.key
    kids = cr.Philox4x32(7).spawn(3)
    assert len({k.key for k in kids}) == 3 and all(type(k) is cr.Philox4x32 for k in kids)
    assert first != cr.Philox4x32(key=2**64 - 1, counter=0).random_raw()  # block 1, not 0
    assert repr(r) == "Philox4x32(key=5, counter=3)"


def test_kernel_source_compiles_for_sm90():
    if cukit.nvrtc_version() is None:
        pytest.skip("NVRTC not found")
    ptx = cukit.Program(cr._kernel_source(), name="cukit_random.cu").ptx(arch="sm_90")
    for name in ("cukit_random_raw", "cukit_uniform_f32", "cukit_normal_f32", "cukit_integers_8",
                 "cukit_random_raw_x32", "cukit_random_f32_x32", "cukit_poisson_x32",
                 "cukit_random_bf16", "cukit_normal_f16_x32", "cukit_exponential_bf16_x32"):
        assert name.encode() in ptx


BAD_HOST = [
    (lambda: cr.Philox(1, key=2), ValueError, "seed and key cannot be both used"),
    (lambda: cr.Philox(key=-1), ValueError, r"key must be positive and less than 2\*\*128"),
    (lambda: cr.Philox(key=2**128), ValueError, r"key must be positive and less than 2\*\*128"),
    (lambda: cr.Philox(key=[1, 2, 3]), ValueError, "key must have 2 elements"),
    (lambda: cr.Philox(counter=2**256), ValueError, r"counter must be positive and less than 2\*\*256"),
    (lambda: cr.Philox(key="abc"), TypeError, "key must be an int or a sequence"),
    (lambda: cr.Generator(np.random.Philox(1)), TypeError, "must be a cukit.random.Philox"),
    (lambda: cr.default_rng(1).random(3, dtype=np.int32), TypeError,
     "Unsupported dtype dtype\\('int32'\\) for random"),
    (lambda: cr.default_rng(1).standard_normal(3, dtype=np.complex64), TypeError,
     "Unsupported dtype .* for standard_normal: use numpy.float64, numpy.float32, "
     "numpy.float16 or bfloat16"),
    (lambda: cr.default_rng(1).uniform(size=3, dtype=np.int16), TypeError,
     "Unsupported dtype .* for uniform"),
    (lambda: cr.default_rng(1).integers(0, 5, dtype=np.float32), TypeError,
     "Unsupported dtype .* for integers"),
    (lambda: cr.default_rng(1).random(-1), ValueError, "negative dimensions are not allowed"),
    (lambda: cr.default_rng(1).random((2, -3)), ValueError, "negative dimensions are not allowed"),
    (lambda: cr.default_rng(1).random(2.5), TypeError, "size must be None, an int or a tuple"),
    (lambda: cr.default_rng(1).random(3, out=np.empty(3)), TypeError, "out must be a cukit.Array"),
    (lambda: cr.default_rng(1).integers(5, 5), ValueError, "low >= high"),
    (lambda: cr.default_rng(1).integers(5, 4, endpoint=True), ValueError, "low > high"),
    (lambda: cr.default_rng(1).integers(0), ValueError, "high <= 0"),
    (lambda: cr.default_rng(1).integers(0, 300, dtype=np.int8), ValueError,
     "high is out of bounds for int8"),
    (lambda: cr.default_rng(1).integers(-1, 3, dtype=np.uint32), ValueError,
     "low is out of bounds for uint32"),
    (lambda: cr.default_rng(1).integers(0.5, 3), TypeError, "low and high must be ints"),
    (lambda: cr.default_rng(1).normal(0, -1), ValueError, "scale < 0"),
    (lambda: cr.default_rng(1).exponential(-2.0), ValueError, "scale < 0"),
    (lambda: cr.default_rng(1).normal("a"), TypeError, "loc must be a number"),
    (lambda: cr.default_rng(1).uniform(2, 1), ValueError, "high - low < 0"),
    (lambda: cr.default_rng(1).uniform(0, np.inf), OverflowError, "range exceeds valid bounds"),
    (lambda: setattr(cr.Philox(), "state", {"bit_generator": "PCG64", "state": {}}), ValueError,
     "state must be for a Philox RNG"),
    (lambda: cr.Philox4x32(key=2**64), ValueError, r"key must be positive and less than 2\*\*64"),
    (lambda: cr.Philox4x32(key=[1, 2]), ValueError, "key must have 1 elements"),
    (lambda: cr.Philox4x32(counter=2**127), ValueError,
     r"counter must be positive and less than 2\*\*127"),
    (lambda: cr.Philox4x32(counter=[0, 2**63]), ValueError,
     r"counter must be positive and less than 2\*\*127"),
    (lambda: cr.Philox4x32(1, 2, 3, 4), TypeError, r"Philox4x32\(\) takes at most 3 arguments"),
    (lambda: cr.Philox4x32(counter=[1, 2, 3, 4]), ValueError, "counter must have 2 elements"),
    (lambda: cr.Philox4x32(1, key=2), ValueError, "seed and key cannot be both used"),
    (lambda: setattr(cr.Philox4x32(), "state", cr.Philox().state), ValueError,
     "state must be for a Philox4x32 RNG"),
    (lambda: setattr(cr.Philox(), "state", cr.Philox4x32().state), ValueError,
     "state must be for a Philox RNG"),
    (lambda: setattr(cr.Philox4x32(), "state", dict(cr.Philox4x32().state, uinteger_low=2**32)),
     ValueError, r"uinteger_low must be positive and less than 2\*\*32"),
]


@pytest.mark.parametrize("call,exc,words", BAD_HOST, ids=[w for _, _, w in BAD_HOST])
def test_bad_input_raises_before_the_gpu(call, exc, words):
    with pytest.raises(exc, match=words):
        call()


def test_a_bad_input_leaves_the_state_alone():
    g = cr.default_rng(1)
    before = g.bit_generator.state
    with pytest.raises(ValueError):
        g.random(-1)
    after = g.bit_generator.state
    assert after["state"]["counter"].tolist() == before["state"]["counter"].tolist() == [0, 0]
    assert np.array_equal(before["buffer"], after["buffer"])


# ------------------------------------------------------------------ numpy's stream on the GPU


@gpu
@pytest.mark.parametrize("kind", ["raw", "float64", "float32"])
@pytest.mark.parametrize("key,counter", STREAMS)
def test_stream_equals_numpy_for_splits(kind, key, counter):
    for splits in SPLITS:
        ours, theirs = pair(key, counter)
        for n in splits:
            got = cukit_draw(ours, kind, n).get()
            want = numpy_draw(theirs, kind, n)
            assert got.dtype == want.dtype and got.shape == (n,)
            np.testing.assert_array_equal(got, want)
        assert same_state(ours.bit_generator, theirs.bit_generator)


class HostPhilox4x32:
    """The reference for Philox4x32's draws on the GPU: its words computed one at a
    time on the host, with numpy's uniforms and its rule for 32-bit halves."""

    def __init__(self, key, counter):
        self.bg, self.pending = cr.Philox4x32(key=key, counter=counter), None

    def raw(self, n):
        return np.array([self.bg.random_raw() for _ in range(n)], np.uint64)

    def draw(self, kind, n):
        if kind == "raw":
            return self.raw(n)
        if kind == "float64":
            return (self.raw(n) >> np.uint64(11)).astype(np.float64) * 2.0**-53
        halves = []
        for _ in range(n):
            if self.pending is None:
                w = self.bg.random_raw()
                halves.append(w & 0xFFFFFFFF)
                self.pending = w >> 32
            else:
                halves.append(self.pending)
                self.pending = None
        return (np.array(halves, np.uint64) >> np.uint64(8)).astype(np.float32) * np.float32(2**-24)


# (key, counter) of Philox4x32: small, the counter about to wrap, array forms
STREAMS_4X32 = [(5, None), (2**64 - 1, 2**127 - 3), ([77], [2**64 - 1, 5])]


@gpu
@pytest.mark.parametrize("kind", ["raw", "float64", "float32"])
@pytest.mark.parametrize("key,counter", STREAMS_4X32)
def test_philox4x32_stream_equals_its_host_computation_for_splits(kind, key, counter):
    for splits in SPLITS:
        ours, ref = cr.Generator(cr.Philox4x32(key=key, counter=counter)), HostPhilox4x32(key, counter)
        for n in splits:
            got = cukit_draw(ours, kind, n).get()
            np.testing.assert_array_equal(got, ref.draw(kind, n))
        assert ours.bit_generator.counter == ref.bg.counter


@gpu
def test_philox4x32_mixed_draws_across_calls(rng):
    for _ in range(20):
        key = int(rng.integers(0, 2**62))
        ours, ref = cr.Generator(cr.Philox4x32(key=key)), HostPhilox4x32(key, None)
        for _ in range(6):
            kind = ("raw", "float64", "float32")[int(rng.integers(3))]
            n = int(rng.integers(0, 70))
            np.testing.assert_array_equal(cukit_draw(ours, kind, n).get(), ref.draw(kind, n))


@gpu
def test_mixed_draws_and_float32_half_buffering_across_calls(rng):
    for _ in range(40):
        key = int(rng.integers(0, 2**62))
        ours, theirs = pair(key, None)
        for _ in range(6):
            kind = ("raw", "float64", "float32")[int(rng.integers(3))]
            n = int(rng.integers(0, 70))
            np.testing.assert_array_equal(cukit_draw(ours, kind, n).get(), numpy_draw(theirs, kind, n))
        assert same_state(ours.bit_generator, theirs.bit_generator)


@gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_out_shapes_and_unaligned_out(dtype, rng):
    key = int(rng.integers(0, 2**62))
    ours, theirs = pair(key, None)
    big = cukit.to_device(poison(1 + 3 * 5 * 7, dtype))
    view = big[1:].reshape(3, 5, 7)  # C-contiguous, one element past a 16-byte boundary
    r = ours.random((3, 5, 7), dtype=dtype, out=view)
    assert r is view
    np.testing.assert_array_equal(view.get(), theirs.random((3, 5, 7), dtype=dtype))
    assert np.isnan(big.get()[0])
    np.testing.assert_array_equal(ours.random(dtype=dtype, out=view).get(),
                                  theirs.random((3, 5, 7), dtype=dtype))
    scalar = ours.random(dtype=dtype)
    assert scalar.shape == () and scalar.get() == theirs.random(dtype=dtype)


@gpu
def test_uniform_float64_equals_numpy(rng):
    key = int(rng.integers(0, 2**62))
    ours, theirs = pair(key, None)
    for low, high, n in [(-3.25, 7.5, 1001), (0.0, 1e-300, 5), (-1e300, 1e300, 4096)]:
        np.testing.assert_array_equal(ours.uniform(low, high, n).get(), theirs.uniform(low, high, n))
    u = ours.uniform(2.0, 3.0, 100_000, dtype=np.float32).get()
    # a + (b - a) * x rounds to b now and then in float32, as numpy's uniform says it may
    assert u.dtype == np.float32 and u.min() >= 2.0 and u.max() <= 3.0


def launch_with_grid(module, kernel, params, out, grid, block, ints=None):
    p = bytearray(params)
    struct.pack_into("<Qq", p, 0, out.ptr, out.size)
    struct.pack_into("<dd", p, 240, 0.0, 1.0)  # Generator's plain draw: a = 0, b = 1
    struct.pack_into("<i", p, 284, int(out.ptr % 16 == 0))
    if ints:  # integers: low, count - 1, and 2**32 mod count
        low, count = ints
        struct.pack_into("<qQ", p, 256, low, count - 1)
        struct.pack_into("<I", p, 356, 2**32 % count)
    module.get_kernel(kernel)(bytes(p), grid=grid, block=block)
    cukit.synchronize()
    return out.get()


@gpu
@pytest.mark.parametrize("bit_generator", [cr.Philox, cr.Philox4x32])
@pytest.mark.parametrize("kernel,dtype,halves", [("cukit_random_f32", np.float32, True),
                                                 ("cukit_standard_normal_f64", np.float64, False),
                                                 ("cukit_standard_normal_f32", np.float32, True)])
def test_values_do_not_depend_on_the_grid(kernel, dtype, halves, bit_generator):
    """The compiled kernels, launched by hand with other grids and blocks, write the
    same numbers as Generator's own launch."""
    module = cukit.compile(cr._kernel_source())
    n = 100_003
    bg = bit_generator(key=99)
    if bit_generator is cr.Philox4x32:
        kernel += "_x32"
    bg._take(3, True)  # start mid-buffer with a pending half
    state = bg.state
    params = bg._take(n, halves)
    bg.state = state
    g = cr.Generator(bg)
    want = (g.random(n, dtype=dtype) if kernel.startswith("cukit_random_f32")
            else g.standard_normal(n, dtype=dtype)).get()
    for grid, block in [(1, 32), (7, 64), (1000, 256), (3, 1024)]:
        out = cukit.to_device(poison(n, dtype))
        np.testing.assert_array_equal(launch_with_grid(module, kernel, params, out, grid, block), want)


@gpu
@pytest.mark.parametrize("dtype,bit_generator", [(np.int32, cr.Philox4x32), (np.uint8, cr.Philox4x32),
                                                 (np.int64, cr.Philox4x32), (np.int32, cr.Philox)])
def test_integer_values_do_not_depend_on_the_grid(dtype, bit_generator):
    """Philox4x32's integers from halves, with a count that redraws half the values."""
    module = cukit.compile(cr._kernel_source())
    n, x32 = 50_003, bit_generator is cr.Philox4x32
    low, count = (3, 200) if dtype == np.uint8 else (-2**30, 2**31 + 1)
    kernel = f"cukit_integers_{'h' if x32 else ''}{np.dtype(dtype).itemsize}{'_x32' if x32 else ''}"
    bg = bit_generator(key=98)
    bg._take(3, True)  # start mid-buffer with a pending half
    state = bg.state
    params = bg._take(n, x32)
    bg.state = state
    want = cr.Generator(bg).integers(low, low + count, n, dtype=dtype).get()
    # the largest block the kernel takes (its registers set it: 1024 with one NVRTC, 640
    # with another)
    most = module.get_kernel(kernel).attributes["max_threads_per_block"]
    for grid, block in [(1, 32), (7, 64), (1000, 256), (3, most)]:
        out = cukit.to_device(poison(n, dtype))
        got = launch_with_grid(module, kernel, params, out, grid, block, (low, count))
        np.testing.assert_array_equal(got, want)


@gpu
@pytest.mark.parametrize("method", ["standard_normal", "standard_exponential", "normal", "integers"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_split_calls_give_the_same_numbers(method, dtype):
    def draw(g, n):
        if method == "integers":  # a count that redraws about half the values
            return g.integers(-5, 2**31 - 4, n, dtype=np.int32 if dtype == np.float32 else np.int64)
        if method == "normal":
            return g.normal(1.5, 0.25, n, dtype=dtype)
        return getattr(g, method)(n, dtype=dtype)
    whole = draw(cr.default_rng(5), 10_001).get()
    g = cr.default_rng(5)
    parts = [draw(g, n).get() for n in (1, 2, 3, 4093, 5, 5891, 0, 6)]
    np.testing.assert_array_equal(np.concatenate(parts), whole)


# ------------------------------------------------------------------ the counter-based distributions


def numpy_halves(bit_generator, n):
    """The 32-bit draws numpy's next_uint32 would give, from a fresh state."""
    words = bit_generator.random_raw((n + 1) // 2)
    h = np.empty(2 * len(words), np.uint64)
    h[0::2] = words & np.uint64(0xFFFFFFFF)
    h[1::2] = words >> np.uint64(32)
    return h[:n]


@gpu
def test_normals_are_the_inverse_cdf_of_the_draws(rng):
    key = int(rng.integers(0, 2**62))
    nd = NormalDist()
    ours = cr.Generator(cr.Philox(key=key))
    z = ours.standard_normal(3001).get()
    w = np.random.Philox(key=key).random_raw(3001)
    u = (((w >> np.uint64(10)) & np.uint64(2**53 - 1)).astype(np.float64) + 0.5) * 2.0**-54
    ref = np.array([nd.inv_cdf(x) for x in u])
    np.testing.assert_allclose(z, np.where(w >> np.uint64(63), -ref, ref), rtol=1e-13, atol=1e-15)

    ours = cr.Generator(cr.Philox(key=key))
    z = ours.normal(1.5, 2.0, 4001, dtype=np.float32).get()
    h = numpy_halves(np.random.Philox(key=key), 4001)
    u = ((h & np.uint64(0x7FFFFFFF)).astype(np.float64) + 0.5) * 2.0**-32
    ref = np.array([nd.inv_cdf(x) for x in u])
    ref = 1.5 + 2.0 * np.where(h >> np.uint64(31), -ref, ref)
    np.testing.assert_allclose(z, ref, rtol=2e-6, atol=1e-6)


@gpu
@pytest.mark.parametrize("loc,scale", [(0.0, 1.0), (-1.5, 3.0)])
def test_default_normals_are_box_muller_of_pairs(loc, scale, rng):
    """Philox4x32 (default_rng's): float32 from the halves of a word (u from the low,
    the angle from the high half), float64 from the words 2k and 2k + 1, both values of
    each pair. float32 runs on the hardware's lg2, sqrt, sin and cos approximations:
    NVIDIA's error bounds give |dz| <= 2e-6 (1 + r) + 5e-7 / r."""
    key = int(rng.integers(0, 2**62))
    n = 4001
    words = HostPhilox4x32(key, None).raw(n)
    lo, hi = words & np.uint64(M32), words >> np.uint64(32)
    u = lo.astype(np.float64) * 2.0**-32 + 2.0**-33
    r = np.sqrt(-2 * np.log(u))
    t = hi.astype(np.uint32).view(np.int32).astype(np.float64) * 2.0**-31
    ref = np.empty(2 * n)
    ref[0::2], ref[1::2] = r * np.cos(np.pi * t), r * np.sin(np.pi * t)
    g = cr.Generator(cr.Philox4x32(key=key))
    z = g.normal(loc, scale, 2 * n - 1, dtype=np.float32).get().astype(np.float64)
    rr = np.repeat(r, 2)[: 2 * n - 1]
    err = np.abs(z - (loc + scale * ref[: 2 * n - 1]))
    assert np.all(err <= scale * (2e-6 * (1 + rr) + 5e-7 / rr) + 2**-23 * np.abs(z))

    # float64: u from word 2k, the angle q pi/2 + (f - 1/2) pi/2 from word 2k + 1 (q its
    # top two bits, f its low 52 as a fraction)
    # y = (f - 1/2) pi/2 rounded to float64 first, as the kernel does; the rest in long
    # double, turned by exact quarter turns)
    w0, w1 = words[0::2][: n // 2], words[1::2][: n // 2]
    ld = np.longdouble
    u = ((w0 >> np.uint64(11)) + np.uint64(1)).astype(ld) * ld(2.0**-53)
    r = np.sqrt(-2 * np.log(u))
    f = (w1 & np.uint64(2**52 - 1)).astype(np.float64) * 2.0**-52
    y = ((f + 1.0) - 1.5) * 1.5707963267948966
    q = (w1 >> np.uint64(62)).astype(np.intp)  # quarter turns, exact
    cy, sy = np.cos(y.astype(ld)), np.sin(y.astype(ld))
    ref = np.empty(2 * (n // 2), ld)
    ref[0::2] = r * np.choose(q, [cy, -sy, -cy, sy])
    ref[1::2] = r * np.choose(q, [sy, cy, -sy, -cy])
    g = cr.Generator(cr.Philox4x32(key=key))
    z = g.normal(loc, scale, 2 * (n // 2) - 1).get()
    if (loc, scale) == (0.0, 1.0) and np.finfo(np.longdouble).nmant >= 63:
        # within 4 units in the last place (the log, the polynomials, sqrt and the products),
        # where long double is wider than double (x86's 80 bits; not on every platform)
        want = ref[:-1].astype(np.float64)
        ulps = np.abs(z.astype(ld) - ref[:-1]) / np.spacing(np.abs(want)).astype(ld)
        assert ulps.max() <= 4, ulps.max()
    np.testing.assert_allclose(z, loc + scale * ref[:-1].astype(np.float64), rtol=1e-13, atol=1e-14 * scale)


@gpu
def test_exponentials_are_minus_log_of_the_uniforms(rng):
    key = int(rng.integers(0, 2**62))
    ours, theirs = pair(key, None)
    e = ours.exponential(2.5, 5001).get()
    np.testing.assert_allclose(e, -2.5 * np.log1p(-theirs.random(5001)), rtol=1e-14)
    e = ours.standard_exponential(5001, dtype=np.float32).get()
    u = theirs.random(5001, dtype=np.float32).astype(np.float64)
    np.testing.assert_allclose(e, -np.log1p(-u), rtol=2e-6, atol=1e-7)


M32 = 0xFFFFFFFF


def philox4x32(ctr, key):
    """Random123's philox4x32_10 on the host: four 32-bit words."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return c0, c1, c2, c3


def lemire_half(lo, hi, side, low, count):
    """Philox4x32's integer from the half `side` of the word (lo, hi), count <= 2**32:
    low + (x * count) >> 32, x drawn again while (x * count) mod 2**32 < 2**32 mod count,
    from philox4x32 at counters (k, side, 0x243F6A88, 0x85A308D3) keyed by the word."""
    thresh = 2**32 % count
    m = (hi if side else lo) * count
    k = 0
    while m & M32 < thresh:
        for y in philox4x32((k, side, 0x243F6A88, 0x85A308D3), (lo, hi)):
            m = y * count
            if m & M32 >= thresh:
                break
        k += 1
    return low + (m >> 32)


def host_integers_x32(words, low, count, first_side=0):
    """Philox4x32's integers from `words` (numpy's rule for halves: a word's low half
    first), starting at half `first_side` of the first word."""
    out = []
    for i, w in enumerate(int(x) for x in words):
        for side in (0, 1)[first_side if i == 0 else 0:]:
            out.append(lemire_half(w & M32, w >> 32, side, low, count))
    return out


@pytest.mark.parametrize("ctr,key,want", PHILOX4X32_KAT)
def test_the_host_philox4x32_reference_gives_random123s_answers(ctr, key, want):
    assert philox4x32(ctr, key) == want


INTEGER_CASES = [
    (np.int64, -5, 6, False), (np.int32, -2**31, 2**31 - 1, True), (np.int8, -128, 128, False),
    (np.uint16, 3, 10, False), (np.uint64, 0, 2**64 - 1, True), (np.bool_, 0, 2, False),
    (np.uint8, 7, 7, True), (np.int64, -2**63, 2**63 - 1, True),
    (np.uint32, 0, 2**32 - 1, True), (np.int16, -7, -6, False), (np.int64, 0, 2**32, False),
    (np.int64, -2**40, -2**40 + 2**31 + 1, False), (np.int64, 5, 2**32 + 6, False),
    (np.int32, -1000, 2**31 - 1, False),
]


@gpu
@pytest.mark.parametrize("dtype,low,high,endpoint", INTEGER_CASES)
@pytest.mark.parametrize("bitgen,skip", [("Philox", 0), ("Philox4x32", 0), ("Philox4x32", 1)])
def test_integers_are_the_high_word_of_draw_times_count(dtype, low, high, endpoint, rng, bitgen,
                                                        skip):
    """Philox: low + (word * count) >> 64, one word each. Philox4x32: for counts up to
    2**32 one 32-bit half each (Lemire's multiply-shift and rejection), else as Philox.
    skip: words drawn before, so that the draw starts between vector stores. Counts of
    2**31 + 1 and 2**31 + 1001 redraw about half the values."""
    key = int(rng.integers(0, 2**62))
    ours = cr.Generator(getattr(cr, bitgen)(key=key))
    ours.bit_generator.random_raw(skip, output=False)
    out = cukit.to_device(np.ones(2001, dtype) if dtype == np.bool_ else poison(2001, dtype))
    got = ours.integers(low, high, 2001, dtype=dtype, endpoint=endpoint, out=out).get()
    count = high - low + (1 if endpoint else 0)
    if bitgen == "Philox":
        words = np.random.Philox(key=key).random_raw(2001)
    else:
        words = HostPhilox4x32(key, None).raw(skip + 2001)[skip:]
    if bitgen == "Philox4x32" and count <= 2**32:
        want = host_integers_x32(words[:1001], low, count)[:2001]
    else:
        want = [low + ((int(x) * count) >> 64) for x in words]
    assert got.dtype == np.dtype(dtype)
    assert [int(v) for v in got] == want


@gpu
def test_a_pending_half_is_drawn_with_its_word():
    """After an odd float32 draw the next 32-bit value is a word's high half: Philox4x32's
    normals and integers draw it with the word's low half (ulow in the state), as one
    draw of them all would; the state, set on another generator, carries it."""
    for draw in (lambda g, n: g.standard_normal(n, dtype=np.float32),
                 lambda g, n: g.normal(-2.0, 3.0, n, dtype=np.float32),
                 lambda g, n: g.integers(-9, 2**31 - 8, n, dtype=np.int32)):
        a, b = cr.Generator(cr.Philox4x32(key=77)), cr.Generator(cr.Philox4x32(key=77))
        a.random(3, dtype=np.float32)
        b.random(2, dtype=np.float32)
        moved = cr.Generator(cr.Philox4x32())
        moved.bit_generator.state = a.bit_generator.state
        assert moved.bit_generator.state["uinteger_low"] == a.bit_generator.state["uinteger_low"]
        whole = draw(b, 8).get()
        np.testing.assert_array_equal(draw(a, 7).get(), whole[1:])
        np.testing.assert_array_equal(draw(moved, 7).get(), whole[1:])


N_STAT = 10_000_000


def ks_grid(sorted_x, cdf_points, probs):
    """Largest gap between the empirical CDF and the true one at the given points."""
    emp = np.searchsorted(sorted_x, cdf_points, side="right") / len(sorted_x)
    return np.max(np.abs(emp - probs))


@gpu
@pytest.mark.parametrize("bit_generator", [cr.Philox4x32, cr.Philox])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_normal_statistics(dtype, bit_generator):
    g = cr.Generator(bit_generator(11))
    x = g.normal(3.0, 2.0, N_STAT, dtype=dtype).get().astype(np.float64)
    assert abs(x.mean() - 3.0) < 5 * 2.0 / np.sqrt(N_STAT)
    assert abs(x.var() - 4.0) < 5 * 4.0 * np.sqrt(2.0 / N_STAT)
    z = np.sort((x - 3.0) / 2.0)
    probs = np.linspace(1e-4, 1 - 1e-4, 2001)
    points = np.array([NormalDist().inv_cdf(p) for p in probs])
    assert ks_grid(z, points, probs) < 1e-3  # 1.63 / sqrt(n) is the 1% level: 5.2e-4
    assert abs(z).max() > 4.5  # the tails are there


@gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exponential_statistics(dtype):
    x = np.sort(cr.default_rng(12).exponential(0.5, N_STAT, dtype=dtype).get().astype(np.float64))
    assert x.min() >= 0
    assert abs(x.mean() - 0.5) < 5 * 0.5 / np.sqrt(N_STAT)
    assert abs(x.var() - 0.25) < 5 * 0.25 * np.sqrt(8.0 / N_STAT)
    cdf = 1 - np.exp(-x / 0.5)
    i = np.arange(1, N_STAT + 1) / N_STAT
    ks = max(np.max(i - cdf), np.max(cdf - (i - 1 / N_STAT)))
    assert ks < 1e-3


@gpu
def test_integer_and_uniform_statistics():
    g = cr.default_rng(13)
    x = g.integers(-3, 10, N_STAT, dtype=np.int32).get()
    counts = np.bincount(x + 3, minlength=13)
    assert counts.min() > 0 and len(counts) == 13
    expected = N_STAT / 13
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 40  # 12 degrees of freedom: 40 is far past the 0.01% level
    assert abs(x.mean() - 3.0) < 5 * np.sqrt(14.0) / np.sqrt(N_STAT)
    u = np.sort(g.random(N_STAT, dtype=np.float32).get().astype(np.float64))
    i = np.arange(1, N_STAT + 1) / N_STAT
    assert max(np.max(i - u), np.max(u - (i - 1 / N_STAT))) < 1e-3


@gpu
@pytest.mark.parametrize("dtype", [np.uint32, np.int64])
def test_integer_statistics_with_redraws(dtype):
    """A count of 2**31 + 1 redraws about half of Philox4x32's halves: the values stay
    uniform (16 equal bins of 2**27, and the last value alone)."""
    count, n = 2**31 + 1, 4_000_000
    x = cr.default_rng(14).integers(0, count, n, dtype=dtype).get().astype(np.int64)
    assert x.min() >= 0 and x.max() < count
    counts = np.bincount(x >> 27, minlength=17)
    expected = n * np.array([2**27] * 16 + [1]) / count
    chi2 = ((counts[:16] - expected[:16]) ** 2 / expected[:16]).sum()
    assert chi2 < 50  # 15 degrees of freedom: 50 is far past the 0.01% level
    assert counts[16] < 10  # the top value: expected 0.002 of them
    assert abs(x.mean() / count - 0.5) < 5 * np.sqrt(1 / 12 / n)


@gpu
def test_spawned_and_jumped_streams_differ():
    g = cr.default_rng(21)
    a, b = (k.random(1000).get() for k in g.spawn(2))
    c = cr.Generator(g.bit_generator.jumped()).random(1000).get()
    d = g.random(1000).get()
    for x, y in [(a, b), (a, d), (c, d)]:
        assert not np.any(x == y)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.15


@gpu
def test_rand_randn():
    cr.seed(4)
    x = cr.rand((64, 3), dtype=np.float32)  # PyCUDA's form: a shape tuple
    assert x.shape == (64, 3) and x.dtype == np.float32
    y = cr.randn(1000, dtype=np.float64)
    assert y.dtype == np.float64 and abs(y.get().mean()) < 0.2
    cr.seed(4)
    np.testing.assert_array_equal(cr.rand(64, 3, dtype=np.float32).get(), x.get())


BAD_OUT = [
    (lambda g: g.random(4, out=cukit.empty(5)), ValueError, "size must match out.shape"),
    (lambda g: g.random(out=cukit.empty(5, np.float32)), TypeError,
     "out has dtype float32 but the draw is float64"),
    (lambda g: g.integers(0, 5, out=cukit.empty(5, np.int32)), TypeError,
     "out has dtype int32 but the draw is int64"),
    (lambda g: g.standard_normal(out=cukit.empty((4, 4))[:, ::2]), ValueError,
     "out must be C-contiguous"),
]


@gpu
@pytest.mark.parametrize("call,exc,words", BAD_OUT, ids=[w for _, _, w in BAD_OUT])
def test_bad_out(call, exc, words):
    g = cr.default_rng(1)
    with pytest.raises(exc, match=words):
        call(g)
    assert same_state(g.bit_generator, cr.Philox4x32(1))


@gpu
def test_freed_out():
    out = cukit.empty(5)
    out.free()
    with pytest.raises(ValueError, match="freed"):
        cr.default_rng(1).random(5, out=out)


@gpu
def test_draws_on_a_stream_and_in_a_graph(rng):
    key = int(rng.integers(0, 2**62))
    ours, theirs = pair(key, None)
    s = cukit.Stream()
    x = ours.random(10_001, dtype=np.float32, stream=s)
    y = ours.standard_normal(999, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(x.get(), theirs.random(10_001, dtype=np.float32))
    assert y.shape == (999,)
    theirs.random(999)  # the normals drew what random() would

    out = cukit.to_device(poison(4097, np.float64))
    with s.capture() as graph:
        ours.random(out=out, stream=s)  # the state moves once, at capture
    assert np.isnan(out.get()).all()  # captured, not run
    want = theirs.random(4097)
    for _ in range(2):  # each replay writes the same numbers
        out.fill(np.nan)
        s.wait(cukit.Event().record())  # the fill is on the legacy stream: order s after it
        graph.launch(s)
        s.synchronize()
        np.testing.assert_array_equal(out.get(), want)
    np.testing.assert_array_equal(ours.random(5).get(), theirs.random(5))


@gpu
def test_a_bad_stream_raises_and_draws_nothing():
    g = cr.default_rng(1)
    with pytest.raises(TypeError, match="stream must be a cukit.Stream"):
        g.random(3, stream="s")
    assert same_state(g.bit_generator, cr.Philox4x32(1))


def poisson_pmf(lam, kmax):
    k = np.arange(kmax + 1)
    logp = -lam + k * np.log(lam) - np.array([math.lgamma(x + 1) for x in k])
    return np.exp(logp)


@gpu
@pytest.mark.parametrize("lam", [0.5, 3.0, 9.99, 10.0, 42.5, 1e4, 3e9])
def test_poisson_statistics(lam):
    n = 2_000_000
    x = cr.default_rng(31).poisson(lam, n).get()
    assert x.dtype == np.int64 and x.min() >= 0
    sd = np.sqrt(lam)
    assert abs(x.mean() - lam) < 5 * sd / np.sqrt(n)
    assert abs(x.var() / lam - 1) < 5 * np.sqrt(2.0 / n) + 5 / np.sqrt(n * lam)
    if lam < 100:  # chi-square against the pmf, over the bins expecting 50 or more
        kmax = int(lam + 12 * sd + 12)
        pmf = poisson_pmf(lam, kmax) * n
        counts = np.bincount(x, minlength=kmax + 1)[: kmax + 1]
        keep = pmf >= 50
        chi2 = ((counts[keep] - pmf[keep]) ** 2 / pmf[keep]).sum()
        dof = keep.sum() - 1
        assert chi2 < dof + 6 * np.sqrt(2 * dof) + 10


@gpu
def test_poisson_takes_one_word_per_value_and_splits():
    whole = cr.Generator(cr.Philox(8)).poisson(25.0, 9001).get()
    g = cr.Generator(cr.Philox(8))  # numpy's stream: the words taken are countable
    parts = [g.poisson(25.0, n).get() for n in (1, 4000, 3, 4997)]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    theirs = np.random.Generator(np.random.Philox(8))
    theirs.bit_generator.random_raw(9001)
    np.testing.assert_array_equal(g.random(7).get(), theirs.random(7))
    assert (cr.default_rng(8).poisson(0.0, 100).get() == 0).all()
    small = cr.Generator(cr.Philox(9)).poisson(2.0, 5)  # inversion at the word's uniform
    u = np.random.Generator(np.random.Philox(9)).random(5)
    cdf = np.cumsum(poisson_pmf(2.0, 60))
    np.testing.assert_array_equal(small.get(), np.searchsorted(cdf, u, side="right"))


@pytest.mark.parametrize("lam,exc,words", [
    (-1.0, ValueError, "lam < 0"), (float("nan"), ValueError, "lam < 0"),
    (1e19, ValueError, "lam value too large"), ("a", TypeError, "lam must be a number"),
])
def test_poisson_bad_lam(lam, exc, words):
    with pytest.raises(exc, match=words):
        cr.default_rng(1).poisson(lam, 3)


@gpu
@pytest.mark.parametrize("n", [0, 1, 2, 5, 1000, 100_003])
def test_permutation_of_n_is_a_permutation(n):
    p = cr.default_rng(41).permutation(n)
    assert p.dtype == np.int64 and p.shape == (n,)
    got = p.get()
    np.testing.assert_array_equal(np.sort(got), np.arange(n))
    np.testing.assert_array_equal(cr.default_rng(41).permutation(n).get(), got)  # reproducible
    if n >= 1000:
        assert not np.array_equal(cr.default_rng(42).permutation(n).get(), got)
        assert abs(np.corrcoef(got, np.arange(n))[0, 1]) < 0.1
        assert np.sum(got == np.arange(n)) < 10  # fixed points: Poisson(1)


@gpu
def test_permutations_of_four_are_uniform():
    g = cr.default_rng(43)
    samples = 4800
    counts = {}
    for _ in range(samples):
        key = tuple(g.permutation(4).get())
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 24
    expected = samples / 24
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < 60  # 23 degrees of freedom: 60 is far past the 0.01% level


@gpu
def test_permutation_and_shuffle_of_rows(rng):
    host = rng.standard_normal((1001, 3)).astype(np.float32)
    x = cukit.to_device(host)
    p = cr.default_rng(44).permutation(x)
    np.testing.assert_array_equal(x.get(), host)  # a copy; x is left alone
    order = cr.default_rng(44).permutation(1001).get()
    np.testing.assert_array_equal(p.get(), host[order])
    cr.default_rng(44).shuffle(x)
    np.testing.assert_array_equal(x.get(), host[order])
    odd = cukit.to_device(rng.integers(0, 255, (77, 5), dtype=np.uint8))  # 5-byte rows
    before = odd.get()
    cr.default_rng(45).shuffle(odd)
    np.testing.assert_array_equal(odd.get(), before[cr.default_rng(45).permutation(77).get()])


BAD_PERM = [
    (lambda g: g.permutation(-3), ValueError, "negative dimensions are not allowed"),
    (lambda g: g.permutation(3.5), TypeError, "x must be an int or a cukit.Array"),
    (lambda g: g.shuffle(np.arange(4)), TypeError, "x must be a cukit.Array"),
    (lambda g: g.permutation(cukit.to_device(np.float32(1))), ValueError,
     "x must be an integer or at least 1-dimensional"),
    (lambda g: g.shuffle(cukit.empty((4, 4))[:, ::2]), ValueError, "x must be C-contiguous"),
    (lambda g: g.permutation(cukit.empty((4, 4)), axis=1), ValueError, "along axis 0 only"),
]


@gpu
@pytest.mark.parametrize("call,exc,words", BAD_PERM, ids=[w for _, _, w in BAD_PERM])
def test_bad_permutation_input(call, exc, words):
    g = cr.default_rng(1)
    with pytest.raises(exc, match=words):
        call(g)
    assert same_state(g.bit_generator, cr.Philox4x32(1))


def test_cukit_random_is_an_attribute_and_has_a_version():
    assert cukit.random is cr
    assert cr.version() == tuple(int(p) for p in cukit.__version__.split(".")[:3])


@gpu
def test_rand_of_integer_dtypes_and_the_pycuda_face():
    from cukit.pycuda import curandom
    x = cr.rand(100_000, dtype=np.int32).get()
    assert x.dtype == np.int32 and x.min() < -2**30 and x.max() > 2**30
    u = curandom.rand((10, 10))
    assert u.shape == (10, 10) and u.dtype == np.float32
    assert 0 <= u.get().min() and u.get().max() < 1


DEBUG_OBSERVED = r"""
import sys
import numpy as np
import cukit
import cukit.random as cr
from cukit._cukit import _emulator_instructions as ran
seed = int(sys.argv[1])
g = cr.Generator(cr.Philox(seed))
g.random(4)
cukit.synchronize()
for debug in (False, True):
    cukit.set_debug(debug)
    want = np.random.Generator(np.random.Philox(seed)).random(8)
    g = cr.Generator(cr.Philox(seed))
    before = ran()
    r = g.random(8)
    print(debug, ran() > before)   # the draw's kernel ran by the time the call returned
    cukit.synchronize()
    assert np.array_equal(r.get(), want)
"""


@gpu
def test_debug_mode_waits_for_a_random_draw(rng):
    """cukit.set_debug covers the random kernels: with the emulator deferring work to the
    next synchronize, a draw has run when the call returns only in debug mode."""
    if cukit.backend() != "emulator":
        pytest.skip("observes the emulator's deferred execution")
    env = dict(os.environ, CUKIT_EMULATOR_DEFER="1", CUKIT_BACKEND="emulator")
    out = subprocess.run([sys.executable, "-c", DEBUG_OBSERVED, str(rng.integers(1 << 30))],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "True", "True"]


# ------------------------------------------------------------------ float16 and bfloat16

try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # the bfloat16 cases skip
    ml_dtypes, BF16 = None, None
SMALL = [pytest.param(np.dtype(np.float16), id="float16"),
         pytest.param(BF16, id="bfloat16",
                      marks=pytest.mark.skipif(BF16 is None, reason="needs ml_dtypes"))]
BITGENS = [cr.Philox, cr.Philox4x32]


def precision(dtype):
    """Significant bits: the uniforms' grid is k * 2**-P."""
    return 11 if dtype == np.float16 else 8


def at_precision(u32, dtype):
    """numpy's float32 uniforms (x >> 8) * 2**-24 cut to P bits: (x >> (32 - P)) * 2**-P."""
    p = precision(dtype)
    return (np.floor(u32.astype(np.float64) * 2**p) / 2**p).astype(dtype)


def u16(a):
    return np.ascontiguousarray(a).view(np.uint16)


@gpu
@pytest.mark.parametrize("dtype", SMALL)
def test_small_float_uniforms_are_numpys_stream_at_their_precision(dtype):
    """Under Philox, random(dtype=float16/bfloat16) is numpy's float32 stream with each
    value cut to the type's P significant bits, bit for bit, across split calls;
    uniform(a, b) is a + (b - a) * that, in float32, rounded once."""
    key, counter = 2**100 + 12345, 2**64 - 3
    ours, theirs = pair(key, counter)
    got = np.concatenate([ours.random(n, dtype=dtype).get() for n in (1, 1000, 3, 4097)])
    want = at_precision(theirs.random(5101, dtype=np.float32), dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(u16(got), u16(want))
    assert same_state(ours.bit_generator, theirs.bit_generator)
    u = at_precision(theirs.random(3001, dtype=np.float32), dtype).astype(np.float32)
    want = (np.float32(-2.5) + np.float32(6.0) * u).astype(dtype)
    np.testing.assert_array_equal(u16(ours.uniform(-2.5, 3.5, 3001, dtype=dtype).get()), u16(want))


@gpu
@pytest.mark.parametrize("bit_generator", BITGENS)
@pytest.mark.parametrize("dtype", SMALL)
def test_small_float_draws_are_the_float32_draws_rounded_once(dtype, bit_generator):
    """Normals and exponentials in float16/bfloat16 equal the same generator's float32
    draws rounded to nearest even (ml_dtypes' and numpy's cast), bit for bit; uniforms
    are the float32 draws cut to P bits. Same seed, same bits."""
    n = 20_001
    for method, args in [("standard_normal", ()), ("normal", (-3.0, 7.5)), ("random", ()),
                         ("exponential", (2.5,)), ("standard_exponential", ())]:
        a, b = cr.Generator(bit_generator(31)), cr.Generator(bit_generator(31))
        a.random(3, dtype=np.float32)  # start with a pending half
        b.random(3, dtype=np.float32)
        small = getattr(a, method)(*args, size=n, dtype=dtype).get()
        f32 = getattr(b, method)(*args, size=n, dtype=np.float32).get()
        want = at_precision(f32, dtype) if method == "random" else f32.astype(dtype)
        assert small.dtype == dtype
        np.testing.assert_array_equal(u16(small), u16(want), err_msg=method)
        again = getattr(cr.Generator(bit_generator(31)), method)(*args, size=n, dtype=dtype).get()
        fresh = getattr(cr.Generator(bit_generator(31)), method)(*args, size=n, dtype=dtype).get()
        np.testing.assert_array_equal(u16(again), u16(fresh), err_msg=method)


@gpu
@pytest.mark.parametrize("bit_generator", BITGENS)
@pytest.mark.parametrize("dtype", SMALL)
def test_a_small_float_uniform_is_never_one(dtype, bit_generator):
    """The largest 32-bit draw gives 1 - 2**-P, where a float32 uniform rounded to the
    type would give 1.0; and 2**20 draws stay below 1 and fill the grid evenly."""
    p = precision(dtype)
    bg = bit_generator(5)
    state = bg.state
    state["has_uint32"], state["uinteger"] = 1, 0xFFFFFFFF  # the pending half is the top one
    bg.state = state
    top = cr.Generator(bg).random(1, dtype=dtype).get()
    assert top[0] == 1 - 2.0**-p and top[0] < 1
    assert np.float32(1 - 2.0**-24).astype(dtype) == 1  # the rounding this avoids
    n = 1 << 20
    x = cr.Generator(bit_generator(6)).random(n, dtype=dtype).get()
    assert x.min() >= 0 and x.max() == 1 - 2.0**-p
    k = (x.astype(np.float64) * 2**p).astype(np.int64)
    np.testing.assert_array_equal(k.astype(np.float64) / 2**p, x.astype(np.float64))  # on the grid
    counts = np.bincount(k, minlength=2**p)
    expected = n / 2**p
    chi2 = ((counts - expected) ** 2 / expected).sum()
    dof = 2**p - 1
    assert chi2 < dof + 6 * np.sqrt(2 * dof)  # six standard deviations of chi-square
    assert abs(x.astype(np.float64).mean() - (1 - 2.0**-p) / 2) < 5 * np.sqrt(1 / 12 / n)


@gpu
@pytest.mark.parametrize("bit_generator", BITGENS)
@pytest.mark.parametrize("dtype", SMALL)
def test_small_float_normal_and_exponential_statistics(dtype, bit_generator):
    """Against the exact distributions and against numpy's own draws rounded to the
    same type (a two-sample test), with bounds a wrong location, scale or shape fails."""
    n = 1 << 20
    g = cr.Generator(bit_generator(17))
    x = g.normal(3.0, 2.0, n, dtype=dtype).get().astype(np.float64)
    assert abs(x.mean() - 3.0) < 5 * 2.0 / np.sqrt(n)
    assert abs(x.std() - 2.0) < 5 * 2.0 * np.sqrt(0.5 / n) + 2.0 * 2.0**-precision(dtype)
    z = np.sort((x - 3.0) / 2.0)
    probs = np.linspace(1e-3, 1 - 1e-3, 401)
    points = np.array([NormalDist().inv_cdf(q) for q in probs])
    # 1.95 / sqrt(n) is the 0.1% level (1.9e-3); rounding to 16 bits moves the CDF by 5e-4 at most
    assert ks_grid(z, points, probs) < 4e-3
    theirs = np.sort(np.random.default_rng(17).normal(3.0, 2.0, n).astype(dtype).astype(np.float64))
    grid = np.linspace(-4.0, 10.0, 801)
    two = np.abs(np.searchsorted(np.sort(x), grid, side="right") -
                 np.searchsorted(theirs, grid, side="right")) / n
    assert two.max() < 1.95 * np.sqrt(2.0 / n) * 1.5
    e = np.sort(g.exponential(0.5, n, dtype=dtype).get().astype(np.float64))
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 5 * 0.5 / np.sqrt(n) + 0.5 * 2.0**-precision(dtype)
    cdf = 1 - np.exp(-e / 0.5)
    i = np.arange(1, n + 1) / n
    assert max(np.max(i - cdf), np.max(cdf - (i - 1 / n))) < 4e-3


@gpu
@pytest.mark.parametrize("dtype", SMALL)
def test_small_float_out_and_grid(dtype):
    """out= of the type, and the kernels launched by hand with other grids write the
    same numbers as Generator's own launch."""
    g = cr.default_rng(8)
    out = cukit.to_device(poison(1001, np.float32)).astype(dtype)
    assert g.standard_normal(out=out, dtype=dtype) is out
    assert not np.isnan(out.get().astype(np.float32)).any()
    with pytest.raises(TypeError, match="out has dtype float32 but the draw is"):
        g.random(out=cukit.empty(4, np.float32), dtype=dtype)
    module = cukit.compile(cr._kernel_source())
    name = "f16" if dtype == np.float16 else "bf16"
    n = 70_001
    for kernel, method in [(f"cukit_random_{name}_x32", "random"),
                           (f"cukit_standard_normal_{name}_x32", "standard_normal"),
                           (f"cukit_standard_normal_{name}", "standard_normal")]:
        bg = (cr.Philox4x32 if kernel.endswith("_x32") else cr.Philox)(key=97)
        bg._take(3, True)  # start mid-buffer with a pending half
        state = bg.state
        params = bg._take(n, True)
        bg.state = state
        want = getattr(cr.Generator(bg), method)(n, dtype=dtype).get()
        for grid, block in [(1, 32), (7, 64), (3, 1024)]:
            o = cukit.to_device(poison(n, np.float32)).astype(dtype)
            np.testing.assert_array_equal(u16(launch_with_grid(module, kernel, params, o, grid, block)),
                                          u16(want), err_msg=kernel)


@gpu
def test_rand_and_randn_in_16_bits():
    cr.seed(9)
    assert cr.rand(100, dtype=np.float16).dtype == np.float16
    assert cr.randn(100, dtype=np.float16).dtype == np.float16
    if BF16 is not None:
        x = cr.rand((10, 10), dtype="bfloat16")
        assert x.dtype == BF16 and x.get().astype(np.float32).max() < 1


def test_bfloat16_draws_without_ml_dtypes_say_to_install_it():
    code = textwrap.dedent("""
        import sys
        sys.modules["ml_dtypes"] = None   # import ml_dtypes fails
        import cukit.random as cr
        try:
            cr.default_rng(1).random(3, dtype="bfloat16")
        except TypeError as e:
            print("TypeError:", e)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "TypeError: dtype 'bfloat16' is numpy's through the ml_dtypes package" in r.stdout
    assert "pip install ml_dtypes" in r.stdout


# ------------------------------------------------------------------ numpy's legacy module API


LEGACY = [  # (name, args, kwargs): cukit.random.name and numpy.random.name alike
    ("rand", (3, 4), {}), ("rand", (), {}), ("rand", (5,), {}),
    ("randn", (2, 5), {}), ("randn", (7,), {}),
    ("random_sample", ((2, 3),), {}), ("random_sample", (), {}), ("random", (4,), {}),
    ("randint", (5,), {"size": 7}), ("randint", (-3, 4, (2, 2)), {}), ("randint", (9,), {}),
    ("uniform", (-2.0, 3.0, 100), {}), ("normal", (1.0, 2.0, (3,)), {}),
    ("standard_normal", (4,), {}), ("exponential", (2.0, 5), {}), ("exponential", (), {}),
    ("choice", (10, 3), {}), ("choice", (10,), {}), ("choice", (10, (2, 3)), {"replace": False}),
    ("permutation", (7,), {}),
]


@gpu
@pytest.mark.parametrize("name,args,kwargs", LEGACY, ids=[f"{n}{a}" for n, a, _ in LEGACY])
def test_legacy_functions_have_numpys_shapes_and_dtypes(name, args, kwargs):
    cr.seed(11)
    ours = getattr(cr, name)(*args, **kwargs)
    theirs = np.asarray(getattr(np.random, name)(*args, **kwargs))
    assert isinstance(ours, cukit.Array)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, (ours, theirs)


@gpu
def test_float32_is_taken_where_speed_is_wanted():
    cr.seed(2)
    for fn, args in [(cr.rand, (3, 4)), (cr.randn, (5,)), (cr.random_sample, ((6,),)),
                     (cr.uniform, (0.0, 2.0, 8)), (cr.normal, (0.0, 1.0, 9)),
                     (cr.standard_normal, (10,)), (cr.exponential, (1.0, 11))]:
        x = fn(*args, dtype=np.float32)
        assert x.dtype == np.float32 and np.isfinite(x.get()).all()
    assert cr.randint(0, 9, 5, dtype=np.int16).dtype == np.int16


@gpu
def test_legacy_draws_have_the_distributions_statistics(rng):
    """Means and variances of large draws against the distributions' and against a draw
    of numpy's of the same size (both within five standard errors)."""
    cr.seed(int(rng.integers(2**32)))
    n = 1 << 18
    for name, args, mean, var in [("rand", (n,), 0.5, 1 / 12), ("randn", (n,), 0.0, 1.0),
                                  ("random_sample", (n,), 0.5, 1 / 12),
                                  ("uniform", (-2.0, 3.0, n), 0.5, 25 / 12),
                                  ("normal", (1.0, 2.0, n), 1.0, 4.0),
                                  ("standard_normal", (n,), 0.0, 1.0),
                                  ("exponential", (2.0, n), 2.0, 4.0),
                                  ("randint", (-3, 7, n), 1.5, (10**2 - 1) / 12)]:
        for dtype in ([np.float64, np.float32] if name != "randint" else [np.int64]):
            x = getattr(cr, name)(*args, dtype=dtype).get().astype(np.float64)
            y = getattr(np.random.default_rng(rng.integers(2**32)), {
                "rand": "random", "randn": "standard_normal", "random_sample": "random",
                "randint": "integers"}.get(name, name))(*args).astype(np.float64)
            se_mean = np.sqrt(var / n)
            kurt = {"randn": 3, "normal": 3, "standard_normal": 3, "exponential": 9}.get(name, 1.8)
            se_var = var * np.sqrt((kurt - 1) / n)
            assert abs(x.mean() - mean) < 5 * se_mean, (name, dtype)
            assert abs(x.var() - var) < 5 * se_var, (name, dtype)
            assert abs(x.mean() - y.mean()) < 5 * np.sqrt(2) * se_mean, (name, dtype)
    u = cr.rand(n).get()
    assert u.min() >= 0 and u.max() < 1
    k = cr.randint(-3, 7, n).get()
    assert k.min() == -3 and k.max() == 6
    e = cr.exponential(2.0, n).get()
    assert e.min() >= 0


@gpu
def test_seed_makes_the_module_functions_reproducible(rng):
    s = int(rng.integers(2**63))
    draws = []
    for _ in range(2):
        cr.seed(s)
        draws.append([cr.rand(100).get(), cr.randn(3, 4).get(), cr.randint(0, 1000, 50).get(),
                      cr.choice(1000, 20, replace=False).get(), cr.permutation(30).get()])
    for a, b in zip(*draws):
        np.testing.assert_array_equal(a, b)
    cr.seed(s + 1)
    assert not np.array_equal(cr.rand(100).get(), draws[0][0])
    # the module-wide generator is default_rng(seed): Philox4x32's stream
    cr.seed(s)
    np.testing.assert_array_equal(cr.rand(1000, dtype=np.float32).get(),
                                  cr.default_rng(s).random(1000, dtype=np.float32).get())
    cr.seed()  # fresh entropy
    assert cr.rand(3).shape == (3,)


@gpu
def test_choice_uniform_with_replacement(rng):
    cr.seed(int(rng.integers(2**32)))
    n, m = 37, 1 << 17
    x = cr.choice(n, m).get()
    assert x.dtype == np.int64 and x.min() >= 0 and x.max() < n
    counts = np.bincount(x, minlength=n)
    chi2 = ((counts - m / n) ** 2 / (m / n)).sum()
    assert chi2 < (n - 1) + 6 * np.sqrt(2 * (n - 1))


@gpu
@pytest.mark.parametrize("n,k", [(1, 1), (10, 10), (1000, 999), (100_000, 50), (5, 0)])
def test_choice_without_replacement_never_repeats(n, k):
    g = cr.default_rng(n + k)
    x = g.choice(n, k, replace=False).get()
    assert x.shape == (k,) and len(np.unique(x)) == k and (x.min() >= 0 and x.max() < n if k else True)
    if k == n:
        np.testing.assert_array_equal(np.sort(x), np.arange(n))
    assert g.permutation(n).get().tolist() != list(range(n)) or n < 3


@gpu
def test_choice_with_p_draws_its_frequencies(rng):
    n, m = 12, 1 << 18
    p = rng.random(n)
    p[[2, 7]] = 0  # never drawn
    p /= p.sum()
    for source in (p, list(p), cukit.to_device(p), cukit.to_device(p.astype(np.float32))):
        x = cr.default_rng(int(rng.integers(2**32))).choice(n, m, p=source).get()
        counts = np.bincount(x, minlength=n)
        assert counts[2] == counts[7] == 0
        want = np.asarray(source.get() if isinstance(source, cukit.Array) else source, np.float64) * m
        live = want > 0
        assert np.all(np.abs(counts[live] - want[live]) < 5 * np.sqrt(want[live]) + 1)


@gpu
def test_choice_without_replacement_with_p_is_numpys_sequential_draw(rng):
    """Without replacement each next index is drawn with probability proportional to p
    among those left: the first index's frequencies are p, and each index's frequency of
    being in a sample of two is p_i + sum_j p_j p_i / (1 - p_j)."""
    p = np.array([0.5, 0.25, 0.15, 0.1, 0.0])
    g = cr.default_rng(int(rng.integers(2**32)))
    trials = 4000
    samples = np.array([g.choice(5, 2, replace=False, p=p).get() for _ in range(trials)])
    assert (samples[:, 0] != samples[:, 1]).all() and (samples != 4).all()
    first = np.bincount(samples[:, 0], minlength=5) / trials
    inside = np.bincount(samples.ravel(), minlength=5) / trials
    want_in = np.array([p[i] + sum(p[j] * p[i] / (1 - p[j]) for j in range(5) if j != i)
                        for i in range(5)])
    tol = 5 * np.sqrt(0.25 / trials)
    assert np.all(np.abs(first - p) < tol) and np.all(np.abs(inside - want_in) < tol)
    theirs = np.random.default_rng(int(rng.integers(2**32)))
    t = np.array([theirs.choice(5, 2, replace=False, p=p) for _ in range(trials)])
    assert np.all(np.abs(np.bincount(t.ravel(), minlength=5) / trials - inside) < 2 * tol)
    x = g.choice(5, 4, replace=False, p=p).get()
    np.testing.assert_array_equal(np.sort(x), [0, 1, 2, 3])


@gpu
def test_choice_of_an_arrays_rows(rng):
    h = rng.standard_normal((9, 3, 2)).astype(np.float32)
    a = cukit.to_device(h)
    g = cr.default_rng(5)
    for size, replace, p in [((4, 2), True, None), (9, False, None), (None, True, None),
                             (5, True, rng.dirichlet(np.ones(9))), (3, False, rng.dirichlet(np.ones(9)))]:
        out = g.choice(a, size, replace=replace, p=p)
        want_shape = np.random.default_rng(0).choice(h, size, replace=replace, p=p).shape
        assert out.shape == want_shape and out.dtype == np.float32
        rows = out.get().reshape(-1, 3, 2)
        hits = [int(np.flatnonzero((h == r).all(axis=(1, 2)))[0]) for r in rows]
        if not replace:
            assert len(set(hits)) == len(hits)
    perm = g.choice(a, 9, replace=False).get()
    np.testing.assert_array_equal(np.sort(perm.ravel()), np.sort(h.ravel()))


def _numpy_error(call):
    try:
        call(np.random.default_rng(0))
    except Exception as e:  # noqa: BLE001 - the class and words are what is compared
        return type(e), str(e)
    raise AssertionError("numpy raised nothing")


CHOICE_ERRORS = [
    lambda g: g.choice(0, 3), lambda g: g.choice(-2, 3), lambda g: g.choice(5, 3, p=[[0.2] * 5]),
    lambda g: g.choice(5, 3, p=[0.5, 0.5]), lambda g: g.choice(3, 2, p=[0.5, 0.6, -0.1]),
    lambda g: g.choice(3, 2, p=[0.5, 0.6, 0.1]), lambda g: g.choice(3, 2, p=[np.nan, 0.5, 0.5]),
    lambda g: g.choice(3, 5, replace=False), lambda g: g.choice(3, 3, replace=False, p=[0.5, 0.5, 0]),
    lambda g: g.choice(5, -1),
]


@pytest.mark.parametrize("call", CHOICE_ERRORS, ids=[str(i) for i in range(len(CHOICE_ERRORS))])
def test_choice_raises_numpys_errors(call):
    exc, words = _numpy_error(call)
    g = cr.default_rng(1)
    before = g.bit_generator.state
    with pytest.raises(exc, match=re.escape(words.split(".")[0])):
        call(g)
    assert g.bit_generator.state["state"]["counter"].tolist() == before["state"]["counter"].tolist()


BAD_CHOICE = [
    (lambda g: g.choice(3.5, 2), TypeError, "a must be an int or a cukit.Array"),
    (lambda g: g.choice(np.arange(4), 2), TypeError, "copy host data to the device"),
    (lambda g: g.choice(cukit.to_device(np.float64(3.0)), 2), ValueError, "at least 1-dimensional"),
    (lambda g: g.choice(cukit.to_device(np.ones((4, 4)))[:, 1], 2), ValueError, "C-contiguous"),
    (lambda g: g.choice(4, 2, axis=1), ValueError, "axis 0 only"),
    (lambda g: g.choice(4, 2.5), TypeError, "size must be None, an int or a tuple"),
    (lambda g: cr.rand(2, dtype=np.complex64), TypeError, "Unsupported dtype"),
    (lambda g: cr.randint(5, 2), ValueError, "low >= high"),
]


@gpu
@pytest.mark.parametrize("call,exc,words", BAD_CHOICE, ids=[w for _, _, w in BAD_CHOICE])
def test_bad_legacy_input_is_named(call, exc, words):
    with pytest.raises(exc, match=words):
        call(cr.default_rng(1))


@gpu
def test_module_permutation_and_shuffle(rng):
    cr.seed(int(rng.integers(2**32)))
    np.testing.assert_array_equal(np.sort(cr.permutation(1000).get()), np.arange(1000))
    h = rng.standard_normal((50, 3))
    a = cukit.to_device(h)
    assert cr.shuffle(a) is None
    got = a.get()
    assert not np.array_equal(got, h)
    np.testing.assert_array_equal(np.sort(got[:, 0]), np.sort(h[:, 0]))
    order = [int(np.flatnonzero(h[:, 0] == r[0])[0]) for r in got]
    np.testing.assert_array_equal(got, h[order])  # whole rows moved
    p = cr.permutation(a).get()
    np.testing.assert_array_equal(np.sort(p[:, 1]), np.sort(h[:, 1]))


@gpu
def test_choice_on_a_stream():
    s = cukit.Stream()
    g = cr.default_rng(3)
    x = g.choice(100, 10, replace=False, stream=s)
    y = g.choice(100, 10, p=np.full(100, 0.01), stream=s)
    s.synchronize()
    assert len(set(x.get().tolist())) == 10 and y.get().max() < 100


@gpu
def test_choice_with_p_refuses_a_capture_and_reads_a_device_p_on_its_stream(rng):
    s = cukit.Stream()
    g = cr.default_rng(4)
    p = rng.dirichlet(np.ones(6))
    with pytest.raises(RuntimeError, match="cannot be captured into a graph"):
        with s.capture():
            g.choice(6, 3, p=p, stream=s)
    dp = cukit.to_device(p)
    cukit.synchronize()  # the upload ran on the legacy stream; s reads it next
    with s:
        x = g.choice(6, 1000, p=dp)  # the current stream
    s.synchronize()  # queued on s: the host waits for it before reading
    assert x.get().max() < 6


FIRST_DRAWS = r"""
import json, numpy as np, cukit, cukit.random as cr
key = int(np.random.default_rng().integers(0, 2**62))
out = []
for dtype in ("float64", "float64", "float32"):
    got = cr.Generator(cr.Philox(key=key)).random(1000, dtype=dtype).get()
    want = np.random.Generator(np.random.Philox(key=key)).random(1000, dtype=dtype)
    out.append([cukit.cache_info()["entries"], bool(np.array_equal(got, want))])
print(json.dumps(out))
"""


@gpu
def test_a_first_draw_compiles_its_own_kernel_only(tmp_path):
    """Each random kernel is compiled alone (with its Philox4x32 twin): in an empty
    cache the first draw adds one entry, the same draw none, another dtype one; the
    numbers are numpy's."""
    env = dict(os.environ, CUKIT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("CUKIT_CACHE", None)
    r = subprocess.run([sys.executable, "-c", FIRST_DRAWS], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1]) == [[1, True], [1, True], [2, True]]


def test_every_random_kernel_is_listed_for_warmup():
    names = cukit._cukit._random_kernels()
    source = cr._kernel_source()
    assert len(names) == len(set(names)) > 40
    for name in names:
        # each compiled alone: every kernel is guarded by its name (or its twin's)
        assert (f"CUKIT_WANT({name})" in source
                or f"CUKIT_WANT({name.removesuffix('_x32')})" in source), name
    with pytest.raises(ValueError, match="no random kernel 'nope'"):
        cukit._cukit._random_kernels("nope")
