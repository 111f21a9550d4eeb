"""Reductions and scans: every reduction x dtype x axis form against numpy, on contiguous,
transposed and strided views of fresh random data with NaN and infinity; empty and
size-1 axes; initial=, where=, out=, dtype=; dot, vdot, inner, norms, allclose,
array_equal; ReductionKernel in both forms; cumsum/cumprod and the scan kernels; the
errors. The kernels the GPU tests use are compiled up front on every core."""
import json
import math
import os
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import cukit
from conftest import HAVE_GPU, spread

gpu = pytest.mark.gpu
DTYPES = ["bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
KINDS = ["sum", "prod", "max", "min", "argmax", "argmin", "all", "any", "count_nonzero",
         "nansum", "nanmax", "nanmin", "mean", "var", "std", "ptp"]
AXES = [None, 0, 1, -1, (0, 2), (1, 2)]
PAIRS = [("float32", "float32"), ("float64", "float64"), ("int32", "int64"),
         ("float16", "float16"), ("complex64", "complex64"), ("float32", "float64")]
# relative rounding allowed in a float result, by the result's dtype (times 8 below)
RTOL = {"float16": 1e-2, "float32": 2e-5, "complex64": 2e-5, "float64": 1e-12,
        "complex128": 1e-12}


def skip_kind(kind, dtype):
    d = np.dtype(dtype)
    return (kind in ("argmax", "argmin") and d.kind == "c") or (kind == "ptp" and d.kind == "b")


def data(rng, dtype, shape, nan=False):
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.random(shape) > 0.5
    if d.kind in "iu":
        info = np.iinfo(d)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(d)
    if d.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(d)
    x = rng.standard_normal(shape).astype(d)
    if nan:
        flat = x.reshape(-1)
        idx = rng.choice(flat.size, 3, replace=False)
        flat[idx[0]], flat[idx[1]], flat[idx[2]] = np.nan, np.inf, -np.inf
    return x


def reference(kind, x, axis, keepdims=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(getattr(np, kind)(x, axis=axis, keepdims=keepdims))


def scale_of(kind, x, axis, keepdims=False):
    """The sum of |x| over each output's elements: bounds the rounding of a sum."""
    if x.dtype.kind == "b" or kind not in ("sum", "nansum", "mean", "var", "std"):
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = np.abs(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64))
        a = np.where(np.isfinite(a), a, 0)
        s = np.sum(a, axis=axis, keepdims=keepdims)
        if kind in ("mean", "var", "std"):
            n = max(1, x.size // max(1, np.asarray(s).size))
            s = s / n if kind == "mean" else (s / n) ** 2 if kind == "var" else s / n
        return np.asarray(s)


def check(got, want, scale=0.0, what=""):
    """got equals numpy's want: same shape and dtype, integers exactly, floats within the
    result dtype's rounding (relative, plus `scale` times it: the sum of |x|)."""
    got = got.get() if isinstance(got, cukit.Array) else np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    rtol = RTOL.get(want.dtype.name, 0.0) * 8
    if want.dtype.kind in "fc":
        g = got.astype(np.complex128)
        w = want.astype(np.complex128)
        same_nan = np.isnan(g) == np.isnan(w)
        assert same_nan.all(), (what, got, want)
        finite = np.isfinite(w)
        assert (g[~finite & ~np.isnan(w)] == w[~finite & ~np.isnan(w)]).all(), (what, got, want)
        err = np.abs(g - w)[finite]
        bound = (rtol * np.abs(w) + rtol * np.broadcast_to(scale, w.shape) + 1e-30)[finite]
        assert (err <= bound).all(), (what, got, want)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def warm(jobs):
    """Run the first call of each job on every core: each compiles its kernels once."""
    if not HAVE_GPU:
        return
    with ThreadPoolExecutor(16) as ex:
        for f in [ex.submit(j) for j in spread(jobs)]:
            try:
                f.result()
            except Exception:
                pass


@pytest.fixture(scope="module", autouse=True)
def compiled():
    if not HAVE_GPU:
        return
    jobs = []
    for a, b in PAIRS:
        x, y = cukit.to_device(np.ones(3, a)), cukit.to_device(np.ones(3, b))
        jobs += [lambda x=x, y=y: cukit.dot(x, y).get(), lambda x=x, y=y: cukit.vdot(x, y).get()]
        for o in (1, 2, np.inf, -np.inf):
            jobs.append(lambda x=x, o=o: cukit.linalg.norm(x, o).get())
    for dt in DTYPES:
        x = cukit.to_device(np.ones((2, 3), dt))
        for kind in KINDS:
            if not skip_kind(kind, dt):
                jobs.append(lambda x=x, kind=kind: getattr(cukit, kind)(x).get())
        jobs.append(lambda x=x: cukit.cumsum(x).get())
        jobs.append(lambda x=x: cukit.cumprod(x).get())
    warm(jobs)


# ------------------------------------------------------------------ numpy's reductions


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_reduction_axis_and_layout(rng, dtype):
    host = data(rng, dtype, (5, 7, 33))
    dev = cukit.to_device(host)
    layouts = [("contiguous", host, dev), ("transposed", host.T, dev.T),
               ("strided", host[:, ::2, 1:], dev[:, ::2, 1:])]
    for kind in KINDS:
        if skip_kind(kind, dtype):
            continue
        if kind == "prod" and np.dtype(dtype).kind in "fc":
            h = (1 + 0.01 * data(rng, dtype, (5, 7, 33))).astype(dtype)
            lay = [("contiguous", h, cukit.to_device(h))]
        else:
            lay = layouts
        for name, x, xd in lay:
            for axis in AXES:
                if kind in ("argmax", "argmin") and isinstance(axis, tuple):
                    continue
                keep = axis == 1
                want = reference(kind, x, axis, keep)
                f = getattr(cukit, kind)
                check(f(xd, axis=axis, keepdims=keep), want, scale_of(kind, x, axis, keep),
                      f"{kind} {name} axis={axis}")
        # the method form
        if kind not in ("count_nonzero", "nansum", "nanmax", "nanmin"):
            check(getattr(dev, kind)(axis=-1), reference(kind, host, -1),
                  scale_of(kind, host, -1), f"Array.{kind}")


@gpu
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nan_and_infinity_as_numpy(rng, dtype):
    host = data(rng, dtype, (6, 40), nan=True)
    dev = cukit.to_device(host)
    for kind in KINDS:
        if kind == "prod":  # under- and overflow depend on the order
            continue
        for axis in (None, 0, 1):
            want = reference(kind, host, axis)
            check(getattr(cukit, kind)(dev, axis=axis), want, scale_of(kind, host, axis),
                  f"{kind} axis={axis}")


@gpu
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
def test_large_and_unaligned_layouts(rng, dtype):
    """Splits folded by the last block, vector loads, a thread per output, short rows."""
    for shape, axes in [((3_000_017,), [None]), ((300, 5001), [None, 0, 1]),
                        ((6000, 3), [0, 1]), ((2, 2_000_000), [1])]:
        host = data(rng, dtype, shape)
        dev = cukit.to_device(host)
        views = [(host, dev), (host[..., 1:], dev[..., 1:])]
        for x, xd in views:
            for axis in axes:
                for kind in ("sum", "max", "argmin", "mean"):
                    check(getattr(cukit, kind)(xd, axis=axis), reference(kind, x, axis),
                          scale_of(kind, x, axis), f"{kind} {x.shape} axis={axis}")


@gpu
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "complex64", "int8",
                                   "float16"])
def test_columns_split_across_blocks(rng, dtype):
    """axis=0 of C-contiguous matrices: a thread per vector of columns where the rows are
    aligned (else a thread per column), the rows split across blocks and folded by the
    last block of each column group; keepdims, out=, views, NaN, argmax's ties, the same
    bits twice."""
    kinds = ["sum", "max", "argmax", "argmin", "mean", "var", "nanmax"]
    if np.dtype(dtype).kind == "c":
        kinds = ["sum", "mean", "var", "prod"]
    shapes = [(1, 64), (3, 5), (4097, 33), (10000, 7), (4097, 64), (300, 1024), (5, 64, 32)]
    for shape in shapes:
        host = data(rng, dtype, shape, nan=np.dtype(dtype).kind == "f" and shape[0] > 100)
        if np.dtype(dtype).kind in "iu":
            host = (host % 5).astype(dtype)  # ties for argmax/argmin
        dev = cukit.to_device(host)
        views = [(host, dev), (host[..., 4:], dev[..., 4:]), (host[..., 1:], dev[..., 1:])]
        for x, xd in views:
            if x.shape[-1] == 0:
                continue
            for kind in kinds:
                y, yd = x, xd
                if kind == "prod":  # near 1, so that the order cannot overflow
                    y = (1 + 0.001 * x).astype(dtype)
                    yd = cukit.to_device(y)
                want = reference(kind, y, 0)
                if dtype == "float16" and kind == "var":  # numpy's sums squares in float16
                    want = reference(kind, y.astype(np.float32), 0).astype(dtype)
                what = f"{kind} {y.shape} {y.strides} axis=0"
                got = getattr(cukit, kind)(yd, axis=0)
                check(got, want, scale_of(kind, y, 0), what)
                again = getattr(cukit, kind)(yd, axis=0).get()
                assert np.array_equal(got.get(), again, equal_nan=True), what
            keep = reference("sum", x, 0, True)
            check(cukit.sum(xd, axis=0, keepdims=True), keep, scale_of("sum", x, 0, True))
            out = cukit.to_device(np.full(keep.shape[1:], 77, keep.dtype))
            assert cukit.sum(xd, axis=0, out=out) is out
            check(out, keep[0], scale_of("sum", x, 0))
            if dtype != "complex64":
                iout = cukit.to_device(np.full((1,) + x.shape[1:], -1, np.int64))
                assert cukit.argmax(xd, axis=0, out=iout, keepdims=True) is iout
                check(iout, reference("argmax", x, 0, True))


@gpu
def test_large_column_reduction(rng):
    """A wide matrix's axis=0 split across blocks; a long sum whose last block folds its
    one output's partials with the whole block."""
    host = rng.standard_normal((2048, 2048)).astype(np.float32)
    dev = cukit.to_device(host)
    check(cukit.sum(dev, axis=0), np.sum(host, axis=0), scale_of("sum", host, 0))
    check(cukit.argmax(dev, axis=0), np.argmax(host, axis=0))
    flat = rng.standard_normal(4_000_000).astype(np.float32)
    fd = cukit.to_device(flat)
    check(cukit.sum(fd), np.sum(flat), scale_of("sum", flat, None))
    check(cukit.max(fd), np.max(flat))


STREAMS_SCRIPT = r"""
import sys
import numpy as np
import cukit
rng = np.random.default_rng(int(sys.argv[1]))
# two streams, each with reductions whose blocks fold through the last-block counter:
# a full sum and max (one counter), argmax, a float64 sum, columns (a counter per column
# group), issued interleaved so that both streams' work is queued at once
cases = []
streams = [cukit.Stream(), cukit.Stream()]
for rep in range(2):
    for k, s in enumerate(streams):
        flat = rng.standard_normal(100_003 + 1000 * k).astype(np.float32)
        flat[rng.integers(0, flat.size)] = np.nan if rep else flat[0]
        mat = rng.standard_normal((600, 256 + 4 * k)).astype(np.float32)
        f64 = rng.standard_normal(60_001)
        fd, md, d64 = (cukit.to_device(a, stream=s) for a in (flat, mat, f64))
        cases.append((cukit.sum(fd, stream=s), np.sum(flat.astype(np.float64)), "sum"))
        cases.append((cukit.max(fd, stream=s), np.max(flat), "max"))
        cases.append((cukit.argmax(fd, stream=s), np.argmax(flat), "argmax"))
        cases.append((cukit.sum(d64, stream=s), np.sum(f64), "sum64"))
        cases.append((cukit.sum(md, axis=0, stream=s), mat.astype(np.float64).sum(0), "axis0"))
        cases.append((cukit.sum(md[:, 1:], axis=0, stream=s), mat[:, 1:].astype(np.float64).sum(0), "axis0 unaligned"))
for s in streams:
    s.synchronize()
for got, want, what in cases:
    g = got.get()
    ok = np.allclose(g, want, rtol=1e-5, atol=1e-3, equal_nan=True)
    print(what, "ok" if ok else f"BAD {g!r} {want!r}")
"""


@gpu
@pytest.mark.parametrize("defer", ["0", "1"])
def test_reductions_on_two_streams(rng, defer):
    """Reductions queued on two cukit.Streams at once, each with the last-block fold (its
    counter and partials in scratch ordered on its own stream), are each right; with the
    emulator deferring each stream's work to its synchronize too."""
    if defer == "1" and cukit.backend() != "emulator":
        pytest.skip("deferred execution is the emulator's")
    env = dict(os.environ, CUKIT_EMULATOR_DEFER=defer)
    out = subprocess.run([sys.executable, "-c", STREAMS_SCRIPT, str(rng.integers(1 << 30))],
                         capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert sum(line.endswith(" ok") for line in lines) == 24, out.stdout


KEPT_SCRIPT = r"""
import sys
import numpy as np
import cukit
rng = np.random.default_rng(int(sys.argv[1]))
KEPT = 64 * 1024
flat = rng.standard_normal(40_003).astype(np.float32)
wide = rng.standard_normal((256, 1024)).astype(np.float32)  # 8 counters (column groups)
thin = rng.standard_normal((2049, 33)).astype(np.float32)  # one counter, many partials
rows = rng.standard_normal((3, 40_000)).astype(np.float32)  # one counter, 3 outputs' partials
f64 = rng.standard_normal(20_001)
dev = {k: cukit.to_device(v) for k, v in dict(flat=flat, wide=wide, thin=thin, f64=f64,
                                               rows=rows).items()}
want = {"sum": flat.astype(np.float64).sum(), "max": flat.max(), "argmax": flat.argmax(),
        "wide": wide.astype(np.float64).sum(0), "thin": thin.astype(np.float64).sum(0),
        "thin max": thin.max(0), "f64": f64.sum(), "rows": rows.astype(np.float64).sum(1)}
cukit.synchronize()


def run(s):
    # layouts whose counters and partials fall at different places of the scratch, in
    # turn on one stream: each launch must find its counters at zero (where a layout's
    # partials pass 56 KiB, as columns' do on a big GPU, the stream's scratch grows)
    return {"sum": cukit.sum(dev["flat"], stream=s), "wide": cukit.sum(dev["wide"], axis=0, stream=s),
            "rows": cukit.sum(dev["rows"], axis=1, stream=s),
            "max": cukit.max(dev["flat"], stream=s), "thin": cukit.sum(dev["thin"], axis=0, stream=s),
            "argmax": cukit.argmax(dev["flat"], stream=s), "f64": cukit.sum(dev["f64"], stream=s),
            "thin max": cukit.max(dev["thin"], axis=0, stream=s)}


def check(got, what):
    for k, v in got.items():
        g = v.get()
        ok = np.array_equal(g, want[k]) if k in ("max", "argmax", "thin max") else \
            np.allclose(g, want[k], rtol=1e-5, atol=1e-3)
        print(what, k, "ok" if ok else f"BAD {g!r} {want[k]!r}")


base = cukit.memory_info()["stream_scratch"]
for rep in range(2):
    check(run(None), f"legacy {rep}")
kept = cukit.memory_info()["stream_scratch"] - base
print("legacy kept", kept)
# more streams than keep scratch (32 a device): those past it allocate their own
streams = [cukit.Stream() for _ in range(34)]
results = [(run(s) if i in (0, 1, 33) else {"sum": cukit.sum(dev["flat"], stream=s)}, i)
           for i, s in enumerate(streams)]
print("streams kept", cukit.memory_info()["stream_scratch"])
for s in streams:
    s.synchronize()
for got, i in results:
    check(got, f"stream {i}")
# a stream made where a dropped one was: its own id, its own scratch or none, never
# the dropped one's while that one's work may run
del streams[5:]
fresh = cukit.Stream()
got = run(fresh)
fresh.synchronize()
check(got, "fresh")
# a capture on a stream with scratch of its own allocates the launch's own: replays
# interleaved with eager reductions on the same stream stay right
s = streams[0]
out = cukit.empty((), np.float32)
outw = cukit.empty(1024, np.float32)
with s.capture() as g:
    cukit.sum(dev["flat"], stream=s, out=out)
    cukit.sum(dev["wide"], axis=0, stream=s, out=outw)
for rep in range(2):
    g.launch(s)
    got = run(s)
    g.launch(s)
    s.synchronize()
    check(got, f"eager {rep}")
    check({"sum": out, "wide": outw}, f"replay {rep}")
print("end kept", cukit.memory_info()["stream_scratch"])
"""


@gpu
def test_scratch_that_streams_keep(rng):
    """A reduction split across blocks takes its counters and partials from scratch its
    stream keeps (from 64 KiB, up to 32 streams a device). Layouts in turn on one stream
    find their counters at zero; streams past the 32 allocate their own; a capture takes
    the launch's own, and its replays interleave with eager reductions on the stream."""
    out = subprocess.run([sys.executable, "-c", KEPT_SCRIPT, str(rng.integers(1 << 30))],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    bad = [line for line in lines if "BAD" in line]
    assert not bad, bad[:5]
    assert sum(line.endswith(" ok") for line in lines) == 8 * (2 + 3 + 1 + 2) + 31 + 2 * 2, out.stdout
    info = {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in lines if " kept " in line}
    # each stream's from 64 KiB, grown to a power of two where a layout's partials need it
    # (the columns' on a big GPU); 32 streams a device keep scratch: the legacy stream,
    # streams 0 and 1 (every layout) and 29 more (the full sum's 64 KiB)
    legacy = info["legacy kept"]
    assert legacy >= 64 * 1024 and legacy & (legacy - 1) == 0, out.stdout
    assert info["streams kept"] == 3 * legacy + 29 * 64 * 1024 == info["end kept"], out.stdout


@pytest.mark.parametrize("blocks", [4, 5, 6, 8])
def test_split_grids_fill_whole_waves(blocks):
    """A split reduction's blocks all do the same work, so they run in waves of the
    blocks resident at once (132 SMs x `blocks`): a grid a few blocks past a wave would
    run those few alone. Each plan's grid fills its waves, the last one included, to
    90%; the axis-0 sum of 8192 x 8192 (64 blocks a split) is one wave of 640 on 660
    slots, not 704."""
    plan = cukit._cukit._reduce_plan
    slots = 132 * blocks
    cases = [  # (inputs, axis, out)
        ([((8192, 8192), (32768, 4), 4, 1 << 20)], 0, ((8192,), (4,), 4, 1 << 28)),
        ([((4096, 65536), (262144, 4), 4, 1 << 20)], 0, ((65536,), (4,), 4, 1 << 28)),
        ([((20000, 999), (3996, 4), 4, 1 << 20)], 0, ((999,), (4,), 4, 1 << 28)),  # thread a column
        ([((100, 1 << 20), (4 << 20, 4), 4, 1 << 20)], 1, ((100,), (4,), 4, 1 << 28)),
        ([((300, 1 << 18), (1 << 20, 4), 4, 1 << 20)], 1, ((300,), (4,), 4, 1 << 28)),
        ([((1 << 26,), (4,), 4, 1 << 20)], None, ((), (), 4, 1 << 28)),
    ]
    for inputs, axis, out in cases:
        p = plan(inputs, axis, out, False, 4, 132, blocks)
        n = p["gx"] * p["gy"]
        assert p["splits"] * p["chunk"] >= p["nred"], p
        waves = -(-n // slots)
        # every case allows more splits than a wave needs: its waves are 90% full, the
        # last one included (at most one wave, or one past it by a few blocks, fails)
        assert n / (waves * slots) >= 0.9, (blocks, n, slots, p)
    p = plan(*cases[0], False, 4, 132, 5)
    assert (p["gx"], p["gy"]) == (64, 10), p


@gpu
def test_one_launch_folds_in_the_last_block(rng):
    """A reduction that splits across blocks is one kernel: the plans of a full reduction
    (the full kernel, one counter, the whole block on the one output's partials) and of
    columns (a counter per group of 32 column vectors); results equal numpy's, the same
    bits twice (the fold's order is fixed), sizes crossing many blocks."""
    p = cukit._cukit._reduce_plan([((1 << 22,), (4,), 4, 1 << 20)], None, ((), (), 4, 1 << 28))
    assert p["fn"] == 6 and p["splits"] > 1 and p["ncnt"] == 1 and p["fblock"] == 1, p
    p = cukit._cukit._reduce_plan([((8192, 8192), (32768, 4), 4, 1 << 20)], 0,
                                  ((8192,), (4,), 4, 1 << 28))
    assert p["fn"] == 5 and p["gx"] == 64 and p["gy"] == p["splits"] > 1, p
    assert p["ncnt"] == p["gx"] and p["chunk"] >= 128, p
    for n in (16_385, 100_003):
        x = rng.standard_normal(n).astype(np.float32)
        xd = cukit.to_device(x)
        for kind in ("sum", "max", "argmax", "nanmin"):
            got = getattr(cukit, kind)(xd)
            check(got, reference(kind, x, None), scale_of(kind, x, None), f"{kind} {n}")
            assert np.array_equal(got.get(), getattr(cukit, kind)(xd).get()), f"{kind} {n}"
    x = rng.standard_normal((500, 3, 96))
    xd = cukit.to_device(x)
    for axis in (0, (0, 1)):
        got = cukit.sum(xd, axis=axis)
        check(got, np.sum(x, axis=axis), scale_of("sum", x, axis), f"axis={axis}")
        assert np.array_equal(got.get(), cukit.sum(xd, axis=axis).get())


@gpu
def test_empty_and_size_one_axes():
    for shape in [(0,), (3, 0), (0, 3), (1, 1), (1, 5), (4, 1)]:
        host = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
        dev = cukit.to_device(host)
        for axis in [None, 0, -1]:
            for kind in ("sum", "prod", "mean", "all", "any", "count_nonzero", "var"):
                check(getattr(cukit, kind)(dev, axis=axis), reference(kind, host, axis),
                      scale_of(kind, host, axis), f"{kind} {shape} {axis}")
            for kind in ("max", "min", "argmax", "nanmax", "ptp"):
                try:
                    want = reference(kind, host, axis)
                except ValueError as e:
                    with pytest.raises(ValueError, match="zero-size array|empty sequence"):
                        getattr(cukit, kind)(dev, axis=axis)
                    assert "identity" in str(e) or "empty" in str(e)
                    continue
                check(getattr(cukit, kind)(dev, axis=axis), want, 0.0, f"{kind} {shape}")


@gpu
def test_initial_where_out_dtype(rng):
    host = rng.standard_normal((8, 50)).astype(np.float32)
    dev = cukit.to_device(host)
    mask = rng.random((8, 50)) > 0.3
    mdev = cukit.to_device(mask)
    for kind, kw in [("sum", {}), ("prod", {}), ("max", {"initial": -10.0}),
                     ("min", {"initial": 10.0}), ("all", {}), ("any", {})]:
        for axis in (None, 1):
            want = np.asarray(getattr(np, kind)(host, axis=axis, where=mask, **kw))
            check(getattr(cukit, kind)(dev, axis=axis, where=mdev, **kw), want,
                  scale_of(kind, host, axis), f"{kind} where= axis={axis}")
    check(cukit.sum(dev, initial=5.0), np.sum(host, initial=5.0), scale_of("sum", host, None))
    check(cukit.max(dev, axis=0, initial=100.0), np.max(host, axis=0, initial=100.0))
    empty = cukit.to_device(np.zeros((0, 4), np.float32))
    check(cukit.max(empty, axis=0, initial=-1.0), np.max(np.zeros((0, 4), np.float32), axis=0,
                                                          initial=-1.0))
    ints = rng.integers(-50, 50, (6, 9)).astype(np.int32)
    idev = cukit.to_device(ints)
    check(cukit.sum(idev, axis=0, dtype=np.int8), np.sum(ints, axis=0, dtype=np.int8))
    check(cukit.mean(idev, axis=1, dtype=np.float32), np.mean(ints, axis=1, dtype=np.float32),
          scale_of("mean", ints, 1))
    out = cukit.to_device(np.full(9, np.nan, np.float64))
    r = cukit.sum(idev, axis=0, out=out)
    assert r is out
    check(out, np.sum(ints, axis=0).astype(np.float64))
    out2 = cukit.to_device(np.full((6, 1), -1, np.int64))
    cukit.argmax(idev, axis=1, out=out2, keepdims=True)
    check(out2, np.argmax(ints, axis=1, keepdims=True))
    check(cukit.var(dev, axis=1, ddof=1), np.var(host, axis=1, ddof=1), scale_of("var", host, 1))
    check(cukit.std(dev, ddof=2), np.std(host, ddof=2), scale_of("std", host, None))


@gpu
@pytest.mark.parametrize("pair", PAIRS)
def test_dot_vdot_inner_norm(rng, pair):
    a = data(rng, pair[0], (1000,))
    b = data(rng, pair[1], (1000,))
    m = data(rng, pair[0], (37, 1000))
    ad, bd, md = cukit.to_device(a), cukit.to_device(b), cukit.to_device(m)
    sc = float(np.abs(a.astype(np.complex128) * b).sum())
    check(cukit.dot(ad, bd), np.dot(a, b), sc, "dot 1-D")
    check(cukit.inner(ad, bd), np.inner(a, b), sc, "inner")
    check(cukit.vdot(ad, bd), np.vdot(a, b), sc, "vdot")
    check(cukit.dot(md, bd), np.dot(m, b), sc * 10, "dot 2-D . 1-D")
    check(md.dot(bd), np.dot(m, b), sc * 10, "Array.dot")
    if np.dtype(pair[0]).kind != "b":
        for ord_ in (None, 1, 2, np.inf, -np.inf):
            want = np.asarray(np.linalg.norm(a, ord_))
            got = cukit.linalg.norm(ad, ord_)
            check(got, want, 0.0, f"norm {ord_}")
        check(cukit.linalg.norm(md, axis=1), np.linalg.norm(m, axis=1))


@gpu
def test_allclose_and_array_equal(rng):
    a = rng.standard_normal(1000)
    b = a + 1e-9
    ad, bd = cukit.to_device(a), cukit.to_device(b)
    assert cukit.allclose(ad, bd) is True
    assert cukit.allclose(ad, cukit.to_device(a + 1e-3)) is False
    n = a.copy()
    n[3] = np.nan
    nd = cukit.to_device(n)
    assert cukit.allclose(nd, nd) is False
    assert cukit.allclose(nd, nd, equal_nan=True) is True
    inf = cukit.to_device(np.array([np.inf, 1.0]))
    assert cukit.allclose(inf, inf) is True
    assert cukit.array_equal(ad, cukit.to_device(a.copy())) is True
    assert cukit.array_equal(ad, bd) is False
    assert cukit.array_equal(ad, cukit.to_device(a[:10])) is False
    assert cukit.array_equal(nd, nd) is False
    assert cukit.array_equal(nd, nd, equal_nan=True) is True


@gpu
def test_reduction_errors(rng):
    dev = cukit.to_device(rng.standard_normal((3, 4)))
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds"):
        cukit.sum(dev, axis=2)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        cukit.sum(dev, axis=(0, -2))
    with pytest.raises(TypeError, match="numpy array in host memory.*to_device"):
        cukit.sum(np.ones(3))
    with pytest.raises(TypeError, match="must be a cukit.Array"):
        cukit.max([1, 2])
    with pytest.raises(TypeError, match="does not support complex"):
        cukit.argmax(cukit.to_device(np.ones(3, np.complex64)))
    with pytest.raises(ValueError, match="shapes not aligned"):  # matrices: cukit.matmul's check
        cukit.dot(dev, dev)
    with pytest.raises(ValueError, match="not aligned"):
        cukit.dot(dev, cukit.to_device(np.ones(3)))
    with pytest.raises(TypeError, match="where= must be a bool array"):
        cukit.sum(dev, where=dev)
    with pytest.raises(TypeError, match="unexpected keyword argument 'dtype'"):
        cukit.max(dev, dtype=np.float32)
    with pytest.raises(ValueError, match="out= has shape"):
        cukit.sum(dev, axis=0, out=cukit.to_device(np.zeros(3)))
    with pytest.raises(ValueError, match="invalid norm order 'fro' for vectors"):
        cukit.linalg.norm(cukit.to_device(np.ones(3)), ord="fro")


# ------------------------------------------------------------------ ReductionKernel


@gpu
def test_reduction_kernel_cupy_form(rng):
    l2 = cukit.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    for dtype in ("float32", "float64"):
        host = rng.standard_normal((40, 300)).astype(dtype)
        dev = cukit.to_device(host)
        check(l2(dev), np.asarray(np.sqrt((host.astype(np.float64) ** 2).sum())).astype(dtype))
        check(l2(dev, axis=0), np.sqrt((host.astype(np.float64) ** 2).sum(0)).astype(dtype))
        check(l2(dev.T, axis=1, keepdims=True),
              np.sqrt((host.T.astype(np.float64) ** 2).sum(1, keepdims=True)).astype(dtype))
    # two inputs, broadcasting, a scalar, a typed output and reduce type
    wsum = cukit.ReductionKernel("float32 x, float32 w, float32 s", "float64 y", "x * w * s",
                                 "a + b", "y = a", "0", "wsum", reduce_type="float64")
    x = rng.standard_normal((20, 64)).astype(np.float32)
    w = rng.standard_normal(64).astype(np.float32)
    got = wsum(cukit.to_device(x), cukit.to_device(w), 2.0, axis=1)
    prod = (x * w * np.float32(2)).astype(np.float64)  # map_expr is float32 code (as CuPy's)
    check(got, prod.sum(1), np.abs(prod).sum(1))
    mx = cukit.ReductionKernel("T x", "T y", "x", "max(a, b)", "y = a", "-1e30", "mymax")
    check(mx(cukit.to_device(x)), np.asarray(x.max()))


@gpu
def test_reduction_kernel_pycuda_form(rng):
    dot = cukit.ReductionKernel(np.float32, neutral="0", reduce_expr="a+b",
                                map_expr="x[i]*y[i]", arguments="const float *x, const float *y")
    x = rng.standard_normal(100_001).astype(np.float32)
    y = rng.standard_normal(100_001).astype(np.float32)
    got = dot(cukit.to_device(x), cukit.to_device(y))
    assert got.shape == () and got.dtype == np.float32
    np.testing.assert_allclose(got.get(), np.dot(x.astype(np.float64), y), rtol=1e-4, atol=1e-2)
    total = cukit.ReductionKernel(np.int64, "0", "a+b", arguments="const long long *in")
    ints = rng.integers(-1000, 1000, 5000)
    assert int(total(cukit.to_device(ints)).get()) == int(ints.sum())
    scaled = cukit.ReductionKernel(np.float64, "0", "a+b", "s*v[i]",
                                   "double s, const double *v")
    v = rng.standard_normal(777)
    # a sum that cancels to near 0: in any order within 777 eps of sum |3 v|
    np.testing.assert_allclose(scaled(3.0, cukit.to_device(v)).get(), 3 * v.sum(), rtol=1e-12,
                               atol=1e-12 * np.abs(3 * v).sum())


@gpu
def test_reduction_kernel_compile_errors_point_into_the_expression():
    k = cukit.ReductionKernel("T x", "T y", "x * undefined_name", "a + b", "y = a", "0", "bad")
    with pytest.raises(cukit.CompileError, match=r"map_expr:1:\d+: error.*undefined_name"):
        k(cukit.to_device(np.ones(10, np.float32)))
    k = cukit.ReductionKernel(np.float32, "0", "a +* ", "x[i]", "const float *x")
    with pytest.raises(cukit.CompileError, match=r"reduce_expr:1:\d+: error"):
        k(cukit.to_device(np.ones(10, np.float32)))


def test_reduction_kernel_bad_declarations():
    with pytest.raises(ValueError, match="cannot read the parameters"):
        cukit.ReductionKernel("x", "T y", "x", "a + b", "y = a", "0")
    with pytest.raises(ValueError, match="one output parameter"):
        cukit.ReductionKernel("T x", "T y, T z", "x", "a + b", "y = a", "0")
    with pytest.raises(ValueError, match="unknown type"):
        cukit.ReductionKernel(np.float32, "0", "a+b", "x[i]", "floot *x")
    with pytest.raises(ValueError, match="needs neutral"):
        cukit.ExclusiveScanKernel(np.float32, "a+b", None)


@gpu
def test_kernel_parameter_lists_share_one_table_of_c_type_names(rng):
    """ElementwiseKernel and ReductionKernel read C type names from one table: plain
    char is int8 in both, and ptrdiff_t, "long int" and "unsigned long int" work in both."""
    x = rng.integers(-128, 128, 3001, dtype=np.int8)
    n = rng.integers(-2**40, 2**40, 3001, dtype=np.int64)
    u = rng.integers(0, 2**40, 3001, dtype=np.uint64)
    dx, dn, du = cukit.to_device(x), cukit.to_device(n), cukit.to_device(u)
    ek = cukit.ElementwiseKernel("char x, long int n, unsigned long int u", "ptrdiff_t y",
                                 "y = x + n - (ptrdiff_t)(u >> 3)", "mixed")
    y = ek(dx, dn, du).get()
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, x.astype(np.int64) + n - (u >> 3).astype(np.int64))
    rk = cukit.ReductionKernel("char x, ptrdiff_t n", "long int y", "x * n", "a + b", "y = a",
                               "0", "dot")
    got = rk(dx, dn).get()
    assert got.dtype == np.int64 and int(got) == int((x.astype(np.int64) * n).sum())
    with pytest.raises(TypeError, match="declared int8 but the array is uint8"):
        ek(cukit.to_device(x.astype(np.uint8)), dn, du)  # char is int8, not any 1-byte type


def test_reduction_kernel_argument_limit():
    """PyCUDA's form appends the output after the arguments: more than 8 is refused."""
    args = ", ".join(f"const float *x{k}" for k in range(9))
    with pytest.raises(ValueError, match="ReductionKernel takes at most 8 inputs"):
        cukit.ReductionKernel(np.float32, "0", "a+b", "x0[i]", args)
    ok = ", ".join(f"const float *x{k}" for k in range(8))
    cukit.ReductionKernel(np.float32, "0", "a+b", "x0[i]", ok)


def test_generated_reduction_sources_compile():
    """Without a device: the CUDA C of each kind compiles with NVRTC."""
    cases = [("sum", "float16"), ("argmax", "float32"), ("nanmin", "complex64"),
             ("count_nonzero", "bool"), ("mean", "int32"), ("prod", "uint8")]
    for name, dt in cases:
        cukit.Program(cukit._cukit._reduce_source(name, dt), name=f"{name}.cu").ptx(arch="sm_90")
    src = cukit._cukit._reduce_source("sum", "float32", None, True, True)
    cukit.Program(src, name="sum_where.cu").ptx(arch="sm_90")
    cukit.Program(cukit._cukit._reduce_source("var", "int16", "float64"), name="v.cu").ptx(
        arch="sm_90")
    cukit.Program(cukit.ExclusiveScanKernel(np.float64, "a+b", 0).source, name="s.cu").ptx(
        arch="sm_90")
    for name in ("var", "std", "dot", "vdot"):  # two operands: the second's dtype is needed
        with pytest.raises(ValueError, match="second operand"):
            cukit._cukit._reduce_source(name, "bool")
    with pytest.raises(ValueError, match="no reduction kernel ptp"):
        cukit._cukit._reduce_source("ptp", "float32")


# ------------------------------------------------------------------ scans


@gpu
@pytest.mark.parametrize("dtype", ["int32", "float64", "float32", "uint8", "float16"])
def test_cumsum_cumprod(rng, dtype):
    flt = np.dtype(dtype).kind == "f"
    sizes = (1, 5, 2048, 2049, 100_003, 3_000_001) if dtype != "float16" else (1, 5, 2049)
    for n in sizes:
        host = data(rng, dtype, (n,))
        sc = np.cumsum(np.abs(host.astype(np.float64)))
        check(cukit.cumsum(cukit.to_device(host)), np.cumsum(host), sc, f"cumsum {n}")
    host = data(rng, dtype, (4, 33, 70))
    dev = cukit.to_device(host)
    for axis in (None, 0, 1, 2, -1):
        for x, xd in ((host, dev), (host.transpose(2, 0, 1), dev.transpose(2, 0, 1))):
            sc = np.cumsum(np.abs(x.astype(np.float64)), axis=axis)
            check(cukit.cumsum(xd, axis=axis), np.cumsum(x, axis=axis), sc, f"cumsum axis={axis}")
    small = (1 + 0.01 * data(rng, "float64", (6, 40))).astype(dtype) if flt else \
        (data(rng, dtype, (6, 40)) % 3).astype(dtype)
    for axis in (None, 0, 1):
        check(cukit.cumprod(cukit.to_device(small), axis=axis), np.cumprod(small, axis=axis),
              0.0, f"cumprod {axis}")
    check(cukit.to_device(small).cumsum(axis=1), np.cumsum(small, axis=1),
          np.cumsum(np.abs(small.astype(np.float64)), axis=1))


@gpu
def test_scan_kernels(rng):
    x = rng.integers(-100, 100, 1_000_003).astype(np.int32)
    inc = cukit.InclusiveScanKernel(np.int32, "a+b")
    d = cukit.to_device(x)
    assert inc(d) is d  # in place
    np.testing.assert_array_equal(d.get(), np.cumsum(x).astype(np.int32))
    exc = cukit.ExclusiveScanKernel(np.int32, "a+b", 0)
    out = cukit.to_device(np.full(x.size, -7, np.int32))
    exc(cukit.to_device(x), out)
    want = np.concatenate([[0], np.cumsum(x)[:-1]]).astype(np.int32)
    np.testing.assert_array_equal(out.get(), want)
    mx = cukit.InclusiveScanKernel(np.float32, "max(a, b)")
    f = rng.standard_normal(70_000).astype(np.float32) - 5
    fd = cukit.to_device(f)
    mx(fd, output_ary=fd)
    np.testing.assert_array_equal(fd.get(), np.maximum.accumulate(f))
    bad = cukit.InclusiveScanKernel(np.float32, "a + (b")
    with pytest.raises(cukit.CompileError, match=r"scan_expr:1:\d+: error"):
        bad(cukit.to_device(f))
    with pytest.raises(TypeError, match="must be float32"):
        mx(cukit.to_device(x))


SCAN_KEPT_SCRIPT = r"""
import sys
import numpy as np
import cukit
rng = np.random.default_rng(int(sys.argv[1]))
s = cukit.Stream()
keep = cukit._cukit._stream_kept
mx = cukit.InclusiveScanKernel(np.int32, "max(a, b)")
xs = [rng.integers(-50, 50, n).astype(t) for n, t in
      ((70_001, np.float32), (3, np.float32), (200_000, np.int32), (50_000, np.float64),
       (5 * 8192 + 1, np.float32), (9, np.int32))]
ds = [cukit.to_device(x) for x in xs]
cukit.synchronize()  # copied on the legacy stream, read on s


def check(got, want, what):
    s.synchronize()
    print(what, "ok" if np.array_equal(got.get(), want) else "BAD")


for rep in range(8):
    if rep == 4:  # the last epoch the words hold is handed out two launches from now
        keep(1, 16, s, epoch=(1 << 30) - 3)
    for x, d in zip(xs, ds):
        t = np.int32 if x.dtype == np.int32 else x.dtype
        check(cukit.cumsum(d, dtype=t, stream=s), np.cumsum(x, dtype=t), f"{rep} {x.size}")
    m = cukit.to_device(xs[2])
    cukit.synchronize()
    mx(m, stream=s)
    check(m, np.maximum.accumulate(xs[2]), f"{rep} max")
before = cukit.memory_info()["stream_scratch"]
p, epoch = keep(1, (64 << 10) + 1, s)  # grown: a new buffer, zeroed, epochs from 1
print("grown", int(bool(p)), epoch, cukit.memory_info()["stream_scratch"] - before)
check(cukit.cumsum(ds[0], stream=s), np.cumsum(xs[0]), "after growing")
print("most", int(bool(keep(1, 4 << 20, s)[0])), keep(1, (4 << 20) + 1, s))
try:
    keep(1, 16, s, epoch=0)
except ValueError as e:
    print("back", e)
cukit.trim_pool()  # gives every stream's kept scratch back, the device idle first
print("trimmed", cukit.memory_info()["stream_scratch"])
for x, d in zip(xs, ds):  # kept again, from epoch 1 on fresh words
    check(cukit.cumsum(d, stream=s), np.cumsum(x), f"after trim {x.size}")
print("kept again", int(cukit.memory_info()["stream_scratch"] >= 64 << 10))
"""


@gpu
def test_scans_find_their_streams_kept_words_unwritten(rng):
    """A 1-D scan of accumulators up to 4 bytes keeps its tiles' words in scratch its
    stream keeps, each launch a new epoch, so words an earlier launch wrote read as
    unwritten: scans of other sizes, types and operators in turn on one stream, a
    ScanKernel among them, stay right, also across the epochs' wrap (the words zeroed
    again); the scratch grows for a longer scan, and trim_pool gives it back. In a
    process of its own: a stream
    keeps scratch only while a device's 32 slots last."""
    out = subprocess.run([sys.executable, "-c", SCAN_KEPT_SCRIPT, str(rng.integers(1 << 30))],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert sum(line.endswith(" ok") for line in lines) == 8 * 7 + 1 + 6, out.stdout
    assert "BAD" not in out.stdout, out.stdout
    assert f"grown 1 1 {64 << 10}" in lines, out.stdout  # 64 KiB to 128 KiB
    assert "most 1 (0, 0)" in lines, out.stdout  # 4 MiB at most
    assert "back _stream_kept: epoch= may only move forward" in out.stdout, out.stdout
    assert "trimmed 0" in lines and "kept again 1" in lines, out.stdout

# 1-D tiles hold 8192 elements for accumulators up to 4 bytes, 2048 above (the default
# build's): sizes at both edges, and one of more than 32 tiles of either (the look-back
# steps back 32 tiles at a time)
TILE_SIZES = (1, 2, 2047, 2048, 2049, 8191, 8192, 8193, 33 * 8192 + 3)


@gpu
@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "float32", "float64", "complex64",
                                   "complex128"])
def test_cumsum_at_tile_edges(rng, dtype):
    """Whole aligned arrays (16-byte vectors), a view one element in (unaligned) and a
    strided one (element by element), each into a fresh array and into a strided out=."""
    for n in TILE_SIZES:
        host = data(rng, dtype, (2 * n + 1,))
        dev = cukit.to_device(host)
        for x, xd in ((host[:n], dev[:n]), (host[1:n + 1], dev[1:n + 1]), (host[:2 * n:2], dev[:2 * n:2])):
            want = np.cumsum(x)
            sc = np.cumsum(np.abs(x).astype(np.float64))
            check(cukit.cumsum(xd), want, sc, f"cumsum {dtype} {n}")
            out = cukit.to_device(data(rng, want.dtype, (2 * n,)))[::2]
            assert cukit.cumsum(xd, out=out) is out
            check(out, want, sc, f"cumsum {dtype} {n} out=")


@gpu
@pytest.mark.parametrize("dtype", ["int8", "uint8", "float16", "int32", "float64"])
def test_scan_kernels_at_tile_edges(rng, dtype):
    """Operators that do not commute ("b" keeps the later operand, "a" the earlier): a
    look-back that folds tiles out of order gives wrong values. Accumulators of 1, 2 and
    4 bytes publish a tile's flag and value in one word, wider ones apart."""
    sums = ("a + b",) if dtype != "float16" else ()  # float16 sums depend on the order
    kernels = [(cukit.InclusiveScanKernel(dtype, e), e) for e in ("b", "a", "max(a, b)") + sums]
    kernels += [(cukit.ExclusiveScanKernel(dtype, e, 0), "x" + e) for e in ("b",) + sums]
    for n in TILE_SIZES:
        x = data(rng, dtype, (n,))
        wants = {"b": x, "a": np.full(n, x[0]), "max(a, b)": np.maximum.accumulate(x),
                 "a + b": np.cumsum(x, dtype=dtype), "xb": np.concatenate([[0], x[:-1]]),
                 "xa + b": np.concatenate([[0], np.cumsum(x, dtype=dtype)[:-1]])}
        for k, e in kernels:
            out = cukit.to_device(data(rng, dtype, (n,)))
            k(cukit.to_device(x), out)
            want = wants[e].astype(dtype)
            if e.endswith("a + b") and dtype == "float64":
                np.testing.assert_allclose(out.get(), want, rtol=1e-12, atol=1e-9 * n, err_msg=f"{e} {n}")
            else:
                np.testing.assert_array_equal(out.get(), want, err_msg=f"{e} {n}")


# ------------------------------------------------------------------ the engine's plans


def fake(view, base, addr):
    """(shape, strides, itemsize, address) of a numpy view of `base`, as if base lay at addr."""
    off = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return (view.shape, view.strides, view.itemsize, addr + off)


def offsets(i, shape, strides):
    offs = [0] * len(strides)
    for d in reversed(range(len(shape))):
        c, i = i % shape[d], i // shape[d]
        for k in range(len(strides)):
            offs[k] += c * strides[k][d]
    return offs


def simulate(plan, bases, starts, out, out_start, keep_index=False):
    """Run a plan as the kernels index it, on the host: per output, per split, per
    element. Returns out filled with the sum of products of the inputs (or, with
    keep_index, the first index of the maximum of input 0)."""
    nin = len(bases)
    ks, rs = plan["ks"], plan["rs"]
    assert plan["splits"] * plan["chunk"] >= plan["nred"]
    assert plan["splits"] == 1 or (plan["splits"] - 1) * plan["chunk"] < plan["nred"]
    flat_out = out.reshape(-1) if out.flags.c_contiguous else None
    for o in range(plan["nout"]):
        ko = offsets(o, plan["kshape"], ks)
        best = None
        acc = 0.0
        for s in range(plan["splits"]):
            lo = s * plan["chunk"]
            for j in range(lo, min(plan["nred"], lo + plan["chunk"])):
                if len(plan["rshape"]) <= 1:
                    off = [ko[k] + j * (rs[k][0] if rs[k] else 0) for k in range(nin + 1)]
                else:
                    ro = offsets(j, plan["rshape"], rs)
                    off = [ko[k] + ro[k] for k in range(nin + 1)]
                vals = [bases[k].reshape(-1)[(starts[k] + off[k]) // bases[k].itemsize]
                        for k in range(nin)]
                if keep_index:
                    if best is None or vals[0] > best[0]:
                        best = (vals[0], j)
                else:
                    acc += float(np.prod(vals))
        idx = (out_start + ko[nin]) // out.itemsize
        flat_out[idx] = best[1] if keep_index else acc
    return out


def plan_case(views, bases, axis, keepdims, keep_index=False, out_view=None):
    addrs = [(1 << 20) * (k + 1) for k in range(len(views))]
    shape = np.broadcast_shapes(*[v.shape for v in views])
    ref = np.sum(np.prod(np.broadcast_arrays(*views), axis=0), axis=axis, keepdims=keepdims) \
        if not keep_index else np.argmax(views[0], axis=axis)
    out = np.full(np.shape(ref), -12345.0) if not keep_index else np.full(np.shape(ref), -1)
    out_addr = 1 << 28
    target = out if out_view is None else out_view
    obase = out if out_view is None else out_view.base
    ins = [fake(v, b, a) for v, b, a in zip(views, bases, addrs)]
    ospec = fake(target, obase, out_addr)
    plan = cukit._cukit._reduce_plan(ins, axis, ospec, keep_index)
    starts = [spec[3] - a for spec, a in zip(ins, addrs)]
    if out_view is not None:
        obase[...] = -12345.0
    got = simulate(plan, bases, starts, obase, ospec[3] - out_addr, keep_index)
    got = target
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-9, err_msg=f"{shape} axis={axis}")
    if plan["fn"] == 5:  # vectors of outputs: contiguous along the innermost kept axis
        assert all(k[-1] == v.itemsize for k, v in zip(plan["ks"], views))
        assert plan["kshape"][-1] % 4 == 0
    if plan["fn"] in (0, 1, 6, 7):  # vector loads: one contiguous run, splits of whole vectors
        assert all(r[0] == v.itemsize for r, v in zip(plan["rs"], views))
        assert plan["chunk"] % 2 == 0 or plan["splits"] == 1
    return plan


def test_plans_index_every_element_once(rng):
    """Without a device: the kept and reduced dimensions, their sorting and merging, the
    split of long rows and the kernel choice address exactly numpy's elements."""
    base = rng.standard_normal(4 * 5 * 12)
    x = base.reshape(4, 5, 12)
    seen = set()
    for view in (x, x.T, x[:, ::2, 1:], x[::-1, :, ::-3], x.transpose(1, 2, 0)):
        for axis in (None, 0, 1, 2, -1, (0, 2), (1, 2), ()):
            for keep in (False, True):
                seen.add(plan_case([view], [base], axis, keep)["fn"])
            if not isinstance(axis, tuple):
                plan_case([view], [base], axis, False, keep_index=True)
    # two inputs with broadcasting (dot of a matrix and a vector)
    mb, vb = rng.standard_normal(30 * 8), rng.standard_normal(8)
    plan_case([mb.reshape(30, 8), vb], [mb, vb], -1, False)
    plan_case([mb.reshape(30, 8).T, vb[:, None]], [mb, vb], 0, False)
    # out= a transposed view
    ob = np.zeros(12 * 4)
    plan_case([x], [base], 1, False, out_view=ob.reshape(12, 4).T)
    # long rows split in two passes, a thread per output, short rows
    big = rng.standard_normal(100_000)
    seen.add(plan_case([big], [big], None, False)["fn"])
    seen.add(plan_case([big[3:]], [big], None, False)["fn"])
    tall = rng.standard_normal(300 * 40)
    p = plan_case([tall.reshape(300, 40)], [tall], 0, False)
    assert p["fn"] == 5  # a thread per vector of columns, no transpose
    p = plan_case([tall.reshape(300, 40)[:, 1:]], [tall], 0, False)
    assert p["fn"] == 4  # unaligned rows: a thread per column
    p = plan_case([tall.reshape(300, 40)[:, 4:]], [tall], 0, True)
    assert p["fn"] == 5 and p["kshape"] == (36,)
    p = plan_case([tall.reshape(30, 10, 40)], [tall], (0, 1), False)
    assert p["fn"] == 5 and p["rshape"] == (300,)
    short = rng.standard_normal(5000 * 3)
    assert plan_case([short.reshape(5000, 3)], [short], 1, False)["fn"] == 4
    assert {2, 3, 4} <= seen


# ------------------------------------------------------------------ one kernel a layout

FIRST_SUMS = r"""
import json, numpy as np, cukit
rng = np.random.default_rng()
out = []
for shape, axis in (((5000,), None), ((5000,), None), ((64, 40), 0), ((3, 4096), 1)):
    h = rng.random(shape, dtype=np.float32)
    got = cukit.to_device(h).sum(axis=axis).get()
    want = h.astype(np.float64).sum(axis=axis)
    out.append([cukit.cache_info()["entries"], float(np.max(np.abs(got - want) / want))])
print(json.dumps(out))
"""


@gpu
def test_a_first_sum_compiles_only_the_kernel_it_runs(tmp_path):
    """Each reduction kernel is a module of its own: in an empty cache, a whole-array
    sum compiles one entry (not the eight layouts'), the same sum again none, and each
    new layout one more; every result is numpy's."""
    env = dict(os.environ, CUKIT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("CUKIT_CACHE", None)
    r = subprocess.run([sys.executable, "-c", FIRST_SUMS], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    steps = json.loads(r.stdout.splitlines()[-1])
    assert [n for n, _ in steps] == [1, 1, 2, 3]
    assert all(err < 1e-5 for _, err in steps), steps


@pytest.mark.parametrize("sm", [2, 132])
def test_warmups_layouts_meet_every_reduction_kernel(sm):
    """python -m cukit warmup sums one array of each of its LAYOUTS: together their plans
    run all eight kernels (each compiled alone), on a small device and an H100's 132 SMs."""
    from cukit import _warmup

    fns = set()
    for shape, axis in _warmup.LAYOUTS:
        strides = tuple(int(np.prod(shape[d + 1:])) * 4 for d in range(len(shape)))
        oshape = () if axis is None else tuple(n for d, n in enumerate(shape) if d != axis)
        ostrides = tuple(int(np.prod(oshape[d + 1:])) * 4 for d in range(len(oshape)))
        p = cukit._cukit._reduce_plan([(shape, strides, 4, 1 << 20)], axis,
                                      (oshape, ostrides, 4, 1 << 28), False, 4, sm, 8)
        fns.add(p["fn"])
    assert fns == set(range(8))
