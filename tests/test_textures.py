"""CUDA arrays, texture objects and surface objects: sampling against numpy, copies, lifetimes, bad input."""
import gc
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import cukit
from conftest import poison



gpu = pytest.mark.gpu


SRC = r"""
extern "C" __global__ void sample2d(cudaTextureObject_t tex, const float* xs, const float* ys,
                                    float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float>(tex, xs[i], ys[i]);
}

extern "C" __global__ void sample1d(cudaTextureObject_t tex, const float* xs, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1D<float>(tex, xs[i]);
}

// Every texel read at its centre: point sampling must give it back exactly.
extern "C" __global__ void texels2d(cudaTextureObject_t tex, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) out[y * w + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
}

extern "C" __global__ void texels_uchar4(cudaTextureObject_t tex, uchar4* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) out[y * w + x] = tex2D<uchar4>(tex, x + 0.5f, y + 0.5f);
}

extern "C" __global__ void texels_norm_u8(cudaTextureObject_t tex, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) out[y * w + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
}

extern "C" __global__ void texels_layered(cudaTextureObject_t tex, float* out, int w, int h,
                                          int layers) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, l = blockIdx.z;
    if (x < w && y < h && l < layers)
        out[(l * h + y) * w + x] = tex2DLayered<float>(tex, x + 0.5f, y + 0.5f, l);
}

extern "C" __global__ void texels3d(cudaTextureObject_t tex, float* out, int w, int h, int d) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
    if (x < w && y < h && z < d)
        out[(z * h + y) * w + x] = tex3D<float>(tex, x + 0.5f, y + 0.5f, z + 0.5f);
}

extern "C" __global__ void fetch_int(cudaTextureObject_t tex, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<int>(tex, i);
}

// Read what is there, write 2 * in + it back: the surface is read and written.
extern "C" __global__ void surf_update(cudaSurfaceObject_t surf, const float* in, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) {
        float v;
        surf2Dread(&v, surf, x * (int)sizeof(float), y);
        surf2Dwrite(2.0f * in[y * w + x] + v, surf, x * (int)sizeof(float), y);
    }
}

extern "C" __global__ void surf_read(cudaSurfaceObject_t surf, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) surf2Dread(&out[y * w + x], surf, x * (int)sizeof(float), y);
}

// Reads the texture many times, so that it is still running when the host lets go.
extern "C" __global__ void slow_sum(cudaTextureObject_t tex, float* out, int w, int iters) {
    int x = threadIdx.x;
    float s = 0.0f;
    for (int k = 0; k < iters; k++) s += tex1Dfetch<float>(tex, (x + k) % w);
    out[x] = s;
}

typedef unsigned long long MyTex;
extern "C" __global__ void via_typedef(MyTex tex, float* out) { out[0] = tex2D<float>(tex, 0.5f, 0.5f); }

extern "C" __global__ void takes_pointer(const float* p, float* out) { out[0] = p[0]; }
"""


@pytest.fixture(scope="module")
def mod():
    return cukit.compile(SRC)


def launch2d(k, *args, w, h, d=1):
    k(*args, grid=((w + 63) // 64, h, d), block=64)


# ------------------------------------------------------------------ filtering


def bilinear_reference(img, xs, ys):
    """Exact bilinear filtering with clamp addressing, in float64; also the spread of the
    four texels each sample mixes."""
    h, w = img.shape
    xb = xs.astype(np.float64) - 0.5
    yb = ys.astype(np.float64) - 0.5
    i0, j0 = np.floor(xb).astype(np.int64), np.floor(yb).astype(np.int64)
    a, b = xb - i0, yb - j0

    def t(j, i):
        return img[np.clip(j, 0, h - 1), np.clip(i, 0, w - 1)].astype(np.float64)

    t00, t01, t10, t11 = t(j0, i0), t(j0, i0 + 1), t(j0 + 1, i0), t(j0 + 1, i0 + 1)
    ref = (1 - a) * (1 - b) * t00 + a * (1 - b) * t01 + (1 - a) * b * t10 + a * b * t11
    four = np.stack([t00, t01, t10, t11])
    return ref, four.max(0) - four.min(0)


@gpu
def test_bilinear_filtering_matches_numpy(mod, rng):
    """float32, 2-D, linear filter, clamp. The hardware keeps each interpolation weight as
    9-bit fixed point with 8 fractional bits, so each weight is off by less than 1/256 and
    the result by less than (1/256 + 1/256) times the spread of the four texels mixed:
    |tex - exact| <= spread / 128 (+ float32 rounding)."""
    h, w, n = 37, 53, 20000
    img = rng.random((h, w), dtype=np.float32)
    ca = cukit.CudaArray((h, w), np.float32)
    ca.set(img)
    tex = cukit.Texture(ca, filter_mode="linear", address_mode="clamp")
    assert tex.filter_mode == "linear" and tex.address_mode == ("clamp", "clamp")
    xs = rng.uniform(-3, w + 3, n).astype(np.float32)
    ys = rng.uniform(-3, h + 3, n).astype(np.float32)
    out = cukit.to_device(poison(n, np.float32))
    mod.sample2d(tex, cukit.to_device(xs), cukit.to_device(ys), out, n, grid=(n + 255) // 256,
                 block=256)
    got = out.get()
    ref, spread = bilinear_reference(img, xs, ys)
    err = np.abs(got - ref)
    bound = spread / 128 + 1e-6
    assert np.all(err <= bound), f"worst excess {np.max(err - bound)} at {np.argmax(err - bound)}"
    # it interpolates: point sampling would be off by up to the spread
    nearest = img[np.clip(np.floor(ys), 0, h - 1).astype(int), np.clip(np.floor(xs), 0, w - 1).astype(int)]
    assert np.mean(np.abs(got - nearest)) > 10 * np.mean(err)


@gpu
def test_linear_weights_round_ties_up_bit_for_bit(mod, rng):
    """One-dimensional linear filtering between texels 0 and 1 gives the weight itself:
    x - 0.5's fraction kept to 8 bits, a tie rounded up (as measured on an H100 over a
    1/8192 grid; the emulator rounded ties to even)."""
    w = 9
    n = (w - 1) * 8192
    row = (np.arange(w) % 2).astype(np.float32)
    ca = cukit.CudaArray((2, w), np.float32)
    ca.set(np.stack([row, row]))
    tex = cukit.Texture(ca, filter_mode="linear", address_mode="clamp")
    start = rng.integers(0, 64) / 8192.0
    xs = (0.5 + start + np.arange(n) / 8192.0).astype(np.float32)  # every tie on the way
    out = cukit.to_device(poison(n, np.float32))
    mod.sample2d(tex, cukit.to_device(xs), cukit.to_device(np.ones(n, np.float32)), out, n,
                 grid=(n + 255) // 256, block=256)
    xb = xs.astype(np.float64) - 0.5
    base = np.floor(xb)
    wt = np.floor((xb - base) * 256 + 0.5) / 256
    t = row.astype(np.float64)
    i0, i1 = np.clip(base.astype(int), 0, w - 1), np.clip(base.astype(int) + 1, 0, w - 1)
    want = ((1 - wt) * t[i0] + wt * t[i1]).astype(np.float32)
    np.testing.assert_array_equal(out.get(), want)


@gpu
def test_point_sampling_is_exact(mod, rng):
    h, w = 29, 70
    img = rng.standard_normal((h, w)).astype(np.float32)
    ca = cukit.CudaArray((h, w), np.float32)
    ca.set(img)
    out = cukit.to_device(poison((h, w), np.float32))
    launch2d(mod.texels2d, cukit.Texture(ca), out, w, h, w=w, h=h)
    np.testing.assert_array_equal(out.get(), img)


@gpu
def test_uchar4_element_type_and_normalized_float(mod, rng):
    h, w = 16, 40
    img = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
    ca = cukit.CudaArray((h, w), np.uint8, 4)
    ca.set(img)
    out = cukit.to_device(poison((h, w, 4), np.uint8))
    launch2d(mod.texels_uchar4, cukit.Texture(ca), out, w, h, w=w, h=h)
    np.testing.assert_array_equal(out.get(), img)

    one = rng.integers(0, 256, (h, w), dtype=np.uint8)
    c1 = cukit.CudaArray((h, w), np.uint8)
    c1.set(one)
    f = cukit.to_device(poison((h, w), np.float32))
    launch2d(mod.texels_norm_u8, cukit.Texture(c1, read_mode="normalized_float"), f, w, h, w=w, h=h)
    np.testing.assert_allclose(f.get(), one.astype(np.float32) / np.float32(255), rtol=1e-6, atol=0)


@gpu
def test_normalized_coordinates_wrap_and_border(mod, rng):
    w, n = 48, 4000
    line = rng.random(w, dtype=np.float32)
    ca = cukit.CudaArray(w, np.float32)
    ca.set(line)
    idx = rng.integers(0, w, n)
    turns = rng.integers(-3, 4, n)
    us = ((idx + 0.5) / w + turns).astype(np.float32)
    out = cukit.to_device(poison(n, np.float32))
    tex = cukit.Texture(ca, address_mode="wrap", normalized_coords=True)
    mod.sample1d(tex, cukit.to_device(us), out, n, grid=(n + 255) // 256, block=256)
    np.testing.assert_array_equal(out.get(), line[idx])

    border = cukit.Texture(ca, address_mode="border", border_color=7.5)
    xs = np.array([-4.0, -0.5, 0.5, w - 0.5, w + 0.5, w + 10], np.float32)
    out = cukit.to_device(poison(len(xs), np.float32))
    mod.sample1d(border, cukit.to_device(xs), out, len(xs), grid=1, block=32)
    np.testing.assert_array_equal(out.get(), [7.5, 7.5, line[0], line[-1], 7.5, 7.5])
    assert border.border_color == (7.5, 0.0, 0.0, 0.0)


@gpu
def test_pitched_device_memory(mod, rng):
    """A [:, :w] view of rows padded to 64 floats: textured in place, row pitch 256 bytes."""
    h, w = 21, 45
    full = cukit.to_device(rng.random((h, 64), dtype=np.float32))
    view = full[:, :w]
    tex = cukit.Texture(view)
    assert tex.kind == "pitch2d" and tex.source is view
    out = cukit.to_device(poison((h, w), np.float32))
    launch2d(mod.texels2d, tex, out, w, h, w=w, h=h)
    np.testing.assert_array_equal(out.get(), full.get()[:, :w])


@gpu
def test_linear_device_memory(mod, rng):
    n = 1000
    data = rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32)
    tex = cukit.Texture(cukit.to_device(data))
    assert tex.kind == "linear"
    out = cukit.to_device(poison(n, np.int32))
    mod.fetch_int(tex, out, n, grid=4, block=256)
    np.testing.assert_array_equal(out.get(), data)


@gpu
def test_layered_and_3d(mod, rng):
    layers, h, w = 5, 12, 33
    stack = rng.standard_normal((layers, h, w)).astype(np.float32)
    ca = cukit.CudaArray((layers, h, w), np.float32, layered=True)
    ca.set(stack)
    np.testing.assert_array_equal(ca.get(), stack)
    out = cukit.to_device(poison((layers, h, w), np.float32))
    launch2d(mod.texels_layered, cukit.Texture(ca), out, w, h, layers, w=w, h=h, d=layers)
    np.testing.assert_array_equal(out.get(), stack)

    vol = rng.standard_normal((6, h, w)).astype(np.float32)
    c3 = cukit.CudaArray(vol.shape, np.float32)
    c3.set(cukit.to_device(vol))  # from device memory
    out = cukit.to_device(poison(vol.shape, np.float32))
    launch2d(mod.texels3d, cukit.Texture(c3), out, w, h, 6, w=w, h=h, d=6)
    np.testing.assert_array_equal(out.get(), vol)


@gpu
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "float16", "float32"])
@pytest.mark.parametrize("shape,layered,channels", [
    ((100,), False, 1), ((9, 31), False, 2), ((4, 7, 13), False, 4), ((3, 50), True, 1),
    ((2, 6, 11), True, 2),
])
def test_copies_round_trip(rng, dtype, shape, layered, channels):
    full = shape + ((channels,) if channels > 1 else ())
    host = rng.integers(-100, 100, full).astype(dtype) if dtype != "uint8" else \
        rng.integers(0, 255, full).astype(dtype)
    ca = cukit.CudaArray(shape, dtype, channels, layered=layered)
    assert ca.shape == shape and ca.channels == channels and ca.nbytes == host.nbytes
    ca.set(host)
    np.testing.assert_array_equal(ca.get(), host)
    dev = cukit.to_device(poison(full, dtype))
    assert ca.get(out=dev) is dev
    np.testing.assert_array_equal(dev.get(), host)
    other = cukit.CudaArray(shape, dtype, channels, layered=layered)
    other.set(dev)
    back = poison(full, dtype)
    other.get(out=back)
    np.testing.assert_array_equal(back, host)


# ------------------------------------------------------------------ surfaces


@gpu
def test_surface_write_then_read_back(mod, rng):
    h, w = 19, 77
    start = rng.standard_normal((h, w)).astype(np.float32)
    inc = rng.standard_normal((h, w)).astype(np.float32)
    ca = cukit.CudaArray((h, w), np.float32, surface=True)
    ca.set(start)
    surf = cukit.Surface(ca)
    launch2d(mod.surf_update, surf, cukit.to_device(inc), w, h, w=w, h=h)
    want = np.float32(2) * inc + start
    np.testing.assert_array_equal(ca.get(), want)
    out = cukit.to_device(poison((h, w), np.float32))
    launch2d(mod.surf_read, surf, out, w, h, w=w, h=h)
    np.testing.assert_array_equal(out.get(), want)
    # and a texture over the same array sees what the surface wrote
    out2 = cukit.to_device(poison((h, w), np.float32))
    launch2d(mod.texels2d, cukit.Texture(ca), out2, w, h, w=w, h=h)
    np.testing.assert_array_equal(out2.get(), want)


# ------------------------------------------------------------------ arguments and lifetimes


@gpu
def test_handles_as_ints_and_a_typedef(mod, rng):
    img = rng.random((4, 4), dtype=np.float32)
    ca = cukit.CudaArray((4, 4), np.float32)
    ca.set(img)
    tex = cukit.Texture(ca)
    assert int(tex) == tex.handle > 0
    out = cukit.to_device(poison(16, np.float32))
    launch2d(mod.texels2d, tex.handle, out, 4, 4, w=4, h=4)
    np.testing.assert_array_equal(out.get().reshape(4, 4), img)
    one = cukit.to_device(poison(1, np.float32))
    mod.via_typedef(tex, one, grid=1, block=1)
    assert one.get()[0] == img[0, 0]


@gpu
def test_wrong_objects_for_texture_and_pointer_parameters(mod):
    ca = cukit.CudaArray((4, 4), np.float32, surface=True)
    tex, surf = cukit.Texture(ca), cukit.Surface(ca)
    out = cukit.zeros(16, np.float32)
    with pytest.raises(TypeError, match=r"argument 1 'p' \(const float\*\): got a cukit.Texture, "
                                        r"which is not device memory; declare the parameter "
                                        r"cudaTextureObject_t"):
        mod.takes_pointer(tex, out, grid=1, block=1)
    with pytest.raises(TypeError, match=r"argument 1 'p' .*got a cukit.Surface.*cudaSurfaceObject_t"):
        mod.takes_pointer(surf, out, grid=1, block=1)
    with pytest.raises(TypeError, match=r"argument 1 'tex' \(cudaTextureObject_t\): got a "
                                        r"cukit.Surface; this parameter takes a cukit.Texture"):
        mod.texels2d(surf, out, 4, 4, grid=1, block=64)
    with pytest.raises(TypeError, match=r"argument 1 'surf' .*got a cukit.Texture; this "
                                        r"parameter takes a cukit.Surface"):
        mod.surf_read(tex, out, 4, 4, grid=1, block=64)
    with pytest.raises(TypeError, match=r"argument 1 'tex' .*expected a cukit.Texture \(or its "
                                        r"handle as an int\), got cukit.Array"):
        mod.texels2d(out, out, 4, 4, grid=1, block=64)


@gpu
def test_texture_keeps_its_source_alive(mod, rng):
    img = rng.random((8, 8), dtype=np.float32)
    ca = cukit.CudaArray((8, 8), np.float32)
    ca.set(img)
    tex = cukit.Texture(ca)
    del ca
    gc.collect()
    assert isinstance(tex.source, cukit.CudaArray)
    out = cukit.to_device(poison((8, 8), np.float32))
    launch2d(mod.texels2d, tex, out, 8, 8, w=8, h=8)
    np.testing.assert_array_equal(out.get(), img)


@gpu
def test_released_while_a_launch_still_reads_it(mod, rng):
    """The host lets go of the texture and its memory while the kernel runs: the release
    waits for the kernel, which reads the data intact."""
    w, iters = 256, 100000
    data = rng.random(w, dtype=np.float32)
    src = cukit.to_device(data)
    tex = cukit.Texture(src)
    out = cukit.to_device(poison(w, np.float32))
    mod.slow_sum(tex, out, w, iters, grid=1, block=w)
    del tex, src
    gc.collect()
    # New memory full of NaN and new textures over it: they would take the freed memory
    # and the destroyed texture's slot if the release had not waited for the kernel.
    junk = cukit.to_device(np.full(w * 64, np.nan, np.float32))
    junk_textures = [cukit.Texture(junk) for _ in range(8)]
    got = out.get()
    assert np.all(np.isfinite(got))
    want = np.array([data[(np.arange(iters) + x) % w].astype(np.float64).sum() for x in range(w)])
    np.testing.assert_allclose(got, want, rtol=1e-2)
    del junk_textures, junk


@gpu
def test_graph_keeps_the_texture_alive(mod, rng):
    h, w = 6, 10
    img = rng.random((h, w), dtype=np.float32)
    ca = cukit.CudaArray((h, w), np.float32)
    ca.set(img)
    tex = cukit.Texture(ca)
    out = cukit.to_device(poison((h, w), np.float32))
    cukit.synchronize()  # the legacy stream's uploads land before the replay on s
    s = cukit.Stream()
    with s.capture() as g:
        mod.texels2d(tex, out, w, h, grid=(1, h), block=64, stream=s)
    del tex, ca
    gc.collect()
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(out.get(), img)


# ------------------------------------------------------------------ bad combinations


def test_unsupported_dtype_channels_and_shape_need_no_gpu():
    with pytest.raises(TypeError, match=r"CudaArray: elements of dtype float64 are not supported; "
                                        r"textures and CUDA arrays hold int8, .* float32"):
        cukit.CudaArray((4, 4), np.float64)
    with pytest.raises(TypeError, match=r"elements of dtype bool are not supported"):
        cukit.CudaArray(4, np.bool_)
    with pytest.raises(ValueError, match=r"channels=3 is not supported; an element has 1, 2 or 4 "
                                         r"channels \(pad 3-channel data such as RGB to 4\)"):
        cukit.CudaArray((4, 4), np.float32, 3)
    with pytest.raises(ValueError, match=r"has 4 dimensions; a CUDA array is \(width,\)"):
        cukit.CudaArray((2, 2, 2, 2), np.float32)
    with pytest.raises(ValueError, match=r"layered array's shape is \(layers, width\)"):
        cukit.CudaArray(8, np.float32, layered=True)
    with pytest.raises(ValueError, match=r"every extent must be at least 1"):
        cukit.CudaArray((0, 4), np.float32)
    with pytest.raises(TypeError, match=r"shape must be an int or a tuple of ints"):
        cukit.CudaArray("big", np.float32)


class FakeDeviceArray:
    """Only an interface dict: enough for the checks that come before the device."""

    def __init__(self, shape, typestr):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (1 << 30, False), "version": 3}


@pytest.mark.parametrize("kw,words", [
    ({"address_mode": "warp"}, r"address_mode 'warp' is not one of 'wrap', 'clamp', 'mirror' or 'border'"),
    ({"address_mode": ("clamp", "bad")}, r"address_mode 'bad' is not one of"),
    ({"address_mode": ()}, r"address_mode is a name \('clamp', ...\) or a tuple of 1 to 3 names"),
    ({"filter_mode": "bilinear"}, r"filter_mode 'bilinear' is not one of 'point' or 'linear'"),
    ({"read_mode": "float"}, r"read_mode 'float' is not one of 'element_type' or 'normalized_float'"),
    ({"border_color": (1, 2, 3, 4, 5)}, r"border_color is a number or 1 to 4 numbers"),
])
def test_bad_setting_names_need_no_gpu(kw, words):
    with pytest.raises(ValueError, match=words):
        cukit.Texture(FakeDeviceArray((8, 8), "<f4"), **kw)


def test_bad_sources_need_no_gpu():
    with pytest.raises(TypeError, match=r"Texture: elements of dtype float64 are not supported"):
        cukit.Texture(FakeDeviceArray((8, 8), "<f8"))
    with pytest.raises(ValueError, match=r"with channels=4 the device array's last dimension must "
                                         r"hold the 4 channels"):
        cukit.Texture(FakeDeviceArray((8, 8), "<f4"), channels=4)
    with pytest.raises(TypeError, match=r"Texture: got a numpy.ndarray in host memory; copy it "
                                        r"into a cukit.CudaArray"):
        cukit.Texture(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match=r"the source must be a cukit.CudaArray or a device array"):
        cukit.Texture("image.png")
    with pytest.raises(TypeError, match=r"Surface: the source must be a cukit.CudaArray made with "
                                        r"surface=True, got numpy.ndarray"):
        cukit.Surface(np.zeros(4, np.float32))


@gpu
def test_bad_combinations_on_the_device(rng):
    ca = cukit.CudaArray((8, 8), np.float32)
    with pytest.raises(ValueError, match=r"Surface: the CudaArray was not made with surface=True"):
        cukit.Surface(ca)
    with pytest.raises(ValueError, match=r"address_mode 'wrap' needs normalized_coords=True"):
        cukit.Texture(ca, address_mode="wrap")
    with pytest.raises(ValueError, match=r"address_mode 'mirror' needs normalized_coords=True"):
        cukit.Texture(ca, address_mode=("clamp", "mirror"))
    with pytest.raises(ValueError, match=r"read_mode='normalized_float' maps 8- and 16-bit "
                                         r"integers .* elements of float32"):
        cukit.Texture(ca, read_mode="normalized_float")
    with pytest.raises(ValueError, match=r"channels= is for device memory"):
        cukit.Texture(ca, channels=1)
    ints = cukit.CudaArray((8, 8), np.int32)
    with pytest.raises(ValueError, match=r"filter_mode='linear' interpolates floats; int32 "
                                         r"elements need read_mode='normalized_float'"):
        cukit.Texture(ints, filter_mode="linear")
    cukit.Texture(cukit.CudaArray((8, 8), np.uint8), filter_mode="linear", read_mode="normalized_float")
    lin = cukit.to_device(rng.random(64, dtype=np.float32))
    with pytest.raises(ValueError, match=r"linear \(1-D\) device memory is read with tex1Dfetch"):
        cukit.Texture(lin, filter_mode="linear")
    with pytest.raises(ValueError, match=r"not aligned to the device's texture alignment"):
        cukit.Texture(lin[1:])
    rows = cukit.to_device(rng.random((8, 13), dtype=np.float32))  # 52-byte rows
    with pytest.raises(ValueError, match=r"rows are 52 bytes apart, not a multiple of the device's "
                                         r"texture pitch alignment"):
        cukit.Texture(rows)
    with pytest.raises(ValueError, match=r"device memory is textured as 1-D \(linear\) or 2-D "
                                         r"\(pitched\) data, got 3 dimensions"):
        cukit.Texture(cukit.zeros((2, 8, 8), np.float32))
    # copies
    with pytest.raises(TypeError, match=r"CudaArray.set\(\): dtype float64 does not match the "
                                        r"CudaArray's float32"):
        ca.set(np.zeros((8, 8)))
    with pytest.raises(ValueError, match=r"CudaArray.set\(\): shape \(8, 4\) does not match the "
                                         r"CudaArray's \(8, 8\)"):
        ca.set(np.zeros((8, 4), np.float32))
    with pytest.raises(ValueError, match=r"CudaArray.get\(\): shape \(64,\) does not match"):
        ca.get(out=cukit.zeros(64, np.float32))
    with pytest.raises(ValueError, match=r"not C-contiguous; pass cukit.ascontiguousarray"):
        ca.set(cukit.zeros((8, 16), np.float32)[:, ::2])
    c4 = cukit.CudaArray((8, 8), np.float32, 4)
    with pytest.raises(ValueError, match=r"shape \(8, 8\) does not match the CudaArray's "
                                         r"\(8, 8, 4\) \(its shape, then the channels\)"):
        c4.set(np.zeros((8, 8), np.float32))
    with pytest.raises(TypeError, match=r"CudaArray.get\(\): expected a numpy array or a device "
                                        r"array, got bytearray"):
        ca.get(out=bytearray(256))
    ca.set(rng.random((8, 8)).tolist())  # lists take the array's dtype


# ------------------------------------------------------------------ the ABI


FIELDS = {
    "CUDA_ARRAY3D_DESCRIPTOR": ["Width", "Height", "Depth", "Format", "NumChannels", "Flags"],
    "CUDA_RESOURCE_DESC": ["resType", "res.array.hArray", "res.linear.devPtr", "res.linear.format",
                           "res.linear.numChannels", "res.linear.sizeInBytes", "res.pitch2D.devPtr",
                           "res.pitch2D.format", "res.pitch2D.numChannels", "res.pitch2D.width",
                           "res.pitch2D.height", "res.pitch2D.pitchInBytes", "flags"],
    "CUDA_TEXTURE_DESC": ["addressMode", "filterMode", "flags", "maxAnisotropy", "mipmapFilterMode",
                          "mipmapLevelBias", "minMipmapLevelClamp", "maxMipmapLevelClamp",
                          "borderColor"],
    "CUDA_RESOURCE_VIEW_DESC": ["format", "width", "height", "depth", "firstMipmapLevel",
                                "lastMipmapLevel", "firstLayer", "lastLayer"],
}
CONSTANTS = [
    "CU_AD_FORMAT_UNSIGNED_INT8", "CU_AD_FORMAT_UNSIGNED_INT16", "CU_AD_FORMAT_UNSIGNED_INT32",
    "CU_AD_FORMAT_SIGNED_INT8", "CU_AD_FORMAT_SIGNED_INT16", "CU_AD_FORMAT_SIGNED_INT32",
    "CU_AD_FORMAT_HALF", "CU_AD_FORMAT_FLOAT", "CUDA_ARRAY3D_LAYERED", "CUDA_ARRAY3D_SURFACE_LDST",
    "CU_TR_ADDRESS_MODE_WRAP", "CU_TR_ADDRESS_MODE_CLAMP", "CU_TR_ADDRESS_MODE_MIRROR",
    "CU_TR_ADDRESS_MODE_BORDER", "CU_TR_FILTER_MODE_POINT", "CU_TR_FILTER_MODE_LINEAR",
    "CU_RESOURCE_TYPE_ARRAY", "CU_RESOURCE_TYPE_LINEAR", "CU_RESOURCE_TYPE_PITCH2D",
    "CU_TRSF_READ_AS_INTEGER", "CU_TRSF_NORMALIZED_COORDINATES", "CU_MEMORYTYPE_ARRAY",
    "CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT", "CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT",
]


def cuda_h():
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for root in filter(None, roots):
        if (pathlib.Path(root) / "include" / "cuda.h").exists():
            return pathlib.Path(root) / "include"
    return None


def test_abi_layouts_match_cuda_h(tmp_path):
    """Every field's offset, every struct's size and every constant of cukit's texture ABI
    equal those of the toolkit's cuda.h (checked with the C compiler, where both exist)."""
    inc, cc = cuda_h(), shutil.which("cc") or shutil.which("gcc")
    if inc is None or cc is None:
        pytest.skip("needs the CUDA toolkit's cuda.h and a C compiler")
    lines = []
    for struct, fields in FIELDS.items():
        lines.append(f'printf("{struct} %zu\\n", sizeof({struct}));')
        for f in fields:
            lines.append(f'printf("{struct}.{f} %zu\\n", offsetof({struct}, {f}));')
    for c in CONSTANTS:
        lines.append(f'printf("{c} %ld\\n", (long){c});')
    body = "\n".join(lines)
    outputs = []
    for name, header in (("theirs", "<cuda.h>"), ("ours", '"driver/cuda_abi.h"')):
        src = tmp_path / f"{name}.c"
        src.write_text(f"#include <stdio.h>\n#include <stddef.h>\n#include {header}\n"
                       f"int main(void) {{\n{body}\nreturn 0;\n}}\n")
        exe = tmp_path / name
        csrc = pathlib.Path(__file__).resolve().parent.parent / "csrc"
        subprocess.run([cc, "-I", str(inc), "-I", str(csrc), str(src), "-o", str(exe)], check=True)
        outputs.append(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)
    assert outputs[0].splitlines() == outputs[1].splitlines()
