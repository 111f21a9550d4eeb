"""float8_e4m3fn and float8_e5m2 (ml_dtypes): storage, copies, views, astype, DLPack.

Casts are compared bit for bit with ml_dtypes' own (every float8 pattern to each dtype;
to float8 from random bit patterns of every float type, all 65536 float16 and bfloat16
patterns, values at and beside every rounding tie, the overflow edges, NaN payloads,
-0.0); math on a float8 raises TypeError naming astype as the fix."""
import ctypes
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cukit
from conftest import EMULATOR

ml_dtypes = pytest.importorskip("ml_dtypes")
E4 = np.dtype(ml_dtypes.float8_e4m3fn)
E5 = np.dtype(ml_dtypes.float8_e5m2)
BF = np.dtype(ml_dtypes.bfloat16)
F8 = [E4, E5]
IDS = ["e4m3fn", "e5m2"]
OTHERS = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
gpu = pytest.mark.gpu


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind != "c" else a.view(f"u{a.dtype.itemsize // 2}")


def every(f8):
    """All 256 patterns of a float8: NaNs, infinities (e5m2), both zeros, subnormals."""
    return np.arange(256, dtype=np.uint8).view(f8)


def ml_cast(x, dtype):
    with np.errstate(all="ignore"):
        return x.astype(dtype)


def cast(x, dtype):
    return cukit.to_device(x).astype(dtype).get()


# ------------------------------------------------------------------ no GPU needed


def test_missing_ml_dtypes_says_to_install_it():
    code = textwrap.dedent("""
        import sys
        sys.modules["ml_dtypes"] = None   # import ml_dtypes fails
        import cukit
        for name in ("float8_e4m3fn", "float8_e5m2"):
            try:
                cukit.zeros(3, dtype=name)
            except TypeError as e:
                print("TypeError:", e)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for name in ("float8_e4m3fn", "float8_e5m2"):
        assert f"TypeError: dtype '{name}' is numpy's through the ml_dtypes package" in r.stdout
    assert r.stdout.count("pip install ml_dtypes") == 2


def test_names_without_import():
    code = ("import cukit; print(cukit.zeros(2, dtype='float8_e4m3fn').dtype, "
            "cukit.empty(2, dtype='float8_e5m2').dtype)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.split() == ["float8_e4m3fn", "float8_e5m2"], r.stderr


def test_ml_dtypes_rules_that_the_kernels_follow():
    """The facts of the float8 formats the conversions copy (the formats', the same in
    every ml_dtypes): e4m3fn has no infinity and turns overflow into NaN past the tie
    with 448; e5m2 rounds to infinity; NaNs are quiet with their sign. How float64
    rounds (once, or through float32) is the installed ml_dtypes' own: the casts
    below follow it."""
    f = np.array([448, 464, 464.1, np.inf, -np.inf, 57344, 61439, 61440, np.nan, -np.nan],
                 np.float32)
    assert list(bits(ml_cast(f[:5], E4))) == [0x7e, 0x7e, 0x7f, 0x7f, 0xff]
    assert list(bits(ml_cast(f[5:], E5))) == [0x7b, 0x7b, 0x7c, 0x7e, 0xfe]


@gpu
@pytest.mark.parametrize("f8", F8, ids=IDS)
def test_float64_and_wide_ints_round_as_the_installed_ml_dtypes(f8, rng):
    """Just past a tie of the float8 (where one rounding and a rounding through float32
    differ), from float64 and from int64, bit for bit with the installed ml_dtypes."""
    m = 3 if f8 == E4 else 2
    x = np.ldexp(1.0 + 2.0 ** -(m + 1) + rng.random(400) * 2.0 ** -30, rng.integers(-6, 6, 400))
    x = np.concatenate([x, -x])
    np.testing.assert_array_equal(bits(cast(x, f8)), bits(ml_cast(x, f8)))
    k = rng.integers(m + 2, 12, 400)
    i = np.concatenate([(1 << k) + (1 << (k - m - 1)) + 1, -((1 << k) + (1 << (k - m - 1)) + 1)])
    for t in (np.int64, np.int32):
        np.testing.assert_array_equal(bits(cast(i.astype(t), f8)), bits(ml_cast(i.astype(t), f8)))


# ------------------------------------------------------------------ storage

@gpu
@pytest.mark.parametrize("f8", F8, ids=IDS)
def test_creation_copies_and_views(f8, rng):
    x = every(f8)
    d = cukit.to_device(x)
    assert d.dtype == f8 and d.itemsize == 1 and d.nbytes == 256
    np.testing.assert_array_equal(bits(d.get()), bits(x))  # NaN payloads too: a raw copy
    assert repr(d) == repr(x)  # numpy's printing, from the device
    a = cukit.asarray(x.reshape(16, 16))
    np.testing.assert_array_equal(bits(a[3:11:2, ::-3].get()), bits(x.reshape(16, 16)[3:11:2, ::-3]))
    np.testing.assert_array_equal(bits(a.T.copy().get()), bits(x.reshape(16, 16).T))
    assert cukit.zeros((3, 4), f8).get().view(np.uint8).sum() == 0
    assert cukit.empty(5, f8.name).dtype == f8
    h = rng.standard_normal(1000).astype(np.float32).astype(f8)
    b = cukit.to_device(h)
    np.testing.assert_array_equal(bits(b.get()), bits(h))
    b[100:200] = h[:100]  # host data of the same dtype
    want = h.copy()
    want[100:200] = h[:100]
    np.testing.assert_array_equal(bits(b.get()), bits(want))


# ------------------------------------------------------------------ casts from float8

@gpu
@pytest.mark.parametrize("dst", OTHERS + ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("f8", F8, ids=IDS)
def test_astype_from_every_pattern(f8, dst):
    """Every float8 value to each dtype, bit for bit with ml_dtypes, NaNs included (to
    integers: the values the integer holds; NaN and beyond the range follow the float32
    rule, as for bfloat16)."""
    x = every(f8)
    dst = np.dtype(getattr(ml_dtypes, dst)) if dst in ("bfloat16", "float8_e4m3fn", "float8_e5m2") \
        else np.dtype(dst)
    want, got = ml_cast(x, dst), cast(x, dst)
    assert got.dtype == want.dtype
    if dst.kind in "iu":
        f = x.astype(np.float64)
        info = np.iinfo(dst)
        ok = np.isfinite(f) & (f > info.min - 1) & (f < info.max + 1)
        assert ok.sum() > 30
        np.testing.assert_array_equal(got[ok], want[ok])
        np.testing.assert_array_equal(got, cast(x.astype(np.float32), dst))
    else:
        np.testing.assert_array_equal(bits(got), bits(want))


@gpu
@pytest.mark.parametrize("f8", F8, ids=IDS)
def test_astype_of_strided_views(f8, rng):
    h = rng.standard_normal((40, 30)).astype(np.float32) * 50
    x = ml_cast(h, f8)
    a = cukit.to_device(x)
    for key in [(slice(None, None, 3), slice(1, None, 2)), (Ellipsis, 5), (slice(None, None, -1),)]:
        np.testing.assert_array_equal(a[key].astype(np.float32).get(), x[key].astype(np.float32))
    np.testing.assert_array_equal(bits(a.T.astype(BF).get()), bits(ml_cast(x.T, BF)))
    b = cukit.to_device(h)
    np.testing.assert_array_equal(bits(b[::2, ::-1].astype(f8).get()), bits(ml_cast(h[::2, ::-1], f8)))


# ------------------------------------------------------------------ casts to float8

def ties(f8):
    """float32 values at, just below and just above every half-way point between two
    neighbouring float8 values (and past the largest), both signs."""
    v = every(f8).astype(np.float32)
    v = np.unique(v[np.isfinite(v) & (v >= 0)])
    mid = (v[:-1].astype(np.float64) + v[1:]) / 2
    top = v[-1] + (v[-1] - v[-2]) / 2  # the tie with the next binade's first value
    mid = np.append(mid, [top, 2 * v[-1]]).astype(np.float32)
    near = np.concatenate([mid, np.nextafter(mid, 0), np.nextafter(mid, np.inf)])
    return np.concatenate([near, -near])


@gpu
@pytest.mark.parametrize("f8", F8, ids=IDS)
def test_astype_from_float32_bits(f8, rng):
    """Random float32 bit patterns (every exponent: NaN payloads, infinities, float32
    subnormals), every tie, the overflow edges, -0.0: bit for bit with ml_dtypes."""
    u = rng.integers(0, 1 << 32, 100_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    small = (rng.standard_normal(20_000) * rng.choice([2.0**-12, 2.0**-6, 1, 64, 1e4], 20_000))
    edges = np.array([0.0, -0.0, 448, 464, 465, 480, 57344, 61439, 61440, 65536, np.inf, -np.inf,
                      2.0**-9, 2.0**-10, 3 * 2.0**-11, 2.0**-16, 2.0**-17, 3 * 2.0**-18, 1e-45])
    specials = np.array([0x7f800001, 0x7fbfffff, 0xffc00001, 0x7fffffff, 0xff800000,
                         0x00000001, 0x807fffff], np.uint32).view(np.float32)
    x = np.concatenate([specials, edges.astype(np.float32), ties(f8), small.astype(np.float32), u])
    np.testing.assert_array_equal(bits(cast(x, f8)), bits(ml_cast(x, f8)))


@gpu
@pytest.mark.parametrize("src", ["float16", "bfloat16"])
@pytest.mark.parametrize("f8", F8, ids=IDS)
def test_astype_from_every_16_bit_pattern(f8, src):
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(BF if src == "bfloat16" else src)
    np.testing.assert_array_equal(bits(cast(x, f8)), bits(ml_cast(x, f8)))


@gpu
@pytest.mark.parametrize("src", [t for t in OTHERS if t not in ("float16", "float32")])
@pytest.mark.parametrize("f8", F8, ids=IDS)
def test_astype_to_float8(f8, src, rng):
    """Each other dtype to float8 on fresh random values of its whole range and of the
    float8's range, bit for bit (float64 rounds through float32, as ml_dtypes does)."""
    d = np.dtype(src)
    if d.kind == "b":
        x = rng.random(3000) < 0.5
    elif d.kind in "iu":
        info = np.iinfo(d)
        x = np.concatenate([rng.integers(info.min, info.max, 3000, dtype=d, endpoint=True),
                            rng.integers(max(info.min, -70000), min(info.max, 70000), 3000).astype(d),
                            np.array([info.min, info.max, 0, 1, min(info.max, 464)], d)])
    elif d.kind == "f":
        x = rng.integers(0, 1 << 64, 30000, dtype=np.uint64).view(np.float64)
        near = ties(f8).astype(np.float64)
        x = np.concatenate([x, near, near * (1 + 2.0**-30), near * (1 - 2.0**-30),
                            rng.standard_normal(5000) * 100])
    else:
        re = np.concatenate([rng.standard_normal(3000) * 100, ties(f8), [np.nan, -np.nan]])
        x = (re + 1j * rng.standard_normal(re.size)).astype(d)
    np.testing.assert_array_equal(bits(cast(x, f8)), bits(ml_cast(x, f8)))


@gpu
def test_astype_to_its_own_dtype_keeps_every_bit():
    """e5m2 has several NaN patterns: a copy keeps them, as numpy's astype does."""
    for f8 in F8:
        x = every(f8)
        np.testing.assert_array_equal(bits(cast(x, f8)), bits(x))
        d = cukit.to_device(x)
        assert d.astype(f8, copy=False) is d


@gpu
@pytest.mark.parametrize("f8", F8, ids=IDS)
def test_concatenate_and_stack(f8, rng):
    """Copies of float8 arrays join their own dtype; another dtype needs dtype=."""
    x = ml_cast(rng.standard_normal((5, 6)).astype(np.float32) * 30, f8)
    a = cukit.to_device(x)
    np.testing.assert_array_equal(bits(cukit.concatenate([a, a[::-1, ::2]], axis=1).get()),
                                  bits(np.concatenate([x, x[::-1, ::2]], axis=1)))
    np.testing.assert_array_equal(bits(cukit.stack([a, a.T.T]).get()), bits(np.stack([x, x])))
    f = cukit.to_device(rng.standard_normal((5, 6)).astype(np.float32))
    with pytest.raises(TypeError, match=r"float8 arrays join only arrays of their own dtype "
                                        r"\(here float32 and float8_.*\); pass dtype="):
        cukit.concatenate([f, a])
    got = cukit.concatenate([a, f], dtype=np.float32).get()
    np.testing.assert_array_equal(got, np.concatenate([x.astype(np.float32), f.get()]))
    got = cukit.concatenate([f, a], dtype=f8).get()
    np.testing.assert_array_equal(bits(got), bits(np.concatenate([ml_cast(f.get(), f8), x])))


# ------------------------------------------------------------------ DLPack

class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32), ("dtype", DLDataType)]


class DLVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_get = ctypes.pythonapi.PyCapsule_GetPointer
_get.restype, _get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


@gpu
@pytest.mark.parametrize("f8,code", [(E4, 10), (E5, 12)], ids=IDS)
def test_dlpack_codes_and_round_trip(f8, code, rng):
    """DLPack 1.1's kDLFloat8_e4m3fn (10) and kDLFloat8_e5m2 (12), 8 bits, 1 lane; a
    versioned capsule says 1.1; from_dlpack gives the same memory back as float8."""
    x = ml_cast(rng.standard_normal(300).astype(np.float32) * 20, f8)
    a = cukit.to_device(x)
    cap = a.__dlpack__()
    t = DLTensor.from_address(_get(cap, b"dltensor"))
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes, t.ndim) == (code, 8, 1, 1)
    assert t.data == a.ptr
    vcap = a.__dlpack__(max_version=(1, 1))
    v = DLVersioned.from_address(_get(vcap, b"dltensor_versioned"))
    assert (v.major, v.minor, v.dl_tensor.dtype.code) == (1, 1, code)
    b = cukit.from_dlpack(cap)
    assert b.dtype == f8 and b.ptr == a.ptr and b.shape == a.shape
    b[:] = np.full(300, 2.0, f8)
    assert (a.get().astype(np.float32) == 2.0).all()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        tt = torch.from_dlpack(a)
        assert tt.dtype == {10: torch.float8_e4m3fn, 12: torch.float8_e5m2}[code]


# ------------------------------------------------------------------ no math on float8

@gpu
def test_math_raises_naming_the_fix():
    a = cukit.to_device(np.ones(4, E4))
    fix = r"float8 is a storage type in cukit; convert first with \.astype\(numpy\.float32\)"
    for call in (lambda: a + a, lambda: a * 2, lambda: -a, lambda: cukit.exp(a),
                 lambda: a < 1, lambda: cukit.sum(a), lambda: cukit.where(a > 0, a, a)):
        with pytest.raises(TypeError, match=fix):
            call()
    with pytest.raises(TypeError, match=fix):
        cukit.add(cukit.ones(4), cukit.ones(4), dtype=E5)
    with pytest.raises(TypeError, match="float8_e5m2.*" + fix):
        cukit.multiply(cukit.ones(4), 2.0, out=cukit.empty(4, E5))
    np.testing.assert_array_equal((a.astype(np.float32) * 3).astype(E4).get(), np.full(4, 3, E4))


# ------------------------------------------------------------------ CUDA's own float8 types

FP8_KERNEL = r"""
#include <cuda_fp8.h>
extern "C" __global__ void k(const float *x, const __half *h, __nv_fp8_e4m3 *a, __nv_fp8_e5m2 *b,
                             __nv_fp8_e4m3 *ah, __nv_fp8_e5m2 *bh, float *back, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        a[i] = __nv_fp8_e4m3(x[i]); b[i] = __nv_fp8_e5m2(x[i]);
        ah[i] = __nv_fp8_e4m3(h[i]); bh[i] = __nv_fp8_e5m2(h[i]);
        back[2 * i] = float(a[i]); back[2 * i + 1] = float(b[i]);
    }
}
"""


@gpu
def test_cuda_fp8_kernels_saturate_and_take_float8_arrays(rng):
    """A kernel using cuda_fp8.h (cvt.rn.satfinite.e4m3x2.f32 and kin on sm_89 and later,
    which the emulator runs too) takes float8 arrays as __nv_fp8_e4m3* / __nv_fp8_e5m2*,
    and its conversions are ml_dtypes' of the value clipped to the largest finite one
    (CUDA's __NV_SATFINITE); back to float exactly."""
    n = 6000
    x = (rng.standard_normal(n) * rng.choice([1e-4, 1e-2, 1, 100, 1e4, 1e6], n)).astype(np.float32)
    x[:12] = [np.inf, -np.inf, 448, 464, 465, -480, 57344, 61440, -0.0, 2.0**-10, 3 * 2.0**-18, 1e-40]
    x[12:14] = np.nan
    h = x.astype(np.float16)
    k = cukit.compile(FP8_KERNEL).get_kernel("k")
    a, b, ah, bh = (cukit.empty(n, t) for t in (E4, E5, E4, E5))
    back = cukit.empty(2 * n, np.float32)
    k(cukit.to_device(x), cukit.to_device(h), a, b, ah, bh, back, np.int32(n), grid=(n + 255) // 256,
      block=256)
    for got, src, f8, top in [(a, x, E4, 448), (b, x, E5, 57344), (ah, h, E4, 448), (bh, h, E5, 57344)]:
        g = got.get()
        num = ~np.isnan(src)
        want = ml_cast(np.clip(src[num].astype(np.float32), -top, top), f8)
        np.testing.assert_array_equal(bits(g[num]), bits(want))
        assert np.isnan(g[~num].astype(np.float32)).all()
    fb = back.get().reshape(n, 2)
    for j, got in enumerate((a, b)):
        want = got.get().astype(np.float32)
        np.testing.assert_array_equal(np.isnan(fb[:, j]), np.isnan(want))
        np.testing.assert_array_equal(fb[:, j][~np.isnan(want)], want[~np.isnan(want)])
    with pytest.raises(TypeError, match="kernel reads"):
        k(cukit.to_device(x), cukit.to_device(h), cukit.empty(n, np.float32), b, ah, bh, back,
          np.int32(n), grid=1, block=32)


RELU_PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p) {
    .reg .b16 %rs<2>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    mov.f32 %f1, 0f3F800000;
    mov.f32 %f2, 0fBF800000;
    cvt.rn.satfinite.relu.e4m3x2.f32 %rs1, %f1, %f2;
    st.global.u16 [%rd1], %rs1;
    ret;
}
"""


@pytest.mark.skipif(not EMULATOR, reason="the emulator's refusal")
def test_the_emulator_refuses_the_float8_forms_it_lacks():
    with pytest.raises(cukit.NotSupportedError, match=r"cvt\.rn\.satfinite\.relu\.e4m3x2\.f32"):
        cukit.Module.load(RELU_PTX.encode())
    ok = RELU_PTX.replace(".relu", "")
    k = cukit.Module.load(ok.encode()).get_kernel("k", signature="(unsigned short *p)")
    o = cukit.zeros(1, np.uint16)
    k(o, grid=1, block=1)
    assert o.get()[0] == 0x38b8  # 1.0 high byte (0x38), -1.0 low (0xb8)
