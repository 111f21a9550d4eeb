"""Regression tests for what fuzzing found in the signature reader (issue 16).

Each test names the finding it pins down. The reader must never crash, hang or
reject a source NVRTC accepts; a declaration written for cukit (Signature(...),
get_kernel(signature=...)) that is not C is a ValueError with a caret under the
column.
"""
import re
import struct
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import cukit


def sigs(src, **kw):
    return {name: str(sig) for name, sig in cukit.Program(src, **kw).signatures.items()}


def run_isolated(code, timeout=120):
    """Run code in a fresh interpreter: a crash there is a failed test, not a dead suite."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# ------------------------------------------------------------------ finding 1: the scanner

def test_a_100000_deep_macro_chain_does_not_overflow_the_stack():
    out = run_isolated("""
        import cukit
        src = "".join(f"#define M{i} M{i + 1}\\n" for i in range(100_000))
        src += "#define M100000 float\\n"
        src += 'extern "C" __global__ void k(M0 a, int n) {}\\n'
        print(cukit.Program(src).signatures["k"])
    """)
    assert out.strip() == "k(float a, int n)"


DOUBLING = "#define E0 x\n" + "".join(f"#define E{i + 1} E{i} E{i}\n" for i in range(40))


def test_doubling_macros_in_a_dead_branch_are_never_expanded():
    src = DOUBLING + "#if 1 + 1 == 3\nint y = E40;\n#endif\n" \
        'extern "C" __global__ void k(int n) {}\n'
    out = run_isolated(f"""
        import time, warnings, cukit
        warnings.simplefilter("error")
        print(cukit.Program({src!r}).signatures["k"])
    """, timeout=60)  # the timeout is the bound on a hang
    assert out.split() == ["k(int", "n)"]


def test_doubling_macros_in_live_code_stop_with_a_warning():
    src = DOUBLING + 'extern "C" __global__ void k(REAL a) {}\n' "int y = E40;\n" \
        'extern "C" __global__ void later(int n) {}\n'
    with pytest.warns(RuntimeWarning, match=r"stopped expanding macros.*signature="):
        found = cukit.Program(src, defines={"REAL": "double"}).signatures
    assert str(found["k"]) == "k(double a)"  # before the budget ran out
    assert str(found["later"]) == "later(int n)"  # after it, read as written


def test_doubling_macros_in_a_condition_stop_with_a_warning():
    src = DOUBLING + "#if E40 == 3\nint y;\n#endif\n" 'extern "C" __global__ void k(int n) {}\n'
    with pytest.warns(RuntimeWarning, match="stopped expanding macros"):
        assert sigs(src) == {"k": "k(int n)"}


@pytest.mark.parametrize("cond, taken", [
    ("1 + 1 == 3", False), ("1 + 1 == 2", True), ("(2 * 3) % 4 == 2 && !0", True),
    ("defined(A) || defined B", True), ("!defined(A)", False), ("A == 5", True),
    ("A > 5 ? 0 : 1", True), ("0x10 >> 4 == 1", True), ("-1 < 0", True), ("-1 < 0u", False),
    ("1 / 0", None), ("UNDEFINED_BY_CUKIT", None), ("UNDEFINED_BY_CUKIT && 0", False),
    ("UNDEFINED_BY_CUKIT || 1", True), ("__CUDACC_VER_MAJOR__ >= 12", None),
    ("'a' == 97", True), ("true", True), ("F(1)", None), ("((((1))))", True), ("1 +", None),
    ("(1 ? -1 : 0u) < 0", False), ("-9223372036854775807 - 1 < 0", True),
    ("18446744073709551615 == -1", True), ("1 << 64", None), ("(-9223372036854775807 - 1) / -1", None),
])
def test_if_conditions_are_evaluated(cond, taken):
    src = f"""
    #define A 5
    #define F(x) x
    #if {cond}
    extern "C" __global__ void inside(int x) {{}}
    #else
    extern "C" __global__ void other(int x) {{}}
    #endif
    """
    found = set(sigs(src))
    expected = {True: {"inside"}, False: {"other"}, None: {"inside", "other"}}[taken]
    assert found == expected


def test_elif_chains_and_undef():
    src = """
    #define V 2
    #if V == 1
    typedef int T;
    #elif V == 2
    typedef double T;
    #else
    typedef char T;
    #endif
    #undef V
    #ifdef V
    extern "C" __global__ void gone(int x) {}
    #endif
    extern "C" __global__ void k(T x) {}
    """
    assert sigs(src) == {"k": "k(double x)"}


def test_deeply_nested_conditions_and_parentheses_are_bounded():
    start = time.perf_counter()
    sigs("#if 1\n" * 100_000 + 'extern "C" __global__ void k(int n) {}\n' + "#endif\n" * 100_000)
    sigs("#if " + "(" * 100_000 + "1" + ")" * 100_000 + "\nint x;\n#endif\n")
    sigs("#if " + "!" * 100_000 + "1\nint x;\n#endif\n")
    sigs("{" * 1_000_000 + "}" * 1_000_000)
    sigs("__global__ " * 200_000)
    assert time.perf_counter() - start < 60  # a bound on a hang, not a speed test


def test_a_2_million_element_initializer_is_accepted():
    src = "__device__ float table[] = {" + ",".join(["1.5f"] * 2_100_000) + "};\n" \
          'extern "C" __global__ void k(const float* x, int n) {}\n'
    prog = cukit.Program(src)
    assert str(prog.signatures["k"]) == "k(const float* x, int n)"
    assert prog.globals["table"] == ("float32", None)


def test_a_source_of_more_than_4_million_tokens_is_accepted():
    src = 'extern "C" __global__ void k(float* x) {\n' + "x[0] += 1;\n" * 700_000 + "}\n" \
          'extern "C" __global__ void k2(int n) {}\n'
    assert sigs(src) == {"k": "k(float* x)", "k2": "k2(int n)"}


def test_a_kernel_with_257_parameters_is_read_and_compiled():
    src = 'extern "C" __global__ void k(' + ", ".join(f"int a{i}" for i in range(257)) + \
          ", int* out) { out[0] = a0 + a256; }"
    prog = cukit.Program(src)
    sig = prog.signatures["k"]
    assert len(sig) == 258
    packed = sig.pack(*range(257), 0)
    assert len(packed) == 257 * 4 + 4 + 8  # 4-byte ints, then the pointer aligned to 8
    assert struct.unpack_from("<i", packed, 256 * 4) == (256,)
    assert b".entry k" in prog.ptx(arch="sm_90")


@pytest.mark.gpu
def test_a_kernel_with_300_parameters_launches(rng):
    n = 300
    src = 'extern "C" __global__ void k(' + ", ".join(f"int a{i}" for i in range(n)) + \
          ", int* out) { out[0] = " + " + ".join(f"a{i}" for i in range(n)) + "; }"
    values = [int(v) for v in rng.integers(-1000, 1000, n)]
    out = cukit.to_device(np.full(1, -1, np.int32))
    cukit.compile(src).k(*values, out, grid=1, block=1)
    assert out.get()[0] == sum(values)


# ------------------------------------------------------------------ finding 4: names

def test_kernel_names_longer_than_511_bytes_are_whole():
    name = "k" * 600
    assert list(cukit.Program(f'extern "C" __global__ void {name}(int n) {{}}').signatures) == [name]
    assert list(cukit.Program(f"namespace {'n' * 600} {{ __global__ void k(int n) {{}} }}")
                .signatures) == ["n" * 600 + "::k"]


def test_a_300_character_utf8_name_is_read_whole():
    name = "é" * 300  # 600 bytes: cut at 511 it was invalid UTF-8
    found = cukit.Program(f'extern "C" __global__ void {name}(int n) {{}}').signatures
    assert list(found) == [name]
    assert cukit.Signature(f"{name}(int n)").name == name


def test_kernels_after_300_nested_namespaces_are_found():
    src = "".join(f"namespace n{i} {{ " for i in range(300)) + "__global__ void k(int x) {}" \
          + "}" * 300 + '\nextern "C" __global__ void after(int y) {}'
    found = sigs(src)
    deep = "::".join(f"n{i}" for i in range(300)) + "::k"
    assert found == {deep: f"{deep}(int x)", "after": "after(int y)"}


def test_a_type_name_over_255_bytes_is_shown_whole():
    t = "T" * 300
    src = f'struct {t} {{ int x; }};\nextern "C" __global__ void k({t} v, const {t}* p) {{}}'
    assert sigs(src)["k"] == f"k({t} v, const {t}* p)"
    assert cukit.Signature(f"k({t} v)").params == ((t, "v"),)


# ------------------------------------------------------------------ finding 5: templates

TEMPLATES = """
template <typename T> struct Vec { T x; };
template <typename T> __global__ void k(T v) {}
template <typename T> __global__ void reduce(const T* in, T* out, int n) {}
template <typename T, int N = 4> __global__ void fixed(T (*rows)[N], Vec<T> v) {}
"""


def test_a_template_argument_passed_by_value_is_not_a_pointer():
    found = cukit.Program(TEMPLATES, name_expressions=["k<Vec<float*>>"]).signatures
    sig = found["k<Vec<float*>>"]
    assert str(sig) == "k<Vec<float*>>(Vec<float*> v)"
    with pytest.raises(TypeError, match="struct"):
        sig.pack(0)  # a struct by value takes bytes, never an address


def test_nested_template_arguments_are_types():
    exprs = ["reduce<Vec<int>>", "reduce<unsigned>", "fixed<float>", "k< Vec< Vec<double> > >"]
    found = sigs(TEMPLATES, name_expressions=exprs)
    assert found == {
        "reduce<Vec<int>>": "reduce<Vec<int>>(const Vec<int>* in, Vec<int>* out, int n)",
        "reduce<unsigned>": "reduce<unsigned>(const unsigned int* in, unsigned int* out, int n)",
        "fixed<float>": "fixed<float>(float* rows, Vec<float> v)",
        "k< Vec< Vec<double> > >": "k< Vec< Vec<double> > >(Vec<Vec<double>> v)",
    }


def test_signature_text_round_trips_for_template_instances():
    exprs = ["k<Vec<float*>>", "reduce<Vec<int>>", "fixed<double, 8>", "k<int>"]
    for sig in cukit.Program(TEMPLATES, name_expressions=exprs).signatures.values():
        again = cukit.Signature(str(sig))
        assert str(again) == str(sig)
        assert again.name == sig.name and again.params == sig.params


@pytest.mark.parametrize("decl", [
    "saxpy(float a, const float* x, float* y, size_t n)", "(float a)", "()", "k()",
    "ns::k(const ns::Foo<int, 3>* p, unsigned long long n)", "k(int* __restrict__ p)",
])
def test_signature_text_round_trips(decl):
    sig = cukit.Signature(decl)
    assert str(cukit.Signature(str(sig))) == str(sig)


def test_an_unnamed_declaration_has_no_name():
    assert cukit.Signature("(float a)").name == ""
    assert str(cukit.Signature("(float a)")) == "(float a)"
    assert cukit.Signature("float a, int n").name == ""


@pytest.mark.gpu
def test_a_template_struct_by_value_launches(rng):
    src = """
    template <typename T> struct Pair { T a; T b; };
    template <typename T> __global__ void add(Pair<T> p, T* out) { out[0] = p.a + p.b; }
    """
    mod = cukit.compile(src, name_expressions=["add<float>"])
    assert str(mod.get_kernel("add<float>").signature) == "add<float>(Pair<float> p, float* out)"
    a, b = (float(v) for v in rng.random(2).astype(np.float32))
    out = cukit.to_device(np.full(1, np.nan, np.float32))
    mod.get_kernel("add<float>")(struct.pack("<ff", a, b), out, grid=1, block=1)
    assert out.get()[0] == np.float32(a) + np.float32(b)


# ------------------------------------------------------------------ malformed declarations

@pytest.mark.parametrize("decl, column, words", [
    ("k(int n, dou#ble *p)", 13, "'#' cannot be part of a parameter"),
    ("k(float a, ;;; int b)", 12, "';' cannot be part of a parameter"),
    ("saxpy(...)))", 7, "variable number of arguments"),
    ("saxpy(float a)))", 15, "unexpected text after the parameter list"),
    ("k(float a", 10, "not closed"),
    ("k(int a,, int b)", 9, "parameter 2 is empty"),
    ("k(int a,)", 9, "parameter 2 is empty"),
    ("k(void x)", 3, "cannot have type void"),
    ("k(const)", 3, "has no type"),
    ("k(float a b)", 11, "one word too many"),
    ("k(int 3)", 7, "a number cannot be"),
    ('k(int "s")', 7, "a string cannot be"),
    ("k(Vec<float)> v)", 6, "never closed"),
    ("k(Vec<float]> v)", 12, "closes nothing"),
    ("k(Vec<float;> v)", 12, "cannot appear inside these brackets"),
    ('k(int a["x"])', 9, "a string cannot appear inside these brackets"),
    ("k{int a}(int b)", 2, "kernel's name"),
    ("k(int a) {", 10, "unexpected text"),
])
def test_malformed_declarations_are_refused_with_a_caret(decl, column, words):
    with pytest.raises(ValueError) as info:
        cukit.Signature(decl)
    msg = str(info.value)
    assert words in msg
    assert f"line 1, column {column}:" in msg
    lines = msg.splitlines()
    shown, caret = lines[1], lines[2]
    assert shown == "    " + decl
    assert caret == "    " + " " * (column - 1) + "^"


def test_the_caret_points_into_the_right_line_and_counts_characters():
    decl = "k(float é,\n\tint 3x)"
    with pytest.raises(ValueError, match="line 2, column 6") as info:
        cukit.Signature(decl)
    assert info.value.args[0].splitlines()[1:3] == ["    \tint 3x)", "    \t    ^"]


def test_a_long_line_is_shown_around_the_column():
    decl = "k(" + ", ".join(f"int a{i}" for i in range(100)) + ", float # b)"
    with pytest.raises(ValueError) as info:
        cukit.Signature(decl)
    shown, caret = info.value.args[0].splitlines()[1:3]
    assert len(shown) < 140 and shown.startswith("    ...")
    assert shown[len(caret) - 1] == "#"


@pytest.mark.gpu
def test_malformed_signatures_given_to_get_kernel_are_refused_the_same_way():
    image = cukit.Program('extern "C" __global__ void k(float a) {}').ptx(arch=cukit.Device().arch)
    mod = cukit.Module.load(image)
    with pytest.raises(ValueError, match=r"column 9: '@'"):
        mod.get_kernel("k", signature="k(float @a)")
    assert str(mod.get_kernel("k", signature="(float a)").signature) == "k(float a)"


@pytest.mark.parametrize("decl, shown", [
    ("k(float a, const float* __restrict__ x, float *y, size_t n)",
     "k(float a, const float* x, float* y, size_t n)"),
    ("k(float (*p)[4], int x[][3], const ns::Foo<int, 3>& r)", "k(float* p, int* x, const ns::Foo<int, 3>* r)"),
    ("k(__grid_constant__ const Params p)", "k(Params p)"),
    ("k(int __align__(16) a, int alignas(8) b)", "k(int a, int b)"),
    ("k(int n = 3, float* p = nullptr)", "k(int n, float* p)"),
    ("void k(int a);", "k(int a)"),
    ("k(void)", "k()"),
    ("k(unsigned, long long)", "k(unsigned int, long long)"),
    ("k(typename T::type x)", "k(T::type x)"),
    ("k(std::size_t n, ::uint32_t m)", "k(size_t n, uint32_t m)"),
    ("k(int n) // a comment", "k(int n)"),
    ("void __launch_bounds__(256, 2) k(int a)", "k(int a)"),
    ("k(const float* x, int n) { if (n) x[0]; }", "k(const float* x, int n)"),
    ("template <typename T> k(T a)", "k(T a)"),
])
def test_declarations_nvrtc_accepts_still_parse(decl, shown):
    assert str(cukit.Signature(decl)) == shown


def test_global_declarations_are_checked_too():
    assert str(cukit.Signature('extern "C" __global__ void k(int n, float* x);')) == "k(int n, float* x)"
    with pytest.raises(ValueError, match="column 37: '#'") as info:
        cukit.Signature('extern "C" __global__ void k(int n, #x)')
    assert info.value.args[0].splitlines()[2].index("^") == 4 + 36


@pytest.mark.parametrize("src", [
    'extern "C" __global__ void k(int n, dou#ble *p) {}',
    'extern "C" __global__ void k(void x) {}',
    'extern "C" __global__ void k(const) {}',
])
def test_sources_nvrtc_rejects_are_left_to_nvrtc(src):
    # The reader of Program sources stays lenient: NVRTC, not cukit, reports the error.
    prog = cukit.Program(src)
    with pytest.raises(cukit.CompileError):
        prog.ptx(arch="sm_90")


# ------------------------------------------------------------------ found by tests/fuzz

@pytest.mark.parametrize("decl, words", [
    # __global__ inside a longer word is not a kernel declaration
    ("(f__global__lf float a)", "one word too many"),
    ('extern "C" __global__0x7f void k(=int n)', "parameter 1 has no type"),
    # more than one kernel, or none that can be read
    ('__global__ void a(int x); __global__ void b(int y);', "one kernel's declaration"),
    ("#if 0\n__global__ void k(int n);\n#endif", "no kernel declaration could be read"),
    ("struct S { __global__ void k(int n); };", "no kernel declaration could be read"),
    # a stray comma in a function parameter's own list
    ("k(short s(, bool b))", "an empty entry in parentheses"),
    ("k(std::void)", "cannot have type void"),
])
def test_fuzzed_declarations_are_refused_with_a_caret(decl, words):
    with pytest.raises(ValueError, match="column") as info:
        cukit.Signature(decl)
    msg = info.value.args[0]
    assert words in msg and msg.splitlines()[2].rstrip().endswith("^")


def test_control_characters_and_line_separators_keep_the_message_in_shape():
    with pytest.raises(ValueError) as info:
        cukit.Signature("k(int a\x1c, float\u2028b, \x85x)")
    lines = info.value.args[0].splitlines()
    assert "control character \\x1c" in lines[0] and "column 8" in lines[0]
    assert lines[1] == "    k(int a?, float?b, ?x)"
    assert lines[2] == "           ^"


@pytest.mark.parametrize("decl, shown", [
    ("k(::__grid_constant__ const Params p)", "k(Params p)"),
    ("k(void (*f)(int a, float b), int n)", "k(void* f, int n)"),
    ("k(int f(int), float* x)", "k(int* f, float* x)"),
    ("k<decltype(1 + 2)>(decltype(1+2) v)", "k<decltype(1 + 2)>(decltype(1+2) v)"),
    ("::k<long long>(long long v)", "::k<long long>(long long v)"),
    ("k([[maybe_unused]] int n, float [[maybe_unused]] x)", "k(int n, float x)"),
])
def test_fuzzed_declarations_that_are_c_read_back(decl, shown):
    sig = cukit.Signature(decl)
    assert str(sig) == shown
    assert str(cukit.Signature(str(sig))) == shown


def test_fuzzed_name_expressions():
    src = """
    template <typename T> struct Vec { T x; };
    template <typename T> __global__ void k(T v) {}
    """
    exprs = ["&k<unsigned>", "k<int[3]>", "k<decltype(1 + 2)>", "k<Vec<f/*lo*>>", "k<Vec<int"]
    found = cukit.Program(src, name_expressions=exprs).signatures
    # the & takes the kernel's address: not part of its name; an array decays to a pointer;
    # an expression whose brackets never close (a comment ate them) is left to NVRTC
    assert {k: str(v) for k, v in found.items()} == {
        "&k<unsigned>": "k<unsigned>(unsigned int v)",
        "k<int[3]>": "k<int[3]>(int* v)",
        "k<decltype(1 + 2)>": "k<decltype(1 + 2)>(decltype(1+2) v)",
    }
    for sig in found.values():
        assert str(cukit.Signature(str(sig))) == str(sig)


def test_many_template_kernels_and_name_expressions_are_read_in_linear_time():
    n = 3000
    src = "".join(f"template <typename T> __global__ void k{i}(T x, const T* y) {{}}\n" for i in range(n))
    exprs = [f"k{i}<float>" for i in range(n)] + ["k0<float>"] * n
    start = time.perf_counter()
    found = cukit.Program(src, name_expressions=exprs).signatures
    assert len(found) == n and str(found["k17<float>"]) == "k17<float>(float x, const float* y)"
    assert time.perf_counter() - start < 30  # a bound on a quadratic blow-up, not a speed test


# ------------------------------------------------------------------ branches cukit cannot evaluate

UNKNOWABLE = "__CUDACC_VER_MAJOR__ >= 12"  # NVRTC knows; cukit does not load NVRTC to read


@pytest.mark.parametrize("src", [
    f"#if {UNKNOWABLE}\n#define R float\n#else\n#define R int\n#endif\n"
    'extern "C" __global__ void k(R a) {}',
    f"#if {UNKNOWABLE}\ntypedef float R;\n#else\ntypedef int R;\n#endif\n"
    'extern "C" __global__ void k(R a) {}',
    f"#if {UNKNOWABLE}\n#define USE 1\n#else\n#define USE 0\n#endif\n"
    '#if USE\ntypedef float R;\n#else\ntypedef int R;\n#endif\nextern "C" __global__ void k(R a) {}',
    f"#if {UNKNOWABLE}\n#define USE\n#endif\n"
    '#ifdef USE\ntypedef float R;\n#else\ntypedef int R;\n#endif\nextern "C" __global__ void k(R a) {}',
    f"#if {UNKNOWABLE}\n" 'extern "C" __global__ void k(float a) {}\n#else\n'
    'extern "C" __global__ void k(int a) {}\n#endif',
])
def test_types_from_a_branch_cukit_cannot_evaluate_are_warned_about(src):
    # NVRTC 12+ reads float; cukit, which cannot tell, reads both branches and the
    # last one wins: a float passed as an int's bits would be a silent wrong result
    with pytest.warns(RuntimeWarning, match=r"k\(int a\) with parameter types that depend on "
                                            r"a branch of #if.*signature="):
        assert str(cukit.Program(src).signatures["k"]) == "k(int a)"
    with pytest.warns(RuntimeWarning):
        ptx = cukit.Program(src).ptx(arch="sm_90")
    assert b".param .f32 k_param_0" in ptx  # what NVRTC compiled


@pytest.mark.parametrize("src", [
    f"#if {UNKNOWABLE}\n" 'extern "C" __global__ void fast(float* x) {}\n#else\n'
    'extern "C" __global__ void slow(float* x) {}\n#endif',
    f"#define R float\n#if {UNKNOWABLE}\n" 'extern "C" __global__ void k(R a) {}\n#endif',
    f"#if {UNKNOWABLE}\n" 'extern "C" __global__ void k(float a);\n#endif\n'
    'extern "C" __global__ void k(float a) {}',
    "#define V 2\n#if V == 2\ntypedef float R;\n#else\ntypedef int R;\n#endif\n"
    'extern "C" __global__ void k(R a) {}',
])
def test_branches_that_do_not_change_a_type_are_not_warned_about(src):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cukit.Program(src).signatures


# ------------------------------------------------------------------ the lexer: text that is not code

def test_a_raw_string_hides_its_braces_comments_and_quotes():
    src = '__device__ const char r[] = R"x(} { /* " __global__ void fake(int a) {} )x";\n' \
          '__device__ const char u[] = u8R"(})";\n' \
          'extern "C" __global__ void k(int n) {}\n'
    assert sigs(src) == {"k": "k(int n)"}
    assert b".entry k(" in cukit.Program(src).ptx(arch="sm_90")


def test_digit_separators_are_part_of_a_number():
    # read as a character literal, 1'0; would swallow the rest of its line
    src = "__device__ int table[1'024];\n" \
          'extern "C" __global__ void k(int n) { int x = 1\'0; }\n' \
          'extern "C" __global__ void j(float a) {}\n'
    prog = cukit.Program(src)
    assert sigs(src) == {"k": "k(int n)", "j": "j(float a)"}
    assert prog.globals["table"] == ("int32", (1024,))
    assert b".entry j(" in prog.ptx(arch="sm_90")


def test_array_dimensions_are_read_as_c_reads_them():
    found = cukit.Program("__device__ int a[0x10]; __device__ int b[010]; __device__ int c[16u][2];"
                          "__device__ int d[1'024]; __device__ float e[N];").globals
    assert found == {"a": ("int32", (16,)), "b": ("int32", (8,)), "c": ("int32", (16, 2)),
                     "d": ("int32", (1024,)), "e": ("float32", None)}


@pytest.mark.parametrize("cond, taken", [("1'000 == 1000", True), ("0x1'0u == 16", True),
                                         ("1'000 < 999", False)])
def test_digit_separators_in_conditions(cond, taken):
    src = f'#if {cond}\nextern "C" __global__ void yes(int n) {{}}\n#else\n' \
          'extern "C" __global__ void no(int n) {}\n#endif\n'
    assert set(sigs(src)) == ({"yes"} if taken else {"no"})


def test_a_comment_in_a_directive_may_go_on_over_lines():
    src = '#define ONE 1 /* a comment that goes on\n  __global__ void fake(int n) {} { */\n' \
          'extern "C" __global__ void k(int n) {}\n'
    assert sigs(src) == {"k": "k(int n)"}


def test_line_splices_between_tokens_are_nothing():
    src = 'extern "C" __global__ void k(int\\\n n, float\\\r\n a) {}\n' \
          "// a comment goes on over a splice \\\n__global__ void fake(int n) {}\n"
    assert sigs(src) == {"k": "k(int n, float a)"}
    assert str(cukit.Signature("k(int\\\n n)")) == "k(int n)"


# ------------------------------------------------------------------ declarations for cukit, again

@pytest.mark.parametrize("decl, column, words", [
    ("k(long long long x)", 13, "'long' once too often"),
    ("k(int int x)", 7, "'int' once too often"),
    ("k(unsigned signed char c)", 12, "a type cannot be both signed and unsigned"),
])
def test_built_in_type_words_are_said_once(decl, column, words):
    # NVRTC refuses these; before, the name was dropped ("k(long long)")
    with pytest.raises(ValueError, match=f"column {column}: {words}"):
        cukit.Signature(decl)


@pytest.mark.parametrize("decl, shown", [
    ("float (*p)[4], int n", "(float* p, int n)"),
    ("void (*f)(int), int n", "(void* f, int n)"),
    ("float a, int (*f)(int)", "(float a, int* f)"),
    ("MyType (*p)[4]", "(MyType* p)"),
    ("MyType (*p), int n", "(MyType* p, int n)"),
    ("k<int, 3>(float a)", "k<int, 3>(float a)"),
])
def test_a_bare_parameter_list_may_hold_parentheses(decl, shown):
    # before, any "(" made the text a name and a list: these were refused
    assert str(cukit.Signature(decl)) == shown


@pytest.mark.parametrize("decl, shown", [
    ("k(float(int n), int m)", "k(float*, int m)"),  # an unnamed function: a pointer
    ("void(int n)", "(void*)"),
    ("k(Vec (int), int m)", "k(Vec*, int m)"),
    ("k(float (x), int m)", "k(float x, int m)"),  # a name in parentheses
    ("k(float (x)[4])", "k(float* x)"),  # an array in parentheses decays
    ("k(int (f)(int))", "k(int* f)"),
    ("k(float (**p)[4])", "k(float** p)"),
])
def test_parentheses_in_a_parameter_are_read_as_c_reads_them(decl, shown):
    # fuzzing found 'extern "C" __global__ void(int n, float* x);' read as a kernel named
    # void, whose text read back as '(void int n , float* x)'
    assert str(cukit.Signature(decl)) == shown
    assert str(cukit.Signature(shown)) == shown


@pytest.mark.parametrize("decl, column, words", [
    # found by tests/fuzz (signature, seed 31337): each read as one parameter whose
    # type held the rest of the list, and whose text did not read back
    ("oo<int, typename3>*( p, unsigned long long n)", 22, "expected a name, '*' or '&' in these"),
    ("k*(floata, \U00010000 b)", 4, "expected a name, '*' or '&' in these"),
    ("sfloat a, const flfloat*( y, &size_t n)", 27, "expected a name, '*' or '&' in these"),
    ("ns::k&(const ns::Foo<int, 3>* , unsec<float*> v)", 8, "expected a name, '*' or '&' in these"),
    ("k(float (*p, q))", 12, "a declarator in parentheses names one parameter"),
    ("k((int n))", 3, "a parameter starts with its type"),
])
def test_parentheses_that_hold_no_declarator_are_refused(decl, column, words):
    with pytest.raises(ValueError, match=f"column {column}: " + re.escape(words)):
        cukit.Signature(decl)


@pytest.mark.parametrize("decl, shown", [
    ("k(float* (x)[4])", "k(float** x)"), ("k(void (*)(int, int))", "k(void*)"),
    ("k(int (&)[3])", "k(int*)"), ("k(void (*(*f)(int))(float))", "k(void** f)"),
])
def test_declarators_in_parentheses_still_read(decl, shown):
    assert str(cukit.Signature(decl)) == shown


def test_a_type_word_is_no_kernel_name():
    with pytest.raises(ValueError, match="column 27: expected the kernel's name"):
        cukit.Signature('extern "C" __global__ void(int n, float* x);')
    assert sigs('extern "C" __global__ void(int n) {}\nextern "C" __global__ void k(int n) {}') \
        == {"k": "k(int n)"}


def test_a_name_and_list_followed_by_more_is_still_refused():
    with pytest.raises(ValueError, match="column 11: unexpected text after the parameter list"):
        cukit.Signature("k(float a), int b")


# ------------------------------------------------------------------ ElementwiseKernel and ReductionKernel

LONG_TYPE = "T " + "t" * 200 + " " + "u" * 60 + " x"  # type words of 264 bytes


def test_elementwise_parameter_types_over_255_bytes_are_refused():
    # found by tests/fuzz (elementwise_params) under AddressSanitizer: a stack buffer overflow
    with pytest.raises(ValueError, match="ElementwiseKernel: the type of parameter 'x' is over "
                                         "255 bytes long"):
        cukit.ElementwiseKernel(LONG_TYPE, "float32 out", "out = 0")


def test_reduction_parameter_types_over_255_bytes_are_refused():
    with pytest.raises(ValueError, match="ReductionKernel: the type of parameter 'x' is over "
                                         "255 bytes long"):
        cukit.ReductionKernel(LONG_TYPE, "float32 out", "x", "a + b", "out = a", "0")
    with pytest.raises(ValueError, match="over 255 bytes long"):
        cukit.ReductionKernel(np.float32, "0", "a + b", "x[i]", arguments="const " + LONG_TYPE)


def test_a_ninth_word_of_a_parameter_is_not_dropped():
    # before, "a b c d e f g h i" became a parameter named h
    with pytest.raises(ValueError, match="more than 8 words"):
        cukit.ElementwiseKernel("a b c d e f g h i", "float32 out", "out = 0")
    with pytest.raises(ValueError, match="more than 8 words"):
        cukit.ReductionKernel("a b c d e f g h i", "float32 out", "x", "a + b", "out = a", "0")
