"""cukit.pycuda's reductions, scans, gathers and random numbers: PyCUDA's gpuarray.sum/dot/
min/max/subset_*, take/multi_take_put, ReductionKernel, the scan kernels and curandom, each
checked against numpy on fresh random data; bad input raises, naming the fix."""
import numpy as np
import pytest

import cukit
import cukit.pycuda.curandom as curandom
import cukit.pycuda.driver
from cukit.pycuda import gpuarray
from cukit.pycuda.reduction import ReductionKernel, get_dot_kernel, get_sum_kernel
from cukit.pycuda.scan import ExclusiveScanKernel, InclusiveScanKernel
from cukit.pycuda.tools import DeviceMemoryPool

gpu = pytest.mark.gpu


def data(rng, n, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(n).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    return rng.integers(-1000 if dtype.kind == "i" else 0, 1000, n).astype(dtype)


# ------------------------------------------------------------------ sums and products


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("n", [1, 1000, 100_003])
def test_sum_is_numpys_in_the_input_dtype(rng, dtype, n):
    x = data(rng, n, dtype)
    s = gpuarray.sum(gpuarray.to_gpu(x))
    assert s.shape == () and s.dtype == np.dtype(dtype)  # PyCUDA's: int32 sums in int32
    want = x.sum(dtype=dtype)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(s.get(), want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-3)
    else:
        assert s.get() == want


@gpu
def test_sum_with_dtype_and_allocator(rng):
    x = data(rng, 5000, np.int32)
    pool = DeviceMemoryPool()
    uses = []

    def allocator(size):
        uses.append(size)
        return pool.allocate(size)

    s = gpuarray.sum(gpuarray.to_gpu(x), dtype=np.int64, allocator=allocator)
    assert s.dtype == np.int64 and s.get() == x.astype(np.int64).sum()
    assert len(uses) == 1 and s.allocator is allocator


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.int32])
@pytest.mark.parametrize("n", [2, 33, 16384 - 993, 20000])
def test_dot_and_vdot(rng, dtype, n):
    a, b = data(rng, n, dtype), data(rng, n, dtype)
    ga, gb = gpuarray.to_gpu(a), gpuarray.to_gpu(b)
    d, v = gpuarray.dot(ga, gb), gpuarray.vdot(ga, gb)
    assert d.dtype == np.dtype(dtype) and d.shape == ()
    tol = dict(rtol=2e-4, atol=1e-2) if np.dtype(dtype).itemsize <= 8 else dict(rtol=1e-10)
    if np.dtype(dtype).kind == "i":
        assert d.get() == np.dot(a, b) and v.get() == np.vdot(a, b)
    else:
        np.testing.assert_allclose(d.get(), np.dot(a, b), **tol)
        np.testing.assert_allclose(v.get(), np.vdot(a, b), **tol)


@gpu
def test_dot_of_mixed_dtypes_is_in_the_common_type(rng):
    a, b = data(rng, 1000, np.float32), data(rng, 1000, np.int32)
    d = gpuarray.dot(gpuarray.to_gpu(a), gpuarray.to_gpu(b))
    assert d.dtype == np.float64
    np.testing.assert_allclose(d.get(), np.dot(a.astype(np.float64), b), rtol=1e-12)


@gpu
def test_dot_of_different_sizes_raises(rng):
    with pytest.raises(ValueError, match="same number"):
        gpuarray.dot(gpuarray.to_gpu(data(rng, 10, np.float32)),
                     gpuarray.to_gpu(data(rng, 11, np.float32)))


@gpu
@pytest.mark.parametrize("what", ["min", "max"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint16])
def test_min_max(rng, what, dtype):
    x = data(rng, 200_000, dtype)
    r = getattr(gpuarray, what)(gpuarray.to_gpu(x))
    assert r.get() == getattr(np, what)(x) and r.dtype == np.dtype(dtype)


@gpu
@pytest.mark.parametrize("what", ["min", "max"])
def test_min_max_propagate_nan(rng, what):
    x = data(rng, 1000, np.float32)
    x[rng.integers(1000)] = np.nan
    assert np.isnan(getattr(gpuarray, what)(gpuarray.to_gpu(x)).get())


@gpu
def test_max_of_empty_raises():
    with pytest.raises(ValueError, match="empty"):
        gpuarray.max(gpuarray.empty(0, np.float32))


@gpu
@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.float32, np.float64])
def test_any_all(rng, dtype):
    for x in (np.ones(10, dtype), np.zeros(1, dtype), data(rng, 7, dtype),
              np.zeros(1000, dtype)):
        g = gpuarray.to_gpu(x)
        assert g.any().get() == np.any(x) and g.any().dtype == np.bool_
        assert g.all().get() == np.all(x) and g.all().dtype == np.bool_


# ------------------------------------------------------------------ subsets and gathers


def subset_indices(rng, n, m, dtype=np.int32):
    return np.sort(rng.choice(n, m, replace=False)).astype(dtype)


@gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_subset_reductions(rng, dtype):
    a, b = data(rng, 2000, dtype), data(rng, 2000, dtype)
    idx = subset_indices(rng, 2000, 1601)
    ga, gb, gi = gpuarray.to_gpu(a), gpuarray.to_gpu(b), gpuarray.to_gpu(idx)
    assert gpuarray.subset_min(gi, ga).get() == a[idx].min()
    assert gpuarray.subset_max(gi, ga).get() == a[idx].max()
    s, d = gpuarray.subset_sum(gi, ga).get(), gpuarray.subset_dot(gi, ga, gb).get()
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(s, a[idx].sum(), rtol=1e-4, atol=1e-2)
        np.testing.assert_allclose(d, np.dot(a[idx], b[idx]), rtol=1e-4, atol=1e-2)
    else:
        assert s == a[idx].sum(dtype=dtype) and d == np.dot(a[idx], b[idx])


@gpu
def test_subset_sum_uses_the_allocator_once(rng):
    a = data(rng, 2000, np.float32)
    idx = subset_indices(rng, 2000, 500)
    pool, uses = DeviceMemoryPool(), []

    def allocator(size):
        uses.append(size)
        return pool.allocate(size)

    s = gpuarray.subset_sum(gpuarray.to_gpu(idx), gpuarray.to_gpu(a), allocator=allocator)
    # the atol: a sum of 500 normals can cancel to near zero (float32 rounding of terms ~1)
    np.testing.assert_allclose(s.get(), a[idx].sum(), rtol=1e-4, atol=1e-4)
    assert len(uses) == 1


@gpu
@pytest.mark.parametrize("bad", [2000, -1, 10**6])
def test_subset_index_out_of_range_raises(rng, bad):
    idx = subset_indices(rng, 2000, 10)
    idx[3] = bad
    with pytest.raises(IndexError, match="outside"):
        gpuarray.subset_sum(gpuarray.to_gpu(idx), gpuarray.to_gpu(data(rng, 2000, np.float32)))


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int16])
@pytest.mark.parametrize("itype", [np.uint32, np.int64])
def test_take(rng, dtype, itype):
    a = data(rng, 60_000, dtype)
    idx = rng.integers(0, a.size, 5000).astype(itype)
    r = gpuarray.take(gpuarray.to_gpu(a), gpuarray.to_gpu(idx))
    assert r.dtype == np.dtype(dtype) and r.shape == idx.shape
    np.testing.assert_array_equal(r.get(), a[idx])


@gpu
def test_take_out_of_range_raises_and_writes_nothing(rng):
    a = gpuarray.to_gpu(data(rng, 100, np.float32))
    out = gpuarray.to_gpu(np.full(3, np.nan, np.float32))
    with pytest.raises(IndexError, match="outside"):
        gpuarray.take(a, gpuarray.to_gpu(np.array([0, 100, 5], np.uint32)), out=out)
    assert np.isnan(out.get()).all()


@gpu
def test_take_with_float_indices_raises(rng):
    with pytest.raises(TypeError, match="integer"):
        gpuarray.take(gpuarray.to_gpu(data(rng, 10, np.float32)),
                      gpuarray.to_gpu(np.zeros(3, np.float32)))


@gpu
def test_multi_take_and_put(rng):
    arrays = [data(rng, 500, np.float32) for _ in range(3)]
    g = [gpuarray.to_gpu(a) for a in arrays]
    idx = rng.integers(0, 500, 64).astype(np.int32)
    taken = gpuarray.multi_take(g, gpuarray.to_gpu(idx))
    for t, a in zip(taken, arrays):
        np.testing.assert_array_equal(t.get(), a[idx])
    dest = rng.permutation(100)[:64].astype(np.uint32)
    outs = [gpuarray.to_gpu(np.full(100, np.nan, np.float32)) for _ in range(3)]
    small = [gpuarray.to_gpu(a[:64].copy()) for a in arrays]
    gpuarray.multi_put(small, gpuarray.to_gpu(dest), out=outs)
    for o, a in zip(outs, arrays):
        want = np.full(100, np.nan, np.float32)
        want[dest] = a[:64]
        np.testing.assert_array_equal(o.get(), want)


@gpu
def test_multi_take_put_with_offsets(rng):
    n, field = 17, 8
    buf = data(rng, n * field, np.float32)
    dest_idx = np.array([0, 1, 2, 3, 32, 33, 34, 35], np.uint32)
    src_idx = np.array([7, 6, 5, 4, 3, 2, 1, 0], np.uint32)
    gbuf = gpuarray.to_gpu(buf)
    outs = gpuarray.multi_take_put([gbuf] * n, gpuarray.to_gpu(dest_idx),
                                   gpuarray.to_gpu(src_idx), dest_shape=(96,),
                                   src_offsets=[i * field for i in range(n)])
    for i, o in enumerate(outs):
        got = o.get()
        np.testing.assert_array_equal(got[dest_idx], buf[src_idx + i * field])


@gpu
def test_multi_take_put_offset_past_the_end_raises(rng):
    g = gpuarray.to_gpu(data(rng, 16, np.float32))
    with pytest.raises(IndexError, match="offset"):
        gpuarray.multi_take_put([g], gpuarray.to_gpu(np.array([0], np.uint32)),
                                gpuarray.to_gpu(np.array([8], np.uint32)), dest_shape=(4,),
                                src_offsets=[8])


# ------------------------------------------------------------------ ReductionKernel


@gpu
def test_reduction_kernel_pycuda_form(rng):
    x, y = data(rng, 30_000, np.float32), data(rng, 30_000, np.float32)
    k = ReductionKernel(np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i]*y[i]",
                        arguments="const float *x, const float *y")
    r = k(gpuarray.to_gpu(x), gpuarray.to_gpu(y))
    assert r.shape == () and r.dtype == np.float32
    np.testing.assert_allclose(r.get(), np.dot(x, y), rtol=1e-4, atol=1e-2)


@gpu
def test_reduction_kernel_out_into_a_view(rng):
    a = data(rng, 2000, np.float32).reshape(10, 200)
    ga = gpuarray.to_gpu(a)
    red = ReductionKernel(np.float32, neutral=-np.inf, reduce_expr="max(a,b)",
                          arguments="float *in")
    m = gpuarray.to_gpu(np.full(10, np.nan, np.float32))
    for i in range(10):
        red(ga[i], out=m[i])
    np.testing.assert_array_equal(m.get(), a.max(axis=1))


@gpu
def test_reduction_kernel_with_a_scalar_and_nvcc_options(rng):
    x = data(rng, 4096, np.float64)
    k = ReductionKernel(np.float64, "0", "a+b", "s*x[i]", "double s, const double *x",
                        options=["-O3", "-DUNUSED=1"])
    np.testing.assert_allclose(k(np.float64(2.5), gpuarray.to_gpu(x)).get(), 2.5 * x.sum(),
                               rtol=1e-12, atol=1e-9)


@gpu
def test_sum_and_dot_kernels(rng):
    x, y = data(rng, 1000, np.float32), data(rng, 1000, np.int32)
    s = get_sum_kernel(np.float64, np.float32)(gpuarray.to_gpu(x))
    assert s.dtype == np.float64
    np.testing.assert_allclose(s.get(), x.astype(np.float64).sum(), rtol=1e-12)
    d = get_dot_kernel(np.float64, np.float32, np.int32)(gpuarray.to_gpu(x), gpuarray.to_gpu(y))
    np.testing.assert_allclose(d.get(), np.dot(x.astype(np.float64), y), rtol=1e-12)


def test_reduction_kernel_unknown_nvcc_option_raises():
    with pytest.raises(ValueError, match="nvcc option"):
        ReductionKernel(np.float32, "0", "a+b", arguments="float *in",
                        options=["--no-such-option"])


# ------------------------------------------------------------------ struct reductions

MINMAX = np.dtype([("lo", np.float32), ("hi", np.float32)])
MINMAX_C = """
struct ck_minmax {
    float lo, hi;
    __device__ ck_minmax() {}
    __device__ ck_minmax(float l, float h) : lo(l), hi(h) {}
};
__device__ ck_minmax widen(ck_minmax a, ck_minmax b) {
    return ck_minmax(fminf(a.lo, b.lo), fmaxf(a.hi, b.hi));
}
static_assert(sizeof(ck_minmax) == 8, "the numpy dtype's layout");
"""
# int then double: 4 bytes of padding, as numpy lays it out with align=True
POSSUM = np.dtype([("n", np.int32), ("s", np.float64)], align=True)
POSSUM_C = """
struct ck_possum { int n; double s; };
__device__ ck_possum make_possum(int n, double s) { ck_possum r; r.n = n; r.s = s; return r; }
__device__ ck_possum add_possum(ck_possum a, ck_possum b) {
    return make_possum(a.n + b.n, a.s + b.s);
}
static_assert(sizeof(ck_possum) == 16, "the numpy dtype's layout");
"""


def minmax_kernel():
    from cukit.pycuda.tools import register_dtype
    register_dtype(MINMAX, "ck_minmax")
    return ReductionKernel(MINMAX, neutral="ck_minmax(3e38f, -3e38f)",
                           reduce_expr="widen(a, b)", map_expr="ck_minmax(x[i], x[i])",
                           arguments="const float *x", preamble=MINMAX_C)


@gpu
@pytest.mark.parametrize("n", [1, 1000, 100_003])
def test_struct_reduction_is_numpys_min_and_max(rng, n):
    x = data(rng, n, np.float32)
    r = minmax_kernel()(gpuarray.to_gpu(x))
    assert isinstance(r, gpuarray.GPUArray) and r.shape == () and r.dtype == MINMAX
    got = r.get()
    assert got.dtype == MINMAX and got.shape == ()
    assert got["lo"] == x.min() and got["hi"] == x.max()


@gpu
def test_struct_reduction_into_out(rng):
    x = data(rng, 5000, np.float32)
    out = gpuarray.to_gpu(np.array((np.nan, np.nan), MINMAX))  # poisoned
    r = minmax_kernel()(gpuarray.to_gpu(x), out=out)
    assert r is out
    assert out.get()["lo"] == x.min() and out.get()["hi"] == x.max()


@gpu
@pytest.mark.parametrize("n", [7, 40_000])
def test_struct_of_int_and_double(rng, n):
    from cukit.pycuda.tools import get_or_register_dtype
    get_or_register_dtype("ck_possum", POSSUM)
    x = data(rng, n, np.float64)
    k = ReductionKernel(POSSUM, neutral="make_possum(0, 0.0)", reduce_expr="add_possum(a, b)",
                        map_expr="x[i] > t ? make_possum(1, x[i]) : make_possum(0, 0.0)",
                        arguments="const double *x, double t", preamble=POSSUM_C)
    t = float(rng.standard_normal())
    got = k(gpuarray.to_gpu(x), np.float64(t)).get()
    assert got.dtype == POSSUM
    assert got["n"] == np.count_nonzero(x > t)
    np.testing.assert_allclose(got["s"], x[x > t].sum(), rtol=1e-12, atol=1e-9)


def test_registered_struct_names():
    from cukit.pycuda.tools import TypeNameNotKnown, dtype_to_ctype, get_or_register_dtype
    dt = np.dtype([("a", np.int16), ("b", np.float32)])
    assert get_or_register_dtype(["ck_pair", "ck_pair_alias"], dt) == dt
    assert dtype_to_ctype(dt) == "ck_pair"
    assert get_or_register_dtype("ck_pair_alias") == dt
    with pytest.raises(RuntimeError, match="already registered"):
        get_or_register_dtype("ck_pair", np.dtype([("a", np.int8)]))
    with pytest.raises(TypeNameNotKnown, match="no dtype"):
        get_or_register_dtype("ck_never_registered")


def test_struct_reduction_of_an_unregistered_dtype_raises():
    dt = np.dtype([("ck_unnamed_a", np.float32), ("ck_unnamed_b", np.int16)])
    with pytest.raises(TypeError, match=r"no C name; register it first with "
                                        r"pycuda\.tools\.register_dtype"):
        ReductionKernel(dt, neutral="0", reduce_expr="a", map_expr="x[i]",
                        arguments="const float *x")


def test_cukit_struct_reduction_needs_its_c_name():
    with pytest.raises(TypeError, match="struct dtype: pass ctype="):
        cukit.ReductionKernel(MINMAX, "ck_minmax(0, 0)", "widen(a, b)", "ck_minmax(x[i], x[i])",
                              "const float *x", preamble=MINMAX_C)
    with pytest.raises(TypeError, match="is not a struct: leave ctype out"):
        cukit.ReductionKernel(np.float32, "0", "a+b", "x[i]", "const float *x", ctype="float")
    with pytest.raises(ValueError, match="must be the C name of dtype_out's struct"):
        cukit.ReductionKernel(MINMAX, "0", "a", "x[i]", "const float *x", ctype="a; int b")


@gpu
def test_struct_reduction_out_of_another_dtype_raises(rng):
    x = gpuarray.to_gpu(data(rng, 100, np.float32))
    with pytest.raises(ValueError, match=r"output must be an array of dtype .*lo"):
        minmax_kernel()(x, out=gpuarray.to_gpu(np.zeros((), np.float64)))


# ------------------------------------------------------------------ scans


@gpu
@pytest.mark.parametrize("cls", [InclusiveScanKernel, ExclusiveScanKernel])
@pytest.mark.parametrize("n", [10, 2**10 - 5, 2**20 + 5])
def test_scan_in_place(rng, cls, n):
    x = rng.integers(0, 10, n).astype(np.int32)
    g = gpuarray.to_gpu(x)
    r = cls(np.int32, "a+b", "0")(g)
    assert r is g
    want = np.cumsum(x, dtype=np.int32)
    if cls is ExclusiveScanKernel:
        want -= x
    np.testing.assert_array_equal(g.get(), want)


@gpu
def test_scan_into_an_output_of_a_2d_array(rng):
    x = rng.standard_normal((30, 40))
    out = gpuarray.to_gpu(np.full((30, 40), np.nan))
    r = InclusiveScanKernel(np.float64, "a+b")(gpuarray.to_gpu(x), out)
    assert r is out
    np.testing.assert_allclose(out.get().ravel(), np.cumsum(x.ravel()), rtol=1e-12, atol=1e-9)


@gpu
def test_scan_with_a_custom_operator(rng):
    x = rng.integers(0, 256, 5000).astype(np.uint8)
    g = gpuarray.to_gpu(x)
    InclusiveScanKernel(np.uint8, "(a+b) & 0xff")(g)
    np.testing.assert_array_equal(g.get(), np.cumsum(x.astype(np.int64)) & 0xFF)


def test_exclusive_scan_needs_neutral():
    with pytest.raises(TypeError):
        ExclusiveScanKernel(np.int32, "a+b")


# ------------------------------------------------------------------ random numbers


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_curandom_rand_is_uniform(dtype):
    a = curandom.rand((10, 1000), dtype=dtype)
    assert isinstance(a, gpuarray.GPUArray) and a.dtype == np.dtype(dtype)
    h = a.get()
    assert h.shape == (10, 1000) and (h >= 0).all() and (h < 1).all()
    assert abs(h.mean() - 0.5) < 0.02 and abs(h.var() - 1 / 12) < 0.01


@gpu
def test_curandom_rand_integers_cover_the_range():
    h = curandom.rand((200_000,), dtype=np.int32).get()
    assert h.dtype == np.int32 and h.min() < -(2**30) and h.max() > 2**30


@gpu
def test_curandom_rand_complex():
    h = curandom.rand(1000, dtype=np.complex64).get()
    assert h.dtype == np.complex64 and (h.real >= 0).all() and (h.imag < 1).all()
    assert not np.array_equal(h.real, h.imag)


@gpu
@pytest.mark.parametrize("cls", [curandom.XORWOWRandomNumberGenerator,
                                 curandom.MRG32k3aRandomNumberGenerator])
def test_generator_classes(cls):
    g = cls()
    for dtype in (np.float32, np.float64):
        u = g.gen_uniform(10_000, dtype).get()
        assert u.dtype == np.dtype(dtype) and (u >= 0).all() and (u < 1).all()
        z = g.gen_normal(10_001, dtype).get()
        assert abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05
        ln = g.gen_log_normal(10_000, dtype, 1.0, 0.5).get()
        assert (ln > 0).all() and abs(np.log(ln).mean() - 1.0) < 0.05
    u32 = g.gen_uniform(10_000, np.uint32).get()
    assert u32.dtype == np.uint32 and u32.max() > 2**31
    p = g.gen_poisson(100_000, np.uint32, 13.0).get()
    assert p.dtype == np.uint32 and abs(p.mean() - 13.0) < 0.1
    a = gpuarray.empty(100_000, np.float32).fill(10)
    g.fill_poisson(a, 10.0)
    assert abs(a.get().mean() - 10.0) < 0.1


@gpu
def test_generators_with_one_seed_agree():
    a = curandom.XORWOWRandomNumberGenerator(lambda n: gpuarray.to_gpu(np.full(n, 7, np.int32)))
    b = curandom.XORWOWRandomNumberGenerator(lambda n: gpuarray.to_gpu(np.full(n, 7, np.int32)))
    np.testing.assert_array_equal(a.gen_uniform(1000, np.float32).get(),
                                  b.gen_uniform(1000, np.float32).get())


@gpu
def test_fill_poisson_without_a_mean_is_refused():
    g = curandom.XORWOWRandomNumberGenerator()
    with pytest.raises(cukit.NotSupportedError, match="lambda_value"):
        g.fill_poisson(gpuarray.empty(10, np.float32))


@gpu
def test_fill_uniform_of_int8_is_refused():
    with pytest.raises(TypeError, match="32-bit"):
        curandom.XORWOWRandomNumberGenerator().fill_uniform(gpuarray.empty(10, np.int8))


def test_no_curand_and_no_sobol():
    assert curandom.get_curand_version() is None
    with pytest.raises(cukit.NotSupportedError, match="Sobol"):
        curandom.Sobol32RandomNumberGenerator()


# ------------------------------------------------------------------ logical operations


@gpu
def test_logical_operations(rng):
    x, y = rng.standard_normal((10, 4)), rng.standard_normal((10, 4))
    x[x < 0.3] = 0
    gx, gy = gpuarray.to_gpu(x), gpuarray.to_gpu(y)
    np.testing.assert_array_equal(gpuarray.logical_not(gx).get(), np.logical_not(x))
    np.testing.assert_array_equal(gpuarray.logical_and(gx, gy).get(), np.logical_and(x, y))
    np.testing.assert_array_equal(gpuarray.logical_or(gx, 0.0).get(), np.logical_or(x, 0.0))


@gpu
def test_hstack(rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 2))
    np.testing.assert_array_equal(
        gpuarray.hstack([gpuarray.to_gpu(a), gpuarray.to_gpu(b)]).get(), np.hstack([a, b]))
    c, d = rng.standard_normal(3), rng.standard_normal(5)
    np.testing.assert_array_equal(
        gpuarray.hstack([gpuarray.to_gpu(c), gpuarray.to_gpu(d)]).get(), np.hstack([c, d]))



# ------------------------------------------------------------------ cumath and GPUArray


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cumath_ldexp_frexp_modf(rng, dtype):
    from cukit.pycuda import cumath
    x = (rng.standard_normal(5000) * 100).astype(dtype)
    e = rng.integers(-20, 20, 5000).astype(dtype)
    g, ge = gpuarray.to_gpu(x), gpuarray.to_gpu(e)
    np.testing.assert_array_equal(cumath.ldexp(g, ge).get(), np.ldexp(x, e.astype(np.int32)))
    sig, ex = cumath.frexp(g)
    want_sig, want_ex = np.frexp(x)
    np.testing.assert_array_equal(sig.get(), want_sig)
    np.testing.assert_array_equal(ex.get(), want_ex.astype(dtype))
    frac, whole = cumath.modf(g)
    want_frac, want_whole = np.modf(x)
    np.testing.assert_array_equal(frac.get(), want_frac)
    np.testing.assert_array_equal(whole.get(), want_whole)


def test_cumath_frexp_of_integers_is_refused():
    from cukit.pycuda import cumath
    with pytest.raises(TypeError, match="float32 or float64"):
        cumath._float_kernel("frexp", np.int32, "T *x", "x[i] = 0")


@gpu
def test_cumath_out_and_stream_by_position(rng):
    from cukit.pycuda import cumath
    x = rng.standard_normal(1000)
    g = gpuarray.to_gpu(x)
    out = gpuarray.to_gpu(np.full(1000, np.nan))
    assert cumath.exp(g, out) is out
    np.testing.assert_allclose(out.get(), np.exp(x), rtol=1e-14)
    s = cukit.pycuda.driver.Stream()
    np.testing.assert_allclose(cumath.sin(g, s).get(), np.sin(x), rtol=1e-14, atol=1e-15)


@gpu
def test_mul_add_and_conj_into_out(rng):
    a, b = data(rng, 1000, np.float32), data(rng, 1000, np.float32)
    ga, gb = gpuarray.to_gpu(a), gpuarray.to_gpu(b)
    out = gpuarray.to_gpu(np.full(1000, np.nan, np.float32))
    assert ga.mul_add(2, gb, 3, out=out) is out
    np.testing.assert_allclose(out.get(), 2 * a + 3 * b, rtol=1e-6)
    z = data(rng, 100, np.complex128)
    zo = gpuarray.to_gpu(np.full(100, np.nan, np.complex64))
    assert gpuarray.to_gpu(z).conj(out=zo) is zo
    np.testing.assert_allclose(zo.get(), z.conj().astype(np.complex64), rtol=1e-6)


def test_reduction_kernel_takes_at_most_eight_inputs(rng):
    """PyCUDA's form adds the output after the argument list: a ninth input used to be
    written past the end of the kernel's parameter table (found in review)."""
    import numpy as np
    from cukit.pycuda import gpuarray
    from cukit.pycuda.reduction import ReductionKernel

    args8 = ", ".join("float *x%d" % i for i in range(8))
    r = ReductionKernel(np.float32, neutral="0", reduce_expr="a+b", map_expr="x0[i] + x7[i]",
                        arguments=args8)
    host = [rng.standard_normal(500).astype(np.float32) for _ in range(8)]
    got = r(*[gpuarray.to_gpu(h) for h in host]).get()
    np.testing.assert_allclose(got, (host[0] + host[7]).sum(), rtol=1e-4, atol=1e-3)
    with pytest.raises(ValueError, match="at most 8 inputs"):
        ReductionKernel(np.float32, neutral="0", reduce_expr="a+b", map_expr="x0[i]",
                        arguments=args8 + ", float *x8")
