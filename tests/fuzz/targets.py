"""The fuzz targets: how each makes an input, feeds it to cukit, and what a clean refusal is."""
import ctypes
import os
import shutil
import tempfile
import time
import warnings

import numpy as np

import cukit

# ------------------------------------------------------------------ mutation helpers

# Pieces that parsers of C declarations trip over.
PIECES = [
    "#", ";", ",", "(", ")", "<", ">", "[", "]", "{", "}", "*", "&", "::", ":", ".", "...", "=",
    "/", "//", "/*", "*/", '"', "'", "\\", "\n", "\t", " ", "@", "$", "`", "?", "!", "~", "%",
    "0", "1", "-1", "0x7fffffffffffffff", "3.5f", "1e309", "'a'", "const", "volatile",
    "unsigned", "long", "int", "float", "double", "void", "char", "struct", "typename",
    "template", "__restrict__", "__grid_constant__", "__align__(16)", "alignas(8)",
    "__attribute__((aligned(4)))", "std::", "size_t", "Vec<float*>", "Vec<Vec<int>>",
    "T", "x", "é", "名前", "\u200b", "\U0001F600", "__global__", "extern \"C\"",
    "#define", "#if 0", "#endif", "#else", "#elif 1", "#undef X", "defined(X)",
    'R"(', ')"', 'R"x(', ')x"', "1'000", "0x1p-3", "\\\n", "\\\r\n",
]

DECLARATIONS = [
    "saxpy(float a, const float* x, float* y, size_t n)",
    "k(int n, double *p)",
    "k(float a, int b)",
    "(float a)",
    "k()",
    "k(void)",
    "ns::k(const ns::Foo<int, 3>* p, unsigned long long n)",
    "k<Vec<float*>>(Vec<float*> v)",
    "reduce<Vec<int>>(const Vec<int>* in, Vec<int>* out, int n)",
    "k(float (*p)[4], int x[][3], const float* __restrict__ q)",
    "k(__grid_constant__ const Params p, int __align__(16) a)",
    "k(int n = 3, float* p = nullptr)",
    "void k(unsigned, long long, signed char c, short s, bool b)",
    "k(__half h, __nv_bfloat16 b, float2 f, double2 d, cuDoubleComplex z)",
    "k(std::size_t n, ::uint32_t m, int8_t a, uint64_t b)",
    "k(typename T::type x, struct S s, enum E e)",
    "float a, int n",
    'extern "C" __global__ void k(int n, float* x);',
]


def mutate(rng, text, rounds=None):
    """A few random edits of text: insert a piece, delete or repeat a span, splice."""
    for _ in range(rounds if rounds is not None else rng.randint(1, 4)):
        op = rng.random()
        at = rng.randint(0, len(text))
        if op < 0.45:
            text = text[:at] + rng.choice(PIECES) + text[at:]
        elif op < 0.65 and text:
            end = min(len(text), at + rng.randint(1, 8))
            text = text[:at] + text[end:]
        elif op < 0.75 and text:
            end = min(len(text), at + rng.randint(1, 12))
            text = text[:at] + text[at:end] * rng.randint(2, 40) + text[end:]
        elif op < 0.85:
            other = rng.choice(DECLARATIONS)
            cut = rng.randint(0, len(other))
            text = text[:at] + other[cut:]
        elif op < 0.92:
            text = text[:at]
        else:
            text = text[:at] + chr(rng.choice([0x80, 0x7ff, 0x800, 0xffff, 0x10000, 0x10ffff,
                                               rng.randint(1, 0x2ff)])) + text[at:]
    return text


class Target:
    """One fuzz target. make(rng) -> input; check(input) raises `allowed` on a clean
    refusal, anything else on a finding; show(input) -> text for a report. `index` is
    the case being made (for the harness's own test)."""

    allowed = (ValueError,)
    index = 0
    time_limit = 5.0  # seconds for one case: past this, a finding ("slow")
    hang_limit = None  # seconds before its worker is killed (a "hang"); None: 4 x time_limit, >= 30

    def setup(self):
        warnings.simplefilter("ignore")
        self.temporary = []  # folders to remove in teardown

    def teardown(self):
        for path in self.temporary:
            shutil.rmtree(path, ignore_errors=True)

    def make(self, rng):
        raise NotImplementedError

    def check(self, data):
        raise NotImplementedError

    def show(self, data):
        return repr(data)


def check_caret(exc):
    """A refused declaration says where: line, column, the line and a caret."""
    msg = str(exc)
    if "embedded null character" in msg:
        return
    lines = msg.splitlines()
    if "column" not in lines[0] or len(lines) < 3 or not lines[2].rstrip().endswith("^"):
        raise AssertionError(f"a refusal without a caret: {msg!r}")


def same(a, b, what):
    if str(a) != str(b) or a.params != b.params or a.name != b.name:
        raise AssertionError(f"{what}: {str(a)!r} reads back as {str(b)!r}")


# ------------------------------------------------------------------ signatures

class SignatureTarget(Target):
    """cukit.Signature(declaration): refused with a caret, or read back the same."""

    def make(self, rng):
        if rng.random() < 0.1:  # a long generated list
            kinds = ["int", "float", "const double*", "unsigned char", "Vec<int>", "T**", "bool"]
            params = ", ".join(f"{rng.choice(kinds)} p{i}" for i in range(rng.randint(0, 600)))
            return mutate(rng, f"k({params})", rng.randint(0, 2))
        return mutate(rng, rng.choice(DECLARATIONS))

    def check(self, decl):
        try:
            sig = cukit.Signature(decl)
        except ValueError as exc:
            check_caret(exc)
            raise
        same(sig, cukit.Signature(str(sig)), "round trip")
        sig.params, len(sig), repr(sig)


class SignatureVsNvrtcTarget(Target):
    """Every parameter list NVRTC compiles, cukit.Signature reads: a refusal is checked
    against NVRTC itself (`extern "C" __global__ void k(<list>) {}`), and NVRTC
    accepting it is a finding."""

    allowed = (ValueError,)
    time_limit = 20.0
    TYPES = ["int", "float", "double", "unsigned", "long long", "char", "bool", "size_t",
             "unsigned char", "short", "int8_t", "uint64_t", "float2", "double2", "void*",
             "const float*", "float**", "int*"]
    NEAR = ["*", "&", "const", "volatile", "__restrict__", "unsigned", "long", "signed", "[]",
            "[4]", "(*p)", ",", " ", "x", "int", "=", "= 0", "__align__(16)", "alignas(8)",
            "__grid_constant__", "::", "std::", "[[maybe_unused]]", "/* c */", "\n", "0",
            "(int n)", "(x)", "()", "(&r)"]

    def make(self, rng):
        params = [f"{rng.choice(self.TYPES)} p{i}" for i in range(rng.randint(1, 4))]
        text = ", ".join(params)
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(text))
            text = text[:at] + (" " if rng.random() < 0.5 else "") + rng.choice(self.NEAR) + \
                (" " if rng.random() < 0.5 else "") + text[at:]
        return text

    # What cukit shows -> bytes, for the types whose size it knows without a compile.
    SIZES = {"bool": 1, "char": 1, "signed char": 1, "unsigned char": 1, "short": 2,
             "unsigned short": 2, "int": 4, "unsigned int": 4, "long": 8, "unsigned long": 8,
             "long long": 8, "unsigned long long": 8, "int8_t": 1, "uint64_t": 8, "size_t": 8,
             "float": 4, "double": 8, "float2": 8, "double2": 16}
    PTX_BITS = {"8": 1, "16": 2, "32": 4, "64": 8}

    @classmethod
    def ptx_sizes(cls, ptx):
        """The parameter sizes of kernel k, from its PTX .entry."""
        import re

        entry = ptx[ptx.index(".entry k("):]
        entry = entry[:entry.index(")")]
        sizes = []
        for m in re.finditer(r"\.param\s+([^\n,]*?)\s*k_param_\d+(?:\[(\d+)\])?", entry):
            if m.group(2):
                sizes.append(int(m.group(2)))
            else:
                sizes.append(cls.PTX_BITS[re.search(r"\.[usbf](\d+)", m.group(1)).group(1)])
        return sizes

    def check(self, plist):
        src = f'extern "C" __global__ void k({plist}) {{}}'
        try:
            sig = cukit.Signature(f"k({plist})")
        except ValueError as refusal:
            check_caret(refusal)
            try:
                cukit.Program(src).ptx(arch="sm_90")
            except cukit.CompileError:
                raise refusal from None
            raise AssertionError(f"NVRTC compiles k({plist}) but cukit refuses it: {refusal}")
        try:
            ptx = cukit.Program(src).ptx(arch="sm_90").decode()
        except cukit.CompileError:
            return  # cukit reads more than NVRTC compiles: NVRTC reports it
        sizes = self.ptx_sizes(ptx)
        mine = [8 if t.endswith("*") else self.SIZES.get(t) for t, _ in sig.params]
        if len(mine) != len(sizes) or any(m is not None and m != s for m, s in zip(mine, sizes)):
            raise AssertionError(f"k({plist}) reads as {sig}, but NVRTC's parameters have "
                                 f"sizes {sizes}")


# ------------------------------------------------------------------ sources

SOURCE_PARTS = [
    '#define REAL float\n', '#define KERNEL extern "C" __global__\n', "#define E0 x\n",
    "#define E1 E0 E0\n#define E2 E1 E1\n#define E3 E2 E2\n", "#define F(x) x\n",
    "#if 1 + 1 == 3\n", "#if defined(REAL) && REAL_OK\n", "#ifdef __CUDACC__\n", "#ifndef X\n",
    "#elif 2 > 1\n", "#else\n", "#endif\n", "#undef REAL\n", "#if (((1)))\n", "#if\n",
    "typedef unsigned int uint;\n", "using index_t = long long;\n", "typedef float* fptr;\n",
    "template <typename T> struct Vec { T x; };\n", "namespace a { namespace b {\n", "}\n",
    "} }\n", 'extern "C" {\n', "struct S { int x; __device__ void f(int) {} };\n",
    "__constant__ float coef[16];\n", "__device__ int a, b[2][3];\n",
    "__device__ float table[] = {1, 2, 3};\n",
    'KERNEL void k1(REAL a, uint n, index_t m, fptr p) {}\n',
    'extern "C" __global__ void k2(const float* __restrict__ x, float* y, size_t n) { y[0] = x[0]; }\n',
    "__global__ void cpp(int* x) {}\n",
    "template <typename T> __global__ void tk(T a, const T* x, Vec<T> v) {}\n",
    "template <typename T, int N = 4> __global__ void tn(T (*rows)[N]) {}\n",
    "__global__ void __launch_bounds__(256, 2) lb(int n) {}\n",
    "// __global__ void fake(int a) {}\n", "/* __global__ void fake2(int a) {} */\n",
    'const char* s = "__global__ void fake3(int)";\n', "E3 E3\n",
    '__device__ const char r[] = R"x(} { /* " __global__ void fake4(int) )x";\n',
    "__device__ int sep[1'024]; __device__ float e = 1e+5f;\n",
    "#define LONG_ONE 1 /* a comment\n  __global__ void fake5(int) {} */\n",
    'extern "C" __global__ void k3(int a,\\\n float b) {}\n', "// a comment \\\n}\n",
]


class SourceTarget(Target):
    """cukit.Program(source).signatures and .globals: never a crash, a hang or a refusal
    (NVRTC, not the reader, judges a source)."""

    allowed = ()
    time_limit = 10.0

    def make(self, rng):
        parts = [rng.choice(SOURCE_PARTS) for _ in range(rng.randint(1, 25))]
        src = "".join(parts)
        if rng.random() < 0.7:
            src = mutate(rng, src)
        if rng.random() < 0.1:  # something big: deep, long or wide
            piece = rng.choice(["{", "}", "(", "<", "#if 1\n", "#endif\n", "namespace n {",
                                "__global__ ", "#define M M M\n", "int a,", "\\\n", "/*"])
            src = src[:rng.randint(0, len(src))] + piece * rng.randint(1000, 50_000) + src
        if rng.random() < 0.05:
            n = rng.randint(100, 5000)
            src = "".join(f"#define M{i} M{i + 1}\n" for i in range(n)) + f"#define M{n} float\n" \
                + 'extern "C" __global__ void k(M0 a) {}\n' + src
        defines = {}
        if rng.random() < 0.3:
            defines = {rng.choice(["REAL", "X", "T", "E0", "N"]): rng.choice([None, "double", "1", "", "E0 E0"])}
        exprs = [mutate(rng, e, rng.randint(0, 2)) for e in
                 rng.sample(["tk<float>", "tk<Vec<int>>", "tn<double>", "tn<int, 8>", "&tk<T>"], 2)]
        return src, defines, exprs

    def check(self, data):
        src, defines, exprs = data
        prog = cukit.Program(src, defines=defines, name_expressions=exprs)
        for sig in prog.signatures.values():
            str(sig), sig.params
        prog.globals


class ConditionsVsNvrtcTarget(Target):
    """#if evaluation against NVRTC's: when cukit decides a branch, it is NVRTC's."""

    allowed = ()
    time_limit = 20.0
    BINARY = ["+", "-", "*", "/", "%", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&", "^",
              "|", "&&", "||"]

    def expr(self, rng, depth):
        if depth <= 0 or rng.random() < 0.25:
            return rng.choice([
                str(rng.randint(0, 20)), str(rng.randint(-5, 5)), hex(rng.randint(0, 300)),
                f"{rng.randint(0, 9)}u", f"{rng.randint(0, 2**63 - 1)}", "0x7fffffffffffffff",
                "'a'", "A", "B", "UNDEF", "defined(A)", "defined UNDEF", "!defined(B)", "true",
                "false", "M(1)", "1'000", "0x1'0u"])
        kind = rng.random()
        if kind < 0.6:
            return f"{self.expr(rng, depth - 1)} {rng.choice(self.BINARY)} {self.expr(rng, depth - 1)}"
        if kind < 0.75:
            return f"{rng.choice(['!', '-', '~', '+'])}{self.expr(rng, depth - 1)}"
        if kind < 0.9:
            return f"({self.expr(rng, depth - 1)})"
        return f"{self.expr(rng, depth - 1)} ? {self.expr(rng, depth - 1)} : {self.expr(rng, depth - 1)}"

    def make(self, rng):
        defines = f"#define A {rng.randint(-3, 9)}\n#define B (A + {rng.randint(0, 3)})\n" \
                  "#define M(x) x\n"
        return defines, self.expr(rng, rng.randint(1, 4))

    def show(self, data):
        return f"{data[0]}#if {data[1]}"

    def check(self, data):
        defines, cond = data
        src = f"""{defines}#if {cond}
extern "C" __global__ void yes(int x) {{}}
#else
extern "C" __global__ void no(int x) {{}}
#endif
"""
        read = set(cukit.Program(src).signatures)
        if read == {"yes", "no"}:
            return  # unknown to cukit: both branches read
        try:
            ptx = cukit.Program(src).ptx(arch="sm_90")
        except cukit.CompileError:
            return  # NVRTC refuses the condition (a division by zero, ...)
        nvrtc = {k for k in ("yes", "no") if f".entry {k}(".encode() in ptx}
        if read != nvrtc:
            raise AssertionError(f"#if {cond}: cukit reads {sorted(read)}, NVRTC compiles "
                                 f"{sorted(nvrtc)}")


class SourceVsNvrtcTarget(Target):
    """Kernels read from generated sources (aliases, macros, #if, attributes, arrays)
    against NVRTC's PTX: every kernel it compiles is read, with its parameters'
    count, sizes and kinds (floating point, integer or pointer, bytes)."""

    allowed = ()
    time_limit = 20.0
    SPELLINGS = [  # (spelling, kind, size)
        ("int", "i", 4), ("signed", "i", 4), ("unsigned", "i", 4), ("unsigned int", "i", 4),
        ("long int", "i", 8), ("long unsigned", "i", 8), ("unsigned long long int", "i", 8),
        ("long long unsigned", "i", 8), ("short", "i", 2), ("unsigned short int", "i", 2),
        ("signed char", "i", 1), ("unsigned char", "i", 1), ("char", "i", 1), ("bool", "i", 1),
        ("float", "f", 4), ("double", "f", 8), ("const float*", "i", 8), ("float const*", "i", 8),
        ("const float* const", "i", 8), ("volatile int*", "i", 8), ("double**", "i", 8),
        ("void*", "i", 8), ("__half", "b", 2), ("float2", "b", 8), ("double2", "b", 16),
        ("int8_t", "i", 1), ("uint16_t", "i", 2), ("int64_t", "i", 8), ("size_t", "i", 8),
    ]
    PTX_KIND = {"u": "i", "s": "i", "b": "i", "f": "f"}

    def make(self, rng):
        lines = [f"#define A {rng.randint(0, 5)}"]
        types = list(self.SPELLINGS)
        for i in range(rng.randint(0, 5)):  # aliases of the spellings, and of each other
            spelling, kind, size = rng.choice(types)
            how = rng.choice(["typedef {s} T{i};", "using T{i} = {s};", "#define T{i} {s}"])
            if rng.random() < 0.3:
                other = rng.choice(types)
                subject = rng.choice(["A", "A", "__CUDACC_VER_MAJOR__", "UNSEEN"])
                lines += [f"#if {subject} {rng.choice(['>', '<', '==', '!='])} {rng.randint(0, 13)} "
                          f"{rng.choice(['&& 1', '|| 0', ''])}", how.format(s=spelling, i=i),
                          "#else", how.format(s=other[0], i=i), "#endif"]
                types.append((f"T{i}", None, None))  # which one NVRTC took: checked by size
            else:
                lines.append(how.format(s=spelling, i=i))
                types.append((f"T{i}", kind, size))
        lines.append('#define KERNEL extern "C" __global__')
        for k in range(rng.randint(1, 3)):
            params = []
            for j in range(rng.randint(0, 5)):
                spelling = rng.choice(types)[0]
                deco = rng.choice(["", "", "", "[]", "[4]", "[2][3]", "(*)[4]", "attr"])
                if deco == "(*)[4]":
                    params.append(f"{spelling} (*p{j})[4]")
                elif deco == "attr":
                    params.append(f"[[maybe_unused]] {spelling} p{j}")
                else:
                    params.append(f"{spelling} p{j}{deco}")
            head = rng.choice(['extern "C" __global__ void', "KERNEL void",
                               'extern "C" __global__ void __launch_bounds__(128)'])
            sep = rng.choice([", ", ", ", ",\\\n    ", " /* } */, "])  # also spliced lines
            lines.append(f"{head} k{k}({sep.join(params)}) {{}}")
            if rng.random() < 0.3:  # text whose braces, comments and quotes must not count
                lines.append(rng.choice([
                    '__device__ const char r%d[] = R"x(} { /* " ;)x";' % k, "__device__ int sep%d[1'024];" % k,
                    "#define ONE%d 1 /* a comment that goes on\n  { over lines */" % k]))
        return "\n".join(lines) + "\n"

    def check(self, src):
        import re

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            read = cukit.Program(src).signatures
        # kernels cukit warned about: read from branches of #if it could not evaluate
        warned = " ".join(str(w.message) for w in caught if "branch of #if" in str(w.message))
        try:
            ptx = cukit.Program(src).ptx(arch="sm_90").decode()
        except cukit.CompileError:
            return
        for entry in re.finditer(r"\.entry (\w+)\(([^)]*)\)", ptx):
            name, body = entry.group(1), entry.group(2)
            if name not in read:
                raise AssertionError(f"NVRTC compiled kernel {name}, which cukit did not read")
            got = []
            for m in re.finditer(r"\.param\s+([^\n,]*?)\s*\w+_param_\d+(?:\[(\d+)\])?", body):
                if m.group(2):
                    got.append(("b", int(m.group(2))))
                else:
                    t = re.search(r"\.([usbf])(\d+)", m.group(1))
                    got.append((self.PTX_KIND[t.group(1)], int(t.group(2)) // 8))
            mine = []
            for ctype, _ in read[name].params:
                if ctype.endswith("*"):
                    mine.append(("i", 8))
                else:
                    known = {sp: (kd, sz) for sp, kd, sz in self.SPELLINGS}
                    canon = str(cukit.Signature(f"k({ctype})")).removeprefix("k(").removesuffix(")")
                    hit = [v for sp, v in known.items()
                           if str(cukit.Signature(f"k({sp})")) == f"k({canon})"]
                    mine.append(hit[0] if hit else None)
            if len(mine) != len(got) or any(m is not None and m != g for m, g in zip(mine, got)):
                if f"{read[name]}" in warned:
                    continue  # said so: the user was told to give signature=
                raise AssertionError(f"{name} reads as {read[name]} ({mine}), NVRTC's "
                                     f"parameters are {got}, without a warning")


class NameExpressionTarget(Target):
    """Name expressions that instantiate template kernels: each instance reads back the same."""

    SRC = """
    template <typename T> struct Vec { T x; };
    template <typename T> __global__ void k(T v) {}
    template <typename T, int N = 4> __global__ void fixed(T (*rows)[N], Vec<T> v) {}
    namespace ops { template <typename A, typename B = A> __global__ void mix(A a, B* b) {} }
    template <typename... Ts> __global__ void pack(Ts... xs) {}
    """
    EXPRESSIONS = ["k<float>", "k<Vec<float*>>", "k<Vec<Vec<int>>>", "fixed<double, 8>",
                   "fixed<float>", "ops::mix<int>", "ops::mix<int, float>", "&k<unsigned>",
                   "::k<long long>", "pack<int, float>", "k<decltype(1 + 2)>", "k<int[3]>"]

    VALID = set(EXPRESSIONS)

    def make(self, rng):
        return [mutate(rng, rng.choice(self.EXPRESSIONS), rng.randint(0, 3))
                for _ in range(rng.randint(1, 4))]

    def check(self, exprs):
        prog = cukit.Program(self.SRC, name_expressions=exprs)
        for name, sig in prog.signatures.items():
            try:
                again = cukit.Signature(str(sig))
            except ValueError:
                # A mutated expression is usually not C (NVRTC refuses it at compile
                # time); one of the valid ones must read back.
                if name in self.VALID:
                    raise AssertionError(f"{name!r}: {str(sig)!r} does not read back")
                continue
            if again.params != sig.params and name in self.VALID:
                raise AssertionError(f"{name!r}: {str(sig)!r} reads back as {str(again)!r}")


# ------------------------------------------------------------------ the include scanner

class IncludeTarget(Target):
    """The disk cache's #include scan (compile/headers.c), through Program.ptx: headers in
    a folder, included in cycles, deeply, under odd names; NVRTC then refuses or compiles."""

    allowed = (cukit.CompileError, ValueError)
    time_limit = 20.0

    def setup(self):
        super().setup()
        self.root = tempfile.mkdtemp(prefix="cukit-fuzz-inc-")
        self.temporary.append(self.root)
        if "CUKIT_CACHE_DIR" not in os.environ:  # never the user's own cache
            os.environ["CUKIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="cukit-fuzz-cache-")
            self.temporary.append(os.environ["CUKIT_CACHE_DIR"])

    def make(self, rng):
        names = [rng.choice(["a.h", "b.h", "sub/c.h", "../up.h", "d d.h", "é.h", "x" * 300 + ".h",
                             "sub/../a.h", "/abs.h", ".h", "e.cuh"]) for _ in range(rng.randint(1, 6))]
        files = {}
        for name in names:
            inc = rng.sample(names, rng.randint(0, len(names)))
            body = "".join(rng.choice(['#include "{}"\n', "#include <{}>\n", "# include  \"{}\"\n",
                                       '#include "{}\n', "#include {}\n", "// #include \"{}\"\n"]).format(i)
                           for i in inc)
            files[name] = mutate(rng, body, rng.randint(0, 2))
        chain = rng.randint(0, 300) if rng.random() < 0.2 else 0
        top = "".join(f'#include "{n}"\n' for n in rng.sample(names, rng.randint(1, len(names))))
        if chain:
            top += '#include "chain0.h"\n'
        src = mutate(rng, top, rng.randint(0, 2)) + 'extern "C" __global__ void k(int n) {}\n'
        return src, files, chain

    def show(self, data):
        src, files, chain = data
        return f"source {src!r}, headers {files!r}, a chain of {chain}"

    def check(self, data):
        src, files, chain = data
        folder = tempfile.mkdtemp(dir=self.root)
        for name, body in list(files.items()) + [(f"chain{i}.h", f'#include "chain{i + 1}.h"\n')
                                                  for i in range(chain)]:
            path = os.path.normpath(os.path.join(folder, "src", name.lstrip("/")))
            if not path.startswith(folder):
                continue
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(body)
            except OSError:
                continue
        prog = cukit.Program(src, name=os.path.join(folder, "src", "kernel.cu"),
                             include_dirs=[os.path.join(folder, "src", "sub")])
        prog.ptx(arch="sm_90")


# ------------------------------------------------------------------ foreign arrays

class FakeCAI:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


def random_int(rng):
    return rng.choice([0, 1, 2, 3, -1, -2**31, 2**31, 2**63 - 1, 2**63, -2**63, 2**64, 2**100,
                       rng.randint(-10, 10), rng.randint(0, 2**48)])


def random_tuple(rng, n=None):
    n = rng.randint(0, 40) if n is None else n
    return tuple(random_int(rng) for _ in range(n))


ARG_SIGNATURES = ["k(float* p)", "k(void* p)", "k(const int* p)", "k(double** p)", "k(Params* p)"]


class CAITarget(Target):
    """__cuda_array_interface__ dicts, malformed in every field, as kernel arguments and to asarray."""

    allowed = (TypeError, ValueError, OverflowError, BufferError, cukit.CudaError)

    def make(self, rng):
        ndim = rng.choice([0, 1, 2, 3, 4, 32, 33, 64])
        cai = {
            "shape": rng.choice([random_tuple(rng, ndim), random_tuple(rng), [2, 3], None, 5, "x",
                                 (1.5,), (True,)]),
            "typestr": rng.choice(["<f4", "<f8", "|b1", "<i4", "<u8", "<V0", "|V16", "<c8", "",
                                   "<", "<f", "<f99999999999999999999", ">f4", "|O8", "<M8",
                                   "x" * 300, 4, None, "<f\u00e94"]),
            "data": rng.choice([(random_int(rng), rng.choice([False, True, 0, None, "x"])),
                                (random_int(rng),), None, [0, False], (None, False), (1.5, False),
                                (random_int(rng), False, 1)]),
            "version": rng.choice([0, 1, 2, 3, 4, 99, -1, "3", None]),
        }
        if rng.random() < 0.6:
            cai["strides"] = rng.choice([None, random_tuple(rng, ndim), random_tuple(rng), [4], "x"])
        if rng.random() < 0.1:
            cai["mask"] = rng.choice([None, 0, FakeCAI({})])
        if rng.random() < 0.3:
            cai["stream"] = rng.choice([None, 0, 1, 2, -1, 2**64, "s", 1.5])
        for key in list(cai):
            if rng.random() < 0.05:
                del cai[key]
        if rng.random() < 0.05:
            cai = rng.choice([None, [], "cai", 5])
        return rng.choice(ARG_SIGNATURES), cai

    def check(self, data):
        decl, cai = data
        obj = FakeCAI(cai)
        try:
            cukit.Signature(decl).pack(obj)
        except self.allowed:
            pass
        try:
            cukit.asarray(obj)
        except self.allowed:
            pass
        cukit.from_dlpack(obj)


# DLPack's C structs, built by hand so every field can lie.
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
NO_OP = DELETER(lambda p: None)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class FakeDLPack:
    """An object whose __dlpack__ hands out a capsule over fields the case chose."""

    def __init__(self, spec):
        self.spec = spec
        self.keep = []

    def __dlpack_device__(self):
        return self.spec["device_answer"]

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        s = self.spec
        if s["refuse_kwargs"] and (max_version is not None or dl_device is not None):
            raise TypeError("__dlpack__() got an unexpected keyword argument")
        ndim = s["ndim"]
        count = max(ndim, 0)
        shape = (ctypes.c_int64 * max(count, 1))(*s["shape"][:count])
        strides = (ctypes.c_int64 * max(count, 1))(*s["strides"][:count])
        tensor = DLTensor(s["data"], DLDevice(*s["device"]), ndim, DLDataType(*s["dtype"]),
                          ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
                          ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
                          if s["has_strides"] else None, s["byte_offset"])
        if s["versioned"]:
            managed = DLManagedTensorVersioned(DLPackVersion(*s["version"]), None, NO_OP,
                                               s["flags"], tensor)
        else:
            managed = DLManagedTensor(tensor, None, NO_OP)
        name = s["name"]
        self.keep += [shape, strides, managed, name]
        return _capsule_new(ctypes.addressof(managed), name, None)


class DLPackTarget(Target):
    """DLPack capsules whose every field is chosen at random, as kernel arguments and imports."""

    allowed = (TypeError, ValueError, OverflowError, BufferError, cukit.CudaError)

    def make(self, rng):
        ndim = rng.choice([0, 1, 2, 3, 8, 32, 33, 100, -1, -100])
        versioned = rng.random() < 0.5
        # Never the CPU (1) or CUDA host memory (3): those are copied through numpy,
        # which would read the made-up data pointer.
        device = (rng.choice([2, 2, 2, 13, 4, 10, 0, 99, -1]), rng.choice([0, 0, 1, -1, 2**31 - 1]))
        return {
            "ndim": ndim,
            "shape": [rng.choice([0, 1, 2, 7, -1, 2**31, 2**62, -2**63]) for _ in range(max(ndim, 0))],
            "strides": [rng.choice([0, 1, 2, 4, -1, 2**40, -2**63]) for _ in range(max(ndim, 0))],
            "has_strides": rng.random() < 0.5,
            "data": rng.choice([0, 0x10000, 2**48, 2**64 - 1]),
            "device": device,
            "device_answer": rng.choice([device, device, (2, 0), (1, 0), (2,), "cuda", (2, 0, 0),
                                         (2**40, 0), None]),
            "dtype": (rng.choice([0, 1, 2, 4, 5, 6, 255]), rng.choice([0, 1, 8, 16, 32, 64, 128, 255]),
                      rng.choice([0, 1, 2, 4, 65535])),
            "byte_offset": rng.choice([0, 4, 2**63, 2**64 - 1]),
            "versioned": versioned,
            "version": (rng.choice([0, 1, 2, 99, 2**32 - 1]), rng.choice([0, 1, 3, 2**32 - 1])),
            "flags": rng.choice([0, 1, 2, 3, 2**64 - 1]),
            # The name says which struct the capsule holds; a consumer cannot check a
            # producer that lies about that, so the right name or one that is refused.
            "name": (b"dltensor_versioned" if versioned else b"dltensor") if rng.random() < 0.8
            else rng.choice([b"used_dltensor", b"used_dltensor_versioned", b"", b"x"]),
            "refuse_kwargs": rng.random() < 0.2,
            "decl": rng.choice(ARG_SIGNATURES),
        }

    def check(self, spec):
        obj = FakeDLPack(spec)
        try:
            cukit.Signature(spec["decl"]).pack(obj)
        except self.allowed:
            pass
        try:
            cukit.asarray(obj)
        except self.allowed:
            pass
        cukit.from_dlpack(obj)


# ------------------------------------------------------------------ layouts and loading

SCALARS = [("bool", ctypes.c_bool, [False, True]), ("char", ctypes.c_byte, [-128, 127]),
           ("signed char", ctypes.c_byte, [-128, 127]), ("unsigned char", ctypes.c_ubyte, [0, 255]),
           ("short", ctypes.c_short, [-2**15, 2**15 - 1]), ("unsigned short", ctypes.c_ushort, [0, 2**16 - 1]),
           ("int", ctypes.c_int, [-2**31, 2**31 - 1]), ("unsigned", ctypes.c_uint, [0, 2**32 - 1]),
           ("long", ctypes.c_long, [-2**63, 2**63 - 1]), ("long long", ctypes.c_longlong, [-2**63, 2**63 - 1]),
           ("size_t", ctypes.c_size_t, [0, 2**64 - 1]), ("int8_t", ctypes.c_int8, [-128, 127]),
           ("uint16_t", ctypes.c_uint16, [0, 65535]), ("int64_t", ctypes.c_int64, [-2**63, 2**63 - 1]),
           ("float", ctypes.c_float, None), ("double", ctypes.c_double, None),
           ("float*", ctypes.c_uint64, [0, 2**64 - 1]), ("void*", ctypes.c_uint64, [0, 2**64 - 1])]


class LayoutTarget(Target):
    """Parameter buffers laid out by the C ABI: Signature.pack against ctypes.Structure,
    with values in and out of range."""

    allowed = (TypeError, OverflowError)

    def make(self, rng):
        fields = []
        for i in range(rng.randint(0, 300 if rng.random() < 0.1 else 12)):
            name, _, bounds = rng.choice(SCALARS)
            if bounds is None:
                value = rng.choice([0.0, -1.5, 3.25, rng.uniform(-1e6, 1e6), 1e39, float("inf"),
                                    float("nan"), 7, np.float32(2.5), True])
            else:
                lo, hi = bounds
                value = rng.choice([lo, hi, rng.randint(lo, hi), lo - 1, hi + 1, 2**70, np.int64(1),
                                    np.uint64(2**64 - 1), True, 1.5, None])
            fields.append((name, value))
        return fields

    def check(self, fields):
        decl = "k(" + ", ".join(f"{n} p{i}" for i, (n, _) in enumerate(fields)) + ")"
        packed = cukit.Signature(decl).pack(*[v for _, v in fields])
        ctypes_of = {n: c for n, c, _ in SCALARS}

        class Params(ctypes.Structure):
            _fields_ = [(f"p{i}", ctypes_of[n]) for i, (n, _) in enumerate(fields)]

        # What cukit accepted, as C would hold it.
        values = [float(v) if n in ("float", "double") else int(v or 0) for n, v in fields]
        want = bytes(Params(*values))
        # cukit's buffer ends after the last parameter; ctypes pads to the alignment.
        if packed != want[:len(packed)] or len(packed) > len(want):
            raise AssertionError(f"{decl}: packed {packed.hex()} but the C ABI gives {want.hex()}")


class LoadTarget(Target):
    """Module.load's checks on what it is given: bytes of every kind, paths, odd objects."""

    allowed = (TypeError, ValueError, OSError, cukit.CudaError)
    hang_limit = 20.0

    def setup(self):
        super().setup()
        # On a GPU, Module.load first loads an image in a worker process and stops it
        # after this many seconds: well inside hang_limit, so a driver that hangs on a
        # case is the refusal it should be, not a hang of the case.
        os.environ.setdefault("CUKIT_IMAGE_CHECK_TIMEOUT", "10")
        self.dir = tempfile.mkdtemp(prefix="cukit-fuzz-load-")
        self.temporary.append(self.dir)
        src = 'extern "C" __global__ void k(float* x) { x[0] = 1; }'
        try:
            prog = cukit.Program(src)
            self.images = [prog.ptx(arch="sm_90"), prog.cubin(arch="sm_90")]
        except Exception:  # noqa: BLE001 - no NVRTC: mutate made-up images only
            self.images = [b".version 8.0\n.target sm_90\n", b"\x7fELF\x02\x01\x01" + bytes(60)]
        self.images.append(bytes.fromhex("50ed55ba01001000") + bytes(64))  # a fatbin's magic

    def make(self, rng):
        kind = rng.random()
        if kind < 0.6:
            data = bytearray(rng.choice(self.images))
            for _ in range(rng.randint(0, 8)):
                at = rng.randint(0, max(len(data) - 1, 0))
                op = rng.random()
                if op < 0.5 and data:
                    data[at] = rng.randint(0, 255)
                elif op < 0.8:
                    data = data[:at]
                else:
                    data[at:at] = bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 16)))
            return ("bytes", bytes(data), rng.choice(["bytes", "bytearray", "memoryview", "file"]))
        if kind < 0.8:
            return ("bytes", bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 64))),
                    rng.choice(["bytes", "memoryview", "file"]))
        return ("other", rng.choice([None, 5, 1.5, "", "nonexistent.cubin", "x" * 5000, "a\nb",
                                     "/", ".", "bad\udcffname", object(), [1, 2]]), "")

    def check(self, data):
        what, value, how = data
        if what == "bytes":
            if how == "bytearray":
                value = bytearray(value)
            elif how == "memoryview":
                value = memoryview(value)
            elif how == "file":
                path = os.path.join(self.dir, "image.bin")
                with open(path, "wb") as f:
                    f.write(value)
                value = path
        cukit.Module.load(value)


TARGETS = {
    "signature": SignatureTarget(),
    "signature_nvrtc": SignatureVsNvrtcTarget(),
    "source": SourceTarget(),
    "name_expressions": NameExpressionTarget(),
    "source_nvrtc": SourceVsNvrtcTarget(),
    "conditions_nvrtc": ConditionsVsNvrtcTarget(),
    "includes": IncludeTarget(),
    "cai": CAITarget(),
    "dlpack": DLPackTarget(),
    "layout": LayoutTarget(),
    "load": LoadTarget(),
}


class ElementwiseParamsTarget(Target):
    """ElementwiseKernel's parameter lists (compute/elementwise/elementwise.c): words of any length
    and number. Under the sanitizer build it found a stack buffer overflow once a
    parameter's type words passed 254 bytes (test_signature_hardening.py keeps it)."""

    allowed = (ValueError, TypeError)
    WORDS = ["float32", "float", "T", "raw", "const", "x", "y", "int", "unsigned", "long",
             "double", "*", "&", "CamelCaseType", "é"]

    def make(self, rng):
        params = []
        for _ in range(rng.randint(1, 6)):
            words = [rng.choice(self.WORDS) if rng.random() < 0.8
                     else "t" * rng.choice([63, 64, 200, 255, 256, 900])
                     for _ in range(rng.randint(1, 10))]
            params.append(" ".join(words))
        return mutate(rng, ", ".join(params), rng.randint(0, 2)), "float32 out"

    def check(self, data):
        cukit.ElementwiseKernel(data[0], data[1], "out = 0")


class ReductionParamsTarget(ElementwiseParamsTarget):
    """ReductionKernel's parameter lists (compute/reduce/reduce_kernel.c), CuPy's form and
    PyCUDA's ("const float *x"): the same reader, with the same bound."""

    def check(self, data):
        try:
            cukit.ReductionKernel(data[0], data[1], "x", "a + b", "out = a", "0")
        except self.allowed:
            pass
        cukit.ReductionKernel(np.float32, "0", "a + b", "x[i]", arguments=data[0])


# ------------------------------------------------------------------ the emulator's PTX reader

PTX_KERNELS = [
    r"""
extern "C" __global__ void k(const float* x, float* y, int n) {
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = s[threadIdx.x ^ 1] * 2.0f + 1.0f;
}""",
    r"""
extern "C" __global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 3) printf("[%*d|%-*.*s|%.*f|%c|%p|%lld]\n", i + 2, i, 6, 3, "abcdef", 2, x[i], 'a' + i,
                      (void*)y, -5000000000LL + i);
    if (i < n) y[i] = x[i];
}""",
    r"""
__device__ __noinline__ float twice(float v, int k) { return k & 1 ? v * 2.0f : sqrtf(v); }
__device__ double table[4] = {1.0, 2.0, 3.0, 4.0};
__device__ unsigned long long wide = 12345;
extern "C" __global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float local[8];
    for (int j = 0; j < 8; j++) local[j] = x[(i + j) % n];
    float v = twice(local[i % 8], i) + (float)table[i & 3] + (float)(long long)wide;
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    if (i < n) { atomicAdd(&y[0], 1.0f); y[i] = v; }
}""",
    r"""
extern "C" __global__ void k(const float* x, float* y, int n) {
    __shared__ unsigned char b[128];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    b[t] = (unsigned char)t;
    __syncwarp();
    __syncthreads();
    int c = __syncthreads_count(t & 1);
    unsigned r = __reduce_add_sync(0xffffffffu, (unsigned)t);
    if (i < n) y[i] = x[i] + b[(t + 3) & 63] + c + r;
}""",
]

# Handwritten pieces with the shapes found to crash the reader before.
PTX_FRAGMENTS = [
    ".version 9.0\n.target sm_90\n.address_size 64\n"
    ".global .align 16 .b128 v[2] = {1, 340282366920938463463374607431768211455};\n"
    ".visible .entry k(.param .u64 p0, .param .u64 p1, .param .u32 p2)\n{\n"
    "  .reg .b64 %rd<4>;\n  ld.param.u64 %rd1, [p1];\n  ld.param.u64 %rd2, [p0+8];\n"
    "  cvta.to.global.u64 %rd3, %rd1;\n  st.global.u64 [%rd3], %rd2;\n  ret;\n}\n",
    ".version 9.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k(.param .u64 p0, .param .u64 p1, .param .u32 p2)\n{\n"
    "  .reg .b32 %r<4>;\n  .reg .b16 %rs<4>;\n  .shared .align 4 .b8 buf[64];\n"
    "  mov.u32 %r1, buf;\n  add.s32 %r2, %r1, -16;\n  ld.shared.u8 %rs2, [%r2+16];\n  ret;\n}\n",
    ".version 9.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k(.param .u64 p0, .param .u64 p1, .param .u32 p2)\n{\n"
    "  .reg .b64 %rd<6>;\n  .reg .b128 %rq<3>;\n  ld.param.u64 %rd1, [p1];\n"
    "  ld.param.u64 %rd2, [p0];\n  mov.b128 %rq1, {%rd2, %rd1};\n  mov.b128 %rq2, %rq1;\n"
    "  mov.b128 {%rd3, %rd4}, %rq2;\n  cvta.to.global.u64 %rd5, %rd4;\n"
    "  st.global.u64 [%rd5], %rd3;\n  ret;\n}\n",
    ".version 9.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k(.param .u64 p0, .param .u64 p1, .param .u32 p2)\n{\n"
    "  .reg .b64 %rd<4>;\n  .reg .b32 %r<2>;\n  ld.param.u32 %r1, [p0+2];\n"
    "  ld.param.u64 %rd1, [p1+4];\n  ld.param.u64 %rd2, [p1];\n  cvta.to.global.u64 %rd3, %rd2;\n"
    "  st.global.u32 [%rd3], %r1;\n  ret;\n}\n",
]

PTX_TOKENS = [
    "-1", "0", "1", "4294967295", "0xffffffffffffffff", "-2147483648", "99999999999999999999",
    "1000000", "[k_param_0+1000000]", "[k_param_0-8]", "[p0+4096]", "%r1", "%rd1", "%f1", "%p1",
    "%r999999", ".b128", "%rq1", "mov.b128", ".u64", ".u8", ".s32", ".f64", ".v4", ".v2", ".shared", ".local",
    ".global", ".param", "{", "}", "[", "]", "(", ")", ";", ",", "+", "-", "%", "$L__BB0_2",
    "bra", "ret", "exit", "call", "ld", "st", "mov", "\n", "\"", "\\", "//", "/*", "%*", "%.*s",
    "%*d", "0f7fffffff", "0d7ff0000000000000", ".align 1024", ".reg .b32 %r<100000000>",
    "bar.sync 0", "bar.warp.sync -1", "redux.sync.add.u32", "vprintf", "%ntid.x", "%laneid",
]


class PtxTarget(Target):
    """The emulator's PTX reader and interpreter on mutated PTX: loaded with Module.load
    and, when it loads, launched on fresh data. A refusal at load or launch (CudaError,
    ValueError, MemoryError) is clean; a crash, another exception or a hang is not."""

    # AttributeError: a kernel the mutation removed
    allowed = (cukit.CudaError, ValueError, TypeError, MemoryError, AttributeError)
    time_limit = 10.0
    hang_limit = 30.0

    def setup(self):
        super().setup()
        # A mutated branch may loop forever: the watchdog turns that into a refusal.
        os.environ.setdefault("CUKIT_EMULATOR_TIMEOUT", "3")
        # A case that faults would lose the context for every later case of the worker.
        os.environ.setdefault("CUKIT_EMULATOR_DEBUG_KEEP_CONTEXT", "1")
        self.images = []
        for src in PTX_KERNELS:
            try:
                self.images.append(cukit.Program(src).ptx(arch="compute_90").decode())
            except Exception:  # noqa: BLE001 - no NVRTC: the handwritten pieces only
                pass
        self.images += PTX_FRAGMENTS

    def make(self, rng):
        text = rng.choice(self.images)
        lines = text.split("\n")
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            at = rng.randrange(len(lines)) if lines else 0
            if not lines:
                break
            if op < 0.35:  # one token of a line replaced, by a token of the text or a known one
                words = lines[at].split()
                if words:
                    pool = rng.choice([PTX_TOKENS, rng.choice(lines).split() or PTX_TOKENS])
                    w = rng.randrange(len(words))
                    piece = rng.choice(pool)
                    if rng.random() < 0.5:
                        words[w] = piece
                    else:  # within the word: operands such as [%rd5+16] or %r<6>;
                        cut = rng.randint(0, len(words[w]))
                        words[w] = words[w][:cut] + piece + words[w][cut + rng.randint(0, 3):]
                    lines[at] = "\t".join(words)
            elif op < 0.5:
                del lines[at]
            elif op < 0.6:
                lines.insert(at, lines[rng.randrange(len(lines))])
            elif op < 0.7:
                lines.insert(at, rng.choice(PTX_TOKENS) + " " + rng.choice(PTX_TOKENS))
            elif op < 0.8:
                text = "\n".join(lines)
                lines = text[:rng.randint(0, len(text))].split("\n")
            elif op < 0.9:
                b = rng.randrange(len(lines))
                lines[at], lines[b] = lines[b], lines[at]
            else:
                line = lines[at]
                if line:
                    c = rng.randrange(len(line))
                    lines[at] = line[:c] + chr(rng.choice([0, 9, 10, 32, 34, 37, 43, 45, 46, 59, 91,
                                                           93, 123, 125, rng.randint(33, 126)])) \
                        + line[c + 1:]
        return "\n".join(lines)

    def check(self, text):
        data = text.encode("utf-8", "surrogatepass")
        mod = cukit.Module.load(data)
        k = mod.get_kernel("k", signature="(const float* x, float* y, int n)")
        n = 256
        x = cukit.to_device(np.random.default_rng(self.index).random(n, dtype=np.float32))
        y = cukit.zeros(n, np.float32)
        k(x, y, n, grid=4, block=64)
        cukit.synchronize()
        y.get()

    def show(self, text):
        return text


TARGETS["ptx"] = PtxTarget()


class SelfTestTarget(Target):
    """Proves the harness can fail: case 3 kills its worker, case 5 raises KeyError,
    case 7 never ends (its worker is killed after hang_limit seconds)."""

    hang_limit = 2.0

    def make(self, rng):
        return self.index

    def check(self, index):
        if index == 3:
            # Dies as a crash does, but by SIGABRT, which the sanitizers do not
            # report: under CI's sanitizer run any report fails the run.
            os.abort()
        if index == 5:
            raise KeyError("an unexpected exception")
        if index == 7:
            while True:
                time.sleep(1)


TARGETS["elementwise_params"] = ElementwiseParamsTarget()
TARGETS["reduction_params"] = ReductionParamsTarget()
TARGETS["selftest"] = SelfTestTarget()
ON_REQUEST = {"selftest"}  # run only when named
