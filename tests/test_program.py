"""NVRTC compilation: PTX and cubin without a GPU, options, compile errors, the log."""
import pytest

import cukit

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def test_ptx_for_an_arch():
    ptx = cukit.Program(SAXPY).ptx(arch="sm_90")
    assert isinstance(ptx, bytes)
    assert b".entry saxpy" in ptx
    assert b".target sm_90" in ptx
    assert not ptx.endswith(b"\0")


def test_cubin_is_an_elf_for_the_arch():
    cubin = cukit.Program(SAXPY).cubin(arch="sm_90")
    assert cubin[:4] == b"\x7fELF"
    assert b"saxpy" in cubin


def test_cubin_for_another_arch():
    assert cukit.Program(SAXPY).cubin(arch="sm_80")[:4] == b"\x7fELF"


def test_bad_arch_is_a_value_error():
    with pytest.raises(ValueError, match="arch must look like"):
        cukit.Program(SAXPY).ptx(arch="hopper")


def test_compile_error_shows_diagnostics_and_source_line():
    src = 'extern "C" __global__ void k(float* y) {\n    y[0] = undefined_thing;\n}\n'
    prog = cukit.Program(src, name="mine.cu")
    with pytest.raises(cukit.CompileError) as info:
        prog.ptx(arch="sm_90")
    msg = str(info.value)
    assert "mine.cu:2:12: error: identifier \"undefined_thing\" is undefined" in msg
    assert "y[0] = undefined_thing;" in msg  # the offending line
    assert "^" in msg
    assert info.value.log == prog.log
    assert "undefined_thing" in info.value.log
    assert info.value.name == "NVRTC_ERROR_COMPILATION"
    assert info.value.call == "nvrtcCompileProgram"


def test_warnings_stay_in_the_log():
    src = 'extern "C" __global__ void k(float* y) { int unused = 3; y[0] = 1; }'
    prog = cukit.Program(src)
    prog.ptx(arch="sm_90")
    assert "unused" in prog.log and "warning" in prog.log


def test_defines_and_include_dirs(tmp_path):
    (tmp_path / "scale.h").write_text("#define SCALE 3.0f\n")
    src = '#include "scale.h"\nextern "C" __global__ void k(float* y) { y[0] = SCALE * N; }'
    ptx = cukit.Program(src, include_dirs=[tmp_path], defines={"N": 7}).ptx(arch="sm_90")
    assert b"k" in ptx
    assert "-DN=7" in cukit.Program(src, defines={"N": 7}).options
    with pytest.raises(cukit.CompileError, match="scale.h"):
        cukit.Program(src, defines={"N": 7}).ptx(arch="sm_90")


def test_options_reach_nvrtc():
    src = 'extern "C" __global__ void k(float* y) { y[0] = 1; }'
    prog = cukit.Program(src, options=("-lineinfo", "-DFOO"))
    assert b".loc" in prog.ptx(arch="sm_90")


def test_bad_option_is_a_value_error():
    with pytest.raises(ValueError, match="NVRTC rejected an option"):
        cukit.Program(SAXPY, options=("--no-such-option",)).ptx(arch="sm_90")


def test_options_must_be_a_sequence_of_str():
    with pytest.raises(TypeError, match="sequence of str"):
        cukit.Program(SAXPY, options="-O3")
    with pytest.raises(TypeError, match="must be a str"):
        cukit.Program(SAXPY, options=(3,))


def test_cpp_kernels_without_extern_c_are_found_by_name():
    src = "namespace ns { __global__ void inner(double* q) { q[0] = 1; } }\n" \
          "__global__ void plain(int* a) { a[0] = 1; }"
    prog = cukit.Program(src)
    assert set(prog.signatures) == {"ns::inner", "plain"}
    ptx = prog.ptx(arch="sm_90")
    assert b"_Z5plainPi" in ptx  # mangled: found through name expressions


def test_nvrtc_version():
    major, minor = cukit.nvrtc_version()
    assert major >= 11


def test_toolkit_headers_need_no_setup():
    src = """
    #include <cuda_fp16.h>
    #include <cooperative_groups.h>
    extern "C" __global__ void k(__half* y) { y[0] = __float2half(1.0f); }
    """
    assert b".entry k" in cukit.Program(src).ptx(arch="sm_90")
