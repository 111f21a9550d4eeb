"""cukit.link (nvJitLink) and Module.load: linking needs no GPU; loading and launching do."""
import shutil
import subprocess

import numpy as np
import pytest

import cukit
from conftest import HAVE_GPU, poison

def _nvjitlink():
    try:
        return cukit.nvjitlink_version(), ""
    except cukit.NotSupportedError as e:
        return None, str(e)


NVJITLINK, WHY = _nvjitlink()
needs_nvjitlink = pytest.mark.skipif(NVJITLINK is None, reason=f"nvJitLink is not installed: {WHY}")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")

# A kernel in one source calling a device function defined in another.
CALLER = r"""
extern __device__ float twice_plus(float x, float b);
extern "C" __global__ void apply(float* y, const float* x, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = twice_plus(x[i], b);
}
"""
CALLEE = r"""
__device__ float twice_plus(float x, float b) { return 2.0f * x + b; }
"""
# C++ kernels (mangled symbols) in a namespace, calling into the other source.
CPP_CALLER = r"""
namespace ops { extern __device__ double cube(double v); }
namespace ops {
__global__ void cubes(double* out, const double* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = cube(in[i]);
}
}
"""
CPP_CALLEE = r"""
namespace ops { __device__ double cube(double v) { return v * v * v; } }
"""
ARCH = "sm_90"


def programs():
    return cukit.Program(CALLER, name="caller.cu"), cukit.Program(CALLEE, name="callee.cu")


def is_cubin(data):
    return data[:4] == b"\x7fELF" and int.from_bytes(data[18:20], "little") == 190  # EM_CUDA


# ------------------------------------------------------------------ CPU: linking

@needs_nvjitlink
def test_nvjitlink_version():
    major, minor = cukit.nvjitlink_version()
    assert major >= 12 and minor >= 0


@needs_nvjitlink
def test_two_sources_link_to_a_cubin():
    cubin = cukit.link(list(programs()), arch=ARCH, output="cubin")
    assert is_cubin(cubin)
    assert b"apply" in cubin


@needs_nvjitlink
def test_lto_links_to_a_cubin_and_inlines_across_sources():
    caller, callee = programs()
    assert is_cubin(cukit.link([caller, callee], arch=ARCH, lto=True, output="cubin"))
    ptx = cukit.link([caller, callee], arch=ARCH, lto=True, output="ptx")
    assert b".entry apply" in ptx
    assert b"_Z10twice_plusff" not in ptx  # the call across sources is gone: inlined
    assert not ptx.endswith(b"\0")


@needs_nvjitlink
def test_cpp_kernels_link():
    cubin = cukit.link([cukit.Program(CPP_CALLER), cukit.Program(CPP_CALLEE)], arch=ARCH,
                       output="cubin")
    assert is_cubin(cubin) and b"_ZN3ops5cubesEPdPKdi" in cubin


@needs_nvjitlink
@pytest.mark.parametrize("form", ["cubin", "ptx"])
def test_images_link_with_programs(form):
    rdc = cukit.Program(CALLEE, options=("-rdc=true",))
    image = rdc.cubin(arch=ARCH) if form == "cubin" else rdc.ptx(arch=ARCH)  # PTX without its NUL
    caller = programs()[0]
    assert is_cubin(cukit.link([caller, image], arch=ARCH, output="cubin"))
    assert is_cubin(cukit.link([caller, bytearray(image)], arch=ARCH, output="cubin"))
    assert is_cubin(cukit.link([caller, memoryview(image)], arch=ARCH, output="cubin"))


@needs_nvjitlink
def test_files_link(tmp_path):
    path = tmp_path / "callee.cubin"
    path.write_bytes(cukit.Program(CALLEE, options=("-rdc=true",)).cubin(arch=ARCH))
    caller = programs()[0]
    assert is_cubin(cukit.link([caller, path], arch=ARCH, output="cubin"))
    assert is_cubin(cukit.link([caller, str(path)], arch=ARCH, output="cubin"))


def build_with_nvcc(tmp_path, *args):
    (tmp_path / "callee.cu").write_text(CALLEE)
    subprocess.run(["nvcc", f"-arch={ARCH}", "-rdc=true", *args, str(tmp_path / "callee.cu")],
                   check=True, cwd=tmp_path, capture_output=True)


@needs_nvjitlink
@needs_nvcc
def test_static_library_links(tmp_path):
    build_with_nvcc(tmp_path, "-lib", "-o", "libcallee.a")
    lib = tmp_path / "libcallee.a"
    caller = programs()[0]
    assert is_cubin(cukit.link([caller, lib], arch=ARCH, output="cubin"))
    assert is_cubin(cukit.link([caller, lib.read_bytes()], arch=ARCH, output="cubin"))


@needs_nvjitlink
@needs_nvcc
def test_host_object_and_fatbin_link(tmp_path):
    build_with_nvcc(tmp_path, "-c", "-o", "callee.o")
    build_with_nvcc(tmp_path, "-fatbin", "-o", "callee.fatbin")
    caller = programs()[0]
    assert is_cubin(cukit.link([caller, tmp_path / "callee.o"], arch=ARCH, output="cubin"))
    assert is_cubin(cukit.link([caller, (tmp_path / "callee.fatbin").read_bytes()], arch=ARCH,
                               output="cubin"))


@needs_nvjitlink
def test_undefined_symbol_is_a_link_error_with_the_log():
    with pytest.raises(cukit.LinkError) as info:
        cukit.link([programs()[0]], arch=ARCH, output="cubin")
    e = info.value
    assert isinstance(e, cukit.CompileError)
    assert "Undefined reference" in str(e) and "twice_plus" in str(e)
    assert "Undefined reference" in e.log and "caller.cu" in e.log
    assert e.call == "nvJitLinkComplete"
    assert e.name.startswith("NVJITLINK_ERROR")


@needs_nvjitlink
def test_compile_error_in_an_item_is_a_compile_error():
    bad = cukit.Program('extern "C" __global__ void k(float* y) { y[0] = nope; }', name="bad.cu")
    with pytest.raises(cukit.CompileError, match="bad.cu") as info:
        cukit.link([bad], arch=ARCH, output="cubin")
    assert not isinstance(info.value, cukit.LinkError)


@needs_nvjitlink
def test_linking_leaves_the_program_usable_alone():
    caller, callee = programs()
    cukit.link([caller, callee], arch=ARCH, output="cubin")
    assert "-rdc=true" not in caller.options
    assert b".entry apply" in caller.ptx(arch=ARCH)


@needs_nvjitlink
@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(items=[], arch=ARCH), ValueError, "at least one item"),
    (dict(items=[b"\x01\x02garbage"], arch=ARCH), ValueError, "is not a cubin, PTX, fatbin"),
    (dict(items=[3], arch=ARCH), TypeError, "item 0 is a int"),
    (dict(items=b"\x7fELF", arch=ARCH), TypeError, "takes a list of items"),
    (dict(items="x.cubin", arch=ARCH), TypeError, "takes a list of items"),
    (dict(items=["no/such/file.cubin"], arch=ARCH), FileNotFoundError, "no/such/file.cubin"),
    (dict(arch="hopper"), ValueError, "arch must name a GPU architecture"),
    (dict(arch="compute_90"), ValueError, "arch must name a GPU architecture"),
    (dict(arch=ARCH, options="-O3"), TypeError, "sequence of str"),
    (dict(arch=ARCH, options=[3]), TypeError, "must be a str"),
    (dict(arch=ARCH, options=["-no-such-option"]), ValueError, "nvJitLink rejected the options"),
    (dict(arch=ARCH, output="fatbin"), ValueError, "output must be"),
    (dict(arch=ARCH, output="ptx"), ValueError, "needs lto=True"),
])
def test_bad_link_arguments(kwargs, exc, words):
    kwargs.setdefault("items", list(programs()))
    kwargs.setdefault("output", "cubin")
    with pytest.raises(exc, match=words.replace("(", r"\(")):
        cukit.link(**kwargs)


@needs_nvjitlink
@pytest.mark.skipif(HAVE_GPU, reason="checks the message given without a GPU")
def test_no_arch_and_no_gpu():
    with pytest.raises(ValueError, match="pass arch"):
        cukit.link(list(programs()), output="cubin")


# ------------------------------------------------------------------ CPU: Module.load input checks

@pytest.mark.parametrize("image, exc, words", [
    (b"\x01\x02\x03 not code", ValueError, "is not a cubin, fatbin or PTX"),
    (b"", ValueError, "is not a cubin, fatbin or PTX"),
    (b"!<arch>\nstuff", ValueError, "static library, which the driver cannot load"),
    (b"\xedCN\x7f\x01\x02", ValueError, "LTO-IR, which the driver cannot load"),
    (".version 8.0\n.target sm_90\n", ValueError, "Module.load(ptx.encode())"),
    (3.5, TypeError, "not float"),
])
def test_module_load_rejects(image, exc, words):
    with pytest.raises(exc, match=words.replace("(", r"\(").replace(")", r"\)")):
        cukit.Module.load(image)


def test_module_load_missing_file(tmp_path):
    missing = tmp_path / "gone.cubin"
    with pytest.raises(FileNotFoundError, match="gone.cubin"):
        cukit.Module.load(missing)
    with pytest.raises(FileNotFoundError):
        cukit.Module.load(str(missing))
    with pytest.raises(IsADirectoryError):
        cukit.Module.load(tmp_path)


def test_module_load_unknown_file(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(ValueError, match="notes.txt.*is not a cubin, fatbin or PTX"):
        cukit.Module.load(path)


# ------------------------------------------------------------------ GPU: load and launch

def check_apply(module, rng, n=1000):
    x = rng.standard_normal(n).astype(np.float32)
    b = np.float32(rng.standard_normal())
    y = cukit.to_device(poison(n, np.float32))
    module.apply(y, cukit.to_device(x), b, n, grid=(n + 255) // 256, block=256)
    np.testing.assert_allclose(y.get(), 2 * x + b, rtol=1e-6)


@pytest.mark.gpu_hardware  # loads machine code (cubin/fatbin); the emulator runs PTX
@pytest.mark.gpu
@needs_nvjitlink
@pytest.mark.parametrize("lto", [False, True])
def test_linked_module_launches(rng, lto):
    module = cukit.link(list(programs()), lto=lto)
    assert isinstance(module, cukit.Module)
    assert module.kernels == ("apply",)
    assert str(module.apply.signature) == "apply(float* y, const float* x, float b, int n)"
    check_apply(module, rng)


@pytest.mark.gpu_hardware  # loads machine code (cubin/fatbin); the emulator runs PTX
@pytest.mark.gpu
@needs_nvjitlink
def test_linked_module_keeps_signature_checks(rng):
    module = cukit.link(list(programs()))
    x = cukit.to_device(rng.standard_normal(8))  # float64 for a float*
    y = cukit.empty(8, np.float32)
    with pytest.raises(TypeError, match="x"):
        module.apply(y, x, 1.0, 8, grid=1, block=8)
    with pytest.raises(TypeError, match="4"):
        module.apply(y, 1.0, grid=1, block=8)


@pytest.mark.gpu_hardware  # loads machine code (cubin/fatbin); the emulator runs PTX
@pytest.mark.gpu
@needs_nvjitlink
def test_linked_cpp_kernels_launch(rng):
    module = cukit.link([cukit.Program(CPP_CALLER), cukit.Program(CPP_CALLEE)])
    n = 777
    x = rng.standard_normal(n)
    out = cukit.to_device(poison(n, np.float64))
    module.get_kernel("ops::cubes")(out, cukit.to_device(x), n, grid=4, block=256)
    np.testing.assert_allclose(out.get(), x ** 3, rtol=1e-14)


@pytest.mark.gpu_hardware  # loads machine code (cubin/fatbin); the emulator runs PTX
@pytest.mark.gpu
@needs_nvjitlink
def test_linked_cubin_bytes_load(rng):
    cubin = cukit.link(list(programs()), arch=cukit.Device().arch, output="cubin")
    module = cukit.Module.load(cubin)
    check_apply_with_signature(module, rng)


@pytest.mark.gpu_hardware  # loads machine code (cubin/fatbin); the emulator runs PTX
@pytest.mark.gpu
@needs_nvjitlink
@needs_nvcc
def test_static_library_module_launches(rng, tmp_path):
    build_with_nvcc(tmp_path, "-lib", "-o", "libcallee.a")
    check_apply(cukit.link([programs()[0], tmp_path / "libcallee.a"], arch=ARCH), rng)


SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
SAXPY_SIG = "(float a, const float* x, float* y, int n)"


def check_saxpy(module, rng, n=1234):
    k = module.get_kernel("saxpy", signature=SAXPY_SIG)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    a = np.float32(rng.standard_normal())
    dy = cukit.to_device(y)
    k(a, cukit.to_device(x), dy, n, grid=(n + 127) // 128, block=128)
    np.testing.assert_allclose(dy.get(), a * x + y, rtol=1e-6, atol=1e-6)


def check_apply_with_signature(module, rng, n=1000):
    k = module.get_kernel("apply", signature="(float* y, const float* x, float b, int n)")
    x = rng.standard_normal(n).astype(np.float32)
    b = np.float32(rng.standard_normal())
    y = cukit.to_device(poison(n, np.float32))
    k(y, cukit.to_device(x), b, n, grid=(n + 255) // 256, block=256)
    np.testing.assert_allclose(y.get(), 2 * x + b, rtol=1e-6)


@pytest.mark.gpu_hardware  # loads machine code (cubin/fatbin); the emulator runs PTX
@pytest.mark.gpu
@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview])
def test_module_load_cubin(rng, wrap):
    arch = cukit.Device().arch
    module = cukit.Module.load(wrap(cukit.Program(SAXPY).cubin(arch=arch)))
    assert module.arch == arch
    assert module.kernels == ()
    check_saxpy(module, rng)


@pytest.mark.gpu
def test_module_load_ptx_from_bytes_and_files(rng, tmp_path):
    arch = cukit.Device().arch
    ptx = cukit.Program(SAXPY).ptx(arch=arch)
    assert not ptx.endswith(b"\0")  # cukit adds the NUL the driver needs
    module = cukit.Module.load(ptx)
    assert module.arch == "compute_" + arch[3:]
    check_saxpy(module, rng)
    path = tmp_path / "saxpy.ptx"
    path.write_bytes(ptx)
    check_saxpy(cukit.Module.load(path), rng)
    check_saxpy(cukit.Module.load(str(path), device=0), rng)


@pytest.mark.gpu_hardware  # loads machine code (cubin/fatbin); the emulator runs PTX
@pytest.mark.gpu
def test_module_load_cubin_file(rng, tmp_path):
    path = tmp_path / "saxpy.cubin"
    path.write_bytes(cukit.Program(SAXPY).cubin(arch=cukit.Device().arch))
    check_saxpy(cukit.Module.load(path, device=cukit.Device(0)), rng)


@pytest.mark.gpu_hardware  # loads machine code (cubin/fatbin); the emulator runs PTX
@pytest.mark.gpu
@needs_nvcc
def test_module_load_fatbin(rng, tmp_path):
    arch = cukit.Device().arch
    (tmp_path / "saxpy.cu").write_text(SAXPY)
    subprocess.run(["nvcc", f"-arch={arch}", "-fatbin", "-o", "saxpy.fatbin", "saxpy.cu"],
                   check=True, cwd=tmp_path, capture_output=True)
    data = (tmp_path / "saxpy.fatbin").read_bytes()
    assert data[:4] == bytes.fromhex("50ed55ba")
    module = cukit.Module.load(data)
    assert module.arch == arch
    check_saxpy(module, rng)
    check_saxpy(cukit.Module.load(tmp_path / "saxpy.fatbin"), rng)


@pytest.mark.gpu_hardware  # loads machine code (cubin/fatbin); the emulator runs PTX
@pytest.mark.gpu
def test_loaded_kernel_without_a_signature_takes_its_sizes(rng):
    """A cubin says only its kernels' parameter sizes: values of those sizes are taken
    (numpy scalars by their own type, as PyCUDA packs them); signature= checks types."""
    module = cukit.Module.load(cukit.Program(SAXPY).cubin(arch=cukit.Device().arch))
    k = module.get_kernel("saxpy")
    assert [t for t, _ in k.signature.params] == ["4 bytes", "8 bytes", "8 bytes", "4 bytes"]
    assert module.saxpy is k
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dy = cukit.to_device(y)
    k(np.float32(2), cukit.to_device(x), dy, np.int32(n), grid=4, block=256)
    np.testing.assert_allclose(dy.get(), np.float32(2) * x + y, rtol=1e-6)
    with pytest.raises(TypeError, match="4 bytes here, but the numpy.float64 given has 8"):
        k(np.float64(2), cukit.to_device(x), dy, np.int32(n), grid=4, block=256)
    with pytest.raises(AttributeError, match="has no kernel 'nothing'"):
        module.get_kernel("nothing")


@pytest.mark.gpu_hardware  # loads machine code (cubin/fatbin); the emulator runs PTX
@pytest.mark.gpu
def test_loaded_kernel_with_a_wrong_signature_is_refused():
    module = cukit.Module.load(cukit.Program(SAXPY).cubin(arch=cukit.Device().arch))
    with pytest.raises(TypeError):
        module.get_kernel("saxpy", signature="(float a, const float* x)")


@pytest.mark.gpu_hardware  # loads machine code (cubin/fatbin); the emulator runs PTX
@pytest.mark.gpu
def test_cubin_for_another_architecture_says_so():
    dev = cukit.Device()
    major = dev.compute_capability[0]
    other = next((a for a in cukit.nvrtc_archs() if int(a[3:]) // 10 != major), None)
    if other is None:
        pytest.skip("NVRTC knows no architecture of another major version")
    with pytest.raises(cukit.CudaError, match=f"holds code for {other}.*compile for {dev.arch}"):
        cukit.Module.load(cukit.Program(SAXPY).cubin(arch=other))


@needs_nvjitlink
@pytest.mark.skipif(not HAVE_GPU or cukit.backend() != "emulator", reason="the emulator's hint")
def test_a_link_on_the_emulator_says_how_to_link_ptx_and_that_works(rng):
    with pytest.raises(cukit.NotSupportedError, match=r'lto=True, output="ptx"\), then '
                       r"cukit.Module.load\(ptx\)"):
        cukit.link(list(programs()))
    m = cukit.Module.load(cukit.link(list(programs()), lto=True, output="ptx"))
    x = rng.standard_normal(300).astype(np.float32)
    y = cukit.to_device(poison(300, np.float32))
    m.apply(y, cukit.to_device(x), np.float32(0.5), 300, grid=2, block=256)
    np.testing.assert_array_equal(y.get(), 2.0 * x + np.float32(0.5))
