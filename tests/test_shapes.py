"""numpy's shape and layout functions and methods: views where numpy gives views (checked
by writing through them), copies where it copies, against numpy on fresh random data."""
import numpy as np
import pytest

import cukit

pytestmark = pytest.mark.gpu

# one of each family: bool, signed and unsigned ints, half, float, double, complex
DTYPES = ["?", "i1", "u2", "i4", "i8", "f2", "f4", "f8", "c8"]


def rand(rng, shape, dtype="f8"):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def same(d, h):
    """d (a cukit Array) holds exactly h: dtype, shape and every element."""
    assert isinstance(d, cukit.Array)
    assert d.dtype == h.dtype, (d.dtype, h.dtype)
    assert tuple(d.shape) == h.shape, (d.shape, h.shape)
    np.testing.assert_array_equal(d.get(), h)


def shares(view, base):
    return view.buffer is base.buffer


def strided(rng, dtype="f8"):
    """A non-contiguous view and its host twin: every other row, columns reversed."""
    h = rand(rng, (6, 5, 4), dtype)
    d = cukit.to_device(h)
    return d[::2, ::-1], h[::2, ::-1]


# ------------------------------------------------------------------ ravel, flatten, view


@pytest.mark.parametrize("dtype", DTYPES)
def test_ravel_is_a_view_of_a_contiguous_array_and_flatten_a_copy(rng, dtype):
    h = rand(rng, (3, 4, 5), dtype)
    d = cukit.to_device(h)
    r, f = d.ravel(), d.flatten()
    same(r, h.ravel())
    same(f, h.flatten())
    assert shares(r, d) and not shares(f, d)
    same(cukit.ravel(d), h.ravel())


def test_ravel_of_a_strided_array_copies_and_keeps_numpy_order(rng):
    d, h = strided(rng)
    for order in "CFAK":
        same(d.ravel(order), h.ravel("C" if order in "AK" else order))
        same(d.flatten(order), h.flatten("C" if order in "AK" else order))
    ht = rand(rng, (4, 3))
    t, ht = cukit.to_device(ht).T, ht.T  # Fortran-contiguous
    same(t.ravel("K"), ht.ravel("K"))
    same(t.ravel("A"), ht.ravel("A"))
    assert shares(t.ravel("K"), t) and shares(t.ravel("F"), t)
    one = cukit.to_device(rand(rng, (10,)))[::3]  # 1-D strided: reshape(-1) is a view
    assert shares(one.ravel(), one)
    same(one.ravel(), one.get())


def test_ravel_view_writes_through(rng):
    h = rand(rng, (4, 6))
    d = cukit.to_device(h)
    r = d.ravel()
    r[5] = 42.0
    h.ravel()[5] = 42.0
    same(d, h)


def test_ravel_of_0d_and_empty(rng):
    same(cukit.to_device(np.float32(3.5)).ravel(), np.array([3.5], np.float32))
    same(cukit.zeros((0, 3)).ravel(), np.zeros((0, 3)).ravel())
    with pytest.raises(ValueError, match="order"):
        cukit.zeros(3).ravel("X")


@pytest.mark.parametrize("src,dst", [("f4", "i4"), ("f8", "u1"), ("u1", "f4"), ("c8", "f4"),
                                     ("i8", "c16"), ("u2", "i2")])
def test_view_dtype(rng, src, dst):
    h = rand(rng, (3, 16), src)
    d = cukit.to_device(h)
    v = d.view(dst)
    same(v, h.view(dst))
    assert shares(v, d)
    same(d[1:].view(dst), h[1:].view(dst))  # rows of a view keep the last axis contiguous
    same(d.view(), h.view())


def test_view_dtype_errors(rng):
    d = cukit.to_device(rand(rng, (4, 6), "f4"))
    with pytest.raises(ValueError):
        d[:, ::2].view("f8")            # last axis not contiguous
    with pytest.raises(ValueError):
        d[:, :3].view("f8")             # 12 bytes is no number of doubles
    with pytest.raises(ValueError):
        cukit.to_device(np.float32(1)).view("f8")  # 0-d
    with pytest.raises(TypeError):
        d.view(cukit.Array)
    with pytest.raises(TypeError):
        d.view(object)


# ------------------------------------------------------------------ squeeze, swapaxes, transpose


def test_squeeze(rng):
    h = rand(rng, (1, 3, 1, 4, 1))
    d = cukit.to_device(h)
    for axis in (None, 0, -1, (0, 2), 2):
        v = d.squeeze(axis)
        same(v, h.squeeze(axis))
        assert shares(v, d)
        same(cukit.squeeze(d, axis), np.squeeze(h, axis))
    with pytest.raises(ValueError, match="size not equal to one"):
        d.squeeze(1)
    with pytest.raises(np.exceptions.AxisError):
        d.squeeze(5)
    with pytest.raises(ValueError, match="repeated axis"):
        d.squeeze((0, 0))
    same(cukit.to_device(np.float64(2.0)).squeeze(), np.squeeze(np.float64(2.0)))


def test_swapaxes_transpose_moveaxis_expand_dims_are_views(rng):
    d, h = strided(rng, "i4")
    cases = [
        (d.swapaxes(0, 2), h.swapaxes(0, 2)),
        (cukit.swapaxes(d, -1, 1), np.swapaxes(h, -1, 1)),
        (cukit.transpose(d, (1, 2, 0)), np.transpose(h, (1, 2, 0))),
        (cukit.transpose(d), np.transpose(h)),
        (cukit.moveaxis(d, 0, -1), np.moveaxis(h, 0, -1)),
        (cukit.moveaxis(d, [0, 1], [-1, 0]), np.moveaxis(h, [0, 1], [-1, 0])),
        (cukit.expand_dims(d, 1), np.expand_dims(h, 1)),
        (cukit.expand_dims(d, (0, -1)), np.expand_dims(h, (0, -1))),
    ]
    for v, want in cases:
        same(v, want)
        assert shares(v, d)
    with pytest.raises(np.exceptions.AxisError):
        d.swapaxes(0, 3)
    with pytest.raises(np.exceptions.AxisError):
        cukit.moveaxis(d, 3, 0)
    with pytest.raises(ValueError):
        cukit.moveaxis(d, [0, 1], [0])
    with pytest.raises(np.exceptions.AxisError):
        cukit.expand_dims(d, 5)


# ------------------------------------------------------------------ diagonal, broadcast_to


@pytest.mark.parametrize("offset", [-3, -1, 0, 2, 7])
def test_diagonal(rng, offset):
    h = rand(rng, (5, 7, 3), "c8")
    d = cukit.to_device(h)
    for a1, a2 in ((0, 1), (1, 0), (0, 2), (2, 1)):
        v = d.diagonal(offset, a1, a2)
        same(v, h.diagonal(offset, a1, a2))
        assert shares(v, d)
    dv, hv = strided(rng)
    same(cukit.diagonal(dv, offset, 1, 2), np.diagonal(hv, offset, 1, 2))


def test_diagonal_errors(rng):
    d = cukit.to_device(rand(rng, (3, 3)))
    with pytest.raises(ValueError):
        cukit.to_device(rand(rng, (3,))).diagonal()
    with pytest.raises(ValueError):
        d.diagonal(0, 1, 1)
    with pytest.raises(np.exceptions.AxisError):
        d.diagonal(0, 0, 2)


def test_broadcast_to_is_a_read_only_view(rng):
    h = rand(rng, (3, 1), "u2")
    d = cukit.to_device(h)
    v = cukit.broadcast_to(d, (2, 3, 4))
    same(v, np.broadcast_to(h, (2, 3, 4)))
    assert shares(v, d) and v.strides[0] == 0 and v.strides[2] == 0
    with pytest.raises(ValueError, match="read-only"):
        v[...] = 1
    same(cukit.broadcast_to(cukit.to_device(np.int8(5)), (2, 2)), np.full((2, 2), 5, np.int8))
    with pytest.raises(ValueError):
        cukit.broadcast_to(d, (3, 2, 5))
    with pytest.raises(ValueError):
        cukit.broadcast_to(d, (4,))
    with pytest.raises(TypeError):
        cukit.broadcast_to(h, (3, 4))
    a, b = cukit.broadcast_arrays(d, cukit.to_device(rand(rng, (4,))))
    assert a.shape == b.shape == (3, 4)


# ------------------------------------------------------------------ repeat, tile


@pytest.mark.parametrize("dtype", DTYPES)
def test_repeat(rng, dtype):
    h = rand(rng, (3, 4), dtype)
    d = cukit.to_device(h)
    same(d.repeat(3), h.repeat(3))
    same(d.repeat(2, axis=1), h.repeat(2, axis=1))
    same(cukit.repeat(d, [1, 0, 3], axis=0), np.repeat(h, [1, 0, 3], axis=0))
    same(d[:, ::-2].repeat(cukit.to_device(np.array([2, 1])), axis=-1),
         h[:, ::-2].repeat([2, 1], axis=-1))
    same(d.repeat(0, axis=0), h.repeat(0, axis=0))


def test_repeat_errors_and_0d(rng):
    same(cukit.to_device(np.float32(2.5)).repeat(3), np.float32(2.5).repeat(3))
    d = cukit.to_device(rand(rng, (3, 4)))
    with pytest.raises(ValueError):
        d.repeat(-1)
    with pytest.raises(ValueError):
        d.repeat([1, 2], axis=0)
    with pytest.raises(ValueError):
        d.repeat([1, -2, 1], axis=0)
    with pytest.raises(TypeError):
        d.repeat(1.5)
    with pytest.raises(np.exceptions.AxisError):
        d.repeat(2, axis=2)


@pytest.mark.parametrize("reps", [2, (2, 1), (1, 3), (2, 2, 2), (0, 2)])
def test_tile(rng, reps):
    d, h = strided(rng, "i8")
    same(cukit.tile(d[0], reps), np.tile(h[0], reps))
    v = cukit.to_device(rand(rng, (3,), "f4"))
    same(cukit.tile(v, reps), np.tile(v.get(), reps))


# ------------------------------------------------------------------ pad, roll


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
@pytest.mark.parametrize("width", [1, (2, 3), ((0, 1), (4, 2)), ((7, 9), (1, 0))])
def test_pad(rng, mode, width):
    h = rand(rng, (4, 3), "f4")
    d = cukit.to_device(h)
    same(cukit.pad(d, width, mode=mode), np.pad(h, width, mode=mode))
    ds, hs = strided(rng, "i2")
    same(cukit.pad(ds[1], width, mode=mode), np.pad(hs[1], width, mode=mode))


def test_pad_constant_values_and_errors(rng):
    h = rand(rng, (3, 4), "i4")
    d = cukit.to_device(h)
    same(cukit.pad(d, 2, constant_values=7), np.pad(h, 2, constant_values=7))
    same(cukit.pad(d, ((1, 2), (3, 1)), constant_values=((1, 2), (3, 4))),
         np.pad(h, ((1, 2), (3, 1)), constant_values=((1, 2), (3, 4))))
    assert cukit.pad(d, 1, mode="empty").shape == (5, 6)
    same(cukit.pad(cukit.zeros((0, 2)), 1), np.pad(np.zeros((0, 2)), 1))
    with pytest.raises(ValueError):
        cukit.pad(d, -1)
    with pytest.raises(ValueError):
        cukit.pad(d, 1, mode="nonsense")
    with pytest.raises(ValueError):
        cukit.pad(cukit.zeros((0, 2)), 1, mode="edge")
    with pytest.raises(ValueError):
        cukit.pad(d, 1, mode="edge", constant_values=3)


def _numpy_pads_with_a_dict():
    try:
        return np.pad(np.zeros((1, 1)), {1: 1}).shape == (1, 3)
    except (TypeError, ValueError):
        return False


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap", "mean"])
def test_pad_width_as_a_dict(rng, mode):
    # numpy's {axis: width} (numpy 2.4 on), compared with the installed numpy where it
    # has it: an int for both ends or a (before, after) pair; negative axes; axes not
    # named are not padded; a later key for the same axis wins
    if not _numpy_pads_with_a_dict():
        pytest.skip(f"numpy {np.__version__} takes no dict as pad_width to compare with")
    h = rand(rng, (4, 3, 5), "i4")
    d = cukit.to_device(h)
    for width in ({1: (1, 2)}, {0: 2}, {-1: (0, 3), 0: (2, 1)}, {}, {2: 1, -1: (2, 0)}):
        same(cukit.pad(d, width, mode=mode), np.pad(h, width, mode=mode))


def test_pad_width_dict_errors(rng):
    d = cukit.to_device(rand(rng, (3, 4), "f4"))
    with pytest.raises(np.exceptions.AxisError, match="pad_width"):
        cukit.pad(d, {2: 1})
    with pytest.raises(TypeError, match="keys must be axes"):
        cukit.pad(d, {"a": 1})
    for bad in ((1, 2, 3), 1.5, [1, 2], (1,)):
        with pytest.raises(TypeError, match="an int or a tuple"):
            cukit.pad(d, {0: bad})
    with pytest.raises(ValueError):
        cukit.pad(d, {0: -1})


# numpy's stat modes: 1-D and 3-D arrays, widths and stat lengths per axis and side (a
# length past the axis takes all of it; a zero width pads nothing), and a strided view
PAD_STAT_CASES = [
    ((9,), (3, 5), None), ((9,), (4, 0), 3), ((9,), 2, (1, 40)),
    ((4, 3, 5), ((1, 2), (0, 3), (4, 1)), ((1, 3), (2, 2), (5, 1))),
    ((4, 3, 5), ((2, 2), (1, 0), (0, 3)), 2),
]


def pad_close(d, h, mode, k_max):
    """A float mean differs from numpy's by the rounding of two sums of k elements, each
    within (k + 2) u sum|x| <= (k + 2) u k max|x| of the exact one
    (docs/guide/reductions.md; numpy's pairwise sum within less), and of the quotient;
    the errors of earlier axes' padding carry into later axes' means (at most adding up
    once per axis). Every other statistic, and the input's elements, are numpy's bits."""
    if mode != "mean" or h.dtype.kind not in "fc":
        same(d, h)
        return
    u = np.finfo(h.dtype).eps / 2
    assert d.dtype == h.dtype and tuple(d.shape) == h.shape
    bound = np.abs(h).max() * u * h.ndim * 2 * (k_max + 3)
    np.testing.assert_allclose(d.get(), h, rtol=0, atol=bound)


@pytest.mark.parametrize("mode", ["maximum", "minimum", "mean", "median"])
@pytest.mark.parametrize("dtype", ["f2", "f4", "f8", "i4", "u1", "?"])
def test_pad_stat_modes(rng, mode, dtype):
    for shape, width, length in PAD_STAT_CASES:
        h = rand(rng, shape, dtype)
        want = np.pad(h, width, mode=mode, stat_length=length)
        pad_close(cukit.pad(cukit.to_device(h), width, mode=mode, stat_length=length), want,
                  mode, max(shape))
    d, h = strided(rng, dtype)
    width, length = ((2, 1), (0, 2), (3, 3)), ((1, 2), (9, 9), (2, 1))
    pad_close(cukit.pad(d, width, mode=mode, stat_length=length),
              np.pad(h, width, mode=mode, stat_length=length), mode, max(h.shape))


def test_pad_stat_rounds_integer_means_half_to_even(rng):
    # means of two integers land on .5: numpy rounds them half to even
    h = rng.integers(-50, 50, size=(5, 8)).astype(np.int16)
    for length in (2, 4, ((2, 4), (2, 6))):
        for mode in ("mean", "median"):
            same(cukit.pad(cukit.to_device(h), 3, mode=mode, stat_length=length),
                 np.pad(h, 3, mode=mode, stat_length=length))


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8", "c16", "i4", "i2"])
@pytest.mark.parametrize("ends", [0, 5, (2.5, -3), ((1, -2), (3, 4), (0.5, 7)),
                                  np.float32(1.75), ((np.float16(2), 3),)])
def test_pad_linear_ramp(rng, dtype, ends):
    # numpy's linspace arithmetic step by step (a typed end value can widen it, a Python
    # number cannot): every element equal, also floored for integers
    h = rand(rng, (4, 3, 5), dtype)
    if h.dtype.kind in "iu":
        h //= 4
    width = ((2, 3), (0, 4), (6, 1))
    d = cukit.to_device(h)
    same(cukit.pad(d, width, mode="linear_ramp", end_values=ends),
         np.pad(h, width, mode="linear_ramp", end_values=ends))
    same(cukit.pad(d[::2, :, ::-2], 3, mode="linear_ramp", end_values=ends),
         np.pad(h[::2, :, ::-2], 3, mode="linear_ramp", end_values=ends))
    same(cukit.pad(d[0, 0], (7, 2), mode="linear_ramp", end_values=ends if np.ndim(ends) < 2
                   else ends[0]),
         np.pad(h[0, 0], (7, 2), mode="linear_ramp", end_values=ends if np.ndim(ends) < 2
                else ends[0]))


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
@pytest.mark.parametrize("dtype", ["f4", "f8", "c8", "i2", "u1", "?"])
def test_pad_reflect_odd(rng, mode, dtype):
    # widths past the axis length: numpy reflects piece by piece about the new edges
    for shape, width in [((5,), (13, 2)), ((2,), (5, 5)), ((1, 3), ((2, 2), (7, 0))),
                         ((4, 3, 5), ((1, 9), (0, 4), (6, 1)))]:
        h = rand(rng, shape, dtype)
        same(cukit.pad(cukit.to_device(h), width, mode=mode, reflect_type="odd"),
             np.pad(h, width, mode=mode, reflect_type="odd"))
    d, h = strided(rng, dtype)
    same(cukit.pad(d, ((2, 1), (0, 5), (3, 3)), mode=mode, reflect_type="odd"),
         np.pad(h, ((2, 1), (0, 5), (3, 3)), mode=mode, reflect_type="odd"))
    same(cukit.pad(d, 2, mode=mode, reflect_type="even"),
         np.pad(h, 2, mode=mode, reflect_type="even"))


@pytest.mark.parametrize("mode", ["maximum", "mean", "median", "linear_ramp"])
def test_pad_stat_and_ramp_modes_of_empty_arrays(mode):
    e, h = cukit.zeros((0, 3), "f4"), np.zeros((0, 3), "f4")
    same(cukit.pad(e, ((0, 0), (2, 1)), mode=mode), np.pad(h, ((0, 0), (2, 1)), mode=mode))
    with pytest.raises(ValueError, match="can't extend empty axis 0"):
        cukit.pad(e, 1, mode=mode)
    with pytest.raises(ValueError, match="can't extend empty axis 1"):
        cukit.pad(cukit.zeros((2, 0)), ((0, 0), (1, 0)), mode=mode)


def test_pad_stat_ramp_and_reflect_type_errors(rng):
    h = rand(rng, (3, 4), "f8")
    d = cukit.to_device(h)
    for mode in ("maximum", "minimum"):
        with pytest.raises(ValueError, match="stat_length of 0 yields no value"):
            cukit.pad(d, 1, mode=mode, stat_length=((1, 1), (0, 2)))
    with pytest.raises(ValueError, match="index can't contain negative values"):
        cukit.pad(d, 1, mode="mean", stat_length=-1)
    with pytest.raises(ValueError, match="unsupported keyword arguments for mode 'median'"):
        cukit.pad(d, 1, mode="median", end_values=1)
    with pytest.raises(ValueError, match="unsupported keyword arguments for mode 'linear_ramp'"):
        cukit.pad(d, 1, mode="linear_ramp", stat_length=1)
    # numpy: a mean of no elements is NaN, with numpy's warning; of an integer array it
    # has no value (numpy writes whatever the cast of NaN gives): cukit raises
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        r = cukit.pad(d, 1, mode="mean", stat_length=((0, 2), (1, 1)))
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        want = np.pad(h, 1, mode="mean", stat_length=((0, 2), (1, 1)))
    same(r, want)
    with pytest.raises(ValueError, match="stat_length of 0 yields no value"):
        cukit.pad(cukit.to_device(rand(rng, (3, 4), "i4")), 1, mode="median", stat_length=0)
    # numpy takes any reflect_type other than 'odd' as 'even'; cukit names the two
    with pytest.raises(ValueError, match="reflect_type must be 'even' or 'odd'"):
        cukit.pad(d, 1, mode="reflect", reflect_type="od")
    with pytest.raises(NotImplementedError, match="a function as mode"):
        cukit.pad(d, 1, mode=lambda v, w, i, kw: None)


@pytest.mark.parametrize("shift,axis", [(2, None), (-7, None), (1, 0), (-2, 1), ((1, 3), (0, 1)),
                                        ((2, 2), (1, 1)), (0, 0)])
def test_roll(rng, shift, axis):
    d, h = strided(rng, "f8")
    r = cukit.roll(d, shift, axis)
    same(r, np.roll(h, shift, axis))
    assert not shares(r, d)
    same(cukit.roll(cukit.zeros((0,)), 3), np.roll(np.zeros((0,)), 3))


# ------------------------------------------------------------------ stacks and splits


def test_stacks(rng):
    a, b = rand(rng, (3,), "f4"), rand(rng, (3,), "f4")
    m, n = rand(rng, (3, 2), "f4"), rand(rng, (3, 4), "f4")
    da, db, dm, dn = (cukit.to_device(x) for x in (a, b, m, n))
    same(cukit.hstack([da, db]), np.hstack([a, b]))
    same(cukit.hstack((dm, dn)), np.hstack((m, n)))
    same(cukit.vstack([da, db]), np.vstack([a, b]))
    same(cukit.vstack([dm.T, dn.T]), np.vstack([m.T, n.T]))
    same(cukit.dstack([da, db]), np.dstack([a, b]))
    same(cukit.dstack([dm, dm]), np.dstack([m, m]))
    same(cukit.column_stack([da, dm, db]), np.column_stack([a, m, b]))
    with pytest.raises(ValueError):
        cukit.vstack([])
    with pytest.raises(ValueError):
        cukit.hstack([dm, da])
    with pytest.raises(TypeError):
        cukit.hstack(da)


def test_atleast(rng):
    s, v, m = cukit.to_device(np.float32(1.5)), cukit.to_device(rand(rng, (3,))), \
        cukit.to_device(rand(rng, (2, 3)))
    for fn in ("atleast_1d", "atleast_2d", "atleast_3d"):
        for x in (s, v, m):
            got = getattr(cukit, fn)(x)
            same(got, getattr(np, fn)(x.get()))
            assert shares(got, x)
        many = getattr(cukit, fn)(s, v)
        assert isinstance(many, tuple) and len(many) == 2


@pytest.mark.parametrize("spec", [3, [1, 4], [2, 2, 5], [0], [6, 1]])
def test_array_split_and_split_are_views(rng, spec):
    h = rand(rng, (6, 5), "u1")
    d = cukit.to_device(h)
    got, want = cukit.array_split(d, spec), np.array_split(h, spec)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        same(g, w)
        assert shares(g, d) or g.size == 0
    got = cukit.array_split(d, spec, axis=1)
    for g, w in zip(got, np.array_split(h, spec, axis=1)):
        same(g, w)


def test_split_family(rng):
    h = rand(rng, (4, 6, 2), "i2")
    d = cukit.to_device(h)
    for g, w in zip(cukit.split(d, 2), np.split(h, 2)):
        same(g, w)
    for g, w in zip(cukit.hsplit(d, 3), np.hsplit(h, 3)):
        same(g, w)
    for g, w in zip(cukit.vsplit(d, [1, 3]), np.vsplit(h, [1, 3])):
        same(g, w)
    for g, w in zip(cukit.dsplit(d, 2), np.dsplit(h, 2)):
        same(g, w)
    with pytest.raises(ValueError, match="equal division"):
        cukit.split(d, 3)
    with pytest.raises(ValueError):
        cukit.vsplit(d[0, 0], 2)
    with pytest.raises(ValueError):
        cukit.dsplit(d[0], 2)
    with pytest.raises(ValueError):
        cukit.hsplit(cukit.to_device(np.float32(1)), 1)
    with pytest.raises(ValueError):
        cukit.array_split(d, 0)


def test_flips_are_views(rng):
    d, h = strided(rng, "c8")
    for axis in (None, 0, -1, (0, 2)):
        v = cukit.flip(d, axis)
        same(v, np.flip(h, axis))
        assert shares(v, d)
    same(cukit.fliplr(d), np.fliplr(h))
    same(cukit.flipud(d), np.flipud(h))
    with pytest.raises(ValueError):
        cukit.fliplr(d[0, 0])
    with pytest.raises(ValueError):
        cukit.flipud(cukit.to_device(np.float32(1)))


# ------------------------------------------------------------------ reshape, asfortranarray, copyto


def test_reshape_function_copies_only_when_needed(rng):
    h = rand(rng, (4, 6), "f4")
    d = cukit.to_device(h)
    r = cukit.reshape(d, (3, 8))
    same(r, h.reshape(3, 8))
    assert shares(r, d)
    d2, h2 = d[:, 1:4], h[:, 1:4]
    with pytest.raises(ValueError):
        d2.reshape(12)                 # the method stays a view or nothing
    r2 = cukit.reshape(d2, 12)           # numpy's function copies
    same(r2, h2.reshape(12))
    same(cukit.reshape(d, (8, 3), order="F"), h.reshape((8, 3), order="F"))
    same(cukit.reshape(d, -1), h.reshape(-1))
    with pytest.raises(ValueError):
        cukit.reshape(d, (5, 5))
    with pytest.raises(ValueError):
        cukit.reshape(d2, 12, copy=False)


def test_asfortranarray(rng):
    d, h = strided(rng)
    f = cukit.asfortranarray(d)
    assert f.flags["F_CONTIGUOUS"]
    same(f, np.asfortranarray(h))
    assert cukit.asfortranarray(f) is f
    same(cukit.asfortranarray(d, dtype="f4"), np.asfortranarray(h, dtype="f4"))


def test_copyto_and_copy(rng):
    h = rand(rng, (3, 4), "i8")
    d = cukit.empty((3, 4), "i8")
    cukit.copyto(d, h)
    same(d, h)
    e = cukit.zeros((4, 3), "i8")
    cukit.copyto(e, d.T)
    same(e, h.T)
    out = np.empty_like(h)
    cukit.copyto(out, d)
    np.testing.assert_array_equal(out, h)
    c = cukit.copy(d.T)
    same(c, np.copy(h.T))
    assert not shares(c, d) and c.flags["F_CONTIGUOUS"] == np.copy(h.T, order="K").flags.f_contiguous
    assert cukit.copy(d, order="F").flags["F_CONTIGUOUS"]
    same(cukit.copy(h), h)
    with pytest.raises(TypeError):
        cukit.copyto(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError):
        cukit.copy(d, order="Q")


def test_shape_ndim_size(rng):
    d = cukit.to_device(rand(rng, (2, 3)))
    assert cukit.shape(d) == (2, 3) and cukit.ndim(d) == 2 and cukit.size(d) == 6
    assert cukit.size(d, 1) == 3


def test_functions_refuse_host_data(rng):
    with pytest.raises(TypeError, match="cukit.Array"):
        cukit.flip(np.zeros(3))
    with pytest.raises(TypeError, match="cukit.Array"):
        cukit.tile([1, 2], 2)


@pytest.mark.parametrize("dtype", DTYPES + ["c16", "u8"])
def test_every_family_through_the_copies_and_views(rng, dtype):
    d, h = strided(rng, dtype)
    same(cukit.pad(d, 1, mode="edge"), np.pad(h, 1, mode="edge"))
    same(cukit.roll(d, 1, axis=2), np.roll(h, 1, axis=2))
    same(cukit.tile(d, 2), np.tile(h, 2))
    same(cukit.flip(d, 1), np.flip(h, 1))
    same(cukit.hstack([d, d]), np.hstack([h, h]))
    same(cukit.moveaxis(d, 0, 2).ravel(), np.moveaxis(h, 0, 2).ravel())
    for g, w in zip(cukit.split(d, 2, axis=2), np.split(h, 2, axis=2)):
        same(g, w)
    same(cukit.broadcast_to(d[:1], (2,) + tuple(d.shape[1:])).copy(),
         np.broadcast_to(h[:1], (2,) + h.shape[1:]).copy())


def test_bfloat16_views_and_copies(rng):
    ml = pytest.importorskip("ml_dtypes")
    h = rng.standard_normal((4, 6)).astype(ml.bfloat16)
    d = cukit.to_device(h)
    same(d.ravel(), h.ravel())
    same(d.T.flatten(), h.T.flatten())
    same(d.view(np.uint16), h.view(np.uint16))
    same(cukit.pad(d, 1, mode="wrap"), np.pad(h, 1, mode="wrap"))
    same(d.repeat(2, axis=1), h.repeat(2, axis=1))


def test_empty_arrays(rng):
    e = cukit.zeros((0, 3), "f4")
    h = np.zeros((0, 3), "f4")
    same(cukit.tile(e, 2), np.tile(h, 2))
    same(e.repeat(3, axis=1), h.repeat(3, axis=1))
    same(cukit.hstack([e, e]), np.hstack([h, h]))
    same(cukit.vstack([e, cukit.ones((1, 3), "f4")]), np.vstack([h, np.ones((1, 3), "f4")]))
    same(e.flatten(), h.flatten())
    same(e.squeeze(), h.squeeze())
    same(e.diagonal(), h.diagonal())
    same(cukit.flip(e), np.flip(h))
    assert [x.shape for x in cukit.array_split(e, 2, axis=1)] == \
        [x.shape for x in np.array_split(h, 2, axis=1)]
    same(cukit.pad(e, ((0, 0), (1, 1))), np.pad(h, ((0, 0), (1, 1))))


@pytest.mark.parametrize("dtype", ["c16", np.dtype([("a", "u1"), ("b", "<u2")]),
                                   np.dtype([("x", "<f4"), ("y", "<i8")])])
def test_repeat_counts_of_any_item_size(rng, dtype):
    dtype = np.dtype(dtype)
    raw = rng.integers(0, 256, size=20 * dtype.itemsize, dtype=np.uint8)
    h = raw.view(dtype).reshape(4, 5) if dtype.kind == "V" else rand(rng, (4, 5), dtype)
    d = cukit.to_device(h)
    counts = rng.integers(0, 4, size=5)

    def same_bytes(got, want):  # random bytes may make a NaN field: compare the bytes
        assert got.dtype == want.dtype and tuple(got.shape) == want.shape
        g = np.ascontiguousarray(got.get())
        np.testing.assert_array_equal(g.view(np.uint8), np.ascontiguousarray(want).view(np.uint8))
    same_bytes(d.repeat(counts, axis=1), h.repeat(counts, axis=1))
    same_bytes(d.T.repeat(counts, axis=0), h.T.repeat(counts, axis=0))


def test_repeat_many_counts_is_one_launch(rng):
    h = rand(rng, (20000,), "f4")
    counts = rng.integers(0, 3, size=20000)
    d = cukit.to_device(h)
    same(d.repeat(cukit.to_device(counts)), h.repeat(counts))
    same(cukit.repeat(d[::-1], counts), np.repeat(h[::-1], counts))


def test_copyto_broadcasts_casts_and_masks(rng):
    h = rand(rng, (3, 4), "f8")
    d = cukit.to_device(h)
    row = rand(rng, (4,), "f4")
    cukit.copyto(d, cukit.to_device(row))        # broadcast, float32 -> float64
    want = h.copy()
    np.copyto(want, row)
    same(d, want)
    mask = rng.random((3, 4)) < 0.5
    src = rand(rng, (3, 4), "f8")
    cukit.copyto(d, cukit.to_device(src), where=cukit.to_device(mask))
    np.copyto(want, src, where=mask)
    same(d, want)
    cukit.copyto(d, 2.5)                          # a scalar, as numpy
    same(d, np.full((3, 4), 2.5))
    cukit.copyto(d, [1, 2, 3, 4])                 # host data, broadcast
    same(d, np.broadcast_to(np.array([1, 2, 3, 4], "f8"), (3, 4)))
    with pytest.raises(TypeError, match="same_kind"):
        cukit.copyto(cukit.zeros(4, "i4"), cukit.to_device(row))
    with pytest.raises(ValueError):
        cukit.copyto(d, cukit.to_device(rand(rng, (5,))))
    i = cukit.zeros(4, "i4")
    cukit.copyto(i, cukit.to_device(row), casting="unsafe")
    same(i, row.astype("i4"))
