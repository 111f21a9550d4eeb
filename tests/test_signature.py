"""Parameter lists read from source, and the conversion of Python values to C types.

Signature.pack() packs exactly what a launch would, so every conversion rule is
checked here without a GPU.
"""
import struct

import numpy as np
import pytest

import cukit


def sigs(src, **kw):
    return {name: str(sig) for name, sig in cukit.Program(src, **kw).signatures.items()}


# ------------------------------------------------------------------ parsing

def test_plain_extern_c_kernel():
    src = 'extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float *y, size_t n) {}'
    assert sigs(src) == {"saxpy": "saxpy(float a, const float* x, float* y, size_t n)"}


@pytest.mark.parametrize("decl, shown", [
    ("unsigned n", "unsigned int n"),
    ("long int n", "long n"),
    ("unsigned long long int n", "unsigned long long n"),
    ("long long unsigned n", "unsigned long long n"),
    ("signed char c", "signed char c"),
    ("short s", "short s"),
    ("const float* const x", "const float* x"),
    ("float const* x", "const float* x"),
    ("float x[]", "float* x"),
    ("float** pp", "float** pp"),
    ("std::size_t n", "size_t n"),
    ("volatile int* flags", "int* flags"),
    ("int", "int"),
    ("__half h", "__half h"),
    ("struct Params p", "Params p"),
])
def test_parameter_spellings(decl, shown):
    src = f'extern "C" __global__ void k({decl}) {{}}'
    assert sigs(src)["k"] == f"k({shown})"


def test_macros_typedefs_and_using():
    src = """
    #define REAL float
    #define KERNEL extern "C" __global__
    typedef unsigned int uint;
    using index_t = long long;
    typedef float* fptr;
    KERNEL void k(REAL a, uint n, index_t m, fptr p) {}
    """
    assert sigs(src)["k"] == "k(float a, unsigned int n, long long m, float* p)"


def test_user_defines_reach_the_parser():
    src = 'extern "C" __global__ void k(T* x, T a) {}'
    assert sigs(src, defines={"T": "double"})["k"] == "k(double* x, double a)"


def test_comments_strings_and_attributes_are_skipped():
    src = """
    // extern "C" __global__ void fake1(int a) {}
    /* extern "C" __global__ void fake2(int a) {} */
    const char* s = "__global__ void fake3(int)";
    extern "C" __global__ void __launch_bounds__(256, 2) real(int /* count */ n) {}
    """
    assert sigs(src) == {"real": "real(int n)"}


def test_extern_c_block_namespaces_and_templates():
    src = """
    extern "C" {
      __global__ void a(int* x) {}
      __global__ void b(float* x);
    }
    namespace outer { namespace inner { __global__ void c(double d) {} } }
    template <typename T> __global__ void templ(T* x) {}
    __device__ void helper(int x) {}
    struct S { __device__ void method(int) {} };
    """
    found = cukit.Program(src).signatures
    assert set(found) == {"a", "b", "outer::inner::c"}
    assert str(found["outer::inner::c"]) == "outer::inner::c(double d)"


def test_no_parameters():
    assert sigs('extern "C" __global__ void k() {}')["k"] == "k()"
    assert sigs('extern "C" __global__ void k(void) {}')["k"] == "k()"


def test_signature_from_a_declaration_string():
    s = cukit.Signature("saxpy(float a, const float* x, float* y, size_t n)")
    assert s.name == "saxpy"
    assert s.params == (("float", "a"), ("const float*", "x"), ("float*", "y"), ("size_t", "n"))
    assert len(s) == 4
    assert "saxpy(float a" in repr(s)


def test_odd_sources_do_not_crash():
    for src in ["", "/* unterminated", '"unterminated', "__global__", "__global__ void (",
                "{" * 1000 + "}" * 1000, "#define X \\\n  float\n", "#if\n#elif\n#else\n#endif\n#endif"]:
        cukit.Program(src).signatures  # no exception, no crash
    # NVRTC has no fixed limit on parameters (their bytes are limited), nor has cukit
    big = cukit.Program('extern "C" __global__ void k(' + "int a," * 300 + "int z) {}")
    assert len(big.signatures["k"]) == 301


def test_self_referencing_macros_are_bounded():
    import time

    start = time.perf_counter()
    src = "#define A B B B B\n#define B A A A A\n" \
          'extern "C" __global__ void k(int n) { A; }'
    assert sigs(src) == {"k": "k(int n)"}
    assert time.perf_counter() - start < 2


def test_preprocessor_conditionals_choose_the_branch():
    src = """
    #ifdef USE_INT
    typedef int T;
    #else
    typedef float T;
    #endif
    #if 0
    extern "C" __global__ void hidden(int x) {}
    #elif defined(USE_INT)
    extern "C" __global__ void shown(T x) {}
    #endif
    #ifndef __CUDACC_RTC__
    extern "C" __global__ void host_only(int x) {}
    #endif
    extern "C" __global__ void k(T x) {}
    """
    assert sigs(src, defines={"USE_INT": None}) == {"shown": "shown(int x)", "k": "k(int x)"}
    assert sigs(src) == {"k": "k(float x)"}


def test_array_declarators_and_qualified_namespaces():
    assert sigs('extern "C" __global__ void k(float x[][4], int a[2][3], float (*p)[4]) {}')["k"] \
        == "k(float* x, int* a, float* p)"
    assert set(sigs("namespace a::b { __global__ void k(int* x) {} }")) == {"a::b::k"}


def test_macro_joined_names_stay_in_their_own_text():
    src = "#define A Foo\n#define B Bar\n__global__ void k(int A::B) {}"
    (sig,) = cukit.Program(src).signatures.values()
    assert sig.params[0][1] in ("Bar", "")  # never bytes from beyond the macro's text


def test_cpp_kernels_that_nvrtc_cannot_name_do_not_break_the_compile():
    src = """
    __global__ void over(int* x) { x[0] = 1; }
    __global__ void over(float* x) { x[0] = 1; }
    extern "C" __global__ void plain(int* x) { x[0] = 2; }
    """
    ptx = cukit.Program(src).ptx(arch="sm_90")
    assert b".entry plain" in ptx


# ------------------------------------------------------------------ conversions

def pack(decl, *args):
    return cukit.Signature(decl).pack(*args)


@pytest.mark.parametrize("ctype, fmt, value", [
    ("int", "<i", -5), ("unsigned int", "<I", 4_000_000_000), ("short", "<h", -300),
    ("unsigned char", "<B", 255), ("signed char", "<b", -128), ("long long", "<q", -(2**63)),
    ("size_t", "<Q", 2**64 - 1), ("int64_t", "<q", 2**62), ("uint16_t", "<H", 65535),
    ("float", "<f", 1.5), ("double", "<d", 0.1), ("bool", "<?", True),
])
def test_scalars_become_the_declared_type(ctype, fmt, value):
    assert pack(f"k({ctype} v)", value) == struct.pack(fmt, value)


def test_float_param_rounds_to_float32():
    assert pack("k(float v)", 0.1) == struct.pack("<f", np.float32(0.1))


def test_numpy_scalars_are_converted():
    assert pack("k(float v)", np.float64(2.5)) == struct.pack("<f", 2.5)
    assert pack("k(double v)", np.float32(0.1)) == struct.pack("<d", float(np.float32(0.1)))
    assert pack("k(int v)", np.int64(7)) == struct.pack("<i", 7)
    assert pack("k(size_t v)", np.uint32(9)) == struct.pack("<Q", 9)
    assert pack("k(bool v)", np.bool_(True)) == b"\x01"
    assert pack("k(float v)", 3) == struct.pack("<f", 3.0)  # an int for a float is exact enough


def test_half_and_bfloat16_scalars():
    for v in [1.0, -2.5, 0.1, 65504.0, 6e-8, 1e-3]:
        assert pack("k(__half v)", v) == np.float16(v).tobytes()
    assert pack("k(__nv_bfloat16 v)", 1.0) == b"\x80\x3f"
    with pytest.raises(OverflowError, match="float16"):
        pack("k(half v)", 70000.0)


def test_double2_aligns_to_16():
    packed = pack("k(int a, double2 v)", 1, bytes(range(16)))
    assert len(packed) == 32 and packed[16:32] == bytes(range(16))


def test_complex_and_time_values_are_not_floats():
    with pytest.raises(TypeError):
        pack("k(float v)", np.complex64(1 + 1j))
    with pytest.raises(TypeError):
        pack("k(double v)", np.timedelta64(3, "s"))


def test_layout_follows_c_alignment():
    packed = pack("k(char c, double d, int i, float* p)", 1, 2.0, 3, 0x1000)
    assert len(packed) == 32
    assert packed[8:16] == struct.pack("<d", 2.0)
    assert packed[16:20] == struct.pack("<i", 3)
    assert packed[24:32] == struct.pack("<Q", 0x1000)


@pytest.mark.parametrize("ctype, bad", [
    ("int", 2**31), ("int", -(2**31) - 1), ("unsigned int", -1), ("unsigned char", 256),
    ("short", 40000), ("size_t", 2**64), ("size_t", -1), ("long long", 2**63),
    ("float", 1e39), ("float", -1e39), ("bool", 2),
])
def test_out_of_range_is_overflow_error(ctype, bad):
    with pytest.raises(OverflowError, match="argument 1 'v'"):
        pack(f"k({ctype} v)", bad)


@pytest.mark.parametrize("value", [1.5, np.float32(2.0), np.float64(3.0)])
def test_float_for_an_integer_is_a_type_error(value):
    with pytest.raises(TypeError, match="integer parameter takes int"):
        pack("k(int n)", value)


@pytest.mark.parametrize("ctype, value, words", [
    ("float", "1.0", "expected a float"),
    ("float", True, "bool"),
    ("int", "3", "expected an int"),
    ("int", None, "expected an int"),
    ("bool", "yes", "expected a bool"),
    ("float", 1 + 2j, "expected a float"),
])
def test_wrong_kinds_are_type_errors(ctype, value, words):
    with pytest.raises(TypeError, match=words):
        pack(f"k({ctype} v)", value)


def test_wrong_argument_count_prints_the_signature():
    with pytest.raises(TypeError) as info:
        pack("saxpy(float a, const float* x, float* y, size_t n)", 1.0, 0)
    assert "takes 4 arguments but 2 were given" in str(info.value)
    assert "saxpy(float a, const float* x, float* y, size_t n)" in str(info.value)


def test_pointer_takes_int_address_and_none():
    assert pack("k(float* p)", 0xDEADBEEF000) == struct.pack("<Q", 0xDEADBEEF000)
    assert pack("k(float* p)", None) == bytes(8)
    with pytest.raises(OverflowError):
        pack("k(float* p)", -1)
    with pytest.raises(TypeError):
        pack("k(float* p)", True)
    with pytest.raises(TypeError, match="expected device memory"):
        pack("k(float* p)", 1.5)


@pytest.mark.parametrize("host", [np.zeros(4, np.float32), bytearray(16), b"abcd",
                                  memoryview(bytearray(8))])
def test_host_memory_for_a_pointer_is_a_type_error(host):
    with pytest.raises(TypeError, match="host memory"):
        pack("k(float* p)", host)


class FakeDeviceArray:
    """Anything with __cuda_array_interface__ is accepted as a pointer argument."""

    def __init__(self, ptr, typestr):
        self.__cuda_array_interface__ = {"shape": (4,), "typestr": typestr, "data": (ptr, False),
                                         "version": 3, "strides": None}


def test_cuda_array_interface_objects():
    assert pack("k(float* p)", FakeDeviceArray(0x7000, "<f4")) == struct.pack("<Q", 0x7000)
    assert pack("k(void* p)", FakeDeviceArray(0x7000, "<i8")) == struct.pack("<Q", 0x7000)
    assert pack("k(char* p)", FakeDeviceArray(0x7000, "<f8")) == struct.pack("<Q", 0x7000)
    with pytest.raises(TypeError, match="got a float64 array, but the kernel reads float32"):
        pack("k(float* p)", FakeDeviceArray(0x7000, "<f8"))
    with pytest.raises(TypeError, match="int32"):
        pack("k(unsigned int* p)", FakeDeviceArray(0x7000, "<i4"))


def test_struct_size_is_known_only_after_compiling():
    with pytest.raises(TypeError, match="known only once the kernel is compiled"):
        pack("k(Params p)", b"12345678")
